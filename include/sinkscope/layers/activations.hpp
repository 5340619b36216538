// The FFN activations (SiLU, GELU exact and tanh) and their derivatives: forward and backward side by side.
//
// Forward kernels (namespace model) follow llm.c: outputs first, then inputs, then weights, then
// dimensions; activations are row-major (T × features), one row per position, and each function's
// comment gives its naive definition. Backward kernels (namespace train) accumulate (+=) into their
// gradients and quote the forward line they differentiate; tests/train/test_backward.cpp checks each
// against finite differences in double. The CUDA kernels of this layer: cuda/elementwise.cuh (the same formulas, host and device).
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
    y.resize(x.rows(), x.cols());
    const std::int64_t cols = x.cols();
    // Rows [b, e) as one contiguous array: Eigen's linear traversal, packets as for the whole matrix.
    parallel_rows(x.rows(), cols * std::int64_t(sizeof(T)), [&](std::int64_t b, std::int64_t e) {
        const Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> in(x.data() + b * cols, (e - b) * cols);
        Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> out(y.data() + b * cols, (e - b) * cols);
        if (a == Activation::silu) out = in / (T(1) + (-in).exp());  // vectorised exp
        else out = in.unaryExpr([a](T v) { return activate(a, v); });
    });
}

}  // namespace sinkscope::model

namespace sinkscope::train {

using model::Mat;
using model::Vec;

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

}  // namespace sinkscope::train
