// Byte-level alphabet (GPT-2's bytes_to_unicode, exact by definition) and UTF-8 validation (PCRE2's own
// UTF-8 check as the peer).
#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <set>

#include <sinkscope/tokenizer.hpp>

#include "tokenizer/tokenizer_fixtures.hpp"

namespace bl = sinkscope::tokenizer;
namespace tok = sinkscope::test::tok;

TEST_CASE("GPT-2 byte alphabet", "[tokenizer]") {
    std::set<char32_t> seen;
    for (int b = 0; b < 256; ++b) {
        const char32_t c = bl::byte_to_char(static_cast<std::uint8_t>(b));
        seen.insert(c);
        REQUIRE(bl::char_to_byte(c) == std::optional<std::uint8_t>(static_cast<std::uint8_t>(b)));
    }
    CHECK(seen.size() == 256);
    // The definition: printable bytes keep their code point; the other 68 get U+0100.. in byte order.
    CHECK(bl::byte_to_char('a') == U'a');
    CHECK(bl::byte_to_char(0xE9) == U'\u00E9');
    CHECK(bl::byte_to_char(0x00) == U'\u0100');
    CHECK(bl::byte_to_char(' ') == U'\u0120');   // Ġ
    CHECK(bl::byte_to_char('\n') == U'\u010A');  // Ċ
    CHECK(bl::byte_to_char(0x7F) == U'\u0121');
    CHECK(bl::byte_to_char(0xAD) == U'\u0143');  // the 68th
    CHECK_FALSE(bl::char_to_byte(U'\u0144').has_value());
    CHECK_FALSE(bl::char_to_byte(U' ').has_value());
    CHECK(bl::byte_level_encode(" the\n") == "\u0120the\u010A");
    CHECK(bl::byte_level_decode("\u0120the") == std::optional<std::string>(" the"));
    CHECK_FALSE(bl::byte_level_decode("a b").has_value());  // ' ' is not in the alphabet
    CHECK_FALSE(bl::byte_level_decode("\xff").has_value());
}

TEST_CASE("byte alphabet agrees with SmolLM2's vocabulary", "[tokenizer][reference]") {
    // tokenizer.json (HF) spells single-byte tokens in the alphabet: each present one decodes to one byte.
    const auto spec = sinkscope::test::tok::read_json(sinkscope::test::tok::smollm2_json_path());
    int single = 0;
    for (const auto& item : spec["model"]["vocab"].items()) {
        const auto bytes = bl::byte_level_decode(item.key());
        if (item.value().get<int>() >= 17) REQUIRE(bytes.has_value());  // all but the 17 added tokens
        if (bytes && bytes->size() == 1 && bl::byte_level_encode(*bytes) == item.key()) ++single;
    }
    CHECK(single == 256 - 21);  // the vocabulary lacks 21 bytes (see make_tokenizer_fixtures.py)
}

TEST_CASE("byte-level spelling round-trips any bytes", "[tokenizer][property]") {
    tok::property("decode(encode(bytes)) == bytes", [](const std::string& bytes) {
        const auto spelled = bl::byte_level_encode(bytes);
        RC_ASSERT(bl::is_valid_utf8(spelled));
        RC_ASSERT(bl::byte_level_decode(spelled) == std::optional<std::string>(bytes));
    });
}

TEST_CASE("UTF-8 validation, known cases", "[tokenizer]") {
    CHECK(bl::is_valid_utf8(""));
    CHECK(bl::is_valid_utf8("plain ASCII text, long enough for the 8-byte path"));
    CHECK(bl::is_valid_utf8("\xc2\x80 \xdf\xbf \xe0\xa0\x80 \xef\xbf\xbf \xf0\x90\x80\x80 \xf4\x8f\xbf\xbf"));
    CHECK(bl::first_invalid_utf8("\xc0\x80") == std::optional<std::size_t>(0));          // overlong NUL
    CHECK(bl::first_invalid_utf8("ab\xe0\x9f\xbf") == std::optional<std::size_t>(2));     // overlong 3-byte
    CHECK(bl::first_invalid_utf8("abc\xed\xa0\x80") == std::optional<std::size_t>(3));    // surrogate
    CHECK(bl::first_invalid_utf8("\xf4\x90\x80\x80") == std::optional<std::size_t>(0));   // > U+10FFFF
    CHECK(bl::first_invalid_utf8("\xf0\x8f\xbf\xbf") == std::optional<std::size_t>(0));   // overlong 4-byte
    CHECK(bl::first_invalid_utf8("0123456789\x80") == std::optional<std::size_t>(10));    // lone continuation
    CHECK(bl::first_invalid_utf8("x\xe2\x82") == std::optional<std::size_t>(1));          // truncated
    CHECK(bl::first_invalid_utf8("\xf5\x80\x80\x80") == std::optional<std::size_t>(0));
}

TEST_CASE("UTF-8 validation agrees with PCRE2's", "[tokenizer][property]") {
    // PCRE2 checks the subject when matching without PCRE2_NO_UTF_CHECK and reports where it failed.
    int err = 0;
    PCRE2_SIZE err_at = 0;
    pcre2_code_8* code = pcre2_compile_8(reinterpret_cast<PCRE2_SPTR8>("x"), 1, PCRE2_UTF, &err, &err_at, nullptr);
    REQUIRE(code != nullptr);
    pcre2_match_data_8* md = pcre2_match_data_create_8(1, nullptr);
    const auto pcre2_first_invalid = [&](const std::string& s) -> std::optional<std::size_t> {
        const int rc = pcre2_match_8(code, reinterpret_cast<PCRE2_SPTR8>(s.data()), s.size(), 0, 0, md, nullptr);
        if (rc >= PCRE2_ERROR_UTF8_ERR21 && rc <= PCRE2_ERROR_UTF8_ERR1) return pcre2_get_startchar_8(md);
        return std::nullopt;
    };
    // Random bytes biased toward UTF-8 structure: lead bytes, continuation bytes and ASCII.
    tok::property("same first invalid offset", [&] {
        const auto bytes = *rc::gen::container<std::vector<int>>(rc::gen::oneOf(
            rc::gen::inRange<int>(0, 0x80), rc::gen::inRange<int>(0x80, 0xC0), rc::gen::inRange<int>(0xC0, 0x100),
            rc::gen::element<int>(0xE0, 0xED, 0xF0, 0xF4, 0x9F, 0xA0, 0x8F, 0x90)));
        std::string s;
        for (int b : bytes) s.push_back(static_cast<char>(b));
        RC_ASSERT(bl::first_invalid_utf8(s) == pcre2_first_invalid(s));
    });
    pcre2_match_data_free_8(md);
    pcre2_code_free_8(code);
}
