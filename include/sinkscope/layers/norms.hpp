// The norms: RMSNorm, LayerNorm, DynamicTanh, per-head (QK) RMSNorm, and the force-sink mask of a pre-norm's input: forward and backward side by side.
//
// Forward kernels (namespace model) follow llm.c: outputs first, then inputs, then weights, then
// dimensions; activations are row-major (T × features), one row per position, and each function's
// comment gives its naive definition. Backward kernels (namespace train) accumulate (+=) into their
// gradients and quote the forward line they differentiate; tests/train/test_backward.cpp checks each
// against finite differences in double. The CUDA kernels of this layer: cuda/norms.cuh.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "sinkscope/layers/parallel_rows.hpp"
#include "sinkscope/core/switches.hpp"
#include "sinkscope/core/tensor.hpp"

namespace sinkscope::model {

// The parameters of one norm (a row group of model/parameter_table.hpp).
template <class T>
struct NormWeights {
    Vec<T> weight;   // (d) gain g; for DynamicTanh γ
    Vec<T> bias;     // (d) LayerNorm / DynamicTanh β; empty for RMSNorm
    Vec<T> alpha;    // (1) DynamicTanh's learnable scalar α; empty otherwise
};

// RMSNorm (Zhang & Sennrich): y = x / √(mean(x²) + eps) ⊙ g.
template <class T>
void rmsnorm_forward(Mat<T>& y, const Mat<T>& x, const Vec<T>& g, double eps) {
    y.resize(x.rows(), x.cols());
    parallel_rows(x.rows(), x.cols() * std::int64_t(sizeof(T)), [&](std::int64_t b, std::int64_t e) {
        for (Eigen::Index t = b; t < e; ++t) {
            const T ms = x.row(t).squaredNorm() / T(x.cols());
            const T inv = T(1) / std::sqrt(ms + T(eps));
            y.row(t) = (x.row(t) * inv).cwiseProduct(g.transpose());
        }
    });
}

// LayerNorm: y = (x − mean(x)) / √(var(x) + eps) ⊙ g + b, variance with 1/d (biased), as PyTorch.
template <class T>
void layernorm_forward(Mat<T>& y, const Mat<T>& x, const Vec<T>& g, const Vec<T>& b, double eps) {
    y.resize(x.rows(), x.cols());
    parallel_rows(x.rows(), x.cols() * std::int64_t(sizeof(T)), [&](std::int64_t first, std::int64_t end) {
        for (Eigen::Index t = first; t < end; ++t) {
            const T mean = x.row(t).mean();
            const auto centred = x.row(t).array() - mean;
            const T var = centred.square().mean();
            const T inv = T(1) / std::sqrt(var + T(eps));
            y.row(t) = (centred * inv).matrix().cwiseProduct(g.transpose());
            if (b.size()) y.row(t) += b.transpose();
        }
    });
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

}  // namespace sinkscope::model

namespace sinkscope::train {

using model::Mat;
using model::Vec;

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

// Force-sink masking (model::detail::force_sink_input): y = x with channels [0, k) zeroed at t ≥ 1.
//   dinp += dout ⊙ mask
template <class T>
void force_sink_backward(Mat<T>& dinp, const Mat<T>& dout, std::int64_t k) {
    if (k <= 0 || dout.rows() < 2) { dinp += dout; return; }
    dinp.row(0) += dout.row(0);
    dinp.bottomRows(dout.rows() - 1).rightCols(dout.cols() - k) += dout.bottomRows(dout.rows() - 1).rightCols(dout.cols() - k);
}

}  // namespace sinkscope::train
