// Mat and Vec: the dense matrix (row-major, as PyTorch and GGUF store a linear map (out × in)) and column
// vector of every layer, parameter and activation. model:: re-exports both.
#pragma once

#include <Eigen/Core>

namespace sinkscope {
template <class T> using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T> using Vec = Eigen::Matrix<T, Eigen::Dynamic, 1>;
}  // namespace sinkscope

namespace sinkscope::model {
using sinkscope::Mat;
using sinkscope::Vec;
}  // namespace sinkscope::model
