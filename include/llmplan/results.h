/* The reduction of a sweep's results (src/core/pareto.c): the Pareto front
 * of (time, cost), the top-k per objective and the best per group,
 * canonical under any merge order; the sweep's counters. Core: no MPI, no
 * I/O. */
#ifndef LLMPLAN_RESULTS_H
#define LLMPLAN_RESULTS_H

#include <stddef.h>
#include <stdint.h>

#include "llmplan/sim.h"
#include "llmplan/space.h"
#include "llmplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- results: Pareto front and top-k ---- */

/* One evaluated configuration, fixed size and pointer-free (sent over MPI and
 * checkpointed as bytes between identical binaries). */
struct lp_entry {
    uint64_t index;
    struct lp_run run;
    struct lp_result res;
};

double lp_entry_objective(const struct lp_entry *e, enum lp_objective o);
/* The key of an optional objective in the sweep's "objectives", and the
 * name of its list in plans.json (top_<name>) and of a group's best. */
const char *lp_objective_name(enum lp_objective o);
const char *lp_objective_best_name(enum lp_objective o);

/* A set of entries kept sorted (growable array; the only allocation is when
 * it grows). */
struct lp_entry_set {
    struct lp_entry *e;
    size_t n, cap;
};

/* The k best of one objective: a binary max-heap of small items (the worst
 * kept at heap[0]) whose slots point into a store of entries, a hash set of
 * the indices present, and the number of entries of each class of
 * equivalent plans (lp_entry_equivalent). Issue #17: k counts classes, not
 * entries, so a top list shows k distinct plans after the equivalent ones
 * are collapsed. What is kept is a prefix of the order: every entry before
 * which fewer than k + 1 classes rank (so the first entry of the (k+1)-th
 * class too, the "cut", which makes the merge of two tops exact), at most
 * LP_TOPK_SPARE x k + 1 entries. An offer costs O(log k) and copies one
 * entry only when it is kept. Unordered: read it through
 * lp_results_top_sorted or lp_results_best. */
#define LP_TOPK_SPARE 4
struct lp_top_item {
    double obj;
    double obj2; /* the loss objective's tie-break (cost); 0 for the others */
    double mem;  /* memory per GPU: the tie-break before the index */
    uint64_t index;
    uint64_t cls; /* hash of the entry's class of equivalent plans */
    size_t slot;  /* into store */
};
struct lp_topk {
    struct lp_entry *store; /* nslots used, cap allocated (grows to max) */
    struct lp_top_item *heap;
    uint64_t *set; /* open addressing, set_cap (a power of two >= 2 max) */
    uint64_t *cls; /* class hashes, same capacity, with their counts */
    uint32_t *cls_n;
    size_t *free_slots; /* slots of the store freed by a removal */
    size_t n, cap, set_cap, max, nslots, nfree, nclass;
};

/* Plans the model cannot tell apart in objective o: the same model, system
 * and GPU count with bit-identical iteration time, cost and objective, e.g.
 * recompute none and selective under FlashAttention, or ZeRO stages whose
 * communication is hidden (plans.json collapses them, "equivalent_to"). */
bool lp_entry_equivalent(const struct lp_entry *a, const struct lp_entry *b, enum lp_objective o);

/* The best entry per objective of one group of configurations (the
 * configurations sharing the values of the "best_by" dimensions). */
struct lp_group {
    uint64_t key; /* mixed-radix number of the group dimensions' digits */
    struct lp_entry best[LP_OBJ_COUNT];
};

/* The reduction state of a sweep: Pareto front of (time, cost), the k best
 * per objective, and (with lp_results_group_by) the best per group. */
struct lp_results {
    int top_k;
    bool active[LP_OBJ_COUNT];        /* objectives ranked (time and cost always) */
    struct lp_entry_set front;        /* sorted by (time, cost, index) */
    struct lp_entry_set front_loss;   /* with the loss objective: (cost, loss) */
    struct lp_topk top[LP_OBJ_COUNT]; /* by (objective, index) */
    int ngroup_dims;
    uint64_t gstride[LP_GROUP_MAX]; /* index weight of the group dimensions */
    int gradix[LP_GROUP_MAX];
    struct lp_group *groups; /* sorted by key */
    size_t ngroups, gcap;
};

/* Rank by the sweep's optional objectives too (lp_sweep.objectives). Call
 * after lp_results_init, before any offer. */
void lp_results_objectives(struct lp_results *r, const struct lp_sweep *sw);

/* Keep the best entry per objective of every group of the sweep's
 * "best_by" dimensions (none: nothing). Call after lp_results_init. */
void lp_results_group_by(struct lp_results *r, const struct lp_space *s);
/* The digit of group dimension g (0 .. ngroup_dims-1) of a group key. */
int lp_group_digit(const struct lp_results *r, uint64_t key, int g);

/* The top-k of objective o, best first: *out gets a malloc'd array of n
 * pointers into r (valid until r changes; free(*out) only). */
int lp_results_top_sorted(const struct lp_results *r, enum lp_objective o,
                          const struct lp_entry ***out, size_t *n, struct lp_err *err);
/* The best entry of objective o, or NULL when there is none (O(k)). */
const struct lp_entry *lp_results_best(const struct lp_results *r, enum lp_objective o);

int lp_results_init(struct lp_results *r, int top_k, struct lp_err *err);
void lp_results_free(struct lp_results *r);
void lp_results_clear(struct lp_results *r);

/* Offer one feasible entry (with finite objectives; others are ignored).
 * An entry whose index is already present is ignored, so merging the same
 * entries twice is harmless. Fails only on allocation. */
int lp_results_add(struct lp_results *r, const struct lp_entry *e, struct lp_err *err);

/* Same as lp_results_add for the entry {index, *run, *res}, without copying
 * the configuration unless it is kept (the hot path of a sweep). */
int lp_results_offer(struct lp_results *r, uint64_t index, const struct lp_run *run,
                     const struct lp_result *res, struct lp_err *err);

/* Whether lp_results_offer would keep {index, res} anywhere (a top-k, a
 * front, a group); when it would not, offering it changes nothing. Monotone:
 * a result no better than res in every objective (time, cost, tokens per
 * dollar, loss), with the same memory, is not wanted when res is not, so a
 * bound (lp_sim_bound) that is not wanted proves the configuration is not. */
bool lp_results_wants(const struct lp_results *r, uint64_t index, const struct lp_result *res);

/* Lower bounds held back by --prune (issue #20) so that a range's
 * configurations are decided best first: every bound of a batch is taken,
 * then lp_bounds_order sorts them by their best rank in any ranked objective
 * (time and cost always, tokens per dollar and loss where the sweep ranks
 * them; ties by index) and the walk simulates them in that order while
 * lp_results_wants still wants them. Simulating the likely winners first
 * fills the top-k and the front early, so more of the rest is pruned; the
 * results are the same in any order (above). */
struct lp_bound_item {
    uint64_t index;
    struct lp_result lb; /* lp_sim_bound's lower bound */
};
struct lp_bounds {
    struct lp_bound_item *v;
    size_t n, cap;   /* held, room */
    uint32_t *order; /* after lp_bounds_order: the items best first */
    void *scratch;   /* lp_bounds_order's sort keys */
};
#define LP_BOUNDS_BATCH 8192     /* the default room */
#define LP_BOUNDS_MAX (1u << 20) /* the most room (the order is uint32_t) */
/* A batch with room for cap bounds (1 .. LP_BOUNDS_MAX). */
int lp_bounds_init(struct lp_bounds *b, size_t cap, struct lp_err *err);
void lp_bounds_free(struct lp_bounds *b);
/* Hold one bound; true when the batch is full: order and decide it before the next push (a
 * push onto a full batch holds nothing and returns true again). */
bool lp_bounds_push(struct lp_bounds *b, uint64_t index, const struct lp_result *lb);
void lp_bounds_order(struct lp_bounds *b, const struct lp_results *r);

/* Merge src into dst: the result depends only on the union of the entries
 * offered, not on the order of offers or merges. */
int lp_results_merge(struct lp_results *dst, const struct lp_results *src, struct lp_err *err);

/* Serialise to a flat array of entries: [front | top time | top cost and
 * the groups' bests], with the three counts. Pack returns a malloc'd
 * buffer; unpack adds them to r (every entry is offered to every list: an
 * entry one rank rejected is rejected again, so the union is unchanged). */
int lp_results_pack(const struct lp_results *r, struct lp_entry **buf, uint64_t counts[3],
                    struct lp_err *err);
int lp_results_unpack(struct lp_results *r, const struct lp_entry *buf, const uint64_t counts[3],
                      struct lp_err *err);

/* ---- counters ---- */

/* Counters of a sweep (plain uint64 array so that MPI can sum it). */
enum lp_count {
    LP_COUNT_DONE = 0,  /* indices walked (evaluated + skipped + pruned) */
    LP_COUNT_EVALUATED, /* dataset rows: feasible + infeasible */
    LP_COUNT_FEASIBLE,
    LP_COUNT_SKIPPED,
    LP_COUNT_INFEASIBLE_BY_REASON, /* + enum lp_reason */
    LP_COUNT_SKIPPED_BY_REASON = LP_COUNT_INFEASIBLE_BY_REASON + LP_REASON_COUNT,
    /* feasible but excluded by the sweep's constraints (+ enum lp_constraint) */
    LP_COUNT_EXCLUDED_BY_CONSTRAINT = LP_COUNT_SKIPPED_BY_REASON + LP_REASON_COUNT,
    /* --prune (issue #20): configurations that fit in memory whose bounds
     * (lp_sim_bound) prove they can enter no ranking, or break a
     * constraint, so their schedule is never solved; PRUNED = RANKING + CONSTRAINT */
    LP_COUNT_PRUNED = LP_COUNT_EXCLUDED_BY_CONSTRAINT + LP_CONS_COUNT,
    LP_COUNT_PRUNED_RANKING,
    LP_COUNT_PRUNED_CONSTRAINT,
    LP_COUNT_N
};

struct lp_counts {
    uint64_t v[LP_COUNT_N];
};

#ifdef __cplusplus
}
#endif

#endif
