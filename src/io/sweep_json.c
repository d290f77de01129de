/* Sweep descriptions (`llmplan search SWEEP.json`; docs/search.md).
 *
 * A sweep is a run description whose "parallel" block is replaced by a
 * "space" of values per dimension and whose GPU count is a list. Every error
 * is one line naming the file, the key and what was expected; unknown keys
 * are refused. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"
#include "llmplan/io.h"
#include "llmplan/loss.h"
#include "llmplan/search.h"
#include "llmplan/shapes.h"

/* A growing list of the values of one dimension, with duplicate and size
 * checks that name the key. */
struct vlist {
    int n;
    int *v;
    int max; /* capacity; 0 = LP_SWEEP_MAX_VALUES */
};

static int vlist_push(const struct lp_jctx *c, const char *kp, struct vlist *l, int x)
{
    for (int i = 0; i < l->n; i++)
        if (l->v[i] == x)
            LP_FAIL(c->err, LP_EINVAL, "%s: key '%s': expected distinct values, got %d twice",
                    c->file, kp, x);
    const int max = l->max ? l->max : LP_SWEEP_MAX_VALUES;
    if (l->n >= max)
        LP_FAIL(c->err, LP_EINVAL, "%s: key '%s': expected at most %d values", c->file, kp, max);
    l->v[l->n++] = x;
    return LP_OK;
}

static void pow2_upto(struct vlist *l, long long limit)
{
    l->n = 0;
    for (long long x = 1; x <= limit && l->n < LP_SWEEP_MAX_VALUES; x *= 2)
        l->v[l->n++] = (int)x;
    if (l->n == 0) l->v[l->n++] = 1;
}

static int int_item(const struct lp_jctx *c, const char *kp, const cJSON *it, int min, int max,
                    int *out)
{
    /* range first: casting a double outside long long's range (or NaN) is
     * undefined (C17 6.3.1.4) */
    if (!cJSON_IsNumber(it) || !(it->valuedouble >= min && it->valuedouble <= max) ||
        it->valuedouble != (double)(long long)it->valuedouble)
        LP_FAIL(c->err, LP_EINVAL, "%s: key '%s': expected integers in [%d, %d]", c->file, kp, min,
                max);
    *out = (int)it->valuedouble;
    return LP_OK;
}

/* {min, max, step}: step is an integer (add) or "xN" (multiply by N >= 2). */
static int int_range(const struct lp_jctx *c, const char *kp, const cJSON *o, int min, int max,
                     struct vlist *l)
{
    static const char *const keys[] = {"min", "max", "step", NULL};
    struct lp_err *err = c->err;
    LP_TRY(err, lp_json_check_keys(c, o, kp, keys));
    int lo = 0, hi = 0, add = 1, mul = 0;
    LP_TRY(err, lp_json_int32(c, o, kp, "min", true, min, max, &lo));
    LP_TRY(err, lp_json_int32(c, o, kp, "max", true, min, max, &hi));
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "step");
    if (cJSON_IsString(st)) {
        char *end = NULL;
        const char *s = st->valuestring;
        long f = (s[0] == 'x' || s[0] == '*') ? strtol(s + 1, &end, 10) : 0;
        if (f < 2 || f > 1024 || !end || *end != '\0')
            LP_FAIL(err, LP_EINVAL,
                    "%s: key '%s.step': expected a positive integer or \"xN\" (N >= 2), got "
                    "\"%.32s\"",
                    c->file, kp, s);
        mul = (int)f;
    } else if (st) {
        LP_TRY(err, lp_json_int32(c, o, kp, "step", true, 1, INT_MAX, &add));
    }
    if (hi < lo)
        LP_FAIL(err, LP_EINVAL, "%s: key '%s.max': expected >= min (%d), got %d", c->file, kp, lo,
                hi);
    l->n = 0;
    for (long long x = lo; x <= hi; x = mul ? x * mul : x + add) {
        if (mul && x == 0) {
            LP_TRY(err, vlist_push(c, kp, l, 0));
            break;
        }
        LP_TRY(err, vlist_push(c, kp, l, (int)x));
    }
    return LP_OK;
}

/* An integer dimension: N | [N, ...] | {min,max,step} | "auto" (*is_auto). */
static int int_values(const struct lp_jctx *c, const cJSON *v, const char *kp, int min, int max,
                      bool allow_auto, struct vlist *l, bool *is_auto)
{
    l->n = 0;
    if (is_auto) *is_auto = false;
    if (cJSON_IsString(v) && allow_auto && !strcmp(v->valuestring, "auto")) {
        *is_auto = true;
        return LP_OK;
    }
    if (cJSON_IsNumber(v)) {
        int x = 0;
        LP_TRY(c->err, int_item(c, kp, v, min, max, &x));
        return vlist_push(c, kp, l, x);
    }
    if (cJSON_IsArray(v)) {
        for (const cJSON *it = v->child; it; it = it->next) {
            int x = 0;
            LP_TRY(c->err, int_item(c, kp, it, min, max, &x));
            LP_TRY(c->err, vlist_push(c, kp, l, x));
        }
        return LP_OK;
    }
    if (cJSON_IsObject(v)) return int_range(c, kp, v, min, max, l);
    LP_FAIL(c->err, LP_EINVAL,
            "%s: key '%s': expected an integer, a list of integers, {min, max, step}%s", c->file,
            kp, allow_auto ? " or \"auto\"" : "");
}

/* An enum dimension: "name" | ["name", ...] | "auto" (every value). */
static int enum_values(const struct lp_jctx *c, const cJSON *v, const char *kp,
                       const char *const *names, int count, struct vlist *l)
{
    char expected[256];
    size_t off = 0;
    for (int i = 0; i < count; i++)
        off += (size_t)snprintf(expected + off, sizeof(expected) - off, "\"%s\", ", names[i]);
    snprintf(expected + off, sizeof(expected) - off, "a list of them or \"auto\"");
    l->n = 0;
    if (cJSON_IsString(v) && !strcmp(v->valuestring, "auto")) {
        for (int i = 0; i < count; i++)
            l->v[l->n++] = i;
        return LP_OK;
    }
    const cJSON *first = cJSON_IsArray(v) ? v->child : v;
    for (const cJSON *it = first; it; it = cJSON_IsArray(v) ? it->next : NULL) {
        int idx = -1;
        for (int i = 0; cJSON_IsString(it) && i < count; i++)
            if (!strcmp(it->valuestring, names[i])) idx = i;
        if (idx < 0) LP_FAIL(c->err, LP_EINVAL, "%s: key '%s': expected %s", c->file, kp, expected);
        LP_TRY(c->err, vlist_push(c, kp, l, idx));
    }
    return LP_OK;
}

static int bool_values(const struct lp_jctx *c, const cJSON *v, const char *kp, struct vlist *l)
{
    l->n = 0;
    if (cJSON_IsString(v) && !strcmp(v->valuestring, "auto")) {
        l->v[l->n++] = 0;
        l->v[l->n++] = 1;
        return LP_OK;
    }
    const cJSON *first = cJSON_IsArray(v) ? v->child : v;
    for (const cJSON *it = first; it; it = cJSON_IsArray(v) ? it->next : NULL) {
        if (!cJSON_IsBool(it))
            LP_FAIL(c->err, LP_EINVAL,
                    "%s: key '%s': expected true, false, a list of them or \"auto\"", c->file, kp);
        LP_TRY(c->err, vlist_push(c, kp, l, cJSON_IsTrue(it) ? 1 : 0));
    }
    return LP_OK;
}

static void item_path(const cJSON *v, const char *key, int i, char *kp, size_t len)
{
    if (cJSON_IsArray(v))
        snprintf(kp, len, "%s[%d]", key, i);
    else
        snprintf(kp, len, "%s", key);
}

/* sweep.h5 names every model in one fixed-width string attribute, which
 * HDF5's default (compact) attribute storage caps at 64 KiB */
#define MODEL_NAMES_BYTES 60000

/* The models: presets, inline models and generated shapes ({"generator":
 * ...}, shapes_json.c), at most LP_SWEEP_MAX_MODELS in all. The model
 * dimension's digit is the index into models[] (values[LP_DIM_MODEL] keeps
 * the identity for the first LP_SWEEP_MAX_VALUES). */
static int load_models(const struct lp_jctx *c, const cJSON *v, const char *key, int n,
                       struct lp_sweep *sw)
{
    long total = 0;
    int i = 0;
    char kp[256];
    for (const cJSON *it = cJSON_IsArray(v) ? v->child : v; it;
         it = cJSON_IsArray(v) ? it->next : NULL, i++) {
        int k = 1;
        item_path(v, key, i, kp, sizeof(kp));
        if (lp_json_is_generator(it)) LP_TRY(c->err, lp_json_generator(c, it, kp, NULL, 0, &k));
        total += k;
        if (total > LP_SWEEP_MAX_MODELS)
            LP_FAIL(c->err, LP_EINVAL,
                    "%s: key '%s': expected at most %d models in all (generated shapes "
                    "included), got more than that",
                    c->file, key, LP_SWEEP_MAX_MODELS);
    }
    sw->models = calloc((size_t)total, sizeof(struct lp_model));
    if (!sw->models) LP_FAIL(c->err, LP_ENOMEM, "out of memory (%ld models)", total);
    int m = 0;
    size_t longest = 0;
    i = 0;
    for (const cJSON *it = cJSON_IsArray(v) ? v->child : v; it && i < n;
         it = cJSON_IsArray(v) ? it->next : NULL, i++) {
        item_path(v, key, i, kp, sizeof(kp));
        int k = 1;
        if (lp_json_is_generator(it))
            LP_TRY(c->err, lp_json_generator(c, it, kp, &sw->models[m], (int)(total - m), &k));
        else
            LP_TRY(c->err, lp_json_model(c, it, kp, &sw->models[m]));
        m += k;
    }
    for (int j = 0; j < m; j++) {
        if (j < LP_SWEEP_MAX_VALUES) sw->values[LP_DIM_MODEL][j] = j;
        size_t len = strlen(sw->models[j].name) + 1;
        if (len > longest) longest = len;
    }
    if ((size_t)m * longest > MODEL_NAMES_BYTES)
        LP_FAIL(c->err, LP_EINVAL,
                "%s: key '%s': %d models with names up to %zu characters do not fit sweep.h5's "
                "model_names attribute (%d bytes); use fewer models or shorter names",
                c->file, key, m, longest - 1, MODEL_NAMES_BYTES);
    sw->nvalues[LP_DIM_MODEL] = m;
    return LP_OK;
}

/* "model" / "models" (or "system" / "systems"): one item or a list. */
static int load_list(const struct lp_jctx *c, const cJSON *root, const char *one, const char *many,
                     bool is_model, struct lp_sweep *sw)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, one);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(root, many);
    if (a && b)
        LP_FAIL(c->err, LP_EINVAL, "%s: key '%s': expected either '%s' or '%s', not both", c->file,
                many, one, many);
    const cJSON *v = a ? a : b;
    const char *key = a ? one : many;
    if (!v)
        LP_FAIL(c->err, LP_EINVAL,
                "%s: missing key '%s': expected a %s preset name, an inline "
                "object or a list of them",
                c->file, one, one);
    int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 1;
    if (n < 1 || n > LP_SWEEP_MAX_VALUES)
        LP_FAIL(c->err, LP_EINVAL, "%s: key '%s': expected 1 to %d entries, got %d", c->file, key,
                LP_SWEEP_MAX_VALUES, n);
    if (is_model) return load_models(c, v, key, n, sw);
    void *arr = calloc((size_t)n, sizeof(struct lp_system));
    if (!arr) LP_FAIL(c->err, LP_ENOMEM, "out of memory");
    sw->systems = arr;
    int i = 0;
    for (const cJSON *it = cJSON_IsArray(v) ? v->child : v; it;
         it = cJSON_IsArray(v) ? it->next : NULL, i++) {
        char kp[256];
        item_path(v, key, i, kp, sizeof(kp));
        LP_TRY(c->err, lp_json_system(c, it, kp, &sw->systems[i]));
        sw->values[LP_DIM_SYSTEM][i] = i;
    }
    sw->nvalues[LP_DIM_SYSTEM] = n;
    return LP_OK;
}

static int max_over(const struct lp_sweep *sw, int which)
{
    int best = 1;
    for (int i = 0; i < sw->nvalues[LP_DIM_MODEL]; i++) {
        const struct lp_model *m = &sw->models[i];
        int x = which == 0   ? m->heads
                : which == 1 ? m->layers
                : which == 2 ? m->seq_len / 2
                             : m->moe.experts;
        if (x > best) best = x;
    }
    return best;
}

static void store(struct lp_sweep *sw, enum lp_dim d, const struct vlist *l)
{
    sw->nvalues[d] = l->n;
    memcpy(sw->values[d], l->v, (size_t)l->n * sizeof(int));
}

/* The training settings as dimensions: "attention" (names, "auto") or
 * "flash_attention" (booleans: true = the training block's attention
 * kernel, or flash2), "precision" (names); absent: the training block's. */
static int parse_settings(const struct lp_jctx *c, const cJSON *space, const char *const *att_names,
                          struct lp_sweep *sw, struct vlist *l)
{
    struct lp_err *err = c->err;
    const cJSON *att = space ? cJSON_GetObjectItemCaseSensitive(space, "attention") : NULL;
    const cJSON *fa = space ? cJSON_GetObjectItemCaseSensitive(space, "flash_attention") : NULL;
    const int own = sw->train.flash_attention ? (int)sw->train.attention : LP_ATTENTION_COUNT;
    if (att && fa)
        LP_FAIL(err, LP_EINVAL,
                "%s: key 'space.flash_attention': expected either 'attention' or "
                "'flash_attention', not both",
                c->file);
    if (att) {
        LP_TRY(err, enum_values(c, att, "space.attention", att_names, LP_ATTENTION_COUNT + 1, l));
    } else if (fa) {
        LP_TRY(err, bool_values(c, fa, "space.flash_attention", l));
        const int flash = own == LP_ATTENTION_COUNT ? LP_ATTENTION_FLASH2 : own;
        for (int i = 0; i < l->n; i++)
            l->v[i] = l->v[i] ? flash : LP_ATTENTION_COUNT;
    } else {
        l->n = 1;
        l->v[0] = own;
    }
    store(sw, LP_DIM_ATTENTION, l);
    const cJSON *pr = space ? cJSON_GetObjectItemCaseSensitive(space, "precision") : NULL;
    if (pr) {
        const char *names[LP_PREC_COUNT];
        for (int i = 0; i < LP_PREC_COUNT; i++)
            names[i] = lp_prec_name((enum lp_prec)i);
        LP_TRY(err, enum_values(c, pr, "space.precision", names, LP_PREC_COUNT, l));
    } else {
        l->n = 1;
        l->v[0] = (int)sw->train.precision;
    }
    store(sw, LP_DIM_PRECISION, l);
    return LP_OK;
}

/* The name of a finetune value: "full", "lora-r16", "lora-r16-4bit",
 * "-moe" for MoE-only targets, "-d0.05" for a dropout. */
static void finetune_name(struct lp_sweep_finetune *f)
{
    if (f->lora_rank <= 0) {
        snprintf(f->name, sizeof(f->name), "full");
        return;
    }
    int off = snprintf(f->name, sizeof(f->name), "lora-r%d", f->lora_rank);
    if (f->lora_base_bits != 16)
        off += snprintf(f->name + off, sizeof(f->name) - (size_t)off, "-%dbit", f->lora_base_bits);
    if (f->lora_targets != LP_LORA_ALL)
        off += snprintf(f->name + off, sizeof(f->name) - (size_t)off, "-moe");
    if (f->lora_dropout > 0)
        snprintf(f->name + off, sizeof(f->name) - (size_t)off, "-d%g", f->lora_dropout);
}

/* The run settings as dimensions (issue #17): "seq_len" (overrides every
 * model's), "global_batch" (overrides the training block's), "finetune"
 * (a list of false = full training, or training.finetune objects; not with
 * training.finetune). Absent: one value 0 = the model's / training block's. */
static int parse_run_dims(const struct lp_jctx *c, const cJSON *space, struct lp_sweep *sw,
                          struct vlist *l)
{
    struct lp_err *err = c->err;
    const cJSON *v = space ? cJSON_GetObjectItemCaseSensitive(space, "seq_len") : NULL;
    l->n = 1;
    l->v[0] = 0;
    if (v) LP_TRY(err, int_values(c, v, "space.seq_len", 1, 1 << 24, false, l, NULL));
    store(sw, LP_DIM_SEQ_LEN, l);
    v = space ? cJSON_GetObjectItemCaseSensitive(space, "global_batch") : NULL;
    l->n = 1;
    l->v[0] = 0;
    if (v) LP_TRY(err, int_values(c, v, "space.global_batch", 1, INT_MAX, false, l, NULL));
    store(sw, LP_DIM_GLOBAL_BATCH, l);
    v = space ? cJSON_GetObjectItemCaseSensitive(space, "finetune") : NULL;
    if (!v) { /* one value: the training block's (named like the others) */
        sw->fts = calloc(1, sizeof(*sw->fts));
        if (!sw->fts) LP_FAIL(err, LP_ENOMEM, "out of memory");
        sw->fts->lora_rank = sw->train.lora_rank;
        sw->fts->lora_base_bits = sw->train.lora_base_bits;
        sw->fts->lora_targets = sw->train.lora_targets;
        sw->fts->lora_dropout = sw->train.lora_dropout;
        finetune_name(sw->fts);
        sw->nvalues[LP_DIM_FINETUNE] = 1;
        sw->values[LP_DIM_FINETUNE][0] = 0;
        return LP_OK;
    }
    if (sw->train.lora_rank > 0)
        LP_FAIL(err, LP_EINVAL,
                "%s: key 'space.finetune': expected either 'training.finetune' or "
                "'space.finetune', not both",
                c->file);
    const int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 1;
    if (n < 1 || n > LP_SWEEP_MAX_VALUES)
        LP_FAIL(err, LP_EINVAL, "%s: key 'space.finetune': expected 1 to %d values, got %d",
                c->file, LP_SWEEP_MAX_VALUES, n);
    sw->fts = calloc((size_t)n, sizeof(*sw->fts));
    if (!sw->fts) LP_FAIL(err, LP_ENOMEM, "out of memory");
    int i = 0;
    for (const cJSON *it = cJSON_IsArray(v) ? v->child : v; it;
         it = cJSON_IsArray(v) ? it->next : NULL, i++) {
        char kp[64];
        item_path(v, "space.finetune", i, kp, sizeof(kp));
        struct lp_training t = {.lora_base_bits = 16};
        if (cJSON_IsObject(it))
            LP_TRY(err, lp_json_finetune(c, it, kp, &t));
        else if (!cJSON_IsFalse(it) && !cJSON_IsNull(it))
            LP_FAIL(err, LP_EINVAL,
                    "%s: key '%s': expected false (full training) or a finetune object "
                    "{\"method\": \"lora\", \"rank\", ...}",
                    c->file, kp);
        struct lp_sweep_finetune *f = &sw->fts[i];
        f->lora_rank = t.lora_rank;
        f->lora_base_bits = t.lora_base_bits;
        f->lora_targets = t.lora_targets;
        f->lora_dropout = t.lora_dropout;
        finetune_name(f);
        for (int k = 0; k < i; k++)
            if (!strcmp(sw->fts[k].name, f->name) && sw->fts[k].lora_dropout == f->lora_dropout)
                LP_FAIL(err, LP_EINVAL, "%s: key '%s': expected distinct values, got %s twice",
                        c->file, kp, f->name);
        sw->values[LP_DIM_FINETUNE][i] = i;
    }
    sw->nvalues[LP_DIM_FINETUNE] = n;
    return LP_OK;
}

static int parse_space(const struct lp_jctx *c, const cJSON *space, struct lp_sweep *sw)
{
    static const char *const keys[] = {"tp",
                                       "pp",
                                       "dp",
                                       "cp",
                                       "ep",
                                       "vp",
                                       "micro_batch",
                                       "sequence_parallel",
                                       "recompute",
                                       "zero",
                                       "schedule",
                                       "attention",
                                       "flash_attention",
                                       "precision",
                                       "seq_len",
                                       "global_batch",
                                       "finetune",
                                       NULL};
    /* the order of enum lp_attention, then unfused (LP_ATTENTION_COUNT): config.c's names */
    const char *att_names[LP_ATTENTION_COUNT + 1];
    for (int i = 0; i < LP_ATTENTION_COUNT; i++)
        att_names[i] = lp_attention_name(true, (enum lp_attention)i);
    att_names[LP_ATTENTION_COUNT] = lp_attention_name(false, LP_ATTENTION_FLASH2);
    /* the one name table of each enum: config.c's */
    const char *rc_names[LP_RECOMPUTE_COUNT], *sched_names[LP_SCHED_COUNT];
    for (int i = 0; i < LP_RECOMPUTE_COUNT; i++)
        rc_names[i] = lp_recompute_name((enum lp_recompute)i);
    for (int i = 0; i < LP_SCHED_COUNT; i++)
        sched_names[i] = lp_schedule_name((enum lp_schedule)i);
    struct lp_err *err = c->err;
    int buf[LP_SWEEP_MAX_VALUES];
    struct vlist l = {0, buf, 0};
    char kp[64];
    if (space) LP_TRY(err, lp_json_check_keys(c, space, "space", keys));
    LP_TRY(err, parse_run_dims(c, space, sw, &l));

    int max_gpus = 1;
    for (int i = 0; i < sw->nvalues[LP_DIM_GPUS]; i++)
        if (sw->values[LP_DIM_GPUS][i] > max_gpus) max_gpus = sw->values[LP_DIM_GPUS][i];
    /* TP's "auto" stops at the scale-up domain (a node; an NVL72 rack), unless
     * a system lets TP span them */
    long long max_node = 1;
    for (int i = 0; i < sw->nvalues[LP_DIM_SYSTEM]; i++) {
        const long long g =
            sw->systems[i].tp_across_nodes ? max_gpus : lp_system_scale_up(&sw->systems[i]);
        if (g > max_node) max_node = g;
    }

    /* integer degrees; "auto" = powers of two up to the limit the models,
     * systems and GPU counts imply */
    struct {
        enum lp_dim d;
        const char *key;
        int min, max;
        long long auto_limit;
    } deg[] = {
        {LP_DIM_TP, "tp", 1, 1 << 20, 0}, {LP_DIM_PP, "pp", 1, 1 << 20, 0},
        {LP_DIM_CP, "cp", 1, 1 << 20, 0}, {LP_DIM_EP, "ep", 1, 1 << 20, 0},
        {LP_DIM_VP, "vp", 1, 1 << 10, 0}, {LP_DIM_MICRO_BATCH, "micro_batch", 1, 1 << 20, 0},
        {LP_DIM_ZERO, "zero", 0, 3, 0},
    };
    long long lim_tp = max_node < max_over(sw, 0) ? max_node : max_over(sw, 0);
    deg[0].auto_limit = lim_tp < max_gpus ? lim_tp : max_gpus;
    deg[1].auto_limit = max_over(sw, 1) < max_gpus ? max_over(sw, 1) : max_gpus;
    int half_seq = max_over(sw, 2);
    for (int i = 0; i < sw->nvalues[LP_DIM_SEQ_LEN]; i++)
        if (sw->values[LP_DIM_SEQ_LEN][i] / 2 > half_seq)
            half_seq = sw->values[LP_DIM_SEQ_LEN][i] / 2;
    deg[2].auto_limit = half_seq < max_gpus ? half_seq : max_gpus;
    deg[3].auto_limit = max_over(sw, 3) < max_gpus ? max_over(sw, 3) : max_gpus;
    deg[4].auto_limit = max_over(sw, 1) / 2;
    deg[5].auto_limit = sw->train.global_batch;
    for (int i = 0; i < sw->nvalues[LP_DIM_GLOBAL_BATCH]; i++)
        if (sw->values[LP_DIM_GLOBAL_BATCH][i] > deg[5].auto_limit)
            deg[5].auto_limit = sw->values[LP_DIM_GLOBAL_BATCH][i];
    for (size_t k = 0; k < sizeof(deg) / sizeof(deg[0]); k++) {
        const cJSON *v = space ? cJSON_GetObjectItemCaseSensitive(space, deg[k].key) : NULL;
        lp_jpath(kp, sizeof(kp), "space", deg[k].key);
        bool is_auto = false;
        if (!v) {
            l.n = 1;
            l.v[0] = deg[k].d == LP_DIM_ZERO ? 0 : 1;
        } else {
            LP_TRY(err, int_values(c, v, kp, deg[k].min, deg[k].max, true, &l, &is_auto));
        }
        if (is_auto) {
            if (deg[k].d == LP_DIM_ZERO) {
                for (l.n = 0; l.n < 4; l.n++)
                    l.v[l.n] = l.n;
            } else {
                pow2_upto(&l, deg[k].auto_limit);
            }
        }
        store(sw, deg[k].d, &l);
    }
    /* dp: derived from the GPU count; a list (or range) filters it */
    const cJSON *v = space ? cJSON_GetObjectItemCaseSensitive(space, "dp") : NULL;
    sw->ndp = 0;
    if (v) {
        bool is_auto = false;
        LP_TRY(err, int_values(c, v, "space.dp", 1, 1 << 24, true, &l, &is_auto));
        if (!is_auto) {
            sw->ndp = l.n;
            memcpy(sw->dp_values, l.v, (size_t)l.n * sizeof(int));
        }
    }
    v = space ? cJSON_GetObjectItemCaseSensitive(space, "sequence_parallel") : NULL;
    if (v) {
        LP_TRY(err, bool_values(c, v, "space.sequence_parallel", &l));
    } else {
        l.n = 1;
        l.v[0] = 0;
    }
    store(sw, LP_DIM_SP, &l);
    v = space ? cJSON_GetObjectItemCaseSensitive(space, "recompute") : NULL;
    if (v) {
        LP_TRY(err, enum_values(c, v, "space.recompute", rc_names, LP_RECOMPUTE_COUNT, &l));
    } else {
        l.n = 1;
        l.v[0] = LP_RECOMPUTE_NONE;
    }
    store(sw, LP_DIM_RECOMPUTE, &l);
    v = space ? cJSON_GetObjectItemCaseSensitive(space, "schedule") : NULL;
    if (v) {
        LP_TRY(err, enum_values(c, v, "space.schedule", sched_names, LP_SCHED_COUNT, &l));
    } else {
        /* default: 1f1b, and interleaved too when some vp > 1 */
        l.n = 1;
        l.v[0] = LP_SCHED_1F1B;
        for (int i = 0; i < sw->nvalues[LP_DIM_VP]; i++)
            if (sw->values[LP_DIM_VP][i] > 1) {
                l.v[l.n++] = LP_SCHED_INTERLEAVED;
                break;
            }
    }
    store(sw, LP_DIM_SCHEDULE, &l);
    LP_TRY(err, parse_settings(c, space, att_names, sw, &l));
    return LP_OK;
}

/* "profile": one for every system (a string), or {"system name": profile}
 * giving each listed system its own (lp_system.profile, as a system's own
 * "profile" key does); src/io/cost_model.c decides which applies. */
static int parse_profile(const struct lp_jctx *c, const cJSON *v, struct lp_sweep *sw)
{
    char ex[64];
    if (!v) return LP_OK;
    if (cJSON_IsString(v)) {
        if (strlen(v->valuestring) >= sizeof(sw->profile))
            LP_FAIL(c->err, LP_EINVAL, "%s: key 'profile': expected at most %zu characters",
                    c->file, sizeof(sw->profile) - 1);
        snprintf(sw->profile, sizeof(sw->profile), "%s", v->valuestring);
        return LP_OK;
    }
    if (!cJSON_IsObject(v))
        LP_FAIL(c->err, LP_EINVAL,
                "%s: key 'profile': expected a profile (a file, %s) or an object {system name: "
                "profile}",
                c->file, NAMES_FN(ex, lp_profile_builtin_name));
    for (const cJSON *it = v->child; it; it = it->next) {
        int k = 0;
        while (k < sw->nvalues[LP_DIM_SYSTEM] && strcmp(sw->systems[k].name, it->string) != 0)
            k++;
        if (k == sw->nvalues[LP_DIM_SYSTEM])
            LP_FAIL(c->err, LP_EINVAL,
                    "%s: key 'profile.%s': expected the name of a system of "
                    "the sweep",
                    c->file, it->string);
        if (!cJSON_IsString(it) || strlen(it->valuestring) >= sizeof(sw->systems[k].profile))
            LP_FAIL(c->err, LP_EINVAL,
                    "%s: key 'profile.%s': expected a profile file, %s (at most %zu characters)",
                    c->file, it->string, NAMES_FN(ex, lp_profile_builtin_name),
                    sizeof(sw->systems[k].profile) - 1);
        for (int i = 0; i < sw->nvalues[LP_DIM_SYSTEM]; i++)
            if (!strcmp(sw->systems[i].name, it->string))
                snprintf(sw->systems[i].profile, sizeof(sw->systems[i].profile), "%s",
                         it->valuestring);
    }
    return LP_OK;
}

/* "gpus": N | [N, ...] | {min, max, step} (step an integer, "xK" or
 * "node": every multiple of the smallest gpus_per_node of the sweep's
 * systems) | "auto" (every such node multiple up to constraints.max_gpus),
 * up to LP_SWEEP_MAX_GPU_VALUES values. */
static int gpu_values(const struct lp_jctx *c, const cJSON *v, const struct lp_sweep *sw,
                      struct vlist *l)
{
    int node = 0;
    for (int i = 0; i < sw->nvalues[LP_DIM_SYSTEM]; i++)
        if (node == 0 || sw->systems[i].gpus_per_node < node) node = sw->systems[i].gpus_per_node;
    const cJSON *st = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "step") : NULL;
    const bool is_auto = cJSON_IsString(v) && !strcmp(v->valuestring, "auto");
    if (!is_auto && !(cJSON_IsString(st) && !strcmp(st->valuestring, "node")))
        return int_values(c, v, "gpus", 1, 1 << 24, false, l, NULL);
    int lo = node, hi = sw->cons.max_gpus;
    if (is_auto) {
        if (hi <= 0)
            LP_FAIL(c->err, LP_EINVAL,
                    "%s: key 'gpus': \"auto\" (every multiple of a node) needs "
                    "constraints.max_gpus as its largest value",
                    c->file);
    } else {
        static const char *const keys[] = {"min", "max", "step", NULL};
        LP_TRY(c->err, lp_json_check_keys(c, v, "gpus", keys));
        LP_TRY(c->err, lp_json_int32(c, v, "gpus", "min", true, 1, 1 << 24, &lo));
        LP_TRY(c->err, lp_json_int32(c, v, "gpus", "max", true, 1, 1 << 24, &hi));
    }
    l->n = 0;
    for (long long x = ((long long)lo + node - 1) / node * node; x <= hi; x += node)
        LP_TRY(c->err, vlist_push(c, "gpus", l, (int)x));
    return LP_OK;
}

/* "framework": a name, an object with overrides, or a list of them (a
 * dimension of the space, LP_DIM_FRAMEWORK). */
static int parse_frameworks(const struct lp_jctx *c, const cJSON *v, struct lp_sweep *sw)
{
    const int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 1;
    if (n < 1 || n > LP_SWEEP_MAX_VALUES)
        LP_FAIL(c->err, LP_EINVAL, "%s: key 'framework': expected 1 to %d frameworks, got %d",
                c->file, LP_SWEEP_MAX_VALUES, n);
    sw->fws = calloc((size_t)n, sizeof(*sw->fws));
    if (!sw->fws) LP_FAIL(c->err, LP_ENOMEM, "out of memory");
    sw->fws[0] = sw->fw; /* the default when "framework" is absent */
    int i = 0;
    for (const cJSON *it = cJSON_IsArray(v) ? v->child : v; it;
         it = cJSON_IsArray(v) ? it->next : NULL, i++) {
        char kp[64];
        if (cJSON_IsArray(v))
            snprintf(kp, sizeof(kp), "framework[%d]", i);
        else
            snprintf(kp, sizeof(kp), "framework");
        LP_TRY(c->err, lp_json_framework(c, it, kp, &sw->fws[i]));
        for (int k = 0; k < i; k++)
            if (!memcmp(&sw->fws[k], &sw->fws[i], sizeof(sw->fws[i])))
                LP_FAIL(c->err, LP_EINVAL, "%s: key '%s': expected distinct frameworks", c->file,
                        kp);
    }
    for (int k = 0; k < n; k++)
        sw->values[LP_DIM_FRAMEWORK][k] = k;
    sw->nvalues[LP_DIM_FRAMEWORK] = n;
    sw->fw = sw->fws[0];
    return LP_OK;
}

/* "best_by": a dimension name or a list of them (at most LP_GROUP_MAX;
 * model, system, gpus, and every other dimension of the space). */
static int parse_best_by(const struct lp_jctx *c, const cJSON *v, struct lp_sweep *sw)
{
    sw->nbest_by = 0;
    if (!v) return LP_OK;
    const cJSON *first = cJSON_IsArray(v) ? v->child : v;
    for (const cJSON *it = first; it; it = cJSON_IsArray(v) ? it->next : NULL) {
        int d = -1;
        for (int k = 0; cJSON_IsString(it) && k < LP_DIM_COUNT; k++)
            if (!strcmp(it->valuestring, lp_dim_name((enum lp_dim)k))) d = k;
        if (d < 0 || sw->nbest_by == LP_GROUP_MAX)
            LP_FAIL(c->err, LP_EINVAL,
                    "%s: key 'best_by': expected up to %d dimension names (model, system, gpus, "
                    "tp, pp, ...; docs/search.md)",
                    c->file, LP_GROUP_MAX);
        for (int k = 0; k < sw->nbest_by; k++)
            if ((int)sw->best_by[k] == d)
                LP_FAIL(c->err, LP_EINVAL, "%s: key 'best_by': \"%s\" given twice", c->file,
                        it->valuestring);
        sw->best_by[sw->nbest_by++] = (enum lp_dim)d;
    }
    return LP_OK;
}

/* "objectives": the optional objectives ("tokens_per_usd", "loss"; time
 * and cost are always ranked) and "loss_fit" (the fit the loss objective
 * uses: include/llmplan/loss.h). The loss of Hoffmann et al.'s fit is that
 * of pre-training from scratch on the token budget, so it needs a budget and
 * is refused for fine-tuning (LoRA or a dataset of queries). */
/* Int-indexed views (NULL past the end) of the name tables the parsers
 * below read, for their messages: the objectives one may ask for, the loss
 * fits (src/core/loss.c). */
static const char *objective_opt_n(int i)
{
    return i >= 0 && i < LP_OBJ_COUNT - LP_OBJ_ALWAYS
               ? lp_objective_name((enum lp_objective)(LP_OBJ_ALWAYS + i))
               : NULL;
}
static const char *loss_fit_n(int i)
{
    return i >= 0 && i < LP_LOSS_FIT_COUNT ? lp_loss_fit_name((enum lp_loss_fit)i) : NULL;
}

static int parse_objectives(const struct lp_jctx *c, const cJSON *root, struct lp_sweep *sw)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "objectives");
    const cJSON *fit = cJSON_GetObjectItemCaseSensitive(root, "loss_fit");
    char names[128], expected[256], ex[128];
    snprintf(
        expected, sizeof(expected), "expected a list of %s (time and cost are always ranked)",
        lp_json_names(names, sizeof(names), (struct lp_name_src){.fn = objective_opt_n}, " and "));
    if (v && !cJSON_IsArray(v) && !cJSON_IsString(v))
        LP_FAIL(c->err, LP_EINVAL, "%s: key 'objectives': %s", c->file, expected);
    for (const cJSON *it = cJSON_IsArray(v) ? v->child : v; it;
         it = cJSON_IsArray(v) ? it->next : NULL) {
        int o = -1;
        for (int k = LP_OBJ_ALWAYS; cJSON_IsString(it) && k < LP_OBJ_COUNT; k++)
            if (!strcmp(it->valuestring, lp_objective_name((enum lp_objective)k))) o = k;
        if (o < 0) LP_FAIL(c->err, LP_EINVAL, "%s: key 'objectives': %s", c->file, expected);
        if (sw->objectives[o])
            LP_FAIL(c->err, LP_EINVAL, "%s: key 'objectives': \"%s\" given twice", c->file,
                    it->valuestring);
        sw->objectives[o] = true;
    }
    sw->loss_fit = LP_LOSS_HOFFMANN2022;
    if (fit) {
        enum lp_loss_fit f = LP_LOSS_HOFFMANN2022;
        if (!cJSON_IsString(fit) || lp_loss_fit_parse(fit->valuestring, &f) != LP_OK)
            LP_FAIL(c->err, LP_EINVAL, "%s: key 'loss_fit': expected %s", c->file,
                    NAMES_FN(ex, loss_fit_n));
        if (!sw->objectives[LP_OBJ_LOSS])
            LP_FAIL(c->err, LP_EINVAL,
                    "%s: key 'loss_fit': expected only with \"loss\" in 'objectives'", c->file);
        sw->loss_fit = (int)f;
    }
    if (!sw->objectives[LP_OBJ_LOSS]) return LP_OK;
    if (!(sw->train.tokens > 0) && !(sw->train.tokens_per_param > 0))
        LP_FAIL(c->err, LP_EINVAL,
                "%s: key 'objectives': \"loss\" expects a token budget (training.tokens or "
                "training.tokens_per_param): the loss fit is L(N, D) for D training tokens",
                c->file);
    bool lora = sw->train.lora_rank > 0;
    for (int i = 0; sw->fts && i < sw->nvalues[LP_DIM_FINETUNE]; i++)
        lora |= sw->fts[i].lora_rank > 0;
    if (lora || sw->train.dataset.nbins > 0)
        LP_FAIL(c->err, LP_EINVAL,
                "%s: key 'objectives': \"loss\" is the loss of pre-training from scratch "
                "(Hoffmann et al. 2022), not of fine-tuning (training.finetune / dataset)",
                c->file);
    return LP_OK;
}

static int parse_root(const struct lp_jctx *c, const cJSON *root, struct lp_sweep *sw)
{
    static const char *const keys[] = {
        "name",        "comment",  "model",      "models",   "system",          "systems", "gpus",
        "space",       "training", "framework",  "profile",  "top_k",           "output",  "prices",
        "constraints", "best_by",  "objectives", "loss_fit", "tp_across_nodes", NULL};
    struct lp_err *err = c->err;
    LP_TRY(err, lp_json_check_keys(c, root, "", keys));
    LP_TRY(err, lp_json_str(c, root, "", "name", false, sw->name, sizeof(sw->name)));
    LP_TRY(err, load_list(c, root, "model", "models", true, sw));
    LP_TRY(err, load_list(c, root, "system", "systems", false, sw));
    LP_TRY(err, lp_json_pick_price(c, root, sw->systems, sw->nvalues[LP_DIM_SYSTEM]));
    LP_TRY(err, lp_json_root_tp_across(c, root, sw->systems, sw->nvalues[LP_DIM_SYSTEM]));

    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "training");
    if (!v)
        LP_FAIL(err, LP_EINVAL,
                "%s: missing key 'training': expected an object {global_batch, "
                "precision, ...}",
                c->file);
    LP_TRY(err, lp_json_training(c, v, "training", &sw->train));
    LP_TRY(err, parse_frameworks(c, cJSON_GetObjectItemCaseSensitive(root, "framework"), sw));
    for (int f = 0; f < sw->nvalues[LP_DIM_FRAMEWORK]; f++)
        for (int m = 0; m < sw->nvalues[LP_DIM_MODEL]; m++) {
            char kp[64];
            if (sw->nvalues[LP_DIM_FRAMEWORK] > 1)
                snprintf(kp, sizeof(kp), "framework[%d]", f);
            else
                snprintf(kp, sizeof(kp), "framework");
            LP_TRY(err, lp_json_check_graph_scope(c, &sw->models[m], &sw->fws[f], kp));
        }

    v = cJSON_GetObjectItemCaseSensitive(root, "gpus");
    if (!v)
        LP_FAIL(err, LP_EINVAL,
                "%s: missing key 'gpus': expected a GPU count, a list of them or "
                "{min, max, step}",
                c->file);
    const char *ckeys[LP_CONS_COUNT]; /* the names of src/core/constraints.c */
    for (int i = 1; i < LP_CONS_COUNT; i++)
        ckeys[i - 1] = lp_constraint_name((enum lp_constraint)i);
    ckeys[LP_CONS_COUNT - 1] = NULL;
    const cJSON *cons = cJSON_GetObjectItemCaseSensitive(root, "constraints");
    if (cons) {
        struct lp_constraints *k = &sw->cons;
        LP_TRY(err, lp_json_check_keys(c, cons, "constraints", ckeys));
        LP_TRY(err, lp_json_int32(c, cons, "constraints", lp_constraint_name(LP_CONS_MAX_GPUS),
                                  false, 1, 1 << 24, &k->max_gpus));
        LP_TRY(err, lp_json_num(c, cons, "constraints", lp_constraint_name(LP_CONS_MAX_DAYS), false,
                                0, true, &k->max_days));
        LP_TRY(err, lp_json_num(c, cons, "constraints", lp_constraint_name(LP_CONS_MAX_COST), false,
                                0, true, &k->max_cost_usd));
        LP_TRY(err,
               lp_json_num(c, cons, "constraints", lp_constraint_name(LP_CONS_MIN_HEADROOM_GIB),
                           false, 0, true, &k->min_headroom_gib));
        LP_TRY(err,
               lp_json_num(c, cons, "constraints", lp_constraint_name(LP_CONS_MIN_HEADROOM_FRAC),
                           false, 0, true, &k->min_headroom_frac));
        LP_TRY(err, lp_json_num(c, cons, "constraints", lp_constraint_name(LP_CONS_MIN_MFU), false,
                                0, true, &k->min_mfu));
        if (k->min_headroom_frac >= 1 || k->min_mfu > 1)
            LP_FAIL(err, LP_EINVAL, "%s: key 'constraints.%s': expected a fraction below 1, got %g",
                    c->file, k->min_mfu > 1 ? "min_mfu" : "min_memory_headroom_fraction",
                    k->min_mfu > 1 ? k->min_mfu : k->min_headroom_frac);
        if ((k->max_days > 0 || k->max_cost_usd > 0) && !(sw->train.tokens > 0) &&
            !(sw->train.tokens_per_param > 0))
            LP_FAIL(err, LP_EINVAL,
                    "%s: key 'constraints.%s': expected a token budget to bound "
                    "(training.tokens or training.tokens_per_param)",
                    c->file, k->max_days > 0 ? "max_days" : "max_cost_usd");
    }
    int *buf = malloc(LP_SWEEP_MAX_GPU_VALUES * sizeof(int));
    if (!buf) LP_FAIL(err, LP_ENOMEM, "out of memory");
    struct vlist l = {0, buf, LP_SWEEP_MAX_GPU_VALUES};
    int rc = gpu_values(c, v, sw, &l);
    if (rc == LP_OK) store(sw, LP_DIM_GPUS, &l);
    free(buf);
    if (rc < 0) return rc;
    LP_TRY(err, parse_best_by(c, cJSON_GetObjectItemCaseSensitive(root, "best_by"), sw));

    LP_TRY(err, parse_space(c, cJSON_GetObjectItemCaseSensitive(root, "space"), sw));
    LP_TRY(err, parse_objectives(c, root, sw));

    LP_TRY(err, parse_profile(c, cJSON_GetObjectItemCaseSensitive(root, "profile"), sw));
    LP_TRY(err, lp_json_int32(c, root, "", "top_k", false, 1, 100000, &sw->top_k));
    LP_TRY(err, lp_json_str(c, root, "", "output", false, sw->output, sizeof(sw->output)));
    return LP_OK;
}

int lp_sweep_parse(const char *text, const char *origin, struct lp_sweep **out, struct lp_err *err)
{
    *out = NULL;
    /* the frameworks' fitted constants (data/calibration.json) */
    struct lp_calib cal;
    LP_TRY(err, lp_calib_load_default(&cal, err));
    struct lp_jctx c = {origin, err, &cal};
    struct lp_sweep *sw = calloc(1, sizeof(*sw));
    if (!sw) LP_FAIL(err, LP_ENOMEM, "out of memory");
    /* defaults of a run description (json_load.c run_defaults) */
    sw->train.precision = LP_BF16;
    sw->train.flash_attention = true;
    lp_json_framework_defaults(&c, LP_FW_MEGATRON, &sw->fw);
    sw->top_k = 10;
    cJSON *root = NULL;
    int rc = lp_json_parse(&c, text, &root);
    if (rc == LP_OK) rc = parse_root(&c, root, sw);
    cJSON_Delete(root);
    if (rc < 0) {
        lp_err_trace(err, __FILE__, __LINE__);
        lp_sweep_destroy(&sw);
        return rc;
    }
    if (!sw->name[0]) {
        const char *base = strrchr(origin, '/');
        snprintf(sw->name, sizeof(sw->name), "%s", base ? base + 1 : origin);
        char *dot = strrchr(sw->name, '.');
        if (dot && dot != sw->name) *dot = '\0';
    }
    *out = sw;
    return LP_OK;
}

int lp_sweep_load(const char *path, struct lp_sweep **out, struct lp_err *err)
{
    char *text = NULL;
    LP_TRY(err, lp_read_file(path, &text, NULL, err));
    int rc = lp_sweep_parse(text, path, out, err);
    free(text);
    if (rc < 0) lp_err_trace(err, __FILE__, __LINE__);
    return rc;
}

void lp_sweep_destroy(struct lp_sweep **sw)
{
    if (!sw || !*sw) return;
    free((*sw)->models);
    free((*sw)->systems);
    free((*sw)->fws);
    free((*sw)->fts);
    free(*sw);
    *sw = NULL;
}
