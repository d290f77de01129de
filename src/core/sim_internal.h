/* Private parts of the simulator shared by its source files. */
#ifndef LLMPLAN_SIM_INTERNAL_H
#define LLMPLAN_SIM_INTERNAL_H

#include <string.h>

#include "llmplan/arch.h"
#include "llmplan/sim.h"

/* Cost of one transformer layer for one micro-batch on one rank, split into
 * compute (kernels) and communication that sits on the compute stream's
 * critical path unless overlapped. All in seconds. */
struct lp_layer_cost {
    double fwd_s;       /* forward kernels */
    double bwd_s;       /* backward kernels (dgrad + wgrad + elementwise bwd) */
    double recompute_s; /* forward work redone in backward by a selective recomputation */
    double comm_fwd_s;  /* TP / SP / CP / EP collectives in forward */
    double comm_bwd_s;  /* same, backward */
    double comm_recompute_s;
    /* what a full recomputation covering this layer redoes: its forward,
     * and the forward's collectives (sim.c decides which layers it covers) */
    double full_s, comm_full_s;
    double op_fwd[LP_OPC_COUNT], op_bwd[LP_OPC_COUNT]; /* by operator class */
    double wgrad_s;            /* the weight-gradient part of bwd_s (a zero-bubble W pass) */
    double op_w[LP_OPC_COUNT]; /* wgrad_s by operator class (a part of op_bwd) */
    /* userbuffers overlaps a pass had no room for (sim_workload.c UB_MAX):
     * a defect the tests assert never happens */
    int ub_dropped;
};

/* Extra work of the first (embedding) and last (logits + loss) stages, per
 * micro-batch. */
struct lp_edge_cost {
    double emb_fwd_s, emb_bwd_s;
    double head_fwd_s, head_bwd_s;
    double mtp_fwd_s, mtp_bwd_s; /* one MTP module beside its layer (last stage) */
};

/* Everything the shape-dependent part of a configuration determines. */
struct lp_shape_cost {
    /* each block a layer may have (arch.h); a layer costs its mixer's plus
     * its FFN's. Blocks the model does not use are zero. */
    struct lp_layer_cost mix[LP_MIX_COUNT];
    struct lp_layer_cost ffn[LP_FFN_COUNT];
    struct lp_edge_cost edge;
    double p2p_bytes;              /* activation sent between stages per micro-batch */
    struct lp_layer_cost attn;     /* the attention block alone (per layer-kind breakdown) */
    double norm_fwd_s, norm_bwd_s; /* one norm's kernels (without host time) */
};

/* The modules a run's selective recomputation redoes (LP_RC_*): those
 * named, or Megatron's default, the attention core; none unless the run
 * recomputes selectively. */
static inline unsigned lp_sim_rc_modules(const struct lp_run *r)
{
    if (r->par.recompute != LP_RECOMPUTE_SELECTIVE) return 0;
    return r->par.recompute_modules ? r->par.recompute_modules : (unsigned)LP_RC_CORE_ATTN;
}

/* The run's part of checkpointing's early stop (sim_workload.c
 * ckpt_early_stop_skips, which adds the block's own conditions: no TP, no
 * quantised GEMMs): a full recomputation under non-reentrant PyTorch 2.1+
 * checkpointing, each layer its own checkpoint, a framework whose linears
 * are native nn.Linear, no adapters, no dropout after fc2, no FusedMLP.
 * One rule for the cost and the memo key. */
static inline bool lp_sim_ckpt_early_stop(const struct lp_run *r)
{
    const enum lp_framework k = r->fw.kind;
    return r->par.recompute == LP_RECOMPUTE_FULL && !r->fw.ckpt_reentrant &&
           r->fw.ckpt_early_stop && (lp_fw_is_fsdp(k) || k == LP_FW_DDP || k == LP_FW_HF) &&
           r->train.lora_rank <= 0 && !r->fw.fused_mlp && !r->model.dropout &&
           (r->par.recompute_method == LP_RC_BLOCK || r->par.recompute_layers <= 1);
}

/* Key of the memo: the fields that change per-layer shapes or costs. */
struct lp_shape_key {
    uint64_t model_hash;
    uint64_t system_hash;
    int tp, cp, ep, mb;
    int sp, flash, prec, recompute, fused, xent;
    int lora_rank, lora_bits;
    int etp, fp8_scaling;
    unsigned char module_prec[LP_QMOD_COUNT]; /* training.module_precision */
    double host_op_s, host_overlap;
    double peak; /* the precision's peak (block-scaled GEMMs scale by it) */
    int moe_impl, lora_targets, dispatcher_sms;
    double lora_dropout, imbalance;
    double grad_accum; /* lp_sim_grad_accum_share */
    int padded;        /* lp_sim_batch_padded */
    /* the embedding's own accumulation (sim_workload.c edges): none when it
     * is tied to the head on a single stage */
    int tied_one_stage;
    int world; /* lp_sim_world */
};

/* Overlapped communication is not free: NCCL runs one CTA per channel on its
 * own SM, so while a collective overlaps compute the kernels have that many
 * fewer SMs. 16 channels is NCCL's usual ring/tree channel count on NVSwitch
 * nodes (stated, not fitted); the compute slowdown is hidden time x 16/SMs
 * (sim.c: the DP and ZeRO-3 collectives; sim_workload.c dispatch_sms: the
 * all-to-all dispatcher's overlapped all-to-alls). */
#define LP_NCCL_CHANNEL_SMS 16.0
#define LP_SIM_MEMO 512
#define LP_SCHED_MEMO 1024

/* Memo of solved schedules, keyed exactly on what the solution depends on:
 * p, m, v, the schedule, blocking sends, the first/last-stage extras, the
 * p2p time and the per-virtual-stage f, b (and, for zb, w), the latter as a
 * dictionary of the distinct (f, b, w) and each virtual stage's entry in it
 * (uniform pipelines have one entry; uneven splits two or three, in any
 * order). A pipeline with more than LP_SCHED_DIST distinct stages or more
 * than LP_SCHED_MEMO_VS virtual stages is solved without the memo. The key is
 * compared byte for byte, so a hit returns exactly what the solver would (a
 * hash collision cannot). */
#define LP_SCHED_DIST 8
#define LP_SCHED_MEMO_VS 512
struct lp_sched_stage {
    double f, b, w;
};
struct lp_sched_key {
    int p, m, v, kind, blocking, ndist;
    double ff, bf, fl, bl, c;
    struct lp_sched_stage dist[LP_SCHED_DIST];
    unsigned char idx[LP_SCHED_MEMO_VS]; /* [vs]: its entry in dist */
};
/* Layer kinds (a mixer and an FFN, arch.h) and the layer count up to which
 * the simulator keeps per-kind prefix counts. */
#define LP_KINDS (LP_MIX_COUNT * LP_FFN_COUNT)
#define LP_KIND_PREFIX_LAYERS 4096
/* Virtual stages (pp * vp) the schedule solver takes. */
#define LP_SCHED_MAX_VSTAGES LP_ARCH_MAX_VSTAGES
struct lp_sched_val {
    double end_first, end_last; /* finish of stage 0 / stage p-1 */
};

/* The busbw fraction of a collective of `bytes` over `n` ranks on `sys`'s
 * `tier` links, from a profile built for other links (sim_comm.c). */
double lp_coll_eff_on(const struct lp_cost_model *cm, const struct lp_system *sys, enum lp_coll op,
                      enum lp_tier tier, double bytes, int n);
/* NCCL's all-reduce tree on two nodes over its ring: the factor by which
 * the network bandwidth goes further (sim_comm.c) */
double lp_coll_tree2_gain(int n);
/* Megatron's groups of one kind: n ranks spaced `stride` apart in the rank
 * order (TP innermost, then CP, DP, PP), first ranks b * n * stride + q,
 * q < first, in a job of `world` ranks (0: unknown, as many blocks as
 * matter), on scale-up domains of G GPUs. Their layouts (the domains a
 * group spans, its fewest members on one: lp_group_span) depend on the
 * first rank mod G only; every group's step runs at once, so the step
 * takes the slowest: the largest cost(ctx, nodes, k) over the distinct
 * layouts (sim_comm.c). The one residue walk every placement shares. */
typedef double (*lp_layout_cost)(const void *ctx, int nodes, int k);
double lp_groups_slowest(int G, int n, int stride, int first, int world, lp_layout_cost cost,
                         const void *ctx);
/* The collective of a group of n ranks on `nodes` domains with at least k
 * members on each (sim_comm.c). Returns seconds. */
double lp_coll_time_placed(const struct lp_cost_model *cm, const struct lp_system *sys,
                           enum lp_coll op, double bytes, int n, int nodes, int k);
/* Collective over a group of `n` ranks spaced `stride` apart, one of
 * Megatron's groups of one kind (first ranks b * n * stride + q,
 * q < stride) in a job of `world` ranks (0: unknown, a large job: every
 * residue): the slowest group's time. Returns seconds. */
double lp_coll_time(const struct lp_cost_model *cm, const struct lp_system *sys, enum lp_coll op,
                    double bytes, int n, int stride, int world);
/* The same for groups whose first ranks are b * n * stride + q, q < first */
double lp_coll_time_at(const struct lp_cost_model *cm, const struct lp_system *sys, enum lp_coll op,
                       double bytes, int n, int stride, int first, int world);
/* The nodes of G GPUs a group r0 + i * stride (i < n) spans and its fewest
 * members on one of them */
void lp_group_span(int G, int n, int stride, int r0, int *nodes, int *k);
/* One send/recv step between neighbours of Megatron's groups of n ranks
 * spaced `stride` apart (a pipeline: n = pp, stride tp * cp * dp; a CP
 * ring: n = cp, stride tp) in a job of `world` ranks: the slowest pair's
 * time, across domains where a group spans more than one. */
double lp_p2p_time(const struct lp_cost_model *cm, const struct lp_system *sys, double bytes, int n,
                   int stride, int world);
/* The ranks of run r's job (tp * cp * dp * pp), 0 where that overflows an
 * int (a run the rules refuse) */
static inline int lp_sim_world(const struct lp_parallel *p)
{
    const double g = (double)p->tp * p->cp * p->dp * p->pp;
    return g >= 1 && g <= 2147483647.0 ? (int)g : 0;
}

void lp_shape_cost_compute(const struct lp_cost_model *cm, const struct lp_run *run,
                           struct lp_shape_cost *out);
/* The share of micro-batches whose weight gradients the framework adds into
 * the accumulated gradient in kernels of their own (sim_workload.c
 * ds_grad_accum: DeepSpeed's engine, ZeRO 0-1; bf16 every micro-batch, fp16
 * all but the first); 0 where it does not. The layer costs depend on it
 * (a key of the shape-cost memo). */
double lp_sim_grad_accum_share(const struct lp_run *r);
/* The kernel order of the layer made of mixer `mix` and FFN `ffn` (the
 * same computation as lp_shape_cost_compute, recorded). */
void lp_shape_cost_order(const struct lp_cost_model *cm, const struct lp_run *run, int mix, int ffn,
                         struct lp_op_order *out);

/* Pipeline schedule. Per-virtual-stage forward/backward time of one
 * micro-batch (virtual stage vs = chunk * p + stage: uneven pipelines give
 * each its own); p2p is the per-hop latency+transfer. */
struct lp_sched_in {
    int p, m, v;
    enum lp_schedule kind;
    const double *f; /* [p*v] forward time of virtual stage vs */
    const double *b; /* [p*v] backward time (incl. recompute) of virtual stage vs */
    const double *w; /* [p*v] zb only: the weight-gradient part of b (the W pass) */
    double f_first_extra, b_first_extra; /* embedding on stage 0, chunk 0 */
    double f_last_extra, b_last_extra;   /* logits+loss on stage p-1, last chunk */
    double p2p_s;
    bool p2p_blocking; /* the sender is busy during a send (no p2p overlap) */
    /* only stage_end_s and makespan_s are wanted (no trace, stage_busy_s
     * left unset): lp_sched_exact may then extrapolate 1F1B's periodic
     * regime (exactly: the ends are bit-identical) */
    bool ends_only;
};
struct lp_sched_out {
    double makespan_s;         /* time until the last backward finishes */
    double stage_end_s[1024];  /* finish of each stage's last op (p <= 1024) */
    double stage_busy_s[1024]; /* sum of op durations per stage */
};

/* Warm-up forwards of stage s (0 .. p-1) of schedule `kind` over m
 * micro-batches and v chunks per stage, before its first backward (1F1B:
 * p - s - 1; interleaved: 2 (p - s - 1) + (v - 1) p; GPipe: all m v), at
 * most m v. The stage then holds the activations of one more forward: the
 * memory model's in-flight count. */
int64_t lp_sched_warmup(enum lp_schedule kind, int p, int v, int64_t m, int s);

/* Frees the solvers' scratch kept in the simulator (zb's snapshots). */
void lp_sched_free(struct lp_sim *s);

/* Exact solution on the dependency graph; returns -1 if scratch is too small
 * (the caller then uses the closed form). ev/cap/nev optional (trace).
 * zb (v = 1): every stage runs its 1F1B sequence of forward (F) and
 * input-gradient (B) passes, and a pending weight-gradient pass (W) whenever
 * the next F/B's input has not arrived yet; remaining Ws at the end, in
 * global time order (without a trace by a worklist that makes the same
 * choices: sim_schedule.c zb_list). O(p v m) operations (zb's event loop:
 * O(p m log p)). */
/* Whether the exact solvers' scratch holds the schedule (else they return
 * -1 and the closed form stands in). */
bool lp_sched_exact_fits(const struct lp_sim *s, const struct lp_sched_in *in);
int lp_sched_exact(struct lp_sim *s, const struct lp_sched_in *in, struct lp_sched_out *out,
                   struct lp_event *ev, int cap, int *nev);
/* The reference solvers: the same schedules, written for clarity (a
 * division per operation; zb scans every stage per event, O(p^2 m)).
 * lp_sched_exact's results are bit-identical to theirs; tests and bench_sim
 * --reference use them. */
int lp_sched_exact_ref(struct lp_sim *s, const struct lp_sched_in *in, struct lp_sched_out *out,
                       struct lp_event *ev, int cap, int *nev);
int lp_sched_zb_ref(const struct lp_sched_in *in, struct lp_sched_out *out, double *fin_f,
                    double *fin_b, struct lp_event *ev, int cap, int *nev);

/* Closed form, for schedules too large for the exact solver's scratch: the
 * busiest stage's m micro-batches (its chunks and any embedding / loss
 * work, once per micro-batch) plus one micro-batch's pass through every
 * other stage (the fill and drain), and the p2p hops:
 * 1F1B/GPipe with uniform stages: (m + p - 1)(f + b) + 2(p - 1) p2p;
 * interleaved: m v (f + b) + (p - 1)(f + b) + 2(p - 1) p2p (Narayanan 2021,
 * Sec 2.2.2). Extras included. */
double lp_sched_closed_form(const struct lp_sched_in *in);

/* Lower bounds on the ends of the first and the last stage without solving
 * the schedule (lp_sim_bound, issue #20), for every schedule the exact
 * solvers run; busy_first / busy_last: each stage's operations summed (it
 * runs them one at a time). The last device cannot start before the first
 * forward pass has crossed virtual stages 0..p-2 (the fill, hops
 * included), it then runs every F and B pass of every micro-batch, and the
 * last of those is a B on virtual stage p-1 whose gradient must still cross
 * virtual stages p-2..0 (the drain; and stage 0's W under zb). With
 * uniform 1F1B or GPipe stages and no hops that is the solved end,
 * (m + p - 1)(f + b) (with hops a 1F1B stage may also wait in the steady
 * state, which the bound leaves out). Where the closed form stands in (scratch too small) only the
 * busy times bound it. Rounding: the solvers add in another order, so a solved end can fall an ulp
 * or so below a sum of the same durations (with no bubble at all, pp 1, it does); a finish time is
 * a chain of at most 4 p v m <= 2^22 additions (lp_sched_exact_fits), each rounding by at most
 * 2^-53 relative, the bound a few operations: solved ends are at least (1 - 2^-30) of it, which the
 * margin 2^-18 covers (tests/unit/test_sim_bound.c and test_sched_fast.c fail without it). */
void lp_sched_ends_bound(const struct lp_sim *sim, const struct lp_sched_in *in, double busy_first,
                         double busy_last, double *end_first, double *end_last);

struct lp_sim {
    struct lp_cost_model cm;
    struct lp_shape_key key[LP_SIM_MEMO];
    struct lp_shape_cost val[LP_SIM_MEMO];
    bool used[LP_SIM_MEMO];
    /* schedule solver scratch: finish times of F and B per (stage, chunk, mb) */
    double *sched_f, *sched_b;
    size_t sched_cap;
    uint64_t memo_hits, memo_misses;
    struct lp_sched_key skey[LP_SCHED_MEMO];
    struct lp_sched_val sval[LP_SCHED_MEMO];
    bool sused[LP_SCHED_MEMO];
    struct lp_sched_out sout;   /* solver output scratch (16 KiB) */
    bool sched_reference;       /* bench_sim: solve with the reference solvers */
    bool sched_every_op;        /* bench_sim: no steady-state shortcut */
    bool sched_stop28;          /* bench_sim: the shortcuts of stop 28 only (1F1B, zb) */
    bool sched_stop29;          /* bench_sim: zb's shortcut of stop 29 (one snapshot back) */
    bool sched_stop30;          /* bench_sim: zb by its event loop only (stop 30, no worklist) */
    bool sched_stop31;          /* bench_sim: zb's ring, then the worklist (stop 31) */
    bool sched_stop31f;         /* bench_sim: advance for every schedule (stop 31's follow-up) */
    struct lp_zb_ring *zb_ring; /* zb's last snapshots (sim_schedule.c), made on first use */
    /* bench_sim: run as the tree before this stop of #20 (d7debed) did: memo
     * slots from FNV-1a, no model-hash, layer-split or present-kinds shortcuts */
    bool bench_baseline;
    uint64_t sched_hits, sched_misses;
    uint64_t sched_ops_total, sched_ops_skipped; /* ops to solve, of them extrapolated */
    uint64_t sched_ops_listed; /* zb ops solved by the worklist (zb_list), not the event loop */
    /* the layer kinds of the last model seen, and their prefix counts over
     * its layers (LP_KIND_PREFIX_LAYERS at most): a chunk's kinds in O(kinds) */
    uint64_t kinds_model;
    bool kinds_valid;
    int kinds_n, kinds_id[LP_KINDS], kinds_last;
    double kinds_flops; /* its forward FLOPs per token */
    int kinds_prefix[LP_KINDS * (LP_KIND_PREFIX_LAYERS + 1)];
    /* per-virtual-stage times handed to the solver */
    double vs_f[LP_SCHED_MAX_VSTAGES], vs_b[LP_SCHED_MAX_VSTAGES], vs_w[LP_SCHED_MAX_VSTAGES];
    int vs_first[LP_SCHED_MAX_VSTAGES + 1]; /* the layer split */
    int split_key[6];                       /* of it: layers, mtp, pp, vp, first, last */
    bool split_valid;
    /* the last model simulated and its model_hash (sim.c) */
    struct lp_model last_model;
    uint64_t last_model_hash;
    bool last_model_valid;
    /* lp_sim_bound's work up to the schedule (sim.c), for lp_sim_finish:
     * valid for mid_run with the parallel layout mid_par until the next
     * simulation (NULL: none) */
    struct lp_sim_mid *mid;
    const struct lp_run *mid_run;
    struct lp_parallel mid_par;
    uint64_t finish_hits; /* lp_sim_finish calls that took up the bound's work */
    /* issue #20, hoisting over a sweep's inner dimensions: ctx_gen counts the
     * changes of what a run holds besides its parallel layout (model, system,
     * training, framework: the copies below), so that a memo keyed on
     * ctx_gen and a par is keyed on the whole run. Off for bench_baseline
     * and bench_no_hoist (bench_sim: this stop's shortcuts off). */
    bool bench_no_hoist;
    /* bench_sim: lp_sched_ends_bound as stops 27-34 had it (the busy times
     * and the fill without hops; no drain) */
    bool bench_no_drain;
    uint64_t ctx_gen;
    struct lp_system ctx_system;
    struct lp_training ctx_train;
    struct lp_framework_opts ctx_fw;
    bool ctx_valid;
    /* the last run's parameters and per-stage memory, kept over the inner
     * dimensions that do not change them (sim.c struct lp_sim_hoist) */
    struct lp_sim_hoist *hoist;
    bool hoist_now;                    /* simulate_head is at a run of ctx_gen (lp_sim_coll_time) */
    uint64_t hoist_hits, hoist_misses; /* of the two above */
};

/* lp_coll_time on the system of the run simulate_head is at, memoised
 * while that run's ctx_gen lasts (sim.c, issue #20: the DP collectives of a
 * sweep's micro-batch, SP and recomputation choices are the same ones) */
double lp_sim_coll_time(struct lp_sim *s, const struct lp_system *sys, enum lp_coll op,
                        double bytes, int n, int stride, int world);

uint64_t lp_hash_bytes(const void *p, size_t n, uint64_t h);
/* the memos' slot hash: words at a time, not FNV-1a; never in an output */
uint64_t lp_hash_words(const void *p, size_t n, uint64_t h);

/* ---- parameters and data-parallel communication (sim.c, sim_dp.c) ---- */

/* Parameters per rank of a configuration (count_params in sim.c). */
struct lp_params {
    double layer;     /* mean non-MoE layer of the largest stage, per rank (ZeRO-3 gathers) */
    double moe_layer; /* mean MoE layer of the largest stage, per rank */
    double emb;       /* embedding (+ learned positions), per TP rank */
    double head;      /* untied output layer, per TP rank (0 if tied and pp == 1) */
    double stage_max; /* the largest stage's parameters on one rank */
    double stage0, stage_last;
    /* trained parameters (all of them, or the LoRA adapters) */
    double train0, train_last, train_max;
    /* the routed experts' among them (0 with LoRA): reduced and sharded
     * over the expert-data-parallel group (sim_dp.c) */
    double expert0, expert_last;
    /* the middle stages (0 < s < pp - 1) whose single-bucket gradient
     * reduction may end last under Megatron-Core's rule (sim_dp.c
     * lp_dp_mid_stages): stage 1, and the earliest middle stage holding the
     * most trained parameters when it holds more than stage 1; n_mid of them
     * (0 with pp <= 2), their trained and routed-expert parameters */
    int n_mid, mid[2];
    double train_mid[2], expert_mid[2];
    double fnorm;                                     /* the final norm (last stage) */
    int moe_layers_per_stage, dense_layers_per_stage; /* of the largest stage */
};

struct lp_bytes_per_param {
    double w, g, o; /* weights, gradients, optimizer states */
    double w_train; /* a trained parameter's own copy (w but for hf's fp32 adapters) */
    double g_comm;  /* gradient bytes on the wire */
};

/* Megatron-Core's DDP keeps the routed experts' parameters in buffers of
 * their own (distributed_data_parallel.py expert_parallel_buffers), reduced,
 * gathered and sharded over the expert-data-parallel group: tp cp dp /
 * (ep etp) ranks ep etp apart (parallel_state.py, expert ranks in the order
 * tp-ep-dp-pp), the rest over the dp cp ranks tp apart. *ne and *se: that
 * group; returns the share of Pe (routed experts' parameters) kept apart:
 * Pe, or 0 when the two groups are the same (sim_dp.c). */
double lp_sim_expert_group(const struct lp_run *r, double Pe, int *ne, int *se);

/* The parameter tensors of one layer on one TP rank (sim_dp.c
 * lp_sim_layer_tensors), in registration order: pre[0..npre) (norms,
 * attention, the router), then one FFN's or expert's group grp[0..ngrp)
 * `copies` times (the experts on this EP rank); n in all. */
struct lp_layer_tensors {
    double pre[9], grp[4];
    int npre, ngrp, copies, n;
};
void lp_sim_layer_tensors(const struct lp_run *r, bool moe_layer, struct lp_layer_tensors *lt);

/* Data-parallel / ZeRO / FSDP costs of one iteration (sim_dp.c). */
/* lp_dp_cost's stages: the first, the last, and lp_params' middle ones */
#define LP_DP_STAGES 4
struct lp_dp_cost {
    double exposed_s[LP_DP_STAGES]; /* stage 0, last stage, lp_params.mid[0], mid[1] */
    double hidden_s[LP_DP_STAGES];  /* communication overlapped with compute */
    /* the parts of exposed_s / hidden_s (per stage; the timeline draws
     * them): gradient reduction in `buckets` equal buckets, all-reduce or
     * (ZeRO-1/2) reduce-scatter, of which red_exposed_s is not hidden
     * behind the last backward; ZeRO-1/2's parameter all-gather, of which
     * gather_exposed_s is not hidden behind the forward */
    double red_s[LP_DP_STAGES], red_exposed_s[LP_DP_STAGES], gather_s[LP_DP_STAGES],
        gather_exposed_s[LP_DP_STAGES];
    int buckets[LP_DP_STAGES];
    double emb_sync_s;
    double opt_s;
    double zero3_fwd_s, zero3_bwd_s; /* per micro-batch */
    /* their parts: one layer's all-gather and reduce-scatter ([0] dense,
     * [1] MoE layer), the embedding and head's (the timeline draws them) */
    double z3_ag_s[2], z3_rs_s[2], z3_ends_ag_s, z3_ends_rs_s;
    /* one layer's all-gathers in the backward with its recomputation
     * (DeepSpeed's reuse rule: not always z3_ag_s; the mean over layers) */
    double z3_ag_bwd_s[2];
    /* fw.zero3_rank_copies: the per-rank copy kernels of one micro-batch's
     * ZeRO-3 gathers and reduce-scatters (their time is inside the above) */
    double z3_copy_kernels;
    /* ... and the Python view calls that built their lists of world-size
     * views (sim_dp.c z3_list_build; their time is inside the above too) */
    double z3_py_views;
    /* ... and DeepSpeed 2021's gradient bucket (sim_dp.c z3_ipg_layers):
     * its copies and in-place divisions per micro-batch (inside
     * zero3_bwd_s and the reduce-scatters above) and its flushes */
    double z3_ipg_s, z3_ipg_flushes;
};

/* Host time of one Python call of a tensor view method (Tensor.narrow,
 * Tensor.view: no kernel, no autograd record) in the eager PyTorch of
 * 2020-2021: PyTorch's operator_benchmark, `split` (a Python-level call
 * returning views) in eager mode, 2.26 us per call on the benchmark's CPU
 * after pytorch/pytorch #32194 (commit bab87e4b, 2020-01; 3.33-3.47 us
 * before it). A published microbenchmark, not fitted on any row; used for
 * the loops DeepSpeed 2021's ZeRO-3 runs over the data-parallel ranks
 * (sim_dp.c z3_list_build). */
#define LP_PY_VIEW_CALL_S 2.26e-6

/* The vocabulary padded to a multiple of 128 x TP (Megatron). */
double lp_sim_vocab_padded(const struct lp_run *r);
/* Bytes per parameter of weights, gradients and optimizer states. */
void lp_sim_param_bytes(const struct lp_run *r, struct lp_bytes_per_param *b);
/* Full fine-tuning under the hf framework in 16-bit precision: parameters,
 * gradients and AdamW's states all in the model's dtype (no fp32 master). */
bool lp_sim_hf_pure16(const struct lp_run *r);
/* DP gradient reduction (overlapped with bwd_window_s per stage of
 * lp_dp_cost's order), ZeRO gathers, ZeRO-3 / FSDP per-micro-batch
 * collectives, optimizer step. */
void lp_dp_costs(struct lp_sim *s, const struct lp_run *r, const struct lp_params *pr,
                 const double bwd_window_s[LP_DP_STAGES], double fwd_window_s,
                 struct lp_dp_cost *out);
/* How many of lp_params' middle stages the iteration accounts (lp_dp_cost
 * entries 2 and 3): Megatron-Core's single-bucket stages (fw.mcore_buckets,
 * pp > 2), else none. */
int lp_dp_mid_stages(const struct lp_run *r, const struct lp_params *pr);
/* The time from the end of middle stage s's last backward pass to the end
 * of stage 0's (the schedule's end_first): the backward ripple of the last
 * micro-batch through stages s-1 .. 0 (sim_dp.c). */
double lp_dp_mid_ripple(const struct lp_sched_in *in, int s);

/* PyTorch DDP / FSDP played out per wrapped unit (sim_dp.c). The per-pass
 * compute of one micro-batch, and what the framework adds to it. */
struct lp_torch_pass {
    double layer_f, layer_b; /* one block, forward / backward (recompute included) */
    double emb_f, emb_b, head_f, head_b;
    int micro; /* micro-batches per iteration */
};
struct lp_torch_dp {
    double fwd_extra_s; /* per iteration: forward waiting for all-gathers, autocast casts */
    double bwd_extra_s; /* per iteration: backward waiting for all-gathers, bucket copies */
    double tail_s;      /* after the last backward: reductions not hidden, DDP copy-back */
    double hidden_s;    /* communication overlapped with compute */
    double comm_s;      /* all communication (and the kernels on its streams) */
    double host_s;      /* FSDP hooks' host work (views), hidden or not */
};
/* FSDP's per-unit gradient cat (split_with_sizes_backward of the flat
 * parameter's views, lp_torch_dp): P parameters of w_bytes read and written */
double lp_fsdp_grad_cat_s(const struct lp_cost_model *cm, double P, double w_bytes);
/* FSDP2's compute-stream copies per unit of P parameters (lp_torch_dp): the
 * copy-out of each all-gather (w bytes read and written), and the
 * reduce-scatter copy-in of the gradients (w read, g written) */
double lp_fsdp2_copy_out_s(const struct lp_cost_model *cm, double P, double w_bytes);
double lp_fsdp2_chunk_cat_s(const struct lp_cost_model *cm, double P, double w_bytes,
                            double g_bytes);
/* For a timeline: lp_torch_dp's collectives as LP_EV_DP_COLL events (up to
 * cap; n counts them), at the play-out's times relative to the end of the
 * last backward pass. */
struct lp_dp_rec {
    struct lp_event *ev;
    int cap, n;
};
/* Append one LP_EV_DP_COLL event (stream 3) when rec has room. */
void lp_dp_rec_put(struct lp_dp_rec *rec, int stage, int micro, enum lp_dp_coll c, int unit,
                   int units, double start_s, double dur_s);
/* true when lp_torch_dp models the run (DDP zero 0; FSDP zero 0/2/3; pp 1, dense) */
bool lp_torch_dp_applies(const struct lp_run *r);
int lp_torch_dp(const struct lp_cost_model *cm, const struct lp_run *r, const struct lp_params *pr,
                const struct lp_torch_pass *ps, struct lp_torch_dp *out, struct lp_dp_rec *rec);

/* ---- layer kinds of the stages (shared by the memory model, sim_memory.c,
 * and the timing, sim.c) ---- */

static inline int lp_kind_of(const struct lp_model *m, int i)
{
    enum lp_mixer mx;
    enum lp_ffn ff;
    lp_arch_layer(m, i, &mx, &ff);
    return (int)mx * LP_FFN_COUNT + (int)ff;
}

/* The layer kinds a model has (most have one to three of the LP_KINDS), the
 * last layer's (MTP modules repeat it), and optionally per-kind prefix
 * counts over the layers, so that a chunk's kinds cost O(kinds), not
 * O(layers). */
struct lp_kinds {
    const struct lp_model *m;
    int n, id[LP_KINDS], last;
    const int *prefix; /* [j * (layers + 1) + i]: layers of kind id[j] among the first i */
};

static inline void lp_kinds_scan(const struct lp_model *m, struct lp_kinds *ks, int *prefix,
                                 int cap)
{
    bool seen[LP_KINDS] = {false};
    ks->m = m;
    ks->n = 0;
    ks->prefix = NULL;
    for (int i = 0; i < m->layers; i++) {
        int k = lp_kind_of(m, i);
        if (!seen[k]) ks->id[ks->n++] = k;
        seen[k] = true;
    }
    ks->last = lp_kind_of(m, m->layers - 1);
    const int L = m->layers;
    if (!prefix || (int64_t)ks->n * (L + 1) > cap) return;
    for (int j = 0; j < ks->n; j++) {
        int *q = prefix + (size_t)j * (size_t)(L + 1);
        q[0] = 0;
        for (int i = 0; i < L; i++)
            q[i + 1] = q[i] + (lp_kind_of(m, i) == ks->id[j]);
    }
    ks->prefix = prefix;
}

/* A full recomputation that redoes every layer (recompute_method uniform,
 * or block without a layer count). */
static inline bool lp_full_covers_all(const struct lp_parallel *p)
{
    return p->recompute == LP_RECOMPUTE_FULL &&
           (p->recompute_method != LP_RC_BLOCK || p->recompute_layers <= 0);
}

/* Layers [a, b) by kind. */
static inline void lp_range_kinds(const struct lp_kinds *ks, int a, int b, int n[LP_KINDS])
{
    memset(n, 0, LP_KINDS * sizeof(int));
    if (ks->prefix) {
        const int L1 = ks->m->layers + 1;
        for (int j = 0; j < ks->n; j++) {
            const int *q = ks->prefix + (size_t)j * (size_t)L1;
            n[ks->id[j]] = q[b] - q[a];
        }
        return;
    }
    for (int i = a; i < b; i++)
        n[lp_kind_of(ks->m, i)]++;
}

static inline void lp_chunk_kinds(const struct lp_kinds *ks, const int *first, int vs,
                                  int n[LP_KINDS])
{
    lp_range_kinds(ks, first[vs], first[vs + 1], n);
}

/* The layers of virtual stage vs a full recomputation redoes, by kind
 * (Megatron-Core transformer_block.py, _checkpointed_forward): all of them
 * (uniform), the first recompute_layers of the chunk (block), or none. */
static inline void lp_full_kinds(const struct lp_kinds *ks, const struct lp_parallel *p,
                                 const int *first, int vs, int nr[LP_KINDS])
{
    if (p->recompute != LP_RECOMPUTE_FULL) {
        memset(nr, 0, LP_KINDS * sizeof(int));
    } else if (lp_full_covers_all(p)) {
        lp_chunk_kinds(ks, first, vs, nr);
    } else {
        const int a = first[vs], n = first[vs + 1] - a;
        lp_range_kinds(ks, a, a + (p->recompute_layers < n ? p->recompute_layers : n), nr);
    }
}

/* Micro-batches of one iteration: global batch / (micro_batch dp). */
static inline int64_t lp_sim_micro_batches(const struct lp_run *r)
{
    return r->train.global_batch / ((int64_t)r->par.micro_batch * r->par.dp);
}

/* ---- parameters and memory (sim_memory.c) ---- */

/* Parameters per rank of every stage (struct lp_params above). */
void lp_sim_count_params(const struct lp_run *r, const struct lp_kinds *ks, const int *first,
                         struct lp_params *pr);
/* Peak memory per GPU over the stages: weights, gradients, optimizer
 * states, the activations of the micro-batches in flight (the schedule's
 * warm-up count, lp_sched_warmup) and temporaries, in two halves (issue
 * #20): what each stage holds that the ZeRO stage does not change
 * (parameters, trained parameters, routed experts, activations, temporaries
 * before ZeRO-3's prefetch: lp_sim_memory_stages, into room for pp stages),
 * and the peak from those under the run's ZeRO stage (lp_sim_memory_peak).
 * The simulator keeps the first while only par.zero changes (a sweep's
 * innermost dimension): the same operations in the same order. */
struct lp_mem_stage {
    double params, trained, experts, act, temp;
    /* hf LoRA under full recomputation (lp_sim_memory_peak's phases): of
     * act, the checkpoints' inputs and the recomputed layer's activations;
     * of temp, the loss's buffers */
    double ckpt_in, redo, loss;
};
struct lp_mem_stages {
    int n;                   /* pp */
    struct lp_mem_stage *st; /* the caller's room for pp of them */
};
void lp_sim_memory_stages(const struct lp_run *r, const struct lp_kinds *ks,
                          const struct lp_params *pr, const int *first, int64_t micro,
                          struct lp_mem_stages *out);
void lp_sim_memory_peak(const struct lp_run *r, const struct lp_params *pr,
                        const struct lp_mem_stages *ms, struct lp_memory *mem);
/* The run as one batch of its dataset sees it (training.dataset): the
 * sequence is the batch's padded length, expected (worst = false: time) or
 * of its longest queries (worst = true: the batch that must fit); r itself
 * without a dataset, else *tmp. */
const struct lp_run *lp_sim_dataset_view(const struct lp_run *r, struct lp_run *tmp, bool worst);
/* Whether a batch of the run's dataset carries padding tokens (its
 * attention mask holds zeros): the collator pads each batch to its longest
 * query and that to pad_multiple, so a dataset of several lengths (or of
 * one length that is no multiple) pads. Without a dataset, none. */
bool lp_sim_batch_padded(const struct lp_run *r);

/* Whether Megatron's FusedScaleMaskSoftmax runs its fused kernel for
 * attn_batches (micro-batch x heads per TP rank) of s x s scores, or its
 * eager fp32 fallback (sim_workload.c). */
bool lp_megatron_softmax_fused(const struct lp_run *r, double attn_batches, double s);

#endif
