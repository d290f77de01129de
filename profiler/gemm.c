/* GEMMs of a linear layer with cuBLASLt: forward, data gradient and weight
 * gradient (enum lp_gemm_layout), in bf16, fp16 and fp8.
 *
 * The problem is row-major C[m x n] = A[m x k] B[k x n] in the layout a
 * framework stores the operands (PyTorch weights are [out x in]):
 *   fwd:   A = X [m x k],            B = W^T, W stored [n x k]
 *   dgrad: A = dY [m x k],           B = W stored [k x n]
 *   wgrad: A = X^T, X stored [k x m], B = dY stored [k x n]
 * cuBLASLt is column-major, so it computes C^T = B^T A^T: its first operand
 * is our B and its second our A, giving Megatron's familiar TN / NN / NT.
 * fp8 (sm_89+) only supports TN in cuBLASLt, so all three layouts are timed
 * as TN with their own m, n, k, as Transformer Engine does after it caches
 * the transposed fp8 operands; fast accumulation is used for the forward
 * GEMM only (TE's default recipe). fp8 operands are e4m3 with bf16 output
 * and per-tensor scales of 1. fp8 shapes are padded up to multiples of 16
 * (a cuBLASLt requirement). */
#include <math.h>
#include <string.h>

#include "prof_gpu.h"

struct gemm_call {
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
    const void *A, *B; /* cuBLASLt's operands (our B, our A) */
    void *C;
    void *ws;
    size_t ws_bytes;
};

static int gemm_call_run(void *arg, cudaStream_t s, struct lp_err *err)
{
    struct gemm_call *g = arg;
    const float alpha = 1.0f, beta = 0.0f;
    LPP_CUBLAS(err, cublasLtMatmul(g->lt, g->op, &alpha, g->A, g->a, g->B, g->b, &beta, g->C, g->c,
                                   g->C, g->c, &g->algo, g->ws, g->ws_bytes, s));
    return LP_OK;
}

static cudaDataType_t cuda_type(enum lp_prec p)
{
    return p == LP_FP8 ? CUDA_R_8F_E4M3 : p == LP_FP16 ? CUDA_R_16F : CUDA_R_16BF;
}

static void gemm_call_destroy(struct gemm_call *g)
{
    if (g->c) cublasLtMatrixLayoutDestroy(g->c);
    if (g->b) cublasLtMatrixLayoutDestroy(g->b);
    if (g->a) cublasLtMatrixLayoutDestroy(g->a);
    if (g->op) cublasLtMatmulDescDestroy(g->op);
    g->a = g->b = g->c = NULL;
    g->op = NULL;
}

/* Build the descriptors and pick cuBLASLt's first heuristic algorithm (what
 * PyTorch and TE do). */
static int gemm_call_setup(struct lpp_ctx *c, struct gemm_call *g, enum lp_gemm_layout l,
                           enum lp_prec p, uint64_t m, uint64_t n, uint64_t k, const float *scale,
                           struct lp_err *err)
{
    int rc = LP_OK;
    cublasOperation_t ta, tb;
    if (p == LP_FP8 || l == LP_GEMM_FWD) {
        ta = CUBLAS_OP_T;
        tb = CUBLAS_OP_N;
    } else if (l == LP_GEMM_DGRAD) {
        ta = CUBLAS_OP_N;
        tb = CUBLAS_OP_N;
    } else {
        ta = CUBLAS_OP_N;
        tb = CUBLAS_OP_T;
    }
    cudaDataType_t in = cuda_type(p), out = p == LP_FP8 ? CUDA_R_16BF : in;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t heur;
    int found = 0;
    memset(&heur, 0, sizeof(heur));
    g->lt = c->lt;
    g->ws = c->workspace;
    g->ws_bytes = c->workspace_bytes;
    LPP_CUBLAS_GOTO(err, rc, cublasLtMatmulDescCreate(&g->op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                    fail);
    LPP_CUBLAS_GOTO(
        err, rc,
        cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), fail);
    LPP_CUBLAS_GOTO(
        err, rc,
        cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), fail);
    if (p == LP_FP8) {
        int8_t fast = l == LP_GEMM_FWD;
        LPP_CUBLAS_GOTO(err, rc,
                        cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM,
                                                       &fast, sizeof(fast)),
                        fail);
        LPP_CUBLAS_GOTO(err, rc,
                        cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                                       &scale, sizeof(scale)),
                        fail);
        LPP_CUBLAS_GOTO(err, rc,
                        cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                                       &scale, sizeof(scale)),
                        fail);
    }
    /* cuBLASLt op(A) is n x k, op(B) is k x m, C is n x m (column-major). */
    if (ta == CUBLAS_OP_T)
        LPP_CUBLAS_GOTO(err, rc, cublasLtMatrixLayoutCreate(&g->a, in, k, n, (int64_t)k), fail);
    else
        LPP_CUBLAS_GOTO(err, rc, cublasLtMatrixLayoutCreate(&g->a, in, n, k, (int64_t)n), fail);
    if (tb == CUBLAS_OP_T)
        LPP_CUBLAS_GOTO(err, rc, cublasLtMatrixLayoutCreate(&g->b, in, m, k, (int64_t)m), fail);
    else
        LPP_CUBLAS_GOTO(err, rc, cublasLtMatrixLayoutCreate(&g->b, in, k, m, (int64_t)k), fail);
    LPP_CUBLAS_GOTO(err, rc, cublasLtMatrixLayoutCreate(&g->c, out, n, m, (int64_t)n), fail);

    LPP_CUBLAS_GOTO(err, rc, cublasLtMatmulPreferenceCreate(&pref), fail);
    LPP_CUBLAS_GOTO(err, rc,
                    cublasLtMatmulPreferenceSetAttribute(pref,
                                                         CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                         &g->ws_bytes, sizeof(g->ws_bytes)),
                    fail);
    LPP_CUBLAS_GOTO(err, rc,
                    cublasLtMatmulAlgoGetHeuristic(c->lt, g->op, g->a, g->b, g->c, g->c, pref, 1,
                                                   &heur, &found),
                    fail);
    if (found < 1) {
        rc = lp_err_set_at(err, LP_ECUDA, __FILE__, __LINE__,
                           "cuBLASLt has no algorithm for %s %s m=%llu n=%llu k=%llu",
                           lp_gemm_layout_name(l), lp_prec_name(p), (unsigned long long)m,
                           (unsigned long long)n, (unsigned long long)k);
        goto fail;
    }
    g->algo = heur.algo;
    cublasLtMatmulPreferenceDestroy(pref);
    return LP_OK;
fail:
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    gemm_call_destroy(g);
    return rc;
}

static uint64_t pad16(double x)
{
    uint64_t v = (uint64_t)x;
    return (v + 15) / 16 * 16;
}

/* One table: every (m, n, k) of the layout's grid. */
static int gemm_table(struct lpp_ctx *c, enum lp_gemm_layout l, enum lp_prec p, struct lp_table *t,
                      void *bufA, void *bufB, void *bufC, const float *scale, struct lp_err *err)
{
    static const char *const names[3] = {"m", "n", "k"};
    const struct lpp_axis *ax = c->plan->gemm[l];
    LP_TRY(err, lpp_table_init(t, ax, names, 3, err));
    long idx = 0;
    for (int i = 0; i < ax[0].n; i++)
        for (int j = 0; j < ax[1].n; j++)
            for (int q = 0; q < ax[2].n; q++, idx++) {
                uint64_t m = (uint64_t)ax[0].v[i], n = (uint64_t)ax[1].v[j],
                         k = (uint64_t)ax[2].v[q];
                if (p == LP_FP8) {
                    m = pad16(ax[0].v[i]);
                    n = pad16(ax[1].v[j]);
                    k = pad16(ax[2].v[q]);
                }
                struct gemm_call g;
                memset(&g, 0, sizeof(g));
                LP_TRY(err, gemm_call_setup(c, &g, l, p, m, n, k, scale, err));
                g.A = bufB; /* cuBLASLt's first operand is our B */
                g.B = bufA;
                g.C = bufC;
                int rc = lpp_time(c, gemm_call_run, &g, true, &t->value[idx], &t->spread[idx], err);
                gemm_call_destroy(&g);
                if (rc < 0) {
                    lp_err_trace(err, __FILE__, __LINE__);
                    return rc;
                }
            }
    return LP_OK;
}

static double axis_max(const struct lpp_axis *a)
{
    return a->n ? a->v[a->n - 1] : 0;
}

int lpp_gemm_run(struct lpp_ctx *c, struct lp_profile *prof, struct lp_err *err)
{
    static const enum lp_prec precs[] = {LP_BF16, LP_FP16, LP_FP8};
    const struct lpp_plan *pl = c->plan;
    int rc = LP_OK;
    void *A = NULL, *B = NULL, *C = NULL;
    float *scale = NULL;
    const float one = 1.0f;

    /* One set of buffers for the largest shape of every layout (+16 for fp8
     * padding), filled with uniform(-1, 1) once per precision. */
    double am = 0, bm = 0, cm = 0;
    for (int l = 0; l < LP_GEMM_LAYOUT_COUNT; l++) {
        double m = axis_max(&pl->gemm[l][0]) + 16, n = axis_max(&pl->gemm[l][1]) + 16,
               k = axis_max(&pl->gemm[l][2]) + 16;
        am = fmax(am, m * k);
        bm = fmax(bm, k * n);
        cm = fmax(cm, m * n);
    }
    LPP_CUDA_GOTO(err, rc, cudaMalloc(&A, (size_t)am * 2), cleanup);
    LPP_CUDA_GOTO(err, rc, cudaMalloc(&B, (size_t)bm * 2), cleanup);
    LPP_CUDA_GOTO(err, rc, cudaMalloc(&C, (size_t)cm * 2), cleanup);
    LPP_CUDA_GOTO(err, rc, cudaMalloc((void **)&scale, sizeof(float)), cleanup);
    LPP_CUDA_GOTO(err, rc, cudaMemcpy(scale, &one, sizeof(one), cudaMemcpyHostToDevice), cleanup);

    bool has_fp8 = c->dev.cc_major > 8 || (c->dev.cc_major == 8 && c->dev.cc_minor >= 9);
    lpp_attr_set(c->attrs, "gemm.timing",
                 "cuBLASLt first heuristic algorithm, %d MiB workspace, compute fp32; CUDA events "
                 "around each of %d calls after %d warm-up; L2 %s",
                 (int)(c->workspace_bytes >> 20), pl->reps, pl->warmup,
                 pl->flush_l2 ? "flushed before every call (memset of 4x L2)" : "not flushed");
    lpp_attr_set(c->attrs, "gemm.layouts",
                 "row-major C[m,n]=A[m,k]B[k,n]; cuBLASLt fwd TN, dgrad NN, wgrad NT; fp8 e4m3 "
                 "in, bf16 out, all layouts TN (TE caches transposes), fast accumulation in fwd "
                 "only, shapes padded to multiples of 16");
    for (size_t pi = 0; pi < sizeof(precs) / sizeof(precs[0]); pi++) {
        enum lp_prec p = precs[pi];
        if (!pl->prec[p]) continue;
        if (p == LP_FP8 && !has_fp8) {
            lpp_attr_set(c->attrs, "missing.gemm.fp8", "GPU sm_%d%d has no fp8 tensor cores",
                         c->dev.cc_major, c->dev.cc_minor);
            continue;
        }
        int dt = (int)p;
        size_t eb = lpp_elem_bytes(p);
        if (lpp_k_fill(A, (size_t)am * 2 / eb, dt, 1u, c->stream) ||
            lpp_k_fill(B, (size_t)bm * 2 / eb, dt, 2u, c->stream)) {
            rc = lp_err_set_at(err, LP_ECUDA, __FILE__, __LINE__, "fill kernel failed to launch");
            goto cleanup;
        }
        for (int l = 0; l < LP_GEMM_LAYOUT_COUNT; l++) {
            struct lp_table *t = &prof->gemm[l][p];
            char name[64];
            snprintf(name, sizeof(name), "gemm.%s.%s", lp_gemm_layout_name((enum lp_gemm_layout)l),
                     lp_prec_name(p));
            if (c->log) fprintf(c->log, "llmplan-profile: measuring %s\n", name);
            struct lp_err terr;
            lp_err_clear(&terr);
            int trc = gemm_table(c, (enum lp_gemm_layout)l, p, t, A, B, C, scale, &terr);
            if (trc < 0) {
                lpp_table_drop(c, t, name, &terr);
                if (!lpp_device_ok(c)) {
                    *err = terr;
                    rc = trc;
                    goto cleanup;
                }
            }
        }
    }
cleanup:
    cudaFree(scale);
    cudaFree(C);
    cudaFree(B);
    cudaFree(A);
    return rc;
}
