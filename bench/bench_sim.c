/* Simulator throughput: configurations per second per core for a fixed list
 * of GPT-3 175B configurations on DGX A100 (every tp, pp, micro-batch,
 * recompute, ZeRO, schedule/vp combination that is structurally valid for
 * 1024 GPUs), with the shipped HDF5 profile.
 *
 * Reported in one run: sweep order (each configuration once, on a fresh
 * simulator, as a sweep sees them: the memos fill as it goes), warm (the list
 * again and again: every memo hit), cold (both memos cleared before every
 * configuration: the full operator-by-operator cost and schedule solve).
 *   bench_sim [PROFILE.h5] [SECONDS]                                     */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llmplan/io.h"
#include "llmplan/sim.h"
#include "sim_internal.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int build_list(const struct lp_run *base, struct lp_run *list, int cap)
{
    int n = 0, gpus = 1024;
    int tps[] = {1, 2, 4, 8}, pps[] = {1, 2, 4, 8, 16, 32}, mbs[] = {1, 2, 4, 8};
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 6; b++)
            for (int c = 0; c < 4; c++)
                for (int rc = 0; rc < 3; rc++)
                    for (int z = 0; z < 3; z++)
                        for (int v = 1; v <= 4; v *= 2)
                            for (int sp = 0; sp < 2; sp++) {
                                struct lp_run r = *base;
                                r.par.tp = tps[a];
                                r.par.pp = pps[b];
                                r.par.dp = gpus / (tps[a] * pps[b]);
                                r.par.micro_batch = mbs[c];
                                r.par.recompute = (enum lp_recompute)rc;
                                r.par.zero = z;
                                r.par.vp = v;
                                r.par.schedule = v > 1 ? LP_SCHED_INTERLEAVED : LP_SCHED_1F1B;
                                r.par.sequence_parallel = sp && tps[a] > 1;
                                if (sp && tps[a] == 1) continue;
                                if (lp_sim_validate(&r) != LP_REASON_NONE) continue;
                                if (n < cap) list[n++] = r;
                            }
    return n;
}

static void clear_memo(struct lp_sim *s)
{
    memset(s->used, 0, sizeof(s->used));
    memset(s->sused, 0, sizeof(s->sused));
}

int main(int argc, char **argv)
{
    struct lp_err err;
    lp_err_clear(&err);
    struct lp_run base;
    const char *text = "{\"model\": \"gpt3-175b\", \"system\": \"dgx-a100-80gb\","
                       " \"training\": {\"global_batch\": 1536, \"tokens\": 3e11}}";
    if (lp_parse_run(text, "bench", &base, &err) < 0) {
        fprintf(stderr, "bench_sim: %s\n", err.msg);
        return 1;
    }
    char path[1024];
    if (argc > 1)
        snprintf(path, sizeof(path), "%s", argv[1]);
    else
        lp_profile_default_path(base.system.gpu.name, path, sizeof(path));
    double secs = argc > 2 ? atof(argv[2]) : 2.0;
    struct lp_profile *prof = NULL;
    if (lp_profile_read_h5(path, &prof, &err) < 0) {
        fprintf(stderr, "bench_sim: %s\n", err.msg);
        return 1;
    }
    struct lp_cost_model cm;
    lp_cost_model_table(&cm, prof, &base.system.gpu);
    struct lp_sim *sim = NULL;
    if (lp_sim_create(&cm, &sim, &err) < 0) return 1;
    static struct lp_run list[20000];
    int n = build_list(&base, list, 20000);
    struct lp_result res;
    double sink = 0;
    long feasible = 0;
    double t1 = now();
    for (int i = 0; i < n; i++) {
        lp_sim_run(sim, &list[i], &res);
        feasible += res.feasible;
    }
    double first = (double)n / (now() - t1);
    long done = 0;
    double t0 = now(), t;
    do {
        for (int i = 0; i < n; i++) {
            lp_sim_run(sim, &list[i], &res);
            sink += res.iteration_time_s;
        }
        done += n;
    } while ((t = now() - t0) < secs);
    double warm = (double)done / t;
    long cdone = 0;
    t0 = now();
    do {
        for (int i = 0; i < n; i++) {
            clear_memo(sim);
            lp_sim_run(sim, &list[i], &res);
            sink += res.iteration_time_s;
        }
        cdone += n;
    } while ((t = now() - t0) < secs);
    double cold = (double)cdone / t;
    printf("bench_sim: %d GPT-3 175B configurations on 1024 A100s (%ld feasible), profile %s\n", n,
           feasible, path);
    printf("  sweep order (once each) %12.0f configs/s/core\n", first);
    printf("  warm (memos hit)        %12.0f configs/s/core\n", warm);
    printf("  cold (memo cleared)     %12.0f configs/s/core\n", cold);
    printf("  ratio warm/cold         %12.1f\n", warm / cold);
    printf("  (checksum %.6g)\n", sink);
    lp_sim_destroy(&sim);
    lp_profile_destroy(&prof);
    return 0;
}
