// model/read_config.hpp: a checkpoint's Config. The peer is llama.cpp's converter: each gguf_<family>
// fixture is the random_<family> Hugging Face model converted by convert_hf_to_gguf.py, so the Config read
// from its GGUF metadata must equal the one read from its config.json, field by field, except where the
// converter cannot say the same thing (listed per family below, with the reason).
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <set>
#include <string>

#include <sinkscope/io/gguf.hpp>
#include <sinkscope/model/config_io.hpp>
#include <sinkscope/model/read_config.hpp>

#include "test_paths.hpp"

using namespace sinkscope;
using namespace sinkscope::model;

namespace {

Config hf_fixture_config(const std::string& kind) {
    const std::string path = test::fixture("model/random_" + kind + "/config.json");
    return detail::hf_config(detail::read_json_file(path), path);
}

Config gguf_fixture_config(const std::string& kind) {
    return detail::gguf_config(io::GgufFile(test::fixture("model/gguf_" + kind + "/model.gguf")));
}

}  // namespace

TEST_CASE("read_config: the GGUF converted from a Hugging Face model reads as the same Config", "[read_config]") {
    // GGUF stores floating-point metadata as float32, so real-valued fields agree to float32 rounding.
    // Fields where the two files cannot agree, by family:
    //   mixtral: llama.cpp writes Mixtral as architecture "llama" with expert_count;
    //   mixtral, llama31 (architecture "llama"): the converter permutes Q and K rows for llama.cpp's
    //           interleaved rotation, so the same rotation reads as rope_layout interleaved;
    //   gemma2: the GGUF fixture was made with query_pre_attn_scalar = d_h (llama.cpp derives the scale from
    //           the layer count; the Hugging Face fixture uses 24), so the attention scale differs by design.
    // gemma3's GGUF fixture has another layer count and sliding pattern (llama.cpp's fixed period of 6), so it
    // has no Hugging Face twin and is checked by test_reference's logits instead.
    const std::map<std::string, std::set<std::string>> expected_differences = {
        {"mixtral", {"architecture", "rope_layout"}}, {"llama31", {"rope_layout"}}, {"gemma2", {"attn_scale"}}};
    for (const std::string kind : {"gemma2", "phi3", "olmo2", "gpt_neox", "mixtral", "olmoe", "llama31"}) {
        CAPTURE(kind);
        const nlohmann::json hf = config_to_json(hf_fixture_config(kind));
        const nlohmann::json gg = config_to_json(gguf_fixture_config(kind));
        std::set<std::string> differ;
        for (auto it = hf.begin(); it != hf.end(); ++it) {
            const nlohmann::json& a = it.value();
            const nlohmann::json& b = gg.at(it.key());
            if (it.key() == "rope_freq_divisors" && a.is_array() && b.is_array() && a.size() == b.size()) {
                // The Hugging Face reader keeps double divisors of float32 frequencies; the GGUF stores float32
                // divisors: equal to float32 rounding.
                for (std::size_t i = 0; i < a.size(); ++i)
                    if (std::abs(a[i].get<double>() - b[i].get<double>()) > 1e-6 * std::abs(a[i].get<double>()))
                        differ.insert(it.key());
                continue;
            }
            if (a.is_number_float() && b.is_number_float()) {
                if (float(a.get<double>()) != float(b.get<double>())) differ.insert(it.key());
                continue;
            }
            if (a != b) differ.insert(it.key());
        }
        const auto want = expected_differences.count(kind) ? expected_differences.at(kind) : std::set<std::string>{};
        INFO("Hugging Face: " << hf.dump() << "\nGGUF: " << gg.dump());
        CHECK(differ == want);
    }
}

TEST_CASE("read_config: Llama 3.1's divisors reach the Config from both formats", "[read_config]") {
    const Config hf = hf_fixture_config("llama31"), gg = gguf_fixture_config("llama31");
    REQUIRE(hf.rope_freq_divisors.size() == std::size_t(hf.rope_dims() / 2));
    REQUIRE(gg.rope_freq_divisors.size() == hf.rope_freq_divisors.size());
    // The fixture's frequencies span all three regimes: kept (1), divided by the factor (8), and smoothed.
    CHECK(hf.rope_freq_divisors.front() == 1.0);
    CHECK(std::abs(hf.rope_freq_divisors.back() - 8.0) < 1e-5);
}

TEST_CASE("read_config: a config.json without a known model_type is an error naming the file and the choices", "[read_config]") {
    const std::string path = "some/dir/config.json";
    try {
        (void)detail::hf_config(nlohmann::json{{"model_type", "no_such_family"}}, path);
        FAIL("no error");
    } catch (const Error& e) {
        const std::string what = e.what();
        CHECK(what.find(path) != std::string::npos);
        CHECK(what.find("no_such_family") != std::string::npos);
        CHECK(what.find("llama") != std::string::npos);  // the supported types are listed
    }
    CHECK_THROWS_WITH(detail::hf_config(nlohmann::json::object(), path),
                      Catch::Contains("model_type") && Catch::Contains(path));
    // A known family with a required key missing names the key.
    CHECK_THROWS_WITH(detail::hf_config(nlohmann::json{{"model_type", "llama"}}, path),
                      Catch::Contains("num_hidden_layers") && Catch::Contains(path));
}
