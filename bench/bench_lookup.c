/* Profile lookups per second (not a test: prints figures, gates nothing).
 *
 *   bench_lookup [PROFILE.h5] [N]
 *
 * Without a file it synthesises an A100-like analytical profile in memory.
 * Each family is timed over N lookups (default 2^22) at pseudo-random
 * off-grid coordinates inside the grid, generated before timing, through the
 * table cost backend's ops (what the simulator calls) and, for comparison,
 * through lp_table_lookup directly. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llmplan/io.h"
#include "llmplan/profile.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* xorshift64*: deterministic coordinates */
static double uniform(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (double)((*s * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

/* log-uniform in [lo, hi] */
static double log_uniform(uint64_t *s, double lo, double hi)
{
    return lo * exp(uniform(s) * log(hi / lo));
}

static void report(const char *what, int n, double dt, double sum)
{
    printf("  %-34s %7.1f ns/lookup  %6.2f M lookups/s   (checksum %.6g)\n", what, 1e9 * dt / n,
           n / dt / 1e6, sum);
}

int main(int argc, char **argv)
{
    struct lp_err err;
    lp_err_clear(&err);
    struct lp_profile *p = NULL;
    struct lp_gpu g;
    memset(&g, 0, sizeof(g));
    snprintf(g.name, sizeof(g.name), "a100-80gb");
    g.mem_bw_Bps = 2039e9;
    g.peak_flops[LP_FP32] = 156e12;
    g.peak_flops[LP_FP16] = 312e12;
    g.peak_flops[LP_BF16] = 312e12;
    g.sms = 108;
    int rc =
        argc > 1 ? lp_profile_read_h5(argv[1], &p, &err) : lp_profile_synth(&g, NULL, &p, &err);
    if (rc != LP_OK) {
        fprintf(stderr, "bench_lookup: %s\n", err.msg);
        return 1;
    }
    const int n = argc > 2 ? atoi(argv[2]) : 1 << 22;
    if (n <= 0) return 2;
    double *x = malloc(sizeof(double) * 3 * (size_t)n);
    if (!x) return 1;
    struct lp_cost_model cm;
    lp_cost_model_table(&cm, p, &g);
    printf("profile %s (%s), %d lookups per family\n", argc > 1 ? argv[1] : "synthesised a100-80gb",
           p->source, n);

    uint64_t s = 0x9e3779b97f4a7c15ULL;
    double sum, t0;

    for (int i = 0; i < n; i++) {
        x[3 * i] = log_uniform(&s, 64, 131072);
        x[3 * i + 1] = log_uniform(&s, 64, 65536);
        x[3 * i + 2] = log_uniform(&s, 64, 65536);
    }
    sum = 0, t0 = now_s();
    for (int i = 0; i < n; i++)
        sum += cm.ops->gemm_s(&cm, LP_GEMM_FWD, LP_BF16, x[3 * i], x[3 * i + 1], x[3 * i + 2]);
    report("gemm (3-D) via cost ops", n, now_s() - t0, sum);
    sum = 0, t0 = now_s();
    for (int i = 0; i < n; i++)
        sum += lp_table_lookup(&p->gemm[LP_GEMM_FWD][LP_BF16], &x[3 * i], NULL);
    report("gemm (3-D) lp_table_lookup", n, now_s() - t0, sum);
    /* on-grid coordinates skip the log of zero-weight corners */
    for (int i = 0; i < 3 * n; i++)
        x[i] = exp2(round(log2(x[i])));
    sum = 0, t0 = now_s();
    for (int i = 0; i < n; i++)
        sum += lp_table_lookup(&p->gemm[LP_GEMM_FWD][LP_BF16], &x[3 * i], NULL);
    report("gemm (3-D) at grid points", n, now_s() - t0, sum);

    static const double hd[] = {64, 80, 96, 128};
    for (int i = 0; i < n; i++) {
        x[3 * i] = log_uniform(&s, 1, 4096);
        x[3 * i + 1] = log_uniform(&s, 128, 131072);
        x[3 * i + 2] = hd[i & 3];
    }
    sum = 0, t0 = now_s();
    for (int i = 0; i < n; i++)
        sum += cm.ops->attn_s(&cm, LP_ATTN_FUSED, true, LP_PASS_BWD, LP_BF16, x[3 * i],
                              x[3 * i + 1], x[3 * i + 2]);
    report("attn (3-D) via cost ops", n, now_s() - t0, sum);

    for (int i = 0; i < n; i++)
        x[i] = log_uniform(&s, 1024, 1.6e10);
    sum = 0, t0 = now_s();
    for (int i = 0; i < n; i++)
        sum += cm.ops->mem_s(&cm, LP_MEM_LAYERNORM, x[i]);
    report("mem (1-D) via cost ops", n, now_s() - t0, sum);

    static const int ranks[] = {2, 4, 8, 8};
    for (int i = 0; i < n; i++)
        x[i] = log_uniform(&s, 1024, 1.6e10);
    sum = 0, t0 = now_s();
    for (int i = 0; i < n; i++)
        sum += cm.ops->coll_eff(&cm, LP_COLL_ALLREDUCE, LP_TIER_INTRA, x[i], ranks[i & 3]);
    report("coll (2-D) via cost ops", n, now_s() - t0, sum);

    free(x);
    lp_profile_destroy(&p);
    return 0;
}
