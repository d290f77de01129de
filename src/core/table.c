/* Interpolation tables and profile objects (profile.h).
 *
 * Lookup is multilinear in log(axis)/log(value) space: along every axis the
 * cell [a_i, a_i+1] holding x is found by binary search, the weight is
 * w = log(x/a_i) / log(a_i+1/a_i), and the result is
 * exp(sum over the 2^n cell corners of weight * log(value)). Time tables of
 * GEMMs and memory kernels are close to power laws of their sizes, so this is
 * far more accurate between log-spaced points than linear interpolation, and
 * it is monotone between monotone corners. Corners of zero weight are skipped
 * (a coordinate on a grid point costs no log), and a point on the grid returns
 * the stored double itself. Beyond the grid see lp_table_lookup in profile.h.
 *
 * The hot path allocates nothing. On a prepared table (lp_table_prepare: logs
 * of axes and values cached) it costs one branch-free binary search and one
 * log per off-grid coordinate, the weights of the non-zero corners and one
 * exp; bench/bench_lookup.c measures it. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmplan/profile.h"

/* ---- names ---- */

static const char *const gemm_layout_names[LP_GEMM_LAYOUT_COUNT] = {"fwd", "dgrad", "wgrad"};
static const char *const attn_impl_names[LP_ATTN_IMPL_COUNT] = {"fused",  "unfused", "flash1",
                                                                "triton", "cudnn",   "unfused_fs"};
static const char *const pass_names[LP_PASS_COUNT] = {"fwd", "bwd"};
static const char *const mem_kind_names[LP_MEM_KIND_COUNT] = {
    "layernorm", "rmsnorm", "gelu", "swiglu",        "softmax",   "dropout",
    "residual",  "rope",    "adam", "cross_entropy", "embedding", "copy"};
static const char *const coll_names[LP_COLL_COUNT] = {"allreduce", "allgather", "reducescatter",
                                                      "alltoall", "sendrecv"};
static const char *const tier_names[LP_TIER_COUNT] = {"intra", "inter"};

const char *lp_gemm_layout_name(enum lp_gemm_layout l)
{
    return (unsigned)l < LP_GEMM_LAYOUT_COUNT ? gemm_layout_names[l] : "?";
}
const char *lp_attn_impl_name(enum lp_attn_impl i)
{
    return (unsigned)i < LP_ATTN_IMPL_COUNT ? attn_impl_names[i] : "?";
}
const char *lp_pass_name(enum lp_pass p)
{
    return (unsigned)p < LP_PASS_COUNT ? pass_names[p] : "?";
}
const char *lp_mem_kind_name(enum lp_mem_kind k)
{
    return (unsigned)k < LP_MEM_KIND_COUNT ? mem_kind_names[k] : "?";
}
const char *lp_coll_name(enum lp_coll c)
{
    return (unsigned)c < LP_COLL_COUNT ? coll_names[c] : "?";
}
const char *lp_tier_name(enum lp_tier t)
{
    return (unsigned)t < LP_TIER_COUNT ? tier_names[t] : "?";
}

/* ---- tables ---- */

int lp_table_alloc(struct lp_table *t, int ndim, const int *dims, bool with_spread,
                   struct lp_err *err)
{
    memset(t, 0, sizeof(*t));
    if (ndim < 1 || ndim > LP_TABLE_MAX_DIMS)
        LP_FAIL(err, LP_EINVAL, "table: %d dimensions (expected 1..%d)", ndim, LP_TABLE_MAX_DIMS);
    size_t n = 1;
    for (int d = 0; d < ndim; d++) {
        if (dims[d] < 1 || dims[d] > (1 << 20))
            LP_FAIL(err, LP_EINVAL, "table: axis %d has %d points (expected 1..%d)", d, dims[d],
                    1 << 20);
        n *= (size_t)dims[d];
        if (n > (size_t)LP_TABLE_MAX_VALUES)
            LP_FAIL(err, LP_EINVAL, "table: more than %d values", LP_TABLE_MAX_VALUES);
    }
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        t->dims[d] = dims[d];
        t->axis[d] = calloc((size_t)dims[d], sizeof(double));
        if (!t->axis[d]) goto nomem;
    }
    t->value = calloc(n, sizeof(double));
    if (!t->value) goto nomem;
    if (with_spread) {
        t->spread = calloc(n, sizeof(double));
        if (!t->spread) goto nomem;
    }
    return LP_OK;
nomem:
    lp_table_free(t);
    LP_FAIL(err, LP_ENOMEM, "table: out of memory (%zu values)", n);
}

void lp_table_free(struct lp_table *t)
{
    if (!t) return;
    for (int d = 0; d < LP_TABLE_MAX_DIMS; d++) {
        free(t->axis[d]);
        free(t->log_axis[d]);
    }
    free(t->value);
    free(t->spread);
    free(t->log_value);
    memset(t, 0, sizeof(*t));
}

static size_t table_size(const struct lp_table *t)
{
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= (size_t)t->dims[d];
    return n;
}

int lp_table_copy(struct lp_table *dst, const struct lp_table *src, struct lp_err *err)
{
    if (!lp_table_present(src)) {
        memset(dst, 0, sizeof(*dst));
        return LP_OK;
    }
    LP_TRY(err, lp_table_alloc(dst, src->ndim, src->dims, src->spread != NULL, err));
    for (int d = 0; d < src->ndim; d++) {
        memcpy(dst->axis[d], src->axis[d], (size_t)src->dims[d] * sizeof(double));
        memcpy(dst->axis_name[d], src->axis_name[d], sizeof(dst->axis_name[d]));
    }
    size_t n = table_size(src);
    memcpy(dst->value, src->value, n * sizeof(double));
    if (src->spread) memcpy(dst->spread, src->spread, n * sizeof(double));
    if (src->log_value) {
        int rc = lp_table_prepare(dst, err);
        if (rc < 0) {
            lp_table_free(dst);
            return rc;
        }
    }
    return LP_OK;
}

int lp_table_prepare(struct lp_table *t, struct lp_err *err)
{
    if (!lp_table_present(t)) return LP_OK;
    const size_t n = table_size(t);
    for (int d = 0; d < t->ndim; d++) {
        if (!t->log_axis[d]) t->log_axis[d] = malloc((size_t)t->dims[d] * sizeof(double));
        if (!t->log_axis[d]) goto nomem;
        for (int i = 0; i < t->dims[d]; i++)
            t->log_axis[d][i] = log(t->axis[d][i]);
    }
    if (!t->log_value) t->log_value = malloc(n * sizeof(double));
    if (!t->log_value) goto nomem;
    for (size_t i = 0; i < n; i++)
        t->log_value[i] = log(t->value[i]);
    return LP_OK;
nomem:
    for (int d = 0; d < LP_TABLE_MAX_DIMS; d++) {
        free(t->log_axis[d]);
        t->log_axis[d] = NULL;
    }
    LP_FAIL(err, LP_ENOMEM, "table: out of memory for the log cache (%zu values)", n);
}

int lp_profile_prepare(struct lp_profile *p, struct lp_err *err)
{
    for (int i = 0; i < LP_PROFILE_SLOTS; i++)
        LP_TRY(err, lp_table_prepare(lp_profile_slot_table(p, i), err));
    return LP_OK;
}

double lp_table_axis_pow(const char *axis_name)
{
    /* Size-like axes: beyond the largest measured size the kernel is
     * throughput-bound, so time grows with the work (GEMM m, n, k; attention
     * batch x heads; bytes moved) or with seq^2 for attention's sequence. */
    static const struct {
        const char *name;
        double pow;
    } size_like[] = {{"m", 1}, {"n", 1}, {"k", 1}, {"batch_heads", 1}, {"bytes", 1}, {"seq", 2}};
    if (!strchr("mnkbs", axis_name[0])) return 0; /* quick reject */
    for (size_t i = 0; i < sizeof(size_like) / sizeof(size_like[0]); i++)
        if (strcmp(axis_name, size_like[i].name) == 0) return size_like[i].pow;
    return 0;
}

/* Index i of the cell [a[i], a[i+1]] holding x (a[0] <= x <= a[n-1], n >= 2).
 * Branch-free binary search (the select compiles to a conditional move):
 * random coordinates would mispredict about half the branches of the usual
 * form, which costs more than the comparisons. */
static int find_cell(const double *a, int n, double x)
{
    const double *base = a;
    int len = n - 1; /* cells */
    while (len > 1) {
        const int half = len >> 1;
        base = base[half] <= x ? base + half : base;
        len -= half;
    }
    return (int)(base - a);
}

double lp_table_lookup_pow(const struct lp_table *t, const double *x, const double *pow,
                           bool *clamped)
{
    if (clamped) *clamped = false;
    if (!lp_table_present(t)) return NAN;
    const int nd = t->ndim;
    size_t lo_off[LP_TABLE_MAX_DIMS], hi_off[LP_TABLE_MAX_DIMS];
    double w[LP_TABLE_MAX_DIMS];
    double scale = 1.0;
    bool out = false;
    size_t stride = 1;
    for (int d = nd - 1; d >= 0; d--) {
        const double *a = t->axis[d];
        const int n = t->dims[d];
        double xd = x[d];
        if (isnan(xd)) return NAN;
        int i;
        double wd;
        if (n == 1 || xd <= a[0]) {
            if (xd != a[0]) out = true;
            i = 0;
            wd = 0;
        } else if (xd >= a[n - 1]) {
            if (xd != a[n - 1]) {
                out = true;
                double p = pow ? pow[d] : 0;
                if (p == 1)
                    scale *= xd / a[n - 1];
                else if (p > 0)
                    scale *= exp(p * log(xd / a[n - 1]));
            }
            i = n - 2;
            wd = 1;
        } else {
            i = find_cell(a, n, xd);
            if (xd == a[i])
                wd = 0;
            else if (t->log_axis[d]) {
                const double *la = t->log_axis[d];
                wd = (log(xd) - la[i]) / (la[i + 1] - la[i]);
            } else
                wd = log(xd / a[i]) / log(a[i + 1] / a[i]);
        }
        lo_off[d] = (size_t)i * stride;
        hi_off[d] = n == 1 ? lo_off[d] : (size_t)(i + 1) * stride;
        w[d] = wd;
        stride *= (size_t)n;
    }
    if (clamped) *clamped = out;

    /* The cell's corners of non-zero weight, expanded one axis at a time
     * (1 corner at a grid point, 2^ndim inside a cell). */
    size_t off[1 << LP_TABLE_MAX_DIMS];
    double wt[1 << LP_TABLE_MAX_DIMS];
    int nc = 1;
    off[0] = 0;
    wt[0] = 1;
    for (int d = 0; d < nd; d++) {
        const double wd = w[d];
        if (wd == 0) {
            for (int c = 0; c < nc; c++)
                off[c] += lo_off[d];
        } else if (wd == 1) {
            for (int c = 0; c < nc; c++)
                off[c] += hi_off[d];
        } else {
            for (int c = 0; c < nc; c++) {
                off[nc + c] = off[c] + hi_off[d];
                wt[nc + c] = wt[c] * wd;
                off[c] += lo_off[d];
                wt[c] *= 1 - wd;
            }
            nc *= 2;
        }
    }
    if (nc == 1) return t->value[off[0]] * scale;
    /* Sum in log space. */
    const double *lv = t->log_value;
    double acc = 0;
    if (lv)
        for (int c = 0; c < nc; c++)
            acc += wt[c] * lv[off[c]];
    else
        for (int c = 0; c < nc; c++)
            acc += wt[c] * log(t->value[off[c]]);
    return exp(acc) * scale;
}

double lp_table_lookup(const struct lp_table *t, const double *x, bool *clamped)
{
    double pow[LP_TABLE_MAX_DIMS] = {0};
    if (lp_table_present(t))
        for (int d = 0; d < t->ndim; d++)
            pow[d] = lp_table_axis_pow(t->axis_name[d]);
    return lp_table_lookup_pow(t, x, pow, clamped);
}

int lp_table_check(const struct lp_table *t, const char *name, struct lp_err *err)
{
    if (!lp_table_present(t)) LP_FAIL(err, LP_EFORMAT, "table %s: empty", name);
    if (t->ndim < 1 || t->ndim > LP_TABLE_MAX_DIMS)
        LP_FAIL(err, LP_EFORMAT, "table %s: %d dimensions (expected 1..%d)", name, t->ndim,
                LP_TABLE_MAX_DIMS);
    for (int d = 0; d < t->ndim; d++) {
        const double *a = t->axis[d];
        if (t->dims[d] < 1 || !a)
            LP_FAIL(err, LP_EFORMAT, "table %s: axis %d (%s) is empty", name, d, t->axis_name[d]);
        for (int i = 0; i < t->dims[d]; i++) {
            if (!isfinite(a[i]) || a[i] <= 0)
                LP_FAIL(err, LP_EFORMAT,
                        "table %s: axis %d (%s) point %d is %g (expected finite and > 0)", name, d,
                        t->axis_name[d], i, a[i]);
            if (i > 0 && !(a[i] > a[i - 1]))
                LP_FAIL(err, LP_EFORMAT,
                        "table %s: axis %d (%s) is not strictly increasing at point %d (%g after "
                        "%g)",
                        name, d, t->axis_name[d], i, a[i], a[i - 1]);
        }
    }
    size_t n = table_size(t);
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(t->value[i]) || t->value[i] <= 0)
            LP_FAIL(err, LP_EFORMAT, "table %s: value %zu is %g (expected finite and > 0)", name, i,
                    t->value[i]);
        if (t->spread && (!isfinite(t->spread[i]) || t->spread[i] < 0))
            LP_FAIL(err, LP_EFORMAT, "table %s: spread %zu is %g (expected finite and >= 0)", name,
                    i, t->spread[i]);
    }
    return LP_OK;
}

/* ---- slots: the canonical enumeration of a profile's tables ---- */

static const char *const gemm_axes[] = {"m", "n", "k"};
static const char *const attn_axes[] = {"batch_heads", "seq", "head_dim"};
static const char *const mem_axes[] = {"bytes"};
static const char *const coll_axes[] = {"msg_bytes", "ranks"};

#define N_GEMM (LP_GEMM_LAYOUT_COUNT * LP_PREC_TABLES)
#define N_ATTN (LP_ATTN_IMPL_COUNT * 2 * LP_PASS_COUNT * LP_PREC_TABLES)
#define N_MEM LP_MEM_KIND_COUNT
#define N_COLL (LP_COLL_COUNT * LP_TIER_COUNT)

/* Generated from the enums' names in canonical order (see lp_profile_slot). */
static const struct lp_slot slot_table[LP_PROFILE_SLOTS] = {
    {LP_FAM_GEMM, "/gemm/fwd/fp32", 3, gemm_axes, "s", false},
    {LP_FAM_GEMM, "/gemm/fwd/fp16", 3, gemm_axes, "s", false},
    {LP_FAM_GEMM, "/gemm/fwd/bf16", 3, gemm_axes, "s", true},
    {LP_FAM_GEMM, "/gemm/fwd/fp8", 3, gemm_axes, "s", false},
    {LP_FAM_GEMM, "/gemm/dgrad/fp32", 3, gemm_axes, "s", false},
    {LP_FAM_GEMM, "/gemm/dgrad/fp16", 3, gemm_axes, "s", false},
    {LP_FAM_GEMM, "/gemm/dgrad/bf16", 3, gemm_axes, "s", true},
    {LP_FAM_GEMM, "/gemm/dgrad/fp8", 3, gemm_axes, "s", false},
    {LP_FAM_GEMM, "/gemm/wgrad/fp32", 3, gemm_axes, "s", false},
    {LP_FAM_GEMM, "/gemm/wgrad/fp16", 3, gemm_axes, "s", false},
    {LP_FAM_GEMM, "/gemm/wgrad/bf16", 3, gemm_axes, "s", true},
    {LP_FAM_GEMM, "/gemm/wgrad/fp8", 3, gemm_axes, "s", false},
    {LP_FAM_ATTN, "/attention/fused/full/fwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/fused/full/fwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/fused/full/fwd/bf16", 3, attn_axes, "s", true},
    {LP_FAM_ATTN, "/attention/fused/full/fwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/fused/full/bwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/fused/full/bwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/fused/full/bwd/bf16", 3, attn_axes, "s", true},
    {LP_FAM_ATTN, "/attention/fused/full/bwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/fused/causal/fwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/fused/causal/fwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/fused/causal/fwd/bf16", 3, attn_axes, "s", true},
    {LP_FAM_ATTN, "/attention/fused/causal/fwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/fused/causal/bwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/fused/causal/bwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/fused/causal/bwd/bf16", 3, attn_axes, "s", true},
    {LP_FAM_ATTN, "/attention/fused/causal/bwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused/full/fwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused/full/fwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused/full/fwd/bf16", 3, attn_axes, "s", true},
    {LP_FAM_ATTN, "/attention/unfused/full/fwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused/full/bwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused/full/bwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused/full/bwd/bf16", 3, attn_axes, "s", true},
    {LP_FAM_ATTN, "/attention/unfused/full/bwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused/causal/fwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused/causal/fwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused/causal/fwd/bf16", 3, attn_axes, "s", true},
    {LP_FAM_ATTN, "/attention/unfused/causal/fwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused/causal/bwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused/causal/bwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused/causal/bwd/bf16", 3, attn_axes, "s", true},
    {LP_FAM_ATTN, "/attention/unfused/causal/bwd/fp8", 3, attn_axes, "s", false},
    /* optional kernels (analytical profiles; measured ones may lack them) */
    {LP_FAM_ATTN, "/attention/flash1/full/fwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/flash1/full/fwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/flash1/full/fwd/bf16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/flash1/full/fwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/flash1/full/bwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/flash1/full/bwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/flash1/full/bwd/bf16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/flash1/full/bwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/flash1/causal/fwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/flash1/causal/fwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/flash1/causal/fwd/bf16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/flash1/causal/fwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/flash1/causal/bwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/flash1/causal/bwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/flash1/causal/bwd/bf16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/flash1/causal/bwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/triton/full/fwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/triton/full/fwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/triton/full/fwd/bf16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/triton/full/fwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/triton/full/bwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/triton/full/bwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/triton/full/bwd/bf16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/triton/full/bwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/triton/causal/fwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/triton/causal/fwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/triton/causal/fwd/bf16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/triton/causal/fwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/triton/causal/bwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/triton/causal/bwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/triton/causal/bwd/bf16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/triton/causal/bwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/cudnn/full/fwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/cudnn/full/fwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/cudnn/full/fwd/bf16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/cudnn/full/fwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/cudnn/full/bwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/cudnn/full/bwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/cudnn/full/bwd/bf16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/cudnn/full/bwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/cudnn/causal/fwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/cudnn/causal/fwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/cudnn/causal/fwd/bf16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/cudnn/causal/fwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/cudnn/causal/bwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/cudnn/causal/bwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/cudnn/causal/bwd/bf16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/cudnn/causal/bwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused_fs/full/fwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused_fs/full/fwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused_fs/full/fwd/bf16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused_fs/full/fwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused_fs/full/bwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused_fs/full/bwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused_fs/full/bwd/bf16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused_fs/full/bwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused_fs/causal/fwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused_fs/causal/fwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused_fs/causal/fwd/bf16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused_fs/causal/fwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused_fs/causal/bwd/fp32", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused_fs/causal/bwd/fp16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused_fs/causal/bwd/bf16", 3, attn_axes, "s", false},
    {LP_FAM_ATTN, "/attention/unfused_fs/causal/bwd/fp8", 3, attn_axes, "s", false},
    {LP_FAM_MEM, "/mem/layernorm", 1, mem_axes, "s", true},
    {LP_FAM_MEM, "/mem/rmsnorm", 1, mem_axes, "s", true},
    {LP_FAM_MEM, "/mem/gelu", 1, mem_axes, "s", true},
    {LP_FAM_MEM, "/mem/swiglu", 1, mem_axes, "s", true},
    {LP_FAM_MEM, "/mem/softmax", 1, mem_axes, "s", true},
    {LP_FAM_MEM, "/mem/dropout", 1, mem_axes, "s", true},
    {LP_FAM_MEM, "/mem/residual", 1, mem_axes, "s", true},
    {LP_FAM_MEM, "/mem/rope", 1, mem_axes, "s", true},
    {LP_FAM_MEM, "/mem/adam", 1, mem_axes, "s", true},
    {LP_FAM_MEM, "/mem/cross_entropy", 1, mem_axes, "s", true},
    {LP_FAM_MEM, "/mem/embedding", 1, mem_axes, "s", true},
    {LP_FAM_MEM, "/mem/copy", 1, mem_axes, "s", true},
    /* collectives are optional: a one-GPU measurement has none; the simulator
     * then uses the roofline fraction */
    {LP_FAM_COLL, "/coll/allreduce/intra", 2, coll_axes, "fraction", false},
    {LP_FAM_COLL, "/coll/allreduce/inter", 2, coll_axes, "fraction", false},
    {LP_FAM_COLL, "/coll/allgather/intra", 2, coll_axes, "fraction", false},
    {LP_FAM_COLL, "/coll/allgather/inter", 2, coll_axes, "fraction", false},
    {LP_FAM_COLL, "/coll/reducescatter/intra", 2, coll_axes, "fraction", false},
    {LP_FAM_COLL, "/coll/reducescatter/inter", 2, coll_axes, "fraction", false},
    {LP_FAM_COLL, "/coll/alltoall/intra", 2, coll_axes, "fraction", false},
    {LP_FAM_COLL, "/coll/alltoall/inter", 2, coll_axes, "fraction", false},
    {LP_FAM_COLL, "/coll/sendrecv/intra", 2, coll_axes, "fraction", false},
    {LP_FAM_COLL, "/coll/sendrecv/inter", 2, coll_axes, "fraction", false},
};

_Static_assert(N_GEMM + N_ATTN + N_MEM + N_COLL == LP_PROFILE_SLOTS, "slot count");
_Static_assert(LP_PREC_TABLES == 4 && LP_GEMM_LAYOUT_COUNT == 3 && LP_MEM_KIND_COUNT == 12 &&
                   LP_COLL_COUNT == 5 && LP_TIER_COUNT == 2 && LP_ATTN_IMPL_COUNT == 6 &&
                   LP_PASS_COUNT == 2,
               "slot_table must be regenerated when an enum changes");

const struct lp_slot *lp_profile_slot(int i)
{
    if (i < 0 || i >= LP_PROFILE_SLOTS) return NULL;
    return &slot_table[i];
}

/* Slot i's table in p, by explicit indices (no pointer arithmetic across the
 * rows of the multi-dimensional arrays). */
static struct lp_table *slot_table_of(struct lp_profile *p, int i)
{
    if (i < 0) return NULL;
    if (i < N_GEMM) return &p->gemm[i / LP_PREC_TABLES][i % LP_PREC_TABLES];
    i -= N_GEMM;
    if (i < N_ATTN) {
        const int pr = i % LP_PREC_TABLES, ps = (i / LP_PREC_TABLES) % LP_PASS_COUNT;
        const int c = (i / (LP_PREC_TABLES * LP_PASS_COUNT)) % 2;
        const int im = i / (LP_PREC_TABLES * LP_PASS_COUNT * 2);
        return &p->attn[im][c][ps][pr];
    }
    i -= N_ATTN;
    if (i < N_MEM) return &p->mem[i];
    i -= N_MEM;
    if (i < N_COLL) return &p->coll[i / LP_TIER_COUNT][i % LP_TIER_COUNT];
    return NULL;
}

struct lp_table *lp_profile_slot_table(struct lp_profile *p, int i)
{
    return slot_table_of(p, i);
}

const struct lp_table *lp_profile_slot_table_c(const struct lp_profile *p, int i)
{
    /* slot_table_of only computes an address; the const view is restored on
     * return and nothing is written through it. */
    return slot_table_of((struct lp_profile *)(uintptr_t)p, i);
}

/* ---- profiles ---- */

int lp_profile_create(struct lp_profile **out, struct lp_err *err)
{
    *out = calloc(1, sizeof(**out));
    if (!*out) LP_FAIL(err, LP_ENOMEM, "profile: out of memory");
    return LP_OK;
}

void lp_profile_destroy(struct lp_profile **pp)
{
    if (!pp || !*pp) return;
    struct lp_profile *p = *pp;
    for (int i = 0; i < LP_PROFILE_SLOTS; i++)
        lp_table_free(lp_profile_slot_table(p, i));
    free(p);
    *pp = NULL;
}

int lp_profile_add_prov(struct lp_profile *p, const char *key, const char *value,
                        struct lp_err *err)
{
    if (p->nprov >= LP_PROV_MAX)
        LP_FAIL(err, LP_EINVAL, "profile: more than %d provenance attributes (at \"%s\")",
                LP_PROV_MAX, key);
    struct lp_prov *v = &p->prov[p->nprov++];
    snprintf(v->key, sizeof(v->key), "%s", key);
    snprintf(v->value, sizeof(v->value), "%s", value);
    return LP_OK;
}

const char *lp_profile_get_prov(const struct lp_profile *p, const char *key)
{
    for (int i = 0; i < p->nprov; i++)
        if (strcmp(p->prov[i].key, key) == 0) return p->prov[i].value;
    return NULL;
}

/* a provenance value that is a whole positive number (strtod / strtol
 * reading all of it) times `unit`; absent: 0 */
static bool prov_positive(const struct lp_profile *p, const char *key, double unit, bool integer,
                          double *out)
{
    const char *v = lp_profile_get_prov(p, key);
    *out = 0.0;
    if (!v) return true;
    char *end;
    errno = 0;
    const double x = integer ? (double)strtol(v, &end, 10) : strtod(v, &end);
    if (end == v || *end || errno || !isfinite(x) || !(x > 0) || (integer && x > 1e6)) return false;
    *out = x * unit;
    return true;
}

int lp_profile_coll_ref(const struct lp_profile *p, struct lp_profile_coll_ref *out,
                        const char **bad)
{
    static const struct {
        const char *key;
        double unit;
        size_t off;
    } num[] = {
        {"coll_intra_bw_GBps", 1e9, offsetof(struct lp_profile_coll_ref, intra_bw_Bps)},
        {"coll_intra_latency_us", 1e-6, offsetof(struct lp_profile_coll_ref, intra_latency_s)},
        {"coll_inter_bw_GBps", 1e9, offsetof(struct lp_profile_coll_ref, inter_bw_Bps)},
        {"coll_inter_latency_us", 1e-6, offsetof(struct lp_profile_coll_ref, inter_latency_s)}};
    memset(out, 0, sizeof(*out));
    *bad = NULL;
    for (size_t i = 0; i < sizeof(num) / sizeof(num[0]); i++) {
        double x;
        if (!prov_positive(p, num[i].key, num[i].unit, false, &x)) {
            *bad = num[i].key;
            return LP_EFORMAT;
        }
        memcpy((char *)out + num[i].off, &x, sizeof(x));
    }
    double g;
    if (!prov_positive(p, "coll_gpus_per_node", 1.0, true, &g)) {
        *bad = "coll_gpus_per_node";
        return LP_EFORMAT;
    }
    out->gpus_per_node = (int)g;
    return LP_OK;
}

/* FNV-1a 64 (Fowler/Noll/Vo; offset basis and prime from the reference). */
#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static uint64_t fnv_bytes(uint64_t h, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= FNV_PRIME;
    }
    return h;
}

/* Integers and doubles are hashed as little-endian bytes of their 64-bit
 * patterns, so the checksum does not depend on the host's byte order. */
static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    return fnv_bytes(h, b, 8);
}

static uint64_t fnv_doubles(uint64_t h, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t u;
        memcpy(&u, &x[i], sizeof(u));
        h = fnv_u64(h, u);
    }
    return h;
}

uint64_t lp_profile_checksum(const struct lp_profile *p)
{
    uint64_t h = FNV_OFFSET;
    for (int i = 0; i < LP_PROFILE_SLOTS; i++) {
        const struct lp_table *t = lp_profile_slot_table_c(p, i);
        if (!lp_table_present(t)) continue;
        const char *path = lp_profile_slot(i)->path;
        h = fnv_bytes(h, (const unsigned char *)path, strlen(path) + 1);
        h = fnv_u64(h, (uint64_t)t->ndim);
        for (int d = 0; d < t->ndim; d++) {
            h = fnv_u64(h, (uint64_t)t->dims[d]);
            h = fnv_doubles(h, t->axis[d], (size_t)t->dims[d]);
        }
        h = fnv_doubles(h, t->value, table_size(t));
    }
    return h;
}

/* Count points whose value decreases along a size-like axis (time should not
 * fall when the work grows; measured noise can make it do so slightly). */
static int count_nonmonotone(const struct lp_table *t)
{
    int bad = 0;
    size_t n = table_size(t);
    size_t stride[LP_TABLE_MAX_DIMS];
    size_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        stride[d] = s;
        s *= (size_t)t->dims[d];
    }
    for (int d = 0; d < t->ndim; d++) {
        if (lp_table_axis_pow(t->axis_name[d]) <= 0) continue;
        for (size_t i = 0; i < n; i++) {
            size_t id = (i / stride[d]) % (size_t)t->dims[d];
            if (id == 0) continue;
            if (t->value[i] < t->value[i - stride[d]] * (1 - 1e-9)) bad++;
        }
    }
    return bad;
}

int lp_profile_check(const struct lp_profile *p, int *nonmonotone, struct lp_err *err)
{
    return lp_profile_check_opt(p, true, nonmonotone, err);
}

int lp_profile_check_opt(const struct lp_profile *p, bool require, int *nonmonotone,
                         struct lp_err *err)
{
    int nm = 0;
    for (int i = 0; i < LP_PROFILE_SLOTS; i++) {
        const struct lp_slot *s = lp_profile_slot(i);
        const struct lp_table *t = lp_profile_slot_table_c(p, i);
        if (!lp_table_present(t)) {
            _Static_assert(LP_BF16 == LP_FP16 + 1, "fp16 slot precedes bf16");
            /* a GPU without bf16 (V100) satisfies the bf16 requirement with
             * fp16 tables; precision is the fastest-varying slot index */
            const bool fp16_instead = s->required && i > 0 &&
                                      (s->family == LP_FAM_GEMM || s->family == LP_FAM_ATTN) &&
                                      lp_table_present(lp_profile_slot_table_c(p, i - 1));
            if (require && s->required && !fp16_instead)
                LP_FAIL(err, LP_EFORMAT, "profile %s: required table %s is missing",
                        p->path[0] ? p->path : p->gpu, s->path);
            continue;
        }
        if (t->ndim != s->ndim)
            LP_FAIL(err, LP_EFORMAT, "profile %s: table %s has %d dimensions (expected %d)",
                    p->path[0] ? p->path : p->gpu, s->path, t->ndim, s->ndim);
        for (int d = 0; d < s->ndim; d++)
            if (strcmp(t->axis_name[d], s->axis_names[d]) != 0)
                LP_FAIL(err, LP_EFORMAT,
                        "profile %s: table %s axis %d is named \"%s\" (expected \"%s\")",
                        p->path[0] ? p->path : p->gpu, s->path, d, t->axis_name[d],
                        s->axis_names[d]);
        LP_TRY(err, lp_table_check(t, s->path, err));
        if (s->family != LP_FAM_COLL) nm += count_nonmonotone(t);
    }
    if (nonmonotone) *nonmonotone = nm;
    return LP_OK;
}

double lp_coll_bus_factor(enum lp_coll c, int ranks)
{
    double n = ranks;
    if (ranks < 1) return 0.0;
    switch (c) {
    case LP_COLL_ALLREDUCE:
        return 2.0 * (n - 1.0) / n;
    case LP_COLL_ALLGATHER:
    case LP_COLL_REDUCESCATTER:
    case LP_COLL_ALLTOALL:
        return (n - 1.0) / n;
    case LP_COLL_SENDRECV:
        return 1.0;
    default:
        return 0.0;
    }
}
