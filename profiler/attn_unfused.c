/* Unfused attention: batched GEMMs (cublasGemmStridedBatchedEx) around a
 * softmax and a dropout kernel, the s x s scores materialised in memory, in
 * the two forms the simulator distinguishes (docs/profile-format.md):
 * "unfused_fs" as Megatron runs it, the causal mask inside one softmax
 * kernel that reads only each row's causal part (fused scale-mask-softmax),
 * and "unfused" as eager PyTorch runs it, the mask a pass of its own and the
 * softmax over whole rows.
 *   forward:  S = Q K^T / sqrt(d); P = softmax(S) (causal mask); Pd =
 *             dropout(P, 0.1); O = Pd V
 *   backward: dPd = dO V^T; dV = Pd^T dO; dP = dropout'(dPd); dS =
 *             softmax'(P, dP); dQ = dS K / sqrt(d); dK = dS^T Q / sqrt(d)
 * Q, K, V, O are [bh, s, d] per head (row-major). GQA is timed as
 * multi-head: frameworks expand K/V to the query heads before these GEMMs.
 * Points whose scores do not fit in memory are measured at a smaller
 * batch*heads and scaled linearly (the kernels are batch-parallel). */
#include <math.h>
#include <string.h>

#include "prof_gpu.h"

struct ua {
    cublasHandle_t h;
    cudaDataType_t type;
    int dtype;
    bool causal;
    bool fused_softmax; /* unfused_fs: the mask inside the softmax kernels */
    size_t bh, s, d;
    float scale;
    void *q, *k, *v, *o, *dout, *dq, *dk, *dv, *s1, *s2, *s3;
    unsigned char *mask;
};

/* Row-major C[m x n] = op(A) op(B) per batch; ta: A stored [k x m]; tb: B
 * stored [n x k]. cuBLAS computes the column-major C^T = op(B)^T op(A)^T. */
static int rm_gemm(const struct ua *u, bool ta, bool tb, int m, int n, int k, const void *A,
                   long long sA, const void *B, long long sB, void *C, long long sC, float alpha,
                   struct lp_err *err)
{
    const float beta = 0.0f;
    LPP_CUBLAS(err, cublasGemmStridedBatchedEx(
                        u->h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m,
                        k, &alpha, B, u->type, tb ? k : n, sB, A, u->type, ta ? m : k, sA, &beta, C,
                        u->type, n, sC, (int)u->bh, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return LP_OK;
}

static int kernel_ok(int rc, const char *what, struct lp_err *err)
{
    if (rc == 0) return LP_OK;
    cudaError_t e = cudaGetLastError();
    return lpp_fail_cuda(err, e == cudaSuccess ? cudaErrorLaunchFailure : e, what, __FILE__,
                         __LINE__);
}

static int ua_fwd(void *arg, cudaStream_t st, struct lp_err *err)
{
    const struct ua *u = arg;
    int s = (int)u->s, d = (int)u->d;
    long long sd = (long long)u->s * (long long)u->d, ss = (long long)u->s * (long long)u->s;
    size_t n = u->bh * u->s * u->s;
    LP_TRY(err, rm_gemm(u, false, true, s, s, d, u->q, sd, u->k, sd, u->s1, ss, u->scale, err));
    const bool eager_mask = u->causal && !u->fused_softmax;
    if (eager_mask)
        LP_TRY(err, kernel_ok(lpp_k_causal_mask(u->s1, u->bh * u->s, u->s, u->s, u->dtype, st),
                              "causal_mask", err));
    LP_TRY(err, kernel_ok(lpp_k_softmax_fwd(u->s1, u->s2, u->bh * u->s, u->s, u->s,
                                            u->causal && u->fused_softmax, u->dtype, st),
                          "softmax", err));
    LP_TRY(err, kernel_ok(lpp_k_dropout_fwd(u->s2, u->s3, u->mask, n, 0.1f, 99u, u->dtype, st),
                          "dropout", err));
    LP_TRY(err, rm_gemm(u, false, false, s, d, s, u->s3, ss, u->v, sd, u->o, sd, 1.0f, err));
    return LP_OK;
}

static int ua_bwd(void *arg, cudaStream_t st, struct lp_err *err)
{
    const struct ua *u = arg;
    int s = (int)u->s, d = (int)u->d;
    long long sd = (long long)u->s * (long long)u->d, ss = (long long)u->s * (long long)u->s;
    size_t n = u->bh * u->s * u->s;
    LP_TRY(err, rm_gemm(u, false, true, s, s, d, u->dout, sd, u->v, sd, u->s1, ss, 1.0f, err));
    LP_TRY(err, rm_gemm(u, true, false, s, d, s, u->s3, ss, u->dout, sd, u->dv, sd, 1.0f, err));
    LP_TRY(err, kernel_ok(lpp_k_dropout_bwd(u->s1, u->mask, u->s1, n, 0.1f, u->dtype, st),
                          "dropout_bwd", err));
    LP_TRY(err, kernel_ok(lpp_k_softmax_bwd(u->s2, u->s1, u->s1, u->bh * u->s, u->s, u->s,
                                            u->causal && u->fused_softmax, u->dtype, st),
                          "softmax_bwd", err));
    LP_TRY(err, rm_gemm(u, false, false, s, d, s, u->s1, ss, u->k, sd, u->dq, sd, u->scale, err));
    LP_TRY(err, rm_gemm(u, true, false, s, d, s, u->s1, ss, u->q, sd, u->dk, sd, u->scale, err));
    return LP_OK;
}

static double footprint(double bh, double s, double d, double e)
{
    return 8 * bh * s * d * e + 3 * bh * s * s * e + bh * s * s + 8 * 256;
}

/* Carve the arena for one point. */
static void ua_carve(struct ua *u, char *arena, size_t e)
{
    size_t qkv = u->bh * u->s * u->d * e, sc = u->bh * u->s * u->s * e;
    void **t[] = {&u->q, &u->k, &u->v, &u->o, &u->dout, &u->dq, &u->dk, &u->dv};
    char *p = arena;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        *t[i] = p;
        p += (qkv + 255) / 256 * 256;
    }
    u->s1 = p;
    p += (sc + 255) / 256 * 256;
    u->s2 = p;
    p += (sc + 255) / 256 * 256;
    u->s3 = p;
    p += (sc + 255) / 256 * 256;
    u->mask = (unsigned char *)p;
}

static int ua_point(struct lpp_ctx *c, bool fused_softmax, enum lp_prec p, bool causal, double bh,
                    double s, double d, char *arena, size_t arena_bytes, double t[2], double sp[2],
                    int *scaled, struct lp_err *err)
{
    size_t e = lpp_elem_bytes(p);
    double bh_eff = bh;
    while (footprint(bh_eff, s, d, (double)e) > (double)arena_bytes && bh_eff > 1)
        bh_eff = ceil(bh_eff / 2);
    if (footprint(bh_eff, s, d, (double)e) > (double)arena_bytes)
        LP_FAIL(err, LP_ENOMEM, "unfused attention s=%.0f d=%.0f does not fit in %.1f GiB", s, d,
                (double)arena_bytes / 1073741824.0);
    if (bh_eff < bh) (*scaled)++;
    struct ua u;
    memset(&u, 0, sizeof(u));
    u.h = c->blas;
    u.type = p == LP_FP16 ? CUDA_R_16F : CUDA_R_16BF;
    u.dtype = (int)p;
    u.causal = causal;
    u.fused_softmax = fused_softmax;
    u.bh = (size_t)bh_eff;
    u.s = (size_t)s;
    u.d = (size_t)d;
    u.scale = (float)(1.0 / sqrt(d));
    ua_carve(&u, arena, e);
    if (lpp_k_fill(u.q, 5 * u.bh * u.s * u.d, u.dtype, 3u, c->stream))
        LP_FAIL(err, LP_ECUDA, "fill kernel failed to launch");
    LP_TRY(err, lpp_time(c, ua_fwd, &u, true, &t[0], &sp[0], err));
    LP_TRY(err, ua_fwd(&u, c->stream, err)); /* the backward pass reads P, Pd and the mask */
    LP_TRY(err, lpp_time(c, ua_bwd, &u, true, &t[1], &sp[1], err));
    t[0] *= bh / bh_eff;
    t[1] *= bh / bh_eff;
    return LP_OK;
}

static int ua_point_eager(struct lpp_ctx *c, enum lp_prec p, bool causal, double bh, double s,
                          double d, char *arena, size_t arena_bytes, double t[2], double sp[2],
                          int *scaled, struct lp_err *err)
{
    return ua_point(c, false, p, causal, bh, s, d, arena, arena_bytes, t, sp, scaled, err);
}

static int ua_point_fs(struct lpp_ctx *c, enum lp_prec p, bool causal, double bh, double s,
                       double d, char *arena, size_t arena_bytes, double t[2], double sp[2],
                       int *scaled, struct lp_err *err)
{
    return ua_point(c, true, p, causal, bh, s, d, arena, arena_bytes, t, sp, scaled, err);
}

int lpp_attn_unfused_run(struct lpp_ctx *c, struct lp_profile *prof, struct lp_err *err)
{
    int scaled = 0;
    LP_TRY(err, lpp_attn_sweep(c, prof, LP_ATTN_UNFUSED, false, footprint, 0.8, ua_point_eager,
                               &scaled, err));
    /* unfused_fs: the causal tables only (the simulator's; unmasked, the two
     * forms run the same kernels) */
    LP_TRY(err, lpp_attn_sweep(c, prof, LP_ATTN_UNFUSED_FS, true, footprint, 0.8, ua_point_fs,
                               &scaled, err));
    lpp_attr_set(c->attrs, "attn.unfused.timing",
                 "cublasGemmStridedBatchedEx (fp32 compute) + softmax + dropout(p=0.1) kernels "
                 "(unfused: causal mask pass + softmax over whole rows; unfused_fs: the mask "
                 "inside the softmax, which reads each row's causal part); "
                 "fwd and bwd timed separately with CUDA events, %d calls after %d warm-up, L2 %s; "
                 "GQA timed as MHA; %d points measured at a smaller batch_heads and scaled "
                 "linearly (memory)",
                 c->plan->reps, c->plan->warmup, c->plan->flush_l2 ? "flushed" : "not flushed",
                 scaled);
    return LP_OK;
}
