/* What llmplan charges for a data-parallel collective across nodes beside
 * NCCL's own prediction (not a test: prints figures, gates nothing).
 *
 *   bench_coll [PROFILE.h5] [SYSTEM [OP BYTES RANKS]]
 *
 * Defaults: data/profiles/a100-80gb.h5 (from the source tree) on dgx-a100-80gb. For all-gather,
 * reduce-scatter and all-reduce over n = 8 .. 4096 ranks on full nodes
 * (stride 1: the group a ZeRO-3 / data-parallel rank set with TP 1 forms)
 * and buffers of 1 KiB .. 4 GiB, one line each: llmplan's time
 * (lp_coll_time, the simulator's path), NCCL 2.10.3's and 2.29's predicted
 * time and choice (nccl_model.c, with the system's per-node NIC bandwidth
 * and, for the DGX A100, its AMD host), and the ratio llmplan / NCCL 2.29.
 * Run it on a profile of the previous synth (git show REV:data/profiles/...)
 * for the before-and-after comparison. With OP (allgather, reducescatter or
 * allreduce), BYTES and RANKS it prints that one line instead: a published
 * measurement's size and layout set beside llmplan's time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmplan/io.h"
#include "llmplan/profile.h"
#include "nccl_model.h"
#include "sim_internal.h"

static const char *const proto_names[] = {"LL", "LL128", "Simple"};
static const char *const algo_names[] = {"tree", "ring"};

static const enum lp_coll ops[] = {LP_COLL_ALLGATHER, LP_COLL_REDUCESCATTER, LP_COLL_ALLREDUCE};
static const char *const op_args[] = {"allgather", "reducescatter", "allreduce"};

/* One line: llmplan's time for op over n ranks on full nodes (stride 1)
 * beside NCCL 2.10.3's and 2.29's prediction and choice. */
static void line(const struct lp_cost_model *cm, const struct lp_system *sys, int G, bool amd,
                 enum lp_coll op, double b, int n)
{
    const double t = lp_coll_time(cm, sys, op, b, n, 1, 0);
    const int nodes = (n + G - 1) / G; /* a partial node counts */
    double tn[2] = {0, 0};
    char ch[2][16] = {"-", "-"};
    for (int v = 0; v < 2; v++) {
        struct lp_nccl_choice c;
        if (nodes < 2) continue;
        tn[v] = lp_nccl_time_s((enum lp_nccl_version)v, op, b, n, nodes, sys->inter.bw_Bps * G, amd,
                               &c);
        snprintf(ch[v], sizeof(ch[v]), "%s/%s", algo_names[c.algo], proto_names[c.proto]);
    }
    printf("%-13s %5d %10.0f %12.4f %12.4f %-12s %12.4f %-12s %7.2f\n", lp_coll_name(op), n, b,
           t * 1e3, tn[0] * 1e3, ch[0], tn[1] * 1e3, ch[1], tn[1] > 0 ? t / tn[1] : 0.0);
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "data/profiles/a100-80gb.h5";
    const char *sysname = argc > 2 ? argv[2] : "dgx-a100-80gb";
    int one = -1, one_n = 0;
    double one_b = 0;
    if (argc > 3) {
        char *end = NULL;
        for (int o = 0; o < 3; o++)
            if (!strcmp(argv[3], op_args[o])) one = o;
        if (argc == 6) {
            one_b = strtod(argv[4], &end);
            one_n = atoi(argv[5]);
        }
        if (argc != 6 || one < 0 || !end || *end || !(one_b > 0) || one_n < 2) {
            fprintf(stderr, "usage: bench_coll [PROFILE.h5] [SYSTEM [OP BYTES RANKS]]: OP is "
                            "allgather, reducescatter or allreduce, BYTES > 0, RANKS >= 2\n");
            return 2;
        }
    }
    struct lp_err err = {0};
    struct lp_system sys;
    struct lp_profile *prof = NULL;
    if (lp_load_system(sysname, &sys, &err) < 0 || lp_profile_read_h5(path, &prof, &err) < 0) {
        fprintf(stderr, "bench_coll: %s\n", err.msg);
        return 1;
    }
    struct lp_cost_model cm;
    lp_cost_model_table(&cm, prof, &sys.gpu);
    const int G = lp_system_scale_up(&sys);
    const bool amd = strstr(sys.name, "a100") != NULL; /* DGX A100: AMD EPYC hosts */
    printf("profile %s, system %s (%d GPUs per node, %.0f GB/s per GPU across, %s host)\n", path,
           sys.name, G, sys.inter.bw_Bps * 1e-9, amd ? "AMD" : "Intel");
    printf("%-13s %5s %10s %12s %12s %-12s %12s %-12s %7s\n", "op", "n", "bytes", "llmplan_ms",
           "nccl2.10_ms", "choice", "nccl2.29_ms", "choice", "ratio");
    if (one >= 0)
        line(&cm, &sys, G, amd, ops[one], one_b, one_n);
    else
        for (int o = 0; o < 3; o++)
            for (int n = 8; n <= 4096; n *= 2)
                for (double b = 1024; b <= 4.0 * 1073741824.0; b *= 16)
                    line(&cm, &sys, G, amd, ops[o], b, n);
    lp_profile_destroy(&prof);
    return 0;
}
