/* llmplan search SWEEP.json: sweep a configuration space under MPI.
 *
 *   mpirun -np N llmplan search SWEEP.json [-o DIR] [--resume] [--no-dataset [--prune]]
 *       [--chunk N] [--segment N] [--checkpoint S] [--progress S] [--quiet]
 *       [--profile P]
 *
 * Exit codes: 0 done (plans.json written, also when nothing is feasible or
 * the space is empty), 1 failure, 2 usage, 3 stopped by SIGTERM/SIGUSR1 with
 * a checkpoint written (rerun with --resume). docs/search.md has the rest. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "cli.h"
#include "llmplan/search_mpi.h"

#define EXIT_INTERRUPTED 3
#define DEFAULT_CHUNK 256
#define DEFAULT_SEGMENT (UINT64_C(1) << 20)
#define DEFAULT_PROGRESS_S 5.0
#define DEFAULT_CHECKPOINT_S 600.0

/* An MPI world of one rank under a launcher that started more tasks (an MPI
 * library not built for that launcher: `srun` without --mpi=pmix, or a
 * binary of another MPI): each task would sweep everything alone. Warn. */
static void check_world(int size)
{
    static const char *const vars[] = {"SLURM_NTASKS", "PMI_SIZE", "PMIX_SIZE",
                                       "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS"};
    if (size != 1) return;
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        const long n = v ? strtol(v, NULL, 10) : 0;
        if (n > 1) {
            fprintf(stderr,
                    "search: WARNING: the MPI world has 1 rank but the launcher started %ld "
                    "tasks (%s=%s): each task sweeps everything on its own; check that llmplan's "
                    "MPI matches the launcher (srun --mpi=pmix, or mpirun of the same MPI)\n",
                    n, vars[i], v);
            return;
        }
    }
}

/* The driver's notes (progress, warnings, summary) go to stderr as they
 * come, one line each. */
static void print_note(void *ctx, enum lp_search_note kind, const char *line)
{
    (void)ctx;
    (void)kind;
    fputs(line, stderr);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -np N llmplan search SWEEP.json [options]\n"
            "\n"
            "Sweep every configuration of SWEEP.json (docs/search.md); write DIR/plans.json\n"
            "(time- and cost-optimal plans, Pareto front, top-k, counters) and DIR/sweep.h5\n"
            "(one row per evaluated configuration).\n"
            "\n"
            "options:\n"
            "  -o, --output DIR   output directory (default: the sweep's \"output\", else .)\n"
            "  --resume           continue from DIR/checkpoint.bin (start afresh if none)\n"
            "  --no-dataset       do not write sweep.h5\n"
            "  --prune            (with --no-dataset) skip the schedule solve of a\n"
            "                     configuration whose lower bounds prove it can enter no\n"
            "                     ranking nor meet the constraints; plans identical,\n"
            "                     counted in stats.pruned (docs/search.md, section 10)\n"
            "  --prune-batch N    bounds a rank holds before deciding them best first\n"
            "                     (default %d; about 480 bytes each; plans identical)\n"
            "  --profile P        override the sweep's \"profile\": FILE.h5, roofline or synth\n"
            "  --allow-profile-mismatch\n"
            "                     use profiles measured on another GPU than the system's\n"
            "                     (refused otherwise; warns and flags plans.json)\n"
            "  --sustained-frac F override every GPU's sustained fraction of its profile's\n"
            "                     compute throughput (docs/calibration.md)\n"
            "  --chunk N          smallest index range handed to a rank (default %d)\n"
            "  --segment N        indices per scheduling segment (default %llu)\n"
            "  --checkpoint S     write rows and a checkpoint at least every S seconds\n"
            "                     (default %g; 0 = only at the end and on a signal)\n"
            "  --progress S       progress line every S seconds on stderr (default %g; 0 = off)\n"
            "  --quiet            no progress line and no summary\n"
            "  --trace-top N      also write the timelines of the N fastest plans (plans.json\n"
            "                     top_time) as DIR/trace-top<i>.json (Chrome trace JSON)\n"
            "  --trace-detail D   their detail: stage, microbatch (default) or op\n"
            "  --stop-after N     (testing) rank 0 sends itself SIGUSR1 once this run has\n"
            "                     walked N indices\n"
            "\n"
            "SIGTERM or SIGUSR1 stops the sweep at the next step, writes a checkpoint and\n"
            "exits with status 3. Under mpirun send SIGUSR1 (mpirun forwards it; SIGTERM\n"
            "makes mpirun kill the ranks); under Slurm use --signal=B:USR1@120.\n",
            LP_BOUNDS_BATCH, DEFAULT_CHUNK, (unsigned long long)DEFAULT_SEGMENT,
            DEFAULT_CHECKPOINT_S, DEFAULT_PROGRESS_S);
}

static int parse_u64(const char *s, uint64_t min, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || !end || *end || s[0] == '-' || v < min) return -1;
    *out = v;
    return 0;
}

/* Returns 0 ok, 2 usage error (message printed by rank 0), 1 for --help. */
static int parse_args(int argc, char **argv, struct lp_search_opts *o, const char **out_arg,
                      bool loud)
{
    memset(o, 0, sizeof(*o));
    o->dataset = true;
    o->min_chunk = DEFAULT_CHUNK;
    o->segment = DEFAULT_SEGMENT;
    o->progress_s = DEFAULT_PROGRESS_S;
    o->checkpoint_s = DEFAULT_CHECKPOINT_S;
    o->trace_detail = LP_TRACE_MICROBATCH;
    *out_arg = NULL;
    size_t off = 0;
    for (int i = 0; i < argc && off < sizeof(o->cmdline); i++)
        off += (size_t)snprintf(o->cmdline + off, sizeof(o->cmdline) - off, "%s%s",
                                i ? " " : "llmplan ", argv[i]);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            if (loud) usage(stdout);
            return 1;
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && more) {
            *out_arg = argv[++i];
        } else if (!strcmp(a, "--resume")) {
            o->resume = true;
        } else if (!strcmp(a, "--no-dataset")) {
            o->dataset = false;
        } else if (!strcmp(a, "--prune")) {
            o->prune = true;
        } else if (!strcmp(a, "--allow-profile-mismatch")) {
            o->allow_mismatch = true;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = true;
        } else if (!strcmp(a, "--profile") && more) {
            o->profile = argv[++i];
        } else if (!strcmp(a, "--sustained-frac") && more) {
            char *end = NULL;
            o->sustained = strtod(argv[++i], &end);
            if (!end || *end || !(o->sustained > 0 && o->sustained <= 1)) goto bad_value;
        } else if (!strcmp(a, "--chunk") && more) {
            if (parse_u64(argv[++i], 1, &o->min_chunk)) goto bad_value;
        } else if (!strcmp(a, "--prune-batch") && more) {
            if (parse_u64(argv[++i], 1, &o->prune_batch) || o->prune_batch > LP_BOUNDS_MAX)
                goto bad_value;
        } else if (!strcmp(a, "--segment") && more) {
            if (parse_u64(argv[++i], 1, &o->segment)) goto bad_value;
        } else if (!strcmp(a, "--trace-top") && more) {
            if (parse_u64(argv[++i], 1, &o->trace_top)) goto bad_value;
        } else if (!strcmp(a, "--trace-detail") && more) {
            if (lp_trace_detail_parse(argv[++i], &o->trace_detail) < 0) {
                if (loud)
                    fprintf(stderr,
                            "llmplan search: --trace-detail: expected stage, microbatch or op, "
                            "got '%s'\n",
                            argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--stop-after") && more) {
            if (parse_u64(argv[++i], 1, &o->stop_after)) goto bad_value;
        } else if (!strcmp(a, "--checkpoint") && more) {
            char *end = NULL;
            o->checkpoint_s = strtod(argv[++i], &end);
            if (!end || *end || !(o->checkpoint_s >= 0)) goto bad_value;
        } else if (!strcmp(a, "--progress") && more) {
            char *end = NULL;
            o->progress_s = strtod(argv[++i], &end);
            if (!end || *end || !(o->progress_s >= 0)) goto bad_value;
        } else if (a[0] == '-') {
            if (loud) fprintf(stderr, "llmplan search: unknown option '%s' (see --help)\n", a);
            return 2;
        } else if (!o->sweep_path) {
            o->sweep_path = a;
        } else {
            if (loud) fprintf(stderr, "llmplan search: more than one sweep file ('%s')\n", a);
            return 2;
        }
        continue;
    bad_value:
        if (loud)
            fprintf(stderr, "llmplan search: option '%s': expected a %s number, got '%s'\n", a,
                    strcmp(a, "--progress") && strcmp(a, "--checkpoint") ? "positive integer"
                                                                         : "non-negative",
                    argv[i]);
        return 2;
    }
    if (!o->sweep_path) {
        if (loud) usage(stderr);
        return 2;
    }
    if (o->prune && o->dataset) {
        /* sweep.h5 has a row per configuration that fits: every one is simulated */
        if (loud) fprintf(stderr, "llmplan search: --prune needs --no-dataset\n");
        return 2;
    }
    return 0;
}

int lp_cmd_search(int argc, char **argv)
{
    int provided = 0;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "llmplan search: MPI_Init_thread failed\n");
        return 1;
    }
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_world(size);

    struct lp_search_opts opt;
    const char *out_arg = NULL;
    struct lp_search_outcome out = {0};
    int code = parse_args(argc, argv, &opt, &out_arg, rank == 0);
    if (code == 0) {
        lp_search_catch_signals();
        opt.note = print_note;
        opt.note_ctx = NULL;
        struct lp_err err;
        lp_err_clear(&err);
        int rc = lp_search_run(MPI_COMM_WORLD, &opt, out_arg, &out, &err);
        if (out.abort) {
            /* the other ranks may be waiting on this one: end the job */
            lp_cli_error(&err);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (rc == LP_EINTERRUPT) {
            if (rank == 0)
                fprintf(stderr,
                        "llmplan search: stopped by a signal after %llu of %llu "
                        "configurations; checkpoint written; rerun with --resume\n",
                        (unsigned long long)out.done, (unsigned long long)out.size);
            code = EXIT_INTERRUPTED;
        } else if (rc < 0) {
            if (err.code != 0) lp_cli_error(&err);
            code = 1;
        }
    } else if (code == 1) {
        code = 0; /* --help */
    }
    if (out.unclosable) {
        /* a dataset HDF5 could not close (a full disk): MPI_Finalize would
         * end the HDF5 library, which closes that file again and crashes
         * (HDF5 1.10); the error is printed, the status is the answer */
        fflush(NULL);
        _exit(code ? code : 1);
    }
    MPI_Finalize();
    return code;
}
