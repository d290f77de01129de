/* Data-parallel communication: gradient reduction (DDP / Megatron buckets),
 * ZeRO gathers, ZeRO-3 / FSDP per-micro-batch collectives, and the
 * optimizer step over the parameters a rank owns. */
#include <math.h>
#include <string.h>

#include "sim_internal.h"

/* Fused Adam, mixed precision: read fp32 param, fp32 grad, m, v; write
 * param, m, v and the bf16/fp16 copy = 30 B/param; + 4 B for the grad norm. */
#define ADAM_BYTES_PER_PARAM_MIXED 34.0
#define ADAM_BYTES_PER_PARAM_FP32 32.0

double lp_sim_vocab_padded(const struct lp_run *r)
{
    double q = 128.0 * r->par.tp;
    return ceil(r->model.vocab / q) * q;
}

/* Mixed precision (Micikevicius et al. 2018; ZeRO, Rajbhandari et al. 2020
 * Sec 3.1): 2-byte weights and gradients, 12 bytes of fp32 master weights,
 * momentum and variance. Megatron keeps bf16 gradients in an fp32 main_grad
 * buffer (and reduces them in fp32), so bf16 costs 4 bytes of gradient. */
void lp_sim_param_bytes(const struct lp_run *r, struct lp_bytes_per_param *b)
{
    switch (r->train.precision) {
    case LP_FP32:
        b->w = 4;
        b->g = 4;
        b->o = 8;
        break;
    case LP_BF16:
        b->w = 2;
        b->g = r->fw.kind == LP_FW_FSDP ? 2 : 4;
        b->o = 12;
        break;
    default:
        b->w = 2;
        b->g = 2;
        b->o = 12;
        break;
    }
    b->g_comm = b->g;
}

/* The parameter tensors of one layer on one TP rank, in parameters: what a
 * framework that gathers ZeRO-3 parameters tensor by tensor issues one
 * collective for (fw.zero3_per_tensor). Returns their count (<= cap). */
static int layer_tensors(const struct lp_run *r, bool moe_layer, double *sz, int cap)
{
    const struct lp_model *m = &r->model;
    double t = r->par.tp, h = m->hidden, d = (double)m->hidden / m->heads;
    int n = 0;
#define PUT(x)                                                                                     \
    do {                                                                                           \
        if (n < cap) sz[n++] = (x);                                                                \
    } while (0)
    for (int i = 0; i < 2; i++) { /* the two norms */
        PUT(h);
        if (m->norm == LP_NORM_LAYERNORM) PUT(h);
    }
    PUT(h * d * (m->heads + 2.0 * m->kv_heads) / t); /* QKV */
    if (m->bias) PUT((m->heads + 2.0 * m->kv_heads) * d / t);
    PUT(m->heads * d * h / t); /* output projection */
    if (m->bias) PUT(h);
    const bool moe = moe_layer && m->moe.experts > 0;
    const double f = moe ? m->moe.ffn_hidden : m->ffn_hidden;
    const double copies = moe ? (double)m->moe.experts / r->par.ep : 1.0;
    const double nmat = m->ffn_act == LP_ACT_SWIGLU ? 3.0 : 2.0;
    if (moe) PUT(h * m->moe.experts); /* router */
    for (int e = 0; e < (int)copies; e++) {
        PUT((nmat - 1.0) * h * f / t); /* fc1 (gate and up fused for SwiGLU) */
        if (m->bias) PUT((nmat - 1.0) * f / t);
        PUT(f * h / t); /* fc2 */
        if (m->bias) PUT(h);
    }
#undef PUT
    return n;
}

void lp_dp_costs(struct lp_sim *s, const struct lp_run *r, const struct lp_params *pr,
                 double bwd_window_s[2], double fwd_window_s, struct lp_dp_cost *out)
{
    const struct lp_parallel *p = &r->par;
    const struct lp_cost_model *cm = &s->cm;
    struct lp_bytes_per_param b;
    lp_sim_param_bytes(r, &b);
    int nd = p->dp * p->cp;
    double stage_params[2] = {pr->train0, pr->train_last};
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < 2; i++) {
        double P = stage_params[i], t_red = 0, t_gather = 0;
        if (nd > 1) {
            if (p->zero == 0) {
                t_red = lp_coll_time(cm, &r->system, LP_COLL_ALLREDUCE, P * b.g_comm, nd, p->tp);
            } else if (p->zero < 3) { /* ZeRO-3 reduce-scatters every micro-batch: below */
                t_red =
                    lp_coll_time(cm, &r->system, LP_COLL_REDUCESCATTER, P * b.g_comm, nd, p->tp);
                t_gather = lp_coll_time(cm, &r->system, LP_COLL_ALLGATHER, P * b.w, nd, p->tp);
            }
        }
        double nbuckets = fmax(1.0, ceil(P * b.g_comm / r->fw.bucket_bytes));
        double exposed = t_red;
        if (r->fw.dp_overlap) exposed = fmax(t_red - bwd_window_s[i], t_red / nbuckets);
        double gexp = t_gather;
        if (r->fw.param_gather_overlap) gexp = fmax(t_gather - fwd_window_s, t_gather / nbuckets);
        out->exposed_s[i] = exposed + gexp;
        out->hidden_s[i] = (t_red - exposed) + (t_gather - gexp);
    }
    /* tied input/output embeddings on different stages: their gradients are
     * all-reduced between the first and last stage after the backward */
    if (r->model.tied_embeddings && p->pp > 1) {
        double bytes = lp_sim_vocab_padded(r) * r->model.hidden / p->tp * b.g_comm;
        int stride = p->tp * p->cp * p->dp * (p->pp - 1);
        out->emb_sync_s = lp_coll_time(cm, &r->system, LP_COLL_ALLREDUCE, bytes, 2, stride);
    }
    if (p->zero >= 3 && nd > 1) {
        /* ZeRO-3 / FSDP FULL_SHARD: every micro-batch gathers the parameters
         * for forward and again for backward, and reduce-scatters their
         * gradients. One collective per layer (an FSDP unit per block), or
         * one per parameter tensor (DeepSpeed's ZeRO-3 of 2021:
         * fw.zero3_per_tensor); the embedding and head are one each. */
        double ag = 0, rs = 0;
        for (int moe = 0; moe < 2; moe++) {
            int nl = moe ? pr->moe_layers_per_stage : pr->dense_layers_per_stage;
            if (nl <= 0) continue;
            double sz[512];
            int nt = 1;
            sz[0] = moe ? pr->moe_layer : pr->layer;
            if (r->fw.zero3_per_tensor) nt = layer_tensors(r, moe != 0, sz, 512);
            for (int i = 0; i < nt; i++) {
                ag += nl * lp_coll_time(cm, &r->system, LP_COLL_ALLGATHER, sz[i] * b.w, nd, p->tp);
                rs += nl * lp_coll_time(cm, &r->system, LP_COLL_REDUCESCATTER, sz[i] * b.g_comm, nd,
                                        p->tp);
            }
        }
        double ends = pr->stage_max - (pr->dense_layers_per_stage * pr->layer +
                                       pr->moe_layers_per_stage * pr->moe_layer);
        if (ends > 0) {
            ag += lp_coll_time(cm, &r->system, LP_COLL_ALLGATHER, ends * b.w, nd, p->tp);
            rs += lp_coll_time(cm, &r->system, LP_COLL_REDUCESCATTER, ends * b.g_comm, nd, p->tp);
        }
        out->zero3_fwd_s = ag;
        out->zero3_bwd_s = ag + rs;
    }
    /* optimizer over the parameters this rank owns */
    double owned = pr->train_max / (p->zero >= 1 ? (double)nd : 1.0);
    double per =
        r->train.precision == LP_FP32 ? ADAM_BYTES_PER_PARAM_FP32 : ADAM_BYTES_PER_PARAM_MIXED;
    out->opt_s = cm->ops->mem_s(cm, LP_MEM_ADAM, owned * per);
}
