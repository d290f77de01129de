/* The validity rules of a configuration: one ordered list, used by both
 * lp_sim_validate (simulate, every command) and the space walk
 * (lp_space_decode), so that the two cannot disagree (src/core/rules.c).
 *
 * Each rule is tagged with the dimension of the sweep's space at which it is
 * decided: the least significant dimension (enum lp_dim, most significant
 * first) among those it reads. The list is sorted by that tag, so the first
 * rule a configuration fails is the same whether the rules run all at once
 * (lp_rules_validate) or level by level as a walk fixes digits; and every
 * configuration sharing the digits up to a failing rule's tag fails it too,
 * which is what lets the walk skip the whole block at once. */
#ifndef LLMPLAN_RULES_H
#define LLMPLAN_RULES_H

#include <stdbool.h>

#include "llmplan/config.h"
#include "llmplan/sim.h"
#include "llmplan/space.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a rule reads: the run's parts (a walk points them at the sweep's
 * model and system without copying them). */
struct lp_rule_view {
    const struct lp_model *model;
    const struct lp_system *system;
    const struct lp_training *train; /* global_batch */
    const struct lp_parallel *par;
    enum lp_prec precision; /* the run's (a swept dimension) */
    enum lp_framework fw;   /* the run's framework (a swept dimension) */
};

/* One rule: it fails when `fails` returns true, with the numbers of the
 * message (lp_result_reason) in *a and *b. */
struct lp_rule {
    enum lp_dim dim; /* decided at this digit of the space */
    enum lp_reason reason;
    bool (*fails)(const struct lp_rule_view *v, double *a, double *b);
};

/* The rules, in order (dim non-decreasing). */
extern const struct lp_rule lp_rules[];
extern const int lp_rule_count;

/* The first rule the run fails (LP_REASON_NONE when it fails none), after
 * the degrees' precondition (every degree and the micro-batch >= 1, else
 * LP_REASON_GPU_COUNT: a walk never produces one below 1). */
enum lp_reason lp_rules_validate(const struct lp_run *run, double *a, double *b);

#ifdef __cplusplus
}
#endif

#endif
