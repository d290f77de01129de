/* JOBS.json for `llmplan schedule` (docs/case-studies.md, section 4):
 *
 *   {"system": "dgx-a100-80gb", "cluster_gpus": 1024,
 *    (or "pools": [{"system": "dgx-a100-80gb", "gpus": 512},
 *                  {"system": "dgx-h100", "gpus": 256}]: a cluster of several
 *     partitions, each of one system; a job's "pool" names the one its own
 *     configuration runs in, the first by default)
 *    "allocations": [64, 128, 256, 512, 1024],
 *    "framework": ..., "training": {...}, "space": {...}, "profile": ...,
 *    "restart_minutes": 10,
 *    "jobs": [{"name": "...", "model": "gpt3-13b", "tokens": 2.6e11,
 *              "arrival_days": 0, "deadline_days": 20,
 *              "gpus": 256, "parallel": {"tp": 2, "pp": 1, ...}}, ...]}
 *
 * Each job becomes objects the rest of llmplan already knows, so their keys
 * are checked by the same code as everywhere else: its own configuration, a
 * run description (lp_parse_run) on its pool's system with dp = gpus / (tp
 * pp cp); and the spaces llmplan plans it in, a sweep description
 * (lp_sweep_parse) per pool over the allocations that fit it, with the
 * root's space. "profile" is one profile for every pool (a string) or
 * {"system name": profile} per pool, as in a sweep. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"
#include "llmplan/cluster.h"
#include "llmplan/io.h"

/* The pools' system objects as the file gives them (in the parsed root). */
struct pools {
    int n;
    const cJSON *sys[LP_CLUSTER_MAX_POOLS];
};

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

/* Parse the run description `doc` (built here) of job i's own configuration. */
static int parse_own(const struct lp_jctx *c, cJSON *doc, int i, struct lp_job_spec *js)
{
    char *text = cJSON_PrintUnformatted(doc);
    if (!text) LP_FAIL(c->err, LP_ENOMEM, "out of memory");
    char origin[LP_SWEEP_PATH_LEN + 64];
    snprintf(origin, sizeof(origin), "%s (jobs[%d], its own configuration)", c->file, i);
    int rc = lp_parse_run(text, origin, &js->own, c->err);
    free(text);
    if (rc < 0) lp_err_trace(c->err, __FILE__, __LINE__);
    return rc;
}

static int own_config(const struct lp_jctx *c, const cJSON *root, const struct pools *P,
                      const cJSON *job, int i, struct lp_job_spec *js)
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
    if (rc == LP_OK) rc = dup_into(c, run, "system", P->sys[js->pool]);
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
    if (rc == LP_OK) rc = parse_own(c, run, i, js);
    cJSON_Delete(run);
    if (rc < 0) lp_err_trace(c->err, __FILE__, __LINE__);
    js->has_own = rc == LP_OK;
    return rc;
}

/* The allocations that fit a pool of `gpus`, as a JSON list (NULL: none). */
static cJSON *fitting(const struct lp_jobs *J, int gpus)
{
    cJSON *l = NULL;
    for (int k = 0; k < J->nalloc && J->alloc[k] <= gpus; k++) {
        if (!l && !(l = cJSON_CreateArray())) return NULL;
        cJSON *v = cJSON_CreateNumber(J->alloc[k]);
        if (!v || !cJSON_AddItemToArray(l, v)) {
            cJSON_Delete(v);
            cJSON_Delete(l);
            return NULL;
        }
    }
    return l;
}

static int plan_space(const struct lp_jctx *c, const cJSON *root, const struct pools *P,
                      const struct lp_jobs *J, const cJSON *job, int i, int pool,
                      struct lp_job_spec *js)
{
    cJSON *gpus = fitting(J, J->pool[pool].gpus);
    if (!gpus) {
        if (J->alloc[0] <= J->pool[pool].gpus) LP_FAIL(c->err, LP_ENOMEM, "out of memory");
        return LP_OK; /* no allocation fits the pool: llmplan plans nothing there */
    }
    int rc = LP_OK;
    cJSON *sw = cJSON_CreateObject();
    if (!sw || !cJSON_AddItemToObject(sw, "gpus", gpus)) {
        cJSON_Delete(gpus);
        cJSON_Delete(sw);
        LP_FAIL(c->err, LP_ENOMEM, "out of memory");
    }
    if (!cJSON_AddStringToObject(sw, "name", js->name))
        rc = lp_err_set_at(c->err, LP_ENOMEM, __FILE__, __LINE__, "out of memory");
    if (rc == LP_OK) rc = dup_into(c, sw, "system", P->sys[pool]);
    static const char *const from_root[] = {"framework", "space", NULL};
    for (int k = 0; rc == LP_OK && from_root[k]; k++)
        rc = dup_into(c, sw, from_root[k], cJSON_GetObjectItemCaseSensitive(root, from_root[k]));
    /* the profile is chosen per pool (cmd_schedule); a map's other pools'
     * names would not be systems of this sweep */
    const cJSON *prof = cJSON_GetObjectItemCaseSensitive(root, "profile");
    if (rc == LP_OK && cJSON_IsString(prof)) rc = dup_into(c, sw, "profile", prof);
    if (rc == LP_OK) rc = dup_into(c, sw, "model", cJSON_GetObjectItemCaseSensitive(job, "model"));
    if (rc == LP_OK)
        rc = training_with_tokens(c, sw, cJSON_GetObjectItemCaseSensitive(root, "training"),
                                  js->tokens);
    if (rc == LP_OK) {
        char *text = cJSON_PrintUnformatted(sw);
        char origin[LP_SWEEP_PATH_LEN + 96];
        snprintf(origin, sizeof(origin), "%s (jobs[%d], the space llmplan plans it in, pool %d)",
                 c->file, i, pool);
        rc = text ? lp_sweep_parse(text, origin, &js->plan[pool], c->err)
                  : lp_err_set_at(c->err, LP_ENOMEM, __FILE__, __LINE__, "out of memory");
        free(text);
    }
    cJSON_Delete(sw);
    if (rc < 0) lp_err_trace(c->err, __FILE__, __LINE__);
    return rc;
}

static int parse_job(const struct lp_jctx *c, const cJSON *root, const struct pools *P,
                     const struct lp_jobs *J, const cJSON *job, int i, struct lp_job_spec *js)
{
    static const char *const keys[] = {"name",         "comment", "model",    "tokens",
                                       "arrival_days", "gpus",    "parallel", "deadline_days",
                                       "pool",         NULL};
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
    char pool[LP_NAME_LEN] = "";
    LP_TRY(err, lp_json_str(c, job, path, "pool", false, pool, sizeof(pool)));
    js->pool = -1;
    for (int p = 0; p < P->n && js->pool < 0; p++)
        if (!pool[0] || strcmp(pool, J->pool[p].system) == 0) js->pool = p;
    if (js->pool < 0) {
        char list[256] = "";
        size_t off = 0;
        for (int p = 0; p < P->n && off < sizeof(list); p++)
            off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", p ? ", " : "",
                                    J->pool[p].system);
        LP_FAIL(err, LP_EINVAL, "%s: key '%s.pool': expected a system of the pools (%s), got '%s'",
                c->file, path, list, pool);
    }
    if (cJSON_GetObjectItemCaseSensitive(job, "parallel"))
        LP_TRY(err, own_config(c, root, P, job, i, js));
    for (int p = 0; p < P->n; p++)
        LP_TRY(err, plan_space(c, root, P, J, job, i, p, js));
    return LP_OK;
}

/* "system" + "cluster_gpus" (one pool) or "pools": [{system, gpus}, ...]. */
static int parse_pools(const struct lp_jctx *c, const cJSON *root, struct pools *P,
                       struct lp_jobs *J)
{
    struct lp_err *err = c->err;
    const cJSON *pools = cJSON_GetObjectItemCaseSensitive(root, "pools");
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(root, "system");
    if (pools && (sys || cJSON_GetObjectItemCaseSensitive(root, "cluster_gpus")))
        LP_FAIL(
            err, LP_EINVAL,
            "%s: key 'pools': expected either 'pools' or 'system' with 'cluster_gpus', not both",
            c->file);
    if (!pools) {
        if (!sys)
            LP_FAIL(err, LP_EINVAL,
                    "%s: missing key 'system': expected a system preset or object "
                    "(or 'pools')",
                    c->file);
        P->n = J->npools = 1;
        P->sys[0] = sys;
        LP_TRY(err, lp_json_int32(c, root, "", "cluster_gpus", true, 1, 1 << 24, &J->pool[0].gpus));
    } else {
        int n = cJSON_IsArray(pools) ? cJSON_GetArraySize(pools) : -1;
        if (n < 1 || n > LP_CLUSTER_MAX_POOLS)
            LP_FAIL(err, LP_EINVAL, "%s: key 'pools': expected a list of 1 to %d {system, gpus}",
                    c->file, LP_CLUSTER_MAX_POOLS);
        P->n = J->npools = n;
        for (int p = 0; p < n; p++) {
            static const char *const keys[] = {"system", "gpus", "comment", NULL};
            const cJSON *o = cJSON_GetArrayItem(pools, p);
            char path[32];
            snprintf(path, sizeof(path), "pools[%d]", p);
            if (!cJSON_IsObject(o))
                LP_FAIL(err, LP_EINVAL, "%s: key '%s': expected an object {system, gpus}", c->file,
                        path);
            LP_TRY(err, lp_json_check_keys(c, o, path, keys));
            P->sys[p] = cJSON_GetObjectItemCaseSensitive(o, "system");
            if (!P->sys[p])
                LP_FAIL(err, LP_EINVAL,
                        "%s: missing key '%s.system': expected a system preset or "
                        "object",
                        c->file, path);
            LP_TRY(err, lp_json_int32(c, o, path, "gpus", true, 1, 1 << 24, &J->pool[p].gpus));
        }
    }
    J->cluster_gpus = 0;
    for (int p = 0; p < P->n; p++) {
        char path[32];
        snprintf(path, sizeof(path), pools ? "pools[%d].system" : "system", p);
        LP_TRY(err, lp_json_system(c, P->sys[p], path, &J->pool[p].sys));
        snprintf(J->pool[p].system, sizeof(J->pool[p].system), "%s", J->pool[p].sys.name);
        for (int q = 0; q < p; q++)
            if (strcmp(J->pool[q].system, J->pool[p].system) == 0)
                LP_FAIL(err, LP_EINVAL,
                        "%s: key 'pools[%d].system': '%s' is pool %d's too; a "
                        "pool is named by its system",
                        c->file, p, J->pool[p].system, q);
        J->cluster_gpus += J->pool[p].gpus;
    }
    return LP_OK;
}

static int parse_root(const struct lp_jctx *c, const cJSON *root, struct lp_jobs *J)
{
    static const char *const keys[] = {"name",        "comment",         "system",   "cluster_gpus",
                                       "allocations", "framework",       "training", "space",
                                       "profile",     "restart_minutes", "jobs",     "pools",
                                       NULL};
    struct lp_err *err = c->err;
    LP_TRY(err, lp_json_check_keys(c, root, "", keys));
    LP_TRY(err, lp_json_str(c, root, "", "name", false, J->name, sizeof(J->name)));
    struct pools P = {0};
    LP_TRY(err, parse_pools(c, root, &P, J));
    const cJSON *prof = cJSON_GetObjectItemCaseSensitive(root, "profile");
    if (cJSON_IsObject(prof)) { /* {"system name": profile}: each pool's system's own */
        for (const cJSON *it = prof->child; it; it = it->next) {
            int p = 0;
            while (p < J->npools && strcmp(J->pool[p].system, it->string) != 0)
                p++;
            if (p == J->npools || !cJSON_IsString(it) ||
                strlen(it->valuestring) >= sizeof(J->pool[p].sys.profile))
                LP_FAIL(err, LP_EINVAL,
                        "%s: key 'profile.%s': expected a pool's system name and a profile (a "
                        "file, synth or roofline) of at most %zu characters",
                        c->file, it->string, sizeof(J->pool[0].sys.profile) - 1);
            snprintf(J->pool[p].sys.profile, sizeof(J->pool[p].sys.profile), "%s", it->valuestring);
        }
    } else {
        LP_TRY(err, lp_json_str(c, root, "", "profile", false, J->profile, sizeof(J->profile)));
    }
    int largest = 0;
    for (int p = 0; p < J->npools; p++)
        if (J->pool[p].gpus > largest) largest = J->pool[p].gpus;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "allocations");
    int na = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
    if (na < 1 || na > LP_CLUSTER_MAX_ALLOC)
        LP_FAIL(err, LP_EINVAL,
                "%s: key 'allocations': expected a list of 1 to %d ascending GPU counts", c->file,
                LP_CLUSTER_MAX_ALLOC);
    for (int k = 0; k < na; k++) {
        const cJSON *v = cJSON_GetArrayItem(a, k);
        double x = cJSON_IsNumber(v) ? v->valuedouble : -1.0;
        if (!(x >= 1 && x <= largest && x == floor(x)) || (k > 0 && (int)x <= J->alloc[k - 1]))
            LP_FAIL(err, LP_EINVAL,
                    "%s: key 'allocations[%d]': expected an integer GPU count above the previous "
                    "one and at most the largest pool's (%d)",
                    c->file, k, largest);
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
        LP_TRY(err, parse_job(c, root, &P, J, cJSON_GetArrayItem(jobs, i), i, &J->job[i]));
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
        for (int p = 0; p < LP_CLUSTER_MAX_POOLS; p++)
            lp_sweep_destroy(&(*j)->job[i].plan[p]);
    free((*j)->job);
    free(*j);
    *j = NULL;
}
