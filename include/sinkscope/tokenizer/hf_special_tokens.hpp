#pragma once
// BOS, EOS and the add-BOS default of a Hugging Face tokenizer, read the same way by both tokenizer.json
// readers (bpe.hpp: byte-level BPE; sentencepiece.hpp: Unigram / BPE with byte fallback):
//   1. a TemplateProcessing post-processor whose `single` template starts with a SpecialToken names BOS,
//      and BOS is then added by default (that is what the template does);
//   2. tokenizer_config.json next to tokenizer.json, when present, overrides: `bos_token` / `eos_token`
//      ("<s>" or {"content": "<s>", ...}) must be tokens, and a boolean `add_bos_token` sets the default.
// Also what else both read the same way: the JSON file (an Error names the file and the byte offset of a
// parse error), a field of an object, and the `added_tokens` list.
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sinkscope/core/error.hpp"

namespace sinkscope::tokenizer::detail {

/// The whole JSON file at `path`.
inline nlohmann::json read_tokenizer_json(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    require(in.good(), "cannot open file", {path, "", std::nullopt});
    std::ostringstream buf;
    buf << in.rdbuf();
    try {
        return nlohmann::json::parse(buf.str());
    } catch (const nlohmann::json::parse_error& e) {
        throw Error(std::string("invalid JSON: ") + e.what(), {path, "", static_cast<std::uint64_t>(e.byte)});
    }
}

/// o[k], or a null value when o is not an object or has no key k.
inline const nlohmann::json& json_field(const nlohmann::json& o, const char* k) {
    static const nlohmann::json null_value;
    if (!o.is_object()) return null_value;
    const auto it = o.find(k);
    return it == o.end() ? null_value : *it;
}

struct HfAddedToken {
    std::string content;
    std::int64_t id = 0;
    bool normalized = false;  // looked for in the normalized text
    bool special = false;
};

/// tokenizer.json's `added_tokens` (none when absent): each needs an integer `id` and a string `content`;
/// `single_word`, `lstrip` and `rstrip` = true are refused (not supported), naming the token.
inline std::vector<HfAddedToken> read_hf_added_tokens(const nlohmann::json& tokenizer_json, const Error::Where& where) {
    std::vector<HfAddedToken> out;
    const auto& added = json_field(tokenizer_json, "added_tokens");
    if (added.is_null()) return out;
    require(added.is_array(), "'added_tokens' is not an array", where);
    for (const auto& a : added) {
        require(a.is_object() && json_field(a, "id").is_number_integer() && json_field(a, "content").is_string(),
                "an added token lacks an integer 'id' or a string 'content'", where);
        HfAddedToken t;
        t.content = json_field(a, "content").get<std::string>();
        for (const char* flag : {"single_word", "lstrip", "rstrip"}) {
            require(!json_field(a, flag).is_boolean() || !json_field(a, flag).get<bool>(),
                    "added token '" + t.content + "': " + flag + "=true is not supported", where);
        }
        t.id = json_field(a, "id").get<std::int64_t>();
        t.normalized = json_field(a, "normalized").is_boolean() && json_field(a, "normalized").get<bool>();
        t.special = json_field(a, "special").is_boolean() && json_field(a, "special").get<bool>();
        out.push_back(std::move(t));
    }
    return out;
}

struct HfSpecialTokens {
    std::optional<std::int32_t> bos, eos;
    bool add_bos_default = false;
};

/// Updates `tokens` from tokenizer.json's post-processor and tokenizer_config.json (rules 1 and 2 above).
/// `id_of(text)` gives the id of a token's text, or nullopt.
template <class IdOf>
void read_hf_special_tokens(const nlohmann::json& tokenizer_json, const std::string& tokenizer_json_path,
                            const IdOf& id_of, HfSpecialTokens& tokens) {
    const auto& field = json_field;
    const auto& post = field(tokenizer_json, "post_processor");
    if (field(post, "type") == "TemplateProcessing") {
        const auto& single = field(post, "single");
        if (single.is_array() && !single.empty() && single[0].contains("SpecialToken")) {
            const auto& st = single[0]["SpecialToken"];
            if (st.contains("id") && st["id"].is_string()) {
                tokens.bos = id_of(st["id"].template get<std::string>());
                tokens.add_bos_default = tokens.bos.has_value();
            }
        }
    }
    const auto slash = tokenizer_json_path.find_last_of('/');
    const std::string config_path =
        (slash == std::string::npos ? std::string() : tokenizer_json_path.substr(0, slash + 1)) + "tokenizer_config.json";
    if (!std::ifstream(config_path).good()) return;
    const nlohmann::json config = read_tokenizer_json(config_path);
    const auto special = [&](const char* k) -> std::optional<std::string> {
        const auto& v = field(config, k);
        if (v.is_string()) return v.template get<std::string>();
        if (v.is_object() && field(v, "content").is_string()) return field(v, "content").template get<std::string>();
        return std::nullopt;
    };
    const auto lookup = [&](const char* k) -> std::optional<std::int32_t> {
        const auto text = special(k);
        if (!text) return std::nullopt;
        const auto id = id_of(*text);
        require(id.has_value(), std::string(k) + " '" + *text + "' is not a token", {config_path, "", std::nullopt});
        return id;
    };
    if (auto b = lookup("bos_token")) tokens.bos = b;
    if (auto e = lookup("eos_token")) tokens.eos = e;  // absent: the caller's, as for BOS
    if (field(config, "add_bos_token").is_boolean()) tokens.add_bos_default = field(config, "add_bos_token").template get<bool>();
}

}  // namespace sinkscope::tokenizer::detail
