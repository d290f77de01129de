/* Reading sweep.h5 (docs/search.md) serially, block by block, generic over
 * its columns: the root attribute "columns" gives their order, each
 * dataset's type class how it is read (an enumeration with its members'
 * names, an integer as int64 / uint64, a float as double). A column added
 * by a later format version is read without a change here. Used by
 * `llmplan export` (sweep_csv.c) and `llmplan report` (report_html.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep_table.h"

/* The column names of the root attribute "columns" (fixed-length strings). */
static int read_columns(const char *path, hid_t file, struct lp_xcol *cols, int *ncols,
                        struct lp_err *err)
{
    if (H5Aexists(file, "columns") <= 0)
        LP_FAIL(err, LP_EFORMAT, "%s: no root attribute 'columns': not a llmplan sweep.h5", path);
    hid_t a = H5Aopen(file, "columns", H5P_DEFAULT);
    hid_t t = a < 0 ? H5I_INVALID_HID : H5Aget_type(a);
    hid_t sp = a < 0 ? H5I_INVALID_HID : H5Aget_space(a);
    hssize_t n = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
    size_t w = t < 0 ? 0 : H5Tget_size(t);
    int rc = LP_OK;
    char *buf = NULL;
    if (t < 0 || H5Tget_class(t) != H5T_STRING || H5Tis_variable_str(t) > 0 || n < 1 ||
        n > LP_STAB_MAX_COLS || w == 0) {
        rc = lp_err_set_at(err, LP_EFORMAT, __FILE__, __LINE__,
                           "%s: root attribute 'columns': expected 1..%d fixed-length strings",
                           path, LP_STAB_MAX_COLS);
        goto cleanup;
    }
    buf = calloc((size_t)n, w + 1);
    if (!buf || H5Aread(a, t, buf) < 0) {
        rc = lp_err_set_at(err, LP_EHDF5, __FILE__, __LINE__,
                           "%s: cannot read root attribute 'columns'", path);
        goto cleanup;
    }
    for (hssize_t i = 0; i < n; i++)
        snprintf(cols[i].name, sizeof(cols[i].name), "%.*s", (int)w, buf + (size_t)i * w);
    *ncols = (int)n;
cleanup:
    free(buf);
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    return rc;
}

/* Open column c, choose its memory type, and for an enumeration collect the
 * names of its members (values 0..n-1, as sweep.h5 writes them). */
static int open_column(const char *path, hid_t file, struct lp_xcol *c, hsize_t *rows,
                       struct lp_err *err)
{
    char dname[160];
    snprintf(dname, sizeof(dname), "/configs/%s", c->name);
    c->ds = H5Dopen2(file, dname, H5P_DEFAULT);
    if (c->ds < 0)
        LP_FAIL(err, LP_EFORMAT, "%s: column %s listed in 'columns' but missing", path, dname);
    hid_t ft = H5Dget_type(c->ds), sp = H5Dget_space(c->ds);
    hsize_t dim = 0;
    const int nd = sp < 0 ? -1 : H5Sget_simple_extent_ndims(sp);
    if (nd == 1) H5Sget_simple_extent_dims(sp, &dim, NULL);
    if (sp >= 0) H5Sclose(sp);
    c->cls = ft < 0 ? H5T_NO_CLASS : H5Tget_class(ft);
    c->is_signed = ft >= 0 && c->cls == H5T_INTEGER && H5Tget_sign(ft) == H5T_SGN_2;
    int rc = LP_OK;
    if (nd != 1) {
        rc = lp_err_set_at(err, LP_EFORMAT, __FILE__, __LINE__, "%s: %s: expected a 1-D dataset",
                           path, dname);
    } else if (*rows != (hsize_t)-1 && dim != *rows) {
        rc = lp_err_set_at(err, LP_EFORMAT, __FILE__, __LINE__,
                           "%s: %s has %llu rows, expected %llu like the columns before it", path,
                           dname, (unsigned long long)dim, (unsigned long long)*rows);
    } else if (c->cls == H5T_ENUM) {
        c->mtype = H5Tget_native_type(ft, H5T_DIR_DEFAULT);
        int n = H5Tget_nmembers(ft);
        if (c->mtype < 0 || n < 0 || n > LP_STAB_MAX_ENUM || H5Tget_size(c->mtype) != 4) {
            rc = lp_err_set_at(err, LP_EFORMAT, __FILE__, __LINE__,
                               "%s: %s: expected an enumeration of at most %d int32 members", path,
                               dname, LP_STAB_MAX_ENUM);
        } else {
            c->names = calloc((size_t)n + 1, sizeof(char *));
            c->nnames = c->names ? n : 0;
            for (int i = 0; i < c->nnames; i++) {
                int32_t v = i;
                char nm[256];
                if (H5Tenum_nameof(c->mtype, &v, nm, sizeof(nm)) >= 0) c->names[i] = strdup(nm);
            }
        }
    } else if (c->cls == H5T_INTEGER) {
        c->mtype = H5Tcopy(c->is_signed ? H5T_NATIVE_INT64 : H5T_NATIVE_UINT64);
    } else if (c->cls == H5T_FLOAT) {
        c->mtype = H5Tcopy(H5T_NATIVE_DOUBLE);
    } else {
        rc = lp_err_set_at(err, LP_EFORMAT, __FILE__, __LINE__,
                           "%s: %s: expected an integer, float or enumeration column", path, dname);
    }
    if (ft >= 0) H5Tclose(ft);
    *rows = dim;
    if (rc == LP_OK && !(c->buf = malloc(LP_STAB_BLOCK * 8)))
        rc = lp_err_set_at(err, LP_ENOMEM, __FILE__, __LINE__, "out of memory");
    return rc;
}

int lp_stab_open(const char *path, struct lp_stab **out, struct lp_err *err)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    *out = NULL;
    struct lp_stab *t = calloc(1, sizeof(*t));
    if (!t) LP_FAIL(err, LP_ENOMEM, "out of memory");
    for (int c = 0; c < LP_STAB_MAX_COLS; c++)
        t->cols[c].ds = t->cols[c].mtype = H5I_INVALID_HID;
    snprintf(t->path, sizeof(t->path), "%s", path);
    int rc = LP_OK;
    t->file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (t->file < 0) {
        rc = lp_err_set_at(err, LP_EIO, __FILE__, __LINE__,
                           "%s: cannot open (not an HDF5 file, or unreadable)", path);
        goto cleanup;
    }
    LP_TRY_GOTO(err, rc, read_columns(path, t->file, t->cols, &t->ncols, err), cleanup);
    hsize_t rows = (hsize_t)-1;
    for (int c = 0; c < t->ncols; c++)
        LP_TRY_GOTO(err, rc, open_column(path, t->file, &t->cols[c], &rows, err), cleanup);
    t->rows = rows;
cleanup:
    if (rc < 0)
        lp_stab_close(&t);
    else
        *out = t;
    return rc;
}

int lp_stab_find(const struct lp_stab *t, const char *name)
{
    for (int c = 0; c < t->ncols; c++)
        if (!strcmp(t->cols[c].name, name)) return c;
    return -1;
}

int lp_stab_read(struct lp_stab *t, uint64_t at, uint64_t *count, struct lp_err *err)
{
    hsize_t start = at, n = t->rows - at < LP_STAB_BLOCK ? t->rows - at : LP_STAB_BLOCK;
    *count = n;
    if (n == 0) return LP_OK;
    hid_t msp = H5Screate_simple(1, &n, NULL);
    int rc = LP_OK;
    for (int c = 0; c < t->ncols && rc == LP_OK; c++) {
        hid_t fsp = H5Dget_space(t->cols[c].ds);
        H5Sselect_hyperslab(fsp, H5S_SELECT_SET, &start, NULL, &n, NULL);
        if (H5Dread(t->cols[c].ds, t->cols[c].mtype, msp, fsp, H5P_DEFAULT, t->cols[c].buf) < 0)
            rc = lp_err_set_at(err, LP_EHDF5, __FILE__, __LINE__,
                               "%s: reading /configs/%s rows %llu.. failed", t->path,
                               t->cols[c].name, (unsigned long long)at);
        H5Sclose(fsp);
    }
    H5Sclose(msp);
    return rc;
}

double lp_stab_num(const struct lp_stab *t, int c, size_t i)
{
    const struct lp_xcol *x = &t->cols[c];
    if (x->cls == H5T_ENUM) return ((const int32_t *)x->buf)[i];
    if (x->cls == H5T_INTEGER && x->is_signed) return (double)((const int64_t *)x->buf)[i];
    if (x->cls == H5T_INTEGER) return (double)((const uint64_t *)x->buf)[i];
    return ((const double *)x->buf)[i];
}

const char *lp_stab_name(const struct lp_stab *t, int c, int32_t v)
{
    const struct lp_xcol *x = &t->cols[c];
    return v >= 0 && v < x->nnames ? x->names[v] : NULL;
}

void lp_stab_close(struct lp_stab **tp)
{
    struct lp_stab *t = *tp;
    if (!t) return;
    for (int c = 0; c < LP_STAB_MAX_COLS; c++) {
        if (t->cols[c].ds >= 0) H5Dclose(t->cols[c].ds);
        if (t->cols[c].mtype >= 0) H5Tclose(t->cols[c].mtype);
        for (int k = 0; k < t->cols[c].nnames; k++)
            free(t->cols[c].names[k]);
        free(t->cols[c].names);
        free(t->cols[c].buf);
    }
    if (t->file >= 0) H5Fclose(t->file);
    free(t);
    *tp = NULL;
}

int lp_stab_attr_text(const struct lp_stab *t, const char *name, char **out, struct lp_err *err)
{
    *out = NULL;
    if (H5Aexists(t->file, name) <= 0) return LP_OK;
    hid_t a = H5Aopen(t->file, name, H5P_DEFAULT);
    hid_t ty = a < 0 ? H5I_INVALID_HID : H5Aget_type(a);
    int rc = LP_OK;
    if (ty >= 0 && H5Tget_class(ty) == H5T_STRING && H5Tis_variable_str(ty) == 0) {
        size_t w = H5Tget_size(ty);
        char *buf = calloc(w + 1, 1);
        if (!buf || H5Aread(a, ty, buf) < 0) {
            free(buf);
            rc = lp_err_set_at(err, LP_EHDF5, __FILE__, __LINE__,
                               "%s: cannot read root attribute '%s'", t->path, name);
        } else {
            *out = buf;
        }
    } else if (ty >= 0 && H5Tget_class(ty) == H5T_INTEGER) {
        unsigned long long v = 0;
        char *buf = malloc(32);
        if (!buf || H5Aread(a, H5T_NATIVE_ULLONG, &v) < 0) {
            free(buf);
            rc = lp_err_set_at(err, LP_EHDF5, __FILE__, __LINE__,
                               "%s: cannot read root attribute '%s'", t->path, name);
        } else {
            snprintf(buf, 32, "%llu", v);
            *out = buf;
        }
    }
    if (ty >= 0) H5Tclose(ty);
    if (a >= 0) H5Aclose(a);
    return rc;
}
