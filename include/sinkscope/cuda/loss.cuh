// Next-token cross-entropy on the device, forward and backward in one kernel (train/loss.hpp).
//
//   loss_t = logsumexp(logits_t) − logits_t[target_t]                       (counted rows only)
//   dlogits_t = (softmax(logits_t) − onehot(target_t)) · grad_scale        (0 on rows the mask skips)
// One block per row; the log-sum-exp is formed like the CPU's (fp32 max and Σ e^{x−m}, then
// m + log Σ in double). dlogits may alias logits (in place: the logits are not needed afterwards).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "sinkscope/cuda/common.cuh"
#include "sinkscope/train/loss.hpp"

namespace sinkscope::cuda {

namespace detail {

struct MaskArgs {
    std::int64_t begin = 0, end = -1, T = 0;
    int skip_first = 0;
    __host__ __device__ bool counts(std::int64_t t) const {
        const std::int64_t e = end < 0 ? T : (end < T ? end : T);
        return t >= begin && t < e && !(skip_first && t == 0);
    }
};

SINKSCOPE_KERNEL cross_entropy_kernel(float* dlogits, double* __restrict__ row_loss, const float* logits,
                                     const std::int32_t* __restrict__ targets, std::int64_t V, MaskArgs mask, float grad_scale) {
    __shared__ float scratch[32];
    const std::int64_t row = blockIdx.x, t = row % mask.T;
    const float* l = logits + row * V;
    float* dl = dlogits ? dlogits + row * V : nullptr;
    if (!mask.counts(t)) {
        if (dl) for (std::int64_t j = threadIdx.x; j < V; j += blockDim.x) dl[j] = 0.f;
        if (threadIdx.x == 0) row_loss[row] = 0.0;
        return;
    }
    const std::int32_t y = targets[row];
    const float ly = l[y];
    float m = -INFINITY;
    for (std::int64_t j = threadIdx.x; j < V; j += blockDim.x) m = fmaxf(m, l[j]);
    m = block_max(m, scratch);
    float z = 0.f;
    for (std::int64_t j = threadIdx.x; j < V; j += blockDim.x) z += expf(l[j] - m);
    z = block_sum(z, scratch);
    if (threadIdx.x == 0) row_loss[row] = (double(m) + log(double(z))) - double(ly);
    if (dl)
        for (std::int64_t j = threadIdx.x; j < V; j += blockDim.x)
            dl[j] = (expf(l[j] - m) / z) * grad_scale - (j == y ? grad_scale : 0.f);
}

}  // namespace detail

// Cross-entropy of R = B·T rows of logits (R × V) against targets (device, R ids, validated by the
// caller); the mask applies to t = row mod T. Writes dlogits (may equal logits; null: loss only) and
// returns the sum over counted rows of their losses, with their count. `row_loss` is scratch.
inline train::LossSum cross_entropy(const Context& ctx, float* dlogits, const float* logits, const std::int32_t* targets,
                                    std::int64_t B, std::int64_t T, std::int64_t V, const train::LossMask& mask, float grad_scale,
                                    DeviceBuffer<double>& row_loss) {
    const std::int64_t R = B * T;
    require(R > 0 && V > 0, "cuda::cross_entropy: empty logits");
    mask.validate(T);
    row_loss.resize(std::size_t(R));
    detail::MaskArgs m{mask.begin, mask.end, T, mask.skip_first ? 1 : 0};
    detail::cross_entropy_kernel<<<unsigned(R), 256, 0, ctx.stream()>>>(dlogits, row_loss.data(), logits, targets, V, m, grad_scale);
    SINKSCOPE_CUDA_CHECK_LAUNCH("cross_entropy_kernel");
    const std::vector<double> h = row_loss.to_host(ctx.stream());
    train::LossSum out;
    for (std::int64_t r = 0; r < R; ++r) out.sum += h[r];
    out.count = B * mask.count(T);
    return out;
}

}  // namespace sinkscope::cuda
