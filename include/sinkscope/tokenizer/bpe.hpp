// sinkscope::tokenizer::BpeTokenizer — byte-level BPE that reproduces Hugging Face `tokenizers` ids.
//
// encode(text) does what HF's Tokenizer::encode(text, add_special_tokens=False) does for a byte-level
// BPE model (GPT-2, SmolLM2, Llama-3, Qwen2 ...):
//   1. added tokens ("<|im_start|>", ...) are cut out whole, leftmost-longest: first those with
//      normalized=false, then, in the remaining text, those with normalized=true (HF's two passes);
//   2. every other stretch is cut into pre-tokens by the PreTokenizer regex chain (pretokenizer.hpp);
//   3. each pre-token's bytes become one symbol each (the vocabulary entry of its byte-level character;
//      a byte the vocabulary lacks is dropped, as HF does with unk_token = null, or becomes unk_token);
//      then BPE merges: repeatedly merge the adjacent pair of lowest merge rank (ties: leftmost), exactly
//      HF's Word::merge_all. With ignore_merges (Llama-3), a pre-token that is itself a vocabulary
//      entry is emitted whole.
// decode(ids) is HF's ByteLevel decoder with skip_special_tokens=False, except that it returns the raw
// bytes: HF then applies String::from_utf8_lossy (invalid UTF-8 -> U+FFFD), which would make decoding a
// single token of a multi-byte character lossy. For a token whose spelling is all in the byte alphabet
// the bytes are the alphabet's; otherwise (an added token with other characters) its UTF-8 text.
//
// Sources:
//   from_gguf_metadata: tokenizer.ggml.model == "gpt2"; tokens (their index is the id), merges ("a b" by
//     rank), token_type (3 = control and 4 = user-defined become added tokens, as transformers' GGUF
//     loader does, when all their characters are in the byte alphabet), pre (llama.cpp name, see
//     PreTokenizer::named; missing -> "gpt2", as transformers), bos/eos_token_id, add_bos_token.
//     A token with characters outside the alphabet stands for its UTF-8 bytes (transformers re-spells it).
//     pre "smollm" is Digits-then-GPT-2 as in SmolLM2's tokenizer.json on the Hub and in llama.cpp;
//     transformers' GGUF loader (5.x) has no "smollm" entry and drops the Digits step, so it differs
//     from both on text like "abc  12" (a run of spaces before a digit).
//   from_hf_json: a tokenizer.json with a BPE model and a ByteLevel pre-tokenizer (alone, after Digits, or
//     after Split regexes) and ByteLevel decoder; bos/eos from tokenizer_config.json in the same folder.
// Anything else (byte_fallback, dropout, lstrip/rstrip added tokens, add_prefix_space ...) is refused
// with an Error naming the file, never approximated.
//
// Invalid UTF-8 in the text: HF cannot receive it (Python str); encode throws Error with its byte offset.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sinkscope/core/error.hpp"
#include "sinkscope/tokenizer/byte_level.hpp"
#include "sinkscope/tokenizer/gguf_vocab.hpp"
#include "sinkscope/tokenizer/hf_special_tokens.hpp"
#include "sinkscope/tokenizer/pretokenizer.hpp"

namespace sinkscope::tokenizer {

namespace detail {

/// Largest token id accepted from a file (bounds the id -> token table; real vocabularies are < 2^19).
inline constexpr std::int64_t max_token_id = (1 << 24) - 1;

struct AddedToken {
    std::string content;
    std::int32_t id = 0;
    bool normalized = false;  // matched in HF's second pass
};

/// What a loader collects; BpeTokenizer's constructor checks and indexes it.
struct BpeSpec {
    std::string source;
    std::vector<std::string> text;                             // id -> token text ("" for a hole)
    std::vector<char> present;                                 // id -> has a token
    std::unordered_map<std::string, std::int32_t> spelling_to_id;  // BPE vocabulary, byte-level spelling
    std::vector<std::pair<std::string, std::string>> merges;   // by rank
    std::vector<AddedToken> added;
    std::optional<PreTokenizer> pre;
    std::optional<std::int32_t> bos, eos, unk;
    bool fuse_unk = false;
    bool ignore_merges = false;
    bool add_bos_default = false;

    void set_token(std::int64_t id, const std::string& t) {
        require(id >= 0 && id <= max_token_id, "token id " + std::to_string(id) + " is out of range [0, " +
                                                    std::to_string(max_token_id) + "]", {source, "", std::nullopt});
        if (static_cast<std::size_t>(id) >= text.size()) {
            text.resize(static_cast<std::size_t>(id) + 1);
            present.resize(static_cast<std::size_t>(id) + 1, 0);
        }
        text[static_cast<std::size_t>(id)] = t;
        present[static_cast<std::size_t>(id)] = 1;
    }
};

inline bool all_in_byte_alphabet(std::string_view s) { return byte_level_decode(s).has_value(); }

/// Splits a merge "a b" (exactly one space; byte-level spellings have none).
inline std::pair<std::string, std::string> split_merge(const std::string& m, std::size_t rank, const std::string& source) {
    const auto sp = m.find(' ');
    require(sp != std::string::npos && sp > 0 && sp + 1 < m.size() && m.find(' ', sp + 1) == std::string::npos,
            "merge #" + std::to_string(rank) + " '" + m + "' is not two tokens separated by one space",
            {source, "", std::nullopt});
    return {m.substr(0, sp), m.substr(sp + 1)};
}

}  // namespace detail

class BpeTokenizer {
public:
    /// From GGUF metadata parsed into JSON (io::GgufFile::metadata()). `source` names the file in errors.
    static BpeTokenizer from_gguf_metadata(const nlohmann::json& metadata, const std::string& source) {
        const detail::GgufVocabKeys keys(metadata, source);
        const Error::Where& where = keys.where();
        const auto key = [&keys](const char* k) { return keys.find(k); };
        const std::string model = keys.model();
        require(model == "gpt2", "tokenizer model '" + model + "' is not byte-level BPE ('gpt2'; tokenizer::Tokenizer also reads 'llama')",
                where);
        const nlohmann::json* tokens = &keys.tokens(std::size_t(detail::max_token_id + 1));
        const auto* merges = key("tokenizer.ggml.merges");
        require(merges != nullptr && merges->is_array(), "GGUF metadata has no array 'tokenizer.ggml.merges'", where);
        const auto* types = keys.per_token("token_type", tokens->size());

        detail::BpeSpec spec;
        spec.source = source;
        const auto n = static_cast<std::int64_t>(tokens->size());
        for (std::int64_t id = 0; id < n; ++id) {
            const auto& t = (*tokens)[static_cast<std::size_t>(id)];
            require(t.is_string(), "tokenizer.ggml.tokens[" + std::to_string(id) + "] is not a string", where);
            const auto& text = t.get_ref<const std::string&>();
            spec.set_token(id, text);
            // transformers' spelling: as is when in the byte alphabet, else the bytes of its UTF-8 re-spelled.
            const bool in_alphabet = detail::all_in_byte_alphabet(text);
            spec.spelling_to_id[in_alphabet ? text : byte_level_encode(text)] = static_cast<std::int32_t>(id);
            if (types != nullptr) {
                const auto& ty = (*types)[static_cast<std::size_t>(id)];
                require(ty.is_number_integer(), "tokenizer.ggml.token_type[" + std::to_string(id) + "] is not an integer",
                        where);
                const auto type = ty.get<std::int64_t>();
                if ((type == 3 || type == 4) && in_alphabet && !text.empty()) {  // control, user-defined
                    spec.added.push_back({text, static_cast<std::int32_t>(id), false});
                }
            }
        }
        spec.merges.reserve(merges->size());
        for (std::size_t r = 0; r < merges->size(); ++r) {
            const auto& m = (*merges)[r];
            require(m.is_string(), "tokenizer.ggml.merges[" + std::to_string(r) + "] is not a string", where);
            spec.merges.push_back(detail::split_merge(m.get_ref<const std::string&>(), r, source));
        }

        std::string pre_name = "gpt2";  // what transformers assumes without the key
        if (const auto* pre = key("tokenizer.ggml.pre")) {
            require(pre->is_string(), "tokenizer.ggml.pre is not a string", where);
            pre_name = pre->get<std::string>();
        }
        spec.pre = PreTokenizer::named(pre_name, source);
        spec.ignore_merges = PreTokenizer::is_llama3(pre_name);  // Llama-3's tokenizer.json, and llama.cpp

        const auto token_id = [&](const char* k) -> std::optional<std::int32_t> {
            const auto* v = key(k);
            if (v == nullptr) return std::nullopt;
            require(v->is_number_integer() && v->get<std::int64_t>() >= 0 && v->get<std::int64_t>() < n,
                    std::string(k) + " is not a token id in [0, " + std::to_string(n) + ")", where);
            return static_cast<std::int32_t>(v->get<std::int64_t>());
        };
        spec.bos = token_id("tokenizer.ggml.bos_token_id");
        spec.eos = token_id("tokenizer.ggml.eos_token_id");
        if (const auto* add_bos = key("tokenizer.ggml.add_bos_token")) {
            require(add_bos->is_boolean(), "tokenizer.ggml.add_bos_token is not a bool", where);
            spec.add_bos_default = add_bos->get<bool>();
        }
        return BpeTokenizer(std::move(spec));
    }

    /// From a Hugging Face tokenizer.json (see the top of this file for what is supported). BOS/EOS come
    /// from tokenizer_config.json next to it when present, else from a TemplateProcessing post-processor.
    static BpeTokenizer from_hf_json(const std::string& tokenizer_json_path) {
        const Error::Where where{tokenizer_json_path, "", std::nullopt};
        const nlohmann::json j = read_json(tokenizer_json_path);
        require(j.is_object(), "tokenizer.json is not an object", where);
        const auto& field = detail::json_field;

        // ---- model ----
        const auto& model = field(j, "model");
        require(model.is_object(), "tokenizer.json has no 'model' object", where);
        const auto& type = field(model, "type");
        require(type.is_null() || type == "BPE", "model type " + type.dump() + " is not BPE", where);
        const auto& dropout = field(model, "dropout");
        require(dropout.is_null() || (dropout.is_number() && dropout.get<double>() == 0.0),
                "BPE dropout " + dropout.dump() + " is not supported (it makes encoding random)", where);
        require(!field(model, "byte_fallback").is_boolean() || !field(model, "byte_fallback").get<bool>(),
                "BPE byte_fallback is not supported", where);
        for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"}) {
            const auto& v = field(model, k);
            require(v.is_null() || v == "", std::string("BPE ") + k + " " + v.dump() + " is not supported", where);
        }
        const auto& vocab = field(model, "vocab");
        const auto& merges = field(model, "merges");
        require(vocab.is_object() && !vocab.empty(), "BPE model has no 'vocab' object", where);
        require(merges.is_array(), "BPE model has no 'merges' array", where);

        detail::BpeSpec spec;
        spec.source = tokenizer_json_path;
        for (const auto& [spelling, id] : vocab.items()) {
            require(id.is_number_integer(), "vocab entry '" + spelling + "' has no integer id", where);
            spec.set_token(id.get<std::int64_t>(), spelling);
            spec.spelling_to_id[spelling] = static_cast<std::int32_t>(id.get<std::int64_t>());
        }
        spec.merges.reserve(merges.size());
        for (std::size_t r = 0; r < merges.size(); ++r) {
            const auto& m = merges[r];
            if (m.is_string()) {
                spec.merges.push_back(detail::split_merge(m.get<std::string>(), r, tokenizer_json_path));
            } else {
                require(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(),
                        "merge #" + std::to_string(r) + " is neither \"a b\" nor [\"a\", \"b\"]", where);
                spec.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
            }
        }
        if (const auto& unk = field(model, "unk_token"); !unk.is_null()) {
            require(unk.is_string() && spec.spelling_to_id.count(unk.get<std::string>()) != 0,
                    "unk_token " + unk.dump() + " is not in the vocabulary", where);
            spec.unk = spec.spelling_to_id.at(unk.get<std::string>());
            spec.fuse_unk = field(model, "fuse_unk").is_boolean() && field(model, "fuse_unk").get<bool>();
        }
        spec.ignore_merges = field(model, "ignore_merges").is_boolean() && field(model, "ignore_merges").get<bool>();

        // ---- added tokens ----
        for (const auto& a : detail::read_hf_added_tokens(j, where)) {
            spec.set_token(a.id, a.content);  // HF's id_to_token prefers the added vocabulary
            if (!a.content.empty()) spec.added.push_back({a.content, static_cast<std::int32_t>(a.id), a.normalized});
        }

        // ---- normalizer, pre-tokenizer, decoder ----
        const auto& normalizer = field(j, "normalizer");
        require(normalizer.is_null() || field(normalizer, "type") == "NFC",
                "normalizer " + normalizer.dump().substr(0, 200) + " is not supported", where);
        std::vector<std::string> chain;
        bool byte_level = false;
        collect_pre_tokenizer(field(j, "pre_tokenizer"), chain, byte_level, tokenizer_json_path);
        require(byte_level, "the pre-tokenizer has no ByteLevel step: not a byte-level BPE tokenizer", where);
        spec.pre = PreTokenizer(name_of_chain(chain), chain);
        const auto& decoder = field(j, "decoder");
        require(field(decoder, "type") == "ByteLevel", "decoder " + decoder.dump().substr(0, 200) +
                                                           " is not ByteLevel", where);

        // ---- BOS / EOS ----
        const auto id_of = [&](const std::string& text) -> std::optional<std::int32_t> {
            for (const auto& a : spec.added) if (a.content == text) return a.id;
            const auto it = spec.spelling_to_id.find(text);
            if (it != spec.spelling_to_id.end()) return it->second;
            return std::nullopt;
        };
        detail::HfSpecialTokens special{spec.bos, spec.eos, spec.add_bos_default};
        detail::read_hf_special_tokens(j, tokenizer_json_path, id_of, special);
        spec.bos = special.bos;
        spec.eos = special.eos;
        spec.add_bos_default = special.add_bos_default;
        return BpeTokenizer(std::move(spec));
    }

    /// Token ids of `utf8_text`, with BOS first when `add_bos` (Error if there is no BOS token).
    /// Throws Error with the byte offset if the text is not valid UTF-8.
    std::vector<std::int32_t> encode(std::string_view utf8_text, bool add_bos) const {
        if (const auto bad = first_invalid_utf8(utf8_text)) {
            throw Error("text to encode is not valid UTF-8", {source_, "", static_cast<std::uint64_t>(*bad)});
        }
        require(utf8_text.size() < (std::size_t{1} << 31), "text of " + std::to_string(utf8_text.size()) +
                                                                 " bytes is too long to encode at once (2 GiB max)",
                {source_, "", std::nullopt});
        std::vector<std::int32_t> out;
        out.reserve(utf8_text.size() / 3 + 2);
        if (add_bos) {
            require(bos_.has_value(), "add_bos requested but the tokenizer has no BOS token", {source_, "", std::nullopt});
            out.push_back(*bos_);
        }
        Scratch s;
        // Pass 1: non-normalized added tokens; pass 2 (inside what is left): normalized ones.
        for_each_segment(utf8_text, false, [&](std::string_view seg, std::int32_t added_id) {
            if (added_id >= 0) return out.push_back(added_id);
            for_each_segment(seg, true, [&](std::string_view seg2, std::int32_t added_id2) {
                if (added_id2 >= 0) return out.push_back(added_id2);
                pre_->split_valid(seg2, s.match_data.get(), s.pieces, s.scratch);
                for (const auto piece : s.pieces) bpe(piece, out, s);
            });
        });
        return out;
    }

    /// The bytes the ids stand for (special tokens included). Throws Error for an id out of range.
    std::string decode(const std::vector<std::int32_t>& ids) const {
        std::string out;
        for (const auto id : ids) out += token_bytes_[checked(id)];
        return out;
    }

    std::optional<std::int32_t> bos_id() const noexcept { return bos_; }
    std::optional<std::int32_t> eos_id() const noexcept { return eos_; }
    /// tokenizer.ggml.add_bos_token / tokenizer_config.json add_bos_token (encode still takes it explicitly).
    bool add_bos_default() const noexcept { return add_bos_default_; }
    /// Number of token ids (one more than the largest id).
    std::size_t vocab_size() const noexcept { return text_.size(); }
    /// The token as the vocabulary spells it ("Ġthe", "<|im_start|>"). Throws Error if out of range.
    const std::string& token_text(std::int32_t id) const { return text_[checked(id)]; }
    /// Pre-tokenizer type: the GGUF's tokenizer.ggml.pre, or for tokenizer.json "gpt2", "smollm",
    /// "llama-bpe", "qwen2" when the chain is one of those, else "custom".
    const std::string& pre_tokenizer() const noexcept { return pre_->name(); }
    /// Whether the pre-tokenizer regexes run JIT-compiled.
    bool regex_jit() const noexcept { return pre_->jit(); }

private:
    struct Merge {
        std::int32_t rank;
        std::int32_t result;
    };
    struct Symbol {
        std::int32_t id;    // -1 once merged into its left neighbour
        std::int32_t prev;  // index of the previous live symbol, -1 if none
        std::int32_t next;
    };
    struct Candidate {  // merge of the symbol at `pos` with its right neighbour
        std::int32_t rank, pos, left, right, result;
        bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    struct Scratch {
        detail::MatchData match_data = detail::make_match_data();
        std::vector<std::string_view> pieces, scratch;
        std::vector<Symbol> symbols;
        std::vector<Candidate> heap;
    };

    explicit BpeTokenizer(detail::BpeSpec spec)
        : source_(std::move(spec.source)), text_(std::move(spec.text)), present_(std::move(spec.present)),
          pre_(std::move(spec.pre)), bos_(spec.bos), eos_(spec.eos), unk_(spec.unk), fuse_unk_(spec.fuse_unk),
          ignore_merges_(spec.ignore_merges), add_bos_default_(spec.add_bos_default) {
        const Error::Where where{source_, "", std::nullopt};
        require(pre_.has_value(), "no pre-tokenizer", where);
        // Bytes -> initial symbol; a byte without a vocabulary entry is dropped (or unk) when met.
        for (int b = 0; b < 256; ++b) {
            std::string spelling;
            detail::append_utf8(spelling, byte_to_char(static_cast<std::uint8_t>(b)));
            const auto it = spec.spelling_to_id.find(spelling);
            byte_id_[b] = it == spec.spelling_to_id.end() ? -1 : it->second;
        }
        merges_.reserve(spec.merges.size() * 2);
        const auto id_of = [&](const std::string& s, std::size_t rank, const std::string& m) {
            const auto it = spec.spelling_to_id.find(s);
            require(it != spec.spelling_to_id.end(),
                    "merge #" + std::to_string(rank) + " '" + m + "': '" + s + "' is not in the vocabulary", where);
            return it->second;
        };
        for (std::size_t r = 0; r < spec.merges.size(); ++r) {
            const auto& [a, b] = spec.merges[r];
            const std::string m = a + " " + b;
            const auto left = id_of(a, r, m), right = id_of(b, r, m), result = id_of(a + b, r, m);
            merges_[pair_key(left, right)] = Merge{static_cast<std::int32_t>(r), result};  // a repeat: last wins, as HF
        }
        if (ignore_merges_) {
            for (const auto& [spelling, id] : spec.spelling_to_id) {
                if (auto bytes = byte_level_decode(spelling)) whole_word_[std::move(*bytes)] = id;
            }
        }
        // What decode writes for each id: HF's ByteLevel decoder on the token's text.
        token_bytes_.resize(text_.size());
        for (std::size_t id = 0; id < text_.size(); ++id) {
            auto bytes = byte_level_decode(text_[id]);
            token_bytes_[id] = bytes ? std::move(*bytes) : text_[id];
        }
        // Added tokens, by first byte, longest first (leftmost-longest matching).
        for (auto& a : spec.added) {
            auto& bucket = added_by_first_[a.normalized ? 1 : 0][static_cast<unsigned char>(a.content[0])];
            bucket.push_back(std::move(a));
        }
        for (auto& table : added_by_first_) {
            for (auto& bucket : table) {
                std::stable_sort(bucket.begin(), bucket.end(), [](const detail::AddedToken& x, const detail::AddedToken& y) {
                    return x.content.size() > y.content.size();
                });
            }
        }
    }

    static nlohmann::json read_json(const std::string& path) { return detail::read_tokenizer_json(path); }

    static void collect_pre_tokenizer(const nlohmann::json& node, std::vector<std::string>& chain, bool& byte_level,
                                      const std::string& source) {
        const Error::Where where{source, "", std::nullopt};
        require(node.is_object(), "pre_tokenizer " + node.dump().substr(0, 200) + " is not supported", where);
        const std::string type = node.value("type", "");
        require(!byte_level, "a pre-tokenizer step after ByteLevel is not supported", where);
        if (type == "Sequence") {
            require(node.contains("pretokenizers") && node["pretokenizers"].is_array(), "Sequence without 'pretokenizers'", where);
            for (const auto& step : node["pretokenizers"]) collect_pre_tokenizer(step, chain, byte_level, source);
        } else if (type == "ByteLevel") {
            require(!node.value("add_prefix_space", false), "ByteLevel add_prefix_space=true is not supported", where);
            if (node.value("use_regex", true)) chain.emplace_back(patterns::gpt2);
            byte_level = true;
        } else if (type == "Digits") {
            chain.emplace_back(node.value("individual_digits", false) ? patterns::digit : patterns::digits);
        } else if (type == "Split") {
            require(node.value("behavior", "") == "Isolated" && !node.value("invert", false),
                    "Split pre-tokenizer other than behavior=Isolated, invert=false is not supported", where);
            const auto& pattern = node.contains("pattern") ? node["pattern"] : nlohmann::json();
            if (pattern.contains("Regex") && pattern["Regex"].is_string()) {
                chain.push_back(pattern["Regex"].get<std::string>());
            } else {
                require(pattern.contains("String") && pattern["String"].is_string(), "Split without a pattern", where);
                chain.push_back(detail::escape_literal(pattern["String"].get<std::string>()));
            }
        } else {
            throw Error("pre-tokenizer type '" + type + "' is not supported", where);
        }
    }

    static std::string name_of_chain(const std::vector<std::string>& chain) {
        if (chain == std::vector<std::string>{patterns::gpt2}) return "gpt2";
        if (chain == std::vector<std::string>{patterns::digit, patterns::gpt2}) return "smollm";
        if (chain == std::vector<std::string>{patterns::llama3}) return "llama-bpe";
        if (chain == std::vector<std::string>{patterns::qwen2}) return "qwen2";
        return "custom";
    }

    static std::uint64_t pair_key(std::int32_t a, std::int32_t b) noexcept {
        return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
    }

    std::size_t checked(std::int32_t id) const {
        require(id >= 0 && static_cast<std::size_t>(id) < text_.size() && present_[static_cast<std::size_t>(id)],
                "token id " + std::to_string(id) + " is not in the vocabulary [0, " + std::to_string(text_.size()) + ")",
                {source_, "", std::nullopt});
        return static_cast<std::size_t>(id);
    }

    /// Calls f(segment, -1) for text between added tokens and f({}, id) for each added token, in order.
    template <class F>
    void for_each_segment(std::string_view text, bool normalized, F&& f) const {
        const auto& table = added_by_first_[normalized ? 1 : 0];
        std::size_t last = 0;
        for (std::size_t i = 0; i < text.size(); ++i) {
            const auto& bucket = table[static_cast<unsigned char>(text[i])];
            if (bucket.empty()) continue;
            for (const auto& a : bucket) {
                if (text.compare(i, a.content.size(), a.content) != 0) continue;
                if (i > last) f(text.substr(last, i - last), -1);
                f(std::string_view(), a.id);
                last = i + a.content.size();
                i = last - 1;
                break;
            }
        }
        if (last < text.size()) f(text.substr(last), -1);
    }

    /// BPE of one pre-token (raw bytes), appended to `out`: HF's Word::merge_all.
    void bpe(std::string_view piece, std::vector<std::int32_t>& out, Scratch& s) const {
        if (ignore_merges_) {
            const auto it = whole_word_.find(std::string(piece));
            if (it != whole_word_.end()) return out.push_back(it->second);
        }
        auto& sym = s.symbols;
        sym.clear();
        // One symbol per byte; a byte not in the vocabulary is dropped, or becomes unk (fused if asked).
        bool pending_unk = false;
        for (const unsigned char b : piece) {
            const std::int32_t id = byte_id_[b];
            if (id >= 0) {
                sym.push_back({id, 0, 0});
            } else if (unk_) {
                if (!(pending_unk && fuse_unk_)) sym.push_back({*unk_, 0, 0});
                pending_unk = true;
                continue;
            }
            pending_unk = false;
        }
        const auto n = static_cast<std::int32_t>(sym.size());
        if (n == 0) return;
        for (std::int32_t i = 0; i < n; ++i) {
            sym[i].prev = i - 1;
            sym[i].next = i + 1 < n ? i + 1 : -1;
        }
        auto& heap = s.heap;
        heap.clear();
        const auto push = [&](std::int32_t pos) {
            const std::int32_t nx = sym[pos].next;
            if (nx < 0) return;
            const auto it = merges_.find(pair_key(sym[pos].id, sym[nx].id));
            if (it == merges_.end()) return;
            heap.push_back({it->second.rank, pos, sym[pos].id, sym[nx].id, it->second.result});
            std::push_heap(heap.begin(), heap.end(), std::greater<Candidate>());
        };
        for (std::int32_t i = 0; i + 1 < n; ++i) push(i);
        while (!heap.empty()) {
            std::pop_heap(heap.begin(), heap.end(), std::greater<Candidate>());
            const Candidate c = heap.back();
            heap.pop_back();
            // Stale entry: the symbol was merged away, or it or its neighbour changed since the push.
            const std::int32_t nx = sym[c.pos].next;
            if (sym[c.pos].id != c.left || nx < 0 || sym[nx].id != c.right) continue;
            sym[c.pos].id = c.result;
            sym[c.pos].next = sym[nx].next;
            if (sym[nx].next >= 0) sym[sym[nx].next].prev = c.pos;
            sym[nx].id = -1;
            if (sym[c.pos].prev >= 0) push(sym[c.pos].prev);
            push(c.pos);
        }
        for (std::int32_t i = 0; i >= 0; i = sym[i].next) out.push_back(sym[i].id);
    }

    std::string source_;
    std::vector<std::string> text_;
    std::vector<char> present_;
    std::vector<std::string> token_bytes_;
    std::optional<PreTokenizer> pre_;
    std::optional<std::int32_t> bos_, eos_, unk_;
    bool fuse_unk_ = false;
    bool ignore_merges_ = false;
    bool add_bos_default_ = false;
    std::array<std::int32_t, 256> byte_id_{};
    std::unordered_map<std::uint64_t, Merge> merges_;
    std::unordered_map<std::string, std::int32_t> whole_word_;  // raw bytes -> id (ignore_merges only)
    std::array<std::array<std::vector<detail::AddedToken>, 256>, 2> added_by_first_;
};

}  // namespace sinkscope::tokenizer
