/* The objects a simulation is described by: model, GPU, system, parallel
 * configuration, training settings and framework behaviour. Plain structs of
 * fixed size (no pointers), so that a configuration can be copied, hashed and
 * decoded in the hot path without allocation. Loaded from JSON by src/io. */
#ifndef LLMPLAN_CONFIG_H
#define LLMPLAN_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LP_NAME_LEN 64
#define LP_PROFILE_PATH_LEN 256
#define LP_SOURCE_LEN 384

/* Training precisions. fp8 is per-tensor scaled FP8 (E4M3/E5M2, Transformer
 * Engine; training.fp8_scaling says how the scale is found); mxfp8 and nvfp4
 * are block-scaled (OCP MX: 32 elements share an E8M0 scale; NVFP4: 16
 * elements share an E4M3 scale, plus a per-tensor fp32 scale). */
enum lp_prec { LP_FP32 = 0, LP_FP16, LP_BF16, LP_FP8, LP_MXFP8, LP_NVFP4, LP_PREC_COUNT };
/* The precisions a kernel profile holds tables for (fp32..fp8): block-scaled
 * GEMMs are looked up in the fp8 tables (lp_prec_table) and scaled by the
 * GPU's peak ratio (docs/profile-format.md). */
#define LP_PREC_TABLES 4
/* How fp8 finds its per-tensor scale (Transformer Engine recipes). */
enum lp_fp8_scaling {
    LP_FP8_DELAYED = 0, /* amax history of earlier steps: amax fused into the cast */
    LP_FP8_CURRENT,     /* amax of this tensor: one more pass over it before the cast */
    LP_FP8_SCALING_COUNT
};
enum lp_act { LP_ACT_GELU = 0, LP_ACT_SWIGLU };
enum lp_norm { LP_NORM_LAYERNORM = 0, LP_NORM_RMSNORM };
enum lp_pos { LP_POS_LEARNED = 0, LP_POS_ROTARY, LP_POS_ALIBI, LP_POS_NONE };
/* their value counts (no COUNT enumerator: switches over them stay exhaustive) */
#define LP_ACT_COUNT (LP_ACT_SWIGLU + 1)
#define LP_NORM_COUNT (LP_NORM_RMSNORM + 1)
#define LP_POS_COUNT (LP_POS_NONE + 1)
enum lp_recompute {
    LP_RECOMPUTE_NONE = 0,
    LP_RECOMPUTE_SELECTIVE,
    LP_RECOMPUTE_FULL,
    LP_RECOMPUTE_COUNT
};
/* What a selective recomputation redoes in the backward: Megatron-Core's
 * recompute_modules (transformer_config.py; transformer_layer.py,
 * attention.py, multi_latent_attention.py, mlp.py, moe/experts.py,
 * moe/moe_layer.py). No bit set under "selective" means Megatron's default,
 * the attention core alone. */
enum lp_rc_module {
    LP_RC_CORE_ATTN = 1 << 0,   /* the attention core (checkpoint_core_attention) */
    LP_RC_MOE_ACT = 1 << 1,     /* the experts' activation function */
    LP_RC_LAYERNORM = 1 << 2,   /* norms that are modules of their own (not fused into a linear) */
    LP_RC_MLA_UP_PROJ = 1 << 3, /* MLA's up projections and rotary embedding */
    LP_RC_MLP = 1 << 4,         /* the dense MLP block */
    LP_RC_MOE = 1 << 5,         /* the whole MoE block, its dispatch and combine too */
    LP_RC_SHARED_EXPERTS = 1 << 6, /* the shared experts */
    /* not a Megatron module: torchtitan's op-level selective checkpointing
     * of each transformer block (selective_ac_option "op"), a policy of its
     * own, given alone; attention and dense MLP blocks only */
    LP_RC_OP = 1 << 7
};
#define LP_RC_MODULES 8
/* "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe",
 * "shared_experts", "op" for bit i */
const char *lp_rc_module_name(int i);
/* Which layers a full recomputation covers (Megatron recompute_method with
 * recompute_num_layers N): uniform checkpoints groups of N layers, every
 * layer redone; block redoes the first N layers of each pipeline chunk and
 * keeps the others' activations. */
enum lp_rc_method { LP_RC_UNIFORM = 0, LP_RC_BLOCK, LP_RC_METHOD_COUNT };
const char *lp_rc_method_name(enum lp_rc_method m);
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
    LP_FW_FSDP, /* PyTorch FSDP1 under Composer + llm-foundry (its host time fitted there) */
    LP_FW_HF, /* Hugging Face Transformers + PEFT + bitsandbytes in eager PyTorch (LLaMA-Factory) */
    LP_FW_DDP,   /* PyTorch DistributedDataParallel: bucketed all-reduce during backward, AMP */
    LP_FW_FSDP1, /* PyTorch FSDP1 in a plain training loop (fms-fsdp): no Composer, not fitted */
    LP_FW_FSDP2, /* PyTorch FSDP2 fully_shard as torchtitan applies it: per-parameter
                    sharding, copy-in / copy-out, not fitted */
    LP_FW_COUNT
};

/* The PyTorch FSDP family (fsdp, fsdp1, fsdp2): the zero stage is the
 * sharding strategy and lp_torch_dp plays the units out (sim_dp.c). */
static inline bool lp_fw_is_fsdp(enum lp_framework k)
{
    return k == LP_FW_FSDP || k == LP_FW_FSDP1 || k == LP_FW_FSDP2;
}

/* The frameworks whose host time per kernel (host_op_us) is derived from
 * published measurements of eager PyTorch's per-op host cost rather than
 * fitted: DDP, fms-fsdp's FSDP1 and torchtitan's FSDP2, stacks with few or
 * no rows in the validation set (ddp: the FlashAttention repository's 5). The
 * one rule of the defaults (config.c lp_framework_defaults_cal) and the
 * calibration file's loader (calib_json.c refuses them, so scripts/calibrate
 * must fit none of them). */
static inline bool lp_fw_host_derived(enum lp_framework k)
{
    return k == LP_FW_DDP || k == LP_FW_FSDP1 || k == LP_FW_FSDP2;
}

/* Host time per kernel of an eager PyTorch training step, derived term by
 * term from published measurements (config.c, docs/frameworks.md "Host time
 * of eager PyTorch"): not fitted on any row. */
double lp_eager_host_op_s(void);

/* The least ZeRO stage framework k runs: FSDP2's fully_shard always shards
 * (its one choice, reshard_after_forward, is zero 3 or 2; no NO_SHARD, no
 * ZeRO-1). The one rule of both a run's parse (json_load.c, an error naming
 * parallel.zero) and a sweep's validity (rules.c, the walk skips it). */
static inline int lp_fw_min_zero(enum lp_framework k)
{
    return k == LP_FW_FSDP2 ? 2 : 0;
}

/* Whether framework k at ZeRO stage zero runs fw.hybrid_shard: it is an FSDP
 * sharding strategy, HYBRID_SHARD (zero 3) or _HYBRID_SHARD_ZERO2 (zero 2)
 * (torch/distributed/fsdp/api.py ShardingStrategy; FSDP2: fully_shard on a
 * 2-D (replicate, shard) mesh), with no NO_SHARD form; Megatron, DeepSpeed,
 * DDP and hf have no such option, and lp_torch_dp would ignore it there. The
 * one rule of a run's parse (json_load.c, an error naming
 * framework.hybrid_shard) and a sweep's walk (rules.c fw_hybrid). */
static inline bool lp_fw_hybrid_runs(enum lp_framework k, int zero)
{
    return lp_fw_is_fsdp(k) && zero >= 2;
}

/* MoE token dispatch between EP ranks (framework option "moe_dispatcher"). */
enum lp_dispatcher {
    LP_DISPATCH_ALLTOALL = 0, /* NCCL all-to-all of every routed copy (Megatron-Core alltoall) */
    LP_DISPATCH_HYBRIDEP,     /* one copy per destination node over the network, fanned out
                                 over NVLink (Megatron-Core flex dispatcher, HybridEP/DeepEP) */
    LP_DISPATCH_COUNT
};

/* Parts of a layer replayed from CUDA graphs (framework option "cuda_graphs",
 * Megatron-Core cuda_graph_scope): their kernels cost the host one graph
 * launch instead of one dispatch each. */
enum lp_graph_scope {
    LP_GRAPH_ATTN = 1 << 0,       /* the attention block */
    LP_GRAPH_MAMBA = 1 << 1,      /* the Mamba block */
    LP_GRAPH_MOE_ROUTER = 1 << 2, /* the MoE router and the dispatch preprocessing */
    LP_GRAPH_MOE = 1 << 3         /* the whole MoE block (capacity routing only) */
};
#define LP_GRAPH_SCOPES 4
/* "attn", "mamba", "moe_router", "moe" for scope bit i */
const char *lp_graph_scope_name(int i);

/* How the loss over the vocabulary is computed (framework option
 * "cross_entropy"; docs/frameworks.md). */
enum lp_xent {
    LP_XENT_FP32 = 0, /* logits cast to fp32, then max/sub/exp/sum/div kernels (Megatron) */
    LP_XENT_FUSED,    /* one fused kernel each way (Apex xentropy, FA repo, TE) */
    LP_XENT_NATIVE,   /* PyTorch F.cross_entropy on the logits' dtype */
    LP_XENT_UPCAST,   /* Transformers: logits.float(), a shifted contiguous copy, then
                         F.cross_entropy on fp32 */
    LP_XENT_FLOAT,    /* torchtitan: F.cross_entropy(pred.float()), no shifted copy
                         (the labels come shifted) */
    LP_XENT_COUNT
};

struct lp_moe {
    int experts; /* 0 = dense model */
    int top_k;
    int ffn_hidden;
    int layer_freq; /* layer i (from 0) is MoE iff i % layer_freq == 0 (Megatron) */
    double capacity_factor;
    int shared_experts;     /* experts every token passes through (DeepSeek) */
    int shared_ffn_hidden;  /* size of each shared expert */
    int first_dense_layers; /* the first k layers use a dense FFN of ffn_hidden */
    bool dropless;          /* no capacity limit: the busiest expert sets the time */
    double imbalance;       /* busiest expert's tokens over the mean (dropless), >= 1 */
    /* LatentMoE (Nemotron 3 Super): routed experts work at this width,
     * with projections from and back to hidden around them; 0 = hidden */
    int latent;
    /* clamp of the experts' GLU inputs (GPT-OSS swiglu_limit; Megatron
     * activation_func_clamp_value), 0 = none */
    double act_clamp;
};

/* How Transformer Engine's userbuffers overlap the row-parallel forwards'
 * reduce-scatter with their GEMM under tp_overlap (framework option
 * "tp_overlap_rs", TE's ub_cfgs method of proj_fprop / fc2_fprop;
 * sim_workload.c ub_exposed). */
enum lp_ub_rs {
    LP_UB_RS_PIPELINE = 0, /* "pipeline": TE initialize_ub's default */
    LP_UB_RS_RING,         /* "ring_exchange": peer-to-peer sends of partial results */
    LP_UB_RS_COUNT
};

/* How the experts of an MoE layer run (framework option "moe_impl"). */
enum lp_moe_impl {
    LP_MOE_GROUPED = 0, /* permute, grouped GEMMs, unpermute (Megatron-Core, MegaBlocks) */
    LP_MOE_EAGER,       /* one small set of kernels per expert in a Python loop, with host
                           synchronisations per expert (Transformers' MixtralSparseMoeBlock) */
    LP_MOE_SWITCH,      /* the same loop as Megatron-LM's SwitchMLP runs it (BlackMamba's
                           switch_mlp.py): one synchronisation per expert */
    LP_MOE_IMPL_COUNT
};

/* Which linear layers carry LoRA adapters (training.finetune.targets). */
/* Linears a per-module quantisation recipe may run in another precision
 * than the run's (Megatron-Core quantization/quant_config.py RecipeConfig:
 * glob matchers on the module's path, each naming a TEQuantizationParams
 * config; extensions/transformer_engine.py opens its autocast around the
 * module's forward). Its defaults (override_quantized_autocast true,
 * override_nonquantized_autocast false) change a module only inside a
 * quantised layer: the bf16 first / last layers stay bf16. */
enum lp_qmod {
    LP_QMOD_QKV = 0,  /* attention's linear_qkv */
    LP_QMOD_PROJ,     /* attention's linear_proj */
    LP_QMOD_IN_PROJ,  /* the Mamba mixer's in_proj */
    LP_QMOD_OUT_PROJ, /* the Mamba mixer's out_proj */
    LP_QMOD_LATENT,   /* LatentMoE's fc1_latent_proj and fc2_latent_proj */
    LP_QMOD_MTP,      /* every linear of the MTP modules ("mtp.*") */
    LP_QMOD_COUNT
};

enum lp_lora_targets {
    LP_LORA_ALL = 0, /* every linear layer of the blocks */
    LP_LORA_MOE,     /* the experts and the routers only (Xia et al. 2024) */
    LP_LORA_TARGETS_COUNT
};

/* Multi-head latent attention (DeepSeek-V2, Sec 2.1): queries through a
 * rank-q_lora_rank bottleneck (0 = a full query projection), keys and values
 * through a kv_lora_rank latent plus a shared rope key. Active when
 * kv_lora_rank > 0. */
struct lp_mla {
    int q_lora_rank;
    int kv_lora_rank;
    int qk_nope_head_dim;
    int qk_rope_head_dim;
    int v_head_dim;
};

/* Mamba state-space mixer: version 1 (Gu and Dao 2023, selective scan) or 2
 * (Dao and Gu 2024, SSD). 0 = the model has none. */
struct lp_mamba {
    int version;
    int d_state;
    int d_conv;
    int expand;   /* d_inner = expand * hidden */
    int head_dim; /* Mamba-2: channels per SSM head */
    int n_groups; /* Mamba-2: groups sharing B and C */
    int heads;    /* Mamba-2: SSM heads; d_inner = heads * head_dim when given */
    int dt_rank;  /* Mamba-1: rank of the dt projection (0 = ceil(hidden / 16)) */
};

/* A layer is one mixer and one FFN, either of which may be absent (Megatron's
 * hybrid models make each its own layer). */
enum lp_mixer { LP_MIX_NONE = 0, LP_MIX_ATTN, LP_MIX_ATTN_LOCAL, LP_MIX_MAMBA, LP_MIX_COUNT };
enum lp_ffn { LP_FFN_NONE = 0, LP_FFN_DENSE, LP_FFN_MOE, LP_FFN_COUNT };
#define LP_PATTERN_LEN 256

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
    int head_dim;         /* attention head dimension; 0 = hidden / heads */
    struct lp_mla mla;    /* multi-head latent attention (kv_lora_rank > 0) */
    int attention_window; /* sliding-window attention (tokens); 0 = full everywhere */
    int global_every;     /* with a window: layer i is full iff (i + 1) % global_every == 0 */
    struct lp_mamba mamba;
    /* Megatron's hybrid_override_pattern, one symbol per layer: 'M' Mamba,
     * '*' attention, '-' dense MLP, 'E' MoE; empty = attention + FFN layers */
    char layer_pattern[LP_PATTERN_LEN];
    int mtp_layers; /* multi-token prediction modules (DeepSeek-V3 Sec 2.2) */
    /* a norm (the model's kind) over head_dim on every query and key head
     * after the QKV projection (Qwen3; Megatron-Core qk_layernorm) */
    bool qk_norm;
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
     * the GPU sustains over a training run; 0 = the calibration's
     * (struct lp_calib, docs/calibration.md). The profiles hold short-burst
     * kernel times. */
    double sustained_frac;
    bool sustained_override; /* sustained_frac given on the command line (--sustained-frac) */
    char source[LP_SOURCE_LEN];
};

#define LP_MAX_PRICES 8

struct lp_link {
    double bw_Bps; /* per-GPU unidirectional bandwidth of the tier */
    double latency_s;
};

struct lp_system {
    char name[LP_NAME_LEN];
    struct lp_gpu gpu;
    int gpus_per_node;
    /* GPUs one scale-up fabric joins (the NVLink domain: 72 on GB200 NVL72);
     * groups inside it use `intra`. 0 = gpus_per_node. */
    int scale_up_gpus;
    /* GPUs of one job placed in each scale-up domain (Slurm topology/block's
     * --segment x gpus_per_node: NVIDIA's advice for large jobs on NVL72 is
     * 16 trays, 64 of the 72 GPUs); ranks fill a domain up to it in order.
     * 0 = scale_up_gpus. */
    int segment_gpus;
    /* a TP group may span scale-up domains, its collectives over the
     * network ("tp_across_nodes": vTrain's case study 1 runs TP 16 on
     * 8-GPU nodes); false: TP stays inside the NVLink domain (rule tp_node) */
    bool tp_across_nodes;
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
    /* the kernel profile of this system ("profile": a file, "synth" or
     * "roofline"); "" = data/profiles/<gpu>.h5 (src/io/cost_model.c) */
    char profile[LP_PROFILE_PATH_LEN];
    /* the bill (src/core/bill.c; all opt-in, 0 = not modelled) */
    bool billing_per_node; /* "billing": "node" (whole instances) or "gpu" */
    struct lp_energy {
        double pue, usd_per_kwh, power_w; /* power_w 0 = the GPU's tdp_w */
    } energy;
    struct lp_goodput {
        double mtbf_gpu_hours, checkpoint_s, restart_s;
    } goodput;
};
/* The GPUs of a job's consecutive ranks that share one scale-up domain:
 * segment_gpus, else scale_up_gpus, else the node. Every group placement
 * (TP/CP/EP/DP collectives, pipeline send/recv, tp_node) maps ranks to
 * domains by it. */
int lp_system_scale_up(const struct lp_system *s);
/* A TP group of tp ranks spans more than one scale-up domain (its
 * collectives over the network: only with the system's tp_across_nodes). */
bool lp_tp_spans_domains(const struct lp_system *s, int tp);

struct lp_parallel {
    int tp, pp, dp, cp, ep, vp;
    int etp; /* expert tensor parallelism: 0 = tp (Megatron-Core's default) */
    /* layers of the first and last virtual stage (Megatron's
     * decoder_first/last_pipeline_num_layers); 0 = the balanced split */
    int first_stage_layers, last_stage_layers;
    int micro_batch;
    bool sequence_parallel;
    enum lp_recompute recompute;
    unsigned recompute_modules;         /* LP_RC_* under "selective"; 0 = the attention core */
    enum lp_rc_method recompute_method; /* under "full" */
    int recompute_layers;               /* under "full": Megatron recompute_num_layers (0 = 1) */
    int zero;                           /* 0..3; 1 = distributed optimizer */
    enum lp_schedule schedule;
};

/* The fitted constants (docs/calibration.md): the training-run constants
 * scripts/calibrate fits on the calibration half of the validation rows, and
 * the kernel-level speed of older attention kernels. They live in
 * data/calibration.json, which scripts/calibrate writes with its provenance
 * and the io reads at start-up (lp_calib_load_default); lp_calib_builtin
 * gives the same values for a tree without that file and for tests. */
struct lp_calib {
    /* fraction of the kernel profile's burst GEMM/attention throughput a GPU
     * busy with them sustains over a training run, for a GPU preset without
     * its own sustained_frac (fitted on A100 rows) */
    double sustained_frac;
    /* p of the smooth maximum of kernel and host time (framework option
     * host_overlap's default) */
    double host_overlap;
    /* host time per kernel launch per framework (host_op_us's default) */
    double host_op_s[LP_FW_COUNT];
    /* speed of flash1 and triton (= FlashAttention v1, synth.c) relative to
     * FlashAttention-2 where a profile has no table of its own for them:
     * geometric mean of the A100 forward+backward TFLOP/s ratios of
     * validation/kernels.csv (FA1 K0026-K0118: 0.518 against FA2
     * K0044-K0136; OpenAI's Triton kernel K0038-K0130: 0.517) */
    double attn_old_ratio;
};
/* The values of the shipped data/calibration.json. */
void lp_calib_builtin(struct lp_calib *c);

/* Framework behaviour; each field defaults from the framework and may be
 * overridden in the run description (see docs/frameworks.md). */
struct lp_framework_opts {
    enum lp_framework kind;
    bool dp_overlap;             /* gradient reduction overlapped with backward */
    bool tp_overlap;             /* TP collectives overlapped with GEMMs */
    enum lp_ub_rs tp_overlap_rs; /* and how the row-parallel forwards' reduce-scatter is */
    bool tp_async_dgrad;         /* without SP: a column-parallel linear's data-gradient all-reduce
                                    runs beside its weight-gradient GEMM (Megatron's
                                    async_grad_allreduce / allreduce_dgrad) */
    bool pp_overlap;             /* p2p overlapped with compute */
    bool param_gather_overlap;   /* ZeRO-3 / FSDP / distopt all-gathers prefetched */
    bool fused_kernels;          /* fused bias+GeLU, bias+dropout+add, fused LN, fused Adam */
    bool fused_softmax;          /* unfused attention's scale, causal mask and softmax in one kernel
                                    (Megatron's FusedScaleMaskSoftmax) rather than eager PyTorch ops */
    bool fused_mlp;              /* a GELU MLP's activation in its GEMMs' epilogues: fc1 applies
                                    GELU and saves its input, fc2's data-gradient GEMM applies
                                    GELU's gradient (flash-attn FusedMLP, fused_dense_gelu_dense;
                                    sim_workload.c ffn_core) */
    double bucket_bytes;         /* DP gradient bucket size */
    bool mcore_buckets;          /* Megatron-Core's bucket rule instead of bucket_bytes: buckets of
                                    max(40M, 1M x dp) parameters, dense and expert buffers apart
                                    (sim_dp.c dp_buckets); set by the framework, cleared by an
                                    explicit bucket_MB */
    double step_overhead_s;      /* per-iteration host/launch overhead */
    double host_op_s;            /* host dispatch time per kernel launch (eager PyTorch) */
    double host_overlap;         /* p of the smooth max (kernels^p + host^p)^(1/p): 1 = serial */
    bool zero3_per_tensor;       /* ZeRO-3 gathers/reduce-scatters one collective per parameter
                                    tensor (DeepSpeed 2021) instead of one per layer */
    bool zero3_rank_copies;      /* and each such collective is given a list of world-size views:
                                    PyTorch 1.8/1.9 ProcessGroupNCCL copies each view out of / into
                                    a flat buffer (one copy kernel per rank, launched from the host)
                                    behind a torch.cuda.synchronize (DeepSpeed 2021 _allgather_param);
                                    sim_dp.c z3_rank_copies. DeepSpeed builds that list in a Python
                                    loop of narrow() per rank, after zero-filling the gathered
                                    tensor: sim_dp.c z3_list_build */
    enum lp_xent xent;           /* the loss kernels */
    bool ep_overlap;             /* EP all-to-alls hidden behind another micro-batch's compute
                                    (Megatron-Core overlap_moe_expert_parallel_comm, combined 1F1B) */
    enum lp_dispatcher dispatcher; /* how MoE tokens travel between EP ranks */
    int dispatcher_sms;            /* SMs the dispatch and combine kernels hold while they run
                                      (Megatron-Core moe_deepep_num_sms / moe_hybridep_num_sms);
                                      0: the dispatcher's default (sim_workload.c dispatch_sms) */
    unsigned cuda_graphs;          /* LP_GRAPH_* scopes captured in CUDA graphs */
    bool grad_fp32;                /* bf16/fp8 gradients accumulated and reduced in fp32 (Megatron's
                                      main_grad with grad_reduce_in_fp32) rather than in bf16 */
    bool optim_bf16;               /* the optimizer's master parameters and Adam moments in bf16
                                      (apex DistributedFusedAdam dtype=bf16, NeMo's optim.dtype):
                                      6 bytes per parameter instead of 12 */
    enum lp_moe_impl moe_impl;     /* how the experts run */
    /* FSDP HYBRID_SHARD (zero 3) / _HYBRID_SHARD_ZERO2 (zero 2): shard
     * within a node, replicate across nodes (docs/frameworks.md) */
    bool hybrid_shard;
    /* the trainer evaluates the model's training metrics on every
     * micro-batch's logits after its backward (Composer's Trainer with
     * llm-foundry's LanguageCrossEntropy and LanguagePerplexity: a
     * cross-entropy each under bf16 autocast; docs/frameworks.md) */
    bool train_metrics;
    /* gradient checkpointing re-enters autograd (torch.utils.checkpoint
     * use_reentrant=True, Megatron's CheckpointFunction): the checkpointed
     * forward runs under no_grad and keeps nothing, not even what a custom
     * autograd function holds outside save_for_backward (bitsandbytes'
     * ctx.tensors: hf_qlora_held_bytes; docs/frameworks.md) */
    bool ckpt_reentrant;
    /* non-reentrant checkpointing stops the recomputation at the last tensor
     * the backward needs (PyTorch 2.1+'s default; false for older PyTorch):
     * a block's final native linear is not recomputed (sim_workload.c
     * ckpt_early_stop_skips) */
    bool ckpt_early_stop;
    /* the calibration the defaults came from (its sustained_frac applies to
     * GPUs without their own: lp_run_sustained) */
    struct lp_calib cal;
};

/* Which fused attention kernel runs when flash_attention is set (the
 * run description's training.attention; docs/simulator.md). */
enum lp_attention {
    LP_ATTENTION_FLASH2 = 0, /* FlashAttention-2 / cuDNN fused attention */
    LP_ATTENTION_FLASH1,     /* FlashAttention v1 (CUDA) */
    LP_ATTENTION_TRITON,     /* Triton FlashAttention (MPT attn_impl "triton") */
    LP_ATTENTION_CUDNN,      /* cuDNN fused attention through Transformer Engine (Megatron-Core) */
    LP_ATTENTION_COUNT
};

#define LP_DATASET_BINS 32
/* How a fine-tuning batch is made of its dataset's queries
 * (training.dataset.batching):
 *  - LONGEST: b queries drawn at random, padded to the longest of them
 *    (DataCollatorForSeq2Seq / DataCollatorWithPadding, padding=True);
 *  - GROUPED: Hugging Face Trainer's group_by_length (LengthGroupedSampler
 *    of the step's b x accum queries): megabatches of mult x b x accum
 *    random queries (mult = min(queries / (4 b accum), 50), at least 1)
 *    sorted by length, each micro-batch b neighbours of one, padded to its
 *    longest;
 *  - PACKED: queries concatenated into rows of pack_len tokens, attention
 *    over the whole row (no per-query mask), no padding, pack_len / mean
 *    length queries per row (TRL's packing_strategy "wrapped"). */
enum lp_batching {
    LP_BATCHING_LONGEST,
    LP_BATCHING_GROUPED,
    LP_BATCHING_PACKED,
    LP_BATCHING_COUNT
};
const char *lp_batching_name(enum lp_batching b);

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
    enum lp_fp8_scaling fp8_scaling; /* precision fp8 only */
    /* Under a quantised precision (fp8, mxfp8, nvfp4): the first and last
     * decoder layers whose linears run in bf16 (Megatron-Core
     * first_last_layers_bf16 with num_layers_at_start_in_bf16 /
     * num_layers_at_end_in_bf16: fp8_utils.py / fp4_utils.py open no
     * quantisation autocast for them). No effect in bf16. */
    int bf16_first_layers, bf16_last_layers;
    /* Per-module precision inside the quantised layers (a Megatron-Core
     * quant_recipe of TEQuantizationParams, lp_qmod): 0 the run's, else an
     * lp_prec + 1 (lp_train_module_prec). */
    unsigned char module_prec[LP_QMOD_COUNT];
    enum lp_lora_targets lora_targets;
    double lora_dropout; /* PEFT lora_dropout: > 0 adds a dropout kernel per adapter */
    /* Dataset-shaped fine-tuning (training.dataset): queries of a length
     * distribution (bins of lengths and their fractions), epochs. A batch
     * is padded to its longest query (dynamic padding), or grouped by
     * length, or packed (lp_batching); the cost projection is for queries x
     * epochs. nbins = 0: none (model.seq_len is used). */
    struct lp_dataset {
        double queries, epochs;
        int nbins;
        int pad_multiple;             /* padded lengths round up to this (1 = none) */
        int max_len;                  /* the longest query (tokens; 0: the last bin's) */
        enum lp_batching batching;    /* how queries become a batch's rows */
        int pack_len;                 /* LP_BATCHING_PACKED: tokens per row */
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
/* The fraction of the profile's compute throughput the run's GPU sustains:
 * the GPU preset's sustained_frac, else the calibration's (fw.cal), else the
 * built-in one (a run not made by lp_framework_defaults*). */
double lp_run_sustained(const struct lp_run *r);
/* Where lp_run_sustained's value comes from. A fraction not the GPU's own
 * was fitted on other GPUs' rows (issue #16: such a constant must not apply
 * to a GPU silently): `llmplan simulate` names the source. */
enum lp_sustained_src {
    LP_SUSTAINED_GPU = 0,  /* the GPU preset's sustained_frac (or --sustained-frac) */
    LP_SUSTAINED_CALIB,    /* the run's calibration (data/calibration.json) */
    LP_SUSTAINED_BUILTIN,  /* the built-in calibration (lp_calib_builtin) */
    LP_SUSTAINED_OVERRIDE, /* the command line's --sustained-frac (gpu.sustained_override) */
    LP_SUSTAINED_SRC_COUNT
};
enum lp_sustained_src lp_run_sustained_src(const struct lp_run *r);
const char *lp_sustained_src_name(enum lp_sustained_src s);

/* Name tables (stable spellings used by JSON, HDF5 and CLI). */
const char *lp_prec_name(enum lp_prec p);
const char *lp_recompute_name(enum lp_recompute r);
const char *lp_schedule_name(enum lp_schedule s);
const char *lp_framework_name(enum lp_framework f);
const char *lp_xent_name(enum lp_xent x);
const char *lp_fp8_scaling_name(enum lp_fp8_scaling s);
const char *lp_dispatcher_name(enum lp_dispatcher d);
int lp_dispatcher_parse(const char *s, enum lp_dispatcher *out);
int lp_fp8_scaling_parse(const char *s, enum lp_fp8_scaling *out);
/* The profile table precision serving p (block-scaled formats: fp8). */
enum lp_prec lp_prec_table(enum lp_prec p);
/* "flash2", "flash1", "triton", or "unfused" when !flash */
const char *lp_attention_name(bool flash, enum lp_attention a);

/* The label of a preset with overrides (issue #17): "NAME[key=value,...]",
 * e.g. "mixtral-8x7b[seq_len=512]"; a run description that names it is
 * read back as {"preset": NAME, key: value, ...} (json_load.c), so a plan
 * re-simulates with the same model. lp_label_add appends key=value (a
 * second override goes inside the brackets); lp_label_number formats a
 * number so that strtod gives it back exactly. */
void lp_label_add(char *name, size_t len, const char *key, const char *value);
void lp_label_number(double v, char *buf, size_t len);
/* The model with another sequence length, labelled as an override. */
void lp_model_set_seq_len(struct lp_model *m, int seq_len);
int lp_prec_parse(const char *s, enum lp_prec *out);
int lp_recompute_parse(const char *s, enum lp_recompute *out);
int lp_schedule_parse(const char *s, enum lp_schedule *out);
int lp_rc_method_parse(const char *s, enum lp_rc_method *out);
int lp_framework_parse(const char *s, enum lp_framework *out);

/* Bytes per element of a precision (fp8 = 1, nvfp4 = 0.5; block scales not
 * counted). */
double lp_prec_bytes(enum lp_prec p);

/* Documented defaults of a framework (docs/frameworks.md), its fitted
 * constants (host_overlap, host_op_s) from cal, which out->cal keeps. */
void lp_framework_defaults_cal(enum lp_framework kind, const struct lp_calib *cal,
                               struct lp_framework_opts *out);
/* The same with the built-in calibration (lp_calib_builtin). */
void lp_framework_defaults(enum lp_framework kind, struct lp_framework_opts *out);

/* Select a dated price of the system: by name, by its exact date, or by
 * any other date (YYYY, YYYY-MM or YYYY-MM-DD) the price in effect then,
 * the latest dated on or before it. Sets price_per_gpu_hour_usd.
 * LP_ENOTFOUND when the system has none such. */
int lp_system_pick_price(struct lp_system *s, const char *name_or_date);

/* s is an ISO date of the year, month or day: YYYY, YYYY-MM, YYYY-MM-DD. */
bool lp_is_iso_date(const char *s);

/* Sequence length of a micro-batch of b queries of the dataset as its
 * batching makes it (lp_batching; accum micro-batches per step, which
 * group_by_length sorts together): the expected value (worst = false) or
 * the longest (worst = true: the batch that sets the memory). 0 without a
 * dataset. */
double lp_dataset_batch_len(const struct lp_dataset *d, int b, int accum, bool worst);
/* Queries per row of a batch: pack_len / mean length when packed, else 1. */
double lp_dataset_queries_per_row(const struct lp_dataset *d);

const char *lp_moe_impl_name(enum lp_moe_impl m);
const char *lp_ub_rs_name(enum lp_ub_rs m);
const char *lp_lora_targets_name(enum lp_lora_targets t);
/* training.module_precision's key of a module ("linear_qkv", ...). */
const char *lp_qmod_name(enum lp_qmod q);
/* The precision module q's GEMMs run in inside a quantised layer: its
 * training.module_precision, else the run's (no override outside a
 * quantised precision: TE's override_nonquantized_autocast false). */
enum lp_prec lp_train_module_prec(const struct lp_training *t, enum lp_qmod q);

/* Parameter count of the whole model (embedding included once if tied). */
double lp_model_params(const struct lp_model *m);

#ifdef __cplusplus
}
#endif

#endif
