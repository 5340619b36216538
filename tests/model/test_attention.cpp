// The forward has two attention paths: with a hook on the scores or the pattern it materialises
// (H, T, T) and lets hooks rewrite them; otherwise causal_attention_forward computes z block by block
// over the visible keys only. Both must give the same model, for every attention variant.
#include <catch2/catch.hpp>

#include <random>
#include <sinkscope/model/forward.hpp>

#include "model/tiny_model.hpp"

using namespace sinkscope::model;

namespace {

// Residual stream after every block and the logits, with or without a (no-op) pattern hook.
struct Run {
    std::vector<std::vector<double>> resid;
    Mat<double> logits;
};

Run run(const Config& c, const Weights<double>& w, const std::vector<std::int32_t>& tokens, bool hook_pattern) {
    HookSet<double> hooks;
    ActivationCache<double> cache;
    cache.attach(hooks, [](const std::string& n) { return n.find("hook_resid_post") != std::string::npos; });
    std::int64_t pattern_calls = 0;
    if (hook_pattern)
        for (std::int64_t l = 0; l < c.n_layers; ++l)
            hooks.add(hook_name("pattern", l), [&](const std::string&, ActivationRef<double>&) { ++pattern_calls; });
    Run r;
    r.logits = forward(c, w, tokens, &hooks);
    REQUIRE(pattern_calls == (hook_pattern ? c.n_layers : 0));
    for (std::int64_t l = 0; l < c.n_layers; ++l) r.resid.push_back(cache[hook_name("resid_post", l)].data);
    return r;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
    REQUIRE(a.size() == b.size());
    double m = 0;
    for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
    return m;
}

}  // namespace

TEST_CASE("fused causal attention equals the materialised scores -> softmax -> p.v path", "[model][attention]") {
    Config c = sinkscope::test::tiny_llama();
    c.context_length = 160;
    std::string variant;
    SECTION("softmax, grouped-query") { variant = "softmax"; }
    SECTION("sliding window of 37") { variant = "window"; c.sliding_window = 37; }
    SECTION("off-by-one softmax") { variant = "off_by_one"; c.attention = AttentionKind::softmax_off_by_one; }
    SECTION("KV bias") { variant = "kv_bias"; c.attention = AttentionKind::kv_bias; }
    SECTION("one head per kv head") { variant = "mha"; c.n_kv_heads = c.n_heads; }
    auto w = sinkscope::test::random_weights<double>(c, 21);
    if (c.attention == AttentionKind::kv_bias) {
        std::mt19937 rng(22);
        std::normal_distribution<double> nd(0.0, 1.0);
        for (auto& L : w.layers) {
            L.sink_kv.resize(2, c.kv_dim());
            for (auto& v : L.sink_kv.reshaped()) v = nd(rng);
        }
    }
    // 150 tokens: two full query blocks of 64 and a partial one.
    std::vector<std::int32_t> tokens(150);
    std::mt19937 rng(23);
    for (auto& t : tokens) t = std::int32_t(rng() % std::uint32_t(c.vocab_size));

    const Run fused = run(c, w, tokens, false), materialised = run(c, w, tokens, true);
    INFO(variant);
    for (std::int64_t l = 0; l < c.n_layers; ++l) CHECK(max_abs_diff(fused.resid[l], materialised.resid[l]) < 1e-11);
    CHECK((fused.logits - materialised.logits).cwiseAbs().maxCoeff() < 1e-11);
    // The variant matters: a model without the window / slot gives different logits.
    if (variant != "softmax" && variant != "mha") {
        Config plain = c;
        plain.sliding_window = 0;
        plain.attention = AttentionKind::softmax;
        CHECK((forward(plain, w, tokens) - fused.logits).cwiseAbs().maxCoeff() > 1e-6);
    }
}
