/* The arithmetic of a model's architecture (arch.h): layer kinds,
 * parameters, forward FLOPs per token and the pipeline split.
 *
 * Notation: h hidden, a heads, g kv heads, d head dim, f FFN size, n_mat 3
 * for SwiGLU (gate, up, down) and 2 otherwise, s sequence length, V vocab.
 * MLA (DeepSeek-V2 Sec 2.1): q_r and kv_r the low ranks, d_n / d_r the
 * non-rotary / rotary query-key head dims, d_v the value head dim. Mamba:
 * d_i = expand * h inner channels, N state size, d_c conv width; Mamba-2
 * (Dao and Gu 2024, Sec 7, Megatron-Core's MambaMixer) with n_h = d_i / P
 * heads of P channels and G groups of B and C; Mamba-1 (Gu and Dao 2023,
 * Sec 3) with the dt rank R. */
#include <math.h>

#include "llmplan/arch.h"

static double norm_params(const struct lp_model *m, double width)
{
    return (m->norm == LP_NORM_LAYERNORM ? 2.0 : 1.0) * width;
}

static double nmat(const struct lp_model *m)
{
    return m->ffn_act == LP_ACT_SWIGLU ? 3.0 : 2.0;
}

static bool is_global(const struct lp_model *m, int i)
{
    if (m->attention_window <= 0) return true;
    return m->global_every > 0 && (i + 1) % m->global_every == 0;
}

void lp_arch_layer(const struct lp_model *m, int i, enum lp_mixer *mix, enum lp_ffn *ffn)
{
    const enum lp_mixer attn = is_global(m, i) ? LP_MIX_ATTN : LP_MIX_ATTN_LOCAL;
    if (m->layer_pattern[0]) {
        *mix = LP_MIX_NONE;
        *ffn = LP_FFN_NONE;
        switch (m->layer_pattern[i]) {
        case 'M':
            *mix = LP_MIX_MAMBA;
            break;
        case '*':
            *mix = attn;
            break;
        case '-':
            *ffn = LP_FFN_DENSE;
            break;
        case 'E':
            *ffn = LP_FFN_MOE;
            break;
        default:
            break;
        }
        return;
    }
    *mix = attn;
    *ffn = LP_FFN_DENSE;
    if (m->moe.experts > 0 && i >= m->moe.first_dense_layers) {
        int freq = m->moe.layer_freq > 0 ? m->moe.layer_freq : 1;
        if ((i - m->moe.first_dense_layers) % freq == 0) *ffn = LP_FFN_MOE;
    }
}

double lp_arch_head_dim(const struct lp_model *m)
{
    return m->head_dim > 0 ? m->head_dim : (double)m->hidden / m->heads;
}

double lp_arch_mamba_inner(const struct lp_model *m)
{
    if (m->mamba.heads > 0 && m->mamba.head_dim > 0)
        return (double)m->mamba.heads * m->mamba.head_dim;
    return (double)(m->mamba.expand > 0 ? m->mamba.expand : 2) * m->hidden;
}

double lp_arch_moe_width(const struct lp_model *m)
{
    return m->moe.latent > 0 ? m->moe.latent : m->hidden;
}

double lp_arch_mamba_heads(const struct lp_model *m)
{
    return m->mamba.head_dim > 0 ? lp_arch_mamba_inner(m) / m->mamba.head_dim : 0.0;
}

double lp_arch_mamba_dt_rank(const struct lp_model *m)
{
    return m->mamba.dt_rank > 0 ? m->mamba.dt_rank : ceil(m->hidden / 16.0);
}

/* Attention weights (not the norm) on one of tp ranks. */
static double attn_params(const struct lp_model *m, double tp)
{
    const double h = m->hidden, a = m->heads;
    const struct lp_mla *q = &m->mla;
    if (q->kv_lora_rank > 0) {
        const double dqk = q->qk_nope_head_dim + q->qk_rope_head_dim;
        double p = 0;
        if (q->q_lora_rank > 0) /* replicated down projection, its norm, split up projection */
            p +=
                h * q->q_lora_rank + norm_params(m, q->q_lora_rank) + q->q_lora_rank * a * dqk / tp;
        else
            p += h * a * dqk / tp;
        p += h * (q->kv_lora_rank + q->qk_rope_head_dim) + norm_params(m, q->kv_lora_rank);
        p += q->kv_lora_rank * a * (q->qk_nope_head_dim + q->v_head_dim) / tp;
        p += a * q->v_head_dim * h / tp;
        return p;
    }
    const double d = lp_arch_head_dim(m), g = m->kv_heads;
    double p = (h * d * (a + 2.0 * g) + a * d * h) / tp;
    if (m->bias) p += (a + 2.0 * g) * d / tp + h;
    /* the query and key norms: one weight over head_dim each, shared by
     * every head and replicated on the TP ranks (Megatron-Core
     * q_layernorm / k_layernorm of hidden_size_per_attention_head) */
    if (m->qk_norm) p += 2.0 * norm_params(m, d);
    return p;
}

static double mamba_params(const struct lp_model *m, double tp)
{
    const double h = m->hidden, di = lp_arch_mamba_inner(m), N = m->mamba.d_state;
    const double dc = m->mamba.d_conv > 0 ? m->mamba.d_conv : 4;
    if (m->mamba.version == 2) {
        const double nh = lp_arch_mamba_heads(m), G = m->mamba.n_groups > 0 ? m->mamba.n_groups : 1;
        const double conv = di + 2.0 * G * N;
        /* in_proj (z, x, B, C, dt), conv1d weight and bias, dt_bias, A_log,
         * D, the gated RMSNorm, out_proj: all split over TP channels */
        return (h * (2.0 * di + 2.0 * G * N + nh) + conv * (dc + 1.0) + 3.0 * nh + di + di * h) /
               tp;
    }
    const double R = lp_arch_mamba_dt_rank(m);
    /* in_proj (x, z), conv1d, x_proj (dt, B, C), dt_proj with bias, A_log,
     * D, out_proj */
    return (h * 2.0 * di + di * (dc + 1.0) + di * (R + 2.0 * N) + R * di + di + di * N + di +
            di * h) /
           tp;
}

double lp_arch_mixer_params(const struct lp_model *m, enum lp_mixer k, double tp)
{
    switch (k) {
    case LP_MIX_ATTN:
    case LP_MIX_ATTN_LOCAL:
        return attn_params(m, tp) + norm_params(m, m->hidden);
    case LP_MIX_MAMBA:
        return mamba_params(m, tp) + norm_params(m, m->hidden);
    default:
        return 0.0;
    }
}

/* One expert-style FFN of size f and width h split over t ranks, with its
 * biases. */
static double mlp_params(const struct lp_model *m, double h, double f, double t)
{
    const double n = nmat(m);
    return n * h * f / t + (m->bias ? (n - 1.0) * f / t + h : 0.0);
}

/* LatentMoE's projections to the latent width and back (replicated). */
static double latent_params(const struct lp_model *m)
{
    return m->moe.latent > 0 ? 2.0 * m->hidden * (double)m->moe.latent : 0.0;
}

double lp_arch_routed_params(const struct lp_model *m, double etp, double ep)
{
    return (double)m->moe.experts / ep *
           mlp_params(m, lp_arch_moe_width(m), m->moe.ffn_hidden, etp);
}

double lp_arch_ffn_params(const struct lp_model *m, enum lp_ffn k, double tp, double etp, double ep)
{
    const double h = m->hidden;
    switch (k) {
    case LP_FFN_DENSE:
        return mlp_params(m, h, m->ffn_hidden, tp) + norm_params(m, h);
    case LP_FFN_MOE: {
        const struct lp_moe *e = &m->moe;
        double p = h * e->experts + (m->bias ? e->experts : 0.0); /* router (replicated) */
        p += lp_arch_routed_params(m, etp, ep);
        p += e->shared_experts * mlp_params(m, h, e->shared_ffn_hidden, tp) + latent_params(m);
        return p + norm_params(m, h);
    }
    default:
        return 0.0;
    }
}

double lp_arch_ffn_active_params(const struct lp_model *m, enum lp_ffn k)
{
    if (k != LP_FFN_MOE) return lp_arch_ffn_params(m, k, 1, 1, 1);
    const struct lp_moe *e = &m->moe;
    return m->hidden * (double)e->experts +
           e->top_k * mlp_params(m, lp_arch_moe_width(m), e->ffn_hidden, 1) +
           e->shared_experts * mlp_params(m, m->hidden, e->shared_ffn_hidden, 1) +
           latent_params(m) + norm_params(m, m->hidden);
}

double lp_arch_mixer_flops(const struct lp_model *m, enum lp_mixer k)
{
    const double h = m->hidden, a = m->heads, s = m->seq_len;
    switch (k) {
    case LP_MIX_ATTN:
    case LP_MIX_ATTN_LOCAL: {
        /* keys per query: the whole sequence (model-FLOP convention), or the
         * window */
        const double keys =
            k == LP_MIX_ATTN_LOCAL && m->attention_window < s ? m->attention_window : s;
        const struct lp_mla *q = &m->mla;
        if (q->kv_lora_rank > 0) {
            const double dqk = q->qk_nope_head_dim + q->qk_rope_head_dim;
            return 2.0 * attn_params(m, 1) + 2.0 * keys * a * (dqk + q->v_head_dim);
        }
        const double d = lp_arch_head_dim(m), g = m->kv_heads;
        return 2.0 * (h * d * (a + 2.0 * g) + a * d * h) + 4.0 * keys * a * d;
    }
    case LP_MIX_MAMBA: {
        const double di = lp_arch_mamba_inner(m), N = m->mamba.d_state;
        const double dc = m->mamba.d_conv > 0 ? m->mamba.d_conv : 4;
        if (m->mamba.version == 2) {
            const double nh = lp_arch_mamba_heads(m), P = m->mamba.head_dim;
            const double G = m->mamba.n_groups > 0 ? m->mamba.n_groups : 1, Q = LP_SSD_CHUNK;
            const double proj = h * (2.0 * di + 2.0 * G * N + nh) + di * h;
            /* SSD per token (Dao and Gu 2024, Sec 6): C B^T within a chunk
             * (per group), its product with X, the chunk states and their
             * contribution to the output (per head) */
            const double ssd = G * 2.0 * Q * N + nh * (2.0 * Q * P + 4.0 * N * P);
            return 2.0 * proj + 2.0 * dc * (di + 2.0 * G * N) + ssd;
        }
        const double R = lp_arch_mamba_dt_rank(m);
        const double proj = h * 2.0 * di + di * (R + 2.0 * N) + R * di + di * h;
        /* selective scan: discretise (exp, two products), update and read
         * out each of the d_i x N states: 9 FLOPs (Gu and Dao 2023, Sec 3.3) */
        return 2.0 * proj + 2.0 * dc * di + 9.0 * di * N;
    }
    default:
        return 0.0;
    }
}

double lp_arch_ffn_flops(const struct lp_model *m, enum lp_ffn k)
{
    const double h = m->hidden, n = nmat(m);
    switch (k) {
    case LP_FFN_DENSE:
        return 2.0 * n * h * m->ffn_hidden;
    case LP_FFN_MOE: {
        const struct lp_moe *e = &m->moe;
        return 2.0 * h * e->experts + 2.0 * latent_params(m) +
               2.0 * n * lp_arch_moe_width(m) * e->top_k * (double)e->ffn_hidden +
               2.0 * n * h * e->shared_experts * (double)e->shared_ffn_hidden;
    }
    default:
        return 0.0;
    }
}

double lp_arch_mtp_extra_params(const struct lp_model *m)
{
    const double h = m->hidden;
    return 2.0 * h * h + 2.0 * norm_params(m, h); /* eh_proj, enorm and hnorm */
}

/* Parameters outside the layers: embedding (+ learned positions), untied
 * head, final norm. */
static double ends_params(const struct lp_model *m)
{
    const double h = m->hidden, emb = (double)m->vocab * h;
    double p = m->tied_embeddings ? emb : 2.0 * emb;
    if (m->pos == LP_POS_LEARNED) p += (double)m->seq_len * h;
    return p + norm_params(m, h);
}

/* The kind of layer an MTP module repeats: the model's last layer's. */
static void mtp_kind(const struct lp_model *m, enum lp_mixer *mix, enum lp_ffn *ffn)
{
    lp_arch_layer(m, m->layers - 1, mix, ffn);
}

static double model_params(const struct lp_model *m, bool active)
{
    double total = 0;
    for (int i = 0; i < m->layers; i++) {
        enum lp_mixer mx;
        enum lp_ffn ff;
        lp_arch_layer(m, i, &mx, &ff);
        total += lp_arch_mixer_params(m, mx, 1) +
                 (active ? lp_arch_ffn_active_params(m, ff) : lp_arch_ffn_params(m, ff, 1, 1, 1));
    }
    if (m->mtp_layers > 0) {
        enum lp_mixer mx;
        enum lp_ffn ff;
        mtp_kind(m, &mx, &ff);
        total += m->mtp_layers *
                 (lp_arch_mtp_extra_params(m) + lp_arch_mixer_params(m, mx, 1) +
                  (active ? lp_arch_ffn_active_params(m, ff) : lp_arch_ffn_params(m, ff, 1, 1, 1)));
    }
    return total + ends_params(m);
}

double lp_model_params(const struct lp_model *m)
{
    return model_params(m, false);
}

double lp_model_active_params(const struct lp_model *m)
{
    return model_params(m, true);
}

double lp_model_fwd_flops_per_token(const struct lp_model *m)
{
    double f = 0;
    for (int i = 0; i < m->layers; i++) {
        enum lp_mixer mx;
        enum lp_ffn ff;
        lp_arch_layer(m, i, &mx, &ff);
        f += lp_arch_mixer_flops(m, mx) + lp_arch_ffn_flops(m, ff);
    }
    const double logits = 2.0 * m->hidden * (double)m->vocab;
    if (m->mtp_layers > 0) {
        enum lp_mixer mx;
        enum lp_ffn ff;
        mtp_kind(m, &mx, &ff);
        f += m->mtp_layers * (2.0 * 2.0 * m->hidden * (double)m->hidden +
                              lp_arch_mixer_flops(m, mx) + lp_arch_ffn_flops(m, ff) + logits);
    }
    return f + logits;
}

int lp_arch_split(const struct lp_model *m, const struct lp_parallel *p, int *first, int cap)
{
    const int L = m->layers;
    if (p->pp < 1 || p->vp < 1 || (int64_t)p->pp * p->vp + 1 > cap) return -1;
    const int C = p->pp * p->vp;
    const int fl = p->first_stage_layers, ll = p->last_stage_layers;
    first[0] = 0;
    if (fl > 0 || ll > 0) {
        const int ends = (fl > 0) + (ll > 0), middle = C - ends;
        const int rest = L - fl - ll;
        if (C < 2 || rest < 0 || (middle == 0 ? rest != 0 : rest % middle != 0 || rest < middle))
            return -1;
        const int each = middle > 0 ? rest / middle : 0;
        for (int c = 0; c < C; c++) {
            int n = each;
            if (c == 0 && fl > 0) n = fl;
            if (c == C - 1 && ll > 0) n = ll;
            first[c + 1] = first[c] + n;
        }
        return 0;
    }
    if (L % C == 0) {
        for (int c = 0; c < C; c++)
            first[c + 1] = first[c] + L / C;
        return 0;
    }
    /* the embedding, the loss and each MTP module as one unit of work */
    const int64_t U = (int64_t)L + 2 + (m->mtp_layers > 0 ? m->mtp_layers : 0);
    for (int c = 0; c < C; c++) {
        int64_t units = (int64_t)(c + 1) * U / C - (int64_t)c * U / C;
        int64_t n = units - (c == 0) - (c == C - 1 ? U - L - 1 : 0);
        if (n < 0 || (n == 0 && c > 0 && c < C - 1)) return -1;
        first[c + 1] = first[c] + (int)n;
    }
    return first[C] == L ? 0 : -1;
}
