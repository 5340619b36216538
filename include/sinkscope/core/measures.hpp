// The definitions every measurement in sinkscope uses, each written once. The reducers, the training
// trace, the spike analysis, the theory module and the experiments call these; none re-derives them.
//
//   median |x| of a state   the upper median of |x| over its n entries: entry ⌊n/2⌋ of the sorted |x|
//                           (Sun et al. take "the median" of a hidden state; for even n we take the upper one)
//   median of a sample      the usual median: the mean of the two middle values for an even count
//   massive activation      Sun, Chen, Kolter, Liu 2024: |x| > 100 and |x| ≥ 1000 × median |x| of its state
//   α_k (attention received by key k; Gu et al. 2025)
//                           α_k = (1 / (T − k)) Σ_{t=k}^{T−1} A[t, k]   (0-based; the queries that can see k)
//   sink head               α₀ > ε, ε = 0.3 by default (Gu et al.); Sink^ε_0 = the share of (layer, head)
//                           pairs that are sink heads. Note: uniform causal attention gives
//                           α₀ = H_T / T (harmonic number), which exceeds 0.3 for T ≤ 10, so the rate means
//                           something only for T ≥ 12 or so.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
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

// Upper median of |x| over n values.
template <class T>
double median_abs(const T* data, std::int64_t n) {
    require(n > 0 && data, "median_abs: empty input");
    std::vector<double> a(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) a[static_cast<std::size_t>(i)] = std::abs(double(data[i]));
    std::nth_element(a.begin(), a.begin() + n / 2, a.end());
    return a[static_cast<std::size_t>(n / 2)];
}

// Median of a sample (mean of the two middle values for an even count).
inline double median_of(std::vector<double> x) {
    require(!x.empty(), "median_of: empty sample");
    std::sort(x.begin(), x.end());
    const std::size_t n = x.size();
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

// α_k of one head from its (n × n) row-major pattern A (query rows, key columns).
template <class T>
double received_attention(const T* A, std::int64_t n, std::int64_t k) {
    require(n > 0 && k >= 0 && k < n, "received_attention: key position outside the pattern");
    double s = 0;
    for (std::int64_t t = k; t < n; ++t) s += double(A[t * n + k]);
    return s / double(n - k);
}

}  // namespace sinkscope::measures
