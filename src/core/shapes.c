/* Transformer shapes over layers x hidden (include/llmplan/shapes.h).
 *
 * Every shape keeps its template's kind (activation, norm, positions,
 * vocabulary, sequence, bias, tied embeddings, dropout) and varies depth and
 * width; the rest follows from rules that the model families this project
 * ships use:
 *   - heads = hidden / head_dim: a fixed head dimension, 128 in GPT-3 from
 *     6.7B up (Brown et al. 2020, Table 2.1), Chinchilla (Hoffmann et al.
 *     2022, Table 4) and LLaMA; kv_heads keep the template's ratio (GQA);
 *   - ffn_hidden = 4 x hidden for GeLU MLPs (Vaswani et al. 2017; GPT-3);
 *     for SwiGLU 8/3 x hidden rounded up to a multiple of 256, the rule of
 *     LLaMA's reference code (model.py: multiple_of = 256);
 *   - aspect bounds hidden / layers: Kaplan et al. 2020 (Sec. 3.1, Fig. 5)
 *     find the loss at a fixed parameter count within a few percent over a
 *     wide range of aspect ratios, so a sweep may drop the extreme ones.
 * Names are "L<layers>-h<hidden>". MoE, MLA, Mamba, windows and layer
 * patterns of the template are not carried over (dense shapes only). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llmplan/shapes.h"

void lp_shape_gen_defaults(struct lp_shape_gen *g, const struct lp_model *base)
{
    memset(g, 0, sizeof(*g));
    g->layers_step = 1;
    g->hidden_step = 128;
    g->head_dim = 128;
    bool glu = base && base->ffn_act == LP_ACT_SWIGLU;
    g->ffn_mult = glu ? 8.0 / 3.0 : 4.0;
    g->ffn_multiple_of = glu ? 256 : 1;
}

static int shape_of(const struct lp_shape_gen *g, const struct lp_model *base, int L, int h,
                    struct lp_model *m)
{
    memset(m, 0, sizeof(*m));
    snprintf(m->name, sizeof(m->name), "L%d-h%d", L, h);
    m->layers = L;
    m->hidden = h;
    m->heads = h / g->head_dim;
    m->kv_heads = m->heads;
    if (base->kv_heads > 0 && base->kv_heads < base->heads && base->heads % base->kv_heads == 0 &&
        m->heads % (base->heads / base->kv_heads) == 0)
        m->kv_heads = m->heads / (base->heads / base->kv_heads);
    double f = ceil(g->ffn_mult * h / g->ffn_multiple_of - 1e-9) * g->ffn_multiple_of;
    m->ffn_hidden = (int)f;
    m->vocab = base->vocab;
    m->seq_len = base->seq_len;
    m->ffn_act = base->ffn_act;
    m->norm = base->norm;
    m->pos = base->pos;
    m->tied_embeddings = base->tied_embeddings;
    m->bias = base->bias;
    m->dropout = base->dropout;
    snprintf(m->source, sizeof(m->source),
             "generated from %s: heads = hidden / %d, ffn %g x hidden", base->name, g->head_dim,
             g->ffn_mult);
    return LP_OK;
}

int lp_shapes_generate(const struct lp_shape_gen *g, const struct lp_model *base,
                       struct lp_model *out, int cap, int *n, struct lp_err *err)
{
    *n = 0;
    if (g->layers_min < 1 || g->layers_max < g->layers_min || g->layers_step < 1)
        LP_FAIL(err, LP_EINVAL, "generator layers: expected 1 <= min <= max and step >= 1");
    if (g->head_dim < 1 || g->hidden_min < g->head_dim || g->hidden_max < g->hidden_min ||
        g->hidden_step < 1 || g->hidden_min % g->head_dim || g->hidden_step % g->head_dim)
        LP_FAIL(err, LP_EINVAL,
                "generator hidden: expected min <= max, min and step multiples of head_dim (%d)",
                g->head_dim);
    if (!(g->ffn_mult > 0) || g->ffn_multiple_of < 1)
        LP_FAIL(err, LP_EINVAL, "generator ffn: expected ffn_mult > 0 and ffn_multiple_of >= 1");
    if (g->aspect_min < 0 || (g->aspect_max > 0 && g->aspect_max < g->aspect_min))
        LP_FAIL(err, LP_EINVAL, "generator aspect: expected 0 <= min <= max");
    if (g->hidden_max / g->head_dim > 1 << 16 || g->layers_max > 1 << 16)
        LP_FAIL(err, LP_EINVAL, "generator: layers and heads above 65536");
    for (int L = g->layers_min; L <= g->layers_max; L += g->layers_step)
        for (int h = g->hidden_min; h <= g->hidden_max; h += g->hidden_step) {
            double a = (double)h / L;
            if (a < g->aspect_min || (g->aspect_max > 0 && a > g->aspect_max)) continue;
            if (*n < cap) shape_of(g, base, L, h, &out[*n]);
            if (++*n > LP_SWEEP_MAX_MODELS * 16) /* the caller refuses; stop counting */
                return LP_OK;
        }
    return LP_OK;
}
