/* The arithmetic of a model's architecture, in one place: what each layer
 * is (mixer and FFN), its parameters and forward FLOPs, and how the layers
 * are split into pipeline stages. The simulator, the parameter counts the
 * CLI prints and the tests all use these functions. */
#ifndef LLMPLAN_ARCH_H
#define LLMPLAN_ARCH_H

#include "llmplan/config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Chunk size of Mamba-2's SSD algorithm (Dao and Gu 2024, Sec 6):
 * Megatron-Core's MambaMixer default chunk_size (megatron/core/ssm/
 * mamba_mixer.py), also the Nemotron-H configs' chunk_size; mamba_ssm's own
 * Mamba2 module defaults to 256. */
#define LP_SSD_CHUNK 128.0

/* Layer i (0-based) of m: its mixer and FFN. Without a layer pattern every
 * layer is attention (sliding-window where attention_window > 0 and the
 * layer is not a global one) plus a dense FFN, or MoE when
 * i >= moe.first_dense_layers and (i - first) % layer_freq == 0. */
void lp_arch_layer(const struct lp_model *m, int i, enum lp_mixer *mix, enum lp_ffn *ffn);

/* Attention head dimension (head_dim, or hidden / heads). */
double lp_arch_head_dim(const struct lp_model *m);
/* Mamba inner width, heads (Mamba-2) and dt rank (Mamba-1). */
double lp_arch_mamba_inner(const struct lp_model *m);
double lp_arch_mamba_heads(const struct lp_model *m);
double lp_arch_mamba_dt_rank(const struct lp_model *m);
/* Width the routed experts work at (moe.latent, or hidden). */
double lp_arch_moe_width(const struct lp_model *m);

/* Parameters of one mixer / FFN block on one rank, its pre-norm included.
 * tp splits attention heads, Mamba channels, dense and shared-expert FFNs
 * (Megatron column/row parallel); routed experts are split over ep (whole
 * experts) and etp (each expert's FFN); MLA's down projections and the
 * router are replicated. Call with tp = etp = ep = 1 for whole-model counts. */
double lp_arch_mixer_params(const struct lp_model *m, enum lp_mixer k, double tp);
double lp_arch_ffn_params(const struct lp_model *m, enum lp_ffn k, double tp, double etp,
                          double ep);
/* The routed experts' parameters of one MoE block on one rank (E / ep
 * experts, each split over etp): in Megatron-Core their gradients are
 * reduced over the expert-data-parallel group, not the data-parallel one. */
double lp_arch_routed_params(const struct lp_model *m, double etp, double ep);
/* Parameters one token passes through in an FFN block (top_k routed and
 * the shared experts, the router), unsplit. */
double lp_arch_ffn_active_params(const struct lp_model *m, enum lp_ffn k);

/* Forward FLOPs per token of a block over a sequence of seq_len (model FLOPs:
 * no recomputation; attention scores over the full key range, not halved for
 * causality; a sliding window bounds the keys). */
double lp_arch_mixer_flops(const struct lp_model *m, enum lp_mixer k);
double lp_arch_ffn_flops(const struct lp_model *m, enum lp_ffn k);
/* One MTP module's own parameters (the projection of [h; emb] to h and its
 * two norms; its transformer layer is counted as a layer of the model's last
 * kind) and forward FLOPs per token, logits included. */
double lp_arch_mtp_extra_params(const struct lp_model *m);

/* Whole-model counts: all parameters, and those one token activates. */
double lp_model_active_params(const struct lp_model *m);
/* Forward FLOPs per token of the whole model (layers, MTP, logits). */
double lp_model_fwd_flops_per_token(const struct lp_model *m);

/* Split of the layers into the pp * vp virtual stages vs = chunk * pp + s:
 * virtual stage vs holds layers [first[vs], first[vs + 1]). When pp * vp
 * divides the layers and no stage count is given, every chunk gets the same
 * number. Otherwise the embedding and the loss (and each MTP module) count
 * as one layer's work on the first and last virtual stage (Megatron's
 * account_for_embedding/loss_in_pipeline_split) and the units are spread as
 * evenly as the count allows; first/last_stage_layers fix the two ends
 * (Megatron's decoder_first/last_pipeline_num_layers) and the rest must
 * divide evenly. Returns 0, or -1 when no split exists (a chunk would be
 * empty, or the given counts do not add up); first[] has pp*vp+1 entries. */
int lp_arch_split(const struct lp_model *m, const struct lp_parallel *p, int *first, int cap);
/* The most virtual stages a split is made for (and first[]'s size for it). */
#define LP_ARCH_MAX_VSTAGES 4096
#define LP_ARCH_SPLIT_CAP (LP_ARCH_MAX_VSTAGES + 1)

#ifdef __cplusplus
}
#endif

#endif
