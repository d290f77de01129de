/* The per-rank walk of an index range: decode, skip structurally invalid
 * blocks in one step, simulate the rest, count, keep rows and offer feasible
 * plans to the local Pareto front / top-k. Not collective. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "llmplan/loss.h"
#include "search_internal.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
/* Steps (evaluations, or skipped blocks) between two polls for a stop. */
#define POLL_EVERY 64

int lp_ranges_push(struct lp_ranges *l, const struct lp_range *r, struct lp_err *err)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        struct lp_range *n = realloc(l->r, cap * sizeof(*n));
        if (!n) LP_FAIL(err, LP_ENOMEM, "out of memory (range list of %zu)", cap);
        l->r = n;
        l->cap = cap;
    }
    l->r[l->n++] = *r;
    return LP_OK;
}

static int cmp_range(const void *a, const void *b)
{
    const struct lp_range *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

void lp_ranges_sort(struct lp_ranges *l)
{
    if (l->n > 1) qsort(l->r, l->n, sizeof(*l->r), cmp_range);
}

void lp_ranges_free(struct lp_ranges *l)
{
    free(l->r);
    memset(l, 0, sizeof(*l));
}

int lp_rows_reserve(struct lp_rows *l, size_t n, struct lp_err *err)
{
    if (n <= l->cap) return LP_OK;
    size_t cap = l->cap ? l->cap : 4096;
    while (cap < n)
        cap *= 2;
    struct lp_row *r = realloc(l->r, cap * sizeof(*r));
    if (!r) LP_FAIL(err, LP_ENOMEM, "out of memory: %zu dataset rows (use --segment)", cap);
    l->r = r;
    l->cap = cap;
    return LP_OK;
}

void lp_rows_free(struct lp_rows *l)
{
    free(l->r);
    memset(l, 0, sizeof(*l));
}

static void fill_row(struct lp_row *w, uint64_t index, const int *digit, const struct lp_sweep *sw,
                     const struct lp_run *run, const struct lp_result *r)
{
    memset(w, 0, sizeof(*w));
    w->index = index;
    w->model = digit[LP_DIM_MODEL]; /* the index into models[] (lp_space_decode) */
    w->system = sw->values[LP_DIM_SYSTEM][digit[LP_DIM_SYSTEM]];
    w->gpus = sw->values[LP_DIM_GPUS][digit[LP_DIM_GPUS]];
    w->tp = run->par.tp;
    w->pp = run->par.pp;
    w->dp = run->par.dp;
    w->cp = run->par.cp;
    w->ep = run->par.ep;
    w->vp = run->par.vp;
    w->micro_batch = run->par.micro_batch;
    w->sequence_parallel = run->par.sequence_parallel;
    w->recompute = (int32_t)run->par.recompute;
    w->zero = run->par.zero;
    w->schedule = (int32_t)run->par.schedule;
    w->feasible = r->feasible;
    w->reason = (int32_t)r->reason;
    w->microbatches = r->microbatches;
    w->iteration_time_s = r->iteration_time_s;
    w->tokens_per_s = r->tokens_per_s;
    w->mfu = r->mfu;
    w->model_tflops_per_gpu = r->model_tflops_per_gpu;
    w->memory_per_gpu_gib = r->memory_per_gpu_bytes / GIB;
    w->compute_s = r->breakdown.compute_s;
    w->tp_comm_s = r->breakdown.tp_comm_s;
    w->pp_bubble_s = r->breakdown.pp_bubble_s;
    w->pp_comm_s = r->breakdown.pp_comm_s;
    w->dp_comm_exposed_s = r->breakdown.dp_comm_exposed_s;
    w->optimizer_s = r->breakdown.optimizer_s;
    w->zero3_gather_s = r->breakdown.zero3_gather_s;
    w->weights_gib = r->memory.weights_bytes / GIB;
    w->gradients_gib = r->memory.grads_bytes / GIB;
    w->optimizer_gib = r->memory.optimizer_bytes / GIB;
    w->activations_gib = r->memory.activations_bytes / GIB;
    w->temporary_gib = r->memory.temp_bytes / GIB;
    w->cost_per_iteration_usd = r->cost_per_iteration_usd;
    w->cost_usd = r->cost_usd;
    w->gpu_hours = r->gpu_hours;
    w->time_days = r->time_days;
    w->framework = sw->values[LP_DIM_FRAMEWORK][digit[LP_DIM_FRAMEWORK]];
    w->attention = sw->values[LP_DIM_ATTENTION][digit[LP_DIM_ATTENTION]];
    w->precision = sw->values[LP_DIM_PRECISION][digit[LP_DIM_PRECISION]];
    w->tokens_per_usd = r->tokens_per_usd;
    w->gpus_per_node = run->system.gpus_per_node;
    w->seq_len = run->model.seq_len;
    w->global_batch = (int32_t)run->train.global_batch;
    w->finetune = sw->values[LP_DIM_FINETUNE][digit[LP_DIM_FINETUNE]];
    w->price_per_gpu_hour_usd = run->system.price_per_gpu_hour_usd;
    if (!r->feasible) {
        /* no time, no cost: NaN, so that a mean or a minimum over the
         * column cannot take an infeasible row's figure for a real one */
        double *nan_cols[] = {&w->iteration_time_s,
                              &w->tokens_per_s,
                              &w->mfu,
                              &w->model_tflops_per_gpu,
                              &w->compute_s,
                              &w->tp_comm_s,
                              &w->pp_bubble_s,
                              &w->pp_comm_s,
                              &w->dp_comm_exposed_s,
                              &w->optimizer_s,
                              &w->cost_per_iteration_usd,
                              &w->cost_usd,
                              &w->gpu_hours,
                              &w->time_days,
                              &w->tokens_per_usd,
                              &w->zero3_gather_s};
        for (size_t k = 0; k < sizeof(nan_cols) / sizeof(nan_cols[0]); k++)
            *nan_cols[k] = NAN;
    }
}

/* --prune (issue #20): whether the configuration's bounds (lp_sim_bound)
 * prove that its exact result would change nothing this rank keeps: it
 * breaks a constraint (every constraint is monotone in the bounded figures:
 * a deadline, a budget or an MFU floor the bound misses, the exact result
 * misses too; GPUs and memory are exact), or no top-k, front or group would
 * want it (lp_results_wants is monotone). This rank's state then is the one
 * the exact solve would leave, so the reduction, a checkpoint and a resume
 * see the same results with pruning or without; only the counters differ.
 * *exact: lp_sim_bound gave the exact result (refused before timing). */
static bool pruned(struct lp_search *s, uint64_t index, struct lp_sim *sim,
                   const struct lp_run *run, struct lp_result *lb, bool *exact)
{
    const enum lp_bound b = lp_sim_bound(sim, run, lb);
    *exact = b == LP_BOUND_EXACT;
    if (b != LP_BOUND_LOWER) return false;
    /* the cost objective is cost_usd when positive (pareto.c): a bound
     * rounded to 0 would switch to the per-iteration cost */
    if (!(lb->cost_usd > 0) && lp_bill_budget_tokens(run) > 0) return false;
    if (s->sweep->objectives[LP_OBJ_LOSS])
        lb->loss = lp_loss_run((enum lp_loss_fit)s->sweep->loss_fit, run);
    uint64_t *cnt = s->counts.v;
    if (lp_constraints_check(&s->sweep->cons, run, lb) != LP_CONS_NONE) {
        cnt[LP_COUNT_PRUNED_CONSTRAINT]++;
    } else if (!lp_results_wants(&s->res, index, lb)) {
        cnt[LP_COUNT_PRUNED_RANKING]++;
    } else {
        return false;
    }
    cnt[LP_COUNT_PRUNED]++;
    cnt[LP_COUNT_DONE]++;
    return true;
}

int lp_eval_range(struct lp_search *s, uint64_t lo, uint64_t hi, uint64_t max_evals,
                  bool (*poll)(struct lp_search *s), uint64_t *reached, uint64_t *rows_out,
                  struct lp_err *err)
{
    const struct lp_space *sp = &s->space;
    uint64_t *cnt = s->counts.v;
    uint64_t i = lo, evals = 0, rows = 0;
    unsigned steps = 0;
    struct lp_run *run = &s->scratch_run;
    struct lp_result res;
    int rc = LP_OK;
    /* the digits of the valid configuration *run holds (lp_space_decode_next) */
    int held[LP_DIM_COUNT];
    bool holds = false;
    while (i < hi) {
        if (++steps % POLL_EVERY == 0 && poll && poll(s)) break;
        enum lp_reason why = LP_REASON_NONE;
        uint64_t span = 1;
        int digit[LP_DIM_COUNT];
        lp_space_digits(sp, i, digit);
        if (lp_space_decode_next(sp, i, digit, holds ? held : NULL, run, &why, &span) ==
            LP_SPACE_SKIP) {
            if (span > hi - i) span = hi - i;
            cnt[LP_COUNT_SKIPPED] += span;
            cnt[LP_COUNT_SKIPPED_BY_REASON + why] += span;
            cnt[LP_COUNT_DONE] += span;
            i += span;
            continue;
        }
        memcpy(held, digit, sizeof(held));
        holds = true;
        int sys = s->sweep->values[LP_DIM_SYSTEM][digit[LP_DIM_SYSTEM]];
        bool exact = false;
        if (s->opt.prune && pruned(s, i, s->sim[sys], run, &res, &exact)) {
            i++;
            if (max_evals && ++evals >= max_evals) break;
            continue;
        }
        if (s->opt.prune && !exact) /* from the bound's work: nothing computed twice */
            lp_sim_finish(s->sim[sys], run, &res);
        else if (!exact)
            lp_space_evaluate(s->sim[sys], run, &res);
        /* the loss objective (issue #17): the fit's loss on the budget */
        if (res.feasible && s->sweep->objectives[LP_OBJ_LOSS])
            res.loss = lp_loss_run((enum lp_loss_fit)s->sweep->loss_fit, run);
        cnt[LP_COUNT_DONE]++;
        cnt[LP_COUNT_EVALUATED]++;
        if (res.feasible)
            cnt[LP_COUNT_FEASIBLE]++;
        else
            cnt[LP_COUNT_INFEASIBLE_BY_REASON + res.reason]++;
        if (s->opt.dataset) {
            LP_TRY_GOTO(err, rc, lp_rows_reserve(&s->rows, s->rows.n + 1, err), out);
            fill_row(&s->rows.r[s->rows.n++], i, digit, s->sweep, run, &res);
            rows++;
        }
        /* constraints before any ranking: an excluded plan stays a feasible
         * dataset row but is never offered to the front, top-k or groups */
        const enum lp_constraint why_not =
            res.feasible ? lp_constraints_check(&s->sweep->cons, run, &res) : LP_CONS_NONE;
        if (why_not != LP_CONS_NONE)
            cnt[LP_COUNT_EXCLUDED_BY_CONSTRAINT + why_not]++;
        else
            LP_TRY_GOTO(err, rc, lp_results_offer(&s->res, i, run, &res, err), out);
        i++;
        if (max_evals && ++evals >= max_evals) break;
    }
out:
    *reached = i;
    *rows_out = rows;
    return rc;
}
