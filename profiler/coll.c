/* NCCL collectives, one rank per GPU over MPI as nccl-tests runs them. Each
 * collective plugs in through a small table (name, NCCL call); the byte
 * conventions and bus-bandwidth factors are nccl-tests' (estimate.c).
 *
 * Groups: intra-node tier, r ranks of the first node (r = 2, 4, .., ranks
 * per node); inter-node tier, every rank of the first k nodes (k = 2, 4, ..,
 * nodes), so each node's NICs carry the traffic of all its GPUs as in a DP
 * group of a TP-within-node run. Stored value: busbw / nominal bandwidth
 * of the tier: the per-GPU NVLink bandwidth inside a node; min(NVLink,
 * GPUs per node x per-GPU network bandwidth) across nodes. */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "prof_gpu.h"

struct coll_op {
    enum lp_coll kind;
    ncclResult_t (*run)(const void *send, void *recv, size_t count, int rank, int n,
                        ncclComm_t comm, cudaStream_t s);
};

static ncclResult_t run_allreduce(const void *sb, void *rb, size_t count, int rank, int n,
                                  ncclComm_t comm, cudaStream_t s)
{
    (void)rank;
    (void)n;
    return ncclAllReduce(sb, rb, count, ncclBfloat16, ncclSum, comm, s);
}

static ncclResult_t run_allgather(const void *sb, void *rb, size_t count, int rank, int n,
                                  ncclComm_t comm, cudaStream_t s)
{
    (void)rank;
    (void)n;
    return ncclAllGather(sb, rb, count, ncclBfloat16, comm, s);
}

static ncclResult_t run_reducescatter(const void *sb, void *rb, size_t count, int rank, int n,
                                      ncclComm_t comm, cudaStream_t s)
{
    (void)rank;
    (void)n;
    return ncclReduceScatter(sb, rb, count, ncclBfloat16, ncclSum, comm, s);
}

static ncclResult_t run_alltoall(const void *sb, void *rb, size_t count, int rank, int n,
                                 ncclComm_t comm, cudaStream_t s)
{
    (void)rank;
    (void)n;
    return ncclAlltoAll(sb, rb, count, ncclBfloat16, comm, s);
}

/* Ring exchange: send to rank+1, receive from rank-1 (nccl-tests sendrecv). */
static ncclResult_t run_sendrecv(const void *sb, void *rb, size_t count, int rank, int n,
                                 ncclComm_t comm, cudaStream_t s)
{
    ncclResult_t r = ncclGroupStart();
    if (r != ncclSuccess) return r;
    r = ncclSend(sb, count, ncclBfloat16, (rank + 1) % n, comm, s);
    if (r == ncclSuccess) r = ncclRecv(rb, count, ncclBfloat16, (rank + n - 1) % n, comm, s);
    ncclResult_t e = ncclGroupEnd();
    return r != ncclSuccess ? r : e;
}

static const struct coll_op ops[LP_COLL_COUNT] = {
    {.kind = LP_COLL_ALLREDUCE, .run = run_allreduce},
    {.kind = LP_COLL_ALLGATHER, .run = run_allgather},
    {.kind = LP_COLL_REDUCESCATTER, .run = run_reducescatter},
    {.kind = LP_COLL_ALLTOALL, .run = run_alltoall},
    {.kind = LP_COLL_SENDRECV, .run = run_sendrecv},
};

struct coll_call {
    const struct coll_op *op;
    const void *send;
    void *recv;
    size_t count;
    int rank, n;
    ncclComm_t comm;
};

static int coll_call_run(void *arg, cudaStream_t s, struct lp_err *err)
{
    struct coll_call *k = arg;
    LPP_NCCL(err, k->op->run(k->send, k->recv, k->count, k->rank, k->n, k->comm, s));
    return LP_OK;
}

/* Busbw (B/s) of every op x size for one group; results valid on members. */
static int measure_group(struct lpp_ctx *c, MPI_Comm sub, int n, void *send, void *recv,
                         double *busbw, double *spread, struct lp_err *err)
{
    const struct lpp_axis *bx = &c->plan->coll_bytes;
    int rank = 0, rc = LP_OK;
    ncclUniqueId id;
    ncclComm_t comm = NULL;
    LPP_MPI(err, MPI_Comm_rank(sub, &rank));
    if (rank == 0) LPP_NCCL(err, ncclGetUniqueId(&id));
    LPP_MPI(err, MPI_Bcast(&id, (int)sizeof(id), MPI_BYTE, 0, sub));
    LPP_NCCL(err, ncclCommInitRank(&comm, n, id, rank));
    for (int o = 0; o < LP_COLL_COUNT; o++) {
        for (int i = 0; i < bx->n; i++) {
            struct coll_call k = {&ops[o], send, recv, 0, rank, n, comm};
            double bytes = lpp_coll_count(ops[o].kind, bx->v[i], n, 2, &k.count);
            double t = 0, sp = 0, in[2], out[2];
            if (k.count == 0) { /* message smaller than one element per rank */
                busbw[o * bx->n + i] = 0;
                spread[o * bx->n + i] = 0;
                continue;
            }
            LPP_CHECK_GOTO_(int, 0, lpp_fail_mpi, err, rc, MPI_Barrier(sub), done);
            LP_TRY_GOTO(err, rc, lpp_time(c, coll_call_run, &k, false, &t, &sp, err), done);
            /* the slowest rank defines the collective's time (nccl-tests) */
            in[0] = t;
            in[1] = sp;
            LPP_CHECK_GOTO_(int, 0, lpp_fail_mpi, err, rc,
                            MPI_Allreduce(in, out, 2, MPI_DOUBLE, MPI_MAX, sub), done);
            busbw[o * bx->n + i] = bytes / out[0] * lp_coll_bus_factor(ops[o].kind, n);
            spread[o * bx->n + i] = out[1];
        }
    }
done:
    ncclCommDestroy(comm);
    return rc;
}

static int fill_tables(struct lpp_ctx *c, const struct lpp_coll_env *env, enum lp_tier tier,
                       const int *ranks, int nr, const double *all_bw, const double *all_sp,
                       struct lp_profile *prof, struct lp_err *err);

static int tier_tables(struct lpp_ctx *c, const struct lpp_coll_env *env, enum lp_tier tier,
                       const int *ranks, int nr, int node, int local_rank, void *send, void *recv,
                       struct lp_profile *prof, struct lp_err *err)
{
    MPI_Comm world = *(MPI_Comm *)env->comm;
    const struct lpp_axis *bx = &c->plan->coll_bytes;
    size_t cells = (size_t)LP_COLL_COUNT * (size_t)bx->n;
    double busbw[LP_COLL_COUNT * LPP_AXIS_MAX], spread[LP_COLL_COUNT * LPP_AXIS_MAX];
    int rc = LP_OK;
    /* rank 0 keeps every group's results: [rank count][op * sizes] */
    double *all_bw = calloc((size_t)nr * cells, sizeof(double));
    double *all_sp = calloc((size_t)nr * cells, sizeof(double));
    if (!all_bw || !all_sp) {
        free(all_bw);
        free(all_sp);
        LP_FAIL(err, LP_ENOMEM, "out of host memory");
    }
    for (int r = 0; r < nr; r++) {
        bool member =
            local_rank < env->local && (tier == LP_TIER_INTRA ? (node == 0 && local_rank < ranks[r])
                                                              : node < ranks[r] / env->local);
        MPI_Comm sub = MPI_COMM_NULL;
        LPP_CHECK_GOTO_(int, 0, lpp_fail_mpi, err, rc,
                        MPI_Comm_split(world, member ? 0 : MPI_UNDEFINED, env->rank, &sub), done);
        if (member) {
            if (c->log)
                fprintf(c->log, "llmplan-profile: measuring collectives, %s, %d ranks\n",
                        lp_tier_name(tier), ranks[r]);
            rc = measure_group(c, sub, ranks[r], send, recv, busbw, spread, err);
            MPI_Comm_free(&sub);
        }
        /* every rank learns whether the group failed */
        int bad = rc < 0, anybad = 0;
        LPP_CHECK_GOTO_(int, 0, lpp_fail_mpi, err, rc,
                        MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, world), done);
        if (anybad) {
            if (rc == LP_OK)
                rc = lp_err_set_at(err, LP_ENCCL, __FILE__, __LINE__,
                                   "a collective failed on another rank");
            goto done;
        }
        if (env->rank == 0) {
            memcpy(all_bw + (size_t)r * cells, busbw, cells * sizeof(double));
            memcpy(all_sp + (size_t)r * cells, spread, cells * sizeof(double));
        }
    }
    if (env->rank == 0 && prof)
        rc = fill_tables(c, env, tier, ranks, nr, all_bw, all_sp, prof, err);
done:
    free(all_bw);
    free(all_sp);
    return rc;
}

static int fill_tables(struct lpp_ctx *c, const struct lpp_coll_env *env, enum lp_tier tier,
                       const int *ranks, int nr, const double *all_bw, const double *all_sp,
                       struct lp_profile *prof, struct lp_err *err)
{
    const struct lpp_axis *bx = &c->plan->coll_bytes;
    size_t cells = (size_t)LP_COLL_COUNT * (size_t)bx->n;

    /* Tables (bytes x ranks). One rank count: a second column at 2r holds a
     * copy, so that the table has an interpolation cell (attribute notes it). */
    struct lpp_axis axes[2];
    memset(axes, 0, sizeof(axes));
    axes[0] = *bx;
    for (int r = 0; r < nr; r++)
        axes[1].v[axes[1].n++] = ranks[r];
    if (nr == 1) {
        axes[1].v[axes[1].n++] = 2.0 * ranks[0];
        char key[LPP_ATTR_KEY];
        snprintf(key, sizeof(key), "coll.%s.ranks_extended", lp_tier_name(tier));
        lpp_attr_set(c->attrs, key, "one rank count (%d) measured; the %d column is a copy",
                     ranks[0], 2 * ranks[0]);
    }
    double nominal = env->nominal_Bps[tier];
    /* Across nodes every GPU of a node is in the group, so the node's NICs
     * carry it in parallel: the nominal bus bandwidth is min(intra, local *
     * per-GPU network), the link the simulator multiplies the fraction by
     * (src/core/sim_comm.c, docs/profile-format.md). */
    if (tier == LP_TIER_INTER && nominal > 0) {
        nominal *= env->local > 0 ? env->local : 1;
        if (env->nominal_Bps[LP_TIER_INTRA] > 0 && env->nominal_Bps[LP_TIER_INTRA] < nominal)
            nominal = env->nominal_Bps[LP_TIER_INTRA];
    }
    double peak = 0;
    for (size_t i = 0; i < (size_t)nr * cells; i++)
        peak = fmax(peak, all_bw[i]);
    if (!(nominal > 0)) {
        nominal = peak;
        char key[LPP_ATTR_KEY];
        snprintf(key, sizeof(key), "coll.%s.nominal", lp_tier_name(tier));
        lpp_attr_set(c->attrs, key,
                     "%.3f GB/s per GPU: the highest busbw measured (no --%s-bw-GBps or "
                     "--system given)",
                     nominal / 1e9, tier == LP_TIER_INTRA ? "intra" : "inter");
    }
    static const char *const names[2] = {"msg_bytes", "ranks"};
    for (int o = 0; o < LP_COLL_COUNT; o++) {
        struct lp_table *t = &prof->coll[o][tier];
        LP_TRY(err, lpp_table_init(t, axes, names, 2, err));
        for (int i = 0; i < bx->n; i++)
            for (int r = 0; r < axes[1].n; r++) {
                int src = r < nr ? r : nr - 1;
                const double *bw = all_bw + (size_t)src * cells;
                double v = bw[o * bx->n + i] / nominal;
                /* a size below one element per rank moves nothing: use the
                 * next size's value (latency-bound either way) */
                if (!(v > 0) && i + 1 < bx->n) v = bw[o * bx->n + i + 1] / nominal;
                t->value[i * axes[1].n + r] = v > 0 ? v : 1e-6;
                t->spread[i * axes[1].n + r] =
                    all_sp[(size_t)src * cells + (size_t)(o * bx->n + i)];
            }
    }
    return LP_OK;
}

int lpp_coll_run(struct lpp_ctx *c, const struct lpp_coll_env *env, struct lp_profile *prof,
                 struct lp_err *err)
{
    MPI_Comm world = *(MPI_Comm *)env->comm;
    const struct lpp_axis *bx = &c->plan->coll_bytes;
    int rc = LP_OK;
    void *send = NULL, *recv = NULL;
    int local_rank = 0, node = 0;
    MPI_Comm shared = MPI_COMM_NULL, leaders = MPI_COMM_NULL;

    /* node index: rank of this node's leader among leaders */
    LPP_MPI(err,
            MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, env->rank, MPI_INFO_NULL, &shared));
    LPP_MPI(err, MPI_Comm_rank(shared, &local_rank));
    LPP_MPI(err, MPI_Comm_split(world, local_rank == 0 ? 0 : MPI_UNDEFINED, env->rank, &leaders));
    if (local_rank == 0) LPP_MPI(err, MPI_Comm_rank(leaders, &node));
    LPP_MPI(err, MPI_Bcast(&node, 1, MPI_INT, 0, shared));
    if (leaders != MPI_COMM_NULL) MPI_Comm_free(&leaders);
    MPI_Comm_free(&shared);

    size_t bytes = (size_t)bx->v[bx->n - 1] + (1u << 20);
    LPP_CUDA_GOTO(err, rc, cudaMalloc(&send, bytes), cleanup);
    LPP_CUDA_GOTO(err, rc, cudaMalloc(&recv, bytes), cleanup);
    if (lpp_k_fill(send, bytes / 2, LP_BF16, 17u, c->stream)) {
        rc = lp_err_set_at(err, LP_ECUDA, __FILE__, __LINE__, "fill kernel failed to launch");
        goto cleanup;
    }
    for (int t = 0; t < LP_TIER_COUNT; t++) {
        int ranks[32];
        int nr = lpp_coll_ranks((enum lp_tier)t, env->nodes * env->local, env->local, ranks, 32);
        if (nr == 0) {
            char key[LPP_ATTR_KEY];
            snprintf(key, sizeof(key), "missing.coll.%s", lp_tier_name((enum lp_tier)t));
            lpp_attr_set(c->attrs, key, "%s",
                         t == LP_TIER_INTRA ? "one rank per node" : "one node in the job");
            continue;
        }
        LP_TRY_GOTO(err, rc,
                    tier_tables(c, env, (enum lp_tier)t, ranks, nr, node, local_rank, send, recv,
                                prof, err),
                    cleanup);
    }
    lpp_attr_set(c->attrs, "coll.timing",
                 "NCCL bf16 (sum), one rank per GPU; CUDA events around each of %d calls after "
                 "%d warm-up, the slowest rank's median; values busbw/nominal with nccl-tests "
                 "busbw (allreduce 2(n-1)/n, allgather/reducescatter/alltoall (n-1)/n, sendrecv "
                 "1) and sizes (allreduce buffer, allgather output, reducescatter input, "
                 "alltoall send buffer, sendrecv message)",
                 c->plan->reps, c->plan->warmup);
    lpp_attr_set(c->attrs, "coll.groups",
                 "intra: r ranks of node 0; inter: all %d ranks of each of the first k nodes; "
                 "%d ranks on %d nodes%s",
                 env->local, env->world, env->nodes,
                 env->uniform ? "" : " (ranks per node differ: the smallest count is used)");
cleanup:
    cudaFree(recv);
    cudaFree(send);
    return rc;
}
