/* Subcommands of the llmplan executable. Each returns the process exit code
 * (0 ok, 1 bad input or failure, 2 usage) and prints its own messages. */
#ifndef LLMPLAN_CLI_H
#define LLMPLAN_CLI_H

int lp_cmd_simulate(int argc, char **argv);
int lp_cmd_search(int argc, char **argv);  /* search.c: initialises MPI itself */
int lp_cmd_profile(int argc, char **argv); /* cmd_profile.c: synth | info | check */
int lp_cmd_presets(int argc, char **argv); /* models | gpus | systems */
int lp_cmd_loss(int argc, char **argv);    /* cmd_loss.c: the Chinchilla loss fit */
int lp_cmd_export(int argc, char **argv);  /* cmd_export.c: sweep.h5 as CSV */
int lp_cmd_report(int argc, char **argv);  /* cmd_report.c: DIR/report.html */

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

#endif
