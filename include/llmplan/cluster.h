/* Several training jobs on one GPU cluster (vTrain's multi-job case study,
 * Bang et al. 2024): an event-driven replay of a job trace under a policy.
 * The cluster is one or more pools, each of one system (a partition of
 * A100 nodes beside one of H100 nodes); a job runs inside one pool at a
 * time.
 *
 *   jobs   (src/io/jobs_json.c)  the parsed JOBS.json (docs/case-studies.md)
 *   policy (src/core/cluster.c)  first-come-first-served with the jobs' own
 *                                configurations, the same with llmplan's, and
 *                                elastic re-planning at every arrival and
 *                                completion
 *
 * The scheduler never simulates: a job's training time on g GPUs comes from
 * a callback (llmplan schedule answers it with the simulator; the tests with
 * a hand-made table), so the policies can be checked on a trace worked out by
 * hand. */
#ifndef LLMPLAN_CLUSTER_H
#define LLMPLAN_CLUSTER_H

#include <stdbool.h>

#include "llmplan/config.h"
#include "llmplan/search.h"
#include "llmplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

enum lp_policy {
    LP_POLICY_FCFS = 0, /* arrival order, no backfilling, the job's own gpus and configuration */
    LP_POLICY_PLANNED,  /* the same order and gpus, llmplan's fastest configuration */
    LP_POLICY_ELASTIC,  /* re-partition the cluster at every arrival and completion */
    LP_POLICY_COUNT
};

/* "fcfs", "planned", "elastic" */
const char *lp_policy_name(enum lp_policy p);
/* LP_OK, or LP_EINVAL for an unknown name */
int lp_policy_parse(const char *s, enum lp_policy *out);

/* One job as the scheduler sees it. */
struct lp_cjob {
    double arrival_s;
    double deadline_s; /* after its arrival; < 0: none */
    int gpus;          /* the allocation it asks for (fcfs, planned); 0: none */
    int pool;          /* the pool it asks for (fcfs, planned): its own configuration's system */
};

/* Seconds to train job j entirely on g GPUs of pool p: with its own
 * configuration (own = true; p and g are then its pool and gpus) or
 * llmplan's fastest there. INFINITY when nothing fits. */
typedef double (*lp_cluster_time_fn)(void *ctx, int job, int pool, int gpus, bool own);

#define LP_CLUSTER_MAX_ALLOC 64
#define LP_CLUSTER_MAX_POOLS 8

struct lp_cluster_in {
    int npools;                          /* 1 ..  LP_CLUSTER_MAX_POOLS */
    int pool_gpus[LP_CLUSTER_MAX_POOLS]; /* the GPUs of each pool */
    int alloc[LP_CLUSTER_MAX_ALLOC];     /* allocations elastic may give, ascending */
    int nalloc;
    double restart_s; /* elastic: a running job whose allocation changes stops for this long */
    const struct lp_cjob *jobs;
    int njobs;
    lp_cluster_time_fn time_s;
    void *ctx;
};

/* A stretch of time one job holds `gpus` GPUs; restart: checkpoint-restart
 * time (held, not training). */
struct lp_segment {
    int job, pool, gpus;
    double start_s, end_s;
    bool restart;
};

struct lp_cluster_out {
    struct lp_segment *seg; /* nseg, in the order they were closed */
    int nseg, seg_cap;
    double *finish_s;  /* per job; INFINITY: never ran (unschedulable) */
    double makespan_s; /* last completion (time 0 = the trace's origin) */
    double mean_jct_s; /* completion - arrival, over the jobs that ran */
    double p95_jct_s;  /* nearest rank */
    double max_jct_s;
    double utilisation; /* training GPU-seconds / (cluster GPUs x makespan) */
    double pool_utilisation[LP_CLUSTER_MAX_POOLS]; /* the same per pool */
    int deadline_misses; /* among the jobs with a deadline (an unscheduled one misses) */
    int unschedulable;   /* more GPUs than its pool, or no feasible plan */
};

/* Replay the trace under policy p. Fails on allocation, on a bad input
 * (LP_EINVAL: no pool or a pool without GPUs, allocations not ascending,
 * fcfs / planned job without gpus or with a pool out of range) only. out is overwritten (free an
 * earlier result first) and owned by the caller: lp_cluster_out_free. */
int lp_cluster_run(const struct lp_cluster_in *in, enum lp_policy p, struct lp_cluster_out *out,
                   struct lp_err *err);
/* NULL-safe; leaves *o zeroed. */
void lp_cluster_out_free(struct lp_cluster_out *o);

/* ---- JOBS.json (src/io/jobs_json.c) ---- */

struct lp_job_spec {
    char name[LP_NAME_LEN];
    double arrival_s, deadline_s; /* deadline after arrival; < 0: none */
    double tokens;
    int gpus;          /* its own allocation; 0 when not given */
    int pool;          /* the pool of its own allocation ("pool": a system of the pools) */
    bool has_own;      /* "parallel" given: its own configuration */
    struct lp_run own; /* (has_own) on gpus GPUs of its pool, dp = gpus / (tp pp cp) */
    /* per pool, the space llmplan chooses from: gpus = the allocations that
     * fit the pool (NULL: none does) */
    struct lp_sweep *plan[LP_CLUSTER_MAX_POOLS];
};

struct lp_jobs {
    char name[LP_NAME_LEN];
    int cluster_gpus; /* every pool's */
    int npools;       /* "system" + "cluster_gpus": one; "pools": [{system, gpus}, ...] */
    struct lp_pool {
        char system[LP_NAME_LEN]; /* the pool's name: its system's */
        int gpus;
        struct lp_system sys;
    } pool[LP_CLUSTER_MAX_POOLS];
    /* the file's "profile" as a string ("": each GPU's own); a map
     * {system: profile} sets the pools' sys.profile instead */
    char profile[LP_PROFILE_PATH_LEN];
    int alloc[LP_CLUSTER_MAX_ALLOC];
    int nalloc;
    double restart_s;
    int njobs;
    struct lp_job_spec *job;
};

#define LP_JOBS_MAX 4096

int lp_jobs_parse(const char *json_text, const char *origin, struct lp_jobs **out,
                  struct lp_err *err);
int lp_jobs_load(const char *path, struct lp_jobs **out, struct lp_err *err);
/* NULL-safe; NULLs the handle. */
void lp_jobs_destroy(struct lp_jobs **j);

#ifdef __cplusplus
}
#endif

#endif
