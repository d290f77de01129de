/* Reduction of the ranks' partial results to rank 0: counters by MPI_Reduce,
 * fronts and top-k sets by a binomial tree (log2(ranks) rounds; each message
 * is at most a front plus 2k entries). The merge is order-independent
 * (pareto.c), so the result is the same for any rank count and tree shape.
 * Entries travel as bytes: the ranks run the same binary. */
#include <limits.h>
#include <stdlib.h>

#include "search_internal.h"

enum { TAG_RED_COUNTS = 21, TAG_RED_DATA = 22 };

static int mpi_err(struct lp_err *err, int mrc, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(mrc, msg, &len);
    return lp_err_set_at(err, LP_EMPI, __FILE__, __LINE__, "MPI error in %s: %s", what, msg);
}

static int send_results(struct lp_search *s, const struct lp_results *r, int to, struct lp_err *err)
{
    struct lp_entry *buf = NULL;
    uint64_t counts[3];
    LP_TRY(err, lp_results_pack(r, &buf, counts, err));
    uint64_t n = counts[0] + counts[1] + counts[2];
    int rc = LP_OK;
    int mrc = MPI_Send(counts, 3, MPI_UINT64_T, to, TAG_RED_COUNTS, s->comm);
    if (mrc != MPI_SUCCESS) {
        rc = mpi_err(err, mrc, "MPI_Send (reduction)");
    } else if (n > 0) {
        if (n * sizeof(*buf) > INT_MAX) {
            rc = lp_err_set_at(err, LP_EMPI, __FILE__, __LINE__,
                               "reduction message too large (%llu entries)", (unsigned long long)n);
        } else {
            mrc = MPI_Send(buf, (int)(n * sizeof(*buf)), MPI_BYTE, to, TAG_RED_DATA, s->comm);
            if (mrc != MPI_SUCCESS) rc = mpi_err(err, mrc, "MPI_Send (reduction)");
        }
    }
    free(buf);
    return rc;
}

static int recv_results(struct lp_search *s, struct lp_results *into, int from, struct lp_err *err)
{
    uint64_t counts[3];
    int mrc = MPI_Recv(counts, 3, MPI_UINT64_T, from, TAG_RED_COUNTS, s->comm, MPI_STATUS_IGNORE);
    if (mrc != MPI_SUCCESS) return mpi_err(err, mrc, "MPI_Recv (reduction)");
    uint64_t n = counts[0] + counts[1] + counts[2];
    if (n == 0) return LP_OK;
    if (n * sizeof(struct lp_entry) > INT_MAX)
        LP_FAIL(err, LP_EMPI, "reduction message too large (%llu entries)", (unsigned long long)n);
    struct lp_entry *buf = malloc(n * sizeof(*buf));
    if (!buf)
        LP_FAIL(err, LP_ENOMEM, "out of memory receiving %llu results", (unsigned long long)n);
    mrc = MPI_Recv(buf, (int)(n * sizeof(*buf)), MPI_BYTE, from, TAG_RED_DATA, s->comm,
                   MPI_STATUS_IGNORE);
    int rc = mrc == MPI_SUCCESS ? lp_results_unpack(into, buf, counts, err)
                                : mpi_err(err, mrc, "MPI_Recv (reduction)");
    free(buf);
    return rc;
}

int lp_reduce(struct lp_search *s, struct lp_results *out, struct lp_counts *total,
              struct lp_err *err)
{
    int mrc = MPI_Reduce(s->counts.v, total->v, LP_COUNT_N, MPI_UINT64_T, MPI_SUM, 0, s->comm);
    if (mrc != MPI_SUCCESS) return mpi_err(err, mrc, "MPI_Reduce (counters)");
    LP_TRY(err, lp_results_init(out, s->res.top_k, err));
    lp_results_group_by(out, &s->space);
    lp_results_objectives(out, s->sweep);
    int rc = lp_results_merge(out, &s->res, err);
    for (int step = 1; rc == LP_OK && step < s->size; step <<= 1) {
        if (s->rank & step) {
            rc = send_results(s, out, s->rank - step, err);
            break;
        }
        if (s->rank + step < s->size) rc = recv_results(s, out, s->rank + step, err);
    }
    if (rc < 0) {
        lp_err_trace(err, __FILE__, __LINE__);
        lp_results_free(out);
    }
    return rc;
}
