// AdamW with decoupled weight decay, warmup + cosine learning-rate schedule, global-norm clipping.
//
// Update of one parameter p with gradient g at step t = 1, 2, … (PyTorch's torch.optim.AdamW):
//   p ← p − lr·λ·p                                   (decoupled decay, only for decayed tensors)
//   m ← β₁ m + (1 − β₁) g;   v ← β₂ v + (1 − β₂) g²
//   p ← p − (lr / (1 − β₁ᵗ)) · m / (√v / √(1 − β₂ᵗ) + ε)
//
// Which tensors decay (the nanoGPT rule, stated): every weight *matrix* decays — the linear maps,
// the token and position embeddings and an untied output head. Nothing else decays: norm gains and
// biases, DynamicTanh's α, all bias vectors, gate biases, the KV-bias key/value pair (a bias stored as
// a 2 × kv_dim matrix) and the sink-token embedding. Paper B's "weight decay 0" ablation is λ = 0.
//
// Schedule (step s = 0, 1, …, S − 1; W warmup steps; lr_min = min_lr_ratio · lr):
//   s < W:  lr (s + 1) / W
//   else:   lr_min + ½ (lr − lr_min) (1 + cos(π · min(1, (s − W) / max(1, S − W))))
// Clipping (torch.nn.utils.clip_grad_norm_): ‖g‖ = √(Σ over all tensors Σ g²);
//   g ← g · min(1, c / (‖g‖ + 10⁻⁶))   (c ≤ 0: no clipping)
// A training step makes two passes over the parameters after its backward passes, each split across
// threads: the sum of the sequence workers' gradients together with ‖g‖ (sum_gradients), and the AdamW
// update with the clipping factor folded in (update's grad_scale). clip_gradients is the same clipping as
// a pass of its own.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/model/weights.hpp"
#include "sinkscope/train/model_backward.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace sinkscope::train {

struct AdamWConfig {
    double lr = 3e-4;
    double beta1 = 0.9;
    double beta2 = 0.95;
    double eps = 1e-8;
    double weight_decay = 0.1;
    double grad_clip = 1.0;        // ≤ 0: off
    std::int64_t warmup_steps = 0;
    std::int64_t total_steps = 1;  // the cosine reaches lr_min here
    double min_lr_ratio = 0.1;

    void validate() const {
        require(lr > 0 && std::isfinite(lr), "optimizer: lr must be a positive number, got " + std::to_string(lr));
        require(beta1 >= 0 && beta1 < 1, "optimizer: beta1 must lie in [0, 1)");
        require(beta2 >= 0 && beta2 < 1, "optimizer: beta2 must lie in [0, 1)");
        require(eps > 0, "optimizer: eps must be > 0");
        require(weight_decay >= 0, "optimizer: weight_decay must be >= 0");
        require(warmup_steps >= 0, "optimizer: warmup_steps must be >= 0");
        require(total_steps >= 1, "optimizer: total_steps must be >= 1");
        require(min_lr_ratio >= 0 && min_lr_ratio <= 1, "optimizer: min_lr_ratio must lie in [0, 1]");
    }
};

// The schedule above: learning rate of step s (0-based).
inline double learning_rate(const AdamWConfig& o, std::int64_t s) {
    if (s < o.warmup_steps) return o.lr * double(s + 1) / double(o.warmup_steps);
    const double lr_min = o.min_lr_ratio * o.lr;
    const double span = double(std::max<std::int64_t>(1, o.total_steps - o.warmup_steps));
    const double progress = std::min(1.0, double(s - o.warmup_steps) / span);
    return lr_min + 0.5 * (o.lr - lr_min) * (1.0 + std::cos(M_PI * progress));
}

// The decay rule above, by canonical parameter name.
inline bool decays(const std::string& name, bool is_matrix) {
    if (!is_matrix) return false;
    return name.find("attn.sink_kv") == std::string::npos;
}

// The parameters (or gradients, or optimizer moments) of a model as fixed-size chunks of its tensors,
// so that a pass over all of them can be split across threads: chunk i covers elements [begin, end) of
// tensor `tensor`. The chunks do not depend on the thread count, and a reduction sums the chunks' partial
// results in chunk order, so every sum below is the same number for any number of threads.
struct TensorChunk {
    std::size_t tensor;
    std::int64_t begin, end;
};
template <class T>
std::vector<TensorChunk> tensor_chunks(const std::vector<TensorRef<T>>& refs, std::int64_t chunk = std::int64_t(1) << 15) {
    std::vector<TensorChunk> out;
    for (std::size_t i = 0; i < refs.size(); ++i)
        for (std::int64_t b = 0; b < refs[i].size; b += chunk) out.push_back({i, b, std::min(refs[i].size, b + chunk)});
    return out;
}

// fn(chunk index, chunk) for every chunk, on `threads` OpenMP threads (0: OpenMP's default).
template <class Fn>
void for_each_chunk(const std::vector<TensorChunk>& chunks, int threads, Fn&& fn) {
    const auto n = std::int64_t(chunks.size());
#ifdef _OPENMP
    if (threads <= 0) threads = omp_get_max_threads();
#endif
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && n > 1)
    for (std::int64_t i = 0; i < n; ++i) fn(std::size_t(i), chunks[std::size_t(i)]);
    (void)threads;
}

template <class T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
ArrayMap<T> chunk_of(const TensorRef<T>& r, const TensorChunk& c) { return ArrayMap<T>(r.data + c.begin, c.end - c.begin); }

// Global ℓ2 norm of all gradients (squares accumulated in double, per chunk, then in chunk order).
template <class T>
double gradient_norm(model::Weights<T>& g, int threads = 0) {
    const auto refs = tensor_refs(g);
    const auto chunks = tensor_chunks(refs);
    std::vector<double> part(chunks.size());
    for_each_chunk(chunks, threads, [&](std::size_t i, const TensorChunk& c) {
        part[i] = chunk_of(refs[c.tensor], c).template cast<double>().square().sum();
    });
    double s = 0;
    for (double p : part) s += p;
    return std::sqrt(s);
}

// What clipping multiplies the gradients by: min(1, c / (‖g‖ + 10⁻⁶)); 1 when c ≤ 0 (off) or ‖g‖ is not finite.
inline double clip_coefficient(double norm, double max_norm) {
    if (max_norm <= 0 || !std::isfinite(norm)) return 1.0;
    return std::min(1.0, max_norm / (norm + 1e-6));
}

// Scales g so that its global norm is at most max_norm; returns the norm before clipping.
template <class T>
double clip_gradients(model::Weights<T>& g, double max_norm, int threads = 0) {
    const double norm = gradient_norm(g, threads);
    const double coef = clip_coefficient(norm, max_norm);
    if (coef < 1.0) {
        const auto refs = tensor_refs(g);
        for_each_chunk(tensor_chunks(refs), threads, [&](std::size_t, const TensorChunk& c) { chunk_of(refs[c.tensor], c) *= T(coef); });
    }
    return norm;
}

// acc += Σ others (same structure), then returns ‖acc‖: the data-parallel reduction of a step and the
// norm that clipping needs, in one pass over the gradients. `zero_others` leaves the others zero (ready
// for the next step's accumulation: each chunk is cleared while it is in cache, instead of in a pass of
// its own).
template <class T>
double sum_gradients(model::Weights<T>& acc, std::vector<model::Weights<T>*> others, int threads = 0,
                     bool zero_others = false) {
    const auto a = tensor_refs(acc);
    std::vector<std::vector<TensorRef<T>>> b;
    for (auto* o : others) {
        b.push_back(tensor_refs(*o));
        require(b.back().size() == a.size(), "sum_gradients: the gradient sets differ in structure");
        for (std::size_t i = 0; i < a.size(); ++i)
            require(a[i].size == b.back()[i].size, "sum_gradients: tensor " + a[i].name + " differs in size");
    }
    const auto chunks = tensor_chunks(a);
    std::vector<double> part(chunks.size());
    for_each_chunk(chunks, threads, [&](std::size_t i, const TensorChunk& c) {
        auto x = chunk_of(a[c.tensor], c);
        for (const auto& o : b) {
            auto y = chunk_of(o[c.tensor], c);
            x += y;
            if (zero_others) y.setZero();
        }
        part[i] = x.template cast<double>().square().sum();
    });
    double s = 0;
    for (double p : part) s += p;
    return std::sqrt(s);
}

template <class T>
class AdamW {
public:
    AdamW() = default;
    AdamW(const AdamWConfig& o, const model::Weights<T>& w) : o_(o), m_(zeros_like(w)), v_(zeros_like(w)) { o.validate(); }

    // One update with gradients g · grad_scale at learning rate lr (the caller's schedule; grad_scale is
    // a clipping coefficient, clip_coefficient, applied here instead of in a pass of its own: the same
    // float product g·scale that clip_gradients would store). Increments step(). The tensors are split
    // into chunks over `threads` OpenMP threads (0: OpenMP's default); each entry's arithmetic is the same.
    // `zero_gradients` leaves g zero (cleared chunk by chunk after use, for the next step's accumulation).
    void update(model::Weights<T>& w, model::Weights<T>& g, double lr, double grad_scale = 1.0, int threads = 0,
                bool zero_gradients = false) {
        ++step_;
        const double bc1 = 1.0 - std::pow(o_.beta1, double(step_));
        const double bc2 = 1.0 - std::pow(o_.beta2, double(step_));
        const T step_size = T(lr / bc1), sqrt_bc2 = T(std::sqrt(bc2));
        const T b1 = T(o_.beta1), b2 = T(o_.beta2), eps = T(o_.eps), scale = T(grad_scale);
        const bool scaled = grad_scale != 1.0;
        const auto P = tensor_refs(w), G = tensor_refs(g), M = tensor_refs(m_), V = tensor_refs(v_);
        require(P.size() == G.size() && P.size() == M.size() && P.size() == V.size(),
                "AdamW: parameters, gradients and state differ in structure");
        std::vector<char> decayed(P.size());
        for (std::size_t i = 0; i < P.size(); ++i) decayed[i] = o_.weight_decay > 0 && decays(P[i].name, P[i].is_matrix);
        const T keep = T(1.0 - lr * o_.weight_decay);
        for_each_chunk(tensor_chunks(P), threads, [&](std::size_t, const TensorChunk& c) {
            auto p = chunk_of(P[c.tensor], c), m = chunk_of(M[c.tensor], c), v = chunk_of(V[c.tensor], c);
            auto gr = chunk_of(G[c.tensor], c);
            if (decayed[c.tensor]) p *= keep;
            if (scaled) {
                m = b1 * m + (T(1) - b1) * (gr * scale);
                v = b2 * v + (T(1) - b2) * (gr * scale).square();
            } else {
                m = b1 * m + (T(1) - b1) * gr;
                v = b2 * v + (T(1) - b2) * gr.square();
            }
            p -= step_size * m / (v.sqrt() / sqrt_bc2 + eps);
            if (zero_gradients) gr.setZero();
        });
    }

    std::int64_t step() const { return step_; }
    void set_step(std::int64_t s) { step_ = s; }
    model::Weights<T>& m() { return m_; }
    model::Weights<T>& v() { return v_; }
    const AdamWConfig& config() const { return o_; }

private:
    AdamWConfig o_;
    model::Weights<T> m_, v_;
    std::int64_t step_ = 0;
};

}  // namespace sinkscope::train
