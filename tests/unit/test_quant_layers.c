/* Layers and modules a quantised run keeps out of its precision, as
 * Megatron-Core runs them: the first / last layers in bf16
 * (training.bf16_first_layers / bf16_last_layers: first_last_layers_bf16)
 * and a per-module quantisation recipe (training.module_precision:
 * quant_recipe's TEQuantizationParams), on the roofline backend, whose
 * GEMMs take flops / peak, so the bf16 ones take twice the fp8 ones. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "llmplan/io.h"
#include "llmplan/rules.h"
#include "llmplan/sim.h"
#include "sim_internal.h"

/* L = 8 GELU layers of h = 4096, f = 16384 on one stage, TP 1, 4096 tokens
 * per micro-batch; fp8 at twice bf16's peak, sustained in full */
#define L 8
#define H 4096.0
#define F 16384.0
#define T 4096.0

static void qrun(struct lp_run *r, enum lp_prec prec)
{
    lp_fixture_gpt3_run(r);
    r->model.layers = L;
    r->model.hidden = (int)H;
    r->model.heads = 32;
    r->model.kv_heads = 32;
    r->model.ffn_hidden = (int)F;
    r->model.seq_len = (int)T;
    r->system.gpu.peak_flops[LP_FP8] = 2.0 * r->system.gpu.peak_flops[LP_BF16];
    r->system.gpu.sustained_frac = 1.0;
    r->par = lp_fixture_unit_degrees();
    r->train.global_batch = 2;
    r->train.precision = prec;
    r->train.fp8_scaling = LP_FP8_CURRENT;
}

static void run_sim(const struct lp_run *r, struct lp_result *res)
{
    struct lp_sim *sim = lp_fixture_roofline_sim(r);
    if (!sim) {
        memset(res, 0, sizeof(*res));
        return;
    }
    lp_sim_run(sim, r, res);
    lp_sim_destroy(&sim);
}

static void shape_cost(const struct lp_run *r, struct lp_shape_cost *sc)
{
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r->system.gpu);
    lp_shape_cost_compute(&cm, r, sc);
}

/* By hand: one layer's forward GEMMs are QKV (3h^2), the projection (h^2),
 * fc1 and fc2 (2hf), 2 T FLOPs per weight, at 0.8 of the bf16 peak (312
 * TFLOP/s) or of twice it in fp8, plus 5 us a GEMM (the roofline backend). With 1 of the 8 layers
 * first and 2 last in bf16, the stage's GEMM time is 5 fp8 layers' + 3 bf16 layers': (5 / 2 + 3) /
 * 8 of the all-bf16 run's. The blocks' other kernels (norms, attention, the fp8 casts) mix the same
 * way: kind_attn_s and kind_mlp_s (all of a kind's kernels over the stage) are the weighted sums of
 * the two runs'. */
TEST(bf16_first_last_layers_mix)
{
    static struct lp_result a, b, c;
    struct lp_run r;
    qrun(&r, LP_FP8);
    run_sim(&r, &a);
    qrun(&r, LP_BF16);
    run_sim(&r, &b);
    qrun(&r, LP_FP8);
    r.train.bf16_first_layers = 1;
    r.train.bf16_last_layers = 2;
    run_sim(&r, &c);
    ASSERT_TRUE(a.feasible && b.feasible && c.feasible);
    /* (the roofline backend: 5 us launch + FLOPs / (peak x 0.8) a GEMM) */
    const double g_bf16 = 4.0 * 5e-6 + 2.0 * T * (4.0 * H * H + 2.0 * H * F) / (312e12 * 0.8);
    const double g_fp8 = 4.0 * 5e-6 + 2.0 * T * (4.0 * H * H + 2.0 * H * F) / (624e12 * 0.8);
    ASSERT_NEAR(b.layer_fwd_s[LP_OPC_GEMM], g_bf16, 1e-6);
    ASSERT_NEAR(a.layer_fwd_s[LP_OPC_GEMM], g_fp8, 1e-6);
    /* the breakdown's layer is the model's first: bf16 here */
    ASSERT_NEAR(c.layer_fwd_s[LP_OPC_GEMM], g_bf16, 1e-6);
    ASSERT_NEAR(c.kind_attn_s, (5.0 * a.kind_attn_s + 3.0 * b.kind_attn_s) / 8.0, 1e-9);
    ASSERT_NEAR(c.kind_mlp_s, (5.0 * a.kind_mlp_s + 3.0 * b.kind_mlp_s) / 8.0, 1e-9);
    ASSERT_TRUE(c.kind_mlp_s > a.kind_mlp_s * 1.1); /* the mix moved */
    /* the stage's forward GEMMs by hand: 5 fp8 + 3 bf16 layers; the
     * forward's other kernels mix as kind_* do */
    const double other = (5.0 * (a.stage_fwd_s - L * 2.0 * a.layer_fwd_s[LP_OPC_GEMM]) +
                          3.0 * (b.stage_fwd_s - L * 2.0 * b.layer_fwd_s[LP_OPC_GEMM])) /
                         8.0;
    /* (2 micro-batches per iteration: the stage sums are over both) */
    ASSERT_NEAR(c.stage_fwd_s, other + 2.0 * (5.0 * g_fp8 + 3.0 * g_bf16), 1e-6);
    /* a bf16 run ignores the counts */
    static struct lp_result d;
    qrun(&r, LP_BF16);
    r.train.bf16_first_layers = 1;
    r.train.bf16_last_layers = 2;
    run_sim(&r, &d);
    ASSERT_NEAR(d.iteration_time_s, b.iteration_time_s, 1e-12);
    /* every layer in bf16: the bf16 run's layers, fp8 only where the
     * run's own edges differ (none: the head runs in bf16 under fp8) */
    qrun(&r, LP_FP8);
    r.train.bf16_first_layers = 4;
    r.train.bf16_last_layers = 4;
    run_sim(&r, &d);
    ASSERT_NEAR(d.kind_attn_s, b.kind_attn_s, 1e-9);
    ASSERT_NEAR(d.kind_mlp_s, b.kind_mlp_s, 1e-9);
}

/* The zones follow the model's layer numbers across pipeline stages: at
 * PP 2 (4 layers each) under 1F1B the first stage's last backward ends the
 * iteration, so the breakdown is stage 0's. 2 first layers in bf16 put
 * half of its layers in bf16 (its kinds mix 2:2); 2 last layers leave it
 * the all-fp8 run's while stage 1 slows (the iteration with it). */
TEST(bf16_layers_per_stage)
{
    static struct lp_result a, b, c, d;
    struct lp_run r;
    for (int i = 0; i < 4; i++) {
        qrun(&r, i == 1 ? LP_BF16 : LP_FP8);
        r.par.pp = 2;
        r.train.global_batch = 4;
        r.train.bf16_first_layers = i == 2 ? 2 : 0;
        r.train.bf16_last_layers = i == 3 ? 2 : 0;
        run_sim(&r, i == 0 ? &a : i == 1 ? &b : i == 2 ? &c : &d);
    }
    ASSERT_TRUE(a.feasible && b.feasible && c.feasible && d.feasible);
    ASSERT_NEAR(c.kind_mlp_s, (a.kind_mlp_s + b.kind_mlp_s) / 2.0, 1e-9);
    ASSERT_NEAR(c.kind_attn_s, (a.kind_attn_s + b.kind_attn_s) / 2.0, 1e-9);
    ASSERT_NEAR(d.kind_mlp_s, a.kind_mlp_s, 1e-12);
    ASSERT_TRUE(d.iteration_time_s > a.iteration_time_s * 1.05);
    /* Megatron-Core refuses more than a stage's layers under fp8 / mxfp8
     * (a result with a reason, as a sweep's walk skips it: rules.c
     * bf16_layers), and checks nothing under nvfp4 */
    qrun(&r, LP_MXFP8);
    r.system.gpu.peak_flops[LP_MXFP8] = r.system.gpu.peak_flops[LP_FP8];
    r.system.gpu.peak_flops[LP_NVFP4] = 2.0 * r.system.gpu.peak_flops[LP_FP8];
    r.par.pp = 2;
    r.train.global_batch = 4;
    r.train.bf16_last_layers = 5;
    run_sim(&r, &d);
    ASSERT_TRUE(!d.feasible);
    ASSERT_EQ_INT(d.reason, LP_REASON_FRAMEWORK);
    ASSERT_EQ_INT((int)d.reason_a, LP_GAP_BF16_STAGE);
    r.train.precision = LP_NVFP4;
    run_sim(&r, &d);
    ASSERT_TRUE(d.feasible);
}

/* A module's precision: linear_qkv and linear_proj in bf16 inside an fp8
 * run make the attention block cost what it costs in a bf16 run (its
 * GEMMs, no casts; attention itself is bf16 in both) and leave the MLP as
 * the fp8 run's; TP 2 with SP, so the forward's all-gather before QKV and
 * the backward's before the projection's data gradient are bf16 too. In a
 * bf16 run a module override changes nothing (Transformer Engine's
 * override_nonquantized_autocast false). */
TEST(module_precision_attention)
{
    static struct lp_shape_cost s8, s16, sm;
    struct lp_run r;
    qrun(&r, LP_FP8);
    r.par.tp = 2;
    r.par.sequence_parallel = true;
    shape_cost(&r, &s8);
    r.train.module_prec[LP_QMOD_QKV] = (unsigned char)(LP_BF16 + 1);
    r.train.module_prec[LP_QMOD_PROJ] = (unsigned char)(LP_BF16 + 1);
    shape_cost(&r, &sm);
    qrun(&r, LP_BF16);
    r.par.tp = 2;
    r.par.sequence_parallel = true;
    shape_cost(&r, &s16);
    const struct lp_layer_cost *am = &sm.mix[LP_MIX_ATTN], *a16 = &s16.mix[LP_MIX_ATTN];
    ASSERT_NEAR(am->op_fwd[LP_OPC_GEMM], a16->op_fwd[LP_OPC_GEMM], 1e-12);
    ASSERT_NEAR(am->op_bwd[LP_OPC_GEMM], a16->op_bwd[LP_OPC_GEMM], 1e-12);
    ASSERT_NEAR(am->fwd_s, a16->fwd_s, 1e-12);
    ASSERT_NEAR(am->bwd_s, a16->bwd_s, 1e-12);
    ASSERT_NEAR(am->comm_fwd_s, a16->comm_fwd_s, 1e-12);
    ASSERT_NEAR(am->comm_bwd_s, a16->comm_bwd_s, 1e-12);
    ASSERT_NEAR(sm.ffn[LP_FFN_DENSE].fwd_s, s8.ffn[LP_FFN_DENSE].fwd_s, 1e-12);
    ASSERT_NEAR(sm.ffn[LP_FFN_DENSE].bwd_s, s8.ffn[LP_FFN_DENSE].bwd_s, 1e-12);
    /* by hand: QKV + projection forward, 2 T 4h^2 / TP 2 at the bf16 peak
     * against half that in fp8 */
    const double fl = 2.0 * T * 4.0 * H * H / 2.0;
    ASSERT_NEAR(am->op_fwd[LP_OPC_GEMM], 2.0 * 5e-6 + fl / (312e12 * 0.8), 1e-6);
    ASSERT_NEAR(s8.mix[LP_MIX_ATTN].op_fwd[LP_OPC_GEMM], 2.0 * 5e-6 + fl / (624e12 * 0.8), 1e-6);
    r.train.module_prec[LP_QMOD_QKV] = (unsigned char)(LP_NVFP4 + 1);
    shape_cost(&r, &sm);
    ASSERT_NEAR(sm.mix[LP_MIX_ATTN].fwd_s, a16->fwd_s, 1e-12);
    ASSERT_EQ_INT((int)lp_train_module_prec(&r.train, LP_QMOD_QKV), LP_BF16);
}

/* Nemotron 3 Super's te_quant.cfg inside an nvfp4 run, on the B200's peaks
 * (bf16 2250, mxfp8 4500, nvfp4 9000 TFLOP/s): the Mamba out_proj in
 * mxfp8 and LatentMoE's two latent projections in bf16. By hand, TP 1,
 * T = 8192 tokens: out_proj's forward GEMM (T x 8192 -> 4096) and the
 * latent pair's (T x 4096 -> 1024 and back) each take FLOPs / (peak x 0.8)
 * on the roofline backend (compute-bound at these shapes), so the blocks'
 * forward GEMM time grows by the difference of the two peaks' times;
 * in_proj, the experts and the shared expert stay nvfp4. */
TEST(module_precision_mamba_latent)
{
    struct lp_run r;
    struct lp_err err;
    lp_err_clear(&err);
    ASSERT_OK(lp_parse_run("{\"model\": \"nemotron-3-super\", \"system\": \"dgx-b200\", "
                           "\"parallel\": {\"dp\": 64, \"ep\": 64}, \"training\": "
                           "{\"global_batch\": 64, \"precision\": \"nvfp4\"}}",
                           "t.json", &r, &err));
    r.system.gpu.sustained_frac = 1.0;
    static struct lp_shape_cost s4, sm;
    shape_cost(&r, &s4);
    r.train.module_prec[LP_QMOD_OUT_PROJ] = (unsigned char)(LP_MXFP8 + 1);
    r.train.module_prec[LP_QMOD_LATENT] = (unsigned char)(LP_BF16 + 1);
    shape_cost(&r, &sm);
    const double Tk = 8192.0, e = 0.8, p16 = 2250e12, p8 = 4500e12, p4 = 9000e12;
    const double out = 2.0 * Tk * 8192.0 * 4096.0, lat = 2.0 * 2.0 * Tk * 4096.0 * 1024.0;
    ASSERT_NEAR(sm.mix[LP_MIX_MAMBA].op_fwd[LP_OPC_GEMM] - s4.mix[LP_MIX_MAMBA].op_fwd[LP_OPC_GEMM],
                out / (p8 * e) - out / (p4 * e), 1e-6);
    ASSERT_NEAR(sm.ffn[LP_FFN_MOE].op_fwd[LP_OPC_GEMM] - s4.ffn[LP_FFN_MOE].op_fwd[LP_OPC_GEMM],
                lat / (p16 * e) - lat / (p4 * e), 1e-6);
    /* attention untouched */
    ASSERT_NEAR(sm.mix[LP_MIX_ATTN].fwd_s, s4.mix[LP_MIX_ATTN].fwd_s, 1e-12);
    /* the MoE block's forward GEMMs of the nvfp4 run, each 5 us + FLOPs /
     * (peak x 0.8): the router in bf16 (Megatron-Core's router_gating_linear
     * runs outside the quantiser; T x 4096 -> 512), the latent pair, the
     * shared expert (4096 -> 5376 -> 4096, relu2) and 8 local experts of
     * 8192 x 64 x 22 / 512 = 22528 tokens each (1024 -> 2688 -> 1024) in
     * nvfp4 */
    const double te = Tk * 64.0 * 22.0 / 512.0;
    const double moe = 5e-6 + 2.0 * Tk * 4096.0 * 512.0 / (p16 * e) + 2.0 * 5e-6 + lat / (p4 * e) +
                       2.0 * (5e-6 + 2.0 * Tk * 4096.0 * 5376.0 / (p4 * e)) +
                       8.0 * 2.0 * (5e-6 + 2.0 * te * 1024.0 * 2688.0 / (p4 * e));
    ASSERT_NEAR(s4.ffn[LP_FFN_MOE].op_fwd[LP_OPC_GEMM], moe, 1e-6);
}

/* NVFP4's quantiser finds each activation's amax in a pass of its own
 * before the cast (its per-tensor second-level scale; TransformerEngine
 * d0067d0d NVFP4Quantizer::quantize_impl), as fp8 current scaling does,
 * without the latter's scale kernel. By hand, the attention block's
 * forward at TP 1 casts QKV's input and the projection's (T x h each):
 * against mxfp8, each cast writes 2 (0.5 + 1/16) bytes per element instead
 * of 2 (1 + 1/32), and each adds one read of 2 bytes per element, a 5 us
 * launch on the roofline backend (bandwidth 2.039 TB/s x 0.85). */
TEST(nvfp4_amax_pass)
{
    static struct lp_shape_cost s4, s8;
    struct lp_run r;
    qrun(&r, LP_NVFP4);
    shape_cost(&r, &s4);
    qrun(&r, LP_MXFP8);
    shape_cost(&r, &s8);
    const double x = T * H, bw = 2.039e12 * 0.85;
    const double q4 = 0.5 + 1.0 / 16.0, q8 = 1.0 + 1.0 / 32.0;
    const double d = 2.0 * (5e-6 + x * (2.0 + 2.0 * q4 - 2.0 * q8) / bw);
    ASSERT_NEAR(s4.mix[LP_MIX_ATTN].op_fwd[LP_OPC_MEM] - s8.mix[LP_MIX_ATTN].op_fwd[LP_OPC_MEM], d,
                1e-9);
}

/* The run file's keys: module_precision names Megatron-Core's modules and
 * a precision a quantisation recipe can give; the bf16 layer counts stay
 * within one pipeline stage (Megatron-Core's check) and off fp8 delayed
 * scaling. Each refusal names the key. */
TEST(quant_keys)
{
#define QK_BASE                                                                                    \
    "{\"model\": \"llama3-8b\", \"system\": \"dgx-b200\", \"parallel\": {\"dp\": 8, \"pp\": %d}, " \
    "\"training\": {\"global_batch\": 64, \"precision\": \"%s\", %s}}"
    char text[512];
    struct lp_run r;
    struct lp_err err;
    lp_err_clear(&err);
    snprintf(text, sizeof(text), QK_BASE, 1, "nvfp4",
             "\"bf16_last_layers\": 4, \"module_precision\": {\"linear_qkv\": \"bf16\", "
             "\"out_proj\": \"mxfp8\"}");
    ASSERT_OK(lp_parse_run(text, "t.json", &r, &err));
    ASSERT_EQ_INT(r.train.bf16_last_layers, 4);
    ASSERT_EQ_INT(r.train.bf16_first_layers, 0);
    ASSERT_EQ_INT((int)lp_train_module_prec(&r.train, LP_QMOD_QKV), LP_BF16);
    ASSERT_EQ_INT((int)lp_train_module_prec(&r.train, LP_QMOD_OUT_PROJ), LP_MXFP8);
    ASSERT_EQ_INT((int)lp_train_module_prec(&r.train, LP_QMOD_PROJ), LP_NVFP4);
    static const struct {
        int pp;
        const char *prec, *train, *msg;
    } bad[] = {{1, "nvfp4", "\"module_precision\": {\"linear_fc1\": \"bf16\"}", "linear_fc1"},
               {1, "nvfp4", "\"module_precision\": {\"mtp\": \"fp32\"}", "module_precision.mtp"},
               {1, "nvfp4", "\"module_precision\": \"bf16\"", "module_precision"},
               {1, "mxfp8", "\"bf16_first_layers\": -1", "bf16_first_layers"},
               /* llama3-8b: 32 layers, 16 per stage at PP 2 */
               {2, "mxfp8", "\"bf16_last_layers\": 17", "bf16_last_layers"},
               /* a stage's count asks for fewer layers, not for current
                * scaling the run has */
               {2, "fp8", "\"fp8_scaling\": \"current\", \"bf16_last_layers\": 17",
                "expected at most 16 each"},
               {1, "fp8", "\"fp8_scaling\": \"delayed\", \"bf16_first_layers\": 1", "delayed"},
               /* only the last layers given: the key names them too */
               {1, "fp8", "\"fp8_scaling\": \"delayed\", \"bf16_last_layers\": 1",
                "'training.bf16_first_layers, bf16_last_layers'"},
               {1, "fp8", "\"fp8_scaling\": \"delayed\", \"bf16_last_layers\": 1",
                "expected training.fp8_scaling \"current\""}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(text, sizeof(text), QK_BASE, bad[i].pp, bad[i].prec, bad[i].train);
        lp_err_clear(&err);
        ASSERT_TRUE(lp_parse_run(text, "t.json", &r, &err) != 0);
        ASSERT_CONTAINS(err.msg, bad[i].msg);
    }
    snprintf(text, sizeof(text), QK_BASE, 2, "mxfp8", "\"bf16_last_layers\": 16");
    lp_err_clear(&err);
    ASSERT_OK(lp_parse_run(text, "t.json", &r, &err));
#undef QK_BASE
}

TH_MAIN(TH_CASE(bf16_first_last_layers_mix), TH_CASE(bf16_layers_per_stage),
        TH_CASE(module_precision_attention), TH_CASE(module_precision_mamba_latent),
        TH_CASE(nvfp4_amax_pass), TH_CASE(quant_keys))
