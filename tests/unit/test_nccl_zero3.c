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

TEST(deepspeed_zero3_persistence_and_reuse)
{
    static struct lp_run r;
    lp_fixture_gpt3_run(&r);
    lp_framework_defaults(LP_FW_MEGATRON_DEEPSPEED, &r.fw);
    r.par = (struct lp_parallel){.tp = 1,
                                 .pp = 1,
                                 .dp = 1536,
                                 .cp = 1,
                                 .ep = 1,
                                 .vp = 1,
                                 .micro_batch = 1,
                                 .recompute = LP_RECOMPUTE_FULL,
                                 .zero = 3,
                                 .schedule = LP_SCHED_1F1B};
    r.train.precision = LP_FP16;
    struct lp_params pr;
    struct lp_dp_cost dc;
    ASSERT_EQ_INT(lp_fixture_dp_costs(&r, &pr, &dc), 0);
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r.system.gpu);
    const double h = 12288, n = 1536;
#define AG(p) lp_coll_time(&cm, &r.system, LP_COLL_ALLGATHER, (p)*2.0, (int)n, 1)
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

TH_MAIN(TH_CASE(nccl_ring_allgather_by_hand), TH_CASE(nccl_ring_latency_counts_hops),
        TH_CASE(deepspeed_zero3_persistence_and_reuse))
