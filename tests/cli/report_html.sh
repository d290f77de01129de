#!/usr/bin/env bash
# llmplan report: one self-contained report.html of a sweep, opened in a real
# headless browser (Debian's chromium): every figure is drawn (its
# data-rendered count of marks is positive and matches the data), nothing is
# fetched from the network, and the table sorts (a sort asked through the
# URL, then the dumped DOM's row order checked).
#   report_html.sh LLMPLAN SRCDIR SCRATCH
set -u
bin=$1 src=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
export LLMPLAN_DATA="$src/data"
# `search` initialises MPI: under a sanitizer build, ignore Open MPI's own leaks
export LSAN_OPTIONS="suppressions=$src/tests/mpi/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
fail() { echo "FAIL: $*" >&2; exit 1; }
browser=""
for b in chromium chromium-browser chromium-headless-shell; do
    command -v "$b" >/dev/null && browser=$b && break
done
[ -n "$browser" ] || { echo "SKIP: no chromium (apt-get install chromium; scripts/test.sh does)"; exit 77; }

# two systems, a few GPU counts: every figure has something to draw
cat >"$dir/sweep.json" <<'JSON'
{"model": "gpt3-175b", "system": ["dgx-a100-80gb", "dgx-h100"], "gpus": [64, 128, 256],
 "training": {"global_batch": 256, "precision": "bf16", "tokens": 1e10}, "profile": "roofline",
 "space": {"tp": [2, 4, 8], "pp": [2, 4, 8, 16], "micro_batch": [1, 2], "zero": [0, 1],
           "recompute": "auto", "sequence_parallel": "auto"}, "top_k": 5}
JSON
"$bin" search "$dir/sweep.json" -o "$dir/out" --quiet || fail "search exit $?"
"$bin" report "$dir/out" || fail "report exit $?"
page="$dir/out/report.html"
[ -s "$page" ] || fail "no report.html"
grep -qiE '(src|href)=["'"'"']?(https?:)?//' "$page" && fail "the page refers to the network"
ls "$dir/out" | grep -q tmp && fail "temporary file left"

dom() { # dom HASH OUT: the DOM after the page's script ran
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
        --user-data-dir="$dir/profile" --dump-dom "file://$page#$1" >"$2" 2>"$dir/chromium.log" ||
        { tail -5 "$dir/chromium.log"; fail "chromium exit $?"; }
}
dom "sort=iteration_time_s:desc" "$dir/desc.html"
dom "sort=gpus:asc" "$dir/gpus.html"
python3 - "$dir/desc.html" "$dir/gpus.html" "$dir/out/plans.json" <<'PY' || exit 1
import html.parser, json, sys
class Dom(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.figs, self.body, self.rows, self.table, self.tr = {}, {}, [], {}, None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body": self.body = a
        if "data-figure" in a: self.figs[a["data-figure"]] = a
        if tag == "table" and a.get("id") == "plans": self.table = a
        if tag == "tr" and "data-index" in a: self.tr = {}; self.rows.append(self.tr)
        if tag == "td" and self.tr is not None: self.tr[a["data-key"]] = a.get("data-value")
def parse(path):
    d = Dom(); d.feed(open(path).read()); return d
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: sys.exit(1)
desc, gpus = parse(sys.argv[1]), parse(sys.argv[2])
plans = json.load(open(sys.argv[3]))
check(desc.body.get("data-ready") == "1", "the page's script ran to the end")
want = ["pareto", "scaling", "breakdown", "heatmap", "memory", "table", "provenance"]
check(sorted(desc.figs) == sorted(want), f"figures {sorted(desc.figs)}")
for f in want:
    a = desc.figs[f]
    check("data-error" not in a and int(a.get("data-rendered", "0")) > 0,
          f"{f}: rendered {a.get('data-rendered')} marks" + (f" (error {a['data-error']})" if "data-error" in a else ""))
# marks match the data: one front point per Pareto plan (plus the sample), a
# table row per distinct top plan
top = {p["index"] for p in plans["top_time"] + plans["top_cost"]}
check(int(desc.figs["table"]["data-rendered"]) == len(top) == len(desc.rows), f"table: {len(top)} rows")
check(int(desc.figs["pareto"]["data-rendered"]) >= len(plans["pareto"]), "pareto: every front point drawn")
t = [float(r["iteration_time_s"]) for r in desc.rows]
check(desc.table.get("data-sorted") == "iteration_time_s:desc" and t == sorted(t, reverse=True) and t[0] > t[-1],
      "table sorted by time, descending")
g = [int(r["gpus"]) for r in gpus.rows]
check(gpus.table.get("data-sorted") == "gpus:asc" and g == sorted(g) and g[0] < g[-1], "table sorted by GPUs, ascending")
PY
# bad input: a directory without plans.json
mkdir -p "$dir/empty"
"$bin" report "$dir/empty" 2>"$dir/err.txt" && fail "report of an empty directory succeeded"
grep -q "plans.json" "$dir/err.txt" || fail "message: $(cat "$dir/err.txt")"
echo "ok   report of an empty directory refused: $(cat "$dir/err.txt")"
exit 0
