#!/usr/bin/env bash
# llmplan schedule: the simulator's numbers reach the scheduler unchanged
# (a job's own configuration takes what `llmplan simulate` says; llmplan's
# plan at an allocation is a configuration that simulate gives the same time
# and that is no slower than the job's own when that is in the space), the
# Gantt CSVs account for every GPU-second, and bad input is refused with the
# key named. The policies themselves are checked by hand in
# tests/unit/test_cluster.c.
#   schedule.sh LLMPLAN SRCDIR SCRATCH
set -u
rm -rf "$3" && mkdir -p "$3"
LLMPLAN_DATA="$2/data" exec python3 "$2/tests/cli/schedule_check.py" "$1" "$3"
