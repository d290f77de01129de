/* The checkpoint of an interrupted sweep: DIR/checkpoint.bin, written by rank
 * 0 atomically (tmp + fsync + rename) after the ranks have flushed their rows.
 *
 * Layout (native byte order; read only by the same build of llmplan):
 *   header   struct ck_header (magic, sizes, sweep hash, position, counters,
 *            and the dataset's row count and column checksums)
 *   ranges   ndone x struct lp_range: the ranges done from segment `segment`
 *            on (their rows are in sweep.h5 at [rows_base, rows_base + sum))
 *   entries  the merged Pareto front and top-k (struct lp_entry)
 *   fnv      uint64 FNV-1a of everything before it
 * The sweep hash covers the sweep text and the cost model, so a checkpoint is
 * never resumed against a different sweep. */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "search_internal.h"

#define CK_MAGIC "LPCKPT1"
#define CK_VERSION                                                                                 \
    16 /* 3: the sweep text's hash (#17); 4: sweep.h5 format 2 (#18); 5: the                       \
        * optional objectives, the run dimensions and their columns (#17);                         \
        * 6: framework option fused_softmax; 7: tp_async_dgrad, train_metrics;                     \
        * 8: training.dataset.max_len (#14), the --prune counters (#20);                           \
        * 9: framework option ckpt_reentrant (#14); 10: reason framework (the                      \
        * walk skips hybrid_shard outside fsdp and fsdp's gaps); 11: system                        \
        * segment_gpus, fw mcore_buckets and dispatcher_sms, training's bf16                       \
        * layers and module_prec (stop 32); 12: framework option fused_mlp                         \
        * (stop 33); 13: framework option ckpt_early_stop (stop 34); 14:                           \
        * training.dataset.batching and pack_len (#14, stop 37); 15: system                        \
        * tp_across_nodes (#15, stop 38); 16: the walk refuses tp_overlap with TP                  \
        * across scale-up domains (stop 38) */

struct ck_header {
    char magic[8];
    uint32_t version, entry_size, range_size, count_n;
    uint64_t sweep_hash, space_size, segment_len, top_k;
    uint64_t dataset;   /* bit 0: the dataset; bit 1: --prune (its counters) */
    uint64_t text_hash; /* the sweep text alone: says which part of sweep_hash differs */
    uint64_t segment, rows_base, ndone;
    uint64_t res_counts[3];
    double wall_s;
    uint64_t counts[LP_COUNT_N];
    uint64_t h5_rows;
    uint64_t h5_sum[LP_H5_NCOLS], h5_sum_base[LP_H5_NCOLS];
};

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) {
        h ^= c[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}
#define FNV_OFFSET UINT64_C(14695981039346656037)

uint64_t lp_sweep_hash(const struct lp_search *s)
{
    uint64_t h = fnv(s->sweep_text, strlen(s->sweep_text) + 1, FNV_OFFSET);
    h = fnv(s->profile_desc, strlen(s->profile_desc) + 1, h);
    return h;
}

static void ck_path(const struct lp_search *s, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", s->opt.out_dir, LP_CHECKPOINT_FILE);
}

int lp_checkpoint_write(const struct lp_search *s, const struct lp_results *res,
                        const struct lp_counts *counts, struct lp_err *err)
{
    struct lp_entry *ent = NULL;
    struct ck_header h;
    memset(&h, 0, sizeof(h));
    memcpy(h.magic, CK_MAGIC, sizeof(h.magic));
    h.version = CK_VERSION;
    h.entry_size = (uint32_t)sizeof(struct lp_entry);
    h.range_size = (uint32_t)sizeof(struct lp_range);
    h.count_n = LP_COUNT_N;
    h.sweep_hash = lp_sweep_hash(s);
    h.text_hash = fnv(s->sweep_text, strlen(s->sweep_text) + 1, FNV_OFFSET);
    h.space_size = lp_space_size(&s->space);
    h.segment_len = s->opt.segment;
    h.top_k = (uint64_t)s->res.top_k;
    h.dataset = (uint64_t)s->opt.dataset | (uint64_t)s->opt.prune << 1;
    h.segment = s->flush_seg;
    h.rows_base = s->rows_base;
    h.ndone = s->done.n;
    LP_TRY(err, lp_results_pack(res, &ent, h.res_counts, err));
    h.wall_s = lp_search_wall_s(s);
    memcpy(h.counts, counts->v, sizeof(h.counts));
    h.h5_rows = s->h5_rows;
    memcpy(h.h5_sum, s->h5_sum, sizeof(h.h5_sum));
    memcpy(h.h5_sum_base, s->h5_sum_base, sizeof(h.h5_sum_base));
    uint64_t nent = h.res_counts[0] + h.res_counts[1] + h.res_counts[2];
    size_t len = sizeof(h) + h.ndone * sizeof(struct lp_range) + nent * sizeof(*ent) + 8;
    char *buf = malloc(len);
    if (!buf) {
        free(ent);
        LP_FAIL(err, LP_ENOMEM, "out of memory writing the checkpoint (%zu bytes)", len);
    }
    size_t off = 0;
    memcpy(buf + off, &h, sizeof(h));
    off += sizeof(h);
    if (h.ndone) memcpy(buf + off, s->done.r, h.ndone * sizeof(struct lp_range));
    off += h.ndone * sizeof(struct lp_range);
    if (nent) memcpy(buf + off, ent, nent * sizeof(*ent));
    off += nent * sizeof(*ent);
    uint64_t sum = fnv(buf, off, FNV_OFFSET);
    memcpy(buf + off, &sum, 8);
    free(ent);
    char path[LP_SWEEP_PATH_LEN + 32];
    ck_path(s, path, sizeof(path));
    int rc = lp_write_file_atomic(path, buf, len, err);
    free(buf);
    if (rc < 0) lp_err_trace(err, __FILE__, __LINE__);
    return rc;
}

/* The checksum guards against damage, not against a file crafted to pass
 * it: every field of a stored entry that a later reader indexes or
 * branches on is checked before the bytes become a struct (a bool byte
 * other than 0 or 1, an enum out of range or an unterminated name would be
 * undefined behaviour or an out-of-bounds read). */
static bool byte_bool(const void *p)
{
    unsigned char c;
    memcpy(&c, p, 1);
    return c <= 1;
}
static bool int_below(const void *p, int count)
{
    int v;
    memcpy(&v, p, sizeof(v));
    return v >= 0 && v < count;
}
static bool terminated(const char *p, size_t n)
{
    return memchr(p, '\0', n) != NULL;
}
#define EOFF(member) offsetof(struct lp_entry, member)
#define ESIZE(member) sizeof(((struct lp_entry *)0)->member)
#define EBOOL(member)                                                                              \
    {                                                                                              \
        EOFF(member), 0, #member                                                                   \
    }
#define EENUM(member, count)                                                                       \
    {                                                                                              \
        EOFF(member), count, #member                                                               \
    }
#define ESTR(member)                                                                               \
    {                                                                                              \
        EOFF(member), -(int)ESIZE(member), #member                                                 \
    }
/* every bool, enum and name of struct lp_entry: a bool a byte 0 or 1, an
 * enum (stored as int) below its count, a name terminated within its
 * array (count -size) */
struct entry_field {
    size_t off;
    int count; /* 0: bool; > 0: enum values; < 0: -(char array size) */
    const char *name;
};
static const struct entry_field entry_fields[] = {
    EBOOL(run.model.tied_embeddings),
    EBOOL(run.model.bias),
    EBOOL(run.model.dropout),
    EBOOL(run.model.moe.dropless),
    EBOOL(run.model.qk_norm),
    EBOOL(run.system.billing_per_node),
    EBOOL(run.system.tp_across_nodes),
    EBOOL(run.par.sequence_parallel),
    EBOOL(run.train.flash_attention),
    EBOOL(run.fw.dp_overlap),
    EBOOL(run.fw.tp_overlap),
    EBOOL(run.fw.tp_async_dgrad),
    EBOOL(run.fw.pp_overlap),
    EBOOL(run.fw.param_gather_overlap),
    EBOOL(run.fw.fused_kernels),
    EBOOL(run.fw.fused_softmax),
    EBOOL(run.fw.fused_mlp),
    EBOOL(run.fw.zero3_per_tensor),
    EBOOL(run.fw.zero3_rank_copies),
    EBOOL(run.fw.ep_overlap),
    EBOOL(run.fw.grad_fp32),
    EBOOL(run.fw.optim_bf16),
    EBOOL(run.fw.hybrid_shard),
    EBOOL(run.fw.train_metrics),
    EBOOL(run.fw.ckpt_reentrant),
    EBOOL(run.fw.ckpt_early_stop),
    EBOOL(run.fw.mcore_buckets),
    EBOOL(res.feasible),
    EENUM(run.model.ffn_act, LP_ACT_COUNT),
    EENUM(run.model.norm, LP_NORM_COUNT),
    EENUM(run.model.pos, LP_POS_COUNT),
    EENUM(run.par.recompute, LP_RECOMPUTE_COUNT),
    EENUM(run.par.recompute_method, LP_RC_METHOD_COUNT),
    EENUM(run.par.schedule, LP_SCHED_COUNT),
    EENUM(run.train.precision, LP_PREC_COUNT),
    EENUM(run.train.attention, LP_ATTENTION_COUNT),
    EENUM(run.train.fp8_scaling, LP_FP8_SCALING_COUNT),
    EENUM(run.train.lora_targets, LP_LORA_TARGETS_COUNT),
    EENUM(run.train.dataset.batching, LP_BATCHING_COUNT),
    EENUM(run.fw.kind, LP_FW_COUNT),
    EENUM(run.fw.tp_overlap_rs, LP_UB_RS_COUNT),
    EENUM(run.fw.xent, LP_XENT_COUNT),
    EENUM(run.fw.dispatcher, LP_DISPATCH_COUNT),
    EENUM(run.fw.moe_impl, LP_MOE_IMPL_COUNT),
    EENUM(res.reason, LP_REASON_COUNT),
    EENUM(run.system.nprices, LP_MAX_PRICES + 1),    /* indexes prices */
    EENUM(run.system.price_pick, LP_MAX_PRICES + 1), /* 1 + an index of prices */
    ESTR(run.model.name),
    ESTR(run.model.source),
    ESTR(run.model.layer_pattern),
    ESTR(run.system.name),
    ESTR(run.system.source),
    ESTR(run.system.profile),
    ESTR(run.system.gpu.name),
    ESTR(run.system.gpu.source)};
/* NULL where the entry is valid, else the first field that is not */
static const char *entry_invalid_field(const char *raw)
{
    for (size_t i = 0; i < sizeof(entry_fields) / sizeof(entry_fields[0]); i++) {
        const struct entry_field *f = &entry_fields[i];
        const bool ok = f->count == 0  ? byte_bool(raw + f->off)
                        : f->count > 0 ? int_below(raw + f->off, f->count)
                                       : terminated(raw + f->off, (size_t)-f->count);
        if (!ok) return f->name;
    }
    /* training.module_precision: 0 (the run's) or an lp_prec + 1 */
    for (int q = 0; q < LP_QMOD_COUNT; q++) {
        unsigned char c;
        memcpy(&c, raw + EOFF(run.train.module_prec) + (size_t)q, 1);
        if (c > LP_PREC_COUNT) return "run.train.module_prec[]";
    }
    for (int i = 0; i < LP_MAX_PRICES; i++) {
        const size_t at = EOFF(run.system.prices) + (size_t)i * sizeof(struct lp_price);
        if (!terminated(raw + at + offsetof(struct lp_price, name),
                        ESIZE(run.system.prices[0].name)))
            return "run.system.prices[].name";
        if (!terminated(raw + at + offsetof(struct lp_price, date),
                        ESIZE(run.system.prices[0].date)))
            return "run.system.prices[].date";
    }
    return NULL;
}
#undef ESTR
#undef EENUM
#undef EBOOL
#undef ESIZE
#undef EOFF

int lp_checkpoint_read(struct lp_search *s, bool *found, struct lp_err *err)
{
    char path[LP_SWEEP_PATH_LEN + 32];
    ck_path(s, path, sizeof(path));
    *found = false;
    if (access(path, F_OK) != 0) return LP_OK;
    char *buf = NULL;
    size_t len = 0;
    LP_TRY(err, lp_read_file(path, &buf, &len, err));
    int rc = LP_OK;
    struct ck_header h;
    if (len < sizeof(h) + 8) {
        rc = lp_err_set_at(err, LP_EFORMAT, __FILE__, __LINE__, "%s: truncated checkpoint", path);
        goto cleanup;
    }
    memcpy(&h, buf, sizeof(h));
    /* sizes from the file, bounded by its length before any product (a
     * damaged count must not wrap the size check) */
    const uint64_t room = len - sizeof(h) - 8;
    const bool counts_fit = h.ndone <= room / sizeof(struct lp_range) &&
                            h.res_counts[0] <= room / sizeof(struct lp_entry) &&
                            h.res_counts[1] <= room / sizeof(struct lp_entry) &&
                            h.res_counts[2] <= room / sizeof(struct lp_entry);
    uint64_t nent = counts_fit ? h.res_counts[0] + h.res_counts[1] + h.res_counts[2] : 0;
    uint64_t sum = 0;
    if (memcmp(h.magic, CK_MAGIC, sizeof(h.magic)) != 0 || h.version != CK_VERSION ||
        h.entry_size != sizeof(struct lp_entry) || h.range_size != sizeof(struct lp_range) ||
        h.count_n != LP_COUNT_N || !counts_fit || nent > room / sizeof(struct lp_entry) ||
        len != sizeof(h) + h.ndone * sizeof(struct lp_range) + nent * sizeof(struct lp_entry) + 8) {
        rc = lp_err_set_at(err, LP_EFORMAT, __FILE__, __LINE__,
                           "%s: not a checkpoint of this llmplan build; remove it to start over",
                           path);
        goto cleanup;
    }
    memcpy(&sum, buf + len - 8, 8);
    if (sum != fnv(buf, len - 8, FNV_OFFSET)) {
        rc = lp_err_set_at(err, LP_EFORMAT, __FILE__, __LINE__, "%s: checksum mismatch", path);
        goto cleanup;
    }
    /* which setting differs, the first of them (issue #17) */
    char why[160] = "";
    if (h.text_hash != fnv(s->sweep_text, strlen(s->sweep_text) + 1, FNV_OFFSET))
        snprintf(why, sizeof(why), "the sweep file's text changed");
    else if (h.sweep_hash != lp_sweep_hash(s))
        snprintf(why, sizeof(why),
                 "the cost model differs (--profile, a profile file or --sustained-frac)");
    else if (h.segment_len != s->opt.segment)
        snprintf(why, sizeof(why), "--segment was %llu, now %llu",
                 (unsigned long long)h.segment_len, (unsigned long long)s->opt.segment);
    else if ((h.dataset & 1) != (uint64_t)s->opt.dataset)
        snprintf(why, sizeof(why), "it was written %s --no-dataset",
                 h.dataset & 1 ? "without" : "with");
    else if ((h.dataset >> 1) != (uint64_t)s->opt.prune)
        snprintf(why, sizeof(why), "it was written %s --prune",
                 h.dataset >> 1 ? "with" : "without");
    else if (h.space_size != lp_space_size(&s->space) || h.top_k != (uint64_t)s->res.top_k)
        snprintf(why, sizeof(why), "the space size or top_k differs");
    if (why[0]) {
        rc = lp_err_set_at(err, LP_EINVAL, __FILE__, __LINE__,
                           "%s: the checkpoint belongs to another run: %s; rerun as before, or "
                           "remove it to start over",
                           path, why);
        goto cleanup;
    }
    s->flush_seg = h.segment;
    s->rows_base = h.rows_base;
    s->wall_before_s = h.wall_s;
    s->done_before = h.counts[LP_COUNT_DONE];
    memcpy(s->counts.v, h.counts, sizeof(h.counts));
    s->h5_rows = h.h5_rows;
    memcpy(s->h5_sum, h.h5_sum, sizeof(h.h5_sum));
    memcpy(s->h5_sum_base, h.h5_sum_base, sizeof(h.h5_sum_base));
    const char *p = buf + sizeof(h);
    s->done.n = 0;
    uint64_t range_rows = 0;
    for (uint64_t i = 0; i < h.ndone; i++) {
        struct lp_range r;
        memcpy(&r, p + i * sizeof(r), sizeof(r));
        r.owner = 0; /* rank 0 reads these rows back and owns them */
        /* within the space, as many rows as indices at most */
        if (r.lo >= r.hi || r.hi > h.space_size || r.rows > r.hi - r.lo) {
            rc = lp_err_set_at(err, LP_EFORMAT, __FILE__, __LINE__,
                               "%s: range %llu of the checkpoint is not valid; remove the "
                               "checkpoint to start over",
                               path, (unsigned long long)i);
            goto cleanup;
        }
        range_rows += r.rows;
        LP_TRY_GOTO(err, rc, lp_ranges_push(&s->done, &r, err), cleanup);
    }
    p += h.ndone * sizeof(struct lp_range);
    if ((h.dataset & 1) &&
        (h.rows_base > UINT64_MAX - range_rows || h.h5_rows != h.rows_base + range_rows)) {
        rc = lp_err_set_at(err, LP_EFORMAT, __FILE__, __LINE__,
                           "%s: the checkpoint's row counts disagree; remove it to start over",
                           path);
        goto cleanup;
    }
    for (uint64_t i = 0; i < nent; i++) {
        const char *bad = entry_invalid_field(p + i * sizeof(struct lp_entry));
        if (bad) {
            rc = lp_err_set_at(err, LP_EFORMAT, __FILE__, __LINE__,
                               "%s: result %llu of the checkpoint is not valid (field %s out of "
                               "range); remove the checkpoint to start over",
                               path, (unsigned long long)i, bad);
            goto cleanup;
        }
    }
    struct lp_entry *ent = malloc((nent ? nent : 1) * sizeof(*ent));
    if (!ent) {
        rc = lp_err_set_at(err, LP_ENOMEM, __FILE__, __LINE__, "out of memory");
        goto cleanup;
    }
    memcpy(ent, p, nent * sizeof(*ent));
    rc = lp_results_unpack(&s->res, ent, h.res_counts, err);
    free(ent);
    if (rc < 0) goto cleanup;
    *found = true;
cleanup:
    free(buf);
    return rc;
}

void lp_checkpoint_remove(const struct lp_search *s)
{
    char path[LP_SWEEP_PATH_LEN + 32];
    ck_path(s, path, sizeof(path));
    (void)unlink(path); /* absent is fine */
}
