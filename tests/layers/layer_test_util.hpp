// Helpers of the per-layer tests: seeded Gaussian matrices and the largest relative difference.
// Each layer's forward is compared with a plain loop over its textbook definition in long double
// (the independent reference); its backward is checked against finite differences in double in
// tests/train/test_backward.cpp.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

#include <sinkscope/model/weights.hpp>

namespace sinkscope::test::layers {

using model::Mat;
using model::Vec;
using LongMat = Eigen::Matrix<long double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Entries N(mean, sd²) from a fixed seed.
template <class T>
Mat<T> gaussian(std::int64_t rows, std::int64_t cols, std::uint64_t seed, double sd = 1.0, double mean = 0.0) {
    std::mt19937_64 gen(seed);
    std::normal_distribution<double> normal(mean, sd);
    Mat<T> m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = T(normal(gen));
    return m;
}
template <class T>
Vec<T> gaussian_vec(std::int64_t n, std::uint64_t seed, double sd = 1.0, double mean = 0.0) {
    return gaussian<T>(n, 1, seed, sd, mean).col(0);
}

// max |a − ref| / max(max |ref|, tiny): the error relative to the reference's scale.
template <class T>
double relative_error(const Mat<T>& a, const LongMat& ref) {
    const long double scale = std::max(ref.cwiseAbs().maxCoeff(), 1e-300L);
    return double((a.template cast<long double>() - ref).cwiseAbs().maxCoeff() / scale);
}

}  // namespace sinkscope::test::layers
