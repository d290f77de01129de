/* The cluster scheduler's policies (src/core/cluster.c) on small traces
 * worked out by hand. Training times come from a table, not the simulator,
 * so every figure below can be checked with pencil and paper. */
#include <math.h>
#include <string.h>

#include "harness.h"
#include "llmplan/cluster.h"

/* Times in seconds: own[j] with the job's own configuration on its gpus;
 * plan[j][k] llmplan's fastest on alloc[k] GPUs. */
struct table {
    const int *alloc;
    int nalloc;
    const double *own;
    const double (*plan)[3];
};

static double table_time(void *ctx, int job, int pool, int gpus, bool own)
{
    const struct table *t = ctx;
    if (pool != 0) return INFINITY;
    if (own) return t->own[job];
    for (int k = 0; k < t->nalloc; k++)
        if (t->alloc[k] == gpus) return t->plan[job][k];
    return INFINITY;
}

/* 8 GPUs, allocations 2 / 4 / 8.
 *   A: arrives 0, asks 4 GPUs; own config 10 s; llmplan 16 / 8 / 4.4 s
 *   B: arrives 0, asks 8 GPUs; own config 6 s;  llmplan 18 / 9 / 5 s
 *   C: arrives 2, asks 2 GPUs, deadline 5 s after arrival; own 4 s; llmplan 3 / 1.6 / 1 s */
static const int ALLOC[3] = {2, 4, 8};
static const double OWN[3] = {10, 6, 4};
static const double PLAN[3][3] = {{16, 8, 4.4}, {18, 9, 5}, {3, 1.6, 1}};
static const struct lp_cjob JOBS[3] = {{0, -1, 4, 0}, {0, -1, 8, 0}, {2, 5, 2, 0}};

static void setup(struct lp_cluster_in *in, struct table *t)
{
    *t = (struct table){ALLOC, 3, OWN, PLAN};
    memset(in, 0, sizeof(*in));
    in->npools = 1;
    in->pool_gpus[0] = 8;
    memcpy(in->alloc, ALLOC, sizeof(ALLOC));
    in->nalloc = 3;
    in->jobs = JOBS;
    in->njobs = 3;
    in->time_s = table_time;
    in->ctx = t;
}

TEST(fcfs_by_hand)
{
    /* t=0 A starts on 4 (free 4); B needs 8: waits, and C (behind B) too.
     * A ends 10, B runs 10-16, C 16-20 (no backfilling).
     * JCT 10, 16, 18: mean 44/3; makespan 20; C misses its deadline (7).
     * Utilisation (4*10 + 8*6 + 2*4) / (8*20) = 96/160 = 0.6. */
    struct lp_cluster_in in;
    struct table t;
    setup(&in, &t);
    struct lp_cluster_out o;
    ASSERT_OK(lp_cluster_run(&in, LP_POLICY_FCFS, &o, NULL));
    ASSERT_NEAR(o.finish_s[0], 10, 1e-12);
    ASSERT_NEAR(o.finish_s[1], 16, 1e-12);
    ASSERT_NEAR(o.finish_s[2], 20, 1e-12);
    ASSERT_NEAR(o.makespan_s, 20, 1e-12);
    ASSERT_NEAR(o.mean_jct_s, 44.0 / 3, 1e-12);
    ASSERT_NEAR(o.p95_jct_s, 18, 1e-12);
    ASSERT_NEAR(o.max_jct_s, 18, 1e-12);
    ASSERT_NEAR(o.utilisation, 0.6, 1e-12);
    ASSERT_EQ_INT(o.deadline_misses, 1);
    ASSERT_EQ_INT(o.unschedulable, 0);
    ASSERT_EQ_INT(o.nseg, 3);
    lp_cluster_out_free(&o);
}

TEST(planned_by_hand)
{
    /* Same queue with llmplan's configurations: A 0-8, B 8-13, C 13-16.
     * JCT 8, 13, 14: mean 35/3; makespan 16; utilisation
     * (4*8 + 8*5 + 2*3) / (8*16) = 78/128; C still misses (16 > 7). */
    struct lp_cluster_in in;
    struct table t;
    setup(&in, &t);
    struct lp_cluster_out o;
    ASSERT_OK(lp_cluster_run(&in, LP_POLICY_PLANNED, &o, NULL));
    ASSERT_NEAR(o.finish_s[0], 8, 1e-12);
    ASSERT_NEAR(o.finish_s[1], 13, 1e-12);
    ASSERT_NEAR(o.finish_s[2], 16, 1e-12);
    ASSERT_NEAR(o.mean_jct_s, 35.0 / 3, 1e-12);
    ASSERT_NEAR(o.utilisation, 78.0 / 128, 1e-12);
    ASSERT_EQ_INT(o.deadline_misses, 1);
    lp_cluster_out_free(&o);
}

TEST(elastic_by_hand)
{
    /* t=0: A, B present. Minimum allocations A 2, B 2 (4 left). Gains per
     * extra GPU: A 2->4 (16-8)/2 = 4, B 2->4 (18-9)/2 = 4.5: B gets 4, then
     * A 4 (gain 4). A would end at 8, B at 9.
     * t=2: C arrives (deadline 7, so first). A has 1 - 2/8 = 0.75 left, B
     * 1 - 2/9 = 7/9. Minimums C 2, A 2, B 2 (2 left); gains A 0.75*8/2 = 3,
     * B (7/9)*9/2 = 3.5, C 1.4/2 = 0.7: B 4. C ends 2+3 = 5, A 2+12 = 14, B 9.
     * t=5: C done. A 0.75 - 3/16 = 0.5625 left, B 7/9 - 3/9 = 4/9. Minimums
     * 2 + 2; gains A 0.5625*8/2 = 2.25, B (4/9)*9/2 = 2: A 4, then B 4.
     * A ends 5 + 4.5 = 9.5, B 5 + 4 = 9.
     * t=9: B done. A 0.5625 - 4/8 = 0.0625 left, alone: 2 -> 4 -> 8
     * (gains 0.25 and 0.0625*3.6/4 = 0.05625). A ends 9 + 0.0625*4.4 = 9.275.
     * JCT A 9.275, B 9, C 3; every GPU busy all the time: utilisation 1. */
    struct lp_cluster_in in;
    struct table t;
    setup(&in, &t);
    struct lp_cluster_out o;
    ASSERT_OK(lp_cluster_run(&in, LP_POLICY_ELASTIC, &o, NULL));
    ASSERT_NEAR(o.finish_s[0], 9.275, 1e-12);
    ASSERT_NEAR(o.finish_s[1], 9, 1e-12);
    ASSERT_NEAR(o.finish_s[2], 5, 1e-12);
    ASSERT_NEAR(o.makespan_s, 9.275, 1e-12);
    ASSERT_NEAR(o.mean_jct_s, (9.275 + 9 + 3) / 3, 1e-12);
    ASSERT_NEAR(o.utilisation, 1.0, 1e-12);
    ASSERT_EQ_INT(o.deadline_misses, 0);
    /* A's allocations over time: 4 (0-2), 2 (2-5), 4 (5-9), 8 (9-9.275) */
    double a_gpu_s = 0;
    for (int s = 0; s < o.nseg; s++)
        if (o.seg[s].job == 0) a_gpu_s += o.seg[s].gpus * (o.seg[s].end_s - o.seg[s].start_s);
    ASSERT_NEAR(a_gpu_s, 4 * 2 + 2 * 3 + 4 * 4 + 8 * 0.275, 1e-12);
    lp_cluster_out_free(&o);
}

static const int ALLOC2[2] = {2, 4};
static const double OWN2[2] = {0, 0};
static const double PLAN2[2][3] = {{8, 4, 0}, {2, 1, 0}};
static const struct lp_cjob JOBS2[2] = {{0, -1, 0, 0}, {1, -1, 0, 0}};

TEST(elastic_restart_by_hand)
{
    /* 4 GPUs, allocations 2 / 4, restart 0.5 s. X (arrives 0): 8 / 4 s;
     * Y (arrives 1): 2 / 1 s.
     * t=0: X alone gets 4. t=1: X has 0.75 left; X 2, Y 2 (no GPU left).
     * X's allocation changed: it trains again from 1.5 (6 s left: 7.5);
     * Y starts fresh (no restart): ends 3.
     * t=3: X has 0.75 - 1.5/8 = 0.5625 left; it grows to 4: restart, trains
     * from 3.5 for 0.5625*4 = 2.25 s: ends 5.75.
     * Training GPU-s: X 4*1 + 2*1.5 + 4*2.25 = 16, Y 2*2 = 4: 20 / (4*5.75). */
    struct table t = {ALLOC2, 2, OWN2, PLAN2};
    struct lp_cluster_in in;
    memset(&in, 0, sizeof(in));
    in.npools = 1;
    in.pool_gpus[0] = 4;
    memcpy(in.alloc, ALLOC2, sizeof(ALLOC2));
    in.nalloc = 2;
    in.restart_s = 0.5;
    in.jobs = JOBS2;
    in.njobs = 2;
    in.time_s = table_time;
    in.ctx = &t;
    struct lp_cluster_out o;
    ASSERT_OK(lp_cluster_run(&in, LP_POLICY_ELASTIC, &o, NULL));
    ASSERT_NEAR(o.finish_s[0], 5.75, 1e-12);
    ASSERT_NEAR(o.finish_s[1], 3, 1e-12);
    ASSERT_NEAR(o.utilisation, 20.0 / 23.0, 1e-12);
    double restart_gpu_s = 0;
    for (int s = 0; s < o.nseg; s++)
        if (o.seg[s].restart) restart_gpu_s += o.seg[s].gpus * (o.seg[s].end_s - o.seg[s].start_s);
    ASSERT_NEAR(restart_gpu_s, 2 * 0.5 + 4 * 0.5, 1e-12);
    lp_cluster_out_free(&o);
    /* fcfs needs every job's gpus */
    struct lp_err err;
    lp_err_clear(&err);
    ASSERT_TRUE(lp_cluster_run(&in, LP_POLICY_FCFS, &o, &err) == LP_EINVAL);
    ASSERT_CONTAINS(err.msg, "needs the job's gpus");
    lp_cluster_out_free(&o);
}

TEST(unschedulable_and_names)
{
    /* a job asking more GPUs than the cluster has never runs and misses
     * its deadline; the others go on */
    static const struct lp_cjob J[2] = {{0, 1, 16, 0}, {0, -1, 4, 0}};
    struct lp_cluster_in in;
    struct table t;
    setup(&in, &t);
    in.jobs = J;
    in.njobs = 2;
    struct lp_cluster_out o;
    ASSERT_OK(lp_cluster_run(&in, LP_POLICY_FCFS, &o, NULL));
    ASSERT_EQ_INT(o.unschedulable, 1);
    ASSERT_EQ_INT(o.deadline_misses, 1);
    ASSERT_TRUE(isinf(o.finish_s[0]));
    ASSERT_NEAR(o.finish_s[1], 6, 1e-12); /* job 1 uses B's row of the table: own 6 s */
    lp_cluster_out_free(&o);
    enum lp_policy p;
    ASSERT_OK(lp_policy_parse("elastic", &p));
    ASSERT_TRUE(p == LP_POLICY_ELASTIC);
    ASSERT_TRUE(lp_policy_parse("sjf", &p) == LP_EINVAL);
    ASSERT_EQ_STR(lp_policy_name(LP_POLICY_PLANNED), "planned");
}

/* Two pools of 4 GPUs, allocations 2 / 4, restart 0.5 s: P0 (slower, an
 * A100 partition) and P1 (an H100 one).
 *   X: arrives 0; own configuration in P0 on 4 GPUs 5 s; llmplan P0 8 / 4 s,
 *      P1 4 / 2 s
 *   Y: arrives 1; own configuration in P1 on 2 GPUs 4 s; llmplan P0 6 / 3 s,
 *      P1 3 / 1.5 s */
static double pools_time(void *ctx, int job, int pool, int gpus, bool own)
{
    (void)ctx;
    static const double plan[2][2][2] = {{{8, 4}, {4, 2}}, {{6, 3}, {3, 1.5}}};
    if (own)
        return job == 0 ? (pool == 0 && gpus == 4 ? 5 : INFINITY)
                        : (pool == 1 && gpus == 2 ? 4 : INFINITY);
    return gpus == 2 || gpus == 4 ? plan[job][pool][gpus / 2 - 1] : INFINITY;
}

static void setup_pools(struct lp_cluster_in *in, const struct lp_cjob *jobs)
{
    memset(in, 0, sizeof(*in));
    in->npools = 2;
    in->pool_gpus[0] = in->pool_gpus[1] = 4;
    in->alloc[0] = 2;
    in->alloc[1] = 4;
    in->nalloc = 2;
    in->restart_s = 0.5;
    in->jobs = jobs;
    in->njobs = 2;
    in->time_s = pools_time;
}

TEST(pools_by_hand)
{
    static const struct lp_cjob J[2] = {{0, -1, 4, 0}, {1, -1, 2, 1}};
    struct lp_cluster_in in;
    setup_pools(&in, J);
    struct lp_cluster_out o;
    /* fcfs: a queue per pool: X in P0 0-5, Y in P1 1-5; busy 4*5 + 2*4 =
     * 28 GPU-s of 8*5; P0 20/20, P1 8/20 */
    ASSERT_OK(lp_cluster_run(&in, LP_POLICY_FCFS, &o, NULL));
    ASSERT_NEAR(o.finish_s[0], 5, 1e-12);
    ASSERT_NEAR(o.finish_s[1], 5, 1e-12);
    ASSERT_NEAR(o.utilisation, 28.0 / 40.0, 1e-12);
    ASSERT_NEAR(o.pool_utilisation[0], 1.0, 1e-12);
    ASSERT_NEAR(o.pool_utilisation[1], 0.4, 1e-12);
    ASSERT_EQ_INT(o.seg[1].pool, 1);
    lp_cluster_out_free(&o);
    /* planned: the same pools and GPUs, llmplan's times: X 0-4, Y 1-4 */
    ASSERT_OK(lp_cluster_run(&in, LP_POLICY_PLANNED, &o, NULL));
    ASSERT_NEAR(o.finish_s[0], 4, 1e-12);
    ASSERT_NEAR(o.finish_s[1], 4, 1e-12);
    lp_cluster_out_free(&o);
    /* elastic. t=0: X alone; the free GPUs of P0 would train it in 4 s, of
     * P1 in 2: P1, 2 GPUs, grown to 4 (gain (4-2)/2 = 1); ends at 2.
     * t=1: X has 0.5 left, Y arrives. X: P0 4 s, P1 2 s: P1 (2 GPUs);
     * Y: P0's 4 free GPUs 3 s, P1's 2 free 3 s: a tie, and Y runs nowhere
     * yet: the first, P0 (2 GPUs). Gains: Y 2->4 in P0 1 x (6-3)/2 = 1.5,
     * X 2->4 in P1 0.5 x (4-2)/2 = 0.5: both grow, X keeps P1 x 4 (no
     * restart), Y starts on P0 x 4: ends 1 + 3 = 4.
     * t=2: X done; Y has 1 - 1/3 = 2/3 left: P0 3 s, P1 1.5 s: it moves to
     * P1 (2, grown to 4), restarts for 0.5 s and trains 2/3 x 1.5 = 1 s:
     * ends 3.5. JCT 2 and 2.5; training GPU-s X 4*2, Y 4*1 + 4*1 = 16 of
     * 8*3.5; P0 4 of 14, P1 12 of 14 (the restart is held, not training). */
    ASSERT_OK(lp_cluster_run(&in, LP_POLICY_ELASTIC, &o, NULL));
    ASSERT_NEAR(o.finish_s[0], 2, 1e-12);
    ASSERT_NEAR(o.finish_s[1], 3.5, 1e-12);
    ASSERT_NEAR(o.mean_jct_s, 2.25, 1e-12);
    ASSERT_NEAR(o.utilisation, 16.0 / 28.0, 1e-12);
    ASSERT_NEAR(o.pool_utilisation[0], 4.0 / 14.0, 1e-12);
    ASSERT_NEAR(o.pool_utilisation[1], 12.0 / 14.0, 1e-12);
    double y_restart = 0;
    for (int s = 0; s < o.nseg; s++)
        if (o.seg[s].job == 1 && o.seg[s].restart) {
            ASSERT_EQ_INT(o.seg[s].pool, 1);
            y_restart += o.seg[s].end_s - o.seg[s].start_s;
        }
    ASSERT_NEAR(y_restart, 0.5, 1e-12);
    lp_cluster_out_free(&o);
    /* a pool out of range is refused */
    static const struct lp_cjob bad[2] = {{0, -1, 4, 2}, {1, -1, 2, 1}};
    setup_pools(&in, bad);
    struct lp_err err;
    lp_err_clear(&err);
    ASSERT_TRUE(lp_cluster_run(&in, LP_POLICY_FCFS, &o, &err) == LP_EINVAL);
    ASSERT_CONTAINS(err.msg, "pool 2");
    lp_cluster_out_free(&o);
}

TH_MAIN(TH_CASE(fcfs_by_hand), TH_CASE(planned_by_hand), TH_CASE(elastic_by_hand),
        TH_CASE(elastic_restart_by_hand), TH_CASE(unschedulable_and_names), TH_CASE(pools_by_hand))
