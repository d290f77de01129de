/* JOBS.json for `llmplan schedule` (docs/case-studies.md, section 4):
 *
 *   {"system": "dgx-a100-80gb", "cluster_gpus": 1024,
 *    "allocations": [64, 128, 256, 512, 1024],
 *    "framework": ..., "training": {...}, "space": {...}, "profile": ...,
 *    "restart_minutes": 10,
 *    "jobs": [{"name": "...", "model": "gpt3-13b", "tokens": 2.6e11,
 *              "arrival_days": 0, "deadline_days": 20,
 *              "gpus": 256, "parallel": {"tp": 2, "pp": 1, ...}}, ...]}
 *
 * Each job becomes two objects the rest of llmplan already knows, so their
 * keys are checked by the same code as everywhere else: its own
 * configuration, a run description (lp_parse_run) with dp = gpus / (tp pp
 * cp); and the space llmplan plans it in, a sweep description
 * (lp_sweep_parse) over the allocations with the root's space. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"
#include "llmplan/cluster.h"
#include "llmplan/io.h"

static int dup_into(const struct lp_jctx *c, cJSON *dst, const char *key, const cJSON *src)
{
    if (!src) return LP_OK;
    cJSON *d = cJSON_Duplicate(src, true);
    if (!d || !cJSON_AddItemToObject(dst, key, d)) {
        cJSON_Delete(d);
        LP_FAIL(c->err, LP_ENOMEM, "out of memory");
    }
    return LP_OK;
}

/* The root's training block with the job's token budget. */
static int training_with_tokens(const struct lp_jctx *c, cJSON *dst, const cJSON *training,
                                double tokens)
{
    LP_TRY(c->err, dup_into(c, dst, "training", training));
    cJSON *t = cJSON_GetObjectItemCaseSensitive(dst, "training");
    if (!cJSON_IsObject(t))
        LP_FAIL(c->err, LP_EINVAL, "%s: key 'training': expected an object {global_batch, ...}",
                c->file);
    cJSON_DeleteItemFromObjectCaseSensitive(t, "tokens");
    cJSON_DeleteItemFromObjectCaseSensitive(t, "tokens_per_param");
    if (!cJSON_AddNumberToObject(t, "tokens", tokens)) LP_FAIL(c->err, LP_ENOMEM, "out of memory");
    return LP_OK;
}

/* Parse `doc` (built here) with parse(), naming `what` of job i in messages. */
static int parse_built(const struct lp_jctx *c, cJSON *doc, int i, const char *what,
                       struct lp_job_spec *js)
{
    char *text = cJSON_PrintUnformatted(doc);
    if (!text) LP_FAIL(c->err, LP_ENOMEM, "out of memory");
    char origin[LP_SWEEP_PATH_LEN + 64];
    snprintf(origin, sizeof(origin), "%s (jobs[%d], %s)", c->file, i, what);
    int rc = strcmp(what, "its own configuration") == 0
                 ? lp_parse_run(text, origin, &js->own, c->err)
                 : lp_sweep_parse(text, origin, &js->plan, c->err);
    free(text);
    if (rc < 0) lp_err_trace(c->err, __FILE__, __LINE__);
    return rc;
}

static int own_config(const struct lp_jctx *c, const cJSON *root, const cJSON *job, int i,
                      struct lp_job_spec *js)
{
    char path[64];
    snprintf(path, sizeof(path), "jobs[%d].parallel", i);
    const cJSON *par = cJSON_GetObjectItemCaseSensitive(job, "parallel");
    if (!cJSON_IsObject(par))
        LP_FAIL(c->err, LP_EINVAL, "%s: key '%s': expected an object {tp, pp, ...}", c->file, path);
    if (js->gpus <= 0)
        LP_FAIL(c->err, LP_EINVAL, "%s: key 'jobs[%d].gpus': expected the GPU count of %s", c->file,
                i, path);
    int tp = 1, pp = 1, cp = 1, dp = 0;
    LP_TRY(c->err, lp_json_int32(c, par, path, "tp", false, 1, 1 << 24, &tp));
    LP_TRY(c->err, lp_json_int32(c, par, path, "pp", false, 1, 1 << 24, &pp));
    LP_TRY(c->err, lp_json_int32(c, par, path, "cp", false, 1, 1 << 24, &cp));
    LP_TRY(c->err, lp_json_int32(c, par, path, "dp", false, 1, 1 << 24, &dp));
    long long mp = (long long)tp * pp * cp;
    if (dp > 0 && dp * mp != js->gpus)
        LP_FAIL(c->err, LP_EINVAL,
                "%s: key 'jobs[%d].gpus': expected tp x pp x cp x dp = %lld (tp %d, pp %d, cp %d, "
                "dp %d), got %d",
                c->file, i, dp * mp, tp, pp, cp, dp, js->gpus);
    if (js->gpus % mp != 0)
        LP_FAIL(c->err, LP_EINVAL,
                "%s: key 'jobs[%d].gpus': expected a multiple of tp x pp x cp = %lld (tp %d, pp "
                "%d, cp %d), got %d",
                c->file, i, mp, tp, pp, cp, js->gpus);
    int rc = LP_OK;
    cJSON *run = cJSON_CreateObject();
    if (!run) LP_FAIL(c->err, LP_ENOMEM, "out of memory");
    rc = dup_into(c, run, "model", cJSON_GetObjectItemCaseSensitive(job, "model"));
    if (rc == LP_OK)
        rc = dup_into(c, run, "system", cJSON_GetObjectItemCaseSensitive(root, "system"));
    if (rc == LP_OK)
        rc = dup_into(c, run, "framework", cJSON_GetObjectItemCaseSensitive(root, "framework"));
    if (rc == LP_OK) rc = dup_into(c, run, "parallel", par);
    if (rc == LP_OK) {
        cJSON *p = cJSON_GetObjectItemCaseSensitive(run, "parallel");
        cJSON_DeleteItemFromObjectCaseSensitive(p, "dp");
        if (!cJSON_AddNumberToObject(p, "dp", (double)(js->gpus / mp)))
            rc = lp_err_set_at(c->err, LP_ENOMEM, __FILE__, __LINE__, "out of memory");
    }
    if (rc == LP_OK)
        rc = training_with_tokens(c, run, cJSON_GetObjectItemCaseSensitive(root, "training"),
                                  js->tokens);
    if (rc == LP_OK) rc = parse_built(c, run, i, "its own configuration", js);
    cJSON_Delete(run);
    if (rc < 0) lp_err_trace(c->err, __FILE__, __LINE__);
    js->has_own = rc == LP_OK;
    return rc;
}

static int plan_space(const struct lp_jctx *c, const cJSON *root, const cJSON *job, int i,
                      struct lp_job_spec *js)
{
    int rc = LP_OK;
    cJSON *sw = cJSON_CreateObject();
    if (!sw) LP_FAIL(c->err, LP_ENOMEM, "out of memory");
    if (!cJSON_AddStringToObject(sw, "name", js->name))
        rc = lp_err_set_at(c->err, LP_ENOMEM, __FILE__, __LINE__, "out of memory");
    static const char *const from_root[] = {"system", "framework", "space", "profile", NULL};
    for (int k = 0; rc == LP_OK && from_root[k]; k++)
        rc = dup_into(c, sw, from_root[k], cJSON_GetObjectItemCaseSensitive(root, from_root[k]));
    if (rc == LP_OK)
        rc = dup_into(c, sw, "gpus", cJSON_GetObjectItemCaseSensitive(root, "allocations"));
    if (rc == LP_OK) rc = dup_into(c, sw, "model", cJSON_GetObjectItemCaseSensitive(job, "model"));
    if (rc == LP_OK)
        rc = training_with_tokens(c, sw, cJSON_GetObjectItemCaseSensitive(root, "training"),
                                  js->tokens);
    if (rc == LP_OK) rc = parse_built(c, sw, i, "the space llmplan plans it in", js);
    cJSON_Delete(sw);
    if (rc < 0) lp_err_trace(c->err, __FILE__, __LINE__);
    return rc;
}

static int parse_job(const struct lp_jctx *c, const cJSON *root, const cJSON *job, int i,
                     struct lp_job_spec *js)
{
    static const char *const keys[] = {"name",     "comment",       "model",
                                       "tokens",   "arrival_days",  "gpus",
                                       "parallel", "deadline_days", NULL};
    char path[32];
    snprintf(path, sizeof(path), "jobs[%d]", i);
    struct lp_err *err = c->err;
    if (!cJSON_IsObject(job))
        LP_FAIL(err, LP_EINVAL, "%s: key '%s': expected an object {name, model, tokens, ...}",
                c->file, path);
    LP_TRY(err, lp_json_check_keys(c, job, path, keys));
    snprintf(js->name, sizeof(js->name), "job %d", i);
    LP_TRY(err, lp_json_str(c, job, path, "name", false, js->name, sizeof(js->name)));
    if (!cJSON_GetObjectItemCaseSensitive(job, "model"))
        LP_FAIL(err, LP_EINVAL, "%s: missing key '%s.model': expected a model preset or object",
                c->file, path);
    LP_TRY(err, lp_json_num(c, job, path, "tokens", true, 0.0, true, &js->tokens));
    double arrival_d = 0.0, deadline_d = -1.0;
    LP_TRY(err, lp_json_num(c, job, path, "arrival_days", false, 0.0, false, &arrival_d));
    if (cJSON_GetObjectItemCaseSensitive(job, "deadline_days"))
        LP_TRY(err, lp_json_num(c, job, path, "deadline_days", true, 0.0, true, &deadline_d));
    js->arrival_s = arrival_d * 86400.0;
    js->deadline_s = deadline_d >= 0.0 ? deadline_d * 86400.0 : -1.0;
    LP_TRY(err, lp_json_int32(c, job, path, "gpus", false, 1, 1 << 24, &js->gpus));
    if (cJSON_GetObjectItemCaseSensitive(job, "parallel"))
        LP_TRY(err, own_config(c, root, job, i, js));
    LP_TRY(err, plan_space(c, root, job, i, js));
    return LP_OK;
}

static int parse_root(const struct lp_jctx *c, const cJSON *root, struct lp_jobs *J)
{
    static const char *const keys[] = {"name",        "comment",         "system",   "cluster_gpus",
                                       "allocations", "framework",       "training", "space",
                                       "profile",     "restart_minutes", "jobs",     NULL};
    struct lp_err *err = c->err;
    LP_TRY(err, lp_json_check_keys(c, root, "", keys));
    LP_TRY(err, lp_json_str(c, root, "", "name", false, J->name, sizeof(J->name)));
    LP_TRY(err, lp_json_int32(c, root, "", "cluster_gpus", true, 1, 1 << 24, &J->cluster_gpus));
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "allocations");
    int na = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
    if (na < 1 || na > LP_CLUSTER_MAX_ALLOC)
        LP_FAIL(err, LP_EINVAL,
                "%s: key 'allocations': expected a list of 1 to %d ascending GPU counts", c->file,
                LP_CLUSTER_MAX_ALLOC);
    for (int k = 0; k < na; k++) {
        const cJSON *v = cJSON_GetArrayItem(a, k);
        double x = cJSON_IsNumber(v) ? v->valuedouble : -1.0;
        if (!(x >= 1 && x <= J->cluster_gpus && x == floor(x)) ||
            (k > 0 && (int)x <= J->alloc[k - 1]))
            LP_FAIL(err, LP_EINVAL,
                    "%s: key 'allocations[%d]': expected an integer GPU count above the previous "
                    "one and at most cluster_gpus (%d)",
                    c->file, k, J->cluster_gpus);
        J->alloc[k] = (int)x;
    }
    J->nalloc = na;
    double restart_min = 0.0;
    LP_TRY(err, lp_json_num(c, root, "", "restart_minutes", false, 0.0, false, &restart_min));
    J->restart_s = restart_min * 60.0;
    const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(root, "jobs");
    int nj = cJSON_IsArray(jobs) ? cJSON_GetArraySize(jobs) : -1;
    if (nj < 1 || nj > LP_JOBS_MAX)
        LP_FAIL(err, LP_EINVAL, "%s: key 'jobs': expected a list of 1 to %d jobs", c->file,
                LP_JOBS_MAX);
    J->job = calloc((size_t)nj, sizeof(*J->job));
    if (!J->job) LP_FAIL(err, LP_ENOMEM, "out of memory (%d jobs)", nj);
    J->njobs = nj;
    for (int i = 0; i < nj; i++)
        LP_TRY(err, parse_job(c, root, cJSON_GetArrayItem(jobs, i), i, &J->job[i]));
    return LP_OK;
}

int lp_jobs_parse(const char *text, const char *origin, struct lp_jobs **out, struct lp_err *err)
{
    struct lp_jctx c = {origin, err, NULL};
    *out = NULL;
    struct lp_jobs *J = calloc(1, sizeof(*J));
    if (!J) LP_FAIL(err, LP_ENOMEM, "out of memory");
    cJSON *root = NULL;
    int rc = lp_json_parse(&c, text, &root);
    if (rc == LP_OK) rc = parse_root(&c, root, J);
    cJSON_Delete(root);
    if (rc < 0) {
        lp_err_trace(err, __FILE__, __LINE__);
        lp_jobs_destroy(&J);
        return rc;
    }
    *out = J;
    return LP_OK;
}

int lp_jobs_load(const char *path, struct lp_jobs **out, struct lp_err *err)
{
    char *text = NULL;
    LP_TRY(err, lp_read_file(path, &text, NULL, err));
    int rc = lp_jobs_parse(text, path, out, err);
    free(text);
    if (rc < 0) lp_err_trace(err, __FILE__, __LINE__);
    return rc;
}

void lp_jobs_destroy(struct lp_jobs **j)
{
    if (!j || !*j) return;
    for (int i = 0; i < (*j)->njobs; i++)
        lp_sweep_destroy(&(*j)->job[i].plan);
    free((*j)->job);
    free(*j);
    *j = NULL;
}
