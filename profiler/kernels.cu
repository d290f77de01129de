// The CUDA kernels llmplan-profile times: the memory-bound operators of a
// transformer layer (written in the usual one-pass form of Megatron-LM /
// Apex / Transformer Engine kernels, bf16 I/O with fp32 math), the softmax
// and dropout of unfused attention, and a random fill for inputs (tensor-core
// timings depend on the data: zeros would flatter them).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <stdint.h>

#include "llmplan/config.h"
#include "llmplan/profile.h"
#include "prof_gpu.h"

namespace
{

typedef __nv_bfloat16 bf16;

__device__ __forceinline__ uint32_t hash32(uint32_t x)
{
    // lowbias32 (C. Wellons): a cheap counter-based generator, enough for
    // dropout masks and fills whose statistics do not matter beyond density.
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

__device__ __forceinline__ float uniform(uint32_t seed, size_t i)
{
    return (hash32(seed ^ hash32((uint32_t)i ^ (uint32_t)(i >> 32) * 0x9e3779b9U)) >> 8) *
           (1.0f / 16777216.0f);
}

template <typename T> __device__ __forceinline__ float to_f(T x);
template <> __device__ __forceinline__ float to_f<bf16>(bf16 x)
{
    return __bfloat162float(x);
}
template <> __device__ __forceinline__ float to_f<__half>(__half x)
{
    return __half2float(x);
}
template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ bf16 from_f<bf16>(float x)
{
    return __float2bfloat16(x);
}
template <> __device__ __forceinline__ __half from_f<__half>(float x)
{
    return __float2half(x);
}

unsigned grid_for(size_t n, unsigned block)
{
    size_t g = (n + block - 1) / block;
    if (g > 65535u * 32u) g = 65535u * 32u; // grid-stride loops cover the rest
    return (unsigned)(g ? g : 1);
}

int launched()
{
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

// ---- fill ----

__global__ void fill_kernel(void *p, size_t n, int dtype, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = 2.0f * uniform(seed, i) - 1.0f;
        switch (dtype) {
        case LP_FP32:
            ((float *)p)[i] = v;
            break;
        case LP_FP16:
            ((__half *)p)[i] = __float2half(v);
            break;
        case LP_BF16:
            ((bf16 *)p)[i] = __float2bfloat16(v);
            break;
        default:
            ((__nv_fp8_e4m3 *)p)[i] = __nv_fp8_e4m3(v);
            break;
        }
    }
}

// ---- memory-bound kernels (bf16 unless stated) ----

// One block per row; blockDim.x threads stride over the columns. Two-pass
// statistics from registers would need the row cached; these kernels read the
// row once for statistics and once to normalise (the second read usually hits
// L1/L2, as in Apex's layer_norm_cuda for rows of a few thousand).
__device__ float block_sum(float v, float *sh)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    int w = threadIdx.x >> 5, l = threadIdx.x & 31;
    __syncthreads();
    if (l == 0) sh[w] = v;
    __syncthreads();
    int nw = (blockDim.x + 31) >> 5;
    v = (int)threadIdx.x < nw ? sh[threadIdx.x] : 0.0f;
    if (w == 0)
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) sh[32] = v;
    __syncthreads();
    return sh[32];
}

__device__ float block_max(float v, float *sh)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    int w = threadIdx.x >> 5, l = threadIdx.x & 31;
    __syncthreads();
    if (l == 0) sh[w] = v;
    __syncthreads();
    int nw = (blockDim.x + 31) >> 5;
    v = (int)threadIdx.x < nw ? sh[threadIdx.x] : -INFINITY;
    if (w == 0)
        for (int o = 16; o > 0; o >>= 1)
            v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (threadIdx.x == 0) sh[32] = v;
    __syncthreads();
    return sh[32];
}

__global__ void layernorm_kernel(const bf16 *x, const bf16 *gamma, const bf16 *beta, bf16 *y,
                                 float *stats, size_t cols, int rms)
{
    __shared__ float sh[33];
    size_t row = blockIdx.x;
    const bf16 *xr = x + row * cols;
    float s = 0, s2 = 0;
    for (size_t j = threadIdx.x; j < cols; j += blockDim.x) {
        float v = __bfloat162float(xr[j]);
        s += v;
        s2 += v * v;
    }
    float mean = rms ? 0.0f : block_sum(s, sh) / (float)cols;
    float var = block_sum(s2, sh) / (float)cols - mean * mean;
    float rstd = rsqrtf(var + 1e-5f);
    for (size_t j = threadIdx.x; j < cols; j += blockDim.x) {
        float v = (__bfloat162float(xr[j]) - mean) * rstd * __bfloat162float(gamma[j]);
        if (!rms) v += __bfloat162float(beta[j]);
        y[row * cols + j] = __float2bfloat16(v);
    }
    if (threadIdx.x == 0) {
        stats[2 * row] = mean;
        stats[2 * row + 1] = rstd;
    }
}

__global__ void gelu_kernel(const bf16 *x, bf16 *y, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = __bfloat162float(x[i]);
        // tanh approximation (Hendrycks & Gimpel 2016), as Megatron's bias_gelu
        float t = tanhf(0.7978845608f * (v + 0.044715f * v * v * v));
        y[i] = __float2bfloat16(0.5f * v * (1.0f + t));
    }
}

__global__ void swiglu_kernel(const bf16 *gate_up, bf16 *y, size_t rows, size_t cols)
{
    size_t n = rows * cols;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / cols, j = i - r * cols;
        float g = __bfloat162float(gate_up[r * 2 * cols + j]);
        float u = __bfloat162float(gate_up[r * 2 * cols + cols + j]);
        y[i] = __float2bfloat16(g / (1.0f + __expf(-g)) * u);
    }
}

template <typename T>
__global__ void softmax_kernel(const T *in, T *out, size_t cols, size_t seq, int causal)
{
    __shared__ float sh[33];
    size_t row = blockIdx.x;
    // causal: query position = row within its head's seq x seq block
    size_t limit = causal ? (row % seq) + 1 : cols;
    const T *xr = in + row * cols;
    float m = -INFINITY;
    for (size_t j = threadIdx.x; j < limit; j += blockDim.x)
        m = fmaxf(m, to_f(xr[j]));
    m = block_max(m, sh);
    float s = 0;
    for (size_t j = threadIdx.x; j < limit; j += blockDim.x)
        s += __expf(to_f(xr[j]) - m);
    s = block_sum(s, sh);
    float inv = 1.0f / s;
    for (size_t j = threadIdx.x; j < cols; j += blockDim.x)
        out[row * cols + j] = from_f<T>(j < limit ? __expf(to_f(xr[j]) - m) * inv : 0.0f);
}

// causal: like Megatron's fused kernel, reads P and dP only in the row's
// causal part (P is zero past it) and writes the whole row
template <typename T>
__global__ void softmax_bwd_kernel(const T *p, const T *dp, T *ds, size_t cols, size_t seq,
                                   int causal)
{
    __shared__ float sh[33];
    size_t row = blockIdx.x;
    size_t limit = causal ? (row % seq) + 1 : cols;
    const T *pr = p + row * cols, *dr = dp + row * cols;
    float dot = 0;
    for (size_t j = threadIdx.x; j < limit; j += blockDim.x)
        dot += to_f(pr[j]) * to_f(dr[j]);
    dot = block_sum(dot, sh);
    for (size_t j = threadIdx.x; j < cols; j += blockDim.x)
        ds[row * cols + j] = from_f<T>(j < limit ? to_f(pr[j]) * (to_f(dr[j]) - dot) : 0.0f);
}

// Eager PyTorch's causal mask: scores + mask (-inf above the diagonal), a
// separate read-and-write pass over the scores
template <typename T>
__global__ void causal_mask_kernel(T *x, size_t n, size_t cols, size_t seq)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t row = i / cols, j = i % cols;
        float v = to_f(x[i]);
        x[i] = from_f<T>(j > row % seq ? -INFINITY : v);
    }
}

template <typename T>
__global__ void dropout_kernel(const T *in, T *out, unsigned char *mask, size_t n, float p,
                               uint32_t seed)
{
    float scale = 1.0f / (1.0f - p);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        unsigned char keep = uniform(seed, i) >= p;
        mask[i] = keep;
        out[i] = from_f<T>(keep ? to_f(in[i]) * scale : 0.0f);
    }
}

template <typename T>
__global__ void dropout_bwd_kernel(const T *dout, const unsigned char *mask, T *din, size_t n,
                                   float p)
{
    float scale = 1.0f / (1.0f - p);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        din[i] = from_f<T>(mask[i] ? to_f(dout[i]) * scale : 0.0f);
}

__global__ void residual_kernel(const bf16 *a, const bf16 *b, bf16 *y, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = __float2bfloat16(__bfloat162float(a[i]) + __bfloat162float(b[i]));
}

// Rotary embedding (Su et al. 2021) on rows of one head (cols = head_dim),
// rotate-half form as in Megatron/TE; position = row, frequencies computed in
// registers rather than read from a table.
__global__ void rope_kernel(const bf16 *x, bf16 *y, size_t rows, size_t cols)
{
    size_t half = cols / 2, n = rows * half;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / half, j = i - r * half;
        float inv_freq = __powf(10000.0f, -2.0f * (float)j / (float)cols);
        float sn, cs;
        __sincosf((float)r * inv_freq, &sn, &cs);
        float a = __bfloat162float(x[r * cols + j]), b = __bfloat162float(x[r * cols + j + half]);
        y[r * cols + j] = __float2bfloat16(a * cs - b * sn);
        y[r * cols + j + half] = __float2bfloat16(b * cs + a * sn);
    }
}

// Adam (Kingma & Ba 2015) with decoupled weight decay, fp32 master weights and
// states and an fp32 gradient, as Megatron's distributed optimizer keeps them.
__global__ void adam_kernel(float *p, const float *g, float *m, float *v, size_t n)
{
    const float lr = 1e-4f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.1f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float gi = g[i];
        float mi = b1 * m[i] + (1 - b1) * gi;
        float vi = b2 * v[i] + (1 - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] -= lr * (mi / (sqrtf(vi) + eps) + wd * p[i]);
    }
}

// Fused softmax cross-entropy over a row of logits (Megatron's
// vocab_parallel_cross_entropy on one rank): reads the logits, writes the
// softmax (kept for the backward pass) and the loss of the row.
__global__ void xent_kernel(const bf16 *logits, const int *labels, bf16 *probs, float *loss,
                            size_t cols)
{
    __shared__ float sh[33];
    size_t row = blockIdx.x;
    const bf16 *xr = logits + row * cols;
    float m = -INFINITY;
    for (size_t j = threadIdx.x; j < cols; j += blockDim.x)
        m = fmaxf(m, __bfloat162float(xr[j]));
    m = block_max(m, sh);
    float s = 0;
    for (size_t j = threadIdx.x; j < cols; j += blockDim.x)
        s += __expf(__bfloat162float(xr[j]) - m);
    s = block_sum(s, sh);
    float inv = 1.0f / s;
    for (size_t j = threadIdx.x; j < cols; j += blockDim.x)
        probs[row * cols + j] = __float2bfloat16(__expf(__bfloat162float(xr[j]) - m) * inv);
    if (threadIdx.x == 0) {
        int t = labels[row] % (int)cols;
        loss[row] = logf(s) + m - __bfloat162float(xr[t]);
    }
}

__global__ void embedding_kernel(const bf16 *table, size_t table_rows, const int *ids, bf16 *y,
                                 size_t rows, size_t cols)
{
    size_t n = rows * cols;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / cols, j = i - r * cols;
        size_t t = (size_t)(unsigned)ids[r] % table_rows;
        y[i] = table[t * cols + j];
    }
}

__global__ void copy_kernel(const uint4 *a, uint4 *b, size_t n16)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n16;
         i += (size_t)gridDim.x * blockDim.x)
        b[i] = a[i];
}

__global__ void ids_kernel(int *ids, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        ids[i] = (int)(hash32(seed ^ (uint32_t)i) & 0x7fffffff);
}

unsigned row_block(size_t cols)
{
    return cols >= 1024 ? 256u : cols >= 256 ? 128u : 32u;
}

} // namespace

extern "C" int lpp_k_fill(void *p, size_t n, int dtype, unsigned seed, cudaStream_t s)
{
    fill_kernel<<<grid_for(n, 256), 256, 0, s>>>(p, n, dtype, seed);
    return launched();
}

/* Bytes each kernel reads plus writes for a rows x cols problem (the x axis
 * of the mem tables). Per-column parameters (gamma, beta) and per-row
 * scalars (statistics, labels, losses, token ids) are counted. */
extern "C" double lpp_k_mem_bytes(int kind, size_t rows, size_t cols)
{
    double n = (double)rows * (double)cols, r = (double)rows, c = (double)cols;
    switch (kind) {
    case LP_MEM_LAYERNORM:
        return 4 * n + 4 * c + 8 * r;
    case LP_MEM_RMSNORM:
        return 4 * n + 2 * c + 8 * r;
    case LP_MEM_GELU:
        return 4 * n;
    case LP_MEM_SWIGLU:
        return 6 * n;
    case LP_MEM_SOFTMAX:
        return 4 * n;
    case LP_MEM_DROPOUT:
        return 5 * n;
    case LP_MEM_RESIDUAL:
        return 6 * n;
    case LP_MEM_ROPE:
        return 4 * n;
    case LP_MEM_ADAM:
        return 28 * n;
    case LP_MEM_CROSS_ENTROPY:
        return 4 * n + 8 * r;
    case LP_MEM_EMBEDDING:
        return 4 * n + 4 * r;
    case LP_MEM_COPY:
        return 4 * n;
    default:
        return 0;
    }
}

/* Buffers: a, b, c, d are at least as large as the kind needs (mem.c sizes
 * them): see the argument use per kind below. */
extern "C" int lpp_k_mem(int kind, void *a, void *b, void *c, void *d, size_t rows, size_t cols,
                         cudaStream_t s)
{
    size_t n = rows * cols;
    switch (kind) {
    case LP_MEM_LAYERNORM:
    case LP_MEM_RMSNORM:
        // a: x, b: gamma|beta (2*cols), c: y, d: stats
        layernorm_kernel<<<(unsigned)rows, row_block(cols), 0, s>>>(
            (const bf16 *)a, (const bf16 *)b, (const bf16 *)b + cols, (bf16 *)c, (float *)d, cols,
            kind == LP_MEM_RMSNORM);
        break;
    case LP_MEM_GELU:
        gelu_kernel<<<grid_for(n, 256), 256, 0, s>>>((const bf16 *)a, (bf16 *)c, n);
        break;
    case LP_MEM_SWIGLU:
        swiglu_kernel<<<grid_for(n, 256), 256, 0, s>>>((const bf16 *)a, (bf16 *)c, rows, cols);
        break;
    case LP_MEM_SOFTMAX:
        softmax_kernel<bf16>
            <<<(unsigned)rows, row_block(cols), 0, s>>>((const bf16 *)a, (bf16 *)c, cols, cols, 0);
        break;
    case LP_MEM_DROPOUT:
        dropout_kernel<bf16><<<grid_for(n, 256), 256, 0, s>>>((const bf16 *)a, (bf16 *)c,
                                                              (unsigned char *)d, n, 0.1f, 1234u);
        break;
    case LP_MEM_RESIDUAL:
        residual_kernel<<<grid_for(n, 256), 256, 0, s>>>((const bf16 *)a, (const bf16 *)b,
                                                         (bf16 *)c, n);
        break;
    case LP_MEM_ROPE:
        rope_kernel<<<grid_for(n / 2, 256), 256, 0, s>>>((const bf16 *)a, (bf16 *)c, rows, cols);
        break;
    case LP_MEM_ADAM:
        // a: p, b: g, c: m, d: v (fp32)
        adam_kernel<<<grid_for(n, 256), 256, 0, s>>>((float *)a, (const float *)b, (float *)c,
                                                     (float *)d, n);
        break;
    case LP_MEM_CROSS_ENTROPY:
        // a: logits, b: labels|loss, c: probs
        xent_kernel<<<(unsigned)rows, row_block(cols), 0, s>>>(
            (const bf16 *)a, (const int *)b, (bf16 *)c, (float *)((int *)b + rows), cols);
        break;
    case LP_MEM_EMBEDDING:
        // a: table (32768 x cols), b: ids, c: y
        embedding_kernel<<<grid_for(n, 256), 256, 0, s>>>((const bf16 *)a, 32768, (const int *)b,
                                                          (bf16 *)c, rows, cols);
        break;
    case LP_MEM_COPY:
        copy_kernel<<<grid_for(n * 2 / 16, 256), 256, 0, s>>>((const uint4 *)a, (uint4 *)c,
                                                              n * 2 / 16);
        break;
    default:
        return -1;
    }
    return launched();
}

extern "C" int lpp_k_ids(int *ids, size_t n, unsigned seed, cudaStream_t s)
{
    ids_kernel<<<grid_for(n, 256), 256, 0, s>>>(ids, n, seed);
    return launched();
}

extern "C" int lpp_k_softmax_fwd(const void *in, void *out, size_t rows, size_t cols, size_t seq,
                                 int causal, int dtype, cudaStream_t s)
{
    if (dtype == LP_FP16)
        softmax_kernel<__half><<<(unsigned)rows, row_block(cols), 0, s>>>(
            (const __half *)in, (__half *)out, cols, seq, causal);
    else
        softmax_kernel<bf16><<<(unsigned)rows, row_block(cols), 0, s>>>(
            (const bf16 *)in, (bf16 *)out, cols, seq, causal);
    return launched();
}

extern "C" int lpp_k_softmax_bwd(const void *p, const void *dp, void *ds, size_t rows, size_t cols,
                                 size_t seq, int causal, int dtype, cudaStream_t s)
{
    if (dtype == LP_FP16)
        softmax_bwd_kernel<__half><<<(unsigned)rows, row_block(cols), 0, s>>>(
            (const __half *)p, (const __half *)dp, (__half *)ds, cols, seq, causal);
    else
        softmax_bwd_kernel<bf16><<<(unsigned)rows, row_block(cols), 0, s>>>(
            (const bf16 *)p, (const bf16 *)dp, (bf16 *)ds, cols, seq, causal);
    return launched();
}

extern "C" int lpp_k_causal_mask(void *x, size_t rows, size_t cols, size_t seq, int dtype,
                                 cudaStream_t s)
{
    const size_t n = rows * cols;
    if (dtype == LP_FP16)
        causal_mask_kernel<__half><<<grid_for(n, 256), 256, 0, s>>>((__half *)x, n, cols, seq);
    else
        causal_mask_kernel<bf16><<<grid_for(n, 256), 256, 0, s>>>((bf16 *)x, n, cols, seq);
    return launched();
}

extern "C" int lpp_k_dropout_fwd(const void *in, void *out, unsigned char *mask, size_t n, float p,
                                 unsigned seed, int dtype, cudaStream_t s)
{
    if (dtype == LP_FP16)
        dropout_kernel<__half>
            <<<grid_for(n, 256), 256, 0, s>>>((const __half *)in, (__half *)out, mask, n, p, seed);
    else
        dropout_kernel<bf16>
            <<<grid_for(n, 256), 256, 0, s>>>((const bf16 *)in, (bf16 *)out, mask, n, p, seed);
    return launched();
}

extern "C" int lpp_k_dropout_bwd(const void *dout, const unsigned char *mask, void *din, size_t n,
                                 float p, int dtype, cudaStream_t s)
{
    if (dtype == LP_FP16)
        dropout_bwd_kernel<__half>
            <<<grid_for(n, 256), 256, 0, s>>>((const __half *)dout, mask, (__half *)din, n, p);
    else
        dropout_bwd_kernel<bf16>
            <<<grid_for(n, 256), 256, 0, s>>>((const bf16 *)dout, mask, (bf16 *)din, n, p);
    return launched();
}
