/* Model shape as a sweep dimension: the generator's rules
 * (src/core/shapes.c) against shapes that real model families use, and a
 * sweep with thousands of generated shapes (src/io/sweep_json.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "llmplan/io.h"
#include "llmplan/search.h"
#include "llmplan/shapes.h"

static struct lp_model base_gelu(void)
{
    struct lp_model b;
    memset(&b, 0, sizeof(b));
    snprintf(b.name, sizeof(b.name), "gpt-like");
    b.layers = 96, b.hidden = 12288, b.heads = 96, b.kv_heads = 96, b.ffn_hidden = 49152;
    b.vocab = 50257, b.seq_len = 2048, b.ffn_act = LP_ACT_GELU, b.tied_embeddings = true;
    b.bias = true;
    return b;
}

TEST(rules_reproduce_real_shapes)
{
    struct lp_model b = base_gelu(), out[4];
    struct lp_shape_gen g;
    lp_shape_gen_defaults(&g, &b);
    /* GPT-3 175B (Brown et al. 2020, Table 2.1): 96 layers, d 12288, 96
     * heads of 128, ffn 4d = 49152 */
    g.layers_min = g.layers_max = 96;
    g.hidden_min = g.hidden_max = 12288;
    int n = 0;
    ASSERT_OK(lp_shapes_generate(&g, &b, out, 4, &n, NULL));
    ASSERT_EQ_INT(n, 1);
    ASSERT_EQ_STR(out[0].name, "L96-h12288");
    ASSERT_EQ_INT(out[0].heads, 96);
    ASSERT_EQ_INT(out[0].ffn_hidden, 49152);
    ASSERT_EQ_INT(out[0].vocab, 50257);
    ASSERT_NEAR(lp_model_params(&out[0]), lp_model_params(&b), 1e-12);
    /* a SwiGLU GQA template (LLaMA-2 70B: 64 heads, 8 KV heads): 8/3 d
     * rounded up to 256 gives LLaMA-7B's 11008 at d 4096 (Touvron et al.
     * 2023, Table 2 / model.py multiple_of 256), and the KV ratio 8 is kept */
    b.ffn_act = LP_ACT_SWIGLU, b.heads = 64, b.kv_heads = 8, b.hidden = 8192;
    lp_shape_gen_defaults(&g, &b);
    g.layers_min = g.layers_max = 32;
    g.hidden_min = g.hidden_max = 4096;
    ASSERT_OK(lp_shapes_generate(&g, &b, out, 4, &n, NULL));
    ASSERT_EQ_INT(out[0].ffn_hidden, 11008);
    ASSERT_EQ_INT(out[0].heads, 32);
    ASSERT_EQ_INT(out[0].kv_heads, 4);
}

TEST(ranges_and_aspect)
{
    /* layers 8, 12, 16 x hidden 1024 .. 2048 step 256 (5 values) = 15; aspect
     * hidden/layers in [100, 200] keeps (8: 1024..1536 -> 128, 160, 192: 3),
     * (12: 1280..2048 -> 107, 128, 149, 171: 4), (16: 1792, 2048 -> 112, 128: 2)
     * = 9 */
    struct lp_model b = base_gelu();
    struct lp_shape_gen g;
    lp_shape_gen_defaults(&g, &b);
    g.layers_min = 8, g.layers_max = 16, g.layers_step = 4;
    g.hidden_min = 1024, g.hidden_max = 2048, g.hidden_step = 256;
    int n = 0;
    ASSERT_OK(lp_shapes_generate(&g, &b, NULL, 0, &n, NULL));
    ASSERT_EQ_INT(n, 15);
    g.aspect_min = 100, g.aspect_max = 200;
    struct lp_model out[16];
    ASSERT_OK(lp_shapes_generate(&g, &b, out, 16, &n, NULL));
    ASSERT_EQ_INT(n, 9);
    ASSERT_EQ_STR(out[0].name, "L8-h1024");
    ASSERT_EQ_STR(out[3].name, "L12-h1280");
    ASSERT_EQ_STR(out[7].name, "L16-h1792");
    ASSERT_EQ_STR(out[8].name, "L16-h2048");
    /* bad rules are refused */
    struct lp_err err;
    lp_err_clear(&err);
    g.hidden_step = 100; /* not a multiple of head_dim 128 */
    ASSERT_TRUE(lp_shapes_generate(&g, &b, NULL, 0, &n, &err) == LP_EINVAL);
    ASSERT_CONTAINS(err.msg, "head_dim");
}

static const char *SWEEP =
    "{\"models\": [\"gpt3-1.3b\", {\"generator\": {\"base\": \"gpt3-175b\","
    " \"layers\": {\"min\": 4, \"max\": 96, \"step\": 2},"
    " \"hidden\": {\"min\": 512, \"max\": 8192, \"step\": 128}}}],"
    " \"system\": \"dgx-a100-80gb\", \"gpus\": [8], \"training\": {\"global_batch\": 64}}";

TEST(sweep_with_thousands_of_shapes)
{
    /* 47 depths (4..96 step 2) x 61 widths (512..8192 step 128) = 2867 shapes
     * after the preset: 2868 models, far above the 64 values of any other
     * dimension; the model digit indexes them all */
    struct lp_sweep *sw = NULL;
    struct lp_err err;
    lp_err_clear(&err);
    if (lp_sweep_parse(SWEEP, "t.json", &sw, &err) != LP_OK) TH_FAIL_("parse: %s", err.msg);
    ASSERT_EQ_INT(sw->nvalues[LP_DIM_MODEL], 1 + 47 * 61);
    ASSERT_EQ_STR(sw->models[0].name, "gpt3-1.3b");
    ASSERT_EQ_STR(sw->models[1].name, "L4-h512");
    ASSERT_EQ_STR(sw->models[2867].name, "L96-h8192");
    struct lp_space sp;
    ASSERT_OK(lp_space_init(&sp, sw, &err));
    int digit[LP_DIM_COUNT] = {0};
    digit[LP_DIM_MODEL] = 2000; /* beyond values[][64] */
    struct lp_run run;
    enum lp_reason why;
    uint64_t span;
    ASSERT_TRUE(lp_space_decode(&sp, lp_space_encode(&sp, digit), &run, &why, &span) ==
                LP_SPACE_VALID);
    ASSERT_EQ_STR(run.model.name, sw->models[2000].name);
    lp_sweep_destroy(&sw);
    /* too many shapes: refused with the key named */
    char big[1024];
    snprintf(big, sizeof(big), "%s",
             "{\"model\": {\"generator\": {\"base\": \"gpt3-175b\","
             " \"layers\": {\"min\": 1, \"max\": 200}, \"hidden\": {\"min\": 128, \"max\": 8192}}},"
             " \"system\": \"dgx-a100-80gb\", \"gpus\": 8, \"training\": {\"global_batch\": 64}}");
    ASSERT_TRUE(lp_sweep_parse(big, "t.json", &sw, &err) == LP_EINVAL);
    ASSERT_CONTAINS(err.msg, "at most 4096 models");
    ASSERT_TRUE(lp_sweep_parse("{\"model\": {\"generator\": {\"base\": \"gpt3-175b\", \"layers\":"
                               " {\"min\": 2, \"max\": 4}, \"hidden\": {\"min\": 256, \"max\": "
                               "512}, \"depth\": 1}}, \"system\": \"dgx-a100-80gb\", \"gpus\": 8,"
                               " \"training\": {\"global_batch\": 64}}",
                               "t.json", &sw, &err) == LP_EINVAL);
    ASSERT_CONTAINS(err.msg, "model.generator.depth");
}

TH_MAIN(TH_CASE(rules_reproduce_real_shapes), TH_CASE(ranges_and_aspect),
        TH_CASE(sweep_with_thousands_of_shapes))
