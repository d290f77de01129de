/* Kernel profiles: what one operator of a given kind and shape costs on one GPU.
 *
 * A profile is a set of tables, each an N-dimensional (N <= 4) grid of
 * positive values over positive axes, interpolated multilinearly in log-log
 * space (exact at grid points, monotone between monotone points, clamped with
 * a flag beyond the grid). The on-disk form is HDF5 (docs/profile-format.md);
 * the reader lives in src/io, the lookup here in the core, and no HDF5 call is
 * made per configuration.
 *
 * Two backends sit behind the same ops table (IOR style):
 *   - "table":    a profile loaded from HDF5 (measured or analytical);
 *   - "roofline": closed-form peak-FLOP/s and bandwidth model of a struct
 *                 lp_gpu with fixed efficiency terms, for tests and for GPUs
 *                 with no profile. */
#ifndef LLMPLAN_PROFILE_H
#define LLMPLAN_PROFILE_H

#include "llmplan/config.h"
#include "llmplan/cost.h"
#include "llmplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LP_PROFILE_SCHEMA_VERSION 1
#define LP_TABLE_MAX_DIMS 4
/* The most values one table may hold (2^24 doubles = 128 MiB; a measured
 * profile's tables hold thousands). Readers refuse a larger table before
 * they allocate anything for it. */
#define LP_TABLE_MAX_VALUES (1 << 24)

/* One interpolation table. Axes are strictly increasing and positive; value
 * has prod(dims) entries in row-major order (last axis fastest). spread, if
 * not NULL, holds the measured relative spread ((p90-p10)/median) per point. */
struct lp_table {
    int ndim;
    int dims[LP_TABLE_MAX_DIMS];
    char axis_name[LP_TABLE_MAX_DIMS][16];
    double *axis[LP_TABLE_MAX_DIMS];
    double *value;
    double *spread;
    /* Derived cache of log(axis) and log(value), built by lp_table_prepare
     * (NULL until then; lookups then take the logs themselves, ~3x slower).
     * A table edited after lp_table_prepare must be prepared again. */
    double *log_axis[LP_TABLE_MAX_DIMS];
    double *log_value;
};

/* One provenance attribute (key = value), e.g. "gemm_max_frac_bf16" =
 * "0.869 (K0002: A100 SXM MAMF 271.2 of 312 TFLOP/s)". */
#define LP_PROV_MAX 96
#define LP_PROV_KEY 48
#define LP_PROV_VALUE 208
struct lp_prov {
    char key[LP_PROV_KEY];
    char value[LP_PROV_VALUE];
};

/* Meaning of the values:
 *   gemm, attn, mem: seconds per call;
 *   coll:            achieved bus bandwidth as a fraction of the tier's
 *                    nominal per-GPU bandwidth (nccl-tests busbw / link bw),
 *                    over axes (bytes, ranks). Collective time is then the
 *                    alpha-beta model of the run's system divided by it. */
struct lp_profile {
    char gpu[LP_NAME_LEN];
    char source[16];   /* "measured" | "analytical" */
    char path[512];    /* file it was read from ("" if built in memory) */
    uint64_t checksum; /* FNV-1a 64 of all table values, as stored */
    /* gemm[layout][prec]: axes (m, n, k) */
    struct lp_table gemm[LP_GEMM_LAYOUT_COUNT][LP_PREC_TABLES];
    /* attn[impl][causal][pass][prec]: axes (batch_heads, seq, head_dim) */
    struct lp_table attn[LP_ATTN_IMPL_COUNT][2][LP_PASS_COUNT][LP_PREC_TABLES];
    /* mem[kind]: axis (bytes) */
    struct lp_table mem[LP_MEM_KIND_COUNT];
    /* coll[op][tier]: axes (msg_bytes, ranks) */
    struct lp_table coll[LP_COLL_COUNT][LP_TIER_COUNT];
    /* Fixed per-kernel launch overhead folded into the tables (seconds);
     * informational. */
    double launch_s;
    /* Provenance key/values (the model's constants and their sources for an
     * analytical profile; tool/GPU details for a measured one). Written as
     * root attributes; read back from every root attribute the schema does
     * not name itself. */
    int nprov;
    struct lp_prov prov[LP_PROV_MAX];
};

/* Tables. lp_table_alloc allocates axes/values for the given dims (values
 * zeroed); lp_table_free releases them and zeroes the struct (NULL-safe). */
int lp_table_alloc(struct lp_table *t, int ndim, const int *dims, bool with_spread,
                   struct lp_err *err);
void lp_table_free(struct lp_table *t);
int lp_table_copy(struct lp_table *dst, const struct lp_table *src, struct lp_err *err);
/* Build (or rebuild) the log cache of a filled table: the fast lookup path.
 * lp_profile_prepare does every present table; the HDF5 reader and
 * lp_profile_synth return prepared profiles. */
int lp_table_prepare(struct lp_table *t, struct lp_err *err);
static inline bool lp_table_present(const struct lp_table *t)
{
    return t->ndim > 0 && t->value != NULL;
}

/* Interpolate at x[0..ndim-1]. Multilinear in log(axis)/log(value) space;
 * *clamped (may be NULL) is set when any coordinate lay outside the grid.
 * Below an axis's first point the edge value is used. Above its last point
 * the edge value is scaled by (x / x_last)^p, where p is the axis's
 * extrapolation power lp_table_axis_pow(axis_name): 1 for the size-like axes
 * "m", "n", "k", "batch_heads", "bytes" (time proportional to work), 2 for
 * "seq" (attention work grows with seq^2), 0 (clamp) for every other axis
 * ("head_dim", "msg_bytes", "ranks", ...). Exact at grid points (the stored
 * double is returned); NaN in gives NaN out; allocation-free. */
double lp_table_lookup(const struct lp_table *t, const double *x, bool *clamped);
/* Same with explicit per-axis powers (pow[d] >= 0; NULL = all clamp). */
double lp_table_lookup_pow(const struct lp_table *t, const double *x, const double *pow,
                           bool *clamped);
/* Extrapolation power of an axis name (see lp_table_lookup). */
double lp_table_axis_pow(const char *axis_name);

/* Check axes increasing/positive and values finite/positive; returns LP_OK or
 * LP_EFORMAT with the table's name and the first bad index in err. */
int lp_table_check(const struct lp_table *t, const char *name, struct lp_err *err);

/* Plausibility against the GPU's datasheet (src/core/plausible.c,
 * docs/profile-format.md): every time value within LP_PLAUSIBLE_FAST x
 * faster and LP_PLAUSIBLE_SLOW x (+ LP_PLAUSIBLE_FIXED_S) slower than the
 * datasheet roofline of its operation; collective fractions bounded
 * likewise. LP_EFORMAT names the
 * table, the point and the bounds. Peaks are boost-clock datasheet figures
 * that kernels do not exceed; 1.5 leaves room for a datasheet's rounding
 * and a measurement's timer. 100x + 10 ms admits a launch-bound or badly
 * shaped kernel, never 1e308 s. A collective's fraction f of a message of
 * b bytes over n ranks implies a time b * busfactor(n) / (f * link); with
 * link = LP_PLAUSIBLE_LINK_BPS (above any per-GPU link: NVLink 5 moves
 * 900 GB/s each way) that time must stay under the same slow bound, and f
 * under LP_PLAUSIBLE_COLL_MAX (no in-network reduction reaches 4x). */
#define LP_PLAUSIBLE_FAST 1.5
#define LP_PLAUSIBLE_SLOW 100.0
#define LP_PLAUSIBLE_FIXED_S 1e-2
#define LP_PLAUSIBLE_LINK_BPS 2e12
#define LP_PLAUSIBLE_STEP_S 1e-4
#define LP_PLAUSIBLE_COLL_MAX 4.0
int lp_profile_plausible(const struct lp_profile *p, const struct lp_gpu *gpu, struct lp_err *err);

/* The profile's GPU (its "gpu" attribute) against the system's GPU preset
 * name (issue #17: an A100 profile on a DGX H100 run gave MFU 17% instead
 * of 42%, silently). Different names: LP_EINVAL naming both and the way
 * out, unless allow (then *mismatch = true and LP_OK; the caller warns and
 * flags its output). */
int lp_profile_match_gpu(const struct lp_profile *p, const struct lp_gpu *gpu, bool allow,
                         bool *mismatch, struct lp_err *err);

/* Profile object lifetime. create returns an empty profile. */
int lp_profile_create(struct lp_profile **out, struct lp_err *err);
void lp_profile_destroy(struct lp_profile **p);
uint64_t lp_profile_checksum(const struct lp_profile *p);
int lp_profile_prepare(struct lp_profile *p, struct lp_err *err);

/* Table families and the canonical slot order shared by the checksum, the
 * checker and the HDF5 reader/writer: gemm[layout][prec], then
 * attn[impl][causal][pass][prec], mem[kind], coll[op][tier]. */
enum lp_family { LP_FAM_GEMM = 0, LP_FAM_ATTN, LP_FAM_MEM, LP_FAM_COLL, LP_FAM_COUNT };
#define LP_PROFILE_SLOTS                                                                           \
    (LP_GEMM_LAYOUT_COUNT * LP_PREC_TABLES +                                                       \
     LP_ATTN_IMPL_COUNT * 2 * LP_PASS_COUNT * LP_PREC_TABLES + LP_MEM_KIND_COUNT +                 \
     LP_COLL_COUNT * LP_TIER_COUNT)
struct lp_slot {
    enum lp_family family;
    const char *path;              /* HDF5 group path, e.g. "/gemm/fwd/bf16" */
    int ndim;                      /* expected dimensions of the family */
    const char *const *axis_names; /* expected axis names (ndim of them) */
    const char *unit;              /* "s" or "fraction" */
    bool required;                 /* lp_profile_check refuses a profile without it */
};
/* Slot i in [0, LP_PROFILE_SLOTS): its description and its table in p. */
const struct lp_slot *lp_profile_slot(int i);
struct lp_table *lp_profile_slot_table(struct lp_profile *p, int i);
const struct lp_table *lp_profile_slot_table_c(const struct lp_profile *p, int i);

/* Append a provenance attribute (truncated to fit; LP_EINVAL when full). */
int lp_profile_add_prov(struct lp_profile *p, const char *key, const char *value,
                        struct lp_err *err);
const char *lp_profile_get_prov(const struct lp_profile *p, const char *key);

/* The collective reference of a profile: the links and the nodes its
 * collective fractions were made for (root attributes coll_intra_bw_GBps,
 * coll_intra_latency_us, coll_inter_bw_GBps, coll_inter_latency_us,
 * coll_gpus_per_node; synth.c writes them). An absent attribute gives 0:
 * unknown, the fractions used as they are (docs/profile-format.md). A
 * present one must be a positive number (coll_gpus_per_node a positive
 * integer): otherwise LP_EFORMAT with *bad its key (the file's reader
 * refuses the file with it). */
struct lp_profile_coll_ref {
    double intra_bw_Bps, intra_latency_s, inter_bw_Bps, inter_latency_s;
    int gpus_per_node;
};
int lp_profile_coll_ref(const struct lp_profile *p, struct lp_profile_coll_ref *out,
                        const char **bad);

/* Full validation: every table lp_table_check'd, required tables present
 * (gemm fwd/dgrad/wgrad in bf16, fused+unfused attention fwd/bwd in bf16,
 * every mem kind; collectives optional). Monotonicity of time in size is also
 * checked (warnings counted into *nonmonotone if not NULL). */
int lp_profile_check(const struct lp_profile *p, int *nonmonotone, struct lp_err *err);
/* The same, with `require` false: the tables present are checked, none is
 * required (a measured profile whose run left some out, for `llmplan
 * profile compare`). */
int lp_profile_check_opt(const struct lp_profile *p, bool require, int *nonmonotone,
                         struct lp_err *err);

/* Build an analytical profile for a GPU (the `llmplan profile synth` model;
 * formulas and constants in docs/profile-format.md and the file's attrs). */
int lp_profile_synth(const struct lp_gpu *gpu, const struct lp_system *ref_system,
                     struct lp_profile **out, struct lp_err *err);

/* The layout and NCCL model an analytical profile's inter-node all-reduce,
 * all-gather and reduce-scatter were calibrated at, for a profile built
 * for nodes of gpus_per_node GPUs (its coll_gpus_per_node attribute):
 * what lp_coll_time carries to a group's own layout (cost.h coll_cal). */
void lp_synth_coll_cal(int gpus_per_node, struct lp_coll_cal *cal);

#ifdef __cplusplus
}
#endif

#endif
