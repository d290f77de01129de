/* The configuration space of a sweep, its enumeration, and the reduction of
 * its results (Pareto front, top-k). MPI-free: the MPI driver in search/
 * hands out index ranges of the space and merges these objects as bytes.
 *
 *   sweep  (src/io/sweep_json.c) the parsed sweep description (docs/search.md)
 *   space  (src/core/space.c)    mixed-radix index <-> configuration, with
 *                                cheap structural skips
 *   pareto (src/core/pareto.c)   Pareto front of (time, cost) and top-k per
 *                                objective, canonical under any merge order
 *
 * Nothing here allocates per configuration. */
#ifndef LLMPLAN_SEARCH_H
#define LLMPLAN_SEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "llmplan/config.h"
#include "llmplan/sim.h"
#include "llmplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Dimensions of the space, most significant first. The order is chosen so
 * that the structural checks that fail most often (GPU count, TP/PP/CP
 * divisibility) sit on the most significant digits: a failing prefix skips
 * the whole block of configurations below it in one step (lp_space_decode's
 * span). dp is not a dimension: it is derived as gpus / (tp*pp*cp). */
enum lp_dim {
    LP_DIM_MODEL = 0,
    /* the sequence length and the global batch (issue #17): 0 = the model's
     * seq_len / the training block's global_batch (a sweep that does not
     * list them: radix 1, every index as before); above the checks that
     * use them (cp_seq, batch) so that a failing prefix still skips */
    LP_DIM_SEQ_LEN,
    LP_DIM_GLOBAL_BATCH,
    LP_DIM_SYSTEM,
    LP_DIM_GPUS,
    LP_DIM_TP,
    LP_DIM_PP,
    LP_DIM_CP,
    LP_DIM_EP,
    LP_DIM_VP,
    LP_DIM_SCHEDULE,
    LP_DIM_MICRO_BATCH,
    LP_DIM_SP,
    LP_DIM_RECOMPUTE,
    LP_DIM_ZERO,
    /* settings that are not parallel layout (issue #17), least significant:
     * no structural check depends on them, so they never break a skip span,
     * and a sweep that does not list them (radix 1) keeps every index */
    LP_DIM_FRAMEWORK, /* index into lp_sweep.fws */
    LP_DIM_ATTENTION, /* enum lp_attention, or LP_ATTENTION_COUNT = unfused */
    LP_DIM_PRECISION, /* enum lp_prec */
    LP_DIM_FINETUNE,  /* index into lp_sweep.fts (none listed: the training block's) */
    LP_DIM_COUNT
};

/* Name of a dimension as spelled in the sweep's "space" block / sweep.h5. */
const char *lp_dim_name(enum lp_dim d);

/* Most values one dimension may list (also the most models / systems);
 * the GPU counts may list up to LP_SWEEP_MAX_GPU_VALUES (a range of node
 * multiples, "auto"). */
#define LP_SWEEP_MAX_VALUES 64
#define LP_SWEEP_MAX_GPU_VALUES 4096
#define LP_SWEEP_PATH_LEN 512

/* Constraints a plan must meet to be ranked (the sweep's "constraints";
 * 0 = not set). Checked on feasible results only, before any ranking
 * (lp_constraints_check, src/core/constraints.c). */
enum lp_constraint {
    LP_CONS_NONE = 0,
    LP_CONS_MAX_GPUS,
    LP_CONS_MAX_DAYS,
    LP_CONS_MAX_COST,
    LP_CONS_MIN_HEADROOM_GIB,
    LP_CONS_MIN_HEADROOM_FRAC,
    LP_CONS_MIN_MFU,
    LP_CONS_COUNT
};
struct lp_constraints {
    int max_gpus;
    double max_days, max_cost_usd;
    double min_headroom_gib, min_headroom_frac; /* GPU memory left unused */
    double min_mfu;
};
/* The key of a constraint in "constraints" and in plans.json. */
const char *lp_constraint_name(enum lp_constraint c);
/* The first constraint a feasible result violates, or LP_CONS_NONE. */
enum lp_constraint lp_constraints_check(const struct lp_constraints *c, const struct lp_run *run,
                                        const struct lp_result *res);
bool lp_constraints_any(const struct lp_constraints *c);

/* Objectives, each minimised. Time: iteration_time_s. Cost: the training
 * cost cost_usd when the sweep has a token budget (training.tokens > 0),
 * else the cost of one iteration, cost_per_iteration_usd. The two optional
 * ones (the sweep's "objectives", issue #17): tokens per dollar
 * (-tokens_per_usd, the bill's: src/core/bill.c) and the loss the plan's
 * model reaches on its token budget (lp_result.loss, a fit of
 * include/llmplan/loss.h), ties by cost: "the lowest loss, at its cheapest".
 * Ties are broken by the memory per GPU (less first: more headroom), then by
 * the index, so every ordering is total and the results canonical. */
enum lp_objective {
    LP_OBJ_TIME = 0,
    LP_OBJ_COST,
    LP_OBJ_TOKENS_PER_USD,
    LP_OBJ_LOSS,
    LP_OBJ_COUNT
};
/* The objectives every sweep ranks by (the others only when asked for). */
#define LP_OBJ_ALWAYS 2
/* One value of the "finetune" dimension: full training (lora_rank 0) or
 * LoRA / QLoRA settings (struct lp_training's lora_* fields), and its name
 * in sweep.h5 and best_by groups ("full", "lora-r16", "lora-r16-4bit"). */
struct lp_sweep_finetune {
    int lora_rank, lora_base_bits;
    enum lp_lora_targets lora_targets;
    double lora_dropout;
    char name[48];
};

/* Most dimensions a sweep's "best_by" may group by. */
#define LP_GROUP_MAX 4

/* A parsed sweep description. values[d][0..nvalues[d]-1] are the values of
 * dimension d, in the order the space enumerates them: for LP_DIM_MODEL and
 * LP_DIM_SYSTEM the indices 0..n-1 into models[] / systems[] (the model
 * digit is the index itself: a generator can give up to LP_SWEEP_MAX_MODELS
 * models, include/llmplan/shapes.h, of which values[] lists the first
 * LP_SWEEP_MAX_VALUES); for enums their
 * integer codes (enum lp_recompute, enum lp_schedule); for sp 0/1. dp_values
 * is a filter on the derived dp (ndp == 0: any dp, the "auto" default). */
struct lp_sweep {
    char name[LP_NAME_LEN];
    struct lp_model *models;   /* nvalues[LP_DIM_MODEL] entries */
    struct lp_system *systems; /* nvalues[LP_DIM_SYSTEM] entries */
    int nvalues[LP_DIM_COUNT];
    int values[LP_DIM_COUNT][LP_SWEEP_MAX_GPU_VALUES];
    int ndp;
    int dp_values[LP_SWEEP_MAX_VALUES];
    struct lp_training train;
    struct lp_framework_opts fw;   /* the first (or only) framework */
    struct lp_framework_opts *fws; /* nvalues[LP_DIM_FRAMEWORK] frameworks */
    struct lp_sweep_finetune *fts; /* nvalues[LP_DIM_FINETUNE] entries */
    /* "" = data/profiles/<gpu>.h5 of each system's GPU; "roofline"; "synth";
     * or a profile file path (used for every system without its own
     * lp_system.profile: a system key, or the sweep's "profile" map). */
    char profile[LP_SWEEP_PATH_LEN];
    int top_k;                      /* default 10 */
    char output[LP_SWEEP_PATH_LEN]; /* "" = not given (the CLI decides) */
    struct lp_constraints cons;     /* "constraints" */
    int nbest_by;                   /* "best_by": group by these dimensions */
    enum lp_dim best_by[LP_GROUP_MAX];
    /* "objectives": the optional objectives asked for (indexed by enum
     * lp_objective; time and cost are always ranked) and "loss_fit" */
    bool objectives[LP_OBJ_COUNT];
    int loss_fit; /* enum lp_loss_fit */
};

/* Parse a sweep (docs/search.md). origin names the file in messages. */
int lp_sweep_parse(const char *json_text, const char *origin, struct lp_sweep **out,
                   struct lp_err *err);
int lp_sweep_load(const char *path, struct lp_sweep **out, struct lp_err *err);
/* NULL-safe; NULLs the handle. */
void lp_sweep_destroy(struct lp_sweep **sw);

/* ---- the configuration space ---- */

struct lp_space {
    const struct lp_sweep *sweep;  /* borrowed */
    int radix[LP_DIM_COUNT];       /* = sweep->nvalues */
    uint64_t stride[LP_DIM_COUNT]; /* index weight of one step of digit d */
    uint64_t size;                 /* product of the radices (0 if any is 0) */
};

/* Verdict of decoding one index. */
enum lp_space_verdict { LP_SPACE_VALID = 0, LP_SPACE_SKIP = 1 };

/* Build the space of a sweep. Fails (LP_EINVAL) if its size exceeds 2^62. */
int lp_space_init(struct lp_space *s, const struct lp_sweep *sw, struct lp_err *err);
uint64_t lp_space_size(const struct lp_space *s);

/* index <-> digits (digit[d] in [0, radix[d])). */
void lp_space_digits(const struct lp_space *s, uint64_t index, int digit[LP_DIM_COUNT]);
uint64_t lp_space_encode(const struct lp_space *s, const int digit[LP_DIM_COUNT]);

/* Decode configuration `index` (< size) into *run. Returns LP_SPACE_VALID, or
 * LP_SPACE_SKIP when the configuration is structurally invalid (it is then
 * counted as skipped, never simulated and not a dataset row) with *reason.
 * span (may be NULL) receives how many consecutive indices from `index` on
 * are skipped for the same reason (>= 1; 1 when valid): a caller walks the
 * space with `index += span`. The reason of a skipped configuration depends
 * on the configuration only (the first failing check in dimension order,
 * then lp_sim_validate), never on where a walk started. No allocation. */
enum lp_space_verdict lp_space_decode(const struct lp_space *s, uint64_t index, struct lp_run *run,
                                      enum lp_reason *reason, uint64_t *span);

/* Evaluate one valid configuration: the memory footprint first (over the
 * GPU's capacity: infeasible, LP_REASON_OOM, without timing; lp_sim_run does
 * this itself), then the full simulation. Never fails, never allocates. */
void lp_space_evaluate(struct lp_sim *sim, const struct lp_run *run, struct lp_result *res);

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
    LP_COUNT_DONE = 0,  /* indices walked (evaluated + skipped) */
    LP_COUNT_EVALUATED, /* dataset rows: feasible + infeasible */
    LP_COUNT_FEASIBLE,
    LP_COUNT_SKIPPED,
    LP_COUNT_INFEASIBLE_BY_REASON, /* + enum lp_reason */
    LP_COUNT_SKIPPED_BY_REASON = LP_COUNT_INFEASIBLE_BY_REASON + LP_REASON_COUNT,
    /* feasible but excluded by the sweep's constraints (+ enum lp_constraint) */
    LP_COUNT_EXCLUDED_BY_CONSTRAINT = LP_COUNT_SKIPPED_BY_REASON + LP_REASON_COUNT,
    LP_COUNT_N = LP_COUNT_EXCLUDED_BY_CONSTRAINT + LP_CONS_COUNT
};

struct lp_counts {
    uint64_t v[LP_COUNT_N];
};

/* ---- plans.json (src/io/plans_json.c) ---- */

struct lp_plans_info {
    uint64_t space_size;
    double wall_s;       /* varies between runs */
    int ranks;           /* varies between runs */
    const char *sweep;   /* sweep file, as given */
    const char *profile; /* cost model(s) used, for provenance */
    double tokens;       /* the sweep's token budget (selects the cost objective) */
    /* "" or the systems run with another GPU's profile (--allow-profile-mismatch) */
    const char *profile_mismatch;
    const struct lp_sweep *sweep_desc; /* constraints, best_by and the names of groups */
    /* validation bands (data/trust_bands.json): every plan gets "trust";
     * NULL: none */
    const struct lp_trust *trust;
};

/* Write plans.json atomically: time_optimal, cost_optimal (null when nothing
 * is feasible), pareto, top_time, top_cost, stats (docs/search.md). */
int lp_plans_write(const char *path, const struct lp_results *res, const struct lp_counts *c,
                   const struct lp_plans_info *info, struct lp_err *err);

#ifdef __cplusplus
}
#endif

#endif
