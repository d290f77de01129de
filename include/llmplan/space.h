/* The dimensions of a sweep's configuration space (src/core/space.c walks
 * them; src/core/rules.c tags each validity rule with one). Core: no MPI,
 * no I/O. */
#ifndef LLMPLAN_SPACE_H
#define LLMPLAN_SPACE_H

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
    LP_DIM_COUNT
};

/* Name of a dimension as spelled in the sweep's "space" block / sweep.h5. */
const char *lp_dim_name(enum lp_dim d);

#ifdef __cplusplus
}
#endif

#endif
