/* NCCL's cost model (nccl_model.c) and DeepSpeed ZeRO-3's gather rules
 * (sim_dp.c zero3_gathers) against hand computations.
 *
 * NCCL, all-gather of 16 ranks on 2 nodes of 8 behind 200 GB/s per node
 * (src/graph/tuning.cc; ring only: 15 steps, 1 of them between nodes;
 * ring bus to algorithm bandwidth x 16/15):
 *   2.29, Intel host: LL  busBw min(llMaxBw 39.0, 200 x .5) = 39, latency
 *         6.6 + 14 max(0.6, netOverhead 1.0) + 2.7 = 23.3 us;
 *         LL128 busBw 200 x .92 = 184, latency 14 + 14 x 1.9 + 4.0 = 44.6;
 *         Simple busBw 200, latency 8.4 + 14 max(3.4, 3 x 1.0) + 14 = 70.0.
 *     1 MiB: LL 23.3 + 1048576 / 41.6e3 = 48.506 us < LL128 49.943 us.
 *     64 MiB: Simple 70 + 67108864 / 213.33e3 = 384.573 us < LL128 386.53.
 *   2.10: LL busBw min(39, 200 / 4) = 39, latency 3.6 + 14 x .47 x 1.8 +
 *         2.7 = 18.144 us: 1 MiB in 43.350 us.
 * DeepSpeed ZeRO-3 on GPT-3 175B (h 12288, TP 1, layer norms and biases):
 * the norms and biases (12288 .. 49152 elements) are under the persistence
 * threshold 1e5 and never gathered; under full recomputation QKV (3 h^2,
 * 1.36e9 behind it in the layer), the projection (h^2, 1.21e9 behind) and
 * fc1 (4 h^2, 0.60e9 behind: twice that is 1.21e9 >= 1e9) are gathered a
 * third time for the backward, fc2 (nothing behind) is kept from the
 * recomputed forward. */
#include <math.h>
#include <stdio.h>

#include "fixtures.h"
#include "fixtures_dp.h"
#include "harness.h"
#include "llmplan/arch.h"
#include "nccl_model.h"
#include "sim_internal.h"

#define NEAR_US(t_s, us) ASSERT_TRUE(fabs((t_s)*1e6 - (us)) < 2e-3)
#define CLOSE_REL(a, b) ASSERT_TRUE(fabs((a) - (b)) <= 1e-9 * fabs(b))

TEST(nccl_ring_allgather_by_hand)
{
    struct lp_nccl_choice c;
    double t = lp_nccl_time_s(LP_NCCL_2_29, LP_COLL_ALLGATHER, 1048576, 16, 2, 200e9, false, &c);
    NEAR_US(t, 48.506);
    ASSERT_EQ_INT(c.algo, LP_NCCL_RING);
    ASSERT_EQ_INT(c.proto, LP_NCCL_LL);
    t = lp_nccl_time_s(LP_NCCL_2_29, LP_COLL_ALLGATHER, 67108864, 16, 2, 200e9, false, &c);
    NEAR_US(t, 384.573);
    ASSERT_EQ_INT(c.proto, LP_NCCL_SIMPLE);
    t = lp_nccl_time_s(LP_NCCL_2_10, LP_COLL_ALLGATHER, 1048576, 16, 2, 200e9, false, &c);
    NEAR_US(t, 43.350);
    ASSERT_EQ_INT(c.proto, LP_NCCL_LL);
    /* only all-reduce, all-gather and reduce-scatter */
    ASSERT_TRUE(lp_nccl_time_s(LP_NCCL_2_29, LP_COLL_ALLTOALL, 1e6, 16, 2, 200e9, false, NULL) < 0);
}

/* Ring latency grows with the steps inside a node at NVLink latency and the
 * steps between nodes at network latency (not every step at the latter):
 * 1 KiB all-gather, 1024 ranks on 128 nodes, NCCL 2.29, Intel: LL latency
 * 6.6 + 896 x 1.0 + 127 x 2.7 = 1245.5 us */
TEST(nccl_ring_latency_counts_hops)
{
    struct lp_nccl_choice c;
    lp_nccl_time_s(LP_NCCL_2_29, LP_COLL_ALLGATHER, 1024, 1024, 128, 200e9, false, &c);
    ASSERT_EQ_INT(c.proto, LP_NCCL_LL);
    NEAR_US(c.lat_s, 1245.5);
}

/* GPT-3 175B under Megatron-DeepSpeed's ZeRO-3 over dp ranks, TP 1, full
 * recomputation, fp16 */
static void z3_run(struct lp_run *r, int dp)
{
    lp_fixture_gpt3_run(r);
    lp_framework_defaults(LP_FW_MEGATRON_DEEPSPEED, &r->fw);
    r->par = lp_fixture_unit_degrees();
    r->par.dp = dp;
    r->par.recompute = LP_RECOMPUTE_FULL;
    r->par.zero = 3;
    r->train.precision = LP_FP16;
}

TEST(deepspeed_zero3_persistence_and_reuse)
{
    static struct lp_run r;
    z3_run(&r, 1536);
    r.fw.zero3_rank_copies = false; /* the collectives alone (the copies: below) */
    struct lp_params pr;
    struct lp_dp_cost dc;
    ASSERT_EQ_INT(lp_fixture_dp_costs(&r, &pr, &dc), 0);
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r.system.gpu);
    const double h = 12288, n = 1536;
#define AG(p) lp_coll_time(&cm, &r.system, LP_COLL_ALLGATHER, (p)*2.0, (int)n, 1, 0)
    const double qkv = AG(3 * h * h), proj = AG(h * h), fc1 = AG(4 * h * h), fc2 = AG(4 * h * h);
    /* forward: the four matrices only (norms and biases persist) */
    CLOSE_REL(dc.z3_ag_s[0], qkv + proj + fc1 + fc2);
    /* backward: all four for the recomputed forward, three again */
    CLOSE_REL(dc.z3_ag_bwd_s[0], 2 * (qkv + proj + fc1) + fc2);
    /* without recomputation each is gathered once more in the backward
     * (2 (behind + the later layers) >= 1e9 for all but the last layers'
     * fc2, whose distance is the head's 2 x 629M) */
    r.par.recompute = LP_RECOMPUTE_NONE;
    ASSERT_EQ_INT(lp_fixture_dp_costs(&r, &pr, &dc), 0);
    CLOSE_REL(dc.z3_ag_bwd_s[0], qkv + proj + fc1 + fc2);
#undef AG
}

/* DeepSpeed 2021 ZeRO-3 over PyTorch 1.8-1.10 (sim_dp.c z3_rank_copies):
 * GPT-3 175B, DP 8, full recomputation. Per layer 4 matrices are gathered
 * 1 + 2 + 1 + 1 + 1 + 1 + 2 = 11 times (forward 4; backward QKV, projection
 * and fc1 twice, fc2 once: the test above) and 12 gradients reduce-scattered
 * (2 norms x weight and bias, 4 biases, 4 matrices): 23 collectives, 8 copy
 * kernels each; the embedding and head as one tensor: gathered twice and
 * reduce-scattered once. 8 x (96 x 23 + 3) = 17,688 kernels per
 * micro-batch. Before each collective DeepSpeed builds its list of views
 * (sim_dp.c z3_list_build): a gather first fills its whole tensor with
 * zeros (a write of the tensor) and calls narrow() once per rank, a
 * reduce-scatter calls view() and narrow() per rank, each call
 * LP_PY_VIEW_CALL_S. */
TEST(deepspeed_zero3_rank_copies_by_hand)
{
    static struct lp_run r;
    z3_run(&r, 8);
    ASSERT_TRUE(r.fw.zero3_rank_copies);
    struct lp_params pr;
    struct lp_dp_cost dc, plain;
    ASSERT_EQ_INT(lp_fixture_dp_costs(&r, &pr, &dc), 0);
    ASSERT_TRUE(dc.z3_copy_kernels == 8.0 * (96 * 23 + 3));
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r.system.gpu);
    const double h = 12288, n = 8;
    /* the roofline backend has no launch overhead for the host: the GPU
     * queue binds, n copies of 1/n of the tensor (read + write, fp16) after
     * each gather */
#define COPIES(p) (n * cm.ops->mem_s(&cm, LP_MEM_COPY, 2.0 * (p)*2.0 / n))
#define AG(p) lp_coll_time(&cm, &r.system, LP_COLL_ALLGATHER, (p)*2.0, (int)n, 1, 0)
    const double mats[4] = {3 * h * h, h * h, 4 * h * h, 4 * h * h};
#define FILL(p) cm.ops->mem_s(&cm, LP_MEM_COPY, (p)*2.0)
    double fwd = 0;
    for (int i = 0; i < 4; i++)
        fwd += AG(mats[i]) + COPIES(mats[i]) + FILL(mats[i]) + n * LP_PY_VIEW_CALL_S;
    CLOSE_REL(dc.z3_ag_s[0], fwd);
    r.fw.zero3_rank_copies = false;
    ASSERT_EQ_INT(lp_fixture_dp_costs(&r, &pr, &plain), 0);
    ASSERT_TRUE(plain.z3_copy_kernels == 0);
    /* host-bound: a launch of 1 s (a profile's launch_s) dwarfs every copy
     * and collective, so each collective ends tg after its 8th launch. A
     * gather's collective runs while the host launches its copies: a layer's
     * forward is 4 x 8 s + the four copies' tg, the gathers themselves
     * hidden. A reduce-scatter's copies come before it: 8 s + tg beyond each
     * of the 12 (fp16 gradients: 2 bytes). */
    r.fw.zero3_rank_copies = true;
    static struct lp_profile prof;
    prof.launch_s = 1.0;
    cm.profile = &prof;
    ASSERT_EQ_INT(lp_fixture_dp_costs_cm(&r, &cm, &pr, &dc), 0);
#define TG(p) cm.ops->mem_s(&cm, LP_MEM_COPY, 2.0 * (p)*2.0 / n)
    double ag = 0, rs = 0;
    for (int i = 0; i < 4; i++) {
        ag += 8.0 + TG(mats[i]) + FILL(mats[i]) + n * LP_PY_VIEW_CALL_S;
        rs += 8.0 + TG(mats[i]) + 2 * n * LP_PY_VIEW_CALL_S;
    }
    const double small[8] = {h, h, h, h, 3 * h, h, 4 * h, h}; /* norms, biases */
    for (int i = 0; i < 8; i++)
        rs += 8.0 + TG(small[i]) + 2 * n * LP_PY_VIEW_CALL_S;
    CLOSE_REL(dc.z3_ag_s[0], ag);
    CLOSE_REL(dc.z3_rs_s[0] - plain.z3_rs_s[0], rs);
#undef TG
#undef FILL
#undef AG
#undef COPIES
}

/* The Python loops of DeepSpeed 2021's ZeRO-3 at Narayanan et al.'s E0013
 * (GPT-3 175B, DP 1536, full recomputation; partition_parameters.py
 * _allgather_param: one narrow() per rank after torch.cuda.synchronize();
 * _reduce_scatter_gradient: view(-1).narrow() per rank). Per layer 11
 * gathers x 1536 narrow() = 16,896 calls and 12 reduce-scatters x 1536 x 2
 * = 36,864: 53,760; x 96 layers = 5,160,960; the embedding and head
 * gathered twice and reduce-scattered once: 2 x 1536 + 3072 = 6,144. In
 * all 5,167,104 calls, 11.678 s per micro-batch at 2.26 us. Without the
 * flag nothing of it. */
TEST(deepspeed_zero3_list_build_by_hand)
{
    static struct lp_run r;
    z3_run(&r, 1536);
    struct lp_params pr;
    struct lp_dp_cost dc, plain;
    ASSERT_EQ_INT(lp_fixture_dp_costs(&r, &pr, &dc), 0);
    ASSERT_TRUE(dc.z3_py_views == 5167104.0);
    ASSERT_TRUE(fabs(dc.z3_py_views * LP_PY_VIEW_CALL_S - 11.678) < 1e-3);
    /* per layer, the time beyond the copies and collectives: the narrow()
     * calls and the zero fill of each gathered matrix (fp16) */
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r.system.gpu);
    const double h = 12288, n = 1536;
    const double mats[4] = {3 * h * h, h * h, 4 * h * h, 4 * h * h};
    double fill = 0;
    for (int i = 0; i < 4; i++)
        fill += cm.ops->mem_s(&cm, LP_MEM_COPY, mats[i] * 2.0);
    r.fw.zero3_rank_copies = false;
    ASSERT_EQ_INT(lp_fixture_dp_costs(&r, &pr, &plain), 0);
    ASSERT_TRUE(plain.z3_py_views == 0);
    /* the roofline backend has no host launch time: n copies of 1/n after
     * each gather, the GPU queue's bound */
    double copies = 0;
    for (int i = 0; i < 4; i++)
        copies += n * cm.ops->mem_s(&cm, LP_MEM_COPY, 2.0 * mats[i] * 2.0 / n);
    CLOSE_REL(dc.z3_ag_s[0] - plain.z3_ag_s[0], copies + fill + 4 * n * LP_PY_VIEW_CALL_S);
}

/* DeepSpeed 2021 ZeRO-3's gradient bucket (sim_dp.c z3_ipg_layers) on GPT-3
 * 175B (h 12288, TP 1, DP 1536 as E0013), reduce_bucket_size B = 5e7.
 * A layer's gradients arrive fc2 bias (h), fc2 (4 h^2), fc1 bias (4 h), fc1
 * (4 h^2), projection bias (h), projection (h^2), QKV bias (3 h), QKV
 * (3 h^2), the four norm vectors (h each). Every matrix is over B, so each
 * is kept aside and flushed by the next gradient; every flush also divides
 * the whole buffer:
 *   bias h copied (bucket h) | fc2: flush [B] (the bias), fc2 aside |
 *   fc1 bias: flush [B + 4h^2], copied | fc1: flush [B], aside |
 *   proj bias: flush [B + 4h^2], copied | proj: flush [B], aside |
 *   QKV bias: flush [B + h^2], copied | QKV: flush [B], aside |
 *   first norm: flush [B + 3h^2], four norms copied (bucket 4h).
 * 8 flushes and 8B + 12h^2 + 13h elements read and written per layer; the
 * second layer starts from 4h instead of 0 (its bias still fits) and ends
 * at 4h again, so every layer alike. After the last layer the ends (the
 * tied embedding, positions and final norm, one gradient E > B): a flush
 * [B] and E aside; the epilogue's flush [B + E]. 96 x 8 + 2 = 770 flushes;
 * 96 (8B + 12h^2 + 13h) + 2B + E elements, fp16, read and written. */
TEST(deepspeed_zero3_ipg_bucket_by_hand)
{
    static struct lp_run r;
    z3_run(&r, 1536);
    struct lp_params pr;
    struct lp_dp_cost dc, plain;
    ASSERT_EQ_INT(lp_fixture_dp_costs(&r, &pr, &dc), 0);
    const double h = 12288, B = 5e7;
    const double E = pr.stage_max - 96 * pr.layer;
    ASSERT_TRUE(E > B);
    ASSERT_TRUE(dc.z3_ipg_flushes == 96.0 * 8 + 2);
    const double moved = 96 * (8 * B + 12 * h * h + 13 * h) + 2 * B + E;
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r.system.gpu);
    CLOSE_REL(dc.z3_ipg_s, cm.ops->mem_s(&cm, LP_MEM_COPY, 2.0 * moved * 2.0));
    r.fw.zero3_per_tensor = false; /* one collective per layer: no bucket */
    r.fw.zero3_rank_copies = false;
    ASSERT_EQ_INT(lp_fixture_dp_costs(&r, &pr, &plain), 0);
    ASSERT_TRUE(plain.z3_ipg_s == 0 && plain.z3_ipg_flushes == 0);
}

/* lp_sim_layer_tensors is exact at any expert count: GPT-3 175B's layer
 * (layer norms and biases) with 256 experts of ffn f at ep 1 has 4 norm
 * vectors, QKV and its bias, the projection and its bias, the router, then
 * 256 x (fc1, its bias, fc2, its bias): 9 + 1024 tensors (a list capped at
 * 512 dropped 521 of them), summing to the layer's parameters; at ep 2 half
 * the experts. */
TEST(layer_tensors_256_experts_ep1)
{
    static struct lp_run r;
    z3_run(&r, 8);
    const double h = 12288, f = 1024;
    r.model.moe.experts = 256;
    r.model.moe.top_k = 8;
    r.model.moe.ffn_hidden = (int)f;
    struct lp_layer_tensors lt;
    lp_sim_layer_tensors(&r, true, &lt);
    ASSERT_EQ_INT(lt.n, 9 + 4 * 256);
    double sum = 0;
    for (int i = 0; i < lt.npre; i++)
        sum += lt.pre[i];
    for (int i = 0; i < lt.ngrp; i++)
        sum += lt.copies * lt.grp[i];
    const double attn = 4 * h + 3 * h * h + 3 * h + h * h + h + 256 * h;
    CLOSE_REL(sum, attn + 256 * (h * f + f + f * h + h));
    r.par.ep = 2;
    lp_sim_layer_tensors(&r, true, &lt);
    ASSERT_EQ_INT(lt.n, 9 + 4 * 128);
    /* the dense layer: 4 norm vectors, QKV, projection, fc1, fc2, 4 biases */
    lp_sim_layer_tensors(&r, false, &lt);
    ASSERT_EQ_INT(lt.n, 12);
}

/* One gradient bucket for the whole backward (DeepSpeed v0.3.13 stage3.py:
 * independent_gradient_partition_epilogue once, at the backward's end; the
 * ipg bucket is not emptied between layers of different kinds). A small
 * model of 2 dense and 2 MoE layers (h 256, 4 experts of 512, ffn 1024,
 * layer norms and biases) whose every gradient, and all of them together
 * with the tied embedding, fit in reduce_bucket_size 5e7: nothing flushes
 * but the epilogue, once, and the bucket moves every gradient once plus the
 * epilogue's division of the whole buffer B: sum + B elements. (Each kind
 * from an empty bucket flushed twice and moved sum + 2B.) */
TEST(deepspeed_zero3_ipg_one_epilogue_dense_and_moe)
{
    static struct lp_run r;
    z3_run(&r, 8);
    r.model.layers = 4;
    r.model.hidden = 256;
    r.model.heads = 8;
    r.model.kv_heads = 8;
    r.model.ffn_hidden = 1024;
    r.model.moe.experts = 4;
    r.model.moe.top_k = 2;
    r.model.moe.ffn_hidden = 512;
    r.model.moe.first_dense_layers = 2;
    struct lp_params pr;
    struct lp_dp_cost dc;
    ASSERT_EQ_INT(lp_fixture_dp_costs(&r, &pr, &dc), 0);
    ASSERT_EQ_INT(pr.dense_layers_per_stage, 2);
    ASSERT_EQ_INT(pr.moe_layers_per_stage, 2);
    const double B = 5e7;
    double sum = pr.stage_max - (2 * pr.layer + 2 * pr.moe_layer); /* the ends */
    ASSERT_TRUE(sum > 0);
    for (int moe = 0; moe < 2; moe++) {
        struct lp_layer_tensors lt;
        lp_sim_layer_tensors(&r, moe != 0, &lt);
        for (int i = 0; i < lt.npre; i++)
            sum += 2 * lt.pre[i];
        for (int i = 0; i < lt.ngrp; i++)
            sum += 2 * lt.copies * lt.grp[i];
    }
    ASSERT_TRUE(sum < B);
    ASSERT_TRUE(dc.z3_ipg_flushes == 1.0);
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r.system.gpu);
    CLOSE_REL(dc.z3_ipg_s, cm.ops->mem_s(&cm, LP_MEM_COPY, 2.0 * (sum + B) * 2.0));
}

TH_MAIN(TH_CASE(nccl_ring_allgather_by_hand), TH_CASE(nccl_ring_latency_counts_hops),
        TH_CASE(deepspeed_zero3_persistence_and_reuse),
        TH_CASE(deepspeed_zero3_rank_copies_by_hand), TH_CASE(deepspeed_zero3_list_build_by_hand),
        TH_CASE(deepspeed_zero3_ipg_bucket_by_hand), TH_CASE(layer_tensors_256_experts_ep1),
        TH_CASE(deepspeed_zero3_ipg_one_epilogue_dense_and_moe))
