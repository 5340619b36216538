// AdamW, global gradient norm and clipping on the device (train/optimizer.hpp, same update and rules).
//
//   p ← p · (1 − lr·λ)                    (decayed tensors only: train::decays(name, is_matrix))
//   m ← β₁ m + (1 − β₁) g;   v ← β₂ v + (1 − β₂) g²
//   p ← p − (lr / (1 − β₁ᵗ)) · m / (√v / √(1 − β₂ᵗ) + ε)
//   ‖g‖ = √(Σ g²) over every tensor (accumulated in double);  g ← g · min(1, c / (‖g‖ + 10⁻⁶))
// Parameters, gradients and moments are DeviceWeights of one layout, so the norm and the clipping run
// over the flat gradient arena and AdamW runs once per tensor (for its decay flag).
#pragma once

#include <cmath>
#include <cstdint>

#include "sinkscope/cuda/common.cuh"
#include "sinkscope/cuda/elementwise.cuh"
#include "sinkscope/cuda/weights.cuh"
#include "sinkscope/train/optimizer.hpp"

namespace sinkscope::cuda {

namespace detail {

SINKSCOPE_KERNEL adamw_kernel(float* __restrict__ p, const float* __restrict__ g, float* __restrict__ m, float* __restrict__ v,
                             std::int64_t n, float decay_factor, int decay, float b1, float b2, float eps, float step_size,
                             float sqrt_bc2) {
    SINKSCOPE_GRID_STRIDE(i, n) {
        float pi = p[i];
        if (decay) pi *= decay_factor;
        const float gi = g[i];
        const float mi = b1 * m[i] + (1.f - b1) * gi;
        const float vi = b2 * v[i] + (1.f - b2) * (gi * gi);
        m[i] = mi;
        v[i] = vi;
        p[i] = pi - step_size * mi / (sqrtf(vi) / sqrt_bc2 + eps);
    }
}

SINKSCOPE_KERNEL sum_squares_kernel(double* __restrict__ out, const float* __restrict__ x, std::int64_t n) {
    __shared__ double scratch[32];
    double acc = 0;
    SINKSCOPE_GRID_STRIDE(i, n) acc += double(x[i]) * double(x[i]);
    acc = block_sum(acc, scratch);
    if (threadIdx.x == 0) atomicAdd(out, acc);
}

}  // namespace detail

// √(Σ x²) of n device values (double accumulation).
inline double l2_norm(const Context& ctx, const float* x, std::int64_t n, DeviceBuffer<double>& scratch) {
    scratch.resize(1);
    scratch.zero(ctx.stream());
    if (n > 0) {
        detail::sum_squares_kernel<<<detail::blocks_for(n, 256, 2048), 256, 0, ctx.stream()>>>(scratch.data(), x, n);
        SINKSCOPE_CUDA_CHECK_LAUNCH("sum_squares_kernel");
    }
    double s = 0;
    scratch.download(&s, 1, ctx.stream());
    return std::sqrt(s);
}

// train::clip_gradients on the device: scales g so that its global norm is at most max_norm (≤ 0: no
// clipping); returns the norm before clipping.
inline double clip_gradients(const Context& ctx, DeviceWeights& g, double max_norm, DeviceBuffer<double>& scratch) {
    const double norm = l2_norm(ctx, g.arena(), g.parameter_count(), scratch);
    if (max_norm > 0 && std::isfinite(norm)) {
        const double coef = std::min(1.0, max_norm / (norm + 1e-6));
        if (coef < 1.0) {
            const std::int64_t n = g.parameter_count();
            detail::scale_kernel<<<detail::blocks_for(n, 256), 256, 0, ctx.stream()>>>(g.arena(), float(coef), n);
            SINKSCOPE_CUDA_CHECK_LAUNCH("scale_kernel (clip)");
        }
    }
    return norm;
}

// train::AdamW on the device. The moments start at zero; step() counts updates.
class DeviceAdamW {
public:
    DeviceAdamW(const Context& ctx, const train::AdamWConfig& o, const DeviceWeights& params)
        : o_(o), m_(like_layout(ctx, params)), v_(like_layout(ctx, params)) {
        o.validate();
    }

    // One update of `w` with gradients `g` at learning rate lr (the caller's schedule).
    void update(const Context& ctx, DeviceWeights& w, const DeviceWeights& g, double lr) {
        require(w.parameter_count() == g.parameter_count() && w.parameter_count() == m_.parameter_count(),
                "cuda::DeviceAdamW: parameters, gradients and state differ in size");
        ++step_;
        const double bc1 = 1.0 - std::pow(o_.beta1, double(step_));
        const double bc2 = 1.0 - std::pow(o_.beta2, double(step_));
        const float step_size = float(lr / bc1), sqrt_bc2 = float(std::sqrt(bc2));
        const float decay_factor = float(1.0 - lr * o_.weight_decay);
        for (const ArenaEntry& e : w.entries()) {
            const bool decay = o_.weight_decay > 0 && train::decays(e.name, e.is_matrix);
            detail::adamw_kernel<<<detail::blocks_for(e.size(), 256), 256, 0, ctx.stream()>>>(
                w.arena() + e.offset, g.arena() + e.offset, m_.arena() + e.offset, v_.arena() + e.offset, e.size(),
                decay_factor, decay ? 1 : 0, float(o_.beta1), float(o_.beta2), float(o_.eps), step_size, sqrt_bc2);
            SINKSCOPE_CUDA_CHECK_LAUNCH("adamw_kernel");
        }
    }

    std::int64_t step() const { return step_; }
    void set_step(std::int64_t s) { step_ = s; }
    DeviceWeights& m() { return m_; }
    DeviceWeights& v() { return v_; }
    const train::AdamWConfig& config() const { return o_; }

private:
    train::AdamWConfig o_;
    DeviceWeights m_, v_;
    std::int64_t step_ = 0;
};

}  // namespace sinkscope::cuda
