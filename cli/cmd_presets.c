/* llmplan models | gpus | systems: list the shipped presets. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "llmplan/io.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

struct list_ctx {
    enum lp_preset_kind kind;
    struct lp_err *err;
    int count;
};

static int print_one(const char *name, const char *path, void *arg)
{
    struct list_ctx *c = arg;
    (void)path;
    c->count++;
    if (c->kind == LP_PRESET_MODEL) {
        struct lp_model m;
        LP_TRY(c->err, lp_load_model(name, &m, c->err));
        printf("%-16s %8.2fB  layers %3d  hidden %6d  heads %3d/%-3d  ffn %6d %-6s  vocab %6d  seq "
               "%5d%s\n",
               name, lp_model_params(&m) / 1e9, m.layers, m.hidden, m.heads, m.kv_heads,
               m.ffn_hidden, m.ffn_act == LP_ACT_SWIGLU ? "swiglu" : "gelu", m.vocab, m.seq_len,
               m.moe.experts ? "  moe" : "");
    } else if (c->kind == LP_PRESET_GPU) {
        struct lp_gpu g;
        LP_TRY(c->err, lp_load_gpu(name, &g, c->err));
        printf("%-12s %6.1f GiB  %6.0f GB/s  bf16 %7.1f  fp16 %7.1f  fp8 %7.1f TFLOP/s\n", name,
               g.mem_bytes / GIB, g.mem_bw_Bps / 1e9, g.peak_flops[LP_BF16] / 1e12,
               g.peak_flops[LP_FP16] / 1e12, g.peak_flops[LP_FP8] / 1e12);
    } else {
        struct lp_system s;
        LP_TRY(c->err, lp_load_system(name, &s, c->err));
        printf("%-20s %-10s x%-2d  intra %5.0f GB/s %4.1f us  inter %5.1f GB/s/GPU %4.1f us  "
               "$%.2f/GPU-h\n",
               name, s.gpu.name, s.gpus_per_node, s.intra.bw_Bps / 1e9, s.intra.latency_s * 1e6,
               s.inter.bw_Bps / 1e9, s.inter.latency_s * 1e6, s.price_per_gpu_hour_usd);
    }
    return LP_OK;
}

int lp_cmd_presets(int argc, char **argv)
{
    const char *what = argv[0];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: llmplan %s\n\nList the shipped %s presets (data/%s/*.json) with their "
                   "key figures.\nSet LLMPLAN_DATA to use another preset directory.\n",
                   what, what, what);
            return 0;
        }
        fprintf(stderr, "llmplan %s: unexpected argument '%s'\n", what, argv[i]);
        return 2;
    }
    struct lp_err err;
    lp_err_clear(&err);
    struct list_ctx c = {LP_PRESET_MODEL, &err, 0};
    if (!strcmp(what, "gpus")) c.kind = LP_PRESET_GPU;
    if (!strcmp(what, "systems")) c.kind = LP_PRESET_SYSTEM;
    int rc = lp_list_presets(c.kind, print_one, &c, &err);
    if (rc < 0) {
        lp_cli_error(&err);
        return 1;
    }
    return 0;
}
