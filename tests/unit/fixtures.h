/* Shared test fixtures: the runs several unit tests start from. */
#ifndef LLMPLAN_TEST_FIXTURES_H
#define LLMPLAN_TEST_FIXTURES_H

#include <stdio.h>
#include <string.h>

#include "llmplan/config.h"
#include "llmplan/io.h"
#include "llmplan/profile.h"
#include "llmplan/search.h"
#include "llmplan/sim.h"

/* Every parallel degree 1 (one GPU, one stage), one sequence a micro-batch,
 * 1F1B; a test assigns what differs. */
static inline struct lp_parallel lp_fixture_unit_degrees(void)
{
    return (struct lp_parallel){.tp = 1,
                                .pp = 1,
                                .dp = 1,
                                .cp = 1,
                                .ep = 1,
                                .vp = 1,
                                .micro_batch = 1,
                                .schedule = LP_SCHED_1F1B};
}

/* GPT-3 175B on a DGX A100-like node (hand-set figures, no preset files):
 * TP 8, PP 8, DP 16, SP, selective recomputation, ZeRO-1, 1F1B, batch 1536,
 * bf16, FlashAttention, 300B tokens, Megatron defaults. */
static inline void lp_fixture_gpt3_run(struct lp_run *r)
{
    memset(r, 0, sizeof(*r));
    struct lp_model *m = &r->model;
    strcpy(m->name, "gpt3-175b");
    m->layers = 96;
    m->hidden = 12288;
    m->heads = 96;
    m->kv_heads = 96;
    m->ffn_hidden = 4 * 12288;
    m->vocab = 51200;
    m->seq_len = 2048;
    m->ffn_act = LP_ACT_GELU;
    m->norm = LP_NORM_LAYERNORM;
    m->pos = LP_POS_LEARNED;
    m->tied_embeddings = true;
    m->bias = true;
    m->dropout = true;
    struct lp_system *s = &r->system;
    strcpy(s->name, "test-dgx");
    strcpy(s->gpu.name, "test-a100");
    s->gpu.mem_bytes = 80.0 * 1024 * 1024 * 1024;
    s->gpu.mem_bw_Bps = 2.039e12;
    s->gpu.peak_flops[LP_FP16] = 312e12;
    s->gpu.peak_flops[LP_BF16] = 312e12;
    s->gpu.peak_flops[LP_FP32] = 156e12;
    s->gpus_per_node = 8;
    s->intra.bw_Bps = 300e9;
    s->intra.latency_s = 3e-6;
    s->inter.bw_Bps = 25e9;
    s->inter.latency_s = 5e-6;
    s->price_per_gpu_hour_usd = 4.0;
    r->par = (struct lp_parallel){.tp = 8,
                                  .pp = 8,
                                  .dp = 16,
                                  .cp = 1,
                                  .ep = 1,
                                  .vp = 1,
                                  .micro_batch = 1,
                                  .sequence_parallel = true,
                                  .recompute = LP_RECOMPUTE_SELECTIVE,
                                  .zero = 1,
                                  .schedule = LP_SCHED_1F1B};
    r->train.global_batch = 1536;
    r->train.precision = LP_BF16;
    r->train.flash_attention = true;
    r->train.tokens = 300e9;
    lp_framework_defaults(LP_FW_MEGATRON, &r->fw);
}

/* A simulator for exercising the schedule solver alone (its cost model is
 * never consulted). NULL when out of memory. */
static inline struct lp_sim *lp_fixture_schedule_sim(void)
{
    struct lp_cost_model cm;
    struct lp_gpu g;
    memset(&g, 0, sizeof(g));
    g.mem_bw_Bps = 1e12;
    lp_cost_model_roofline(&cm, &g);
    struct lp_sim *sim = NULL;
    return lp_sim_create(&cm, &sim, NULL) == 0 ? sim : NULL;
}

/* A simulator on the roofline cost model of the run's GPU. NULL when out of
 * memory. */
static inline struct lp_sim *lp_fixture_roofline_sim(const struct lp_run *r)
{
    struct lp_cost_model cm;
    lp_cost_model_roofline(&cm, &r->system.gpu);
    struct lp_sim *sim = NULL;
    return lp_sim_create(&cm, &sim, NULL) == 0 ? sim : NULL;
}

/* A sweep parsed from JSON text; NULL (the message on stderr) when it does
 * not parse. */
static inline struct lp_sweep *lp_fixture_sweep(const char *text)
{
    struct lp_sweep *sw = NULL;
    struct lp_err err;
    lp_err_clear(&err);
    if (lp_sweep_parse(text, "test.json", &sw, &err) != LP_OK) {
        fprintf(stderr, "  parse failed: %s\n", err.msg);
        return NULL;
    }
    return sw;
}

/* The configuration of digits dg as `llmplan simulate` would be given it
 * (its plan object: dp stated), built without lp_space_decode. dp is 1
 * when tp*pp*cp does not divide the GPUs (simulate cannot be asked that). */
static inline void lp_fixture_run_of_digits(const struct lp_sweep *sw, const int *dg,
                                            struct lp_run *r)
{
    memset(r, 0, sizeof(*r));
#define V(d) (sw->values[(d)][dg[(d)]])
    r->model = sw->models[dg[LP_DIM_MODEL]];
    r->system = sw->systems[V(LP_DIM_SYSTEM)];
    r->train = sw->train;
    r->fw = sw->fws ? sw->fws[V(LP_DIM_FRAMEWORK)] : sw->fw;
    if (sw->fts) { /* the finetune digit, as space.c sets it */
        const struct lp_sweep_finetune *ft = &sw->fts[V(LP_DIM_FINETUNE)];
        r->train.lora_rank = ft->lora_rank;
        r->train.lora_base_bits = ft->lora_base_bits;
        r->train.lora_targets = ft->lora_targets;
        r->train.lora_dropout = ft->lora_dropout;
    }
    const int att = V(LP_DIM_ATTENTION);
    r->train.flash_attention = att != LP_ATTENTION_COUNT;
    r->train.attention = att != LP_ATTENTION_COUNT ? (enum lp_attention)att : LP_ATTENTION_FLASH2;
    r->train.precision = (enum lp_prec)V(LP_DIM_PRECISION);
    r->par.tp = V(LP_DIM_TP);
    r->par.pp = V(LP_DIM_PP);
    r->par.cp = V(LP_DIM_CP);
    r->par.ep = V(LP_DIM_EP);
    r->par.vp = V(LP_DIM_VP);
    const int mp = r->par.tp * r->par.pp * r->par.cp, gpus = V(LP_DIM_GPUS);
    r->par.dp = mp <= gpus && gpus % mp == 0 ? gpus / mp : 1;
    r->par.micro_batch = V(LP_DIM_MICRO_BATCH);
    r->par.sequence_parallel = V(LP_DIM_SP) != 0;
    r->par.recompute = (enum lp_recompute)V(LP_DIM_RECOMPUTE);
    r->par.zero = V(LP_DIM_ZERO);
    r->par.schedule = (enum lp_schedule)V(LP_DIM_SCHEDULE);
#undef V
}

#endif
