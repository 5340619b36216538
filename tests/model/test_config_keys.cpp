// model/config_keys.hpp: typed access to config.json and GGUF metadata, against hand-written JSON whose
// values the test states; errors name the key and the file.
#include <catch2/catch.hpp>

#include <string>

#include <sinkscope/model/config_keys.hpp>

using namespace sinkscope;
using namespace sinkscope::model;

TEST_CASE("config_keys: HfKeys reads the first key present, with defaults and typed errors", "[config_keys]") {
    const nlohmann::json j = {{"n_layer", 3}, {"hidden_size", 48}, {"rms_norm_eps", 1e-6}, {"head_dim", nullptr},
                              {"vocab_size", "256"}, {"hidden_act", "gelu_pytorch_tanh"}};
    const HfKeys k(j, "dir/config.json");
    CHECK(k.get<std::int64_t>({"num_hidden_layers", "n_layer"}) == 3);  // the second spelling when the first is absent
    CHECK(k.get<std::int64_t>({"hidden_size", "n_embd"}) == 48);
    CHECK(k.get<double>({"rms_norm_eps"}) == 1e-6);
    CHECK_FALSE(k.has("head_dim"));                                     // null counts as absent
    CHECK(k.get_or<std::int64_t>({"head_dim"}, 16) == 16);
    CHECK_THROWS_WITH(k.get<std::int64_t>({"num_attention_heads", "n_head"}),
                      Catch::Contains("'num_attention_heads' or 'n_head'") && Catch::Contains("dir/config.json"));
    CHECK_THROWS_WITH(k.get<std::int64_t>({"vocab_size"}),
                      Catch::Contains("'vocab_size' holds a string") && Catch::Contains("dir/config.json"));
    CHECK(k.activation({"hidden_act"}, "silu") == Activation::gelu_tanh);
    CHECK(k.activation({"missing_act"}, "silu") == Activation::silu);
    CHECK(HfKeys(nlohmann::json{{"a", "gelu"}}, "p").activation({"a"}, "silu") == Activation::gelu_erf);
    CHECK_THROWS_WITH(HfKeys(nlohmann::json{{"a", "relu"}}, "p").activation({"a"}, "silu"), Catch::Contains("'relu'"));
}

TEST_CASE("config_keys: RoPE parameters nested (transformers 5) or at the top level (older configs)", "[config_keys]") {
    const nlohmann::json old_style = {{"rope_theta", 5e5}, {"partial_rotary_factor", 0.5},
                                      {"rope_scaling", {{"rope_type", "linear"}, {"factor", 2.0}}}};
    const HfKeys o(old_style, "old.json");
    CHECK(o.rope_theta() == 5e5);
    CHECK(o.partial_rotary() == 0.5);
    CHECK(o.rope()["factor"] == 2.0);
    CHECK_THROWS_WITH(o.require_default_rope(), Catch::Contains("'linear'") && Catch::Contains("old.json"));

    const nlohmann::json nested = {
        {"rope_parameters", {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 1e6}}},
                             {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 1e4}}}}}};
    const HfKeys n(nested, "new.json");
    CHECK(n.rope_theta("full_attention") == 1e6);
    CHECK(n.rope_theta("sliding_attention") == 1e4);
    CHECK_NOTHROW(n.require_default_rope("sliding_attention"));
    CHECK(HfKeys(nlohmann::json::object(), "p").rope_theta() == 10000.0);     // the default base
    CHECK(HfKeys(nlohmann::json{{"rotary_pct", 0.25}}, "p").partial_rotary() == 0.25);  // GPT-NeoX's spelling
}

TEST_CASE("config_keys: GgufKeys prefixes the architecture and names the full key", "[config_keys]") {
    const nlohmann::json md = {{"llama.block_count", 2}, {"llama.rope.freq_base", 5e5}, {"llama.context_length", "x"}};
    const GgufKeys k(md, "llama", "m.gguf");
    CHECK(k.has("block_count"));
    CHECK_FALSE(k.has("general.architecture"));
    CHECK(k.get<std::int64_t>("block_count") == 2);
    CHECK(k.get_or<double>("rope.freq_base", 1e4) == 5e5);
    CHECK(k.get_or<double>("rope.scaling.factor", 1.0) == 1.0);
    CHECK(k.full_name("block_count") == "llama.block_count");
    CHECK_THROWS_WITH(k.get<std::int64_t>("feed_forward_length"),
                      Catch::Contains("'llama.feed_forward_length' is missing") && Catch::Contains("m.gguf"));
    CHECK_THROWS_WITH(k.get<std::int64_t>("context_length"), Catch::Contains("'llama.context_length' holds a string"));
}
