// Attribution patching (train/attribution_patching.hpp) against its peer, exact patching (one patched forward
// per site, model::patch_sites), at every kind of site: the first-order estimate must approach the exact
// effect as the patched difference shrinks, with an error of second order.
#include <catch2/catch.hpp>

#include <cmath>
#include <sinkscope/model/forward.hpp>
#include <sinkscope/model/load.hpp>
#include <sinkscope/train/attribution_patching.hpp>

#include "test_paths.hpp"
#include "train/train_test_util.hpp"

using namespace sinkscope;
using model::Config;

namespace {

using Cache = std::map<std::string, model::Captured<double>>;

Cache resid_pre_cache(const Config& c, const model::Weights<double>& w, const std::vector<std::int32_t>& tokens) {
    model::HookSet<double> hooks;
    model::ActivationCache<double> cache;
    cache.attach(hooks, [](const std::string& n) { return n.find("hook_resid_pre") != std::string::npos; });
    model::forward(c, w, tokens, &hooks);
    return cache.all();
}

// The clean run's activations moved by eps times a fixed random direction (entries N(0, 1)).
Cache nudged(Cache x, double eps, std::uint64_t seed) {
    train::Rng rng(seed);
    for (auto& [name, a] : x)
        for (double& v : a.data) v += eps * rng.normal();
    return x;
}

// Every hook a site can patch, from one forward.
Cache site_cache(const Config& c, const model::Weights<double>& w, const std::vector<std::int32_t>& tokens) {
    model::HookSet<double> hooks;
    model::ActivationCache<double> cache;
    cache.attach(hooks, [](const std::string& n) {
        for (const char* h : {"hook_resid_pre", "hook_attn_out", "attn.hook_z", "hook_mlp_out"})
            if (n.find(h) != std::string::npos) return true;
        return false;
    });
    model::forward(c, w, tokens, &hooks);
    return cache.all();
}

train::AttributionSites every_site(const Config& c) {
    train::AttributionSites which;
    which.attn_out = which.z = which.mlp_out = true;
    which.groups = {{"pair", {1, c.d_model - 2}}};
    return which;
}

// Per kind of site (hook, or the channel group): max |estimate − exact| and max |exact| over its sites.
std::map<std::string, std::pair<double, double>> errors_by_kind(const Config& c, const model::Weights<double>& w,
                                                                const std::vector<std::int32_t>& tokens,
                                                                const train::LogitDifference& metric, double eps) {
    const Cache corrupted = nudged(site_cache(c, w, tokens), eps, 5);
    const auto r = train::attribution_patch(c, w, tokens, corrupted, metric, every_site(c));
    const double clean_metric = metric(model::forward(c, w, tokens));
    std::map<std::string, std::pair<double, double>> out;
    // per block and row (a sink token's slot included): resid_pre, the group, attn_out, mlp_out, and z per head
    const std::int64_t rows = std::int64_t(tokens.size()) + (c.attention == model::AttentionKind::sink_token ? 1 : 0);
    REQUIRE(std::int64_t(r.sites.size()) == c.n_layers * rows * (4 + c.n_heads));
    for (const auto& s : r.sites) {
        const double exact = train::exact_patch(c, w, tokens, corrupted, metric, train::patch_site(r, s), clean_metric);
        auto& [err, scale] = out[s.group >= 0 ? "group" : model::hook_spec(s.hook).short_name];
        err = std::max(err, std::abs(s.estimate - exact));
        scale = std::max(scale, std::abs(exact));
    }
    return out;
}

// Patches of eps times N(0, 1) per entry. Measured: the error is 1e-4 to 1e-3 of the largest effect at
// eps = 1e-4 and falls 100-fold per 10-fold smaller eps.
void check_first_order_every_site(const Config& c, const model::Weights<double>& w, const std::vector<std::int32_t>& tokens,
                                  const train::LogitDifference& metric) {
    const auto e5 = errors_by_kind(c, w, tokens, metric, 1e-5), e6 = errors_by_kind(c, w, tokens, metric, 1e-6);
    std::vector<std::string> kinds{"resid_pre", "attn_out", "z", "group"};
    if (c.ffn != model::FfnKind::none) kinds.push_back("mlp_out");
    for (const std::string& kind : kinds) {
        REQUIRE(e5.count(kind) == 1);
        const auto [err5, scale5] = e5.at(kind);
        const auto [err6, scale6] = e6.at(kind);
        INFO(kind << ": eps 1e-5: max error " << err5 << " of max effect " << scale5 << "; eps 1e-6: " << err6 << " of " << scale6);
        REQUIRE(scale5 > 0);
        CHECK(err6 <= 1e-4 * scale6);                        // the estimate equals exact patching to 1e-4 at eps-sized patches
        CHECK(scale5 / scale6 == Approx(10).epsilon(0.05));  // the effect is first order in eps …
        CHECK(err5 / err6 > 30);                             // … and the error second order (ideally 100×)
    }
}

}  // namespace

TEST_CASE("attribution patching: every kind of site (block inputs, attn_out, z per head, mlp_out, a channel group) is exact "
          "patching to first order (double)",
          "[train][attribution]") {
    SECTION("tiny Llama") {
        const Config c = test::tiny_llama_config();
        const auto w = test::random_test_weights<double>(c, 3);
        check_first_order_every_site(c, w, test::random_tokens(7, c.vocab_size, 4), {-1, 5, 11});
    }
    SECTION("post-norm") {
        Config c = test::tiny_llama_config();
        c.norm_placement = model::NormPlacement::post;
        const auto w = test::random_test_weights<double>(c, 13);
        check_first_order_every_site(c, w, test::random_tokens(7, c.vocab_size, 14), {-1, 2, 6});
    }
    SECTION("gated attention: z is hooked after the gate") {
        Config c = test::tiny_llama_config();
        c.gate = model::GateKind::per_head;
        const auto w = test::random_test_weights<double>(c, 15);
        check_first_order_every_site(c, w, test::random_tokens(7, c.vocab_size, 16), {-1, 4, 9});
    }
    SECTION("sink token") {
        Config c = test::tiny_llama_config();
        c.attention = model::AttentionKind::sink_token;
        const auto w = test::random_test_weights<double>(c, 6);
        check_first_order_every_site(c, w, test::random_tokens(6, c.vocab_size, 7), {3, 9, -1});
    }
    for (const char* kind : {"gemma2", "olmo2", "gpt_neox", "mixtral"}) {
        SECTION(kind) {
            const auto m = model::load_model<float>(test::fixture(std::string("model/random_") + kind));
            const auto w = model::cast_weights<double>(m.weights);
            check_first_order_every_site(m.config, w, test::random_tokens(6, m.config.vocab_size, 8), {-1, 3, 7});
        }
    }
}

TEST_CASE("attribution patching: the log-probability and loss metrics are exact patching to first order (double)",
          "[train][attribution]") {
    train::Metric log_prob{-1, 5, -1, train::MetricKind::log_prob, {}};
    SECTION("tiny Llama, log-probability of one token") {
        const Config c = test::tiny_llama_config();
        const auto w = test::random_test_weights<double>(c, 23);
        check_first_order_every_site(c, w, test::random_tokens(7, c.vocab_size, 24), log_prob);
    }
    SECTION("tiny Llama, next-token loss") {
        const Config c = test::tiny_llama_config();
        const auto w = test::random_test_weights<double>(c, 25);
        const auto tokens = test::random_tokens(7, c.vocab_size, 26);
        check_first_order_every_site(c, w, tokens, train::Metric::next_token_loss(tokens));
    }
    SECTION("gemma2 (soft-capped logits), log-probability") {
        const auto m = model::load_model<float>(test::fixture("model/random_gemma2"));
        check_first_order_every_site(m.config, model::cast_weights<double>(m.weights),
                                     test::random_tokens(6, m.config.vocab_size, 8), train::Metric{-1, 3, -1, train::MetricKind::log_prob, {}});
    }
}

TEST_CASE("attribution patching: each metric's gradient is its central difference on the logits", "[train][attribution]") {
    train::Rng rng(31);
    model::Mat<double> z(5, 9);
    for (auto& v : z.reshaped()) v = 3 * rng.normal();
    const std::vector<train::Metric> metrics = {
        {2, 4, 7, train::MetricKind::logit, {}}, {-1, 4, -1, train::MetricKind::logit, {}},
        {1, 0, -1, train::MetricKind::log_prob, {}}, {-1, 8, 2, train::MetricKind::log_prob, {}},
        {-1, 0, -1, train::MetricKind::loss, {3, 1, 8, 0}}};
    for (const auto& m : metrics) {
        CAPTURE(train::to_string(m.kind), m.position, m.target, m.contrast);
        const model::Mat<double> g = m.gradient(z);
        for (Eigen::Index t = 0; t < z.rows(); ++t)
            for (Eigen::Index j = 0; j < z.cols(); ++j) {
                model::Mat<double> up = z, down = z;
                up(t, j) += 1e-6;
                down(t, j) -= 1e-6;
                const double numeric = (m(up) - m(down)) / 2e-6;
                CHECK(std::abs(g(t, j) - numeric) <= 1e-8);
            }
    }
    // With a contrast, the log-probability difference is the logit difference (the normaliser cancels).
    CHECK(train::Metric{-1, 8, 2, train::MetricKind::log_prob, {}}(z) == Approx(z(4, 8) - z(4, 2)).epsilon(1e-12));
    CHECK_THROWS_WITH(train::metric_kind_from("kl"), Catch::Contains("'kl'"));
    CHECK_THROWS_WITH((train::Metric{-1, 0, -1, train::MetricKind::loss, {}}.check(9, 5)), Catch::Contains("next tokens"));
    CHECK_THROWS_WITH((train::Metric{-1, 0, -1, train::MetricKind::loss, {9}}.check(9, 5)), Catch::Contains("next token 9"));
}

TEST_CASE("attribution patching: the sites come in the documented order, one per (position[, head])", "[train][attribution]") {
    const Config c = test::tiny_llama_config();
    const auto w = test::random_test_weights<double>(c, 17);
    const auto tokens = test::random_tokens(5, c.vocab_size, 18);
    const auto r = train::attribution_patch(c, w, tokens, site_cache(c, w, test::random_tokens(5, c.vocab_size, 19)), {-1, 1, 2},
                                            every_site(c));
    const std::int64_t n = 5, H = c.n_heads;
    REQUIRE(std::int64_t(r.sites.size()) == c.n_layers * (4 * n + n * H));
    std::size_t i = 0;
    for (std::int64_t l = 0; l < c.n_layers; ++l) {
        for (std::int64_t t = 0; t < n; ++t, ++i) CHECK((r.sites[i].layer == l && r.sites[i].hook == model::HookId::resid_pre &&
                                                        r.sites[i].group == -1 && r.sites[i].position == t));
        for (std::int64_t t = 0; t < n; ++t, ++i) CHECK((r.sites[i].hook == model::HookId::resid_pre && r.sites[i].group == 0));
        for (std::int64_t t = 0; t < n; ++t, ++i) CHECK(r.sites[i].hook == model::HookId::attn_out);
        for (std::int64_t t = 0; t < n; ++t)
            for (std::int64_t h = 0; h < H; ++h, ++i)
                CHECK((r.sites[i].hook == model::HookId::z && r.sites[i].position == t && r.sites[i].head == h));
        for (std::int64_t t = 0; t < n; ++t, ++i) CHECK((r.sites[i].hook == model::HookId::mlp_out && r.sites[i].layer == l));
    }
    CHECK(r.sites[0].hook_name() == "blocks.0.hook_resid_pre");
    CHECK(train::patch_site(r, r.sites[n]).channels == std::vector<std::int64_t>{1, c.d_model - 2});
    train::AttributionSites bad;
    bad.groups = {{"outside", {c.d_model}}};
    CHECK_THROWS_WITH(train::attribution_patch(c, w, tokens, Cache{}, {-1, 1, 2}, bad),
                      Catch::Matchers::Contains("channel " + std::to_string(c.d_model) + " of the group 'outside'"));
}

TEST_CASE("attribution patching: sites the corruption does not reach are zero, both ways", "[train][attribution]") {
    // One token substituted at position 5: block 0's input differs at position 5 only, and causal attention
    // carries the difference to positions 5, 6, 7 of the later blocks' inputs, never to earlier ones.
    const Config c = test::tiny_llama_config();
    const auto w = test::random_test_weights<double>(c, 9);
    auto clean = test::random_tokens(8, c.vocab_size, 10);
    auto corrupt = clean;
    corrupt[5] = (clean[5] + 1) % std::int32_t(c.vocab_size);
    const Cache corrupted = resid_pre_cache(c, w, corrupt);
    const train::LogitDifference metric{-1, 2, 3};
    const double corrupted_metric = metric(model::forward(c, w, corrupt));
    const auto r = train::attribution_patch_residual(c, w, clean, corrupted, metric, corrupted_metric);
    CHECK(r.corrupted_metric == corrupted_metric);
    const double clean_metric = metric(model::forward(c, w, clean));  // the patched forwards' own arithmetic
    CHECK(r.clean_metric == Approx(clean_metric).epsilon(1e-12));
    int reached = 0;
    for (const auto& s : r.sites) {
        const double exact = train::exact_patch_residual(c, w, clean, corrupted, metric, s.layer, s.position, clean_metric);
        const bool unchanged = s.position < 5 || (s.layer == 0 && s.position != 5);
        if (unchanged) {
            CHECK(s.estimate == 0.0);
            CHECK(exact == 0.0);
        } else {
            CHECK(std::abs(s.estimate) > 0);
            CHECK(std::abs(exact) > 0);
            ++reached;
        }
    }
    CHECK(reached == 1 + (c.n_layers - 1) * 3);
}

TEST_CASE("attribution patching: bad inputs are named", "[train][attribution]") {
    using Catch::Matchers::Contains;
    const Config c = test::tiny_llama_config();
    const auto w = test::random_test_weights<double>(c, 11);
    const auto clean = test::random_tokens(6, c.vocab_size, 12);
    const Cache shorter = resid_pre_cache(c, w, test::random_tokens(5, c.vocab_size, 13));
    CHECK_THROWS_WITH(train::attribution_patch_residual(c, w, clean, shorter, {-1, 1, 2}),
                      Contains("blocks.0.hook_resid_pre") && Contains("same length"));
    CHECK_THROWS_WITH(train::attribution_patch_residual(c, w, clean, Cache{}, {-1, 1, 2}), Contains("has no 'blocks.0.hook_resid_pre'"));
    CHECK_THROWS_WITH(train::attribution_patch_residual(c, w, clean, shorter, {6, 1, 2}), Contains("past the sequence of 6 tokens"));
    CHECK_THROWS_WITH(train::attribution_patch_residual(c, w, clean, shorter, {-1, 99, 2}), Contains("outside the vocabulary"));
}
