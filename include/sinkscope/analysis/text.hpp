// From text to model inputs: the tokenizer that belongs to a loaded model, and fixed-length samples
// cut from a longer text (Gu et al. measure the sink rate on T = 64-token samples without BOS).
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/model/load.hpp"
#include "sinkscope/tokenizer/bpe.hpp"

namespace sinkscope::analysis {

// The model's own tokenizer: GGUF metadata, or tokenizer.json beside a safetensors checkpoint.
template <class T>
tokenizer::BpeTokenizer tokenizer_for(const model::LoadedModel<T>& m) {
    if (m.format == "gguf") return tokenizer::BpeTokenizer::from_gguf_metadata(m.metadata, m.path);
    const std::string json = m.path + "/tokenizer.json";
    require(std::filesystem::exists(json), "no tokenizer.json beside the checkpoint (use token ids instead)", {m.path, "", {}});
    return tokenizer::BpeTokenizer::from_hf_json(json);
}

inline std::string read_text_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    require(bool(in), "cannot open text file", {path, "", {}});
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Consecutive, non-overlapping samples of exactly `length` tokens (BOS included when `bos`), at most
// `max_samples` of them (0: as many as the text gives). A tail shorter than `length` is dropped.
inline std::vector<std::vector<std::int32_t>> token_samples(const tokenizer::BpeTokenizer& tok, const std::string& text,
                                                            std::int64_t length, std::int64_t max_samples, bool bos) {
    require(length >= 2, "token_samples: sample length must be at least 2");
    const auto ids = tok.encode(text, false);
    const std::int64_t body = bos ? length - 1 : length;
    std::vector<std::vector<std::int32_t>> out;
    for (std::int64_t start = 0; start + body <= std::int64_t(ids.size()); start += body) {
        if (max_samples > 0 && std::int64_t(out.size()) == max_samples) break;
        std::vector<std::int32_t> s;
        if (bos) {
            require(tok.bos_id().has_value(), "token_samples: the tokenizer has no BOS token");
            s.push_back(*tok.bos_id());
        }
        s.insert(s.end(), ids.begin() + start, ids.begin() + start + body);
        out.push_back(std::move(s));
    }
    return out;
}

}  // namespace sinkscope::analysis
