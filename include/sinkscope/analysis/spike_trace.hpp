// Tracing a spike through Paper B's sub-blocks on a model: every residual state H_0 … H_{2L} of a
// sequence, and the largest |H_i| entry over sub-blocks, positions and samples with the trajectory of
// its coordinate and the step classification of analysis/spikes.hpp.
//
//   residual_states(c, w, tokens)   H_0 … H_{2L} (each T × d, row-major) — H_0 = blocks.0.hook_resid_pre,
//                                   H_{2l+1} = blocks.l.hook_resid_mid, H_{2l+2} = blocks.l.hook_resid_post
//   trace_spike(c, w, samples, τ)   the spike coordinate (position t*, channel c*) = argmax |H_i[t, c]|;
//                                   trajectory x_i = mean over the samples that reach t* of H_i[t*, c*];
//                                   `found` = some state of some sample has a massive entry (Sun et al.);
//                                   step-up / step-down sub-blocks by classify_steps(x, τ).
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sinkscope/analysis/spikes.hpp"
#include "sinkscope/model/batch.hpp"
#include "sinkscope/model/forward.hpp"
#include "sinkscope/model/hooks.hpp"

namespace sinkscope::analysis {

// The hook names of H_0 … H_{2L} for the first L = last_layer + 1 layers (all of them by default).
inline std::vector<std::string> residual_state_hooks(const model::Config& c, std::int64_t last_layer = -1) {
    const std::int64_t L = last_layer < 0 ? c.n_layers : last_layer + 1;
    std::vector<std::string> names{initial_state_hook()};
    for (std::int64_t i = 1; i <= 2 * L; ++i) names.push_back(sub_block(i, c.n_layers).state_hook);
    return names;
}

template <class T>
std::vector<std::vector<T>> residual_states(const model::Config& c, const model::Weights<T>& w,
                                            const std::vector<std::int32_t>& tokens, std::int64_t last_layer = -1) {
    const std::int64_t L = last_layer < 0 ? c.n_layers : last_layer + 1;
    const auto names = residual_state_hooks(c, last_layer);
    model::HookSet<T> hooks;
    model::ActivationCache<T> cache;
    cache.attach(hooks, names);
    model::forward(c, w, tokens, &hooks, model::ForwardOptions{false, L - 1});
    std::vector<std::vector<T>> out;
    for (const auto& n : names) out.push_back(cache[n].data);
    return out;
}

struct SpikeTrace {
    bool found = false;                   // did any state carry a massive activation (Sun et al.)?
    std::int64_t channel = -1, position = -1, sample = -1, peak_sub_block = -1;
    std::vector<double> trajectory;       // x_0 … x_{2L} at (position, channel), mean over samples
    StepClassification steps;
    std::int64_t step_up_layer = -1;      // layer of the first step-up sub-block (−1: none)
};

// `per_pass` samples to a forward pass where that is bit-exact (model::forward_each): the same trace.
template <class T>
SpikeTrace trace_spike(const model::Config& c, const model::Weights<T>& w, const std::vector<std::vector<std::int32_t>>& samples,
                       double tau = 0.2, std::int64_t per_pass = 1) {
    require(!samples.empty(), "trace_spike: no sample");
    const std::int64_t d = c.d_model;
    SpikeTrace s;
    double best = -1;
    std::vector<std::vector<std::vector<T>>> states;
    const auto names = residual_state_hooks(c);
    model::HookSet<T> hooks;
    model::ActivationCache<T> cache;
    cache.attach(hooks, names);
    model::EachSequence<T> each;
    each.after = [&](std::int64_t k, const model::Mat<T>&) {
        states.emplace_back();
        auto& st = states.back();
        for (const auto& n : names) st.push_back(cache[n].data);
        for (std::size_t i = 0; i < st.size(); ++i) {
            const std::int64_t n = std::int64_t(st[i].size()) / d;
            if (!massive_entries(st[i].data(), n, d).empty()) s.found = true;
            for (std::int64_t j = 0; j < std::int64_t(st[i].size()); ++j)
                if (std::abs(double(st[i][j])) > best) {
                    best = std::abs(double(st[i][j]));
                    s.channel = j % d; s.position = j / d; s.sample = k; s.peak_sub_block = std::int64_t(i);
                }
        }
    };
    model::forward_each<T>(c, w, samples, hooks, per_pass, each, model::ForwardOptions{false, c.n_layers - 1});
    s.trajectory.assign(states[0].size(), 0.0);
    std::int64_t used = 0;
    for (const auto& st : states) {
        if (std::int64_t(st[0].size()) / d <= s.position) continue;
        for (std::size_t i = 0; i < st.size(); ++i) s.trajectory[i] += double(st[i][s.position * d + s.channel]);
        ++used;
    }
    for (auto& x : s.trajectory) x /= double(std::max<std::int64_t>(used, 1));
    s.steps = classify_steps(s.trajectory, tau);
    if (!s.steps.step_up.empty()) s.step_up_layer = sub_block(s.steps.step_up.front(), c.n_layers).layer;
    return s;
}

inline nlohmann::json to_json(const SpikeTrace& s) {
    return {{"found_massive", s.found}, {"channel", s.channel}, {"position", s.position},
            {"peak_sub_block", s.peak_sub_block}, {"peak", s.steps.peak}, {"step_up", s.steps.step_up},
            {"step_down", s.steps.step_down}, {"in_between_ratio", s.steps.in_between_ratio},
            {"tau", s.steps.tau}, {"step_up_layer", s.step_up_layer}};
}

}  // namespace sinkscope::analysis
