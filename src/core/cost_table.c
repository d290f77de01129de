/* The "table" cost backend: operator costs looked up in a kernel profile
 * (measured or analytical, profile.h). Where the profile lacks a table (fp8
 * on a GPU without fp8, a collective or tier that was not measured) the call
 * goes to the roofline backend through its ops table, so every operator
 * always has a cost.
 *
 * Extrapolation beyond a table's grid follows lp_table_lookup: the size-like
 * axes scale the edge value with the work (GEMM m, n, k and attention
 * batch_heads linearly, attention seq quadratically, memory bytes linearly);
 * head_dim and the collective axes are clamped to the edge. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "llmplan/profile.h"

/* Per-family extrapolation powers (see lp_table_axis_pow): fixed here rather
 * than taken from the axis names so that a profile with unexpected names
 * still extrapolates as documented. */
static const double gemm_pow[3] = {1, 1, 1}; /* m, n, k: time ~ 2mnk */
static const double attn_pow[3] = {1, 2, 0}; /* batch_heads, seq^2, head_dim clamped */
static const double mem_pow[1] = {1};        /* bytes moved */
static const double coll_pow[2] = {0, 0};    /* a bandwidth fraction saturates */

/* Block-scaled GEMMs (mxfp8, nvfp4) have no tables of their own: they run
 * on the fp8 tensor-core path (Blackwell: mxfp8 at the fp8 rate, nvfp4 at
 * twice it), so the fp8 time is scaled by the GPU's peak ratio. Assumption
 * stated in docs/profile-format.md: the same achieved fraction of peak as
 * fp8 (kernels.csv has no block-scaled GEMM rows). */
static double tb_gemm(const struct lp_cost_model *cm, enum lp_gemm_layout l, enum lp_prec p,
                      double m, double n, double k);

static double block_scaled(const struct lp_cost_model *cm, enum lp_gemm_layout l, enum lp_prec p,
                           double m, double n, double k)
{
    const double f8 = cm->gpu.peak_flops[LP_FP8], fp = cm->gpu.peak_flops[p];
    const double t = tb_gemm(cm, l, LP_FP8, m, n, k);
    return f8 > 0 && fp > 0 ? t * f8 / fp : t;
}

static double tb_gemm(const struct lp_cost_model *cm, enum lp_gemm_layout l, enum lp_prec p,
                      double m, double n, double k)
{
    const struct lp_profile *pr = cm->profile;
    if (lp_prec_table(p) != p) return block_scaled(cm, l, p, m, n, k);
    if (pr && (unsigned)l < LP_GEMM_LAYOUT_COUNT && (unsigned)p < LP_PREC_TABLES) {
        const struct lp_table *t = &pr->gemm[l][p];
        if (lp_table_present(t)) {
            const double x[3] = {m, n, k};
            return lp_table_lookup_pow(t, x, gemm_pow, NULL);
        }
    }
    return lp_cost_roofline_ops.gemm_s(cm, l, p, m, n, k);
}

static double tb_attn(const struct lp_cost_model *cm, enum lp_attn_impl impl, bool causal,
                      enum lp_pass pass, enum lp_prec p, double bh, double seq, double hd)
{
    const struct lp_profile *pr = cm->profile;
    if (pr && (unsigned)impl < LP_ATTN_IMPL_COUNT && (unsigned)pass < LP_PASS_COUNT &&
        (unsigned)p < LP_PREC_TABLES) {
        const struct lp_table *t = &pr->attn[impl][causal ? 1 : 0][pass][p];
        const double x[3] = {bh, seq, hd};
        if (lp_table_present(t)) return lp_table_lookup_pow(t, x, attn_pow, NULL);
        /* a measured profile without flash1/triton tables: its fused
         * (FlashAttention-2 class) table, at the stated relative speed in
         * the passes that run at v1's (lp_attn_pass_is_v1); without cudnn
         * tables: its fused table, which llmplan-profile measures with
         * cuDNN's kernel */
        t = &pr->attn[LP_ATTN_FUSED][causal ? 1 : 0][pass][p];
        if ((impl == LP_ATTN_CUDNN || impl == LP_ATTN_FLASH1 || impl == LP_ATTN_TRITON) &&
            lp_table_present(t))
            return lp_table_lookup_pow(t, x, attn_pow, NULL) /
                   (lp_attn_pass_is_v1(impl, pass) ? cm->attn_old_ratio : 1.0);
        /* without unfused_fs tables: the unfused table (an eager softmax, so
         * an overestimate; llmplan-profile measures both) */
        t = &pr->attn[LP_ATTN_UNFUSED][causal ? 1 : 0][pass][p];
        if (impl == LP_ATTN_UNFUSED_FS && lp_table_present(t))
            return lp_table_lookup_pow(t, x, attn_pow, NULL);
    }
    return lp_cost_roofline_ops.attn_s(cm, impl, causal, pass, p, bh, seq, hd);
}

static double tb_mem(const struct lp_cost_model *cm, enum lp_mem_kind k, double bytes)
{
    const struct lp_profile *pr = cm->profile;
    if (pr && (unsigned)k < LP_MEM_KIND_COUNT) {
        const struct lp_table *t = &pr->mem[k];
        if (lp_table_present(t)) return lp_table_lookup_pow(t, &bytes, mem_pow, NULL);
        /* A measured profile may hold only the copy kernel: use it for all. */
        t = &pr->mem[LP_MEM_COPY];
        if (lp_table_present(t)) return lp_table_lookup_pow(t, &bytes, mem_pow, NULL);
    }
    return lp_cost_roofline_ops.mem_s(cm, k, bytes);
}

static double tb_coll(const struct lp_cost_model *cm, enum lp_coll c, enum lp_tier tier,
                      double bytes, int ranks)
{
    const struct lp_profile *pr = cm->profile;
    if (pr && (unsigned)c < LP_COLL_COUNT && (unsigned)tier < LP_TIER_COUNT) {
        const struct lp_table *t = &pr->coll[c][tier];
        if (lp_table_present(t)) {
            /* Below the table's smallest message a collective is
             * latency-bound: it takes the smallest message's time (the
             * fraction falls with the size), not that message's fraction
             * (which made an 8-byte all-reduce cost 1/128 of a 1 KiB one).
             * NCCL's LL protocol costs the same from a few bytes to KiBs
             * (ncclTopoGetAlgoTime: lat + bytes / bw, bw ~ 10-40 GB/s);
             * measured: nccl-tests issue #150, two A100 nodes over HDR,
             * all-reduce 19.9 / 20.7 / 19.2 / 19.4 us at 8 / 16 / 32 / 64 B. */
            const double lo = t->axis[0][0];
            const double x[2] = {bytes < lo ? lo : bytes, (double)ranks};
            const double e = lp_table_lookup_pow(t, x, coll_pow, NULL);
            return bytes < lo ? e * bytes / lo : e;
        }
    }
    return lp_cost_roofline_ops.coll_eff(cm, c, tier, bytes, ranks);
}

const struct lp_cost_ops lp_cost_table_ops = {
    .name = "table",
    .gemm_s = tb_gemm,
    .attn_s = tb_attn,
    .mem_s = tb_mem,
    .coll_eff = tb_coll,
    .coll_eff_has_latency = true,
};

void lp_cost_model_table(struct lp_cost_model *cm, const struct lp_profile *p,
                         const struct lp_gpu *gpu)
{
    cm->ops = &lp_cost_table_ops;
    cm->profile = p;
    cm->gpu = *gpu;
    struct lp_calib c;
    lp_calib_builtin(&c);
    cm->attn_old_ratio = c.attn_old_ratio;
    /* no profile: the roofline's fractions (tb_coll falls back to them) */
    cm->coll_tree_two_nodes = !p || strcmp(p->source, "measured") != 0;
    /* synth.c add_provenance writes the reference links as numbers; the
     * file's reader refuses a malformed one (lp_profile_coll_ref): only a
     * profile built in memory with one gets here, taken as unknown */
    struct lp_profile_coll_ref ref = {0};
    const char *bad;
    if (p && lp_profile_coll_ref(p, &ref, &bad) != LP_OK) ref = (struct lp_profile_coll_ref){0};
    cm->coll_ref[LP_TIER_INTRA] =
        (struct lp_link){.bw_Bps = ref.intra_bw_Bps, .latency_s = ref.intra_latency_s};
    cm->coll_ref[LP_TIER_INTER] =
        (struct lp_link){.bw_Bps = ref.inter_bw_Bps, .latency_s = ref.inter_latency_s};
    /* an analytical profile that records its inter-node reference (synth
     * since stop 30) carried its columns in ranks with NCCL's model from
     * synth's calibration layout: lp_coll_time redoes that step for each
     * group's own layout (cost.h coll_cal) */
    cm->coll_cal = (struct lp_coll_cal){0};
    if (cm->coll_tree_two_nodes && p && ref.inter_latency_s > 0 && ref.gpus_per_node > 0)
        lp_synth_coll_cal(ref.gpus_per_node, &cm->coll_cal);
}
