/* The configuration space: sweep parsing, mixed-radix round trip, skip spans
 * (a walk that jumps by span must count exactly what a one-by-one walk
 * counts), and agreement of the space's structural checks with
 * lp_sim_validate. */
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "llmplan/io.h"
#include "llmplan/search.h"

static const char *const SWEEP =
    "{\"model\": \"gpt3-175b\", \"system\": \"dgx-a100-80gb\","
    " \"gpus\": {\"min\": 64, \"max\": 512, \"step\": \"x2\"},"
    " \"training\": {\"global_batch\": 512},"
    " \"space\": {\"tp\": [1, 2, 4, 8, 16], \"pp\": \"auto\", \"cp\": [1, 2],"
    "   \"vp\": [1, 2, 3], \"micro_batch\": [1, 2, 4, 3],"
    "   \"sequence_parallel\": \"auto\", \"recompute\": \"auto\", \"zero\": [0, 1, 3],"
    "   \"schedule\": \"auto\"}}";

TEST(parse_and_size)
{
    struct lp_sweep *sw = lp_fixture_sweep(SWEEP);
    ASSERT_TRUE(sw != NULL);
    ASSERT_EQ_INT(sw->nvalues[LP_DIM_GPUS], 4); /* 64, 128, 256, 512 */
    ASSERT_EQ_INT(sw->values[LP_DIM_GPUS][3], 512);
    /* pp auto: powers of two up to min(max gpus 512, layers 96) = 1..64 */
    ASSERT_EQ_INT(sw->nvalues[LP_DIM_PP], 7);
    ASSERT_EQ_INT(sw->nvalues[LP_DIM_RECOMPUTE], 3);
    ASSERT_EQ_INT(sw->nvalues[LP_DIM_SCHEDULE], 4); /* gpipe, 1f1b, interleaved, zb */
    ASSERT_EQ_INT(sw->nvalues[LP_DIM_SP], 2);
    ASSERT_EQ_INT(sw->top_k, 10);
    struct lp_space s;
    ASSERT_OK(lp_space_init(&s, sw, NULL));
    uint64_t expect = 1;
    for (int d = 0; d < LP_DIM_COUNT; d++)
        expect *= (uint64_t)sw->nvalues[d];
    ASSERT_EQ_INT(lp_space_size(&s), expect);
    ASSERT_EQ_INT(expect, 4ull * 5 * 7 * 2 * 1 * 3 * 4 * 4 * 2 * 3 * 3);
    lp_sweep_destroy(&sw);
    ASSERT_TRUE(sw == NULL);
    lp_sweep_destroy(&sw); /* NULL-safe */
}

TEST(round_trip)
{
    struct lp_sweep *sw = lp_fixture_sweep(SWEEP);
    ASSERT_TRUE(sw != NULL);
    struct lp_space s;
    ASSERT_OK(lp_space_init(&s, sw, NULL));
    srand(7);
    for (int k = 0; k < 20000; k++) {
        uint64_t i = ((uint64_t)rand() * 7919u + (uint64_t)rand()) % lp_space_size(&s);
        int dg[LP_DIM_COUNT];
        lp_space_digits(&s, i, dg);
        for (int d = 0; d < LP_DIM_COUNT; d++)
            ASSERT_TRUE(dg[d] >= 0 && dg[d] < s.radix[d]);
        ASSERT_EQ_INT(lp_space_encode(&s, dg), i);
    }
    /* the last dimension varies fastest: zero here, the settings
     * dimensions after it (framework, attention, precision) are not swept
     * and keep a single value, so they leave every index as it was */
    int dg[LP_DIM_COUNT];
    for (int d = LP_DIM_ZERO + 1; d < LP_DIM_COUNT; d++)
        ASSERT_EQ_INT(s.radix[d], 1);
    lp_space_digits(&s, 1, dg);
    ASSERT_EQ_INT(dg[LP_DIM_ZERO], 1);
    lp_space_digits(&s, lp_space_size(&s) - 1, dg);
    for (int d = 0; d < LP_DIM_COUNT; d++)
        ASSERT_EQ_INT(dg[d], s.radix[d] - 1);
    lp_sweep_destroy(&sw);
}

TEST(skip_spans_and_validate)
{
    struct lp_sweep *sw = lp_fixture_sweep(SWEEP);
    ASSERT_TRUE(sw != NULL);
    struct lp_space s;
    ASSERT_OK(lp_space_init(&s, sw, NULL));
    static struct lp_run run, ref;
    uint64_t n = lp_space_size(&s);
    uint64_t one_skip[LP_REASON_COUNT] = {0}, one_valid = 0;
    for (uint64_t i = 0; i < n; i++) {
        enum lp_reason why;
        uint64_t span = 0;
        enum lp_space_verdict v = lp_space_decode(&s, i, &run, &why, &span);
        ASSERT_TRUE(span >= 1 && i + span <= n);
        int dg[LP_DIM_COUNT];
        lp_space_digits(&s, i, dg);
        lp_fixture_run_of_digits(sw, dg, &ref);
        int gpus = sw->values[LP_DIM_GPUS][dg[LP_DIM_GPUS]];
        bool divides = gpus % (ref.par.tp * ref.par.pp * ref.par.cp) == 0;
        if (v == LP_SPACE_VALID) {
            one_valid++;
            ASSERT_EQ_INT(why, LP_REASON_NONE);
            ASSERT_TRUE(divides);
            ASSERT_EQ_INT(lp_sim_validate(&ref), LP_REASON_NONE);
            ASSERT_EQ_INT(run.par.dp, ref.par.dp);
            ASSERT_EQ_INT(run.par.tp * run.par.pp * run.par.dp * run.par.cp, gpus);
            ASSERT_TRUE(ref.par.tp <= ref.system.gpus_per_node);
        } else {
            one_skip[why]++;
            /* every skip is a configuration the simulator refuses too, or one
             * the space rules out on its own (GPU count, TP across nodes) */
            if (why == LP_REASON_GPU_COUNT)
                ASSERT_TRUE(!divides || ref.par.tp > gpus);
            else if (why == LP_REASON_TP_NODE)
                ASSERT_TRUE(ref.par.tp > ref.system.gpus_per_node);
            else
                ASSERT_TRUE(lp_sim_validate(&ref) != LP_REASON_NONE);
        }
    }
    /* the same counts walking with the spans */
    uint64_t jump_skip[LP_REASON_COUNT] = {0}, jump_valid = 0, steps = 0;
    for (uint64_t i = 0; i < n; steps++) {
        enum lp_reason why;
        uint64_t span = 0;
        if (lp_space_decode(&s, i, &run, &why, &span) == LP_SPACE_VALID) {
            jump_valid++;
            i++;
        } else {
            jump_skip[why] += span;
            i += span;
        }
    }
    ASSERT_EQ_INT(jump_valid, one_valid);
    for (int r = 0; r < LP_REASON_COUNT; r++)
        ASSERT_EQ_INT(jump_skip[r], one_skip[r]);
    ASSERT_TRUE(one_valid > 0);
    ASSERT_TRUE(one_skip[LP_REASON_TP_NODE] > 0); /* tp 16 on 8-GPU nodes */
    ASSERT_TRUE(steps < n / 4);                   /* spans do skip blocks */
    lp_sweep_destroy(&sw);
}

/* A hand-counted space: gpt3-175b (96 heads) on 8 GPUs of 8-GPU nodes, tp in
 * {1,2,4,8,16,3}: tp 16 exceeds the GPUs, tp 3 does not divide 8; the rest
 * give dp = 8/tp, micro_batch 1, batch 64: 4 valid, 2 skipped. */
TEST(hand_count)
{
    struct lp_sweep *sw =
        lp_fixture_sweep("{\"model\": \"gpt3-175b\", \"system\": \"dgx-a100-80gb\","
                         " \"gpus\": 8, \"training\": {\"global_batch\": 64},"
                         " \"space\": {\"tp\": [1, 2, 4, 8, 16, 3]}}");
    ASSERT_TRUE(sw != NULL);
    struct lp_space s;
    ASSERT_OK(lp_space_init(&s, sw, NULL));
    ASSERT_EQ_INT(lp_space_size(&s), 6);
    static struct lp_run run;
    int valid = 0, gpu_count = 0;
    for (uint64_t i = 0; i < 6; i++) {
        enum lp_reason why;
        if (lp_space_decode(&s, i, &run, &why, NULL) == LP_SPACE_VALID)
            valid++;
        else if (why == LP_REASON_GPU_COUNT)
            gpu_count++;
    }
    ASSERT_EQ_INT(valid, 4);
    ASSERT_EQ_INT(gpu_count, 2);
    lp_sweep_destroy(&sw);
}

TEST(empty_space)
{
    struct lp_sweep *sw =
        lp_fixture_sweep("{\"model\": \"gpt3-175b\", \"system\": \"dgx-a100-80gb\","
                         " \"gpus\": [], \"training\": {\"global_batch\": 64}}");
    ASSERT_TRUE(sw != NULL);
    struct lp_space s;
    ASSERT_OK(lp_space_init(&s, sw, NULL));
    ASSERT_EQ_INT(lp_space_size(&s), 0);
    lp_sweep_destroy(&sw);
}

TEST(parse_errors)
{
    const char *bad[][2] = {
        {"{\"model\": \"gpt3-175b\", \"system\": \"dgx-a100-80gb\", \"gpus\": 8,"
         " \"training\": {\"global_batch\": 64}, \"space\": {\"tpp\": 2}}",
         "space.tpp"},
        {"{\"model\": \"gpt3-175b\", \"system\": \"dgx-a100-80gb\", \"gpus\": 8,"
         " \"training\": {\"global_batch\": 64}, \"bogus\": 1}",
         "bogus"},
        {"{\"model\": \"gpt3-175b\", \"system\": \"dgx-a100-80gb\", \"gpus\": 8,"
         " \"training\": {\"global_batch\": 64}, \"space\": {\"tp\": [2, 2]}}",
         "space.tp"},
        {"{\"model\": \"gpt3-175b\", \"system\": \"dgx-a100-80gb\","
         " \"gpus\": {\"min\": 8, \"max\": 64, \"step\": \"y2\"},"
         " \"training\": {\"global_batch\": 64}}",
         "gpus.step"},
        {"{\"model\": \"gpt3-175b\", \"system\": \"dgx-a100-80gb\", \"gpus\": 8,"
         " \"training\": {\"global_batch\": 64}, \"space\": {\"recompute\": \"some\"}}",
         "space.recompute"},
        {"{\"model\": \"gpt3-175b\", \"models\": [\"gpt3-13b\"], \"system\": \"dgx-a100-80gb\","
         " \"gpus\": 8, \"training\": {\"global_batch\": 64}}",
         "models"},
        {"{\"model\": \"no-such-model\", \"system\": \"dgx-a100-80gb\", \"gpus\": 8,"
         " \"training\": {\"global_batch\": 64}}",
         "model"},
        {"{\"model\": \"gpt3-175b\", \"system\": \"dgx-a100-80gb\","
         " \"training\": {\"global_batch\": 64}}",
         "gpus"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct lp_sweep *sw = NULL;
        struct lp_err err;
        lp_err_clear(&err);
        ASSERT_TRUE(lp_sweep_parse(bad[i][0], "bad.json", &sw, &err) < 0);
        ASSERT_TRUE(sw == NULL);
        ASSERT_CONTAINS(err.msg, "bad.json");
        ASSERT_CONTAINS(err.msg, bad[i][1]);
    }
}

TEST(lists_and_ranges)
{
    struct lp_sweep *sw =
        lp_fixture_sweep("{\"models\": [\"gpt3-13b\", \"gpt3-175b\"],"
                         " \"systems\": [\"dgx-a100-80gb\", \"dgx-h100\"],"
                         " \"gpus\": {\"min\": 16, \"max\": 64, \"step\": 16},"
                         " \"training\": {\"global_batch\": 64, \"tokens\": 1e9}, \"top_k\": 3,"
                         " \"profile\": \"roofline\", \"output\": \"out\","
                         " \"space\": {\"dp\": [2, 4], \"zero\": \"auto\", \"vp\": [1, 2]}}");
    ASSERT_TRUE(sw != NULL);
    ASSERT_EQ_INT(sw->nvalues[LP_DIM_MODEL], 2);
    ASSERT_EQ_STR(sw->models[1].name, "gpt3-175b");
    ASSERT_EQ_STR(sw->systems[1].name, "dgx-h100");
    ASSERT_EQ_INT(sw->nvalues[LP_DIM_GPUS], 4); /* 16 32 48 64 */
    ASSERT_EQ_INT(sw->values[LP_DIM_GPUS][2], 48);
    ASSERT_EQ_INT(sw->ndp, 2);
    ASSERT_EQ_INT(sw->nvalues[LP_DIM_ZERO], 4);
    /* vp > 1 listed, schedule absent: 1f1b and interleaved */
    ASSERT_EQ_INT(sw->nvalues[LP_DIM_SCHEDULE], 2);
    ASSERT_EQ_INT(sw->top_k, 3);
    ASSERT_EQ_STR(sw->profile, "roofline");
    ASSERT_EQ_STR(sw->output, "out");
    /* the dp filter: only tp=pp=cp=1 -> dp = gpus; dp in {2, 4} never */
    struct lp_space s;
    ASSERT_OK(lp_space_init(&s, sw, NULL));
    static struct lp_run run;
    for (uint64_t i = 0; i < lp_space_size(&s); i++)
        ASSERT_TRUE(lp_space_decode(&s, i, &run, NULL, NULL) == LP_SPACE_SKIP);
    lp_sweep_destroy(&sw);
}

/* lp_space_decode_next (issue #20) against lp_space_decode_digits: a walk
 * as lp_eval_range makes it (spans, the digits of the last valid
 * configuration held), and random jumps, over a space whose every
 * dimension has several values (models of three kinds, sequence lengths,
 * global batches, two systems, a dp filter, frameworks, attention kernels,
 * precisions, fine-tuning): the same verdict, reason, span and run. */
TEST(decode_next_as_decode)
{
    static const char *const text =
        "{\"models\": [\"gpt3-1.3b\", \"mixtral-8x7b\", \"nemotron-h-8b\"],"
        " \"systems\": [\"dgx-a100-80gb\", \"dgx-h100\"], \"gpus\": [16, 64],"
        " \"framework\": [\"megatron\", \"megatron-deepspeed\"],"
        " \"training\": {\"global_batch\": 64, \"tokens\": 1e10},"
        " \"space\": {\"tp\": [1, 2, 4], \"pp\": [1, 2, 4], \"dp\": [2, 4, 8, 16],"
        "   \"cp\": [1, 2], \"ep\": [1, 2], \"vp\": [1, 2], \"micro_batch\": [1, 2, 4],"
        "   \"seq_len\": [2048, 4096], \"global_batch\": [64, 96],"
        "   \"sequence_parallel\": \"auto\", \"recompute\": \"auto\", \"zero\": [0, 1, 3],"
        "   \"schedule\": \"auto\", \"attention\": [\"flash2\", \"unfused\"],"
        "   \"precision\": [\"bf16\", \"fp8\"],"
        "   \"finetune\": [false, {\"method\": \"lora\", \"rank\": 8}]}}";
    struct lp_sweep *sw = lp_fixture_sweep(text);
    ASSERT_TRUE(sw != NULL);
    struct lp_space s;
    ASSERT_OK(lp_space_init(&s, sw, NULL));
    static struct lp_run next, ref;
    memset(&next, 0, sizeof(next));
    const uint64_t n = lp_space_size(&s);
    int held[LP_DIM_COUNT];
    bool holds = false;
    uint64_t i = 0, rng = 88172645463325252ULL, checked = 0, valid = 0, kept = 0;
    while (checked < 200000) {
        if (i >= n) i = rng % n; /* past the end: on from anywhere */
        int dg[LP_DIM_COUNT];
        lp_space_digits(&s, i, dg);
        enum lp_reason w1 = LP_REASON_NONE, w2 = LP_REASON_NONE;
        uint64_t s1 = 0, s2 = 0;
        memset(&ref, 0, sizeof(ref));
        const enum lp_space_verdict v1 = lp_space_decode_digits(&s, i, dg, &ref, &w1, &s1);
        const enum lp_space_verdict v2 =
            lp_space_decode_next(&s, i, dg, holds ? held : NULL, &next, &w2, &s2);
        checked++;
        ASSERT_TRUE(v1 == v2);
        ASSERT_EQ_INT(w1, w2);
        ASSERT_TRUE(s1 == s2);
        if (v1 == LP_SPACE_VALID) {
            valid++;
            kept += holds && dg[LP_DIM_SYSTEM] == held[LP_DIM_SYSTEM] &&
                    dg[LP_DIM_MODEL] == held[LP_DIM_MODEL];
            ASSERT_TRUE(memcmp(&next.model, &ref.model, sizeof(ref.model)) == 0);
            ASSERT_TRUE(memcmp(&next.system, &ref.system, sizeof(ref.system)) == 0);
            ASSERT_TRUE(memcmp(&next.train, &ref.train, sizeof(ref.train)) == 0);
            ASSERT_TRUE(memcmp(&next.fw, &ref.fw, sizeof(ref.fw)) == 0);
            ASSERT_TRUE(memcmp(&next.par, &ref.par, sizeof(ref.par)) == 0);
            memcpy(held, dg, sizeof(held));
            holds = true;
        }
        /* on by the span, now and then a jump anywhere ahead or back */
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        if (rng % 64 == 0)
            i = rng % n;
        else
            i += v1 == LP_SPACE_SKIP ? s1 : 1;
    }
    printf("  %llu indices decoded both ways (%llu valid, %llu of them after a valid one of the "
           "same model and system), all the same\n",
           (unsigned long long)checked, (unsigned long long)valid, (unsigned long long)kept);
    ASSERT_TRUE(valid > 1000 && kept > 1000);
    lp_sweep_destroy(&sw);
}

TH_MAIN(TH_CASE(parse_and_size), TH_CASE(round_trip), TH_CASE(skip_spans_and_validate),
        TH_CASE(hand_count), TH_CASE(empty_space), TH_CASE(parse_errors), TH_CASE(lists_and_ranges),
        TH_CASE(decode_next_as_decode))
