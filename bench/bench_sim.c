/* Simulator throughput: configurations per second per core for fixed lists
 * of GPT-3 175B configurations on DGX A100s (every tp, pp, micro-batch,
 * recompute, ZeRO, schedule/vp combination that is structurally valid; the
 * zb schedule beside 1F1B for vp = 1), global batch 1536, with the shipped
 * HDF5 profile: on 1024 GPUs (Narayanan et al.'s setting: 6 to 384
 * micro-batches per pipeline) and on 128 GPUs (48 to 1536 micro-batches:
 * long pipelines of micro-batches, where the schedule solve is longest).
 *
 * Reported in one run, each for eight schedule solvers on the same list:
 * the reference solvers (the clear ones: lp_sched_exact_ref, which the tree
 * before #20 used), the fast ones solving every operation (lp_sched_exact
 * with sched_every_op: #20's first step), the fast ones with stop 28's
 * steady-state shortcuts only (1F1B and zb: sched_stop28) and the fast ones
 * with the shortcuts of 1F1B, interleaved, GPipe and zb as stop 29 left them
 * (zb's looking one snapshot back: sched_stop29), the fast ones as stop 30
 * left them (zb's periods of up to ZB_RING pairs, all by the event loop:
 * sched_stop30), the fast ones as stop 31 left them (zb's event loop and
 * ring handing over to the worklist after ZB_QUIET snapshots without a
 * jump: sched_stop31), the fast ones as stop 31's follow-up left them (every
 * untraced zb pipeline by the worklist from the start; every other schedule
 * by the general worklist advance: sched_stop31f) and the fast ones as the
 * simulator runs them now (one-chunk pipelines by advance1, stop 31), with the
 * ratios: sweep order (each configuration once, on a fresh simulator, as a
 * sweep sees them: the memos fill as it goes), warm (the list again and
 * again: memo hits where the direct-mapped memos hold them), cold (both
 * memos cleared before every configuration: the full operator-by-operator
 * cost and schedule solve). The results of all eight must be bit-identical
 * (checked here too). Rates are per CPU-second; the solvers are measured
 * alternately ROUNDS times and each keeps its best rates, so that load on a
 * shared machine affects them alike. Then one 1F1B, zb, GPipe and interleaved (vp 2) schedule
 * alone, every op against the shortcut (zb also with stop 30's event loop
 * and stop 31's handover; zb's every op is now its solver), for a few pipeline depths and
 * micro-batch counts (the shortcut's asymptotics). Then the search's pruning (issue #20, `llmplan
 * search --prune`): the list once, in its order, on a fresh simulator, each result offered to a
 * top-10 by time and by cost and the Pareto front (lp_results_offer), first every configuration
 * simulated, then each bounded first (lp_sim_bound) and simulated only when the bound could still
 * rank (lp_results_wants), each as the trees before stops 27, 28, 35 and 36 of #20 ran it and as
 * it runs now (enum tree: the bounds still wanted held and decided best first); the kept plans
 * compared. Every pass presents the list as a sweep does:
 * one run, its layout rewritten per configuration (at_index). bench_sim [PROFILE.h5] [SECONDS]
 * [ROUNDS] */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llmplan/io.h"
#include "llmplan/results.h"
#include "llmplan/sim.h"
#include "sim_internal.h"

/* CPU time of this process: a rate per CPU-second is a rate per core, and
 * it moves less than wall time when the machine is shared */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* In a sweep's order (docs/search.md section 2: tp, pp, vp and schedule,
 * micro-batch, SP, recomputation, ZeRO innermost), so that what the
 * simulator keeps over the inner dimensions is kept as in a sweep (before
 * issue #20's hoisting the list ran schedule and SP innermost). */
static int build_list(const struct lp_run *base, int gpus, struct lp_run *list, int cap)
{
    int n = 0;
    int tps[] = {1, 2, 4, 8}, pps[] = {1, 2, 4, 8, 16, 32}, mbs[] = {1, 2, 4, 8};
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 6; b++)
            for (int v = 0; v <= 4; v = v ? 2 * v : 1)
                for (int c = 0; c < 4; c++)
                    for (int sp = 0; sp < 2; sp++)
                        for (int rc = 0; rc < 3; rc++)
                            for (int z = 0; z < 3; z++) {
                                struct lp_run r = *base;
                                r.par.tp = tps[a];
                                r.par.pp = pps[b];
                                r.par.dp = gpus / (tps[a] * pps[b]);
                                r.par.micro_batch = mbs[c];
                                r.par.recompute = (enum lp_recompute)rc;
                                r.par.zero = z;
                                /* v = 0: zb (one chunk per stage) */
                                r.par.vp = v ? v : 1;
                                r.par.schedule = v > 1    ? LP_SCHED_INTERLEAVED
                                                 : v == 1 ? LP_SCHED_1F1B
                                                          : LP_SCHED_ZB;
                                r.par.sequence_parallel = sp && tps[a] > 1;
                                if (sp && tps[a] == 1) continue;
                                if (lp_sim_validate(&r) != LP_REASON_NONE) continue;
                                if (n < cap) list[n++] = r;
                            }
    return n;
}

/* The list's configuration i as a sweep presents it: the search's walk
 * decodes every index into the rank's one run and rewrites only the
 * dimensions that changed (lp_space_decode_next), so the model, system,
 * training and framework stay in place, hot in the cache, and the
 * simulator's checks of them read the same bytes every time. The list's
 * entries differ in their layout only (build_list), so that is all that is
 * copied. Until stop 35 the passes ran on the list's own copies (3.5 kB
 * each, 12-17 MB a list): every configuration then read its model and
 * system from memory, which no sweep does (about a fifth of a pruned pass's
 * time). */
static const struct lp_run *at_index(struct lp_run *cur, const struct lp_run *list, int i)
{
    cur->par = list[i].par;
    return cur;
}

static void clear_memo(struct lp_sim *s)
{
    memset(s->used, 0, sizeof(s->used));
    memset(s->sused, 0, sizeof(s->sused));
}

struct rates {
    double first, warm, cold;
    long feasible;
    double sum;     /* of the iteration times of the first pass, for the identity check */
    double skipped; /* share of the first pass's schedule ops the shortcuts extrapolated */
    double listed;  /* share of them zb's worklist solved (stop 31) */
    uint64_t hash;
};

enum solver { REFERENCE, EVERY_OP, STOP28, STOP29, STOP30, STOP31, STOP31F, STEADY, SOLVERS };

/* One solver's three rates on the list. */
static int measure(const struct lp_cost_model *cm, enum solver solver, const struct lp_run *list,
                   int n, double secs, struct rates *out, double *sink)
{
    struct lp_err err;
    struct lp_sim *sim = NULL;
    if (lp_sim_create(cm, &sim, &err) < 0) return -1;
    sim->sched_reference = solver == REFERENCE;
    sim->sched_every_op = solver == EVERY_OP;
    sim->sched_stop28 = solver == STOP28;
    sim->sched_stop29 = solver == STOP29;
    sim->sched_stop30 = solver == STOP30;
    sim->sched_stop31 = solver == STOP31;
    sim->sched_stop31f = solver == STOP31F;
    struct lp_result res;
    out->feasible = 0;
    out->sum = 0;
    out->hash = 14695981039346656037ULL;
    static struct lp_run cur; /* the sweep's one run (at_index) */
    cur = list[0];
    double t1 = now();
    for (int i = 0; i < n; i++) {
        lp_sim_run(sim, at_index(&cur, list, i), &res);
        out->feasible += res.feasible;
        out->sum += res.iteration_time_s;
        out->hash = lp_hash_bytes(&res.iteration_time_s, sizeof(double), out->hash);
    }
    out->first = (double)n / (now() - t1);
    out->skipped =
        sim->sched_ops_total ? (double)sim->sched_ops_skipped / (double)sim->sched_ops_total : 0.0;
    out->listed =
        sim->sched_ops_total ? (double)sim->sched_ops_listed / (double)sim->sched_ops_total : 0.0;
    long done = 0;
    double t0 = now(), t;
    do {
        for (int i = 0; i < n; i++) {
            lp_sim_run(sim, at_index(&cur, list, i), &res);
            *sink += res.iteration_time_s;
        }
        done += n;
    } while ((t = now() - t0) < secs);
    out->warm = (double)done / t;
    long cdone = 0;
    t0 = now();
    do {
        for (int i = 0; i < n; i++) {
            clear_memo(sim);
            lp_sim_run(sim, at_index(&cur, list, i), &res);
            *sink += res.iteration_time_s;
        }
        cdone += n;
    } while ((t = now() - t0) < secs);
    out->cold = (double)cdone / t;
    lp_sim_destroy(&sim);
    return 0;
}

/* keep the best rates; the results (hash, feasible) must not change */
static void best_of(struct rates *best, const struct rates *r)
{
    if (best->hash && (best->hash != r->hash || best->feasible != r->feasible)) {
        best->hash = 0; /* marks a mismatch between rounds */
        return;
    }
    best->hash = r->hash;
    best->feasible = r->feasible;
    best->first = best->first > r->first ? best->first : r->first;
    best->warm = best->warm > r->warm ? best->warm : r->warm;
    best->cold = best->cold > r->cold ? best->cold : r->cold;
    best->skipped = r->skipped;
    best->listed = r->listed;
}

/* The eight solvers on one list: their rates and ratios; 0 if their
 * results are bit-identical. */
static int bench_list(const struct lp_cost_model *cm, const struct lp_run *base, int gpus,
                      double secs, int rounds, const char *path, double *sink)
{
    static struct lp_run list[20000];
    const int n = build_list(base, gpus, list, 20000);
    struct rates best[SOLVERS] = {{0}};
    for (int k = 0; k < rounds; k++)
        for (int v = 0; v < SOLVERS; v++) {
            struct rates r;
            if (measure(cm, (enum solver)v, list, n, secs, &r, sink) < 0) {
                fprintf(stderr, "bench_sim: out of memory\n");
                return -1;
            }
            best_of(&best[v], &r);
        }
    const struct rates *ref = &best[REFERENCE], *every = &best[EVERY_OP], *old = &best[STOP28],
                       *s29 = &best[STOP29], *s30 = &best[STOP30], *s31 = &best[STOP31],
                       *s31f = &best[STOP31F], *st = &best[STEADY];
    printf("bench_sim: %d GPT-3 175B configurations on %d A100s (%ld feasible), profile %s\n", n,
           gpus, st->feasible, path);
    printf(
        "  configs per CPU-second   reference     every op      stop 28      stop 29      stop 30"
        "      stop 31     stop 31f          now   now/every op   now/stop 30   now/stop 31   "
        "now/stop 31f   now/reference   (best of %d rounds)\n",
        rounds);
    const char *names[] = {"sweep order (once each)", "warm (memos hit)       ",
                           "cold (memos cleared)   "};
    for (int i = 0; i < 3; i++) {
        const double a = i == 0 ? ref->first : i == 1 ? ref->warm : ref->cold;
        const double b = i == 0 ? every->first : i == 1 ? every->warm : every->cold;
        const double o = i == 0 ? old->first : i == 1 ? old->warm : old->cold;
        const double o29 = i == 0 ? s29->first : i == 1 ? s29->warm : s29->cold;
        const double o30 = i == 0 ? s30->first : i == 1 ? s30->warm : s30->cold;
        const double o31 = i == 0 ? s31->first : i == 1 ? s31->warm : s31->cold;
        const double o31f = i == 0 ? s31f->first : i == 1 ? s31f->warm : s31f->cold;
        const double c = i == 0 ? st->first : i == 1 ? st->warm : st->cold;
        printf("  %s %10.0f   %10.0f   %10.0f   %10.0f   %10.0f   %10.0f   %10.0f   %10.0f   "
               "%12.2f   %11.2f   %11.2f   %12.2f   %13.2f\n",
               names[i], a, b, o, o29, o30, o31, o31f, c, c / b, c / o30, c / o31, c / o31f, c / a);
    }
    bool same = true;
    for (int v = 0; v < SOLVERS; v++)
        same =
            same && best[v].hash && best[v].hash == ref->hash && best[v].feasible == ref->feasible;
    printf("  schedule ops extrapolated by the steady-state shortcuts (sweep order): %.1f%% (stop "
           "28's: %.1f%%, stop 29's: %.1f%%, stop 30's: %.1f%%, stop 31's: %.1f%%); zb ops solved "
           "by the worklist now: %.1f%% (stop 31's: %.1f%%)\n",
           100.0 * st->skipped, 100.0 * old->skipped, 100.0 * s29->skipped, 100.0 * s30->skipped,
           100.0 * s31->skipped, 100.0 * st->listed, 100.0 * s31->listed);
    printf("  results bit-identical: %s\n", same ? "yes" : "NO");
    return same ? 0 : 1;
}

/* The kept plans of a top-10 / front: their indices in order, hashed. */
static uint64_t kept_hash(const struct lp_results *r)
{
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < r->front.n; i++)
        h = lp_hash_bytes(&r->front.e[i].index, sizeof(uint64_t), h);
    for (int o = 0; o < LP_OBJ_ALWAYS; o++) {
        const struct lp_entry **top = NULL;
        size_t n = 0;
        if (lp_results_top_sorted(r, (enum lp_objective)o, &top, &n, NULL) < 0) return 0;
        for (size_t i = 0; i < n; i++)
            h = lp_hash_bytes(&top[i]->index, sizeof(uint64_t), h);
        free((void *)top);
    }
    return h;
}

/* How once_ranked runs the list: every configuration simulated or the
 * search's pruning, each as four trees ran it: d7debed (before stop 27 of
 * #20: memo slots from FNV-1a, the model hashed, the layers split and every
 * layer kind visited for each configuration; a configuration the pruning
 * keeps simulated again from the start: sim->bench_baseline), e5b412f
 * (before stop 28: parameters, per-stage memory and DP collectives computed
 * for each configuration: sim->bench_no_hoist), c71d0c1 (before stop 35:
 * the bound without the drain, sim->bench_no_drain; the three older trees
 * had that bound too), c7c3c0c (before stop 36: each configuration decided
 * in the list's order, simulated at once when its bound is wanted) and now
 * (the wanted bounds held, LP_BOUNDS_BATCH at a time, and decided best first
 * by lp_bounds_order, as search/eval.c's decide_held). */
enum tree { D7DEBED, E5B412F, C71D0C1, C7C3C0C, NOW, TREES };
enum ranked { ALL, PRUNE };
static struct lp_bounds held; /* once_ranked's, freed by main */

static void tree_set(struct lp_sim *sim, enum tree t)
{
    sim->bench_baseline = t == D7DEBED;
    sim->bench_no_hoist = t == E5B412F;
    sim->bench_no_drain = t < C7C3C0C;
}

/* The list once in one of those ways: configurations per CPU-second, how
 * many were pruned, the schedules solved and answered by the memo
 * (lp_sim_sched_stats), and the kept plans' hash. */
static int once_ranked(const struct lp_cost_model *cm, const struct lp_run *list, int n,
                       enum ranked how, enum tree tree, double *rate, long *pruned,
                       struct lp_sched_stats *sched, uint64_t *kept)
{
    struct lp_sim *sim = NULL;
    struct lp_results res;
    const bool prune = how == PRUNE;
    if (lp_sim_create(cm, &sim, NULL) < 0) return -1;
    tree_set(sim, tree);
    if (lp_results_init(&res, 10, NULL) < 0) {
        lp_results_free(&res);
        lp_sim_destroy(&sim);
        return -1;
    }
    /* now: the wanted bounds held and decided best first, as
     * search/eval.c's decide_held does (the list is one range); a held
     * configuration is presented by at_index, where the search decodes it
     * again from its index (about 0.1 us more each: a few per cent of a
     * pass that simulates many, nothing on these lists' 11-13) */
    if (!held.v && lp_bounds_init(&held, LP_BOUNDS_BATCH, NULL) < 0) {
        lp_results_free(&res);
        lp_sim_destroy(&sim);
        return -1;
    }
    const bool best_first = prune && tree == NOW;
    *pruned = 0;
    int rc = 0;
    static struct lp_run cur; /* the sweep's one run (at_index) */
    cur = list[0];
    const double t0 = now();
    for (int i = 0; i <= n && rc == 0; i++) {
        if (best_first && (i == n || held.n == held.cap)) {
            lp_bounds_order(&held, &res);
            for (size_t j = 0; j < held.n && rc == 0; j++) {
                const struct lp_bound_item *it = &held.v[held.order[j]];
                if (!lp_results_wants(&res, it->index, &it->lb)) {
                    (*pruned)++;
                    continue;
                }
                struct lp_result r;
                const struct lp_run *run = at_index(&cur, list, (int)it->index);
                lp_sim_run(sim, run, &r);
                rc = lp_results_offer(&res, it->index, run, &r, NULL);
            }
            held.n = 0;
        }
        if (i == n) break;
        struct lp_result r;
        enum lp_bound b = LP_BOUND_NONE;
        const struct lp_run *run = at_index(&cur, list, i);
        if (prune) {
            b = lp_sim_bound(sim, run, &r);
            if (b == LP_BOUND_LOWER && !lp_results_wants(&res, (uint64_t)i, &r)) {
                (*pruned)++;
                continue;
            }
            if (b == LP_BOUND_LOWER && best_first) {
                lp_bounds_push(&held, (uint64_t)i, &r);
                continue;
            }
        }
        if (b != LP_BOUND_EXACT && prune && tree != D7DEBED)
            lp_sim_finish(sim, run, &r);
        else if (b != LP_BOUND_EXACT)
            lp_sim_run(sim, run, &r);
        rc = lp_results_offer(&res, (uint64_t)i, run, &r, NULL);
    }
    *rate = (double)n / (now() - t0);
    lp_sim_sched_stats(sim, sched);
    *kept = rc == 0 ? kept_hash(&res) : 0;
    lp_results_free(&res);
    lp_sim_destroy(&sim);
    return rc;
}

/* Pruning on one list, alternately with the full run, each as the four
 * trees ran it, best of rounds. */
static int bench_prune(const struct lp_cost_model *cm, const struct lp_run *base, int gpus,
                       int rounds)
{
    static struct lp_run list[20000];
    const int n = build_list(base, gpus, list, 20000);
    double best[2][TREES] = {{0}};
    long pruned[TREES] = {0};
    struct lp_sched_stats sched[TREES] = {{0}};
    uint64_t kept[2][TREES] = {{0}};
    /* one pass takes milliseconds: ten per round, so that the best of them
     * is a pass the machine's other load left alone */
    for (int k = 0; k < 10 * rounds; k++)
        for (int h = 0; h < 2; h++)
            for (int t = 0; t < TREES; t++) {
                double rate;
                long p;
                struct lp_sched_stats st;
                if (once_ranked(cm, list, n, (enum ranked)h, (enum tree)t, &rate, &p, &st,
                                &kept[h][t]) < 0)
                    return -1;
                if (rate > best[h][t]) best[h][t] = rate;
                if (h == PRUNE) pruned[t] = p, sched[t] = st; /* the same every pass */
            }
    bool same = true;
    for (int h = 0; h < 2; h++)
        for (int t = 0; t < TREES; t++)
            same = same && kept[h][t] && kept[h][t] == kept[0][0];
    printf("  %4d GPUs, %5d configurations (%ld pruned, %.1f%%), configs per CPU-second:\n", gpus,
           n, pruned[NOW], 100.0 * (double)pruned[NOW] / n);
    const char *what[2] = {"every one simulated:", "with pruning:       "};
    for (int h = 0; h < 2; h++)
        printf("    %s %8.0f d7debed, %8.0f e5b412f, %8.0f c71d0c1, %8.0f c7c3c0c, %8.0f now: "
               "x%.2f over c7c3c0c, x%.2f over c71d0c1, x%.2f over d7debed\n",
               what[h], best[h][D7DEBED], best[h][E5B412F], best[h][C71D0C1], best[h][C7C3C0C],
               best[h][NOW], best[h][NOW] / best[h][C7C3C0C], best[h][NOW] / best[h][C71D0C1],
               best[h][NOW] / best[h][D7DEBED]);
    printf("    pruning now / every one simulated now: x%.2f\n", best[PRUNE][NOW] / best[ALL][NOW]);
    printf("    with pruning, pruned / schedules solved / answered by the memo:");
    for (int t = 0; t < TREES; t++)
        printf(" %s %ld / %llu / %llu%s",
               (const char *[]){"d7debed", "e5b412f", "c71d0c1", "c7c3c0c", "now"}[t], pruned[t],
               (unsigned long long)sched[t].solved, (unsigned long long)sched[t].memo,
               t + 1 < TREES ? "," : "\n");
    printf("    plans identical (all ten): %s\n", same ? "yes" : "NO");
    return same ? 0 : 1;
}

/* One schedule alone, solved again and again: microseconds per solve with
 * every operation and with the steady-state shortcut, on uniform stages with
 * GPT-3-like costs (f 1, b 2, w 1 ms; p2p 0.1 ms; interleaved: v chunks of
 * 1/v of that), both results compared. */
static int bench_solve(const struct lp_cost_model *cm, enum lp_schedule kind, int p, int v, int m,
                       double secs)
{
    struct lp_sim *sim = NULL;
    if (lp_sim_create(cm, &sim, NULL) < 0) return -1;
    static double f[1024], b[1024], w[1024];
    for (int i = 0; i < p * v; i++) {
        f[i] = 1e-3 / v;
        b[i] = 2e-3 / v;
        w[i] = 1e-3 / v;
    }
    struct lp_sched_in in = {.p = p,
                             .m = m,
                             .v = v,
                             .kind = kind,
                             .f = f,
                             .b = b,
                             .w = w,
                             .p2p_s = 1e-4,
                             .ends_only = true};
    /* every op (zb: by the worklist), stop 30's (zb: the event loop and the
     * ring, no worklist), stop 31's (zb: the ring, then the worklist after
     * ZB_QUIET snapshots without a jump), the shortcut now (zb: the worklist
     * from the start, as every op) */
    struct lp_sched_out o[5];
    double us[5];
    for (int mode = 0; mode < 5; mode++) {
        sim->sched_every_op = mode == 0;
        sim->sched_stop30 = mode == 1;
        sim->sched_stop31 = mode == 2;
        sim->sched_stop31f = mode == 4; /* run after now's (mode 3) */
        long n = 0;
        const double t0 = now();
        double t;
        do {
            if (lp_sched_exact(sim, &in, &o[mode], NULL, 0, NULL) != 0) {
                lp_sim_destroy(&sim);
                return -1;
            }
            n++;
        } while ((t = now() - t0) < secs);
        us[mode] = 1e6 * t / (double)n;
    }
    bool same = true;
    for (int mode = 0; mode < 5; mode++)
        same = same && memcmp(&o[mode].makespan_s, &o[3].makespan_s, sizeof(double)) == 0;
    const char *name = kind == LP_SCHED_ZB            ? "zb"
                       : kind == LP_SCHED_GPIPE       ? "gpipe"
                       : kind == LP_SCHED_INTERLEAVED ? "int."
                                                      : "1f1b";
    printf(
        "  %-5s pp %3d, vp %d, %5d micro-batches: %9.1f us every op, %7.1f us stop 30, %7.1f us "
        "stop 31, %7.1f us stop 31f, %7.1f us now (x%.1f over every op, x%.2f over stop 30, x%.2f "
        "over stop 31, x%.2f over stop 31f)%s\n",
        name, p, v, m, us[0], us[1], us[2], us[4], us[3], us[0] / us[3], us[1] / us[3],
        us[2] / us[3], us[4] / us[3], same ? "" : "  RESULTS DIFFER");
    lp_sim_destroy(&sim);
    return same ? 0 : 1;
}

int main(int argc, char **argv)
{
    struct lp_err err;
    lp_err_clear(&err);
    struct lp_run base;
    const char *text = "{\"model\": \"gpt3-175b\", \"system\": \"dgx-a100-80gb\","
                       " \"training\": {\"global_batch\": 1536, \"tokens\": 3e11}}";
    if (lp_parse_run(text, "bench", &base, &err) < 0) {
        fprintf(stderr, "bench_sim: %s\n", err.msg);
        return 1;
    }
    char path[1024];
    if (argc > 1)
        snprintf(path, sizeof(path), "%s", argv[1]);
    else
        lp_profile_default_path(base.system.gpu.name, path, sizeof(path));
    double secs = argc > 2 ? atof(argv[2]) : 2.0;
    struct lp_profile *prof = NULL;
    if (lp_profile_read_h5(path, &prof, &err) < 0) {
        fprintf(stderr, "bench_sim: %s\n", err.msg);
        return 1;
    }
    struct lp_cost_model cm;
    lp_cost_model_table(&cm, prof, &base.system.gpu);
    const int rounds = argc > 3 && atoi(argv[3]) > 0 ? atoi(argv[3]) : 3;
    double sink = 0;
    int rc = bench_list(&cm, &base, 1024, secs, rounds, path, &sink);
    if (rc == 0) rc = bench_list(&cm, &base, 128, secs, rounds, path, &sink);
    printf("one schedule solve (CPU time per solve):\n");
    const int shapes[][2] = {{8, 64}, {8, 1024}, {32, 384}, {32, 4096}};
    /* 1F1B, zb, GPipe (one chunk), interleaved with 2 chunks per stage */
    const enum lp_schedule kinds[] = {LP_SCHED_1F1B, LP_SCHED_ZB, LP_SCHED_GPIPE,
                                      LP_SCHED_INTERLEAVED};
    for (int k = 0; k < 4 && rc == 0; k++)
        for (int i = 0; i < 4 && rc == 0; i++)
            rc = bench_solve(&cm, kinds[k], shapes[i][0], kinds[k] == LP_SCHED_INTERLEAVED ? 2 : 1,
                             shapes[i][1], secs / 4);
    printf("the search's pruning (llmplan search --prune), each list once, top-10 by time and "
           "cost and the Pareto front kept (best of %d passes):\n",
           10 * rounds);
    if (rc == 0) rc = bench_prune(&cm, &base, 1024, rounds);
    if (rc == 0) rc = bench_prune(&cm, &base, 128, rounds);
    printf("  (checksum %.6g)\n", sink);
    lp_bounds_free(&held);
    lp_profile_destroy(&prof);
    return rc == 0 ? 0 : 1;
}
