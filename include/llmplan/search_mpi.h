/* The MPI search driver (search/, docs/search.md): sweeps the configuration
 * space of a sweep description over a communicator into plans.json and
 * sweep.h5. A library: it returns errors (code + message) instead of
 * printing them or aborting; what to print and whether to end the job is its
 * caller's decision (cli/cmd_search.c). It still writes its progress line,
 * its warnings and the summary on stderr (--quiet turns the progress line and
 * the summary off). */
#ifndef LLMPLAN_SEARCH_MPI_H
#define LLMPLAN_SEARCH_MPI_H

#include <stdbool.h>
#include <stdint.h>

#include <mpi.h>

#include "llmplan/io.h"
#include "llmplan/status.h"

struct lp_search_opts {
    const char *sweep_path;
    char out_dir[LP_SWEEP_PATH_LEN];
    const char *profile; /* --profile override, or NULL */
    bool resume, dataset, quiet;
    bool allow_mismatch; /* --allow-profile-mismatch */
    bool prune;          /* --prune (needs !dataset): bound before solving (issue #20) */
    uint64_t min_chunk;  /* --chunk */
    uint64_t segment;    /* --segment: indices per scheduling segment */
    double checkpoint_s; /* --checkpoint: rows + checkpoint at least this often */
    double progress_s;   /* --progress; 0 = off */
    uint64_t stop_after; /* --stop-after (testing): rank 0 raises SIGUSR1 after N indices */
    double sustained;    /* --sustained-frac: every GPU's sustained fraction; 0 = presets' */
    uint64_t trace_top;  /* --trace-top: timelines of the N fastest plans */
    enum lp_trace_detail trace_detail; /* --trace-detail */
    char cmdline[4096];
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
