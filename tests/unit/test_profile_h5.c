/* HDF5 profiles (src/io/profile_h5.c): round trip, atomic write, and the
 * reader's refusals of bad files. Scratch files live in a mkdtemp directory
 * under /tmp that every test removes again. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "harness.h"
#include "llmplan/io.h"
#include "llmplan/profile.h"

/* A value that occurs once in the file (its table is small, so stored
 * contiguously and uncompressed): the byte-level corruption target. */
#define MARK 0.123456789012345

struct scratch {
    char dir[64];
    char path[128];
};

static int scratch_open(struct scratch *s, const char *file)
{
    snprintf(s->dir, sizeof(s->dir), "/tmp/llmplan-test-XXXXXX");
    if (!mkdtemp(s->dir)) return -1;
    snprintf(s->path, sizeof(s->path), "%s/%s", s->dir, file);
    return 0;
}

static void scratch_close(struct scratch *s)
{
    DIR *d = opendir(s->dir);
    if (d) {
        struct dirent *e;
        char p[512];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(p, sizeof(p), "%s/%s", s->dir, e->d_name);
                unlink(p);
            }
        closedir(d);
    }
    rmdir(s->dir);
}

static int count_files(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static int fill(struct lp_table *t, int ndim, const int *dims, const char *const *names,
                double base, bool spread)
{
    if (lp_table_alloc(t, ndim, dims, spread, NULL) != LP_OK) return -1;
    size_t n = 1;
    for (int d = 0; d < ndim; d++) {
        snprintf(t->axis_name[d], sizeof(t->axis_name[d]), "%s", names[d]);
        for (int i = 0; i < dims[d]; i++)
            t->axis[d][i] = 64.0 * (i + 1) * (d + 1);
        n *= (size_t)dims[d];
    }
    for (size_t i = 0; i < n; i++) {
        t->value[i] = base * (1.0 + (double)i);
        if (spread) t->spread[i] = 0.01 * (double)(i % 7);
    }
    return 0;
}

/* A small profile with every required table (and a few optional ones). */
static struct lp_profile *small_profile(void)
{
    static const char *const g3[] = {"m", "n", "k"},
                             *const a3[] = {"batch_heads", "seq", "head_dim"},
                             *const m1[] = {"bytes"}, *const c2[] = {"msg_bytes", "ranks"};
    struct lp_profile *p = NULL;
    if (lp_profile_create(&p, NULL) != LP_OK) return NULL;
    snprintf(p->gpu, sizeof(p->gpu), "testgpu");
    snprintf(p->source, sizeof(p->source), "measured");
    p->launch_s = 4e-6;
    const int d3[3] = {2, 3, 2}, d1[1] = {5}, d2[2] = {4, 2};
    int bad = 0;
    for (int l = 0; l < LP_GEMM_LAYOUT_COUNT; l++) {
        bad |= fill(&p->gemm[l][LP_BF16], 3, d3, g3, 1e-5 * (l + 1), l == 0);
        bad |= fill(&p->gemm[l][LP_FP8], 3, d3, g3, 5e-6 * (l + 1), false);
    }
    for (int im = 0; im < LP_ATTN_IMPL_COUNT; im++)
        for (int c = 0; c < 2; c++)
            for (int ps = 0; ps < LP_PASS_COUNT; ps++)
                bad |=
                    fill(&p->attn[im][c][ps][LP_BF16], 3, d3, a3, 2e-5 * (1 + im + c + ps), false);
    for (int k = 0; k < LP_MEM_KIND_COUNT; k++)
        bad |= fill(&p->mem[k], 1, d1, m1, 3e-6 * (k + 1), false);
    bad |= fill(&p->coll[LP_COLL_ALLREDUCE][LP_TIER_INTRA], 2, d2, c2, 0.1, false);
    bad |= fill(&p->coll[LP_COLL_ALLGATHER][LP_TIER_INTER], 2, d2, c2, 0.05, false);
    p->mem[LP_MEM_ROPE].value[3] = MARK;
    if (bad || lp_profile_add_prov(p, "profiler", "unit test", NULL) != LP_OK) {
        lp_profile_destroy(&p);
        return NULL;
    }
    return p;
}

static bool tables_equal(const struct lp_table *a, const struct lp_table *b)
{
    if (lp_table_present(a) != lp_table_present(b)) return false;
    if (!lp_table_present(a)) return true;
    if (a->ndim != b->ndim || (a->spread == NULL) != (b->spread == NULL)) return false;
    size_t n = 1;
    for (int d = 0; d < a->ndim; d++) {
        if (a->dims[d] != b->dims[d] || strcmp(a->axis_name[d], b->axis_name[d])) return false;
        if (memcmp(a->axis[d], b->axis[d], (size_t)a->dims[d] * sizeof(double))) return false;
        n *= (size_t)a->dims[d];
    }
    if (memcmp(a->value, b->value, n * sizeof(double))) return false;
    return !a->spread || !memcmp(a->spread, b->spread, n * sizeof(double));
}

/* Overwrite the first occurrence of the 8 bytes of `from` with `to`. */
static int patch_double(const char *path, double from, double to)
{
    FILE *f = fopen(path, "r+b");
    if (!f) return -1;
    /* the whole file: where a table lands depends on how many precede it */
    size_t cap = 1 << 16, n = 0, got;
    unsigned char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        unsigned char *bigger = n == cap ? realloc(buf, cap *= 2) : buf;
        if (!bigger) free(buf);
        buf = bigger;
    }
    unsigned char a[8], b[8];
    memcpy(a, &from, 8);
    memcpy(b, &to, 8);
    long at = -1;
    for (size_t i = 0; buf && i + 8 <= n && at < 0; i++)
        if (!memcmp(buf + i, a, 8)) at = (long)i;
    free(buf);
    int rc = -1;
    if (at >= 0 && fseek(f, at, SEEK_SET) == 0 && fwrite(b, 1, 8, f) == 8) rc = 0;
    fclose(f);
    return rc;
}

TEST(round_trip)
{
    struct scratch s;
    ASSERT_TRUE(scratch_open(&s, "p.h5") == 0);
    struct lp_profile *p = small_profile(), *q = NULL;
    ASSERT_TRUE(p != NULL);
    struct lp_err err;
    lp_err_clear(&err);
    const struct lp_kv attrs[] = {{"command", "llmplan-profile --quick"}, {"host", "node17"}};
    int rc = lp_profile_write_h5(s.path, p, attrs, 2, &err);
    if (rc == LP_OK) rc = lp_profile_read_h5(s.path, &q, &err);
    bool same = q != NULL;
    for (int i = 0; same && i < LP_PROFILE_SLOTS; i++)
        same = tables_equal(lp_profile_slot_table_c(p, i), lp_profile_slot_table_c(q, i));
    uint64_t cp = lp_profile_checksum(p), cq = q ? q->checksum : 0;
    char gpu[LP_NAME_LEN] = "", src[16] = "", cmd[64] = "", host[64] = "", prof[64] = "";
    double launch = 0;
    if (q) {
        snprintf(gpu, sizeof(gpu), "%s", q->gpu);
        snprintf(src, sizeof(src), "%s", q->source);
        launch = q->launch_s;
        const char *v;
        if ((v = lp_profile_get_prov(q, "command"))) snprintf(cmd, sizeof(cmd), "%s", v);
        if ((v = lp_profile_get_prov(q, "host"))) snprintf(host, sizeof(host), "%s", v);
        if ((v = lp_profile_get_prov(q, "profiler"))) snprintf(prof, sizeof(prof), "%s", v);
        if (!lp_profile_get_prov(q, "created")) same = false;
    }
    int nfiles = count_files(s.dir);
    lp_profile_destroy(&p);
    lp_profile_destroy(&q);
    scratch_close(&s);
    ASSERT_OK(rc);
    ASSERT_TRUE(same);
    ASSERT_TRUE(cp == cq);
    ASSERT_EQ_STR(gpu, "testgpu");
    ASSERT_EQ_STR(src, "measured");
    ASSERT_EQ_STR(cmd, "llmplan-profile --quick");
    ASSERT_EQ_STR(host, "node17");
    ASSERT_EQ_STR(prof, "unit test");
    ASSERT_NEAR(launch, 4e-6, 0);
    ASSERT_EQ_INT(nfiles, 1); /* no temporary left behind */
}

TEST(synth_round_trip_and_size)
{
    struct scratch s;
    ASSERT_TRUE(scratch_open(&s, "h100.h5") == 0);
    struct lp_gpu g;
    memset(&g, 0, sizeof(g));
    snprintf(g.name, sizeof(g.name), "h100-sxm");
    g.mem_bw_Bps = 3350e9;
    g.peak_flops[LP_FP32] = 494.7e12;
    g.peak_flops[LP_FP16] = 989.4e12;
    g.peak_flops[LP_BF16] = 989.4e12;
    g.peak_flops[LP_FP8] = 1978.9e12;
    g.sms = 132;
    struct lp_profile *p = NULL, *q = NULL;
    struct lp_err err;
    lp_err_clear(&err);
    int rc = lp_profile_synth(&g, NULL, &p, &err);
    if (rc == LP_OK) rc = lp_profile_write_h5(s.path, p, NULL, 0, &err);
    if (rc == LP_OK) rc = lp_profile_read_h5(s.path, &q, &err);
    struct stat st;
    off_t size = stat(s.path, &st) == 0 ? st.st_size : -1;
    bool same = rc == LP_OK && p->checksum == q->checksum && p->nprov == q->nprov - 3;
    /* a second write over the first replaces it atomically */
    if (rc == LP_OK) rc = lp_profile_write_h5(s.path, q, NULL, 0, &err);
    FILE *devnull = fopen("/dev/null", "w");
    if (rc == LP_OK && devnull) rc = lp_profile_info_h5(s.path, devnull, &err);
    if (devnull) fclose(devnull);
    int nfiles = count_files(s.dir);
    lp_profile_destroy(&p);
    lp_profile_destroy(&q);
    scratch_close(&s);
    if (rc != LP_OK) fprintf(stderr, "  %s\n", err.msg);
    ASSERT_OK(rc);
    ASSERT_TRUE(same);
    ASSERT_TRUE(size > 0 && size < 2 * 1024 * 1024);
    ASSERT_EQ_INT(nfiles, 1);
}

/* Write the small profile, apply `damage`, read it back: the error code and
 * message. */
enum damage { D_NONE, D_TRUNCATE, D_FLIP, D_SCHEMA, D_NAN_FILE, D_TEXT, D_MISSING_FILE };

static int read_damaged(enum damage dmg, struct lp_profile *p, char *msg, size_t len, char *path,
                        size_t plen)
{
    struct scratch s;
    if (scratch_open(&s, "bad.h5") != 0) return 999;
    snprintf(path, plen, "%s", s.path);
    struct lp_err err;
    lp_err_clear(&err);
    int rc = LP_OK;
    if (dmg == D_TEXT) {
        FILE *f = fopen(s.path, "w");
        if (f) {
            fputs("{\"not\": \"hdf5\"}\n", f);
            fclose(f);
        }
    } else if (dmg != D_MISSING_FILE) {
        rc = lp_profile_write_h5(s.path, p, NULL, 0, &err);
    }
    if (rc == LP_OK && dmg == D_TRUNCATE) {
        struct stat st;
        if (stat(s.path, &st) != 0 || truncate(s.path, st.st_size / 2) != 0) rc = 998;
    }
    if (rc == LP_OK && dmg == D_FLIP && patch_double(s.path, MARK, MARK * 1.5) != 0) rc = 997;
    if (rc == LP_OK && dmg == D_NAN_FILE && patch_double(s.path, MARK, NAN) != 0) rc = 996;
    if (rc == LP_OK && dmg == D_SCHEMA)
        rc = lp_profile_patch_attr_h5(s.path, "schema_version", "2", true, &err);
    struct lp_profile *q = NULL;
    if (rc == LP_OK) {
        rc = lp_profile_read_h5(s.path, &q, &err);
        snprintf(msg, len, "%s", err.msg);
    }
    if (rc == LP_OK && q == NULL) rc = 995;
    if (rc != LP_OK && q != NULL) rc = 994; /* must not hand out a profile on error */
    lp_profile_destroy(&q);
    scratch_close(&s);
    return rc;
}

TEST(refuses_missing_and_non_hdf5_files)
{
    struct lp_profile *p = small_profile();
    ASSERT_TRUE(p != NULL);
    char msg[LP_ERR_MSG], path[128];
    int r1 = read_damaged(D_MISSING_FILE, p, msg, sizeof(msg), path, sizeof(path));
    char m1[LP_ERR_MSG], p1[128];
    snprintf(m1, sizeof(m1), "%s", msg);
    snprintf(p1, sizeof(p1), "%s", path);
    int r2 = read_damaged(D_TEXT, p, msg, sizeof(msg), path, sizeof(path));
    lp_profile_destroy(&p);
    ASSERT_EQ_INT(r1, LP_EIO);
    ASSERT_CONTAINS(m1, p1);
    ASSERT_EQ_INT(r2, LP_EFORMAT);
    ASSERT_CONTAINS(msg, path);
    ASSERT_CONTAINS(msg, "not an HDF5 file");
}

TEST(refuses_truncated_file)
{
    struct lp_profile *p = small_profile();
    ASSERT_TRUE(p != NULL);
    char msg[LP_ERR_MSG], path[128];
    int rc = read_damaged(D_TRUNCATE, p, msg, sizeof(msg), path, sizeof(path));
    lp_profile_destroy(&p);
    ASSERT_TRUE(rc == LP_EHDF5 || rc == LP_EFORMAT);
    ASSERT_CONTAINS(msg, path);
}

TEST(refuses_flipped_value)
{
    struct lp_profile *p = small_profile();
    ASSERT_TRUE(p != NULL);
    char msg[LP_ERR_MSG], path[128];
    int rc0 = read_damaged(D_NONE, p, msg, sizeof(msg), path, sizeof(path));
    int rc = read_damaged(D_FLIP, p, msg, sizeof(msg), path, sizeof(path));
    lp_profile_destroy(&p);
    ASSERT_OK(rc0);
    ASSERT_EQ_INT(rc, LP_EFORMAT);
    ASSERT_CONTAINS(msg, path);
    ASSERT_CONTAINS(msg, "checksum mismatch");
}

TEST(refuses_wrong_schema_version)
{
    struct lp_profile *p = small_profile();
    ASSERT_TRUE(p != NULL);
    char msg[LP_ERR_MSG], path[128];
    int rc = read_damaged(D_SCHEMA, p, msg, sizeof(msg), path, sizeof(path));
    lp_profile_destroy(&p);
    ASSERT_EQ_INT(rc, LP_EFORMAT);
    ASSERT_CONTAINS(msg, path);
    ASSERT_CONTAINS(msg, "schema_version is 2");
}

TEST(refuses_nan_value)
{
    struct lp_profile *p = small_profile();
    ASSERT_TRUE(p != NULL);
    char msg[LP_ERR_MSG], path[128];
    /* a NaN patched into the file ... */
    int r1 = read_damaged(D_NAN_FILE, p, msg, sizeof(msg), path, sizeof(path));
    char m1[LP_ERR_MSG];
    snprintf(m1, sizeof(m1), "%s", msg);
    /* ... and a NaN written by a careless producer (checksum consistent) */
    p->gemm[LP_GEMM_WGRAD][LP_BF16].value[4] = NAN;
    int r2 = read_damaged(D_NONE, p, msg, sizeof(msg), path, sizeof(path));
    lp_profile_destroy(&p);
    ASSERT_EQ_INT(r1, LP_EFORMAT);
    ASSERT_CONTAINS(m1, "/mem/rope");
    ASSERT_CONTAINS(m1, "value 3 is nan");
    ASSERT_EQ_INT(r2, LP_EFORMAT);
    ASSERT_CONTAINS(msg, path);
    ASSERT_CONTAINS(msg, "/gemm/wgrad/bf16: value 4 is nan");
}

TEST(refuses_bad_tables)
{
    struct lp_profile *p = small_profile();
    ASSERT_TRUE(p != NULL);
    char msg[LP_ERR_MSG], path[128];
    lp_table_free(&p->attn[LP_ATTN_UNFUSED][1][LP_PASS_BWD][LP_BF16]);
    int r1 = read_damaged(D_NONE, p, msg, sizeof(msg), path, sizeof(path));
    char m1[LP_ERR_MSG];
    snprintf(m1, sizeof(m1), "%s", msg);
    lp_profile_destroy(&p);
    p = small_profile();
    ASSERT_TRUE(p != NULL);
    p->mem[LP_MEM_GELU].axis[0][2] = p->mem[LP_MEM_GELU].axis[0][1]; /* not increasing */
    int r2 = read_damaged(D_NONE, p, msg, sizeof(msg), path, sizeof(path));
    char m2[LP_ERR_MSG];
    snprintf(m2, sizeof(m2), "%s", msg);
    p->mem[LP_MEM_GELU].axis[0][2] = 192;                      /* restored */
    p->coll[LP_COLL_ALLREDUCE][LP_TIER_INTRA].value[1] = -0.5; /* negative */
    int r3 = read_damaged(D_NONE, p, msg, sizeof(msg), path, sizeof(path));
    lp_profile_destroy(&p);
    ASSERT_EQ_INT(r1, LP_EFORMAT);
    ASSERT_CONTAINS(m1, "required table /attention/unfused/causal/bwd/bf16 is missing");
    ASSERT_EQ_INT(r2, LP_EFORMAT);
    ASSERT_CONTAINS(m2, "/mem/gelu");
    ASSERT_CONTAINS(m2, "increasing");
    ASSERT_EQ_INT(r3, LP_EFORMAT);
    ASSERT_CONTAINS(msg, "/coll/allreduce/intra: value 1 is -0.5");
}

TEST(writer_errors)
{
    struct lp_profile *p = small_profile();
    ASSERT_TRUE(p != NULL);
    struct lp_err err;
    lp_err_clear(&err);
    int r1 = lp_profile_write_h5("/nonexistent-dir-llmplan/p.h5", p, NULL, 0, &err);
    char m1[LP_ERR_MSG];
    snprintf(m1, sizeof(m1), "%s", err.msg);
    const struct lp_kv bad[] = {{"checksum", "0"}};
    struct scratch s;
    int r2 = -1, nfiles = -1;
    if (scratch_open(&s, "p.h5") == 0) {
        r2 = lp_profile_write_h5(s.path, p, bad, 1, &err);
        nfiles = count_files(s.dir);
        scratch_close(&s);
    }
    snprintf(p->source, sizeof(p->source), "guessed");
    int r3 = lp_profile_write_h5("/tmp/never-written.h5", p, NULL, 0, &err);
    lp_profile_destroy(&p);
    ASSERT_EQ_INT(r1, LP_EHDF5);
    ASSERT_CONTAINS(m1, "/nonexistent-dir-llmplan/p.h5");
    ASSERT_CONTAINS(m1, "H5Fcreate");
    ASSERT_EQ_INT(r2, LP_EINVAL);
    ASSERT_EQ_INT(nfiles, 0); /* the temporary was removed */
    ASSERT_EQ_INT(r3, LP_EINVAL);
}

TEST(default_path)
{
    char buf[512];
    setenv("LLMPLAN_DATA", "/opt/llmplan/data", 1);
    ASSERT_OK(lp_profile_default_path("h100-sxm", buf, sizeof(buf)));
    ASSERT_EQ_STR(buf, "/opt/llmplan/data/profiles/h100-sxm.h5");
    ASSERT_TRUE(lp_profile_default_path("h100-sxm", buf, 8) != LP_OK);
}

/* Replace /gemm/fwd/bf16/value by a chunked dataset of dims[3] doubles that
 * is declared and never written (a few hundred bytes in the file). */
static int declare_unwritten(const char *path, const hsize_t dims[3])
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    if (f < 0) return -1;
    int rc = -1;
    if (H5Ldelete(f, "/gemm/fwd/bf16/value", H5P_DEFAULT) >= 0) {
        hsize_t chunk[3] = {64, 64, 64};
        hid_t sp = H5Screate_simple(3, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 3, chunk);
        hid_t ds = H5Dcreate2(f, "/gemm/fwd/bf16/value", H5T_IEEE_F64LE, sp, H5P_DEFAULT, dcpl,
                              H5P_DEFAULT);
        if (ds >= 0) rc = 0;
        if (ds >= 0) H5Dclose(ds);
        H5Pclose(dcpl);
        H5Sclose(sp);
    }
    H5Fclose(f);
    return rc;
}

static long max_rss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* Issue #21: a 630 KB profile declaring a (1024, 1024, 512) dataset made
 * the reader allocate (and fill) 4.2 GB before the table cap refused it.
 * The cap applies before allocation; an unwritten dataset is refused. */
TEST(refuses_huge_declared_dataset)
{
    struct lp_profile *p = small_profile();
    ASSERT_TRUE(p != NULL);
    char path[128];
    snprintf(path, sizeof(path), "/tmp/llmplan_huge_%d.h5", (int)getpid());
    int wrc = lp_profile_write_h5(path, p, NULL, 0, NULL);
    lp_profile_destroy(&p);
    ASSERT_OK(wrc);
    const hsize_t huge[3] = {1024, 1024, 512}, small[3] = {64, 64, 64};
    ASSERT_EQ_INT(declare_unwritten(path, huge), 0);
    struct stat st;
    ASSERT_EQ_INT(stat(path, &st), 0);
    ASSERT_TRUE(st.st_size < 1 << 20);
    long rss0 = max_rss_kib();
    struct lp_err err;
    lp_err_clear(&err);
    struct lp_profile *q = NULL;
    int rc = lp_profile_read_h5(path, &q, &err);
    long grew_kib = max_rss_kib() - rss0;
    lp_profile_destroy(&q);
    ASSERT_EQ_INT(rc, LP_EFORMAT);
    ASSERT_CONTAINS(err.msg, path);
    ASSERT_CONTAINS(err.msg, "/gemm/fwd/bf16/value has more than 16777216 values");
    ASSERT_TRUE(grew_kib < 256 * 1024);
    /* within the cap, but never written */
    p = small_profile();
    ASSERT_TRUE(p != NULL);
    ASSERT_OK(lp_profile_write_h5(path, p, NULL, 0, NULL));
    lp_profile_destroy(&p);
    ASSERT_EQ_INT(declare_unwritten(path, small), 0);
    lp_err_clear(&err);
    rc = lp_profile_read_h5(path, &q, &err);
    lp_profile_destroy(&q);
    unlink(path);
    ASSERT_EQ_INT(rc, LP_EFORMAT);
    ASSERT_CONTAINS(err.msg, "declares 262144 values but none was written");
}

/* The collective reference attributes (coll_gpus_per_node and the links,
 * cost_table.c): absent, the profile reads (unknown reference); a valid
 * one reads back as its number; a malformed one is refused naming the file
 * and the key (it was read as 0 by strtol / strtod and ignored). */
static int read_with_attr(const char *key, const char *value, char *msg, size_t msg_len,
                          struct lp_profile_coll_ref *ref)
{
    struct scratch s;
    if (scratch_open(&s, "c.h5") != 0) return -100;
    struct lp_profile *p = small_profile(), *q = NULL;
    if (!p) return -101;
    struct lp_err err;
    lp_err_clear(&err);
    const struct lp_kv attrs[] = {{key, value}};
    int rc = lp_profile_write_h5(s.path, p, attrs, key ? 1 : 0, &err);
    if (rc == LP_OK) rc = lp_profile_read_h5(s.path, &q, &err);
    const char *bad;
    if (rc == LP_OK && lp_profile_coll_ref(q, ref, &bad) != LP_OK) rc = -102;
    snprintf(msg, msg_len, "%s", err.msg);
    if (rc != LP_OK && !strstr(msg, s.path)) rc = -103; /* the file not named */
    lp_profile_destroy(&p);
    lp_profile_destroy(&q);
    scratch_close(&s);
    return rc;
}

TEST(collective_reference_attributes)
{
    char msg[LP_ERR_MSG];
    struct lp_profile_coll_ref ref;
    ASSERT_OK(read_with_attr(NULL, NULL, msg, sizeof(msg), &ref));
    ASSERT_EQ_INT(ref.gpus_per_node, 0);
    ASSERT_NEAR(ref.inter_bw_Bps, 0.0, 0);
    ASSERT_OK(read_with_attr("coll_gpus_per_node", "8", msg, sizeof(msg), &ref));
    ASSERT_EQ_INT(ref.gpus_per_node, 8);
    ASSERT_OK(read_with_attr("coll_inter_latency_us", "5", msg, sizeof(msg), &ref));
    ASSERT_NEAR(ref.inter_latency_s, 5e-6, 1e-15);
    static const char *const bad[][2] = {
        {"coll_gpus_per_node", "eight"}, {"coll_gpus_per_node", "8 GPUs"},
        {"coll_gpus_per_node", "0"},     {"coll_gpus_per_node", "2.5"},
        {"coll_inter_bw_GBps", "fast"},  {"coll_intra_latency_us", "-3"},
        {"coll_inter_latency_us", "nan"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const int rc = read_with_attr(bad[i][0], bad[i][1], msg, sizeof(msg), &ref);
        if (rc != LP_EFORMAT) fprintf(stderr, "  %s = %s: %d %s\n", bad[i][0], bad[i][1], rc, msg);
        ASSERT_EQ_INT(rc, LP_EFORMAT);
        ASSERT_CONTAINS(msg, bad[i][0]);
    }
}

TH_MAIN(TH_CASE(refuses_huge_declared_dataset), TH_CASE(round_trip),
        TH_CASE(collective_reference_attributes), TH_CASE(synth_round_trip_and_size),
        TH_CASE(refuses_missing_and_non_hdf5_files), TH_CASE(refuses_truncated_file),
        TH_CASE(refuses_flipped_value), TH_CASE(refuses_wrong_schema_version),
        TH_CASE(refuses_nan_value), TH_CASE(refuses_bad_tables), TH_CASE(writer_errors),
        TH_CASE(default_path))
