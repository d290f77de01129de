/* llmplan loss: the loss a model of N parameters reaches on D tokens
 * (include/llmplan/loss.h: Hoffmann et al. 2022 / Besiroglu et al. 2024). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "llmplan/loss.h"
#include "llmplan/status.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: llmplan loss PARAMS TOKENS [--fit hoffmann2022|besiroglu2024]\n"
               "       llmplan loss --batch [--fit ...]   (lines 'PARAMS TOKENS' on stdin)\n\n"
               "The loss L(N, D) = E + A/N^alpha + B/D^beta of a model of N parameters\n"
               "trained on D tokens: Hoffmann et al. 2022 (Approach 3, the default) or the\n"
               "refit of Besiroglu et al. 2024. Prints one JSON object per query.\n");
}

static int parse_pos(const char *s, double *out)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (!end || *end || !(v > 0) || !isfinite(v)) return LP_EINVAL;
    *out = v;
    return LP_OK;
}

static void print_loss(enum lp_loss_fit fit, double n, double d)
{
    printf("{\"fit\":\"%s\",\"params\":%.17g,\"tokens\":%.17g,\"loss\":%.17g}\n",
           lp_loss_fit_name(fit), n, d, lp_loss_chinchilla(fit, n, d));
}

int lp_cmd_loss(int argc, char **argv)
{
    enum lp_loss_fit fit = LP_LOSS_HOFFMANN2022;
    bool batch = false;
    const char *pos[2] = {NULL, NULL};
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--batch")) {
            batch = true;
        } else if (!strcmp(argv[i], "--fit") && i + 1 < argc) {
            if (lp_loss_fit_parse(argv[++i], &fit) != LP_OK) {
                fprintf(stderr,
                        "llmplan loss: --fit: expected hoffmann2022 or besiroglu2024, got '%s'\n",
                        argv[i]);
                return 2;
            }
        } else if (npos < 2 && argv[i][0] != '-') {
            pos[npos++] = argv[i];
        } else {
            fprintf(stderr, "llmplan loss: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!batch) {
        double n, d;
        if (npos != 2 || parse_pos(pos[0], &n) != LP_OK || parse_pos(pos[1], &d) != LP_OK) {
            fprintf(stderr, "llmplan loss: expected PARAMS and TOKENS, two positive numbers\n");
            usage(stderr);
            return 2;
        }
        print_loss(fit, n, d);
        return 0;
    }
    char line[256];
    for (int no = 1; fgets(line, sizeof(line), stdin); no++) {
        double n, d;
        if (sscanf(line, "%lg %lg", &n, &d) != 2 || !(n > 0) || !(d > 0)) {
            fprintf(stderr,
                    "llmplan loss: stdin line %d: expected 'PARAMS TOKENS', two positive "
                    "numbers\n",
                    no);
            return 1;
        }
        print_loss(fit, n, d);
    }
    return 0;
}
