// SHA-256 (FIPS 180-4), for fingerprints of registered data (the rule set's hash). Not a hot path:
// written for clarity. Checked in tests/core/test_sha256.cpp against the FIPS 180-4 example messages
// and by tests/experiments/check_rule_set.py against Python's hashlib on the rule set's canonical JSON.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace sinkscope {

namespace detail {

inline constexpr std::array<std::uint32_t, 64> kSha256Round = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01,
    0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
    0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08,
    0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline constexpr std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

// One 64-byte block into the state h (FIPS 180-4 §6.2.2).
inline void sha256_block(std::array<std::uint32_t, 8>& h, const unsigned char* p) {
    std::uint32_t w[64];
    for (int t = 0; t < 16; ++t)
        w[t] = std::uint32_t(p[4 * t]) << 24 | std::uint32_t(p[4 * t + 1]) << 16 | std::uint32_t(p[4 * t + 2]) << 8 |
               std::uint32_t(p[4 * t + 3]);
    for (int t = 16; t < 64; ++t) {
        const std::uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);   // σ₀
        const std::uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);    // σ₁
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int t = 0; t < 64; ++t) {
        const std::uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);   // Σ₁(e)
        const std::uint32_t ch = (e & f) ^ (~e & g);                       // Ch(e, f, g)
        const std::uint32_t t1 = k + S1 + ch + kSha256Round[t] + w[t];
        const std::uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);   // Σ₀(a)
        const std::uint32_t maj = (a & b) ^ (a & c) ^ (b & c);            // Maj(a, b, c)
        const std::uint32_t t2 = S0 + maj;
        k = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += k;
}

}  // namespace detail

// SHA-256 of `bytes`, as 64 lowercase hex digits.
inline std::string sha256_hex(std::string_view bytes) {
    std::array<std::uint32_t, 8> h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                      0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
    const std::size_t n = bytes.size();
    std::size_t i = 0;
    for (; i + 64 <= n; i += 64) detail::sha256_block(h, p + i);
    // Padding: the rest, a 1 bit, zeros to 56 mod 64 bytes, then the message length in bits (big-endian).
    unsigned char tail[128] = {};
    const std::size_t r = n - i;
    for (std::size_t j = 0; j < r; ++j) tail[j] = p[i + j];
    tail[r] = 0x80;
    const std::size_t len = r + 1 + 8 <= 64 ? 64 : 128;
    const std::uint64_t bits = std::uint64_t(n) * 8;
    for (int j = 0; j < 8; ++j) tail[len - 1 - j] = static_cast<unsigned char>(bits >> (8 * j));
    for (std::size_t j = 0; j < len; j += 64) detail::sha256_block(h, tail + j);
    static const char* hex = "0123456789abcdef";
    std::string out(64, '0');
    for (int w = 0; w < 8; ++w)
        for (int j = 0; j < 8; ++j) out[std::size_t(8 * w + j)] = hex[(h[std::size_t(w)] >> (28 - 4 * j)) & 0xf];
    return out;
}

}  // namespace sinkscope
