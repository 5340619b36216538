// Language-model quality under interventions: next-token loss and StreamingLLM's attention window.
//
//   token_nll(logits, tokens)[t] = −log softmax(logits[t])[tokens[t+1]],  t = 0 … T−2
//   perplexity = exp(mean NLL)       (infinite when a target got probability 0, e.g. after overflow)
//
// StreamingLLM window (Xiao et al.): a KV cache that keeps the first `sinks` tokens and the most
// recent `window − sinks` tokens. As a mask on the attention scores of every layer, query t keeps key j
// iff  j ≤ t  and  ( j < sinks  or  t − j < window − sinks ).
// "0 + W" (sinks = 0) is plain sliding-window attention (Config::sliding_window = W); "4 + (W − 4)"
// keeps four initial tokens. Keys keep their original positions (RoPE angles are those of the full
// sequence), unlike StreamingLLM's cache, which re-numbers positions inside the cache.
#pragma once

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/core/state_json.hpp"
#include "sinkscope/model/hooks.hpp"

namespace sinkscope::analysis {

// NLL of every next-token prediction of one sequence (T − 1 values), in double.
template <class Derived>
std::vector<double> token_nll(const Eigen::MatrixBase<Derived>& logits, const std::vector<std::int32_t>& tokens) {
    const std::int64_t n = logits.rows(), V = logits.cols();
    require(n >= 2 && std::int64_t(tokens.size()) == n,
            "token_nll: needs T >= 2 rows of logits and T tokens (got " + std::to_string(n) + " and " +
                std::to_string(tokens.size()) + ")");
    std::vector<double> out(static_cast<std::size_t>(n - 1));
    for (std::int64_t t = 0; t + 1 < n; ++t) {
        const std::int32_t y = tokens[t + 1];
        require(y >= 0 && y < V, "token_nll: token " + std::to_string(y) + " outside the vocabulary");
        double m = -std::numeric_limits<double>::infinity();
        for (std::int64_t v = 0; v < V; ++v) m = std::max(m, double(logits(t, v)));
        require(std::isfinite(m), "token_nll: logits row " + std::to_string(t) + " is not finite");
        double z = 0;
        for (std::int64_t v = 0; v < V; ++v) z += std::exp(double(logits(t, v)) - m);
        out[t] = m + std::log(z) - double(logits(t, y));  // log Σ e^{l_v} − l_y
    }
    return out;
}

// Mean NLL over the predictions of many sequences. merge() adds another accumulator's predictions
// (any two disjoint sets: the state is a sum and a count); the sum is then taken in another order, and
// for n non-negative NLLs both orders lie within γ_{n−1} ≈ (n−1)·2⁻⁵³ of the exact sum, so merged and
// single-run sums differ by at most 2γ_{n−1} relatively. to_json / from_json save the state exactly.
struct NllAccumulator {
    double sum = 0;
    std::int64_t count = 0;
    void add(const std::vector<double>& nll) { for (double x : nll) { sum += x; ++count; } }
    double mean() const { return count ? sum / double(count) : 0.0; }
    double perplexity() const { return std::exp(mean()); }
    void merge(const NllAccumulator& other) { sum += other.sum; count += other.count; }

    static constexpr const char* format = "sinkscope.NllAccumulator";
    nlohmann::json to_json() const {
        auto j = state_json::header(format, 1);
        j["sum"] = state_json::from_double(sum);
        j["count"] = count;
        return j;
    }
    static NllAccumulator from_json(const nlohmann::json& j) {
        return state_json::read_state(j, format, 1, [](const nlohmann::json& s) {
            NllAccumulator a;
            a.sum = state_json::to_double(s.at("sum"));
            require(s.at("count").is_number_integer() && s["count"].get<std::int64_t>() >= 0, "count must be a non-negative integer");
            a.count = s["count"].get<std::int64_t>();
            return a;
        });
    }
};

// Does query t see key j under a (sinks, window) StreamingLLM cache?
inline bool streaming_keeps(std::int64_t t, std::int64_t j, std::int64_t sinks, std::int64_t window) {
    return j <= t && (j < sinks || t - j < window - sinks);
}

// Adds a hook on every layer's attn.hook_attn_scores that sets the scores of evicted keys to −∞.
template <class T>
void add_streaming_window(model::HookSet<T>& hooks, std::int64_t n_layers, std::int64_t sinks, std::int64_t window) {
    require(sinks >= 0 && window > sinks, "streaming window: needs 0 <= sinks < window (got sinks " +
                                              std::to_string(sinks) + ", window " + std::to_string(window) + ")");
    for (std::int64_t l = 0; l < n_layers; ++l)
        hooks.add(model::hook_name("attn_scores", l), [sinks, window](const std::string&, model::ActivationRef<T>& s) {
            const std::int64_t H = s.shape[0], n = s.shape[1];
            const T ninf = -std::numeric_limits<T>::infinity();
            for (std::int64_t h = 0; h < H; ++h)
                for (std::int64_t t = 0; t < n; ++t)
                    for (std::int64_t j = 0; j <= t; ++j)
                        if (!streaming_keeps(t, j, sinks, window)) s.data[(h * n + t) * n + j] = ninf;
        });
}

}  // namespace sinkscope::analysis
