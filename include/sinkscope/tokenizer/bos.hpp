// sinkscope::tokenizer — a checkpoint's own BOS convention, read from its files without building a tokenizer:
// the BOS token id, and whether the model's tokenizer puts BOS first by default (add_bos_token). The second is
// how the model is meant to be used, and the best proxy the files give for how it was trained.
//
// Where each comes from:
//   GGUF          tokenizer.ggml.bos_token_id (an id below the vocabulary size when tokenizer.ggml.tokens is
//                 there) and tokenizer.ggml.add_bos_token (a bool). When the key is absent, llama.cpp (the
//                 format's reference runtime) puts BOS first for SentencePiece vocabularies
//                 (tokenizer.ggml.model = "llama"), and so does sinkscope, saying so in the source; for every
//                 other vocabulary an absent key is recorded as absent, and analysis::resolve_bos reads it as
//                 "no BOS".
//   Hugging Face  tokenizer_config.json: bos_token (a string or {"content": ...}) and add_bos_token (a bool);
//   directory     tokenizer.json: the id of that token (added_tokens, then model.vocab), and, when
//                 tokenizer_config.json has no add_bos_token, a TemplateProcessing post-processor whose
//                 single-sequence template opens with a special token (Llama-3 puts BOS first this way);
//                 config.json: bos_token_id, used when the tokenizer files name no BOS token.
// Every value carries a sentence saying where it was read (file and key), or why it is absent.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sinkscope/core/error.hpp"

namespace sinkscope::tokenizer {

/// What a checkpoint's files say about BOS.
struct BosConvention {
    std::optional<std::int32_t> id;  // the BOS token id, when the files name one
    std::string id_source;           // where `id` was read, or "absent: ..."
    std::optional<bool> add_bos;     // the tokenizer's add_bos_token, when the files say
    std::string add_source;          // where `add_bos` was read, or "absent: ..."
    std::string file;                // the file (GGUF) or directory (Hugging Face) read, for messages
};

namespace detail {

inline nlohmann::json read_json_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    require(bool(in), "cannot open JSON file", {path, "", std::nullopt});
    try {
        return nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw Error(std::string("invalid JSON: ") + e.what(), {path, "", std::nullopt});
    }
}

inline const nlohmann::json* find_key(const nlohmann::json& o, const char* k) {
    if (!o.is_object()) return nullptr;
    const auto it = o.find(k);
    return it == o.end() || it->is_null() ? nullptr : &*it;
}

// The text of a special token in tokenizer_config.json: "<s>" or {"content": "<s>", ...}.
inline std::optional<std::string> special_token_text(const nlohmann::json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
    return std::nullopt;
}

// The id of token `text` in a tokenizer.json: added tokens first (HF prefers them), then the model's vocabulary.
inline std::optional<std::int32_t> token_id_in(const nlohmann::json& tokenizer_json, const std::string& text) {
    if (const auto* added = find_key(tokenizer_json, "added_tokens"); added && added->is_array()) {
        for (const auto& a : *added) {
            if (a.is_object() && a.value("content", std::string()) == text && a.contains("id") && a["id"].is_number_integer())
                return std::int32_t(a["id"].get<std::int64_t>());
        }
    }
    if (const auto* m = find_key(tokenizer_json, "model")) {
        if (const auto* vocab = find_key(*m, "vocab"); vocab && vocab->is_object()) {
            const auto it = vocab->find(text);
            if (it != vocab->end() && it->is_number_integer()) return std::int32_t(it->get<std::int64_t>());
        }
    }
    return std::nullopt;
}

}  // namespace detail

/// From GGUF metadata (io::GgufFile::metadata(), model::LoadedModel::metadata); `path` names the file.
inline BosConvention bos_from_gguf_metadata(const nlohmann::json& metadata, const std::string& path) {
    const Error::Where where{path, "", std::nullopt};
    BosConvention b;
    b.file = path;
    std::int64_t n_vocab = -1;
    if (const auto* tokens = detail::find_key(metadata, "tokenizer.ggml.tokens"); tokens && tokens->is_array())
        n_vocab = std::int64_t(tokens->size());
    if (const auto* id = detail::find_key(metadata, "tokenizer.ggml.bos_token_id")) {
        require(id->is_number_integer() && id->get<std::int64_t>() >= 0 && (n_vocab < 0 || id->get<std::int64_t>() < n_vocab),
                "tokenizer.ggml.bos_token_id " + id->dump() + " is not a token id" +
                    (n_vocab >= 0 ? " in [0, " + std::to_string(n_vocab) + ")" : std::string()),
                where);
        b.id = std::int32_t(id->get<std::int64_t>());
        b.id_source = "tokenizer.ggml.bos_token_id in " + path;
    } else {
        b.id_source = "absent: no tokenizer.ggml.bos_token_id key in " + path;
    }
    if (const auto* add = detail::find_key(metadata, "tokenizer.ggml.add_bos_token")) {
        require(add->is_boolean(), "tokenizer.ggml.add_bos_token " + add->dump() + " is not a bool", where);
        b.add_bos = add->get<bool>();
        b.add_source = std::string("tokenizer.ggml.add_bos_token = ") + (*b.add_bos ? "true" : "false") + " in " + path;
    } else if (const auto* kind = detail::find_key(metadata, "tokenizer.ggml.model"); kind && kind->is_string() &&
                                                                                     kind->get<std::string>() == "llama") {
        b.add_bos = true;  // llama.cpp's default for an SPM vocabulary without the key
        b.add_source = "absent: no tokenizer.ggml.add_bos_token key in " + path +
                       "; llama.cpp's default for tokenizer model 'llama' (SentencePiece): BOS first";
    } else {
        b.add_source = "absent: no tokenizer.ggml.add_bos_token key in " + path;
    }
    return b;
}

/// From a Hugging Face checkpoint directory: tokenizer_config.json, tokenizer.json and config.json (each optional).
inline BosConvention bos_from_hf_dir(const std::string& dir) {
    namespace fs = std::filesystem;
    BosConvention b;
    b.file = dir;
    const std::string tc_path = (fs::path(dir) / "tokenizer_config.json").string();
    const std::string tj_path = (fs::path(dir) / "tokenizer.json").string();
    const std::string cfg_path = (fs::path(dir) / "config.json").string();
    const bool has_tc = fs::is_regular_file(tc_path), has_tj = fs::is_regular_file(tj_path), has_cfg = fs::is_regular_file(cfg_path);
    const nlohmann::json tc = has_tc ? detail::read_json_file(tc_path) : nlohmann::json::object();
    const nlohmann::json tj = has_tj ? detail::read_json_file(tj_path) : nlohmann::json::object();
    const nlohmann::json cfg = has_cfg ? detail::read_json_file(cfg_path) : nlohmann::json::object();

    // The id: tokenizer_config.json's bos_token looked up in tokenizer.json, else config.json's bos_token_id.
    if (const auto* t = detail::find_key(tc, "bos_token")) {
        const auto text = detail::special_token_text(*t);
        require(text.has_value(), "bos_token " + t->dump() + " is neither a string nor {\"content\": ...}", {tc_path, "", std::nullopt});
        if (has_tj) {
            const auto id = detail::token_id_in(tj, *text);
            require(id.has_value(), "bos_token '" + *text + "' is not a token of " + tj_path, {tc_path, "", std::nullopt});
            b.id = id;
            b.id_source = "bos_token '" + *text + "' in " + tc_path + ", its id in " + tj_path;
        }
    }
    if (!b.id) {
        if (const auto* id = detail::find_key(cfg, "bos_token_id")) {
            require(id->is_number_integer() && id->get<std::int64_t>() >= 0, "bos_token_id " + id->dump() + " is not a token id",
                    {cfg_path, "", std::nullopt});
            b.id = std::int32_t(id->get<std::int64_t>());
            b.id_source = "bos_token_id in " + cfg_path;
        } else {
            b.id_source = "absent: no bos_token in " + (has_tc ? tc_path : dir + " (no tokenizer_config.json)") +
                          " and no bos_token_id in " + (has_cfg ? cfg_path : dir + " (no config.json)");
        }
    }

    // Whether the tokenizer puts BOS first: add_bos_token, else tokenizer.json's post-processor.
    if (const auto* add = detail::find_key(tc, "add_bos_token")) {
        require(add->is_boolean(), "add_bos_token " + add->dump() + " is not a bool", {tc_path, "", std::nullopt});
        b.add_bos = add->get<bool>();
        b.add_source = std::string("add_bos_token = ") + (*b.add_bos ? "true" : "false") + " in " + tc_path;
        return b;
    }
    const auto* post = detail::find_key(tj, "post_processor");
    if (post && post->is_object() && post->value("type", std::string()) == "TemplateProcessing") {
        const auto* single = detail::find_key(*post, "single");
        if (single && single->is_array() && !single->empty() && (*single)[0].is_object() && (*single)[0].contains("SpecialToken")) {
            const auto& st = (*single)[0]["SpecialToken"];
            const std::string text = st.is_object() ? st.value("id", std::string()) : std::string();
            const auto id = detail::token_id_in(tj, text);
            require(id.has_value(), "the post-processor's first special token '" + text + "' is not a token", {tj_path, "", std::nullopt});
            if (!b.id || *b.id == *id) {
                b.add_bos = true;
                b.add_source = "tokenizer.json's TemplateProcessing post-processor opens every sequence with '" + text + "' in " + tj_path;
                if (!b.id) { b.id = id; b.id_source = "the post-processor's first special token '" + text + "' in " + tj_path; }
                return b;
            }
        }
    }
    b.add_source = "absent: no add_bos_token key in " + (has_tc ? tc_path : dir + " (no tokenizer_config.json)") +
                   (has_tj ? ", and no post-processor that puts BOS first in " + tj_path : std::string());
    return b;
}

}  // namespace sinkscope::tokenizer
