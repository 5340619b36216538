// analysis/spikes.hpp: Sun et al.'s criterion, Paper B's sub-block indexing and the step rule on
// constructed trajectories and states (expected values worked out by hand in the comments).
#include <catch2/catch.hpp>

#include <sinkscope/analysis/spikes.hpp>

using namespace sinkscope::analysis;

TEST_CASE("massive criterion needs both |x| > 100 and 1000 x median", "[analysis][spikes]") {
    CHECK(is_massive(101, 0.1));
    CHECK_FALSE(is_massive(100, 0.01));      // not > 100
    CHECK_FALSE(is_massive(500, 1.0));       // 500 < 1000 · 1
    CHECK(is_massive(1000, 1.0));            // ≥ is inclusive
    const float v[5] = {-3, 1, 2, -5, 4};
    CHECK(median_abs(v, 5) == 3.0);
}

TEST_CASE("sub-block 2l+1 is layer l's attention, 2l+2 its FFN", "[analysis][spikes]") {
    const auto s1 = sub_block(1, 30);
    CHECK(s1.layer == 0);
    CHECK(s1.attention);
    CHECK(s1.output_hook == "blocks.0.hook_attn_out");
    CHECK(s1.state_hook == "blocks.0.hook_resid_mid");
    const auto s4 = sub_block(4, 32);   // Llama-2-7B's step-up: layer 1's FFN
    CHECK(s4.layer == 1);
    CHECK_FALSE(s4.attention);
    CHECK(s4.output_hook == "blocks.1.hook_mlp_out");
    CHECK(s4.state_hook == "blocks.1.hook_resid_post");
    CHECK(sub_block(60, 30).layer == 29);
    CHECK(sub_blocks(3).size() == 6);
    CHECK_THROWS_AS(sub_block(0, 3), sinkscope::Error);
    CHECK_THROWS_AS(sub_block(7, 3), sinkscope::Error);
}

TEST_CASE("classify_steps finds a rise, a plateau and a fall", "[analysis][spikes]") {
    // x: 0 → 1 → 1001 (sub-block 2 steps up by 1000) → plateau ±1 → −500 and −501 at sub-blocks 6, 7.
    const std::vector<double> x{0, 1, 1001, 1002, 1001, 1002, 502, 1};
    const auto c = classify_steps(x, 0.2);
    CHECK(c.peak == 1002);
    CHECK(c.peak_index == 3);
    CHECK(c.step_up == std::vector<std::int64_t>{2});
    CHECK(c.step_down == std::vector<std::int64_t>{6, 7});
    CHECK(c.in_between_ratio == Approx(1.0 / 1000));   // plateau steps of 1 against the 1000 step-up
    // A negative spike: the signs flip with it.
    std::vector<double> y;
    for (double v : x) y.push_back(-v);
    const auto d = classify_steps(y, 0.2);
    CHECK(d.step_up == c.step_up);
    CHECK(d.step_down == c.step_down);
    // No step large enough: empty sets.
    const auto e = classify_steps({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.2);
    CHECK(e.step_up.empty());
    CHECK_THROWS_AS(classify_steps({1.0}), sinkscope::Error);
}

TEST_CASE("massive_entries judges against the median of the whole state", "[analysis][spikes]") {
    // 3 positions × 4 channels, all 0.1 except a 2000 at (0, 2) and a −150 at (2, 1).
    std::vector<float> h(12, 0.1f);
    h[2] = 2000;
    h[9] = -150;
    const auto e = massive_entries(h.data(), 3, 4);
    REQUIRE(e.size() == 2);
    CHECK(e[0].position == 0);
    CHECK(e[0].channel == 2);
    CHECK(e[1].position == 2);
    CHECK(e[1].value == Approx(-150));
    CHECK(spike_positions(e) == std::vector<std::int64_t>{0, 2});
    CHECK(spike_channels(e) == std::vector<std::int64_t>{2, 1});
    // Raise the median to 1: −150 is no longer 1000 × median, 2000 still is.
    std::vector<float> g(12, 1.0f);
    g[2] = 2000;
    g[9] = -150;
    CHECK(massive_entries(g.data(), 3, 4).size() == 1);
}

TEST_CASE("in_between_ratio uses the given steps, not the trajectory's own", "[analysis][spikes]") {
    // Step-up at 2 (+1000), plateau steps of 1 and 5, step-down at 6.
    const std::vector<double> x{0, 0, 1000, 1001, 1006, 1005, 0};
    CHECK(in_between_ratio(x, {2}, {6}) == Approx(5.0 / 1000));
    // The same steps on another sample's trajectory: its own step sizes count.
    const std::vector<double> y{0, 0, 500, 520, 520, 520, 0};
    CHECK(in_between_ratio(y, {2}, {6}) == Approx(20.0 / 500));
    // No step-down: everything after the last step-up is "in between".
    CHECK(in_between_ratio(x, {2}, {}) == Approx(1005.0 / 1000));
    CHECK(in_between_ratio(x, {}, {6}) == 0.0);
    CHECK_THROWS_AS(in_between_ratio(x, {9}, {}), sinkscope::Error);
}

TEST_CASE("Paper B's windows: step-ups in the first 20%, a step-down in the last 8%", "[analysis][spikes]") {
    // The paper's own rows lie inside: Llama-2-7B 4/62 of 64, Qwen2.5-7B 8,10/54,55 of 56, Qwen3-8B 14/70,72 of 72.
    CHECK(step_ups_in_window({4}, 64));
    CHECK(step_down_in_window({62}, 64));
    CHECK(step_ups_in_window({8, 10}, 56));
    CHECK(step_down_in_window({54, 55}, 56));
    CHECK(step_ups_in_window({14}, 72));
    CHECK(step_down_in_window({70, 72}, 72));
    // Outside: a step-up at 40% of the depth, a step-down at 75%, no step at all.
    CHECK_FALSE(step_ups_in_window({24}, 60));
    CHECK_FALSE(step_ups_in_window({4, 24}, 60));
    CHECK_FALSE(step_down_in_window({45}, 60));
    CHECK_FALSE(step_ups_in_window({}, 60));
    CHECK_FALSE(step_down_in_window({}, 60));
    CHECK(step_ups_in_window({12}, 60));        // 12/60 = 0.20: the window is inclusive
    CHECK_FALSE(step_ups_in_window({13}, 60));
    CHECK(step_down_in_window({56}, 60));       // 56/60 = 0.933 ≥ 0.92
    CHECK_FALSE(step_down_in_window({55}, 60)); // 0.9167
}

TEST_CASE("consensus_channels keeps channels massive in at least half the spiking samples", "[analysis][spikes]") {
    // 5 samples, one without spikes: channel 7 in 4 of 4 spiking samples, 3 in 2 of 4, 9 in 1 of 4.
    const std::vector<std::vector<std::int64_t>> per{{7, 3}, {7}, {}, {7, 9, 3}, {7, 7}};
    const auto c = consensus_channels(per, 0.5);
    REQUIRE(c.size() == 2);
    CHECK(c[0].channel == 7);
    CHECK(c[0].samples == 4);   // a channel listed twice in one sample counts once
    CHECK(c[1].channel == 3);
    CHECK(c[1].samples == 2);
    CHECK(consensus_channels(per, 0.75).size() == 1);
    CHECK(consensus_channels({{}, {}}, 0.5).empty());
    CHECK_THROWS_AS(consensus_channels(per, 0.0), sinkscope::Error);
}

TEST_CASE("ratio_spread is std/|mean| of channel k over the reference channel", "[analysis][spikes]") {
    // Ratios 0.5, 0.5, 0.5: no spread. Ratios 1 and 3: mean 2, population std 1 → 0.5.
    CHECK(ratio_spread({{100, 50}, {200, 100}, {-40, -20}}, 1) == Approx(0.0).margin(1e-12));
    CHECK(ratio_spread({{10, 10}, {10, 30}}, 1) == Approx(0.5));
    CHECK(ratio_spread({{0, 5}, {10, 10}, {10, 30}}, 1) == Approx(0.5));   // a zero reference is skipped
    CHECK(std::isnan(ratio_spread({{10, 10}}, 1)));                        // one token: undefined
    CHECK_THROWS_AS(ratio_spread({{10, 10}}, 2), sinkscope::Error);
}
