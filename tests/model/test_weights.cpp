// model/weights.hpp against the files' own accounting: the parameters of every Hugging Face fixture number
// what transformers saved; with file-type storage the views are exactly the GGUF's maps not stored as F32 (block types, F16, BF16), each
// at the file's bytes and offset; what needs dense weights refuses views with a reason.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <string>

#include <sinkscope/io/gguf.hpp>
#include <sinkscope/io/safetensors.hpp>
#include <sinkscope/model/load.hpp>

#include "test_paths.hpp"

using namespace sinkscope;
using namespace sinkscope::model;

TEST_CASE("weights: every Hugging Face fixture holds as many parameters as transformers saved", "[weights][reference]") {
    for (const std::string kind : {"gpt2", "llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "olmo2",
                                   "gpt_neox", "mixtral", "olmoe", "llama31"}) {
        CAPTURE(kind);
        const std::string dir = test::fixture("model/random_" + kind);
        const io::SafetensorsCheckpoint ck(dir);
        std::int64_t saved = 0;
        for (const std::string& name : ck.names()) {
            std::int64_t n = 1;
            for (auto s : ck.shape(name)) n *= s;
            saved += n;
        }
        const auto m = load_model<float>(dir);
        CHECK(parameter_count(m.weights) == saved);
        CHECK(&m.weights.output_head() == (m.config.tied_embeddings ? &m.weights.tok_embed : &m.weights.lm_head));
    }
}

TEST_CASE("weights: file-type views are the GGUF's non-F32 maps, at their bytes", "[weights][quantized]") {
    const std::string path = test::downloaded_model("SmolLM2-135M-Instruct.Q4_1.gguf");
    if (!std::filesystem::exists(path)) {
        WARN("skipped: " << path << " absent (scripts/fetch_model.sh downloads it)");
        return;
    }
    LoadOptions o;
    o.storage = WeightStorage::file_type;
    const auto m = load_model<float>(path, o);
    REQUIRE(m.weights.file_type());
    // The mapping the views point into (load_gguf keeps the GgufFile alive in Weights::file).
    const auto f = std::static_pointer_cast<const io::GgufFile>(m.weights.file);
    std::map<const std::uint8_t*, const io::GgufTensor*> block_typed;  // start of data → tensor, for 2-D non-F32 ones
    for (const io::GgufTensor& t : f->tensors())
        if (t.type != io::GgmlType::F32 && t.shape.size() == 2) block_typed[f->raw(t)] = &t;
    REQUIRE(!block_typed.empty());
    std::size_t views = 0;
    m.weights.for_each_view([&](const QuantMatrix& v) {
        if (v.empty()) return;
        ++views;
        const auto it = block_typed.find(v.data);
        REQUIRE(it != block_typed.end());  // every view starts where such a tensor's data starts
        CAPTURE(it->second->name);
        CHECK(v.type == it->second->type);
        CHECK(v.bytes() == it->second->nbytes);
        CHECK(v.rows * v.cols == it->second->n_elements());
    });
    CHECK(views == block_typed.size());  // and every such tensor is a view (SmolLM2 has no fused maps)
    CHECK_THROWS_WITH(m.weights.output_head(), Catch::Contains("views"));
    CHECK_THROWS_WITH(require_dense(m.weights, "training"), Catch::Contains("training needs dense weights"));
}
