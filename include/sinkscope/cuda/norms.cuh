// RMSNorm, LayerNorm, DynamicTanh and per-head RMSNorm (QK-norm) on the device, forward and backward.
//
//   RMSNorm    y = x / √(mean(x²) + eps) ⊙ g
//   LayerNorm  y = (x − mean(x)) / √(var(x) + eps) ⊙ g + b          (biased variance, as PyTorch)
//   DyT        y = γ ⊙ tanh(α x) + β
// Row kernels: one block per row, fp32 block reductions, the CPU's operation order per element
// (model/layers.hpp); the reductions sum in a different order than Eigen, which is the source of the
// ~1e-6 relative differences the cross-backend test allows. Backward formulas: train/backward.hpp.
#pragma once

#include <cmath>
#include <cstdint>

#include "sinkscope/cuda/common.cuh"
#include "sinkscope/cuda/gemm.cuh"
#include "sinkscope/model/config.hpp"

namespace sinkscope::cuda {

// Device pointers of one norm's parameters (null where the norm has none).
struct NormParams {
    const float* weight = nullptr;  // (d) gain g / γ
    const float* bias = nullptr;    // (d) LayerNorm b / DyT β
    const float* alpha = nullptr;   // (1) DyT α
};
struct NormGrads {
    float* weight = nullptr;
    float* bias = nullptr;
    float* alpha = nullptr;
};

namespace detail {

SINKSCOPE_KERNEL rmsnorm_kernel(float* __restrict__ y, const float* __restrict__ x, const float* __restrict__ g,
                               std::int64_t d, float eps, float* __restrict__ rstd_out) {
    __shared__ float scratch[32];
    const std::int64_t row = blockIdx.x;
    const float* xr = x + row * d;
    float ss = 0.f;
    for (std::int64_t c = threadIdx.x; c < d; c += blockDim.x) ss += xr[c] * xr[c];
    ss = block_sum(ss, scratch);
    const float inv = 1.f / sqrtf(ss / float(d) + eps);
    if (rstd_out && threadIdx.x == 0) rstd_out[row] = inv;
    if (y)
        for (std::int64_t c = threadIdx.x; c < d; c += blockDim.x) y[row * d + c] = (xr[c] * inv) * g[c];
}

SINKSCOPE_KERNEL layernorm_kernel(float* __restrict__ y, const float* __restrict__ x, const float* __restrict__ g,
                                 const float* __restrict__ b, std::int64_t d, float eps, float* __restrict__ stats_out) {
    __shared__ float scratch[32];
    const std::int64_t row = blockIdx.x;
    const float* xr = x + row * d;
    float s = 0.f;
    for (std::int64_t c = threadIdx.x; c < d; c += blockDim.x) s += xr[c];
    const float mean = block_sum(s, scratch) / float(d);
    float v = 0.f;
    for (std::int64_t c = threadIdx.x; c < d; c += blockDim.x) { const float u = xr[c] - mean; v += u * u; }
    const float var = block_sum(v, scratch) / float(d);
    const float inv = 1.f / sqrtf(var + eps);
    if (stats_out && threadIdx.x == 0) { stats_out[2 * row] = mean; stats_out[2 * row + 1] = inv; }
    if (y)
        for (std::int64_t c = threadIdx.x; c < d; c += blockDim.x) {
            float o = ((xr[c] - mean) * inv) * g[c];
            if (b) o += b[c];
            y[row * d + c] = o;
        }
}

SINKSCOPE_KERNEL dyt_kernel(float* __restrict__ y, const float* __restrict__ x, const float* __restrict__ alpha,
                           const float* __restrict__ g, const float* __restrict__ b, std::int64_t d) {
    const float a = alpha[0];
    const std::int64_t r = blockIdx.x;
    SINKSCOPE_ROW_LOOP(c, d) {
        float o = tanhf(x[r * d + c] * a) * g[c];
        if (b) o += b[c];
        y[r * d + c] = o;
    }
}

// One warp per (row, head) segment of d_h values, in place: seg ← seg / √(mean(seg²) + eps) ⊙ g.
SINKSCOPE_KERNEL head_rmsnorm_kernel(float* __restrict__ x, const float* __restrict__ g, std::int64_t segments,
                                    std::int64_t dh, float eps) {
    const std::int64_t seg = blockIdx.x * std::int64_t(blockDim.x / 32) + threadIdx.x / 32;
    if (seg >= segments) return;
    const int lane = threadIdx.x & 31;
    float* s = x + seg * dh;
    float ss = 0.f;
    for (std::int64_t i = lane; i < dh; i += 32) ss += s[i] * s[i];
    ss = warp_sum(ss);
    const float inv = 1.f / sqrtf(ss / float(dh) + eps);
    for (std::int64_t i = lane; i < dh; i += 32) s[i] = (s[i] * inv) * g[i];
}

// ---- backward ----

// dinp += r ĝ − (r³/d)(x·ĝ) x,  ĝ = dout ⊙ g,  r = 1/√(mean(x²)+eps)
SINKSCOPE_KERNEL rmsnorm_backward_kernel(float* __restrict__ dinp, float* __restrict__ rstd, const float* __restrict__ dout,
                                        const float* __restrict__ x, const float* __restrict__ g, std::int64_t d, float eps) {
    __shared__ float scratch[32];
    const std::int64_t row = blockIdx.x;
    const float* xr = x + row * d;
    const float* dr = dout + row * d;
    float ss = 0.f, dot = 0.f;
    for (std::int64_t c = threadIdx.x; c < d; c += blockDim.x) { ss += xr[c] * xr[c]; dot += xr[c] * dr[c] * g[c]; }
    ss = block_sum(ss, scratch);
    dot = block_sum(dot, scratch);
    const float r = 1.f / sqrtf(ss / float(d) + eps);
    const float k = r * r * r / float(d) * dot;
    if (threadIdx.x == 0) rstd[row] = r;
    for (std::int64_t c = threadIdx.x; c < d; c += blockDim.x) dinp[row * d + c] += r * dr[c] * g[c] - k * xr[c];
}

// dinp += r (ĝ − mean(ĝ) − x̂ mean(ĝ ⊙ x̂)),  x̂ = (x − μ) r
SINKSCOPE_KERNEL layernorm_backward_kernel(float* __restrict__ dinp, float* __restrict__ stats, const float* __restrict__ dout,
                                          const float* __restrict__ x, const float* __restrict__ g, std::int64_t d, float eps) {
    __shared__ float scratch[32];
    const std::int64_t row = blockIdx.x;
    const float* xr = x + row * d;
    const float* dr = dout + row * d;
    float s = 0.f;
    for (std::int64_t c = threadIdx.x; c < d; c += blockDim.x) s += xr[c];
    const float mean = block_sum(s, scratch) / float(d);
    float v = 0.f;
    for (std::int64_t c = threadIdx.x; c < d; c += blockDim.x) { const float u = xr[c] - mean; v += u * u; }
    const float r = 1.f / sqrtf(block_sum(v, scratch) / float(d) + eps);
    float mg = 0.f, mgx = 0.f;
    for (std::int64_t c = threadIdx.x; c < d; c += blockDim.x) {
        const float gh = dr[c] * g[c];
        mg += gh;
        mgx += gh * (xr[c] - mean) * r;
    }
    mg = block_sum(mg, scratch) / float(d);
    mgx = block_sum(mgx, scratch) / float(d);
    if (threadIdx.x == 0) { stats[2 * row] = mean; stats[2 * row + 1] = r; }
    for (std::int64_t c = threadIdx.x; c < d; c += blockDim.x) {
        const float xh = (xr[c] - mean) * r;
        dinp[row * d + c] += r * (dr[c] * g[c] - mg - xh * mgx);
    }
}

// p = dout ⊙ γ ⊙ (1 − tanh²(αx)):  dinp += α p;  dα += Σ p ⊙ x  (block sums, one atomicAdd per block)
SINKSCOPE_KERNEL dyt_backward_kernel(float* __restrict__ dinp, float* __restrict__ dalpha, const float* __restrict__ dout,
                                    const float* __restrict__ x, const float* __restrict__ alpha, const float* __restrict__ g,
                                    std::int64_t d) {
    __shared__ float scratch[32];
    const float a = alpha[0];
    const std::int64_t r = blockIdx.x;
    float acc = 0.f;
    SINKSCOPE_ROW_LOOP(c, d) {
        const std::int64_t i = r * d + c;
        const float u = tanhf(a * x[i]);
        const float p = dout[i] * g[c] * (1.f - u * u);
        dinp[i] += a * p;
        acc += p * x[i];
    }
    acc = block_sum(acc, scratch);
    if (threadIdx.x == 0) atomicAdd(dalpha, acc);
}

struct RmsWeightGrad {  // dout ⊙ x · r
    const float *dout, *x, *rstd;
    std::int64_t d;
    __device__ float operator()(std::int64_t r, std::int64_t c) const { return dout[r * d + c] * x[r * d + c] * rstd[r]; }
};
struct LnWeightGrad {  // dout ⊙ (x − μ) r
    const float *dout, *x, *stats;
    std::int64_t d;
    __device__ float operator()(std::int64_t r, std::int64_t c) const {
        return dout[r * d + c] * ((x[r * d + c] - stats[2 * r]) * stats[2 * r + 1]);
    }
};
struct DytGammaGrad {  // dout ⊙ tanh(αx)
    const float *dout, *x, *alpha;
    std::int64_t d;
    __device__ float operator()(std::int64_t r, std::int64_t c) const { return dout[r * d + c] * tanhf(alpha[0] * x[r * d + c]); }
};

}  // namespace detail

// y (rows × d) = Norm(x). `kind` chooses the formula; eps as in the Config.
inline void norm_forward(const Context& ctx, float* y, const float* x, const NormParams& p, model::NormKind kind, double eps,
                         std::int64_t rows, std::int64_t d) {
    if (rows == 0) return;
    detail::check_rows(rows);
    require(p.weight != nullptr, "cuda::norm_forward: the norm has no weight (gain)");
    switch (kind) {
        case model::NormKind::rmsnorm:
            detail::rmsnorm_kernel<<<unsigned(rows), detail::row_threads(d), 0, ctx.stream()>>>(y, x, p.weight, d, float(eps), nullptr);
            SINKSCOPE_CUDA_CHECK_LAUNCH("rmsnorm_kernel");
            return;
        case model::NormKind::layernorm:
            detail::layernorm_kernel<<<unsigned(rows), detail::row_threads(d), 0, ctx.stream()>>>(y, x, p.weight, p.bias, d,
                                                                                                 float(eps), nullptr);
            SINKSCOPE_CUDA_CHECK_LAUNCH("layernorm_kernel");
            return;
        case model::NormKind::dynamic_tanh:
            require(p.alpha != nullptr, "cuda::norm_forward: DynamicTanh needs its alpha");
            detail::dyt_kernel<<<unsigned(rows), detail::row_threads(d), 0, ctx.stream()>>>(y, x, p.alpha, p.weight, p.bias, d);
            SINKSCOPE_CUDA_CHECK_LAUNCH("dyt_kernel");
            return;
    }
}

// In place on x (rows × n_heads·d_h): per-head RMSNorm with gains g (d_h), shared by the heads.
inline void head_rmsnorm_forward(const Context& ctx, float* x, const float* g, std::int64_t rows, std::int64_t n_heads,
                                 std::int64_t dh, double eps) {
    const std::int64_t segments = rows * n_heads;
    if (segments == 0) return;
    detail::head_rmsnorm_kernel<<<detail::blocks_for(segments, 8), 256, 0, ctx.stream()>>>(x, g, segments, dh, float(eps));
    SINKSCOPE_CUDA_CHECK_LAUNCH("head_rmsnorm_kernel");
}

// Backward of y = Norm(x):  dinp (rows × d) += ∂L/∂x;  the parameter gradients accumulate into g.
// `scratch` holds 2·rows floats (per-row statistics for the parameter gradients).
inline void norm_backward(const Context& ctx, float* dinp, const NormGrads& g, const float* dout, const float* x,
                          const NormParams& p, model::NormKind kind, double eps, std::int64_t rows, std::int64_t d,
                          DeviceBuffer<float>& scratch) {
    if (rows == 0) return;
    detail::check_rows(rows);
    scratch.resize(std::size_t(2 * rows));
    switch (kind) {
        case model::NormKind::rmsnorm:
            detail::rmsnorm_backward_kernel<<<unsigned(rows), detail::row_threads(d), 0, ctx.stream()>>>(dinp, scratch.data(), dout, x,
                                                                                                        p.weight, d, float(eps));
            SINKSCOPE_CUDA_CHECK_LAUNCH("rmsnorm_backward_kernel");
            column_reduce(ctx, g.weight, rows, d, detail::RmsWeightGrad{dout, x, scratch.data(), d});
            return;
        case model::NormKind::layernorm:
            detail::layernorm_backward_kernel<<<unsigned(rows), detail::row_threads(d), 0, ctx.stream()>>>(
                dinp, scratch.data(), dout, x, p.weight, d, float(eps));
            SINKSCOPE_CUDA_CHECK_LAUNCH("layernorm_backward_kernel");
            column_reduce(ctx, g.weight, rows, d, detail::LnWeightGrad{dout, x, scratch.data(), d});
            if (g.bias) column_sum(ctx, g.bias, dout, rows, d);
            return;
        case model::NormKind::dynamic_tanh: {
            detail::dyt_backward_kernel<<<unsigned(rows), detail::row_threads(d), 0, ctx.stream()>>>(dinp, g.alpha, dout, x, p.alpha,
                                                                                                   p.weight, d);
            SINKSCOPE_CUDA_CHECK_LAUNCH("dyt_backward_kernel");
            column_reduce(ctx, g.weight, rows, d, detail::DytGammaGrad{dout, x, p.alpha, d});
            if (g.bias) column_sum(ctx, g.bias, dout, rows, d);
            return;
        }
    }
}

}  // namespace sinkscope::cuda
