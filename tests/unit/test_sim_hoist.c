/* Issue #20's hoisting (sim.c struct lp_sim_hoist, lp_sim_coll_time): a
 * simulator that keeps a run's parameters per rank, its per-stage memory and
 * its DP collectives' times over a sweep's inner dimensions must give, bit
 * for bit, what one that computes them afresh gives (sim->bench_no_hoist),
 * in any order of runs. Random walks that change one thing at a time, most
 * often what the kept values must survive (ZeRO, recomputation, SP,
 * micro-batch, schedule), else the layout (tp, pp, vp, dp, ep) or what only
 * ctx_gen tracks (the model, the system, the training, the framework), over
 * dense, MoE, MLA and Mamba-hybrid models under every framework, with and
 * without LoRA; every step through lp_sim_run, or through the search's
 * lp_sim_bound then lp_sim_finish, and the memory also against
 * lp_sim_memory (which keeps nothing). A kept value used where it no longer
 * holds shows up as a difference (the test also checks that the walks hit
 * the kept values and that their ctx changes move results). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "llmplan/io.h"
#include "sim_internal.h"

static bool same_result(const struct lp_result *a, const struct lp_result *b)
{
    const size_t o = offsetof(struct lp_result, reason_a);
    return a->feasible == b->feasible && a->reason == b->reason &&
           memcmp((const char *)a + o, (const char *)b + o, sizeof(*a) - o) == 0;
}

static bool same_memory(const struct lp_memory *a, const struct lp_memory *b)
{
    return a->total_bytes == b->total_bytes && a->weights_bytes == b->weights_bytes &&
           a->grads_bytes == b->grads_bytes && a->optimizer_bytes == b->optimizer_bytes &&
           a->activations_bytes == b->activations_bytes && a->temp_bytes == b->temp_bytes;
}

/* xorshift64*: the walks are the same on every run of the test */
static uint64_t rnd(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static int pick(uint64_t *s, int n)
{
    return (int)(rnd(s) % (uint64_t)n);
}

struct walk {
    int steps, valid, bad, ctx_moves, ctx_changed;
};

/* One change of r: mostly an inner dimension, else the layout or the rest
 * of the run (*ctx: the latter). */
static void mutate(struct lp_run *r, const struct lp_run *bases, int nb, int *gpus, uint64_t *s,
                   bool *ctx)
{
    struct lp_parallel *p = &r->par;
    static const int pow2[] = {1, 2, 4, 8};
    *ctx = false;
    switch (pick(s, 17)) {
    case 0:
    case 1:
    case 2:
        p->zero = pick(s, 4);
        break;
    case 3:
    case 4:
        p->recompute = (enum lp_recompute)pick(s, 3);
        break;
    case 5:
        p->sequence_parallel = !p->sequence_parallel;
        break;
    case 6:
        p->micro_batch = pow2[pick(s, 3)];
        break;
    case 7: {
        const int k = pick(s, 5);
        p->schedule = k == 0   ? LP_SCHED_GPIPE
                      : k == 1 ? LP_SCHED_1F1B
                      : k == 2 ? LP_SCHED_ZB
                               : LP_SCHED_INTERLEAVED;
        p->vp = k < 3 ? 1 : 2 * (k - 2);
        break;
    }
    case 8:
        p->tp = pow2[pick(s, 4)];
        break;
    case 9:
        p->pp = pow2[pick(s, 4)];
        break;
    case 10:
        p->ep = r->model.moe.experts > 0 ? pow2[pick(s, 4)] : 1;
        break;
    case 11: /* the system: another link bandwidth or GPU memory */
        *ctx = true;
        if (pick(s, 2))
            r->system.inter.bw_Bps *= pick(s, 2) ? 2.0 : 0.5;
        else
            r->system.gpu.mem_bytes *= pick(s, 2) ? 1.5 : 1.0 / 1.5;
        break;
    case 12: /* the training: LoRA on or off, the base weights' bits */
        *ctx = true;
        r->train.lora_rank = r->train.lora_rank > 0 ? 0 : 16;
        r->train.lora_base_bits = pick(s, 2) ? 16 : 4;
        break;
    case 13: /* the framework: another one, or one of its ZeRO-3 options */
        *ctx = true;
        if (pick(s, 2))
            lp_framework_defaults((enum lp_framework)pick(s, LP_FW_COUNT), &r->fw);
        else
            r->fw.zero3_per_tensor = !r->fw.zero3_per_tensor;
        break;
    case 14: /* the framework's bucket size and overlap */
        *ctx = true;
        r->fw.bucket_bytes *= pick(s, 2) ? 4.0 : 0.25;
        r->fw.dp_overlap = !r->fw.dp_overlap;
        break;
    case 15: /* the data-parallel degree alone (the GPU count with it) */
        *gpus = pick(s, 2) ? 2 * *gpus : *gpus / 2 < 8 ? 8 : *gpus / 2;
        break;
    default: { /* another model (its own run's training and framework kept) */
        *ctx = true;
        const struct lp_run *b = &bases[pick(s, nb)];
        r->model = b->model;
        if (r->model.moe.experts == 0) p->ep = 1;
        break;
    }
    }
    p->dp = *gpus / (p->tp * p->pp * p->cp);
    if (p->dp < 1) p->dp = 1;
}

static void walk(struct lp_sim *hs, struct lp_sim *fresh, const struct lp_run *bases, int nb,
                 const struct lp_run *start, int gpus, int steps, uint64_t seed, struct walk *w)
{
    uint64_t s = seed;
    struct lp_run r = *start, prev_r = *start;
    struct lp_result prev;
    lp_sim_run(fresh, &r, &prev);
    for (int i = 0; i < steps; i++) {
        struct lp_run x = r;
        bool ctx = false;
        int g = gpus;
        mutate(&x, bases, nb, &g, &s, &ctx);
        struct lp_result a, b, lb;
        lp_sim_run(fresh, &x, &b);
        if (pick(&s, 3) == 0) {
            lp_sim_run(hs, &x, &a);
        } else { /* the search's --prune path */
            if (lp_sim_bound(hs, &x, &lb) == LP_BOUND_EXACT)
                a = lb;
            else
                lp_sim_finish(hs, &x, &a);
        }
        w->steps++;
        bool ok = same_result(&a, &b);
        if (b.reason == LP_REASON_NONE || b.reason == LP_REASON_OOM) {
            struct lp_memory m;
            lp_sim_memory(&x, &m);
            ok = ok && same_memory(&m, &a.memory);
        }
        if (!ok && w->bad++ < 10)
            fprintf(stderr,
                    "  step %d differs: %s tp %d pp %d dp %d vp %d ep %d mb %d rc %d zero %d "
                    "sched %d sp %d fw %d: %.17g vs %.17g s, %.17g vs %.17g B\n",
                    i, x.model.name, x.par.tp, x.par.pp, x.par.dp, x.par.vp, x.par.ep,
                    x.par.micro_batch, (int)x.par.recompute, x.par.zero, (int)x.par.schedule,
                    x.par.sequence_parallel, (int)x.fw.kind, a.iteration_time_s, b.iteration_time_s,
                    a.memory.total_bytes, b.memory.total_bytes);
        if (ctx && b.reason == LP_REASON_NONE && prev.reason == LP_REASON_NONE) {
            /* a ctx change on the same layout: does it move the result? */
            const bool same_layout = memcmp(&x.par, &prev_r.par, sizeof(x.par)) == 0;
            if (same_layout) {
                w->ctx_moves++;
                w->ctx_changed += !same_result(&b, &prev);
            }
        }
        if (lp_sim_validate(&x) == LP_REASON_NONE) { /* walk on from a valid run */
            w->valid++;
            r = x;
            gpus = g;
        }
        prev_r = x;
        prev = b;
    }
}

static int parse(const char *model, const char *fw, int gpus, int gbs, struct lp_run *r)
{
    char text[512];
    struct lp_err err;
    lp_err_clear(&err);
    snprintf(text, sizeof(text),
             "{\"model\": \"%s\", \"system\": \"dgx-h100\", \"gpus\": %d,"
             " \"parallel\": {\"tp\": 2, \"pp\": 2},"
             " \"training\": {\"global_batch\": %d, \"tokens\": 1e11},"
             " \"framework\": {\"name\": \"%s\"}}",
             model, gpus, gbs, fw);
    if (lp_parse_run(text, "test_sim_hoist", r, &err) != 0) {
        fprintf(stderr, "  %s\n", err.msg);
        return -1;
    }
    return 0;
}

TEST(hoisted_equals_fresh)
{
    static const struct {
        const char *model, *fw;
    } kinds[] = {
        {"gpt3-13b", "megatron"},
        {"llama3-8b", "megatron"},
        {"mixtral-8x7b", "megatron"},
        {"deepseek-v3", "megatron"},
        {"nemotron-h-8b", "megatron"},
        {"jamba-1.5-mini", "megatron"},
        {"gpt3-1.3b", "megatron-deepspeed"},
        {"llama2-7b", "fsdp"},
        {"mixtral-8x7b", "hf"},
    };
    enum { NB = sizeof(kinds) / sizeof(kinds[0]) };
    static struct lp_run bases[NB];
    const int gpus = 64, gbs = 256;
    for (int i = 0; i < NB; i++)
        ASSERT_OK(parse(kinds[i].model, kinds[i].fw, gpus, gbs, &bases[i]));
    struct lp_sim *hs = lp_fixture_roofline_sim(&bases[0]);
    struct lp_sim *fresh = lp_fixture_roofline_sim(&bases[0]);
    ASSERT_TRUE(hs != NULL && fresh != NULL);
    fresh->bench_no_hoist = true;
    struct walk w = {0};
    for (int i = 0; i < NB; i++)
        walk(hs, fresh, bases, NB, &bases[i], gpus, 2500,
             UINT64_C(0x9E3779B97F4A7C15) * (uint64_t)(i + 1), &w);
    printf("  %d steps (%d valid), %d differences; kept values used %llu times, computed %llu; "
           "%d of %d ctx changes on one layout moved the result; fresh simulator kept none: "
           "%llu\n",
           w.steps, w.valid, w.bad, (unsigned long long)hs->hoist_hits,
           (unsigned long long)hs->hoist_misses, w.ctx_changed, w.ctx_moves,
           (unsigned long long)fresh->hoist_hits);
    ASSERT_EQ_INT(w.bad, 0);
    ASSERT_TRUE(hs->hoist_hits > 1000 && fresh->hoist_hits == 0);
    ASSERT_TRUE(w.ctx_changed > 50);
    lp_sim_destroy(&hs);
    lp_sim_destroy(&fresh);
}

TH_MAIN(TH_CASE(hoisted_equals_fresh))
