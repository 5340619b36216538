// Shared loaders for the tokenizer tests: the HF reference fixtures (scripts/make_tokenizer_fixtures.py)
// and tokenizers built from them once per test run.
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <rapidcheck.h>
#include <sinkscope/tokenizer.hpp>

#include "seeded_property.hpp"
#include "test_paths.hpp"

namespace sinkscope::test::tok {

inline nlohmann::json read_json(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("missing fixture " + path);
    std::ostringstream s;
    s << in.rdbuf();
    return nlohmann::json::parse(s.str());
}

/// smollm2_reference.json: texts, and per pre-tokenizer type the HF pieces and ids.
inline const nlohmann::json& reference() {
    static const nlohmann::json j = read_json(fixture("tokenizer/smollm2_reference.json"));
    return j;
}

inline const nlohmann::json& tiny_reference() {
    static const nlohmann::json j = read_json(fixture("tokenizer/tiny_reference.json"));
    return j;
}

inline std::vector<std::string> texts() { return reference().at("texts").get<std::vector<std::string>>(); }

inline std::string smollm2_json_path() { return fixture("tokenizer/smollm2/tokenizer.json"); }

/// SmolLM2 from its tokenizer.json (loaded once).
inline const tokenizer::BpeTokenizer& smollm2() {
    static const tokenizer::BpeTokenizer t = tokenizer::BpeTokenizer::from_hf_json(smollm2_json_path());
    return t;
}

/// The GGUF tokenizer metadata of SmolLM2-135M-Instruct, rebuilt from the committed tokenizer.json and
/// smollm2_gguf.json (the script checked that the GGUF's tokens and merges equal tokenizer.json's),
/// with tokenizer.ggml.pre replaced by `pre` when given.
inline nlohmann::json smollm2_gguf_metadata(const std::string& pre = "") {
    const auto spec = read_json(smollm2_json_path());
    const auto gguf = read_json(fixture("tokenizer/smollm2_gguf.json"));
    const auto& vocab = spec.at("model").at("vocab");
    const auto n = gguf.at("n_tokens").get<std::size_t>();
    std::vector<std::string> tokens(n);
    for (const auto& item : vocab.items()) tokens.at(item.value().get<std::size_t>()) = item.key();
    std::vector<int> types(n, 1);
    for (const auto& item : gguf.at("non_normal_token_types").items()) {
        types.at(std::stoul(item.key())) = item.value().get<int>();
    }
    nlohmann::json m = gguf.at("scalars");
    m["tokenizer.ggml.tokens"] = tokens;
    m["tokenizer.ggml.merges"] = spec.at("model").at("merges");
    m["tokenizer.ggml.token_type"] = types;
    if (!pre.empty()) m["tokenizer.ggml.pre"] = pre;
    return m;
}

/// check_property (seeded_property.hpp) with 1000 cases and the tokenizer tests' seed by default.
template <class Testable>
void property(const std::string& description, Testable&& testable, int cases = 1000,
              std::uint64_t seed = 20250101) {
    check_property(description, std::forward<Testable>(testable), cases, seed);
}

}  // namespace sinkscope::test::tok
