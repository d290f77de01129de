/* JSON presets and run descriptions (docs/design.md, "The contract").
 *
 * Every error is one line: "FILE: key 'a.b': expected ..., got ...". Unknown
 * keys are refused by name. Presets are data/<kind>s/<name>.json. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json_util.h"
#include "llmplan/io.h"
#include "llmplan/rules.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

const char *lp_data_dir(void)
{
    const char *env = getenv("LLMPLAN_DATA");
    if (env && env[0]) return env;
    struct stat st;
    /* the source tree's data/ (a build tree), else the installed copy */
    if (stat(LLMPLAN_DATA_DIR, &st) == 0 && S_ISDIR(st.st_mode)) return LLMPLAN_DATA_DIR;
    return LLMPLAN_INSTALL_DATA_DIR;
}

const char *lp_jpath(char *buf, size_t len, const char *prefix, const char *key)
{
    if (prefix && prefix[0])
        snprintf(buf, len, "%s.%s", prefix, key);
    else
        snprintf(buf, len, "%s", key);
    return buf;
}

/* ---- files ---- */

int lp_read_file(const char *path, char **out, size_t *len, struct lp_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) LP_FAIL(err, LP_EIO, "%s: cannot open: %s", path, strerror(errno));
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                fclose(f);
                LP_FAIL(err, LP_ENOMEM, "%s: out of memory reading file", path);
            }
            buf = nb;
            cap = ncap;
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        LP_FAIL(err, LP_EIO, "%s: read error", path);
    }
    buf[n] = '\0';
    *out = buf;
    if (len) *len = n;
    return LP_OK;
}

int lp_atomic_open(const char *path, struct lp_atomic *out, struct lp_err *err)
{
    snprintf(out->path, sizeof(out->path), "%s", path);
    snprintf(out->tmp, sizeof(out->tmp), "%s.tmp.%ld", path, (long)getpid());
    out->f = fopen(out->tmp, "w");
    /* name the file asked for, not the temporary (issue #17: --trace into a
     * missing directory printed "x.json.tmp.123: cannot create") */
    if (!out->f) LP_FAIL(err, LP_EIO, "%s: cannot create: %s", path, strerror(errno));
    return LP_OK;
}

void lp_atomic_abort(struct lp_atomic *a)
{
    if (!a->f) return;
    fclose(a->f);
    a->f = NULL;
    unlink(a->tmp);
}

int lp_atomic_commit(struct lp_atomic *a, struct lp_err *err)
{
    FILE *f = a->f;
    a->f = NULL;
    if (ferror(f) || fflush(f) != 0 || fsync(fileno(f)) != 0) {
        int e = errno;
        fclose(f);
        unlink(a->tmp);
        LP_FAIL(err, LP_EIO, "%s: write failed: %s", a->path, strerror(e));
    }
    if (fclose(f) != 0) {
        int e = errno;
        unlink(a->tmp);
        LP_FAIL(err, LP_EIO, "%s: close failed: %s", a->path, strerror(e));
    }
    if (rename(a->tmp, a->path) != 0) {
        int e = errno;
        unlink(a->tmp);
        LP_FAIL(err, LP_EIO, "%s: rename to %s failed: %s", a->tmp, a->path, strerror(e));
    }
    return LP_OK;
}

int lp_write_file_atomic(const char *path, const void *data, size_t len, struct lp_err *err)
{
    struct lp_atomic a;
    LP_TRY(err, lp_atomic_open(path, &a, err));
    if (len && fwrite(data, 1, len, a.f) != len) {
        int e = errno;
        lp_atomic_abort(&a);
        LP_FAIL(err, LP_EIO, "%s: write failed: %s", path, strerror(e));
    }
    return lp_atomic_commit(&a, err);
}

/* ---- typed getters ---- */

int lp_json_parse(const struct lp_jctx *c, const char *text, cJSON **out)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        long off = at ? (long)(at - text) : -1;
        int line = 1;
        for (long i = 0; i < off && text[i]; i++)
            if (text[i] == '\n') line++;
        LP_FAIL(c->err, LP_EPARSE,
                "%s: malformed JSON at line %d (byte %ld): expected a valid "
                "JSON document",
                c->file, line, off);
    }
    *out = root;
    return LP_OK;
}

int lp_json_check_keys(const struct lp_jctx *c, const cJSON *obj, const char *path,
                       const char *const *allowed)
{
    char kp[256];
    if (!cJSON_IsObject(obj))
        LP_FAIL(c->err, LP_EINVAL, "%s: key '%s': expected an object", c->file,
                path && path[0] ? path : "(root)");
    for (const cJSON *it = obj->child; it; it = it->next) {
        int ok = 0;
        for (int i = 0; allowed[i]; i++)
            if (it->string && strcmp(it->string, allowed[i]) == 0) ok = 1;
        if (!ok) {
            char list[512];
            size_t off = 0;
            list[0] = '\0';
            for (int i = 0; allowed[i] && off < sizeof(list); i++)
                off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", i ? ", " : "",
                                        allowed[i]);
            LP_FAIL(c->err, LP_EINVAL, "%s: unknown key '%s': expected one of: %s", c->file,
                    lp_jpath(kp, sizeof(kp), path, it->string ? it->string : "?"), list);
        }
    }
    return LP_OK;
}

static const char *type_name(const cJSON *v)
{
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsNull(v)) return "null";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsObject(v)) return "an object";
    return "something else";
}

static void describe(const cJSON *v, char *buf, size_t len)
{
    if (cJSON_IsNumber(v))
        snprintf(buf, len, "%.17g", v->valuedouble);
    else if (cJSON_IsString(v))
        snprintf(buf, len, "\"%.64s\"", v->valuestring);
    else
        snprintf(buf, len, "%s", type_name(v));
}

static int missing(const struct lp_jctx *c, const char *kp, const char *what)
{
    return lp_err_set_at(c->err, LP_EINVAL, __FILE__, __LINE__, "%s: missing key '%s': expected %s",
                         c->file, kp, what);
}

int lp_json_int(const struct lp_jctx *c, const cJSON *obj, const char *path, const char *key,
                bool required, int64_t min, int64_t max, int64_t *out)
{
    char kp[256], got[96], what[96];
    lp_jpath(kp, sizeof(kp), path, key);
    if (min == 1)
        snprintf(what, sizeof(what), "a positive integer");
    else if (min == 0)
        snprintf(what, sizeof(what), "a non-negative integer");
    else
        snprintf(what, sizeof(what), "an integer >= %lld", (long long)min);
    const cJSON *lim = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (lim && cJSON_IsNumber(lim) && lim->valuedouble > (double)max && max != INT64_MAX) {
        size_t l = strlen(what);
        snprintf(what + l, sizeof(what) - l, " <= %lld", (long long)max);
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) return required ? missing(c, kp, what) : LP_OK;
    describe(v, got, sizeof(got));
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
        v->valuedouble != floor(v->valuedouble) || v->valuedouble < (double)min ||
        v->valuedouble > (double)max || fabs(v->valuedouble) > 9e15)
        LP_FAIL(c->err, LP_EINVAL, "%s: key '%s': expected %s, got %s", c->file, kp, what, got);
    *out = (int64_t)v->valuedouble;
    return LP_OK;
}

int lp_json_int32(const struct lp_jctx *c, const cJSON *obj, const char *path, const char *key,
                  bool required, int min, int max, int *out)
{
    int64_t v = *out;
    LP_TRY(c->err, lp_json_int(c, obj, path, key, required, min, max, &v));
    *out = (int)v;
    return LP_OK;
}

int lp_json_num(const struct lp_jctx *c, const cJSON *obj, const char *path, const char *key,
                bool required, double min, bool min_exclusive, double *out)
{
    char kp[256], got[96], what[96];
    lp_jpath(kp, sizeof(kp), path, key);
    if (min == 0 && min_exclusive)
        snprintf(what, sizeof(what), "a positive number");
    else
        snprintf(what, sizeof(what), "a number %s %g", min_exclusive ? ">" : ">=", min);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) return required ? missing(c, kp, what) : LP_OK;
    describe(v, got, sizeof(got));
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
        (min_exclusive ? v->valuedouble <= min : v->valuedouble < min))
        LP_FAIL(c->err, LP_EINVAL, "%s: key '%s': expected %s, got %s", c->file, kp, what, got);
    *out = v->valuedouble;
    return LP_OK;
}

int lp_json_bool(const struct lp_jctx *c, const cJSON *obj, const char *path, const char *key,
                 bool required, bool *out)
{
    char kp[256], got[96];
    lp_jpath(kp, sizeof(kp), path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) return required ? missing(c, kp, "true or false") : LP_OK;
    describe(v, got, sizeof(got));
    if (!cJSON_IsBool(v))
        LP_FAIL(c->err, LP_EINVAL, "%s: key '%s': expected true or false, got %s", c->file, kp,
                got);
    *out = cJSON_IsTrue(v);
    return LP_OK;
}

int lp_json_str(const struct lp_jctx *c, const cJSON *obj, const char *path, const char *key,
                bool required, char *out, size_t len)
{
    char kp[256], got[96];
    lp_jpath(kp, sizeof(kp), path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) return required ? missing(c, kp, "a string") : LP_OK;
    describe(v, got, sizeof(got));
    if (!cJSON_IsString(v))
        LP_FAIL(c->err, LP_EINVAL, "%s: key '%s': expected a string, got %s", c->file, kp, got);
    snprintf(out, len, "%s", v->valuestring);
    return LP_OK;
}

int lp_json_enum(const struct lp_jctx *c, const cJSON *obj, const char *path, const char *key,
                 bool required, int (*parse)(const char *, int *), const char *expected, int *out)
{
    char kp[256], got[96];
    lp_jpath(kp, sizeof(kp), path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) return required ? missing(c, kp, expected) : LP_OK;
    describe(v, got, sizeof(got));
    int idx;
    if (!cJSON_IsString(v) || parse(v->valuestring, &idx) != LP_OK)
        LP_FAIL(c->err, LP_EINVAL, "%s: key '%s': expected %s, got %s", c->file, kp, expected, got);
    *out = idx;
    return LP_OK;
}

/* enum parsers with a common signature */
static int parse_among(const char *s, int *out, const char *const *names)
{
    for (int i = 0; names[i]; i++)
        if (!strcmp(s, names[i])) {
            *out = i;
            return LP_OK;
        }
    return LP_EINVAL;
}
/* Int-indexed views of config.c's name tables (NULL past the end), so that
 * the error messages below list the names the parsers accept from the same
 * table. */
#define NAME_VIEW(fn, name, type, count)                                                           \
    static const char *fn(int i)                                                                   \
    {                                                                                              \
        return i >= 0 && i < (count) ? name((type)i) : NULL;                                       \
    }
NAME_VIEW(prec_n, lp_prec_name, enum lp_prec, LP_PREC_COUNT)
NAME_VIEW(recompute_n, lp_recompute_name, enum lp_recompute, LP_RECOMPUTE_COUNT)
NAME_VIEW(schedule_n, lp_schedule_name, enum lp_schedule, LP_SCHED_COUNT)
NAME_VIEW(framework_n, lp_framework_name, enum lp_framework, LP_FW_COUNT)
NAME_VIEW(rc_method_n, lp_rc_method_name, enum lp_rc_method, LP_RC_METHOD_COUNT)
NAME_VIEW(fp8_scaling_n, lp_fp8_scaling_name, enum lp_fp8_scaling, LP_FP8_SCALING_COUNT)
NAME_VIEW(dispatcher_n, lp_dispatcher_name, enum lp_dispatcher, LP_DISPATCH_COUNT)
NAME_VIEW(xent_n, lp_xent_name, enum lp_xent, LP_XENT_COUNT)
NAME_VIEW(moe_impl_n, lp_moe_impl_name, enum lp_moe_impl, LP_MOE_IMPL_COUNT)
NAME_VIEW(ub_rs_n, lp_ub_rs_name, enum lp_ub_rs, LP_UB_RS_COUNT)
NAME_VIEW(batching_n, lp_batching_name, enum lp_batching, LP_BATCHING_COUNT)
#undef NAME_VIEW
/* a name of one of those views: its index */
static int parse_view(const char *s, int *o, const char *(*names)(int))
{
    for (int i = 0; names(i); i++)
        if (strcmp(s, names(i)) == 0) {
            *o = i;
            return LP_OK;
        }
    return LP_EINVAL;
}
static int parse_batching(const char *s, int *o)
{
    return parse_view(s, o, batching_n); /* the one name table: config.c */
}
/* the order of enum lp_attention, then "unfused" (LP_ATTENTION_COUNT) */
static const char *attention_n(int i)
{
    return i >= 0 && i <= LP_ATTENTION_COUNT
               ? lp_attention_name(i < LP_ATTENTION_COUNT, (enum lp_attention)i)
               : NULL;
}

static const char *name_at(const struct lp_name_src *n, int i)
{
    return n->fn ? n->fn(i) : n->tab[i];
}

const char *lp_json_names(char *buf, size_t len, struct lp_name_src n, const char *last)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; name_at(&n, i) && at < len; i++) {
        const char *sep = i == 0 ? "" : name_at(&n, i + 1) ? ", " : last;
        int k = snprintf(buf + at, len - at, "%s\"%s\"", sep, name_at(&n, i));
        if (k < 0) break;
        at += (size_t)k;
    }
    return buf;
}

static const char *const act_names[] = {"gelu", "swiglu", NULL};
static int parse_act(const char *s, int *o)
{
    return parse_among(s, o, act_names);
}
static const char *const norm_names[] = {"layernorm", "rmsnorm", NULL};
static int parse_norm(const char *s, int *o)
{
    return parse_among(s, o, norm_names);
}
static const char *const pos_names[] = {"learned", "rotary", "alibi", "none", NULL};
static int parse_pos(const char *s, int *o)
{
    return parse_among(s, o, pos_names);
}
static int parse_prec(const char *s, int *o)
{
    enum lp_prec p;
    if (lp_prec_parse(s, &p) != LP_OK) return LP_EINVAL;
    *o = (int)p;
    return LP_OK;
}
static int parse_fp8_scaling(const char *s, int *o)
{
    enum lp_fp8_scaling v;
    if (lp_fp8_scaling_parse(s, &v) != LP_OK) return LP_EINVAL;
    *o = (int)v;
    return LP_OK;
}
/* A list of names (key `key`) as a bit mask: bit i for name(i), names
 * ending at the first NULL; `expect` says which names in errors. */
static int parse_name_set(const struct lp_jctx *c, const cJSON *o, const char *path,
                          const char *key, const char *(*name)(int), const char *expect,
                          unsigned *out)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
    char kp[300];
    if (!a) return LP_OK;
    lp_jpath(kp, sizeof(kp), path, key);
    if (!cJSON_IsArray(a))
        LP_FAIL(c->err, LP_EINVAL, "%s: key '%s': expected a list of %s", c->file, kp, expect);
    unsigned m = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, a)
    {
        int i = 0;
        while (cJSON_IsString(x) && name(i) && strcmp(x->valuestring, name(i)) != 0)
            i++;
        if (!cJSON_IsString(x) || !name(i))
            LP_FAIL(c->err, LP_EINVAL, "%s: key '%s': expected a list of %s, got %s", c->file, kp,
                    expect, cJSON_IsString(x) ? x->valuestring : "a non-string");
        m |= 1u << i;
    }
    *out = m;
    return LP_OK;
}

/* "cuda_graphs": a list of scope names (enum lp_graph_scope). */
static int parse_graph_scopes(const struct lp_jctx *c, const cJSON *o, const char *path,
                              unsigned *out)
{
    char ex[128];
    return parse_name_set(
        c, o, path, "cuda_graphs", lp_graph_scope_name,
        lp_json_names(ex, sizeof(ex), (struct lp_name_src){.fn = lp_graph_scope_name}, ", "), out);
}

static int parse_dispatcher(const char *s, int *o)
{
    enum lp_dispatcher v;
    if (lp_dispatcher_parse(s, &v) != LP_OK) return LP_EINVAL;
    *o = (int)v;
    return LP_OK;
}
static const char *const router_names[] = {"softmax", "sigmoid", NULL};
static int parse_router(const char *s, int *o)
{
    return parse_among(s, o, router_names);
}
static const char *const routing_names[] = {"capacity", "dropless", NULL};
static int parse_routing(const char *s, int *o)
{
    return parse_among(s, o, routing_names);
}
static int parse_recompute(const char *s, int *o)
{
    enum lp_recompute r; /* the one name table: config.c */
    if (lp_recompute_parse(s, &r) != LP_OK) return LP_EINVAL;
    *o = (int)r;
    return LP_OK;
}
static int parse_schedule(const char *s, int *o)
{
    enum lp_schedule v; /* the one name table: config.c */
    if (lp_schedule_parse(s, &v) != LP_OK) return LP_EINVAL;
    *o = (int)v;
    return LP_OK;
}
static int parse_attention(const char *s, int *o)
{
    for (int i = 0; attention_n(i); i++)
        if (strcmp(s, attention_n(i)) == 0) {
            *o = i;
            return LP_OK;
        }
    return LP_EINVAL;
}
static int parse_xent(const char *s, int *o)
{
    return parse_view(s, o, xent_n); /* the one name table: config.c */
}
static int parse_framework(const char *s, int *o)
{
    enum lp_framework f; /* the one name table: config.c */
    if (lp_framework_parse(s, &f) != LP_OK) return LP_EINVAL;
    *o = (int)f;
    return LP_OK;
}
static int parse_moe_impl(const char *s, int *o)
{
    return parse_view(s, o, moe_impl_n); /* the one name table: config.c */
}
static int parse_ub_rs(const char *s, int *o)
{
    return parse_view(s, o, ub_rs_n); /* the one name table: config.c */
}
static const char *const lora_target_names[] = {"all", "moe", NULL}; /* enum lp_lora_targets */
static int parse_lora_targets(const char *s, int *o)
{
    return parse_among(s, o, lora_target_names);
}

/* ---- presets ---- */

static const char *kind_dir(enum lp_preset_kind k)
{
    return k == LP_PRESET_MODEL ? "models" : k == LP_PRESET_GPU ? "gpus" : "systems";
}

static int valid_name(const char *name)
{
    if (!name[0]) return 0;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_' || *p == '.'))
            return 0;
    return name[0] != '.';
}

typedef int (*preset_parse_fn)(const struct lp_jctx *c, const cJSON *obj, const char *path,
                               void *out);

/* Read and parse preset `name` of `kind`; *root is the caller's, path gets
 * the file. */
static int load_preset_root(enum lp_preset_kind kind, const char *name, char *path, size_t plen,
                            cJSON **root, struct lp_err *err)
{
    *root = NULL;
    if (!valid_name(name))
        LP_FAIL(err, LP_ENOTFOUND, "'%s' is not a %s preset name (see llmplan %s)", name,
                kind_dir(kind), kind_dir(kind));
    snprintf(path, plen, "%s/%s/%s.json", lp_data_dir(), kind_dir(kind), name);
    struct stat st;
    if (stat(path, &st) != 0)
        LP_FAIL(err, LP_ENOTFOUND, "'%s' is not a %s preset (no %s; see llmplan %s)", name,
                kind_dir(kind), path, kind_dir(kind));
    char *text = NULL;
    LP_TRY(err, lp_read_file(path, &text, NULL, err));
    struct lp_jctx c = {path, err, NULL};
    int rc = lp_json_parse(&c, text, root);
    free(text);
    return rc;
}

static int load_preset(enum lp_preset_kind kind, const char *name, preset_parse_fn fn, void *out,
                       struct lp_err *err)
{
    char path[PATH_MAX];
    cJSON *root = NULL;
    LP_TRY(err, load_preset_root(kind, name, path, sizeof(path), &root, err));
    struct lp_jctx c = {path, err, NULL};
    int rc = fn(&c, root, "", out);
    cJSON_Delete(root);
    if (rc < 0) lp_err_trace(err, __FILE__, __LINE__);
    return rc;
}

/* MoE keys beyond the capacity-factor model (docs/presets.md). */
static int parse_moe_ext(const struct lp_jctx *c, const cJSON *moe, const char *mp,
                         struct lp_model *m)
{
    struct lp_err *err = c->err;
    struct lp_moe *e = &m->moe;
    LP_TRY(err, lp_json_int32(c, moe, mp, "shared_experts", false, 0, 1 << 10, &e->shared_experts));
    e->shared_ffn_hidden = e->ffn_hidden;
    LP_TRY(err, lp_json_int32(c, moe, mp, "shared_ffn_hidden", false, 1, 1 << 26,
                              &e->shared_ffn_hidden));
    LP_TRY(err, lp_json_int32(c, moe, mp, "first_dense_layers", false, 0, m->layers,
                              &e->first_dense_layers));
    /* dropless unless a capacity factor is given */
    int routing = cJSON_GetObjectItemCaseSensitive(moe, "capacity_factor") ? 0 : 1;
    char ex[64];
    LP_TRY(err, lp_json_enum(c, moe, mp, "routing", false, parse_routing,
                             NAMES_TAB(ex, routing_names), &routing));
    e->dropless = routing == 1;
    e->imbalance = 1.0;
    LP_TRY(err, lp_json_num(c, moe, mp, "imbalance", false, 0, true, &e->imbalance));
    char kp[300];
    if (e->imbalance < 1.0)
        LP_FAIL(err, LP_EINVAL,
                "%s: key '%s': expected the busiest expert's tokens over the mean (>= 1), got %g",
                c->file, lp_jpath(kp, sizeof(kp), mp, "imbalance"), e->imbalance);
    LP_TRY(err, lp_json_int32(c, moe, mp, "latent_size", false, 1, 1 << 24, &e->latent));
    LP_TRY(err, lp_json_num(c, moe, mp, "activation_clamp", false, 0, false, &e->act_clamp));
    int r = 0; /* the score function costs the same either way: checked, not kept */
    return lp_json_enum(c, moe, mp, "router", false, parse_router, NAMES_TAB(ex, router_names), &r);
}

/* head_dim, MLA, sliding windows, Mamba, layer pattern, MTP, QK norm. */
static int parse_model_ext(const struct lp_jctx *c, const cJSON *o, const char *path,
                           struct lp_model *m)
{
    static const char *const mla_keys[] = {"q_lora_rank",      "kv_lora_rank", "qk_nope_head_dim",
                                           "qk_rope_head_dim", "v_head_dim",   NULL};
    static const char *const mamba_keys[] = {"version", "d_state",   "d_conv",
                                             "expand",  "head_dim",  "n_groups",
                                             "dt_rank", "num_heads", NULL};
    struct lp_err *err = c->err;
    char kp[256], sp[128];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "mla");
    if (v) {
        struct lp_mla *q = &m->mla;
        lp_jpath(sp, sizeof(sp), path, "mla");
        LP_TRY(err, lp_json_check_keys(c, v, sp, mla_keys));
        LP_TRY(err, lp_json_int32(c, v, sp, "q_lora_rank", false, 0, 1 << 20, &q->q_lora_rank));
        LP_TRY(err, lp_json_int32(c, v, sp, "kv_lora_rank", true, 1, 1 << 20, &q->kv_lora_rank));
        LP_TRY(err,
               lp_json_int32(c, v, sp, "qk_nope_head_dim", true, 1, 1 << 16, &q->qk_nope_head_dim));
        LP_TRY(err,
               lp_json_int32(c, v, sp, "qk_rope_head_dim", true, 0, 1 << 16, &q->qk_rope_head_dim));
        LP_TRY(err, lp_json_int32(c, v, sp, "v_head_dim", true, 1, 1 << 16, &q->v_head_dim));
        if (m->kv_heads != m->heads)
            LP_FAIL(err, LP_EINVAL, "%s: key '%s': expected kv_heads = heads (%d) with mla, got %d",
                    c->file, lp_jpath(kp, sizeof(kp), path, "kv_heads"), m->heads, m->kv_heads);
    }
    LP_TRY(err,
           lp_json_int32(c, o, path, "attention_window", false, 1, 1 << 26, &m->attention_window));
    LP_TRY(err, lp_json_int32(c, o, path, "global_every", false, 1, 1 << 20, &m->global_every));
    if (m->global_every > 0 && m->attention_window == 0)
        LP_FAIL(err, LP_EINVAL, "%s: key '%s': expected an attention_window to go with it", c->file,
                lp_jpath(kp, sizeof(kp), path, "global_every"));
    v = cJSON_GetObjectItemCaseSensitive(o, "mamba");
    if (v) {
        struct lp_mamba *s = &m->mamba;
        lp_jpath(sp, sizeof(sp), path, "mamba");
        LP_TRY(err, lp_json_check_keys(c, v, sp, mamba_keys));
        LP_TRY(err, lp_json_int32(c, v, sp, "version", true, 1, 2, &s->version));
        LP_TRY(err, lp_json_int32(c, v, sp, "d_state", true, 1, 1 << 16, &s->d_state));
        s->d_conv = 4;
        LP_TRY(err, lp_json_int32(c, v, sp, "d_conv", false, 1, 1 << 10, &s->d_conv));
        s->expand = 2;
        LP_TRY(err, lp_json_int32(c, v, sp, "expand", false, 1, 64, &s->expand));
        LP_TRY(err, lp_json_int32(c, v, sp, "head_dim", s->version == 2, 1, 1 << 16, &s->head_dim));
        s->n_groups = 1;
        LP_TRY(err, lp_json_int32(c, v, sp, "n_groups", false, 1, 1 << 16, &s->n_groups));
        LP_TRY(err, lp_json_int32(c, v, sp, "dt_rank", false, 1, 1 << 20, &s->dt_rank));
        LP_TRY(err, lp_json_int32(c, v, sp, "num_heads", false, 1, 1 << 20, &s->heads));
        if (s->version == 2 && s->heads == 0 && (int64_t)s->expand * m->hidden % s->head_dim != 0)
            LP_FAIL(err, LP_EINVAL,
                    "%s: key '%s.head_dim': expected a divisor of expand * hidden "
                    "(%lld), got %d",
                    c->file, sp, (long long)s->expand * m->hidden, s->head_dim);
    }
    LP_TRY(err, lp_json_str(c, o, path, "layer_pattern", false, m->layer_pattern,
                            sizeof(m->layer_pattern)));
    LP_TRY(err, lp_json_int32(c, o, path, "mtp_layers", false, 0, 64, &m->mtp_layers));
    LP_TRY(err, lp_json_bool(c, o, path, "qk_norm", false, &m->qk_norm));
    /* with MLA, Megatron-Core's qk_layernorm is the norm of the q and kv
     * latents (gpt_layer_specs.py: linear_q_up_proj / linear_kv_up_proj
     * become LayerNormLinear), which the MLA description always counts;
     * there is no per-head query/key norm to add */
    if (m->qk_norm && m->mla.kv_lora_rank > 0)
        LP_FAIL(err, LP_EINVAL,
                "%s: key '%s': expected false with 'mla' (its latents carry the norms), got true",
                c->file, lp_jpath(kp, sizeof(kp), path, "qk_norm"));
    return LP_OK;
}

/* A layer pattern names every layer with a known symbol, and a Mamba or MoE
 * layer needs its description. */
static int check_pattern(const struct lp_jctx *c, const char *path, struct lp_model *m)
{
    char kp[256];
    const char *pat = m->layer_pattern;
    if (!pat[0]) return LP_OK;
    lp_jpath(kp, sizeof(kp), path, "layer_pattern");
    if ((int)strlen(pat) != m->layers)
        LP_FAIL(c->err, LP_EINVAL, "%s: key '%s': expected one symbol per layer (%d), got %zu",
                c->file, kp, m->layers, strlen(pat));
    for (const char *q = pat; *q; q++) {
        if (!strchr("M*-E", *q))
            LP_FAIL(c->err, LP_EINVAL,
                    "%s: key '%s': expected the symbols M (Mamba), * (attention), - (MLP) and E "
                    "(MoE), got '%c' at %d",
                    c->file, kp, *q, (int)(q - pat));
        if (*q == 'M' && m->mamba.version == 0)
            LP_FAIL(c->err, LP_EINVAL,
                    "%s: key '%s': has Mamba layers but the model has no 'mamba'", c->file, kp);
        if (*q == 'E' && m->moe.experts == 0)
            LP_FAIL(c->err, LP_EINVAL, "%s: key '%s': has MoE layers but the model has no 'moe'",
                    c->file, kp);
    }
    return LP_OK;
}

static int parse_model_obj(const struct lp_jctx *c, const cJSON *o, const char *path, void *vout)
{
    static const char *const keys[] = {
        "name",         "layers",     "hidden",        "heads",
        "kv_heads",     "ffn_hidden", "ffn_act",       "vocab",
        "seq_len",      "norm",       "position",      "tied_embeddings",
        "bias",         "dropout",    "moe",           "source",
        "notes",        "head_dim",   "mla",           "attention_window",
        "global_every", "mamba",      "layer_pattern", "mtp_layers",
        "qk_norm",      NULL};
    static const char *const moe_keys[] = {"experts",
                                           "top_k",
                                           "ffn_hidden",
                                           "layer_freq",
                                           "capacity_factor",
                                           "shared_experts",
                                           "shared_ffn_hidden",
                                           "first_dense_layers",
                                           "routing",
                                           "imbalance",
                                           "router",
                                           "latent_size",
                                           "activation_clamp",
                                           NULL};
    struct lp_model *m = vout;
    struct lp_err *err = c->err;
    memset(m, 0, sizeof(*m));
    LP_TRY(err, lp_json_check_keys(c, o, path, keys));
    LP_TRY(err, lp_json_str(c, o, path, "name", true, m->name, sizeof(m->name)));
    LP_TRY(err, lp_json_int32(c, o, path, "layers", true, 1, 1 << 20, &m->layers));
    LP_TRY(err, lp_json_int32(c, o, path, "hidden", true, 1, 1 << 24, &m->hidden));
    LP_TRY(err, lp_json_int32(c, o, path, "heads", true, 1, 1 << 16, &m->heads));
    m->kv_heads = m->heads;
    LP_TRY(err, lp_json_int32(c, o, path, "kv_heads", false, 1, 1 << 16, &m->kv_heads));
    m->ffn_hidden = 4 * m->hidden;
    LP_TRY(err, lp_json_int32(c, o, path, "ffn_hidden", false, 1, 1 << 26, &m->ffn_hidden));
    int e = LP_ACT_GELU;
    char ex[128];
    LP_TRY(err,
           lp_json_enum(c, o, path, "ffn_act", false, parse_act, NAMES_TAB(ex, act_names), &e));
    m->ffn_act = (enum lp_act)e;
    LP_TRY(err, lp_json_int32(c, o, path, "vocab", true, 1, 1 << 26, &m->vocab));
    LP_TRY(err, lp_json_int32(c, o, path, "seq_len", true, 1, 1 << 26, &m->seq_len));
    e = LP_NORM_LAYERNORM;
    LP_TRY(err, lp_json_enum(c, o, path, "norm", false, parse_norm, NAMES_TAB(ex, norm_names), &e));
    m->norm = (enum lp_norm)e;
    e = LP_POS_LEARNED;
    LP_TRY(err,
           lp_json_enum(c, o, path, "position", false, parse_pos, NAMES_TAB(ex, pos_names), &e));
    m->pos = (enum lp_pos)e;
    m->tied_embeddings = true;
    LP_TRY(err, lp_json_bool(c, o, path, "tied_embeddings", false, &m->tied_embeddings));
    m->bias = true;
    LP_TRY(err, lp_json_bool(c, o, path, "bias", false, &m->bias));
    m->dropout = true;
    LP_TRY(err, lp_json_bool(c, o, path, "dropout", false, &m->dropout));
    LP_TRY(err, lp_json_str(c, o, path, "source", false, m->source, sizeof(m->source)));
    char kp[256];
    LP_TRY(err, lp_json_int32(c, o, path, "head_dim", false, 1, 1 << 16, &m->head_dim));
    if (m->head_dim == 0 && m->hidden % m->heads != 0)
        LP_FAIL(err, LP_EINVAL,
                "%s: key '%s': expected heads to divide hidden (%d), or a head_dim, got %d",
                c->file, lp_jpath(kp, sizeof(kp), path, "heads"), m->hidden, m->heads);
    LP_TRY(err, parse_model_ext(c, o, path, m));
    if (m->heads % m->kv_heads != 0)
        LP_FAIL(err, LP_EINVAL, "%s: key '%s': expected a divisor of heads (%d), got %d", c->file,
                lp_jpath(kp, sizeof(kp), path, "kv_heads"), m->heads, m->kv_heads);
    const cJSON *moe = cJSON_GetObjectItemCaseSensitive(o, "moe");
    if (moe) {
        char mp[256];
        lp_jpath(mp, sizeof(mp), path, "moe");
        LP_TRY(err, lp_json_check_keys(c, moe, mp, moe_keys));
        LP_TRY(err, lp_json_int32(c, moe, mp, "experts", true, 1, 1 << 20, &m->moe.experts));
        m->moe.top_k = 1;
        LP_TRY(err, lp_json_int32(c, moe, mp, "top_k", false, 1, m->moe.experts, &m->moe.top_k));
        m->moe.ffn_hidden = m->ffn_hidden;
        LP_TRY(err, lp_json_int32(c, moe, mp, "ffn_hidden", false, 1, 1 << 26, &m->moe.ffn_hidden));
        m->moe.layer_freq = 1;
        LP_TRY(err,
               lp_json_int32(c, moe, mp, "layer_freq", false, 1, m->layers, &m->moe.layer_freq));
        m->moe.capacity_factor = 1.0;
        LP_TRY(err,
               lp_json_num(c, moe, mp, "capacity_factor", false, 0, true, &m->moe.capacity_factor));
        LP_TRY(err, parse_moe_ext(c, moe, mp, m));
    }
    return check_pattern(c, path, m);
}

static int parse_gpu_obj(const struct lp_jctx *c, const cJSON *o, const char *path, void *vout)
{
    static const char *const keys[] = {
        "name",  "memory_GiB", "memory_bw_GBps", "peak_tflops",    "sms", "l2_MiB",
        "tdp_w", "source",     "notes",          "sustained_frac", NULL};
    static const char *const pk[] = {"fp32", "tf32", "fp16", "bf16", "fp8", "mxfp8", "nvfp4", NULL};
    struct lp_gpu *g = vout;
    struct lp_err *err = c->err;
    memset(g, 0, sizeof(*g));
    LP_TRY(err, lp_json_check_keys(c, o, path, keys));
    LP_TRY(err, lp_json_str(c, o, path, "name", true, g->name, sizeof(g->name)));
    double v = 0;
    LP_TRY(err, lp_json_num(c, o, path, "memory_GiB", true, 0, true, &v));
    g->mem_bytes = v * GIB;
    LP_TRY(err, lp_json_num(c, o, path, "memory_bw_GBps", true, 0, true, &v));
    g->mem_bw_Bps = v * 1e9;
    char pp[256];
    lp_jpath(pp, sizeof(pp), path, "peak_tflops");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "peak_tflops");
    if (!p)
        return missing(c, pp, "an object {fp32, tf32, fp16, bf16, fp8, mxfp8, nvfp4} of TFLOP/s");
    LP_TRY(err, lp_json_check_keys(c, p, pp, pk));
    double fp32 = 0, tf32 = 0, fp16 = 0, bf16 = 0, fp8 = 0, mxfp8 = 0, nvfp4 = 0;
    LP_TRY(err, lp_json_num(c, p, pp, "fp32", true, 0, true, &fp32));
    LP_TRY(err, lp_json_num(c, p, pp, "tf32", false, 0, false, &tf32));
    LP_TRY(err, lp_json_num(c, p, pp, "fp16", false, 0, false, &fp16));
    LP_TRY(err, lp_json_num(c, p, pp, "bf16", false, 0, false, &bf16));
    LP_TRY(err, lp_json_num(c, p, pp, "fp8", false, 0, false, &fp8));
    LP_TRY(err, lp_json_num(c, p, pp, "mxfp8", false, 0, false, &mxfp8));
    LP_TRY(err, lp_json_num(c, p, pp, "nvfp4", false, 0, false, &nvfp4));
    g->vector_flops = fp32 * 1e12;
    /* fp32 training runs matmuls on TF32 tensor cores where they exist */
    g->peak_flops[LP_FP32] = (tf32 > 0 ? tf32 : fp32) * 1e12;
    g->peak_flops[LP_FP16] = fp16 * 1e12;
    g->peak_flops[LP_BF16] = bf16 * 1e12;
    g->peak_flops[LP_FP8] = fp8 * 1e12;
    g->peak_flops[LP_MXFP8] = mxfp8 * 1e12;
    g->peak_flops[LP_NVFP4] = nvfp4 * 1e12;
    g->sms = 0;
    LP_TRY(err, lp_json_int32(c, o, path, "sms", false, 1, 1 << 16, &g->sms));
    v = 0;
    LP_TRY(err, lp_json_num(c, o, path, "l2_MiB", false, 0, false, &v));
    g->l2_bytes = v * 1024.0 * 1024.0;
    LP_TRY(err, lp_json_num(c, o, path, "tdp_w", false, 0, false, &g->tdp_w));
    LP_TRY(err, lp_json_num(c, o, path, "sustained_frac", false, 0, true, &g->sustained_frac));
    if (g->sustained_frac > 1.0) {
        char kp[256];
        lp_jpath(kp, sizeof(kp), path, "sustained_frac");
        LP_FAIL(err, LP_EINVAL, "%s: key '%s': expected a fraction in (0, 1], got %g", c->file, kp,
                g->sustained_frac);
    }
    LP_TRY(err, lp_json_str(c, o, path, "source", false, g->source, sizeof(g->source)));
    return LP_OK;
}

static int parse_link(const struct lp_jctx *c, const cJSON *o, const char *path, const char *key,
                      const char *bwkey, struct lp_link *l)
{
    char kp[256];
    lp_jpath(kp, sizeof(kp), path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) return missing(c, kp, "an object {bw, latency_us}");
    const char *const keys[] = {bwkey, "latency_us", NULL};
    LP_TRY(c->err, lp_json_check_keys(c, v, kp, keys));
    double bw = 0, lat = 0;
    LP_TRY(c->err, lp_json_num(c, v, kp, bwkey, true, 0, true, &bw));
    LP_TRY(c->err, lp_json_num(c, v, kp, "latency_us", true, 0, false, &lat));
    l->bw_Bps = bw * 1e9;
    l->latency_s = lat * 1e-6;
    return LP_OK;
}

/* "prices": [{name, provider, date, usd_per_gpu_hour, source}, ...] */
static int parse_prices(const struct lp_jctx *c, const cJSON *o, const char *path,
                        struct lp_system *s)
{
    static const char *const keys[] = {"name",   "provider", "date", "usd_per_gpu_hour",
                                       "source", NULL};
    char kp[160], ip[200];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "prices");
    if (!v) return LP_OK;
    lp_jpath(kp, sizeof(kp), path, "prices");
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > LP_MAX_PRICES)
        LP_FAIL(c->err, LP_EINVAL,
                "%s: key '%s': expected an array of at most %d objects {name, provider, date, "
                "usd_per_gpu_hour, source}",
                c->file, kp, LP_MAX_PRICES);
    int i = 0;
    for (const cJSON *it = v->child; it; it = it->next, i++) {
        struct lp_price *p = &s->prices[i];
        snprintf(ip, sizeof(ip), "%s[%d]", kp, i);
        if (!cJSON_IsObject(it))
            LP_FAIL(c->err, LP_EINVAL, "%s: key '%s': expected an object", c->file, ip);
        LP_TRY(c->err, lp_json_check_keys(c, it, ip, keys));
        LP_TRY(c->err, lp_json_str(c, it, ip, "name", true, p->name, sizeof(p->name)));
        LP_TRY(c->err, lp_json_str(c, it, ip, "date", true, p->date, sizeof(p->date)));
        if (!lp_is_iso_date(p->date))
            LP_FAIL(c->err, LP_EINVAL,
                    "%s: key '%s.date': \"%s\" is not a date (expected YYYY, YYYY-MM or "
                    "YYYY-MM-DD)",
                    c->file, ip, p->date);
        /* a selection is a name or a date: a name may not be either another
         * price's name or a date */
        bool dup = lp_is_iso_date(p->name);
        for (int k = 0; k < i && !dup; k++)
            dup = strcmp(s->prices[k].name, p->name) == 0;
        if (dup)
            LP_FAIL(c->err, LP_EINVAL,
                    "%s: key '%s.name': \"%s\" is %s (a price is picked by its name or by a "
                    "date)",
                    c->file, ip, p->name,
                    lp_is_iso_date(p->name) ? "a date" : "another price's name too");
        LP_TRY(c->err,
               lp_json_num(c, it, ip, "usd_per_gpu_hour", true, 0, false, &p->usd_per_gpu_hour));
    }
    s->nprices = i;
    return LP_OK;
}

/* "billing", "energy", "goodput" (src/core/bill.c; docs/presets.md). */
static int parse_bill(const struct lp_jctx *c, const cJSON *o, const char *path,
                      struct lp_system *s)
{
    static const char *const ekeys[] = {"pue", "usd_per_kwh", "power_w", NULL};
    static const char *const gkeys[] = {"mtbf_gpu_hours", "checkpoint_s", "restart_s", NULL};
    /* by lp_system.billing_per_node: false, true */
    static const char *const billing_names[] = {"gpu", "node", NULL};
    char kp[256], billing[8] = "gpu", ex[32];
    int per_node = 0;
    LP_TRY(c->err, lp_json_str(c, o, path, "billing", false, billing, sizeof(billing)));
    if (parse_among(billing, &per_node, billing_names) != LP_OK)
        LP_FAIL(c->err, LP_EINVAL, "%s: key '%s': expected %s, got \"%s\"", c->file,
                lp_jpath(kp, sizeof(kp), path, "billing"), NAMES_TAB(ex, billing_names), billing);
    s->billing_per_node = per_node == 1;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "energy");
    if (e) {
        lp_jpath(kp, sizeof(kp), path, "energy");
        LP_TRY(c->err, lp_json_check_keys(c, e, kp, ekeys));
        s->energy.pue = 1.0;
        LP_TRY(c->err, lp_json_num(c, e, kp, "pue", false, 1, false, &s->energy.pue));
        LP_TRY(c->err, lp_json_num(c, e, kp, "usd_per_kwh", true, 0, true, &s->energy.usd_per_kwh));
        LP_TRY(c->err, lp_json_num(c, e, kp, "power_w", false, 0, true, &s->energy.power_w));
        if (!(s->energy.power_w > 0) && !(s->gpu.tdp_w > 0))
            LP_FAIL(c->err, LP_EINVAL,
                    "%s: key '%s.power_w': expected the power per GPU in W (GPU %s has no tdp_w)",
                    c->file, kp, s->gpu.name);
    }
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(o, "goodput");
    if (g) {
        lp_jpath(kp, sizeof(kp), path, "goodput");
        LP_TRY(c->err, lp_json_check_keys(c, g, kp, gkeys));
        LP_TRY(c->err,
               lp_json_num(c, g, kp, "mtbf_gpu_hours", true, 0, true, &s->goodput.mtbf_gpu_hours));
        LP_TRY(c->err,
               lp_json_num(c, g, kp, "checkpoint_s", true, 0, false, &s->goodput.checkpoint_s));
        LP_TRY(c->err, lp_json_num(c, g, kp, "restart_s", true, 0, false, &s->goodput.restart_s));
    }
    return LP_OK;
}

static int parse_system_obj(const struct lp_jctx *c, const cJSON *o, const char *path, void *vout)
{
    static const char *const keys[] = {"name",
                                       "gpu",
                                       "gpus_per_node",
                                       "scale_up_gpus",
                                       "segment_gpus",
                                       "intra_node",
                                       "inter_node",
                                       "price_per_gpu_hour_usd",
                                       "source",
                                       "price_source",
                                       "price_date",
                                       "notes",
                                       "prices",
                                       "profile",
                                       "billing",
                                       "energy",
                                       "goodput",
                                       "tp_across_nodes",
                                       NULL};
    struct lp_system *s = vout;
    struct lp_err *err = c->err;
    memset(s, 0, sizeof(*s));
    LP_TRY(err, lp_json_check_keys(c, o, path, keys));
    LP_TRY(err, lp_json_str(c, o, path, "name", true, s->name, sizeof(s->name)));
    char kp[256];
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(o, "gpu");
    if (!g) return missing(c, lp_jpath(kp, sizeof(kp), path, "gpu"), "a GPU preset name or object");
    LP_TRY(err, lp_json_gpu(c, g, lp_jpath(kp, sizeof(kp), path, "gpu"), &s->gpu));
    LP_TRY(err, lp_json_int32(c, o, path, "gpus_per_node", true, 1, 1 << 16, &s->gpus_per_node));
    s->scale_up_gpus = s->gpus_per_node;
    LP_TRY(err, lp_json_int32(c, o, path, "scale_up_gpus", false, 1, 1 << 20, &s->scale_up_gpus));
    if (s->scale_up_gpus % s->gpus_per_node != 0)
        LP_FAIL(err, LP_EINVAL, "%s: key '%s': expected a multiple of gpus_per_node (%d), got %d",
                c->file, lp_jpath(kp, sizeof(kp), path, "scale_up_gpus"), s->gpus_per_node,
                s->scale_up_gpus);
    s->segment_gpus = s->scale_up_gpus;
    LP_TRY(err, lp_json_int32(c, o, path, "segment_gpus", false, 1, 1 << 20, &s->segment_gpus));
    if (s->segment_gpus % s->gpus_per_node != 0 || s->segment_gpus > s->scale_up_gpus)
        LP_FAIL(err, LP_EINVAL,
                "%s: key '%s': expected a multiple of gpus_per_node (%d) up to scale_up_gpus (%d), "
                "got %d",
                c->file, lp_jpath(kp, sizeof(kp), path, "segment_gpus"), s->gpus_per_node,
                s->scale_up_gpus, s->segment_gpus);
    LP_TRY(err, lp_json_bool(c, o, path, "tp_across_nodes", false, &s->tp_across_nodes));
    LP_TRY(err, parse_link(c, o, path, "intra_node", "bw_GBps", &s->intra));
    LP_TRY(err, parse_link(c, o, path, "inter_node", "bw_GBps_per_gpu", &s->inter));
    LP_TRY(err, lp_json_num(c, o, path, "price_per_gpu_hour_usd", true, 0, false,
                            &s->price_per_gpu_hour_usd));
    LP_TRY(err, lp_json_str(c, o, path, "source", false, s->source, sizeof(s->source)));
    LP_TRY(err, parse_prices(c, o, path, s));
    LP_TRY(err, lp_json_str(c, o, path, "profile", false, s->profile, sizeof(s->profile)));
    LP_TRY(err, parse_bill(c, o, path, s));
    return LP_OK;
}

static int parse_model_cb(const struct lp_jctx *c, const cJSON *o, const char *p, void *out)
{
    return parse_model_obj(c, o, p, out);
}

int lp_load_model(const char *name, struct lp_model *out, struct lp_err *err)
{
    return load_preset(LP_PRESET_MODEL, name, parse_model_cb, out, err);
}
int lp_load_gpu(const char *name, struct lp_gpu *out, struct lp_err *err)
{
    return load_preset(LP_PRESET_GPU, name, parse_gpu_obj, out, err);
}
int lp_load_system(const char *name, struct lp_system *out, struct lp_err *err)
{
    return load_preset(LP_PRESET_SYSTEM, name, parse_system_obj, out, err);
}

/* Merge the keys of `over` into `base`: an object into an object key by key
 * (so {"inter_node": {"bw_GBps_per_gpu": 25}} keeps the preset's latency),
 * anything else replaces the preset's value. */
static int merge_into(cJSON *base, const cJSON *over)
{
    for (const cJSON *it = over->child; it; it = it->next) {
        if (!strcmp(it->string, "preset") && base->string == NULL) continue;
        cJSON *b = cJSON_GetObjectItemCaseSensitive(base, it->string);
        if (b && cJSON_IsObject(b) && cJSON_IsObject(it)) {
            if (merge_into(b, it) < 0) return LP_ENOMEM;
            continue;
        }
        cJSON *copy = cJSON_Duplicate(it, true);
        if (!copy) return LP_ENOMEM;
        if (b ? !cJSON_ReplaceItemInObjectCaseSensitive(base, it->string, copy)
              : !cJSON_AddItemToObject(base, it->string, copy)) {
            cJSON_Delete(copy);
            return LP_ENOMEM;
        }
    }
    return LP_OK;
}

/* {"preset": NAME, key: value, ...}: the preset with some keys overridden
 * (issue #17), parsed as one inline object, so every key is checked as in
 * a preset file and errors name this file and key. Without its own "name",
 * a model or system is named after the preset and the overridden keys
 * ("mixtral-8x7b[seq_len=512]"): plans and groups never pass it off as the
 * preset. A GPU keeps the preset's name, the key its kernel profile is
 * found and checked by (data/profiles/<gpu>.h5, lp_profile_match_gpu). */
static int preset_override(const struct lp_jctx *c, const cJSON *item, const char *path,
                           enum lp_preset_kind kind, preset_parse_fn fn, void *out)
{
    char kp[256], ppath[PATH_MAX];
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(item, "preset");
    if (!cJSON_IsString(pr))
        LP_FAIL(c->err, LP_EINVAL, "%s: key '%s': expected a %s preset name", c->file,
                lp_jpath(kp, sizeof(kp), path, "preset"), kind_dir(kind));
    cJSON *root = NULL;
    int rc = load_preset_root(kind, pr->valuestring, ppath, sizeof(ppath), &root, c->err);
    if (rc == LP_ENOTFOUND) {
        char msg[LP_ERR_MSG];
        snprintf(msg, sizeof(msg), "%s", c->err->msg);
        LP_FAIL(c->err, LP_ENOTFOUND, "%s: key '%s': %s", c->file,
                lp_jpath(kp, sizeof(kp), path, "preset"), msg);
    }
    if (rc < 0) return rc;
    if (merge_into(root, item) < 0) {
        cJSON_Delete(root);
        LP_FAIL(c->err, LP_ENOMEM, "out of memory");
    }
    if (kind != LP_PRESET_GPU && !cJSON_GetObjectItemCaseSensitive(item, "name")) {
        char name[LP_NAME_LEN];
        snprintf(name, sizeof(name), "%s", pr->valuestring);
        for (const cJSON *it = item->child; it; it = it->next) {
            if (!strcmp(it->string, "preset")) continue;
            char val[32] = "...";
            if (cJSON_IsNumber(it))
                lp_label_number(it->valuedouble, val, sizeof(val));
            else if (cJSON_IsString(it))
                snprintf(val, sizeof(val), "%.24s", it->valuestring);
            else if (cJSON_IsBool(it))
                snprintf(val, sizeof(val), "%s", cJSON_IsTrue(it) ? "true" : "false");
            lp_label_add(name, sizeof(name), it->string, val);
        }
        cJSON *n = cJSON_CreateString(name);
        cJSON *b = cJSON_GetObjectItemCaseSensitive(root, "name");
        if (!n || (b ? !cJSON_ReplaceItemInObjectCaseSensitive(root, "name", n)
                     : !cJSON_AddItemToObject(root, "name", n))) {
            cJSON_Delete(n);
            cJSON_Delete(root);
            LP_FAIL(c->err, LP_ENOMEM, "out of memory");
        }
    }
    rc = fn(c, root, path, out);
    cJSON_Delete(root);
    if (rc < 0) lp_err_trace(c->err, __FILE__, __LINE__);
    return rc;
}

/* The label of a preset with overrides, "NAME[key=value,...]" (the name
 * preset_override gives it, lp_label_add), as the object {"preset": NAME,
 * key: value, ...}: true / false, a number when strtod reads all of it,
 * else a string. NULL when s is no such label, *bad when it holds a value
 * the label does not carry ("...", an object). */
static cJSON *label_override(const char *s, bool *bad)
{
    *bad = false;
    const char *open = strchr(s, '[');
    const size_t n = strlen(s);
    if (!open || open == s || n < 2 || s[n - 1] != ']') return NULL;
    char buf[LP_NAME_LEN * 2];
    if (n >= sizeof(buf)) return NULL;
    memcpy(buf, s, n + 1);
    buf[open - s] = '\0';
    buf[n - 1] = '\0';
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "preset", buf)) goto fail;
    for (char *kv = buf + (open - s) + 1, *next; kv && *kv; kv = next) {
        next = strchr(kv, ',');
        if (next) *next++ = '\0';
        char *eq = strchr(kv, '=');
        if (!eq || eq == kv) goto fail;
        *eq = '\0';
        const char *v = eq + 1;
        if (!strcmp(v, "...")) {
            *bad = true;
            goto fail;
        }
        char *end = NULL;
        const double x = strtod(v, &end);
        cJSON *val = !strcmp(v, "true")     ? cJSON_CreateTrue()
                     : !strcmp(v, "false")  ? cJSON_CreateFalse()
                     : (*v && end && !*end) ? cJSON_CreateNumber(x)
                                            : cJSON_CreateString(v);
        cJSON *old = cJSON_GetObjectItemCaseSensitive(o, kv);
        if (!val || (old ? !cJSON_ReplaceItemInObjectCaseSensitive(o, kv, val)
                         : !cJSON_AddItemToObject(o, kv, val))) {
            cJSON_Delete(val);
            goto fail;
        }
    }
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

/* A preset reference (string; also the label of a preset with overrides,
 * as plans.json names it), a preset with overrides, or an inline object. */
static int preset_or_inline(const struct lp_jctx *c, const cJSON *item, const char *path,
                            enum lp_preset_kind kind, preset_parse_fn fn, void *out)
{
    bool bad = false;
    cJSON *label = cJSON_IsString(item) ? label_override(item->valuestring, &bad) : NULL;
    if (label) {
        int rc = preset_override(c, label, path, kind, fn, out);
        cJSON_Delete(label);
        return rc;
    }
    if (bad)
        LP_FAIL(c->err, LP_EINVAL,
                "%s: key '%s': \"%s\" is the label of a preset with an object override, which "
                "the label does not carry; give it as {\"preset\": ..., ...}",
                c->file, path, item->valuestring);
    if (cJSON_IsString(item)) {
        int rc = load_preset(kind, item->valuestring, fn, out, c->err);
        if (rc == LP_ENOTFOUND) {
            char msg[LP_ERR_MSG];
            snprintf(msg, sizeof(msg), "%s", c->err->msg);
            LP_FAIL(c->err, LP_ENOTFOUND, "%s: key '%s': %s", c->file, path, msg);
        }
        if (rc < 0) lp_err_trace(c->err, __FILE__, __LINE__);
        return rc;
    }
    if (cJSON_IsObject(item) && cJSON_GetObjectItemCaseSensitive(item, "preset"))
        return preset_override(c, item, path, kind, fn, out);
    if (cJSON_IsObject(item)) return fn(c, item, path, out);
    char got[96];
    describe(item, got, sizeof(got));
    LP_FAIL(c->err, LP_EINVAL,
            "%s: key '%s': expected a %s preset name or an inline object, got %s", c->file, path,
            kind_dir(kind), got);
}

int lp_json_model(const struct lp_jctx *c, const cJSON *item, const char *path,
                  struct lp_model *out)
{
    return preset_or_inline(c, item, path, LP_PRESET_MODEL, parse_model_cb, out);
}
int lp_json_gpu(const struct lp_jctx *c, const cJSON *item, const char *path, struct lp_gpu *out)
{
    return preset_or_inline(c, item, path, LP_PRESET_GPU, parse_gpu_obj, out);
}
int lp_json_system(const struct lp_jctx *c, const cJSON *item, const char *path,
                   struct lp_system *out)
{
    return preset_or_inline(c, item, path, LP_PRESET_SYSTEM, parse_system_obj, out);
}

/* ---- run description ---- */

int lp_json_root_tp_across(const struct lp_jctx *c, const cJSON *root, struct lp_system *sys, int n)
{
    bool across = false;
    LP_TRY(c->err, lp_json_bool(c, root, "", "tp_across_nodes", false, &across));
    for (int i = 0; across && i < n; i++)
        sys[i].tp_across_nodes = true;
    return LP_OK;
}

int lp_json_pick_price(const struct lp_jctx *c, const cJSON *root, struct lp_system *sys, int n)
{
    char sel[32] = "";
    LP_TRY(c->err, lp_json_str(c, root, "", "prices", false, sel, sizeof(sel)));
    if (!sel[0]) return LP_OK;
    for (int i = 0; i < n; i++) {
        if (lp_system_pick_price(&sys[i], sel) == LP_OK) continue;
        char list[256] = "";
        size_t off = 0;
        for (int k = 0; k < sys[i].nprices && off < sizeof(list); k++)
            off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s (%s)", k ? ", " : "",
                                    sys[i].prices[k].name, sys[i].prices[k].date);
        LP_FAIL(c->err, LP_EINVAL,
                "%s: key 'prices': system '%s' has no price %s \"%s\"%s (it has: %s)", c->file,
                sys[i].name, lp_is_iso_date(sel) ? "dated" : "named", sel,
                lp_is_iso_date(sel) ? " nor one dated before it" : "",
                sys[i].nprices ? list : "none");
    }
    return LP_OK;
}

static int parse_rc_method(const char *s, int *o)
{
    enum lp_rc_method m;
    if (lp_rc_method_parse(s, &m) != LP_OK) return LP_EINVAL;
    *o = (int)m;
    return LP_OK;
}

/* recompute_modules (selective; given alone it means selective, as
 * Megatron-Bridge's recipes set it) and recompute_method / recompute_layers
 * (full), each refused beside the other granularity. */
static int parse_recompute_details(const struct lp_jctx *c, const cJSON *o, const char *path,
                                   struct lp_parallel *p)
{
    struct lp_err *err = c->err;
    char kp[300];
    const bool given = cJSON_GetObjectItemCaseSensitive(o, "recompute") != NULL;
    if (cJSON_GetObjectItemCaseSensitive(o, "recompute_modules")) {
        unsigned m = 0;
        char ex[160];
        LP_TRY(err,
               parse_name_set(c, o, path, "recompute_modules", lp_rc_module_name,
                              lp_json_names(ex, sizeof(ex),
                                            (struct lp_name_src){.fn = lp_rc_module_name}, ", "),
                              &m));
        if (!given) p->recompute = LP_RECOMPUTE_SELECTIVE;
        lp_jpath(kp, sizeof(kp), path, "recompute_modules");
        if (p->recompute != LP_RECOMPUTE_SELECTIVE)
            LP_FAIL(err, LP_EINVAL, "%s: key '%s': recompute modules need recompute \"selective\"",
                    c->file, kp);
        if (m == 0)
            LP_FAIL(err, LP_EINVAL, "%s: key '%s': expected at least one module", c->file, kp);
        if ((m & LP_RC_OP) && m != LP_RC_OP)
            LP_FAIL(err, LP_EINVAL,
                    "%s: key '%s': \"op\" (torchtitan's op-level policy) is a whole policy; "
                    "expected it alone, not beside Megatron's modules",
                    c->file, kp);
        p->recompute_modules = m;
    }
    const char *full_keys[] = {"recompute_method", "recompute_layers"};
    for (int i = 0; i < 2; i++) {
        if (!cJSON_GetObjectItemCaseSensitive(o, full_keys[i])) continue;
        lp_jpath(kp, sizeof(kp), path, full_keys[i]);
        if (p->recompute != LP_RECOMPUTE_FULL)
            LP_FAIL(err, LP_EINVAL, "%s: key '%s': needs recompute \"full\"", c->file, kp);
    }
    int e = (int)p->recompute_method;
    char ex[64];
    LP_TRY(err, lp_json_enum(c, o, path, "recompute_method", false, parse_rc_method,
                             NAMES_FN(ex, rc_method_n), &e));
    p->recompute_method = (enum lp_rc_method)e;
    LP_TRY(err,
           lp_json_int32(c, o, path, "recompute_layers", false, 1, 1 << 20, &p->recompute_layers));
    return LP_OK;
}

int lp_json_parallel(const struct lp_jctx *c, const cJSON *o, const char *path,
                     struct lp_parallel *p)
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
                                       "etp",
                                       "first_stage_layers",
                                       "last_stage_layers",
                                       "recompute_modules",
                                       "recompute_method",
                                       "recompute_layers",
                                       NULL};
    struct lp_err *err = c->err;
    LP_TRY(err, lp_json_check_keys(c, o, path, keys));
    LP_TRY(err, lp_json_int32(c, o, path, "tp", false, 1, 1 << 20, &p->tp));
    LP_TRY(err, lp_json_int32(c, o, path, "pp", false, 1, 1 << 20, &p->pp));
    LP_TRY(err, lp_json_int32(c, o, path, "dp", false, 1, 1 << 24, &p->dp));
    LP_TRY(err, lp_json_int32(c, o, path, "cp", false, 1, 1 << 20, &p->cp));
    LP_TRY(err, lp_json_int32(c, o, path, "ep", false, 1, 1 << 20, &p->ep));
    LP_TRY(err, lp_json_int32(c, o, path, "vp", false, 1, 1 << 10, &p->vp));
    LP_TRY(err, lp_json_int32(c, o, path, "etp", false, 1, 1 << 20, &p->etp));
    LP_TRY(err, lp_json_int32(c, o, path, "first_stage_layers", false, 1, 1 << 20,
                              &p->first_stage_layers));
    LP_TRY(err, lp_json_int32(c, o, path, "last_stage_layers", false, 1, 1 << 20,
                              &p->last_stage_layers));
    LP_TRY(err, lp_json_int32(c, o, path, "micro_batch", false, 1, 1 << 20, &p->micro_batch));
    LP_TRY(err, lp_json_bool(c, o, path, "sequence_parallel", false, &p->sequence_parallel));
    int e = (int)p->recompute;
    char ex[160];
    LP_TRY(err, lp_json_enum(c, o, path, "recompute", false, parse_recompute,
                             NAMES_FN(ex, recompute_n), &e));
    p->recompute = (enum lp_recompute)e;
    LP_TRY(err, parse_recompute_details(c, o, path, p));
    LP_TRY(err, lp_json_int32(c, o, path, "zero", false, 0, 3, &p->zero));
    if (p->vp > 1) p->schedule = LP_SCHED_INTERLEAVED;
    e = (int)p->schedule;
    LP_TRY(err, lp_json_enum(c, o, path, "schedule", false, parse_schedule,
                             NAMES_FN(ex, schedule_n), &e));
    p->schedule = (enum lp_schedule)e;
    return LP_OK;
}

/* training.dataset: {queries, epochs, median_len | histogram [[len, fraction], ...],
 * pad_multiple, max_len, batching, pack_len}: a length distribution (bins
 * ascending, fractions summing to 1); a median alone is one bin (every query
 * that long: no padding); max_len, the longest query (at least the last
 * bin), sets the batch that must fit when the distribution does not reach
 * it; batching (lp_batching) how queries make a batch, pack_len the row
 * length of "packed" (and only of it). */
static int check_lengths(const struct lp_jctx *c, const char *path, const struct lp_dataset *d)
{
    struct lp_err *err = c->err;
    char kp[300];
    if ((d->batching == LP_BATCHING_PACKED) != (d->pack_len > 0))
        LP_FAIL(err, LP_EINVAL, "%s: key '%s': expected %s", c->file,
                lp_jpath(kp, sizeof(kp), path, "pack_len"),
                d->pack_len > 0 ? "only with \"batching\": \"packed\""
                                : "the tokens per row of \"batching\": \"packed\"");
    if (d->max_len > 0 && d->max_len < d->len[d->nbins - 1])
        LP_FAIL(err, LP_EINVAL,
                "%s: key '%s': expected the longest query, at least the longest length of "
                "the distribution (%d), got %d",
                c->file, lp_jpath(kp, sizeof(kp), path, "max_len"), d->len[d->nbins - 1],
                d->max_len);
    return LP_OK;
}

static int parse_dataset(const struct lp_jctx *c, const cJSON *o, const char *path,
                         struct lp_dataset *d)
{
    static const char *const keys[] = {
        "queries",      "epochs",  "median_len", "histogram", "source",
        "pad_multiple", "max_len", "batching",   "pack_len",  NULL};
    struct lp_err *err = c->err;
    char kp[300];
    memset(d, 0, sizeof(*d));
    if (!cJSON_IsObject(o))
        LP_FAIL(err, LP_EINVAL,
                "%s: key '%s': expected an object {queries, epochs, median_len or histogram}",
                c->file, path);
    LP_TRY(err, lp_json_check_keys(c, o, path, keys));
    LP_TRY(err, lp_json_num(c, o, path, "queries", true, 0, true, &d->queries));
    d->epochs = 1;
    LP_TRY(err, lp_json_num(c, o, path, "epochs", false, 0, true, &d->epochs));
    d->pad_multiple = 8; /* LLaMA-Factory: DataCollatorForSeq2Seq(pad_to_multiple_of=8) */
    LP_TRY(err, lp_json_int32(c, o, path, "pad_multiple", false, 1, 1 << 16, &d->pad_multiple));
    LP_TRY(err, lp_json_int32(c, o, path, "max_len", false, 1, 1 << 24, &d->max_len));
    char ex[160];
    int batching = LP_BATCHING_LONGEST;
    LP_TRY(err, lp_json_enum(c, o, path, "batching", false, parse_batching,
                             NAMES_FN(ex, batching_n), &batching));
    d->batching = (enum lp_batching)batching;
    LP_TRY(err, lp_json_int32(c, o, path, "pack_len", false, 1, 1 << 24, &d->pack_len));
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(o, "histogram");
    const bool med = cJSON_GetObjectItemCaseSensitive(o, "median_len") != NULL;
    if (med == (h != NULL))
        LP_FAIL(err, LP_EINVAL, "%s: key '%s': expected one of 'median_len' or 'histogram'",
                c->file, path);
    if (med) {
        d->nbins = 1;
        d->frac[0] = 1.0;
        LP_TRY(err, lp_json_int32(c, o, path, "median_len", true, 1, 1 << 24, &d->len[0]));
        return check_lengths(c, path, d);
    }
    lp_jpath(kp, sizeof(kp), path, "histogram");
    const int n = cJSON_IsArray(h) ? cJSON_GetArraySize(h) : 0;
    if (n < 1 || n > LP_DATASET_BINS)
        LP_FAIL(err, LP_EINVAL,
                "%s: key '%s': expected an array of 1 to %d pairs [length, fraction]", c->file, kp,
                LP_DATASET_BINS);
    double sum = 0;
    int i = 0;
    for (const cJSON *it = h->child; it; it = it->next, i++) {
        const cJSON *a = cJSON_GetArrayItem(it, 0), *b = cJSON_GetArrayItem(it, 1);
        if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 2 || !cJSON_IsNumber(a) ||
            !cJSON_IsNumber(b) || a->valuedouble < 1 || a->valuedouble > (1 << 24) ||
            a->valuedouble != floor(a->valuedouble) || !(b->valuedouble >= 0) ||
            (i > 0 && a->valuedouble <= d->len[i - 1]))
            LP_FAIL(err, LP_EINVAL,
                    "%s: key '%s[%d]': expected [length, fraction] with a positive integer "
                    "length above the previous bin's and a fraction >= 0",
                    c->file, kp, i);
        d->len[i] = (int)a->valuedouble;
        d->frac[i] = b->valuedouble;
        sum += b->valuedouble;
    }
    if (fabs(sum - 1.0) > 1e-3)
        LP_FAIL(err, LP_EINVAL, "%s: key '%s': expected fractions summing to 1, got %g", c->file,
                kp, sum);
    d->nbins = n;
    return check_lengths(c, path, d);
}

/* training.module_precision: {module: precision} for the modules of
 * lp_qmod, each bf16 or a quantised precision (a TEQuantizationParams
 * config's training_recipe: none, fp8 or fp4) */
static int parse_module_prec(const struct lp_jctx *c, const cJSON *o, const char *path,
                             struct lp_training *t)
{
    const char *keys[LP_QMOD_COUNT + 1];
    for (int q = 0; q < LP_QMOD_COUNT; q++)
        keys[q] = lp_qmod_name((enum lp_qmod)q);
    keys[LP_QMOD_COUNT] = NULL;
    struct lp_err *err = c->err;
    if (!cJSON_IsObject(o))
        LP_FAIL(err, LP_EINVAL, "%s: key '%s': expected an object {module: precision}", c->file,
                path);
    LP_TRY(err, lp_json_check_keys(c, o, path, keys));
    char ex[160];
    for (int q = 0; q < LP_QMOD_COUNT; q++) {
        const char *k = keys[q];
        if (!cJSON_GetObjectItemCaseSensitive(o, k)) continue;
        int e = (int)LP_BF16;
        LP_TRY(err, lp_json_enum(c, o, path, k, false, parse_prec, NAMES_FN(ex, prec_n), &e));
        if (e == LP_FP32 || e == LP_FP16) {
            char kp[320];
            lp_jpath(kp, sizeof(kp), path, k);
            LP_FAIL(err, LP_EINVAL,
                    "%s: key '%s': expected bf16, fp8, mxfp8 or nvfp4 (a module's quantisation "
                    "recipe), got \"%s\"",
                    c->file, kp, lp_prec_name((enum lp_prec)e));
        }
        t->module_prec[q] = (unsigned char)(e + 1);
    }
    return LP_OK;
}

int lp_json_training(const struct lp_jctx *c, const cJSON *o, const char *path,
                     struct lp_training *t)
{
    static const char *const keys[] = {"global_batch",
                                       "precision",
                                       "flash_attention",
                                       "attention",
                                       "tokens",
                                       "tokens_per_param",
                                       "finetune",
                                       "fp8_scaling",
                                       "dataset",
                                       "bf16_first_layers",
                                       "bf16_last_layers",
                                       "module_precision",
                                       NULL};
    struct lp_err *err = c->err;
    LP_TRY(err, lp_json_check_keys(c, o, path, keys));
    LP_TRY(err, lp_json_int(c, o, path, "global_batch", true, 1, INT64_MAX, &t->global_batch));
    int e = (int)t->precision;
    char ex[160];
    LP_TRY(err, lp_json_enum(c, o, path, "precision", false, parse_prec, NAMES_FN(ex, prec_n), &e));
    t->precision = (enum lp_prec)e;
    e = (int)t->fp8_scaling;
    LP_TRY(err, lp_json_enum(c, o, path, "fp8_scaling", false, parse_fp8_scaling,
                             NAMES_FN(ex, fp8_scaling_n), &e));
    t->fp8_scaling = (enum lp_fp8_scaling)e;
    LP_TRY(err, lp_json_int32(c, o, path, "bf16_first_layers", false, 0, 1 << 20,
                              &t->bf16_first_layers));
    LP_TRY(err,
           lp_json_int32(c, o, path, "bf16_last_layers", false, 0, 1 << 20, &t->bf16_last_layers));
    const cJSON *mp = cJSON_GetObjectItemCaseSensitive(o, "module_precision");
    if (mp) {
        char mpp[256];
        LP_TRY(err,
               parse_module_prec(c, mp, lp_jpath(mpp, sizeof(mpp), path, "module_precision"), t));
    }
    LP_TRY(err, lp_json_bool(c, o, path, "flash_attention", false, &t->flash_attention));
    if (cJSON_GetObjectItemCaseSensitive(o, "attention")) {
        const bool flash_given = cJSON_GetObjectItemCaseSensitive(o, "flash_attention") != NULL;
        e = 0;
        LP_TRY(err, lp_json_enum(c, o, path, "attention", false, parse_attention,
                                 NAMES_FN(ex, attention_n), &e));
        const bool flash = e != LP_ATTENTION_COUNT;
        if (flash_given && flash != t->flash_attention) {
            char kp[256];
            lp_jpath(kp, sizeof(kp), path, "attention");
            LP_FAIL(err, LP_EINVAL,
                    "%s: key '%s': \"%s\" contradicts flash_attention = %s (give one of them)",
                    c->file, kp, lp_attention_name(flash, (enum lp_attention)(flash ? e : 0)),
                    t->flash_attention ? "true" : "false");
        }
        t->flash_attention = flash;
        t->attention = flash ? (enum lp_attention)e : LP_ATTENTION_FLASH2;
    }
    LP_TRY(err, lp_json_num(c, o, path, "tokens", false, 0, false, &t->tokens));
    LP_TRY(err, lp_json_num(c, o, path, "tokens_per_param", false, 0, false, &t->tokens_per_param));
    t->lora_base_bits = 16;
    const cJSON *ft = cJSON_GetObjectItemCaseSensitive(o, "finetune");
    if (ft) {
        char fp[256];
        LP_TRY(err, lp_json_finetune(c, ft, lp_jpath(fp, sizeof(fp), path, "finetune"), t));
    }
    const cJSON *ds = cJSON_GetObjectItemCaseSensitive(o, "dataset");
    if (ds) {
        char dp[256];
        LP_TRY(err, parse_dataset(c, ds, lp_jpath(dp, sizeof(dp), path, "dataset"), &t->dataset));
    }
    return LP_OK;
}

int lp_json_finetune(const struct lp_jctx *c, const cJSON *ft, const char *fp,
                     struct lp_training *t)
{
    static const char *const ft_keys[] = {"method",  "rank",    "base_bits",
                                          "targets", "dropout", NULL};
    struct lp_err *err = c->err;
    char method[16] = "";
    LP_TRY(err, lp_json_check_keys(c, ft, fp, ft_keys));
    LP_TRY(err, lp_json_str(c, ft, fp, "method", true, method, sizeof(method)));
    if (strcmp(method, "lora") != 0)
        LP_FAIL(err, LP_EINVAL, "%s: key '%s.method': expected \"lora\", got \"%s\"", c->file, fp,
                method);
    t->lora_rank = 16;
    t->lora_base_bits = 16;
    LP_TRY(err, lp_json_int32(c, ft, fp, "rank", false, 1, 1 << 16, &t->lora_rank));
    LP_TRY(err, lp_json_int32(c, ft, fp, "base_bits", false, 4, 16, &t->lora_base_bits));
    if (t->lora_base_bits != 4 && t->lora_base_bits != 8 && t->lora_base_bits != 16)
        LP_FAIL(err, LP_EINVAL, "%s: key '%s.base_bits': expected 4, 8 or 16, got %d", c->file, fp,
                t->lora_base_bits);
    int e2 = (int)LP_LORA_ALL;
    char ex[64];
    LP_TRY(err, lp_json_enum(c, ft, fp, "targets", false, parse_lora_targets,
                             NAMES_TAB(ex, lora_target_names), &e2));
    t->lora_targets = (enum lp_lora_targets)e2;
    LP_TRY(err, lp_json_num(c, ft, fp, "dropout", false, 0, false, &t->lora_dropout));
    return LP_OK;
}

void lp_json_framework_defaults(const struct lp_jctx *c, enum lp_framework kind,
                                struct lp_framework_opts *out)
{
    struct lp_calib builtin;
    if (!c->cal) lp_calib_builtin(&builtin);
    lp_framework_defaults_cal(kind, c->cal ? c->cal : &builtin, out);
}

/* torchtitan's op-level policy is modelled for its Llama blocks (GQA
 * attention and a dense MLP): refused for the layer kinds it was not. */
static int check_op_sac(const struct lp_jctx *c, const struct lp_run *r)
{
    const struct lp_model *m = &r->model;
    if ((r->par.recompute_modules & LP_RC_OP) && (m->moe.experts > 0 || m->mla.kv_lora_rank > 0 ||
                                                  m->mamba.d_state > 0 || r->train.lora_rank > 0))
        LP_FAIL(c->err, LP_EINVAL,
                "%s: key 'parallel.recompute_modules': \"op\" expects attention and dense MLP "
                "layers without LoRA (torchtitan's Llama blocks), but model '%s' has MoE, MLA or "
                "Mamba layers or the run trains LoRA adapters",
                c->file, m->name);
    return LP_OK;
}

/* the bf16 first / last layers Megatron-Core refuses (rules.h
 * lp_bf16_layers_gap, the rule a sweep's walk skips by too: rules.c
 * bf16_layers) */
static int check_bf16_layers(const struct lp_jctx *c, const struct lp_run *r)
{
    const enum lp_fw_gap g =
        lp_bf16_layers_gap(r->fw.kind, &r->train, r->train.precision, &r->model, &r->par);
    if (g == LP_GAP_NONE) return LP_OK;
    const char *key;
    const char *what = lp_fw_gap_text(g, &key);
    if (g == LP_GAP_BF16_FW)
        LP_FAIL(c->err, LP_EINVAL,
                "%s: key '%s': %s: expected 0 with framework \"%s\" (first %d, last %d)", c->file,
                key, what, lp_framework_name(r->fw.kind), r->train.bf16_first_layers,
                r->train.bf16_last_layers);
    /* what would pass: the stage's layers at most, or (delayed scaling)
     * current scaling or no bf16 layers */
    if (g == LP_GAP_BF16_DELAYED)
        LP_FAIL(c->err, LP_EINVAL,
                "%s: key '%s': %s (first %d, last %d): expected training.fp8_scaling \"current\" "
                "or no bf16 layers",
                c->file, key, what, r->train.bf16_first_layers, r->train.bf16_last_layers);
    LP_FAIL(c->err, LP_EINVAL,
            "%s: key '%s': %s (first %d, last %d; %d layers, pp %d): expected at most %d each",
            c->file, key, what, r->train.bf16_first_layers, r->train.bf16_last_layers,
            r->model.layers, r->par.pp, r->model.layers / (r->par.pp > 0 ? r->par.pp : 1));
}

/* an option or layout the framework does not run as modelled, the rules a
 * sweep's walk skips by too (rules.c fw_precision, fw_hybrid, fsdp_layout,
 * fsdp_lora): a precision its stack cannot train in
 * (lp_fw_precision_gap), hybrid_shard outside FSDP at zero 2-3 (config.h lp_fw_hybrid_runs), an
 * FSDP run over several ranks that lp_torch_dp does not play (rules.h
 * lp_fw_fsdp_gap) */
static int check_fw_gap(const struct lp_jctx *c, const struct lp_run *r)
{
    const char *name = lp_framework_name(r->fw.kind);
    const enum lp_fw_gap pg = lp_fw_precision_gap(r->fw.kind, r->train.precision);
    if (pg != LP_GAP_NONE)
        LP_FAIL(c->err, LP_EINVAL,
                "%s: key 'training.precision': framework \"%s\": %s: expected \"fp16\" or "
                "\"bf16\", got \"%s\"",
                c->file, name, lp_fw_gap_text(pg, NULL), lp_prec_name(r->train.precision));
    if (r->fw.hybrid_shard && !lp_fw_hybrid_runs(r->fw.kind, r->par.zero))
        LP_FAIL(c->err, LP_EINVAL,
                "%s: key 'framework.hybrid_shard': HYBRID_SHARD is an FSDP sharding strategy: "
                "expected false with framework \"%s\" at zero %d (true needs fsdp, fsdp1 or "
                "fsdp2 at zero 2 or 3)",
                c->file, name, r->par.zero);
    const enum lp_fw_gap g = lp_fw_fsdp_gap(r->fw.kind, &r->model, &r->par, r->train.lora_rank);
    if (g != LP_GAP_NONE) {
        const char *key;
        const char *what = lp_fw_gap_text(g, &key);
        LP_FAIL(c->err, LP_EINVAL,
                "%s: key '%s': framework \"%s\" over %d data-parallel ranks: %s "
                "(docs/frameworks.md); expected pp 1, a dense attention + MLP model without "
                "MTP and no LoRA, or another framework",
                c->file, key, name, r->par.dp * r->par.cp, what);
    }
    return LP_OK;
}

/* a ZeRO stage below the framework's least (lp_fw_min_zero, the rule a
 * sweep's walk skips by too: rules.c zero_framework): fully_shard always
 * shards, its one choice is reshard_after_forward, the run's zero 3 (True)
 * or 2 (False); NO_SHARD and ZeRO-1 are not FSDP2 */
static int check_fsdp2_zero(const struct lp_jctx *c, const struct lp_run *r)
{
    if (r->par.zero < lp_fw_min_zero(r->fw.kind))
        LP_FAIL(c->err, LP_EINVAL,
                "%s: key 'parallel.zero': framework \"%s\" (fully_shard) shards every "
                "parameter: expected 2 (reshard_after_forward False) or 3 (True), got %d",
                c->file, lp_framework_name(r->fw.kind), r->par.zero);
    return LP_OK;
}

int lp_json_check_graph_scope(const struct lp_jctx *c, const struct lp_model *m,
                              const struct lp_framework_opts *fw, const char *fw_key)
{
    if ((fw->cuda_graphs & LP_GRAPH_MOE) && m->moe.experts > 0 && m->moe.dropless)
        LP_FAIL(c->err, LP_EINVAL,
                "%s: key '%s.cuda_graphs': scope \"moe\" expects capacity routing, but model "
                "'%s' is dropless (Megatron-Core refuses cuda_graph_scope \"moe\" for dropless "
                "MoE; graph \"moe_router\" instead)",
                c->file, fw_key, m->name);
    return LP_OK;
}

int lp_json_framework(const struct lp_jctx *c, const cJSON *item, const char *path,
                      struct lp_framework_opts *f)
{
    static const char *const keys[] = {"name",
                                       "dp_overlap",
                                       "tp_overlap",
                                       "tp_overlap_rs",
                                       "pp_overlap",
                                       "param_gather_overlap",
                                       "fused_kernels",
                                       "bucket_MB",
                                       "step_overhead_ms",
                                       "host_op_us",
                                       "zero3_per_tensor",
                                       "cross_entropy",
                                       "host_overlap",
                                       "grad_fp32",
                                       "optim_bf16",
                                       "ep_overlap",
                                       "moe_dispatcher",
                                       "moe_dispatcher_sms",
                                       "cuda_graphs",
                                       "moe_impl",
                                       "hybrid_shard",
                                       "fused_softmax",
                                       "tp_async_dgrad",
                                       "train_metrics",
                                       "ckpt_reentrant",
                                       "fused_mlp",
                                       "ckpt_early_stop",
                                       NULL};
    struct lp_err *err = c->err;
    char ex[160];
    const char *expected = NAMES_FN(ex, framework_n);
    int e = LP_FW_MEGATRON;
    if (cJSON_IsString(item)) {
        if (parse_framework(item->valuestring, &e) != LP_OK)
            LP_FAIL(err, LP_EINVAL, "%s: key '%s': expected %s, got \"%.64s\"", c->file, path,
                    expected, item->valuestring);
        lp_json_framework_defaults(c, (enum lp_framework)e, f);
        return LP_OK;
    }
    if (!cJSON_IsObject(item))
        LP_FAIL(err, LP_EINVAL, "%s: key '%s': expected a framework name or an object", c->file,
                path);
    LP_TRY(err, lp_json_check_keys(c, item, path, keys));
    LP_TRY(err, lp_json_enum(c, item, path, "name", true, parse_framework, expected, &e));
    lp_json_framework_defaults(c, (enum lp_framework)e, f);
    LP_TRY(err, lp_json_bool(c, item, path, "dp_overlap", false, &f->dp_overlap));
    LP_TRY(err, lp_json_bool(c, item, path, "tp_overlap", false, &f->tp_overlap));
    LP_TRY(err, lp_json_bool(c, item, path, "pp_overlap", false, &f->pp_overlap));
    LP_TRY(err,
           lp_json_bool(c, item, path, "param_gather_overlap", false, &f->param_gather_overlap));
    LP_TRY(err, lp_json_bool(c, item, path, "fused_kernels", false, &f->fused_kernels));
    LP_TRY(err, lp_json_bool(c, item, path, "fused_softmax", false, &f->fused_softmax));
    LP_TRY(err, lp_json_bool(c, item, path, "fused_mlp", false, &f->fused_mlp));
    LP_TRY(err, lp_json_bool(c, item, path, "tp_async_dgrad", false, &f->tp_async_dgrad));
    LP_TRY(err, lp_json_bool(c, item, path, "zero3_per_tensor", false, &f->zero3_per_tensor));
    LP_TRY(err, lp_json_bool(c, item, path, "grad_fp32", false, &f->grad_fp32));
    LP_TRY(err, lp_json_bool(c, item, path, "optim_bf16", false, &f->optim_bf16));
    LP_TRY(err, lp_json_bool(c, item, path, "ep_overlap", false, &f->ep_overlap));
    int dsp = (int)f->dispatcher;
    char dx[64];
    LP_TRY(err, lp_json_enum(c, item, path, "moe_dispatcher", false, parse_dispatcher,
                             NAMES_FN(dx, dispatcher_n), &dsp));
    f->dispatcher = (enum lp_dispatcher)dsp;
    LP_TRY(err,
           lp_json_int32(c, item, path, "moe_dispatcher_sms", false, 0, 1024, &f->dispatcher_sms));
    LP_TRY(err, parse_graph_scopes(c, item, path, &f->cuda_graphs));
    LP_TRY(err, lp_json_bool(c, item, path, "hybrid_shard", false, &f->hybrid_shard));
    LP_TRY(err, lp_json_bool(c, item, path, "train_metrics", false, &f->train_metrics));
    LP_TRY(err, lp_json_bool(c, item, path, "ckpt_reentrant", false, &f->ckpt_reentrant));
    LP_TRY(err, lp_json_bool(c, item, path, "ckpt_early_stop", false, &f->ckpt_early_stop));
    int x = (int)f->xent;
    char xe[96];
    LP_TRY(err, lp_json_enum(c, item, path, "cross_entropy", false, parse_xent,
                             NAMES_FN(xe, xent_n), &x));
    f->xent = (enum lp_xent)x;
    x = (int)f->moe_impl;
    LP_TRY(err, lp_json_enum(c, item, path, "moe_impl", false, parse_moe_impl,
                             NAMES_FN(xe, moe_impl_n), &x));
    f->moe_impl = (enum lp_moe_impl)x;
    x = (int)f->tp_overlap_rs;
    LP_TRY(err, lp_json_enum(c, item, path, "tp_overlap_rs", false, parse_ub_rs,
                             NAMES_FN(xe, ub_rs_n), &x));
    f->tp_overlap_rs = (enum lp_ub_rs)x;
    double mb = f->bucket_bytes / 1e6, ms = f->step_overhead_s * 1e3, us = f->host_op_s * 1e6;
    LP_TRY(err, lp_json_num(c, item, path, "bucket_MB", false, 0, true, &mb));
    LP_TRY(err, lp_json_num(c, item, path, "step_overhead_ms", false, 0, false, &ms));
    LP_TRY(err, lp_json_num(c, item, path, "host_op_us", false, 0, false, &us));
    LP_TRY(err, lp_json_num(c, item, path, "host_overlap", false, 0, true, &f->host_overlap));
    if (f->host_overlap < 1.0) {
        char kp[256];
        lp_jpath(kp, sizeof(kp), path, "host_overlap");
        LP_FAIL(err, LP_EINVAL, "%s: key '%s': expected a number >= 1 (1 = no overlap), got %g",
                c->file, kp, f->host_overlap);
    }
    /* only what the object gives: the unit round trip of a default
     * (x * 1e6 * 1e-6) may move it by an ulp, which would make an object
     * that overrides nothing differ from the framework's name */
    if (cJSON_GetObjectItemCaseSensitive(item, "bucket_MB")) {
        f->bucket_bytes = mb * 1e6;
        f->mcore_buckets = false; /* the given size, not Megatron-Core's rule */
    }
    if (cJSON_GetObjectItemCaseSensitive(item, "step_overhead_ms")) f->step_overhead_s = ms * 1e-3;
    if (cJSON_GetObjectItemCaseSensitive(item, "host_op_us")) f->host_op_s = us * 1e-6;
    return LP_OK;
}

static void run_defaults(const struct lp_jctx *c, struct lp_run *r)
{
    memset(r, 0, sizeof(*r));
    r->par.tp = r->par.pp = r->par.dp = r->par.cp = r->par.ep = r->par.vp = 1;
    r->par.micro_batch = 1;
    r->par.recompute = LP_RECOMPUTE_NONE;
    r->par.zero = 0;
    r->par.schedule = LP_SCHED_1F1B;
    r->train.precision = LP_BF16;
    r->train.flash_attention = true;
    lp_json_framework_defaults(c, LP_FW_MEGATRON, &r->fw);
}

int lp_parse_run(const char *text, const char *origin, struct lp_run *out, struct lp_err *err)
{
    static const char *const keys[] = {"model",           "system", "parallel", "training",
                                       "framework",       "gpus",   "comment",  "prices",
                                       "tp_across_nodes", NULL};
    /* the frameworks' fitted constants (data/calibration.json) */
    struct lp_calib cal;
    LP_TRY(err, lp_calib_load_default(&cal, err));
    struct lp_jctx c = {origin, err, &cal};
    cJSON *root = NULL;
    LP_TRY(err, lp_json_parse(&c, text, &root));
    int rc = LP_OK;
    run_defaults(&c, out);
    /* a plan object copied from plans.json (docs/search.md), or the object
     * simulate --json prints (recognised by "training_config" beside "index"
     * or "feasible", so a run description with a stray training_config still
     * has its keys checked): its configuration keys are a run description's,
     * the training block is "training_config" (its "training" is the
     * predicted projection), and its predictions (every other key) are
     * llmplan's own output, not read */
    const bool plan = cJSON_IsObject(root) && cJSON_HasObjectItem(root, "training_config") &&
                      (cJSON_HasObjectItem(root, "index") || cJSON_HasObjectItem(root, "feasible"));
    if (!plan) LP_TRY_GOTO(err, rc, lp_json_check_keys(&c, root, "", keys), cleanup);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!v) {
        rc = missing(&c, "model", "a model preset name or an inline object");
        goto cleanup;
    }
    LP_TRY_GOTO(err, rc, lp_json_model(&c, v, "model", &out->model), cleanup);
    v = cJSON_GetObjectItemCaseSensitive(root, "system");
    if (!v) {
        rc = missing(&c, "system", "a system preset name or an inline object");
        goto cleanup;
    }
    LP_TRY_GOTO(err, rc, lp_json_system(&c, v, "system", &out->system), cleanup);
    LP_TRY_GOTO(err, rc, lp_json_pick_price(&c, root, &out->system, 1), cleanup);
    LP_TRY_GOTO(err, rc, lp_json_root_tp_across(&c, root, &out->system, 1), cleanup);
    v = cJSON_GetObjectItemCaseSensitive(root, "parallel");
    bool dp_given = false;
    if (v) {
        dp_given = cJSON_GetObjectItemCaseSensitive(v, "dp") != NULL;
        LP_TRY_GOTO(err, rc, lp_json_parallel(&c, v, "parallel", &out->par), cleanup);
    }
    const char *tkey = plan ? "training_config" : "training";
    v = cJSON_GetObjectItemCaseSensitive(root, tkey);
    if (!v) {
        rc = missing(&c, "training", "an object {global_batch, precision, ...}");
        goto cleanup;
    }
    LP_TRY_GOTO(err, rc, lp_json_training(&c, v, tkey, &out->train), cleanup);
    v = cJSON_GetObjectItemCaseSensitive(root, "framework");
    if (v) LP_TRY_GOTO(err, rc, lp_json_framework(&c, v, "framework", &out->fw), cleanup);
    LP_TRY_GOTO(err, rc, lp_json_check_graph_scope(&c, &out->model, &out->fw, "framework"),
                cleanup);
    LP_TRY_GOTO(err, rc, check_op_sac(&c, out), cleanup);
    LP_TRY_GOTO(err, rc, check_bf16_layers(&c, out), cleanup);
    LP_TRY_GOTO(err, rc, check_fsdp2_zero(&c, out), cleanup);
    LP_TRY_GOTO(err, rc, check_fw_gap(&c, out), cleanup);
    /* the GPU count tp*pp*cp*dp in 64 bits: each degree fits an int, their
     * product may not (LP_MAX_GPUS) */
    const int64_t mp = (int64_t)out->par.tp * out->par.pp * out->par.cp;
    if (mp * out->par.dp > LP_MAX_GPUS) {
        rc = lp_err_set_at(err, LP_EINVAL, __FILE__, __LINE__,
                           "%s: key 'parallel': expected tp*pp*cp*dp <= %d GPUs, got %lld", origin,
                           LP_MAX_GPUS, (long long)(mp * out->par.dp));
        goto cleanup;
    }
    /* "gpus" (extension): derive dp = gpus / (tp*pp*cp) when dp is not given */
    int gpus = 0;
    LP_TRY_GOTO(err, rc, lp_json_int32(&c, root, "", "gpus", false, 1, LP_MAX_GPUS, &gpus),
                cleanup);
    if (gpus > 0) {
        if (!dp_given) {
            if (gpus % mp != 0) {
                rc = lp_err_set_at(err, LP_EINVAL, __FILE__, __LINE__,
                                   "%s: key 'gpus': expected a multiple of tp*pp*cp = %lld, got %d",
                                   origin, (long long)mp, gpus);
                goto cleanup;
            }
            out->par.dp = (int)(gpus / mp);
        } else if (gpus != mp * out->par.dp) {
            rc = lp_err_set_at(err, LP_EINVAL, __FILE__, __LINE__,
                               "%s: key 'gpus': expected tp*pp*cp*dp = %lld, got %d", origin,
                               (long long)(mp * out->par.dp), gpus);
            goto cleanup;
        }
    }
cleanup:
    cJSON_Delete(root);
    return rc;
}

int lp_load_run(const char *path, struct lp_run *out, struct lp_err *err)
{
    char *text = NULL;
    LP_TRY(err, lp_read_file(path, &text, NULL, err));
    int rc = lp_parse_run(text, path, out, err);
    free(text);
    if (rc < 0) lp_err_trace(err, __FILE__, __LINE__);
    return rc;
}

/* ---- listing ---- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int lp_list_presets(enum lp_preset_kind kind,
                    int (*fn)(const char *name, const char *path, void *arg), void *arg,
                    struct lp_err *err)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/%s", lp_data_dir(), kind_dir(kind));
    DIR *d = opendir(dir);
    if (!d) LP_FAIL(err, LP_EIO, "%s: cannot open preset directory: %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = LP_OK;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l < 6 || strcmp(de->d_name + l - 5, ".json") != 0 || de->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof(*names));
            if (!nn) {
                rc = lp_err_set_at(err, LP_ENOMEM, __FILE__, __LINE__, "out of memory");
                goto cleanup;
            }
            names = nn;
        }
        names[n] = strndup(de->d_name, l - 5);
        if (!names[n]) {
            rc = lp_err_set_at(err, LP_ENOMEM, __FILE__, __LINE__, "out of memory");
            goto cleanup;
        }
        n++;
    }
    if (n) qsort(names, n, sizeof(*names), cmp_str);
    for (size_t i = 0; i < n && rc >= 0; i++) {
        char path[PATH_MAX + 64];
        int w = snprintf(path, sizeof(path), "%s/%s.json", dir, names[i]);
        if (w < 0 || (size_t)w >= sizeof(path)) continue;
        rc = fn(names[i], path, arg);
    }
cleanup:
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    closedir(d);
    return rc;
}
