/* The timing harness: device context, CUDA-event timing of repeated calls,
 * the L2 flush, and the table helpers shared by the families. */
#include <math.h>
#include <string.h>

#include "prof_gpu.h"

size_t lpp_elem_bytes(enum lp_prec p)
{
    return p == LP_FP8 ? 1 : p == LP_FP32 ? 4 : 2;
}

static void uuid_string(const cudaUUID_t *u, char *buf, size_t len)
{
    const unsigned char *b = (const unsigned char *)u->bytes;
    snprintf(buf, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

static int query_device(int id, struct lpp_device *d, struct lp_err *err)
{
    struct cudaDeviceProp prop;
    int v = 0;
    memset(d, 0, sizeof(*d));
    d->id = id;
    LPP_CUDA(err, cudaGetDeviceProperties(&prop, id));
    snprintf(d->name, sizeof(d->name), "%s", prop.name);
    uuid_string(&prop.uuid, d->uuid, sizeof(d->uuid));
    d->cc_major = prop.major;
    d->cc_minor = prop.minor;
    d->sms = prop.multiProcessorCount;
    d->l2_bytes = (double)prop.l2CacheSize;
    d->mem_bytes = (double)prop.totalGlobalMem;
    d->mem_bus_bits = prop.memoryBusWidth;
    LPP_CUDA(err, cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, id));
    d->sm_clock_khz = v;
    LPP_CUDA(err, cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, id));
    d->mem_clock_khz = v;
    return LP_OK;
}

int lpp_ctx_init(struct lpp_ctx *c, const struct lpp_plan *plan, int device, struct lpp_attrs *a,
                 FILE *log, struct lp_err *err)
{
    memset(c, 0, sizeof(*c));
    c->plan = plan;
    c->attrs = a;
    c->log = log;
    LPP_CUDA(err, cudaSetDevice(device));
    LP_TRY(err, query_device(device, &c->dev, err));
    LPP_CUDA(err, cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    int nev = 2 * (plan->reps < LPP_REPS_MAX ? plan->reps : LPP_REPS_MAX);
    for (int i = 0; i < nev; i++)
        LPP_CUDA(err, cudaEventCreate(&c->ev[i]));
    /* Flush: write 4x the L2 (at least 64 MiB) between repetitions, the
     * approach of Triton's do_bench and nvbench's L2 flush. */
    c->flush_bytes = (size_t)fmax(4 * c->dev.l2_bytes, 64.0 * 1024 * 1024);
    LPP_CUDA(err, cudaMalloc(&c->flush_buf, c->flush_bytes));
    c->workspace_bytes = 32u << 20; /* cuBLASLt on Hopper: 32 MiB recommended */
    LPP_CUDA(err, cudaMalloc(&c->workspace, c->workspace_bytes));
    LPP_CUBLAS(err, cublasLtCreate(&c->lt));
    LPP_CUBLAS(err, cublasCreate(&c->blas));
    LPP_CUBLAS(err, cublasSetStream(c->blas, c->stream));
    LPP_CUBLAS(err, cublasSetWorkspace(c->blas, c->workspace, c->workspace_bytes));
    LPP_CUDNN(err, cudnnCreate(&c->dnn));
    LPP_CUDNN(err, cudnnSetStream(c->dnn, c->stream));
    return LP_OK;
}

void lpp_ctx_fini(struct lpp_ctx *c)
{
    if (c->dnn) cudnnDestroy(c->dnn);
    if (c->blas) cublasDestroy(c->blas);
    if (c->lt) cublasLtDestroy(c->lt);
    if (c->workspace) cudaFree(c->workspace);
    if (c->flush_buf) cudaFree(c->flush_buf);
    for (int i = 0; i < 2 * LPP_REPS_MAX; i++)
        if (c->ev[i]) cudaEventDestroy(c->ev[i]);
    if (c->stream) cudaStreamDestroy(c->stream);
    memset(c, 0, sizeof(*c));
}

int lpp_time(struct lpp_ctx *c, lpp_call_fn fn, void *arg, bool flush, double *median_s,
             double *spread, struct lp_err *err)
{
    int reps = c->plan->reps < LPP_REPS_MAX ? c->plan->reps : LPP_REPS_MAX;
    flush = flush && c->plan->flush_l2;
    for (int i = 0; i < c->plan->warmup; i++) {
        if (flush)
            LPP_CUDA(err, cudaMemsetAsync(c->flush_buf, i & 0xff, c->flush_bytes, c->stream));
        LP_TRY(err, fn(arg, c->stream, err));
    }
    for (int i = 0; i < reps; i++) {
        if (flush)
            LPP_CUDA(err, cudaMemsetAsync(c->flush_buf, i & 0xff, c->flush_bytes, c->stream));
        LPP_CUDA(err, cudaEventRecord(c->ev[2 * i], c->stream));
        LP_TRY(err, fn(arg, c->stream, err));
        LPP_CUDA(err, cudaEventRecord(c->ev[2 * i + 1], c->stream));
    }
    LPP_CUDA(err, cudaStreamSynchronize(c->stream));
    for (int i = 0; i < reps; i++) {
        float ms = 0;
        LPP_CUDA(err, cudaEventElapsedTime(&ms, c->ev[2 * i], c->ev[2 * i + 1]));
        c->samples[i] = ms * 1e-3;
    }
    lpp_stats(c->samples, reps, median_s, spread);
    if (!(*median_s > 0)) *median_s = 1e-7; /* below event resolution (~0.5 us) */
    return LP_OK;
}

int lpp_table_init(struct lp_table *t, const struct lpp_axis *axes, const char *const *names,
                   int ndim, struct lp_err *err)
{
    int dims[LP_TABLE_MAX_DIMS] = {0};
    if (ndim < 1 || ndim > LP_TABLE_MAX_DIMS) LP_FAIL(err, LP_EINVAL, "table of %d dims", ndim);
    for (int d = 0; d < ndim; d++)
        dims[d] = axes[d].n;
    LP_TRY(err, lp_table_alloc(t, ndim, dims, true, err));
    for (int d = 0; d < ndim; d++) {
        snprintf(t->axis_name[d], sizeof(t->axis_name[d]), "%s", names[d]);
        memcpy(t->axis[d], axes[d].v, (size_t)axes[d].n * sizeof(double));
    }
    return LP_OK;
}

void lpp_table_drop(struct lpp_ctx *c, struct lp_table *t, const char *name,
                    const struct lp_err *why)
{
    char key[LPP_ATTR_KEY];
    snprintf(key, sizeof(key), "missing.%s", name);
    lpp_attr_set(c->attrs, key, "%s", why && why->msg[0] ? why->msg : "not measured");
    if (c->log)
        fprintf(c->log, "llmplan-profile: %s not measured: %s\n", name, why ? why->msg : "");
    lp_table_free(t);
}

bool lpp_device_ok(struct lpp_ctx *c)
{
    (void)cudaGetLastError(); /* clear a non-sticky launch error */
    return cudaStreamSynchronize(c->stream) == cudaSuccess && cudaGetLastError() == cudaSuccess;
}
