/* NCCL's cost model across nodes (nccl_model.h), read from NVIDIA/nccl
 * src/graph/tuning.cc at v2.10.3-1 and at master 5067397c (v2.29):
 * ncclTopoTuneModel builds, per collective, algorithm (tree, ring) and
 * protocol (LL, LL128, Simple), a latency in us and an algorithm bandwidth
 * in GB/s; ncclTopoGetAlgoTime predicts lat + bytes / (1000 bw) and
 * getAlgoInfo runs the cheapest. Only ring and tree are modelled (the
 * algorithms of NVLink + InfiniBand/RoCE nodes without CollNet/SHARP; PAT,
 * NCCL 2.23+'s all-gather / reduce-scatter for one rank per node, is left
 * out: the synthetic tables assume full nodes). Per-channel caps
 * (perChMaxTreeBw, perChMaxRingLL128Bw, Ampere's 235 GB/s) need NCCL's
 * channel count, which comes from its topology search: assumed not to bind
 * (8 NICs of 25-50 GB/s with 16+ channels stay under them). */
#include <limits.h>
#include <math.h>

#include "nccl_model.h"

struct nccl_consts {
    double base_us[LP_NCCL_ALGOS][LP_NCCL_PROTOS];   /* baseLat */
    double nvlink_us[LP_NCCL_ALGOS][LP_NCCL_PROTOS]; /* hwLat[NCCL_HW_NVLINK] */
    double net_us[LP_NCCL_ALGOS][LP_NCCL_PROTOS];    /* hwLat[NCCL_HW_NET] */
    double ring_ll_bw;                               /* ring LL busBw fraction across nodes */
    double ring_ll128_ppn1;   /* ring LL128 busBw fraction, one rank per node */
    double ll_intra_mult;     /* 2.10: LL intra latency x 1.8 when nNodes > 1 */
    bool net_overhead;        /* 2.18+: getNetOverhead floors each ring step */
    bool ppn1_tree_lat;       /* 2.23+: one rank per node pays the tree net latency */
    double plateau;           /* ring Simple all-reduce "plateau effect" factor */
    bool plateau_per_channel; /* 2.18+: condition nBytes / (nChannels nRanks) >= 64 */
};

static const struct nccl_consts nccl_consts[LP_NCCL_VERSIONS] = {
    [LP_NCCL_2_10] = {.base_us = {{4.4, 4.4, 0}, {3.6, 10.0, 8.4}},
                      .nvlink_us = {{.52, 1.25, 28}, {.47, 1.9, 3.4}},
                      .net_us = {{5.0, 8.5, 28}, {2.7, 4.0, 9.6}},
                      .ring_ll_bw = 1.0 / 4.0,
                      .ring_ll128_ppn1 = 0.7,
                      .ll_intra_mult = 1.8,
                      .net_overhead = false,
                      .ppn1_tree_lat = false,
                      .plateau = 1.9,
                      .plateau_per_channel = false},
    [LP_NCCL_2_29] = {.base_us = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}},
                      .nvlink_us = {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}},
                      .net_us = {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}},
                      .ring_ll_bw = 0.5,
                      .ring_ll128_ppn1 = 0.92,
                      .ll_intra_mult = 1.0,
                      .net_overhead = true,
                      .ppn1_tree_lat = true,
                      .plateau = 1.4, /* minCompCap >= 80 */
                      .plateau_per_channel = true},
};

/* llMaxBws for more than one node: the row is chosen by CPU vendor (Intel
 * {39.0, 39.0, 20.4}, AMD {87.7, 22.5, 19.0}), the column by nodes (1, 2,
 * more); the same in both versions */
static double ll_max_bw_GBps(bool amd, int nodes)
{
    if (nodes <= 2) return amd ? 22.5 : 39.0;
    return amd ? 19.0 : 20.4;
}

/* treeCorrectionFactor[protocol][log2(bytes / 64)], 64 B .. 256 MB (the
 * same 23 values in both versions) */
static const double tree_correction[LP_NCCL_PROTOS][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

/* NCCL's channel count for the plateau condition of 2.18+ (assumption: 16,
 * two channels per NIC on 8-NIC nodes) */
#define NCCL_ASSUMED_CHANNELS 16.0

/* floor(log2(x)) for x >= 2, else 0 (NaN too): the times x halves before it
 * falls below 2 (halving is exact, so this is the binary exponent: ilogb;
 * a loop of halvings was 2% of a pruned sweep's time, issue #20) */
static int log2i(double x)
{
    if (!(x >= 2.0)) return 0;
    return isinf(x) ? INT_MAX : ilogb(x);
}

/* one (algorithm, protocol) entry: ncclTopoTuneModel's latency and
 * bandwidth, then ncclTopoGetAlgoTime's corrections */
static double entry_s(const struct nccl_consts *k, enum lp_coll op, enum lp_nccl_algo a,
                      enum lp_nccl_proto p, double bytes, int n, int N, double busbw_GBps, bool amd,
                      double *lat_s, double *bw_Bps)
{
    const bool ar = op == LP_COLL_ALLREDUCE;
    const double nsteps = ar ? 2.0 * (n - 1) : (double)(n - 1);
    const double ppn = (double)n / N;
    double bw = busbw_GBps;
    if (a == LP_NCCL_RING && p == LP_NCCL_LL) bw = fmin(ll_max_bw_GBps(amd, N), bw * k->ring_ll_bw);
    if (a == LP_NCCL_RING && p == LP_NCCL_LL128) bw *= ppn < 2 ? k->ring_ll128_ppn1 : 0.92;
    if (a == LP_NCCL_TREE) bw *= .92;
    if (a == LP_NCCL_TREE && p == LP_NCCL_LL) bw = fmin(bw / 3.8, ll_max_bw_GBps(amd, N));
    if (a == LP_NCCL_TREE && p == LP_NCCL_LL128) bw *= 120.0 / 128.0;
    bw *= a == LP_NCCL_RING ? n / nsteps : .5; /* bus to algorithm bandwidth */

    double lat = k->base_us[a][p];
    double intra = k->nvlink_us[a][p];
    double inter = k->ppn1_tree_lat && ppn == 1 ? k->net_us[LP_NCCL_TREE][p] : k->net_us[a][p];
    if (p == LP_NCCL_LL) intra *= k->ll_intra_mult;
    if (a == LP_NCCL_RING) {
        if (k->net_overhead) { /* getNetOverhead: 1 us (Intel, others), 2 us (AMD); x3 Simple */
            const double ovh = (amd ? 2.0 : 1.0) * (p == LP_NCCL_SIMPLE ? 3.0 : 1.0);
            intra = fmax(intra, ovh);
        }
        const double ninter = ar ? 2.0 * (N - 1) : (double)(N - 1);
        lat += (nsteps - ninter) * intra + ninter * inter;
    } else {
        lat += 2.0 * ((ppn - 1.0) * intra + log2i(N) * inter);
    }

    const int logsize = bytes >= 128 ? log2i(bytes / 64.0) : 0;
    if (a == LP_NCCL_TREE && logsize < 23) bw *= tree_correction[p][logsize];
    if (a == LP_NCCL_RING && p == LP_NCCL_SIMPLE && ar) {
        const bool plateau = k->plateau_per_channel ? bytes / (NCCL_ASSUMED_CHANNELS * n) >= 64
                                                    : bytes >= n / 16.0 * 65536.0;
        if (plateau) lat *= k->plateau;
    }
    *lat_s = lat * 1e-6;
    *bw_Bps = bw * 1e9;
    return *lat_s + bytes / *bw_Bps;
}

double lp_nccl_time_s(enum lp_nccl_version v, enum lp_coll op, double bytes, int ranks, int nodes,
                      double busbw_Bps, bool amd_cpu, struct lp_nccl_choice *choice)
{
    if (op != LP_COLL_ALLREDUCE && op != LP_COLL_ALLGATHER && op != LP_COLL_REDUCESCATTER)
        return -1.0;
    if (v < 0 || v >= LP_NCCL_VERSIONS || ranks < 2 || nodes < 1 || nodes > ranks || busbw_Bps <= 0)
        return -1.0;
    const struct nccl_consts *k = &nccl_consts[v];
    double best = -1.0;
    for (int a = 0; a < LP_NCCL_ALGOS; a++) {
        /* trees only for all-reduce; NCCL 2.10's Simple tree has baseLat 0
         * but is a real entry */
        if (a == LP_NCCL_TREE && op != LP_COLL_ALLREDUCE) continue;
        for (int p = 0; p < LP_NCCL_PROTOS; p++) {
            double lat, bw;
            const double t = entry_s(k, op, (enum lp_nccl_algo)a, (enum lp_nccl_proto)p, bytes,
                                     ranks, nodes, busbw_Bps * 1e-9, amd_cpu, &lat, &bw);
            if (best < 0 || t < best) {
                best = t;
                if (choice)
                    *choice = (struct lp_nccl_choice){(enum lp_nccl_algo)a, (enum lp_nccl_proto)p,
                                                      lat, bw};
            }
        }
    }
    return best;
}

double lp_nccl_rescale_s(const struct lp_coll_cal *cal, enum lp_coll op, double bytes, double t_cal,
                         double node_bw_cal, int ranks, int nodes, double node_bw)
{
    const enum lp_nccl_version v = (enum lp_nccl_version)cal->nccl_version;
    const double at =
        lp_nccl_time_s(v, op, bytes, ranks, nodes < 2 ? 2 : nodes, node_bw, cal->amd_cpu, NULL);
    const double at_cal =
        lp_nccl_time_s(v, op, bytes, cal->ranks, cal->nodes, node_bw_cal, cal->amd_cpu, NULL);
    if (at < 0 || at_cal < 0) return t_cal;
    /* never below NCCL's own prediction at the new layout: the measured
     * curve holds it plus what the benchmark added, and a difference of
     * two protocol choices must not take the time under it */
    return fmax(t_cal + at - at_cal, at);
}

const char *lp_nccl_version_name(enum lp_nccl_version v)
{
    return v == LP_NCCL_2_10 ? "2.10.3" : v == LP_NCCL_2_29 ? "2.29" : "?";
}
