// Rotary position embedding (full or partial, interleaved or half-split): forward and backward side by side.
//
// Forward kernels (namespace model) follow llm.c: outputs first, then inputs, then weights, then
// dimensions; activations are row-major (T × features), one row per position, and each function's
// comment gives its naive definition. Backward kernels (namespace train) accumulate (+=) into their
// gradients and quote the forward line they differentiate; tests/train/test_backward.cpp checks each
// against finite differences in double. The CUDA kernels of this layer: cuda/rope.cuh.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "sinkscope/layers/parallel_rows.hpp"
#include "sinkscope/core/error.hpp"
#include "sinkscope/core/switches.hpp"
#include "sinkscope/core/tensor.hpp"

namespace sinkscope::model {

// cos θ and sin θ of rope_forward for rows t ∈ [0, n) (position t + offset) and frequencies i < d_h/2,
// row-major (n × d_h/2). Cached per thread: training applies RoPE 4 times per layer and sequence with
// the same table; rows [0, n) of a longer cached table are the same numbers. `divisors` (empty, or d_h/2
// entries f_i: Config::rope_freq_divisors) divide each frequency; the cache keeps a copy to compare.
template <class T>
struct RopeTable {
    std::int64_t n = -1, head_dim = -1, offset = 0;
    double base = 0;
    std::vector<double> divisors;
    std::vector<T> cos, sin;
};
template <class T>
const RopeTable<T>& rope_table(std::int64_t n, std::int64_t head_dim, double base, std::int64_t offset,
                               const std::vector<double>& divisors = {}) {
    thread_local RopeTable<T> tab;
    if (tab.n >= n && tab.head_dim == head_dim && tab.base == base && tab.offset == offset && tab.divisors == divisors) return tab;
    const std::int64_t half = head_dim / 2;
    require(divisors.empty() || std::int64_t(divisors.size()) == half,
            "rope_table: " + std::to_string(divisors.size()) + " frequency divisors for " + std::to_string(half) + " frequencies");
    // Hugging Face computes inv_freq = 1 / base^(2i/d_h) and θ = pos · inv_freq in float32; in float we
    // round at the same places so that θ agrees bit for bit, in double we keep double throughout.
    // With divisors, float rounds inv_freq_i / f_i (in double) to float once: Hugging Face's Llama 3.1
    // inv_freq (a chain of float32 operations) is reproduced bit for bit because the loader stores
    // f_i = inv_freq_i / inv_freq_llama3_i in double (model/rope_scaling.hpp, llama3_rope_divisors); GGUF's float
    // divisors give llama.cpp's θ up to its own rounding of θ / f_i.
    constexpr bool single = std::is_same_v<T, float>;
    std::vector<double> inv_freq(half);
    for (std::int64_t i = 0; i < half; ++i) {
        if (single) {
            const float inv = 1.0f / std::pow(float(base), float(2 * i) / float(head_dim));
            inv_freq[i] = divisors.empty() ? inv : float(double(inv) / divisors[std::size_t(i)]);
        } else {
            inv_freq[i] = std::pow(base, -2.0 * double(i) / double(head_dim)) / (divisors.empty() ? 1.0 : divisors[std::size_t(i)]);
        }
    }
    tab.cos.resize(std::size_t(n * half));
    tab.sin.resize(std::size_t(n * half));
    for (std::int64_t t = 0; t < n; ++t)
        for (std::int64_t i = 0; i < half; ++i) {
            const double theta = single ? double(float(t + offset) * float(inv_freq[i])) : double(t + offset) * inv_freq[i];
            tab.cos[std::size_t(t * half + i)] = T(std::cos(theta));
            tab.sin[std::size_t(t * half + i)] = T(std::sin(theta));
        }
    tab.n = n; tab.head_dim = head_dim; tab.base = base; tab.offset = offset; tab.divisors = divisors;
    return tab;
}

namespace detail {

// Rotates the rotary pairs of every head of one row by θ_i (sign +1) or by −θ_i (sign −1, the inverse:
// Rθᵀ = R₋θ):  a' = a cos θ − sign·b sin θ,  b' = sign·a sin θ + b cos θ.  `cs`, `sn`: the row's cos θ_i,
// sin θ_i (i < half). Half-split pairs (head[i], head[i + half]) are two contiguous runs that do not
// overlap (restrict), so the loop vectorises; interleaved pairs are (head[2i], head[2i + 1]).
template <class T>
void rope_rotate_row(T* row, std::int64_t n_heads, std::int64_t head_dim, std::int64_t half, RopeLayout layout,
                     const T* cs, const T* sn, T sign) {
    const T* __restrict__ c = cs;
    const T* __restrict__ s = sn;
    for (std::int64_t h = 0; h < n_heads; ++h) {
        T* head = row + h * head_dim;
        if (layout == RopeLayout::half_split) {
            T* __restrict__ pa = head;
            T* __restrict__ pb = head + half;
            for (std::int64_t i = 0; i < half; ++i) {
                const T a = pa[i], b = pb[i], si = sign * s[i];
                pa[i] = a * c[i] - b * si;
                pb[i] = a * si + b * c[i];
            }
            continue;
        }
        for (std::int64_t i = 0; i < half; ++i) {
            const T a = head[2 * i], b = head[2 * i + 1], si = sign * s[i];
            head[2 * i] = a * c[i] - b * si;
            head[2 * i + 1] = a * si + b * c[i];
        }
    }
}

}  // namespace detail

// Rotary position embedding, in place on x (T × n_heads·d_h), position of row t = t + offset.
// Pair (a, b) of frequency i (i < r/2) is rotated by θ = pos · base^(−2i/r) / f_i, r = rotary_dim (0: d_h),
// f_i = rope_freq_divisors[i] (Llama 3.1's scaling; empty: f_i = 1):
//   a' = a cos θ − b sin θ,  b' = a sin θ + b cos θ.
// interleaved: (a, b) = (x[2i], x[2i+1]);  half_split: (a, b) = (x[i], x[i + r/2]).
// Entries r … d_h − 1 of each head pass unrotated (partial rotary: GPT-NeoX rotates 25 %).
template <class T>
void rope_forward(Mat<T>& x, std::int64_t n_heads, std::int64_t head_dim, double base, RopeLayout layout,
                  std::int64_t offset = 0, std::int64_t rotary_dim = 0, const std::vector<double>& rope_freq_divisors = {}) {
    const std::int64_t r = rotary_dim > 0 ? rotary_dim : head_dim, half = r / 2;
    const RopeTable<T>& tab = rope_table<T>(x.rows(), r, base, offset, rope_freq_divisors);
    parallel_rows(x.rows(), x.cols() * std::int64_t(sizeof(T)), [&](std::int64_t first, std::int64_t end) {
        for (Eigen::Index t = first; t < end; ++t)
            detail::rope_rotate_row(x.row(t).data(), n_heads, head_dim, half, layout, tab.cos.data() + t * half,
                                    tab.sin.data() + t * half, T(1));
    });
}

}  // namespace sinkscope::model

namespace sinkscope::train {

using model::Mat;
using model::Vec;

// forward: (a, b) ← (a cos θ − b sin θ, a sin θ + b cos θ)   (rope_forward, a rotation Rθ)
//   The rotation is orthogonal, so dinp = Rθᵀ dout = R₋θ dout: applied in place on the gradient.
//   θ is computed exactly as in rope_forward (in float with its roundings, in double in double); with
//   partial rotary (rotary_dim r < d_h) entries r … d_h − 1 pass through, as in the forward, and the
//   frequency divisors f_i are rope_forward's.
template <class T>
void rope_backward(Mat<T>& dx, std::int64_t n_heads, std::int64_t head_dim, double base, model::RopeLayout layout,
                   std::int64_t offset = 0, std::int64_t rotary_dim = 0, const std::vector<double>& rope_freq_divisors = {}) {
    const std::int64_t r = rotary_dim > 0 ? rotary_dim : head_dim, half = r / 2;
    const model::RopeTable<T>& tab = model::rope_table<T>(dx.rows(), r, base, offset, rope_freq_divisors);  // rope_forward's θ
    for (Eigen::Index t = 0; t < dx.rows(); ++t)
        model::detail::rope_rotate_row(dx.row(t).data(), n_heads, head_dim, half, layout, tab.cos.data() + t * half,
                                       tab.sin.data() + t * half, T(-1));
}

}  // namespace sinkscope::train
