// analysis/spike_trace.hpp: residual_states returns H_0 … H_{2L} equal to the hooks they name; the
// traced spike coordinate is the largest |H_i| over every state, position and sample, its trajectory is
// that coordinate's mean over the samples, and a planted massive activation is found (and none in a
// model without one).
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <sinkscope/analysis/spike_trace.hpp>
#include <sinkscope/model/load.hpp>

using namespace sinkscope;

namespace {
model::LoadedModel<float> tiny() {
    const std::string path = std::string(SINKSCOPE_SHARED_DIR) + "/models/stories260K.gguf";
    INFO("the shared tiny model: " << path);
    REQUIRE(std::filesystem::exists(path));
    return model::load_model<float>(path);
}
}  // namespace

TEST_CASE("residual_states gives H_0 .. H_2L from the named hooks", "[analysis][spike_trace]") {
    const auto m = tiny();
    const std::vector<std::int32_t> ids{1, 20, 30, 40, 50, 60};
    const auto st = analysis::residual_states(m.config, m.weights, ids);
    REQUIRE(std::int64_t(st.size()) == 2 * m.config.n_layers + 1);
    model::HookSet<float> hooks;
    model::ActivationCache<float> cache;
    cache.attach(hooks, {"blocks.0.hook_resid_pre", "blocks.1.hook_resid_mid", "blocks.1.hook_resid_post"});
    model::forward(m.config, m.weights, ids, &hooks);
    CHECK(st[0] == cache["blocks.0.hook_resid_pre"].data);
    CHECK(st[3] == cache["blocks.1.hook_resid_mid"].data);
    CHECK(st[4] == cache["blocks.1.hook_resid_post"].data);
}

TEST_CASE("trace_spike follows the largest coordinate and finds a planted massive activation", "[analysis][spike_trace]") {
    auto m = tiny();
    const std::vector<std::vector<std::int32_t>> smp{{1, 20, 30, 40, 50, 60, 70, 80}, {1, 21, 31, 41, 51, 61, 71, 81}};
    const auto plain = analysis::trace_spike(m.config, m.weights, smp);
    CHECK_FALSE(plain.found);  // stories260K's residual stream stays far below 100
    // The traced coordinate is the arg-max of |H_i| over every state of every sample.
    double best = 0;
    for (const auto& s : smp)
        for (const auto& h : analysis::residual_states(m.config, m.weights, s))
            for (float x : h) best = std::max(best, double(std::abs(x)));
    const auto st = analysis::residual_states(m.config, m.weights, smp[std::size_t(plain.sample)]);
    CHECK(std::abs(st[std::size_t(plain.peak_sub_block)][std::size_t(plain.position * m.config.d_model + plain.channel)]) ==
          Approx(best));
    REQUIRE(plain.trajectory.size() == st.size());
    // Plant a spike: scale output channel 7 of the last layer's FFN down-projection by 1e5, so that the
    // last sub-block (2L) writes a value thousands of times the state's median into channel 7.
    const std::int64_t last = m.config.n_layers - 1;
    m.weights.layers[std::size_t(last)].w_down.row(7) *= 1e5f;
    const auto planted = analysis::trace_spike(m.config, m.weights, smp);
    CHECK(planted.found);
    CHECK(planted.channel == 7);
    CHECK(planted.peak_sub_block == 2 * m.config.n_layers);
    REQUIRE_FALSE(planted.steps.step_up.empty());
    CHECK(planted.steps.step_up.back() == 2 * m.config.n_layers);   // the FFN of the last layer injects it
    CHECK(planted.step_up_layer == last);
}
