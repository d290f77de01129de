/* Provenance: the root attributes that say where and how a profile was
 * measured (GPU, clocks, library versions; host names, command line and date
 * are added by main.c, which owns MPI). */
#include <stdarg.h>
#include <string.h>

#include "prof_gpu.h"

static int find(struct lpp_attrs *a, const char *key)
{
    for (int i = 0; i < a->n; i++)
        if (!strcmp(a->key[i], key)) return i;
    if (a->n >= LPP_ATTR_MAX) return -1;
    snprintf(a->key[a->n], LPP_ATTR_KEY, "%s", key);
    a->val[a->n][0] = '\0';
    return a->n++;
}

void lpp_attr_set(struct lpp_attrs *a, const char *key, const char *fmt, ...)
{
    int i = find(a, key);
    if (i < 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->val[i], LPP_ATTR_VAL, fmt, ap);
    va_end(ap);
}

void lpp_attr_append(struct lpp_attrs *a, const char *key, const char *fmt, ...)
{
    int i = find(a, key);
    if (i < 0) return;
    size_t len = strlen(a->val[i]);
    if (len && len + 2 < LPP_ATTR_VAL) {
        memcpy(a->val[i] + len, "; ", 3);
        len += 2;
    }
    if (len + 1 >= LPP_ATTR_VAL) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->val[i] + len, LPP_ATTR_VAL - len, fmt, ap);
    va_end(ap);
}

const struct lp_kv *lpp_attr_kv(struct lpp_attrs *a, int *n)
{
    for (int i = 0; i < a->n; i++) {
        a->kv[i].key = a->key[i];
        a->kv[i].value = a->val[i];
    }
    *n = a->n;
    return a->kv;
}

static void version3(char *buf, size_t len, int v, int major_div, int minor_div)
{
    snprintf(buf, len, "%d.%d.%d", v / major_div, (v % major_div) / minor_div, v % minor_div);
}

int lpp_provenance_device(struct lpp_ctx *c, struct lp_err *err)
{
    const struct lpp_device *d = &c->dev;
    struct lpp_attrs *a = c->attrs;
    int drv = 0, rt = 0, nccl = 0;
    char buf[64];
    lpp_attr_set(a, "gpu_name", "%s", d->name);
    lpp_attr_set(a, "gpu_uuid", "%s", d->uuid);
    lpp_attr_set(a, "gpu_compute_capability", "%d.%d", d->cc_major, d->cc_minor);
    lpp_attr_set(a, "gpu_sm_count", "%d", d->sms);
    lpp_attr_set(a, "gpu_memory_bytes", "%.0f", d->mem_bytes);
    lpp_attr_set(a, "gpu_l2_bytes", "%.0f", d->l2_bytes);
    lpp_attr_set(a, "gpu_sm_clock_mhz",
                 "%.0f (cudaDevAttrClockRate: peak boost, not measured under load)",
                 d->sm_clock_khz / 1000);
    lpp_attr_set(a, "gpu_mem_clock_mhz", "%.0f", d->mem_clock_khz / 1000);
    LPP_CUDA(err, cudaDriverGetVersion(&drv));
    LPP_CUDA(err, cudaRuntimeGetVersion(&rt));
    lpp_attr_set(a, "cuda_driver_version", "%d.%d", drv / 1000, (drv % 1000) / 10);
    lpp_attr_set(a, "cuda_runtime_version", "%d.%d", rt / 1000, (rt % 1000) / 10);
    version3(buf, sizeof(buf), (int)cublasLtGetVersion(), 10000, 100);
    lpp_attr_set(a, "cublaslt_version", "%s", buf);
    version3(buf, sizeof(buf), (int)cudnnGetVersion(), 10000, 100);
    lpp_attr_set(a, "cudnn_version", "%s", buf);
    LPP_NCCL(err, ncclGetVersion(&nccl));
    version3(buf, sizeof(buf), nccl, 10000, 100);
    lpp_attr_set(a, "nccl_version", "%s", buf);
    return LP_OK;
}
