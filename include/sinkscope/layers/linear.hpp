// The linear layer y = x Wᵀ + b: forward and backward side by side.
//
// Forward kernels (namespace model) follow llm.c: outputs first, then inputs, then weights, then
// dimensions; activations are row-major (T × features), one row per position, and each function's
// comment gives its naive definition. Backward kernels (namespace train) accumulate (+=) into their
// gradients and quote the forward line they differentiate; tests/train/test_backward.cpp checks each
// against finite differences in double. The CUDA kernels of this layer: cuda/gemm.cuh (cuBLAS, with the bias kernels of cuda/elementwise.cuh).
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

}  // namespace sinkscope::model

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

}  // namespace sinkscope::train
