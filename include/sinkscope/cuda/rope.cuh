// Rotary position embedding on the device, both layouts, forward and backward.
//
// Pair (a, b) of frequency i < d_h/2 at position p is rotated by θ = p · base^(−2i/d_h):
//   a' = a cos θ − b sin θ,   b' = a sin θ + b cos θ
//   interleaved: (a, b) = (x[2i], x[2i+1])  (GGUF llama, GPT-J);   half_split: (x[i], x[i + d_h/2])  (HF, NeoX)
// Backward: the rotation is orthogonal, so dx = R(−θ) dy.
//
// Agreement with the CPU (model::rope_forward<float>): the CPU computes inv_freq_i = 1 / base^(2i/d_h)
// in float and θ = float(p) · inv_freq_i in float, then cos/sin in double. RopeTable does the same:
// inv_freq is computed on the host by the very same expression (rope_inv_freq), θ by one float
// multiplication on the device (IEEE, so identical), cos θ and sin θ in double on the device and
// rounded to float — equal to the CPU's values except where CUDA's and glibc's double cos/sin (both
// within 1 ulp of double) straddle a float rounding boundary.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "sinkscope/cuda/common.cuh"
#include "sinkscope/model/config.hpp"

namespace sinkscope::cuda {

// inv_freq_i = 1 / base^(2i/d_h), i < d_h/2, computed as model::rope_forward<float> computes it.
inline std::vector<float> rope_inv_freq(std::int64_t head_dim, double base) {
    require(head_dim > 0 && head_dim % 2 == 0, "cuda::rope: head_dim must be even and > 0, got " + std::to_string(head_dim));
    const std::int64_t half = head_dim / 2;
    std::vector<float> f(half);
    for (std::int64_t i = 0; i < half; ++i) f[i] = 1.0f / std::pow(float(base), float(2 * i) / float(head_dim));
    return f;
}

namespace detail {

SINKSCOPE_KERNEL rope_table_kernel(float* __restrict__ cs, float* __restrict__ sn, const float* __restrict__ inv_freq,
                                  std::int64_t n, std::int64_t half) {
    SINKSCOPE_GRID_STRIDE(k, n * half) {
        const std::int64_t p = k / half, i = k - p * half;
        const float theta = float(p) * inv_freq[i];
        cs[k] = float(cos(double(theta)));
        sn[k] = float(sin(double(theta)));
    }
}

// x (rows × nh·d_h), row r at position r mod n; one block per row, thread (i, head slice) loads
// cos/sin of frequency i once and rotates that pair in its heads. sign = +1: forward; −1: transpose.
SINKSCOPE_KERNEL rope_kernel(float* __restrict__ x, const float* __restrict__ cs, const float* __restrict__ sn, std::int64_t n,
                            std::int64_t nh, std::int64_t dh, int interleaved, float sign) {
    const std::int64_t half = dh / 2, r = blockIdx.x, p = r % n;
    const std::int64_t slices = blockDim.x >= half ? blockDim.x / half : 1;
    for (std::int64_t k = threadIdx.x; k < half * slices; k += blockDim.x) {
        const std::int64_t i = k % half, h0 = k / half;
        const float c = cs[p * half + i], s = sign * sn[p * half + i];
        const std::int64_t ia = interleaved ? 2 * i : i, ib = interleaved ? 2 * i + 1 : i + half;
        for (std::int64_t h = h0; h < nh; h += slices) {
            float* head = x + (r * nh + h) * dh;
            const float a = head[ia], b = head[ib];
            head[ia] = a * c - b * s;
            head[ib] = a * s + b * c;
        }
    }
}

// Threads of the RoPE row kernel: one per (frequency, head) pair up to 256, a multiple of d_h/2.
inline int rope_threads(std::int64_t n_heads, std::int64_t head_dim) {
    const std::int64_t half = head_dim / 2, pairs = half * n_heads;
    if (half >= 256) return 256;
    std::int64_t t = (256 / half) * half;  // whole head slices
    if (t > pairs) t = pairs;
    return int(round_up_warp(t));
}

}  // namespace detail

// cos θ and sin θ for positions [0, n) and frequencies [0, d_h/2), kept on the device and rebuilt only
// when n grows or d_h / base change.
class RopeTable {
public:
    void ensure(const Context& ctx, std::int64_t n, std::int64_t head_dim, double base) {
        if (n <= n_ && head_dim == dh_ && base == base_) return;
        const auto inv = rope_inv_freq(head_dim, base);
        inv_.upload(inv, ctx.stream());
        const std::int64_t half = head_dim / 2;
        cos_.resize(std::size_t(n * half));
        sin_.resize(std::size_t(n * half));
        detail::rope_table_kernel<<<detail::blocks_for(n * half, 256), 256, 0, ctx.stream()>>>(cos_.data(), sin_.data(), inv_.data(), n, half);
        SINKSCOPE_CUDA_CHECK_LAUNCH("rope_table_kernel");
        n_ = n;
        dh_ = head_dim;
        base_ = base;
    }
    const float* cos() const { return cos_.data(); }
    const float* sin() const { return sin_.data(); }
    std::int64_t positions() const { return n_; }

private:
    DeviceBuffer<float> inv_, cos_, sin_;
    std::int64_t n_ = 0, dh_ = 0;
    double base_ = 0;
};

// In place on x (B·n × n_heads·d_h); `table` must cover n positions of this head_dim and base.
inline void rope_forward(const Context& ctx, float* x, const RopeTable& table, std::int64_t rows, std::int64_t n,
                         std::int64_t n_heads, std::int64_t head_dim, model::RopeLayout layout) {
    require(table.positions() >= n, "cuda::rope_forward: the table covers fewer positions than the sequence");
    const std::int64_t work = rows * n_heads * (head_dim / 2);
    if (work == 0) return;
    detail::check_rows(rows);
    detail::rope_kernel<<<unsigned(rows), detail::rope_threads(n_heads, head_dim), 0, ctx.stream()>>>(
        x, table.cos(), table.sin(), n, n_heads, head_dim, layout == model::RopeLayout::interleaved, 1.f);
    SINKSCOPE_CUDA_CHECK_LAUNCH("rope_kernel");
}
// dx ← R(−θ) dx, in place.
inline void rope_backward(const Context& ctx, float* dx, const RopeTable& table, std::int64_t rows, std::int64_t n,
                          std::int64_t n_heads, std::int64_t head_dim, model::RopeLayout layout) {
    require(table.positions() >= n, "cuda::rope_backward: the table covers fewer positions than the sequence");
    const std::int64_t work = rows * n_heads * (head_dim / 2);
    if (work == 0) return;
    detail::check_rows(rows);
    detail::rope_kernel<<<unsigned(rows), detail::rope_threads(n_heads, head_dim), 0, ctx.stream()>>>(
        dx, table.cos(), table.sin(), n, n_heads, head_dim, layout == model::RopeLayout::interleaved, -1.f);
    SINKSCOPE_CUDA_CHECK_LAUNCH("rope_kernel (backward)");
}

}  // namespace sinkscope::cuda
