/* Model shape as a sweep dimension: a generator of transformer shapes over
 * layers x hidden, the other dimensions following from stated rules
 * (src/core/shapes.c). A sweep lists it among its models as
 *   {"generator": {"base": "gpt3-175b", "layers": {...}, "hidden": {...}, ...}}
 * (src/io/sweep_json.c; docs/search.md). Pure; no I/O. */
#ifndef LLMPLAN_SHAPES_H
#define LLMPLAN_SHAPES_H

#include "llmplan/config.h"
#include "llmplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most models one sweep may hold (presets, inline models and generated
 * shapes together); sweep.h5 names each in its model_names attribute. */
#define LP_SWEEP_MAX_MODELS 4096

struct lp_shape_gen {
    int layers_min, layers_max, layers_step; /* arithmetic ranges */
    int hidden_min, hidden_max, hidden_step;
    int head_dim;    /* heads = hidden / head_dim (hidden must be a multiple) */
    double ffn_mult; /* ffn_hidden = ffn_mult x hidden, rounded up to ffn_multiple_of */
    int ffn_multiple_of;
    double aspect_min, aspect_max; /* keep hidden / layers in [min, max]; 0 = no bound */
};

/* Defaults: head_dim 128, ffn_mult 4 (GeLU; 8/3 for a SwiGLU base),
 * ffn_multiple_of 1 (256 for a SwiGLU base), no aspect bounds. */
void lp_shape_gen_defaults(struct lp_shape_gen *g, const struct lp_model *base);

/* The shapes of g on the template base, in (layers, hidden) order: at most
 * cap written to out (out may be NULL with cap 0 to count); *n receives how
 * many there are. LP_EINVAL (message in err) for a bad range or rule. */
int lp_shapes_generate(const struct lp_shape_gen *g, const struct lp_model *base,
                       struct lp_model *out, int cap, int *n, struct lp_err *err);

#ifdef __cplusplus
}
#endif

#endif
