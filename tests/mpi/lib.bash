# Shared by the tests/mpi/*.sh scripts (not a test itself: no .sh suffix).
# Usage inside a test: source "$(dirname "$0")/lib.bash" "$@"
# argv: llmplan binary, source dir, scratch dir (tests/CMakeLists.txt).
set -u
LLMPLAN=${1:?llmplan binary}
SRC=${2:?source dir}
SCRATCH=${3:?scratch dir}
MPIEXEC=${MPIEXEC:-mpirun}
[ -n "$MPIEXEC" ] || MPIEXEC=mpirun
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export LLMPLAN_DATA=${LLMPLAN_DATA:-$SRC/data}
# under an ASan build: ignore Open MPI's own leaks (MPI_Init/MPI_Finalize)
# (full stacks so that the suppressions see the MPI frames)
export LSAN_OPTIONS="suppressions=$SRC/tests/mpi/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH"

command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
command -v "$MPIEXEC" >/dev/null || { echo "SKIP: $MPIEXEC not found"; exit 77; }

check() { echo "check: $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# mpi N ARGS...: run ARGS under N ranks
mpi() {
    local n=$1
    shift
    "$MPIEXEC" --oversubscribe -np "$n" "$@"
}

# plans.json without the fields that vary between runs
strip_plans() {
    python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("wall_s", "configs_per_s", "simulated_per_s", "ranks"):
    d["stats"].pop(k)
print(json.dumps(d, indent=1))
PY
}

# wait_for FILE: until FILE exists (at most 60 s)
wait_for() {
    local i=0
    while [ ! -e "$1" ] && [ $i -lt 1200 ]; do
        sleep 0.05
        i=$((i + 1))
    done
    [ -e "$1" ] || fail "$1 did not appear"
}

# h5_values FILE DATASET: the values of a 1-D dataset, one per line (h5dump)
h5_values() {
    h5dump -m %.17g -d "$2" "$1" | python3 -c '
import re, sys
text = sys.stdin.read()
start = text.index("DATA {") + 6
body = text[start:text.index("}", start)]
body = re.sub(r"\(\d+\):", " ", body)
for v in body.replace(",", " ").split():
    if v != "}":
        print(v)
'
}

# same_outputs DIR_A DIR_B: identical plans (modulo timing) and columns
same_outputs() {
    strip_plans "$1/plans.json" >"$SCRATCH/a.json" || fail "cannot read $1/plans.json"
    strip_plans "$2/plans.json" >"$SCRATCH/b.json" || fail "cannot read $2/plans.json"
    cmp -s "$SCRATCH/a.json" "$SCRATCH/b.json" ||
        { diff "$SCRATCH/a.json" "$SCRATCH/b.json" | head -20; fail "plans.json differ: $1 $2"; }
    if command -v h5diff >/dev/null; then
        # exact comparison of every column (and its attributes)
        h5diff "$1/sweep.h5" "$2/sweep.h5" /configs /configs >"$SCRATCH/h5diff.txt" ||
            { head -20 "$SCRATCH/h5diff.txt"; fail "sweep.h5 differ: $1 $2"; }
    else
        echo "note: h5diff not found (Debian: hdf5-tools); sweep.h5 not compared"
    fi
}

# json_get FILE EXPR: print a Python expression over the parsed file `d`
json_get() {
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}

# refused BASE.json EDIT TEXT: the sweep BASE edited by the Python statement
# EDIT (on the dict d) is refused by llmplan search with a message holding
# TEXT (grep pattern)
refused() {
    python3 - "$1" "$SCRATCH/refused.json" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); exec(sys.argv[3]); json.dump(d, open(sys.argv[2], "w"))
PY
    if "$LLMPLAN" search "$SCRATCH/refused.json" -o "$SCRATCH/refused" --quiet \
        2>"$SCRATCH/refused.err"; then
        fail "accepted: $2"
    fi
    grep -q "$3" "$SCRATCH/refused.err" || fail "message for '$2': $(cat "$SCRATCH/refused.err")"
}
