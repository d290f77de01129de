/* sweep.h5: one row per evaluated configuration, written in parallel
 * (llmplan/sweep_h5.h).
 *
 * The parallel io (library llmplan_sweep_h5, docs/design.md "Layout"): the
 * dataset is written collectively by the MPI ranks that computed the rows,
 * through the MPI-IO driver, with no funnelling through rank 0. It knows the
 * sweep only through struct lp_h5_desc, which the driver (search/) builds.
 *
 * Layout (docs/search.md):
 *   /configs/<column>   1-D datasets, one per column of struct lp_row, all of
 *                       the same length, chunked (CHUNK_ROWS) + shuffle +
 *                       deflate, rows sorted by the configuration index
 *   /                   provenance attributes (version, command line, sweep
 *                       file and text, profile and checksum, date, ranks) and
 *                       the names behind the integer codes
 * Filtered datasets in parallel HDF5 need collective writes: every rank takes
 * part in every H5Dwrite / H5Dset_extent, selecting nothing when it has no
 * rows. */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "llmplan/config.h"
#include "llmplan/sim.h"
#include "llmplan/sweep_h5.h"

#define CHUNK_ROWS 16384
#define DEFLATE_LEVEL 1
/* 2: categorical columns as HDF5 enumerations, a units attribute per
 * column, NaN timing and cost figures for infeasible rows, and the columns
 * precision, framework, gpus_per_node, seq_len, price_per_gpu_hour_usd,
 * tokens_per_usd, zero3_gather_s (ZeRO-3 gathers, taken out of tp_comm_s)
 * (docs/search.md "Format versions") */
#define SWEEP_FORMAT_VERSION 2

/* C_ENUM: an int32 column stored as an HDF5 enumeration whose members are
 * the names of enum_names (h5py: h5py.check_enum_dtype) */
enum ctype { C_U64, C_I32, C_F64, C_ENUM };
enum cenum {
    E_NONE = 0,
    E_MODEL,
    E_SYSTEM,
    E_RECOMPUTE,
    E_SCHEDULE,
    E_REASON,
    E_PREC,
    E_FW,
    E_ATT,
    E_FT
};

struct col {
    const char *name;
    enum ctype type;
    enum cenum names;
    size_t off;
    const char *units; /* UDUNITS-style; "1" = dimensionless, "" = categorical */
    const char *doc;
};

#define COL(n, t, u, d)                                                                            \
    {                                                                                              \
#n, t, E_NONE, offsetof(struct lp_row, n), u, d                                            \
    }
#define ECOL(n, e, d)                                                                              \
    {                                                                                              \
#n, C_ENUM, e, offsetof(struct lp_row, n), "", d                                           \
    }
static const struct col cols[] = {
    COL(index, C_U64, "1", "configuration index in the sweep's space (plans.json \"index\")"),
    ECOL(model, E_MODEL, "model (enumeration; position in the root attribute model_names)"),
    ECOL(system, E_SYSTEM, "system (enumeration; position in the root attribute system_names)"),
    COL(gpus, C_I32, "GPU", "GPU count"),
    COL(tp, C_I32, "1", "tensor parallel degree"),
    COL(pp, C_I32, "1", "pipeline parallel degree"),
    COL(dp, C_I32, "1", "data parallel degree (gpus / (tp*pp*cp))"),
    COL(cp, C_I32, "1", "context parallel degree"),
    COL(ep, C_I32, "1", "expert parallel degree"),
    COL(vp, C_I32, "1", "virtual pipeline stages per rank (interleaving)"),
    COL(micro_batch, C_I32, "sequences", "micro-batch size (sequences)"),
    COL(sequence_parallel, C_I32, "1", "1 = sequence parallelism"),
    ECOL(recompute, E_RECOMPUTE, "recomputation (enumeration; position in recompute_names)"),
    COL(zero, C_I32, "1", "ZeRO stage (1 = distributed optimizer)"),
    ECOL(schedule, E_SCHEDULE, "pipeline schedule (enumeration; position in schedule_names)"),
    COL(feasible, C_I32, "1", "1 = fits and runs"),
    ECOL(reason, E_REASON, "why infeasible (enumeration; position in reason_names, 0 = none)"),
    COL(microbatches, C_I32, "1", "micro-batches per iteration"),
    COL(iteration_time_s, C_F64, "s", "iteration time (NaN when infeasible)"),
    COL(tokens_per_s, C_F64, "tokens/s", "throughput (NaN when infeasible)"),
    COL(mfu, C_F64, "1", "model FLOP utilisation, 0..1 (NaN when infeasible)"),
    COL(model_tflops_per_gpu, C_F64, "TFLOP/s", "model TFLOP/s per GPU (NaN when infeasible)"),
    COL(memory_per_gpu_gib, C_F64, "GiB", "memory per GPU"),
    COL(compute_s, C_F64, "s", "breakdown: compute of the critical stage"),
    COL(tp_comm_s, C_F64, "s", "breakdown: exposed TP/CP/EP collectives"),
    COL(pp_bubble_s, C_F64, "s", "breakdown: pipeline bubble"),
    COL(pp_comm_s, C_F64, "s", "breakdown: exposed pipeline p2p"),
    COL(dp_comm_exposed_s, C_F64, "s", "breakdown: exposed DP / ZeRO collectives"),
    COL(optimizer_s, C_F64, "s", "breakdown: optimizer step"),
    COL(weights_gib, C_F64, "GiB", "memory breakdown: weights"),
    COL(gradients_gib, C_F64, "GiB", "memory breakdown: gradients"),
    COL(optimizer_gib, C_F64, "GiB", "memory breakdown: optimizer state"),
    COL(activations_gib, C_F64, "GiB", "memory breakdown: activations"),
    COL(temporary_gib, C_F64, "GiB", "memory breakdown: temporary buffers"),
    COL(cost_per_iteration_usd, C_F64, "USD", "cost of one iteration (NaN when infeasible)"),
    COL(cost_usd, C_F64, "USD", "cost of the token budget (NaN when infeasible)"),
    COL(gpu_hours, C_F64, "GPU*h", "GPU-hours for the token budget (NaN when infeasible)"),
    COL(time_days, C_F64, "d", "days for the token budget (NaN when infeasible)"),
    ECOL(framework, E_FW,
         "framework (enumeration; position in framework_names, the sweep's framework entries)"),
    ECOL(attention, E_ATT, "attention kernel (enumeration; position in attention_names)"),
    ECOL(precision, E_PREC, "training precision (enumeration; position in precision_names)"),
    COL(gpus_per_node, C_I32, "GPU", "GPUs per node of the system"),
    COL(seq_len, C_I32, "tokens", "sequence length"),
    COL(price_per_gpu_hour_usd, C_F64, "USD/(GPU*h)", "the system's price per GPU-hour"),
    COL(tokens_per_usd, C_F64, "tokens/USD",
        "training tokens per dollar of the bill (src/core/bill.c: node billing, energy, goodput; "
        "NaN when infeasible)"),
    COL(zero3_gather_s, C_F64, "s",
        "breakdown: exposed ZeRO-3 / FSDP gathers in the passes (not in tp_comm_s since format 2)"),
    COL(global_batch, C_I32, "sequences", "global batch (sequences per iteration)"),
    ECOL(finetune, E_FT,
         "full training or the LoRA settings (enumeration; position in finetune_names)"),
};
#undef COL
#undef ECOL
#define NCOLS (sizeof(cols) / sizeof(cols[0]))
_Static_assert(NCOLS == LP_H5_NCOLS, "LP_H5_NCOLS (llmplan/sweep_h5.h) counts the columns");

struct lp_h5 {
    struct lp_h5_desc d; /* the driver's (its pointers stay valid while open) */
    int rank, size;
    hid_t file;
    hid_t dset[NCOLS];
    hid_t etype[NCOLS]; /* the enumeration type of a C_ENUM column (memory = file type) */
};

static hid_t file_type(enum ctype t)
{
    return t == C_U64 ? H5T_STD_U64LE : t == C_F64 ? H5T_IEEE_F64LE : H5T_STD_I32LE;
}
/* the memory type of column c: an enumeration is read and written as its
 * own type (native int32 base), so HDF5 converts nothing */
static hid_t mem_type(const struct lp_h5 *h, size_t c)
{
    enum ctype t = cols[c].type;
    return t == C_ENUM  ? h->etype[c]
           : t == C_U64 ? H5T_NATIVE_UINT64
           : t == C_I32 ? H5T_NATIVE_INT32
                        : H5T_NATIVE_DOUBLE;
}
static size_t type_size(enum ctype t)
{
    return t == C_I32 || t == C_ENUM ? 4 : 8;
}

#define H5_TRY(err, call, what)                                                                    \
    do {                                                                                           \
        errno = 0;                                                                                 \
        if ((call) < 0) {                                                                          \
            int e_ = errno;                                                                        \
            char sys_[200];                                                                        \
            LP_FAIL((err), LP_EHDF5, "%s: HDF5 error in %s%s", d->path, (what),                    \
                    h5_syserr(sys_, sizeof(sys_), e_));                                            \
        }                                                                                          \
    } while (0)
static const char *h5_syserr(char *buf, size_t len, int e);

/* What the innermost HDF5 error says about the system: the errno text of a
 * failed write (ENOSPC, EROFS, ...) that the generic message would drop. */
struct syserr {
    char text[160];
    bool driver; /* the innermost error is the file driver's (a system call) */
    bool seen;
};

static herr_t errno_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    struct syserr *se = data;
    (void)n;
    if (!se->seen) { /* the innermost entry comes first walking upward */
        se->seen = true;
        se->driver = e->func_name && !strncmp(e->func_name, "H5FD", 4);
    }
    if (se->text[0] || !e->desc) return 0;
    static const char *const keys[] = {"error message = '", "MPI error string is '"};
    for (int k = 0; k < 2; k++) {
        const char *m = strstr(e->desc, keys[k]);
        if (!m) continue;
        m += strlen(keys[k]);
        const char *end = strchr(m, '\'');
        snprintf(se->text, sizeof(se->text), "%.*s", end ? (int)(end - m) : 120, m);
        break;
    }
    return 0;
}

/* ": <system error>" of the current HDF5 error stack, or "" (call right
 * after the failing call: the next API call clears the stack). e: errno
 * right after the call (0 before it): the text when the innermost error is
 * a failed system call of the file driver that HDF5 did not describe (the
 * MPI-IO driver drops ENOSPC, EDQUOT, EIO...). */
static const char *h5_syserr(char *buf, size_t len, int e)
{
    struct syserr se;
    memset(&se, 0, sizeof(se));
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, errno_cb, &se);
    if (!se.text[0] && se.driver && e != 0) snprintf(se.text, sizeof(se.text), "%s", strerror(e));
    snprintf(buf, len, "%s%s", se.text[0] ? ": " : "", se.text);
    return buf;
}

/* Checksum of a column: the sum over its rows of a hash of (row position,
 * value bits), so that ranks add up their own rows in any order. The hash
 * is splitmix64's finaliser (Steele, Lea, Flood 2014). */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}
static uint64_t cell_hash(uint64_t pos, const void *value, size_t size)
{
    uint64_t bits = 0;
    if (size == 4) {
        uint32_t v;
        memcpy(&v, value, 4);
        bits = v;
    } else {
        memcpy(&bits, value, 8);
    }
    return mix64(bits + mix64(pos + UINT64_C(0x9e3779b97f4a7c15)));
}

static int attr_str(const struct lp_h5_desc *d, hid_t obj, const char *name, const char *value,
                    struct lp_err *err)
{
    if (H5Aexists(obj, name) > 0) H5_TRY(err, H5Adelete(obj, name), name);
    hid_t t = H5Tcopy(H5T_C_S1);
    size_t len = strlen(value);
    H5Tset_size(t, len ? len : 1);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc = a < 0 ? -1 : H5Awrite(a, t, len ? value : "");
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
    H5_TRY(err, rc, name);
    return LP_OK;
}

static int attr_u64(const struct lp_h5_desc *d, hid_t obj, const char *name, uint64_t v,
                    struct lp_err *err)
{
    if (H5Aexists(obj, name) > 0) H5_TRY(err, H5Adelete(obj, name), name);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, H5T_STD_U64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc = a < 0 ? -1 : H5Awrite(a, H5T_NATIVE_UINT64, &v);
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    H5_TRY(err, rc, name);
    return LP_OK;
}

/* A one-dimensional attribute of n values (an empty one for n = 0). */
static int attr_array(const struct lp_h5_desc *d, hid_t obj, const char *name, hid_t ftype,
                      hid_t mtype, int n, const void *buf, struct lp_err *err)
{
    hsize_t dim = (hsize_t)n;
    hid_t sp = n ? H5Screate_simple(1, &dim, NULL) : H5Screate(H5S_NULL);
    hid_t a = H5Acreate2(obj, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc = a < 0 ? -1 : (n ? H5Awrite(a, mtype, buf) : 0);
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    H5_TRY(err, rc, name);
    return LP_OK;
}

/* model_params: each model's parameter count (the driver's lp_model_params), in the
 * order of model_names: what a loss fit L(N, D) needs of a generated shape. */
static int attr_model_params(const struct lp_h5_desc *d, hid_t obj, struct lp_err *err)
{
    const char *name = "model_params";
    if (H5Aexists(obj, name) > 0) H5_TRY(err, H5Adelete(obj, name), name);
    return attr_array(d, obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, d->models.n, d->model_params,
                      err);
}

/* An array of fixed-length strings. */
static int attr_names(const struct lp_h5_desc *d, hid_t obj, const char *name,
                      const char *(*get)(const struct lp_h5_desc *, int), int n, struct lp_err *err)
{
    if (H5Aexists(obj, name) > 0) H5_TRY(err, H5Adelete(obj, name), name);
    size_t w = 1;
    for (int i = 0; i < n; i++)
        if (strlen(get(d, i)) + 1 > w) w = strlen(get(d, i)) + 1;
    size_t count = n > 0 ? (size_t)n : 1;
    char *buf = calloc(count, w);
    if (!buf) LP_FAIL(err, LP_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++)
        memcpy(buf + (size_t)i * w, get(d, i), strlen(get(d, i)));
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, w);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    int rc = attr_array(d, obj, name, t, t, n, buf, err);
    H5Tclose(t);
    free(buf);
    return rc;
}

static const char *model_name(const struct lp_h5_desc *d, int i)
{
    return d->models.name[i];
}
static const char *system_name(const struct lp_h5_desc *d, int i)
{
    return d->systems.name[i];
}
static const char *reason_name(const struct lp_h5_desc *d, int i)
{
    (void)d;
    return lp_reason_name((enum lp_reason)i);
}
static const char *recompute_name(const struct lp_h5_desc *d, int i)
{
    (void)d;
    return lp_recompute_name((enum lp_recompute)i);
}
static const char *framework_name(const struct lp_h5_desc *d, int i)
{
    return d->frameworks.name[i];
}
static const char *attention_name(const struct lp_h5_desc *d, int i)
{
    (void)d;
    return lp_attention_name(i != LP_ATTENTION_COUNT, (enum lp_attention)(i % LP_ATTENTION_COUNT));
}
static const char *precision_name(const struct lp_h5_desc *d, int i)
{
    (void)d;
    return lp_prec_name((enum lp_prec)i);
}
static const char *finetune_name(const struct lp_h5_desc *d, int i)
{
    return d->finetunes.name[i];
}
static const char *schedule_name(const struct lp_h5_desc *d, int i)
{
    (void)d;
    return lp_schedule_name((enum lp_schedule)i);
}

/* The names of each enumeration: the core's one table per enum (config.h,
 * sim.h), or the sweep's (the description's lists). */
static int enum_count(const struct lp_h5_desc *d, enum cenum e)
{
    switch (e) {
    case E_MODEL:
        return d->models.n;
    case E_SYSTEM:
        return d->systems.n;
    case E_RECOMPUTE:
        return LP_RECOMPUTE_COUNT;
    case E_SCHEDULE:
        return LP_SCHED_COUNT;
    case E_REASON:
        return LP_REASON_COUNT;
    case E_PREC:
        return LP_PREC_COUNT;
    case E_FW:
        return d->frameworks.n;
    case E_ATT:
        return LP_ATTENTION_COUNT + 1;
    case E_FT:
        return d->finetunes.n;
    case E_NONE:
        break;
    }
    return 0;
}
typedef const char *(*name_fn)(const struct lp_h5_desc *, int);
static name_fn enum_names(enum cenum e)
{
    static const name_fn fn[] = {
        [E_MODEL] = model_name,       [E_SYSTEM] = system_name, [E_RECOMPUTE] = recompute_name,
        [E_SCHEDULE] = schedule_name, [E_REASON] = reason_name, [E_PREC] = precision_name,
        [E_FW] = framework_name,      [E_ATT] = attention_name, [E_FT] = finetune_name,
    };
    return fn[e];
}

/* An HDF5 enumeration of the names of e (base: native int32). Member names
 * must be unique: a model or system name given twice gets "#<position>". */
static int enum_type(const struct lp_h5_desc *d, enum cenum e, hid_t *out, struct lp_err *err)
{
    hid_t t = H5Tenum_create(H5T_NATIVE_INT32);
    H5_TRY(err, t, "H5Tenum_create");
    const int n = enum_count(d, e);
    name_fn get = enum_names(e);
    for (int i = 0; i < n; i++) {
        char name[LP_NAME_LEN + 16];
        snprintf(name, sizeof(name), "%s", get(d, i));
        for (int j = 0; j < i; j++)
            if (!strcmp(get(d, j), get(d, i))) snprintf(name, sizeof(name), "%s#%d", get(d, i), i);
        int32_t v = i;
        if (H5Tenum_insert(t, name, &v) < 0) {
            H5Tclose(t);
            LP_FAIL(err, LP_EHDF5, "%s: HDF5 error in H5Tenum_insert(%s)", d->path, name);
        }
    }
    *out = t;
    return LP_OK;
}

static const char *column_name(const struct lp_h5_desc *d, int i)
{
    (void)d;
    return cols[i].name;
}

static int create_columns(struct lp_h5 *h, struct lp_err *err)
{
    const struct lp_h5_desc *d = &h->d;
    hid_t g = H5Gcreate2(h->file, "configs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5_TRY(err, g, "H5Gcreate2(/configs)");
    int rc = LP_OK;
    for (size_t c = 0; c < NCOLS && rc == LP_OK; c++) {
        hsize_t dim = 0, maxdim = H5S_UNLIMITED, chunk = CHUNK_ROWS;
        hid_t sp = H5Screate_simple(1, &dim, &maxdim);
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 1, &chunk);
        H5Pset_shuffle(dcpl);
        H5Pset_deflate(dcpl, DEFLATE_LEVEL);
        H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
        /* what parallel HDF5 sets for a chunked dataset (and needs for its
         * collective filtered writes): also when the serial recovery
         * (lp_h5_recover) creates the file */
        H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY);
        hid_t ft = file_type(cols[c].type);
        if (cols[c].type == C_ENUM) {
            rc = enum_type(d, cols[c].names, &h->etype[c], err);
            ft = h->etype[c];
        }
        h->dset[c] = rc < 0 ? H5I_INVALID_HID
                            : H5Dcreate2(g, cols[c].name, ft, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        H5Pclose(dcpl);
        H5Sclose(sp);
        if (rc < 0) break;
        if (h->dset[c] < 0) {
            rc = lp_err_set_at(err, LP_EHDF5, __FILE__, __LINE__, "%s: cannot create /configs/%s",
                               d->path, cols[c].name);
            break;
        }
        rc = attr_str(d, h->dset[c], "doc", cols[c].doc, err);
        if (rc == LP_OK) rc = attr_str(d, h->dset[c], "units", cols[c].units, err);
    }
    H5Gclose(g);
    return rc;
}

static int open_columns(struct lp_h5 *h, struct lp_err *err)
{
    const char *path = h->d.path;
    for (size_t c = 0; c < NCOLS; c++) {
        char name[96];
        snprintf(name, sizeof(name), "/configs/%s", cols[c].name);
        h->dset[c] = H5Dopen2(h->file, name, H5P_DEFAULT);
        if (h->dset[c] < 0)
            LP_FAIL(err, LP_EHDF5, "%s: no dataset %s: not a sweep.h5 of this version", path, name);
        if (cols[c].type != C_ENUM) continue;
        h->etype[c] = H5Dget_type(h->dset[c]);
        if (H5Tget_class(h->etype[c]) != H5T_ENUM)
            LP_FAIL(err, LP_EHDF5, "%s: %s is not an enumeration: not a sweep.h5 of this version",
                    path, name);
    }
    return LP_OK;
}

static int set_rows(struct lp_h5 *h, uint64_t rows, struct lp_err *err)
{
    const struct lp_h5_desc *d = &h->d;
    hsize_t dim = rows;
    for (size_t c = 0; c < NCOLS; c++)
        H5_TRY(err, H5Dset_extent(h->dset[c], &dim), "H5Dset_extent");
    return LP_OK;
}

int lp_h5_open(const struct lp_h5_desc *d, bool resume, struct lp_h5 **out, struct lp_err *err)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    *out = NULL;
    struct lp_h5 *h = calloc(1, sizeof(*h));
    if (!h) LP_FAIL(err, LP_ENOMEM, "out of memory");
    h->d = *d;
    MPI_Comm_rank(d->comm, &h->rank);
    MPI_Comm_size(d->comm, &h->size);
    for (size_t c = 0; c < NCOLS; c++)
        h->dset[c] = h->etype[c] = H5I_INVALID_HID;
    h->file = H5I_INVALID_HID;
    *out = h;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, d->comm, MPI_INFO_NULL);
    H5Pset_all_coll_metadata_ops(fapl, true);
    H5Pset_coll_metadata_write(fapl, true);
    errno = 0;
    if (resume)
        h->file = H5Fopen(d->path, H5F_ACC_RDWR, fapl);
    else
        h->file = H5Fcreate(d->path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    const int e = errno;
    char sys[200];
    h5_syserr(sys, sizeof(sys), e);
    H5Pclose(fapl);
    if (h->file < 0)
        LP_FAIL(err, LP_EHDF5, "%s: cannot %s the dataset%s", d->path,
                resume ? "open (to resume)" : "create", sys);
    if (resume) {
        LP_TRY(err, open_columns(h, err));
    } else {
        LP_TRY(err, create_columns(h, err));
        LP_TRY(err, attr_u64(d, h->file, "complete", 0, err));
    }
    return LP_OK;
}

/* Select this rank's blocks in fsp (adjacent blocks coalesced into one
 * hyperslab); order[i] / pos[i]: the buffer row and the file row of the
 * i-th row written. */
static int my_selection(const struct lp_h5_block *b, size_t nb, hid_t fsp, size_t **order,
                        uint64_t **pos, size_t *nrows, struct lp_err *err)
{
    size_t total = 0;
    bool any = false;
    H5Sselect_none(fsp);
    for (size_t i = 0; i < nb; i++)
        total += (size_t)b[i].rows;
    *order = malloc((total ? total : 1) * sizeof(size_t));
    *pos = malloc((total ? total : 1) * sizeof(uint64_t));
    if (!*order || !*pos) LP_FAIL(err, LP_ENOMEM, "out of memory");
    size_t w = 0;
    hsize_t run_start = 0, run_len = 0;
    for (size_t i = 0; i < nb; i++) {
        if (b[i].rows == 0) continue;
        for (uint64_t j = 0; j < b[i].rows; j++) {
            (*pos)[w] = b[i].file_row + j;
            (*order)[w++] = (size_t)(b[i].buf_row + j);
        }
        if (run_len && run_start + run_len == b[i].file_row) {
            run_len += b[i].rows;
        } else {
            if (run_len) {
                H5Sselect_hyperslab(fsp, any ? H5S_SELECT_OR : H5S_SELECT_SET, &run_start, NULL,
                                    &run_len, NULL);
                any = true;
            }
            run_start = b[i].file_row;
            run_len = b[i].rows;
        }
    }
    if (run_len)
        H5Sselect_hyperslab(fsp, any ? H5S_SELECT_OR : H5S_SELECT_SET, &run_start, NULL, &run_len,
                            NULL);
    *nrows = w;
    return LP_OK;
}

int lp_h5_write(struct lp_h5 *h, const struct lp_row *rows, const struct lp_h5_block *b, size_t nb,
                uint64_t end, uint64_t sum_out[LP_H5_NCOLS], struct lp_err *err)
{
    const char *path = h->d.path;
    LP_TRY(err, set_rows(h, end, err));
    hid_t fsp = H5Dget_space(h->dset[0]);
    size_t *order = NULL, nrows = 0;
    uint64_t *pos = NULL;
    int rc = my_selection(b, nb, fsp, &order, &pos, &nrows, err);
    hsize_t mdim = nrows ? nrows : 1;
    hid_t msp = H5Screate_simple(1, &mdim, NULL);
    if (!nrows) H5Sselect_none(msp);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    char *col = malloc((nrows ? nrows : 1) * 8);
    if (rc == LP_OK && !col)
        rc = lp_err_set_at(err, LP_ENOMEM, __FILE__, __LINE__, "out of memory");
    uint64_t sum[NCOLS];
    memset(sum, 0, sizeof(sum));
    char sys[200];
    for (size_t c = 0; c < NCOLS && rc == LP_OK; c++) {
        size_t sz = type_size(cols[c].type);
        for (size_t i = 0; i < nrows; i++) {
            const char *v = (const char *)&rows[order[i]] + cols[c].off;
            memcpy(col + i * sz, v, sz);
            sum[c] += cell_hash(pos[i], v, sz);
        }
        errno = 0;
        if (H5Dwrite(h->dset[c], mem_type(h, c), msp, fsp, dxpl, col) < 0) {
            const int e = errno;
            rc =
                lp_err_set_at(err, LP_EHDF5, __FILE__, __LINE__, "%s: writing /configs/%s failed%s",
                              path, cols[c].name, h5_syserr(sys, sizeof(sys), e));
        }
    }
    free(col);
    free(order);
    free(pos);
    H5Pclose(dxpl);
    H5Sclose(msp);
    H5Sclose(fsp);
    errno = 0;
    if (rc == LP_OK && H5Fflush(h->file, H5F_SCOPE_GLOBAL) < 0) {
        const int e = errno;
        rc = lp_err_set_at(err, LP_EHDF5, __FILE__, __LINE__, "%s: flush failed%s", path,
                           h5_syserr(sys, sizeof(sys), e));
    }
    /* the checksums of this write's rows, over all ranks */
    if (MPI_Allreduce(sum, sum_out, (int)NCOLS, MPI_UINT64_T, MPI_SUM, h->d.comm) != MPI_SUCCESS &&
        rc == LP_OK)
        rc = lp_err_set_at(err, LP_EMPI, __FILE__, __LINE__, "MPI_Allreduce of checksums failed");
    return rc;
}

int lp_h5_read(struct lp_h5 *h, uint64_t first, uint64_t n, bool me, struct lp_row *dst,
               struct lp_err *err)
{
    /* drop rows past the checkpoint's (a write the checkpoint does not know) */
    LP_TRY(err, set_rows(h, first + n, err));
    uint64_t mine = me ? n : 0;
    if (mine) memset(dst, 0, (size_t)mine * sizeof(struct lp_row));
    hid_t fsp = H5Dget_space(h->dset[0]);
    hsize_t start = first, count = mine;
    if (mine)
        H5Sselect_hyperslab(fsp, H5S_SELECT_SET, &start, NULL, &count, NULL);
    else
        H5Sselect_none(fsp);
    hsize_t mdim = mine ? mine : 1;
    hid_t msp = H5Screate_simple(1, &mdim, NULL);
    if (!mine) H5Sselect_none(msp);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    char *col = malloc((size_t)(mine ? mine : 1) * 8);
    int rc = col ? LP_OK : lp_err_set_at(err, LP_ENOMEM, __FILE__, __LINE__, "out of memory");
    for (size_t c = 0; c < NCOLS && rc == LP_OK; c++) {
        size_t sz = type_size(cols[c].type);
        if (H5Dread(h->dset[c], mem_type(h, c), msp, fsp, dxpl, col) < 0) {
            rc = lp_err_set_at(err, LP_EHDF5, __FILE__, __LINE__, "%s: reading /configs/%s failed",
                               h->d.path, cols[c].name);
            break;
        }
        for (uint64_t i = 0; i < mine; i++)
            memcpy((char *)&dst[i] + cols[c].off, col + i * sz, sz);
    }
    free(col);
    H5Pclose(dxpl);
    H5Sclose(msp);
    H5Sclose(fsp);
    return rc;
}

/* ---- recovery of a partial dataset (resume) ---- */

#define RECOVER_BLOCK_ROWS (UINT64_C(1) << 20)

/* The child's work: copy rows [0, rows) of every column of `from` into a
 * new dataset file `to`, checking each column's checksum against sums[]
 * (the checkpoint's). Serial HDF5 (sec2 driver): no MPI in a forked child.
 * Returns 0 when every column matched, 1 (why[] says what) otherwise. */
static int copy_verified(const struct lp_h5_desc *d, uint64_t rows, const uint64_t *sums,
                         const char *from, const char *to, char *why, size_t len)
{
    int bad = 0;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_sec2(fapl);
    hid_t in = H5Fopen(from, H5F_ACC_RDONLY, fapl);
    struct lp_h5 out;
    memset(&out, 0, sizeof(out));
    out.d = *d;
    for (size_t c = 0; c < NCOLS; c++)
        out.dset[c] = out.etype[c] = H5I_INVALID_HID;
    out.file = in < 0 ? H5I_INVALID_HID : H5Fcreate(to, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    struct lp_err err;
    lp_err_clear(&err);
    char *buf = malloc(RECOVER_BLOCK_ROWS * 8);
    if (in < 0) {
        snprintf(why, len, "HDF5 cannot open it");
        bad = 1;
    } else if (out.file < 0 || !buf || create_columns(&out, &err) != LP_OK ||
               attr_u64(d, out.file, "complete", 0, &err) != LP_OK) {
        snprintf(why, len, "cannot write %.200s: %.200s", to, err.msg[0] ? err.msg : "HDF5 error");
        bad = 1;
    }
    for (size_t c = 0; c < NCOLS && !bad; c++) {
        char name[96];
        snprintf(name, sizeof(name), "/configs/%s", cols[c].name);
        hid_t ds = H5Dopen2(in, name, H5P_DEFAULT);
        hid_t fsp = ds < 0 ? H5I_INVALID_HID : H5Dget_space(ds);
        hsize_t dim = 0, want = rows;
        if (fsp < 0 || H5Sget_simple_extent_ndims(fsp) != 1 ||
            H5Sget_simple_extent_dims(fsp, &dim, NULL) < 0 || dim < rows ||
            H5Dset_extent(out.dset[c], &want) < 0) {
            snprintf(why, len, "column %s: %s", cols[c].name,
                     ds < 0 ? "missing or unreadable" : "fewer rows than the checkpoint's");
            bad = 1;
        }
        hid_t osp = bad ? H5I_INVALID_HID : H5Dget_space(out.dset[c]);
        const size_t sz = type_size(cols[c].type);
        uint64_t sum = 0;
        for (uint64_t at = 0; at < rows && !bad; at += RECOVER_BLOCK_ROWS) {
            hsize_t start = at,
                    count = rows - at < RECOVER_BLOCK_ROWS ? rows - at : RECOVER_BLOCK_ROWS;
            hid_t msp = H5Screate_simple(1, &count, NULL);
            H5Sselect_hyperslab(fsp, H5S_SELECT_SET, &start, NULL, &count, NULL);
            H5Sselect_hyperslab(osp, H5S_SELECT_SET, &start, NULL, &count, NULL);
            if (H5Dread(ds, mem_type(&out, c), msp, fsp, H5P_DEFAULT, buf) < 0) {
                snprintf(why, len, "column %s: rows %llu..%llu unreadable", cols[c].name,
                         (unsigned long long)at, (unsigned long long)(at + count));
                bad = 1;
            } else {
                for (hsize_t i = 0; i < count; i++)
                    sum += cell_hash(at + i, buf + i * sz, sz);
                errno = 0;
                if (H5Dwrite(out.dset[c], mem_type(&out, c), msp, osp, H5P_DEFAULT, buf) < 0) {
                    const int e = errno;
                    char sys[200];
                    snprintf(why, len, "cannot write %.200s%s", to, h5_syserr(sys, sizeof(sys), e));
                    bad = 1;
                }
            }
            H5Sclose(msp);
        }
        if (!bad && sum != sums[c]) {
            snprintf(why, len, "column %s: checksum of rows 0..%llu differs from the checkpoint's",
                     cols[c].name, (unsigned long long)rows);
            bad = 1;
        }
        if (osp >= 0) H5Sclose(osp);
        if (fsp >= 0) H5Sclose(fsp);
        if (ds >= 0) H5Dclose(ds);
    }
    free(buf);
    for (size_t c = 0; c < NCOLS; c++) {
        if (out.dset[c] >= 0) H5Dclose(out.dset[c]);
        if (out.etype[c] >= 0) H5Tclose(out.etype[c]);
    }
    if (out.file >= 0 && H5Fclose(out.file) < 0 && !bad) {
        snprintf(why, len, "cannot write %.200s", to);
        bad = 1;
    }
    if (in >= 0) H5Fclose(in);
    return bad;
}

static int recover_at(const struct lp_h5_desc *d, uint64_t rows, const uint64_t *sum,
                      const char *tmp, const char *damaged, bool *ok, char *why, size_t why_len,
                      struct lp_err *err)
{
    const char *path = d->path;
    *ok = false;
    why[0] = '\0';
    int pfd[2];
    if (pipe(pfd) != 0) LP_FAIL(err, LP_EIO, "pipe failed: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        LP_FAIL(err, LP_EIO, "fork failed: %s", strerror(errno));
    }
    if (pid == 0) { /* the child: HDF5 only, no MPI; _exit skips every atexit */
        close(pfd[0]);
        char msg[512] = "";
        int code = copy_verified(d, rows, sum, path, tmp, msg, sizeof(msg));
        ssize_t wrote = write(pfd[1], msg, strlen(msg));
        (void)wrote;
        _exit(code);
    }
    close(pfd[1]);
    /* time limit: 2 minutes plus 5M values a second (reading, checksum,
     * compression); a child past it is taken to hang on a damaged file */
    const double limit_s = 120.0 + (double)rows * (double)NCOLS / 5e6;
    int status = 0;
    double waited = 0;
    pid_t r;
    while ((r = waitpid(pid, &status, WNOHANG)) == 0 && waited < limit_s) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        waited += 0.02;
    }
    if (r == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        snprintf(why, why_len, "checking it did not finish within %.0f s", limit_s);
    } else {
        ssize_t n = read(pfd[0], why, why_len - 1);
        why[n > 0 ? n : 0] = '\0';
        if (WIFSIGNALED(status))
            snprintf(why, why_len, "reading it crashed the checker (signal %d)", WTERMSIG(status));
    }
    close(pfd[0]);
    if (r > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        if (rename(tmp, path) != 0)
            LP_FAIL(err, LP_EIO, "%s: rename to %s failed: %s", tmp, path, strerror(errno));
        *ok = true;
        return LP_OK;
    }
    (void)unlink(tmp);
    if (access(path, F_OK) != 0) {
        snprintf(why, why_len, "it is missing");
    } else if (rename(path, damaged) != 0) {
        LP_FAIL(err, LP_EIO, "%s: rename to %s failed: %s", path, damaged, strerror(errno));
    }
    if (!why[0]) snprintf(why, why_len, "it failed the check");
    return LP_OK;
}

int lp_h5_recover(const struct lp_h5_desc *d, uint64_t rows, const uint64_t sum[LP_H5_NCOLS],
                  bool *ok, char *why, size_t why_len, struct lp_err *err)
{
    const char *path = d->path;
    const size_t plen = strlen(path) + 16;
    char *tmp = malloc(plen), *damaged = malloc(plen);
    if (!tmp || !damaged) {
        free(tmp);
        free(damaged);
        LP_FAIL(err, LP_ENOMEM, "out of memory");
    }
    snprintf(tmp, plen, "%s.new", path);
    snprintf(damaged, plen, "%s.damaged", path);
    int rc = recover_at(d, rows, sum, tmp, damaged, ok, why, why_len, err);
    free(tmp);
    free(damaged);
    return rc;
}

static int write_attrs(struct lp_h5 *h, const struct lp_h5_totals *total, struct lp_err *err)
{
    const struct lp_h5_desc *d = &h->d;
    hid_t f = h->file;
    char date[64], sum[64];
    /* attribute values must be the same on every rank: rank 0's clock */
    time_t t = time(NULL);
    struct tm tmv;
    gmtime_r(&t, &tmv);
    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tmv);
    MPI_Bcast(date, (int)sizeof(date), MPI_CHAR, 0, d->comm);
    snprintf(sum, sizeof(sum), "%016llx", (unsigned long long)d->sweep_hash);
    LP_TRY(err, attr_str(d, f, "format", "llmplan-sweep", err));
    LP_TRY(err, attr_u64(d, f, "format_version", SWEEP_FORMAT_VERSION, err));
    LP_TRY(err, attr_str(d, f, "llmplan_version", LLMPLAN_VERSION, err));
    LP_TRY(err, attr_str(d, f, "command_line", d->command_line, err));
    LP_TRY(err, attr_str(d, f, "sweep_file", d->sweep_file, err));
    LP_TRY(err, attr_str(d, f, "sweep_json", d->sweep_json, err));
    LP_TRY(err, attr_str(d, f, "profile", d->profile, err));
    LP_TRY(err, attr_str(d, f, "sweep_hash", sum, err));
    LP_TRY(err, attr_str(d, f, "date", date, err));
    LP_TRY(err, attr_u64(d, f, "ranks", (uint64_t)h->size, err));
    LP_TRY(err, attr_u64(d, f, "space_size", d->space_size, err));
    LP_TRY(err, attr_u64(d, f, "rows", total->rows, err));
    LP_TRY(err, attr_u64(d, f, "skipped", total->skipped, err));
    LP_TRY(err, attr_u64(d, f, "complete", total->complete, err));
    LP_TRY(err, attr_names(d, f, "model_names", model_name, d->models.n, err));
    LP_TRY(err, attr_model_params(d, f, err));
    LP_TRY(err, attr_names(d, f, "system_names", system_name, d->systems.n, err));
    LP_TRY(err, attr_names(d, f, "reason_names", reason_name, LP_REASON_COUNT, err));
    LP_TRY(err, attr_names(d, f, "recompute_names", recompute_name, LP_RECOMPUTE_COUNT, err));
    LP_TRY(err, attr_names(d, f, "schedule_names", schedule_name, LP_SCHED_COUNT, err));
    LP_TRY(err, attr_names(d, f, "framework_names", framework_name, d->frameworks.n, err));
    LP_TRY(err, attr_names(d, f, "attention_names", attention_name, LP_ATTENTION_COUNT + 1, err));
    LP_TRY(err, attr_names(d, f, "precision_names", precision_name, LP_PREC_COUNT, err));
    LP_TRY(err, attr_names(d, f, "finetune_names", finetune_name, d->finetunes.n, err));
    LP_TRY(err, attr_names(d, f, "columns", column_name, (int)NCOLS, err));
    return LP_OK;
}

int lp_h5_close(struct lp_h5 *h, const struct lp_h5_totals *totals, bool *unclosable,
                struct lp_err *err)
{
    *unclosable = false;
    if (!h) return LP_OK;
    int rc = LP_OK;
    if (totals && h->file >= 0) rc = write_attrs(h, totals, err);
    for (size_t c = 0; c < NCOLS; c++) {
        if (h->dset[c] >= 0) H5Dclose(h->dset[c]);
        if (h->etype[c] >= 0) H5Tclose(h->etype[c]);
    }
    errno = 0;
    if (h->file >= 0 && H5Fclose(h->file) < 0) {
        const int e = errno;
        char sys[200];
        h5_syserr(sys, sizeof(sys), e);
        /* HDF5 1.10 keeps a file it failed to flush on close (ENOSPC) and
         * crashes closing it again when MPI_Finalize ends the library */
        *unclosable = true;
        if (rc == LP_OK)
            rc = lp_err_set_at(err, LP_EHDF5, __FILE__, __LINE__, "%s: close failed%s", h->d.path,
                               sys);
    }
    free(h);
    return rc;
}
