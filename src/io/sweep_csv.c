/* sweep.h5 -> CSV (llmplan export), for people without HDF5 tools: every
 * column in the file's order (sweep_table.c), an enumeration as its
 * member's name, an integer as such, a float with 17 significant digits so
 * that it reads back to the same double, NaN as "NaN". */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "llmplan/io.h"
#include "sweep_table.h"

/* Print a CSV field, quoted when it holds a comma, a quote or a newline. */
static void put_field(FILE *f, const char *v)
{
    if (!strpbrk(v, ",\"\n\r")) {
        fputs(v, f);
        return;
    }
    fputc('"', f);
    for (; *v; v++) {
        if (*v == '"') fputc('"', f);
        fputc(*v, f);
    }
    fputc('"', f);
}

static void put_value(FILE *f, const struct lp_xcol *c, size_t i)
{
    char v[64];
    if (c->cls == H5T_ENUM) {
        int32_t x = ((const int32_t *)c->buf)[i];
        if (x >= 0 && x < c->nnames && c->names[x]) {
            put_field(f, c->names[x]);
            return;
        }
        snprintf(v, sizeof(v), "%d", x);
    } else if (c->cls == H5T_INTEGER && c->is_signed) {
        snprintf(v, sizeof(v), "%lld", (long long)((const int64_t *)c->buf)[i]);
    } else if (c->cls == H5T_INTEGER) {
        snprintf(v, sizeof(v), "%llu", (unsigned long long)((const uint64_t *)c->buf)[i]);
    } else {
        double x = ((const double *)c->buf)[i];
        if (isnan(x))
            snprintf(v, sizeof(v), "NaN");
        else
            snprintf(v, sizeof(v), "%.17g", x);
    }
    fputs(v, f);
}

int lp_sweep_export_csv(const char *h5_path, const char *csv_path, struct lp_err *err)
{
    struct lp_stab *t = NULL;
    LP_TRY(err, lp_stab_open(h5_path, &t, err));
    struct lp_atomic out = {.f = NULL};
    int rc = lp_atomic_open(csv_path, &out, err);
    for (int c = 0; rc == LP_OK && c < t->ncols; c++) {
        if (c) fputc(',', out.f);
        put_field(out.f, t->cols[c].name);
    }
    if (rc == LP_OK) fputc('\n', out.f);
    for (uint64_t at = 0; rc == LP_OK && at < t->rows;) {
        uint64_t count = 0;
        rc = lp_stab_read(t, at, &count, err);
        for (size_t i = 0; rc == LP_OK && i < count; i++) {
            for (int c = 0; c < t->ncols; c++) {
                if (c) fputc(',', out.f);
                put_value(out.f, &t->cols[c], i);
            }
            fputc('\n', out.f);
        }
        at += count;
    }
    if (rc == LP_OK) rc = lp_atomic_commit(&out, err);
    lp_atomic_abort(&out);
    lp_stab_close(&t);
    return rc;
}
