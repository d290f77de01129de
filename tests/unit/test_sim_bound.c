/* lp_sim_bound (issue #20, the search's --prune) against lp_sim_run on every
 * structurally valid layout of GPT-3 175B and of a 16-layer model on 8 to
 * 1,024 GPUs: every schedule (GPipe, 1F1B, interleaved vp 2 and 4, zb), every
 * recomputation, ZeRO stage, micro-batch size and SP choice, under every
 * framework and with blocking and overlapped p2p, roofline cost model.
 *
 * The claim pruning rests on: where lp_sim_run refuses a configuration
 * before any timing, lp_sim_bound returns that very result (LP_BOUND_EXACT);
 * where lp_sim_run's result is feasible, the bound is feasible, its memory
 * equal and its time and costs no higher (MFU, throughput, tokens per dollar
 * no lower). A bound above the exact time in a single case, by any amount,
 * would let --prune drop a plan, so the comparisons are exact. The test also
 * prints how tight the bound is (not checked: a looser bound is still
 * correct, only prunes less).
 *
 * And lp_sim_finish, which completes a bounded configuration from the
 * bound's work: its result must be lp_sim_run's bit for bit, on every
 * layout right after the bound, and in a random order of bounds, finishes
 * and other simulations in between (the memos' states then vary). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "sim_internal.h"

struct tally {
    int checked, exact, lower, bad;
    double ratio_sum;
};

/* a failed comparison: counted, and the first few printed with the layout */
#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            if (t->bad++ < 10)                                                                     \
                fprintf(stderr, "  %s:%d: %s fails: tp %d pp %d dp %d vp %d sched %d mb %d\n",     \
                        __FILE__, __LINE__, #c, r->par.tp, r->par.pp, r->par.dp, r->par.vp,        \
                        (int)r->par.schedule, r->par.micro_batch);                                 \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* bit-identical results: every field after feasible and reason (no
 * padding from reason_a on: doubles, then two ints) */
static bool same_result(const struct lp_result *a, const struct lp_result *b)
{
    const size_t o = offsetof(struct lp_result, reason_a);
    return a->feasible == b->feasible && a->reason == b->reason &&
           memcmp((const char *)a + o, (const char *)b + o, sizeof(*a) - o) == 0;
}

static void compare(struct lp_sim *sim, const struct lp_run *r, struct tally *t)
{
    struct lp_result res, lb, fin;
    lp_sim_run(sim, r, &res);
    const enum lp_bound b = lp_sim_bound(sim, r, &lb);
    const uint64_t hits = sim->finish_hits;
    lp_sim_finish(sim, r, &fin);
    t->checked++;
    CHECK(same_result(&fin, &res));
    /* right after a bound that timed, the finish takes up its work */
    CHECK(sim->finish_hits == hits + (b != LP_BOUND_EXACT));
    if (!res.feasible && res.reason != LP_REASON_NUMERIC) {
        CHECK(b == LP_BOUND_EXACT);
        CHECK(lb.reason == res.reason);
        CHECK(lb.reason_a == res.reason_a && lb.reason_b == res.reason_b);
        CHECK(lb.memory_per_gpu_bytes == res.memory_per_gpu_bytes);
        t->exact++;
        return;
    }
    if (!res.feasible) return; /* numeric: an absurd profile, not here */
    CHECK(b == LP_BOUND_LOWER);
    CHECK(lb.feasible);
    CHECK(lb.memory_per_gpu_bytes == res.memory_per_gpu_bytes);
    CHECK(lb.gpus == res.gpus);
    CHECK(lb.iteration_time_s > 0 && lb.iteration_time_s <= res.iteration_time_s);
    CHECK(lb.cost_per_iteration_usd <= res.cost_per_iteration_usd);
    CHECK(lb.cost_usd <= res.cost_usd);
    CHECK(lb.time_days <= res.time_days);
    CHECK(lb.gpu_hours <= res.gpu_hours);
    CHECK(lb.tokens_per_s >= res.tokens_per_s);
    CHECK(lb.mfu >= res.mfu);
    CHECK(lb.tokens_per_usd >= res.tokens_per_usd);
    t->lower++;
    t->ratio_sum += lb.iteration_time_s / res.iteration_time_s;
}

static void sweep(struct lp_sim *sim, const struct lp_run *base, const int *gpus, int ngpus,
                  struct tally *t)
{
    static const int tps[] = {1, 2, 4, 8}, pps[] = {1, 2, 4, 8, 16}, mbs[] = {1, 2, 4};
    /* (schedule, vp) */
    static const int sched[][2] = {{LP_SCHED_GPIPE, 1},
                                   {LP_SCHED_1F1B, 1},
                                   {LP_SCHED_ZB, 1},
                                   {LP_SCHED_INTERLEAVED, 2},
                                   {LP_SCHED_INTERLEAVED, 4}};
    for (int g = 0; g < ngpus; g++)
        for (size_t a = 0; a < sizeof(tps) / sizeof(*tps); a++)
            for (size_t p = 0; p < sizeof(pps) / sizeof(*pps); p++)
                for (size_t c = 0; c < sizeof(mbs) / sizeof(*mbs); c++)
                    for (int rc = 0; rc < 3; rc++)
                        for (int z = 0; z < 4; z++)
                            for (size_t k = 0; k < sizeof(sched) / sizeof(*sched); k++)
                                for (int sp = 0; sp < 2; sp++) {
                                    if (gpus[g] % (tps[a] * pps[p]) || (sp && tps[a] == 1))
                                        continue;
                                    struct lp_run r = *base;
                                    r.par.tp = tps[a];
                                    r.par.pp = pps[p];
                                    r.par.dp = gpus[g] / (tps[a] * pps[p]);
                                    r.par.micro_batch = mbs[c];
                                    r.par.recompute = (enum lp_recompute)rc;
                                    r.par.zero = z;
                                    r.par.schedule = (enum lp_schedule)sched[k][0];
                                    r.par.vp = sched[k][1];
                                    r.par.sequence_parallel = sp;
                                    if (lp_sim_validate(&r) != LP_REASON_NONE) continue;
                                    compare(sim, &r, t);
                                }
}

TEST(bound_below_exact)
{
    struct lp_run base;
    lp_fixture_gpt3_run(&base);
    struct lp_sim *sim = lp_fixture_roofline_sim(&base);
    ASSERT_TRUE(sim != NULL);
    struct tally t = {0};
    static const int big[] = {128, 1024}, small[] = {8, 64};
    for (int fw = 0; fw < LP_FW_COUNT; fw++)
        for (int overlap = 0; overlap < 2; overlap++) {
            struct lp_run r = base;
            lp_framework_defaults((enum lp_framework)fw, &r.fw);
            r.fw.pp_overlap = overlap;
            sweep(sim, &r, big, 2, &t);
            /* a small model: few layers, short stages, where the fill of
             * the pipeline is a large part of the time */
            strcpy(r.model.name, "test-16l");
            r.model.layers = 16;
            r.model.hidden = 2048;
            r.model.heads = 16;
            r.model.kv_heads = 16;
            r.model.ffn_hidden = 8192;
            r.train.global_batch = 256;
            sweep(sim, &r, small, 2, &t);
        }
    lp_sim_destroy(&sim);
    printf("  %d configurations: %d refused before timing (exact), %d bounded, %d failed; mean "
           "bound / exact time %.3f\n",
           t.checked, t.exact, t.lower, t.bad, t.lower ? t.ratio_sum / t.lower : 0.0);
    ASSERT_EQ_INT(t.bad, 0);
    ASSERT_TRUE(t.lower > 1000 && t.exact > 100);
}

/* every 5th valid layout of sweep()'s kind (up to cap), for the random
 * order below */
static int collect(const struct lp_run *base, int gpus, struct lp_run *list, int cap)
{
    int n = 0, valid = 0;
    for (int tp = 1; tp <= 8; tp *= 2)
        for (int pp = 1; pp <= 16; pp *= 2)
            for (int mb = 1; mb <= 4; mb *= 2)
                for (int rc = 0; rc < 3; rc++)
                    for (int z = 0; z < 4; z++)
                        for (int k = 0; k < 5; k++) {
                            if (gpus % (tp * pp) || n == cap) continue;
                            struct lp_run r = *base;
                            r.par.tp = tp;
                            r.par.pp = pp;
                            r.par.dp = gpus / (tp * pp);
                            r.par.micro_batch = mb;
                            r.par.recompute = (enum lp_recompute)rc;
                            r.par.zero = z;
                            r.par.schedule = k == 0   ? LP_SCHED_GPIPE
                                             : k == 1 ? LP_SCHED_1F1B
                                             : k == 2 ? LP_SCHED_ZB
                                                      : LP_SCHED_INTERLEAVED;
                            r.par.vp = k < 3 ? 1 : 2 * (k - 2);
                            r.par.sequence_parallel = tp > 1 && (rc + z) % 2;
                            if (lp_sim_validate(&r) == LP_REASON_NONE && valid++ % 5 == 0)
                                list[n++] = r;
                        }
    return n;
}

/* Random walks over the layouts with one simulator: bound a configuration,
 * then (at random) simulate another one or change the bounded run in place
 * before finishing it (lp_sim_finish must notice and simulate afresh), and
 * compare the finished result with a second simulator's lp_sim_run. */
TEST(finish_random_order)
{
    struct lp_run base;
    lp_fixture_gpt3_run(&base);
    struct lp_sim *sim = lp_fixture_roofline_sim(&base), *ref = lp_fixture_roofline_sim(&base);
    ASSERT_TRUE(sim != NULL && ref != NULL);
    static struct lp_run list[4096];
    int n = 0;
    static const int gpus[] = {64, 1024};
    for (int fw = 0; fw < LP_FW_COUNT; fw++)
        for (int g = 0; g < 2; g++) {
            struct lp_run r = base;
            lp_framework_defaults((enum lp_framework)fw, &r.fw);
            r.fw.pp_overlap = g;
            n += collect(&r, gpus[g], list + n, 4096 / (2 * LP_FW_COUNT));
        }
    ASSERT_TRUE(n > 1000);
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    int bad = 0, finished = 0, between = 0, changed = 0;
    for (int it = 0; it < 20000; it++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        struct lp_run r = list[x % (uint64_t)n];
        struct lp_result lb, fin, other, want;
        const enum lp_bound b = lp_sim_bound(sim, &r, &lb);
        const unsigned what = (unsigned)(x >> 40) % 4;
        if (what == 1) { /* another simulation in between */
            lp_sim_run(sim, &list[(x >> 20) % (uint64_t)n], &other);
            between++;
        } else if (what == 2) { /* the same object, another layout */
            r.par.micro_batch = r.par.micro_batch == 1 ? 2 : 1;
            changed++;
        }
        lp_sim_finish(sim, &r, &fin);
        lp_sim_run(ref, &r, &want);
        finished += b == LP_BOUND_LOWER;
        if (!same_result(&fin, &want) && bad++ < 10)
            fprintf(stderr, "  finish differs: tp %d pp %d dp %d vp %d sched %d mb %d (case %u)\n",
                    r.par.tp, r.par.pp, r.par.dp, r.par.vp, (int)r.par.schedule, r.par.micro_batch,
                    what);
    }
    printf("  %d layouts, 20000 draws: %d bounded and finished, %d with a simulation in between, "
           "%d changed in place, %d differ\n",
           n, finished, between, changed, bad);
    lp_sim_destroy(&sim);
    lp_sim_destroy(&ref);
    ASSERT_EQ_INT(bad, 0);
    ASSERT_TRUE(finished > 1000);
}

TH_MAIN(TH_CASE(bound_below_exact), TH_CASE(finish_random_order))
