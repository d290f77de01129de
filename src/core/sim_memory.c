/* Parameters and memory per GPU (docs/simulator.md section 5): the
 * parameters of every pipeline stage on one rank, the activations a layer
 * keeps for its backward, the micro-batches in flight (the schedule's
 * warm-up count, lp_sched_warmup in sim_schedule.c), and the peak over the
 * stages; lp_sim_memory and lp_sim_max_batch. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "llmplan/arch.h"
#include "sim_internal.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
/* CUDA context, cuBLAS/NCCL workspaces and allocator slack not visible to the
 * model; typical PyTorch reserved-vs-allocated gap (stated, not fitted). */
#define RUNTIME_RESERVE_BYTES (1.0 * GIB)

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

void lp_sim_count_params(const struct lp_run *r, const struct lp_kinds *ks, const int *first,
                         struct lp_params *pr)
{
    const struct lp_model *m = &r->model;
    const struct lp_parallel *p = &r->par;
    double t = p->tp, h = m->hidden;
    double V = lp_sim_vocab_padded(r);
    double kp[LP_KINDS] = {0}, kl[LP_KINDS] = {0};
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
    pr->expert0 = pr->expert_last = 0;
    pr->n_mid = 0;
    pr->mid[0] = pr->mid[1] = 0;
    pr->train_mid[0] = pr->train_mid[1] = pr->expert_mid[0] = pr->expert_mid[1] = 0;
    const double routed = m->moe.experts > 0 && r->train.lora_rank <= 0
                              ? lp_arch_routed_params(m, etp_of(r), p->ep)
                              : 0.0;
    double best_body = -1;
    for (int s = 0; s < p->pp; s++) {
        double body = 0, lora = 0, dense_p = 0, moe_p = 0;
        int nd = 0, nm = 0;
        for (int c = 0; c < p->vp; c++) {
            int n[LP_KINDS];
            lp_chunk_kinds(ks, first, c * p->pp + s, n);
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
            pr->expert0 = nm * routed;
        }
        if (s == p->pp - 1) {
            pr->stage_last = all;
            pr->train_last = r->train.lora_rank > 0 ? lora : all;
            pr->expert_last = (nm + (mk % LP_FFN_COUNT == LP_FFN_MOE ? m->mtp_layers : 0)) * routed;
        }
        if (s > 0 && s < p->pp - 1) {
            /* the middle stages sim_dp.c accounts (lp_dp_mid_stages): stage
             * s ends its last backward one ripple after stage s+1, so of
             * two middle stages with as many parameters the earlier has
             * less slack; stage 1, and the first stage holding the most
             * (when more than stage 1) */
            const double tr = r->train.lora_rank > 0 ? lora : all;
            const int j = s == 1 ? 0 : 1;
            if (s == 1 || tr > fmax(pr->train_mid[0], pr->train_mid[1])) {
                pr->mid[j] = s;
                pr->train_mid[j] = tr;
                pr->expert_mid[j] = nm * routed;
                pr->n_mid = j + 1;
            }
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
static double hf_layer_activation_bytes(const struct lp_run *r, bool attn_layer, enum lp_ffn ff)
{
    const struct lp_model *m = &r->model;
    const double e = r->train.precision == LP_FP32 ? 4.0 : 2.0, h = m->hidden;
    const double gd = (double)m->kv_heads * m->hidden / m->heads;
    const double T = r->par.micro_batch * (double)m->seq_len / r->par.cp;
    /* one norm before each part the layer has (a BlackMamba MoE layer is
     * a norm and the experts only) */
    const double norms =
        ((attn_layer ? 1.0 : 0.0) + (ff != LP_FFN_NONE ? 1.0 : 0.0)) * (4.0 + e) * h;
    const double attn = attn_layer ? e * h + e * (2.0 * h + 2.0 * gd) + e * h : 0.0;
    double ffn = 0;
    if (ff == LP_FFN_MOE)
        ffn = e * h + m->moe.top_k * (e * h + 4.0 * e * m->moe.ffn_hidden + e * h);
    else if (ff == LP_FFN_DENSE)
        ffn = e * h + 4.0 * e * m->ffn_hidden;
    return T * (norms + attn + ffn) / r->par.tp;
}

/* QLoRA under hf with gradient checkpointing: bitsandbytes' 4-bit matmul
 * (0.42.0, autograd/_functions.py, MatMul4Bit.forward) keeps its input for
 * the backward as a Python attribute, `ctx.tensors = (A, B)`, not with
 * ctx.save_for_backward (the 8-bit MatMul8bitLt.forward likewise keeps
 * `ctx.tensors = (CAt, subA, A)`: the input and its int8 transpose, one
 * byte more per element; the outlier columns subA are not counted), so the
 * saved-tensor hooks of the non-reentrant
 * torch.utils.checkpoint (torch 2.1; Xia et al.'s LLaMA-Factory 0.4.0,
 * patcher.py _prepare_model_for_training: use_reentrant False) never see
 * it: every 4-bit linear's input of every checkpointed layer stays alive
 * with that layer's autograd graph until its backward. Per token, e bytes
 * per element: q/k/v's input (one tensor) and o_proj's (attention); the
 * router's, and per routed token w1/w3's (the gathered hidden_states) and
 * w2's (the SwiGLU product) (MoE); the MLP's input and its down
 * projection's (dense). Column-parallel inputs are whole, row-parallel
 * ones split by TP. Not counted: Mamba mixers' linears; the leading
 * layers' inputs that need no gradient are taken off by
 * hf_qlora_unheld_lead_bytes. With reentrant checkpointing (fw.ckpt_reentrant:
 * LLaMA-Factory 0.6+, model/utils/checkpointing.py, use_reentrant True)
 * torch.utils.checkpoint's CheckpointFunction runs the layer's forward
 * under torch.no_grad(): no autograd graph is built, so MatMul4Bit's ctx
 * (and its ctx.tensors) dies with the call and nothing is held. */
/* Bytes per element of a held 4-bit (8-bit: 3) linear input; 0 where the
 * run holds none. */
static double hf_qlora_held_elem(const struct lp_run *r)
{
    if (r->fw.kind != LP_FW_HF || r->train.lora_rank <= 0 || r->train.lora_base_bits >= 16 ||
        r->fw.ckpt_reentrant)
        return 0.0;
    return (r->train.precision == LP_FP32 ? 4.0 : 2.0) + (r->train.lora_base_bits == 8 ? 1.0 : 0.0);
}

static double hf_qlora_held_bytes(const struct lp_run *r, int k)
{
    const struct lp_model *m = &r->model;
    const double e = hf_qlora_held_elem(r);
    if (!(e > 0)) return 0.0;
    const enum lp_mixer mx = (enum lp_mixer)(k / LP_FFN_COUNT);
    const enum lp_ffn ff = (enum lp_ffn)(k % LP_FFN_COUNT);
    const double h = m->hidden, t = r->par.tp;
    const double T = r->par.micro_batch * (double)m->seq_len / r->par.cp;
    double b = 0;
    if (mx == LP_MIX_ATTN || mx == LP_MIX_ATTN_LOCAL)
        b += e * h + e * m->heads * lp_arch_head_dim(m) / t;
    if (ff == LP_FFN_MOE)
        b += e * h + m->moe.top_k * (e * h + e * m->moe.ffn_hidden / etp_of(r));
    else if (ff == LP_FFN_DENSE)
        b += e * h + e * m->ffn_hidden / t;
    return T * b;
}

/* What the leading layers of the model do not hold of hf_qlora_held_bytes.
 * MatMul4Bit keeps its input only when it needs a gradient (bitsandbytes
 * 0.42.0, autograd/_functions.py, MatMul4Bit.forward: `if
 * any(ctx.needs_input_grad[:2]): ctx.tensors = (A, B)`, else (None, None);
 * the 4-bit weight B needs none). The embeddings are frozen and neither
 * the LLaMA-Factory Xia et al. ran (the "0.4.0" copy in stsxxx/finetune
 * 728a01b, LLaMA-Factory/src/llmtuner/model/patcher.py
 * _prepare_model_for_training, a snapshot after the v0.4.0 tag: that tag's
 * model/utils.py prepare_model_for_training still calls
 * enable_input_require_grads, as v0.5.2 does again) nor PEFT 0.7.1 for a
 * quantised model (PeftModel._prepare_model_for_gradient_checkpointing)
 * calls enable_input_require_grads, so the hidden states need no gradient until
 * the first LoRA adapter's output joins them:
 *  - targets "all": the first layer's q/k/v input (the normed embeddings);
 *    the adapters of q/k/v make everything after it need one;
 *  - targets "moe" (experts and routers): every layer before the first MoE
 *    layer, and in that layer the attention's inputs, the router's and
 *    w1/w3's (the gathered tokens); w2's input, the product of w1's and
 *    w3's adapted outputs, is held.
 * Layers [a, b) are the first chunk's, the first `covered` of them under full
 * recomputation (the others keep their activations the usual way). */
static double hf_qlora_unheld_lead_bytes(const struct lp_run *r, int a, int b, int covered)
{
    const struct lp_model *m = &r->model;
    const double e = hf_qlora_held_elem(r);
    if (!(e > 0) || a != 0) return 0.0; /* only the chunk that holds layer 0 */
    const double T = r->par.micro_batch * (double)m->seq_len / r->par.cp;
    double unheld = 0;
    for (int i = a; i < b && i - a < covered; i++) {
        enum lp_mixer mx;
        enum lp_ffn ff;
        lp_arch_layer(m, i, &mx, &ff);
        const bool attn = mx == LP_MIX_ATTN || mx == LP_MIX_ATTN_LOCAL;
        if (r->train.lora_targets != LP_LORA_MOE) return unheld + (attn ? T * e * m->hidden : 0.0);
        const double full = hf_qlora_held_bytes(r, (int)mx * LP_FFN_COUNT + (int)ff);
        if (ff == LP_FFN_MOE)
            return unheld + full - T * m->moe.top_k * e * m->moe.ffn_hidden / etp_of(r);
        unheld += full;
    }
    return unheld;
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

/* Activation bytes torchtitan's op-level policy keeps for one layer of an
 * attention mixer and a dense MLP (recompute module "op"; the policy as
 * sim_workload.c op_sac_redo describes it): per token, e bytes per element,
 * the checkpoint's input (the block's input, h, not split: torchtitan's
 * Llama blocks save the full hidden state), the kept mm outputs (wq's a d
 * and wv's g d; w1's f and w2's h with SwiGLU, w1's f without; in 16 bits
 * under Float8 too: the policy keeps torch.mm's output before torchao casts
 * anything), and the SDPA kernel's output (a d) and fp32 log-sum-exp (a).
 * Heads and f are split by TP. */
static double op_sac_activation_bytes(const struct lp_run *r)
{
    const struct lp_model *m = &r->model;
    const struct lp_parallel *p = &r->par;
    const double e = r->train.precision == LP_FP32 ? 4.0 : 2.0, t = p->tp, h = m->hidden;
    const double ad = (double)m->heads * lp_arch_head_dim(m) / t;
    const double gd = (double)m->kv_heads * lp_arch_head_dim(m) / t, f = m->ffn_hidden / t;
    const double per_tok = e * h + e * ad + 4.0 * m->heads / t + e * (ad + gd) + e * f +
                           (m->ffn_act == LP_ACT_SWIGLU ? e * h : 0.0);
    return p->micro_batch * (double)m->seq_len / p->cp * per_tok;
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
    /* eager PyTorch's saved tensors; a Mamba mixer runs the fused
     * mamba_ssm kernels (mamba_inner_fn) under any framework: below */
    const bool attn_layer = mx == LP_MIX_ATTN || mx == LP_MIX_ATTN_LOCAL;
    if (r->fw.kind == LP_FW_HF && (attn_layer || (mx == LP_MIX_NONE && ff != LP_FFN_NONE)))
        return hf_layer_activation_bytes(r, attn_layer, ff);
    const unsigned mods = lp_sim_rc_modules(r);
    if (mods & LP_RC_OP) return op_sac_activation_bytes(r); /* attention + dense MLP only */
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
            /* qk_norm: each norm keeps its input and one fp32 rstd per
             * head (TE RMSNorm op_forward: save_for_backward(x, rstdevs)) */
            if (m->qk_norm) split += (e * d + 4.0) * (a + m->kv_heads);
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
            /* mamba_ssm's MambaSplitConv1dScanCombinedFn (Megatron-Core's
             * training path) saves the in_proj output and the scan output
             * out_x and recomputes the conv output and the chunk states in
             * its backward (sim_workload.c ssd_kernels); Megatron-Core's
             * RMSNorm keeps the gated output, out_proj the norm output */
            split += e * ((2.0 * di + 2.0 * G * N + nh) + 3.0 * di);
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
                                 lp_full_covers_all(&run->par));
}

/* Micro-batch chunks whose activations stage s holds at its peak: its
 * warm-up forwards (the schedule's count) and the one before its first
 * backward, at most all of them. */
static int64_t in_flight(const struct lp_run *r, int s, int64_t micro)
{
    const struct lp_parallel *p = &r->par;
    const int64_t w = lp_sched_warmup(p->schedule, p->pp, p->vp, micro, s) + 1;
    return w < micro * p->vp ? w : micro * p->vp;
}

/* Bytes per logit alive at the loss's peak, e the activations' bytes: the
 * logits and their fp32 softmax / gradient (e + 4). Transformers' upcast
 * (modeling_mixtral.py MixtralForCausalLM.forward: logits.float(), the
 * shifted `[..., :-1, :].contiguous()` copy, CrossEntropyLoss on it): 12 in
 * the forward, the fp32 logits, the shifted copy and log_softmax's output
 * (the 16-bit lm_head output dies at .float(): nothing saves it). The
 * Trainer drops the model's outputs, and with them the fp32 logits, before
 * the backward (Trainer.training_step as Xia et al. ran it, stsxxx/finetune
 * 728a01b copy_for_tune/trainer.py: compute_loss returns the loss alone,
 * then accelerator.backward(loss)), which holds 12 at most too:
 * log_softmax's output, nll's gradient and log_softmax's input gradient,
 * then the slice's zero-filled fp32 gradient and the 16-bit cast of it. */
static double logit_bytes(const struct lp_run *r, double e)
{
    if (r->fw.xent == LP_XENT_UPCAST) return 12.0;
    /* torchtitan (train.py @9dec370): pred stays alive through loss_fn (del
     * pred after it), so the forward holds it, its fp32 copy and
     * log_softmax's output (e + 8); the backward the same 12 as above */
    if (r->fw.xent == LP_XENT_FLOAT) return fmax(e + 8.0, 12.0);
    return e + 4.0;
}

/* What each stage holds that the ZeRO stage does not change: its
 * parameters, trained parameters and routed experts on one rank, the
 * activations of its micro-batches in flight and its temporaries (all but
 * ZeRO-3's prefetch). */
void lp_sim_memory_stages(const struct lp_run *r, const struct lp_kinds *ks,
                          const struct lp_params *pr, const int *first, int64_t micro,
                          struct lp_mem_stages *out)
{
    const struct lp_parallel *p = &r->par;
    const struct lp_model *m = &r->model;
    const double routed = m->moe.experts > 0 && r->train.lora_rank <= 0
                              ? lp_arch_routed_params(m, etp_of(r), p->ep)
                              : 0.0;
    double e = r->train.precision == LP_FP32 ? 4.0 : 2.0;
    double T = p->micro_batch * (double)m->seq_len / p->cp;
    double t = p->tp;
    double act[LP_KINDS] = {0}, kp[LP_KINDS] = {0}, kl[LP_KINDS] = {0}, held[LP_KINDS] = {0};
    for (int j = 0; j < ks->n; j++) {
        const int k = ks->id[j];
        act[k] = kind_activation_bytes(r, k, false);
        held[k] = hf_qlora_held_bytes(r, k);
        kp[k] = kind_params(r, k);
        kl[k] = r->train.lora_rank > 0 ? kind_lora(r, k) : 0.0;
    }
    const double input = layer_input_bytes(r);
    /* A full recomputation redoes one checkpoint at a time (a group of
     * recompute_layers layers under uniform): its activations (the largest
     * kind the model has) are live during it; so are a block's under the
     * recompute modules mlp and moe, and a layer's under torchtitan's "op"
     * policy (its whole forward rerun: lp_sim_rc_modules' default stands in,
     * every tensor a layer saves). */
    const unsigned mods = lp_sim_rc_modules(r);
    double redo = 0;
    const int group =
        p->recompute_method == LP_RC_UNIFORM && p->recompute_layers > 1 ? p->recompute_layers : 1;
    if (p->recompute == LP_RECOMPUTE_FULL || (mods & (LP_RC_MLP | LP_RC_MOE | LP_RC_OP))) {
        struct lp_run tmp = *r;
        tmp.par.recompute = LP_RECOMPUTE_SELECTIVE;
        tmp.par.recompute_modules = mods & ~(unsigned)(LP_RC_MLP | LP_RC_MOE | LP_RC_OP);
        for (int j = 0; j < ks->n; j++)
            redo = fmax(redo, kind_activation_bytes(&tmp, ks->id[j], false));
        if (p->recompute == LP_RECOMPUTE_FULL) redo *= group;
    }
    out->n = p->pp; /* out->st: room for pp stages */
    for (int s = 0; s < p->pp; s++) {
        double params = 0, trained = 0, chunk_act = 0, experts = 0, ckpt_in = 0;
        for (int c = 0; c < p->vp; c++) {
            int n[LP_KINDS], nr[LP_KINDS], covered = 0;
            lp_chunk_kinds(ks, first, c * p->pp + s, n);
            lp_full_kinds(ks, p, first, c * p->pp + s, nr);
            for (int j = 0; j < ks->n; j++) {
                const int k = ks->id[j];
                chunk_act += (n[k] - nr[k]) * act[k] + nr[k] * held[k];
                covered += nr[k];
                params += n[k] * kp[k];
                trained += n[k] * kl[k];
                if (k % LP_FFN_COUNT == LP_FFN_MOE) experts += n[k] * routed;
            }
            /* the checkpoints' inputs: one per layer, one per group */
            ckpt_in += input * ((covered + group - 1) / group);
            chunk_act += input * ((covered + group - 1) / group);
            const int v = c * p->pp + s; /* layers [first[v], first[v + 1]) */
            chunk_act -= hf_qlora_unheld_lead_bytes(r, first[v], first[v + 1], covered);
        }
        if (s == 0) params = pr->stage0;
        if (s == p->pp - 1) params = pr->stage_last;
        if (s == p->pp - 1) experts = pr->expert_last; /* with the MTP layers' */
        if (r->train.lora_rank <= 0) trained = params;
        if (s == p->pp - 1 && r->train.lora_rank > 0) trained = pr->train_last;
        if (s == 0 && r->train.lora_rank > 0) trained = pr->train0;
        double inflight = (double)in_flight(r, s, micro);
        double a = inflight * chunk_act / p->vp + redo;
        if (s == p->pp - 1 && m->mtp_layers > 0) /* MTP layers' activations */
            a += inflight * m->mtp_layers * (lp_full_covers_all(p) ? input : act[ks->last]);
        if (s == 0) /* embedding output and its dropout mask */
            a += inflight * T * (e + 1.0) * m->hidden / (p->sequence_parallel ? t : 1.0);
        double temp = RUNTIME_RESERVE_BYTES + 2.0 * T * m->hidden * e; /* comm buffers */
        double loss = 0;
        if (s == p->pp - 1) /* the logits of one micro-batch and their loss */
            loss = T * lp_sim_vocab_padded(r) / t * logit_bytes(r, e);
        temp += loss;
        if (r->train.lora_rank > 0 && r->train.lora_base_bits < 16)
            /* bitsandbytes dequantises a frozen weight into a 16-bit
             * temporary before each use (MatMul4Bit): the largest, an
             * expert's or the MLP's h x f, is alive with the activations */
            temp += (double)m->hidden / t *
                    fmax(m->ffn_hidden, m->moe.experts > 0 ? m->moe.ffn_hidden : 0) * e;
        out->st[s] = (struct lp_mem_stage){.params = params,
                                           .trained = trained,
                                           .experts = experts,
                                           .act = a,
                                           .temp = temp,
                                           .ckpt_in = inflight * ckpt_in / p->vp,
                                           .redo = redo,
                                           .loss = loss};
    }
}

/* hf LoRA / QLoRA with every layer checkpointed on one GPU (Xia et al.
 * 2024's setting; lp_sim_memory_peak's phases). */
static bool hf_lora_phased(const struct lp_run *r)
{
    const struct lp_parallel *p = &r->par;
    return r->fw.kind == LP_FW_HF && r->train.lora_rank > 0 && lp_full_covers_all(p) &&
           p->pp == 1 && p->vp == 1;
}

/* What hf LoRA / QLoRA under full recomputation holds at the step's peak,
 * which is one of three moments rather than the sum of what each holds.
 * The gradients do not exist in the forward: the Trainer ends every step
 * with model.zero_grad() (the Transformers Trainer._inner_training_loop
 * Xia et al. ran, stsxxx/finetune 728a01b copy_for_tune/trainer.py:1945;
 * torch 2.1 Module.zero_grad(set_to_none=True)), so each adapter's fp32
 * gradient is made by its layer's backward. Moments:
 *  - the loss (end of the forward): every checkpoint's input, the loss's
 *    fp32 buffers (logit_bytes) and autocast's bf16 copies of the fp32
 *    adapters: accelerate 0.26 Accelerator.prepare_model wraps the forward
 *    in torch.autocast (cache_enabled default True), whose cache keeps the
 *    cast of every fp32 leaf that requires grad (aten autocast_mode.cpp
 *    cached_cast) until the outermost autocast exits at the forward's end;
 *  - the first layer's backward: the loss's buffers are gone (the fp32
 *    logits' gradient is cast and consumed by lm_head's backward before the
 *    final norm's and the last layer's) and its recomputation's saved
 *    tensors are live (the recompute runs in an autocast of its own);
 *  - the last layer's backward (layer 0): each later layer's checkpoint
 *    input was released with its backward (the non-reentrant checkpoint
 *    saves the inputs with _NoopSaveInputs), every adapter's gradient is
 *    live.
 * The 4-bit inputs bitsandbytes keeps as ctx.tensors (hf_qlora_held_bytes)
 * stay for the whole backward (Python attributes of graph nodes that live
 * until the loss is freed), so they are in every moment. Writes the
 * largest moment's activations, temporaries and gradients. */
static void hf_lora_peak(const struct lp_run *r, const struct lp_mem_stage *st, double cache,
                         double grads, double *act, double *temp, double *gbytes)
{
    const double a0 = st->act - st->ckpt_in - st->redo, t0 = st->temp - st->loss;
    const double fwd = st->loss + cache;
    const double first = st->ckpt_in + fmax(fwd, st->redo);
    const double last = layer_input_bytes(r) + st->redo + grads;
    if (last > first) {
        *act = a0 + layer_input_bytes(r) + st->redo;
        *temp = t0;
        *gbytes = grads;
    } else {
        *act = a0 + st->ckpt_in + (fwd > st->redo ? 0.0 : st->redo);
        *temp = t0 + (fwd > st->redo ? fwd : 0.0);
        *gbytes = 0;
    }
}

/* Peak memory per GPU: the stage whose weights, optimizer state,
 * activations in flight and temporaries add up to the most. */
void lp_sim_memory_peak(const struct lp_run *r, const struct lp_params *pr,
                        const struct lp_mem_stages *ms, struct lp_memory *mem)
{
    const struct lp_parallel *p = &r->par;
    struct lp_bytes_per_param b;
    lp_sim_param_bytes(r, &b);
    /* ZeRO shards a parameter's states over the ranks that hold the same
     * parameter: the dense DP group (dp cp ranks) for most, the expert-data-
     * parallel group for the routed experts (Megatron-Core
     * get_megatron_optimizer: the expert parameter groups get their own
     * DistributedOptimizer over intra_expt_dp_group, as
     * DistributedDataParallel's expert_parallel_buffers do;
     * lp_sim_expert_group) */
    double nd = (double)p->dp * p->cp;
    double w = b.w, g = b.g, o = b.o, wt = b.w_train;
    if (p->zero >= 1) o /= nd;
    if (p->zero >= 2) g /= nd;
    if (p->zero >= 3) w /= nd;
    if (p->zero >= 3) wt /= nd;
    int ne_i = 1, se_i = 1;
    const bool own_group = lp_sim_expert_group(r, 1.0, &ne_i, &se_i) > 0;
    /* what each routed-expert parameter adds beyond the dense per-parameter
     * bytes w, g, o: its states sharded over ne ranks, not nd */
    const double ne = ne_i;
    const double xw = own_group && p->zero >= 3 ? b.w / ne - w : 0.0;
    const double xg = own_group && p->zero >= 2 ? b.g / ne - g : 0.0;
    const double xo = own_group && p->zero >= 1 ? b.o / ne - o : 0.0;
    double e = r->train.precision == LP_FP32 ? 4.0 : 2.0;
    double best = -1;
    for (int s = 0; s < ms->n; s++) {
        const double params = ms->st[s].params, trained = ms->st[s].trained;
        const double experts = ms->st[s].experts;
        double a = ms->st[s].act, temp = ms->st[s].temp;
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
            wbytes = (params - ends) * qbits / 8.0 + ends * w + trained * wt;
        }
        if (lp_sim_hf_pure16(r))
            /* the optimizer step, after the activations are freed: the new
             * list _foreach_sqrt(exp_avg_sqs) makes, one element per trained
             * parameter (torch/optim/adamw.py, _multi_tensor_adamw) */
            temp = fmax(temp, RUNTIME_RESERVE_BYTES + trained * e - a);
        wbytes += experts * xw;
        double gbytes = trained * g + experts * xg;
        const double obytes = trained * o + experts * xo;
        if (hf_lora_phased(r))
            hf_lora_peak(r, &ms->st[s], r->train.precision == LP_FP32 ? 0.0 : trained * e, gbytes,
                         &a, &temp, &gbytes);
        double tot = wbytes + gbytes + obytes + a + temp;
        if (tot > best) {
            best = tot;
            mem->weights_bytes = wbytes;
            mem->grads_bytes = gbytes;
            mem->optimizer_bytes = obytes;
            mem->activations_bytes = a;
            mem->temp_bytes = temp;
            mem->total_bytes = tot;
        }
    }
}

/* The run as one batch of its dataset sees it (training.dataset): the
 * sequence is the batch's padded length, expected (worst = false: time) or
 * of its longest queries (worst = true: the batch that must fit). */
const struct lp_run *lp_sim_dataset_view(const struct lp_run *r, struct lp_run *tmp, bool worst)
{
    if (r->train.dataset.nbins <= 0) return r;
    *tmp = *r;
    tmp->model.seq_len = (int)ceil(lp_dataset_batch_len(&r->train.dataset, r->par.micro_batch,
                                                        (int)lp_sim_micro_batches(r), worst));
    return tmp;
}

bool lp_sim_batch_padded(const struct lp_run *r)
{
    const struct lp_dataset *d = &r->train.dataset;
    /* packed rows are full: no padding, no attention mask */
    if (d->nbins <= 0 || d->batching == LP_BATCHING_PACKED) return false;
    /* a histogram's bins stand for queries of many lengths (scripts/
     * dataset_lengths.py rounds each up to the multiple): even a batch of
     * one pads */
    return d->nbins > 1 || (d->pad_multiple > 1 && d->len[0] % d->pad_multiple != 0);
}

void lp_sim_memory(const struct lp_run *run, struct lp_memory *mem)
{
    struct lp_params pr;
    int first[LP_SCHED_MAX_VSTAGES + 1];
    struct lp_run tmp;
    run = lp_sim_dataset_view(run, &tmp, true);
    memset(mem, 0, sizeof(*mem));
    if (lp_arch_split(&run->model, &run->par, first, LP_SCHED_MAX_VSTAGES + 1) != 0) return;
    struct lp_kinds ks;
    lp_kinds_scan(&run->model, &ks, NULL, 0);
    lp_sim_count_params(run, &ks, first, &pr);
    /* a configuration the range rules refuse: no micro-batch count in an int */
    const int64_t micro = lp_sim_micro_batches(run);
    struct lp_mem_stage st[LP_SCHED_MAX_VSTAGES]; /* not a hot path: 160 KiB of stack */
    struct lp_mem_stages ms = {.st = st};
    lp_sim_memory_stages(run, &ks, &pr, first,
                         micro > 0 && micro <= LP_MAX_MICROBATCHES ? micro : 1, &ms);
    lp_sim_memory_peak(run, &pr, &ms, mem);
}

static bool batch_fits(struct lp_run *r, int mb, int64_t micro)
{
    struct lp_memory m;
    r->par.micro_batch = mb;
    r->train.global_batch = (int64_t)mb * r->par.dp * micro;
    if (lp_sim_validate(r) != LP_REASON_NONE) return false;
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
