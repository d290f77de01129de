/* The MPI search driver (llmplan/search_mpi.h): lp_search_run sweeps a
 * configuration space over the caller's communicator; the command line
 * around it is cli/cmd_search.c. docs/search.md has the rest. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "search_internal.h"

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

void lp_search_say(const struct lp_search *s, enum lp_search_note kind, const char *fmt, ...)
{
    if (!s->opt.note) return;
    char small[1024], *line = small;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small) - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof(small) - 1) { /* a long path: format again at its length */
        line = malloc((size_t)n + 2);
        if (!line) return;
        va_start(ap, fmt);
        vsnprintf(line, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    line[n] = '\n';
    line[n + 1] = '\0';
    s->opt.note(s->opt.note_ctx, kind, line);
    if (line != small) free(line);
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
        rc = lp_trace_run(s->sim[k], &e->run, &res, path, s->opt.trace_detail, err);
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
        lp_search_say(
            s, LP_SEARCH_NOTE_WARNING, "search: %s: replacing %s%s", s->opt.out_dir, found,
            strstr(found, LP_CHECKPOINT_FILE) ? " (--resume continues a checkpoint instead)" : "");
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

/* The cost model of each system (src/io/cost_model.c: --profile, else the
 * system's own profile, else the sweep's "profile", else
 * data/profiles/<gpu>.h5). Local (every rank loads its own). */
static int load_cost_models(struct lp_search *s, struct lp_err *err)
{
    size_t off = 0;
    s->nsys = s->sweep->nvalues[LP_DIM_SYSTEM];
    /* before the cost models copy the GPUs; part of profile_desc, so a resume
     * with another value is refused like one with another profile */
    if (s->opt.sustained > 0)
        for (int i = 0; i < s->nsys; i++) {
            s->sweep->systems[i].gpu.sustained_frac = s->opt.sustained;
            s->sweep->systems[i].gpu.sustained_override = true;
        }
    for (int i = 0; i < s->nsys; i++) {
        const struct lp_system *sys = &s->sweep->systems[i];
        char desc[700], used[600];
        bool mismatch = false;
        const char *choice = lp_profile_choice(s->opt.profile, sys, s->sweep->profile);
        int rc = lp_cost_model_choose(choice, sys, s->opt.allow_mismatch, &s->prof[i], &s->cm[i],
                                      used, sizeof(used), &mismatch, err);
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
            if (s->rank == 0) {
                char msg[1024];
                lp_profile_mismatch_msg(msg, sizeof(msg), "search", s->prof[i], sys);
                lp_search_say(s, LP_SEARCH_NOTE_WARNING, "%s", msg);
            }
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
        rc = lp_dataset_recover(s, &ok, why, sizeof(why), err);
        if (rc == LP_OK && !ok) {
            lp_search_say(s, LP_SEARCH_NOTE_WARNING,
                          "search: %s: the partial dataset does not match the checkpoint (%s); "
                          "it is kept as sweep.h5.partial.damaged and the sweep starts over",
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
        rc = agree(s, lp_dataset_open(s, *resumed, err));
        if (rc < 0) return rc;
    }
    if (*resumed && s->opt.dataset) {
        uint64_t n = 0;
        if (s->rank == 0)
            for (size_t i = 0; i < s->done.n; i++)
                n += s->done.r[i].rows;
        MPI_Bcast(&n, 1, MPI_UINT64_T, 0, s->comm);
        rc = agree(s, lp_dataset_read_rows(s, s->rows_base, n, err));
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

/* The ranks' schedule work (lp_sim_sched_stats of every simulator) summed
 * on rank 0. Collective. Since the processes started: a resumed sweep's
 * earlier runs are not in it, and how much the memo answers depends on how
 * the indices were dealt, so it goes to the summary, not to plans.json. */
static void sched_stats(const struct lp_search *s, struct lp_sched_stats *total)
{
    uint64_t mine[4] = {0, 0, 0, 0}, all[4] = {0, 0, 0, 0};
    for (int i = 0; i < LP_SWEEP_MAX_VALUES; i++) {
        if (!s->sim[i]) continue;
        struct lp_sched_stats st;
        lp_sim_sched_stats(s->sim[i], &st);
        mine[0] += st.solved;
        mine[1] += st.memo;
        mine[2] += st.ops;
        mine[3] += st.extrapolated;
    }
    MPI_Reduce(mine, all, 4, MPI_UINT64_T, MPI_SUM, 0, s->comm);
    *total = (struct lp_sched_stats){all[0], all[1], all[2], all[3]};
}

static void summary(const struct lp_search *s, const struct lp_counts *t,
                    const struct lp_results *r, const struct lp_sched_stats *sc, double wall)
{
    const uint64_t *v = t->v;
    const enum lp_search_note S = LP_SEARCH_NOTE_SUMMARY;
    lp_search_say(s, S,
                  "search: %llu configurations: %llu evaluated (%llu feasible, %llu infeasible), "
                  "%llu skipped, %.2f s on %d ranks (%.0f simulated/s, %.0f indices/s)",
                  (unsigned long long)lp_space_size(&s->space),
                  (unsigned long long)v[LP_COUNT_EVALUATED],
                  (unsigned long long)v[LP_COUNT_FEASIBLE],
                  (unsigned long long)(v[LP_COUNT_EVALUATED] - v[LP_COUNT_FEASIBLE]),
                  (unsigned long long)v[LP_COUNT_SKIPPED], wall, s->size,
                  wall > 0 ? (double)v[LP_COUNT_EVALUATED] / wall : 0.0,
                  wall > 0 ? (double)v[LP_COUNT_DONE] / wall : 0.0);
    uint64_t excluded = 0;
    for (int c = 0; c < LP_CONS_COUNT; c++)
        excluded += v[LP_COUNT_EXCLUDED_BY_CONSTRAINT + c];
    if (excluded)
        lp_search_say(s, S, "search: %llu feasible configurations excluded by the constraints",
                      (unsigned long long)excluded);
    if (s->opt.prune)
        lp_search_say(s, S,
                      "search: %llu configurations pruned by their bounds (%llu could not rank, "
                      "%llu break a constraint)",
                      (unsigned long long)v[LP_COUNT_PRUNED],
                      (unsigned long long)v[LP_COUNT_PRUNED_RANKING],
                      (unsigned long long)v[LP_COUNT_PRUNED_CONSTRAINT]);
    const struct lp_entry *e = lp_results_best(r, LP_OBJ_TIME);
    if (!e) lp_search_say(s, S, "search: no feasible configuration");
    for (int o = 0; e && o < LP_OBJ_COUNT; o++) {
        const struct lp_entry *b = lp_results_best(r, (enum lp_objective)o);
        if (!r->active[o] || !b) continue;
        /* "fastest", "cheapest", "most tokens per usd", "lowest loss" */
        char what[64];
        snprintf(what, sizeof(what), "%s", lp_objective_best_name((enum lp_objective)o));
        for (char *c = what; *c; c++)
            if (*c == '_') *c = ' ';
        char cost[96] = "", extra[64] = "";
        if (b->res.time_days > 0)
            snprintf(cost, sizeof(cost), ", %.1f days, $%.4g", b->res.time_days, b->res.cost_usd);
        else
            snprintf(cost, sizeof(cost), ", $%.4g per iteration", b->res.cost_per_iteration_usd);
        if (o == LP_OBJ_TOKENS_PER_USD)
            snprintf(extra, sizeof(extra), ", %.4g tokens/$", b->res.tokens_per_usd);
        if (o == LP_OBJ_LOSS) snprintf(extra, sizeof(extra), ", loss %.4f", b->res.loss);
        lp_search_say(s, S,
                      "search: %s: %s on %d GPUs of %s tp=%d pp=%d dp=%d cp=%d mb=%d: %.3f "
                      "s/iter%s%s",
                      what, b->run.model.name, b->res.gpus, b->run.system.name, b->run.par.tp,
                      b->run.par.pp, b->run.par.dp, b->run.par.cp, b->run.par.micro_batch,
                      b->res.iteration_time_s, cost, extra);
    }
    lp_search_say(s, S,
                  "search: schedules: %llu solved, %llu answered by the memo; %llu operations "
                  "in the solved ones, %.1f%% extrapolated by the steady-state shortcuts",
                  (unsigned long long)sc->solved, (unsigned long long)sc->memo,
                  (unsigned long long)sc->ops,
                  sc->ops ? 100.0 * (double)sc->extrapolated / (double)sc->ops : 0.0);
    if (s->size > 1)
        lp_search_say(s, S, "search: rank 0 answered %llu work requests, %.1f us each (%.3f s)",
                      (unsigned long long)s->served,
                      s->served ? 1e6 * s->serve_s / (double)s->served : 0.0, s->serve_s);
    lp_search_say(s, S, "search: wrote %s/plans.json%s", s->opt.out_dir,
                  s->opt.dataset ? " and sweep.h5" : "");
}

/* Everything after MPI set-up. Collective. Returns LP_OK, LP_EINTERRUPT or
 * the agreed error (out->abort: this rank's alone). */
static int run(struct lp_search *s, const char *out_arg, struct lp_search_outcome *out,
               struct lp_err *err)
{
    int rc = agree(s, load_sweep(s, err));
    if (rc < 0) return rc;
    snprintf(s->opt.out_dir, sizeof(s->opt.out_dir), "%s",
             out_arg               ? out_arg
             : s->sweep->output[0] ? s->sweep->output
                                   : ".");
    /* rows go to sweep.h5.partial until the sweep completes; only then is it
     * renamed to sweep.h5, so a sweep.h5 is always whole */
    snprintf(s->h5_path, sizeof(s->h5_path), "%s/sweep.h5.partial", s->opt.out_dir);
    if (s->rank == 0) rc = mkdir_p(s->opt.out_dir, err);
    if (s->rank == 0 && rc == LP_OK) rc = lock_output_dir(s, err);
    if ((rc = agree(s, rc)) < 0) return rc;
    if ((rc = agree(s, load_cost_models(s, err))) < 0) return rc;
    /* how far to trust each plan (#17): the bands scripts/validate wrote;
     * a file that is absent gives plans without "trust", a bad one fails */
    if (s->rank == 0) rc = lp_trust_load_default(&s->trust, err);
    if ((rc = agree(s, rc)) < 0) return rc;
    if ((rc = agree(s, lp_space_init(&s->space, s->sweep, err))) < 0) return rc;
    if ((rc = agree(s, lp_results_init(&s->res, s->sweep->top_k, err))) < 0) return rc;
    lp_results_group_by(&s->res, &s->space);
    lp_results_objectives(&s->res, s->sweep);
    if (s->opt.prune &&
        (rc = agree(s, lp_bounds_init(&s->bounds,
                                      s->opt.prune_batch ? s->opt.prune_batch : LP_BOUNDS_BATCH,
                                      err))) < 0)
        return rc;
    bool resumed = false;
    if ((rc = restore(s, &resumed, err)) < 0) return rc;
    if (s->rank == 0 && !s->opt.quiet)
        lp_search_say(s, LP_SEARCH_NOTE_SUMMARY, "search: %s: %llu configurations on %d ranks%s",
                      s->opt.sweep_path, (unsigned long long)lp_space_size(&s->space), s->size,
                      resumed ? " (resumed)" : "");
    s->t_start = now_s();

    rc = lp_sched_run(s, err);
    if (rc < 0 && rc != LP_EINTERRUPT) {
        /* a failure inside the dynamic phase (allocation, MPI, HDF5): the
         * other ranks may be waiting on this one, so the caller ends the job */
        out->abort = s->size > 1;
        return rc;
    }
    bool interrupted = rc == LP_EINTERRUPT;

    struct lp_results all;
    struct lp_counts total;
    memset(&total, 0, sizeof(total));
    if ((rc = agree(s, lp_reduce(s, &all, &total, err))) < 0) return rc;
    struct lp_sched_stats sched;
    sched_stats(s, &sched);
    double wall = lp_search_wall_s(s);
    MPI_Bcast(&wall, 1, MPI_DOUBLE, 0, s->comm);
    MPI_Bcast(total.v, LP_COUNT_N, MPI_UINT64_T, 0, s->comm);
    /* order: dataset closed and renamed, then plans.json, then the
     * checkpoint removed; a kill in between leaves a resumable state */
    rc = LP_OK;
    if (s->opt.dataset) rc = agree(s, lp_dataset_close(s, !interrupted, &total, err));
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
                                     s->trust,
                                     s->opt.prune};
        if (rc == LP_OK) rc = lp_plans_write(path, &all, &total, &info, err);
        if (rc == LP_OK) rc = trace_top(s, &all, err);
        if (rc == LP_OK) lp_checkpoint_remove(s);
    }
    if ((rc = agree(s, rc)) < 0) {
        lp_results_free(&all);
        return rc;
    }
    if (s->rank == 0 && !s->opt.quiet && !interrupted) summary(s, &total, &all, &sched, wall);
    lp_results_free(&all);
    out->done = total.v[LP_COUNT_DONE];
    out->size = lp_space_size(&s->space);
    return interrupted ? LP_EINTERRUPT : LP_OK;
}

static void search_free(struct lp_search *s)
{
    struct lp_err ignore;
    lp_err_clear(&ignore);
    if (s->h5) lp_dataset_close(s, false, NULL, &ignore);
    for (int i = 0; i < LP_SWEEP_MAX_VALUES; i++) {
        lp_sim_destroy(&s->sim[i]);
        lp_profile_destroy(&s->prof[i]);
    }
    lp_results_free(&s->res);
    lp_bounds_free(&s->bounds);
    lp_rows_free(&s->rows);
    lp_ranges_free(&s->mine);
    lp_ranges_free(&s->done);
    lp_sweep_destroy(&s->sweep);
    lp_trust_destroy(&s->trust);
    free(s->sweep_text);
    free(s->h5_names);
    free(s->h5_params);
    if (s->lock_fd >= 0) close(s->lock_fd); /* releases the lock */
}

void lp_search_catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

int lp_search_run(MPI_Comm comm, const struct lp_search_opts *opt, const char *out_arg,
                  struct lp_search_outcome *out, struct lp_err *err)
{
    memset(out, 0, sizeof(*out));
    struct lp_search *s = calloc(1, sizeof(*s));
    int failed = s == NULL, any = failed;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, comm);
    if (any) {
        free(s);
        if (failed) LP_FAIL(err, LP_ENOMEM, "out of memory");
        lp_err_clear(err);
        return LP_ENOMEM;
    }
    /* the library's own communicator: its messages never meet the caller's */
    MPI_Comm_dup(comm, &s->comm);
    MPI_Comm_rank(s->comm, &s->rank);
    MPI_Comm_size(s->comm, &s->size);
    s->lock_fd = -1;
    s->opt = *opt;
    int rc = run(s, out_arg, out, err);
    /* the caller ends the job: freeing would close the dataset, a
     * collective call the other ranks never make */
    if (out->abort) return rc;
    if (rc < 0 && rc != LP_EINTERRUPT) {
        /* every rank returned after agreeing on a failure: the lowest rank
         * that has the message keeps it */
        int me = err->code != 0 ? s->rank : s->size, first = me;
        MPI_Allreduce(&me, &first, 1, MPI_INT, MPI_MIN, s->comm);
        if (first != s->rank) lp_err_clear(err);
    }
    search_free(s);
    out->unclosable = s->h5_unclosable;
    if (!out->unclosable) MPI_Comm_free(&s->comm);
    free(s);
    return rc;
}
