/* `llmplan profile synth | info | check`: write analytical profiles, inspect
 * and validate HDF5 profiles (docs/profile-format.md). */
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
               "\n"
               "Kernel profiles are HDF5 files of operator timings (docs/profile-format.md).\n"
               "\n"
               "  synth   write the analytical profile of a GPU preset (data/gpus/NAME.json):\n"
               "          GEMM, attention, memory-bound and collective tables from the GPU's\n"
               "          datasheet figures and constants calibrated on measured kernels\n"
               "  info    print a profile's GPU, provenance, table grids and sample lookups\n"
               "  check   validate a profile (schema, tables, values, checksum); exit 1 if bad\n"
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
    char picked[LP_NAME_LEN];
    if (!sys_name) {
        struct sys_pick sp = {gpu.name, "", ""};
        if (lp_list_presets(LP_PRESET_SYSTEM, pick_system_cb, &sp, &err) != LP_OK) {
            lp_cli_error(&err);
            return 1;
        }
        if (sp.dgx[0] || sp.first[0]) {
            snprintf(picked, sizeof(picked), "%s", sp.dgx[0] ? sp.dgx : sp.first);
            sys_name = picked;
        }
    }
    if (sys_name) {
        if (lp_load_system(sys_name, &sys, &err) != LP_OK) {
            lp_cli_error(&err);
            return 1;
        }
        if (strcmp(sys.gpu.name, gpu.name) != 0)
            fprintf(stderr, "llmplan: note: system %s has GPU %s, not %s; using its links\n",
                    sys.name, sys.gpu.name, gpu.name);
        ref = &sys;
    } else {
        fprintf(stderr,
                "llmplan: note: no system preset has GPU %s; collective fractions use "
                "fixed default links (see the file's ref_system attribute)\n",
                gpu.name);
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
    fprintf(stderr, "llmplan profile: unknown command '%s' (expected synth, info or check)\n", cmd);
    return 2;
}
