// The per-layer massive-activation and sink summary (the `sinkscope stats` table and the main job's).
//
// For each layer l (residual stream after block l, hook_resid_post):
//   top-3 |x| with channel and position;  median |x|;  ℓ2 norm of position 0 and mean ℓ2 norm of the rest;
//   "massive" per Sun et al. 2024: top |x| > 100 and ≥ 1000 × median |x|;
//   Gu sink rate of the layer: fraction of its heads with α₀ > ε (ε = 0.3 by default), mean over samples.
// Plus the whole-model Sink^ε_0 over every (layer, head).
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "sinkscope/core/measures.hpp"
#include "sinkscope/model/reducers.hpp"

namespace sinkscope::analysis {

struct LayerSummary {
    std::int64_t layer = 0;
    std::vector<model::TopActivation> top;
    double median_abs = 0;
    double norm_pos0 = 0;
    double norm_rest = 0;
    double sink_rate = 0;
    bool massive = false;
};

struct ModelSummary {
    std::vector<LayerSummary> layers;
    double sink_rate = 0;   // Sink^ε_0 over all layers
    double eps = measures::kSinkEps;
    std::int64_t samples = 0;
};

template <class T>
ModelSummary summarize(const model::ResidualStats<T>& rs, const model::AttentionStats<T>& as,
                       double eps = measures::kSinkEps) {
    ModelSummary s;
    s.eps = eps;
    s.samples = as.samples();
    s.sink_rate = as.sink_rate(eps);
    for (std::size_t l = 0; l < rs.layers().size(); ++l) {
        const auto& L = rs.layers()[l];
        LayerSummary ls;
        ls.layer = std::int64_t(l);
        ls.top = L.top;
        ls.median_abs = L.median();
        ls.norm_pos0 = L.mean_norm(0);
        ls.norm_rest = L.mean_norm_rest();
        ls.sink_rate = as.sink_rate(eps, std::int64_t(l), std::int64_t(l));
        ls.massive = L.massive();
        s.layers.push_back(ls);
    }
    return s;
}

inline void print_summary(std::ostream& os, const ModelSummary& s) {
    char line[512];
    std::snprintf(line, sizeof line, "%5s  %-58s %9s %9s %9s %6s  %s\n", "layer", "top-3 |x| (channel @ position)",
                  "median", "|x_0|", "|x_t>0|", "sink", "massive");
    os << line;
    for (const auto& l : s.layers) {
        std::string top;
        for (const auto& t : l.top) {
            char b[64];
            std::snprintf(b, sizeof b, "%9.2f (%4lld@%-3lld) ", t.abs_value, (long long)t.channel, (long long)t.position);
            top += b;
        }
        std::snprintf(line, sizeof line, "%5lld  %-58s %9.4f %9.2f %9.2f %5.1f%%  %s\n", (long long)l.layer, top.c_str(),
                      l.median_abs, l.norm_pos0, l.norm_rest, 100 * l.sink_rate, l.massive ? "yes" : "");
        os << line;
    }
    std::snprintf(line, sizeof line, "Gu sink rate Sink^%.2g_0 over all (layer, head), %lld samples: %.2f%%\n", s.eps,
                  (long long)s.samples, 100 * s.sink_rate);
    os << line;
}

inline nlohmann::json to_json(const ModelSummary& s) {
    nlohmann::json j;
    j["eps"] = s.eps;
    j["samples"] = s.samples;
    j["sink_rate"] = s.sink_rate;
    for (const auto& l : s.layers) {
        nlohmann::json jl{{"layer", l.layer}, {"median_abs", l.median_abs}, {"norm_pos0", l.norm_pos0},
                          {"norm_rest", l.norm_rest}, {"sink_rate", l.sink_rate}, {"massive", l.massive}};
        for (const auto& t : l.top)
            jl["top"].push_back({{"abs", t.abs_value}, {"value", t.value}, {"channel", t.channel}, {"position", t.position}, {"sample", t.sample}});
        j["layers"].push_back(jl);
    }
    return j;
}

}  // namespace sinkscope::analysis
