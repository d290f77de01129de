/* simulate and search never disagree: over generated spaces, the reason the
 * space walk gives for every configuration (lp_space_decode, with its block
 * skipping) equals the reason lp_sim_validate gives for the same
 * configuration built without the space, in both directions (valid <=>
 * LP_REASON_NONE, and the same reason code for every refused one), and every
 * reason code the space can produce occurs. The models are mutated after
 * parsing so that each rule fails somewhere (an FFN width 16 does not
 * divide, two KV heads, five layers, a sequence 8 does not divide). */
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "llmplan/io.h"
#include "llmplan/rules.h"
#include "llmplan/search.h"

static const char *const SWEEP =
    "{\"model\": [\"gpt3-1.3b\", \"mixtral-8x7b\", \"llama3-8b\"],"
    " \"system\": \"dgx-a100-80gb\", \"gpus\": [8, 16, 48, 64],"
    " \"training\": {\"global_batch\": 96},"
    " \"space\": {\"tp\": [1, 2, 4, 8, 16], \"pp\": [1, 2, 3, 4], \"cp\": [1, 2, 4],"
    "   \"ep\": [1, 2, 8], \"vp\": [1, 2, 3], \"micro_batch\": [1, 2, 3],"
    "   \"sequence_parallel\": \"auto\", \"recompute\": [\"none\", \"full\"], \"zero\": [0, 1, 3],"
    "   \"schedule\": \"auto\", \"precision\": [\"bf16\", \"fp8\"]}}";

/* micro-batches x vp past LP_MAX_MICROBATCHES for the smallest micro-batch */
static const char *const SWEEP_RANGE =
    "{\"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\", \"gpus\": [8],"
    " \"training\": {\"global_batch\": 4294967296},"
    " \"space\": {\"tp\": [1, 2], \"pp\": [1, 2], \"vp\": [1, 2], \"micro_batch\": [1, 4, 64],"
    "   \"schedule\": \"auto\"}}";

/* frameworks with options and layouts they do not run as modelled: hybrid
 * megatron (never), hybrid fsdp (zero 2-3, pp 1), fsdp over 8 ranks
 * (pp 1, dense model), megatron (all); a LoRA fine-tuning beside the full
 * one (fsdp: over one rank only) */
static const char *const SWEEP_FW =
    "{\"model\": [\"gpt3-1.3b\", \"mixtral-8x7b\"], \"system\": \"dgx-a100-80gb\","
    " \"gpus\": [1, 8], \"training\": {\"global_batch\": 16},"
    " \"framework\": [\"megatron\", {\"name\": \"megatron\", \"hybrid_shard\": true}, \"fsdp\","
    "   {\"name\": \"fsdp\", \"hybrid_shard\": true}],"
    " \"space\": {\"tp\": [1], \"pp\": [1, 2], \"ep\": [1], \"micro_batch\": [1],"
    "   \"zero\": [0, 2, 3], \"finetune\": [false, {\"method\": \"lora\", \"rank\": 16}]}}";

/* Walk every index one by one; compare with lp_sim_validate; count by
 * reason into seen[]. */
static void compare(const struct lp_sweep *sw, uint64_t seen[LP_REASON_COUNT], int *th_failed_)
{
    struct lp_space s;
    ASSERT_OK(lp_space_init(&s, sw, NULL));
    static struct lp_run run, ref;
    const uint64_t n = lp_space_size(&s);
    for (uint64_t i = 0; i < n; i++) {
        enum lp_reason why;
        uint64_t span = 0;
        enum lp_space_verdict v = lp_space_decode(&s, i, &run, &why, &span);
        int dg[LP_DIM_COUNT];
        lp_space_digits(&s, i, dg);
        lp_fixture_run_of_digits(sw, dg, &ref);
        const int gpus = sw->values[LP_DIM_GPUS][dg[LP_DIM_GPUS]];
        const bool divides =
            (int64_t)ref.par.tp * ref.par.pp * ref.par.cp * ref.par.dp == (int64_t)gpus;
        const enum lp_reason sim = lp_sim_validate(&ref);
        seen[why]++;
        if (!divides) {
            /* simulate cannot state it; the space refuses it for the GPU
             * count or for a rule it checked first, which the simulator
             * refuses too */
            if (v == LP_SPACE_VALID || (why != LP_REASON_GPU_COUNT && why != sim))
                TH_FAIL_("index %llu: space %s, simulate %s (tp %d pp %d cp %d on %d GPUs)",
                         (unsigned long long)i, lp_reason_name(why), lp_reason_name(sim),
                         ref.par.tp, ref.par.pp, ref.par.cp, gpus);
            continue;
        }
        if ((v == LP_SPACE_VALID) != (why == LP_REASON_NONE) || why != sim)
            TH_FAIL_("index %llu: space %s, simulate %s (%s tp %d pp %d cp %d ep %d vp %d "
                     "mb %d sched %d sp %d zero %d prec %d on %d GPUs)",
                     (unsigned long long)i, lp_reason_name(why), lp_reason_name(sim),
                     ref.model.name, ref.par.tp, ref.par.pp, ref.par.cp, ref.par.ep, ref.par.vp,
                     ref.par.micro_batch, ref.par.schedule, ref.par.sequence_parallel, ref.par.zero,
                     ref.train.precision, gpus);
        if (v == LP_SPACE_VALID) {
            ASSERT_EQ_INT(run.par.dp, ref.par.dp);
            ASSERT_EQ_INT(run.par.schedule, ref.par.schedule);
        }
    }
}

TEST(space_and_simulate_agree_on_every_reason)
{
    struct lp_sweep *sw = lp_fixture_sweep(SWEEP);
    ASSERT_TRUE(sw != NULL);
    sw->models[0].ffn_hidden = 8196; /* 4 divides it, 8 does not: tp_ffn */
    sw->models[0].layers = 5;        /* pp 4 x vp 2: an empty stage */
    sw->models[1].kv_heads = 2;      /* tp 4 and 8: tp_heads */
    sw->models[2].seq_len = 8196;    /* 2 cp = 8 does not divide it: cp_seq */
    uint64_t seen[LP_REASON_COUNT] = {0};
    compare(sw, seen, th_failed_);
    lp_sweep_destroy(&sw);
    if (*th_failed_) return;
    sw = lp_fixture_sweep(SWEEP_RANGE);
    ASSERT_TRUE(sw != NULL);
    compare(sw, seen, th_failed_);
    lp_sweep_destroy(&sw);
    if (*th_failed_) return;
    sw = lp_fixture_sweep(SWEEP_FW);
    ASSERT_TRUE(sw != NULL);
    compare(sw, seen, th_failed_);
    lp_sweep_destroy(&sw);
    /* every reason a structural rule gives occurs (out_of_memory and
     * numeric come from the simulation, not from these rules) */
    for (int r = 0; r < LP_REASON_COUNT; r++) {
        if (r == LP_REASON_OOM || r == LP_REASON_NUMERIC) continue;
        if (seen[r] == 0) TH_FAIL_("reason %s never occurred", lp_reason_name((enum lp_reason)r));
    }
}

/* The list is sorted by its tags (the walk runs each digit's rules in
 * turn), and every reason but out_of_memory, numeric and gpu_count (the
 * degrees' precondition and the sweep's GPU count) has a rule. */
TEST(rules_sorted_and_complete)
{
    bool has[LP_REASON_COUNT] = {false};
    for (int k = 0; k < lp_rule_count; k++) {
        if (k > 0) ASSERT_TRUE(lp_rules[k - 1].dim <= lp_rules[k].dim);
        has[lp_rules[k].reason] = true;
    }
    for (int r = 0; r < LP_REASON_COUNT; r++)
        ASSERT_EQ_INT(has[r], r != LP_REASON_NONE && r != LP_REASON_OOM && r != LP_REASON_NUMERIC &&
                                  r != LP_REASON_GPU_COUNT);
}

/* fsdp2 (fully_shard) always shards: simulate refuses its zero 0 and 1
 * (json_load.c: parallel.zero), and a sweep's walk skips them for the same
 * rule (rules.c zero_framework) instead of playing NO_SHARD or ZeRO-1 under
 * fsdp2's name; megatron beside it keeps all four stages. */
TEST(fsdp2_zero_below_two_skipped)
{
    struct lp_sweep *sw = lp_fixture_sweep(
        "{\"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\", \"gpus\": [8],"
        " \"training\": {\"global_batch\": 16}, \"framework\": [\"megatron\", \"fsdp2\"],"
        " \"space\": {\"tp\": [1], \"pp\": [1], \"micro_batch\": [1], \"zero\": [0, 1, 2, 3]}}");
    ASSERT_TRUE(sw != NULL);
    uint64_t seen[LP_REASON_COUNT] = {0};
    compare(sw, seen, th_failed_);
    struct lp_space s;
    ASSERT_OK(lp_space_init(&s, sw, NULL));
    static struct lp_run run;
    int valid[2][4] = {{0}};
    for (uint64_t i = 0; i < lp_space_size(&s); i++) {
        enum lp_reason why;
        uint64_t span = 0;
        if (lp_space_decode(&s, i, &run, &why, &span) != LP_SPACE_VALID) continue;
        valid[run.fw.kind == LP_FW_FSDP2][run.par.zero]++;
    }
    for (int z = 0; z < 4; z++) {
        ASSERT_TRUE(valid[0][z] > 0);
        ASSERT_TRUE((valid[1][z] > 0) == (z >= 2));
    }
    ASSERT_TRUE(seen[LP_REASON_ZERO] > 0);
    char msg[160];
    struct lp_result res = {.reason = LP_REASON_ZERO, .reason_a = 1, .reason_b = 2};
    lp_result_reason(&res, msg, sizeof(msg));
    ASSERT_TRUE(strstr(msg, "fsdp2") != NULL);
    lp_sweep_destroy(&sw);
}

/* The walk skips what simulate refuses (json_load.c check_fw_gap: the same
 * rules, rules.c fw_hybrid, fsdp_layout, fsdp_lora) with reason
 * "framework" instead of playing it under the generic DP model: hybrid
 * megatron never runs; hybrid fsdp at zero 2-3 only; fsdp over 8 ranks at
 * pp 1 on the dense model only, and not with LoRA; over 1 rank (nothing
 * to shard) fsdp runs every model and LoRA. */
TEST(framework_gaps_skipped)
{
    struct lp_sweep *sw = lp_fixture_sweep(SWEEP_FW);
    ASSERT_TRUE(sw != NULL);
    struct lp_space s;
    ASSERT_OK(lp_space_init(&s, sw, NULL));
    static struct lp_run run;
    int valid[4] = {0}, skipped = 0;
    for (uint64_t i = 0; i < lp_space_size(&s); i++) {
        enum lp_reason why;
        uint64_t span = 0;
        if (lp_space_decode(&s, i, &run, &why, &span) != LP_SPACE_VALID) {
            skipped += why == LP_REASON_FRAMEWORK;
            continue;
        }
        const bool fsdp = run.fw.kind == LP_FW_FSDP, hyb = run.fw.hybrid_shard;
        valid[2 * fsdp + hyb]++;
        ASSERT_TRUE(!hyb || (fsdp && run.par.zero >= 2));
        if (fsdp && run.par.dp > 1) {
            ASSERT_TRUE(run.par.pp == 1 && run.model.moe.experts == 0);
            ASSERT_TRUE(run.train.lora_rank == 0);
        }
    }
    ASSERT_TRUE(valid[0] > 0 && valid[1] == 0 && valid[2] > 0 && valid[3] > 0);
    ASSERT_TRUE(skipped > 0);
    char msg[200];
    struct lp_result res = {.reason = LP_REASON_FRAMEWORK, .reason_a = LP_GAP_HYBRID};
    lp_result_reason(&res, msg, sizeof(msg));
    ASSERT_TRUE(strstr(msg, "framework.hybrid_shard") != NULL);
    res.reason_a = LP_GAP_PP;
    lp_result_reason(&res, msg, sizeof(msg));
    ASSERT_TRUE(strstr(msg, "parallel.pp") != NULL);
    res.reason_a = LP_GAP_FP8_STACK;
    lp_result_reason(&res, msg, sizeof(msg));
    ASSERT_TRUE(strstr(msg, "training.precision") != NULL);
    /* the rule itself: the fp8 family refused on the 2021-22 stacks only */
    for (int k = 0; k < LP_FW_COUNT; k++)
        for (int q = 0; q < LP_PREC_COUNT; q++) {
            const bool fp8 = q == LP_FP8 || q == LP_MXFP8 || q == LP_NVFP4;
            const bool old = k == LP_FW_MEGATRON_2021 || k == LP_FW_MEGATRON_DEEPSPEED;
            ASSERT_TRUE((lp_fw_precision_gap((enum lp_framework)k, (enum lp_prec)q) ==
                         LP_GAP_FP8_STACK) == (fp8 && old));
        }
    lp_sweep_destroy(&sw);
}

TH_MAIN(TH_CASE(space_and_simulate_agree_on_every_reason), TH_CASE(rules_sorted_and_complete),
        TH_CASE(fsdp2_zero_below_two_skipped), TH_CASE(framework_gaps_skipped))
