/* llmplan-profile: the GPU half. One shared harness (this header, check.c,
 * timing.c, provenance.c) and one small file per operator family (gemm.c,
 * attn_fused.c, attn_unfused.c, mem.c, coll.c), nccl-tests style: every
 * CUDA, cuBLAS, cuDNN, NCCL and MPI call goes through a check macro that
 * returns a status code and records host:file:line in the struct lp_err. */
#ifndef LLMPLAN_PROF_GPU_H
#define LLMPLAN_PROF_GPU_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

#include "llmplan/io.h"
#include "prof.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- error translation at the library boundary ---- */

int lpp_fail_cuda(struct lp_err *err, cudaError_t e, const char *call, const char *file, int line);
int lpp_fail_cublas(struct lp_err *err, cublasStatus_t s, const char *call, const char *file,
                    int line);
int lpp_fail_cudnn(struct lp_err *err, cudnnStatus_t s, const char *call, const char *file,
                   int line);
int lpp_fail_nccl(struct lp_err *err, ncclResult_t r, const char *call, const char *file, int line);
int lpp_fail_mpi(struct lp_err *err, int rc, const char *call, const char *file, int line);

#define LPP_CHECK_(type, ok, failfn, err, call)                                                    \
    do {                                                                                           \
        type lpp_s_ = (call);                                                                      \
        if (lpp_s_ != (ok)) return failfn((err), lpp_s_, #call, __FILE__, __LINE__);               \
    } while (0)
#define LPP_CHECK_GOTO_(type, ok, failfn, err, rc, call, label)                                    \
    do {                                                                                           \
        type lpp_s_ = (call);                                                                      \
        if (lpp_s_ != (ok)) {                                                                      \
            (rc) = failfn((err), lpp_s_, #call, __FILE__, __LINE__);                               \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)

#define LPP_CUDA(err, call) LPP_CHECK_(cudaError_t, cudaSuccess, lpp_fail_cuda, err, call)
#define LPP_CUBLAS(err, call)                                                                      \
    LPP_CHECK_(cublasStatus_t, CUBLAS_STATUS_SUCCESS, lpp_fail_cublas, err, call)
#define LPP_CUDNN(err, call)                                                                       \
    LPP_CHECK_(cudnnStatus_t, CUDNN_STATUS_SUCCESS, lpp_fail_cudnn, err, call)
#define LPP_NCCL(err, call) LPP_CHECK_(ncclResult_t, ncclSuccess, lpp_fail_nccl, err, call)
#define LPP_MPI(err, call) LPP_CHECK_(int, 0, lpp_fail_mpi, err, call)

#define LPP_CUDA_GOTO(err, rc, call, l)                                                            \
    LPP_CHECK_GOTO_(cudaError_t, cudaSuccess, lpp_fail_cuda, err, rc, call, l)
#define LPP_CUBLAS_GOTO(err, rc, call, l)                                                          \
    LPP_CHECK_GOTO_(cublasStatus_t, CUBLAS_STATUS_SUCCESS, lpp_fail_cublas, err, rc, call, l)
#define LPP_CUDNN_GOTO(err, rc, call, l)                                                           \
    LPP_CHECK_GOTO_(cudnnStatus_t, CUDNN_STATUS_SUCCESS, lpp_fail_cudnn, err, rc, call, l)
#define LPP_NCCL_GOTO(err, rc, call, l)                                                            \
    LPP_CHECK_GOTO_(ncclResult_t, ncclSuccess, lpp_fail_nccl, err, rc, call, l)

/* ---- provenance and notes: root attributes of the profile ---- */

#define LPP_ATTR_MAX 96
#define LPP_ATTR_KEY 64
#define LPP_ATTR_VAL 512

struct lpp_attrs {
    int n;
    char key[LPP_ATTR_MAX][LPP_ATTR_KEY];
    char val[LPP_ATTR_MAX][LPP_ATTR_VAL];
    struct lp_kv kv[LPP_ATTR_MAX];
};

/* Set (or replace) key; values longer than LPP_ATTR_VAL are truncated. */
void lpp_attr_set(struct lpp_attrs *a, const char *key, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Append "; text" to key's value (creating it). */
void lpp_attr_append(struct lpp_attrs *a, const char *key, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
const struct lp_kv *lpp_attr_kv(struct lpp_attrs *a, int *n);

/* ---- the device context shared by the families ---- */

struct lpp_device {
    int id;
    char name[256];
    char uuid[48];
    int cc_major, cc_minor;
    int sms;
    double l2_bytes;
    double mem_bytes;
    double sm_clock_khz; /* cudaDevAttrClockRate: peak, not the clock under load */
    double mem_clock_khz;
    int mem_bus_bits;
};

struct lpp_ctx {
    const struct lpp_plan *plan;
    struct lpp_device dev;
    struct lpp_attrs *attrs;
    cudaStream_t stream;
    cudaEvent_t ev[2 * LPP_REPS_MAX];
    double samples[LPP_REPS_MAX];
    void *flush_buf; /* written between repetitions to evict L2 */
    size_t flush_bytes;
    cublasLtHandle_t lt;
    cublasHandle_t blas;
    cudnnHandle_t dnn;
    void *workspace; /* cuBLAS(Lt) workspace */
    size_t workspace_bytes;
    FILE *log; /* progress lines (rank 0: stderr), may be NULL */
};

int lpp_ctx_init(struct lpp_ctx *c, const struct lpp_plan *plan, int device, struct lpp_attrs *a,
                 FILE *log, struct lp_err *err);
void lpp_ctx_fini(struct lpp_ctx *c);

/* One timed call: enqueues the operation on stream s. */
typedef int (*lpp_call_fn)(void *arg, cudaStream_t s, struct lp_err *err);

/* Warm up, then time plan->reps calls with CUDA events around each (the L2
 * flush, when asked, is enqueued before the start event). Returns the
 * median in seconds and (p90-p10)/median. */
int lpp_time(struct lpp_ctx *c, lpp_call_fn fn, void *arg, bool flush, double *median_s,
             double *spread, struct lp_err *err);

/* Allocate t over the given axes (names as in docs/profile-format.md). */
int lpp_table_init(struct lp_table *t, const struct lpp_axis *axes, const char *const *names,
                   int ndim, struct lp_err *err);

/* Record that a table could not be measured and free it (the profile then
 * lacks it; the reason is kept as attribute "missing.<name>"). */
void lpp_table_drop(struct lpp_ctx *c, struct lp_table *t, const char *name,
                    const struct lp_err *why);

/* After a failed measurement: true if the device is still usable (the error
 * was a library refusal, not a sticky CUDA fault). */
bool lpp_device_ok(struct lpp_ctx *c);

/* Byte size and CUDA / cuBLAS / cuDNN types of a precision. */
size_t lpp_elem_bytes(enum lp_prec p);

/* ---- families ---- */

int lpp_gemm_run(struct lpp_ctx *c, struct lp_profile *prof, struct lp_err *err);
/* One attention grid point: forward and backward seconds and spreads. */
typedef int (*lpp_attn_point_fn)(struct lpp_ctx *c, enum lp_prec p, bool causal, double bh,
                                 double s, double d, char *arena, size_t arena_bytes, double t[2],
                                 double sp[2], int *scaled, struct lp_err *err);
/* attn_grid.c: the sweep over (precision, causal, batch_heads, seq, head_dim)
 * shared by both attention families. */
int lpp_attn_sweep(struct lpp_ctx *c, struct lp_profile *prof, enum lp_attn_impl impl,
                   bool causal_only, double (*footprint)(double bh, double s, double d, double e),
                   double arena_fraction, lpp_attn_point_fn point, int *scaled, struct lp_err *err);
int lpp_attn_fused_run(struct lpp_ctx *c, struct lp_profile *prof, struct lp_err *err);
int lpp_attn_unfused_run(struct lpp_ctx *c, struct lp_profile *prof, struct lp_err *err);
int lpp_mem_run(struct lpp_ctx *c, struct lp_profile *prof, struct lp_err *err);

/* Collectives: collective over comm (every rank calls it). Rank 0's prof
 * receives the tables. nominal_Bps[tier] = 0 stores the raw busbw in B/s
 * and says so in the attributes. */
struct lpp_coll_env {
    void *comm; /* MPI_Comm *, kept opaque so this header needs no mpi.h */
    int rank, world, local, nodes;
    bool uniform; /* every node has `local` ranks, placed node by node */
    double nominal_Bps[LP_TIER_COUNT];
};
int lpp_coll_run(struct lpp_ctx *c, const struct lpp_coll_env *env, struct lp_profile *prof,
                 struct lp_err *err);

/* Provenance attributes: GPU, clocks, library versions (device side). */
int lpp_provenance_device(struct lpp_ctx *c, struct lp_err *err);

/* ---- kernels.cu (extern "C" launchers; dtype is an enum lp_prec) ---- */

int lpp_k_fill(void *p, size_t n, int dtype, unsigned seed, cudaStream_t s);
int lpp_k_mem(int kind, void *a, void *b, void *c, void *d, size_t rows, size_t cols,
              cudaStream_t s);
/* the bytes a kernel of kind moves for a rows x cols problem (reads+writes) */
double lpp_k_mem_bytes(int kind, size_t rows, size_t cols);
int lpp_k_softmax_fwd(const void *in, void *out, size_t rows, size_t cols, size_t seq, int causal,
                      int dtype, cudaStream_t s);
int lpp_k_softmax_bwd(const void *p, const void *dp, void *ds, size_t rows, size_t cols, size_t seq,
                      int causal, int dtype, cudaStream_t s);
/* eager PyTorch's causal mask: one read-and-write pass over rows x cols scores */
int lpp_k_causal_mask(void *x, size_t rows, size_t cols, size_t seq, int dtype, cudaStream_t s);
int lpp_k_dropout_fwd(const void *in, void *out, unsigned char *mask, size_t n, float p,
                      unsigned seed, int dtype, cudaStream_t s);
int lpp_k_dropout_bwd(const void *dout, const unsigned char *mask, void *din, size_t n, float p,
                      int dtype, cudaStream_t s);
int lpp_k_ids(int *ids, size_t n, unsigned seed, cudaStream_t s);
#ifdef __cplusplus
}
#endif

#endif
