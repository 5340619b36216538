// Trends across training runs of different sizes (the scale sweep, issue 13), with intervals.
//
// Every run r gives one point (x_r, y_r): x = log10 of its training compute C_r (FLOP) or of its
// parameter count, y = the measured quantity at its last checkpoint, on a linear scale (rates in
// [0, 1]) or as log10 y (ratios, losses: a power law y = 10^a · C^b). The trend is the ordinary
// least-squares line
//     y = a + b·x,    b = Σ_r (x_r − x̄)(y_r − ȳ) / Σ_r (x_r − x̄)²,   a = ȳ − b·x̄.
// Interval: stratified percentile bootstrap. Runs of the same size (same x) differ only by their seed;
// a resample draws, for every size, as many of that size's runs as it has, with replacement, and refits.
// This keeps the grid's design (each size stays in) and treats seeds as the independent unit.
// Reach: the x at which the trend meets a target y*, x* = (y* − a)/b, defined for b > 0 (a trend that
// falls or stays flat never reaches a higher target); its interval is the percentile interval of x* over
// the resamples in which b > 0, and is NaN when b ≤ 0 in more than half of them (the data do not say the
// quantity grows). A reach far outside the measured x range is an extrapolation: the caller says so.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include <boost/math/distributions/students_t.hpp>

#include "sinkscope/analysis/intervals.hpp"
#include "sinkscope/core/error.hpp"

namespace sinkscope::analysis {

struct Trend {
    double intercept = std::numeric_limits<double>::quiet_NaN();  // a
    double slope = std::numeric_limits<double>::quiet_NaN();      // b
    Interval slope_ci{std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
    std::int64_t points = 0;   // runs
    std::int64_t strata = 0;   // distinct sizes
    // Fitted line's pointwise band at the requested x (percentiles of a + b·x over the resamples).
    std::vector<double> band_x, band_lo, band_hi;
    // The resampled (a, b) pairs, kept for reach().
    std::vector<double> boot_a, boot_b;
};

namespace detail {
// (a, b) of the least-squares line; NaN when all x are equal or fewer than two points.
inline std::pair<double, double> least_squares(const std::vector<double>& x, const std::vector<double>& y) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    if (x.size() < 2) return {nan, nan};
    double mx = 0, my = 0;
    for (std::size_t i = 0; i < x.size(); ++i) { mx += x[i]; my += y[i]; }
    mx /= double(x.size());
    my /= double(x.size());
    double sxy = 0, sxx = 0;
    for (std::size_t i = 0; i < x.size(); ++i) { sxy += (x[i] - mx) * (y[i] - my); sxx += (x[i] - mx) * (x[i] - mx); }
    if (!(sxx > 0)) return {nan, nan};
    const double b = sxy / sxx;
    return {my - b * mx, b};
}
}  // namespace detail

// x, y: one entry per run (finite). band_at: x values at which to report the fitted line's band.
inline Trend fit_trend(const std::vector<double>& x, const std::vector<double>& y, const std::vector<double>& band_at = {},
                       double confidence = kConfidence, int resamples = kBootstrapResamples,
                       std::uint64_t seed = kBootstrapSeed) {
    require(x.size() == y.size(), "fit_trend: x and y need one entry per run");
    detail::require_finite(x, "fit_trend");
    detail::require_finite(y, "fit_trend");
    Trend t;
    t.points = std::int64_t(x.size());
    std::map<double, std::vector<std::size_t>> strata;
    for (std::size_t i = 0; i < x.size(); ++i) strata[x[i]].push_back(i);
    t.strata = std::int64_t(strata.size());
    std::tie(t.intercept, t.slope) = detail::least_squares(x, y);
    t.band_x = band_at;
    if (t.strata < 2) {
        t.band_lo.assign(band_at.size(), std::numeric_limits<double>::quiet_NaN());
        t.band_hi = t.band_lo;
        return t;
    }
    std::mt19937_64 rng(seed);
    std::vector<double> rx, ry;
    for (int r = 0; r < resamples; ++r) {
        rx.clear();
        ry.clear();
        for (const auto& [xv, idx] : strata) {
            std::uniform_int_distribution<std::size_t> pick(0, idx.size() - 1);
            for (std::size_t k = 0; k < idx.size(); ++k) {
                const std::size_t i = idx[pick(rng)];
                rx.push_back(x[i]);
                ry.push_back(y[i]);
            }
        }
        const auto [a, b] = detail::least_squares(rx, ry);
        t.boot_a.push_back(a);
        t.boot_b.push_back(b);
    }
    const double alpha = 1 - confidence;
    std::vector<double> s = t.boot_b;
    std::sort(s.begin(), s.end());
    t.slope_ci = {detail::sorted_quantile(s, alpha / 2), detail::sorted_quantile(s, 1 - alpha / 2)};
    for (double bx : band_at) {
        for (std::size_t r = 0; r < s.size(); ++r) s[r] = t.boot_a[r] + t.boot_b[r] * bx;
        std::sort(s.begin(), s.end());
        t.band_lo.push_back(detail::sorted_quantile(s, alpha / 2));
        t.band_hi.push_back(detail::sorted_quantile(s, 1 - alpha / 2));
    }
    return t;
}

struct Reach {
    double x = std::numeric_limits<double>::quiet_NaN();  // x* of the fitted line (NaN unless b > 0)
    Interval ci{std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
    double growing_share = 0;  // share of resamples with b > 0
};

// Where the trend reaches `target` (see the header comment).
inline Reach reach(const Trend& t, double target, double confidence = kConfidence) {
    Reach r;
    if (t.slope > 0) r.x = (target - t.intercept) / t.slope;
    std::vector<double> xs;
    for (std::size_t i = 0; i < t.boot_b.size(); ++i)
        if (t.boot_b[i] > 0) xs.push_back((target - t.boot_a[i]) / t.boot_b[i]);
    if (t.boot_b.empty()) return r;
    r.growing_share = double(xs.size()) / double(t.boot_b.size());
    if (2 * xs.size() < t.boot_b.size()) return r;
    // Resamples with b ≤ 0 never reach the target: they sit at x = +∞, above every finite draw.
    std::sort(xs.begin(), xs.end());
    xs.resize(t.boot_b.size(), std::numeric_limits<double>::infinity());
    const double alpha = 1 - confidence;
    r.ci = {detail::sorted_quantile(xs, alpha / 2), detail::sorted_quantile(xs, 1 - alpha / 2)};
    return r;
}

// Student-t interval of the mean of a few independent values (seeds): mean ± t_{n−1, 1−α/2} · s/√n.
inline Interval t_interval_mean(const std::vector<double>& v, double confidence = kConfidence) {
    require(v.size() >= 2, "t_interval_mean: needs at least two values");
    detail::require_finite(v, "t_interval_mean");
    const double n = double(v.size()), m = mean_of(v);
    double ss = 0;
    for (double x : v) ss += (x - m) * (x - m);
    const double se = std::sqrt(ss / (n - 1) / n);
    const boost::math::students_t dist(n - 1);
    const double q = boost::math::quantile(dist, 1 - (1 - confidence) / 2);
    return {m - q * se, m + q * se};
}

}  // namespace sinkscope::analysis
