#!/usr/bin/env bash
# PNG versions of the figures of a sweep's report page, for papers: each
# figure of DIR/report.html alone (the page's #only=FIGURE view) screenshot
# by headless chromium, and the whole page.
#   scripts/report_png.sh DIR [OUT_DIR]     (default DIR/figures; runs
#                                            `llmplan report DIR` first if
#                                            there is no DIR/report.html)
# Needs chromium (Debian: apt-get install chromium).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: scripts/report_png.sh DIR [OUT_DIR]}
out=${2:-$dir/figures}
llmplan=${LLMPLAN:-$root/build/search/llmplan}
browser=""
for b in chromium chromium-browser chromium-headless-shell; do
    command -v "$b" >/dev/null && browser=$b && break
done
[ -n "$browser" ] || { echo "report_png: chromium is missing (apt-get install chromium)" >&2; exit 1; }
[ -e "$dir/report.html" ] || "$llmplan" report "$dir"
mkdir -p "$out"
page=$(cd "$dir" && pwd)/report.html
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
shot() { # shot NAME WIDTH HEIGHT HASH
    "$browser" --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
        --user-data-dir="$profile" --force-device-scale-factor="${SCALE:-2}" \
        --window-size="$2,$3" --screenshot="$out/$1.png" "file://$page#$4" >/dev/null 2>&1
    echo "wrote $out/$1.png"
}
# sizes: each figure's drawing (data/report/report.html) plus its caption
shot pareto 560 440 only=fig-pareto
shot scaling 580 400 only=fig-scaling
shot breakdown 560 400 only=fig-breakdown
shot heatmap 560 340 only=fig-heatmap
shot memory 560 400 only=fig-memory
shot report "${WIDTH:-1170}" "${HEIGHT:-2500}" ""
