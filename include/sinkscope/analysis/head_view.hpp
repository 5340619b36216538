// The data behind `sinkscope view`: one forward of one sequence, and from it what a researcher looks at
// first when asking where the sinks are and what they do.
//
//   pattern[l, h, t, j]   every head's attention pattern (blocks.{l}.attn.hook_pattern), query t, key j
//   alpha0[l, h]          α₀ = (1/T) Σ_t pattern[l, h, t, 0]   (core/measures.hpp's α_k with k = 0:
//                         Gu et al.'s attention received by position 0; a sink head has α₀ > ε = 0.3)
//   resid_norm[r, t]      ‖x_r[t]‖₂ of the residual stream at the R = L + 1 read-out points of the logit
//                         lens (blocks.{l}.hook_resid_pre for l < L, then the last hook_resid_post)
//   top_channel[r, t, i]  the i-th largest |x_r[t, c]| channel c, top_value its signed value x_r[t, c]
//   lens                  the logit lens at the same points (analysis/logit_lens.hpp)
//
// With AttentionKind::sink_token the patterns and residuals keep the sink slot as their position 0
// (positions = T + 1, token text "<sink>"); the lens reads the T real positions, as logit_lens does.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "sinkscope/analysis/logit_lens.hpp"
#include "sinkscope/core/error.hpp"
#include "sinkscope/core/measures.hpp"
#include "sinkscope/model/forward.hpp"
#include "sinkscope/model/hooks.hpp"

namespace sinkscope::analysis {

struct HeadViewOptions {
    std::int64_t top_channels = 4;  // channels kept per (read-out point, position), largest |x| first
    std::int64_t lens_top = 3;      // logit-lens tokens kept per (read-out point, position)
};

struct HeadView {
    std::int64_t layers = 0, heads = 0, positions = 0, d_model = 0, sink_slots = 0;
    std::vector<float> pattern;             // (L, H, P, P) row-major, P = positions
    std::vector<double> alpha0;             // (L, H)
    std::vector<std::string> points;        // (R) hook names of the residual read-out points
    std::vector<float> resid_norm;          // (R, P)
    std::int64_t top_channels = 0;
    std::vector<std::int32_t> top_channel;  // (R, P, top_channels)
    std::vector<float> top_value;           // (R, P, top_channels)
    LogitLens lens;                         // over the P − sink_slots real positions

    std::int64_t pattern_index(std::int64_t l, std::int64_t h, std::int64_t t, std::int64_t j) const {
        return ((l * heads + h) * positions + t) * positions + j;
    }
};

// One forward of `tokens` with every pattern and every lens read-out point captured.
inline HeadView head_view(const model::Config& c, const model::Weights<float>& w, const std::vector<std::int32_t>& tokens,
                          const HeadViewOptions& o = {}) {
    require(!tokens.empty(), "head_view: no tokens");
    require(o.top_channels >= 1 && o.top_channels <= c.d_model,
            "head_view: top_channels " + std::to_string(o.top_channels) + " is outside [1, d_model " +
                std::to_string(c.d_model) + "]");
    require(o.lens_top >= 1 && o.lens_top <= c.vocab_size,
            "head_view: lens_top " + std::to_string(o.lens_top) + " is outside [1, vocab " + std::to_string(c.vocab_size) + "]");
    HeadView v;
    v.layers = c.n_layers;
    v.heads = c.n_heads;
    v.d_model = c.d_model;
    v.sink_slots = c.attention == model::AttentionKind::sink_token ? 1 : 0;
    v.top_channels = o.top_channels;
    for (std::int64_t l = 0; l < c.n_layers; ++l) v.points.push_back(model::hook_name("resid_pre", l));
    v.points.push_back(model::hook_name("resid_post", c.n_layers - 1));
    std::vector<std::string> wanted = v.points;
    for (std::int64_t l = 0; l < c.n_layers; ++l) wanted.push_back(model::hook_name("pattern", l));

    model::HookSet<float> hooks;
    model::ActivationCache<float> cache;
    cache.attach(hooks, wanted);
    v.lens.logits = model::forward(c, w, tokens, &hooks);
    const std::int64_t T = v.lens.logits.rows(), P = T + v.sink_slots, L = v.layers, H = v.heads, d = c.d_model;
    v.positions = P;

    v.pattern.assign(std::size_t(L * H * P * P), 0.f);
    v.alpha0.assign(std::size_t(L * H), 0.0);
    for (std::int64_t l = 0; l < L; ++l) {
        const auto& a = cache[model::hook_name("pattern", l)];
        require(a.shape == std::vector<std::int64_t>{H, P, P},
                "head_view: " + model::hook_name("pattern", l) + " does not have the shape [heads, positions, positions]");
        std::copy(a.data.begin(), a.data.end(), v.pattern.begin() + std::ptrdiff_t(v.pattern_index(l, 0, 0, 0)));
        for (std::int64_t h = 0; h < H; ++h)
            v.alpha0[std::size_t(l * H + h)] = measures::received_attention(&v.pattern[std::size_t(v.pattern_index(l, h, 0, 0))], P, 0);
    }

    const std::int64_t R = std::int64_t(v.points.size()), K = o.top_channels;
    v.resid_norm.assign(std::size_t(R * P), 0.f);
    v.top_channel.assign(std::size_t(R * P * K), 0);
    v.top_value.assign(std::size_t(R * P * K), 0.f);
    v.lens.points = v.points;
    v.lens.positions = T;
    v.lens.top_k = o.lens_top;
    v.lens.top_tokens.assign(std::size_t(R * T * o.lens_top), 0);
    v.lens.top_probs.assign(std::size_t(R * T * o.lens_top), 0.f);
    std::vector<std::int32_t> order(static_cast<std::size_t>(d));
    for (std::int64_t r = 0; r < R; ++r) {
        const auto& a = cache[v.points[std::size_t(r)]];  // (P, d)
        const Eigen::Map<const model::Mat<float>> x(a.data.data(), P, d);
        for (std::int64_t t = 0; t < P; ++t) {
            double s = 0;
            for (std::int64_t ch = 0; ch < d; ++ch) s += double(x(t, ch)) * double(x(t, ch));
            v.resid_norm[std::size_t(r * P + t)] = float(std::sqrt(s));
            std::iota(order.begin(), order.end(), 0);
            std::partial_sort(order.begin(), order.begin() + K, order.end(), [&](std::int32_t i, std::int32_t j) {
                const float ai = std::abs(x(t, i)), aj = std::abs(x(t, j));
                return ai > aj || (ai == aj && i < j);
            });
            for (std::int64_t i = 0; i < K; ++i) {
                const std::size_t at = std::size_t((r * P + t) * K + i);
                v.top_channel[at] = order[std::size_t(i)];
                v.top_value[at] = x(t, order[std::size_t(i)]);
            }
        }
        const model::Mat<float> z = lens_logits(c, w, model::Mat<float>(x.bottomRows(T)));  // (T, vocab)
        for (std::int64_t t = 0; t < T; ++t) detail::read_lens_row(v.lens, r, t, z.row(t));
    }
    return v;
}

}  // namespace sinkscope::analysis
