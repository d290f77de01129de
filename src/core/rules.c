/* The validity rules of a configuration, in one ordered list
 * (include/llmplan/rules.h): lp_sim_validate runs them all, the space walk
 * (space.c) runs each dimension's rules as it fixes that digit and skips the
 * block below a failing one. Every rule reads only the dimensions up to its
 * tag (the walk fills the later ones with the index's values too, so a rule
 * that read past its tag would still give the right verdict but skip
 * wrongly: tests/unit/test_space.c counts a walk by spans against one by
 * one, tests/unit/test_feasibility.c compares every reason with
 * lp_sim_validate's). */
#include <stdint.h>

#include "llmplan/arch.h"
#include "llmplan/rules.h"

/* ---- tp: the model's shapes and the node ---- */

/* TP groups stay inside the scale-up domain (NVLink): Megatron places TP
 * innermost and production runs keep it on NVLink; a system that allows it
 * (tp_across_nodes, as vTrain's case study 1 runs TP 16 on 8-GPU nodes)
 * takes the groups' collectives over the network (lp_coll_time places them) */
static bool tp_node(const struct lp_rule_view *v, double *a, double *b)
{
    *a = v->par->tp;
    *b = lp_system_scale_up(v->system);
    return lp_tp_spans_domains(v->system, v->par->tp) && !v->system->tp_across_nodes;
}

static bool tp_heads(const struct lp_rule_view *v, double *a, double *b)
{
    const struct lp_model *m = v->model;
    const int tp = v->par->tp;
    *a = tp;
    *b = m->kv_heads % tp ? m->kv_heads : m->heads;
    return m->heads % tp || m->kv_heads % tp;
}

/* Mamba heads and B/C groups split over TP */
static bool tp_mamba(const struct lp_rule_view *v, double *a, double *b)
{
    const struct lp_model *m = v->model;
    const int tp = v->par->tp;
    if (m->mamba.version <= 0) return false;
    const int nh = (int)lp_arch_mamba_heads(m), G = m->mamba.n_groups > 0 ? m->mamba.n_groups : 1;
    *a = tp;
    *b = m->mamba.version == 2 ? (nh % tp ? nh : G) : lp_arch_mamba_inner(m);
    return (m->mamba.version == 2 && (nh % tp || G % tp)) || (int64_t)lp_arch_mamba_inner(m) % tp;
}

/* the FFN over TP, routed experts over the expert-TP group (etp, default tp) */
static bool tp_ffn(const struct lp_rule_view *v, double *a, double *b)
{
    const struct lp_model *m = v->model;
    const struct lp_parallel *p = v->par;
    const int etp = p->etp > 0 ? p->etp : p->tp;
    const int ffn = m->moe.experts > 0 ? m->moe.ffn_hidden : m->ffn_hidden;
    *a = m->ffn_hidden % p->tp ? p->tp : etp;
    *b = m->ffn_hidden % p->tp ? m->ffn_hidden : ffn;
    return m->ffn_hidden % p->tp || ffn % etp ||
           (m->moe.shared_experts > 0 && m->moe.shared_ffn_hidden % p->tp);
}

/* ---- pp, vp: the layers over the (virtual) stages ---- */

/* The layers split over pp x vp chunks without an empty one (lp_arch_split,
 * the simulator's own split). With vp = 1 decided at pp: more chunks split
 * worse, so a pp that fails fails for every vp. */
static bool split_fails(const struct lp_rule_view *v, int vp, double *a, double *b)
{
    struct lp_parallel p = *v->par;
    p.vp = vp;
    int first[LP_ARCH_SPLIT_CAP];
    *a = (double)v->par->pp * v->par->vp;
    *b = v->model->layers;
    return lp_arch_split(v->model, &p, first, LP_ARCH_SPLIT_CAP) != 0;
}

/* stated first / last stage layers: no such monotony, decided at vp */
static bool uneven(const struct lp_parallel *p)
{
    return p->first_stage_layers > 0 || p->last_stage_layers > 0;
}

static bool pp_layers(const struct lp_rule_view *v, double *a, double *b)
{
    return !uneven(v->par) && split_fails(v, 1, a, b);
}

static bool vp_layers(const struct lp_rule_view *v, double *a, double *b)
{
    return (v->par->vp > 1 || uneven(v->par)) && split_fails(v, v->par->vp, a, b);
}

/* ---- ranges: products of degrees and the micro-batch count stay within
 * int (every later product of them, such as pp*vp or dp*cp, is then an int):
 * LP_MAX_GPUS, LP_MAX_MICROBATCHES ---- */

static bool range_gpus_fails(const struct lp_parallel *p, double *a, double *b)
{
    *a = (double)p->tp * p->pp * p->cp * p->dp;
    *b = LP_MAX_GPUS;
    return *a > LP_MAX_GPUS;
}

static bool range_gpus(const struct lp_rule_view *v, double *a, double *b)
{
    return range_gpus_fails(v->par, a, b);
}

static bool range_ep(const struct lp_rule_view *v, double *a, double *b)
{
    range_gpus_fails(v->par, a, b);
    return (int64_t)v->par->ep > LP_MAX_GPUS;
}

static bool range_vp(const struct lp_rule_view *v, double *a, double *b)
{
    range_gpus_fails(v->par, a, b);
    return (int64_t)v->par->pp * v->par->vp > LP_MAX_GPUS;
}

static int64_t micro_batches(const struct lp_rule_view *v)
{
    return v->train->global_batch / ((int64_t)v->par->micro_batch * v->par->dp);
}

static bool range_micro(const struct lp_rule_view *v, double *a, double *b)
{
    const int64_t micro = micro_batches(v);
    *a = (double)micro * v->par->vp;
    *b = LP_MAX_MICROBATCHES;
    return micro > LP_MAX_MICROBATCHES / v->par->vp;
}

/* ---- cp, ep ---- */

/* the sequence splits into 2 cp chunks (load-balanced causal CP) */
static bool cp_seq(const struct lp_rule_view *v, double *a, double *b)
{
    *a = 2 * v->par->cp;
    *b = v->model->seq_len;
    return v->par->cp > 1 && v->model->seq_len % (2 * v->par->cp);
}

/* MoE parallel folding (Megatron-Core): the expert layers' EP x ETP x
 * expert-DP grid covers the dense layers' TP x CP x DP ranks; a dense model
 * has ep = etp = 1 */
static bool ep_grid(const struct lp_rule_view *v, double *a, double *b)
{
    const struct lp_parallel *p = v->par;
    const struct lp_model *m = v->model;
    const int etp = p->etp > 0 ? p->etp : p->tp;
    *a = *b = 0;
    if (m->moe.experts == 0) return p->ep != 1 || p->etp > 1;
    return m->moe.experts % p->ep || ((int64_t)p->tp * p->cp * p->dp) % ((int64_t)p->ep * etp);
}

/* ---- schedule, micro-batch ---- */

/* the interleaved schedule and vp > 1 go together (vp = 1 with
 * "interleaved" would duplicate 1f1b), over at least two stages */
static bool schedule(const struct lp_rule_view *v, double *a, double *b)
{
    const struct lp_parallel *p = v->par;
    *a = *b = 0;
    if (p->vp > 1) return p->schedule != LP_SCHED_INTERLEAVED || p->pp < 2;
    return p->schedule == LP_SCHED_INTERLEAVED;
}

/* global batch = micro_batch * dp * (number of micro-batches) */
static bool batch(const struct lp_rule_view *v, double *a, double *b)
{
    const int64_t mbdp = (int64_t)v->par->micro_batch * v->par->dp;
    *a = (double)mbdp;
    *b = (double)v->train->global_batch;
    return v->train->global_batch % mbdp != 0;
}

/* interleaving runs the micro-batches in groups of pp (Megatron) */
static bool schedule_micro(const struct lp_rule_view *v, double *a, double *b)
{
    *a = *b = 0;
    return v->par->vp > 1 && micro_batches(v) % v->par->pp;
}

/* ---- settings ---- */

/* sequence parallelism shards along the TP group: meaningless at tp = 1 */
static bool sp(const struct lp_rule_view *v, double *a, double *b)
{
    *a = *b = 0;
    return v->par->sequence_parallel && v->par->tp < 2;
}

static bool zero(const struct lp_rule_view *v, double *a, double *b)
{
    const struct lp_parallel *p = v->par;
    *a = *b = 0;
    return p->zero < 0 || p->zero > 3 || (p->zero == 3 && p->pp > 1);
}

/* a stage below the framework's least (lp_fw_min_zero: fsdp2 always
 * shards); *b the least, so the message can say so (*b 0: the rule above) */
static bool zero_framework(const struct lp_rule_view *v, double *a, double *b)
{
    *a = v->par->zero;
    *b = lp_fw_min_zero(v->fw);
    return v->par->zero < lp_fw_min_zero(v->fw);
}

/* ---- the framework: options and layouts it runs as modelled ---- */

enum lp_fw_gap lp_torch_layout_gap(const struct lp_model *m, const struct lp_parallel *p)
{
    if (p->pp != 1 || p->vp != 1) return LP_GAP_PP;
    if (m->moe.experts > 0) return LP_GAP_MOE;
    if (m->mtp_layers > 0) return LP_GAP_MTP;
    if (m->layers + 2 > LP_TORCH_MAX_UNITS) return LP_GAP_UNITS;
    for (int i = 0; i < m->layers; i++) { /* transformer blocks only */
        enum lp_mixer mx;
        enum lp_ffn ff;
        lp_arch_layer(m, i, &mx, &ff);
        if (mx != LP_MIX_ATTN || ff != LP_FFN_DENSE) return LP_GAP_LAYERS;
    }
    return LP_GAP_NONE;
}

enum lp_fw_gap lp_fw_fsdp_gap(enum lp_framework k, const struct lp_model *m,
                              const struct lp_parallel *p, int lora_rank)
{
    if (!lp_fw_is_fsdp(k) || (int64_t)p->dp * p->cp < 2) return LP_GAP_NONE;
    const enum lp_fw_gap g = lp_torch_layout_gap(m, p);
    if (g != LP_GAP_NONE) return g;
    return lora_rank > 0 ? LP_GAP_LORA : LP_GAP_NONE;
}

const char *lp_fw_gap_text(enum lp_fw_gap g, const char **key)
{
    static const struct {
        const char *key, *text;
    } t[LP_GAP_COUNT] = {
        {"framework", "none"},
        {"framework.hybrid_shard",
         "hybrid_shard is an FSDP sharding strategy of zero 2 or 3 (an fsdp framework)"},
        {"parallel.pp", "fsdp is modelled per unit without pipeline parallelism (pp = vp = 1)"},
        {"model", "fsdp is modelled per unit for dense models (no MoE layers)"},
        {"model.mtp_layers", "fsdp is modelled per unit without MTP layers"},
        {"model", "fsdp is modelled per unit for attention + dense MLP blocks only"},
        {"model.layers", "fsdp is modelled per unit for at most 1022 blocks"},
        {"training.finetune", "fsdp is modelled per unit without LoRA"},
        {"training.bf16_first_layers, bf16_last_layers",
         "Megatron-Core keeps at most one pipeline stage's layers (layers / pp) in bf16 at either "
         "end under fp8"},
        {"training.bf16_first_layers, bf16_last_layers",
         "Megatron-Core keeps no first / last layers in bf16 under fp8 delayed scaling"},
        {"training.bf16_first_layers, bf16_last_layers",
         "bf16 first / last layers are Megatron-Core's first_last_layers_bf16 (framework "
         "megatron)"},
        {"training.precision",
         "the framework's stack trains in fp16 or bf16 only (no Transformer Engine fp8 recipes "
         "before 2023)"},
        {"framework.tp_overlap",
         "tp_overlap's userbuffers (Transformer Engine) join the TP group over NVLink: TP no wider "
         "than the scale-up domain"},
    };
    const unsigned i = (unsigned)g < LP_GAP_COUNT ? (unsigned)g : 0;
    if (key) *key = t[i].key;
    return t[i].text;
}

enum lp_fw_gap lp_bf16_layers_gap(enum lp_framework k, const struct lp_training *t,
                                  enum lp_prec prec, const struct lp_model *m,
                                  const struct lp_parallel *p)
{
    if (t->bf16_first_layers + t->bf16_last_layers == 0) return LP_GAP_NONE;
    if (k != LP_FW_MEGATRON) return LP_GAP_BF16_FW;
    if (prec != LP_FP8 && prec != LP_MXFP8) return LP_GAP_NONE;
    if (prec == LP_FP8 && t->fp8_scaling == LP_FP8_DELAYED) return LP_GAP_BF16_DELAYED;
    const int per_stage = m->layers / (p->pp > 0 ? p->pp : 1);
    return t->bf16_first_layers > per_stage || t->bf16_last_layers > per_stage ? LP_GAP_BF16_STAGE
                                                                               : LP_GAP_NONE;
}

enum lp_fw_gap lp_fw_precision_gap(enum lp_framework k, enum lp_prec prec)
{
    const bool fp8 = prec == LP_FP8 || prec == LP_MXFP8 || prec == LP_NVFP4;
    const bool old = k == LP_FW_MEGATRON_2021 || k == LP_FW_MEGATRON_DEEPSPEED;
    return fp8 && old ? LP_GAP_FP8_STACK : LP_GAP_NONE;
}

/* a precision the framework's stack cannot train in (lp_fw_precision_gap) */
static bool fw_precision(const struct lp_rule_view *v, double *a, double *b)
{
    const enum lp_fw_gap g = lp_fw_precision_gap(v->fw, v->precision);
    *a = g;
    *b = 0;
    return g != LP_GAP_NONE;
}

/* the bf16 first / last layers Megatron-Core refuses, and any outside it
 * (lp_bf16_layers_gap); *b the layers of one stage */
static bool bf16_layers(const struct lp_rule_view *v, double *a, double *b)
{
    const enum lp_fw_gap g = lp_bf16_layers_gap(v->fw, v->train, v->precision, v->model, v->par);
    *a = g;
    *b = v->model->layers / v->par->pp;
    return g != LP_GAP_NONE;
}

/* hybrid_shard where it does not run (config.h lp_fw_hybrid_runs); *b the
 * zero stage */
static bool fw_hybrid(const struct lp_rule_view *v, double *a, double *b)
{
    *a = LP_GAP_HYBRID;
    *b = v->par->zero;
    return v->hybrid_shard && !lp_fw_hybrid_runs(v->fw, v->par->zero);
}

/* TP communication overlap (Transformer Engine's userbuffers, which map the
 * TP group's buffers over NVLink) with a TP group across scale-up domains
 * (the system's tp_across_nodes); *b the domain's GPUs */
static bool fw_tp_overlap(const struct lp_rule_view *v, double *a, double *b)
{
    *a = LP_GAP_TP_OVERLAP_NODES;
    *b = lp_system_scale_up(v->system);
    return v->tp_overlap && lp_tp_spans_domains(v->system, v->par->tp);
}

/* an FSDP framework's model and layout outside lp_torch_dp (LoRA: below) */
static bool fsdp_layout(const struct lp_rule_view *v, double *a, double *b)
{
    const enum lp_fw_gap g = lp_fw_fsdp_gap(v->fw, v->model, v->par, 0);
    *a = g;
    *b = 0;
    return g != LP_GAP_NONE;
}

/* ... and its LoRA (the fine-tuning digit) */
static bool fsdp_lora(const struct lp_rule_view *v, double *a, double *b)
{
    const enum lp_fw_gap g = lp_fw_fsdp_gap(v->fw, v->model, v->par, v->lora_rank);
    *a = g;
    *b = 0;
    return g != LP_GAP_NONE;
}

static bool precision(const struct lp_rule_view *v, double *a, double *b)
{
    *a = *b = 0;
    return !(v->system->gpu.peak_flops[v->precision] > 0);
}

const struct lp_rule lp_rules[] = {
    {LP_DIM_TP, LP_REASON_TP_NODE, tp_node},
    {LP_DIM_TP, LP_REASON_TP_HEADS, tp_heads},
    {LP_DIM_TP, LP_REASON_TP_HEADS, tp_mamba},
    {LP_DIM_TP, LP_REASON_TP_FFN, tp_ffn},
    {LP_DIM_PP, LP_REASON_PP_LAYERS, pp_layers},
    {LP_DIM_CP, LP_REASON_RANGE, range_gpus},
    {LP_DIM_CP, LP_REASON_CP_SEQ, cp_seq},
    {LP_DIM_EP, LP_REASON_RANGE, range_ep},
    {LP_DIM_EP, LP_REASON_EP, ep_grid},
    {LP_DIM_VP, LP_REASON_RANGE, range_vp},
    {LP_DIM_VP, LP_REASON_PP_LAYERS, vp_layers},
    {LP_DIM_SCHEDULE, LP_REASON_SCHEDULE, schedule},
    {LP_DIM_MICRO_BATCH, LP_REASON_RANGE, range_micro},
    {LP_DIM_MICRO_BATCH, LP_REASON_BATCH, batch},
    {LP_DIM_MICRO_BATCH, LP_REASON_SCHEDULE, schedule_micro},
    {LP_DIM_SP, LP_REASON_SP, sp},
    {LP_DIM_ZERO, LP_REASON_ZERO, zero},
    {LP_DIM_FRAMEWORK, LP_REASON_ZERO, zero_framework},
    {LP_DIM_FRAMEWORK, LP_REASON_FRAMEWORK, fw_hybrid},
    {LP_DIM_FRAMEWORK, LP_REASON_FRAMEWORK, fw_tp_overlap},
    {LP_DIM_FRAMEWORK, LP_REASON_FRAMEWORK, fsdp_layout},
    {LP_DIM_PRECISION, LP_REASON_PRECISION, precision},
    {LP_DIM_PRECISION, LP_REASON_FRAMEWORK, fw_precision},
    {LP_DIM_PRECISION, LP_REASON_FRAMEWORK, bf16_layers},
    {LP_DIM_FINETUNE, LP_REASON_FRAMEWORK, fsdp_lora},
};
const int lp_rule_count = (int)(sizeof(lp_rules) / sizeof(lp_rules[0]));

enum lp_reason lp_rules_validate(const struct lp_run *run, double *a, double *b)
{
    const struct lp_parallel *p = &run->par;
    *a = *b = 0;
    if (p->tp < 1 || p->pp < 1 || p->dp < 1 || p->cp < 1 || p->ep < 1 || p->vp < 1 ||
        p->micro_batch < 1)
        return LP_REASON_GPU_COUNT;
    const struct lp_rule_view v = {
        &run->model,          &run->system, &run->train,          p,
        run->train.precision, run->fw.kind, run->fw.hybrid_shard, run->train.lora_rank,
        run->fw.tp_overlap};
    for (int k = 0; k < lp_rule_count; k++)
        if (lp_rules[k].fails(&v, a, b)) return lp_rules[k].reason;
    *a = *b = 0;
    return LP_REASON_NONE;
}
