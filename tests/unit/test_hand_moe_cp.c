/* MoE, EP and CP figures of the workload model checked against hand
 * computations on the roofline backend (cost_roofline.c: every operator
 * costs launch + max(flops / (peak eff_c), bytes / (bw eff_m)), every
 * collective runs at 0.8 of the link):
 *   - the EP all-to-all of a dispatch and a combine (sim_workload.c
 *     dispatch_time, sim_comm.c lp_coll_time), inside a node and across two;
 *   - the local experts' GEMMs (te tokens each, te = T ep top_k / E x load);
 *   - the CP ring exchange of K and V (cp - 1 steps of the local block,
 *     hidden behind the attention core up to its length);
 *   - the TP collectives a dense MLP's backward leaves exposed (Megatron's
 *     LinearWithGradAccumulationAndAsyncCommunication: with SP the input's
 *     all-gather beside fc1's data gradient and the reduce-scatter beside
 *     its weight gradient, fc2's output gradient gathered synchronously;
 *     without SP the all-reduce beside the weight gradient, if async);
 *   - the GPT-OSS experts' clamp and per-expert bias kernels and the
 *     all-to-all dispatcher's sort by local expert (expert_extras);
 *   - Mamba-2's SSD kernels (ssd_kernels), each on the roofline;
 *   - the query and key norms of a qk_norm model (qk_norms), their
 *     parameters and saved activations;
 *   - the all-to-alls Megatron-Core's combined 1F1B hides (ep_overlap).
 * The sustained-clock throttle is switched off (sustained_frac 1) so that
 * the operator classes are the backend's times. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fixtures.h"
#include "fixtures_dp.h"
#include "harness.h"
#include "llmplan/arch.h"
#include "sim_internal.h"

#define RL_LAUNCH 5e-6
#define RL_GEMM 0.80
#define RL_MEM 0.85
#define RL_COLL 0.80

/* A small MoE model: 8 experts, top 2, GELU experts of 2048, no shared
 * experts, dropless with imbalance 1.25; TP 1, EP 4, DP 4. */
static void moe_run(struct lp_run *r)
{
    lp_fixture_gpt3_run(r);
    struct lp_model *m = &r->model;
    m->layers = 4;
    m->hidden = 1024;
    m->heads = 16;
    m->kv_heads = 16;
    m->ffn_hidden = 4096;
    m->seq_len = 4096;
    m->vocab = 32000;
    m->moe.experts = 8;
    m->moe.top_k = 2;
    m->moe.ffn_hidden = 2048;
    m->moe.layer_freq = 1;
    m->moe.dropless = true;
    m->moe.imbalance = 1.25;
    r->system.gpu.sustained_frac = 1.0;
    r->par = lp_fixture_unit_degrees();
    r->par.dp = 4;
    r->par.ep = 4;
    r->par.micro_batch = 2;
    r->train.global_batch = 64;
    r->fw.ep_overlap = false;
    r->fw.tp_overlap = false;
    r->fw.dispatcher = LP_DISPATCH_ALLTOALL;
}

/* The same model without experts (TP 1, EP 1, DP 4). */
static void dense_run(struct lp_run *r)
{
    moe_run(r);
    r->model.moe = (struct lp_moe){0};
    r->par.ep = 1;
}

static double hand_gemm(const struct lp_gpu *g, double m, double n, double k)
{
    const double tc = 2.0 * m * n * k / (g->peak_flops[LP_BF16] * RL_GEMM);
    const double tm = 2.0 * (m * k + k * n + m * n) / (g->mem_bw_Bps * RL_MEM);
    return RL_LAUNCH + fmax(tc, tm);
}

/* The shape costs of r on the roofline backend of its GPU. */
static void shape_cost(const struct lp_run *r, struct lp_shape_cost *sc)
{
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r->system.gpu);
    lp_shape_cost_compute(&cm, r, sc);
}

#define CLOSE(a, b) ASSERT_TRUE(fabs((a) - (b)) <= 1e-9 * fabs(b) + 1e-15)

TEST(ep_all_to_all_inside_a_node)
{
    static struct lp_run r;
    moe_run(&r);
    ASSERT_EQ_INT(lp_sim_validate(&r), LP_REASON_NONE);
    static struct lp_shape_cost sc;
    shape_cost(&r, &sc);
    /* T = mb s / cp = 8192 tokens, each routed to 2 experts at 1.25 the
     * mean: 8192 x 2 x 1.25 copies of 1024 bf16 values = 41.94 MB; an
     * all-to-all over 4 ranks moves (n-1)/n of it at 0.8 x 300 GB/s after
     * (n-1) link latencies; dispatch + combine in each pass */
    const double bytes = 8192.0 * 2 * 1.25 * 1024 * 2;
    const double one = 3 * 3e-6 + bytes * 3.0 / 4.0 / (RL_COLL * 300e9);
    CLOSE(sc.ffn[LP_FFN_MOE].comm_fwd_s, 2 * one);
    CLOSE(sc.ffn[LP_FFN_MOE].comm_bwd_s, 2 * one);
    ASSERT_TRUE(one > 1e-4); /* 0.131 ms: not a vanishing term */
    /* HybridEP sends a token once to each rank holding one of its experts:
     * a rank's 2 of the 8 experts miss both of a token's with probability
     * 6/8 x 5/7 = 15/28, so a token reaches 4 x 13/28 = 13/7 ranks, not 2 */
    r.fw.dispatcher = LP_DISPATCH_HYBRIDEP;
    shape_cost(&r, &sc);
    const double hyb = 3 * 3e-6 + bytes / 2 * 13.0 / 7.0 * 3.0 / 4.0 / (RL_COLL * 300e9);
    CLOSE(sc.ffn[LP_FFN_MOE].comm_fwd_s, 2 * hyb);
}

TEST(ep_all_to_all_across_nodes)
{
    static struct lp_run r;
    moe_run(&r);
    r.system.gpus_per_node = 2; /* the EP group of 4 spans two nodes */
    ASSERT_EQ_INT(lp_sim_validate(&r), LP_REASON_NONE);
    static struct lp_shape_cost sc;
    shape_cost(&r, &sc);
    /* k = 2 members per node drive two NICs: link min(300, 2 x 25) GB/s;
     * the alpha of an inter-node all-to-all is (n - 1) network latencies
     * over the k members (lp_coll_time) */
    const double bytes = 8192.0 * 2 * 1.25 * 1024 * 2;
    const double one = 3 * 5e-6 / 2 + bytes * 3.0 / 4.0 / (RL_COLL * 50e9);
    CLOSE(sc.ffn[LP_FFN_MOE].comm_fwd_s, 2 * one);
}

/* Every EP group dispatches at once and the step waits for the slowest
 * (sim_workload.c dispatch_time over sim_comm.c lp_groups_slowest), in the
 * job's own groups (its size known). On 6-GPU nodes, EP 4, TP 1:
 *  - 4 GPUs (dp 4): the one group {0..3} on one node, the all-to-all on
 *    NVLink as ep_all_to_all_inside_a_node (a large job's residues put
 *    {4, 5 | 6, 7} across two nodes: 3 x 5 us / 2 + 3/4 bytes / 0.8 x
 *    2 x 25 GB/s, 0.73 ms, was charged);
 *  - 12 GPUs, HybridEP: {0..3} on one node, {4, 5 | 6, 7} on two with 2
 *    members each. The second: a token goes once to the other node when
 *    it holds one of the token's 2 experts: node's 4 of 8 experts miss
 *    both with 4/8 x 3/7 = 3/14, so 2 x 11/14 = 11/7 nodes reached, (N -
 *    1) / N = 1/2 of them remote: bytes / 2 x 11/7 through one NIC at
 *    0.8 x 25 GB/s (0.82 ms), beside NVLink's 13/7 copies x 1/2 at 0.8 x
 *    300 GB/s. The first group's layout alone (one node) took the
 *    all-to-all's slowest instead. */
TEST(ep_dispatch_slowest_group_of_the_job)
{
    static struct lp_run r;
    moe_run(&r);
    r.system.gpus_per_node = 6;
    r.system.scale_up_gpus = 0;
    r.system.segment_gpus = 0;
    ASSERT_EQ_INT(lp_sim_validate(&r), LP_REASON_NONE);
    static struct lp_shape_cost sc;
    shape_cost(&r, &sc);
    const double bytes = 8192.0 * 2 * 1.25 * 1024 * 2; /* top_k copies */
    const double nvl = 3 * 3e-6 + bytes * 3.0 / 4.0 / (RL_COLL * 300e9);
    CLOSE(sc.ffn[LP_FFN_MOE].comm_fwd_s, 2 * nvl);
    r.par.dp = 12;
    r.train.global_batch = 96;
    r.fw.dispatcher = LP_DISPATCH_HYBRIDEP;
    ASSERT_EQ_INT(lp_sim_validate(&r), LP_REASON_NONE);
    shape_cost(&r, &sc);
    const double once = bytes / 2; /* one copy per token */
    const double net = once / 2 * 11.0 / 7.0 / (RL_COLL * 25e9);
    const double nvl2 = once * 13.0 / 7.0 / 2 / (RL_COLL * 300e9);
    ASSERT_TRUE(net > nvl2);
    CLOSE(sc.ffn[LP_FFN_MOE].comm_fwd_s, 2 * net);
}

TEST(expert_gemms)
{
    static struct lp_run r;
    moe_run(&r);
    static struct lp_shape_cost sc;
    shape_cost(&r, &sc);
    const struct lp_gpu *g = &r.system.gpu;
    /* the router: T x E x h; each of the E/ep = 2 local experts receives
     * te = T ep top_k / E x 1.25 = 8192 x 4 x 2 / 8 x 1.25 = 10240 tokens and
     * runs fc1 (te x 2048 x 1024) and fc2 (te x 1024 x 2048) */
    const double T = 8192, te = T * 4 * 2 / 8 * 1.25;
    ASSERT_TRUE(te == 10240);
    const double fwd = hand_gemm(g, T, 8, 1024) +
                       2 * (hand_gemm(g, te, 2048, 1024) + hand_gemm(g, te, 1024, 2048));
    CLOSE(sc.ffn[LP_FFN_MOE].op_fwd[LP_OPC_GEMM], fwd);
    /* the backward: data and weight gradients of each, (M, K, N) and (K, N, M) */
    const double bwd = hand_gemm(g, T, 1024, 8) + hand_gemm(g, 1024, 8, T) +
                       2 * (hand_gemm(g, te, 1024, 2048) + hand_gemm(g, 1024, 2048, te) +
                            hand_gemm(g, te, 2048, 1024) + hand_gemm(g, 2048, 1024, te));
    CLOSE(sc.ffn[LP_FFN_MOE].op_bwd[LP_OPC_GEMM], bwd);
    /* twice the experts per rank (EP 2) doubles the experts' share */
    r.par.ep = 2;
    r.par.dp = 4;
    static struct lp_shape_cost sc2;
    shape_cost(&r, &sc2);
    const double te2 = T * 2 * 2 / 8 * 1.25;
    CLOSE(sc2.ffn[LP_FFN_MOE].op_fwd[LP_OPC_GEMM],
          hand_gemm(g, T, 8, 1024) +
              4 * (hand_gemm(g, te2, 2048, 1024) + hand_gemm(g, te2, 1024, 2048)));
}

/* Memory-bound kernels and host launches of the MoE block that the GPT-OSS
 * experts add (sim_workload.c expert_extras), and the all-to-all
 * dispatcher's sort by local expert: each the difference of the block's
 * memory-bound time with and without the feature, against the kernels'
 * bytes at the roofline's RL_MEM of the HBM bandwidth plus a launch each. */
static double hand_mem(const struct lp_gpu *g, double bytes)
{
    return RL_LAUNCH + bytes / (g->mem_bw_Bps * RL_MEM);
}

TEST(expert_activation_clamp)
{
    static struct lp_run r;
    moe_run(&r);
    r.model.ffn_act = LP_ACT_SWIGLU;
    r.model.bias = false;
    static struct lp_shape_cost sc0, sc1;
    shape_cost(&r, &sc0);
    r.model.moe.act_clamp = 7.0;
    shape_cost(&r, &sc1);
    const struct lp_gpu *g = &r.system.gpu;
    /* 2 local experts of te = 10240 rows: each half of fc1's output holds
     * x = 10240 x 2 x 2048 bf16 values; forward: two clamps (read and write
     * a half) and the cat (read and write both); backward: two clamp
     * backwards (read gradient and input, write) */
    const double x = 10240.0 * 2 * 2048, e = 2;
    const double df = 2 * hand_mem(g, 2 * x * e) + hand_mem(g, 4 * x * e);
    const double db = 2 * hand_mem(g, 3 * x * e);
    const struct lp_layer_cost *a = &sc0.ffn[LP_FFN_MOE], *c = &sc1.ffn[LP_FFN_MOE];
    CLOSE(c->op_fwd[LP_OPC_MEM] - a->op_fwd[LP_OPC_MEM], df);
    CLOSE(c->op_bwd[LP_OPC_MEM] - a->op_bwd[LP_OPC_MEM], db);
    /* a GELU MLP has no GLU halves to clamp */
    r.model.ffn_act = LP_ACT_GELU;
    static struct lp_shape_cost sg0, sg1;
    shape_cost(&r, &sg1);
    r.model.moe.act_clamp = 0;
    shape_cost(&r, &sg0);
    CLOSE(sg1.ffn[LP_FFN_MOE].op_fwd[LP_OPC_MEM], sg0.ffn[LP_FFN_MOE].op_fwd[LP_OPC_MEM]);
}

TEST(expert_bias_per_expert)
{
    static struct lp_run r;
    moe_run(&r);
    r.model.bias = false;
    r.fw.host_op_s = 1e-3; /* a host time per launch that dominates */
    static struct lp_shape_cost sc0, sc1;
    shape_cost(&r, &sc0);
    r.model.bias = true;
    shape_cost(&r, &sc1);
    const struct lp_gpu *g = &r.system.gpu;
    /* fc2's output, n = 10240 x 1024 values per expert, 2 experts; bf16
     * activations, fp32 router probabilities. Forward per expert: b * p
     * (write 4 bytes), t + b p (read 2 + 4, write 4); over both: the cat
     * (read 4, write 4) and the cast back (read 4, write 2) */
    const double n = 10240.0 * 1024, all = 2 * n;
    const double df = 2 * (hand_mem(g, 4 * n) + hand_mem(g, 10 * n)) + hand_mem(g, 8 * all) +
                      hand_mem(g, 6 * all);
    /* backward per expert: t's gradient cast (read 4, write 2), the
     * gradient times p and times b (read 8, write 4) each with its sum
     * (read 4); over both: the cast's backward (read 2, write 4) and the cat
     * of t's gradients (read 2, write 2) */
    const double db = 2 * (hand_mem(g, 6 * n) + 2 * (hand_mem(g, 12 * n) + hand_mem(g, 4 * n))) +
                      hand_mem(g, 6 * all) + hand_mem(g, 4 * all);
    const struct lp_layer_cost *a = &sc0.ffn[LP_FFN_MOE], *c = &sc1.ffn[LP_FFN_MOE];
    CLOSE(c->op_fwd[LP_OPC_MEM] - a->op_fwd[LP_OPC_MEM], df);
    CLOSE(c->op_bwd[LP_OPC_MEM] - a->op_bwd[LP_OPC_MEM], db);
    /* dropless routing keeps the forward's host in lockstep with the GPU:
     * its 2 x 2 + 2 new launches add their whole host time */
    CLOSE(c->op_fwd[LP_OPC_OVERHEAD] - a->op_fwd[LP_OPC_OVERHEAD], 6 * 1e-3);
}

TEST(alltoall_sort_by_local_expert)
{
    static struct lp_run r;
    moe_run(&r);
    static struct lp_shape_cost sa, sh;
    shape_cost(&r, &sa);
    r.fw.dispatcher = LP_DISPATCH_HYBRIDEP; /* one node: no sort */
    shape_cost(&r, &sh);
    const struct lp_gpu *g = &r.system.gpu;
    /* the 8192 x 2 routed copies at 1.25 the mean, 1024 bf16 values each,
     * read and written once sorted by local expert and once back */
    const double bytes = 2.0 * 8192 * 2 * 1.25 * 1024 * 2;
    const struct lp_layer_cost *a = &sa.ffn[LP_FFN_MOE], *h = &sh.ffn[LP_FFN_MOE];
    CLOSE(a->op_fwd[LP_OPC_MEM] - h->op_fwd[LP_OPC_MEM], 2 * hand_mem(g, bytes));
    CLOSE(a->op_bwd[LP_OPC_MEM] - h->op_bwd[LP_OPC_MEM], 2 * hand_mem(g, bytes));
    /* capacity routing at 1.25 sorts the same number of copies */
    r.model.moe.dropless = false;
    r.model.moe.capacity_factor = 1.25;
    r.fw.dispatcher = LP_DISPATCH_ALLTOALL;
    shape_cost(&r, &sa);
    r.fw.dispatcher = LP_DISPATCH_HYBRIDEP;
    shape_cost(&r, &sh);
    CLOSE(a->op_fwd[LP_OPC_MEM] - h->op_fwd[LP_OPC_MEM], 2 * hand_mem(g, bytes));
    /* one local expert (EP 8): nothing to sort */
    r.par.ep = 8;
    r.par.dp = 8;
    r.fw.dispatcher = LP_DISPATCH_ALLTOALL;
    shape_cost(&r, &sa);
    r.fw.dispatcher = LP_DISPATCH_HYBRIDEP;
    shape_cost(&r, &sh);
    CLOSE(sa.ffn[LP_FFN_MOE].op_fwd[LP_OPC_MEM], sh.ffn[LP_FFN_MOE].op_fwd[LP_OPC_MEM]);
}

/* The routed experts' gradients and parameters go over the
 * expert-data-parallel group (sim_dp.c expert_group): with ZeRO-1 and no
 * overlap, the reduce-scatter and all-gather of one stage are the dense
 * part's over the dp ranks plus the experts' over tp dp / (ep etp) ranks
 * ep etp apart. */
TEST(expert_data_parallel_group)
{
    static struct lp_run r;
    moe_run(&r);
    r.par.zero = 1;
    r.fw.dp_overlap = false;
    r.fw.param_gather_overlap = false;
    r.fw.grad_fp32 = false;
    struct lp_params pr;
    struct lp_dp_cost dc;
    ASSERT_EQ_INT(lp_fixture_dp_costs(&r, &pr, &dc), 0);
    /* 4 MoE layers, 8 / 4 = 2 local GELU experts of h 1024, f 2048 with
     * biases: 2 h f + f + h parameters each */
    const double Pe = 4 * 2 * (2.0 * 1024 * 2048 + 2048 + 1024);
    CLOSE(pr.expert0, Pe);
    CLOSE(pr.expert_last, Pe);
    /* EP 4 = DP 4: every rank holds other experts, nothing to reduce; the
     * rest (bf16 gradients and weights) over the 4 DP ranks */
    const double Pd = pr.train0 - Pe;
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r.system.gpu);
    const double rs = lp_coll_time(&cm, &r.system, LP_COLL_REDUCESCATTER, Pd * 2, 4, 1, 0);
    const double ag = lp_coll_time(&cm, &r.system, LP_COLL_ALLGATHER, Pd * 2, 4, 1, 0);
    CLOSE(dc.red_s[0], rs);
    CLOSE(dc.gather_s[0], ag);
    /* EP 2: each expert on 2 ranks, 2 apart; twice the local experts */
    r.par.ep = 2;
    ASSERT_EQ_INT(lp_fixture_dp_costs(&r, &pr, &dc), 0);
    CLOSE(pr.expert0, 2 * Pe);
    const double Pd2 = pr.train0 - 2 * Pe;
    CLOSE(dc.red_s[0],
          lp_coll_time(&cm, &r.system, LP_COLL_REDUCESCATTER, Pd2 * 2, 4, 1, 0) +
              lp_coll_time(&cm, &r.system, LP_COLL_REDUCESCATTER, 2 * Pe * 2, 2, 2, 0));
    /* EP 1 (expert TP = TP): one group, one reduction of everything */
    r.par.ep = 1;
    ASSERT_EQ_INT(lp_fixture_dp_costs(&r, &pr, &dc), 0);
    CLOSE(dc.red_s[0], lp_coll_time(&cm, &r.system, LP_COLL_REDUCESCATTER, pr.train0 * 2, 4, 1, 0));
}

/* ZeRO-1 (Megatron's distributed optimizer) shards a routed expert's
 * optimizer state over the ranks holding that expert, the expert-data-
 * parallel group (Megatron-Core get_megatron_optimizer: a DistributedOptimizer
 * over intra_expt_dp_group for the expert parameter groups), the rest over
 * the DP group: with DP 4, EP 4 every expert lives on one rank, so its 12
 * bytes per parameter (fp32 master, two fp32 moments) stay whole, the dense
 * part's are divided by 4; with EP 2 the experts' by 2. */
TEST(expert_optimizer_over_expert_dp)
{
    static struct lp_run r;
    moe_run(&r);
    r.par.zero = 0;
    struct lp_memory m0, m1;
    lp_sim_memory(&r, &m0);
    const double P = m0.weights_bytes / 2.0; /* bf16 weights */
    CLOSE(m0.optimizer_bytes, 12.0 * P);
    /* as in expert_data_parallel_group: 4 layers x 2 local experts x
     * (2 h f + f + h) */
    const double Pe = 4 * 2 * (2.0 * 1024 * 2048 + 2048 + 1024);
    r.par.zero = 1;
    lp_sim_memory(&r, &m1);
    CLOSE(m1.optimizer_bytes, 12.0 * ((P - Pe) / 4.0 + Pe));
    CLOSE(m1.weights_bytes, m0.weights_bytes);
    r.par.ep = 2; /* twice the local experts, each on 2 ranks */
    r.par.zero = 0;
    lp_sim_memory(&r, &m0);
    const double P2 = m0.weights_bytes / 2.0;
    r.par.zero = 1;
    lp_sim_memory(&r, &m1);
    CLOSE(m1.optimizer_bytes, 12.0 * ((P2 - 2 * Pe) / 4.0 + 2 * Pe / 2.0));
    r.par.ep = 1; /* experts in the dense group: everything over DP 4 */
    r.par.zero = 0;
    lp_sim_memory(&r, &m0);
    r.par.zero = 1;
    lp_sim_memory(&r, &m1);
    CLOSE(m1.optimizer_bytes, m0.optimizer_bytes / 4.0);
}

/* Megatron-Core's "moe" recomputation (moe_layer.py MoELayer.forward:
 * custom_forward under tensor_parallel.checkpoint) reruns the whole layer,
 * its dispatch and combine included; "moe_act" adds one more run of the
 * experts' activation on top (the recomputing pass runs with grad, so the
 * experts' CheckpointWithoutOutput discards and reruns it once more). On the
 * roofline with no host time: the difference is the activation kernel of the
 * 2 local experts, a GELU over te x 2048 values (read and write). */
TEST(moe_recompute_whole_and_act)
{
    static struct lp_run r;
    static struct lp_shape_cost sa, sb;
    moe_run(&r);
    r.fw.host_op_s = 0;
    r.par.recompute = LP_RECOMPUTE_SELECTIVE;
    r.par.recompute_modules = LP_RC_MOE;
    shape_cost(&r, &sa);
    const struct lp_layer_cost *a = &sa.ffn[LP_FFN_MOE];
    CLOSE(a->recompute_s, a->full_s);
    CLOSE(a->comm_recompute_s, a->comm_full_s);
    ASSERT_TRUE(a->comm_recompute_s > 0); /* the all-to-alls run again */
    r.par.recompute_modules = LP_RC_MOE | LP_RC_MOE_ACT;
    shape_cost(&r, &sb);
    const double te = 10240, e = 2;
    CLOSE(sb.ffn[LP_FFN_MOE].recompute_s - a->recompute_s,
          2 * hand_mem(&r.system.gpu, 2 * te * 2048 * e));
}

/* cuda_graphs "moe" (Megatron-Core cuda_graph_scope "moe"; enable_cuda_graph's
 * whole-layer graphs in core 0.14): a capacity-routed MoE block is replayed
 * from one graph, so its host time is one launch, collectives included, and
 * the exposed part is the smooth maximum of host_exposed with that one
 * launch: with h = host_op_s and g the block's GPU time (kernels and
 * exposed collectives), m (1 + (min/m)^p)^(1/p) - g, m = max(g, h). A
 * dropless block cannot be captured (its shapes change: transformer_config.py
 * "moe cuda graph is only supported with drop-padding MoE") and keeps one
 * launch per kernel. */
static double one_launch_exposed(const double *op, double h, double p)
{
    const double g = op[LP_OPC_GEMM] + op[LP_OPC_ATTN] + op[LP_OPC_MEM] + op[LP_OPC_COMM];
    const double m = fmax(g, h), x = fmin(g, h) / m;
    return m * pow(1.0 + pow(x, p), 1.0 / p) - g;
}

TEST(moe_block_graphed)
{
    static struct lp_run r;
    static struct lp_shape_cost eager, graphed, dropless;
    moe_run(&r);
    r.model.moe.dropless = false;
    r.model.moe.capacity_factor = 1.0;
    r.fw.host_op_s = 20e-6;
    r.fw.host_overlap = 1.25;
    shape_cost(&r, &eager);
    r.fw.cuda_graphs = LP_GRAPH_MOE;
    shape_cost(&r, &graphed);
    const struct lp_layer_cost *e = &eager.ffn[LP_FFN_MOE], *g = &graphed.ffn[LP_FFN_MOE];
    /* the kernels are the same; only their host time changes */
    CLOSE(g->op_fwd[LP_OPC_GEMM], e->op_fwd[LP_OPC_GEMM]);
    CLOSE(g->op_bwd[LP_OPC_MEM], e->op_bwd[LP_OPC_MEM]);
    CLOSE(g->op_fwd[LP_OPC_OVERHEAD], one_launch_exposed(g->op_fwd, 20e-6, 1.25));
    CLOSE(g->op_bwd[LP_OPC_OVERHEAD], one_launch_exposed(g->op_bwd, 20e-6, 1.25));
    /* eager: 2 local experts x 4 kernels forward and more: well above one launch */
    ASSERT_TRUE(e->op_fwd[LP_OPC_OVERHEAD] > 4.0 * g->op_fwd[LP_OPC_OVERHEAD]);
    /* dropless: the scope does not apply */
    moe_run(&r);
    r.fw.host_op_s = 20e-6;
    r.fw.host_overlap = 1.25;
    r.fw.cuda_graphs = LP_GRAPH_MOE;
    shape_cost(&r, &dropless);
    static struct lp_shape_cost plain;
    r.fw.cuda_graphs = 0;
    shape_cost(&r, &plain);
    CLOSE(dropless.ffn[LP_FFN_MOE].op_fwd[LP_OPC_OVERHEAD],
          plain.ffn[LP_FFN_MOE].op_fwd[LP_OPC_OVERHEAD]);
}

TEST(cp_ring_exchange)
{
    static struct lp_run r;
    dense_run(&r);
    r.par.cp = 2;
    r.par.dp = 2;
    /* a slow link, so that the ring is longer than the attention it hides
     * behind and its exposed part is a difference of two known times */
    r.system.intra.bw_Bps = 2e9;
    ASSERT_EQ_INT(lp_sim_validate(&r), LP_REASON_NONE);
    static struct lp_shape_cost sc;
    shape_cost(&r, &sc);
    /* each rank holds T = 2 x 4096 / 2 = 4096 tokens; its K and V block is
     * 2 x 4096 x 16 heads x 64 x 2 bytes = 16.8 MB, sent cp - 1 = 1 time to
     * the neighbour TP 1 rank away: latency + bytes / (0.8 x 2 GB/s) */
    const double kv = 2.0 * 4096 * 16 * 64 * 2;
    const double ring = 1 * (3e-6 + kv / (RL_COLL * 2e9));
    const struct lp_layer_cost *a = &sc.mix[LP_MIX_ATTN];
    const double af = a->op_fwd[LP_OPC_ATTN], ab = a->op_bwd[LP_OPC_ATTN];
    ASSERT_TRUE(af > 0 && ring > 2 * ab);
    CLOSE(a->comm_fwd_s, ring - af);
    CLOSE(a->comm_bwd_s, 2 * ring - ab);
    /* at cp 4 the ring has three steps of a block half the size */
    r.par.cp = 4;
    r.par.dp = 1;
    static struct lp_shape_cost sc4;
    shape_cost(&r, &sc4);
    const double ring4 = 3 * (3e-6 + kv / 2 / (RL_COLL * 2e9));
    CLOSE(sc4.mix[LP_MIX_ATTN].comm_fwd_s, ring4 - sc4.mix[LP_MIX_ATTN].op_fwd[LP_OPC_ATTN]);
}

/* A dense MLP at TP 4 on the link bw_Bps: its backward's exposed TP time,
 * by hand. */
static void tp_backward_case(int *th_failed_, double bw_Bps, bool sp, bool async)
{
    static struct lp_run r;
    dense_run(&r);
    r.par.tp = 4;
    r.par.dp = 1;
    r.par.sequence_parallel = sp;
    r.fw.tp_async_dgrad = async;
    r.system.intra.bw_Bps = bw_Bps;
    ASSERT_EQ_INT(lp_sim_validate(&r), LP_REASON_NONE);
    static struct lp_shape_cost sc;
    shape_cost(&r, &sc);
    /* T = 2 x 4096 tokens of 1024 bf16 values: 16.8 MB per collective over
     * 4 ranks, (n - 1) link latencies (2 (n - 1) for the all-reduce) */
    const double T = 8192, bytes = T * 1024 * 2;
    const double ag = 3 * 3e-6 + bytes * 3.0 / 4.0 / (RL_COLL * bw_Bps);
    const double ar = 6 * 3e-6 + bytes * 2.0 * 3.0 / 4.0 / (RL_COLL * bw_Bps);
    /* fc1 (column-parallel, T x 4096/4 x 1024): data gradient (T, 1024, 1024),
     * weight gradient (1024, 1024, T) */
    const struct lp_gpu *g = &r.system.gpu;
    const double dgrad = hand_gemm(g, T, 1024, 1024), wgrad = hand_gemm(g, 1024, 1024, T);
    const struct lp_layer_cost *m = &sc.ffn[LP_FFN_DENSE];
    if (sp) {
        CLOSE(m->comm_fwd_s, 2 * ag);
        CLOSE(m->comm_bwd_s, ag + fmax(0.0, ag - dgrad) + fmax(0.0, ag - wgrad));
    } else {
        CLOSE(m->comm_fwd_s, ar);
        CLOSE(m->comm_bwd_s, async ? fmax(0.0, ar - wgrad) : ar);
    }
}

TEST(tp_backward_overlap)
{
    /* 300 GB/s: the all-gather (61 us) hides behind the data gradient
     * (74 us), the reduce-scatter behind the weight gradient */
    tp_backward_case(th_failed_, 300e9, true, true);
    if (*th_failed_) return;
    /* 40 GB/s: both partly exposed */
    tp_backward_case(th_failed_, 40e9, true, true);
    tp_backward_case(th_failed_, 300e9, false, true);
    tp_backward_case(th_failed_, 40e9, false, true);
    tp_backward_case(th_failed_, 300e9, false, false);
}

/* Mamba-2's SSD as the mamba_ssm Triton kernels Megatron-Core runs
 * (sim_workload.c ssd_kernels): every kernel of the forward costs its
 * compulsory bytes or its tl.dot work as a GEMM, whichever is longer. A
 * hybrid model of Mamba-2 layers only: h 1024, 32 heads of P 64 (d_i 2048),
 * G 8 groups of N 128 state, chunk Q 128; TP 1, micro-batch 2 of 4096. */
TEST(mamba2_ssd_kernels)
{
    static struct lp_run r;
    moe_run(&r);
    r.model.moe = (struct lp_moe){0};
    r.model.dropout = false;
    r.model.norm = LP_NORM_RMSNORM;
    r.model.mamba = (struct lp_mamba){.version = 2,
                                      .d_state = 128,
                                      .d_conv = 4,
                                      .expand = 2,
                                      .head_dim = 64,
                                      .n_groups = 8,
                                      .heads = 32};
    snprintf(r.model.layer_pattern, sizeof(r.model.layer_pattern), "MMMM");
    r.par.ep = 1;
    ASSERT_EQ_INT(lp_sim_validate(&r), LP_REASON_NONE);
    static struct lp_shape_cost sc;
    shape_cost(&r, &sc);
    const struct lp_gpu *g = &r.system.gpu;
    const double T = 8192, h = 1024, e = 2, nh = 32, P = 64, N = 128, G = 8, Q = 128;
    const double X = nh * P, BC = G * N, S = nh * P * N / Q, CB = G * Q;
    ASSERT_TRUE(Q == LP_SSD_CHUNK);
    const double xn = hand_gemm(g, T * nh, P, N), xq = hand_gemm(g, T * nh, P, Q),
                 bmm = hand_gemm(g, T * G, Q, N);
    /* cumsum: dt in, dt and dA_cumsum out (fp32); chunk state: x, B, dt,
     * dA_cumsum in, fp32 states out; state passing: fp32 in, bf16 out;
     * C B^T: C, B in, fp32 out; chunk scan: C B^T, x, z, C, dt, dA_cumsum,
     * states in, out and out_x out */
    const double ssd =
        hand_mem(g, T * nh * (e + 8)) +
        fmax(hand_mem(g, T * (e * X + e * BC + 8 * nh + 4 * S)), xn) +
        hand_mem(g, T * (4 + e) * S) + fmax(hand_mem(g, T * (2 * e * BC + 4 * CB)), bmm) +
        fmax(hand_mem(g, T * (4 * e * X + e * BC + 8 * nh + e * S + 4 * CB)), xq + xn);
    /* the rest of the block's non-GEMM kernels: pre-norm and residual over
     * h, conv1d over d_i + 2 G N channels, the RMSNorm over d_i */
    const double rest = hand_mem(g, 2 * T * h * e) + hand_mem(g, 3 * T * h * e) +
                        hand_mem(g, 2 * T * (X + 2 * BC) * e) + hand_mem(g, 2 * T * X * e);
    const struct lp_layer_cost *c = &sc.mix[LP_MIX_MAMBA];
    CLOSE(c->op_fwd[LP_OPC_MEM] + c->op_fwd[LP_OPC_ATTN], ssd + rest);
    /* the state passing kernel alone: 6 bytes per state element per chunk,
     * 0.79 MB per chunk here, is no vanishing term */
    ASSERT_TRUE(hand_mem(g, T * (4 + e) * S) > 10 * RL_LAUNCH);
}

/* Qwen3's query and key norms (model qk_norm; sim_workload.c qk_norms):
 * the difference of the attention block with and without them, against
 * hand-computed kernels. T = 8192 tokens, head_dim d = 64, 16 query heads
 * and 4 key heads; bf16. Megatron-Core splits the fused QKV output and TE's
 * RMSNorm makes its input contiguous: the key (a strided slice) is copied
 * first, the query too only when the rank holds a single query group (with
 * more, the reshape of its slice to heads already copied it). */
TEST(attention_qk_norm)
{
    static struct lp_run r;
    dense_run(&r);
    r.model.norm = LP_NORM_RMSNORM;
    r.model.kv_heads = 4;
    r.fw.fused_kernels = true;
    static struct lp_shape_cost s0, s1;
    shape_cost(&r, &s0);
    r.model.qk_norm = true;
    shape_cost(&r, &s1);
    const struct lp_gpu *g = &r.system.gpu;
    const double T = 8192, d = 64, e = 2, q = T * 16 * d, k = T * 4 * d;
    const struct lp_layer_cost *a = &s0.mix[LP_MIX_ATTN], *c = &s1.mix[LP_MIX_ATTN];
    /* TP 1: 4 query groups on the rank; forward: copy of the key (read and
     * write), a norm each (read and write); backward: a norm backward each
     * (read the input and the gradient, write the gradient) */
    CLOSE(c->op_fwd[LP_OPC_MEM] - a->op_fwd[LP_OPC_MEM],
          hand_mem(g, 2 * k * e) + hand_mem(g, 2 * q * e) + hand_mem(g, 2 * k * e));
    CLOSE(c->op_bwd[LP_OPC_MEM] - a->op_bwd[LP_OPC_MEM],
          hand_mem(g, 3 * q * e) + hand_mem(g, 3 * k * e));
    /* TP 4: one query group per rank, so the query is copied as well */
    r.par.tp = 4;
    r.par.dp = 1;
    r.model.qk_norm = false;
    shape_cost(&r, &s0);
    r.model.qk_norm = true;
    shape_cost(&r, &s1);
    CLOSE(c->op_fwd[LP_OPC_MEM] - a->op_fwd[LP_OPC_MEM],
          2 * hand_mem(g, 2 * q / 4 * e) + 2 * hand_mem(g, 2 * k / 4 * e));
    /* parameters: one RMSNorm weight of head_dim for the queries and one
     * for the keys, whole on every TP rank */
    const double p1 = lp_arch_mixer_params(&r.model, LP_MIX_ATTN, 4);
    r.model.qk_norm = false;
    CLOSE(p1 - lp_arch_mixer_params(&r.model, LP_MIX_ATTN, 4), 2 * d);
    /* activations: each norm keeps its bf16 input and an fp32 rstd per
     * head and token, split over the TP ranks */
    const double m0 = lp_sim_layer_activation_bytes(&r);
    r.model.qk_norm = true;
    CLOSE(lp_sim_layer_activation_bytes(&r) - m0, T * (e * d + 4) * (16 + 4) / 4);
}

/* Megatron-Core's combined 1F1B (ep_overlap; model_chunk_schedule_plan.py
 * TransformerLayerSchedulePlan.run): each pass's dispatch hides behind the
 * other pass's experts (the MoE block's kernels), its combine behind the
 * other pass's attention block (the pre-dispatch computation). On a slow
 * link every all-to-all outlasts what hides it: the exposed forward is
 * (a2a/2 - moe_bwd) + (a2a/2 - attn_bwd), not a2a - moe_bwd. While an
 * all-to-all hides, its kernels hold some of the SMs (NCCL's 16 channels,
 * HybridEP's 16, DeepEP's 20 as the run names them) and the compute beside it
 * loses that share: hidden x sms / SMs more. */
static double kernels(const double *op)
{
    return op[LP_OPC_GEMM] + op[LP_OPC_ATTN] + op[LP_OPC_MEM];
}

TEST(ep_overlap_combined_1f1b)
{
    static struct lp_run r;
    moe_run(&r);
    r.system.intra.bw_Bps = 5e9; /* all-to-alls far longer than any block */
    static struct lp_shape_cost s0, s1;
    shape_cost(&r, &s0);
    r.fw.ep_overlap = true;
    shape_cost(&r, &s1);
    const struct lp_layer_cost *m = &s1.ffn[LP_FFN_MOE], *a = &s1.mix[LP_MIX_ATTN];
    const double one = 0.5 * s0.ffn[LP_FFN_MOE].comm_fwd_s; /* TP 1: all of it a2a */
    ASSERT_TRUE(one > kernels(m->op_bwd) && one > kernels(a->op_bwd));
    /* without an SM count nothing is charged for the SMs */
    ASSERT_TRUE(r.system.gpu.sms == 0);
    CLOSE(m->comm_fwd_s, (one - kernels(m->op_bwd)) + (one - kernels(a->op_bwd)));
    CLOSE(m->comm_bwd_s, (one - kernels(m->op_fwd)) + (one - kernels(a->op_fwd)));
    /* 108 SMs, NCCL's all-to-all on 16 of them: the hidden parts (the
     * blocks' kernels) cost 16/108 of themselves */
    r.system.gpu.sms = 108;
    shape_cost(&r, &s1);
    const double hf = kernels(m->op_bwd) + kernels(a->op_bwd);
    const double hb = kernels(m->op_fwd) + kernels(a->op_fwd);
    CLOSE(m->comm_fwd_s, 2 * one - hf + hf * 16.0 / 108.0);
    CLOSE(m->comm_bwd_s, 2 * one - hb + hb * 16.0 / 108.0);
    /* a fast link: every all-to-all hides whole; DeepEP's 20 SMs charge
     * 20/108 of the all-to-alls, the whole of the exposed time */
    r.system.intra.bw_Bps = 300e9;
    r.fw.ep_overlap = false;
    r.fw.dispatcher = LP_DISPATCH_HYBRIDEP;
    shape_cost(&r, &s0);
    r.fw.ep_overlap = true;
    r.fw.dispatcher_sms = 20;
    shape_cost(&r, &s1);
    const double hyb = 0.5 * s0.ffn[LP_FFN_MOE].comm_fwd_s;
    ASSERT_TRUE(hyb < kernels(m->op_bwd) && hyb < kernels(a->op_bwd));
    ASSERT_TRUE(hyb < kernels(m->op_fwd) && hyb < kernels(a->op_fwd));
    CLOSE(m->comm_fwd_s, 2 * hyb * 20.0 / 108.0);
    CLOSE(m->comm_bwd_s, 2 * hyb * 20.0 / 108.0);
    /* HybridEP's own default, 16 */
    r.fw.dispatcher_sms = 0;
    shape_cost(&r, &s1);
    CLOSE(m->comm_fwd_s, 2 * hyb * 16.0 / 108.0);
    /* a MoE layer without a mixer (hybrid 'E'): its combines hide behind
     * nothing */
    r.system.gpu.sms = 0;
    r.system.intra.bw_Bps = 5e9;
    r.fw.dispatcher = LP_DISPATCH_ALLTOALL;
    strcpy(r.model.layer_pattern, "*E*E");
    shape_cost(&r, &s1);
    CLOSE(m->comm_fwd_s, (one - kernels(m->op_bwd)) + one);
}

TH_MAIN(TH_CASE(ep_all_to_all_inside_a_node), TH_CASE(ep_all_to_all_across_nodes),
        TH_CASE(ep_dispatch_slowest_group_of_the_job), TH_CASE(expert_gemms),
        TH_CASE(expert_activation_clamp), TH_CASE(expert_bias_per_expert),
        TH_CASE(alltoall_sort_by_local_expert), TH_CASE(expert_data_parallel_group),
        TH_CASE(expert_optimizer_over_expert_dp), TH_CASE(moe_recompute_whole_and_act),
        TH_CASE(moe_block_graphed), TH_CASE(cp_ring_exchange), TH_CASE(tp_backward_overlap),
        TH_CASE(mamba2_ssd_kernels), TH_CASE(attention_qk_norm), TH_CASE(ep_overlap_combined_1f1b))
