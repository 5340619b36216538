// model/gguf_conventions.hpp: llama.cpp's rules for what a GGUF leaves out, checked against the rules as
// llama.cpp states them (src/llama-hparams.cpp, set_swa_pattern: with period n, layer l is sliding unless
// l % n == n − 1; src/models/gemma*.cpp: the 27B Gemmas scale scores by 1/√(d/H)), written out here per layer.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <sinkscope/model/gguf_conventions.hpp>

using namespace sinkscope;
using namespace sinkscope::model;

namespace {
Config layers(std::int64_t n, std::int64_t context = 4096) {
    Config c;
    c.n_layers = n;
    c.context_length = context;
    return c;
}
}  // namespace

TEST_CASE("gguf_conventions: sliding layers by period, by per-layer list, and windows the context covers", "[gguf_conventions]") {
    const nlohmann::json none = nlohmann::json::object();
    Config c = layers(12);
    detail::gguf_layer_windows(c, GgufKeys(none, "gemma3", "m.gguf"), 512, 6);  // the family's period: 5 slide, 1 global
    const std::vector<std::int64_t> period6 = {512, 512, 512, 512, 512, 0, 512, 512, 512, 512, 512, 0};
    CHECK(c.layer_windows == period6);

    const nlohmann::json period2 = {{"gemma2.attention.sliding_window_pattern", 2}};  // the file's period wins
    c = layers(4);
    detail::gguf_layer_windows(c, GgufKeys(period2, "gemma2", "m.gguf"), 8, 6);
    CHECK(c.layer_windows == std::vector<std::int64_t>{8, 0, 8, 0});

    const nlohmann::json listed = {{"gemma3.attention.sliding_window_pattern", {true, false, false, true}}};
    c = layers(4);
    detail::gguf_layer_windows(c, GgufKeys(listed, "gemma3", "m.gguf"), 8, 6);
    CHECK(c.layer_windows == std::vector<std::int64_t>{8, 0, 0, 8});
    c = layers(5);
    CHECK_THROWS_WITH(detail::gguf_layer_windows(c, GgufKeys(listed, "gemma3", "m.gguf"), 8, 6),
                      Catch::Contains("gemma3.attention.sliding_window_pattern") && Catch::Contains("every layer"));

    c = layers(3, 64);  // a window as long as the context is no window
    detail::gguf_layer_windows(c, GgufKeys(none, "gemma2", "m.gguf"), 64, 0);
    CHECK(c.layer_windows == std::vector<std::int64_t>{0, 0, 0});
}

TEST_CASE("gguf_conventions: the Gemmas' attention scale and embedding scale", "[gguf_conventions]") {
    const nlohmann::json md = {{"gemma2.attention.layer_norm_rms_epsilon", 1e-6}};
    Config c;
    c.d_model = 4608;
    c.n_heads = 32;
    c.head_dim = 128;
    detail::gguf_gemma(c, GgufKeys(md, "gemma2", "m.gguf"), true);  // 27B: 1/√(d/H) = 1/√144
    CHECK(c.attn_scale == 1.0 / 12.0);
    CHECK(c.embed_scale == double(float(std::sqrt(4608.0))));
    detail::gguf_gemma(c, GgufKeys(md, "gemma2", "m.gguf"), false);  // other sizes: 1/√d_h
    CHECK(c.attn_scale == 1.0 / std::sqrt(128.0));
    CHECK(c.norm_placement == NormPlacement::sandwich);
}

TEST_CASE("gguf_conventions: RoPE scaling types other than none are refused by name", "[gguf_conventions]") {
    const nlohmann::json md = {{"llama.attention.layer_norm_rms_epsilon", 1e-5}, {"llama.rope.scaling.type", "yarn"}};
    Config c;
    CHECK_THROWS_WITH(detail::gguf_llama_like(c, GgufKeys(md, "llama", "m.gguf"), RopeLayout::interleaved),
                      Catch::Contains("'yarn'") && Catch::Contains("m.gguf"));
}
