// layers/linear.hpp: y = x Wᵀ + b against the sum of its definition in long double, with and without a
// bias, and its backward's three products against their definitions (dinp = dout W, dW = doutᵀ x,
// db = Σ_t dout), accumulated onto what the gradients held.
#include <catch2/catch.hpp>

#include <sinkscope/layers/linear.hpp>

#include "layers/layer_test_util.hpp"

using namespace sinkscope;
using namespace sinkscope::test::layers;

TEMPLATE_TEST_CASE("linear_forward equals sum_i x[t,i] W[o,i] + b[o]", "[layers][linear]", float, double) {
    using T = TestType;
    const Mat<T> x = gaussian<T>(5, 37, 31), W = gaussian<T>(11, 37, 32, 0.2);
    const Vec<T> b = gaussian_vec<T>(11, 33);
    LongMat ref(5, 11);
    for (Eigen::Index t = 0; t < 5; ++t)
        for (Eigen::Index o = 0; o < 11; ++o) {
            long double s = 0;
            for (Eigen::Index i = 0; i < 37; ++i) s += (long double)x(t, i) * W(o, i);
            ref(t, o) = s;
        }
    const double tol = std::is_same_v<T, float> ? 1e-6 : 1e-14;
    Mat<T> y;
    model::linear_forward(y, x, W, Vec<T>());
    CHECK(relative_error(y, ref) < tol);
    model::linear_forward(y, x, W, b);
    ref.rowwise() += b.transpose().template cast<long double>();
    CHECK(relative_error(y, ref) < tol);
}

TEST_CASE("linear_backward accumulates dout W, dout^T x and the column sums of dout", "[layers][linear]") {
    const Mat<double> x = gaussian<double>(6, 9, 34), dout = gaussian<double>(6, 4, 35);
    const Mat<double> W = gaussian<double>(4, 9, 36);
    const Mat<double> dinp0 = gaussian<double>(6, 9, 37), dW0 = gaussian<double>(4, 9, 38);
    const Vec<double> db0 = gaussian_vec<double>(4, 39);
    Mat<double> dinp = dinp0, dW = dW0;
    Vec<double> db = db0;
    train::linear_backward(&dinp, dW, &db, dout, x, W);
    LongMat ref_dinp = dinp0.cast<long double>(), ref_dW = dW0.cast<long double>();
    for (Eigen::Index t = 0; t < 6; ++t)
        for (Eigen::Index i = 0; i < 9; ++i)
            for (Eigen::Index o = 0; o < 4; ++o) {
                ref_dinp(t, i) += (long double)dout(t, o) * W(o, i);
                ref_dW(o, i) += (long double)dout(t, o) * x(t, i);
            }
    CHECK(relative_error(dinp, ref_dinp) < 1e-14);
    CHECK(relative_error(dW, ref_dW) < 1e-14);
    for (Eigen::Index o = 0; o < 4; ++o) CHECK(db(o) == Approx(db0(o) + dout.col(o).sum()).epsilon(1e-14));
}
