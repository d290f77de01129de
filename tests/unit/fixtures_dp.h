/* Shared test fixture: one run's data-parallel costs (sim_dp.c lp_dp_costs)
 * on the roofline backend, as the simulator computes them. */
#ifndef LLMPLAN_TEST_FIXTURES_DP_H
#define LLMPLAN_TEST_FIXTURES_DP_H

#include "llmplan/arch.h"
#include "sim_internal.h"

/* pr and dc of r with no backward window (nothing hidden); -1 when out of
 * memory or the layers do not split */
static inline int lp_fixture_dp_costs_cm(const struct lp_run *r, struct lp_cost_model *cm,
                                         struct lp_params *pr, struct lp_dp_cost *dc)
{
    struct lp_sim *sim = NULL;
    static int first[LP_ARCH_SPLIT_CAP];
    if (lp_sim_create(cm, &sim, NULL) != 0) return -1;
    if (lp_arch_split(&r->model, &r->par, first, LP_ARCH_SPLIT_CAP) != 0) {
        lp_sim_destroy(&sim);
        return -1;
    }
    struct lp_kinds ks;
    lp_kinds_scan(&r->model, &ks, NULL, 0);
    lp_sim_count_params(r, &ks, first, pr);
    const double bw[LP_DP_STAGES] = {0};
    lp_dp_costs(sim, r, pr, bw, 0, dc);
    lp_sim_destroy(&sim);
    return 0;
}

static inline int lp_fixture_dp_costs(const struct lp_run *r, struct lp_params *pr,
                                      struct lp_dp_cost *dc)
{
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r->system.gpu);
    return lp_fixture_dp_costs_cm(r, &cm, pr, dc);
}

#endif
