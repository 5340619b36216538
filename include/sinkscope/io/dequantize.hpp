// sinkscope::io::dequantize — ggml blocks to float/double, bit-for-bit what ggml and gguf-py compute.
//
// Supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K (is_supported()).
// Block layouts are ggml-common.h's (all little-endian, fp16 scales, no padding):
//
//   Q4_0  { f16 d;           u8 qs[16]; }                      x_j = d * (q_j - 8)          q_j in [0,15]
//   Q4_1  { f16 d; f16 m;    u8 qs[16]; }                      x_j = d * q_j + m            q_j in [0,15]
//   Q5_0  { f16 d;           u8 qh[4]; u8 qs[16]; }            x_j = d * (q_j - 16)         q_j in [0,31]
//   Q5_1  { f16 d; f16 m;    u8 qh[4]; u8 qs[16]; }            x_j = d * q_j + m            q_j in [0,31]
//   Q8_0  { f16 d;           i8 qs[32]; }                      x_j = d * q_j
//     legacy 4/5-bit: element j < 16 is the low nibble of qs[j], element j + 16 the high nibble;
//     the 5th bit of element j is bit j of qh read as a little-endian u32.
//   Q4_K  { f16 d; f16 dmin; u8 scales[12]; u8 qs[128]; }      256 values in 8 sub-blocks of 32:
//         x = (d * sc_s) * q - (dmin * m_s),  sc_s, m_s 6-bit (packed, see scale_min_k4), q 4-bit:
//         sub-blocks 2k and 2k+1 are the low and high nibbles of qs[32k .. 32k+31].
//   Q5_K  { f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]; }  as Q4_K with a 5th bit:
//         bit s of qh[l] is the high bit of element l of sub-block s.
//   Q6_K  { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d; }      x = (d * sc_{l/16}) * (q - 32),  q 6-bit:
//         per half (128 values): q[l+32i] = (nibble of ql) | (2 bits of qh[l] at 2i) << 4.
//
// Exactness. Values are computed in binary32 in exactly the operation order of ggml's reference
// dequantize_row_* and gguf-py's quants.py, then converted to T (so dequantize<double> is the double of
// dequantize<float>, never a different rounding). Every product here is *exact* in binary32: an fp16 scale
// has at most 11 significant bits, a 6-bit sub-scale adds 6, a 4/5-bit quant 4–5 (≤ 22 bits < 24). Hence
// the only rounding is the final "+ m" / "- dmin*m" (one IEEE operation, the same whether or not the
// compiler fuses it into an FMA, because the product is exact), and in Q6_K the product (d*sc)*q (up to
// 25 bits), one IEEE multiplication in the same order as the peers. The tests therefore demand bitwise
// equality with gguf-py for every type, with no tolerance.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "sinkscope/core/error.hpp"
#include "sinkscope/io/ggml_types.hpp"

namespace sinkscope::io {

/// IEEE binary16 bits to float, exact for every input (subnormals, ±inf; NaN payloads kept).
inline float half_to_float(std::uint16_t h) noexcept {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exp = (h >> 10) & 0x1fu;
    const std::uint32_t mant = h & 0x3ffu;
    std::uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);  // inf / NaN (payload kept, as numpy does)
    } else if (exp != 0) {
        bits = sign | ((exp + (127 - 15)) << 23) | (mant << 13);  // normal: rebias the exponent
    } else {
        // zero or subnormal: value = mant * 2^-24, exact in binary32 (mant < 2^10).
        float f = static_cast<float>(mant) * 5.9604644775390625e-08f;
        std::memcpy(&bits, &f, 4);
        bits |= sign;
    }
    float out;
    std::memcpy(&out, &bits, 4);
    return out;
}

/// bfloat16 bits to float: the bf16 bits are the top half of the binary32 bits.
inline float bf16_to_float(std::uint16_t b) noexcept {
    const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
    float out;
    std::memcpy(&out, &bits, 4);
    return out;
}

namespace detail {

inline std::uint16_t u16_at(const std::uint8_t* p) noexcept { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }
inline float f16_at(const std::uint8_t* p) noexcept { return half_to_float(u16_at(p)); }
/// The 32 high bits of a Q5_0/Q5_1 block (u8 qh[4] read as a little-endian u32).
inline std::uint32_t load_qh(const std::uint8_t* p) noexcept {
    return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
           (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

/// The j-th (0..7) 6-bit scale and min of a Q4_K/Q5_K block (ggml's get_scale_min_k4). Packing of the 12
/// bytes: bytes 0–3 low 6 bits = sc0..3, bytes 4–7 low 6 bits = m0..3; bytes 8–11 low nibble = low 4 bits
/// of sc4..7, high nibble = low 4 bits of m4..7; the top 2 bits of bytes 0–3 (4–7) are the high bits of
/// sc4..7 (m4..7).
inline void scale_min_k4(int j, const std::uint8_t* q, std::uint8_t& sc, std::uint8_t& m) noexcept {
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = static_cast<std::uint8_t>((q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4));
        m = static_cast<std::uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

template <class T>
inline void block_q4_0(const std::uint8_t* b, T* y) noexcept {
    const float d = f16_at(b);
    const std::uint8_t* qs = b + 2;
    for (int j = 0; j < 16; ++j) {
        y[j] = static_cast<T>(static_cast<float>((qs[j] & 0x0F) - 8) * d);
        y[j + 16] = static_cast<T>(static_cast<float>((qs[j] >> 4) - 8) * d);
    }
}

template <class T>
inline void block_q4_1(const std::uint8_t* b, T* y) noexcept {
    const float d = f16_at(b), m = f16_at(b + 2);
    const std::uint8_t* qs = b + 4;
    for (int j = 0; j < 16; ++j) {
        y[j] = static_cast<T>(d * static_cast<float>(qs[j] & 0x0F) + m);
        y[j + 16] = static_cast<T>(d * static_cast<float>(qs[j] >> 4) + m);
    }
}

template <class T>
inline void block_q5_0(const std::uint8_t* b, T* y) noexcept {
    const float d = f16_at(b);
    const std::uint32_t qh = load_qh(b + 2);
    const std::uint8_t* qs = b + 6;
    for (int j = 0; j < 16; ++j) {
        const int x0 = static_cast<int>((qs[j] & 0x0F) | (((qh >> j) & 1u) << 4)) - 16;
        const int x1 = static_cast<int>((qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4)) - 16;
        y[j] = static_cast<T>(d * static_cast<float>(x0));
        y[j + 16] = static_cast<T>(d * static_cast<float>(x1));
    }
}

template <class T>
inline void block_q5_1(const std::uint8_t* b, T* y) noexcept {
    const float d = f16_at(b), m = f16_at(b + 2);
    const std::uint32_t qh = load_qh(b + 4);
    const std::uint8_t* qs = b + 8;
    for (int j = 0; j < 16; ++j) {
        const unsigned x0 = (qs[j] & 0x0Fu) | (((qh >> j) & 1u) << 4);
        const unsigned x1 = (qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4);
        y[j] = static_cast<T>(d * static_cast<float>(x0) + m);
        y[j + 16] = static_cast<T>(d * static_cast<float>(x1) + m);
    }
}

template <class T>
inline void block_q8_0(const std::uint8_t* b, T* y) noexcept {
    const float d = f16_at(b);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<T>(static_cast<float>(static_cast<std::int8_t>(b[2 + j])) * d);
}

template <class T>
inline void block_q4_k(const std::uint8_t* b, T* y) noexcept {
    const float d = f16_at(b), dmin = f16_at(b + 2);
    const std::uint8_t* scales = b + 4;
    const std::uint8_t* q = b + 16;
    for (int k = 0; k < 4; ++k) {  // 64 values per step: sub-blocks 2k (low nibbles) and 2k+1 (high)
        std::uint8_t sc, m;
        scale_min_k4(2 * k, scales, sc, m);
        const float d1 = d * sc, m1 = dmin * m;
        scale_min_k4(2 * k + 1, scales, sc, m);
        const float d2 = d * sc, m2 = dmin * m;
        for (int l = 0; l < 32; ++l) y[l] = static_cast<T>(d1 * static_cast<float>(q[l] & 0x0F) - m1);
        for (int l = 0; l < 32; ++l) y[32 + l] = static_cast<T>(d2 * static_cast<float>(q[l] >> 4) - m2);
        q += 32;
        y += 64;
    }
}

template <class T>
inline void block_q5_k(const std::uint8_t* b, T* y) noexcept {
    const float d = f16_at(b), dmin = f16_at(b + 2);
    const std::uint8_t* scales = b + 4;
    const std::uint8_t* qh = b + 16;
    const std::uint8_t* ql = b + 48;
    for (int k = 0; k < 4; ++k) {
        std::uint8_t sc, m;
        scale_min_k4(2 * k, scales, sc, m);
        const float d1 = d * sc, m1 = dmin * m;
        scale_min_k4(2 * k + 1, scales, sc, m);
        const float d2 = d * sc, m2 = dmin * m;
        const int s1 = 2 * k, s2 = 2 * k + 1;  // bit of qh[l] holding the 5th bit of each sub-block
        for (int l = 0; l < 32; ++l)
            y[l] = static_cast<T>(d1 * static_cast<float>((ql[l] & 0x0F) | (((qh[l] >> s1) & 1) << 4)) - m1);
        for (int l = 0; l < 32; ++l)
            y[32 + l] = static_cast<T>(d2 * static_cast<float>((ql[l] >> 4) | (((qh[l] >> s2) & 1) << 4)) - m2);
        ql += 32;
        y += 64;
    }
}

template <class T>
inline void block_q6_k(const std::uint8_t* b, T* y) noexcept {
    const std::uint8_t* ql = b;
    const std::uint8_t* qh = b + 128;
    const std::uint8_t* sc8 = b + 192;
    const float d = f16_at(b + 208);
    for (int half = 0; half < 2; ++half) {  // 128 values per half
        float ds[8];                         // d * scale, exact (≤ 19 significant bits)
        for (int i = 0; i < 8; ++i) ds[i] = d * static_cast<float>(static_cast<std::int8_t>(sc8[i]));
        for (int l = 0; l < 32; ++l) {
            const int is = l / 16;
            const int q1 = static_cast<int>((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int q2 = static_cast<int>((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q3 = static_cast<int>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q4 = static_cast<int>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l + 0] = static_cast<T>(ds[is + 0] * static_cast<float>(q1));
            y[l + 32] = static_cast<T>(ds[is + 2] * static_cast<float>(q2));
            y[l + 64] = static_cast<T>(ds[is + 4] * static_cast<float>(q3));
            y[l + 96] = static_cast<T>(ds[is + 6] * static_cast<float>(q4));
        }
        y += 128;
        ql += 64;
        qh += 32;
        sc8 += 8;
    }
}

template <class T>
inline void block_f32(const std::uint8_t* b, T* y) noexcept {
    float f;
    std::memcpy(&f, b, 4);
    *y = static_cast<T>(f);
}
template <class T>
inline void block_f16(const std::uint8_t* b, T* y) noexcept { *y = static_cast<T>(f16_at(b)); }
template <class T>
inline void block_bf16(const std::uint8_t* b, T* y) noexcept { *y = static_cast<T>(bf16_to_float(u16_at(b))); }

/// Runs `block(src + i * bytes, dst + i * elems)` for every block, in parallel for large tensors.
template <class T, class Block>
inline void for_each_block(const std::uint8_t* src, std::int64_t n_blocks, std::int64_t elems, std::int64_t bytes,
                           T* dst, Block block) {
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if (n_blocks * elems >= (1 << 18))
#endif
    for (std::int64_t i = 0; i < n_blocks; ++i) block(src + i * bytes, dst + i * elems);
}

}  // namespace detail

/// Dequantizes `n_elements` values of ggml type `type` from `src` (n / block_elements(type) consecutive
/// blocks) into dst[0 .. n). T is float or double; values are binary32 results converted to T (see the
/// file comment for why they equal ggml's and gguf-py's bit for bit).
/// Errors: unsupported or unknown type, n < 0, n not a multiple of the block, null pointers with n > 0.
template <class T>
void dequantize(GgmlType type, const std::uint8_t* src, std::int64_t n_elements, T* dst) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "dequantize<T>: T must be float or double");
    require(is_supported(type), "dequantize: ggml type " + type_name(type) + " is not supported");
    require(n_elements >= 0, "dequantize: negative element count");
    const std::int64_t be = block_elements(type), bb = block_bytes(type);
    require(n_elements % be == 0, "dequantize: " + std::to_string(n_elements) + " values are not a whole number of " +
                                      type_name(type) + " blocks");
    if (n_elements == 0) return;
    require(src != nullptr && dst != nullptr, "dequantize: null pointer");
    const std::int64_t nb = n_elements / be;
    switch (type) {
        case GgmlType::F32: return detail::for_each_block(src, nb, be, bb, dst, detail::block_f32<T>);
        case GgmlType::F16: return detail::for_each_block(src, nb, be, bb, dst, detail::block_f16<T>);
        case GgmlType::BF16: return detail::for_each_block(src, nb, be, bb, dst, detail::block_bf16<T>);
        case GgmlType::Q4_0: return detail::for_each_block(src, nb, be, bb, dst, detail::block_q4_0<T>);
        case GgmlType::Q4_1: return detail::for_each_block(src, nb, be, bb, dst, detail::block_q4_1<T>);
        case GgmlType::Q5_0: return detail::for_each_block(src, nb, be, bb, dst, detail::block_q5_0<T>);
        case GgmlType::Q5_1: return detail::for_each_block(src, nb, be, bb, dst, detail::block_q5_1<T>);
        case GgmlType::Q8_0: return detail::for_each_block(src, nb, be, bb, dst, detail::block_q8_0<T>);
        case GgmlType::Q4_K: return detail::for_each_block(src, nb, be, bb, dst, detail::block_q4_k<T>);
        case GgmlType::Q5_K: return detail::for_each_block(src, nb, be, bb, dst, detail::block_q5_k<T>);
        case GgmlType::Q6_K: return detail::for_each_block(src, nb, be, bb, dst, detail::block_q6_k<T>);
        default: break;
    }
    throw Error("dequantize: ggml type " + type_name(type) + " is not supported");  // unreachable
}

}  // namespace sinkscope::io
