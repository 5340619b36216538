// sinkscope::tokenizer::Tokenizer — a model's tokenizer, whichever kind its file describes:
//
//   GGUF tokenizer.ggml.model "gpt2"            byte-level BPE      (BpeTokenizer, bpe.hpp)
//   GGUF tokenizer.ggml.model "llama"           SentencePiece       (SentencePieceTokenizer, sentencepiece.hpp)
//   tokenizer.json BPE without byte_fallback    byte-level BPE
//   tokenizer.json Unigram, or BPE with byte_fallback   SentencePiece
//
// Any other kind ("bert" WordPiece, "t5" Unigram-in-GGUF, "rwkv" ...) is an Error naming it.
#pragma once

#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "sinkscope/core/error.hpp"
#include "sinkscope/tokenizer/bpe.hpp"
#include "sinkscope/tokenizer/sentencepiece.hpp"

namespace sinkscope::tokenizer {

class Tokenizer {
public:
    Tokenizer(BpeTokenizer t) : impl_(std::move(t)) {}             // NOLINT: a Tokenizer is either kind
    Tokenizer(SentencePieceTokenizer t) : impl_(std::move(t)) {}   // NOLINT

    /// From GGUF metadata parsed into JSON (io::GgufFile::metadata()); `source` names the file in errors.
    static Tokenizer from_gguf_metadata(const nlohmann::json& metadata, const std::string& source) {
        const Error::Where where{source, "", std::nullopt};
        const auto it = metadata.is_object() ? metadata.find("tokenizer.ggml.model") : metadata.end();
        require(it != metadata.end() && it->is_string(), "GGUF metadata has no string 'tokenizer.ggml.model'", where);
        const auto& kind = it->get_ref<const std::string&>();
        if (kind == "gpt2") return BpeTokenizer::from_gguf_metadata(metadata, source);
        if (kind == "llama") return SentencePieceTokenizer::from_gguf_metadata(metadata, source);
        throw Error("tokenizer model '" + kind + "' is not supported (supported: 'gpt2' byte-level BPE, 'llama' SentencePiece)",
                    where);
    }

    /// From a Hugging Face tokenizer.json (and tokenizer_config.json beside it).
    static Tokenizer from_hf_json(const std::string& tokenizer_json_path) {
        const Error::Where where{tokenizer_json_path, "", std::nullopt};
        std::string type;
        bool byte_fallback = false;
        {
            std::ifstream in(tokenizer_json_path, std::ios::binary);
            require(in.good(), "cannot open file", where);
            std::ostringstream buf;
            buf << in.rdbuf();
            nlohmann::json j;
            try {
                j = nlohmann::json::parse(buf.str());
            } catch (const nlohmann::json::parse_error& e) {
                throw Error(std::string("invalid JSON: ") + e.what(), {tokenizer_json_path, "", static_cast<std::uint64_t>(e.byte)});
            }
            const auto model = j.is_object() ? j.find("model") : j.end();
            require(model != j.end() && model->is_object(), "tokenizer.json has no 'model' object", where);
            const auto t = model->find("type");
            type = t == model->end() ? "BPE" : t->is_string() ? t->get<std::string>() : t->dump();  // HF: no type = BPE
            const auto bf = model->find("byte_fallback");
            byte_fallback = bf != model->end() && bf->is_boolean() && bf->get<bool>();
        }
        if (type == "Unigram" || (type == "BPE" && byte_fallback)) return SentencePieceTokenizer::from_hf_json(tokenizer_json_path);
        if (type == "BPE") return BpeTokenizer::from_hf_json(tokenizer_json_path);
        throw Error("tokenizer.json model type '" + type +
                        "' is not supported (supported: byte-level BPE, SentencePiece Unigram, BPE with byte_fallback)",
                    where);
    }

    std::vector<std::int32_t> encode(std::string_view utf8_text, bool add_bos) const {
        return std::visit([&](const auto& t) { return t.encode(utf8_text, add_bos); }, impl_);
    }
    std::string decode(const std::vector<std::int32_t>& ids) const {
        return std::visit([&](const auto& t) { return t.decode(ids); }, impl_);
    }
    std::optional<std::int32_t> bos_id() const noexcept { return std::visit([](const auto& t) { return t.bos_id(); }, impl_); }
    std::optional<std::int32_t> eos_id() const noexcept { return std::visit([](const auto& t) { return t.eos_id(); }, impl_); }
    bool add_bos_default() const noexcept { return std::visit([](const auto& t) { return t.add_bos_default(); }, impl_); }
    std::size_t vocab_size() const noexcept { return std::visit([](const auto& t) { return t.vocab_size(); }, impl_); }
    const std::string& token_text(std::int32_t id) const {
        return std::visit([&](const auto& t) -> const std::string& { return t.token_text(id); }, impl_);
    }
    /// One line for people: "byte-level BPE, pre-tokenizer 'smollm'" or "SentencePiece Unigram".
    std::string describe() const {
        if (const auto* b = bpe()) return "byte-level BPE, pre-tokenizer '" + b->pre_tokenizer() + "'";
        return "SentencePiece " + sentencepiece()->model_name();
    }

    /// The underlying tokenizer of one kind, or nullptr.
    const BpeTokenizer* bpe() const noexcept { return std::get_if<BpeTokenizer>(&impl_); }
    const SentencePieceTokenizer* sentencepiece() const noexcept { return std::get_if<SentencePieceTokenizer>(&impl_); }

private:
    std::variant<BpeTokenizer, SentencePieceTokenizer> impl_;
};

}  // namespace sinkscope::tokenizer
