// The family table (model/families.hpp) against the checkpoints the peers write: every tensor that
// transformers' save_pretrained and llama.cpp's converter put into a fixture is named by a TensorNames entry
// the loader reads, so no weight of a supported family is silently left unread, and the table's keys are unique.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <sinkscope/io/gguf.hpp>
#include <sinkscope/io/safetensors.hpp>
#include <sinkscope/model/families.hpp>
#include <sinkscope/model/read_config.hpp>

#include "test_paths.hpp"

using namespace sinkscope;
using namespace sinkscope::model;

namespace {

// Every TensorNames entry the loader reads (model/parameter_table.hpp: each row's key, and the packed
// tensors' keys), so a saved tensor that no entry names is one the loader would leave unread.
std::vector<std::string TensorNames::*> read_keys() {
    std::vector<std::string TensorNames::*> keys;
    auto rows = [&](const auto& table) {
        for (const auto& r : table)
            if (r.key) keys.push_back(r.key);
    };
    rows(input_parameters<float>());
    rows(block_parameters<float>());
    rows(expert_parameters<float>());
    rows(output_parameters<float>());
    for (const Packing& p : block_packings()) {
        keys.push_back(p.key);
        if (p.bias_key) keys.push_back(p.bias_key);
    }
    for (const Packing& p : expert_packings()) keys.push_back(p.key);
    return keys;
}

// Every name those entries produce for a Config: each entry's alternatives ("a|b"), "{l}" over the layers and
// "{e}" over the experts, with `prefix` in front (the loader's optional "transformer.").
std::set<std::string> named_tensors(const TensorNames& n, const Config& c, const std::string& prefix = "") {
    std::set<std::string> out;
    for (const auto key : read_keys()) {
        const std::string& f = n.*key;
        if (f.empty()) continue;
        for (const std::string& alt : detail::alternatives(f))
            for (std::int64_t l = 0; l < c.n_layers; ++l)
                for (std::int64_t e = 0; e < std::max<std::int64_t>(c.n_experts, 1); ++e)
                    out.insert(prefix + detail::layer_name(alt, l, e));
    }
    return out;
}

const std::vector<std::string> hf_fixtures = {"gpt2", "llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3",
                                              "phi3", "olmo2", "gpt_neox", "mixtral", "olmoe", "llama31"};
const std::vector<std::string> gguf_fixtures = {"gemma2", "gemma3", "phi3", "olmo2", "gpt_neox", "mixtral", "olmoe", "llama31"};

}  // namespace

TEST_CASE("families: every tensor transformers saves for a family is one its TensorNames name", "[families]") {
    for (const std::string& kind : hf_fixtures) {
        CAPTURE(kind);
        const std::string dir = test::fixture("model/random_" + kind);
        const nlohmann::json j = detail::read_json_file(dir + "/config.json");
        const Family& fam = detail::hf_family(j, dir + "/config.json");
        const Config c = detail::hf_config(j, dir + "/config.json");
        const io::SafetensorsCheckpoint ck(dir);
        const std::set<std::string> named = named_tensors(fam.hf, c), prefixed = named_tensors(fam.hf, c, "transformer.");
        std::vector<std::string> unnamed;
        for (const std::string& t : ck.names())
            if (!named.count(t) && !prefixed.count(t)) unnamed.push_back(t);
        CAPTURE(unnamed);
        CHECK(unnamed.empty());
        CHECK(ck.names().size() > 4 * std::size_t(c.n_layers));  // the fixture holds the blocks' tensors
    }
}

TEST_CASE("families: every tensor llama.cpp's converter writes for a family is one its GGUF names name", "[families]") {
    for (const std::string& kind : gguf_fixtures) {
        CAPTURE(kind);
        const io::GgufFile f(test::fixture("model/gguf_" + kind + "/model.gguf"));
        const Config c = detail::gguf_config(f);
        const Family* fam = family_of_gguf_arch(f.metadata().at("general.architecture").get<std::string>());
        REQUIRE(fam != nullptr);
        const std::set<std::string> named = named_tensors(fam->gguf, c);
        std::vector<std::string> unnamed;
        for (const io::GgufTensor& t : f.tensors())
            if (!named.count(t.name) && t.name != "rope_freqs.weight") unnamed.push_back(t.name);  // read by read_config.hpp
        CAPTURE(unnamed);
        CHECK(unnamed.empty());
    }
}

TEST_CASE("families: names, model types and GGUF architectures are unique, and lookups find each", "[families]") {
    std::set<std::string> names, types, archs;
    for (const Family& f : families()) {
        CAPTURE(f.name);
        CHECK(names.insert(f.name).second);
        CHECK(f.hf_config != nullptr);
        CHECK(!f.hf_types.empty());
        CHECK(f.gguf_archs.empty() == (f.gguf_config == nullptr));  // a GGUF reader exactly where archs are listed
        for (const auto& t : f.hf_types) { CHECK(types.insert(t).second); CHECK(family_of_hf_type(t) == &f); }
        for (const auto& a : f.gguf_archs) { CHECK(archs.insert(a).second); CHECK(family_of_gguf_arch(a) == &f); }
        for (const auto& t : f.hf_types) CHECK(supported_names(false).find(t) != std::string::npos);
    }
    CHECK(family_of_hf_type("no_such_type") == nullptr);
    CHECK(family_of_gguf_arch("no_such_arch") == nullptr);
    // Every Hugging Face fixture's model_type is in the table.
    for (const std::string& kind : hf_fixtures) {
        const nlohmann::json j = detail::read_json_file(test::fixture("model/random_" + kind + "/config.json"));
        CHECK(family_of_hf_type(j.at("model_type").get<std::string>()) != nullptr);
    }
}
