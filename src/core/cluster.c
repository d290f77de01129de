/* Several training jobs on one cluster: the policies of include/llmplan/cluster.h.
 *
 * fcfs and planned are the same queues, one per pool (a partition, as a
 * batch system keeps one queue per partition): jobs start in arrival order
 * (ties by their position in the trace), each on the GPUs of the pool it
 * asks for, as soon as that many are free; a job that does not fit blocks
 * the ones behind it in its pool (no backfilling, the simplest batch
 * scheduler). They differ only in the configuration the job trains with:
 * its own (fcfs) or llmplan's fastest at the same GPU count in the same
 * pool (planned), so the difference between the two is what planning the
 * configuration buys.
 *
 * elastic re-partitions the cluster at every arrival and completion, as an
 * elastic scheduler driven by a performance model does (Optimus, Peng et al.
 * EuroSys'18, Sec. 4: greedy allocation by marginal gain): every job present
 * first gets its smallest feasible allocation, in order of deadline, then
 * arrival (jobs that do not fit wait), in the pool whose free GPUs would
 * train it soonest, at the largest feasible allocation they hold (ties: the
 * pool it runs in, then the first); then the GPUs left in each pool go, one step up the allocation
 * list at a time, to the job of that pool whose remaining training time
 * falls most per extra GPU. A running job whose allocation or pool changes
 * stops for restart_s (save a checkpoint, restart with the new
 * configuration). Progress is kept as the fraction of the job's tokens
 * still to train. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "llmplan/cluster.h"

static const char *const POLICY_NAMES[LP_POLICY_COUNT] = {"fcfs", "planned", "elastic"};

const char *lp_policy_name(enum lp_policy p)
{
    return (unsigned)p < LP_POLICY_COUNT ? POLICY_NAMES[p] : "?";
}

int lp_policy_parse(const char *s, enum lp_policy *out)
{
    for (int i = 0; i < LP_POLICY_COUNT; i++)
        if (s && strcmp(s, POLICY_NAMES[i]) == 0) {
            *out = (enum lp_policy)i;
            return LP_OK;
        }
    return LP_EINVAL;
}

void lp_cluster_out_free(struct lp_cluster_out *o)
{
    if (!o) return;
    free(o->seg);
    free(o->finish_s);
    memset(o, 0, sizeof(*o));
}

static int seg_add(struct lp_cluster_out *o, int job, int pool, int gpus, double a, double b,
                   bool restart, struct lp_err *err)
{
    if (!(b > a)) return LP_OK;
    if (o->nseg == o->seg_cap) {
        int cap = o->seg_cap ? 2 * o->seg_cap : 64;
        struct lp_segment *s = realloc(o->seg, (size_t)cap * sizeof(*s));
        if (!s) LP_FAIL(err, LP_ENOMEM, "out of memory (%d schedule segments)", cap);
        o->seg = s;
        o->seg_cap = cap;
    }
    o->seg[o->nseg++] = (struct lp_segment){job, pool, gpus, a, b, restart};
    return LP_OK;
}

static bool usable(double t)
{
    return t > 0.0 && isfinite(t);
}

/* Job indices by (arrival, position): insertion sort, stable. */
static void by_arrival(const struct lp_cluster_in *in, int *order)
{
    for (int i = 0; i < in->njobs; i++) {
        int k = i;
        while (k > 0 && in->jobs[order[k - 1]].arrival_s > in->jobs[i].arrival_s) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = i;
    }
}

/* fcfs (own) and planned (!own), the queue of pool p. released: scratch,
 * one per job. */
static int run_pool_queue(const struct lp_cluster_in *in, bool own, int p, struct lp_cluster_out *o,
                          const int *order, bool *released, struct lp_err *err)
{
    int n = in->njobs, free_gpus = in->pool_gpus[p];
    double t = 0.0;
    for (int h = 0; h < n; h++) {
        int j = order[h];
        const struct lp_cjob *J = &in->jobs[j];
        if (J->pool != p) continue;
        double T = J->gpus <= in->pool_gpus[p] ? in->time_s(in->ctx, j, p, J->gpus, own) : INFINITY;
        if (!usable(T)) {
            o->unschedulable++;
            continue;
        }
        double start = fmax(t, J->arrival_s);
        for (;;) {
            double next = INFINITY;
            for (int k = 0; k < h; k++) { /* release what has ended by start */
                int r = order[k];
                if (in->jobs[r].pool != p || released[r] || !isfinite(o->finish_s[r])) continue;
                if (o->finish_s[r] <= start) {
                    free_gpus += in->jobs[r].gpus;
                    released[r] = true;
                } else {
                    next = fmin(next, o->finish_s[r]);
                }
            }
            if (free_gpus >= J->gpus) break;
            start = next; /* finite: the running jobs hold more than J lacks */
        }
        free_gpus -= J->gpus;
        o->finish_s[j] = start + T;
        t = start;
        LP_TRY(err, seg_add(o, j, p, J->gpus, start, start + T, false, err));
    }
    return LP_OK;
}

static int run_queue(const struct lp_cluster_in *in, bool own, struct lp_cluster_out *o, int *order,
                     bool *released, struct lp_err *err)
{
    for (int j = 0; j < in->njobs; j++) {
        const struct lp_cjob *J = &in->jobs[j];
        if (J->gpus <= 0)
            LP_FAIL(err, LP_EINVAL, "job %d: policy %s needs the job's gpus", j,
                    own ? "fcfs" : "planned");
        if (J->pool < 0 || J->pool >= in->npools)
            LP_FAIL(err, LP_EINVAL, "job %d: pool %d, the cluster has %d", j, J->pool, in->npools);
    }
    by_arrival(in, order);
    for (int p = 0; p < in->npools; p++)
        LP_TRY(err, run_pool_queue(in, own, p, o, order, released, err));
    return LP_OK;
}

struct elastic {
    double *r;               /* fraction of the tokens still to train */
    double *work_from;       /* when training (re)starts after a restart */
    double *seg_from;        /* when the current allocation began */
    double *train_from;      /* when it began training (after its restart) */
    int *g, *g_new;          /* GPUs held (0: none) */
    int *p, *p_new;          /* in pool */
    bool *ran, *done, *dead; /* dead: no feasible allocation at all */
};

static int alloc_index(const struct lp_cluster_in *in, int g)
{
    for (int k = 0; k < in->nalloc; k++)
        if (in->alloc[k] == g) return k;
    return -1;
}

static double plan_time(const struct lp_cluster_in *in, int j, int p, int g)
{
    return in->time_s(in->ctx, j, p, g, false);
}

/* The allocation after index k with a finite time for job j in pool p and
 * no larger than the pool, or -1. */
static int next_alloc(const struct lp_cluster_in *in, int j, int p, int k)
{
    for (int q = k + 1; q < in->nalloc && in->alloc[q] <= in->pool_gpus[p]; q++)
        if (usable(plan_time(in, j, p, in->alloc[q]))) return q;
    return -1;
}

static double abs_deadline(const struct lp_cjob *J)
{
    return J->deadline_s >= 0.0 ? J->arrival_s + J->deadline_s : INFINITY;
}

/* Greedy partition of the cluster among the present jobs (file comment). */
static void elastic_plan(const struct lp_cluster_in *in, struct elastic *e, const int *present,
                         int np, int *order)
{
    for (int i = 0; i < np; i++) { /* order: deadline, arrival, position */
        int j = present[i], k = i;
        while (k > 0) {
            const struct lp_cjob *A = &in->jobs[order[k - 1]], *B = &in->jobs[j];
            double da = abs_deadline(A), db = abs_deadline(B);
            bool after = da > db || (da == db && A->arrival_s > B->arrival_s);
            if (!after) break;
            order[k] = order[k - 1];
            k--;
        }
        order[k] = j;
    }
    int free_gpus[LP_CLUSTER_MAX_POOLS];
    memcpy(free_gpus, in->pool_gpus, sizeof(free_gpus));
    for (int i = 0; i < np; i++) {
        /* the pool whose free GPUs would train it soonest (at the largest
         * feasible allocation they hold), where its smallest fits */
        int j = order[i], bp = -1, bk = -1;
        double bt = INFINITY;
        for (int p = 0; p < in->npools; p++) {
            int k = next_alloc(in, j, p, -1);
            if (k < 0 || in->alloc[k] > free_gpus[p]) continue;
            double tt = INFINITY;
            for (int q = k; q >= 0 && in->alloc[q] <= free_gpus[p]; q = next_alloc(in, j, p, q))
                tt = fmin(tt, plan_time(in, j, p, in->alloc[q]));
            if (tt < bt || (tt == bt && p == e->p[j] && e->g[j] > 0)) {
                bt = tt;
                bp = p;
                bk = k;
            }
        }
        e->g_new[j] = bk >= 0 ? in->alloc[bk] : 0;
        e->p_new[j] = bk >= 0 ? bp : 0;
        if (bk >= 0) free_gpus[bp] -= in->alloc[bk];
    }
    for (;;) {
        int best = -1, best_k = -1;
        double best_gain = 0.0;
        for (int i = 0; i < np; i++) {
            int j = order[i], p = e->p_new[j];
            if (e->g_new[j] == 0) continue;
            int k = alloc_index(in, e->g_new[j]), k2 = next_alloc(in, j, p, k);
            if (k2 < 0) continue;
            int extra = in->alloc[k2] - e->g_new[j];
            if (extra > free_gpus[p]) continue;
            double gain = e->r[j] *
                          (plan_time(in, j, p, e->g_new[j]) - plan_time(in, j, p, in->alloc[k2])) /
                          extra;
            if (gain > best_gain) {
                best_gain = gain;
                best = j;
                best_k = k2;
            }
        }
        if (best < 0) break;
        free_gpus[e->p_new[best]] -= in->alloc[best_k] - e->g_new[best];
        e->g_new[best] = in->alloc[best_k];
    }
}

/* Close job j's current allocation at time t: its restart and training parts. */
static int close_alloc(struct lp_cluster_out *o, const struct elastic *e, int j, double t,
                       struct lp_err *err)
{
    double w = fmin(e->train_from[j], t);
    LP_TRY(err, seg_add(o, j, e->p[j], e->g[j], e->seg_from[j], w, true, err));
    LP_TRY(err, seg_add(o, j, e->p[j], e->g[j], w, t, false, err));
    return LP_OK;
}

static int run_elastic_loop(const struct lp_cluster_in *in, struct lp_cluster_out *o,
                            struct elastic *e, int *present, int *order, struct lp_err *err)
{
    int n = in->njobs;
    for (int j = 0; j < n; j++) {
        e->r[j] = 1.0;
        e->dead[j] = true;
        for (int p = 0; p < in->npools; p++)
            if (next_alloc(in, j, p, -1) >= 0) e->dead[j] = false;
        if (e->dead[j]) o->unschedulable++;
    }
    double t = 0.0;
    for (;;) {
        /* re-plan the jobs present at t */
        int np = 0;
        for (int j = 0; j < n; j++)
            if (!e->dead[j] && !e->done[j] && in->jobs[j].arrival_s <= t) present[np++] = j;
        elastic_plan(in, e, present, np, order);
        for (int i = 0; i < np; i++) {
            int j = present[i];
            if (e->g_new[j] == e->g[j] && (e->g[j] == 0 || e->p_new[j] == e->p[j])) continue;
            if (e->g[j] > 0) LP_TRY(err, close_alloc(o, e, j, t, err));
            if (e->g_new[j] > 0) {
                e->seg_from[j] = t;
                e->work_from[j] = t + (e->ran[j] ? in->restart_s : 0.0);
                e->train_from[j] = e->work_from[j];
                e->ran[j] = true;
            }
            e->g[j] = e->g_new[j];
            e->p[j] = e->p_new[j];
        }
        /* the next event: a completion or an arrival */
        double tn = INFINITY;
        for (int j = 0; j < n; j++) {
            if (e->dead[j] || e->done[j]) continue;
            if (in->jobs[j].arrival_s > t)
                tn = fmin(tn, in->jobs[j].arrival_s);
            else if (e->g[j] > 0)
                tn = fmin(tn, e->work_from[j] + e->r[j] * plan_time(in, j, e->p[j], e->g[j]));
        }
        if (!isfinite(tn)) break;
        for (int j = 0; j < n; j++) {
            if (e->dead[j] || e->done[j] || e->g[j] == 0) continue;
            double T = plan_time(in, j, e->p[j], e->g[j]);
            double fin = e->work_from[j] + e->r[j] * T;
            if (fin <= tn) { /* completes now */
                LP_TRY(err, close_alloc(o, e, j, fin, err));
                o->finish_s[j] = fin;
                e->done[j] = true;
                e->g[j] = 0;
                continue;
            }
            if (tn > e->work_from[j]) {
                e->r[j] -= (tn - e->work_from[j]) / T;
                e->work_from[j] = tn;
            }
        }
        t = tn;
    }
    return LP_OK;
}

static int run_elastic(const struct lp_cluster_in *in, struct lp_cluster_out *o, int *order,
                       struct lp_err *err)
{
    int n = in->njobs, rc = LP_OK;
    struct elastic e = {0};
    e.r = calloc((size_t)n, sizeof(double));
    e.work_from = calloc((size_t)n, sizeof(double));
    e.seg_from = calloc((size_t)n, sizeof(double));
    e.train_from = calloc((size_t)n, sizeof(double));
    e.g = calloc((size_t)n, sizeof(int));
    e.g_new = calloc((size_t)n, sizeof(int));
    e.p = calloc((size_t)n, sizeof(int));
    e.p_new = calloc((size_t)n, sizeof(int));
    e.ran = calloc((size_t)n, sizeof(bool));
    e.done = calloc((size_t)n, sizeof(bool));
    e.dead = calloc((size_t)n, sizeof(bool));
    int *present = calloc((size_t)n, sizeof(int));
    if (!e.r || !e.work_from || !e.seg_from || !e.train_from || !e.g || !e.g_new || !e.p ||
        !e.p_new || !e.ran || !e.done || !e.dead || !present)
        rc = lp_err_set_at(err, LP_ENOMEM, __FILE__, __LINE__, "out of memory (%d jobs)", n);
    if (rc == LP_OK) rc = run_elastic_loop(in, o, &e, present, order, err);
    free(e.r);
    free(e.work_from);
    free(e.seg_from);
    free(e.train_from);
    free(e.g);
    free(e.g_new);
    free(e.p);
    free(e.p_new);
    free(e.ran);
    free(e.done);
    free(e.dead);
    free(present);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void metrics(const struct lp_cluster_in *in, struct lp_cluster_out *o, double *jct)
{
    int m = 0;
    double sum = 0.0, busy = 0.0;
    for (int j = 0; j < in->njobs; j++) {
        const struct lp_cjob *J = &in->jobs[j];
        double f = o->finish_s[j];
        if (J->deadline_s >= 0.0 && !(f <= abs_deadline(J))) o->deadline_misses++;
        if (!isfinite(f)) continue;
        o->makespan_s = fmax(o->makespan_s, f);
        jct[m++] = f - J->arrival_s;
        sum += f - J->arrival_s;
    }
    double pool_busy[LP_CLUSTER_MAX_POOLS] = {0};
    int total = 0;
    for (int s = 0; s < o->nseg; s++)
        if (!o->seg[s].restart) {
            const double gs = o->seg[s].gpus * (o->seg[s].end_s - o->seg[s].start_s);
            busy += gs;
            pool_busy[o->seg[s].pool] += gs;
        }
    for (int p = 0; p < in->npools; p++)
        total += in->pool_gpus[p];
    if (m == 0) return;
    qsort(jct, (size_t)m, sizeof(double), cmp_double);
    o->mean_jct_s = sum / m;
    o->p95_jct_s = jct[(int)ceil(0.95 * m) - 1];
    o->max_jct_s = jct[m - 1];
    if (o->makespan_s > 0.0) {
        o->utilisation = busy / (total * o->makespan_s);
        for (int p = 0; p < in->npools; p++)
            o->pool_utilisation[p] = pool_busy[p] / (in->pool_gpus[p] * o->makespan_s);
    }
}

int lp_cluster_run(const struct lp_cluster_in *in, enum lp_policy p, struct lp_cluster_out *out,
                   struct lp_err *err)
{
    memset(out, 0, sizeof(*out));
    if (in->npools < 1 || in->npools > LP_CLUSTER_MAX_POOLS || in->njobs < 0 || in->nalloc < 0 ||
        in->nalloc > LP_CLUSTER_MAX_ALLOC)
        LP_FAIL(err, LP_EINVAL, "cluster of %d pools (1 to %d), %d jobs, %d allocations",
                in->npools, LP_CLUSTER_MAX_POOLS, in->njobs, in->nalloc);
    for (int q = 0; q < in->npools; q++)
        if (in->pool_gpus[q] <= 0)
            LP_FAIL(err, LP_EINVAL, "pool %d has %d GPUs", q, in->pool_gpus[q]);
    for (int k = 1; k < in->nalloc; k++)
        if (in->alloc[k] <= in->alloc[k - 1])
            LP_FAIL(err, LP_EINVAL, "allocations must be ascending (%d after %d)", in->alloc[k],
                    in->alloc[k - 1]);
    if (in->njobs == 0) return LP_OK;
    int rc = LP_OK;
    size_t n = (size_t)in->njobs;
    out->finish_s = malloc(n * sizeof(double));
    int *order = malloc(n * sizeof(int));
    double *jct = malloc(n * sizeof(double));
    bool *released = calloc(n, sizeof(bool));
    if (!out->finish_s || !order || !jct || !released) {
        rc = lp_err_set_at(err, LP_ENOMEM, __FILE__, __LINE__, "out of memory (%zu jobs)", n);
        goto cleanup;
    }
    for (size_t j = 0; j < n; j++)
        out->finish_s[j] = INFINITY;
    if (p == LP_POLICY_ELASTIC)
        rc = run_elastic(in, out, order, err);
    else
        rc = run_queue(in, p == LP_POLICY_FCFS, out, order, released, err);
    if (rc == LP_OK) metrics(in, out, jct);
cleanup:
    free(order);
    free(jct);
    free(released);
    if (rc < 0) {
        lp_err_trace(err, __FILE__, __LINE__);
        lp_cluster_out_free(out);
    }
    return rc;
}
