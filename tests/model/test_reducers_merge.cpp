// Sharded reducers (model/reducers.hpp, analysis/perplexity.hpp, core/state_json.hpp): N shards, each
// saved as JSON and read back, then merged, give the single run's state; incompatible merges throw.
//
// What must be equal bit for bit: top-k entries (|x|, x, channel, position, sample), per-sample medians
// and α₀, sink rates, every count. What may differ in the last bits: the float sums behind mean_norm,
// received and the mean NLL, because a merge adds (Σ shard 1) + (Σ shard 2) where one run adds term by
// term. For n non-negative terms (norms, attention weights, NLLs) any order of summation lies within
// γ_{n−1} = (n−1)u/(1−(n−1)u) of the exact sum (Higham, Accuracy and Stability of Numerical Algorithms,
// §4.2; u = 2⁻⁵³ = DBL_EPSILON/2), so the two differ by at most 2γ_{n−1} ≈ (n−1)·DBL_EPSILON relatively;
// the test allows (n + 1)·DBL_EPSILON.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include <sinkscope/analysis/perplexity.hpp>
#include <sinkscope/core/state_json.hpp>
#include <sinkscope/model/forward.hpp>
#include <sinkscope/model/load.hpp>
#include <sinkscope/model/reducers.hpp>

#include "test_paths.hpp"

using namespace sinkscope;
using nlohmann::json;

namespace {

struct Reducers {
    model::ResidualStats<float> rs;
    model::AttentionStats<float> as;
    analysis::NllAccumulator nll;
};

// Runs samples [first, end) through the model into fresh reducers numbered from `first`.
Reducers run(const model::LoadedModel<float>& m, const std::vector<std::vector<std::int32_t>>& samples,
             std::size_t first, std::size_t end) {
    Reducers r{model::ResidualStats<float>(m.config.n_layers, 3), model::AttentionStats<float>(m.config.n_layers, m.config.n_heads), {}};
    r.rs.start_at(std::int64_t(first));
    r.as.start_at(std::int64_t(first));
    model::HookSet<float> hooks;
    r.rs.attach(hooks);
    r.as.attach(hooks);
    for (std::size_t s = first; s < end; ++s) {
        if (s > first) r.rs.begin_sample();
        r.as.begin_sample();
        const auto logits = model::forward(m.config, m.weights, samples[s], &hooks);
        r.nll.add(analysis::token_nll(logits, samples[s]));
    }
    return r;
}

// What a shard file carries: the state written as JSON text and parsed back.
template <class R>
R through_json(const R& r) { return R::from_json(json::parse(r.to_json().dump(1))); }

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Relative float-sum tolerance for sums of n non-negative terms taken in two orders (see the top).
bool close_sum(double merged, double single, std::int64_t n) {
    return std::abs(merged - single) <= double(n + 1) * DBL_EPSILON * std::abs(single);
}

}  // namespace

TEST_CASE("Merging N shards gives the single run's reducers (stories260K)", "[model][reducers]") {
    const std::string path = test::shared_model("stories260K.gguf");
    INFO("the shared tiny model: " << path);
    REQUIRE(std::filesystem::exists(path));
    const auto m = model::load_model<float>(path);
    // 7 samples of unequal lengths (so positions 5..7 are seen by only some samples and shards).
    std::vector<std::vector<std::int32_t>> samples;
    for (std::int32_t s = 0; s < 7; ++s) {
        std::vector<std::int32_t> ids{1};
        const int len = (s % 3 == 1) ? 5 : 8;
        for (int t = 1; t < len; ++t) ids.push_back((37 * s + 11 * t + 5) % std::int32_t(m.config.vocab_size));
        samples.push_back(ids);
    }
    const auto single = run(m, samples, 0, samples.size());
    const std::int64_t n = std::int64_t(samples.size());

    for (std::size_t shards : {1u, 2u, 3u, 7u}) {
        for (bool backwards : {false, true}) {
            INFO(shards << " shards, merged " << (backwards ? "last to first" : "first to last"));
            std::vector<Reducers> parts;
            for (std::size_t i = 0; i < shards; ++i) {
                const auto r = run(m, samples, i * samples.size() / shards, (i + 1) * samples.size() / shards);
                parts.push_back({through_json(r.rs), through_json(r.as), through_json(r.nll)});
            }
            Reducers merged = backwards ? parts.back() : parts.front();
            for (std::size_t j = 1; j < shards; ++j) {
                const Reducers& p = backwards ? parts[shards - 1 - j] : parts[j];
                merged.rs.merge(p.rs);
                merged.as.merge(p.as);
                merged.nll.merge(p.nll);
            }
            REQUIRE(merged.rs.samples() == n);
            REQUIRE(merged.as.samples() == n);
            CHECK(merged.rs.first_sample() == 0);
            CHECK(merged.as.first_sample() == 0);
            for (std::int64_t l = 0; l < m.config.n_layers; ++l) {
                const auto &a = merged.rs.layers()[l], &b = single.rs.layers()[l];
                REQUIRE(a.top.size() == b.top.size());
                for (std::size_t i = 0; i < a.top.size(); ++i) {
                    CHECK(same_bits(a.top[i].abs_value, b.top[i].abs_value));
                    CHECK(same_bits(a.top[i].value, b.top[i].value));
                    CHECK(a.top[i].channel == b.top[i].channel);
                    CHECK(a.top[i].position == b.top[i].position);
                    CHECK(a.top[i].sample == b.top[i].sample);
                }
                CHECK(a.medians == b.medians);
                CHECK(a.norm_count == b.norm_count);
                REQUIRE(a.norm_sum.size() == b.norm_sum.size());
                for (std::size_t t = 0; t < a.norm_sum.size(); ++t) CHECK(close_sum(a.norm_sum[t], b.norm_sum[t], n));
                for (std::int64_t h = 0; h < m.config.n_heads; ++h) {
                    const auto ra = merged.as.received(l, h), rb = single.as.received(l, h);
                    REQUIRE(ra.size() == rb.size());
                    for (std::size_t k = 0; k < ra.size(); ++k) CHECK(close_sum(ra[k], rb[k], n));
                    for (std::int64_t s = 0; s < n; ++s) CHECK(same_bits(merged.as.alpha0(s, l, h), single.as.alpha0(s, l, h)));
                }
            }
            CHECK(merged.as.sink_rate_per_sample(0.3) == single.as.sink_rate_per_sample(0.3));
            CHECK(merged.nll.count == single.nll.count);
            CHECK(close_sum(merged.nll.sum, single.nll.sum, single.nll.count));
        }
    }
}

TEST_CASE("A merged top-k keeps the single run's order among equal |x|", "[model][reducers]") {
    // Every entry of every sample is ±5: the single run keeps the first three it meets, all from sample 0
    // (position 0 channels 0 and 1, then position 1 channel 0). Hand-written expectation.
    auto feed = [](model::ResidualStats<double>& rs, std::int64_t first, std::int64_t end) {
        model::HookSet<double> hooks;
        rs.start_at(first);
        rs.attach(hooks);
        for (std::int64_t s = first; s < end; ++s) {
            if (s > first) rs.begin_sample();
            std::vector<double> x{5, -5, 5, -5};  // [pos 2, d 2]
            hooks.run("blocks.0.hook_resid_post", {x.data(), {2, 2}});
        }
    };
    model::ResidualStats<double> a(1, 3), b(1, 3), c(1, 3);
    feed(a, 0, 1);
    feed(b, 1, 2);
    feed(c, 2, 3);
    c.merge(b);  // [1, 3)
    c.merge(a);  // [0, 3), merged from the back
    const auto& top = c.layers()[0].top;
    REQUIRE(top.size() == 3);
    const std::int64_t want[3][4] = {{0, 0, 0, 5}, {0, 0, 1, -5}, {0, 1, 0, 5}};  // sample, position, channel, x
    for (int i = 0; i < 3; ++i) {
        CHECK(top[i].sample == want[i][0]);
        CHECK(top[i].position == want[i][1]);
        CHECK(top[i].channel == want[i][2]);
        CHECK(top[i].value == double(want[i][3]));
    }
    CHECK(c.samples() == 3);
    CHECK(c.layers()[0].medians == std::vector<double>{5, 5, 5});
    CHECK(c.layers()[0].norm_count == std::vector<std::int64_t>{3, 3});
}

TEST_CASE("Merging incompatible reducers throws", "[model][reducers]") {
    using model::AttentionStats;
    using model::ResidualStats;
    ResidualStats<float> r(4, 3);
    CHECK_THROWS_WITH(r.merge(ResidualStats<float>(5, 3)), Catch::Contains("different layer counts (4 and 5)"));
    CHECK_THROWS_WITH(r.merge(ResidualStats<float>(4, 2)), Catch::Contains("different k"));
    CHECK_THROWS_WITH(r.merge(ResidualStats<float>(4, 3, "resid_mid")), Catch::Contains("different hooks"));
    ResidualStats<float> same_range(4, 3);  // both cover sample 0
    CHECK_THROWS_WITH(r.merge(same_range), Catch::Contains("overlap"));
    ResidualStats<float> far(4, 3);
    far.start_at(5);
    CHECK_THROWS_WITH(r.merge(far), Catch::Contains("[0, 1) and [5, 6) leave a gap"));
    CHECK_THROWS_AS(r.merge(far), Error);

    AttentionStats<float> a(4, 8);
    a.begin_sample();
    CHECK_THROWS_WITH(a.merge(AttentionStats<float>(4, 6)), Catch::Contains("different shapes"));
    AttentionStats<float> b(4, 8);
    b.begin_sample();
    CHECK_THROWS_WITH(a.merge(b), Catch::Contains("overlap"));
    CHECK_THROWS_AS(a.start_at(3), Error);  // after a sample was begun

    // Saved states of another kind, version or shape are refused with sinkscope::Error, never a json exception.
    CHECK_THROWS_WITH(ResidualStats<float>::from_json(a.to_json()), Catch::Contains("not such a state"));
    auto j = r.to_json();
    j["version"] = 2;
    CHECK_THROWS_WITH(ResidualStats<float>::from_json(j), Catch::Contains("unsupported version 2"));
    j = a.to_json();
    j.erase("received");
    CHECK_THROWS_AS(AttentionStats<float>::from_json(j), Error);
    j = a.to_json();
    j["alpha0"][0].erase(0);
    CHECK_THROWS_WITH(AttentionStats<float>::from_json(j), Catch::Contains("n_layers × n_heads"));
    j = analysis::NllAccumulator{}.to_json();
    j["count"] = 1.5;
    CHECK_THROWS_AS(analysis::NllAccumulator::from_json(j), Error);
}

TEST_CASE("Saved states read back bit for bit", "[model][reducers]") {
    const double values[] = {0.1, 1.0 / 3.0, 0.1 + 0.2, std::numeric_limits<double>::denorm_min(), 1e-310, DBL_MAX,
                             -DBL_MIN, -0.0, 3.141592653589793, 123456789.123456789, 2.0 / 3.0 * 1e-300};
    for (double x : values) {
        const double y = state_json::to_double(json::parse(json{{"x", state_json::from_double(x)}}.dump())["x"]);
        INFO(x);
        CHECK(same_bits(x, y));
    }
    CHECK(std::isnan(state_json::to_double(json::parse(json(state_json::from_double(std::nan(""))).dump()))));
    CHECK(state_json::to_double(json::parse(json(state_json::from_double(-HUGE_VAL)).dump())) == -HUGE_VAL);

    // A reducer's whole state: save, read, save again gives the same text; NaN α₀ (a layer not observed) survives.
    model::AttentionStats<double> a(2, 1);
    a.start_at(4);
    a.begin_sample();
    model::HookSet<double> hooks;
    a.attach(hooks);
    std::vector<double> p{1, 0, 0.7, 0.3};  // layer 0 only: [head 1, query 2, key 2]
    hooks.run("blocks.0.attn.hook_pattern", {p.data(), {1, 2, 2}});
    const auto back = model::AttentionStats<double>::from_json(json::parse(a.to_json().dump()));
    CHECK(back.to_json().dump() == a.to_json().dump());
    CHECK(back.first_sample() == 4);
    CHECK(same_bits(back.alpha0(0, 0, 0), (1.0 + 0.7) / 2.0));
    CHECK(std::isnan(back.alpha0(0, 1, 0)));
    analysis::NllAccumulator acc;
    acc.add({0.1, 0.2, std::log(3.0)});
    const auto acc2 = analysis::NllAccumulator::from_json(json::parse(acc.to_json().dump()));
    CHECK(same_bits(acc2.sum, acc.sum));
    CHECK(acc2.count == 3);
}
