/* llmplan-profile command line: parsing, checks and --help. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "prof.h"

static const char *const family_names[LPP_FAMILY_COUNT] = {"gemm", "attn", "mem", "coll"};

const char *lpp_family_name(enum lpp_family f)
{
    return (unsigned)f < LPP_FAMILY_COUNT ? family_names[f] : "?";
}

void lpp_opts_default(struct lpp_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->out_path = "llmplan-profile.h5";
    for (int f = 0; f < LPP_FAMILY_COUNT; f++)
        o->family[f] = true;
    o->prec[LP_BF16] = true;
    o->prec[LP_FP16] = true;
    o->prec[LP_FP8] = true; /* measured only where the GPU has fp8 tensor cores (sm_89+) */
    o->reps = 20;
    o->warmup = 5;
    o->flush_l2 = true;
    o->kv_group = 1;
    o->max_mem_bytes = 4294967296.0;  /* 4 GiB moved */
    o->max_coll_bytes = 1073741824.0; /* 1 GiB messages */
    o->device = -1;
}

void lpp_usage(FILE *f)
{
    fprintf(f,
            "usage: llmplan-profile [options]\n"
            "       mpirun -np N llmplan-profile [options]     (one rank per GPU)\n"
            "\n"
            "Measure the kernel timings of this GPU (GEMMs, attention, memory-bound kernels)\n"
            "and of its interconnect (NCCL collectives, when run on 2+ ranks) and write them\n"
            "as an llmplan HDF5 profile (docs/profile-format.md, docs/profiler.md).\n"
            "\n"
            "output and selection:\n"
            "  -o FILE                 output profile (default llmplan-profile.h5; rank 0 writes)\n"
            "  --only LIST             families to measure, comma-separated from\n"
            "                          gemm,attn,mem,coll (default: all)\n"
            "  --precisions LIST       from bf16,fp16,fp8 (default: all three; fp8 only where\n"
            "                          the GPU has fp8 tensor cores, sm_89 and newer)\n"
            "  --quick                 tiny grids and few repetitions (GPU smoke test, ~30 s)\n"
            "  --dry-run               print every table, its point count and an estimate of\n"
            "                          the run time, then exit without touching the GPU\n"
            "\n"
            "timing:\n"
            "  --reps N                timed repetitions per point (default 20; median and\n"
            "                          (p90-p10)/median are stored)\n"
            "  --warmup N              untimed calls before timing (default 5)\n"
            "  --no-flush-l2           do not flush L2 between GEMM/attention repetitions\n"
            "                          (default: a buffer of 4x the L2 size is written first)\n"
            "  --device N              CUDA device (default: the rank on its node)\n"
            "\n"
            "targeted mode (measure exactly the shapes a sweep needs):\n"
            "  --for-model NAME        a model preset (data/models/NAME.json)\n"
            "  --tp LIST               tensor-parallel sizes of the sweep (default 1)\n"
            "  --micro-batch LIST      micro-batch sizes of the sweep (default 1)\n"
            "  --seq N                 sequence length (default: the model's seq_len)\n"
            "  --for SWEEP.json        the same for every model of a sweep description, over\n"
            "                          its space.tp and space.micro_batch values\n"
            "\n"
            "shapes:\n"
            "  --kv-group G            query heads per KV head in fused attention (GQA;\n"
            "                          default 1 = multi-head)\n"
            "  --max-mem-bytes B       largest memory-bound point, bytes moved (default 4 GiB)\n"
            "  --max-coll-bytes B      largest collective message (default 1 GiB)\n"
            "\n"
            "collectives (values are stored as busbw / nominal per-GPU bandwidth):\n"
            "  --intra-bw-GBps X       nominal per-GPU bandwidth inside a node (NVLink)\n"
            "  --inter-bw-GBps X       nominal per-GPU bandwidth across nodes (network)\n"
            "  --system NAME           take both from a system preset (data/systems/)\n"
            "\n"
            "  -h, --help              this text\n"
            "\n"
            "A full default run takes about 5 minutes on one H100 (see --dry-run). With one\n"
            "rank the collective tables are skipped; run under mpirun -np 8 on a node for\n"
            "intra-node tables and across nodes for inter-node ones.\n");
}

int lpp_parse_int_list(const char *s, int *out, int max, int *n, struct lp_err *err)
{
    *n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v <= 0 || v > 1000000000L || (*end && *end != ','))
            LP_FAIL(err, LP_EINVAL, "bad list \"%s\": expected positive integers separated by ','",
                    s);
        if (*n >= max) LP_FAIL(err, LP_EINVAL, "list \"%s\" has more than %d values", s, max);
        out[(*n)++] = (int)v;
        p = *end ? end + 1 : end;
    }
    if (*n == 0) LP_FAIL(err, LP_EINVAL, "empty list");
    return LP_OK;
}

static int parse_int(const char *opt, const char *s, long lo, long hi, int *out, struct lp_err *err)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi)
        LP_FAIL(err, LP_EINVAL, "%s: expected an integer in [%ld, %ld], got \"%s\"", opt, lo, hi,
                s);
    *out = (int)v;
    return LP_OK;
}

static int parse_pos_double(const char *opt, const char *s, double *out, struct lp_err *err)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !(v > 0) || v > 1e30)
        LP_FAIL(err, LP_EINVAL, "%s: expected a positive number, got \"%s\"", opt, s);
    *out = v;
    return LP_OK;
}

static int parse_families(const char *s, bool *fam, struct lp_err *err)
{
    for (int f = 0; f < LPP_FAMILY_COUNT; f++)
        fam[f] = false;
    const char *p = s;
    while (*p) {
        size_t len = strcspn(p, ",");
        int found = -1;
        for (int f = 0; f < LPP_FAMILY_COUNT; f++)
            if (strlen(family_names[f]) == len && !strncmp(p, family_names[f], len)) found = f;
        if (found < 0)
            LP_FAIL(err, LP_EINVAL, "--only: unknown family \"%.*s\" (expected gemm,attn,mem,coll)",
                    (int)len, p);
        fam[found] = true;
        p += len;
        if (*p == ',') p++;
    }
    for (int f = 0; f < LPP_FAMILY_COUNT; f++)
        if (fam[f]) return LP_OK;
    LP_FAIL(err, LP_EINVAL, "--only: empty list");
}

static int parse_precisions(const char *s, bool *prec, struct lp_err *err)
{
    for (int i = 0; i < LP_PREC_TABLES; i++)
        prec[i] = false;
    const char *p = s;
    int count = 0;
    while (*p) {
        size_t len = strcspn(p, ",");
        char name[16];
        if (len == 0 || len >= sizeof(name))
            LP_FAIL(err, LP_EINVAL, "--precisions: bad list \"%s\"", s);
        memcpy(name, p, len);
        name[len] = '\0';
        enum lp_prec pr;
        if (lp_prec_parse(name, &pr) != LP_OK || pr == LP_FP32)
            LP_FAIL(err, LP_EINVAL,
                    "--precisions: unknown precision \"%s\" (expected bf16,fp16,fp8)", name);
        prec[pr] = true;
        count++;
        p += len;
        if (*p == ',') p++;
    }
    if (!count) LP_FAIL(err, LP_EINVAL, "--precisions: empty list");
    return LP_OK;
}

static int copy_name(const char *opt, const char *s, char *dst, size_t len, struct lp_err *err)
{
    size_t n = strlen(s);
    if (n == 0 || n >= len) LP_FAIL(err, LP_EINVAL, "%s: name \"%s\" empty or too long", opt, s);
    memcpy(dst, s, n + 1);
    return LP_OK;
}

/* Options that take a value, accepted as "--opt VALUE" or "--opt=VALUE". */
static const char *const valued[] = {"-o",
                                     "--only",
                                     "--precisions",
                                     "--reps",
                                     "--warmup",
                                     "--device",
                                     "--for-model",
                                     "--tp",
                                     "--micro-batch",
                                     "--seq",
                                     "--for",
                                     "--kv-group",
                                     "--max-mem-bytes",
                                     "--max-coll-bytes",
                                     "--intra-bw-GBps",
                                     "--inter-bw-GBps",
                                     "--system"};

static int apply(struct lpp_opts *o, const char *opt, const char *val, struct lp_err *err)
{
    if (!strcmp(opt, "-o")) {
        if (!*val) LP_FAIL(err, LP_EINVAL, "-o: empty file name");
        o->out_path = val;
    } else if (!strcmp(opt, "--only")) {
        LP_TRY(err, parse_families(val, o->family, err));
    } else if (!strcmp(opt, "--precisions")) {
        LP_TRY(err, parse_precisions(val, o->prec, err));
        o->prec_given = true;
    } else if (!strcmp(opt, "--reps")) {
        LP_TRY(err, parse_int(opt, val, 1, LPP_REPS_MAX, &o->reps, err));
        o->reps_given = true;
    } else if (!strcmp(opt, "--warmup")) {
        LP_TRY(err, parse_int(opt, val, 0, 1000, &o->warmup, err));
        o->warmup_given = true;
    } else if (!strcmp(opt, "--device")) {
        LP_TRY(err, parse_int(opt, val, 0, 1023, &o->device, err));
    } else if (!strcmp(opt, "--for-model")) {
        LP_TRY(err, copy_name(opt, val, o->for_model, sizeof(o->for_model), err));
    } else if (!strcmp(opt, "--for")) {
        if (!*val) LP_FAIL(err, LP_EINVAL, "--for: empty file name");
        o->for_sweep = val;
    } else if (!strcmp(opt, "--tp")) {
        LP_TRY(err, lpp_parse_int_list(val, o->tp, LPP_LIST_MAX, &o->ntp, err));
    } else if (!strcmp(opt, "--micro-batch")) {
        LP_TRY(err, lpp_parse_int_list(val, o->mb, LPP_LIST_MAX, &o->nmb, err));
    } else if (!strcmp(opt, "--seq")) {
        LP_TRY(err, parse_int(opt, val, 1, 16777216, &o->seq, err));
    } else if (!strcmp(opt, "--kv-group")) {
        LP_TRY(err, parse_int(opt, val, 1, 1024, &o->kv_group, err));
    } else if (!strcmp(opt, "--max-mem-bytes")) {
        LP_TRY(err, parse_pos_double(opt, val, &o->max_mem_bytes, err));
    } else if (!strcmp(opt, "--max-coll-bytes")) {
        LP_TRY(err, parse_pos_double(opt, val, &o->max_coll_bytes, err));
    } else if (!strcmp(opt, "--intra-bw-GBps")) {
        LP_TRY(err, parse_pos_double(opt, val, &o->intra_bw_GBps, err));
    } else if (!strcmp(opt, "--inter-bw-GBps")) {
        LP_TRY(err, parse_pos_double(opt, val, &o->inter_bw_GBps, err));
    } else if (!strcmp(opt, "--system")) {
        LP_TRY(err, copy_name(opt, val, o->system, sizeof(o->system), err));
    } else {
        LP_FAIL(err, LP_EINVAL, "unknown option \"%s\" (see --help)", opt);
    }
    return LP_OK;
}

static int check(const struct lpp_opts *o, struct lp_err *err)
{
    bool targeted = o->for_model[0] || o->for_sweep;
    if (o->for_model[0] && o->for_sweep)
        LP_FAIL(err, LP_EINVAL, "--for and --for-model are exclusive");
    if (!targeted && (o->ntp || o->nmb || o->seq))
        LP_FAIL(err, LP_EINVAL, "--tp, --micro-batch and --seq need --for-model (or --for)");
    if (o->for_sweep && (o->ntp || o->nmb))
        LP_FAIL(err, LP_EINVAL, "--for takes TP and micro-batch values from the sweep file");
    if (targeted && o->quick)
        LP_FAIL(err, LP_EINVAL, "--quick and --for-model/--for are exclusive");
    if (o->max_mem_bytes < 4096)
        LP_FAIL(err, LP_EINVAL, "--max-mem-bytes: at least 4096 (got %.0f)", o->max_mem_bytes);
    if (o->max_coll_bytes < 1024)
        LP_FAIL(err, LP_EINVAL, "--max-coll-bytes: at least 1024 (got %.0f)", o->max_coll_bytes);
    if (o->system[0] && (o->intra_bw_GBps > 0 || o->inter_bw_GBps > 0))
        LP_FAIL(err, LP_EINVAL, "--system and --intra-bw-GBps/--inter-bw-GBps are exclusive");
    return LP_OK;
}

int lpp_opts_parse(int argc, char **argv, struct lpp_opts *o, struct lp_err *err)
{
    lpp_opts_default(o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            o->help = true;
            continue;
        }
        if (!strcmp(a, "--quick")) {
            o->quick = true;
            continue;
        }
        if (!strcmp(a, "--dry-run")) {
            o->dry_run = true;
            continue;
        }
        if (!strcmp(a, "--no-flush-l2")) {
            o->flush_l2 = false;
            continue;
        }
        /* "--opt=value" */
        char opt[32];
        const char *val = NULL;
        const char *eq = a[0] == '-' && a[1] == '-' ? strchr(a, '=') : NULL;
        size_t olen = eq ? (size_t)(eq - a) : strlen(a);
        if (olen >= sizeof(opt)) LP_FAIL(err, LP_EINVAL, "unknown option \"%s\" (see --help)", a);
        memcpy(opt, a, olen);
        opt[olen] = '\0';
        bool takes = false;
        for (size_t j = 0; j < sizeof(valued) / sizeof(valued[0]); j++)
            if (!strcmp(opt, valued[j])) takes = true;
        if (!takes) LP_FAIL(err, LP_EINVAL, "unknown option \"%s\" (see --help)", a);
        if (eq) {
            val = eq + 1;
        } else {
            if (i + 1 >= argc) LP_FAIL(err, LP_EINVAL, "%s: missing value", opt);
            val = argv[++i];
        }
        LP_TRY(err, apply(o, opt, val, err));
    }
    if (o->help) return LP_OK;
    LP_TRY(err, check(o, err));
    return LP_OK;
}
