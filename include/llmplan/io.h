/* File formats: JSON presets and run descriptions (cJSON), HDF5 profiles.
 * The only module that includes cJSON.h or hdf5.h (besides the MPI driver's
 * parallel sweep dataset). Every error names the file, the key and what was
 * expected, in one line. */
#ifndef LLMPLAN_IO_H
#define LLMPLAN_IO_H

#include <stdio.h>

#include "llmplan/config.h"
#include "llmplan/profile.h"
#include "llmplan/search.h"
#include "llmplan/sim.h"
#include "llmplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where presets live: $LLMPLAN_DATA if set, else the compiled-in source
 * tree's data/ (LLMPLAN_DATA_DIR), else the installed share dir. */
const char *lp_data_dir(void);

/* The fitted constants (struct lp_calib, docs/calibration.md) from a file
 * scripts/calibrate writes; lp_calib_load_default reads calibration.json
 * under lp_data_dir(), or gives lp_calib_builtin's values when there is none.
 * A malformed file is an error naming the file and the key. Run and sweep
 * parsing take their frameworks' defaults from it. */
int lp_calib_load(const char *path, struct lp_calib *out, struct lp_err *err);
/* Read once per process (per data directory); not thread-safe. */
int lp_calib_load_default(struct lp_calib *out, struct lp_err *err);

/* Validation error bands per domain (framework x GPU), the file
 * `scripts/validate --bands` writes (src/io/trust_json.c). */
struct lp_trust;
int lp_trust_load(const char *path, struct lp_trust **out, struct lp_err *err);
/* The shipped bands, data/trust_bands.json under lp_data_dir(): *out NULL
 * (and LP_OK) when the file is absent, an error when it is malformed. */
int lp_trust_load_default(struct lp_trust **out, struct lp_err *err);
/* One result's "trust" (the validated domain nearest to it and its error
 * band, as in plans.json) as compact JSON text (free() it), NULL when out
 * of memory; and as one line for a summary (truncated to n). */
char *lp_trust_json_text(const struct lp_trust *t, const struct lp_run *run, int gpus,
                         double iteration_time_s);
void lp_trust_line(const struct lp_trust *t, const struct lp_run *run, int gpus,
                   double iteration_time_s, char *buf, size_t n);
/* NULL-safe; NULLs the handle. */
void lp_trust_destroy(struct lp_trust **t);

enum lp_preset_kind { LP_PRESET_MODEL = 0, LP_PRESET_GPU, LP_PRESET_SYSTEM };

/* Load a preset by name (data/<kind>s/<name>.json). */
int lp_load_model(const char *name, struct lp_model *out, struct lp_err *err);
int lp_load_gpu(const char *name, struct lp_gpu *out, struct lp_err *err);
int lp_load_system(const char *name, struct lp_system *out, struct lp_err *err);

/* List preset names of a kind, sorted; calls fn for each. */
int lp_list_presets(enum lp_preset_kind kind,
                    int (*fn)(const char *name, const char *path, void *arg), void *arg,
                    struct lp_err *err);

/* A run description (docs/design.md contract). */
int lp_load_run(const char *path, struct lp_run *out, struct lp_err *err);
int lp_parse_run(const char *json_text, const char *origin, struct lp_run *out, struct lp_err *err);

/* Read a whole file into a NUL-terminated malloc'd buffer. */
int lp_read_file(const char *path, char **out, size_t *len, struct lp_err *err);

/* Write a file atomically: path.tmp.<pid>, fsync, rename. */
int lp_write_file_atomic(const char *path, const void *data, size_t len, struct lp_err *err);

/* The same, streamed: open path.tmp.<pid>, write to .f, then commit (flush,
 * fsync, rename; the temporary is removed on failure) or abort. */
struct lp_atomic {
    FILE *f;
    char path[4096], tmp[4160];
};
int lp_atomic_open(const char *path, struct lp_atomic *out, struct lp_err *err);
int lp_atomic_commit(struct lp_atomic *a, struct lp_err *err);
void lp_atomic_abort(struct lp_atomic *a);

/* sweep.h5 (docs/search.md) as CSV: one header line of the column names in
 * the file's "columns" order, one line per row; enumerations as their
 * names, NaN as "NaN". Written atomically. */
int lp_sweep_export_csv(const char *h5_path, const char *csv_path, struct lp_err *err);

/* The report page of a search's output directory (DIR/plans.json and
 * DIR/sweep.h5) into out_path, one self-contained HTML file from the
 * template data/report/report.html (docs/report.md). Written atomically. */
int lp_report_write(const char *dir, const char *out_path, struct lp_err *err);

/* simulate --json output (one object, docs/design.md). Caller frees *out. */
int lp_result_to_json(const struct lp_run *run, const struct lp_result *res, bool with_config,
                      char **out, struct lp_err *err);

/* The same as one line (no newlines), for JSON-lines output. */
int lp_result_to_json_line(const struct lp_run *run, const struct lp_result *res, bool with_config,
                           char **out, struct lp_err *err);

/* Chrome trace-event JSON of a simulated timeline (docs/simulator.md,
 * "Timeline"), at a level of detail: STAGE one span per pipeline stage's
 * passes; MICROBATCH every forward / backward pass of every micro-batch,
 * p2p, DP synchronisation, optimizer, and a memory counter per stage; OP
 * also each pass's layers by operator class, from the result's own per-layer
 * breakdown (layer_fwd_s / layer_bwd_s). */
enum lp_trace_detail { LP_TRACE_STAGE = 0, LP_TRACE_MICROBATCH, LP_TRACE_OP, LP_TRACE_COUNT };
const char *lp_trace_detail_name(enum lp_trace_detail d);
int lp_trace_detail_parse(const char *s, enum lp_trace_detail *out);
/* order: the layer's kernel order (lp_sim_trace), or NULL for class order */
int lp_trace_write(const char *path, const struct lp_run *run, const struct lp_result *res,
                   const struct lp_event *ev, int n, const struct lp_op_order *order,
                   enum lp_trace_detail detail, struct lp_err *err);
/* Simulate run with a timeline and write it to path (lp_sim_trace, then
 * lp_trace_write); an infeasible configuration is an error naming its
 * reason. */
int lp_trace_run(struct lp_sim *sim, const struct lp_run *run, struct lp_result *res,
                 const char *path, enum lp_trace_detail detail, struct lp_err *err);

/* HDF5 profiles (docs/profile-format.md). attrs: extra provenance key/value
 * pairs written as root string attributes (may be NULL / 0). */
struct lp_kv {
    const char *key;
    const char *value;
};
int lp_profile_read_h5(const char *path, struct lp_profile **out, struct lp_err *err);
/* The same, without requiring any table (lp_profile_check_opt): what a
 * measured run left out stays absent. Only for reading, never simulating. */
int lp_profile_read_h5_partial(const char *path, struct lp_profile **out, struct lp_err *err);
int lp_profile_write_h5(const char *path, const struct lp_profile *p, const struct lp_kv *attrs,
                        int nattrs, struct lp_err *err);
/* Set one root attribute of an existing profile file in place, as a string
 * or (as_int) a 32-bit integer: schema migrations, and tests of the reader's
 * refusals. The checksum covers tables only, so it is not affected. */
int lp_profile_patch_attr_h5(const char *path, const char *key, const char *value, bool as_int,
                             struct lp_err *err);
/* Print a summary (profile info). */
int lp_profile_info_h5(const char *path, FILE *f, struct lp_err *err);

/* Default profile file for a GPU preset: data/profiles/<gpu>.h5 */
int lp_profile_default_path(const char *gpu_name, char *buf, size_t len);
/* The profiles that are not files ("synth", "roofline"), by position; NULL
 * past the last. */
const char *lp_profile_builtin_name(int i);

/* The cost model of one system, as every command chooses it (one rule,
 * src/io/cost_model.c): which profile applies (the command line's, the
 * system's own, the sweep's, data/profiles/<gpu>.h5), and loading it. A
 * profile file measured on another GPU is refused unless allow_mismatch
 * (then *mismatch is set and the caller warns with the text of
 * lp_profile_mismatch_msg and flags its output). *prof is owned by the caller
 * (NULL for roofline). used gets the path, "roofline" or "synth:<gpu>". */
const char *lp_profile_choice(const char *cli_arg, const struct lp_system *sys,
                              const char *sweep_default);
int lp_cost_model_choose(const char *choice, const struct lp_system *sys, bool allow_mismatch,
                         struct lp_profile **prof, struct lp_cost_model *cm, char *used,
                         size_t used_len, bool *mismatch, struct lp_err *err);
/* The warning a command prints when a profile of another GPU is allowed. */
void lp_profile_mismatch_msg(char *buf, size_t len, const char *cmd, const struct lp_profile *prof,
                             const struct lp_system *sys);

/* ---- sweeps (src/io/sweep_json.c) ---- */

/* Parse a sweep (docs/search.md). origin names the file in messages. */
int lp_sweep_parse(const char *json_text, const char *origin, struct lp_sweep **out,
                   struct lp_err *err);
int lp_sweep_load(const char *path, struct lp_sweep **out, struct lp_err *err);
/* NULL-safe; NULLs the handle. */
void lp_sweep_destroy(struct lp_sweep **sw);

/* ---- plans.json (src/io/plans_json.c) ---- */

struct lp_plans_info {
    uint64_t space_size;
    double wall_s;       /* varies between runs */
    int ranks;           /* varies between runs */
    const char *sweep;   /* sweep file, as given */
    const char *profile; /* cost model(s) used, for provenance */
    double tokens;       /* the sweep's token budget (selects the cost objective) */
    /* "" or the systems run with another GPU's profile (--allow-profile-mismatch) */
    const char *profile_mismatch;
    const struct lp_sweep *sweep_desc; /* constraints, best_by and the names of groups */
    /* validation bands (data/trust_bands.json): every plan gets "trust";
     * NULL: none */
    const struct lp_trust *trust;
    /* --prune: stats.pruned and pruned_by_reason are written (absent
     * otherwise, so a run without it writes what it wrote before) */
    bool pruning;
};

/* Write plans.json atomically: time_optimal, cost_optimal (null when nothing
 * is feasible), pareto, top_time, top_cost, stats (docs/search.md). */
int lp_plans_write(const char *path, const struct lp_results *res, const struct lp_counts *c,
                   const struct lp_plans_info *info, struct lp_err *err);

#ifdef __cplusplus
}
#endif

#endif
