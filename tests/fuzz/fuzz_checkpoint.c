/* libFuzzer harness: the search checkpoint (lp_checkpoint_read), issue #21.
 * checkpoint.c is compiled into the harness so that it can make a mutated
 * input pass the outer checks (magic, sizes, sweep hash, FNV checksum) when
 * the first input byte is odd: the parser behind them is fuzzed too. */
#include <sys/stat.h>

#include "../../search/checkpoint.c"

#include "fuzz_common.h"

double lp_search_wall_s(const struct lp_search *s)
{
    (void)s;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct lp_search s;
    static struct lp_sweep sw;
    static char text[] = "{}";
    memset(&s, 0, sizeof(s));
    s.sweep_text = text;
    s.sweep = &sw;
    s.opt.segment = 1024;
    s.opt.dataset = true;
    s.space.size = 1 << 20;
    if (lp_results_init(&s.res, 10, NULL) != LP_OK) return 0;
    snprintf(s.opt.out_dir, sizeof(s.opt.out_dir), "%s",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    char *buf = malloc(size + 8);
    if (!buf) return 0;
    memcpy(buf, data, size);
    size_t len = size;
    if (size > 0 && (data[0] & 1) && size >= sizeof(struct ck_header) + 8) {
        struct ck_header h;
        memcpy(&h, buf, sizeof(h));
        memcpy(h.magic, CK_MAGIC, sizeof(h.magic));
        h.version = CK_VERSION;
        h.entry_size = (uint32_t)sizeof(struct lp_entry);
        h.range_size = (uint32_t)sizeof(struct lp_range);
        h.count_n = LP_COUNT_N;
        h.sweep_hash = lp_sweep_hash(&s);
        h.text_hash = fnv(s.sweep_text, strlen(s.sweep_text) + 1, FNV_OFFSET);
        h.space_size = s.space.size;
        h.segment_len = s.opt.segment;
        h.top_k = 10;
        h.dataset = 1;
        memcpy(buf, &h, sizeof(h));
        uint64_t sum = fnv(buf, len - 8, FNV_OFFSET);
        memcpy(buf + len - 8, &sum, 8);
    }
    /* a private directory per process: the file name is fixed */
    char path[LP_SWEEP_PATH_LEN + 32], dir[LP_SWEEP_PATH_LEN];
    snprintf(dir, sizeof(dir), "%s/llmplan_fuzz_ck_%d", s.opt.out_dir, (int)getpid());
    (void)mkdir(dir, 0700);
    snprintf(s.opt.out_dir, sizeof(s.opt.out_dir), "%s", dir);
    snprintf(path, sizeof(path), "%s/%s", dir, LP_CHECKPOINT_FILE);
    FILE *f = fopen(path, "wb");
    if (f) {
        if (len) fwrite(buf, 1, len, f);
        fclose(f);
        bool found = false;
        struct lp_err err;
        lp_err_clear(&err);
        int rc = lp_checkpoint_read(&s, &found, &err);
        if (rc != LP_OK) fuzz_check_error(rc, &err);
    }
    free(buf);
    lp_ranges_free(&s.done);
    lp_results_free(&s.res);
    return 0;
}
