// The forward has two attention paths: with a hook on the scores or the pattern it materialises
// (H, T, T) and lets hooks rewrite them; otherwise causal_attention_forward computes z block by block
// over the visible keys only. Both must give the same model, for every attention variant.
#include <catch2/catch.hpp>

#include <random>
#include <sinkscope/model/forward.hpp>

#include "model/tiny_model.hpp"

using namespace sinkscope::model;

namespace {

// Residual stream after every block and the logits, with or without a (no-op) pattern hook: one that
// may change the pattern (the materialised path), or an observer, which the forward pass lets see the
// pattern after computing z from it block by block (the training tape's path). A taking observer also
// takes the pattern's memory (ActivationRef::donor) the way the tape does.
enum class PatternHook { none, changer, observer, taker };

struct Run {
    std::vector<std::vector<double>> resid;
    Mat<double> logits;
    std::vector<Mat<double>> taken;  // the patterns a taker took, per layer
};

Run run(const Config& c, const Weights<double>& w, const std::vector<std::int32_t>& tokens, PatternHook mode) {
    HookSet<double> hooks;
    ActivationCache<double> cache;
    cache.attach(hooks, [](const std::string& n) { return n.find("hook_resid_post") != std::string::npos; });
    std::int64_t pattern_calls = 0, donors_seen = 0;
    Run r;
    r.taken.resize(std::size_t(c.n_layers));
    const auto count = [&](const std::string&, ActivationRef<double>&) { ++pattern_calls; };
    for (std::int64_t l = 0; l < c.n_layers && mode != PatternHook::none; ++l) {
        const std::string name = hook_name("pattern", l);
        if (mode == PatternHook::changer) hooks.add(name, count);
        if (mode == PatternHook::observer) hooks.add_observer(name, count);
        if (mode != PatternHook::taker) continue;
        hooks.add_observer(name, [&, l](const std::string&, ActivationRef<double>& x) {
            REQUIRE(x.donor != nullptr);
            Mat<double>& mine = r.taken[std::size_t(l)];
            mine.swap(*x.donor);
            x.donor = nullptr;
            CHECK(mine.data() == x.data);
        });
        // A hook after the taker sees no donor, and the pattern's values where they were.
        hooks.add_observer(name, [&, l](const std::string&, ActivationRef<double>& x) {
            CHECK(x.donor == nullptr);
            ++donors_seen;
            CHECK(x.data == r.taken[std::size_t(l)].data());
            ++pattern_calls;
        });
    }
    r.logits = forward(c, w, tokens, &hooks);
    REQUIRE(pattern_calls == (mode == PatternHook::none ? 0 : c.n_layers));
    if (mode == PatternHook::taker) REQUIRE(donors_seen == c.n_layers);
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

    const Run fused = run(c, w, tokens, PatternHook::none), materialised = run(c, w, tokens, PatternHook::changer);
    const Run observed = run(c, w, tokens, PatternHook::observer), taken = run(c, w, tokens, PatternHook::taker);
    INFO(variant);
    for (std::int64_t l = 0; l < c.n_layers; ++l) {
        CHECK(max_abs_diff(fused.resid[l], materialised.resid[l]) < 1e-11);
        CHECK(max_abs_diff(observed.resid[l], materialised.resid[l]) < 1e-11);
        CHECK(max_abs_diff(taken.resid[l], materialised.resid[l]) < 1e-11);
    }
    CHECK((fused.logits - materialised.logits).cwiseAbs().maxCoeff() < 1e-11);
    CHECK((observed.logits - materialised.logits).cwiseAbs().maxCoeff() < 1e-11);
    CHECK((taken.logits - materialised.logits).cwiseAbs().maxCoeff() < 1e-11);
    // The taken patterns are the patterns: nothing on future keys, and (plain softmax) each row sums to 1.
    for (std::int64_t l = 0; l < c.n_layers; ++l) {
        const Mat<double>& p = taken.taken[std::size_t(l)];
        REQUIRE(p.rows() == c.n_heads * std::int64_t(tokens.size()));
        REQUIRE(p.cols() == std::int64_t(tokens.size()));
        for (std::int64_t r = 0; r < p.rows(); ++r) {
            const std::int64_t t = r % p.cols();
            if (t + 1 < p.cols()) CHECK(p.row(r).tail(p.cols() - t - 1).cwiseAbs().maxCoeff() == 0.0);
            if (c.attention == AttentionKind::softmax) CHECK(std::abs(p.row(r).sum() - 1.0) < 1e-12);
        }
    }
    // The variant matters: a model without the window / slot gives different logits.
    if (variant != "softmax" && variant != "mha") {
        Config plain = c;
        plain.sliding_window = 0;
        plain.attention = AttentionKind::softmax;
        CHECK((forward(plain, w, tokens) - fused.logits).cwiseAbs().maxCoeff() > 1e-6);
    }
}

TEST_CASE("a hook that may change the pattern gets it before z is computed from it", "[model][attention]") {
    // An intervention zeroes every head's pattern in layer 0: z of that layer must then be 0. An observer
    // (which promises not to change it) is not given that guarantee, and the forward computes z first.
    Config c = sinkscope::test::tiny_llama();
    const auto w = sinkscope::test::random_weights<double>(c, 31);
    const std::vector<std::int32_t> tokens = {1, 5, 9, 2, 7, 3, 8, 4, 6};
    HookSet<double> hooks;
    ActivationCache<double> cache;
    cache.attach(hooks, std::vector<std::string>{hook_name("z", 0)});
    hooks.add(hook_name("pattern", 0), [](const std::string&, ActivationRef<double>& x) { std::fill(x.data, x.data + x.size(), 0.0); });
    forward(c, w, tokens, &hooks);
    const auto& z = cache[hook_name("z", 0)].data;
    CHECK(*std::max_element(z.begin(), z.end()) == 0.0);
    CHECK(*std::min_element(z.begin(), z.end()) == 0.0);

    // Without the intervention z is not 0 (the check above can fail).
    HookSet<double> plain;
    ActivationCache<double> plain_cache;
    plain_cache.attach(plain, std::vector<std::string>{hook_name("z", 0), hook_name("pattern", 0)});
    forward(c, w, tokens, &plain);
    const auto& z0 = plain_cache[hook_name("z", 0)].data;
    CHECK(*std::max_element(z0.begin(), z0.end()) > 1e-6);
}

TEST_CASE("HookSet::may_change: only observers leave an activation unchanged", "[model][hooks]") {
    HookSet<float> hooks;
    const auto noop = [](const std::string&, ActivationRef<float>&) {};
    CHECK_FALSE(hooks.may_change("a"));
    hooks.add_observer("a", noop);
    CHECK(hooks.wants("a"));
    CHECK_FALSE(hooks.may_change("a"));
    hooks.add("a", noop);
    CHECK(hooks.may_change("a"));
    hooks.add([](const std::string& n) { return n == "b"; }, noop);  // a filtered hook may change what it sees
    CHECK(hooks.may_change("b"));
    CHECK_FALSE(hooks.may_change("c"));
}
