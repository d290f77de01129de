/* The checkpoint reader (search/checkpoint.c lp_checkpoint_read) on a
 * checkpoint written by lp_checkpoint_write: read back as written, and
 * refused with a message naming the file and the field when one of the
 * stored results' enums or bools is out of range (a damaged file whose
 * checksum was made to match). Until stop 31 the reader checked a few enums
 * only (dispatcher, moe_impl, tp_overlap_rs, fp8_scaling, lora_targets and
 * several bools not at all), named no field, and refused position "none"
 * (a bound of 3 for 4 values): no sweep of a Mamba hybrid could resume. */
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#include "../unit/fixtures.h"
#include "harness.h"
#include "search_internal.h"

static char dir[64];

static void search_init(struct lp_search *s)
{
    static char text[] = "{}";
    memset(s, 0, sizeof(*s));
    s->sweep_text = text;
    s->opt.segment = 1024;
    s->space.size = 1000;
    snprintf(s->opt.out_dir, sizeof(s->opt.out_dir), "%s", dir);
}

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}

/* set the int (or bool byte) at `off` of the checkpoint's last stored
 * result, and make the checksum match again */
static int damage(const char *path, size_t off, int v, bool byte)
{
    FILE *f = fopen(path, "r+b");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    const long len = ftell(f);
    unsigned char *buf = malloc((size_t)len);
    fseek(f, 0, SEEK_SET);
    if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) return -1;
    unsigned char *e = buf + len - 8 - (long)sizeof(struct lp_entry);
    if (byte)
        e[off] = (unsigned char)v;
    else
        memcpy(e + off, &v, sizeof(v));
    const uint64_t sum = fnv1a(buf, (size_t)len - 8);
    memcpy(buf + len - 8, &sum, 8);
    fseek(f, 0, SEEK_SET);
    fwrite(buf, 1, (size_t)len, f);
    fclose(f);
    free(buf);
    return 0;
}

static struct lp_search s;

/* write a checkpoint holding one result of a model with position "none" */
static int write_one(void)
{
    struct lp_entry e;
    memset(&e, 0, sizeof(e));
    lp_fixture_gpt3_run(&e.run);
    e.run.model.pos = LP_POS_NONE;
    e.index = 7;
    e.res.feasible = true;
    e.res.iteration_time_s = 1.0;
    e.res.cost_usd = 2.0;
    e.res.cost_per_iteration_usd = 1e-3;
    e.res.tokens_per_usd = 1e6;
    e.res.memory_per_gpu_bytes = 1e9;
    struct lp_counts counts;
    memset(&counts, 0, sizeof(counts));
    search_init(&s);
    if (lp_results_init(&s.res, 4, NULL) != LP_OK) return -1;
    int rc = lp_results_add(&s.res, &e, NULL);
    if (rc == LP_OK) rc = lp_checkpoint_write(&s, &s.res, &counts, NULL);
    lp_results_free(&s.res);
    return rc;
}

static int read_back(bool *found, struct lp_err *err)
{
    search_init(&s);
    lp_err_clear(err);
    if (lp_results_init(&s.res, 4, NULL) != LP_OK) return -1;
    const int rc = lp_checkpoint_read(&s, found, err);
    lp_ranges_free(&s.done);
    lp_results_free(&s.res);
    return rc;
}

TEST(checkpoint_reads_back)
{
    ASSERT_OK(write_one());
    bool found = false;
    struct lp_err err;
    const int rc = read_back(&found, &err);
    if (rc != LP_OK) fprintf(stderr, "  %s\n", err.msg);
    ASSERT_EQ_INT(rc, LP_OK);
    ASSERT_TRUE(found);
}

/* each damaged field refused, its name and the file in the message */
TEST(checkpoint_field_out_of_range)
{
    static const struct {
        size_t off;
        int v;
        bool byte;
        const char *name;
    } cases[] = {
        {offsetof(struct lp_entry, run.fw.dispatcher), LP_DISPATCH_COUNT, false,
         "run.fw.dispatcher"},
        {offsetof(struct lp_entry, run.fw.moe_impl), -1, false, "run.fw.moe_impl"},
        {offsetof(struct lp_entry, run.train.fp8_scaling), 99, false, "run.train.fp8_scaling"},
        {offsetof(struct lp_entry, run.model.pos), LP_POS_COUNT, false, "run.model.pos"},
        {offsetof(struct lp_entry, run.fw.hybrid_shard), 2, true, "run.fw.hybrid_shard"},
        {offsetof(struct lp_entry, run.system.price_pick), LP_MAX_PRICES + 1, false,
         "run.system.price_pick"},
        /* stop 32's fields */
        {offsetof(struct lp_entry, run.fw.mcore_buckets), 2, true, "run.fw.mcore_buckets"},
        {offsetof(struct lp_entry, run.train.module_prec) + LP_QMOD_MTP, LP_PREC_COUNT + 1, true,
         "run.train.module_prec[]"},
    };
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, LP_CHECKPOINT_FILE);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ASSERT_OK(write_one());
        ASSERT_EQ_INT(damage(path, cases[i].off, cases[i].v, cases[i].byte), 0);
        bool found = false;
        struct lp_err err;
        ASSERT_EQ_INT(read_back(&found, &err), LP_EFORMAT);
        ASSERT_TRUE(!found);
        if (!strstr(err.msg, cases[i].name) || !strstr(err.msg, path))
            fprintf(stderr, "  case %s: %s\n", cases[i].name, err.msg);
        ASSERT_TRUE(strstr(err.msg, cases[i].name) != NULL);
        ASSERT_TRUE(strstr(err.msg, path) != NULL);
    }
}

int main(int argc, char **argv)
{
    snprintf(dir, sizeof(dir), "/tmp/llmplan_ck_XXXXXX");
    if (!mkdtemp(dir)) return 1;
    static const struct th_case cases[] = {TH_CASE(checkpoint_reads_back),
                                           TH_CASE(checkpoint_field_out_of_range)};
    const int rc = th_run(cases, (int)(sizeof(cases) / sizeof(cases[0])), argc, argv);
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, LP_CHECKPOINT_FILE);
    (void)unlink(path);
    (void)rmdir(dir);
    return rc;
}
