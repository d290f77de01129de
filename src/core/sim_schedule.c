/* Pipeline schedules solved exactly on their dependency graph.
 *
 * Each stage runs its operations in the fixed order its schedule prescribes
 * (Megatron-LM's schedules.py): GPipe runs every forward then every backward;
 * 1F1B runs min(p - s - 1, m) warm-up forwards on stage s, then alternates one
 * forward and one backward, then drains the backwards; interleaved 1F1B
 * (Narayanan et al. 2021, Sec 2.2.2) does the same over v model chunks per
 * stage with (p - s - 1) * 2 + (v - 1) * p warm-up forwards, the k-th forward
 * working on chunk (k mod pv) / p of micro-batch (k / pv) p + k mod p.
 *
 * A forward of virtual stage vs = chunk * p + s needs the forward of vs - 1;
 * a backward needs the backward of vs + 1 (or, on the last virtual stage, its
 * own forward). An operation starts when its stage is free and its input has
 * arrived (finish + p2p when it crosses stages). Without p2p overlap the
 * sender is also busy for the transfer. A worklist advances each stage as far
 * as its inputs allow and wakes the stage an output feeds: O(p * v * m)
 * operations, no allocation (scratch is owned by struct lp_sim). */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "sim_internal.h"

struct op {
    bool bwd;
    int chunk, mb;
};

static size_t at(int vs, int m, int mb)
{
    return (size_t)vs * (size_t)m + (size_t)mb;
}

int64_t lp_sched_warmup(enum lp_schedule kind, int p, int v, int64_t m, int s)
{
    const int64_t mv = m * v;
    int64_t w;
    switch (kind) {
    case LP_SCHED_GPIPE:
        w = mv;
        break;
    case LP_SCHED_INTERLEAVED:
        w = (int64_t)(p - s - 1) * 2 + (int64_t)(v - 1) * p;
        break;
    default:
        w = p - s - 1;
        break;
    }
    return w < mv ? w : mv;
}

static int warmup(const struct lp_sched_in *in, int s)
{
    return (int)lp_sched_warmup(in->kind, in->p, in->v, in->m, s);
}

static void item(const struct lp_sched_in *in, int k, bool bwd, struct op *o)
{
    if (in->v == 1) { /* one chunk: the k-th micro-batch */
        o->bwd = bwd;
        o->chunk = 0;
        o->mb = k;
        return;
    }
    int p = in->p, pv = in->p * in->v;
    int c = (k % pv) / p;
    o->bwd = bwd;
    o->chunk = bwd ? in->v - 1 - c : c;
    o->mb = (k / pv) * p + k % p;
}

/* The j-th operation of stage s (w: the stage's warm-up count). */
static void stage_op(const struct lp_sched_in *in, int w, int j, struct op *o)
{
    int mv = in->m * in->v;
    if (j < w) {
        item(in, j, false, o);
    } else if (j < w + 2 * (mv - w)) {
        int i = j - w;
        if (i % 2 == 0)
            item(in, w + i / 2, false, o);
        else
            item(in, i / 2, true, o);
    } else {
        item(in, j - mv, true, o);
    }
}

/* Record a pass, and the p2p transfer that follows it when it sends
 * (on the stage's communication stream), if a trace is being kept. */
static void record(struct lp_event *ev, int cap, int *ne, int stage, int mb, int chunk,
                   enum lp_event_kind kind, double start, double dur, double p2p_s)
{
    if (!ev || *ne >= cap) return;
    ev[(*ne)++] = (struct lp_event){.stage = stage,
                                    .stream = 0,
                                    .micro = mb,
                                    .chunk = chunk,
                                    .kind = kind,
                                    .start_s = start,
                                    .dur_s = dur};
    if (p2p_s > 0 && *ne < cap)
        ev[(*ne)++] = (struct lp_event){.stage = stage,
                                        .stream = 1,
                                        .micro = mb,
                                        .chunk = chunk,
                                        .kind = LP_EV_P2P,
                                        .start_s = start + dur,
                                        .dur_s = p2p_s};
}

/* Every stage's end time and the makespan. */
static void finish(struct lp_sched_out *out, const double *end, int p, int ne, int *nev)
{
    double mk = 0.0;
    for (int s = 0; s < p; s++) {
        out->stage_end_s[s] = end[s];
        if (end[s] > mk) mk = end[s];
    }
    out->makespan_s = mk;
    if (nev) *nev = ne;
}

/* Operation (bwd, virtual stage vs, micro-batch mb) on its stage, whose
 * previous operation ended at *cursor: if its input has arrived, its start
 * and duration, its finish stored in F or B, the cursor moved past it (and
 * past the send when a send keeps the sender busy); false when the input has
 * not arrived yet. The one rule of both solvers below. */
/* inlined into both solvers' loops (as a call it costs ~20% of a solve) */
#if defined(__GNUC__)
#define LP_INLINE inline __attribute__((always_inline))
#else
#define LP_INLINE inline
#endif
/* An operation's duration on virtual stage vs: its pass, and the embedding
 * on the first / the logits and loss on the last virtual stage. */
static LP_INLINE double op_dur(const struct lp_sched_in *in, bool bwd, int vs)
{
    const int last = in->p * in->v - 1;
    if (!bwd)
        return in->f[vs] + (vs == 0 ? in->f_first_extra : 0.0) +
               (vs == last ? in->f_last_extra : 0.0);
    return in->b[vs] + (vs == 0 ? in->b_first_extra : 0.0) + (vs == last ? in->b_last_extra : 0.0);
}

/* d: the pass's duration, op_dur(in, bwd, vs) (the fast solvers take it
 * from a table filled once per solve: the same value) */
static LP_INLINE bool run_op(const struct lp_sched_in *in, double *F, double *B, bool bwd, int vs,
                             int mb, double d, double *cursor, double *start, double *dur)
{
    const int p = in->p, m = in->m, pv = in->p * in->v;
    double ready;
    bool cross;
    if (!bwd) {
        if (vs == 0) {
            ready = 0.0;
            cross = false;
        } else {
            ready = F[at(vs - 1, m, mb)];
            cross = p > 1;
        }
        *dur = d;
    } else {
        if (vs == pv - 1) {
            ready = F[at(vs, m, mb)];
            cross = false;
        } else {
            ready = B[at(vs + 1, m, mb)];
            cross = p > 1;
        }
        *dur = d;
    }
    if (ready < 0.0) return false;
    if (cross) ready += in->p2p_s;
    *start = *cursor > ready ? *cursor : ready;
    const double fin = *start + *dur;
    if (!bwd)
        F[at(vs, m, mb)] = fin;
    else
        B[at(vs, m, mb)] = fin;
    *cursor = fin;
    /* a send that is not overlapped keeps the sender busy */
    const bool sends = bwd ? vs > 0 : vs < pv - 1;
    if (in->p2p_blocking && sends && p > 1) *cursor += in->p2p_s;
    return true;
}

/* The worklist of stages to visit (all three worklist solvers): every
 * stage at first, stage 0 on top; then the stages an output woke. */
struct stages {
    int stack[1024], top;
    bool queued[1024];
};

static void stages_all(struct stages *w, int p)
{
    w->top = 0;
    for (int s = p - 1; s >= 0; s--) {
        w->stack[w->top++] = s;
        w->queued[s] = true;
    }
}

static int stages_pop(struct stages *w)
{
    const int s = w->stack[--w->top];
    w->queued[s] = false;
    return s;
}

/* Put stage c on the worklist unless it is there. */
static void wake(struct stages *w, int c)
{
    if (w->queued[c]) return;
    w->stack[w->top++] = c;
    w->queued[c] = true;
}

int lp_sched_exact_ref(struct lp_sim *sim, const struct lp_sched_in *in, struct lp_sched_out *out,
                       struct lp_event *ev, int cap, int *nev)
{
    int p = in->p, v = in->v, m = in->m, pv = p * v, mv = m * v;
    size_t n = (size_t)pv * (size_t)m;
    if (!lp_sched_exact_fits(sim, in)) return -1;
    double *F = sim->sched_f, *B = sim->sched_b;
    if (in->kind == LP_SCHED_ZB) return lp_sched_zb_ref(in, out, F, B, ev, cap, nev);
    for (size_t i = 0; i < n; i++)
        F[i] = B[i] = -1.0;
    int next[1024], wu[1024];
    double cursor[1024];
    for (int s = 0; s < p; s++) {
        wu[s] = warmup(in, s);
        next[s] = 0;
        cursor[s] = 0.0;
        out->stage_busy_s[s] = 0.0;
    }
    long done = 0, total = (long)p * 2 * mv;
    int ne = 0;
    /* Worklist: a stage runs until its next operation's input is missing;
     * the stage that produces that input pushes it back. Every operation is
     * executed once and every stage is examined at most once per operation
     * that feeds it: O(p v m). */
    struct stages wl;
    stages_all(&wl, p);
    while (wl.top > 0) {
        const int s = stages_pop(&wl);
        while (next[s] < 2 * mv) {
            struct op o;
            stage_op(in, wu[s], next[s], &o);
            int vs = o.chunk * p + s;
            double start, dur;
            if (!run_op(in, F, B, o.bwd, vs, o.mb, op_dur(in, o.bwd, vs), &cursor[s], &start, &dur))
                break;
            bool sends = o.bwd ? vs > 0 : vs < pv - 1;
            out->stage_busy_s[s] += dur;
            record(ev, cap, &ne, s, o.mb, o.chunk, o.bwd ? LP_EV_BWD : LP_EV_FWD, start, dur,
                   sends && p > 1 ? in->p2p_s : 0.0);
            next[s]++;
            done++;
            /* wake the stage this output feeds */
            if (sends && p > 1) wake(&wl, o.bwd ? (vs - 1) % p : (vs + 1) % p);
        }
    }
    if (done < total) return -2; /* a dependency cycle: cannot happen for these schedules */
    finish(out, cursor, p, ne, nev);
    return 0;
}

bool lp_sched_exact_fits(const struct lp_sim *sim, const struct lp_sched_in *in)
{
    const size_t n = (size_t)in->p * (size_t)in->v * (size_t)in->m;
    /* (the fast solvers' table of durations holds LP_SCHED_MAX_VSTAGES
     * virtual stages, as many as a run's layer split: rules.c refuses more) */
    return in->p <= 1024 && (size_t)in->p * (size_t)in->v <= LP_SCHED_MAX_VSTAGES &&
           n <= sim->sched_cap;
}

double lp_sched_closed_form(const struct lp_sched_in *in)
{
    const int p = in->p, v = in->v;
    double busiest = 0, pass = 0;
    for (int s = 0; s < p; s++) {
        double st = 0; /* one micro-batch on stage s: every chunk */
        for (int c = 0; c < v; c++)
            st += in->f[c * p + s] + in->b[c * p + s];
        if (s == 0) st += in->f_first_extra + in->b_first_extra;
        if (s == p - 1) st += in->f_last_extra + in->b_last_extra;
        busiest = fmax(busiest, st);
        pass += st / v; /* one chunk's share: what a micro-batch's fill costs */
    }
    return in->m * busiest + (pass - busiest / v) + 2.0 * (p - 1.0) * in->p2p_s;
}

/* zb, after Qi et al. 2024 ('Zero Bubble Pipeline Parallelism', Sec 3): the
 * backward of a micro-batch is split into B (input gradient: what the
 * previous stage waits for) and W (weight gradient: nobody waits for it).
 * Each stage keeps 1F1B's order of F and B passes (so 1F1B's memory bound),
 * and runs a pending W whenever its next F or B would otherwise wait for its
 * input. Events are taken in global time order: the stage that can act
 * earliest acts next, so an input a stage waits for is always produced after
 * that stage's current time. This greedy placement of W is ours, not the
 * paper's hand-made ZB-H1 order: on uniform stages without p2p cost it gives
 * their bubble (p - 1)(F + B - W) when F = B = W, and never more than
 * (p - 1)(F + B) (tests/unit/test_sim.c). */
static double zb_ready(const struct lp_sched_in *in, const double *F, const double *B, int s,
                       bool bwd, int mb)
{
    int p = in->p, m = in->m;
    double r;
    if (!bwd) {
        if (s == 0) return 0.0;
        r = F[at(s - 1, m, mb)];
    } else {
        if (s == p - 1) return F[at(s, m, mb)];
        r = B[at(s + 1, m, mb)];
    }
    return r < 0.0 ? r : r + in->p2p_s;
}

/* zb: the duration of stage s's F or B pass (B without its W part). */
static double zb_dur(const struct lp_sched_in *in, int s, bool bwd)
{
    const int p = in->p;
    if (!bwd)
        return in->f[s] + (s == 0 ? in->f_first_extra : 0.0) +
               (s == p - 1 ? in->f_last_extra : 0.0);
    return in->b[s] - in->w[s] + (s == 0 ? in->b_first_extra : 0.0) +
           (s == p - 1 ? in->b_last_extra : 0.0);
}

/* The backward pass on virtual stage vs that the next stage down waits for
 * (zb: B without its W part, zb_dur's own expression, so that no
 * cancellation rounds it above the solver's). */
static double b_pass(const struct lp_sched_in *in, bool zb, int vs)
{
    return zb ? zb_dur(in, vs, true) : op_dur(in, true, vs);
}

void lp_sched_ends_bound(const struct lp_sim *sim, const struct lp_sched_in *in, double busy_first,
                         double busy_last, double *end_first, double *end_last)
{
    const double margin = 1.0 - 0x1p-18;
    const int p = in->p, pv = in->p * in->v;
    double fill = 0, chain = 0;
    if (p > 1 && lp_sched_exact_fits(sim, in)) {
        const bool zb = in->kind == LP_SCHED_ZB;
        /* bench_sim's stops 27-34: the fill without hops, no drain */
        const bool drain_too = !sim->bench_no_drain;
        /* an operation on virtual stage vs waits for vs - 1's (forward) or
         * vs + 1's (backward) output plus a hop (run_op, zb_ready) */
        for (int vs = 0; vs < p - 1; vs++)
            fill += op_dur(in, false, vs) + (drain_too ? in->p2p_s : 0.0);
        if (drain_too) {
            /* the last device's F and B passes (B without W under zb: a W
             * may follow the last B), every micro-batch, one at a time */
            double fb = 0;
            for (int vs = p - 1; vs < pv; vs += p)
                fb += op_dur(in, false, vs) + b_pass(in, zb, vs);
            /* for each micro-batch, B on virtual stage p - 1 (chunk 0 of the
             * last device) is its last pass there: every later chunk's B
             * comes before it and every F before that; the last of them
             * crosses virtual stages p - 2 .. 0 backwards, then stage 0's W
             * under zb */
            double drain = zb ? in->w[0] : 0.0;
            for (int vs = p - 2; vs >= 0; vs--)
                drain += in->p2p_s + b_pass(in, zb, vs);
            chain = fill + in->m * fb + drain;
        }
    }
    *end_first = fmax(busy_first, chain) * margin;
    *end_last = (fill + busy_last) * margin;
}

/* zb: stage s's F or B pass o starting at start: its duration, its finish
 * stored in F or B. */
static double zb_pass(const struct lp_sched_in *in, double *F, double *B, int s, const struct op *o,
                      double start)
{
    const double dur = zb_dur(in, s, o->bwd);
    if (!o->bwd)
        F[at(s, in->m, o->mb)] = start + dur;
    else
        B[at(s, in->m, o->mb)] = start + dur;
    return dur;
}

int lp_sched_zb_ref(const struct lp_sched_in *in, struct lp_sched_out *out, double *F, double *B,
                    struct lp_event *ev, int cap, int *nev)
{
    int p = in->p, m = in->m;
    if (p > 1024 || in->v != 1) return -1;
    for (size_t i = 0; i < (size_t)p * (size_t)m; i++)
        F[i] = B[i] = -1.0;
    int next[1024], wu[1024], wpend[1024], wdone[1024];
    double t[1024];
    for (int s = 0; s < p; s++) {
        wu[s] = warmup(in, s);
        next[s] = wpend[s] = wdone[s] = 0;
        t[s] = 0.0;
        out->stage_busy_s[s] = 0.0;
    }
    long remaining = (long)p * 3 * m;
    int ne = 0;
    while (remaining > 0) {
        /* the stage that can act earliest: its next F/B if the input is there
         * by then, else a pending W now, else its F/B when the input comes */
        int best = -1;
        bool best_w = false;
        double best_t = 0.0;
        for (int s = 0; s < p; s++) {
            double when = -1.0;
            bool w = false;
            if (next[s] < 2 * m) {
                struct op o;
                stage_op(in, wu[s], next[s], &o);
                double r = zb_ready(in, F, B, s, o.bwd, o.mb);
                if (r >= 0.0 && r <= t[s]) {
                    when = t[s];
                } else if (wpend[s] > 0) {
                    when = t[s];
                    w = true;
                } else if (r >= 0.0) {
                    when = r;
                }
            } else if (wpend[s] > 0) {
                when = t[s];
                w = true;
            }
            if (when >= 0.0 && (best < 0 || when < best_t || (when == best_t && !w && best_w))) {
                best = s;
                best_t = when;
                best_w = w;
            }
        }
        if (best < 0) return -2; /* a dependency cycle: cannot happen */
        int s = best;
        double start = best_t, dur;
        enum lp_event_kind kind;
        int mb;
        if (best_w) {
            dur = in->w[s];
            kind = LP_EV_WGRAD;
            mb = wdone[s]++;
            wpend[s]--;
        } else {
            struct op o;
            stage_op(in, wu[s], next[s], &o);
            mb = o.mb;
            dur = zb_pass(in, F, B, s, &o, start);
            kind = o.bwd ? LP_EV_BWD : LP_EV_FWD;
            if (o.bwd) wpend[s]++;
            next[s]++;
        }
        t[s] = start + dur;
        bool sends = !best_w && (kind == LP_EV_BWD ? s > 0 : s < p - 1);
        if (in->p2p_blocking && sends && p > 1) t[s] += in->p2p_s;
        out->stage_busy_s[s] += dur;
        record(ev, cap, &ne, s, mb, 0, kind, start, dur, sends && p > 1 ? in->p2p_s : 0.0);
        remaining--;
    }
    finish(out, t, p, ne, nev);
    return 0;
}

/* ---- The fast solvers ----
 * The same operations in the same order on every stage, and the same
 * floating-point expression for every start and finish time, so the results
 * are bit-identical to the reference solvers above (an operation's finish
 * time depends only on its stage's previous operation and its input, not on
 * the order in which the solver visits the stages; for zb the order of events
 * is the same total order). tests/unit/test_sched_fast.c compares them on
 * random pipelines. What changes is the bookkeeping:
 *  - a stage's next operation comes from two running counters, its forward
 *    and its backward items, each decomposed incrementally into micro-batch
 *    and chunk, instead of a division and two remainders per operation;
 *  - zb takes the stage that acts next from a tournament tree over the
 *    stages keyed (time, W last, stage), the order of the reference's scan,
 *    updated for the stage that acted and the neighbour its output feeds (the
 *    only stages whose next action can change): O(log p) per event instead
 *    of a scan over all p stages, O(p m log p) in all instead of O(p^2 m). */

/* Item k of a stage's forward or backward sequence: r = k mod p,
 * c = (k mod pv) / p, g = k / pv (item() above). */
struct seq {
    int r, c, g;
};

static void seq_next(struct seq *q, int p, int v)
{
    if (++q->r == p) {
        q->r = 0;
        if (++q->c == v) {
            q->c = 0;
            q->g++;
        }
    }
}

/* Whether operation j of a stage with w warm-up forwards (of 2 mv) is a
 * backward (stage_op above). */
static bool is_bwd(int j, int w, int mv)
{
    return j >= w && (j >= 2 * mv - w || ((j - w) & 1));
}

struct walker {
    int j, w; /* operations done, warm-up forwards */
    struct seq f, b;
};

static int zb_fast(struct lp_sim *sim, const struct lp_sched_in *in, struct lp_sched_out *out,
                   double *F, double *B, struct lp_event *ev, int cap, int *nev);

/* The worklist of lp_sched_exact_ref with the fast bookkeeping: every stage
 * runs until its op count reaches lim[s] (NULL: all 2 m v of them) or its
 * next operation's input is missing; the stage an output feeds is woken.
 * Stages are visited in any order: an operation's times depend only on its
 * stage's previous operation and its input. */
struct fast {
    const struct lp_sched_in *in;
    struct lp_sim *sim;
    struct lp_sched_out *out;
    double *F, *B;
    struct walker wk[1024];
    double cursor[1024];
    /* [bwd][vs]: op_dur of every virtual stage's passes, once per solve
     * (issue #20 stop 31: the worklist computed them per operation) */
    double dur[2][LP_SCHED_MAX_VSTAGES];
    long done;
    bool busy; /* sum the busy times (not wanted by the steady-state shortcut) */
    struct lp_event *ev;
    int cap, ne;
};

static void advance(struct fast *x, const int *lim)
{
    const struct lp_sched_in *in = x->in;
    const int p = in->p, v = in->v, mv = in->m * in->v, pv = p * v;
    const bool multi = p > 1;
    struct stages wl;
    stages_all(&wl, p);
    while (wl.top > 0) {
        const int s = stages_pop(&wl);
        struct walker *q = &x->wk[s];
        const int end = lim ? lim[s] : 2 * mv;
        while (q->j < end) {
            const bool bwd = is_bwd(q->j, q->w, mv);
            const struct seq *it = bwd ? &q->b : &q->f;
            const int mb = it->g * p + it->r;
            const int chunk = bwd ? v - 1 - it->c : it->c;
            const int vs = chunk * p + s;
            double start, dur;
            if (!run_op(in, x->F, x->B, bwd, vs, mb, x->dur[bwd][vs], &x->cursor[s], &start, &dur))
                break;
            const bool sends = bwd ? vs > 0 : vs < pv - 1;
            if (bwd)
                seq_next(&q->b, p, v);
            else
                seq_next(&q->f, p, v);
            if (x->busy) x->out->stage_busy_s[s] += dur;
            if (x->ev)
                record(x->ev, x->cap, &x->ne, s, mb, chunk, bwd ? LP_EV_BWD : LP_EV_FWD, start, dur,
                       sends && multi ? in->p2p_s : 0.0);
            q->j++;
            x->done++;
            if (sends && multi) /* wake the stage this output feeds */
                wake(&wl, bwd ? (s == 0 ? p - 1 : s - 1) : (s == p - 1 ? 0 : s + 1));
        }
    }
}

/* advance for one chunk per stage (v = 1: 1F1B, GPipe), issue #20 stop 31:
 * the same operations in the same order with the same expressions as
 * advance (run_op's), with the stage's reads and writes as running indices
 * into its rows of F and B (item k is micro-batch k, virtual stage s), its
 * durations and cursor in registers while it runs; its walker's counters
 * written back when it blocks. bench_sim's sched_stop31f runs advance. */
static void advance1(struct fast *x, const int *lim)
{
    const struct lp_sched_in *in = x->in;
    const int p = in->p, m = in->m;
    const bool multi = p > 1, blocking = in->p2p_blocking && multi;
    const double c = in->p2p_s;
    struct stages wl;
    stages_all(&wl, p);
    while (wl.top > 0) {
        const int s = stages_pop(&wl);
        struct walker *q = &x->wk[s];
        const int end = lim ? lim[s] : 2 * m;
        if (q->j >= end) continue;
        const bool first = s == 0, last = s == p - 1;
        const double df = x->dur[0][s], db = x->dur[1][s];
        const double *Fin = first ? NULL : x->F + at(s - 1, m, 0),
                     *Bin = last ? NULL : x->B + at(s + 1, m, 0);
        double *Fs = x->F + at(s, m, 0), *Bs = x->B + at(s, m, 0);
        int j = q->j, nf = q->f.g * p + q->f.r, nb = q->b.g * p + q->b.r;
        double cur = x->cursor[s];
        while (j < end) {
            const bool bwd = is_bwd(j, q->w, m);
            double ready;
            if (!bwd)
                ready = first ? 0.0 : Fin[nf];
            else
                ready = last ? Fs[nb] : Bin[nb];
            if (ready < 0.0) break;
            /* an input from another stage arrives after the send */
            if (bwd ? !last : !first) ready += c;
            const double start = cur > ready ? cur : ready, dur = bwd ? db : df;
            const double fin = start + dur;
            const int mb = bwd ? nb : nf;
            if (bwd)
                Bs[nb++] = fin;
            else
                Fs[nf++] = fin;
            cur = fin;
            const bool sends = multi && (bwd ? !first : !last);
            if (blocking && sends) cur += c;
            if (x->busy) x->out->stage_busy_s[s] += dur;
            if (x->ev)
                record(x->ev, x->cap, &x->ne, s, mb, 0, bwd ? LP_EV_BWD : LP_EV_FWD, start, dur,
                       sends ? c : 0.0);
            j++;
            x->done++;
            if (sends) wake(&wl, bwd ? s - 1 : s + 1); /* the stage this output feeds */
        }
        x->cursor[s] = cur;
        q->j = j;
        q->f = (struct seq){.r = nf % p, .c = 0, .g = nf / p};
        q->b = (struct seq){.r = nb % p, .c = 0, .g = nb / p};
    }
}

/* The worklist: advance1 where each stage runs one chunk (but for
 * bench_sim's solvers of stop 31 and before) */
static void run_list(struct fast *x, const int *lim)
{
    const struct lp_sim *sim = x->sim;
    if (x->in->v == 1 && !sim->sched_stop31f && !sim->sched_stop31 && !sim->sched_stop30 &&
        !sim->sched_stop29 && !sim->sched_stop28)
        advance1(x, lim);
    else
        advance(x, lim);
}

static bool steady_pairs(struct fast *x);
static bool steady_gpipe(struct fast *x);

int lp_sched_exact(struct lp_sim *sim, const struct lp_sched_in *in, struct lp_sched_out *out,
                   struct lp_event *ev, int cap, int *nev)
{
    const int p = in->p, v = in->v, m = in->m, pv = p * v, mv = m * v;
    const size_t n = (size_t)pv * (size_t)m;
    if (!lp_sched_exact_fits(sim, in)) return -1;
    double *F = sim->sched_f, *B = sim->sched_b;
    if (in->kind == LP_SCHED_ZB) return zb_fast(sim, in, out, F, B, ev, cap, nev);
    for (size_t i = 0; i < n; i++)
        F[i] = B[i] = -1.0;
    struct fast fx, *x = &fx;
    x->sim = sim;
    x->in = in;
    x->out = out;
    x->F = F;
    x->B = B;
    x->done = 0;
    x->busy = !in->ends_only;
    x->ev = ev;
    x->cap = cap;
    x->ne = 0;
    for (int vs = 0; vs < pv; vs++) {
        x->dur[0][vs] = op_dur(in, false, vs);
        x->dur[1][vs] = op_dur(in, true, vs);
    }
    for (int s = 0; s < p; s++) {
        x->wk[s] = (struct walker){.j = 0, .w = warmup(in, s)};
        x->cursor[s] = 0.0;
        out->stage_busy_s[s] = 0.0;
    }
    const long total = (long)p * 2 * mv;
    sim->sched_ops_total += (uint64_t)total;
    const bool steady = in->ends_only && !ev && !sim->sched_every_op &&
                        (!sim->sched_stop28 || in->kind == LP_SCHED_1F1B);
    if (!(steady && (steady_pairs(x) || steady_gpipe(x)))) run_list(x, NULL);
    if (x->done < total) return -2; /* a dependency cycle: cannot happen for these schedules */
    finish(out, x->cursor, p, x->ne, nev);
    return 0;
}

/* ---- 1F1B's (and interleaved 1F1B's) periodic regime, extrapolated exactly ----
 * (docs/simulator.md section 4 has the proof.) With m >= p micro-batches,
 * stage s runs w_s = p - s - 1 warm-up forwards, then pairs i = 0, 1, ...:
 * F(w_s + i), B(i). Level q is the cut after every stage's pairs < q (op
 * count w_s + 2q); S_q, the values the ops above the cut read from below it,
 * is each stage's last pair's F and B finish and its cursor: F(s, w_s + q)
 * reads F(s - 1, w_{s-1} + q - 1), B(s, q) reads B(s + 1, q) above the cut,
 * the last stage's B reads its own F. For 1 <= q <= m - p the ops of pair q
 * are the same function Phi of S_q (same durations, same reads), built from
 * max and + constant. In exact arithmetic Phi(S + d) = Phi(S) + d, so
 * S_q = S_{q-c} + d (a period of c levels) gives S_{q+jc} = S_q + j d. In
 * floating point, while
 * every value lies in one binade [2^E, 2^(E+1)) (spacing u), a + c rounds to
 * a + RN_u(c) for every state value a (a multiple of u), unless c is an odd
 * multiple of u/2 (a tie: to even depends on a): Phi is then exactly an
 * integer max-plus map, so the same holds bit for bit. The shortcut checks
 * S_q - S_{q-c} equal to one d in every component (exact: both in one
 * binade), no addend a tie, and S_q + j d still inside the binade; then sets
 * the last c levels' S moved by j d and each stage's counters and resumes
 * the worklist. Values of the skipped ops are never read (the reads above
 * level q+jc are S_{q+jc} or later ops), and each stage's busy sum is not
 * kept (ends_only).
 * Interleaved 1F1B (v chunks, w_s = 2 (p - s - 1) + (v - 1) p, items in
 * groups of pv: item() above) keeps the same argument with two changes.
 * (a) The cut is skewed: stage s has run q + s pairs. An unskewed one is not
 * closed: stage 0's forward of chunk c > 0 reads stage p-1's forward p items
 * back (the previous chunk of the same micro-batch), which lies p - 2 levels
 * above it, and stage p-1's backward of chunk c < v-1 reads stage 0's
 * backward p items back. With the skew every read from above the cut to
 * below it is the producing stage's last F or B (F(s) reads F(s-1) of the
 * same item: lag 1; F(0, k) reads F(p-1, k-p): lag 1; B(s) reads B(s+1):
 * above the cut; B(p-1, k) reads B(0, k-p): lag 1, or its own F of chunk v-1
 * (k + (v-1) p): above), so S_q is again each stage's last F, B and cursor.
 * (b) The ops of a level depend on the chunks of its items (the durations,
 * the reads, the sends), which repeat every pv items: only periods c that
 * are whole groups (multiples of pv levels) are looked for, and a jump of
 * k = j c levels moves every item by whole groups (the same chunk, k / pv
 * groups of p micro-batches on). */
static bool tie_at(double c, double u)
{
    const double r = c / u; /* exact: u is a power of two */
    return r - floor(r) == 0.5;
}

static void seq_at(struct seq *q, int k, int p, int v)
{
    const int pv = p * v;
    *q = (struct seq){.r = k % p, .c = (k % pv) / p, .g = k / pv};
}

/* Where item k of stage s's forward (bwd false) or backward sequence keeps
 * its finish time in F or B (item() above: chunk c of micro-batch
 * (k / pv) p + k mod p; backwards run the chunks in reverse). */
static size_t item_at(const struct lp_sched_in *in, int s, int k, bool bwd)
{
    if (in->v == 1) return at(s, in->m, k);
    const int p = in->p, v = in->v, pv = p * v;
    const int c = (k % pv) / p, chunk = bwd ? v - 1 - c : c;
    return at(chunk * p + s, in->m, (k / pv) * p + k % p);
}

/* A family of cuts for the level-by-level shortcut: at level q stage s has
 * run fo[s] + q fwd forwards and bo[s] + q bwd backwards (fwd, bwd: 0 or 1,
 * the items one level adds per stage). 1F1B and interleaved 1F1B: a pair
 * per level after the warm-ups (fo = w_s + sk s, bo = sk s, sk the skew);
 * GPipe: a forward per level (fo = bo = 0), then a backward per level
 * (fo = m, bo = 0). */
struct levels {
    int fwd, bwd;
    int fo[1024], bo[1024];
    int step, cmax, margin, stride;
    int last;       /* the highest level whose map is the steady one */
    bool fill_last; /* write every skipped forward of stage p-1 (GPipe: its
                     * backwards read them) */
};

static int level_ops(const struct levels *L, int s, int q)
{
    return L->fo[s] + L->fwd * q + L->bo[s] + L->bwd * q;
}

/* The latest stage's cursor. */
static double max_cursor(const struct fast *x)
{
    double h = 0;
    for (int s = 0; s < x->in->p; s++)
        h = x->cursor[s] > h ? x->cursor[s] : h;
    return h;
}

/* Whether S_q = S_{q-c} + d in every component (each stage's last F and B
 * of the level, those it runs; the cursor is the last pass's finish plus a
 * blocking send: the same function of it), d > 0 the same for all; lo, hi:
 * the least of S_{q-c}, the greatest of S_q (cursors included). fx, bx:
 * where each stage's last F and B of level q are; the same items c levels
 * earlier are c / v entries before them (v = 1: c micro-batches back;
 * interleaved: c is whole groups, so the same chunk, c / (p v) groups of p
 * micro-batches back). */
static bool period_of(const struct fast *x, const struct levels *L, const size_t *fx,
                      const size_t *bx, int c, double *d, double *lo, double *hi)
{
    const int p = x->in->p;
    const size_t back = (size_t)(c / x->in->v);
    const double *F = x->F, *B = x->B;
    *d = L->fwd ? F[fx[0]] - F[fx[0] - back] : B[bx[0]] - B[bx[0] - back];
    if (!(*d > 0)) return false;
    double l = INFINITY;
    for (int s = 0; s < p; s++) {
        if (L->fwd) {
            const double f0 = F[fx[s] - back];
            if (F[fx[s]] - f0 != *d) return false;
            l = f0 < l ? f0 : l; /* never NaN: fmin's value */
        }
        if (L->bwd) {
            const double b0 = B[bx[s] - back];
            if (B[bx[s]] - b0 != *d) return false;
            l = b0 < l ? b0 : l;
        }
    }
    *lo = l;
    *hi = max_cursor(x);
    return true;
}

/* Whether an addend of the solve (a pass's duration as op_dur gives it, or
 * the p2p time) is a tie for the spacing u (section 4, step 2). */
static bool any_tie(const struct lp_sched_in *in, double u)
{
    if (in->p > 1 && tie_at(in->p2p_s, u)) return true;
    for (int vs = 0; vs < in->p * in->v; vs++)
        if (tie_at(op_dur(in, false, vs), u) || tie_at(op_dur(in, true, vs), u)) return true;
    return false;
}

/* Move the state k = j c levels on from level q (shift = j d): the last c
 * levels' values (the next check's history; with fill_last every skipped
 * forward of stage p-1), the cursors and the counters. */
static void jump_levels(struct fast *x, const struct levels *L, int q, int c, int k, double d,
                        int j, int *lim)
{
    const struct lp_sched_in *in = x->in;
    const int p = in->p, v = in->v;
    const double shift = j * d; /* exact: a multiple of u below 2^E */
    for (int s = 0; s < p; s++) {
        struct walker *w = &x->wk[s];
        const int fi = L->fo[s] + q - 1, bi = L->bo[s] + q - 1;
        /* levels q+k-c+1 .. q+k: those of q-c+1 .. q, moved (interleaved:
         * k is a whole number of groups, the same chunks) */
        for (int i = 0; i < c; i++) {
            if (L->fwd)
                x->F[item_at(in, s, fi - i + k, false)] =
                    x->F[item_at(in, s, fi - i, false)] + shift;
            if (L->bwd)
                x->B[item_at(in, s, bi - i + k, true)] = x->B[item_at(in, s, bi - i, true)] + shift;
        }
        /* forward item fi + 1 + t, t < k - c: that of level q - c + 1 +
         * (t mod c), moved t / c + 1 periods (the same exact shift) */
        if (L->fill_last && L->fwd && s == p - 1)
            for (int t = 0; t < k - c; t++)
                x->F[item_at(in, s, fi + 1 + t, false)] =
                    x->F[item_at(in, s, fi + 1 - c + t % c, false)] + (t / c + 1) * d;
        x->cursor[s] += shift;
        w->j += (L->fwd + L->bwd) * k;
        if (L->fwd) seq_at(&w->f, fi + 1 + k, p, v);
        if (L->bwd) seq_at(&w->b, bi + 1 + k, p, v);
        lim[s] = w->j;
    }
    x->done += (long)(L->fwd + L->bwd) * k * p;
    x->sim->sched_ops_skipped += (uint64_t)(L->fwd + L->bwd) * (uint64_t)k * (uint64_t)p;
}

/* Step the worklist level by level up to L->last, extrapolating periodic
 * stretches (the comment above; docs/simulator.md section 4). False when a
 * level was not a closed cut (the caller's worklist then finishes the
 * solve). */
static bool steady_levels(struct fast *x, const struct levels *L)
{
    const struct lp_sched_in *in = x->in;
    const int p = in->p, last = L->last;
    int lim[1024];
    for (int s = 0; s < p; s++)
        lim[s] = level_ops(L, s, 0);
    run_list(x, lim);
    int q = 0, known = 1; /* levels >= known have their S in F and B */
    while (q < last) {
        /* stride levels at a time: a check every stride-th level (a regime,
         * once periodic, stays so; the search costs up to cmax checks) */
        const int to = q + L->stride < last ? q + L->stride : last;
        bool cut = true;
        for (int s = 0; s < p; s++) {
            cut = cut && x->wk[s].j == lim[s];
            lim[s] = level_ops(L, s, to);
        }
        if (!cut) return false; /* not a closed cut */
        run_list(x, lim);
        q = to;
        bool cut_q = true;
        for (int s = 0; s < p; s++)
            cut_q = cut_q && x->wk[s].j == lim[s];
        if (!cut_q) return false;
        if (q >= last) break;
        /* S_q against S_{q-c}, the smallest period c that fits, not near
         * the end */
        if (last - q < L->margin) continue;
        /* S_{q-c} <= S_q: if S_q straddles two binades, so does any
         * S_{q-c} .. S_q (no period is looked for) */
        size_t fx[1024], bx[1024];
        double lq = INFINITY;
        for (int s = 0; s < p; s++) {
            if (L->fwd) {
                fx[s] = item_at(in, s, L->fo[s] + q - 1, false);
                lq = x->F[fx[s]] < lq ? x->F[fx[s]] : lq;
            }
            if (L->bwd) {
                bx[s] = item_at(in, s, L->bo[s] + q - 1, true);
                lq = x->B[bx[s]] < lq ? x->B[bx[s]] : lq;
            }
        }
        int el, eh;
        (void)frexp(lq, &el);
        (void)frexp(max_cursor(x), &eh);
        if (!(lq > 0) || el != eh) continue;
        int c = L->step;
        double d = 0, lo = 0, hi = 0;
        for (; c <= L->cmax && q - c >= known; c += L->step)
            if (period_of(x, L, fx, bx, c, &d, &lo, &hi)) break;
        if (c > L->cmax || q - c < known || !(lo > 0)) continue;
        int e;
        (void)frexp(lo, &e); /* lo in [2^(e-1), 2^e) */
        const double top = ldexp(1.0, e), u = ldexp(1.0, e - 53);
        if (!(hi < top)) continue; /* S_{q-c} .. S_q straddle two binades */
        if (any_tie(in, u)) continue;
        int j = (last - q) / c; /* periods */
        const double room = floor((top - hi) / d);
        if (room < j) j = (int)room;
        while (j > 0 && !(hi + j * d < top))
            j--;
        if (j < 1) continue;
        const int k = j * c; /* levels */
        jump_levels(x, L, q, c, k, d, j, lim);
        q += k;
        known = q - c + 1;
    }
    return true;
}

/* 1F1B (v = 1) and interleaved 1F1B (v > 1): the periodic regime of the
 * pairs, extrapolated (the comment above; docs/simulator.md section 4). */
static bool steady_pairs(struct fast *x)
{
    const struct lp_sched_in *in = x->in;
    const int p = in->p, v = in->v, m = in->m, pv = p * v, mv = m * v;
    if (in->kind == LP_SCHED_1F1B) {
        if (v != 1 || m < p + 2) return false;
    } else if (in->kind != LP_SCHED_INTERLEAVED || v < 2 || p < 2 || m % p != 0) {
        return false; /* item() maps whole groups of p micro-batches */
    }
    struct levels L;
    /* interleaved: the cut is skewed by one pair per stage (stage 0's
     * chunk c > 0 forwards read stage p-1's forwards p items back, stage
     * p-1's backwards stage 0's); a level's map depends on the chunks of
     * its items, so periods are whole groups of pv items */
    const int sk = v > 1;
    L.fwd = L.bwd = 1;
    L.fill_last = false;
    L.step = v > 1 ? pv : 1;
    for (int s = 0; s < p; s++) {
        L.fo[s] = x->wk[s].w + sk * s;
        L.bo[s] = sk * s;
    }
    L.last = mv - x->wk[0].w; /* the level after stage 0's last steady pair */
    if (L.last < 3) return false;
    /* periods of up to 2p + 2 levels are looked for (uniform stages with a
     * p2p time repeat every p levels); interleaved: two groups */
    L.cmax = v > 1 ? 2 * pv : 2 * p + 2;
    /* no check within `margin` levels of the end (the jump would be short);
     * interleaved regimes have period one group (pv levels) in
     * test_sched_fast's cases: a margin of two groups */
    L.margin = v > 1 ? 2 * L.step : 2 * L.cmax;
    L.stride = 1 + p / 8;
    /* a jump needs q - c >= 1 and last - q >= margin: stepping level by
     * level would only cost */
    if (L.last < L.margin + L.step + 1) return false;
    steady_levels(x, &L);
    run_list(x, NULL);
    return true;
}

/* GPipe (v = 1): every forward, then every backward, each phase a line of
 * stages with one pass per level (docs/simulator.md section 4). */
static bool steady_gpipe(struct fast *x)
{
    const struct lp_sched_in *in = x->in;
    const int p = in->p, m = in->m;
    if (in->kind != LP_SCHED_GPIPE || in->v != 1) return false;
    struct levels L;
    L.fwd = 1;
    L.bwd = 0;
    L.fill_last = true; /* stage p-1's backwards read its forwards */
    L.step = 1;
    L.cmax = 2 * p + 2;
    L.margin = 2 * L.cmax;
    L.stride = 1 + p / 8;
    L.last = m;
    if (L.last < L.margin + L.step + 1) return false;
    for (int s = 0; s < p; s++)
        L.fo[s] = L.bo[s] = 0;
    if (steady_levels(x, &L)) {
        /* the backwards: every stage past its m forwards. Stage p-1's
         * backward reads its own forward, finished before its cursor, so
         * its start is the cursor: the map is a max-plus map of S_q. */
        L.fwd = 0;
        L.bwd = 1;
        L.fill_last = false;
        for (int s = 0; s < p; s++)
            L.fo[s] = m;
        steady_levels(x, &L);
    }
    run_list(x, NULL);
    return true;
}

/* zb: one stage's next action, as the reference's scan decides it. */
struct zb_stage {
    int next, wu, wpend, wdone;
    double t;
    double when; /* < 0: nothing it can do until another stage acts */
    bool w;      /* its next action is a pending W */
};

static void zb_when(const struct lp_sched_in *in, const double *F, const double *B, int s,
                    struct zb_stage *z)
{
    const int m = in->m;
    z->when = -1.0;
    z->w = false;
    if (z->next < 2 * m) {
        struct op o; /* v = 1: no division */
        stage_op(in, z->wu, z->next, &o);
        const double r = zb_ready(in, F, B, s, o.bwd, o.mb);
        if (r >= 0.0 && r <= z->t) {
            z->when = z->t;
        } else if (z->wpend > 0) {
            z->when = z->t;
            z->w = true;
        } else if (r >= 0.0) {
            z->when = r;
        }
    } else if (z->wpend > 0) {
        z->when = z->t;
        z->w = true;
    }
}

/* A node of the tournament tree: the stage that acts first below it, keyed
 * (when, tie): earlier first; at the same time a forward/backward before a W,
 * then the lower stage (the reference's scan order): tie = (W << 11) | stage.
 * A stage with nothing to do has when = +inf. */
struct zb_node {
    double when;
    int tie;
};

/* Node i of the tree from its two children: (when, tie) lexicographically,
 * the left child on a full tie. A branch, not a select by index: a select
 * makes each level's load wait for the comparison below it, and measured
 * 1.3-3x slower (issue #20, stop 30; the branches are well predicted). */
static LP_INLINE void zb_pick(struct zb_node *tree, int i)
{
    const struct zb_node *l = &tree[2 * i], *r = &tree[2 * i + 1];
    tree[i] = l->when < r->when || (l->when == r->when && l->tie < r->tie) ? *l : *r;
}

static LP_INLINE void zb_leaf(struct zb_node *tree, int leaves, const struct zb_stage *z, int s)
{
    struct zb_node *x = &tree[leaves + s];
    x->when = z[s].when >= 0.0 ? z[s].when : INFINITY;
    x->tie = (z[s].w ? 1 << 11 : 0) | s;
}

static void zb_update(struct zb_node *tree, int leaves, const struct zb_stage *z, int s)
{
    zb_leaf(tree, leaves, z, s);
    for (int i = (leaves + s) / 2; i >= 1; i /= 2)
        zb_pick(tree, i);
}

/* Every stage's leaf, then every node once (after a jump moved them all):
 * O(leaves) instead of O(p log p) updates; the same tree, since each node is
 * a function of its children only. */
static void zb_rebuild(struct zb_node *tree, int leaves, const struct zb_stage *z, int p)
{
    for (int s = 0; s < p; s++)
        zb_leaf(tree, leaves, z, s);
    for (int i = leaves - 1; i >= 1; i--)
        zb_pick(tree, i);
}

/* zb's periodic regime, extrapolated exactly: the argument of steady_pairs
 * (docs/simulator.md section 4) on zb's event loop. The state after an event
 * is every stage's counters and free time and the F/B finish times still to
 * be read ("live": stage s's F of micro-batches stage s+1 has not started,
 * or the last stage's own B has not; its B of those stage s-1 has not); the
 * loop's choices compare times only, so a state shifted by d in every time
 * evolves shifted by d (exactly in one binade without ties). Snapshots are
 * taken after every B of stage 0 and the last ZB_RING kept (issue #20, stop
 * 30; stop 29 kept one). When, since the one taken j snapshots ago, every
 * stage did j more F and j more B passes (all steady), its Ws keep the
 * pending count the same or only grow it while some were pending all along,
 * and every time moved by the same d, the state is moved k periods of j
 * pairs on. Most zb pipelines of a sweep that found no period of one pair
 * repeat over several (stages' W placements alternate). */
#define ZB_RING 8
/* snapshots without a jump before zb_events hands over to zb_list (stop
 * 31's solver: sched_stop31) */
#define ZB_QUIET 16
struct zb_snap {
    double tau; /* the start of the event after which it was taken */
    int next[1024], wdone[1024], wpend[1024];
    int minw[1024]; /* the fewest pending Ws each stage had until the next snapshot */
    double t[1024];
};

/* The last n (<= ZB_RING) snapshots; e[(head - j) mod ZB_RING] is the one
 * taken j - 1 snapshots before the newest (j = 1: the newest). */
struct lp_zb_ring {
    int n, head;
    struct zb_snap e[ZB_RING];
};

static int imin(int a, int b)
{
    return a < b ? a : b;
}

static struct zb_snap *zb_back(struct lp_zb_ring *rg, int j)
{
    return &rg->e[(rg->head - j + ZB_RING) % ZB_RING];
}

void lp_sched_free(struct lp_sim *sim)
{
    free(sim->zb_ring);
    sim->zb_ring = NULL;
}

/* F and B passes among a stage's first `next` operations (v = 1) */
static int zb_fcount(int next, int wu, int m)
{
    if (next <= wu) return next;
    if (next <= 2 * m - wu) return wu + (next - wu + 1) / 2;
    return m;
}

static int zb_bcount(int next, int wu, int m)
{
    return next - zb_fcount(next, wu, m);
}

/* The live range [lo, hi) of stage s's F (bwd false) or B finish times. */
static void zb_live(const struct zb_stage *z, int p, int m, int s, bool bwd, int *lo, int *hi)
{
    if (!bwd) {
        *hi = zb_fcount(z[s].next, z[s].wu, m);
        *lo =
            s < p - 1 ? zb_fcount(z[s + 1].next, z[s + 1].wu, m) : zb_bcount(z[s].next, z[s].wu, m);
    } else {
        *hi = zb_bcount(z[s].next, z[s].wu, m);
        *lo = s > 0 ? zb_bcount(z[s - 1].next, z[s - 1].wu, m) : *hi;
    }
    if (*lo > *hi) *lo = *hi;
}

/* Periods of j pairs to jump against the snapshot taken j - 1 before the
 * newest, with the shift d; 0: not periodic yet; -1: no period of j or more
 * pairs can be jumped now (an older snapshot's values reach no higher and
 * no fewer pairs are left, so a binade, tie or room test failed here fails
 * for it too). Ws: j more (the pending
 * count the same), or fewer while at least one was pending after every
 * event since that snapshot: the W-or-wait choice tests only whether one is
 * pending, so with j - dw more pending every period it makes the same
 * choices (fewer than none pending, more than j done, drains them: no). */
static int zb_period(const struct lp_sched_in *in, const double *F, const double *B,
                     const struct zb_stage *z, struct lp_zb_ring *rg, int j, double *d)
{
    const int p = in->p, m = in->m;
    const struct zb_snap *sn = zb_back(rg, j);
    *d = z[0].t - sn->t[0];
    if (!(*d > 0)) return 0;
    /* the binade test below, first on two of its values (lo <= tau, hi >=
     * stage 0's time): most of the older snapshots fail it, before the
     * O(p + live) comparisons */
    int e;
    if (!(sn->tau > 0)) return -1;
    (void)frexp(sn->tau, &e);
    if (!(z[0].t < ldexp(1.0, e))) return -1;
    double lo = sn->tau, hi = 0;
    int k = m;
    /* the last stage first: in a pipeline's transient it settles last, so
     * a check that fails fails there soonest (the order changes nothing else) */
    for (int s = p - 1; s >= 0; s--) {
        const int dw = z[s].wdone - sn->wdone[s];
        if (z[s].next != sn->next[s] + 2 * j || sn->next[s] < z[s].wu || z[s].t - sn->t[s] != *d ||
            dw < 0 || dw > j)
            return 0;
        if (dw < j) {
            int minw = sn->minw[s];
            for (int i = 1; i < j; i++)
                minw = imin(minw, zb_back(rg, i)->minw[s]);
            if (minw < 1) return 0;
        }
        lo = fmin(lo, sn->t[s]);
        hi = fmax(hi, z[s].t);
        const int room = (2 * m - z[s].wu - z[s].next) / (2 * j); /* whole periods left */
        if (room < k) k = room;
    }
    if (k < 1) return -1;
    for (int s = 0; s < p; s++)
        for (int bwd = 0; bwd < 2; bwd++) {
            const double *X = bwd ? B : F;
            int a, b;
            zb_live(z, p, m, s, bwd, &a, &b);
            for (int mb = a; mb < b; mb++) {
                if (mb < j) return 0;
                const double x1 = X[at(s, m, mb)], x0 = X[at(s, m, mb - j)];
                if (x1 - x0 != *d) return 0;
                lo = fmin(lo, x0);
                hi = fmax(hi, x1);
            }
        }
    if (!(lo > 0)) return -1;
    (void)frexp(lo, &e);
    const double top = ldexp(1.0, e), u = ldexp(1.0, e - 53);
    if (!(hi < top)) return -1;
    if (p > 1 && tie_at(in->p2p_s, u)) return -1;
    for (int s = 0; s < p; s++)
        if (tie_at(zb_dur(in, s, false), u) || tie_at(zb_dur(in, s, true), u) ||
            tie_at(in->w[s], u))
            return -1;
    const double room = floor((top - hi) / *d);
    if (room < k) k = (int)room;
    while (k > 0 && !(hi + k * *d < top))
        k--;
    return k > 0 ? k : -1;
}

/* A new newest snapshot (the oldest dropped when the ring is full). */
static void zb_snapshot(struct lp_zb_ring *rg, const struct zb_stage *z, int p, double tau)
{
    rg->head = (rg->head + 1) % ZB_RING;
    if (rg->n < ZB_RING) rg->n++;
    struct zb_snap *sn = zb_back(rg, 1);
    sn->tau = tau;
    for (int s = 0; s < p; s++) {
        sn->next[s] = z[s].next;
        sn->wdone[s] = z[s].wdone;
        sn->wpend[s] = z[s].wpend;
        sn->minw[s] = z[s].wpend;
        sn->t[s] = z[s].t;
    }
}

/* Move the state k periods of j pairs on (against the snapshot j - 1
 * before the newest): the live values (highest first: a target may be a
 * source of a lower one), the counters and the times; returns the events
 * skipped. */
static long zb_jump(const struct lp_sched_in *in, double *F, double *B, struct zb_stage *z,
                    const struct zb_snap *sn, int j, int k, double d)
{
    const int p = in->p, m = in->m;
    const double shift = k * d;
    for (int s = 0; s < p; s++)
        for (int bwd = 0; bwd < 2; bwd++) {
            double *X = bwd ? B : F;
            int a, b;
            zb_live(z, p, m, s, bwd, &a, &b);
            for (int mb = b - 1; mb >= a; mb--)
                X[at(s, m, mb + k * j)] = X[at(s, m, mb)] + shift;
        }
    long events = 0;
    for (int s = 0; s < p; s++) {
        const int dw = z[s].wdone - sn->wdone[s];
        z[s].next += 2 * k * j;
        z[s].wdone += k * dw;
        z[s].wpend += k * (j - dw);
        z[s].t += shift;
        events += (long)k * (2 * j + dw);
    }
    return events;
}

/* zb by a worklist (issue #20, stop 31): the remaining passes of every stage
 * from state z (the start, or the event loop's state after any event), each
 * stage run as far as its inputs are known, as advance() runs 1F1B, with
 * the Ws its W-or-wait choice runs before each pass and the rest after its
 * last. Exact (docs/simulator.md section 4, "zb without the event order"):
 * the event loop asks only whether a pass's input has arrived by the stage's
 * time t; when it has not been computed there, its producer starts at or
 * after t (events go in time order, a pass before a W at equal times), so
 * it arrives after t if the producer's finish is above its start; here the
 * input's value is known and compared with t: the same answer, the same
 * choices, the same floating-point sums in the same order per stage.
 * Returns 0, or 1 when a pass did not end after it started (a zero or
 * absorbed duration, or a negative p2p time: the argument does not hold and
 * the caller solves by the event loop), -2 if a stage could not finish (a
 * dependency cycle: cannot happen, the passes' graph is 1F1B's). */
static int zb_list(const struct lp_sched_in *in, struct lp_sched_out *out, double *F, double *B,
                   struct zb_stage *z)
{
    const int p = in->p, m = in->m;
    if (!(in->p2p_s >= 0.0)) return 1;
    const bool busy = !in->ends_only, blocking = in->p2p_blocking && p > 1;
    /* zb_dur's durations, once per solve (issue #20 stop 31: once per
     * visit of a stage before) */
    double zdf[1024], zdb[1024];
    for (int s = 0; s < p; s++) {
        zdf[s] = zb_dur(in, s, false);
        zdb[s] = zb_dur(in, s, true);
    }
    struct stages wl;
    stages_all(&wl, p);
    while (wl.top > 0) {
        const int s = stages_pop(&wl);
        struct zb_stage *q = &z[s];
        /* zb_ready's reads and zb_dur's durations, for this stage */
        const double w = in->w[s], df = zdf[s], db = zdb[s];
        const bool first = s == 0, last = s == p - 1;
        const double *Fin = first ? NULL : F + at(s - 1, m, 0),
                     *Bin = last ? NULL : B + at(s + 1, m, 0);
        double *Fs = F + at(s, m, 0), *Bs = B + at(s, m, 0);
        int nf = zb_fcount(q->next, q->wu, m), nb = q->next - nf;
        while (q->next < 2 * m) {
            /* stage_op for v = 1: warm-up forwards, then F and B
             * alternately, then the drain's backwards */
            const bool bwd = q->next >= q->wu && (nf == m || ((q->next - q->wu) & 1));
            double r;
            if (!bwd)
                r = first ? 0.0 : Fin[nf];
            else
                r = last ? Fs[nb] : Bin[nb];
            if (r < 0.0) break; /* its input's producer has not run */
            if (bwd ? !last : !first) r = r + in->p2p_s;
            while (r > q->t && q->wpend > 0) { /* a W rather than wait */
                q->t = q->t + w;
                q->wdone++;
                q->wpend--;
                if (busy) out->stage_busy_s[s] += w;
            }
            const double start = r > q->t ? r : q->t, dur = bwd ? db : df;
            const double fin = start + dur;
            if (!(fin > start)) return 1;
            q->t = fin;
            if (busy) out->stage_busy_s[s] += dur;
            q->next++;
            if (bwd) {
                Bs[nb++] = fin;
                q->wpend++;
                if (!first) {
                    if (blocking) q->t += in->p2p_s;
                    wake(&wl, s - 1);
                }
            } else {
                Fs[nf++] = fin;
                if (!last) {
                    if (blocking) q->t += in->p2p_s;
                    wake(&wl, s + 1);
                }
            }
        }
        if (q->next == 2 * m)
            for (; q->wpend > 0; q->wpend--) { /* its last Ws, back to back */
                q->t = q->t + w;
                q->wdone++;
                if (busy) out->stage_busy_s[s] += w;
            }
    }
    for (int s = 0; s < p; s++)
        if (z[s].next < 2 * m) return -2;
    return 0;
}

static int zb_events(struct lp_sim *sim, const struct lp_sched_in *in, struct lp_sched_out *out,
                     double *F, double *B, struct lp_event *ev, int cap, int *nev, bool list)
{
    const int p = in->p, m = in->m;
    if (p > 1024 || in->v != 1) return -1;
    for (size_t i = 0; i < (size_t)p * (size_t)m; i++)
        F[i] = B[i] = -1.0;
    struct zb_stage z[1024];
    int leaves = 1;
    while (leaves < p)
        leaves *= 2;
    struct zb_node tree[2048];
    for (int i = 0; i < 2 * leaves; i++)
        tree[i] = (struct zb_node){.when = INFINITY, .tie = i};
    for (int s = 0; s < p; s++) {
        z[s] = (struct zb_stage){.wu = warmup(in, s)};
        out->stage_busy_s[s] = 0.0;
        zb_when(in, F, B, s, &z[s]);
    }
    zb_rebuild(tree, leaves, z, p);
    long remaining = (long)p * 3 * m;
    sim->sched_ops_total += (uint64_t)remaining;
    int ne = 0;
    /* the worklist from the start: every pipeline the worklist may solve
     * (issue #20 stop 31's follow-up: it beat the event loop and its ring of
     * snapshots on every measured list and shape, README "Speed"); stop 31's
     * solver (bench_sim's column) looks for periods first */
    const bool from_start = list && !sim->sched_stop31;
    const bool steady = in->ends_only && !ev && !sim->sched_every_op && m >= p + 2 && !from_start;
    if (steady && !sim->zb_ring) sim->zb_ring = malloc(sizeof(*sim->zb_ring));
    struct lp_zb_ring *rg = steady ? sim->zb_ring : NULL; /* NULL (no memory): every op */
    /* stop 28/29's shortcut (bench_sim's baseline) looks one snapshot back */
    const int ring = sim->sched_stop28 || sim->sched_stop29 ? 1 : ZB_RING;
    if (rg) { /* not the snapshots: each is written before it is read */
        rg->n = 0;
        rg->head = 0;
    }
    /* stop 31: the worklist from the start when no period is looked for,
     * else after ZB_QUIET snapshots without a jump (a heuristic: only the
     * speed depends on it) */
    bool handed = list && !rg;
    int quiet = 0; /* snapshots since the last jump */
    while (remaining > 0 && !handed) {
        if (!(tree[1].when < INFINITY)) return -2; /* a dependency cycle: cannot happen */
        const int s = tree[1].tie & 2047;
        struct zb_stage *q = &z[s];
        const double start = q->when;
        double dur;
        enum lp_event_kind kind;
        int mb, fed = -1;
        if (q->w) {
            dur = in->w[s];
            kind = LP_EV_WGRAD;
            mb = q->wdone++;
            q->wpend--;
        } else {
            struct op o;
            stage_op(in, q->wu, q->next, &o);
            mb = o.mb;
            dur = zb_pass(in, F, B, s, &o, start);
            kind = o.bwd ? LP_EV_BWD : LP_EV_FWD;
            if (o.bwd) {
                q->wpend++;
                fed = s - 1;
            } else {
                fed = s + 1 < p ? s + 1 : -1;
            }
            q->next++;
        }
        q->t = start + dur;
        const bool sends = !q->w && (kind == LP_EV_BWD ? s > 0 : s < p - 1);
        if (in->p2p_blocking && sends && p > 1) q->t += in->p2p_s;
        if (!in->ends_only) out->stage_busy_s[s] += dur;
        if (ev) record(ev, cap, &ne, s, mb, 0, kind, start, dur, sends && p > 1 ? in->p2p_s : 0.0);
        remaining--;
        zb_when(in, F, B, s, q);
        zb_update(tree, leaves, z, s);
        if (fed >= 0) { /* its next action changes only if it waited for this input */
            const struct zb_stage was = z[fed];
            zb_when(in, F, B, fed, &z[fed]);
            if (z[fed].when != was.when || z[fed].w != was.w) zb_update(tree, leaves, z, fed);
        }
        if (rg && rg->n > 0) {
            struct zb_snap *sn = zb_back(rg, 1);
            if (q->wpend < sn->minw[s]) sn->minw[s] = q->wpend;
        }
        if (rg && s == 0 && kind == LP_EV_BWD) {
            double d = 0;
            /* the shortest period found; longer ones looked for only once
             * per ZB_RING snapshots (a period that lasts is found at most
             * that many pairs late: each failed look costs O(p)) */
            const int look = rg->head == 0 ? imin(rg->n, ring) : imin(rg->n, 1);
            int k = 0, j = 0;
            while (k == 0 && j < look)
                k = zb_period(in, F, B, z, rg, ++j, &d);
            if (k < 0) k = 0;
            if (k > 0) {
                const long skip = zb_jump(in, F, B, z, zb_back(rg, j), j, k, d);
                remaining -= skip;
                sim->sched_ops_skipped += (uint64_t)skip;
                for (int r = 0; r < p; r++)
                    zb_when(in, F, B, r, &z[r]);
                zb_rebuild(tree, leaves, z, p);
            }
            if (k > 0) rg->n = 0; /* the skipped events' snapshots were never taken */
            zb_snapshot(rg, z, p, k > 0 ? start + k * d : start);
            quiet = k > 0 ? 0 : quiet + 1;
            handed = list && quiet >= ZB_QUIET;
        }
    }
    if (handed && remaining > 0) {
        const int rc = zb_list(in, out, F, B, z);
        if (rc != 0) return rc;
        sim->sched_ops_listed += (uint64_t)remaining;
    }
    double t[1024];
    for (int s = 0; s < p; s++)
        t[s] = z[s].t;
    finish(out, t, p, ne, nev);
    return 0;
}

/* zb: the worklist (zb_list) from the start where it may: not for a trace
 * (its events in time order) nor for bench_sim's solvers of stops 28-31; a
 * pipeline zb_list refuses (a pass that does not end after it starts) is
 * solved again by the event loop, with its ring of snapshots. */
static int zb_fast(struct lp_sim *sim, const struct lp_sched_in *in, struct lp_sched_out *out,
                   double *F, double *B, struct lp_event *ev, int cap, int *nev)
{
    const uint64_t total = sim->sched_ops_total, skipped = sim->sched_ops_skipped;
    const bool list = !ev && !sim->sched_stop28 && !sim->sched_stop29 && !sim->sched_stop30;
    const int rc = zb_events(sim, in, out, F, B, ev, cap, nev, list);
    if (rc != 1) return rc;
    sim->sched_ops_total = total;
    sim->sched_ops_skipped = skipped;
    return zb_events(sim, in, out, F, B, ev, cap, nev, false);
}
