// Forward kernels of the sinkscope transformer, one function per layer, pure and row-wise.
//
// Argument order follows llm.c: outputs first, then inputs, then weights, then dimensions.
// Activations are row-major (T × features), one row per position. Each function has a naive
// definition in its comment; the code is that definition, vectorised by Eigen.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "sinkscope/model/config.hpp"
#include "sinkscope/model/weights.hpp"

namespace sinkscope::model {

// y = x Wᵀ (+ b).   x (T × in), W (out × in), b (out) or empty, y (T × out).
template <class T>
void linear_forward(Mat<T>& y, const Mat<T>& x, const Mat<T>& W, const Vec<T>& b) {
    y.noalias() = x * W.transpose();
    if (b.size()) y.rowwise() += b.transpose();
}

// RMSNorm (Zhang & Sennrich): y = x / √(mean(x²) + eps) ⊙ g.
template <class T>
void rmsnorm_forward(Mat<T>& y, const Mat<T>& x, const Vec<T>& g, double eps) {
    y.resize(x.rows(), x.cols());
    for (Eigen::Index t = 0; t < x.rows(); ++t) {
        const T ms = x.row(t).squaredNorm() / T(x.cols());
        const T inv = T(1) / std::sqrt(ms + T(eps));
        y.row(t) = (x.row(t) * inv).cwiseProduct(g.transpose());
    }
}

// LayerNorm: y = (x − mean(x)) / √(var(x) + eps) ⊙ g + b, variance with 1/d (biased), as PyTorch.
template <class T>
void layernorm_forward(Mat<T>& y, const Mat<T>& x, const Vec<T>& g, const Vec<T>& b, double eps) {
    y.resize(x.rows(), x.cols());
    for (Eigen::Index t = 0; t < x.rows(); ++t) {
        const T mean = x.row(t).mean();
        const auto centred = x.row(t).array() - mean;
        const T var = centred.square().mean();
        const T inv = T(1) / std::sqrt(var + T(eps));
        y.row(t) = (centred * inv).matrix().cwiseProduct(g.transpose());
        if (b.size()) y.row(t) += b.transpose();
    }
}

// DynamicTanh (Zhu et al.): y = γ ⊙ tanh(α x) + β, α a learnable scalar.
template <class T>
void dyt_forward(Mat<T>& y, const Mat<T>& x, const Vec<T>& alpha, const Vec<T>& gamma, const Vec<T>& beta) {
    y = (x.array() * alpha(0)).tanh().matrix();
    y.array().rowwise() *= gamma.transpose().array();
    if (beta.size()) y.rowwise() += beta.transpose();
}

template <class T>
void norm_forward(Mat<T>& y, const Mat<T>& x, const NormWeights<T>& w, NormKind kind, double eps) {
    switch (kind) {
        case NormKind::rmsnorm: rmsnorm_forward(y, x, w.weight, eps); return;
        case NormKind::layernorm: layernorm_forward(y, x, w.weight, w.bias, eps); return;
        case NormKind::dynamic_tanh: dyt_forward(y, x, w.alpha, w.weight, w.bias); return;
    }
}

// Per-head RMSNorm over d_h (Qwen3's q_norm / k_norm). x (T × n_heads·d_h), in place.
template <class T>
void head_rmsnorm_forward(Mat<T>& x, const Vec<T>& g, std::int64_t n_heads, std::int64_t head_dim, double eps) {
    for (Eigen::Index t = 0; t < x.rows(); ++t)
        for (std::int64_t h = 0; h < n_heads; ++h) {
            auto seg = x.row(t).segment(h * head_dim, head_dim);
            const T inv = T(1) / std::sqrt(seg.squaredNorm() / T(head_dim) + T(eps));
            seg = (seg * inv).cwiseProduct(g.transpose());
        }
}

// cos θ and sin θ of rope_forward for rows t ∈ [0, n) (position t + offset) and frequencies i < d_h/2,
// row-major (n × d_h/2). Cached per thread: training applies RoPE 4 times per layer and sequence with
// the same table; rows [0, n) of a longer cached table are the same numbers.
template <class T>
struct RopeTable {
    std::int64_t n = -1, head_dim = -1, offset = 0;
    double base = 0;
    std::vector<T> cos, sin;
};
template <class T>
const RopeTable<T>& rope_table(std::int64_t n, std::int64_t head_dim, double base, std::int64_t offset) {
    thread_local RopeTable<T> tab;
    if (tab.n >= n && tab.head_dim == head_dim && tab.base == base && tab.offset == offset) return tab;
    const std::int64_t half = head_dim / 2;
    // Hugging Face computes inv_freq = 1 / base^(2i/d_h) and θ = pos · inv_freq in float32; in float we
    // round at the same places so that θ agrees bit for bit, in double we keep double throughout.
    constexpr bool single = std::is_same_v<T, float>;
    std::vector<double> inv_freq(half);
    for (std::int64_t i = 0; i < half; ++i) {
        if (single) inv_freq[i] = 1.0f / std::pow(float(base), float(2 * i) / float(head_dim));
        else inv_freq[i] = std::pow(base, -2.0 * double(i) / double(head_dim));
    }
    tab.cos.resize(std::size_t(n * half));
    tab.sin.resize(std::size_t(n * half));
    for (std::int64_t t = 0; t < n; ++t)
        for (std::int64_t i = 0; i < half; ++i) {
            const double theta = single ? double(float(t + offset) * float(inv_freq[i])) : double(t + offset) * inv_freq[i];
            tab.cos[std::size_t(t * half + i)] = T(std::cos(theta));
            tab.sin[std::size_t(t * half + i)] = T(std::sin(theta));
        }
    tab.n = n; tab.head_dim = head_dim; tab.base = base; tab.offset = offset;
    return tab;
}

// Rotary position embedding, in place on x (T × n_heads·d_h), position of row t = t + offset.
// Pair (a, b) of frequency i (i < r/2) is rotated by θ = pos · base^(−2i/r), r = rotary_dim (0: d_h):
//   a' = a cos θ − b sin θ,  b' = a sin θ + b cos θ.
// interleaved: (a, b) = (x[2i], x[2i+1]);  half_split: (a, b) = (x[i], x[i + r/2]).
// Entries r … d_h − 1 of each head pass unrotated (partial rotary: GPT-NeoX rotates 25 %).
template <class T>
void rope_forward(Mat<T>& x, std::int64_t n_heads, std::int64_t head_dim, double base, RopeLayout layout,
                  std::int64_t offset = 0, std::int64_t rotary_dim = 0) {
    const std::int64_t r = rotary_dim > 0 ? rotary_dim : head_dim, half = r / 2;
    const RopeTable<T>& tab = rope_table<T>(x.rows(), r, base, offset);
    for (Eigen::Index t = 0; t < x.rows(); ++t) {
        for (std::int64_t i = 0; i < half; ++i) {
            const T c = tab.cos[std::size_t(t * half + i)], s = tab.sin[std::size_t(t * half + i)];
            for (std::int64_t h = 0; h < n_heads; ++h) {
                T* head = x.row(t).data() + h * head_dim;
                const std::int64_t ia = layout == RopeLayout::interleaved ? 2 * i : i;
                const std::int64_t ib = layout == RopeLayout::interleaved ? 2 * i + 1 : i + half;
                const T a = head[ia], b = head[ib];
                head[ia] = a * c - b * s;
                head[ib] = a * s + b * c;
            }
        }
    }
}

// Activations of the FFN: silu(x) = x σ(x); GELU exact (erf) or its tanh approximation (GPT-2's gelu_new).
template <class T> T silu(T x) { return x / (T(1) + std::exp(-x)); }
template <class T> T gelu_erf(T x) { return T(0.5) * x * (T(1) + std::erf(x / std::sqrt(T(2)))); }
template <class T> T gelu_tanh(T x) {
    const T k = std::sqrt(T(2) / T(M_PI));
    return T(0.5) * x * (T(1) + std::tanh(k * (x + T(0.044715) * x * x * x)));
}
template <class T> T activate(Activation a, T x) {
    switch (a) { case Activation::silu: return silu(x); case Activation::gelu_tanh: return gelu_tanh(x);
                 case Activation::gelu_erf: return gelu_erf(x); }
    return x;
}
template <class T>
void activation_forward(Mat<T>& y, const Mat<T>& x, Activation a) {
    if (a == Activation::silu) { y = (x.array() / (T(1) + (-x.array()).exp())).matrix(); return; }  // vectorised exp
    y = x.unaryExpr([a](T v) { return activate(a, v); });
}

// Top-k routing of a mixture of experts (Mixtral, OLMoE), row by row of the router logits s (T × E):
//   p = softmax(s_t) over all E experts;
//   chosen[t, i] = the expert of the i-th largest p (i < k), ties broken towards the lower index;
//   weight[t, i] = p[chosen[t, i]] / (Σ_{i<k} p[chosen[t, i]] when normalize, else 1).
// `chosen` holds the expert indices as T (small integers, exact in float): hooks carry one scalar type.
// weight and chosen are (T × k).
template <class T>
void moe_router_forward(Mat<T>& weight, Mat<T>& chosen, const Mat<T>& logits, std::int64_t k, bool normalize) {
    const Eigen::Index n = logits.rows(), E = logits.cols();
    weight.resize(n, k);
    chosen.resize(n, k);
    std::vector<T> p(static_cast<std::size_t>(E));
    std::vector<Eigen::Index> order(static_cast<std::size_t>(E));
    for (Eigen::Index t = 0; t < n; ++t) {
        const T m = logits.row(t).maxCoeff();
        T z = 0;
        for (Eigen::Index e = 0; e < E; ++e) z += p[std::size_t(e)] = std::exp(logits(t, e) - m);
        for (auto& v : p) v /= z;
        for (Eigen::Index e = 0; e < E; ++e) order[std::size_t(e)] = e;
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&p](Eigen::Index a, Eigen::Index b) {
            return p[std::size_t(a)] > p[std::size_t(b)] || (p[std::size_t(a)] == p[std::size_t(b)] && a < b);
        });
        T sum = 0;
        for (std::int64_t i = 0; i < k; ++i) sum += p[std::size_t(order[std::size_t(i)])];
        for (std::int64_t i = 0; i < k; ++i) {
            const Eigen::Index e = order[std::size_t(i)];
            chosen(t, i) = T(e);
            weight(t, i) = normalize ? p[std::size_t(e)] / sum : p[std::size_t(e)];
        }
    }
}

// How a query-key score is formed: s = (q·k)·scale, then s ← c·tanh(s/c) when the soft cap c > 0
// (Gemma 2); scale 0 stands for 1/√d_h. Keys more than `window` − 1 positions back are masked (0: none).
struct ScoreRule {
    std::int64_t window = 0;
    double scale = 0;
    double softcap = 0;
    static ScoreRule of_layer(const Config& c, std::int64_t layer) { return {c.window_at(layer), c.attn_scale, c.attn_softcap}; }
    template <class T> T scale_for(std::int64_t head_dim) const { return scale > 0 ? T(scale) : T(1) / std::sqrt(T(head_dim)); }
    // s ← c·tanh(s/c) on every entry of a block of scores (before the mask, as Hugging Face does).
    template <class Block> void cap(Block&& s) const {
        using T = typename std::decay_t<Block>::Scalar;
        if (softcap > 0) s = (s.array() / T(softcap)).tanh() * T(softcap);
    }
};

// Causal attention of one head, in place of its pattern row block.
//   scores[t, j] = q_t · k_j / √d_h  for allowed j (j ≤ t, and t − j < window when windowed), −∞ otherwise
//   (the scale and soft cap of a ScoreRule where given)
//   softmax:            p[t, j] = e^{s_j} / Σ_k e^{s_k}
//   off-by-one / slot:  p[t, j] = e^{s_j} / (e^{s_slot} + Σ_k e^{s_k})   (s_slot = 0 for off-by-one)
// `slot_scores` holds s_slot per query (empty: no extra slot). `scores` and `pattern` are (T × T).
template <class T, class QBlock, class KBlock>
void attention_scores_forward(Eigen::Ref<Mat<T>> scores, const QBlock& q, const KBlock& k, ScoreRule rule) {
    const Eigen::Index n = q.rows();
    const std::int64_t window = rule.window;
    scores.noalias() = (q * k.transpose()) * rule.scale_for<T>(q.cols());
    rule.cap(scores);
    const T ninf = -std::numeric_limits<T>::infinity();
    for (Eigen::Index t = 0; t < n; ++t) {
        for (Eigen::Index j = t + 1; j < n; ++j) scores(t, j) = ninf;
        if (window > 0)
            for (Eigen::Index j = 0; j <= t - window; ++j) scores(t, j) = ninf;
    }
}

template <class T>
void softmax_forward(Eigen::Ref<Mat<T>> pattern, const Eigen::Ref<const Mat<T>>& scores, const T* slot_scores) {
    for (Eigen::Index t = 0; t < scores.rows(); ++t) {
        T m = scores.row(t).maxCoeff();
        if (slot_scores) m = std::max(m, slot_scores[t]);
        // Masked keys get exactly 0: a vectorised exp clamps −∞ to a tiny positive value in some builds.
        const T ninf = -std::numeric_limits<T>::infinity();
        pattern.row(t) = (scores.row(t).array() == ninf).select(T(0), (scores.row(t).array() - m).exp()).matrix();
        T z = pattern.row(t).sum();
        if (slot_scores) z += std::exp(slot_scores[t] - m);
        pattern.row(t) /= z;
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
            p.noalias() = (q.block(r0, h * dh, rows, dh) * k.block(lo, g * dh, keys, dh).transpose()) * scale;
            rule.cap(p);
            for (std::int64_t t = r0; t < r1; ++t) {
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
            auto zh = z.block(r0, h * dh, rows, dh);
            zh.noalias() = p * v.block(lo, g * dh, keys, dh);
            if (slot_value) {
                const Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>> sv(slot_value + g * dh, dh);
                zh.noalias() += (T(1) - p.rowwise().sum().array()).matrix() * sv;
            }
        }
    }
}

}  // namespace sinkscope::model
