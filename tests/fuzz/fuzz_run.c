/* libFuzzer harness: a run description (lp_parse_run), issue #21. The input
 * is JSON text; presets named in it load from $LLMPLAN_DATA. Every input
 * must end in LP_OK or an error code with a message, never a crash, a
 * sanitizer report or a hang; a valid run must also simulate soundly
 * (feasible => finite positive time and cost). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "llmplan/io.h"
#include "llmplan/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text) return 0;
    static struct lp_run run;
    struct lp_err err;
    lp_err_clear(&err);
    int rc = lp_parse_run(text, "fuzz.json", &run, &err);
    free(text);
    if (rc != LP_OK) {
        fuzz_check_error(rc, &err);
        return 0;
    }
    static struct lp_sim *sim;
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &run.system.gpu);
    if (lp_sim_create(&cm, &sim, NULL) != LP_OK) return 0;
    struct lp_result res;
    lp_sim_run(sim, &run, &res);
    fuzz_check_result(&res);
    lp_sim_destroy(&sim);
    return 0;
}
