# Shared by tests/cli scripts that count their checks (not a test itself: no
# .sh suffix): the three arguments every such script takes, a fresh scratch
# directory, LLMPLAN_DATA (the source tree's data/ unless set), and
#   ok MESSAGE      a passed check
#   bad MESSAGE     a failed one (counted in $fails)
#   has TEXT PART   whether TEXT contains PART
#   h5py_python     prints a python3 that imports h5py (none: status 1)
# The script ends with `exit $((fails > 0))`.
#   . "$(dirname "$0")/checks.bash" "$@"     (LLMPLAN SRCDIR SCRATCH)
bin=$1 src=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
export LLMPLAN_DATA=${LLMPLAN_DATA:-$src/data}
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
has() { case "$1" in *"$2"*) return 0 ;; esac; return 1; }
# a python3 that imports h5py (Debian: python3-h5py); none: prints nothing and
# returns 1 (the caller counts the failed check)
h5py_python() {
    local p
    for p in python3 /usr/bin/python3; do
        if "$p" -c "import h5py" 2>/dev/null; then echo "$p" && return 0; fi
    done
    return 1
}
