// BF16 weight storage (model/bf16_weights.hpp, WeightStorage::bf16, `--weights bf16`): the linear maps
// rounded to BF16 once at load must give, with bf16 products, bit for bit what the float32 weights give with
// bf16 products (MatmulPrecision::bf16, which rounds them on every call), in every family and on SmolLM2.
// No tolerance: both sides hand oneDNN the same bits in the same layout (layers/bf16_matmul.hpp), and the
// norms, attention and residual additions between the products are the same code on the same floats. A
// different rounding of the stored weights (truncation instead of round-to-nearest-even, say) or a
// transposed view breaks the equality.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <sinkscope/model/bf16_weights.hpp>
#include <sinkscope/model/forward.hpp>
#include <sinkscope/model/load.hpp>
#include <sinkscope/train/random_model.hpp>

#include "model/forward_compare.hpp"
#include "test_paths.hpp"

using namespace sinkscope;
using namespace sinkscope::model;
namespace fs = std::filesystem;

namespace bf16_weights_test {

// The same bytes (a bool, so that a failure does not print megabytes of floats).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Every captured activation (logits, each resid_post, the named extras) equal bit for bit.
void require_same_bits(const test::ForwardRun& a, const test::ForwardRun& b) {
    REQUIRE(a.logits.size() == b.logits.size());
    CHECK(std::memcmp(a.logits.data(), b.logits.data(), std::size_t(a.logits.size()) * sizeof(float)) == 0);
    REQUIRE(a.resid.size() == b.resid.size());
    for (std::size_t l = 0; l < a.resid.size(); ++l) {
        CAPTURE(l);
        CHECK(same_bits(a.resid[l].data, b.resid[l].data));
    }
    for (const auto& [name, c] : b.extra) {
        CAPTURE(name);
        CHECK(same_bits(a.extra.at(name).data, c.data));
    }
}

// Dense maps left in `w` among those BF16 storage converts.
int dense_maps(const Weights<float>& w) {
    int n = w.lm_head.size() > 0;
    for (const auto& L : w.layers) L.for_each_map([&](const Mat<float>& dense, const QuantMatrix&) { n += dense.size() > 0; });
    return n;
}

// The model at `path` both ways, with the activations of `tokens`, checked bit for bit.
void check_same_forward(const std::string& path, int n_tokens) {
    const auto reference = load_model<float>(path, load_options_from("float32", "bf16"));
    const auto stored = load_model<float>(path, load_options_from("bf16", "bf16"));
    REQUIRE(stored.weights.storage == WeightStorage::bf16);
    REQUIRE(stored.weights.file_type());
    CHECK(stored.weights.compute == QuantCompute::bf16);
    CHECK(dense_maps(stored.weights) == 0);
    CHECK(parameter_count(stored.weights) == parameter_count(reference.weights));
    const auto tokens = test::some_tokens(reference.config.vocab_size, n_tokens);
    const std::vector<std::string> extra{"blocks.0.attn.hook_pattern", "blocks.0.hook_attn_out"};
    require_same_bits(test::run_capturing(stored, tokens, extra), test::run_capturing(reference, tokens, extra));
}

}  // namespace bf16_weights_test

TEST_CASE("BF16 storage: bit for bit the bf16 products of the float32 weights, in every family", "[model][bf16]") {
    if (!bf16_matmul_available()) { WARN("skipped: this build has no oneDNN (bf16 products)"); return; }
    // Tied and untied heads, fused q|k|v and gate|up (Phi-3), per-head q|k|v (GPT-NeoX), Conv1D (GPT-2),
    // biases (Qwen2), MoE experts (Mixtral, OLMoE), sandwich norms (Gemma 2/3), and the all-F32 GGUF.
    for (const std::string name : {"random_llama", "random_qwen2", "random_qwen3", "random_gemma2", "random_gemma3",
                                   "random_mistral", "random_olmo2", "random_phi3", "random_gpt2", "random_gpt_neox",
                                   "random_mixtral", "random_olmoe", "random_llama31"}) {
        CAPTURE(name);
        bf16_weights_test::check_same_forward(test::fixture("model/" + name), 12);
    }
    bf16_weights_test::check_same_forward(test::shared_model("stories260K.gguf"), 32);
}

TEST_CASE("BF16 storage: SmolLM2-135M Q4_1 at 512 tokens", "[model][bf16]") {
    if (!bf16_matmul_available()) { WARN("skipped: this build has no oneDNN (bf16 products)"); return; }
    const std::string path = test::downloaded_model("SmolLM2-135M-Instruct.Q4_1.gguf");
    if (!fs::exists(path)) { WARN("skipped: " << path << " absent (scripts/fetch_model.sh fetches it)"); return; }
    bf16_weights_test::check_same_forward(path, 512);  // the benchmark's length: oneDNN's larger blockings too
}

TEST_CASE("BF16 storage: what is rounded, what stays float32, and what it refuses", "[model][bf16]") {
    using Catch::Matchers::Contains;
    const std::string path = test::shared_model("stories260K.gguf");
    const auto dense = load_model<float>(path);
    auto w = dense.weights;
    store_linear_maps_bf16(w, QuantCompute::exact);
    REQUIRE(w.storage == WeightStorage::bf16);

    SECTION("each map holds the round-to-nearest-even bf16 of its float32 values, in the same row-major order") {
        const auto& q = w.layers[1].wq_file;
        const Mat<float>& ref = dense.weights.layers[1].wq;
        REQUIRE(q.type == io::GgmlType::BF16);
        REQUIRE(q.rows == ref.rows());
        REQUIRE(q.cols == ref.cols());
        const auto* bits = reinterpret_cast<const std::uint16_t*>(q.data);
        std::int64_t mismatches = 0;
        for (std::int64_t i = 0; i < ref.size(); ++i) mismatches += bits[i] != to_bf16_bits(ref.data()[i]);
        CHECK(mismatches == 0);
        CHECK(w.layers[1].wq.size() == 0);  // freed
    }
    SECTION("the embedding table stays float32; the tied head is its own BF16 copy, counted once") {
        CHECK(w.tok_embed == dense.weights.tok_embed);
        REQUIRE_FALSE(w.lm_head_file.empty());
        CHECK(w.lm_head_file.rows == dense.weights.tok_embed.rows());
        CHECK(w.head_copies_embedding);
        CHECK(parameter_count(w) == parameter_count(dense.weights));
        // Norms stay float32, untouched.
        CHECK(w.layers[0].attn_norm.weight == dense.weights.layers[0].attn_norm.weight);
    }
    SECTION("exact compute multiplies the rounded weights in float32: close to, not equal to, the float32 forward") {
        const auto tokens = test::some_tokens(dense.config.vocab_size, 16);
        const Mat<float> a = forward(dense.config, w, tokens), b = forward(dense.config, dense.weights, tokens);
        const double e = test::relative_error(a.data(), b.data(), std::size_t(b.size()));
        CHECK(e > 1e-5);  // the weights were rounded
        CHECK(e < 5e-2);  // by bf16's 2⁻⁹ relative, not broken
    }
    SECTION("views refuse what needs dense weights; double models refuse the storage") {
        CHECK_THROWS_WITH(visit_parameters(w, [](const std::string&, const auto&) {}),
                          Contains("needs dense weights") && Contains("bf16"));
        CHECK_THROWS_WITH(w.output_head(), Contains("no dense output head"));
        CHECK_THROWS_WITH(load_model<double>(path, load_options_from("bf16", "exact")), Contains("BF16 storage loads float models only"));
        CHECK_THROWS_WITH(load_options_from("bfloat", "bf16"), Contains("'float32', 'file' or 'bf16'"));
    }
    SECTION("maps already viewed in their file type stay views of the file") {
        // stories260K is all F32: a file-type load has no views, so every map is rounded.
        auto f = load_model<float>(test::shared_model("stories260K.gguf"), load_options_from("file", "exact"));
        REQUIRE_FALSE(f.weights.file_type());
        store_linear_maps_bf16(f.weights, QuantCompute::exact);
        CHECK(f.weights.storage == WeightStorage::bf16);
        // SmolLM2's maps are Q4_1 views: they stay the file's, and the tied head reads the embedding's view.
        const std::string smol = test::downloaded_model("SmolLM2-135M-Instruct.Q4_1.gguf");
        if (!fs::exists(smol)) { WARN("skipped the view half: " << smol << " absent"); return; }
        auto q = load_model<float>(smol, load_options_from("file", "exact"));
        REQUIRE(q.weights.file_type());
        const QuantMatrix before = q.weights.layers[0].wq_file;
        store_linear_maps_bf16(q.weights, QuantCompute::exact);
        CHECK(q.weights.layers[0].wq_file.data == before.data);
        CHECK(q.weights.layers[0].wq_file.type == io::GgmlType::Q4_1);
        CHECK(q.weights.storage == WeightStorage::file_type);
        CHECK_FALSE(q.weights.head_copies_embedding);
    }
}

TEST_CASE("BF16 storage: load_within_memory counts the float32 load and rounds after it", "[model][bf16]") {
    const std::string path = test::shared_model("stories260K.gguf");
    train::WeightMemory counted;
    const auto m = train::load_within_memory(path, load_options_from("bf16", "exact"), &counted);
    CHECK(m.weights.storage == WeightStorage::bf16);
    CHECK(std::string(counted.kind) == "float32 weights");
    CHECK(counted.bytes > 0);
}
