// Element-wise and row-gather kernels of the device forward and backward passes: embedding, residual
// add, activations (SiLU, GELU erf/tanh) and SwiGLU, the sigmoid output gate, force-sink masking, and
// their backward kernels. Memory-bound: each kernel reads and writes every element once.
//
// Rows are positions of B sequences stacked: row r = b·n + t (n positions per sequence), so the
// position of row r is r mod n.
#pragma once

#include <cmath>
#include <cstdint>

#include "sinkscope/cuda/common.cuh"
#include "sinkscope/model/config.hpp"

namespace sinkscope::cuda {

// ---- activations, shared by host and device (model/layers.hpp and train/backward.hpp, same formulas) ----
namespace act {

// Written as model::silu / gelu_erf / gelu_tanh and train::activation_derivative write them (same
// constants, same operation order), so that on the host they give the CPU's values.
__host__ __device__ inline float gelu_k() { return sqrtf(2.f / float(M_PI)); }
__host__ __device__ inline float silu(float x) { return x / (1.f + expf(-x)); }
__host__ __device__ inline float gelu_erf(float x) { return 0.5f * x * (1.f + erff(x / sqrtf(2.f))); }
__host__ __device__ inline float gelu_tanh(float x) {
    return 0.5f * x * (1.f + tanhf(gelu_k() * (x + 0.044715f * x * x * x)));
}
// silu'(x) = σ(x)(1 + x(1 − σ(x))); gelu_erf'(x) = Φ(x) + x φ(x);
// gelu_tanh'(x) = ½(1 + tanh u) + ½ x (1 − tanh² u) k (1 + 3·0.044715 x²), u = k(x + 0.044715 x³)
__host__ __device__ inline float silu_grad(float x) {
    const float s = 1.f / (1.f + expf(-x));
    return s * (1.f + x * (1.f - s));
}
__host__ __device__ inline float gelu_erf_grad(float x) {
    const float cdf = 0.5f * (1.f + erff(x / sqrtf(2.f)));
    const float pdf = expf(-0.5f * x * x) / sqrtf(2.f * float(M_PI));
    return cdf + x * pdf;
}
__host__ __device__ inline float gelu_tanh_grad(float x) {
    const float k = gelu_k();
    const float th = tanhf(k * (x + 0.044715f * x * x * x));
    return 0.5f * (1.f + th) + 0.5f * x * (1.f - th * th) * k * (1.f + 3.f * 0.044715f * x * x);
}
__host__ __device__ inline float apply(int kind, float x) {
    return kind == int(model::Activation::silu) ? silu(x) : kind == int(model::Activation::gelu_tanh) ? gelu_tanh(x) : gelu_erf(x);
}
__host__ __device__ inline float grad(int kind, float x) {
    return kind == int(model::Activation::silu) ? silu_grad(x)
           : kind == int(model::Activation::gelu_tanh) ? gelu_tanh_grad(x) : gelu_erf_grad(x);
}
__host__ __device__ inline float sigmoid(float x) { return 1.f / (1.f + expf(-x)); }

}  // namespace act

namespace detail {

// x[r] = sink (t = 0 with a sink token) or E[tokens[b·(n − sink) + t − sink]]
SINKSCOPE_KERNEL embedding_kernel(float* __restrict__ x, const float* __restrict__ E, const std::int32_t* __restrict__ tokens,
                                 const float* __restrict__ sink, std::int64_t n, std::int64_t d, int has_sink) {
    const std::int64_t r = blockIdx.x, b = r / n, t = r - b * n;
    const float* src = (has_sink && t == 0) ? sink : E + std::int64_t(tokens[b * (n - has_sink) + t - has_sink]) * d;
    SINKSCOPE_ROW_LOOP(c, d) x[r * d + c] = src[c];
}
// x[r, c] += P[r mod n, c]
SINKSCOPE_KERNEL add_positions_kernel(float* __restrict__ x, const float* __restrict__ P, std::int64_t n, std::int64_t d) {
    const std::int64_t r = blockIdx.x, t = r % n;
    SINKSCOPE_ROW_LOOP(c, d) x[r * d + c] += P[t * d + c];
}
SINKSCOPE_KERNEL add_kernel(float* __restrict__ y, const float* __restrict__ x, std::int64_t n) {
    SINKSCOPE_GRID_STRIDE(i, n) y[i] += x[i];
}
SINKSCOPE_KERNEL scale_kernel(float* __restrict__ y, float s, std::int64_t n) {
    SINKSCOPE_GRID_STRIDE(i, n) y[i] *= s;
}
SINKSCOPE_KERNEL activation_kernel(float* __restrict__ y, const float* __restrict__ x, int kind, std::int64_t n) {
    SINKSCOPE_GRID_STRIDE(i, n) y[i] = act::apply(kind, x[i]);
}
// h = act(gate) ⊙ up                                       (w2(silu(w1 x) * w3 x))
SINKSCOPE_KERNEL swiglu_kernel(float* __restrict__ h, const float* __restrict__ gate, const float* __restrict__ up, int kind,
                              std::int64_t n) {
    SINKSCOPE_GRID_STRIDE(i, n) h[i] = act::apply(kind, gate[i]) * up[i];
}
// backward of h = act(gate) ⊙ up:  dgate = dh ⊙ up ⊙ act'(gate),  dup = dh ⊙ act(gate)   (written, not added)
SINKSCOPE_KERNEL swiglu_backward_kernel(float* __restrict__ dgate, float* __restrict__ dup, const float* __restrict__ dh,
                                       const float* __restrict__ gate, const float* __restrict__ up, int kind, std::int64_t n) {
    SINKSCOPE_GRID_STRIDE(i, n) {
        const float g = gate[i], d = dh[i];
        dgate[i] = d * up[i] * act::grad(kind, g);
        dup[i] = d * act::apply(kind, g);
    }
}
// backward of y = act(x):  dx = dy ⊙ act'(x)   (written)
SINKSCOPE_KERNEL activation_backward_kernel(float* __restrict__ dx, const float* __restrict__ dy, const float* __restrict__ x,
                                           int kind, std::int64_t n) {
    SINKSCOPE_GRID_STRIDE(i, n) dx[i] = dy[i] * act::grad(kind, x[i]);
}
SINKSCOPE_KERNEL sigmoid_kernel(float* __restrict__ y, std::int64_t n) {
    SINKSCOPE_GRID_STRIDE(i, n) y[i] = act::sigmoid(y[i]);
}
// g[r, :] = b   (the static gate before its sigmoid)
SINKSCOPE_KERNEL broadcast_rows_kernel(float* __restrict__ g, const float* __restrict__ b, std::int64_t cols) {
    const std::int64_t r = blockIdx.x;
    SINKSCOPE_ROW_LOOP(c, cols) g[r * cols + c] = b[c];
}
// z[r, h·d_h + i] *= g[r, h] (per head) or g[r, h·d_h + i] (per channel)
SINKSCOPE_KERNEL apply_gate_kernel(float* __restrict__ z, const float* __restrict__ g, std::int64_t H, std::int64_t dh,
                                  int per_head) {
    const std::int64_t r = blockIdx.x, w = H * dh;
    if (per_head) {
        for (std::int64_t h = 0; h < H; ++h) {
            const float gh = g[r * H + h];
            SINKSCOPE_ROW_LOOP(i, dh) z[r * w + h * dh + i] *= gh;
        }
    } else {
        SINKSCOPE_ROW_LOOP(c, w) z[r * w + c] *= g[r * w + c];
    }
}
// y = x with channels [0, k) zeroed at every position t ≥ 1   (force-sink, Paper A v2)
SINKSCOPE_KERNEL force_sink_kernel(float* y, const float* x, std::int64_t n, std::int64_t d,  // y may be x
                                  std::int64_t k) {
    const std::int64_t r = blockIdx.x, kk = (r % n) != 0 ? k : 0;
    SINKSCOPE_ROW_LOOP(c, d) y[r * d + c] = c < kk ? 0.f : x[r * d + c];
}
// dst[b·(n−1) + t − 1] = src[b·n + t] for t ≥ 1: the real rows of a sequence with a sink token.
SINKSCOPE_KERNEL drop_first_rows_kernel(float* __restrict__ dst, const float* __restrict__ src, std::int64_t n, std::int64_t d) {
    const std::int64_t r = blockIdx.x, m = n - 1, b = r / m, t = r - b * m;
    SINKSCOPE_ROW_LOOP(c, d) dst[r * d + c] = src[(b * n + t + 1) * d + c];
}
// dst[b·n + t] = src[b·(n−1) + t − 1] for t ≥ 1 (the inverse of drop_first_rows; rows t = 0 untouched)
SINKSCOPE_KERNEL insert_after_first_rows_kernel(float* __restrict__ dst, const float* __restrict__ src, std::int64_t n,
                                               std::int64_t d) {
    const std::int64_t r = blockIdx.x, m = n - 1, b = r / m, t = r - b * m;
    SINKSCOPE_ROW_LOOP(c, d) dst[(b * n + t + 1) * d + c] = src[r * d + c];
}
// dE[tokens[…]] += dx[r], dsink += dx[t = 0], dP[t] += dx[r]  (atomics: tokens and positions repeat)
SINKSCOPE_KERNEL embedding_backward_kernel(float* __restrict__ dE, float* __restrict__ dsink, float* __restrict__ dP,
                                          const float* __restrict__ dx, const std::int32_t* __restrict__ tokens, std::int64_t n,
                                          std::int64_t d, int has_sink) {
    const std::int64_t r = blockIdx.x, b = r / n, t = r - b * n;
    float* dst = (has_sink && t == 0) ? dsink : dE + std::int64_t(tokens[b * (n - has_sink) + t - has_sink]) * d;
    SINKSCOPE_ROW_LOOP(c, d) {
        const float g = dx[r * d + c];
        atomicAdd(dst + c, g);
        if (dP) atomicAdd(dP + t * d + c, g);
    }
}

}  // namespace detail

// ---- launchers: (ctx, outputs, inputs, dims), as in model/layers.hpp ----

namespace detail {
inline unsigned grid_for(std::int64_t n) { return blocks_for(n, 256); }
}  // namespace detail

// One block per row (rows ≤ 2³¹ − 1) of row_threads(d) threads.
#define SINKSCOPE_LAUNCH_ROWS(kernel, rows, d, ...)                                              \
    do {                                                                                         \
        if ((rows) > 0 && (d) > 0) {                                                             \
            ::sinkscope::cuda::detail::check_rows(rows);                                          \
            ::sinkscope::cuda::detail::kernel<<<unsigned(rows), ::sinkscope::cuda::detail::row_threads(d), 0, ctx.stream()>>>(__VA_ARGS__); \
            SINKSCOPE_CUDA_CHECK_LAUNCH(#kernel);                                                \
        }                                                                                        \
    } while (0)

#define SINKSCOPE_LAUNCH(kernel, n, ...)                                                      \
    do {                                                                                     \
        if ((n) > 0) {                                                                       \
            ::sinkscope::cuda::detail::kernel<<<::sinkscope::cuda::detail::grid_for(n), 256, 0, ctx.stream()>>>(__VA_ARGS__); \
            SINKSCOPE_CUDA_CHECK_LAUNCH(#kernel);                                            \
        }                                                                                    \
    } while (0)

// x (B·n × d): row b·n + t is sink_embed (t = 0, when `sink` is non-null) or E[token].
// tokens: device array of B·(n − [sink]) ids, already validated against the vocabulary.
inline void embedding_forward(const Context& ctx, float* x, const float* E, const std::int32_t* tokens, const float* sink,
                              std::int64_t B, std::int64_t n, std::int64_t d) {
    SINKSCOPE_LAUNCH_ROWS(embedding_kernel, B * n, d, x, E, tokens, sink, n, d, sink ? 1 : 0);
}
inline void add_positions(const Context& ctx, float* x, const float* P, std::int64_t B, std::int64_t n, std::int64_t d) {
    SINKSCOPE_LAUNCH_ROWS(add_positions_kernel, B * n, d, x, P, n, d);
}
// y += x  (residual add)
inline void add(const Context& ctx, float* y, const float* x, std::int64_t n) { SINKSCOPE_LAUNCH(add_kernel, n, y, x, n); }
inline void scale(const Context& ctx, float* y, float s, std::int64_t n) { SINKSCOPE_LAUNCH(scale_kernel, n, y, s, n); }
inline void activation_forward(const Context& ctx, float* y, const float* x, model::Activation a, std::int64_t n) {
    SINKSCOPE_LAUNCH(activation_kernel, n, y, x, int(a), n);
}
inline void swiglu_forward(const Context& ctx, float* h, const float* gate, const float* up, model::Activation a, std::int64_t n) {
    SINKSCOPE_LAUNCH(swiglu_kernel, n, h, gate, up, int(a), n);
}
inline void swiglu_backward(const Context& ctx, float* dgate, float* dup, const float* dh, const float* gate, const float* up,
                            model::Activation a, std::int64_t n) {
    SINKSCOPE_LAUNCH(swiglu_backward_kernel, n, dgate, dup, dh, gate, up, int(a), n);
}
inline void activation_backward(const Context& ctx, float* dx, const float* dy, const float* x, model::Activation a, std::int64_t n) {
    SINKSCOPE_LAUNCH(activation_backward_kernel, n, dx, dy, x, int(a), n);
}
inline void sigmoid_inplace(const Context& ctx, float* y, std::int64_t n) { SINKSCOPE_LAUNCH(sigmoid_kernel, n, y, n); }
inline void broadcast_rows(const Context& ctx, float* g, const float* b, std::int64_t rows, std::int64_t cols) {
    SINKSCOPE_LAUNCH_ROWS(broadcast_rows_kernel, rows, cols, g, b, cols);
}
inline void apply_gate(const Context& ctx, float* z, const float* g, std::int64_t rows, std::int64_t H, std::int64_t dh, bool per_head) {
    SINKSCOPE_LAUNCH_ROWS(apply_gate_kernel, rows, per_head ? dh : H * dh, z, g, H, dh, per_head ? 1 : 0);
}
inline void force_sink_mask(const Context& ctx, float* y, const float* x, std::int64_t B, std::int64_t n, std::int64_t d,
                            std::int64_t k) {
    SINKSCOPE_LAUNCH_ROWS(force_sink_kernel, B * n, d, y, x, n, d, k);
}
inline void drop_first_rows(const Context& ctx, float* dst, const float* src, std::int64_t B, std::int64_t n, std::int64_t d) {
    SINKSCOPE_LAUNCH_ROWS(drop_first_rows_kernel, B * (n - 1), d, dst, src, n, d);
}
inline void insert_after_first_rows(const Context& ctx, float* dst, const float* src, std::int64_t B, std::int64_t n, std::int64_t d) {
    SINKSCOPE_LAUNCH_ROWS(insert_after_first_rows_kernel, B * (n - 1), d, dst, src, n, d);
}
inline void embedding_backward(const Context& ctx, float* dE, float* dsink, float* dP, const float* dx, const std::int32_t* tokens,
                               std::int64_t B, std::int64_t n, std::int64_t d) {
    SINKSCOPE_LAUNCH_ROWS(embedding_backward_kernel, B * n, d, dE, dsink, dP, dx, tokens, n, d, dsink ? 1 : 0);
}

}  // namespace sinkscope::cuda
