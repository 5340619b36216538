// Massive activations ("spikes") and Paper B's sub-block bookkeeping.
//
// Massive activation (Sun, Chen, Kolter, Liu 2024): an entry x of a hidden state H is massive if
//   |x| > 100  and  |x| ≥ 1000 · median |H|,
// the median taken over every entry of that hidden state (all positions × channels of one sequence).
//
// Paper B counts 2L sub-blocks, 1-based: sub-block 2l+1 is the attention of layer l (0-based),
// sub-block 2l+2 its FFN; odd = attention, even = FFN. The residual after sub-block i is
//   H_i = H_{i−1} + F_i(Norm(H_{i−1})),   H_0 = the embedding.
// In sinkscope's hook names (pre-norm models):
//   F_{2l+1} = blocks.l.hook_attn_out   H_{2l+1} = blocks.l.hook_resid_mid
//   F_{2l+2} = blocks.l.hook_mlp_out    H_{2l+2} = blocks.l.hook_resid_post
//   H_0 = blocks.0.hook_resid_pre (the embedding, plus learned positions where a model has them)
//
// Step-up / step-down rule (the project's, Paper B gives none): follow one spike coordinate (position
// t*, channel c*) through the sub-blocks, x_i = H_i[t*, c*], Δ_i = x_i − x_{i−1} = F_i[t*, c*], peak
// P = x at the i where |x_i| is largest, s = sign(P). Then
//   step-up   = { i : s·Δ_i ≥  τ |P| }     step-down = { i : s·Δ_i ≤ −τ |P| }     (τ = 0.2 by default)
//   in-between ratio = max |Δ_i| over sub-blocks strictly between the last step-up and the first
//                      step-down / max |Δ_i| over the step-up blocks (Paper B: 10⁻² to 10⁻³).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"

namespace sinkscope::analysis {

inline constexpr double kMassiveAbs = 100.0;      // |x| > 100
inline constexpr double kMassiveRatio = 1000.0;   // |x| ≥ 1000 × median |x|

inline bool is_massive(double abs_value, double median_abs) {
    return abs_value > kMassiveAbs && abs_value >= kMassiveRatio * median_abs;
}

// Median of |x| over n values (the upper median for even n, as the reducers use).
template <class T>
double median_abs(const T* data, std::int64_t n) {
    require(n > 0 && data, "median_abs: empty input");
    std::vector<double> a(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) a[i] = std::abs(double(data[i]));
    std::nth_element(a.begin(), a.begin() + n / 2, a.end());
    return a[n / 2];
}

struct SubBlock {
    std::int64_t index = 0;       // 1-based, 1 … 2L
    std::int64_t layer = 0;       // 0-based layer
    bool attention = false;       // odd index
    std::string output_hook;      // F_i
    std::string state_hook;       // H_i
};

inline SubBlock sub_block(std::int64_t index, std::int64_t n_layers) {
    require(n_layers > 0 && index >= 1 && index <= 2 * n_layers,
            "sub_block: index " + std::to_string(index) + " outside [1, " + std::to_string(2 * n_layers) + "]");
    SubBlock s;
    s.index = index;
    s.layer = (index - 1) / 2;
    s.attention = index % 2 == 1;
    const std::string p = "blocks." + std::to_string(s.layer) + ".";
    s.output_hook = p + (s.attention ? "hook_attn_out" : "hook_mlp_out");
    s.state_hook = p + (s.attention ? "hook_resid_mid" : "hook_resid_post");
    return s;
}

inline std::vector<SubBlock> sub_blocks(std::int64_t n_layers) {
    std::vector<SubBlock> v;
    for (std::int64_t i = 1; i <= 2 * n_layers; ++i) v.push_back(sub_block(i, n_layers));
    return v;
}

// The state before any sub-block, H_0.
inline std::string initial_state_hook() { return "blocks.0.hook_resid_pre"; }

struct StepClassification {
    std::vector<std::int64_t> step_up;    // 1-based sub-block indices, ascending
    std::vector<std::int64_t> step_down;
    std::int64_t peak_index = 0;          // i with the largest |x_i| (0 = the embedding)
    double peak = 0;                      // x at that index, signed
    double in_between_ratio = 0;          // see the header; 0 if nothing lies between or no step-up
    double tau = 0.2;
};

// `trajectory` holds x_0 … x_{2L} (size 2L + 1) for one spike coordinate.
inline StepClassification classify_steps(const std::vector<double>& trajectory, double tau = 0.2) {
    require(trajectory.size() >= 2, "classify_steps: needs x_0 and at least one sub-block");
    require(tau > 0 && tau < 1, "classify_steps: tau must lie in (0, 1)");
    for (double x : trajectory) require(std::isfinite(x), "classify_steps: non-finite trajectory");
    StepClassification c;
    c.tau = tau;
    for (std::size_t i = 0; i < trajectory.size(); ++i)
        if (std::abs(trajectory[i]) > std::abs(c.peak)) { c.peak = trajectory[i]; c.peak_index = std::int64_t(i); }
    if (c.peak == 0) return c;
    const double s = c.peak > 0 ? 1.0 : -1.0, P = std::abs(c.peak);
    double up_max = 0;
    for (std::size_t i = 1; i < trajectory.size(); ++i) {
        const double d = s * (trajectory[i] - trajectory[i - 1]);
        if (d >= tau * P) { c.step_up.push_back(std::int64_t(i)); up_max = std::max(up_max, std::abs(d)); }
        if (d <= -tau * P) c.step_down.push_back(std::int64_t(i));
    }
    if (!c.step_up.empty()) {
        const std::int64_t from = c.step_up.back() + 1;
        std::int64_t to = std::int64_t(trajectory.size()) - 1;
        for (auto i : c.step_down) if (i > c.step_up.back()) { to = i - 1; break; }
        double between = 0;
        for (std::int64_t i = from; i <= to; ++i) between = std::max(between, std::abs(trajectory[i] - trajectory[i - 1]));
        c.in_between_ratio = up_max > 0 ? between / up_max : 0.0;
    }
    return c;
}

struct SpikeEntry {
    std::int64_t position = 0;
    std::int64_t channel = 0;
    double value = 0;
};

// Massive entries of one hidden state (n × d, row-major), largest |x| first, judged against the
// median |x| of the whole state.
template <class T>
std::vector<SpikeEntry> massive_entries(const T* state, std::int64_t n, std::int64_t d) {
    require(n > 0 && d > 0, "massive_entries: empty state");
    const double med = median_abs(state, n * d);
    std::vector<SpikeEntry> out;
    for (std::int64_t t = 0; t < n; ++t)
        for (std::int64_t c = 0; c < d; ++c) {
            const double v = double(state[t * d + c]);
            if (is_massive(std::abs(v), med)) out.push_back({t, c, v});
        }
    std::sort(out.begin(), out.end(), [](const SpikeEntry& a, const SpikeEntry& b) { return std::abs(a.value) > std::abs(b.value); });
    return out;
}

// Positions that carry at least one massive entry, ascending.
inline std::vector<std::int64_t> spike_positions(const std::vector<SpikeEntry>& entries) {
    std::vector<std::int64_t> p;
    for (const auto& e : entries) p.push_back(e.position);
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
    return p;
}

// Channels that carry at least one massive entry, ordered by their largest |x|.
inline std::vector<std::int64_t> spike_channels(const std::vector<SpikeEntry>& entries) {
    std::vector<std::int64_t> c;
    for (const auto& e : entries)
        if (std::find(c.begin(), c.end(), e.channel) == c.end()) c.push_back(e.channel);
    return c;
}

}  // namespace sinkscope::analysis
