/* Subcommands of the llmplan executable. Each returns the process exit code
 * (0 ok, 1 bad input or failure, 2 usage) and prints its own messages. */
#ifndef LLMPLAN_CLI_H
#define LLMPLAN_CLI_H

#include <stddef.h>

int lp_cmd_simulate(int argc, char **argv);
int lp_cmd_search(int argc, char **argv);   /* cmd_search.c: MPI set-up, search/ driver */
int lp_cmd_profile(int argc, char **argv);  /* cmd_profile.c: synth | info | check */
int lp_cmd_presets(int argc, char **argv);  /* models | gpus | systems */
int lp_cmd_loss(int argc, char **argv);     /* cmd_loss.c: the Chinchilla loss fit */
int lp_cmd_schedule(int argc, char **argv); /* cmd_schedule.c: jobs on one cluster */
int lp_cmd_export(int argc, char **argv);   /* cmd_export.c: sweep.h5 as CSV */
int lp_cmd_report(int argc, char **argv);   /* cmd_report.c: DIR/report.html */

/* Print "llmplan: <formatted error>" on stderr (one line, plus the traceback
 * when LLMPLAN_DEBUG is set). */
struct lp_err;
void lp_cli_error(const struct lp_err *err);

#endif
