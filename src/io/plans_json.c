/* plans.json: the answer of a sweep (docs/design.md contract; docs/search.md).
 *
 * Every plan has the shape of `llmplan simulate --json` with its
 * configuration blocks (lp_result_to_json, with_config) plus "index", its
 * position in the sweep's configuration space. Apart from stats.wall_s,
 * stats.configs_per_s and stats.ranks, the file depends only on the sweep,
 * never on the rank count or on interruptions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "json_util.h"
#include "llmplan/io.h"
#include "llmplan/loss.h"
#include "llmplan/search.h"

static cJSON *plan_json(const struct lp_entry *e, const struct lp_trust *trust, struct lp_err *err)
{
    char *text = NULL;
    if (lp_result_to_json(&e->run, &e->res, true, &text, err) < 0) {
        lp_err_trace(err, __FILE__, __LINE__);
        return NULL;
    }
    cJSON *o = cJSON_Parse(text);
    free(text);
    if (!o) {
        lp_err_set_at(err, LP_ENOMEM, __FILE__, __LINE__, "cannot re-read a result's JSON");
        return NULL;
    }
    /* "index" first: the key a reader joins plans.json and sweep.h5 on */
    cJSON *p = cJSON_CreateObject();
    if (!p || !cJSON_AddNumberToObject(p, "index", (double)e->index)) {
        cJSON_Delete(p);
        cJSON_Delete(o);
        lp_err_set_at(err, LP_ENOMEM, __FILE__, __LINE__, "out of memory building JSON");
        return NULL;
    }
    while (o->child) {
        cJSON *it = cJSON_DetachItemViaPointer(o, o->child);
        cJSON_AddItemToObject(p, it->string, it);
    }
    cJSON_Delete(o);
    /* the loss objective's figure (a sweep's "objectives": "loss"), and how
     * far to trust the plan (data/trust_bands.json, scripts/validate) */
    cJSON *tr = trust ? lp_trust_json(trust, &e->run, e->res.gpus, e->res.iteration_time_s) : NULL;
    if ((e->res.loss > 0 && !cJSON_AddNumberToObject(p, "loss", e->res.loss)) ||
        (trust && (!tr || !cJSON_AddItemToObject(p, "trust", tr)))) {
        cJSON_Delete(p);
        lp_err_set_at(err, LP_ENOMEM, __FILE__, __LINE__, "out of memory building JSON");
        return NULL;
    }
    return p;
}

/* Plans the model cannot tell apart (issue #17, lp_entry_equivalent): a
 * sorted top list keeps the first of them (the one needing the least
 * memory, pareto.c's tie-break) and lists the others' indices in its
 * "equivalent_to"; the top holds top_k classes of them (pareto.c). */
/* The plans of a list; with `o` >= 0 (a sorted top list) equivalent plans
 * are collapsed into the first. */
static int add_list(cJSON *root, const char *key, const struct lp_entry *const *e, size_t n, int o,
                    const struct lp_trust *trust, struct lp_err *err)
{
    cJSON *a = cJSON_AddArrayToObject(root, key);
    if (!a) LP_FAIL(err, LP_ENOMEM, "out of memory building JSON");
    size_t first = 0; /* first kept plan of the current run of equal objective */
    cJSON *kept = NULL;
    for (size_t i = 0; i < n; i++) {
        if (o >= 0 && i > 0 &&
            lp_entry_objective(e[i], (enum lp_objective)o) !=
                lp_entry_objective(e[first], (enum lp_objective)o))
            first = i;
        size_t k = first;
        while (o >= 0 && k < i && !lp_entry_equivalent(e[k], e[i], (enum lp_objective)o))
            k++;
        if (o >= 0 && k < i) { /* e[k] was kept (the first of its class) */
            cJSON *p = cJSON_GetArrayItem(a, 0);
            for (; p; p = p->next)
                if ((uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(p, "index")) == e[k]->index)
                    break;
            cJSON *eq = p ? cJSON_GetObjectItem(p, "equivalent_to") : NULL;
            if (p && !eq) eq = cJSON_AddArrayToObject(p, "equivalent_to");
            if (!eq || !cJSON_AddItemToArray(eq, cJSON_CreateNumber((double)e[i]->index)))
                LP_FAIL(err, LP_ENOMEM, "out of memory building JSON");
            continue;
        }
        kept = plan_json(e[i], trust, err);
        if (!kept) return err ? err->code : LP_ENOMEM;
        cJSON_AddItemToArray(a, kept);
    }
    return LP_OK;
}

/* The first plan of a list (its equivalent_to included), or null. */
static int add_best(cJSON *root, const char *key, const cJSON *list, struct lp_err *err)
{
    const cJSON *first = cJSON_GetArrayItem(list, 0);
    cJSON *p = first ? cJSON_Duplicate(first, true) : cJSON_CreateNull();
    if (!p || !cJSON_AddItemToObject(root, key, p)) {
        cJSON_Delete(p);
        LP_FAIL(err, LP_ENOMEM, "out of memory building JSON");
    }
    return LP_OK;
}

/* The plans: the optimum and the top-k of each objective, the front. */
static int add_plans(cJSON *root, const struct lp_results *res, const struct lp_trust *trust,
                     struct lp_err *err)
{
    const struct lp_entry **top[LP_OBJ_COUNT] = {NULL};
    size_t n[LP_OBJ_COUNT] = {0};
    int rc = LP_OK;
    for (int o = 0; o < LP_OBJ_COUNT && rc == LP_OK; o++)
        rc = lp_results_top_sorted(res, (enum lp_objective)o, &top[o], &n[o], err);
    const size_t nfront = res->front.n > res->front_loss.n ? res->front.n : res->front_loss.n;
    const struct lp_entry **front = malloc((nfront ? nfront : 1) * sizeof(*front));
    if (rc == LP_OK && !front)
        rc = lp_err_set_at(err, LP_ENOMEM, __FILE__, __LINE__, "out of memory");
    for (size_t i = 0; rc == LP_OK && i < res->front.n; i++)
        front[i] = &res->front.e[i];
    /* the lists first (collapsed), then in the file's order: the optima
     * (the first of each top list), the front, the top lists */
    cJSON *lists = cJSON_CreateObject();
    if (rc == LP_OK && !lists)
        rc = lp_err_set_at(err, LP_ENOMEM, __FILE__, __LINE__, "out of memory");
    if (rc == LP_OK) rc = add_list(lists, "pareto", front, res->front.n, -1, trust, err);
    /* the loss a dollar buys: the front of (cost, loss), by cost */
    for (size_t i = 0; rc == LP_OK && res->active[LP_OBJ_LOSS] && i < res->front_loss.n; i++)
        front[i] = &res->front_loss.e[i];
    if (rc == LP_OK && res->active[LP_OBJ_LOSS])
        rc = add_list(lists, "pareto_loss", front, res->front_loss.n, -1, trust, err);
    if (rc == LP_OK)
        rc = add_list(lists, "top_time", top[LP_OBJ_TIME], n[LP_OBJ_TIME], LP_OBJ_TIME, trust, err);
    if (rc == LP_OK)
        rc = add_list(lists, "top_cost", top[LP_OBJ_COST], n[LP_OBJ_COST], LP_OBJ_COST, trust, err);
    /* the optional objectives asked for: top_tokens_per_usd, top_loss */
    for (int o = LP_OBJ_ALWAYS; o < LP_OBJ_COUNT && rc == LP_OK; o++) {
        char key[64];
        snprintf(key, sizeof(key), "top_%s", lp_objective_name((enum lp_objective)o));
        if (res->active[o]) rc = add_list(lists, key, top[o], n[o], o, trust, err);
    }
    if (rc == LP_OK)
        rc = add_best(root, "time_optimal", cJSON_GetObjectItem(lists, "top_time"), err);
    if (rc == LP_OK)
        rc = add_best(root, "cost_optimal", cJSON_GetObjectItem(lists, "top_cost"), err);
    if (rc == LP_OK && res->active[LP_OBJ_TOKENS_PER_USD])
        rc = add_best(root, "tokens_per_usd_optimal",
                      cJSON_GetObjectItem(lists, "top_tokens_per_usd"), err);
    if (rc == LP_OK && res->active[LP_OBJ_LOSS])
        rc = add_best(root, "loss_optimal", cJSON_GetObjectItem(lists, "top_loss"), err);
    while (rc == LP_OK && lists->child) {
        cJSON *it = cJSON_DetachItemViaPointer(lists, lists->child);
        cJSON_AddItemToObject(root, it->string, it);
    }
    cJSON_Delete(lists);
    free(front);
    for (int o = 0; o < LP_OBJ_COUNT; o++)
        free(top[o]);
    return rc;
}

/* The value of dimension d at `digit` as JSON: a name for models, systems
 * and the enum dimensions, a bool for sequence_parallel, else a number. */
static cJSON *dim_value(const struct lp_sweep *sw, enum lp_dim d, int digit)
{
    const int v = sw->values[d][digit];
    switch (d) {
    case LP_DIM_MODEL:
        return cJSON_CreateString(sw->models[v].name);
    case LP_DIM_SYSTEM:
        return cJSON_CreateString(sw->systems[v].name);
    case LP_DIM_RECOMPUTE:
        return cJSON_CreateString(lp_recompute_name((enum lp_recompute)v));
    case LP_DIM_SCHEDULE:
        return cJSON_CreateString(lp_schedule_name((enum lp_schedule)v));
    case LP_DIM_SP:
        return cJSON_CreateBool(v != 0);
    case LP_DIM_FRAMEWORK:
        return cJSON_CreateString(lp_framework_name(sw->fws[v].kind));
    case LP_DIM_ATTENTION:
        return cJSON_CreateString(lp_attention_name(v != LP_ATTENTION_COUNT,
                                                    (enum lp_attention)(v % LP_ATTENTION_COUNT)));
    case LP_DIM_PRECISION:
        return cJSON_CreateString(lp_prec_name((enum lp_prec)v));
    case LP_DIM_FINETUNE:
        return cJSON_CreateString(sw->fts ? sw->fts[v].name : "?");
    case LP_DIM_SEQ_LEN: /* 0: each model's own */
    case LP_DIM_GLOBAL_BATCH:
        return v > 0 ? cJSON_CreateNumber(v) : cJSON_CreateNull();
    default:
        return cJSON_CreateNumber(v);
    }
}

/* "best_by": the fastest and the cheapest plan of every group of the
 * sweep's best_by dimensions that has a feasible plan, in index order. */
static int add_groups(cJSON *root, const struct lp_results *res, const struct lp_sweep *sw,
                      const struct lp_trust *trust, struct lp_err *err)
{
    cJSON *bb = cJSON_AddObjectToObject(root, "best_by");
    cJSON *dims = bb ? cJSON_AddArrayToObject(bb, "dimensions") : NULL;
    cJSON *groups = bb ? cJSON_AddArrayToObject(bb, "groups") : NULL;
    if (!groups) LP_FAIL(err, LP_ENOMEM, "out of memory building JSON");
    for (int g = 0; g < sw->nbest_by; g++)
        if (!cJSON_AddItemToArray(dims, cJSON_CreateString(lp_dim_name(sw->best_by[g]))))
            LP_FAIL(err, LP_ENOMEM, "out of memory building JSON");
    for (size_t i = 0; i < res->ngroups; i++) {
        const struct lp_group *gr = &res->groups[i];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(groups, o))
            LP_FAIL(err, LP_ENOMEM, "out of memory building JSON");
        for (int g = 0; g < sw->nbest_by; g++) {
            cJSON *val = dim_value(sw, sw->best_by[g], lp_group_digit(res, gr->key, g));
            if (!val) LP_FAIL(err, LP_ENOMEM, "out of memory building JSON");
            cJSON_AddItemToObject(o, lp_dim_name(sw->best_by[g]), val);
        }
        for (int ob = 0; ob < LP_OBJ_COUNT; ob++) {
            if (!res->active[ob]) continue;
            cJSON *p = plan_json(&gr->best[ob], trust, err);
            if (!p) return err ? err->code : LP_ENOMEM;
            cJSON_AddItemToObject(o, lp_objective_best_name((enum lp_objective)ob), p);
        }
    }
    return LP_OK;
}

/* The constraints as given, and how many feasible plans each excluded. */
static int add_constraints(cJSON *st, const struct lp_constraints *k, const struct lp_counts *c,
                           struct lp_err *err)
{
    const double given[LP_CONS_COUNT] = {0,
                                         k->max_gpus,
                                         k->max_days,
                                         k->max_cost_usd,
                                         k->min_headroom_gib,
                                         k->min_headroom_frac,
                                         k->min_mfu};
    cJSON *cons = cJSON_AddObjectToObject(st, "constraints");
    cJSON *by = cJSON_AddObjectToObject(st, "excluded_by_constraint");
    if (!cons || !by) LP_FAIL(err, LP_ENOMEM, "out of memory");
    uint64_t total = 0;
    for (int i = 1; i < LP_CONS_COUNT; i++) {
        const char *name = lp_constraint_name((enum lp_constraint)i);
        const uint64_t n = c->v[LP_COUNT_EXCLUDED_BY_CONSTRAINT + i];
        total += n;
        if (given[i] > 0 && !cJSON_AddNumberToObject(cons, name, given[i]))
            LP_FAIL(err, LP_ENOMEM, "out of memory");
        if (n && !cJSON_AddNumberToObject(by, name, (double)n))
            LP_FAIL(err, LP_ENOMEM, "out of memory");
    }
    if (!cJSON_AddNumberToObject(st, "excluded", (double)total))
        LP_FAIL(err, LP_ENOMEM, "out of memory");
    return LP_OK;
}

static int add_reasons(cJSON *stats, const char *key, const uint64_t *by_reason, struct lp_err *err)
{
    cJSON *o = cJSON_AddObjectToObject(stats, key);
    if (!o) LP_FAIL(err, LP_ENOMEM, "out of memory");
    for (int r = 0; r < LP_REASON_COUNT; r++)
        if (by_reason[r] &&
            !cJSON_AddNumberToObject(o, lp_reason_name((enum lp_reason)r), (double)by_reason[r]))
            LP_FAIL(err, LP_ENOMEM, "out of memory");
    return LP_OK;
}

static int build(cJSON *root, const struct lp_results *res, const struct lp_counts *c,
                 const struct lp_plans_info *info, struct lp_err *err)
{
    LP_TRY(err, add_plans(root, res, info->trust, err));
    const struct lp_sweep *sw = info->sweep_desc;
    if (sw && sw->nbest_by > 0) LP_TRY(err, add_groups(root, res, sw, info->trust, err));
    cJSON *st = cJSON_AddObjectToObject(root, "stats");
    if (!st) LP_FAIL(err, LP_ENOMEM, "out of memory");
    uint64_t infeasible = c->v[LP_COUNT_EVALUATED] - c->v[LP_COUNT_FEASIBLE];
    double configs_per_s = info->wall_s > 0 ? (double)c->v[LP_COUNT_DONE] / info->wall_s : 0;
    /* what the simulator did (#20): evaluated configurations per second of
     * the sweep, all ranks together; configs_per_s counts indices walked */
    double simulated_per_s = info->wall_s > 0 ? (double)c->v[LP_COUNT_EVALUATED] / info->wall_s : 0;
    int bad = !cJSON_AddNumberToObject(st, "space_size", (double)info->space_size) ||
              !cJSON_AddNumberToObject(st, "evaluated", (double)c->v[LP_COUNT_EVALUATED]) ||
              !cJSON_AddNumberToObject(st, "feasible", (double)c->v[LP_COUNT_FEASIBLE]) ||
              !cJSON_AddNumberToObject(st, "infeasible", (double)infeasible);
    if (bad) LP_FAIL(err, LP_ENOMEM, "out of memory");
    LP_TRY(err, add_reasons(st, "infeasible_by_reason", &c->v[LP_COUNT_INFEASIBLE_BY_REASON], err));
    if (!cJSON_AddNumberToObject(st, "skipped", (double)c->v[LP_COUNT_SKIPPED]))
        LP_FAIL(err, LP_ENOMEM, "out of memory");
    LP_TRY(err, add_reasons(st, "skipped_by_reason", &c->v[LP_COUNT_SKIPPED_BY_REASON], err));
    if (info->pruning) { /* #20: space_size = evaluated + skipped + pruned */
        cJSON *by = NULL;
        bad = !cJSON_AddNumberToObject(st, "pruned", (double)c->v[LP_COUNT_PRUNED]) ||
              !(by = cJSON_AddObjectToObject(st, "pruned_by_reason")) ||
              !cJSON_AddNumberToObject(by, "ranking", (double)c->v[LP_COUNT_PRUNED_RANKING]) ||
              !cJSON_AddNumberToObject(by, "constraint", (double)c->v[LP_COUNT_PRUNED_CONSTRAINT]);
        if (bad) LP_FAIL(err, LP_ENOMEM, "out of memory");
    }
    if (sw && lp_constraints_any(&sw->cons)) LP_TRY(err, add_constraints(st, &sw->cons, c, err));
    bad = !cJSON_AddStringToObject(st, "objective_time", "iteration_time_s") ||
          !cJSON_AddStringToObject(st, "objective_cost",
                                   info->tokens > 0 ? "training.cost_usd"
                                                    : "cost_per_iteration_usd") ||
          (sw && sw->objectives[LP_OBJ_TOKENS_PER_USD] &&
           !cJSON_AddStringToObject(st, "objective_tokens_per_usd", "tokens_per_usd")) ||
          (sw && sw->objectives[LP_OBJ_LOSS] &&
           (!cJSON_AddStringToObject(st, "objective_loss", "loss") ||
            !cJSON_AddStringToObject(st, "loss_fit",
                                     lp_loss_fit_name((enum lp_loss_fit)sw->loss_fit)))) ||
          !cJSON_AddStringToObject(st, "sweep", info->sweep ? info->sweep : "") ||
          !cJSON_AddStringToObject(st, "profile", info->profile ? info->profile : "") ||
          (info->profile_mismatch && info->profile_mismatch[0] &&
           !cJSON_AddStringToObject(st, "profile_gpu_mismatch", info->profile_mismatch)) ||
          !cJSON_AddNumberToObject(st, "wall_s", info->wall_s) ||
          !cJSON_AddNumberToObject(st, "configs_per_s", configs_per_s) ||
          !cJSON_AddNumberToObject(st, "simulated_per_s", simulated_per_s) ||
          !cJSON_AddNumberToObject(st, "ranks", info->ranks);
    if (bad) LP_FAIL(err, LP_ENOMEM, "out of memory");
    return LP_OK;
}

int lp_plans_write(const char *path, const struct lp_results *res, const struct lp_counts *c,
                   const struct lp_plans_info *info, struct lp_err *err)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) LP_FAIL(err, LP_ENOMEM, "out of memory");
    int rc = build(root, res, c, info, err);
    char *text = NULL;
    if (rc == LP_OK) {
        text = cJSON_Print(root);
        if (!text) rc = lp_err_set_at(err, LP_ENOMEM, __FILE__, __LINE__, "out of memory");
    }
    cJSON_Delete(root);
    if (rc == LP_OK) {
        size_t n = strlen(text);
        text[n] = '\n'; /* cJSON leaves no final newline; the NUL is replaced */
        rc = lp_write_file_atomic(path, text, n + 1, err);
        if (rc < 0) lp_err_trace(err, __FILE__, __LINE__);
    }
    free(text);
    return rc;
}
