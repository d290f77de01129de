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

#include "llmplan/arch.h"
#include "sim_internal.h"

struct wl {
    const struct lp_cost_model *cm;
    const struct lp_run *run;
    enum lp_prec prec;   /* GEMM precision */
    enum lp_prec aprec;  /* attention / activations precision (fp8 runs attention in bf16) */
    double e;            /* bytes per activation element */
    double q;            /* bytes per quantised element and its share of a block scale (0: none) */
    double T, Tn;        /* tokens; tokens per rank for norms/residuals */
    double h, d, at, gt; /* hidden, head dim, heads and kv heads per rank */
    int t;
    enum lp_mem_kind norm;
    /* when not NULL: the block being built records its kernel order here
     * (lp_shape_cost_order) */
    struct lp_op_order *order;
    /* the forward synchronises the host with the GPU in every few layers
     * (dropless MoE: lockstep, see moe_block), so its host time is not
     * hidden behind queued GPU work */
    bool lockstep;
    /* kernel time of the mixer before a MoE block (forward, backward),
     * the mean over the model's MoE layers: what Megatron-Core's combined
     * 1F1B hides one pass's combine behind (moe_block) */
    double pre_f, pre_b;
};

/* Kernel time and kernel count of a sequence of operators. Every kernel
 * also costs the framework's per-kernel host time (fw.host_op_s: dispatch,
 * autograd, hooks in eager PyTorch frameworks), partly hidden behind the
 * GPU's work (host_exposed). Both constants are fitted on the calibration
 * half of the validation rows (docs/calibration.md). */
/* A run of kernels of one class in a block's issue order (for the
 * timeline): `w` weight-gradient GEMMs, `tail` the residual / dropout
 * kernels that elementwise() adds first and the block runs last. A COMM run
 * of no time marks the block's row-parallel (output) collective. */
struct acc_seg {
    unsigned char k, w, tail;
    double t;
};
#define ACC_SEGS 40

/* One GEMM that Transformer Engine's userbuffers run beside a TP
 * collective (ub_exposed): `n` GEMM chunks of `g` seconds each beside
 * collective chunks of `c` seconds each, the way `kind` schedules them. */
enum ub_kind { UB_RING, UB_PIPELINE, UB_BULK };
struct ub_overlap {
    enum ub_kind kind;
    double g, c;
    int n;
};
/* A pass holds the overlaps of its block's one TP linear pair (linear_tp:
 * attention's QKV and projection, the Mamba mixer's in and out
 * projections, the dense MLP's fc1 and fc2; the shared and routed experts
 * and MLA's projections run without userbuffers): the column-parallel
 * linear pushes one overlap forward and two backward (dgrad and wgrad
 * bulk), the row-parallel one one each way. An overlap past the capacity
 * is counted (lp_layer_cost ub_dropped), never dropped unnoticed:
 * tests/unit/test_nemo_mcore.c runs every model preset's blocks under TP
 * overlap and asserts none. */
#define UB_COL_PUSHES 2 /* the most a column-parallel linear pushes to one pass */
#define UB_ROW_PUSHES 1
#define UB_MAX (UB_COL_PUSHES + UB_ROW_PUSHES)

struct acc {
    double s;
    int n;
    double cat[LP_OPC_COUNT];
    struct acc_seg seg[ACC_SEGS];
    int nseg;
    bool tail, lost; /* lost: more runs than ACC_SEGS (the order is not kept) */
    double wg;       /* the weight-gradient GEMMs among them (zero-bubble W pass) */
    int wn;
    double comm; /* exposed collectives on the same stream: GPU time the host also runs ahead of */
    bool lockstep; /* host and GPU serial (p = 1): no queue to run ahead in */
    int graphed;   /* kernels among n replayed from a CUDA graph (one launch for all) */
    /* the column-parallel TP linear's backward GEMMs (tp_bwd_exposed) */
    double col_dgrad, col_wgrad;
    int col_n;
    /* Transformer Engine userbuffers overlaps in this pass, one per
     * overlapped GEMM (ub_push; what they leave exposed: ub_exposed) */
    struct ub_overlap ub[UB_MAX];
    int nub, ub_over; /* ub_over: pushes past UB_MAX (a defect) */
    /* what those overlapped linears' collectives cost unoverlapped, as the
     * block's tp_comm(w, true) charges them: the part of it they replace (a
     * block whose other linears gather without userbuffers, MLA's down
     * projections, keeps the rest) */
    double ub_cover;
    /* collectives the block's own stream waits for before its next kernel
     * (fp8 current scaling's TP amax all-reduce, amax_sync): never hidden
     * behind the block's work, even under TP overlap */
    double sync;
};

/* Kernels (and collectives) the host dispatches one by one: a CUDA graph's
 * kernels cost it one launch together. */
static int host_launches(const struct acc *a, int ncoll)
{
    return a->n - a->graphed + (a->graphed > 0 ? 1 : 0) + ncoll;
}

static void seg_push(struct acc *a, enum lp_op_class k, double t, bool w)
{
    struct acc_seg *l = a->nseg > 0 ? &a->seg[a->nseg - 1] : NULL;
    if (l && l->k == k && l->w == w && l->tail == a->tail)
        l->t += t;
    else if (a->nseg < ACC_SEGS)
        a->seg[a->nseg++] =
            (struct acc_seg){.k = (unsigned char)k, .w = w, .tail = a->tail, .t = t};
    else
        a->lost = true;
}

/* A kernel that autograd's C++ engine launches itself (AccumulateGrad):
 * GPU time, but none of the framework's per-op host time (fw.host_op_s is
 * the eager Python op's dispatch, autograd and hooks), so not counted
 * among the host's launches. */
static void add_native(struct acc *a, enum lp_op_class k, double t)
{
    a->s += t;
    a->cat[k] += t;
    seg_push(a, k, t, false);
}

/* A kernel the framework's Python issues: one of the host's launches. */
static void addk(struct acc *a, enum lp_op_class k, double t)
{
    a->n++;
    add_native(a, k, t);
}

/* A weight-gradient GEMM: part of the backward, and of its W pass. */
static void addw(struct acc *a, double t)
{
    a->s += t;
    a->n++;
    a->cat[LP_OPC_GEMM] += t;
    seg_push(a, LP_OPC_GEMM, t, true);
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
    const double h = host_launches(a, ncoll) * w->run->fw.host_op_s;
    const double p = a->lockstep ? 1.0 : w->run->fw.host_overlap;
    const double g = a->s + a->comm; /* the GPU's time: kernels and collectives */
    if (!(h > 0)) return 0.0;
    if (!(p > 1.0) || !(g > 0)) return h;
    const double m = fmax(g, h), x = fmin(g, h) / m; /* scaled: no overflow */
    return m * pow(1.0 + pow(x, p), 1.0 / p) - g;
}

static void order_put(struct lp_op_seg *s, int *n, enum lp_op_class k, bool w, double t)
{
    if (*n < LP_OP_ORDER_MAX && t > 0) s[(*n)++] = (struct lp_op_seg){.cls = k, .wgrad = w, .t = t};
}

/* Whether a's runs hold its class times (a block that adds to cat[]
 * directly, as the MoE blocks do, has no kernel order). */
static bool seq_whole(const struct acc *a)
{
    double sum[LP_OPC_COUNT] = {0};
    for (int i = 0; i < a->nseg; i++)
        sum[a->seg[i].k] += a->seg[i].t;
    for (int k = 0; k < LP_OPC_OVERHEAD; k++)
        if (!(fabs(sum[k] - a->cat[k]) <= 1e-9 * a->cat[k] + 1e-18)) return false;
    return !a->lost;
}

/* One direction of a block in kernel order into s (n so far): its exposed
 * host time, then its runs (forward: in order, the residual tail last;
 * backward: reversed), the exposed collectives at the output marker (or
 * after the body). In class order when the runs do not hold the block. */
static void order_block(struct lp_op_seg *s, int *n, const struct acc *a, bool fwd, double host,
                        double host_w, double comm)
{
    order_put(s, n, LP_OPC_OVERHEAD, false, host - host_w);
    order_put(s, n, LP_OPC_OVERHEAD, true, host_w);
    if (!seq_whole(a)) {
        for (int k = 0; k < LP_OPC_OVERHEAD; k++)
            order_put(s, n, (enum lp_op_class)k, false, a->cat[k]);
        order_put(s, n, LP_OPC_COMM, false, comm);
        return;
    }
    bool marker = false, placed = false;
    for (int j = 0; j < a->nseg; j++)
        marker |= a->seg[j].k == LP_OPC_COMM;
    for (int pass = 0; pass < 2; pass++) { /* forward: body, tail; backward: tail, body */
        const bool tail = fwd == (pass == 1);
        /* without a marker the collectives end the body (begin it reversed) */
        if (!marker && !tail && !fwd) order_put(s, n, LP_OPC_COMM, false, comm);
        for (int j = 0; j < a->nseg; j++) {
            int i = fwd ? j : a->nseg - 1 - j;
            /* reversed, a linear's weight gradient still follows its data
             * gradient (autograd's Linear backward: grad_input first) */
            if (!fwd && i > 0 && a->seg[i].w && a->seg[i].k == LP_OPC_GEMM && !a->seg[i - 1].w &&
                a->seg[i - 1].k == LP_OPC_GEMM)
                i--;
            else if (!fwd && i + 1 < a->nseg && !a->seg[i].w && a->seg[i].k == LP_OPC_GEMM &&
                     a->seg[i + 1].w && a->seg[i + 1].k == LP_OPC_GEMM)
                i++;
            const struct acc_seg *g = &a->seg[i];
            if ((g->tail != 0) != tail) continue;
            if (g->k != LP_OPC_COMM)
                order_put(s, n, (enum lp_op_class)g->k, g->w != 0, g->t);
            else if (!placed) /* the first marker */
                order_put(s, n, LP_OPC_COMM, false, comm);
            placed |= g->k == LP_OPC_COMM;
        }
        if (!marker && !tail && fwd) order_put(s, n, LP_OPC_COMM, false, comm);
    }
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
    const double w_host =
        b->n + ncoll > 0 ? host_exposed(w, b, ncoll) * b->wn / (b->n + ncoll) : 0.0;
    c->wgrad_s += b->wg + w_host;
    c->op_w[LP_OPC_GEMM] += b->wg;
    c->op_w[LP_OPC_OVERHEAD] += w_host;
    if (w->order) { /* the forward after the blocks before; the backward before them */
        struct lp_op_order *o = w->order;
        order_block(o->fwd, &o->n_fwd, f, true, host_exposed(w, f, ncoll), 0.0, comm_f);
        struct lp_op_seg bw[LP_OP_ORDER_MAX];
        int nb = 0;
        order_block(bw, &nb, b, false, host_exposed(w, b, ncoll), w_host, comm_b);
        const int keep = o->n_bwd + nb > LP_OP_ORDER_MAX ? LP_OP_ORDER_MAX - nb : o->n_bwd;
        memmove(o->bwd + nb, o->bwd, (size_t)keep * sizeof(o->bwd[0]));
        memcpy(o->bwd, bw, (size_t)nb * sizeof(bw[0]));
        o->n_bwd = keep + nb;
    }
}

/* Compute time of a sequence including its kernels' overhead; `ncoll`
 * collectives launched in between carry the same overhead. */
static double with_overhead(const struct wl *w, const struct acc *a, int ncoll)
{
    return a->s + host_exposed(w, a, ncoll);
}

/* Selective recomputation (Megatron-Core recompute_modules): the forward
 * kernels a block added to `f` since the snapshot `before` are redone in
 * the backward; `rc` collects them. */
static void redo_since(struct acc *rc, const struct acc *f, const struct acc *before)
{
    rc->s += f->s - before->s;
    rc->n += f->n - before->n;
    rc->sync += f->sync - before->sync;
    for (int k = 0; k < LP_OPC_COUNT; k++)
        rc->cat[k] += f->cat[k] - before->cat[k];
}

/* Power-limited clocks. A profile holds kernel times measured (or modelled)
 * in short bursts; over a training run a GPU busy with tensor-core work
 * hits its power limit and lowers its clock, so GEMMs and attention run at
 * a fraction f_min of the burst rate (lp_run_sustained: fitted,
 * docs/calibration.md). A GPU that idles between kernels, waiting for the
 * host, stays below the limit: the fraction applied is
 *     f = 1 - (1 - f_min) * duty,   duty = kernel time / (kernel + host time)
 * over the sequence `a` (memory-bound kernels and collectives are not
 * scaled: HBM and NVLink clocks do not follow the SM clock). */
static void throttle(const struct wl *w, struct acc *a, int ncoll)
{
    const double comp = a->cat[LP_OPC_GEMM] + a->cat[LP_OPC_ATTN];
    if (!(comp > 0) || !(a->s > 0)) return;
    const double host = host_launches(a, ncoll) * w->run->fw.host_op_s;
    const double duty = a->s / (a->s + host);
    const double k = 1.0 / (1.0 - (1.0 - lp_run_sustained(w->run)) * duty);
    a->s += comp * (k - 1.0);
    a->cat[LP_OPC_GEMM] *= k;
    a->cat[LP_OPC_ATTN] *= k;
    a->wg *= k;
    a->col_dgrad *= k;
    a->col_wgrad *= k;
    for (int i = 0; i < a->nub; i++)
        a->ub[i].g *= k;
    for (int i = 0; i < a->nseg; i++)
        if (a->seg[i].k == LP_OPC_GEMM || a->seg[i].k == LP_OPC_ATTN) a->seg[i].t *= k;
}

/* Close a block: throttle its compute, hide its TP collectives behind its
 * GEMMs when the framework overlaps them (`may_overlap`), add host time, and fold
 * it into the layer cost. Leaves the exposed collectives in f->comm and
 * b->comm; returns the forward's time. */
static double finish_block(const struct wl *w, struct lp_layer_cost *c, struct acc *f,
                           struct acc *b, double comm_f, double comm_b, int ncoll,
                           bool may_overlap);
static double tp_comm(const struct wl *w, bool quant);
static double tp_bwd_exposed(const struct wl *w, const struct acc *b);
static double tp_ag_elem(const struct wl *w, bool quant);
static double ub_exposed(const struct acc *a);
static double coll(const struct wl *w, enum lp_coll op, double bytes, int n, int stride);
static double p2p(const struct wl *w, double bytes, int n, int stride);

/* Close a block as finish_block does, with `rc` the forward kernels its
 * selective recomputation redoes (each launched again, throttled like the
 * rest), and record what a full recomputation of the block would redo:
 * its whole forward, collectives included. */
static void close_block(const struct wl *w, struct lp_layer_cost *c, struct acc *f, struct acc *b,
                        struct acc *rc, double comm_f, double comm_b, int ncoll, bool may_overlap)
{
    const double fwd = finish_block(w, c, f, b, comm_f, comm_b, ncoll, may_overlap);
    c->full_s += fwd;
    c->comm_full_s += f->comm;
    if (rc && rc->n > 0) { /* in the backward: the host runs ahead */
        rc->lockstep = false;
        throttle(w, rc, 0);
        c->recompute_s += with_overhead(w, rc, 0) + rc->sync;
    }
}

/* n host synchronisations in a block's forward (a tensor's size or value
 * read on the host: nonzero, .item(), .tolist(), a blocking copy): the host
 * waits for the GPU to drain, then the GPU waits for the host's next
 * launch, so each costs one op's host time that no GPU work hides. Its
 * kernels are counted with the block; the recomputed forward (full_s)
 * synchronises again. */
static void host_syncs(const struct wl *w, struct lp_layer_cost *c, double n)
{
    const double t = n * w->run->fw.host_op_s;
    c->fwd_s += t;
    c->op_fwd[LP_OPC_OVERHEAD] += t;
    c->full_s += t;
}

static double finish_block(const struct wl *w, struct lp_layer_cost *c, struct acc *f,
                           struct acc *b, double comm_f, double comm_b, int ncoll, bool may_overlap)
{
    throttle(w, f, ncoll);
    throttle(w, b, ncoll);
    f->lockstep = w->lockstep;
    if (may_overlap && (f->nub > 0 || b->nub > 0)) {
        /* the block's TP linears ran their collectives in userbuffers
         * beside their GEMMs: what each GEMM leaves exposed replaces the
         * part of tp_comm(w, true) those collectives are (ub_cover; all of it
         * for a column / row-parallel pair) */
        comm_f += ub_exposed(f) - f->ub_cover;
        comm_b += ub_exposed(b) - b->ub_cover;
    } else if (may_overlap && b->col_n == 1) {
        /* the block's linear pair charged tp_comm(w, true) in the backward:
         * what its backward really leaves exposed replaces it */
        comm_b += tp_bwd_exposed(w, b) - tp_comm(w, true);
    }
    comm_f += f->sync;
    comm_b += b->sync;
    c->ub_dropped += f->ub_over + b->ub_over;
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

/* Bytes of a quantised copy per element: fp8 1 byte; MXFP8 + an E8M0
 * scale per 32; NVFP4 half a byte + an E4M3 scale per 16 (OCP MX spec;
 * NVIDIA NVFP4); 0 for a precision that is not quantised. */
static double quant_bytes(enum lp_prec p)
{
    return p == LP_FP8     ? 1.0
           : p == LP_MXFP8 ? 1.0 + 1.0 / 32.0
           : p == LP_NVFP4 ? 0.5 + 1.0 / 16.0
                           : 0.0;
}

/* The workload as module q runs it: its GEMMs, quantisation kernels and
 * quantised TP gathers in the precision training.module_precision gives it
 * (lp_train_module_prec: the run's when none, or when the run is not
 * quantised). Transformer Engine opens the module's own autocast
 * (Megatron-LM d98e8a6 extensions/transformer_engine.py
 * _get_fp8_autocast_for_quant_recipe: fp8_autocast(enabled=False) for a
 * config without a recipe, i.e. bf16). */
static struct wl module_wl(const struct wl *w, enum lp_qmod q)
{
    struct wl v = *w;
    v.prec = lp_train_module_prec(&w->run->train, q);
    v.q = quant_bytes(v.prec);
    return v;
}

static double gemm(const struct wl *w, enum lp_gemm_layout l, double m, double n, double k)
{
    return w->cm->ops->gemm_s(w->cm, l, w->prec, m, n, k);
}

static double mem(const struct wl *w, enum lp_mem_kind k, double bytes);

static void quantize(const struct wl *w, double M, double N, double K, struct acc *fwd,
                     struct acc *bwd);
static int ds_grad_accum(const struct wl *w, double n, double t[2], bool *eager);

/* The weight gradient of a trained (M x K) x (K x N) linear: its GEMM, and
 * where the framework adds it into the accumulated gradient in a kernel of
 * its own, that (ds_grad_accum). Returns the GEMM's time. */
static double weight_grad(const struct wl *w, double M, double N, double K, struct acc *bwd)
{
    const double g = gemm(w, LP_GEMM_WGRAD, K, N, M);
    addw(bwd, g);
    double acc_s[2];
    bool eager;
    const int nacc = ds_grad_accum(w, K * N, acc_s, &eager);
    for (int i = 0; i < nacc; i++)
        (eager ? addk : add_native)(bwd, LP_OPC_MEM, acc_s[i]);
    return g;
}

/* A linear layer that may carry a LoRA adapter (`adapter`; without
 * fine-tuning every weight trains). */
static void linear_lora(const struct wl *w, double M, double N, double K, struct acc *fwd,
                        struct acc *bwd, bool adapter)
{
    if (w->q > 0) quantize(w, M, N, K, fwd, bwd);
    addk(fwd, LP_OPC_GEMM, gemm(w, LP_GEMM_FWD, M, N, K));
    addk(bwd, LP_OPC_GEMM, gemm(w, LP_GEMM_DGRAD, M, K, N));
    int r = w->run->train.lora_rank;
    if (r <= 0) {
        weight_grad(w, M, N, K, bwd);
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

enum tp_linear { TP_COLUMN, TP_ROW };

/* Whether the run's fp8 GEMMs scale each tensor by its own amax
 * (Transformer Engine's Float8CurrentScaling recipe). */
static bool fp8_current(const struct wl *w)
{
    return w->prec == LP_FP8 && w->run->train.fp8_scaling == LP_FP8_CURRENT;
}

/* Whether the quantiser finds a tensor's amax in a pass of its own before
 * the cast: fp8 current scaling, and NVFP4, whose second-level scale is one
 * fp32 per tensor from the tensor's amax (TransformerEngine d0067d0d
 * pytorch/csrc/quantizer.cpp NVFP4Quantizer::quantize_impl:
 * nvte_compute_amax_with_config, or with the recipe's random Hadamard
 * transform nvte_hadamard_transform_amax, one read giving the row-wise
 * amax and the column-wise one after the transform; the cast then turns
 * the amax into the scale itself, no scale kernel). */
static bool tensor_amax(const struct wl *w)
{
    return fp8_current(w) || w->prec == LP_NVFP4;
}

/* Quantisation of a low-precision GEMM's activation inputs (Transformer
 * Engine): forward casts X (M x K), backward casts dY (M x N), each into the
 * row-wise copy the GEMM reads and the column-wise (transposed) copy the
 * other gradient GEMM reads, in one kernel: read e, write 2q bytes per
 * element. Delayed scaling fuses the amax into the cast; block-scaled
 * formats find their block amax inside the cast. Current scaling runs, per
 * tensor, Float8CurrentScalingQuantizer::quantize_impl (TransformerEngine
 * v2.7 fedd9ddc7, pytorch/csrc/quantizer.cpp): nvte_compute_amax (one more
 * read of the tensor), the TP amax all-reduce where the tensor is gathered
 * (amax_sync), nvte_compute_scale_from_amax (one thread block turning the
 * amax into the scale and its inverse: a launch, 12 bytes), then the
 * cast; NVFP4 the amax pass, its all-reduce and the cast (tensor_amax).
 * Weights are cast once per iteration (TE caches them across
 * micro-batches): not counted. */
static void quantize(const struct wl *w, double M, double N, double K, struct acc *fwd,
                     struct acc *bwd)
{
    const double x[2] = {M * K, M * N};
    struct acc *a[2] = {fwd, bwd};
    const bool amax = tensor_amax(w), scale = fp8_current(w);
    for (int i = 0; i < 2; i++) {
        /* launched inside the cast's own call: no op of their own */
        if (amax) add_native(a[i], LP_OPC_MEM, mem(w, LP_MEM_COPY, x[i] * w->e));
        if (scale)
            add_native(a[i], LP_OPC_MEM, mem(w, LP_MEM_COPY, 12.0)); /* amax in, scales out */
        addk(a[i], LP_OPC_MEM, mem(w, LP_MEM_COPY, x[i] * (w->e + 2.0 * w->q)));
    }
}

/* fp8 current scaling under sequence parallelism: a tensor that is
 * all-gathered across the TP group before its GEMM must carry one scale on
 * every rank, so its quantiser all-reduces the amax (MAX, one fp32) over
 * the TP group: the column-parallel linear's input in the forward and the
 * row-parallel linear's output gradient in the backward (TransformerEngine
 * v2.7 fedd9ddc7 pytorch/module/linear.py, layernorm_linear.py,
 * layernorm_mlp.py `_customize_quantizers_float8_current_scaling`:
 * with_amax_reduction on tp_group when sequence_parallel; still so at
 * d0067d0d, _common.py set_quantizer_amax_reduction_group). quantize_impl
 * waits for it on the compute stream (`allreduce(...)->wait()`) between
 * the amax and the cast, so no GPU work of the block hides it. NVFP4's
 * quantiser does the same (NVFP4Quantizer::quantize_impl reduce_amaxes,
 * with_amax_reduction set by the same set_quantizer_amax_reduction_group):
 * the row-wise and column-wise amaxes in one allreduce_coalesced, 8 bytes. */
static void amax_sync(const struct wl *w, enum tp_linear role, struct acc *fwd, struct acc *bwd)
{
    if (!tensor_amax(w) || w->t <= 1 || !w->run->par.sequence_parallel) return;
    struct acc *a = role == TP_COLUMN ? fwd : bwd;
    a->sync += coll(w, LP_COLL_ALLREDUCE, w->prec == LP_NVFP4 ? 8.0 : 4.0, w->t, 1);
}

/* Transformer Engine's userbuffers overlap of the TP linears (Megatron
 * tp_comm_overlap, which needs sequence parallelism), as TransformerEngine
 * d0067d0d runs it with its default methods (pytorch/module/base.py
 * initialize_ub, get_default_config; Megatron-LM d98e8a6
 * model_parallel_config.py leaves tp_comm_bulk_dgrad / _bulk_wgrad /
 * _overlap_ag / _overlap_rs / _split_ag / _split_rs on):
 *  - ring exchange (qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad: the
 *    all-gathered input of the column-parallel forwards and of the
 *    row-parallel data gradients): num_splits = t chunks of M/t rows, each
 *    beside a copy-engine send of the next rank's shard (num_sm 1, no SM
 *    margin);
 *  - pipeline (proj_fprop, fc2_fprop: the row-parallel forwards'
 *    reduce-scatter): UB_SPLITS chunks of M/UB_SPLITS rows, each
 *    reduce-scattered behind it, the GEMM on the SMs the reduce-scatter
 *    leaves (num_sm UB_SMS, set_sm_margin: _math_sms = SMs - num_sm,
 *    common/comm_gemm_overlap/comm_gemm_overlap.cpp CommOverlapCore::
 *    initialize). Framework option tp_overlap_rs "ring_exchange" (the
 *    Megatron-Bridge fp8 recipes' ub_cfgs) runs them as a ring instead: t
 *    chunks of M/t input rows, each partial output sent to its rank;
 *  - bulk (qkv_dgrad, qkv_wgrad, fc1_dgrad, fc1_wgrad: the column-parallel
 *    backward): the whole GEMM beside the all-gather of the saved input
 *    (dgrad) or the reduce-scatter of the input gradient (wgrad). TE's
 *    default set_sm_margin would slow the GEMM by its num_sm 16 too; the
 *    Megatron-Bridge configs turn it off: not modelled;
 *  - the row-parallel weight gradients reuse the gathered output gradient
 *    (bf16, fp8 delayed / current scaling: no collective; the "external"
 *    all-gather is MXFP8's, pytorch/module/linear.py, not modelled).
 * What each leaves exposed: ub_exposed. */
#define UB_SPLITS 4.0
#define UB_SMS 16.0

static void ub_push(struct acc *a, enum ub_kind kind, double g, double c, double n)
{
    if (a->nub < UB_MAX)
        a->ub[a->nub++] = (struct ub_overlap){kind, g, c, (int)n};
    else
        a->ub_over++;
}

/* The time a pass's userbuffers overlaps add to its GEMMs' (GEMM chunk g,
 * collective chunk c, n chunks), as comm_gemm_overlap.cpp (TE d0067d0d)
 * orders its streams:
 *  - ring all-gather (CommOverlapP2PBase::split_overlap_ag, aggregate
 *    off): step 0 multiplies the local shard while the send / recv of step
 *    i starts as soon as step i-1's ends (the send stream waits only for
 *    the last recv), and step i+1's GEMM waits for step i's recv; the last
 *    step sends nothing. GEMM i+1 so starts at max(GEMM i's end, (i+1) c):
 *    exposed max_i i (c - g) = (n - 1) max(0, c - g), nothing when each
 *    transfer is shorter than a GEMM chunk;
 *  - ring reduce-scatter (CommOverlapP2PBase::split_overlap_rs): chunk j's
 *    send waits for GEMM chunk j, the receives queue on one stream, and the
 *    last chunk (the rank's own) sends nothing: the last receive ends at
 *    max_j ((j + 1) g + (n - 1 - j) c), exposed the same (n - 1)
 *    max(0, c - g);
 *  - pipeline (CommOverlapBase::split_overlap_rs, rs_overlap_first_gemm
 *    off): chunk i's reduce-scatter waits for GEMM chunk i and for chunk
 *    i-1's on the one comm stream, so a two-stage flow: the chunks end at
 *    g + c + (n - 1) max(g, c), exposed c + (n - 1) max(0, c - g), at
 *    least the last chunk's reduce-scatter;
 *  - bulk (CommOverlapBase::bulk_overlap): the collective and the whole
 *    GEMM start together and the main stream waits for both: exposed
 *    max(0, c - g). */
static double ub_exposed(const struct acc *a)
{
    double t = 0.0;
    for (int i = 0; i < a->nub; i++) {
        const struct ub_overlap *u = &a->ub[i];
        const double late = fmax(0.0, u->c - u->g);
        if (u->kind == UB_RING)
            t += (u->n - 1) * late;
        else if (u->kind == UB_PIPELINE)
            t += u->c + (u->n - 1) * late;
        else
            t += late;
    }
    return t;
}

/* A TP linear of role `role` (no adapter): as linear_lora, its forward
 * and backward GEMMs split and overlapped the userbuffers way (above) when
 * TP overlap runs, each overlap recorded for ub_exposed. The collectives
 * carry the activation (M x K in, M x N out). */
static void linear_tp(const struct wl *w, enum tp_linear role, double M, double N, double K,
                      struct acc *fwd, struct acc *bwd)
{
    const struct lp_run *r = w->run;
    amax_sync(w, role, fwd, bwd);
    if (!(r->fw.tp_overlap && r->par.sequence_parallel && w->t > 1) || r->train.lora_rank > 0) {
        linear_lora(w, M, N, K, fwd, bwd, r->train.lora_targets == LP_LORA_ALL);
        if (role == TP_COLUMN && w->t > 1 && r->train.lora_rank <= 0) {
            bwd->col_dgrad += gemm(w, LP_GEMM_DGRAD, M, K, N);
            bwd->col_wgrad += gemm(w, LP_GEMM_WGRAD, K, N, M);
            bwd->col_n++;
        }
        if (role == TP_ROW && w->t > 1) { /* its output collective (timeline) */
            seg_push(fwd, LP_OPC_COMM, 0.0, false);
            seg_push(bwd, LP_OPC_COMM, 0.0, false);
        }
        return;
    }
    if (w->q > 0) quantize(w, M, N, K, fwd, bwd);
    const double sms = r->system.gpu.sms > UB_SMS ? r->system.gpu.sms : 0.0;
    const double margin = sms > 0 ? sms / (sms - UB_SMS) : 1.0;
    const double t = w->t;
    /* under fp8 the all-gathered tensors travel quantised: initialize_ub
     * gives every all-gather buffer (layers_all_gather_overlap) fp8_buf,
     * whatever ub_cfgs say, so a uint8 buffer (UserBufferQuantizationMode
     * FP8); the reduce-scatters stay in bf16 */
    const double qe = tp_ag_elem(w, true);
    if (role == TP_COLUMN) {
        const double g = gemm(w, LP_GEMM_FWD, M / t, N, K);
        addk(fwd, LP_OPC_GEMM, t * g);
        ub_push(fwd, UB_RING, g, p2p(w, M * K * qe / t, w->t, 1), t);
        const double dgrad = gemm(w, LP_GEMM_DGRAD, M, K, N);
        addk(bwd, LP_OPC_GEMM, dgrad);
        ub_push(bwd, UB_BULK, dgrad, coll(w, LP_COLL_ALLGATHER, M * K * qe, w->t, 1), 1);
        const double wgrad = weight_grad(w, M, N, K, bwd);
        ub_push(bwd, UB_BULK, wgrad, coll(w, LP_COLL_REDUCESCATTER, M * K * w->e, w->t, 1), 1);
        /* tp_comm's share for this linear: its input's all-gather forward
         * (quantised, tp_ag_elem), its input gradient's reduce-scatter
         * backward (the saved input's
         * second all-gather is the one tp_comm does not charge:
         * tp_bwd_exposed) */
        fwd->ub_cover += coll(w, LP_COLL_ALLGATHER, M * K * qe, w->t, 1);
        bwd->ub_cover += coll(w, LP_COLL_REDUCESCATTER, M * K * w->e, w->t, 1);
        return;
    }
    const double out = M * N * w->e; /* the reduce-scattered output */
    if (r->fw.tp_overlap_rs == LP_UB_RS_RING) {
        /* t GEMM chunks of M/t input rows, each partial output sent to
         * its rank, then one kernel on the main stream sums the t partial
         * chunks each rank received (reduce_bf16: read t, write one) */
        const double g = gemm(w, LP_GEMM_FWD, M / t, N, K);
        addk(fwd, LP_OPC_GEMM, t * g);
        ub_push(fwd, UB_RING, g, p2p(w, out / t, w->t, 1), t);
        add_native(fwd, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, (t + 1.0) * out / t));
    } else {
        const double g = margin * gemm(w, LP_GEMM_FWD, M / UB_SPLITS, N, K);
        addk(fwd, LP_OPC_GEMM, UB_SPLITS * g);
        ub_push(fwd, UB_PIPELINE, g, coll(w, LP_COLL_REDUCESCATTER, out / UB_SPLITS, w->t, 1),
                UB_SPLITS);
    }
    const double gd = gemm(w, LP_GEMM_DGRAD, M / t, K, N);
    addk(bwd, LP_OPC_GEMM, t * gd);
    ub_push(bwd, UB_RING, gd, p2p(w, M * N * qe / t, w->t, 1), t);
    weight_grad(w, M, N, K, bwd);
    /* tp_comm's share: the output's reduce-scatter forward, the output
     * gradient's all-gather backward (quantised, as tp_comm charges it) */
    fwd->ub_cover += coll(w, LP_COLL_REDUCESCATTER, out, w->t, 1);
    bwd->ub_cover += coll(w, LP_COLL_ALLGATHER, M * N * qe, w->t, 1);
    seg_push(fwd, LP_OPC_COMM, 0.0, false);
    seg_push(bwd, LP_OPC_COMM, 0.0, false);
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

/* DeepSpeed's gradient accumulation across micro-batches, per weight of n
 * elements (framework megatron-deepspeed, ZeRO 0-1: the gradients live in
 * param.grad until the step; ZeRO 2-3 move them into reduction buckets in
 * their hooks instead). The weight-gradient GEMM writes a new tensor and
 * the engine folds it into the accumulated gradient, a pass over every
 * parameter per micro-batch that Megatron-LM fuses into the GEMM
 * (gradient_accumulation_fusion into main_grad). By precision, as the code
 * of the runs does it:
 *  - bf16: BF16_Optimizer.update_hp_grads (DeepSpeed 56c522386, 2022-04,
 *    "bf16+pipeline parallelism", runtime/bf16_optimizer.py; called after
 *    every micro-batch's backward by pipe/engine.py _exec_backward_pass and,
 *    on the last stage, by BF16_Optimizer.backward): hp_grad.add_(lp.grad
 *    .to(float32)): a cast (read 2, write 4 bytes) and an fp32 add (read
 *    4 + 4, write 4), two kernels, every micro-batch (clear_lp_grads sets
 *    the bf16 gradients to None first, so autograd itself adds nothing);
 *  - fp16 / fp32: FP16_Optimizer (runtime/fp16/fused_optimizer.py, the
 *    only 16-bit path before bf16 came, 648f7bfa5 2021-11) keeps the
 *    gradients in param.grad, so autograd's AccumulateGrad
 *    (torch/csrc/autograd/functions/accumulate_grad.h: variable_grad +=
 *    new_grad) adds each micro-batch's gradient in place: read 2 x e, write
 *    e, one kernel; after zero_grad(set_grads_to_None=True) the first
 *    micro-batch's gradient is stolen, not added, so (m - 1) / m of it.
 * Fills t[] with the kernels' GPU seconds and returns their count (0 for
 * other frameworks); *eager says whether they are Python ops (bf16: each
 * costs the framework's host time per kernel) or launched by autograd's
 * C++ engine (AccumulateGrad: no Python dispatch, add_native). */
double lp_sim_grad_accum_share(const struct lp_run *r)
{
    if (r->fw.kind != LP_FW_MEGATRON_DEEPSPEED || r->par.zero > 1 || r->train.lora_rank > 0)
        return 0.0;
    if (r->train.precision == LP_BF16) return 1.0;
    const int64_t m = lp_sim_micro_batches(r);
    return m > 1 ? (double)(m - 1) / (double)m : 0.0;
}

static int ds_grad_accum(const struct wl *w, double n, double t[2], bool *eager)
{
    const struct lp_run *r = w->run;
    const double share = lp_sim_grad_accum_share(r);
    *eager = false;
    if (!(share > 0)) return 0;
    if (r->train.precision == LP_BF16) {
        *eager = true;
        t[0] = mem(w, LP_MEM_COPY, n * (2.0 + 4.0));
        t[1] = mem(w, LP_MEM_RESIDUAL, n * 12.0);
        return 2;
    }
    const double e = r->train.precision == LP_FP32 ? 4.0 : 2.0;
    t[0] = share * mem(w, LP_MEM_RESIDUAL, n * 3.0 * e);
    return 1;
}

/* A collective of Megatron's groups of one kind (TP, CP, EP) in this run's
 * job: its size places them (sim_comm.c lp_groups_slowest) */
static double coll(const struct wl *w, enum lp_coll op, double bytes, int n, int stride)
{
    return lp_coll_time(w->cm, &w->run->system, op, bytes, n, stride, lp_sim_world(&w->run->par));
}

/* One send/recv step between neighbours of those groups (a userbuffers or
 * CP ring) */
static double p2p(const struct wl *w, double bytes, int n, int stride)
{
    return lp_p2p_time(w->cm, &w->run->system, bytes, n, stride, lp_sim_world(&w->run->par));
}

/* Bytes per element of a TP all-gather under sequence parallelism. A
 * Transformer Engine linear pair (`quant`: linear_tp, and Megatron's Mamba
 * mixer's in_proj / out_proj) gathers its quantised input whether or not
 * userbuffers run it: TransformerEngine d0067d0d pytorch/module/linear.py,
 * layernorm_linear.py and layernorm_mlp.py pass the input quantizer to
 * gather_along_first_dim for the column-parallel forward's input and for
 * the backward's re-gather of the saved input shard, and base.py
 * grad_output_preprocess passes the grad-output quantizer when it gathers
 * the row-parallel linear's output gradient; pytorch/distributed.py
 * gather_along_first_dim then all-gathers the fp8 data (_all_gather_fp8,
 * delayed and current scaling), MXFP8 (_all_gather_mxfp8) or NVFP4
 * (_all_gather_nvfp4) quantised. The reduce-scatters (and the all-reduces
 * without SP) carry the high-precision output: w->e. */
static double tp_ag_elem(const struct wl *w, bool quant)
{
    return quant && w->q > 0 ? w->q : w->e;
}

/* TP communication of one linear pair (column-parallel in, row-parallel out)
 * in one direction: two all-reduces without SP; with SP an all-gather before
 * and a reduce-scatter after (same volume, Korthikanti et al. 2022 Sec 4.2.2),
 * the all-gather quantised for a Transformer Engine pair (tp_ag_elem). */
static double tp_comm(const struct wl *w, bool quant)
{
    const double x = w->T * w->h;
    if (w->t <= 1) return 0.0;
    if (w->run->par.sequence_parallel)
        return coll(w, LP_COLL_ALLGATHER, x * tp_ag_elem(w, quant), w->t, 1) +
               coll(w, LP_COLL_REDUCESCATTER, x * w->e, w->t, 1);
    return coll(w, LP_COLL_ALLREDUCE, x * w->e, w->t, 1);
}

/* The TP collectives a linear pair's backward leaves exposed, `b` holding
 * the column-parallel linear's data- and weight-gradient GEMMs (throttled).
 * Megatron's LinearWithGradAccumulationAndAsyncCommunication.backward
 * (megatron/core/tensor_parallel/layers.py; Transformer Engine's Linear
 * does the same) launches its collectives with async_op=True ahead of a
 * GEMM, CUDA_DEVICE_MAX_CONNECTIONS=1 keeping them in order:
 * - with SP, the all-gather of the saved input shard (the full input is not
 *   kept) beside the data-gradient GEMM, then the reduce-scatter of the
 *   input gradient beside the weight-gradient GEMM; the row-parallel
 *   linear's output gradient is all-gathered synchronously
 *   (_ReduceScatterToSequenceParallelRegion.backward);
 * - without SP, the input gradient's all-reduce beside the weight-gradient
 *   GEMM when the framework sets tp_async_dgrad (Megatron-DeepSpeed turns it
 *   off under DeepSpeed, megatron/arguments.py), else synchronously.
 * The GEMMs beside a collective are not slowed (NCCL's SMs: not modelled). */
static double tp_bwd_exposed(const struct wl *w, const struct acc *b)
{
    const double x = w->T * w->h, bytes = x * w->e;
    if (w->t <= 1) return 0.0;
    if (w->run->par.sequence_parallel) {
        /* the output gradient's gather and the saved input's re-gather,
         * both quantised (tp_ag_elem); the input gradient in bf16 */
        const double ag = coll(w, LP_COLL_ALLGATHER, x * tp_ag_elem(w, true), w->t, 1);
        const double rs = coll(w, LP_COLL_REDUCESCATTER, bytes, w->t, 1);
        return ag + fmax(0.0, ag - b->col_dgrad) + fmax(0.0, rs - b->col_wgrad);
    }
    const double ar = coll(w, LP_COLL_ALLREDUCE, bytes, w->t, 1);
    return w->run->fw.tp_async_dgrad ? fmax(0.0, ar - b->col_wgrad) : ar;
}

/* RMSNorm in eager PyTorch over x elements (Transformers MixtralRMSNorm /
 * LlamaRMSNorm.forward): x.to(float32), pow(2), mean(-1), + eps and rsqrt
 * (per row), x * rsqrt, .to(input dtype), weight * x: five kernels over
 * the elements (and two per row); autograd runs the gradient of each,
 * eight over the elements (the weight's gradient: a multiply and a sum). */
static void eager_rmsnorm(const struct wl *w, double x, double width, struct acc *fwd,
                          struct acc *bwd)
{
    const double e = w->e, rows = x / width;
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
static void block_norm(const struct wl *w, struct acc *fwd, struct acc *bwd)
{
    double x = w->Tn * w->h;
    if (!w->run->fw.fused_kernels && w->norm == LP_MEM_RMSNORM) {
        eager_rmsnorm(w, x, w->h, fwd, bwd);
    } else {
        addk(fwd, LP_OPC_MEM, mem(w, w->norm, 2.0 * x * w->e));
        addk(bwd, LP_OPC_MEM, mem(w, w->norm, 3.0 * x * w->e));
    }
}

static void elementwise(const struct wl *w, struct acc *fwd, struct acc *bwd)
{
    double x = w->Tn * w->h;
    bool fused = w->run->fw.fused_kernels;
    block_norm(w, fwd, bwd);
    fwd->tail = bwd->tail = true; /* the residual after the sub-block */
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
    fwd->tail = bwd->tail = false;
}

/* Which attention kernel runs, and the one-pass core attention time of bh
 * heads over s queries (and keys) of head dim d; a sliding window of
 * `window` keys does the work of its band: FlashAttention-2's local
 * attention skips the key blocks outside it, so the work falls from the
 * causal s^2 / 2 to s W' - W'^2 / 2 with W' the window widened by one
 * 128-key block (the band's partial blocks). */
static enum lp_attn_impl attn_impl(const struct lp_run *r)
{
    static const enum lp_attn_impl fused_impl[LP_ATTENTION_COUNT] = {
        [LP_ATTENTION_FLASH2] = LP_ATTN_FUSED,
        [LP_ATTENTION_FLASH1] = LP_ATTN_FLASH1,
        [LP_ATTENTION_TRITON] = LP_ATTN_TRITON,
        [LP_ATTENTION_CUDNN] = LP_ATTN_CUDNN};
    if (!r->train.flash_attention)
        return r->fw.fused_softmax ? LP_ATTN_UNFUSED_FS : LP_ATTN_UNFUSED;
    return (unsigned)r->train.attention < LP_ATTENTION_COUNT ? fused_impl[r->train.attention]
                                                             : LP_ATTN_FUSED;
}

static double window_frac(double s, double window)
{
    const double wb = window + 128.0;
    if (!(window > 0) || wb >= s) return 1.0;
    return (2.0 * s * wb - wb * wb) / (s * s);
}

/* Whether Megatron's FusedScaleMaskSoftmax runs its fused kernel
 * (is_kernel_available: Megatron-LM fda81a212b and Megatron-DeepSpeed's
 * megatron/model/fused_softmax.py, Megatron-Core's fusions/fused_softmax.py
 * at d98e8a6): a 16-bit input, 16 < sk <= 2048 (4096 in Megatron-Core and
 * today's Megatron-DeepSpeed, 9e72d571), sq and sk multiples of 4, and the
 * attention batches b x np (micro-batch x heads per TP rank) a multiple of
 * 4 and of the kernel's batches per block (get_batch_per_block: 128 threads
 * of warps that take 2 rows each up to 128 keys, else 1: 8 or 4). Else it
 * runs the eager path (softmax_fallback). sim_internal.h. */
bool lp_megatron_softmax_fused(const struct lp_run *r, double attn_batches, double s)
{
    if (r->train.precision == LP_FP32) return false;
    const double skmax = r->fw.kind == LP_FW_MEGATRON ? 4096.0 : 2048.0;
    const double per_block = s <= 128.0 ? 8.0 : 4.0;
    const long sk = (long)s;
    return s > 16.0 && s <= skmax && sk % 4 == 0 && fmod(attn_batches, per_block) == 0.0;
}

/* FusedScaleMaskSoftmax.forward_torch_softmax, its fallback: with
 * apply_query_key_layer_scaling (on by default in these stacks, which turns
 * softmax_in_fp32 on) the scores are cast to fp32, scaled by the layer
 * number, masked in place (masked_fill_ with the bool causal mask), put
 * through torch's softmax and cast back: five kernels over the x scores
 * each way (forward 2+4, 4+4, 4+4+1, 4+4, 4+2 bytes; backward the casts'
 * gradients 2+4 and 4+2, the softmax's 4+4+4, masked_fill's 4+4+1 and the
 * scale's 4+4) where the fused kernel is one (the table's: causal, it reads
 * half the row and writes it whole, 1 + 2 bytes forward, 2 + 2 backward). */
static void softmax_fallback(const struct wl *w, double x, double *af, double *ab, int *nf, int *nb)
{
    const double e = w->e;
    const double fwd[5] = {e + 4.0, 8.0, 9.0, 8.0, 4.0 + e};
    const double bwd[5] = {e + 4.0, 12.0, 9.0, 8.0, 4.0 + e};
    for (int i = 0; i < 5; i++) {
        *af += mem(w, LP_MEM_COPY, x * fwd[i]);
        *ab += mem(w, LP_MEM_COPY, x * bwd[i]);
    }
    *af -= mem(w, LP_MEM_COPY, x * (0.5 * e + e));
    *ab -= mem(w, LP_MEM_COPY, x * (e + e));
    *nf += 4;
    *nb += 4;
}

/* Core attention forward and backward of one micro-batch on this rank. */
static void attn_core(const struct wl *w, bool local, double d, double *af, double *ab, int *nf,
                      int *nb)
{
    const struct lp_run *r = w->run;
    const enum lp_attn_impl impl = attn_impl(r);
    double bh = r->par.micro_batch * w->at * r->par.cp;
    double s = (double)r->model.seq_len / r->par.cp;
    /* causal: unfused_fs (Megatron's fused scale-mask-softmax) applies the
     * mask inside its softmax kernel; eager unfused attention adds it */
    const double k = local ? window_frac(r->model.seq_len, r->model.attention_window) : 1.0;
    *af = k * w->cm->ops->attn_s(w->cm, impl, true, LP_PASS_FWD, w->aprec, bh, s, d);
    *ab = k * w->cm->ops->attn_s(w->cm, impl, true, LP_PASS_BWD, w->aprec, bh, s, d);
    /* unfused: QK^T, scale+mask+softmax, dropout, AV forward; their six
     * backward kernels */
    const bool unf = impl == LP_ATTN_UNFUSED || impl == LP_ATTN_UNFUSED_FS;
    *nf = unf ? 4 : 1;
    *nb = unf ? 6 : 1;
    if (impl == LP_ATTN_UNFUSED_FS && !lp_megatron_softmax_fused(r, bh / r->par.cp, s))
        softmax_fallback(w, k * bh * s * s, af, ab, nf, nb);
}

static void add_attn(struct acc *a, double t, int n)
{
    a->s += t;
    a->cat[LP_OPC_ATTN] += t;
    a->n += n;
    seg_push(a, LP_OPC_ATTN, t, false);
}

/* A norm kernel over `width` channels of T tokens (not split). */
static void norm_kernels(const struct wl *w, double T, double width, struct acc *f, struct acc *b)
{
    addk(f, LP_OPC_MEM, mem(w, w->norm, 2.0 * T * width * w->e));
    addk(b, LP_OPC_MEM, mem(w, w->norm, 3.0 * T * width * w->e));
}

/* Multi-head latent attention's projections (DeepSeek-V2 Sec 2.1;
 * Megatron-Core MLASelfAttention): the down projections and their norms are
 * replicated across TP, the up projections column-parallel. As Transformer
 * Engine linears they follow amax_sync's rule: the down projections are
 * TELinear parallel_mode "duplicated" (no TP group: no amax reduction), the
 * up projections (linear_q_up_proj, or linear_q_proj without a query
 * latent, and linear_kv_up_proj) TEColumnParallelLinear with the model's
 * sequence_parallel, each gathering its latent: two forward amax
 * all-reduces where the dense attention's QKV has one (Megatron-LM d98e8a6
 * multi_latent_attention.py MLASelfAttention.__init__;
 * extensions/transformer_engine.py TELinear: te_parallel_mode None when
 * duplicated). */
static void mla_projections(const struct wl *w, struct acc *f, struct acc *b, struct acc *rc)
{
    const struct lp_mla *q = &w->run->model.mla;
    const double T = w->T, h = w->h, dqk = q->qk_nope_head_dim + q->qk_rope_head_dim;
    /* the down projections and their norms run on the rank's own tokens:
     * with sequence parallelism the layer's input is [s / TP, b, h] and a
     * duplicated TELinear does not gather it (_qkv_down_projection: "elif
     * linear_q_down_proj is Linear: q_compressed: [s / TP, b, q_lora_rank]");
     * the up projections gather the normed latents (mla_tp_comm) */
    const double Td = w->Tn;
    /* recompute module "mla_up_proj" (multi_latent_attention.py): the up
     * projections and the rotary embedding, redone from the latents */
    const bool redo = (lp_sim_rc_modules(w->run) & LP_RC_MLA_UP_PROJ) != 0;
    struct acc up;
    if (q->q_lora_rank > 0) {
        linear(w, Td, q->q_lora_rank, h, f, b);
        norm_kernels(w, Td, q->q_lora_rank, f, b);
        up = *f;
        amax_sync(w, TP_COLUMN, f, b);
        linear(w, T, w->at * dqk, q->q_lora_rank, f, b);
        if (redo) redo_since(rc, f, &up);
    } else {
        amax_sync(w, TP_COLUMN, f, b);
        linear(w, T, w->at * dqk, h, f, b);
    }
    linear(w, Td, q->kv_lora_rank + q->qk_rope_head_dim, h, f, b);
    norm_kernels(w, Td, q->kv_lora_rank, f, b);
    up = *f;
    amax_sync(w, TP_COLUMN, f, b);
    linear(w, T, w->at * (q->qk_nope_head_dim + q->v_head_dim), q->kv_lora_rank, f, b);
    /* rotary on the query's and the shared key's rope part */
    double x = T * (w->at + 1.0) * q->qk_rope_head_dim;
    addk(f, LP_OPC_MEM, mem(w, LP_MEM_ROPE, 2.0 * x * w->e));
    addk(b, LP_OPC_MEM, mem(w, LP_MEM_ROPE, 2.0 * x * w->e));
    if (redo) redo_since(rc, f, &up);
}

/* torchtitan's op-level selective checkpointing (recompute module "op":
 * selective_ac_option "op", torchtitan/parallelisms/parallelize_llama.py
 * _apply_ac_to_transformer_block at 9dec370, 2024-12, the version of its
 * published Llama 3.1 H100 benchmarks): each TransformerBlock runs under
 * non-reentrant torch.utils.checkpoint with a policy that keeps the outputs
 * of aten.mm, except every second one counted from the block's start, and
 * of the SDPA kernels; the backward reruns the block's forward and redoes
 * every other op. The block's mms in order (models/llama/model.py
 * Attention.forward, FeedForward.forward): wq, wk, wv, wo, w1, w3, w2, so
 * wk, wo and w3 are redone and wq, wv, w1, w2 kept. Float8 (torchao at
 * eab345c, the benchmarks' version) changes nothing: Float8Linear's
 * matmul_with_hp_or_float8_args calls torch.mm on Float8Tensors, the policy's
 * dispatch mode sees that aten.mm before float8_ops.py float8_mm turns it
 * into torch._scaled_mm, and the redone linears redo their casts (the amax
 * reductions, abs and max, are kept). The norms, rotary, activation and
 * residual kernels are always redone. `rc` collects the redone forward
 * kernels of one sub-block: its elementwise kernels and the linears
 * (T x k) x (k x n) given in `lin` that the policy does not keep. */
struct op_lin {
    double n, k;
    bool kept; /* an odd-numbered mm */
};

static void op_sac_redo(const struct wl *w, const struct op_lin *lin, int nlin, struct acc *rc)
{
    struct acc scratch = {0};
    elementwise(w, rc, &scratch);
    for (int i = 0; i < nlin; i++)
        if (!lin[i].kept) linear(w, w->T, lin[i].n, lin[i].k, rc, &scratch);
}

/* Transformers' eager rotary embedding of one tensor of x elements
 * (apply_rotary_pos_emb: q * cos + rotate_half(q) * sin, rotate_half being
 * cat((-x2, x1))): forward mul, neg of the half, cat, mul, add; backward the
 * two multiplies' gradients, the neg's, each half slice's (slice_backward:
 * zeros, then a copy into the slice) and two adds that sum the three
 * gradients of the input (autograd's InputBuffer). */
static void rope_eager(const struct wl *w, double x, struct acc *f, struct acc *b)
{
    const double e = w->e;
    addk(f, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 2.0 * x * e)); /* q * cos */
    addk(f, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, x * e));       /* -x2 */
    addk(f, LP_OPC_MEM, mem(w, LP_MEM_COPY, 2.0 * x * e));     /* cat */
    addk(f, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 2.0 * x * e)); /* * sin */
    addk(f, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 3.0 * x * e)); /* + */
    addk(b, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 2.0 * x * e)); /* grad * cos */
    addk(b, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 2.0 * x * e)); /* grad * sin */
    addk(b, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, x * e));       /* neg backward */
    for (int i = 0; i < 2; i++) {                              /* slice_backward x1, x2 */
        addk(b, LP_OPC_MEM, mem(w, LP_MEM_COPY, x * e));
        addk(b, LP_OPC_MEM, mem(w, LP_MEM_COPY, x * e));
    }
    addk(b, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 3.0 * x * e)); /* sum of the three */
    addk(b, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 3.0 * x * e));
}

/* What Transformers' attention does around its kernels under `hf` (eager
 * PyTorch; Xia et al. ran Transformers 4.36's MixtralFlashAttention2,
 * stsxxx/finetune copy_for_tune/modeling_mixtral.py, with flash-attn 2.5.6,
 * LLaMA-Factory/pip.txt). Per layer forward:
 *  - rotary: position_ids[:, -1].max().item() (a host synchronisation),
 *    cos and sin gathered at position_ids (their caches are made in the
 *    load dtype: from_pretrained sets the default dtype to torch_dtype, so
 *    MixtralRotaryEmbedding's .to(dtype) is no copy), and the eager rotary
 *    of q and k (rope_eager);
 *  - repeat_kv of k and v (expand + reshape: a copy to all heads; its
 *    gradient sums the groups), when there are fewer kv heads than heads;
 *  - with padding in the batch (lp_sim_batch_padded: the attention mask
 *    holds zeros) the varlen path, _upad_input: _get_unpad_data (a sum,
 *    nonzero and .max().item(): two synchronisations, cumsum, pad), then
 *    index_first_axis of q, k and v (flash_attn/bert_padding.py v2.5.6:
 *    torch.gather with an expanded, stride-0 index; backward zeros +
 *    scatter_), flash_attn_varlen_func, pad_input (zeros + index_put;
 *    backward a gather). k and v reach it as (b, s, heads, d) views of the
 *    (b, heads, s, d) tensors repeat_kv made, so their reshape to
 *    (b s, heads, d) copies them first (q's rotary output keeps the
 *    projection's (b, s, heads, d) order: TensorIterator follows its first
 *    operand, so q's reshape is a view). Without padding flash_attn_func
 *    takes the strided views as they are.
 * Every tensor is taken at the padded token count. Returns the forward's
 * host synchronisations. */
static int hf_attention_glue(const struct wl *w, struct acc *f, struct acc *b)
{
    const struct lp_run *r = w->run;
    const double T = w->T, d = w->d, e = w->e;
    const double xq = T * w->at * d, xk = T * w->gt * d;
    int syncs = 0;
    if (r->model.pos == LP_POS_ROTARY) {
        addk(f, LP_OPC_MEM, mem(w, LP_MEM_COPY, r->par.micro_batch * 16.0)); /* max */
        syncs++;                                                             /* .item() */
        for (int i = 0; i < 2; i++) /* cos[position_ids], sin[position_ids] */
            addk(f, LP_OPC_MEM, mem(w, LP_MEM_COPY, T * (d * 2.0 * e + 8.0)));
        rope_eager(w, xq, f, b);
        rope_eager(w, xk, f, b);
    }
    const bool grouped = w->gt < w->at;
    if (grouped)
        for (int i = 0; i < 2; i++) { /* k, v */
            addk(f, LP_OPC_MEM, mem(w, LP_MEM_COPY, (xk + xq) * e));
            addk(b, LP_OPC_MEM, mem(w, LP_MEM_COPY, (xk + xq) * e));
        }
    if (r->train.flash_attention && lp_sim_batch_padded(r)) {
        for (int i = 0; i < 5; i++) /* sum, nonzero, max, cumsum, pad */
            addk(f, LP_OPC_MEM, mem(w, LP_MEM_COPY, T * 8.0));
        syncs += 2;
        if (grouped)
            for (int i = 0; i < 2; i++) /* k, v to (b s, heads, d) */
                addk(f, LP_OPC_MEM, mem(w, LP_MEM_COPY, 2.0 * xq * e));
        for (int i = 0; i < 3; i++) { /* index_first_axis of q, k, v */
            addk(f, LP_OPC_MEM, mem(w, LP_MEM_COPY, 2.0 * xq * e));
            addk(b, LP_OPC_MEM, mem(w, LP_MEM_COPY, xq * e));
            addk(b, LP_OPC_MEM, mem(w, LP_MEM_COPY, 2.0 * xq * e));
        }
        addk(f, LP_OPC_MEM, mem(w, LP_MEM_COPY, xq * e)); /* pad_input */
        addk(f, LP_OPC_MEM, mem(w, LP_MEM_COPY, 2.0 * xq * e + T * 8.0));
        addk(b, LP_OPC_MEM, mem(w, LP_MEM_COPY, 2.0 * xq * e + T * 8.0));
    }
    return syncs;
}

/* What torchtitan's eager attention does around SDPA (fsdp2 without fused
 * kernels; pytorch/torchtitan 9dec370 torchtitan/models/llama/model.py,
 * Attention.forward): wq, wk, wv, then apply_rotary_emb of q and k, each
 * `view_as_complex(x.float().reshape(...))` (a cast to fp32), a complex
 * multiply by freqs_cis (fp32 in, fp32 out) and `view_as_real(...)
 * .type_as(x)` (a cast back): three kernels forward, and their three
 * gradients backward (the cast of the incoming gradient to fp32, the
 * multiply by the conjugate, the cast back); then repeat_kv of k and v
 * (unsqueeze, expand, reshape: a copy to all heads when there are fewer kv
 * heads; its gradient sums the groups). The transposes around SDPA are
 * views, and its output's transpose(1, 2).contiguous() finds the flash
 * kernel's (b, s, h, d) memory already contiguous. No host synchronisation
 * (freqs_cis is sliced, not indexed by a tensor).
 *
 * fms-fsdp's model (fsdp1; foundation-model-stack f29e546d, 2024-03,
 * fms/modules/positions.py RotaryEmbedding.adjusted_qk) rotates the same
 * way in fp32 but as a real 2 x 2 rotation: `q.float().view(..., -1, 2)`,
 * `freqs[...].mul(q_.unsqueeze(-2))` (the product broadcast to two fp32
 * values per element: 4 bytes read, 8 written), `.sum(5)` (8 read, 4
 * written), `.type_as(q)`: the complex multiply's one kernel becomes these
 * two (`mul_sum`), and so does its gradient (the multiply of the expanded
 * gradient by freqs, then the sum over the broadcast dimension). Its
 * grouped keys are `unsqueeze(2).expand(...).flatten(1, 2)` copies
 * (fms/modules/attention.py MultiHeadAttention.forward), as repeat_kv. */
static void torchtitan_attention_glue(const struct wl *w, struct acc *f, struct acc *b,
                                      bool mul_sum)
{
    const double T = w->T, d = w->d, e = w->e;
    const double xq = T * w->at * d, xk = T * w->gt * d;
    if (w->run->model.pos == LP_POS_ROTARY) {
        const double xs[2] = {xq, xk};
        for (int i = 0; i < 2; i++) {
            addk(f, LP_OPC_MEM, mem(w, LP_MEM_COPY, xs[i] * (e + 4.0))); /* .float() */
            addk(b, LP_OPC_MEM, mem(w, LP_MEM_COPY, xs[i] * (e + 4.0))); /* .type_as bwd */
            if (mul_sum) { /* fms: mul to two fp32 per element, sum(5); and back */
                for (int k = 0; k < 2; k++) {
                    addk(f, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, xs[i] * 12.0));
                    addk(b, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, xs[i] * 12.0));
                }
            } else { /* * freqs_cis; * conj(freqs_cis) */
                addk(f, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, xs[i] * 8.0));
                addk(b, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, xs[i] * 8.0));
            }
            addk(f, LP_OPC_MEM, mem(w, LP_MEM_COPY, xs[i] * (4.0 + e))); /* .type_as */
            addk(b, LP_OPC_MEM, mem(w, LP_MEM_COPY, xs[i] * (4.0 + e))); /* .float() bwd */
        }
        if (mul_sum) { /* fms, once per layer, no gradient: position_ids =
                          arange(s).repeat(b, 1), max(position_ids[:, 0]), + s,
                          and the fp32 2 x 2 rotations gathered by position */
            addk(f, LP_OPC_MEM, mem(w, LP_MEM_COPY, T * 8.0));
            addk(f, LP_OPC_MEM, mem(w, LP_MEM_COPY, 2.0 * T * 8.0));
            addk(f, LP_OPC_MEM, mem(w, LP_MEM_COPY, (double)w->run->par.micro_batch * 8.0));
            addk(f, LP_OPC_MEM, mem(w, LP_MEM_COPY, 16.0));
            addk(f, LP_OPC_MEM, mem(w, LP_MEM_COPY, 2.0 * T * d * 8.0 + T * 8.0));
        }
    }
    if (w->gt < w->at)
        for (int i = 0; i < 2; i++) { /* repeat_kv of k, v */
            addk(f, LP_OPC_MEM, mem(w, LP_MEM_COPY, (xk + xq) * e));
            addk(b, LP_OPC_MEM, mem(w, LP_MEM_COPY, (xk + xq) * e));
        }
}

/* The query and key norms (model qk_norm: Qwen3), between the QKV
 * projection and the rotary embedding, over head_dim per head.
 * Megatron-Core (attention.py, SelfAttention.get_query_key_value_tensors,
 * Megatron-LM d98e8a6) splits the fused QKV output with SplitAlongDim and
 * applies q_layernorm to the query and k_layernorm to the key, each a
 * Transformer Engine RMSNorm (TENorm) whose forward begins with
 * input_.contiguous() (TransformerEngine d0067d0,
 * pytorch/ops/basic/rmsnorm.py op_forward). The key is a strided slice of
 * the QKV output, so it is copied first; the query is too when the rank
 * holds one query group (with more, the reshape of its slice to heads has
 * already copied it, norm or not). One norm kernel each way per tensor;
 * eager PyTorch (Transformers Qwen3RMSNorm) runs its decomposed RMSNorm. */
static void qk_norms(const struct wl *w, struct acc *f, struct acc *b)
{
    const double T = w->T, d = w->d;
    const double xs[2] = {T * w->at * d, T * w->gt * d}; /* query, key */
    for (int i = 0; i < 2; i++) {
        if (!w->run->fw.fused_kernels && w->norm == LP_MEM_RMSNORM) {
            eager_rmsnorm(w, xs[i], d, f, b);
            continue;
        }
        if (i == 1 || w->gt <= 1.0) addk(f, LP_OPC_MEM, mem(w, LP_MEM_COPY, 2.0 * xs[i] * w->e));
        addk(f, LP_OPC_MEM, mem(w, w->norm, 2.0 * xs[i] * w->e));
        addk(b, LP_OPC_MEM, mem(w, w->norm, 3.0 * xs[i] * w->e));
    }
}

/* What runs between the QKV projection and the attention kernel: the
 * rotary embedding (and, for eager model code, its casts, the grouped keys'
 * copies and Transformers' varlen glue) as the framework's model code runs
 * it; the host synchronisations it makes. */
static int attention_glue(const struct wl *w, struct acc *f, struct acc *b)
{
    const struct lp_run *r = w->run;
    if (!r->fw.fused_kernels && (r->fw.kind == LP_FW_FSDP2 || r->fw.kind == LP_FW_FSDP1)) {
        torchtitan_attention_glue(w, f, b, r->fw.kind == LP_FW_FSDP1);
        return 0;
    }
    if (!r->fw.fused_kernels) return hf_attention_glue(w, f, b);
    if (r->model.pos == LP_POS_ROTARY) {
        const double x = w->T * (w->at + w->gt) * w->d;
        addk(f, LP_OPC_MEM, mem(w, LP_MEM_ROPE, 2.0 * x * w->e));
        addk(b, LP_OPC_MEM, mem(w, LP_MEM_ROPE, 2.0 * x * w->e));
    }
    return 0;
}

/* n in-place adds of a T x width input gradient (autograd's InputBuffer
 * accumulating the gradients of n + 1 consumers of one tensor) */
static void input_grad_adds(const struct wl *w, double T, double width, int n, struct acc *b)
{
    for (int i = 0; i < n; i++)
        addk(b, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 3.0 * T * width * w->e));
}

/* MLA's TP collectives in each direction (Megatron-Core
 * MLASelfAttention.get_query_key_value_tensors, d98e8a6): what crosses the
 * TP group on the way in is not the layer's input but what the up
 * projections read: the normed query latent and key-value latent, each
 * gathered by its TEColumnParallelLinear (quantised as TE gathers a
 * linear's input, tp_ag_elem), and the shared rotary key k_pos_emb,
 * gathered in bf16 (gather_from_sequence_parallel_region); on the way out
 * linear_proj's reduce-scatter of T x h as for dense attention. Backward
 * the mirror: linear_proj's output gradient gathered (T x h), the latents'
 * and k_pos_emb's gradients reduce-scattered. Without sequence parallelism
 * the up projections' input gradient is all-reduced (T x latents) and
 * linear_proj's output as dense attention's. */
static void mla_tp_comm(const struct wl *w, double *comm_f, double *comm_b)
{
    if (w->t <= 1) return;
    const struct lp_mla *q = &w->run->model.mla;
    const double T = w->T, h = w->h, e = w->e;
    const double lat = (double)q->q_lora_rank + q->kv_lora_rank, rope = q->qk_rope_head_dim;
    const int t = w->t;
    if (w->run->par.sequence_parallel) {
        *comm_f = coll(w, LP_COLL_ALLGATHER, T * lat * tp_ag_elem(w, true), t, 1) +
                  coll(w, LP_COLL_ALLGATHER, T * rope * e, t, 1) +
                  coll(w, LP_COLL_REDUCESCATTER, T * h * e, t, 1);
        *comm_b = coll(w, LP_COLL_ALLGATHER, T * h * tp_ag_elem(w, true), t, 1) +
                  coll(w, LP_COLL_REDUCESCATTER, T * (lat + rope) * e, t, 1);
    } else {
        *comm_f = coll(w, LP_COLL_ALLREDUCE, T * h * e, t, 1);
        *comm_b = coll(w, LP_COLL_ALLREDUCE, T * lat * e, t, 1);
    }
}

/* Attention block: norm, QKV (or MLA), rotary, core, output projection,
 * residual. `local`: a sliding-window layer. */
static void attention_block(const struct wl *w, struct lp_layer_cost *c, bool local)
{
    const struct lp_run *r = w->run;
    const struct lp_mla *q = &r->model.mla;
    const bool mla = q->kv_lora_rank > 0;
    double T = w->T, h = w->h, d = w->d;
    const unsigned mods = lp_sim_rc_modules(r);
    struct acc f = {0}, b = {0}, rc = {0};
    int syncs = 0;
    /* linear_qkv and linear_proj in their modules' precisions (MLA has no
     * linear_qkv: its projections run as the layer does) */
    const struct wl wqkv = mla ? *w : module_wl(w, LP_QMOD_QKV);
    const struct wl wproj = module_wl(w, LP_QMOD_PROJ);
    elementwise(w, &f, &b);
    /* the attention kernel's head dim: MLA's scores use d_nope + d_rope and
     * its values d_v; FlashAttention's work is s^2 (d_qk + d_v) per head */
    double dk = d, dv = d;
    if (mla) {
        /* Megatron-Core's MLA layer keeps its input norm a module of its
         * own (the down projections are separate linears): recompute
         * module "layernorm" redoes it */
        if (mods & LP_RC_LAYERNORM) {
            struct acc nb = {0};
            block_norm(w, &rc, &nb);
        }
        mla_projections(w, &f, &b, &rc);
        dk = q->qk_nope_head_dim + q->qk_rope_head_dim;
        dv = q->v_head_dim;
    } else {
        linear_tp(&wqkv, TP_COLUMN, T, (w->at + 2.0 * w->gt) * d, h, &f, &b);
        if (r->model.qk_norm) qk_norms(w, &f, &b);
        syncs = attention_glue(w, &f, &b);
        /* eager model code projects q, k and v with three linears of the
         * normed input (Transformers' q_proj / k_proj / v_proj, torchtitan's
         * wq / wk / wv, foundation-model-stack's query / key / value):
         * autograd's InputBuffer adds the second and third input gradient
         * into the first, in place (read two, write one) */
        if (!r->fw.fused_kernels) input_grad_adds(w, T, h, 2, &b);
    }
    /* Core attention. With CP each rank attends its s queries to all cp*s
     * keys (ring attention): same FLOPs as cp independent s x s blocks. */
    double af, ab;
    int nf, nb;
    attn_core(w, local, 0.5 * (dk + dv), &af, &ab, &nf, &nb);
    add_attn(&f, af, nf);
    add_attn(&b, ab, nb);
    linear_tp(&wproj, TP_ROW, T, h, w->at * dv, &f, &b);

    /* the forward gathers linear_qkv's input, the backward linear_proj's
     * output gradient, each quantised as its module runs */
    double comm_f = tp_comm(&wqkv, true), comm_b = tp_comm(&wproj, true);
    if (mla) mla_tp_comm(w, &comm_f, &comm_b);
    int ncoll = w->t > 1 ? (r->par.sequence_parallel ? 2 : 1) : 0;
    if (r->fw.cuda_graphs & LP_GRAPH_ATTN) { /* the whole block, its collectives too */
        f.graphed = f.n;
        b.graphed = b.n;
        ncoll = 0;
    }
    if (r->par.cp > 1) {
        /* ring exchange of K and V: cp-1 steps of the local K,V block,
         * overlapped with the attention of the previous block */
        double kv = mla ? T * w->at * (dk + dv) * w->e : 2.0 * T * w->gt * d * w->e;
        double ring = (r->par.cp - 1) * p2p(w, kv, r->par.cp, r->par.tp);
        comm_f += fmax(0.0, ring - af);
        comm_b += fmax(0.0, 2.0 * ring - ab);
    }
    /* Selective recomputation of the attention core (Korthikanti et al.
     * 2022 Sec 5). Megatron-Core checkpoints the core whatever its kernel
     * (attention.py, checkpoint_core_attention: the fused kernel's forward
     * runs again); Megatron-LM's and Megatron-DeepSpeed's legacy
     * transformer.py checkpoint only the unfused core, FlashAttention
     * recomputing its scores inside its own backward. */
    if ((mods & LP_RC_CORE_ATTN) && (!r->train.flash_attention || r->fw.kind == LP_FW_MEGATRON)) {
        rc.s += af;
        rc.n += nf;
        rc.cat[LP_OPC_ATTN] += af;
    }
    if ((mods & LP_RC_OP) && !mla) { /* the SDPA output is kept; wq wk wv, wo */
        const struct op_lin lin[] = {{w->at * d, h, true},
                                     {w->gt * d, h, false},
                                     {w->gt * d, h, true},
                                     {h, w->at * dv, false}};
        op_sac_redo(w, lin, 4, &rc);
        struct acc scratch = {0}; /* the rotary and the rest of the glue, redone */
        (void)attention_glue(w, &rc, &scratch);
    }
    close_block(w, c, &f, &b, &rc, comm_f, comm_b, ncoll, true);
    host_syncs(w, c, syncs);
}

/* Mamba-2's SSD in the kernels that run it: Megatron-Core's MambaMixer
 * (mamba_mixer.py, the use_mem_eff_path training path) calls mamba_ssm's
 * mamba_split_conv1d_scan_combined, whose forward is
 * _mamba_chunk_scan_combined_fwd (ssd_combined.py) and whose backward
 * recomputes the chunk states and runs _mamba_chunk_scan_combined_bwd. Each
 * Triton kernel is costed on the roofline of the profile: the bytes it must
 * move (every tensor it reads or writes once: the compulsory traffic, a
 * lower bound) at the profile's copy bandwidth, or its tl.dot work as the
 * batched GEMM of the same shape on the tensor cores, whichever is longer;
 * a kernel bound by its bytes counts as memory-bound. Per token and TP
 * rank: x, z, out are X = heads P wide (activation dtype), B and C G N,
 * dt and the fp32 dA_cumsum one per head, the chunk states heads P N per
 * chunk of Q tokens (fp32 where the code asks for states_in_fp32), and the
 * fp32 C B^T G Q. The matmul shapes: XN (x or dout against B, C or the
 * states: 2 X N FLOPs per token), XQ (within a chunk, C B^T against x or
 * dout: 2 X Q) and BMM (C B^T itself: 2 G Q N). */
enum ssd_dot { SSD_NONE, SSD_XN, SSD_XQ, SSD_BMM, SSD_XQ_XN };
struct ssd_kernel {
    double x, bc, hd, st, cb; /* bytes per token in units of X, G N, heads, states, C B^T */
    enum ssd_dot dot;
};

static double ssd_dot_s(const struct wl *w, enum ssd_dot d, double nh, double G)
{
    const struct lp_model *m = &w->run->model;
    const double T = w->T, P = m->mamba.head_dim, N = m->mamba.d_state, Q = LP_SSD_CHUNK;
    const struct lp_cost_model *cm = w->cm;
    switch (d) {
    case SSD_XN:
        return cm->ops->gemm_s(cm, LP_GEMM_FWD, w->aprec, T * nh, P, N);
    case SSD_XQ:
        return cm->ops->gemm_s(cm, LP_GEMM_FWD, w->aprec, T * nh, P, Q);
    case SSD_BMM:
        return cm->ops->gemm_s(cm, LP_GEMM_FWD, w->aprec, T * G, Q, N);
    case SSD_XQ_XN:
        return ssd_dot_s(w, SSD_XQ, nh, G) + ssd_dot_s(w, SSD_XN, nh, G);
    default:
        return 0.0;
    }
}

static void ssd_run(const struct wl *w, const struct ssd_kernel *k, int n, double nh, double G,
                    struct acc *a)
{
    const struct lp_model *m = &w->run->model;
    const double P = m->mamba.head_dim, N = m->mamba.d_state, Q = LP_SSD_CHUNK;
    const double X = nh * P, BC = G * N, S = nh * P * N / Q, CB = G * Q;
    for (int i = 0; i < n; i++) {
        const double bytes =
            w->T * (k[i].x * X + k[i].bc * BC + k[i].hd * nh + k[i].st * S + k[i].cb * CB);
        const double tm = mem(w, LP_MEM_COPY, bytes), tc = ssd_dot_s(w, k[i].dot, nh, G);
        addk(a, tc > tm ? LP_OPC_ATTN : LP_OPC_MEM, fmax(tm, tc));
    }
}

static void ssd_kernels(const struct wl *w, double nh, double G, struct acc *f, struct acc *b)
{
    const double e = w->e;
    /* forward (_mamba_chunk_scan_combined_fwd with z: the gate is applied in
     * _chunk_scan_fwd, which also writes out_x, saved for the backward) */
    const struct ssd_kernel fwd[] = {
        {0, 0, e + 8.0, 0, 0, SSD_NONE},      /* _chunk_cumsum_fwd: dt -> dt, dA_cumsum (fp32) */
        {e, e, 8.0, 4.0, 0, SSD_XN},          /* _chunk_state_fwd: x, B -> states (fp32) */
        {0, 0, 0, 4.0 + e, 0, SSD_NONE},      /* _state_passing_fwd: -> states (C's dtype) */
        {0, 2.0 * e, 0, 0, 4.0, SSD_BMM},     /* _bmm_chunk_fwd: C, B -> C B^T (fp32) */
        {4.0 * e, e, 8.0, e, 4.0, SSD_XQ_XN}, /* _chunk_scan_fwd: x, z, C, states -> out, out_x */
    };
    /* backward (_mamba_chunk_scan_combined_bwd, z given): the states
     * recomputed (fp32 out of state passing), then the gradients; the
     * reversed cumsum of ddA_prev (flip, cumsum, flip) and the two adds into
     * ddA are PyTorch ops on per-head fp32 vectors */
    const struct ssd_kernel bwd[] = {
        {0, 0, e + 8.0, 0, 0, SSD_NONE},  /* _chunk_cumsum_fwd */
        {0, 2.0 * e, 0, 0, 4.0, SSD_BMM}, /* _bmm_chunk_fwd */
        {e, e, 8.0, 4.0, 0, SSD_XN},      /* _chunk_state_fwd */
        {0, 0, 0, 8.0, 0, SSD_NONE},      /* _state_passing_fwd */
        {6.0 * e, 0, 0, 0, 0, SSD_NONE},  /* _chunk_scan_bwd_dz: x, z, out_x, dout -> dz, dout */
        {e, e, 4.0, 4.0, 0, SSD_XN},      /* _chunk_scan_bwd_dstates: C, dout -> dstates */
        {0, 0, 0, 8.0 + 2.0 * e, 0, SSD_NONE},  /* _state_passing_bwd */
        {3.0 * e, e, 12.0, e, 4.0, SSD_XQ_XN},  /* _chunk_scan_chunk_state_bwd_dx -> dx, ddt */
        {e, e + 4.0, 12.0, e, 0, SSD_XN},       /* _chunk_state_bwd_db -> dB (fp32), ddA_next */
        {e, e + 4.0, 8.0, e, 0, SSD_XN},        /* _chunk_scan_bwd_dC -> dC (fp32), ddA_prev */
        {2.0 * e, 0, 8.0, 0, 4.0, SSD_XQ},      /* _chunk_scan_bwd_dcb -> dCB (fp32) */
        {0, 2.0 * e + 4.0, 0, 0, 4.0, SSD_BMM}, /* _bmm_chunk_bwd (dB) */
        {0, 2.0 * e + 4.0, 0, 0, 4.0, SSD_BMM}, /* _bmm_chunk_bwd (dC) */
        {0, 0, 8.0, 0, 0, SSD_NONE},            /* flip */
        {0, 0, 8.0, 0, 0, SSD_NONE},            /* cumsum */
        {0, 0, 8.0, 0, 0, SSD_NONE},            /* flip */
        {2.0 * e, 0, 12.0, 0, 4.0, SSD_XQ},     /* _chunk_scan_bwd_ddAcs_stable -> ddA */
        {0, 0, 12.0, 0, 0, SSD_NONE},           /* ddA += ddA_next */
        {0, 0, 12.0, 0, 0, SSD_NONE},           /* ddA += ddA_prev */
        {0, 0, 8.0 + 2.0 * e, 0, 0, SSD_NONE},  /* _chunk_cumsum_bwd -> ddt, dA, ddt_bias */
    };
    ssd_run(w, fwd, (int)(sizeof fwd / sizeof fwd[0]), nh, G, f);
    ssd_run(w, bwd, (int)(sizeof bwd / sizeof bwd[0]), nh, G, b);
}

/* Mamba mixer block (Megatron-Core MambaMixer; mamba_ssm kernels): norm,
 * in_proj (column-parallel), depthwise conv1d + SiLU, the selective scan
 * (Mamba-1) or the SSD chunked scan (Mamba-2), gated norm, out_proj
 * (row-parallel). Channels, heads and groups are split over TP. */
static void mamba_block(const struct wl *w, struct lp_layer_cost *c)
{
    const struct lp_run *r = w->run;
    const struct lp_model *m = &r->model;
    const double T = w->T, h = w->h, t = w->t, N = m->mamba.d_state;
    const double di = lp_arch_mamba_inner(m) / t;
    struct acc f = {0}, b = {0};
    /* Mamba-2's in_proj and out_proj (Transformer Engine linears) in their
     * modules' precisions */
    const struct wl win = module_wl(w, LP_QMOD_IN_PROJ), wout = module_wl(w, LP_QMOD_OUT_PROJ);
    elementwise(w, &f, &b);
    double conv_ch;
    if (m->mamba.version == 2) {
        const double nh = lp_arch_mamba_heads(m) / t,
                     G = (m->mamba.n_groups > 0 ? m->mamba.n_groups : 1) / t;
        conv_ch = di + 2.0 * G * N;
        /* Megatron-Core's mixer builds in_proj and out_proj as Transformer
         * Engine linears with the fc1 / fc2 userbuffers (Megatron-LM d98e8a6
         * models/hybrid/hybrid_layer_specs.py: MambaMixerSubmodules(in_proj=
         * TELayerNormColumnParallelLinear, out_proj=TERowParallelLinear);
         * ssm/mamba_mixer.py MambaMixer.__init__ tp_comm_buffer_name "fc1",
         * "fc2"): the TP linear pair of the attention and MLP blocks, its
         * collectives overlapped per GEMM under tp_overlap, its backward's
         * async all-gather / reduce-scatter otherwise (linear_tp) */
        linear_tp(&win, TP_COLUMN, T, 2.0 * di + 2.0 * G * N + nh, h, &f, &b);
        ssd_kernels(w, nh, G, &f, &b);
        /* Megatron-Core's RMSNorm over the gated output (mamba_mixer.py:
         * self.norm(y) after the fused path; the gate silu(z) is applied
         * inside _chunk_scan_fwd) */
        addk(&f, LP_OPC_MEM, mem(w, LP_MEM_RMSNORM, 2.0 * T * di * w->e));
        addk(&b, LP_OPC_MEM, mem(w, LP_MEM_RMSNORM, 3.0 * T * di * w->e));
    } else {
        const double R = lp_arch_mamba_dt_rank(m);
        conv_ch = di;
        linear(w, T, 2.0 * di, h, &f, &b);
        linear(w, T, R + 2.0 * N, di, &f, &b); /* x_proj */
        linear(w, T, di, R, &f, &b);           /* dt_proj */
        /* the selective scan runs on the CUDA cores in fp32: 9 FLOPs per
         * state element (arch.c), streaming u, delta, z, B, C in and y out;
         * the backward recomputes the scan and runs it in reverse (2x) */
        const double flops = 9.0 * T * di * N, vec = w->cm->gpu.vector_flops;
        const double io = T * (4.0 * di + 2.0 * N) * w->e;
        const double sf = fmax(mem(w, LP_MEM_COPY, io), vec > 0 ? flops / vec : 0.0);
        const double sb = fmax(mem(w, LP_MEM_COPY, 2.0 * io), vec > 0 ? 2.0 * flops / vec : 0.0);
        addk(&f, LP_OPC_ATTN, sf);
        addk(&b, LP_OPC_ATTN, sb);
        /* y * silu(z) */
        addk(&f, LP_OPC_MEM, mem(w, LP_MEM_SWIGLU, 3.0 * T * di * w->e));
        addk(&b, LP_OPC_MEM, mem(w, LP_MEM_SWIGLU, 5.0 * T * di * w->e));
    }
    /* depthwise causal conv1d + SiLU over the conv channels; Mamba-2's
     * fused path (MambaSplitConv1dScanCombinedFn) saves only its input and
     * runs causal_conv1d_fwd again in the backward */
    addk(&f, LP_OPC_MEM, mem(w, LP_MEM_COPY, 2.0 * T * conv_ch * w->e));
    if (m->mamba.version == 2) addk(&b, LP_OPC_MEM, mem(w, LP_MEM_COPY, 2.0 * T * conv_ch * w->e));
    addk(&b, LP_OPC_MEM, mem(w, LP_MEM_COPY, 3.0 * T * conv_ch * w->e));
    /* Mamba-1 (x_proj, dt_proj: mamba_ssm's module, not Megatron's mixer)
     * keeps plain linears */
    const bool te = m->mamba.version == 2;
    if (te)
        linear_tp(&wout, TP_ROW, T, h, di, &f, &b);
    else
        linear(w, T, h, di, &f, &b);
    /* the forward gathers in_proj's input, the backward out_proj's output
     * gradient (Mamba-2: each quantised as its module runs) */
    const double comm_f = tp_comm(te ? &win : w, te), comm_b = tp_comm(te ? &wout : w, te);
    int ncoll = w->t > 1 ? (r->par.sequence_parallel ? 2 : 1) : 0;
    if (r->fw.cuda_graphs & LP_GRAPH_MAMBA) {
        f.graphed = f.n;
        b.graphed = b.n;
        ncoll = 0;
    }
    close_block(w, c, &f, &b, NULL, comm_f, comm_b, ncoll, true);
}

/* fc1, activation, fc2 of an FFN of size f split over t ranks, on T tokens:
 * the dense MLP, a shared expert, or one routed expert's share. */
static void ffn_core(const struct wl *w, double T, double width, double ft, bool adapt, bool tp,
                     struct acc *f, struct acc *b, double *act_f)
{
    const bool swiglu = w->run->model.ffn_act == LP_ACT_SWIGLU;
    /* tp: the dense MLP, whose fc1 and fc2 are TP linears (userbuffers) */
    if (tp)
        linear_tp(w, TP_COLUMN, T, ft * (swiglu ? 2.0 : 1.0), width, f, b);
    else
        linear_lora(w, T, ft * (swiglu ? 2.0 : 1.0), width, f, b, adapt);
    double x = T * ft;
    if (swiglu && !w->run->fw.fused_kernels) {
        /* eager PyTorch's gated MLP: torchtitan's FeedForward (model.py
         * @9dec370) w2(F.silu(w1(x)) * w3(x)), fms-fsdp's GatedLinearUnit
         * (foundation-model-stack f29e546d fms/modules/feedforward.py:
         * self.a(self.wg(x)) * self.w1(x)), Transformers' LlamaMLP and
         * MixtralBlockSparseTop2MLP (act_fn(w1(x)) * w3(x)): silu and the
         * multiply forward; the multiply's two gradients and silu's
         * backward */
        const double silu = mem(w, LP_MEM_GELU, 2.0 * x * w->e);
        const double mul = mem(w, LP_MEM_RESIDUAL, 3.0 * x * w->e);
        if (act_f) *act_f = silu + mul;
        addk(f, LP_OPC_MEM, silu);
        addk(f, LP_OPC_MEM, mul);
        addk(b, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 3.0 * x * w->e)); /* d silu(a) */
        addk(b, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 3.0 * x * w->e)); /* d w3 out */
        addk(b, LP_OPC_MEM, mem(w, LP_MEM_GELU, 3.0 * x * w->e));     /* silu backward */
        /* w1 and w3 (gate_proj / up_proj, wg / w1) are two linears of one
         * input: their input gradients are added (InputBuffer) */
        input_grad_adds(w, T, width, 1, b);
    } else if (!swiglu && w->run->fw.fused_mlp) {
        /* flash-attn's FusedMLP (fused_dense_gelu_dense; flash-attention
         * 4a6eaa9f flash_attn/ops/fused_dense.py FusedMLPFunc with its
         * default heuristic 0): fc1 is linear_gelu_forward, GELU in the
         * cuBLASLt epilogue, which also writes GELU's input for the
         * backward; the backward's linear_gelu_linear_backward applies
         * GELU's gradient in fc2's data-gradient epilogue, reading it back.
         * No activation kernel either way: one more tensor written by a
         * GEMM forward and read by one backward, at the copy rate. */
        const double io = mem(w, LP_MEM_GELU, x * w->e) - mem(w, LP_MEM_GELU, 0.0);
        if (act_f) *act_f = io;
        add_native(f, LP_OPC_GEMM, io);
        add_native(b, LP_OPC_GEMM, io);
    } else {
        const double act =
            mem(w, swiglu ? LP_MEM_SWIGLU : LP_MEM_GELU, (swiglu ? 3.0 : 2.0) * x * w->e);
        if (act_f) *act_f = act;
        addk(f, LP_OPC_MEM, act);
        addk(b, LP_OPC_MEM,
             mem(w, swiglu ? LP_MEM_SWIGLU : LP_MEM_GELU, (swiglu ? 5.0 : 3.0) * x * w->e));
    }
    if (tp)
        linear_tp(w, TP_ROW, T, width, ft, f, b);
    else
        linear_lora(w, T, width, ft, f, b, adapt);
}

/* Whether a full recomputation skips the block's final linear (fc2, w2,
 * down_proj). PyTorch 2.1+'s non-reentrant torch.utils.checkpoint stops
 * recomputing at the last tensor the backward needs (torch/utils/
 * checkpoint.py: the recompute's saved-tensor pack hook raises
 * _StopRecomputationError once every saved tensor is back; early stop is on
 * unless set_checkpoint_early_stop(False)). A native op packs what it saves
 * when autograd records it, before its kernel runs (the generated
 * VariableType code builds the node, whose SavedVariables call the pack
 * hook, then redispatches to the kernel), so the last saving op of a
 * pre-norm block, the FFN's down projection as an nn.Linear (mm / addmm
 * packing its input and weight), stops the recomputation before its GEMM:
 * that GEMM is never recomputed (nor the residual add after it, one
 * elementwise kernel, left in the count). Custom autograd Functions save
 * after their forward has run (Transformer Engine's fp8 linears,
 * bitsandbytes' MatMul4Bit, flash-attn's FusedMLP, a LoRA adapter's mm
 * after its base GEMM): with them nothing is skipped, nor under reentrant
 * checkpointing (Megatron's CheckpointFunction, use_reentrant=True), nor
 * before PyTorch 2.1 (ckpt_early_stop false), nor with dropout after fc2
 * (native_dropout saves its mask after running, so the rerun passes fc2).
 * Only a checkpoint's last layer stops early: every layer is its own
 * checkpoint unless a uniform recomputation groups several. TP > 1 (the
 * row-parallel linear's collective) is not modelled here. */
static bool ckpt_early_stop_skips(const struct wl *w)
{
    return lp_sim_ckpt_early_stop(w->run) && w->q <= 0 && w->t == 1;
}

/* Dense MLP block: norm, fc1, activation, fc2, residual. */
static void mlp_block(const struct wl *w, struct lp_layer_cost *c)
{
    const struct lp_run *r = w->run;
    struct acc f = {0}, b = {0}, rc = {0};
    elementwise(w, &f, &b);
    const double ft = (double)r->model.ffn_hidden / w->t;
    double act = 0;
    ffn_core(w, w->T, w->h, ft, r->train.lora_targets == LP_LORA_ALL, true, &f, &b, &act);
    double comm = tp_comm(w, true);
    int ncoll = w->t > 1 ? (r->par.sequence_parallel ? 2 : 1) : 0;
    if (lp_sim_rc_modules(r) & LP_RC_OP) { /* w1 (w3) w2; the activation redone */
        const bool swiglu = r->model.ffn_act == LP_ACT_SWIGLU;
        const struct op_lin lin[] = {{ft, w->h, true}, {ft, w->h, false}, {w->h, ft, true}};
        /* without a gate: six mms in the block, w1 kept and w2 redone */
        const struct op_lin plain[] = {{ft, w->h, true}, {w->h, ft, false}};
        if (swiglu)
            op_sac_redo(w, lin, 3, &rc);
        else
            op_sac_redo(w, plain, 2, &rc);
        addk(&rc, LP_OPC_MEM, act);
    }
    const double gemm0 = f.cat[LP_OPC_GEMM];
    close_block(w, c, &f, &b, &rc, comm, comm, ncoll, true);
    if (ckpt_early_stop_skips(w) && gemm0 > 0) {
        /* fc2's forward GEMM at the block's throttled rate */
        const double down = gemm(w, LP_GEMM_FWD, w->T, w->h, ft);
        c->full_s -= down * f.cat[LP_OPC_GEMM] / gemm0;
    }
    /* recompute module "mlp" (transformer_layer.py: dense MLPs only): the
     * whole block, as a full recomputation would */
    if (lp_sim_rc_modules(r) & LP_RC_MLP) {
        c->recompute_s += c->full_s;
        c->comm_recompute_s += c->comm_full_s;
    }
}

/* Expected number of the `groups` equal shares of E experts that hold at
 * least one of a token's k distinct experts, routed uniformly: each share
 * misses all k with probability prod_{i<k} (E - E/groups - i) / (E - i). */
static double groups_reached(double E, int k, int groups)
{
    double miss = 1.0;
    for (int i = 0; i < k && miss > 0.0; i++)
        miss *= fmax(0.0, (E - E / groups - i) / (E - i));
    return groups * (1.0 - miss);
}

/* One dispatch (or combine) of the tokens this rank routes, `bytes` per
 * copy, over the EP group (ranks `stride` apart). The all-to-all sends
 * every routed copy (top_k of them per token) to its expert's rank. HybridEP
 * (DeepEP's hybrid mode in Megatron-Core's flex dispatcher) sends a token
 * once to each other node holding one of its experts and fans it out over
 * NVLink: with uniform routing a token reaches (N - 1) / N of the
 * groups_reached nodes among the N its EP group spans, other than its own.
 * Over NVLink too it sends a token
 * once to each rank holding one of its experts (DeepEP dd758ca,
 * impls/hybrid_dispatch.cuh: "Deduplicate for NVLink ranks"; its normal
 * dispatch's is_token_in_rank, buffers/legacy.py), and the receiver copies
 * it to its local experts (Megatron-Core dispatch_with_permute): the
 * groups_reached ranks, not top_k copies; the combine returns one partial
 * sum per rank the same way. */
struct dispatch_ctx {
    const struct wl *w;
    double bytes, copies;
    bool hybrid;
};

/* one EP group's dispatch where it spans `nodes` domains with at least
 * `per` members on each */
static double dispatch_layout_s(const void *ctx, int nodes, int per)
{
    const struct dispatch_ctx *d = ctx;
    const struct lp_run *r = d->w->run;
    const int ep = r->par.ep, k = r->model.moe.top_k;
    if (!d->hybrid || nodes <= 1)
        return lp_coll_time_placed(d->w->cm, &r->system, LP_COLL_ALLTOALL, d->copies, ep, nodes,
                                   per);
    const double N = nodes;
    const double inter = d->bytes * (N - 1.0) / N * groups_reached(r->model.moe.experts, k, nodes);
    /* the network part runs at a point-to-point transfer's efficiency
     * through this GPU's NIC (the send/recv table's nominal is one link) */
    const double eff_x =
        lp_coll_eff_on(d->w->cm, &r->system, LP_COLL_SENDRECV, LP_TIER_INTER, inter, 2);
    const double eff_i =
        lp_coll_eff_on(d->w->cm, &r->system, LP_COLL_ALLTOALL, LP_TIER_INTRA, d->copies, per);
    return fmax(inter / (eff_x * r->system.inter.bw_Bps),
                d->copies * (per - 1.0) / per / (eff_i * r->system.intra.bw_Bps));
}

static double dispatch_time(const struct wl *w, double bytes, int stride)
{
    const struct lp_run *r = w->run;
    const int ep = r->par.ep, k = r->model.moe.top_k;
    if (ep <= 1 || bytes <= 0) return 0.0;
    const bool hybrid = r->fw.dispatcher == LP_DISPATCH_HYBRIDEP;
    const struct dispatch_ctx d = {
        w, bytes, bytes * (hybrid ? groups_reached(r->model.moe.experts, k, ep) : k), hybrid};
    /* every EP group dispatches at once: the slowest group's layout
     * (sim_comm.c lp_groups_slowest; Megatron's expert groups, ep ranks
     * etp apart, first ranks b * ep * etp + q, q < etp). The first group's
     * alone missed those that straddle a domain: ep 64 of a job packed 72
     * to a rack puts ranks 64..127 on two racks. */
    return lp_groups_slowest(lp_system_scale_up(&r->system), ep, stride, stride,
                             lp_sim_world(&r->par), dispatch_layout_s, &d);
}

/* SMs the EP dispatch and combine kernels hold while they run. Megatron-Core's
 * flex dispatcher gives DeepEP moe_deepep_num_sms (default 20) and HybridEP
 * moe_hybridep_num_sms (default 16; num_sms_dispatch_api and
 * num_sms_combine_api alike) SMs for its dispatch and combine kernels
 * (Megatron-LM ebfa138, transformer/transformer_config.py;
 * moe/token_dispatcher.py _HybridEPManager, moe/fused_a2a.py
 * set_deepep_num_sms -> Buffer.set_num_sms); fw.dispatcher_sms names the
 * recipe's where it is not HybridEP's 16. The all-to-all dispatcher's NCCL
 * all-to-all holds one SM per channel, as every overlapped NCCL collective
 * here (LP_NCCL_CHANNEL_SMS). */
static double dispatch_sms(const struct lp_run *r)
{
    if (r->fw.dispatcher_sms > 0) return r->fw.dispatcher_sms;
    return r->fw.dispatcher == LP_DISPATCH_HYBRIDEP ? 16.0 : LP_NCCL_CHANNEL_SMS;
}

/* Kernels of the grouped experts beyond their GEMMs and the fused
 * activation, on te rows per expert, `local` experts of width lw and ffn
 * columns ft:
 *  - moe.activation_clamp (GPT-OSS's swiglu_limit): Megatron-Core clamps
 *    the two halves of fc1's output before its fused GLU kernel
 *    (fused_bias_geglu.py weighted_bias_quick_geglu_impl: chunk, two clamps,
 *    torch.cat), so the forward reads and writes that tensor twice more, and
 *    the backward runs each clamp's backward (gradient and input read, one
 *    write). It lies inside the "moe_act" recomputation (experts.py runs
 *    bias_act_func under the checkpoint): rc, when not NULL, gets the forward.
 *  - expert biases (model "bias"): fc1's bias is in its GEMM (TE GroupedLinear,
 *    skip_bias_add False); fc2's must be scaled by each token's probability,
 *    which TEGroupedMLP._apply_bias does eagerly per expert (experts.py since
 *    Megatron-LM a329dd6, "Enable bias in expert mlp [gpt-oss 5/5]"):
 *    torch.split of the output, `t + b * p` per expert with the router's fp32
 *    probabilities (b * p writes fp32; the sum reads e + 4 bytes and writes
 *    fp32), torch.cat (fp32) and the cast back to the activation dtype:
 *    2 kernels per expert and 2 over all. Its backward: the cast's backward,
 *    per expert the cast of t's gradient and the two products and sums of
 *    the gradients of b and p, then the cats of t's and p's gradients. */
static void expert_extras(const struct wl *w, double te, double local, double lw, double ft,
                          struct acc *f, struct acc *b, struct acc *rc)
{
    const struct lp_run *r = w->run;
    const double e = w->e;
    if (r->model.moe.act_clamp > 0 && r->model.ffn_act == LP_ACT_SWIGLU) {
        const double x = te * local * ft; /* elements in each half of fc1's output */
        const double clamp = mem(w, LP_MEM_COPY, 2.0 * x * e);
        const double cat = mem(w, LP_MEM_COPY, 4.0 * x * e);
        addk(f, LP_OPC_MEM, clamp);
        addk(f, LP_OPC_MEM, clamp);
        addk(f, LP_OPC_MEM, cat);
        const double back = mem(w, LP_MEM_COPY, 3.0 * x * e);
        addk(b, LP_OPC_MEM, back);
        addk(b, LP_OPC_MEM, back);
        if (rc) {
            rc->s += 2.0 * clamp + cat;
            rc->n += 3;
            rc->cat[LP_OPC_MEM] += 2.0 * clamp + cat;
        }
    }
    if (r->model.bias) {
        const double n = te * lw; /* one expert's output elements */
        const double all = n * local;
        /* forward, per expert: b * p (write fp32), t + (b p) (read e + 4, write 4) */
        const double fe = mem(w, LP_MEM_COPY, 4.0 * n) + mem(w, LP_MEM_COPY, (8.0 + e) * n);
        const double fa = mem(w, LP_MEM_COPY, 8.0 * all) + mem(w, LP_MEM_COPY, (4.0 + e) * all);
        addk(f, LP_OPC_MEM, fe * local + fa);
        f->n += 2 * (int)local + 1;
        /* backward, per expert: t's gradient cast (read 4, write e); the
         * gradient times p (and times b), each with its sum (read 8 write 4,
         * read 4); over all: the cast's backward (read e, write 4) and the
         * cat of t's gradients (read e, write e) */
        const double be = mem(w, LP_MEM_COPY, (4.0 + e) * n) +
                          2.0 * (mem(w, LP_MEM_COPY, 12.0 * n) + mem(w, LP_MEM_COPY, 4.0 * n));
        const double ba = mem(w, LP_MEM_COPY, (4.0 + e) * all) + mem(w, LP_MEM_COPY, 2.0 * e * all);
        addk(b, LP_OPC_MEM, be * local + ba);
        b->n += 5 * (int)local + 1;
    }
}

/* MoE block (Megatron-Core MoELayer with the all-to-all token dispatcher):
 * router and top-k, permutation, all-to-all dispatch over the EP group, the
 * local experts as grouped GEMMs, all-to-all combine, unpermutation; shared
 * experts as a dense MLP beside them. Experts are split over etp ranks
 * (expert tensor parallelism) and ep ranks (whole experts); the tokens this
 * rank routes are T etp / tp (with etp < tp the TP group's tokens are
 * routed separately). Dropless routing gives the busiest expert imbalance x
 * the mean; capacity routing pads every expert to the capacity factor. */
static void moe_block_eager(const struct wl *w, struct lp_layer_cost *c);

static void moe_block(const struct wl *w, struct lp_layer_cost *c)
{
    const struct lp_run *r = w->run;
    if (r->fw.moe_impl != LP_MOE_GROUPED) {
        moe_block_eager(w, c);
        return;
    }
    const struct lp_moe *moe = &r->model.moe;
    const double h = w->h, E = moe->experts, ep = r->par.ep, local = E / ep;
    const double lw = lp_arch_moe_width(&r->model); /* the routed tokens' width */
    const double etp = r->par.etp > 0 ? r->par.etp : w->t;
    const double Tr = w->T * etp / w->t; /* tokens this rank routes */
    const double load = moe->dropless ? moe->imbalance : moe->capacity_factor;
    /* tokens arriving at each local expert: ep ranks each route Tr * top_k
     * tokens spread over the E experts */
    const double te = Tr * ep * moe->top_k / E * load;
    const unsigned mods = lp_sim_rc_modules(r);
    struct acc f = {0}, b = {0}, rc = {0};
    elementwise(w, &f, &b);
    /* recompute module "layernorm": the MoE layer's pre-MLP norm is a
     * module of its own in Megatron-Core (the router and the shared experts
     * read it), unlike the norms TE fuses into LayerNormLinear/LayerNormMLP */
    if (mods & LP_RC_LAYERNORM) {
        struct acc nb = {0};
        block_norm(w, &rc, &nb);
    }
    /* the router (replicated; LoRA targets "all" or "moe"): Megatron-Core's
     * router_gating_linear, a Transformer Engine general_gemm of the bf16
     * input and weight into moe_router_dtype outside any quantiser
     * (Megatron-LM d98e8a6 moe/router.py gating, moe_utils.py
     * RouterGatingLinearFunction): in bf16 whatever the run's precision */
    struct wl wr = *w;
    wr.prec = w->aprec;
    wr.q = 0.0;
    linear_lora(&wr, w->T, E, h, &f, &b, true);
    addk(&f, LP_OPC_MEM, mem(w, LP_MEM_SOFTMAX, 2.0 * w->T * E * 4.0));
    addk(&b, LP_OPC_MEM, mem(w, LP_MEM_SOFTMAX, 3.0 * w->T * E * 4.0));
    /* the router and the dispatch preprocessing (with the permutation
     * below) replayed from a graph */
    const bool graph_router = (r->fw.cuda_graphs & LP_GRAPH_MOE_ROUTER) != 0;
    if (graph_router) {
        f.graphed = f.n + 1;
        b.graphed = b.n + 1;
    }
    /* The local experts' GEMMs (Megatron --moe-grouped-gemm: Transformer
     * Engine's GroupedLinear, grouped_linear.py -> general_grouped_gemm)
     * run as one cuBLAS GEMM per expert over te rows each, spread over a few
     * streams (a GEMM this size fills the GPU, so their times add), with the
     * inputs quantised per expert: each expert's kernels are launched by the
     * host; the activation is one kernel over all of them. */
    struct acc ef = {0}, eb = {0};
    double act = 0;
    ffn_core(w, te, lw, moe->ffn_hidden / etp, true, false, &ef, &eb, &act);
    if (mods & LP_RC_MOE_ACT) { /* "moe_act" (experts.py): the one activation kernel */
        rc.s += act * local;
        rc.n++;
        rc.cat[LP_OPC_MEM] += act * local;
    }
    ef.s *= local;
    eb.s *= local;
    for (int k = 0; k < LP_OPC_COUNT; k++) {
        ef.cat[k] *= local;
        eb.cat[k] *= local;
    }
    eb.wg *= local;
    eb.wn *= (int)local;
    ef.n = 1 + (int)local * (ef.n - 1);
    eb.n = 1 + (int)local * (eb.n - 1);
    f.s += ef.s;
    f.n += ef.n;
    b.s += eb.s;
    b.n += eb.n;
    for (int k = 0; k < LP_OPC_COUNT; k++) {
        f.cat[k] += ef.cat[k];
        b.cat[k] += eb.cat[k];
    }
    b.wg += eb.wg;
    b.wn += eb.wn;
    expert_extras(w, te, local, lw, moe->ffn_hidden / etp, &f, &b,
                  (mods & LP_RC_MOE_ACT) ? &rc : NULL);
    if (moe->shared_experts > 0) {
        const struct acc before = f;
        ffn_core(w, w->T, h, (double)moe->shared_experts * moe->shared_ffn_hidden / w->t, true,
                 false, &f, &b, NULL);
        if (mods & LP_RC_SHARED_EXPERTS) redo_since(&rc, &f, &before); /* "shared_experts" */
    }
    /* permutation copies of the routed tokens (permute and unpermute) */
    addk(&f, LP_OPC_MEM, mem(w, LP_MEM_COPY, 4.0 * Tr * moe->top_k * lw * w->e));
    addk(&b, LP_OPC_MEM, mem(w, LP_MEM_COPY, 4.0 * Tr * moe->top_k * lw * w->e));
    /* The all-to-all dispatcher's second permutation: the tokens arrive
     * grouped by source rank and are sorted by local expert before the
     * experts and back after them (token_dispatcher.py
     * MoEAlltoAllTokenDispatcher.dispatch_postprocess / combine_preprocess,
     * sort_chunks_by_idxs, one fused kernel each with moe_permute_fusion;
     * with capacity routing padded to the capacity, a transpose copy);
     * HybridEP and DeepEP lay the tokens out by expert as they receive them */
    if (r->fw.dispatcher != LP_DISPATCH_HYBRIDEP && r->par.ep > 1 && local > 1) {
        const double sort = mem(w, LP_MEM_COPY, 2.0 * Tr * moe->top_k * load * lw * w->e);
        addk(&f, LP_OPC_MEM, sort);
        addk(&f, LP_OPC_MEM, sort);
        addk(&b, LP_OPC_MEM, sort);
        addk(&b, LP_OPC_MEM, sort);
    }
    if (moe->latent > 0) { /* LatentMoE: to the latent width before routing, and back */
        const struct wl wl = module_wl(w, LP_QMOD_LATENT); /* fc1/fc2_latent_proj */
        linear(&wl, w->T, lw, h, &f, &b);
        linear(&wl, w->T, h, lw, &f, &b);
    }
    /* dispatch and combine: the same volume each way */
    const double a2a = 2.0 * dispatch_time(w, Tr * load * lw * w->e, (int)etp);
    /* the expert-TP group gathers its tokens and reduce-scatters the
     * result; the shared experts and the rest of the layer use the TP group */
    double tpc = etp > 1 ? tp_comm(w, false) : 0.0;
    if (moe->shared_experts > 0 && etp < w->t) tpc += tp_comm(w, false);
    /* Megatron-Core's combined 1F1B (overlap_moe_expert_parallel_comm)
     * runs one micro-batch's forward beside another's backward, layer by
     * layer (Megatron-LM d98e8a6, models/common/model_chunk_schedule_plan.py
     * TransformerLayerSchedulePlan.run), on two streams:
     *   comm: combine_bwd       | dispatch_fwd -> dispatch_bwd | combine_fwd
     *   comp: pre_dispatch_fwd  | mlp_bwd -> mlp_fwd           | pre_dispatch_bwd
     * so each pass's dispatch hides behind the other pass's experts (this
     * block) and its combine behind the other pass's pre-dispatch work (the
     * layer's mixer, w->pre_f / pre_b): four overlaps of one all-to-all each.
     * While a hidden all-to-all runs, its kernels hold dispatch_sms of the
     * GPU's SMs and the compute beside it runs on the rest: the compute
     * loses hidden x sms / SMs, as the DP collectives' contention (sim.c) */
    double comm_f = tpc + a2a, comm_b = tpc + a2a;
    if (r->fw.ep_overlap) {
        const double one = 0.5 * a2a; /* a dispatch or a combine */
        const double sms = r->system.gpu.sms;
        const double share = sms > 0 ? fmin(1.0, dispatch_sms(r) / sms) : 0.0;
        const double hid_f = fmin(one, b.s) + fmin(one, w->pre_b);
        const double hid_b = fmin(one, f.s) + fmin(one, w->pre_f);
        comm_f = tpc + (2.0 * one - hid_f) + hid_f * share;
        comm_b = tpc + (2.0 * one - hid_b) + hid_b * share;
    }
    int ncoll = (tpc > 0 ? (r->par.sequence_parallel ? 2 : 1) : 0) + (r->par.ep > 1 ? 2 : 0);
    /* cuda_graphs "moe": the whole block, its all-to-alls and every
     * expert's kernels, replayed from one graph, as Megatron-Core's
     * cuda_graph_scope "moe" (and the whole-layer graphs of
     * enable_cuda_graph, core 0.14: TransformerLayer under
     * CudaGraphManager) capture it. A graph needs fixed shapes: Megatron-Core
     * allows it only with token dropping padded to the capacity
     * (transformer_config.py: "moe cuda graph is only supported with
     * drop-padding MoE"), so dropless blocks stay eager. */
    if ((r->fw.cuda_graphs & LP_GRAPH_MOE) && !moe->dropless) {
        f.graphed = f.n;
        b.graphed = b.n;
        ncoll = 0;
    }
    /* recompute module "moe" (moe_layer.py MoELayer.forward: custom_forward
     * under tensor_parallel.checkpoint, or te_checkpoint in fp8/fp4): the
     * whole layer is rerun in the backward, router, shared experts,
     * permutation, the dispatch and combine (with their host
     * synchronisation) and the experts, as a full recomputation would. The
     * finer modules add to it: the first pass runs without grad, so their
     * CheckpointWithoutOutput registers nothing, but the recomputing pass
     * runs with grad and discards and reruns them once more in the
     * backward ("moe_act", "shared_experts"); "layernorm"'s pre-MLP norm is
     * outside the MoE layer (transformer_layer.py pre_mlp_norm_checkpoint),
     * so it is rerun either way */
    const bool whole = (mods & LP_RC_MOE) != 0;
    close_block(w, c, &f, &b, &rc, comm_f, comm_b, ncoll, false);
    if (whole) {
        c->recompute_s += c->full_s;
        c->comm_recompute_s += c->comm_full_s;
    }
}

/* The backward of an advanced indexing of a (T, width) tensor in an eager
 * loop, beyond the index_put of the gathered rows: autograd's IndexBackward0
 * scatters into a zeroed tensor of the whole indexed shape (torch 2.1
 * tools/autograd/derivatives.yaml, index.Tensor: index_backward(grad.
 * new_zeros(self.sizes()), indices, grad), then _index_put_impl_ with
 * accumulate), and the engine adds that whole-size gradient into the ones
 * the indexed tensor already received (torch/csrc/autograd/input_buffer.cpp,
 * accumulate: old_var.add_(var) or old_var + var; both read two and write
 * one). So each expert of the loop costs the backward a memset and an add
 * over all T tokens, whichever tokens it routed. Kernels of the backward
 * node and of the engine, no Python op of their own (add_native). */
static void index_grads_full(const struct wl *w, double width, struct acc *b)
{
    const double x = w->T * width * w->e;
    add_native(b, LP_OPC_MEM, mem(w, LP_MEM_COPY, x));           /* new_zeros */
    add_native(b, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 3.0 * x)); /* input buffer add */
}

/* One expert of the eager loop on n tokens (Transformers
 * modeling_mixtral.py, MixtralSparseMoeBlock.forward and
 * MixtralBlockSparseTop2MLP): gather the expert's tokens, w1 and w3 with
 * SiLU(w1 x) * w3 x, w2, scale by the routing weight, index_add_ into the
 * output; backward the reverse (index_add_'s gradient is an index_select,
 * each gather's an index_put into zeros of the whole input, added to its
 * gradient: index_grads_full). */
static void expert_eager(const struct wl *w, double n, double ft, struct acc *f, struct acc *b)
{
    const double h = w->h, e = w->e;
    const bool adapt = true; /* LoRA targets "all" and "moe" both adapt the experts */
    addk(f, LP_OPC_MEM, mem(w, LP_MEM_COPY, 2.0 * n * h * e));      /* hidden_states[top_x] */
    linear_lora(w, n, ft, h, f, b, adapt);                          /* w1 */
    linear_lora(w, n, ft, h, f, b, adapt);                          /* w3 */
    addk(f, LP_OPC_MEM, mem(w, LP_MEM_SWIGLU, 2.0 * n * ft * e));   /* act_fn(w1 x) */
    addk(f, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 3.0 * n * ft * e)); /* * w3 x */
    /* mul backward: grad x w3 x and grad x silu, each reading two, writing one */
    addk(b, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 3.0 * n * ft * e));
    addk(b, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 3.0 * n * ft * e));
    addk(b, LP_OPC_MEM, mem(w, LP_MEM_SWIGLU, 3.0 * n * ft * e));  /* silu backward */
    linear_lora(w, n, h, ft, f, b, adapt);                         /* w2 */
    addk(f, LP_OPC_MEM, mem(w, LP_MEM_COPY, n * 16.0));            /* routing_weights[top_x, idx] */
    addk(f, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 2.0 * n * h * e)); /* * routing weight */
    addk(f, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 3.0 * n * h * e)); /* index_add_ */
    addk(b, LP_OPC_MEM, mem(w, LP_MEM_COPY, 2.0 * n * h * e));     /* index_select of the grad */
    addk(b, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 3.0 * n * h * e)); /* mul backward: grad x w */
    addk(b, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 2.0 * n * h * e)); /* and the weight's grad */
    addk(b, LP_OPC_MEM, mem(w, LP_MEM_RESIDUAL, 3.0 * n * h * e)); /* gather backward */
    index_grads_full(w, h, b);                                     /* hidden_states[None, top_x] */
    index_grads_full(w, (double)w->run->model.moe.top_k, b);       /* routing_weights[top_x, idx] */
}

/* Host synchronisations per expert of the eager loop (Transformers
 * 4.36-4.40, MixtralSparseMoeBlock.forward: "in torch it is faster to index
 * using lists than torch tensors"): torch.where on the expert mask
 * (nonzero: the host waits for the output size), the two .tolist() copies
 * of its indices, and the three Python lists indexing again:
 * hidden_states[None, top_x_list] and routing_weights[top_x_list,
 * idx_list, None]. PyTorch turns each list into an index tensor on the
 * indexed tensor's device (torch/csrc/autograd/python_variable_indexing.cpp,
 * sequenceToVariable(self.options(), obj)): built on the host, copied with
 * non_blocking false, which aten/src/ATen/native/cuda/Copy.cu
 * (copy_kernel_cuda -> memcpy_and_sync) ends with cudaStreamSynchronize. */
#define EAGER_SYNCS_PER_EXPERT 6
/* moe_impl "switch": Megatron-LM's SwitchMLP loop as BlackMamba runs it
 * (stsxxx/finetune BlackMamba/switch_mlp.py, as Zyphra/BlackMamba 5c8cddd):
 * (global_indices == expert).nonzero() is its one synchronisation; it
 * indexes with that tensor (no lists). Its kernels are taken as the loop's
 * above: its `output_total[idx] += ...` (a gather, an add and an index_put
 * where Mixtral has one index_add_) is not told apart. */
#define SWITCH_SYNCS_PER_EXPERT 1

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
    double comm = tp_comm(w, false);
    int ncoll = w->t > 1 ? (r->par.sequence_parallel ? 2 : 1) : 0;
    close_block(w, c, &f, &b, NULL, comm, comm, ncoll, false);
    host_syncs(
        w, c,
        E * (r->fw.moe_impl == LP_MOE_SWITCH ? SWITCH_SYNCS_PER_EXPERT : EAGER_SYNCS_PER_EXPERT));
}

/* llm-foundry's training metrics (ComposerMPTCausalLM.__init__, v0.3.0:
 * train_metrics = [LanguageCrossEntropy(), LanguagePerplexity()]; the
 * perplexity subclasses the cross-entropy and recomputes it). */
#define TRAIN_METRIC_XENTS 2

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
    /* with SP the partial embeddings are reduce-scattered into the sequence
     * shards (Megatron VocabParallelEmbedding, reduce_scatter_embeddings) */
    const double emb_comm = w->t > 1 && r->par.sequence_parallel
                                ? coll(w, LP_COLL_REDUCESCATTER, T * h * w->e, w->t, 1)
                                : tp_ar;
    e->emb_fwd_s = mem(w, LP_MEM_EMBEDDING, 2.0 * T * h * w->e) + emb_comm;
    if (r->model.pos == LP_POS_LEARNED) e->emb_fwd_s += mem(w, LP_MEM_RESIDUAL, 3.0 * T * h * w->e);
    e->emb_bwd_s = mem(w, LP_MEM_EMBEDDING, T * h * (w->e + 8.0));
    /* the embedding table's gradient is accumulated too (tied to the head
     * on one stage: autograd sums both uses before one AccumulateGrad, which
     * the head's linear already charges) */
    double acc_s[2] = {0, 0};
    bool eager;
    const int nacc = r->model.tied_embeddings && r->par.pp == 1
                         ? 0
                         : ds_grad_accum(w, padded_vocab(r) / w->t * h, acc_s, &eager);
    for (int i = 0; i < nacc; i++)
        e->emb_bwd_s += acc_s[i];
    /* head: final norm, logits GEMM, vocab-parallel cross-entropy (three
     * all-reduces of T floats: max, sum-exp, target logit) */
    struct acc f = {0}, b = {0};
    addk(&f, LP_OPC_MEM, mem(w, w->norm, 2.0 * w->Tn * h * w->e));
    addk(&b, LP_OPC_MEM, mem(w, w->norm, 3.0 * w->Tn * h * w->e));
    /* the logits GEMM runs in 16 bits under fp8-family training: Megatron-
     * Core's output layer is its own tensor_parallel.ColumnParallelLinear,
     * not a Transformer Engine module, and the fp8_autocast wraps the
     * transformer block only (core_r0.8.0 baf94af gpt_model.py, transformer_
     * block.py forward; at d98e8a6 only the opt-in MXFP8 fp8_output_proj
     * swaps in TELMHeadColumnParallelLinear), so no quantisation either */
    struct wl wh = *w;
    wh.prec = w->aprec;
    wh.q = 0.0;
    linear(&wh, T, vt, h, &f, &b);
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
    case LP_XENT_UPCAST:  /* Transformers (modeling_mixtral.py MixtralForCausalLM.forward):
                           * logits.float(), logits[..., :-1, :].contiguous(), then
                           * CrossEntropyLoss (log_softmax + nll) on fp32; backward:
                           * nll's zero-filled gradient, log_softmax backward, the
                           * slice's and the cast's gradients */
    case LP_XENT_FLOAT: { /* torchtitan (train.py @9dec370 loss_fn): the same without
                           * the shifted copy and its gradient (the labels come
                           * shifted): cross_entropy(pred.flatten(0, 1).float()) */
        const bool shift = r->fw.xent == LP_XENT_UPCAST;
        addk(&f, LP_OPC_MEM, mem(w, LP_MEM_COPY, L * (eb + 4.0)));
        if (shift) addk(&f, LP_OPC_MEM, mem(w, LP_MEM_COPY, L * 8.0));
        addk(&f, LP_OPC_MEM, mem(w, LP_MEM_CROSS_ENTROPY, L * 8.0));
        addk(&b, LP_OPC_MEM, mem(w, LP_MEM_COPY, L * 4.0));
        addk(&b, LP_OPC_MEM, mem(w, LP_MEM_CROSS_ENTROPY, L * 12.0));
        if (shift) addk(&b, LP_OPC_MEM, mem(w, LP_MEM_COPY, L * 12.0));
        addk(&b, LP_OPC_MEM, mem(w, LP_MEM_COPY, L * (4.0 + eb)));
        break;
    }
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
    if (r->fw.train_metrics) {
        /* Composer's Trainer (_train_microbatch -> _eval_train_metrics,
         * 0.12-0.16) updates the model's training metrics on each
         * micro-batch's logits after its backward, under the bf16 autocast
         * context; llm-foundry's MPT and HF causal LMs train with
         * LanguageCrossEntropy and LanguagePerplexity, each
         * CrossEntropyLoss(reduction='sum') on the logits: autocast runs
         * log_softmax in fp32 (a bf16 -> fp32 copy, then the native pass),
         * nll_loss gathers T values. No gradient. */
        for (int i = 0; i < TRAIN_METRIC_XENTS; i++) {
            addk(&b, LP_OPC_MEM, mem(w, LP_MEM_COPY, L * (eb + 4.0)));
            addk(&b, LP_OPC_MEM, mem(w, LP_MEM_CROSS_ENTROPY, L * 8.0));
        }
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
    f.lockstep = w->lockstep;
    f.comm = comm_f;
    b.comm = comm_b;
    e->head_fwd_s = with_overhead(w, &f, w->t > 1 ? 4 : 0) + comm_f;
    e->head_bwd_s = with_overhead(w, &b, w->t > 1 ? 1 : 0) + comm_b;
    if (r->model.mtp_layers > 0) {
        /* an MTP module (DeepSeek-V3 Sec 2.2; Megatron-Core
         * MultiTokenPredictionLayer) beside its transformer layer: the
         * embedding of the shifted tokens, the two norms, the projection of
         * [h; emb] to h (column-parallel), and the shared head and loss */
        struct acc pf = {0}, pb = {0};
        norm_kernels(w, w->T, h, &pf, &pb);
        norm_kernels(w, w->T, h, &pf, &pb);
        linear(w, T, h / w->t, 2.0 * h, &pf, &pb);
        throttle(w, &pf, 0);
        throttle(w, &pb, 0);
        e->mtp_fwd_s = e->emb_fwd_s + e->head_fwd_s + with_overhead(w, &pf, 0);
        e->mtp_bwd_s = e->emb_bwd_s + e->head_bwd_s + with_overhead(w, &pb, 0);
    }
}

static void shape_cost(const struct lp_cost_model *cm, const struct lp_run *run,
                       struct lp_shape_cost *out, int order_mix, int order_ffn,
                       struct lp_op_order *order);

void lp_shape_cost_compute(const struct lp_cost_model *cm, const struct lp_run *run,
                           struct lp_shape_cost *out)
{
    shape_cost(cm, run, out, -1, -1, NULL);
}

void lp_shape_cost_order(const struct lp_cost_model *cm, const struct lp_run *run, int mix, int ffn,
                         struct lp_op_order *out)
{
    struct lp_shape_cost scratch;
    memset(out, 0, sizeof(*out));
    shape_cost(cm, run, &scratch, mix, ffn, out);
}

/* The mean kernel time (forward, backward) of the mixers of the model's MoE
 * layers, from their blocks' costs: none for a MoE layer of its own (a
 * hybrid pattern's 'E'). */
static void moe_mixer_time(const struct lp_model *m, const struct lp_shape_cost *sc, double *f,
                           double *b)
{
    *f = *b = 0.0;
    int n = 0;
    for (int i = 0; i < m->layers; i++) {
        enum lp_mixer mx;
        enum lp_ffn ff;
        lp_arch_layer(m, i, &mx, &ff);
        if (ff != LP_FFN_MOE) continue;
        n++;
        if (mx == LP_MIX_NONE) continue;
        const struct lp_layer_cost *c = &sc->mix[mx];
        for (int k = 0; k < LP_OPC_OVERHEAD; k++) { /* GEMM, attention, memory-bound */
            *f += c->op_fwd[k];
            *b += c->op_bwd[k];
        }
    }
    if (n > 0) {
        *f /= n;
        *b /= n;
    }
}

static void shape_cost(const struct lp_cost_model *cm, const struct lp_run *run,
                       struct lp_shape_cost *out, int order_mix, int order_ffn,
                       struct lp_op_order *order)
{
    const struct lp_model *m = &run->model;
    struct wl w;
    memset(out, 0, sizeof(*out));
    w.order = NULL;
    w.pre_f = w.pre_b = 0.0;
    w.cm = cm;
    w.run = run;
    w.prec = run->train.precision;
    /* attention, norms and the rest stay in bf16 under fp8-family training */
    w.aprec = lp_prec_table(w.prec) == LP_FP8 ? LP_BF16 : w.prec;
    w.e = w.prec == LP_FP32 ? 4.0 : 2.0;
    w.q = quant_bytes(w.prec);
    w.t = run->par.tp;
    w.T = (double)run->par.micro_batch * m->seq_len / run->par.cp;
    w.Tn = run->par.sequence_parallel ? w.T / w.t : w.T;
    w.h = m->hidden;
    w.d = lp_arch_head_dim(m);
    w.at = (double)m->heads / w.t;
    w.gt = (double)m->kv_heads / w.t;
    w.norm = m->norm == LP_NORM_RMSNORM ? LP_MEM_RMSNORM : LP_MEM_LAYERNORM;

    /* the blocks this model's layers (and MTP modules) use */
    bool mix[LP_MIX_COUNT] = {false}, ffn[LP_FFN_COUNT] = {false};
    for (int i = 0; i < m->layers; i++) {
        enum lp_mixer mx;
        enum lp_ffn ff;
        lp_arch_layer(m, i, &mx, &ff);
        mix[mx] = ffn[ff] = true;
    }
    /* Dropless MoE with Megatron-Core's all-to-all dispatcher: each MoE
     * layer's forward copies the per-expert token counts to the host and
     * synchronises (token_dispatcher.py, _maybe_dtoh_and_synchronize at the
     * cuda_sync_point) before the all-to-all, whose split sizes it needs.
     * The host then cannot queue work ahead of the GPU: from one MoE layer
     * to the next, host and GPU take turns (the forward's host time adds,
     * p = 1). The backward knows its splits already and runs ahead as usual.
     * Capacity routing has fixed shapes and no synchronisation. */
    w.lockstep = ffn[LP_FFN_MOE] && m->moe.dropless;
    /* the layer's mixer, then its FFN (recorded when asked) */
    w.order = order_mix == LP_MIX_ATTN ? order : NULL;
    if (mix[LP_MIX_ATTN]) attention_block(&w, &out->mix[LP_MIX_ATTN], false);
    w.order = order_mix == LP_MIX_ATTN_LOCAL ? order : NULL;
    if (mix[LP_MIX_ATTN_LOCAL]) attention_block(&w, &out->mix[LP_MIX_ATTN_LOCAL], true);
    w.order = order_mix == LP_MIX_MAMBA ? order : NULL;
    if (mix[LP_MIX_MAMBA]) mamba_block(&w, &out->mix[LP_MIX_MAMBA]);
    w.order = order_ffn == LP_FFN_DENSE ? order : NULL;
    if (ffn[LP_FFN_DENSE]) mlp_block(&w, &out->ffn[LP_FFN_DENSE]);
    w.order = order_ffn == LP_FFN_MOE ? order : NULL;
    if (ffn[LP_FFN_MOE]) {
        moe_mixer_time(m, out, &w.pre_f, &w.pre_b);
        moe_block(&w, &out->ffn[LP_FFN_MOE]);
    }
    w.order = NULL;
    {
        struct acc nf = {0}, nb = {0};
        block_norm(&w, &nf, &nb);
        out->norm_fwd_s = nf.s;
        out->norm_bwd_s = nb.s;
    }
    edges(&w, &out->edge);
    /* p2p between stages: the activation of one micro-batch, split over the
     * TP ranks (scatter/gather optimisation, Narayanan et al. 2021 Sec 4.1) */
    out->p2p_bytes = w.T * w.h * w.e / w.t;
}
