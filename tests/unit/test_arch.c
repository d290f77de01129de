/* The architecture arithmetic (src/core/arch.c): parameter counts against
 * the model cards, forward FLOPs of each layer kind against hand
 * computations, layer kinds, and the uneven pipeline split. */
#include <math.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "llmplan/arch.h"
#include "llmplan/io.h"
#include "llmplan/sim.h"

static int load(const char *name, struct lp_model *m)
{
    struct lp_err err;
    lp_err_clear(&err);
    int rc = lp_load_model(name, m, &err);
    if (rc != 0) fprintf(stderr, "  %s: %s\n", name, err.msg);
    return rc;
}

/* Input embedding (not counted as active by cards that exclude it). */
static double input_emb(const struct lp_model *m)
{
    return (double)m->vocab * m->hidden;
}

/* Totals and active counts as the model cards publish them, each with the
 * card's own convention (with or without the input embedding; MTP modules
 * apart). Tolerances: the card's rounding. */
TEST(model_card_counts)
{
    struct lp_model m;
    /* DeepSeek-V3 report Sec 1: 671B total, 37B activated (main model,
     * embeddings included); MTP +14B in the checkpoint (Sec 2.2) */
    ASSERT_OK(load("deepseek-v3", &m));
    ASSERT_EQ_INT(m.mtp_layers, 1);
    double with_mtp = lp_model_params(&m);
    m.mtp_layers = 0;
    ASSERT_NEAR(lp_model_params(&m), 671e9, 0.002);
    ASSERT_NEAR(lp_model_active_params(&m), 37e9, 0.02);
    /* one module: its layer (MLA + MoE), projection and norms; the
     * checkpoint also stores copies of the embedding and head (1.85B) */
    ASSERT_NEAR(with_mtp - lp_model_params(&m) + 2 * input_emb(&m), 13.46e9, 0.01);
    /* Qwen3 model cards: 30.5B / 3.3B and 235B / 22B */
    ASSERT_OK(load("qwen3-30b-a3b", &m));
    ASSERT_NEAR(lp_model_params(&m), 30.5e9, 0.002);
    ASSERT_NEAR(lp_model_active_params(&m), 3.3e9, 0.02);
    ASSERT_OK(load("qwen3-235b-a22b", &m));
    ASSERT_NEAR(lp_model_params(&m), 235e9, 0.002);
    ASSERT_NEAR(lp_model_active_params(&m), 22e9, 0.01);
    /* gpt-oss model card Table 1: 116.83B / 5.13B and 20.91B / 3.61B,
     * active without the input embedding */
    ASSERT_OK(load("gpt-oss-120b", &m));
    ASSERT_NEAR(lp_model_params(&m), 116.83e9, 0.0005);
    ASSERT_NEAR(lp_model_active_params(&m) - input_emb(&m), 5.13e9, 0.002);
    ASSERT_OK(load("gpt-oss-20b", &m));
    ASSERT_NEAR(lp_model_params(&m), 20.91e9, 0.0005);
    ASSERT_NEAR(lp_model_active_params(&m) - input_emb(&m), 3.61e9, 0.002);
    /* Nemotron 3 Nano: 31.6B total, 3.2B active (3.6B with embeddings) */
    ASSERT_OK(load("nemotron-3-nano", &m));
    ASSERT_NEAR(lp_model_params(&m), 31.6e9, 0.002);
    ASSERT_NEAR(lp_model_active_params(&m), 3.6e9, 0.01);
    ASSERT_NEAR(lp_model_active_params(&m) - input_emb(&m), 3.2e9, 0.01);
    /* Nemotron 3 Super: the BF16 checkpoint's 123,611,012,096 parameters
     * (main model and its MTP module) */
    ASSERT_OK(load("nemotron-3-super", &m));
    ASSERT_NEAR(lp_model_params(&m), 123.611e9, 0.0005);
    /* Kimi K2: 1T / 32B; Jamba 1.5 Mini: 52B / 12B; Nemotron-H 8B, 56B */
    ASSERT_OK(load("kimi-k2", &m));
    ASSERT_NEAR(lp_model_params(&m), 1.0e12, 0.03);
    ASSERT_NEAR(lp_model_active_params(&m), 32e9, 0.03);
    ASSERT_OK(load("jamba-1.5-mini", &m));
    ASSERT_NEAR(lp_model_params(&m), 52e9, 0.01);
    ASSERT_NEAR(lp_model_active_params(&m), 12e9, 0.01);
    ASSERT_OK(load("nemotron-h-8b", &m));
    ASSERT_NEAR(lp_model_params(&m), 8.1e9, 0.01);
    ASSERT_OK(load("nemotron-h-56b", &m));
    ASSERT_NEAR(lp_model_params(&m), 56e9, 0.01);
    /* BlackMamba 630M/2.8B (arXiv 2402.01771; Zyphra names the models
     * forward-pass / total parameters, embeddings included): the names'
     * rounding, 625-635M and 2.75-2.85B */
    ASSERT_OK(load("blackmamba-630m-2.8b", &m));
    ASSERT_NEAR(lp_model_params(&m), 2.8e9, 0.0178);
    ASSERT_NEAR(lp_model_active_params(&m), 630e6, 0.0079);
    /* Llama 3.1 405B: 405B */
    ASSERT_OK(load("llama3-405b", &m));
    ASSERT_NEAR(lp_model_params(&m), 405.85e9, 0.001);
}

/* A small model whose every count is worked out by hand below. */
static void tiny(struct lp_model *m)
{
    memset(m, 0, sizeof(*m));
    snprintf(m->name, sizeof(m->name), "tiny");
    m->layers = 4;
    m->hidden = 64;
    m->heads = 4;
    m->kv_heads = 2;
    m->head_dim = 32; /* not hidden / heads */
    m->ffn_hidden = 128;
    m->vocab = 100;
    m->seq_len = 256;
    m->ffn_act = LP_ACT_SWIGLU;
    m->norm = LP_NORM_RMSNORM;
    m->pos = LP_POS_ROTARY;
}

TEST(gqa_head_dim_flops)
{
    struct lp_model m;
    tiny(&m);
    /* q 64x(4*32) + k, v 64x(2*32) each + o (4*32)x64 = 8192 + 8192 + 8192
     * = 24576 weights; forward 2 FLOPs each; scores and values: 4 s a d =
     * 4 * 256 * 4 * 32 = 131072 */
    ASSERT_NEAR(lp_arch_mixer_flops(&m, LP_MIX_ATTN), 2.0 * 24576 + 131072, 1e-12);
    /* + its RMSNorm (64) */
    ASSERT_NEAR(lp_arch_mixer_params(&m, LP_MIX_ATTN, 1), 24576 + 64, 1e-12);
    ASSERT_NEAR(lp_arch_mixer_params(&m, LP_MIX_ATTN, 2), 12288 + 64, 1e-12);
    /* a 16-token window: 4 s a d with s = 16 */
    m.attention_window = 16;
    m.global_every = 2;
    ASSERT_NEAR(lp_arch_mixer_flops(&m, LP_MIX_ATTN_LOCAL), 2.0 * 24576 + 4.0 * 16 * 4 * 32, 1e-12);
    enum lp_mixer mx;
    enum lp_ffn ff;
    lp_arch_layer(&m, 0, &mx, &ff);
    ASSERT_EQ_INT(mx, LP_MIX_ATTN_LOCAL);
    lp_arch_layer(&m, 1, &mx, &ff);
    ASSERT_EQ_INT(mx, LP_MIX_ATTN);
    ASSERT_EQ_INT(ff, LP_FFN_DENSE);
}

TEST(mla_flops_and_params)
{
    struct lp_model m;
    tiny(&m);
    m.kv_heads = m.heads;
    m.mla = (struct lp_mla){.q_lora_rank = 16,
                            .kv_lora_rank = 8,
                            .qk_nope_head_dim = 12,
                            .qk_rope_head_dim = 4,
                            .v_head_dim = 10};
    /* q down 64x16 + q norm 16 + q up 16x(4*16) = 1024 + 16 + 1024;
     * kv down 64x(8+4) + kv norm 8 + kv up 8x(4*(12+10)) = 768 + 8 + 704;
     * o (4*10)x64 = 2560; total 6104 (+ the pre-norm 64) */
    ASSERT_NEAR(lp_arch_mixer_params(&m, LP_MIX_ATTN, 1), 6104 + 64, 1e-12);
    /* split over tp = 2: the down projections and their norms stay whole */
    ASSERT_NEAR(lp_arch_mixer_params(&m, LP_MIX_ATTN, 2),
                1024 + 16 + 512 + 768 + 8 + 352 + 1280 + 64, 1e-12);
    /* forward: 2 x weights + scores 2 s a (d_nope + d_rope) + values 2 s a d_v
     * = 2 * 6104 + 2*256*4*16 + 2*256*4*10 */
    ASSERT_NEAR(lp_arch_mixer_flops(&m, LP_MIX_ATTN), 2.0 * 6104 + 32768 + 20480, 1e-12);
}

TEST(moe_shared_and_fine_grained)
{
    struct lp_model m;
    tiny(&m);
    m.moe = (struct lp_moe){.experts = 8,
                            .top_k = 2,
                            .ffn_hidden = 32,
                            .layer_freq = 1,
                            .shared_experts = 1,
                            .shared_ffn_hidden = 48,
                            .first_dense_layers = 1,
                            .dropless = true,
                            .imbalance = 1.0};
    /* router 64x8 = 512; a routed SwiGLU expert 3*64*32 = 6144; the shared
     * one 3*64*48 = 9216; norm 64 */
    ASSERT_NEAR(lp_arch_ffn_params(&m, LP_FFN_MOE, 1, 1, 1), 512 + 8 * 6144 + 9216 + 64, 1e-12);
    ASSERT_NEAR(lp_arch_ffn_active_params(&m, LP_FFN_MOE), 512 + 2 * 6144 + 9216 + 64, 1e-12);
    /* ep = 4: two local experts; tp = 2 splits the shared expert, etp = 1
     * keeps the routed ones whole */
    ASSERT_NEAR(lp_arch_ffn_params(&m, LP_FFN_MOE, 2, 1, 4), 512 + 2 * 6144 + 4608 + 64, 1e-12);
    ASSERT_NEAR(lp_arch_ffn_flops(&m, LP_FFN_MOE), 2.0 * (512 + 2 * 6144 + 9216), 1e-12);
    enum lp_mixer mx;
    enum lp_ffn ff;
    lp_arch_layer(&m, 0, &mx, &ff);
    ASSERT_EQ_INT(ff, LP_FFN_DENSE); /* first_dense_layers */
    lp_arch_layer(&m, 1, &mx, &ff);
    ASSERT_EQ_INT(ff, LP_FFN_MOE);
    /* LatentMoE: experts at width 16, projections 64x16 and back */
    m.moe.latent = 16;
    ASSERT_NEAR(lp_arch_ffn_params(&m, LP_FFN_MOE, 1, 1, 1),
                512 + 8 * (3.0 * 16 * 32) + 9216 + 2 * 64 * 16 + 64, 1e-12);
}

TEST(mamba_flops_and_params)
{
    struct lp_model m;
    tiny(&m);
    m.mamba = (struct lp_mamba){
        .version = 2, .d_state = 8, .d_conv = 4, .expand = 2, .head_dim = 16, .n_groups = 2};
    snprintf(m.layer_pattern, sizeof(m.layer_pattern), "M*M-");
    /* d_i = 128, 8 heads of 16, G = 2, N = 8: in_proj 64x(256 + 32 + 8) =
     * 18944; conv (128 + 32) x (4 + 1) = 800; dt_bias, A, D 24; gated norm
     * 128; out_proj 128x64 = 8192: 28088 (+ pre-norm 64) */
    ASSERT_NEAR(lp_arch_mixer_params(&m, LP_MIX_MAMBA, 1), 28088 + 64, 1e-12);
    /* forward: 2 (18944 + 8192) + conv 2*4*160 + SSD G 2 Q N + nh (2 Q P + 4 N P),
     * Q = 128 = 54272 + 1280 + 2*2*128*8 + 8*(2*128*16 + 4*8*16) */
    ASSERT_NEAR(lp_arch_mixer_flops(&m, LP_MIX_MAMBA), 54272 + 1280 + 4096 + 8 * (4096 + 512),
                1e-12);
    enum lp_mixer mx;
    enum lp_ffn ff;
    lp_arch_layer(&m, 0, &mx, &ff);
    ASSERT_TRUE(mx == LP_MIX_MAMBA && ff == LP_FFN_NONE);
    lp_arch_layer(&m, 1, &mx, &ff);
    ASSERT_TRUE(mx == LP_MIX_ATTN && ff == LP_FFN_NONE);
    lp_arch_layer(&m, 3, &mx, &ff);
    ASSERT_TRUE(mx == LP_MIX_NONE && ff == LP_FFN_DENSE);
    /* Mamba-1 (Jamba): x_proj and dt_proj through the dt rank */
    m.mamba = (struct lp_mamba){.version = 1, .d_state = 4, .d_conv = 4, .expand = 2, .dt_rank = 4};
    /* in 64x256, conv 128x5, x_proj 128x12, dt_proj 4x128 + 128, A 128x4,
     * D 128, out 128x64 = 16384+640+1536+640+512+128+8192 = 28032 */
    ASSERT_NEAR(lp_arch_mixer_params(&m, LP_MIX_MAMBA, 1), 28032 + 64, 1e-12);
    /* forward: 2 (16384 + 1536 + 512 + 8192) + conv 2*4*128 + scan 9*128*4 */
    ASSERT_NEAR(lp_arch_mixer_flops(&m, LP_MIX_MAMBA), 2.0 * 26624 + 1024 + 4608, 1e-12);
}

static int layers_of(const int *first, int vs)
{
    return first[vs + 1] - first[vs];
}

/* Uneven pipelines: the embedding and the loss (and MTP) count as a layer
 * of work at the ends (Megatron's account_for_embedding/loss_in_pipeline_
 * split), so 126 layers split over pp*vp = 64 into 1, 2 x 62, 1 (Llama 3.1
 * 405B in Megatron-Bridge); explicit first/last stage counts. */
TEST(uneven_split)
{
    struct lp_model m;
    int first[LP_ARCH_SPLIT_CAP];
    ASSERT_OK(load("llama3-405b", &m));
    struct lp_parallel p = {.pp = 8, .vp = 8};
    ASSERT_OK(lp_arch_split(&m, &p, first, LP_ARCH_SPLIT_CAP));
    ASSERT_EQ_INT(layers_of(first, 0), 1);
    ASSERT_EQ_INT(layers_of(first, 63), 1);
    for (int vs = 1; vs < 63; vs++)
        ASSERT_EQ_INT(layers_of(first, vs), 2);
    /* BLOOM's 70 layers on pp = 12 (DeepSpeed): 72 units, 6 each */
    ASSERT_OK(load("bloom-176b", &m));
    p = (struct lp_parallel){.pp = 12, .vp = 1};
    ASSERT_OK(lp_arch_split(&m, &p, first, LP_ARCH_SPLIT_CAP));
    ASSERT_EQ_INT(layers_of(first, 0), 5);
    ASSERT_EQ_INT(layers_of(first, 5), 6);
    ASSERT_EQ_INT(layers_of(first, 11), 5);
    ASSERT_EQ_INT(first[12], 70);
    /* DeepSeek-V3's 61 layers + MTP over 16 stages: 64 units, 4 each */
    ASSERT_OK(load("deepseek-v3", &m));
    p = (struct lp_parallel){.pp = 16, .vp = 1};
    ASSERT_OK(lp_arch_split(&m, &p, first, LP_ARCH_SPLIT_CAP));
    ASSERT_EQ_INT(layers_of(first, 0), 3);
    ASSERT_EQ_INT(layers_of(first, 7), 4);
    ASSERT_EQ_INT(layers_of(first, 15), 2);
    /* given ends: 126 = 3 + 30 x 4 + 3 over 32 chunks */
    ASSERT_OK(load("llama3-405b", &m));
    p = (struct lp_parallel){.pp = 8, .vp = 4, .first_stage_layers = 3, .last_stage_layers = 3};
    ASSERT_OK(lp_arch_split(&m, &p, first, LP_ARCH_SPLIT_CAP));
    ASSERT_EQ_INT(layers_of(first, 0), 3);
    ASSERT_EQ_INT(layers_of(first, 1), 4);
    ASSERT_EQ_INT(layers_of(first, 31), 3);
    p.last_stage_layers = 4; /* 126 - 3 - 4 = 119 does not divide by 30 */
    ASSERT_TRUE(lp_arch_split(&m, &p, first, LP_ARCH_SPLIT_CAP) != 0);
    /* more stages than units of work: no split */
    p = (struct lp_parallel){.pp = 129, .vp = 1};
    ASSERT_TRUE(lp_arch_split(&m, &p, first, LP_ARCH_SPLIT_CAP) != 0);
    /* divisible: the even split, ends not counted (the validated default) */
    ASSERT_OK(load("gpt3-175b", &m));
    p = (struct lp_parallel){.pp = 8, .vp = 3};
    ASSERT_OK(lp_arch_split(&m, &p, first, LP_ARCH_SPLIT_CAP));
    for (int vs = 0; vs < 24; vs++)
        ASSERT_EQ_INT(layers_of(first, vs), 4);
}

/* A Megatron run of preset model and system with its parallel layout, bf16
 * and fused attention, and a roofline simulator for it (NULL on failure). */
static struct lp_sim *megatron_run(const char *model, const char *system, struct lp_parallel par,
                                   struct lp_run *r)
{
    struct lp_err err;
    lp_err_clear(&err);
    memset(r, 0, sizeof(*r));
    if (load(model, &r->model) != 0 || lp_load_system(system, &r->system, &err) != 0) return NULL;
    r->par = par;
    r->train.global_batch = 1536;
    r->train.precision = LP_BF16;
    r->train.flash_attention = true;
    lp_framework_defaults(LP_FW_MEGATRON, &r->fw);
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r->system.gpu);
    struct lp_sim *sim = NULL;
    return lp_sim_create(&cm, &sim, NULL) == 0 ? sim : NULL;
}

/* The simulator takes the runs that really trained: Llama 3.1 405B's 126
 * layers on pp * vp = 64 (Megatron-Bridge), and refuses TP beyond the
 * NVLink domain the same way a sweep does, while an NVL72 rack allows it. */
TEST(simulate_uneven_and_scale_up)
{
    struct lp_run r;
    struct lp_err err;
    lp_err_clear(&err);
    struct lp_sim *sim = megatron_run("llama3-405b", "dgx-h100",
                                      (struct lp_parallel){.tp = 8,
                                                           .pp = 8,
                                                           .dp = 8,
                                                           .cp = 2,
                                                           .ep = 1,
                                                           .vp = 8,
                                                           .micro_batch = 1,
                                                           .sequence_parallel = true,
                                                           .zero = 1,
                                                           .schedule = LP_SCHED_INTERLEAVED},
                                      &r);
    ASSERT_TRUE(sim != NULL);
    struct lp_result res;
    lp_sim_run(sim, &r, &res);
    ASSERT_TRUE(res.feasible);
    ASSERT_TRUE(res.iteration_time_s > 0 && res.breakdown.pp_bubble_s >= 0);
    r.par.tp = 16;
    r.par.dp = 4;
    lp_sim_run(sim, &r, &res);
    ASSERT_EQ_INT(res.reason, LP_REASON_TP_NODE);
    ASSERT_OK(lp_load_system("gb200-nvl72", &r.system, &err));
    ASSERT_EQ_INT(lp_system_scale_up(&r.system), 64); /* segment_gpus of 72 */
    ASSERT_TRUE(lp_sim_validate(&r) != LP_REASON_TP_NODE);
    lp_sim_destroy(&sim);
}

/* Issue #19's reproducer: GPT-3 175B at TP 8, PP 32, VP 3 crosses the exact
 * solver's scratch (m p v > 2^20) between global batches 10,880 and 11,008;
 * the closed form that then stands in must count the embedding and the loss
 * once per micro-batch: the time per sequence stays put (it jumped by -10%
 * with a negative pp_comm before) and every breakdown term is >= 0. */
TEST(schedule_fallback_continuous)
{
    struct lp_run r;
    struct lp_sim *sim = megatron_run("gpt3-175b", "dgx-a100-80gb",
                                      (struct lp_parallel){.tp = 8,
                                                           .pp = 32,
                                                           .dp = 1,
                                                           .cp = 1,
                                                           .ep = 1,
                                                           .vp = 3,
                                                           .micro_batch = 1,
                                                           .sequence_parallel = true,
                                                           .recompute = LP_RECOMPUTE_FULL,
                                                           .schedule = LP_SCHED_INTERLEAVED},
                                      &r);
    ASSERT_TRUE(sim != NULL);
    struct lp_result a, b;
    r.train.global_batch = 10880; /* 10880 * 96 < 2^20: exact */
    lp_sim_run(sim, &r, &a);
    r.train.global_batch = 11008; /* closed form */
    lp_sim_run(sim, &r, &b);
    ASSERT_TRUE(a.feasible && b.feasible);
    ASSERT_NEAR(b.iteration_time_s / 11008, a.iteration_time_s / 10880, 0.005);
    const struct lp_breakdown *d = &b.breakdown;
    ASSERT_TRUE(d->compute_s >= 0 && d->tp_comm_s >= 0 && d->pp_bubble_s >= 0 &&
                d->pp_comm_s >= 0 && d->dp_comm_exposed_s >= 0 && d->optimizer_s >= 0);
    lp_sim_destroy(&sim);
}

/* Megatron-Core's recompute_modules and block recomputation: each module
 * drops exactly the activations it redoes (hand-computed bytes) and costs
 * time; the attention core is redone under Megatron-Core even with a fused
 * kernel, not under Megatron-DeepSpeed; recompute_num_layers N with method
 * block redoes N of L layers, interpolating none and full linearly. */
TEST(recompute_modules_and_block)
{
    struct lp_run r;
    struct lp_parallel par = {.tp = 1,
                              .pp = 1,
                              .dp = 64,
                              .cp = 1,
                              .ep = 8,
                              .vp = 1,
                              .micro_batch = 1,
                              .zero = 1,
                              .schedule = LP_SCHED_1F1B};
    struct lp_sim *sim = megatron_run("gpt-oss-120b", "dgx-b200", par, &r);
    ASSERT_TRUE(sim != NULL);
    r.train.global_batch = 128;
    r.fw.grad_fp32 = false;
    struct lp_result none, act, ln;
    lp_sim_run(sim, &r, &none);
    r.par.recompute = LP_RECOMPUTE_SELECTIVE;
    r.par.recompute_modules = LP_RC_MOE_ACT;
    lp_sim_run(sim, &r, &act);
    r.par.recompute_modules = LP_RC_MOE_ACT | LP_RC_LAYERNORM;
    lp_sim_run(sim, &r, &ln);
    ASSERT_TRUE(none.feasible && act.feasible && ln.feasible);
    /* one micro-batch in flight (pp 1): every MoE layer drops its experts'
     * activation output, T * top_k * ffn bf16 values (swiglu: the fc1
     * output stays), and with layernorm its pre-MLP norm output T * h */
    const double T = 4096, L = 36;
    ASSERT_NEAR(none.memory.activations_bytes - act.memory.activations_bytes,
                L * T * 4 * 2880 * 2.0, 1.0);
    ASSERT_NEAR(act.memory.activations_bytes - ln.memory.activations_bytes, L * T * 2880 * 2.0,
                1.0);
    ASSERT_TRUE(act.iteration_time_s > none.iteration_time_s);
    ASSERT_TRUE(ln.iteration_time_s > act.iteration_time_s);
    /* the whole MoE block redone: more time, only its input kept */
    r.par.recompute_modules = LP_RC_MOE;
    struct lp_result moe;
    lp_sim_run(sim, &r, &moe);
    ASSERT_TRUE(moe.iteration_time_s > ln.iteration_time_s);
    ASSERT_TRUE(moe.memory.activations_bytes < ln.memory.activations_bytes);

    /* the attention core with FlashAttention: redone by Megatron-Core only */
    struct lp_result sel, plain;
    r.par.recompute_modules = LP_RC_CORE_ATTN;
    lp_sim_run(sim, &r, &sel);
    ASSERT_TRUE(sel.iteration_time_s > none.iteration_time_s);
    lp_framework_defaults(LP_FW_MEGATRON_DEEPSPEED, &r.fw);
    r.par.recompute = LP_RECOMPUTE_NONE;
    lp_sim_run(sim, &r, &plain);
    r.par.recompute = LP_RECOMPUTE_SELECTIVE;
    r.par.recompute_modules = 0; /* Megatron's default: the attention core */
    lp_sim_run(sim, &r, &sel);
    ASSERT_NEAR(sel.iteration_time_s, plain.iteration_time_s, 1e-12);
    lp_sim_destroy(&sim);

    /* block: N of L layers fully recomputed; one GPU, one stage: the time
     * is linear in N */
    par = lp_fixture_unit_degrees();
    par.zero = 1;
    sim = megatron_run("gpt3-1.3b", "dgx-h100", par, &r);
    ASSERT_TRUE(sim != NULL);
    r.train.global_batch = 4;
    struct lp_result n0, nb, nf;
    lp_sim_run(sim, &r, &n0);
    r.par.recompute = LP_RECOMPUTE_FULL;
    lp_sim_run(sim, &r, &nf);
    r.par.recompute_method = LP_RC_BLOCK;
    r.par.recompute_layers = 5;
    lp_sim_run(sim, &r, &nb);
    ASSERT_TRUE(n0.feasible && nb.feasible && nf.feasible);
    ASSERT_NEAR((nb.iteration_time_s - n0.iteration_time_s) /
                    (nf.iteration_time_s - n0.iteration_time_s),
                5.0 / 24.0, 1e-9);
    ASSERT_TRUE(nb.memory.activations_bytes < n0.memory.activations_bytes &&
                nb.memory.activations_bytes > nf.memory.activations_bytes);
    /* uniform groups of 4: a quarter of the checkpoints, four layers redone
     * at once: the same time as full */
    r.par.recompute_method = LP_RC_UNIFORM;
    r.par.recompute_layers = 4;
    lp_sim_run(sim, &r, &nb);
    ASSERT_NEAR(nb.iteration_time_s, nf.iteration_time_s, 1e-12);
    lp_sim_destroy(&sim);
}

/* Recompute keys in a run file: modules imply selective, contradictions
 * and unknown names are refused with the key named. */
TEST(recompute_keys)
{
#define RC_BASE                                                                                    \
    "{\"model\": \"gpt-oss-120b\", \"system\": \"dgx-h100\", \"parallel\": {\"ep\": 8, "           \
    "\"dp\": 8, %s}, \"training\": {\"global_batch\": 64}}"
    char text[512];
    struct lp_run r;
    struct lp_err err;
    lp_err_clear(&err);
    snprintf(text, sizeof(text), RC_BASE, "\"recompute_modules\": [\"moe_act\", \"layernorm\"]");
    ASSERT_OK(lp_parse_run(text, "t.json", &r, &err));
    ASSERT_EQ_INT(r.par.recompute, LP_RECOMPUTE_SELECTIVE);
    ASSERT_EQ_INT((int)r.par.recompute_modules, LP_RC_MOE_ACT | LP_RC_LAYERNORM);
    snprintf(text, sizeof(text), RC_BASE,
             "\"recompute\": \"full\", \"recompute_method\": \"block\", "
             "\"recompute_layers\": 3");
    ASSERT_OK(lp_parse_run(text, "t.json", &r, &err));
    ASSERT_EQ_INT(r.par.recompute_method, LP_RC_BLOCK);
    ASSERT_EQ_INT(r.par.recompute_layers, 3);
    static const char *bad[][2] = {
        {"\"recompute\": \"full\", \"recompute_modules\": [\"moe_act\"]", "recompute_modules"},
        {"\"recompute_modules\": [\"attn\"]", "core_attn"},
        {"\"recompute_modules\": []", "at least one"},
        {"\"recompute_layers\": 2", "recompute_layers"},
        {"\"recompute\": \"full\", \"recompute_method\": \"blocks\"", "recompute_method"},
        /* torchtitan's op-level policy: alone, and for dense attention +
         * MLP layers only (this model has MoE layers) */
        {"\"recompute_modules\": [\"op\", \"mlp\"]", "alone"},
        {"\"recompute_modules\": [\"op\"]", "torchtitan's Llama blocks"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(text, sizeof(text), RC_BASE, bad[i][0]);
        lp_err_clear(&err);
        ASSERT_TRUE(lp_parse_run(text, "t.json", &r, &err) != 0);
        ASSERT_TRUE(strstr(err.msg, bad[i][1]) != NULL);
    }
#undef RC_BASE
    /* a dense model takes it */
    ASSERT_OK(lp_parse_run("{\"model\": \"llama3-8b\", \"system\": \"dgx-h100\", \"parallel\": "
                           "{\"dp\": 8, \"zero\": 3, \"recompute_modules\": [\"op\"]}, "
                           "\"training\": {\"global_batch\": 8}}",
                           "t.json", &r, &err));
    ASSERT_EQ_INT((int)r.par.recompute_modules, LP_RC_OP);
}

/* torchtitan's op-level selective checkpointing (recompute module "op",
 * parallelize_llama.py at 9dec370): each layer keeps its input, the SDPA
 * output and log-sum-exp, and the outputs of wq, wv, w1 and w2 in 16 bits,
 * under Float8 too (hand-computed bytes). One layer's full activations are
 * live while it is redone. Its recomputation (wk, wo, w3 and the
 * elementwise kernels) costs time, less than a full recomputation. */
TEST(torchtitan_op_sac)
{
    struct lp_run r;
    struct lp_parallel par = {.tp = 1,
                              .pp = 1,
                              .dp = 8,
                              .cp = 1,
                              .ep = 1,
                              .vp = 1,
                              .micro_batch = 1,
                              .zero = 3,
                              .schedule = LP_SCHED_1F1B};
    struct lp_sim *sim = megatron_run("llama3-8b", "dgx-h100", par, &r);
    ASSERT_TRUE(sim != NULL);
    lp_framework_defaults(LP_FW_FSDP, &r.fw);
    r.train.global_batch = 8;
    const double L = 32, T = 8192, h = 4096, a = 32, d = 128, g = 8, f = 14336, e = 2;
    const double emb = T * (e + 1.0) * h; /* the first stage's embedding output and mask */
    for (int fp8 = 0; fp8 < 2; fp8++) {
        r.train.precision = fp8 ? LP_FP8 : LP_BF16;
        struct lp_result none, op, full;
        r.par.recompute = LP_RECOMPUTE_NONE;
        r.par.recompute_modules = 0;
        lp_sim_run(sim, &r, &none);
        r.par.recompute = LP_RECOMPUTE_SELECTIVE;
        r.par.recompute_modules = LP_RC_OP;
        lp_sim_run(sim, &r, &op);
        r.par.recompute = LP_RECOMPUTE_FULL;
        r.par.recompute_modules = 0;
        lp_sim_run(sim, &r, &full);
        const double layer = (none.memory.activations_bytes - emb) / L;
        const double kept = e * h + e * a * d + 4.0 * a + e * (a * d + g * d) + e * f + e * h;
        ASSERT_NEAR(op.memory.activations_bytes, L * T * kept + layer + emb, 1.0);
        ASSERT_TRUE(op.iteration_time_s > none.iteration_time_s);
        ASSERT_TRUE(op.iteration_time_s < full.iteration_time_s);
    }
    lp_sim_destroy(&sim);
}

/* TP overlap with userbuffers splits the GEMMs beside the collectives
 * (TE's ring exchange and pipeline methods): the layer's GEMM time grows,
 * and without sequence parallelism (no userbuffers) it does not. */
TEST(userbuffers_split_gemms)
{
    struct lp_run r;
    struct lp_parallel par = {.tp = 8,
                              .pp = 8,
                              .dp = 1,
                              .cp = 1,
                              .ep = 1,
                              .vp = 1,
                              .micro_batch = 1,
                              .sequence_parallel = true,
                              .zero = 1,
                              .schedule = LP_SCHED_1F1B};
    struct lp_sim *sim = megatron_run("llama3-70b", "dgx-h100", par, &r);
    ASSERT_TRUE(sim != NULL);
    r.par.recompute = LP_RECOMPUTE_FULL;
    r.train.global_batch = 8;
    struct lp_result plain, ub, nosp, nosp_ub;
    lp_sim_run(sim, &r, &plain);
    r.fw.tp_overlap = true;
    lp_sim_run(sim, &r, &ub);
    ASSERT_TRUE(plain.feasible && ub.feasible);
    ASSERT_TRUE(ub.layer_fwd_s[LP_OPC_GEMM] > plain.layer_fwd_s[LP_OPC_GEMM]);
    ASSERT_TRUE(ub.layer_bwd_s[LP_OPC_GEMM] > plain.layer_bwd_s[LP_OPC_GEMM]);
    ASSERT_TRUE(ub.layer_fwd_s[LP_OPC_COMM] < plain.layer_fwd_s[LP_OPC_COMM]);
    r.par.sequence_parallel = false;
    lp_sim_run(sim, &r, &nosp_ub);
    r.fw.tp_overlap = false;
    lp_sim_run(sim, &r, &nosp);
    ASSERT_NEAR(nosp_ub.layer_fwd_s[LP_OPC_GEMM], nosp.layer_fwd_s[LP_OPC_GEMM], 1e-15);
    lp_sim_destroy(&sim);
}

TH_MAIN(TH_CASE(recompute_modules_and_block), TH_CASE(recompute_keys), TH_CASE(torchtitan_op_sac),
        TH_CASE(userbuffers_split_gemms), TH_CASE(schedule_fallback_continuous),
        TH_CASE(simulate_uneven_and_scale_up), TH_CASE(model_card_counts),
        TH_CASE(gqa_head_dim_flops), TH_CASE(mla_flops_and_params),
        TH_CASE(moe_shared_and_fine_grained), TH_CASE(mamba_flops_and_params),
        TH_CASE(uneven_split))
