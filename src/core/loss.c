/* The parametric loss fit L(N, D) = E + A / N^alpha + B / D^beta
 * (include/llmplan/loss.h for the sources of the constants). */
#include <math.h>
#include <string.h>

#include "llmplan/arch.h"
#include "llmplan/loss.h"
#include "llmplan/sim.h"
#include "llmplan/status.h"

static const struct lp_loss_params fits[LP_LOSS_FIT_COUNT] = {
    /* Hoffmann et al. 2022, Sec 3.3 / Eq. 10 (Approach 3) */
    {1.69, 406.4, 410.7, 0.34, 0.28},
    /* Besiroglu et al. 2024, Table 1 (their refit of Approach 3) */
    {1.82, 482.01, 2085.43, 0.3478, 0.3658},
};
static const char *const names[LP_LOSS_FIT_COUNT] = {"hoffmann2022", "besiroglu2024"};

const struct lp_loss_params *lp_loss_fit_params(enum lp_loss_fit f)
{
    return (unsigned)f < LP_LOSS_FIT_COUNT ? &fits[f] : NULL;
}

const char *lp_loss_fit_name(enum lp_loss_fit f)
{
    return (unsigned)f < LP_LOSS_FIT_COUNT ? names[f] : "?";
}

int lp_loss_fit_parse(const char *s, enum lp_loss_fit *out)
{
    for (int i = 0; s && i < LP_LOSS_FIT_COUNT; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (enum lp_loss_fit)i;
            return LP_OK;
        }
    return LP_EINVAL;
}

double lp_loss_chinchilla(enum lp_loss_fit f, double params, double tokens)
{
    const struct lp_loss_params *p = lp_loss_fit_params(f);
    if (!p || !(params > 0) || !(tokens > 0)) return NAN;
    return p->E + p->A / pow(params, p->alpha) + p->B / pow(tokens, p->beta);
}

double lp_loss_run(enum lp_loss_fit f, const struct lp_run *run)
{
    return lp_loss_chinchilla(f, lp_model_params(&run->model), lp_bill_budget_tokens(run));
}
