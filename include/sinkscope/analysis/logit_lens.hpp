// The logit lens (nostalgebraist 2020): every layer's residual stream read out through the model's own
// final norm and unembedding, as if the model ended there.
//
//   lens_l(t) = softcap(N_final(x_l[t]) W_Uᵀ),   x_l = blocks.{l}.hook_resid_pre (l < L), x_L = blocks.{L−1}.hook_resid_post
//   p_l(t) = softmax(lens_l(t)),   rank_l(t) = #{v : lens_l(t)_v > lens_l(t)_target}   (0: the top token)
//
// At x_L the lens is the model's own output: model::final_norm_forward and model::unembed_forward are the
// two steps the forward itself runs on its last residual stream. With AttentionKind::sink_token the
// residual's position 0 is the sink, which has no logits: the lens reads the T real positions only.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/model/forward.hpp"
#include "sinkscope/model/hooks.hpp"

namespace sinkscope::analysis {

struct LogitLensOptions {
    std::int64_t top_k = 5;      // tokens kept per layer and position, most probable first
    std::int32_t target = -1;    // a token whose rank and probability are followed at every layer (−1: none)
};

// The lens over R = L + 1 readout points (resid_pre of each layer, then the last resid_post) and T positions.
struct LogitLens {
    std::vector<std::string> points;                 // (R) hook names of the residuals read out
    std::int64_t positions = 0;                      // T
    std::int64_t top_k = 0;                          // k
    std::vector<std::int32_t> top_tokens;            // (R, T, k) row-major
    std::vector<float> top_probs;                    // (R, T, k)
    std::int32_t target = -1;
    std::vector<std::int64_t> target_rank;           // (R, T); empty without a target
    std::vector<float> target_prob, target_logit;    // (R, T); empty without a target
    model::Mat<float> logits;                        // (T, vocab): the forward's own logits

    std::int64_t index(std::int64_t point, std::int64_t t) const { return point * positions + t; }
};

// The lens logits (T × vocab) of residual rows x (T × d): the final norm, the unembedding, the soft cap.
template <class T>
model::Mat<T> lens_logits(const model::Config& c, const model::Weights<T>& w, const model::Mat<T>& x) {
    model::Mat<T> xn, logits;
    model::final_norm_forward(xn, x, c, w);
    model::unembed_forward(logits, xn, c, w);
    return logits;
}

namespace detail {

// Top-k, target rank and probability of one row of logits, the softmax in double.
template <class Row>
void read_lens_row(LogitLens& out, std::int64_t point, std::int64_t t, const Row& z) {
    const std::int64_t V = z.size(), k = out.top_k;
    double max = -INFINITY;
    for (std::int64_t v = 0; v < V; ++v) max = std::max(max, double(z[v]));
    double sum = 0;
    for (std::int64_t v = 0; v < V; ++v) sum += std::exp(double(z[v]) - max);
    const double log_z = max + std::log(sum);  // log Σ exp z
    std::vector<std::int32_t> order(static_cast<std::size_t>(V));
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](std::int32_t a, std::int32_t b) {
        return z[a] > z[b] || (z[a] == z[b] && a < b);
    });
    for (std::int64_t i = 0; i < k; ++i) {
        const std::int32_t v = order[std::size_t(i)];
        out.top_tokens[std::size_t(out.index(point, t) * k + i)] = v;
        out.top_probs[std::size_t(out.index(point, t) * k + i)] = float(std::exp(double(z[v]) - log_z));
    }
    if (out.target >= 0) {
        const auto zt = z[out.target];
        std::int64_t rank = 0;
        for (std::int64_t v = 0; v < V; ++v) rank += z[v] > zt;
        out.target_rank[std::size_t(out.index(point, t))] = rank;
        out.target_prob[std::size_t(out.index(point, t))] = float(std::exp(double(zt) - log_z));
        out.target_logit[std::size_t(out.index(point, t))] = float(zt);
    }
}

}  // namespace detail

// The logit lens of `tokens` (one forward, capturing every resid_pre and the last resid_post).
inline LogitLens logit_lens(const model::Config& c, const model::Weights<float>& w, const std::vector<std::int32_t>& tokens,
                            const LogitLensOptions& o = {}) {
    require(o.top_k >= 1 && o.top_k <= c.vocab_size,
            "logit_lens: top_k " + std::to_string(o.top_k) + " is outside [1, vocab " + std::to_string(c.vocab_size) + "]");
    require(o.target >= -1 && o.target < c.vocab_size,
            "logit_lens: target token " + std::to_string(o.target) + " is outside the vocabulary [0, " +
                std::to_string(c.vocab_size) + ")");
    LogitLens out;
    for (std::int64_t l = 0; l < c.n_layers; ++l) out.points.push_back(model::hook_name("resid_pre", l));
    out.points.push_back(model::hook_name("resid_post", c.n_layers - 1));
    model::HookSet<float> hooks;
    model::ActivationCache<float> cache;
    cache.attach(hooks, out.points);
    out.logits = model::forward(c, w, tokens, &hooks);

    const std::int64_t R = std::int64_t(out.points.size()), T = out.logits.rows(), d = c.d_model;
    const std::int64_t sink = c.attention == model::AttentionKind::sink_token ? 1 : 0;
    out.positions = T;
    out.top_k = o.top_k;
    out.target = o.target;
    out.top_tokens.assign(std::size_t(R * T * o.top_k), 0);
    out.top_probs.assign(std::size_t(R * T * o.top_k), 0.f);
    if (o.target >= 0) {
        out.target_rank.assign(std::size_t(R * T), 0);
        out.target_prob.assign(std::size_t(R * T), 0.f);
        out.target_logit.assign(std::size_t(R * T), 0.f);
    }
    for (std::int64_t r = 0; r < R; ++r) {
        const auto& a = cache[out.points[std::size_t(r)]];  // (T + sink, d)
        const model::Mat<float> x = Eigen::Map<const model::Mat<float>>(a.data.data(), T + sink, d).bottomRows(T);
        const model::Mat<float> z = lens_logits(c, w, x);  // (T, vocab)
        for (std::int64_t t = 0; t < T; ++t) detail::read_lens_row(out, r, t, z.row(t));
    }
    return out;
}

}  // namespace sinkscope::analysis
