/* Pareto front of (iteration time, cost) and top-k per objective.
 *
 * Every comparison is a total order: objective values first, the
 * configuration index last. Entry a dominates b when a is no worse in both
 * objectives and better in one, or equal in both with a smaller index; this
 * relation is a strict partial order, so the front of a union equals the
 * front of the union of the fronts, and the top-k of a union the top-k of the
 * union of the top-ks. Results therefore depend only on the set of entries
 * offered, never on the order of offers or merges (the MPI reduction relies
 * on it for rank-count invariance). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "llmplan/search.h"

double lp_entry_objective(const struct lp_entry *e, enum lp_objective o)
{
    if (o == LP_OBJ_TIME) return e->res.iteration_time_s;
    return e->res.cost_usd > 0 ? e->res.cost_usd : e->res.cost_per_iteration_usd;
}

/* What every comparison looks at. */
struct key {
    double obj[LP_OBJ_COUNT];
    uint64_t index;
};

static struct key key_of(const struct lp_entry *e)
{
    struct key k = {{lp_entry_objective(e, LP_OBJ_TIME), lp_entry_objective(e, LP_OBJ_COST)},
                    e->index};
    return k;
}

static int cmp_obj(struct key a, struct key b, enum lp_objective o)
{
    if (a.obj[o] < b.obj[o]) return -1;
    if (a.obj[o] > b.obj[o]) return 1;
    return (a.index > b.index) - (a.index < b.index);
}

/* Order of the front: time, then cost, then index. */
static int cmp_front(struct key a, struct key b)
{
    if (a.obj[LP_OBJ_TIME] < b.obj[LP_OBJ_TIME]) return -1;
    if (a.obj[LP_OBJ_TIME] > b.obj[LP_OBJ_TIME]) return 1;
    return cmp_obj(a, b, LP_OBJ_COST);
}

static bool dominates(struct key a, struct key b)
{
    if (a.obj[0] > b.obj[0] || a.obj[1] > b.obj[1]) return false;
    if (a.obj[0] < b.obj[0] || a.obj[1] < b.obj[1]) return true;
    return a.index < b.index;
}

static int set_reserve(struct lp_entry_set *s, size_t n, struct lp_err *err)
{
    if (n <= s->cap) return LP_OK;
    size_t cap = s->cap ? s->cap : 16;
    while (cap < n)
        cap *= 2;
    struct lp_entry *e = realloc(s->e, cap * sizeof(*e));
    if (!e) LP_FAIL(err, LP_ENOMEM, "out of memory growing a result set to %zu entries", cap);
    s->e = e;
    s->cap = cap;
    return LP_OK;
}

static int set_insert_at(struct lp_entry_set *s, size_t pos, const struct lp_entry *e,
                         struct lp_err *err)
{
    LP_TRY(err, set_reserve(s, s->n + 1, err));
    memmove(&s->e[pos + 1], &s->e[pos], (s->n - pos) * sizeof(*e));
    s->e[pos] = *e;
    s->n++;
    return LP_OK;
}

int lp_results_init(struct lp_results *r, int top_k, struct lp_err *err)
{
    memset(r, 0, sizeof(*r));
    r->top_k = top_k > 0 ? top_k : 1;
    for (int o = 0; o < LP_OBJ_COUNT; o++)
        LP_TRY(err, set_reserve(&r->top[o], (size_t)r->top_k + 1, err));
    return LP_OK;
}

void lp_results_free(struct lp_results *r)
{
    if (!r) return;
    free(r->front.e);
    for (int o = 0; o < LP_OBJ_COUNT; o++)
        free(r->top[o].e);
    memset(r, 0, sizeof(*r));
}

void lp_results_clear(struct lp_results *r)
{
    r->front.n = 0;
    for (int o = 0; o < LP_OBJ_COUNT; o++)
        r->top[o].n = 0;
}

static int top_add(struct lp_entry_set *s, size_t k, const struct lp_entry *e, enum lp_objective o,
                   struct lp_err *err)
{
    /* fast reject: not better than the current k-th */
    struct key ke = key_of(e);
    if (s->n >= k && cmp_obj(ke, key_of(&s->e[s->n - 1]), o) >= 0) return LP_OK;
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_obj(key_of(&s->e[mid]), ke, o);
        if (c == 0) return LP_OK; /* same index: already present */
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    LP_TRY(err, set_insert_at(s, lo, e, err));
    if (s->n > k) s->n = k;
    return LP_OK;
}

static int front_add(struct lp_entry_set *s, const struct lp_entry *e, struct lp_err *err)
{
    struct key ke = key_of(e);
    for (size_t i = 0; i < s->n; i++)
        if (s->e[i].index == e->index || dominates(key_of(&s->e[i]), ke)) return LP_OK;
    size_t w = 0;
    for (size_t i = 0; i < s->n; i++)
        if (!dominates(ke, key_of(&s->e[i]))) {
            if (w != i) s->e[w] = s->e[i];
            w++;
        }
    s->n = w;
    size_t pos = 0;
    while (pos < s->n && cmp_front(key_of(&s->e[pos]), ke) < 0)
        pos++;
    return set_insert_at(s, pos, e, err);
}

int lp_results_add(struct lp_results *r, const struct lp_entry *e, struct lp_err *err)
{
    if (!e->res.feasible) return LP_OK;
    for (int o = 0; o < LP_OBJ_COUNT; o++)
        if (!isfinite(lp_entry_objective(e, (enum lp_objective)o))) return LP_OK;
    for (int o = 0; o < LP_OBJ_COUNT; o++)
        LP_TRY(err, top_add(&r->top[o], (size_t)r->top_k, e, (enum lp_objective)o, err));
    LP_TRY(err, front_add(&r->front, e, err));
    return LP_OK;
}

int lp_results_offer(struct lp_results *r, uint64_t index, const struct lp_run *run,
                     const struct lp_result *res, struct lp_err *err)
{
    if (!res->feasible) return LP_OK;
    struct key k = {
        {res->iteration_time_s, res->cost_usd > 0 ? res->cost_usd : res->cost_per_iteration_usd},
        index};
    if (!isfinite(k.obj[0]) || !isfinite(k.obj[1])) return LP_OK;
    /* most configurations are rejected here, without building an entry */
    bool want = false;
    for (int o = 0; o < LP_OBJ_COUNT && !want; o++) {
        const struct lp_entry_set *s = &r->top[o];
        want = s->n < (size_t)r->top_k ||
               cmp_obj(k, key_of(&s->e[s->n - 1]), (enum lp_objective)o) < 0;
    }
    if (!want) {
        want = true;
        for (size_t i = 0; i < r->front.n && want; i++)
            if (dominates(key_of(&r->front.e[i]), k)) want = false;
    }
    if (!want) return LP_OK;
    struct lp_entry e;
    memset(&e, 0, sizeof(e));
    e.index = index;
    e.run = *run;
    e.res = *res;
    return lp_results_add(r, &e, err);
}

int lp_results_merge(struct lp_results *dst, const struct lp_results *src, struct lp_err *err)
{
    for (size_t i = 0; i < src->front.n; i++)
        LP_TRY(err, lp_results_add(dst, &src->front.e[i], err));
    for (int o = 0; o < LP_OBJ_COUNT; o++)
        for (size_t i = 0; i < src->top[o].n; i++)
            LP_TRY(err, lp_results_add(dst, &src->top[o].e[i], err));
    return LP_OK;
}

int lp_results_pack(const struct lp_results *r, struct lp_entry **buf, uint64_t counts[3],
                    struct lp_err *err)
{
    const struct lp_entry_set *sets[3] = {&r->front, &r->top[LP_OBJ_TIME], &r->top[LP_OBJ_COST]};
    size_t total = 0;
    for (int i = 0; i < 3; i++) {
        counts[i] = sets[i]->n;
        total += sets[i]->n;
    }
    *buf = malloc((total ? total : 1) * sizeof(**buf));
    if (!*buf) LP_FAIL(err, LP_ENOMEM, "out of memory packing %zu results", total);
    size_t off = 0;
    for (int i = 0; i < 3; i++) {
        if (sets[i]->n) memcpy(*buf + off, sets[i]->e, sets[i]->n * sizeof(**buf));
        off += sets[i]->n;
    }
    return LP_OK;
}

int lp_results_unpack(struct lp_results *r, const struct lp_entry *buf, const uint64_t counts[3],
                      struct lp_err *err)
{
    uint64_t total = counts[0] + counts[1] + counts[2];
    for (uint64_t i = 0; i < total; i++)
        LP_TRY(err, lp_results_add(r, &buf[i], err));
    return LP_OK;
}
