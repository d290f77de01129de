/* NCCL's own cost model for a collective across nodes (private to the core).
 *
 * NCCL chooses an algorithm and protocol per call by predicting each one's
 * time as latency + bytes / algorithm bandwidth (src/graph/tuning.cc:
 * ncclTopoTuneModel fills the tables, ncclTopoGetAlgoTime evaluates them).
 * lp_nccl_time_s reproduces that prediction, with the constants of one NCCL
 * release, for ranks spread evenly over nodes joined by NVLink inside and a
 * network across. llmplan uses it only for how a collective's cost changes
 * with the rank count (synth.c coll_eff); docs/profile-format.md. */
#ifndef LLMPLAN_NCCL_MODEL_H
#define LLMPLAN_NCCL_MODEL_H

#include <stdbool.h>

#include "llmplan/cost.h"

enum lp_nccl_version {
    LP_NCCL_2_10 = 0, /* v2.10.3-1 (2021): Megatron-DeepSpeed and Megatron-LM of 2021 */
    LP_NCCL_2_29,     /* v2.29 (master 5067397c, 2026-06) */
    LP_NCCL_VERSIONS
};

enum lp_nccl_proto { LP_NCCL_LL = 0, LP_NCCL_LL128, LP_NCCL_SIMPLE, LP_NCCL_PROTOS };
enum lp_nccl_algo { LP_NCCL_TREE = 0, LP_NCCL_RING, LP_NCCL_ALGOS };

struct lp_nccl_choice {
    enum lp_nccl_algo algo;
    enum lp_nccl_proto proto;
    double lat_s;     /* the chosen entry's latency */
    double algbw_Bps; /* and its algorithm bandwidth */
};

/* Predicted time of an all-reduce, all-gather or reduce-scatter of `bytes`
 * (the full buffer, nccl-tests' size) over `ranks` ranks on `nodes` nodes
 * (ranks / nodes per node, nodes >= 2), each node's ring bandwidth
 * busbw_Bps (NCCL's nChannels x bwInter: the node's NICs). The other
 * collectives return -1. `amd_cpu` selects NCCL's AMD figures (LL bandwidth
 * cap; from 2.18 the network overhead per ring step). `choice` may be NULL. */
double lp_nccl_time_s(enum lp_nccl_version v, enum lp_coll op, double bytes, int ranks, int nodes,
                      double busbw_Bps, bool amd_cpu, struct lp_nccl_choice *choice);

/* A collective measured (t_cal seconds) at the calibration layout `cal`
 * (cal->ranks ranks on cal->nodes nodes, each node's ring bandwidth
 * node_bw_cal), carried to `ranks` ranks on `nodes` nodes of ring
 * bandwidth node_bw: t_cal plus what NCCL's own model (cal's release)
 * predicts the new layout adds or saves, and never less than that
 * prediction itself. The one rule the synthetic
 * inter-node tables (synth.c) and lp_coll_time (sim_comm.c) share.
 * Returns t_cal unchanged for the collectives NCCL's model does not
 * cover (lp_nccl_time_s < 0). */
double lp_nccl_rescale_s(const struct lp_coll_cal *cal, enum lp_coll op, double bytes, double t_cal,
                         double node_bw_cal, int ranks, int nodes, double node_bw);

const char *lp_nccl_version_name(enum lp_nccl_version v);

#endif
