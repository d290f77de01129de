/* The analytical profiles (synth.c) of the H100 SXM and the A100 80GB
 * against their attention and GEMM rows of validation/kernels.csv (the
 * in-repo copy, $LLMPLAN_DATA/validation/kernels.csv): each row's TFLOP/s
 * recomputed from the profile's tables at the row's own shape, with the
 * row's FLOP counting (fwd 4 b h s^2 d, halved when causal; fwd+bwd 3.5x
 * that); the mean absolute error of each series printed and bounded.
 *
 * The benchmarks (FlashAttention-2 paper Fig. 4/5, FlashAttention-3 paper
 * figures) run 16k tokens at model dimension 2048: batch 16384/s, 2048/d
 * heads. Series: FlashAttention-2, FlashAttention v1 and PyTorch standard
 * attention forward+backward (A100 K0021-K0136, H100 K0137-K0204); H100
 * forward of standard attention and FA2 (K0205-K0273) and cuDNN
 * (K0222-K0285); the GEMM MAMF rows (A100 K0002 and the other "A100" bf16
 * rows, H100 K0005). Not compared: the FA3 paper's "Triton" series (Triton
 * 3 with Hopper instructions; llmplan's `triton` tables are llm-foundry's
 * pre-MLIR kernel) and FlashAttention-3 (no llmplan implementation).
 *
 * What the rows showed: the H100 fused tables came out 3.2-3.8% slower than
 * their own rows (the A100 ones 0.3%): the fractions are the rows over the
 * peak, so they held the benchmark's wave quantisation (262144/d blocks of
 * 128 queries: 4096 or 2048 over 132 SMs, 0.970; over 108 SMs 0.998), and
 * fused_attn_s charged the wave factor again. synth.c now divides the
 * fractions by the benchmark's wave (attn_bench_wave): every fused series
 * is within 1% (asserted). Standard attention is compared without the
 * dropout kernels the tables add (the rows ran p = 0): within the pooled
 * fit's spread on both GPUs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "llmplan/io.h"
#include "llmplan/profile.h"

#define MAX_FIELDS 24

/* split one CSV line (double quotes, "" inside them) into fields, in place */
static int csv_split(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        char *out = p;
        f[n++] = p;
        if (*p == '"') {
            char *r = p + 1;
            for (;;) {
                if (*r == '\0') break;
                if (*r == '"' && r[1] == '"') {
                    *out++ = '"';
                    r += 2;
                } else if (*r == '"') {
                    r++;
                    break;
                } else {
                    *out++ = *r++;
                }
            }
            p = r;
        } else {
            while (*p && *p != ',' && *p != '\n' && *p != '\r')
                *out++ = *p++;
        }
        const char c = *p;
        *out = '\0';
        if (c != ',') break;
        p++;
    }
    return n;
}

/* the column index of `name` in the header fields */
static int col(char **hdr, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(hdr[i], name)) return i;
    return -1;
}

static double shape_num(const char *shape, const char *key)
{
    const char *p = strstr(shape, key);
    return p ? atof(p + strlen(key)) : 0.0;
}

enum series { S_FA2_FB, S_FA1_FB, S_STD_FB, S_FA2_F, S_STD_F, S_CUDNN_F, S_GEMM, S_COUNT };
static const char *const series_name[S_COUNT] = {"FlashAttention-2 fwd+bwd",
                                                 "FlashAttention v1 fwd+bwd",
                                                 "standard fwd+bwd",
                                                 "FlashAttention-2 fwd",
                                                 "standard fwd",
                                                 "cuDNN fwd",
                                                 "GEMM MAMF"};
/* the bound on each series' mean absolute error: 1% for the fused kernels
 * (their tables are these rows); for standard attention and the GEMM what
 * the profile reproduces today (printed by this test), rounded up */
static const double h100_bound[S_COUNT] = {0.01, 0.01, 0.10, 0.01, 0.15, 0.01, 0.07};
static const double a100_bound[S_COUNT] = {0.01, 0.01, 0.08, 0.01, 0.01, 0.01, 0.06};

/* the mean absolute error of each series for GPU preset `gpu` against the
 * rows whose gpu column contains `rows`, printed; fails when a series with
 * rows is above its bound */
static void compare(const char *gpu, const char *rows, const double *bound, int *th_failed_)
{
    const char *data = getenv("LLMPLAN_DATA");
    ASSERT_TRUE(data != NULL);
    char path[1024];
    snprintf(path, sizeof(path), "%s/validation/kernels.csv", data);
    FILE *fp = fopen(path, "r");
    ASSERT_TRUE(fp != NULL);

    struct lp_gpu g;
    struct lp_err err;
    lp_err_clear(&err);
    ASSERT_OK(lp_load_gpu(gpu, &g, &err));
    struct lp_profile *p = NULL;
    ASSERT_OK(lp_profile_synth(&g, NULL, &p, &err));

    static char line[16384];
    char *hdr_f[MAX_FIELDS];
    static char hdr[4096];
    ASSERT_TRUE(fgets(hdr, sizeof(hdr), fp) != NULL);
    const int nh = csv_split(hdr, hdr_f, MAX_FIELDS);
    const int c_id = col(hdr_f, nh, "row_id"), c_gpu = col(hdr_f, nh, "gpu"),
              c_kernel = col(hdr_f, nh, "kernel"), c_impl = col(hdr_f, nh, "implementation"),
              c_shape = col(hdr_f, nh, "shape"), c_causal = col(hdr_f, nh, "causal"),
              c_value = col(hdr_f, nh, "value"), c_prec = col(hdr_f, nh, "precision");
    ASSERT_TRUE(c_id >= 0 && c_gpu >= 0 && c_kernel >= 0 && c_impl >= 0 && c_shape >= 0 &&
                c_causal >= 0 && c_value >= 0 && c_prec >= 0);

    double sum[S_COUNT] = {0}, worst[S_COUNT] = {0}, bias[S_COUNT] = {0};
    int count[S_COUNT] = {0};
    char worst_id[S_COUNT][16] = {{0}};
    while (fgets(line, sizeof(line), fp)) {
        char *f[MAX_FIELDS];
        const int n = csv_split(line, f, MAX_FIELDS);
        if (n <= c_value || !strstr(f[c_gpu], rows)) continue;
        const char *k = f[c_kernel], *impl = f[c_impl];
        const bool fb = !strcmp(k, "attention forward+backward");
        const bool fwd = !strcmp(k, "attention forward");
        int s_id = -1;
        enum lp_attn_impl ai = LP_ATTN_FUSED;
        if (fb && !strcmp(impl, "FlashAttention-2")) s_id = S_FA2_FB;
        if (fb && !strcmp(impl, "FlashAttention (v1)")) s_id = S_FA1_FB, ai = LP_ATTN_FLASH1;
        if (fb && !strcmp(impl, "PyTorch standard attention"))
            s_id = S_STD_FB, ai = LP_ATTN_UNFUSED;
        if (fwd && !strcmp(impl, "FlashAttention-2")) s_id = S_FA2_F;
        if (fwd && !strcmp(impl, "Standard attention")) s_id = S_STD_F, ai = LP_ATTN_UNFUSED;
        if (fwd && !strcmp(impl, "cuDNN")) s_id = S_CUDNN_F, ai = LP_ATTN_CUDNN;
        const double meas = atof(f[c_value]);
        double pred = 0.0;
        if (!strncmp(k, "GEMM", 4) && !strcmp(f[c_prec], "BF16")) {
            /* MAMF best shape: MxNxK=... */
            const char *x = strstr(f[c_shape], "MxNxK=");
            double m = 0, nn = 0, kk = 0;
            if (!x || sscanf(x, "MxNxK=%lfx%lfx%lf", &m, &nn, &kk) != 3) continue;
            const double xs[3] = {m, nn, kk};
            const double t = lp_table_lookup(&p->gemm[LP_GEMM_FWD][LP_BF16], xs, NULL);
            pred = 2.0 * m * nn * kk / t / 1e12;
            s_id = S_GEMM;
        } else if (s_id >= 0) {
            const double s = shape_num(f[c_shape], "seqlen="),
                         d = shape_num(f[c_shape], "headdim=");
            if (s <= 0 || d <= 0) continue;
            const double bh = (16384.0 / s) * (2048.0 / d);
            const bool causal = !strcmp(f[c_causal], "yes");
            const double x[3] = {bh, s, d};
            const double tf = lp_table_lookup(&p->attn[ai][causal][LP_PASS_FWD][LP_BF16], x, NULL);
            const double tb =
                fb ? lp_table_lookup(&p->attn[ai][causal][LP_PASS_BWD][LP_BF16], x, NULL) : 0.0;
            /* the benchmarks ran with dropout p = 0; the unfused tables add
             * a dropout kernel per pass (2.5 bytes per score element at
             * 0.9 of HBM bandwidth, 3 us launch, 1 us latency: synth.c
             * unfused_attn_s, stream_s): taken out here */
            const double drop = 3e-6 + 1e-6 + 2.5 * bh * s * s * 2.0 / (0.9 * g.mem_bw_Bps);
            const double undrop = ai == LP_ATTN_UNFUSED ? drop * (fb ? 2.0 : 1.0) : 0.0;
            const double flops = 4.0 * bh * s * s * d * (causal ? 0.5 : 1.0) * (fb ? 3.5 : 1.0);
            pred = flops / (tf + tb - undrop) / 1e12;
        }
        if (s_id < 0 || meas <= 0 || pred <= 0) continue;
        const double e = pred / meas - 1.0;
        sum[s_id] += e < 0 ? -e : e;
        bias[s_id] += e;
        count[s_id]++;
        if ((e < 0 ? -e : e) > worst[s_id]) {
            worst[s_id] = e < 0 ? -e : e;
            snprintf(worst_id[s_id], sizeof(worst_id[s_id]), "%s", f[c_id]);
        }
    }
    fclose(fp);
    lp_profile_destroy(&p);
    printf("%s analytical profile vs kernels.csv \"%s\" rows (predicted / measured TFLOP/s - 1)\n",
           gpu, rows);
    bool ok = true;
    for (int i = 0; i < S_COUNT; i++) {
        if (!count[i]) continue;
        const double mape = sum[i] / count[i];
        printf("  %-26s %2d rows  mean |err| %5.1f%%  mean err %+5.1f%%  worst %5.1f%% (%s)%s\n",
               series_name[i], count[i], 100.0 * mape, 100.0 * bias[i] / count[i], 100.0 * worst[i],
               worst_id[i], mape < bound[i] ? "" : "  ABOVE BOUND");
        ok = ok && mape < bound[i];
    }
    ASSERT_TRUE(ok);
}

TEST(synth_h100_against_kernels_csv)
{
    compare("h100-sxm", "H100", h100_bound, th_failed_);
}

TEST(synth_a100_against_kernels_csv)
{
    compare("a100-80gb", "A100", a100_bound, th_failed_);
}

TH_MAIN(TH_CASE(synth_h100_against_kernels_csv), TH_CASE(synth_a100_against_kernels_csv))
