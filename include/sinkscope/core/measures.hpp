// The definitions every measurement in sinkscope uses, each written once. The reducers, the training
// trace, the spike analysis, the theory module and the experiments call these; none re-derives them.
//
//   Two sample medians of x (n values, s = x sorted ascending, 0-based); they differ only for even n:
//   median_of(x)            the usual median: s[n/2] for odd n, (s[n/2 − 1] + s[n/2]) / 2 for even n. Used
//                           for statistics reported over samples, layers or heads (analysis::median_of,
//                           bootstrap_median, quadratic_ffn's spike-channel rule, the experiments' verdicts).
//   upper_median_of(x)      s[⌊n/2⌋], always one of the values (the upper middle one for even n). Used for
//                           median |x| of a state (median_abs), the median over samples of those per-sample
//                           medians (ResidualStats::Layer::median, B1, B3's reference median), B2's reported
//                           medians and max / median ‖U_k‖_F, and the benchmarks' median timings.
//   median |x| of a state   upper_median_of(|x|) over its n entries (Sun et al. take "the median" of a hidden
//                           state; for even n we take the upper one)
//   massive activation      Sun, Chen, Kolter, Liu 2024: |x| > 100 and |x| ≥ 1000 × median |x| of its state
//   α_k (attention received by key k; Gu et al. 2025)
//                           α_k = (1 / (T − k)) Σ_{t=k}^{T−1} A[t, k]   (0-based; the queries that can see k)
//   sink head               α₀ > ε, ε = 0.3 by default (Gu et al.); Sink^ε_0 = the share of (layer, head)
//                           pairs that are sink heads. Note: uniform causal attention gives
//                           α₀ = H_T / T (harmonic number), which exceeds 0.3 for T ≤ 9 (H_10 / 10 = 0.293),
//                           so the rate means something only for T ≥ 12 or so.
//   Spearman's ρ            the Pearson correlation of the two samples' ranks, tied values sharing their
//                           average rank (fractional ranking): ρ = cov(r_x, r_y) / (σ(r_x) σ(r_y))
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "sinkscope/core/error.hpp"

namespace sinkscope::measures {

inline constexpr double kMassiveAbs = 100.0;      // |x| > 100
inline constexpr double kMassiveRatio = 1000.0;   // |x| ≥ 1000 × median |x|
inline constexpr double kSinkEps = 0.3;           // Gu et al.'s ε

inline bool is_massive(double abs_value, double median_abs) {
    return abs_value > kMassiveAbs && abs_value >= kMassiveRatio * median_abs;
}

inline bool is_sink(double alpha, double eps = kSinkEps) { return alpha > eps; }

// Median of a sample (mean of the two middle values for an even count).
inline double median_of(std::vector<double> x) {
    require(!x.empty(), "median_of: empty sample");
    std::sort(x.begin(), x.end());
    const std::size_t n = x.size();
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

// Upper median of a sample: entry ⌊n/2⌋ of the sorted x (the upper middle value for an even count).
inline double upper_median_of(std::vector<double> x) {
    require(!x.empty(), "upper_median_of: empty sample");
    const std::size_t m = x.size() / 2;
    std::nth_element(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(m), x.end());
    return x[m];
}

// Upper median of |x| over n values.
template <class T>
double median_abs(const T* data, std::int64_t n) {
    require(n > 0 && data, "median_abs: empty input");
    std::vector<double> a(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) a[static_cast<std::size_t>(i)] = std::abs(double(data[i]));
    return upper_median_of(std::move(a));
}

// α_k of one head whose column k is read through `column`: column(t) = A[t, k]. The sum runs over
// t = k … n−1 in that order, in double, so every layout gives the same bits.
template <class Column>
double received_attention_from(const Column& column, std::int64_t n, std::int64_t k) {
    require(n > 0 && k >= 0 && k < n, "received_attention: key position outside the pattern");
    double s = 0;
    for (std::int64_t t = k; t < n; ++t) s += double(column(t));
    return s / double(n - k);
}

// α_k of one head from its (n × n) row-major pattern A (query rows, key columns).
template <class T>
double received_attention(const T* A, std::int64_t n, std::int64_t k) {
    return received_attention_from([A, n, k](std::int64_t t) { return A[t * n + k]; }, n, k);
}

// Ranks 1…n of x, ties sharing the average of the ranks they span.
inline std::vector<double> fractional_ranks(const std::vector<double>& x) {
    std::vector<std::size_t> order(x.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&x](std::size_t a, std::size_t b) { return x[a] < x[b]; });
    std::vector<double> r(x.size());
    for (std::size_t i = 0; i < order.size();) {
        std::size_t j = i;
        while (j + 1 < order.size() && x[order[j + 1]] == x[order[i]]) ++j;
        const double average = (double(i) + double(j)) / 2 + 1;  // ranks i+1 … j+1
        for (std::size_t k = i; k <= j; ++k) r[order[k]] = average;
        i = j + 1;
    }
    return r;
}

// Spearman's rank correlation of paired samples x and y (see the top of this file); NaN when either
// sample is constant.
inline double spearman(const std::vector<double>& x, const std::vector<double>& y) {
    require(x.size() == y.size() && x.size() >= 2, "spearman: needs two samples of the same size, at least 2 values");
    for (std::size_t i = 0; i < x.size(); ++i)
        require(std::isfinite(x[i]) && std::isfinite(y[i]), "spearman: value " + std::to_string(i) + " is not finite");
    const std::vector<double> rx = fractional_ranks(x), ry = fractional_ranks(y);
    const double mean = (double(x.size()) + 1) / 2;  // the mean of any fractional ranking of n values
    double sxy = 0, sxx = 0, syy = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        sxy += (rx[i] - mean) * (ry[i] - mean);
        sxx += (rx[i] - mean) * (rx[i] - mean);
        syy += (ry[i] - mean) * (ry[i] - mean);
    }
    return sxy / std::sqrt(sxx * syy);
}

}  // namespace sinkscope::measures
