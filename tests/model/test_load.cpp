// model/load.hpp: the peer is llama.cpp's converter. Each gguf_<family> fixture is the random_<family>
// Hugging Face model (the same seeded weights) converted by convert_hf_to_gguf.py, which re-lays tensors in
// its own ways: GPT-NeoX's per-head q|k|v made [q | k | v], Gemma's (1 + g) gains stored shifted, Phi-3's
// gate|up fused, the experts stacked per projection. Loading either file must give the same parameters, bit
// for bit. Where the converter permutes Q and K rows for llama.cpp's interleaved rotation (architecture
// "llama": llama31, mixtral), W_Q and W_K are compared after undoing that permutation as the converter states
// it (LlamaModel.permute: reshape(H, 2, d_h/2, d).swapaxes(1, 2)).
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include <sinkscope/model/load.hpp>

#include "test_paths.hpp"

using namespace sinkscope;
using namespace sinkscope::model;

namespace {
std::map<std::string, Mat<float>> parameters(const Weights<float>& w) {
    std::map<std::string, Mat<float>> out;
    visit_parameters(w, [&](const std::string& name, const auto& t) { out[name] = Mat<float>(t); });
    return out;
}

// The converter's row permutation of W_Q / W_K for `heads` heads: HF row (h, half, j) → GGUF row (h, j, half).
Mat<float> unpermute(const Mat<float>& gguf, std::int64_t heads) {
    const std::int64_t dh = gguf.rows() / heads, half = dh / 2;
    Mat<float> hf(gguf.rows(), gguf.cols());
    for (std::int64_t h = 0; h < heads; ++h)
        for (std::int64_t s = 0; s < 2; ++s)
            for (std::int64_t j = 0; j < half; ++j) hf.row(h * dh + s * half + j) = gguf.row(h * dh + j * 2 + s);
    return hf;
}
}  // namespace

TEST_CASE("load: a GGUF converted from a Hugging Face model loads to the same parameters", "[load][reference]") {
    for (const std::string kind : {"gemma2", "phi3", "olmo2", "gpt_neox", "mixtral", "olmoe", "llama31"}) {
        CAPTURE(kind);
        const auto hf = load_model<float>(test::fixture("model/random_" + kind));
        const auto gg = load_model<float>(test::fixture("model/gguf_" + kind + "/model.gguf"));
        const bool permuted = gg.config.rope_layout == RopeLayout::interleaved;
        auto a = parameters(hf.weights), b = parameters(gg.weights);
        CHECK(a.size() == b.size());
        for (auto& [name, t] : b) {
            CAPTURE(name);
            REQUIRE(a.count(name));
            if (permuted && name.find(".W_Q") != std::string::npos) t = unpermute(t, gg.config.n_heads);
            if (permuted && name.find(".W_K") != std::string::npos) t = unpermute(t, gg.config.n_kv_heads);
            REQUIRE(a[name].rows() == t.rows());
            REQUIRE(a[name].cols() == t.cols());
            CHECK((a[name].array() == t.array()).all());
        }
    }
}

TEST_CASE("load: a path that is neither a GGUF file nor a Hugging Face directory is an error naming it", "[load]") {
    CHECK_THROWS_WITH(load_model<float>("/nonexistent/model.gguf"), Catch::Contains("/nonexistent/model.gguf"));
    const std::string dir = test::fixture("model/gguf_phi3");  // a directory without config.json
    CHECK_THROWS_WITH(load_model<float>(dir), Catch::Contains(dir));
}
