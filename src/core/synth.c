/* The analytical kernel profile (`llmplan profile synth`): every table of a
 * profile computed from a GPU's datasheet figures and a handful of constants,
 * each calibrated only against validation/kernels.csv (row ids below) or
 * stated as an assumption. docs/profile-format.md ("The analytical model")
 * gives the formulas; lp_profile_synth records every constant, with its
 * source, as a provenance attribute of the profile.
 *
 * The constants were derived from kernels.csv with a small script (not part
 * of the build) and are written here as numbers: nothing reads the CSV at
 * run time. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "llmplan/profile.h"
#include "nccl_model.h"

/* ---- constants common to all kernels ---- */

/* Fixed GPU-side cost of one kernel (launch gap + ramp-up/tail). Assumption:
 * no kernels.csv row isolates it; CUDA kernels issued back to back on a
 * stream show ~2-4 us between the starts of tiny kernels. */
#define SY_LAUNCH_S 3e-6
/* Fraction of HBM bandwidth a streaming kernel sustains. Assumption (no
 * kernels.csv row measures HBM bandwidth); STREAM-like copies on A100/H100
 * reach ~90% of the datasheet figure. */
#define SY_MEM_EFF 0.90
/* Memory latency a streaming kernel pays once (first bytes to last wave):
 * gives the size-dependent efficiency eff(B) = 0.9 B / (B + 0.9 bw lat).
 * Assumption: DRAM latency ~0.6 us plus the tail of the last wave. */
#define SY_MEM_LAT_S 1e-6

/* ---- GEMM ---- */

/* k-pipeline fill: a tile spends the time of SY_GEMM_K0 extra k-steps on
 * its prologue (first loads) and epilogue (storing C). Assumption from tile
 * I/O: storing a 128x256 C tile moves about as many bytes as loading the A
 * and B panels of 128 k-steps. */
#define SY_GEMM_K0 128.0
/* Tile shapes a cuBLAS-like library picks from, and their relative
 * throughput per SM. The 128x128 factor is an assumption (half the
 * arithmetic intensity of 128x256); no kernels.csv row resolves tiles. */
static const struct {
    int tm, tn;
    double eff;
} sy_tiles[] = {{128, 256, 1.0}, {256, 128, 1.0}, {128, 128, 0.9}};
/* Split-K when the output has fewer tiles than SMs: at most 16 splits, each
 * at least 256 deep. Assumption (cuBLAS heuristics). */
#define SY_SPLITK_MAX 16
#define SY_SPLITK_MIN_K 256.0
/* Stream-K / persistent tile schedulers spread a partial last wave over all
 * SMs at a fixup cost: a GEMM never runs below this fraction of full-wave
 * efficiency (waves = min(ceil(tiles/sms), tiles/(sms*0.95))). Assumption;
 * without it the MAMF best shapes of H100 fp8 (K0020: 288 tiles on 132 SMs)
 * would lose 27% to quantisation that the measured kernel does not show. */
#define SY_STREAMK_EFF 0.95

/* Maximum Achievable Matmul FLOPS (MAMF) rows of kernels.csv: the best shape
 * found by mamf-finder.py and its mean TFLOP/s, against the row's own
 * theoretical peak: the achieved fraction is the model's maximum (f_max,
 * calibrate_gemm). Names are matched as substrings
 * of the GPU preset name, in order. */
struct mamf_row {
    const char *pattern;
    const char *row;
    enum lp_prec prec; /* LP_BF16 rows serve fp32 (TF32), fp16 and bf16 */
    double m, n, k, tflops, theoretical;
};
static const struct mamf_row sy_mamf[] = {
    {"a100-pcie", "K0004", LP_BF16, 2048, 5120, 6144, 252.9, 312},
    {"a100", "K0002", LP_BF16, 1024, 10240, 5120, 271.2, 312},
    {"gh200", "K0003", LP_BF16, 1024, 15360, 4096, 828.6, 989},
    {"gh200", "K0014", LP_FP8, 1024, 14336, 14336, 1535.0, 1979},
    {"gb200", "K0009", LP_BF16, 4096, 9728, 2048, 1822.0, 2500},
    {"gb200", "K0019", LP_FP8, 19456, 5120, 1536, 3615.6, 5000},
    {"h200", "K0005", LP_BF16, 2048, 2048, 13312, 794.5, 989}, /* K0005: "H200 is the same" */
    {"h200", "K0018", LP_FP8, 1280, 4096, 12032, 1453.4, 1979},
    {"h100-sxm", "K0005", LP_BF16, 2048, 2048, 13312, 794.5, 989},
    {"h100-sxm", "K0020", LP_FP8, 1024, 9216, 14336, 1402.6, 1979},
    {"b300", "K0006", LP_BF16, 12288, 18432, 1024, 1769.0, 2250},
    {"b300", "K0017", LP_FP8, 3072, 6144, 7168, 3353.3, 4500},
    {"b200", "K0007", LP_BF16, 1792, 16128, 3072, 1745.0, 2250},
    {"b200", "K0016", LP_FP8, 15360, 4096, 3072, 3432.5, 4500},
    {"mi355", "K0010", LP_BF16, 12288, 8192, 8192, 1565.0, 2300},
    {"mi325", "K0011", LP_BF16, 13312, 10240, 8192, 784.9, 1300},
    {"mi300", "K0012", LP_BF16, 10240, 15360, 8192, 668.4, 1300},
    {"gaudi3", "K0008", LP_BF16, 16384, 4096, 768, 1243.0, 1677},
    {"gaudi3", "K0015", LP_FP8, 16640, 1536, 3072, 1289.5, 1677},
    {"gaudi2", "K0001", LP_BF16, 14336, 15360, 2048, 418.7, 432},
    {"gaudi2", "K0013", LP_FP8, 6144, 11264, 5120, 826.5, 865},
};
/* GPUs with no MAMF row: the mean achieved fraction of the NVIDIA rows
 * (bf16: K0002 .869, K0003 .838, K0004 .811, K0005 .803, K0006 .786,
 * K0007 .776, K0009 .729; fp8: K0014 .776, K0016 .763, K0017 .745, K0018 .734,
 * K0019 .723, K0020 .709). */
#define SY_MAMF_MEAN_BF16 0.8017
#define SY_MAMF_MEAN_FP8 0.7415
/* Cap on the per-tile efficiency (a guard for rows above 98% of peak). */
#define SY_FMAX_CAP 0.98

/* ---- attention ---- */

/* FlashAttention-2 achieved fraction of the dense bf16/fp16 peak by sequence
 * length (512..16384), head dim (64, 128), causal, pass, from the FA2
 * benchmark rows of kernels.csv (batch*seq = 16384 tokens, FLOPs counted as
 * 4*b*h*s^2*d, halved when causal; fwd+bwd = 3.5x fwd):
 *   A100 fwd+bwd: K0044-K0049 (d64), K0073-K0078 (d128), K0102-K0107
 *     (d64 causal), K0131-K0136 (d128 causal), peak 312;
 *   H100 fwd+bwd: K0148-K0153, K0165-K0170, K0182-K0187, K0199-K0204;
 *   H100 fwd: K0210-K0215 (d64), K0239-K0244 (d128), K0268-K0273 (d128
 *     causal), peak 989.4.
 * Missing forward series were derived with the H100 fwd/(fwd+bwd) ratio of
 * the same (d, causal), or of d128 for d64 causal; the backward fraction is
 * then R_b = 2.5 / (3.5/R_fb - 1/R_f). "ampere" is A100's series, "hopper"
 * H100's. */
#define SY_ATTN_NS 6
static const double sy_attn_seq[SY_ATTN_NS] = {512, 1024, 2048, 4096, 8192, 16384};
/* [class][d64,d128][full,causal][fwd,bwd][seq] */
static const double sy_fa2[2][2][2][2][SY_ATTN_NS] = {
    /* ampere (A100 SXM) */
    {{{{0.555, 0.591, 0.603, 0.611, 0.614, 0.617}, {0.386, 0.459, 0.492, 0.526, 0.542, 0.545}},
      {{0.331, 0.449, 0.505, 0.543, 0.572, 0.560}, {0.266, 0.360, 0.430, 0.485, 0.513, 0.544}}},
     {{{0.603, 0.660, 0.678, 0.709, 0.712, 0.712}, {0.449, 0.521, 0.573, 0.601, 0.621, 0.629}},
      {{0.372, 0.502, 0.559, 0.602, 0.631, 0.619}, {0.300, 0.402, 0.476, 0.538, 0.566, 0.601}}}},
    /* hopper (H100 SXM) */
    {{{{0.285, 0.309, 0.321, 0.324, 0.325, 0.327}, {0.198, 0.240, 0.262, 0.280, 0.287, 0.289}},
      {{0.167, 0.228, 0.264, 0.282, 0.298, 0.293}, {0.135, 0.183, 0.225, 0.252, 0.268, 0.285}}},
     {{{0.312, 0.354, 0.366, 0.372, 0.374, 0.374}, {0.232, 0.279, 0.309, 0.315, 0.326, 0.330}},
      {{0.193, 0.263, 0.301, 0.322, 0.337, 0.339}, {0.156, 0.211, 0.256, 0.288, 0.302, 0.329}}}},
};
/* GPUs whose dense bf16/fp16 peak exceeds this use the "hopper" series:
 * FA2-style kernels reach about a third of these large peaks (H100 rows).
 * Assumption for GPUs with no FA rows (H200, B200, MI300X, ...). */
#define SY_ATTN_HOPPER_PEAK 500e12
/* Fraction floor below the measured sequence range. Assumption. */
#define SY_ATTN_FRAC_MIN 0.02
/* Older fused kernels, relative to FlashAttention-2: the measured forward +
 * backward TFLOP/s of each implementation over FlashAttention-2's at the
 * same (GPU, head dim, causal, seq) in the same benchmark (the FA2 paper's
 * figure, batch*seq = 16384 tokens). The kernel's time is FlashAttention-2's
 * divided by this ratio, in both passes (its fwd/bwd split is not measured:
 * assumption). [class][d64,d128][full,causal][seq 512..16384], TFLOP/s.
 *   FlashAttention-2: A100 K0044-K0049, K0073-K0078, K0102-K0107,
 *     K0131-K0136; H100 K0148-K0153, K0165-K0170, K0182-K0187, K0199-K0204.
 *   FlashAttention (v1): A100 K0026-K0031, K0055-K0060, K0084-K0089,
 *     K0113-K0118; H100 K0142-K0147, K0159-K0164, K0176-K0181, K0193-K0198.
 * The `triton` tables (MPT / llm-foundry's `attn_impl: triton`, the kernel
 * of their published benchmarks: flash_attn_triton.py on Triton
 * 2.0.0.dev20221202's pre-MLIR code generator, flash-attn 0.2.8's copy for
 * the A100 tables, mosaicml/examples 9fa3ceb9a, llm-foundry's copy under
 * triton_pre_mlir for the H100 ones) take FlashAttention-2's forward and
 * FlashAttention v1's backward, on every GPU, by what the kernels' code does
 * (flash-attention v0.2.8 and v1.0.9 alike): the Triton forward launches one
 * program per block of 128 query rows (`_flash_attn_forward`, grid
 * (cdiv(seqlen_q, BLOCK_M), batch * nheads)), keeps its output in registers
 * over the loop over K/V blocks, skips the blocks past the causal diagonal
 * (`end_n`) and writes the output once: FlashAttention-2's forward partition
 * (its paper, sections 3.1-3.2). v1's CUDA forward runs one thread block per
 * (batch, head, split) (`fmha_fwd_launch_template.h`, grid (b, h,
 * num_splits)) with the K/V loop outside (`fmha_fprop_kernel_1xN.h`,
 * `loop_step_idx`), reloading and storing an fp32 output accumulator
 * (`o_tmp`) every step. The kernel's docstring: "Triton forward is generally
 * faster than CUDA forward, while Triton backward is generally slower than
 * CUDA backward"; its backward (`_bwd_kernel`, K/V blocks outer, dQ by
 * atomic adds when SEQUENCE_PARALLEL) is taken at v1's speed, an upper bound
 * by that sentence (assumption: no forward + backward measurement of the
 * kernel is published). The MosaicML A100 rows imply 75-102 TFLOP/s for it
 * at s 4096-32768, the tables give 76-97 (scripts/mosaic_attention.py,
 * docs/case-studies.md section 6; not fitted). The FA2 figure's
 * "FlashAttention Triton" rows (A100 K0038-K0043, K0067-K0072, K0096-K0101,
 * K0125-K0130), which these tables took until 2026-12, time another kernel:
 * OpenAI's triton.ops.flash_attention of mid-2023 (flash-attention 4f285b35,
 * benchmarks/benchmark_causal.py, the commit that added the figure: "Triton"
 * = attention_triton); they are not used. On an H100 the pre-MLIR compiler
 * has no warpgroup MMA: the kernel runs the Ampere mma.sync path, as
 * FlashAttention v1 and -2 do, so the H100's own FA2 and v1 rows apply. The
 * H100 "Triton" forward rows K0216-K0279 (FlashAttention-3 paper) measure
 * Triton 3's fused attention with H100-specific instructions: they do not
 * apply either. */
static const double sy_fa2_fb[2][2][2][SY_ATTN_NS] = {
    {{{132, 153, 162, 171, 175, 176}, {88, 119, 140, 156, 165, 171}},
     {{151, 173, 187, 196, 201, 203}, {99, 133, 155, 173, 182, 189}}},
    {{{215, 254, 274, 288, 294, 296}, {141, 192, 232, 257, 273, 284}},
     {{248, 294, 320, 326, 335, 338}, {163, 221, 265, 294, 308, 328}}},
};
static const double sy_fa1_fb[2][2][2][SY_ATTN_NS] = {
    {{{91, 92, 104, 108, 110, 110}, {58, 70, 77, 87, 92, 97}},
     {{76, 72, 76, 80, 82, 83}, {55, 62, 69, 76, 80, 83}}},
    {{{157, 159, 161, 161, 166, 168}, {104, 123, 136, 138, 149, 156}},
     {{127, 127, 128, 131, 137, 139}, {98, 109, 108, 126, 135, 137}}},
};
/* cuDNN's fused flash attention (Transformer Engine's FusedAttention, the
 * kernel Megatron-Core runs on Hopper), relative to FlashAttention-2: the
 * forward TFLOP/s of both in one benchmark on the H100 (Shah et al. 2024,
 * FlashAttention-3, forward figure; fp16, 16k tokens; seq 512..16384):
 *   FlashAttention-2 K0210-K0215 (d64), K0239-K0244 (d128), K0268-K0273
 *     (d128 causal);
 *   cuDNN K0222-K0227 (d64), K0251-K0256 (d128), K0280-K0285 (d128
 *     causal).
 * d64 causal (no rows) takes d64's ratio times d128's causal/full ratio;
 * the backward takes the forward's ratio (no row measures cuDNN's
 * backward: assumption). Only Hopper GPUs (sm90: H100, H200) carry these
 * ratios; elsewhere the cudnn tables equal the fused ones (no measurement:
 * on Ampere Transformer Engine prefers FlashAttention-2 itself, and no
 * Blackwell row exists). [d64 full, d128 full, d128 causal][seq], TFLOP/s */
static const double sy_h100_fa2_fwd[3][SY_ATTN_NS] = {
    {282, 306, 318, 321, 322, 324}, {309, 350, 362, 368, 370, 370}, {191, 260, 298, 319, 333, 335}};
static const double sy_h100_cudnn_fwd[3][SY_ATTN_NS] = {
    {335, 373, 395, 408, 412, 413}, {497, 574, 617, 609, 600, 595}, {315, 410, 484, 518, 529, 539}};
/* GPUs with Hopper's SM (sy_h100_cudnn_fwd applies) */
static const char *const sy_hopper_gpus[] = {"h100", "h200"};
/* Query-block rows of a FlashAttention thread block (FA2: 128). */
#define SY_ATTN_BLOCK 128.0

/* Unfused attention: the score matrix (batch_heads x seq^2 elements) passes
 * through memory-bound kernels at this fraction of HBM bandwidth. Fitted to
 * the 40 "PyTorch standard attention" fwd+bwd rows (A100 K0021-K0025,
 * K0050-K0054, K0079-K0083, K0108-K0112; H100 K0137-K0141, K0154-K0158,
 * K0171-K0175, K0188-K0192): mean log error 0, rms 7.7%, max 22%. The rows
 * ran with dropout p=0 (no dropout kernel); the tables add the dropout
 * kernels of training, plain elementwise kernels, at SY_MEM_EFF (the fitted
 * factor absorbs costs of the benchmark's own kernels, not of dropout). */
#define SY_UNFUSED_PASS_EFF 0.387
/* Passes over the score matrix, in elements read+written per element:
 * fwd: causal mask add 2 (causal only), softmax 2, dropout 2.5 (read, write,
 * 1-byte mask); bwd: dropout 2.5, softmax 3 (P, dP in, dS out). */
#define SY_UNF_FWD_MASK 2.0
#define SY_UNF_FWD_SOFTMAX 2.0
#define SY_UNF_DROPOUT 2.5
#define SY_UNF_BWD_SOFTMAX 3.0
/* Layout copies of q, k, v and the output into/out of [b*h, s, d]: four
 * read+write copies of batch_heads*seq*head_dim elements per pass. */
#define SY_UNF_LAYOUT_COPIES 4.0
/* Megatron's fused softmax (megatron/fused_kernels/
 * scaled_upper_triang_masked_softmax.h, FusedScaleMaskSoftmax): one kernel,
 * a warp per row. Causal forward: it loads only the row's first i+1 scores
 * (element_index < local_seq) and writes the whole row (zeros past it):
 * on average (s+1)/2s of a pass read, one written. Causal backward: it
 * loads the output gradient and the softmax output in the causal part and
 * writes the whole input gradient. Without the mask (scaled_softmax) every
 * element is read: 2 passes forward, 3 backward. A streaming kernel: the
 * common SY_MEM_EFF (assumption; no kernels.csv row measures it). */
#define SY_FS_FWD_WRITE 1.0
#define SY_FS_BWD_WRITE 1.0

/* ---- collectives ---- */

/* Size curve eff(S) = e_inf / (1 + (S_half / S)^p), fitted (least squares
 * in log busbw) to the all_reduce_bench.py sweep of kernels.csv:
 *   intra: K0292..K0330 (even rows), 8x B200 NVLink5 900 GB/s per GPU:
 *          S_half 32.98 MB, p 0.90 (rms 13%);
 *   inter: K0297..K0331 (odd rows), 4 nodes x 8 B200, 8x EFA 50 GB/s per
 *          GPU = 400 GB/s per node: S_half 79.81 MB, p 1.00, e_inf 0.915
 *          (rms 12%). K0293 and K0295 (32-64 KiB, 100x below their
 *          neighbours' trend) are left out as outliers.
 * S_half is the message size at which the fixed latency equals the
 * transfer time, so it is scaled with the reference system's bandwidth
 * (same latency), with the bus factor of the op, and with log2(ranks)
 * relative to the calibration rank count (tree/NVLS latency; assumption). */
#define SY_COLL_INTRA_SHALF 32.98e6
#define SY_COLL_INTRA_P 0.90
#define SY_COLL_INTRA_BW_CAL 900e9
#define SY_COLL_INTRA_N_CAL 8
#define SY_COLL_INTER_SHALF 79.81e6
#define SY_COLL_INTER_P 1.00
#define SY_COLL_INTER_BW_CAL 400e9
#define SY_COLL_INTER_N_CAL 32
#define SY_COLL_INTER_EINF 0.915
/* The link latencies the two curves' fixed parts stand for (written as
 * coll_intra_latency_us / coll_inter_latency_us, which lp_coll_eff_on
 * scales by a system's own): those of the system the sweep ran on, an AWS
 * p6-b200.48xlarge (kernels.csv K0292-K0331: "B200 (AWS p6-b200.48xlarge)",
 * one node over NVLink5, four over "8x EFA v4"), i.e. the preset
 * data/systems/aws-p6-b200.json, NVLink 2.5 us and EFA 15 us. Until stop 30
 * the reference system's were written (dgx-*: InfiniBand 5 us), so an EFA
 * preset (15 us) paid the measured EFA fixed cost three times
 * (tests/unit/test_sim.c synth_latency_is_calibration_system checks
 * the preset holds these values). */
#define SY_COLL_CAL_SYSTEM "aws-p6-b200"
#define SY_COLL_INTRA_LAT_CAL 2.5e-6
#define SY_COLL_INTER_LAT_CAL 15e-6
/* NCCL release whose model extrapolates the inter-node curve in ranks
 * (coll_eff), and its CPU figures: getNetOverhead's 1 us (Intel and
 * non-x86; AMD hosts 2 us) and the Intel row of llMaxBws (assumption: the
 * profile does not know the host CPU) */
#define SY_NCCL_VERSION LP_NCCL_2_29
#define SY_NCCL_AMD_CPU false
/* Large-message bus-bandwidth fractions inside a node:
 * ring all-reduce: mean of K0341 .812, K0351 .758, K0353 .816, K0357 .817,
 * K0358 .783, K0360 .822 = 0.8015;
 * all-gather K0354 .803, reduce-scatter K0355 .806 (H200, 16 GiB);
 * all-to-all and send/recv: no row, assumed equal to all-gather. */
#define SY_COLL_INTRA_RING 0.8015
#define SY_COLL_INTRA_AG 0.8031
#define SY_COLL_INTRA_RS 0.8064
/* NVLS (NVLink SHARP) all-reduce on NVSwitch Hopper/Blackwell systems,
 * 8 GiB, NCCL default algorithm, by ranks 4..8: mean of H200 (K0332, K0334,
 * K0336, K0338, K0340, per 450 GB/s) and B200 (K0342, K0344, K0346, K0348,
 * K0350, per 900 GB/s). Fewer ranks use the ring value, more hold ranks 8.
 * The B200 size sweep (an NVLS-capable node, default algorithm) stays near
 * the ring value up to 4 GiB (K0326 .823) and jumps at 8 GiB (K0328 .932):
 * the NVLS values apply from SY_NVLS_MIN_BYTES, the ring value below. */
#define SY_NVLS_MIN_BYTES 8589934592.0
static const double sy_nvls_einf[5] = {0.7777, 0.8368, 0.9164, 0.9618, 0.9912};
/* Reference links when no system is given (stated defaults). */
#define SY_DEFAULT_INTRA_BW 450e9
#define SY_DEFAULT_INTER_BW 50e9
#define SY_DEFAULT_GPUS_PER_NODE 8

/* ---- grids ---- */

#define SY_GEMM_M_LO 64.0
#define SY_GEMM_M_N 12   /* 64 .. 131072 */
#define SY_GEMM_NK_N 11  /* 64 .. 65536 */
#define SY_ATTN_BH_N 13  /* 1 .. 4096 */
#define SY_ATTN_SEQ_N 11 /* 128 .. 131072 */
static const double sy_head_dims[] = {32, 64, 80, 96, 128, 160, 192, 256};
#define SY_MEM_N 25        /* 1 KiB .. 16 GiB */
#define SY_COLL_BYTES_N 25 /* 1 KiB .. 16 GiB */
static const double sy_ranks_intra[] = {2, 3, 4, 5, 6, 7, 8, 16, 32, 64, 72};
static const double sy_ranks_inter[] = {2,   4,   8,    16,   32,   64,   128,
                                        256, 512, 1024, 2048, 4096, 8192, 16384};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- the model ---- */

struct sy_ctx {
    const struct lp_gpu *gpu;
    int sms;
    double fmax[LP_PREC_TABLES]; /* per-tile efficiency at full waves */
    double frac[LP_PREC_TABLES]; /* MAMF achieved fraction used */
    const char *frac_src[LP_PREC_TABLES];
    int attn_class;            /* 0 ampere, 1 hopper */
    bool sm90;                 /* a Hopper GPU: cuDNN's measured speed-up applies */
    double intra_bw, inter_bw; /* reference links */
    int gpus_per_node;
    bool nvls;
};

static double prec_in_bytes(enum lp_prec p)
{
    return p == LP_FP32 ? 4.0 : p == LP_FP8 ? 1.0 : 2.0;
}

/* Seconds of a (batched) GEMM, launch excluded, with per-tile efficiency
 * fmax: the best tile shape and split-K over the GPU's SMs, each plan costed
 * as max(compute, memory) with its split-K partial sums (2 x fp32 per
 * output per extra split) added to base_bytes. base_bytes < 0: compute only
 * (the calibration's shape efficiency). */
static double gemm_plan_s(const struct sy_ctx *c, double peak, double fmax, double m, double n,
                          double k, double batch, double base_bytes)
{
    const double sms = c->sms, bw = c->gpu->mem_bw_Bps * SY_MEM_EFF;
    double best = INFINITY;
    for (int i = 0; i < COUNT(sy_tiles); i++) {
        const double tm = sy_tiles[i].tm, tn = sy_tiles[i].tn;
        const double tiles = ceil(m / tm) * ceil(n / tn) * batch;
        /* one tile of k' = k/s steps at the per-SM rate */
        for (double s = 1; s <= SY_SPLITK_MAX; s *= 2) {
            if (s > 1 && (k / s < SY_SPLITK_MIN_K || tiles * s / 2 >= sms)) break;
            const double full = ceil(tiles * s / sms), streamk = tiles * s / (sms * SY_STREAMK_EFF);
            const double waves = full < streamk ? full : streamk;
            double t = waves * 2.0 * tm * tn * (k / s + SY_GEMM_K0) /
                       (peak / sms * fmax * sy_tiles[i].eff);
            if (base_bytes >= 0) {
                const double tmem = (base_bytes + (s - 1) * m * n * 4.0 * 2.0 * batch) / bw;
                if (tmem > t) t = tmem;
            }
            if (t < best) best = t;
        }
    }
    return best;
}

static double gemm_s(const struct sy_ctx *c, enum lp_prec p, double m, double n, double k,
                     double batch)
{
    const double e_in = prec_in_bytes(p), e_out = p == LP_FP8 ? 2.0 : e_in;
    const double bytes = batch * ((m * k + k * n) * e_in + m * n * e_out);
    return SY_LAUNCH_S + gemm_plan_s(c, c->gpu->peak_flops[p], c->fmax[p], m, n, k, batch, bytes);
}

/* A streaming kernel moving `bytes` at peak fraction eff_max. */
static double stream_s(const struct sy_ctx *c, double bytes, double eff_max)
{
    return SY_LAUNCH_S + SY_MEM_LAT_S * SY_MEM_EFF / eff_max +
           bytes / (c->gpu->mem_bw_Bps * eff_max);
}

static double mem_s(const struct sy_ctx *c, double bytes)
{
    return stream_s(c, bytes, SY_MEM_EFF);
}

/* Piecewise-linear in log(seq) through the six measured points; below 512
 * the 512->1024 slope continues (floored), above 16384 the last value holds. */
static double attn_frac_seq(const double *f, double s)
{
    if (s >= sy_attn_seq[SY_ATTN_NS - 1]) return f[SY_ATTN_NS - 1];
    if (s <= sy_attn_seq[0]) {
        const double slope = log(f[1] / f[0]) / log(2.0);
        const double v = f[0] * exp(slope * log(s / sy_attn_seq[0]));
        return v > SY_ATTN_FRAC_MIN ? v : SY_ATTN_FRAC_MIN;
    }
    int i = 0;
    while (s > sy_attn_seq[i + 1])
        i++;
    const double w = log(s / sy_attn_seq[i]) / log(sy_attn_seq[i + 1] / sy_attn_seq[i]);
    return f[i] + w * (f[i + 1] - f[i]);
}

/* Fraction of peak of fused attention at (seq, head_dim): linear in log(d)
 * between 64 and 128, the 64->128 trend continued below 64, held above 128
 * (no rows beyond). */
/* The benchmark rows of sy_fa2 ran 16k tokens at model dimension 2048:
 * (16384/s) x (2048/d) x ceil(s/128) = 262144/d query blocks, 4096 (d64)
 * or 2048 (d128), on the GPU of the class (A100 108 SMs, H100 132): their
 * TFLOP/s hold that grid's last partial wave (0.998 and 0.970), which
 * fused_attn_s charges for each shape itself; the fractions are divided by
 * it (tests/unit/test_synth_rows.c: the H100 rows were 3% slower than
 * measured with the wave counted twice). */
static const int sy_attn_bench_sms[2] = {108, 132};
static double attn_bench_wave(int attn_class, double d)
{
    const double blocks = 262144.0 / d;
    const double sms = sy_attn_bench_sms[attn_class];
    return blocks / (ceil(blocks / sms) * sms);
}

static double attn_frac(const struct sy_ctx *c, bool causal, enum lp_pass pass, double s, double d)
{
    const double f64 = attn_frac_seq(sy_fa2[c->attn_class][0][causal][pass], s) /
                       attn_bench_wave(c->attn_class, 64);
    const double f128 = attn_frac_seq(sy_fa2[c->attn_class][1][causal][pass], s) /
                        attn_bench_wave(c->attn_class, 128);
    if (d >= 128) return f128;
    const double w = log(d / 64.0) / log(2.0); /* < 0 below 64 */
    const double v = f64 * exp(w * log(f128 / f64));
    return v > SY_ATTN_FRAC_MIN ? v : SY_ATTN_FRAC_MIN;
}

/* The precision attention runs in: fp8 training keeps the attention core in
 * bf16 (Transformer Engine recipe), so fp8 tables are the bf16 ones. */
static enum lp_prec attn_prec(const struct lp_gpu *g, enum lp_prec p)
{
    if (p != LP_FP8) return p;
    return g->peak_flops[LP_BF16] > 0 ? LP_BF16 : LP_FP16;
}

/* Speed of an older fused kernel relative to FlashAttention-2 at (seq,
 * head_dim): the measured ratio, linear in log(seq) and log(d) between the
 * measured points, held outside them. 1 for FlashAttention-2 itself. */
/* k[s] / ref[s] at seq s: linear in log(s) between the measured points,
 * held outside them. */
static double seq_ratio(const double *k, const double *ref, double s)
{
    double q = s < sy_attn_seq[0] ? sy_attn_seq[0] : s;
    if (q > sy_attn_seq[SY_ATTN_NS - 1]) q = sy_attn_seq[SY_ATTN_NS - 1];
    int i = 0;
    while (i < SY_ATTN_NS - 2 && q > sy_attn_seq[i + 1])
        i++;
    const double w = log(q / sy_attn_seq[i]) / log(sy_attn_seq[i + 1] / sy_attn_seq[i]);
    const double a = k[i] / ref[i], b = k[i + 1] / ref[i + 1];
    return a + w * (b - a);
}

static double attn_impl_ratio(const struct sy_ctx *c, enum lp_attn_impl impl, bool causal,
                              enum lp_pass pass, double s, double d)
{
    double r[2];
    if (impl == LP_ATTN_CUDNN) {
        if (!c->sm90) return 1.0;
        const double d128 =
            seq_ratio(sy_h100_cudnn_fwd[causal ? 2 : 1], sy_h100_fa2_fwd[causal ? 2 : 1], s);
        r[0] = seq_ratio(sy_h100_cudnn_fwd[0], sy_h100_fa2_fwd[0], s);
        if (causal) r[0] *= d128 / seq_ratio(sy_h100_cudnn_fwd[1], sy_h100_fa2_fwd[1], s);
        r[1] = d128;
    } else if (lp_attn_pass_is_v1(impl, pass)) {
        /* flash1; triton's backward (its forward is FA2's: sy_fa1_fb) */
        for (int di = 0; di < 2; di++)
            r[di] = seq_ratio(sy_fa1_fb[c->attn_class][di][causal],
                              sy_fa2_fb[c->attn_class][di][causal], s);
    } else {
        return 1.0;
    }
    double w = log((d < 64 ? 64 : d > 128 ? 128 : d) / 64.0) / log(2.0);
    return r[0] + w * (r[1] - r[0]);
}

static double fused_attn_s(const struct sy_ctx *c, enum lp_attn_impl impl, bool causal,
                           enum lp_pass pass, enum lp_prec p, double bh, double s, double d)
{
    const enum lp_prec ap = attn_prec(c->gpu, p);
    const double peak = c->gpu->peak_flops[ap];
    const double flops =
        4.0 * bh * s * s * d * (causal ? 0.5 : 1.0) * (pass == LP_PASS_BWD ? 2.5 : 1.0);
    const double blocks = bh * ceil(s / SY_ATTN_BLOCK);
    const double wave = blocks / (ceil(blocks / c->sms) * c->sms);
    const double tc = flops / (peak * attn_frac(c, causal, pass, s, d) *
                               attn_impl_ratio(c, impl, causal, pass, s, d) * wave);
    /* Q, K, V, O (fwd); Q, K, V, O, dO in and dQ, dK, dV out, dQ accumulated
     * in fp32 (bwd) */
    const double e = prec_in_bytes(ap);
    const double io = bh * s * d * e * (pass == LP_PASS_BWD ? 10.0 : 4.0);
    const double tm = io / (c->gpu->mem_bw_Bps * SY_MEM_EFF);
    return SY_LAUNCH_S + (tc > tm ? tc : tm);
}

/* Unfused attention: the GEMMs, layout copies and dropout, and the softmax
 * either as eager passes (mask, softmax at the fitted 0.387) or, with
 * Megatron's fused scale-mask-softmax (fused_sm), as one streaming pass that
 * reads only each row's causal part. */
static double unfused_attn_s(const struct sy_ctx *c, bool fused_sm, bool causal, enum lp_pass pass,
                             enum lp_prec p, double bh, double s, double d)
{
    const enum lp_prec ap = attn_prec(c->gpu, p);
    const double e = prec_in_bytes(ap);
    const double score = bh * s * s * e; /* bytes of one pass over the scores */
    const double part = causal ? (s + 1.0) / (2.0 * s) : 1.0; /* of a row the fused kernel reads */
    const double copies = SY_UNF_LAYOUT_COPIES * mem_s(c, 2.0 * bh * s * d * e);
    double t = copies;
    if (pass == LP_PASS_FWD) {
        t += gemm_s(c, ap, s, s, d, bh); /* S = Q K^T */
        if (fused_sm) {
            t += stream_s(c, (part + SY_FS_FWD_WRITE) * score, SY_MEM_EFF);
        } else {
            if (causal) t += stream_s(c, SY_UNF_FWD_MASK * score, SY_UNFUSED_PASS_EFF);
            t += stream_s(c, SY_UNF_FWD_SOFTMAX * score, SY_UNFUSED_PASS_EFF);
        }
        t += stream_s(c, SY_UNF_DROPOUT * score, SY_MEM_EFF);
        t += gemm_s(c, ap, s, d, s, bh); /* O = P V */
    } else {
        t += gemm_s(c, ap, s, s, d, bh); /* dP = dO V^T */
        t += gemm_s(c, ap, s, d, s, bh); /* dV = P^T dO */
        t += stream_s(c, SY_UNF_DROPOUT * score, SY_MEM_EFF);
        t += fused_sm ? stream_s(c, (2.0 * part + SY_FS_BWD_WRITE) * score, SY_MEM_EFF)
                      : stream_s(c, SY_UNF_BWD_SOFTMAX * score, SY_UNFUSED_PASS_EFF);
        t += 2.0 * gemm_s(c, ap, s, d, s, bh); /* dQ = dS K, dK = dS^T Q */
    }
    return t;
}

static double coll_einf(const struct sy_ctx *c, enum lp_coll op, enum lp_tier tier, double bytes,
                        double n)
{
    if (tier == LP_TIER_INTER) return SY_COLL_INTER_EINF;
    switch (op) {
    case LP_COLL_ALLREDUCE:
        if (c->nvls && n >= 4 && bytes >= SY_NVLS_MIN_BYTES) {
            const int i = n >= 8 ? 4 : (int)n - 4;
            return sy_nvls_einf[i];
        }
        return SY_COLL_INTRA_RING;
    case LP_COLL_REDUCESCATTER:
        return SY_COLL_INTRA_RS;
    default:
        return SY_COLL_INTRA_AG;
    }
}

/* ranks per node of a synthetic inter-node table's column: full
 * nodes of G GPUs from 2 x G ranks, two half-full nodes below */
static double sy_per_node_of(double G, double n)
{
    const double k = n < G * 2 ? n / 2 : G;
    return k > 1 ? k : 1;
}

static double sy_per_node(const struct sy_ctx *c, double n)
{
    return sy_per_node_of(c->gpus_per_node, n);
}

void lp_synth_coll_cal(int gpus_per_node, struct lp_coll_cal *cal)
{
    const double k = sy_per_node_of(gpus_per_node, SY_COLL_INTER_N_CAL);
    *cal = (struct lp_coll_cal){.ranks = SY_COLL_INTER_N_CAL,
                                .nodes = (int)lround(SY_COLL_INTER_N_CAL / k),
                                .nccl_version = SY_NCCL_VERSION,
                                .amd_cpu = SY_NCCL_AMD_CPU};
}

/* the size curve at n ranks with synth's own rank scaling: what the intra
 * tier, the all-to-all and send/recv use at every rank count; across nodes
 * the all-reduce, all-gather and reduce-scatter take it at the calibration
 * rank count only and scale it with NCCL's model (coll_eff) */
static double coll_eff_curve(const struct sy_ctx *c, enum lp_coll op, enum lp_tier tier,
                             double bytes, double n)
{
    const bool intra = tier == LP_TIER_INTRA;
    const double e_inf = coll_einf(c, op, tier, bytes, n);
    const double n_cal = intra ? SY_COLL_INTRA_N_CAL : SY_COLL_INTER_N_CAL;
    /* nominal bandwidth the fraction is relative to: per GPU inside a node;
     * per node (ranks per node x per-GPU NIC bandwidth) across nodes, with
     * full nodes assumed (see docs/profile-format.md) */
    const double per_node = sy_per_node(c, n);
    const double bw = intra ? c->intra_bw : c->inter_bw * per_node;
    const double bw_cal = intra ? SY_COLL_INTRA_BW_CAL : SY_COLL_INTER_BW_CAL;
    /* latency relative to the calibration's: log2(ranks) for all-reduce
     * (trees/NVLS at scale) and inside a node; across nodes all-gather and
     * reduce-scatter are rings (NCCL has no tree for them), n-1 steps
     * against the calibration all-reduce's 2(n_cal-1). Inside a node they
     * are rings too: half the steps of the ring all-reduce at the same rank
     * count (NCCL's ring all-reduce is a reduce-scatter then an all-gather),
     * so half its latency at the same scaling in ranks. */
    const bool ring = !intra && (op == LP_COLL_ALLGATHER || op == LP_COLL_REDUCESCATTER);
    double lat = ring ? (n - 1.0) / (2.0 * (n_cal - 1.0)) : log2(n > 2 ? n : 2) / log2(n_cal);
    if (intra && (op == LP_COLL_ALLGATHER || op == LP_COLL_REDUCESCATTER)) lat *= 0.5;
    double shalf =
        (intra ? SY_COLL_INTRA_SHALF : SY_COLL_INTER_SHALF) * (bw / bw_cal) *
        (lp_coll_bus_factor(LP_COLL_ALLREDUCE, (int)n_cal) / lp_coll_bus_factor(op, (int)n)) * lat;
    const double p = intra ? SY_COLL_INTRA_P : SY_COLL_INTER_P;
    if (!intra && op == LP_COLL_ALLTOALL) {
        /* An all-to-all across nodes is no ring: each GPU sends the
         * (n - k) / n of its buffer bound for other nodes through its own
         * NIC (NCCL alltoall: a send/recv pair per peer), so its bus
         * bandwidth is one NIC's times (n - 1) / (n - k), a fraction
         * (n - 1) / ((n - k) k) of the k-NIC nominal, and its latency
         * half-point scales with one NIC's bandwidth */
        const double k = per_node;
        const double share = n > k ? (n - 1.0) / ((n - k) * k) : 1.0;
        return fmin(e_inf, e_inf * share) / (1.0 + pow(shalf / k / bytes, p));
    }
    return e_inf / (1.0 + pow(shalf / bytes, p));
}

/* seconds of a collective at busbw fraction eff of the nominal bandwidth */
static double sy_coll_s(const struct sy_ctx *c, enum lp_coll op, double bytes, double n, double eff)
{
    return bytes * lp_coll_bus_factor(op, (int)n) / (eff * c->inter_bw * sy_per_node(c, n));
}

/* Across nodes the measured curve holds at its own rank count (32: 4 nodes
 * of 8); at other rank counts an all-reduce, all-gather or reduce-scatter
 * takes the time NCCL's own model adds or saves (ncclTopoTuneModel /
 * ncclTopoGetAlgoTime): t(S, n) = t(S, n_cal) + T_NCCL(S, n) - T_NCCL(S,
 * n_cal). That carries NCCL's ring latency (the n - N steps inside a node
 * at NVLink latency, the N - 1 between nodes at network latency), its tree
 * for all-reduce (log2 nodes), and its switch among LL, LL128 and Simple as
 * the message shrinks per rank; what the measurement holds beyond NCCL's
 * prediction at n_cal (its network's latency, the benchmark's host time)
 * stays as measured. Returns the busbw fraction. */
static double coll_eff(const struct sy_ctx *c, enum lp_coll op, enum lp_tier tier, double bytes,
                       double n)
{
    const bool nccl_op =
        op == LP_COLL_ALLREDUCE || op == LP_COLL_ALLGATHER || op == LP_COLL_REDUCESCATTER;
    if (tier == LP_TIER_INTRA || !nccl_op) return coll_eff_curve(c, op, tier, bytes, n);
    const double n_cal = SY_COLL_INTER_N_CAL;
    const double at_cal = coll_eff_curve(c, op, tier, bytes, n_cal);
    if (n == n_cal) return at_cal;
    struct lp_coll_cal cal;
    lp_synth_coll_cal(c->gpus_per_node, &cal);
    const double k = sy_per_node(c, n);
    const double t = lp_nccl_rescale_s(&cal, op, bytes, sy_coll_s(c, op, bytes, n_cal, at_cal),
                                       c->inter_bw * sy_per_node(c, n_cal), (int)n,
                                       (int)lround(n / k), c->inter_bw * k);
    return bytes * lp_coll_bus_factor(op, (int)n) / (t * c->inter_bw * sy_per_node(c, n));
}

/* ---- calibration ---- */

static bool name_has(const char *name, const char *pat)
{
    char low[LP_NAME_LEN];
    size_t i = 0;
    for (; name[i] && i + 1 < sizeof(low); i++)
        low[i] = (char)tolower((unsigned char)name[i]);
    low[i] = '\0';
    return strstr(low, pat) != NULL;
}

static const struct mamf_row *mamf_find(const char *gpu, enum lp_prec p)
{
    const enum lp_prec want = p == LP_FP8 ? LP_FP8 : LP_BF16;
    /* the first matching pattern decides the GPU family */
    const char *family = NULL;
    for (int i = 0; i < COUNT(sy_mamf); i++) {
        if (family && strcmp(family, sy_mamf[i].pattern) != 0) continue;
        if (!family && !name_has(gpu, sy_mamf[i].pattern)) continue;
        family = sy_mamf[i].pattern;
        if (sy_mamf[i].prec == want) return &sy_mamf[i];
    }
    return NULL;
}

/* The MAMF fraction is the most any shape reaches, so it is the model's
 * per-tile efficiency at full waves and infinite k (f_max = frac): no shape
 * of the table exceeds the measured maximum. At the row's own shape the
 * model then lies below the row by its wave and k-fill terms (recorded in
 * the provenance: e.g. A100 K0002 3.6%, H100 K0005 4.0%). */
static void calibrate_gemm(struct sy_ctx *c, enum lp_prec p, char *src, size_t len)
{
    const double peak = c->gpu->peak_flops[p];
    const struct mamf_row *r = mamf_find(c->gpu->name, p);
    double frac;
    c->fmax[p] = 1.0;
    const struct mamf_row *r16 = p == LP_FP8 ? mamf_find(c->gpu->name, LP_BF16) : NULL;
    if (!r && r16) {
        /* fp8 without an fp8 row but with the GPU's own bf16 row (MI300X):
         * its bf16 fraction, not other vendors' fp8 mean */
        frac = r16->tflops / r16->theoretical;
        snprintf(src, len, "no fp8 MAMF row for %s: its bf16 row %s", c->gpu->name, r16->row);
    } else if (!r && p == LP_FP8) {
        frac = SY_MAMF_MEAN_FP8;
        snprintf(src, len, "no fp8 MAMF row for %s: mean of NVIDIA fp8 rows K0014,K0016-K0020",
                 c->gpu->name);
    } else if (!r) {
        frac = SY_MAMF_MEAN_BF16;
        snprintf(src, len, "no MAMF row for %s: mean of NVIDIA bf16 rows K0002-K0007,K0009",
                 c->gpu->name);
    } else {
        frac = r->tflops / r->theoretical;
        const double t1 = gemm_plan_s(c, peak, 1.0, r->m, r->n, r->k, 1, -1);
        const double shape = 2.0 * r->m * r->n * r->k / (t1 * peak);
        snprintf(src, len,
                 "%s: %.1f of %.0f TFLOP/s at %.0fx%.0fx%.0f%s; model there %.1f%% lower "
                 "(waves, k fill)",
                 r->row, r->tflops, r->theoretical, r->m, r->n, r->k,
                 p == LP_BF16 || p == LP_FP8 ? "" : " (bf16 row)", 100.0 * (1.0 - shape));
    }
    c->fmax[p] = frac > SY_FMAX_CAP ? SY_FMAX_CAP : frac;
    c->frac[p] = frac;
}

/* ---- building tables ---- */

static void fill_geom(double *a, int n, double lo, double factor)
{
    for (int i = 0; i < n; i++)
        a[i] = lo * pow(factor, i);
}

static void set_names(struct lp_table *t, const char *const *names)
{
    for (int d = 0; d < t->ndim; d++)
        snprintf(t->axis_name[d], sizeof(t->axis_name[d]), "%s", names[d]);
}

static int build_gemm(const struct sy_ctx *c, struct lp_table *t, enum lp_prec p,
                      struct lp_err *err)
{
    static const char *const names[] = {"m", "n", "k"};
    const int dims[3] = {SY_GEMM_M_N, SY_GEMM_NK_N, SY_GEMM_NK_N};
    LP_TRY(err, lp_table_alloc(t, 3, dims, false, err));
    set_names(t, names);
    fill_geom(t->axis[0], dims[0], SY_GEMM_M_LO, 2);
    fill_geom(t->axis[1], dims[1], SY_GEMM_M_LO, 2);
    fill_geom(t->axis[2], dims[2], SY_GEMM_M_LO, 2);
    size_t o = 0;
    for (int i = 0; i < dims[0]; i++)
        for (int j = 0; j < dims[1]; j++)
            for (int l = 0; l < dims[2]; l++)
                t->value[o++] = gemm_s(c, p, t->axis[0][i], t->axis[1][j], t->axis[2][l], 1);
    return LP_OK;
}

static int build_attn(const struct sy_ctx *c, struct lp_table *t, enum lp_attn_impl impl,
                      bool causal, enum lp_pass pass, enum lp_prec p, struct lp_err *err)
{
    static const char *const names[] = {"batch_heads", "seq", "head_dim"};
    const int dims[3] = {SY_ATTN_BH_N, SY_ATTN_SEQ_N, COUNT(sy_head_dims)};
    LP_TRY(err, lp_table_alloc(t, 3, dims, false, err));
    set_names(t, names);
    fill_geom(t->axis[0], dims[0], 1, 2);
    fill_geom(t->axis[1], dims[1], 128, 2);
    memcpy(t->axis[2], sy_head_dims, sizeof(sy_head_dims));
    size_t o = 0;
    for (int i = 0; i < dims[0]; i++)
        for (int j = 0; j < dims[1]; j++)
            for (int l = 0; l < dims[2]; l++) {
                const double bh = t->axis[0][i], s = t->axis[1][j], d = t->axis[2][l];
                t->value[o++] = impl == LP_ATTN_UNFUSED
                                    ? unfused_attn_s(c, false, causal, pass, p, bh, s, d)
                                : impl == LP_ATTN_UNFUSED_FS
                                    ? unfused_attn_s(c, true, causal, pass, p, bh, s, d)
                                    : fused_attn_s(c, impl, causal, pass, p, bh, s, d);
            }
    return LP_OK;
}

static int build_mem(const struct sy_ctx *c, struct lp_table *t, struct lp_err *err)
{
    static const char *const names[] = {"bytes"};
    const int dims[1] = {SY_MEM_N};
    LP_TRY(err, lp_table_alloc(t, 1, dims, false, err));
    set_names(t, names);
    fill_geom(t->axis[0], dims[0], 1024, 2);
    for (int i = 0; i < dims[0]; i++)
        t->value[i] = mem_s(c, t->axis[0][i]);
    return LP_OK;
}

static int build_coll(const struct sy_ctx *c, struct lp_table *t, enum lp_coll op,
                      enum lp_tier tier, struct lp_err *err)
{
    static const char *const names[] = {"msg_bytes", "ranks"};
    const double *ranks = tier == LP_TIER_INTRA ? sy_ranks_intra : sy_ranks_inter;
    const int nr = tier == LP_TIER_INTRA ? COUNT(sy_ranks_intra) : COUNT(sy_ranks_inter);
    const int dims[2] = {SY_COLL_BYTES_N, nr};
    LP_TRY(err, lp_table_alloc(t, 2, dims, false, err));
    set_names(t, names);
    fill_geom(t->axis[0], dims[0], 1024, 2);
    memcpy(t->axis[1], ranks, (size_t)nr * sizeof(double));
    size_t o = 0;
    for (int i = 0; i < dims[0]; i++)
        for (int j = 0; j < nr; j++, o++) {
            t->value[o] = coll_eff(c, op, tier, t->axis[0][i], ranks[j]);
            /* a larger buffer never finishes sooner (the time S / eff does
             * not fall with S): where NCCL's protocol switch at n and at
             * n_cal would make it (coll_eff), the smaller buffer's time */
            if (i > 0) t->value[o] = fmin(t->value[o], t->value[o - (size_t)nr] * 2.0);
        }
    return LP_OK;
}

/* ---- provenance ---- */

static int prov(struct lp_profile *p, struct lp_err *err, const char *key, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static int prov(struct lp_profile *p, struct lp_err *err, const char *key, const char *fmt, ...)
{
    char v[LP_PROV_VALUE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof(v), fmt, ap);
    va_end(ap);
    return lp_profile_add_prov(p, key, v, err);
}

static int add_provenance(const struct sy_ctx *c, const struct lp_system *ref, struct lp_profile *p,
                          char src[][LP_PROV_VALUE], struct lp_err *err)
{
    LP_TRY(err, prov(p, err, "model",
                     "llmplan analytical profile (synth.c), calibrated only on "
                     "validation/kernels.csv; docs/profile-format.md"));
    LP_TRY(err, prov(p, err, "gpu_source", "%.200s", c->gpu->source[0] ? c->gpu->source : "-"));
    LP_TRY(err, prov(p, err, "launch_s_source", "%g (assumption: back-to-back kernel start gap)",
                     SY_LAUNCH_S));
    LP_TRY(err, prov(p, err, "mem_eff", "%.2f of HBM bandwidth (assumption, no kernels.csv row)",
                     SY_MEM_EFF));
    LP_TRY(err, prov(p, err, "mem_latency_s",
                     "%g: eff(B) = %.2f*B/(B + %.2f*bw*lat) (assumption: DRAM latency + tail)",
                     SY_MEM_LAT_S, SY_MEM_EFF, SY_MEM_EFF));
    LP_TRY(err, prov(p, err, "gemm_model",
                     "launch + max(waves*2*tm*tn*(k/s+k0)/(peak/sms*f_max*tile_eff), "
                     "bytes/(%.2f*bw)); tiles 128x256, 256x128 (1.0), 128x128 (0.9, assumption); "
                     "split-K s<=%d; stream-K floor %.2f (assumption)",
                     SY_MEM_EFF, SY_SPLITK_MAX, SY_STREAMK_EFF));
    LP_TRY(err, prov(p, err, "gemm_k0", "%.0f (assumption: tile prologue/epilogue)", SY_GEMM_K0));
    LP_TRY(err, prov(p, err, "gemm_sms", "%d", c->sms));
    for (int q = 0; q < LP_PREC_TABLES; q++) {
        if (c->gpu->peak_flops[q] <= 0) continue;
        char key[LP_PROV_KEY];
        snprintf(key, sizeof(key), "gemm_max_frac_%s", lp_prec_name((enum lp_prec)q));
        LP_TRY(err, prov(p, err, key, "%.4f; %s", c->frac[q], src[q]));
    }
    LP_TRY(err, prov(p, err, "attn_fused",
                     "FlashAttention-2 %s series (%s), fraction of peak by seq and head_dim, "
                     "divided by the benchmark's own wave factor (%.3f d64, %.3f d128 on %d "
                     "SMs); fp8 tables = bf16 (attention core in bf16); no fp32 fused tables",
                     c->attn_class ? "hopper" : "ampere",
                     c->attn_class ? "H100 K0148-K0204, K0210-K0273"
                                   : "A100 K0044-K0136; fwd via H100 fwd/fwd+bwd ratios",
                     attn_bench_wave(c->attn_class, 64), attn_bench_wave(c->attn_class, 128),
                     sy_attn_bench_sms[c->attn_class]));
    LP_TRY(err, prov(p, err, "attn_flash1",
                     "FlashAttention-2 tables x measured FA1/FA2 fwd+bwd TFLOP/s ratio (%s)",
                     c->attn_class ? "H100 K0142-K0198 / K0148-K0204"
                                   : "A100 K0026-K0118 / K0044-K0136"));
    LP_TRY(err, prov(p, err, "attn_triton",
                     "forward = the fused (FlashAttention-2) forward, backward = the flash1 "
                     "backward: MPT's flash_attn_triton.py (pre-MLIR Triton, mma.sync%s) runs "
                     "FlashAttention-2's forward partition (a program per query block, K/V "
                     "loop inside); its docstring puts its backward below v1's; no "
                     "measurement of its own (the FA2 figure's Triton rows K0038-K0130 time "
                     "triton.ops, another kernel)",
                     c->attn_class ? " on Hopper too" : ""));
    LP_TRY(err, prov(p, err, "attn_cudnn", "%s",
                     c->sm90 ? "FlashAttention-2 tables x measured cuDNN/FA2 forward TFLOP/s "
                               "ratio on the H100 (K0222-K0285 / K0210-K0273), backward "
                               "at the forward's ratio (assumption)"
                             : "= the fused tables (no measured cuDNN row for this GPU)"));
    LP_TRY(err, prov(p, err, "attn_class_rule",
                     "hopper series when dense bf16/fp16 peak > %.0f TFLOP/s (assumption)",
                     SY_ATTN_HOPPER_PEAK / 1e12));
    LP_TRY(err,
           prov(p, err, "attn_unfused",
                "2 batched GEMMs fwd, 4 bwd (gemm model) + score passes fwd %.1f(+%.1f causal) "
                "bwd %.1f at %.3f of HBM bw + %.0f layout copies + dropout %.1f per pass at "
                "%.2f (included: do not add attention dropout)",
                SY_UNF_FWD_SOFTMAX, SY_UNF_FWD_MASK, SY_UNF_BWD_SOFTMAX, SY_UNFUSED_PASS_EFF,
                SY_UNF_LAYOUT_COPIES, SY_UNF_DROPOUT, SY_MEM_EFF));
    LP_TRY(err, prov(p, err, "attn_unfused_fs",
                     "unfused + Megatron scaled_upper_triang_masked_softmax: one pass at "
                     "%.2f of HBM bw, fwd reads (s+1)/2s of a row (causal; 1 unmasked), "
                     "writes %.0f; bwd reads 2x that, writes %.0f",
                     SY_MEM_EFF, SY_FS_FWD_WRITE, SY_FS_BWD_WRITE));
    LP_TRY(err, prov(p, err, "attn_unfused_pass_eff",
                     "%.3f fitted to PyTorch standard attention fwd+bwd rows K0021-K0192 (40 rows, "
                     "rms 7.7%%, max 22%%)",
                     SY_UNFUSED_PASS_EFF));
    LP_TRY(err, prov(p, err, "coll_intra_curve",
                     "e_inf/(1+(S_half/S)^%.2f), S_half %.4g B at 900 GB/s, 8 ranks (fit to "
                     "K0292-K0330 even)",
                     SY_COLL_INTRA_P, SY_COLL_INTRA_SHALF));
    LP_TRY(err, prov(p, err, "coll_inter_curve",
                     "e_inf %.3f, S_half %.4g B at 400 GB/s per node, 32 ranks, p %.2f (fit to "
                     "K0297-K0331 odd)",
                     SY_COLL_INTER_EINF, SY_COLL_INTER_SHALF, SY_COLL_INTER_P));
    LP_TRY(err, prov(p, err, "coll_intra_einf",
                     "ring allreduce %.4f (K0341,K0351,K0353,K0357,K0358,K0360); allgather %.4f "
                     "(K0354); reducescatter %.4f (K0355); alltoall, sendrecv = allgather "
                     "(assumption)",
                     SY_COLL_INTRA_RING, SY_COLL_INTRA_AG, SY_COLL_INTRA_RS));
    LP_TRY(err, prov(p, err, "coll_nvls",
                     "%s; NVLS allreduce e_inf by ranks 4..8 from 8 GiB: %.3f %.3f %.3f %.3f %.3f "
                     "(K0332-K0350 default-algorithm rows; K0326/K0328 for the threshold)",
                     c->nvls ? "yes" : "no", sy_nvls_einf[0], sy_nvls_einf[1], sy_nvls_einf[2],
                     sy_nvls_einf[3], sy_nvls_einf[4]));
    LP_TRY(err, prov(p, err, "coll_scaling",
                     "S_half scaled by ref bw / calibration bw, by bus factor, and by "
                     "log2(ranks)/log2(ranks_cal), or for inter-node all-gather and "
                     "reduce-scatter (rings) by (ranks-1)/(2(ranks_cal-1)); intra-node "
                     "all-gather and reduce-scatter by half of log2(ranks)/log2(ranks_cal) "
                     "(assumption: the calibration all-reduce a ring, 2(n-1) steps against "
                     "their n-1); across nodes all-reduce, all-gather and reduce-scatter are "
                     "that curve at ranks_cal times NCCL %s's predicted busbw at ranks over "
                     "its busbw at ranks_cal (src/graph/tuning.cc ncclTopoTuneModel, "
                     "ncclTopoGetAlgoTime: ring/tree x LL/LL128/Simple, full nodes, %s CPU)",
                     lp_nccl_version_name(SY_NCCL_VERSION), SY_NCCL_AMD_CPU ? "AMD" : "Intel"));
    LP_TRY(err, prov(p, err, "ref_system", "%s",
                     ref ? ref->name
                         : "none: fixed defaults intra 450 GB/s, inter 50 GB/s per "
                           "GPU, 8 GPUs per node"));
    LP_TRY(err, prov(p, err, "coll_intra_bw_GBps", "%g", c->intra_bw / 1e9));
    LP_TRY(err, prov(p, err, "coll_inter_bw_GBps", "%g", c->inter_bw / 1e9));
    /* the latencies S_half stands for (lp_coll_eff_on): the calibration
     * system's, whatever the reference system (its bandwidth only scales
     * S_half above) */
    LP_TRY(err, prov(p, err, "coll_intra_latency_us", "%g", SY_COLL_INTRA_LAT_CAL * 1e6));
    LP_TRY(err, prov(p, err, "coll_inter_latency_us", "%g", SY_COLL_INTER_LAT_CAL * 1e6));
    LP_TRY(err, prov(p, err, "coll_latency_system", "%s (the sweep K0292-K0331 ran on it)",
                     SY_COLL_CAL_SYSTEM));
    LP_TRY(err, prov(p, err, "coll_gpus_per_node", "%d", c->gpus_per_node));
    LP_TRY(err, prov(p, err, "coll_inter_norm",
                     "inter fractions are busbw / (ranks per node x coll_inter_bw_GBps), full "
                     "nodes of coll_gpus_per_node ranks"));
    return LP_OK;
}

/* ---- entry ---- */

int lp_profile_synth(const struct lp_gpu *gpu, const struct lp_system *ref_system,
                     struct lp_profile **out, struct lp_err *err)
{
    *out = NULL;
    if (!gpu || !gpu->name[0]) LP_FAIL(err, LP_EINVAL, "profile synth: no GPU given");
    if (!(gpu->mem_bw_Bps > 0))
        LP_FAIL(err, LP_EINVAL, "profile synth: GPU %s has no memory bandwidth", gpu->name);
    bool any = false;
    for (int q = 0; q < LP_PREC_TABLES; q++)
        any |= gpu->peak_flops[q] > 0;
    if (!any) LP_FAIL(err, LP_EINVAL, "profile synth: GPU %s has no tensor peak", gpu->name);

    struct sy_ctx c = {0};
    c.gpu = gpu;
    c.sms = gpu->sms > 0 ? gpu->sms : 108; /* A100's count if the preset has none */
    const double half_peak =
        gpu->peak_flops[LP_BF16] > 0 ? gpu->peak_flops[LP_BF16] : gpu->peak_flops[LP_FP16];
    c.attn_class = half_peak > SY_ATTN_HOPPER_PEAK ? 1 : 0;
    for (int i = 0; i < COUNT(sy_hopper_gpus); i++)
        c.sm90 |= name_has(gpu->name, sy_hopper_gpus[i]);
    if (ref_system) {
        c.intra_bw = ref_system->intra.bw_Bps;
        c.inter_bw = ref_system->inter.bw_Bps;
        c.gpus_per_node = ref_system->gpus_per_node;
    }
    if (!(c.intra_bw > 0)) c.intra_bw = SY_DEFAULT_INTRA_BW;
    if (!(c.inter_bw > 0)) c.inter_bw = SY_DEFAULT_INTER_BW;
    if (c.gpus_per_node < 1) c.gpus_per_node = SY_DEFAULT_GPUS_PER_NODE;
    /* NVLS: NVSwitch systems of Hopper/Blackwell GPUs (NVLink4+, >= 400 GB/s) */
    static const char *const nvls_gpus[] = {"h100", "h200", "b200", "b300"};
    for (int i = 0; i < COUNT(nvls_gpus); i++)
        c.nvls |= name_has(gpu->name, nvls_gpus[i]);
    c.nvls = c.nvls && !name_has(gpu->name, "pcie") && c.intra_bw >= 400e9;

    char src[LP_PREC_TABLES][LP_PROV_VALUE];
    memset(src, 0, sizeof(src));
    for (int q = 0; q < LP_PREC_TABLES; q++)
        if (gpu->peak_flops[q] > 0) calibrate_gemm(&c, (enum lp_prec)q, src[q], sizeof(src[q]));

    struct lp_profile *p = NULL;
    LP_TRY(err, lp_profile_create(&p, err));
    int rc = LP_OK;
    snprintf(p->gpu, sizeof(p->gpu), "%s", gpu->name);
    snprintf(p->source, sizeof(p->source), "analytical");
    p->launch_s = SY_LAUNCH_S;

    for (int q = 0; q < LP_PREC_TABLES; q++) {
        const enum lp_prec pr = (enum lp_prec)q;
        if (gpu->peak_flops[q] <= 0) continue;
        for (int l = 0; l < LP_GEMM_LAYOUT_COUNT; l++)
            LP_TRY_GOTO(err, rc, build_gemm(&c, &p->gemm[l][q], pr, err), fail);
        const enum lp_prec ap = attn_prec(gpu, pr);
        if (gpu->peak_flops[ap] <= 0) continue;
        for (int im = 0; im < LP_ATTN_IMPL_COUNT; im++) {
            /* FlashAttention has no fp32 */
            if (im != LP_ATTN_UNFUSED && im != LP_ATTN_UNFUSED_FS && pr == LP_FP32) continue;
            for (int cz = 0; cz < 2; cz++)
                for (int ps = 0; ps < LP_PASS_COUNT; ps++)
                    LP_TRY_GOTO(err, rc,
                                build_attn(&c, &p->attn[im][cz][ps][q], (enum lp_attn_impl)im,
                                           cz != 0, (enum lp_pass)ps, pr, err),
                                fail);
        }
    }
    for (int k = 0; k < LP_MEM_KIND_COUNT; k++)
        LP_TRY_GOTO(err, rc, build_mem(&c, &p->mem[k], err), fail);
    for (int op = 0; op < LP_COLL_COUNT; op++)
        for (int t = 0; t < LP_TIER_COUNT; t++)
            LP_TRY_GOTO(err, rc,
                        build_coll(&c, &p->coll[op][t], (enum lp_coll)op, (enum lp_tier)t, err),
                        fail);
    LP_TRY_GOTO(err, rc, add_provenance(&c, ref_system, p, src, err), fail);
    LP_TRY_GOTO(err, rc, lp_profile_prepare(p, err), fail);
    p->checksum = lp_profile_checksum(p);
    *out = p;
    return LP_OK;
fail:
    lp_profile_destroy(&p);
    return rc;
}
