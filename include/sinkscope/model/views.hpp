// Captured activations as xtensor views, in their TransformerLens shape, without copies or index
// arithmetic:
//
//   const auto x = model::view(cache["blocks.3.hook_resid_post"]);   // [pos, d_model]
//   x(t, c)                                                           // one entry
//   xt::view(x, xt::all(), c)                                         // channel c's trace over positions
//   const auto p = model::view(cache["blocks.3.attn.hook_pattern"]);  // [head, query_pos, key_pos]
//   xt::view(p, h)                                                    // head h's pattern
//   xt::strided_view(p, {xt::all(), xt::all(), 0})                    // attention to position 0, [head, query]
// (xtensor 0.24, Debian 12's, does not compile element access on xt::view(p, all(), all(), 0) of a 3-D
// adaptor; strided_view is the same slice.)
//
// Inside a hook, `view(ref)` is a mutable view of the activation the forward pass continues with.
// Views borrow the captured buffer: they are valid while the cache (or the hook call) holds it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>
#include <xtensor/xadapt.hpp>
#include <xtensor/xstrided_view.hpp>
#include <xtensor/xview.hpp>

#include "sinkscope/core/error.hpp"
#include "sinkscope/model/hooks.hpp"

namespace sinkscope::model {

namespace detail {
inline std::vector<std::size_t> xshape(const std::vector<std::int64_t>& shape) { return {shape.begin(), shape.end()}; }
}  // namespace detail

template <class T>
auto view(const Captured<T>& c) {
    return xt::adapt(c.data.data(), c.data.size(), xt::no_ownership(), detail::xshape(c.shape));
}

template <class T>
auto view(ActivationRef<T>& a) {
    return xt::adapt(a.data, std::size_t(a.size()), xt::no_ownership(), detail::xshape(a.shape));
}

// A row-major buffer of the given shape (a residual state from the spike tracer, say), checked.
template <class T>
auto view(const std::vector<T>& v, const std::vector<std::int64_t>& shape) {
    std::int64_t n = 1;
    for (auto s : shape) n *= s;
    require(n == std::int64_t(v.size()), "view: a buffer of " + std::to_string(v.size()) + " values viewed as " +
                                             std::to_string(n) + " entries");
    return xt::adapt(v.data(), v.size(), xt::no_ownership(), detail::xshape(shape));
}

}  // namespace sinkscope::model
