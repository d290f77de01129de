/* Collective and point-to-point costs for a group placed on nodes.
 *
 * Placement: ranks are numbered in Megatron's order (TP innermost, then CP,
 * DP, PP), and node i holds ranks [i*G, (i+1)*G) for G GPUs per node (per
 * scale-up domain: an NVL72 rack's 72 GPUs share one NVLink fabric, so for
 * communication they are one "node" behind its scale-out network). A
 * group of n ranks spaced `stride` apart, its first rank r0, holds ranks
 * r0 + i * stride: the nodes it spans and its members on each follow from
 * r0 (lp_group_span). Megatron's groups of one kind (parallel_state.py
 * RankGenerator: tp, cp, dp, pp groups) start at r0 = b * n * stride + q,
 * q < stride; where stride divides G and n * stride divides G or is a
 * multiple of it, every group has k = min(G / stride, n) members on each of
 * its n / k nodes. Otherwise groups differ (stride 6 on 8-GPU nodes: the
 * pair {0, 6} on one node, {2, 8} on two; dp 3 of tp 2: {0, 2, 4} on one
 * node, {6, 8, 10} on two, one member on the first): the collectives of
 * all groups run at once and the step waits for the slowest, so the time
 * is the slowest group's, each group's node bandwidth set by its fewest
 * members on a node (one ring per NIC, every ring crossing that node).
 *
 * Time (alpha-beta, nccl-tests conventions): a collective moving `bytes`
 * (the full buffer: the all-reduce buffer, the gathered output, the scattered
 * input) takes
 *     t = alpha + bytes * factor(op, n) / (busbw)
 * with the bus-bandwidth factor of nccl-tests (all-reduce 2(n-1)/n,
 * all-gather / reduce-scatter / all-to-all (n-1)/n, send/recv 1) and
 *     busbw = eff(op, tier, bytes, n) * link
 * where link is the intra-node per-GPU bandwidth for a group inside a node,
 * and min(intra, k * inter) for a group that spans nodes: NCCL runs one ring
 * per NIC, so k members per node drive k NICs in parallel and each ring
 * crosses every node boundary once. eff comes from the profile's collective
 * tables (measured or analytical busbw fractions).
 *
 * alpha: a ring's 2(n-1) (all-reduce) or (n-1) steps cost one link latency
 * each inside a node. Across nodes NCCL switches all-reduce to trees, so its
 * inter-node part costs 2*log2(nodes) network latencies; all-gather and
 * reduce-scatter have no tree in NCCL: their ring's n-1 steps cost a
 * network latency where they cross nodes (nodes-1 of them) and an NVLink
 * one elsewhere, as NCCL's own model counts them.
 *
 * Two nodes: NCCL's all-reduce tree (a chain inside each node, the two
 * nodes joined by the double binary tree's one edge; each tree reduces
 * half the buffer up and broadcasts it down, the two in opposite
 * directions) carries each byte across the network once per direction,
 * where a ring carries 2(n-1)/n of it: the network bandwidth goes
 * 2(n-1)/n further (lp_coll_tree2_gain). */
#include <math.h>

#include "nccl_model.h"
#include "sim_internal.h"

/* A synthetic profile's busbw fraction eff(S) = e_inf / (1 + (S_half / S)^p)
 * was built for its reference links: S_half, the size at which the fixed
 * latency equals the transfer time, is latency x bandwidth of those links
 * (synth.c coll_eff). On a system with other links the latency stays the
 * system's own and does not scale with its bandwidth, so the fraction is
 * the reference one at S x (bw_ref / bw) x (lat_ref / lat): a 10 KB
 * all-reduce costs a latency on a slow cloud network, not the reference
 * cluster's latency times the bandwidth ratio. Factors whose reference is
 * unknown (measured profiles: their own links) stay 1. */
double lp_coll_eff_on(const struct lp_cost_model *cm, const struct lp_system *sys, enum lp_coll op,
                      enum lp_tier tier, double bytes, int n)
{
    const struct lp_link *ref = &cm->coll_ref[tier];
    const struct lp_link *l = tier == LP_TIER_INTRA ? &sys->intra : &sys->inter;
    double s = bytes;
    if (ref->bw_Bps > 0 && l->bw_Bps > 0) s *= ref->bw_Bps / l->bw_Bps;
    if (ref->latency_s > 0 && l->latency_s > 0) s *= ref->latency_s / l->latency_s;
    return cm->ops->coll_eff(cm, op, tier, s, n);
}

/* How much further the network goes for an all-reduce of n ranks on two
 * nodes under NCCL's tree than under its ring: 2(n-1)/n (the ring's bytes
 * per byte across the network, over the tree's 1) times the tree's
 * efficiency in NCCL's own model, 0.92 (ncclTopoTuneModel: `busBw *
 * .92` for NCCL_ALGO_TREE all-reduce); never below 1 (n = 2: a ring and a
 * tree are one edge). NCCL's code models the same: at nNodes <= 2 the
 * tree's and ring's bandwidth is the intra-node one (`bw = nNodes <= 2 ?
 * bwIntra : bwInter`), and the NVLS tree's network bandwidth doubles
 * (`bwInter * (nNodes <= 2 && NVLS_TREE ? 2 : 1)`), src/graph/tuning.cc,
 * NVIDIA/nccl 5067397c (v2.29) and v2.9.9-1 (`speedIntra` at nNodes <= 2).
 * Measured: 2x p4d 1 GiB busbw 57.2 GB/s vs 31.8 / 29.6 on 3 / 4 nodes
 * (NVIDIA/nccl issue #527, NCCL 2.9.9), above the 50 GB/s of the node's
 * NICs that bounds a ring. */
double lp_coll_tree2_gain(int n)
{
    const double g = 0.92 * 2.0 * (n - 1) / n;
    return g > 1.0 ? g : 1.0;
}

/* An analytical profile's all-reduce, all-gather or reduce-scatter across
 * nodes (cost.h coll_cal): the measured curve at its own layout (cal.ranks
 * ranks on cal.nodes full nodes) on this system's links and latency
 * (lp_coll_eff_on) and node bandwidth `node_bw` (k NICs, or the two-node
 * tree's wider network), carried to the group's layout by NCCL's model
 * at that bandwidth (lp_nccl_rescale_s). The table's other columns hold the
 * same step for the reference system, but lp_coll_eff_on scales their
 * whole latency by the link latency ratio (InfiniBand 5 us / EFA 15 us):
 * NCCL's per-step latencies (tuning.cc hwLatencies: NVLink 0.6-4 us,
 * network 2.7-14 us by protocol, the same for every network; NVIDIA/nccl
 * 5067397c) then cost a third on InfiniBand, 0.2-0.4 of NCCL's own
 * prediction for rings over 64-256 DGX A100 nodes (bench_coll). */
static double coll_rescaled_s(const struct lp_cost_model *cm, const struct lp_system *sys,
                              enum lp_coll op, double bytes, int n, int nodes, double node_bw)
{
    const struct lp_coll_cal *cal = &cm->coll_cal;
    const double node_bw_cal =
        fmin((double)(cal->ranks / cal->nodes) * sys->inter.bw_Bps, sys->intra.bw_Bps);
    /* the curve on the group's node bandwidth, looked up as lp_coll_eff_on
     * does for another link (at bytes x node_bw_cal / node_bw), so its
     * fixed part stays and its large-message fraction (0.915) applies to
     * the bandwidth the group has: one NIC for a group of one rank per
     * node, the tree's wider network on two nodes */
    const double eff =
        lp_coll_eff_on(cm, sys, op, LP_TIER_INTER, bytes * (node_bw_cal / node_bw), cal->ranks);
    const double t_cal = bytes * lp_coll_bus_factor(op, cal->ranks) / (eff * node_bw);
    return lp_nccl_rescale_s(cal, op, bytes, t_cal, node_bw, n, nodes, node_bw);
}

double lp_coll_time_placed(const struct lp_cost_model *cm, const struct lp_system *sys,
                           enum lp_coll op, double bytes, int n, int nodes, int k)
{
    double steps_factor = op == LP_COLL_ALLREDUCE ? 2.0 : 1.0;
    double alpha, busbw;
    if (nodes <= 1) {
        double eff = lp_coll_eff_on(cm, sys, op, LP_TIER_INTRA, bytes, n);
        busbw = eff * sys->intra.bw_Bps;
        alpha = steps_factor * (n - 1) * sys->intra.latency_s;
    } else {
        double link = k * sys->inter.bw_Bps;
        if (link > sys->intra.bw_Bps) link = sys->intra.bw_Bps;
        /* NCCL's tree on two nodes: the network as if wider by the gain
         * (up to the NVLink chain's bandwidth), the fraction looked up as
         * lp_coll_eff_on does for a wider link, so the latency part stays */
        double wide = link;
        if (op == LP_COLL_ALLREDUCE && nodes == 2 && cm->coll_tree_two_nodes)
            wide = fmin(link * lp_coll_tree2_gain(n), sys->intra.bw_Bps); /* link <= intra */
        const bool nccl_op =
            op == LP_COLL_ALLREDUCE || op == LP_COLL_ALLGATHER || op == LP_COLL_REDUCESCATTER;
        if (cm->coll_cal.ranks > 0 && cm->ops->coll_eff_has_latency && nccl_op)
            return coll_rescaled_s(cm, sys, op, bytes, n, nodes, wide);
        double eff = lp_coll_eff_on(cm, sys, op, LP_TIER_INTER, bytes * (link / wide), n);
        busbw = eff * wide;
        alpha = steps_factor * (k - 1) * sys->intra.latency_s +
                2.0 * log2((double)nodes) * sys->inter.latency_s;
        /* a ring of n - 1 steps, nodes - 1 of them across the network, the
         * rest on NVLink (ncclTopoTuneModel: (nsteps - nInterSteps) x intraLat
         * + nInterSteps x interLat, nInterSteps = nNodes - 1; @5067397c) */
        if (op == LP_COLL_ALLGATHER || op == LP_COLL_REDUCESCATTER)
            alpha = (n - nodes) * sys->intra.latency_s + (nodes - 1) * sys->inter.latency_s;
        if (op == LP_COLL_ALLTOALL) alpha = (n - 1) * sys->inter.latency_s / k;
    }
    /* a profile's busbw fractions are measured (or modelled) per message
     * size, so they already contain the latency; a backend without that
     * capability (the closed form) needs alpha */
    if (cm->ops->coll_eff_has_latency) alpha = 0.0;
    return alpha + bytes * lp_coll_bus_factor(op, n) / busbw;
}

void lp_group_span(int G, int n, int stride, int r0, int *nodes, int *k)
{
    if (G < 1) G = 1;
    if (stride < 1) stride = 1;
    if (stride >= G) { /* every member on its own node */
        *nodes = n;
        *k = 1;
        return;
    }
    /* node by node: the members on node j are those i with
     * j * G <= r0 + i * stride < (j + 1) * G */
    int cnt = 0, kmin = n, i = 0;
    while (i < n) {
        const long long next_node = ((long long)(r0 + (long long)i * stride) / G + 1) * G;
        long long i_end = (next_node - r0 + stride - 1) / stride; /* first i on the next node */
        if (i_end > n) i_end = n;
        const int members = (int)(i_end - i);
        if (members < kmin) kmin = members;
        cnt++;
        i = (int)i_end;
    }
    *nodes = cnt;
    *k = kmin;
}

double lp_groups_slowest(int G, int n, int stride, int first, int world, lp_layout_cost cost,
                         const void *ctx)
{
    if (G < 1) G = 1;
    if (stride < 1) stride = 1;
    if (first < 1) first = 1;
    const long long period = (long long)n * stride;
    /* every group alike (the usual Megatron layout): no search */
    if (stride >= G ||
        (first == stride && G % stride == 0 && (period % G == 0 || G % period == 0))) {
        /* O(1), as lp_group_span(G, n, stride, 0) counts it */
        const int k = stride >= G ? 1 : (G / stride < n ? G / stride : n);
        return cost(ctx, (n + k - 1) / k, k);
    }
    /* the layout depends on r0 mod G only: the first ranks' residues over
     * the blocks the job has (all of them where world is unknown, 0) */
    const long long blocks = world > 0 ? (world + period - 1) / period : G;
    const int nb = blocks < G ? (int)blocks : G;
    const int nq = first < G ? first : G;
    double worst = 0.0;
    int seen_nodes[8], seen_k[8], nseen = 0;
    for (int b = 0; b < nb; b++)
        for (int q = 0; q < nq; q++) {
            const int r0 = (int)(((long long)b * period + q) % G);
            int nodes, k, dup = 0;
            lp_group_span(G, n, stride, r0, &nodes, &k);
            for (int j = 0; j < nseen; j++)
                dup |= seen_nodes[j] == nodes && seen_k[j] == k;
            if (dup) continue;
            if (nseen < 8) {
                seen_nodes[nseen] = nodes;
                seen_k[nseen++] = k;
            }
            worst = fmax(worst, cost(ctx, nodes, k));
        }
    return worst;
}

struct coll_ctx {
    const struct lp_cost_model *cm;
    const struct lp_system *sys;
    enum lp_coll op;
    double bytes;
    int n;
};

static double coll_layout_s(const void *ctx, int nodes, int k)
{
    const struct coll_ctx *c = ctx;
    return lp_coll_time_placed(c->cm, c->sys, c->op, c->bytes, c->n, nodes, k);
}

double lp_coll_time_at(const struct lp_cost_model *cm, const struct lp_system *sys, enum lp_coll op,
                       double bytes, int n, int stride, int first, int world)
{
    if (n <= 1 || bytes <= 0) return 0.0;
    const struct coll_ctx c = {cm, sys, op, bytes, n};
    return lp_groups_slowest(lp_system_scale_up(sys), n, stride, first, world, coll_layout_s, &c);
}

double lp_coll_time(const struct lp_cost_model *cm, const struct lp_system *sys, enum lp_coll op,
                    double bytes, int n, int stride, int world)
{
    return lp_coll_time_at(cm, sys, op, bytes, n, stride, stride, world);
}

struct p2p_ctx {
    const struct lp_cost_model *cm;
    const struct lp_system *sys;
    double bytes;
};

/* One send/recv between two ranks, over the network where their group
 * spans more than one scale-up domain (some neighbours then sit on either
 * side of a boundary), else over NVLink */
static double p2p_layout_s(const void *ctx, int nodes, int k)
{
    (void)k;
    const struct p2p_ctx *c = ctx;
    const bool inter = nodes > 1;
    const struct lp_system *sys = c->sys;
    enum lp_tier tier = inter ? LP_TIER_INTER : LP_TIER_INTRA;
    const struct lp_link *l = inter ? &sys->inter : &sys->intra;
    double eff = lp_coll_eff_on(c->cm, sys, LP_COLL_SENDRECV, tier, c->bytes, 2);
    /* as for collectives: a profile's send/recv fractions hold the latency
     * (until stop 30 it was added again: one more link latency per
     * message, 15 us over EFA) */
    const double alpha = c->cm->ops->coll_eff_has_latency ? 0.0 : l->latency_s;
    return alpha + c->bytes / (eff * l->bw_Bps);
}

/* Neighbours of a group (a pipeline's stages, a CP or userbuffers ring)
 * exchange at once, every group's pairs together: the step waits for the
 * slowest pair, one across a domain boundary wherever a group spans two
 * domains. A pipeline of tp * cp * dp = 4 ranks a stage and pp 4 on 8-GPU
 * nodes ({q, q+4 | q+8, q+12}) sends stage 1's activations over the
 * network although 4 < 8, which `stride >= G` took for NVLink. */
double lp_p2p_time(const struct lp_cost_model *cm, const struct lp_system *sys, double bytes, int n,
                   int stride, int world)
{
    if (bytes <= 0 || n <= 1) return 0.0;
    const struct p2p_ctx c = {cm, sys, bytes};
    return lp_groups_slowest(lp_system_scale_up(sys), n, stride, stride, world, p2p_layout_s, &c);
}
