/* DeepSpeed's engine under Megatron-DeepSpeed (framework megatron-deepspeed):
 * the per-micro-batch gradient accumulation (sim_workload.c ds_grad_accum)
 * against hand computations on the roofline cost model.
 *
 * GPT-3 175B (h 12288, 96 heads of 128), TP 8: each layer's four weights
 * per rank are QKV h x 3h/8 (12288 x 4608), the projection 1536 x 12288,
 * fc1 12288 x 6144 and fc2 6144 x 12288 elements. Per weight of n elements
 * and micro-batch:
 *  - bf16 (BF16_Optimizer.update_hp_grads, DeepSpeed 56c522386): a cast
 *    bf16 -> fp32 (2 + 4 bytes) and an fp32 add (4 + 4 + 4 bytes), two
 *    eager Python kernels;
 *  - fp16 (autograd's AccumulateGrad into param.grad): one add of 2 + 2 + 2
 *    bytes from the second micro-batch on: (m - 1) / m of it, with m = 1536
 *    / (1 x DP 16) = 96, launched from C++ (no Python host time).
 * The embedding table (51200 / 8 x 12288 per rank, tied to the head on the
 * last of 8 stages) is accumulated on the first stage the same way. Other
 * frameworks, and ZeRO 2-3, charge none of it. */
#include <math.h>

#include "fixtures.h"
#include "harness.h"
#include "sim_internal.h"

#define CLOSE_REL(a, b) ASSERT_TRUE(fabs((a) - (b)) <= 1e-9 * fabs(b))

static void ds_run(struct lp_run *r, enum lp_prec prec)
{
    lp_fixture_gpt3_run(r);
    lp_framework_defaults(LP_FW_MEGATRON_DEEPSPEED, &r->fw);
    r->par.sequence_parallel = false;
    r->par.zero = 0;
    r->train.precision = prec;
}

/* the same run and framework options under another framework's name */
static void costs_pair(const struct lp_run *r, struct lp_shape_cost *ds,
                       struct lp_shape_cost *other)
{
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r->system.gpu);
    static struct lp_run o;
    o = *r;
    o.fw.kind = LP_FW_MEGATRON_2021;
    lp_shape_cost_compute(&cm, r, ds);
    lp_shape_cost_compute(&cm, &o, other);
}

static const double QKV = 12288.0 * 4608, PROJ = 1536.0 * 12288, FC1 = 12288.0 * 6144,
                    FC2 = 6144.0 * 12288, EMB = 6400.0 * 12288;

TEST(deepspeed_bf16_update_hp_grads_by_hand)
{
    static struct lp_run r;
    ds_run(&r, LP_BF16);
    r.fw.host_op_s = 0; /* GPU time alone first */
    static struct lp_shape_cost a, b;
    costs_pair(&r, &a, &b);
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r.system.gpu);
#define BF16(n)                                                                                    \
    (cm.ops->mem_s(&cm, LP_MEM_COPY, (n)*6.0) + cm.ops->mem_s(&cm, LP_MEM_RESIDUAL, (n)*12.0))
    const double attn = BF16(QKV) + BF16(PROJ), mlp = BF16(FC1) + BF16(FC2);
    CLOSE_REL(a.mix[LP_MIX_ATTN].op_bwd[LP_OPC_MEM] - b.mix[LP_MIX_ATTN].op_bwd[LP_OPC_MEM], attn);
    CLOSE_REL(a.ffn[LP_FFN_DENSE].op_bwd[LP_OPC_MEM] - b.ffn[LP_FFN_DENSE].op_bwd[LP_OPC_MEM], mlp);
    CLOSE_REL(a.mix[LP_MIX_ATTN].bwd_s - b.mix[LP_MIX_ATTN].bwd_s, attn);
    CLOSE_REL(a.ffn[LP_FFN_DENSE].bwd_s - b.ffn[LP_FFN_DENSE].bwd_s, mlp);
    CLOSE_REL(a.edge.emb_bwd_s - b.edge.emb_bwd_s, BF16(EMB));
    /* the forward is untouched */
    ASSERT_TRUE(a.mix[LP_MIX_ATTN].fwd_s == b.mix[LP_MIX_ATTN].fwd_s);
    ASSERT_TRUE(a.ffn[LP_FFN_DENSE].fwd_s == b.ffn[LP_FFN_DENSE].fwd_s);
#undef BF16
    /* Python ops: with a host time of 1 s per kernel the host binds, and the
     * four kernels of the attention block's two weights add ~4 s */
    r.fw.host_op_s = 1.0;
    costs_pair(&r, &a, &b);
    const double d = a.mix[LP_MIX_ATTN].bwd_s - b.mix[LP_MIX_ATTN].bwd_s;
    ASSERT_TRUE(d > 3.99 && d < 4.01);
}

TEST(deepspeed_fp16_accumulate_grad_by_hand)
{
    static struct lp_run r;
    ds_run(&r, LP_FP16);
    r.fw.host_op_s = 0;
    static struct lp_shape_cost a, b;
    costs_pair(&r, &a, &b);
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r.system.gpu);
#define FP16(n) (95.0 / 96.0 * cm.ops->mem_s(&cm, LP_MEM_RESIDUAL, (n)*6.0))
    CLOSE_REL(a.mix[LP_MIX_ATTN].bwd_s - b.mix[LP_MIX_ATTN].bwd_s, FP16(QKV) + FP16(PROJ));
    CLOSE_REL(a.ffn[LP_FFN_DENSE].bwd_s - b.ffn[LP_FFN_DENSE].bwd_s, FP16(FC1) + FP16(FC2));
    CLOSE_REL(a.edge.emb_bwd_s - b.edge.emb_bwd_s, FP16(EMB));
#undef FP16
    /* launched by autograd's C++ engine: no Python host time per kernel */
    r.fw.host_op_s = 1.0;
    costs_pair(&r, &a, &b);
    ASSERT_TRUE(fabs(a.mix[LP_MIX_ATTN].bwd_s - b.mix[LP_MIX_ATTN].bwd_s) < 1e-2);
    /* one micro-batch per iteration: its gradient is stolen, nothing added */
    r.fw.host_op_s = 0;
    r.train.global_batch = 16;
    costs_pair(&r, &a, &b);
    ASSERT_TRUE(a.mix[LP_MIX_ATTN].bwd_s == b.mix[LP_MIX_ATTN].bwd_s);
    ASSERT_TRUE(a.edge.emb_bwd_s == b.edge.emb_bwd_s);
}

TEST(deepspeed_accumulation_only_where_the_code_has_it)
{
    static struct lp_run r;
    static struct lp_shape_cost a, b;
    /* ZeRO-2 moves the gradients into its buckets in hooks instead */
    ds_run(&r, LP_BF16);
    r.par.zero = 2;
    costs_pair(&r, &a, &b);
    ASSERT_TRUE(a.mix[LP_MIX_ATTN].bwd_s == b.mix[LP_MIX_ATTN].bwd_s);
    ASSERT_TRUE(a.ffn[LP_FFN_DENSE].bwd_s == b.ffn[LP_FFN_DENSE].bwd_s);
    /* one stage with tied embeddings: autograd sums the two uses before one
     * AccumulateGrad, charged once (with the head's linear) */
    ds_run(&r, LP_BF16);
    r.par.pp = 1;
    r.par.dp = 8;
    costs_pair(&r, &a, &b);
    ASSERT_TRUE(a.edge.emb_bwd_s == b.edge.emb_bwd_s);
    ASSERT_TRUE(a.edge.head_bwd_s > b.edge.head_bwd_s);
}

/* The shape-cost memo keys what the embedding's accumulation depends on:
 * a run on one stage after the same shapes on two (and back) gets its own
 * edges, as a fresh simulator gives them. */
static double iteration_s(struct lp_sim *sim, const struct lp_run *r)
{
    static struct lp_result res;
    lp_sim_run(sim, r, &res);
    return res.feasible ? res.iteration_time_s : -1.0;
}

TEST(deepspeed_memo_keys_one_stage)
{
    static struct lp_run one, two;
    ds_run(&one, LP_FP16);
    one.model.layers = 8;
    one.par = lp_fixture_unit_degrees();
    one.par.dp = 8;
    one.par.zero = 0;
    one.model.seq_len = 1024;
    one.model.hidden = 1024;
    one.model.heads = 16;
    one.model.kv_heads = 16;
    one.model.ffn_hidden = 4096;
    one.train.global_batch = 64;
    two = one;
    two.par.pp = 2;
    two.par.dp = 4;
    two.train.global_batch = 32; /* the same 8 micro-batches: the same accumulation share */
    struct lp_sim *fresh1 = lp_fixture_roofline_sim(&one), *fresh2 = lp_fixture_roofline_sim(&two);
    struct lp_sim *shared = lp_fixture_roofline_sim(&one);
    ASSERT_TRUE(fresh1 && fresh2 && shared);
    const double t1 = iteration_s(fresh1, &one), t2 = iteration_s(fresh2, &two);
    ASSERT_TRUE(t1 > 0 && t2 > 0);
    ASSERT_TRUE(iteration_s(shared, &two) == t2);
    ASSERT_TRUE(iteration_s(shared, &one) == t1);
    ASSERT_TRUE(iteration_s(shared, &two) == t2);
    lp_sim_destroy(&fresh1);
    lp_sim_destroy(&fresh2);
    lp_sim_destroy(&shared);
}

/* Megatron's FusedScaleMaskSoftmax (is_kernel_available) runs its kernel
 * only for 16-bit scores with 16 < sk <= 2048 (4096 in Megatron-Core), sq
 * and sk multiples of 4 and micro-batch x heads per TP rank a multiple of 4
 * (8 up to 128 keys); else the eager fp32 path of five kernels each way
 * (vTrain's TP 8 rows at micro-batch 1: 16 heads, 2 per rank). */
TEST(megatron_softmax_fallback)
{
    static struct lp_run r;
    ds_run(&r, LP_FP16);
    ASSERT_TRUE(lp_megatron_softmax_fused(&r, 12, 2048));
    ASSERT_TRUE(!lp_megatron_softmax_fused(&r, 6, 2048));
    ASSERT_TRUE(!lp_megatron_softmax_fused(&r, 2, 1024));
    ASSERT_TRUE(lp_megatron_softmax_fused(&r, 4, 1024));
    ASSERT_TRUE(!lp_megatron_softmax_fused(&r, 4, 128)); /* 8 rows a block up to 128 keys */
    ASSERT_TRUE(lp_megatron_softmax_fused(&r, 8, 128));
    ASSERT_TRUE(!lp_megatron_softmax_fused(&r, 12, 4096)); /* 2048 before Megatron-Core */
    ASSERT_TRUE(!lp_megatron_softmax_fused(&r, 12, 16));
    r.fw.kind = LP_FW_MEGATRON;
    ASSERT_TRUE(lp_megatron_softmax_fused(&r, 12, 4096));
    ASSERT_TRUE(!lp_megatron_softmax_fused(&r, 12, 8192));
    r.train.precision = LP_FP32;
    ASSERT_TRUE(!lp_megatron_softmax_fused(&r, 12, 2048));
    /* in a layer: 48 heads on TP 8 (6 a rank) fall back at micro-batch 1,
     * run the kernel at 2; per sequence the fallback's attention costs far
     * more (34 / 37 more bytes per score each way than the kernel's 3 / 4) */
    static struct lp_shape_cost one, two;
    ds_run(&r, LP_FP16);
    r.train.flash_attention = false;
    r.model.heads = r.model.kv_heads = 48;
    r.fw.host_op_s = 0;
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r.system.gpu);
    r.par.micro_batch = 1;
    lp_shape_cost_compute(&cm, &r, &one);
    r.par.micro_batch = 2;
    lp_shape_cost_compute(&cm, &r, &two);
    const struct lp_layer_cost *a = &one.mix[LP_MIX_ATTN], *b = &two.mix[LP_MIX_ATTN];
    ASSERT_TRUE(a->op_fwd[LP_OPC_ATTN] > 0.75 * b->op_fwd[LP_OPC_ATTN]);
    ASSERT_TRUE(a->op_bwd[LP_OPC_ATTN] > 0.75 * b->op_bwd[LP_OPC_ATTN]);
}

TH_MAIN(TH_CASE(deepspeed_bf16_update_hp_grads_by_hand),
        TH_CASE(deepspeed_fp16_accumulate_grad_by_hand),
        TH_CASE(deepspeed_accumulation_only_where_the_code_has_it),
        TH_CASE(deepspeed_memo_keys_one_stage), TH_CASE(megatron_softmax_fallback))
