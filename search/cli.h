/* Subcommands of the llmplan executable. Each returns the process exit code
 * (0 ok, 1 bad input or failure, 2 usage) and prints its own messages. */
#ifndef LLMPLAN_CLI_H
#define LLMPLAN_CLI_H

#include <stddef.h>

int lp_cmd_simulate(int argc, char **argv);
int lp_cmd_search(int argc, char **argv);   /* search.c: initialises MPI itself */
int lp_cmd_profile(int argc, char **argv);  /* cmd_profile.c: synth | info | check */
int lp_cmd_presets(int argc, char **argv);  /* models | gpus | systems */
int lp_cmd_loss(int argc, char **argv);     /* cmd_loss.c: the Chinchilla loss fit */
int lp_cmd_schedule(int argc, char **argv); /* cmd_schedule.c: jobs on one cluster */

/* Print "llmplan: <formatted error>" on stderr (one line, plus the traceback
 * when LLMPLAN_DEBUG is set). */
struct lp_err;
void lp_cli_error(const struct lp_err *err);

/* The cost model of a GPU (cmd_simulate.c): profile_arg "roofline", a file,
 * or NULL for data/profiles/<gpu>.h5 (*prof then owns the loaded profile);
 * used receives what was used. */
struct lp_gpu;
struct lp_profile;
struct lp_cost_model;
int lp_cli_cost_model(const char *profile_arg, const struct lp_gpu *gpu, struct lp_profile **prof,
                      struct lp_cost_model *cm, char *used, size_t used_len, struct lp_err *err);

#endif
