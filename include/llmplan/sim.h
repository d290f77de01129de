/* The simulator: time, memory and cost of one training iteration of one
 * configuration. Pure, deterministic, and allocation-free per call: the
 * evaluator (struct lp_sim) is created once per process and reused for
 * millions of configurations; it memoises per-layer operator costs by the
 * shape-determining part of a configuration. */
#ifndef LLMPLAN_SIM_H
#define LLMPLAN_SIM_H

#include "llmplan/config.h"
#include "llmplan/profile.h"
#include "llmplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Why a configuration is infeasible. Stable codes: they are stored in
 * sweep.h5 (reason column) and documented in docs/formats.md. */
enum lp_reason {
    LP_REASON_NONE = 0,
    LP_REASON_OOM,       /* memory per GPU exceeds capacity */
    LP_REASON_GPU_COUNT, /* tp*pp*dp*cp != GPUs, or > GPUs asked */
    LP_REASON_TP_HEADS,  /* tp does not divide heads (or kv heads) */
    LP_REASON_TP_FFN,    /* tp does not divide ffn / vocab padding */
    LP_REASON_PP_LAYERS, /* pp*vp does not divide layers */
    LP_REASON_BATCH,     /* micro_batch*dp does not divide global batch */
    LP_REASON_CP_SEQ,    /* cp does not divide the sequence (2*cp chunks) */
    LP_REASON_EP,        /* ep does not divide experts, or ep > dp*cp, or dense model with ep>1 */
    LP_REASON_SCHEDULE,  /* interleaved without vp>1, vp>1 without interleaved, m % pp */
    LP_REASON_SP,        /* sequence parallel requires tp > 1 */
    LP_REASON_ZERO,      /* zero stage not supported with this config */
    LP_REASON_PRECISION, /* GPU has no tensor-core peak for this precision */
    LP_REASON_TP_NODE,   /* tp larger than a node */
    LP_REASON_RANGE,     /* tp*pp*dp*cp > LP_MAX_GPUS, or micro-batches*vp > LP_MAX_MICROBATCHES */
    LP_REASON_NUMERIC,   /* the simulated time or cost is not a finite positive number */
    LP_REASON_FRAMEWORK, /* an option or layout the framework does not run as modelled
                            (rules.h enum lp_fw_gap) */
    LP_REASON_COUNT
};

/* The largest GPU count tp*pp*dp*cp of a configuration (2^24: every product
 * of parallel degrees then fits an int), and the largest number of
 * micro-batch chunks (micro-batches x vp) of one iteration (INT_MAX: the
 * schedule counts them in int). Beyond them a configuration is refused with
 * LP_REASON_RANGE; the loaders refuse such input where they read it. */
#define LP_MAX_GPUS (1 << 24)
#define LP_MAX_MICROBATCHES 2147483647

const char *lp_reason_name(enum lp_reason r);

struct lp_breakdown {
    double compute_s;         /* forward+backward(+recompute) compute on the critical stage */
    double tp_comm_s;         /* exposed TP/CP/EP communication (ZeRO-3 gathers excluded) */
    double pp_bubble_s;       /* pipeline idle time of the critical stage */
    double pp_comm_s;         /* exposed p2p */
    double dp_comm_exposed_s; /* DP / ZeRO collectives not hidden by backward */
    double optimizer_s;       /* optimizer step */
    /* exposed ZeRO-3 / FSDP parameter all-gathers (and FSDP's gradient
     * reduce-scatters) inside the forward and backward passes; a part of
     * the breakdown since sweep.h5 format 2 (before, inside tp_comm_s) */
    double zero3_gather_s;
};

struct lp_memory {
    double weights_bytes;
    double grads_bytes;
    double optimizer_bytes;
    double activations_bytes;
    double temp_bytes; /* logits, collective buffers, workspace */
    double total_bytes;
};

/* Operator classes of the per-layer breakdown. */
enum lp_op_class {
    LP_OPC_GEMM = 0, /* linear layers (and LoRA adapters) */
    LP_OPC_ATTN,     /* attention core */
    LP_OPC_MEM,      /* memory-bound kernels: norms, activations, dropout, residual, rotary */
    LP_OPC_OVERHEAD, /* the framework's per-kernel overhead */
    LP_OPC_COMM,     /* TP / SP / CP / EP collectives on the critical path */
    LP_OPC_COUNT
};
const char *lp_op_class_name(enum lp_op_class c);

struct lp_result {
    bool feasible;
    enum lp_reason reason;
    double reason_a, reason_b; /* numbers for the message, e.g. needed / capacity bytes */
    double iteration_time_s;
    double tokens_per_s;
    double model_flops; /* per iteration, Megatron model-FLOP formula (sim.c) */
    double model_tflops_per_gpu;
    double mfu;
    double memory_per_gpu_bytes;
    struct lp_breakdown breakdown;
    struct lp_memory memory;
    double time_days;
    double gpu_hours;
    double cost_usd;
    double cost_per_iteration_usd;
    /* training tokens per dollar (Ashkboos et al. 2024's metric): tokens of
     * one iteration / its cost; 0 when the system has no price */
    double tokens_per_usd;
    /* the loss (nats per token) the model reaches on the run's token budget,
     * under the fit a sweep's "loss" objective names (set by llmplan search,
     * include/llmplan/loss.h); 0 = not computed */
    double loss;
    /* exposed ZeRO-3 / FSDP collectives of one micro-batch's forward and
     * backward passes on a stage (every chunk holds 1/vp of them): the
     * breakdown's zero3_gather_s is micro-batches x their sum */
    double zero3_fwd_s, zero3_bwd_s;
    int gpus;
    int microbatches;
    /* one transformer layer (an MoE layer when every layer is MoE), one
     * micro-batch, one rank, by operator class: forward and backward
     * (recomputation excluded) */
    double layer_fwd_s[LP_OPC_COUNT];
    double layer_bwd_s[LP_OPC_COUNT];
    /* the weight-gradient part of layer_bwd_s: a zero-bubble W pass */
    double layer_wgrad_s[LP_OPC_COUNT];
    /* sequences (fine-tuning queries) per second; the sequence length a
     * batch ran with (with training.dataset: the expected padded length) */
    double queries_per_s;
    double seq_len;
    /* stage breakdown of one iteration on the critical pipeline stage
     * (Xia et al. 2024's forward / backward / optimizer): forward and
     * backward compute (backward with its recomputation); per layer kind,
     * forward + backward + recomputation: attention blocks, Mamba
     * blocks, MoE blocks, dense MLP blocks, embedding and logits/loss */
    double stage_fwd_s, stage_bwd_s;
    double kind_attn_s, kind_mamba_s, kind_moe_s, kind_mlp_s, kind_edge_s;
    double kind_norm_s; /* the norms' kernels, a part of the mixer and MoE / MLP blocks */
};

/* The cost projection of a feasible result (src/core/bill.c):
 * cost_per_iteration_usd, and for a token budget (or the training
 * dataset) time_days, gpu_hours and cost_usd, with the system's billing,
 * energy and goodput settings. budget_tokens: 0 = none. */
void lp_bill_project(const struct lp_run *r, double budget_tokens, struct lp_result *res);
/* The token budget of a run: training.tokens_per_param x the model's
 * parameters when given, else training.tokens (0 = none). */
double lp_bill_budget_tokens(const struct lp_run *r);
/* The fraction of wall time that is progress under the system's goodput
 * model (Young 1974 / Daly 2006 first order); 1 when not modelled. */
double lp_bill_goodput(const struct lp_system *sys, int gpus);

/* Human-readable reason: "out of memory: 93.1 GiB > 80.0 GiB". */
void lp_result_reason(const struct lp_result *r, char *buf, size_t len);

struct lp_sim;

int lp_sim_create(const struct lp_cost_model *cm, struct lp_sim **out, struct lp_err *err);
void lp_sim_destroy(struct lp_sim **s);

/* What a simulator's pipeline schedules cost since it was created (issue
 * #20: where a sweep's time goes, by a command): schedules solved, those
 * the memo answered instead, the operations of the solved ones and, of
 * those, the ones the exact steady-state shortcuts extrapolated. Sums over
 * simulators add (llmplan search sums its ranks'). */
struct lp_sched_stats {
    uint64_t solved, memo, ops, extrapolated;
};
void lp_sim_sched_stats(const struct lp_sim *s, struct lp_sched_stats *out);

/* Structural validity only (divisibility, counts): cheap, no costs. */
enum lp_reason lp_sim_validate(const struct lp_run *run);

/* Memory per GPU (also a lower bound usable before the full simulation). */
void lp_sim_memory(const struct lp_run *run, struct lp_memory *mem);

/* Activation bytes one layer keeps for one micro-batch on one rank
 * (Korthikanti et al. 2022 Sec 4, generalised; docs/simulator.md). */
double lp_sim_layer_activation_bytes(const struct lp_run *run);

/* The largest micro-batch (sequences per GPU) whose memory fits the GPU,
 * the run's other settings kept (with training.dataset, for its longest
 * queries); 0 when not even one fits or the configuration is invalid. */
int lp_sim_max_batch(const struct lp_run *run);

/* Evaluate one configuration. Never fails for an infeasible configuration
 * (that is a result); never allocates. */
void lp_sim_run(struct lp_sim *s, const struct lp_run *run, struct lp_result *res);

/* Bounds on lp_sim_run's result without the pipeline-schedule solve (issue
 * #20: a sweep's pruning). LP_BOUND_EXACT: *res is lp_sim_run's result (the
 * configuration is refused before any timing: invalid, out of memory).
 * LP_BOUND_LOWER: *res is feasible, its memory exact, its iteration time,
 * costs, time_days and gpu_hours lower bounds and its tokens_per_s, mfu and
 * tokens_per_usd upper bounds of lp_sim_run's when that is feasible (each a
 * monotone function of the time: sim.c, project). LP_BOUND_NONE: the
 * bound's numbers are unsound (an absurd profile): no bound. The breakdown
 * is not filled. */
enum lp_bound { LP_BOUND_EXACT, LP_BOUND_LOWER, LP_BOUND_NONE };
enum lp_bound lp_sim_bound(struct lp_sim *s, const struct lp_run *run, struct lp_result *res);

/* lp_sim_run's result for the run lp_sim_bound has just bounded, from the
 * work the bound did (everything up to the pipeline schedule): the same
 * floating-point operations in the same order, so a bit-identical result
 * (issue #20: a configuration the pruning keeps is not simulated twice).
 * `run` must be the same object, unchanged, with no other simulation on `s`
 * in between; otherwise (a different object or layout) it runs lp_sim_run. */
void lp_sim_finish(struct lp_sim *s, const struct lp_run *run, struct lp_result *res);

/* Timeline of the simulated iteration, for --trace. Events are appended by
 * lp_sim_trace into a caller-provided buffer. */
enum lp_event_kind {
    LP_EV_FWD = 0,
    LP_EV_BWD,
    LP_EV_RECOMPUTE,
    LP_EV_P2P,
    LP_EV_TP,
    LP_EV_DP,
    LP_EV_OPT,
    LP_EV_WGRAD,  /* zero-bubble weight-gradient pass */
    LP_EV_DP_COLL /* one data-parallel collective (a bucket, an FSDP unit): `coll`, `unit` */
};
/* What an LP_EV_DP_COLL event is (sim_dp.c's accounting). */
enum lp_dp_coll {
    LP_DPC_ALLREDUCE = 0,    /* gradient bucket all-reduce (DDP, Megatron) */
    LP_DPC_REDUCESCATTER,    /* gradient bucket reduce-scatter (ZeRO-1/2) */
    LP_DPC_PARAM_GATHER,     /* ZeRO-1/2 parameter all-gather, the part not hidden */
    LP_DPC_PARAM_GATHER_HID, /* the same, hidden behind the forward passes */
    LP_DPC_UNIT_GATHER,      /* FSDP: one wrapped unit's all-gather (unit = block, layers = root) */
    LP_DPC_UNIT_REDUCE,      /* FSDP: one unit's gradient reduction */
    LP_DPC_EMB_SYNC,         /* tied embeddings' all-reduce between first and last stage */
    LP_DPC_CONTENTION,       /* compute slowed while hidden collectives hold NCCL's SMs */
    LP_DPC_COPY_BACK,        /* DDP: the reduced buckets copied back into the gradients */
    LP_DPC_COUNT
};
struct lp_event {
    int stage;  /* pipeline rank */
    int stream; /* 0 compute, 1 communication */
    int micro;  /* micro-batch (-1 for none) */
    int chunk;  /* virtual stage (interleaving) */
    enum lp_event_kind kind;
    double start_s, dur_s;
    enum lp_dp_coll coll; /* LP_EV_DP_COLL: which collective */
    int unit;             /* LP_EV_DP_COLL: bucket or wrapped unit (-1: none) */
    int units;            /* LP_EV_DP_COLL: buckets or units of its kind */
};

/* One layer's operator spans in the order its kernels run: the layer of
 * layer_fwd_s / layer_bwd_s, its blocks' runs of one operator class
 * (sim_workload.c). Forward: each block's exposed host time, its kernels
 * in issue order with its exposed collectives after its row-parallel
 * (output) linear, its residual and dropout kernels last; backward: the
 * same reversed. `wgrad` marks weight-gradient GEMMs and their host time
 * (a zero-bubble W pass). A block whose kernels the simulator does not
 * accumulate one by one (MoE experts) keeps class order. */
#define LP_OP_ORDER_MAX 96
struct lp_op_seg {
    enum lp_op_class cls;
    bool wgrad;
    double t;
};
struct lp_op_order {
    int n_fwd, n_bwd;
    struct lp_op_seg fwd[LP_OP_ORDER_MAX], bwd[LP_OP_ORDER_MAX];
};

/* Simulate and record up to cap events; *n gets the number written; when
 * `order` is not NULL, also the shown layer's kernel order. */
int lp_sim_trace(struct lp_sim *s, const struct lp_run *run, struct lp_result *res,
                 struct lp_event *ev, int cap, int *n, struct lp_op_order *order,
                 struct lp_err *err);

#ifdef __cplusplus
}
#endif

#endif
