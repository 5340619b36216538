// Causal multi-head attention on the device: a fused scores → softmax → pattern·V kernel that can
// also emit the scores, the pattern, the sink-slot scores and the attention each key position
// receives; the unfused pieces (softmax of given scores, z from a given pattern) that the forward pass
// uses when a hook has changed the scores or the pattern; and the backward pass.
//
//   s[t, j] = q_t · k_j / √d_h   for j ≤ t (and t − j < window when windowed), −∞ otherwise
//   softmax:            p[t, j] = e^{s_j − m} / Σ_k e^{s_k − m}
//   off-by-one / slot:  p[t, j] = e^{s_j − m} / (e^{s_slot − m} + Σ_k e^{s_k − m})
//                       (s_slot = 0 for softmax-off-by-one, q_t · k_bias / √d_h for KV-bias)
//   z_t = Σ_j p[t, j] v_j   (+ (1 − Σ_j p[t, j]) v_bias for KV-bias)
//   received[h, j] += 1/(n − j) · Σ_{t ≥ j} p[t, j]    (Gu et al.'s α_j; model/reducers.hpp)
// Layouts: q (B·n × H·d_h), k and v (B·n × G·d_h) row-major, head h reads kv head g = h / (H/G);
// scores and pattern (B, H, n, n), as the hooks see them for B = 1 ([head, query_pos, key_pos]).
//
// The fused kernel runs one block per (query t, head h, sequence b); the scores of the query row live
// in shared memory (n floats), so n is limited by the device's shared memory per block
// (attention_smem_bytes; ~12k positions with the default 48 KiB, ~56k with the opt-in 227 KiB of an
// H100/H200); a longer sequence is an Error, not a silent fallback.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "sinkscope/cuda/common.cuh"
#include "sinkscope/cuda/gemm.cuh"
#include "sinkscope/model/config.hpp"

namespace sinkscope::cuda {

enum class Slot : int { none = 0, off_by_one = 1, kv_bias = 2 };

inline Slot slot_of(model::AttentionKind k) {
    return k == model::AttentionKind::softmax_off_by_one ? Slot::off_by_one
           : k == model::AttentionKind::kv_bias          ? Slot::kv_bias
                                                         : Slot::none;
}

struct AttentionArgs {
    const float* q = nullptr;
    const float* k = nullptr;
    const float* v = nullptr;
    float* z = nullptr;               // (B·n, H·d_h)
    float* scores = nullptr;          // (B, H, n, n) or null
    float* pattern = nullptr;         // (B, H, n, n) or null
    float* slot_scores = nullptr;     // (B, H, n) or null: s_slot of each query (slot kinds only)
    float* received = nullptr;        // (H, received_stride) accumulator or null
    std::int64_t received_stride = 0;
    const float* sink_k = nullptr;    // (G·d_h) KV-bias key and value
    const float* sink_v = nullptr;
    std::int64_t B = 1, n = 0, H = 0, G = 0, dh = 0, window = 0;
    Slot slot = Slot::none;
};

namespace detail {

// Threads per block of the fused kernel: at least d_h (the z phase gives each thread one channel).
inline int attention_threads(std::int64_t dh) {
    const std::int64_t t = std::max<std::int64_t>(128, round_up_warp(dh));
    return int(std::min<std::int64_t>(t, 1024));
}

struct FusedArgs {
    AttentionArgs a;
    float scale;
};

SINKSCOPE_KERNEL attention_fused_kernel(FusedArgs fa) {
    const AttentionArgs& a = fa.a;
    extern __shared__ float smem[];
    __shared__ float scratch[32];
    __shared__ float slot_score;
    const std::int64_t n = a.n, dh = a.dh, t = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
    const std::int64_t g = h / (a.H / a.G), qw = a.H * dh, kw = a.G * dh;
    float* s = smem;        // n scores / weights of this query row
    float* qs = s + n;      // d_h
    float* zp = qs + dh;    // parts × d_h partial sums
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarps = blockDim.x >> 5;

    const float* qrow = a.q + (b * n + t) * qw + h * dh;
    for (std::int64_t i = tid; i < dh; i += blockDim.x) qs[i] = qrow[i];
    __syncthreads();

    const std::int64_t lo = a.window > 0 ? (t - a.window + 1 > 0 ? t - a.window + 1 : 0) : 0;
    for (std::int64_t j = lo + warp; j <= t; j += nwarps) {
        const float* krow = a.k + (b * n + j) * kw + g * dh;
        float acc = 0.f;
        for (std::int64_t i = lane; i < dh; i += 32) acc += qs[i] * krow[i];
        acc = warp_sum(acc);
        if (lane == 0) s[j] = acc * fa.scale;
    }
    if (warp == 0) {
        float acc = 0.f;
        if (a.slot == Slot::kv_bias)
            for (std::int64_t i = lane; i < dh; i += 32) acc += qs[i] * a.sink_k[g * dh + i];
        acc = warp_sum(acc);
        if (lane == 0) slot_score = acc * fa.scale;  // 0 for off-by-one
    }
    __syncthreads();
    const bool has_slot = a.slot != Slot::none;
    const std::int64_t bh = b * a.H + h;
    if (a.scores) {
        float* out = a.scores + (bh * n + t) * n;
        for (std::int64_t j = tid; j < n; j += blockDim.x) out[j] = (j >= lo && j <= t) ? s[j] : -INFINITY;
    }
    if (has_slot && a.slot_scores && tid == 0) a.slot_scores[bh * n + t] = slot_score;

    float m = -INFINITY;
    for (std::int64_t j = lo + tid; j <= t; j += blockDim.x) m = fmaxf(m, s[j]);
    m = block_max(m, scratch);
    if (has_slot) m = fmaxf(m, slot_score);
    float sum = 0.f;
    for (std::int64_t j = lo + tid; j <= t; j += blockDim.x) {
        const float e = expf(s[j] - m);
        s[j] = e;
        sum += e;
    }
    sum = block_sum(sum, scratch);
    if (has_slot) sum += expf(slot_score - m);
    float psum = 0.f;
    for (std::int64_t j = lo + tid; j <= t; j += blockDim.x) {
        const float p = s[j] / sum;
        s[j] = p;
        psum += p;
        if (a.received) atomicAdd(a.received + h * a.received_stride + j, p / float(n - j));
    }
    __syncthreads();  // the weights s[j] were written by other threads than the ones that read them below
    if (a.pattern) {
        float* out = a.pattern + (bh * n + t) * n;
        for (std::int64_t j = tid; j < n; j += blockDim.x) out[j] = (j >= lo && j <= t) ? s[j] : 0.f;
    }
    if (a.slot == Slot::kv_bias) psum = block_sum(psum, scratch);
    __syncthreads();

    // z_t = Σ_j p_j v_j: thread (part, c) sums the keys j ≡ part (mod parts) of channel c.
    const std::int64_t parts = blockDim.x / dh;
    const std::int64_t c = tid % dh, part = tid / dh;
    if (part < parts) {
        float acc = 0.f;
        for (std::int64_t j = lo + part; j <= t; j += parts) acc += s[j] * a.v[(b * n + j) * kw + g * dh + c];
        zp[part * dh + c] = acc;
    }
    __syncthreads();
    for (std::int64_t cc = tid; cc < dh; cc += blockDim.x) {
        float acc = 0.f;
        for (std::int64_t p = 0; p < parts; ++p) acc += zp[p * dh + cc];
        if (a.slot == Slot::kv_bias) acc += (1.f - psum) * a.sink_v[g * dh + cc];
        a.z[(b * n + t) * qw + h * dh + cc] = acc;
    }
}

// pattern row = softmax(scores row) over all n entries (exactly model::softmax_forward: no re-masking,
// so a hook that wrote finite scores where the mask had −∞ is obeyed, as on the CPU).
SINKSCOPE_KERNEL softmax_rows_kernel(float* __restrict__ pattern, const float* __restrict__ scores,
                                    const float* __restrict__ slot_scores, std::int64_t n) {
    __shared__ float scratch[32];
    const std::int64_t row = blockIdx.x;
    const float* s = scores + row * n;
    float* p = pattern + row * n;
    float m = -INFINITY;
    for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) m = fmaxf(m, s[j]);
    m = block_max(m, scratch);
    if (slot_scores) m = fmaxf(m, slot_scores[row]);
    float sum = 0.f;
    for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) sum += expf(s[j] - m);
    sum = block_sum(sum, scratch);
    if (slot_scores) sum += expf(slot_scores[row] - m);
    for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) p[j] = expf(s[j] - m) / sum;
}

// z[b·n + t, h·d_h + c] += (1 − Σ_j P[b, h, t, j]) · v_bias[g·d_h + c]   (one warp per (b, h, t))
SINKSCOPE_KERNEL slot_value_kernel(float* __restrict__ z, const float* __restrict__ pattern, const float* __restrict__ sink_v,
                                  std::int64_t B, std::int64_t n, std::int64_t H, std::int64_t G, std::int64_t dh) {
    const std::int64_t w = blockIdx.x * std::int64_t(blockDim.x / 32) + threadIdx.x / 32;
    if (w >= B * H * n) return;
    const int lane = threadIdx.x & 31;
    const std::int64_t t = w % n, bh = w / n, h = bh % H, b = bh / H, g = h / (H / G);
    const float* p = pattern + w * n;
    float s = 0.f;
    for (std::int64_t j = lane; j < n; j += 32) s += p[j];
    s = warp_sum(s);
    for (std::int64_t c = lane; c < dh; c += 32) z[(b * n + t) * H * dh + h * dh + c] += (1.f - s) * sink_v[g * dh + c];
}

// received[h, j] += Σ_{t ≥ j} P[b, h, t, j] / (n − j), one thread per (b, h, j)
SINKSCOPE_KERNEL received_kernel(float* __restrict__ received, std::int64_t stride, const float* __restrict__ pattern,
                               std::int64_t B, std::int64_t H, std::int64_t n) {
    SINKSCOPE_GRID_STRIDE(k, B * H * n) {
        const std::int64_t j = k % n, bh = k / n, h = bh % H;
        const float* P = pattern + bh * n * n;
        float s = 0.f;
        for (std::int64_t t = j; t < n; ++t) s += P[t * n + j];
        atomicAdd(received + h * stride + j, s / float(n - j));
    }
}

// In place dP → dS:  dS[t, j] = scale · p_j (dP_j − ⟨p, dP⟩)   (softmax and off-by-one: the slot has
// no value, so its weight's gradient is 0 and the slot term of ⟨p, dP⟩ vanishes)
SINKSCOPE_KERNEL softmax_backward_kernel(float* __restrict__ dp, const float* __restrict__ pattern, std::int64_t n, float scale) {
    __shared__ float scratch[32];
    const std::int64_t row = blockIdx.x;
    const float* p = pattern + row * n;
    float* d = dp + row * n;
    float inner = 0.f;
    for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) inner += p[j] * d[j];
    inner = block_sum(inner, scratch);
    for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) d[j] = scale * (p[j] * (d[j] - inner));
}

}  // namespace detail

// Dynamic shared memory of the fused kernel for n positions and head_dim d_h.
inline std::size_t attention_smem_bytes(std::int64_t n, std::int64_t dh) {
    const std::int64_t threads = detail::attention_threads(dh);
    const std::int64_t parts = threads / dh;
    return std::size_t(n + dh + parts * dh) * sizeof(float);
}

// Validates the arguments (host logic, testable without a device); throws Error naming the problem.
inline void check_attention(const AttentionArgs& a, std::size_t max_smem) {
    require(a.q && a.k && a.v && a.z, "cuda::attention: q, k, v and z are required");
    require(a.B > 0 && a.n > 0 && a.H > 0 && a.G > 0 && a.dh > 0, "cuda::attention: empty dimensions");
    require(a.H % a.G == 0, "cuda::attention: n_heads (" + std::to_string(a.H) + ") must be a multiple of n_kv_heads (" +
                                std::to_string(a.G) + ")");
    require(a.dh <= 1024, "cuda::attention: head_dim " + std::to_string(a.dh) + " > 1024 is not supported by the fused kernel");
    require(a.H <= 65535 && a.B <= 65535, "cuda::attention: more than 65535 heads or sequences in one launch");
    require(a.window >= 0, "cuda::attention: negative window");
    require(a.slot != Slot::kv_bias || (a.sink_k && a.sink_v), "cuda::attention: KV-bias attention needs sink_k and sink_v");
    require(!a.received || a.received_stride >= a.n, "cuda::attention: the received accumulator is shorter than the sequence");
    const std::size_t need = attention_smem_bytes(a.n, a.dh);
    require(need <= max_smem, "cuda::attention: a sequence of " + std::to_string(a.n) + " positions needs " +
                                  std::to_string(need) + " bytes of shared memory per block, the device allows " +
                                  std::to_string(max_smem));
}

// The fused kernel: z, and whichever of scores / pattern / slot_scores / received are non-null.
inline void attention_forward(const Context& ctx, const AttentionArgs& a) {
    const std::size_t max_smem = std::size_t(ctx.properties().sharedMemPerBlockOptin);
    check_attention(a, max_smem);
    const std::size_t smem = attention_smem_bytes(a.n, a.dh);
    if (smem > 48 * 1024)
        SINKSCOPE_CUDA_CHECK(cudaFuncSetAttribute(detail::attention_fused_kernel<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    const detail::FusedArgs fa{a, 1.f / std::sqrt(float(a.dh))};
    detail::attention_fused_kernel<<<dim3(unsigned(a.n), unsigned(a.H), unsigned(a.B)), detail::attention_threads(a.dh), smem,
                                     ctx.stream()>>>(fa);
    SINKSCOPE_CUDA_CHECK_LAUNCH("attention_fused_kernel");
}

// pattern (rows × n) = softmax of each scores row (+ slot scores per row, or null).
inline void softmax_rows(const Context& ctx, float* pattern, const float* scores, const float* slot_scores, std::int64_t rows,
                         std::int64_t n) {
    if (rows == 0) return;
    detail::softmax_rows_kernel<<<unsigned(rows), 256, 0, ctx.stream()>>>(pattern, scores, slot_scores, n);
    SINKSCOPE_CUDA_CHECK_LAUNCH("softmax_rows_kernel");
}

// z = P V per head (batched GEMMs over (b, h), all n keys, as model::forward's pattern · v), plus the
// KV-bias slot value. `ptrs` is scratch for the pointer arrays.
inline void attention_apply_pattern(const Context& ctx, const AttentionArgs& a, BatchPointers& ptrs) {
    const std::int64_t n = a.n, dh = a.dh, qw = a.H * dh, kw = a.G * dh, group = a.H / a.G;
    ptrs.clear();
    for (std::int64_t b = 0; b < a.B; ++b)
        for (std::int64_t h = 0; h < a.H; ++h)
            ptrs.add(a.pattern + (b * a.H + h) * n * n, a.v + b * n * kw + (h / group) * dh, a.z + b * n * qw + h * dh);
    ptrs.upload(ctx.stream());
    gemm_batched(ctx, false, false, n, dh, n, 1.f, ptrs.a(), n, ptrs.b(), kw, 0.f, ptrs.c(), qw, ptrs.size());
    if (a.slot == Slot::kv_bias) {
        const std::int64_t warps = a.B * a.H * n;
        detail::slot_value_kernel<<<detail::blocks_for(warps, 8), 256, 0, ctx.stream()>>>(a.z, a.pattern, a.sink_v, a.B, n, a.H,
                                                                                          a.G, dh);
        SINKSCOPE_CUDA_CHECK_LAUNCH("slot_value_kernel");
    }
}

// received[h, j] += α_j of a (B, H, n, n) pattern (summed over the B sequences).
inline void attention_received(const Context& ctx, float* received, std::int64_t stride, const float* pattern, std::int64_t B,
                               std::int64_t H, std::int64_t n) {
    detail::received_kernel<<<detail::blocks_for(B * H * n, 256), 256, 0, ctx.stream()>>>(received, stride, pattern, B, H, n);
    SINKSCOPE_CUDA_CHECK_LAUNCH("received_kernel");
}

// Backward of softmax / off-by-one attention (no KV-bias) from the saved pattern:
//   z_h = P_h v_g:            dP = dz_h v_gᵀ,  dv_g += P_hᵀ dz_h
//   P = softmax(s):           dS = P ⊙ (dP − ⟨P, dP⟩) / √d_h
//   s = q_h k_gᵀ / √d_h:      dq_h = dS k_g,   dk_g += dSᵀ q_h
// dq is written; dk and dv are accumulated (zero them first). `dp` is scratch of B·H·n·n floats.
inline void attention_backward(const Context& ctx, float* dq, float* dk, float* dv, const float* dz, const float* q,
                               const float* k, const float* v, const float* pattern, DeviceBuffer<float>& dp, std::int64_t B,
                               std::int64_t n, std::int64_t H, std::int64_t G, std::int64_t dh, BatchPointers& ptrs) {
    const std::int64_t qw = H * dh, kw = G * dh, group = H / G;
    dp.resize(std::size_t(B * H * n * n));
    auto P = [&](std::int64_t b, std::int64_t h) { return pattern + (b * H + h) * n * n; };
    auto D = [&](std::int64_t b, std::int64_t h) { return dp.data() + (b * H + h) * n * n; };
    // dP = dz_h v_gᵀ   (n × n) for every (b, h)
    ptrs.clear();
    for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t h = 0; h < H; ++h) ptrs.add(dz + b * n * qw + h * dh, v + b * n * kw + (h / group) * dh, D(b, h));
    ptrs.upload(ctx.stream());
    gemm_batched(ctx, false, true, n, n, dh, 1.f, ptrs.a(), qw, ptrs.b(), kw, 0.f, ptrs.c(), n, ptrs.size());
    // dv_g += P_hᵀ dz_h, one call per member i of the group so that no two products of a call share dv_g
    for (std::int64_t i = 0; i < group; ++i) {
        ptrs.clear();
        for (std::int64_t b = 0; b < B; ++b)
            for (std::int64_t g = 0; g < G; ++g) {
                const std::int64_t h = g * group + i;
                ptrs.add(P(b, h), dz + b * n * qw + h * dh, dv + b * n * kw + g * dh);
            }
        ptrs.upload(ctx.stream());
        gemm_batched(ctx, true, false, n, dh, n, 1.f, ptrs.a(), n, ptrs.b(), qw, 1.f, ptrs.c(), kw, ptrs.size());
    }
    detail::softmax_backward_kernel<<<unsigned(B * H * n), 256, 0, ctx.stream()>>>(dp.data(), pattern, n,
                                                                                   1.f / std::sqrt(float(dh)));
    SINKSCOPE_CUDA_CHECK_LAUNCH("softmax_backward_kernel");
    // dq_h = dS k_g
    ptrs.clear();
    for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t h = 0; h < H; ++h) ptrs.add(D(b, h), k + b * n * kw + (h / group) * dh, dq + b * n * qw + h * dh);
    ptrs.upload(ctx.stream());
    gemm_batched(ctx, false, false, n, dh, n, 1.f, ptrs.a(), n, ptrs.b(), kw, 0.f, ptrs.c(), qw, ptrs.size());
    // dk_g += dSᵀ q_h
    for (std::int64_t i = 0; i < group; ++i) {
        ptrs.clear();
        for (std::int64_t b = 0; b < B; ++b)
            for (std::int64_t g = 0; g < G; ++g) {
                const std::int64_t h = g * group + i;
                ptrs.add(D(b, h), q + b * n * qw + h * dh, dk + b * n * kw + g * dh);
            }
        ptrs.upload(ctx.stream());
        gemm_batched(ctx, true, false, n, dh, n, 1.f, ptrs.a(), n, ptrs.b(), qw, 1.f, ptrs.c(), kw, ptrs.size());
    }
}

}  // namespace sinkscope::cuda
