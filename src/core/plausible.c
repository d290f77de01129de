/* Plausibility of a kernel profile against its GPU's datasheet (issue #21).
 *
 * lp_table_check only asks for finite positive values, so 1e308 s passes
 * and makes every simulated time infinite. Here each grid point of a time
 * table is bounded by the datasheet roofline of its operation:
 *     ideal = max(flops / peak, bytes / bandwidth)
 *     ideal / LP_PLAUSIBLE_FAST <= t <= LP_PLAUSIBLE_SLOW * ideal_io + LP_PLAUSIBLE_FIXED_S
 * where ideal_io adds the compute and memory terms and, for attention,
 * charges the score matrix's HBM traffic of an unfused kernel (so that the
 * upper bound holds for every implementation). The flop counts are those of
 * the roofline backend (lp_gemm_flops, lp_attn_flops); bytes of a
 * memory-bound kernel are its axis (read + write). Collective tables hold a
 * fraction f of nominal bandwidth: f <= LP_PLAUSIBLE_COLL_MAX, and the time
 * it implies on the fastest plausible link, b * busfactor / (f *
 * LP_PLAUSIBLE_LINK_BPS), within the slow bound plus LP_PLAUSIBLE_STEP_S per
 * rank. The factors are documented in
 * docs/profile-format.md; they reject absurd values, not merely slow or
 * fast kernels. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llmplan/profile.h"

static double fastest_peak(const struct lp_gpu *g)
{
    double f = g->vector_flops;
    for (int p = 0; p < LP_PREC_TABLES; p++)
        if (g->peak_flops[p] > f) f = g->peak_flops[p];
    return f;
}

static double slowest_peak(const struct lp_gpu *g, enum lp_prec p)
{
    if (g->peak_flops[p] > 0) return g->peak_flops[p];
    if (g->peak_flops[LP_FP32] > 0) return g->peak_flops[LP_FP32];
    return g->vector_flops;
}

/* Lower and upper bound of one grid point of slot i. */
static void bounds(const struct lp_gpu *g, const struct lp_slot *s, int i, const double *x,
                   double *lo, double *hi)
{
    /* the slot order (profile.h): gemm[layout][prec], attn[impl][causal][pass][prec], mem */
    const double bw = g->mem_bw_Bps;
    double flops = 0, bytes = 0, io = 0;
    enum lp_prec prec = LP_FP32;
    if (s->family == LP_FAM_GEMM) {
        prec = (enum lp_prec)(i % LP_PREC_TABLES);
        const double e = lp_prec_bytes(prec);
        flops = lp_gemm_flops(x[0], x[1], x[2]);
        bytes = e * (x[0] * x[2] + x[2] * x[1] + x[0] * x[1]);
        io = bytes;
    } else if (s->family == LP_FAM_ATTN) {
        const int j = i - LP_GEMM_LAYOUT_COUNT * LP_PREC_TABLES;
        prec = (enum lp_prec)(j % LP_PREC_TABLES);
        const enum lp_pass pass = (enum lp_pass)(j / LP_PREC_TABLES % LP_PASS_COUNT);
        const bool causal = j / (LP_PREC_TABLES * LP_PASS_COUNT) % 2 != 0;
        const double e = lp_prec_bytes(prec);
        flops = lp_attn_flops(causal, pass, x[0], x[1], x[2]);
        bytes = e * x[0] * x[1] * x[2] * 4.0; /* Q, K, V, O once */
        io = bytes * 2.0 + e * x[0] * x[1] * x[1] * 8.0;
    } else {
        bytes = io = x[0];
    }
    const double ideal = fmax(flops > 0 ? flops / fastest_peak(g) : 0.0, bytes / bw);
    const double peak = slowest_peak(g, prec);
    *lo = ideal / LP_PLAUSIBLE_FAST;
    *hi = LP_PLAUSIBLE_SLOW * ((peak > 0 ? flops / peak : 0.0) + io / bw) + LP_PLAUSIBLE_FIXED_S;
    if (s->family == LP_FAM_ATTN && g->peak_flops[prec] > 0)
        *lo = fmax(*lo, flops / g->peak_flops[prec] / LP_PLAUSIBLE_FAST);
}

int lp_profile_plausible(const struct lp_profile *p, const struct lp_gpu *gpu, struct lp_err *err)
{
    const char *name = p->path[0] ? p->path : p->gpu;
    if (!(gpu->mem_bw_Bps > 0) || !(fastest_peak(gpu) > 0))
        LP_FAIL(err, LP_EINVAL, "profile %s: GPU %s has no bandwidth or peak to check it against",
                name, gpu->name);
    for (int i = 0; i < LP_PROFILE_SLOTS; i++) {
        const struct lp_slot *s = lp_profile_slot(i);
        const struct lp_table *t = lp_profile_slot_table_c(p, i);
        if (!lp_table_present(t)) continue;
        size_t n = 1;
        for (int d = 0; d < t->ndim; d++)
            n *= (size_t)t->dims[d];
        for (size_t k = 0; k < n; k++) {
            double x[LP_TABLE_MAX_DIMS] = {0};
            size_t rest = k;
            for (int d = t->ndim - 1; d >= 0; d--) { /* row-major: last axis fastest */
                x[d] = t->axis[d][rest % (size_t)t->dims[d]];
                rest /= (size_t)t->dims[d];
            }
            const double v = t->value[k];
            if (s->family == LP_FAM_COLL) {
                const int j = i - (LP_PROFILE_SLOTS - LP_COLL_COUNT * LP_TIER_COUNT);
                const double wire =
                    x[0] * lp_coll_bus_factor((enum lp_coll)(j / LP_TIER_COUNT), (int)x[1]);
                const double ideal = wire / LP_PLAUSIBLE_LINK_BPS;
                const double fmin = ideal / (LP_PLAUSIBLE_SLOW * ideal + LP_PLAUSIBLE_FIXED_S +
                                             x[1] * LP_PLAUSIBLE_STEP_S);
                if (v < fmin || v > LP_PLAUSIBLE_COLL_MAX)
                    LP_FAIL(err, LP_EFORMAT,
                            "profile %s: table %s value %zu is %g, implausible (expected a "
                            "bandwidth fraction in [%.3g, %g]; docs/profile-format.md)",
                            name, s->path, k, v, fmin, LP_PLAUSIBLE_COLL_MAX);
                continue;
            }
            double lo, hi;
            bounds(gpu, s, i, x, &lo, &hi);
            if (v < lo || v > hi)
                LP_FAIL(err, LP_EFORMAT,
                        "profile %s: table %s value %zu is %g s, implausible for GPU %s (expected "
                        "%.3g..%.3g s: within %gx faster or %gx + %g s slower than its datasheet "
                        "roofline; docs/profile-format.md)",
                        name, s->path, k, v, gpu->name, lo, hi, LP_PLAUSIBLE_FAST,
                        LP_PLAUSIBLE_SLOW, LP_PLAUSIBLE_FIXED_S);
        }
    }
    return LP_OK;
}

int lp_profile_match_gpu(const struct lp_profile *p, const struct lp_gpu *gpu, bool allow,
                         bool *mismatch, struct lp_err *err)
{
    *mismatch = strcmp(p->gpu, gpu->name) != 0;
    if (!*mismatch || allow) return LP_OK;
    LP_FAIL(err, LP_EINVAL,
            "profile %s: measured on GPU '%s', but the system's GPU is '%s'; use a profile of "
            "'%s' (data/profiles/%s.h5, or the profile \"synth\"), give each system its own "
            "profile (docs/search.md), or pass --allow-profile-mismatch to use it anyway",
            p->path[0] ? p->path : "(in memory)", p->gpu, gpu->name, gpu->name, gpu->name);
}
