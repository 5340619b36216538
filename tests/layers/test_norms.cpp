// layers/norms.hpp: RMSNorm, LayerNorm, DynamicTanh and per-head RMSNorm against their definitions
// evaluated in long double, on inputs with a massive channel (the states this toolkit measures), and
// the invariances each norm is built to have.
#include <catch2/catch.hpp>

#include <sinkscope/layers/norms.hpp>

#include "layers/layer_test_util.hpp"

using namespace sinkscope;
using namespace sinkscope::test::layers;

namespace {

// Row t of x with channel c set to `massive` (Sun et al.'s massive activation: thousands × the median).
template <class T>
Mat<T> with_massive_channel(Mat<T> x, std::int64_t t, std::int64_t c, double massive) {
    x(t, c) = T(massive);
    return x;
}

// RMSNorm: y = x / √(mean(x²) + eps) ⊙ g.
template <class T>
LongMat rmsnorm_reference(const Mat<T>& x, const Vec<T>& g, long double eps) {
    LongMat y(x.rows(), x.cols());
    for (Eigen::Index t = 0; t < x.rows(); ++t) {
        long double ms = 0;
        for (Eigen::Index i = 0; i < x.cols(); ++i) ms += (long double)x(t, i) * x(t, i);
        const long double r = 1.0L / std::sqrt(ms / x.cols() + eps);
        for (Eigen::Index i = 0; i < x.cols(); ++i) y(t, i) = (long double)x(t, i) * r * g(i);
    }
    return y;
}

// LayerNorm: y = (x − μ) / √(σ² + eps) ⊙ g + b, σ² with 1/d.
template <class T>
LongMat layernorm_reference(const Mat<T>& x, const Vec<T>& g, const Vec<T>& b, long double eps) {
    LongMat y(x.rows(), x.cols());
    for (Eigen::Index t = 0; t < x.rows(); ++t) {
        long double mu = 0, var = 0;
        for (Eigen::Index i = 0; i < x.cols(); ++i) mu += x(t, i);
        mu /= x.cols();
        for (Eigen::Index i = 0; i < x.cols(); ++i) var += (x(t, i) - mu) * (x(t, i) - mu);
        const long double r = 1.0L / std::sqrt(var / x.cols() + eps);
        for (Eigen::Index i = 0; i < x.cols(); ++i) y(t, i) = (x(t, i) - mu) * r * g(i) + (b.size() ? (long double)b(i) : 0.0L);
    }
    return y;
}

}  // namespace

TEMPLATE_TEST_CASE("rmsnorm and layernorm equal their definitions, also next to a massive channel", "[layers][norms]",
                   float, double) {
    using T = TestType;
    const double tol = std::is_same_v<T, float> ? 2e-6 : 1e-14;
    const Mat<T> x = with_massive_channel(gaussian<T>(6, 48, 1), 0, 7, 3000.0);
    const Vec<T> g = gaussian_vec<T>(48, 2, 0.2, 1.0), b = gaussian_vec<T>(48, 3, 0.1);
    for (double eps : {1e-6, 1e-5}) {
        Mat<T> y;
        model::rmsnorm_forward(y, x, g, eps);
        CHECK(relative_error(y, rmsnorm_reference(x, g, eps)) < tol);
        model::layernorm_forward(y, x, g, b, eps);
        CHECK(relative_error(y, layernorm_reference(x, g, b, eps)) < tol);
        model::layernorm_forward(y, x, g, Vec<T>(), eps);  // no bias (an empty vector): the bias term is absent
        CHECK(relative_error(y, layernorm_reference(x, g, Vec<T>(), eps)) < tol);
    }
}

TEST_CASE("the norms' invariances: RMSNorm under scaling, LayerNorm under scaling and shift; unit RMS out",
          "[layers][norms]") {
    const Mat<double> x = gaussian<double>(5, 32, 4);
    const Vec<double> ones = Vec<double>::Ones(32), none;
    Mat<double> y, ys;
    // eps = 0: Norm(c x) = Norm(x) for c > 0 exactly in real arithmetic.
    model::rmsnorm_forward(y, x, ones, 0.0);
    model::rmsnorm_forward(ys, Mat<double>(x * 1234.5), ones, 0.0);
    CHECK((y - ys).cwiseAbs().maxCoeff() < 1e-13);
    for (Eigen::Index t = 0; t < y.rows(); ++t) CHECK(std::sqrt(y.row(t).squaredNorm() / 32.0) == Approx(1.0).epsilon(1e-13));
    model::layernorm_forward(y, x, ones, none, 0.0);
    model::layernorm_forward(ys, Mat<double>((x.array() * 0.01 + 50.0).matrix()), ones, none, 0.0);
    CHECK((y - ys).cwiseAbs().maxCoeff() < 1e-11);  // the shift by 50 costs digits of 0.01 x: about 1e-16 · 50 / 0.01 = 5e-13
    for (Eigen::Index t = 0; t < y.rows(); ++t) {
        CHECK(std::abs(y.row(t).mean()) < 1e-14);
        CHECK(std::sqrt(y.row(t).squaredNorm() / 32.0) == Approx(1.0).epsilon(1e-13));
    }
}

TEST_CASE("DynamicTanh is gamma tanh(alpha x) + beta, entry by entry", "[layers][norms]") {
    const Mat<double> x = gaussian<double>(4, 16, 5, 2.0);
    const Vec<double> alpha = Vec<double>::Constant(1, 0.7), gamma = gaussian_vec<double>(16, 6, 0.3, 1.0),
                      beta = gaussian_vec<double>(16, 7, 0.1);
    Mat<double> y;
    model::dyt_forward(y, x, alpha, gamma, beta);
    LongMat ref(4, 16);
    for (Eigen::Index t = 0; t < 4; ++t)
        for (Eigen::Index i = 0; i < 16; ++i) ref(t, i) = gamma(i) * std::tanh(0.7L * x(t, i)) + beta(i);
    CHECK(relative_error(y, ref) < 1e-14);
}

TEST_CASE("per-head RMSNorm is RMSNorm of each head's slice, one gain shared by the heads", "[layers][norms]") {
    const std::int64_t T = 5, H = 3, dh = 8;
    const Mat<double> q = with_massive_channel(gaussian<double>(T, H * dh, 8), 0, 9, 500.0);
    const Vec<double> g = gaussian_vec<double>(dh, 9, 0.2, 1.0);
    Mat<double> y = q;
    model::head_rmsnorm_forward(y, g, H, dh, 1e-6);
    // The independent path: the (T·H × d_h) matrix of head slices through the reference RMSNorm.
    Mat<double> slices(T * H, dh);
    for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t h = 0; h < H; ++h) slices.row(t * H + h) = q.row(t).segment(h * dh, dh);
    const LongMat ref_slices = rmsnorm_reference(slices, g, 1e-6L);
    LongMat ref(T, H * dh);
    for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t h = 0; h < H; ++h) ref.row(t).segment(h * dh, dh) = ref_slices.row(t * H + h);
    CHECK(relative_error(y, ref) < 1e-14);
}
