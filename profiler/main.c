/* llmplan-profile: measure a GPU node's kernel timings into an llmplan HDF5
 * profile. Run once per rank (mpirun -np N, one rank per GPU); rank 0
 * measures GEMMs, attention and memory-bound kernels on its GPU, every rank
 * takes part in the collectives, and rank 0 writes the file. Only main
 * prints, exits or aborts. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llmplan/io.h"
#include "llmplan/search.h"
#include "prof.h"
#include "prof_gpu.h"

struct job {
    MPI_Comm comm; /* duplicate of MPI_COMM_WORLD */
    int rank, world, local, local_rank, nodes;
    bool uniform;
    char hosts[LPP_ATTR_VAL];
};

static void report(const struct lp_err *err, int rank)
{
    char buf[2048];
    lp_err_format(err, buf, sizeof(buf), getenv("LLMPLAN_DEBUG") != NULL);
    fprintf(stderr, "llmplan-profile[%d]: %s\n", rank, buf);
}

/* Ranks, ranks per node and node count (collective over world). Node
 * membership comes from MPI_Comm_split_type(SHARED); the processor names are
 * gathered to record the hosts and cross-check the split. */
static int job_init(struct job *j, struct lp_err *err)
{
    MPI_Comm shared = MPI_COMM_NULL;
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = 0, leader, nodes = 0, lmin = 0, lmax = 0;
    memset(j, 0, sizeof(*j));
    LPP_MPI(err, MPI_Comm_dup(MPI_COMM_WORLD, &j->comm));
    LPP_MPI(err, MPI_Comm_rank(j->comm, &j->rank));
    LPP_MPI(err, MPI_Comm_size(j->comm, &j->world));
    LPP_MPI(err,
            MPI_Comm_split_type(j->comm, MPI_COMM_TYPE_SHARED, j->rank, MPI_INFO_NULL, &shared));
    LPP_MPI(err, MPI_Comm_rank(shared, &j->local_rank));
    LPP_MPI(err, MPI_Comm_size(shared, &j->local));
    MPI_Comm_free(&shared);
    leader = j->local_rank == 0;
    LPP_MPI(err, MPI_Allreduce(&leader, &nodes, 1, MPI_INT, MPI_SUM, j->comm));
    LPP_MPI(err, MPI_Allreduce(&j->local, &lmin, 1, MPI_INT, MPI_MIN, j->comm));
    LPP_MPI(err, MPI_Allreduce(&j->local, &lmax, 1, MPI_INT, MPI_MAX, j->comm));
    j->nodes = nodes;
    j->uniform = lmin == lmax;
    j->local = lmin;

    memset(name, 0, sizeof(name));
    LPP_MPI(err, MPI_Get_processor_name(name, &len));
    char *all = j->rank == 0 ? calloc((size_t)j->world, MPI_MAX_PROCESSOR_NAME) : NULL;
    if (j->rank == 0 && !all) LP_FAIL(err, LP_ENOMEM, "out of host memory");
    int rc = MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME,
                        MPI_CHAR, 0, j->comm);
    if (rc != MPI_SUCCESS) {
        free(all);
        return lpp_fail_mpi(err, rc, "MPI_Gather(processor names)", __FILE__, __LINE__);
    }
    if (j->rank == 0) {
        int distinct = 0;
        size_t used = 0;
        for (int r = 0; r < j->world; r++) {
            const char *h = all + (size_t)r * MPI_MAX_PROCESSOR_NAME;
            bool seen = false;
            for (int q = 0; q < r && !seen; q++)
                seen = !strcmp(h, all + (size_t)q * MPI_MAX_PROCESSOR_NAME);
            if (seen) continue;
            distinct++;
            int w = snprintf(j->hosts + used, sizeof(j->hosts) - used, "%s%s", used ? "," : "", h);
            if (w > 0 && used + (size_t)w < sizeof(j->hosts)) used += (size_t)w;
        }
        if (distinct != j->nodes)
            fprintf(stderr,
                    "llmplan-profile: note: %d distinct host names but %d shared-memory nodes; "
                    "tiers follow the shared-memory split\n",
                    distinct, j->nodes);
        free(all);
    }
    return LP_OK;
}

static void iso_date(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tmv;
    gmtime_r(&t, &tmv);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tmv);
}

static void command_line(int argc, char **argv, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < argc; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? " " : "", argv[i]);
        if (w < 0 || used + (size_t)w >= len) break;
        used += (size_t)w;
    }
}

static int build_plan(const struct lpp_opts *o, struct lpp_plan *p, struct lp_err *err)
{
    LP_TRY(err, lpp_plan_default(o, p, err));
    if (o->for_sweep) {
        struct lp_sweep *sw = NULL;
        LP_TRY(err, lp_sweep_load(o->for_sweep, &sw, err));
        int rc = lpp_plan_from_sweep(sw, o->seq, p, err);
        lp_sweep_destroy(&sw);
        if (rc < 0) lp_err_trace(err, __FILE__, __LINE__);
        return rc;
    }
    if (o->for_model[0]) {
        struct lp_model m;
        int tp1 = 1, mb1 = 1;
        LP_TRY(err, lp_load_model(o->for_model, &m, err));
        LP_TRY(err, lpp_plan_targeted(&m, o->ntp ? o->tp : &tp1, o->ntp ? o->ntp : 1,
                                      o->nmb ? o->mb : &mb1, o->nmb ? o->nmb : 1, o->seq, p, err));
    }
    return LP_OK;
}

static int nominal_bw(const struct lpp_opts *o, double bw[LP_TIER_COUNT], struct lp_err *err)
{
    bw[LP_TIER_INTRA] = o->intra_bw_GBps * 1e9;
    bw[LP_TIER_INTER] = o->inter_bw_GBps * 1e9;
    if (o->system[0]) {
        struct lp_system s;
        LP_TRY(err, lp_load_system(o->system, &s, err));
        bw[LP_TIER_INTRA] = s.intra.bw_Bps;
        bw[LP_TIER_INTER] = s.inter.bw_Bps;
    }
    return LP_OK;
}

static void plan_attrs(struct lpp_attrs *a, const struct lpp_plan *p)
{
    lpp_attr_set(a, "plan", "%s; reps %d, warm-up %d; precisions%s%s%s",
                 p->targeted ? "targeted" : "default grids", p->reps, p->warmup,
                 p->prec[LP_BF16] ? " bf16" : "", p->prec[LP_FP16] ? " fp16" : "",
                 p->prec[LP_FP8] ? " fp8" : "");
    if (p->targeted) lpp_attr_set(a, "plan.model", "%s", p->model);
}

/* Launch overhead: the smallest copy point (a launch-bound kernel). */
static double launch_overhead(const struct lp_profile *prof)
{
    const struct lp_table *t = &prof->mem[LP_MEM_COPY];
    return lp_table_present(t) ? t->value[0] : 0;
}

static int run(const struct lpp_opts *o, const struct lpp_plan *plan, const struct job *j, int argc,
               char **argv, struct lp_err *err)
{
    struct lpp_ctx ctx;
    struct lp_profile *prof = NULL;
    struct lpp_attrs *attrs = calloc(1, sizeof(*attrs));
    double nominal[LP_TIER_COUNT];
    int rc = LP_OK, ndev = 0;
    FILE *log = j->rank == 0 ? stderr : NULL;
    memset(&ctx, 0, sizeof(ctx));
    if (!attrs) LP_FAIL(err, LP_ENOMEM, "out of host memory");
    LP_TRY_GOTO(err, rc, nominal_bw(o, nominal, err), cleanup);
    LP_TRY_GOTO(err, rc, lp_profile_create(&prof, err), cleanup);
    LPP_CUDA_GOTO(err, rc, cudaGetDeviceCount(&ndev), cleanup);
    int dev = o->device >= 0 ? o->device : j->local_rank % (ndev > 0 ? ndev : 1);
    LP_TRY_GOTO(err, rc, lpp_ctx_init(&ctx, plan, dev, attrs, log, err), cleanup);
    LP_TRY_GOTO(err, rc, lpp_provenance_device(&ctx, err), cleanup);

    /* Compute families on rank 0's GPU; the other ranks wait. */
    if (j->rank == 0) {
        if (plan->family[LPP_GEMM]) LP_TRY_GOTO(err, rc, lpp_gemm_run(&ctx, prof, err), cleanup);
        if (plan->family[LPP_ATTN]) {
            LP_TRY_GOTO(err, rc, lpp_attn_fused_run(&ctx, prof, err), cleanup);
            LP_TRY_GOTO(err, rc, lpp_attn_unfused_run(&ctx, prof, err), cleanup);
        }
        if (plan->family[LPP_MEM]) LP_TRY_GOTO(err, rc, lpp_mem_run(&ctx, prof, err), cleanup);
    }
    LPP_CHECK_GOTO_(int, 0, lpp_fail_mpi, err, rc, MPI_Barrier(j->comm), cleanup);
    if (plan->family[LPP_COLL]) {
        if (j->world < 2) {
            lpp_attr_set(attrs, "missing.coll",
                         "one rank: collectives not measured (run under mpirun, one rank per GPU)");
            if (log) fprintf(log, "llmplan-profile: one rank: collectives skipped\n");
        } else {
            struct lpp_coll_env env = {
                (void *)&j->comm,        j->rank, j->world, j->local, j->nodes, j->uniform,
                {nominal[0], nominal[1]}};
            LP_TRY_GOTO(err, rc, lpp_coll_run(&ctx, &env, prof, err), cleanup);
        }
    }

    if (j->rank == 0) {
        char buf[LPP_ATTR_VAL];
        int n = 0, mlen = 0;
        size_t gl = strnlen(ctx.dev.name, sizeof(prof->gpu) - 1);
        memcpy(prof->gpu, ctx.dev.name, gl); /* truncated to LP_NAME_LEN - 1 */
        prof->gpu[gl] = '\0';
        snprintf(prof->source, sizeof(prof->source), "measured");
        prof->launch_s = launch_overhead(prof);
        lpp_attr_set(attrs, "tool_version", "llmplan-profile %s", LLMPLAN_VERSION);
        command_line(argc, argv, buf, sizeof(buf));
        lpp_attr_set(attrs, "command", "%s", buf);
        iso_date(buf, sizeof(buf));
        lpp_attr_set(attrs, "created", "%s", buf);
        lpp_attr_set(attrs, "hosts", "%s", j->hosts);
        lpp_attr_set(attrs, "ranks", "%d ranks, %d per node, %d nodes", j->world, j->local,
                     j->nodes);
        MPI_Get_library_version(buf, &mlen);
        buf[strcspn(buf, "\n")] = '\0';
        lpp_attr_set(attrs, "mpi_version", "%s", buf);
        plan_attrs(attrs, plan);
        const struct lp_kv *kv = lpp_attr_kv(attrs, &n);
        LP_TRY_GOTO(err, rc, lp_profile_write_h5(o->out_path, prof, kv, n, err), cleanup);
        fprintf(stderr, "llmplan-profile: wrote %s\n", o->out_path);
    }
cleanup:
    lpp_ctx_fini(&ctx);
    lp_profile_destroy(&prof);
    free(attrs);
    return rc;
}

int main(int argc, char **argv)
{
    struct lpp_opts o;
    struct lpp_plan plan;
    struct lp_err err;
    struct job j;
    lp_err_clear(&err);
    if (lpp_opts_parse(argc, argv, &o, &err) != LP_OK) {
        report(&err, 0);
        return 2;
    }
    if (o.help) {
        lpp_usage(stdout);
        return 0;
    }
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "llmplan-profile: MPI_Init failed\n");
        return 1;
    }
    int rc = job_init(&j, &err);
    if (rc == LP_OK) rc = build_plan(&o, &plan, &err);
    if (rc == LP_OK && o.dry_run) {
        if (j.rank == 0) {
            struct lpp_ref_gpu g;
            struct lpp_estimate e;
            lpp_ref_h100(&g);
            printf("llmplan-profile --dry-run: %d rank(s), %d per node, %d node(s)%s\n", j.world,
                   j.local, j.nodes, plan.targeted ? "" : "; default grids");
            if (plan.targeted) printf("targeted at model %s\n", plan.model);
            rc = lpp_estimate(&plan, &g, j.world, j.local, &e, stdout);
        }
    } else if (rc == LP_OK) {
        rc = run(&o, &plan, &j, argc, argv, &err);
    }
    if (rc < 0) {
        report(&err, j.rank);
        if (j.world > 1) MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (j.comm != MPI_COMM_NULL && j.comm != 0) MPI_Comm_free(&j.comm);
    MPI_Finalize();
    return rc < 0 ? 1 : 0;
}
