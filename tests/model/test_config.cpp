// model/config.hpp: Config's derived quantities against the peers' own statements of them. transformers'
// config.json of each family fixture says which layers slide and with which RoPE base (layer_types,
// rope_parameters per layer type); the safetensors it saved say how wide q, k and v are. Config::validate
// names the field it refuses.
#include <catch2/catch.hpp>

#include <string>

#include <sinkscope/io/safetensors.hpp>
#include <sinkscope/model/read_config.hpp>

#include "model/tiny_model.hpp"
#include "test_paths.hpp"

using namespace sinkscope;
using namespace sinkscope::model;
using sinkscope::test::tiny_llama;

namespace {
struct Fixture {
    nlohmann::json json;
    Config config;
};
Fixture hf_fixture(const std::string& kind) {
    const std::string path = test::fixture("model/random_" + kind + "/config.json");
    Fixture f{detail::read_json_file(path), {}};
    f.config = detail::hf_config(f.json, path);
    return f;
}
}  // namespace

TEST_CASE("config: window_at and rope_base_at follow transformers' layer_types and per-type RoPE bases", "[config]") {
    for (const std::string kind : {"gemma2", "gemma3"}) {
        CAPTURE(kind);
        const Fixture f = hf_fixture(kind);
        const auto& types = f.json.at("layer_types");
        REQUIRE(std::int64_t(types.size()) == f.config.n_layers);
        const std::int64_t window = f.json.at("sliding_window").get<std::int64_t>();
        int sliding = 0;
        for (std::int64_t l = 0; l < f.config.n_layers; ++l) {
            CAPTURE(l);
            const std::string type = types[std::size_t(l)].get<std::string>();
            CHECK(f.config.window_at(l) == (type == "sliding_attention" ? window : 0));
            sliding += type == "sliding_attention";
            if (f.json.contains("rope_parameters") && f.json["rope_parameters"].contains(type))
                CHECK(f.config.rope_base_at(l) == f.json["rope_parameters"][type]["rope_theta"].get<double>());
        }
        CHECK(sliding > 0);                      // both kinds of layer occur
        CHECK(sliding < f.config.n_layers);
    }
}

TEST_CASE("config: q_dim, kv_dim and rope_dims are the widths of the tensors transformers saved", "[config]") {
    for (const std::string kind : {"llama", "qwen3", "mistral", "gemma2", "olmo2", "llama31"}) {
        CAPTURE(kind);
        const Fixture f = hf_fixture(kind);
        const io::SafetensorsCheckpoint ck(test::fixture("model/random_" + kind));
        const std::string L = "model.layers.0.self_attn.";
        CHECK(ck.shape(L + "q_proj.weight") == std::vector<std::int64_t>{f.config.q_dim(), f.config.d_model});
        CHECK(ck.shape(L + "k_proj.weight") == std::vector<std::int64_t>{f.config.kv_dim(), f.config.d_model});
        CHECK(ck.shape(L + "o_proj.weight") == std::vector<std::int64_t>{f.config.d_model, f.config.q_dim()});
        CHECK(f.config.rope_dims() == f.config.head_dim);
    }
    // Phi-3 with partial_rotary_factor 0.5 and GPT-NeoX with rotary_pct 0.25 rotate a part of each head.
    CHECK(hf_fixture("phi3").config.rope_dims() == hf_fixture("phi3").config.head_dim / 2);
    CHECK(hf_fixture("gpt_neox").config.rope_dims() == hf_fixture("gpt_neox").config.head_dim / 4);
}

TEST_CASE("config: validate names the offending field", "[config]") {
    Config c = tiny_llama();
    c.n_kv_heads = 3;
    CHECK_THROWS_WITH(c.validate(), Catch::Contains("multiple of n_kv_heads"));
    c = tiny_llama(); c.sliding_window = 17;
    CHECK_THROWS_WITH(c.validate(), Catch::Contains("larger than the context"));
    c = tiny_llama(); c.head_dim = 3;
    CHECK_THROWS_WITH(c.validate(), Catch::Contains("even head_dim"));
    CHECK_NOTHROW(tiny_llama().validate());
}
