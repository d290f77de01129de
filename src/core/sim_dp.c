/* Data-parallel communication: gradient reduction (DDP / Megatron buckets),
 * ZeRO gathers, ZeRO-3 / FSDP per-micro-batch collectives, and the
 * optimizer step over the parameters a rank owns. */
#include <math.h>
#include <string.h>

#include "llmplan/arch.h"
#include "llmplan/profile.h"
#include "llmplan/rules.h"
#include "sim_internal.h"

/* Bytes a fused Adam step moves per parameter, states of s bytes and
 * gradients of g: read the master parameter, the gradient, m and v; write
 * the parameter, m and v, and a 16-bit copy for the model when it has one
 * (copy bytes); read the gradient once more for the norm. Mixed precision
 * (fp32 states and gradient, bf16/fp16 copy): 34 B; fp32: 32 B. */
static double adam_step_bytes(double s, double g, double copy)
{
    return 3.0 * s + g + 3.0 * s + copy + g;
}
/* Element accesses per parameter of torch.optim.AdamW as it runs on CUDA
 * without `fused` (_multi_tensor_adamw, foreach): lerp_(m, g) 3 element
 * accesses, mul_(v) 2, addcmul_(v, g, g) 3, sqrt(v) into a new list 2,
 * div_ 2, add_(eps) 2, addcdiv_(p, m, denom) 4, and with a weight decay
 * _foreach_mul_(p, 1 - lr wd) 2 more; before it clip_grad_norm_:
 * _foreach_norm 1 and _foreach_mul_ 2. Its users: the Hugging Face
 * Trainer's default (TrainingArguments.optim "adamw_torch";
 * "adamw_torch_fused" only from PyTorch 2.8; weight decay 0, max_grad_norm
 * 1.0): 21; fms-fsdp (4ffb9bd main_training.py: optim.AdamW(...,
 * weight_decay=0.1), model.clip_grad_norm_) and torchtitan (9dec370
 * optimizer.py: foreach = not fused, fused off by default, weight decay
 * 0.1; train.py clip_grad_norm_): 23, on FSDP's fp32 shards. */
static double torch_adamw_accesses(bool weight_decay)
{
    return 21.0 + (weight_decay ? 2.0 : 0.0);
}

double lp_sim_vocab_padded(const struct lp_run *r)
{
    double q = 128.0 * r->par.tp;
    return ceil(r->model.vocab / q) * q;
}

/* Mixed precision (Micikevicius et al. 2018; ZeRO, Rajbhandari et al. 2020
 * Sec 3.1): 2-byte weights and gradients, 12 bytes of fp32 master weights,
 * momentum and variance. Megatron keeps bf16 gradients in an fp32 main_grad
 * buffer (and reduces them in fp32), so bf16 costs 4 bytes of gradient. */
bool lp_sim_hf_pure16(const struct lp_run *r)
{
    return r->fw.kind == LP_FW_HF && r->train.lora_rank <= 0 && r->train.precision != LP_FP32;
}

void lp_sim_param_bytes(const struct lp_run *r, struct lp_bytes_per_param *b)
{
    if (lp_sim_hf_pure16(r)) {
        /* hf full fine-tuning (Xia et al.'s BlackMamba): the model runs in
         * its 16-bit dtype and torch.optim.AdamW creates its state with
         * zeros_like(param): parameters, gradients, m and v all 16-bit */
        b->w = 2;
        b->g = 2 + (r->par.dp * r->par.cp > 1 ? 2 : 0); /* + DDP's bucket copy */
        b->o = 4;
        b->w_train = b->w;
        b->g_comm = 2;
        return;
    }
    if (r->fw.kind == LP_FW_HF && r->train.lora_rank > 0) {
        /* hf LoRA / QLoRA: the frozen 16-bit parts (embedding, lm_head)
         * keep the run's dtype; LLaMA-Factory casts every trainable
         * parameter, the adapters, to fp32 (0.4.0 as Xia et al. vendored it,
         * stsxxx/finetune 728a01b LLaMA-Factory/src/llmtuner/model/adapter.py
         * init_adapter: `param.data = param.data.to(torch.bfloat16 if
         * finetuning_args.lora_bf16_mode else torch.float32)`,
         * lora_bf16_mode default False), so their gradients are fp32 and
         * torch.optim.AdamW's exp_avg and exp_avg_sq (zeros_like(param))
         * too: 4 + 4 + 8 bytes, no master copy */
        b->w = r->train.precision == LP_FP32 ? 4 : 2;
        b->w_train = 4;
        b->g = 4;
        b->o = 8;
        b->g_comm = 4;
        return;
    }
    if (r->fw.kind == LP_FW_DDP && r->train.precision != LP_FP32) {
        /* DDP under torch.autocast (the PyTorch AMP recipe): the parameters,
         * their gradients (all-reduced as they are) and Adam's m and v stay
         * fp32; autocast's bf16/fp16 copy of each weight is made in forward
         * and saved for backward by the GEMMs (2 bytes more per weight); the
         * reducer's flat bucket buffers hold a second copy of the gradients
         * (gradient_as_bucket_view=False, the default: reducer.cpp). */
        b->w = 4 + 2;
        b->g = 4 + 4;
        b->o = 8;
        b->w_train = b->w;
        b->g_comm = 4;
        return;
    }
    switch (r->train.precision) {
    case LP_FP32:
        b->w = 4;
        b->g = 4;
        b->o = 8;
        break;
    case LP_FP16: /* Megatron-LM reduces fp16 gradients in fp16 (arguments.py
                   * forces accumulate_allreduce_grads_in_fp32 for bf16 only) */
        b->w = 2;
        b->g = 2;
        b->o = 12;
        break;
    default:
        /* bf16, and fp8-family training, whose parameters stay bf16 (the
         * GEMMs cast them): Megatron-Core's gradient buffer takes the
         * parameters' dtype unless grad_reduce_in_fp32 (core_r0.8.0
         * distributed_data_parallel.py: grad_dtype = float if
         * grad_reduce_in_fp32 else param.dtype; NeMo 24.07's apex
         * DistributedFusedAdam: grad_sync_dtype, default its fp32 dtype) */
        b->w = 2;
        b->g = r->fw.grad_fp32 ? 4 : 2;
        b->o = 12;
        break;
    }
    /* apex DistributedFusedAdam(dtype=bf16), as NeMo's nemotron_340b.yaml
     * sets optim.dtype (NeMo-Framework-Launcher 24.07): its bucket state
     * keeps params_shard, exp_avg_shard and exp_avg_sq_shard in that dtype
     * (apex 6424da3 contrib/optimizers/distributed_fused_adam.py
     * StateBucket; no fp32 remainders unless dtype is fp32) */
    if (r->fw.optim_bf16 && r->train.precision != LP_FP32) b->o = 6;
    b->w_train = b->w;
    b->g_comm = b->g;
}

/* The parameter tensors of one layer on one TP rank, in parameters: what a
 * framework that gathers ZeRO-3 parameters tensor by tensor issues one
 * collective for (fw.zero3_per_tensor), in registration order. Exact for
 * any expert count: the attention part (at most 9 tensors) and one expert's
 * group (at most 4), repeated `copies` times, so no list is built or capped
 * (a list of 512 truncated 256 experts at ep 1: 5 + 2 x 256 tensors). */
void lp_sim_layer_tensors(const struct lp_run *r, bool moe_layer, struct lp_layer_tensors *lt)
{
    const struct lp_model *m = &r->model;
    double t = r->par.tp, h = m->hidden, d = (double)m->hidden / m->heads;
    memset(lt, 0, sizeof(*lt));
    double *pre = lt->pre, *grp = lt->grp;
    int n = 0, g = 0;
    for (int i = 0; i < 2; i++) { /* the two norms */
        pre[n++] = h;
        if (m->norm == LP_NORM_LAYERNORM) pre[n++] = h;
    }
    pre[n++] = h * d * (m->heads + 2.0 * m->kv_heads) / t; /* QKV */
    if (m->bias) pre[n++] = (m->heads + 2.0 * m->kv_heads) * d / t;
    pre[n++] = m->heads * d * h / t; /* output projection */
    if (m->bias) pre[n++] = h;
    const bool moe = moe_layer && m->moe.experts > 0;
    const double f = moe ? m->moe.ffn_hidden : m->ffn_hidden;
    const double copies = moe ? (double)m->moe.experts / r->par.ep : 1.0;
    const double nmat = m->ffn_act == LP_ACT_SWIGLU ? 3.0 : 2.0;
    if (moe) pre[n++] = h * m->moe.experts; /* router */
    grp[g++] = (nmat - 1.0) * h * f / t;    /* fc1 (gate and up fused for SwiGLU) */
    if (m->bias) grp[g++] = (nmat - 1.0) * f / t;
    grp[g++] = f * h / t; /* fc2 */
    if (m->bias) grp[g++] = h;
    lt->npre = n;
    lt->ngrp = g;
    lt->copies = (int)copies;
    lt->n = n + g * lt->copies;
}

/* tensor i (0 <= i < lt->n) of lp_sim_layer_tensors' order */
static inline double lt_at(const struct lp_layer_tensors *lt, int i)
{
    return i < lt->npre ? lt->pre[i] : lt->grp[(i - lt->npre) % lt->ngrp];
}

double lp_sim_expert_group(const struct lp_run *r, double Pe, int *ne, int *se)
{
    const struct lp_parallel *p = &r->par;
    *se = p->ep * (p->etp > 0 ? p->etp : p->tp);
    *ne = p->dp * p->cp * p->tp / *se;
    return *se == p->tp ? 0.0 : Pe;
}

/* A data-parallel collective over P parameters of `bytes` each, Pe of them
 * routed experts (lp_sim_expert_group). */
static double dp_coll(struct lp_sim *s, const struct lp_run *r, enum lp_coll op, double P,
                      double Pe, double bytes)
{
    int ne, se;
    Pe = lp_sim_expert_group(r, Pe, &ne, &se);
    const int nd = r->par.dp * r->par.cp;
    double t = 0;
    const int world = lp_sim_world(&r->par);
    if (nd > 1) t += lp_sim_coll_time(s, &r->system, op, (P - Pe) * bytes, nd, r->par.tp, world);
    if (Pe > 0 && ne > 1) t += lp_sim_coll_time(s, &r->system, op, Pe * bytes, ne, se, world);
    return t;
}

/* DeepSpeed ZeRO-3's gathers of one parameter tensor of `numel` elements
 * (per TP rank) over the stage's nl layers, in the forward (*nf) and in the
 * backward with its recomputation (*nb). Two rules of stage3.py
 * (DeepSpeedZeroOptimizer_Stage3 defaults since its first release, 599258f97,
 * 2021-03; deepspeed/runtime/zero/constants.py):
 *  - param_persistence_threshold 1e5 (persistent_parameters: ds_numel below
 *    it is ds_persist): never released, so never gathered; its gradient is
 *    still reduce-scattered (lp_dp_costs counts that for every tensor).
 *  - max_reuse_distance 1e9 (PartitionedParameterCoordinator
 *    release_sub_module -> _keep_for_later): after a module's use its
 *    parameters stay gathered when the recorded trace uses the module again
 *    within 1e9 elements of the parameters of the modules run in between
 *    (get_reuse_distance_in_numel), else they are freed and gathered again.
 * Between the forward use of a tensor of layer i and its next use run the
 * rest of its layer (`after`) and of the stage (R_i = the layers after i at
 * per_layer each, and the ends): without recomputation the backward of all
 * of them follows, a distance 2 (after + R_i); under full recomputation
 * (per layer, Megatron-DeepSpeed's checkpoint_activations) the next use is
 * the layer's recomputed forward, after the later layers' recomputed
 * forwards and backwards, after + 3 R_i, and the backward uses it after the
 * rest of the layer twice (forward then backward), 2 after. Module order is
 * layer_tensors' (norms first: they persist anyway). */
#define DS_PERSISTENCE_THRESHOLD 1e5
#define DS_MAX_REUSE_DISTANCE 1e9
/* reduce_bucket_size, in elements, of the ZeRO-3 runs' DeepSpeed config
 * (z3_ipg_layers): DeepSpeedExamples' Megatron-LM-v1.1.5-ZeRO3
 * examples/ds_zero_stage_3_config.json (2cd968f2, 2021-03), the one published
 * Megatron + ZeRO-3 config of the time, whose contiguous_gradients (on) the
 * model takes too; DeepSpeed's own default is 5e8 (constants.py
 * ZERO_OPTIMIZATION_REDUCE_BUCKET_SIZE_DEFAULT) */
#define DS_REDUCE_BUCKET_SIZE 5e7

/* past the reuse distance for a layer with j layers after it in the stage */
static bool z3_far(bool rc, double after, int j, double per_layer, double ends)
{
    const double rest = j * per_layer + ends;
    return rc ? after + 3.0 * rest >= DS_MAX_REUSE_DISTANCE
              : 2.0 * (after + rest) >= DS_MAX_REUSE_DISTANCE;
}

static void zero3_gathers(const struct lp_run *r, double numel, double after, int nl,
                          double per_layer, double ends, double *nf, double *nb)
{
    *nf = *nb = 0;
    if (numel < DS_PERSISTENCE_THRESHOLD) return;
    const bool rc = r->par.recompute == LP_RECOMPUTE_FULL;
    *nf = nl;
    /* z3_far is monotone in j (every operation in it is): the layers with
     * j >= j0 are far; j0 from the real-valued bound, then stepped to the
     * exact boundary of the same expression (per configuration: no loop
     * over the layers) */
    const double rest_min =
        rc ? (DS_MAX_REUSE_DISTANCE - after) / 3.0 : DS_MAX_REUSE_DISTANCE / 2.0 - after;
    const double est = per_layer > 0 ? ceil((rest_min - ends) / per_layer) : 0;
    int j0 = est <= 0 ? 0 : est >= nl ? nl : (int)est;
    while (j0 > 0 && z3_far(rc, after, j0 - 1, per_layer, ends))
        j0--;
    while (j0 < nl && !z3_far(rc, after, j0, per_layer, ends))
        j0++;
    *nb = nl - j0;
    if (rc && 2.0 * after >= DS_MAX_REUSE_DISTANCE) *nb += nl;
}

/* The per-rank copies around one ZeRO-3 collective of DeepSpeed 2021
 * (fw.zero3_rank_copies), in seconds beyond the collective's own `coll_s`.
 * DeepSpeed 599258f97 partition_parameters.py: _allgather_param calls
 * torch.cuda.synchronize() and hands torch.distributed.all_gather a list of
 * world-size narrow() views of one flat tensor; _reduce_scatter_gradient
 * hands reduce_scatter such a list of the gradient. PyTorch of that era
 * (torch/lib/c10d/ProcessGroupNCCL.cpp allgather / reduce_scatter, 1.8-1.10)
 * flattens the list into a new buffer (flatten_for_scatter_gather) and runs
 * outputTensors[i][j].copy_ after the all-gather, inputFlattened[i][j].copy_
 * before the reduce-scatter: n copy kernels of numel / n elements, each
 * launched by the host after the synchronize drained the GPU, so nothing
 * hides them. The n launches at h, 2h, .. nh feed one GPU
 * queue of kernels of tg each (the copy table: read + write, its
 * launch-bound floor included) that starts after the gather (`after`) or
 * at once (the reduce-scatter's copies come first): the last one ends at
 * max(ready + n tg, h + n tg, n h + tg), the FIFO queue's bound at its
 * first and last arrival. */
static double z3_rank_copies(const struct lp_cost_model *cm, double bytes, int n, double coll_s,
                             bool after)
{
    const double tg = cm->ops->mem_s(cm, LP_MEM_COPY, 2.0 * bytes / n);
    /* the host side of a launch issued from C++ with no Python op around
     * it: the profile's per-kernel launch overhead (not fw.host_op_s, the
     * eager Python op's dispatch, autograd and hooks: docs/frameworks.md) */
    const double h = cm->profile ? cm->profile->launch_s : 0.0;
    const double ready = after ? coll_s : 0.0;
    const double end = fmax(ready + n * tg, fmax(h + n * tg, n * h + tg));
    return after ? end - coll_s : end;
}

/* What DeepSpeed 2021 does itself before each ZeRO-3 collective, in
 * seconds before the collective (and z3_rank_copies) begins, all of it
 * exposed: the GPU is drained or about to be.
 * DeepSpeed partition_parameters.py (599258f97, 2021-03, through v0.5:
 * v0.3.13 12a53b438 and v0.4.5 read alike):
 *  - _allgather_param: flat_tensor = torch.zeros(aligned size), a fill
 *    kernel writing the whole gathered tensor (`bytes`), which the
 *    torch.cuda.synchronize() right after it waits for; then
 *    `for i in range(self.world_size): partitions.append(
 *    flat_tensor.narrow(...))`: one Python narrow() per rank on the host
 *    while the GPU idles (after the synchronize, before the all_gather).
 *  - _reduce_scatter_gradient: `for i in range(self.world_size): input =
 *    param.grad.view(-1).narrow(...)`: two Python view calls per rank
 *    before the reduce_scatter can be called.
 * Each view call at LP_PY_VIEW_CALL_S. Not counted (so a lower bound): the
 * loops' own Python (the gather's get_rank(group) per rank, the
 * arithmetic, the list appends). *views is the calls' count. */
static double z3_list_build(const struct lp_cost_model *cm, double bytes, int n, bool gather,
                            double *views)
{
    const double fill = gather ? cm->ops->mem_s(cm, LP_MEM_COPY, bytes) : 0.0;
    *views = (gather ? 1.0 : 2.0) * n;
    return fill + *views * LP_PY_VIEW_CALL_S;
}

/* DeepSpeed 2021 ZeRO-3's gradient bucket, the "ipg" buffer (stage3.py,
 * identical in v0.3.13 12a53b438 and v0.4.0 2d302d6ab:
 * reduce_independent_p_g_buckets_and_remove_grads, reduce_ipg_grads,
 * average_tensor, independent_gradient_partition_epilogue), with
 * contiguous_gradients and reduce_scatter on. For each gradient of numel p,
 * in the order the backward produces them:
 *  - when elements_in_ipg_bucket + p > reduce_bucket_size the bucket is
 *    flushed first: average_tensor divides, in place, the whole ipg buffer
 *    (reduction_list = [self.ipg_buffer[self.ipg_index]]: reduce_bucket_size
 *    elements however few it holds) and the gradient kept aside below, then
 *    reduce-scatters each parameter's gradient (those are lp_dp_costs'
 *    per-tensor collectives);
 *  - p > reduce_bucket_size: kept aside (extra_large_param_to_reduce);
 *    otherwise copied into the buffer (new_grad_tensor.copy_(
 *    param.grad.view(-1))), a read and a write of the gradient;
 *  - elements_in_ipg_bucket += p either way;
 * and the backward's end flushes once more (the epilogue). Every one of
 * these is a read and a write of its elements on the GPU; nothing hides
 * them: the next gather's torch.cuda.synchronize() (partition_parameters.py
 * _allgather_param) waits for the reduction stream too. The layer's
 * gradients arrive in the reverse of lp_sim_layer_tensors' (registration)
 * order. The bucket is one for the whole backward: its state carries from
 * one layer kind's layers to the next (the MoE layers' first, as the
 * backward meets them under first_dense_layers; a layer_freq > 1 layout,
 * which alternates them, is played by kind too), then the embedding and
 * head as one gradient, then the epilogue flushes once (v0.3.13 engine.py:
 * DeepSpeedEngine.backward -> allreduce_gradients ->
 * overlapping_partition_gradients_reduce_epilogue, once per backward, not
 * per layer kind). Only the GPU's time
 * is counted (the Python of narrow / copy_ / div_ is not: a lower bound). */
struct ds_ipg {
    double moved, e, xl, nf; /* elements read and written; bucket, aside; flushes */
};

static void ds_ipg_flush(struct ds_ipg *q)
{
    q->moved += DS_REDUCE_BUCKET_SIZE + q->xl;
    q->nf += 1;
    q->e = q->xl = 0;
}

static void ds_ipg_grad(struct ds_ipg *q, double p)
{
    if (q->e + p > DS_REDUCE_BUCKET_SIZE) ds_ipg_flush(q);
    if (p > DS_REDUCE_BUCKET_SIZE)
        q->xl = p;
    else
        q->moved += p;
    q->e += p;
}

/* nl layers of one kind into the bucket q */
static void z3_ipg_layers(struct ds_ipg *q, const struct lp_layer_tensors *lt, int nl)
{
    /* layers until the bucket's state at a layer's end repeats (a layer
     * with a flush in it ends alike whatever came before, from the second
     * layer on), then the remaining layers at the last layer's share */
    double prev_e = -1, prev_xl = -1;
    int done = 0;
    while (done < nl) {
        const double m0 = q->moved, n0 = q->nf;
        for (int i = lt->n - 1; i >= 0; i--)
            ds_ipg_grad(q, lt_at(lt, i));
        done++;
        const double per = q->moved - m0, pf = q->nf - n0;
        if (q->e == prev_e && q->xl == prev_xl) {
            q->moved += (nl - done) * per;
            q->nf += (nl - done) * pf;
            break;
        }
        prev_e = q->e;
        prev_xl = q->xl;
    }
}

/* Gradient buckets of pipeline stage `rank` holding P trained parameters,
 * Pe of them routed experts, of g_bytes gradient each. Megatron-Core
 * (fw.mcore_buckets; Megatron-LM d7288711 and d98e8a64
 * megatron/core/distributed/distributed_data_parallel.py __init__, the same
 * at 0d8e0714 and b0cc2706: the cores of Megatron-Bridge v0.2.0, v0.3.0 and
 * v0.4.0 / v0.4.1): bucket_size, in parameters, defaults to
 * max(40000000, 1000000 * dp_group.size()) (dp_group without CP), and the
 * dense parameters and the experts (`allreduce` False) fill buffers of their
 * own (self.buffers, self.expert_parallel_buffers), each cut into buckets of
 * that size; but `if disable_bucketing or pp_rank > 0: self.bucket_size =
 * None`, so every stage after the first keeps each buffer as one bucket. A
 * model chunk is a DDP instance of its own (Megatron-LM d98e8a64
 * megatron/training/models/dist_utils.py, Megatron-Bridge v0.4.1
 * models/common/unimodal.py: one DistributedDataParallel per chunk), so such
 * a stage reduces one bucket per chunk, its dense and expert buffers
 * together: they are complete at the same moment, the end of the chunk's
 * last backward (the backward post-hook's register_grad_ready). Stage 0
 * keeps its count over the whole stage: its chunks after the first are
 * single-bucket too (`disable_bucketing=(model_chunk_idx > 0)`, same files),
 * but their buffers are complete at least pp chunk backwards before the
 * stage's end (Megatron's interleaved order runs chunk 0's backwards of
 * the last pp micro-batches last) and the last one reduced is chunk 0's last
 * bucket either way (docs/simulator.md section 3). Otherwise buckets of
 * fw.bucket_bytes. */
static double dp_buckets(const struct lp_run *r, int rank, double P, double Pe, double g_bytes)
{
    if (!r->fw.mcore_buckets) return fmax(1.0, ceil(P * g_bytes / r->fw.bucket_bytes));
    if (rank > 0) return r->par.vp;
    const double size = fmax(40e6, 1e6 * r->par.dp), dense = P - Pe;
    const double n = (dense > 0 ? ceil(dense / size) : 0.0) + (Pe > 0 ? ceil(Pe / size) : 0.0);
    return fmax(1.0, n);
}

/* The middle stages' single-bucket reduction (dp_buckets) starts after
 * their last backward, which ends only a backward ripple before stage 0's:
 * with about as many parameters (lp_sim_count_params' mid), a middle stage
 * ends the iteration where its whole-buffer reduction outlasts that ripple
 * plus stage 0's last bucket. Accounted under Megatron-Core's rule only;
 * with buckets on every stage (fw.bucket_bytes) each stage's exposed part
 * is one bucket and stage 0, ending last, is the one that counts. Not
 * modelled: the frameworks without overlap (dp_overlap false), where every
 * stage reduces its whole gradient after its backward, the same gap. */
int lp_dp_mid_stages(const struct lp_run *r, const struct lp_params *pr)
{
    return r->fw.mcore_buckets && r->par.pp > 2 ? pr->n_mid : 0;
}

/* Stage s's last backward (micro-batch m-1, chunk 0: the last operation of
 * every schedule llmplan solves) sends its input gradient to stage s-1,
 * whose own last backward waits for it (the drain: nothing else is left
 * for it to run), and so on to stage 0, whose last backward carries the
 * embedding's. So stage s ends sum_{j<s} (B_j + p2p) + the embedding's
 * backward before stage 0, B_j the backward of stage j's chunk 0 (virtual
 * stage j: one chunk's under interleaving, where the ripple runs chunk 0
 * through the stages). zb: B without its W pass, whose pending passes
 * stage s and stage 0 are taken to run alike after their last B. Exact
 * where stage j waits for stage j+1 at its last backward; where it does
 * not, stage s ends earlier, so the middle stage's end is an upper bound. */
double lp_dp_mid_ripple(const struct lp_sched_in *in, int s)
{
    double t = in->b_first_extra;
    for (int j = 0; j < s && j < in->p; j++)
        t += in->b[j] - (in->kind == LP_SCHED_ZB ? in->w[j] : 0.0) + in->p2p_s;
    return t;
}

void lp_dp_costs(struct lp_sim *s, const struct lp_run *r, const struct lp_params *pr,
                 const double bwd_window_s[LP_DP_STAGES], double fwd_window_s,
                 struct lp_dp_cost *out)
{
    const struct lp_parallel *p = &r->par;
    const struct lp_cost_model *cm = &s->cm;
    struct lp_bytes_per_param b;
    lp_sim_param_bytes(r, &b);
    int nd = p->dp * p->cp;
    const double stage_params[LP_DP_STAGES] = {pr->train0, pr->train_last, pr->train_mid[0],
                                               pr->train_mid[1]};
    const double stage_experts[LP_DP_STAGES] = {pr->expert0, pr->expert_last, pr->expert_mid[0],
                                                pr->expert_mid[1]};
    const int rank[LP_DP_STAGES] = {0, p->pp - 1, pr->mid[0], pr->mid[1]};
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < 2 + lp_dp_mid_stages(r, pr); i++) {
        double P = stage_params[i], Pe = stage_experts[i], t_red = 0, t_gather = 0;
        if (p->zero == 0) {
            t_red = dp_coll(s, r, LP_COLL_ALLREDUCE, P, Pe, b.g_comm);
        } else if (p->zero < 3) { /* ZeRO-3 reduce-scatters every micro-batch: below */
            t_red = dp_coll(s, r, LP_COLL_REDUCESCATTER, P, Pe, b.g_comm);
            t_gather = dp_coll(s, r, LP_COLL_ALLGATHER, P, Pe, b.w);
        }
        const double nbuckets = dp_buckets(r, rank[i], P, Pe, b.g_comm);
        double exposed = t_red;
        if (r->fw.dp_overlap) exposed = fmax(t_red - bwd_window_s[i], t_red / nbuckets);
        double gexp = t_gather;
        if (r->fw.param_gather_overlap) gexp = fmax(t_gather - fwd_window_s, t_gather / nbuckets);
        out->exposed_s[i] = exposed + gexp;
        out->hidden_s[i] = (t_red - exposed) + (t_gather - gexp);
        out->red_s[i] = t_red;
        out->red_exposed_s[i] = exposed;
        out->gather_s[i] = t_gather;
        out->gather_exposed_s[i] = gexp;
        out->buckets[i] = (int)nbuckets;
    }
    /* tied input/output embeddings on different stages: their gradients are
     * all-reduced between the first and last stage after the backward */
    if (r->model.tied_embeddings && p->pp > 1) {
        double bytes = lp_sim_vocab_padded(r) * r->model.hidden / p->tp * b.g_comm;
        /* Megatron's embedding group: rank q of the first stage with rank q
         * of the last (parallel_state.py, pipeline ranks[0] and ranks[-1]),
         * q < tp * cp * dp: with pp 4 of tp * dp 2 on an 8-GPU node the
         * pairs {0, 6} and {1, 7} share the node */
        const int per_stage = p->tp * p->cp * p->dp;
        const int stride = per_stage * (p->pp - 1);
        out->emb_sync_s = lp_coll_time_at(&s->cm, &r->system, LP_COLL_ALLREDUCE, bytes, 2, stride,
                                          per_stage, per_stage * p->pp);
    }
    if (p->zero >= 3 && nd > 1) {
        const int world = lp_sim_world(p);
        /* ZeRO-3 / FSDP FULL_SHARD: every micro-batch gathers the parameters
         * for forward and again for backward, and reduce-scatters their
         * gradients. One collective per layer (an FSDP unit per block), or
         * one per parameter tensor (DeepSpeed's ZeRO-3 of 2021:
         * fw.zero3_per_tensor, with its two rules: zero3_gathers); the
         * embedding and head are one each. */
        double ag = 0, ag_b = 0, rs = 0;
        const double ends = pr->stage_max - (pr->dense_layers_per_stage * pr->layer +
                                             pr->moe_layers_per_stage * pr->moe_layer);
        const int nl_all = pr->dense_layers_per_stage + pr->moe_layers_per_stage;
        const double per_layer = nl_all > 0 ? (pr->stage_max - fmax(ends, 0.0)) / nl_all : 0.0;
        /* each kind's tensors: the gathers below and the gradient bucket after */
        struct lp_layer_tensors lts[2];
        for (int moe = 0; moe < 2; moe++) {
            int nl = moe ? pr->moe_layers_per_stage : pr->dense_layers_per_stage;
            if (nl <= 0) continue;
            struct lp_layer_tensors *ltp = &lts[moe];
            *ltp = (struct lp_layer_tensors){
                .pre = {moe ? pr->moe_layer : pr->layer}, .npre = 1, .ngrp = 1, .n = 1};
            if (r->fw.zero3_per_tensor) lp_sim_layer_tensors(r, moe != 0, ltp);
            const int nt = ltp->n;
            double after = 0; /* parameters of the layer's tensors after tensor i */
            for (int i = 0; i < nt; i++)
                after += lt_at(ltp, i);
            for (int i = 0; i < nt; i++) {
                const double szi = lt_at(ltp, i);
                after -= szi;
                double g =
                    lp_coll_time(cm, &r->system, LP_COLL_ALLGATHER, szi * b.w, nd, p->tp, world);
                double x = lp_coll_time(cm, &r->system, LP_COLL_REDUCESCATTER, szi * b.g_comm, nd,
                                        p->tp, world);
                double nf = nl, nb = nl;
                if (r->fw.zero3_per_tensor)
                    zero3_gathers(r, szi, after, nl_all, per_layer, fmax(ends, 0.0), &nf, &nb);
                if (r->fw.zero3_rank_copies) {
                    double vg, vx;
                    const double lg = z3_list_build(cm, szi * b.w, nd, true, &vg);
                    const double lx = z3_list_build(cm, szi * b.g_comm, nd, false, &vx);
                    g += z3_rank_copies(cm, szi * b.w, nd, g, true) + lg;
                    x += z3_rank_copies(cm, szi * b.g_comm, nd, x, false) + lx;
                    out->z3_copy_kernels += (double)nd * (nf + nb + nl);
                    out->z3_py_views += vg * (nf + nb) + vx * nl;
                }
                ag += nf * g;
                ag_b += nb * g;
                rs += nl * x;
                out->z3_ag_s[moe] += nf / nl * g;
                out->z3_ag_bwd_s[moe] += nb / nl * g;
                out->z3_rs_s[moe] += x;
            }
        }
        if (ends > 0) {
            out->z3_ends_ag_s =
                lp_coll_time(cm, &r->system, LP_COLL_ALLGATHER, ends * b.w, nd, p->tp, world);
            out->z3_ends_rs_s = lp_coll_time(cm, &r->system, LP_COLL_REDUCESCATTER, ends * b.g_comm,
                                             nd, p->tp, world);
            if (r->fw.zero3_rank_copies) { /* the ends as one tensor each way */
                double vg, vx;
                out->z3_ends_ag_s += z3_rank_copies(cm, ends * b.w, nd, out->z3_ends_ag_s, true) +
                                     z3_list_build(cm, ends * b.w, nd, true, &vg);
                out->z3_ends_rs_s +=
                    z3_rank_copies(cm, ends * b.g_comm, nd, out->z3_ends_rs_s, false) +
                    z3_list_build(cm, ends * b.g_comm, nd, false, &vx);
                out->z3_copy_kernels += 3.0 * nd;
                out->z3_py_views += 2.0 * vg + vx;
            }
            ag += out->z3_ends_ag_s;
            ag_b += out->z3_ends_ag_s;
            rs += out->z3_ends_rs_s;
        }
        if (r->fw.zero3_per_tensor) {
            /* the gradient bucket's copies and divisions, drawn with the
             * layers' reduce-scatters (the epilogue's flush of what the
             * layers left with the last kind's) and the ends' (their
             * gradient, the epilogue's flush with it) */
            struct ds_ipg q = {0};
            double lay_all = 0;
            for (int k = 0; k < 2; k++) {
                const int moe = 1 - k; /* the MoE layers first */
                const int nl = moe ? pr->moe_layers_per_stage : pr->dense_layers_per_stage;
                if (nl <= 0) continue;
                const double m0 = q.moved;
                z3_ipg_layers(&q, &lts[moe], nl); /* filled by the gathers' loop */
                double lay = q.moved - m0;
                if (moe == 0 || pr->dense_layers_per_stage <= 0) /* the last kind */
                    lay += DS_REDUCE_BUCKET_SIZE + q.xl;
                lay_all += lay;
                out->z3_rs_s[moe] += cm->ops->mem_s(cm, LP_MEM_COPY, 2.0 * lay * b.g_comm) / nl;
            }
            if (ends > 0) ds_ipg_grad(&q, ends);
            ds_ipg_flush(&q); /* independent_gradient_partition_epilogue */
            const double all = cm->ops->mem_s(cm, LP_MEM_COPY, 2.0 * q.moved * b.g_comm);
            out->z3_ipg_flushes = q.nf;
            out->z3_ipg_s = all;
            out->z3_ends_rs_s += all - cm->ops->mem_s(cm, LP_MEM_COPY, 2.0 * lay_all * b.g_comm);
            rs += all;
        }
        out->zero3_fwd_s = ag;
        out->zero3_bwd_s = ag_b + rs;
    }
    /* optimizer over the parameters this rank owns (the routed experts'
     * shard is of the expert-data-parallel group) */
    double owned = pr->train_max;
    if (p->zero >= 1) {
        int ne, se;
        owned = 0;
        for (int i = 0; i < 2; i++) {
            const double Pe = lp_sim_expert_group(r, stage_experts[i], &ne, &se);
            owned = fmax(owned, (stage_params[i] - Pe) / (double)nd + Pe / (double)ne);
        }
    }
    /* optim_bf16: apex DistributedFusedAdam with dtype bf16 reads the
     * gradients in their grad_sync_dtype (the buffer the reduce-scatter
     * filled) and writes its bf16 shard into the parameter buffer */
    double per = r->train.precision == LP_FP32 ? adam_step_bytes(4.0, 4.0, 0.0)
                 : r->fw.optim_bf16            ? adam_step_bytes(2.0, b.g, 2.0)
                                               : adam_step_bytes(4.0, 4.0, 2.0);
    if (r->fw.kind == LP_FW_HF) /* LoRA adapters: fp32 (LLaMA-Factory casts them) */
        per = torch_adamw_accesses(false) * (lp_sim_hf_pure16(r) ? 2.0 : 4.0);
    else if (r->fw.kind == LP_FW_FSDP1 || r->fw.kind == LP_FW_FSDP2)
        per = torch_adamw_accesses(true) * 4.0;
    out->opt_s = cm->ops->mem_s(cm, LP_MEM_ADAM, owned * per);
}

/* ---- PyTorch DDP and FSDP as they run (pp = 1, dense models) ----
 *
 * One iteration is played out per wrapped unit on two resources: the compute
 * stream and the network (NCCL collectives of the all-gather stream and the
 * post-backward / reducer stream share the links, so they run one at a time;
 * among those issued, the one that can start first goes first).
 *
 * FSDP (torch/distributed/fsdp/_runtime_utils.py, flat_param.py; PyTorch
 * 2.1-2.4), one unit per transformer block plus the root (embedding, final
 * norm, head) as llm-foundry wraps a model (fsdp_wrap_fn on each block):
 *  - _pre_forward -> _unshard: FlatParamHandle.pre_unshard casts the fp32
 *    shard to the bf16 param dtype (_use_low_precision_shard: one copy of
 *    P/n elements, 4 + 2 bytes each), then all_gather_into_tensor of the
 *    flat parameter (P x 2 bytes). With limit_all_gathers (default True) the
 *    CPU waits (_free_event_queue.dequeue_if_needed, 2 in flight) until the
 *    unit two back has been freed, so unit i's all-gather starts only after
 *    unit i-2's compute. Without forward_prefetch (default False) a unit's
 *    all-gather is issued at its own pre-forward, i.e. while the previous
 *    unit computes (the CPU runs ahead).
 *  - _post_forward -> _reshard: FULL_SHARD frees the unsharded flat param
 *    (not the root: _post_forward_reshard keeps it for the backward);
 *    SHARD_GRAD_OP keeps it until after the backward.
 *  - _pre_backward_hook: FULL_SHARD gathers again; BACKWARD_PRE (default)
 *    prefetches the next unit's all-gather before the current gradient
 *    computation.
 *  - _post_backward_hook -> _reduce_grad: the unsharded gradient is divided
 *    by the predivide factor (_div_if_needed; factor from
 *    _get_gradient_predivide_factor: doubled while it divides the world
 *    size and is below world/factor), reduce_scatter_tensor (P x 2 bytes,
 *    reduce_dtype bf16), divided by the postdivide factor, cast to the fp32
 *    shard (_cast_grad_to_param_dtype) and, from the second micro-batch on,
 *    added to the kept sharded gradient (_accumulate_sharded_grad). These
 *    kernels run on the post-backward stream around the collective.
 *    NO_SHARD all-reduces the gradient instead; HYBRID_SHARD reduce-scatters
 *    within the node and all-reduces the shard across nodes
 *    (_inter_node_pg), and gathers within the node only.
 *  Composer reduces the gradients of every micro-batch (no no_sync with
 *  sharded strategies), so every micro-batch pays these collectives.
 *
 * DDP (torch/nn/parallel/distributed.py, reducer.cpp): parameters are put in
 * buckets in reverse registration order (_compute_bucket_assignment_by_size,
 * limits [dist._DEFAULT_FIRST_BUCKET_BYTES = 1 MiB, bucket_cap_mb]); each
 * gradient's autograd hook copies it into its bucket divided by the world
 * size (mark_variable_ready_dense: at::mul_out, g + g bytes), a full bucket
 * is all-reduced at once, in bucket order, overlapping the rest of the
 * backward; after the last one the results are copied back into the
 * gradients (gradient_as_bucket_view defaults to False). Gradient
 * accumulation runs under no_sync, so only the last micro-batch reduces.
 * Under autocast each forward casts every fp32 weight to the compute dtype
 * (4 + 2 bytes per parameter). */

/* FSDP's host work per original parameter of a unit, measured by the FSDP
 * maintainers on 400 nn.Parameters in one FlatParameter (pytorch/pytorch
 * PR #96958, "[FSDP] Reduce CPU overhead", 2023-03, after that PR; PyTorch
 * 2.1 and later carry it): FlatParamHandle.unshard -> _use_unsharded_views
 * 4.268 ms (a view and an unsafe setattr per parameter), reshard ->
 * _use_sharded_views 2.7-2.8 ms (aten::slice and setattr). use_orig_params
 * (False by default) would add _writeback_orig_params, 1.071 ms: not
 * counted. The hooks run on the host thread that issues the unit's kernels
 * (the Python thread forward, the autograd engine's device thread
 * backward), so the GPU waits for them when the host has not run ahead. */
#define LP_FSDP_UNSHARD_VIEWS_S (4.268e-3 / 400.0)
#define LP_FSDP_SHARD_VIEWS_S (2.75e-3 / 400.0)

bool lp_torch_dp_applies(const struct lp_run *r)
{
    const struct lp_parallel *p = &r->par;
    if (r->fw.kind == LP_FW_DDP ? p->zero != 0
                                : !lp_fw_is_fsdp(r->fw.kind) || (p->zero != 0 && p->zero < 2))
        return false;
    /* an FSDP run outside these is refused before (rules.c fsdp_layout,
     * fsdp_lora; json_load.c), DDP's falls back to the generic model */
    return p->dp * p->cp >= 2 && r->train.lora_rank == 0 &&
           lp_torch_layout_gap(&r->model, p) == LP_GAP_NONE;
}

/* the network: a collective issued at `ready` starts when the links are free */
static double net(double *free_s, double ready_s, double dur_s, double *busy_s)
{
    double start = ready_s > *free_s ? ready_s : *free_s;
    *free_s = start + dur_s;
    *busy_s += dur_s;
    return *free_s;
}

void lp_dp_rec_put(struct lp_dp_rec *rec, int stage, int micro, enum lp_dp_coll c, int unit,
                   int units, double start_s, double dur_s)
{
    if (rec && rec->n < rec->cap)
        rec->ev[rec->n++] = (struct lp_event){.stage = stage,
                                              .stream = 3,
                                              .micro = micro,
                                              .kind = LP_EV_DP_COLL,
                                              .start_s = start_s,
                                              .dur_s = dur_s,
                                              .coll = c,
                                              .unit = unit,
                                              .units = units};
}

/* net(), and the collective recorded for a timeline (stage 0) */
static double coll(struct lp_dp_rec *rec, double *free_s, double ready_s, double dur_s,
                   double *busy_s, enum lp_dp_coll c, int unit, int units, int micro)
{
    const double end = net(free_s, ready_s, dur_s, busy_s);
    lp_dp_rec_put(rec, 0, micro, c, unit, units, end - dur_s, dur_s);
    return end;
}

double lp_fsdp_grad_cat_s(const struct lp_cost_model *cm, double P, double w_bytes)
{
    return cm->ops->mem_s(cm, LP_MEM_COPY, P * w_bytes * 2.0);
}

static double predivide_factor(int n)
{
    int f = 1;
    while (n % f == 0 && n / f > f)
        f *= 2;
    return (double)f;
}

struct torch_coll {
    const struct lp_cost_model *cm;
    const struct lp_system *sys;
    int n, stride;         /* the (shard) group */
    int rep_n, rep_stride; /* HYBRID_SHARD: the replica group across nodes */
    bool fsdp2;            /* fully_shard's collectives (below) */
    bool fp16;             /* the gradients reduced in fp16 (overflow risk) */
    int world;             /* the job's ranks (lp_coll_time) */
};

/* gather one unit of P parameters (the cast of the shard, then the
 * collective). FSDP2 (fully_shard; torch/distributed/fsdp/_fully_shard/
 * _fsdp_collectives.py, pytorch/pytorch 8fc2039d, the 2.6+ layout; the same
 * steps at 415cc262, torch/distributed/_composable/fsdp, 2.4) casts the fp32
 * shards into one flat bf16 tensor (_get_param_all_gather_inputs:
 * torch._foreach_copy_) and copies that into the all-gather input
 * (all_gather_copy_in: _foreach_copy_ into its rank's slice of the output),
 * both on the all-gather copy-in stream: one more copy of the shard than
 * FSDP1's flat parameter, which is gathered in place. */
static double unit_gather_s(const struct torch_coll *c, double P, double w_bytes)
{
    const double S = P / c->n;
    double cast = c->cm->ops->mem_s(c->cm, LP_MEM_COPY, S * (4.0 + w_bytes));
    if (c->fsdp2) cast += c->cm->ops->mem_s(c->cm, LP_MEM_COPY, S * 2.0 * w_bytes);
    return cast +
           lp_coll_time(c->cm, c->sys, LP_COLL_ALLGATHER, P * w_bytes, c->n, c->stride, c->world);
}

/* FSDP2's kernels on the compute stream, per unit: after each all-gather
 * foreach_all_gather_copy_out splits the gathered buffer into every
 * parameter's unsharded storage (torch.ops.fsdp.split_with_sizes_copy, run
 * from wait_for_unshard on the current stream: P x w read and written); at
 * the end of each unit's backward foreach_reduce's
 * foreach_reduce_scatter_copy_in chunk-cats the unsharded gradients into the
 * reduce-scatter input of the reduce dtype (torch._chunk_cat(..., out=), on
 * the current stream before reduce_scatter_stream.wait_stream: w read, g
 * written; the cast to an fp32 reduce dtype is this copy). Same source as
 * unit_gather_s. */
double lp_fsdp2_copy_out_s(const struct lp_cost_model *cm, double P, double w_bytes)
{
    return cm->ops->mem_s(cm, LP_MEM_COPY, P * w_bytes * 2.0);
}

double lp_fsdp2_chunk_cat_s(const struct lp_cost_model *cm, double P, double w_bytes,
                            double g_bytes)
{
    return cm->ops->mem_s(cm, LP_MEM_COPY, P * (w_bytes + g_bytes));
}

/* reduce one unit's gradient of P parameters (FSDP _reduce_grad). The
 * gradient arrives in the flat parameter's dtype (w_bytes, the param dtype
 * under MixedPrecision); where the reduce dtype differs (Composer's DEFAULT:
 * bf16 parameters, fp32 reduce) _post_backward_hook first casts the whole
 * unsharded gradient on the post-backward stream,
 * `flat_param.grad.data = flat_param.grad.to(handle._reduce_dtype)`
 * (torch/distributed/fsdp/_runtime_utils.py, pytorch/pytorch 00ae0bc91, the
 * PyTorch 2.0 line; the same test in 2.1-2.4): w + g bytes per parameter. */
/* HYBRID_SHARD: the replica all-reduce of the shard and what follows it run
 * on an all-reduce stream of their own, returned in *ar_s (0 otherwise).
 * FSDP1 from PyTorch 2.1 (torch/distributed/fsdp/_runtime_utils.py):
 * _init_streams makes `_all_reduce_stream` for HSDP ("Stream to run HSDP's
 * all-reduce as async") and gives the unshard and post-backward streams the
 * higher priority; _reduce_grad then runs
 * `state._all_reduce_stream.wait_stream(state._post_backward_stream)`, the
 * all_reduce over _inter_node_pg, the postdivide and the accumulation in it
 * (read in atorch's copy "MODIFIED from torch.distributed.fsdp.
 * _runtime_utils"; the older pytorch/pytorch 3ade90a6, the 2.0 line, still
 * all-reduced inside the post-backward stream with default_hooks.
 * allreduce_hook). FSDP2: foreach_reduce's all-reduce and view-out in
 * all_reduce_stream (unit_gather_s's source). So the next unit's
 * reduce-scatter (in the node) need not wait for this unit's all-reduce
 * (across nodes). */
static double unit_reduce_s(const struct torch_coll *c, double P, double w_bytes, double g_bytes,
                            bool shard, bool accumulate, double *ar_s)
{
    *ar_s = 0.0;
    const struct lp_cost_model *cm = c->cm;
    int world = c->n * c->rep_n;
    /* FSDP2 (_get_gradient_divide_factors, same source as unit_gather_s):
     * for fp32 / bf16 no divide kernels, NCCL's ReduceOp.AVG divides in the
     * collective; fp16 keeps FSDP1's pre / post factors. Its cast to the
     * reduce dtype is the chunk-cat on the compute stream
     * (lp_fsdp2_chunk_cat_s), so none here. */
    const bool avg = c->fsdp2 && !c->fp16;
    double pre = avg ? 1.0 : predivide_factor(world), post = avg ? 1.0 : world / pre, t = 0;
    if (g_bytes != w_bytes && !c->fsdp2)
        t += cm->ops->mem_s(cm, LP_MEM_COPY, P * (w_bytes + g_bytes));
    if (pre > 1) t += cm->ops->mem_s(cm, LP_MEM_COPY, P * 2.0 * g_bytes);
    if (!shard) {
        t += lp_coll_time(cm, c->sys, LP_COLL_ALLREDUCE, P * g_bytes, c->n, c->stride, c->world);
        if (post > 1) t += cm->ops->mem_s(cm, LP_MEM_COPY, P * 2.0 * g_bytes);
        return t;
    }
    double S = P / c->n;
    t += lp_coll_time(cm, c->sys, LP_COLL_REDUCESCATTER, P * g_bytes, c->n, c->stride, c->world);
    const double rs = t; /* the reduce-scatter stream's part */
    if (c->rep_n > 1)    /* the rest in the all-reduce stream */
        t = lp_coll_time(cm, c->sys, LP_COLL_ALLREDUCE, S * g_bytes, c->rep_n, c->rep_stride,
                         c->world);
    if (post > 1) t += cm->ops->mem_s(cm, LP_MEM_COPY, S * 2.0 * g_bytes);
    /* to the fp32 shard (FSDP2: _to_dtype_if_needed, a no-op for an fp32
     * reduce dtype) */
    if (!c->fsdp2 || g_bytes != 4.0) t += cm->ops->mem_s(cm, LP_MEM_COPY, S * (g_bytes + 4.0));
    if (accumulate) t += cm->ops->mem_s(cm, LP_MEM_COPY, S * 3.0 * 4.0);
    if (c->rep_n > 1) { /* (reduce-scatter stream, all-reduce stream) */
        *ar_s = t;
        return rs;
    }
    return t;
}

/* one unit's reduction: the reduce-scatter stream's part on the links of
 * the shard group, HYBRID_SHARD's all-reduce after it on the links across
 * nodes (inter_free), which the gathers within the node do not use */
static double unit_reduce(struct lp_dp_rec *rec, double *net_free, double *inter_free, double ready,
                          double rs_s, double ar_s, double *busy, int unit, int units, int micro)
{
    double end = coll(rec, net_free, ready, rs_s, busy, LP_DPC_UNIT_REDUCE, unit, units, micro);
    if (ar_s > 0)
        end = coll(rec, inter_free, end, ar_s, busy, LP_DPC_UNIT_REDUCE, unit, units, micro);
    return end;
}

int lp_torch_dp(const struct lp_cost_model *cm, const struct lp_run *r, const struct lp_params *pr,
                const struct lp_torch_pass *ps, struct lp_torch_dp *out, struct lp_dp_rec *rec)
{
    memset(out, 0, sizeof(*out));
    const struct lp_parallel *p = &r->par;
    const int L = r->model.layers, M = ps->micro;
    if (!lp_torch_dp_applies(r)) return LP_EINVAL;
    struct lp_bytes_per_param b;
    lp_sim_param_bytes(r, &b);
    const bool fsdp = lp_fw_is_fsdp(r->fw.kind), fsdp2 = r->fw.kind == LP_FW_FSDP2;
    const bool shard = fsdp && p->zero >= 2, full = fsdp && p->zero == 3;
    const int nd = p->dp * p->cp, G = r->system.gpus_per_node > 0 ? r->system.gpus_per_node : 1;
    struct torch_coll c = {cm,
                           &r->system,
                           nd,
                           p->tp,
                           1,
                           p->tp,
                           fsdp2,
                           r->train.precision == LP_FP16 && !r->fw.grad_fp32,
                           lp_sim_world(p)};
    if (fsdp && shard && r->fw.hybrid_shard) {
        int per_node = G / p->tp > 1 ? G / p->tp : 1;
        if (per_node < nd && nd % per_node == 0) {
            c.n = per_node;
            c.rep_n = nd / per_node;
            c.rep_stride = p->tp * per_node;
        }
    }
    const double P_layer = pr->layer;
    const double P_root = pr->stage_max - L * pr->layer;
    /* host: the hook work of unshard / reshard for a block and the root
     * (embedding, final norm, head: tied or not, 2-3 tensors) */
    double hu_blk = 0, hr_blk = 0, hu_root = 0, hr_root = 0;
    /* a block's tensors (a dense block: one FFN group, at most 9 + 4), for
     * the hooks below and DDP's buckets, once for every micro-batch */
    struct lp_layer_tensors blk;
    lp_sim_layer_tensors(r, false, &blk);
    double blk_sz[9 + 4];
    const int blk_n = blk.n;
    for (int j = 0; j < blk_n; j++)
        blk_sz[j] = lt_at(&blk, j);
    /* FSDP2 keeps one unsharded nn.Parameter per parameter and swaps
     * registrations with a setattr, no views made per unshard: its hook time
     * per parameter has no published measurement and is not counted */
    if (shard && !fsdp2) {
        const double nt = blk_n;
        const double nr = r->model.tied_embeddings ? 2.0 : 3.0;
        hu_blk = nt * LP_FSDP_UNSHARD_VIEWS_S;
        hr_blk = nt * LP_FSDP_SHARD_VIEWS_S;
        hu_root = nr * LP_FSDP_UNSHARD_VIEWS_S;
        hr_root = nr * LP_FSDP_SHARD_VIEWS_S;
    }
    /* FSDP's flat-parameter gradient: with use_orig_params=False (the
     * default) the module's parameters are views of the unsharded flat
     * parameter made by torch.split(flat_param, _numels) then view(shape)
     * (flat_param.py FlatParamHandle._get_unflat_views, called from
     * _use_unsharded_views at every unshard; PyTorch 2.0-2.2), and autograd
     * records that split. So the gradient reaches the flat parameter through
     * SplitWithSizesBackward, whose split_with_sizes_backward
     * (torch/csrc/autograd/FunctionsManual.cpp) builds it with one at::cat of
     * the unit's parameter gradients: a kernel on the compute stream at the
     * end of each unit's backward, reading and writing P elements of the flat
     * parameter's dtype (the param dtype), before AccumulateGrad and the
     * post-backward hook. Every strategy (NO_SHARD unshards into the same
     * views). DDP's parameters are plain nn.Parameters: no such kernel. */
    double cat_blk = fsdp ? lp_fsdp_grad_cat_s(cm, P_layer, b.w) : 0.0;
    double cat_root = fsdp ? lp_fsdp_grad_cat_s(cm, P_root, b.w) : 0.0;
    /* FSDP2 has no flat parameter (per-parameter DTensor shards): in that
     * kernel's place the reduce-scatter copy-in, and a copy-out after every
     * gather (lp_fsdp2_chunk_cat_s, lp_fsdp2_copy_out_s) */
    double out_blk = 0, out_root = 0;
    if (fsdp2) {
        cat_blk = lp_fsdp2_chunk_cat_s(cm, P_layer, b.w, b.g_comm);
        cat_root = lp_fsdp2_chunk_cat_s(cm, P_root, b.w, b.g_comm);
        if (shard) {
            out_blk = lp_fsdp2_copy_out_s(cm, P_layer, b.w);
            out_root = lp_fsdp2_copy_out_s(cm, P_root, b.w);
        }
    }
    double ag_blk = 0, ag_root = 0;
    if (shard) {
        ag_blk = unit_gather_s(&c, P_layer, b.w);
        ag_root = unit_gather_s(&c, P_root, b.w);
    }
    /* DDP: autocast's per-forward cast of every fp32 weight */
    const double cast_fwd = (!fsdp && r->train.precision != LP_FP32)
                                ? cm->ops->mem_s(cm, LP_MEM_COPY, (pr->stage_max) * (4.0 + 2.0))
                                : 0.0;

    double t = 0, net_free = 0, inter_free = 0, busy = 0, wait_f = 0, wait_b = 0, extra_f = 0,
           extra_b = 0;
    double h = 0; /* the host thread: when it has issued everything so far */
    double ce[LP_TORCH_MAX_UNITS];
    double last_bend = 0; /* the end of the last backward pass */
    for (int k = 0; k < M; k++) {
        const bool sync = fsdp || k == M - 1;
        const int rec0 = rec ? rec->n : 0;
        double bend = 0; /* the end of this micro-batch's backward */
        /* ---- forward ---- */
        double t0 = t;
        if (h < t0) h = t0; /* the optimizer step synchronised the host */
        if (shard) {
            h += hu_root; /* each micro-batch: the backward resharded it */
            double ag = coll(rec, &net_free, h, ag_root, &busy, LP_DPC_UNIT_GATHER, L, L + 1, k);
            if (ag > t) wait_f += ag - t, t = ag;
            t += out_root;
            extra_f += out_root;
        }
        t += ps->emb_f + cast_fwd;
        for (int i = 0; i < L; i++) {
            if (shard) {
                /* limit_all_gathers: the host waits until unit i-2 is freed
                 * (FULL_SHARD frees in forward), then runs the unit's
                 * pre-forward unshard and issues its all-gather */
                if (full && i >= 2 && ce[i - 2] > h) h = ce[i - 2];
                h += hu_blk;
                double ag = coll(rec, &net_free, h, ag_blk, &busy, LP_DPC_UNIT_GATHER, i, L + 1, k);
                double go = fmax(ag, h); /* the unit's kernels are issued after the hook */
                if (go > t) wait_f += go - t, t = go;
                t += out_blk;
                extra_f += out_blk;
            }
            t += ps->layer_f;
            ce[i] = t;
            if (full) h += hr_blk; /* _post_forward -> _reshard */
        }
        t += ps->head_f + ps->head_b;
        /* ---- backward ---- */
        if (fsdp) {
            /* reduce-scatters waiting for their unit's gradient, in order */
            double rs_ready[LP_TORCH_MAX_UNITS];
            int rs_n = 0, rs_next = 0;
            double ar_blk, ar_root;
            const double rs_blk = unit_reduce_s(&c, P_layer, b.w, b.g_comm, shard, k > 0, &ar_blk);
            const double rs_root = unit_reduce_s(&c, P_root, b.w, b.g_comm, shard, k > 0, &ar_root);
            const double bstart = t;
            for (int i = L - 1; i >= 0; i--) {
                if (h < bstart && i == L - 1) h = bstart; /* loss.backward() */
                if (full) {
                    /* BACKWARD_PRE prefetch; limit_all_gathers: unit i+2 freed */
                    double ready = i + 2 < L ? ce[i + 2] : bstart;
                    if (ready > h) h = ready;
                    h += hu_blk; /* the (prefetched) unshard's views */
                    ready = h;
                    while (rs_next < rs_n &&
                           rs_ready[rs_next] <= (ready > net_free ? ready : net_free)) {
                        unit_reduce(rec, &net_free, &inter_free, rs_ready[rs_next], rs_blk, ar_blk,
                                    &busy, L - 1 - rs_next, L + 1, k);
                        rs_next++;
                    }
                    double ag =
                        coll(rec, &net_free, ready, ag_blk, &busy, LP_DPC_UNIT_GATHER, i, L + 1, k);
                    if (ag > t) wait_b += ag - t, t = ag;
                    t += out_blk;
                    extra_b += out_blk;
                }
                if (h > t) wait_b += h - t, t = h; /* kernels issued after the hooks */
                t += ps->layer_b + cat_blk;
                extra_b += cat_blk;
                ce[i] = t; /* now: the end of the unit's backward */
                rs_ready[rs_n++] = t;
                h += hr_blk; /* _post_backward_hook -> _reshard */
            }
            h += hr_root;
            t += ps->emb_b + cat_root;
            extra_b += cat_root;
            bend = t;
            for (; rs_next < rs_n; rs_next++)
                unit_reduce(rec, &net_free, &inter_free, rs_ready[rs_next], rs_blk, ar_blk, &busy,
                            L - 1 - rs_next, L + 1, k);
            unit_reduce(rec, &net_free, &inter_free, t, rs_root, ar_root, &busy, L, L + 1, k);
        } else {
            /* DDP: gradients in reverse registration order: the head, the
             * final norm, the blocks from the last (each block's tensors
             * from its last), the embedding; each becomes ready through its
             * unit's backward in proportion to its size, is copied into its
             * bucket (one kernel per tensor) and a full bucket is reduced */
            double filled = 0, limit = fmin(1024.0 * 1024.0, r->fw.bucket_bytes);
            int nbk = 0; /* buckets reduced */
            const double norm = P_root - pr->head - pr->emb;
            const int nu = L + 3;
            for (int u = 0; u < nu; u++) {
                /* unit: 0 head, 1 final norm, 2..L+1 blocks, L+2 embedding */
                double dur = u < 2 ? 0.0 : u < L + 2 ? ps->layer_b : ps->emb_b;
                const double one[1] = {u == 0 ? pr->head : u == 1 ? norm : pr->emb};
                const double *ts = u >= 2 && u < L + 2 ? blk_sz : one;
                const int n = u >= 2 && u < L + 2 ? blk_n : 1;
                double size = 0;
                for (int j = 0; j < n; j++)
                    size += ts[j];
                if (size <= 0 || !sync) {
                    t += dur;
                    continue;
                }
                for (int j = n - 1; j >= 0; j--) {
                    double bytes = ts[j] * b.g_comm;
                    double cp = cm->ops->mem_s(cm, LP_MEM_COPY, bytes * 2.0);
                    extra_b += cp;
                    t += dur * ts[j] / size + cp;
                    filled += bytes;
                    if (filled >= limit) {
                        coll(rec, &net_free, t,
                             lp_coll_time(cm, &r->system, LP_COLL_ALLREDUCE, filled, nd, p->tp,
                                          lp_sim_world(p)),
                             &busy, LP_DPC_ALLREDUCE, nbk++, 0, k);
                        filled = 0;
                        limit = r->fw.bucket_bytes;
                    }
                }
            }
            bend = t;
            if (sync) {
                if (filled > 0)
                    coll(rec, &net_free, t,
                         lp_coll_time(cm, &r->system, LP_COLL_ALLREDUCE, filled, nd, p->tp,
                                      lp_sim_world(p)),
                         &busy, LP_DPC_ALLREDUCE, nbk++, 0, k);
                double back = cm->ops->mem_s(cm, LP_MEM_COPY, pr->stage_max * b.g_comm * 2.0);
                double end = fmax(t, net_free) + back;
                /* on the compute stream, after the last bucket */
                lp_dp_rec_put(rec, 0, k, LP_DPC_COPY_BACK, -1, 0, end - back, back);
                out->tail_s = end - t;
                t = end;
            }
            for (int i = rec0; rec && i < rec->n; i++)
                rec->ev[i].units = rec->ev[i].coll == LP_DPC_ALLREDUCE ? nbk : 0;
        }
        last_bend = bend;
    }
    for (int i = 0; rec && i < rec->n; i++)
        rec->ev[i].start_s -= last_bend;
    if (inter_free > net_free) net_free = inter_free;
    if (fsdp && net_free > t) {
        out->tail_s = net_free - t;
        t = net_free;
    }
    out->host_s =
        shard ? M * ((full ? 2.0 : 1.0) * L * (hu_blk + hr_blk) + hu_root + hr_root) : 0.0;
    out->fwd_extra_s = wait_f + extra_f + M * cast_fwd;
    out->bwd_extra_s = wait_b + extra_b;
    out->comm_s = busy;
    double exposed = wait_f + wait_b + out->tail_s;
    out->hidden_s = busy > exposed ? busy - exposed : 0.0;
    return LP_OK;
}
