/* One training iteration of one configuration: validity, memory, schedule,
 * data-parallel communication, optimizer, and cost.
 *
 * FLOPs (for TFLOP/s and MFU) are *model* FLOPs, recomputation excluded
 * (Korthikanti et al. 2022, Appendix; Megatron-LM 2022+):
 *   per token per layer, forward: 2 * (h*d*(a + 2g) + a*d*h + n_mat*h*f) + 4*s*h
 *   (QKV, output projection, MLP matrices; QK^T and AV, no causal halving),
 *   logits 2*h*V; training = 3x forward (2x for LoRA fine-tuning: no weight
 *   gradients of the frozen base). For GPT-3 shapes (g = a, f = 4h,
 *   n_mat = 2) this is 72*B*s*l*h^2*(1 + s/(6h) + V/(12*l*h)) per iteration.
 *   MoE layers count top_k experts' MLP per token (and the router). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmplan/arch.h"
#include "sim_internal.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
/* CUDA context, cuBLAS/NCCL workspaces and allocator slack not visible to the
 * model; typical PyTorch reserved-vs-allocated gap (stated, not fitted). */
#define RUNTIME_RESERVE_BYTES (1.0 * GIB)
/* Overlapped communication is not free: NCCL runs one CTA per channel on its
 * own SM, so while a collective overlaps compute the kernels have that many
 * fewer SMs. 16 channels is NCCL's usual ring/tree channel count on NVSwitch
 * nodes (stated, not fitted); the compute slowdown is hidden time x 16/SMs. */
#define NCCL_CHANNEL_SMS 16.0
/* Layer kinds: a mixer and an FFN (arch.h), numbered mixer * LP_FFN_COUNT
 * + ffn. */
#define NKIND (LP_MIX_COUNT * LP_FFN_COUNT)
/* Virtual stages (pp * vp) the simulator handles. */
#define MAX_VSTAGES LP_SCHED_MAX_VSTAGES

static const char *const reason_names[LP_REASON_COUNT] = {
    "none", "out_of_memory", "gpu_count", "tp_heads", "tp_ffn",    "pp_layers", "batch", "cp_seq",
    "ep",   "schedule",      "sp",        "zero",     "precision", "tp_node",   "range", "numeric"};

const char *lp_op_class_name(enum lp_op_class c)
{
    static const char *const names[LP_OPC_COUNT] = {"gemm", "attention", "memory_bound",
                                                    "kernel_overhead", "collectives"};
    return (unsigned)c < LP_OPC_COUNT ? names[c] : "?";
}

const char *lp_reason_name(enum lp_reason r)
{
    return (unsigned)r < LP_REASON_COUNT ? reason_names[r] : "?";
}

void lp_result_reason(const struct lp_result *r, char *buf, size_t len)
{
    switch (r->reason) {
    case LP_REASON_NONE:
        snprintf(buf, len, "feasible");
        break;
    case LP_REASON_OOM:
        snprintf(buf, len, "out of memory: %.1f GiB > %.1f GiB", r->reason_a / GIB,
                 r->reason_b / GIB);
        break;
    case LP_REASON_GPU_COUNT:
        snprintf(buf, len, "tp*pp*dp*cp does not match the GPU count");
        break;
    case LP_REASON_TP_HEADS:
        snprintf(buf, len, "tp (%g) does not divide heads or kv heads (%g)", r->reason_a,
                 r->reason_b);
        break;
    case LP_REASON_TP_FFN:
        snprintf(buf, len, "tp (%g) does not divide ffn hidden (%g)", r->reason_a, r->reason_b);
        break;
    case LP_REASON_PP_LAYERS:
        snprintf(buf, len,
                 "no split of the layers (%g) over pp*vp (%g) stages without an empty one",
                 r->reason_b, r->reason_a);
        break;
    case LP_REASON_BATCH:
        snprintf(buf, len, "micro_batch*dp (%g) does not divide global batch (%g)", r->reason_a,
                 r->reason_b);
        break;
    case LP_REASON_CP_SEQ:
        snprintf(buf, len, "2*cp (%g) does not divide the sequence (%g)", r->reason_a, r->reason_b);
        break;
    case LP_REASON_EP:
        snprintf(buf, len,
                 "ep must divide the experts and ep*etp divide tp*cp*dp; ep = etp = 1 for a dense "
                 "model");
        break;
    case LP_REASON_SCHEDULE:
        snprintf(buf, len,
                 "interleaved needs vp > 1, pp > 1 and micro-batches divisible by pp; "
                 "vp > 1 needs the interleaved schedule");
        break;
    case LP_REASON_SP:
        snprintf(buf, len, "sequence parallelism needs tp > 1");
        break;
    case LP_REASON_ZERO:
        snprintf(buf, len, "zero 3 with pipeline parallelism is not supported");
        break;
    case LP_REASON_PRECISION:
        snprintf(buf, len, "the GPU has no tensor-core peak for this precision");
        break;
    case LP_REASON_TP_NODE:
        snprintf(buf, len, "tp (%g) larger than the scale-up domain (%g GPUs)", r->reason_a,
                 r->reason_b);
        break;
    case LP_REASON_RANGE:
        snprintf(buf, len, "%s %.0f exceed the supported maximum %.0f",
                 r->reason_b == LP_MAX_GPUS ? "GPUs (tp*pp*dp*cp)" : "micro-batches x vp",
                 r->reason_a, r->reason_b);
        break;
    case LP_REASON_NUMERIC:
        snprintf(buf, len,
                 "the simulated iteration time (%g s) or cost is not a finite positive number "
                 "(check the kernel profile's values)",
                 r->reason_a);
        break;
    default:
        snprintf(buf, len, "unknown reason");
        break;
    }
}

/* ---- validity ---- */

static int64_t micro_batches(const struct lp_run *r)
{
    return r->train.global_batch / ((int64_t)r->par.micro_batch * r->par.dp);
}

/* Products of parallel degrees and the micro-batch count stay within int
 * (every later product of them, such as pp*vp or dp*cp, is then an int):
 * LP_MAX_GPUS, LP_MAX_MICROBATCHES. Degrees are >= 1 here. */
static enum lp_reason check_range(const struct lp_run *r, double *a, double *b)
{
    const struct lp_parallel *p = &r->par;
    int64_t gpus = (int64_t)p->tp * p->pp;
    gpus = gpus > LP_MAX_GPUS ? gpus : gpus * p->cp;
    gpus = gpus > LP_MAX_GPUS ? gpus : gpus * p->dp;
    if (gpus > LP_MAX_GPUS || (int64_t)p->pp * p->vp > LP_MAX_GPUS ||
        (int64_t)p->ep > LP_MAX_GPUS) {
        *a = (double)p->tp * p->pp * p->cp * p->dp;
        *b = LP_MAX_GPUS;
        return LP_REASON_RANGE;
    }
    const int64_t micro = micro_batches(r);
    if (micro > LP_MAX_MICROBATCHES / p->vp) {
        *a = (double)micro * p->vp;
        *b = LP_MAX_MICROBATCHES;
        return LP_REASON_RANGE;
    }
    return LP_REASON_NONE;
}

static enum lp_reason validate(const struct lp_run *r, double *a, double *b)
{
    const struct lp_parallel *p = &r->par;
    const struct lp_model *m = &r->model;
    *a = *b = 0;
    if (p->tp < 1 || p->pp < 1 || p->dp < 1 || p->cp < 1 || p->ep < 1 || p->vp < 1 ||
        p->micro_batch < 1)
        return LP_REASON_GPU_COUNT;
    enum lp_reason range = check_range(r, a, b);
    if (range != LP_REASON_NONE) return range;
    /* TP groups stay inside the scale-up domain (NVLink): Megatron places
     * TP innermost and no framework runs it over the network */
    if (p->tp > lp_system_scale_up(&r->system)) {
        *a = p->tp;
        *b = lp_system_scale_up(&r->system);
        return LP_REASON_TP_NODE;
    }
    if (m->heads % p->tp || m->kv_heads % p->tp) {
        *a = p->tp;
        *b = m->kv_heads % p->tp ? m->kv_heads : m->heads;
        return LP_REASON_TP_HEADS;
    }
    if (m->mamba.version > 0) { /* Mamba heads and B/C groups split over TP */
        int nh = (int)lp_arch_mamba_heads(m), G = m->mamba.n_groups > 0 ? m->mamba.n_groups : 1;
        if ((m->mamba.version == 2 && (nh % p->tp || G % p->tp)) ||
            (int64_t)lp_arch_mamba_inner(m) % p->tp) {
            *a = p->tp;
            *b = m->mamba.version == 2 ? (nh % p->tp ? nh : G) : lp_arch_mamba_inner(m);
            return LP_REASON_TP_HEADS;
        }
    }
    const int etp = p->etp > 0 ? p->etp : p->tp;
    int ffn = m->moe.experts > 0 ? m->moe.ffn_hidden : m->ffn_hidden;
    if (m->ffn_hidden % p->tp || ffn % etp ||
        (m->moe.shared_experts > 0 && m->moe.shared_ffn_hidden % p->tp)) {
        *a = m->ffn_hidden % p->tp ? p->tp : etp;
        *b = m->ffn_hidden % p->tp ? m->ffn_hidden : ffn;
        return LP_REASON_TP_FFN;
    }
    int first[MAX_VSTAGES + 1];
    if (lp_arch_split(m, p, first, MAX_VSTAGES + 1) != 0) {
        *a = (double)p->pp * p->vp;
        *b = m->layers;
        return LP_REASON_PP_LAYERS;
    }
    int64_t mbdp = (int64_t)p->micro_batch * p->dp;
    if (r->train.global_batch % mbdp) {
        *a = (double)mbdp;
        *b = (double)r->train.global_batch;
        return LP_REASON_BATCH;
    }
    if (p->cp > 1 && m->seq_len % (2 * p->cp)) {
        *a = 2 * p->cp;
        *b = m->seq_len;
        return LP_REASON_CP_SEQ;
    }
    /* MoE parallel folding (Megatron-Core): the expert layers' EP x ETP x
     * expert-DP grid covers the dense layers' TP x CP x DP ranks */
    if (m->moe.experts == 0
            ? p->ep != 1 || p->etp > 1
            : (m->moe.experts % p->ep || ((int64_t)p->tp * p->cp * p->dp) % ((int64_t)p->ep * etp)))
        return LP_REASON_EP;
    int64_t micro = r->train.global_batch / mbdp;
    if (p->vp > 1) {
        if (p->schedule != LP_SCHED_INTERLEAVED || p->pp < 2 || micro % p->pp)
            return LP_REASON_SCHEDULE;
    } else if (p->schedule == LP_SCHED_INTERLEAVED) {
        return LP_REASON_SCHEDULE;
    }
    if (p->sequence_parallel && p->tp < 2) return LP_REASON_SP;
    if (p->zero < 0 || p->zero > 3 || (p->zero == 3 && p->pp > 1)) return LP_REASON_ZERO;
    if (r->system.gpu.peak_flops[r->train.precision] <= 0) return LP_REASON_PRECISION;
    return LP_REASON_NONE;
}

enum lp_reason lp_sim_validate(const struct lp_run *run)
{
    double a, b;
    return validate(run, &a, &b);
}

/* ---- parameters and memory ---- */

static int kind_of(const struct lp_model *m, int i)
{
    enum lp_mixer mx;
    enum lp_ffn ff;
    lp_arch_layer(m, i, &mx, &ff);
    return (int)mx * LP_FFN_COUNT + (int)ff;
}

/* The layer kinds a model has (most have one to three of the NKIND), the
 * last layer's (MTP modules repeat it), and optionally per-kind prefix
 * counts over the layers, so that a chunk's kinds cost O(kinds), not
 * O(layers). */
struct kinds {
    const struct lp_model *m;
    int n, id[NKIND], last;
    const int *prefix; /* [j * (layers + 1) + i]: layers of kind id[j] among the first i */
};

static void kinds_scan(const struct lp_model *m, struct kinds *ks, int *prefix, int cap)
{
    bool seen[NKIND] = {false};
    ks->m = m;
    ks->n = 0;
    ks->prefix = NULL;
    for (int i = 0; i < m->layers; i++) {
        int k = kind_of(m, i);
        if (!seen[k]) ks->id[ks->n++] = k;
        seen[k] = true;
    }
    ks->last = kind_of(m, m->layers - 1);
    const int L = m->layers;
    if (!prefix || (int64_t)ks->n * (L + 1) > cap) return;
    for (int j = 0; j < ks->n; j++) {
        int *q = prefix + (size_t)j * (size_t)(L + 1);
        q[0] = 0;
        for (int i = 0; i < L; i++)
            q[i + 1] = q[i] + (kind_of(m, i) == ks->id[j]);
    }
    ks->prefix = prefix;
}

/* The layer kinds on virtual stage vs, counted into n[NKIND]. */
/* A full recomputation that redoes every layer (recompute_method uniform,
 * or block without a layer count). */
static bool full_covers_all(const struct lp_parallel *p)
{
    return p->recompute == LP_RECOMPUTE_FULL &&
           (p->recompute_method != LP_RC_BLOCK || p->recompute_layers <= 0);
}

/* Layers [a, b) by kind. */
static void range_kinds(const struct kinds *ks, int a, int b, int n[NKIND])
{
    memset(n, 0, NKIND * sizeof(int));
    if (ks->prefix) {
        const int L1 = ks->m->layers + 1;
        for (int j = 0; j < ks->n; j++) {
            const int *q = ks->prefix + (size_t)j * (size_t)L1;
            n[ks->id[j]] = q[b] - q[a];
        }
        return;
    }
    for (int i = a; i < b; i++)
        n[kind_of(ks->m, i)]++;
}

static void chunk_kinds(const struct kinds *ks, const int *first, int vs, int n[NKIND])
{
    range_kinds(ks, first[vs], first[vs + 1], n);
}

/* The layers of virtual stage vs a full recomputation redoes, by kind
 * (Megatron-Core transformer_block.py, _checkpointed_forward): all of them
 * (uniform), the first recompute_layers of the chunk (block), or none. */
static void full_kinds(const struct kinds *ks, const struct lp_parallel *p, const int *first,
                       int vs, int nr[NKIND])
{
    if (p->recompute != LP_RECOMPUTE_FULL) {
        memset(nr, 0, NKIND * sizeof(int));
    } else if (full_covers_all(p)) {
        chunk_kinds(ks, first, vs, nr);
    } else {
        const int a = first[vs], n = first[vs + 1] - a;
        range_kinds(ks, a, a + (p->recompute_layers < n ? p->recompute_layers : n), nr);
    }
}

static double etp_of(const struct lp_run *r)
{
    return r->par.etp > 0 ? r->par.etp : r->par.tp;
}

/* Parameters of one layer of kind k on one rank. */
static double kind_params(const struct lp_run *r, int k)
{
    const double t = r->par.tp;
    return lp_arch_mixer_params(&r->model, (enum lp_mixer)(k / LP_FFN_COUNT), t) +
           lp_arch_ffn_params(&r->model, (enum lp_ffn)(k % LP_FFN_COUNT), t, etp_of(r), r->par.ep);
}

/* LoRA adapters of rank r on every linear of a layer of kind k (Hu et al.
 * 2021): r (in + out) parameters each, split over TP like its weight. The
 * attention and MLP linears as the model has them; an expert's adapters per
 * local expert. */
static double kind_lora(const struct lp_run *r, int k)
{
    const struct lp_model *m = &r->model;
    const double rk = r->train.lora_rank, t = r->par.tp, h = m->hidden;
    const double d = lp_arch_head_dim(m), nmat = m->ffn_act == LP_ACT_SWIGLU ? 3.0 : 2.0;
    /* targets "moe" (Xia et al. 2024): the experts and routers only */
    const bool all = r->train.lora_targets == LP_LORA_ALL;
    const enum lp_mixer mx = all ? (enum lp_mixer)(k / LP_FFN_COUNT) : LP_MIX_NONE;
    const enum lp_ffn ff = (enum lp_ffn)(k % LP_FFN_COUNT);
    double p = 0;
    if (mx == LP_MIX_ATTN || mx == LP_MIX_ATTN_LOCAL)
        p += rk * (h + (m->heads + 2.0 * m->kv_heads) * d + m->heads * d + h) / t;
    else if (mx == LP_MIX_MAMBA)
        p += rk * (2.0 * h + 2.0 * lp_arch_mamba_inner(m)) / t;
    const double mlp = rk * ((nmat - 1.0) * h + (nmat - 1.0) * m->ffn_hidden + m->ffn_hidden + h);
    if (ff == LP_FFN_DENSE && all) p += mlp / t;
    if (ff == LP_FFN_MOE) {
        const double f = m->moe.ffn_hidden;
        p += (double)m->moe.experts / r->par.ep * rk * ((nmat - 1.0) * (h + f) + (f + h)) /
                 etp_of(r) +
             rk * (h + m->moe.experts); /* the router's adapter */
    }
    return p;
}

static void count_params(const struct lp_run *r, const struct kinds *ks, const int *first,
                         struct lp_params *pr)
{
    const struct lp_model *m = &r->model;
    const struct lp_parallel *p = &r->par;
    double t = p->tp, h = m->hidden;
    double V = lp_sim_vocab_padded(r);
    double kp[NKIND] = {0}, kl[NKIND] = {0};
    for (int j = 0; j < ks->n; j++) {
        const int k = ks->id[j];
        kp[k] = kind_params(r, k);
        kl[k] = r->train.lora_rank > 0 ? kind_lora(r, k) : 0.0;
    }
    pr->emb = V * h / t + (m->pos == LP_POS_LEARNED ? (double)m->seq_len * h : 0.0);
    pr->head = (!m->tied_embeddings || p->pp > 1) ? V * h / t : 0.0;
    double fnorm = (m->norm == LP_NORM_LAYERNORM ? 2.0 : 1.0) * h;
    pr->fnorm = fnorm;
    /* MTP modules on the last stage: their own weights, their layer, and a
     * copy of the shared embedding when it lives on another stage */
    int mk = ks->last;
    double mtp = m->mtp_layers * (lp_arch_mtp_extra_params(m) + kp[mk]);
    double mtp_lora = m->mtp_layers * kl[mk];
    if (m->mtp_layers > 0 && p->pp > 1) mtp += V * h / t;
    pr->stage0 = pr->stage_last = pr->stage_max = 0;
    pr->train0 = pr->train_last = 0;
    double best_body = -1;
    for (int s = 0; s < p->pp; s++) {
        double body = 0, lora = 0, dense_p = 0, moe_p = 0;
        int nd = 0, nm = 0;
        for (int c = 0; c < p->vp; c++) {
            int n[NKIND];
            chunk_kinds(ks, first, c * p->pp + s, n);
            for (int j = 0; j < ks->n; j++) {
                const int k = ks->id[j];
                if (!n[k]) continue;
                body += n[k] * kp[k];
                lora += n[k] * kl[k];
                if (k % LP_FFN_COUNT == LP_FFN_MOE) {
                    nm += n[k];
                    moe_p += n[k] * kp[k];
                } else {
                    nd += n[k];
                    dense_p += n[k] * kp[k];
                }
            }
        }
        double all = body;
        if (s == 0) all += pr->emb;
        if (s == p->pp - 1) {
            all += pr->head + fnorm + mtp;
            lora += mtp_lora;
        }
        if (s == 0) {
            pr->stage0 = all;
            pr->train0 = r->train.lora_rank > 0 ? lora : all;
        }
        if (s == p->pp - 1) {
            pr->stage_last = all;
            pr->train_last = r->train.lora_rank > 0 ? lora : all;
        }
        if (all > pr->stage_max) pr->stage_max = all;
        if (body > best_body) {
            best_body = body;
            pr->dense_layers_per_stage = nd;
            pr->moe_layers_per_stage = nm;
            pr->layer = nd > 0 ? dense_p / nd : kp[LP_MIX_ATTN * LP_FFN_COUNT + LP_FFN_DENSE];
            pr->moe_layer = nm > 0 ? moe_p / nm : pr->layer;
        }
    }
    pr->train_max = fmax(pr->train0, pr->train_last);
}

/* Activation bytes of one layer for one micro-batch as eager PyTorch
 * keeps them under the Transformers model code (framework "hf"): the
 * tensors autograd saves for backward, per token, e bytes per element.
 *  - each eager RMSNorm (MixtralRMSNorm.forward): the fp32 input that pow
 *    and the multiply save (4h) and the cast-back output the weight
 *    multiply saves (e h);
 *  - attention: the q/k/v projections' input (MatMul4Bit / F.linear save
 *    it, e h), FlashAttention-2's q, k, v and output (e (2h + 2 g d)), the
 *    o_proj input (e h);
 *  - MoE, per routed token (top_k of them): the gathered
 *    hidden_states[top_x] that w1 and w3 save (e h), w1's output that
 *    SiLU saves, SiLU's and w3's outputs that the multiply saves, the
 *    product that w2 saves (4 e f), w2's output that the routing-weight
 *    multiply saves (e h); and the router's input (e h);
 *  - dense MLP: fc1's input (e h), its outputs and product (4 e f).
 * The LoRA adapters save their input (the same tensor) and an r-wide
 * intermediate (neglected). */
static double hf_layer_activation_bytes(const struct lp_run *r, bool moe_layer)
{
    const struct lp_model *m = &r->model;
    const double e = r->train.precision == LP_FP32 ? 4.0 : 2.0, h = m->hidden;
    const double gd = (double)m->kv_heads * m->hidden / m->heads;
    const double T = r->par.micro_batch * (double)m->seq_len / r->par.cp;
    const double norms = 2.0 * (4.0 + e) * h;
    const double attn = e * h + e * (2.0 * h + 2.0 * gd) + e * h;
    double ffn;
    if (moe_layer)
        ffn = e * h + m->moe.top_k * (e * h + 4.0 * e * m->moe.ffn_hidden + e * h);
    else
        ffn = e * h + 4.0 * e * m->ffn_hidden;
    return T * (norms + attn + ffn) / r->par.tp;
}

/* Activation bytes kept for the backward by one layer of kind k for one
 * micro-batch (Korthikanti et al. 2022, Sec 4, generalised to GQA, SwiGLU,
 * MLA, Mamba and MoE; docs/simulator.md). Per token, each block keeps its
 * norm's input and its first linear's input (replicated across TP unless
 * SP), a dropout mask (1 byte) when the model has dropout, and its
 * TP-split intermediates. */
static double layer_input_bytes(const struct lp_run *r)
{
    const struct lp_parallel *p = &r->par;
    const double e = r->train.precision == LP_FP32 ? 4.0 : 2.0;
    const double T = p->micro_batch * (double)r->model.seq_len / p->cp;
    return T * r->model.hidden * e / (p->sequence_parallel ? p->tp : 1.0);
}

/* `covered`: a full recomputation redoes the layer, which keeps only its
 * input. Otherwise the run's selective modules (lp_sim_rc_modules) drop
 * what they redo: the attention scores (core_attn, unfused), the up
 * projections' Q, K, V (mla_up_proj), the output of a norm that is a
 * module of its own (layernorm: MLA's input norm, the MoE pre-MLP norm),
 * the experts' activation output (moe_act), the shared experts'
 * intermediates (shared_experts), and all but the block's input (mlp, moe). */
static double kind_activation_bytes(const struct lp_run *r, int k, bool covered)
{
    const struct lp_model *m = &r->model;
    const struct lp_parallel *p = &r->par;
    const enum lp_mixer mx = (enum lp_mixer)(k / LP_FFN_COUNT);
    const enum lp_ffn ff = (enum lp_ffn)(k % LP_FFN_COUNT);
    double e = r->train.precision == LP_FP32 ? 4.0 : 2.0;
    double t = p->tp, h = m->hidden, d = lp_arch_head_dim(m);
    double s = (double)m->seq_len / p->cp, T = p->micro_batch * s;
    if (covered) return layer_input_bytes(r);
    if (r->fw.kind == LP_FW_HF && mx != LP_MIX_NONE) /* eager PyTorch's saved tensors */
        return hf_layer_activation_bytes(r, ff == LP_FFN_MOE);
    const unsigned mods = lp_sim_rc_modules(r);
    const double mask = m->dropout ? h : 0.0;
    double repl = 0, split = 0;
    if (mx == LP_MIX_ATTN || mx == LP_MIX_ATTN_LOCAL) {
        const struct lp_mla *q = &m->mla;
        const double a = m->heads;
        if (q->kv_lora_rank > 0) {
            const double dqk = q->qk_nope_head_dim + q->qk_rope_head_dim;
            /* replicated: norm and down-projection inputs, the two latents
             * and the shared rope key; split: Q, K, V, projection input */
            repl += e * (2.0 * h + q->q_lora_rank + q->kv_lora_rank + q->qk_rope_head_dim) + mask;
            split += e * a * (2.0 * dqk + 2.0 * q->v_head_dim);
            if (mods & LP_RC_LAYERNORM) repl -= e * h;
            if (mods & LP_RC_MLA_UP_PROJ) split -= e * a * (2.0 * dqk + q->v_head_dim);
        } else {
            /* replicated: norm input, QKV input; split: Q, K, V, projection input */
            repl += e * 2.0 * h + mask;
            split += e * (2.0 * a * d + 2.0 * m->kv_heads * d);
        }
        const double keys =
            mx == LP_MIX_ATTN_LOCAL && m->attention_window < s ? m->attention_window : s;
        if (!r->train.flash_attention && !(mods & LP_RC_CORE_ATTN))
            /* softmax output, dropout mask and output: 5as (softmax output
             * only without dropout) */
            split += a * keys * (m->dropout ? 2.0 * e + 1.0 : e);
        if (r->train.flash_attention) split += 4.0 * a; /* log-sum-exp (fp32) */
    } else if (mx == LP_MIX_MAMBA) {
        const double di = lp_arch_mamba_inner(m), N = m->mamba.d_state;
        repl += e * 2.0 * h + mask;
        if (m->mamba.version == 2) {
            const double G = m->mamba.n_groups > 0 ? m->mamba.n_groups : 1;
            const double nh = lp_arch_mamba_heads(m);
            /* in_proj output, conv output, scan output, gated norm output,
             * and the fp32 chunk states (one per LP_SSD_CHUNK tokens) */
            split += e * ((2.0 * di + 2.0 * G * N + nh) + (di + 2.0 * G * N) + 2.0 * di) +
                     4.0 * di * N / LP_SSD_CHUNK;
        } else {
            const double R = lp_arch_mamba_dt_rank(m);
            /* in_proj output, conv output, x_proj output, delta, scan and
             * gated outputs */
            split += e * (2.0 * di + di + R + 2.0 * N + 3.0 * di);
        }
    }
    const bool swiglu = m->ffn_act == LP_ACT_SWIGLU;
    if (ff == LP_FFN_DENSE && (mods & LP_RC_MLP)) {
        repl += e * h; /* the checkpoint's input */
    } else if (ff == LP_FFN_DENSE) {
        repl += e * 2.0 * h + mask; /* norm input, fc1 input */
        split += e * (swiglu ? 3.0 : 2.0) * m->ffn_hidden;
    } else if (ff == LP_FFN_MOE && (mods & LP_RC_MOE)) {
        repl += e * h;
    } else if (ff == LP_FFN_MOE) {
        const struct lp_moe *q = &m->moe;
        const double load = q->dropless ? q->imbalance : q->capacity_factor;
        repl += e * ((mods & LP_RC_LAYERNORM) ? 1.0 : 2.0) * h + mask;
        /* each routed token's fc1 output and activation, and its permuted
         * copy; the shared experts' like a dense MLP */
        const double act = (mods & LP_RC_MOE_ACT) ? 0.0 : 1.0; /* the activation's output */
        split += e * q->top_k * load *
                 (((swiglu ? 2.0 : 1.0) + act) * q->ffn_hidden + lp_arch_moe_width(m));
        if (!(mods & LP_RC_SHARED_EXPERTS))
            split += e * (swiglu ? 3.0 : 2.0) * q->shared_experts * (double)q->shared_ffn_hidden;
    }
    double per_tok = repl / (p->sequence_parallel ? t : 1.0) + split / t;
    return T * per_tok;
}

double lp_sim_layer_activation_bytes(const struct lp_run *run)
{
    return kind_activation_bytes(run, LP_MIX_ATTN * LP_FFN_COUNT + LP_FFN_DENSE,
                                 full_covers_all(&run->par));
}

static int warmup_chunks(const struct lp_run *r, int s, int64_t micro)
{
    const struct lp_parallel *p = &r->par;
    int64_t mv = micro * p->vp, w;
    if (p->schedule == LP_SCHED_GPIPE)
        w = mv - 1;
    else if (p->schedule == LP_SCHED_INTERLEAVED)
        w = (p->pp - s - 1) * 2 + (p->vp - 1) * p->pp;
    else
        w = p->pp - s - 1;
    return (int)(w + 1 < mv ? w + 1 : mv);
}

/* Peak memory per GPU: the stage whose weights, optimizer state,
 * activations in flight and temporaries add up to the most. */
static void memory(const struct lp_run *r, const struct kinds *ks, const struct lp_params *pr,
                   const int *first, int64_t micro, struct lp_memory *mem)
{
    const struct lp_parallel *p = &r->par;
    const struct lp_model *m = &r->model;
    struct lp_bytes_per_param b;
    lp_sim_param_bytes(r, &b);
    double nd = (double)p->dp * p->cp;
    double w = b.w, g = b.g, o = b.o;
    if (p->zero >= 1) o /= nd;
    if (p->zero >= 2) g /= nd;
    if (p->zero >= 3) w /= nd;
    double e = r->train.precision == LP_FP32 ? 4.0 : 2.0;
    double T = p->micro_batch * (double)m->seq_len / p->cp;
    double t = p->tp;
    double act[NKIND] = {0}, kp[NKIND] = {0}, kl[NKIND] = {0};
    for (int j = 0; j < ks->n; j++) {
        const int k = ks->id[j];
        act[k] = kind_activation_bytes(r, k, false);
        kp[k] = kind_params(r, k);
        kl[k] = r->train.lora_rank > 0 ? kind_lora(r, k) : 0.0;
    }
    const double input = layer_input_bytes(r);
    /* A full recomputation redoes one checkpoint at a time (a group of
     * recompute_layers layers under uniform): its activations (the largest
     * kind the model has) are live during it; so are a block's under the
     * recompute modules mlp and moe. */
    const unsigned mods = lp_sim_rc_modules(r);
    double redo = 0;
    const int group =
        p->recompute_method == LP_RC_UNIFORM && p->recompute_layers > 1 ? p->recompute_layers : 1;
    if (p->recompute == LP_RECOMPUTE_FULL || (mods & (LP_RC_MLP | LP_RC_MOE))) {
        struct lp_run tmp = *r;
        tmp.par.recompute = LP_RECOMPUTE_SELECTIVE;
        tmp.par.recompute_modules = mods & ~(unsigned)(LP_RC_MLP | LP_RC_MOE);
        for (int j = 0; j < ks->n; j++)
            redo = fmax(redo, kind_activation_bytes(&tmp, ks->id[j], false));
        if (p->recompute == LP_RECOMPUTE_FULL) redo *= group;
    }
    double best = -1;
    for (int s = 0; s < p->pp; s++) {
        double params = 0, trained = 0, chunk_act = 0;
        for (int c = 0; c < p->vp; c++) {
            int n[NKIND], nr[NKIND], covered = 0;
            chunk_kinds(ks, first, c * p->pp + s, n);
            full_kinds(ks, p, first, c * p->pp + s, nr);
            for (int j = 0; j < ks->n; j++) {
                const int k = ks->id[j];
                chunk_act += (n[k] - nr[k]) * act[k];
                covered += nr[k];
                params += n[k] * kp[k];
                trained += n[k] * kl[k];
            }
            /* the checkpoints' inputs: one per layer, one per group */
            chunk_act += input * ((covered + group - 1) / group);
        }
        if (s == 0) params = pr->stage0;
        if (s == p->pp - 1) params = pr->stage_last;
        if (r->train.lora_rank <= 0) trained = params;
        if (s == p->pp - 1 && r->train.lora_rank > 0) trained = pr->train_last;
        if (s == 0 && r->train.lora_rank > 0) trained = pr->train0;
        double inflight = warmup_chunks(r, s, micro);
        double a = inflight * chunk_act / p->vp + redo;
        if (s == p->pp - 1 && m->mtp_layers > 0) /* MTP layers' activations */
            a += inflight * m->mtp_layers * (full_covers_all(p) ? input : act[ks->last]);
        if (s == 0) /* embedding output and its dropout mask */
            a += inflight * T * (e + 1.0) * m->hidden / (p->sequence_parallel ? t : 1.0);
        double temp = RUNTIME_RESERVE_BYTES + 2.0 * T * m->hidden * e; /* comm buffers */
        if (s == p->pp - 1) /* logits (e) and their fp32 softmax/grad of one micro-batch */
            temp += T * lp_sim_vocab_padded(r) / t * (e + 4.0);
        if (r->train.lora_rank > 0 && r->train.lora_base_bits < 16)
            /* bitsandbytes dequantises a frozen weight into a 16-bit
             * temporary before each use (MatMul4Bit): the largest, an
             * expert's or the MLP's h x f, is alive with the activations */
            temp += (double)m->hidden / t *
                    fmax(m->ffn_hidden, m->moe.experts > 0 ? m->moe.ffn_hidden : 0) * e;
        if (s == p->pp - 1 && r->fw.xent == LP_XENT_UPCAST)
            /* Transformers: the fp32 logits the output keeps, log_softmax's
             * output, and in backward its gradient and the fp32 gradient of
             * the shifted copy: three more fp32 tensors of the logits */
            temp += T * lp_sim_vocab_padded(r) / t * 12.0;
        if (p->zero >= 3) /* two layers' gathered parameters (prefetch) */
            temp += 2.0 * pr->layer * b.w;
        /* fine-tuning: frozen base weights in their storage precision, the
         * adapters' weights, gradients and optimizer states as in training */
        double wbytes = params * w;
        if (r->train.lora_rank > 0) {
            /* bitsandbytes quantises the linear layers of the blocks only:
             * the embedding (nn.Embedding) and the output layer (Transformers
             * get_keys_to_not_convert keeps lm_head) stay in 16 bits; 4-bit
             * weights carry an 8-bit absmax per 64 and, with double
             * quantisation, an fp32 constant per 256 absmax (Dettmers et al.
             * 2023 Sec 3: 0.127 bits per parameter) */
            const double ends =
                (s == 0 ? pr->emb : 0.0) + (s == p->pp - 1 ? pr->head + pr->fnorm : 0.0);
            const double qbits =
                r->train.lora_base_bits +
                (r->train.lora_base_bits == 4 ? 8.0 / 64.0 + 32.0 / (64.0 * 256.0) : 0.0);
            wbytes = (params - ends) * qbits / 8.0 + ends * w + trained * w;
        }
        double tot = wbytes + trained * (g + o) + a + temp;
        if (tot > best) {
            best = tot;
            mem->weights_bytes = wbytes;
            mem->grads_bytes = trained * g;
            mem->optimizer_bytes = trained * o;
            mem->activations_bytes = a;
            mem->temp_bytes = temp;
            mem->total_bytes = tot;
        }
    }
}

/* The run as one batch of its dataset sees it (training.dataset): the
 * sequence is the batch's padded length, expected (worst = false: time) or
 * of its longest queries (worst = true: the batch that must fit). */
static const struct lp_run *dataset_view(const struct lp_run *r, struct lp_run *tmp, bool worst)
{
    if (r->train.dataset.nbins <= 0) return r;
    *tmp = *r;
    tmp->model.seq_len =
        (int)ceil(lp_dataset_batch_len(&r->train.dataset, r->par.micro_batch, worst));
    return tmp;
}

void lp_sim_memory(const struct lp_run *run, struct lp_memory *mem)
{
    struct lp_params pr;
    int first[MAX_VSTAGES + 1];
    struct lp_run tmp;
    run = dataset_view(run, &tmp, true);
    memset(mem, 0, sizeof(*mem));
    if (lp_arch_split(&run->model, &run->par, first, MAX_VSTAGES + 1) != 0) return;
    struct kinds ks;
    kinds_scan(&run->model, &ks, NULL, 0);
    count_params(run, &ks, first, &pr);
    /* a configuration check_range refuses: no micro-batch count in an int */
    const int64_t micro = micro_batches(run);
    memory(run, &ks, &pr, first, micro > 0 && micro <= LP_MAX_MICROBATCHES ? micro : 1, mem);
}

static bool batch_fits(struct lp_run *r, int mb, int64_t micro)
{
    struct lp_memory m;
    r->par.micro_batch = mb;
    r->train.global_batch = (int64_t)mb * r->par.dp * micro;
    if (validate(r, &(double){0}, &(double){0}) != LP_REASON_NONE) return false;
    lp_sim_memory(r, &m);
    return m.total_bytes <= r->system.gpu.mem_bytes;
}

int lp_sim_max_batch(const struct lp_run *run)
{
    struct lp_run r = *run;
    const int64_t micro =
        run->par.micro_batch > 0 && run->par.dp > 0
            ? run->train.global_batch / ((int64_t)run->par.micro_batch * run->par.dp)
            : 1;
    const int64_t m = micro > 0 ? micro : 1;
    int lo = 0, hi = 1;
    while (hi <= (1 << 20) && batch_fits(&r, hi, m)) {
        lo = hi;
        hi *= 2;
    }
    while (hi - lo > 1) { /* lo fits, hi does not */
        int mid = lo + (hi - lo) / 2;
        if (batch_fits(&r, mid, m))
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* ---- evaluator ---- */

uint64_t lp_hash_bytes(const void *p, size_t n, uint64_t h)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) {
        h ^= c[i];
        h *= 1099511628211ULL;
    }
    return h;
}

#define FNV_OFFSET 14695981039346656037ULL

static uint64_t model_hash(const struct lp_model *m)
{
    int v[12] = {m->layers,     m->hidden,   m->heads,       m->kv_heads,
                 m->ffn_hidden, m->vocab,    m->seq_len,     (int)m->ffn_act,
                 (int)m->norm,  (int)m->pos, m->moe.experts, m->moe.top_k};
    uint64_t h = lp_hash_bytes(v, sizeof(v), FNV_OFFSET);
    int w[4] = {m->moe.ffn_hidden, m->moe.layer_freq, (int)m->bias, (int)m->dropout};
    h = lp_hash_bytes(w, sizeof(w), h);
    h = lp_hash_bytes(&m->moe.capacity_factor, sizeof(double), h);
    /* the architecture keys beyond GPT/Llama */
    int x[20] = {m->moe.shared_experts,
                 m->moe.shared_ffn_hidden,
                 m->moe.first_dense_layers,
                 (int)m->moe.dropless,
                 m->head_dim,
                 m->mla.q_lora_rank,
                 m->mla.kv_lora_rank,
                 m->mla.qk_nope_head_dim,
                 m->mla.qk_rope_head_dim,
                 m->mla.v_head_dim,
                 m->attention_window,
                 m->global_every,
                 m->mamba.version,
                 m->mamba.d_state,
                 m->mamba.d_conv,
                 m->mamba.expand,
                 m->mamba.head_dim,
                 m->mamba.n_groups,
                 m->mamba.dt_rank,
                 m->mtp_layers};
    h = lp_hash_bytes(x, sizeof(x), h);
    h = lp_hash_bytes(&m->moe.imbalance, sizeof(double), h);
    return lp_hash_bytes(m->layer_pattern, strnlen(m->layer_pattern, LP_PATTERN_LEN), h);
}

static uint64_t system_hash(const struct lp_system *s)
{
    double v[10] = {(double)lp_system_scale_up(s),
                    s->intra.bw_Bps,
                    s->intra.latency_s,
                    s->inter.bw_Bps,
                    s->inter.latency_s,
                    s->gpu.mem_bw_Bps,
                    s->gpu.peak_flops[LP_BF16],
                    s->gpu.peak_flops[LP_FP16],
                    (double)s->gpus_per_node,
                    s->gpu.sustained_frac};
    /* (the block-scaled peaks enter through the precision's own peak) */
    return lp_hash_bytes(v, sizeof(v), FNV_OFFSET);
}

int lp_sim_create(const struct lp_cost_model *cm, struct lp_sim **out, struct lp_err *err)
{
    struct lp_sim *s = calloc(1, sizeof(*s));
    if (!s) LP_FAIL(err, LP_ENOMEM, "out of memory creating the simulator");
    s->cm = *cm;
    s->sched_cap = (size_t)1 << 20; /* p*v*m up to 1M: e.g. p=64, v=8, m=2048 */
    s->sched_f = malloc(s->sched_cap * sizeof(double));
    s->sched_b = malloc(s->sched_cap * sizeof(double));
    if (!s->sched_f || !s->sched_b) {
        lp_sim_destroy(&s);
        LP_FAIL(err, LP_ENOMEM, "out of memory creating the schedule scratch");
    }
    *out = s;
    return LP_OK;
}

void lp_sim_destroy(struct lp_sim **sp)
{
    if (!sp || !*sp) return;
    free((*sp)->sched_f);
    free((*sp)->sched_b);
    free(*sp);
    *sp = NULL;
}

/* mh: model_hash(&r->model), which the caller has computed already */
static const struct lp_shape_cost *shape_cost(struct lp_sim *s, const struct lp_run *r, uint64_t mh)
{
    struct lp_shape_key k;
    memset(&k, 0, sizeof(k));
    k.model_hash = mh;
    k.system_hash = system_hash(&r->system);
    k.tp = r->par.tp;
    k.cp = r->par.cp;
    k.ep = r->par.ep;
    k.mb = r->par.micro_batch;
    k.sp = r->par.sequence_parallel;
    k.flash = r->train.flash_attention ? 1 + (int)r->train.attention : 0;
    k.prec = (int)r->train.precision;
    /* the selective modules' redo depends on the framework (attention.py) */
    k.recompute =
        (int)r->par.recompute | (int)(lp_sim_rc_modules(r) << 2) | ((int)r->fw.kind << 12);
    k.fused = r->fw.fused_kernels | (r->fw.tp_overlap << 1) | ((int)r->fw.xent << 2) |
              (r->fw.ep_overlap << 4) | ((int)r->fw.dispatcher << 5) |
              (int)(r->fw.cuda_graphs << 7);
    k.lora_rank = r->train.lora_rank;
    k.lora_bits = r->train.lora_base_bits;
    k.etp = r->par.etp;
    k.fp8_scaling = (int)r->train.fp8_scaling;
    k.peak = r->system.gpu.peak_flops[r->train.precision];
    k.host_op_s = r->fw.host_op_s;
    k.host_overlap = r->fw.host_overlap;
    k.moe_impl = (int)r->fw.moe_impl;
    k.lora_targets = (int)r->train.lora_targets;
    k.lora_dropout = r->train.lora_dropout;
    k.imbalance = r->model.moe.imbalance;
    uint64_t h = lp_hash_bytes(&k, sizeof(k), FNV_OFFSET);
    size_t slot = (size_t)(h % LP_SIM_MEMO);
    if (s->used[slot] && memcmp(&s->key[slot], &k, sizeof(k)) == 0) {
        s->memo_hits++;
        return &s->val[slot];
    }
    s->memo_misses++;
    lp_shape_cost_compute(&s->cm, r, &s->val[slot]);
    s->key[slot] = k;
    s->used[slot] = true;
    return &s->val[slot];
}

/* per_token: lp_model_fwd_flops_per_token of the run's model (memoised by
 * the caller: it walks every layer). */
static double model_flops(const struct lp_run *r, double per_token)
{
    const struct lp_model *m = &r->model;
    double s = m->seq_len;
    /* fine-tuning with frozen base weights has no weight-gradient GEMMs:
     * forward + data gradient = 2x forward (adapters not counted) */
    double passes = r->train.lora_rank > 0 ? 2.0 : 3.0;
    return passes * per_token * s * (double)r->train.global_batch;
}

/* Solve the pipeline schedule; the closed form stands in when the exact
 * solver's scratch is too small. */
static void solve(struct lp_sim *s, const struct lp_sched_in *in, struct lp_event *ev, int cap,
                  int *nev, double *end_first, double *end_last)
{
    struct lp_sched_out *so = &s->sout;
    int rc = s->sched_reference ? lp_sched_exact_ref(s, in, so, ev, cap, nev)
                                : lp_sched_exact(s, in, so, ev, cap, nev);
    if (rc != 0) {
        double t = lp_sched_closed_form(in);
        so->stage_end_s[0] = so->stage_end_s[in->p > 1024 ? 0 : in->p - 1] = t;
        if (nev) *nev = 0;
    }
    *end_first = so->stage_end_s[0];
    *end_last = so->stage_end_s[in->p > 1024 ? 0 : in->p - 1];
}

/* The pipeline schedule, memoised when no trace is recorded. */
static void schedule(struct lp_sim *s, const struct lp_sched_in *in, struct lp_event *ev, int cap,
                     int *nev, double *end_first, double *end_last)
{
    struct lp_sched_key k;
    memset(&k, 0, offsetof(struct lp_sched_key, idx));
    k.p = in->p;
    k.m = in->m;
    k.v = in->v;
    k.kind = (int)in->kind;
    k.blocking = in->p2p_blocking;
    k.ff = in->f_first_extra;
    k.bf = in->b_first_extra;
    k.fl = in->f_last_extra;
    k.bl = in->b_last_extra;
    k.c = in->p2p_s;
    const bool zb = in->kind == LP_SCHED_ZB; /* only zb reads w */
    const int pv = in->p * in->v;
    bool memo = pv <= LP_SCHED_MEMO_VS;
    for (int i = 0; i < pv && memo; i++) {
        const struct lp_sched_stage st = {.f = in->f[i], .b = in->b[i], .w = zb ? in->w[i] : 0.0};
        int d = 0;
        while (d < k.ndist && memcmp(&k.dist[d], &st, sizeof(st)) != 0)
            d++;
        if (d == k.ndist) {
            if (d == LP_SCHED_DIST) {
                memo = false; /* too many distinct stages to key */
                break;
            }
            k.dist[k.ndist++] = st;
        }
        k.idx[i] = (unsigned char)d;
    }
    const size_t klen = offsetof(struct lp_sched_key, idx) + (size_t)(memo ? pv : 0);
    /* the slot from the header and the distinct stages (the memcmp below
     * checks the per-stage entries too) */
    const size_t hlen =
        offsetof(struct lp_sched_key, dist) + (size_t)k.ndist * sizeof(struct lp_sched_stage);
    size_t slot = (size_t)(lp_hash_bytes(&k, hlen, FNV_OFFSET) % LP_SCHED_MEMO);
    if (!ev && memo && s->sused[slot] && memcmp(&s->skey[slot], &k, klen) == 0) {
        s->sched_hits++;
        *end_first = s->sval[slot].end_first;
        *end_last = s->sval[slot].end_last;
        return;
    }
    s->sched_misses++;
    solve(s, in, ev, cap, nev, end_first, end_last);
    if (!memo) return;
    memcpy(&s->skey[slot], &k, klen);
    s->sval[slot].end_first = *end_first;
    s->sval[slot].end_last = *end_last;
    s->sused[slot] = true;
}

/* A feasible result has a finite positive iteration time, throughput and
 * cost (and training time and cost when there is a token budget), and finite
 * breakdown terms. A profile with absurd values (1e308 s passes the
 * profile's own checks) would otherwise make a "feasible" NaN or infinity
 * that no ordering can rank. */
static bool numbers_sound(const struct lp_result *res, bool budget)
{
    const double pos[] = {res->iteration_time_s, res->tokens_per_s, res->model_tflops_per_gpu,
                          res->mfu, res->cost_per_iteration_usd};
    for (size_t i = 0; i < sizeof(pos) / sizeof(pos[0]); i++)
        if (!isfinite(pos[i]) || pos[i] < 0) return false;
    if (!(res->iteration_time_s > 0) || !(res->tokens_per_s > 0)) return false;
    if (budget && !(isfinite(res->time_days) && res->time_days > 0 && isfinite(res->gpu_hours) &&
                    isfinite(res->cost_usd) && res->cost_usd >= 0))
        return false;
    const struct lp_breakdown *b = &res->breakdown;
    const double parts[] = {b->compute_s,         b->tp_comm_s,   b->pp_bubble_s,   b->pp_comm_s,
                            b->dp_comm_exposed_s, b->optimizer_s, b->zero3_gather_s};
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        if (!isfinite(parts[i])) return false;
    return true;
}

/* Turn a result with unsound numbers into an infeasible one (memory kept). */
static void refuse_numeric(struct lp_result *res)
{
    double t = res->iteration_time_s;
    res->feasible = false;
    res->reason = LP_REASON_NUMERIC;
    res->reason_a = t;
    res->reason_b = 0;
    res->iteration_time_s = res->tokens_per_s = res->model_tflops_per_gpu = res->mfu = 0;
    res->cost_per_iteration_usd = res->cost_usd = res->gpu_hours = res->time_days = 0;
    res->tokens_per_usd = 0;
    memset(&res->breakdown, 0, sizeof(res->breakdown));
}

static int simulate(struct lp_sim *s, const struct lp_run *run, struct lp_result *res,
                    struct lp_event *ev, int cap, int *nev)
{
    struct lp_run tmp_mem, tmp_time;
    const struct lp_run *rm = dataset_view(run, &tmp_mem, true);
    const struct lp_run *r = dataset_view(run, &tmp_time, false);
    const struct lp_parallel *p = &r->par;
    const struct lp_model *m = &r->model;
    memset(res, 0, sizeof(*res));
    res->reason = validate(r, &res->reason_a, &res->reason_b);
    const double gpus = (double)p->tp * p->pp * p->dp * p->cp;
    res->gpus = gpus <= LP_MAX_GPUS ? (int)gpus : 0; /* else refused: LP_REASON_RANGE */
    if (res->reason != LP_REASON_NONE) return 0;
    int64_t micro = micro_batches(r);
    res->microbatches = (int)micro;

    int *first = s->vs_first;
    lp_arch_split(m, p, first, LP_SCHED_MAX_VSTAGES + 1); /* validate() checked it */
    struct lp_params pr;
    /* the model's layer kinds and their prefix counts, kept while the model
     * stays the same (a sweep) */
    const uint64_t mh = model_hash(m);
    if (!s->kinds_valid || s->kinds_model != mh) {
        struct kinds scan;
        kinds_scan(m, &scan, s->kinds_prefix, LP_KINDS * (LP_KIND_PREFIX_LAYERS + 1));
        s->kinds_model = mh;
        s->kinds_valid = scan.prefix != NULL;
        s->kinds_n = scan.n;
        s->kinds_flops = lp_model_fwd_flops_per_token(m);
        s->kinds_last = scan.last;
        memcpy(s->kinds_id, scan.id, sizeof(scan.id));
    }
    struct kinds ks = {.m = m,
                       .n = s->kinds_n,
                       .last = s->kinds_last,
                       .prefix = s->kinds_valid ? s->kinds_prefix : NULL};
    memcpy(ks.id, s->kinds_id, sizeof(ks.id));
    if (!s->kinds_valid) {
        kinds_scan(m, &ks, NULL, 0);
        s->kinds_flops = lp_model_fwd_flops_per_token(m);
    }
    count_params(rm, &ks, first, &pr);
    memory(rm, &ks, &pr, first, micro, &res->memory);
    if (r != rm) count_params(r, &ks, first, &pr); /* the same run unless a dataset's view */
    res->memory_per_gpu_bytes = res->memory.total_bytes;
    if (res->memory.total_bytes > r->system.gpu.mem_bytes) {
        res->reason = LP_REASON_OOM;
        res->reason_a = res->memory.total_bytes;
        res->reason_b = r->system.gpu.mem_bytes;
        return 0;
    }

    const struct lp_shape_cost *sc = shape_cost(s, r, mh);
    const bool full_all = full_covers_all(p);
    const bool partial = p->recompute == LP_RECOMPUTE_FULL && !full_all;
    /* each layer kind's forward/backward compute and exposed TP/CP/EP comm */
    struct lp_layer_cost kc[NKIND];
    for (int j = 0; j < ks.n; j++) {
        const int k = ks.id[j];
        const struct lp_layer_cost *x = &sc->mix[k / LP_FFN_COUNT], *y = &sc->ffn[k % LP_FFN_COUNT];
        struct lp_layer_cost *z = &kc[k];
        z->fwd_s = x->fwd_s + y->fwd_s;
        z->bwd_s = x->bwd_s + y->bwd_s;
        /* a full recomputation of every layer redoes each whole forward */
        z->recompute_s = x->recompute_s + y->recompute_s + (full_all ? x->full_s + y->full_s : 0.0);
        z->comm_fwd_s = x->comm_fwd_s + y->comm_fwd_s;
        z->comm_bwd_s = x->comm_bwd_s + y->comm_bwd_s;
        z->comm_recompute_s = x->comm_recompute_s + y->comm_recompute_s +
                              (full_all ? x->comm_full_s + y->comm_full_s : 0.0);
        z->full_s = x->full_s + y->full_s;
        z->comm_full_s = x->comm_full_s + y->comm_full_s;
        z->wgrad_s = x->wgrad_s + y->wgrad_s;
        for (int o = 0; o < LP_OPC_COUNT; o++) {
            z->op_fwd[o] = x->op_fwd[o] + y->op_fwd[o];
            z->op_bwd[o] = x->op_bwd[o] + y->op_bwd[o];
        }
    }
    /* the layer shown in the breakdown: the model's first */
    const int shown = kind_of(m, 0);
    memcpy(res->layer_fwd_s, kc[shown].op_fwd, sizeof(res->layer_fwd_s));
    memcpy(res->layer_bwd_s, kc[shown].op_bwd, sizeof(res->layer_bwd_s));

    /* per virtual stage: compute and exposed comm of one micro-batch */
    const int pv = p->pp * p->vp;
    double *fs = s->vs_f, *bs = s->vs_b, *ws = s->vs_w;
    double f_comp[2] = {0, 0}, b_comp[2] = {0, 0}, comm[2] = {0, 0}; /* stage 0, last stage */
    for (int vs = 0; vs < pv; vs++) {
        int n[NKIND], nr[NKIND] = {0}; /* nr: the block method's recomputed layers */
        chunk_kinds(&ks, first, vs, n);
        if (partial) full_kinds(&ks, p, first, vs, nr);
        double fc = 0, fm = 0, bc = 0, bm = 0, wg = 0;
        for (int k = 0; k < NKIND; k++) {
            if (!n[k]) continue;
            const struct lp_layer_cost *c = &kc[k];
            fc += n[k] * c->fwd_s;
            fm += n[k] * c->comm_fwd_s;
            bc += n[k] * (c->bwd_s + c->recompute_s) + nr[k] * c->full_s;
            bm += n[k] * (c->comm_bwd_s + c->comm_recompute_s) + nr[k] * c->comm_full_s;
            wg += n[k] * c->wgrad_s;
        }
        if (vs == pv - 1 && m->mtp_layers > 0) { /* MTP modules after the last layer */
            const struct lp_layer_cost *c = &kc[ks.last];
            fc += m->mtp_layers * (c->fwd_s + sc->edge.mtp_fwd_s);
            fm += m->mtp_layers * c->comm_fwd_s;
            bc += m->mtp_layers * (c->bwd_s + c->recompute_s + sc->edge.mtp_bwd_s);
            bm += m->mtp_layers * (c->comm_bwd_s + c->comm_recompute_s);
            wg += m->mtp_layers * c->wgrad_s;
        }
        fs[vs] = fc + fm;
        bs[vs] = bc + bm;
        ws[vs] = wg;
        const int st = vs % p->pp;
        for (int i = 0; i < 2; i++) {
            if (st != (i == 0 ? 0 : p->pp - 1)) continue;
            f_comp[i] += fc;
            b_comp[i] += bc;
            comm[i] += fm + bm;
        }
    }

    double contention = r->system.gpu.sms > 0 ? NCCL_CHANNEL_SMS / r->system.gpu.sms : 0.0;
    struct lp_dp_cost dpc;
    double zero3 = 0;
    /* PyTorch DDP / FSDP: played out per wrapped unit (sim_dp.c) */
    struct lp_torch_dp tdp;
    const bool torch = lp_torch_dp_applies(r);
    if (torch) { /* pp = vp = 1, every layer attention + dense MLP */
        const struct lp_layer_cost *c = &kc[kind_of(m, 0)];
        struct lp_torch_pass ps = {
            .layer_f = c->fwd_s + c->comm_fwd_s,
            .layer_b = c->bwd_s + c->recompute_s + c->comm_bwd_s + c->comm_recompute_s,
            .emb_f = sc->edge.emb_fwd_s,
            .emb_b = sc->edge.emb_bwd_s,
            .head_f = sc->edge.head_fwd_s,
            .head_b = sc->edge.head_bwd_s,
            .micro = (int)micro,
        };
        lp_torch_dp(&s->cm, r, &pr, &ps, &tdp);
        double z3f = tdp.fwd_extra_s / (double)micro, z3b = tdp.bwd_extra_s / (double)micro;
        zero3 = z3f + z3b;
        res->zero3_fwd_s = z3f;
        res->zero3_bwd_s = z3b;
        fs[0] += z3f;
        bs[0] += z3b;
    } else if (p->zero >= 3 && p->dp * p->cp > 1) {
        double bw[2] = {0, 0};
        lp_dp_costs(s, r, &pr, bw, 0, &dpc);
        double z3f = dpc.zero3_fwd_s, z3b = dpc.zero3_bwd_s;
        if (r->fw.param_gather_overlap) {
            /* prefetched behind the pass's compute; what is hidden still
             * takes NCCL's SMs */
            double ef = fmax(0.0, z3f - f_comp[0]), eb = fmax(0.0, z3b - b_comp[0]);
            z3f = ef + (z3f - ef) * contention;
            z3b = eb + (z3b - eb) * contention;
        }
        zero3 = z3f + z3b;
        res->zero3_fwd_s = z3f;
        res->zero3_bwd_s = z3b;
        /* each chunk gathers its share (ZeRO-3 runs without pipelining) */
        for (int vs = 0; vs < pv; vs++) {
            fs[vs] += z3f / p->vp;
            bs[vs] += z3b / p->vp;
        }
    }

    struct lp_sched_in in = {
        .p = p->pp,
        .m = (int)micro,
        .v = p->vp,
        .kind = p->schedule,
        .f = fs,
        .b = bs,
        .w = ws,
        .f_first_extra = sc->edge.emb_fwd_s,
        .b_first_extra = sc->edge.emb_bwd_s,
        .f_last_extra = sc->edge.head_fwd_s,
        .b_last_extra = sc->edge.head_bwd_s,
        .p2p_s =
            p->pp > 1 ? lp_p2p_time(&s->cm, &r->system, sc->p2p_bytes, p->tp * p->cp * p->dp) : 0.0,
        .p2p_blocking = !r->fw.pp_overlap,
    };
    double end_first, end_last;
    schedule(s, &in, ev, cap, nev, &end_first, &end_last);
    /* busy time of the first / last stage: every chunk of every micro-batch */
    const double mbs = (double)micro;
    double busy_first =
        mbs * (f_comp[0] + b_comp[0] + comm[0] + zero3 + in.f_first_extra + in.b_first_extra);
    double busy_last =
        mbs * (f_comp[1] + b_comp[1] + comm[1] + zero3 + in.f_last_extra + in.b_last_extra);
    if (p->pp == 1) busy_first = busy_last = busy_first + mbs * (in.f_last_extra + in.b_last_extra);

    /* DP reduction overlaps the last micro-batch's backward on each stage */
    double bw_win[2] = {b_comp[0], b_comp[1]};
    lp_dp_costs(s, r, &pr, bw_win, f_comp[0], &dpc);
    if (torch) {
        dpc.exposed_s[0] = dpc.exposed_s[1] = tdp.tail_s;
        dpc.hidden_s[0] = dpc.hidden_s[1] = tdp.hidden_s;
    }
    int last = p->pp - 1;
    double end0 = end_first + dpc.exposed_s[0] + dpc.hidden_s[0] * contention;
    double endl = end_last + dpc.exposed_s[1] + dpc.hidden_s[1] * contention;
    int crit = endl > end0 ? last : 0;
    double end = fmax(end0, endl) + dpc.emb_sync_s;
    res->iteration_time_s = end + dpc.opt_s + r->fw.step_overhead_s;

    struct lp_breakdown *bd = &res->breakdown;
    double crit_end = crit == 0 ? end_first : end_last;
    const int ci = crit == 0 ? 0 : 1;
    bd->tp_comm_s = mbs * comm[ci];
    bd->zero3_gather_s = mbs * zero3;
    bd->compute_s = (crit == 0 ? busy_first : busy_last) - bd->tp_comm_s - bd->zero3_gather_s;
    double idle = crit_end - (crit == 0 ? busy_first : busy_last);
    bd->pp_comm_s = p->pp > 1 ? fmin(idle, 2.0 * (p->pp - 1) * in.p2p_s) : 0.0;
    bd->pp_bubble_s = fmax(0.0, idle - bd->pp_comm_s);
    bd->dp_comm_exposed_s = end - crit_end;
    bd->optimizer_s = dpc.opt_s + r->fw.step_overhead_s;

    /* stage breakdown of the critical stage: per layer kind (mixers:
     * attention or Mamba; MoE; dense MLP; one norm per block), the ends, and
     * forward / backward, over every micro-batch */
    {
        double mixs = 0, moes = 0, mlps = 0, blocks = 0, redone = 0;
        for (int c = 0; c < p->vp; c++) {
            int n[NKIND], nr[NKIND] = {0};
            chunk_kinds(&ks, first, c * p->pp + (ci == 0 ? 0 : last), n);
            if (partial) full_kinds(&ks, p, first, c * p->pp + (ci == 0 ? 0 : last), nr);
            for (int k = 0; k < NKIND; k++) {
                if (!n[k]) continue;
                const struct lp_layer_cost *x = &sc->mix[k / LP_FFN_COUNT];
                const struct lp_layer_cost *y = &sc->ffn[k % LP_FFN_COUNT];
                const int ff = k % LP_FFN_COUNT;
                const double nb = (k / LP_FFN_COUNT != LP_MIX_NONE) + (ff != LP_FFN_NONE);
                const double xr = x->recompute_s + (full_all ? x->full_s : 0.0);
                const double yr = y->recompute_s + (full_all ? y->full_s : 0.0);
                mixs += n[k] * (x->fwd_s + x->bwd_s + xr) + nr[k] * x->full_s;
                if (ff == LP_FFN_MOE) moes += n[k] * (y->fwd_s + y->bwd_s + yr) + nr[k] * y->full_s;
                if (ff == LP_FFN_DENSE)
                    mlps += n[k] * (y->fwd_s + y->bwd_s + yr) + nr[k] * y->full_s;
                blocks += n[k] * nb;
                redone += nr[k] * nb;
            }
        }
        res->kind_attn_s = mbs * mixs;
        res->kind_moe_s = mbs * moes;
        res->kind_mlp_s = mbs * mlps;
        /* a second norm forward in each fully recomputed block */
        res->kind_norm_s =
            partial ? mbs * (blocks * (sc->norm_fwd_s + sc->norm_bwd_s) + redone * sc->norm_fwd_s)
                    : mbs * blocks * (sc->norm_fwd_s * (full_all ? 2.0 : 1.0) + sc->norm_bwd_s);
        const bool firstst = p->pp == 1 || crit == 0, lastst = p->pp == 1 || crit == last;
        res->kind_edge_s = mbs * ((firstst ? in.f_first_extra + in.b_first_extra : 0.0) +
                                  (lastst ? in.f_last_extra + in.b_last_extra : 0.0));
        res->stage_fwd_s = mbs * (f_comp[ci] + (firstst ? in.f_first_extra : 0.0) +
                                  (lastst ? in.f_last_extra : 0.0));
        res->stage_bwd_s = mbs * (b_comp[ci] + (firstst ? in.b_first_extra : 0.0) +
                                  (lastst ? in.b_last_extra : 0.0));
    }

    double tokens = (double)r->train.global_batch * m->seq_len;
    res->feasible = true;
    res->tokens_per_s = tokens / res->iteration_time_s;
    res->queries_per_s = (double)r->train.global_batch / res->iteration_time_s;
    res->seq_len = m->seq_len;
    res->model_flops = model_flops(r, s->kinds_flops);
    res->model_tflops_per_gpu = res->model_flops / (res->iteration_time_s * res->gpus) / 1e12;
    res->mfu = res->model_tflops_per_gpu * 1e12 / r->system.gpu.peak_flops[r->train.precision];
    double price = r->system.price_per_gpu_hour_usd;
    res->cost_per_iteration_usd = res->iteration_time_s / 3600.0 * res->gpus * price;
    double budget = lp_bill_budget_tokens(r);
    lp_bill_project(r, budget, res); /* bill.c: price, billing, energy, goodput */
    if (!numbers_sound(res, budget > 0)) {
        refuse_numeric(res);
        if (nev) *nev = 0;
        return 0;
    }
    if (ev && nev) {
        /* DP synchronisation on every stage's communication stream, from
         * the end of its last backward pass: the critical stage's lasts
         * until the iteration's sync point (its breakdown's exposed DP
         * time), every other stage's its own reduction (the stage model of
         * end0 / endl above). Then the optimizer step on every stage at
         * the sync point: Megatron's clip_grad_norm all-reduces the
         * gradient norm over the model-parallel group, so no stage steps
         * before the slowest has reduced. */
        const int n0 = *nev;
        for (int st = 0; st < p->pp && *nev < cap; st++) {
            double st_end = 0;
            for (int i = 0; i < n0; i++)
                if (ev[i].stage == st && ev[i].stream == 0)
                    st_end = fmax(st_end, ev[i].start_s + ev[i].dur_s);
            const int k = st == last ? 1 : 0;
            double dur =
                st == crit ? end - crit_end : dpc.exposed_s[k] + dpc.hidden_s[k] * contention;
            ev[(*nev)++] = (struct lp_event){.stage = st,
                                             .stream = 1,
                                             .micro = -1,
                                             .kind = LP_EV_DP,
                                             .start_s = st == crit ? crit_end : st_end,
                                             .dur_s = dur};
            if (*nev < cap)
                ev[(*nev)++] = (struct lp_event){.stage = st,
                                                 .stream = 0,
                                                 .micro = -1,
                                                 .kind = LP_EV_OPT,
                                                 .start_s = end,
                                                 .dur_s = dpc.opt_s};
        }
    }
    return 0;
}

void lp_sim_run(struct lp_sim *s, const struct lp_run *run, struct lp_result *res)
{
    simulate(s, run, res, NULL, 0, NULL);
}

int lp_sim_trace(struct lp_sim *s, const struct lp_run *run, struct lp_result *res,
                 struct lp_event *ev, int cap, int *n, struct lp_err *err)
{
    (void)err;
    *n = 0;
    simulate(s, run, res, ev, cap, n);
    return LP_OK;
}
