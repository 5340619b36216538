// analysis/head_view.hpp and analysis/head_view_html.hpp against independent references:
//   * the patterns are the ones a plain capture of blocks.{l}.attn.hook_pattern gives, and α₀ is the mean of
//     their column 0 (written out here, not through core/measures.hpp);
//   * the residual norms and the largest channels are those of the captured resid_pre / resid_post, by a
//     full sort here; the lens is logit_lens's;
//   * a sink-token model keeps its sink slot as position 0.
// The page's encodings (base64, the script-safe JSON, the pattern bytes) are tested in test_head_view_html.cpp.
#include <catch2/catch.hpp>

#include "small_llama_fixture.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sinkscope/analysis/head_view.hpp>
#include <sinkscope/analysis/head_view_html.hpp>
#include <sinkscope/train/init.hpp>

using namespace sinkscope;
namespace small_llama = sinkscope::test::small_llama;
using small_llama::kTokens;

TEST_CASE("head_view: patterns, alpha0, norms and top channels equal a plain capture", "[analysis][view]") {
    const auto c = small_llama::config();
    const auto w = train::init_weights<float>(c, 7, {0.3, false});
    const auto v = analysis::head_view(c, w, kTokens, {3, 2});
    const std::int64_t T = std::int64_t(kTokens.size()), L = c.n_layers, H = c.n_heads, d = c.d_model;
    REQUIRE(v.positions == T);
    REQUIRE(v.sink_slots == 0);
    REQUIRE(v.points.size() == std::size_t(L + 1));

    std::vector<std::string> hooks = v.points;
    for (std::int64_t l = 0; l < L; ++l) hooks.push_back("blocks." + std::to_string(l) + ".attn.hook_pattern");
    model::HookSet<float> set;
    model::ActivationCache<float> cache;
    cache.attach(set, hooks);
    const auto logits = model::forward(c, w, kTokens, &set);
    CHECK(logits.isApprox(v.lens.logits, 0.f));

    for (std::int64_t l = 0; l < L; ++l) {
        const auto& a = cache["blocks." + std::to_string(l) + ".attn.hook_pattern"];
        for (std::int64_t h = 0; h < H; ++h) {
            double column0 = 0;
            for (std::int64_t t = 0; t < T; ++t) {
                column0 += a.data[std::size_t((h * T + t) * T)];
                for (std::int64_t j = 0; j < T; ++j)
                    REQUIRE(v.pattern[std::size_t(v.pattern_index(l, h, t, j))] == a.data[std::size_t((h * T + t) * T + j)]);
            }
            CHECK(v.alpha0[std::size_t(l * H + h)] == Approx(column0 / double(T)).epsilon(1e-12));
        }
    }
    for (std::size_t r = 0; r < v.points.size(); ++r) {
        const auto& x = cache[v.points[r]];
        for (std::int64_t t = 0; t < T; ++t) {
            std::vector<std::int32_t> order(static_cast<std::size_t>(d));
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [&](std::int32_t i, std::int32_t j) {
                return std::abs(x.data[std::size_t(t * d + i)]) > std::abs(x.data[std::size_t(t * d + j)]);
            });
            long double s = 0;
            for (std::int64_t ch = 0; ch < d; ++ch) s += (long double)x.data[std::size_t(t * d + ch)] * x.data[std::size_t(t * d + ch)];
            CHECK(v.resid_norm[r * std::size_t(T) + std::size_t(t)] == Approx(double(std::sqrt(s))).epsilon(1e-6));
            for (std::int64_t i = 0; i < 3; ++i) {
                const std::size_t at = (r * std::size_t(T) + std::size_t(t)) * 3 + std::size_t(i);
                CHECK(v.top_channel[at] == order[std::size_t(i)]);
                CHECK(v.top_value[at] == x.data[std::size_t(t * d + order[std::size_t(i)])]);
            }
        }
    }
    const auto lens = analysis::logit_lens(c, w, kTokens, {2, -1});
    CHECK(v.lens.top_tokens == lens.top_tokens);
    CHECK(v.lens.top_probs == lens.top_probs);
}

TEST_CASE("head_view: a sink-token model keeps the sink slot as position 0", "[analysis][view]") {
    auto c = small_llama::config();
    c.attention = model::AttentionKind::sink_token;
    const auto w = train::init_weights<float>(c, 3, {0.3, false});
    const auto v = analysis::head_view(c, w, kTokens);
    CHECK(v.sink_slots == 1);
    CHECK(v.positions == std::int64_t(kTokens.size()) + 1);
    CHECK(v.lens.positions == std::int64_t(kTokens.size()));
    const std::string page = analysis::head_view_html(v, [](std::int32_t id) { return "t" + std::to_string(id); }, kTokens, {});
    CHECK(page.find("\"<sink>\"") != std::string::npos);
}

TEST_CASE("head_view: bad options name themselves", "[analysis][view]") {
    const auto c = small_llama::config();
    const auto w = train::init_weights<float>(c, 7, {0.3, false});
    CHECK_THROWS_WITH(analysis::head_view(c, w, {}), Catch::Contains("no tokens"));
    CHECK_THROWS_WITH(analysis::head_view(c, w, kTokens, {0, 3}), Catch::Contains("top_channels"));
    CHECK_THROWS_WITH(analysis::head_view(c, w, kTokens, {3, 41}), Catch::Contains("lens_top"));
}
