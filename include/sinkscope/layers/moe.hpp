// Top-k routing of a mixture of experts: forward and backward side by side.
//
// Forward kernels (namespace model) follow llm.c: outputs first, then inputs, then weights, then
// dimensions; activations are row-major (T × features), one row per position, and each function's
// comment gives its naive definition. Backward kernels (namespace train) accumulate (+=) into their
// gradients and quote the forward line they differentiate; tests/train/test_backward.cpp checks each
// against finite differences in double. The CUDA kernels of this layer: — (the CUDA backend refuses MoE).
// The backward holds the chosen experts fixed, as autograd does: top-k is piecewise constant.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "sinkscope/core/switches.hpp"
#include "sinkscope/core/tensor.hpp"

namespace sinkscope::model {

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

}  // namespace sinkscope::model

namespace sinkscope::train {

using model::Mat;

// forward (moe_router_forward), with the chosen experts c_i held fixed:
//   normalised:  w_i = p_{c_i} / Σ_j p_{c_j} = e^{s_{c_i}} / Σ_j e^{s_{c_j}}   (a softmax over the chosen logits)
//                ds_{c_j} += w_j (dw_j − Σ_i w_i dw_i),   ds_e += 0 for an expert not chosen
//   plain:       w_i = p_{c_i},  p = softmax(s) over all E
//                ds_e += [e = c_j] w_j dw_j − p_e Σ_i w_i dw_i
// dlogits (T × E) accumulates; dweight, weight and chosen are (T × k), logits (T × E) the router's.
template <class T>
void moe_router_backward(Mat<T>& dlogits, const Mat<T>& dweight, const Mat<T>& weight, const Mat<T>& chosen,
                         const Mat<T>& logits, bool normalize) {
    const Eigen::Index n = logits.rows(), k = weight.cols();
    for (Eigen::Index t = 0; t < n; ++t) {
        const T inner = weight.row(t).dot(dweight.row(t));
        for (Eigen::Index i = 0; i < k; ++i)
            dlogits(t, Eigen::Index(std::llround(double(chosen(t, i))))) += weight(t, i) * (dweight(t, i) - (normalize ? inner : T(0)));
        if (normalize) continue;
        const T m = logits.row(t).maxCoeff();
        const auto p = (logits.row(t).array() - m).exp().eval();
        dlogits.row(t).array() -= (p / p.sum()) * inner;
    }
}

}  // namespace sinkscope::train
