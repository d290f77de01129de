/* A model entry {"generator": {...}} of a sweep (include/llmplan/shapes.h):
 *
 *   {"generator": {"base": "gpt3-175b",
 *                  "layers": {"min": 8, "max": 128, "step": 4},
 *                  "hidden": {"min": 1024, "max": 16384, "step": 256},
 *                  "head_dim": 128, "ffn_mult": 4, "ffn_multiple_of": 1,
 *                  "aspect": {"min": 32, "max": 256}}}
 *
 * base: a model preset or inline model, the template of every shape. */
#include <stdio.h>
#include <string.h>

#include "json_util.h"
#include "llmplan/shapes.h"

bool lp_json_is_generator(const cJSON *item)
{
    return cJSON_IsObject(item) && cJSON_GetObjectItemCaseSensitive(item, "generator");
}

static int range(const struct lp_jctx *c, const cJSON *g, const char *path, const char *key,
                 bool required, int *mn, int *mx, int *step)
{
    char kp[256];
    lp_jpath(kp, sizeof(kp), path, key);
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(g, key);
    if (!r && !required) return LP_OK;
    static const char *const keys[] = {"min", "max", "step", NULL};
    if (!cJSON_IsObject(r))
        LP_FAIL(c->err, LP_EINVAL, "%s: key '%s': expected an object {min, max, step}", c->file,
                kp);
    LP_TRY(c->err, lp_json_check_keys(c, r, kp, keys));
    LP_TRY(c->err, lp_json_int32(c, r, kp, "min", true, 1, 1 << 24, mn));
    LP_TRY(c->err, lp_json_int32(c, r, kp, "max", true, 1, 1 << 24, mx));
    LP_TRY(c->err, lp_json_int32(c, r, kp, "step", false, 1, 1 << 24, step));
    return LP_OK;
}

int lp_json_generator(const struct lp_jctx *c, const cJSON *item, const char *path,
                      struct lp_model *out, int cap, int *n)
{
    static const char *const outer[] = {"generator", NULL};
    static const char *const keys[] = {"base",     "layers",   "hidden",
                                       "head_dim", "ffn_mult", "ffn_multiple_of",
                                       "aspect",   "comment",  NULL};
    struct lp_err *err = c->err;
    char kp[256];
    LP_TRY(err, lp_json_check_keys(c, item, path, outer));
    lp_jpath(kp, sizeof(kp), path, "generator");
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(item, "generator");
    if (!cJSON_IsObject(g))
        LP_FAIL(err, LP_EINVAL, "%s: key '%s': expected an object {base, layers, hidden, ...}",
                c->file, kp);
    LP_TRY(err, lp_json_check_keys(c, g, kp, keys));
    char bp[256];
    lp_jpath(bp, sizeof(bp), kp, "base");
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(g, "base");
    if (!b)
        LP_FAIL(err, LP_EINVAL, "%s: missing key '%s': expected a model preset or inline model",
                c->file, bp);
    struct lp_model base;
    LP_TRY(err, lp_json_model(c, b, bp, &base));
    struct lp_shape_gen gen;
    lp_shape_gen_defaults(&gen, &base);
    LP_TRY(err,
           range(c, g, kp, "layers", true, &gen.layers_min, &gen.layers_max, &gen.layers_step));
    LP_TRY(err,
           range(c, g, kp, "hidden", true, &gen.hidden_min, &gen.hidden_max, &gen.hidden_step));
    LP_TRY(err, lp_json_int32(c, g, kp, "head_dim", false, 1, 1 << 16, &gen.head_dim));
    LP_TRY(err, lp_json_num(c, g, kp, "ffn_mult", false, 0.0, true, &gen.ffn_mult));
    LP_TRY(err,
           lp_json_int32(c, g, kp, "ffn_multiple_of", false, 1, 1 << 16, &gen.ffn_multiple_of));
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(g, "aspect");
    if (a) {
        static const char *const akeys[] = {"min", "max", NULL};
        char ap[256];
        lp_jpath(ap, sizeof(ap), kp, "aspect");
        if (!cJSON_IsObject(a))
            LP_FAIL(err, LP_EINVAL, "%s: key '%s': expected an object {min, max}", c->file, ap);
        LP_TRY(err, lp_json_check_keys(c, a, ap, akeys));
        LP_TRY(err, lp_json_num(c, a, ap, "min", false, 0.0, false, &gen.aspect_min));
        LP_TRY(err, lp_json_num(c, a, ap, "max", false, 0.0, true, &gen.aspect_max));
    }
    int rc = lp_shapes_generate(&gen, &base, out, cap, n, err);
    if (rc < 0) {
        char msg[LP_ERR_MSG];
        snprintf(msg, sizeof(msg), "%s", err->msg);
        LP_FAIL(err, rc, "%s: key '%s': %s", c->file, kp, msg);
    }
    if (*n == 0)
        LP_FAIL(err, LP_EINVAL, "%s: key '%s': expected at least one shape, the ranges give none",
                c->file, kp);
    return LP_OK;
}
