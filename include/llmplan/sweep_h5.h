/* sweep.h5, the parallel dataset of a sweep (src/io_par/sweep_h5.c, library
 * llmplan_sweep_h5; format in docs/search.md): one row per evaluated
 * configuration, written collectively by the MPI ranks that computed the
 * rows, through HDF5's MPI-IO driver.
 *
 * The writer knows only what this header gives it: the communicator, the
 * file's path, the names behind the categorical columns that come from the
 * sweep (models, systems, frameworks, fine-tune settings), the provenance
 * attributes, and per write the rows and where each goes. The driver
 * (search/) builds all of it; the writer never sees the driver's state.
 *
 * Functions marked collective must be called by every rank of the
 * description's communicator. */
#ifndef LLMPLAN_SWEEP_H5_H
#define LLMPLAN_SWEEP_H5_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "llmplan/status.h"

/* One dataset row (a configuration evaluated: feasible or not); a column of
 * sweep.h5 per field. */
struct lp_row {
    uint64_t index;
    int32_t model, system, gpus, tp, pp, dp, cp, ep, vp, micro_batch, sequence_parallel, recompute,
        zero, schedule, feasible, reason, microbatches;
    double iteration_time_s, tokens_per_s, mfu, model_tflops_per_gpu, memory_per_gpu_gib;
    double compute_s, tp_comm_s, pp_bubble_s, pp_comm_s, dp_comm_exposed_s, optimizer_s;
    double weights_gib, gradients_gib, optimizer_gib, activations_gib, temporary_gib;
    double cost_per_iteration_usd, cost_usd, gpu_hours, time_days, zero3_gather_s;
    int32_t framework, attention, precision; /* the settings dimensions (#17) */
    int32_t gpus_per_node, seq_len;
    double price_per_gpu_hour_usd, tokens_per_usd;
    int32_t global_batch, finetune; /* the run dimensions (#17) */
};
#define LP_H5_NCOLS 48 /* columns of sweep.h5 (struct lp_row) */

/* A list of names (the positions of a categorical column's values). */
struct lp_h5_names {
    int n;
    const char *const *name;
};

/* What the writer needs to know of the sweep; the driver fills it and keeps
 * every pointer valid while the dataset is open. */
struct lp_h5_desc {
    MPI_Comm comm;    /* the ranks that write (collective calls) */
    const char *path; /* the file (the driver's sweep.h5.partial) */
    /* names behind the columns model, system, framework and finetune */
    struct lp_h5_names models, systems, frameworks, finetunes;
    const double *model_params; /* per model (models.n): the root attribute model_params */
    /* provenance attributes of the root group */
    const char *command_line, *sweep_file, *sweep_json, *profile;
    uint64_t sweep_hash; /* written as 16 hex digits */
    uint64_t space_size;
};

/* Counters for the root attributes written at close. */
struct lp_h5_totals {
    uint64_t rows, skipped;
    bool complete;
};

/* A block of this rank's rows: rows [buf_row, buf_row + rows) of its buffer
 * go to dataset rows [file_row, file_row + rows). */
struct lp_h5_block {
    uint64_t file_row, buf_row, rows;
};

struct lp_h5;

/* Create the file (resume false) or open it for writing (resume true: the
 * columns must be there). Collective. *out is set also on failure (close it). */
int lp_h5_open(const struct lp_h5_desc *d, bool resume, struct lp_h5 **out, struct lp_err *err);

/* Set the row count to `end` and write this rank's blocks (sorted by
 * file_row, none overlapping) from rows[]. sum[c] gets the checksum of the
 * rows written by all ranks in column c (lp_h5_recover checks the sum of
 * such checksums). Collective: every rank with the same `end`. */
int lp_h5_write(struct lp_h5 *h, const struct lp_row *rows, const struct lp_h5_block *b, size_t nb,
                uint64_t end, uint64_t sum[LP_H5_NCOLS], struct lp_err *err);

/* Set the row count to first + n (drops rows past it) and read rows
 * [first, first + n) into dst (on the ranks with `mine`; dst unused on the
 * others). Collective: every rank with the same first and n. */
int lp_h5_read(struct lp_h5 *h, uint64_t first, uint64_t n, bool mine, struct lp_row *dst,
               struct lp_err *err);

/* One process, before lp_h5_open(resume), not collective: check d->path
 * left by an interrupted run (every column readable over [0, rows), each
 * column's checksum equal to sum[c]) and copy those rows into a fresh file
 * that replaces it, in a child process under a time limit, so that a
 * damaged file (a hard kill mid-write) can neither crash nor hang the job.
 * *ok = false: the file is damaged or missing (renamed to <path>.damaged
 * when present; why[] says what was wrong); the file is never opened for
 * writing then. */
int lp_h5_recover(const struct lp_h5_desc *d, uint64_t rows, const uint64_t sum[LP_H5_NCOLS],
                  bool *ok, char *why, size_t why_len, struct lp_err *err);

/* Write the root attributes (totals: the same on every rank; NULL: none,
 * e.g. after an error) and close. Collective. *unclosable: HDF5 failed to
 * close the file (a full disk); HDF5 1.10 would crash closing it again at
 * MPI_Finalize. h may be NULL. */
int lp_h5_close(struct lp_h5 *h, const struct lp_h5_totals *totals, bool *unclosable,
                struct lp_err *err);

#endif
