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
#include "llmplan/rules.h"
#include "sim_internal.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
/* Virtual stages (pp * vp) the simulator handles. */
#define MAX_VSTAGES LP_SCHED_MAX_VSTAGES

static const char *const reason_names[LP_REASON_COUNT] = {
    "none",      "out_of_memory", "gpu_count", "tp_heads", "tp_ffn",   "pp_layers",
    "batch",     "cp_seq",        "ep",        "schedule", "sp",       "zero",
    "precision", "tp_node",       "range",     "numeric",  "framework"};

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
        if (r->reason_b > 0) /* rules.c zero_framework */
            snprintf(buf, len, "zero %g below the framework's least (%g): fsdp2 always shards",
                     r->reason_a, r->reason_b);
        else
            snprintf(buf, len, "zero 3 with pipeline parallelism is not supported");
        break;
    case LP_REASON_FRAMEWORK: { /* rules.c fw_hybrid, fsdp_layout, fsdp_lora */
        const char *key;
        const char *what = lp_fw_gap_text((enum lp_fw_gap)r->reason_a, &key);
        snprintf(buf, len, "%s (%s)", what, key);
        break;
    }
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

/* The validity rules: one ordered list, shared with the space walk
 * (src/core/rules.c). */
static enum lp_reason validate(const struct lp_run *r, double *a, double *b)
{
    return lp_rules_validate(r, a, b);
}

enum lp_reason lp_sim_validate(const struct lp_run *run)
{
    double a, b;
    return validate(run, &a, &b);
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

/* The memos' keys (issue #20): eight bytes a step instead of FNV's one, with
 * a final avalanche (MurmurHash3's fmix64, Appleby), since the slot is the
 * hash modulo a power of two. Only a memo slot or the kinds cache's model
 * identity depend on it (every slot's key is compared in full), never an
 * output; FNV-1a byte by byte was a sixth of a pruned sweep's time. */
uint64_t lp_hash_words(const void *p, size_t n, uint64_t h)
{
    const unsigned char *c = p;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, c + i, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
        h = (h << 31) | (h >> 33);
    }
    for (; i < n; i++)
        h = (h ^ c[i]) * 1099511628211ULL;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

/* bench_sim's baseline (bench_baseline): the slots as before #20's word hash */
static uint64_t key_hash(const struct lp_sim *s, const void *p, size_t n, uint64_t h)
{
    return s->bench_baseline ? lp_hash_bytes(p, n, h) : lp_hash_words(p, n, h);
}

static uint64_t model_hash(const struct lp_sim *s, const struct lp_model *m)
{
    int v[12] = {m->layers,     m->hidden,   m->heads,       m->kv_heads,
                 m->ffn_hidden, m->vocab,    m->seq_len,     (int)m->ffn_act,
                 (int)m->norm,  (int)m->pos, m->moe.experts, m->moe.top_k};
    uint64_t h = key_hash(s, v, sizeof(v), FNV_OFFSET);
    int w[4] = {m->moe.ffn_hidden, m->moe.layer_freq, (int)m->bias, (int)m->dropout};
    h = key_hash(s, w, sizeof(w), h);
    h = key_hash(s, &m->moe.capacity_factor, sizeof(double), h);
    /* the architecture keys beyond GPT/Llama */
    int x[21] = {m->moe.shared_experts,
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
                 m->mtp_layers,
                 (int)m->qk_norm};
    h = key_hash(s, x, sizeof(x), h);
    h = key_hash(s, &m->moe.imbalance, sizeof(double), h);
    return key_hash(s, m->layer_pattern, strnlen(m->layer_pattern, LP_PATTERN_LEN), h);
}

static uint64_t system_hash(const struct lp_sim *sim, const struct lp_system *s)
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
    return key_hash(sim, v, sizeof(v), FNV_OFFSET);
}

/* What the simulation has computed when it comes to the pipeline schedule:
 * everything the rest of the iteration needs besides the first and the last
 * stage's ends (issue #20: lp_sim_bound keeps it, so that lp_sim_finish
 * computes nothing twice). */
struct lp_sim_mid {
    struct lp_result res; /* memory, micro-batches, the shown layer's times */
    struct lp_kinds ks;
    struct lp_params pr;
    struct lp_sched_in in;
    struct lp_dp_cost dpc;
    struct lp_torch_dp tdp;
    struct lp_torch_pass ps;
    const struct lp_shape_cost *sc;
    /* the blocks' costs in bf16, for the layers a quantised run keeps in
     * bf16 (bf16_zone); valid when nb0 + nb1 > 0 */
    struct lp_shape_cost scb;
    int nb0, nb1;
    double f_comp[2], b_comp[2], comm[2]; /* stage 0, last stage */
    double b_mid[2];                      /* b_comp of pr.mid[0], mid[1] */
    double zero3, contention, busy_first, busy_last;
    bool torch;
};

/* What the simulator keeps over a sweep's inner dimensions (issue #20's
 * hoisting): the last run's parameters per rank, valid for every run of the
 * same ctx_gen whose par equals par_key outside what lp_sim_count_params
 * reads not (params_key), and its per-stage memory, valid while only
 * par.zero changes (the innermost dimension of a sweep). */
#define LP_COLL_MEMO 256
struct lp_coll_key {
    double bytes;
    uint64_t gen;
    int op, n, stride, world, used;
};
struct lp_sim_hoist {
    struct lp_coll_key ckey[LP_COLL_MEMO];
    double cval[LP_COLL_MEMO];
    struct lp_parallel par_key, mem_key;
    uint64_t par_gen, mem_gen, sys_gen;
    bool par_valid, mem_valid, sys_valid;
    uint64_t sys_hash; /* shape_cost's key of the system and sustained fraction */
    struct lp_params par_val;
    struct lp_mem_stage st[LP_SCHED_MAX_VSTAGES];
    struct lp_mem_stages ms;
};

/* lp_coll_time (op < LP_COLL_COUNT) or lp_p2p_time (op LP_COLL_COUNT)
 * on the system of the run simulate_head is at, from a direct-mapped memo
 * keyed on the arguments and that run's ctx_gen (the system's bytes) */
static double comm_time(struct lp_sim *s, const struct lp_system *sys, int op, double bytes, int n,
                        int stride, int world)
{
    const struct lp_cost_model *cm = &s->cm;
    if (!s->hoist_now)
        return op == LP_COLL_COUNT
                   ? lp_p2p_time(cm, sys, bytes, n, stride, world)
                   : lp_coll_time(cm, sys, (enum lp_coll)op, bytes, n, stride, world);
    struct lp_coll_key k;
    memset(&k, 0, sizeof(k));
    k.bytes = bytes;
    k.gen = s->ctx_gen;
    k.op = op;
    k.n = n;
    k.stride = stride;
    k.world = world;
    k.used = 1;
    const size_t slot = (size_t)(lp_hash_words(&k, sizeof(k), FNV_OFFSET) % LP_COLL_MEMO);
    struct lp_sim_hoist *h = s->hoist;
    if (memcmp(&h->ckey[slot], &k, sizeof(k)) == 0) return h->cval[slot];
    h->ckey[slot] = k;
    return h->cval[slot] = op == LP_COLL_COUNT
                               ? lp_p2p_time(cm, sys, bytes, n, stride, world)
                               : lp_coll_time(cm, sys, (enum lp_coll)op, bytes, n, stride, world);
}

double lp_sim_coll_time(struct lp_sim *s, const struct lp_system *sys, enum lp_coll op,
                        double bytes, int n, int stride, int world)
{
    return comm_time(s, sys, (int)op, bytes, n, stride, world);
}

/* The par fields lp_sim_count_params reads (sim_memory.c: tp, pp, vp, ep,
 * etp, and the split's first/last stage layers; every other input is the
 * model or the training): the rest zeroed, so that a sweep's micro-batch,
 * SP, recomputation, ZeRO and schedule dimensions keep the parameters. The
 * copy keeps the run's padding bytes (memcmp reads them: a difference there
 * only costs a recount). */
static void params_key(const struct lp_parallel *p, struct lp_parallel *k)
{
    memcpy(k, p, sizeof(*k));
    k->dp = 0;
    k->micro_batch = 0;
    k->sequence_parallel = false;
    k->recompute = LP_RECOMPUTE_NONE;
    k->recompute_modules = 0;
    k->recompute_method = (enum lp_rc_method)0;
    k->recompute_layers = 0;
    k->zero = 0;
    k->schedule = (enum lp_schedule)0;
}

/* lp_sim_memory_stages reads the whole run but par.zero */
static void memory_key(const struct lp_parallel *p, struct lp_parallel *k)
{
    memcpy(k, p, sizeof(*k));
    k->zero = 0;
}

/* The views of a run simulate reads: its memory and its timing (a dataset's
 * worst and typical batch; the run itself without a dataset). */
static const struct lp_run *views(const struct lp_run *run, struct lp_run *tmp_mem,
                                  struct lp_run *tmp_time, const struct lp_run **rm)
{
    *rm = lp_sim_dataset_view(run, tmp_mem, true);
    return lp_sim_dataset_view(run, tmp_time, false);
}

void lp_sim_sched_stats(const struct lp_sim *s, struct lp_sched_stats *out)
{
    *out = (struct lp_sched_stats){s->sched_misses, s->sched_hits, s->sched_ops_total,
                                   s->sched_ops_skipped};
}

int lp_sim_create(const struct lp_cost_model *cm, struct lp_sim **out, struct lp_err *err)
{
    struct lp_sim *s = calloc(1, sizeof(*s));
    if (!s) LP_FAIL(err, LP_ENOMEM, "out of memory creating the simulator");
    s->cm = *cm;
    s->sched_cap = (size_t)1 << 20; /* p*v*m up to 1M: e.g. p=64, v=8, m=2048 */
    s->sched_f = malloc(s->sched_cap * sizeof(double));
    s->sched_b = malloc(s->sched_cap * sizeof(double));
    s->mid = malloc(sizeof(*s->mid));
    s->hoist = calloc(1, sizeof(*s->hoist));
    if (!s->sched_f || !s->sched_b || !s->mid || !s->hoist) {
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
    lp_sched_free(*sp);
    free((*sp)->mid);
    free((*sp)->hoist);
    free(*sp);
    *sp = NULL;
}

/* mh: model_hash(&r->model), which the caller has computed already */
static const struct lp_shape_cost *shape_cost(struct lp_sim *s, const struct lp_run *r, uint64_t mh)
{
    struct lp_shape_key k;
    memset(&k, 0, sizeof(k));
    k.model_hash = mh;
    /* the sustained fraction of a GPU without its own is the run's
     * calibration's (lp_run_sustained): part of the key with the system */
    struct lp_sim_hoist *ho = s->hoist;
    if (!s->hoist_now || !ho->sys_valid || ho->sys_gen != s->ctx_gen) {
        const double sustained = lp_run_sustained(r);
        ho->sys_hash = key_hash(s, &sustained, sizeof(sustained), system_hash(s, &r->system));
        ho->sys_gen = s->ctx_gen;
        ho->sys_valid = s->hoist_now; /* the same system and calibration while ctx_gen lasts */
    }
    k.system_hash = ho->sys_hash;
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
    /* (xent a field of its own: five values do not fit bits 2-3) */
    k.xent = (int)r->fw.xent;
    k.fused = r->fw.fused_kernels | (r->fw.tp_overlap << 1) | (r->fw.ep_overlap << 4) |
              ((int)r->fw.dispatcher << 5) | (int)(r->fw.cuda_graphs << 7) |
              (r->fw.fused_softmax << 24) | (r->fw.tp_async_dgrad << 25) |
              (r->fw.train_metrics << 26) | ((int)r->fw.tp_overlap_rs << 27) |
              (r->fw.fused_mlp << 28) | ((int)lp_sim_ckpt_early_stop(r) << 29);
    k.lora_rank = r->train.lora_rank;
    k.lora_bits = r->train.lora_base_bits;
    k.etp = r->par.etp;
    k.fp8_scaling = (int)r->train.fp8_scaling;
    memcpy(k.module_prec, r->train.module_prec, sizeof(k.module_prec));
    k.peak = r->system.gpu.peak_flops[r->train.precision];
    k.host_op_s = r->fw.host_op_s;
    k.host_overlap = r->fw.host_overlap;
    k.moe_impl = (int)r->fw.moe_impl;
    k.dispatcher_sms = r->fw.dispatcher_sms;
    k.lora_targets = (int)r->train.lora_targets;
    k.lora_dropout = r->train.lora_dropout;
    k.imbalance = r->model.moe.imbalance;
    k.grad_accum = lp_sim_grad_accum_share(r);
    k.padded = lp_sim_batch_padded(r);
    k.tied_one_stage = r->model.tied_embeddings && r->par.pp == 1;
    /* the job's size places the TP, CP and EP groups (sim_comm.c
     * lp_groups_slowest: a small job has fewer of them) */
    k.world = lp_sim_world(&r->par);
    uint64_t h = key_hash(s, &k, sizeof(k), FNV_OFFSET);
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
    size_t slot = (size_t)(key_hash(s, &k, hlen, FNV_OFFSET) % LP_SCHED_MEMO);
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

/* ---- the timeline's data-parallel collectives (lp_sim_trace) ---- */

static void trace_dp_add(struct lp_event *ev, int cap, int *nev, int st, enum lp_dp_coll c,
                         double start_s, double dur_s, int units)
{
    if (!(dur_s > 0)) return;
    struct lp_dp_rec rec = {ev, cap, *nev};
    lp_dp_rec_put(&rec, st, -1, c, -1, units, start_s, dur_s);
    *nev = rec.n;
}

/* Stage st's gradient reduction as lp_dp_costs accounts it: `buckets`
 * equal buckets back to back, the last red_exposed_s of them after the
 * stage's last backward pass (ending at st_end), the rest overlapping it;
 * ZeRO-1/2's parameter all-gather after them (the part not hidden), and
 * the part hidden behind the forward at the start of the iteration (the
 * previous step's gathers: the steady state the accounting describes). */
static void trace_dp_buckets(struct lp_event *ev, int cap, int *nev, const struct lp_run *r,
                             const struct lp_dp_cost *d, int st, int k, double st_end)
{
    const int nb = d->buckets[k];
    const double red = d->red_s[k], bucket = nb > 0 ? red / nb : 0.0;
    const double t0 = st_end + d->red_exposed_s[k] - red;
    struct lp_dp_rec rec = {ev, cap, *nev};
    for (int i = 0; i < nb && red > 0; i++)
        lp_dp_rec_put(&rec, st, -1, r->par.zero ? LP_DPC_REDUCESCATTER : LP_DPC_ALLREDUCE, i, nb,
                      t0 + i * bucket, bucket);
    *nev = rec.n;
    const double g = d->gather_s[k], gx = d->gather_exposed_s[k];
    trace_dp_add(ev, cap, nev, st, LP_DPC_PARAM_GATHER_HID, 0.0, g - gx, nb);
    trace_dp_add(ev, cap, nev, st, LP_DPC_PARAM_GATHER, st_end + d->red_exposed_s[k], gx, nb);
}

/* ZeRO-3's per-micro-batch collectives as lp_dp_costs sums them (one
 * all-gather per layer in each forward pass; a layer's backward gathers
 * (with DeepSpeed's rules zero or more, for its recomputed forward and its
 * backward: z3_ag_bwd_s) and reduce-scatter, from the last layer; the
 * embedding and head's one each), each pass's from its start, one after
 * another on one network (pp = 1: stage 0). The accounting sums them into
 * the passes (zero3_fwd_s / zero3_bwd_s): their place inside a pass is
 * drawn, not simulated. */
static void trace_zero3_colls(struct lp_event *ev, int cap, int *nev, int n0,
                              const struct lp_run *r, const struct lp_dp_cost *d)
{
    struct lp_dp_rec rec = {ev, cap, *nev};
    const int L = r->model.layers;
    double t = 0;
#define PUT(c, unit, dur)                                                                          \
    do {                                                                                           \
        lp_dp_rec_put(&rec, 0, e->micro, (c), (unit), L + 1, t, (dur));                            \
        t += (dur);                                                                                \
    } while (0)
    for (int j = 0; j < n0; j++) {
        const struct lp_event *e = &ev[j];
        if (e->kind != LP_EV_FWD && e->kind != LP_EV_BWD) continue;
        const bool f = e->kind == LP_EV_FWD;
        t = fmax(t, e->start_s);
        if (f && d->z3_ends_ag_s > 0) PUT(LP_DPC_UNIT_GATHER, L, d->z3_ends_ag_s);
        for (int i = 0; i < L; i++) {
            const int layer = f ? i : L - 1 - i;
            enum lp_mixer mx;
            enum lp_ffn ff;
            lp_arch_layer(&r->model, layer, &mx, &ff);
            const int k = ff == LP_FFN_MOE;
            PUT(LP_DPC_UNIT_GATHER, layer, f ? d->z3_ag_s[k] : d->z3_ag_bwd_s[k]);
            if (!f) PUT(LP_DPC_UNIT_REDUCE, layer, d->z3_rs_s[k]);
        }
        if (!f && d->z3_ends_ag_s > 0) {
            PUT(LP_DPC_UNIT_GATHER, L, d->z3_ends_ag_s);
            PUT(LP_DPC_UNIT_REDUCE, L, d->z3_ends_rs_s);
        }
    }
#undef PUT
    *nev = rec.n;
}

/* lp_torch_dp's collectives (pp = 1: stage 0) at the play-out's own times,
 * its last backward's end on the schedule's (ev[0..n0)): the two agree on
 * where the backward ends; the passes in between carry the play-out's
 * waits averaged over the micro-batches (fs / bs above). */
static void trace_torch_colls(struct lp_event *ev, int n0, struct lp_dp_rec *rec)
{
    double bend = 0;
    for (int j = 0; j < n0; j++)
        if (ev[j].kind == LP_EV_BWD || ev[j].kind == LP_EV_WGRAD)
            bend = fmax(bend, ev[j].start_s + ev[j].dur_s);
    for (int i = 0; i < rec->n; i++)
        rec->ev[i].start_s += bend;
}

/* The projection of an iteration time (res->iteration_time_s) onto
 * throughput, MFU and the bill: each a monotone function of the time, so a
 * lower bound on the time gives bounds on all of them (lp_sim_bound).
 * Returns whether the run has a token budget (numbers_sound's question). */
static bool project(const struct lp_sim *s, const struct lp_run *r, struct lp_result *res)
{
    const struct lp_model *m = &r->model;
    double tokens = (double)r->train.global_batch * m->seq_len;
    res->feasible = true;
    res->tokens_per_s = tokens / res->iteration_time_s;
    /* a packed row holds several queries (lp_dataset_queries_per_row) */
    res->queries_per_s = (double)r->train.global_batch *
                         lp_dataset_queries_per_row(&r->train.dataset) / res->iteration_time_s;
    res->seq_len = m->seq_len;
    res->model_flops = model_flops(r, s->kinds_flops);
    res->model_tflops_per_gpu = res->model_flops / (res->iteration_time_s * res->gpus) / 1e12;
    res->mfu = res->model_tflops_per_gpu * 1e12 / r->system.gpu.peak_flops[r->train.precision];
    double price = r->system.price_per_gpu_hour_usd;
    res->cost_per_iteration_usd = res->iteration_time_s / 3600.0 * res->gpus * price;
    const double budget = lp_bill_budget_tokens(r);
    lp_bill_project(r, budget, res); /* bill.c: price, billing, energy, goodput */
    return budget > 0;
}

/* A layer kind's cost: its mixer's plus its FFN's (under a full
 * recomputation of every layer, the whole forward again). */
static void kind_cost(const struct lp_shape_cost *sc, int k, bool full_all, struct lp_layer_cost *z)
{
    const struct lp_layer_cost *x = &sc->mix[k / LP_FFN_COUNT], *y = &sc->ffn[k % LP_FFN_COUNT];
    z->fwd_s = x->fwd_s + y->fwd_s;
    z->bwd_s = x->bwd_s + y->bwd_s;
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
        z->op_w[o] = x->op_w[o] + y->op_w[o];
    }
}

/* Of the layers [a, b), those a quantised run keeps in bf16, by kind: the
 * model's first nb0 and last nb1 layers (Megatron-Core fp8_utils.py
 * is_first_last_bf16_layer and fp4_utils.py get_fp4_context, Megatron-LM
 * d98e8a6: a layer whose 0-based global number is below
 * num_layers_at_start_in_bf16 or at least num_layers -
 * num_layers_at_end_in_bf16 runs under no quantisation autocast;
 * transformer_block.py and models/hybrid/hybrid_block.py open that context
 * per layer with layer.layer_number - 1, the pipeline's offset included,
 * so the zones are the model's ends whatever the split). */
static void bf16_zone(const struct lp_kinds *ks, int a, int b, int nb0, int nb1, int nb[LP_KINDS])
{
    memset(nb, 0, LP_KINDS * sizeof(int));
    const int L = ks->m->layers;
    int t[LP_KINDS];
    const int hi = b < nb0 ? b : nb0;
    if (hi > a) {
        lp_range_kinds(ks, a, hi, t);
        for (int k = 0; k < LP_KINDS; k++)
            nb[k] += t[k];
    }
    int lo = L - nb1 > nb0 ? L - nb1 : nb0; /* not the first zone's layers twice */
    if (lo < a) lo = a;
    if (b > lo) {
        lp_range_kinds(ks, lo, b, t);
        for (int k = 0; k < LP_KINDS; k++)
            nb[k] += t[k];
    }
}

/* The layers [*a, *b) of virtual stage vs a full recomputation redoes
 * (lp_full_kinds' rule, as a range). */
static void full_range(const struct lp_parallel *p, const int *first, int vs, int *a, int *b)
{
    *a = first[vs];
    *b = *a;
    if (p->recompute != LP_RECOMPUTE_FULL) return;
    const int n = first[vs + 1] - *a;
    *b = lp_full_covers_all(p) ? first[vs + 1]
                               : *a + (p->recompute_layers < n ? p->recompute_layers : n);
}

/* The simulation up to the schedule's ends, into *x (its res is *res):
 * false when the configuration is refused before any timing (*res then is
 * the whole result). */
static bool simulate_head(struct lp_sim *s, const struct lp_run *r, const struct lp_run *rm,
                          struct lp_result *res, struct lp_sim_mid *md, struct lp_op_order *order)
{
    const struct lp_parallel *p = &r->par;
    const struct lp_model *m = &r->model;
    memset(res, 0, sizeof(*res));
    s->hoist_now = false; /* until the run's ctx_gen is known (below) */
    res->reason = validate(r, &res->reason_a, &res->reason_b);
    const double gpus = (double)p->tp * p->pp * p->dp * p->cp;
    res->gpus = gpus <= LP_MAX_GPUS ? (int)gpus : 0; /* else refused: LP_REASON_RANGE */
    if (res->reason != LP_REASON_NONE) return false;
    int64_t micro = lp_sim_micro_batches(r);
    res->microbatches = (int)micro;

    int *first = s->vs_first;
    /* the layer split, kept while what lp_arch_split reads stays the same
     * (a sweep's inner dimensions: ZeRO, recomputation, micro-batches) */
    const int split_key[6] = {m->layers, m->mtp_layers,         p->pp,
                              p->vp,     p->first_stage_layers, p->last_stage_layers};
    if (!s->split_valid || memcmp(s->split_key, split_key, sizeof(split_key)) != 0) {
        lp_arch_split(m, p, first, LP_SCHED_MAX_VSTAGES + 1); /* validate() checked it */
        memcpy(s->split_key, split_key, sizeof(split_key));
        s->split_valid = !s->bench_baseline; /* bench_sim's baseline splits every time */
    }
    struct lp_params *const pr = &md->pr;
    /* the model's layer kinds and their prefix counts, kept while the model
     * stays the same (a sweep) */
    /* its hash, kept with a copy of the model: the same bytes hash the
     * same, and comparing them is cheaper than hashing (issue #20) */
    bool ctx_same = s->ctx_valid;
    if (!s->last_model_valid || memcmp(&s->last_model, m, sizeof(*m)) != 0) {
        memcpy(&s->last_model, m, sizeof(*m)); /* padding too: memcmp reads it */
        s->last_model_hash = model_hash(s, m);
        s->last_model_valid = !s->bench_baseline; /* bench_sim's baseline: hashed every time */
        ctx_same = false;
    }
    /* the rest of the run but its parallel layout: a new ctx_gen when it
     * changes (issue #20's hoisting; not for a dataset's two views) */
    const bool hoist = r == rm && !s->bench_baseline && !s->bench_no_hoist;
    if (hoist && (!ctx_same || memcmp(&s->ctx_system, &r->system, sizeof(r->system)) != 0 ||
                  memcmp(&s->ctx_train, &r->train, sizeof(r->train)) != 0 ||
                  memcmp(&s->ctx_fw, &r->fw, sizeof(r->fw)) != 0)) {
        memcpy(&s->ctx_system, &r->system, sizeof(r->system));
        memcpy(&s->ctx_train, &r->train, sizeof(r->train));
        memcpy(&s->ctx_fw, &r->fw, sizeof(r->fw));
        s->ctx_gen++;
        s->ctx_valid = true;
    } else if (!hoist) {
        s->ctx_valid = false; /* the copies may be stale: compare them again next time */
    }
    s->hoist_now = hoist;
    const uint64_t mh = s->last_model_hash;
    if (!s->kinds_valid || s->kinds_model != mh) {
        struct lp_kinds scan;
        lp_kinds_scan(m, &scan, s->kinds_prefix, LP_KINDS * (LP_KIND_PREFIX_LAYERS + 1));
        s->kinds_model = mh;
        s->kinds_valid = scan.prefix != NULL;
        s->kinds_n = scan.n;
        s->kinds_flops = lp_model_fwd_flops_per_token(m);
        s->kinds_last = scan.last;
        memcpy(s->kinds_id, scan.id, sizeof(scan.id));
    }
    struct lp_kinds *const ksp = &md->ks;
    *ksp = (struct lp_kinds){.m = m,
                             .n = s->kinds_n,
                             .last = s->kinds_last,
                             .prefix = s->kinds_valid ? s->kinds_prefix : NULL};
    memcpy(ksp->id, s->kinds_id, sizeof(ksp->id));
    if (!s->kinds_valid) {
        lp_kinds_scan(m, ksp, NULL, 0);
        s->kinds_flops = lp_model_fwd_flops_per_token(m);
    }
    const struct lp_kinds ks = *ksp;
    struct lp_sim_hoist *const h = s->hoist;
    struct lp_parallel pk, mk;
    params_key(p, &pk);
    memory_key(p, &mk);
    if (hoist && h->par_valid && h->par_gen == s->ctx_gen &&
        memcmp(&h->par_key, &pk, sizeof(pk)) == 0) {
        *pr = h->par_val;
        s->hoist_hits++;
    } else {
        lp_sim_count_params(rm, &ks, first, pr);
        memcpy(&h->par_key, &pk, sizeof(pk)); /* padding too: memcmp reads it */
        h->par_val = *pr;
        h->par_gen = s->ctx_gen;
        h->par_valid = hoist;
        s->hoist_misses++;
    }
    h->ms.st = h->st;
    if (hoist && h->mem_valid && h->mem_gen == s->ctx_gen &&
        memcmp(&h->mem_key, &mk, sizeof(mk)) == 0) {
        s->hoist_hits++;
    } else {
        lp_sim_memory_stages(rm, &ks, pr, first, micro, &h->ms);
        memcpy(&h->mem_key, &mk, sizeof(mk));
        h->mem_gen = s->ctx_gen;
        h->mem_valid = hoist;
        s->hoist_misses++;
    }
    lp_sim_memory_peak(rm, pr, &h->ms, &res->memory);
    if (r != rm) lp_sim_count_params(r, &ks, first, pr); /* the same run unless a dataset's view */
    res->memory_per_gpu_bytes = res->memory.total_bytes;
    if (res->memory.total_bytes > r->system.gpu.mem_bytes) {
        res->reason = LP_REASON_OOM;
        res->reason_a = res->memory.total_bytes;
        res->reason_b = r->system.gpu.mem_bytes;
        return false;
    }

    const bool full_all = lp_full_covers_all(p);
    const bool partial = p->recompute == LP_RECOMPUTE_FULL && !full_all;
    /* a quantised run's bf16 layers (training.bf16_first_layers /
     * bf16_last_layers): every block of theirs costs what it costs in a
     * bf16 run (bf16 GEMMs, no quantisation kernels, TP gathers and EP
     * dispatch in bf16, no per-module overrides: lp_qmod). The MTP modules
     * in their own precision (training.module_precision "mtp"): Megatron-
     * Core opens their quantisation context without a layer number
     * (multi_token_prediction.py get_fp8_context(self.config)), so the bf16
     * layers never include them. These shape costs first: the memo may
     * reuse a slot, so the run's own are fetched after. */
    const bool quant = lp_prec_table(r->train.precision) == LP_FP8;
    md->nb0 = quant ? r->train.bf16_first_layers : 0;
    md->nb1 = quant ? r->train.bf16_last_layers : 0;
    const int nb0 = md->nb0, nb1 = md->nb1;
    struct lp_layer_cost kcb[LP_KINDS], kcm = {0};
    struct lp_edge_cost em = {0};
    const enum lp_prec pm = lp_train_module_prec(&r->train, LP_QMOD_MTP);
    const bool mtp_own = m->mtp_layers > 0 && pm != r->train.precision;
    if (nb0 + nb1 > 0 || mtp_own) {
        struct lp_run rb = *r;
        rb.train.bf16_first_layers = rb.train.bf16_last_layers = 0;
        memset(rb.train.module_prec, 0, sizeof(rb.train.module_prec));
        if (mtp_own) {
            rb.train.precision = pm;
            const struct lp_shape_cost *q = shape_cost(s, &rb, mh);
            kind_cost(q, ks.last, full_all, &kcm);
            em = q->edge;
        }
        if (nb0 + nb1 > 0) {
            rb.train.precision = LP_BF16;
            md->scb = *shape_cost(s, &rb, mh);
            for (int j = 0; j < ks.n; j++)
                kind_cost(&md->scb, ks.id[j], full_all, &kcb[ks.id[j]]);
        }
    }
    const struct lp_shape_cost *sc = md->sc = shape_cost(s, r, mh);
    /* each layer kind's forward/backward compute and exposed TP/CP/EP comm */
    struct lp_layer_cost kc[LP_KINDS];
    for (int j = 0; j < ks.n; j++)
        kind_cost(sc, ks.id[j], full_all, &kc[ks.id[j]]);
    /* the layer shown in the breakdown: the model's first */
    const int shown = lp_kind_of(m, 0);
    const struct lp_layer_cost *kshown = nb0 > 0 ? &kcb[shown] : &kc[shown];
    memcpy(res->layer_fwd_s, kshown->op_fwd, sizeof(res->layer_fwd_s));
    memcpy(res->layer_bwd_s, kshown->op_bwd, sizeof(res->layer_bwd_s));
    memcpy(res->layer_wgrad_s, kshown->op_w, sizeof(res->layer_wgrad_s));
    if (order) /* the same layer's kernels in order, for the timeline */
        lp_shape_cost_order(&s->cm, r, shown / LP_FFN_COUNT, shown % LP_FFN_COUNT, order);

    /* per virtual stage: compute and exposed comm of one micro-batch */
    const int pv = p->pp * p->vp;
    double *fs = s->vs_f, *bs = s->vs_b, *ws = s->vs_w;
    double *const f_comp = md->f_comp, *const b_comp = md->b_comp, *const comm = md->comm;
    for (int i = 0; i < 2; i++)
        f_comp[i] = b_comp[i] = comm[i] = md->b_mid[i] = 0;
    /* the model's kinds in ascending order: the sums below add over them in
     * the order a loop over every kind would, skipping the kinds without a
     * layer in the chunk (those the model lacks have none): the same
     * additions, without visiting all LP_KINDS per stage (issue #20) */
    int kid[LP_KINDS], nk = s->bench_baseline ? LP_KINDS : ks.n;
    for (int j = 0; j < nk; j++) {
        const int k = s->bench_baseline ? j : ks.id[j];
        int i = j;
        for (; i > 0 && kid[i - 1] > k; i--)
            kid[i] = kid[i - 1];
        kid[i] = k;
    }
    for (int vs = 0; vs < pv; vs++) {
        int n[LP_KINDS], nr[LP_KINDS] = {0};         /* nr: the block method's recomputed layers */
        int nb[LP_KINDS] = {0}, nrb[LP_KINDS] = {0}; /* of those, the bf16 ones */
        lp_chunk_kinds(&ks, first, vs, n);
        if (partial) lp_full_kinds(&ks, p, first, vs, nr);
        if (nb0 + nb1 > 0) {
            bf16_zone(&ks, first[vs], first[vs + 1], nb0, nb1, nb);
            int ra, rb;
            full_range(p, first, vs, &ra, &rb);
            if (partial) bf16_zone(&ks, ra, rb, nb0, nb1, nrb);
        }
        double fc = 0, fm = 0, bc = 0, bm = 0, wg = 0;
        for (int j = 0; j < nk; j++) {
            const int k = kid[j];
            if (!n[k]) continue;
            /* the quantised layers, then the bf16 ones */
            for (int z = 0; z < 2; z++) {
                const struct lp_layer_cost *c = z == 0 ? &kc[k] : &kcb[k];
                const int nn = z == 0 ? n[k] - nb[k] : nb[k];
                const int nf = z == 0 ? nr[k] - nrb[k] : nrb[k];
                if (nn == 0 && nf == 0) continue;
                fc += nn * c->fwd_s;
                fm += nn * c->comm_fwd_s;
                bc += nn * (c->bwd_s + c->recompute_s) + nf * c->full_s;
                bm += nn * (c->comm_bwd_s + c->comm_recompute_s) + nf * c->comm_full_s;
                wg += nn * c->wgrad_s;
            }
        }
        if (vs == pv - 1 && m->mtp_layers > 0) { /* MTP modules after the last layer */
            const struct lp_layer_cost *c = mtp_own ? &kcm : &kc[ks.last];
            const struct lp_edge_cost *e = mtp_own ? &em : &sc->edge;
            fc += m->mtp_layers * (c->fwd_s + e->mtp_fwd_s);
            fm += m->mtp_layers * c->comm_fwd_s;
            bc += m->mtp_layers * (c->bwd_s + c->recompute_s + e->mtp_bwd_s);
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
        for (int i = 0; i < pr->n_mid; i++)
            if (st == pr->mid[i]) md->b_mid[i] += bc;
    }

    const double contention = md->contention =
        r->system.gpu.sms > 0 ? LP_NCCL_CHANNEL_SMS / r->system.gpu.sms : 0.0;
    struct lp_dp_cost *const dpc = &md->dpc;
    double zero3 = 0;
    /* PyTorch DDP / FSDP: played out per wrapped unit (sim_dp.c) */
    struct lp_torch_dp *const tdp = &md->tdp;
    md->ps = (struct lp_torch_pass){0};
    const bool torch = md->torch = lp_torch_dp_applies(r);
    if (torch) { /* pp = vp = 1, every layer attention + dense MLP */
        const struct lp_layer_cost *c = &kc[lp_kind_of(m, 0)];
        md->ps = (struct lp_torch_pass){
            .layer_f = c->fwd_s + c->comm_fwd_s,
            .layer_b = c->bwd_s + c->recompute_s + c->comm_bwd_s + c->comm_recompute_s,
            .emb_f = sc->edge.emb_fwd_s,
            .emb_b = sc->edge.emb_bwd_s,
            .head_f = sc->edge.head_fwd_s,
            .head_b = sc->edge.head_bwd_s,
            .micro = (int)micro,
        };
        lp_torch_dp(&s->cm, r, pr, &md->ps, tdp, NULL);
        double z3f = tdp->fwd_extra_s / (double)micro, z3b = tdp->bwd_extra_s / (double)micro;
        zero3 = z3f + z3b;
        res->zero3_fwd_s = z3f;
        res->zero3_bwd_s = z3b;
        fs[0] += z3f;
        bs[0] += z3b;
    } else if (p->zero >= 3 && p->dp * p->cp > 1) {
        const double bw[LP_DP_STAGES] = {0};
        lp_dp_costs(s, r, pr, bw, 0, dpc);
        double z3f = dpc->zero3_fwd_s, z3b = dpc->zero3_bwd_s;
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

    md->zero3 = zero3;
    md->in = (struct lp_sched_in){
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
        /* every stage's send at once, the slowest pair (sim_comm.c
         * lp_p2p_time): the pipeline group's pp ranks tp * cp * dp apart */
        .p2p_s = p->pp > 1 ? comm_time(s, &r->system, LP_COLL_COUNT, sc->p2p_bytes, p->pp,
                                       p->tp * p->cp * p->dp, lp_sim_world(p))
                           : 0.0,
        .p2p_blocking = !r->fw.pp_overlap,
        .ends_only = true, /* simulate_tail: a trace wants every op */
    };
    const struct lp_sched_in in = md->in;
    /* busy time of the first / last stage: every chunk of every micro-batch */
    const double mbs = (double)micro;
    double busy_first =
        mbs * (f_comp[0] + b_comp[0] + comm[0] + zero3 + in.f_first_extra + in.b_first_extra);
    double busy_last =
        mbs * (f_comp[1] + b_comp[1] + comm[1] + zero3 + in.f_last_extra + in.b_last_extra);
    if (p->pp == 1) busy_first = busy_last = busy_first + mbs * (in.f_last_extra + in.b_last_extra);
    md->busy_first = busy_first;
    md->busy_last = busy_last;

    /* DP reduction overlaps the last micro-batch's backward on each stage
     * (independent of the schedule's ends) */
    const double bw_win[LP_DP_STAGES] = {b_comp[0], b_comp[1], md->b_mid[0], md->b_mid[1]};
    lp_dp_costs(s, r, pr, bw_win, f_comp[0], dpc);
    if (torch) {
        dpc->exposed_s[0] = dpc->exposed_s[1] = tdp->tail_s;
        dpc->hidden_s[0] = dpc->hidden_s[1] = tdp->hidden_s;
    }
    md->res = *res;
    return true;
}

/* The rest of the iteration from *md (simulate_head's) and the schedule's
 * ends: solved, or (bound) lower bounds on them. */
static void simulate_tail(struct lp_sim *s, const struct lp_run *r, const struct lp_sim_mid *md,
                          struct lp_result *res, struct lp_event *ev, int cap, int *nev, bool bound)
{
    const struct lp_parallel *p = &r->par;
    const int *first = s->vs_first;
    const struct lp_kinds ks = md->ks;
    const struct lp_shape_cost *sc = md->sc;
    const bool full_all = lp_full_covers_all(p);
    const bool partial = p->recompute == LP_RECOMPUTE_FULL && !full_all;
    const double *f_comp = md->f_comp, *b_comp = md->b_comp, *comm = md->comm;
    const double contention = md->contention, zero3 = md->zero3;
    const double busy_first = md->busy_first, busy_last = md->busy_last;
    const double mbs = (double)res->microbatches;
    const bool torch = md->torch;
    const struct lp_dp_cost *dpc = &md->dpc;
    struct lp_sched_in in = md->in;
    in.ends_only = ev == NULL; /* a trace wants every op */
    double end_first, end_last;
    if (bound)
        lp_sched_ends_bound(s, &in, busy_first, busy_last, &end_first, &end_last);
    else
        schedule(s, &in, ev, cap, nev, &end_first, &end_last);

    int last = p->pp - 1;
    double end0 = end_first + dpc->exposed_s[0] + dpc->hidden_s[0] * contention;
    double endl = end_last + dpc->exposed_s[1] + dpc->hidden_s[1] * contention;
    int crit = endl > end0 ? last : 0;
    /* the middle stages under Megatron-Core's rule (sim_dp.c
     * lp_dp_mid_stages): their last backward ends a ripple before stage 0's
     * (lp_dp_mid_ripple); one that ends after both the others ends the
     * iteration (crit_st, the trace's), its reduction counted from stage 0's
     * end in the breakdown (crit stays 0) */
    const int n_mid = lp_dp_mid_stages(r, &md->pr);
    double end_mid[2] = {0, 0}, endc = fmax(end0, endl);
    int crit_st = crit;
    for (int i = 0; i < n_mid; i++) {
        const int k = 2 + i;
        end_mid[i] = end_first - lp_dp_mid_ripple(&in, md->pr.mid[i]);
        const double e = end_mid[i] + dpc->exposed_s[k] + dpc->hidden_s[k] * contention;
        if (e > endc) {
            endc = e;
            crit = 0;
            crit_st = md->pr.mid[i];
        }
    }
    double end = endc + dpc->emb_sync_s;
    res->iteration_time_s = end + dpc->opt_s + r->fw.step_overhead_s;
    if (bound) { /* the rest of the iteration is a monotone function of the ends */
        if (!numbers_sound(res, project(s, r, res))) refuse_numeric(res);
        return;
    }

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
    bd->optimizer_s = dpc->opt_s + r->fw.step_overhead_s;

    /* stage breakdown of the critical stage: per layer kind (the mixers,
     * attention and Mamba apart; MoE; dense MLP; one norm per block), the ends, and
     * forward / backward, over every micro-batch */
    {
        double mixs = 0, mambas = 0, moes = 0, mlps = 0, blocks = 0, redone = 0;
        for (int c = 0; c < p->vp; c++) {
            const int vs = c * p->pp + (ci == 0 ? 0 : last);
            int n[LP_KINDS], nr[LP_KINDS] = {0}, nbf[LP_KINDS] = {0}, nrb[LP_KINDS] = {0};
            lp_chunk_kinds(&ks, first, vs, n);
            if (partial) lp_full_kinds(&ks, p, first, vs, nr);
            if (md->nb0 + md->nb1 > 0) { /* the bf16 layers' share (simulate_head) */
                bf16_zone(&ks, first[vs], first[vs + 1], md->nb0, md->nb1, nbf);
                int ra, rb;
                full_range(p, first, vs, &ra, &rb);
                if (partial) bf16_zone(&ks, ra, rb, md->nb0, md->nb1, nrb);
            }
            for (int k = 0; k < LP_KINDS; k++) {
                if (!n[k]) continue;
                const int ff = k % LP_FFN_COUNT;
                const double nb = (k / LP_FFN_COUNT != LP_MIX_NONE) + (ff != LP_FFN_NONE);
                for (int z = 0; z < 2; z++) {
                    const struct lp_shape_cost *q = z == 0 ? sc : &md->scb;
                    const int nn = z == 0 ? n[k] - nbf[k] : nbf[k];
                    const int nf = z == 0 ? nr[k] - nrb[k] : nrb[k];
                    if (nn == 0 && nf == 0) continue;
                    const struct lp_layer_cost *x = &q->mix[k / LP_FFN_COUNT];
                    const struct lp_layer_cost *y = &q->ffn[ff];
                    const double xr = x->recompute_s + (full_all ? x->full_s : 0.0);
                    const double yr = y->recompute_s + (full_all ? y->full_s : 0.0);
                    const double xs = nn * (x->fwd_s + x->bwd_s + xr) + nf * x->full_s;
                    if (k / LP_FFN_COUNT == LP_MIX_MAMBA)
                        mambas += xs;
                    else
                        mixs += xs;
                    if (ff == LP_FFN_MOE) moes += nn * (y->fwd_s + y->bwd_s + yr) + nf * y->full_s;
                    if (ff == LP_FFN_DENSE)
                        mlps += nn * (y->fwd_s + y->bwd_s + yr) + nf * y->full_s;
                }
                blocks += n[k] * nb;
                redone += nr[k] * nb;
            }
        }
        res->kind_attn_s = mbs * mixs;
        res->kind_mamba_s = mbs * mambas;
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

    if (!numbers_sound(res, project(s, r, res))) {
        refuse_numeric(res);
        if (nev) *nev = 0;
        return;
    }
    if (ev && nev) {
        /* DP synchronisation on every stage's communication stream, from
         * the end of its last backward pass: the critical stage's lasts
         * until the iteration's sync point (its breakdown's exposed DP
         * time), every other stage's its own reduction (the stage model of
         * end0 / endl / end_mid above). Then the optimizer step on every stage at
         * the sync point: Megatron's clip_grad_norm all-reduces the
         * gradient norm over the model-parallel group, so no stage steps
         * before the slowest has reduced. */
        const int n0 = *nev;
        if (torch) { /* PyTorch's collectives, as lp_torch_dp plays them out */
            struct lp_dp_rec rec = {ev + *nev, cap - *nev, 0};
            struct lp_torch_dp tdp;
            lp_torch_dp(&s->cm, r, &md->pr, &md->ps, &tdp, &rec);
            trace_torch_colls(ev, n0, &rec);
            *nev += rec.n;
        } else if (p->zero >= 3 && p->dp * p->cp > 1) {
            trace_zero3_colls(ev, cap, nev, n0, r, dpc);
        }
        for (int st = 0; st < p->pp && *nev < cap; st++) {
            double st_end = 0;
            for (int i = 0; i < n0; i++)
                if (ev[i].stage == st && ev[i].stream == 0)
                    st_end = fmax(st_end, ev[i].start_s + ev[i].dur_s);
            /* a middle stage draws its own entry where it has one, else
             * stage 1's (the middle stages alike: lp_dp_mid_stages), else
             * stage 0's */
            int k = st == last ? 1 : 0;
            if (st > 0 && st < last && n_mid > 0) k = n_mid > 1 && st == md->pr.mid[1] ? 3 : 2;
            /* the critical stage's lasts until the sync point */
            const double from = st == crit_st && crit_st == crit ? crit_end : st_end;
            double dur =
                st == crit_st ? end - from : dpc->exposed_s[k] + dpc->hidden_s[k] * contention;
            if (!torch) trace_dp_buckets(ev, cap, nev, r, dpc, st, k, st_end);
            trace_dp_add(ev, cap, nev, st, LP_DPC_CONTENTION, st_end + dpc->exposed_s[k],
                         dpc->hidden_s[k] * contention, 0);
            if ((st == 0 || st == last) && dpc->emb_sync_s > 0)
                trace_dp_add(ev, cap, nev, st, LP_DPC_EMB_SYNC, end - dpc->emb_sync_s,
                             dpc->emb_sync_s, 0);
            ev[(*nev)++] = (struct lp_event){.stage = st,
                                             .stream = 1,
                                             .micro = -1,
                                             .kind = LP_EV_DP,
                                             .start_s = st == crit_st ? from : st_end,
                                             .dur_s = dur};
            if (*nev < cap)
                ev[(*nev)++] = (struct lp_event){.stage = st,
                                                 .stream = 0,
                                                 .micro = -1,
                                                 .kind = LP_EV_OPT,
                                                 .start_s = end,
                                                 .dur_s = dpc->opt_s};
        }
    }
}

static void simulate(struct lp_sim *s, const struct lp_run *run, struct lp_result *res,
                     struct lp_event *ev, int cap, int *nev, struct lp_op_order *order)
{
    struct lp_run tmp_mem, tmp_time;
    const struct lp_run *rm, *r = views(run, &tmp_mem, &tmp_time, &rm);
    struct lp_sim_mid x;
    s->mid_run = NULL; /* the head below may reuse what lp_sim_bound kept */
    if (simulate_head(s, r, rm, res, &x, order)) simulate_tail(s, r, &x, res, ev, cap, nev, false);
}

void lp_sim_run(struct lp_sim *s, const struct lp_run *run, struct lp_result *res)
{
    simulate(s, run, res, NULL, 0, NULL, NULL);
}

enum lp_bound lp_sim_bound(struct lp_sim *s, const struct lp_run *run, struct lp_result *res)
{
    struct lp_run tmp_mem, tmp_time;
    const struct lp_run *rm, *r = views(run, &tmp_mem, &tmp_time, &rm);
    s->mid_run = NULL;
    if (!simulate_head(s, r, rm, res, s->mid, NULL)) return LP_BOUND_EXACT;
    simulate_tail(s, r, s->mid, res, NULL, 0, NULL, true);
    /* what lp_sim_finish may take up: this run, as it is now */
    s->mid_run = run;
    memcpy(&s->mid_par, &run->par, sizeof(run->par)); /* padding too: memcmp reads it */
    if (res->feasible) return LP_BOUND_LOWER;
    return res->reason == LP_REASON_NUMERIC ? LP_BOUND_NONE : LP_BOUND_EXACT;
}

void lp_sim_finish(struct lp_sim *s, const struct lp_run *run, struct lp_result *res)
{
    if (s->mid_run != run || memcmp(&s->mid_par, &run->par, sizeof(run->par)) != 0) {
        lp_sim_run(s, run, res); /* not the run lp_sim_bound last bounded */
        return;
    }
    s->mid_run = NULL;
    s->finish_hits++;
    struct lp_run tmp_mem, tmp_time;
    const struct lp_run *rm, *r = views(run, &tmp_mem, &tmp_time, &rm);
    (void)rm;
    s->mid->ks.m = &r->model; /* the view may live in another frame than the bound's */
    *res = s->mid->res;
    simulate_tail(s, r, s->mid, res, NULL, 0, NULL, false);
}

int lp_sim_trace(struct lp_sim *s, const struct lp_run *run, struct lp_result *res,
                 struct lp_event *ev, int cap, int *n, struct lp_op_order *order,
                 struct lp_err *err)
{
    (void)err;
    *n = 0;
    if (order) memset(order, 0, sizeof(*order));
    simulate(s, run, res, ev, cap, n, order);
    return LP_OK;
}
