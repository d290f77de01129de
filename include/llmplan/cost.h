/* The operator-cost interface of the simulator: the operators it prices
 * (GEMM layouts, attention kernels, memory-bound kernels, collectives), the
 * backend interface (struct lp_cost_ops, with its capabilities), and the two
 * backends: the profile tables (src/core/cost_table.c; the tables
 * themselves are llmplan/profile.h's) and the closed-form roofline
 * (src/core/cost_roofline.c). Core: no I/O. */
#ifndef LLMPLAN_COST_H
#define LLMPLAN_COST_H

#include <stdbool.h>

#include "llmplan/config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GEMM layouts of a linear layer Y = X W (X: tokens x in, W: in x out).
 * Each is timed as C[m x n] = A[m x k] B[k x n] with flops 2mnk. */
enum lp_gemm_layout {
    LP_GEMM_FWD = 0, /* Y = X W:        m = tokens, n = out, k = in   */
    LP_GEMM_DGRAD,   /* dX = dY W^T:    m = tokens, n = in,  k = out  */
    LP_GEMM_WGRAD,   /* dW = X^T dY:    m = in,     n = out, k = tokens */
    LP_GEMM_LAYOUT_COUNT
};

/* Attention kernels. "fused" is FlashAttention-2 (or any kernel of its
 * class); "flash1" the original FlashAttention CUDA kernel (Dao et al.
 * 2022); "triton" the Triton FlashAttention kernel (used by MPT /
 * llm-foundry's attn_impl "triton"); "cudnn" cuDNN's fused flash attention
 * as Transformer Engine runs it (FusedAttention, F16_arbitrary_seqlen),
 * which TE prefers on Hopper and newer. "unfused" is attention with the
 * s x s scores in memory as eager PyTorch runs it (matmul, mask, softmax,
 * dropout as separate kernels); "unfused_fs" the same with Megatron's fused
 * scale-mask-softmax kernel (one pass that reads only the causal part of
 * each row). Tables of flash1, triton, cudnn and unfused_fs are optional:
 * analytical profiles carry them; a measured profile's fused table is
 * cuDNN's kernel (llmplan-profile measures cuDNN), so it stands in for a
 * missing cudnn table, and its unfused table for a missing unfused_fs. */
enum lp_attn_impl {
    LP_ATTN_FUSED = 0,
    LP_ATTN_UNFUSED,
    LP_ATTN_FLASH1,
    LP_ATTN_TRITON,
    LP_ATTN_CUDNN,
    LP_ATTN_UNFUSED_FS,
    LP_ATTN_IMPL_COUNT
};
enum lp_pass { LP_PASS_FWD = 0, LP_PASS_BWD, LP_PASS_COUNT };

/* Memory-bound kernels, costed by the bytes they move (read + write). */
enum lp_mem_kind {
    LP_MEM_LAYERNORM = 0,
    LP_MEM_RMSNORM,
    LP_MEM_GELU,
    LP_MEM_SWIGLU,
    LP_MEM_SOFTMAX,
    LP_MEM_DROPOUT,
    LP_MEM_RESIDUAL,
    LP_MEM_ROPE,
    LP_MEM_ADAM,
    LP_MEM_CROSS_ENTROPY,
    LP_MEM_EMBEDDING,
    LP_MEM_COPY, /* plain device copy: the bandwidth reference */
    LP_MEM_KIND_COUNT
};

enum lp_coll {
    LP_COLL_ALLREDUCE = 0,
    LP_COLL_ALLGATHER,
    LP_COLL_REDUCESCATTER,
    LP_COLL_ALLTOALL,
    LP_COLL_SENDRECV,
    LP_COLL_COUNT
};

enum lp_tier { LP_TIER_INTRA = 0, LP_TIER_INTER, LP_TIER_COUNT };

/* nccl-tests' bus-bandwidth factor of a collective over n ranks: busbw =
 * algbw x factor (all-reduce 2(n-1)/n; all-gather, reduce-scatter,
 * all-to-all (n-1)/n; send/recv 1); 0 for n < 1. */
double lp_coll_bus_factor(enum lp_coll c, int ranks);

/* Names used for groups/datasets in HDF5 and in messages. */
const char *lp_gemm_layout_name(enum lp_gemm_layout l);
const char *lp_attn_impl_name(enum lp_attn_impl i);
const char *lp_pass_name(enum lp_pass p);
const char *lp_mem_kind_name(enum lp_mem_kind k);
const char *lp_coll_name(enum lp_coll c);
const char *lp_tier_name(enum lp_tier t);

/* Flops of the roofline backend's operations: a GEMM 2mnk; attention
 * QK^T and PV, 4*bh*s^2*d forward, 2.5x backward, halved when causal. */
double lp_gemm_flops(double m, double n, double k);
double lp_attn_flops(bool causal, enum lp_pass pass, double bh, double seq, double hd);

/* Whether a pass of an attention kernel runs at FlashAttention v1's speed
 * (the rest at FlashAttention-2's class): `flash1` in both passes; `triton`
 * (MPT's flash_attn_triton.py) in the backward only, its forward being
 * FlashAttention-2's partition (docs/profile-format.md). The synthesized
 * tables, a measured profile without flash1/triton tables and the roofline
 * backend all follow it. */
bool lp_attn_pass_is_v1(enum lp_attn_impl impl, enum lp_pass pass);

/* ---- the operator-cost interface used by the simulator ---- */

struct lp_cost_model;
struct lp_profile;

struct lp_cost_ops {
    const char *name;
    double (*gemm_s)(const struct lp_cost_model *cm, enum lp_gemm_layout l, enum lp_prec p,
                     double m, double n, double k);
    double (*attn_s)(const struct lp_cost_model *cm, enum lp_attn_impl impl, bool causal,
                     enum lp_pass pass, enum lp_prec p, double batch_heads, double seq,
                     double head_dim);
    double (*mem_s)(const struct lp_cost_model *cm, enum lp_mem_kind k, double bytes);
    /* fraction of the nominal tier bandwidth reached by a collective */
    double (*coll_eff)(const struct lp_cost_model *cm, enum lp_coll c, enum lp_tier t, double bytes,
                       int ranks);
    /* Capability: coll_eff's fractions already contain the collectives'
     * latency (measured or modelled per message size, as a profile's are),
     * so the communication model adds no alpha term (sim_comm.c). */
    bool coll_eff_has_latency;
};

struct lp_cost_model {
    const struct lp_cost_ops *ops;
    const struct lp_profile *profile; /* table backend (borrowed) */
    struct lp_gpu gpu;                /* roofline backend / fallbacks */
    /* The links a synthetic profile's collective fractions were built for
     * (its provenance coll_{intra,inter}_bw_GBps and _latency_us); 0 where
     * not known (a measured profile: its own links). lp_coll_eff_on. */
    struct lp_link coll_ref[LP_TIER_COUNT];
    /* The inter-node fractions are rings' (the analytical curve, fitted at
     * 4 nodes and carried in ranks by NCCL's model, which picks the ring
     * for large all-reduces at any node count; the roofline's fixed
     * fraction), so lp_coll_time adds NCCL's tree at two nodes. False for
     * a measured profile, whose 2-node columns ran what NCCL ran. */
    bool coll_tree_two_nodes;
    /* How a synthetic profile carried its inter-node all-reduce,
     * all-gather and reduce-scatter in ranks: the measured curve at
     * `ranks` ranks on `nodes` full nodes, plus the time NCCL's own model
     * (NCCL release `nccl_version`, enum lp_nccl_version; `amd_cpu`) adds
     * at another layout (synth.c coll_eff, nccl_model.c
     * lp_nccl_rescale_s). lp_coll_time takes that step itself, for the
     * group's own layout and links: NCCL's per-step latencies are
     * constants of its protocols (tuning.cc hwLatencies), not of the
     * network, so they must not be scaled with the link latency as the
     * measured part is (lp_coll_eff_on). ranks 0: none (a measured
     * profile, the roofline). */
    struct lp_coll_cal {
        int ranks, nodes, nccl_version;
        bool amd_cpu;
    } coll_cal;
    /* speed of flash1 and triton relative to FlashAttention-2 where the
     * profile has no table of its own for them (struct lp_calib); the
     * constructors set the built-in value, lp_cost_model_choose the
     * calibration file's */
    double attn_old_ratio;
};

extern const struct lp_cost_ops lp_cost_table_ops;
extern const struct lp_cost_ops lp_cost_roofline_ops;

void lp_cost_model_table(struct lp_cost_model *cm, const struct lp_profile *p,
                         const struct lp_gpu *gpu);
void lp_cost_model_roofline(struct lp_cost_model *cm, const struct lp_gpu *gpu);

#ifdef __cplusplus
}
#endif

#endif
