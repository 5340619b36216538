#pragma once
// The tokenizer keys of a GGUF file's metadata (llama.cpp's names: tokenizer.ggml.model, .tokens,
// .token_type, ...), looked up and checked the same way by both GGUF tokenizer readers (bpe.hpp for
// 'gpt2', sentencepiece.hpp for 'llama'). Every Error names the file.
#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sinkscope/core/error.hpp"

namespace sinkscope::tokenizer::detail {

class GgufVocabKeys {
public:
    /// `metadata`: io::GgufFile::metadata(), which must outlive this object; `source` names the file.
    GgufVocabKeys(const nlohmann::json& metadata, const std::string& source)
        : metadata_(metadata), where_{source, "", std::nullopt} {
        require(metadata.is_object(), "GGUF metadata is not an object", where_);
    }
    const Error::Where& where() const { return where_; }

    /// The value of key `k`, or null when the metadata lacks it.
    const nlohmann::json* find(const char* k) const {
        const auto it = metadata_.find(k);
        return it == metadata_.end() ? nullptr : &*it;
    }
    /// tokenizer.ggml.model, which must be a string.
    std::string model() const {
        const auto* m = find("tokenizer.ggml.model");
        require(m != nullptr && m->is_string(), "GGUF metadata has no string 'tokenizer.ggml.model'", where_);
        return m->get<std::string>();
    }
    /// tokenizer.ggml.tokens: a non-empty array of at most `max_entries` entries (entries checked by the caller).
    const nlohmann::json& tokens(std::size_t max_entries) const {
        const auto* t = find("tokenizer.ggml.tokens");
        require(t != nullptr && t->is_array() && !t->empty(), "GGUF metadata has no array 'tokenizer.ggml.tokens'", where_);
        require(t->size() <= max_entries, "tokenizer.ggml.tokens has " + std::to_string(t->size()) + " entries, too many", where_);
        return *t;
    }
    /// An optional per-token array (tokenizer.ggml.`name`: scores, token_type): null when absent, else an
    /// array with one entry per token.
    const nlohmann::json* per_token(const char* name, std::size_t n_tokens) const {
        const std::string k = std::string("tokenizer.ggml.") + name;
        const auto* a = find(k.c_str());
        require(a == nullptr || (a->is_array() && a->size() == n_tokens),
                k + " is not an array as long as tokenizer.ggml.tokens", where_);
        return a;
    }

private:
    const nlohmann::json& metadata_;
    Error::Where where_;
};

}  // namespace sinkscope::tokenizer::detail
