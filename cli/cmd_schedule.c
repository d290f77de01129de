/* llmplan schedule JOBS.json: several training jobs on one cluster
 * (include/llmplan/cluster.h, docs/case-studies.md section 4).
 *
 * Every training time the policies ask for comes from the simulator, through
 * the library: a job's own configuration is simulated as `llmplan simulate`
 * would; llmplan's plan at an allocation is the fastest feasible
 * configuration of the job's space (the same walk as `llmplan search`:
 * lp_space_decode, lp_space_evaluate), computed once per job before the
 * replay. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "llmplan/cluster.h"
#include "llmplan/io.h"
#include "llmplan/profile.h"
#include "llmplan/sim.h"

struct times {
    const struct lp_jobs *jobs;
    double *own;         /* [job] seconds in its pool, INFINITY when infeasible or not given */
    double *plan;        /* [(job * npools + pool) * nalloc + k] */
    struct lp_run *best; /* [job]: llmplan's configuration at its own pool and gpus */
};

static size_t at(const struct lp_jobs *J, int job, int pool, int k)
{
    return ((size_t)job * (size_t)J->npools + (size_t)pool) * (size_t)J->nalloc + (size_t)k;
}

static double time_cb(void *ctx, int job, int pool, int gpus, bool own)
{
    const struct times *t = ctx;
    const struct lp_jobs *J = t->jobs;
    if (own) return pool == J->job[job].pool && gpus == J->job[job].gpus ? t->own[job] : INFINITY;
    for (int k = 0; k < J->nalloc; k++)
        if (J->alloc[k] == gpus) return t->plan[at(J, job, pool, k)];
    return INFINITY;
}

static double train_s(const struct lp_result *res)
{
    return res->feasible ? res->time_days * 86400.0 : INFINITY;
}

/* The fastest feasible configuration of job j's space in pool p at each
 * allocation. */
static int plan_job(struct lp_sim *sim, const struct lp_jobs *J, int j, int p, struct times *t,
                    struct lp_err *err)
{
    if (!J->job[j].plan[p]) return LP_OK; /* no allocation fits the pool */
    struct lp_space sp;
    LP_TRY(err, lp_space_init(&sp, J->job[j].plan[p], err));
    struct lp_run run;
    struct lp_result res;
    uint64_t size = lp_space_size(&sp);
    for (uint64_t i = 0; i < size;) {
        enum lp_reason why;
        uint64_t span = 1;
        if (lp_space_decode(&sp, i, &run, &why, &span) == LP_SPACE_SKIP) {
            i += span;
            continue;
        }
        i++;
        lp_space_evaluate(sim, &run, &res);
        int g = res.gpus;
        for (int k = 0; k < J->nalloc; k++) {
            size_t a = at(J, j, p, k);
            if (J->alloc[k] == g && train_s(&res) < t->plan[a]) {
                t->plan[a] = train_s(&res);
                if (p == J->job[j].pool && g == J->job[j].gpus) t->best[j] = run;
            }
        }
    }
    return LP_OK;
}

static void describe(const struct lp_run *r, char *buf, size_t len)
{
    snprintf(buf, len, "tp%d pp%d dp%d mb%d %s%s z%d", r->par.tp, r->par.pp, r->par.dp,
             r->par.micro_batch, lp_recompute_name(r->par.recompute),
             r->par.sequence_parallel ? " sp" : "", r->par.zero);
}

static double days(double s)
{
    return s / 86400.0;
}

static void print_jobs(const struct lp_jobs *J, const struct times *t)
{
    printf("%-28s %7s %8s %9s %6s  %-30s %8s  %-30s %8s%s\n", "job", "arrives", "deadline",
           "tokens", "GPUs", "own configuration", "days", "llmplan at the same GPUs", "days",
           J->npools > 1 ? "  pool" : "");
    for (int j = 0; j < J->njobs; j++) {
        const struct lp_job_spec *s = &J->job[j];
        char own[96] = "-", pl[96] = "-", dl[16] = "-";
        if (s->has_own) describe(&s->own, own, sizeof(own));
        double tp = INFINITY;
        for (int k = 0; k < J->nalloc; k++)
            if (J->alloc[k] == s->gpus) {
                size_t a = at(J, j, s->pool, k);
                tp = t->plan[a];
                if (isfinite(tp)) describe(&t->best[j], pl, sizeof(pl));
            }
        if (s->deadline_s >= 0) snprintf(dl, sizeof(dl), "%.1f", days(s->deadline_s));
        printf("%-28.28s %7.1f %8s %9.3g %6d  %-30s %8.2f  %-30s %8.2f%s%s\n", s->name,
               days(s->arrival_s), dl, s->tokens, s->gpus, own, days(t->own[j]), pl, days(tp),
               J->npools > 1 ? "  " : "", J->npools > 1 ? J->pool[s->pool].system : "");
    }
    for (int p = 0; p < J->npools; p++) {
        printf("\nllmplan's fastest plan per allocation, days%s%s\n%-28s",
               J->npools > 1 ? ", pool " : "", J->npools > 1 ? J->pool[p].system : "", "job");
        for (int k = 0; k < J->nalloc && J->alloc[k] <= J->pool[p].gpus; k++)
            printf(" %8d", J->alloc[k]);
        printf("\n");
        for (int j = 0; j < J->njobs; j++) {
            printf("%-28.28s", J->job[j].name);
            for (int k = 0; k < J->nalloc && J->alloc[k] <= J->pool[p].gpus; k++)
                printf(" %8.2f", days(t->plan[at(J, j, p, k)]));
            printf("\n");
        }
    }
}

/* DIR/<policy>.csv: one line per segment, written atomically. */
static int write_gantt(const char *dir, enum lp_policy p, const struct lp_jobs *J,
                       const struct lp_cluster_out *o, struct lp_err *err)
{
    size_t cap = 128 + (size_t)o->nseg * (2 * LP_NAME_LEN + 96), n = 0;
    char *buf = malloc(cap);
    if (!buf) LP_FAIL(err, LP_ENOMEM, "out of memory");
    n += (size_t)snprintf(buf + n, cap - n,
                          "job,name,gpus,start_days,end_days,restart,pool,pool_name\n");
    for (int s = 0; s < o->nseg; s++) {
        const struct lp_segment *g = &o->seg[s];
        char name[LP_NAME_LEN], pool[LP_NAME_LEN];
        snprintf(name, sizeof(name), "%s", J->job[g->job].name);
        snprintf(pool, sizeof(pool), "%s", J->pool[g->pool].system);
        for (char *c = name; *c; c++)
            if (*c == ',' || *c == '"' || *c == '\n') *c = ' ';
        for (char *c = pool; *c; c++) /* a preset with overrides: "name[k=v,k=v]" */
            if (*c == ',' || *c == '"' || *c == '\n') *c = ' ';
        n += (size_t)snprintf(buf + n, cap - n, "%d,%s,%d,%.9g,%.9g,%d,%d,%s\n", g->job, name,
                              g->gpus, days(g->start_s), days(g->end_s), g->restart ? 1 : 0,
                              g->pool, pool);
    }
    char path[1200];
    snprintf(path, sizeof(path), "%s/%s.csv", dir, lp_policy_name(p));
    int rc = lp_write_file_atomic(path, buf, n, err);
    free(buf);
    return rc;
}

static void print_policy(enum lp_policy p, const struct lp_jobs *J, const struct lp_cluster_out *o)
{
    int with = 0;
    for (int j = 0; j < J->njobs; j++)
        with += J->job[j].deadline_s >= 0;
    printf("%-8s %9.2f %9.2f %9.2f %9.2f %6.1f%% %6d/%-3d %6d", lp_policy_name(p),
           days(o->makespan_s), days(o->mean_jct_s), days(o->p95_jct_s), days(o->max_jct_s),
           100.0 * o->utilisation, o->deadline_misses, with, o->unschedulable);
    for (int q = 0; J->npools > 1 && q < J->npools; q++)
        printf("%s%s %.1f%%", q ? ", " : "   GPU util per pool: ", J->pool[q].system,
               100.0 * o->pool_utilisation[q]);
    printf("\n");
}

static void usage(FILE *f)
{
    fprintf(f, "usage: llmplan schedule JOBS.json [--policy fcfs|planned|elastic|all]\n"
               "                        [--gantt DIR] [--profile FILE|roofline]\n"
               "  --policy   the policy to replay (default all three)\n"
               "  --gantt    write DIR/<policy>.csv: one line per job segment (GPUs held,\n"
               "             start and end in days, restart, pool index and name) for\n"
               "             scripts/cluster_gantt.py\n"
               "  --profile  kernel profile (default data/profiles/<gpu>.h5, or the file's\n"
               "             \"profile\")\n");
}

static int run(const char *file, const char *policy, const char *gantt, const char *profile,
               struct lp_err *err)
{
    struct lp_jobs *J = NULL;
    struct lp_profile *prof[LP_CLUSTER_MAX_POOLS] = {0};
    struct lp_sim *sim[LP_CLUSTER_MAX_POOLS] = {0};
    struct lp_cjob *cj = NULL;
    struct times t = {0};
    char used[LP_CLUSTER_MAX_POOLS][1024];
    int rc = lp_jobs_load(file, &J, err);
    if (rc < 0) goto cleanup;
    for (int p = 0; p < J->npools && rc >= 0; p++) { /* a cost model per pool's GPU */
        const struct lp_system *sys = &J->pool[p].sys;
        const char *choice = lp_profile_choice(profile, sys, J->profile);
        struct lp_cost_model cm;
        bool mismatch = false;
        rc = lp_cost_model_choose(choice, sys, false, &prof[p], &cm, used[p], sizeof(used[p]),
                                  &mismatch, err);
        if (rc >= 0) rc = lp_sim_create(&cm, &sim[p], err);
    }
    if (rc < 0) goto cleanup;
    size_t n = (size_t)J->njobs, na = (size_t)J->nalloc, np = (size_t)J->npools;
    t.jobs = J;
    t.own = malloc(n * sizeof(double));
    t.plan = malloc(n * np * na * sizeof(double));
    t.best = calloc(n, sizeof(struct lp_run));
    cj = calloc(n, sizeof(*cj));
    if (!t.own || !t.plan || !t.best || !cj) {
        rc = lp_err_set_at(err, LP_ENOMEM, __FILE__, __LINE__, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < n * np * na; i++)
        t.plan[i] = INFINITY;
    for (int j = 0; j < J->njobs && rc >= 0; j++) {
        const struct lp_job_spec *s = &J->job[j];
        struct lp_result res;
        t.own[j] = INFINITY;
        if (s->has_own) {
            lp_sim_run(sim[s->pool], &s->own, &res);
            t.own[j] = train_s(&res);
        }
        cj[j] = (struct lp_cjob){s->arrival_s, s->deadline_s, s->gpus, s->pool};
        for (int p = 0; p < J->npools && rc >= 0; p++)
            rc = plan_job(sim[p], J, j, p, &t, err);
    }
    if (rc < 0) goto cleanup;
    printf("cluster: ");
    for (int p = 0; p < J->npools; p++)
        printf("%s%d GPUs of %s (profile %s)", p ? " + " : "", J->pool[p].gpus, J->pool[p].system,
               used[p]);
    printf(", %d jobs; elastic restart %.0f min\n\n", J->njobs, J->restart_s / 60.0);
    print_jobs(J, &t);
    struct lp_cluster_in in = {.npools = J->npools,
                               .nalloc = J->nalloc,
                               .restart_s = J->restart_s,
                               .jobs = cj,
                               .njobs = J->njobs,
                               .time_s = time_cb,
                               .ctx = &t};
    for (int p = 0; p < J->npools; p++)
        in.pool_gpus[p] = J->pool[p].gpus;
    memcpy(in.alloc, J->alloc, sizeof(in.alloc));
    printf("\n%-8s %9s %9s %9s %9s %7s %10s %6s\n", "policy", "makespan", "mean JCT", "p95 JCT",
           "max JCT", "util", "missed", "unsched");
    printf("%-8s %9s %9s %9s %9s %7s %10s %6s\n", "", "days", "days", "days", "days", "GPU",
           "deadlines", "");
    for (int p = 0; p < LP_POLICY_COUNT && rc >= 0; p++) {
        if (strcmp(policy, "all") != 0 && strcmp(policy, lp_policy_name((enum lp_policy)p)) != 0)
            continue;
        bool needs_own = p != LP_POLICY_ELASTIC;
        bool have = true;
        for (int j = 0; j < J->njobs; j++)
            if (needs_own && (J->job[j].gpus <= 0 || (p == LP_POLICY_FCFS && !J->job[j].has_own)))
                have = false;
        if (!have) {
            if (strcmp(policy, "all") != 0) {
                rc = lp_err_set_at(err, LP_EINVAL, __FILE__, __LINE__,
                                   "%s: policy %s needs every job's 'gpus'%s", file,
                                   lp_policy_name((enum lp_policy)p),
                                   p == LP_POLICY_FCFS ? " and 'parallel'" : "");
                break;
            }
            printf("%-8s (skipped: not every job has its own gpus%s)\n",
                   lp_policy_name((enum lp_policy)p), p == LP_POLICY_FCFS ? " and parallel" : "");
            continue;
        }
        struct lp_cluster_out o;
        rc = lp_cluster_run(&in, (enum lp_policy)p, &o, err);
        if (rc < 0) break;
        print_policy((enum lp_policy)p, J, &o);
        if (gantt) rc = write_gantt(gantt, (enum lp_policy)p, J, &o, err);
        lp_cluster_out_free(&o);
    }
cleanup:
    free(t.own);
    free(t.plan);
    free(t.best);
    free(cj);
    for (int p = 0; p < LP_CLUSTER_MAX_POOLS; p++) {
        lp_sim_destroy(&sim[p]);
        lp_profile_destroy(&prof[p]);
    }
    lp_jobs_destroy(&J);
    return rc;
}

int lp_cmd_schedule(int argc, char **argv)
{
    const char *file = NULL, *policy = "all", *gantt = NULL, *profile = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--policy") && i + 1 < argc) {
            policy = argv[++i];
            enum lp_policy p;
            if (strcmp(policy, "all") != 0 && lp_policy_parse(policy, &p) != LP_OK) {
                fprintf(stderr,
                        "llmplan schedule: --policy: expected fcfs, planned, elastic or all, got "
                        "'%s'\n",
                        policy);
                return 2;
            }
        } else if (!strcmp(argv[i], "--gantt") && i + 1 < argc) {
            gantt = argv[++i];
        } else if (!strcmp(argv[i], "--profile") && i + 1 < argc) {
            profile = argv[++i];
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "llmplan schedule: unknown or incomplete option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (!file) {
            file = argv[i];
        } else {
            fprintf(stderr, "llmplan schedule: one JOBS.json expected, got '%s' too\n", argv[i]);
            return 2;
        }
    }
    if (!file) {
        usage(stderr);
        return 2;
    }
    struct lp_err err;
    lp_err_clear(&err);
    if (run(file, policy, gantt, profile, &err) < 0) {
        lp_cli_error(&err);
        return 1;
    }
    return 0;
}
