/* llmplan-profile: the CPU half of the profiler.
 *
 * Everything here is plain C with no CUDA, NCCL or MPI: command-line options,
 * the grids of shapes each table is measured over (default, --quick, and the
 * targeted planner of --for-model), the dry-run time estimate, order
 * statistics of the repetitions, and the nccl-tests bus-bandwidth factors.
 * It is compiled into llmplan_profiler_cpu, which the unit tests link; the
 * GPU half (prof_gpu.h) only consumes the plan built here. */
#ifndef LLMPLAN_PROF_H
#define LLMPLAN_PROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "llmplan/config.h"
#include "llmplan/profile.h"
#include "llmplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LPP_AXIS_MAX 128  /* points per table axis */
#define LPP_LIST_MAX 16   /* values of --tp / --micro-batch */
#define LPP_REPS_MAX 1000 /* timed repetitions per point */

/* Operator families, selected with --only. */
enum lpp_family { LPP_GEMM = 0, LPP_ATTN, LPP_MEM, LPP_COLL, LPP_FAMILY_COUNT };

const char *lpp_family_name(enum lpp_family f);

/* One strictly increasing, positive axis. */
struct lpp_axis {
    int n;
    double v[LPP_AXIS_MAX];
};

/* Insert x keeping the axis sorted and unique; LP_EINVAL if x <= 0 or the
 * axis is full. */
int lpp_axis_add(struct lpp_axis *a, double x, struct lp_err *err);
/* lo, lo*factor, ... up to and including hi when hi = lo*factor^j. */
int lpp_axis_geom(struct lpp_axis *a, double lo, double hi, double factor, struct lp_err *err);
/* An interpolation cell needs two points per axis: an axis of one value x is
 * given x/2 as a second point (2x when x/2 < floor_value). */
int lpp_axis_pad(struct lpp_axis *a, double floor_value, struct lp_err *err);
/* Product of the dims of a table over axes. */
long lpp_axes_points(const struct lpp_axis *axes, int n);

/* ---- options ---- */

struct lpp_opts {
    const char *out_path;                      /* -o (default llmplan-profile.h5) */
    bool family[LPP_FAMILY_COUNT];             /* --only */
    bool prec[LP_PREC_TABLES];                 /* --precisions (bf16, fp16, fp8) */
    int reps;                                  /* --reps */
    int warmup;                                /* --warmup */
    bool quick;                                /* --quick: tiny grids (smoke test) */
    bool dry_run;                              /* --dry-run */
    bool prec_given, reps_given, warmup_given; /* set explicitly (--quick keeps them) */
    bool help;                                 /* -h / --help */
    bool flush_l2;                             /* --no-flush-l2 clears it */
    double intra_bw_GBps;                      /* nominal per-GPU bw inside a node (0 = unknown) */
    double inter_bw_GBps;                      /* nominal per-GPU bw across nodes (0 = unknown) */
    char system[LP_NAME_LEN];                  /* --system NAME: nominal bw from a preset */
    char for_model[LP_NAME_LEN];               /* --for-model NAME: targeted planner */
    const char *for_sweep;                     /* --for SWEEP.json */
    int tp[LPP_LIST_MAX], ntp;                 /* --tp LIST */
    int mb[LPP_LIST_MAX], nmb;                 /* --micro-batch LIST */
    int seq;                                   /* --seq N (0 = the model's seq_len) */
    int kv_group;                              /* --kv-group G: query heads per KV head (GQA) */
    double max_mem_bytes;                      /* --max-mem-bytes: largest mem-kernel point */
    double max_coll_bytes;                     /* --max-coll-bytes: largest collective */
    int device;                                /* --device N (-1: local rank) */
};

void lpp_opts_default(struct lpp_opts *o);
/* Parse argv (argv[0] is the program). Unknown options, bad numbers and
 * inconsistent combinations are LP_EINVAL with the option named in err. */
int lpp_opts_parse(int argc, char **argv, struct lpp_opts *o, struct lp_err *err);
void lpp_usage(FILE *f);

/* Parse "a,b,c" of positive ints (at most max) into out. */
int lpp_parse_int_list(const char *s, int *out, int max, int *n, struct lp_err *err);

/* ---- plan: what is measured ---- */

struct lpp_plan {
    bool family[LPP_FAMILY_COUNT];
    bool prec[LP_PREC_TABLES];
    int reps, warmup;
    bool flush_l2;
    bool targeted;                                 /* shapes of one model (--for-model) */
    char model[4 * LP_NAME_LEN];                   /* targeted model name(s) */
    struct lpp_axis gemm[LP_GEMM_LAYOUT_COUNT][3]; /* m, n, k per layout */
    struct lpp_axis attn[3];                       /* batch_heads, seq, head_dim */
    int kv_group;
    struct lpp_axis mem;        /* bytes moved */
    struct lpp_axis coll_bytes; /* message bytes (nccl-tests size) */
};

/* The default grids (sized for ~5 minutes on one H100) or --quick's. */
int lpp_plan_default(const struct lpp_opts *o, struct lpp_plan *p, struct lp_err *err);

/* Targeted planner: exactly the shapes a model needs over the given TP and
 * micro-batch lists at sequence length seq (every linear layer's three GEMMs,
 * the attention core, and MoE expert GEMMs where the model has experts).
 * GEMM/attention axes are replaced; mem and coll grids stay the default's. */
int lpp_plan_targeted(const struct lp_model *m, const int *tp, int ntp, const int *mb, int nmb,
                      int seq, struct lpp_plan *p, struct lp_err *err);
/* The same in steps, for several models: begin clears the GEMM/attention
 * axes, add merges one model's shapes (TP degrees that do not divide its
 * heads are skipped), end pads single-value axes. */
void lpp_plan_targeted_begin(struct lpp_plan *p);
int lpp_plan_targeted_add(const struct lp_model *m, const int *tp, int ntp, const int *mb, int nmb,
                          int seq, struct lpp_plan *p, struct lp_err *err);
int lpp_plan_targeted_end(struct lpp_plan *p, struct lp_err *err);
/* --for SWEEP.json: every model of a parsed sweep over its space.tp and
 * space.micro_batch values (seq 0: each model's seq_len). */
struct lp_sweep;
int lpp_plan_from_sweep(const struct lp_sweep *sw, int seq, struct lpp_plan *p, struct lp_err *err);

/* ---- dry-run estimate ---- */

/* Reference device of the estimate: ~70% of an H100 SXM's dense peaks. */
struct lpp_ref_gpu {
    double flops[LP_PREC_TABLES]; /* dense tensor-core FLOP/s */
    double mem_bw_Bps;
    double launch_s;    /* per timed call */
    double efficiency;  /* fraction of peak assumed reached */
    double plan_s;      /* per-shape setup (heuristics, cuDNN plan build) */
    double coll_bw_Bps; /* bus bandwidth of a collective */
    double coll_lat_s;
};
void lpp_ref_h100(struct lpp_ref_gpu *g);

/* Estimated seconds of one call (no repetitions). */
double lpp_est_gemm_s(const struct lpp_ref_gpu *g, enum lp_prec p, double m, double n, double k);
double lpp_est_attn_s(const struct lpp_ref_gpu *g, enum lp_attn_impl impl, bool causal,
                      enum lp_pass pass, enum lp_prec p, double bh, double seq, double hd);
double lpp_est_mem_s(const struct lpp_ref_gpu *g, double bytes);
double lpp_est_coll_s(const struct lpp_ref_gpu *g, enum lp_coll c, double bytes, int ranks);

/* Attention FLOPs of one call (FlashAttention-2 paper, sec. 4.1: forward
 * 4*s^2*d per head, halved when causal; backward 2.5x forward). */
double lpp_attn_flops(bool causal, enum lp_pass pass, double bh, double seq, double hd);

struct lpp_estimate {
    long points[LPP_FAMILY_COUNT];
    long tables[LPP_FAMILY_COUNT];
    double seconds[LPP_FAMILY_COUNT];
    double total_s;
};

/* Estimate the run of plan p on a job of world ranks, local per node.
 * f (may be NULL) receives the table-by-table listing. */
int lpp_estimate(const struct lpp_plan *p, const struct lpp_ref_gpu *g, int world, int local,
                 struct lpp_estimate *e, FILE *f);

/* ---- collectives: nccl-tests conventions (doc/PERFORMANCE.md there) ---- */

/* busbw = algbw * factor; algbw = bytes / time. */
/* Element counts for a message of `bytes` (nccl-tests "size": the full
 * buffer of allreduce, the gathered output of allgather, the input of
 * reducescatter, the whole send buffer of alltoall, the message of sendrecv)
 * with elements of elem_bytes; count is per rank (the NCCL call's count
 * argument) and bytes are rounded down to a multiple of nranks*elem_bytes.
 * Returns the bytes actually moved under the convention. */
double lpp_coll_count(enum lp_coll c, double bytes, int nranks, size_t elem_bytes, size_t *count);
/* Rank counts to measure for a tier: intra: 2,4,..,<=local and local;
 * inter: k nodes of `local` ranks, k = 2,4,..,<=nodes and nodes. */
int lpp_coll_ranks(enum lp_tier t, int world, int local, int *out, int max);

/* ---- statistics ---- */

/* Median and relative spread (p90-p10)/median of n samples (sorted in place).
 * Percentiles by linear interpolation between order statistics. */
void lpp_stats(double *x, int n, double *median, double *spread);

#ifdef __cplusplus
}
#endif

#endif
