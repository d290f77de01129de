/* The validity rules of a configuration: one ordered list, used by both
 * lp_sim_validate (simulate, every command) and the space walk
 * (lp_space_decode), so that the two cannot disagree (src/core/rules.c).
 *
 * Each rule is tagged with the dimension of the sweep's space at which it is
 * decided: the least significant dimension (enum lp_dim, most significant
 * first) among those it reads. The list is sorted by that tag, so the first
 * rule a configuration fails is the same whether the rules run all at once
 * (lp_rules_validate) or level by level as a walk fixes digits; and every
 * configuration sharing the digits up to a failing rule's tag fails it too,
 * which is what lets the walk skip the whole block at once. */
#ifndef LLMPLAN_RULES_H
#define LLMPLAN_RULES_H

#include <stdbool.h>

#include "llmplan/config.h"
#include "llmplan/sim.h"
#include "llmplan/space.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a rule reads: the run's parts (a walk points them at the sweep's
 * model and system without copying them). */
struct lp_rule_view {
    const struct lp_model *model;
    const struct lp_system *system;
    const struct lp_training *train; /* global_batch */
    const struct lp_parallel *par;
    enum lp_prec precision; /* the run's (a swept dimension) */
    enum lp_framework fw;   /* the run's framework (a swept dimension) */
    bool hybrid_shard;      /* ... its fw.hybrid_shard */
    int lora_rank;          /* the run's fine-tuning (a swept dimension) */
    bool tp_overlap;        /* ... its fw.tp_overlap */
};

/* Why a run of a framework is outside what the simulator models it as
 * (LP_REASON_FRAMEWORK's reason_a; lp_fw_gap_text says it). */
enum lp_fw_gap {
    LP_GAP_NONE = 0,
    LP_GAP_HYBRID,       /* hybrid_shard outside FSDP at zero 2 or 3 (config.h lp_fw_hybrid_runs) */
    LP_GAP_PP,           /* FSDP with pp > 1 (or vp > 1) */
    LP_GAP_MOE,          /* FSDP with MoE layers */
    LP_GAP_MTP,          /* FSDP with MTP layers */
    LP_GAP_LAYERS,       /* FSDP with a block that is not attention + dense MLP (Mamba) */
    LP_GAP_UNITS,        /* FSDP with more blocks than LP_TORCH_MAX_UNITS - 2 */
    LP_GAP_LORA,         /* FSDP with LoRA */
    LP_GAP_BF16_STAGE,   /* fp8 / mxfp8 with more bf16 first / last layers than a stage holds */
    LP_GAP_BF16_DELAYED, /* fp8 delayed scaling with bf16 first / last layers */
    LP_GAP_BF16_FW,      /* bf16 first / last layers outside Megatron-Core (framework megatron) */
    LP_GAP_FP8_STACK,    /* fp8 / mxfp8 / nvfp4 on a stack of 2021-22 (megatron-2021,
                            megatron-deepspeed), which trains in fp16 or bf16 only */
    LP_GAP_TP_OVERLAP_NODES, /* tp_overlap (userbuffers) with TP wider than the scale-up domain */
    LP_GAP_COUNT
};

/* The most units (blocks + 2) sim_dp.c's lp_torch_dp plays out. */
#define LP_TORCH_MAX_UNITS 1024

/* What lp_torch_dp's per-unit play of PyTorch DDP / FSDP (sim_dp.c) covers:
 * one process group over dp x cp ranks (pp = vp = 1), every block attention
 * + dense MLP, no MTP, at most LP_TORCH_MAX_UNITS units; the first gap of
 * the model and layout, LP_GAP_NONE if none (LoRA: lp_fw_gap_lora). The
 * one rule of lp_torch_dp_applies, of a run's parse (json_load.c) and of a
 * sweep's walk (rules.c fsdp_layout). */
enum lp_fw_gap lp_torch_layout_gap(const struct lp_model *m, const struct lp_parallel *p);

/* An FSDP framework (lp_fw_is_fsdp) over more than one data-parallel rank
 * runs only what lp_torch_dp plays (the generic ZeRO model would stand in
 * for it without a word otherwise): the gap of model, layout and LoRA rank,
 * LP_GAP_NONE for other frameworks and for dp x cp = 1 (nothing to shard or
 * reduce: the generic model's nothing is FSDP's too). */
enum lp_fw_gap lp_fw_fsdp_gap(enum lp_framework k, const struct lp_model *m,
                              const struct lp_parallel *p, int lora_rank);

/* Megatron-Core's checks of first_last_layers_bf16 (transformer_config.py
 * __post_init__, Megatron-LM d98e8a6), made under `if self.fp8` only (fp8
 * and mxfp8; an nvfp4 or bf16 run is not checked): no bf16 layers under
 * delayed scaling, and each count at most num_layers //
 * pipeline_model_parallel_size. LP_GAP_NONE when the counts pass. The one
 * rule of a run's parse (json_load.c) and of a sweep's walk (rules.c
 * bf16_layers). */
enum lp_fw_gap lp_bf16_layers_gap(enum lp_framework k, const struct lp_training *t,
                                  enum lp_prec prec, const struct lp_model *m,
                                  const struct lp_parallel *p);

/* A precision the framework's stack cannot train in: the fp8 family (fp8,
 * mxfp8, nvfp4: Transformer Engine's recipes) on megatron-2021 and
 * megatron-deepspeed, whose code trains in fp16 or bf16 only (Megatron-LM
 * before Transformer Engine, DeepSpeed's FP16_Optimizer / BF16_Optimizer;
 * docs/frameworks.md). The one rule of a run's parse (json_load.c) and of a
 * sweep's walk (rules.c fw_precision). */
enum lp_fw_gap lp_fw_precision_gap(enum lp_framework k, enum lp_prec prec);

/* A gap in words, and in *key (may be NULL) the run description's key that
 * sets it. */
const char *lp_fw_gap_text(enum lp_fw_gap g, const char **key);

/* One rule: it fails when `fails` returns true, with the numbers of the
 * message (lp_result_reason) in *a and *b. */
struct lp_rule {
    enum lp_dim dim; /* decided at this digit of the space */
    enum lp_reason reason;
    bool (*fails)(const struct lp_rule_view *v, double *a, double *b);
};

/* The rules, in order (dim non-decreasing). */
extern const struct lp_rule lp_rules[];
extern const int lp_rule_count;

/* The first rule the run fails (LP_REASON_NONE when it fails none), after
 * the degrees' precondition (every degree and the micro-batch >= 1, else
 * LP_REASON_GPU_COUNT: a walk never produces one below 1). */
enum lp_reason lp_rules_validate(const struct lp_run *run, double *a, double *b);

#ifdef __cplusplus
}
#endif

#endif
