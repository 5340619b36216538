// Causal attention: scores (scale, soft cap, window), softmax with an optional sink slot, the query-blocked attention without materialised patterns, and the softmax backward: forward and backward side by side.
//
// Forward kernels (namespace model) follow llm.c: outputs first, then inputs, then weights, then
// dimensions; activations are row-major (T × features), one row per position, and each function's
// comment gives its naive definition. Backward kernels (namespace train) accumulate (+=) into their
// gradients and quote the forward line they differentiate; tests/train/test_backward.cpp checks each
// against finite differences in double. The CUDA kernels of this layer: cuda/attention.cuh. Under bf16
// training on a CPU with AMX, the plain causal case runs on tiles instead (layers/amx_attention.hpp: the
// same roundings, another summation order).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "sinkscope/layers/amx_attention.hpp"
#include "sinkscope/layers/bf16_matmul.hpp"
#include "sinkscope/core/switches.hpp"
#include "sinkscope/core/tensor.hpp"

namespace sinkscope::model {

// True when this thread's attention products run in bf16 (MatmulSetting::attention; float only). Read it
// before an OpenMP region and pass it in: the setting is thread-local and the region's workers lack it.
template <class T>
bool attention_in_bf16() {
    return std::is_same_v<T, float> && matmul_precision() == MatmulPrecision::bf16 && matmul_setting_slot().attention;
}

namespace detail {
template <class X>
MatrixRef product_operand(const X& x) { return matrix_ref(x); }
template <class X>
MatrixRef product_operand(const Eigen::Transpose<X>& x) { return matrix_ref(x.nestedExpression()).transposed(); }
inline MatrixRef product_operand(const MatrixRef& x) { return x; }
}  // namespace detail

// The transpose of a product operand: an Eigen block's view, or a MatrixRef's (bf16 bits).
template <class X>
auto transpose_of(const X& x) { return x.transpose(); }
inline MatrixRef transpose_of(const MatrixRef& x) { return x.transposed(); }

// One of the attention's products: C = α·a·b, or C += a·b (accumulate), where a and b are blocks of
// row-major matrices or their transposes and C a block of a row-major matrix. With `bf16` (float only)
// a and b are rounded to bf16 and the products summed in float32 (bf16_matmul); otherwise Eigen in T.
// An operand given as a MatrixRef of bf16 bits (a Bf16Matrix's block) needs `bf16`.
template <class CBlock, class A, class B>
void attention_product(CBlock&& C, const A& a, const B& b, bool accumulate, bool bf16,
                       typename std::decay_t<CBlock>::Scalar alpha = 1) {
    using T = typename std::decay_t<CBlock>::Scalar;
    constexpr bool has_bits = std::is_same_v<A, MatrixRef> || std::is_same_v<B, MatrixRef>;
    if constexpr (std::is_same_v<T, float>) {
        if (bf16) {
            require(!accumulate || alpha == 1, "attention_product: a scaled product cannot accumulate");
            bf16_matmul(C.data(), C.outerStride(), detail::product_operand(a), detail::product_operand(b), accumulate);
            if (alpha != 1) C *= alpha;
            return;
        }
    }
    if constexpr (has_bits) {
        throw Error("attention_product: an operand held as bf16 bits needs a bf16 product");
    } else {
        if (accumulate) C.noalias() += a * b;
        else if (alpha != 1) C.noalias() = (a * b) * alpha;
        else C.noalias() = a * b;
    }
}

// Soft cap (Gemma 2): s ← c·tanh(s/c) on every entry of a block; c = 0 leaves it as it is.
template <class Block>
void softcap(Block&& s, double c) {
    using T = typename std::decay_t<Block>::Scalar;
    if (c > 0) s = (s.array() / T(c)).tanh() * T(c);
}

// How a query-key score is formed: s = (q·k)·scale, then s ← c·tanh(s/c) when the soft cap c > 0
// (Gemma 2); scale 0 stands for 1/√d_h. Keys more than `window` − 1 positions back are masked (0: none).
struct ScoreRule {
    std::int64_t window = 0;
    double scale = 0;
    double softcap = 0;
    template <class T> T scale_for(std::int64_t head_dim) const { return scale > 0 ? T(scale) : T(1) / std::sqrt(T(head_dim)); }
    // s ← c·tanh(s/c) on every entry of a block of scores (before the mask, as Hugging Face does).
    template <class Block> void cap(Block&& s) const { model::softcap(std::forward<Block>(s), softcap); }
};

// Causal attention of one head, in place of its pattern row block.
//   scores[t, j] = q_t · k_j / √d_h  for allowed j (j ≤ t, and t − j < window when windowed), −∞ otherwise
//   (the scale and soft cap of a ScoreRule where given)
//   softmax:            p[t, j] = e^{s_j} / Σ_k e^{s_k}
//   off-by-one / slot:  p[t, j] = e^{s_j} / (e^{s_slot} + Σ_k e^{s_k})   (s_slot = 0 for off-by-one)
// `slot_scores` holds s_slot per query (empty: no extra slot). `scores` and `pattern` are (T × T).
// With `bf16` (float only) q·kᵀ takes bf16 inputs (attention_product).
template <class T, class QBlock, class KBlock>
void attention_scores_forward(Eigen::Ref<Mat<T>> scores, const QBlock& q, const KBlock& k, ScoreRule rule, bool bf16 = false) {
    const Eigen::Index n = q.rows();
    const std::int64_t window = rule.window;
    attention_product(scores, q, k.transpose(), false, bf16, rule.scale_for<T>(q.cols()));
    rule.cap(scores);
    const T ninf = -std::numeric_limits<T>::infinity();
    for (Eigen::Index t = 0; t < n; ++t) {
        for (Eigen::Index j = t + 1; j < n; ++j) scores(t, j) = ninf;
        if (window > 0)
            for (Eigen::Index j = 0; j <= t - window; ++j) scores(t, j) = ninf;
    }
}

// Masked keys (score −∞) get exactly 0. Each row's exp runs only over [first, last], its first and last
// unmasked keys (the causal mask leaves −∞ after t, a window before t − w + 1), with Eigen's vectorised
// exp; masked keys inside that range (a hook may set any) are zeroed after it, since the vectorised exp
// clamps −∞ to a tiny positive value (a fused select would fall back to a scalar exp per entry).
template <class T>
void softmax_forward(Eigen::Ref<Mat<T>> pattern, const Eigen::Ref<const Mat<T>>& scores, const T* slot_scores) {
    const T ninf = -std::numeric_limits<T>::infinity();
    const Eigen::Index n = scores.cols();
    for (Eigen::Index t = 0; t < scores.rows(); ++t) {
        const T* s = scores.data() + t * scores.outerStride();
        Eigen::Index first = 0, last = n;  // live range [first, last)
        while (last > 0 && s[last - 1] == ninf) --last;
        while (first < last && s[first] == ninf) ++first;
        auto row = pattern.row(t);
        row.head(first).setZero();
        row.tail(n - last).setZero();
        const auto live_scores = scores.row(t).segment(first, last - first).array();
        T m = last > first ? live_scores.maxCoeff() : ninf;
        if (slot_scores) m = std::max(m, slot_scores[t]);
        auto live = row.segment(first, last - first).array();
        live = (live_scores - m).exp();
        for (Eigen::Index j = 0; j < last - first; ++j)
            if (live_scores(j) == ninf) live(j) = T(0);
        T z = live.sum();
        if (slot_scores) z += std::exp(slot_scores[t] - m);
        live /= z;
    }
}

namespace detail {

// Rows [r0, r0 + p.rows()) of head h's attention pattern over keys [lo, lo + p.cols()), the keys those
// rows may see (lo: the window's start for the first row, else 0): scores q_h k_gᵀ·scale (soft-capped)
// and the softmax of each row over its visible keys, with the slot term when `slot_scores` (H × T) is
// given; keys a row may not see get 0. The arithmetic of attention_scores_forward + softmax_forward.
template <class T, class PBlock>
void causal_pattern_rows(PBlock&& p, const Mat<T>& q, const Mat<T>& k, std::int64_t h, std::int64_t g, std::int64_t dh,
                         std::int64_t r0, std::int64_t lo, const ScoreRule& rule, T scale, const Mat<T>* slot_scores,
                         bool bf16) {
    const std::int64_t rows = p.rows(), keys = p.cols(), window = rule.window;
    attention_product(p, q.block(r0, h * dh, rows, dh), k.block(lo, g * dh, keys, dh).transpose(), false, bf16, scale);
    rule.cap(p);
    for (std::int64_t t = r0; t < r0 + rows; ++t) {
        const std::int64_t j0 = (window > 0 ? std::max<std::int64_t>(0, t - window + 1) : 0) - lo;
        const std::int64_t j1 = t - lo + 1;  // keys [j0, j1) of the block are visible to t
        auto row = p.row(t - r0);
        auto live = row.segment(j0, j1 - j0).array();
        T m = live.maxCoeff();
        if (slot_scores) m = std::max(m, (*slot_scores)(h, t));
        live = (live - m).exp();
        T denom = live.sum();
        if (slot_scores) denom += std::exp((*slot_scores)(h, t) - m);
        live /= denom;
        row.head(j0).setZero();
        row.tail(keys - j1).setZero();
    }
}

}  // namespace detail

// The attention pattern of every head, (H·T × T) with head h at rows [h·T, h·T + T), computed the way
// causal_attention_forward computes it: by blocks of query rows over the keys they may see, so neither
// the (H·T × T) scores nor the masked upper triangle is ever computed. The same numbers as
// attention_scores_forward + softmax_forward, for a caller that needs the pattern but not the scores.
// q (T × H·d_h), k (T × G·d_h); `slot_scores` (H × T) or null as in causal_attention_forward.
// With `z` (and `v`, T × G·d_h) given, also the attention output z (T × H·d_h) from each row block while
// it is in cache, over the keys [lo, r1) that block may see (the masked keys' zero weights add nothing):
//   z[r0:r1, head h] = P_h[r0:r1, lo:r1] · v_g[lo:r1]   (+ (1 − Σ_j P_h[t, j]) v_slot with `slot_value`)
// the numbers of the full product P_h · v_g without its masked half (up to float summation order).
// With `bf16`, z, a plain causal softmax (no window, cap or slot) and AMX (use_amx_attention), each head
// is computed by amx_attention_forward_head instead: the same pattern up to float rounding.
template <class T>
void causal_pattern_forward(Mat<T>& pattern, const Mat<T>& q, const Mat<T>& k, std::int64_t n_heads, std::int64_t n_kv_heads,
                            std::int64_t head_dim, ScoreRule rule, const Mat<T>* slot_scores, bool bf16,
                            Mat<T>* z = nullptr, const Mat<T>* v = nullptr, const T* slot_value = nullptr) {
    constexpr std::int64_t kQueryBlock = 128;
    const std::int64_t n = q.rows(), group = n_heads / n_kv_heads, window = rule.window, dh = head_dim;
    const T scale = rule.scale_for<T>(head_dim);
    require(!z || v, "causal_pattern_forward: z needs v");
    pattern.resize(n_heads * n, n);
    if (z) z->resize(n, n_heads * dh);
    if constexpr (std::is_same_v<T, float>) {
        // bf16 products, plain causal softmax, z wanted: each head on AMX tiles where the CPU has them.
        const bool plain = !slot_scores && !slot_value && window == 0 && rule.softcap == 0;
        if (bf16 && z && use_amx_attention(dh, plain)) {
#pragma omp parallel for schedule(static) if (n_heads > 1)
            for (std::int64_t h = 0; h < n_heads; ++h) {
                const std::int64_t g = h / group;
                amx_attention_forward_head(pattern.data() + h * n * n, n, z->data() + h * dh, z->cols(), q.data() + h * dh, q.cols(),
                                           k.data() + g * dh, k.cols(), v->data() + g * dh, v->cols(), n, dh, scale);
            }
            return;
        }
    }
#pragma omp parallel for schedule(static) if (n_heads > 1)
    for (std::int64_t h = 0; h < n_heads; ++h)
        for (std::int64_t r0 = 0; r0 < n; r0 += kQueryBlock) {
            const std::int64_t r1 = std::min(n, r0 + kQueryBlock), rows = r1 - r0, g = h / group;
            const std::int64_t lo = window > 0 ? std::max<std::int64_t>(0, r0 - window + 1) : 0;
            pattern.block(h * n + r0, 0, rows, lo).setZero();
            pattern.block(h * n + r0, r1, rows, n - r1).setZero();
            auto p = pattern.block(h * n + r0, lo, rows, r1 - lo);
            detail::causal_pattern_rows(p, q, k, h, g, dh, r0, lo, rule, scale, slot_scores, bf16);
            if (!z) continue;
            auto zh = z->block(r0, h * dh, rows, dh);
            attention_product(zh, p, v->block(lo, g * dh, r1 - lo, dh), false, bf16);
            if (slot_value) {
                const Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>> sv(slot_value + g * dh, dh);
                zh.noalias() += (T(1) - p.rowwise().sum().array()).matrix() * sv;
            }
        }
}

// Causal attention of every head without materialising the (H, T, T) scores and pattern, the same
// arithmetic as attention_scores_forward + softmax_forward + z = p·v restricted to the keys a query may
// see. Queries are taken in blocks of `kQueryBlock` rows; block [r0, r1) of head h reads keys [lo, r1),
//   lo = max(0, r0 − window + 1) (windowed) or 0,
// so the masked upper triangle is never computed: about half the work of the full product at large T.
// Row t of a block keeps keys j ∈ [max(0, t − window + 1), t]:
//   p[t, j] = e^{s_j − m} / (Σ_k e^{s_k − m} + e^{s_slot − m}),   m = max(s_slot, max_k s_k)
// with the slot term only when `slot_scores` (H × T) is given; `slot_value` (G·d_h), when given, is the
// KV-bias value, weighted by what the real keys did not take: z_t += (1 − Σ_j p[t, j]) v_slot.
// q (T × H·d_h), k and v (T × G·d_h), z (T × H·d_h); query head h reads kv head h / (H / G).
template <class T>
void causal_attention_forward(Mat<T>& z, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, std::int64_t n_heads,
                              std::int64_t n_kv_heads, std::int64_t head_dim, ScoreRule rule,
                              const Mat<T>* slot_scores, const T* slot_value) {
    constexpr std::int64_t kQueryBlock = 64;
    const std::int64_t n = q.rows(), group = n_heads / n_kv_heads, dh = head_dim, window = rule.window;
    const std::int64_t blocks = (n + kQueryBlock - 1) / kQueryBlock;
    const T scale = rule.scale_for<T>(dh);
    const bool bf16 = attention_in_bf16<T>();
    z.resize(n, n_heads * dh);
#pragma omp parallel if (n_heads * blocks > 1)
    {
        Mat<T> buffer(std::min(n, kQueryBlock), n);  // one block's scores, then its pattern
#pragma omp for schedule(dynamic, 1)
        for (std::int64_t unit = 0; unit < n_heads * blocks; ++unit) {
            const std::int64_t h = unit % n_heads, b = blocks - 1 - unit / n_heads;  // longest blocks first
            const std::int64_t r0 = b * kQueryBlock, r1 = std::min(n, r0 + kQueryBlock), rows = r1 - r0;
            const std::int64_t lo = window > 0 ? std::max<std::int64_t>(0, r0 - window + 1) : 0, keys = r1 - lo;
            const std::int64_t g = h / group;
            auto p = buffer.topLeftCorner(rows, keys);
            detail::causal_pattern_rows(p, q, k, h, g, dh, r0, lo, rule, scale, slot_scores, bf16);
            auto zh = z.block(r0, h * dh, rows, dh);
            attention_product(zh, p, v.block(lo, g * dh, keys, dh), false, bf16);
            if (slot_value) {
                const Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>> sv(slot_value + g * dh, dh);
                zh.noalias() += (T(1) - p.rowwise().sum().array()).matrix() * sv;
            }
        }
    }
}

}  // namespace sinkscope::model

namespace sinkscope::train {

using model::Mat;
using model::Vec;

// forward: p[t, j] = e^{s_j} / (e^{s_slot} + Σ_k e^{s_k})      (softmax_forward; no slot: plain softmax)
// The slot (softmax-off-by-one, KV bias) takes p_slot = 1 − Σ_j p[t, j]. With dP the gradient of the
// real weights and dP_slot that of the slot weight (0 for off-by-one, whose slot value is zero):
//   dS[t, j]   += p_j (dP_j − ⟨p, dP⟩ − p_slot dP_slot)
//   dslot[t]   += p_slot (dP_slot − ⟨p, dP⟩ − p_slot dP_slot)      (when dslot is wanted)
// dscores and dpattern are (T × T); `slot_dp` (T) or null, `dslot` (T) or null. Masked keys have p = 0
// and get no gradient. With `accumulate` false, dscores is assigned α·p_j (dP_j − ⟨p, dP⟩ − p_slot dP_slot)
// instead (α = `scale`, e.g. the score scale 1/√d_h the caller would multiply by next): one pass over
// the block instead of a zeroing, an addition and a scaling; dslot still accumulates, unscaled.
template <class T>
void softmax_backward(Eigen::Ref<Mat<T>> dscores, T* dslot, const Eigen::Ref<const Mat<T>>& dpattern,
                      const Eigen::Ref<const Mat<T>>& pattern, const T* slot_dp, bool has_slot, bool accumulate = true,
                      T scale = T(1)) {
    for (Eigen::Index t = 0; t < pattern.rows(); ++t) {
        const T ps = has_slot ? T(1) - pattern.row(t).sum() : T(0);
        const T dps = slot_dp ? slot_dp[t] : T(0);
        const T inner = pattern.row(t).dot(dpattern.row(t)) + ps * dps;
        const auto term = pattern.row(t).array() * (dpattern.row(t).array() - inner);
        if (accumulate) dscores.row(t).array() += term;
        else dscores.row(t).array() = scale * term;
        if (dslot) dslot[t] += ps * (dps - inner);
    }
}

}  // namespace sinkscope::train
