/* What the `hf` framework runs around its attention kernel and in its eager
 * MoE loop (sim_workload.c hf_attention_glue, rope_eager, EAGER_SYNCS_PER_
 * EXPERT), checked against hand computations on the roofline backend
 * (cost_roofline.c: every memory-bound kernel costs 5 us + bytes / (0.85
 * bw)). The model: h 1024, 16 heads and 4 kv heads of 64 (GQA, n_rep 4),
 * rotary, micro-batch 2 of 512 tokens, T = 1024; per layer q is xq = T 16 64
 * elements, k and v xk = T 4 64, 2 bytes each.
 *  - rotary (Transformers apply_rotary_pos_emb, eager): the position max and
 *    its .item(), cos and sin gathered (T (64 2 2 + 8)), then per tensor of
 *    x elements forward mul
 *    2x, neg 1x, cat 2x, mul 2x, add 3x, backward 2x, 2x, 1x, four
 *    slice_backward kernels of 1x, two adds of 3x (times 2 bytes);
 *  - a padded batch (flash-attn 2.5.6's varlen path): five small kernels of
 *    8 bytes per token (_get_unpad_data), two synchronisations, k and v
 *    copied to (b s, heads, d) (2 xq 2 bytes each), three index_first_axis
 *    gathers (2 xq 2) whose backward is zeros (xq 2) + scatter (2 xq 2),
 *    pad_input zeros (xq 2) + index_put (2 xq 2 + 8 T), backward a gather
 *    (2 xq 2 + 8 T);
 *  - each expert of the eager loop synchronises six times (where, two
 *    .tolist(), three list indexings, each a blocking copy); of the
 *    SwitchMLP loop (moe_impl "switch", BlackMamba) once (nonzero).
 * Synchronisations are read as the forward's exposed host time with a host
 * time per op of 1 ns and a host overlap exponent of 1000 (the kernels hide
 * every launch, so the exposed host time is the synchronisations'). */
#include <math.h>

#include "fixtures.h"
#include "llmplan/sim.h"
#include "harness.h"
#include "sim_internal.h"

#define CLOSE(a, b) ASSERT_TRUE(fabs((a) - (b)) <= 1e-9 * fabs(b) + 1e-15)
#define HOST 1e-9

static void hf_run(struct lp_run *r)
{
    lp_fixture_gpt3_run(r);
    struct lp_model *m = &r->model;
    m->layers = 2;
    m->hidden = 1024;
    m->heads = 16;
    m->kv_heads = 4;
    m->ffn_hidden = 4096;
    m->seq_len = 512;
    m->vocab = 32000;
    m->ffn_act = LP_ACT_SWIGLU;
    m->norm = LP_NORM_RMSNORM;
    m->pos = LP_POS_ROTARY;
    m->tied_embeddings = false;
    m->bias = false;
    m->dropout = false;
    r->system.gpu.sustained_frac = 1.0;
    r->par = lp_fixture_unit_degrees();
    r->par.micro_batch = 2;
    r->par.recompute = LP_RECOMPUTE_FULL;
    r->train.global_batch = 2;
    lp_framework_defaults(LP_FW_HF, &r->fw);
    r->fw.host_op_s = HOST;
    r->fw.host_overlap = 1000.0;
    /* one query length, a multiple of the collator's 8: no padding */
    r->train.dataset.queries = 100;
    r->train.dataset.epochs = 1;
    r->train.dataset.nbins = 1;
    r->train.dataset.pad_multiple = 8;
    r->train.dataset.len[0] = 512;
    r->train.dataset.frac[0] = 1.0;
}

static void costs(const struct lp_run *r, struct lp_shape_cost *sc)
{
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r->system.gpu);
    lp_shape_cost_compute(&cm, r, sc);
}

/* The framework's defaults, with a host time too small to matter and no
 * overlap limit: the kernels' GPU time alone */
static void framework(struct lp_run *r, enum lp_framework k)
{
    lp_framework_defaults(k, &r->fw);
    r->fw.host_op_s = HOST;
    r->fw.host_overlap = 1000.0;
}

static double mem(const struct lp_run *r, double bytes)
{
    return 5e-6 + bytes / (r->system.gpu.mem_bw_Bps * 0.85);
}

static double rope_fwd(const struct lp_run *r, double x)
{
    return mem(r, 4 * x) + mem(r, 2 * x) + mem(r, 4 * x) + mem(r, 4 * x) + mem(r, 6 * x);
}

static double rope_bwd(const struct lp_run *r, double x)
{
    return mem(r, 4 * x) + mem(r, 4 * x) + mem(r, 2 * x) + 4 * mem(r, 2 * x) + 2 * mem(r, 6 * x);
}

TEST(dataset_padding)
{
    static struct lp_run r;
    hf_run(&r);
    ASSERT_TRUE(!lp_sim_batch_padded(&r));
    r.train.dataset.len[0] = 79; /* padded to 80 */
    ASSERT_TRUE(lp_sim_batch_padded(&r));
    r.train.dataset.pad_multiple = 1;
    ASSERT_TRUE(!lp_sim_batch_padded(&r));
    r.train.dataset.nbins = 2; /* several lengths */
    ASSERT_TRUE(lp_sim_batch_padded(&r));
    r.train.dataset.nbins = 0; /* no dataset */
    ASSERT_TRUE(!lp_sim_batch_padded(&r));
}

TEST(hf_attention_varlen)
{
    static struct lp_run r;
    static struct lp_shape_cost plain, padded;
    hf_run(&r);
    costs(&r, &plain);
    r.train.dataset.nbins = 2;
    r.train.dataset.len[0] = 256;
    r.train.dataset.len[1] = 512;
    r.train.dataset.frac[0] = r.train.dataset.frac[1] = 0.5;
    costs(&r, &padded);
    const struct lp_layer_cost *p = &padded.mix[LP_MIX_ATTN], *u = &plain.mix[LP_MIX_ATTN];
    const double T = 1024, xq = T * 16 * 64;
    const double fwd = 5 * mem(&r, 8 * T) + 2 * mem(&r, 4 * xq) + 3 * mem(&r, 4 * xq) +
                       mem(&r, 2 * xq) + mem(&r, 4 * xq + 8 * T);
    const double bwd = 3 * (mem(&r, 2 * xq) + mem(&r, 4 * xq)) + mem(&r, 4 * xq + 8 * T);
    CLOSE(p->op_fwd[LP_OPC_MEM] - u->op_fwd[LP_OPC_MEM], fwd);
    CLOSE(p->op_bwd[LP_OPC_MEM] - u->op_bwd[LP_OPC_MEM], bwd);
    /* the rotary's .item() always; _get_unpad_data's nonzero and .item() */
    CLOSE(u->op_fwd[LP_OPC_OVERHEAD], 1 * HOST);
    CLOSE(p->op_fwd[LP_OPC_OVERHEAD], 3 * HOST);
    /* the recomputed forward synchronises again */
    CLOSE(p->full_s - u->full_s, p->fwd_s - u->fwd_s);
}

TEST(hf_rotary_eager)
{
    static struct lp_run r;
    static struct lp_shape_cost rot, learned;
    hf_run(&r);
    costs(&r, &rot);
    r.model.pos = LP_POS_LEARNED;
    costs(&r, &learned);
    const struct lp_layer_cost *a = &rot.mix[LP_MIX_ATTN], *l = &learned.mix[LP_MIX_ATTN];
    const double T = 1024, xq = T * 16 * 64, xk = T * 4 * 64;
    const double fwd =
        mem(&r, 2 * 16.0) + 2 * mem(&r, T * (256 + 8)) + rope_fwd(&r, xq) + rope_fwd(&r, xk);
    CLOSE(a->op_fwd[LP_OPC_MEM] - l->op_fwd[LP_OPC_MEM], fwd);
    CLOSE(a->op_bwd[LP_OPC_MEM] - l->op_bwd[LP_OPC_MEM], rope_bwd(&r, xq) + rope_bwd(&r, xk));
    CLOSE(a->op_fwd[LP_OPC_OVERHEAD] - l->op_fwd[LP_OPC_OVERHEAD], HOST);
}

TEST(hf_moe_eager_syncs)
{
    static struct lp_run r;
    static struct lp_shape_cost sc;
    hf_run(&r);
    r.model.moe.experts = 8;
    r.model.moe.top_k = 2;
    r.model.moe.ffn_hidden = 2048;
    r.model.moe.layer_freq = 1;
    costs(&r, &sc);
    CLOSE(sc.ffn[LP_FFN_MOE].op_fwd[LP_OPC_OVERHEAD], 8 * 6 * HOST);
    /* BlackMamba's SwitchMLP loop: nonzero only; the same kernels */
    static struct lp_shape_cost sw;
    r.fw.moe_impl = LP_MOE_SWITCH;
    costs(&r, &sw);
    CLOSE(sw.ffn[LP_FFN_MOE].op_fwd[LP_OPC_OVERHEAD], 8 * 1 * HOST);
    CLOSE(sw.ffn[LP_FFN_MOE].op_fwd[LP_OPC_MEM], sc.ffn[LP_FFN_MOE].op_fwd[LP_OPC_MEM]);
}

/* The backward of the eager loop's two list indexings per expert
 * (hidden_states[None, top_x_list], routing_weights[top_x_list, idx_list]):
 * autograd's IndexBackward0 zero-fills the whole indexed tensor before its
 * index_put, and the engine adds that whole-size gradient to the indexed
 * tensor's (torch 2.1 derivatives.yaml index.Tensor; input_buffer.cpp
 * accumulate). By hand, 2 experts of top-2 (dense) against 1 of top-1 on
 * the same T tokens: every expert routes all T tokens, so the difference is
 * one expert on T tokens (its seven backward kernels and its adapters' three
 * scaling gradients) and the router's kernels over twice the experts, plus
 * the whole-tensor terms: a zero-fill (T h 2) and an add (3 T h 2) of the
 * hidden states per expert, and of the (T, k) routing weights 2 experts x
 * (T 2 2, 3 T 2 2) against 1 x (T 2, 3 T 2). LoRA rank 16 on a 16-bit base
 * (no dequantisation, no weight gradient of the base). */
TEST(hf_moe_eager_index_backward)
{
    static struct lp_run r;
    static struct lp_shape_cost one, two;
    hf_run(&r);
    r.train.lora_rank = 16;
    r.train.lora_base_bits = 16;
    r.model.moe.experts = 1;
    r.model.moe.top_k = 1;
    r.model.moe.ffn_hidden = 2048;
    r.model.moe.layer_freq = 1;
    costs(&r, &one);
    r.model.moe.experts = 2;
    r.model.moe.top_k = 2;
    costs(&r, &two);
    const double T = 1024, h = 1024, f = 2048, e = 2;
    const double expert = 2 * mem(&r, 3 * T * f * e) + mem(&r, 3 * T * f * e) +
                          mem(&r, 2 * T * h * e) + mem(&r, 3 * T * h * e) + mem(&r, 2 * T * h * e) +
                          mem(&r, 3 * T * h * e) + 2 * mem(&r, 2 * T * f * e) +
                          mem(&r, 2 * T * h * e);
    const double router = mem(&r, 2 * T * 2 * e) - mem(&r, 2 * T * 1 * e) + mem(&r, 4 * T * 2) -
                          mem(&r, 4 * T) + 2 * (mem(&r, 12 * T * 2) - mem(&r, 12 * T));
    const double whole = mem(&r, T * h * e) + mem(&r, 3 * T * h * e) +
                         2 * (mem(&r, T * 2 * e) + mem(&r, 3 * T * 2 * e)) -
                         (mem(&r, T * e) + mem(&r, 3 * T * e));
    CLOSE(two.ffn[LP_FFN_MOE].op_bwd[LP_OPC_MEM] - one.ffn[LP_FFN_MOE].op_bwd[LP_OPC_MEM],
          expert + router + whole);
}

/* torchtitan's eager model under fsdp2 (fused_kernels false by default;
 * torchtitan_attention_glue, model.py @9dec370): per rotary tensor of x
 * elements .float() (2 + 4 bytes), the complex multiply (8) and .type_as
 * (4 + 2), the same three backward; no synchronisation. Its FFN's silu (2 x
 * 2) and multiply (3 x 2) forward, two multiplies (3 x 2) and silu's
 * backward (3 x 2) where a fused SwiGLU kernel runs once each way (3 x 2,
 * 5 x 2). */
TEST(torchtitan_eager_glue)
{
    static struct lp_run r;
    static struct lp_shape_cost rot, learned, hf;
    hf_run(&r);
    /* the fused SwiGLU to compare with, both under LayerNorm (a fused
     * kernel either way) so that only the gated MLP differs */
    r.fw.fused_kernels = true;
    r.model.norm = LP_NORM_LAYERNORM;
    costs(&r, &hf);
    static struct lp_shape_cost ln;
    framework(&r, LP_FW_FSDP2);
    costs(&r, &ln);
    r.model.norm = LP_NORM_RMSNORM;
    framework(&r, LP_FW_FSDP2);
    ASSERT_TRUE(!r.fw.fused_kernels);
    costs(&r, &rot);
    r.model.pos = LP_POS_LEARNED;
    costs(&r, &learned);
    const struct lp_layer_cost *a = &rot.mix[LP_MIX_ATTN], *l = &learned.mix[LP_MIX_ATTN];
    const double T = 1024, xq = T * 16 * 64, xk = T * 4 * 64;
    const double one = mem(&r, 6 * xq) + mem(&r, 8 * xq) + mem(&r, 6 * xq) + mem(&r, 6 * xk) +
                       mem(&r, 8 * xk) + mem(&r, 6 * xk);
    CLOSE(a->op_fwd[LP_OPC_MEM] - l->op_fwd[LP_OPC_MEM], one);
    CLOSE(a->op_bwd[LP_OPC_MEM] - l->op_bwd[LP_OPC_MEM], one);
    CLOSE(a->op_fwd[LP_OPC_OVERHEAD], 0.0);
    const double x = T * 4096;
    const struct lp_layer_cost *t = &ln.ffn[LP_FFN_DENSE], *h = &hf.ffn[LP_FFN_DENSE];
    CLOSE(t->op_fwd[LP_OPC_MEM] - h->op_fwd[LP_OPC_MEM], mem(&r, 4 * x));
    /* and the add of w1's and w3's input gradients (T x h) */
    CLOSE(t->op_bwd[LP_OPC_MEM] - h->op_bwd[LP_OPC_MEM],
          3 * mem(&r, 6 * x) - mem(&r, 10 * x) + mem(&r, 3 * T * 1024 * 2));
}

/* fms-fsdp's LLaMA under fsdp1 (fused_kernels false by default,
 * foundation-model-stack f29e546d): its rotary multiplies q.float() viewed
 * as pairs by the 2 x 2 rotation (.mul to two fp32 values per element: 4 +
 * 8 bytes) and sums them (.sum(5): 8 + 4), where torchtitan's complex
 * multiply is one kernel of 8: per rotary tensor 2 x 12 - 8 more bytes each
 * way, one more kernel. Its norms and gated MLP are torchtitan's (eager
 * RMSNorm, silu then multiply), and both differ from the fused defaults. */
TEST(fms_eager_glue)
{
    static struct lp_run r;
    static struct lp_shape_cost fms, tt, fused, fms_ln;
    hf_run(&r);
    framework(&r, LP_FW_FSDP1);
    ASSERT_TRUE(!r.fw.fused_kernels);
    costs(&r, &fms);
    r.fw.kind = LP_FW_FSDP2;
    costs(&r, &tt);
    r.fw.kind = LP_FW_FSDP1;
    r.model.norm = LP_NORM_LAYERNORM; /* the norms alike, the gated MLP apart */
    costs(&r, &fms_ln);
    r.fw.fused_kernels = true;
    costs(&r, &fused);
    const double T = 1024, xq = T * 16 * 64, xk = T * 4 * 64;
    const double more =
        2 * mem(&r, 12 * xq) - mem(&r, 8 * xq) + 2 * mem(&r, 12 * xk) - mem(&r, 8 * xk);
    const struct lp_layer_cost *a = &fms.mix[LP_MIX_ATTN], *t = &tt.mix[LP_MIX_ATTN];
    /* and, once per layer forward, its positions: arange, repeat, max, + s
     * and the gather of the fp32 rotations (T x d x 8 bytes) */
    const double pos = mem(&r, T * 8) + mem(&r, 2 * T * 8) + mem(&r, 2 * 8) + mem(&r, 16) +
                       mem(&r, 2 * T * 64 * 8 + T * 8);
    CLOSE(a->op_fwd[LP_OPC_MEM] - t->op_fwd[LP_OPC_MEM], more + pos);
    CLOSE(a->op_bwd[LP_OPC_MEM] - t->op_bwd[LP_OPC_MEM], more);
    const double x = T * 4096;
    const struct lp_layer_cost *e = &fms_ln.ffn[LP_FFN_DENSE], *u = &fused.ffn[LP_FFN_DENSE];
    CLOSE(e->op_fwd[LP_OPC_MEM] - u->op_fwd[LP_OPC_MEM], mem(&r, 4 * x));
    CLOSE(e->op_bwd[LP_OPC_MEM] - u->op_bwd[LP_OPC_MEM],
          3 * mem(&r, 6 * x) - mem(&r, 10 * x) + mem(&r, 3 * T * 1024 * 2));
    ASSERT_TRUE(fms.mix[LP_MIX_ATTN].op_fwd[LP_OPC_MEM] >
                fused.mix[LP_MIX_ATTN].op_fwd[LP_OPC_MEM]);
}

/* flash-attn's FusedMLP (framework option fused_mlp, a GELU MLP): no
 * activation kernel either way; fc1's epilogue writes GELU's input (T x f
 * x 2 bytes) and fc2's data-gradient epilogue reads it back, each at the
 * copy rate without a launch of its own (GEMM time). */
TEST(fused_mlp_epilogue)
{
    static struct lp_run r;
    static struct lp_shape_cost plain, fused;
    hf_run(&r);
    framework(&r, LP_FW_DDP);
    r.model.ffn_act = LP_ACT_GELU;
    r.model.norm = LP_NORM_LAYERNORM;
    costs(&r, &plain);
    r.fw.fused_mlp = true;
    costs(&r, &fused);
    const double x = 1024.0 * 4096;
    const double io = mem(&r, 2 * x) - mem(&r, 0);
    const struct lp_layer_cost *p = &plain.ffn[LP_FFN_DENSE], *q = &fused.ffn[LP_FFN_DENSE];
    CLOSE(p->op_fwd[LP_OPC_MEM] - q->op_fwd[LP_OPC_MEM], mem(&r, 2 * x * 2));
    CLOSE(p->op_bwd[LP_OPC_MEM] - q->op_bwd[LP_OPC_MEM], mem(&r, 3 * x * 2));
    CLOSE(q->op_fwd[LP_OPC_GEMM] - p->op_fwd[LP_OPC_GEMM], io);
    CLOSE(q->op_bwd[LP_OPC_GEMM] - p->op_bwd[LP_OPC_GEMM], io);
    /* a gated MLP has no such path: the option changes nothing there */
    r.model.ffn_act = LP_ACT_SWIGLU;
    costs(&r, &fused);
    r.fw.fused_mlp = false;
    costs(&r, &plain);
    CLOSE(fused.ffn[LP_FFN_DENSE].fwd_s, plain.ffn[LP_FFN_DENSE].fwd_s);
}

/* PyTorch 2.1+'s non-reentrant checkpointing stops the recomputation at
 * the last saved tensor: a full recomputation of a dense block under
 * fsdp1 / fsdp2 (NO_REENTRANT) redoes everything but fc2's forward GEMM
 * (w2: T x h x f, packed before its kernel runs). Reentrant checkpointing,
 * ckpt_early_stop false (PyTorch < 2.1), dropout, a multi-layer checkpoint
 * and a LoRA run (the adapter's mm after the base GEMM saves last) redo the
 * whole forward; nothing else in the layer changes. */
TEST(ckpt_early_stop_down_proj)
{
    static struct lp_run r;
    static struct lp_shape_cost stop, whole;
    hf_run(&r);
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r.system.gpu);
    const double T = 1024, w2 = cm.ops->gemm_s(&cm, LP_GEMM_FWD, LP_BF16, T, 1024, 4096);
    for (int k = 0; k < 2; k++) {
        framework(&r, k ? LP_FW_FSDP2 : LP_FW_FSDP1);
        ASSERT_TRUE(r.fw.ckpt_early_stop && !r.fw.ckpt_reentrant);
        costs(&r, &stop);
        r.fw.ckpt_early_stop = false;
        costs(&r, &whole);
        const struct lp_layer_cost *s = &stop.ffn[LP_FFN_DENSE], *u = &whole.ffn[LP_FFN_DENSE];
        CLOSE(u->full_s - s->full_s, w2);
        CLOSE(u->fwd_s, s->fwd_s);
        CLOSE(u->bwd_s, s->bwd_s);
        CLOSE(stop.mix[LP_MIX_ATTN].full_s, whole.mix[LP_MIX_ATTN].full_s);
    }
    framework(&r, LP_FW_FSDP2);
    r.fw.ckpt_reentrant = true;
    costs(&r, &stop);
    CLOSE(stop.ffn[LP_FFN_DENSE].full_s, whole.ffn[LP_FFN_DENSE].full_s);
    /* Composer's fsdp and Megatron: reentrant by default */
    framework(&r, LP_FW_FSDP);
    ASSERT_TRUE(r.fw.ckpt_reentrant);
    framework(&r, LP_FW_MEGATRON);
    ASSERT_TRUE(r.fw.ckpt_reentrant);
    /* dropout after fc2 (its mask saved after it runs), a checkpoint of two
     * layers (only its last stops early), a LoRA run: the whole forward */
    for (int k = 0; k < 3; k++) {
        framework(&r, LP_FW_FSDP2);
        r.model.dropout = k == 0;
        r.par.recompute_layers = k == 1 ? 2 : 1;
        r.train.lora_rank = k == 2 ? 16 : 0;
        costs(&r, &stop);
        r.fw.ckpt_early_stop = false;
        costs(&r, &whole);
        CLOSE(stop.ffn[LP_FFN_DENSE].full_s, whole.ffn[LP_FFN_DENSE].full_s);
    }
}

/* The simulator's layer-cost memo keys on what the early stop depends on: a
 * run that differs from a cached one only in its checkpoint grouping
 * (recompute_layers) gets its own costs, as a fresh simulator gives them. */
TEST(ckpt_early_stop_memo_key)
{
    static struct lp_run r;
    hf_run(&r);
    framework(&r, LP_FW_FSDP2);
    r.par.dp = 2;
    r.par.zero = 3;
    r.train.global_batch = 4;
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r.system.gpu);
    struct lp_sim *warm = NULL, *fresh = NULL;
    ASSERT_TRUE(lp_sim_create(&cm, &warm, NULL) == LP_OK);
    ASSERT_TRUE(lp_sim_create(&cm, &fresh, NULL) == LP_OK);
    struct lp_result one, two, two_fresh;
    lp_sim_run(warm, &r, &one); /* fills the memo with the early stop applied */
    r.par.recompute_layers = 2;
    lp_sim_run(warm, &r, &two);
    lp_sim_run(fresh, &r, &two_fresh);
    ASSERT_TRUE(one.feasible && two.feasible && two_fresh.feasible);
    ASSERT_TRUE(two.iteration_time_s == two_fresh.iteration_time_s);
    ASSERT_TRUE(two.iteration_time_s > one.iteration_time_s); /* fc2 redone in layer 1 of 2 */
    lp_sim_destroy(&warm);
    lp_sim_destroy(&fresh);
}

TH_MAIN(TH_CASE(dataset_padding), TH_CASE(hf_attention_varlen), TH_CASE(hf_rotary_eager),
        TH_CASE(hf_moe_eager_syncs), TH_CASE(hf_moe_eager_index_backward),
        TH_CASE(torchtitan_eager_glue), TH_CASE(fms_eager_glue), TH_CASE(fused_mlp_epilogue),
        TH_CASE(ckpt_early_stop_down_proj), TH_CASE(ckpt_early_stop_memo_key))
