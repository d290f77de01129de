/* The configuration space of a sweep as a mixed-radix integer.
 *
 * index = sum_d digit[d] * stride[d], dimension LP_DIM_MODEL most significant
 * and LP_DIM_ZERO least. Decoding checks the structural constraints level by
 * level, from the most significant dimension down; the first failing level L
 * determines the reason, and every index that shares the digits 0..L fails
 * the same check, so the walk skips to the next value of digit L at once
 * (span = stride[L] - index % stride[L]). That makes a space of 10^7 mostly
 * invalid tuples (every TP x PP x CP product that does not divide the GPU
 * count) cost a few thousand steps. The checks are the GPU count (how the
 * sweep's GPUs give dp) and then the validity rules of src/core/rules.c,
 * each at the digit it is tagged with: the same list, in the same order, as
 * lp_sim_validate runs, so a configuration the walk keeps is one `llmplan
 * simulate` accepts and a skipped one has the reason simulate gives. */
#include <string.h>

#include "llmplan/rules.h"
#include "llmplan/search.h"

static const char *const dim_names[LP_DIM_COUNT] = {"model",
                                                    "seq_len",
                                                    "global_batch",
                                                    "system",
                                                    "gpus",
                                                    "tp",
                                                    "pp",
                                                    "cp",
                                                    "ep",
                                                    "vp",
                                                    "schedule",
                                                    "micro_batch",
                                                    "sequence_parallel",
                                                    "recompute",
                                                    "zero",
                                                    "framework",
                                                    "attention",
                                                    "precision",
                                                    "finetune"};

const char *lp_dim_name(enum lp_dim d)
{
    return (unsigned)d < LP_DIM_COUNT ? dim_names[d] : "?";
}

int lp_space_init(struct lp_space *s, const struct lp_sweep *sw, struct lp_err *err)
{
    memset(s, 0, sizeof(*s));
    s->sweep = sw;
    uint64_t size = 1;
    for (int d = LP_DIM_COUNT - 1; d >= 0; d--) {
        s->radix[d] = sw->nvalues[d];
        s->stride[d] = size;
        if (s->radix[d] <= 0) {
            size = 0;
            continue;
        }
        if (size > (UINT64_C(1) << 62) / (uint64_t)s->radix[d])
            LP_FAIL(err, LP_EINVAL,
                    "sweep '%s': the space has more than 2^62 configurations; narrow it", sw->name);
        size *= (uint64_t)s->radix[d];
    }
    s->size = size;
    if (size == 0)
        for (int d = 0; d < LP_DIM_COUNT; d++)
            s->stride[d] = 0;
    return LP_OK;
}

uint64_t lp_space_size(const struct lp_space *s)
{
    return s->size;
}

void lp_space_digits(const struct lp_space *s, uint64_t index, int digit[LP_DIM_COUNT])
{
    for (int d = 0; d < LP_DIM_COUNT; d++) {
        /* a dimension of one value: index < stride[d] here (radix[d] *
         * stride[d] = stride[d - 1], the remainder's bound), so the digit is
         * 0 and the remainder stays; most of a sweep's dimensions, and the
         * divisions were a tenth of a pruned sweep (issue #20) */
        if (s->stride[d] == 0 || s->radix[d] == 1) {
            digit[d] = 0;
            continue;
        }
        digit[d] = (int)(index / s->stride[d]);
        index %= s->stride[d];
    }
}

uint64_t lp_space_encode(const struct lp_space *s, const int digit[LP_DIM_COUNT])
{
    uint64_t index = 0;
    for (int d = 0; d < LP_DIM_COUNT; d++)
        index += (uint64_t)digit[d] * s->stride[d];
    return index;
}

/* Skip the rest of the block that shares digits 0..level with index. */
static enum lp_space_verdict skip(const struct lp_space *s, uint64_t index, enum lp_dim level,
                                  enum lp_reason why, enum lp_reason *reason, uint64_t *span)
{
    if (reason) *reason = why;
    if (span) {
        uint64_t st = s->stride[level];
        uint64_t n = st - index % st;
        if (index + n > s->size) n = s->size - index;
        *span = n;
    }
    return LP_SPACE_SKIP;
}

static bool in_list(const int *v, int n, int x)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x) return true;
    return false;
}

enum lp_space_verdict lp_space_decode(const struct lp_space *s, uint64_t index, struct lp_run *run,
                                      enum lp_reason *reason, uint64_t *span)
{
    int dg[LP_DIM_COUNT];
    lp_space_digits(s, index, dg);
    return lp_space_decode_digits(s, index, dg, run, reason, span);
}

/* from: the first dimension whose digit may differ from those of the
 * configuration *run holds (a valid one: every rule passed for it); 0 when
 * it holds none. A rule reads only the fields of the dimensions up to its
 * own (what a failing prefix's span skipping rests on too), so the rules
 * of the dimensions above `from` pass again, and the model, sequence
 * length, global batch and system *run holds stay when from is below
 * LP_DIM_SYSTEM (issue #20: a walk's consecutive indices differ in their
 * last digits). */
static enum lp_space_verdict decode_from(const struct lp_space *s, uint64_t index,
                                         const int dg[LP_DIM_COUNT], int from, struct lp_run *run,
                                         enum lp_reason *reason, uint64_t *span)
{
    const struct lp_sweep *sw = s->sweep;
#define VAL(d) (sw->values[(d)][dg[(d)]])
    /* the model digit is the index into models[] (generated shapes can be
     * more than values[] holds; sweep_json.c load_models) */
    const struct lp_model *m = &sw->models[dg[LP_DIM_MODEL]];
    const struct lp_system *sys = &sw->systems[VAL(LP_DIM_SYSTEM)];
    const int gpus = VAL(LP_DIM_GPUS);
    /* the layout, every swept field from this index (a rule reads only the
     * fields up to its tag); the others zero (no recompute modules, the
     * uniform method, the balanced split), whatever the caller's run held:
     * `llmplan schedule` decoded into an uninitialised run and planned
     * with garbage recompute settings */
    struct lp_parallel p;
    memset(&p, 0, sizeof(p));
    p.tp = VAL(LP_DIM_TP);
    p.pp = VAL(LP_DIM_PP);
    p.cp = VAL(LP_DIM_CP);
    p.ep = VAL(LP_DIM_EP);
    p.vp = VAL(LP_DIM_VP);
    p.dp = 1;
    p.micro_batch = VAL(LP_DIM_MICRO_BATCH);
    p.sequence_parallel = VAL(LP_DIM_SP) != 0;
    p.recompute = (enum lp_recompute)VAL(LP_DIM_RECOMPUTE);
    p.zero = VAL(LP_DIM_ZERO);
    p.schedule = (enum lp_schedule)VAL(LP_DIM_SCHEDULE);
    /* a sweep splits experts like Megatron-Core's default (etp = tp) and
     * layers with the balanced split */
    p.etp = 0;
    p.first_stage_layers = p.last_stage_layers = 0;
    /* the swept sequence length and global batch (issue #17) are what the
     * rules see; copies only where they differ from the model's / sweep's */
    const int seq = VAL(LP_DIM_SEQ_LEN) > 0 ? VAL(LP_DIM_SEQ_LEN) : m->seq_len;
    const int64_t gbs =
        VAL(LP_DIM_GLOBAL_BATCH) > 0 ? VAL(LP_DIM_GLOBAL_BATCH) : sw->train.global_batch;
    struct lp_model mseq;
    const bool keep = from > LP_DIM_SYSTEM; /* *run's model and system are this index's */
    if (keep) {
        m = &run->model;
    } else if (seq != m->seq_len) {
        mseq = *m;
        lp_model_set_seq_len(&mseq, seq);
        m = &mseq;
    }
    struct lp_training tr;
    const struct lp_training *train = &sw->train;
    if (gbs != sw->train.global_batch) {
        tr = sw->train;
        tr.global_batch = gbs;
        train = &tr;
    }
    const struct lp_framework_opts *fw = sw->fws ? &sw->fws[VAL(LP_DIM_FRAMEWORK)] : &sw->fw;
    const struct lp_rule_view view = {m,
                                      sys,
                                      train,
                                      &p,
                                      (enum lp_prec)VAL(LP_DIM_PRECISION),
                                      fw->kind,
                                      fw->hybrid_shard,
                                      sw->fts ? sw->fts[VAL(LP_DIM_FINETUNE)].lora_rank
                                              : sw->train.lora_rank,
                                      fw->tp_overlap};
    int k = 0; /* the next rule of the list: the first of dimension `from` */
    while (k < lp_rule_count && (int)lp_rules[k].dim < from)
        k++;
    double a, b;
    /* The rules of every dimension up to d, in the list's order. */
#define RULES_UPTO(d)                                                                              \
    for (; k < lp_rule_count && lp_rules[k].dim <= (d); k++)                                       \
        if (lp_rules[k].fails(&view, &a, &b))                                                      \
            return skip(s, index, lp_rules[k].dim, lp_rules[k].reason, reason, span);

    /* dp = gpus / (tp*pp*cp) must be an integer (and in the dp filter): the
     * sweep's GPU count, level by level (a configuration `llmplan simulate`
     * is given states dp instead). Products in 64 bits: tp, pp and cp are
     * each up to 2^20, so tp*pp*cp may not fit an int (and a wrapped
     * product of 0 would divide by zero) */
    if (from <= LP_DIM_TP && (p.tp > gpus || gpus % p.tp != 0))
        return skip(s, index, LP_DIM_TP, LP_REASON_GPU_COUNT, reason, span);
    RULES_UPTO(LP_DIM_TP);
    const int64_t tpp = (int64_t)p.tp * p.pp;
    if (from <= LP_DIM_PP && (tpp > gpus || gpus % tpp != 0))
        return skip(s, index, LP_DIM_PP, LP_REASON_GPU_COUNT, reason, span);
    RULES_UPTO(LP_DIM_PP);
    const int64_t mp = tpp * p.cp;
    if (from <= LP_DIM_CP && (mp > gpus || gpus % mp != 0))
        return skip(s, index, LP_DIM_CP, LP_REASON_GPU_COUNT, reason, span);
    p.dp = (int)(gpus / mp);
    if (from <= LP_DIM_CP && sw->ndp > 0 && !in_list(sw->dp_values, sw->ndp, p.dp))
        return skip(s, index, LP_DIM_CP, LP_REASON_GPU_COUNT, reason, span);
    RULES_UPTO(LP_DIM_COUNT);
#undef RULES_UPTO

    if (!keep) {
        run->model = *m; /* with the swept sequence length */
        run->system = *sys;
    }
    run->train = sw->train;
    run->train.global_batch = gbs;
    if (sw->fts) { /* NULL only in a hand-built sweep (tests) */
        const struct lp_sweep_finetune *ft = &sw->fts[VAL(LP_DIM_FINETUNE)];
        run->train.lora_rank = ft->lora_rank;
        run->train.lora_base_bits = ft->lora_base_bits;
        run->train.lora_targets = ft->lora_targets;
        run->train.lora_dropout = ft->lora_dropout;
    }
    run->fw = sw->fws ? sw->fws[VAL(LP_DIM_FRAMEWORK)] : sw->fw;
    const int att = VAL(LP_DIM_ATTENTION);
    run->train.flash_attention = att != LP_ATTENTION_COUNT;
    run->train.attention = att != LP_ATTENTION_COUNT ? (enum lp_attention)att : LP_ATTENTION_FLASH2;
    run->train.precision = view.precision;
    run->par = p;
#undef VAL
    if (reason) *reason = LP_REASON_NONE;
    if (span) *span = 1;
    return LP_SPACE_VALID;
}

enum lp_space_verdict lp_space_decode_digits(const struct lp_space *s, uint64_t index,
                                             const int dg[LP_DIM_COUNT], struct lp_run *run,
                                             enum lp_reason *reason, uint64_t *span)
{
    return decode_from(s, index, dg, 0, run, reason, span);
}

enum lp_space_verdict lp_space_decode_next(const struct lp_space *s, uint64_t index,
                                           const int dg[LP_DIM_COUNT], const int *held,
                                           struct lp_run *run, enum lp_reason *reason,
                                           uint64_t *span)
{
    int from = 0;
    if (held)
        while (from < LP_DIM_COUNT && dg[from] == held[from])
            from++;
    return decode_from(s, index, dg, from, run, reason, span);
}

void lp_space_evaluate(struct lp_sim *sim, const struct lp_run *run, struct lp_result *res)
{
    /* lp_sim_run checks the memory footprint (lp_sim_memory's) against the
     * GPU's capacity before any timing and returns an out_of_memory result
     * at once; checking it here as well would only compute it twice. One
     * call also keeps every field of an infeasible result identical to what
     * `llmplan simulate` prints for it. */
    lp_sim_run(sim, run, res);
}
