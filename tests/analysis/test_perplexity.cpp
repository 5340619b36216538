// analysis/perplexity.hpp: NLL against hand-computed softmax values; the StreamingLLM mask with
// sinks = 0 against the model's own sliding-window attention (Config::sliding_window, a separate path).
#include <catch2/catch.hpp>

#include <cmath>
#include <sinkscope/analysis/perplexity.hpp>
#include <sinkscope/model/forward.hpp>

#include "model/tiny_model.hpp"

using namespace sinkscope;

TEST_CASE("token_nll is -log softmax of the next token", "[analysis][perplexity]") {
    model::Mat<double> logits(3, 3);
    logits << 0, std::log(2.0), std::log(3.0),   // softmax (1/6, 2/6, 3/6)
              5, 5, 5,                            // uniform
              0, 0, 0;                            // last row predicts nothing
    const std::vector<std::int32_t> tokens{0, 2, 1};
    const auto nll = analysis::token_nll(logits, tokens);
    REQUIRE(nll.size() == 2);
    CHECK(nll[0] == Approx(std::log(2.0)).epsilon(1e-14));   // p = 3/6
    CHECK(nll[1] == Approx(std::log(3.0)).epsilon(1e-14));   // p = 1/3
    analysis::NllAccumulator acc;
    acc.add(nll);
    CHECK(acc.perplexity() == Approx(std::sqrt(6.0)).epsilon(1e-12));
    CHECK_THROWS_AS(analysis::token_nll(logits, {0, 5, 1}), Error);
}

TEST_CASE("streaming mask keeps sinks and the recent window", "[analysis][perplexity]") {
    using analysis::streaming_keeps;
    // window 4, sinks 1: query 10 keeps key 0 and keys 8, 9, 10.
    std::vector<int> kept;
    for (int j = 0; j <= 10; ++j) if (streaming_keeps(10, j, 1, 4)) kept.push_back(j);
    CHECK(kept == std::vector<int>{0, 8, 9, 10});
    CHECK_FALSE(streaming_keeps(2, 3, 1, 4));   // causal
    CHECK(streaming_keeps(2, 0, 0, 4));         // cache not yet full
}

TEST_CASE("0+W streaming window equals Config::sliding_window = W", "[analysis][perplexity]") {
    model::Config c = test::tiny_llama();
    const auto w = test::random_weights<double>(c, 21);
    const std::vector<std::int32_t> tokens{3, 9, 1, 4, 12, 7, 30, 2, 5, 11};
    model::HookSet<double> hooks;
    analysis::add_streaming_window(hooks, c.n_layers, 0, 3);
    const auto masked = model::forward(c, w, tokens, &hooks);
    model::Config windowed = c;
    windowed.sliding_window = 3;
    const auto reference = model::forward(windowed, w, tokens);
    CHECK((masked - reference).cwiseAbs().maxCoeff() < 1e-12);
    // Keeping one sink changes the result (the mask really acts).
    model::HookSet<double> sink_hooks;
    analysis::add_streaming_window(sink_hooks, c.n_layers, 1, 3);
    CHECK((model::forward(c, w, tokens, &sink_hooks) - reference).cwiseAbs().maxCoeff() > 1e-6);
    CHECK_THROWS_AS(analysis::add_streaming_window(hooks, 2, 3, 3), Error);
}
