/* llmplan report DIR: one self-contained DIR/report.html from DIR/plans.json
 * and DIR/sweep.h5 (docs/report.md).
 *
 * C does the reading and the aggregation over every row of the dataset
 * (best time and cost per system and GPU count, best time per TP x PP cell,
 * a deterministic sample of the feasible points); the page's inline script
 * (data/report/report.html, the template) draws the figures as SVG from
 * that data and sorts the table. Nothing is fetched: the data is a JSON
 * object inside the page. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "llmplan/io.h"
#include "llmplan/search.h"
#include "sweep_table.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MAX_POINTS 4000 /* sampled feasible (time, cost) points drawn behind the front */
#define MAX_GROUPS 8192
#define PLACEHOLDER "/*LLMPLAN_REPORT_DATA*/null"

struct group {
    int a, b; /* (system, gpus) or (tp, pp) */
    double best_time_s, best_cost;
    uint64_t evaluated, feasible;
};

struct groups {
    struct group g[MAX_GROUPS];
    int n;
};

static struct group *group_of(struct groups *gs, int a, int b)
{
    for (int i = 0; i < gs->n; i++)
        if (gs->g[i].a == a && gs->g[i].b == b) return &gs->g[i];
    if (gs->n == MAX_GROUPS) return NULL;
    struct group *g = &gs->g[gs->n++];
    *g = (struct group){.a = a, .b = b, .best_time_s = INFINITY, .best_cost = INFINITY};
    return g;
}

static void group_add(struct group *g, bool feasible, double t, double c)
{
    if (!g) return;
    g->evaluated++;
    if (!feasible) return;
    g->feasible++;
    if (t < g->best_time_s) g->best_time_s = t;
    if (c < g->best_cost) g->best_cost = c;
}

/* The columns the report reads; every sweep.h5 has them (format 1 and 2). */
enum { K_SYSTEM, K_GPUS, K_TP, K_PP, K_FEASIBLE, K_TIME, K_COST, K_INDEX, K_COUNT };

struct agg {
    struct groups by_gpus, by_tppp;
    cJSON *points;
};

static int aggregate(struct lp_stab *t, const char *cost_col, uint64_t feasible_total,
                     struct agg *ag, struct lp_err *err)
{
    const char *names[K_COUNT] = {"system",           "gpus",   "tp",   "pp", "feasible",
                                  "iteration_time_s", cost_col, "index"};
    int col[K_COUNT];
    for (int k = 0; k < K_COUNT; k++)
        if ((col[k] = lp_stab_find(t, names[k])) < 0)
            LP_FAIL(err, LP_EFORMAT, "%s: no column /configs/%s", t->path, names[k]);
    /* every stride-th feasible row: at most MAX_POINTS, the same for any
     * rank count (rows are sorted by index) */
    const uint64_t stride =
        feasible_total > MAX_POINTS ? (feasible_total + MAX_POINTS - 1) / MAX_POINTS : 1;
    uint64_t seen = 0;
    for (uint64_t at = 0; at < t->rows;) {
        uint64_t n = 0;
        LP_TRY(err, lp_stab_read(t, at, &n, err));
        for (size_t i = 0; i < n; i++) {
            const bool ok = lp_stab_num(t, col[K_FEASIBLE], i) != 0;
            const double tm = lp_stab_num(t, col[K_TIME], i), c = lp_stab_num(t, col[K_COST], i);
            const int sys = (int)lp_stab_num(t, col[K_SYSTEM], i);
            const int gpus = (int)lp_stab_num(t, col[K_GPUS], i);
            group_add(group_of(&ag->by_gpus, sys, gpus), ok, tm, c);
            group_add(group_of(&ag->by_tppp, (int)lp_stab_num(t, col[K_TP], i),
                               (int)lp_stab_num(t, col[K_PP], i)),
                      ok, tm, c);
            if (ok && seen++ % stride == 0) {
                cJSON *p = cJSON_CreateArray();
                cJSON_AddItemToArray(p, cJSON_CreateNumber(tm));
                cJSON_AddItemToArray(p, cJSON_CreateNumber(c));
                cJSON_AddItemToArray(p, cJSON_CreateNumber(gpus));
                cJSON_AddItemToArray(p, cJSON_CreateNumber(sys));
                cJSON_AddItemToArray(p, cJSON_CreateNumber(lp_stab_num(t, col[K_INDEX], i)));
                cJSON_AddItemToArray(ag->points, p);
            }
        }
        at += n;
    }
    return LP_OK;
}

static cJSON *groups_json(const struct groups *gs, const char *ka, const char *kb)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < gs->n; i++) {
        const struct group *g = &gs->g[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, ka, g->a);
        cJSON_AddNumberToObject(o, kb, g->b);
        cJSON_AddNumberToObject(o, "evaluated", (double)g->evaluated);
        cJSON_AddNumberToObject(o, "feasible", (double)g->feasible);
        if (g->feasible) {
            cJSON_AddNumberToObject(o, "best_time_s", g->best_time_s);
            cJSON_AddNumberToObject(o, "best_cost", g->best_cost);
        }
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

/* The sweep's provenance (root attributes of sweep.h5) and each system's
 * name and GPU memory (from the sweep's own text, as the search read it). */
static int provenance(const struct lp_stab *t, cJSON *data, struct lp_err *err)
{
    static const char *const keys[] = {
        "llmplan_version", "format_version", "command_line", "sweep_file",
        "profile",         "sweep_hash",     "date",         "ranks",
        "space_size",      "rows",           "skipped",      "complete"};
    cJSON *pv = cJSON_AddObjectToObject(data, "provenance");
    for (size_t k = 0; pv && k < sizeof(keys) / sizeof(keys[0]); k++) {
        char *v = NULL;
        LP_TRY(err, lp_stab_attr_text(t, keys[k], &v, err));
        if (v) cJSON_AddStringToObject(pv, keys[k], v);
        free(v);
    }
    char *text = NULL;
    LP_TRY(err, lp_stab_attr_text(t, "sweep_json", &text, err));
    if (!text) LP_FAIL(err, LP_EFORMAT, "%s: no root attribute 'sweep_json'", t->path);
    char origin[4200];
    snprintf(origin, sizeof(origin), "%s (attribute sweep_json)", t->path);
    struct lp_sweep *sw = NULL;
    int rc = lp_sweep_parse(text, origin, &sw, err);
    free(text);
    if (rc < 0) return rc;
    cJSON *sys = cJSON_AddArrayToObject(data, "systems");
    for (int i = 0; sys && i < sw->nvalues[LP_DIM_SYSTEM]; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", sw->systems[i].name);
        cJSON_AddStringToObject(o, "gpu", sw->systems[i].gpu.name);
        cJSON_AddNumberToObject(o, "memory_gib", sw->systems[i].gpu.mem_bytes / GIB);
        cJSON_AddItemToArray(sys, o);
    }
    cJSON_AddStringToObject(data, "name", sw->name);
    lp_sweep_destroy(&sw);
    return LP_OK;
}

/* The page: the template with the data object in place of PLACEHOLDER
 * ("</" escaped so that no string ends the script element). */
static int write_page(const char *path, const char *tmpl, const char *json, struct lp_err *err)
{
    const char *at = strstr(tmpl, PLACEHOLDER);
    if (!at) LP_FAIL(err, LP_EFORMAT, "report template: no %s in it", PLACEHOLDER);
    struct lp_atomic out;
    LP_TRY(err, lp_atomic_open(path, &out, err));
    fwrite(tmpl, 1, (size_t)(at - tmpl), out.f);
    for (const char *p = json; *p; p++) {
        fputc(*p, out.f);
        if (p[0] == '<' && p[1] == '/') fputc('\\', out.f);
    }
    fputs(at + strlen(PLACEHOLDER), out.f);
    return lp_atomic_commit(&out, err);
}

int lp_report_write(const char *dir, const char *out_path, struct lp_err *err)
{
    char path[4096], h5[4096], tpath[4096];
    snprintf(path, sizeof(path), "%s/plans.json", dir);
    snprintf(h5, sizeof(h5), "%s/sweep.h5", dir);
    snprintf(tpath, sizeof(tpath), "%s/report/report.html", lp_data_dir());
    char *ptext = NULL, *tmpl = NULL, *json = NULL;
    cJSON *data = NULL;
    struct lp_stab *t = NULL;
    struct agg *ag = calloc(1, sizeof(*ag));
    if (!ag) LP_FAIL(err, LP_ENOMEM, "out of memory");
    int rc = LP_OK;
    LP_TRY_GOTO(err, rc, lp_read_file(path, &ptext, NULL, err), cleanup);
    LP_TRY_GOTO(err, rc, lp_read_file(tpath, &tmpl, NULL, err), cleanup);
    cJSON *plans = cJSON_Parse(ptext);
    const cJSON *stats = cJSON_GetObjectItemCaseSensitive(plans, "stats");
    const cJSON *top = cJSON_GetObjectItemCaseSensitive(plans, "top_time");
    const cJSON *oc = cJSON_GetObjectItemCaseSensitive(stats, "objective_cost");
    const cJSON *nf = cJSON_GetObjectItemCaseSensitive(stats, "feasible");
    data = cJSON_CreateObject();
    if (!plans || !cJSON_IsArray(top) || !cJSON_IsString(oc) || !cJSON_IsNumber(nf)) {
        cJSON_Delete(plans);
        rc = lp_err_set_at(err, LP_EFORMAT, __FILE__, __LINE__,
                           "%s: expected a plans.json of llmplan search (with top_time, "
                           "stats.objective_cost and stats.feasible)",
                           path);
        goto cleanup;
    }
    cJSON_AddItemToObject(data, "plans", plans);
    /* the cost the search ranked by (stats.objective_cost): the token
     * budget's cost, or one iteration's when the sweep has no budget */
    const bool budget = !strcmp(oc->valuestring, "training.cost_usd");
    const char *cost_col = budget ? "cost_usd" : "cost_per_iteration_usd";
    cJSON_AddStringToObject(data, "cost_column", cost_col);
    cJSON_AddStringToObject(data, "cost_label",
                            budget ? "cost of the token budget (USD)" : "cost per iteration (USD)");
    LP_TRY_GOTO(err, rc, lp_stab_open(h5, &t, err), cleanup);
    LP_TRY_GOTO(err, rc, provenance(t, data, err), cleanup);
    ag->points = cJSON_AddArrayToObject(data, "points");
    LP_TRY_GOTO(err, rc, aggregate(t, cost_col, (uint64_t)nf->valuedouble, ag, err), cleanup);
    cJSON_AddItemToObject(data, "by_gpus", groups_json(&ag->by_gpus, "system", "gpus"));
    cJSON_AddItemToObject(data, "by_tp_pp", groups_json(&ag->by_tppp, "tp", "pp"));
    json = cJSON_PrintUnformatted(data);
    if (!json) {
        rc = lp_err_set_at(err, LP_ENOMEM, __FILE__, __LINE__, "out of memory building the report");
        goto cleanup;
    }
    rc = write_page(out_path, tmpl, json, err);
cleanup:
    lp_stab_close(&t);
    cJSON_Delete(data);
    free(json);
    free(ptext);
    free(tmpl);
    free(ag);
    return rc;
}
