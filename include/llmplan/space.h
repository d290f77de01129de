/* The configuration space of a sweep: its dimensions (src/core/rules.c
 * tags each validity rule with one), the parsed sweep and its constraints,
 * and the mixed-radix walk (src/core/space.c). Core: no MPI, no I/O. */
#ifndef LLMPLAN_SPACE_H
#define LLMPLAN_SPACE_H

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
     * only the precision rule (the GPU's peak for it) reads one of them, on
     * the last digit, so they never break a skip span, and a sweep that does
     * not list them (radix 1) keeps every index */
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
/* The same with the index's digits (lp_space_digits) given: a walk that
 * needs them too computes them once. */
enum lp_space_verdict lp_space_decode_digits(const struct lp_space *s, uint64_t index,
                                             const int dg[LP_DIM_COUNT], struct lp_run *run,
                                             enum lp_reason *reason, uint64_t *span);
/* The same for a walk (issue #20): held, when not NULL, are the digits of
 * the valid configuration *run holds from an earlier decode (and nothing
 * else wrote it since); the checks of the dimensions above the first digit
 * that differs, which passed for it, are not made again, and its model and
 * system are not copied again while the dimensions up to the system's stay.
 * The verdict, reason, span and run are lp_space_decode_digits'. */
enum lp_space_verdict lp_space_decode_next(const struct lp_space *s, uint64_t index,
                                           const int dg[LP_DIM_COUNT], const int *held,
                                           struct lp_run *run, enum lp_reason *reason,
                                           uint64_t *span);

/* Evaluate one valid configuration: the memory footprint first (over the
 * GPU's capacity: infeasible, LP_REASON_OOM, without timing; lp_sim_run does
 * this itself), then the full simulation. Never fails, never allocates. */
void lp_space_evaluate(struct lp_sim *sim, const struct lp_run *run, struct lp_result *res);

#ifdef __cplusplus
}
#endif

#endif
