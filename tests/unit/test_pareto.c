/* Pareto front and top-k: correctness against brute force on random points
 * (with many ties), and independence from the order of insertion and of
 * merges (what makes plans.json rank-count invariant). */
#include <math.h>
#include <stdlib.h>

#include "harness.h"
#include "llmplan/search.h"

#define N 600

static struct lp_entry pts[N];

/* Objectives from a small grid so that ties in time, cost and both occur. */
static void make_points(unsigned seed, double tokens)
{
    srand(seed);
    for (int i = 0; i < N; i++) {
        memset(&pts[i], 0, sizeof(pts[i]));
        pts[i].index = (uint64_t)(i * 7919 % 100003); /* distinct */
        pts[i].run.train.tokens = tokens;
        pts[i].res.feasible = rand() % 10 != 0;
        pts[i].res.iteration_time_s = 1.0 + rand() % 40;
        double c = 1.0 + rand() % 40;
        pts[i].res.cost_usd = tokens > 0 ? c : -1;
        pts[i].res.cost_per_iteration_usd = tokens > 0 ? -1 : c;
        /* the optional objectives (issue #17): few values, so ties occur;
         * one point in five has no loss (not ranked by it) */
        pts[i].res.tokens_per_usd = (double)(rand() % 20);
        pts[i].res.loss = rand() % 5 == 0 ? 0.0 : 2.0 + (rand() % 6) / 8.0;
        /* few memory values: ties in both objectives and in memory occur */
        pts[i].res.memory_per_gpu_bytes = (double)(rand() % 3);
    }
}

static double t_of(const struct lp_entry *e)
{
    return lp_entry_objective(e, LP_OBJ_TIME);
}
static double c_of(const struct lp_entry *e)
{
    return lp_entry_objective(e, LP_OBJ_COST);
}

/* The tie-break of equal objectives (issue #17): less memory, then index. */
static bool tie_before(const struct lp_entry *a, const struct lp_entry *b)
{
    if (a->res.memory_per_gpu_bytes != b->res.memory_per_gpu_bytes)
        return a->res.memory_per_gpu_bytes < b->res.memory_per_gpu_bytes;
    return a->index < b->index;
}

/* Whether a ranks before b in objective o: the objective (a loss of 0 is
 * none, ranked after every loss), the loss's tie-break by cost, then
 * tie_before. */
static bool before(const struct lp_entry *a, const struct lp_entry *b, enum lp_objective o)
{
    if (o == LP_OBJ_LOSS && (a->res.loss > 0) != (b->res.loss > 0)) return a->res.loss > 0;
    const double va = lp_entry_objective(a, o), vb = lp_entry_objective(b, o);
    if (va != vb) return va < vb;
    if (o == LP_OBJ_LOSS && c_of(a) != c_of(b)) return c_of(a) < c_of(b);
    return tie_before(a, b);
}

/* Results ranking every objective, the optional ones too. */
static int init_all(struct lp_results *r, int k)
{
    int rc = lp_results_init(r, k, NULL);
    for (int o = 0; o < LP_OBJ_COUNT; o++)
        r->active[o] = true;
    return rc;
}

static bool dom(const struct lp_entry *a, const struct lp_entry *b)
{
    if (t_of(a) > t_of(b) || c_of(a) > c_of(b)) return false;
    if (t_of(a) < t_of(b) || c_of(a) < c_of(b)) return true;
    return tie_before(a, b);
}

static int add_all(struct lp_results *r, const int *order, int n)
{
    for (int i = 0; i < n; i++)
        if (lp_results_add(r, &pts[order[i]], NULL) != LP_OK) return -1;
    return 0;
}

static void shuffle(int *o, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = rand() % (i + 1), t = o[i];
        o[i] = o[j];
        o[j] = t;
    }
}

static bool same_set(const struct lp_entry_set *a, const struct lp_entry_set *b)
{
    if (a->n != b->n) return false;
    for (size_t i = 0; i < a->n; i++)
        if (a->e[i].index != b->e[i].index) return false;
    return true;
}

/* The top-k of objective o, best first (a copy of the pointers' entries'
 * indices); n < 0 on failure. */
static int top_indices(const struct lp_results *r, int o, uint64_t *idx, int cap)
{
    const struct lp_entry **e = NULL;
    size_t n = 0;
    if (lp_results_top_sorted(r, (enum lp_objective)o, &e, &n, NULL) != LP_OK) return -1;
    for (size_t i = 0; i < n && (int)i < cap; i++)
        idx[i] = e[i]->index;
    free(e);
    return (int)n;
}

static bool same_top(const struct lp_results *a, const struct lp_results *b, int o)
{
    uint64_t x[N], y[N];
    int na = top_indices(a, o, x, N), nb = top_indices(b, o, y, N);
    return na >= 0 && na == nb && !memcmp(x, y, (size_t)na * sizeof(uint64_t));
}

static bool same(const struct lp_results *a, const struct lp_results *b)
{
    return same_set(&a->front, &b->front) && same_top(a, b, 0) && same_top(a, b, 1);
}

static void check_brute(const struct lp_results *r, int *th_failed_)
{
    /* front: exactly the feasible points no feasible point dominates */
    size_t expect = 0;
    for (int i = 0; i < N; i++) {
        if (!pts[i].res.feasible) continue;
        bool d = false;
        for (int j = 0; j < N && !d; j++)
            if (j != i && pts[j].res.feasible && dom(&pts[j], &pts[i])) d = true;
        bool in = false;
        for (size_t k = 0; k < r->front.n; k++)
            if (r->front.e[k].index == pts[i].index) in = true;
        ASSERT_EQ_INT(in, !d);
        expect += !d;
    }
    ASSERT_EQ_INT(r->front.n, expect);
    for (size_t k = 1; k < r->front.n; k++) {
        ASSERT_TRUE(t_of(&r->front.e[k - 1]) <= t_of(&r->front.e[k]));
        ASSERT_TRUE(c_of(&r->front.e[k - 1]) >= c_of(&r->front.e[k]));
    }
    /* the loss front (issue #17): points with a loss that none beats in
     * both cost and loss (equal in both: the tie-break), sorted by cost */
    expect = 0;
    for (int i = 0; i < N; i++) {
        const struct lp_entry *p = &pts[i];
        if (!p->res.feasible || !(p->res.loss > 0)) continue;
        bool d = false;
        for (int j = 0; j < N && !d; j++) {
            const struct lp_entry *q = &pts[j];
            if (j == i || !q->res.feasible || !(q->res.loss > 0)) continue;
            if (c_of(q) > c_of(p) || q->res.loss > p->res.loss) continue;
            d = c_of(q) < c_of(p) || q->res.loss < p->res.loss || tie_before(q, p);
        }
        bool in = false;
        for (size_t k = 0; k < r->front_loss.n; k++)
            if (r->front_loss.e[k].index == p->index) in = true;
        ASSERT_EQ_INT(in, !d);
        expect += !d;
    }
    ASSERT_EQ_INT(r->front_loss.n, expect);
    for (size_t k = 1; k < r->front_loss.n; k++)
        ASSERT_TRUE(c_of(&r->front_loss.e[k - 1]) <= c_of(&r->front_loss.e[k]));
    /* top-k (issue #17): the feasible points in (objective, memory, index)
     * order up to the first of a (k+1)-th class of equivalent points
     * (lp_entry_equivalent), at most LP_TOPK_SPARE k + 1 of them */
    for (int o = 0; o < LP_OBJ_COUNT; o++) {
        const struct lp_entry **s = NULL;
        size_t n = 0;
        ASSERT_OK(lp_results_top_sorted(r, (enum lp_objective)o, &s, &n, NULL));
        const struct lp_entry *want[N];
        size_t nw = 0, classes = 0;
        for (size_t rank = 0;; rank++) { /* the point of this rank */
            const struct lp_entry *x = NULL;
            for (int i = 0; i < N && !x; i++) {
                const struct lp_entry *p = &pts[i];
                if (!p->res.feasible || (o == LP_OBJ_LOSS && !(p->res.loss > 0))) continue;
                size_t better = 0;
                for (int j = 0; j < N; j++)
                    if (pts[j].res.feasible && (o != LP_OBJ_LOSS || pts[j].res.loss > 0) &&
                        before(&pts[j], p, (enum lp_objective)o))
                        better++;
                if (better == rank) x = p;
            }
            if (!x) break;
            bool seen = false;
            for (size_t k = 0; k < nw && !seen; k++)
                seen = lp_entry_equivalent(want[k], x, (enum lp_objective)o);
            if (!seen && classes == (size_t)r->top_k) break;
            classes += !seen;
            want[nw++] = x;
            if (nw == LP_TOPK_SPARE * (size_t)r->top_k + 1) break;
        }
        bool ok = n == nw && nw >= (size_t)r->top_k;
        for (size_t k = 0; k < n && ok; k++)
            ok = s[k] == want[k] || s[k]->index == want[k]->index;
        if (n) ok = ok && lp_results_best(r, (enum lp_objective)o) == s[0];
        free(s);
        ASSERT_TRUE(ok);
    }
}

TEST(front_and_topk_vs_brute_force)
{
    for (int round = 0; round < 4; round++) {
        make_points(100u + (unsigned)round, round % 2 ? 1e9 : 0.0);
        struct lp_results r;
        ASSERT_OK(init_all(&r, 7));
        int order[N];
        for (int i = 0; i < N; i++)
            order[i] = i;
        ASSERT_OK(add_all(&r, order, N));
        check_brute(&r, th_failed_);
        lp_results_free(&r);
        if (*th_failed_) return;
    }
}

TEST(order_and_merge_independence)
{
    make_points(42, 1e9);
    int order[N];
    for (int i = 0; i < N; i++)
        order[i] = i;
    struct lp_results ref;
    ASSERT_OK(init_all(&ref, 5));
    ASSERT_OK(add_all(&ref, order, N));
    for (int trial = 0; trial < 10; trial++) {
        shuffle(order, N);
        /* split into 1..4 parts ("ranks"), merge in a random order */
        int parts = 1 + trial % 4;
        struct lp_results part[4], all;
        ASSERT_OK(init_all(&all, 5));
        for (int p = 0; p < parts; p++) {
            ASSERT_OK(init_all(&part[p], 5));
            int lo = N * p / parts, hi = N * (p + 1) / parts;
            ASSERT_OK(add_all(&part[p], order + lo, hi - lo));
        }
        for (int p = parts - 1; p >= 0; p--)
            ASSERT_OK(lp_results_merge(&all, &part[(p + trial) % parts], NULL));
        ASSERT_TRUE(same(&all, &ref));
        /* merging again (duplicates) changes nothing */
        ASSERT_OK(lp_results_merge(&all, &part[0], NULL));
        ASSERT_TRUE(same(&all, &ref));
        /* pack / unpack round trip */
        struct lp_entry *buf = NULL;
        uint64_t counts[3];
        ASSERT_OK(lp_results_pack(&all, &buf, counts, NULL));
        struct lp_results back;
        ASSERT_OK(init_all(&back, 5));
        ASSERT_OK(lp_results_unpack(&back, buf, counts, NULL));
        ASSERT_TRUE(same(&back, &ref));
        free(buf);
        lp_results_free(&back);
        for (int p = 0; p < parts; p++)
            lp_results_free(&part[p]);
        lp_results_free(&all);
    }
    lp_results_free(&ref);
}

TEST(offer_matches_add)
{
    make_points(9, 0.0);
    struct lp_results a, b;
    ASSERT_OK(init_all(&a, 4));
    ASSERT_OK(init_all(&b, 4));
    for (int i = 0; i < N; i++) {
        ASSERT_OK(lp_results_add(&a, &pts[i], NULL));
        ASSERT_OK(lp_results_offer(&b, pts[i].index, &pts[i].run, &pts[i].res, NULL));
    }
    ASSERT_TRUE(same(&a, &b));
    lp_results_free(&a);
    lp_results_free(&b);
}

TEST(infeasible_and_nan_ignored)
{
    struct lp_results r;
    ASSERT_OK(init_all(&r, 3));
    static struct lp_entry e;
    memset(&e, 0, sizeof(e));
    e.res.feasible = false;
    e.res.iteration_time_s = 1;
    ASSERT_OK(lp_results_add(&r, &e, NULL));
    e.res.feasible = true;
    e.res.iteration_time_s = NAN;
    ASSERT_OK(lp_results_add(&r, &e, NULL));
    ASSERT_EQ_INT(r.front.n, 0);
    ASSERT_EQ_INT(r.top[0].n, 0);
    ASSERT_TRUE(lp_results_best(&r, LP_OBJ_TIME) == NULL);
    e.res.iteration_time_s = 2;
    e.res.cost_per_iteration_usd = 3;
    ASSERT_OK(lp_results_add(&r, &e, NULL));
    ASSERT_EQ_INT(r.front.n, 1);
    lp_results_clear(&r);
    ASSERT_EQ_INT(r.front.n, 0);
    lp_results_free(&r);
}

/* best_by groups: the best per objective of every group of index digits,
 * against brute force, for any insertion and merge order. */
TEST(groups_vs_brute_force)
{
    make_points(11, 1e9);
    struct lp_results a, b, m;
    ASSERT_OK(init_all(&a, 3));
    ASSERT_OK(init_all(&b, 3));
    ASSERT_OK(init_all(&m, 3));
    /* two group dimensions: index digits of weight 1000 (radix 7) and 10 (radix 5) */
    struct lp_results *all[3] = {&a, &b, &m};
    for (int k = 0; k < 3; k++) {
        all[k]->ngroup_dims = 2;
        all[k]->gstride[0] = 1000;
        all[k]->gradix[0] = 7;
        all[k]->gstride[1] = 10;
        all[k]->gradix[1] = 5;
    }
    int order[N];
    for (int i = 0; i < N; i++)
        order[i] = i;
    ASSERT_EQ_INT(add_all(&a, order, N), 0);
    shuffle(order, N);
    ASSERT_EQ_INT(add_all(&b, order, N / 2), 0);
    ASSERT_EQ_INT(add_all(&m, order + N / 2, N - N / 2), 0);
    ASSERT_OK(lp_results_merge(&m, &b, NULL));
    size_t groups = 0;
    for (int g0 = 0; g0 < 7; g0++)
        for (int g1 = 0; g1 < 5; g1++) {
            const struct lp_entry *best[LP_OBJ_COUNT] = {NULL};
            for (int i = 0; i < N; i++) {
                const struct lp_entry *e = &pts[i];
                if (!e->res.feasible || (int)(e->index / 1000 % 7) != g0 ||
                    (int)(e->index / 10 % 5) != g1)
                    continue;
                for (int o = 0; o < LP_OBJ_COUNT; o++)
                    if (!best[o] || before(e, best[o], (enum lp_objective)o)) best[o] = e;
            }
            if (!best[0]) continue;
            const uint64_t key = (uint64_t)g0 * 5 + (uint64_t)g1;
            for (int k = 0; k < 3; k += 2) { /* a: in order; m: shuffled and merged */
                const struct lp_results *r = all[k];
                size_t at = 0;
                while (at < r->ngroups && r->groups[at].key != key)
                    at++;
                ASSERT_TRUE(at < r->ngroups);
                ASSERT_EQ_INT(lp_group_digit(r, key, 0), g0);
                ASSERT_EQ_INT(lp_group_digit(r, key, 1), g1);
                for (int o = 0; o < LP_OBJ_COUNT; o++)
                    ASSERT_EQ_INT(r->groups[at].best[o].index, best[o]->index);
            }
            groups++;
        }
    ASSERT_EQ_INT(a.ngroups, groups);
    ASSERT_EQ_INT(m.ngroups, groups);
    lp_results_free(&a);
    lp_results_free(&b);
    lp_results_free(&m);
}

/* --prune's batch (issue #20): lp_bounds_order puts each held bound at its
 * best rank over the ranked objectives (each ranked by value then index, a
 * missing loss last; ties of that best rank by index), against brute force;
 * and deciding the batch in that order, simulating (here: offering) only
 * what is still wanted, keeps exactly what offering every point keeps. */
TEST(bounds_best_first)
{
    for (int trial = 0; trial < 6; trial++) {
        make_points(900 + (unsigned)trial, trial % 2 ? 1e9 : 0);
        struct lp_results ref, r;
        ASSERT_OK(trial < 3 ? init_all(&ref, 3) : lp_results_init(&ref, 3, NULL));
        ASSERT_OK(trial < 3 ? init_all(&r, 3) : lp_results_init(&r, 3, NULL));
        struct lp_bounds b;
        ASSERT_OK(lp_bounds_init(&b, LP_BOUNDS_BATCH, NULL));
        int n = 0;
        for (int i = 0; i < N; i++)
            if (pts[i].res.feasible) {
                ASSERT_TRUE(!lp_bounds_push(&b, pts[i].index, &pts[i].res));
                n++;
            }
        ASSERT_EQ_INT(b.n, n);
        lp_bounds_order(&b, &r);
        /* brute force: the best rank of each held item */
        static int best[N];
        for (int i = 0; i < n; i++) {
            best[i] = N;
            const struct lp_entry *a = &pts[0];
            for (int k = 0; k < N; k++)
                if (pts[k].index == b.v[i].index) a = &pts[k];
            for (int o = 0; o < LP_OBJ_COUNT; o++) {
                if (!r.active[o]) continue;
                int rank = 0;
                for (int j = 0; j < n; j++) {
                    const struct lp_result *x = &b.v[j].lb;
                    double vx = o == LP_OBJ_TIME ? x->iteration_time_s
                                : o == LP_OBJ_COST
                                    ? (x->cost_usd > 0 ? x->cost_usd : x->cost_per_iteration_usd)
                                : o == LP_OBJ_TOKENS_PER_USD ? -x->tokens_per_usd
                                : x->loss > 0                ? x->loss
                                                             : INFINITY;
                    double va = lp_entry_objective(a, (enum lp_objective)o);
                    if (o == LP_OBJ_LOSS && !(a->res.loss > 0)) va = INFINITY;
                    if (vx < va || (vx == va && b.v[j].index < a->index)) rank++;
                }
                if (rank < best[i]) best[i] = rank;
            }
        }
        for (int j = 1; j < n; j++) {
            const uint32_t p = b.order[j - 1], q = b.order[j];
            ASSERT_TRUE(best[p] < best[q] || (best[p] == best[q] && b.v[p].index < b.v[q].index));
        }
        /* decided in that order: what is kept is what offering all keeps */
        int offered = 0;
        for (int j = 0; j < n; j++) {
            const struct lp_bound_item *it = &b.v[b.order[j]];
            if (!lp_results_wants(&r, it->index, &it->lb)) continue;
            struct lp_run run;
            memset(&run, 0, sizeof(run));
            ASSERT_OK(lp_results_offer(&r, it->index, &run, &it->lb, NULL));
            offered++;
        }
        for (int i = 0; i < N; i++)
            ASSERT_OK(lp_results_add(&ref, &pts[i], NULL));
        ASSERT_TRUE(same(&r, &ref));
        ASSERT_TRUE(same_top(&r, &ref, LP_OBJ_TOKENS_PER_USD) && same_top(&r, &ref, LP_OBJ_LOSS));
        ASSERT_TRUE(same_set(&r.front_loss, &ref.front_loss));
        ASSERT_TRUE(offered < n); /* something was left out (or nothing is shown) */
        lp_bounds_free(&b);
        lp_results_free(&ref);
        lp_results_free(&r);
    }
    /* a batch says when it is full, and holds no more than its room */
    struct lp_bounds b;
    ASSERT_TRUE(lp_bounds_init(&b, 0, NULL) == LP_EINVAL);
    ASSERT_TRUE(lp_bounds_init(&b, LP_BOUNDS_MAX + 1, NULL) == LP_EINVAL);
    ASSERT_OK(lp_bounds_init(&b, LP_BOUNDS_BATCH, NULL));
    for (int i = 0; i < LP_BOUNDS_BATCH - 1; i++)
        ASSERT_TRUE(!lp_bounds_push(&b, (uint64_t)i, &pts[0].res));
    ASSERT_TRUE(lp_bounds_push(&b, LP_BOUNDS_BATCH, &pts[0].res));
    ASSERT_TRUE(lp_bounds_push(&b, LP_BOUNDS_BATCH + 1, &pts[0].res));
    ASSERT_EQ_INT(b.n, LP_BOUNDS_BATCH);
    ASSERT_EQ_INT(b.v[LP_BOUNDS_BATCH - 1].index, LP_BOUNDS_BATCH);
    lp_bounds_free(&b);
}

TH_MAIN(TH_CASE(front_and_topk_vs_brute_force), TH_CASE(order_and_merge_independence),
        TH_CASE(offer_matches_add), TH_CASE(infeasible_and_nan_ignored),
        TH_CASE(groups_vs_brute_force), TH_CASE(bounds_best_first))
