/* The CPU half of llmplan-profile: grids, the targeted planner, option checks,
 * the dry-run estimate and the nccl-tests bus-bandwidth conventions. Built by
 * profiler/CMakeLists.txt (it links llmplan_profiler_cpu). */
#include "harness.h"
#include "llmplan/io.h"
#include "llmplan/search.h"
#include "prof.h"

static int has(const struct lpp_axis *a, double x)
{
    for (int i = 0; i < a->n; i++)
        if (a->v[i] == x) return 1;
    return 0;
}

static int increasing(const struct lpp_axis *a)
{
    for (int i = 0; i < a->n; i++) {
        if (!(a->v[i] > 0)) return 0;
        if (i && !(a->v[i] > a->v[i - 1])) return 0;
    }
    return 1;
}

TEST(axis_geom_and_add)
{
    struct lpp_axis a = {0};
    struct lp_err err = {0};
    ASSERT_OK(lpp_axis_geom(&a, 128, 32768, 2, &err));
    ASSERT_EQ_INT(a.n, 9);
    ASSERT_NEAR(a.v[0], 128, 0);
    ASSERT_NEAR(a.v[8], 32768, 0);
    ASSERT_OK(lpp_axis_add(&a, 3000, &err)); /* sorted insert */
    ASSERT_OK(lpp_axis_add(&a, 3000, &err)); /* duplicate ignored */
    ASSERT_EQ_INT(a.n, 10);
    ASSERT_TRUE(increasing(&a));
    ASSERT_EQ_INT(lpp_axis_add(&a, 0, &err), LP_EINVAL);
    ASSERT_EQ_INT(lpp_axis_add(&a, -5, &err), LP_EINVAL);

    struct lpp_axis b = {0};
    ASSERT_OK(lpp_axis_geom(&b, 4096, 10000, 2, &err)); /* hi not on the grid: kept */
    ASSERT_EQ_INT(b.n, 3);
    ASSERT_NEAR(b.v[2], 10000, 0);

    struct lpp_axis c = {0};
    ASSERT_OK(lpp_axis_add(&c, 2048, &err));
    ASSERT_OK(lpp_axis_pad(&c, 16, &err));
    ASSERT_EQ_INT(c.n, 2);
    ASSERT_NEAR(c.v[0], 1024, 0);
    struct lpp_axis d = {0};
    ASSERT_OK(lpp_axis_add(&d, 8, &err));
    ASSERT_OK(lpp_axis_pad(&d, 16, &err)); /* 4 < floor: 16 instead */
    ASSERT_NEAR(d.v[1], 16, 0);
}

TEST(opts_defaults_and_forms)
{
    struct lpp_opts o;
    struct lp_err err = {0};
    char *argv1[] = {"llmplan-profile", NULL};
    ASSERT_OK(lpp_opts_parse(1, argv1, &o, &err));
    ASSERT_EQ_INT(o.reps, 20);
    ASSERT_TRUE(o.family[LPP_GEMM] && o.family[LPP_COLL]);
    ASSERT_TRUE(o.prec[LP_BF16] && o.prec[LP_FP8] && !o.prec[LP_FP32]);
    ASSERT_TRUE(o.flush_l2);

    char *argv2[] = {"p",    "--only=gemm,mem", "--precisions",       "bf16", "--reps", "7", "-o",
                     "x.h5", "--no-flush-l2",   "--intra-bw-GBps=450"};
    ASSERT_OK(lpp_opts_parse(10, argv2, &o, &err));
    ASSERT_TRUE(o.family[LPP_GEMM] && o.family[LPP_MEM]);
    ASSERT_TRUE(!o.family[LPP_ATTN] && !o.family[LPP_COLL]);
    ASSERT_TRUE(o.prec[LP_BF16] && !o.prec[LP_FP16] && !o.prec[LP_FP8]);
    ASSERT_EQ_INT(o.reps, 7);
    ASSERT_EQ_STR(o.out_path, "x.h5");
    ASSERT_TRUE(!o.flush_l2);
    ASSERT_NEAR(o.intra_bw_GBps, 450, 0);

    char *argv3[] = {"p",   "--for-model", "gpt3-175b", "--tp", "1,2,8", "--micro-batch",
                     "1,4", "--seq",       "4096"};
    ASSERT_OK(lpp_opts_parse(9, argv3, &o, &err));
    ASSERT_EQ_STR(o.for_model, "gpt3-175b");
    ASSERT_EQ_INT(o.ntp, 3);
    ASSERT_EQ_INT(o.tp[2], 8);
    ASSERT_EQ_INT(o.nmb, 2);
    ASSERT_EQ_INT(o.seq, 4096);
}

TEST(opts_rejects)
{
    struct lpp_opts o;
    struct lp_err err = {0};
    char *a1[] = {"p", "--only", "gemm,tensor"};
    ASSERT_EQ_INT(lpp_opts_parse(3, a1, &o, &err), LP_EINVAL);
    ASSERT_CONTAINS(err.msg, "tensor");
    char *a2[] = {"p", "--reps", "0"};
    ASSERT_EQ_INT(lpp_opts_parse(3, a2, &o, &err), LP_EINVAL);
    ASSERT_CONTAINS(err.msg, "--reps");
    char *a3[] = {"p", "--tp", "2"};
    ASSERT_EQ_INT(lpp_opts_parse(3, a3, &o, &err), LP_EINVAL);
    ASSERT_CONTAINS(err.msg, "--for-model");
    char *a4[] = {"p", "--bogus"};
    ASSERT_EQ_INT(lpp_opts_parse(2, a4, &o, &err), LP_EINVAL);
    ASSERT_CONTAINS(err.msg, "--bogus");
    char *a5[] = {"p", "--precisions", "fp32"};
    ASSERT_EQ_INT(lpp_opts_parse(3, a5, &o, &err), LP_EINVAL);
    char *a6[] = {"p", "--reps"};
    ASSERT_EQ_INT(lpp_opts_parse(2, a6, &o, &err), LP_EINVAL);
    ASSERT_CONTAINS(err.msg, "missing value");
    char *a7[] = {"p", "--for-model", "x", "--tp", "2,,4"};
    ASSERT_EQ_INT(lpp_opts_parse(5, a7, &o, &err), LP_EINVAL);
    char *a8[] = {"p", "--system", "dgx-h100", "--inter-bw-GBps", "50"};
    ASSERT_EQ_INT(lpp_opts_parse(5, a8, &o, &err), LP_EINVAL);
    char *a9[] = {"p", "--quick", "--for-model", "x"};
    ASSERT_EQ_INT(lpp_opts_parse(4, a9, &o, &err), LP_EINVAL);
}

static struct lp_model gpt3_175b(void)
{
    struct lp_model m;
    memset(&m, 0, sizeof(m));
    snprintf(m.name, sizeof(m.name), "gpt3-175b");
    m.layers = 96;
    m.hidden = 12288;
    m.heads = 96;
    m.kv_heads = 96;
    m.ffn_hidden = 49152;
    m.vocab = 50257;
    m.seq_len = 2048;
    m.ffn_act = LP_ACT_GELU;
    return m;
}

/* GPT-3 175B at TP 1 and 8, micro-batch 1, 2048 tokens. By hand:
 *   QKV  12288 -> 3*12288 = 36864 (tp 1), 4608 (tp 8)
 *   proj 12288 | 1536 -> 12288
 *   fc1  12288 -> 49152 | 6144;  fc2 49152 | 6144 -> 12288
 *   logits 12288 -> 50257 | ceil(50257/8) = 6283
 *   attention: batch*heads/tp = 96 | 12, seq 2048, head dim 128. */
TEST(planner_gpt3)
{
    struct lpp_opts o;
    struct lpp_plan p;
    struct lp_err err = {0};
    lpp_opts_default(&o);
    ASSERT_OK(lpp_plan_default(&o, &p, &err));
    struct lp_model m = gpt3_175b();
    int tp[] = {1, 8}, mb[] = {1};
    ASSERT_OK(lpp_plan_targeted(&m, tp, 2, mb, 1, 0, &p, &err));
    ASSERT_TRUE(p.targeted);
    const struct lpp_axis *fwd = p.gemm[LP_GEMM_FWD];
    ASSERT_TRUE(has(&fwd[0], 2048));
    ASSERT_EQ_INT(fwd[0].n, 2); /* 2048 padded with 1024 */
    double outs[] = {36864, 4608, 12288, 49152, 6144, 50257, 6283};
    for (size_t i = 0; i < sizeof(outs) / sizeof(outs[0]); i++)
        ASSERT_TRUE(has(&fwd[1], outs[i]));
    ASSERT_EQ_INT(fwd[1].n, 7);
    double ins[] = {12288, 1536, 49152, 6144};
    for (size_t i = 0; i < sizeof(ins) / sizeof(ins[0]); i++)
        ASSERT_TRUE(has(&fwd[2], ins[i]));
    ASSERT_EQ_INT(fwd[2].n, 4);
    /* dgrad swaps n and k; wgrad puts the tokens on k */
    ASSERT_TRUE(has(&p.gemm[LP_GEMM_DGRAD][1], 1536));
    ASSERT_TRUE(has(&p.gemm[LP_GEMM_DGRAD][2], 50257));
    ASSERT_TRUE(has(&p.gemm[LP_GEMM_WGRAD][0], 6144));
    ASSERT_TRUE(has(&p.gemm[LP_GEMM_WGRAD][2], 2048));
    for (int l = 0; l < LP_GEMM_LAYOUT_COUNT; l++)
        for (int d = 0; d < 3; d++)
            ASSERT_TRUE(increasing(&p.gemm[l][d]) && p.gemm[l][d].n >= 2);
    ASSERT_TRUE(has(&p.attn[0], 96) && has(&p.attn[0], 12));
    ASSERT_TRUE(has(&p.attn[1], 2048));
    ASSERT_TRUE(has(&p.attn[2], 128));
    ASSERT_EQ_INT(p.kv_group, 1);
    /* mem and coll keep the default grids */
    ASSERT_TRUE(p.mem.n > 10 && p.coll_bytes.n > 10);
}

/* A LLaMA-3-8B-like GQA model with SwiGLU at TP 8: 32 heads / 8 KV heads of
 * 128; QKV out = (4 + 2*1)*128 = 768; fc1 fuses gate+up: 2*14336/8 = 3584;
 * query heads per KV head = 4. TP 3 does not divide the heads: skipped. */
TEST(planner_gqa_swiglu)
{
    struct lpp_opts o;
    struct lpp_plan p;
    struct lp_err err = {0};
    lpp_opts_default(&o);
    ASSERT_OK(lpp_plan_default(&o, &p, &err));
    struct lp_model m;
    memset(&m, 0, sizeof(m));
    snprintf(m.name, sizeof(m.name), "llama-8b");
    m.hidden = 4096;
    m.heads = 32;
    m.kv_heads = 8;
    m.ffn_hidden = 14336;
    m.vocab = 128256;
    m.seq_len = 8192;
    m.ffn_act = LP_ACT_SWIGLU;
    int tp[] = {3, 8}, mb[] = {1, 2};
    ASSERT_OK(lpp_plan_targeted(&m, tp, 2, mb, 2, 0, &p, &err));
    const struct lpp_axis *fwd = p.gemm[LP_GEMM_FWD];
    ASSERT_TRUE(has(&fwd[1], 768));
    ASSERT_TRUE(has(&fwd[1], 3584));
    ASSERT_TRUE(has(&fwd[1], 16032)); /* 128256 / 8 */
    ASSERT_TRUE(has(&fwd[0], 8192) && has(&fwd[0], 16384));
    ASSERT_EQ_INT(fwd[0].n, 2);
    ASSERT_EQ_INT(p.kv_group, 4);
    ASSERT_TRUE(has(&p.attn[0], 4) && has(&p.attn[0], 8));
    ASSERT_TRUE(!has(&fwd[1], 4096.0 / 3));

    int bad[] = {5, 7};
    ASSERT_EQ_INT(lpp_plan_targeted(&m, bad, 2, mb, 2, 0, &p, &err), LP_EINVAL);
    ASSERT_CONTAINS(err.msg, "divides");
    m.seq_len = 0;
    ASSERT_EQ_INT(lpp_plan_targeted(&m, tp, 2, mb, 2, 0, &p, &err), LP_EINVAL);
    ASSERT_CONTAINS(err.msg, "--seq");
}

TEST(planner_moe)
{
    struct lpp_opts o;
    struct lpp_plan p;
    struct lp_err err = {0};
    lpp_opts_default(&o);
    ASSERT_OK(lpp_plan_default(&o, &p, &err));
    struct lp_model m = gpt3_175b();
    m.hidden = 4096;
    m.heads = 32;
    m.kv_heads = 32;
    m.ffn_hidden = 14336;
    m.moe.experts = 8;
    m.moe.top_k = 2;
    m.moe.ffn_hidden = 14336;
    m.moe.layer_freq = 1;
    m.moe.capacity_factor = 1.0;
    int tp[] = {1}, mb[] = {1};
    ASSERT_OK(lpp_plan_targeted(&m, tp, 1, mb, 1, 4096, &p, &err));
    /* tokens per expert = 4096 * 2 / 8 = 1024; router GEMM n = 8 experts */
    ASSERT_TRUE(has(&p.gemm[LP_GEMM_FWD][0], 1024));
    ASSERT_TRUE(has(&p.gemm[LP_GEMM_FWD][1], 8));
    ASSERT_TRUE(has(&p.gemm[LP_GEMM_WGRAD][2], 1024));
}

/* --for SWEEP.json: two models (GPT-3 175B: 96 heads, 2048 tokens; LLaMA-3
 * 8B: 32 heads, 8192 tokens, GQA 4) over tp [1, 8, 64] and micro_batch
 * [1, 2]. TP 64 divides neither model's heads: skipped. Tokens per
 * micro-batch: 2048, 4096, 8192, 16384. The GQA group is the first model's. */
TEST(planner_sweep)
{
    static const char *json =
        "{\"name\": \"t\", \"model\": [\"gpt3-175b\", \"llama3-8b\"], \"system\": \"dgx-h100\","
        " \"gpus\": 64, \"training\": {\"global_batch\": 64, \"precision\": \"bf16\"},"
        " \"space\": {\"tp\": [1, 8, 64], \"pp\": 1, \"micro_batch\": [1, 2]}}";
    struct lpp_opts o;
    struct lpp_plan p;
    struct lp_err err = {0};
    struct lp_sweep *sw = NULL;
    lpp_opts_default(&o);
    ASSERT_OK(lpp_plan_default(&o, &p, &err));
    int rc = lp_sweep_parse(json, "inline", &sw, &err);
    if (rc != LP_OK) TH_FAIL_("lp_sweep_parse: %s", err.msg);
    rc = lpp_plan_from_sweep(sw, 0, &p, &err);
    lp_sweep_destroy(&sw);
    if (rc != LP_OK) TH_FAIL_("lpp_plan_from_sweep: %s", err.msg);
    const struct lpp_axis *fwd = p.gemm[LP_GEMM_FWD];
    ASSERT_EQ_INT(fwd[0].n, 4);
    ASSERT_TRUE(has(&fwd[0], 2048) && has(&fwd[0], 16384));
    ASSERT_TRUE(has(&fwd[1], 36864) && has(&fwd[1], 768)); /* QKV of each model */
    ASSERT_TRUE(has(&p.attn[1], 2048) && has(&p.attn[1], 8192));
    ASSERT_TRUE(has(&p.attn[0], 96 * 2) && has(&p.attn[0], 4));
    ASSERT_TRUE(!has(&p.attn[0], 96.0 / 64 * 2));
    ASSERT_EQ_INT(p.kv_group, 1);
    ASSERT_CONTAINS(p.model, "gpt3-175b,llama3-8b");
}

TEST(estimate_sane)
{
    struct lpp_opts o;
    struct lpp_plan p;
    struct lp_err err = {0};
    struct lpp_ref_gpu g;
    struct lpp_estimate e;
    lpp_ref_h100(&g);
    lpp_opts_default(&o);
    ASSERT_OK(lpp_plan_default(&o, &p, &err));
    ASSERT_OK(lpp_estimate(&p, &g, 1, 1, &e, NULL));
    /* the default run is sized for about five minutes on one GPU */
    ASSERT_TRUE(e.total_s > 120 && e.total_s < 420);
    ASSERT_EQ_INT(e.points[LPP_COLL], 0);
    ASSERT_EQ_INT(e.tables[LPP_GEMM], 9);
    ASSERT_EQ_INT(e.points[LPP_GEMM], 9 * 729);
    ASSERT_EQ_INT(e.tables[LPP_ATTN], 20); /* fused 8, unfused 8, unfused_fs causal 4 */
    ASSERT_EQ_INT(e.tables[LPP_MEM], LP_MEM_KIND_COUNT);
    for (int f = 0; f < LPP_COLL; f++)
        ASSERT_TRUE(e.seconds[f] > 0);

    /* a node of 8: five collectives on the intra tier, rank counts 2, 4, 8 */
    ASSERT_OK(lpp_estimate(&p, &g, 8, 8, &e, NULL));
    ASSERT_EQ_INT(e.tables[LPP_COLL], LP_COLL_COUNT);
    ASSERT_EQ_INT(e.points[LPP_COLL], LP_COLL_COUNT * 3 * p.coll_bytes.n);
    /* two nodes of 8: both tiers */
    ASSERT_OK(lpp_estimate(&p, &g, 16, 8, &e, NULL));
    ASSERT_EQ_INT(e.tables[LPP_COLL], 2 * LP_COLL_COUNT);

    o.quick = true;
    ASSERT_OK(lpp_plan_default(&o, &p, &err));
    ASSERT_OK(lpp_estimate(&p, &g, 1, 1, &e, NULL));
    ASSERT_TRUE(e.total_s > 0.1 && e.total_s < 60);
    ASSERT_TRUE(p.prec[LP_BF16] && !p.prec[LP_FP8]); /* --quick: bf16 unless asked */
    ASSERT_EQ_INT(p.reps, 5);
}

/* One bf16 GEMM of 8192^3: 2*8192^3 = 1.0995e12 FLOP at 0.7 * 989e12 FLOP/s
 * = 1.588 ms, plus 5 us launch. */
TEST(estimate_points)
{
    struct lpp_ref_gpu g;
    lpp_ref_h100(&g);
    ASSERT_NEAR(lpp_est_gemm_s(&g, LP_BF16, 8192, 8192, 8192), 1.0995116e12 / (0.7 * 989e12) + 5e-6,
                1e-6);
    /* a tiny GEMM is bound by launch + bytes, not flops */
    ASSERT_TRUE(lpp_est_gemm_s(&g, LP_BF16, 128, 128, 128) < 1e-5);
    ASSERT_TRUE(lpp_est_gemm_s(&g, LP_FP8, 8192, 8192, 8192) <
                lpp_est_gemm_s(&g, LP_BF16, 8192, 8192, 8192));
    /* FA2 forward: 4 s^2 d per head, causal half, backward 2.5x */
    ASSERT_NEAR(lpp_attn_flops(false, LP_PASS_FWD, 1, 1024, 128), 4.0 * 1024 * 1024 * 128, 1e-12);
    ASSERT_NEAR(lpp_attn_flops(true, LP_PASS_BWD, 2, 1024, 128), 2.5 * 4.0 * 1024 * 1024 * 128,
                1e-12);
    ASSERT_TRUE(lpp_est_attn_s(&g, LP_ATTN_UNFUSED, false, LP_PASS_FWD, LP_BF16, 64, 4096, 128) >
                lpp_est_attn_s(&g, LP_ATTN_FUSED, false, LP_PASS_FWD, LP_BF16, 64, 4096, 128));
    ASSERT_NEAR(lpp_est_mem_s(&g, 3.35e12), 1 / 0.7 + 5e-6, 1e-9);
}

/* nccl-tests doc/PERFORMANCE.md: allreduce 2(n-1)/n, allgather and
 * reducescatter (n-1)/n, alltoall (n-1)/n, sendrecv 1. */
TEST(busbw_factors)
{
    ASSERT_NEAR(lp_coll_bus_factor(LP_COLL_ALLREDUCE, 8), 1.75, 1e-12);
    ASSERT_NEAR(lp_coll_bus_factor(LP_COLL_ALLGATHER, 8), 0.875, 1e-12);
    ASSERT_NEAR(lp_coll_bus_factor(LP_COLL_REDUCESCATTER, 4), 0.75, 1e-12);
    ASSERT_NEAR(lp_coll_bus_factor(LP_COLL_ALLTOALL, 2), 0.5, 1e-12);
    ASSERT_NEAR(lp_coll_bus_factor(LP_COLL_SENDRECV, 16), 1.0, 1e-12);
    ASSERT_NEAR(lp_coll_bus_factor(LP_COLL_ALLREDUCE, 1), 0.0, 0);

    size_t count;
    /* allgather of 1 MiB total over 8 ranks of bf16: 65536 elements each */
    ASSERT_NEAR(lpp_coll_count(LP_COLL_ALLGATHER, 1048576, 8, 2, &count), 1048576, 0);
    ASSERT_EQ_INT(count, 65536);
    ASSERT_NEAR(lpp_coll_count(LP_COLL_ALLREDUCE, 1048576, 8, 2, &count), 1048576, 0);
    ASSERT_EQ_INT(count, 524288);
    /* not a multiple of ranks*elem: rounded down */
    ASSERT_NEAR(lpp_coll_count(LP_COLL_ALLTOALL, 1000, 3, 2, &count), 996, 0);
    ASSERT_EQ_INT(count, 166);
}

TEST(coll_ranks)
{
    int r[32];
    ASSERT_EQ_INT(lpp_coll_ranks(LP_TIER_INTRA, 8, 8, r, 32), 3);
    ASSERT_EQ_INT(r[0], 2);
    ASSERT_EQ_INT(r[2], 8);
    ASSERT_EQ_INT(lpp_coll_ranks(LP_TIER_INTRA, 6, 6, r, 32), 3);
    ASSERT_EQ_INT(r[2], 6);
    ASSERT_EQ_INT(lpp_coll_ranks(LP_TIER_INTRA, 1, 1, r, 32), 0);
    ASSERT_EQ_INT(lpp_coll_ranks(LP_TIER_INTER, 8, 8, r, 32), 0);
    ASSERT_EQ_INT(lpp_coll_ranks(LP_TIER_INTER, 32, 8, r, 32), 2);
    ASSERT_EQ_INT(r[0], 16);
    ASSERT_EQ_INT(r[1], 32);
    ASSERT_EQ_INT(lpp_coll_ranks(LP_TIER_INTER, 24, 8, r, 32), 2);
    ASSERT_EQ_INT(r[1], 24);
}

/* 1..10: median 5.5; p10 at position 0.9 -> 1.9, p90 at 8.1 -> 9.1. */
TEST(stats)
{
    double x[] = {10, 3, 1, 7, 2, 9, 4, 8, 6, 5};
    double med, spread;
    lpp_stats(x, 10, &med, &spread);
    ASSERT_NEAR(med, 5.5, 1e-12);
    ASSERT_NEAR(spread, (9.1 - 1.9) / 5.5, 1e-12);
    double one[] = {2.5};
    lpp_stats(one, 1, &med, &spread);
    ASSERT_NEAR(med, 2.5, 0);
    ASSERT_NEAR(spread, 0, 0);
}

TH_MAIN(TH_CASE(axis_geom_and_add), TH_CASE(opts_defaults_and_forms), TH_CASE(opts_rejects),
        TH_CASE(planner_gpt3), TH_CASE(planner_gqa_swiglu), TH_CASE(planner_moe),
        TH_CASE(planner_sweep), TH_CASE(estimate_sane), TH_CASE(estimate_points),
        TH_CASE(busbw_factors), TH_CASE(coll_ranks), TH_CASE(stats))
