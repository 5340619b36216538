// Shared by the analysis tests of sink_change.hpp and summary.hpp: an AttentionStats fed, through its
// hooks, 3-position causal patterns whose column 0 is set by hand, so that every α₀ is known in closed form:
//   row 0 = [1, 0, 0],  row 1 = [a₁, 1 − a₁, 0],  row 2 = [a₂, (1 − a₂)/2, (1 − a₂)/2]
//   α₀ = (A[0,0] + A[1,0] + A[2,0]) / 3 = (1 + a₁ + a₂) / 3      (Gu et al.'s α_k with k = 0, T = 3)
#pragma once

#include <cstdint>
#include <vector>

#include <sinkscope/model/hooks.hpp>
#include <sinkscope/model/reducers.hpp>

namespace sinkscope::test::analysis_fixture {

// column0[s][l][h] = {a₁, a₂} of sample s, layer l, head h.
using Column0 = std::vector<std::vector<std::vector<std::pair<double, double>>>>;

inline model::AttentionStats<double> attention_stats(const Column0& column0) {
    const std::int64_t L = std::int64_t(column0.at(0).size()), H = std::int64_t(column0.at(0).at(0).size());
    model::AttentionStats<double> as(L, H);
    model::HookSet<double> hooks;
    as.attach(hooks);
    for (const auto& sample : column0) {
        as.begin_sample();
        for (std::int64_t l = 0; l < L; ++l) {
            std::vector<double> p;
            for (std::int64_t h = 0; h < H; ++h) {
                const auto [a1, a2] = sample[std::size_t(l)][std::size_t(h)];
                const std::vector<double> rows{1, 0, 0, a1, 1 - a1, 0, a2, (1 - a2) / 2, (1 - a2) / 2};
                p.insert(p.end(), rows.begin(), rows.end());
            }
            hooks.run(model::hook_name("pattern", l), {p.data(), {H, 3, 3}});
        }
    }
    return as;
}

// α₀ in closed form, in long double: the independent reference.
inline long double closed_form_alpha0(const std::pair<double, double>& a) {
    return (1.0L + (long double)a.first + (long double)a.second) / 3.0L;
}

}  // namespace sinkscope::test::analysis_fixture
