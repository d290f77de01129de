/* Private parts of `llmplan search`, the MPI driver (docs/search.md).
 *
 *   search.c      lp_search_run: cost models, outputs, errors agreed by all ranks
 *   sched.c       dynamic self-scheduling of index ranges, segments, stop
 *   eval.c        the per-rank walk of a range: decode, simulate, reduce
 *   reduce.c      tree reduction of fronts / top-k / counters to rank 0
 *   checkpoint.c  checkpoint file (atomic) and resume
 *   dataset.c     what the dataset writer (llmplan/sweep_h5.h) is told
 *
 * Every function that takes the context's communicator says whether it is
 * collective. The driver works on its own duplicate of the caller's
 * communicator (lp_search_run, llmplan/search_mpi.h); the command line and
 * MPI_Init are cli/cmd_search.c's. */
#ifndef LLMPLAN_SEARCH_INTERNAL_H
#define LLMPLAN_SEARCH_INTERNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <mpi.h>

#include "llmplan/io.h"
#include "llmplan/search.h"
#include "llmplan/search_mpi.h"
#include "llmplan/sweep_h5.h"

/* A completed index range and its rows (in the owner's row buffer). */
struct lp_range {
    uint64_t lo, hi;    /* [lo, hi) */
    uint64_t rows;      /* rows it produced */
    uint64_t row_start; /* first row in the owner's buffer (owner only) */
    int32_t owner;      /* rank that holds the rows */
    int32_t pad;
};

struct lp_ranges {
    struct lp_range *r;
    size_t n, cap;
};

struct lp_rows {
    struct lp_row *r;
    size_t n, cap;
};

struct lp_search {
    MPI_Comm comm;
    int rank, size;
    struct lp_search_opts opt;
    char *sweep_text;
    struct lp_sweep *sweep;
    struct lp_space space;
    /* one cost model and evaluator per system of the sweep */
    int nsys;
    struct lp_profile *prof[LP_SWEEP_MAX_VALUES];
    struct lp_cost_model cm[LP_SWEEP_MAX_VALUES];
    struct lp_sim *sim[LP_SWEEP_MAX_VALUES];
    char profile_desc[2048]; /* "path (checksum)" per system, for provenance */
    /* systems whose profile was measured on another GPU (allowed by
     * --allow-profile-mismatch), for plans.json's stats.profile_gpu_mismatch */
    char mismatch_desc[1024];
    struct lp_trust *trust; /* rank 0: data/trust_bands.json, or NULL when absent */
    /* this rank's partial state */
    struct lp_results res;
    struct lp_counts counts;
    struct lp_rows rows;   /* rows not yet in the dataset */
    struct lp_ranges mine; /* ranges done here since flush_seg */
    /* rank 0's view of the sweep */
    struct lp_ranges done; /* all ranges done since flush_seg */
    uint64_t segment;      /* current segment */
    uint64_t flush_seg;    /* first segment whose rows are not in the dataset */
    uint64_t rows_base;    /* dataset rows of the segments before flush_seg */
    uint64_t done_before;  /* indices walked in previous segments / runs */
    double wall_before_s;  /* wall time of previous (interrupted) runs */
    double t_start;
    double progress_due; /* next progress line (rank 0) */
    /* rank 0: work requests answered, and the time spent answering them
     * (receive, bookkeeping, reply), for the summary line (docs/search.md,
     * "Scaling") */
    uint64_t served;
    double serve_s;
    struct lp_h5 *h5;
    /* what the dataset writer is told (dataset.c); names and params are
     * its storage */
    struct lp_h5_desc h5_desc;
    const char **h5_names;
    double *h5_params;
    char h5_path[LP_SWEEP_PATH_LEN + 32];
    /* the dataset's rows [0, h5_rows) as of the last write, and a checksum
     * per column of them (h5_sum) and of the final rows [0, rows_base)
     * (h5_sum_base); the checkpoint records them so that --resume can
     * verify the file (src/io_par/sweep_h5.c) */
    uint64_t h5_rows;
    uint64_t h5_sum[LP_H5_NCOLS];
    uint64_t h5_sum_base[LP_H5_NCOLS];
    int lock_fd;               /* the output directory's lock (rank 0; -1 = none) */
    bool h5_unclosable;        /* HDF5 failed to close sweep.h5.partial */
    struct lp_run scratch_run; /* decode target (large; kept off the stack) */
    /* --prune: the range's bounds held to be decided best first (eval.c),
     * and the decode target of their configurations */
    struct lp_bounds bounds;
    struct lp_run bounds_run;
};

/* ---- search.c ---- */
bool lp_search_stop_requested(void);
/* Hand one line (printf format, without its '\n') to the caller's note
 * handler (opt.note; none: dropped). Rank 0's. */
void lp_search_say(const struct lp_search *s, enum lp_search_note kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Wall time of the sweep so far: previous interrupted runs + this one. */
double lp_search_wall_s(const struct lp_search *s);

/* ---- helpers (eval.c) ---- */
int lp_ranges_push(struct lp_ranges *l, const struct lp_range *r, struct lp_err *err);
void lp_ranges_sort(struct lp_ranges *l);
void lp_ranges_free(struct lp_ranges *l);
int lp_rows_reserve(struct lp_rows *l, size_t n, struct lp_err *err);
void lp_rows_free(struct lp_rows *l);

/* Walk [lo, hi) on this rank, at most max_evals evaluations (0 = no limit),
 * stopping early when poll() says so (checked every few hundred steps; poll
 * may be NULL). *reached = first index not walked. Rows go to s->rows when
 * the dataset is on. Local, not collective. */
int lp_eval_range(struct lp_search *s, uint64_t lo, uint64_t hi, uint64_t max_evals,
                  bool (*poll)(struct lp_search *s), uint64_t *reached, uint64_t *rows_out,
                  struct lp_err *err);

/* ---- scheduling (sched.c) ---- */
/* Run the sweep from the current state (s->segment ...). Collective.
 * Returns LP_OK when complete, LP_EINTERRUPT when stopped by a signal (the
 * partial dataset and the checkpoint are written). */
int lp_sched_run(struct lp_search *s, struct lp_err *err);

/* ---- reduction (reduce.c) ---- */
/* Merge every rank's results and counters into *out / *total on rank 0 (a
 * copy: the ranks' own state is unchanged). Collective. */
int lp_reduce(struct lp_search *s, struct lp_results *out, struct lp_counts *total,
              struct lp_err *err);

/* ---- checkpoint (checkpoint.c) ---- */
#define LP_CHECKPOINT_FILE "checkpoint.bin"
/* Rank 0 only: write the checkpoint atomically. */
int lp_checkpoint_write(const struct lp_search *s, const struct lp_results *res,
                        const struct lp_counts *counts, struct lp_err *err);
/* Rank 0 only: load it into s (segment, rows_base, done ranges, results,
 * counters). *found = false when there is none. */
int lp_checkpoint_read(struct lp_search *s, bool *found, struct lp_err *err);
void lp_checkpoint_remove(const struct lp_search *s);
uint64_t lp_sweep_hash(const struct lp_search *s);

/* ---- dataset (dataset.c, through llmplan/sweep_h5.h); collective unless said ---- */
int lp_dataset_open(struct lp_search *s, bool resume, struct lp_err *err);
/* Write the rows of the current segment: each rank its own ranges at the
 * offsets of the range table (sorted by lo, all ranks the same), then set
 * the row count to rows_base + total; s->h5_sum and s->h5_rows follow. */
int lp_dataset_write_segment(struct lp_search *s, const struct lp_range *table, size_t n,
                             struct lp_err *err);
/* Rank 0 only, before lp_dataset_open(resume): lp_h5_recover of the partial
 * dataset against the checkpoint's s->h5_rows and s->h5_sum. */
int lp_dataset_recover(struct lp_search *s, bool *ok, char *why, size_t why_len,
                       struct lp_err *err);
/* Read rows [first, first + n) into rank 0's row buffer (resume). */
int lp_dataset_read_rows(struct lp_search *s, uint64_t first, uint64_t n, struct lp_err *err);
/* total: the reduced counters, the same on every rank (or NULL: no
 * attributes, e.g. after an error). Sets s->h5_unclosable when HDF5 could
 * not close the file. */
int lp_dataset_close(struct lp_search *s, bool complete, const struct lp_counts *total,
                     struct lp_err *err);

/* ---- plans.json (src/io/plans_json.c, declared in search.h) ---- */

#endif
