/* The loss a model reaches: the parametric fit of Hoffmann et al. 2022
 * ("Training Compute-Optimal Large Language Models", Approach 3, Eq. 2)
 *     L(N, D) = E + A / N^alpha + B / D^beta
 * for N parameters trained on D tokens, with their constants or those of
 * the refit by Besiroglu et al. 2024 ("Chinchilla Scaling: A replication
 * attempt", Table 1). Pure functions; no I/O. */
#ifndef LLMPLAN_LOSS_H
#define LLMPLAN_LOSS_H

#ifdef __cplusplus
extern "C" {
#endif

enum lp_loss_fit {
    LP_LOSS_HOFFMANN2022 = 0, /* E 1.69, A 406.4, B 410.7, alpha 0.34, beta 0.28 */
    LP_LOSS_BESIROGLU2024,    /* E 1.82, A 482.01, B 2085.43, alpha 0.3478, beta 0.3658 */
    LP_LOSS_FIT_COUNT
};

struct lp_loss_params {
    double E, A, B, alpha, beta;
};

/* The constants of a fit (NULL for an unknown one). */
const struct lp_loss_params *lp_loss_fit_params(enum lp_loss_fit f);
/* "hoffmann2022", "besiroglu2024" */
const char *lp_loss_fit_name(enum lp_loss_fit f);
/* LP_OK, or LP_EINVAL for an unknown name */
int lp_loss_fit_parse(const char *s, enum lp_loss_fit *out);
/* L(N, D) in nats per token; NaN when N or D is not positive or the fit is
 * unknown. */
double lp_loss_chinchilla(enum lp_loss_fit f, double params, double tokens);

struct lp_run;
/* The loss of a run's model (N = lp_model_params: every parameter, experts
 * included) on the run's token budget (lp_bill_budget_tokens); NaN without
 * a budget. */
double lp_loss_run(enum lp_loss_fit f, const struct lp_run *run);

#ifdef __cplusplus
}
#endif

#endif
