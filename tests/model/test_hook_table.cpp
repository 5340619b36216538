// model/hook_table.hpp: the table is in HookId order, and the forward pass (the observer here) offers exactly
// the rows whose `present` holds for a Config, in the table's order, for every switch that adds or removes a
// hook. tests/model/test_hooks.cpp pins the whole name list and what hooks see.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include <sinkscope/model/forward.hpp>
#include <sinkscope/model/hook_table.hpp>
#include <sinkscope/train/init.hpp>

#include "model/tiny_model.hpp"

using namespace sinkscope::model;

using sinkscope::test::tiny_llama;

TEST_CASE("the hook table is in HookId order, and every config variant offers exactly its rows", "[model][hooks]") {
    const auto& table = hook_table();
    for (std::size_t i = 0; i < table.size(); ++i) CHECK(std::size_t(table[i].id) == i);
    std::vector<std::function<void(Config&)>> variants = {
        [](Config&) {},
        [](Config& c) { c.norm_placement = NormPlacement::post; },
        [](Config& c) { c.norm_placement = NormPlacement::sandwich; },
        [](Config& c) { c.norm_placement = NormPlacement::output; },
        [](Config& c) { c.parallel_residual = true; },
        [](Config& c) { c.gate = GateKind::per_head; },
        [](Config& c) { c.positions = PositionKind::learned; },
        [](Config& c) { c.ffn = FfnKind::gelu; c.activation = Activation::gelu_tanh; },
        [](Config& c) { c.ffn = FfnKind::linear; },
        [](Config& c) { c.ffn = FfnKind::none; },
        [](Config& c) { c.ffn = FfnKind::moe; c.n_experts = 3; c.n_experts_used = 2; },
        [](Config& c) { c.attention = AttentionKind::kv_bias; },
    };
    for (std::size_t v = 0; v < variants.size(); ++v) {
        Config c = tiny_llama();
        variants[v](c);
        c.validate();
        const auto w = sinkscope::train::init_weights<float>(c, 7 + v);
        HookSet<float> hooks;
        std::vector<std::string> seen;
        hooks.add([](const std::string&) { return true; }, [&](const std::string& n, ActivationRef<float>&) { seen.push_back(n); });
        forward(c, w, std::vector<std::int32_t>{3, 1, 4, 1, 5}, &hooks);
        INFO("variant " << v << ": " << c.describe());
        CHECK(seen == hook_names(c));
    }
}
