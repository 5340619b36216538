// Pins the whole hook-name list (the public contract users write code against) and checks that
// hooks see, and can change, what the forward pass computes.
#include <catch2/catch.hpp>

#include <random>
#include <sinkscope/model/forward.hpp>

#include "model/tiny_model.hpp"

using namespace sinkscope::model;

using sinkscope::test::random_weights;
using sinkscope::test::tiny_llama;

TEST_CASE("hook_names: the whole list for a 2-layer Llama-style model", "[model][hooks]") {
    std::vector<std::string> expected{"hook_embed"};
    for (int l = 0; l < 2; ++l) {
        const std::string b = "blocks." + std::to_string(l) + ".";
        for (const char* s : {"hook_resid_pre", "ln1.hook_normalized", "attn.hook_q", "attn.hook_k", "attn.hook_v",
                              "attn.hook_rot_q", "attn.hook_rot_k", "attn.hook_attn_scores", "attn.hook_pattern",
                              "attn.hook_z", "hook_attn_out", "hook_resid_mid", "ln2.hook_normalized", "mlp.hook_pre",
                              "mlp.hook_pre_linear", "mlp.hook_post", "hook_mlp_out", "hook_resid_post"})
            expected.push_back(b + s);
    }
    expected.push_back("ln_final.hook_normalized");
    expected.push_back("logits");
    CHECK(hook_names(tiny_llama()) == expected);
}

TEST_CASE("hook_names: GPT-2 style has hook_pos_embed, no rotary or pre_linear hooks", "[model][hooks]") {
    Config c = tiny_llama();
    c.n_layers = 1; c.positions = PositionKind::learned; c.ffn = FfnKind::gelu; c.norm = NormKind::layernorm;
    const std::vector<std::string> expected{
        "hook_embed", "hook_pos_embed", "blocks.0.hook_resid_pre", "blocks.0.ln1.hook_normalized",
        "blocks.0.attn.hook_q", "blocks.0.attn.hook_k", "blocks.0.attn.hook_v", "blocks.0.attn.hook_attn_scores",
        "blocks.0.attn.hook_pattern", "blocks.0.attn.hook_z", "blocks.0.hook_attn_out", "blocks.0.hook_resid_mid",
        "blocks.0.ln2.hook_normalized", "blocks.0.mlp.hook_pre", "blocks.0.mlp.hook_post", "blocks.0.hook_mlp_out",
        "blocks.0.hook_resid_post", "ln_final.hook_normalized", "logits"};
    CHECK(hook_names(c) == expected);
}

TEST_CASE("short hook names expand as in TransformerLens", "[model][hooks]") {
    CHECK(hook_name("resid_post", 3) == "blocks.3.hook_resid_post");
    CHECK(hook_name("pattern", 0) == "blocks.0.attn.hook_pattern");
    CHECK(hook_name("pre", 7) == "blocks.7.mlp.hook_pre");
    CHECK(hook_name("logits", 7) == "logits");
    CHECK(hook_layer("blocks.12.attn.hook_z") == 12);
    CHECK(hook_layer("hook_embed") == -1);
}

TEST_CASE("forward offers exactly the listed hooks, in order, with their shapes", "[model][hooks]") {
    const Config c = tiny_llama();
    const auto w = random_weights<double>(c, 1);
    HookSet<double> hooks;
    std::vector<std::string> seen;
    std::map<std::string, std::vector<std::int64_t>> shapes;
    hooks.add([](const std::string&) { return true; }, [&](const std::string& n, ActivationRef<double>& x) {
        seen.push_back(n); shapes[n] = x.shape;
    });
    const std::vector<std::int32_t> tokens{3, 1, 4, 1, 5, 9, 2};
    forward(c, w, tokens, &hooks);
    CHECK(seen == hook_names(c));
    CHECK(shapes["blocks.1.attn.hook_pattern"] == std::vector<std::int64_t>{4, 7, 7});
    CHECK(shapes["blocks.1.attn.hook_k"] == std::vector<std::int64_t>{7, 2, 4});
    CHECK(shapes["blocks.0.mlp.hook_post"] == std::vector<std::int64_t>{7, 24});
    CHECK(shapes["logits"] == std::vector<std::int64_t>{7, 32});
}

TEST_CASE("a names filter copies nothing it was not asked for", "[model][hooks]") {
    const Config c = tiny_llama();
    const auto w = random_weights<float>(c, 2);
    HookSet<float> hooks;
    ActivationCache<float> cache;
    cache.attach(hooks, std::vector<std::string>{"blocks.1.hook_resid_post", "blocks.0.attn.hook_pattern"});
    forward(c, w, {1, 2, 3}, &hooks);
    CHECK(cache.all().size() == 2);
    CHECK(cache["blocks.1.hook_resid_post"].shape == std::vector<std::int64_t>{3, 16});
    CHECK_THROWS_AS(cache["blocks.0.hook_resid_post"], sinkscope::Error);
}

TEST_CASE("residual bookkeeping: resid_mid = resid_pre + attn_out, resid_post = resid_mid + mlp_out", "[model][hooks]") {
    const Config c = tiny_llama();
    const auto w = random_weights<double>(c, 3);
    HookSet<double> hooks;
    ActivationCache<double> cache;
    cache.attach(hooks, [](const std::string&) { return true; });
    forward(c, w, {5, 6, 7, 8}, &hooks);
    for (int l = 0; l < 2; ++l) {
        auto get = [&](const std::string& s) {
            const auto& a = cache[hook_name(s, l)];
            return Eigen::Map<const Mat<double>>(a.data.data(), a.shape[0], a.data.size() / a.shape[0]);
        };
        CHECK((get("resid_pre") + get("attn_out") - get("resid_mid")).cwiseAbs().maxCoeff() < 1e-12);
        CHECK((get("resid_mid") + get("mlp_out") - get("resid_post")).cwiseAbs().maxCoeff() < 1e-12);
        // Causal rows: every pattern row sums to 1 and puts nothing on future keys.
        const auto& p = cache[hook_name("pattern", l)];
        for (std::int64_t h = 0; h < 4; ++h)
            for (std::int64_t t = 0; t < 4; ++t) {
                double sum = 0;
                for (std::int64_t j = 0; j < 4; ++j) {
                    const double v = p.data[(h * 4 + t) * 4 + j];
                    if (j > t) CHECK(v == 0.0);
                    sum += v;
                }
                CHECK(sum == Approx(1.0).epsilon(1e-12));
            }
    }
}

TEST_CASE("a hook that overwrites an activation changes everything downstream and nothing upstream", "[model][hooks]") {
    const Config c = tiny_llama();
    const auto w = random_weights<double>(c, 4);
    const std::vector<std::int32_t> tokens{1, 2, 3, 4, 5};
    const Mat<double> clean = forward(c, w, tokens);
    HookSet<double> hooks;
    hooks.add("blocks.1.hook_resid_pre", [](const std::string&, ActivationRef<double>& x) {
        x.data[3 * 16 + 2] += 10.0;  // position 3, channel 2
    });
    const Mat<double> patched = forward(c, w, tokens, &hooks);
    // Causality: positions before 3 are untouched; 3 and later change.
    CHECK((patched.topRows(3) - clean.topRows(3)).cwiseAbs().maxCoeff() == 0.0);
    CHECK((patched.bottomRows(2) - clean.bottomRows(2)).cwiseAbs().maxCoeff() > 1e-6);
}

TEST_CASE("forward rejects bad token input with sinkscope::Error", "[model]") {
    const Config c = tiny_llama();
    const auto w = random_weights<float>(c, 5);
    CHECK_THROWS_AS(forward(c, w, {}), sinkscope::Error);
    CHECK_THROWS_WITH(forward(c, w, {1, 32}), Catch::Contains("token id 32 at position 1"));
    CHECK_THROWS_WITH(forward(c, w, {-1}), Catch::Contains("outside the vocabulary"));
    std::vector<std::int32_t> too_long(17, 1);
    CHECK_THROWS_WITH(forward(c, w, too_long), Catch::Contains("exceed the context length 16"));
}
