/* What llmplan-profile measures: the default and --quick grids, and the
 * targeted planner that derives exactly the shapes of one model. */
#include <math.h>
#include <string.h>

#include "llmplan/search.h"
#include "prof.h"

int lpp_axis_add(struct lpp_axis *a, double x, struct lp_err *err)
{
    if (!(x > 0) || !isfinite(x)) LP_FAIL(err, LP_EINVAL, "axis value %g is not positive", x);
    int i = 0;
    while (i < a->n && a->v[i] < x)
        i++;
    if (i < a->n && a->v[i] == x) return LP_OK;
    if (a->n >= LPP_AXIS_MAX)
        LP_FAIL(err, LP_EINVAL, "more than %d values on one table axis", LPP_AXIS_MAX);
    memmove(&a->v[i + 1], &a->v[i], (size_t)(a->n - i) * sizeof(double));
    a->v[i] = x;
    a->n++;
    return LP_OK;
}

int lpp_axis_geom(struct lpp_axis *a, double lo, double hi, double factor, struct lp_err *err)
{
    if (!(lo > 0) || !(hi >= lo) || !(factor > 1))
        LP_FAIL(err, LP_EINVAL, "bad geometric axis [%g, %g] x%g", lo, hi, factor);
    double x = lo;
    while (x <= hi * (1 + 1e-9)) {
        LP_TRY(err, lpp_axis_add(a, x, err));
        x *= factor;
    }
    if (a->v[a->n - 1] < hi * (1 - 1e-9)) LP_TRY(err, lpp_axis_add(a, hi, err));
    return LP_OK;
}

int lpp_axis_pad(struct lpp_axis *a, double floor_value, struct lp_err *err)
{
    if (a->n != 1) return LP_OK;
    double x = a->v[0];
    double y = floor(x / 2);
    return lpp_axis_add(a, y >= floor_value ? y : 2 * x, err);
}

long lpp_axes_points(const struct lpp_axis *axes, int n)
{
    long p = 1;
    for (int i = 0; i < n; i++)
        p *= axes[i].n;
    return p;
}

static void plan_common(const struct lpp_opts *o, struct lpp_plan *p)
{
    memset(p, 0, sizeof(*p));
    for (int f = 0; f < LPP_FAMILY_COUNT; f++)
        p->family[f] = o->family[f];
    for (int i = 0; i < LP_PREC_TABLES; i++)
        p->prec[i] = o->prec[i];
    p->reps = o->reps;
    p->warmup = o->warmup;
    p->flush_l2 = o->flush_l2;
    p->kv_group = o->kv_group;
}

/* Default grids. Sized so that a full run (bf16, fp16, fp8) takes about five
 * minutes on one H100 (lpp_estimate): GEMM dimensions 128..32768 by powers of
 * two cover the hidden sizes of 125M..175B models at TP 1..8 and 1..8 x 4k
 * tokens per micro-batch; attention covers 512..8192 tokens, head dims 64 and
 * 128; memory-bound kernels from 4 KiB to 4 GiB moved; collectives from 1 KiB
 * to 1 GiB. Shapes beyond the grid are clamped by the lookup (and flagged):
 * use --for-model for a model outside it. */
int lpp_plan_default(const struct lpp_opts *o, struct lpp_plan *p, struct lp_err *err)
{
    plan_common(o, p);
    if (o->quick) {
        if (!o->prec_given) {
            for (int i = 0; i < LP_PREC_TABLES; i++)
                p->prec[i] = false;
            p->prec[LP_BF16] = true;
        }
        if (!o->reps_given) p->reps = 5;
        if (!o->warmup_given) p->warmup = 2;
        for (int l = 0; l < LP_GEMM_LAYOUT_COUNT; l++)
            for (int d = 0; d < 3; d++)
                LP_TRY(err, lpp_axis_geom(&p->gemm[l][d], 256, 4096, 4, err));
        LP_TRY(err, lpp_axis_geom(&p->attn[0], 2, 8, 4, err));
        LP_TRY(err, lpp_axis_geom(&p->attn[1], 256, 1024, 4, err));
        LP_TRY(err, lpp_axis_geom(&p->attn[2], 64, 128, 2, err));
        LP_TRY(err, lpp_axis_geom(&p->mem, 4096, fmin(16777216.0, o->max_mem_bytes), 16, err));
        LP_TRY(err,
               lpp_axis_geom(&p->coll_bytes, 1024, fmin(16777216.0, o->max_coll_bytes), 16, err));
        return LP_OK;
    }
    for (int l = 0; l < LP_GEMM_LAYOUT_COUNT; l++)
        for (int d = 0; d < 3; d++)
            LP_TRY(err, lpp_axis_geom(&p->gemm[l][d], 128, 32768, 2, err));
    LP_TRY(err, lpp_axis_geom(&p->attn[0], 4, 256, 4, err));
    LP_TRY(err, lpp_axis_geom(&p->attn[1], 512, 8192, 2, err));
    LP_TRY(err, lpp_axis_geom(&p->attn[2], 64, 128, 2, err));
    LP_TRY(err, lpp_axis_geom(&p->mem, 4096, o->max_mem_bytes, 2, err));
    LP_TRY(err, lpp_axis_geom(&p->coll_bytes, 1024, o->max_coll_bytes, 2, err));
    return LP_OK;
}

/* One linear layer Y[T x out] = X[T x in] W: its three GEMMs in the m/n/k
 * convention of enum lp_gemm_layout (include/llmplan/profile.h). */
static int add_linear(struct lpp_plan *p, double tokens, double in, double out, struct lp_err *err)
{
    struct lpp_axis(*g)[3] = p->gemm;
    LP_TRY(err, lpp_axis_add(&g[LP_GEMM_FWD][0], tokens, err));
    LP_TRY(err, lpp_axis_add(&g[LP_GEMM_FWD][1], out, err));
    LP_TRY(err, lpp_axis_add(&g[LP_GEMM_FWD][2], in, err));
    LP_TRY(err, lpp_axis_add(&g[LP_GEMM_DGRAD][0], tokens, err));
    LP_TRY(err, lpp_axis_add(&g[LP_GEMM_DGRAD][1], in, err));
    LP_TRY(err, lpp_axis_add(&g[LP_GEMM_DGRAD][2], out, err));
    LP_TRY(err, lpp_axis_add(&g[LP_GEMM_WGRAD][0], in, err));
    LP_TRY(err, lpp_axis_add(&g[LP_GEMM_WGRAD][1], out, err));
    LP_TRY(err, lpp_axis_add(&g[LP_GEMM_WGRAD][2], tokens, err));
    return LP_OK;
}

static double ceil_div(double a, double b)
{
    return ceil(a / b);
}

/* Shapes of one TP degree t and micro-batch mb, following Megatron-LM's
 * column/row-parallel split (Shoeybi et al. 2019, sec. 3): QKV and the first
 * MLP GEMM split their output over t, the attention projection and second MLP
 * GEMM their input; SwiGLU fuses gate and up projections into one GEMM of
 * 2*ffn/t outputs; the logits GEMM splits the vocabulary. KV heads fewer than
 * t are replicated (one per rank). */
static int add_model_shapes(const struct lp_model *m, int t, int mb, int seq, struct lpp_plan *p,
                            struct lp_err *err)
{
    double hd = (double)m->hidden / m->heads;
    double tokens = (double)mb * seq;
    double q_heads = (double)(m->heads / t);
    int kv = m->kv_heads > 0 ? m->kv_heads : m->heads;
    double kv_heads = kv >= t ? (double)(kv / t) : 1.0;
    double h = m->hidden;
    double act = m->ffn_act == LP_ACT_SWIGLU ? 2.0 : 1.0;

    LP_TRY(err, add_linear(p, tokens, h, (q_heads + 2 * kv_heads) * hd, err)); /* QKV */
    LP_TRY(err, add_linear(p, tokens, q_heads * hd, h, err));                  /* proj */
    if (m->moe.experts > 0) {
        /* Expert GEMMs see the tokens routed to one expert (capacity-bounded,
         * Fedus et al. 2022 eq. 3); the router is a small dense GEMM. */
        double cf = m->moe.capacity_factor > 0 ? m->moe.capacity_factor : 1.0;
        double per_expert =
            ceil(tokens * (m->moe.top_k > 0 ? m->moe.top_k : 1) * cf / m->moe.experts);
        double effn = m->moe.ffn_hidden > 0 ? m->moe.ffn_hidden : m->ffn_hidden;
        LP_TRY(err, add_linear(p, per_expert, h, act * ceil_div(effn, t), err));
        LP_TRY(err, add_linear(p, per_expert, ceil_div(effn, t), h, err));
        LP_TRY(err, add_linear(p, tokens, h, m->moe.experts, err));
    }
    if (m->moe.experts == 0 || m->moe.layer_freq > 1) {
        LP_TRY(err, add_linear(p, tokens, h, act * ceil_div(m->ffn_hidden, t), err)); /* fc1 */
        LP_TRY(err, add_linear(p, tokens, ceil_div(m->ffn_hidden, t), h, err));       /* fc2 */
    }
    LP_TRY(err, add_linear(p, tokens, h, ceil_div(m->vocab, t), err)); /* logits */

    LP_TRY(err, lpp_axis_add(&p->attn[0], mb * q_heads, err));
    LP_TRY(err, lpp_axis_add(&p->attn[1], seq, err));
    LP_TRY(err, lpp_axis_add(&p->attn[2], hd, err));
    return LP_OK;
}

void lpp_plan_targeted_begin(struct lpp_plan *p)
{
    for (int l = 0; l < LP_GEMM_LAYOUT_COUNT; l++)
        for (int d = 0; d < 3; d++)
            p->gemm[l][d].n = 0;
    for (int d = 0; d < 3; d++)
        p->attn[d].n = 0;
    p->targeted = true;
    p->kv_group = 0;
    p->model[0] = '\0';
}

int lpp_plan_targeted_add(const struct lp_model *m, const int *tp, int ntp, const int *mb, int nmb,
                          int seq, struct lpp_plan *p, struct lp_err *err)
{
    if (m->hidden <= 0 || m->heads <= 0 || m->hidden % m->heads)
        LP_FAIL(err, LP_EINVAL, "model %s: hidden %d is not a multiple of heads %d", m->name,
                m->hidden, m->heads);
    if (m->ffn_hidden <= 0 || m->vocab <= 0)
        LP_FAIL(err, LP_EINVAL, "model %s: ffn_hidden and vocab must be positive", m->name);
    if (seq <= 0) seq = m->seq_len;
    if (seq <= 0) LP_FAIL(err, LP_EINVAL, "model %s has no seq_len: pass --seq", m->name);
    if (ntp <= 0 || nmb <= 0)
        LP_FAIL(err, LP_EINVAL, "targeted plan needs TP and micro-batch lists");
    int kv = m->kv_heads > 0 ? m->kv_heads : m->heads;
    if (m->heads % kv)
        LP_FAIL(err, LP_EINVAL, "model %s: heads %d not a multiple of kv_heads %d", m->name,
                m->heads, kv);

    int used = 0;
    for (int i = 0; i < ntp; i++) {
        /* A TP degree that does not divide the heads is infeasible in the
         * sweep (reason "tp does not divide heads"): nothing to measure. */
        if (tp[i] <= 0 || m->heads % tp[i]) continue;
        for (int j = 0; j < nmb; j++) {
            if (mb[j] <= 0) LP_FAIL(err, LP_EINVAL, "micro-batch %d is not positive", mb[j]);
            LP_TRY(err, add_model_shapes(m, tp[i], mb[j], seq, p, err));
        }
        used++;
    }
    if (!used)
        LP_FAIL(err, LP_EINVAL, "model %s: no TP degree in the list divides its %d heads", m->name,
                m->heads);
    /* GQA group of fused attention: the first model's (one table serves all) */
    if (p->kv_group == 0) p->kv_group = m->heads / kv;
    size_t len = strlen(p->model);
    if (len + 2 < sizeof(p->model))
        snprintf(p->model + len, sizeof(p->model) - len, "%s%s", len ? "," : "", m->name);
    return LP_OK;
}

int lpp_plan_targeted_end(struct lpp_plan *p, struct lp_err *err)
{
    if (p->kv_group <= 0) p->kv_group = 1;
    for (int l = 0; l < LP_GEMM_LAYOUT_COUNT; l++)
        for (int d = 0; d < 3; d++)
            LP_TRY(err, lpp_axis_pad(&p->gemm[l][d], 1, err));
    LP_TRY(err, lpp_axis_pad(&p->attn[0], 1, err));
    LP_TRY(err, lpp_axis_pad(&p->attn[1], 16, err));
    LP_TRY(err, lpp_axis_pad(&p->attn[2], 16, err));
    return LP_OK;
}

int lpp_plan_targeted(const struct lp_model *m, const int *tp, int ntp, const int *mb, int nmb,
                      int seq, struct lpp_plan *p, struct lp_err *err)
{
    lpp_plan_targeted_begin(p);
    LP_TRY(err, lpp_plan_targeted_add(m, tp, ntp, mb, nmb, seq, p, err));
    return lpp_plan_targeted_end(p, err);
}

int lpp_plan_from_sweep(const struct lp_sweep *sw, int seq, struct lpp_plan *p, struct lp_err *err)
{
    int nm = sw->nvalues[LP_DIM_MODEL], ntp = sw->nvalues[LP_DIM_TP],
        nmb = sw->nvalues[LP_DIM_MICRO_BATCH];
    if (nm <= 0 || ntp <= 0 || nmb <= 0)
        LP_FAIL(err, LP_EINVAL, "sweep %s: no models, tp or micro_batch values", sw->name);
    lpp_plan_targeted_begin(p);
    int used = 0;
    for (int i = 0; i < nm; i++) {
        struct lp_err e2;
        lp_err_clear(&e2);
        int rc = lpp_plan_targeted_add(&sw->models[i], sw->values[LP_DIM_TP], ntp,
                                       sw->values[LP_DIM_MICRO_BATCH], nmb, seq, p, &e2);
        if (rc == LP_OK) {
            used++;
        } else if (rc != LP_EINVAL || !strstr(e2.msg, "divides")) {
            if (err) *err = e2;
            return rc;
        }
    }
    if (!used)
        LP_FAIL(err, LP_EINVAL, "sweep %s: no TP value divides the heads of any model", sw->name);
    return lpp_plan_targeted_end(p, err);
}
