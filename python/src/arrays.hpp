// NumPy arrays over C++ buffers, for the sinkscope Python module.
//
//   owned(std::move(buffer), shape)   a NumPy array over a buffer moved onto the heap; a capsule owns it
//                                     and frees it when the last NumPy reference goes. No copy.
//   borrowed(ptr, shape)              a NumPy array over memory the caller keeps alive (a hook's live
//                                     activation): no owner, no copy, valid only while the caller says so.
//   as_matrix(array)                  an Eigen row-major map over a C-contiguous 2-D float64 array.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <Eigen/Core>
#include <cstdint>
#include <utility>
#include <vector>

namespace sinkscope::python {

namespace nb = nanobind;

using FloatArray = nb::ndarray<nb::numpy, float>;
using Matrix64 = nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using RowMatrix64 = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

inline std::vector<std::size_t> sizes(const std::vector<std::int64_t>& shape) { return {shape.begin(), shape.end()}; }

// `buffer` is any movable container with data() (std::vector, an Eigen matrix); its scalar is the array's.
template <class Buffer>
nb::object owned(Buffer&& buffer, const std::vector<std::int64_t>& shape) {
    using B = std::decay_t<Buffer>;
    using Scalar = std::remove_pointer_t<decltype(std::declval<B&>().data())>;
    auto* heap = new B(std::forward<Buffer>(buffer));
    nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<B*>(p); });
    const auto s = sizes(shape);
    return nb::ndarray<nb::numpy, Scalar>(heap->data(), s.size(), s.data(), owner).cast();
}

template <class Scalar>
nb::object borrowed(Scalar* data, const std::vector<std::int64_t>& shape) {
    const auto s = sizes(shape);
    return nb::ndarray<nb::numpy, Scalar>(data, s.size(), s.data(), nb::handle()).cast(nb::rv_policy::reference);
}

inline Eigen::Map<const RowMatrix64> as_matrix(const Matrix64& a) {
    return {a.data(), Eigen::Index(a.shape(0)), Eigen::Index(a.shape(1))};
}

}  // namespace sinkscope::python
