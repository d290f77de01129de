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
int lp_cmd_export(int argc, char **argv);   /* cmd_export.c: sweep.h5 as CSV */
int lp_cmd_report(int argc, char **argv);   /* cmd_report.c: DIR/report.html */

/* Simulate run with a timeline and write it to path (cmd_simulate.c); an
 * infeasible configuration is an error naming its reason. */
struct lp_sim;
struct lp_run;
struct lp_result;
#include "llmplan/io.h"
int lp_cli_trace(struct lp_sim *sim, const struct lp_run *run, struct lp_result *res,
                 const char *path, enum lp_trace_detail detail, struct lp_err *err);

/* Print "llmplan: <formatted error>" on stderr (one line, plus the traceback
 * when LLMPLAN_DEBUG is set). */
struct lp_err;
void lp_cli_error(const struct lp_err *err);

#include <stdbool.h>
#include <stddef.h>

/* The cost model of one system (cost_model.c): which profile applies
 * (command line, the system's own, the sweep's, data/profiles/<gpu>.h5), and
 * loading it. A profile file measured on another GPU is refused unless
 * allow_mismatch (then *mismatch is set and the caller warns with
 * lp_cli_warn_mismatch and flags its output). *prof is owned by the caller
 * (NULL for roofline). used gets the path, "roofline" or "synth:<gpu>". */
struct lp_system;
struct lp_profile;
struct lp_cost_model;
const char *lp_cli_profile_choice(const char *cli_arg, const struct lp_system *sys,
                                  const char *sweep_default);
int lp_cli_cost_model(const char *choice, const struct lp_system *sys, bool allow_mismatch,
                      struct lp_profile **prof, struct lp_cost_model *cm, char *used,
                      size_t used_len, bool *mismatch, struct lp_err *err);
void lp_cli_warn_mismatch(const char *cmd, const struct lp_profile *prof,
                          const struct lp_system *sys);

#endif
