/* llmplan simulate RUN.json [--json] [--trace FILE [--trace-detail D]] [--profile
 * FILE|synth|roofline] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "llmplan/io.h"
#include "llmplan/sim.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static void usage(FILE *f)
{
    struct lp_calib cal; /* the default --sustained-frac names */
    struct lp_err ignore;
    if (lp_calib_load_default(&cal, &ignore) < 0) lp_calib_builtin(&cal);
    fprintf(
        f,
        "usage: llmplan simulate RUN.json [--json] [--trace FILE [--trace-detail D]]\n"
        "                        [--profile FILE|synth|roofline] [--sustained-frac F]\n"
        "                        [--allow-profile-mismatch]\n"
        "       llmplan simulate --batch RUNS.jsonl [--profile FILE|synth|roofline] "
        "[--sustained-frac F]\n"
        "\n"
        "Simulate one training iteration of one configuration (docs/design.md run description,\n"
        "or a plan object copied from plans.json).\n"
        "\n"
        "  --json             print one JSON object (the contract's simulate output)\n"
        "  --batch FILE       one run description per line ('-' = stdin); prints one JSON\n"
        "                     result per line, with the configuration (scripts/validate)\n"
        "  --trace FILE       write the simulated timeline as Chrome trace JSON (Perfetto);\n"
        "                     an infeasible configuration exits 1 with its reason\n"
        "  --trace-detail D   stage | microbatch (default) | op: one span per stage, every\n"
        "                     pass of every micro-batch with a memory counter, or also each\n"
        "                     pass's layers by operator class (docs/simulator.md)\n"
        "  --max-batch        also report the largest micro-batch that fits one GPU\n"
        "                     (\"max_batch\" in JSON; works with --batch)\n"
        "  --profile P        kernel profile to use: FILE.h5, 'synth' (analytical, from\n"
        "                     the GPU's datasheet) or 'roofline' (closed-form test\n"
        "                     backend); default: the system's \"profile\", else\n"
        "                     data/profiles/<gpu>.h5\n"
        "  --allow-profile-mismatch\n"
        "                     use a profile measured on another GPU than the system's\n"
        "                     (refused otherwise; warns and flags the output)\n"
        "  --sustained-frac F override every GPU's sustained fraction of its profile's\n"
        "                     compute throughput (default: the GPU preset's, else %.2f;\n"
        "                     docs/calibration.md)\n"
        "  -h, --help         this text\n"
        "\n"
        "An infeasible configuration prints feasible: false and its reason, exit 0.\n"
        "Malformed input exits 1 with a message naming the file and the key.\n",
        cal.sustained_frac);
}

static void warn_mismatch(const struct lp_profile *prof, const struct lp_system *sys)
{
    char msg[1024];
    lp_profile_mismatch_msg(msg, sizeof(msg), "llmplan simulate", prof, sys);
    fprintf(stderr, "%s\n", msg);
}

#define BATCH_PROFILES 32

/* --batch: JSON lines in, JSON lines out; one profile loaded per GPU. */
/* Print a JSON result, with "max_batch" added when asked (--max-batch). */
/* Print a JSON result, with "max_batch" added when asked (--max-batch) and
 * "profile_gpu_mismatch" (the profile's GPU) when a profile of another GPU
 * was allowed. */
static void print_json(const char *text, const struct lp_run *run, bool max_batch,
                       const struct lp_profile *mismatch, const char *trust)
{
    size_t n = strlen(text);
    while (n > 0 && text[n - 1] != '}')
        n--;
    if (n == 0) {
        printf("%s\n", text);
        return;
    }
    size_t m = n - 1; /* before the closing brace and the whitespace ahead of it */
    while (m > 0 && (text[m - 1] == '\n' || text[m - 1] == '\t' || text[m - 1] == ' '))
        m--;
    const char *sep = m + 1 < n ? ",\n\t" : ",";
    printf("%.*s", (int)m, text);
    if (max_batch) printf("%s\"max_batch\":%d", sep, lp_sim_max_batch(run));
    if (mismatch) printf("%s\"profile_gpu_mismatch\":\"%s\"", sep, mismatch->gpu);
    if (trust) printf("%s\"trust\":%s", sep, trust);
    printf("%s}\n", m + 1 < n ? "\n" : "");
}

static int run_batch(const char *file, const char *profile, double sustained, bool max_batch,
                     bool allow_mismatch, struct lp_err *err)
{
    FILE *in = strcmp(file, "-") == 0 ? stdin : fopen(file, "r");
    if (!in) LP_FAIL(err, LP_EIO, "%s: cannot open", file);
    struct {
        char gpu[LP_NAME_LEN];
        char choice[LP_PROFILE_PATH_LEN];
        bool mismatch;
        struct lp_profile *prof;
        struct lp_cost_model cm;
        struct lp_sim *sim;
    } cache[BATCH_PROFILES];
    int ncache = 0, rc = LP_OK;
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0;
    ssize_t len;
    while (rc >= 0 && (len = getline(&line, &cap, in)) >= 0) {
        lineno++;
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\n' || *p == '\0' || *p == '#') continue;
        char origin[1100];
        snprintf(origin, sizeof(origin), "%s:%ld", file, lineno);
        struct lp_run run;
        rc = lp_parse_run(p, origin, &run, err);
        if (rc < 0) break;
        if (sustained > 0) {
            run.system.gpu.sustained_frac = sustained;
            run.system.gpu.sustained_override = true;
        }
        const char *choice = lp_profile_choice(profile, &run.system, NULL);
        int k = 0;
        while (k < ncache && (strcmp(cache[k].gpu, run.system.gpu.name) != 0 ||
                              strcmp(cache[k].choice, choice) != 0))
            k++;
        if (k == ncache) {
            if (ncache == BATCH_PROFILES) {
                rc = lp_err_set_at(err, LP_EINVAL, __FILE__, __LINE__,
                                   "%s: more than %d GPU types in one batch", origin,
                                   BATCH_PROFILES);
                break;
            }
            char used[1024];
            snprintf(cache[k].gpu, sizeof(cache[k].gpu), "%s", run.system.gpu.name);
            snprintf(cache[k].choice, sizeof(cache[k].choice), "%s", choice);
            cache[k].sim = NULL;
            rc = lp_cost_model_choose(choice, &run.system, allow_mismatch, &cache[k].prof,
                                      &cache[k].cm, used, sizeof(used), &cache[k].mismatch, err);
            if (rc >= 0 && cache[k].mismatch) warn_mismatch(cache[k].prof, &run.system);
            if (rc >= 0) rc = lp_sim_create(&cache[k].cm, &cache[k].sim, err);
            ncache++;
            if (rc < 0) break;
        }
        struct lp_result res;
        lp_sim_run(cache[k].sim, &run, &res);
        char *text = NULL;
        rc = lp_result_to_json_line(&run, &res, true, &text, err);
        if (rc >= 0)
            print_json(text, &run, max_batch, cache[k].mismatch ? cache[k].prof : NULL, NULL);
        free(text);
    }
    free(line);
    for (int k = 0; k < ncache; k++) {
        lp_sim_destroy(&cache[k].sim);
        lp_profile_destroy(&cache[k].prof);
    }
    if (in != stdin) fclose(in);
    return rc;
}

static void print_summary(const struct lp_run *r, const struct lp_result *res, const char *prof)
{
    printf("model      %s (%.2f B parameters)\n", r->model.name, lp_model_params(&r->model) / 1e9);
    printf("system     %s, %d GPUs (%s), profile %s\n", r->system.name, res->gpus,
           r->system.gpu.name, prof);
    printf("parallel   tp %d  pp %d  dp %d  cp %d  ep %d  vp %d  micro-batch %d  sp %s  "
           "recompute %s  zero %d  %s\n",
           r->par.tp, r->par.pp, r->par.dp, r->par.cp, r->par.ep, r->par.vp, r->par.micro_batch,
           r->par.sequence_parallel ? "on" : "off", lp_recompute_name(r->par.recompute),
           r->par.zero, lp_schedule_name(r->par.schedule));
    if (r->par.recompute == LP_RECOMPUTE_SELECTIVE && r->par.recompute_modules) {
        printf("recompute  modules");
        for (int i = 0; i < LP_RC_MODULES; i++)
            if (r->par.recompute_modules & (1u << i)) printf(" %s", lp_rc_module_name(i));
        printf("\n");
    } else if (r->par.recompute == LP_RECOMPUTE_FULL && r->par.recompute_layers > 0) {
        printf("recompute  %s, %d layers\n", lp_rc_method_name(r->par.recompute_method),
               r->par.recompute_layers);
    }
    printf("training   global batch %lld, %s, %s attention, framework %s\n",
           (long long)r->train.global_batch, lp_prec_name(r->train.precision),
           lp_attention_name(r->train.flash_attention, r->train.attention),
           lp_framework_name(r->fw.kind));
    if (!res->feasible) {
        char why[256];
        lp_result_reason(res, why, sizeof(why));
        printf("\ninfeasible: %s\n", why);
        return;
    }
    const struct lp_breakdown *b = &res->breakdown;
    printf("\niteration  %.4f s   (%d micro-batches)\n", res->iteration_time_s, res->microbatches);
    printf("throughput %.0f tokens/s, %.1f model TFLOP/s per GPU, MFU %.1f%%\n", res->tokens_per_s,
           res->model_tflops_per_gpu, 100.0 * res->mfu);
    const enum lp_sustained_src src = lp_run_sustained_src(r);
    printf("sustained  %.2f of the profile's GEMM/attention rate (%s)\n", lp_run_sustained(r),
           src == LP_SUSTAINED_OVERRIDE ? "--sustained-frac"
           : src == LP_SUSTAINED_GPU    ? "the GPU preset's own"
                                        : "the calibration's, fitted on other GPUs' rows: this GPU "
                                          "has no sustained_frac of its own, docs/calibration.md");
    printf("\nbreakdown (critical stage)\n");
    printf("  compute          %10.4f s\n", b->compute_s);
    printf("  tp/cp/ep comm    %10.4f s\n", b->tp_comm_s);
    printf("  pipeline bubble  %10.4f s\n", b->pp_bubble_s);
    printf("  pipeline p2p     %10.4f s\n", b->pp_comm_s);
    printf("  dp comm exposed  %10.4f s\n", b->dp_comm_exposed_s);
    printf("  optimizer        %10.4f s\n", b->optimizer_s);
    if (b->zero3_gather_s > 0) printf("  zero-3 gathers   %10.4f s\n", b->zero3_gather_s);
    printf("\none layer, one micro-batch, ms\n  %-9s", "");
    for (int k = 0; k < LP_OPC_COUNT; k++)
        printf(" %15s", lp_op_class_name((enum lp_op_class)k));
    for (int pass = 0; pass < 2; pass++) {
        printf("\n  %-9s", pass ? "backward" : "forward");
        for (int k = 0; k < LP_OPC_COUNT; k++)
            printf(" %15.3f", 1e3 * (pass ? res->layer_bwd_s[k] : res->layer_fwd_s[k]));
    }
    printf("\n");
    const struct lp_memory *m = &res->memory;
    printf("\nmemory per GPU %.1f GiB of %.1f GiB\n", m->total_bytes / GIB,
           r->system.gpu.mem_bytes / GIB);
    printf("  weights %.1f, gradients %.1f, optimizer %.1f, activations %.1f, temporary %.1f GiB\n",
           m->weights_bytes / GIB, m->grads_bytes / GIB, m->optimizer_bytes / GIB,
           m->activations_bytes / GIB, m->temp_bytes / GIB);
    printf("\nstages     forward %.4f s, backward %.4f s, optimizer %.4f s\n", res->stage_fwd_s,
           res->stage_bwd_s, res->breakdown.optimizer_s);
    printf("           attention %.4f s, ", res->kind_attn_s);
    if (res->kind_mamba_s > 0) printf("Mamba %.4f s, ", res->kind_mamba_s);
    printf("MoE %.4f s, MLP %.4f s, embedding + loss %.4f s\n", res->kind_moe_s, res->kind_mlp_s,
           res->kind_edge_s);
    printf("           (norms %.4f s of kernel time within the blocks)\n", res->kind_norm_s);
    printf("queries    %.3f per second (sequence %.0f tokens)\n", res->queries_per_s, res->seq_len);
    printf("\ncost  $%.2f per iteration at $%.2f per GPU-hour\n", res->cost_per_iteration_usd,
           r->system.price_per_gpu_hour_usd);
    const struct lp_dataset *ds = &r->train.dataset;
    if (ds->nbins > 0)
        printf("      dataset %.0f queries x %g epochs: %.2f hours, %.1f GPU-hours, $%.2f\n",
               ds->queries, ds->epochs, res->time_days * 24.0, res->gpu_hours, res->cost_usd);
    double budget = r->train.tokens_per_param > 0
                        ? r->train.tokens_per_param * lp_model_params(&r->model)
                        : r->train.tokens;
    if (budget > 0 && ds->nbins <= 0)
        printf("      %.3g tokens: %.1f days, %.0f GPU-hours, $%.0f\n", budget, res->time_days,
               res->gpu_hours, res->cost_usd);
}

int lp_cmd_simulate(int argc, char **argv)
{
    const char *file = NULL, *trace = NULL, *profile = NULL, *batch = NULL;
    enum lp_trace_detail detail = LP_TRACE_MICROBATCH;
    int json = 0;
    bool max_batch = false, allow_mismatch = false;
    double sustained = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--max-batch")) {
            max_batch = true;
        } else if (!strcmp(argv[i], "--allow-profile-mismatch")) {
            allow_mismatch = true;
        } else if (!strcmp(argv[i], "--trace") && i + 1 < argc) {
            trace = argv[++i];
        } else if (!strcmp(argv[i], "--trace-detail") && i + 1 < argc) {
            if (lp_trace_detail_parse(argv[++i], &detail) < 0) {
                fprintf(stderr,
                        "llmplan simulate: --trace-detail: expected stage, microbatch or op, got "
                        "'%s'\n",
                        argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--batch") && i + 1 < argc) {
            batch = argv[++i];
        } else if (!strcmp(argv[i], "--profile") && i + 1 < argc) {
            profile = argv[++i];
        } else if (!strcmp(argv[i], "--sustained-frac") && i + 1 < argc) {
            char *end = NULL;
            sustained = strtod(argv[++i], &end);
            if (!end || *end || !(sustained > 0 && sustained <= 1)) {
                fprintf(stderr,
                        "llmplan simulate: --sustained-frac: expected a fraction in (0, 1], got "
                        "'%s'\n",
                        argv[i]);
                return 2;
            }
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "llmplan simulate: unknown or incomplete option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (!file) {
            file = argv[i];
        } else {
            fprintf(stderr, "llmplan simulate: one run description expected, got '%s' too\n",
                    argv[i]);
            return 2;
        }
    }
    struct lp_err err;
    lp_err_clear(&err);
    if (batch) {
        if (run_batch(batch, profile, sustained, max_batch, allow_mismatch, &err) < 0) {
            lp_cli_error(&err);
            return 1;
        }
        return 0;
    }
    if (!file) {
        usage(stderr);
        return 2;
    }
    struct lp_run run;
    struct lp_profile *prof = NULL;
    struct lp_sim *sim = NULL;
    char *text = NULL;
    int rc = lp_load_run(file, &run, &err);
    if (rc >= 0 && sustained > 0) {
        run.system.gpu.sustained_frac = sustained;
        run.system.gpu.sustained_override = true;
    }
    char used[1024];
    struct lp_cost_model cm;
    bool mismatch = false;
    if (rc >= 0)
        rc = lp_cost_model_choose(lp_profile_choice(profile, &run.system, NULL), &run.system,
                                  allow_mismatch, &prof, &cm, used, sizeof(used), &mismatch, &err);
    if (rc >= 0 && mismatch) warn_mismatch(prof, &run.system);
    if (rc >= 0) rc = lp_sim_create(&cm, &sim, &err);
    struct lp_result res;
    if (rc >= 0 && trace) {
        rc = lp_trace_run(sim, &run, &res, trace, detail, &err);
    } else if (rc >= 0) {
        lp_sim_run(sim, &run, &res);
    }
    /* how far to trust the figure (#17): the bands scripts/validate wrote,
     * as search's plans carry them */
    struct lp_trust *trust = NULL;
    char *trust_text = NULL;
    if (rc >= 0 && res.feasible) {
        rc = lp_trust_load_default(&trust, &err);
        if (rc >= 0 && trust && json)
            trust_text = lp_trust_json_text(trust, &run, res.gpus, res.iteration_time_s);
    }
    if (rc >= 0) {
        if (json) {
            rc = lp_result_to_json(&run, &res, true, &text, &err);
            if (rc >= 0) print_json(text, &run, max_batch, mismatch ? prof : NULL, trust_text);
        } else {
            print_summary(&run, &res, used);
            if (trust) {
                char line[1024];
                lp_trust_line(trust, &run, res.gpus, res.iteration_time_s, line, sizeof(line));
                printf("\ntrust      %s\n", line);
            }
            if (mismatch)
                printf("\nWARNING    profile measured on GPU '%s', not on '%s' "
                       "(--allow-profile-mismatch)\n",
                       prof->gpu, run.system.gpu.name);
            if (max_batch)
                printf("\nmax batch  %d sequences per GPU fit %.1f GiB\n", lp_sim_max_batch(&run),
                       run.system.gpu.mem_bytes / GIB);
            if (trace) printf("\ntrace written to %s (open in https://ui.perfetto.dev)\n", trace);
        }
    }
    if (rc < 0) lp_cli_error(&err);
    free(text);
    free(trust_text);
    lp_trust_destroy(&trust);
    lp_sim_destroy(&sim);
    lp_profile_destroy(&prof);
    return rc < 0 ? 1 : 0;
}
