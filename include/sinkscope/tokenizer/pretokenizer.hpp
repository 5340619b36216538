// sinkscope::tokenizer::PreTokenizer — cuts text into pre-tokens before BPE, with the regexes Hugging Face
// tokenizers (and llama.cpp) use, run by PCRE2 (UTF + UCP mode, JIT-compiled when available).
//
// A pre-tokenizer is a list of regexes applied in turn. Each one splits every current piece the way HF's
// `Split(pattern, behavior="Isolated")` does: each match is a piece, and so is each stretch between two
// matches. The chains of the llama.cpp `tokenizer.ggml.pre` types this file knows:
//
//   "gpt2"                         [GPT-2]        HF: ByteLevel(use_regex=true)
//   "smollm", "starcoder"          [\p{N}, GPT-2] HF: Sequence[Digits(individual_digits), ByteLevel(use_regex)]
//   "llama-bpe", "llama3", ...     [Llama-3]      HF: Sequence[Split(Llama-3 regex), ByteLevel(use_regex=false)]
//   "qwen2", "deepseek-r1-qwen"    [Qwen2]        HF: Sequence[Split(Qwen2 regex),   ByteLevel(use_regex=false)]
//
// Where PCRE2 and HF's Oniguruma differ, we follow HF:
//   * `\s` / `\S` are rewritten to the Unicode White_Space set (25 code points: \t \n \v \f \r, space,
//     U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000). PCRE2's UCP `\s`
//     also matches U+180E (MONGOLIAN VOWEL SEPARATOR), which Oniguruma and Unicode >= 6.3 do not.
//   * `\p{L}` / `\p{N}` come from PCRE2's Unicode tables (10.42: Unicode 14). HF's are newer (Unicode
//     15/16): letters and numbers assigned after Unicode 14 (about 9300 code points, e.g. CJK Extension H,
//     Garay, Kawi) are classified differently and may tokenize differently. Nothing else is known to differ.
//   * HF's Digits uses Rust's char::is_numeric (categories Nd, Nl, No), which is `\p{N}`.
// Normalizers are not part of this: Qwen2's tokenizer.json has an NFC normalizer that llama.cpp does not
// apply either; text given to a "qwen2" tokenizer should already be NFC.
#pragma once

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/tokenizer/byte_level.hpp"

namespace sinkscope::tokenizer {

class BpeTokenizer;

/// The split regexes as HF's tokenizer.json files write them (Oniguruma syntax, `\s` as White_Space).
namespace patterns {
/// GPT-2 (HF ByteLevel's own regex).
inline constexpr const char* gpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
/// Llama-3 (numbers in groups of up to three digits, case-insensitive contractions).
inline constexpr const char* llama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
/// Qwen2 (as Llama-3 but every digit alone).
inline constexpr const char* qwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
/// HF Digits(individual_digits=true): every numeric character alone.
inline constexpr const char* digit = R"(\p{N})";
/// HF Digits(individual_digits=false): runs of numeric characters.
inline constexpr const char* digits = R"(\p{N}+)";
}  // namespace patterns

namespace detail {

/// Unicode White_Space, as the contents of a PCRE2 character class.
inline constexpr const char* white_space_class =
    R"(\t\n\x{0B}\f\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

/// Rewrites an HF (Oniguruma) pattern for PCRE2: `\s` -> [White_Space], `\S` -> [^White_Space]
/// (inside a class `\s` becomes the White_Space ranges). Everything else is copied. Throws Error for
/// `\S` inside a class and for `\Q` quoting, which this rewrite cannot express.
inline std::string translate_pattern(const std::string& p) {
    const std::string ws = white_space_class;
    std::string out;
    out.reserve(p.size() + 64);
    bool in_class = false;
    for (std::size_t i = 0; i < p.size(); ++i) {
        const char c = p[i];
        if (c == '\\') {
            require(i + 1 < p.size(), "regex '" + p + "' ends with a lone backslash");
            const char n = p[++i];
            if (n == 's') {
                out += in_class ? ws : "[" + ws + "]";
            } else if (n == 'S') {
                require(!in_class, "regex '" + p + "': \\S inside a character class is not supported");
                out += "[^" + ws + "]";
            } else {
                require(n != 'Q', "regex '" + p + "': \\Q...\\E quoting is not supported");
                out += c;
                out += n;
            }
            continue;
        }
        if (!in_class && c == '[') {
            in_class = true;
            out += c;
            if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
            if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];  // a leading ']' is a literal
            continue;
        }
        if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {  // POSIX class [:alpha:]
            const std::size_t end = p.find(":]", i + 2);
            require(end != std::string::npos, "regex '" + p + "': unterminated POSIX class");
            out.append(p, i, end + 2 - i);
            i = end + 1;
            continue;
        }
        if (in_class && c == ']') in_class = false;
        out += c;
    }
    return out;
}

/// A pattern that matches `literal` exactly (HF Split with {"String": ...}).
inline std::string escape_literal(const std::string& literal) {
    std::string out;
    for (char c : literal) {
        const auto u = static_cast<unsigned char>(c);
        const bool plain = u >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (!plain) out += '\\';
        out += c;
    }
    return out;
}

struct Pcre2CodeFree {
    void operator()(pcre2_code_8* code) const noexcept { pcre2_code_free_8(code); }
};
struct Pcre2MatchDataFree {
    void operator()(pcre2_match_data_8* md) const noexcept { pcre2_match_data_free_8(md); }
};
using MatchData = std::unique_ptr<pcre2_match_data_8, Pcre2MatchDataFree>;

inline MatchData make_match_data() {
    MatchData md(pcre2_match_data_create_8(1, nullptr));
    if (!md) throw Error("out of memory creating PCRE2 match data");
    return md;
}

inline std::string pcre2_message(int code) {
    PCRE2_UCHAR8 buf[256];
    const int n = pcre2_get_error_message_8(code, buf, sizeof buf);
    return n < 0 ? "PCRE2 error " + std::to_string(code) : std::string(reinterpret_cast<const char*>(buf), static_cast<std::size_t>(n));
}

/// One compiled PCRE2 regex (UTF + UCP), shared by copies; matching is thread-safe (match data per call).
class Regex {
public:
    explicit Regex(const std::string& pcre2_pattern) {
        int err = 0;
        PCRE2_SIZE err_at = 0;
        pcre2_code_8* code = pcre2_compile_8(reinterpret_cast<PCRE2_SPTR8>(pcre2_pattern.data()), pcre2_pattern.size(),
                                             PCRE2_UTF | PCRE2_UCP, &err, &err_at, nullptr);
        if (code == nullptr) {
            throw Error("regex '" + pcre2_pattern + "' does not compile: " + pcre2_message(err) + " at pattern offset " +
                        std::to_string(err_at));
        }
        code_.reset(code, Pcre2CodeFree{});
        jit_ = pcre2_jit_compile_8(code, PCRE2_JIT_COMPLETE) == 0;
    }

    bool jit() const noexcept { return jit_; }

    /// Appends to `out` the pieces of `text` (valid UTF-8, not checked here): every match and every
    /// non-empty stretch between matches, in order. Empty matches produce no piece.
    void split(std::string_view text, pcre2_match_data_8* md, std::vector<std::string_view>& out) const {
        const auto* subject = reinterpret_cast<PCRE2_SPTR8>(text.data());
        const std::size_t n = text.size();
        std::size_t pos = 0, last = 0;
        while (pos < n) {
            int rc = PCRE2_ERROR_JIT_STACKLIMIT;
            if (jit_) rc = pcre2_jit_match_8(code_.get(), subject, n, pos, 0, md, nullptr);
            if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {  // no JIT, or its stack ran out: the interpreter
                rc = pcre2_match_8(code_.get(), subject, n, pos, PCRE2_NO_UTF_CHECK, md, nullptr);
            }
            if (rc == PCRE2_ERROR_NOMATCH) break;
            if (rc < 0) throw Error("regex matching failed: " + pcre2_message(rc), {"", "", pos});
            const PCRE2_SIZE* ov = pcre2_get_ovector_pointer_8(md);
            const std::size_t start = ov[0], end = ov[1];
            if (end == start) {  // empty match: step over one character, no piece
                pos = start + std::max<std::size_t>(1, detail::utf8_sequence_length(text, start));
                continue;
            }
            if (start > last) out.push_back(text.substr(last, start - last));
            out.push_back(text.substr(start, end - start));
            last = pos = end;
        }
        if (last < n) out.push_back(text.substr(last));
    }

private:
    std::shared_ptr<pcre2_code_8> code_;
    bool jit_ = false;
};

}  // namespace detail

/// A chain of split regexes (HF Split "Isolated" semantics), see the top of this file.
class PreTokenizer {
public:
    /// `name` is free text (reported by name()); `hf_patterns` are regexes in HF/Oniguruma syntax, applied
    /// in turn. Throws Error if one does not compile.
    PreTokenizer(std::string name, std::vector<std::string> hf_patterns)
        : name_(std::move(name)), patterns_(std::move(hf_patterns)) {
        regexes_.reserve(patterns_.size());
        for (const auto& p : patterns_) regexes_.emplace_back(detail::translate_pattern(p));
    }

    /// The chain of a llama.cpp `tokenizer.ggml.pre` type (table at the top of this file). Throws Error,
    /// naming `source`, for a type this library does not know (rather than guessing a regex).
    static PreTokenizer named(const std::string& type, const std::string& source = {}) {
        if (type == "gpt2") return PreTokenizer(type, {patterns::gpt2});
        if (type == "smollm" || type == "starcoder") return PreTokenizer(type, {patterns::digit, patterns::gpt2});
        if (is_llama3(type)) return PreTokenizer(type, {patterns::llama3});
        if (type == "qwen2" || type == "deepseek-r1-qwen") return PreTokenizer(type, {patterns::qwen2});
        throw Error("unsupported pre-tokenizer type '" + type +
                        "' (known: gpt2, smollm, starcoder, llama-bpe, llama3, llama-v3, qwen2, deepseek-r1-qwen)",
                    {source, "", std::nullopt});
    }

    /// Types whose HF tokenizer (Llama-3's tokenizer.json) sets BPE `ignore_merges`.
    static bool is_llama3(const std::string& type) {
        return type == "llama-bpe" || type == "llama3" || type == "llama-v3";
    }

    /// The pre-tokens of `utf8_text`, as views into it. Throws Error (with the byte offset) on invalid UTF-8.
    std::vector<std::string_view> split(std::string_view utf8_text) const {
        if (const auto bad = first_invalid_utf8(utf8_text)) {
            throw Error("text is not valid UTF-8", {"", "", static_cast<std::uint64_t>(*bad)});
        }
        std::vector<std::string_view> out;
        auto md = detail::make_match_data();
        std::vector<std::string_view> scratch;
        split_valid(utf8_text, md.get(), out, scratch);
        return out;
    }

    const std::string& name() const noexcept { return name_; }
    /// The regexes as given (HF syntax, before the `\s` rewrite).
    const std::vector<std::string>& patterns() const noexcept { return patterns_; }
    /// Whether every regex runs JIT-compiled.
    bool jit() const noexcept {
        for (const auto& r : regexes_) if (!r.jit()) return false;
        return true;
    }

private:
    friend class BpeTokenizer;

    // `text` must be valid UTF-8 (PCRE2 runs with its UTF check off).
    void split_valid(std::string_view text, pcre2_match_data_8* md, std::vector<std::string_view>& out,
                     std::vector<std::string_view>& scratch) const {
        out.clear();
        if (text.empty()) return;
        out.push_back(text);
        for (const auto& regex : regexes_) {
            scratch.clear();
            for (const auto piece : out) regex.split(piece, md, scratch);
            out.swap(scratch);
        }
    }

    std::string name_;
    std::vector<std::string> patterns_;
    std::vector<detail::Regex> regexes_;
};

}  // namespace sinkscope::tokenizer
