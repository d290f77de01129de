/* Dynamic self-scheduling of the index space over MPI ranks.
 *
 * The space [0, size) is cut into segments of opt.segment indices (the unit
 * of dataset writes and periodic checkpoints). Inside a segment, rank 0 hands
 * out index ranges on request, guided-self-scheduling style: a chunk is
 * ceil(remaining / (2 * ranks)) indices, at least --chunk, so early chunks are
 * large (few messages, thousands of ranks do not queue on rank 0) and late
 * ones small (the ranks finish together). A worker's request carries the
 * range it just finished and its row count; rank 0 computes ranges of its own
 * between answering requests, and alone (1 rank) computes everything.
 *
 * When the segment has nothing left to hand out (or a stop was requested),
 * rank 0 answers FLUSH; once every worker has, all ranks meet. When enough
 * rows (LP_FLUSH_ROWS) or time (--checkpoint) have accumulated, at the end
 * and on a stop, the ranks write their rows collectively at offsets given by
 * the prefix sum of the rows of the completed ranges sorted by index (so the
 * dataset is sorted by index and identical for any rank count), and rank 0
 * writes a checkpoint; then the next segment starts.
 *
 * Stop (SIGTERM / SIGUSR1): the handler only sets a flag. A rank that sees it
 * ends its current range early (a "chunk boundary" is any step of the walk)
 * and says so in its next request; rank 0 then sends a STOP notice to the
 * ranks still computing, hands out nothing more, flushes the partial segment
 * and writes the checkpoint. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search_internal.h"

enum { TAG_REQ = 11, TAG_WORK = 12, TAG_STOP = 13 };
enum { CMD_WORK = 1, CMD_FLUSH = 2 };
/* Rows (all ranks) after which the completed segments are written. */
#define LP_FLUSH_ROWS (UINT64_C(1) << 18)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int mpi_fail(struct lp_err *err, int mrc, const char *what, const char *file, int line)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(mrc, msg, &len);
    return lp_err_set_at(err, LP_EMPI, file, line, "MPI error in %s: %s", what, msg);
}
#define MPI_TRY(err, call)                                                                         \
    do {                                                                                           \
        int mrc_ = (call);                                                                         \
        if (mrc_ != MPI_SUCCESS) return mpi_fail((err), mrc_, #call, __FILE__, __LINE__);          \
    } while (0)

/* ---- rank 0's bookkeeping ---- */

struct master {
    struct lp_ranges pend; /* intervals of the segment not handed out, sorted */
    uint64_t pend_total;
    uint64_t *busy_lo; /* per worker: range in flight (busy_hi > busy_lo) */
    uint64_t *busy_hi;
    char *noticed; /* STOP notice sent */
    MPI_Request *notice_req;
    uint64_t notice_buf;
    int flushed; /* workers answered FLUSH */
    bool stop;
    uint64_t done_idx; /* indices walked in this run (all ranks) */
    uint64_t done_at_start;
};

static void take_chunk(struct lp_search *s, struct master *m, uint64_t *lo, uint64_t *hi)
{
    uint64_t want = (m->pend_total + 2 * (uint64_t)s->size - 1) / (2 * (uint64_t)s->size);
    if (want < s->opt.min_chunk) want = s->opt.min_chunk;
    struct lp_range *first = &m->pend.r[0];
    uint64_t len = first->hi - first->lo;
    if (want > len) want = len;
    *lo = first->lo;
    *hi = first->lo + want;
    first->lo += want;
    m->pend_total -= want;
    if (first->lo == first->hi) {
        memmove(&m->pend.r[0], &m->pend.r[1], (m->pend.n - 1) * sizeof(m->pend.r[0]));
        m->pend.n--;
    }
}

static void progress(struct lp_search *s, struct master *m, uint64_t own_partial, bool force)
{
    if (s->opt.quiet || s->opt.progress_s <= 0) return;
    double t = now_s();
    if (!force && t < s->progress_due) return;
    s->progress_due = t + s->opt.progress_s;
    uint64_t total = lp_space_size(&s->space);
    uint64_t done = s->done_before + m->done_idx + own_partial;
    double el = t - s->t_start;
    double rate = el > 0 ? (double)(m->done_idx + own_partial) / el : 0;
    double eta = rate > 0 ? (double)(total - done) / rate : 0;
    int h = (int)(eta / 3600), mi = (int)fmod(eta / 60, 60), se = (int)fmod(eta, 60);
    lp_search_say(s, LP_SEARCH_NOTE_PROGRESS,
                  "search: %llu/%llu (%.1f%%) %.0f indices/s, ETA %02d:%02d:%02d",
                  (unsigned long long)done, (unsigned long long)total,
                  total ? 100.0 * (double)done / (double)total : 100.0, rate, h, mi, se);
}

static int record_done(struct lp_search *s, struct master *m, uint64_t lo, uint64_t hi,
                       uint64_t rows, int owner, struct lp_err *err)
{
    if (hi <= lo) return LP_OK;
    struct lp_range r = {lo, hi, rows, 0, owner, 0};
    LP_TRY(err, lp_ranges_push(&s->done, &r, err));
    m->done_idx += hi - lo;
    return LP_OK;
}

/* rank 0's poll while computing: pause for a request, a stop or a progress
 * line */
static bool master_poll(struct lp_search *s)
{
    if (s->opt.stop_after && s->counts.v[LP_COUNT_DONE] - s->done_before >= s->opt.stop_after &&
        !lp_search_stop_requested())
        raise(SIGUSR1); /* --stop-after: the signal path, on rank 0 only */
    if (lp_search_stop_requested()) return true;
    if (s->size > 1) {
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_REQ, s->comm, &flag, MPI_STATUS_IGNORE);
        if (flag) return true;
    }
    return s->opt.progress_s > 0 && !s->opt.quiet && now_s() >= s->progress_due;
}

static bool worker_poll(struct lp_search *s)
{
    if (lp_search_stop_requested()) return true;
    int flag = 0;
    MPI_Iprobe(0, TAG_STOP, s->comm, &flag, MPI_STATUS_IGNORE);
    return flag != 0;
}

static int send_notices(struct lp_search *s, struct master *m, struct lp_err *err)
{
    for (int w = 1; w < s->size; w++)
        if (m->busy_hi[w] > m->busy_lo[w] && !m->noticed[w]) {
            m->noticed[w] = 1;
            MPI_TRY(err, MPI_Isend(&m->notice_buf, 1, MPI_UINT64_T, w, TAG_STOP, s->comm,
                                   &m->notice_req[w]));
        }
    return LP_OK;
}

/* Answer one request (blocking receive of a request known to be there). */
static int serve(struct lp_search *s, struct master *m, struct lp_err *err)
{
    const double t0 = now_s();
    uint64_t req[5];
    MPI_Status st;
    MPI_TRY(err, MPI_Recv(req, 5, MPI_UINT64_T, MPI_ANY_SOURCE, TAG_REQ, s->comm, &st));
    int w = st.MPI_SOURCE;
    if (req[4]) LP_TRY(err, record_done(s, m, req[0], req[1], req[2], w, err));
    m->busy_lo[w] = m->busy_hi[w] = 0;
    if (req[3]) m->stop = true;
    uint64_t rep[4] = {CMD_FLUSH, 0, 0, 0};
    if (!m->stop && m->pend_total > 0) {
        rep[0] = CMD_WORK;
        take_chunk(s, m, &rep[1], &rep[2]);
        m->busy_lo[w] = rep[1];
        m->busy_hi[w] = rep[2];
    } else {
        rep[3] = (uint64_t)m->noticed[w];
        m->flushed++;
    }
    MPI_TRY(err, MPI_Send(rep, 4, MPI_UINT64_T, w, TAG_WORK, s->comm));
    s->served++;
    s->serve_s += now_s() - t0;
    return LP_OK;
}

static int master_segment(struct lp_search *s, struct master *m, struct lp_err *err)
{
    uint64_t own_lo = 0, own_cur = 0, own_hi = 0, own_rows = 0, own_row_start = 0;
    bool own = false;
    m->flushed = 0;
    for (int w = 0; w < s->size; w++) {
        m->busy_lo[w] = m->busy_hi[w] = 0;
        m->noticed[w] = 0;
        m->notice_req[w] = MPI_REQUEST_NULL;
    }
    for (;;) {
        int flag = 1;
        while (s->size > 1 && flag) {
            MPI_TRY(err, MPI_Iprobe(MPI_ANY_SOURCE, TAG_REQ, s->comm, &flag, MPI_STATUS_IGNORE));
            if (flag) LP_TRY(err, serve(s, m, err));
        }
        if (!m->stop && lp_search_stop_requested()) m->stop = true;
        if (m->stop) LP_TRY(err, send_notices(s, m, err));
        if (!own && !m->stop && m->pend_total > 0) {
            take_chunk(s, m, &own_lo, &own_hi);
            own_cur = own_lo;
            own_rows = 0;
            own_row_start = s->rows.n;
            own = true;
        }
        if (own) {
            uint64_t reached = own_cur, rows = 0;
            LP_TRY(err, lp_eval_range(s, own_cur, own_hi, 0, master_poll, &reached, &rows, err));
            own_cur = reached;
            own_rows += rows;
            if (own_cur == own_hi || lp_search_stop_requested() || m->stop) {
                struct lp_range r = {own_lo, own_cur, own_rows, own_row_start, 0, 0};
                if (own_cur > own_lo) LP_TRY(err, lp_ranges_push(&s->mine, &r, err));
                LP_TRY(err, record_done(s, m, own_lo, own_cur, own_rows, 0, err));
                own = false;
                if (lp_search_stop_requested()) m->stop = true;
            }
            progress(s, m, own ? own_cur - own_lo : 0, false);
            continue;
        }
        progress(s, m, 0, false);
        if (m->flushed == s->size - 1) break;
        /* nothing to compute: wait for the next request */
        MPI_TRY(err, MPI_Probe(MPI_ANY_SOURCE, TAG_REQ, s->comm, MPI_STATUS_IGNORE));
    }
    MPI_TRY(err, MPI_Waitall(s->size, m->notice_req, MPI_STATUSES_IGNORE));
    return LP_OK;
}

static int worker_segment(struct lp_search *s, struct lp_err *err)
{
    uint64_t req[5] = {0, 0, 0, 0, 0};
    for (;;) {
        req[3] = lp_search_stop_requested();
        MPI_TRY(err, MPI_Send(req, 5, MPI_UINT64_T, 0, TAG_REQ, s->comm));
        uint64_t rep[4];
        MPI_TRY(err, MPI_Recv(rep, 4, MPI_UINT64_T, 0, TAG_WORK, s->comm, MPI_STATUS_IGNORE));
        if (rep[0] == CMD_FLUSH) {
            if (rep[3]) {
                uint64_t x;
                MPI_TRY(err,
                        MPI_Recv(&x, 1, MPI_UINT64_T, 0, TAG_STOP, s->comm, MPI_STATUS_IGNORE));
            }
            return LP_OK;
        }
        uint64_t reached = rep[1], rows = 0;
        size_t row_start = s->rows.n;
        LP_TRY(err, lp_eval_range(s, rep[1], rep[2], 0, worker_poll, &reached, &rows, err));
        struct lp_range r = {rep[1], reached, rows, row_start, s->rank, 0};
        if (reached > rep[1]) LP_TRY(err, lp_ranges_push(&s->mine, &r, err));
        req[0] = rep[1];
        req[1] = reached;
        req[2] = rows;
        req[4] = 1;
    }
}

/* Collective: rank 0 broadcasts the completed ranges not yet in the dataset,
 * sorted by index, with their dataset offsets; the ranks write their rows. */
static int flush_rows(struct lp_search *s, struct lp_err *err)
{
    uint64_t n64 = 0;
    if (s->rank == 0) {
        lp_ranges_sort(&s->done);
        uint64_t off = s->rows_base;
        for (size_t i = 0; i < s->done.n; i++) {
            s->done.r[i].row_start = off;
            off += s->done.r[i].rows;
        }
        n64 = s->done.n;
    }
    MPI_TRY(err, MPI_Bcast(&n64, 1, MPI_UINT64_T, 0, s->comm));
    size_t n = (size_t)n64;
    if (s->rank != 0) {
        s->done.n = 0;
        if (n > s->done.cap) {
            struct lp_range *r = realloc(s->done.r, n * sizeof(*r));
            if (!r) LP_FAIL(err, LP_ENOMEM, "out of memory (range table of %zu)", n);
            s->done.r = r;
            s->done.cap = n;
        }
        s->done.n = n;
    }
    if (n * sizeof(struct lp_range) > (size_t)INT32_MAX)
        LP_FAIL(err, LP_EMPI, "range table too large (%zu ranges); raise --chunk", n);
    if (n)
        MPI_TRY(err,
                MPI_Bcast(s->done.r, (int)(n * sizeof(struct lp_range)), MPI_BYTE, 0, s->comm));
    if (s->opt.dataset) LP_TRY(err, lp_dataset_write_segment(s, s->done.r, n, err));
    return LP_OK;
}

/* The part of [lo, hi) not covered by completed ranges (a resumed segment). */
static int pending_from_done(struct lp_search *s, struct master *m, uint64_t lo, uint64_t hi,
                             struct lp_err *err)
{
    lp_ranges_sort(&s->done);
    m->pend.n = 0;
    m->pend_total = 0;
    uint64_t cur = lo;
    for (size_t i = 0; i <= s->done.n && cur < hi; i++) {
        uint64_t next = i < s->done.n ? s->done.r[i].lo : hi;
        if (next > hi) next = hi;
        if (next > cur) {
            struct lp_range r = {cur, next, 0, 0, 0, 0};
            LP_TRY(err, lp_ranges_push(&m->pend, &r, err));
            m->pend_total += next - cur;
        }
        if (i < s->done.n && s->done.r[i].hi > cur) cur = s->done.r[i].hi;
    }
    return LP_OK;
}

/* Collective: reduce, and rank 0 writes the checkpoint. */
static int checkpoint(struct lp_search *s, struct lp_err *err)
{
    struct lp_results all;
    struct lp_counts total;
    LP_TRY(err, lp_reduce(s, &all, &total, err));
    int rc = s->rank == 0 ? lp_checkpoint_write(s, &all, &total, err) : LP_OK;
    lp_results_free(&all);
    return rc;
}

int lp_sched_run(struct lp_search *s, struct lp_err *err)
{
    const uint64_t size = lp_space_size(&s->space);
    const uint64_t seg = s->opt.segment;
    const uint64_t nseg = (size + seg - 1) / seg;
    struct master m;
    memset(&m, 0, sizeof(m));
    int rc = LP_OK;
    if (s->rank == 0) {
        m.busy_lo = calloc((size_t)s->size, sizeof(uint64_t));
        m.busy_hi = calloc((size_t)s->size, sizeof(uint64_t));
        m.noticed = calloc((size_t)s->size, 1);
        m.notice_req = calloc((size_t)s->size, sizeof(MPI_Request));
        if (!m.busy_lo || !m.busy_hi || !m.noticed || !m.notice_req) {
            rc = lp_err_set_at(err, LP_ENOMEM, __FILE__, __LINE__, "out of memory");
            goto cleanup;
        }
        s->progress_due = now_s() + s->opt.progress_s;
    }
    bool stop = false;
    double last_flush = now_s();
    s->segment = s->flush_seg;
    for (; s->segment < nseg; s->segment++) {
        uint64_t lo = s->segment * seg, hi = lo + seg < size ? lo + seg : size;
        if (s->rank == 0) {
            LP_TRY_GOTO(err, rc, pending_from_done(s, &m, lo, hi, err), cleanup);
            m.stop = stop;
            LP_TRY_GOTO(err, rc, master_segment(s, &m, err), cleanup);
            stop = m.stop;
        } else {
            LP_TRY_GOTO(err, rc, worker_segment(s, err), cleanup);
        }
        /* Write the rows (and checkpoint) at the end of the sweep, on a stop,
         * and when enough rows or time have accumulated: segments with few
         * rows share one write. Only performance depends on this decision. */
        uint64_t dec[2] = {0, stop};
        if (s->rank == 0) {
            uint64_t rows = 0;
            for (size_t i = 0; i < s->done.n; i++)
                rows += s->done.r[i].rows;
            dec[0] = stop || s->segment + 1 == nseg || rows >= LP_FLUSH_ROWS ||
                     (s->opt.checkpoint_s > 0 && now_s() - last_flush >= s->opt.checkpoint_s);
        }
        MPI_TRY(err, MPI_Bcast(dec, 2, MPI_UINT64_T, 0, s->comm));
        stop = dec[1] != 0;
        if (!dec[0]) continue;
        LP_TRY_GOTO(err, rc, flush_rows(s, err), cleanup);
        last_flush = now_s();
        /* on a stop the checkpoint records the ranges just written; else the
         * written segments are final and the next one starts afresh */
        if (stop) break;
        for (size_t i = 0; i < s->done.n; i++)
            s->rows_base += s->done.r[i].rows;
        memcpy(s->h5_sum_base, s->h5_sum, sizeof(s->h5_sum_base)); /* rows now final */
        s->rows.n = 0;
        s->mine.n = 0;
        s->done.n = 0;
        s->flush_seg = s->segment + 1;
        /* periodic checkpoint: survives a hard kill after this point */
        if (s->flush_seg < nseg) LP_TRY_GOTO(err, rc, checkpoint(s, err), cleanup);
    }
    if (s->rank == 0) progress(s, &m, 0, true);
    if (stop) {
        LP_TRY_GOTO(err, rc, checkpoint(s, err), cleanup);
        rc = LP_EINTERRUPT;
    }
cleanup:
    free(m.busy_lo);
    free(m.busy_hi);
    free(m.noticed);
    free(m.notice_req);
    lp_ranges_free(&m.pend);
    return rc;
}
