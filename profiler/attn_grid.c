/* The attention sweep shared by the fused (cuDNN) and unfused (cuBLAS +
 * kernels) families: one arena sized for the largest grid point, then for
 * each precision and causal flag (or the causal one only) a forward and a backward table over
 * (batch_heads, seq, head_dim); a point that fails drops both tables of its
 * kind (recorded as missing) unless the device itself failed. */
#include <math.h>
#include <stdio.h>

#include "prof_gpu.h"

int lpp_attn_sweep(struct lpp_ctx *c, struct lp_profile *prof, enum lp_attn_impl impl,
                   bool causal_only, double (*footprint)(double bh, double s, double d, double e),
                   double arena_fraction, lpp_attn_point_fn point, int *scaled, struct lp_err *err)
{
    static const char *const names[3] = {"batch_heads", "seq", "head_dim"};
    static const enum lp_prec precs[] = {LP_BF16, LP_FP16};
    const struct lpp_axis *ax = c->plan->attn;
    int rc = LP_OK;
    char *arena = NULL;
    size_t free_b = 0, total_b = 0;
    double need = 0;
    for (int i = 0; i < ax[0].n; i++)
        for (int j = 0; j < ax[1].n; j++)
            for (int k = 0; k < ax[2].n; k++)
                need = fmax(need, footprint(ax[0].v[i], ax[1].v[j], ax[2].v[k], 2));
    LPP_CUDA(err, cudaMemGetInfo(&free_b, &total_b));
    size_t arena_bytes = (size_t)fmin(need, arena_fraction * (double)free_b);
    LPP_CUDA(err, cudaMalloc((void **)&arena, arena_bytes));

    for (size_t pi = 0; pi < sizeof(precs) / sizeof(precs[0]); pi++) {
        enum lp_prec p = precs[pi];
        if (!c->plan->prec[p]) continue;
        for (int causal = causal_only ? 1 : 0; causal < 2; causal++) {
            struct lp_table *tf = &prof->attn[impl][causal][LP_PASS_FWD][p];
            struct lp_table *tb = &prof->attn[impl][causal][LP_PASS_BWD][p];
            char name[64];
            snprintf(name, sizeof(name), "attn.%s.%s.%s", lp_attn_impl_name(impl),
                     causal ? "causal" : "full", lp_prec_name(p));
            if (c->log) fprintf(c->log, "llmplan-profile: measuring %s (fwd, bwd)\n", name);
            struct lp_err terr;
            lp_err_clear(&terr);
            int trc = lpp_table_init(tf, ax, names, 3, &terr);
            if (trc == LP_OK) trc = lpp_table_init(tb, ax, names, 3, &terr);
            long idx = 0;
            for (int i = 0; i < ax[0].n && trc == LP_OK; i++)
                for (int j = 0; j < ax[1].n && trc == LP_OK; j++)
                    for (int k = 0; k < ax[2].n && trc == LP_OK; k++, idx++) {
                        double t[2], sp[2];
                        trc = point(c, p, causal != 0, ax[0].v[i], ax[1].v[j], ax[2].v[k], arena,
                                    arena_bytes, t, sp, scaled, &terr);
                        if (trc == LP_OK) {
                            tf->value[idx] = t[0];
                            tf->spread[idx] = sp[0];
                            tb->value[idx] = t[1];
                            tb->spread[idx] = sp[1];
                        }
                    }
            if (trc < 0) {
                char nf[80], nb[80];
                snprintf(nf, sizeof(nf), "%s.fwd", name);
                snprintf(nb, sizeof(nb), "%s.bwd", name);
                lpp_table_drop(c, tf, nf, &terr);
                lpp_table_drop(c, tb, nb, &terr);
                if (!lpp_device_ok(c)) {
                    *err = terr;
                    rc = trc;
                    goto cleanup;
                }
            }
        }
    }
cleanup:
    cudaFree(arena);
    return rc;
}
