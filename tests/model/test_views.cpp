// Captured activations as xtensor views (model/views.hpp): the view of a hook's buffer reads the same
// numbers as the forward pass's own layout, written out here by hand: resid [pos, d_model] row-major,
// pattern [head, query, key].
#include <catch2/catch.hpp>

#include <sinkscope/model/forward.hpp>
#include <sinkscope/model/views.hpp>

#include "model/tiny_model.hpp"

using namespace sinkscope;
using namespace sinkscope::model;

TEST_CASE("xtensor views of captured activations slice heads, positions and channels", "[model]") {
    const Config c = test::tiny_llama();
    const auto w = test::random_weights<float>(c, 31);
    const std::vector<std::int32_t> tokens{1, 5, 9, 2, 7, 3};
    const std::int64_t n = std::int64_t(tokens.size()), d = c.d_model, H = c.n_heads;
    HookSet<float> hooks;
    ActivationCache<float> cache;
    cache.attach(hooks, std::vector<std::string>{"blocks.1.hook_resid_post", "blocks.0.attn.hook_pattern"});
    forward(c, w, tokens, &hooks);

    const auto& resid = cache["blocks.1.hook_resid_post"];
    const auto x = view(resid);
    REQUIRE(x.dimension() == 2);
    CHECK(x.shape()[0] == std::size_t(n));
    CHECK(x.shape()[1] == std::size_t(d));
    for (std::int64_t t = 0; t < n; ++t)
        for (std::int64_t k = 0; k < d; ++k) CHECK(x(t, k) == resid.data[std::size_t(t * d + k)]);
    const auto trace = xt::view(x, xt::all(), 3);  // channel 3 over positions
    for (std::int64_t t = 0; t < n; ++t) CHECK(trace(t) == resid.data[std::size_t(t * d + 3)]);

    const auto& pat = cache["blocks.0.attn.hook_pattern"];
    const auto p = view(pat);
    REQUIRE(p.dimension() == 3);
    const auto to_first = xt::strided_view(p, {xt::all(), xt::all(), 0});  // [head, query]: attention to position 0
    for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t t = 0; t < n; ++t) CHECK(to_first(h, t) == pat.data[std::size_t((h * n + t) * n)]);
    const auto head1 = xt::view(p, 1);  // head 1's (query × key) pattern: rows sum to one, causal
    for (std::int64_t t = 0; t < n; ++t) {
        double row = 0;
        for (std::int64_t j = 0; j < n; ++j) row += head1(t, j);
        CHECK(row == Approx(1.0).epsilon(1e-5));
        if (t + 1 < n) CHECK(head1(t, t + 1) == 0.0f);
    }
}

TEST_CASE("a view inside a hook writes through to the forward pass", "[model]") {
    const Config c = test::tiny_llama();
    const auto w = test::random_weights<float>(c, 32);
    const std::vector<std::int32_t> tokens{4, 8, 15, 16};
    HookSet<float> hooks;
    hooks.add("blocks.0.hook_resid_post", [](const std::string&, ActivationRef<float>& a) {
        auto v = view(a);
        xt::view(v, xt::all(), 2) = 0.0f;  // zero channel 2 at every position
    });
    ActivationCache<float> cache;
    cache.attach(hooks, std::vector<std::string>{"blocks.0.hook_resid_post"});
    forward(c, w, tokens, &hooks);
    const auto x = view(cache["blocks.0.hook_resid_post"]);
    for (std::size_t t = 0; t < tokens.size(); ++t) CHECK(x(t, 2) == 0.0f);
    CHECK_THROWS_WITH(view(std::vector<float>(5), {2, 3}), Catch::Contains("5 values viewed as 6"));
}
