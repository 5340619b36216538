// How much the position-0 attention of each head changes between two runs of the same samples
// (e.g. with and without [BOS]; Paper A's A1): per sample s,
//     D_s[first, last] = mean over layers l ∈ [first, last] and heads h of |α₀ᵃ(s, l, h) − α₀ᵇ(s, l, h)|,
// α₀ = Gu et al.'s mean attention received by position 0 (model::AttentionStats). The samples are the
// independent units that an interval resamples; a and b must have observed the same samples in order.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/model/reducers.hpp"

namespace sinkscope::analysis {

template <class T>
std::vector<double> alpha0_change_per_sample(const model::AttentionStats<T>& a, const model::AttentionStats<T>& b,
                                             std::int64_t n_heads, std::int64_t first, std::int64_t last) {
    require(a.samples() == b.samples() && a.samples() > 0, "alpha0_change_per_sample: needs the same, non-empty samples");
    require(a.n_layers() == b.n_layers() && a.n_heads() == b.n_heads(),
            "alpha0_change_per_sample: the two runs have different shapes (" + std::to_string(a.n_layers()) + " layers × " +
                std::to_string(a.n_heads()) + " heads and " + std::to_string(b.n_layers()) + " × " + std::to_string(b.n_heads()) + ")");
    require(first >= 0 && first <= last && last < a.n_layers(),
            "alpha0_change_per_sample: bad layer range [" + std::to_string(first) + ", " + std::to_string(last) + "] for " +
                std::to_string(a.n_layers()) + " layers");
    // every head (α₀ is stored by layer · n_heads + head, so another count would read other layers' heads)
    require(n_heads == a.n_heads(), "alpha0_change_per_sample: n_heads (" + std::to_string(n_heads) +
                                        ") is not the runs' head count (" + std::to_string(a.n_heads()) + ")");
    std::vector<double> out;
    for (std::int64_t s = 0; s < a.samples(); ++s) {
        double d = 0;
        for (std::int64_t l = first; l <= last; ++l)
            for (std::int64_t h = 0; h < n_heads; ++h) d += std::abs(a.alpha0(s, l, h) - b.alpha0(s, l, h));
        out.push_back(d / double((last - first + 1) * n_heads));
    }
    return out;
}

}  // namespace sinkscope::analysis
