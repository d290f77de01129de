/* Results as JSON (simulate --json, plans.json entries); the trace-event
 * timeline (--trace) is trace_json.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "llmplan/io.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static int add_num(cJSON *o, const char *k, double v)
{
    return cJSON_AddNumberToObject(o, k, v) ? 0 : -1;
}

/* "framework": its name when every option is the framework's default, else
 * an object with the name and every option, as the run description reads
 * it back (docs/frameworks.md). Returns nonzero on allocation failure. */
static int add_framework(cJSON *c, const struct lp_framework_opts *f)
{
    struct lp_framework_opts d;
    lp_framework_defaults_cal(f->kind, &f->cal, &d); /* with the run's calibration */
    const bool same =
        f->dp_overlap == d.dp_overlap && f->tp_overlap == d.tp_overlap &&
        f->tp_overlap_rs == d.tp_overlap_rs && f->pp_overlap == d.pp_overlap &&
        f->param_gather_overlap == d.param_gather_overlap && f->fused_kernels == d.fused_kernels &&
        f->fused_softmax == d.fused_softmax && f->fused_mlp == d.fused_mlp &&
        f->tp_async_dgrad == d.tp_async_dgrad && f->bucket_bytes == d.bucket_bytes &&
        f->mcore_buckets == d.mcore_buckets && f->step_overhead_s == d.step_overhead_s &&
        f->host_op_s == d.host_op_s && f->host_overlap == d.host_overlap &&
        f->zero3_per_tensor == d.zero3_per_tensor && f->xent == d.xent &&
        f->grad_fp32 == d.grad_fp32 && f->optim_bf16 == d.optim_bf16 &&
        f->ep_overlap == d.ep_overlap && f->dispatcher == d.dispatcher &&
        f->dispatcher_sms == d.dispatcher_sms && f->cuda_graphs == d.cuda_graphs &&
        f->moe_impl == d.moe_impl && f->hybrid_shard == d.hybrid_shard &&
        f->train_metrics == d.train_metrics && f->ckpt_reentrant == d.ckpt_reentrant &&
        f->ckpt_early_stop == d.ckpt_early_stop;
    if (same) return !cJSON_AddStringToObject(c, "framework", lp_framework_name(f->kind));
    cJSON *o = cJSON_AddObjectToObject(c, "framework");
    if (!o) return 1;
    int bad = !cJSON_AddStringToObject(o, "name", lp_framework_name(f->kind));
    bad |= !cJSON_AddBoolToObject(o, "dp_overlap", f->dp_overlap);
    bad |= !cJSON_AddBoolToObject(o, "tp_overlap", f->tp_overlap);
    bad |= !cJSON_AddStringToObject(o, "tp_overlap_rs", lp_ub_rs_name(f->tp_overlap_rs));
    bad |= !cJSON_AddBoolToObject(o, "pp_overlap", f->pp_overlap);
    bad |= !cJSON_AddBoolToObject(o, "param_gather_overlap", f->param_gather_overlap);
    bad |= !cJSON_AddBoolToObject(o, "fused_kernels", f->fused_kernels);
    bad |= !cJSON_AddBoolToObject(o, "fused_softmax", f->fused_softmax);
    bad |= !cJSON_AddBoolToObject(o, "fused_mlp", f->fused_mlp);
    bad |= !cJSON_AddBoolToObject(o, "tp_async_dgrad", f->tp_async_dgrad);
    /* Megatron-Core's bucket rule has no size to print: an object read back
     * without bucket_MB keeps it */
    if (!f->mcore_buckets) bad |= add_num(o, "bucket_MB", f->bucket_bytes / 1e6);
    bad |= add_num(o, "step_overhead_ms", f->step_overhead_s * 1e3);
    bad |= add_num(o, "host_op_us", f->host_op_s * 1e6);
    bad |= add_num(o, "host_overlap", f->host_overlap);
    bad |= !cJSON_AddBoolToObject(o, "zero3_per_tensor", f->zero3_per_tensor);
    bad |= !cJSON_AddStringToObject(o, "cross_entropy", lp_xent_name(f->xent));
    bad |= !cJSON_AddBoolToObject(o, "grad_fp32", f->grad_fp32);
    bad |= !cJSON_AddBoolToObject(o, "optim_bf16", f->optim_bf16);
    bad |= !cJSON_AddBoolToObject(o, "ep_overlap", f->ep_overlap);
    bad |= !cJSON_AddStringToObject(o, "moe_dispatcher", lp_dispatcher_name(f->dispatcher));
    cJSON *g = cJSON_AddArrayToObject(o, "cuda_graphs");
    bad |= !g;
    for (int i = 0; g && i < LP_GRAPH_SCOPES; i++)
        if (f->cuda_graphs & (1u << i))
            bad |= !cJSON_AddItemToArray(g, cJSON_CreateString(lp_graph_scope_name(i)));
    bad |= !cJSON_AddStringToObject(o, "moe_impl", lp_moe_impl_name(f->moe_impl));
    bad |= !cJSON_AddBoolToObject(o, "hybrid_shard", f->hybrid_shard);
    bad |= !cJSON_AddBoolToObject(o, "train_metrics", f->train_metrics);
    /* written where it is not the framework's default only (the key came
     * later: the object stays as it was for every run that keeps it) */
    if (f->ckpt_reentrant != d.ckpt_reentrant)
        bad |= !cJSON_AddBoolToObject(o, "ckpt_reentrant", f->ckpt_reentrant);
    if (f->ckpt_early_stop != d.ckpt_early_stop)
        bad |= !cJSON_AddBoolToObject(o, "ckpt_early_stop", f->ckpt_early_stop);
    if (f->dispatcher_sms != d.dispatcher_sms)
        bad |= !cJSON_AddNumberToObject(o, "moe_dispatcher_sms", f->dispatcher_sms);
    return bad;
}

static cJSON *config_json(const struct lp_run *r, int gpus)
{
    cJSON *c = cJSON_CreateObject();
    if (!c) return NULL;
    int bad = 0;
    bad |= !cJSON_AddStringToObject(c, "model", r->model.name);
    bad |= !cJSON_AddStringToObject(c, "system", r->system.name);
    bad |= add_num(c, "gpus", gpus);
    if (r->system.tp_across_nodes) bad |= !cJSON_AddTrueToObject(c, "tp_across_nodes");
    if (r->system.price_pick > 0 && r->system.price_pick <= r->system.nprices)
        bad |=
            !cJSON_AddStringToObject(c, "prices", r->system.prices[r->system.price_pick - 1].name);
    cJSON *p = cJSON_AddObjectToObject(c, "parallel");
    bad |= !p;
    if (p) {
        bad |= add_num(p, "tp", r->par.tp) | add_num(p, "pp", r->par.pp) |
               add_num(p, "dp", r->par.dp) | add_num(p, "cp", r->par.cp) |
               add_num(p, "ep", r->par.ep) | add_num(p, "vp", r->par.vp) |
               add_num(p, "micro_batch", r->par.micro_batch);
        bad |= !cJSON_AddBoolToObject(p, "sequence_parallel", r->par.sequence_parallel);
        bad |= !cJSON_AddStringToObject(p, "recompute", lp_recompute_name(r->par.recompute));
        bad |= add_num(p, "zero", r->par.zero);
        bad |= !cJSON_AddStringToObject(p, "schedule", lp_schedule_name(r->par.schedule));
        /* the extensions, where set (a plan re-simulates identically) */
        if (r->par.etp > 0) bad |= add_num(p, "etp", r->par.etp);
        if (r->par.first_stage_layers > 0)
            bad |= add_num(p, "first_stage_layers", r->par.first_stage_layers);
        if (r->par.last_stage_layers > 0)
            bad |= add_num(p, "last_stage_layers", r->par.last_stage_layers);
        if (r->par.recompute == LP_RECOMPUTE_SELECTIVE && r->par.recompute_modules) {
            cJSON *m = cJSON_AddArrayToObject(p, "recompute_modules");
            bad |= !m;
            for (int i = 0; m && i < LP_RC_MODULES; i++)
                if (r->par.recompute_modules & (1u << i))
                    bad |= !cJSON_AddItemToArray(m, cJSON_CreateString(lp_rc_module_name(i)));
        }
        if (r->par.recompute == LP_RECOMPUTE_FULL && r->par.recompute_layers > 0) {
            bad |= !cJSON_AddStringToObject(p, "recompute_method",
                                            lp_rc_method_name(r->par.recompute_method));
            bad |= add_num(p, "recompute_layers", r->par.recompute_layers);
        }
    }
    /* the run's training settings; "training" itself is the cost projection
     * of the simulate output (docs/design.md) */
    cJSON *t = cJSON_AddObjectToObject(c, "training_config");
    bad |= !t;
    if (t) {
        bad |= add_num(t, "global_batch", (double)r->train.global_batch);
        bad |= !cJSON_AddStringToObject(t, "precision", lp_prec_name(r->train.precision));
        bad |= !cJSON_AddBoolToObject(t, "flash_attention", r->train.flash_attention);
        bad |= !cJSON_AddStringToObject(
            t, "attention", lp_attention_name(r->train.flash_attention, r->train.attention));
        bad |= add_num(t, "tokens", r->train.tokens);
        if (r->train.tokens_per_param > 0)
            bad |= add_num(t, "tokens_per_param", r->train.tokens_per_param);
        if (r->train.precision == LP_FP8)
            bad |= !cJSON_AddStringToObject(t, "fp8_scaling",
                                            lp_fp8_scaling_name(r->train.fp8_scaling));
        if (r->train.bf16_first_layers > 0)
            bad |= add_num(t, "bf16_first_layers", r->train.bf16_first_layers);
        if (r->train.bf16_last_layers > 0)
            bad |= add_num(t, "bf16_last_layers", r->train.bf16_last_layers);
        cJSON *mp = NULL;
        for (int q = 0; q < LP_QMOD_COUNT; q++) {
            if (!r->train.module_prec[q]) continue;
            if (!mp) mp = cJSON_AddObjectToObject(t, "module_precision");
            bad |= !mp || !cJSON_AddStringToObject(
                              mp, lp_qmod_name((enum lp_qmod)q),
                              lp_prec_name((enum lp_prec)(r->train.module_prec[q] - 1)));
        }
        if (r->train.lora_rank > 0) {
            cJSON *ft = cJSON_AddObjectToObject(t, "finetune");
            bad |= !ft || !cJSON_AddStringToObject(ft, "method", "lora") ||
                   add_num(ft, "rank", r->train.lora_rank) ||
                   add_num(ft, "base_bits", r->train.lora_base_bits);
            bad |= !ft || !cJSON_AddStringToObject(ft, "targets",
                                                   lp_lora_targets_name(r->train.lora_targets));
            if (ft && r->train.lora_dropout > 0)
                bad |= add_num(ft, "dropout", r->train.lora_dropout);
        }
        const struct lp_dataset *d = &r->train.dataset;
        if (d->nbins > 0) {
            cJSON *ds = cJSON_AddObjectToObject(t, "dataset");
            cJSON *hist = ds ? cJSON_AddArrayToObject(ds, "histogram") : NULL;
            bad |= !ds || !hist || add_num(ds, "queries", d->queries) ||
                   add_num(ds, "epochs", d->epochs) || add_num(ds, "pad_multiple", d->pad_multiple);
            if (ds && d->max_len > 0) bad |= add_num(ds, "max_len", d->max_len);
            if (ds && d->batching != LP_BATCHING_LONGEST)
                bad |= !cJSON_AddStringToObject(ds, "batching", lp_batching_name(d->batching));
            if (ds && d->pack_len > 0) bad |= add_num(ds, "pack_len", d->pack_len);
            for (int i = 0; hist && i < d->nbins; i++) {
                const double pair[2] = {d->len[i], d->frac[i]};
                cJSON *e = cJSON_CreateDoubleArray(pair, 2);
                bad |= !e || !cJSON_AddItemToArray(hist, e);
            }
        }
    }
    bad |= add_framework(c, &r->fw);
    if (bad) {
        cJSON_Delete(c);
        return NULL;
    }
    return c;
}

static int result_json(const struct lp_run *run, const struct lp_result *res, bool with_config,
                       bool compact, char **out, struct lp_err *err)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) LP_FAIL(err, LP_ENOMEM, "out of memory building JSON");
    int bad = 0;
    if (with_config) {
        cJSON *c = config_json(run, res->gpus);
        if (!c) {
            cJSON_Delete(o);
            LP_FAIL(err, LP_ENOMEM, "out of memory building JSON");
        }
        for (cJSON *it = c->child; it;) {
            cJSON *next = it->next;
            cJSON *d = cJSON_DetachItemViaPointer(c, it);
            cJSON_AddItemToObject(o, d->string, d);
            it = next;
        }
        cJSON_Delete(c);
    }
    bad |= !cJSON_AddBoolToObject(o, "feasible", res->feasible);
    if (res->feasible) {
        bad |= !cJSON_AddNullToObject(o, "reason");
    } else {
        char why[256];
        lp_result_reason(res, why, sizeof(why));
        bad |= !cJSON_AddStringToObject(o, "reason", why);
        bad |= !cJSON_AddStringToObject(o, "reason_code", lp_reason_name(res->reason));
    }
    bad |= add_num(o, "iteration_time_s", res->iteration_time_s);
    bad |= add_num(o, "tokens_per_s", res->tokens_per_s);
    bad |= add_num(o, "model_tflops_per_gpu", res->model_tflops_per_gpu);
    bad |= add_num(o, "mfu", res->mfu);
    /* the fraction of the profile's rates the run was timed at, and whose
     * it is (the GPU preset's, the calibration's fitted on other GPUs' rows,
     * or --sustained-frac): plans.json and simulate --json alike */
    bad |= add_num(o, "sustained_frac", lp_run_sustained(run));
    bad |= !cJSON_AddStringToObject(o, "sustained_frac_source",
                                    lp_sustained_src_name(lp_run_sustained_src(run)));
    bad |= add_num(o, "memory_per_gpu_gib", res->memory_per_gpu_bytes / GIB);
    cJSON *mem = cJSON_AddObjectToObject(o, "memory_gib");
    bad |= !mem;
    if (mem) {
        bad |= add_num(mem, "weights", res->memory.weights_bytes / GIB);
        bad |= add_num(mem, "gradients", res->memory.grads_bytes / GIB);
        bad |= add_num(mem, "optimizer", res->memory.optimizer_bytes / GIB);
        bad |= add_num(mem, "activations", res->memory.activations_bytes / GIB);
        bad |= add_num(mem, "temporary", res->memory.temp_bytes / GIB);
    }
    cJSON *b = cJSON_AddObjectToObject(o, "breakdown_s");
    bad |= !b;
    if (b) {
        bad |= add_num(b, "compute", res->breakdown.compute_s);
        bad |= add_num(b, "tp_comm", res->breakdown.tp_comm_s);
        bad |= add_num(b, "pp_bubble", res->breakdown.pp_bubble_s);
        bad |= add_num(b, "pp_comm", res->breakdown.pp_comm_s);
        bad |= add_num(b, "dp_comm_exposed", res->breakdown.dp_comm_exposed_s);
        bad |= add_num(b, "optimizer", res->breakdown.optimizer_s);
        bad |= add_num(b, "zero3_gather", res->breakdown.zero3_gather_s);
    }
    bad |= add_num(o, "queries_per_s", res->queries_per_s);
    bad |= add_num(o, "seq_len", res->seq_len);
    cJSON *st = cJSON_AddObjectToObject(o, "stages_s");
    bad |= !st;
    if (st) { /* Xia et al. 2024's stage breakdown of one iteration */
        bad |= add_num(st, "forward", res->stage_fwd_s);
        bad |= add_num(st, "backward", res->stage_bwd_s);
        bad |= add_num(st, "optimizer", res->breakdown.optimizer_s);
        bad |= add_num(st, "attention", res->kind_attn_s);
        bad |= add_num(st, "mamba", res->kind_mamba_s);
        bad |= add_num(st, "moe", res->kind_moe_s);
        bad |= add_num(st, "mlp", res->kind_mlp_s);
        bad |= add_num(st, "embedding_and_loss", res->kind_edge_s);
        bad |= add_num(st, "norms_within_blocks", res->kind_norm_s);
    }
    cJSON *lo = cJSON_AddObjectToObject(o, "layer_ops_s");
    bad |= !lo;
    for (int pass = 0; lo && pass < 2; pass++) {
        cJSON *ps = cJSON_AddObjectToObject(lo, pass ? "backward" : "forward");
        bad |= !ps;
        for (int k = 0; ps && k < LP_OPC_COUNT; k++)
            bad |= add_num(ps, lp_op_class_name((enum lp_op_class)k),
                           pass ? res->layer_bwd_s[k] : res->layer_fwd_s[k]);
    }
    bad |= add_num(o, "microbatches", res->microbatches);
    bad |= add_num(o, "cost_per_iteration_usd", res->cost_per_iteration_usd);
    bad |= add_num(o, "tokens_per_usd", res->tokens_per_usd);
    cJSON *t = cJSON_AddObjectToObject(o, "training");
    bad |= !t;
    if (t) {
        bad |= add_num(t, "time_days", res->time_days);
        bad |= add_num(t, "gpu_hours", res->gpu_hours);
        bad |= add_num(t, "cost_usd", res->cost_usd);
        /* the goodput factor that lengthened the run (src/core/bill.c), when modelled */
        if (run->system.goodput.mtbf_gpu_hours > 0)
            bad |= add_num(t, "goodput", lp_bill_goodput(&run->system, res->gpus));
    }
    char *s = bad ? NULL : compact ? cJSON_PrintUnformatted(o) : cJSON_Print(o);
    cJSON_Delete(o);
    if (!s) LP_FAIL(err, LP_ENOMEM, "out of memory building JSON");
    *out = s;
    return LP_OK;
}

int lp_result_to_json(const struct lp_run *run, const struct lp_result *res, bool with_config,
                      char **out, struct lp_err *err)
{
    return result_json(run, res, with_config, false, out, err);
}

int lp_result_to_json_line(const struct lp_run *run, const struct lp_result *res, bool with_config,
                           char **out, struct lp_err *err)
{
    return result_json(run, res, with_config, true, out, err);
}
