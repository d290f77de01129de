/* llmplan export SWEEP.h5 --csv FILE: the dataset of a sweep as CSV, for
 * people without HDF5 tools (src/io/sweep_csv.c). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "llmplan/io.h"
#include "llmplan/status.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: llmplan export SWEEP.h5 --csv FILE\n\n"
               "Write every row of a sweep's dataset (llmplan search's sweep.h5) as CSV:\n"
               "a header of the column names, categorical columns as their names, NaN for\n"
               "the time and cost of infeasible rows (docs/search.md). Atomic: FILE appears\n"
               "complete or not at all.\n");
}

int lp_cmd_export(int argc, char **argv)
{
    const char *in = NULL, *csv = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--csv") && i + 1 < argc) {
            csv = argv[++i];
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "llmplan export: unknown or incomplete option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (!in) {
            in = argv[i];
        } else {
            fprintf(stderr, "llmplan export: one sweep.h5 expected, got '%s' too\n", argv[i]);
            return 2;
        }
    }
    if (!in || !csv) {
        usage(stderr);
        return 2;
    }
    struct lp_err err;
    lp_err_clear(&err);
    if (lp_sweep_export_csv(in, csv, &err) < 0) {
        lp_cli_error(&err);
        return 1;
    }
    return 0;
}
