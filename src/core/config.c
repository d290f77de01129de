/* Name tables for enums, framework defaults (parameter counts: arch.c). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmplan/config.h"
#include "llmplan/status.h"

static const char *const prec_names[LP_PREC_COUNT] = {"fp32", "fp16",  "bf16",
                                                      "fp8",  "mxfp8", "nvfp4"};
static const char *const fp8_scaling_names[LP_FP8_SCALING_COUNT] = {"delayed", "current"};
static const char *const dispatcher_names[LP_DISPATCH_COUNT] = {"alltoall", "hybridep"};
static const char *const graph_scope_names[LP_GRAPH_SCOPES] = {"attn", "mamba", "moe_router",
                                                               "moe"};

const char *lp_graph_scope_name(int i)
{
    return i >= 0 && i < LP_GRAPH_SCOPES ? graph_scope_names[i] : NULL;
}
static const char *const recompute_names[LP_RECOMPUTE_COUNT] = {"none", "selective", "full"};
static const char *const rc_module_names[LP_RC_MODULES] = {
    "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts", "op"};
static const char *const rc_method_names[LP_RC_METHOD_COUNT] = {"uniform", "block"};

const char *lp_rc_module_name(int i)
{
    return i >= 0 && i < LP_RC_MODULES ? rc_module_names[i] : NULL;
}
const char *lp_rc_method_name(enum lp_rc_method m)
{
    return (unsigned)m < LP_RC_METHOD_COUNT ? rc_method_names[m] : "?";
}
static const char *const schedule_names[LP_SCHED_COUNT] = {"gpipe", "1f1b", "interleaved", "zb"};
static const char *const framework_names[LP_FW_COUNT] = {
    "megatron", "megatron-2021", "megatron-deepspeed", "fsdp", "hf", "ddp", "fsdp1", "fsdp2"};

const char *lp_prec_name(enum lp_prec p)
{
    return (unsigned)p < LP_PREC_COUNT ? prec_names[p] : "?";
}
const char *lp_recompute_name(enum lp_recompute r)
{
    return (unsigned)r < LP_RECOMPUTE_COUNT ? recompute_names[r] : "?";
}
const char *lp_schedule_name(enum lp_schedule s)
{
    return (unsigned)s < LP_SCHED_COUNT ? schedule_names[s] : "?";
}
const char *lp_framework_name(enum lp_framework f)
{
    return (unsigned)f < LP_FW_COUNT ? framework_names[f] : "?";
}

void lp_calib_builtin(struct lp_calib *c)
{
    /* data/calibration.json as shipped; its provenance is there and in
     * docs/calibration.md */
    memset(c, 0, sizeof(*c));
    c->sustained_frac = 0.87;
    c->host_overlap = 1.25;
    /* host time per kernel, each fitted on the calib half of its stack's
     * rows: Megatron-Bridge (33 rows; it shows where the host cannot run
     * ahead: dropless MoE's synchronisations, TE's per-expert GEMM launches),
     * Narayanan Tables 1-2 without ZeRO-3 (10), vTrain + GPT-NeoX + the ZeRO-3
     * rows of Narayanan Table 2 (730), MosaicML (38),
     * Xia et al. 2024 (Transformers + PEFT eager PyTorch) */
    c->host_op_s[LP_FW_MEGATRON] = 29e-6;
    c->host_op_s[LP_FW_MEGATRON_2021] = 0.0;
    c->host_op_s[LP_FW_MEGATRON_DEEPSPEED] = 82e-6;
    c->host_op_s[LP_FW_FSDP] = 100e-6;
    c->host_op_s[LP_FW_HF] = 57e-6;
    /* ddp, fsdp1 and fsdp2 (lp_fw_host_derived) are not fitted: their host
     * time is lp_eager_host_op_s, whatever cal holds (0 here) */
    c->attn_old_ratio = 0.52;
}

enum lp_sustained_src lp_run_sustained_src(const struct lp_run *r)
{
    if (r->system.gpu.sustained_frac > 0)
        return r->system.gpu.sustained_override ? LP_SUSTAINED_OVERRIDE : LP_SUSTAINED_GPU;
    if (r->fw.cal.sustained_frac > 0) return LP_SUSTAINED_CALIB;
    return LP_SUSTAINED_BUILTIN;
}

const char *lp_sustained_src_name(enum lp_sustained_src s)
{
    static const char *const names[LP_SUSTAINED_SRC_COUNT] = {"gpu", "calibration", "builtin",
                                                              "override"};
    return (unsigned)s < LP_SUSTAINED_SRC_COUNT ? names[s] : "?";
}

double lp_run_sustained(const struct lp_run *r)
{
    switch (lp_run_sustained_src(r)) {
    case LP_SUSTAINED_GPU:
    case LP_SUSTAINED_OVERRIDE:
        return r->system.gpu.sustained_frac;
    case LP_SUSTAINED_CALIB:
        return r->fw.cal.sustained_frac;
    default: {
        struct lp_calib c;
        lp_calib_builtin(&c);
        return c.sustained_frac;
    }
    }
}

const char *lp_xent_name(enum lp_xent x)
{
    static const char *const names[LP_XENT_COUNT] = {"fp32", "fused", "native", "upcast", "float"};
    return (unsigned)x < LP_XENT_COUNT ? names[x] : "?";
}

const char *lp_moe_impl_name(enum lp_moe_impl m)
{
    static const char *const names[LP_MOE_IMPL_COUNT] = {"grouped", "eager", "switch"};
    return (unsigned)m < LP_MOE_IMPL_COUNT ? names[m] : "?";
}

const char *lp_ub_rs_name(enum lp_ub_rs m)
{
    static const char *const names[LP_UB_RS_COUNT] = {"pipeline", "ring_exchange"};
    return (unsigned)m < LP_UB_RS_COUNT ? names[m] : "?";
}

const char *lp_lora_targets_name(enum lp_lora_targets t)
{
    static const char *const names[LP_LORA_TARGETS_COUNT] = {"all", "moe"};
    return (unsigned)t < LP_LORA_TARGETS_COUNT ? names[t] : "?";
}

/* Days of month m (1-12) of year y, Gregorian. */
static int month_days(int y, int m)
{
    static const int d[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : d[m - 1];
}

bool lp_is_iso_date(const char *s)
{
    static const char *const forms[] = {"dddd", "dddd-dd", "dddd-dd-dd"};
    bool shape = false;
    for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]) && !shape; f++) {
        const char *t = forms[f];
        size_t i = 0;
        while (t[i] && s[i] && (t[i] == 'd' ? isdigit((unsigned char)s[i]) : s[i] == t[i]))
            i++;
        shape = !t[i] && !s[i];
    }
    if (!shape) return false;
    const int y = atoi(s), m = s[4] ? atoi(s + 5) : 1, d = s[4] && s[7] ? atoi(s + 8) : 1;
    return m >= 1 && m <= 12 && d >= 1 && d <= month_days(y, m);
}

/* An ISO date of any precision as its first day, YYYY-MM-DD (len >= 11). */
static void first_day(const char *s, char *out)
{
    snprintf(out, 11, "%.4s-%.2s-%.2s", s, s[4] ? s + 5 : "01", s[4] && s[7] ? s + 8 : "01");
}

/* A name picks that price; then a price's own date; then any other date
 * the price in effect then: the latest dated on or before it, each date
 * counting from its first day ("2024" is 2024-01-01, so "2025" or
 * "2025-01" picks a price dated 2025-01-01). Names are never dates
 * (parse_prices), so the three cannot collide. */
int lp_system_pick_price(struct lp_system *s, const char *sel)
{
    int pick = -1;
    for (int i = 0; sel && i < s->nprices && pick < 0; i++)
        if (strcmp(s->prices[i].name, sel) == 0) pick = i;
    for (int i = 0; sel && i < s->nprices && pick < 0; i++)
        if (strcmp(s->prices[i].date, sel) == 0) pick = i;
    if (pick < 0 && sel && lp_is_iso_date(sel)) {
        char want[11], best[11] = "", d[11];
        first_day(sel, want);
        for (int i = 0; i < s->nprices; i++) {
            if (!lp_is_iso_date(s->prices[i].date)) continue;
            first_day(s->prices[i].date, d);
            if (strcmp(d, want) <= 0 && (pick < 0 || strcmp(d, best) > 0)) {
                pick = i;
                memcpy(best, d, sizeof(best));
            }
        }
    }
    if (pick < 0) return LP_ENOTFOUND;
    s->price_per_gpu_hour_usd = s->prices[pick].usd_per_gpu_hour;
    s->price_pick = pick + 1;
    return LP_OK;
}

const char *lp_batching_name(enum lp_batching b)
{
    static const char *const names[LP_BATCHING_COUNT] = {"longest", "grouped", "packed"};
    return (unsigned)b < LP_BATCHING_COUNT ? names[b] : "?";
}

/* A length rounded up to the collator's multiple. */
static double padded_to(const struct lp_dataset *d, double len)
{
    const double q = d->pad_multiple > 1 ? d->pad_multiple : 1;
    return ceil(len / q) * q;
}

/* Dynamic padding (LLaMA-Factory's DataCollatorForSeq2Seq pads a batch to
 * its longest query, rounded up to pad_multiple): the longest of b queries
 * drawn from the length distribution falls in bin i with probability
 * F_i^b - F_{i-1}^b (F: the cumulative fraction), so the expected padded
 * length is the sum of ceil(len_i) times that probability. */
static double longest_len(const struct lp_dataset *d, int b)
{
    double F = 0, prev = 0, e = 0;
    for (int i = 0; i < d->nbins; i++) {
        F += d->frac[i];
        const double Fb = i == d->nbins - 1 ? 1.0 : pow(fmin(F, 1.0), b);
        e += padded_to(d, d->len[i]) * (Fb - prev);
        prev = Fb;
    }
    return e;
}

/* E[ceil(B / b)] for B ~ Binomial(M, S): the pmf by its ratio recurrence
 * from the mode (value 1) outwards until the terms fall below 1e-17 of it,
 * then normalised, so neither (1 - S)^M's underflow nor lgamma is needed. */
static double binom_ceil_mean(double M, double S, int b)
{
    if (!(S > 0)) return 0.0;
    if (!(S < 1)) return ceil(M / b);
    const double r = S / (1.0 - S);
    const double mode = fmin(floor((M + 1.0) * S), M);
    double sum = 1.0, e = ceil(mode / b), p = 1.0;
    for (double j = mode; j < M; j++) { /* p_{j+1} = p_j (M - j) / (j + 1) r */
        p *= (M - j) / (j + 1.0) * r;
        if (p < 1e-17) break;
        sum += p;
        e += p * ceil((j + 1.0) / b);
    }
    p = 1.0;
    for (double j = mode; j > 0; j--) { /* p_{j-1} = p_j j / ((M - j + 1) r) */
        p *= j / ((M - j + 1.0) * r);
        if (p < 1e-17) break;
        sum += p;
        e += p * ceil((j - 1.0) / b);
    }
    return e / sum;
}

/* Hugging Face Trainer's group_by_length (transformers trainer.py
 * _get_train_sampler: LengthGroupedSampler(train_batch_size x
 * gradient_accumulation_steps); trainer_pt_utils.py
 * get_length_grouped_indices): megabatches of M = mult x b x accum random
 * queries, mult = min(queries // (4 b accum), 50) and at least 1, each
 * sorted longest first and cut into n = mult x accum micro-batches of b
 * neighbours (the swap of the longest batch to the front changes no
 * length). The k-th micro-batch pads to the (k b + 1)-th longest of the M
 * draws, which is at least bin i's length when B_i, the draws at bin i or
 * above (Binomial(M, S_i), S_i the fraction at or above bin i), reach
 * k b + 1. Summed over the n micro-batches, sum_k P(B_i >= k b + 1) =
 * E[ceil(B_i / b)], so the mean padded length is exactly
 *     (1/n) sum_i (len_i - len_{i-1}) E[ceil(B_i / b)]
 * (padded lengths, len_{-1} = 0). With n = 1 it is longest_len's. */
static double grouped_len(const struct lp_dataset *d, int b, int accum)
{
    const double ba = (double)b * (accum > 1 ? accum : 1);
    const double mult = fmax(1.0, fmin(floor(d->queries / (4.0 * ba)), 50.0));
    const double M = mult * ba, n = M / b;
    double S = 1.0, prev = 0, e = 0;
    for (int i = 0; i < d->nbins; i++) {
        const double L = padded_to(d, d->len[i]);
        e += (L - prev) * binom_ceil_mean(M, i == 0 ? 1.0 : S, b); /* S_0 = 1: n */
        prev = L;
        S -= d->frac[i];
    }
    return e / n;
}

double lp_dataset_batch_len(const struct lp_dataset *d, int b, int accum, bool worst)
{
    if (d->nbins <= 0) return 0.0;
    if (d->batching == LP_BATCHING_PACKED) return d->pack_len;
    /* the batch that must fit: its longest query (the dataset's, max_len
     * when given, e.g. LLaMA-Factory's cutoff_len) and all b padded to it */
    if (worst) return padded_to(d, fmax(d->len[d->nbins - 1], d->max_len));
    return d->batching == LP_BATCHING_GROUPED ? grouped_len(d, b, accum) : longest_len(d, b);
}

double lp_dataset_queries_per_row(const struct lp_dataset *d)
{
    if (d->nbins <= 0 || d->batching != LP_BATCHING_PACKED) return 1.0;
    double mean = 0;
    for (int i = 0; i < d->nbins; i++)
        mean += d->len[i] * d->frac[i];
    return mean > 0 ? d->pack_len / mean : 1.0;
}

const char *lp_attention_name(bool flash, enum lp_attention a)
{
    static const char *const names[LP_ATTENTION_COUNT] = {"flash2", "flash1", "triton", "cudnn"};
    if (!flash) return "unfused";
    return (unsigned)a < LP_ATTENTION_COUNT ? names[a] : "?";
}

static int parse_name(const char *s, const char *const *names, int n)
{
    for (int i = 0; s && i < n; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

int lp_prec_parse(const char *s, enum lp_prec *out)
{
    int i = parse_name(s, prec_names, LP_PREC_COUNT);
    if (i < 0) return LP_EINVAL;
    *out = (enum lp_prec)i;
    return LP_OK;
}
int lp_recompute_parse(const char *s, enum lp_recompute *out)
{
    int i = parse_name(s, recompute_names, LP_RECOMPUTE_COUNT);
    if (i < 0) return LP_EINVAL;
    *out = (enum lp_recompute)i;
    return LP_OK;
}
int lp_rc_method_parse(const char *s, enum lp_rc_method *out)
{
    int i = parse_name(s, rc_method_names, LP_RC_METHOD_COUNT);
    if (i < 0) return LP_EINVAL;
    *out = (enum lp_rc_method)i;
    return LP_OK;
}
int lp_schedule_parse(const char *s, enum lp_schedule *out)
{
    int i = parse_name(s, schedule_names, LP_SCHED_COUNT);
    if (i < 0) return LP_EINVAL;
    *out = (enum lp_schedule)i;
    return LP_OK;
}
int lp_framework_parse(const char *s, enum lp_framework *out)
{
    int i = parse_name(s, framework_names, LP_FW_COUNT);
    if (i < 0) return LP_EINVAL;
    *out = (enum lp_framework)i;
    return LP_OK;
}

double lp_prec_bytes(enum lp_prec p)
{
    switch (p) {
    case LP_FP32:
        return 4.0;
    case LP_FP8:
    case LP_MXFP8:
        return 1.0;
    case LP_NVFP4:
        return 0.5;
    default:
        return 2.0;
    }
}

enum lp_prec lp_prec_table(enum lp_prec p)
{
    return p == LP_MXFP8 || p == LP_NVFP4 ? LP_FP8 : p;
}

/* Megatron-Core's module names (the last part of the path a matcher globs) */
static const char *const qmod_names[LP_QMOD_COUNT] = {"linear_qkv", "linear_proj", "in_proj",
                                                      "out_proj",   "latent_proj", "mtp"};

const char *lp_qmod_name(enum lp_qmod q)
{
    return (unsigned)q < LP_QMOD_COUNT ? qmod_names[q] : "?";
}

enum lp_prec lp_train_module_prec(const struct lp_training *t, enum lp_qmod q)
{
    if (lp_prec_table(t->precision) != LP_FP8 || (unsigned)q >= LP_QMOD_COUNT ||
        t->module_prec[q] == 0 || t->module_prec[q] > LP_PREC_COUNT)
        return t->precision;
    return (enum lp_prec)(t->module_prec[q] - 1);
}

const char *lp_fp8_scaling_name(enum lp_fp8_scaling s)
{
    return (unsigned)s < LP_FP8_SCALING_COUNT ? fp8_scaling_names[s] : "?";
}

int lp_fp8_scaling_parse(const char *s, enum lp_fp8_scaling *out)
{
    int i = parse_name(s, fp8_scaling_names, LP_FP8_SCALING_COUNT);
    if (i < 0) return LP_EINVAL;
    *out = (enum lp_fp8_scaling)i;
    return LP_OK;
}

const char *lp_dispatcher_name(enum lp_dispatcher d)
{
    return (unsigned)d < LP_DISPATCH_COUNT ? dispatcher_names[d] : "?";
}

int lp_dispatcher_parse(const char *s, enum lp_dispatcher *out)
{
    int i = parse_name(s, dispatcher_names, LP_DISPATCH_COUNT);
    if (i < 0) return LP_EINVAL;
    *out = (enum lp_dispatcher)i;
    return LP_OK;
}

int lp_system_scale_up(const struct lp_system *s)
{
    int g = s->scale_up_gpus > 0 ? s->scale_up_gpus : s->gpus_per_node;
    if (s->segment_gpus > 0 && s->segment_gpus < g) g = s->segment_gpus;
    return g > 0 ? g : 1;
}

bool lp_tp_spans_domains(const struct lp_system *s, int tp)
{
    return tp > lp_system_scale_up(s);
}

/* Eager PyTorch's host time per kernel, from published measurements (none
 * fitted; docs/frameworks.md "Host time of eager PyTorch"):
 *  - a forward op called from Python: argument parsing, the dispatcher and
 *    autograd's VariableType kernel recording the graph node. 3.8 us for
 *    `x + 1` with requires_grad=True (2.9 us without: the autograd part is
 *    0.9 us), PyTorch e63e013 (2024-03), its own eager-overhead benchmark
 *    benchmarks/dynamo/microbenchmarks/overheads.py on an H100 host
 *    (pytorch/pytorch issue #122029, 2024-03-29; the first figures,
 *    5.6 / 4.6 us on an i9-11900K, would make the per-kernel 5.63 us);
 *  - a backward kernel: autograd's engine thread runs the node's C++
 *    formula (torch/csrc/autograd/engine.cpp evaluate_function ->
 *    call_function -> fn(inputs): no Python unless a hook is registered),
 *    whose ops enter the dispatcher from C++: 0.70 us per call through the
 *    dispatcher (pytorch/pytorch issue #62032, 2021-08, a C++ op timed with
 *    torch.utils.benchmark); the engine's own bookkeeping per node (ready
 *    queue, InputBuffer) has no published figure of its own: not counted;
 *  - the launch itself, every kernel: cuLaunchKernel 3.3 us with 19
 *    arguments (3.0 with none), meta-pytorch/tritonbench PR #1017 (2026-04,
 *    GB200's Grace host);
 *  - backward kernels per forward kernel: 2, a linear's forward GEMM has two
 *    backward GEMMs (tools/autograd/derivatives.yaml `mm`: mat1 and mat2
 *    gradients), an elementwise op one gradient kernel per input.
 * Not counted (no per-kernel figure): nn.Module.__call__ (~2 us per module
 * call in 2021, PR #50431, a dozen modules per transformer block), view and
 * shape ops that launch no kernel, the hooks FSDP charges per unit and
 * parameter (sim_dp.c, PR #96958) and a slower host CPU than the
 * benchmarks'. So this is a lower bound of the real per-kernel host time. */
#define LP_EAGER_PY_OP_S 3.8e-6
#define LP_EAGER_CPP_OP_S 0.70e-6
#define LP_EAGER_LAUNCH_S 3.3e-6
#define LP_EAGER_BWD_PER_FWD 2.0

double lp_eager_host_op_s(void)
{
    const double fwd = LP_EAGER_PY_OP_S + LP_EAGER_LAUNCH_S;
    const double bwd = LP_EAGER_CPP_OP_S + LP_EAGER_LAUNCH_S;
    return (fwd + LP_EAGER_BWD_PER_FWD * bwd) / (1.0 + LP_EAGER_BWD_PER_FWD);
}

void lp_framework_defaults(enum lp_framework kind, struct lp_framework_opts *o)
{
    struct lp_calib c;
    lp_calib_builtin(&c);
    lp_framework_defaults_cal(kind, &c, o);
}

/* Defaults per framework; the reasoning and sources are in docs/frameworks.md. */
void lp_framework_defaults_cal(enum lp_framework kind, const struct lp_calib *cal,
                               struct lp_framework_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->kind = kind;
    o->cal = *cal;
    o->host_op_s = lp_fw_host_derived(kind)       ? lp_eager_host_op_s()
                   : (unsigned)kind < LP_FW_COUNT ? cal->host_op_s[kind]
                                                  : 0.0;
    o->fused_kernels = true;
    /* Megatron's masked_softmax_fusion (default on in Megatron-LM, Megatron-Core
     * and Megatron-DeepSpeed): scaled_upper_triang_masked_softmax; PyTorch-native
     * stacks run the eager ops (docs/frameworks.md) */
    o->fused_softmax =
        kind == LP_FW_MEGATRON || kind == LP_FW_MEGATRON_2021 || kind == LP_FW_MEGATRON_DEEPSPEED;
    o->host_overlap = cal->host_overlap; /* fitted: docs/calibration.md */
    o->bucket_bytes = 40e6;              /* Megatron DDP bucket (bytes); docs/frameworks.md */
    /* FSDP1 mixed precision (Composer PURE, fms-fsdp bfSixteen) reduces in
     * bf16; torchtitan's FSDP2 in fp32 (below) */
    o->grad_fp32 = !lp_fw_is_fsdp(kind) || kind == LP_FW_FSDP2;
    o->step_overhead_s = 0.0;
    /* checkpointing that re-enters autograd: Megatron's CheckpointFunction
     * (forward under torch.no_grad), torch.utils.checkpoint's default
     * use_reentrant=True (torch 2.1), Composer's FSDPConfig
     * activation_checkpointing_reentrant=True; hf below */
    o->ckpt_reentrant = true;
    /* torch.utils.checkpoint's early stop (PyTorch 2.1+, default on); it
     * acts only where the checkpointing is non-reentrant */
    o->ckpt_early_stop = true;
    switch (kind) {
    case LP_FW_MEGATRON:
        o->dp_overlap = true;
        o->tp_overlap = false;
        /* tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication
         * (and Transformer Engine's Linear): all_reduce(grad_input, async_op=True)
         * before the weight-gradient GEMM */
        o->tp_async_dgrad = true;
        o->pp_overlap = true;
        o->param_gather_overlap = true;
        o->mcore_buckets = true;
        break;
    case LP_FW_MEGATRON_2021:
        o->dp_overlap = false;
        o->tp_overlap = false;
        o->pp_overlap = false;
        o->param_gather_overlap = false;
        break;
    case LP_FW_MEGATRON_DEEPSPEED:
        o->dp_overlap = false;
        o->tp_overlap = false;
        o->pp_overlap = false;
        o->param_gather_overlap = false;
        o->bucket_bytes = 5e8;
        /* ZeRO-3 of 2021 (partition_parameters.py): one all_gather per
         * parameter tensor, one reduce_scatter per gradient */
        o->zero3_per_tensor = true;
        /* ... each over a list of world-size narrow() views, which PyTorch
         * of that era copies one kernel per rank (sim_dp.c z3_rank_copies;
         * today's DeepSpeed gathers into one flat tensor instead) */
        o->zero3_rank_copies = true;
        break;
    case LP_FW_FSDP:
    case LP_FW_FSDP1:
    case LP_FW_FSDP2:
        o->dp_overlap = true;
        o->tp_overlap = false;
        o->pp_overlap = false;
        o->param_gather_overlap = true;
        o->bucket_bytes = 100e6; /* FSDP: one wrapped block; DDP 25 MB x 4 */
        o->xent = LP_XENT_NATIVE;
        /* fms-fsdp 4ffb9bd policies/ac_handler.py and torchtitan 9dec370
         * ptd_checkpoint_wrapper: CheckpointImpl.NO_REENTRANT */
        if (kind != LP_FW_FSDP) o->ckpt_reentrant = false;
        /* torchtitan 9dec370: train.py loss_fn cross_entropy(pred.flatten(0,
         * 1).float(), labels.flatten(0, 1)): the cast, no shifted copy (the
         * dataloader shifts the labels), MixedPrecisionPolicy(reduce_dtype=
         * mixed_precision_reduce, default "float32": grad_fp32 above) */
        if (kind == LP_FW_FSDP2) o->xent = LP_XENT_FLOAT;
        /* torchtitan's eager model: norm_type "rmsnorm" (norms.py RMSNorm:
         * x.float(), pow, mean, rsqrt, mul, type_as, * weight), the complex
         * rotary, silu(w1 x) * w3 x (sim_workload.c
         * torchtitan_attention_glue); torch.compile fuses them: give
         * "fused_kernels": true for compiled runs */
        if (kind == LP_FW_FSDP2) o->fused_kernels = false;
        /* fms-fsdp trains foundation-model-stack's LLaMA in eager PyTorch
         * (no torch.compile in its published runs; f29e546d, 2024-03):
         * LayerNormParameterized(use_mean=False, use_high_precision_pow=True)
         * is the decomposed fp32 RMSNorm, RotaryEmbedding.adjusted_qk a fp32
         * mul + sum, GatedLinearUnit silu * w1 (sim_workload.c) */
        if (kind == LP_FW_FSDP1) o->fused_kernels = false;
        break;
    case LP_FW_HF:
        /* Transformers' Trainer with PEFT and bitsandbytes, eager PyTorch
         * (LLaMA-Factory); evidence per default in docs/frameworks.md */
        o->dp_overlap = true; /* DDP: bucketed all-reduce hooked on backward */
        o->tp_overlap = false;
        o->pp_overlap = false;
        o->param_gather_overlap = false;
        o->bucket_bytes = 25e6;     /* DDP bucket_cap_mb = 25 */
        o->fused_kernels = false;   /* eager RMSNorm, SiLU * up, rotary: one kernel per op */
        o->xent = LP_XENT_UPCAST;   /* modeling_mixtral.py: logits.float(), shift, CE */
        o->moe_impl = LP_MOE_EAGER; /* MixtralSparseMoeBlock: loop over experts */
        /* LLaMA-Factory 0.4.0 (model/patcher.py, _prepare_model_for_training):
         * gradient_checkpointing_kwargs={"use_reentrant": False}; 0.6+ passes True */
        o->ckpt_reentrant = false;
        break;
    case LP_FW_DDP:
        /* torch.nn.parallel.DistributedDataParallel: gradient buckets of
         * bucket_cap_mb = 25 (the first 1 MiB, dist._DEFAULT_FIRST_BUCKET_BYTES)
         * all-reduced as they fill during the backward (reducer.cpp) */
        o->dp_overlap = true;
        o->tp_overlap = false;
        o->pp_overlap = false;
        o->param_gather_overlap = false;
        o->bucket_bytes = 25.0 * 1024 * 1024;
        o->xent = LP_XENT_NATIVE;
        break;
    default:
        break;
    }
}

void lp_label_add(char *name, size_t len, const char *key, const char *value)
{
    size_t n = strlen(name);
    if (n + 1 >= len) return;
    if (n > 0 && name[n - 1] == ']')
        snprintf(name + n - 1, len - (n - 1), ",%s=%s]", key, value);
    else
        snprintf(name + n, len - n, "[%s=%s]", key, value);
}

void lp_label_number(double v, char *buf, size_t len)
{
    /* the shortest %g that reads back exactly (%g's 6 digits first) */
    for (int p = 6; p <= 17; p++) {
        snprintf(buf, len, "%.*g", p, v);
        if (strtod(buf, NULL) == v) return;
    }
}

void lp_model_set_seq_len(struct lp_model *m, int seq_len)
{
    char v[16];
    snprintf(v, sizeof(v), "%d", seq_len);
    m->seq_len = seq_len;
    lp_label_add(m->name, sizeof(m->name), "seq_len", v);
}
