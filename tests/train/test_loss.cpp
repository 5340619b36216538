// train/loss.hpp: the masked next-token cross-entropy against a long-double log-sum-exp written from
// the definition (−log softmax(x)[y] = log Σ_j exp(x_j) − x_y, no max shift: long double's exp does
// not overflow below ~11356), and its gradient against central finite differences of the loss in double.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <sinkscope/train/loss.hpp>

using namespace sinkscope;
using namespace sinkscope::train;
using model::Mat;

namespace {

Mat<double> random_logits(std::int64_t T, std::int64_t V, std::uint64_t seed, double sd) {
    std::mt19937_64 gen(seed);
    std::normal_distribution<double> normal(0.0, sd);
    Mat<double> m(T, V);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(gen);
    return m;
}

std::vector<std::int32_t> random_targets(std::int64_t T, std::int64_t V, std::uint64_t seed) {
    std::mt19937_64 gen(seed);
    std::uniform_int_distribution<std::int32_t> pick(0, std::int32_t(V - 1));
    std::vector<std::int32_t> y(std::size_t(T), 0);
    for (auto& v : y) v = pick(gen);
    return y;
}

// −log softmax(x_t)[y_t] from the definition, in long double.
long double reference_row_loss(const Mat<double>& x, std::int64_t t, std::int32_t y) {
    long double z = 0;
    for (Eigen::Index j = 0; j < x.cols(); ++j) z += std::exp((long double)x(t, j));
    return std::log(z) - (long double)x(t, y);
}

// The rows a mask counts, written out by hand from the header's comment: begin ≤ t < end (end = −1: T,
// end past T: T), and not row 0 when skip_first.
bool reference_counts(const LossMask& m, std::int64_t t, std::int64_t T) {
    const std::int64_t end = (m.end < 0 || m.end > T) ? T : m.end;
    if (m.skip_first && t == 0) return false;
    return t >= m.begin && t < end;
}

}  // namespace

TEST_CASE("cross-entropy: each counted row's loss and their sum equal a long-double log-sum-exp", "[train][loss][reference]") {
    const std::int64_t T = 9, V = 13;
    const Mat<double> x = random_logits(T, V, 11, 2.5);
    const auto y = random_targets(T, V, 12);
    const std::vector<LossMask> masks{LossMask{}, LossMask{0, -1, true}, LossMask{3, 7, false}, LossMask{1, 40, true},
                                      LossMask{0, 1, false}};
    for (const LossMask& m : masks) {
        long double ref = 0;
        std::int64_t n = 0;
        for (std::int64_t t = 0; t < T; ++t)
            if (reference_counts(m, t, T)) { ref += reference_row_loss(x, t, y[std::size_t(t)]); ++n; }
        INFO("mask [" << m.begin << ", " << m.end << ") skip_first " << m.skip_first);
        CHECK(m.count(T) == n);
        for (std::int64_t t = 0; t < T; ++t) CHECK(m.counts(t, T) == reference_counts(m, t, T));
        const LossSum s = cross_entropy<double>(nullptr, x, y, m, 1.0);
        CHECK(s.count == n);
        // double accumulation of n ≤ 9 terms of size ~5: a few ulps of the sum
        CHECK(s.sum == Approx(double(ref)).epsilon(1e-13));
        CHECK(s.mean() == Approx(double(ref / n)).epsilon(1e-13));
        // float logits: the same rows to float's precision (logits rounded to float, sums of ≤ 13 exps)
        const LossSum sf = cross_entropy<float>(nullptr, x.cast<float>(), y, m, 1.0f);
        CHECK(sf.count == n);
        CHECK(sf.sum == Approx(double(ref)).epsilon(1e-5));
    }
    CHECK(LossSum{}.mean() == 0.0);  // no counted row: 0 by the header's definition, not NaN
}

TEST_CASE("cross-entropy gradient equals central finite differences of the batch mean", "[train][loss][grad]") {
    const std::int64_t T = 6, V = 7;
    const Mat<double> x = random_logits(T, V, 21, 1.5);
    const auto y = random_targets(T, V, 22);
    for (const LossMask& m : {LossMask{}, LossMask{2, 5, true}, LossMask{0, -1, true}}) {
        const double scale = 1.0 / double(m.count(T));
        Mat<double> d;
        cross_entropy<double>(&d, x, y, m, scale);
        REQUIRE(d.rows() == T);
        REQUIRE(d.cols() == V);
        // L(x) = mean over counted rows; h = 1e-5: truncation error ~h²·|L'''| ~ 1e-10, rounding ~ε·|L|/h ~ 1e-11
        const double h = 1e-5;
        double worst = 0;
        for (std::int64_t t = 0; t < T; ++t)
            for (std::int64_t j = 0; j < V; ++j) {
                Mat<double> xp = x, xm = x;
                xp(t, j) += h;
                xm(t, j) -= h;
                const double fd = (cross_entropy<double>(nullptr, xp, y, m, scale).mean() -
                                   cross_entropy<double>(nullptr, xm, y, m, scale).mean()) / (2 * h);
                worst = std::max(worst, std::abs(fd - d(t, j)));
                if (!m.counts(t, T)) CHECK(d(t, j) == 0.0);  // uncounted rows: exactly zero
            }
        INFO("mask [" << m.begin << ", " << m.end << ") skip_first " << m.skip_first);
        CHECK(worst < 1e-8);
    }
}

TEST_CASE("cross-entropy with a huge logit: finite, equal to the long-double reference, gradient rows sum to 0",
          "[train][loss][reference]") {
    const std::int64_t T = 3, V = 5;
    Mat<double> x = random_logits(T, V, 31, 1.0);
    x(0, 2) = 1000.0;  // the target: loss ≈ Σ_{j≠2} exp(x_j − 1000) ≈ 0 (below double's resolution of 0)
    x(1, 4) = 1000.0;  // not the target: loss ≈ 1000 − x(1, 0)
    x(2, 1) = -1000.0; // a hugely negative non-target: no effect on that row's loss
    const std::vector<std::int32_t> y{2, 0, 3};
    const LossMask all{};
    Mat<double> d;
    const LossSum s = cross_entropy<double>(&d, x, y, all, 1.0);
    long double ref = 0;
    for (std::int64_t t = 0; t < T; ++t) ref += reference_row_loss(x, t, y[std::size_t(t)]);
    REQUIRE(std::isfinite(s.sum));
    CHECK(s.sum == Approx(double(ref)).epsilon(1e-14));
    // row 0 alone: exactly the tiny positive sum, which is 0 in double (1000 + log(1 + ~e^-1000) − 1000)
    CHECK(cross_entropy<double>(nullptr, x, y, LossMask{0, 1, false}, 1.0).sum == Approx(0.0).margin(1e-12));
    // row 1 alone: 1000 − x(1, 0) up to log(1 + Σ e^{x_j − 1000}) ≈ 0
    CHECK(cross_entropy<double>(nullptr, x, y, LossMask{1, 2, false}, 1.0).sum == Approx(1000.0 - x(1, 0)).epsilon(1e-14));
    for (std::int64_t t = 0; t < T; ++t) {
        for (std::int64_t j = 0; j < V; ++j) REQUIRE(std::isfinite(d(t, j)));
        CHECK(d.row(t).sum() == Approx(0.0).margin(1e-14));  // Σ_j softmax − 1 = 0
    }
    CHECK(d(0, 2) == Approx(0.0).margin(1e-14));   // softmax = 1 on the target: 1 − 1
    CHECK(d(1, 4) == Approx(1.0).epsilon(1e-14));  // softmax = 1 off the target
    CHECK(d(1, 0) == Approx(-1.0).epsilon(1e-14)); // softmax ≈ 0 on the target: 0 − 1
    // float: exp(1000) overflows float (max ~3.4e38), so this checks the max shift in float arithmetic
    Mat<float> d32;
    const LossSum s32 = cross_entropy<float>(&d32, x.cast<float>(), y, all, 1.0f);
    REQUIRE(std::isfinite(s32.sum));
    CHECK(s32.sum == Approx(double(ref)).epsilon(1e-5));
    for (Eigen::Index i = 0; i < d32.size(); ++i) REQUIRE(std::isfinite(d32.data()[i]));
}

TEST_CASE("cross-entropy: the same loss after adding a constant to a row (softmax's shift invariance)", "[train][loss][property]") {
    const std::int64_t T = 4, V = 9;
    const Mat<double> x = random_logits(T, V, 41, 2.0);
    const auto y = random_targets(T, V, 42);
    Mat<double> shifted = x;
    const double shifts[] = {500.0, -300.0, 0.125, 40.0};
    for (std::int64_t t = 0; t < T; ++t) shifted.row(t).array() += shifts[t];
    Mat<double> d0, d1;
    const double a = cross_entropy<double>(&d0, x, y, LossMask{}, 0.25).sum;
    const double b = cross_entropy<double>(&d1, shifted, y, LossMask{}, 0.25).sum;
    // shifting by 500 rounds each logit to ulp(500) ≈ 1.1e-13, so the agreement is to ~1e-12 absolute
    CHECK(b == Approx(a).margin(1e-11));
    CHECK((d1 - d0).cwiseAbs().maxCoeff() < 1e-12);
}

TEST_CASE("cross-entropy: the errors it promises (target count, target outside the vocabulary, empty mask)", "[train][loss]") {
    const Mat<double> x = random_logits(4, 5, 51, 1.0);
    CHECK_THROWS_WITH(cross_entropy<double>(nullptr, x, {0, 1, 2}, LossMask{}, 1.0), Catch::Contains("3 targets for 4 rows"));
    CHECK_THROWS_WITH(cross_entropy<double>(nullptr, x, {0, 1, 5, 2}, LossMask{}, 1.0),
                      Catch::Contains("target 5 at row 2 is outside the vocabulary"));
    CHECK_THROWS_WITH(cross_entropy<double>(nullptr, x, {0, -1, 1, 2}, LossMask{}, 1.0), Catch::Contains("target -1 at row 1"));
    // a target outside the vocabulary in a row the mask does not count is never read
    CHECK_NOTHROW(cross_entropy<double>(nullptr, x, {99, 1, 2, 3}, LossMask{0, -1, true}, 1.0));
    CHECK_THROWS_WITH(LossMask({-1, 3, false}).validate(4), Catch::Contains("begin must be >= 0"));
    CHECK_THROWS_WITH(LossMask({0, 1, true}).validate(4), Catch::Contains("no position"));
    CHECK_NOTHROW(LossMask({0, 2, true}).validate(4));
}
