/* llmplan: plan the parallel training of a large language model.
 * Dispatches to subcommands; only `search` initialises MPI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "llmplan/status.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: llmplan <command> [options]\n"
            "\n"
            "Predict the time, memory and cost of training a transformer under every\n"
            "parallel configuration, from kernel profiles of a GPU system.\n"
            "\n"
            "commands:\n"
            "  simulate RUN.json [--json] [--trace FILE] [--profile FILE|roofline]\n"
            "                          one configuration: iteration time, breakdown, memory, cost\n"
            "  search SWEEP.json [-o DIR] [--resume] [--no-dataset]\n"
            "                          sweep a configuration space (run under mpirun)\n"
            "  report DIR [-o FILE]    a sweep's report page (DIR/report.html)\n"
            "  export SWEEP.h5 --csv FILE\n"
            "                          a sweep's dataset as CSV\n"
            "  profile synth|info|check|compare|lookup ...\n"
            "                          analytical profiles; inspect, validate, compare HDF5\n"
            "                          profiles and read one at a point\n"
            "  models | gpus | systems list the shipped presets (data/)\n"
            "  loss PARAMS TOKENS [--fit F]\n"
            "                          the loss a model reaches (Chinchilla fit)\n"
            "  schedule JOBS.json [--policy P] [--gantt DIR]\n"
            "                          several training jobs on one cluster (fcfs, planned,\n"
            "                          elastic): makespan, job completion times, utilisation\n"
            "\n"
            "options:\n"
            "  -h, --help              this text; `llmplan <command> --help` for each command\n"
            "  --version               print the version\n"
            "\n"
            "environment:\n"
            "  LLMPLAN_DATA            preset directory (default: %s)\n"
            "  LLMPLAN_DEBUG           print error tracebacks\n",
            "the source tree's data/");
}

void lp_cli_error(const struct lp_err *err)
{
    char buf[2048];
    lp_err_format(err, buf, sizeof(buf), getenv("LLMPLAN_DEBUG") != NULL);
    fprintf(stderr, "llmplan: %s\n", buf);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("llmplan %s\n", LLMPLAN_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "simulate")) return lp_cmd_simulate(argc - 1, argv + 1);
    if (!strcmp(cmd, "search")) return lp_cmd_search(argc - 1, argv + 1);
    if (!strcmp(cmd, "profile")) return lp_cmd_profile(argc - 1, argv + 1);
    if (!strcmp(cmd, "loss")) return lp_cmd_loss(argc - 1, argv + 1);
    if (!strcmp(cmd, "schedule")) return lp_cmd_schedule(argc - 1, argv + 1);
    if (!strcmp(cmd, "export")) return lp_cmd_export(argc - 1, argv + 1);
    if (!strcmp(cmd, "report")) return lp_cmd_report(argc - 1, argv + 1);
    if (!strcmp(cmd, "models") || !strcmp(cmd, "gpus") || !strcmp(cmd, "systems"))
        return lp_cmd_presets(argc - 1, argv + 1);
    fprintf(stderr, "llmplan: unknown command '%s' (see llmplan --help)\n", cmd);
    return 2;
}
