/* PyTorch DDP and FSDP played out per wrapped unit (src/core/sim_dp.c)
 * against hand derivations on the roofline backend. */
#include <math.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "llmplan/sim.h"
#include "sim_internal.h"

/* A LLaMA-like 1B model, pure data parallelism over `dp` GPUs of 8 per node. */
static void small_run(struct lp_run *r, enum lp_framework fw, int zero, int dp)
{
    memset(r, 0, sizeof(*r));
    struct lp_model *m = &r->model;
    strcpy(m->name, "test-1b");
    m->layers = 16;
    m->hidden = 2048;
    m->heads = 16;
    m->kv_heads = 16;
    m->ffn_hidden = 5632;
    m->vocab = 32000;
    m->seq_len = 2048;
    m->ffn_act = LP_ACT_SWIGLU;
    m->norm = LP_NORM_RMSNORM;
    m->pos = LP_POS_ROTARY;
    struct lp_system *s = &r->system;
    strcpy(s->name, "test-cloud");
    strcpy(s->gpu.name, "test-a100");
    s->gpu.mem_bytes = 80.0 * 1024 * 1024 * 1024;
    s->gpu.mem_bw_Bps = 2.039e12;
    s->gpu.peak_flops[LP_BF16] = 312e12;
    s->gpu.peak_flops[LP_FP32] = 156e12;
    s->gpu.sms = 108;
    s->gpus_per_node = 8;
    s->intra.bw_Bps = 300e9;
    s->intra.latency_s = 3e-6;
    s->inter.bw_Bps = 6.25e9;
    s->inter.latency_s = 15e-6;
    s->price_per_gpu_hour_usd = 2.0;
    r->par = lp_fixture_unit_degrees();
    r->par.dp = dp;
    r->par.micro_batch = 4;
    r->par.zero = zero;
    r->train.global_batch = 4 * dp;
    r->train.precision = LP_BF16;
    r->train.flash_attention = true;
    lp_framework_defaults(fw, &r->fw);
}

/* the run, the roofline cost model of its GPU and its parameters (a root
 * unit of `root` parameters: embedding, head, final norm) */
static void fixture(struct lp_run *r, enum lp_framework fw, int zero, struct lp_cost_model *cm,
                    struct lp_params *pr, double root)
{
    small_run(r, fw, zero, 16);
    lp_cost_model_roofline(cm, &r->system.gpu);
    memset(pr, 0, sizeof(*pr));
    double h = r->model.hidden, f = r->model.ffn_hidden;
    pr->layer = 4 * h * h + 3 * h * f + 2 * h; /* QKV, out, gate, up, down, 2 RMSNorms */
    pr->emb = root / 2;
    pr->head = root / 2 - r->model.hidden; /* and the final norm */
    pr->stage_max = pr->stage0 = pr->stage_last = r->model.layers * pr->layer + root;
    pr->train0 = pr->train_last = pr->train_max = pr->stage_max;
    pr->dense_layers_per_stage = r->model.layers;
}

/* FSDP's hook work on the host per parameter tensor (pytorch/pytorch PR
 * #96958: 400 parameters, _use_unsharded_views 4.268 ms, _use_sharded_views
 * about 2.75 ms); the fixture's block has 6 tensors (2 RMSNorms, QKV, out,
 * gate+up, down), its root 3 (embedding, final norm, untied head). */
#define HU (4.268e-3 / 400.0)
#define HS (2.75e-3 / 400.0)
#define NT 6.0
#define NR 3.0

static double ag_s(const struct lp_cost_model *cm, const struct lp_run *r, double P, int n)
{
    return cm->ops->mem_s(cm, LP_MEM_COPY, P / n * 6.0) +
           lp_coll_time(cm, &r->system, LP_COLL_ALLGATHER, P * 2.0, n, 1, 0);
}

/* FSDP FULL_SHARD reduce of P parameters on n = 16 GPUs: predivide 4,
 * postdivide 4 (_get_gradient_predivide_factor(16) = 4), gradients reduced
 * in g bytes; with g = 4 (fp32 reduce_dtype) _post_backward_hook first
 * casts the bf16 unsharded gradient (2 + 4 bytes per parameter). */
static double rs_g(const struct lp_cost_model *cm, const struct lp_run *r, double P, int n,
                   double g)
{
    double S = P / n;
    double cast = g != 2.0 ? cm->ops->mem_s(cm, LP_MEM_COPY, P * (2.0 + g)) : 0.0;
    return cast + cm->ops->mem_s(cm, LP_MEM_COPY, P * 2.0 * g) +
           lp_coll_time(cm, &r->system, LP_COLL_REDUCESCATTER, P * g, n, 1, 0) +
           cm->ops->mem_s(cm, LP_MEM_COPY, S * 2.0 * g) +
           cm->ops->mem_s(cm, LP_MEM_COPY, S * (g + 4.0));
}

static double rs_s(const struct lp_cost_model *cm, const struct lp_run *r, double P, int n)
{
    return rs_g(cm, r, P, n, 2.0);
}

/* the at::cat of split_with_sizes_backward that builds a unit's flat bf16
 * gradient from its parameters' gradients (2 bytes read, 2 written) */
static double cat_s(const struct lp_cost_model *cm, double P)
{
    return cm->ops->mem_s(cm, LP_MEM_COPY, P * 4.0);
}

/* No compute at all: every collective is exposed, and FULL_SHARD gathers
 * each block twice and the root once, reduce-scatters each unit once. */
TEST(fsdp_all_exposed_without_compute)
{
    struct lp_run r;
    struct lp_cost_model cm;
    struct lp_params pr;
    fixture(&r, LP_FW_FSDP, 3, &cm, &pr, 130e6);
    struct lp_torch_pass ps = {.micro = 1};
    struct lp_torch_dp o;
    ASSERT_TRUE(lp_torch_dp_applies(&r));
    ASSERT_OK(lp_torch_dp(&cm, &r, &pr, &ps, &o, NULL));
    const int L = r.model.layers;
    double want = ag_s(&cm, &r, 130e6, 16) + 2 * L * ag_s(&cm, &r, pr.layer, 16) +
                  L * rs_s(&cm, &r, pr.layer, 16) + rs_s(&cm, &r, 130e6, 16);
    ASSERT_NEAR(o.comm_s, want, 1e-9);
    /* the only work on the compute stream: each unit's gradient cat */
    const double cat = L * cat_s(&cm, pr.layer) + cat_s(&cm, 130e6);
    /* the host's hooks delay the first gathers a little: the root's
     * unshard before anything, at most all of the hook work; what the
     * network does during the cats is hidden, nothing else */
    const double waits = o.fwd_extra_s + o.bwd_extra_s - cat + o.tail_s;
    ASSERT_NEAR(o.host_s, 2 * L * NT * (HU + HS) + NR * (HU + HS), 1e-9);
    ASSERT_TRUE(waits >= want - cat + NR * HU - 1e-12 && waits <= want + o.host_s + 1e-12);
    ASSERT_TRUE(o.hidden_s > 0.0 && o.hidden_s <= cat + 1e-12);
    ASSERT_NEAR(o.hidden_s, o.comm_s - waits, 1e-9);

    /* Composer's DEFAULT mixed precision (fp32 reduce_dtype): the bf16
     * gradient is cast to fp32 before each unit's reduction, which then
     * moves 4 bytes per parameter */
    r.fw.grad_fp32 = true;
    struct lp_torch_dp o32;
    ASSERT_OK(lp_torch_dp(&cm, &r, &pr, &ps, &o32, NULL));
    ASSERT_NEAR(o32.comm_s,
                ag_s(&cm, &r, 130e6, 16) + 2 * L * ag_s(&cm, &r, pr.layer, 16) +
                    L * rs_g(&cm, &r, pr.layer, 16, 4.0) + rs_g(&cm, &r, 130e6, 16, 4.0),
                1e-9);
}

/* Compute far longer than any collective: only what nothing can hide is
 * exposed: the root's and the first block's gathers before the forward, the
 * last block's gather before the backward (nothing to prefetch behind),
 * and the first block's and the root's reductions after it. */
TEST(fsdp_exposed_with_long_compute)
{
    struct lp_run r;
    struct lp_cost_model cm;
    struct lp_params pr;
    fixture(&r, LP_FW_FSDP, 3, &cm, &pr, 130e6);
    struct lp_torch_pass ps = {.layer_f = 1.0, .layer_b = 2.0, .micro = 1};
    struct lp_torch_dp o;
    ASSERT_OK(lp_torch_dp(&cm, &r, &pr, &ps, &o, NULL));
    double g = ag_s(&cm, &r, pr.layer, 16);
    /* the root's pre-forward hook runs before its gather is issued, the last
     * block's pre-backward hook before its gather */
    ASSERT_NEAR(o.fwd_extra_s, NR * HU + ag_s(&cm, &r, 130e6, 16) + g, 1e-9);
    /* and every unit's gradient cat lengthens the backward; the root's
     * runs while the first block's reduction does */
    const double cb = cat_s(&cm, pr.layer), cr = cat_s(&cm, 130e6);
    ASSERT_NEAR(o.bwd_extra_s, NT * HU + g + r.model.layers * cb + cr, 1e-9);
    const double rb = rs_s(&cm, &r, pr.layer, 16);
    ASSERT_TRUE(rb > cr);
    ASSERT_NEAR(o.tail_s, rb - cr + rs_s(&cm, &r, 130e6, 16), 1e-9);
    ASSERT_NEAR(o.hidden_s,
                o.comm_s - o.fwd_extra_s - (o.bwd_extra_s - r.model.layers * cb - cr) - o.tail_s,
                1e-9);

    /* SHARD_GRAD_OP keeps the gathered blocks for the backward: L fewer
     * gathers per micro-batch, and no wait before the backward */
    struct lp_torch_dp o2;
    r.par.zero = 2;
    ASSERT_OK(lp_torch_dp(&cm, &r, &pr, &ps, &o2, NULL));
    ASSERT_NEAR(o.comm_s - o2.comm_s, r.model.layers * g, 1e-9);
    ASSERT_NEAR(o2.bwd_extra_s, r.model.layers * cb + cr, 1e-9);

    /* HYBRID_SHARD gathers within the node (8 GPUs, NVLink) and all-reduces
     * each gradient shard across the 2 nodes */
    r.par.zero = 3;
    r.fw.hybrid_shard = true;
    struct lp_torch_dp o3;
    ASSERT_OK(lp_torch_dp(&cm, &r, &pr, &ps, &o3, NULL));
    ASSERT_NEAR(o3.fwd_extra_s, NR * HU + ag_s(&cm, &r, 130e6, 8) + ag_s(&cm, &r, pr.layer, 8),
                1e-9);
    ASSERT_TRUE(o3.fwd_extra_s < o.fwd_extra_s);
}

/* DDP: buckets fill in reverse registration order (the first 1 MiB, then
 * 25 MiB; a tensor is never split), are all-reduced as they fill, and only
 * the last micro-batch reduces (no_sync). With a long backward only the last
 * bucket (the one the embedding's gradient closes) and the copy back into
 * the gradients are exposed. */
TEST(ddp_buckets)
{
    struct lp_run r;
    struct lp_cost_model cm;
    struct lp_params pr;
    fixture(&r, LP_FW_DDP, 0, &cm, &pr, 130e6);
    struct lp_torch_pass ps = {.layer_f = 1.0, .layer_b = 2.0, .emb_b = 1.0, .micro = 3};
    struct lp_torch_dp o;
    ASSERT_TRUE(lp_torch_dp_applies(&r));
    ASSERT_OK(lp_torch_dp(&cm, &r, &pr, &ps, &o, NULL));
    const double G = 4.0, cap = 25.0 * 1024 * 1024;
    const double bytes = pr.stage_max * G; /* fp32 gradients under autocast */
    /* every byte is all-reduced once; every bucket but the last holds at
     * least a bucket's worth (the first 1 MiB), and no tensor is split */
    double a1 = lp_coll_time(&cm, &r.system, LP_COLL_ALLREDUCE, 1.0, 16, 1, 0);
    double per_byte =
        (lp_coll_time(&cm, &r.system, LP_COLL_ALLREDUCE, 1e9 + 1.0, 16, 1, 0) - a1) / 1e9;
    double nb = (o.comm_s - bytes * per_byte) / (a1 - per_byte);
    ASSERT_NEAR(nb, round(nb), 1e-6);
    ASSERT_TRUE(nb >= 2 && nb <= 2 + floor(bytes / cap) && nb <= 3 + 6 * r.model.layers);
    /* the tail: the last bucket holds the embedding (65 M parameters) and
     * less than one bucket more, then the copy back */
    double back = cm.ops->mem_s(&cm, LP_MEM_COPY, bytes * 2.0);
    double emb = pr.emb * G;
    ASSERT_TRUE(o.tail_s >= back + lp_coll_time(&cm, &r.system, LP_COLL_ALLREDUCE, emb, 16, 1, 0));
    ASSERT_TRUE(o.tail_s <=
                back + lp_coll_time(&cm, &r.system, LP_COLL_ALLREDUCE, emb + cap, 16, 1, 0));
    /* autocast's casts: every micro-batch; one bucket copy per gradient
     * tensor (head, final norm, 6 per block: 2 norms, QKV, out, gate+up,
     * down; embedding), the last micro-batch only */
    ASSERT_NEAR(o.fwd_extra_s, 3 * cm.ops->mem_s(&cm, LP_MEM_COPY, pr.stage_max * 6.0), 1e-9);
    double launch = cm.ops->mem_s(&cm, LP_MEM_COPY, 0.0);
    int tensors = 3 + 6 * r.model.layers;
    ASSERT_NEAR(o.bwd_extra_s,
                cm.ops->mem_s(&cm, LP_MEM_COPY, bytes * 2.0) + (tensors - 1) * launch, 1e-9);
    /* a slower network exposes more */
    r.system.inter.bw_Bps /= 4;
    struct lp_torch_dp slow;
    ASSERT_OK(lp_torch_dp(&cm, &r, &pr, &ps, &slow, NULL));
    ASSERT_TRUE(slow.tail_s > o.tail_s);
}

/* The whole simulator: which runs the per-unit model covers, and that
 * FULL_SHARD costs more than SHARD_GRAD_OP, which costs more than nothing
 * to shard on one GPU's worth of work. */
/* r simulated on the roofline backend of its GPU */
static int sim_roofline(const struct lp_run *r, struct lp_result *out)
{
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r->system.gpu);
    struct lp_sim *sim = NULL;
    if (lp_sim_create(&cm, &sim, NULL) != LP_OK) return -1;
    lp_sim_run(sim, r, out);
    lp_sim_destroy(&sim);
    return LP_OK;
}

TEST(simulate_uses_torch_dp)
{
    struct lp_run r;
    small_run(&r, LP_FW_FSDP, 3, 16);
    struct lp_result full, sgo;
    ASSERT_OK(sim_roofline(&r, &full));
    r.par.zero = 2;
    ASSERT_OK(sim_roofline(&r, &sgo));
    ASSERT_TRUE(full.feasible && sgo.feasible);
    ASSERT_TRUE(full.iteration_time_s > sgo.iteration_time_s);
    r.par.zero = 1; /* not an FSDP strategy: the generic ZeRO model */
    ASSERT_TRUE(!lp_torch_dp_applies(&r));
    r.par.zero = 3;
    r.par.pp = 2;
    ASSERT_TRUE(!lp_torch_dp_applies(&r));
}

/* Units too small to hide FSDP's hooks: a tiny block (hidden 64) on 2 GPUs
 * of one node, no compute. Its gathers take microseconds, the hooks' views
 * (PR #96958's per-tensor costs) about 105 us per block and pass: the
 * iteration is the host's, FULL_SHARD paying the views twice per block
 * (forward and backward), SHARD_GRAD_OP once; DDP has no such hooks. */
TEST(fsdp_hooks_bound_small_units)
{
    struct lp_run r;
    struct lp_cost_model cm;
    struct lp_params pr;
    fixture(&r, LP_FW_FSDP, 3, &cm, &pr, 1e5);
    r.model.hidden = 64;
    r.model.heads = 1;
    r.model.kv_heads = 1;
    r.model.ffn_hidden = 176;
    r.par.dp = 2;
    r.train.global_batch = 8;
    pr.layer = 4 * 64.0 * 64 + 3 * 64.0 * 176 + 2 * 64;
    pr.stage_max = pr.stage0 = pr.stage_last = r.model.layers * pr.layer + 1e5;
    struct lp_torch_pass ps = {.micro = 1};
    struct lp_torch_dp o3, o2;
    ASSERT_OK(lp_torch_dp(&cm, &r, &pr, &ps, &o3, NULL));
    const int L = r.model.layers;
    ASSERT_NEAR(o3.host_s, 2 * L * NT * (HU + HS) + NR * (HU + HS), 1e-9);
    const double e3 = o3.fwd_extra_s + o3.bwd_extra_s + o3.tail_s;
    ASSERT_TRUE(o3.comm_s < 0.2 * o3.host_s);
    ASSERT_TRUE(e3 >= 0.9 * o3.host_s && e3 <= o3.host_s + o3.comm_s);
    r.par.zero = 2;
    ASSERT_OK(lp_torch_dp(&cm, &r, &pr, &ps, &o2, NULL));
    ASSERT_NEAR(o2.host_s, L * NT * (HU + HS) + NR * (HU + HS), 1e-9);
    ASSERT_TRUE(o2.fwd_extra_s + o2.bwd_extra_s + o2.tail_s < 0.6 * e3);
}

/* HYBRID_SHARD's replica all-reduce runs on its own stream over the links
 * across nodes (FSDP1 _reduce_grad: state._all_reduce_stream), so with a
 * long backward the tail is the first block's reduce-scatter in the node,
 * then the later of the root's reduce-scatter and the block's all-reduce,
 * then the root's all-reduce, less the root's gradient cat that runs
 * meanwhile: not the four in a row. */
TEST(hsdp_all_reduce_on_its_own_stream)
{
    struct lp_run r;
    struct lp_cost_model cm;
    struct lp_params pr;
    fixture(&r, LP_FW_FSDP, 3, &cm, &pr, 130e6);
    r.fw.hybrid_shard = true; /* 8 per node: shards of 8, replicas of 2 */
    struct lp_torch_pass ps = {.layer_f = 1.0, .layer_b = 2.0, .micro = 1};
    struct lp_torch_dp o;
    ASSERT_OK(lp_torch_dp(&cm, &r, &pr, &ps, &o, NULL));
    /* world 16: predivide 4 before the reduce-scatter, postdivide 4 after
     * the all-reduce, then the cast to the fp32 shard */
    double rs[2], ar[2];
    const double P[2] = {pr.layer, 130e6};
    for (int i = 0; i < 2; i++) {
        const double S = P[i] / 8;
        rs[i] = cm.ops->mem_s(&cm, LP_MEM_COPY, P[i] * 4.0) +
                lp_coll_time(&cm, &r.system, LP_COLL_REDUCESCATTER, P[i] * 2.0, 8, 1, 0);
        ar[i] = lp_coll_time(&cm, &r.system, LP_COLL_ALLREDUCE, S * 2.0, 2, 8, 0) +
                cm.ops->mem_s(&cm, LP_MEM_COPY, S * 4.0) + cm.ops->mem_s(&cm, LP_MEM_COPY, S * 6.0);
    }
    const double cr = cat_s(&cm, 130e6);
    ASSERT_TRUE(rs[0] > cr);
    ASSERT_NEAR(o.tail_s, rs[0] + fmax(rs[1], ar[0]) + ar[1] - cr, 1e-9);
    ASSERT_TRUE(o.tail_s < rs[0] + ar[0] + rs[1] + ar[1] - cr - 1e-6);
}

/* FSDP2 (fully_shard, torchtitan's fp32 reduce): two copy-in kernels of the
 * shard before each all-gather (the cast to bf16, the copy into the
 * all-gather input), a copy-out of each gathered unit on the compute
 * stream, the reduce-scatter copy-in (bf16 gradients chunk-cat into fp32)
 * at the end of each unit's backward, no divide kernels (ReduceOp.AVG) and
 * no cast after the fp32 reduce-scatter; no flat-parameter cat, no hooks
 * counted. Long compute: the root's and the first block's gathers before
 * the forward, the last block's before the backward, and the tail as
 * FSDP1's. */
TEST(fsdp2_copies_by_hand)
{
    struct lp_run r;
    struct lp_cost_model cm;
    struct lp_params pr;
    fixture(&r, LP_FW_FSDP2, 3, &cm, &pr, 130e6);
    ASSERT_TRUE(r.fw.grad_fp32);
    struct lp_torch_pass ps = {.layer_f = 1.0, .layer_b = 2.0, .micro = 1};
    struct lp_torch_dp o;
    ASSERT_TRUE(lp_torch_dp_applies(&r));
    ASSERT_OK(lp_torch_dp(&cm, &r, &pr, &ps, &o, NULL));
    const int L = r.model.layers;
    double ag[2], out[2], cat[2], rs[2];
    const double P[2] = {pr.layer, 130e6};
    for (int i = 0; i < 2; i++) {
        const double S = P[i] / 16;
        ag[i] = cm.ops->mem_s(&cm, LP_MEM_COPY, S * 6.0) +
                cm.ops->mem_s(&cm, LP_MEM_COPY, S * 4.0) +
                lp_coll_time(&cm, &r.system, LP_COLL_ALLGATHER, P[i] * 2.0, 16, 1, 0);
        out[i] = cm.ops->mem_s(&cm, LP_MEM_COPY, P[i] * 4.0);
        cat[i] = cm.ops->mem_s(&cm, LP_MEM_COPY, P[i] * 6.0);
        rs[i] = lp_coll_time(&cm, &r.system, LP_COLL_REDUCESCATTER, P[i] * 4.0, 16, 1, 0);
    }
    ASSERT_NEAR(o.comm_s, ag[1] + 2 * L * ag[0] + L * rs[0] + rs[1], 1e-9);
    ASSERT_NEAR(o.host_s, 0.0, 1e-15);
    ASSERT_TRUE(ag[0] > out[1]);
    ASSERT_NEAR(o.fwd_extra_s, ag[1] + ag[0] + L * out[0], 1e-9);
    ASSERT_NEAR(o.bwd_extra_s, ag[0] + L * (out[0] + cat[0]) + cat[1], 1e-9);
    ASSERT_TRUE(rs[0] > cat[1]);
    ASSERT_NEAR(o.tail_s, rs[0] - cat[1] + rs[1], 1e-9);
    /* the same run under FSDP1 has neither copy-out nor copy-in kernels */
    struct lp_run r1 = r;
    lp_framework_defaults(LP_FW_FSDP1, &r1.fw);
    r1.fw.grad_fp32 = true;
    struct lp_torch_dp o1;
    ASSERT_OK(lp_torch_dp(&cm, &r1, &pr, &ps, &o1, NULL));
    ASSERT_TRUE(o1.fwd_extra_s < o.fwd_extra_s);
    ASSERT_TRUE(o1.host_s > 0.0); /* FSDP1's views (PR #96958) */
}

/* Eager PyTorch's host time per kernel (config.c lp_eager_host_op_s, 5.03
 * us, derived from published per-op measurements) is charged to DDP, FSDP1
 * and FSDP2 runs: a small model's layers show it as exposed overhead, which
 * is zero and the iteration shorter with no host time. */
TEST(eager_host_time_charged)
{
    static const enum lp_framework fws[] = {LP_FW_DDP, LP_FW_FSDP1, LP_FW_FSDP2};
    for (int i = 0; i < 3; i++) {
        struct lp_run r;
        small_run(&r, fws[i], fws[i] == LP_FW_DDP ? 0 : 3, 16);
        r.model.hidden = 512;
        r.model.heads = 8;
        r.model.kv_heads = 8;
        r.model.ffn_hidden = 1408;
        r.model.seq_len = 512;
        ASSERT_NEAR(r.fw.host_op_s, lp_eager_host_op_s(), 1e-15);
        struct lp_result eager, none;
        ASSERT_OK(sim_roofline(&r, &eager));
        r.fw.host_op_s = 0.0;
        ASSERT_OK(sim_roofline(&r, &none));
        ASSERT_TRUE(eager.feasible && none.feasible);
        ASSERT_TRUE(eager.layer_fwd_s[LP_OPC_OVERHEAD] > 0.0);
        ASSERT_TRUE(eager.layer_bwd_s[LP_OPC_OVERHEAD] > 0.0);
        ASSERT_NEAR(none.layer_fwd_s[LP_OPC_OVERHEAD] + none.layer_bwd_s[LP_OPC_OVERHEAD], 0.0,
                    1e-15);
        ASSERT_TRUE(eager.iteration_time_s > none.iteration_time_s);
    }
}

TH_MAIN(TH_CASE(eager_host_time_charged), TH_CASE(fsdp_hooks_bound_small_units),
        TH_CASE(fsdp_all_exposed_without_compute), TH_CASE(fsdp_exposed_with_long_compute),
        TH_CASE(ddp_buckets), TH_CASE(simulate_uses_torch_dp),
        TH_CASE(hsdp_all_reduce_on_its_own_stream), TH_CASE(fsdp2_copies_by_hand))
