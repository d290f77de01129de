/* libFuzzer harness: a sweep description (lp_sweep_parse) and its space,
 * issue #21: refused with a message, or parsed into a space whose first
 * indices decode and simulate soundly. */
#include "fuzz_common.h"
#include "llmplan/io.h"
#include "llmplan/search.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text) return 0;
    struct lp_sweep *sw = NULL;
    struct lp_err err;
    lp_err_clear(&err);
    int rc = lp_sweep_parse(text, "fuzz.json", &sw, &err);
    free(text);
    if (rc != LP_OK) {
        fuzz_check_error(rc, &err);
        return 0;
    }
    struct lp_space sp;
    lp_err_clear(&err);
    if (lp_space_init(&sp, sw, &err) == LP_OK) {
        static struct lp_run run;
        struct lp_sim *sim = NULL;
        struct lp_cost_model cm;
        lp_cost_model_roofline(&cm, &sw->systems[0].gpu);
        if (lp_sim_create(&cm, &sim, NULL) == LP_OK) {
            /* walk at most 2000 steps of the space, as a rank would */
            uint64_t i = 0;
            for (int steps = 0; steps < 2000 && i < lp_space_size(&sp); steps++) {
                enum lp_reason why;
                uint64_t span = 0;
                if (lp_space_decode(&sp, i, &run, &why, &span) == LP_SPACE_VALID) {
                    /* the cost model of the configuration's own system */
                    lp_cost_model_roofline(&cm, &run.system.gpu);
                    struct lp_result res;
                    lp_sim_run(sim, &run, &res);
                    fuzz_check_result(&res);
                }
                if (span == 0) abort();
                i += span;
            }
            lp_sim_destroy(&sim);
        }
    } else {
        fuzz_check_error(-1, &err);
    }
    lp_sweep_destroy(&sw);
    return 0;
}
