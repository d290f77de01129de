/* Memory-bound kernels of a transformer layer (kernels.cu), timed over the
 * bytes they move (reads + writes), from KiBs to GiBs. No L2 flush: in
 * training these kernels read what the previous kernel just wrote, so small
 * sizes are L2-resident as they are here. */
#include <math.h>
#include <string.h>

#include "prof_gpu.h"

/* Row length of each kind (hidden 4096, seq 2048, head dim 128, vocab 32768
 * per rank); elementwise kinds use 4096 for the flat index only. */
static size_t default_cols(int kind)
{
    switch (kind) {
    case LP_MEM_SOFTMAX:
        return 2048;
    case LP_MEM_ROPE:
        return 128;
    case LP_MEM_CROSS_ENTROPY:
        return 32768;
    default:
        return 4096;
    }
}

/* Pick rows x cols moving at most `bytes`, keeping >= 64 rows (shrinking the
 * row for small sizes) so that rounding stays under ~2%. */
static void shape_for(int kind, double bytes, size_t *rows, size_t *cols)
{
    size_t c = default_cols(kind);
    while (c > 8 && lpp_k_mem_bytes(kind, 64, c) > bytes)
        c /= 2;
    double fixed = lpp_k_mem_bytes(kind, 0, c);
    double per_row = lpp_k_mem_bytes(kind, 1, c) - fixed;
    double r = floor((bytes - fixed) / per_row);
    *rows = r >= 1 ? (size_t)r : 1;
    *cols = c;
}

struct mem_call {
    int kind;
    void *a, *b, *c, *d;
    size_t rows, cols;
};

static int mem_call_run(void *arg, cudaStream_t s, struct lp_err *err)
{
    struct mem_call *m = arg;
    if (lpp_k_mem(m->kind, m->a, m->b, m->c, m->d, m->rows, m->cols, s) != 0) {
        cudaError_t e = cudaGetLastError();
        return lpp_fail_cuda(err, e == cudaSuccess ? cudaErrorLaunchFailure : e, "lpp_k_mem",
                             __FILE__, __LINE__);
    }
    return LP_OK;
}

static int mem_table(struct lpp_ctx *c, int kind, struct lp_table *t, void *bufs[4],
                     double *worst_dev, struct lp_err *err)
{
    static const char *const names[1] = {"bytes"};
    const struct lpp_axis *ax = &c->plan->mem;
    LP_TRY(err, lpp_table_init(t, ax, names, 1, err));
    for (int i = 0; i < ax->n; i++) {
        struct mem_call m = {kind, bufs[0], bufs[1], bufs[2], bufs[3], 0, 0};
        shape_for(kind, ax->v[i], &m.rows, &m.cols);
        double actual = lpp_k_mem_bytes(kind, m.rows, m.cols);
        double dev = fabs(actual - ax->v[i]) / ax->v[i];
        if (dev > *worst_dev) *worst_dev = dev;
        if (kind == LP_MEM_EMBEDDING || kind == LP_MEM_CROSS_ENTROPY)
            if (lpp_k_ids((int *)bufs[1], m.rows, 7u, c->stream))
                LP_FAIL(err, LP_ECUDA, "ids kernel failed to launch");
        LP_TRY(err, lpp_time(c, mem_call_run, &m, false, &t->value[i], &t->spread[i], err));
    }
    return LP_OK;
}

int lpp_mem_run(struct lpp_ctx *c, struct lp_profile *prof, struct lp_err *err)
{
    int rc = LP_OK;
    void *bufs[4] = {NULL, NULL, NULL, NULL};
    const struct lpp_axis *ax = &c->plan->mem;
    /* Every kind's buffers fit in 4 buffers of the largest size (+1 MiB
     * for per-column parameters and the 32768-row embedding table). */
    size_t sz = (size_t)ax->v[ax->n - 1] + (1u << 20);
    size_t table = 32768u * 4096u * 2u;
    if (sz < table) sz = table;
    for (int i = 0; i < 4; i++) {
        LPP_CUDA_GOTO(err, rc, cudaMalloc(&bufs[i], sz), cleanup);
        if (lpp_k_fill(bufs[i], sz / 2, LP_BF16, 11u + (unsigned)i, c->stream)) {
            rc = lp_err_set_at(err, LP_ECUDA, __FILE__, __LINE__, "fill kernel failed to launch");
            goto cleanup;
        }
    }
    lpp_attr_set(c->attrs, "mem.timing",
                 "CUDA events around each of %d calls after %d warm-up; L2 not flushed; bf16 "
                 "I/O with fp32 math (Adam: fp32 params, grads and states)",
                 c->plan->reps, c->plan->warmup);
    double worst = 0;
    for (int k = 0; k < LP_MEM_KIND_COUNT; k++) {
        struct lp_table *t = &prof->mem[k];
        char name[64];
        snprintf(name, sizeof(name), "mem.%s", lp_mem_kind_name((enum lp_mem_kind)k));
        if (c->log) fprintf(c->log, "llmplan-profile: measuring %s\n", name);
        if (k == LP_MEM_ADAM) { /* fp32 params, grads and m; v = 0 */
            for (int i = 0; i < 3; i++)
                if (lpp_k_fill(bufs[i], sz / 4, LP_FP32, 21u + (unsigned)i, c->stream)) {
                    rc = lp_err_set_at(err, LP_ECUDA, __FILE__, __LINE__, "fill kernel failed");
                    goto cleanup;
                }
            LPP_CUDA_GOTO(err, rc, cudaMemsetAsync(bufs[3], 0, sz, c->stream), cleanup);
        }
        struct lp_err terr;
        lp_err_clear(&terr);
        int trc = mem_table(c, k, t, bufs, &worst, &terr);
        if (trc < 0) {
            lpp_table_drop(c, t, name, &terr);
            if (!lpp_device_ok(c)) {
                *err = terr;
                rc = trc;
                goto cleanup;
            }
        }
    }
    lpp_attr_set(c->attrs, "mem.shapes",
                 "rows x cols with cols 4096 (softmax 2048, rope 128 = head dim, cross_entropy "
                 "32768 = vocab per rank), halved for small sizes; bytes moved within %.1f%% of "
                 "the axis value",
                 100 * worst);
cleanup:
    for (int i = 0; i < 4; i++)
        cudaFree(bufs[i]);
    return rc;
}
