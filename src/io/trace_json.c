/* The simulated timeline as Chrome trace-event JSON (--trace; opens in
 * ui.perfetto.dev and chrome://tracing). Trace Event Format: "X" complete
 * events (ts, dur in microseconds), "C" counters, "M" metadata naming the
 * processes (one per pipeline stage) and threads (0 compute stream,
 * 1 p2p, 2 data-parallel synchronisation, 3 data-parallel collectives).
 * docs/simulator.md, "Timeline".
 *
 * The events are the simulator's own (lp_sim_trace): the schedule's passes,
 * p2p transfers, DP synchronisation, the DP collectives (buckets, FSDP
 * units: sim_dp.c's accounting) and optimizer steps. The operator level
 * splits each forward and backward pass into its layers and each layer
 * into the operator classes of the result's per-layer breakdown
 * (layer_fwd_s / layer_bwd_s: the same numbers as simulate --json's
 * layer_ops_s), after the pass's share of the ZeRO-3 / FSDP collectives
 * (zero3_fwd_s / zero3_bwd_s); what a pass holds beyond its layers
 * (embedding, logits and loss, recomputation in a backward pass) is one
 * more span.
 * Written as a stream: an operator-level trace of a large pipeline has
 * hundreds of thousands of events. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmplan/arch.h"
#include "llmplan/io.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static const char *const detail_names[LP_TRACE_COUNT] = {"stage", "microbatch", "op"};

const char *lp_trace_detail_name(enum lp_trace_detail d)
{
    return d >= 0 && d < LP_TRACE_COUNT ? detail_names[d] : "?";
}

int lp_trace_detail_parse(const char *s, enum lp_trace_detail *out)
{
    for (int i = 0; i < LP_TRACE_COUNT; i++)
        if (!strcmp(s, detail_names[i])) {
            *out = (enum lp_trace_detail)i;
            return LP_OK;
        }
    return LP_EINVAL;
}

static const char *event_name(enum lp_event_kind k)
{
    switch (k) {
    case LP_EV_FWD:
        return "F";
    case LP_EV_BWD:
        return "B";
    case LP_EV_RECOMPUTE:
        return "R";
    case LP_EV_P2P:
        return "p2p";
    case LP_EV_TP:
        return "tp";
    case LP_EV_DP:
        return "dp-sync";
    case LP_EV_OPT:
        return "optimizer";
    case LP_EV_WGRAD:
        return "W";
    case LP_EV_DP_COLL:
        return "dp";
    }
    return "?";
}

/* A data-parallel collective's name: what it is and which bucket / unit */
static void dp_coll_name(const struct lp_event *e, int layers, char *buf, size_t len)
{
    switch (e->coll) {
    case LP_DPC_ALLREDUCE:
        snprintf(buf, len, "all-reduce bucket %d/%d", e->unit + 1, e->units);
        return;
    case LP_DPC_REDUCESCATTER:
        snprintf(buf, len, "reduce-scatter bucket %d/%d", e->unit + 1, e->units);
        return;
    case LP_DPC_PARAM_GATHER:
        snprintf(buf, len, "param all-gather (%d buckets)", e->units);
        return;
    case LP_DPC_PARAM_GATHER_HID:
        snprintf(buf, len, "param all-gather, hidden behind the forward (%d buckets)", e->units);
        return;
    case LP_DPC_UNIT_GATHER:
    case LP_DPC_UNIT_REDUCE:
        if (e->unit >= layers)
            snprintf(buf, len, "%s root (embedding, head)",
                     e->coll == LP_DPC_UNIT_GATHER ? "all-gather" : "reduce-scatter");
        else
            snprintf(buf, len, "%s block %d",
                     e->coll == LP_DPC_UNIT_GATHER ? "all-gather" : "reduce-scatter", e->unit);
        return;
    case LP_DPC_EMB_SYNC:
        snprintf(buf, len, "embedding all-reduce (first and last stage)");
        return;
    case LP_DPC_CONTENTION:
        snprintf(buf, len, "compute slowed by NCCL's SMs");
        return;
    case LP_DPC_COPY_BACK:
        snprintf(buf, len, "copy buckets back to the gradients");
        return;
    case LP_DPC_COUNT:
        break;
    }
    snprintf(buf, len, "?");
}

static bool is_pass(enum lp_event_kind k)
{
    return k == LP_EV_FWD || k == LP_EV_BWD || k == LP_EV_RECOMPUTE || k == LP_EV_WGRAD;
}

struct out {
    FILE *f;
    bool first;
};

static void sep(struct out *o)
{
    fputs(o->first ? "\n" : ",\n", o->f);
    o->first = false;
}

static void meta(struct out *o, const char *what, int pid, int tid, const char *key, const char *v,
                 int num)
{
    sep(o);
    fprintf(o->f, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{", what, pid, tid);
    if (v)
        fprintf(o->f, "\"%s\":\"%s\"}}", key, v);
    else
        fprintf(o->f, "\"%s\":%d}}", key, num);
}

static void span(struct out *o, const char *name, const char *cat, double start_s, double dur_s,
                 int pid, int tid, const char *args)
{
    sep(o);
    fprintf(o->f,
            "{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.6f,\"dur\":%.6f,\"pid\":%d,"
            "\"tid\":%d,\"args\":{%s}}",
            name, cat, start_s * 1e6, dur_s * 1e6, pid, tid, args);
}

/* The layers of stage st's chunk c: [first[v], first[v+1]) with v = c*pp + st
 * (Megatron's interleaved assignment of virtual stages to ranks). */
static int chunk_layers(const int *first, int pp, int st, int c, int *lo)
{
    const int v = c * pp + st;
    *lo = first[v];
    return first[v + 1] - first[v];
}

/* Whether an order's runs add up to a layer's class times (else the order
 * was cut short: class order). skip_w: without the weight gradients. */
static bool order_holds(const struct lp_op_seg *s, int n, const double *cls, bool skip_w)
{
    double sum[LP_OPC_COUNT] = {0};
    for (int i = 0; i < n; i++)
        if (!(skip_w && s[i].wgrad)) sum[s[i].cls] += s[i].t;
    for (int k = 0; k < LP_OPC_COUNT; k++)
        if (!(fabs(sum[k] - cls[k]) <= 1e-9 * cls[k] + 1e-15)) return false;
    return true;
}

/* A pass's operator spans: per layer, its kernels in order (`seg`, n of
 * them; skip_w: without the weight-gradient runs a zb W pass takes), or
 * without an order the classes of the per-layer breakdown in sequence;
 * then what the pass holds beyond its layers. Every child lies inside the
 * pass (the last one is cut at the pass's end should rounding overshoot). */
static void op_spans(struct out *o, const struct lp_event *e, const double *cls,
                     const struct lp_op_seg *seg, int nseg, bool skip_w, int lo, int nl,
                     double zero3_s)
{
    double at = e->start_s;
    const double end = e->start_s + e->dur_s;
    char args[96];
    if (zero3_s > 0) { /* the chunk's parameter gathers (sim.c adds them to its passes) */
        snprintf(args, sizeof(args), "\"micro_batch\":%d", e->micro);
        const double d = fmin(zero3_s, e->dur_s);
        span(o, e->kind == LP_EV_FWD ? "zero3 gather" : "zero3 gather + reduce-scatter", "op", at,
             d, e->stage, 0, args);
        at += d;
    }
    for (int l = 0; l < nl && at < end; l++) {
        /* a backward (or W) pass runs its layers from the last */
        const int layer = e->kind == LP_EV_FWD ? lo + l : lo + nl - 1 - l;
        snprintf(args, sizeof(args), "\"layer\":%d,\"micro_batch\":%d", layer, e->micro);
        for (int i = 0; seg && i < nseg && at < end; i++) {
            double d = fmin(seg[i].t, end - at);
            if (!(d > 0) || (skip_w && seg[i].wgrad)) continue;
            char wargs[128];
            snprintf(wargs, sizeof(wargs), "%s,\"weight_gradient\":true", args);
            span(o, lp_op_class_name(seg[i].cls), "op", at, d, e->stage, 0,
                 seg[i].wgrad ? wargs : args);
            at += d;
        }
        for (int k = 0; !seg && k < LP_OPC_COUNT && at < end; k++) {
            double d = fmin(cls[k], end - at);
            if (!(d > 0)) continue;
            span(o, lp_op_class_name((enum lp_op_class)k), "op", at, d, e->stage, 0, args);
            at += d;
        }
    }
    if (end - at > 1e-12) {
        snprintf(args, sizeof(args), "\"micro_batch\":%d", e->micro);
        span(o,
             e->kind == LP_EV_FWD     ? "outside the layers (embedding, logits)"
             : e->kind == LP_EV_WGRAD ? "outside the layers (MTP modules)"
                                      : "outside the layers (embedding, logits, recomputation)",
             "op", at, end - at, e->stage, 0, args);
    }
}

/* Memory counter per stage: the model state of the result's memory (the
 * largest stage's: weights, gradients, optimizer state, temporary buffers)
 * and the activations in flight, which grow by one micro-batch chunk's at
 * each forward pass and shrink at each backward pass; one chunk's share is
 * the result's activation memory over the most chunks any stage holds at
 * once in this schedule. */
static void memory_track(struct out *o, const struct lp_run *run, const struct lp_result *res,
                         const struct lp_event *ev, int n)
{
    const int pp = run->par.pp;
    int *live = calloc((size_t)pp, sizeof(int)), *peak = calloc((size_t)pp, sizeof(int));
    int *order = malloc((size_t)(n ? n : 1) * sizeof(int));
    if (!live || !peak || !order) goto cleanup;
    /* passes in time order (a backward before a forward at the same time) */
    int m = 0;
    for (int i = 0; i < n; i++)
        if (ev[i].kind == LP_EV_FWD || ev[i].kind == LP_EV_BWD) order[m++] = i;
    for (int i = 1; i < m; i++) { /* insertion sort by the time of the change */
        int x = order[i], j = i - 1;
        double tx = ev[x].kind == LP_EV_FWD ? ev[x].start_s : ev[x].start_s + ev[x].dur_s;
        while (j >= 0) {
            const struct lp_event *y = &ev[order[j]];
            double ty = y->kind == LP_EV_FWD ? y->start_s : y->start_s + y->dur_s;
            if (ty < tx || (ty == tx && !(y->kind == LP_EV_FWD && ev[x].kind == LP_EV_BWD))) break;
            order[j + 1] = order[j];
            j--;
        }
        order[j + 1] = x;
    }
    int most = 0;
    for (int i = 0; i < m; i++) {
        const struct lp_event *e = &ev[order[i]];
        live[e->stage] += e->kind == LP_EV_FWD ? 1 : -1;
        if (live[e->stage] > peak[e->stage]) peak[e->stage] = live[e->stage];
        if (peak[e->stage] > most) most = peak[e->stage];
    }
    const struct lp_memory *mem = &res->memory;
    const double chunk = most > 0 ? mem->activations_bytes / most / GIB : 0.0;
    memset(live, 0, (size_t)pp * sizeof(int));
    for (int st = 0; st < pp; st++) {
        sep(o);
        fprintf(o->f,
                "{\"name\":\"memory GiB\",\"ph\":\"C\",\"ts\":0,\"pid\":%d,\"args\":{\"weights\":%."
                "6f,\"gradients\":%.6f,\"optimizer\":%.6f,\"temporary\":%.6f,\"activations\":0}}",
                st, mem->weights_bytes / GIB, mem->grads_bytes / GIB, mem->optimizer_bytes / GIB,
                mem->temp_bytes / GIB);
    }
    for (int i = 0; i < m; i++) {
        const struct lp_event *e = &ev[order[i]];
        live[e->stage] += e->kind == LP_EV_FWD ? 1 : -1;
        double t = e->kind == LP_EV_FWD ? e->start_s : e->start_s + e->dur_s;
        sep(o);
        fprintf(
            o->f,
            "{\"name\":\"memory GiB\",\"ph\":\"C\",\"ts\":%.6f,\"pid\":%d,\"args\":{\"weights\":%"
            ".6f,\"gradients\":%.6f,\"optimizer\":%.6f,\"temporary\":%.6f,\"activations\":%.6f}}",
            t * 1e6, e->stage, mem->weights_bytes / GIB, mem->grads_bytes / GIB,
            mem->optimizer_bytes / GIB, mem->temp_bytes / GIB, live[e->stage] * chunk);
    }
cleanup:
    free(live);
    free(peak);
    free(order);
}

int lp_trace_write(const char *path, const struct lp_run *run, const struct lp_result *res,
                   const struct lp_event *ev, int n, const struct lp_op_order *order,
                   enum lp_trace_detail detail, struct lp_err *err)
{
    if (!res->feasible) {
        char why[256];
        lp_result_reason(res, why, sizeof(why));
        LP_FAIL(err, LP_EINVAL, "%s: no timeline: the configuration is infeasible (%s)", path, why);
    }
    const int pp = run->par.pp, vp = run->par.vp;
    int first[LP_ARCH_MAX_VSTAGES + 1];
    if (lp_arch_split(&run->model, &run->par, first, LP_ARCH_MAX_VSTAGES + 1) != 0)
        LP_FAIL(err, LP_EINVAL, "%s: no layer split for pp %d x vp %d", path, pp, vp);
    /* a backward pass's layer: under zb without its weight gradients,
     * which the W pass computes (sim_schedule.c: B = b - w) */
    const bool zb = run->par.schedule == LP_SCHED_ZB;
    double bwd[LP_OPC_COUNT];
    for (int k = 0; k < LP_OPC_COUNT; k++)
        bwd[k] = res->layer_bwd_s[k] - (zb ? res->layer_wgrad_s[k] : 0.0);
    const bool ordered = order && order->n_fwd > 0 &&
                         order_holds(order->fwd, order->n_fwd, res->layer_fwd_s, false) &&
                         order_holds(order->bwd, order->n_bwd, bwd, zb);
    struct lp_atomic a;
    LP_TRY(err, lp_atomic_open(path, &a, err));
    struct out o = {.f = a.f, .first = true};
    fprintf(a.f,
            "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"model\":\"%s\",\"system\":\"%s\","
            "\"detail\":\"%s\",\"iteration_time_s\":%.17g},\"traceEvents\":[",
            run->model.name, run->system.name, lp_trace_detail_name(detail), res->iteration_time_s);
    for (int st = 0; st < pp; st++) {
        char name[128];
        int lo0, nl = 0;
        chunk_layers(first, pp, st, 0, &lo0);
        for (int c = 0; c < vp; c++) {
            int lo;
            nl += chunk_layers(first, pp, st, c, &lo);
        }
        snprintf(name, sizeof(name), "pipeline stage %d (%d layers%s)", st, nl,
                 vp > 1 ? ", interleaved" : "");
        meta(&o, "process_name", st, 0, "name", name, 0);
        meta(&o, "process_sort_index", st, 0, "sort_index", NULL, st);
        meta(&o, "thread_name", st, 0, "name", "compute stream", 0);
        meta(&o, "thread_name", st, 1, "name", "p2p stream", 0);
        meta(&o, "thread_name", st, 2, "name", "data-parallel stream (gradient reduction)", 0);
        if (detail != LP_TRACE_STAGE)
            meta(&o, "thread_name", st, 3, "name",
                 "data-parallel collectives (buckets, FSDP units)", 0);
    }
    if (detail == LP_TRACE_STAGE) {
        for (int st = 0; st < pp; st++) {
            double t0 = INFINITY, t1 = 0, busy = 0;
            for (int i = 0; i < n; i++)
                if (ev[i].stage == st && is_pass(ev[i].kind)) {
                    t0 = fmin(t0, ev[i].start_s);
                    t1 = fmax(t1, ev[i].start_s + ev[i].dur_s);
                    busy += ev[i].dur_s;
                }
            char args[96];
            snprintf(args, sizeof(args), "\"busy_s\":%.9g,\"idle_s\":%.9g", busy, t1 - t0 - busy);
            if (t1 > t0) span(&o, "passes", "stage", t0, t1 - t0, st, 0, args);
        }
    }
    for (int i = 0; i < n; i++) {
        const struct lp_event *e = &ev[i];
        if (detail == LP_TRACE_STAGE &&
            (is_pass(e->kind) || e->kind == LP_EV_P2P || e->kind == LP_EV_DP_COLL))
            continue;
        char name[80], args[96];
        if (e->kind == LP_EV_DP_COLL) {
            dp_coll_name(e, run->model.layers, name, sizeof(name));
            snprintf(args, sizeof(args), "\"micro_batch\":%d", e->micro);
            span(&o, name, "dp", e->start_s, e->dur_s, e->stage, 3, args);
            continue;
        }
        if (e->micro >= 0 && vp > 1)
            snprintf(name, sizeof(name), "%s%d.%d", event_name(e->kind), e->micro, e->chunk);
        else if (e->micro >= 0)
            snprintf(name, sizeof(name), "%s%d", event_name(e->kind), e->micro);
        else
            snprintf(name, sizeof(name), "%s", event_name(e->kind));
        snprintf(args, sizeof(args), "\"micro_batch\":%d,\"chunk\":%d", e->micro, e->chunk);
        /* DP reduction has its own stream (Megatron's grad-sync stream),
         * concurrent with the last backward pass's p2p */
        span(&o, name, event_name(e->kind), e->start_s, e->dur_s, e->stage,
             e->kind == LP_EV_DP ? 2 : e->stream, args);
        if (detail == LP_TRACE_OP &&
            (e->kind == LP_EV_FWD || e->kind == LP_EV_BWD || e->kind == LP_EV_WGRAD)) {
            int lo, nl = chunk_layers(first, pp, e->stage, e->chunk, &lo);
            const bool f = e->kind == LP_EV_FWD, b = e->kind == LP_EV_BWD;
            /* W passes: their classes (weight-gradient GEMMs, host time) */
            const struct lp_op_seg *seg = !ordered ? NULL : f ? order->fwd : b ? order->bwd : NULL;
            op_spans(&o, e,
                     f   ? res->layer_fwd_s
                     : b ? bwd
                         : res->layer_wgrad_s,
                     seg,
                     !seg ? 0
                     : f  ? order->n_fwd
                          : order->n_bwd,
                     zb, lo, nl,
                     f   ? res->zero3_fwd_s / vp
                     : b ? res->zero3_bwd_s / vp
                         : 0.0);
        }
    }
    if (detail != LP_TRACE_STAGE) memory_track(&o, run, res, ev, n);
    fputs("\n]}\n", a.f);
    return lp_atomic_commit(&a, err);
}

/* A timeline of up to this many events (lp_sim_trace truncates beyond). */
#define TRACE_CAP (1 << 20)

int lp_trace_run(struct lp_sim *sim, const struct lp_run *run, struct lp_result *res,
                 const char *path, enum lp_trace_detail detail, struct lp_err *err)
{
    int n = 0;
    struct lp_event *ev = malloc(TRACE_CAP * sizeof(*ev));
    struct lp_op_order *order = malloc(sizeof(*order));
    if (!ev || !order) {
        free(ev);
        free(order);
        LP_FAIL(err, LP_ENOMEM, "out of memory");
    }
    int rc = lp_sim_trace(sim, run, res, ev, TRACE_CAP, &n, order, err);
    if (rc >= 0) rc = lp_trace_write(path, run, res, ev, n, order, detail, err);
    free(ev);
    free(order);
    return rc;
}
