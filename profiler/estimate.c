/* The dry-run estimate, the nccl-tests bus-bandwidth conventions, and the
 * order statistics of repeated timings: the parts of llmplan-profile that
 * need no GPU and are unit-tested on the CPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prof.h"

/* H100 SXM5 dense tensor-core peaks (NVIDIA H100 datasheet, 2023): 989 TFLOP/s
 * bf16/fp16, 1979 fp8, 3.35 TB/s HBM3; the estimate assumes 70% of each. The
 * per-shape setup and collective figures are round numbers seen with NCCL
 * 2.18+ on DGX H100 (NVLink4 busbw ~360 GB/s of 450) and are only meant to
 * keep --dry-run within a factor of two. */
void lpp_ref_h100(struct lpp_ref_gpu *g)
{
    memset(g, 0, sizeof(*g));
    g->flops[LP_FP32] = 494e12; /* tf32 */
    g->flops[LP_FP16] = 989e12;
    g->flops[LP_BF16] = 989e12;
    g->flops[LP_FP8] = 1979e12;
    g->mem_bw_Bps = 3.35e12;
    g->launch_s = 5e-6;
    g->efficiency = 0.7;
    g->plan_s = 2e-3;
    g->coll_bw_Bps = 300e9;
    g->coll_lat_s = 20e-6;
}

static double elem_bytes(enum lp_prec p)
{
    return p == LP_FP8 ? 1.0 : p == LP_FP32 ? 4.0 : 2.0;
}

double lpp_est_gemm_s(const struct lpp_ref_gpu *g, enum lp_prec p, double m, double n, double k)
{
    double flops = 2 * m * n * k;
    double out_elem = p == LP_FP8 ? 2.0 : elem_bytes(p); /* fp8 GEMMs write bf16 */
    double bytes = (m * k + k * n) * elem_bytes(p) + m * n * out_elem;
    double t = fmax(flops / (g->efficiency * g->flops[p]), bytes / (g->efficiency * g->mem_bw_Bps));
    return t + g->launch_s;
}

double lpp_attn_flops(bool causal, enum lp_pass pass, double bh, double seq, double hd)
{
    double f = 4 * bh * seq * seq * hd;
    if (causal) f /= 2;
    if (pass == LP_PASS_BWD) f *= 2.5;
    return f;
}

double lpp_est_attn_s(const struct lpp_ref_gpu *g, enum lp_attn_impl impl, bool causal,
                      enum lp_pass pass, enum lp_prec p, double bh, double seq, double hd)
{
    double flops = lpp_attn_flops(causal, pass, bh, seq, hd);
    double peak = g->efficiency * g->flops[p];
    if (impl == LP_ATTN_FUSED) {
        /* FlashAttention-2 reaches 50-70% of peak on H100 (Dao 2023, fig. 7);
         * the estimate takes 0.7 of the efficiency assumed for GEMMs. */
        double t = flops / (0.7 * peak);
        return t + (pass == LP_PASS_BWD ? 3 : 1) * g->launch_s;
    }
    /* Unfused: the GEMMs at full size (no causal saving) plus the s x s
     * score traffic of softmax and dropout: forward writes S, reads/writes it
     * in softmax, reads it and writes it and a byte mask in dropout, reads it
     * in P V (~13 B per score at 2-byte precision); backward about twice. */
    double gemm_flops = lpp_attn_flops(false, pass, bh, seq, hd);
    double per_score = (pass == LP_PASS_FWD ? 6.5 : 13.0) * elem_bytes(p);
    double bytes = per_score * bh * seq * seq;
    double t = gemm_flops / peak + bytes / (g->efficiency * g->mem_bw_Bps);
    return t + (pass == LP_PASS_BWD ? 6 : 4) * g->launch_s;
}

double lpp_est_mem_s(const struct lpp_ref_gpu *g, double bytes)
{
    return bytes / (g->efficiency * g->mem_bw_Bps) + g->launch_s;
}

double lpp_est_coll_s(const struct lpp_ref_gpu *g, enum lp_coll c, double bytes, int ranks)
{
    return g->coll_lat_s + bytes * lp_coll_bus_factor(c, ranks) / g->coll_bw_Bps;
}

/* ---- collectives ---- */

double lpp_coll_count(enum lp_coll c, double bytes, int nranks, size_t elem_bytes_, size_t *count)
{
    double eb = (double)elem_bytes_;
    double n = nranks > 0 ? nranks : 1;
    double per;
    switch (c) {
    case LP_COLL_ALLREDUCE:
    case LP_COLL_SENDRECV:
        per = floor(bytes / eb);
        *count = (size_t)per;
        return per * eb;
    case LP_COLL_ALLGATHER:     /* count = elements each rank contributes */
    case LP_COLL_REDUCESCATTER: /* count = elements each rank receives */
    case LP_COLL_ALLTOALL:      /* count = elements sent to each peer */
        per = floor(bytes / (eb * n));
        *count = (size_t)per;
        return per * eb * n;
    default:
        *count = 0;
        return 0;
    }
}

int lpp_coll_ranks(enum lp_tier t, int world, int local, int *out, int max)
{
    int n = 0;
    if (local < 1 || world < 1) return 0;
    if (t == LP_TIER_INTRA) {
        int top = local < world ? local : world;
        for (int r = 2; r <= top && n < max; r *= 2)
            out[n++] = r;
        if (top >= 2 && n < max && (n == 0 || out[n - 1] != top)) out[n++] = top;
        return n;
    }
    int nodes = world / local;
    for (int k = 2; k <= nodes && n < max; k *= 2)
        out[n++] = k * local;
    if (nodes >= 2 && n < max && out[n - 1] != nodes * local) out[n++] = nodes * local;
    return n;
}

/* ---- statistics ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(const double *x, int n, double q)
{
    double pos = q * (n - 1);
    int i = (int)floor(pos);
    if (i >= n - 1) return x[n - 1];
    double f = pos - i;
    return x[i] + f * (x[i + 1] - x[i]);
}

void lpp_stats(double *x, int n, double *median, double *spread)
{
    if (n <= 0) {
        *median = 0;
        *spread = 0;
        return;
    }
    qsort(x, (size_t)n, sizeof(double), cmp_double);
    *median = quantile(x, n, 0.5);
    *spread = *median > 0 ? (quantile(x, n, 0.9) - quantile(x, n, 0.1)) / *median : 0;
}

/* ---- the estimate ---- */

static const enum lp_prec gemm_precs[] = {LP_BF16, LP_FP16, LP_FP8};
static const enum lp_prec attn_precs[] = {LP_BF16, LP_FP16}; /* no fp8 attention yet */

static void line(FILE *f, const char *name, const char *axes, long pts, double s)
{
    if (f) fprintf(f, "  %-34s %-28s %7ld points  ~%8.1f s\n", name, axes, pts, s);
}

static double est_gemm_table(const struct lpp_plan *p, const struct lpp_ref_gpu *g,
                             enum lp_gemm_layout l, enum lp_prec pr)
{
    const struct lpp_axis *ax = p->gemm[l];
    double reps = p->reps + p->warmup;
    /* the flush writes 4x a 50 MB L2 before every call */
    double flush_s = p->flush_l2 ? 4 * 50e6 / g->mem_bw_Bps + g->launch_s : 0;
    double s = 0;
    for (int i = 0; i < ax[0].n; i++)
        for (int j = 0; j < ax[1].n; j++)
            for (int k = 0; k < ax[2].n; k++)
                s += g->plan_s +
                     reps * (lpp_est_gemm_s(g, pr, ax[0].v[i], ax[1].v[j], ax[2].v[k]) + flush_s);
    return s;
}

static double est_attn_table(const struct lpp_plan *p, const struct lpp_ref_gpu *g,
                             enum lp_attn_impl impl, bool causal, enum lp_pass pass,
                             enum lp_prec pr)
{
    const struct lpp_axis *ax = p->attn;
    double reps = p->reps + p->warmup;
    double flush_s = p->flush_l2 ? 4 * 50e6 / g->mem_bw_Bps + g->launch_s : 0;
    /* a cuDNN execution plan is built per shape and pass */
    double setup = impl == LP_ATTN_FUSED ? 50e-3 : g->plan_s;
    double s = 0;
    for (int i = 0; i < ax[0].n; i++)
        for (int j = 0; j < ax[1].n; j++)
            for (int k = 0; k < ax[2].n; k++)
                s += setup + reps * (lpp_est_attn_s(g, impl, causal, pass, pr, ax[0].v[i],
                                                    ax[1].v[j], ax[2].v[k]) +
                                     flush_s);
    return s;
}

int lpp_estimate(const struct lpp_plan *p, const struct lpp_ref_gpu *g, int world, int local,
                 struct lpp_estimate *e, FILE *f)
{
    memset(e, 0, sizeof(*e));
    char name[64], axes[64];
    double reps = p->reps + p->warmup;

    if (p->family[LPP_GEMM]) {
        if (f) fprintf(f, "gemm (cuBLASLt; values: seconds per call)\n");
        for (size_t pi = 0; pi < sizeof(gemm_precs) / sizeof(gemm_precs[0]); pi++) {
            enum lp_prec pr = gemm_precs[pi];
            if (!p->prec[pr]) continue;
            for (int l = 0; l < LP_GEMM_LAYOUT_COUNT; l++) {
                const struct lpp_axis *ax = p->gemm[l];
                long pts = lpp_axes_points(ax, 3);
                double s = est_gemm_table(p, g, (enum lp_gemm_layout)l, pr);
                snprintf(name, sizeof(name), "gemm/%s/%s",
                         lp_gemm_layout_name((enum lp_gemm_layout)l), lp_prec_name(pr));
                snprintf(axes, sizeof(axes), "m%d x n%d x k%d", ax[0].n, ax[1].n, ax[2].n);
                line(f, name, axes, pts, s);
                e->points[LPP_GEMM] += pts;
                e->tables[LPP_GEMM]++;
                e->seconds[LPP_GEMM] += s;
            }
        }
        if (f && p->prec[LP_FP8])
            fprintf(f, "  (fp8 tables only where the GPU has fp8 tensor cores, sm_89+)\n");
    }
    if (p->family[LPP_ATTN]) {
        if (f) fprintf(f, "attn (fused: cuDNN SDPA; unfused, unfused_fs: GEMM+softmax+dropout)\n");
        for (size_t pi = 0; pi < sizeof(attn_precs) / sizeof(attn_precs[0]); pi++) {
            enum lp_prec pr = attn_precs[pi];
            if (!p->prec[pr]) continue;
            /* the profiler measures cuDNN fused and the two unfused forms only */
            static const enum lp_attn_impl measured[] = {LP_ATTN_FUSED, LP_ATTN_UNFUSED,
                                                         LP_ATTN_UNFUSED_FS};
            for (size_t mi = 0; mi < sizeof(measured) / sizeof(measured[0]); mi++) {
                const enum lp_attn_impl impl = measured[mi];
                /* unfused_fs: causal only (attn_unfused.c) */
                for (int c = impl == LP_ATTN_UNFUSED_FS ? 1 : 0; c < 2; c++)
                    for (int pass = 0; pass < LP_PASS_COUNT; pass++) {
                        long pts = lpp_axes_points(p->attn, 3);
                        double s = est_attn_table(p, g, impl, c != 0, (enum lp_pass)pass, pr);
                        snprintf(name, sizeof(name), "attn/%s/%s/%s/%s", lp_attn_impl_name(impl),
                                 c ? "causal" : "full", lp_pass_name((enum lp_pass)pass),
                                 lp_prec_name(pr));
                        snprintf(axes, sizeof(axes), "bh%d x seq%d x hd%d", p->attn[0].n,
                                 p->attn[1].n, p->attn[2].n);
                        line(f, name, axes, pts, s);
                        e->points[LPP_ATTN] += pts;
                        e->tables[LPP_ATTN]++;
                        e->seconds[LPP_ATTN] += s;
                    }
            }
        }
    }
    if (p->family[LPP_MEM]) {
        if (f) fprintf(f, "mem (CUDA kernels; x axis: bytes read + written)\n");
        double s = 0;
        for (int i = 0; i < p->mem.n; i++)
            s += g->plan_s + reps * lpp_est_mem_s(g, p->mem.v[i]);
        for (int k = 0; k < LP_MEM_KIND_COUNT; k++) {
            snprintf(name, sizeof(name), "mem/%s", lp_mem_kind_name((enum lp_mem_kind)k));
            snprintf(axes, sizeof(axes), "bytes%d", p->mem.n);
            line(f, name, axes, p->mem.n, s);
            e->points[LPP_MEM] += p->mem.n;
            e->tables[LPP_MEM]++;
            e->seconds[LPP_MEM] += s;
        }
    }
    if (p->family[LPP_COLL]) {
        if (f) fprintf(f, "coll (NCCL; values: busbw / nominal per-GPU bandwidth)\n");
        if (world < 2 && f) fprintf(f, "  skipped: one rank (run under mpirun on 2+ GPUs)\n");
        for (int t = 0; t < LP_TIER_COUNT && world >= 2; t++) {
            int ranks[32];
            int nr = lpp_coll_ranks((enum lp_tier)t, world, local, ranks, 32);
            if (nr == 0) {
                if (f)
                    fprintf(f, "  %s: skipped (%s)\n", lp_tier_name((enum lp_tier)t),
                            t == LP_TIER_INTRA ? "one rank per node" : "one node");
                continue;
            }
            /* one communicator per rank count (~1 s to create) */
            e->seconds[LPP_COLL] += nr * 1.0;
            for (int c = 0; c < LP_COLL_COUNT; c++) {
                double s = 0;
                for (int r = 0; r < nr; r++)
                    for (int i = 0; i < p->coll_bytes.n; i++)
                        s +=
                            reps * lpp_est_coll_s(g, (enum lp_coll)c, p->coll_bytes.v[i], ranks[r]);
                snprintf(name, sizeof(name), "coll/%s/%s", lp_coll_name((enum lp_coll)c),
                         lp_tier_name((enum lp_tier)t));
                snprintf(axes, sizeof(axes), "bytes%d x ranks%d", p->coll_bytes.n, nr);
                line(f, name, axes, (long)p->coll_bytes.n * nr, s);
                e->points[LPP_COLL] += (long)p->coll_bytes.n * nr;
                e->tables[LPP_COLL]++;
                e->seconds[LPP_COLL] += s;
            }
        }
    }
    for (int fam = 0; fam < LPP_FAMILY_COUNT; fam++)
        e->total_s += e->seconds[fam];
    if (f) {
        fprintf(f, "total: ");
        for (int fam = 0; fam < LPP_FAMILY_COUNT; fam++)
            if (p->family[fam])
                fprintf(f, "%s %ld tables %ld points ~%.0f s; ",
                        lpp_family_name((enum lpp_family)fam), e->tables[fam], e->points[fam],
                        e->seconds[fam]);
        if (e->total_s < 120)
            fprintf(f, "\nestimated run time: ~%.0f s", e->total_s);
        else
            fprintf(f, "\nestimated run time: ~%.1f min", e->total_s / 60);
        fprintf(f, " on an H100 (%d reps + %d warm-up per point, ~5 s start-up)\n", p->reps,
                p->warmup);
        if (e->total_s > 3600)
            fprintf(f, "note: over an hour; fewer micro-batch/TP values, --precisions bf16 or "
                       "--reps 10 shorten it\n");
    }
    return LP_OK;
}
