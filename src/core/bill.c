/* From iteration time to a bill (issue #17): the cost projection of a
 * result, as sim.c used to compute it inline, plus three opt-in system
 * settings (docs/simulator.md, "Cost"):
 *
 * - billing "node": clouds bill whole instances, so a job on g GPUs of
 *   n-GPU nodes pays for ceil(g / n) * n GPUs (12 GPUs on 8-GPU nodes cost
 *   16; AWS EC2 and Azure bill per instance-second, GCP A3 per VM);
 * - energy {pue, usd_per_kwh, power_w}: an on-premise cluster pays for its
 *   power: g * power_w (default the GPU's tdp_w) * PUE per second, at
 *   usd_per_kwh (the GPU alone: host, network and cooling are what PUE and
 *   the GPU-hour price stand for);
 * - goodput {mtbf_gpu_hours, checkpoint_s, restart_s}: failures lengthen
 *   the run. With a system MTBF M = mtbf_gpu_hours * 3600 / g (independent
 *   failures), a checkpoint every tau = sqrt(2 C M) seconds (Young 1974, "A
 *   first order approximation to the optimum checkpoint interval", CACM
 *   17(9)) wastes the fraction w = C / tau + (tau / 2 + R) / M of the time
 *   (checkpoint writes, the half interval lost per failure, the restart;
 *   first order, Daly 2006, FGCS 22(3) eq. 1-2), so the run takes
 *   1 / (1 - w) times as long; w >= 1 (failures faster than progress) makes
 *   the time infinite, and the result is refused as not finite.
 *
 * With none of them set the figures are exactly the former inline ones. */
#include <math.h>

#include "llmplan/arch.h"
#include "llmplan/sim.h"

double lp_bill_budget_tokens(const struct lp_run *r)
{
    return r->train.tokens_per_param > 0 ? r->train.tokens_per_param * lp_model_params(&r->model)
                                         : r->train.tokens;
}

/* The goodput factor 1 - w of g GPUs (1 when not modelled). */
double lp_bill_goodput(const struct lp_system *sys, int gpus)
{
    const struct lp_goodput *gp = &sys->goodput;
    if (!(gp->mtbf_gpu_hours > 0) || gpus < 1) return 1.0;
    const double m = gp->mtbf_gpu_hours * 3600.0 / gpus;
    const double c = gp->checkpoint_s, r = gp->restart_s;
    const double tau = sqrt(2.0 * c * m);
    const double w = (tau > 0 ? c / tau : 0.0) + (tau / 2.0 + r) / m;
    return 1.0 - w;
}

void lp_bill_project(const struct lp_run *r, double budget_tokens, struct lp_result *res)
{
    const struct lp_system *sys = &r->system;
    const double price = sys->price_per_gpu_hour_usd;
    const int n = sys->gpus_per_node > 0 ? sys->gpus_per_node : 1;
    const double billed = sys->billing_per_node ? (double)((res->gpus + n - 1) / n * n) : res->gpus;
    /* energy in USD per second of the run */
    const struct lp_energy *en = &sys->energy;
    const double power_w = en->power_w > 0 ? en->power_w : sys->gpu.tdp_w;
    const double energy_usd_s =
        en->usd_per_kwh > 0 ? res->gpus * power_w * en->pue / 1000.0 * en->usd_per_kwh / 3600.0
                            : 0.0;
    res->cost_per_iteration_usd = res->iteration_time_s / 3600.0 * billed * price;
    if (energy_usd_s > 0) res->cost_per_iteration_usd += res->iteration_time_s * energy_usd_s;
    /* tokens per dollar of the bill (whole nodes, energy) and of the wall
     * time failures add (goodput): for a token budget D exactly D / cost_usd,
     * so ranking by it and by the budget's cost agree for one model */
    const double goodput = lp_bill_goodput(sys, res->gpus);
    res->tokens_per_usd = price > 0
                              ? (double)r->train.global_batch * r->model.seq_len *
                                    (goodput > 0 ? goodput : 0.0) / res->cost_per_iteration_usd
                              : 0.0;
    const struct lp_dataset *ds = &r->train.dataset;
    double secs = 0;
    if (ds->nbins > 0 && ds->queries > 0) /* the dataset's queries x epochs */
        secs = ds->queries * (ds->epochs > 0 ? ds->epochs : 1.0) / res->queries_per_s;
    else if (budget_tokens > 0)
        secs = budget_tokens / res->tokens_per_s;
    else
        return;
    if (goodput != 1.0) secs = goodput > 0 ? secs / goodput : INFINITY;
    res->time_days = secs / 86400.0;
    res->gpu_hours = secs / 3600.0 * res->gpus;
    res->cost_usd = sys->billing_per_node ? secs / 3600.0 * billed * price : res->gpu_hours * price;
    if (energy_usd_s > 0) res->cost_usd += secs * energy_usd_s;
}
