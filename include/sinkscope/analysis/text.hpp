// From text to model inputs: the tokenizer that belongs to a loaded model, and fixed-length samples
// cut from a longer text (Gu et al. measure the sink rate on T = 64-token samples without BOS), and
// fixed token sequences read from a file (models without a usable tokenizer; null controls).
#pragma once

#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/model/load.hpp"
#include "sinkscope/tokenizer/tokenizer.hpp"

namespace sinkscope::analysis {

// The model's own tokenizer (byte-level BPE or SentencePiece): GGUF metadata, or tokenizer.json beside a
// safetensors checkpoint.
template <class T>
tokenizer::Tokenizer tokenizer_for(const model::LoadedModel<T>& m) {
    if (m.format == "gguf") return tokenizer::Tokenizer::from_gguf_metadata(m.metadata, m.path);
    const std::string json = m.path + "/tokenizer.json";
    require(std::filesystem::exists(json), "no tokenizer.json beside the checkpoint (use token ids instead)", {m.path, "", {}});
    return tokenizer::Tokenizer::from_hf_json(json);
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
inline std::vector<std::vector<std::int32_t>> token_samples(const tokenizer::Tokenizer& tok, const std::string& text,
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

// Token ids from a text file: one sequence per line, ids separated by spaces and/or commas; blank
// lines and lines starting with '#' are skipped. Every id must lie in [0, vocab_size) when vocab_size
// > 0. Errors name the file and the line (as "line N" in the tensor field) and the byte offset.
inline std::vector<std::vector<std::int32_t>> read_token_file(const std::string& path, std::int64_t vocab_size = 0) {
    const std::string text = read_text_file(path);
    std::vector<std::vector<std::int32_t>> out;
    std::size_t pos = 0;
    std::int64_t line_no = 0;
    while (pos < text.size()) {
        const std::size_t end = std::min(text.find('\n', pos), text.size());
        const std::string line = text.substr(pos, end - pos);
        ++line_no;
        const std::string where = "line " + std::to_string(line_no);
        std::vector<std::int32_t> seq;
        std::size_t i = 0;
        while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
        if (i < line.size() && line[i] != '#') {
            while (i < line.size()) {
                const unsigned char ch = static_cast<unsigned char>(line[i]);
                if (std::isspace(ch) || ch == ',') { ++i; continue; }
                require(std::isdigit(ch), std::string("token file: expected a non-negative integer id, found '") + char(ch) + "'",
                        {path, where, std::uint64_t(pos + i)});
                std::int64_t v = 0;
                const std::size_t start = i;
                while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) {
                    v = v * 10 + (line[i] - '0');
                    require(v <= INT32_MAX, "token file: id too large", {path, where, std::uint64_t(pos + start)});
                    ++i;
                }
                require(vocab_size <= 0 || v < vocab_size,
                        "token file: id " + std::to_string(v) + " outside the vocabulary [0, " + std::to_string(vocab_size) + ")",
                        {path, where, std::uint64_t(pos + start)});
                seq.push_back(std::int32_t(v));
            }
        }
        if (!seq.empty()) out.push_back(std::move(seq));
        pos = end + 1;
    }
    require(!out.empty(), "token file has no sequence", {path, "", {}});
    return out;
}

}  // namespace sinkscope::analysis
