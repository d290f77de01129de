/* Interpolation tables, profile objects, the checksum, the table cost
 * backend and the analytical profile (src/core/table.c, cost_table.c,
 * synth.c). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "llmplan/profile.h"

/* A 1-D table on axis `name` over 1, 2, 4, 8 with value = c * x^p. */
static int power_table(struct lp_table *t, const char *name, double c, double p)
{
    const int dims[1] = {4};
    if (lp_table_alloc(t, 1, dims, false, NULL) != LP_OK) return -1;
    snprintf(t->axis_name[0], sizeof(t->axis_name[0]), "%s", name);
    for (int i = 0; i < 4; i++) {
        t->axis[0][i] = pow(2.0, i);
        t->value[i] = c * pow(t->axis[0][i], p);
    }
    return 0;
}

/* A 3-D GEMM-like table: value = 1e-6 + 2mnk / 1e14 over 64..512 per axis. */
static int gemm_table(struct lp_table *t)
{
    const int dims[3] = {4, 4, 4};
    if (lp_table_alloc(t, 3, dims, false, NULL) != LP_OK) return -1;
    const char *names[3] = {"m", "n", "k"};
    for (int d = 0; d < 3; d++) {
        snprintf(t->axis_name[d], sizeof(t->axis_name[d]), "%s", names[d]);
        for (int i = 0; i < 4; i++)
            t->axis[d][i] = 64.0 * pow(2.0, i);
    }
    int o = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 4; l++)
                t->value[o++] = 1e-6 + 2.0 * t->axis[0][i] * t->axis[1][j] * t->axis[2][l] / 1e14;
    return 0;
}

TEST(names)
{
    ASSERT_EQ_STR(lp_gemm_layout_name(LP_GEMM_WGRAD), "wgrad");
    ASSERT_EQ_STR(lp_attn_impl_name(LP_ATTN_UNFUSED), "unfused");
    ASSERT_EQ_STR(lp_attn_impl_name(LP_ATTN_UNFUSED_FS), "unfused_fs");
    ASSERT_EQ_STR(lp_pass_name(LP_PASS_BWD), "bwd");
    ASSERT_EQ_STR(lp_mem_kind_name(LP_MEM_CROSS_ENTROPY), "cross_entropy");
    ASSERT_EQ_STR(lp_mem_kind_name(LP_MEM_COPY), "copy");
    ASSERT_EQ_STR(lp_coll_name(LP_COLL_REDUCESCATTER), "reducescatter");
    ASSERT_EQ_STR(lp_tier_name(LP_TIER_INTER), "inter");
    ASSERT_EQ_STR(lp_mem_kind_name((enum lp_mem_kind)99), "?");
    ASSERT_EQ_STR(lp_profile_slot(0)->path, "/gemm/fwd/fp32");
    ASSERT_EQ_STR(lp_profile_slot(LP_PROFILE_SLOTS - 1)->path, "/coll/sendrecv/inter");
    ASSERT_TRUE(lp_profile_slot(LP_PROFILE_SLOTS) == NULL);
}

TEST(slots_map_to_tables)
{
    struct lp_profile *p = NULL;
    ASSERT_OK(lp_profile_create(&p, NULL));
    /* every slot maps to a distinct table and its path names that table */
    ASSERT_TRUE(lp_profile_slot_table(p, 2) == &p->gemm[LP_GEMM_FWD][LP_BF16]);
    int i_attn = 12 + ((1 * 2 + 1) * 2 + 1) * 4 + LP_FP16; /* unfused causal bwd fp16 */
    ASSERT_TRUE(lp_profile_slot_table(p, i_attn) == &p->attn[1][1][1][LP_FP16]);
    ASSERT_EQ_STR(lp_profile_slot(i_attn)->path, "/attention/unfused/causal/bwd/fp16");
    int i_tri = 12 + ((3 * 2 + 0) * 2 + 0) * 4 + LP_BF16; /* triton full fwd bf16 */
    ASSERT_TRUE(lp_profile_slot_table(p, i_tri) == &p->attn[LP_ATTN_TRITON][0][0][LP_BF16]);
    ASSERT_EQ_STR(lp_profile_slot(i_tri)->path, "/attention/triton/full/fwd/bf16");
    ASSERT_TRUE(!lp_profile_slot(i_tri)->required);
    ASSERT_TRUE(lp_profile_slot_table(p, 12 + 96 + LP_MEM_ADAM) == &p->mem[LP_MEM_ADAM]);
    ASSERT_TRUE(lp_profile_slot_table(p, 12 + 96 + 12 + 2 * 2 + 1) == &p->coll[2][1]);
    ASSERT_EQ_STR(lp_profile_slot(12 + 96 + 12 + 2 * 2 + 1)->path, "/coll/reducescatter/inter");
    for (int i = 0; i < LP_PROFILE_SLOTS; i++)
        for (int j = i + 1; j < LP_PROFILE_SLOTS; j++)
            ASSERT_TRUE(lp_profile_slot_table(p, i) != lp_profile_slot_table(p, j));
    lp_profile_destroy(&p);
    ASSERT_TRUE(p == NULL);
    lp_profile_destroy(&p); /* NULL-safe */
    lp_profile_destroy(NULL);
}

TEST(exact_at_grid_points)
{
    struct lp_table t;
    ASSERT_TRUE(gemm_table(&t) == 0);
    bool cl = true;
    int o = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 4; l++) {
                const double x[3] = {t.axis[0][i], t.axis[1][j], t.axis[2][l]};
                double v = lp_table_lookup(&t, x, &cl);
                if (v != t.value[o]) {
                    lp_table_free(&t);
                    ASSERT_TRUE(v == t.value[o]);
                }
                ASSERT_TRUE(!cl);
                o++;
            }
    lp_table_free(&t);
}

TEST(loglog_exact_for_power_laws)
{
    /* log-log interpolation reproduces a power law between grid points */
    struct lp_table t;
    ASSERT_TRUE(power_table(&t, "bytes", 3.0, 1.5) == 0);
    bool cl = true;
    double x = 3.0;
    ASSERT_NEAR(lp_table_lookup(&t, &x, &cl), 3.0 * pow(3.0, 1.5), 1e-12);
    ASSERT_TRUE(!cl);
    x = 1.25;
    ASSERT_NEAR(lp_table_lookup(&t, &x, &cl), 3.0 * pow(1.25, 1.5), 1e-12);
    lp_table_free(&t);
}

TEST(monotone_between_points)
{
    struct lp_table t;
    ASSERT_TRUE(gemm_table(&t) == 0);
    double prev = 0;
    for (double m = 64; m <= 512; m *= 1.01) {
        const double x[3] = {m, 100.0, 300.0};
        double v = lp_table_lookup(&t, x, NULL);
        ASSERT_TRUE(v >= prev);
        prev = v;
    }
    /* and along a diagonal through all three axes */
    prev = 0;
    for (double s = 64; s <= 512; s *= 1.013) {
        const double x[3] = {s, 512 * 64 / s, s};
        double v = lp_table_lookup(&t, x, NULL);
        ASSERT_TRUE(isfinite(v) && v > 0);
        const double y[3] = {s, 200, s};
        double w = lp_table_lookup(&t, y, NULL);
        ASSERT_TRUE(w >= prev);
        prev = w;
    }
    lp_table_free(&t);
}

TEST(clamping_below_and_on_non_size_axes)
{
    struct lp_table t;
    ASSERT_TRUE(power_table(&t, "head_dim", 2.0, 1.0) == 0);
    bool cl = false;
    double x = 0.5; /* below the grid: the first value */
    ASSERT_NEAR(lp_table_lookup(&t, &x, &cl), 2.0, 0);
    ASSERT_TRUE(cl);
    x = 100; /* head_dim is not size-like: clamped to the last value */
    ASSERT_NEAR(lp_table_lookup(&t, &x, &cl), 16.0, 0);
    ASSERT_TRUE(cl);
    x = 8; /* the last point itself is inside */
    ASSERT_NEAR(lp_table_lookup(&t, &x, &cl), 16.0, 0);
    ASSERT_TRUE(!cl);
    x = -1;
    ASSERT_NEAR(lp_table_lookup(&t, &x, &cl), 2.0, 0);
    ASSERT_TRUE(cl);
    x = NAN;
    ASSERT_TRUE(isnan(lp_table_lookup(&t, &x, &cl)));
    lp_table_free(&t);
}

TEST(extrapolation_along_size_axes)
{
    struct lp_table t;
    bool cl = false;
    /* bytes: linear in the size beyond the last point */
    ASSERT_TRUE(power_table(&t, "bytes", 1e-6, 0.5) == 0);
    double x = 32; /* 4x the last point */
    ASSERT_NEAR(lp_table_lookup(&t, &x, &cl), 1e-6 * sqrt(8.0) * 4.0, 1e-12);
    ASSERT_TRUE(cl);
    lp_table_free(&t);
    /* seq: quadratic */
    ASSERT_TRUE(power_table(&t, "seq", 1.0, 2.0) == 0);
    x = 16;
    ASSERT_NEAR(lp_table_lookup(&t, &x, &cl), 64.0 * 4.0, 1e-12);
    lp_table_free(&t);
    /* GEMM: m and k both beyond: the product of the ratios */
    ASSERT_TRUE(gemm_table(&t) == 0);
    const double edge[3] = {512, 128, 512}, far[3] = {2048, 128, 1024};
    double e = lp_table_lookup(&t, edge, NULL);
    ASSERT_NEAR(lp_table_lookup(&t, far, &cl), e * 4.0 * 2.0, 1e-12);
    ASSERT_TRUE(cl);
    /* explicit powers override the names */
    const double pw[3] = {0, 0, 0};
    ASSERT_NEAR(lp_table_lookup_pow(&t, far, pw, &cl), e, 1e-12);
    lp_table_free(&t);
    ASSERT_NEAR(lp_table_axis_pow("m"), 1, 0);
    ASSERT_NEAR(lp_table_axis_pow("seq"), 2, 0);
    ASSERT_NEAR(lp_table_axis_pow("msg_bytes"), 0, 0);
    ASSERT_NEAR(lp_table_axis_pow("ranks"), 0, 0);
}

TEST(single_point_axis)
{
    struct lp_table t;
    const int dims[2] = {1, 3};
    ASSERT_OK(lp_table_alloc(&t, 2, dims, false, NULL));
    snprintf(t.axis_name[0], sizeof(t.axis_name[0]), "ranks");
    snprintf(t.axis_name[1], sizeof(t.axis_name[1]), "msg_bytes");
    t.axis[0][0] = 8;
    for (int i = 0; i < 3; i++) {
        t.axis[1][i] = 1000.0 * (i + 1);
        t.value[i] = 0.1 * (i + 1);
    }
    bool cl = false;
    const double x[2] = {8, 2000};
    ASSERT_NEAR(lp_table_lookup(&t, x, &cl), 0.2, 0);
    ASSERT_TRUE(!cl);
    const double y[2] = {16, 1500};
    double v = lp_table_lookup(&t, y, &cl);
    ASSERT_TRUE(cl && v > 0.1 && v < 0.2);
    lp_table_free(&t);
}

TEST(check_refuses_bad_tables)
{
    struct lp_table t;
    struct lp_err err;
    lp_err_clear(&err);
    ASSERT_TRUE(power_table(&t, "bytes", 1.0, 1.0) == 0);
    ASSERT_OK(lp_table_check(&t, "/mem/copy", &err));
    t.value[2] = NAN;
    ASSERT_EQ_INT(lp_table_check(&t, "/mem/copy", &err), LP_EFORMAT);
    ASSERT_CONTAINS(err.msg, "/mem/copy");
    ASSERT_CONTAINS(err.msg, "value 2");
    t.value[2] = -1;
    ASSERT_EQ_INT(lp_table_check(&t, "/mem/copy", &err), LP_EFORMAT);
    t.value[2] = 4;
    t.axis[0][2] = t.axis[0][1];
    ASSERT_EQ_INT(lp_table_check(&t, "/mem/copy", &err), LP_EFORMAT);
    ASSERT_CONTAINS(err.msg, "increasing");
    t.axis[0][2] = 4;
    t.axis[0][0] = 0;
    ASSERT_EQ_INT(lp_table_check(&t, "/mem/copy", &err), LP_EFORMAT);
    lp_table_free(&t);
    lp_table_free(&t); /* zeroed: harmless */
    const int bad[1] = {0};
    ASSERT_EQ_INT(lp_table_alloc(&t, 1, bad, false, &err), LP_EINVAL);
    ASSERT_EQ_INT(lp_table_alloc(&t, 5, bad, false, &err), LP_EINVAL);
}

TEST(copy_and_checksum)
{
    struct lp_profile *a = NULL, *b = NULL;
    ASSERT_OK(lp_profile_create(&a, NULL));
    ASSERT_OK(lp_profile_create(&b, NULL));
    uint64_t empty = lp_profile_checksum(a);
    ASSERT_TRUE(gemm_table(&a->gemm[0][LP_BF16]) == 0);
    ASSERT_OK(lp_table_copy(&b->gemm[0][LP_BF16], &a->gemm[0][LP_BF16], NULL));
    uint64_t ca = lp_profile_checksum(a);
    ASSERT_TRUE(ca != empty);
    ASSERT_TRUE(ca == lp_profile_checksum(b));
    /* one value's last bit changes the checksum */
    uint64_t u;
    memcpy(&u, &b->gemm[0][LP_BF16].value[17], 8);
    u ^= 1;
    memcpy(&b->gemm[0][LP_BF16].value[17], &u, 8);
    ASSERT_TRUE(ca != lp_profile_checksum(b));
    /* the same table in another slot is another profile */
    struct lp_profile *c = NULL;
    ASSERT_OK(lp_profile_create(&c, NULL));
    ASSERT_OK(lp_table_copy(&c->gemm[1][LP_BF16], &a->gemm[0][LP_BF16], NULL));
    ASSERT_TRUE(ca != lp_profile_checksum(c));
    lp_profile_destroy(&a);
    lp_profile_destroy(&b);
    lp_profile_destroy(&c);
}

/* An A100-SXM-80GB-like GPU, as data/gpus/a100-80gb.json describes it. */
static void a100(struct lp_gpu *g)
{
    memset(g, 0, sizeof(*g));
    snprintf(g->name, sizeof(g->name), "a100-80gb");
    g->mem_bytes = 80.0 * 1073741824.0;
    g->mem_bw_Bps = 2039e9;
    g->peak_flops[LP_FP32] = 156e12;
    g->peak_flops[LP_FP16] = 312e12;
    g->peak_flops[LP_BF16] = 312e12;
    g->vector_flops = 19.5e12;
    g->sms = 108;
    g->l2_bytes = 40.0 * 1048576.0;
}

static void dgx_a100(struct lp_system *s, const struct lp_gpu *g)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "dgx-a100-80gb");
    s->gpu = *g;
    s->gpus_per_node = 8;
    s->intra.bw_Bps = 300e9;
    s->inter.bw_Bps = 25e9;
}

static double of_lookup(const struct lp_profile *p, enum lp_attn_impl impl, const double *x)
{
    return lp_table_lookup(&p->attn[impl][0][LP_PASS_FWD][LP_BF16], x, NULL);
}

TEST(synth_a100)
{
    struct lp_gpu g;
    struct lp_system s;
    a100(&g);
    dgx_a100(&s, &g);
    struct lp_profile *p = NULL;
    struct lp_err err;
    lp_err_clear(&err);
    ASSERT_OK(lp_profile_synth(&g, &s, &p, &err));
    int nonmono = -1;
    ASSERT_OK(lp_profile_check(p, &nonmono, &err));
    ASSERT_EQ_INT(nonmono, 0);
    ASSERT_EQ_STR(p->source, "analytical");
    ASSERT_TRUE(p->checksum == lp_profile_checksum(p));
    ASSERT_TRUE(!lp_table_present(&p->gemm[LP_GEMM_FWD][LP_FP8])); /* A100 has no fp8 */
    ASSERT_TRUE(!lp_table_present(&p->attn[LP_ATTN_FUSED][0][0][LP_FP32]));
    ASSERT_TRUE(lp_table_present(&p->attn[LP_ATTN_UNFUSED][0][0][LP_FP32]));
    ASSERT_TRUE(lp_profile_get_prov(p, "gemm_max_frac_bf16") != NULL);
    ASSERT_CONTAINS(lp_profile_get_prov(p, "gemm_max_frac_bf16"), "K0002");
    ASSERT_CONTAINS(lp_profile_get_prov(p, "ref_system"), "dgx-a100-80gb");

    /* GEMM: the MAMF fraction (K0002: 271.2 of 312 TFLOP/s) is the model's
     * maximum; 8192^3 has 2048 tiles of 128x256 over 108 SMs (19 waves,
     * 2048/2052) and k fill 8192/(8192+128): 271.2 * 0.998 * 0.985 = 266.6 */
    const double x8k[3] = {8192, 8192, 8192};
    double t = lp_table_lookup(&p->gemm[LP_GEMM_FWD][LP_BF16], x8k, NULL);
    double tflops = 2.0 * 8192.0 * 8192.0 * 8192.0 / t / 1e12;
    ASSERT_NEAR(tflops, 271.2 * (2048.0 / 2052.0) * (8192.0 / 8320.0), 1e-3);
    /* small GEMMs are far from peak; time grows with every dimension */
    const double xs[3] = {256, 256, 256};
    double ts = lp_table_lookup(&p->gemm[LP_GEMM_FWD][LP_BF16], xs, NULL);
    ASSERT_TRUE(2.0 * 256 * 256 * 256 / ts / 1e12 < 50);

    /* FlashAttention-2 fwd, seq 2048, d 128: A100 fraction 0.678 of 312
     * (derived from K0075 and the H100 fwd/fwd+bwd ratio) over the
     * benchmark's own wave (2048 blocks on 108 SMs: 2048/2052), less the
     * waves of 64*16 blocks over 108 SMs (1024/1080) */
    const double xa[3] = {64, 2048, 128};
    double ta = lp_table_lookup(&p->attn[LP_ATTN_FUSED][0][LP_PASS_FWD][LP_BF16], xa, NULL);
    double fa =
        4.0 * 64 * 2048.0 * 2048.0 * 128 / 312e12 / (0.678 / (2048.0 / 2052.0) * 1024.0 / 1080.0);
    ASSERT_NEAR(ta, 3e-6 + fa, 1e-3);
    /* fwd+bwd TFLOP/s ~ the K0075 row (187) for the benchmark's batch*heads 128 */
    const double xb[3] = {128, 2048, 128};
    double tf = lp_table_lookup(&p->attn[LP_ATTN_FUSED][0][LP_PASS_FWD][LP_BF16], xb, NULL);
    double tb = lp_table_lookup(&p->attn[LP_ATTN_FUSED][0][LP_PASS_BWD][LP_BF16], xb, NULL);
    double fb = 3.5 * 4.0 * 128 * 2048.0 * 2048.0 * 128 / (tf + tb) / 1e12;
    ASSERT_NEAR(fb, 187.0, 0.05);
    /* unfused is slower than fused; causal fused is faster than full */
    double tu = lp_table_lookup(&p->attn[LP_ATTN_UNFUSED][0][LP_PASS_FWD][LP_BF16], xa, NULL);
    double tc = lp_table_lookup(&p->attn[LP_ATTN_FUSED][1][LP_PASS_FWD][LP_BF16], xa, NULL);
    ASSERT_TRUE(tu > 2 * ta);
    ASSERT_TRUE(tc < ta);
    /* older fused kernels at the benchmark's points: FlashAttention v1 d128
     * full seq 2048 reproduces K0057 (76 TFLOP/s); `triton` (MPT's
     * flash_attn_triton.py: FlashAttention-2's forward, v1's backward,
     * synth.c) d64 causal seq 4096, by hand from the tables' rows: forward
     * 0.543 x 312 (FA2 fraction), backward 0.485 x 312 x 87/156 (FA2's
     * backward fraction x v1/FA2 K0087/K0105), 3.5 / (1/fwd + 2.5/bwd) =
     * 98.5 (causal FLOPs halved); v1's own row K0087 is 87, the FA2
     * figure's Triton row K0099 (OpenAI's triton.ops, another kernel) 76 */
    const enum lp_attn_impl old_impl[2] = {LP_ATTN_FLASH1, LP_ATTN_TRITON};
    const double ox[2][3] = {{128, 2048, 128}, {128, 4096, 64}};
    const double orow[2] = {76.0, 98.5};
    for (int i = 0; i < 2; i++) {
        const int cz = i == 1;
        double of = lp_table_lookup(&p->attn[old_impl[i]][cz][LP_PASS_FWD][LP_BF16], ox[i], NULL);
        double ob = lp_table_lookup(&p->attn[old_impl[i]][cz][LP_PASS_BWD][LP_BF16], ox[i], NULL);
        double fl = 3.5 * 4.0 * ox[i][0] * ox[i][1] * ox[i][1] * ox[i][2] * (cz ? 0.5 : 1.0);
        ASSERT_NEAR(fl / (of + ob) / 1e12, orow[i], 0.05);
    }
    /* a profile without flash1 tables (a measured one) scales its fused
     * table by the calibration's attn_old_ratio (0.52 built in) */
    struct lp_cost_model cm;
    lp_cost_model_table(&cm, p, &g);
    double with_table =
        cm.ops->attn_s(&cm, LP_ATTN_FLASH1, false, LP_PASS_FWD, LP_BF16, 128, 2048, 128);
    ASSERT_NEAR(with_table, of_lookup(p, LP_ATTN_FLASH1, xb), 1e-9);
    lp_table_free(&p->attn[LP_ATTN_FLASH1][0][LP_PASS_FWD][LP_BF16]);
    double scaled =
        cm.ops->attn_s(&cm, LP_ATTN_FLASH1, false, LP_PASS_FWD, LP_BF16, 128, 2048, 128);
    ASSERT_NEAR(scaled, of_lookup(p, LP_ATTN_FUSED, xb) / 0.52, 1e-9);
    cm.attn_old_ratio = 0.26; /* a calibration file's value is the one used */
    ASSERT_NEAR(cm.ops->attn_s(&cm, LP_ATTN_FLASH1, false, LP_PASS_FWD, LP_BF16, 128, 2048, 128),
                2.0 * scaled, 1e-9);
    /* without triton tables: its forward is the fused table's (FA2's
     * partition), its backward the fused one at the v1 ratio
     * (lp_attn_pass_is_v1); the roofline backend does the same */
    cm.attn_old_ratio = 0.52;
    for (int i = 0; i < LP_PASS_COUNT; i++) {
        const enum lp_pass ps = (enum lp_pass)i;
        lp_table_free(&p->attn[LP_ATTN_TRITON][0][ps][LP_BF16]);
        const double fused = lp_table_lookup(&p->attn[LP_ATTN_FUSED][0][ps][LP_BF16], xb, NULL);
        ASSERT_NEAR(cm.ops->attn_s(&cm, LP_ATTN_TRITON, false, ps, LP_BF16, 128, 2048, 128),
                    ps == LP_PASS_FWD ? fused : fused / 0.52, 1e-9);
    }
    struct lp_cost_model rl;
    lp_cost_model_roofline(&rl, &g);
    for (int i = 0; i < LP_PASS_COUNT; i++) {
        const enum lp_pass ps = (enum lp_pass)i;
        ASSERT_NEAR(rl.ops->attn_s(&rl, LP_ATTN_TRITON, true, ps, LP_BF16, 128, 4096, 64),
                    rl.ops->attn_s(&rl, ps == LP_PASS_FWD ? LP_ATTN_FUSED : LP_ATTN_FLASH1, true,
                                   ps, LP_BF16, 128, 4096, 64),
                    1e-12);
    }

    /* copy of 1 GiB: 0.9 of 2039 GB/s within the latency terms */
    const double gib = 1073741824.0;
    double tm = lp_table_lookup(&p->mem[LP_MEM_COPY], &gib, NULL);
    ASSERT_NEAR(gib / tm, 0.9 * 2039e9, 0.01);

    /* all-reduce intra 1 GiB, 8 ranks: ring fraction 0.8015 less the size
     * term; small messages far below */
    const double c1[2] = {gib, 8}, c2[2] = {65536, 8};
    double e1 = lp_table_lookup(&p->coll[LP_COLL_ALLREDUCE][LP_TIER_INTRA], c1, NULL);
    double e2 = lp_table_lookup(&p->coll[LP_COLL_ALLREDUCE][LP_TIER_INTRA], c2, NULL);
    ASSERT_TRUE(e1 > 0.7 && e1 < 0.8015);
    ASSERT_TRUE(e2 < 0.05);
    lp_profile_destroy(&p);
}

TEST(synth_without_system_and_without_bf16)
{
    struct lp_gpu g;
    a100(&g);
    snprintf(g.name, sizeof(g.name), "v100-like");
    g.peak_flops[LP_BF16] = 0;
    g.peak_flops[LP_FP32] = 0;
    g.peak_flops[LP_FP16] = 125e12;
    g.sms = 80;
    struct lp_profile *p = NULL;
    struct lp_err err;
    lp_err_clear(&err);
    ASSERT_OK(lp_profile_synth(&g, NULL, &p, &err));
    ASSERT_OK(lp_profile_check(p, NULL, &err)); /* fp16 stands in for bf16 */
    ASSERT_CONTAINS(lp_profile_get_prov(p, "ref_system"), "none");
    ASSERT_CONTAINS(lp_profile_get_prov(p, "gemm_max_frac_fp16"), "no MAMF row");
    lp_profile_destroy(&p);
    struct lp_gpu none;
    memset(&none, 0, sizeof(none));
    ASSERT_EQ_INT(lp_profile_synth(&none, NULL, &p, &err), LP_EINVAL);
    ASSERT_TRUE(p == NULL);
}

/* Time never falls when the work grows, for GPUs of every class (the
 * split-K plan is chosen with its extra memory traffic, so a memory-bound
 * GEMM does not get slower by shrinking). */
TEST(synth_monotone_across_gpus)
{
    static const struct {
        const char *name;
        double bw, bf16, fp8;
        int sms;
    } gpus[] = {{"h100-sxm", 3350e9, 989.4e12, 1978.9e12, 132},
                {"b200", 8000e9, 2250e12, 4500e12, 148},
                {"l40s", 864e9, 362e12, 733e12, 142},
                {"mi300x", 5300e9, 1307.4e12, 2614.9e12, 304}};
    for (size_t i = 0; i < sizeof(gpus) / sizeof(gpus[0]); i++) {
        struct lp_gpu g;
        a100(&g);
        snprintf(g.name, sizeof(g.name), "%s", gpus[i].name);
        g.mem_bw_Bps = gpus[i].bw;
        g.peak_flops[LP_FP32] = gpus[i].bf16 / 2;
        g.peak_flops[LP_FP16] = g.peak_flops[LP_BF16] = gpus[i].bf16;
        g.peak_flops[LP_FP8] = gpus[i].fp8;
        g.sms = gpus[i].sms;
        struct lp_system s;
        dgx_a100(&s, &g);
        s.intra.bw_Bps = 450e9;
        s.inter.bw_Bps = 50e9;
        struct lp_profile *p = NULL;
        int nonmono = -1;
        int rc = lp_profile_synth(&g, &s, &p, NULL);
        if (rc == LP_OK) rc = lp_profile_check(p, &nonmono, NULL);
        lp_profile_destroy(&p);
        ASSERT_OK(rc);
        ASSERT_EQ_INT(nonmono, 0);
    }
}

TEST(profile_check_required)
{
    struct lp_gpu g;
    a100(&g);
    struct lp_profile *p = NULL;
    struct lp_err err;
    lp_err_clear(&err);
    ASSERT_OK(lp_profile_synth(&g, NULL, &p, &err));
    lp_table_free(&p->mem[LP_MEM_ROPE]);
    ASSERT_EQ_INT(lp_profile_check(p, NULL, &err), LP_EFORMAT);
    ASSERT_CONTAINS(err.msg, "/mem/rope");
    lp_profile_destroy(&p);
}

TEST(cost_table_and_fallbacks)
{
    struct lp_gpu g;
    a100(&g);
    struct lp_profile *p = NULL;
    ASSERT_OK(lp_profile_synth(&g, NULL, &p, NULL));
    struct lp_cost_model tb, rl;
    lp_cost_model_table(&tb, p, &g);
    lp_cost_model_roofline(&rl, &g);
    ASSERT_EQ_STR(tb.ops->name, "table");
    const double x[3] = {4096, 4096, 4096};
    ASSERT_NEAR(tb.ops->gemm_s(&tb, LP_GEMM_DGRAD, LP_BF16, 4096, 4096, 4096),
                lp_table_lookup(&p->gemm[LP_GEMM_DGRAD][LP_BF16], x, NULL), 0);
    /* fp8 on A100: no table, the roofline answers */
    ASSERT_NEAR(tb.ops->gemm_s(&tb, LP_GEMM_FWD, LP_FP8, 4096, 4096, 4096),
                rl.ops->gemm_s(&rl, LP_GEMM_FWD, LP_FP8, 4096, 4096, 4096), 0);
    ASSERT_NEAR(tb.ops->attn_s(&tb, LP_ATTN_FUSED, true, LP_PASS_FWD, LP_FP32, 8, 1024, 64),
                rl.ops->attn_s(&rl, LP_ATTN_FUSED, true, LP_PASS_FWD, LP_FP32, 8, 1024, 64), 0);
    /* a collective tier the profile lacks */
    lp_table_free(&p->coll[LP_COLL_ALLTOALL][LP_TIER_INTER]);
    ASSERT_NEAR(tb.ops->coll_eff(&tb, LP_COLL_ALLTOALL, LP_TIER_INTER, 1e6, 16),
                rl.ops->coll_eff(&rl, LP_COLL_ALLTOALL, LP_TIER_INTER, 1e6, 16), 0);
    /* the collective fraction is clamped, never extrapolated above the grid */
    double big = tb.ops->coll_eff(&tb, LP_COLL_ALLREDUCE, LP_TIER_INTRA, 1e12, 8);
    double edge = tb.ops->coll_eff(&tb, LP_COLL_ALLREDUCE, LP_TIER_INTRA, 16.0 * 1073741824.0, 8);
    ASSERT_NEAR(big, edge, 0);
    /* memory time extrapolates linearly beyond 16 GiB */
    double m1 = tb.ops->mem_s(&tb, LP_MEM_ADAM, 16.0 * 1073741824.0);
    double m2 = tb.ops->mem_s(&tb, LP_MEM_ADAM, 64.0 * 1073741824.0);
    ASSERT_NEAR(m2, 4 * m1, 1e-12);
    lp_profile_destroy(&p);
}

/* cuDNN's fused attention: on a Hopper GPU the FlashAttention-2 table
 * times the measured cuDNN/FA2 forward ratio of the FA3 paper's H100
 * figure (d128 causal, seq 4096: K0283 518 over K0271 319 TFLOP/s; the
 * backward at the same ratio), elsewhere the fused table itself. */
TEST(synth_cudnn_attention)
{
    struct lp_gpu g;
    a100(&g);
    struct lp_profile *p = NULL;
    ASSERT_OK(lp_profile_synth(&g, NULL, &p, NULL));
    const double x[3] = {64, 4096, 128};
    for (int ps = 0; ps < LP_PASS_COUNT; ps++)
        ASSERT_NEAR(lp_table_lookup(&p->attn[LP_ATTN_CUDNN][1][ps][LP_BF16], x, NULL),
                    lp_table_lookup(&p->attn[LP_ATTN_FUSED][1][ps][LP_BF16], x, NULL), 1e-12);
    lp_profile_destroy(&p);
    snprintf(g.name, sizeof(g.name), "h100-sxm");
    g.peak_flops[LP_FP16] = g.peak_flops[LP_BF16] = 989.4e12;
    g.mem_bw_Bps = 3.35e12;
    g.sms = 132;
    ASSERT_OK(lp_profile_synth(&g, NULL, &p, NULL));
    ASSERT_CONTAINS(lp_profile_get_prov(p, "attn_cudnn"), "K0222-K0285");
    for (int ps = 0; ps < LP_PASS_COUNT; ps++) {
        const double tf = lp_table_lookup(&p->attn[LP_ATTN_FUSED][1][ps][LP_BF16], x, NULL);
        const double tc = lp_table_lookup(&p->attn[LP_ATTN_CUDNN][1][ps][LP_BF16], x, NULL);
        /* both include the 3 us launch; the compute part scales */
        ASSERT_NEAR((tf - 3e-6) / (tc - 3e-6), 518.0 / 319.0, 1e-3);
    }
    lp_profile_destroy(&p);
}

/* Unfused attention with Megatron's fused scale-mask-softmax (unfused_fs)
 * differs from the eager form only in its score passes: eager causal
 * forward = a mask pass and a softmax pass (2 + 2 elements read+written per
 * score, at 0.387 of HBM bandwidth, each a kernel); fused = one kernel
 * reading (s+1)/2s of each row and writing it (at 0.9). Backward: eager
 * softmax 3 at 0.387, fused 2(s+1)/2s + 1 at 0.9. Each kernel costs the
 * 3 us launch and 1 us x 0.9/eff latency (synth.c stream_s). */
TEST(synth_unfused_fused_softmax)
{
    struct lp_gpu g;
    a100(&g);
    struct lp_profile *p = NULL;
    ASSERT_OK(lp_profile_synth(&g, NULL, &p, NULL));
    const double bh = 64, s = 2048, d = 128, bw = 2039e9;
    const double x[3] = {bh, s, d};
    const double score = bh * s * s * 2.0, part = (s + 1.0) / (2.0 * s);
    const double k_eager = 3e-6 + 1e-6 * 0.9 / 0.387, k_fs = 3e-6 + 1e-6;
    const double want[LP_PASS_COUNT] = {
        2.0 * k_eager + 4.0 * score / (bw * 0.387) - k_fs - (part + 1.0) * score / (bw * 0.9),
        k_eager + 3.0 * score / (bw * 0.387) - k_fs - (2.0 * part + 1.0) * score / (bw * 0.9)};
    for (int ps = 0; ps < LP_PASS_COUNT; ps++) {
        const double te = lp_table_lookup(&p->attn[LP_ATTN_UNFUSED][1][ps][LP_BF16], x, NULL);
        const double tf = lp_table_lookup(&p->attn[LP_ATTN_UNFUSED_FS][1][ps][LP_BF16], x, NULL);
        ASSERT_NEAR((te - tf) / want[ps], 1.0, 1e-9);
        ASSERT_TRUE(tf < te);
    }
    /* without the mask the fused kernel reads every score: 2 and 3 passes */
    const double tff =
        lp_table_lookup(&p->attn[LP_ATTN_UNFUSED_FS][0][LP_PASS_FWD][LP_BF16], x, NULL);
    const double tfc =
        lp_table_lookup(&p->attn[LP_ATTN_UNFUSED_FS][1][LP_PASS_FWD][LP_BF16], x, NULL);
    ASSERT_NEAR((tff - tfc) / ((1.0 - part) * score / (bw * 0.9)), 1.0, 1e-9);
    ASSERT_CONTAINS(lp_profile_get_prov(p, "attn_unfused_fs"), "scaled_upper_triang");
    lp_profile_destroy(&p);
}

/* `triton` (MPT's flash_attn_triton.py on pre-MLIR Triton) runs
 * FlashAttention-2's forward partition (a program per query block, the K/V
 * loop inside, flash-attention v1.0.9) and, by its docstring, a backward
 * no faster than v1's: its forward tables are the fused (FA2) ones and its
 * backward the flash1 ones, on the A100 and on the H100, where the kernel
 * runs mma.sync as v1 and FA2 do. At H100 d128 causal seq 4096, by hand:
 * forward 0.322 x 989.4 (FA2's fraction), backward 0.288 x 989.4 x
 * 126/294 (FA2's backward fraction x v1/FA2 K0196/K0202): 3.5 / (1/fwd +
 * 2.5/bwd) = 148 TFLOP/s fwd+bwd, v1's row K0196 being 126. Until 2026-12
 * both passes were v1's (126); before that the FA2 figure's "Triton" rows,
 * OpenAI's triton.ops kernel. */
TEST(synth_triton_hopper)
{
    struct lp_gpu g;
    a100(&g);
    struct lp_profile *pa = NULL;
    ASSERT_OK(lp_profile_synth(&g, NULL, &pa, NULL));
    snprintf(g.name, sizeof(g.name), "h100-sxm");
    g.peak_flops[LP_FP16] = g.peak_flops[LP_BF16] = 989.4e12;
    g.mem_bw_Bps = 3.35e12;
    g.sms = 132;
    struct lp_profile *p = NULL;
    ASSERT_OK(lp_profile_synth(&g, NULL, &p, NULL));
    ASSERT_CONTAINS(lp_profile_get_prov(p, "attn_triton"), "flash1");
    ASSERT_CONTAINS(lp_profile_get_prov(p, "attn_triton"), "mma.sync");
    const double x[3] = {64, 4096, 128};
    for (int cz = 0; cz < 2; cz++)
        for (int ps = 0; ps < LP_PASS_COUNT; ps++)
            for (int k = 0; k < 2; k++) {
                const struct lp_profile *q = k ? p : pa;
                const enum lp_attn_impl same = ps == LP_PASS_FWD ? LP_ATTN_FUSED : LP_ATTN_FLASH1;
                const double tt =
                    lp_table_lookup(&q->attn[LP_ATTN_TRITON][cz][ps][LP_BF16], x, NULL);
                const double t1 = lp_table_lookup(&q->attn[same][cz][ps][LP_BF16], x, NULL);
                ASSERT_NEAR(tt / t1, 1.0, 1e-12);
            }
    /* the forward is faster than v1's, the backward equal */
    ASSERT_TRUE(lp_table_lookup(&p->attn[LP_ATTN_TRITON][1][LP_PASS_FWD][LP_BF16], x, NULL) <
                0.5 * lp_table_lookup(&p->attn[LP_ATTN_FLASH1][1][LP_PASS_FWD][LP_BF16], x, NULL));
    const double tf = lp_table_lookup(&p->attn[LP_ATTN_TRITON][1][LP_PASS_FWD][LP_BF16], x, NULL);
    const double tb = lp_table_lookup(&p->attn[LP_ATTN_TRITON][1][LP_PASS_BWD][LP_BF16], x, NULL);
    const double fl = 3.5 * 4.0 * x[0] * x[1] * x[1] * x[2] * 0.5;
    ASSERT_NEAR(fl / (tf + tb) / 1e12, 148.2, 1.0);
    lp_profile_destroy(&pa);
    lp_profile_destroy(&p);
}

TH_MAIN(TH_CASE(names), TH_CASE(slots_map_to_tables), TH_CASE(exact_at_grid_points),
        TH_CASE(loglog_exact_for_power_laws), TH_CASE(monotone_between_points),
        TH_CASE(clamping_below_and_on_non_size_axes), TH_CASE(extrapolation_along_size_axes),
        TH_CASE(single_point_axis), TH_CASE(check_refuses_bad_tables), TH_CASE(copy_and_checksum),
        TH_CASE(synth_a100), TH_CASE(synth_without_system_and_without_bf16),
        TH_CASE(synth_monotone_across_gpus), TH_CASE(profile_check_required),
        TH_CASE(cost_table_and_fallbacks), TH_CASE(synth_cudnn_attention),
        TH_CASE(synth_unfused_fused_softmax), TH_CASE(synth_triton_hopper))
