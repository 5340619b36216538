// PreTokenizer against Hugging Face: the pre-tokens HF `tokenizers` produces for each reference text under
// each pre-tokenizer type (scripts/make_tokenizer_fixtures.py), compared after byte-level spelling.
#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <sinkscope/tokenizer.hpp>

#include "tokenizer/tokenizer_fixtures.hpp"

using sinkscope::Error;
using sinkscope::tokenizer::PreTokenizer;
namespace tok = sinkscope::test::tok;
namespace patterns = sinkscope::tokenizer::patterns;

namespace {
std::string joined(const std::vector<std::string_view>& pieces) {
    std::string s;
    for (auto p : pieces) s += p;
    return s;
}
}  // namespace

TEST_CASE("pre-tokens equal HF's for every reference text and pre-tokenizer type", "[tokenizer][reference]") {
    const auto texts = tok::texts();
    for (const std::string kind : {"smollm", "gpt2", "llama-bpe", "qwen2"}) {
        SECTION(kind) {
            const auto pre = PreTokenizer::named(kind);
            CHECK(pre.name() == kind);
            const auto& expected = tok::reference()["variants"][kind]["pieces"];
            std::size_t mismatches = 0;
            for (std::size_t i = 0; i < texts.size(); ++i) {
                std::vector<std::string> got;
                for (auto piece : pre.split(texts[i])) got.push_back(sinkscope::tokenizer::byte_level_encode(piece));
                const auto want = expected[i].get<std::vector<std::string>>();
                if (got != want) {
                    ++mismatches;
                    INFO("text #" << i);
                    CHECK(got == want);
                }
            }
            CHECK(mismatches == 0);
        }
    }
}

TEST_CASE("named chains and their aliases", "[tokenizer]") {
    CHECK(PreTokenizer::named("gpt2").patterns() == std::vector<std::string>{patterns::gpt2});
    CHECK(PreTokenizer::named("smollm").patterns() == std::vector<std::string>{patterns::digit, patterns::gpt2});
    CHECK(PreTokenizer::named("starcoder").patterns() == PreTokenizer::named("smollm").patterns());
    CHECK(PreTokenizer::named("llama3").patterns() == std::vector<std::string>{patterns::llama3});
    CHECK(PreTokenizer::named("deepseek-r1-qwen").patterns() == std::vector<std::string>{patterns::qwen2});
    try {
        PreTokenizer::named("tekken", "m.gguf");
        FAIL("no throw");
    } catch (const Error& e) {
        CHECK(e.file() == "m.gguf");
        CHECK(e.message().find("tekken") != std::string::npos);
    }
}

TEST_CASE("\\s means Unicode White_Space, as in HF (not PCRE2's, which adds U+180E)", "[tokenizer]") {
    const PreTokenizer ws("ws", {R"(\s+)"});
    CHECK(ws.split("a\u180Eb").size() == 1);                       // U+180E is not White_Space
    CHECK(ws.split("a\u0085b").size() == 3);                       // NEL is
    CHECK(ws.split("a\u3000\u2028\tb").size() == 3);
    const PreTokenizer not_ws("not-ws", {R"([^\s]+|\S)"});
    CHECK(not_ws.split("x y").size() == 3);
    const std::string wsc = sinkscope::tokenizer::detail::white_space_class;
    using sinkscope::tokenizer::detail::translate_pattern;
    CHECK(translate_pattern(R"(\s+(?!\S))") == "[" + wsc + "]+(?![^" + wsc + "])");
    CHECK(translate_pattern(R"([^\s\p{L}])") == "[^" + wsc + "\\p{L}]");
    CHECK(translate_pattern(R"(\\s[]\s])") == "\\\\s[]" + wsc + "]");  // escaped backslash; leading ']'
    CHECK_THROWS_AS(PreTokenizer("bad", {R"([\S])"}), Error);      // \S inside a class: not expressible
    CHECK_THROWS_AS(PreTokenizer("bad", {R"((unclosed)"}), Error);  // does not compile
    CHECK_THROWS_AS(PreTokenizer("bad", {R"(\Qx\E)"}), Error);
}

TEST_CASE("Split semantics: matches and the gaps between them are pieces", "[tokenizer]") {
    const PreTokenizer digits("digits", {patterns::digit});
    const auto p = digits.split("ab12c3");
    CHECK(p == std::vector<std::string_view>{"ab", "1", "2", "c", "3"});
    CHECK(digits.split("").empty());
    const PreTokenizer letters("letters", {R"(\p{L}+)"});
    CHECK(letters.split("--ab--") == std::vector<std::string_view>{"--", "ab", "--"});
    const PreTokenizer empty_match("empty", {R"(x*)"});  // empty matches produce no piece
    CHECK(empty_match.split("abxxc") == std::vector<std::string_view>{"ab", "xx", "c"});
}

TEST_CASE("pre-tokenizer refuses invalid UTF-8 with the offset", "[tokenizer]") {
    const auto pre = PreTokenizer::named("gpt2");
    try {
        pre.split("ok\xe2\x28\xa1");
        FAIL("no throw");
    } catch (const Error& e) {
        CHECK(e.offset() == 2u);
    }
}

TEST_CASE("very long runs do not exhaust the regex engine", "[tokenizer]") {
    for (const std::string kind : {"smollm", "gpt2", "llama-bpe", "qwen2"}) {
        const auto pre = PreTokenizer::named(kind);
        for (const std::string unit : {" ", "\n", "7", "a", "!", "\u3000", "é"}) {
            std::string text;
            for (int i = 0; i < 200000; ++i) text += unit;
            text += "x y";
            INFO(kind << " run of '" << unit << "'");
            const auto pieces = pre.split(text);
            CHECK(joined(pieces) == text);
        }
    }
}

TEST_CASE("pieces concatenate to the text and split only at character boundaries", "[tokenizer][property]") {
    const std::vector<std::string> alphabet = {" ", "\t", "\n", "\r", "a", "Z", "'", "s", "1", "²", "é", "e\u0301",
                                               "中", "😀", "\u00a0", "\u3000", "!", "<|", "ſ", "K"};
    for (const std::string kind : {"smollm", "gpt2", "llama-bpe", "qwen2"}) {
        const auto pre = PreTokenizer::named(kind);
        tok::property(kind, [&] {
            const auto picks = *rc::gen::container<std::vector<std::size_t>>(
                rc::gen::inRange<std::size_t>(0, alphabet.size()));
            std::string text;
            for (auto k : picks) text += alphabet[k];
            const auto pieces = pre.split(text);
            RC_ASSERT(joined(pieces) == text);
            for (auto piece : pieces) {
                RC_ASSERT(!piece.empty());
                RC_ASSERT(sinkscope::tokenizer::is_valid_utf8(piece));
            }
        });
    }
}
