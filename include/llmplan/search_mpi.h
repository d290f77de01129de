/* The MPI search driver (search/, docs/search.md): sweeps the configuration
 * space of a sweep description over a communicator into plans.json and
 * sweep.h5. A library: it returns errors (code + message) instead of
 * printing them or aborting, and hands its progress line, warnings and
 * summary to the caller's note handler; it never writes to stdout or stderr
 * itself. What to print and whether to end the job is its caller's decision
 * (cli/cmd_search.c). */
#ifndef LLMPLAN_SEARCH_MPI_H
#define LLMPLAN_SEARCH_MPI_H

#include <stdbool.h>
#include <stdint.h>

#include <mpi.h>

#include "llmplan/io.h"
#include "llmplan/status.h"

/* What the driver says besides its errors (--quiet turns off the progress
 * line and the summary: the driver does not make those notes then). */
enum lp_search_note {
    LP_SEARCH_NOTE_PROGRESS, /* "search: 123/456 (27.0%) ..." every --progress seconds */
    LP_SEARCH_NOTE_WARNING, /* outputs replaced, a profile of another GPU, a damaged partial dataset
                             */
    LP_SEARCH_NOTE_SUMMARY  /* the start line and the lines after a completed sweep */
};
/* A note: one whole line, ending in '\n'; made on rank 0 only, from the
 * calling thread. */
typedef void (*lp_search_note_fn)(void *ctx, enum lp_search_note kind, const char *line);

struct lp_search_opts {
    const char *sweep_path;
    char out_dir[LP_SWEEP_PATH_LEN];
    const char *profile; /* --profile override, or NULL */
    bool resume, dataset, quiet;
    bool allow_mismatch;  /* --allow-profile-mismatch */
    bool prune;           /* --prune (needs !dataset): bound before solving (issue #20) */
    uint64_t prune_batch; /* --prune-batch: bounds held before deciding; 0 = LP_BOUNDS_BATCH */
    uint64_t min_chunk;   /* --chunk */
    uint64_t segment;     /* --segment: indices per scheduling segment */
    double checkpoint_s;  /* --checkpoint: rows + checkpoint at least this often */
    double progress_s;    /* --progress; 0 = off */
    uint64_t stop_after;  /* --stop-after (testing): rank 0 raises SIGUSR1 after N indices */
    double sustained;     /* --sustained-frac: every GPU's sustained fraction; 0 = presets' */
    uint64_t trace_top;   /* --trace-top: timelines of the N fastest plans */
    enum lp_trace_detail trace_detail; /* --trace-detail */
    char cmdline[4096];
    lp_search_note_fn note; /* NULL: notes are dropped */
    void *note_ctx;
};

/* What a run of the driver leaves for its caller besides the status. */
struct lp_search_outcome {
    /* a failure inside the dynamic phase on this rank while the others may
     * be waiting on it: err holds the message; the caller must end the job
     * (MPI_Abort), not return to a collective call (the driver's state is
     * left as it was: freeing it would take collective calls) */
    bool abort;
    /* HDF5 could not close the partial dataset (a full disk): MPI_Finalize
     * would close it again and crash (HDF5 1.10); the caller should _exit */
    bool unclosable;
    uint64_t done, size; /* indices walked and the space's size (interrupted) */
};

/* Sweep opt->sweep_path into opt->out_dir (or out_arg, else the sweep's
 * "output", else "."). Collective over comm, which it duplicates (its
 * messages never meet the caller's). Returns LP_OK when done (plans.json
 * written), LP_EINTERRUPT when stopped by a signal (checkpoint written), or
 * a negative code that every rank returns alike; the message is in err on
 * the lowest rank that has one (err->code 0 on the others), except with
 * out->abort (only this rank returns). */
int lp_search_run(MPI_Comm comm, const struct lp_search_opts *opt, const char *out_arg,
                  struct lp_search_outcome *out, struct lp_err *err);

/* SIGTERM, SIGUSR1 and SIGINT stop a running sweep at its next step with a
 * checkpoint (the handler only sets a flag). */
void lp_search_catch_signals(void);

#endif
