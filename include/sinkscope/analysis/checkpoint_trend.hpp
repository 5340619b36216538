// Trends across training checkpoints, with a two-stage bootstrap over checkpoints and evaluation units.
//
// At checkpoint c (c = 0 … C−1) every evaluation unit i (a validation sequence, the same sequences at
// every checkpoint) gives a numerator a_ci and a denominator b_ci ≥ 0. The checkpoint's pooled share is
//     s_c = Σ_i a_ci / Σ_i b_ci            (undefined when Σ_i b_ci = 0)
// and the trend is the ordinary least-squares slope of s_c on the checkpoint position x_c,
//     β = Σ_c (x_c − x̄)(s_c − s̄) / Σ_c (x_c − x̄)²     over the checkpoints where s_c is defined,
// reported as the fitted change over the span, Δ = β · (x_last − x_first).
// Interval: a percentile bootstrap in two stages, as the rule set's seed intervals are (seeds, then samples
// within a seed). Stage 1 draws C checkpoints with replacement, each keeping its position x_c (case
// resampling of the regression: a checkpoint that sits off the line by chance is a unit of its own, so
// shares that wander between checkpoints widen the interval instead of reading as a trend). Stage 2 draws
// the units i with replacement, one draw shared by every drawn checkpoint (a sequence's values at
// different checkpoints are paired). Each resample's change is its slope times the full series' span, so
// that a resample which misses the first or last checkpoint still measures the same quantity. Resamples
// with fewer than two distinct defined positions are dropped; the interval is NaN when more than half are.
// TrendResampling::units (stage 2 alone) is the first registered version's interval, kept for comparison.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "sinkscope/analysis/intervals.hpp"
#include "sinkscope/core/error.hpp"

namespace sinkscope::analysis {

enum class TrendResampling {
    checkpoints_then_units,  // the two stages above (rule A4 since rule set version 4, experiments/RULES_CHANGELOG.md)
    units,                   // stage 2 only: sequences resampled, checkpoints fixed
};

struct ShareTrend {
    std::vector<double> shares;  // s_c (NaN where undefined)
    double change = std::numeric_limits<double>::quiet_NaN();  // Δ = β · (x_last − x_first)
    Interval ci{std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
    std::int64_t units = 0;
};

// Paper A's "concentrates in layers 0-1" (rules A4 and A4-scale): the share of sink heads in the first
// `early_layers` of L layers counts as concentrated when it is at least (1 + u) · excess, u = early_layers / L:
// with excess = 1/2, more than halfway from the uniform share u to all of them. Written (1 + u) · excess, the
// same double as the first version's (1.0 + 2.0 / L) / 2.0; L = 0 counts as 1.
inline double concentration_threshold(double early_layers, std::int64_t n_layers, double excess) {
    return (1.0 + early_layers / double(std::max<std::int64_t>(1, n_layers))) * excess;
}

// Δ of the least-squares line through the defined points (x_c, s_c); NaN with fewer than two distinct
// positions. Δ = β · span, with span the defined points' x_last − x_first unless given. Public: the scale
// sweep applies it to one seed's checkpoints.
inline double fitted_change(const std::vector<double>& x, const std::vector<double>& s,
                            double span = std::numeric_limits<double>::quiet_NaN()) {
    double mx = 0, ms = 0;
    std::int64_t n = 0;
    double lo = INFINITY, hi = -INFINITY;
    for (std::size_t c = 0; c < s.size(); ++c)
        if (std::isfinite(s[c])) { mx += x[c]; ms += s[c]; ++n; lo = std::min(lo, x[c]); hi = std::max(hi, x[c]); }
    if (n < 2) return std::numeric_limits<double>::quiet_NaN();
    mx /= double(n);
    ms /= double(n);
    double sxy = 0, sxx = 0;
    for (std::size_t c = 0; c < s.size(); ++c)
        if (std::isfinite(s[c])) { sxy += (x[c] - mx) * (s[c] - ms); sxx += (x[c] - mx) * (x[c] - mx); }
    return sxx > 0 ? sxy / sxx * (std::isnan(span) ? hi - lo : span) : std::numeric_limits<double>::quiet_NaN();
}

// num[c][i], den[c][i]: unit i at checkpoint c; x[c]: the checkpoint's position (index or step).
inline ShareTrend share_trend(const std::vector<std::vector<double>>& num, const std::vector<std::vector<double>>& den,
                              const std::vector<double>& x,
                              TrendResampling resampling = TrendResampling::checkpoints_then_units,
                              double confidence = kConfidence, int resamples = kBootstrapResamples,
                              std::uint64_t seed = kBootstrapSeed) {
    const std::size_t C = num.size();
    require(C >= 2 && den.size() == C && x.size() == C, "share_trend: needs >= 2 checkpoints with numerators, denominators and positions");
    const std::size_t n = num[0].size();
    require(n >= 1, "share_trend: no evaluation unit");
    for (std::size_t c = 0; c < C; ++c) {
        require(num[c].size() == n && den[c].size() == n, "share_trend: every checkpoint needs the same units");
        detail::require_finite(num[c], "share_trend");
        detail::require_finite(den[c], "share_trend");
    }
    // Pooled shares of the drawn checkpoints `at` over the drawn units `pick`.
    auto shares_of = [&](const std::vector<std::size_t>& at, const std::vector<std::size_t>& pick) {
        std::vector<double> s(at.size());
        for (std::size_t j = 0; j < at.size(); ++j) {
            double a = 0, b = 0;
            for (std::size_t i : pick) { a += num[at[j]][i]; b += den[at[j]][i]; }
            s[j] = b > 0 ? a / b : std::numeric_limits<double>::quiet_NaN();
        }
        return s;
    };
    ShareTrend t;
    t.units = std::int64_t(n);
    std::vector<std::size_t> all(n), every(C);
    for (std::size_t i = 0; i < n; ++i) all[i] = i;
    for (std::size_t c = 0; c < C; ++c) every[c] = c;
    t.shares = shares_of(every, all);
    t.change = fitted_change(x, t.shares);
    double lo = INFINITY, hi = -INFINITY;  // the defined checkpoints' span
    for (std::size_t c = 0; c < C; ++c)
        if (std::isfinite(t.shares[c])) { lo = std::min(lo, x[c]); hi = std::max(hi, x[c]); }
    const double span = hi - lo;

    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::size_t> draw_unit(0, n - 1), draw_checkpoint(0, C - 1);
    std::vector<double> stats, xs(C);
    std::vector<std::size_t> pick(n), at = every;
    for (int b = 0; b < resamples; ++b) {
        if (resampling == TrendResampling::checkpoints_then_units)
            for (auto& c : at) c = draw_checkpoint(rng);
        for (auto& p : pick) p = draw_unit(rng);
        for (std::size_t j = 0; j < C; ++j) xs[j] = x[at[j]];
        const double d = fitted_change(xs, shares_of(at, pick), span);
        if (std::isfinite(d)) stats.push_back(d);
    }
    if (2 * stats.size() < std::size_t(resamples)) return t;
    std::sort(stats.begin(), stats.end());
    const double a = 1 - confidence;
    t.ci = {detail::sorted_quantile(stats, a / 2), detail::sorted_quantile(stats, 1 - a / 2)};
    return t;
}

}  // namespace sinkscope::analysis
