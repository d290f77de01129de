/* HDF5 kernel profiles: reader, writer and summary (docs/profile-format.md).
 *
 * Serial HDF5 API: every rank that needs a profile reads the file itself.
 * HDF5's automatic error printing is switched off at each entry point and
 * every failure of an H5* call becomes LP_EHDF5 naming the file, the object
 * and the HDF5 function; a file that is readable but not a valid profile is
 * LP_EFORMAT naming the file, the group and what was expected. Files are
 * written to PATH.tmp.<pid>, flushed, fsync'd and renamed over PATH. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "llmplan/io.h"

/* Root attributes the schema itself defines (everything else is provenance). */
static const char *const reserved_attrs[] = {"schema_version", "gpu",      "source",
                                             "checksum",       "launch_s", NULL};
/* Root attributes the writer sets itself unless the caller overrides them. */
static const char *const writer_attrs[] = {"created", "tool_version", NULL};

static bool in_list(const char *key, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (strcmp(key, list[i]) == 0) return true;
    return false;
}

/* ---- HDF5 error translation ---- */

static herr_t walk_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    char *buf = data;
    if (n == 0 && e->desc) snprintf(buf, 160, "%s", e->desc);
    return 0;
}

/* LP_EHDF5 with the HDF5 function, the object and HDF5's innermost message. */
static int h5_fail(struct lp_err *err, const char *file, int line, const char *path, const char *fn,
                   const char *obj)
{
    char desc[160] = "";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, walk_cb, desc);
    H5Eclear2(H5E_DEFAULT);
    return lp_err_set_at(err, LP_EHDF5, file, line, "%s: HDF5 %s failed on %s%s%s", path, fn, obj,
                         desc[0] ? ": " : "", desc);
}
#define H5FAIL(fn, obj) h5_fail(err, __FILE__, __LINE__, path, (fn), (obj))

static void h5_quiet(void)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

/* Prefix an error raised by a core check with the file name. */
static int with_file(struct lp_err *err, int rc, const char *path)
{
    if (err && rc < 0 && strncmp(err->msg, path, strlen(path)) != 0) {
        char msg[LP_ERR_MSG];
        snprintf(msg, sizeof(msg), "%.200s: %.300s", path, err->msg);
        memcpy(err->msg, msg, sizeof(msg));
    }
    return rc;
}

/* ---- attributes ---- */

static int write_str_attr(hid_t loc, const char *name, const char *value, const char *path,
                          struct lp_err *err)
{
    int rc = LP_OK;
    hid_t t = -1, s = -1, a = -1;
    if (H5Aexists(loc, name) > 0 && H5Adelete(loc, name) < 0) return H5FAIL("H5Adelete", name);
    t = H5Tcopy(H5T_C_S1);
    s = H5Screate(H5S_SCALAR);
    if (t < 0 || s < 0 || H5Tset_size(t, strlen(value) + 1) < 0 ||
        H5Tset_strpad(t, H5T_STR_NULLTERM) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0) {
        rc = H5FAIL("H5Tcopy/H5Screate", name);
        goto done;
    }
    a = H5Acreate2(loc, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0) {
        rc = H5FAIL("H5Acreate2", name);
        goto done;
    }
    if (H5Awrite(a, t, value) < 0) rc = H5FAIL("H5Awrite", name);
done:
    if (a >= 0) H5Aclose(a);
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    return rc;
}

static int write_num_attr(hid_t loc, const char *name, hid_t mem_type, hid_t file_type,
                          const void *value, const char *path, struct lp_err *err)
{
    int rc = LP_OK;
    if (H5Aexists(loc, name) > 0 && H5Adelete(loc, name) < 0) return H5FAIL("H5Adelete", name);
    hid_t s = H5Screate(H5S_SCALAR);
    if (s < 0) return H5FAIL("H5Screate", name);
    hid_t a = H5Acreate2(loc, name, file_type, s, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0)
        rc = H5FAIL("H5Acreate2", name);
    else if (H5Awrite(a, mem_type, value) < 0)
        rc = H5FAIL("H5Awrite", name);
    if (a >= 0) H5Aclose(a);
    H5Sclose(s);
    return rc;
}

/* Read a scalar attribute of any string/integer/float type as text.
 * *found = false (and LP_OK) when the attribute does not exist. */
static int read_attr_text(hid_t loc, const char *name, char *buf, size_t len, bool *found,
                          const char *path, struct lp_err *err)
{
    buf[0] = '\0';
    *found = false;
    htri_t ex = H5Aexists(loc, name);
    if (ex < 0) return H5FAIL("H5Aexists", name);
    if (ex == 0) return LP_OK;
    int rc = LP_OK;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0) return H5FAIL("H5Aopen", name);
    hid_t t = H5Aget_type(a), s = H5Aget_space(a), mt = -1;
    if (t < 0 || s < 0) {
        rc = H5FAIL("H5Aget_type", name);
        goto done;
    }
    hssize_t npts = H5Sget_simple_extent_npoints(s);
    H5T_class_t cls = H5Tget_class(t);
    if (npts != 1) {
        snprintf(buf, len, "(array of %lld)", (long long)npts);
    } else if (cls == H5T_STRING) {
        /* HDF5 does not convert between character sets: read in the file's */
        mt = H5Tcopy(H5T_C_S1);
        if (mt < 0 || H5Tset_cset(mt, H5Tget_cset(t)) < 0) {
            rc = H5FAIL("H5Tset_cset", name);
            goto done;
        }
        if (H5Tis_variable_str(t) > 0) {
            char *v = NULL;
            if (H5Tset_size(mt, H5T_VARIABLE) < 0 || H5Aread(a, mt, &v) < 0) {
                rc = H5FAIL("H5Aread", name);
                goto done;
            }
            snprintf(buf, len, "%s", v ? v : "");
            H5free_memory(v);
        } else {
            size_t sz = H5Tget_size(t);
            char *v = calloc(sz + 1, 1);
            if (!v) {
                rc = lp_err_set_at(err, LP_ENOMEM, __FILE__, __LINE__, "%s: out of memory", path);
                goto done;
            }
            /* read as NULLPAD into sz + 1 zeroed bytes: a fixed-length
             * string that fills its size (h5py writes NULLPAD, no NUL)
             * keeps its last character, a NUL-terminated one stops at it */
            if (H5Tset_size(mt, sz) < 0 || H5Tset_strpad(mt, H5T_STR_NULLPAD) < 0 ||
                H5Aread(a, mt, v) < 0) {
                free(v);
                rc = H5FAIL("H5Aread", name);
                goto done;
            }
            snprintf(buf, len, "%s", v);
            free(v);
        }
    } else if (cls == H5T_INTEGER) {
        long long v = 0;
        if (H5Aread(a, H5T_NATIVE_LLONG, &v) < 0) {
            rc = H5FAIL("H5Aread", name);
            goto done;
        }
        snprintf(buf, len, "%lld", v);
    } else if (cls == H5T_FLOAT) {
        double v = 0;
        if (H5Aread(a, H5T_NATIVE_DOUBLE, &v) < 0) {
            rc = H5FAIL("H5Aread", name);
            goto done;
        }
        snprintf(buf, len, "%.17g", v);
    } else {
        snprintf(buf, len, "(unsupported type)");
    }
    *found = true;
done:
    if (mt >= 0) H5Tclose(mt);
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    H5Aclose(a);
    return rc;
}

/* ---- paths ---- */

/* Does every component of an absolute path exist (as a link)? */
static int path_exists(hid_t file, const char *obj, bool *yes, const char *path, struct lp_err *err)
{
    char part[256];
    *yes = false;
    size_t n = strlen(obj);
    if (n >= sizeof(part)) return LP_OK;
    for (size_t i = 1; i <= n; i++) {
        if (obj[i] != '/' && obj[i] != '\0') continue;
        memcpy(part, obj, i);
        part[i] = '\0';
        htri_t e = H5Lexists(file, part, H5P_DEFAULT);
        if (e < 0) return H5FAIL("H5Lexists", part);
        if (e == 0) return LP_OK;
    }
    *yes = true;
    return LP_OK;
}

/* ---- writer ---- */

static int write_dataset(hid_t grp, const char *name, int ndim, const int *dims, const double *data,
                         const char *path, const char *obj, struct lp_err *err)
{
    hsize_t hd[LP_TABLE_MAX_DIMS] = {0};
    size_t n = 1;
    for (int d = 0; d < ndim; d++) {
        hd[d] = (hsize_t)dims[d];
        n *= (size_t)dims[d];
    }
    int rc = LP_OK;
    hid_t s = H5Screate_simple(ndim, hd, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hid_t ds = -1;
    if (s < 0 || dcpl < 0) {
        rc = H5FAIL("H5Screate_simple", obj);
        goto done;
    }
    /* Tables of more than 256 values are one deflated chunk; small ones stay
     * contiguous (and byte-for-byte inspectable). */
    if (n > 256 && H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0) {
        if (H5Pset_chunk(dcpl, ndim, hd) < 0 || H5Pset_shuffle(dcpl) < 0 ||
            H5Pset_deflate(dcpl, 6) < 0) {
            rc = H5FAIL("H5Pset_deflate", obj);
            goto done;
        }
    }
    ds = H5Dcreate2(grp, name, H5T_IEEE_F64LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (ds < 0) {
        rc = H5FAIL("H5Dcreate2", obj);
        goto done;
    }
    if (H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
        rc = H5FAIL("H5Dwrite", obj);
done:
    if (ds >= 0) H5Dclose(ds);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (s >= 0) H5Sclose(s);
    return rc;
}

static int write_table(hid_t file, const struct lp_slot *slot, const struct lp_table *t,
                       const char *path, struct lp_err *err)
{
    if (t->ndim != slot->ndim)
        LP_FAIL(err, LP_EINVAL, "%s: table %s has %d dimensions (expected %d)", path, slot->path,
                t->ndim, slot->ndim);
    int rc = LP_OK;
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    if (lcpl < 0 || H5Pset_create_intermediate_group(lcpl, 1) < 0) {
        if (lcpl >= 0) H5Pclose(lcpl);
        return H5FAIL("H5Pset_create_intermediate_group", slot->path);
    }
    hid_t g = H5Gcreate2(file, slot->path, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    H5Pclose(lcpl);
    if (g < 0) return H5FAIL("H5Gcreate2", slot->path);
    LP_TRY_GOTO(err, rc, write_str_attr(g, "unit", slot->unit, path, err), done);
    for (int d = 0; d < t->ndim; d++) {
        char name[16];
        snprintf(name, sizeof(name), "axis%d", d);
        LP_TRY_GOTO(err, rc,
                    write_dataset(g, name, 1, &t->dims[d], t->axis[d], path, slot->path, err),
                    done);
        hid_t ds = H5Dopen2(g, name, H5P_DEFAULT);
        if (ds < 0) {
            rc = H5FAIL("H5Dopen2", slot->path);
            goto done;
        }
        const char *an = t->axis_name[d][0] ? t->axis_name[d] : slot->axis_names[d];
        rc = write_str_attr(ds, "name", an, path, err);
        H5Dclose(ds);
        if (rc < 0) goto done;
    }
    LP_TRY_GOTO(err, rc,
                write_dataset(g, "value", t->ndim, t->dims, t->value, path, slot->path, err), done);
    if (t->spread)
        LP_TRY_GOTO(err, rc,
                    write_dataset(g, "spread", t->ndim, t->dims, t->spread, path, slot->path, err),
                    done);
done:
    H5Gclose(g);
    return rc;
}

static int write_root_attrs(hid_t file, const struct lp_profile *p, const struct lp_kv *attrs,
                            int nattrs, const char *path, struct lp_err *err)
{
    const int version = LP_PROFILE_SCHEMA_VERSION;
    LP_TRY(err, write_num_attr(file, "schema_version", H5T_NATIVE_INT, H5T_STD_I32LE, &version,
                               path, err));
    LP_TRY(err, write_str_attr(file, "gpu", p->gpu, path, err));
    LP_TRY(err, write_str_attr(file, "source", p->source, path, err));
    char created[32];
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", &tmv);
    LP_TRY(err, write_str_attr(file, "created", created, path, err));
    LP_TRY(err, write_str_attr(file, "tool_version", "llmplan " LLMPLAN_VERSION, path, err));
    char sum[32];
    snprintf(sum, sizeof(sum), "%016" PRIx64, lp_profile_checksum(p));
    LP_TRY(err, write_str_attr(file, "checksum", sum, path, err));
    LP_TRY(err, write_num_attr(file, "launch_s", H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, &p->launch_s,
                               path, err));
    bool have_command = false;
    for (int i = 0; i < p->nprov; i++) {
        const char *k = p->prov[i].key;
        if (in_list(k, reserved_attrs) || in_list(k, writer_attrs) || !k[0]) continue;
        LP_TRY(err, write_str_attr(file, k, p->prov[i].value, path, err));
        have_command |= strcmp(k, "command") == 0;
    }
    for (int i = 0; i < nattrs; i++) {
        const char *k = attrs[i].key;
        if (!k || !k[0] || !attrs[i].value)
            LP_FAIL(err, LP_EINVAL, "%s: provenance attribute %d has no key or value", path, i);
        if (in_list(k, reserved_attrs))
            LP_FAIL(err, LP_EINVAL, "%s: attribute \"%s\" is set by the writer, not by callers",
                    path, k);
        LP_TRY(err, write_str_attr(file, k, attrs[i].value, path, err));
        have_command |= strcmp(k, "command") == 0;
    }
    if (!have_command) LP_TRY(err, write_str_attr(file, "command", "(not recorded)", path, err));
    return LP_OK;
}

static int fsync_path(const char *path, struct lp_err *err)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) LP_FAIL(err, LP_EIO, "%s: cannot reopen for fsync: %s", path, strerror(errno));
    int r = fsync(fd);
    int e = errno;
    close(fd);
    if (r != 0) LP_FAIL(err, LP_EIO, "%s: fsync: %s", path, strerror(e));
    return LP_OK;
}

int lp_profile_write_h5(const char *path, const struct lp_profile *p, const struct lp_kv *attrs,
                        int nattrs, struct lp_err *err)
{
    h5_quiet();
    if (strcmp(p->source, "measured") != 0 && strcmp(p->source, "analytical") != 0)
        LP_FAIL(err, LP_EINVAL, "%s: profile source is \"%s\" (expected measured or analytical)",
                path, p->source);
    if (!p->gpu[0]) LP_FAIL(err, LP_EINVAL, "%s: profile has no GPU name", path);
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
        LP_FAIL(err, LP_EINVAL, "%s: path too long", path);
    hid_t file = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (file < 0) {
        int rc = h5_fail(err, __FILE__, __LINE__, tmp, "H5Fcreate", "the file");
        return rc;
    }
    int rc = LP_OK;
    LP_TRY_GOTO(err, rc, write_root_attrs(file, p, attrs, nattrs, path, err), fail);
    for (int i = 0; i < LP_PROFILE_SLOTS; i++) {
        const struct lp_table *t = lp_profile_slot_table_c(p, i);
        if (!lp_table_present(t)) continue;
        LP_TRY_GOTO(err, rc, write_table(file, lp_profile_slot(i), t, path, err), fail);
    }
    if (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0) {
        rc = H5FAIL("H5Fflush", "the file");
        goto fail;
    }
    if (H5Fclose(file) < 0) {
        file = -1;
        rc = H5FAIL("H5Fclose", "the file");
        goto fail;
    }
    file = -1;
    LP_TRY_GOTO(err, rc, fsync_path(tmp, err), fail);
    if (rename(tmp, path) != 0) {
        rc = lp_err_set_at(err, LP_EIO, __FILE__, __LINE__, "%s: cannot rename %s over it: %s",
                           path, tmp, strerror(errno));
        goto fail;
    }
    return LP_OK;
fail:
    if (file >= 0) H5Fclose(file);
    unlink(tmp);
    return rc;
}

/* ---- reader ---- */

static int read_dataset(hid_t grp, const char *name, int ndim, int *dims, double **out,
                        const char *path, const char *obj, struct lp_err *err)
{
    int rc = LP_OK;
    *out = NULL;
    hid_t ds = H5Dopen2(grp, name, H5P_DEFAULT);
    if (ds < 0) {
        H5Eclear2(H5E_DEFAULT);
        LP_FAIL(err, LP_EFORMAT, "%s: %s has no dataset \"%s\"", path, obj, name);
    }
    hid_t s = H5Dget_space(ds), t = H5Dget_type(ds);
    if (s < 0 || t < 0) {
        rc = H5FAIL("H5Dget_space", obj);
        goto done;
    }
    H5T_class_t cls = H5Tget_class(t);
    if (cls != H5T_FLOAT && cls != H5T_INTEGER) {
        rc = lp_err_set_at(err, LP_EFORMAT, __FILE__, __LINE__,
                           "%s: %s/%s is not numeric (expected float64)", path, obj, name);
        goto done;
    }
    int nd = H5Sget_simple_extent_ndims(s);
    hsize_t hd[LP_TABLE_MAX_DIMS + 1];
    if (nd != ndim || nd > LP_TABLE_MAX_DIMS) {
        rc = lp_err_set_at(err, LP_EFORMAT, __FILE__, __LINE__,
                           "%s: %s/%s has %d dimensions (expected %d)", path, obj, name, nd, ndim);
        goto done;
    }
    H5Sget_simple_extent_dims(s, hd, NULL);
    size_t n = 1;
    for (int d = 0; d < nd; d++) {
        if (dims[d] >= 0 && hd[d] != (hsize_t)dims[d]) {
            rc = lp_err_set_at(err, LP_EFORMAT, __FILE__, __LINE__,
                               "%s: %s/%s dimension %d has %llu points (expected %d)", path, obj,
                               name, d, (unsigned long long)hd[d], dims[d]);
            goto done;
        }
        if (hd[d] < 1 || hd[d] > (1u << 20)) {
            rc = lp_err_set_at(err, LP_EFORMAT, __FILE__, __LINE__,
                               "%s: %s/%s dimension %d has %llu points (expected 1..%d)", path, obj,
                               name, d, (unsigned long long)hd[d], 1 << 20);
            goto done;
        }
        dims[d] = (int)hd[d];
        n *= (size_t)hd[d];
        if (n > (size_t)LP_TABLE_MAX_VALUES) {
            rc = lp_err_set_at(err, LP_EFORMAT, __FILE__, __LINE__,
                               "%s: %s/%s has more than %d values", path, obj, name,
                               LP_TABLE_MAX_VALUES);
            goto done;
        }
    }
    /* the cap applies before any allocation: a dataset declared large but
     * never written (no storage: a few bytes in the file) is refused here,
     * not after its fill values have been allocated */
    if (H5Dget_storage_size(ds) == 0) {
        rc =
            lp_err_set_at(err, LP_EFORMAT, __FILE__, __LINE__,
                          "%s: %s/%s declares %zu values but none was written", path, obj, name, n);
        goto done;
    }
    *out = malloc(n * sizeof(double));
    if (!*out) {
        rc = lp_err_set_at(err, LP_ENOMEM, __FILE__, __LINE__, "%s: out of memory", path);
        goto done;
    }
    if (H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0) {
        free(*out);
        *out = NULL;
        rc = H5FAIL("H5Dread", obj);
    }
done:
    if (t >= 0) H5Tclose(t);
    if (s >= 0) H5Sclose(s);
    H5Dclose(ds);
    return rc;
}

static int read_table(hid_t file, const struct lp_slot *slot, struct lp_table *t, const char *path,
                      struct lp_err *err)
{
    int rc = LP_OK;
    double *value = NULL, *spread = NULL, *axis = NULL;
    hid_t g = H5Gopen2(file, slot->path, H5P_DEFAULT);
    if (g < 0) return H5FAIL("H5Gopen2", slot->path);
    char buf[64];
    bool found;
    LP_TRY_GOTO(err, rc, read_attr_text(g, "unit", buf, sizeof(buf), &found, path, err), done);
    if (!found || strcmp(buf, slot->unit) != 0) {
        rc = lp_err_set_at(err, LP_EFORMAT, __FILE__, __LINE__,
                           "%s: %s attribute unit is \"%s\" (expected \"%s\")", path, slot->path,
                           found ? buf : "(missing)", slot->unit);
        goto done;
    }
    int dims[LP_TABLE_MAX_DIMS] = {-1, -1, -1, -1};
    LP_TRY_GOTO(err, rc, read_dataset(g, "value", slot->ndim, dims, &value, path, slot->path, err),
                done);
    LP_TRY_GOTO(err, rc, lp_table_alloc(t, slot->ndim, dims, false, err), done);
    {
        size_t n = 1;
        for (int d = 0; d < slot->ndim; d++)
            n *= (size_t)dims[d];
        memcpy(t->value, value, n * sizeof(double));
        htri_t has_spread = H5Lexists(g, "spread", H5P_DEFAULT);
        if (has_spread > 0) {
            int sd[LP_TABLE_MAX_DIMS];
            memcpy(sd, dims, sizeof(sd));
            LP_TRY_GOTO(err, rc,
                        read_dataset(g, "spread", slot->ndim, sd, &spread, path, slot->path, err),
                        done);
            t->spread = spread;
            spread = NULL;
        }
    }
    for (int d = 0; d < slot->ndim; d++) {
        char name[16];
        snprintf(name, sizeof(name), "axis%d", d);
        int ad[1] = {dims[d]};
        LP_TRY_GOTO(err, rc, read_dataset(g, name, 1, ad, &axis, path, slot->path, err), done);
        memcpy(t->axis[d], axis, (size_t)dims[d] * sizeof(double));
        free(axis);
        axis = NULL;
        hid_t ds = H5Dopen2(g, name, H5P_DEFAULT);
        if (ds < 0) {
            rc = H5FAIL("H5Dopen2", slot->path);
            goto done;
        }
        rc = read_attr_text(ds, "name", buf, sizeof(buf), &found, path, err);
        H5Dclose(ds);
        if (rc < 0) goto done;
        if (!found || strcmp(buf, slot->axis_names[d]) != 0) {
            rc = lp_err_set_at(err, LP_EFORMAT, __FILE__, __LINE__,
                               "%s: %s/%s is named \"%s\" (expected \"%s\")", path, slot->path,
                               name, found ? buf : "(missing)", slot->axis_names[d]);
            goto done;
        }
        snprintf(t->axis_name[d], sizeof(t->axis_name[d]), "%.15s", buf);
    }
done:
    if (rc < 0) lp_table_free(t);
    free(value);
    free(spread);
    free(axis);
    H5Gclose(g);
    return rc;
}

struct prov_iter {
    struct lp_profile *p;
    const char *path;
    struct lp_err *err;
    int rc;
};

static herr_t prov_cb(hid_t loc, const char *name, const H5A_info_t *info, void *data)
{
    (void)info;
    struct prov_iter *it = data;
    if (in_list(name, reserved_attrs)) return 0;
    char buf[LP_PROV_VALUE];
    bool found;
    int rc = read_attr_text(loc, name, buf, sizeof(buf), &found, it->path, it->err);
    if (rc == LP_OK && found) rc = lp_profile_add_prov(it->p, name, buf, it->err);
    if (rc < 0) {
        it->rc = rc;
        return -1;
    }
    return 0;
}

static int read_root(hid_t file, struct lp_profile *p, uint64_t *sum_file, const char *path,
                     struct lp_err *err)
{
    char buf[LP_PROV_VALUE];
    bool found;
    LP_TRY(err, read_attr_text(file, "schema_version", buf, sizeof(buf), &found, path, err));
    if (!found)
        LP_FAIL(err, LP_EFORMAT,
                "%s: no root attribute schema_version (expected %d): not an "
                "llmplan profile",
                path, LP_PROFILE_SCHEMA_VERSION);
    char *end;
    long v = strtol(buf, &end, 10);
    if (*end || v != LP_PROFILE_SCHEMA_VERSION)
        LP_FAIL(err, LP_EFORMAT, "%s: schema_version is %s (this llmplan reads version %d)", path,
                buf, LP_PROFILE_SCHEMA_VERSION);
    LP_TRY(err, read_attr_text(file, "gpu", p->gpu, sizeof(p->gpu), &found, path, err));
    if (!found || !p->gpu[0])
        LP_FAIL(err, LP_EFORMAT, "%s: no root attribute gpu (expected the GPU's name)", path);
    LP_TRY(err, read_attr_text(file, "source", p->source, sizeof(p->source), &found, path, err));
    if (!found || (strcmp(p->source, "measured") != 0 && strcmp(p->source, "analytical") != 0))
        LP_FAIL(err, LP_EFORMAT,
                "%s: root attribute source is \"%s\" (expected measured or "
                "analytical)",
                path, found ? p->source : "(missing)");
    LP_TRY(err, read_attr_text(file, "checksum", buf, sizeof(buf), &found, path, err));
    if (!found || strlen(buf) != 16 || strspn(buf, "0123456789abcdefABCDEF") != 16)
        LP_FAIL(err, LP_EFORMAT, "%s: root attribute checksum is \"%s\" (expected 16 hex digits)",
                path, found ? buf : "(missing)");
    *sum_file = strtoull(buf, NULL, 16);
    LP_TRY(err, read_attr_text(file, "launch_s", buf, sizeof(buf), &found, path, err));
    p->launch_s = found ? strtod(buf, NULL) : 0;
    struct prov_iter it = {p, path, err, LP_OK};
    hsize_t idx = 0;
    if (H5Aiterate2(file, H5_INDEX_NAME, H5_ITER_INC, &idx, prov_cb, &it) < 0) {
        if (it.rc < 0) return it.rc;
        return H5FAIL("H5Aiterate2", "the root group");
    }
    /* the collective reference the table backend reads (absent: unknown,
     * the fractions used as they are; malformed: refused, not ignored) */
    struct lp_profile_coll_ref ref;
    const char *bad;
    if (lp_profile_coll_ref(p, &ref, &bad) != LP_OK)
        LP_FAIL(err, LP_EFORMAT,
                "%s: root attribute %s is \"%s\" (expected a positive %s; "
                "docs/profile-format.md)",
                path, bad, lp_profile_get_prov(p, bad),
                strcmp(bad, "coll_gpus_per_node") == 0 ? "integer" : "number");
    return LP_OK;
}

static int read_h5(const char *path, bool require, struct lp_profile **out, struct lp_err *err)
{
    h5_quiet();
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0)
        LP_FAIL(err, LP_EIO, "%s: cannot open profile: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) LP_FAIL(err, LP_EIO, "%s: not a regular file", path);
    htri_t is = H5Fis_hdf5(path);
    if (is <= 0) {
        H5Eclear2(H5E_DEFAULT);
        LP_FAIL(err, LP_EFORMAT,
                "%s: not an HDF5 file (expected an llmplan profile, "
                "docs/profile-format.md)",
                path);
    }
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) return H5FAIL("H5Fopen", "the file");
    struct lp_profile *p = NULL;
    int rc = LP_OK;
    uint64_t sum_file = 0;
    LP_TRY_GOTO(err, rc, lp_profile_create(&p, err), done);
    snprintf(p->path, sizeof(p->path), "%s", path);
    LP_TRY_GOTO(err, rc, read_root(file, p, &sum_file, path, err), done);
    for (int i = 0; i < LP_PROFILE_SLOTS; i++) {
        const struct lp_slot *slot = lp_profile_slot(i);
        bool exists;
        LP_TRY_GOTO(err, rc, path_exists(file, slot->path, &exists, path, err), done);
        if (!exists) continue;
        LP_TRY_GOTO(err, rc, read_table(file, slot, lp_profile_slot_table(p, i), path, err), done);
    }
    rc = with_file(err, lp_profile_check_opt(p, require, NULL, err), path);
    if (rc < 0) {
        lp_err_trace(err, __FILE__, __LINE__);
        goto done;
    }
    p->checksum = lp_profile_checksum(p);
    if (p->checksum != sum_file) {
        rc = lp_err_set_at(err, LP_EFORMAT, __FILE__, __LINE__,
                           "%s: checksum mismatch: the file says %016" PRIx64
                           ", its tables give %016" PRIx64 " (file modified or corrupt)",
                           path, sum_file, p->checksum);
        goto done;
    }
    LP_TRY_GOTO(err, rc, lp_profile_prepare(p, err), done);
done:
    if (H5Fclose(file) < 0 && rc == LP_OK) rc = H5FAIL("H5Fclose", "the file");
    if (rc < 0) {
        lp_profile_destroy(&p);
        return rc;
    }
    *out = p;
    return LP_OK;
}

int lp_profile_read_h5(const char *path, struct lp_profile **out, struct lp_err *err)
{
    return read_h5(path, true, out, err);
}

int lp_profile_read_h5_partial(const char *path, struct lp_profile **out, struct lp_err *err)
{
    return read_h5(path, false, out, err);
}

int lp_profile_patch_attr_h5(const char *path, const char *key, const char *value, bool as_int,
                             struct lp_err *err)
{
    h5_quiet();
    hid_t file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    if (file < 0) return H5FAIL("H5Fopen", "the file");
    int rc;
    if (as_int) {
        char *end;
        long long v = strtoll(value, &end, 10);
        if (*end) {
            H5Fclose(file);
            LP_FAIL(err, LP_EINVAL, "%s: attribute %s: \"%s\" is not an integer", path, key, value);
        }
        rc = write_num_attr(file, key, H5T_NATIVE_LLONG, H5T_STD_I32LE, &v, path, err);
    } else {
        rc = write_str_attr(file, key, value, path, err);
    }
    if (H5Fclose(file) < 0 && rc == LP_OK) rc = H5FAIL("H5Fclose", "the file");
    return rc;
}

/* ---- info ---- */

static void print_axis(FILE *f, const struct lp_table *t, int d)
{
    fprintf(f, "%s %g..%g (%d)", t->axis_name[d], t->axis[d][0], t->axis[d][t->dims[d] - 1],
            t->dims[d]);
}

static void print_samples(FILE *f, const struct lp_profile *p)
{
    fprintf(f, "samples:\n");
    for (int q = 0; q < LP_PREC_TABLES; q++) {
        const struct lp_table *t = &p->gemm[LP_GEMM_FWD][q];
        if (!lp_table_present(t)) continue;
        const double x[3] = {8192, 8192, 8192};
        double s = lp_table_lookup(t, x, NULL);
        fprintf(f, "  gemm fwd %-4s 8192^3:                    %8.1f TFLOP/s (%.3f ms)\n",
                lp_prec_name((enum lp_prec)q), 2.0 * 8192.0 * 8192.0 * 8192.0 / s / 1e12, s * 1e3);
    }
    static const struct {
        enum lp_attn_impl impl;
        bool causal;
        enum lp_pass pass;
    } at[] = {{LP_ATTN_FUSED, false, LP_PASS_FWD},
              {LP_ATTN_FUSED, false, LP_PASS_BWD},
              {LP_ATTN_FUSED, true, LP_PASS_FWD},
              {LP_ATTN_UNFUSED, false, LP_PASS_FWD}};
    for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
        const struct lp_table *t = &p->attn[at[i].impl][at[i].causal][at[i].pass][LP_BF16];
        if (!lp_table_present(t)) t = &p->attn[at[i].impl][at[i].causal][at[i].pass][LP_FP16];
        if (!lp_table_present(t)) continue;
        const double bh = 64, s = 2048, d = 128;
        const double x[3] = {bh, s, d};
        double sec = lp_table_lookup(t, x, NULL);
        double flops =
            4.0 * bh * s * s * d * (at[i].causal ? 0.5 : 1) * (at[i].pass == LP_PASS_BWD ? 2.5 : 1);
        fprintf(f, "  attn %-7s %-6s %s bh 64 seq 2048 hd 128: %8.1f TFLOP/s (%.3f ms)\n",
                lp_attn_impl_name(at[i].impl), at[i].causal ? "causal" : "full",
                lp_pass_name(at[i].pass), flops / sec / 1e12, sec * 1e3);
    }
    if (lp_table_present(&p->mem[LP_MEM_COPY])) {
        const double b = 1073741824.0;
        double s = lp_table_lookup(&p->mem[LP_MEM_COPY], &b, NULL);
        fprintf(f, "  mem copy 1 GiB moved:                   %8.1f GB/s (%.3f ms)\n", b / s / 1e9,
                s * 1e3);
    }
    for (int tier = 0; tier < LP_TIER_COUNT; tier++) {
        const struct lp_table *t = &p->coll[LP_COLL_ALLREDUCE][tier];
        if (!lp_table_present(t)) continue;
        const double ranks = tier == LP_TIER_INTRA ? 8 : 64;
        for (double b = 1048576.0; b <= 1073741824.0; b *= 1024) {
            const double x[2] = {b, ranks};
            fprintf(f, "  allreduce %-5s %4.0f MiB %2.0f ranks:        %8.3f of nominal busbw\n",
                    lp_tier_name((enum lp_tier)tier), b / 1048576.0, ranks,
                    lp_table_lookup(t, x, NULL));
        }
    }
}

int lp_profile_info_h5(const char *path, FILE *f, struct lp_err *err)
{
    struct lp_profile *p = NULL;
    LP_TRY(err, lp_profile_read_h5(path, &p, err));
    fprintf(f, "profile:  %s\n", path);
    fprintf(f, "schema:   %d\n", LP_PROFILE_SCHEMA_VERSION);
    fprintf(f, "gpu:      %s\n", p->gpu);
    fprintf(f, "source:   %s\n", p->source);
    fprintf(f, "checksum: %016" PRIx64 "\n", p->checksum);
    fprintf(f, "launch_s: %g\n", p->launch_s);
    fprintf(f, "attributes:\n");
    for (int i = 0; i < p->nprov; i++)
        fprintf(f, "  %s = %s\n", p->prov[i].key, p->prov[i].value);
    int ntab = 0;
    fprintf(f, "tables:\n");
    for (int i = 0; i < LP_PROFILE_SLOTS; i++) {
        const struct lp_table *t = lp_profile_slot_table_c(p, i);
        if (!lp_table_present(t)) continue;
        ntab++;
        fprintf(f, "  %-34s ", lp_profile_slot(i)->path);
        for (int d = 0; d < t->ndim; d++) {
            if (d) fprintf(f, " x ");
            print_axis(f, t, d);
        }
        fprintf(f, "%s\n", t->spread ? " +spread" : "");
    }
    fprintf(f, "%d tables\n", ntab);
    print_samples(f, p);
    lp_profile_destroy(&p);
    return LP_OK;
}

int lp_profile_default_path(const char *gpu_name, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s/profiles/%s.h5", lp_data_dir(), gpu_name);
    if (n < 0 || (size_t)n >= len) return LP_EINVAL;
    return LP_OK;
}
