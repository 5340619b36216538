// sinkscope::tokenizer::SentencePieceTokenizer — SentencePiece vocabularies (Llama-2, TinyLlama, llama2.c
// stories ...) from GGUF (`tokenizer.ggml.model = "llama"`) or from a Hugging Face tokenizer.json with a
// Unigram model or a BPE model with byte_fallback.
//
// Pieces spell a space as "▁" (U+2581). A piece of type byte, "<0xNN>", stands for the byte NN; text that
// no piece covers falls back to those bytes (byte_fallback). Encoding one stretch of text (between added
// tokens, see below) is, by source:
//
//   GGUF "llama" (llama.cpp's SPM tokenizer, llm_tokenizer_spm): the dummy prefix " " is put in front
//     when tokenizer.ggml.add_space_prefix (default true), every ' ' becomes "▁", then, starting from one
//     symbol per UTF-8 character, the adjacent pair whose concatenation is a token of highest score is
//     merged, repeatedly (ties: leftmost); a final symbol that is no token becomes its byte tokens.
//     This is SentencePiece's BPE encoding; llama.cpp runs it on every "llama" vocabulary, also on one
//     trained as a Unigram model (SentencePiece would use Viterbi there; llama.cpp does not).
//   tokenizer.json Unigram (HF `tokenizers`' Unigram::encode_optimized): Viterbi over all vocabulary
//     entries, maximizing the sum of piece scores (log-probabilities):
//         best(j) = max over pieces p = text[i..j) of best(i) + score(p),
//     a character no piece starts with costs min_score - 10 as the unknown token; adjacent unknowns are
//     fused; with byte_fallback an unknown stretch becomes its byte tokens.
//   tokenizer.json BPE (HF's BPE with byte_fallback): one symbol per character (a character that is no
//     token becomes its byte tokens), then the merges of lowest rank first (ties: leftmost), as HF's
//     Word::merge_all.
//   Before the model, tokenizer.json's normalizer (null, Sequence, Prepend, Replace with a string
//   pattern) and pre-tokenizer (null, Sequence, Metaspace) are applied as HF applies them; any other
//   (NFKC, Precompiled, a Regex ...) is refused with an Error naming it, never approximated.
//
// Added tokens are cut out of the text whole first, leftmost-longest: GGUF tokens of type unknown (2),
// control (3) and user-defined (4), as llama.cpp does with special-token parsing on and as HF does with
// the same vocabulary converted by transformers; tokenizer.json's added_tokens. The dummy prefix is put in
// front of every stretch of text between them (llama.cpp, HF's Prepend normalizer, Metaspace "always"),
// or only in front of a stretch at the very start of the text (Metaspace "first").
//
// decode(ids) inverts encode: pieces with "▁" read as spaces, byte tokens as their bytes (raw bytes, not
// made valid UTF-8), added tokens as their text, and the dummy-prefix space dropped where encode put one
// in front of a stretch (the first character of the decoded stretch, when it is a space). So
// decode(encode(x)) == x for all text without "▁" (which every SentencePiece tokenizer decodes as a
// space), except where HF's Metaspace keeps no dummy prefix in front of a
// stretch that starts with a space (then that space is lost, as in HF's own decode), where "▁" is no piece
// (its byte tokens decode to "▁", as sentencepiece, HF and llama.cpp decode them), or where the unknown token
// replaced text (no byte fallback).
//
// Invalid UTF-8 in the text: encode throws Error with its byte offset (as BpeTokenizer).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
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

namespace sinkscope::tokenizer {

/// SentencePiece's piece types (sentencepiece_model.proto), also GGUF's tokenizer.ggml.token_type.
enum class PieceType : std::int8_t { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

namespace detail {

/// "▁" (U+2581 LOWER ONE EIGHTH BLOCK), SentencePiece's spelling of a space.
inline constexpr std::string_view sp_space = "\xE2\x96\x81";

inline std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
    if (from.empty()) return std::string(text);
    std::string out;
    out.reserve(text.size() + text.size() / 4);
    std::size_t pos = 0;
    for (std::size_t hit; (hit = text.find(from, pos)) != std::string_view::npos; pos = hit + from.size()) {
        out.append(text.substr(pos, hit - pos));
        out.append(to);
    }
    out.append(text.substr(pos));
    return out;
}

/// "<0xNN>" (upper-case hex, as SentencePiece and llama.cpp spell byte pieces) for byte b.
inline std::string byte_piece(unsigned char b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", static_cast<unsigned>(b));
    return buf;
}

}  // namespace detail

class SentencePieceTokenizer {
public:
    /// How a stretch of text becomes pieces (see the top of this file).
    enum class Algorithm { score_merges, unigram, rank_merges };
    /// Where the dummy prefix goes: in front of every stretch between added tokens, only in front of a
    /// stretch at the start of the text, or nowhere.
    enum class Prefix { every_stretch, first_stretch, none };

    /// From GGUF metadata parsed into JSON (io::GgufFile::metadata()), tokenizer.ggml.model == "llama".
    static SentencePieceTokenizer from_gguf_metadata(const nlohmann::json& metadata, const std::string& source) {
        const detail::GgufVocabKeys keys(metadata, source);
        const Error::Where& where = keys.where();
        const auto key = [&keys](const char* k) { return keys.find(k); };
        const std::string model = keys.model();
        require(model == "llama", "tokenizer model '" + model + "' is not SentencePiece ('llama')", where);
        const nlohmann::json* tokens = &keys.tokens(max_vocab);
        const auto* scores = keys.per_token("scores", tokens->size());
        const auto* types = keys.per_token("token_type", tokens->size());
        SentencePieceTokenizer t;
        t.source_ = source;
        t.algorithm_ = Algorithm::score_merges;
        const auto n = tokens->size();
        t.pieces_.resize(n);
        for (std::size_t id = 0; id < n; ++id) {
            auto& p = t.pieces_[id];
            const auto& tok = (*tokens)[id];
            require(tok.is_string(), "tokenizer.ggml.tokens[" + std::to_string(id) + "] is not a string", where);
            p.text = tok.get<std::string>();
            p.present = true;
            if (scores != nullptr) {
                require((*scores)[id].is_number(), "tokenizer.ggml.scores[" + std::to_string(id) + "] is not a number", where);
                p.score = (*scores)[id].get<double>();
            }
            if (types != nullptr) {
                const auto& ty = (*types)[id];
                require(ty.is_number_integer() && ty.get<std::int64_t>() >= 1 && ty.get<std::int64_t>() <= 6,
                        "tokenizer.ggml.token_type[" + std::to_string(id) + "] is not a type in 1..6", where);
                p.type = static_cast<PieceType>(ty.get<std::int64_t>());
            }
        }
        const auto token_id = [&](const char* k) -> std::optional<std::int32_t> {
            const auto* v = key(k);
            if (v == nullptr) return std::nullopt;
            require(v->is_number_integer() && v->get<std::int64_t>() >= 0 && v->get<std::uint64_t>() < n,
                    std::string(k) + " is not a token id in [0, " + std::to_string(n) + ")", where);
            return static_cast<std::int32_t>(v->get<std::int64_t>());
        };
        const auto flag = [&](const char* k, bool absent) {
            const auto* v = key(k);
            if (v == nullptr) return absent;
            require(v->is_boolean(), std::string(k) + " is not a bool", where);
            return v->get<bool>();
        };
        t.bos_ = token_id("tokenizer.ggml.bos_token_id");
        t.eos_ = token_id("tokenizer.ggml.eos_token_id");
        t.unk_ = token_id("tokenizer.ggml.unknown_token_id");
        t.add_bos_default_ = flag("tokenizer.ggml.add_bos_token", true);  // llama.cpp's default for SPM
        t.prefix_ = flag("tokenizer.ggml.add_space_prefix", true) ? Prefix::every_stretch : Prefix::none;
        // Cut out whole: unknown, control and user-defined tokens (llama.cpp's special-token partition).
        for (std::size_t id = 0; id < n; ++id) {
            const auto type = t.pieces_[id].type;
            if (type == PieceType::unknown || type == PieceType::control || type == PieceType::user_defined) {
                t.added_.push_back({t.pieces_[id].text, static_cast<std::int32_t>(id)});
            }
        }
        t.finish();
        return t;
    }

    /// From a Hugging Face tokenizer.json with a Unigram model, or a BPE model with byte_fallback = true.
    /// BOS/EOS as BpeTokenizer::from_hf_json: tokenizer_config.json beside it, else the post-processor.
    static SentencePieceTokenizer from_hf_json(const std::string& tokenizer_json_path) {
        const Error::Where where{tokenizer_json_path, "", std::nullopt};
        const nlohmann::json j = read_json(tokenizer_json_path);
        require(j.is_object(), "tokenizer.json is not an object", where);
        const auto& model = field(j, "model");
        require(model.is_object(), "tokenizer.json has no 'model' object", where);
        const auto& type = field(model, "type");
        SentencePieceTokenizer t;
        t.source_ = tokenizer_json_path;
        t.byte_fallback_ = field(model, "byte_fallback").is_boolean() && field(model, "byte_fallback").get<bool>();
        std::unordered_map<std::string, std::int32_t> vocab_ids;
        if (type == "Unigram") {
            t.algorithm_ = Algorithm::unigram;
            const auto& vocab = field(model, "vocab");
            require(vocab.is_array() && !vocab.empty() && vocab.size() <= max_vocab, "Unigram model has no 'vocab' array", where);
            t.pieces_.resize(vocab.size());
            for (std::size_t id = 0; id < vocab.size(); ++id) {
                const auto& e = vocab[id];
                require(e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_number(),
                        "Unigram vocab entry #" + std::to_string(id) + " is not [piece, score]", where);
                t.pieces_[id].text = e[0].get<std::string>();
                t.pieces_[id].score = e[1].get<double>();
                t.pieces_[id].present = true;
                vocab_ids[t.pieces_[id].text] = static_cast<std::int32_t>(id);  // a repeat: the last wins, as HF
            }
            if (const auto& unk = field(model, "unk_id"); !unk.is_null()) {
                require(unk.is_number_integer() && unk.get<std::int64_t>() >= 0 && unk.get<std::uint64_t>() < vocab.size(),
                        "Unigram unk_id " + unk.dump() + " is not a token id", where);
                t.unk_ = static_cast<std::int32_t>(unk.get<std::int64_t>());
            }
        } else if (type == "BPE") {
            t.algorithm_ = Algorithm::rank_merges;
            require(t.byte_fallback_, "BPE model without byte_fallback: not a SentencePiece tokenizer", where);
            const auto& dropout = field(model, "dropout");
            require(dropout.is_null() || (dropout.is_number() && dropout.get<double>() == 0.0),
                    "BPE dropout " + dropout.dump() + " is not supported (it makes encoding random)", where);
            for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"}) {
                const auto& v = field(model, k);
                require(v.is_null() || v == "", std::string("BPE ") + k + " " + v.dump() + " is not supported", where);
            }
            const auto& vocab = field(model, "vocab");
            require(vocab.is_object() && !vocab.empty() && vocab.size() <= max_vocab, "BPE model has no 'vocab' object", where);
            for (const auto& [piece, id] : vocab.items()) {
                require(id.is_number_integer() && id.get<std::int64_t>() >= 0 && id.get<std::uint64_t>() < max_vocab,
                        "vocab entry '" + piece + "' has no valid integer id", where);
                const auto i = id.get<std::size_t>();
                if (i >= t.pieces_.size()) t.pieces_.resize(i + 1);
                t.pieces_[i].text = piece;
                t.pieces_[i].present = true;
                vocab_ids[piece] = static_cast<std::int32_t>(i);
            }
            const auto& merges = field(model, "merges");
            require(merges.is_array(), "BPE model has no 'merges' array", where);
            const auto id_of = [&](const std::string& s, std::size_t rank) {
                const auto it = vocab_ids.find(s);
                require(it != vocab_ids.end(), "merge #" + std::to_string(rank) + ": '" + s + "' is not in the vocabulary", where);
                return it->second;
            };
            for (std::size_t r = 0; r < merges.size(); ++r) {
                const auto& m = merges[r];
                std::string a, b;
                if (m.is_string()) {
                    const auto& s = m.get_ref<const std::string&>();
                    const auto sp = s.find(' ');
                    require(sp != std::string::npos && s.find(' ', sp + 1) == std::string::npos,
                            "merge #" + std::to_string(r) + " '" + s + "' is not two pieces separated by one space", where);
                    a = s.substr(0, sp);
                    b = s.substr(sp + 1);
                } else {
                    require(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(),
                            "merge #" + std::to_string(r) + " is neither \"a b\" nor [\"a\", \"b\"]", where);
                    a = m[0].get<std::string>();
                    b = m[1].get<std::string>();
                }
                const auto left = id_of(a, r), right = id_of(b, r), result = id_of(a + b, r);
                t.merges_[pair_key(left, right)] = Merge{static_cast<std::int32_t>(r), result};  // a repeat: the last wins, as HF
            }
            if (const auto& unk = field(model, "unk_token"); !unk.is_null()) {
                require(unk.is_string() && vocab_ids.count(unk.get<std::string>()) != 0,
                        "unk_token " + unk.dump() + " is not in the vocabulary", where);
                t.unk_ = vocab_ids.at(unk.get<std::string>());
            }
            t.vocab_ = vocab_ids;
            t.fuse_unk_ = field(model, "fuse_unk").is_boolean() && field(model, "fuse_unk").get<bool>();
            t.ignore_merges_ = field(model, "ignore_merges").is_boolean() && field(model, "ignore_merges").get<bool>();
        } else {
            throw Error("tokenizer.json model type " + type.dump() + " is not SentencePiece (Unigram, or BPE with byte_fallback)",
                        where);
        }
        // Piece types: bytes by spelling, added tokens below.
        for (auto& p : t.pieces_) {
            if (p.text.size() == 6 && p.text.rfind("<0x", 0) == 0 && p.text[5] == '>' && hex_value(p.text.substr(3, 2)) >= 0) {
                p.type = PieceType::byte;
            }
        }

        // ---- added tokens ----
        for (const auto& a : detail::read_hf_added_tokens(j, where)) {
            // A normalized added token is looked for in the normalized text; where normalizing only
            // prepends and replaces spaces, that is the same place in the raw text for a token
            // without spaces and "▁".
            require(!a.normalized || (a.content.find(' ') == std::string::npos && a.content.find(detail::sp_space) == std::string::npos),
                    "added token '" + a.content + "' with normalized=true and a space is not supported", where);
            require(a.id >= 0 && static_cast<std::uint64_t>(a.id) < max_vocab, "added token '" + a.content + "' has a bad id", where);
            if (static_cast<std::size_t>(a.id) >= t.pieces_.size()) t.pieces_.resize(static_cast<std::size_t>(a.id) + 1);
            auto& p = t.pieces_[static_cast<std::size_t>(a.id)];
            p.text = a.content;
            p.present = true;
            p.type = a.special ? PieceType::control : PieceType::user_defined;
            if (!a.content.empty()) t.added_.push_back({a.content, static_cast<std::int32_t>(a.id)});
        }
        if (t.unk_ && t.pieces_[static_cast<std::size_t>(*t.unk_)].type == PieceType::normal) {
            t.pieces_[static_cast<std::size_t>(*t.unk_)].type = PieceType::unknown;
        }

        // ---- normalizer, pre-tokenizer ----
        t.prefix_ = Prefix::none;
        collect_normalizer(field(j, "normalizer"), t, where);
        collect_pre_tokenizer(field(j, "pre_tokenizer"), t, where);

        // ---- BOS / EOS / add_bos ----
        const auto id_of = [&](const std::string& text) -> std::optional<std::int32_t> {
            for (const auto& a : t.added_) if (a.text == text) return a.id;
            const auto it = vocab_ids.find(text);
            if (it != vocab_ids.end()) return it->second;
            return std::nullopt;
        };
        detail::HfSpecialTokens special{t.bos_, t.eos_, t.add_bos_default_};
        detail::read_hf_special_tokens(j, tokenizer_json_path, id_of, special);
        t.bos_ = special.bos;
        t.eos_ = special.eos;
        t.add_bos_default_ = special.add_bos_default;
        t.finish();
        return t;
    }

    /// Token ids of `utf8_text`, with BOS first when `add_bos` (Error if there is no BOS token).
    std::vector<std::int32_t> encode(std::string_view utf8_text, bool add_bos) const {
        if (const auto bad = first_invalid_utf8(utf8_text)) {
            throw Error("text to encode is not valid UTF-8", {source_, "", static_cast<std::uint64_t>(*bad)});
        }
        require(utf8_text.size() < (std::size_t{1} << 30), "text of " + std::to_string(utf8_text.size()) +
                                                                 " bytes is too long to encode at once (1 GiB max)",
                {source_, "", std::nullopt});
        std::vector<std::int32_t> out;
        if (add_bos) {
            require(bos_.has_value(), "add_bos requested but the tokenizer has no BOS token", {source_, "", std::nullopt});
            out.push_back(*bos_);
        }
        std::size_t last = 0;
        const auto stretch = [&](std::size_t end) {
            if (end > last) encode_stretch(utf8_text.substr(last, end - last), last == 0, out);
        };
        for (std::size_t i = 0; i < utf8_text.size(); ++i) {
            const auto& bucket = added_by_first_[static_cast<unsigned char>(utf8_text[i])];
            for (const auto& a : bucket) {
                if (utf8_text.compare(i, a.text.size(), a.text) != 0) continue;
                stretch(i);
                out.push_back(a.id);
                last = i + a.text.size();
                i = last - 1;
                break;
            }
        }
        stretch(utf8_text.size());
        return out;
    }

    /// The bytes the ids stand for (see the top of this file). Throws Error for an id out of range.
    std::string decode(const std::vector<std::int32_t>& ids) const {
        std::string out;
        bool stretch_start = prefix_ != Prefix::none;  // where encode put a dummy prefix
        for (const auto id : ids) {
            const auto& p = pieces_[checked(id)];
            if (is_added_[static_cast<std::size_t>(id)]) {
                out += p.text;
                stretch_start = prefix_ == Prefix::every_stretch;
                continue;
            }
            const std::string& bytes = piece_bytes_[static_cast<std::size_t>(id)];
            std::size_t skip = 0;
            if (stretch_start && !bytes.empty()) {
                if (bytes[0] == ' ') skip = 1;
                stretch_start = false;
            }
            out.append(bytes, skip, std::string::npos);
        }
        return out;
    }

    std::optional<std::int32_t> bos_id() const noexcept { return bos_; }
    std::optional<std::int32_t> eos_id() const noexcept { return eos_; }
    std::optional<std::int32_t> unk_id() const noexcept { return unk_; }
    /// tokenizer.ggml.add_bos_token (llama.cpp: true when absent) / tokenizer_config.json add_bos_token.
    bool add_bos_default() const noexcept { return add_bos_default_; }
    std::size_t vocab_size() const noexcept { return pieces_.size(); }
    /// The piece as the vocabulary spells it ("▁the", "<0x0A>", "<s>"). Throws Error if out of range.
    const std::string& token_text(std::int32_t id) const { return pieces_[checked(id)].text; }
    PieceType token_type(std::int32_t id) const { return pieces_[checked(id)].type; }
    Algorithm algorithm() const noexcept { return algorithm_; }
    Prefix dummy_prefix() const noexcept { return prefix_; }
    /// "llama (merges by score)", "Unigram" or "BPE (byte fallback)".
    std::string model_name() const {
        switch (algorithm_) {
            case Algorithm::score_merges: return "llama (merges by score)";
            case Algorithm::unigram: return "Unigram";
            default: return "BPE (byte fallback)";
        }
    }

private:
    static constexpr std::size_t max_vocab = std::size_t{1} << 24;

    struct Piece {
        std::string text;
        double score = 0.0;
        PieceType type = PieceType::normal;
        bool present = false;
    };
    struct Added {
        std::string text;
        std::int32_t id;
    };
    struct Merge {
        std::int32_t rank, result;
    };
    /// A normalizer step of tokenizer.json: prepend `text`, or replace every `from` by `text`.
    struct Normalize {
        bool prepend;
        std::string from, text;
    };

    SentencePieceTokenizer() = default;

    static const nlohmann::json& field(const nlohmann::json& o, const char* k) { return detail::json_field(o, k); }

    static nlohmann::json read_json(const std::string& path) { return detail::read_tokenizer_json(path); }

    static int hex_value(std::string_view two) {
        int v = 0;
        for (const char c : two) {
            v <<= 4;
            if (c >= '0' && c <= '9') v |= c - '0';
            else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
            else return -1;  // SentencePiece writes upper case only
        }
        return v;
    }

    static void collect_normalizer(const nlohmann::json& node, SentencePieceTokenizer& t, const Error::Where& where) {
        if (node.is_null()) return;
        const auto type = field(node, "type");
        if (type == "Sequence") {
            require(field(node, "normalizers").is_array(), "normalizer Sequence without 'normalizers'", where);
            for (const auto& step : field(node, "normalizers")) collect_normalizer(step, t, where);
        } else if (type == "Prepend") {
            require(field(node, "prepend").is_string(), "normalizer Prepend without a string 'prepend'", where);
            t.normalize_.push_back({true, "", field(node, "prepend").get<std::string>()});
            t.prefix_ = Prefix::every_stretch;  // HF normalizes each stretch between added tokens
        } else if (type == "Replace") {
            const auto& pattern = field(node, "pattern");
            require(field(pattern, "String").is_string() && field(node, "content").is_string(),
                    "normalizer Replace with pattern " + pattern.dump() + " is not supported (only a String pattern is)", where);
            t.normalize_.push_back({false, field(pattern, "String").get<std::string>(), field(node, "content").get<std::string>()});
        } else {
            throw Error("normalizer " + (type.is_string() ? type.get<std::string>() : node.dump().substr(0, 200)) +
                            " not supported",
                        where);
        }
    }

    static void collect_pre_tokenizer(const nlohmann::json& node, SentencePieceTokenizer& t, const Error::Where& where) {
        if (node.is_null()) return;
        const auto type = field(node, "type");
        if (type == "Sequence") {
            require(field(node, "pretokenizers").is_array(), "pre-tokenizer Sequence without 'pretokenizers'", where);
            for (const auto& step : field(node, "pretokenizers")) collect_pre_tokenizer(step, t, where);
        } else if (type == "Metaspace") {
            require(!t.metaspace_, "more than one Metaspace pre-tokenizer is not supported", where);
            const auto& replacement = field(node, "replacement");
            require(replacement.is_string() && !replacement.get<std::string>().empty(), "Metaspace without a replacement", where);
            t.metaspace_ = replacement.get<std::string>();
            // prepend_scheme (tokenizers >= 0.15), else add_prefix_space (older files).
            std::string scheme = "always";
            if (field(node, "prepend_scheme").is_string()) scheme = field(node, "prepend_scheme").get<std::string>();
            else if (field(node, "add_prefix_space").is_boolean() && !field(node, "add_prefix_space").get<bool>()) scheme = "never";
            require(scheme == "always" || scheme == "first" || scheme == "never",
                    "Metaspace prepend_scheme '" + scheme + "' is not supported", where);
            require(t.prefix_ == Prefix::none || scheme == "never", "a Prepend normalizer and a Metaspace prefix together are not supported",
                    where);
            if (scheme != "never") t.prefix_ = scheme == "always" ? Prefix::every_stretch : Prefix::first_stretch;
            t.metaspace_split_ = !field(node, "split").is_boolean() || field(node, "split").get<bool>();
        } else {
            throw Error("pre-tokenizer " + (type.is_string() ? type.get<std::string>() : node.dump().substr(0, 200)) +
                            " is not supported with a SentencePiece model",
                        where);
        }
    }

    static std::uint64_t pair_key(std::int32_t a, std::int32_t b) noexcept {
        return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
    }

    std::size_t checked(std::int32_t id) const {
        require(id >= 0 && static_cast<std::size_t>(id) < pieces_.size() && pieces_[static_cast<std::size_t>(id)].present,
                "token id " + std::to_string(id) + " is not in the vocabulary [0, " + std::to_string(pieces_.size()) + ")",
                {source_, "", std::nullopt});
        return static_cast<std::size_t>(id);
    }

    /// Indexes built once the pieces are known.
    void finish() {
        const Error::Where where{source_, "", std::nullopt};
        for (auto& a : added_) {
            auto& bucket = added_by_first_[static_cast<unsigned char>(a.text[0])];
            bucket.push_back(a);
        }
        for (auto& bucket : added_by_first_) {
            std::stable_sort(bucket.begin(), bucket.end(), [](const Added& x, const Added& y) { return x.text.size() > y.text.size(); });
        }
        is_added_.assign(pieces_.size(), 0);
        for (const auto& a : added_) is_added_[static_cast<std::size_t>(a.id)] = 1;
        byte_id_.fill(-1);
        piece_bytes_.resize(pieces_.size());
        const std::string space_spelling = metaspace_ ? *metaspace_ : std::string(detail::sp_space);
        for (std::size_t id = 0; id < pieces_.size(); ++id) {
            const auto& p = pieces_[id];
            if (!p.present) continue;
            if (algorithm_ != Algorithm::rank_merges) {
                token_to_id_[p.text] = static_cast<std::int32_t>(id);  // a repeat: the last wins (llama.cpp, HF)
                max_piece_bytes_ = std::max(max_piece_bytes_, p.text.size());
            }
            if (p.type == PieceType::byte) {
                require(p.text.size() == 6 && p.text.rfind("<0x", 0) == 0 && p.text[5] == '>' && hex_value(p.text.substr(3, 2)) >= 0,
                        "byte token #" + std::to_string(id) + " '" + p.text + "' is not <0xNN>", where);
                const int b = hex_value(p.text.substr(3, 2));
                if (byte_id_[static_cast<std::size_t>(b)] < 0) byte_id_[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(id);
                piece_bytes_[id] = std::string(1, static_cast<char>(b));
            } else if (is_added_[id]) {
                piece_bytes_[id] = p.text;
            } else {
                piece_bytes_[id] = detail::replace_all(p.text, space_spelling, " ");
            }
        }
        if (algorithm_ == Algorithm::unigram) {
            min_score_ = std::numeric_limits<double>::infinity();
            for (const auto& p : pieces_) min_score_ = std::min(min_score_, p.score);
        }
    }

    /// One stretch of text between added tokens; `at_start`: it begins the text.
    void encode_stretch(std::string_view raw, bool at_start, std::vector<std::int32_t>& out) const {
        std::string text;
        if (algorithm_ == Algorithm::score_merges) {  // llama.cpp: " " + text, then ' ' -> "▁"
            text = detail::replace_all(prefix_ == Prefix::every_stretch ? " " + std::string(raw) : std::string(raw), " ",
                                       detail::sp_space);
            return score_merges(text, out);
        }
        text = std::string(raw);
        for (const auto& step : normalize_) {
            if (step.prepend) {
                if (!text.empty()) text = step.text + text;
            } else {
                text = detail::replace_all(text, step.from, step.text);
            }
        }
        if (metaspace_) {  // HF Metaspace: spaces -> replacement; the prefix unless already there
            text = detail::replace_all(text, " ", *metaspace_);
            const bool prepend = prefix_ == Prefix::every_stretch || (prefix_ == Prefix::first_stretch && at_start);
            if (prepend && text.rfind(*metaspace_, 0) != 0) text = *metaspace_ + text;
            if (metaspace_split_) {  // each replacement starts a new word (MergedWithNext)
                std::size_t begin = 0;
                for (std::size_t hit = text.find(*metaspace_, 1); hit != std::string::npos;
                     hit = text.find(*metaspace_, hit + metaspace_->size())) {
                    if (hit > begin) model(std::string_view(text).substr(begin, hit - begin), out);
                    begin = hit;
                }
                return model(std::string_view(text).substr(begin), out);
            }
        }
        model(text, out);
    }

    void model(std::string_view word, std::vector<std::int32_t>& out) const {
        if (word.empty()) return;
        if (algorithm_ == Algorithm::unigram) return unigram(word, out);
        rank_merges(word, out);
    }

    /// Bytes of `s` as byte tokens; where one is missing, the unknown token (Error without one).
    void push_bytes(std::string_view s, std::vector<std::int32_t>& out) const {
        for (const unsigned char b : s) {
            if (byte_id_[b] >= 0) {
                out.push_back(byte_id_[b]);
            } else {
                require(unk_.has_value(), "byte " + detail::byte_piece(b) + " has no token and there is no unknown token",
                        {source_, "", std::nullopt});
                out.push_back(*unk_);
            }
        }
    }

    /// llama.cpp's llm_tokenizer_spm_session::tokenize: merges the adjacent pair of highest score.
    void score_merges(std::string_view text, std::vector<std::int32_t>& out) const {
        struct Symbol {
            std::int32_t prev, next;
            std::uint32_t begin, n;  // bytes text[begin, begin + n); n = 0 once merged away
        };
        struct Bigram {
            double score;
            std::int32_t left, right;
            std::uint32_t size;
            bool operator<(const Bigram& o) const {  // top of the queue: highest score, then leftmost
                return score < o.score || (score == o.score && left > o.left);
            }
        };
        std::vector<Symbol> sym;
        for (std::size_t i = 0; i < text.size();) {
            const auto len = static_cast<std::uint32_t>(detail::utf8_sequence_length(text, i));  // text is valid UTF-8
            const auto index = static_cast<std::int32_t>(sym.size());
            sym.push_back({index - 1, i + len == text.size() ? -1 : index + 1, static_cast<std::uint32_t>(i), len});
            i += len;
        }
        if (sym.empty()) return;
        std::priority_queue<Bigram> queue;
        const auto try_add = [&](std::int32_t left, std::int32_t right) {
            if (left < 0 || right < 0) return;
            const auto size = sym[left].n + sym[right].n;
            const auto it = token_to_id_.find(std::string(text.substr(sym[left].begin, size)));
            if (it == token_to_id_.end()) return;
            queue.push({pieces_[static_cast<std::size_t>(it->second)].score, left, right, size});
        };
        for (std::int32_t i = 1; i < static_cast<std::int32_t>(sym.size()); ++i) try_add(i - 1, i);
        while (!queue.empty()) {
            const Bigram b = queue.top();
            queue.pop();
            auto& l = sym[b.left];
            auto& r = sym[b.right];
            if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;  // stale: a side was merged since
            l.n += r.n;
            r.n = 0;
            l.next = r.next;
            if (r.next >= 0) sym[r.next].prev = b.left;
            try_add(l.prev, b.left);
            try_add(b.left, l.next);
        }
        for (std::int32_t i = 0; i != -1; i = sym[i].next) {
            const auto piece = text.substr(sym[i].begin, sym[i].n);
            const auto it = token_to_id_.find(std::string(piece));
            if (it != token_to_id_.end()) out.push_back(it->second);
            else push_bytes(piece, out);  // a character that is no token (merges only make tokens)
        }
    }

    /// HF Unigram::encode_optimized (Viterbi, fused unknowns), then byte fallback.
    void unigram(std::string_view text, std::vector<std::int32_t>& out) const {
        struct Node {
            double score = 0.0;
            std::int64_t starts_at = -1;
            std::int32_t id = -1;
        };
        const double unk_score = min_score_ - 10.0;  // HF's K_UNK_PENALTY
        std::vector<Node> best(text.size() + 1);
        std::string key;
        for (std::size_t start = 0; start < text.size();) {
            const double till_here = best[start].score;
            const std::size_t char_len = detail::utf8_sequence_length(text, start);
            bool has_single = false;
            // Every vocabulary entry that starts here, shortest first (HF's trie common-prefix search).
            for (std::size_t len = char_len; start + len <= text.size() && len <= max_piece_bytes_;) {
                key.assign(text.substr(start, len));
                const auto it = token_to_id_.find(key);
                if (it != token_to_id_.end()) {
                    auto& node = best[start + len];
                    const double candidate = pieces_[static_cast<std::size_t>(it->second)].score + till_here;
                    if (node.starts_at < 0 || candidate > node.score) node = {candidate, static_cast<std::int64_t>(start), it->second};
                    if (len == char_len) has_single = true;
                }
                if (start + len >= text.size()) break;
                len += detail::utf8_sequence_length(text, start + len);
            }
            if (!has_single) {
                auto& node = best[start + char_len];
                const double candidate = unk_score + till_here;
                if (node.starts_at < 0 || candidate > node.score) node = {candidate, static_cast<std::int64_t>(start), unk_.value_or(-1)};
            }
            start += char_len;
        }
        // Back from the end: (begin, end, id) pieces, adjacent unknowns fused into one.
        std::vector<std::pair<std::size_t, std::size_t>> spans;
        std::vector<std::int32_t> ids;
        for (std::size_t end = text.size(); end > 0;) {
            const auto& node = best[end];
            const auto begin = static_cast<std::size_t>(node.starts_at);
            const bool unknown = node.id < 0 || (unk_ && node.id == *unk_);
            if (unknown && !ids.empty() && ids.back() == -1) {
                spans.back().first = begin;
            } else {
                spans.push_back({begin, end});
                ids.push_back(unknown ? -1 : node.id);
            }
            end = begin;
        }
        for (std::size_t k = spans.size(); k-- > 0;) {
            if (ids[k] >= 0) {
                out.push_back(ids[k]);
                continue;
            }
            const auto piece = text.substr(spans[k].first, spans[k].second - spans[k].first);
            const auto it = token_to_id_.find(std::string(piece));  // a fused "<unk>" is the token itself
            if (it != token_to_id_.end()) out.push_back(it->second);
            else if (byte_fallback_ && all_bytes_known(piece)) push_bytes(piece, out);
            else {
                require(unk_.has_value(), "text has a character that is no token and there is no unknown token",
                        {source_, "", std::nullopt});
                out.push_back(*unk_);
            }
        }
    }

    bool all_bytes_known(std::string_view s) const {
        return std::all_of(s.begin(), s.end(), [&](char c) { return byte_id_[static_cast<unsigned char>(c)] >= 0; });
    }

    /// HF BPE::merge_word with byte_fallback, then Word::merge_all (lowest rank first, ties leftmost).
    void rank_merges(std::string_view word, std::vector<std::int32_t>& out) const {
        if (ignore_merges_) {
            const auto it = vocab_.find(std::string(word));
            if (it != vocab_.end()) return out.push_back(it->second);
        }
        std::vector<std::int32_t> ids;
        bool previous_unk = false;
        for (std::size_t i = 0; i < word.size();) {
            const std::size_t len = detail::utf8_sequence_length(word, i);
            const auto ch = word.substr(i, len);
            i += len;
            const auto it = vocab_.find(std::string(ch));
            if (it != vocab_.end()) {
                ids.push_back(it->second);
                previous_unk = false;
            } else if (all_bytes_known(ch)) {  // byte_fallback
                for (const unsigned char b : ch) ids.push_back(byte_id_[b]);
                previous_unk = false;
            } else if (unk_) {
                if (!(previous_unk && fuse_unk_)) ids.push_back(*unk_);
                previous_unk = true;
            }
        }
        // Merge in place: a heap of (rank, position) over a linked list of symbols.
        struct Candidate {
            std::int32_t rank, pos, left, right, result;
            bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
        };
        const auto n = static_cast<std::int32_t>(ids.size());
        std::vector<std::int32_t> prev(ids.size()), next(ids.size());
        for (std::int32_t i = 0; i < n; ++i) {
            prev[i] = i - 1;
            next[i] = i + 1 < n ? i + 1 : -1;
        }
        std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
        const auto push = [&](std::int32_t pos) {
            if (pos < 0 || next[pos] < 0) return;
            const auto it = merges_.find(pair_key(ids[pos], ids[next[pos]]));
            if (it != merges_.end()) heap.push({it->second.rank, pos, ids[pos], ids[next[pos]], it->second.result});
        };
        for (std::int32_t i = 0; i + 1 < n; ++i) push(i);
        while (!heap.empty()) {
            const Candidate c = heap.top();
            heap.pop();
            const std::int32_t nx = next[c.pos];
            if (ids[c.pos] != c.left || nx < 0 || ids[nx] != c.right) continue;  // stale
            ids[c.pos] = c.result;
            next[c.pos] = next[nx];
            if (next[nx] >= 0) prev[next[nx]] = c.pos;
            ids[nx] = -1;
            push(prev[c.pos]);
            push(c.pos);
        }
        for (std::int32_t i = 0; i >= 0 && n > 0; i = next[i]) out.push_back(ids[i]);
    }

    std::string source_;
    Algorithm algorithm_ = Algorithm::score_merges;
    Prefix prefix_ = Prefix::every_stretch;
    std::vector<Piece> pieces_;
    std::vector<Added> added_;
    std::array<std::vector<Added>, 256> added_by_first_;
    std::vector<char> is_added_;
    std::vector<std::string> piece_bytes_;
    std::unordered_map<std::string, std::int32_t> token_to_id_;  // score merges, Unigram: every piece
    std::size_t max_piece_bytes_ = 0;
    std::unordered_map<std::string, std::int32_t> vocab_;  // BPE: the model's vocabulary
    std::unordered_map<std::uint64_t, Merge> merges_;
    std::array<std::int32_t, 256> byte_id_{};
    std::vector<Normalize> normalize_;
    std::optional<std::string> metaspace_;
    bool metaspace_split_ = false;
    std::optional<std::int32_t> bos_, eos_, unk_;
    bool byte_fallback_ = true;
    bool fuse_unk_ = false;
    bool ignore_merges_ = false;
    bool add_bos_default_ = false;
    double min_score_ = 0.0;
};

}  // namespace sinkscope::tokenizer
