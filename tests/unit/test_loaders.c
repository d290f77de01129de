/* Preset and run-description loaders (cJSON), and framework defaults. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "llmplan/io.h"

struct count_ctx {
    enum lp_preset_kind kind;
    int n, bad;
    char first_bad[LP_ERR_MSG + LP_NAME_LEN * 4];
};

static int load_each(const char *name, const char *path, void *arg)
{
    struct count_ctx *c = arg;
    struct lp_err err;
    lp_err_clear(&err);
    int rc;
    (void)path;
    if (c->kind == LP_PRESET_MODEL) {
        struct lp_model m;
        rc = lp_load_model(name, &m, &err);
        if (rc == 0 && strcmp(m.name, name) != 0) rc = -1;
        if (rc == 0 && m.source[0] == '\0') rc = -1;
    } else if (c->kind == LP_PRESET_GPU) {
        struct lp_gpu g;
        rc = lp_load_gpu(name, &g, &err);
        if (rc == 0 && (strcmp(g.name, name) != 0 || g.source[0] == '\0')) rc = -1;
    } else {
        struct lp_system s;
        rc = lp_load_system(name, &s, &err);
        if (rc == 0 && (strcmp(s.name, name) != 0 || s.source[0] == '\0')) rc = -1;
    }
    c->n++;
    if (rc != 0 && !c->bad++) snprintf(c->first_bad, sizeof(c->first_bad), "%s: %s", name, err.msg);
    return 0;
}

/* Every shipped preset loads, names itself like its file, and cites a source. */
TEST(all_presets_load)
{
    enum lp_preset_kind kinds[] = {LP_PRESET_MODEL, LP_PRESET_GPU, LP_PRESET_SYSTEM};
    int mins[] = {36, 11, 14}; /* the lists required by the foundation issue */
    for (int k = 0; k < 3; k++) {
        struct count_ctx c = {kinds[k], 0, 0, ""};
        ASSERT_OK(lp_list_presets(kinds[k], load_each, &c, NULL));
        if (c.bad) TH_FAIL_("%s", c.first_bad);
        ASSERT_TRUE(c.n >= mins[k]);
    }
}

/* Figures from the sources, by hand: GPT-3 175B has ~175B parameters (Brown
 * et al. 2020 Table 2.1); A100 peak bf16 312 TFLOP/s, 2039 GB/s (datasheet). */
TEST(preset_values)
{
    struct lp_model m;
    ASSERT_OK(lp_load_model("gpt3-175b", &m, NULL));
    ASSERT_EQ_INT(m.layers, 96);
    ASSERT_EQ_INT(m.hidden, 12288);
    ASSERT_NEAR(lp_model_params(&m), 175e9, 0.01);
    ASSERT_OK(lp_load_model("llama2-70b", &m, NULL));
    ASSERT_EQ_INT(m.kv_heads, 8);
    ASSERT_TRUE(m.ffn_act == LP_ACT_SWIGLU);
    ASSERT_NEAR(lp_model_params(&m), 69e9, 0.02);
    ASSERT_OK(lp_load_model("mixtral-8x7b", &m, NULL));
    ASSERT_EQ_INT(m.moe.experts, 8);
    ASSERT_EQ_INT(m.moe.top_k, 2);
    ASSERT_NEAR(lp_model_params(&m), 46.7e9, 0.01);
    struct lp_gpu g;
    ASSERT_OK(lp_load_gpu("a100-80gb", &g, NULL));
    ASSERT_NEAR(g.peak_flops[LP_BF16], 312e12, 1e-9);
    ASSERT_NEAR(g.mem_bw_Bps, 2039e9, 1e-9);
    struct lp_system s;
    ASSERT_OK(lp_load_system("dgx-h100", &s, NULL));
    ASSERT_EQ_INT(s.gpus_per_node, 8);
    ASSERT_EQ_STR(s.gpu.name, "h100-sxm");
    ASSERT_TRUE(s.price_per_gpu_hour_usd > 0);
}

TEST(run_inline_and_defaults)
{
    const char *text =
        "{ \"model\": {\"name\": \"tiny\", \"layers\": 4, \"hidden\": 256, \"heads\": 4,"
        "  \"kv_heads\": 2, \"ffn_act\": \"swiglu\", \"ffn_hidden\": 688, \"vocab\": 1000,"
        "  \"seq_len\": 128, \"norm\": \"rmsnorm\", \"position\": \"rotary\"},"
        "  \"system\": \"dgx-a100-80gb\", \"gpus\": 8,"
        "  \"parallel\": {\"tp\": 2, \"vp\": 2, \"pp\": 2},"
        "  \"training\": {\"global_batch\": 64},"
        "  \"framework\": {\"name\": \"megatron-deepspeed\", \"dp_overlap\": true} }";
    struct lp_run r;
    struct lp_err err;
    lp_err_clear(&err);
    int rc = lp_parse_run(text, "inline", &r, &err);
    if (rc) TH_FAIL_("%s", err.msg);
    ASSERT_EQ_INT(r.model.kv_heads, 2);
    ASSERT_TRUE(r.model.norm == LP_NORM_RMSNORM);
    ASSERT_EQ_INT(r.par.dp, 2);                          /* gpus / (tp*pp*cp) */
    ASSERT_TRUE(r.par.schedule == LP_SCHED_INTERLEAVED); /* vp > 1 */
    ASSERT_EQ_INT(r.par.micro_batch, 1);
    ASSERT_TRUE(r.train.precision == LP_BF16);
    ASSERT_TRUE(r.train.flash_attention);
    ASSERT_TRUE(r.fw.kind == LP_FW_MEGATRON_DEEPSPEED);
    ASSERT_TRUE(r.fw.dp_overlap);  /* overridden */
    ASSERT_TRUE(!r.fw.pp_overlap); /* framework default kept */
}

TEST(run_errors_name_file_and_key)
{
    struct lp_run r;
    struct lp_err err;
    lp_err_clear(&err);
    int rc = lp_parse_run("{\"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\", "
                          "\"training\": {\"global_batch\": 8, \"precision\": \"fp12\"}}",
                          "x.json", &r, &err);
    ASSERT_EQ_INT(rc, LP_EINVAL);
    ASSERT_CONTAINS(err.msg, "x.json");
    ASSERT_CONTAINS(err.msg, "'training.precision'");
    ASSERT_CONTAINS(err.msg, "\"fp12\"");
    lp_err_clear(&err);
    rc = lp_parse_run("{\"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\", \"gpus\": 12, "
                      "\"parallel\": {\"tp\": 8}, \"training\": {\"global_batch\": 8}}",
                      "y.json", &r, &err);
    ASSERT_EQ_INT(rc, LP_EINVAL);
    ASSERT_CONTAINS(err.msg, "key 'gpus'");
    lp_err_clear(&err);
    rc = lp_parse_run("[1, 2]", "z.json", &r, &err);
    ASSERT_EQ_INT(rc, LP_EINVAL);
    ASSERT_CONTAINS(err.msg, "z.json");
    lp_err_clear(&err);
    rc = lp_load_model("../etc/passwd", NULL, &err);
    ASSERT_EQ_INT(rc, LP_ENOTFOUND);
}

/* training.attention picks the fused kernel, or unfused; it must agree with
 * flash_attention when both are given. */
TEST(attention_kernel)
{
    static const char *const pre = "{\"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\", "
                                   "\"training\": {\"global_batch\": 8, ";
    static const struct {
        const char *tail;
        bool flash;
        enum lp_attention a;
    } ok[] = {{"\"attention\": \"triton\"}}", true, LP_ATTENTION_TRITON},
              {"\"attention\": \"flash1\"}}", true, LP_ATTENTION_FLASH1},
              {"\"attention\": \"unfused\"}}", false, LP_ATTENTION_FLASH2},
              {"\"flash_attention\": true, \"attention\": \"flash2\"}}", true, LP_ATTENTION_FLASH2},
              {"\"flash_attention\": false}}", false, LP_ATTENTION_FLASH2}};
    char text[512];
    struct lp_run r;
    struct lp_err err;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        snprintf(text, sizeof(text), "%s%s", pre, ok[i].tail);
        lp_err_clear(&err);
        int rc = lp_parse_run(text, "a.json", &r, &err);
        if (rc) TH_FAIL_("case %zu: %s", i, err.msg);
        ASSERT_TRUE(r.train.flash_attention == ok[i].flash);
        ASSERT_TRUE(r.train.attention == ok[i].a);
    }
    ASSERT_EQ_STR(lp_attention_name(true, LP_ATTENTION_TRITON), "triton");
    ASSERT_EQ_STR(lp_attention_name(false, LP_ATTENTION_TRITON), "unfused");
    snprintf(text, sizeof(text), "%s%s", pre,
             "\"flash_attention\": false, \"attention\": \"flash1\"}}");
    lp_err_clear(&err);
    ASSERT_EQ_INT(lp_parse_run(text, "b.json", &r, &err), LP_EINVAL);
    ASSERT_CONTAINS(err.msg, "b.json");
    ASSERT_CONTAINS(err.msg, "'training.attention'");
    ASSERT_CONTAINS(err.msg, "contradicts flash_attention");
    snprintf(text, sizeof(text), "%s%s", pre, "\"attention\": \"flash3\"}}");
    lp_err_clear(&err);
    ASSERT_EQ_INT(lp_parse_run(text, "c.json", &r, &err), LP_EINVAL);
    ASSERT_CONTAINS(err.msg, "\"flash2\", \"flash1\", \"triton\", \"cudnn\" or \"unfused\"");
}

/* Framework overrides survive the result JSON (plans reproduce with
 * `llmplan simulate`): the default framework is written as its name, an
 * overridden one as an object that parses back to the same options. */
TEST(framework_round_trip)
{
    const char *base = "{\"model\": \"gpt3-1.3b\", \"system\": \"dgx-a100-80gb\", "
                       "\"parallel\": {\"zero\": 3}, "
                       "\"training\": {\"global_batch\": 8}, \"framework\": ";
    char text[1024];
    struct lp_run r, back;
    struct lp_result res;
    memset(&res, 0, sizeof(res));
    struct lp_err err;
    lp_err_clear(&err);
    char *out = NULL;
    snprintf(text, sizeof(text), "%s\"fsdp\"}", base);
    ASSERT_OK(lp_parse_run(text, "a.json", &r, &err));
    ASSERT_OK(lp_result_to_json_line(&r, &res, true, &out, &err));
    ASSERT_CONTAINS(out, "\"framework\":\"fsdp\"");
    free(out);
    snprintf(text, sizeof(text),
             "%s{\"name\": \"fsdp\", \"cross_entropy\": \"fused\", "
             "\"host_overlap\": 2, \"host_op_us\": 30, \"hybrid_shard\": true, "
             "\"train_metrics\": true, \"moe_dispatcher_sms\": 20, \"fused_mlp\": true, "
             "\"ckpt_early_stop\": false}}",
             base);
    ASSERT_OK(lp_parse_run(text, "b.json", &r, &err));
    ASSERT_OK(lp_result_to_json_line(&r, &res, true, &out, &err));
    const char *fw = strstr(out, "\"framework\":{");
    ASSERT_TRUE(fw != NULL);
    const char *end = strchr(fw, '}');
    ASSERT_TRUE(end != NULL);
    snprintf(text, sizeof(text), "%s%.*s}}", base, (int)(end - fw - 12), fw + 12);
    free(out);
    if (lp_parse_run(text, "c.json", &back, &err) != LP_OK) TH_FAIL_("%s: %s", text, err.msg);
    ASSERT_TRUE(back.fw.xent == LP_XENT_FUSED);
    ASSERT_NEAR(back.fw.host_overlap, 2.0, 1e-12);
    ASSERT_NEAR(back.fw.host_op_s, 30e-6, 1e-15);
    ASSERT_TRUE(back.fw.dp_overlap == r.fw.dp_overlap && back.fw.kind == LP_FW_FSDP);
    ASSERT_TRUE(back.fw.hybrid_shard && back.fw.train_metrics && back.fw.fused_mlp);
    ASSERT_TRUE(!back.fw.ckpt_early_stop);
    ASSERT_EQ_INT(back.fw.dispatcher_sms, 20);
}

/* An option or layout the framework does not run as modelled is refused,
 * naming the file and key (json_load.c check_fw_gap, the rules a sweep
 * skips by: rules.c fw_hybrid, fsdp_layout, fsdp_lora): hybrid_shard on a
 * framework that is not FSDP, or on FSDP below zero 2 (no hybrid
 * NO_SHARD); an FSDP run over 8 ranks with pp 2, MoE layers, MTP or LoRA,
 * which lp_torch_dp does not play (the generic DP model stood in before).
 * FSDP over one rank (nothing sharded) and hybrid FSDP at zero 2-3 pass. */
TEST(framework_gaps_refused)
{
    static const struct {
        const char *run, *key, *what;
    } bad[] = {
        {"\"parallel\": {\"dp\": 8, \"zero\": 1}, \"framework\": {\"name\": \"megatron\", "
         "\"hybrid_shard\": true}",
         "'framework.hybrid_shard'", "\"megatron\" at zero 1"},
        {"\"parallel\": {\"dp\": 8, \"zero\": 0}, \"framework\": {\"name\": \"fsdp\", "
         "\"hybrid_shard\": true}",
         "'framework.hybrid_shard'", "\"fsdp\" at zero 0"},
        {"\"parallel\": {\"dp\": 4, \"pp\": 2, \"zero\": 2}, \"framework\": \"fsdp2\"",
         "'parallel.pp'", "pipeline"},
        {"\"parallel\": {\"dp\": 8, \"zero\": 3}, \"framework\": \"fsdp1\", \"model\": "
         "\"mixtral-8x7b\"",
         "'model'", "MoE"},
        {"\"parallel\": {\"dp\": 8, \"zero\": 3}, \"framework\": \"fsdp\", \"model\": "
         "\"nemotron-h-8b\"",
         "'model'", "attention + dense MLP"},
        {"\"parallel\": {\"dp\": 8, \"zero\": 3}, \"framework\": \"fsdp\", \"training\": "
         "{\"global_batch\": 8, \"finetune\": {\"method\": \"lora\", \"rank\": 16}}",
         "'training.finetune'", "LoRA"},
        /* the fp8 family on a 2021-22 stack; bf16 end layers outside Megatron-Core */
        {"\"parallel\": {\"dp\": 8}, \"framework\": \"megatron-deepspeed\", \"training\": "
         "{\"global_batch\": 8, \"precision\": \"fp8\"}",
         "'training.precision'", "fp16 or bf16 only"},
        {"\"parallel\": {\"dp\": 8}, \"framework\": \"megatron-2021\", \"training\": "
         "{\"global_batch\": 8, \"precision\": \"mxfp8\"}",
         "'training.precision'", "\"megatron-2021\""},
        {"\"parallel\": {\"dp\": 8, \"zero\": 3}, \"framework\": \"fsdp2\", \"training\": "
         "{\"global_batch\": 8, \"precision\": \"bf16\", \"bf16_first_layers\": 1}",
         "'training.bf16_first_layers, bf16_last_layers'", "first_last_layers_bf16"},
    };
    char text[1024];
    struct lp_run r;
    struct lp_err err;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const bool own_model = strstr(bad[i].run, "\"model\"") != NULL;
        const bool own_train = strstr(bad[i].run, "\"training\"") != NULL;
        snprintf(text, sizeof(text), "{%s\"system\": \"dgx-a100-80gb\", %s%s}",
                 own_model ? "" : "\"model\": \"gpt3-1.3b\", ",
                 own_train ? "" : "\"training\": {\"global_batch\": 8}, ", bad[i].run);
        lp_err_clear(&err);
        if (lp_parse_run(text, "g.json", &r, &err) != LP_EINVAL) TH_FAIL_("case %zu passed", i);
        ASSERT_CONTAINS(err.msg, "g.json");
        ASSERT_CONTAINS(err.msg, bad[i].key);
        ASSERT_CONTAINS(err.msg, bad[i].what);
    }
    static const char *const good[] = {
        "\"parallel\": {\"dp\": 8, \"zero\": 2}, \"framework\": {\"name\": \"fsdp1\", "
        "\"hybrid_shard\": true}",
        "\"parallel\": {\"dp\": 8, \"zero\": 3}, \"framework\": {\"name\": \"fsdp2\", "
        "\"hybrid_shard\": true}",
        "\"model\": \"mixtral-8x7b\", \"framework\": \"fsdp\", \"training\": "
        "{\"global_batch\": 8, \"finetune\": {\"method\": \"lora\", \"rank\": 16}}",
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        const bool own_model = strstr(good[i], "\"model\"") != NULL;
        const bool own_train = strstr(good[i], "\"training\"") != NULL;
        snprintf(text, sizeof(text), "{%s\"system\": \"dgx-a100-80gb\", %s%s}",
                 own_model ? "" : "\"model\": \"gpt3-1.3b\", ",
                 own_train ? "" : "\"training\": {\"global_batch\": 8}, ", good[i]);
        lp_err_clear(&err);
        if (lp_parse_run(text, "h.json", &r, &err) != LP_OK) TH_FAIL_("good %zu: %s", i, err.msg);
    }
}

/* The documented framework defaults (docs/frameworks.md), pinned. */
TEST(framework_defaults)
{
    struct lp_framework_opts o;
    lp_framework_defaults(LP_FW_MEGATRON, &o);
    ASSERT_TRUE(o.dp_overlap && o.pp_overlap && o.param_gather_overlap && !o.tp_overlap);
    ASSERT_TRUE(o.fused_kernels);
    ASSERT_TRUE(o.xent == LP_XENT_FP32 && !o.zero3_per_tensor);
    ASSERT_NEAR(o.host_overlap, 1.25, 1e-12); /* docs/calibration.md */
    ASSERT_NEAR(o.cal.sustained_frac, 0.87, 1e-12);
    lp_framework_defaults(LP_FW_MEGATRON_2021, &o);
    ASSERT_TRUE(!o.dp_overlap && !o.pp_overlap && !o.param_gather_overlap && !o.tp_overlap);
    ASSERT_NEAR(o.host_op_s, 0.0, 1e-12); /* docs/calibration.md */
    ASSERT_TRUE(!o.zero3_per_tensor);
    lp_framework_defaults(LP_FW_MEGATRON_DEEPSPEED, &o);
    ASSERT_TRUE(!o.dp_overlap && !o.pp_overlap);
    ASSERT_TRUE(o.zero3_per_tensor);        /* DeepSpeed 2021 partition_parameters.py */
    ASSERT_NEAR(o.host_op_s, 82e-6, 1e-12); /* docs/calibration.md */
    ASSERT_NEAR(o.bucket_bytes, 5e8, 1e-12);
    lp_framework_defaults(LP_FW_FSDP, &o);
    ASSERT_TRUE(o.dp_overlap && o.param_gather_overlap && !o.pp_overlap);
    ASSERT_NEAR(o.host_op_s, 100e-6, 1e-12); /* docs/calibration.md */
    ASSERT_TRUE(o.xent == LP_XENT_NATIVE);
    ASSERT_TRUE(!o.zero3_per_tensor); /* one FSDP unit per block */
    lp_framework_defaults(LP_FW_MEGATRON, &o);
    ASSERT_NEAR(o.host_op_s, 29e-6, 1e-12); /* docs/calibration.md (Megatron-Bridge calib half) */
    ASSERT_TRUE(o.grad_fp32 && !o.ep_overlap && o.dispatcher == LP_DISPATCH_ALLTOALL);
    ASSERT_NEAR(o.bucket_bytes, 40e6, 1e-12);
    ASSERT_TRUE(!o.hybrid_shard);
    lp_framework_defaults(LP_FW_DDP, &o);
    ASSERT_TRUE(o.dp_overlap && !o.param_gather_overlap && !o.pp_overlap);
    ASSERT_NEAR(o.bucket_bytes, 25.0 * 1024 * 1024, 1e-6); /* DDP bucket_cap_mb = 25 */
    ASSERT_TRUE(o.xent == LP_XENT_NATIVE && !o.hybrid_shard);
    for (int k = 0; k < LP_FW_COUNT; k++) { /* Composer's metrics: a run option only */
        lp_framework_defaults((enum lp_framework)k, &o);
        ASSERT_TRUE(!o.train_metrics && !o.fused_mlp); /* run options only */
        /* reentrant checkpointing everywhere but hf (LLaMA-Factory 0.4.0:
         * use_reentrant False), fms-fsdp's and torchtitan's NO_REENTRANT
         * checkpoint wrappers (fsdp1, fsdp2; docs/frameworks.md) */
        ASSERT_TRUE(o.ckpt_reentrant == (k != LP_FW_HF && k != LP_FW_FSDP1 && k != LP_FW_FSDP2));
        ASSERT_TRUE(o.ckpt_early_stop); /* PyTorch 2.1+; acts where non-reentrant */
    }
    /* FSDP outside Composer: the fsdp family's overlap, eager PyTorch's
     * derived host time (below); FSDP1 reduces in bf16 (fms-fsdp
     * bfSixteen), torchtitan's FSDP2 in fp32 with its fp32 loss (no shifted
     * copy) */
    lp_framework_defaults(LP_FW_FSDP1, &o);
    ASSERT_TRUE(o.dp_overlap && o.param_gather_overlap && !o.pp_overlap);
    ASSERT_TRUE(!o.grad_fp32 && o.xent == LP_XENT_NATIVE && !o.hybrid_shard);
    ASSERT_TRUE(!o.fused_kernels); /* fms-fsdp's eager LLaMA: norms, rotary, gated MLP */
    lp_framework_defaults(LP_FW_FSDP2, &o);
    ASSERT_TRUE(o.dp_overlap && o.param_gather_overlap && !o.pp_overlap);
    ASSERT_TRUE(o.grad_fp32 && o.xent == LP_XENT_FLOAT && !o.zero3_per_tensor);
    ASSERT_TRUE(!o.fused_kernels); /* torchtitan's eager norms, rotary, SwiGLU */
    ASSERT_TRUE(lp_fw_is_fsdp(LP_FW_FSDP) && lp_fw_is_fsdp(LP_FW_FSDP1) &&
                lp_fw_is_fsdp(LP_FW_FSDP2) && !lp_fw_is_fsdp(LP_FW_DDP));
    enum lp_framework f;
    ASSERT_OK(lp_framework_parse("fsdp", &f));
    ASSERT_TRUE(f == LP_FW_FSDP);
    ASSERT_OK(lp_framework_parse("ddp", &f));
    ASSERT_TRUE(f == LP_FW_DDP);
    ASSERT_EQ_STR(lp_framework_name(LP_FW_DDP), "ddp");
    ASSERT_OK(lp_framework_parse("fsdp2", &f));
    ASSERT_TRUE(f == LP_FW_FSDP2);
    ASSERT_OK(lp_framework_parse("fsdp1", &f));
    ASSERT_TRUE(f == LP_FW_FSDP1);
    ASSERT_TRUE(lp_framework_parse("jax", &f) != 0);
}

TEST(atomic_write)
{
    char dir[] = "/tmp/lp_test_XXXXXX";
    ASSERT_TRUE(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof(path), "%s/out.json", dir);
    ASSERT_OK(lp_write_file_atomic(path, "{}\n", 3, NULL));
    char *text = NULL;
    size_t len = 0;
    ASSERT_OK(lp_read_file(path, &text, &len, NULL));
    ASSERT_EQ_INT(len, 3);
    ASSERT_EQ_STR(text, "{}\n");
    free(text);
    remove(path);
    remove(dir);
}

/* The fitted constants: the shipped data/calibration.json holds the built-in
 * values (so a tree with or without it gives the same numbers), a file's
 * values reach the framework defaults of a parsed run, and a malformed file
 * is an error naming the file and the key. */
static int calib_text(const char *dir, const char *body, char *path, size_t len)
{
    snprintf(path, len, "%s/calibration.json", dir);
    return lp_write_file_atomic(path, body, strlen(body), NULL);
}

/* The host time per kernel of the eager stacks without fitted rows (ddp,
 * fsdp1, fsdp2) is derived, by hand from config.c's cited terms: a forward
 * kernel 3.8 us (Python op with autograd, pytorch #122029) + 3.3 us
 * (cuLaunchKernel, tritonbench #1017) = 7.1 us; a backward kernel 0.70 us
 * (C++ through the dispatcher, pytorch #62032) + 3.3 us = 4.0 us; two
 * backward kernels per forward kernel: (7.1 + 2 x 4.0) / 3 = 5.0333 us.
 * Not from the calibration: a calibration holding another figure for them
 * leaves it (and the fitted stacks keep theirs). */
TEST(eager_host_time_derived)
{
    ASSERT_NEAR(lp_eager_host_op_s(), 15.1e-6 / 3.0, 1e-12);
    struct lp_calib cal;
    lp_calib_builtin(&cal);
    for (int k = 0; k < LP_FW_COUNT; k++)
        cal.host_op_s[k] = 1e-3; /* a calibration that names every stack */
    struct lp_framework_opts o;
    static const enum lp_framework derived[] = {LP_FW_DDP, LP_FW_FSDP1, LP_FW_FSDP2};
    for (int i = 0; i < 3; i++) {
        ASSERT_TRUE(lp_fw_host_derived(derived[i]));
        lp_framework_defaults(derived[i], &o);
        ASSERT_NEAR(o.host_op_s, 15.1e-6 / 3.0, 1e-12);
        lp_framework_defaults_cal(derived[i], &cal, &o);
        ASSERT_NEAR(o.host_op_s, 15.1e-6 / 3.0, 1e-12);
    }
    static const enum lp_framework fitted[] = {LP_FW_MEGATRON, LP_FW_MEGATRON_2021,
                                               LP_FW_MEGATRON_DEEPSPEED, LP_FW_FSDP, LP_FW_HF};
    for (int i = 0; i < 5; i++) {
        ASSERT_TRUE(!lp_fw_host_derived(fitted[i]));
        lp_framework_defaults_cal(fitted[i], &cal, &o);
        ASSERT_NEAR(o.host_op_s, 1e-3, 1e-15);
    }
}

TEST(calibration_file)
{
    struct lp_calib shipped, builtin;
    lp_calib_builtin(&builtin);
    ASSERT_OK(lp_calib_load_default(&shipped, NULL)); /* LLMPLAN_DATA: the source tree's */
    /* the same doubles, not nearly: outputs stay byte-identical (19 us read
     * as 19 * 1e-6 would be one ulp off 19e-6) */
    ASSERT_TRUE(shipped.sustained_frac == builtin.sustained_frac);
    ASSERT_TRUE(shipped.host_overlap == builtin.host_overlap);
    ASSERT_TRUE(shipped.attn_old_ratio == builtin.attn_old_ratio);
    for (int f = 0; f < LP_FW_COUNT; f++)
        ASSERT_TRUE(shipped.host_op_s[f] == builtin.host_op_s[f]);

    char dir[] = "/tmp/lp_test_XXXXXX";
    ASSERT_TRUE(mkdtemp(dir) != NULL);
    char path[128];
    ASSERT_OK(calib_text(dir,
                         "{\"format\": 1, \"provenance\": {\"command\": \"test\"},"
                         " \"sustained_frac\": 0.9, \"host_overlap\": 2,"
                         " \"host_op_us\": {\"megatron-deepspeed\": 50},"
                         " \"attn_old_ratio\": 0.5}",
                         path, sizeof(path)));
    struct lp_calib c;
    ASSERT_OK(lp_calib_load(path, &c, NULL));
    ASSERT_NEAR(c.sustained_frac, 0.9, 1e-15);
    ASSERT_NEAR(c.host_overlap, 2.0, 1e-15);
    ASSERT_NEAR(c.attn_old_ratio, 0.5, 1e-15);
    ASSERT_NEAR(c.host_op_s[LP_FW_MEGATRON_DEEPSPEED], 50e-6, 1e-12);
    ASSERT_NEAR(c.host_op_s[LP_FW_HF], builtin.host_op_s[LP_FW_HF], 1e-15); /* not named: kept */
    struct lp_framework_opts o;
    lp_framework_defaults_cal(LP_FW_MEGATRON_DEEPSPEED, &c, &o);
    ASSERT_NEAR(o.host_op_s, 50e-6, 1e-12);
    ASSERT_NEAR(o.host_overlap, 2.0, 1e-15);
    ASSERT_NEAR(o.cal.sustained_frac, 0.9, 1e-15);

    static const struct {
        const char *body, *key;
    } bad[] = {
        {"{\"format\": 1, \"sustained_frac\": 1.5, \"host_overlap\": 1.25,"
         " \"host_op_us\": {}, \"attn_old_ratio\": 0.52}",
         "'sustained_frac'"},
        {"{\"format\": 1, \"sustained_frac\": 0.87,"
         " \"host_op_us\": {}, \"attn_old_ratio\": 0.52}",
         "'host_overlap'"},
        {"{\"format\": 1, \"sustained_frac\": 0.87, \"host_overlap\": 1.25,"
         " \"host_op_us\": {\"jax\": 3}, \"attn_old_ratio\": 0.52}",
         "'host_op_us.jax'"},
        {"{\"format\": 1, \"sustained_frac\": 0.87, \"host_overlap\": 1.25,"
         " \"host_op_us\": {\"hf\": -1}, \"attn_old_ratio\": 0.52}",
         "'host_op_us.hf'"},
        /* derived, not fitted: a figure in the file would be ignored */
        {"{\"format\": 1, \"sustained_frac\": 0.87, \"host_overlap\": 1.25,"
         " \"host_op_us\": {\"ddp\": 0}, \"attn_old_ratio\": 0.52}",
         "'host_op_us.ddp'"},
        {"{\"format\": 1, \"sustained_frac\": 0.87, \"host_overlap\": 1.25,"
         " \"host_op_us\": {\"fsdp2\": 5}, \"attn_old_ratio\": 0.52}",
         "'host_op_us.fsdp2'"},
        {"{\"format\": 1, \"sustained_frac\": 0.87, \"host_overlap\": 1.25,"
         " \"host_op_us\": {}, \"attn_old_ratio\": 0.52, \"host_op\": 1}",
         "'host_op'"},
        {"{\"format\": 2, \"sustained_frac\": 0.87, \"host_overlap\": 1.25,"
         " \"host_op_us\": {}, \"attn_old_ratio\": 0.52}",
         "'format'"},
        {"{\"format\": 1, \"sustained_frac\": 0.87, \"host_overlap\": 1.25,"
         " \"host_op_us\": 3, \"attn_old_ratio\": 0.52}",
         "'host_op_us'"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ASSERT_OK(calib_text(dir, bad[i].body, path, sizeof(path)));
        struct lp_err err;
        lp_err_clear(&err);
        ASSERT_TRUE(lp_calib_load(path, &c, &err) < 0);
        ASSERT_CONTAINS(err.msg, path);
        ASSERT_CONTAINS(err.msg, bad[i].key);
    }
    remove(path);
    remove(dir);
}

/* lp_calib_load_default reads the data directory's file once per process:
 * a file rewritten after the first read is not read again, another data
 * directory's is, and a malformed default file fails naming file and key on
 * every call. */
TEST(calibration_read_once)
{
    const char *was = getenv("LLMPLAN_DATA");
    char *saved = was ? strdup(was) : NULL;
    char dir[] = "/tmp/lp_test_XXXXXX", dir2[] = "/tmp/lp_test_XXXXXX", path[128], path2[128];
    ASSERT_TRUE(mkdtemp(dir) != NULL);
    ASSERT_TRUE(mkdtemp(dir2) != NULL);
    static const char *const body[] = {
        "{\"format\": 1, \"sustained_frac\": 0.9, \"host_overlap\": 2,"
        " \"host_op_us\": {}, \"attn_old_ratio\": 0.5}",
        "{\"format\": 1, \"sustained_frac\": 0.8, \"host_overlap\": 2,"
        " \"host_op_us\": {}, \"attn_old_ratio\": 0.5}",
        "{\"format\": 1, \"sustained_frac\": 0.8, \"host_overlap\": 2,"
        " \"host_op_us\": {\"hf\": -1}, \"attn_old_ratio\": 0.5}"};
    struct lp_calib c;
    ASSERT_OK(calib_text(dir, body[0], path, sizeof(path)));
    setenv("LLMPLAN_DATA", dir, 1);
    ASSERT_OK(lp_calib_load_default(&c, NULL));
    ASSERT_NEAR(c.sustained_frac, 0.9, 1e-15);
    ASSERT_OK(calib_text(dir, body[1], path, sizeof(path)));
    ASSERT_OK(lp_calib_load_default(&c, NULL));
    ASSERT_NEAR(c.sustained_frac, 0.9, 1e-15); /* the first reading */
    ASSERT_OK(calib_text(dir2, body[2], path2, sizeof(path2)));
    setenv("LLMPLAN_DATA", dir2, 1);
    for (int i = 0; i < 2; i++) {
        struct lp_err err;
        lp_err_clear(&err);
        ASSERT_TRUE(lp_calib_load_default(&c, &err) < 0);
        ASSERT_CONTAINS(err.msg, path2);
        ASSERT_CONTAINS(err.msg, "'host_op_us.hf'");
    }
    ASSERT_OK(calib_text(dir2, body[1], path2, sizeof(path2)));
    ASSERT_OK(lp_calib_load_default(&c, NULL));
    ASSERT_NEAR(c.sustained_frac, 0.8, 1e-15);
    if (saved)
        setenv("LLMPLAN_DATA", saved, 1);
    else
        unsetenv("LLMPLAN_DATA");
    free(saved);
    remove(path);
    remove(path2);
    remove(dir);
    remove(dir2);
}

TEST(dated_prices)
{
    /* ISO dates of a year, month or day, and only real ones */
    ASSERT_TRUE(lp_is_iso_date("2024") && lp_is_iso_date("2024-06") &&
                lp_is_iso_date("2024-02-29") && lp_is_iso_date("2000-02-29"));
    ASSERT_TRUE(!lp_is_iso_date("2024-6") && !lp_is_iso_date("2024-13") &&
                !lp_is_iso_date("2024-06-31") && !lp_is_iso_date("2023-02-29") &&
                !lp_is_iso_date("1900-02-29") && !lp_is_iso_date("2024-00") &&
                !lp_is_iso_date("cudo-2024") && !lp_is_iso_date("") &&
                !lp_is_iso_date("2024-06-15x"));
    /* a name, a price's own date, or the price in effect at a date (each
     * date from its first day) */
    struct lp_system sys;
    memset(&sys, 0, sizeof(sys));
    sys.nprices = 3;
    sys.prices[0] = (struct lp_price){"list-2024", "2024", 4.0};
    sys.prices[1] = (struct lp_price){"cut", "2025-01-01", 3.0};
    sys.prices[2] = (struct lp_price){"mid", "2025-06", 2.0};
    static const struct {
        const char *sel;
        int pick; /* 1 + index, 0: none */
    } cases[] = {{"cut", 2},     {"2025-06", 3},    {"2024-12-31", 1}, {"2025", 2},
                 {"2025-01", 2}, {"2025-05-31", 2}, {"2031", 3},       {"2023-12", 0},
                 {"2025-13", 0}, {"nothing", 0}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sys.price_pick = 0;
        const int rc = lp_system_pick_price(&sys, cases[i].sel);
        if (cases[i].pick == 0) {
            ASSERT_TRUE(rc == LP_ENOTFOUND);
        } else {
            ASSERT_OK(rc);
            ASSERT_EQ_INT(sys.price_pick, cases[i].pick);
            ASSERT_NEAR(sys.price_per_gpu_hour_usd, sys.prices[cases[i].pick - 1].usd_per_gpu_hour,
                        0);
        }
    }
    /* a price's name may be neither a date nor another price's name */
    struct lp_err err;
    const char *bad[] = {
        "{\"model\": \"gpt3-1.3b\", \"system\": {\"preset\": \"a40-8x-pcie\", \"prices\": "
        "[{\"name\": \"2024-06\", \"date\": \"2024\", \"usd_per_gpu_hour\": 1}]}}",
        "{\"model\": \"gpt3-1.3b\", \"system\": {\"preset\": \"a40-8x-pcie\", \"prices\": "
        "[{\"name\": \"a\", \"date\": \"2024\", \"usd_per_gpu_hour\": 1}, {\"name\": \"a\", "
        "\"date\": \"2025\", \"usd_per_gpu_hour\": 2}]}}",
        "{\"model\": \"gpt3-1.3b\", \"system\": {\"preset\": \"a40-8x-pcie\", \"prices\": "
        "[{\"name\": \"a\", \"date\": \"2024-06-31\", \"usd_per_gpu_hour\": 1}]}}"};
    const char *want[] = {"prices[0].name", "prices[1].name", "prices[0].date"};
    for (int i = 0; i < 3; i++) {
        struct lp_run run;
        lp_err_clear(&err);
        ASSERT_TRUE(lp_parse_run(bad[i], "t.json", &run, &err) == LP_EINVAL);
        ASSERT_CONTAINS(err.msg, want[i]);
    }
}

TH_MAIN(TH_CASE(all_presets_load), TH_CASE(preset_values), TH_CASE(run_inline_and_defaults),
        TH_CASE(run_errors_name_file_and_key), TH_CASE(attention_kernel),
        TH_CASE(framework_round_trip), TH_CASE(framework_gaps_refused), TH_CASE(framework_defaults),
        TH_CASE(eager_host_time_derived), TH_CASE(atomic_write), TH_CASE(calibration_file),
        TH_CASE(calibration_read_once), TH_CASE(dated_prices))
