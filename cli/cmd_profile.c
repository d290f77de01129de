/* `llmplan profile synth | info | check | compare | lookup`: write
 * analytical profiles, inspect and validate HDF5 profiles, set one profile's
 * tables beside another's, read one table at one point
 * (docs/profile-format.md, docs/profiler.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "llmplan/io.h"
#include "llmplan/profile.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: llmplan profile synth --gpu NAME [--system NAME] [-o FILE]\n"
               "       llmplan profile info FILE\n"
               "       llmplan profile check FILE\n"
               "       llmplan profile compare MEASURED.h5 MODEL [--gpu NAME] [--csv FILE]\n"
               "       llmplan profile lookup PROFILE TABLE X... [--gpu NAME]\n"
               "\n"
               "Kernel profiles are HDF5 files of operator timings (docs/profile-format.md).\n"
               "\n"
               "  synth   write the analytical profile of a GPU preset (data/gpus/NAME.json):\n"
               "          GEMM, attention, memory-bound and collective tables from the GPU's\n"
               "          datasheet figures and constants calibrated on measured kernels\n"
               "  info    print a profile's GPU, provenance, table grids and sample lookups\n"
               "  check   validate a profile (schema, tables, values, checksum); exit 1 if bad\n"
               "  compare MODEL's value / MEASURED's at every grid point of MEASURED's tables,\n"
               "          by table and kernel time (MODEL: a profile, or synth: the\n"
               "          analytical profile of MEASURED's GPU)\n"
               "  lookup  one table's value at one point, as the simulator reads it\n"
               "\n"
               "`llmplan profile <command> --help` for each command.\n");
}

static void usage_synth(FILE *f)
{
    fprintf(f, "usage: llmplan profile synth --gpu NAME [--system NAME] [-o FILE]\n"
               "\n"
               "Write the analytical kernel profile of a GPU preset.\n"
               "\n"
               "  --gpu NAME      GPU preset (data/gpus/NAME.json; `llmplan gpus` lists them)\n"
               "  --system NAME   reference system whose link bandwidths the collective\n"
               "                  fractions are relative to (default: the dgx-* system with\n"
               "                  this GPU, else the first such system; none: fixed defaults)\n"
               "  -o FILE         output (default: data/profiles/NAME.h5)\n"
               "  -h, --help      this text\n");
}

static void usage_file(FILE *f, const char *cmd)
{
    if (!strcmp(cmd, "info"))
        fprintf(f, "usage: llmplan profile info FILE\n"
                   "\n"
                   "Print a profile's GPU, source, provenance attributes, the grid of every\n"
                   "table and a few sample lookups. Exit 1 if the file is not a valid profile.\n");
    else
        fprintf(f, "usage: llmplan profile check FILE\n"
                   "\n"
                   "Validate a profile: HDF5, schema version, required tables, dimensions, axis\n"
                   "names, finite positive values, increasing axes and the checksum. Prints OK\n"
                   "and counts, or the first problem (exit 1).\n");
}

static bool is_help(const char *a)
{
    return !strcmp(a, "-h") || !strcmp(a, "--help");
}

/* ---- synth ---- */

struct sys_pick {
    const char *gpu;
    char first[LP_NAME_LEN];
    char dgx[LP_NAME_LEN];
};

static int pick_system_cb(const char *name, const char *path, void *arg)
{
    (void)path;
    struct sys_pick *sp = arg;
    struct lp_system s;
    struct lp_err e;
    lp_err_clear(&e);
    if (lp_load_system(name, &s, &e) != LP_OK) return 0; /* a broken preset is not ours to report */
    if (strcmp(s.gpu.name, sp->gpu) != 0) return 0;
    if (!sp->first[0]) snprintf(sp->first, sizeof(sp->first), "%s", name);
    if (!sp->dgx[0] && !strncmp(name, "dgx-", 4)) snprintf(sp->dgx, sizeof(sp->dgx), "%s", name);
    return 0;
}

/* The reference system of an analytical profile of `gpu`: `sys_name`, else
 * the dgx-* system with this GPU, else the first system with it, else none
 * (*ref NULL: fixed default links). One rule for synth and compare. */
static int pick_ref_system(const struct lp_gpu *gpu, const char *sys_name, struct lp_system *sys,
                           const struct lp_system **ref, struct lp_err *err)
{
    char picked[LP_NAME_LEN];
    *ref = NULL;
    if (!sys_name) {
        struct sys_pick sp = {gpu->name, "", ""};
        LP_TRY(err, lp_list_presets(LP_PRESET_SYSTEM, pick_system_cb, &sp, err));
        if (sp.dgx[0] || sp.first[0]) {
            snprintf(picked, sizeof(picked), "%s", sp.dgx[0] ? sp.dgx : sp.first);
            sys_name = picked;
        }
    }
    if (!sys_name) {
        fprintf(stderr,
                "llmplan: note: no system preset has GPU %s; collective fractions use "
                "fixed default links (see the file's ref_system attribute)\n",
                gpu->name);
        return LP_OK;
    }
    LP_TRY(err, lp_load_system(sys_name, sys, err));
    if (strcmp(sys->gpu.name, gpu->name) != 0)
        fprintf(stderr, "llmplan: note: system %s has GPU %s, not %s; using its links\n", sys->name,
                sys->gpu.name, gpu->name);
    *ref = sys;
    return LP_OK;
}

/* The analytical profile of `gpu` built in memory with the reference system
 * `profile synth` picks by default (compare's and lookup's `synth`). */
static int synth_default(const struct lp_gpu *gpu, struct lp_profile **out, struct lp_err *err)
{
    struct lp_system sys;
    const struct lp_system *ref = NULL;
    LP_TRY(err, pick_ref_system(gpu, NULL, &sys, &ref, err));
    return lp_profile_synth(gpu, ref, out, err);
}

static void join_command(int argc, char **argv, char *buf, size_t len)
{
    size_t off = (size_t)snprintf(buf, len, "llmplan");
    for (int i = 0; i < argc && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, " %s", argv[i]);
}

static int cmd_synth(int argc, char **argv)
{
    const char *gpu_name = NULL, *sys_name = NULL, *out = NULL;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (is_help(a)) {
            usage_synth(stdout);
            return 0;
        }
        const char **dst = !strcmp(a, "--gpu")                            ? &gpu_name
                           : !strcmp(a, "--system")                       ? &sys_name
                           : (!strcmp(a, "-o") || !strcmp(a, "--output")) ? &out
                                                                          : NULL;
        if (!dst) {
            fprintf(stderr, "llmplan profile synth: unknown option '%s' (see --help)\n", a);
            return 2;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "llmplan profile synth: %s needs a value\n", a);
            return 2;
        }
        *dst = argv[++i];
    }
    if (!gpu_name) {
        fprintf(stderr, "llmplan profile synth: --gpu NAME is required (see --help)\n");
        return 2;
    }
    struct lp_err err;
    lp_err_clear(&err);
    struct lp_gpu gpu;
    if (lp_load_gpu(gpu_name, &gpu, &err) != LP_OK) {
        lp_cli_error(&err);
        return 1;
    }
    struct lp_system sys;
    const struct lp_system *ref = NULL;
    if (pick_ref_system(&gpu, sys_name, &sys, &ref, &err) != LP_OK) {
        lp_cli_error(&err);
        return 1;
    }
    char path[1024];
    if (!out) {
        if (lp_profile_default_path(gpu.name, path, sizeof(path)) != LP_OK) {
            fprintf(stderr, "llmplan: default profile path too long\n");
            return 1;
        }
        out = path;
    }
    char command[2048];
    join_command(argc, argv, command, sizeof(command));
    struct lp_profile *p = NULL;
    if (lp_profile_synth(&gpu, ref, &p, &err) != LP_OK) {
        lp_cli_error(&err);
        return 1;
    }
    const struct lp_kv attrs[] = {{"command", command}};
    int rc = lp_profile_write_h5(out, p, attrs, 1, &err);
    if (rc != LP_OK) {
        lp_cli_error(&err);
        lp_profile_destroy(&p);
        return 1;
    }
    int ntab = 0;
    for (int i = 0; i < LP_PROFILE_SLOTS; i++)
        ntab += lp_table_present(lp_profile_slot_table_c(p, i));
    struct stat st;
    double kib = stat(out, &st) == 0 ? (double)st.st_size / 1024.0 : 0;
    printf("wrote %s: gpu %s, %d tables, %.0f KiB, checksum %016llx (reference system %s)\n", out,
           p->gpu, ntab, kib, (unsigned long long)p->checksum, ref ? ref->name : "none");
    lp_profile_destroy(&p);
    return 0;
}

/* ---- info / check ---- */

static int cmd_file(int argc, char **argv, const char *cmd)
{
    const char *file = NULL;
    for (int i = 2; i < argc; i++) {
        if (is_help(argv[i])) {
            usage_file(stdout, cmd);
            return 0;
        }
        if (argv[i][0] == '-' || file) {
            fprintf(stderr, "llmplan profile %s: unexpected argument '%s' (see --help)\n", cmd,
                    argv[i]);
            return 2;
        }
        file = argv[i];
    }
    if (!file) {
        fprintf(stderr, "llmplan profile %s: FILE is required (see --help)\n", cmd);
        return 2;
    }
    struct lp_err err;
    lp_err_clear(&err);
    if (!strcmp(cmd, "info")) {
        if (lp_profile_info_h5(file, stdout, &err) != LP_OK) {
            lp_cli_error(&err);
            return 1;
        }
        return 0;
    }
    struct lp_profile *p = NULL;
    if (lp_profile_read_h5(file, &p, &err) != LP_OK) {
        lp_cli_error(&err);
        return 1;
    }
    int nonmono = 0;
    lp_profile_check(p, &nonmono, &err); /* already passed inside the reader */
    /* against the datasheet of the GPU preset the profile names */
    struct lp_gpu gpu;
    bool plausible_checked = lp_load_gpu(p->gpu, &gpu, &err) == LP_OK;
    lp_err_clear(&err);
    if (plausible_checked && lp_profile_plausible(p, &gpu, &err) != LP_OK) {
        lp_cli_error(&err);
        lp_profile_destroy(&p);
        return 1;
    }
    int ntab = 0;
    long points = 0;
    for (int i = 0; i < LP_PROFILE_SLOTS; i++) {
        const struct lp_table *t = lp_profile_slot_table_c(p, i);
        if (!lp_table_present(t)) continue;
        ntab++;
        long n = 1;
        for (int d = 0; d < t->ndim; d++)
            n *= t->dims[d];
        points += n;
    }
    printf("OK %s: gpu %s, %s, %d tables, %ld points, checksum %016llx, %d non-monotone "
           "points, %s\n",
           file, p->gpu, p->source, ntab, points, (unsigned long long)p->checksum, nonmono,
           plausible_checked ? "plausible for its GPU's datasheet"
                             : "no GPU preset of that name: plausibility not checked");
    lp_profile_destroy(&p);
    return 0;
}

/* ---- compare ---- */

static void usage_compare(FILE *f)
{
    fprintf(f, "usage: llmplan profile compare MEASURED.h5 MODEL [--gpu NAME] [--csv FILE]\n"
               "\n"
               "Set a profile's tables beside another's: at every grid point of every table\n"
               "MEASURED.h5 holds, MODEL's value looked up at the same point (its own\n"
               "interpolation, as the simulator reads it) over MEASURED's value. MODEL is a\n"
               "profile file, or synth: the analytical profile of a GPU preset (--gpu, default\n"
               "the GPU MEASURED.h5 names), built in memory with the reference system `profile\n"
               "synth` would pick. A ratio above 1 means MODEL is slower there (for the\n"
               "collective tables, which hold bandwidth fractions, above 1 means MODEL is\n"
               "faster). Either file may lack tables a simulation needs (a measured run that\n"
               "left some out): the tables present are checked and compared.\n"
               "\n"
               "Per table: the points compared, those skipped (outside MODEL's grid, or a value\n"
               "not positive), the geometric mean, minimum and maximum of the ratio, and the\n"
               "geometric mean per band of MEASURED's time per call (under 10 us, 10-100 us,\n"
               "0.1-1 ms, 1 ms and over).\n"
               "\n"
               "  --gpu NAME   the GPU preset of the synth model (data/gpus/NAME.json); needed\n"
               "               when MEASURED.h5 names its GPU as the CUDA device does\n"
               "               (llmplan-profile: e.g. \"NVIDIA H100 80GB HBM3\")\n"
               "  --csv FILE   also write every compared point: table, its axis names and\n"
               "               values, measured, model, ratio\n"
               "  -h, --help   this text\n");
}

#define CMP_BANDS 4
static const double cmp_band_hi[CMP_BANDS] = {10e-6, 100e-6, 1e-3, INFINITY};
static const char *const cmp_band_name[CMP_BANDS] = {"<10us", "10-100us", "0.1-1ms", ">=1ms"};

struct cmp_acc {
    long n;
    double log_sum, lo, hi;
};

static void cmp_add(struct cmp_acc *a, double r)
{
    if (a->n == 0 || r < a->lo) a->lo = r;
    if (a->n == 0 || r > a->hi) a->hi = r;
    a->n++;
    a->log_sum += log(r);
}

static double cmp_geomean(const struct cmp_acc *a)
{
    return a->n > 0 ? exp(a->log_sum / (double)a->n) : NAN;
}

/* Compare one table: every grid point of `m` (measured) against `x`
 * (model). Returns the points skipped (outside x's grid, or a value not
 * positive). */
static long compare_table(const char *path, const struct lp_table *m, const struct lp_table *x,
                          bool time, FILE *csv, struct cmp_acc *all, struct cmp_acc *band)
{
    long total = 1, skipped = 0;
    for (int d = 0; d < m->ndim; d++)
        total *= m->dims[d];
    for (long i = 0; i < total; i++) {
        double at[LP_TABLE_MAX_DIMS];
        long rest = i;
        for (int d = m->ndim - 1; d >= 0; d--) { /* row-major: the last axis fastest */
            at[d] = m->axis[d][rest % m->dims[d]];
            rest /= m->dims[d];
        }
        bool clamped = false;
        const double mv = m->value[i], xv = lp_table_lookup(x, at, &clamped);
        if (clamped || !(mv > 0) || !(xv > 0)) {
            skipped++;
            continue;
        }
        const double r = xv / mv;
        cmp_add(all, r);
        int b = 0;
        while (time && b < CMP_BANDS - 1 && !(mv < cmp_band_hi[b]))
            b++;
        cmp_add(&band[time ? b : 0], r);
        if (csv) {
            fprintf(csv, "%s,", path);
            for (int d = 0; d < m->ndim; d++)
                fprintf(csv, "%s%s", d ? "|" : "", m->axis_name[d]);
            for (int d = 0; d < LP_TABLE_MAX_DIMS; d++)
                d < m->ndim ? fprintf(csv, ",%.9g", at[d]) : fprintf(csv, ",");
            fprintf(csv, ",%.9g,%.9g,%.6f\n", mv, xv, r);
        }
    }
    return skipped;
}

static int cmd_compare(int argc, char **argv)
{
    const char *files[2] = {NULL, NULL}, *csv_path = NULL, *gpu_name = NULL;
    int nf = 0;
    for (int i = 2; i < argc; i++) {
        if (is_help(argv[i])) {
            usage_compare(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--csv") || !strcmp(argv[i], "--gpu")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "llmplan profile compare: %s needs a value\n", argv[i]);
                return 2;
            }
            *(!strcmp(argv[i], "--csv") ? &csv_path : &gpu_name) = argv[i + 1];
            i++;
            continue;
        }
        if (argv[i][0] == '-' || nf == 2) {
            fprintf(stderr, "llmplan profile compare: unexpected argument '%s' (see --help)\n",
                    argv[i]);
            return 2;
        }
        files[nf++] = argv[i];
    }
    if (nf != 2) {
        fprintf(stderr, "llmplan profile compare: MEASURED.h5 and MODEL are required (see "
                        "--help)\n");
        return 2;
    }
    struct lp_err err;
    lp_err_clear(&err);
    struct lp_profile *m = NULL, *x = NULL;
    int rc = 1;
    FILE *csv = NULL;
    if (gpu_name && strcmp(files[1], "synth") != 0) {
        fprintf(stderr,
                "llmplan profile compare: --gpu names the synth model's GPU; MODEL is "
                "the file %s\n",
                files[1]);
        goto out;
    }
    if (lp_profile_read_h5_partial(files[0], &m, &err) != LP_OK) goto fail;
    if (!strcmp(files[1], "synth")) {
        struct lp_gpu gpu;
        if (lp_load_gpu(gpu_name ? gpu_name : m->gpu, &gpu, &err) != LP_OK) {
            lp_cli_error(&err);
            if (!gpu_name)
                fprintf(stderr,
                        "llmplan profile compare: %s names its GPU '%s', which is not a GPU "
                        "preset; give the preset of the synth model with --gpu NAME\n",
                        files[0], m->gpu);
            goto out;
        }
        if (synth_default(&gpu, &x, &err) != LP_OK) goto fail;
    } else if (lp_profile_read_h5_partial(files[1], &x, &err) != LP_OK) {
        goto fail;
    }
    if (strcmp(m->gpu, x->gpu) != 0)
        fprintf(stderr, "llmplan: note: comparing GPU %s (%s) with GPU %s (%s)\n", m->gpu, files[0],
                x->gpu, files[1]);
    if (csv_path) {
        csv = fopen(csv_path, "w");
        if (!csv) {
            fprintf(stderr, "llmplan profile compare: cannot write %s\n", csv_path);
            goto out;
        }
        fprintf(csv, "table,axes");
        for (int d = 0; d < LP_TABLE_MAX_DIMS; d++)
            fprintf(csv, ",axis%d", d);
        fprintf(csv, ",measured,model,ratio\n");
    }
    printf("model / measured at %s's grid points (%s: %s; model %s: %s)\n", files[0], m->gpu,
           m->source, files[1], x->source);
    printf("%-34s %7s %7s %8s %8s %8s", "table", "points", "skipped", "geomean", "min", "max");
    for (int b = 0; b < CMP_BANDS; b++)
        printf(" %9s", cmp_band_name[b]);
    printf("\n");
    int compared = 0;
    for (int i = 0; i < LP_PROFILE_SLOTS; i++) {
        const struct lp_slot *sl = lp_profile_slot(i);
        const struct lp_table *mt = lp_profile_slot_table_c(m, i);
        const struct lp_table *xt = lp_profile_slot_table_c(x, i);
        if (!lp_table_present(mt)) continue;
        if (!lp_table_present(xt)) {
            printf("%-34s (not in %s)\n", sl->path, files[1]);
            continue;
        }
        const bool time = !strcmp(sl->unit, "s");
        struct cmp_acc all = {0}, band[CMP_BANDS] = {{0}};
        long skipped = compare_table(sl->path, mt, xt, time, csv, &all, band);
        compared++;
        printf("%-34s %7ld %7ld %8.3f %8.3f %8.3f", sl->path, all.n, skipped, cmp_geomean(&all),
               all.n ? all.lo : NAN, all.n ? all.hi : NAN);
        for (int b = 0; b < CMP_BANDS; b++) {
            if (!time && b > 0) break;
            if (band[b].n)
                printf(" %9.3f", cmp_geomean(&band[b]));
            else
                printf(" %9s", "-");
        }
        printf("%s\n", time ? "" : "  (bandwidth fractions: one band)");
    }
    if (!compared) {
        fprintf(stderr, "llmplan profile compare: no table in both %s and %s\n", files[0],
                files[1]);
        goto out;
    }
    if (csv && ferror(csv)) {
        fprintf(stderr, "llmplan profile compare: error writing %s\n", csv_path);
        goto out;
    }
    rc = 0;
    goto out;
fail:
    lp_cli_error(&err);
out:
    if (csv && fclose(csv) != 0 && rc == 0) {
        fprintf(stderr, "llmplan profile compare: error writing %s\n", csv_path);
        rc = 1;
    }
    lp_profile_destroy(&m);
    lp_profile_destroy(&x);
    return rc;
}

/* ---- lookup ---- */

static void usage_lookup(FILE *f)
{
    fprintf(f, "usage: llmplan profile lookup PROFILE TABLE X... [--gpu NAME]\n"
               "\n"
               "One table of a profile at one point, as the simulator's cost model reads it\n"
               "(the profile's table backend: multilinear in log space between grid points;\n"
               "beyond the last point of a size-like axis the edge value scaled with the work;\n"
               "a collective below the smallest message at that message's time), before the\n"
               "run's sustained fraction, contention or host time are applied\n"
               "(docs/profile-format.md, docs/simulator.md).\n"
               "\n"
               "  PROFILE     an HDF5 profile, or synth: the analytical profile of --gpu\n"
               "  TABLE       a table's path as `llmplan profile info` lists it, e.g.\n"
               "              /gemm/fwd/bf16 (the leading / may be left out)\n"
               "  X...        one value per axis, in the table's order: gemm m n k;\n"
               "              attention batch_heads seq head_dim; mem bytes; coll\n"
               "              msg_bytes ranks\n"
               "  --gpu NAME  the GPU preset of synth (data/gpus/NAME.json)\n"
               "  -h, --help  this text\n"
               "\n"
               "Prints the value with its unit (seconds per call; a collective's bus\n"
               "bandwidth fraction), the rate it implies (GEMM: TFLOP/s as 2 m n k / time;\n"
               "memory-bound: GB/s moved) and whether the point lies outside the grid. A\n"
               "table the profile lacks is refused (the simulator would take another table\n"
               "or the roofline model in its place).\n");
}

/* The cost model's value at slot `i` of the canonical order (gemm[layout]
 * [prec], attn[impl][causal][pass][prec], mem[kind], coll[op][tier]); -1
 * when the slot does not decode to the table it names (a schema change). */
static double lookup_slot(const struct lp_cost_model *cm, const struct lp_profile *p, int i,
                          const double *x)
{
    const struct lp_table *t = lp_profile_slot_table_c(p, i);
    const int ng = LP_GEMM_LAYOUT_COUNT * LP_PREC_TABLES;
    const int na = LP_ATTN_IMPL_COUNT * 2 * LP_PASS_COUNT * LP_PREC_TABLES;
    if (i < ng) {
        const int l = i / LP_PREC_TABLES, q = i % LP_PREC_TABLES;
        if (t != &p->gemm[l][q]) return -1;
        return cm->ops->gemm_s(cm, (enum lp_gemm_layout)l, (enum lp_prec)q, x[0], x[1], x[2]);
    }
    i -= ng;
    if (i < na) {
        const int q = i % LP_PREC_TABLES, ps = i / LP_PREC_TABLES % LP_PASS_COUNT;
        const int c = i / (LP_PREC_TABLES * LP_PASS_COUNT) % 2;
        const int im = i / (LP_PREC_TABLES * LP_PASS_COUNT * 2);
        if (t != &p->attn[im][c][ps][q]) return -1;
        return cm->ops->attn_s(cm, (enum lp_attn_impl)im, c == 1, (enum lp_pass)ps, (enum lp_prec)q,
                               x[0], x[1], x[2]);
    }
    i -= na;
    if (i < LP_MEM_KIND_COUNT) {
        if (t != &p->mem[i]) return -1;
        return cm->ops->mem_s(cm, (enum lp_mem_kind)i, x[0]);
    }
    i -= LP_MEM_KIND_COUNT;
    const int op = i / LP_TIER_COUNT, tier = i % LP_TIER_COUNT;
    if (t != &p->coll[op][tier]) return -1;
    return cm->ops->coll_eff(cm, (enum lp_coll)op, (enum lp_tier)tier, x[0], (int)x[1]);
}

static int cmd_lookup(int argc, char **argv)
{
    const char *file = NULL, *table = NULL, *gpu_name = NULL;
    double x[LP_TABLE_MAX_DIMS];
    int nx = 0;
    for (int i = 2; i < argc; i++) {
        if (is_help(argv[i])) {
            usage_lookup(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--gpu")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "llmplan profile lookup: --gpu needs a value\n");
                return 2;
            }
            gpu_name = argv[++i];
            continue;
        }
        char *end = NULL;
        const double v = strtod(argv[i], &end);
        const bool number = end != argv[i] && *end == '\0';
        if (argv[i][0] == '-' && !number) {
            fprintf(stderr, "llmplan profile lookup: unexpected argument '%s' (see --help)\n",
                    argv[i]);
            return 2;
        }
        if (!file) {
            file = argv[i];
        } else if (!table) {
            table = argv[i];
        } else {
            if (!number || !isfinite(v) || !(v > 0)) {
                fprintf(stderr,
                        "llmplan profile lookup: '%s' is not a coordinate (a positive "
                        "number)\n",
                        argv[i]);
                return 2;
            }
            if (nx == LP_TABLE_MAX_DIMS) {
                fprintf(stderr, "llmplan profile lookup: more than %d coordinates\n",
                        LP_TABLE_MAX_DIMS);
                return 2;
            }
            x[nx++] = v;
        }
    }
    if (!file || !table) {
        fprintf(stderr, "llmplan profile lookup: PROFILE and TABLE are required (see --help)\n");
        return 2;
    }
    const bool synth = !strcmp(file, "synth");
    if (synth != (gpu_name != NULL)) {
        fprintf(stderr,
                synth ? "llmplan profile lookup: synth needs --gpu NAME\n"
                      : "llmplan profile lookup: --gpu names synth's GPU; PROFILE is "
                        "the file %s\n",
                file);
        return 2;
    }
    int slot = -1;
    for (int i = 0; i < LP_PROFILE_SLOTS && slot < 0; i++) {
        const char *path = lp_profile_slot(i)->path;
        if (!strcmp(table, path) || (table[0] != '/' && !strcmp(table, path + 1))) slot = i;
    }
    if (slot < 0) {
        fprintf(stderr,
                "llmplan profile lookup: no table '%s' in the profile schema (e.g. "
                "/gemm/fwd/bf16, /attention/fused/causal/fwd/bf16, /mem/copy, "
                "/coll/allreduce/inter; `llmplan profile info FILE` lists a file's)\n",
                table);
        return 2;
    }
    const struct lp_slot *sl = lp_profile_slot(slot);
    if (nx != sl->ndim) {
        fprintf(stderr, "llmplan profile lookup: %s has %d axes (", sl->path, sl->ndim);
        for (int d = 0; d < sl->ndim; d++)
            fprintf(stderr, "%s%s", d ? " " : "", sl->axis_names[d]);
        fprintf(stderr, "), %d coordinates given\n", nx);
        return 2;
    }
    struct lp_err err;
    lp_err_clear(&err);
    struct lp_profile *p = NULL;
    /* the GPU only serves the cost model's fallbacks, which a present table
     * never reaches: a measured profile's device name needs no preset */
    struct lp_gpu gpu;
    memset(&gpu, 0, sizeof(gpu));
    int rc = 1;
    if (synth) {
        if (lp_load_gpu(gpu_name, &gpu, &err) != LP_OK || synth_default(&gpu, &p, &err) != LP_OK)
            goto fail;
    } else if (lp_profile_read_h5_partial(file, &p, &err) != LP_OK) {
        goto fail;
    }
    const struct lp_table *t = lp_profile_slot_table_c(p, slot);
    if (!lp_table_present(t)) {
        fprintf(stderr,
                "llmplan profile lookup: %s (%s) has no table %s (the simulator would take "
                "another table or the roofline model in its place)\n",
                synth ? "the analytical profile" : file, p->gpu, sl->path);
        goto out;
    }
    struct lp_cost_model cm;
    lp_cost_model_table(&cm, p, &gpu);
    const double v = lookup_slot(&cm, p, slot, x);
    bool clamped = false;
    lp_table_lookup(t, x, &clamped);
    if (!isfinite(v) || !(v > 0)) {
        fprintf(stderr,
                "llmplan profile lookup: %s gives no finite positive value at that point "
                "(%g: coordinates far beyond its grid?)\n",
                sl->path, v);
        goto out;
    }
    const bool time = !strcmp(sl->unit, "s");
    printf("%s %s at", p->gpu, sl->path);
    for (int d = 0; d < t->ndim; d++)
        printf(" %s %g", t->axis_name[d], x[d]);
    if (time)
        printf(": %.6g s (%.6g us)", v, v * 1e6);
    else
        printf(": %.6g of the nominal bus bandwidth", v);
    if (sl->family == LP_FAM_GEMM) printf(", %.1f TFLOP/s", 2.0 * x[0] * x[1] * x[2] / v / 1e12);
    if (sl->family == LP_FAM_MEM) printf(", %.1f GB/s", x[0] / v / 1e9);
    printf("%s\n", clamped ? " (outside the grid: edge value, or extrapolated)" : "");
    rc = 0;
    goto out;
fail:
    lp_cli_error(&err);
out:
    lp_profile_destroy(&p);
    return rc;
}

int lp_cmd_profile(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (is_help(cmd) || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    /* argv[0] is "profile": the subcommand's options start at argv[2] */
    if (!strcmp(cmd, "synth")) return cmd_synth(argc, argv);
    if (!strcmp(cmd, "info") || !strcmp(cmd, "check")) return cmd_file(argc, argv, cmd);
    if (!strcmp(cmd, "compare")) return cmd_compare(argc, argv);
    if (!strcmp(cmd, "lookup")) return cmd_lookup(argc, argv);
    fprintf(stderr,
            "llmplan profile: unknown command '%s' (expected synth, info, check, compare or "
            "lookup)\n",
            cmd);
    return 2;
}
