// Shared helpers of the train tests: tiny configurations, randomised weights, weight differences.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <sinkscope/core/error.hpp>
#include <sinkscope/model/config.hpp>
#include <sinkscope/model/weights.hpp>
#include <sinkscope/train/init.hpp>
#include <sinkscope/train/random.hpp>

namespace sinkscope::test {

// Llama-style: RMSNorm pre-norm, SwiGLU, RoPE (half-split), GQA 4 heads over 2 KV heads, tied head.
inline model::Config tiny_llama_config() {
    model::Config c;
    c.architecture = "sinkscope";
    c.n_layers = 2; c.d_model = 16; c.n_heads = 4; c.n_kv_heads = 2; c.head_dim = 4; c.d_ff = 24;
    c.vocab_size = 32; c.context_length = 16;
    return c;
}

// Weights for gradient checks: the training init with a larger scale, then every gain, bias and
// scalar moved away from its initial value so that no gradient term vanishes by symmetry.
template <class T>
model::Weights<T> random_test_weights(const model::Config& c, std::uint64_t seed, double scale = 0.35) {
    train::InitOptions o;
    o.init_std = scale;
    o.scale_residual = false;
    model::Weights<T> w = train::init_weights<T>(c, seed, o);
    train::Rng rng(seed * 7 + 3);
    model::visit_parameters(w, [&](const std::string& name, auto& t) {
        const bool gain = name.find("ln") != std::string::npos || name.find("norm") != std::string::npos;
        const bool bias = name.find(".b_") != std::string::npos || name.find(".bias") != std::string::npos;
        const bool alpha = name.find(".alpha") != std::string::npos;
        for (std::int64_t i = 0; i < t.size(); ++i) {
            if (alpha) t.data()[i] = T(t.data()[i] * (1.0 + 0.2 * rng.normal()));
            else if (bias) t.data()[i] = T(0.2 * rng.normal());
            else if (gain) t.data()[i] = T(1.0 + 0.2 * rng.normal());
        }
    });
    return w;
}

inline std::vector<std::int32_t> random_tokens(std::int64_t n, std::int64_t vocab, std::uint64_t seed) {
    train::Rng rng(seed);
    std::vector<std::int32_t> t(n);
    for (auto& x : t) x = std::int32_t(rng.below(std::uint64_t(vocab)));
    return t;
}

// The tensor name of every parameter entry in which a and b differ (one name per entry), in
// visit_parameters order: what a planted model's twin changes. The two must have the same structure.
template <class T>
std::vector<std::string> differing_parameter_entries(model::Weights<T> a, model::Weights<T> b) {
    std::vector<std::pair<std::string, std::vector<T>>> pa, pb;
    model::visit_parameters(a, [&](const std::string& n, const auto& t) { pa.push_back({n, std::vector<T>(t.data(), t.data() + t.size())}); });
    model::visit_parameters(b, [&](const std::string& n, const auto& t) { pb.push_back({n, std::vector<T>(t.data(), t.data() + t.size())}); });
    require(pa.size() == pb.size(), "differing_parameter_entries: the two weight sets differ in structure");
    std::vector<std::string> out;
    for (std::size_t i = 0; i < pa.size(); ++i) {
        require(pa[i].second.size() == pb[i].second.size(), "differing_parameter_entries: " + pa[i].first + " differs in size");
        for (std::size_t j = 0; j < pa[i].second.size(); ++j)
            if (pa[i].second[j] != pb[i].second[j]) out.push_back(pa[i].first);
    }
    return out;
}

}  // namespace sinkscope::test
