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
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/model/weights.hpp"
#include "sinkscope/train/model_backward.hpp"

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

// Global ℓ2 norm of all gradients (accumulated in double).
template <class T>
double gradient_norm(model::Weights<T>& g) {
    double s = 0;
    for (auto& r : tensor_refs(g)) {
        const auto a = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(r.data, r.size);
        s += a.template cast<double>().square().sum();
    }
    return std::sqrt(s);
}

// Scales g so that its global norm is at most max_norm; returns the norm before clipping.
template <class T>
double clip_gradients(model::Weights<T>& g, double max_norm) {
    const double norm = gradient_norm(g);
    if (max_norm > 0 && std::isfinite(norm)) {
        const double coef = std::min(1.0, max_norm / (norm + 1e-6));
        if (coef < 1.0)
            for (auto& r : tensor_refs(g)) Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(r.data, r.size) *= T(coef);
    }
    return norm;
}

template <class T>
class AdamW {
public:
    AdamW() = default;
    AdamW(const AdamWConfig& o, const model::Weights<T>& w) : o_(o), m_(zeros_like(w)), v_(zeros_like(w)) { o.validate(); }

    // One update with gradients g at learning rate lr (the caller's schedule). Increments step().
    void update(model::Weights<T>& w, model::Weights<T>& g, double lr) {
        ++step_;
        const double bc1 = 1.0 - std::pow(o_.beta1, double(step_));
        const double bc2 = 1.0 - std::pow(o_.beta2, double(step_));
        const T step_size = T(lr / bc1), sqrt_bc2 = T(std::sqrt(bc2));
        const T b1 = T(o_.beta1), b2 = T(o_.beta2), eps = T(o_.eps);
        auto P = tensor_refs(w), G = tensor_refs(g), M = tensor_refs(m_), V = tensor_refs(v_);
        require(P.size() == G.size() && P.size() == M.size() && P.size() == V.size(),
                "AdamW: parameters, gradients and state differ in structure");
        for (std::size_t i = 0; i < P.size(); ++i) {
            using A = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
            A p(P[i].data, P[i].size), gr(G[i].data, G[i].size), m(M[i].data, M[i].size), v(V[i].data, V[i].size);
            if (o_.weight_decay > 0 && decays(P[i].name, P[i].is_matrix)) p *= T(1.0 - lr * o_.weight_decay);
            m = b1 * m + (T(1) - b1) * gr;
            v = b2 * v + (T(1) - b2) * gr.square();
            p -= step_size * m / (v.sqrt() / sqrt_bc2 + eps);
        }
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
