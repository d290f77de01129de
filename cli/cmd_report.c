/* llmplan report DIR [-o FILE]: the report page of a sweep (docs/report.md;
 * src/io/report_html.c). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "llmplan/io.h"
#include "llmplan/status.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: llmplan report DIR [-o FILE]\n\n"
               "Write DIR/report.html (or FILE): one self-contained page (inline SVG and\n"
               "script, nothing fetched) of the sweep in DIR (llmplan search's plans.json\n"
               "and sweep.h5): the Pareto front of time against cost, the best time and\n"
               "cost per GPU count and system, the breakdown and memory of the top plans,\n"
               "a TP x PP map, the sortable top-k table and the sweep's provenance.\n"
               "PNG figures: scripts/report_png.sh DIR (headless chromium).\n");
}

int lp_cmd_report(int argc, char **argv)
{
    const char *dir = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
            out = argv[++i];
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "llmplan report: unknown or incomplete option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (!dir) {
            dir = argv[i];
        } else {
            fprintf(stderr, "llmplan report: one directory expected, got '%s' too\n", argv[i]);
            return 2;
        }
    }
    if (!dir) {
        usage(stderr);
        return 2;
    }
    char path[4096];
    if (!out) {
        snprintf(path, sizeof(path), "%s/report.html", dir);
        out = path;
    }
    struct lp_err err;
    lp_err_clear(&err);
    if (lp_report_write(dir, out, &err) < 0) {
        lp_cli_error(&err);
        return 1;
    }
    printf("report written to %s\n", out);
    return 0;
}
