/* Closed-form roofline cost model: the test backend, and the fallback for a
 * table a profile lacks. Every operator costs
 *     t = launch + max(flops / (peak * eff_c), bytes / (bw * eff_m))
 * with fixed efficiencies (not calibrated; see the constants below). It is
 * deliberately simple: tests derive its numbers by hand. */
#include <math.h>
#include <string.h>

#include "llmplan/profile.h"

/* Fixed efficiency terms of the roofline backend (stated, not fitted). */
#define RL_LAUNCH_S 5e-6     /* one kernel launch + tail, typical for CUDA kernels */
#define RL_GEMM_EFF 0.80     /* fraction of tensor-core peak a large GEMM reaches */
#define RL_ATTN_FWD_EFF 0.60 /* fused attention forward, fraction of peak */
#define RL_ATTN_BWD_EFF 0.45 /* fused attention backward */
#define RL_MEM_EFF 0.85      /* fraction of HBM bandwidth a streaming kernel reaches */
#define RL_COLL_EFF 0.80     /* bus bandwidth fraction of a large collective */

static double peak(const struct lp_gpu *g, enum lp_prec p)
{
    double f = g->peak_flops[p];
    if (f <= 0) f = g->peak_flops[LP_FP32] > 0 ? g->peak_flops[LP_FP32] : g->vector_flops;
    return f > 0 ? f : 1e12;
}

double lp_gemm_flops(double m, double n, double k)
{
    return 2.0 * m * n * k;
}

/* forward: QK^T and PV, 2 * 2*s*s*d per head; backward 2.5x (dQ, dK, dV, dP, recompute S) */
double lp_attn_flops(bool causal, enum lp_pass pass, double bh, double seq, double hd)
{
    double flops = 4.0 * bh * seq * seq * hd * (pass == LP_PASS_BWD ? 2.5 : 1.0);
    return causal ? 0.5 * flops : flops;
}

bool lp_attn_pass_is_v1(enum lp_attn_impl impl, enum lp_pass pass)
{
    return impl == LP_ATTN_FLASH1 || (impl == LP_ATTN_TRITON && pass == LP_PASS_BWD);
}

static double rl_gemm(const struct lp_cost_model *cm, enum lp_gemm_layout l, enum lp_prec p,
                      double m, double n, double k)
{
    (void)l;
    double e = lp_prec_bytes(p);
    double flops = lp_gemm_flops(m, n, k);
    double bytes = e * (m * k + k * n + m * n);
    double tc = flops / (peak(&cm->gpu, p) * RL_GEMM_EFF);
    double tm = bytes / (cm->gpu.mem_bw_Bps * RL_MEM_EFF);
    return RL_LAUNCH_S + (tc > tm ? tc : tm);
}

static double rl_attn(const struct lp_cost_model *cm, enum lp_attn_impl impl, bool causal,
                      enum lp_pass pass, enum lp_prec p, double bh, double seq, double hd)
{
    double e = lp_prec_bytes(p);
    double flops = lp_attn_flops(causal, pass, bh, seq, hd);
    double io = e * bh * seq * hd * (pass == LP_PASS_BWD ? 8.0 : 4.0);
    double eff = pass == LP_PASS_BWD ? RL_ATTN_BWD_EFF : RL_ATTN_FWD_EFF;
    if (lp_attn_pass_is_v1(impl, pass)) eff *= cm->attn_old_ratio;
    const bool unf = impl == LP_ATTN_UNFUSED || impl == LP_ATTN_UNFUSED_FS;
    if (unf) { /* unfused_fs: costed as eager unfused attention (an upper bound) */
        /* score matrix written and read by softmax and dropout: s*s elements per head */
        double score = bh * seq * seq * e * (pass == LP_PASS_BWD ? 6.0 : 4.0);
        io += score;
        eff = RL_GEMM_EFF;
        if (causal) flops *= 2.0; /* unfused kernels compute the masked half too */
    }
    double tc = flops / (peak(&cm->gpu, p) * eff);
    double tm = io / (cm->gpu.mem_bw_Bps * RL_MEM_EFF);
    double launches = unf ? 4.0 : 1.0;
    return launches * RL_LAUNCH_S + (unf ? tc + tm : (tc > tm ? tc : tm));
}

static double rl_mem(const struct lp_cost_model *cm, enum lp_mem_kind k, double bytes)
{
    (void)k;
    return RL_LAUNCH_S + bytes / (cm->gpu.mem_bw_Bps * RL_MEM_EFF);
}

static double rl_coll(const struct lp_cost_model *cm, enum lp_coll c, enum lp_tier t, double bytes,
                      int ranks)
{
    (void)cm, (void)c, (void)t, (void)bytes, (void)ranks;
    return RL_COLL_EFF;
}

const struct lp_cost_ops lp_cost_roofline_ops = {
    .name = "roofline",
    .gemm_s = rl_gemm,
    .attn_s = rl_attn,
    .mem_s = rl_mem,
    .coll_eff = rl_coll,
    .coll_eff_has_latency = false, /* a fixed fraction: alpha added by sim_comm.c */
};

void lp_cost_model_roofline(struct lp_cost_model *cm, const struct lp_gpu *gpu)
{
    cm->ops = &lp_cost_roofline_ops;
    cm->profile = NULL;
    cm->gpu = *gpu;
    memset(cm->coll_ref, 0, sizeof(cm->coll_ref));
    cm->coll_cal = (struct lp_coll_cal){0};
    cm->coll_tree_two_nodes = true;
    struct lp_calib c;
    lp_calib_builtin(&c);
    cm->attn_old_ratio = c.attn_old_ratio;
}
