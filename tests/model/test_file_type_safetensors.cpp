// File-type storage of Hugging Face checkpoints (issue 11, item 1: "Safetensors BF16/F16 stay in their type
// too"): the F16/BF16 linear maps of a safetensors directory stay memory-mapped views, and the forward
// through them agrees with the same checkpoint loaded dense.
//
// The committed fixtures are F32 (transformers' random models), so each test writes a BF16 or F16 copy of
// one (every tensor rounded to the type, config.json copied) and loads that copy both ways. The dense load
// converts the same 16-bit values to float exactly, so the two forwards differ only in the order of float
// sums: the exact path multiplies dequantized tiles of 128 rows with Eigen, the dense path whole matrices.
// Measured ≤ 2.4e-7 relative on the logits, 0 to 1.8e-7 on resid_post (SINKSCOPE_PRINT_ERRORS=1,
// 2026-12-01); pinned at 1e-5, as for the GGUF file-type test (test_quantized_forward.cpp). With bf16
// compute both sides round the same activations to bf16 and hand oneDNN the same bits in the same layout
// (layers/bf16_matmul.hpp), so they agree bit for bit.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <Eigen/Core>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <sinkscope/io/dequantize.hpp>
#include <sinkscope/io/memory.hpp>
#include <sinkscope/io/safetensors.hpp>
#include <sinkscope/layers/bf16_matmul.hpp>
#include <sinkscope/model/load.hpp>
#include <sinkscope/train/checkpoint.hpp>

#include "model/forward_compare.hpp"
#include "test_paths.hpp"

using namespace sinkscope;
using namespace sinkscope::model;
namespace fs = std::filesystem;

namespace {

// IEEE half bits of f, rounded to nearest even (Eigen's conversion).
std::uint16_t half_bits(float f) {
    const Eigen::half h(f);
    std::uint16_t b;
    std::memcpy(&b, &h, 2);
    return b;
}

// A copy of the fixture directory `name` with every floating tensor in `dtype` ("BF16" or "F16"), in a
// fresh temporary directory. Returns its path.
std::string sixteen_bit_copy(const std::string& name, const std::string& dtype) {
    const std::string src = sinkscope::test::fixture("model/" + name);
    const fs::path dir = fs::temp_directory_path() / ("sinkscope_" + dtype + "_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::copy_file(src + "/config.json", dir / "config.json");
    const io::SafetensorsCheckpoint ck(src);
    std::vector<std::vector<std::uint16_t>> bits;
    std::vector<train::TensorToWrite> out;
    const auto names = ck.names();
    bits.reserve(names.size());
    for (const std::string& n : names) {
        const std::vector<float> v = ck.load<float>(n);
        bits.emplace_back(v.size());
        for (std::size_t i = 0; i < v.size(); ++i)
            bits.back()[i] = dtype == "BF16" ? to_bf16_bits(v[i]) : half_bits(v[i]);
        out.push_back({n, dtype, ck.shape(n), bits.back().data(), bits.back().size() * 2});
    }
    train::write_safetensors((dir / "model.safetensors").string(), out, nlohmann::json::object());
    return dir.string();
}

LoadOptions file_type(QuantCompute compute = QuantCompute::exact) {
    LoadOptions o;
    o.storage = WeightStorage::file_type;
    o.compute = compute;
    return o;
}

int views_of(const Weights<float>& w, io::GgmlType type) {
    int n = 0;
    w.for_each_view([&](const QuantMatrix& q) { n += !q.empty() && q.type == type; });
    return n;
}

}  // namespace

TEST_CASE("file-type safetensors: BF16 and F16 copies of every family agree with their dense load", "[model][quantized]") {
    // Views of every linear map that is a row range of its tensor: plain maps, Phi-3's fused q|k|v and gate|up
    // (three and two row ranges), the MoE experts (one tensor each, or transformers 5's stacked (E, 2·d_ff, d)
    // gate|up). GPT-2 (Conv1D, stored transposed) and GPT-NeoX (q|k|v interleaved per head) keep those maps
    // dense, and still agree.
    for (const std::string name : {"random_llama", "random_qwen2", "random_qwen3", "random_gemma2", "random_gemma3",
                                   "random_mistral", "random_olmo2", "random_phi3", "random_gpt2", "random_gpt_neox",
                                   "random_mixtral", "random_olmoe", "random_llama31"}) {
        for (const std::string dtype : {"BF16", "F16"}) {
            CAPTURE(name, dtype);
            const std::string dir = sixteen_bit_copy(name, dtype);
            const auto dense = load_model<float>(dir);
            const auto viewed = load_model<float>(dir, file_type());
            REQUIRE_FALSE(dense.weights.file_type());
            const io::GgmlType type = dtype == "BF16" ? io::GgmlType::BF16 : io::GgmlType::F16;
            if (name == "random_gpt2") {
                // Every linear map is a transposed Conv1D: only the embedding (and no head: tied) is a view.
                CHECK(views_of(viewed.weights, type) == 1);
            } else {
                CHECK(views_of(viewed.weights, type) >= 1 + int(dense.config.n_layers));
            }
            const auto& L = viewed.weights.layers[0];
            if (name == "random_phi3") {  // the fused tensors' row ranges
                CHECK(L.wk_file.data == L.wq_file.data + L.wq_file.bytes());
                CHECK(L.wv_file.data == L.wk_file.data + L.wk_file.bytes());
                CHECK(L.w_up_file.data == L.w_gate_file.data + L.w_gate_file.bytes());
            }
            if (name == "random_gpt_neox") CHECK(L.wq_file.empty());  // per-head order: not a row range
            if (dense.config.ffn == FfnKind::moe) {
                REQUIRE(L.experts.size() == std::size_t(dense.config.n_experts));
                for (const auto& x : L.experts) {
                    CHECK(!x.w_gate_file.empty());
                    CHECK(!x.w_up_file.empty());
                    CHECK(!x.w_down_file.empty());
                    CHECK(x.w_gate.size() == 0);
                }
            }
            const auto tokens = sinkscope::test::some_tokens(dense.config.vocab_size, 12);
            const auto e = sinkscope::test::compare_runs(sinkscope::test::run_capturing(viewed, tokens),
                                                         sinkscope::test::run_capturing(dense, tokens));
            sinkscope::test::print_errors((name + " " + dtype + " file-type vs dense").c_str(), e);
            CHECK(e.first < 1e-5);
            CHECK(e.second < 1e-5);
            fs::remove_all(dir);
        }
    }
}

TEST_CASE("file-type safetensors: views are read in place, and counted at their size", "[model][quantized]") {
    const std::string dir = sixteen_bit_copy("random_llama", "BF16");
    const auto m = load_model<float>(dir, file_type());
    REQUIRE(m.weights.file_type());
    // The view points into the mapped file: its first value is the file's first two bytes of that tensor.
    const io::SafetensorsCheckpoint ck(dir);
    const auto& wq = m.weights.layers[0].wq_file;
    REQUIRE(wq.type == io::GgmlType::BF16);
    std::uint16_t first_in_file;
    std::memcpy(&first_in_file, ck.raw("model.layers.0.self_attn.q_proj.weight"), 2);
    std::uint16_t first_in_view;
    std::memcpy(&first_in_view, wq.data, 2);
    CHECK(first_in_view == first_in_file);
    CHECK(m.weights.layers[0].wq.size() == 0);  // no dense copy beside it
    // Memory: the 2-D maps at 2 bytes a value, the norms (1-D) as float32.
    std::uint64_t matrix_values = 0, vector_values = 0;
    for (const std::string& n : ck.names()) (ck.shape(n).size() == 2 ? matrix_values : vector_values) += ck.tensor(n).n_elements();
    CHECK(io::checkpoint_file_type_bytes(dir) == 2 * matrix_values + 4 * vector_values);
    CHECK(io::checkpoint_file_type_bytes(dir) < io::checkpoint_value_count(dir) * 4 * 6 / 10);
    fs::remove_all(dir);
}

TEST_CASE("file-type safetensors: a tensor whose dtype does not match its bytes is an Error naming it", "[model][quantized]") {
    const std::string dir = sixteen_bit_copy("random_llama", "BF16");
    // Rewrite one map's header entry with a wrong shape: the loader must name the tensor and the file.
    const io::SafetensorsCheckpoint ck(dir);
    const std::string bad = "model.layers.1.mlp.down_proj.weight";
    std::vector<std::vector<std::uint16_t>> bits;
    std::vector<train::TensorToWrite> out;
    for (const std::string& n : ck.names()) {
        const auto& t = ck.tensor(n);
        bits.emplace_back(std::size_t(t.nbytes / 2));
        std::memcpy(bits.back().data(), ck.raw(n), t.nbytes);
        auto shape = ck.shape(n);
        if (n == bad) std::swap(shape[0], shape[1]);
        out.push_back({n, t.dtype, shape, bits.back().data(), t.nbytes});
    }
    const std::string bad_dir = dir + "_bad";
    fs::create_directories(bad_dir);
    fs::copy_file(dir + "/config.json", bad_dir + "/config.json");
    train::write_safetensors(bad_dir + "/model.safetensors", out, nlohmann::json::object());
    try {
        (void)load_model<float>(bad_dir, file_type());
        FAIL("a transposed tensor loaded");
    } catch (const Error& e) {
        const std::string what = e.what();
        CHECK(what.find(bad) != std::string::npos);
        CHECK(what.find("model.safetensors") != std::string::npos);
        CHECK(what.find("does not match") != std::string::npos);
    }
    fs::remove_all(dir);
    fs::remove_all(bad_dir);
}

TEST_CASE("file-type safetensors: bf16 compute on BF16 views is bit for bit bf16 compute on the dense load", "[model][bf16]") {
    if (!bf16_matmul_available()) { WARN("no oneDNN in this build: bf16 compute not tested"); return; }
    const std::string dir = sixteen_bit_copy("random_qwen2", "BF16");
    const auto o = load_options_from("file", "bf16");
    REQUIRE(o.storage == WeightStorage::file_type);
    const auto viewed = load_model<float>(dir, o);
    REQUIRE(viewed.weights.file_type());
    REQUIRE(viewed.weights.compute == QuantCompute::bf16);
    const auto dense = load_model<float>(dir, load_options_from("float32", "bf16"));
    const auto exact = load_model<float>(dir);
    const auto tokens = sinkscope::test::some_tokens(dense.config.vocab_size, 16);
    const auto a = sinkscope::test::run_capturing(viewed, tokens), b = sinkscope::test::run_capturing(dense, tokens);
    CHECK(a.logits == b.logits);
    for (std::size_t l = 0; l < a.resid.size(); ++l) CHECK(a.resid[l].data == b.resid[l].data);
    // … and it is bf16 arithmetic, not float32 (the forward with float32 products differs).
    const auto e = sinkscope::test::compare_runs(a, sinkscope::test::run_capturing(exact, tokens));
    sinkscope::test::print_errors("random_qwen2 BF16 views, bf16 compute vs float32", e);
    CHECK(e.first > 1e-5);
    fs::remove_all(dir);
}

TEST_CASE("load options: the words of the CLI and the module, and the rules", "[model][bf16]") {
    CHECK_THROWS_WITH(load_options_from("half", "exact"), Catch::Contains("weights must be"));
    CHECK_THROWS_WITH(load_options_from("file", "fp8"), Catch::Contains("compute must be"));
    const auto int8 = load_options_from("file", "int8");
    CHECK(int8.compute == QuantCompute::int8);
    CHECK(int8.precision == MatmulPrecision::float32);
    LoadOptions bf16;
    bf16.precision = MatmulPrecision::bf16;
    CHECK_FALSE(load_options_problem(bf16, false).empty());  // double models are the exact reference
    CHECK_FALSE(load_options_problem(file_type(), false).empty());
    CHECK(load_options_problem(file_type(QuantCompute::int8), true).empty());
    if (bf16_matmul_available()) CHECK(load_options_problem(bf16, true).empty());
    else CHECK_THAT(load_options_problem(bf16, true), Catch::Contains("oneDNN"));
}
