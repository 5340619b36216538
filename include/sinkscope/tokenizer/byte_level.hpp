// Byte-level text: UTF-8 validation and GPT-2's byte <-> character alphabet.
//
// A byte-level BPE vocabulary is written in an alphabet of 256 printable characters, one per byte
// (GPT-2's `bytes_to_unicode`):
//
//   bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF map to the character with the same code point;
//   the other 68 bytes (0x00..0x20, 0x7F..0xA0, 0xAD), in increasing order, map to U+0100, U+0101, ...
//
// so the space 0x20 is 'Ġ' (U+0120) and the newline 0x0A is 'Ċ' (U+010A). A token "Ġthe" is the bytes
// " the". byte_level_encode / byte_level_decode convert between raw bytes and that spelling.
//
// UTF-8 is validated as RFC 3629 (and Python, and PCRE2) define it: no overlong forms, no surrogates
// (U+D800..U+DFFF), nothing above U+10FFFF, no truncated sequence.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sinkscope::tokenizer {

namespace detail {

/// Appends the UTF-8 encoding of code point `cp` (must be a valid scalar value) to `out`.
inline void append_utf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

/// Length of the valid UTF-8 sequence starting at s[i], or 0 if the bytes there are not one.
inline std::size_t utf8_sequence_length(std::string_view s, std::size_t i) noexcept {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char b0 = byte(i);
    const std::size_t left = s.size() - i;
    if (b0 < 0x80) return 1;
    const auto cont = [&](std::size_t k) { return (byte(i + k) & 0xC0) == 0x80; };
    if (b0 >= 0xC2 && b0 <= 0xDF) return (left >= 2 && cont(1)) ? 2 : 0;
    if (b0 >= 0xE0 && b0 <= 0xEF) {
        if (left < 3 || !cont(1) || !cont(2)) return 0;
        const unsigned char b1 = byte(i + 1);
        if (b0 == 0xE0 && b1 < 0xA0) return 0;   // overlong
        if (b0 == 0xED && b1 >= 0xA0) return 0;  // surrogate U+D800..U+DFFF
        return 3;
    }
    if (b0 >= 0xF0 && b0 <= 0xF4) {
        if (left < 4 || !cont(1) || !cont(2) || !cont(3)) return 0;
        const unsigned char b1 = byte(i + 1);
        if (b0 == 0xF0 && b1 < 0x90) return 0;   // overlong
        if (b0 == 0xF4 && b1 >= 0x90) return 0;  // above U+10FFFF
        return 4;
    }
    return 0;  // continuation byte, 0xC0/0xC1 or 0xF5..0xFF
}

/// Decodes the code point of the valid sequence of `len` bytes at s[i].
inline char32_t utf8_decode_at(std::string_view s, std::size_t i, std::size_t len) noexcept {
    const auto b = [&](std::size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(s[i + k])); };
    switch (len) {
        case 1: return b(0);
        case 2: return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
        case 3: return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
        default: return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
    }
}

struct ByteAlphabet {
    std::array<char32_t, 256> to_char{};          // byte -> character
    std::array<std::int16_t, 0x144> to_byte{};    // character (all < U+0144) -> byte, -1 if none
    ByteAlphabet() {
        to_byte.fill(-1);
        char32_t next_extra = 0x100;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
            to_char[b] = printable ? static_cast<char32_t>(b) : next_extra++;
            to_byte[to_char[b]] = static_cast<std::int16_t>(b);
        }
    }
};

inline const ByteAlphabet& byte_alphabet() {
    static const ByteAlphabet alphabet;
    return alphabet;
}

}  // namespace detail

/// Offset of the first byte of `s` that does not start a valid UTF-8 sequence, or nullopt if all is valid.
inline std::optional<std::size_t> first_invalid_utf8(std::string_view s) noexcept {
    std::size_t i = 0;
    while (i < s.size()) {
        // ASCII fast path: 8 bytes at a time while none has the high bit set.
        while (i + 8 <= s.size()) {
            std::uint64_t word = 0;
            for (int k = 0; k < 8; ++k) word |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[i + k])) << (8 * k);
            if (word & 0x8080808080808080ull) break;
            i += 8;
        }
        if (i >= s.size()) break;
        const std::size_t len = detail::utf8_sequence_length(s, i);
        if (len == 0) return i;
        i += len;
    }
    return std::nullopt;
}

inline bool is_valid_utf8(std::string_view s) noexcept { return !first_invalid_utf8(s).has_value(); }

/// GPT-2's character for byte `b` (see the table at the top of this file).
inline char32_t byte_to_char(std::uint8_t b) noexcept { return detail::byte_alphabet().to_char[b]; }

/// The byte a character of the alphabet stands for, or nullopt for a character outside it.
inline std::optional<std::uint8_t> char_to_byte(char32_t c) noexcept {
    const auto& a = detail::byte_alphabet();
    if (c >= a.to_byte.size() || a.to_byte[c] < 0) return std::nullopt;
    return static_cast<std::uint8_t>(a.to_byte[c]);
}

/// Spells raw bytes in the byte-level alphabet (UTF-8 output): " the" -> "Ġthe".
inline std::string byte_level_encode(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char b : bytes) detail::append_utf8(out, byte_to_char(b));
    return out;
}

/// The bytes a byte-level spelling stands for ("Ġthe" -> " the"), or nullopt if `spelling` is not valid
/// UTF-8 or has a character outside the alphabet (an added token such as "<|im_start|>" is inside it).
inline std::optional<std::string> byte_level_decode(std::string_view spelling) {
    std::string out;
    out.reserve(spelling.size());
    for (std::size_t i = 0; i < spelling.size();) {
        const std::size_t len = detail::utf8_sequence_length(spelling, i);
        if (len == 0) return std::nullopt;
        const auto b = char_to_byte(detail::utf8_decode_at(spelling, i, len));
        if (!b) return std::nullopt;
        out.push_back(static_cast<char>(*b));
        i += len;
    }
    return out;
}

}  // namespace sinkscope::tokenizer
