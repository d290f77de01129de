/* Private helpers of src/io for reading JSON with precise errors: every
 * message names the file, the key (dotted path) and what was expected. */
#ifndef LLMPLAN_IO_JSON_UTIL_H
#define LLMPLAN_IO_JSON_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "llmplan/config.h"
#include "llmplan/status.h"

struct lp_jctx {
    const char *file; /* shown in messages */
    struct lp_err *err;
    /* the fitted constants frameworks default to (data/calibration.json);
     * NULL = the built-in ones */
    const struct lp_calib *cal;
};

/* Build "prefix.key" into buf. */
const char *lp_jpath(char *buf, size_t len, const char *prefix, const char *key);

/* Parse text; error names the file and the byte offset of the problem. */
int lp_json_parse(const struct lp_jctx *c, const char *text, cJSON **out);

/* Refuse keys not in the NULL-terminated allowed list. */
int lp_json_check_keys(const struct lp_jctx *c, const cJSON *obj, const char *path,
                       const char *const *allowed);

/* Typed getters. `required`: absence is an error; else *out keeps its value. */
int lp_json_int(const struct lp_jctx *c, const cJSON *obj, const char *path, const char *key,
                bool required, int64_t min, int64_t max, int64_t *out);
int lp_json_int32(const struct lp_jctx *c, const cJSON *obj, const char *path, const char *key,
                  bool required, int min, int max, int *out);
int lp_json_num(const struct lp_jctx *c, const cJSON *obj, const char *path, const char *key,
                bool required, double min, bool min_exclusive, double *out);
int lp_json_bool(const struct lp_jctx *c, const cJSON *obj, const char *path, const char *key,
                 bool required, bool *out);
int lp_json_str(const struct lp_jctx *c, const cJSON *obj, const char *path, const char *key,
                bool required, char *out, size_t len);
/* A string that must be one of names[0..n-1]; *out gets its index. */
/* A name table: an int-indexed function (NULL past the last name) or a
 * NULL-terminated array; the one table of an enum, which its parser reads. */
struct lp_name_src {
    const char *(*fn)(int);
    const char *const *tab;
};
/* "\"a\", \"b\" or \"c\"" (`last` joins the last two: " or ", or ", " for a
 * list) from a name table; into buf, which it returns. */
const char *lp_json_names(char *buf, size_t len, struct lp_name_src n, const char *last);
#define NAMES_FN(buf, f) lp_json_names(buf, sizeof(buf), (struct lp_name_src){.fn = (f)}, " or ")
#define NAMES_TAB(buf, t) lp_json_names(buf, sizeof(buf), (struct lp_name_src){.tab = (t)}, " or ")

int lp_json_enum(const struct lp_jctx *c, const cJSON *obj, const char *path, const char *key,
                 bool required, int (*parse)(const char *, int *), const char *expected, int *out);

/* Objects of the contract. `item` is a preset name (string) or an inline object. */
int lp_json_model(const struct lp_jctx *c, const cJSON *item, const char *path,
                  struct lp_model *out);
int lp_json_gpu(const struct lp_jctx *c, const cJSON *item, const char *path, struct lp_gpu *out);
int lp_json_system(const struct lp_jctx *c, const cJSON *item, const char *path,
                   struct lp_system *out);
int lp_json_parallel(const struct lp_jctx *c, const cJSON *obj, const char *path,
                     struct lp_parallel *out);
int lp_json_training(const struct lp_jctx *c, const cJSON *obj, const char *path,
                     struct lp_training *out);
struct lp_trust;
/* A plan's "trust": the validated domain nearest to it (its framework and
 * GPU), whether the plan lies inside it, and its error band; NULL when out
 * of memory (src/io/trust_json.c). */
cJSON *lp_trust_json(const struct lp_trust *t, const struct lp_run *run, int gpus,
                     double iteration_time_s);
/* training.finetune {method: "lora", rank, base_bits, targets, dropout}
 * into t's lora_* fields (also a value of a sweep's "finetune" dimension). */
int lp_json_finetune(const struct lp_jctx *c, const cJSON *ft, const char *path,
                     struct lp_training *t);
int lp_json_framework(const struct lp_jctx *c, const cJSON *item, const char *path,
                      struct lp_framework_opts *out);
/* The CUDA-graph scope "moe" with a dropless MoE model is refused, as
 * Megatron-Core's TransformerConfig refuses cuda_graph_scope "moe" without
 * a capacity factor: fw_key names the framework in the error. */
int lp_json_check_graph_scope(const struct lp_jctx *c, const struct lp_model *m,
                              const struct lp_framework_opts *fw, const char *fw_key);
/* A framework's defaults with the context's calibration. */
void lp_json_framework_defaults(const struct lp_jctx *c, enum lp_framework kind,
                                struct lp_framework_opts *out);

/* The root key "prices" (a name or date of a dated price) applied to n
 * systems: each must have it (lp_system_pick_price). */
int lp_json_pick_price(const struct lp_jctx *c, const cJSON *root, struct lp_system *sys, int n);
/* The root key "tp_across_nodes" of a run, plan or sweep: true lets TP span
 * the nodes of each of the n systems (as the system key of that name; a
 * plan echoes it there, beside the system's name). */
int lp_json_root_tp_across(const struct lp_jctx *c, const cJSON *root, struct lp_system *sys,
                           int n);

/* A model entry {"generator": {...}} (shapes_json.c): is item one, and its
 * shapes (at most cap into out; *n: how many there are). */
bool lp_json_is_generator(const cJSON *item);
int lp_json_generator(const struct lp_jctx *c, const cJSON *item, const char *path,
                      struct lp_model *out, int cap, int *n);

#endif
