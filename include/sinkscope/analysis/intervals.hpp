// Confidence intervals for the verdicts: exact binomial (Clopper–Pearson) intervals for rates and
// shares, percentile-bootstrap intervals (fixed seed) for means, medians and ratios of per-sample values.
//
//   clopper_pearson(k, n, c)   [B⁻¹(α/2; k, n−k+1), B⁻¹(1−α/2; k+1, n−k)],  α = 1 − c,
//                              B⁻¹ the beta quantile (Boost.Math); lo = 0 when k = 0, hi = 1 when k = n.
//                              Exact: covers the true rate with probability ≥ c for every rate and n.
//   bootstrap(x, stat, c, B, seed)
//                              percentile interval [q_{α/2}, q_{1−α/2}] of stat(x*) over B resamples x*
//                              of x drawn with replacement (std::mt19937_64 seeded by `seed`).
//   bootstrap_ratio(x, y, …)   the same for mean(x*) / mean(y*) with paired resamples (x_i, y_i).
//   bootstrap_two_stage(groups, stat, c, B, seed)
//                              values grouped by training seed: each resample draws G groups with
//                              replacement, then within each drawn group its n_g values with replacement,
//                              and applies stat to the pooled draw. The top stage carries the spread
//                              between seeds, which one-stage resampling of the pooled values misses.
//
// Units: every resampled unit must be independent (a text sample, a seed), not a (layer, head) of the
// same sample. Rates whose units are not independent (Gu's sink rate pools the heads of one sample)
// take the bootstrap over samples of the per-sample rate instead of Clopper–Pearson.
#pragma once

#include <boost/math/distributions/beta.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/core/measures.hpp"

namespace sinkscope::analysis {

struct Interval {
    double lo = 0, hi = 0;
};

inline constexpr double kConfidence = 0.95;          // every verdict's interval
inline constexpr int kBootstrapResamples = 2000;
inline constexpr std::uint64_t kBootstrapSeed = 20260311;

inline Interval clopper_pearson(std::int64_t k, std::int64_t n, double confidence = kConfidence) {
    require(n > 0 && k >= 0 && k <= n,
            "clopper_pearson: needs 0 <= k <= n and n > 0, got k=" + std::to_string(k) + ", n=" + std::to_string(n));
    require(confidence > 0 && confidence < 1, "clopper_pearson: confidence must lie in (0, 1)");
    const double a = 1 - confidence;
    Interval ci;
    ci.lo = k == 0 ? 0.0 : boost::math::quantile(boost::math::beta_distribution<double>(double(k), double(n - k + 1)), a / 2);
    ci.hi = k == n ? 1.0 : boost::math::quantile(boost::math::beta_distribution<double>(double(k + 1), double(n - k)), 1 - a / 2);
    return ci;
}

namespace detail {
// Percentile of a sorted sample by linear interpolation between order statistics (type 7).
inline double sorted_quantile(const std::vector<double>& s, double q) {
    const double h = (double(s.size()) - 1) * q;
    const std::size_t i = std::size_t(std::floor(h));
    const std::size_t j = std::min(i + 1, s.size() - 1);
    return s[i] + (h - double(i)) * (s[j] - s[i]);
}
inline void require_finite(const std::vector<double>& x, const char* what) {
    for (double v : x) require(std::isfinite(v), std::string(what) + ": non-finite value in the sample");
}
}  // namespace detail

inline double mean_of(const std::vector<double>& x) {
    require(!x.empty(), "mean_of: empty sample");
    double s = 0;
    for (double v : x) s += v;
    return s / double(x.size());
}

// The median of a sample (core/measures.hpp).
using measures::median_of;

using Statistic = std::function<double(const std::vector<double>&)>;

inline Interval bootstrap(const std::vector<double>& x, const Statistic& stat, double confidence = kConfidence,
                          int resamples = kBootstrapResamples, std::uint64_t seed = kBootstrapSeed) {
    require(!x.empty(), "bootstrap: empty sample");
    require(confidence > 0 && confidence < 1 && resamples >= 100, "bootstrap: confidence in (0, 1) and >= 100 resamples");
    detail::require_finite(x, "bootstrap");
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::size_t> pick(0, x.size() - 1);
    std::vector<double> stats(resamples), r(x.size());
    for (int b = 0; b < resamples; ++b) {
        for (auto& v : r) v = x[pick(rng)];
        stats[b] = stat(r);
    }
    std::sort(stats.begin(), stats.end());
    const double a = 1 - confidence;
    return {detail::sorted_quantile(stats, a / 2), detail::sorted_quantile(stats, 1 - a / 2)};
}

inline Interval bootstrap_mean(const std::vector<double>& x, double confidence = kConfidence) {
    return bootstrap(x, mean_of, confidence);
}
inline Interval bootstrap_median(const std::vector<double>& x, double confidence = kConfidence) {
    return bootstrap(x, [](const std::vector<double>& v) { return median_of(v); }, confidence);
}

// mean(x) / mean(y) over paired units (x_i, y_i), resampled together.
inline Interval bootstrap_ratio(const std::vector<double>& x, const std::vector<double>& y, double confidence = kConfidence,
                                int resamples = kBootstrapResamples, std::uint64_t seed = kBootstrapSeed) {
    require(x.size() == y.size() && !x.empty(), "bootstrap_ratio: needs two paired, non-empty samples");
    detail::require_finite(x, "bootstrap_ratio");
    detail::require_finite(y, "bootstrap_ratio");
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::size_t> pick(0, x.size() - 1);
    std::vector<double> stats;
    stats.reserve(resamples);
    for (int b = 0; b < resamples; ++b) {
        double sx = 0, sy = 0;
        for (std::size_t i = 0; i < x.size(); ++i) { const std::size_t j = pick(rng); sx += x[j]; sy += y[j]; }
        stats.push_back(sy != 0 ? sx / sy : (sx == 0 ? 0.0 : std::copysign(INFINITY, sx)));
    }
    std::sort(stats.begin(), stats.end());
    const double a = 1 - confidence;
    return {detail::sorted_quantile(stats, a / 2), detail::sorted_quantile(stats, 1 - a / 2)};
}

// Two-stage (hierarchical) percentile bootstrap over groups of values: groups[g] holds the per-sample
// values of training seed g. Resample b draws G = groups.size() group indices g*_1..g*_G uniformly with
// replacement, then for each g*_i draws n_{g*_i} values of that group with replacement; the statistic is
// applied to the concatenation. With one value per group it is the ordinary bootstrap over groups.
// Resampling both stages counts the within-seed variance twice (Var* ≈ τ̂²/G + 2σ²/(G n)): conservative,
// by √2 in width when seeds do not differ at all, and to first order exact when τ² ≫ σ²/n.
inline Interval bootstrap_two_stage(const std::vector<std::vector<double>>& groups, const Statistic& stat = mean_of,
                                    double confidence = kConfidence, int resamples = kBootstrapResamples,
                                    std::uint64_t seed = kBootstrapSeed) {
    require(!groups.empty(), "bootstrap_two_stage: no groups (seeds)");
    require(confidence > 0 && confidence < 1 && resamples >= 100, "bootstrap_two_stage: confidence in (0, 1) and >= 100 resamples");
    std::size_t total = 0;
    for (std::size_t g = 0; g < groups.size(); ++g) {
        require(!groups[g].empty(), "bootstrap_two_stage: group " + std::to_string(g) + " is empty");
        detail::require_finite(groups[g], "bootstrap_two_stage");
        total += groups[g].size();
    }
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::size_t> pick_group(0, groups.size() - 1);
    std::vector<double> stats(resamples), pooled;
    pooled.reserve(total * 2);
    for (int b = 0; b < resamples; ++b) {
        pooled.clear();
        for (std::size_t i = 0; i < groups.size(); ++i) {
            const auto& x = groups[pick_group(rng)];
            std::uniform_int_distribution<std::size_t> pick(0, x.size() - 1);
            for (std::size_t j = 0; j < x.size(); ++j) pooled.push_back(x[pick(rng)]);
        }
        stats[b] = stat(pooled);
    }
    std::sort(stats.begin(), stats.end());
    const double a = 1 - confidence;
    return {detail::sorted_quantile(stats, a / 2), detail::sorted_quantile(stats, 1 - a / 2)};
}

}  // namespace sinkscope::analysis
