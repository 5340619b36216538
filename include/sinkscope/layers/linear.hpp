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
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/layers/bf16_matmul.hpp"
#include "sinkscope/core/switches.hpp"
#include "sinkscope/core/tensor.hpp"

namespace sinkscope::model {

// True when this thread's float products run in bf16 (ScopedMatmulPrecision, layers/bf16_matmul.hpp).
template <class T>
bool products_in_bf16() {
    return std::is_same_v<T, float> && matmul_precision() == MatmulPrecision::bf16;
}

// y = x Wᵀ (+ b).   x (T × in), W (out × in), b (out) or empty, y (T × out).
// In float under MatmulPrecision::bf16 the product x Wᵀ takes bf16 inputs (bf16_matmul); b is added in float.
template <class T>
void linear_forward(Mat<T>& y, const Mat<T>& x, const Mat<T>& W, const Vec<T>& b) {
    if constexpr (std::is_same_v<T, float>) {
        if (products_in_bf16<T>()) {
            y.resize(x.rows(), W.rows());
            bf16_matmul(y.data(), y.cols(), matrix_ref(x), matrix_ref(W).transposed(), false, true);
            if (b.size()) y.rowwise() += b.transpose();
            return;
        }
    }
    y.noalias() = x * W.transpose();
    if (b.size()) y.rowwise() += b.transpose();
}

// The input x of a linear layer's backward products (doutᵀ·x): a matrix of T, or — for float under bf16
// products only — its bf16 rounding (a Bf16Matrix: the training tape keeps such activations as bits).
template <class T>
struct ProductInput {
    const Mat<T>* value = nullptr;
    const Bf16Matrix* bits = nullptr;
    ProductInput(const Mat<T>& m) : value(&m) {}  // NOLINT: implicit, a matrix is the usual input
    ProductInput(const Bf16Matrix& b) : bits(&b) {}  // NOLINT
    std::int64_t rows() const { return value ? value->rows() : bits->rows; }
    MatrixRef ref() const {
        if constexpr (std::is_same_v<T, float>) return value ? matrix_ref(*value) : bits->ref();
        else throw Error("ProductInput: only float matrices enter bf16 products");
    }
    // The values, for arithmetic other than a bf16 product; `where` names the caller in the error.
    const Mat<T>& values(const std::string& where) const {
        if (!value) throw Error(where + ": needs the float values of an activation that was kept as bf16 bits");
        return *value;
    }
};

// ScopedBf16Reuse for a float input (converted once for every product of the scope); bits need none.
template <class T>
class ScopedInputReuse {
public:
    explicit ScopedInputReuse(const ProductInput<T>& in) {
        if (in.value) reuse_.emplace(*in.value);
    }

private:
    std::optional<ScopedBf16Reuse> reuse_;
};

// A parameter type that takes no part in template argument deduction (std::type_identity_t, C++20):
// T is deduced from the other arguments, and a Mat<T> converts to ProductInput<T>.
template <class X>
struct nondeduced { using type = X; };
template <class X>
using Nondeduced = typename nondeduced<X>::type;

}  // namespace sinkscope::model

namespace sinkscope::train {

using model::Mat;
using model::Vec;

// forward: y = x Wᵀ (+ b)                      x (T × in), W (out × in), y (T × out)
//   dinp (T × in) += dout W;   dweight (out × in) += doutᵀ x;   dbias (out) += Σ_t dout[t]
// dinp or dbias may be null (not wanted). Under MatmulPrecision::bf16 (float only) both products take
// bf16 inputs and accumulate in float32, as PyTorch's autocast backward does; dbias stays a float sum.
// `dinp_first`: dinp is this product's alone, so it is assigned (and sized) rather than accumulated —
// the same numbers as zeroing it first, without the pass over memory that zeroing costs.
// `inp` may be bf16 bits (model::ProductInput) only when the products run in bf16.
template <class T>
void linear_backward(Mat<T>* dinp, Mat<T>& dweight, Vec<T>* dbias, const Mat<T>& dout,
                     const model::Nondeduced<model::ProductInput<T>>& inp, const Mat<T>& weight, bool dinp_first = false) {
    if (dinp && dinp_first) dinp->resize(dout.rows(), weight.cols());
    if constexpr (std::is_same_v<T, float>) {
        if (model::products_in_bf16<T>()) {
            const model::ScopedBf16Reuse reuse(dout);  // doutᵀ·x and dout·W read the same bf16 bits
            model::bf16_matmul(dweight.data(), dweight.cols(), model::matrix_ref(dout).transposed(), inp.ref(), true);
            if (dbias && dbias->size()) dbias->noalias() += dout.colwise().sum().transpose();
            if (dinp)
                model::bf16_matmul(dinp->data(), dinp->cols(), model::matrix_ref(dout), model::matrix_ref(weight), !dinp_first, true);
            return;
        }
    }
    dweight.noalias() += dout.transpose() * inp.values("linear_backward (float products)");
    if (dbias && dbias->size()) dbias->noalias() += dout.colwise().sum().transpose();
    if (dinp && dinp_first) dinp->noalias() = dout * weight;
    else if (dinp) dinp->noalias() += dout * weight;
}

// The same products with dout given as its bf16 rounding, made by the caller as it computed dout (the
// SwiGLU backward does so row by row): what linear_backward computes under bf16 products from a float
// dout, without storing dout in float and reading it back to round it. No bias (its sum needs the floats).
inline void linear_backward_bf16_dout(Mat<float>* dinp, Mat<float>& dweight, const model::Bf16Matrix& dout,
                                      const model::ProductInput<float>& inp, const Mat<float>& weight, bool dinp_first = false) {
    if (dinp && dinp_first) dinp->resize(dout.rows, weight.cols());
    model::bf16_matmul(dweight.data(), dweight.cols(), dout.ref().transposed(), inp.ref(), true);
    if (dinp) model::bf16_matmul(dinp->data(), dinp->cols(), dout.ref(), model::matrix_ref(weight), !dinp_first, true);
}

}  // namespace sinkscope::train
