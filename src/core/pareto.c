/* Pareto front of (iteration time, cost) and top-k per objective.
 *
 * Every comparison is a total order: objective values first, then the
 * memory per GPU (less first), the configuration index last. Entry a
 * dominates b when a is no worse in both objectives and better in one, or
 * equal in both with less memory or (equal memory) a smaller index; this
 * relation is a strict partial order, so the front of a union equals the
 * front of the union of the fronts, and the top-k of a union the top-k of the
 * union of the top-ks. Results therefore depend only on the set of entries
 * offered, never on the order of offers or merges (the MPI reduction relies
 * on it for rank-count invariance). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "llmplan/search.h"

/* The objectives of a result (lower is better). The loss is NaN where it
 * was not computed: such a result never enters the loss list. */
static void objectives_of(const struct lp_result *res, double obj[LP_OBJ_COUNT])
{
    obj[LP_OBJ_TIME] = res->iteration_time_s;
    obj[LP_OBJ_COST] = res->cost_usd > 0 ? res->cost_usd : res->cost_per_iteration_usd;
    obj[LP_OBJ_TOKENS_PER_USD] = -res->tokens_per_usd;
    obj[LP_OBJ_LOSS] = res->loss > 0 ? res->loss : NAN;
}

double lp_entry_objective(const struct lp_entry *e, enum lp_objective o)
{
    double obj[LP_OBJ_COUNT];
    objectives_of(&e->res, obj);
    return (unsigned)o < LP_OBJ_COUNT ? obj[o] : NAN;
}

static const char *const obj_names[LP_OBJ_COUNT] = {"time", "cost", "tokens_per_usd", "loss"};
static const char *const obj_best[LP_OBJ_COUNT] = {"fastest", "cheapest", "most_tokens_per_usd",
                                                   "lowest_loss"};

const char *lp_objective_name(enum lp_objective o)
{
    return (unsigned)o < LP_OBJ_COUNT ? obj_names[o] : "?";
}

const char *lp_objective_best_name(enum lp_objective o)
{
    return (unsigned)o < LP_OBJ_COUNT ? obj_best[o] : "?";
}

/* The second key of an objective before the memory tie-break: the loss is
 * the same for every plan of a model, so its plans rank by cost. */
static double obj_second(const double obj[LP_OBJ_COUNT], enum lp_objective o)
{
    return o == LP_OBJ_LOSS ? obj[LP_OBJ_COST] : 0.0;
}

/* What every comparison looks at: the objectives, then the memory per GPU
 * (issue #17: of two plans the model cannot tell apart in time and cost,
 * the one leaving more memory free ranks first), then the index. */
struct key {
    double obj[LP_OBJ_COUNT];
    double mem;
    uint64_t index;
};

/* lp_bounds_order's sort item: a key, the index breaking ties, the item */
struct bound_key {
    double k;
    uint64_t index;
    uint32_t slot;
};

static struct key key_of_result(uint64_t index, const struct lp_result *res)
{
    struct key k;
    objectives_of(res, k.obj);
    k.mem = res->memory_per_gpu_bytes;
    k.index = index;
    return k;
}

static struct key key_of(const struct lp_entry *e)
{
    return key_of_result(e->index, &e->res);
}

/* The tie-break of equal objectives: less memory per GPU, then the index. */
static int cmp_tie(double mem_a, uint64_t ia, double mem_b, uint64_t ib)
{
    if (mem_a < mem_b) return -1;
    if (mem_a > mem_b) return 1;
    return (ia > ib) - (ia < ib);
}

static int cmp_obj(struct key a, struct key b, enum lp_objective o)
{
    if (a.obj[o] < b.obj[o]) return -1;
    if (a.obj[o] > b.obj[o]) return 1;
    const double a2 = obj_second(a.obj, o), b2 = obj_second(b.obj, o);
    if (a2 < b2) return -1;
    if (a2 > b2) return 1;
    return cmp_tie(a.mem, a.index, b.mem, b.index);
}

/* The two objectives of a front: (time, cost), or (cost, loss) for the
 * loss front ("loss per dollar"). */
struct front_axes {
    enum lp_objective x, y;
};
static const struct front_axes time_cost = {LP_OBJ_TIME, LP_OBJ_COST};
static const struct front_axes cost_loss = {LP_OBJ_COST, LP_OBJ_LOSS};

/* Order of a front: x, then y, then memory and index. */
static int cmp_front(struct key a, struct key b, struct front_axes ax)
{
    if (a.obj[ax.x] < b.obj[ax.x]) return -1;
    if (a.obj[ax.x] > b.obj[ax.x]) return 1;
    return cmp_obj(a, b, ax.y);
}

static bool dominates_on(struct key a, struct key b, struct front_axes ax)
{
    if (a.obj[ax.x] > b.obj[ax.x] || a.obj[ax.y] > b.obj[ax.y]) return false;
    if (a.obj[ax.x] < b.obj[ax.x] || a.obj[ax.y] < b.obj[ax.y]) return true;
    return cmp_tie(a.mem, a.index, b.mem, b.index) < 0;
}

static bool dominates(struct key a, struct key b)
{
    return dominates_on(a, b, time_cost);
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

#define SET_EMPTY UINT64_MAX

/* ---- top-k: max-heap of (objective, index) over a store, index set ---- */

static int item_cmp(const struct lp_top_item *a, const struct lp_top_item *b)
{
    if (a->obj < b->obj) return -1;
    if (a->obj > b->obj) return 1;
    if (a->obj2 < b->obj2) return -1;
    if (a->obj2 > b->obj2) return 1;
    return cmp_tie(a->mem, a->index, b->mem, b->index);
}

static struct lp_top_item item_of(struct key k, enum lp_objective o, size_t slot)
{
    struct lp_top_item it = {.obj = k.obj[o],
                             .obj2 = obj_second(k.obj, o),
                             .mem = k.mem,
                             .index = k.index,
                             .cls = 0,
                             .slot = slot};
    return it;
}

static size_t set_home(uint64_t index, size_t cap)
{
    /* Fibonacci hashing: the multiplier spreads consecutive indices */
    return (size_t)((index * UINT64_C(11400714819323198485)) >> 32) & (cap - 1);
}

/* Open addressing with linear probing over keys[cap] (SET_EMPTY = free):
 * the slot holding key, or the free slot where it would go. */
static size_t slot_of(const uint64_t *keys, size_t cap, uint64_t key)
{
    size_t i = set_home(key, cap);
    while (keys[i] != key && keys[i] != SET_EMPTY)
        i = (i + 1) & (cap - 1);
    return i;
}

static bool set_has(const struct lp_topk *t, uint64_t index)
{
    return t->set_cap && t->set[slot_of(t->set, t->set_cap, index)] == index;
}

/* Remove key (present) by backward-shift deletion (linear probing, Knuth
 * TAOCP vol. 3, 6.4 Algorithm R): no tombstones, so lookups stay short.
 * vals (may be NULL) moves with its key. */
static void slot_del(uint64_t *keys, uint32_t *vals, size_t cap, uint64_t key)
{
    const size_t mask = cap - 1;
    size_t i = slot_of(keys, cap, key);
    for (size_t j = (i + 1) & mask; keys[j] != SET_EMPTY; j = (j + 1) & mask) {
        size_t h = set_home(keys[j], cap);
        /* move keys[j] into the hole at i unless its home lies in (i, j] */
        bool stays = i <= j ? (h > i && h <= j) : (h > i || h <= j);
        if (!stays) {
            keys[i] = keys[j];
            if (vals) vals[i] = vals[j];
            i = j;
        }
    }
    keys[i] = SET_EMPTY;
}

bool lp_entry_equivalent(const struct lp_entry *a, const struct lp_entry *b, enum lp_objective o)
{
    return lp_entry_objective(a, o) == lp_entry_objective(b, o) &&
           a->res.iteration_time_s == b->res.iteration_time_s &&
           lp_entry_objective(a, LP_OBJ_COST) == lp_entry_objective(b, LP_OBJ_COST) &&
           a->res.gpus == b->res.gpus && !strcmp(a->run.model.name, b->run.model.name) &&
           !strcmp(a->run.system.name, b->run.system.name);
}

/* A hash of what lp_entry_equivalent compares (FNV-1a, 64 bits): equivalent
 * entries have the same; two classes sharing one (about 2^-64 a pair) would
 * count as one, so a list could show a plan fewer. Never SET_EMPTY. */
static uint64_t class_of(const struct lp_entry *e, enum lp_objective o)
{
    uint64_t h = UINT64_C(14695981039346656037);
    const double v[3] = {lp_entry_objective(e, o), e->res.iteration_time_s,
                         lp_entry_objective(e, LP_OBJ_COST)};
    unsigned char b[sizeof(v) + sizeof(int)];
    memcpy(b, v, sizeof(v));
    memcpy(b + sizeof(v), &e->res.gpus, sizeof(int));
    for (size_t i = 0; i < sizeof(b); i++)
        h = (h ^ b[i]) * UINT64_C(1099511628211);
    for (const char *s = e->run.model.name; *s; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
    h = (h ^ 0xff) * UINT64_C(1099511628211); /* "ab"+"c" differs from "a"+"bc" */
    for (const char *s = e->run.system.name; *s; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
    return h == SET_EMPTY ? h - 1 : h;
}

static void sift_down(struct lp_top_item *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && item_cmp(&h[l], &h[m]) > 0) m = l;
        if (r < n && item_cmp(&h[r], &h[m]) > 0) m = r;
        if (m == i) return;
        struct lp_top_item x = h[i];
        h[i] = h[m];
        h[m] = x;
        i = m;
    }
}

static void sift_up(struct lp_top_item *h, size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (item_cmp(&h[p], &h[i]) >= 0) return;
        struct lp_top_item x = h[i];
        h[i] = h[p];
        h[p] = x;
        i = p;
    }
}

static int topk_init(struct lp_topk *t, size_t k, struct lp_err *err)
{
    memset(t, 0, sizeof(*t));
    t->max = LP_TOPK_SPARE * k + 1;
    t->set_cap = 16;
    while (t->set_cap < 2 * t->max)
        t->set_cap *= 2;
    t->set = malloc(t->set_cap * sizeof(uint64_t));
    t->cls = malloc(t->set_cap * sizeof(uint64_t));
    t->cls_n = malloc(t->set_cap * sizeof(uint32_t));
    t->heap = malloc(t->max * sizeof(*t->heap));
    t->free_slots = malloc(t->max * sizeof(size_t));
    if (!t->set || !t->cls || !t->cls_n || !t->heap || !t->free_slots)
        LP_FAIL(err, LP_ENOMEM, "out of memory for a top-%zu of results", k);
    memset(t->set, 0xff, t->set_cap * sizeof(uint64_t));
    memset(t->cls, 0xff, t->set_cap * sizeof(uint64_t));
    return LP_OK;
}

static void topk_free(struct lp_topk *t)
{
    free(t->store);
    free(t->heap);
    free(t->set);
    free(t->cls);
    free(t->cls_n);
    free(t->free_slots);
    memset(t, 0, sizeof(*t));
}

static void topk_reset(struct lp_topk *t)
{
    t->n = t->nslots = t->nfree = t->nclass = 0;
    if (t->set) memset(t->set, 0xff, t->set_cap * sizeof(uint64_t));
    if (t->cls) memset(t->cls, 0xff, t->set_cap * sizeof(uint64_t));
}

/* Is the top cut (k + 1 classes, or the most entries)? Then only an entry
 * before the worst kept one can enter. */
static bool topk_full(const struct lp_topk *t, size_t k)
{
    return t->nclass > k || t->n >= t->max;
}

static bool topk_wants(const struct lp_topk *t, size_t k, struct key ke, enum lp_objective o)
{
    if (!topk_full(t, k)) return true;
    struct lp_top_item it = item_of(ke, o, 0);
    return item_cmp(&it, &t->heap[0]) < 0;
}

static uint32_t class_count(const struct lp_topk *t, uint64_t cls)
{
    const size_t i = slot_of(t->cls, t->set_cap, cls);
    return t->cls[i] == cls ? t->cls_n[i] : 0;
}

/* Remove the worst kept entry (heap[0]). */
static void topk_pop(struct lp_topk *t)
{
    const struct lp_top_item w = t->heap[0];
    slot_del(t->set, NULL, t->set_cap, w.index);
    const size_t c = slot_of(t->cls, t->set_cap, w.cls);
    if (--t->cls_n[c] == 0) {
        slot_del(t->cls, t->cls_n, t->set_cap, w.cls);
        t->nclass--;
    }
    t->free_slots[t->nfree++] = w.slot;
    t->heap[0] = t->heap[--t->n];
    sift_down(t->heap, t->n, 0);
}

static int topk_add(struct lp_topk *t, size_t k, const struct lp_entry *e, enum lp_objective o,
                    struct lp_err *err)
{
    struct key ke = key_of(e);
    if (!isfinite(ke.obj[o]) || !topk_wants(t, k, ke, o) || set_has(t, e->index)) return LP_OK;
    struct lp_top_item it = item_of(ke, o, 0);
    it.cls = class_of(e, o);
    if (t->n == t->max) topk_pop(t); /* full of entries: the worst goes */
    if (t->nfree) {
        it.slot = t->free_slots[--t->nfree];
    } else {
        if (t->nslots == t->cap) {
            size_t cap = t->cap ? 2 * t->cap : 16;
            if (cap > t->max) cap = t->max;
            struct lp_entry *st = realloc(t->store, cap * sizeof(*st));
            if (!st) LP_FAIL(err, LP_ENOMEM, "out of memory growing a top-k to %zu entries", cap);
            t->store = st;
            t->cap = cap;
        }
        it.slot = t->nslots++;
    }
    t->store[it.slot] = *e;
    t->heap[t->n] = it;
    sift_up(t->heap, t->n);
    t->n++;
    t->set[slot_of(t->set, t->set_cap, e->index)] = e->index;
    const size_t c = slot_of(t->cls, t->set_cap, it.cls);
    if (t->cls[c] != it.cls) {
        t->cls[c] = it.cls;
        t->cls_n[c] = 0;
        t->nclass++;
    }
    t->cls_n[c]++;
    /* keep the prefix of entries before which at most k classes rank: the
     * worst goes while the others hold more than k classes */
    while (t->n > 1 && t->nclass - (class_count(t, t->heap[0].cls) == 1) > k)
        topk_pop(t);
    return LP_OK;
}

int lp_results_init(struct lp_results *r, int top_k, struct lp_err *err)
{
    memset(r, 0, sizeof(*r));
    r->top_k = top_k > 0 ? top_k : 1;
    for (int o = 0; o < LP_OBJ_COUNT; o++) {
        r->active[o] = o < LP_OBJ_ALWAYS;
        LP_TRY(err, topk_init(&r->top[o], (size_t)r->top_k, err));
    }
    return LP_OK;
}

void lp_results_objectives(struct lp_results *r, const struct lp_sweep *sw)
{
    for (int o = LP_OBJ_ALWAYS; o < LP_OBJ_COUNT; o++)
        r->active[o] = sw->objectives[o];
}

void lp_results_free(struct lp_results *r)
{
    if (!r) return;
    free(r->front.e);
    free(r->front_loss.e);
    for (int o = 0; o < LP_OBJ_COUNT; o++)
        topk_free(&r->top[o]);
    free(r->groups);
    memset(r, 0, sizeof(*r));
}

void lp_results_clear(struct lp_results *r)
{
    r->front.n = 0;
    r->front_loss.n = 0;
    r->ngroups = 0;
    for (int o = 0; o < LP_OBJ_COUNT; o++)
        topk_reset(&r->top[o]);
}

static int cmp_item_ptr(const void *a, const void *b)
{
    return item_cmp(a, b);
}

int lp_results_top_sorted(const struct lp_results *r, enum lp_objective o,
                          const struct lp_entry ***out, size_t *n, struct lp_err *err)
{
    const struct lp_topk *t = &r->top[o];
    *n = t->n;
    *out = malloc((t->n ? t->n : 1) * sizeof(**out));
    struct lp_top_item *items = malloc((t->n ? t->n : 1) * sizeof(*items));
    if (!*out || !items) {
        free(*out);
        free(items);
        *out = NULL;
        LP_FAIL(err, LP_ENOMEM, "out of memory sorting a top-%zu", t->n);
    }
    if (t->n) memcpy(items, t->heap, t->n * sizeof(*items));
    qsort(items, t->n, sizeof(*items), cmp_item_ptr);
    /* the cut (the first entry of a (k+1)-th class) is kept for merges only */
    if (t->nclass > (size_t)r->top_k) *n = t->n - 1;
    for (size_t i = 0; i < *n; i++)
        (*out)[i] = &t->store[items[i].slot];
    free(items);
    return LP_OK;
}

const struct lp_entry *lp_results_best(const struct lp_results *r, enum lp_objective o)
{
    const struct lp_topk *t = &r->top[o];
    if (!t->n) return NULL;
    size_t b = 0;
    for (size_t i = 1; i < t->n; i++)
        if (item_cmp(&t->heap[i], &t->heap[b]) < 0) b = i;
    return &t->store[t->heap[b].slot];
}

static int front_add(struct lp_entry_set *s, const struct lp_entry *e, struct front_axes ax,
                     struct lp_err *err)
{
    struct key ke = key_of(e);
    if (!isfinite(ke.obj[ax.x]) || !isfinite(ke.obj[ax.y])) return LP_OK;
    for (size_t i = 0; i < s->n; i++)
        if (s->e[i].index == e->index || dominates_on(key_of(&s->e[i]), ke, ax)) return LP_OK;
    size_t w = 0;
    for (size_t i = 0; i < s->n; i++)
        if (!dominates_on(ke, key_of(&s->e[i]), ax)) {
            if (w != i) s->e[w] = s->e[i];
            w++;
        }
    s->n = w;
    size_t pos = 0;
    while (pos < s->n && cmp_front(key_of(&s->e[pos]), ke, ax) < 0)
        pos++;
    return set_insert_at(s, pos, e, err);
}

/* ---- best per group ("best_by") ---- */

void lp_results_group_by(struct lp_results *r, const struct lp_space *s)
{
    const struct lp_sweep *sw = s->sweep;
    r->ngroup_dims = sw->nbest_by;
    for (int g = 0; g < sw->nbest_by; g++) {
        r->gstride[g] = s->stride[sw->best_by[g]];
        r->gradix[g] = s->radix[sw->best_by[g]];
    }
}

static uint64_t group_key(const struct lp_results *r, uint64_t index)
{
    uint64_t key = 0;
    for (int g = 0; g < r->ngroup_dims; g++) {
        const uint64_t digit = r->gstride[g] ? index / r->gstride[g] % (uint64_t)r->gradix[g] : 0;
        key = key * (uint64_t)r->gradix[g] + digit;
    }
    return key;
}

int lp_group_digit(const struct lp_results *r, uint64_t key, int g)
{
    for (int h = r->ngroup_dims - 1; h > g; h--)
        key /= (uint64_t)r->gradix[h];
    return (int)(key % (uint64_t)r->gradix[g]);
}

/* Position of key in the sorted group list (or where it would go). */
static size_t group_find(const struct lp_results *r, uint64_t key)
{
    size_t lo = 0, hi = r->ngroups;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (r->groups[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Whether a ranks before b in objective o; a result without a value of an
 * optional objective (a NaN loss) ranks after every one with a value. */
static bool better(struct key a, struct key b, enum lp_objective o)
{
    if (!isfinite(a.obj[o])) return false;
    if (!isfinite(b.obj[o])) return true;
    return cmp_obj(a, b, o) < 0;
}

/* Whether e would improve its group (cheap: no copy). */
static bool group_wants(const struct lp_results *r, uint64_t index, struct key k)
{
    if (r->ngroup_dims == 0) return false;
    const uint64_t key = group_key(r, index);
    const size_t at = group_find(r, key);
    if (at == r->ngroups || r->groups[at].key != key) return true;
    for (int o = 0; o < LP_OBJ_COUNT; o++)
        if (r->active[o] && better(k, key_of(&r->groups[at].best[o]), (enum lp_objective)o))
            return true;
    return false;
}

static int group_add(struct lp_results *r, const struct lp_entry *e, struct lp_err *err)
{
    if (r->ngroup_dims == 0) return LP_OK;
    const uint64_t key = group_key(r, e->index);
    const size_t at = group_find(r, key);
    if (at == r->ngroups || r->groups[at].key != key) {
        if (r->ngroups == r->gcap) {
            const size_t cap = r->gcap ? 2 * r->gcap : 16;
            struct lp_group *g = realloc(r->groups, cap * sizeof(*g));
            if (!g) LP_FAIL(err, LP_ENOMEM, "out of memory growing best_by to %zu groups", cap);
            r->groups = g;
            r->gcap = cap;
        }
        memmove(&r->groups[at + 1], &r->groups[at], (r->ngroups - at) * sizeof(*r->groups));
        r->ngroups++;
        r->groups[at].key = key;
        for (int o = 0; o < LP_OBJ_COUNT; o++)
            r->groups[at].best[o] = *e;
        return LP_OK;
    }
    const struct key ke = key_of(e);
    for (int o = 0; o < LP_OBJ_COUNT; o++)
        if (r->active[o] && better(ke, key_of(&r->groups[at].best[o]), (enum lp_objective)o))
            r->groups[at].best[o] = *e;
    return LP_OK;
}

int lp_results_add(struct lp_results *r, const struct lp_entry *e, struct lp_err *err)
{
    if (!e->res.feasible) return LP_OK;
    for (int o = 0; o < LP_OBJ_ALWAYS; o++)
        if (!isfinite(lp_entry_objective(e, (enum lp_objective)o))) return LP_OK;
    for (int o = 0; o < LP_OBJ_COUNT; o++)
        if (r->active[o])
            LP_TRY(err, topk_add(&r->top[o], (size_t)r->top_k, e, (enum lp_objective)o, err));
    LP_TRY(err, front_add(&r->front, e, time_cost, err));
    if (r->active[LP_OBJ_LOSS]) LP_TRY(err, front_add(&r->front_loss, e, cost_loss, err));
    LP_TRY(err, group_add(r, e, err));
    return LP_OK;
}

/* Every test here is monotone: a result no better in any objective than
 * one that is not wanted is not wanted either (the tie-breaks, memory and
 * index, equal). The search's pruning relies on it (lp_results_wants). */
bool lp_results_wants(const struct lp_results *r, uint64_t index, const struct lp_result *res)
{
    if (!res->feasible) return false;
    const struct key k = key_of_result(index, res);
    if (!isfinite(k.obj[0]) || !isfinite(k.obj[1])) return false;
    bool want = false;
    for (int o = 0; o < LP_OBJ_COUNT && !want; o++)
        want = r->active[o] && isfinite(k.obj[o]) &&
               topk_wants(&r->top[o], (size_t)r->top_k, k, (enum lp_objective)o);
    if (!want) {
        want = true;
        for (size_t i = 0; i < r->front.n && want; i++)
            if (dominates(key_of(&r->front.e[i]), k)) want = false;
    }
    if (!want && r->active[LP_OBJ_LOSS] && isfinite(k.obj[LP_OBJ_LOSS])) {
        want = true;
        for (size_t i = 0; i < r->front_loss.n && want; i++)
            if (dominates_on(key_of(&r->front_loss.e[i]), k, cost_loss)) want = false;
    }
    if (!want) want = group_wants(r, index, k);
    return want;
}

int lp_results_offer(struct lp_results *r, uint64_t index, const struct lp_run *run,
                     const struct lp_result *res, struct lp_err *err)
{
    /* most configurations are rejected here, without building an entry */
    if (!lp_results_wants(r, index, res)) return LP_OK;
    struct lp_entry e;
    memset(&e, 0, sizeof(e));
    e.index = index;
    e.run = *run;
    e.res = *res;
    return lp_results_add(r, &e, err);
}

int lp_bounds_init(struct lp_bounds *b, size_t cap, struct lp_err *err)
{
    memset(b, 0, sizeof(*b));
    if (cap < 1 || cap > LP_BOUNDS_MAX)
        LP_FAIL(err, LP_EINVAL, "a batch of %zu bounds: expected 1 to %u", cap, LP_BOUNDS_MAX);
    b->v = malloc(cap * sizeof(*b->v));
    b->order = malloc(cap * sizeof(*b->order));
    b->scratch = malloc(cap * sizeof(struct bound_key));
    if (!b->v || !b->order || !b->scratch) {
        lp_bounds_free(b);
        LP_FAIL(err, LP_ENOMEM, "out of memory (a batch of %zu bounds)", cap);
    }
    b->cap = cap;
    return LP_OK;
}

void lp_bounds_free(struct lp_bounds *b)
{
    free(b->v);
    free(b->order);
    free(b->scratch);
    memset(b, 0, sizeof(*b));
}

bool lp_bounds_push(struct lp_bounds *b, uint64_t index, const struct lp_result *lb)
{
    if (b->n < b->cap) b->v[b->n++] = (struct lp_bound_item){index, *lb};
    return b->n >= b->cap;
}

static int cmp_bound_key(const void *a, const void *b)
{
    const struct bound_key *x = a, *y = b;
    if (x->k != y->k) return x->k < y->k ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

void lp_bounds_order(struct lp_bounds *b, const struct lp_results *r)
{
    struct bound_key *k = b->scratch;
    const uint32_t n = (uint32_t)b->n;
    uint32_t *best = b->order; /* per item: its best rank so far */
    for (uint32_t i = 0; i < n; i++)
        best[i] = UINT32_MAX;
    for (int o = 0; o < LP_OBJ_COUNT; o++) {
        if (!r->active[o]) continue;
        for (uint32_t i = 0; i < n; i++) {
            double obj[LP_OBJ_COUNT];
            objectives_of(&b->v[i].lb, obj);
            /* NaN (no loss) last */
            k[i] = (struct bound_key){isnan(obj[o]) ? INFINITY : obj[o], b->v[i].index, i};
        }
        qsort(k, n, sizeof(*k), cmp_bound_key);
        for (uint32_t j = 0; j < n; j++)
            if (j < best[k[j].slot]) best[k[j].slot] = j;
    }
    /* by best rank (0 .. n-1): a counting sort into the scratch (24 bytes
     * an item hold its n + 1 counters and the n slots), then the few items
     * of one rank (one per objective at most) by index */
    uint32_t *start = (uint32_t *)b->scratch, *out = start + n + 1;
    memset(start, 0, (n + 1) * sizeof(*start));
    for (uint32_t i = 0; i < n; i++) {
        if (best[i] >= n) best[i] = n - 1; /* no objective ranked it (none is off: time) */
        start[best[i] + 1]++;
    }
    for (uint32_t j = 1; j <= n; j++)
        start[j] += start[j - 1];
    for (uint32_t i = 0; i < n; i++)
        out[start[best[i]]++] = i;
    for (uint32_t j = 1; j < n; j++) {
        const uint32_t x = out[j];
        uint32_t at = j;
        while (at > 0 && best[out[at - 1]] == best[x] && b->v[out[at - 1]].index > b->v[x].index) {
            out[at] = out[at - 1];
            at--;
        }
        out[at] = x;
    }
    memcpy(b->order, out, n * sizeof(*out));
}

int lp_results_merge(struct lp_results *dst, const struct lp_results *src, struct lp_err *err)
{
    for (size_t i = 0; i < src->front.n; i++)
        LP_TRY(err, lp_results_add(dst, &src->front.e[i], err));
    for (size_t i = 0; i < src->front_loss.n; i++)
        LP_TRY(err, lp_results_add(dst, &src->front_loss.e[i], err));
    for (int o = 0; o < LP_OBJ_COUNT; o++)
        for (size_t i = 0; i < src->top[o].n; i++)
            LP_TRY(err, lp_results_add(dst, &src->top[o].store[src->top[o].heap[i].slot], err));
    for (size_t i = 0; i < src->ngroups; i++)
        for (int o = 0; o < LP_OBJ_COUNT; o++)
            LP_TRY(err, lp_results_add(dst, &src->groups[i].best[o], err));
    return LP_OK;
}

int lp_results_pack(const struct lp_results *r, struct lp_entry **buf, uint64_t counts[3],
                    struct lp_err *err)
{
    /* [front | top time | top cost]; a top's entries in store order (unpack
     * re-adds them, so the order does not matter) */
    const struct lp_topk *tops[3] = {NULL, &r->top[LP_OBJ_TIME], &r->top[LP_OBJ_COST]};
    const size_t ns[3] = {r->front.n, r->top[LP_OBJ_TIME].n, r->top[LP_OBJ_COST].n};
    size_t ng = r->ngroups * LP_OBJ_COUNT;
    for (int o = LP_OBJ_ALWAYS; o < LP_OBJ_COUNT; o++)
        ng += r->top[o].n;
    ng += r->front_loss.n;
    size_t total = ng;
    for (int i = 0; i < 3; i++) {
        counts[i] = ns[i];
        total += ns[i];
    }
    counts[2] += ng; /* the groups' bests and the optional tops travel with the last list */
    *buf = malloc((total ? total : 1) * sizeof(**buf));
    if (!*buf) LP_FAIL(err, LP_ENOMEM, "out of memory packing %zu results", total);
    size_t off = 0;
    if (ns[0]) memcpy(*buf, r->front.e, ns[0] * sizeof(**buf));
    off = ns[0];
    for (int i = 1; i < 3; i++) /* a top's store has holes: through its heap */
        for (size_t j = 0; j < ns[i]; j++)
            (*buf)[off++] = tops[i]->store[tops[i]->heap[j].slot];
    for (size_t g = 0; g < r->ngroups; g++)
        for (int o = 0; o < LP_OBJ_COUNT; o++)
            (*buf)[off++] = r->groups[g].best[o];
    for (int o = LP_OBJ_ALWAYS; o < LP_OBJ_COUNT; o++)
        for (size_t i = 0; i < r->top[o].n; i++)
            (*buf)[off++] = r->top[o].store[r->top[o].heap[i].slot];
    for (size_t i = 0; i < r->front_loss.n; i++)
        (*buf)[off++] = r->front_loss.e[i];
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
