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

static double table_time(void *ctx, int job, int gpus, bool own)
{
    const struct table *t = ctx;
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
static const struct lp_cjob JOBS[3] = {{0, -1, 4}, {0, -1, 8}, {2, 5, 2}};

static void setup(struct lp_cluster_in *in, struct table *t)
{
    *t = (struct table){ALLOC, 3, OWN, PLAN};
    memset(in, 0, sizeof(*in));
    in->gpus = 8;
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
static const struct lp_cjob JOBS2[2] = {{0, -1, 0}, {1, -1, 0}};

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
    in.gpus = 4;
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
    static const struct lp_cjob J[2] = {{0, 1, 16}, {0, -1, 4}};
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

TH_MAIN(TH_CASE(fcfs_by_hand), TH_CASE(planned_by_hand), TH_CASE(elastic_by_hand),
        TH_CASE(elastic_restart_by_hand), TH_CASE(unschedulable_and_names))
