/* Megatron-Core as NeMo 24.07 runs it (a held-out probe of NeMo's
 * performance summary), on the roofline backend: Transformer Engine's
 * fp8_autocast wraps the transformer block only and the output layer is
 * Megatron's own ColumnParallelLinear, so under fp8 the logits GEMM (and the
 * whole head) costs what it costs in bf16 while the layers' GEMMs get
 * faster; fp8 training keeps its gradients as bf16's are kept; and NeMo's
 * apex DistributedFusedAdam may hold the optimizer states in bf16
 * (optim_bf16). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fixtures.h"
#include "fixtures_dp.h"
#include "harness.h"
#include "llmplan/io.h"
#include "llmplan/sim.h"
#include "sim_internal.h"

/* A 256k-vocabulary model (Nemotron-4's tokenizer) on one stage, TP 2 */
static void nemo_run(struct lp_run *r, enum lp_prec prec)
{
    lp_fixture_gpt3_run(r);
    r->model.layers = 2;
    r->model.hidden = 4096;
    r->model.heads = 32;
    r->model.kv_heads = 32;
    r->model.ffn_hidden = 16384;
    r->model.vocab = 256000;
    r->model.seq_len = 4096;
    r->model.tied_embeddings = false;
    r->system.gpu.peak_flops[LP_FP8] = 2.0 * r->system.gpu.peak_flops[LP_BF16];
    r->system.gpu.sustained_frac = 1.0;
    r->par = lp_fixture_unit_degrees();
    r->par.tp = 2;
    r->par.sequence_parallel = true;
    r->train.global_batch = 4;
    r->train.precision = prec;
    r->train.fp8_scaling = LP_FP8_DELAYED;
}

static void shape_cost(const struct lp_run *r, struct lp_shape_cost *sc)
{
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r->system.gpu);
    lp_shape_cost_compute(&cm, r, sc);
}

/* TP 8 under userbuffers overlap on 108 SMs, NVLink slowed 10x so that
 * the ring exchanges outrun their GEMM chunks */
static void ub_run(struct lp_run *r)
{
    r->par.tp = 8;
    r->system.gpu.sms = 108;
    r->system.intra.bw_Bps /= 10.0;
    r->fw.tp_overlap = true;
}

/* By hand, the forward parts of a TP 8 linear pair under ub_run on T = h =
 * 4096 bf16 tokens: the column-parallel GEMM chunk g1 (N = ncol) beside
 * the ring's send p, the row-parallel GEMM chunk g2 (K = krow, on the SMs
 * the reduce-scatter leaves) beside its pipelined reduce-scatter chunk r2 */
struct ub_fwd {
    double g1, p, g2, r2;
};
static struct ub_fwd ub_fwd_parts(const struct lp_cost_model *cm, const struct lp_system *sys,
                                  double ncol, double krow)
{
    const double T = 4096.0, h = 4096.0, e = 2.0, t = 8.0;
    const double margin = 108.0 / (108.0 - 16.0);
    return (struct ub_fwd){
        .g1 = cm->ops->gemm_s(cm, LP_GEMM_FWD, LP_BF16, T / t, ncol, h),
        .p = lp_p2p_time(cm, sys, T * h * e / t, (int)t, 1, 0),
        .g2 = margin * cm->ops->gemm_s(cm, LP_GEMM_FWD, LP_BF16, T / 4.0, h, krow),
        .r2 = lp_coll_time(cm, sys, LP_COLL_REDUCESCATTER, T * h * e / 4.0, 8, 1, 0)};
}

#define CLOSE(a, b) ASSERT_TRUE(fabs((a) - (b)) <= 1e-12 * fabs(b) + 1e-18)

TEST(head_in_bf16_under_fp8)
{
    static struct lp_run r8, r16;
    static struct lp_shape_cost s8, s16;
    nemo_run(&r8, LP_FP8);
    nemo_run(&r16, LP_BF16);
    ASSERT_EQ_INT(lp_sim_validate(&r8), LP_REASON_NONE);
    shape_cost(&r8, &s8);
    shape_cost(&r16, &s16);
    /* the layers' GEMMs run in fp8: the MLP block is faster ... */
    ASSERT_TRUE(s8.ffn[LP_FFN_DENSE].fwd_s < 0.9 * s16.ffn[LP_FFN_DENSE].fwd_s);
    /* ... the head (final norm, logits GEMM 4096 x 128000 per rank, cross
     * entropy) not: no fp8 GEMM and no cast of its input or gradient */
    ASSERT_TRUE(s16.edge.head_fwd_s > 0.0);
    CLOSE(s8.edge.head_fwd_s, s16.edge.head_fwd_s);
    CLOSE(s8.edge.head_bwd_s, s16.edge.head_bwd_s);
    /* and so for MXFP8 and NVFP4 (no opt-in fp8_output_proj modelled) */
    nemo_run(&r8, LP_MXFP8);
    r8.system.gpu.peak_flops[LP_MXFP8] = r8.system.gpu.peak_flops[LP_FP8];
    shape_cost(&r8, &s8);
    CLOSE(s8.edge.head_fwd_s, s16.edge.head_fwd_s);
    CLOSE(s8.edge.head_bwd_s, s16.edge.head_bwd_s);
}

/* fp8 current scaling (Transformer Engine v2.7 Float8CurrentScalingQuantizer
 * ::quantize_impl): per quantised tensor an amax kernel and a scale kernel
 * launched inside the cast's own call (GPU time, no op of their own on the
 * host), and under sequence parallelism a TP all-reduce of the amax (4
 * bytes) the compute stream waits for: the column-parallel linear's input
 * forward, the row-parallel linear's output gradient backward, never hidden
 * by TP overlap. The GELU MLP block by hand against delayed scaling. */
TEST(fp8_current_scaling_by_hand)
{
    static struct lp_run rd, rc;
    static struct lp_shape_cost sd, sc;
    nemo_run(&rd, LP_FP8);
    rd.fw.host_op_s = 20e-6; /* host time added, not overlapped: counts launches */
    rd.fw.host_overlap = 1.0;
    rc = rd;
    rc.train.fp8_scaling = LP_FP8_CURRENT;
    shape_cost(&rd, &sd);
    shape_cost(&rc, &sc);
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &rd.system.gpu);
    const double T = 4096.0, h = 4096.0, ft = 16384.0 / 2.0, e = 2.0;
    const double ar = lp_coll_time(&cm, &rd.system, LP_COLL_ALLREDUCE, 4.0, 2, 1, 0);
    ASSERT_TRUE(ar > 0.0);
    const struct lp_layer_cost *fd = &sd.ffn[LP_FFN_DENSE], *fc = &sc.ffn[LP_FFN_DENSE];
    /* fc1's input (T x h) and fc2's (T x ft): an amax read and a scale each */
    const double mem = cm.ops->mem_s(&cm, LP_MEM_COPY, T * h * e) +
                       cm.ops->mem_s(&cm, LP_MEM_COPY, T * ft * e) +
                       2.0 * cm.ops->mem_s(&cm, LP_MEM_COPY, 12.0);
    CLOSE(fc->op_fwd[LP_OPC_MEM] - fd->op_fwd[LP_OPC_MEM], mem);
    /* no more host launches: the exposed host time is the same */
    CLOSE(fc->op_fwd[LP_OPC_OVERHEAD], fd->op_fwd[LP_OPC_OVERHEAD]);
    CLOSE(fc->op_bwd[LP_OPC_OVERHEAD], fd->op_bwd[LP_OPC_OVERHEAD]);
    /* one amax all-reduce each way: fc1's input, fc2's output gradient */
    CLOSE(fc->comm_fwd_s - fd->comm_fwd_s, ar);
    CLOSE(fc->comm_bwd_s - fd->comm_bwd_s, ar);
    CLOSE(fc->fwd_s - fd->fwd_s, mem);
    /* the attention block alike: QKV's input, the projection's gradient */
    CLOSE(sc.mix[LP_MIX_ATTN].comm_fwd_s - sd.mix[LP_MIX_ATTN].comm_fwd_s, ar);
    CLOSE(sc.mix[LP_MIX_ATTN].comm_bwd_s - sd.mix[LP_MIX_ATTN].comm_bwd_s, ar);
    /* under TP overlap the collectives hide behind the block, the amax
     * all-reduce does not */
    rc.fw.tp_overlap = true;
    shape_cost(&rc, &sc);
    ASSERT_TRUE(sc.ffn[LP_FFN_DENSE].comm_fwd_s >= ar * (1.0 - 1e-12));
    ASSERT_TRUE(sc.ffn[LP_FFN_DENSE].comm_bwd_s >= ar * (1.0 - 1e-12));
    /* without sequence parallelism nothing is gathered: no all-reduce */
    rd.par.sequence_parallel = rc.par.sequence_parallel = false;
    rc.fw.tp_overlap = false;
    shape_cost(&rd, &sd);
    shape_cost(&rc, &sc);
    CLOSE(sc.ffn[LP_FFN_DENSE].comm_fwd_s, sd.ffn[LP_FFN_DENSE].comm_fwd_s);
    CLOSE(sc.ffn[LP_FFN_DENSE].comm_bwd_s, sd.ffn[LP_FFN_DENSE].comm_bwd_s);
    /* nor under MXFP8 (block scales found inside the cast) */
    nemo_run(&rd, LP_MXFP8);
    rd.system.gpu.peak_flops[LP_MXFP8] = rd.system.gpu.peak_flops[LP_FP8];
    rc = rd;
    rc.train.fp8_scaling = LP_FP8_CURRENT;
    shape_cost(&rd, &sd);
    shape_cost(&rc, &sc);
    CLOSE(sc.ffn[LP_FFN_DENSE].comm_fwd_s, sd.ffn[LP_FFN_DENSE].comm_fwd_s);
    CLOSE(sc.ffn[LP_FFN_DENSE].fwd_s, sd.ffn[LP_FFN_DENSE].fwd_s);
}

/* MLA under fp8 current scaling and SP (sim_workload.c mla_projections):
 * Transformer Engine reduces the amax of every column-parallel linear's
 * input over the TP group (linear.py: input_quantizer's group when
 * sequence_parallel and parallel_mode "column"), so the query and KV up
 * projections add one all-reduce of 4 bytes each forward; the down
 * projections are "duplicated" (no group). The backward's is the output
 * projection's gradient, as for the dense attention. Until stop 31 MLA's
 * forward had none. */
TEST(fp8_current_scaling_mla_amax)
{
    static struct lp_run rd, rc;
    static struct lp_shape_cost sd, sc;
    nemo_run(&rd, LP_FP8);
    rd.model.mla = (struct lp_mla){.q_lora_rank = 512,
                                   .kv_lora_rank = 512,
                                   .qk_nope_head_dim = 128,
                                   .qk_rope_head_dim = 64,
                                   .v_head_dim = 128};
    ASSERT_EQ_INT(lp_sim_validate(&rd), LP_REASON_NONE);
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &rd.system.gpu);
    const double ar = lp_coll_time(&cm, &rd.system, LP_COLL_ALLREDUCE, 4.0, 2, 1, 0);
    ASSERT_TRUE(ar > 0.0);
    for (int qlat = 0; qlat < 2; qlat++) {
        rd.model.mla.q_lora_rank = qlat ? 512 : 0; /* linear_q_up_proj or linear_q_proj */
        rc = rd;
        rc.train.fp8_scaling = LP_FP8_CURRENT;
        shape_cost(&rd, &sd);
        shape_cost(&rc, &sc);
        const struct lp_layer_cost *d = &sd.mix[LP_MIX_ATTN], *c = &sc.mix[LP_MIX_ATTN];
        CLOSE(c->comm_fwd_s - d->comm_fwd_s, 2.0 * ar);
        CLOSE(c->comm_bwd_s - d->comm_bwd_s, ar);
    }
}

/* fp8 training keeps bf16 parameters, so its gradient buffer follows
 * grad_fp32 as bf16's does (Megatron-Core's main_grad in fp32 with
 * grad_reduce_in_fp32; NeMo 24.07's DistributedFusedAdam reduces in its fp32
 * dtype unless grad_sync_dtype says bf16); fp16 stays 2 bytes (Megatron-LM
 * forces fp32 accumulation for bf16 only) */
TEST(fp8_gradients_follow_grad_fp32)
{
    static struct lp_run r;
    struct lp_bytes_per_param b;
    const enum lp_prec precs[] = {LP_BF16, LP_FP8, LP_MXFP8, LP_NVFP4};
    for (int i = 0; i < 4; i++) {
        nemo_run(&r, precs[i]);
        r.fw.grad_fp32 = true;
        lp_sim_param_bytes(&r, &b);
        ASSERT_EQ_INT((int)b.g, 4);
        ASSERT_EQ_INT((int)b.g_comm, 4);
        r.fw.grad_fp32 = false;
        lp_sim_param_bytes(&r, &b);
        ASSERT_EQ_INT((int)b.g, 2);
    }
    nemo_run(&r, LP_FP16);
    r.fw.grad_fp32 = true;
    lp_sim_param_bytes(&r, &b);
    ASSERT_EQ_INT((int)b.g, 2);
}

/* optim_bf16 (apex DistributedFusedAdam dtype=bf16, nemotron_340b.yaml):
 * master parameters and both moments in bf16, 6 bytes per parameter
 * sharded over DP; the step moves 3 x 2 + g in, 3 x 2 + 2 out and g for
 * the norm: 18 bytes with bf16 gradients, against mixed precision's 34 */
TEST(optimizer_states_in_bf16)
{
    static struct lp_run r;
    nemo_run(&r, LP_FP8);
    r.par.dp = 2;
    r.par.zero = 1;
    r.train.global_batch = 8;
    r.fw.grad_fp32 = false;
    struct lp_memory m0, m1;
    lp_sim_memory(&r, &m0);
    const double P = m0.weights_bytes / 2.0;
    CLOSE(m0.optimizer_bytes, 12.0 * P / 2.0);
    CLOSE(m0.grads_bytes, 2.0 * P);
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r.system.gpu);
    struct lp_sim *sim = NULL;
    ASSERT_EQ_INT(lp_sim_create(&cm, &sim, NULL), 0);
    static struct lp_result a, b;
    lp_sim_run(sim, &r, &a);
    r.fw.optim_bf16 = true;
    lp_sim_memory(&r, &m1);
    CLOSE(m1.optimizer_bytes, 6.0 * P / 2.0);
    CLOSE(m1.weights_bytes, m0.weights_bytes);
    CLOSE(m1.grads_bytes, m0.grads_bytes);
    lp_sim_run(sim, &r, &b);
    lp_sim_destroy(&sim);
    ASSERT_TRUE(a.feasible && b.feasible);
    /* tens of ms of traffic against one 5 us launch */
    ASSERT_TRUE(a.breakdown.optimizer_s > 1e-3);
    ASSERT_NEAR(b.breakdown.optimizer_s / a.breakdown.optimizer_s, 18.0 / 34.0, 1e-3);
}

/* Transformer Engine's userbuffers overlap (tp_overlap), GEMM by GEMM
 * (sim_workload.c ub_exposed): a TP 8 GELU MLP block in bf16 by hand, with
 * NVLink slowed 10x so the ring exchanges outrun their GEMM chunks. The old
 * rule hid both collectives behind the whole block (nothing exposed here);
 * now, forward: fc1's ring all-gather exposes 7 (p - g) past its chunks,
 * fc2's pipelined reduce-scatter (4 chunks, the GEMM on 108 - 16 SMs) its
 * last chunk and any lag; backward: fc2's data-gradient ring, fc1's bulk
 * all-gather beside its data gradient and bulk reduce-scatter beside its
 * weight gradient. With "ring_exchange" for the row-parallel forward (the
 * Megatron-Bridge fp8 recipes) fc2's reduce-scatter is a ring of 8 chunks
 * plus the kernel that sums the partial results. */
TEST(tp_overlap_per_gemm_by_hand)
{
    static struct lp_run r;
    static struct lp_shape_cost s;
    nemo_run(&r, LP_BF16);
    ub_run(&r);
    shape_cost(&r, &s);
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r.system.gpu);
    const struct lp_system *sys = &r.system;
    const double T = 4096.0, h = 4096.0, ft = 16384.0 / 8.0, e = 2.0, t = 8.0;
#define G(l, m, n, k) cm.ops->gemm_s(&cm, l, LP_BF16, m, n, k)
    const struct ub_fwd u = ub_fwd_parts(&cm, sys, ft, ft);
    const double g1 = u.g1, p = u.p, g2 = u.g2, r2 = u.r2;
    ASSERT_TRUE(p > g1 && r2 > 0.0);
    const struct lp_layer_cost *f = &s.ffn[LP_FFN_DENSE];
    CLOSE(f->comm_fwd_s, 7.0 * (p - g1) + r2 + 3.0 * fmax(0.0, r2 - g2));
    const double gd = G(LP_GEMM_DGRAD, T / t, ft, h);
    const double dg = G(LP_GEMM_DGRAD, T, h, ft), wg = G(LP_GEMM_WGRAD, h, ft, T);
    const double ag = lp_coll_time(&cm, sys, LP_COLL_ALLGATHER, T * h * e, 8, 1, 0);
    const double rs = lp_coll_time(&cm, sys, LP_COLL_REDUCESCATTER, T * h * e, 8, 1, 0);
    CLOSE(f->comm_bwd_s, 7.0 * fmax(0.0, p - gd) + fmax(0.0, ag - dg) + fmax(0.0, rs - wg));
    /* the GEMMs: fc1 in 8 chunks, fc2 in 4 on the SMs left */
    const double fwd_gemm = f->op_fwd[LP_OPC_GEMM];
    CLOSE(fwd_gemm, 8.0 * g1 + 4.0 * g2);
    /* ring exchange for fc2's reduce-scatter */
    const double mem0 = f->op_fwd[LP_OPC_MEM];
    r.fw.tp_overlap_rs = LP_UB_RS_RING;
    shape_cost(&r, &s);
    const double g2r = G(LP_GEMM_FWD, T / t, h, ft);
    CLOSE(f->comm_fwd_s, 7.0 * (p - g1) + 7.0 * fmax(0.0, p - g2r));
    CLOSE(f->op_fwd[LP_OPC_GEMM], 8.0 * g1 + 8.0 * g2r);
    CLOSE(f->op_fwd[LP_OPC_MEM] - mem0, cm.ops->mem_s(&cm, LP_MEM_RESIDUAL, 9.0 * T * h * e / t));
#undef G
    /* without TP overlap Megatron's own rule (tp_bwd_exposed) as before:
     * both collectives exposed forward */
    r.fw.tp_overlap = false;
    shape_cost(&r, &s);
    CLOSE(f->comm_fwd_s, ag + lp_coll_time(&cm, sys, LP_COLL_REDUCESCATTER, T * h * e, 8, 1, 0));
}

/* fp8 TP all-gathers without userbuffers (sim_workload.c tp_ag_elem):
 * Transformer Engine d0067d0d gathers the column-parallel linear's fp8
 * input (linear.py / layernorm_mlp.py -> distributed.py
 * gather_along_first_dim -> _all_gather_fp8), the backward's re-gather of
 * the saved input and the row-parallel linear's output gradient
 * (base.py grad_output_preprocess) in fp8; the reduce-scatters carry bf16.
 * The GELU MLP block of TP 2 under fp8 delayed scaling by hand: forward an
 * fp8 all-gather and a bf16 reduce-scatter; backward (NVLink fast enough
 * that fc1's backward GEMMs hide the async re-gather and reduce-scatter)
 * the synchronous fp8 gather of fc2's output gradient. */
TEST(fp8_gathers_without_userbuffers)
{
    static struct lp_run r;
    static struct lp_shape_cost s;
    nemo_run(&r, LP_FP8);
    r.fw.tp_overlap = false;
    shape_cost(&r, &s);
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r.system.gpu);
    const double T = 4096.0, h = 4096.0;
    const double ag8 = lp_coll_time(&cm, &r.system, LP_COLL_ALLGATHER, T * h * 1.0, 2, 1, 0);
    const double ag16 = lp_coll_time(&cm, &r.system, LP_COLL_ALLGATHER, T * h * 2.0, 2, 1, 0);
    const double rs16 = lp_coll_time(&cm, &r.system, LP_COLL_REDUCESCATTER, T * h * 2.0, 2, 1, 0);
    ASSERT_TRUE(ag8 < 0.75 * ag16);
    const struct lp_layer_cost *f = &s.ffn[LP_FFN_DENSE];
    CLOSE(f->comm_fwd_s, ag8 + rs16);
    CLOSE(f->comm_bwd_s, ag8);
    CLOSE(s.mix[LP_MIX_ATTN].comm_fwd_s, ag8 + rs16);
    /* bf16: the same block gathers 2 bytes */
    nemo_run(&r, LP_BF16);
    r.fw.tp_overlap = false;
    shape_cost(&r, &s);
    CLOSE(f->comm_fwd_s, ag16 + rs16);
    CLOSE(f->comm_bwd_s, ag16);
}

/* TP overlap replaces only the collectives of the linears that run in
 * userbuffers: MLA's attention block (Megatron-Core MLASelfAttention) has
 * one such linear, the row-parallel projection (linear_tp); its up
 * projections gather what they read, the normed latents (q 512 + kv 512
 * wide), and k_pos_emb (64) is gathered on its own, without overlap
 * (mla_tp_comm, stop 33: the layer's T x h input before). So the forward
 * keeps those two all-gathers and adds what the projection's pipelined
 * reduce-scatter leaves exposed; the backward keeps the latents' and
 * k_pos_emb's reduce-scatter and adds what the projection's data-gradient
 * ring leaves. (The whole of tp_comm(w) was replaced before stop 32: the
 * all-gather was free.) */
TEST(tp_overlap_mla_keeps_unoverlapped_gather)
{
    static struct lp_run r;
    static struct lp_shape_cost s;
    nemo_run(&r, LP_BF16);
    r.model.mla = (struct lp_mla){.q_lora_rank = 512,
                                  .kv_lora_rank = 512,
                                  .qk_nope_head_dim = 128,
                                  .qk_rope_head_dim = 64,
                                  .v_head_dim = 128};
    r.system.gpu.sms = 108;
    r.fw.tp_overlap = true;
    ASSERT_EQ_INT(lp_sim_validate(&r), LP_REASON_NONE);
    shape_cost(&r, &s);
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r.system.gpu);
    const struct lp_system *sys = &r.system;
    const double T = 4096.0, h = 4096.0, e = 2.0, t = 2.0, K = 32.0 / 2.0 * 128.0;
    const double margin = 108.0 / (108.0 - 16.0);
#define G(l, m, n, k) cm.ops->gemm_s(&cm, l, LP_BF16, m, n, k)
    const double ag = lp_coll_time(&cm, sys, LP_COLL_ALLGATHER, T * 1024.0 * e, 2, 1, 0) +
                      lp_coll_time(&cm, sys, LP_COLL_ALLGATHER, T * 64.0 * e, 2, 1, 0);
    const double rs = lp_coll_time(&cm, sys, LP_COLL_REDUCESCATTER, T * 1088.0 * e, 2, 1, 0);
    const double r4 = lp_coll_time(&cm, sys, LP_COLL_REDUCESCATTER, T * h * e / 4.0, 2, 1, 0);
    const double g4 = margin * G(LP_GEMM_FWD, T / 4.0, h, K);
    const double p = lp_p2p_time(&cm, sys, T * h * e / t, (int)t, 1, 0);
    const double gd = G(LP_GEMM_DGRAD, T / t, K, h);
#undef G
    const struct lp_layer_cost *a = &s.mix[LP_MIX_ATTN];
    ASSERT_TRUE(ag > 0.0);
    CLOSE(a->comm_fwd_s, ag + r4 + 3.0 * fmax(0.0, r4 - g4));
    CLOSE(a->comm_bwd_s, rs + (t - 1.0) * fmax(0.0, p - gd));
}

/* A Megatron-Core Mamba-2 layer: in_proj and out_proj are Transformer
 * Engine linears with the fc1 / fc2 userbuffers (Megatron-LM d98e8a6
 * hybrid_layer_specs.py, mamba_mixer.py), so under tp_overlap each GEMM
 * hides its own collective as the MLP's do: TP 8 in bf16 with NVLink slowed
 * 10x, in_proj's ring all-gather (8 chunks) and out_proj's pipelined
 * reduce-scatter (4 chunks) forward; backward out_proj's data-gradient ring
 * and in_proj's bulk all-gather / reduce-scatter. Without tp_overlap the
 * TE column-parallel backward's async re-gather and reduce-scatter
 * (tp_bwd_exposed) as for the MLP. */
TEST(mamba_mixer_tp_overlap_by_hand)
{
    static struct lp_run r;
    static struct lp_shape_cost s;
    nemo_run(&r, LP_BF16);
    snprintf(r.model.layer_pattern, sizeof r.model.layer_pattern, "M-");
    r.model.mamba = (struct lp_mamba){
        .version = 2, .d_state = 128, .d_conv = 4, .expand = 2, .head_dim = 64, .n_groups = 8};
    ub_run(&r);
    shape_cost(&r, &s);
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r.system.gpu);
    const struct lp_system *sys = &r.system;
    const double T = 4096.0, h = 4096.0, e = 2.0, t = 8.0;
    /* per rank: d_inner 8192 / 8, 128 heads / 8, 8 groups / 8 */
    const double di = 8192.0 / t, nin = 2.0 * di + 2.0 * 1.0 * 128.0 + 128.0 / t;
#define G(l, m, n, k) cm.ops->gemm_s(&cm, l, LP_BF16, m, n, k)
    const struct ub_fwd u = ub_fwd_parts(&cm, sys, nin, di);
    const double g1 = u.g1, p = u.p, g2 = u.g2, r2 = u.r2;
    const struct lp_layer_cost *c = &s.mix[LP_MIX_MAMBA];
    CLOSE(c->comm_fwd_s, 7.0 * fmax(0.0, p - g1) + r2 + 3.0 * fmax(0.0, r2 - g2));
    const double gd = G(LP_GEMM_DGRAD, T / t, di, h);
    const double dg = G(LP_GEMM_DGRAD, T, h, nin), wg = G(LP_GEMM_WGRAD, h, nin, T);
    const double ag = lp_coll_time(&cm, sys, LP_COLL_ALLGATHER, T * h * e, 8, 1, 0);
    const double rs = lp_coll_time(&cm, sys, LP_COLL_REDUCESCATTER, T * h * e, 8, 1, 0);
    CLOSE(c->comm_bwd_s, 7.0 * fmax(0.0, p - gd) + fmax(0.0, ag - dg) + fmax(0.0, rs - wg));
    ASSERT_TRUE(c->comm_fwd_s < ag + rs);
    /* in_proj in 8 chunks, out_proj in 4 on the SMs the reduce-scatter
     * leaves: the block's forward GEMMs */
    CLOSE(c->op_fwd[LP_OPC_GEMM], 8.0 * g1 + 4.0 * g2);
    r.fw.tp_overlap = false;
    shape_cost(&r, &s);
    CLOSE(c->comm_fwd_s, ag + rs);
    CLOSE(c->comm_bwd_s, ag + fmax(0.0, ag - dg) + fmax(0.0, rs - wg));
#undef G
}

/* Every model preset's blocks under userbuffers overlap (TP 2 with SP,
 * fp8 current scaling, tp_overlap_rs both ways, Megatron): no pass pushes
 * more overlaps than sim_workload.c's UB_MAX holds (it silently dropped
 * them past 4). */
struct ub_ctx {
    int models, bad;
    char first[LP_NAME_LEN];
};
static int ub_each_model(const char *name, const char *path, void *arg)
{
    (void)path;
    struct ub_ctx *u = arg;
    static struct lp_run r;
    static struct lp_shape_cost s;
    nemo_run(&r, LP_FP8);
    if (lp_load_model(name, &r.model, NULL) != 0) return 0; /* test_loaders' concern */
    r.train.fp8_scaling = LP_FP8_CURRENT;
    r.fw.tp_overlap = true;
    for (int rs = 0; rs < LP_UB_RS_COUNT; rs++) {
        r.fw.tp_overlap_rs = (enum lp_ub_rs)rs;
        shape_cost(&r, &s);
        int dropped = 0;
        for (int k = 0; k < LP_MIX_COUNT; k++)
            dropped += s.mix[k].ub_dropped;
        for (int k = 0; k < LP_FFN_COUNT; k++)
            dropped += s.ffn[k].ub_dropped;
        if (dropped && !u->bad++) snprintf(u->first, sizeof u->first, "%s", name);
    }
    u->models++;
    return 0;
}
TEST(userbuffers_capacity_every_preset)
{
    struct ub_ctx u = {0};
    ASSERT_OK(lp_list_presets(LP_PRESET_MODEL, ub_each_model, &u, NULL));
    ASSERT_TRUE(u.models >= 40);
    if (u.bad) fprintf(stderr, "  first model with dropped overlaps: %s\n", u.first);
    ASSERT_EQ_INT(u.bad, 0);
}

/* Megatron-Core's gradient buckets (sim_dp.c dp_buckets;
 * distributed_data_parallel.py at Megatron-LM d7288711): bucket_size
 * max(40M, 1M x dp) parameters, dense and expert parameters in buffers of
 * their own. On GPT-3 175B at TP 8 / PP 8 the first stage holds 12 layers
 * of 12 h^2 / 8 = 226.5M parameters (h = 12288; 2.718e9 with their biases
 * and norms), the embedding, 51200 x 12288 / 8 = 78.6M, and the learned
 * positions, 2048 x 12288 = 25.2M (replicated): 2.822e9, 71 buckets of 40M
 * at DP 16 (16 x 1M < 40M), 45 of 64M at DP 64; the old rule, 40 MB of
 * fp32 gradient, made 283. */
static int mcore_dp(const struct lp_run *r, double bwd_s, double fwd_s, struct lp_params *pr,
                    struct lp_dp_cost *dc)
{
    if (lp_fixture_dp_costs(r, pr, dc) != 0) return -1; /* pr */
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r->system.gpu);
    struct lp_sim *sim = NULL;
    if (lp_sim_create(&cm, &sim, NULL) != 0) return -1;
    const double bw[LP_DP_STAGES] = {bwd_s, bwd_s, bwd_s, bwd_s};
    lp_dp_costs(sim, r, pr, bw, fwd_s, dc);
    lp_sim_destroy(&sim);
    return 0;
}

TEST(megatron_core_buckets_by_hand)
{
    struct lp_run r;
    lp_fixture_gpt3_run(&r);
    ASSERT_TRUE(r.fw.mcore_buckets);
    struct lp_params pr;
    struct lp_dp_cost dc;
    /* windows far longer than any reduction: only the last bucket shows */
    ASSERT_EQ_INT(mcore_dp(&r, 100.0, 100.0, &pr, &dc), 0);
    ASSERT_TRUE(fabs(pr.train0 - 2.822e9) < 2e6);
    ASSERT_EQ_INT(dc.buckets[0], 71);
    ASSERT_NEAR(dc.red_exposed_s[0], dc.red_s[0] / 71.0, 1e-12);
    ASSERT_NEAR(dc.gather_exposed_s[0], dc.gather_s[0] / 71.0, 1e-12);
    /* DP 64: buckets of 64M parameters */
    r.par.dp = 64;
    ASSERT_EQ_INT(mcore_dp(&r, 100.0, 100.0, &pr, &dc), 0);
    ASSERT_EQ_INT(dc.buckets[0], 45);
    /* an explicit bucket_MB: buckets of that many bytes (bf16 gradients in
     * fp32 main_grad: 4 bytes) */
    r.par.dp = 16;
    r.fw.mcore_buckets = false;
    r.fw.bucket_bytes = 40e6;
    ASSERT_EQ_INT(mcore_dp(&r, 100.0, 100.0, &pr, &dc), 0);
    ASSERT_EQ_INT(dc.buckets[0], 283);
}

/* Experts fill a buffer of their own: 50M dense and 50M expert parameters
 * are 2 + 2 buckets of 40M, not ceil(100M / 40M) = 3 */
TEST(megatron_core_expert_buffer_buckets)
{
    struct lp_run r;
    lp_fixture_gpt3_run(&r);
    r.par.pp = 1;
    r.model.layers = 12;
    struct lp_params pr;
    struct lp_dp_cost dc;
    ASSERT_EQ_INT(lp_fixture_dp_costs(&r, &pr, &dc), 0);
    pr.train0 = pr.train_last = 100e6;
    pr.expert0 = pr.expert_last = 50e6;
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r.system.gpu);
    struct lp_sim *sim = NULL;
    ASSERT_EQ_INT(lp_sim_create(&cm, &sim, NULL), 0);
    const double bw[LP_DP_STAGES] = {100.0, 100.0, 100.0, 100.0};
    lp_dp_costs(sim, &r, &pr, bw, 100.0, &dc);
    lp_sim_destroy(&sim);
    ASSERT_EQ_INT(dc.buckets[0], 4);
    ASSERT_EQ_INT(dc.buckets[1], 4);
}

/* Megatron-Core buckets the first pipeline stage only
 * (distributed_data_parallel.py __init__, Megatron-LM d98e8a64: `if
 * disable_bucketing or pp_rank > 0: self.bucket_size = None`; sim_dp.c
 * dp_buckets). GPT-3 175B at TP 8 / PP 8 / DP 16: the 96 layers split 12
 * a stage, so stage 1 holds 12 layers, 2.822e9 - 78.6M (embedding) - 25.2M
 * (positions) = 2.718e9 parameters, as every middle stage: stage 1 is the
 * one accounted (least slack), the only one. With windows far longer than
 * any collective, stage 0 still exposes 1/71 of its reduction and gather;
 * stage 1 and the last stage expose all of theirs (one bucket: it starts
 * when the whole buffer is ready, after the stage's last backward). At VP 2
 * each chunk is a DDP of its own, one bucket each: half shows. */
TEST(megatron_core_single_bucket_stages_by_hand)
{
    struct lp_run r;
    lp_fixture_gpt3_run(&r);
    struct lp_params pr;
    struct lp_dp_cost dc;
    ASSERT_EQ_INT(mcore_dp(&r, 100.0, 100.0, &pr, &dc), 0);
    ASSERT_EQ_INT(pr.n_mid, 1);
    ASSERT_EQ_INT(pr.mid[0], 1);
    ASSERT_EQ_INT(lp_dp_mid_stages(&r, &pr), 1);
    ASSERT_TRUE(fabs(pr.train_mid[0] - 2.718e9) < 2e6);
    ASSERT_EQ_INT(dc.buckets[0], 71);
    ASSERT_NEAR(dc.red_exposed_s[0], dc.red_s[0] / 71.0, 1e-12);
    for (int k = 1; k <= 2; k++) {
        ASSERT_EQ_INT(dc.buckets[k], 1);
        ASSERT_TRUE(dc.red_s[k] > 0 && dc.gather_s[k] > 0);
        ASSERT_NEAR(dc.red_exposed_s[k], dc.red_s[k], 1e-15);
        ASSERT_NEAR(dc.gather_exposed_s[k], dc.gather_s[k], 1e-15);
        ASSERT_NEAR(dc.exposed_s[k], dc.red_s[k] + dc.gather_s[k], 1e-15);
    }
    /* stage 1 reduces 2.718e9 of the 2.822e9 parameters stage 0 does, in
     * one collective, not 1/71 of them */
    ASSERT_TRUE(dc.red_s[2] < dc.red_s[0] && dc.red_s[2] > 0.9 * dc.red_s[0]);
    r.par.vp = 2;
    ASSERT_EQ_INT(mcore_dp(&r, 100.0, 100.0, &pr, &dc), 0);
    ASSERT_EQ_INT(dc.buckets[2], 2);
    ASSERT_NEAR(dc.red_exposed_s[2], dc.red_s[2] / 2.0, 1e-15);
    /* other frameworks: every stage bucketed, the middle ones not accounted */
    r.par.vp = 1;
    r.fw.mcore_buckets = false;
    ASSERT_EQ_INT(mcore_dp(&r, 100.0, 100.0, &pr, &dc), 0);
    ASSERT_EQ_INT(lp_dp_mid_stages(&r, &pr), 0);
    ASSERT_TRUE(dc.buckets[1] > 1);
    /* PP 2: no middle stage */
    r.fw.mcore_buckets = true;
    r.par.pp = 2;
    r.model.layers = 24;
    ASSERT_EQ_INT(mcore_dp(&r, 100.0, 100.0, &pr, &dc), 0);
    ASSERT_EQ_INT(lp_dp_mid_stages(&r, &pr), 0);
}

/* A middle stage's last backward ends the backward ripple of the last
 * micro-batch before stage 0's (sim_dp.c lp_dp_mid_ripple): by hand, and
 * against the exact solver's stage ends. 1F1B, p 4, m 8, f 1, b 2, the
 * embedding's backward 0.5, p2p 0.25: stage 1 ends 0.5 + 2 + 0.25 = 2.75
 * before stage 0, stage 2 2.75 + 2.25 = 5.0 before. Interleaved, v 2 with
 * chunk backwards of 1 and no embedding: the ripple runs chunk 0, 1 + 0.25 =
 * 1.25 a stage. */
TEST(megatron_core_mid_stage_ripple_by_hand)
{
    struct lp_cost_model cm;
    struct lp_run r;
    lp_fixture_gpt3_run(&r);
    lp_cost_model_roofline(&cm, &r.system.gpu);
    struct lp_sim *sim = NULL;
    ASSERT_EQ_INT(lp_sim_create(&cm, &sim, NULL), 0);
    static struct lp_sched_out o;
    double f[8], b[8], w[8] = {0};
    for (int i = 0; i < 8; i++)
        f[i] = 1.0, b[i] = 2.0;
    struct lp_sched_in in = {.p = 4,
                             .m = 8,
                             .v = 1,
                             .kind = LP_SCHED_1F1B,
                             .f = f,
                             .b = b,
                             .w = w,
                             .b_first_extra = 0.5,
                             .p2p_s = 0.25};
    ASSERT_NEAR(lp_dp_mid_ripple(&in, 1), 2.75, 1e-15);
    ASSERT_NEAR(lp_dp_mid_ripple(&in, 2), 5.0, 1e-15);
    ASSERT_OK(lp_sched_exact(sim, &in, &o, NULL, 0, NULL));
    ASSERT_NEAR(o.stage_end_s[0] - o.stage_end_s[1], 2.75, 1e-12);
    ASSERT_NEAR(o.stage_end_s[0] - o.stage_end_s[2], 5.0, 1e-12);
    in.kind = LP_SCHED_INTERLEAVED;
    in.v = 2;
    for (int i = 0; i < 8; i++)
        f[i] = 0.5, b[i] = 1.0;
    in.b_first_extra = 0.0;
    ASSERT_NEAR(lp_dp_mid_ripple(&in, 1), 1.25, 1e-15);
    ASSERT_OK(lp_sched_exact(sim, &in, &o, NULL, 0, NULL));
    ASSERT_NEAR(o.stage_end_s[0] - o.stage_end_s[1], 1.25, 1e-12);
    ASSERT_NEAR(o.stage_end_s[0] - o.stage_end_s[2], 2.5, 1e-12);
    /* stage 0 slower than stage 1 by the embedding's 0.5 a chunk: it does
     * not wait at its last backward, stage 1 ends earlier than the ripple
     * says (1.75 by hand, 2.25 solved): the ripple bounds the middle stage's
     * end from above */
    in.b_first_extra = 0.5;
    ASSERT_NEAR(lp_dp_mid_ripple(&in, 1), 1.75, 1e-15);
    ASSERT_OK(lp_sched_exact(sim, &in, &o, NULL, 0, NULL));
    ASSERT_NEAR(o.stage_end_s[0] - o.stage_end_s[1], 2.25, 1e-12);
    lp_sim_destroy(&sim);
}

TH_MAIN(TH_CASE(megatron_core_buckets_by_hand), TH_CASE(megatron_core_expert_buffer_buckets),
        TH_CASE(megatron_core_single_bucket_stages_by_hand),
        TH_CASE(megatron_core_mid_stage_ripple_by_hand), TH_CASE(head_in_bf16_under_fp8),
        TH_CASE(tp_overlap_per_gemm_by_hand), TH_CASE(tp_overlap_mla_keeps_unoverlapped_gather),
        TH_CASE(fp8_gathers_without_userbuffers), TH_CASE(mamba_mixer_tp_overlap_by_hand),
        TH_CASE(fp8_current_scaling_by_hand), TH_CASE(fp8_gradients_follow_grad_fp32),
        TH_CASE(optimizer_states_in_bf16), TH_CASE(userbuffers_capacity_every_preset),
        TH_CASE(fp8_current_scaling_mla_amax))
