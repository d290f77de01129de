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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
/* CUDA context, cuBLAS/NCCL workspaces and allocator slack not visible to the
 * model; typical PyTorch reserved-vs-allocated gap (stated, not fitted). */
#define RUNTIME_RESERVE_BYTES (1.0 * GIB)
/* Fused Adam, mixed precision: read fp32 param, fp32 grad, m, v; write
 * param, m, v and the bf16/fp16 copy = 30 B/param; + 4 B for the grad norm. */
/* Overlapped communication is not free: NCCL runs one CTA per channel on its
 * own SM, so while a collective overlaps compute the kernels have that many
 * fewer SMs. 16 channels is NCCL's usual ring/tree channel count on NVSwitch
 * nodes (stated, not fitted); the compute slowdown is hidden time x 16/SMs. */
#define NCCL_CHANNEL_SMS 16.0
#define ADAM_BYTES_PER_PARAM_MIXED 34.0
#define ADAM_BYTES_PER_PARAM_FP32 32.0

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
        snprintf(buf, len, "pp*vp (%g) does not divide layers (%g)", r->reason_a, r->reason_b);
        break;
    case LP_REASON_BATCH:
        snprintf(buf, len, "micro_batch*dp (%g) does not divide global batch (%g)", r->reason_a,
                 r->reason_b);
        break;
    case LP_REASON_CP_SEQ:
        snprintf(buf, len, "2*cp (%g) does not divide the sequence (%g)", r->reason_a, r->reason_b);
        break;
    case LP_REASON_EP:
        snprintf(buf, len, "ep must divide experts and dp*cp, and be 1 for a dense model");
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
        snprintf(buf, len, "tp larger than a node");
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
    if (m->heads % p->tp || m->kv_heads % p->tp) {
        *a = p->tp;
        *b = m->kv_heads % p->tp ? m->kv_heads : m->heads;
        return LP_REASON_TP_HEADS;
    }
    int ffn = m->moe.experts > 0 ? m->moe.ffn_hidden : m->ffn_hidden;
    if (m->ffn_hidden % p->tp || ffn % p->tp) {
        *a = p->tp;
        *b = ffn;
        return LP_REASON_TP_FFN;
    }
    if (m->layers % (p->pp * p->vp)) {
        *a = p->pp * p->vp;
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
    if (m->moe.experts == 0 ? p->ep != 1 : (m->moe.experts % p->ep || (p->dp * p->cp) % p->ep))
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

struct params {
    double layer;     /* one dense layer, per TP rank */
    double moe_layer; /* one MoE layer, per rank (local experts) */
    double emb;       /* embedding (+ learned positions), per TP rank */
    double head;      /* untied output layer, per TP rank (0 if tied and pp == 1) */
    double stage_max; /* the largest stage's parameters on one rank */
    double stage0, stage_last;
    /* trained parameters (all of them, or the LoRA adapters) */
    double train0, train_last, train_max;
    int moe_layers_per_stage, dense_layers_per_stage;
};

static double vocab_padded(const struct lp_run *r)
{
    double q = 128.0 * r->par.tp;
    return ceil(r->model.vocab / q) * q;
}

static void count_params(const struct lp_run *r, struct params *pr)
{
    const struct lp_model *m = &r->model;
    double t = r->par.tp, h = m->hidden, d = (double)m->hidden / m->heads;
    double nmat = m->ffn_act == LP_ACT_SWIGLU ? 3.0 : 2.0;
    double norms = (m->norm == LP_NORM_LAYERNORM ? 4.0 : 2.0) * h;
    double attn = (h * d * (m->heads + 2.0 * m->kv_heads) + m->heads * d * h) / t;
    double abias = m->bias ? ((m->heads + 2.0 * m->kv_heads) * d / t + h) : 0.0;
    double mlp = nmat * h * m->ffn_hidden / t;
    double mbias = m->bias ? ((nmat - 1.0) * m->ffn_hidden / t + h) : 0.0;
    pr->layer = attn + abias + mlp + mbias + norms;
    pr->moe_layer = pr->layer;
    if (m->moe.experts > 0) {
        double local = (double)m->moe.experts / r->par.ep;
        pr->moe_layer =
            attn + abias + norms + h * m->moe.experts + local * nmat * h * m->moe.ffn_hidden / t;
    }
    double V = vocab_padded(r);
    pr->emb = V * h / t + (m->pos == LP_POS_LEARNED ? (double)m->seq_len * h : 0.0);
    pr->head = (!m->tied_embeddings || r->par.pp > 1) ? V * h / t : 0.0;
    int per_stage = m->layers / r->par.pp;
    int freq = m->moe.layer_freq > 0 ? m->moe.layer_freq : 1;
    pr->moe_layers_per_stage = m->moe.experts > 0 ? per_stage / freq : 0;
    pr->dense_layers_per_stage = per_stage - pr->moe_layers_per_stage;
    double body = pr->dense_layers_per_stage * pr->layer + pr->moe_layers_per_stage * pr->moe_layer;
    double fnorm = (m->norm == LP_NORM_LAYERNORM ? 2.0 : 1.0) * h;
    if (r->par.pp == 1) {
        pr->stage0 = pr->stage_last = body + pr->emb + pr->head + fnorm;
    } else {
        pr->stage0 = body + pr->emb;
        pr->stage_last = body + pr->head + fnorm;
    }
    pr->stage_max = fmax(pr->stage0, pr->stage_last);
    pr->train0 = pr->stage0;
    pr->train_last = pr->stage_last;
    if (r->train.lora_rank > 0) {
        /* an adapter of rank r on every linear of the blocks: r (in + out)
         * parameters each, split over TP like its weight (Hu et al. 2021) */
        double rk = r->train.lora_rank, f = m->ffn_hidden;
        double a_lora = rk * (h + (m->heads + 2.0 * m->kv_heads) * d + m->heads * d + h) / t;
        double m_lora = rk * ((nmat - 1.0) * (h + f) + (f + h)) / t;
        double e_lora =
            m->moe.experts > 0
                ? (double)m->moe.experts / r->par.ep * rk *
                      ((nmat - 1.0) * (h + m->moe.ffn_hidden) + (m->moe.ffn_hidden + h)) / t
                : 0.0;
        double lora_body = pr->dense_layers_per_stage * (a_lora + m_lora) +
                           pr->moe_layers_per_stage * (a_lora + e_lora);
        pr->train0 = pr->train_last = lora_body;
    }
    pr->train_max = fmax(pr->train0, pr->train_last);
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

struct bytes_per_param {
    double w, g, o; /* weights, gradients, optimizer states */
    double g_comm;  /* gradient bytes on the wire */
};

/* Mixed precision (Micikevicius et al. 2018; ZeRO, Rajbhandari et al. 2020
 * Sec 3.1): 2-byte weights and gradients, 12 bytes of fp32 master weights,
 * momentum and variance. Megatron keeps bf16 gradients in an fp32 main_grad
 * buffer (and reduces them in fp32), so bf16 costs 4 bytes of gradient. */
static void param_bytes(const struct lp_run *r, struct bytes_per_param *b)
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

/* Activation bytes of one layer for one micro-batch (Korthikanti et al. 2022,
 * Sec 4, generalised to GQA and SwiGLU; see docs/simulator.md). */
static double layer_activation_bytes(const struct lp_run *r, bool moe_layer)
{
    const struct lp_model *m = &r->model;
    const struct lp_parallel *p = &r->par;
    double e = r->train.precision == LP_FP32 ? 4.0 : 2.0;
    double t = p->tp, h = m->hidden, d = (double)m->hidden / m->heads;
    double s = (double)m->seq_len / p->cp, T = p->micro_batch * s;
    double gd = m->kv_heads * d;
    double f = moe_layer ? m->moe.ffn_hidden : m->ffn_hidden;
    double act = (m->ffn_act == LP_ACT_SWIGLU ? 3.0 : 2.0) * f;
    if (moe_layer) act *= m->moe.top_k * m->moe.capacity_factor;
    if (p->recompute == LP_RECOMPUTE_FULL) /* only the layer input is kept */
        return T * h * e / (p->sequence_parallel ? t : 1.0);
    /* replicated across TP unless SP: 2 norm inputs, QKV input, fc1 input (e
     * bytes each) and 2 dropout masks (1 byte each) = 10h for e = 2 */
    double repl = e * 4.0 * h + (m->dropout ? 2.0 * h : 0.0);
    /* split over TP: Q, K, V, projection input, the MLP activations = 24h for GPT */
    double split = e * (h + 2.0 * gd + h + act);
    if (moe_layer) split += T > 0 ? e * h * m->moe.top_k : 0; /* permuted tokens */
    double per_tok = repl / (p->sequence_parallel ? t : 1.0) + split / t;
    if (!r->train.flash_attention && p->recompute == LP_RECOMPUTE_NONE)
        /* softmax output, dropout mask and output: 5as (softmax output only
         * without dropout) */
        per_tok += m->heads * s * (m->dropout ? 2.0 * e + 1.0 : e) / t;
    if (r->train.flash_attention) per_tok += 4.0 * m->heads / t; /* log-sum-exp (fp32) */
    return T * per_tok;
}

double lp_sim_layer_activation_bytes(const struct lp_run *run)
{
    return layer_activation_bytes(run, false);
}

static int warmup_chunks(const struct lp_run *r, int s, int micro)
{
    const struct lp_parallel *p = &r->par;
    int mv = micro * p->vp, w;
    if (p->schedule == LP_SCHED_GPIPE)
        w = mv - 1;
    else if (p->schedule == LP_SCHED_INTERLEAVED)
        w = (p->pp - s - 1) * 2 + (p->vp - 1) * p->pp;
    else
        w = p->pp - s - 1;
    return (w + 1 < mv ? w + 1 : mv);
}

static void memory(const struct lp_run *r, const struct params *pr, int micro,
                   struct lp_memory *mem)
{
    const struct lp_parallel *p = &r->par;
    const struct lp_model *m = &r->model;
    struct bytes_per_param b;
    param_bytes(r, &b);
    double nd = (double)p->dp * p->cp;
    double w = b.w, g = b.g, o = b.o;
    if (p->zero >= 1) o /= nd;
    if (p->zero >= 2) g /= nd;
    if (p->zero >= 3) w /= nd;
    double e = r->train.precision == LP_FP32 ? 4.0 : 2.0;
    double T = p->micro_batch * (double)m->seq_len / p->cp;
    double t = p->tp;
    double act_layer = layer_activation_bytes(r, false);
    double act_moe = layer_activation_bytes(r, true);
    int chunks_layers = m->layers / (p->pp * p->vp);
    double per_chunk = 0;
    {
        int freq = m->moe.layer_freq > 0 ? m->moe.layer_freq : 1;
        int moe_l = m->moe.experts > 0 ? chunks_layers / freq : 0;
        per_chunk = (chunks_layers - moe_l) * act_layer + moe_l * act_moe;
    }
    double best = 0;
    int stages[2] = {0, p->pp - 1};
    for (int i = 0; i < (p->pp > 1 ? 2 : 1); i++) {
        int s = stages[i];
        double params = s == 0 ? pr->stage0 : pr->stage_last;
        double trained = s == 0 ? pr->train0 : pr->train_last;
        double inflight = warmup_chunks(r, s, micro);
        double act = inflight * per_chunk;
        if (p->recompute == LP_RECOMPUTE_FULL) { /* one layer's activations while recomputing */
            struct lp_run tmp = *r;
            tmp.par.recompute = LP_RECOMPUTE_SELECTIVE;
            act += layer_activation_bytes(&tmp, m->moe.experts > 0);
        }
        if (s == 0) /* embedding output and its dropout mask */
            act += inflight * T * (e + 1.0) * m->hidden / (p->sequence_parallel ? t : 1.0);
        double temp = RUNTIME_RESERVE_BYTES + 2.0 * T * m->hidden * e; /* comm buffers */
        if (s == p->pp - 1) /* logits (e) and their fp32 softmax/grad of one micro-batch */
            temp += T * vocab_padded(r) / t * (e + 4.0);
        if (p->zero >= 3) /* two layers' gathered parameters (prefetch) */
            temp += 2.0 * pr->layer * b.w;
        /* fine-tuning: frozen base weights in their storage precision, the
         * adapters' weights, gradients and optimizer states as in training */
        double wbytes = r->train.lora_rank > 0
                            ? params * r->train.lora_base_bits / 8.0 + trained * w
                            : params * w;
        double tot = wbytes + trained * (g + o) + act + temp;
        if (tot > best) {
            best = tot;
            mem->weights_bytes = wbytes;
            mem->grads_bytes = trained * g;
            mem->optimizer_bytes = trained * o;
            mem->activations_bytes = act;
            mem->temp_bytes = temp;
            mem->total_bytes = tot;
        }
    }
}

void lp_sim_memory(const struct lp_run *run, struct lp_memory *mem)
{
    struct params pr;
    memset(mem, 0, sizeof(*mem));
    count_params(run, &pr);
    /* a configuration check_range refuses: no micro-batch count in an int */
    int64_t micro = micro_batches(run);
    memory(run, &pr, micro > 0 && micro <= LP_MAX_MICROBATCHES ? (int)micro : 1, mem);
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
    return lp_hash_bytes(&m->moe.capacity_factor, sizeof(double), h);
}

static uint64_t system_hash(const struct lp_system *s)
{
    double v[9] = {s->intra.bw_Bps,
                   s->intra.latency_s,
                   s->inter.bw_Bps,
                   s->inter.latency_s,
                   s->gpu.mem_bw_Bps,
                   s->gpu.peak_flops[LP_BF16],
                   s->gpu.peak_flops[LP_FP16],
                   (double)s->gpus_per_node,
                   s->gpu.sustained_frac};
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

static const struct lp_shape_cost *shape_cost(struct lp_sim *s, const struct lp_run *r)
{
    struct lp_shape_key k;
    memset(&k, 0, sizeof(k));
    k.model_hash = model_hash(&r->model);
    k.system_hash = system_hash(&r->system);
    k.tp = r->par.tp;
    k.cp = r->par.cp;
    k.ep = r->par.ep;
    k.mb = r->par.micro_batch;
    k.sp = r->par.sequence_parallel;
    k.flash = r->train.flash_attention ? 1 + (int)r->train.attention : 0;
    k.prec = (int)r->train.precision;
    k.recompute = (int)r->par.recompute;
    k.fused = r->fw.fused_kernels | (r->fw.tp_overlap << 1) | ((int)r->fw.xent << 2);
    k.lora_rank = r->train.lora_rank;
    k.lora_bits = r->train.lora_base_bits;
    k.host_op_s = r->fw.host_op_s;
    k.host_overlap = r->fw.host_overlap;
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

static double model_flops(const struct lp_run *r)
{
    const struct lp_model *m = &r->model;
    double h = m->hidden, d = (double)m->hidden / m->heads, s = m->seq_len;
    double nmat = m->ffn_act == LP_ACT_SWIGLU ? 3.0 : 2.0;
    double attn = h * d * (m->heads + 2.0 * m->kv_heads) + m->heads * d * h;
    double dense = 2.0 * (attn + nmat * h * m->ffn_hidden) + 4.0 * s * h;
    double moe = dense;
    if (m->moe.experts > 0)
        moe = 2.0 * (attn + m->moe.top_k * nmat * h * m->moe.ffn_hidden + h * m->moe.experts) +
              4.0 * s * h;
    int freq = m->moe.layer_freq > 0 ? m->moe.layer_freq : 1;
    int nmoe = m->moe.experts > 0 ? m->layers / freq : 0;
    double per_token = (m->layers - nmoe) * dense + nmoe * moe + 2.0 * h * m->vocab;
    /* fine-tuning with frozen base weights has no weight-gradient GEMMs:
     * forward + data gradient = 2x forward (adapters not counted) */
    double passes = r->train.lora_rank > 0 ? 2.0 : 3.0;
    return passes * per_token * s * (double)r->train.global_batch;
}

struct dp_cost {
    double exposed_s[2]; /* stage 0, last stage */
    double hidden_s[2];  /* communication overlapped with compute */
    double emb_sync_s;
    double opt_s;
    double zero3_fwd_s, zero3_bwd_s; /* per micro-batch */
};

static void dp_costs(struct lp_sim *s, const struct lp_run *r, const struct params *pr,
                     double bwd_window_s[2], double fwd_window_s, struct dp_cost *out)
{
    const struct lp_parallel *p = &r->par;
    const struct lp_cost_model *cm = &s->cm;
    struct bytes_per_param b;
    param_bytes(r, &b);
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
        double bytes = vocab_padded(r) * r->model.hidden / p->tp * b.g_comm;
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

/* Solve the pipeline schedule (memoised when no trace is recorded); the
 * closed form stands in when the exact solver's scratch is too small. */
static void schedule(struct lp_sim *s, const struct lp_sched_in *in, struct lp_event *ev, int cap,
                     int *nev, double *end_first, double *end_last)
{
    struct lp_sched_key k;
    memset(&k, 0, sizeof(k));
    k.p = in->p;
    k.m = in->m;
    k.v = in->v;
    k.kind = (int)in->kind;
    k.blocking = in->p2p_blocking;
    k.f = in->f[0];
    k.b = in->b[0];
    k.w = in->kind == LP_SCHED_ZB ? in->w[0] : 0.0;
    k.ff = in->f_first_extra;
    k.bf = in->b_first_extra;
    k.fl = in->f_last_extra;
    k.bl = in->b_last_extra;
    k.c = in->p2p_s;
    size_t slot = (size_t)(lp_hash_bytes(&k, sizeof(k), FNV_OFFSET) % LP_SCHED_MEMO);
    if (!ev && s->sused[slot] && memcmp(&s->skey[slot], &k, sizeof(k)) == 0) {
        *end_first = s->sval[slot].end_first;
        *end_last = s->sval[slot].end_last;
        return;
    }
    struct lp_sched_out *so = &s->sout;
    if (lp_sched_exact(s, in, so, ev, cap, nev) != 0) {
        double t = lp_sched_closed_form(in) + in->f_first_extra + in->b_first_extra +
                   in->f_last_extra + in->b_last_extra;
        so->stage_end_s[0] = so->stage_end_s[in->p > 1024 ? 0 : in->p - 1] = t;
        if (nev) *nev = 0;
    }
    *end_first = so->stage_end_s[0];
    *end_last = so->stage_end_s[in->p > 1024 ? 0 : in->p - 1];
    s->skey[slot] = k;
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
    const double parts[] = {b->compute_s, b->tp_comm_s,         b->pp_bubble_s,
                            b->pp_comm_s, b->dp_comm_exposed_s, b->optimizer_s};
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
    memset(&res->breakdown, 0, sizeof(res->breakdown));
}

static int simulate(struct lp_sim *s, const struct lp_run *r, struct lp_result *res,
                    struct lp_event *ev, int cap, int *nev)
{
    const struct lp_parallel *p = &r->par;
    const struct lp_model *m = &r->model;
    memset(res, 0, sizeof(*res));
    res->reason = validate(r, &res->reason_a, &res->reason_b);
    const double gpus = (double)p->tp * p->pp * p->dp * p->cp;
    res->gpus = gpus <= LP_MAX_GPUS ? (int)gpus : 0; /* else refused: LP_REASON_RANGE */
    if (res->reason != LP_REASON_NONE) return 0;
    int micro = (int)micro_batches(r); /* <= LP_MAX_MICROBATCHES: validate */
    res->microbatches = micro;

    struct params pr;
    count_params(r, &pr);
    memory(r, &pr, micro, &res->memory);
    res->memory_per_gpu_bytes = res->memory.total_bytes;
    if (res->memory.total_bytes > r->system.gpu.mem_bytes) {
        res->reason = LP_REASON_OOM;
        res->reason_a = res->memory.total_bytes;
        res->reason_b = r->system.gpu.mem_bytes;
        return 0;
    }

    const struct lp_shape_cost *sc = shape_cost(s, r);
    /* per-chunk forward/backward time (compute + exposed TP/CP/EP comm) */
    int layers_chunk = m->layers / (p->pp * p->vp);
    int freq = m->moe.layer_freq > 0 ? m->moe.layer_freq : 1;
    int moe_l = m->moe.experts > 0 ? layers_chunk / freq : 0, dense_l = layers_chunk - moe_l;
    const struct lp_layer_cost *dl = &sc->dense, *ml = &sc->moe;
    const struct lp_layer_cost *shown = dense_l > 0 ? dl : ml;
    memcpy(res->layer_fwd_s, shown->op_fwd, sizeof(res->layer_fwd_s));
    memcpy(res->layer_bwd_s, shown->op_bwd, sizeof(res->layer_bwd_s));
    double f_comp = dense_l * dl->fwd_s + moe_l * ml->fwd_s;
    double f_comm = dense_l * dl->comm_fwd_s + moe_l * ml->comm_fwd_s;
    double b_comp = dense_l * (dl->bwd_s + dl->recompute_s) + moe_l * (ml->bwd_s + ml->recompute_s);
    double b_comm = dense_l * (dl->comm_bwd_s + dl->comm_recompute_s) +
                    moe_l * (ml->comm_bwd_s + ml->comm_recompute_s);

    double contention = r->system.gpu.sms > 0 ? NCCL_CHANNEL_SMS / r->system.gpu.sms : 0.0;
    struct dp_cost dpc;
    double zero3 = 0, z3f = 0, z3b = 0;
    if (p->zero >= 3 && p->dp * p->cp > 1) {
        double bw[2] = {0, 0};
        dp_costs(s, r, &pr, bw, 0, &dpc);
        z3f = dpc.zero3_fwd_s;
        z3b = dpc.zero3_bwd_s;
        if (r->fw.param_gather_overlap) {
            /* prefetched behind the pass's compute; what is hidden still
             * takes NCCL's SMs */
            double ef = fmax(0.0, z3f - f_comp * p->vp), eb = fmax(0.0, z3b - b_comp * p->vp);
            z3f = ef + (z3f - ef) * contention;
            z3b = eb + (z3b - eb) * contention;
        }
        zero3 = z3f + z3b;
    }

    double f = f_comp + f_comm + z3f / p->vp, b = b_comp + b_comm + z3b / p->vp;
    double fs[1024], bs[1024], ws[1024];
    int np = p->pp < 1024 ? p->pp : 1024;
    double wchunk = dense_l * dl->wgrad_s + moe_l * ml->wgrad_s;
    for (int i = 0; i < np; i++) {
        fs[i] = f;
        bs[i] = b;
        ws[i] = wchunk;
    }
    struct lp_sched_in in = {
        .p = p->pp,
        .m = micro,
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
    double busy_first = micro * (p->vp * (f + b) + in.f_first_extra + in.b_first_extra);
    double busy_last = micro * (p->vp * (f + b) + in.f_last_extra + in.b_last_extra);
    if (p->pp == 1)
        busy_first = busy_last = busy_first + micro * (in.f_last_extra + in.b_last_extra);

    /* DP reduction overlaps the last micro-batch's backward on each stage */
    double bw_win[2] = {b_comp * p->vp, b_comp * p->vp};
    dp_costs(s, r, &pr, bw_win, f_comp * p->vp, &dpc);
    int last = p->pp - 1;
    double end0 = end_first + dpc.exposed_s[0] + dpc.hidden_s[0] * contention;
    double endl = end_last + dpc.exposed_s[1] + dpc.hidden_s[1] * contention;
    int crit = endl > end0 ? last : 0;
    double end = fmax(end0, endl) + dpc.emb_sync_s;
    res->iteration_time_s = end + dpc.opt_s + r->fw.step_overhead_s;

    struct lp_breakdown *bd = &res->breakdown;
    double mv = (double)micro * p->vp;
    double crit_end = crit == 0 ? end_first : end_last;
    bd->tp_comm_s = mv * (f_comm + b_comm + zero3 / p->vp);
    bd->compute_s = (crit == 0 ? busy_first : busy_last) - bd->tp_comm_s;
    double idle = crit_end - (crit == 0 ? busy_first : busy_last);
    bd->pp_comm_s = p->pp > 1 ? fmin(idle, 2.0 * (p->pp - 1) * in.p2p_s) : 0.0;
    bd->pp_bubble_s = fmax(0.0, idle - bd->pp_comm_s);
    bd->dp_comm_exposed_s = end - crit_end;
    bd->optimizer_s = dpc.opt_s + r->fw.step_overhead_s;

    double tokens = (double)r->train.global_batch * m->seq_len;
    res->feasible = true;
    res->tokens_per_s = tokens / res->iteration_time_s;
    res->model_flops = model_flops(r);
    res->model_tflops_per_gpu = res->model_flops / (res->iteration_time_s * res->gpus) / 1e12;
    res->mfu = res->model_tflops_per_gpu * 1e12 / r->system.gpu.peak_flops[r->train.precision];
    double price = r->system.price_per_gpu_hour_usd;
    res->cost_per_iteration_usd = res->iteration_time_s / 3600.0 * res->gpus * price;
    double budget = r->train.tokens_per_param > 0
                        ? r->train.tokens_per_param * lp_model_params(&r->model)
                        : r->train.tokens;
    if (budget > 0) {
        double secs = budget / res->tokens_per_s;
        res->time_days = secs / 86400.0;
        res->gpu_hours = secs / 3600.0 * res->gpus;
        res->cost_usd = res->gpu_hours * price;
    }
    if (!numbers_sound(res, budget > 0)) {
        refuse_numeric(res);
        if (nev) *nev = 0;
        return 0;
    }
    if (ev && nev && *nev < cap) {
        /* DP/optimizer tail on the critical stage's communication stream */
        struct lp_event *e = &ev[(*nev)++];
        e->stage = crit;
        e->stream = 1;
        e->micro = -1;
        e->chunk = 0;
        e->kind = LP_EV_DP;
        e->start_s = crit_end;
        e->dur_s = end - crit_end;
        if (*nev < cap) {
            e = &ev[(*nev)++];
            e->stage = crit;
            e->stream = 0;
            e->micro = -1;
            e->chunk = 0;
            e->kind = LP_EV_OPT;
            e->start_s = end;
            e->dur_s = dpc.opt_s;
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
