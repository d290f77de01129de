/* How far to trust a plan's figures (issue #17): the validation domain
 * nearest to it and that domain's error band, read from the file
 * `scripts/validate --bands` writes (data/trust_bands.json: per framework x
 * GPU, the rows validated, their GPU counts and the percentiles of the
 * signed iteration-time error). Nothing is fitted here: the band is what
 * validate measured on that stack. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"
#include "llmplan/io.h"

/* Fewer rows than this make a band no more than an anecdote: a plan of such
 * a domain is not "inside" it. */
#define MIN_ROWS 5

struct lp_trust_domain {
    char framework[32], gpu[LP_NAME_LEN];
    int rows, gpus_min, gpus_max;
    double p10, median, p90, mape, mape_heldout; /* percent; mape_heldout < 0: none */
    char sources[160];
};

struct lp_trust {
    int n;
    struct lp_trust_domain *d;
    char file[512];
};

static int load_domain(const struct lp_jctx *c, const cJSON *o, const char *kp,
                       struct lp_trust_domain *d)
{
    struct lp_err *err = c->err;
    char ep[300];
    LP_TRY(err, lp_json_str(c, o, kp, "framework", true, d->framework, sizeof(d->framework)));
    LP_TRY(err, lp_json_str(c, o, kp, "gpu", true, d->gpu, sizeof(d->gpu)));
    LP_TRY(err, lp_json_int32(c, o, kp, "rows", true, 1, 1 << 30, &d->rows));
    LP_TRY(err, lp_json_int32(c, o, kp, "gpus_min", true, 1, 1 << 24, &d->gpus_min));
    LP_TRY(err, lp_json_int32(c, o, kp, "gpus_max", true, d->gpus_min, 1 << 24, &d->gpus_max));
    LP_TRY(err, lp_json_num(c, o, kp, "mape_pct", true, 0, false, &d->mape));
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(o, "mape_pct_heldout");
    d->mape_heldout = -1;
    if (cJSON_IsNumber(h)) d->mape_heldout = h->valuedouble;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "signed_error_pct");
    lp_jpath(ep, sizeof(ep), kp, "signed_error_pct");
    if (!cJSON_IsObject(e))
        LP_FAIL(err, LP_EINVAL, "%s: key '%s': expected an object {p10, median, p90}", c->file, ep);
    d->p10 = d->median = d->p90 = -100;
    LP_TRY(err, lp_json_num(c, e, ep, "p10", true, -100, false, &d->p10));
    LP_TRY(err, lp_json_num(c, e, ep, "median", true, -100, false, &d->median));
    LP_TRY(err, lp_json_num(c, e, ep, "p90", true, -100, false, &d->p90));
    if (!(d->p10 <= d->median && d->median <= d->p90) || d->p10 <= -100)
        LP_FAIL(err, LP_EINVAL, "%s: key '%s': expected -100 < p10 <= median <= p90", c->file, ep);
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "sources");
    size_t off = 0;
    for (const cJSON *it = cJSON_IsArray(s) ? s->child : NULL; it; it = it->next)
        if (cJSON_IsString(it) && off < sizeof(d->sources))
            off += (size_t)snprintf(d->sources + off, sizeof(d->sources) - off, "%s%s",
                                    off ? ", " : "", it->valuestring);
    return LP_OK;
}

int lp_trust_load(const char *path, struct lp_trust **out, struct lp_err *err)
{
    *out = NULL;
    char *text = NULL;
    LP_TRY(err, lp_read_file(path, &text, NULL, err));
    struct lp_jctx c = {path, err, NULL};
    cJSON *root = NULL;
    int rc = lp_json_parse(&c, text, &root);
    free(text);
    if (rc < 0) return rc;
    struct lp_trust *t = calloc(1, sizeof(*t));
    const cJSON *doms = cJSON_GetObjectItemCaseSensitive(root, "domains");
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!t) {
        rc = lp_err_set_at(err, LP_ENOMEM, __FILE__, __LINE__, "out of memory");
    } else if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "llmplan-trust-bands") != 0 ||
               !cJSON_IsArray(doms)) {
        rc = lp_err_set_at(err, LP_EINVAL, __FILE__, __LINE__,
                           "%s: expected \"format\": \"llmplan-trust-bands\" and a list "
                           "'domains' (scripts/validate --bands)",
                           path);
    } else {
        t->n = cJSON_GetArraySize(doms);
        t->d = calloc(t->n > 0 ? (size_t)t->n : 1, sizeof(*t->d));
        if (!t->d) rc = lp_err_set_at(err, LP_ENOMEM, __FILE__, __LINE__, "out of memory");
        int i = 0;
        for (const cJSON *it = doms->child; it && rc == LP_OK; it = it->next, i++) {
            char kp[32];
            snprintf(kp, sizeof(kp), "domains[%d]", i);
            rc = load_domain(&c, it, kp, &t->d[i]);
        }
        snprintf(t->file, sizeof(t->file), "%s", path);
    }
    cJSON_Delete(root);
    if (rc < 0) {
        lp_trust_destroy(&t);
        lp_err_trace(err, __FILE__, __LINE__);
        return rc;
    }
    *out = t;
    return LP_OK;
}

void lp_trust_destroy(struct lp_trust **t)
{
    if (!t || !*t) return;
    free((*t)->d);
    free(*t);
    *t = NULL;
}

/* The domain of (framework, gpu); else the best-validated domain of the
 * same GPU (the kernels are the GPU's), else of the same framework; NULL
 * when neither was validated. *exact says which. */
static const struct lp_trust_domain *nearest(const struct lp_trust *t, const char *fw,
                                             const char *gpu, bool *exact)
{
    const struct lp_trust_domain *same_gpu = NULL, *same_fw = NULL;
    *exact = false;
    for (int i = 0; i < t->n; i++) {
        const struct lp_trust_domain *d = &t->d[i];
        const bool g = !strcmp(d->gpu, gpu), f = !strcmp(d->framework, fw);
        if (g && f) {
            *exact = true;
            return d;
        }
        if (g && (!same_gpu || d->rows > same_gpu->rows)) same_gpu = d;
        if (f && (!same_fw || d->rows > same_fw->rows)) same_fw = d;
    }
    return same_gpu ? same_gpu : same_fw;
}

cJSON *lp_trust_json(const struct lp_trust *t, const struct lp_run *run, int gpus,
                     double iteration_time_s)
{
    const char *fw = lp_framework_name(run->fw.kind), *gpu = run->system.gpu.name;
    bool exact = false;
    const struct lp_trust_domain *d = nearest(t, fw, gpu, &exact);
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    char note[1024];
    bool inside = false;
    if (!d) {
        snprintf(note, sizeof(note),
                 "no validated stack near this plan: neither %s nor %s is in %s (scripts/validate)",
                 fw, gpu, t->file);
    } else if (!exact) {
        snprintf(note, sizeof(note),
                 "%s on %s was not validated; nearest: %s on %s (%d rows), a band of another stack",
                 fw, gpu, d->framework, d->gpu, d->rows);
    } else if (gpus < d->gpus_min || gpus > d->gpus_max) {
        snprintf(note, sizeof(note), "%d GPUs: outside the validated GPU counts (%d-%d)", gpus,
                 d->gpus_min, d->gpus_max);
    } else if (lp_tp_spans_domains(&run->system, run->par.tp)) {
        /* no validated row has TP wider than the NVLink domain: the rule
         * refused it until tp_across_nodes */
        snprintf(note, sizeof(note),
                 "tp %d across scale-up domains of %d GPUs (tp_across_nodes): outside every "
                 "validated row",
                 run->par.tp, lp_system_scale_up(&run->system));
    } else if (d->rows < MIN_ROWS) {
        snprintf(note, sizeof(note), "only %d validated row%s on this stack", d->rows,
                 d->rows == 1 ? "" : "s");
    } else {
        inside = true;
        snprintf(note, sizeof(note), "inside the validated domain");
    }
    int bad = !cJSON_AddBoolToObject(o, "inside", inside);
    if (d) {
        cJSON *dom = cJSON_AddObjectToObject(o, "domain");
        bad |= !dom || !cJSON_AddStringToObject(dom, "framework", d->framework) ||
               !cJSON_AddStringToObject(dom, "gpu", d->gpu) ||
               !cJSON_AddNumberToObject(dom, "rows", d->rows) ||
               !cJSON_AddNumberToObject(dom, "gpus_min", d->gpus_min) ||
               !cJSON_AddNumberToObject(dom, "gpus_max", d->gpus_max) ||
               !cJSON_AddStringToObject(dom, "sources", d->sources);
        /* signed error = (predicted - measured) / measured: the measured
         * time lies in predicted / (1 + e) for e in [p10, p90] */
        cJSON *band = cJSON_AddArrayToObject(o, "error_band_pct");
        bad |= !band || !cJSON_AddItemToArray(band, cJSON_CreateNumber(d->p10)) ||
               !cJSON_AddItemToArray(band, cJSON_CreateNumber(d->p90));
        cJSON *tb = cJSON_AddArrayToObject(o, "iteration_time_band_s");
        bad |=
            !tb ||
            !cJSON_AddItemToArray(tb, cJSON_CreateNumber(iteration_time_s / (1 + d->p90 / 100))) ||
            !cJSON_AddItemToArray(tb, cJSON_CreateNumber(iteration_time_s / (1 + d->p10 / 100)));
        bad |= !cJSON_AddNumberToObject(o, "median_error_pct", d->median) ||
               !cJSON_AddNumberToObject(o, "mape_pct", d->mape) ||
               (d->mape_heldout >= 0 &&
                !cJSON_AddNumberToObject(o, "mape_pct_heldout", d->mape_heldout));
    } else {
        bad |= !cJSON_AddNullToObject(o, "domain");
    }
    bad |= !cJSON_AddStringToObject(o, "note", note);
    if (bad) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

int lp_trust_load_default(struct lp_trust **out, struct lp_err *err)
{
    char path[1024];
    *out = NULL;
    snprintf(path, sizeof(path), "%s/trust_bands.json", lp_data_dir());
    FILE *f = fopen(path, "r");
    if (!f) return LP_OK; /* no bands shipped: results carry no "trust" */
    fclose(f);
    return lp_trust_load(path, out, err);
}

char *lp_trust_json_text(const struct lp_trust *t, const struct lp_run *run, int gpus,
                         double iteration_time_s)
{
    cJSON *o = lp_trust_json(t, run, gpus, iteration_time_s);
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return text;
}

void lp_trust_line(const struct lp_trust *t, const struct lp_run *run, int gpus,
                   double iteration_time_s, char *buf, size_t n)
{
    cJSON *o = lp_trust_json(t, run, gpus, iteration_time_s);
    const cJSON *note = cJSON_GetObjectItemCaseSensitive(o, "note");
    const cJSON *band = cJSON_GetObjectItemCaseSensitive(o, "error_band_pct");
    const cJSON *tb = cJSON_GetObjectItemCaseSensitive(o, "iteration_time_band_s");
    const char *txt = cJSON_IsString(note) ? note->valuestring : "unknown";
    const cJSON *dom = cJSON_GetObjectItemCaseSensitive(o, "domain");
    const cJSON *dfw = cJSON_GetObjectItemCaseSensitive(dom, "framework");
    const cJSON *dgpu = cJSON_GetObjectItemCaseSensitive(dom, "gpu");
    const cJSON *drows = cJSON_GetObjectItemCaseSensitive(dom, "rows");
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "inside")) && cJSON_IsString(dfw) &&
        cJSON_IsString(dgpu) && cJSON_IsNumber(drows))
        snprintf(buf, n, "%s (%s on %s, %d rows)", txt, dfw->valuestring, dgpu->valuestring,
                 drows->valueint);
    else
        snprintf(buf, n, "%s", txt);
    char head[512];
    snprintf(head, sizeof(head), "%s", buf);
    if (cJSON_GetArraySize(band) == 2 && cJSON_GetArraySize(tb) == 2)
        snprintf(buf, n,
                 "%s; validated error p10..p90 %+.1f..%+.1f%%: the measured time would lie in "
                 "%.4g-%.4g s",
                 head, cJSON_GetArrayItem(band, 0)->valuedouble,
                 cJSON_GetArrayItem(band, 1)->valuedouble, cJSON_GetArrayItem(tb, 0)->valuedouble,
                 cJSON_GetArrayItem(tb, 1)->valuedouble);
    cJSON_Delete(o);
}
