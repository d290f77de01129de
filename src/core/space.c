/* The configuration space of a sweep as a mixed-radix integer.
 *
 * index = sum_d digit[d] * stride[d], dimension LP_DIM_MODEL most significant
 * and LP_DIM_ZERO least. Decoding checks the structural constraints level by
 * level, from the most significant dimension down; the first failing level L
 * determines the reason, and every index that shares the digits 0..L fails
 * the same check, so the walk skips to the next value of digit L at once
 * (span = stride[L] - index % stride[L]). That makes a space of 10^7 mostly
 * invalid tuples (every TP x PP x CP product that does not divide the GPU
 * count) cost a few thousand steps. The checks below are a subset of what
 * lp_sim_validate refuses (same reason codes); lp_sim_validate then runs on
 * every configuration that passes them. */
#include <string.h>

#include "llmplan/arch.h"
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
        if (s->stride[d] == 0) {
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

/* The layers split into pp * vp virtual stages (the sweep gives no stage
 * layer counts: the balanced split). */
static bool splits(const struct lp_model *m, int pp, int vp)
{
    struct lp_parallel p = {.pp = pp, .vp = vp};
    int first[LP_ARCH_SPLIT_CAP];
    return lp_arch_split(m, &p, first, LP_ARCH_SPLIT_CAP) == 0;
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
    const struct lp_sweep *sw = s->sweep;
    int dg[LP_DIM_COUNT];
    lp_space_digits(s, index, dg);
#define VAL(d) (sw->values[(d)][dg[(d)]])
    /* the model digit is the index into models[] (generated shapes can be
     * more than values[] holds; sweep_json.c load_models) */
    const struct lp_model *m = &sw->models[dg[LP_DIM_MODEL]];
    const struct lp_system *sys = &sw->systems[VAL(LP_DIM_SYSTEM)];
    const int gpus = VAL(LP_DIM_GPUS);
    const int tp = VAL(LP_DIM_TP), pp = VAL(LP_DIM_PP), cp = VAL(LP_DIM_CP);
    const int ep = VAL(LP_DIM_EP), vp = VAL(LP_DIM_VP), mb = VAL(LP_DIM_MICRO_BATCH);
    const int sched = VAL(LP_DIM_SCHEDULE);
    const bool sp = VAL(LP_DIM_SP) != 0;
    const int seq = VAL(LP_DIM_SEQ_LEN) > 0 ? VAL(LP_DIM_SEQ_LEN) : m->seq_len;
    const int64_t gbs =
        VAL(LP_DIM_GLOBAL_BATCH) > 0 ? VAL(LP_DIM_GLOBAL_BATCH) : sw->train.global_batch;

    /* tp: must fit the GPUs and a node, divide the GPU count and the heads */
    if (tp > gpus || gpus % tp != 0)
        return skip(s, index, LP_DIM_TP, LP_REASON_GPU_COUNT, reason, span);
    if (tp > lp_system_scale_up(sys))
        return skip(s, index, LP_DIM_TP, LP_REASON_TP_NODE, reason, span);
    if (m->heads % tp != 0) return skip(s, index, LP_DIM_TP, LP_REASON_TP_HEADS, reason, span);
    /* pp: the product must divide the GPUs; the layers must split into pp
     * stages (lp_arch_split, the simulator's rule; more chunks split worse,
     * so a pp that fails fails for every vp). Products in 64 bits: tp, pp and
     * cp are each up to 2^20, so tp*pp*cp may not fit an int (and a wrapped
     * product of 0 would divide by zero) */
    const int64_t tpp = (int64_t)tp * pp;
    if (tpp > gpus || gpus % tpp != 0)
        return skip(s, index, LP_DIM_PP, LP_REASON_GPU_COUNT, reason, span);
    if (!splits(m, pp, 1)) return skip(s, index, LP_DIM_PP, LP_REASON_PP_LAYERS, reason, span);
    /* cp: dp = gpus / (tp*pp*cp) must be an integer (and in the dp filter);
     * the sequence splits into 2*cp chunks (load-balanced causal CP) */
    const int64_t mp = tpp * cp;
    if (mp > gpus || gpus % mp != 0)
        return skip(s, index, LP_DIM_CP, LP_REASON_GPU_COUNT, reason, span);
    const int dp = (int)(gpus / mp);
    if (sw->ndp > 0 && !in_list(sw->dp_values, sw->ndp, dp))
        return skip(s, index, LP_DIM_CP, LP_REASON_GPU_COUNT, reason, span);
    if (cp > 1 && seq % (2 * cp) != 0)
        return skip(s, index, LP_DIM_CP, LP_REASON_CP_SEQ, reason, span);
    /* ep: experts are split across ep ranks carved from dp*cp */
    if (ep > 1 && (m->moe.experts == 0 || m->moe.experts % ep != 0 || ep > dp * cp))
        return skip(s, index, LP_DIM_EP, LP_REASON_EP, reason, span);
    /* vp: interleaving splits each stage's layers into vp chunks */
    if (vp > 1 && !splits(m, pp, vp))
        return skip(s, index, LP_DIM_VP, LP_REASON_PP_LAYERS, reason, span);
    /* the interleaved schedule and vp > 1 go together (vp = 1 with
     * "interleaved" would duplicate 1f1b) */
    if ((sched == LP_SCHED_INTERLEAVED) != (vp > 1))
        return skip(s, index, LP_DIM_SCHEDULE, LP_REASON_SCHEDULE, reason, span);
    /* micro-batch: global batch = mb * dp * (number of micro-batches) */
    if (gbs % ((int64_t)mb * dp) != 0)
        return skip(s, index, LP_DIM_MICRO_BATCH, LP_REASON_BATCH, reason, span);
    /* sequence parallelism shards along the TP group: meaningless at tp = 1 */
    if (sp && tp == 1) return skip(s, index, LP_DIM_SP, LP_REASON_SP, reason, span);

    run->model = *m;
    if (seq != m->seq_len) lp_model_set_seq_len(&run->model, seq);
    run->system = *sys;
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
    run->train.precision = (enum lp_prec)VAL(LP_DIM_PRECISION);
    run->par.tp = tp;
    run->par.pp = pp;
    run->par.dp = dp;
    run->par.cp = cp;
    run->par.ep = ep;
    run->par.vp = vp;
    run->par.micro_batch = mb;
    run->par.sequence_parallel = sp;
    run->par.recompute = (enum lp_recompute)VAL(LP_DIM_RECOMPUTE);
    run->par.zero = VAL(LP_DIM_ZERO);
    run->par.schedule = (enum lp_schedule)sched;
    /* a sweep splits experts like Megatron-Core's default (etp = tp) and
     * layers with the balanced split */
    run->par.etp = 0;
    run->par.first_stage_layers = run->par.last_stage_layers = 0;
#undef VAL
    enum lp_reason why = lp_sim_validate(run);
    if (why != LP_REASON_NONE) {
        if (reason) *reason = why;
        if (span) *span = 1;
        return LP_SPACE_SKIP;
    }
    if (reason) *reason = LP_REASON_NONE;
    if (span) *span = 1;
    return LP_SPACE_VALID;
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
