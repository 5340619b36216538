// analysis/logit_lens.hpp against a readout written here from its definition, in double: for every point
// (each block's input, then the last block's output) and position, RMSNorm x / √(mean(x²) + eps) ⊙ g, the
// unembedding, the softmax; its top-k tokens and probabilities, the target's rank, probability and logit.
// The last point must also be the model's own output (its logits), and a sink token's slot has no lens row.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sinkscope/analysis/logit_lens.hpp>
#include <sinkscope/model/forward.hpp>
#include <sinkscope/model/load.hpp>

#include "test_paths.hpp"
#include "train/train_test_util.hpp"

using namespace sinkscope;
using model::Config;

namespace {

// The lens of one residual row by hand (tiny Llama: RMSNorm final norm, no soft cap).
std::vector<double> lens_row(const Config& c, const model::Weights<float>& w, const float* x) {
    const std::int64_t d = c.d_model;
    double ms = 0;
    for (std::int64_t j = 0; j < d; ++j) ms += double(x[j]) * x[j];
    const double inv = 1.0 / std::sqrt(ms / double(d) + c.norm_eps);
    const model::Mat<float>& U = w.output_head();
    std::vector<double> z(std::size_t(c.vocab_size), 0.0);
    for (std::int64_t v = 0; v < c.vocab_size; ++v)
        for (std::int64_t j = 0; j < d; ++j) z[std::size_t(v)] += double(x[j]) * inv * double(w.final_norm.weight[j]) * double(U(v, j));
    return z;
}

void check_against_hand(const Config& c, const model::Weights<float>& w, const std::vector<std::int32_t>& tokens, std::int32_t target) {
    const auto lens = analysis::logit_lens(c, w, tokens, {3, target});
    const std::int64_t T = std::int64_t(tokens.size()), L = c.n_layers, sink = c.attention == model::AttentionKind::sink_token ? 1 : 0;
    REQUIRE(lens.points.size() == std::size_t(L + 1));
    CHECK(lens.points.front() == "blocks.0.hook_resid_pre");
    CHECK(lens.points.back() == "blocks." + std::to_string(L - 1) + ".hook_resid_post");
    REQUIRE(lens.positions == T);
    model::HookSet<float> hooks;
    model::ActivationCache<float> cache;
    cache.attach(hooks, lens.points);
    model::forward(c, w, tokens, &hooks);
    for (std::int64_t r = 0; r <= L; ++r)
        for (std::int64_t t = 0; t < T; ++t) {
            INFO("point " << lens.points[std::size_t(r)] << ", position " << t);
            const auto& a = cache[lens.points[std::size_t(r)]];
            const std::vector<double> z = lens_row(c, w, a.data.data() + (t + sink) * c.d_model);
            const double max = *std::max_element(z.begin(), z.end());
            double sum = 0;
            for (double v : z) sum += std::exp(v - max);
            std::vector<std::int32_t> order(z.size());
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [&](std::int32_t p, std::int32_t q) { return z[std::size_t(p)] > z[std::size_t(q)]; });
            for (std::int64_t i = 0; i < 3; ++i) {
                const std::size_t k = std::size_t(lens.index(r, t) * 3 + i);
                CHECK(lens.top_tokens[k] == order[std::size_t(i)]);
                CHECK(lens.top_probs[k] == Approx(std::exp(z[std::size_t(order[std::size_t(i)])] - max) / sum).epsilon(1e-5));
            }
            const double zt = z[std::size_t(target)];
            CHECK(lens.target_rank[std::size_t(lens.index(r, t))] == std::count_if(z.begin(), z.end(), [&](double v) { return v > zt; }));
            CHECK(lens.target_prob[std::size_t(lens.index(r, t))] == Approx(std::exp(zt - max) / sum).epsilon(1e-5));
            CHECK(lens.target_logit[std::size_t(lens.index(r, t))] == Approx(zt).epsilon(1e-5).margin(1e-6));
        }
    // the last point is the model's own output
    for (std::int64_t t = 0; t < T; ++t)
        CHECK(lens.target_logit[std::size_t(lens.index(L, t))] == Approx(lens.logits(t, target)).epsilon(1e-6).margin(1e-6));
}

}  // namespace

TEST_CASE("logit lens: every point and position against the readout by hand", "[analysis][lens]") {
    SECTION("tiny Llama") {
        const Config c = test::tiny_llama_config();
        check_against_hand(c, test::random_test_weights<float>(c, 31), test::random_tokens(6, c.vocab_size, 32), 7);
    }
    SECTION("sink token: its slot has no row") {
        Config c = test::tiny_llama_config();
        c.attention = model::AttentionKind::sink_token;
        check_against_hand(c, test::random_test_weights<float>(c, 33), test::random_tokens(5, c.vocab_size, 34), 2);
    }
}

TEST_CASE("logit lens: the last point is the model's output in every family fixture", "[analysis][lens]") {
    for (const char* kind : {"gemma2", "olmo2", "gpt_neox", "mixtral"}) {
        SECTION(kind) {
            const auto m = model::load_model<float>(test::fixture(std::string("model/random_") + kind));
            const auto tokens = test::random_tokens(5, m.config.vocab_size, 35);
            const auto lens = analysis::logit_lens(m.config, m.weights, tokens, {2, 1});
            const model::Mat<float> logits = model::forward(m.config, m.weights, tokens);
            const std::int64_t L = m.config.n_layers;
            for (std::int64_t t = 0; t < 5; ++t) {
                CHECK(lens.target_logit[std::size_t(lens.index(L, t))] == Approx(logits(t, 1)).epsilon(1e-5).margin(1e-6));
                std::int64_t best = 0;
                for (std::int64_t v = 1; v < logits.cols(); ++v)
                    if (logits(t, v) > logits(t, best)) best = v;
                CHECK(lens.top_tokens[std::size_t(lens.index(L, t) * 2)] == best);
            }
        }
    }
}

TEST_CASE("logit lens: bad options are named", "[analysis][lens]") {
    using Catch::Matchers::Contains;
    const Config c = test::tiny_llama_config();
    const auto w = test::random_test_weights<float>(c, 36);
    const auto tokens = test::random_tokens(4, c.vocab_size, 37);
    CHECK_THROWS_WITH(analysis::logit_lens(c, w, tokens, {0, -1}), Contains("top_k 0 is outside [1, vocab 32]"));
    CHECK_THROWS_WITH(analysis::logit_lens(c, w, tokens, {2, 32}), Contains("target token 32 is outside the vocabulary [0, 32)"));
}
