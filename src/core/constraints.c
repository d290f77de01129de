/* Constraints on a plan (the sweep's "constraints", issue #17): applied to
 * feasible results before any ranking, so that the "cost-optimal" plan is
 * the cheapest one that also meets a deadline, a budget, a GPU count, a
 * memory headroom or an MFU floor. The first violated constraint (in enum
 * order) is counted in plans.json's stats.excluded_by_constraint. */
#include "llmplan/search.h"

const char *lp_constraint_name(enum lp_constraint c)
{
    /* the keys of the sweep's "constraints" (src/io/sweep_json.c) */
    switch (c) {
    case LP_CONS_NONE:
        return "none";
    case LP_CONS_MAX_GPUS:
        return "max_gpus";
    case LP_CONS_MAX_DAYS:
        return "max_days";
    case LP_CONS_MAX_COST:
        return "max_cost_usd";
    case LP_CONS_MIN_HEADROOM_GIB:
        return "min_memory_headroom_gib";
    case LP_CONS_MIN_HEADROOM_FRAC:
        return "min_memory_headroom_fraction";
    case LP_CONS_MIN_MFU:
        return "min_mfu";
    case LP_CONS_COUNT:
        break;
    }
    return "?";
}

bool lp_constraints_any(const struct lp_constraints *c)
{
    return c->max_gpus > 0 || c->max_days > 0 || c->max_cost_usd > 0 || c->min_headroom_gib > 0 ||
           c->min_headroom_frac > 0 || c->min_mfu > 0;
}

enum lp_constraint lp_constraints_check(const struct lp_constraints *c, const struct lp_run *run,
                                        const struct lp_result *res)
{
    const double gib = 1024.0 * 1024.0 * 1024.0;
    const double cap = run->system.gpu.mem_bytes;
    const double free_bytes = cap - res->memory_per_gpu_bytes;
    if (c->max_gpus > 0 && res->gpus > c->max_gpus) return LP_CONS_MAX_GPUS;
    if (c->max_days > 0 && !(res->time_days <= c->max_days)) return LP_CONS_MAX_DAYS;
    if (c->max_cost_usd > 0 && !(res->cost_usd <= c->max_cost_usd)) return LP_CONS_MAX_COST;
    if (c->min_headroom_gib > 0 && !(free_bytes >= c->min_headroom_gib * gib))
        return LP_CONS_MIN_HEADROOM_GIB;
    if (c->min_headroom_frac > 0 && !(free_bytes >= c->min_headroom_frac * cap))
        return LP_CONS_MIN_HEADROOM_FRAC;
    if (c->min_mfu > 0 && !(res->mfu >= c->min_mfu)) return LP_CONS_MIN_MFU;
    return LP_CONS_NONE;
}
