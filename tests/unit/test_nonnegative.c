/* Every term of the breakdown is non-negative (and finite) over many
 * configurations: dense, MoE, hybrid Mamba and MLA models, TP/PP/CP/EP/VP,
 * every schedule, recomputation and ZeRO stage, on the roofline backend.
 * The breakdown-sums-to-the-iteration test cannot catch a negative term (a
 * sum holds by construction: the schedule fallback of issue #19 gave a
 * negative pp_comm); this one can. */
#include <math.h>

#include "fixtures.h"
#include "harness.h"
#include "llmplan/io.h"
#include "llmplan/search.h"

static const char *const SWEEP =
    "{\"model\": [\"gpt3-1.3b\", \"mixtral-8x7b\", \"jamba-1.5-mini\", \"deepseek-v3\"],"
    " \"system\": \"dgx-h100\", \"gpus\": [8, 64],"
    " \"training\": {\"global_batch\": 256},"
    " \"space\": {\"tp\": [1, 2, 8], \"pp\": [1, 2, 4], \"cp\": [1, 2], \"ep\": [1, 8],"
    "   \"vp\": [1, 2], \"micro_batch\": [1, 4],"
    "   \"sequence_parallel\": \"auto\", \"recompute\": \"auto\", \"zero\": [0, 1, 3],"
    "   \"schedule\": \"auto\"}}";

static bool ok(double x)
{
    return isfinite(x) && x >= 0;
}

TEST(breakdown_terms_nonnegative)
{
    struct lp_sweep *sw = lp_fixture_sweep(SWEEP);
    ASSERT_TRUE(sw != NULL);
    struct lp_space s;
    ASSERT_OK(lp_space_init(&s, sw, NULL));
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &sw->systems[0].gpu);
    struct lp_sim *sim = NULL;
    ASSERT_OK(lp_sim_create(&cm, &sim, NULL));
    static struct lp_run run;
    static struct lp_result res;
    int feasible = 0, oom = 0, moe = 0, pp = 0;
    for (uint64_t i = 0; i < lp_space_size(&s);) {
        uint64_t span = 1;
        enum lp_reason why;
        if (lp_space_decode(&s, i, &run, &why, &span) != LP_SPACE_VALID) {
            i += span;
            continue;
        }
        i++;
        lp_space_evaluate(sim, &run, &res);
        const struct lp_memory *m = &res.memory;
        ASSERT_TRUE(ok(m->weights_bytes) && ok(m->grads_bytes) && ok(m->optimizer_bytes) &&
                    ok(m->activations_bytes) && ok(m->temp_bytes) && ok(m->total_bytes));
        if (!res.feasible) {
            ASSERT_EQ_INT(res.reason, LP_REASON_OOM);
            oom++;
            continue;
        }
        feasible++;
        moe += run.model.moe.experts > 0 && run.par.ep > 1;
        pp += run.par.pp > 1;
        const struct lp_breakdown *b = &res.breakdown;
        const double terms[] = {b->compute_s,      b->tp_comm_s,         b->pp_bubble_s,
                                b->pp_comm_s,      b->dp_comm_exposed_s, b->optimizer_s,
                                b->zero3_gather_s, res.stage_fwd_s,      res.stage_bwd_s,
                                res.kind_attn_s,   res.kind_mamba_s,     res.kind_moe_s,
                                res.kind_mlp_s,    res.kind_edge_s,      res.kind_norm_s,
                                res.zero3_fwd_s,   res.zero3_bwd_s};
        for (size_t k = 0; k < sizeof(terms) / sizeof(terms[0]); k++) {
            if (!ok(terms[k]))
                TH_FAIL_("%s tp %d pp %d cp %d ep %d vp %d mb %d: term %zu = %g", run.model.name,
                         run.par.tp, run.par.pp, run.par.cp, run.par.ep, run.par.vp,
                         run.par.micro_batch, k, terms[k]);
        }
        for (int k = 0; k < LP_OPC_COUNT; k++)
            ASSERT_TRUE(ok(res.layer_fwd_s[k]) && ok(res.layer_bwd_s[k]));
        ASSERT_TRUE(res.iteration_time_s > 0 && isfinite(res.iteration_time_s));
    }
    /* the space is not vacuous: many feasible plans, MoE with EP and
     * pipelines among them, and out-of-memory ones */
    ASSERT_TRUE(feasible > 500);
    ASSERT_TRUE(moe > 20 && pp > 100 && oom > 0);
    lp_sim_destroy(&sim);
    lp_sweep_destroy(&sw);
}

TH_MAIN(TH_CASE(breakdown_terms_nonnegative))
