// Massive activations ("spikes") and Paper B's sub-block bookkeeping.
//
// Massive activation (Sun, Chen, Kolter, Liu 2024; measures::is_massive): an entry x of a hidden state H
// is massive if
//   |x| > 100  and  |x| ≥ 1000 · median |H|,
// the median (measures::median_abs) taken over every entry of that hidden state (all positions × channels
// of one sequence).
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
//
// Paper B's windows (its Table 1, step-up / step-down sub-block index over 2L): Llama-2-7B 4 / 62 of 64,
// Llama-3-8B 4 / 64 of 64, Qwen2.5-7B 8,10 / 54,55 of 56, Qwen3-8B 14 / 70,72 of 72. Step-ups lie at
// i/2L = 6.3 … 19.4 %, step-downs at 96.4 … 100 %. The windows taken here:
//   step-up window    i ≤ 0.20 · 2L   (the paper's latest step-up, 19.4 %, rounded up to a fifth)
//   step-down window  i ≥ 0.92 · 2L   (the last 8 %: the paper's earliest step-down, 96.4 %, less ~4 %)
//
// Spike channels across samples: channel k is a consensus spike channel when it carries a massive
// entry in at least half of the samples that have any (consensus_channels); the ratio of channel k to
// the top channel, r = x_k / x_top on every spike token, is "fixed" when its coefficient of variation
// std(r) / |mean(r)| is small (ratio_spread).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/core/measures.hpp"
#include "sinkscope/model/hook_table.hpp"

namespace sinkscope::analysis {

// Sun et al.'s thresholds and rule and the median |x| of a state are defined once, in core/measures.hpp;
// these names are kept for code that reaches them through analysis::.
using measures::is_massive;
using measures::kMassiveAbs;
using measures::kMassiveRatio;
using measures::median_abs;

inline constexpr double kStepUpWindow = 0.20;     // step-ups at i ≤ 0.20 · 2L (see the header)
inline constexpr double kStepDownWindow = 0.92;   // step-downs at i ≥ 0.92 · 2L

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
    const model::BlockNames names(s.layer);
    s.output_hook = names[s.attention ? model::HookId::attn_out : model::HookId::mlp_out];
    s.state_hook = names[s.attention ? model::HookId::resid_mid : model::HookId::resid_post];
    return s;
}

inline std::vector<SubBlock> sub_blocks(std::int64_t n_layers) {
    std::vector<SubBlock> v;
    for (std::int64_t i = 1; i <= 2 * n_layers; ++i) v.push_back(sub_block(i, n_layers));
    return v;
}

// The state before any sub-block, H_0.
inline std::string initial_state_hook() { return model::BlockNames(0)[model::HookId::resid_pre]; }

struct StepClassification {
    std::vector<std::int64_t> step_up;    // 1-based sub-block indices, ascending
    std::vector<std::int64_t> step_down;
    std::int64_t peak_index = 0;          // i with the largest |x_i| (0 = the embedding)
    double peak = 0;                      // x at that index, signed
    double in_between_ratio = 0;          // see the header; 0 if nothing lies between or no step-up
    double tau = 0.2;
};

// In-between ratio of a trajectory x_0 … x_{2L} for given step-up / step-down sets (ascending,
// 1-based): max |Δ_i| over i strictly between the last step-up and the first step-down after it (or
// the end) / max |Δ_i| over the step-up sub-blocks. 0 when there is no step-up or nothing in between.
inline double in_between_ratio(const std::vector<double>& trajectory, const std::vector<std::int64_t>& step_up,
                               const std::vector<std::int64_t>& step_down) {
    require(trajectory.size() >= 2, "in_between_ratio: needs x_0 and at least one sub-block");
    if (step_up.empty()) return 0.0;
    const std::int64_t last = std::int64_t(trajectory.size()) - 1;
    auto delta = [&](std::int64_t i) { return std::abs(trajectory[i] - trajectory[i - 1]); };
    double up_max = 0;
    for (auto i : step_up) {
        require(i >= 1 && i <= last, "in_between_ratio: step index outside the trajectory");
        up_max = std::max(up_max, delta(i));
    }
    const std::int64_t from = step_up.back() + 1;
    std::int64_t to = last;
    for (auto i : step_down) if (i > step_up.back()) { to = i - 1; break; }
    double between = 0;
    for (std::int64_t i = from; i <= to; ++i) between = std::max(between, delta(i));
    return up_max > 0 ? between / up_max : 0.0;
}

// Do the steps lie in Paper B's windows? All step-ups at i ≤ kStepUpWindow · 2L and at least one
// step-down at i ≥ kStepDownWindow · 2L (n_sub = 2L).
inline bool step_ups_in_window(const std::vector<std::int64_t>& step_up, std::int64_t n_sub) {
    if (step_up.empty()) return false;
    for (auto i : step_up) if (double(i) > kStepUpWindow * double(n_sub)) return false;
    return true;
}
inline bool step_down_in_window(const std::vector<std::int64_t>& step_down, std::int64_t n_sub) {
    for (auto i : step_down) if (double(i) >= kStepDownWindow * double(n_sub)) return true;
    return false;
}

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
    for (std::size_t i = 1; i < trajectory.size(); ++i) {
        const double d = s * (trajectory[i] - trajectory[i - 1]);
        if (d >= tau * P) c.step_up.push_back(std::int64_t(i));
        if (d <= -tau * P) c.step_down.push_back(std::int64_t(i));
    }
    c.in_between_ratio = in_between_ratio(trajectory, c.step_up, c.step_down);
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
    const double med = measures::median_abs(state, n * d);
    std::vector<SpikeEntry> out;
    for (std::int64_t t = 0; t < n; ++t)
        for (std::int64_t c = 0; c < d; ++c) {
            const double v = double(state[t * d + c]);
            if (measures::is_massive(std::abs(v), med)) out.push_back({t, c, v});
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

// Consensus spike channels: per sample, the channels that carry a massive entry (empty for a sample
// without one). A channel is a consensus channel when it appears in ≥ `share` of the samples that have
// any massive entry. Returned with its sample count, most frequent first (ties: lower channel first).
struct ChannelCount {
    std::int64_t channel = -1;
    std::int64_t samples = 0;   // samples in which the channel carries a massive entry
};
inline std::vector<ChannelCount> consensus_channels(const std::vector<std::vector<std::int64_t>>& per_sample, double share = 0.5) {
    require(share > 0 && share <= 1, "consensus_channels: share must lie in (0, 1]");
    std::vector<ChannelCount> counts;
    std::int64_t with_spike = 0;
    for (const auto& chans : per_sample) {
        if (chans.empty()) continue;
        ++with_spike;
        std::vector<std::int64_t> u = chans;
        std::sort(u.begin(), u.end());
        u.erase(std::unique(u.begin(), u.end()), u.end());
        for (auto k : u) {
            auto it = std::find_if(counts.begin(), counts.end(), [k](const ChannelCount& c) { return c.channel == k; });
            if (it == counts.end()) counts.push_back({k, 1}); else ++it->samples;
        }
    }
    std::vector<ChannelCount> out;
    for (const auto& c : counts)
        if (with_spike > 0 && double(c.samples) >= share * double(with_spike)) out.push_back(c);
    std::sort(out.begin(), out.end(), [](const ChannelCount& a, const ChannelCount& b) {
        return a.samples != b.samples ? a.samples > b.samples : a.channel < b.channel;
    });
    return out;
}

// Spread of the ratio of channel k to the reference channel over spike tokens:
//   r_j = x_j[k] / x_j[ref],   spread = std(r) / |mean(r)|   (population std; tokens with x_j[ref] = 0
// are skipped). `values[j]` holds token j's values at the spike channels. NaN with fewer than 2 tokens.
inline double ratio_spread(const std::vector<std::vector<double>>& values, std::size_t k, std::size_t ref = 0) {
    double s1 = 0, s2 = 0;
    std::int64_t n = 0;
    for (const auto& v : values) {
        require(k < v.size() && ref < v.size(), "ratio_spread: channel index outside the token's values");
        if (v[ref] == 0) continue;
        const double r = v[k] / v[ref];
        s1 += r; s2 += r * r; ++n;
    }
    if (n < 2) return std::numeric_limits<double>::quiet_NaN();
    const double mean = s1 / double(n), var = std::max(0.0, s2 / double(n) - mean * mean);
    return mean != 0 ? std::sqrt(var) / std::abs(mean) : std::numeric_limits<double>::infinity();
}

}  // namespace sinkscope::analysis
