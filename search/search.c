/* llmplan search SWEEP.json: sweep a configuration space under MPI.
 *
 *   mpirun -np N llmplan search SWEEP.json [-o DIR] [--resume] [--no-dataset]
 *       [--chunk N] [--segment N] [--checkpoint S] [--progress S] [--quiet]
 *       [--profile P]
 *
 * Exit codes: 0 done (plans.json written, also when nothing is feasible or
 * the space is empty), 1 failure, 2 usage, 3 stopped by SIGTERM/SIGUSR1 with
 * a checkpoint written (rerun with --resume). docs/search.md has the rest. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "search_internal.h"

#define EXIT_INTERRUPTED 3
#define DEFAULT_CHUNK 256
#define DEFAULT_SEGMENT (UINT64_C(1) << 20)
#define DEFAULT_PROGRESS_S 5.0
#define DEFAULT_CHECKPOINT_S 600.0

/* The only mutable global of the driver: what an async-signal-safe handler
 * may set. Read at every step of a walk (lp_search_stop_requested). */
static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

bool lp_search_stop_requested(void)
{
    return g_stop != 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double lp_search_wall_s(const struct lp_search *s)
{
    return s->wall_before_s + (now_s() - s->t_start);
}

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
            DEFAULT_CHUNK, (unsigned long long)DEFAULT_SEGMENT, DEFAULT_CHECKPOINT_S,
            DEFAULT_PROGRESS_S);
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
    return 0;
}

/* --trace-top N (rank 0): the timelines of the N fastest plans, simulated
 * again with their system's evaluator, as DIR/trace-top<i>.json (i = 1 is
 * plans.json's time_optimal). */
static int trace_top(struct lp_search *s, const struct lp_results *all, struct lp_err *err)
{
    if (!s->opt.trace_top) return LP_OK;
    const struct lp_entry **list = NULL;
    size_t n = 0;
    LP_TRY(err, lp_results_top_sorted(all, LP_OBJ_TIME, &list, &n, err));
    int rc = LP_OK;
    for (size_t i = 0; i < n && i < s->opt.trace_top && rc == LP_OK; i++) {
        const struct lp_entry *e = list[i];
        int k = 0;
        while (k < s->nsys - 1 && strcmp(s->sweep->systems[k].name, e->run.system.name) != 0)
            k++;
        char path[LP_SWEEP_PATH_LEN + 48];
        snprintf(path, sizeof(path), "%s/trace-top%zu.json", s->opt.out_dir, i + 1);
        struct lp_result res;
        rc = lp_cli_trace(s->sim[k], &e->run, &res, path, s->opt.trace_detail, err);
    }
    free(list);
    return rc;
}

/* Every rank agrees on failure: the lowest (most negative) code wins. */
static int agree(struct lp_search *s, int rc)
{
    int all = rc;
    MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MIN, s->comm);
    return all;
}

static int mkdir_p(const char *dir, struct lp_err *err)
{
    char buf[LP_SWEEP_PATH_LEN];
    snprintf(buf, sizeof(buf), "%s", dir);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            LP_FAIL(err, LP_EIO, "%s: cannot create directory: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        LP_FAIL(err, LP_EIO, "%s: cannot create directory: %s", buf, strerror(errno));
    return LP_OK;
}

/* Rank 0: take the output directory's lock (DIR/.llmplan.lock, flock:
 * released by the kernel when the process ends, also by SIGKILL, so a
 * requeued job gets it back). A second search on the same directory is
 * refused instead of interleaving its writes with the first's. Creating
 * the lock file also proves the directory writable before any work. */
static int lock_output_dir(struct lp_search *s, struct lp_err *err)
{
    char path[LP_SWEEP_PATH_LEN + 32];
    snprintf(path, sizeof(path), "%s/.llmplan.lock", s->opt.out_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        LP_FAIL(err, LP_EIO, "%s: cannot write to the output directory: %s", s->opt.out_dir,
                strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char holder[32] = "";
        ssize_t n = pread(fd, holder, sizeof(holder) - 1, 0);
        holder[n > 0 ? n : 0] = '\0';
        holder[strcspn(holder, "\n")] = '\0';
        close(fd);
        if (e == EWOULDBLOCK)
            LP_FAIL(err, LP_EIO,
                    "%s: another llmplan search is using this output directory (pid %s on "
                    "its host, lock %s); wait for it to end or choose another -o",
                    s->opt.out_dir, holder[0] ? holder : "?", path);
        LP_FAIL(err, LP_EIO, "%s: cannot lock: %s", path, strerror(e));
    }
    char pid[32];
    int len = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
        int e = errno;
        close(fd);
        LP_FAIL(err, LP_EIO, "%s: cannot write to the output directory: %s", s->opt.out_dir,
                strerror(e));
    }
    s->lock_fd = fd;
    return LP_OK;
}

/* Rank 0: say what a run that starts afresh will replace. */
static void warn_overwrite(const struct lp_search *s)
{
    static const char *const names[] = {"plans.json", "sweep.h5", "sweep.h5.partial",
                                        LP_CHECKPOINT_FILE};
    char found[256] = "";
    size_t off = 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char path[LP_SWEEP_PATH_LEN + 32];
        snprintf(path, sizeof(path), "%s/%s", s->opt.out_dir, names[i]);
        if (access(path, F_OK) == 0 && off < sizeof(found))
            off += (size_t)snprintf(found + off, sizeof(found) - off, "%s%s", off ? ", " : "",
                                    names[i]);
    }
    if (found[0])
        fprintf(stderr, "search: %s: replacing %s%s\n", s->opt.out_dir, found,
                strstr(found, LP_CHECKPOINT_FILE) ? " (--resume continues a checkpoint instead)"
                                                  : "");
}

/* Read the sweep on rank 0 and broadcast its text (one file-system read for
 * any number of ranks); every rank parses the same bytes. Collective. */
static int load_sweep(struct lp_search *s, struct lp_err *err)
{
    long long len = -1;
    int rc = LP_OK;
    if (s->rank == 0) {
        size_t n = 0;
        rc = lp_read_file(s->opt.sweep_path, &s->sweep_text, &n, err);
        len = rc == LP_OK ? (long long)n : -1;
    }
    MPI_Bcast(&len, 1, MPI_LONG_LONG, 0, s->comm);
    if (len < 0) return rc < 0 ? rc : LP_EIO;
    if (len > INT32_MAX) LP_FAIL(err, LP_EINVAL, "%s: sweep file too large", s->opt.sweep_path);
    if (s->rank != 0) {
        s->sweep_text = malloc((size_t)len + 1);
        if (!s->sweep_text) LP_FAIL(err, LP_ENOMEM, "out of memory");
        s->sweep_text[len] = '\0';
    }
    MPI_Bcast(s->sweep_text, (int)len, MPI_CHAR, 0, s->comm);
    LP_TRY(err, lp_sweep_parse(s->sweep_text, s->opt.sweep_path, &s->sweep, err));
    return LP_OK;
}

/* The cost model of each system (search/cost_model.c: --profile, else the
 * system's own profile, else the sweep's "profile", else
 * data/profiles/<gpu>.h5). Local (every rank loads its own). */
static int load_cost_models(struct lp_search *s, struct lp_err *err)
{
    size_t off = 0;
    s->nsys = s->sweep->nvalues[LP_DIM_SYSTEM];
    /* before the cost models copy the GPUs; part of profile_desc, so a resume
     * with another value is refused like one with another profile */
    if (s->opt.sustained > 0)
        for (int i = 0; i < s->nsys; i++)
            s->sweep->systems[i].gpu.sustained_frac = s->opt.sustained;
    for (int i = 0; i < s->nsys; i++) {
        const struct lp_system *sys = &s->sweep->systems[i];
        char desc[700], used[600];
        bool mismatch = false;
        const char *choice = lp_cli_profile_choice(s->opt.profile, sys, s->sweep->profile);
        int rc = lp_cli_cost_model(choice, sys, s->opt.allow_mismatch, &s->prof[i], &s->cm[i], used,
                                   sizeof(used), &mismatch, err);
        if (rc < 0) {
            char msg[LP_ERR_MSG];
            snprintf(msg, sizeof(msg), "%s", err->msg);
            LP_FAIL(err, rc, "%s: system %s: %s", s->opt.sweep_path, sys->name, msg);
        }
        if (!s->prof[i])
            snprintf(desc, sizeof(desc), "%s", used);
        else
            snprintf(desc, sizeof(desc), "%s (%016llx)", used,
                     (unsigned long long)(s->prof[i]->path[0] ? s->prof[i]->checksum
                                                              : lp_profile_checksum(s->prof[i])));
        if (mismatch) {
            if (s->rank == 0) lp_cli_warn_mismatch("search", s->prof[i], sys);
            const size_t d = strlen(desc);
            snprintf(desc + d, sizeof(desc) - d, ", MEASURED ON %s", s->prof[i]->gpu);
            const size_t m = strlen(s->mismatch_desc);
            snprintf(s->mismatch_desc + m, sizeof(s->mismatch_desc) - m, "%s%s: profile of %s",
                     m ? "; " : "", sys->name, s->prof[i]->gpu);
        }
        if (sys->gpu.sustained_frac > 0) {
            const size_t d = strlen(desc);
            snprintf(desc + d, sizeof(desc) - d, ", sustained %g", sys->gpu.sustained_frac);
        }
        off += (size_t)snprintf(s->profile_desc + off, sizeof(s->profile_desc) - off, "%s%s: %s",
                                i ? "; " : "", sys->name, desc);
        if (off >= sizeof(s->profile_desc)) off = sizeof(s->profile_desc) - 1;
        LP_TRY(err, lp_sim_create(&s->cm[i], &s->sim[i], err));
    }
    return LP_OK;
}

/* Forget what a checkpoint restored (rank 0): the sweep starts at index 0. */
static void start_over(struct lp_search *s)
{
    s->flush_seg = 0;
    s->rows_base = 0;
    s->wall_before_s = 0;
    s->done_before = 0;
    s->h5_rows = 0;
    memset(s->h5_sum, 0, sizeof(s->h5_sum));
    memset(s->h5_sum_base, 0, sizeof(s->h5_sum_base));
    memset(&s->counts, 0, sizeof(s->counts));
    s->done.n = 0;
    lp_results_clear(&s->res);
}

/* Resume: rank 0 reads the checkpoint and tells the others where to start;
 * the partial segment's rows come back from sweep.h5 into rank 0's buffer.
 * Collective. */
static int restore(struct lp_search *s, bool *resumed, struct lp_err *err)
{
    int rc = LP_OK;
    bool found = false;
    if (s->rank == 0 && s->opt.resume) rc = lp_checkpoint_read(s, &found, err);
    if (s->rank == 0 && rc == LP_OK && found && s->opt.dataset) {
        /* the partial dataset must match the checkpoint before any rank
         * opens it for writing; a damaged one starts the sweep over */
        bool ok = false;
        char why[600];
        rc = lp_h5_recover(s, &ok, why, sizeof(why), err);
        if (rc == LP_OK && !ok) {
            fprintf(stderr,
                    "search: %s: the partial dataset does not match the checkpoint (%s); it is "
                    "kept as sweep.h5.partial.damaged and the sweep starts over\n",
                    s->h5_path, why);
            start_over(s);
            lp_checkpoint_remove(s);
            found = false;
        }
    }
    if (s->rank == 0 && rc == LP_OK && !found) warn_overwrite(s);
    rc = agree(s, rc);
    if (rc < 0) return rc;
    uint64_t st[4] = {found, s->flush_seg, s->rows_base, 0};
    MPI_Bcast(st, 4, MPI_UINT64_T, 0, s->comm);
    *resumed = st[0] != 0;
    s->flush_seg = st[1];
    s->rows_base = st[2];
    if (s->opt.dataset) {
        rc = agree(s, lp_h5_open(s, *resumed, err));
        if (rc < 0) return rc;
    }
    if (*resumed && s->opt.dataset) {
        uint64_t n = 0;
        if (s->rank == 0)
            for (size_t i = 0; i < s->done.n; i++)
                n += s->done.r[i].rows;
        MPI_Bcast(&n, 1, MPI_UINT64_T, 0, s->comm);
        rc = agree(s, lp_h5_read_rows(s, s->rows_base, n, err));
        if (rc < 0) return rc;
        if (s->rank == 0) {
            lp_ranges_sort(&s->done);
            uint64_t at = 0;
            for (size_t i = 0; i < s->done.n; i++) {
                struct lp_range r = s->done.r[i];
                r.row_start = at;
                at += r.rows;
                LP_TRY(err, lp_ranges_push(&s->mine, &r, err));
            }
        }
    }
    return LP_OK;
}

static void summary(const struct lp_search *s, const struct lp_counts *t,
                    const struct lp_results *r, double wall)
{
    const uint64_t *v = t->v;
    fprintf(stderr,
            "search: %llu configurations: %llu evaluated (%llu feasible, %llu infeasible), "
            "%llu skipped, %.2f s on %d ranks (%.0f simulated/s, %.0f indices/s)\n",
            (unsigned long long)lp_space_size(&s->space), (unsigned long long)v[LP_COUNT_EVALUATED],
            (unsigned long long)v[LP_COUNT_FEASIBLE],
            (unsigned long long)(v[LP_COUNT_EVALUATED] - v[LP_COUNT_FEASIBLE]),
            (unsigned long long)v[LP_COUNT_SKIPPED], wall, s->size,
            wall > 0 ? (double)v[LP_COUNT_EVALUATED] / wall : 0.0,
            wall > 0 ? (double)v[LP_COUNT_DONE] / wall : 0.0);
    uint64_t excluded = 0;
    for (int c = 0; c < LP_CONS_COUNT; c++)
        excluded += v[LP_COUNT_EXCLUDED_BY_CONSTRAINT + c];
    if (excluded)
        fprintf(stderr, "search: %llu feasible configurations excluded by the constraints\n",
                (unsigned long long)excluded);
    const struct lp_entry *e = lp_results_best(r, LP_OBJ_TIME);
    if (!e) fprintf(stderr, "search: no feasible configuration\n");
    for (int o = 0; e && o < LP_OBJ_COUNT; o++) {
        const struct lp_entry *b = lp_results_best(r, (enum lp_objective)o);
        if (!r->active[o] || !b) continue;
        /* "fastest", "cheapest", "most tokens per usd", "lowest loss" */
        char what[64];
        snprintf(what, sizeof(what), "%s", lp_objective_best_name((enum lp_objective)o));
        for (char *c = what; *c; c++)
            if (*c == '_') *c = ' ';
        fprintf(stderr,
                "search: %s: %s on %d GPUs of %s tp=%d pp=%d dp=%d cp=%d mb=%d: %.3f s/iter", what,
                b->run.model.name, b->res.gpus, b->run.system.name, b->run.par.tp, b->run.par.pp,
                b->run.par.dp, b->run.par.cp, b->run.par.micro_batch, b->res.iteration_time_s);
        if (b->res.time_days > 0)
            fprintf(stderr, ", %.1f days, $%.4g", b->res.time_days, b->res.cost_usd);
        else
            fprintf(stderr, ", $%.4g per iteration", b->res.cost_per_iteration_usd);
        if (o == LP_OBJ_TOKENS_PER_USD) fprintf(stderr, ", %.4g tokens/$", b->res.tokens_per_usd);
        if (o == LP_OBJ_LOSS) fprintf(stderr, ", loss %.4f", b->res.loss);
        fputc('\n', stderr);
    }
    if (s->size > 1)
        fprintf(stderr, "search: rank 0 answered %llu work requests, %.1f us each (%.3f s)\n",
                (unsigned long long)s->served,
                s->served ? 1e6 * s->serve_s / (double)s->served : 0.0, s->serve_s);
    fprintf(stderr, "search: wrote %s/plans.json%s\n", s->opt.out_dir,
            s->opt.dataset ? " and sweep.h5" : "");
}

/* Everything after MPI set-up. Collective. Returns 0, 1 or 3. */
static int run(struct lp_search *s, const char *out_arg, struct lp_err *err)
{
    int rc = agree(s, load_sweep(s, err));
    if (rc < 0) return 1;
    snprintf(s->opt.out_dir, sizeof(s->opt.out_dir), "%s",
             out_arg               ? out_arg
             : s->sweep->output[0] ? s->sweep->output
                                   : ".");
    /* rows go to sweep.h5.partial until the sweep completes; only then is it
     * renamed to sweep.h5, so a sweep.h5 is always whole */
    snprintf(s->h5_path, sizeof(s->h5_path), "%s/sweep.h5.partial", s->opt.out_dir);
    if (s->rank == 0) rc = mkdir_p(s->opt.out_dir, err);
    if (s->rank == 0 && rc == LP_OK) rc = lock_output_dir(s, err);
    if (agree(s, rc) < 0) return 1;
    if (agree(s, load_cost_models(s, err)) < 0) return 1;
    /* how far to trust each plan (#17): the bands scripts/validate wrote;
     * a file that is absent gives plans without "trust", a bad one fails */
    if (s->rank == 0) rc = lp_trust_load_default(&s->trust, err);
    if (agree(s, rc) < 0) return 1;
    if (agree(s, lp_space_init(&s->space, s->sweep, err)) < 0) return 1;
    if (agree(s, lp_results_init(&s->res, s->sweep->top_k, err)) < 0) return 1;
    lp_results_group_by(&s->res, &s->space);
    lp_results_objectives(&s->res, s->sweep);
    bool resumed = false;
    if (restore(s, &resumed, err) < 0) return 1;
    if (s->rank == 0 && !s->opt.quiet)
        fprintf(stderr, "search: %s: %llu configurations on %d ranks%s\n", s->opt.sweep_path,
                (unsigned long long)lp_space_size(&s->space), s->size, resumed ? " (resumed)" : "");
    s->t_start = now_s();

    rc = lp_sched_run(s, err);
    if (rc < 0 && rc != LP_EINTERRUPT) {
        /* a failure inside the dynamic phase (allocation, MPI, HDF5): the
         * other ranks may be waiting on this one, so end the job here */
        lp_cli_error(err);
        if (s->size > 1) MPI_Abort(s->comm, 1);
        err->code = 0; /* printed */
        return 1;
    }
    bool interrupted = rc == LP_EINTERRUPT;

    struct lp_results all;
    struct lp_counts total;
    memset(&total, 0, sizeof(total));
    if (agree(s, lp_reduce(s, &all, &total, err)) < 0) return 1;
    double wall = lp_search_wall_s(s);
    MPI_Bcast(&wall, 1, MPI_DOUBLE, 0, s->comm);
    MPI_Bcast(total.v, LP_COUNT_N, MPI_UINT64_T, 0, s->comm);
    /* order: dataset closed and renamed, then plans.json, then the
     * checkpoint removed; a kill in between leaves a resumable state */
    rc = LP_OK;
    if (s->opt.dataset) rc = agree(s, lp_h5_close(s, !interrupted, &total, err));
    if (rc == LP_OK && !interrupted && s->rank == 0) {
        char path[LP_SWEEP_PATH_LEN + 32];
        if (s->opt.dataset) {
            snprintf(path, sizeof(path), "%s/sweep.h5", s->opt.out_dir);
            if (rename(s->h5_path, path) != 0)
                rc = lp_err_set_at(err, LP_EIO, __FILE__, __LINE__, "%s: rename to %s failed: %s",
                                   s->h5_path, path, strerror(errno));
        }
        snprintf(path, sizeof(path), "%s/plans.json", s->opt.out_dir);
        struct lp_plans_info info = {lp_space_size(&s->space),
                                     wall,
                                     s->size,
                                     s->opt.sweep_path,
                                     s->profile_desc,
                                     s->sweep->train.tokens > 0 ? s->sweep->train.tokens
                                                                : s->sweep->train.tokens_per_param,
                                     s->mismatch_desc,
                                     s->sweep,
                                     s->trust};
        if (rc == LP_OK) rc = lp_plans_write(path, &all, &total, &info, err);
        if (rc == LP_OK) rc = trace_top(s, &all, err);
        if (rc == LP_OK) lp_checkpoint_remove(s);
    }
    if (agree(s, rc) < 0) {
        lp_results_free(&all);
        return 1;
    }
    if (s->rank == 0 && !s->opt.quiet && !interrupted) summary(s, &total, &all, wall);
    lp_results_free(&all);
    if (interrupted) {
        if (s->rank == 0)
            fprintf(stderr,
                    "llmplan search: stopped by a signal after %llu of %llu "
                    "configurations; checkpoint written; rerun with --resume\n",
                    (unsigned long long)total.v[LP_COUNT_DONE],
                    (unsigned long long)lp_space_size(&s->space));
        return EXIT_INTERRUPTED;
    }
    return 0;
}

static void search_free(struct lp_search *s)
{
    struct lp_err ignore;
    lp_err_clear(&ignore);
    if (s->h5) lp_h5_close(s, false, NULL, &ignore);
    for (int i = 0; i < LP_SWEEP_MAX_VALUES; i++) {
        lp_sim_destroy(&s->sim[i]);
        lp_profile_destroy(&s->prof[i]);
    }
    lp_results_free(&s->res);
    lp_rows_free(&s->rows);
    lp_ranges_free(&s->mine);
    lp_ranges_free(&s->done);
    lp_sweep_destroy(&s->sweep);
    lp_trust_destroy(&s->trust);
    free(s->sweep_text);
    if (s->lock_fd >= 0) close(s->lock_fd); /* releases the lock */
}

int lp_cmd_search(int argc, char **argv)
{
    int provided = 0;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "llmplan search: MPI_Init_thread failed\n");
        return 1;
    }
    struct lp_search *s = calloc(1, sizeof(*s));
    if (!s) {
        fprintf(stderr, "llmplan search: out of memory\n");
        MPI_Finalize();
        return 1;
    }
    /* the library's own communicator: its messages never meet the caller's */
    MPI_Comm_dup(MPI_COMM_WORLD, &s->comm);
    MPI_Comm_rank(s->comm, &s->rank);
    MPI_Comm_size(s->comm, &s->size);
    s->lock_fd = -1;
    check_world(s->size);

    const char *out_arg = NULL;
    int code = parse_args(argc, argv, &s->opt, &out_arg, s->rank == 0);
    if (code == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGUSR1, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        struct lp_err err;
        lp_err_clear(&err);
        code = run(s, out_arg, &err);
        if (code == 1) {
            /* every rank returned after agreeing on a failure: the lowest
             * rank that has the message prints it */
            int me = err.code != 0 ? s->rank : s->size, first = me;
            MPI_Allreduce(&me, &first, 1, MPI_INT, MPI_MIN, s->comm);
            if (first == s->rank) lp_cli_error(&err);
        }
    } else if (code == 1) {
        code = 0; /* --help */
    }
    search_free(s);
    if (s->h5_unclosable) {
        /* a dataset HDF5 could not close (a full disk): MPI_Finalize would
         * end the HDF5 library, which closes that file again and crashes
         * (HDF5 1.10); the error is printed, the status is the answer */
        fflush(NULL);
        _exit(code ? code : 1);
    }
    MPI_Comm_free(&s->comm);
    free(s);
    MPI_Finalize();
    return code;
}
