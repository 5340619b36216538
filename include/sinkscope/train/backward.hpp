// Backward kernels of the sinkscope transformer: one function per forward kernel of
// model/layers.hpp, in llm.c's convention.
//
//   x_backward(dinp…, dweight…, dout, saved…, inp, weight…, dims)
//
// Gradients are named d<what>; every gradient is *accumulated* (+=), so the caller zeroes them once
// per step and several uses of one tensor simply add up. Each function quotes the forward line it
// differentiates. Shapes: activations are row-major (T × features), one row per position.
// The oracle for all of them is the finite-difference check in tests/train/test_backward.cpp.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "sinkscope/model/config.hpp"
#include "sinkscope/model/layers.hpp"
#include "sinkscope/model/weights.hpp"

namespace sinkscope::train {

using model::Mat;
using model::Vec;

// forward: y = x Wᵀ (+ b)                      x (T × in), W (out × in), y (T × out)
//   dinp (T × in) += dout W;   dweight (out × in) += doutᵀ x;   dbias (out) += Σ_t dout[t]
// dinp or dbias may be null (not wanted).
template <class T>
void linear_backward(Mat<T>* dinp, Mat<T>& dweight, Vec<T>* dbias, const Mat<T>& dout, const Mat<T>& inp,
                     const Mat<T>& weight) {
    dweight.noalias() += dout.transpose() * inp;
    if (dbias && dbias->size()) dbias->noalias() += dout.colwise().sum().transpose();
    if (dinp) dinp->noalias() += dout * weight;
}

// forward: y = x / √(mean(x²) + eps) ⊙ g                     (rmsnorm_forward)
//   with r = 1/√(mean(x²)+eps), ĝ = dout ⊙ g:
//   dinp += r ĝ − (r³/d) (x·ĝ) x;     dweight += Σ_t dout ⊙ x r
template <class T>
void rmsnorm_backward(Mat<T>& dinp, Vec<T>& dweight, const Mat<T>& dout, const Mat<T>& inp, const Vec<T>& weight,
                      double eps) {
    const Eigen::Index d = inp.cols();
    for (Eigen::Index t = 0; t < inp.rows(); ++t) {
        const T r = T(1) / std::sqrt(inp.row(t).squaredNorm() / T(d) + T(eps));
        const auto g = dout.row(t).cwiseProduct(weight.transpose());
        const T dot = inp.row(t).dot(g);
        dinp.row(t) += r * g - (r * r * r / T(d)) * dot * inp.row(t);
        dweight += (dout.row(t).cwiseProduct(inp.row(t)) * r).transpose();
    }
}

// forward: y = (x − μ) r ⊙ g + b,  r = 1/√(var(x) + eps)     (layernorm_forward)
//   x̂ = (x − μ) r, ĝ = dout ⊙ g:  dinp += r (ĝ − mean(ĝ) − x̂ mean(ĝ ⊙ x̂));
//   dweight += Σ_t dout ⊙ x̂;  dbias += Σ_t dout
template <class T>
void layernorm_backward(Mat<T>& dinp, Vec<T>& dweight, Vec<T>* dbias, const Mat<T>& dout, const Mat<T>& inp,
                        const Vec<T>& weight, double eps) {
    const Eigen::Index d = inp.cols();
    for (Eigen::Index t = 0; t < inp.rows(); ++t) {
        const T mean = inp.row(t).mean();
        const Eigen::Matrix<T, 1, Eigen::Dynamic> c = inp.row(t).array() - mean;
        const T r = T(1) / std::sqrt(c.squaredNorm() / T(d) + T(eps));
        const Eigen::Matrix<T, 1, Eigen::Dynamic> xhat = c * r;
        const Eigen::Matrix<T, 1, Eigen::Dynamic> g = dout.row(t).cwiseProduct(weight.transpose());
        const T mg = g.mean(), mgx = g.cwiseProduct(xhat).mean();
        dinp.row(t).array() += r * (g.array() - mg - xhat.array() * mgx);
        dweight += dout.row(t).cwiseProduct(xhat).transpose();
    }
    if (dbias && dbias->size()) *dbias += dout.colwise().sum().transpose();
}

// forward: y = γ ⊙ tanh(α x) + β                               (dyt_forward)
//   u = tanh(α x), p = dout ⊙ γ ⊙ (1 − u²):
//   dinp += α p;  dalpha += Σ p ⊙ x;  dgamma += Σ_t dout ⊙ u;  dbeta += Σ_t dout
template <class T>
void dyt_backward(Mat<T>& dinp, Vec<T>& dalpha, Vec<T>& dgamma, Vec<T>* dbeta, const Mat<T>& dout, const Mat<T>& inp,
                  const Vec<T>& alpha, const Vec<T>& gamma) {
    const T a = alpha(0);
    const Mat<T> u = (inp.array() * a).tanh().matrix();
    Mat<T> p = dout.cwiseProduct(Mat<T>((T(1) - u.array().square()).matrix()));
    p.array().rowwise() *= gamma.transpose().array();
    dinp += a * p;
    dalpha(0) += p.cwiseProduct(inp).sum();
    dgamma += dout.cwiseProduct(u).colwise().sum().transpose();
    if (dbeta && dbeta->size()) *dbeta += dout.colwise().sum().transpose();
}

// Dispatches on the norm kind; `dw` holds the gradients of the norm's parameters (same layout as w).
template <class T>
void norm_backward(Mat<T>& dinp, model::NormWeights<T>& dw, const Mat<T>& dout, const Mat<T>& inp,
                   const model::NormWeights<T>& w, model::NormKind kind, double eps) {
    switch (kind) {
        case model::NormKind::rmsnorm: rmsnorm_backward(dinp, dw.weight, dout, inp, w.weight, eps); return;
        case model::NormKind::layernorm: layernorm_backward(dinp, dw.weight, &dw.bias, dout, inp, w.weight, eps); return;
        case model::NormKind::dynamic_tanh: dyt_backward(dinp, dw.alpha, dw.weight, &dw.bias, dout, inp, w.alpha, w.weight); return;
    }
}

// forward: per head h, seg ← seg / √(mean(seg²) + eps) ⊙ g   (head_rmsnorm_forward; x (T × H·d_h))
//   the RMSNorm backward on every (t, h) segment, g shared by the heads.
template <class T>
void head_rmsnorm_backward(Mat<T>& dinp, Vec<T>& dweight, const Mat<T>& dout, const Mat<T>& inp, const Vec<T>& weight,
                           std::int64_t n_heads, std::int64_t head_dim, double eps) {
    for (Eigen::Index t = 0; t < inp.rows(); ++t)
        for (std::int64_t h = 0; h < n_heads; ++h) {
            const auto x = inp.row(t).segment(h * head_dim, head_dim);
            const auto dy = dout.row(t).segment(h * head_dim, head_dim);
            const T r = T(1) / std::sqrt(x.squaredNorm() / T(head_dim) + T(eps));
            const auto g = dy.cwiseProduct(weight.transpose());
            const T dot = x.dot(g);
            dinp.row(t).segment(h * head_dim, head_dim) += r * g - (r * r * r / T(head_dim)) * dot * x;
            dweight += (dy.cwiseProduct(x) * r).transpose();
        }
}

// forward: (a, b) ← (a cos θ − b sin θ, a sin θ + b cos θ)   (rope_forward, a rotation Rθ)
//   The rotation is orthogonal, so dinp = Rθᵀ dout = R₋θ dout: applied in place on the gradient.
//   θ is computed exactly as in rope_forward (in float with its roundings, in double in double).
template <class T>
void rope_backward(Mat<T>& dx, std::int64_t n_heads, std::int64_t head_dim, double base, model::RopeLayout layout,
                   std::int64_t offset = 0) {
    const std::int64_t half = head_dim / 2;
    const model::RopeTable<T>& tab = model::rope_table<T>(dx.rows(), head_dim, base, offset);  // rope_forward's θ
    for (Eigen::Index t = 0; t < dx.rows(); ++t)
        for (std::int64_t i = 0; i < half; ++i) {
            const T c = tab.cos[std::size_t(t * half + i)], s = tab.sin[std::size_t(t * half + i)];
            const std::int64_t ia = layout == model::RopeLayout::interleaved ? 2 * i : i;
            const std::int64_t ib = layout == model::RopeLayout::interleaved ? 2 * i + 1 : i + half;
            for (std::int64_t h = 0; h < n_heads; ++h) {
                T* head = dx.row(t).data() + h * head_dim;
                const T da = head[ia], db = head[ib];
                head[ia] = da * c + db * s;
                head[ib] = -da * s + db * c;
            }
        }
}

// Derivatives of the activations of layers.hpp:
//   silu'(x) = σ(x) (1 + x (1 − σ(x)))
//   gelu_erf'(x) = Φ(x) + x φ(x)
//   gelu_tanh'(x) = ½(1 + tanh u) + ½ x (1 − tanh² u) k (1 + 3·0.044715 x²),  u = k (x + 0.044715 x³)
template <class T>
T activation_derivative(model::Activation a, T x) {
    switch (a) {
        case model::Activation::silu: {
            const T s = T(1) / (T(1) + std::exp(-x));
            return s * (T(1) + x * (T(1) - s));
        }
        case model::Activation::gelu_erf: {
            const T cdf = T(0.5) * (T(1) + std::erf(x / std::sqrt(T(2))));
            const T pdf = std::exp(T(-0.5) * x * x) / std::sqrt(T(2) * T(M_PI));
            return cdf + x * pdf;
        }
        case model::Activation::gelu_tanh: {
            const T k = std::sqrt(T(2) / T(M_PI));
            const T th = std::tanh(k * (x + T(0.044715) * x * x * x));
            return T(0.5) * (T(1) + th) + T(0.5) * x * (T(1) - th * th) * k * (T(1) + T(3) * T(0.044715) * x * x);
        }
    }
    return T(1);
}

// forward: y = act(x)                                          (activation_forward)
//   dinp += dout ⊙ act'(x)
template <class T>
void activation_backward(Mat<T>& dinp, const Mat<T>& dout, const Mat<T>& inp, model::Activation a) {
    dinp.array() += dout.array() * inp.unaryExpr([a](T v) { return activation_derivative(a, v); }).array();
}

// forward: p[t, j] = e^{s_j} / (e^{s_slot} + Σ_k e^{s_k})      (softmax_forward; no slot: plain softmax)
// The slot (softmax-off-by-one, KV bias) takes p_slot = 1 − Σ_j p[t, j]. With dP the gradient of the
// real weights and dP_slot that of the slot weight (0 for off-by-one, whose slot value is zero):
//   dS[t, j]   += p_j (dP_j − ⟨p, dP⟩ − p_slot dP_slot)
//   dslot[t]   += p_slot (dP_slot − ⟨p, dP⟩ − p_slot dP_slot)      (when dslot is wanted)
// dscores and dpattern are (T × T); `slot_dp` (T) or null, `dslot` (T) or null. Masked keys have p = 0
// and get no gradient.
template <class T>
void softmax_backward(Eigen::Ref<Mat<T>> dscores, T* dslot, const Eigen::Ref<const Mat<T>>& dpattern,
                      const Eigen::Ref<const Mat<T>>& pattern, const T* slot_dp, bool has_slot) {
    for (Eigen::Index t = 0; t < pattern.rows(); ++t) {
        const T ps = has_slot ? T(1) - pattern.row(t).sum() : T(0);
        const T dps = slot_dp ? slot_dp[t] : T(0);
        const T inner = pattern.row(t).dot(dpattern.row(t)) + ps * dps;
        dscores.row(t).array() += pattern.row(t).array() * (dpattern.row(t).array() - inner);
        if (dslot) dslot[t] += ps * (dps - inner);
    }
}

// Force-sink masking (model::detail::force_sink_input): y = x with channels [0, k) zeroed at t ≥ 1.
//   dinp += dout ⊙ mask
template <class T>
void force_sink_backward(Mat<T>& dinp, const Mat<T>& dout, std::int64_t k) {
    if (k <= 0 || dout.rows() < 2) { dinp += dout; return; }
    dinp.row(0) += dout.row(0);
    dinp.bottomRows(dout.rows() - 1).rightCols(dout.cols() - k) += dout.bottomRows(dout.rows() - 1).rightCols(dout.cols() - k);
}

}  // namespace sinkscope::train
