/* The fitted constants (struct lp_calib) from data/calibration.json, which
 * scripts/calibrate writes (docs/calibration.md):
 *
 *   { "format": 1,
 *     "provenance": { "command": ..., "date": ..., ... },   (not interpreted)
 *     "sustained_frac": 0.87, "host_overlap": 1.25,
 *     "host_op_us": { "megatron": 19, "hf": 91, ... },
 *     "attn_old_ratio": 0.52, "attn_old_ratio_source": "..." }
 *
 * The four constants are required; host_op_us may omit a framework (it keeps
 * the built-in value) and must omit those whose host time is derived
 * (lp_fw_host_derived: ddp, fsdp1, fsdp2). Unknown keys and values out of range are errors naming
 * the file and the key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "json_util.h"
#include "llmplan/io.h"

#define CALIB_FORMAT 1

static int parse_root(const struct lp_jctx *c, const cJSON *root, struct lp_calib *cal)
{
    static const char *const keys[] = {"format",
                                       "comment",
                                       "provenance",
                                       "sustained_frac",
                                       "host_overlap",
                                       "host_op_us",
                                       "attn_old_ratio",
                                       "attn_old_ratio_source",
                                       NULL};
    struct lp_err *err = c->err;
    if (!cJSON_IsObject(root)) LP_FAIL(err, LP_EINVAL, "%s: expected a JSON object", c->file);
    LP_TRY(err, lp_json_check_keys(c, root, "", keys));
    int format = 0;
    LP_TRY(err, lp_json_int32(c, root, "", "format", true, CALIB_FORMAT, CALIB_FORMAT, &format));
    const cJSON *prov = cJSON_GetObjectItemCaseSensitive(root, "provenance");
    if (prov && !cJSON_IsObject(prov))
        LP_FAIL(err, LP_EINVAL, "%s: key 'provenance': expected an object", c->file);
    LP_TRY(err, lp_json_num(c, root, "", "sustained_frac", true, 0, true, &cal->sustained_frac));
    if (cal->sustained_frac > 1.0)
        LP_FAIL(err, LP_EINVAL, "%s: key 'sustained_frac': expected a number in (0, 1], got %g",
                c->file, cal->sustained_frac);
    LP_TRY(err, lp_json_num(c, root, "", "host_overlap", true, 1.0, false, &cal->host_overlap));
    LP_TRY(err, lp_json_num(c, root, "", "attn_old_ratio", true, 0, true, &cal->attn_old_ratio));
    const cJSON *host = cJSON_GetObjectItemCaseSensitive(root, "host_op_us");
    if (!cJSON_IsObject(host))
        LP_FAIL(err, LP_EINVAL,
                "%s: key 'host_op_us': expected an object of framework names and microseconds",
                c->file);
    const cJSON *it = NULL;
    cJSON_ArrayForEach(it, host)
    {
        enum lp_framework fw;
        if (lp_framework_parse(it->string, &fw) != LP_OK)
            LP_FAIL(err, LP_EINVAL, "%s: key 'host_op_us.%.64s': not a framework name", c->file,
                    it->string);
        /* their host time is derived, not fitted: a figure here would be
         * silently ignored (config.c lp_eager_host_op_s) */
        if (lp_fw_host_derived(fw))
            LP_FAIL(err, LP_EINVAL,
                    "%s: key 'host_op_us.%s': expected no entry: %s's host time per kernel is "
                    "derived from published measurements, not fitted (docs/frameworks.md)",
                    c->file, it->string, it->string);
        double us = 0;
        LP_TRY(err, lp_json_num(c, host, "host_op_us", it->string, true, 0, false, &us));
        /* a division by the exact 1e6: the same double as the literal 19e-6 */
        cal->host_op_s[fw] = us / 1e6;
    }
    return LP_OK;
}

int lp_calib_load(const char *path, struct lp_calib *out, struct lp_err *err)
{
    char *text = NULL;
    size_t n = 0;
    LP_TRY(err, lp_read_file(path, &text, &n, err));
    struct lp_jctx c = {path, err, NULL};
    cJSON *root = NULL;
    struct lp_calib cal;
    lp_calib_builtin(&cal);
    int rc = lp_json_parse(&c, text, &root);
    if (rc == LP_OK) rc = parse_root(&c, root, &cal);
    cJSON_Delete(root);
    free(text);
    if (rc < 0) {
        lp_err_trace(err, __FILE__, __LINE__);
        return rc;
    }
    *out = cal;
    return LP_OK;
}

/* The process's one reading of the data directory's calibration.json,
 * owned by lp_calib_load_default (every loader that needs the fitted
 * constants calls it: each run description, each sweep, each cost model):
 * read on the first call and kept for the life of the process. Keyed by the
 * file's path, so a process that changes LLMPLAN_DATA (a test) reads the new
 * directory's file. A missing file is remembered as the built-in values; a
 * malformed one is not remembered: every call fails naming the file and the
 * key. Not thread-safe: the io's loaders run on one thread (the commands,
 * the search driver's calling thread). */
static struct {
    bool valid;
    char path[1024];
    struct lp_calib cal;
} g_calib;

int lp_calib_load_default(struct lp_calib *out, struct lp_err *err)
{
    char path[sizeof(g_calib.path)];
    snprintf(path, sizeof(path), "%s/calibration.json", lp_data_dir());
    if (g_calib.valid && !strcmp(g_calib.path, path)) {
        *out = g_calib.cal;
        return LP_OK;
    }
    struct lp_calib cal;
    FILE *f = fopen(path, "r");
    if (!f) { /* no file: the built-in values, which are the shipped file's */
        lp_calib_builtin(&cal);
    } else {
        fclose(f);
        LP_TRY(err, lp_calib_load(path, &cal, err));
    }
    g_calib.cal = cal;
    snprintf(g_calib.path, sizeof(g_calib.path), "%s", path);
    g_calib.valid = true;
    *out = cal;
    return LP_OK;
}
