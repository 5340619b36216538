// analysis/scaling.hpp: the least-squares trend agrees with Eigen's QR least squares on random grids; on
// noise-free points it is exact and its bootstrap interval collapses; reach() inverts the line and says
// nothing for a falling trend; the stratified bootstrap keeps every size; the slope interval covers the
// true slope of noisy power laws at about its nominal rate; the Student-t interval matches the table value.
#include <catch2/catch.hpp>

#include <Eigen/Dense>
#include <cmath>
#include <random>
#include <sinkscope/analysis/scaling.hpp>

#include "../seeded_property.hpp"

using namespace sinkscope::analysis;

namespace {
// sizes × seeds points on x = 0, 1, …: y = a + b·x + noise.
void grid(double a, double b, double noise, int sizes, int seeds, std::uint64_t seed, std::vector<double>& x, std::vector<double>& y) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> n(0.0, 1.0);
    x.clear();
    y.clear();
    for (int s = 0; s < sizes; ++s)
        for (int k = 0; k < seeds; ++k) {
            x.push_back(double(s));
            y.push_back(a + b * double(s) + noise * n(rng));
        }
}
}  // namespace

TEST_CASE("fit_trend: exact on a noise-free line, interval and band collapse", "[analysis][scaling]") {
    std::vector<double> x, y;
    grid(2.0, 0.5, 0.0, 4, 3, 1, x, y);
    const auto t = fit_trend(x, y, {0.0, 3.0});
    CHECK(t.intercept == Approx(2.0));
    CHECK(t.slope == Approx(0.5));
    CHECK(t.slope_ci.lo == Approx(0.5));
    CHECK(t.slope_ci.hi == Approx(0.5));
    CHECK(t.points == 12);
    CHECK(t.strata == 4);
    CHECK(t.band_lo[1] == Approx(3.5));
    CHECK(t.band_hi[1] == Approx(3.5));
    const auto r = reach(t, 4.0);
    CHECK(r.x == Approx(4.0));  // 2 + 0.5·4 = 4
    CHECK(r.ci.lo == Approx(4.0));
    CHECK(r.growing_share == 1.0);
}

TEST_CASE("fit_trend: one size has no trend", "[analysis][scaling]") {
    const auto t = fit_trend({1.0, 1.0, 1.0}, {0.1, 0.2, 0.3});
    CHECK(std::isnan(t.slope));
    CHECK(std::isnan(t.slope_ci.lo));
    CHECK(t.strata == 1);
}

TEST_CASE("reach: a falling trend never reaches a higher target", "[analysis][scaling]") {
    std::vector<double> x, y;
    grid(3.0, -0.4, 0.05, 4, 3, 2, x, y);
    const auto t = fit_trend(x, y);
    CHECK(t.slope_ci.hi < 0);
    const auto r = reach(t, 10.0);
    CHECK(std::isnan(r.x));
    CHECK(std::isnan(r.ci.lo));
    CHECK(r.growing_share < 0.5);
}

TEST_CASE("fit_trend: agrees with Eigen's least squares on random grids", "[analysis][scaling][property]") {
    sinkscope::test::check_property("OLS slope and intercept == QR least squares", [] {
        const int sizes = *rc::gen::inRange(2, 7), seeds = *rc::gen::inRange(1, 5);
        const double a = *rc::gen::inRange(-1000, 1000) / 100.0, b = *rc::gen::inRange(-1000, 1000) / 100.0;
        const auto noise = *rc::gen::inRange(0, 300) / 100.0;
        const auto seed = *rc::gen::inRange<std::uint64_t>(0, 1u << 30);
        std::vector<double> x, y;
        grid(a, b, noise, sizes, seeds, seed, x, y);
        for (auto& v : x) v = 8.0 + 1.7 * v;  // log10 FLOP-like positions
        const auto t = fit_trend(x, y, {}, kConfidence, 200);
        Eigen::MatrixXd A(x.size(), 2);
        Eigen::VectorXd Y(y.size());
        for (std::size_t i = 0; i < x.size(); ++i) { A(i, 0) = 1.0; A(i, 1) = x[i]; Y(i) = y[i]; }
        const Eigen::VectorXd c = A.colPivHouseholderQr().solve(Y);
        RC_ASSERT(std::abs(t.slope - c(1)) <= 1e-9 * (1 + std::abs(c(1))));
        RC_ASSERT(std::abs(t.intercept - c(0)) <= 1e-8 * (1 + std::abs(c(0))));
        RC_ASSERT(t.slope_ci.lo <= t.slope_ci.hi);
        if (t.slope > 0) {
            const auto r = reach(t, t.intercept + t.slope * 20.0);
            RC_ASSERT(std::abs(r.x - 20.0) <= 1e-9 * 20);
        }
    }, 200, 20261201);
}

TEST_CASE("fit_trend: the slope interval covers the true slope of noisy data", "[analysis][scaling]") {
    // 4 sizes × 5 seeds, noise 0.3 around slope 0.4: over 300 independent grids the 95% interval must
    // cover 0.4 in most (a percentile bootstrap with 5 units per size undercovers a little: measured 0.91
    // with this seed; below 0.85 would mean the resampling is wrong) and must not be trivially wide
    // (then every interval would cover: the median width stays below the slope itself).
    int covered = 0;
    std::vector<double> widths;
    for (int rep = 0; rep < 300; ++rep) {
        std::vector<double> x, y;
        grid(1.0, 0.4, 0.3, 4, 5, 1000 + rep, x, y);
        const auto t = fit_trend(x, y, {}, kConfidence, 400, 77 + rep);
        covered += t.slope_ci.lo <= 0.4 && 0.4 <= t.slope_ci.hi;
        widths.push_back(t.slope_ci.hi - t.slope_ci.lo);
    }
    std::sort(widths.begin(), widths.end());
    INFO("coverage " << covered / 300.0 << ", median width " << widths[150]);
    CHECK(covered >= int(0.85 * 300));
    CHECK(widths[150] < 0.4);
}

TEST_CASE("t_interval_mean: Student-t table value", "[analysis][scaling]") {
    // {1, 2, 3}: mean 2, s = 1, t_{2, 0.975} = 4.302652729911275 (tables): half-width 4.3027/√3 = 2.48414.
    const auto ci = t_interval_mean({1.0, 2.0, 3.0});
    CHECK(ci.lo == Approx(2.0 - 2.4841377).epsilon(1e-6));
    CHECK(ci.hi == Approx(2.0 + 2.4841377).epsilon(1e-6));
    CHECK_THROWS(t_interval_mean({1.0}));
}
