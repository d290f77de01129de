/* The objects a simulation is described by: model, GPU, system, parallel
 * configuration, training settings and framework behaviour. Plain structs of
 * fixed size (no pointers), so that a configuration can be copied, hashed and
 * decoded in the hot path without allocation. Loaded from JSON by src/io. */
#ifndef LLMPLAN_CONFIG_H
#define LLMPLAN_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LP_NAME_LEN 64
#define LP_SOURCE_LEN 384

enum lp_prec { LP_FP32 = 0, LP_FP16, LP_BF16, LP_FP8, LP_PREC_COUNT };
enum lp_act { LP_ACT_GELU = 0, LP_ACT_SWIGLU };
enum lp_norm { LP_NORM_LAYERNORM = 0, LP_NORM_RMSNORM };
enum lp_pos { LP_POS_LEARNED = 0, LP_POS_ROTARY, LP_POS_ALIBI };
enum lp_recompute {
    LP_RECOMPUTE_NONE = 0,
    LP_RECOMPUTE_SELECTIVE,
    LP_RECOMPUTE_FULL,
    LP_RECOMPUTE_COUNT
};
/* zb: a zero-bubble schedule after Qi et al. 2024 ('Zero Bubble Pipeline
 * Parallelism'): 1F1B's order of forward and input-gradient (B) passes, the
 * weight-gradient (W) passes filling idle time; 1F1B's memory. Equals their
 * ZB-H1 bubble (p-1)(F+B-W) when F = B = W. */
enum lp_schedule {
    LP_SCHED_GPIPE = 0,
    LP_SCHED_1F1B,
    LP_SCHED_INTERLEAVED,
    LP_SCHED_ZB,
    LP_SCHED_COUNT
};

/* Frameworks whose behaviour the simulator models explicitly (fidelity issue). */
enum lp_framework {
    LP_FW_MEGATRON = 0,  /* Megatron-LM 2022+ / Megatron-Core: distopt, TP/DP/PP overlap */
    LP_FW_MEGATRON_2021, /* Megatron-LM as in Narayanan et al. 2021: DP all-reduce not overlapped */
    LP_FW_MEGATRON_DEEPSPEED, /* ZeRO-1, DP reduction after backward, no overlap */
    LP_FW_FSDP,               /* PyTorch FSDP / Composer: sharded params, prefetch, overlap */
    LP_FW_HF, /* Hugging Face Transformers + PEFT + bitsandbytes in eager PyTorch (LLaMA-Factory) */
    LP_FW_COUNT
};

/* How the loss over the vocabulary is computed (framework option
 * "cross_entropy"; docs/frameworks.md). */
enum lp_xent {
    LP_XENT_FP32 = 0, /* logits cast to fp32, then max/sub/exp/sum/div kernels (Megatron) */
    LP_XENT_FUSED,    /* one fused kernel each way (Apex xentropy, FA repo, TE) */
    LP_XENT_NATIVE,   /* PyTorch F.cross_entropy on the logits' dtype */
    LP_XENT_UPCAST,   /* Transformers: logits.float(), a shifted contiguous copy, then
                         F.cross_entropy on fp32 */
    LP_XENT_COUNT
};

struct lp_moe {
    int experts; /* 0 = dense model */
    int top_k;
    int ffn_hidden;
    int layer_freq; /* every layer_freq-th layer is MoE (1 = all) */
    double capacity_factor;
    /* tokens of the busiest expert over the mean (model/training key
     * moe.imbalance; 1 = balanced routing) */
    double imbalance;
};

/* How the experts of an MoE layer run (framework option "moe_impl"). */
enum lp_moe_impl {
    LP_MOE_GROUPED = 0, /* permute, grouped GEMMs, unpermute (Megatron-Core, MegaBlocks) */
    LP_MOE_EAGER,       /* one small set of kernels per expert in a Python loop, with a
                           host synchronisation per expert (Transformers' MixtralSparseMoeBlock) */
    LP_MOE_IMPL_COUNT
};

/* Which linear layers carry LoRA adapters (training.finetune.targets). */
enum lp_lora_targets {
    LP_LORA_ALL = 0, /* every linear layer of the blocks */
    LP_LORA_MOE,     /* the experts and the routers only (Xia et al. 2024) */
    LP_LORA_TARGETS_COUNT
};

struct lp_model {
    char name[LP_NAME_LEN];
    int layers;
    int hidden;
    int heads;
    int kv_heads;
    int ffn_hidden;
    int vocab;
    int seq_len;
    enum lp_act ffn_act;
    enum lp_norm norm;
    enum lp_pos pos;
    bool tied_embeddings;
    bool bias;    /* linear layers carry a bias (GPT-2/3 yes, LLaMA no) */
    bool dropout; /* hidden/attention dropout in training (GPT-2/3 yes, LLaMA, MPT no) */
    struct lp_moe moe;
    char source[LP_SOURCE_LEN];
};

struct lp_gpu {
    char name[LP_NAME_LEN];
    double mem_bytes;                 /* HBM capacity */
    double mem_bw_Bps;                /* HBM bandwidth */
    double peak_flops[LP_PREC_COUNT]; /* dense tensor-core peak; 0 = unsupported */
    double vector_flops;              /* fp32 non-tensor peak */
    int sms;                          /* streaming multiprocessors (wave quantisation) */
    double l2_bytes;
    double tdp_w;
    /* Fraction of its kernel profile's compute throughput (GEMM, attention)
     * the GPU sustains over a training run; 0 = LP_SUSTAINED_FRAC
     * (docs/calibration.md). The profiles hold short-burst kernel times. */
    double sustained_frac;
    char source[LP_SOURCE_LEN];
};

/* Fitted on the calibration half of the validation rows (scripts/calibrate,
 * docs/calibration.md): real A100 training runs sustain this fraction of
 * the burst kernel throughput the profiles hold. */
#define LP_SUSTAINED_FRAC 0.87
/* Overlap of host and GPU time (framework option host_overlap), fitted
 * with LP_SUSTAINED_FRAC and host_op_us (docs/calibration.md). */
#define LP_HOST_OVERLAP 1.25
/* Host time per kernel of eager PyTorch under the Transformers Trainer
 * (framework "hf"): fitted on the calibration half of the Xia et al. 2024
 * rows (docs/calibration.md); applies to the hf framework only. */
#define LP_HF_HOST_OP_S 100e-6
/* g->sustained_frac, or LP_SUSTAINED_FRAC when unset */
double lp_gpu_sustained(const struct lp_gpu *g);

#define LP_MAX_PRICES 8

struct lp_link {
    double bw_Bps; /* per-GPU unidirectional bandwidth of the tier */
    double latency_s;
};

struct lp_system {
    char name[LP_NAME_LEN];
    struct lp_gpu gpu;
    int gpus_per_node;
    struct lp_link intra; /* NVLink / NVSwitch / PCIe inside a node */
    struct lp_link inter; /* network across nodes, per GPU */
    double price_per_gpu_hour_usd;
    char source[LP_SOURCE_LEN];
    /* dated prices of the preset ("prices"); a run or sweep picks one by
     * name or date (lp_system_pick_price), else price_per_gpu_hour_usd */
    int nprices;
    struct lp_price {
        char name[32]; /* e.g. "cudo-2024" */
        char date[16]; /* e.g. "2024-06" */
        double usd_per_gpu_hour;
    } prices[LP_MAX_PRICES];
    int price_pick; /* 1 + the index of the picked price; 0: price_per_gpu_hour_usd as loaded */
};

struct lp_parallel {
    int tp, pp, dp, cp, ep, vp;
    int micro_batch;
    bool sequence_parallel;
    enum lp_recompute recompute;
    int zero; /* 0..3; 1 = distributed optimizer */
    enum lp_schedule schedule;
};

/* Framework behaviour; each field defaults from the framework and may be
 * overridden in the run description (see docs/frameworks.md). */
struct lp_framework_opts {
    enum lp_framework kind;
    bool dp_overlap;           /* gradient reduction overlapped with backward */
    bool tp_overlap;           /* TP collectives overlapped with GEMMs */
    bool pp_overlap;           /* p2p overlapped with compute */
    bool param_gather_overlap; /* ZeRO-3 / FSDP / distopt all-gathers prefetched */
    bool fused_kernels;        /* fused bias+GeLU, bias+dropout+add, fused LN, fused Adam */
    double bucket_bytes;       /* DP gradient bucket size */
    double step_overhead_s;    /* per-iteration host/launch overhead */
    double host_op_s;          /* host dispatch time per kernel launch (eager PyTorch) */
    double host_overlap;       /* p of the smooth max (kernels^p + host^p)^(1/p): 1 = serial */
    bool zero3_per_tensor;     /* ZeRO-3 gathers/reduce-scatters one collective per parameter
                                  tensor (DeepSpeed 2021) instead of one per layer */
    enum lp_xent xent;         /* the loss kernels */
    enum lp_moe_impl moe_impl; /* how the experts run */
};

/* Which fused attention kernel runs when flash_attention is set (the
 * run description's training.attention; docs/simulator.md). */
enum lp_attention {
    LP_ATTENTION_FLASH2 = 0, /* FlashAttention-2 / cuDNN fused attention */
    LP_ATTENTION_FLASH1,     /* FlashAttention v1 (CUDA) */
    LP_ATTENTION_TRITON,     /* Triton FlashAttention (MPT attn_impl "triton") */
    LP_ATTENTION_COUNT
};

#define LP_DATASET_BINS 32

struct lp_training {
    int64_t global_batch; /* sequences per iteration */
    enum lp_prec precision;
    bool flash_attention;        /* fused attention; false: unfused (softmax in HBM) */
    enum lp_attention attention; /* the fused kernel, when flash_attention */
    double tokens;               /* token budget for the cost projection; 0 = none */
    double tokens_per_param;     /* > 0: budget = this x the model's parameters (Hoffmann et
                                    al. 2022: ~20 for compute-optimal training); overrides tokens */
    /* Fine-tuning with LoRA adapters (Hu et al. 2021) on every linear layer of
     * the blocks: 0 = train all weights. The base weights are frozen (no
     * weight gradients, gradients or optimizer state) and stored in
     * lora_base_bits (16, 8 or 4: QLoRA, Dettmers et al. 2023). */
    int lora_rank;
    int lora_base_bits;
    enum lp_lora_targets lora_targets;
    double lora_dropout; /* PEFT lora_dropout: > 0 adds a dropout kernel per adapter */
    /* Dataset-shaped fine-tuning (training.dataset): queries of a length
     * distribution (bins of lengths and their fractions), epochs. A batch
     * is padded to its longest query (dynamic padding); the cost projection
     * is for queries x epochs. nbins = 0: none (model.seq_len is used). */
    struct lp_dataset {
        double queries, epochs;
        int nbins;
        int pad_multiple;             /* padded lengths round up to this (1 = none) */
        int len[LP_DATASET_BINS];     /* tokens, ascending */
        double frac[LP_DATASET_BINS]; /* fractions of the queries, summing to 1 */
    } dataset;
};

struct lp_run {
    struct lp_model model;
    struct lp_system system;
    struct lp_parallel par;
    struct lp_training train;
    struct lp_framework_opts fw;
};

/* Name tables (stable spellings used by JSON, HDF5 and CLI). */
const char *lp_prec_name(enum lp_prec p);
const char *lp_recompute_name(enum lp_recompute r);
const char *lp_schedule_name(enum lp_schedule s);
const char *lp_framework_name(enum lp_framework f);
const char *lp_xent_name(enum lp_xent x);
/* "flash2", "flash1", "triton", or "unfused" when !flash */
const char *lp_attention_name(bool flash, enum lp_attention a);
int lp_prec_parse(const char *s, enum lp_prec *out);
int lp_recompute_parse(const char *s, enum lp_recompute *out);
int lp_schedule_parse(const char *s, enum lp_schedule *out);
int lp_framework_parse(const char *s, enum lp_framework *out);

/* Bytes per element of a precision (fp8 = 1). */
double lp_prec_bytes(enum lp_prec p);

/* Documented defaults of a framework (docs/frameworks.md). */
void lp_framework_defaults(enum lp_framework kind, struct lp_framework_opts *out);

/* Select a dated price of the system by name or date: sets
 * price_per_gpu_hour_usd. LP_ENOTFOUND when the system has none such. */
int lp_system_pick_price(struct lp_system *s, const char *name_or_date);

/* Sequence length of a batch of b queries of the dataset, padded to its
 * longest query: the expected value (worst = false) or the longest
 * (worst = true: the batch that sets the memory). 0 without a dataset. */
double lp_dataset_batch_len(const struct lp_dataset *d, int b, bool worst);

const char *lp_moe_impl_name(enum lp_moe_impl m);
const char *lp_lora_targets_name(enum lp_lora_targets t);

/* Parameter count of the whole model (embedding included once if tied). */
double lp_model_params(const struct lp_model *m);

#ifdef __cplusplus
}
#endif

#endif
