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

/* --prune (issue #20): whether the configuration's bound (lp_sim_bound)
 * settles it before any ranking: *exact when the bound is the exact result
 * (refused before timing); pruned (true) when the bound breaks a constraint
 * (every constraint is monotone in the bounded figures: a deadline, a budget
 * or an MFU floor the bound misses, the exact result misses too; GPUs and
 * memory are exact); otherwise *held when it is a lower bound the ranking
 * must decide (decide_held: no top-k, front or group wanting it proves the
 * exact result would change nothing this rank keeps, lp_results_wants being
 * monotone). This rank's state then is the one the exact solves would leave,
 * so the reduction, a checkpoint and a resume see the same results with
 * pruning or without; only the counters differ. */
static bool pruned(struct lp_search *s, uint64_t index, struct lp_sim *sim,
                   const struct lp_run *run, struct lp_result *lb, bool *exact, bool *held)
{
    const enum lp_bound b = lp_sim_bound(sim, run, lb);
    *exact = b == LP_BOUND_EXACT;
    *held = false;
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
    } else { /* wanted now: held, to be decided best first */
        *held = true;
        return false;
    }
    cnt[LP_COUNT_PRUNED]++;
    cnt[LP_COUNT_DONE]++;
    return true;
}

/* One evaluated configuration: counted, its row kept, offered. */
static int take(struct lp_search *s, uint64_t i, const int *digit, const struct lp_run *run,
                struct lp_result *res, uint64_t *rows, struct lp_err *err)
{
    uint64_t *cnt = s->counts.v;
    /* the loss objective (issue #17): the fit's loss on the budget */
    if (res->feasible && s->sweep->objectives[LP_OBJ_LOSS])
        res->loss = lp_loss_run((enum lp_loss_fit)s->sweep->loss_fit, run);
    cnt[LP_COUNT_DONE]++;
    cnt[LP_COUNT_EVALUATED]++;
    if (res->feasible)
        cnt[LP_COUNT_FEASIBLE]++;
    else
        cnt[LP_COUNT_INFEASIBLE_BY_REASON + res->reason]++;
    if (s->opt.dataset) {
        LP_TRY(err, lp_rows_reserve(&s->rows, s->rows.n + 1, err));
        fill_row(&s->rows.r[s->rows.n++], i, digit, s->sweep, run, res);
        (*rows)++;
    }
    /* constraints before any ranking: an excluded plan stays a feasible
     * dataset row but is never offered to the front, top-k or groups */
    const enum lp_constraint why_not =
        res->feasible ? lp_constraints_check(&s->sweep->cons, run, res) : LP_CONS_NONE;
    if (why_not != LP_CONS_NONE) {
        cnt[LP_COUNT_EXCLUDED_BY_CONSTRAINT + why_not]++;
        return LP_OK;
    }
    return lp_results_offer(&s->res, i, run, res, err);
}

/* The held bounds, best first (lp_bounds_order): pruned when nothing wants
 * them any more, else simulated (decoded again into bounds_run, so that the
 * walk's run and its digits stay as they were), then the batch emptied. */
static int decide_held(struct lp_search *s, uint64_t *rows, struct lp_err *err)
{
    struct lp_bounds *h = &s->bounds;
    if (h->n == 0) return LP_OK;
    lp_bounds_order(h, &s->res);
    uint64_t *cnt = s->counts.v;
    int rc = LP_OK;
    for (size_t j = 0; j < h->n && rc == LP_OK; j++) {
        const struct lp_bound_item *it = &h->v[h->order[j]];
        if (!lp_results_wants(&s->res, it->index, &it->lb)) {
            cnt[LP_COUNT_PRUNED_RANKING]++;
            cnt[LP_COUNT_PRUNED]++;
            cnt[LP_COUNT_DONE]++;
            continue;
        }
        int digit[LP_DIM_COUNT];
        enum lp_reason why = LP_REASON_NONE;
        uint64_t span = 1;
        lp_space_digits(&s->space, it->index, digit);
        if (lp_space_decode_next(&s->space, it->index, digit, NULL, &s->bounds_run, &why, &span) ==
            LP_SPACE_SKIP) {
            rc = lp_err_set_at(err, LP_EINVAL, __FILE__, __LINE__,
                               "configuration %llu bounded but no longer valid",
                               (unsigned long long)it->index);
            break;
        }
        const int sys = s->sweep->values[LP_DIM_SYSTEM][digit[LP_DIM_SYSTEM]];
        struct lp_result res;
        lp_space_evaluate(s->sim[sys], &s->bounds_run, &res);
        rc = take(s, it->index, digit, &s->bounds_run, &res, rows, err);
    }
    h->n = 0;
    return rc;
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
    /* --prune: every index below i is decided when the walk returns, so the
     * held bounds are decided at every exit (a poll's stop included) and
     * whenever the batch is full */
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
        bool exact = false, hold = false;
        if (s->opt.prune && pruned(s, i, s->sim[sys], run, &res, &exact, &hold)) {
            i++;
            if (max_evals && ++evals >= max_evals) break;
            continue;
        }
        if (hold) {
            const bool full = lp_bounds_push(&s->bounds, i, &res);
            if (full) LP_TRY_GOTO(err, rc, decide_held(s, &rows, err), out);
            i++;
            if (max_evals && ++evals >= max_evals) break;
            /* a full batch took a while: the other ranks' requests (rank
             * 0's poll) or a stop first */
            if (full && poll && poll(s)) break;
            continue;
        }
        if (s->opt.prune && !exact) /* from the bound's work: nothing computed twice */
            lp_sim_finish(s->sim[sys], run, &res);
        else if (!exact)
            lp_space_evaluate(s->sim[sys], run, &res);
        LP_TRY_GOTO(err, rc, take(s, i, digit, run, &res, &rows, err), out);
        i++;
        if (max_evals && ++evals >= max_evals) break;
    }
    if (rc == LP_OK) rc = decide_held(s, &rows, err);
out:
    if (rc != LP_OK) s->bounds.n = 0;
    *reached = i;
    *rows_out = rows;
    return rc;
}
