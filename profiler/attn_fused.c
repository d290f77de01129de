/* Fused (flash) attention with cuDNN 9's backend graph API.
 *
 * The graphs are the ones cudnn-frontend's composite SDPA nodes lower to
 * (include/cudnn_frontend/node/scaled_dot_product_flash_attention.h and
 * softmax.h there), which cuDNN's fused flash-attention engines recognise:
 *   forward:  S = Q KT; S *= scale; [causal: S = row >= col ? S : -inf];
 *             M = max_row(S); E = exp(S - M); Z = sum_row(E);
 *             Stats = M + log Z; P = E / Z; O = P V
 *   backward: D = sum_row(dO * O); S as above; P = exp(S - Stats);
 *             dV = P^T dO; dP = dO VT; dS = P * (dP - D) * scale;
 *             dK = dS^T Q; dQ = dS K (fp32 accumulator, then cast)
 * K and V enter transposed (KT, VT: [b, h_kv, d, s] views of BHSD storage),
 * as the backend expects. GQA: K/V have h_kv = h / kv_group heads and the
 * backward reduces dK/dV over the group. No dropout (p = 0).
 *
 * This file has not yet run on a GPU (docs/profiler.md): any failure while
 * building or executing a graph marks the fused tables missing instead of
 * aborting the run. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "prof_gpu.h"

#define G_MAX_DESC 160
#define G_MAX_OPS 48
#define G_MAX_IO 16

enum {
    UID_Q = 1,
    UID_K,
    UID_V,
    UID_O,
    UID_STATS,
    UID_SCALE,
    UID_NEGINF,
    UID_DO,
    UID_DQ,
    UID_DK,
    UID_DV,
    UID_ONE,
    UID_SSUM,
    UID_DQACC,
    UID_VIRT = 100
};

struct dg {
    cudnnHandle_t h;
    cudnnDataType_t io;
    cudnnBackendDescriptor_t all[G_MAX_DESC];
    int nall;
    cudnnBackendDescriptor_t ops[G_MAX_OPS];
    int nops;
    int64_t next_virt;
    cudnnBackendDescriptor_t graph, plan, pack;
    int64_t ws_bytes;
};

static void dg_destroy(struct dg *g)
{
    for (int i = g->nall - 1; i >= 0; i--)
        cudnnBackendDestroyDescriptor(g->all[i]);
    memset(g, 0, sizeof(*g));
}

static int dg_new(struct dg *g, cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t *out,
                  struct lp_err *err)
{
    if (g->nall >= G_MAX_DESC) LP_FAIL(err, LP_ENOMEM, "cuDNN graph: too many descriptors");
    LPP_CUDNN(err, cudnnBackendCreateDescriptor(type, out));
    g->all[g->nall++] = *out;
    return LP_OK;
}

#define SET(d, name, type, n, ptr) LPP_CUDNN(err, cudnnBackendSetAttribute(d, name, type, n, ptr))

static const int64_t one4[4] = {1, 1, 1, 1};

/* A tensor: uid 0 = a fresh virtual one. */
static int dg_tensor(struct dg *g, cudnnDataType_t dt, const int64_t dim[4], const int64_t str[4],
                     int64_t uid, bool by_value, cudnnBackendDescriptor_t *out, struct lp_err *err)
{
    bool virt = uid == 0;
    int64_t align = 16;
    if (virt) uid = g->next_virt++;
    LP_TRY(err, dg_new(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR, out, err));
    SET(*out, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
    SET(*out, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dim);
    SET(*out, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, str);
    SET(*out, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    SET(*out, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    SET(*out, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt);
    if (by_value) SET(*out, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
    LPP_CUDNN(err, cudnnBackendFinalize(*out));
    return LP_OK;
}

static int dg_op(struct dg *g, cudnnBackendDescriptor_t op, struct lp_err *err)
{
    if (g->nops >= G_MAX_OPS) LP_FAIL(err, LP_ENOMEM, "cuDNN graph: too many operations");
    LPP_CUDNN(err, cudnnBackendFinalize(op));
    g->ops[g->nops++] = op;
    return LP_OK;
}

/* y = mode(x [, b] [, t]); axis >= 0 for GEN_INDEX. */
static int dg_pw(struct dg *g, cudnnPointwiseMode_t mode, cudnnDataType_t math,
                 cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t t,
                 cudnnBackendDescriptor_t y, int64_t axis, struct lp_err *err)
{
    cudnnBackendDescriptor_t pw, op;
    LP_TRY(err, dg_new(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &pw, err));
    SET(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    SET(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &math);
    if (axis >= 0) SET(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    LPP_CUDNN(err, cudnnBackendFinalize(pw));
    LP_TRY(err, dg_new(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, &op, err));
    SET(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw);
    SET(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    if (b) SET(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
    if (t) SET(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t);
    SET(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    return dg_op(g, op, err);
}

static int dg_reduce(struct dg *g, cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x,
                     cudnnBackendDescriptor_t y, struct lp_err *err)
{
    cudnnBackendDescriptor_t rd, op;
    cudnnDataType_t f = CUDNN_DATA_FLOAT;
    LP_TRY(err, dg_new(g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, &rd, err));
    SET(rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode);
    SET(rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f);
    LPP_CUDNN(err, cudnnBackendFinalize(rd));
    LP_TRY(err, dg_new(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, &op, err));
    SET(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    SET(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    SET(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd);
    return dg_op(g, op, err);
}

static int dg_matmul(struct dg *g, cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b,
                     cudnnBackendDescriptor_t c, struct lp_err *err)
{
    cudnnBackendDescriptor_t md, op;
    cudnnDataType_t f = CUDNN_DATA_FLOAT;
    LP_TRY(err, dg_new(g, CUDNN_BACKEND_MATMUL_DESCRIPTOR, &md, err));
    SET(md, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f);
    LPP_CUDNN(err, cudnnBackendFinalize(md));
    LP_TRY(err, dg_new(g, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, &op, err));
    SET(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a);
    SET(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
    SET(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c);
    SET(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &md);
    return dg_op(g, op, err);
}

static int dg_reshape(struct dg *g, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y,
                      struct lp_err *err)
{
    cudnnBackendDescriptor_t op;
    LP_TRY(err, dg_new(g, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, &op, err));
    SET(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    SET(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    return dg_op(g, op, err);
}

/* Operation graph -> heuristics (mode A) -> the first engine config that
 * finalizes into an execution plan. */
static int dg_plan(struct dg *g, struct lp_err *err)
{
    cudnnBackendDescriptor_t heur, cfgs[16];
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    int64_t n = 0;
    LP_TRY(err, dg_new(g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &g->graph, err));
    SET(g->graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &g->h);
    SET(g->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g->nops, g->ops);
    LPP_CUDNN(err, cudnnBackendFinalize(g->graph));
    LP_TRY(err, dg_new(g, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur, err));
    SET(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->graph);
    SET(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    LPP_CUDNN(err, cudnnBackendFinalize(heur));
    for (int i = 0; i < 16; i++)
        LP_TRY(err, dg_new(g, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[i], err));
    LPP_CUDNN(err, cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 16, &n, cfgs));
    cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
    for (int64_t i = 0; i < n; i++) {
        cudnnBackendDescriptor_t plan;
        LP_TRY(err, dg_new(g, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan, err));
        SET(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &g->h);
        SET(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
            &cfgs[i]);
        last = cudnnBackendFinalize(plan);
        if (last == CUDNN_STATUS_SUCCESS) {
            int64_t cnt = 0;
            g->plan = plan;
            LPP_CUDNN(err, cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                    CUDNN_TYPE_INT64, 1, &cnt, &g->ws_bytes));
            return LP_OK;
        }
    }
    return lpp_fail_cudnn(err, last, "no engine config of the SDPA graph finalizes", __FILE__,
                          __LINE__);
}

static int dg_pack(struct dg *g, const int64_t *uids, void *const *ptrs, int n, void *ws,
                   struct lp_err *err)
{
    LP_TRY(err, dg_new(g, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &g->pack, err));
    SET(g->pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
    SET(g->pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs);
    SET(g->pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    LPP_CUDNN(err, cudnnBackendFinalize(g->pack));
    return LP_OK;
}

/* ---- shapes ---- */

struct shp {
    int64_t b, h, hk, s, d;
};

static void bhsd(const struct shp *p, int64_t h, int64_t dim[4], int64_t str[4])
{
    int64_t d4[4] = {p->b, h, p->s, p->d}, s4[4] = {h * p->s * p->d, p->s * p->d, p->d, 1};
    memcpy(dim, d4, sizeof(d4));
    memcpy(str, s4, sizeof(s4));
}

/* [b, h, d, s] view of BHSD storage (KT, VT) */
static void bhds_view(const struct shp *p, int64_t h, int64_t dim[4], int64_t str[4])
{
    int64_t d4[4] = {p->b, h, p->d, p->s}, s4[4] = {h * p->s * p->d, p->s * p->d, 1, p->d};
    memcpy(dim, d4, sizeof(d4));
    memcpy(str, s4, sizeof(s4));
}

static void scores(const struct shp *p, bool transposed, int64_t dim[4], int64_t str[4])
{
    int64_t ss = p->s * p->s;
    int64_t d4[4] = {p->b, p->h, p->s, p->s};
    int64_t s4[4] = {p->h * ss, ss, transposed ? 1 : p->s, transposed ? p->s : 1};
    memcpy(dim, d4, sizeof(d4));
    memcpy(str, s4, sizeof(s4));
}

static void rowvec(const struct shp *p, int64_t dim[4], int64_t str[4])
{
    int64_t d4[4] = {p->b, p->h, p->s, 1}, s4[4] = {p->h * p->s, p->s, 1, 1};
    memcpy(dim, d4, sizeof(d4));
    memcpy(str, s4, sizeof(s4));
}

/* S = scale * Q KT, causally masked: returns the masked scores tensor. */
static int build_scores(struct dg *g, const struct shp *p, bool causal, cudnnBackendDescriptor_t q,
                        cudnnBackendDescriptor_t kt, cudnnBackendDescriptor_t scale,
                        cudnnBackendDescriptor_t *out, struct lp_err *err)
{
    const cudnnDataType_t F = CUDNN_DATA_FLOAT;
    int64_t dim[4], str[4];
    cudnnBackendDescriptor_t s, s2;
    scores(p, false, dim, str);
    LP_TRY(err, dg_tensor(g, F, dim, str, 0, false, &s, err));
    LP_TRY(err, dg_matmul(g, q, kt, s, err));
    LP_TRY(err, dg_tensor(g, F, dim, str, 0, false, &s2, err));
    LP_TRY(err, dg_pw(g, CUDNN_POINTWISE_MUL, F, s, scale, NULL, s2, -1, err));
    if (!causal) {
        *out = s2;
        return LP_OK;
    }
    cudnnBackendDescriptor_t row, col, keep, s3, neginf;
    LP_TRY(err, dg_tensor(g, F, one4, one4, UID_NEGINF, true, &neginf, err));
    LP_TRY(err, dg_tensor(g, CUDNN_DATA_INT32, dim, str, 0, false, &row, err));
    LP_TRY(err, dg_pw(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, s2, NULL, NULL, row, 2, err));
    LP_TRY(err, dg_tensor(g, CUDNN_DATA_INT32, dim, str, 0, false, &col, err));
    LP_TRY(err, dg_pw(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, s2, NULL, NULL, col, 3, err));
    LP_TRY(err, dg_tensor(g, CUDNN_DATA_BOOLEAN, dim, str, 0, false, &keep, err));
    LP_TRY(err,
           dg_pw(g, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, col, NULL, keep, -1, err));
    LP_TRY(err, dg_tensor(g, F, dim, str, 0, false, &s3, err));
    LP_TRY(err, dg_pw(g, CUDNN_POINTWISE_BINARY_SELECT, F, s2, neginf, keep, s3, -1, err));
    *out = s3;
    return LP_OK;
}

static int build_fwd(struct dg *g, const struct shp *p, bool causal, struct lp_err *err)
{
    const cudnnDataType_t F = CUDNN_DATA_FLOAT;
    int64_t dim[4], str[4];
    cudnnBackendDescriptor_t q, kt, v, o, stats, scale, s, m, sub, e, z, lg, pr;
    bhsd(p, p->h, dim, str);
    LP_TRY(err, dg_tensor(g, g->io, dim, str, UID_Q, false, &q, err));
    LP_TRY(err, dg_tensor(g, g->io, dim, str, UID_O, false, &o, err));
    bhds_view(p, p->hk, dim, str);
    LP_TRY(err, dg_tensor(g, g->io, dim, str, UID_K, false, &kt, err));
    bhsd(p, p->hk, dim, str);
    LP_TRY(err, dg_tensor(g, g->io, dim, str, UID_V, false, &v, err));
    LP_TRY(err, dg_tensor(g, F, one4, one4, UID_SCALE, true, &scale, err));
    LP_TRY(err, build_scores(g, p, causal, q, kt, scale, &s, err));

    scores(p, false, dim, str);
    int64_t rd[4], rs[4];
    rowvec(p, rd, rs);
    LP_TRY(err, dg_tensor(g, F, rd, rs, 0, false, &m, err));
    LP_TRY(err, dg_reduce(g, CUDNN_REDUCE_TENSOR_MAX, s, m, err));
    LP_TRY(err, dg_tensor(g, F, dim, str, 0, false, &sub, err));
    LP_TRY(err, dg_pw(g, CUDNN_POINTWISE_SUB, F, s, m, NULL, sub, -1, err));
    LP_TRY(err, dg_tensor(g, F, dim, str, 0, false, &e, err));
    LP_TRY(err, dg_pw(g, CUDNN_POINTWISE_EXP, F, sub, NULL, NULL, e, -1, err));
    LP_TRY(err, dg_tensor(g, F, rd, rs, 0, false, &z, err));
    LP_TRY(err, dg_reduce(g, CUDNN_REDUCE_TENSOR_ADD, e, z, err));
    LP_TRY(err, dg_tensor(g, F, rd, rs, 0, false, &lg, err));
    LP_TRY(err, dg_pw(g, CUDNN_POINTWISE_LOG, F, z, NULL, NULL, lg, -1, err));
    LP_TRY(err, dg_tensor(g, F, rd, rs, UID_STATS, false, &stats, err));
    LP_TRY(err, dg_pw(g, CUDNN_POINTWISE_ADD, F, m, lg, NULL, stats, -1, err));
    LP_TRY(err, dg_tensor(g, g->io, dim, str, 0, false, &pr, err)); /* P in the I/O type */
    LP_TRY(err, dg_pw(g, CUDNN_POINTWISE_DIV, F, e, z, NULL, pr, -1, err));
    LP_TRY(err, dg_matmul(g, pr, v, o, err));
    return dg_plan(g, err);
}

/* dX [b, hk, s, d] from a per-query-head product: direct when h == hk, else
 * a full-head tensor (I/O type) reduced over the group. */
static int grad_out(struct dg *g, const struct shp *p, cudnnBackendDescriptor_t a,
                    cudnnBackendDescriptor_t b, int64_t uid, struct lp_err *err)
{
    int64_t dim[4], str[4];
    cudnnBackendDescriptor_t out, full;
    bhsd(p, p->hk, dim, str);
    LP_TRY(err, dg_tensor(g, g->io, dim, str, uid, false, &out, err));
    if (p->h == p->hk) return dg_matmul(g, a, b, out, err);
    bhsd(p, p->h, dim, str);
    LP_TRY(err, dg_tensor(g, g->io, dim, str, 0, false, &full, err)); /* as cudnn-frontend */
    LP_TRY(err, dg_matmul(g, a, b, full, err));
    return dg_reduce(g, CUDNN_REDUCE_TENSOR_ADD, full, out, err);
}

static int build_bwd(struct dg *g, const struct shp *p, bool causal, struct lp_err *err)
{
    const cudnnDataType_t F = CUDNN_DATA_FLOAT;
    int64_t dim[4], str[4], rd[4], rs[4];
    cudnnBackendDescriptor_t q, kt, vt, o, dout, stats, scale, one, dq, t1, t2, ssum, s, sub, pr,
        pt, dp, t3, ds, ds2, dst, kn, dqacc;
    bhsd(p, p->h, dim, str);
    LP_TRY(err, dg_tensor(g, g->io, dim, str, UID_Q, false, &q, err));
    LP_TRY(err, dg_tensor(g, g->io, dim, str, UID_O, false, &o, err));
    LP_TRY(err, dg_tensor(g, g->io, dim, str, UID_DO, false, &dout, err));
    LP_TRY(err, dg_tensor(g, g->io, dim, str, UID_DQ, false, &dq, err));
    LP_TRY(err, dg_tensor(g, F, dim, str, UID_DQACC, false, &dqacc, err));
    LP_TRY(err, dg_tensor(g, F, dim, str, 0, false, &t1, err));
    bhds_view(p, p->hk, dim, str);
    LP_TRY(err, dg_tensor(g, g->io, dim, str, UID_K, false, &kt, err));
    LP_TRY(err, dg_tensor(g, g->io, dim, str, UID_V, false, &vt, err));
    bhsd(p, p->hk, dim, str);
    LP_TRY(err, dg_tensor(g, g->io, dim, str, 0, false, &kn, err));
    rowvec(p, rd, rs);
    LP_TRY(err, dg_tensor(g, F, rd, rs, UID_STATS, false, &stats, err));
    LP_TRY(err, dg_tensor(g, F, rd, rs, 0, false, &t2, err));
    LP_TRY(err, dg_tensor(g, F, rd, rs, UID_SSUM, false, &ssum, err));
    LP_TRY(err, dg_tensor(g, F, one4, one4, UID_SCALE, true, &scale, err));
    LP_TRY(err, dg_tensor(g, F, one4, one4, UID_ONE, true, &one, err));

    /* D = sum_row(dO * O) */
    LP_TRY(err, dg_pw(g, CUDNN_POINTWISE_MUL, F, dout, o, NULL, t1, -1, err));
    LP_TRY(err, dg_reduce(g, CUDNN_REDUCE_TENSOR_ADD, t1, t2, err));
    LP_TRY(err, dg_pw(g, CUDNN_POINTWISE_MUL, F, t2, one, NULL, ssum, -1, err));
    /* P = exp(scale * Q KT [masked] - Stats) */
    LP_TRY(err, build_scores(g, p, causal, q, kt, scale, &s, err));
    scores(p, false, dim, str);
    LP_TRY(err, dg_tensor(g, F, dim, str, 0, false, &sub, err));
    LP_TRY(err, dg_pw(g, CUDNN_POINTWISE_SUB, F, s, stats, NULL, sub, -1, err));
    LP_TRY(err, dg_tensor(g, F, dim, str, 0, false, &pr, err));
    LP_TRY(err, dg_pw(g, CUDNN_POINTWISE_EXP, F, sub, NULL, NULL, pr, -1, err));
    /* dV = P^T dO */
    scores(p, true, dim, str);
    LP_TRY(err, dg_tensor(g, g->io, dim, str, 0, false, &pt, err));
    LP_TRY(err, dg_reshape(g, pr, pt, err));
    LP_TRY(err, grad_out(g, p, pt, dout, UID_DV, err));
    /* dS = P * (dO VT - D) * scale */
    scores(p, false, dim, str);
    LP_TRY(err, dg_tensor(g, F, dim, str, 0, false, &dp, err));
    LP_TRY(err, dg_matmul(g, dout, vt, dp, err));
    LP_TRY(err, dg_tensor(g, F, dim, str, 0, false, &t3, err));
    LP_TRY(err, dg_pw(g, CUDNN_POINTWISE_SUB, F, dp, ssum, NULL, t3, -1, err));
    LP_TRY(err, dg_tensor(g, F, dim, str, 0, false, &ds, err));
    LP_TRY(err, dg_pw(g, CUDNN_POINTWISE_MUL, F, t3, pr, NULL, ds, -1, err));
    LP_TRY(err, dg_tensor(g, F, dim, str, 0, false, &ds2, err));
    LP_TRY(err, dg_pw(g, CUDNN_POINTWISE_MUL, F, ds, scale, NULL, ds2, -1, err));
    /* dK = dS^T Q */
    scores(p, true, dim, str);
    LP_TRY(err, dg_tensor(g, g->io, dim, str, 0, false, &dst, err));
    LP_TRY(err, dg_reshape(g, ds2, dst, err));
    LP_TRY(err, grad_out(g, p, dst, q, UID_DK, err));
    /* dQ = dS K (fp32 accumulator, then cast) */
    LP_TRY(err, dg_reshape(g, kt, kn, err));
    LP_TRY(err, dg_matmul(g, ds2, kn, dqacc, err));
    LP_TRY(err, dg_pw(g, CUDNN_POINTWISE_IDENTITY, F, dqacc, NULL, NULL, dq, -1, err));
    return dg_plan(g, err);
}

/* ---- timing ---- */

struct fa_bufs {
    void *q, *k, *v, *o, *dout, *dq, *dk, *dv;
    float *stats, *ssum, *dqacc;
};

struct fa_call {
    cudnnHandle_t h;
    cudnnBackendDescriptor_t plan, pack;
};

static int fa_run(void *arg, cudaStream_t s, struct lp_err *err)
{
    struct fa_call *f = arg;
    (void)s; /* the handle is bound to the context's stream */
    LPP_CUDNN(err, cudnnBackendExecute(f->h, f->plan, f->pack));
    return LP_OK;
}

static double fa_footprint(double bh, double s, double d, double e)
{
    return 8 * bh * s * d * e + 2 * bh * s * 4 + bh * s * d * 4 + 12 * 256;
}

static void fa_carve(char *arena, const struct shp *p, size_t e, struct fa_bufs *b)
{
    size_t qkv = (size_t)(p->b * p->h * p->s * p->d) * e;
    size_t row = (size_t)(p->b * p->h * p->s) * 4;
    void **io[] = {&b->q, &b->k, &b->v, &b->o, &b->dout, &b->dq, &b->dk, &b->dv};
    char *x = arena;
    for (size_t i = 0; i < sizeof(io) / sizeof(io[0]); i++) {
        *io[i] = x;
        x += (qkv + 255) / 256 * 256;
    }
    b->stats = (float *)x;
    x += (row + 255) / 256 * 256;
    b->ssum = (float *)x;
    x += (row + 255) / 256 * 256;
    b->dqacc = (float *)x;
}

/* Build, run and time one pass; bh_scale multiplies the time. */
static int fa_pass(struct lpp_ctx *c, enum lp_prec pr, bool causal, enum lp_pass pass,
                   const struct shp *p, const struct fa_bufs *b, double *t, double *sp,
                   struct lp_err *err)
{
    struct dg g;
    int rc;
    void *ws = NULL;
    float scale = (float)(1.0 / sqrt((double)p->d)), neginf = -FLT_MAX, one = 1.0f;
    memset(&g, 0, sizeof(g));
    g.h = c->dnn;
    g.io = pr == LP_FP16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
    g.next_virt = UID_VIRT;
    rc = pass == LP_PASS_FWD ? build_fwd(&g, p, causal, err) : build_bwd(&g, p, causal, err);
    if (rc < 0) goto done;
    if (g.ws_bytes > 0) LPP_CUDA_GOTO(err, rc, cudaMalloc(&ws, (size_t)g.ws_bytes), done);
    int64_t uids[G_MAX_IO];
    void *ptrs[G_MAX_IO];
    int n = 0;
#define BIND(u, ptr) (uids[n] = (u), ptrs[n] = (void *)(ptr), n++)
    BIND(UID_Q, b->q);
    BIND(UID_K, b->k);
    BIND(UID_V, b->v);
    BIND(UID_O, b->o);
    BIND(UID_STATS, b->stats);
    BIND(UID_SCALE, &scale);
    if (causal) BIND(UID_NEGINF, &neginf); /* only causal graphs have the mask */
    if (pass == LP_PASS_BWD) {
        BIND(UID_DO, b->dout);
        BIND(UID_DQ, b->dq);
        BIND(UID_DK, b->dk);
        BIND(UID_DV, b->dv);
        BIND(UID_ONE, &one);
        BIND(UID_SSUM, b->ssum);
        BIND(UID_DQACC, b->dqacc);
    }
#undef BIND
    rc = dg_pack(&g, uids, ptrs, n, ws, err);
    if (rc < 0) goto done;
    struct fa_call f = {c->dnn, g.plan, g.pack};
    rc = lpp_time(c, fa_run, &f, true, t, sp, err);
done:
    if (ws) cudaFree(ws);
    dg_destroy(&g);
    if (rc < 0) lp_err_trace(err, __FILE__, __LINE__);
    return rc;
}

static int fa_point(struct lpp_ctx *c, enum lp_prec pr, bool causal, double bh, double s, double d,
                    char *arena, size_t arena_bytes, double t[2], double sp[2], int *scaled,
                    struct lp_err *err)
{
    size_t e = lpp_elem_bytes(pr);
    double bh_eff = bh;
    while (fa_footprint(bh_eff, s, d, (double)e) > (double)arena_bytes && bh_eff > 1)
        bh_eff = ceil(bh_eff / 2);
    if (fa_footprint(bh_eff, s, d, (double)e) > (double)arena_bytes)
        LP_FAIL(err, LP_ENOMEM, "fused attention s=%.0f d=%.0f does not fit", s, d);
    if (bh_eff < bh) (*scaled)++;
    /* batch_heads = b * h with h = the GQA group (one KV head per batch) */
    int g = c->plan->kv_group > 0 ? c->plan->kv_group : 1;
    int64_t ibh = (int64_t)bh_eff;
    struct shp p = {ibh, 1, 1, (int64_t)s, (int64_t)d};
    if (g > 1 && ibh % g == 0) {
        p.b = ibh / g;
        p.h = g;
    }
    struct fa_bufs b;
    fa_carve(arena, &p, e, &b);
    if (lpp_k_fill(b.q, 5 * (size_t)(ibh * p.s * p.d), (int)pr, 5u, c->stream))
        LP_FAIL(err, LP_ECUDA, "fill kernel failed to launch");
    LP_TRY(err, fa_pass(c, pr, causal, LP_PASS_FWD, &p, &b, &t[0], &sp[0], err));
    LP_TRY(err, fa_pass(c, pr, causal, LP_PASS_BWD, &p, &b, &t[1], &sp[1], err));
    t[0] *= bh / bh_eff;
    t[1] *= bh / bh_eff;
    return LP_OK;
}

int lpp_attn_fused_run(struct lpp_ctx *c, struct lp_profile *prof, struct lp_err *err)
{
    int scaled = 0;
    LP_TRY(err, lpp_attn_sweep(c, prof, LP_ATTN_FUSED, false, fa_footprint, 0.5, fa_point, &scaled,
                               err));
    lpp_attr_set(c->attrs, "attn.fused.timing",
                 "cuDNN %zu backend graph (composite SDPA as cudnn-frontend lowers it, heuristics "
                 "mode A, first plan that finalizes); no dropout; GQA group %d (h = group, one KV "
                 "head); fwd and bwd timed separately with CUDA events, %d calls after %d "
                 "warm-up, L2 %s; %d points scaled from a smaller batch_heads (memory)",
                 cudnnGetVersion(), c->plan->kv_group, c->plan->reps, c->plan->warmup,
                 c->plan->flush_l2 ? "flushed" : "not flushed", scaled);
    return LP_OK;
}
