# Shared by tests/cli scripts that run llmplan against a copy of data/ with
# one file of their own (not a test itself: no .sh suffix): sanitizer
# settings, fail(), and LLMPLAN_DATA pointing at $dir/data, which links every
# entry of $src/data except the file named.
#   . "$src/tests/cli/lib.bash" FILE      (with $src and $dir set)
rm -rf "$dir" && mkdir -p "$dir/data"
export LSAN_OPTIONS="suppressions=$src/tests/mpi/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
fail() { echo "FAIL: $*"; exit 1; }
for f in "$src"/data/*; do
    [ "$(basename "$f")" = "$1" ] || ln -s "$f" "$dir/data/"
done
export LLMPLAN_DATA="$dir/data"
