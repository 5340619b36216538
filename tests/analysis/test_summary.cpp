// analysis/summary.hpp: the per-layer summary of two hand-made samples of a 3-layer model, every number
// derived by hand from the header's definitions (comments below), through summarize(), to_json() and
// print_summary(); three values of ε, one of them the default.
#include <catch2/catch.hpp>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <sinkscope/analysis/summary.hpp>
#include <sinkscope/model/hooks.hpp>
#include <sinkscope/model/reducers.hpp>

#include "attention_fixture.hpp"

using namespace sinkscope;
using test::analysis_fixture::attention_stats;
using test::analysis_fixture::Column0;

namespace {

// Residual stream after each block (hook_resid_post), 3 positions × 4 channels, samples 0 and 1:
//   layer 0  s0: [3,0,0,4] [.5,−.5,.5,−.5] [1,1,1,1]    s1: [0,0,−6,8] [2,0,0,0] [0,0,0,0]
//   layer 1  s0: [0,2000,0,0] [1,1,1,1] [1,−1,1,−1]     s1: [0,1500,0,0] [.5,.5,.5,.5] [.5,.5,.5,.5]
//   layer 2  s0: [0,150,0,0] [1,1,1,1] [1,1,1,1]        s1: [0,−150,0,0] [1,1,1,1] [1,1,1,1]
const std::vector<std::vector<std::vector<double>>> resid{
    {{3, 0, 0, 4, .5, -.5, .5, -.5, 1, 1, 1, 1}, {0, 2000, 0, 0, 1, 1, 1, 1, 1, -1, 1, -1}, {0, 150, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}},
    {{0, 0, -6, 8, 2, 0, 0, 0, 0, 0, 0, 0}, {0, 1500, 0, 0, .5, .5, .5, .5, .5, .5, .5, .5}, {0, -150, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}}};

// Column 0 of each head's pattern, {a₁, a₂} → α₀ = (1 + a₁ + a₂)/3 (attention_fixture.hpp):
//            sample 0                      sample 1
//   layer 0  h0 2/3,   h1 1/3              h0 1.3/3 ≈ .433, h1 1.1/3 ≈ .367
//   layer 1  h0 1,     h1 1.7/3 ≈ .567     h0 2.2/3 ≈ .733, h1 1.25/3 ≈ .417
//   layer 2  h0 1/3,   h1 1/3              h0 1/3,          h1 1/3
const Column0 column0{{{{0.5, 0.5}, {0.0, 0.0}}, {{1.0, 1.0}, {0.5, 0.2}}, {{0.0, 0.0}, {0.0, 0.0}}},
                      {{{0.2, 0.1}, {0.1, 0.0}}, {{0.8, 0.4}, {0.0, 0.25}}, {{0.0, 0.0}, {0.0, 0.0}}}};

model::ResidualStats<double> residual_stats() {
    model::ResidualStats<double> rs(3);
    model::HookSet<double> hooks;
    rs.attach(hooks);
    for (std::size_t s = 0; s < resid.size(); ++s) {
        if (s > 0) rs.begin_sample();  // as analysis/stats_run.hpp does: the first sample is numbered 0
        for (std::size_t l = 0; l < 3; ++l) {
            std::vector<double> x = resid[s][l];
            hooks.run(model::hook_name("resid_post", std::int64_t(l)), {x.data(), {3, 4}});
        }
    }
    return rs;
}

void check_top(const model::TopActivation& t, double abs_value, double value, std::int64_t channel, std::int64_t position,
               std::int64_t sample) {
    CHECK(t.abs_value == abs_value);
    CHECK(t.value == value);
    CHECK(t.channel == channel);
    CHECK(t.position == position);
    CHECK(t.sample == sample);
}

}  // namespace

TEST_CASE("summarize: top-3, medians, position norms, massive flag and sink rates of each layer, by hand", "[analysis][summary]") {
    const auto rs = residual_stats();
    const auto as = attention_stats(column0);
    const analysis::ModelSummary s = analysis::summarize(rs, as, 0.5);
    CHECK(s.eps == 0.5);
    CHECK(s.samples == 2);
    REQUIRE(s.layers.size() == 3);
    for (std::int64_t l = 0; l < 3; ++l) CHECK(s.layers[std::size_t(l)].layer == l);

    // layer 0: |x| largest 8 (s1, pos 0, ch 3), 6 (s1, pos 0, ch 2, value −6), 4 (s0, pos 0, ch 3).
    // Per-sample upper medians of the 12 |x|: s0 sorted 0,0,.5,.5,.5,.5,[1],1,1,1,3,4 → 1; s1 has nine 0s → 0;
    // their upper median (of 0, 1) is 1. ‖x₀‖ = 5 and 10 → 7.5; positions 1, 2: (1 + 2)/2 = 1.5 and
    // (2 + 0)/2 = 1 → 1.25. Not massive (8 ≤ 100).
    const auto& L0 = s.layers[0];
    REQUIRE(L0.top.size() == 3);
    check_top(L0.top[0], 8, 8, 3, 0, 1);
    check_top(L0.top[1], 6, -6, 2, 0, 1);
    check_top(L0.top[2], 4, 4, 3, 0, 0);
    CHECK(L0.median_abs == 1.0);
    CHECK(L0.norm_pos0 == 7.5);
    CHECK(L0.norm_rest == 1.25);
    CHECK_FALSE(L0.massive);
    // layer 1: 2000 (s0), 1500 (s1), then the first |x| = 1 met: s0, position 1, channel 0. Medians 1 and .5
    // → upper median 1; 2000 > 100 and ≥ 1000 × 1: massive. ‖x₀‖ = 2000, 1500 → 1750; the rest (2 + 1)/2 twice.
    const auto& L1 = s.layers[1];
    REQUIRE(L1.top.size() == 3);
    check_top(L1.top[0], 2000, 2000, 1, 0, 0);
    check_top(L1.top[1], 1500, 1500, 1, 0, 1);
    check_top(L1.top[2], 1, 1, 0, 1, 0);
    CHECK(L1.median_abs == 1.0);
    CHECK(L1.norm_pos0 == 1750.0);
    CHECK(L1.norm_rest == 1.5);
    CHECK(L1.massive);
    // layer 2: 150 > 100 but < 1000 × median 1: not massive. Equal |x| = 150 kept in the order met.
    const auto& L2 = s.layers[2];
    REQUIRE(L2.top.size() == 3);
    check_top(L2.top[0], 150, 150, 1, 0, 0);
    check_top(L2.top[1], 150, -150, 1, 0, 1);
    CHECK(L2.median_abs == 1.0);
    CHECK(L2.norm_pos0 == 150.0);
    CHECK(L2.norm_rest == 2.0);
    CHECK_FALSE(L2.massive);

    // sink rates at ε = 0.5: layer 0: s0 1 of 2 heads, s1 0 → 0.25; layer 1: s0 2 of 2, s1 1 of 2 → 0.75;
    // layer 2: 0. Whole model: s0 3 of 6, s1 1 of 6 → 1/3.
    CHECK(L0.sink_rate == 0.25);
    CHECK(L1.sink_rate == 0.75);
    CHECK(L2.sink_rate == 0.0);
    CHECK(s.sink_rate == Approx(1.0 / 3.0).epsilon(1e-15));
    // ε = 0.4: layer 0: s0 1 of 2 (.667), s1 1 of 2 (.433) → 0.5; layer 1: all four → 1; layer 2: 0;
    // whole: 3 of 6 in each sample → 0.5
    const auto s4 = analysis::summarize(rs, as, 0.4);
    CHECK(s4.eps == 0.4);
    CHECK(s4.layers[0].sink_rate == 0.5);
    CHECK(s4.layers[1].sink_rate == 1.0);
    CHECK(s4.layers[2].sink_rate == 0.0);
    CHECK(s4.sink_rate == 0.5);
    // default ε = 0.3 (Gu et al.): every α₀ here is ≥ 1/3 > 0.3, so every rate is 1
    const auto s3 = analysis::summarize(rs, as);
    CHECK(s3.eps == 0.3);
    for (const auto& l : s3.layers) CHECK(l.sink_rate == 1.0);
    CHECK(s3.sink_rate == 1.0);
}

TEST_CASE("summary to_json: the summary's numbers under their keys", "[analysis][summary]") {
    const auto s = analysis::summarize(residual_stats(), attention_stats(column0), 0.5);
    const nlohmann::json j = analysis::to_json(s);
    CHECK(j.at("eps") == 0.5);
    CHECK(j.at("samples") == 2);
    CHECK(j.at("sink_rate").get<double>() == s.sink_rate);
    REQUIRE(j.at("layers").size() == 3);
    const auto& l1 = j.at("layers").at(1);
    CHECK(l1.at("layer") == 1);
    CHECK(l1.at("median_abs") == 1.0);
    CHECK(l1.at("norm_pos0") == 1750.0);
    CHECK(l1.at("norm_rest") == 1.5);
    CHECK(l1.at("sink_rate") == 0.75);
    CHECK(l1.at("massive") == true);
    REQUIRE(l1.at("top").size() == 3);
    CHECK(l1.at("top").at(1) == nlohmann::json{{"abs", 1500.0}, {"value", 1500.0}, {"channel", 1}, {"position", 0}, {"sample", 1}});
    CHECK(j.at("layers").at(0).at("top").at(1).at("value") == -6.0);
    CHECK(j.at("layers").at(0).at("massive") == false);
}

TEST_CASE("print_summary: one header, one line per layer, the whole-model rate last", "[analysis][summary]") {
    const auto s = analysis::summarize(residual_stats(), attention_stats(column0), 0.5);
    std::ostringstream os;
    analysis::print_summary(os, s);
    std::vector<std::string> lines;
    std::istringstream in(os.str());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    REQUIRE(lines.size() == 5);
    CHECK(lines[0].find("layer") == 0);
    // "%9.2f (%4lld@%-3lld) " for each top entry, the sink rate as "%5.1f%%", "yes" when massive
    CHECK_THAT(lines[2], Catch::Contains("2000.00 (   1@0  )") && Catch::Contains("1500.00 (   1@0  )") &&
                             Catch::Contains(" 75.0%") && Catch::EndsWith("yes"));
    CHECK_THAT(lines[1], Catch::Contains("8.00 (   3@0  )") && Catch::Contains(" 25.0%"));
    CHECK(lines[1].find("yes") == std::string::npos);
    CHECK(lines[3].find("yes") == std::string::npos);
    CHECK(lines[4] == "Gu sink rate Sink^0.5_0 over all (layer, head), 2 samples: 33.33%");
}
