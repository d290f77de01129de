/* The workload: every operator of a transformer layer (and of the embedding
 * and the logits/loss stages) for one micro-batch on one rank, its shape, and
 * its cost from the profile.
 *
 * Notation: b micro-batch, s sequence per CP rank, T = b*s tokens, h hidden,
 * a heads, g kv heads, d = h/a, f ffn hidden, t TP degree. Per TP rank:
 * a/t heads, g/t kv heads, f/t ffn columns (Megatron column/row parallel
 * linears, Shoeybi et al. 2019). With sequence parallelism (Korthikanti et
 * al. 2022) norms, dropout and residuals work on T/t tokens. */
#include <math.h>
#include <string.h>

#include "sim_internal.h"

struct wl {
    const struct lp_cost_model *cm;
    const struct lp_run *run;
    enum lp_prec prec;   /* GEMM precision */
    enum lp_prec aprec;  /* attention / activations precision (fp8 runs attention in bf16) */
    double e;            /* bytes per activation element */
    double T, Tn;        /* tokens; tokens per rank for norms/residuals */
    double h, d, at, gt; /* hidden, head dim, heads and kv heads per rank */
    int t;
    enum lp_mem_kind norm;
};

/* Kernel time and kernel count of a sequence of operators. Every kernel
 * also costs the framework's per-kernel host time (fw.host_op_s: dispatch,
 * autograd, hooks in eager PyTorch frameworks), partly hidden behind the
 * GPU's work (host_exposed). Both constants are fitted on the calibration
 * half of the validation rows (docs/calibration.md). */
struct acc {
    double s;
    int n;
    double cat[LP_OPC_COUNT];
    double wg; /* the weight-gradient GEMMs among them (zero-bubble W pass) */
    int wn;
    double comm; /* exposed collectives on the same stream: GPU time the host also runs ahead of */
};

static void addk(struct acc *a, enum lp_op_class k, double t)
{
    a->s += t;
    a->n++;
    a->cat[k] += t;
}

/* A weight-gradient GEMM: part of the backward, and of its W pass. */
static void addw(struct acc *a, double t)
{
    addk(a, LP_OPC_GEMM, t);
    a->wg += t;
    a->wn++;
}

/* Host time of a sequence of kernels and how much of it the GPU does not
 * hide. Each kernel costs the framework's host_op_s on the host (dispatch,
 * autograd, hooks); the host runs ahead of the GPU only as far as its work
 * allows, so the sequence takes the smooth maximum
 *     (kernels^p + host^p)^(1/p),   p = fw.host_overlap >= 1
 * of its GPU time (kernels and the collectives between them) and its host
 * time: p = 1 is no overlap (the two add),
 * large p full overlap (the slower side alone). p is fitted with host_op_s
 * (docs/calibration.md). Returns the part beyond the kernel time. */
static double host_exposed(const struct wl *w, const struct acc *a, int ncoll)
{
    const double h = (a->n + ncoll) * w->run->fw.host_op_s, p = w->run->fw.host_overlap;
    const double g = a->s + a->comm; /* the GPU's time: kernels and collectives */
    if (!(h > 0)) return 0.0;
    if (!(p > 1.0) || !(g > 0)) return h;
    const double m = fmax(g, h), x = fmin(g, h) / m; /* scaled: no overflow */
    return m * pow(1.0 + pow(x, p), 1.0 / p) - g;
}

/* Fold a block's forward and backward sequences into the layer's
 * operator-class breakdown (overhead and collectives included). */
static void classify(const struct wl *w, struct lp_layer_cost *c, const struct acc *f,
                     const struct acc *b, double comm_f, double comm_b, int ncoll)
{
    for (int k = 0; k < LP_OPC_OVERHEAD; k++) {
        c->op_fwd[k] += f->cat[k];
        c->op_bwd[k] += b->cat[k];
    }
    c->op_fwd[LP_OPC_OVERHEAD] += host_exposed(w, f, ncoll);
    c->op_bwd[LP_OPC_OVERHEAD] += host_exposed(w, b, ncoll);
    c->op_fwd[LP_OPC_COMM] += comm_f;
    c->op_bwd[LP_OPC_COMM] += comm_b;
    /* the W pass's share of the backward's exposed host time: its kernels' */
    c->wgrad_s +=
        b->wg + (b->n + ncoll > 0 ? host_exposed(w, b, ncoll) * b->wn / (b->n + ncoll) : 0);
}

/* Compute time of a sequence including its kernels' overhead; `ncoll`
 * collectives launched in between carry the same overhead. */
static double with_overhead(const struct wl *w, const struct acc *a, int ncoll)
{
    return a->s + host_exposed(w, a, ncoll);
}

/* Power-limited clocks. A profile holds kernel times measured (or modelled)
 * in short bursts; over a training run a GPU busy with tensor-core work
 * hits its power limit and lowers its clock, so GEMMs and attention run at
 * a fraction f_min of the burst rate (lp_gpu_sustained: fitted,
 * docs/calibration.md). A GPU that idles between kernels, waiting for the
 * host, stays below the limit: the fraction applied is
 *     f = 1 - (1 - f_min) * duty,   duty = kernel time / (kernel + host time)
 * over the sequence `a` (memory-bound kernels and collectives are not
 * scaled: HBM and NVLink clocks do not follow the SM clock). */
static void throttle(const struct wl *w, struct acc *a, int ncoll)
{
    const double comp = a->cat[LP_OPC_GEMM] + a->cat[LP_OPC_ATTN];
    if (!(comp > 0) || !(a->s > 0)) return;
    const double host = (a->n + ncoll) * w->run->fw.host_op_s;
    const double duty = a->s / (a->s + host);
    const double k = 1.0 / (1.0 - (1.0 - lp_gpu_sustained(&w->run->system.gpu)) * duty);
    a->s += comp * (k - 1.0);
    a->cat[LP_OPC_GEMM] *= k;
    a->cat[LP_OPC_ATTN] *= k;
    a->wg *= k;
}

/* Close a block: throttle its compute, hide its TP collectives behind it
 * when the framework overlaps them (`may_overlap`), add host time, and fold
 * it into the layer cost. Leaves the exposed collectives in f->comm and
 * b->comm; returns the forward's time. */
static double finish_block(const struct wl *w, struct lp_layer_cost *c, struct acc *f,
                           struct acc *b, double comm_f, double comm_b, int ncoll, bool may_overlap)
{
    throttle(w, f, ncoll);
    throttle(w, b, ncoll);
    if (may_overlap && w->run->fw.tp_overlap) {
        comm_f = fmax(0.0, comm_f - f->s);
        comm_b = fmax(0.0, comm_b - b->s);
    }
    f->comm = comm_f;
    b->comm = comm_b;
    const double fwd = with_overhead(w, f, ncoll);
    c->fwd_s += fwd;
    c->bwd_s += with_overhead(w, b, ncoll);
    c->comm_fwd_s += comm_f;
    c->comm_bwd_s += comm_b;
    classify(w, c, f, b, comm_f, comm_b, ncoll);
    return fwd;
}

static double gemm(const struct wl *w, enum lp_gemm_layout l, double m, double n, double k)
{
    return w->cm->ops->gemm_s(w->cm, l, w->prec, m, n, k);
}

static double mem(const struct wl *w, enum lp_mem_kind k, double bytes);

/* A linear layer that may carry a LoRA adapter (`adapter`; without
 * fine-tuning every weight trains). */
static void linear_lora(const struct wl *w, double M, double N, double K, struct acc *fwd,
                        struct acc *bwd, bool adapter)
{
    addk(fwd, LP_OPC_GEMM, gemm(w, LP_GEMM_FWD, M, N, K));
    addk(bwd, LP_OPC_GEMM, gemm(w, LP_GEMM_DGRAD, M, K, N));
    int r = w->run->train.lora_rank;
    if (r <= 0) {
        addw(bwd, gemm(w, LP_GEMM_WGRAD, K, N, M));
        return;
    }
    int bits = w->run->train.lora_base_bits;
    if (bits < 16) { /* dequantise the base weight before each use (QLoRA) */
        double bytes = K * N * (bits / 8.0 + 2.0);
        addk(fwd, LP_OPC_MEM, mem(w, LP_MEM_COPY, bytes));
        addk(bwd, LP_OPC_MEM, mem(w, LP_MEM_COPY, bytes));
        if (bits == 4) {
            /* bitsandbytes dequantize_4bit with double quantisation (QLoRA's
             * and LLaMA-Factory's default): the 8-bit absmax of every
             * 64-weight block is dequantised first (dequantize_blockwise),
             * forward and again in MatMul4Bit.backward */
            addk(fwd, LP_OPC_MEM, mem(w, LP_MEM_COPY, K * N / 64.0 * 5.0));
            addk(bwd, LP_OPC_MEM, mem(w, LP_MEM_COPY, K * N / 64.0 * 5.0));
        }
    }
    if (!adapter) return;
    /* LoRA: the frozen weight needs no weight gradient; the adapter
     * y += (x A) B (A: K x r, B: r x N) adds two thin GEMMs forward and their
     * data and weight gradients backward */
    addk(fwd, LP_OPC_GEMM, gemm(w, LP_GEMM_FWD, M, r, K));
    addk(fwd, LP_OPC_GEMM, gemm(w, LP_GEMM_FWD, M, N, r));
    addk(bwd, LP_OPC_GEMM, gemm(w, LP_GEMM_DGRAD, M, r, N));
    addw(bwd, gemm(w, LP_GEMM_WGRAD, r, N, M));
    addk(bwd, LP_OPC_GEMM, gemm(w, LP_GEMM_DGRAD, M, K, r));
    addw(bwd, gemm(w, LP_GEMM_WGRAD, K, r, M));
    /* PEFT lora/layer.py (and bnb.py) Linear.forward: result + lora_B(lora_A(
     * dropout(x))) * scaling: a scaling multiply and an add forward, the
     * multiply's gradient backward; the 4-bit layer clones the base result
     * first (bnb.py Linear4bit.forward, "defensively clone") */
    const double y = M * N * w->e;
    addk(fwd, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 2.0 * y));
    addk(fwd, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 3.0 * y));
    addk(bwd, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 2.0 * y));
    if (bits == 4) addk(fwd, LP_OPC_MEM, mem(w, LP_MEM_COPY, 2.0 * y));
    if (w->run->train.lora_dropout > 0) { /* nn.Dropout on x: mask kept (1 B) */
        const double x = M * K;
        addk(fwd, LP_OPC_MEM, mem(w, LP_MEM_DROPOUT, x * (2.0 * w->e + 1.0)));
        addk(bwd, LP_OPC_MEM, mem(w, LP_MEM_DROPOUT, x * (2.0 * w->e + 1.0)));
    }
}

/* Forward GEMM (M x K) x (K x N) and its two backward GEMMs; with LoRA an
 * adapter when every linear layer carries one. */
static void linear(const struct wl *w, double M, double N, double K, struct acc *fwd,
                   struct acc *bwd)
{
    linear_lora(w, M, N, K, fwd, bwd, w->run->train.lora_targets == LP_LORA_ALL);
}

static double mem(const struct wl *w, enum lp_mem_kind k, double bytes)
{
    return w->cm->ops->mem_s(w->cm, k, bytes);
}

static double coll(const struct wl *w, enum lp_coll op, double bytes, int n, int stride)
{
    return lp_coll_time(w->cm, &w->run->system, op, bytes, n, stride);
}

/* TP communication of one linear pair (column-parallel in, row-parallel out)
 * in one direction: two all-reduces without SP; with SP an all-gather before
 * and a reduce-scatter after (same volume, Korthikanti et al. 2022 Sec 4.2.2). */
static double tp_comm(const struct wl *w)
{
    double bytes = w->T * w->h * w->e;
    if (w->t <= 1) return 0.0;
    if (w->run->par.sequence_parallel)
        return coll(w, LP_COLL_ALLGATHER, bytes, w->t, 1) +
               coll(w, LP_COLL_REDUCESCATTER, bytes, w->t, 1);
    return coll(w, LP_COLL_ALLREDUCE, bytes, w->t, 1);
}

/* RMSNorm in eager PyTorch over x elements (Transformers MixtralRMSNorm /
 * LlamaRMSNorm.forward): x.to(float32), pow(2), mean(-1), + eps and rsqrt
 * (per row), x * rsqrt, .to(input dtype), weight * x: five kernels over
 * the elements (and two per row); autograd runs the gradient of each,
 * eight over the elements (the weight's gradient: a multiply and a sum). */
static void eager_rmsnorm(const struct wl *w, double x, struct acc *fwd, struct acc *bwd)
{
    const double e = w->e, rows = x / w->h;
    addk(fwd, LP_OPC_MEM, mem(w, LP_MEM_COPY, x * (e + 4.0)));
    addk(fwd, LP_OPC_MEM, mem(w, LP_MEM_RMSNORM, x * 8.0));
    addk(fwd, LP_OPC_MEM, mem(w, LP_MEM_RMSNORM, x * 4.0));
    addk(fwd, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, rows * 8.0));
    addk(fwd, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, rows * 8.0));
    addk(fwd, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, x * 8.0));
    addk(fwd, LP_OPC_MEM, mem(w, LP_MEM_COPY, x * (4.0 + e)));
    addk(fwd, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, x * 2.0 * e));
    addk(bwd, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, x * 3.0 * e)); /* grad * weight */
    addk(bwd, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, x * 3.0 * e)); /* grad * x (weight grad) */
    addk(bwd, LP_OPC_MEM, mem(w, LP_MEM_RMSNORM, x * e));        /* its sum over rows */
    addk(bwd, LP_OPC_MEM, mem(w, LP_MEM_COPY, x * (e + 4.0)));   /* .to backward */
    addk(bwd, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, x * 12.0));    /* mul backward: d x */
    addk(bwd, LP_OPC_MEM, mem(w, LP_MEM_RMSNORM, x * 12.0));     /* d rsqrt (sum) */
    addk(bwd, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, x * 12.0));    /* mean and pow backward */
    addk(bwd, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, x * 12.0));    /* add the two paths */
    addk(bwd, LP_OPC_MEM, mem(w, LP_MEM_COPY, x * (4.0 + e)));   /* .to(float32) backward */
}

/* Norm + residual/dropout kernels around a sub-block. */
/* The norm before a sub-block: one kernel each way, or eager RMSNorm. */
static void norm_kernels(const struct wl *w, struct acc *fwd, struct acc *bwd)
{
    double x = w->Tn * w->h;
    if (!w->run->fw.fused_kernels && w->norm == LP_MEM_RMSNORM) {
        eager_rmsnorm(w, x, fwd, bwd);
    } else {
        addk(fwd, LP_OPC_MEM, mem(w, w->norm, 2.0 * x * w->e));
        addk(bwd, LP_OPC_MEM, mem(w, w->norm, 3.0 * x * w->e));
    }
}

static void elementwise(const struct wl *w, struct acc *fwd, struct acc *bwd)
{
    double x = w->Tn * w->h;
    bool fused = w->run->fw.fused_kernels;
    norm_kernels(w, fwd, bwd);
    if (!w->run->model.dropout) { /* residual add only; its gradient passes through */
        addk(fwd, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 3.0 * x * w->e));
    } else if (fused) { /* bias + dropout + residual add in one kernel: read 2, write 1, mask 1B */
        addk(fwd, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, x * (3.0 * w->e + 1.0)));
        addk(bwd, LP_OPC_MEM, mem(w, LP_MEM_DROPOUT, x * (2.0 * w->e + 1.0)));
    } else {
        addk(fwd, LP_OPC_MEM, mem(w, LP_MEM_DROPOUT, x * (2.0 * w->e + 1.0)));
        addk(fwd, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 3.0 * x * w->e));
        addk(bwd, LP_OPC_MEM, mem(w, LP_MEM_DROPOUT, x * (2.0 * w->e + 1.0)));
        addk(bwd, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 3.0 * x * w->e));
    }
}

/* Attention block: norm, QKV, rotary, core, output projection, residual. */
static void attention_block(const struct wl *w, struct lp_layer_cost *c)
{
    const struct lp_run *r = w->run;
    double T = w->T, h = w->h, d = w->d;
    struct acc f = {0}, b = {0};
    elementwise(w, &f, &b);
    linear(w, T, (w->at + 2.0 * w->gt) * d, h, &f, &b);
    if (r->model.pos == LP_POS_ROTARY) {
        double x = T * (w->at + w->gt) * d;
        addk(&f, LP_OPC_MEM, mem(w, LP_MEM_ROPE, 2.0 * x * w->e));
        addk(&b, LP_OPC_MEM, mem(w, LP_MEM_ROPE, 2.0 * x * w->e));
    }
    /* Core attention. With CP each rank attends its s queries to all cp*s
     * keys (ring attention): same FLOPs as cp independent s x s blocks. */
    static const enum lp_attn_impl fused_impl[LP_ATTENTION_COUNT] = {
        [LP_ATTENTION_FLASH2] = LP_ATTN_FUSED,
        [LP_ATTENTION_FLASH1] = LP_ATTN_FLASH1,
        [LP_ATTENTION_TRITON] = LP_ATTN_TRITON};
    enum lp_attn_impl impl = !r->train.flash_attention ? LP_ATTN_UNFUSED
                             : (unsigned)r->train.attention < LP_ATTENTION_COUNT
                                 ? fused_impl[r->train.attention]
                                 : LP_ATTN_FUSED;
    double bh = r->par.micro_batch * w->at * r->par.cp;
    double s = (double)r->model.seq_len / r->par.cp;
    /* Unfused attention with fused kernels (Megatron's
     * scaled_upper_triang_masked_softmax): the causal mask is applied inside
     * the softmax kernel, so there is no separate masking pass over the
     * scores: it costs what the unmasked (full) unfused attention costs. */
    const bool causal_tab = !(impl == LP_ATTN_UNFUSED && r->fw.fused_kernels);
    double af = w->cm->ops->attn_s(w->cm, impl, causal_tab, LP_PASS_FWD, w->aprec, bh, s, d);
    double ab = w->cm->ops->attn_s(w->cm, impl, causal_tab, LP_PASS_BWD, w->aprec, bh, s, d);
    /* unfused: QK^T, scale+mask+softmax, dropout, AV forward; their six
     * backward kernels */
    f.s += af;
    f.cat[LP_OPC_ATTN] += af;
    f.n += impl == LP_ATTN_UNFUSED ? 4 : 1;
    b.s += ab;
    b.cat[LP_OPC_ATTN] += ab;
    b.n += impl == LP_ATTN_UNFUSED ? 6 : 1;
    linear(w, T, h, w->at * d, &f, &b);

    double comm_f = tp_comm(w), comm_b = tp_comm(w);
    int ncoll = w->t > 1 ? (r->par.sequence_parallel ? 2 : 1) : 0;
    if (r->par.cp > 1) {
        /* ring exchange of K and V: cp-1 steps of the local K,V block,
         * overlapped with the attention of the previous block */
        double kv = 2.0 * T * w->gt * d * w->e;
        double ring = (r->par.cp - 1) * lp_p2p_time(w->cm, &r->system, kv, r->par.tp);
        comm_f += fmax(0.0, ring - af);
        comm_b += fmax(0.0, 2.0 * ring - ab);
    }
    double fwd = finish_block(w, c, &f, &b, comm_f, comm_b, ncoll, true);
    /* Selective recomputation redoes the attention core in backward
     * (Korthikanti et al. 2022 Sec 5). FlashAttention already recomputes the
     * scores inside its backward kernel, so there is nothing left to redo. */
    if (r->par.recompute == LP_RECOMPUTE_SELECTIVE && impl == LP_ATTN_UNFUSED) c->recompute_s += af;
    if (r->par.recompute == LP_RECOMPUTE_FULL) {
        c->recompute_s += fwd;
        c->comm_recompute_s += f.comm;
    }
}

/* Dense MLP block: norm, fc1, activation, fc2, residual. */
static void mlp_block(const struct wl *w, struct lp_layer_cost *c)
{
    const struct lp_run *r = w->run;
    double T = w->T, h = w->h, ft = (double)r->model.ffn_hidden / w->t;
    bool swiglu = r->model.ffn_act == LP_ACT_SWIGLU;
    struct acc f = {0}, b = {0};
    elementwise(w, &f, &b);
    linear(w, T, ft * (swiglu ? 2.0 : 1.0), h, &f, &b);
    double x = T * ft;
    addk(&f, LP_OPC_MEM,
         mem(w, swiglu ? LP_MEM_SWIGLU : LP_MEM_GELU, (swiglu ? 3.0 : 2.0) * x * w->e));
    addk(&b, LP_OPC_MEM,
         mem(w, swiglu ? LP_MEM_SWIGLU : LP_MEM_GELU, (swiglu ? 5.0 : 3.0) * x * w->e));
    linear(w, T, h, ft, &f, &b);
    double comm = tp_comm(w);
    int ncoll = w->t > 1 ? (r->par.sequence_parallel ? 2 : 1) : 0;
    double fwd = finish_block(w, c, &f, &b, comm, comm, ncoll, true);
    if (r->par.recompute == LP_RECOMPUTE_FULL) {
        c->recompute_s += fwd;
        c->comm_recompute_s += f.comm;
    }
}

/* MoE block (Switch/GShard style with Megatron expert parallelism): router,
 * all-to-all dispatch, the local experts' GEMMs (grouped), all-to-all
 * combine. Expert weights are sharded over TP like the dense MLP. */
static void moe_block_eager(const struct wl *w, struct lp_layer_cost *c);

static void moe_block(const struct wl *w, struct lp_layer_cost *c)
{
    const struct lp_run *r = w->run;
    if (r->fw.moe_impl == LP_MOE_EAGER) {
        moe_block_eager(w, c);
        return;
    }
    const struct lp_moe *moe = &r->model.moe;
    double T = w->T, h = w->h, ft = (double)moe->ffn_hidden / w->t;
    bool swiglu = r->model.ffn_act == LP_ACT_SWIGLU;
    double E = moe->experts, ep = r->par.ep, local = E / ep;
    /* tokens arriving per local expert: each rank routes T*top_k tokens,
     * spread evenly, padded by the capacity factor */
    double te = T * moe->top_k * moe->capacity_factor / local;
    struct acc f = {0}, b = {0};
    elementwise(w, &f, &b);
    linear_lora(w, T, E, h, &f, &b, true); /* router (adapted with LoRA targets "all" or "moe") */
    addk(&f, LP_OPC_MEM, mem(w, LP_MEM_SOFTMAX, 2.0 * T * E * 4.0));
    addk(&b, LP_OPC_MEM, mem(w, LP_MEM_SOFTMAX, 3.0 * T * E * 4.0));
    struct acc ef = {0}, eb = {0};
    linear_lora(w, te, ft * (swiglu ? 2.0 : 1.0), h, &ef, &eb, true);
    addk(&ef, LP_OPC_MEM,
         mem(w, swiglu ? LP_MEM_SWIGLU : LP_MEM_GELU, (swiglu ? 3.0 : 2.0) * te * ft * w->e));
    addk(&eb, LP_OPC_MEM,
         mem(w, swiglu ? LP_MEM_SWIGLU : LP_MEM_GELU, (swiglu ? 5.0 : 3.0) * te * ft * w->e));
    linear_lora(w, te, h, ft, &ef, &eb, true);
    /* the local experts run as grouped GEMMs: their time adds up, their
     * launches do not */
    f.s += local * ef.s;
    f.n += ef.n;
    b.s += local * eb.s;
    b.n += eb.n;
    for (int k = 0; k < LP_OPC_COUNT; k++) {
        f.cat[k] += local * ef.cat[k];
        b.cat[k] += local * eb.cat[k];
    }
    b.wg += local * eb.wg;
    b.wn += eb.wn;
    /* permutation copies of the routed tokens */
    addk(&f, LP_OPC_MEM, mem(w, LP_MEM_COPY, 4.0 * T * moe->top_k * h * w->e));
    addk(&b, LP_OPC_MEM, mem(w, LP_MEM_COPY, 4.0 * T * moe->top_k * h * w->e));
    double a2a = 0;
    if (r->par.ep > 1) {
        double bytes = T * moe->top_k * moe->capacity_factor * h * w->e;
        a2a = 2.0 * coll(w, LP_COLL_ALLTOALL, bytes, r->par.ep, r->par.tp * r->par.cp);
    }
    double comm = tp_comm(w) + a2a;
    int ncoll = (w->t > 1 ? (r->par.sequence_parallel ? 2 : 1) : 0) + (r->par.ep > 1 ? 2 : 0);
    double fwd = finish_block(w, c, &f, &b, comm, comm, ncoll, false);
    if (r->par.recompute == LP_RECOMPUTE_FULL) {
        c->recompute_s += fwd;
        c->comm_recompute_s += comm;
    }
}

/* One expert of the eager loop on n tokens (Transformers
 * modeling_mixtral.py, MixtralSparseMoeBlock.forward and
 * MixtralBlockSparseTop2MLP): gather the expert's tokens, w1 and w3 with
 * SiLU(w1 x) * w3 x, w2, scale by the routing weight, index_add_ into the
 * output; backward the reverse (index_add_'s gradient is an index_select,
 * the gather's an index_put into zeros). */
static void expert_eager(const struct wl *w, double n, double ft, struct acc *f, struct acc *b)
{
    const double h = w->h, e = w->e;
    const bool adapt = true; /* LoRA targets "all" and "moe" both adapt the experts */
    addk(f, LP_OPC_MEM, mem(w, LP_MEM_COPY, 2.0 * n * h * e));      /* hidden_states[top_x] */
    linear_lora(w, n, ft, h, f, b, adapt);                          /* w1 */
    linear_lora(w, n, ft, h, f, b, adapt);                          /* w3 */
    addk(f, LP_OPC_MEM, mem(w, LP_MEM_SWIGLU, 2.0 * n * ft * e));   /* act_fn(w1 x) */
    addk(f, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 3.0 * n * ft * e)); /* * w3 x */
    addk(b, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 4.0 * n * ft * e)); /* mul backward (2) */
    addk(b, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 4.0 * n * ft * e));
    addk(b, LP_OPC_MEM, mem(w, LP_MEM_SWIGLU, 3.0 * n * ft * e));  /* silu backward */
    linear_lora(w, n, h, ft, f, b, adapt);                         /* w2 */
    addk(f, LP_OPC_MEM, mem(w, LP_MEM_COPY, n * 16.0));            /* routing_weights[top_x, idx] */
    addk(f, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 2.0 * n * h * e)); /* * routing weight */
    addk(f, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 3.0 * n * h * e)); /* index_add_ */
    addk(b, LP_OPC_MEM, mem(w, LP_MEM_COPY, 2.0 * n * h * e));     /* index_select of the grad */
    addk(b, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 3.0 * n * h * e)); /* mul backward: grad x w */
    addk(b, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 2.0 * n * h * e)); /* and the weight's grad */
    addk(b, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 3.0 * n * h * e)); /* gather backward */
}

/* Host synchronisations per expert of the eager loop: torch.where on the
 * expert mask (nonzero: the host waits for the output size) and the two
 * .tolist() copies of its indices (Transformers 4.36-4.40,
 * MixtralSparseMoeBlock.forward: "in torch it is faster to index using
 * lists than torch tensors"). */
#define EAGER_SYNCS_PER_EXPERT 3

/* The MoE block as Transformers runs it in eager PyTorch (framework
 * option moe_impl "eager"): router (softmax in fp32, top-k, renormalise),
 * then a Python loop over the experts, each with its own small kernels on
 * its tokens only. Every expert's loop iteration synchronises the host
 * with the GPU: the host cannot run ahead across it, so each
 * synchronisation's host time adds to the block (it is not hidden behind
 * the GPU's work), and the kernels of every expert pay their own host time
 * (no grouped GEMM). Routing imbalance (moe.imbalance) gives the busiest
 * expert imbalance x the mean tokens and the others the rest. Dense MoE
 * (top_k = experts) runs every expert on every token. */
static void moe_block_eager(const struct wl *w, struct lp_layer_cost *c)
{
    const struct lp_run *r = w->run;
    const struct lp_moe *moe = &r->model.moe;
    const double T = w->T, h = w->h, ft = (double)moe->ffn_hidden / w->t, E = moe->experts;
    const double routed = T * moe->top_k, mean = routed / E;
    const double imb = moe->imbalance > 1.0 ? moe->imbalance : 1.0;
    const double busiest = fmin(T, mean * imb);
    const double rest = E > 1 ? (routed - busiest) / (E - 1) : 0.0;
    struct acc f = {0}, b = {0};
    elementwise(w, &f, &b);
    linear_lora(w, T, E, h, &f, &b, true); /* router (gate); adapted with LoRA targets "moe" */
    const double le = T * E;
    addk(&f, LP_OPC_MEM, mem(w, LP_MEM_SOFTMAX, le * (w->e + 4.0))); /* softmax(float) */
    addk(&f, LP_OPC_MEM, mem(w, LP_MEM_COPY, le * 4.0));             /* topk */
    addk(&f, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, routed * 8.0));     /* sum, divide */
    addk(&f, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, routed * 12.0));
    addk(&f, LP_OPC_MEM, mem(w, LP_MEM_COPY, routed * (4.0 + w->e))); /* .to(dtype) */
    addk(&f, LP_OPC_MEM, mem(w, LP_MEM_COPY, T * h * w->e));          /* zeros output */
    addk(&f, LP_OPC_MEM, mem(w, LP_MEM_COPY, le * 8.0 * moe->top_k)); /* one_hot mask */
    addk(&b, LP_OPC_MEM, mem(w, LP_MEM_COPY, le * 4.0));              /* topk backward */
    addk(&b, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, routed * 12.0));     /* divide backward */
    addk(&b, LP_OPC_MEM, mem(w, LP_MEM_SOFTMAX, le * 12.0));          /* softmax backward */
    struct acc e1f = {0}, e1b = {0}, erf = {0}, erb = {0};
    expert_eager(w, busiest, ft, &e1f, &e1b);
    if (E > 1) expert_eager(w, rest, ft, &erf, &erb);
    /* every expert's kernels in sequence, each launched on its own */
    const double others = E - 1;
    f.s += e1f.s + others * erf.s;
    f.n += e1f.n + (int)others * erf.n;
    b.s += e1b.s + others * erb.s;
    b.n += e1b.n + (int)others * erb.n;
    for (int k = 0; k < LP_OPC_COUNT; k++) {
        f.cat[k] += e1f.cat[k] + others * erf.cat[k];
        b.cat[k] += e1b.cat[k] + others * erb.cat[k];
    }
    b.wg += e1b.wg + others * erb.wg;
    b.wn += e1b.wn + (int)others * erb.wn;
    double comm = tp_comm(w);
    int ncoll = w->t > 1 ? (r->par.sequence_parallel ? 2 : 1) : 0;
    double fwd = finish_block(w, c, &f, &b, comm, comm, ncoll, false);
    /* the synchronisations: serial host time (their kernels counted above) */
    const double sync = E * EAGER_SYNCS_PER_EXPERT * r->fw.host_op_s;
    c->fwd_s += sync;
    c->op_fwd[LP_OPC_OVERHEAD] += sync;
    fwd += sync;
    if (r->par.recompute == LP_RECOMPUTE_FULL) {
        c->recompute_s += fwd;
        c->comm_recompute_s += comm;
    }
}

/* Vocabulary padded as Megatron does: to a multiple of 128 * tp. */
static double padded_vocab(const struct lp_run *r)
{
    double q = 128.0 * r->par.tp;
    return ceil(r->model.vocab / q) * q;
}

static void edges(const struct wl *w, struct lp_edge_cost *e)
{
    const struct lp_run *r = w->run;
    double T = w->T, h = w->h, vt = padded_vocab(r) / w->t;
    double tp_ar = w->t > 1 ? coll(w, LP_COLL_ALLREDUCE, T * h * w->e, w->t, 1) : 0.0;
    /* embedding: vocab-parallel lookup + all-reduce (reduce-scatter with SP);
     * backward scatter-adds into an fp32 gradient */
    e->emb_fwd_s = mem(w, LP_MEM_EMBEDDING, 2.0 * T * h * w->e) + tp_ar;
    if (r->model.pos == LP_POS_LEARNED) e->emb_fwd_s += mem(w, LP_MEM_RESIDUAL, 3.0 * T * h * w->e);
    e->emb_bwd_s = mem(w, LP_MEM_EMBEDDING, T * h * (w->e + 8.0));
    /* head: final norm, logits GEMM, vocab-parallel cross-entropy (three
     * all-reduces of T floats: max, sum-exp, target logit) */
    struct acc f = {0}, b = {0};
    addk(&f, LP_OPC_MEM, mem(w, w->norm, 2.0 * w->Tn * h * w->e));
    addk(&b, LP_OPC_MEM, mem(w, w->norm, 3.0 * w->Tn * h * w->e));
    linear(w, T, vt, h, &f, &b);
    const double L = T * vt, eb = w->e; /* logits on this rank, bytes each */
    switch (r->fw.xent) {
    case LP_XENT_FUSED: /* one kernel each way: logits in, loss (and grad) out */
        addk(&f, LP_OPC_MEM, mem(w, LP_MEM_CROSS_ENTROPY, L * (eb + 4.0)));
        addk(&b, LP_OPC_MEM, mem(w, LP_MEM_CROSS_ENTROPY, L * (eb + 4.0)));
        break;
    case LP_XENT_NATIVE: /* log_softmax; nll backward zero-fills, log_softmax backward */
        addk(&f, LP_OPC_MEM, mem(w, LP_MEM_CROSS_ENTROPY, L * 2.0 * eb));
        addk(&b, LP_OPC_MEM, mem(w, LP_MEM_COPY, L * eb));
        addk(&b, LP_OPC_MEM, mem(w, LP_MEM_CROSS_ENTROPY, L * 3.0 * eb));
        break;
    case LP_XENT_UPCAST: /* Transformers (modeling_mixtral.py MixtralForCausalLM.forward):
                          * logits.float(), logits[..., :-1, :].contiguous(), then
                          * CrossEntropyLoss (log_softmax + nll) on fp32; backward:
                          * nll's zero-filled gradient, log_softmax backward, the
                          * slice's and the cast's gradients */
        addk(&f, LP_OPC_MEM, mem(w, LP_MEM_COPY, L * (eb + 4.0)));
        addk(&f, LP_OPC_MEM, mem(w, LP_MEM_COPY, L * 8.0));
        addk(&f, LP_OPC_MEM, mem(w, LP_MEM_CROSS_ENTROPY, L * 8.0));
        addk(&b, LP_OPC_MEM, mem(w, LP_MEM_COPY, L * 4.0));
        addk(&b, LP_OPC_MEM, mem(w, LP_MEM_CROSS_ENTROPY, L * 12.0));
        addk(&b, LP_OPC_MEM, mem(w, LP_MEM_COPY, L * 12.0));
        addk(&b, LP_OPC_MEM, mem(w, LP_MEM_COPY, L * (4.0 + eb)));
        break;
    default: /* Megatron: logits.float(), then max, subtract, exp, sum and
              * divide over fp32 (the softmax kept for backward); backward
              * scales it in place and casts the gradient back */
        addk(&f, LP_OPC_MEM, mem(w, LP_MEM_COPY, L * (eb + 4.0)));
        addk(&f, LP_OPC_MEM, mem(w, LP_MEM_CROSS_ENTROPY, L * 4.0));
        addk(&f, LP_OPC_MEM, mem(w, LP_MEM_CROSS_ENTROPY, L * 8.0));
        addk(&f, LP_OPC_MEM, mem(w, LP_MEM_CROSS_ENTROPY, L * 8.0));
        addk(&f, LP_OPC_MEM, mem(w, LP_MEM_CROSS_ENTROPY, L * 4.0));
        addk(&f, LP_OPC_MEM, mem(w, LP_MEM_CROSS_ENTROPY, L * 8.0));
        addk(&b, LP_OPC_MEM, mem(w, LP_MEM_CROSS_ENTROPY, L * 8.0));
        addk(&b, LP_OPC_MEM, mem(w, LP_MEM_COPY, L * (4.0 + eb)));
        break;
    }
    double comm_f = 0, comm_b = 0;
    if (w->t > 1) {
        comm_f += 3.0 * coll(w, LP_COLL_ALLREDUCE, T * 4.0, w->t, 1);
        if (r->par.sequence_parallel) {
            comm_f += coll(w, LP_COLL_ALLGATHER, T * h * w->e, w->t, 1);
            comm_b += coll(w, LP_COLL_REDUCESCATTER, T * h * w->e, w->t, 1);
        } else {
            comm_b += tp_ar;
        }
    }
    throttle(w, &f, w->t > 1 ? 4 : 0);
    throttle(w, &b, w->t > 1 ? 1 : 0);
    f.comm = comm_f;
    b.comm = comm_b;
    e->head_fwd_s = with_overhead(w, &f, w->t > 1 ? 4 : 0) + comm_f;
    e->head_bwd_s = with_overhead(w, &b, w->t > 1 ? 1 : 0) + comm_b;
}

void lp_shape_cost_compute(const struct lp_cost_model *cm, const struct lp_run *run,
                           struct lp_shape_cost *out)
{
    const struct lp_model *m = &run->model;
    struct wl w;
    memset(out, 0, sizeof(*out));
    w.cm = cm;
    w.run = run;
    w.prec = run->train.precision;
    w.aprec = w.prec == LP_FP8 ? LP_BF16 : w.prec;
    w.e = w.prec == LP_FP32 ? 4.0 : 2.0;
    w.t = run->par.tp;
    w.T = (double)run->par.micro_batch * m->seq_len / run->par.cp;
    w.Tn = run->par.sequence_parallel ? w.T / w.t : w.T;
    w.h = m->hidden;
    w.d = (double)m->hidden / m->heads;
    w.at = (double)m->heads / w.t;
    w.gt = (double)m->kv_heads / w.t;
    w.norm = m->norm == LP_NORM_RMSNORM ? LP_MEM_RMSNORM : LP_MEM_LAYERNORM;

    attention_block(&w, &out->dense);
    out->attn = out->dense;
    {
        struct acc nf = {0}, nb = {0};
        norm_kernels(&w, &nf, &nb);
        out->norm_fwd_s = nf.s;
        out->norm_bwd_s = nb.s;
    }
    out->moe = out->dense;
    mlp_block(&w, &out->dense);
    if (m->moe.experts > 0) moe_block(&w, &out->moe);
    edges(&w, &out->edge);
    /* p2p between stages: the activation of one micro-batch, split over the
     * TP ranks (scatter/gather optimisation, Narayanan et al. 2021 Sec 4.1) */
    out->p2p_bytes = w.T * w.h * w.e / w.t;
}
