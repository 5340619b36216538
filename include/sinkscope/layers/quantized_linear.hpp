// The linear layer y = x Wᵀ + b with W in a GGUF block type, read in place (issue 11, item 1). Forward only.
//
// A 7B Q4_K_M model dequantized to float32 at load needs 30 GB; here W stays in its file bytes (a
// QuantMatrix is a non-owning view: a memory-mapped tensor, say) and a product reads it directly. Two
// paths, chosen by QuantCompute:
//
//   exact  Dequantize a tile of kExactTileRows rows of W (io::dequantize, so the values are bit for bit
//          ggml's) into a per-thread float buffer and multiply with Eigen's GEMM; OpenMP over tiles.
//          The result is the dense linear_forward's on the dequantized matrix up to float summation order.
//          Every supported type (io::is_supported). Extra memory: one tile per thread.
//
//   int8   llama.cpp's idea (activations in 8 bits, integer dot products), laid out for a GEMM. Each row of
//          x is quantized in blocks of 32: s_b = max|x| / 127, a_j = round(x_j / s_b) ∈ [-127, 127]. Each
//          weight block is read as unsigned integers u_j with a per-group affine map
//                w_j = g_k u_j + c_k                       (group k = 32 values, 16 for Q6_K)
//            Q8_0: u = q + 128, c = -128 d      Q4_0: c = -8 d      Q5_0: c = -16 d      Q4_1/Q5_1: c = m
//            Q4_K/Q5_K: g = d sc_k, c = -dmin m_k                  Q6_K: g = d sc_k, c = -32 g
//          so that, with A_k = Σ_{j∈k} a_j,
//                y = Σ_k s_{b(k)} ( g_k Σ_{j∈k} u_j a_j  +  c_k A_k ).
//          Σ u_j a_j is exact in int32 (u ≤ 255, |a| ≤ 127, 32 terms); the rest is float. The kernel works
//          on *panels* of 16 rows of W, repacked (per thread, on the fly) so that one 512-bit register
//          holds 4 consecutive u's of each of the 16 rows: one `vpdpbusd` then advances 16 outputs of one
//          token by 4 inputs, with the 4 activation bytes broadcast, and 8 tokens share each weight load.
//          Dispatch at compile time (the project builds with -march=native): AVX512-VNNI
//          (`__AVX512VNNI__`); else AVX2 in 256-bit halves of the panel, with AVX-VNNI's vpdpbusd
//          (`__AVXVNNI__`) or vpmaddubsw + vpmaddwd (Q8_0, whose u reaches 255, then takes the scalar
//          kernel); else the portable scalar kernel (the oracle: tests run it and compare). Types: Q8_0, Q4_0,
//          Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K; any other supported type (F32, F16, BF16) takes the exact
//          path. Error: the activation rounding alone, |Δy_i| ≤ Σ_j |W_ij| s_{b(j)} / 2 (+ float
//          rounding), i.e. about 2^-8 of Σ_j |W_ij| max_b|x| per block; tests/model/test_quantized_linear.cpp
//          pins that bound and the measured error.
//
//   bf16   Activations and weights in bfloat16, products summed in float32 by oneDNN (layers/bf16_matmul.hpp:
//          AMX tiles or AVX512-BF16 where the CPU has them). x is rounded to bf16 once per product.
//          A BF16 weight (a Hugging Face checkpoint's usual type) is multiplied as it is stored, bit for bit
//          what Weights::precision = bf16 computes on the same weights loaded dense. A block-typed weight
//          (Q4_K, Q6_K, Q8_0, …) is dequantized in tiles of kBf16TileRows rows straight to bf16 (the
//          int8 unpackers' u, g, c below; each value the bf16 rounding of io::dequantize's float) and each
//          tile multiplied on the bf16 units; OpenMP over tiles. Error: both operands carry a relative rounding
//          of at most 2^-8, so |Δy_i| ≤ (2^-7 + 2^-16 + K 2^-24) Σ_j |x_j||W_ij| (bf16_matmul.hpp's bound),
//          where W is the dequantized matrix. Unlike int8, the activation's error is relative to each
//          value itself, not to the largest value of its block of 32, so within one product a massive
//          channel does not coarsen its neighbours (through a whole model the two paths differ less there:
//          bench/run_massive_error.sh). F32 and F16 weights take the exact path (rounding them to bf16 would lose bits
//          the file has; a block type's values are already coarser than its dequantized float).
//
// The block layouts are io/dequantize.hpp's (its comment has the table); the unpackers below read them
// into (u, g, c) with its helpers (f16_at, load_qh, scale_min_k4) rather than into floats.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#if defined(__AVX512F__) && defined(__AVX512VNNI__)
#include <immintrin.h>
#define SINKSCOPE_QLINEAR_AVX512VNNI 1
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define SINKSCOPE_QLINEAR_AVX2 1  // 256-bit kernel: vpdpbusd with AVX-VNNI, else vpmaddubsw + vpmaddwd
#endif
#if defined(_OPENMP)
#include <omp.h>
#endif

#include "sinkscope/core/error.hpp"
#include "sinkscope/io/dequantize.hpp"
#include "sinkscope/io/ggml_types.hpp"
#include "sinkscope/layers/bf16_matmul.hpp"
#include "sinkscope/layers/quant_matrix.hpp"
#include "sinkscope/core/tensor.hpp"

namespace sinkscope::model {

// QuantCompute and QuantMatrix live in layers/quant_matrix.hpp (model/weights.hpp holds QuantMatrix views).

/// True if the int8 path has a kernel for t (others fall back to the exact path).
inline bool int8_kernel_available(io::GgmlType t) noexcept {
    using io::GgmlType;
    switch (t) {
        case GgmlType::Q8_0: case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::Q5_0:
        case GgmlType::Q5_1: case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K: return true;
        default: return false;
    }
}

/// Rows of W dequantized at a time by the exact path (per thread: 128 × in floats).
inline constexpr std::int64_t kExactTileRows = 128;
/// Rows of W dequantized to bf16 at a time by the bf16 path (per thread: 256 × in bf16 values).
inline constexpr std::int64_t kBf16TileRows = 256;

/// True if the bf16 path multiplies a weight of type t on the bf16 units (block types are dequantized to
/// bf16 tiles, BF16 is read in place); F32 and F16 take the exact path.
inline bool bf16_compute_applies(io::GgmlType t) noexcept {
    return t == io::GgmlType::BF16 || int8_kernel_available(t);
}

namespace detail {

// ---- unpackers: one block → u (block_elements bytes), g and c (one per group) -------------------------
using io::detail::f16_at;
using io::detail::load_qh;
using io::detail::scale_min_k4;

inline void unpack_q8_0(const std::uint8_t* b, std::uint8_t* u, float* g, float* c) noexcept {
    const float d = f16_at(b);
    for (int j = 0; j < 32; ++j) u[j] = static_cast<std::uint8_t>(b[2 + j] ^ 0x80u);  // q + 128
    g[0] = d;
    c[0] = -128.0f * d;
}
inline void unpack_q4_0(const std::uint8_t* b, std::uint8_t* u, float* g, float* c) noexcept {
    const float d = f16_at(b);
    const std::uint8_t* qs = b + 2;
    for (int j = 0; j < 16; ++j) u[j] = qs[j] & 0x0F, u[j + 16] = static_cast<std::uint8_t>(qs[j] >> 4);
    g[0] = d;
    c[0] = -8.0f * d;
}
inline void unpack_q4_1(const std::uint8_t* b, std::uint8_t* u, float* g, float* c) noexcept {
    const std::uint8_t* qs = b + 4;
    for (int j = 0; j < 16; ++j) u[j] = qs[j] & 0x0F, u[j + 16] = static_cast<std::uint8_t>(qs[j] >> 4);
    g[0] = f16_at(b);
    c[0] = f16_at(b + 2);
}
inline void unpack_q5_0(const std::uint8_t* b, std::uint8_t* u, float* g, float* c) noexcept {
    const float d = f16_at(b);
    const std::uint32_t qh = load_qh(b + 2);
    const std::uint8_t* qs = b + 6;
    for (int j = 0; j < 16; ++j) {
        u[j] = static_cast<std::uint8_t>((qs[j] & 0x0F) | (((qh >> j) & 1u) << 4));
        u[j + 16] = static_cast<std::uint8_t>((qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4));
    }
    g[0] = d;
    c[0] = -16.0f * d;
}
inline void unpack_q5_1(const std::uint8_t* b, std::uint8_t* u, float* g, float* c) noexcept {
    const std::uint32_t qh = load_qh(b + 4);
    const std::uint8_t* qs = b + 8;
    for (int j = 0; j < 16; ++j) {
        u[j] = static_cast<std::uint8_t>((qs[j] & 0x0F) | (((qh >> j) & 1u) << 4));
        u[j + 16] = static_cast<std::uint8_t>((qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4));
    }
    g[0] = f16_at(b);
    c[0] = f16_at(b + 2);
}
inline void unpack_q4_k(const std::uint8_t* b, std::uint8_t* u, float* g, float* c) noexcept {
    const float d = f16_at(b), dmin = f16_at(b + 2);
    const std::uint8_t* q = b + 16;
    for (int s = 0; s < 8; ++s) {
        std::uint8_t sc, m;
        scale_min_k4(s, b + 4, sc, m);
        g[s] = d * sc;
        c[s] = -(dmin * m);
    }
    for (int k = 0; k < 4; ++k, q += 32)
        for (int l = 0; l < 32; ++l) u[64 * k + l] = q[l] & 0x0F, u[64 * k + 32 + l] = static_cast<std::uint8_t>(q[l] >> 4);
}
inline void unpack_q5_k(const std::uint8_t* b, std::uint8_t* u, float* g, float* c) noexcept {
    const float d = f16_at(b), dmin = f16_at(b + 2);
    const std::uint8_t* qh = b + 16;
    const std::uint8_t* ql = b + 48;
    for (int s = 0; s < 8; ++s) {
        std::uint8_t sc, m;
        scale_min_k4(s, b + 4, sc, m);
        g[s] = d * sc;
        c[s] = -(dmin * m);
    }
    for (int k = 0; k < 4; ++k, ql += 32)
        for (int l = 0; l < 32; ++l) {
            u[64 * k + l] = static_cast<std::uint8_t>((ql[l] & 0x0F) | (((qh[l] >> (2 * k)) & 1) << 4));
            u[64 * k + 32 + l] = static_cast<std::uint8_t>((ql[l] >> 4) | (((qh[l] >> (2 * k + 1)) & 1) << 4));
        }
}
// Q6_K: value 128h + 32i + l uses scales[8h + 2i + l/16], which is its group of 16 — so g[k] = d * scales[k].
inline void unpack_q6_k(const std::uint8_t* b, std::uint8_t* u, float* g, float* c) noexcept {
    const std::uint8_t* ql = b;
    const std::uint8_t* qh = b + 128;
    const float d = f16_at(b + 208);
    for (int k = 0; k < 16; ++k) {
        g[k] = d * static_cast<float>(static_cast<std::int8_t>(b[192 + k]));
        c[k] = -32.0f * g[k];
    }
    for (int h = 0; h < 2; ++h, ql += 64, qh += 32, u += 128)
        for (int l = 0; l < 32; ++l) {
            u[l] = static_cast<std::uint8_t>((ql[l] & 0x0F) | ((qh[l] & 3) << 4));
            u[l + 32] = static_cast<std::uint8_t>((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4));
            u[l + 64] = static_cast<std::uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
            u[l + 96] = static_cast<std::uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
        }
}

using Unpacker = void (*)(const std::uint8_t*, std::uint8_t*, float*, float*) noexcept;

struct Int8Format {
    Unpacker unpack;
    int group;  // values per (g, c) pair
    int u_max;  // largest u (vpmaddubsw's int16 pair sums are exact only for u ≤ 128)
};

inline Int8Format int8_format(io::GgmlType t) {
    using io::GgmlType;
    switch (t) {
        case GgmlType::Q8_0: return {unpack_q8_0, 32, 255};
        case GgmlType::Q4_0: return {unpack_q4_0, 32, 15};
        case GgmlType::Q4_1: return {unpack_q4_1, 32, 15};
        case GgmlType::Q5_0: return {unpack_q5_0, 32, 31};
        case GgmlType::Q5_1: return {unpack_q5_1, 32, 31};
        case GgmlType::Q4_K: return {unpack_q4_k, 32, 15};
        case GgmlType::Q5_K: return {unpack_q5_k, 32, 31};
        case GgmlType::Q6_K: return {unpack_q6_k, 16, 63};
        default: break;
    }
    throw Error("int8 linear: no kernel for ggml type " + io::type_name(t));
}

// ---- activations: x (T × K) in blocks of 32 ----------------------------------------------------------
struct QuantizedActs {
    std::int64_t T = 0, K = 0, groups = 0;  // groups per row (K / group)
    std::vector<std::int8_t> a;             // (T, K)       a_j = round(x_j / s_b)
    std::vector<float> s;                   // (T, groups)  s_{b(k)}, the scale of group k's block
    std::vector<float> sa;                  // (T, groups)  s_{b(k)} A_k
};

/// Quantizes each row of x in blocks of 32 (s = max|x| / 127; an all-zero block has s = 0). `group` (16 or
/// 32) is the weight group size the sums A_k are formed over.
inline QuantizedActs quantize_activations(const Mat<float>& x, int group) {
    QuantizedActs q;
    q.T = x.rows();
    q.K = x.cols();
    q.groups = q.K / group;
    q.a.resize(static_cast<std::size_t>(q.T * q.K));
    q.s.resize(static_cast<std::size_t>(q.T * q.groups));
    q.sa.resize(static_cast<std::size_t>(q.T * q.groups));
    const std::int64_t per_block = 32 / group;  // groups per block of 32
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if (q.T * q.K >= (1 << 16))
#endif
    for (std::int64_t t = 0; t < q.T; ++t) {
        const float* xr = x.data() + t * q.K;
        std::int8_t* ar = q.a.data() + t * q.K;
        for (std::int64_t b0 = 0; b0 < q.K; b0 += 32) {
            float amax = 0.0f;
            for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(xr[b0 + j]));
            const float s = amax / 127.0f;
            const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
            for (int j = 0; j < 32; ++j) {
                const float v = std::nearbyint(xr[b0 + j] * inv);
                ar[b0 + j] = static_cast<std::int8_t>(std::clamp(v, -127.0f, 127.0f));
            }
            for (std::int64_t k = 0; k < per_block; ++k) {
                const std::int64_t gk = b0 / group + k;
                int sum = 0;
                for (int j = 0; j < group; ++j) sum += ar[b0 + k * group + j];
                q.s[static_cast<std::size_t>(t * q.groups + gk)] = s;
                q.sa[static_cast<std::size_t>(t * q.groups + gk)] = s * static_cast<float>(sum);
            }
        }
    }
    return q;
}

// ---- panels: 16 rows of W repacked for the kernel ----------------------------------------------------
inline constexpr int kPanelRows = 16;

struct Panel {
    std::vector<std::uint8_t> u;    // (K/4, 16, 4)  u of rows r0..r0+15, 4 consecutive inputs per row
    std::vector<float> g, c;        // (groups, 16)
    std::vector<std::uint8_t> tmp;  // (16, K) row-major u before the transpose
};

// Unpack is a distinct type per block type (a lambda), so that the unpacker inlines into the row loop.
template <class Unpack>
inline void unpack_rows(Panel& p, const QuantMatrix& W, int group, std::int64_t r0, Unpack unpack) {
    const std::int64_t K = W.cols, be = io::block_elements(W.type), bb = io::block_bytes(W.type);
    const std::int64_t groups = K / group, gpb = be / group;
    float gb[16] = {}, cb[16] = {};  // an unpacker fills the first be/group entries
    for (int r = 0; r < kPanelRows; ++r) {
        std::uint8_t* ur = p.tmp.data() + r * K;
        if (r0 + r >= W.rows) {  // padding row past the end of W: contributes 0
            std::fill(ur, ur + K, std::uint8_t{0});
            for (std::int64_t k = 0; k < groups; ++k) p.g[k * 16 + r] = 0.0f, p.c[k * 16 + r] = 0.0f;
            continue;
        }
        const std::uint8_t* src = W.row(r0 + r);
        for (std::int64_t i = 0; i < K / be; ++i) {
            unpack(src + i * bb, ur + i * be, gb, cb);
            for (std::int64_t k = 0; k < gpb; ++k) {
                p.g[(i * gpb + k) * 16 + r] = gb[k];
                p.c[(i * gpb + k) * 16 + r] = cb[k];
            }
        }
    }
}

inline void build_panel(Panel& p, const QuantMatrix& W, const Int8Format& f, std::int64_t r0) {
    const std::int64_t K = W.cols, groups = K / f.group;
    p.u.resize(static_cast<std::size_t>(16 * K));
    p.tmp.resize(static_cast<std::size_t>(16 * K));
    p.g.resize(static_cast<std::size_t>(16 * groups));
    p.c.resize(static_cast<std::size_t>(16 * groups));
#define SINKSCOPE_QLINEAR_UNPACK(T, fn) \
    case io::GgmlType::T: unpack_rows(p, W, f.group, r0, [](const std::uint8_t* b, std::uint8_t* u, float* g, float* c) { fn(b, u, g, c); }); break;
    switch (W.type) {
        SINKSCOPE_QLINEAR_UNPACK(Q8_0, unpack_q8_0)
        SINKSCOPE_QLINEAR_UNPACK(Q4_0, unpack_q4_0)
        SINKSCOPE_QLINEAR_UNPACK(Q4_1, unpack_q4_1)
        SINKSCOPE_QLINEAR_UNPACK(Q5_0, unpack_q5_0)
        SINKSCOPE_QLINEAR_UNPACK(Q5_1, unpack_q5_1)
        SINKSCOPE_QLINEAR_UNPACK(Q4_K, unpack_q4_k)
        SINKSCOPE_QLINEAR_UNPACK(Q5_K, unpack_q5_k)
        SINKSCOPE_QLINEAR_UNPACK(Q6_K, unpack_q6_k)
        default: throw Error("int8 linear: no kernel for ggml type " + io::type_name(W.type));
    }
#undef SINKSCOPE_QLINEAR_UNPACK
    // transpose (16, K/4) 32-bit words to (K/4, 16)
#if defined(SINKSCOPE_QLINEAR_AVX512VNNI)
    const __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                           _mm512_set1_epi32(static_cast<int>(K)));
    for (std::int64_t q = 0; q < K / 4; ++q)
        _mm512_storeu_si512(p.u.data() + q * 64, _mm512_i32gather_epi32(idx, p.tmp.data() + 4 * q, 1));
#else
    for (std::int64_t q = 0; q < K / 4; ++q)
        for (int r = 0; r < kPanelRows; ++r) std::memcpy(p.u.data() + q * 64 + r * 4, p.tmp.data() + r * K + 4 * q, 4);
#endif
}

// ---- kernels: out[t][r] = Σ_k s_tk (g_kr Σ_{j∈k} u_rj a_tj) + c_kr (s A)_tk,  NT tokens × 16 rows ---------

/// The naive kernel, kept as the oracle (tests compare the SIMD kernel with it).
template <int G>
inline void panel_kernel_scalar(const Panel& p, const QuantizedActs& qa, std::int64_t t0, int nt, float* out) {
    const std::int64_t K = qa.K, groups = qa.groups;
    for (int t = 0; t < nt; ++t) {
        const std::int8_t* a = qa.a.data() + (t0 + t) * K;
        const float* s = qa.s.data() + (t0 + t) * groups;
        const float* sa = qa.sa.data() + (t0 + t) * groups;
        for (int r = 0; r < kPanelRows; ++r) {
            float acc = 0.0f;
            for (std::int64_t k = 0; k < groups; ++k) {
                std::int32_t dot = 0;
                for (int j = 0; j < G; ++j) {
                    const std::int64_t col = k * G + j;
                    dot += static_cast<std::int32_t>(p.u[(col / 4) * 64 + r * 4 + col % 4]) * a[col];
                }
                acc += static_cast<float>(dot) * (p.g[k * 16 + r] * s[k]) + p.c[k * 16 + r] * sa[k];
            }
            out[t * 16 + r] = acc;
        }
    }
}

#if defined(SINKSCOPE_QLINEAR_AVX512VNNI)
template <int G, int NT>
inline void panel_kernel_avx512(const Panel& p, const QuantizedActs& qa, std::int64_t t0, float* out) {
    const std::int64_t K = qa.K, groups = qa.groups;
    const std::int8_t* a[NT];
    const float* s[NT];
    const float* sa[NT];
    for (int t = 0; t < NT; ++t) {
        a[t] = qa.a.data() + (t0 + t) * K;
        s[t] = qa.s.data() + (t0 + t) * groups;
        sa[t] = qa.sa.data() + (t0 + t) * groups;
    }
    __m512 facc[NT];
    for (int t = 0; t < NT; ++t) facc[t] = _mm512_setzero_ps();
    const std::uint8_t* wp = p.u.data();
    for (std::int64_t k = 0; k < groups; ++k) {
        __m512i acc[NT];
        for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_si512();
        for (int q = 0; q < G / 4; ++q, wp += 64) {
            const __m512i w = _mm512_loadu_si512(wp);  // u of 16 rows × 4 inputs (unsigned)
            for (int t = 0; t < NT; ++t) {
                std::int32_t av;
                std::memcpy(&av, a[t] + k * G + 4 * q, 4);  // 4 activations (signed), broadcast
                acc[t] = _mm512_dpbusd_epi32(acc[t], w, _mm512_set1_epi32(av));
            }
        }
        const __m512 g = _mm512_loadu_ps(p.g.data() + k * 16), c = _mm512_loadu_ps(p.c.data() + k * 16);
        for (int t = 0; t < NT; ++t) {
            facc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[t]), _mm512_mul_ps(g, _mm512_set1_ps(s[t][k])), facc[t]);
            facc[t] = _mm512_fmadd_ps(c, _mm512_set1_ps(sa[t][k]), facc[t]);
        }
    }
    for (int t = 0; t < NT; ++t) _mm512_storeu_ps(out + t * 16, facc[t]);
}
#endif

#if defined(SINKSCOPE_QLINEAR_AVX2)
// The same kernel in 256-bit registers (16 of them): one half of the panel (8 rows, bytes 32h … 32h+31 of
// each 64-byte quad) at a time. Without AVX-VNNI, u·a pairs go through vpmaddubsw (int16, saturating:
// exact while 2 · u · 127 < 2^15, i.e. u ≤ 128, so Q8_0 takes the scalar kernel there).
inline __m256i dot4_avx2(__m256i acc, __m256i w, __m256i a) noexcept {
#if defined(__AVXVNNI__)
    return _mm256_dpbusd_avx_epi32(acc, w, a);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), _mm256_set1_epi16(1)));
#endif
}

template <int G, int NT>
inline void panel_kernel_avx2(const Panel& p, const QuantizedActs& qa, std::int64_t t0, float* out) {
    const std::int64_t K = qa.K, groups = qa.groups;
    for (int h = 0; h < 2; ++h) {
        __m256 facc[NT];
        for (int t = 0; t < NT; ++t) facc[t] = _mm256_setzero_ps();
        const std::uint8_t* wp = p.u.data() + 32 * h;
        for (std::int64_t k = 0; k < groups; ++k) {
            __m256i acc[NT];
            for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_si256();
            for (int q = 0; q < G / 4; ++q, wp += 64) {
                const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp));
                for (int t = 0; t < NT; ++t) {
                    std::int32_t av;
                    std::memcpy(&av, qa.a.data() + (t0 + t) * K + k * G + 4 * q, 4);
                    acc[t] = dot4_avx2(acc[t], w, _mm256_set1_epi32(av));
                }
            }
            const __m256 g = _mm256_loadu_ps(p.g.data() + k * 16 + 8 * h);
            const __m256 c = _mm256_loadu_ps(p.c.data() + k * 16 + 8 * h);
            for (int t = 0; t < NT; ++t) {
                const float s = qa.s[static_cast<std::size_t>((t0 + t) * groups + k)];
                const float sa = qa.sa[static_cast<std::size_t>((t0 + t) * groups + k)];
                facc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[t]), _mm256_mul_ps(g, _mm256_set1_ps(s)), facc[t]);
                facc[t] = _mm256_fmadd_ps(c, _mm256_set1_ps(sa), facc[t]);
            }
        }
        for (int t = 0; t < NT; ++t) _mm256_storeu_ps(out + t * 16 + 8 * h, facc[t]);
    }
}
#endif

/// Tokens per kernel call in the SIMD path (each weight load feeds this many vpdpbusd).
inline constexpr int kInt8Tokens = 8;

template <int G>
inline void panel_tokens(const Panel& p, const QuantizedActs& qa, bool simd, int u_max, float* out) {
    std::int64_t t0 = 0;
    (void)simd;
    (void)u_max;
#if defined(SINKSCOPE_QLINEAR_AVX512VNNI)
    if (simd) {
        for (; t0 + kInt8Tokens <= qa.T; t0 += kInt8Tokens)
            panel_kernel_avx512<G, kInt8Tokens>(p, qa, t0, out + t0 * 16);
        for (; t0 < qa.T; ++t0) panel_kernel_avx512<G, 1>(p, qa, t0, out + t0 * 16);
    }
#elif defined(SINKSCOPE_QLINEAR_AVX2)
#if !defined(__AVXVNNI__)
    if (u_max > 128) simd = false;
#endif
    if (simd) {
        for (; t0 + 4 <= qa.T; t0 += 4) panel_kernel_avx2<G, 4>(p, qa, t0, out + t0 * 16);
        for (; t0 < qa.T; ++t0) panel_kernel_avx2<G, 1>(p, qa, t0, out + t0 * 16);
    }
#endif
    if (t0 < qa.T) panel_kernel_scalar<G>(p, qa, t0, static_cast<int>(qa.T - t0), out + t0 * 16);
}

/// True when this build has a SIMD int8 kernel (otherwise the scalar one runs).
inline constexpr bool kInt8Simd =
#if defined(SINKSCOPE_QLINEAR_AVX512VNNI) || defined(SINKSCOPE_QLINEAR_AVX2)
    true;
#else
    false;
#endif

/// The int8 path; `simd = false` forces the scalar kernel (the oracle, for tests).
inline void linear_forward_int8(Mat<float>& y, const Mat<float>& x, const QuantMatrix& W, const Vec<float>& b,
                                bool simd = true) {
    const Int8Format f = int8_format(W.type);
    const std::int64_t T = x.rows(), N = W.rows;
    const QuantizedActs qa = quantize_activations(x, f.group);
    const std::int64_t n_panels = (N + kPanelRows - 1) / kPanelRows;
#if defined(_OPENMP)
#pragma omp parallel
#endif
    {
        Panel p;
        std::vector<float> out(static_cast<std::size_t>(T * 16));
#if defined(_OPENMP)
#pragma omp for schedule(dynamic, 1)
#endif
        for (std::int64_t pi = 0; pi < n_panels; ++pi) {
            const std::int64_t r0 = pi * kPanelRows;
            build_panel(p, W, f, r0);
            if (f.group == 16)
                panel_tokens<16>(p, qa, simd, f.u_max, out.data());
            else
                panel_tokens<32>(p, qa, simd, f.u_max, out.data());
            const std::int64_t nr = std::min<std::int64_t>(kPanelRows, N - r0);
            for (std::int64_t t = 0; t < T; ++t)
                for (std::int64_t r = 0; r < nr; ++r)
                    y(t, r0 + r) = out[static_cast<std::size_t>(t * 16 + r)] + (b.size() ? b(r0 + r) : 0.0f);
        }
    }
}

/// The exact path: tiles of kExactTileRows dequantized rows × Eigen GEMM.
inline void linear_forward_exact(Mat<float>& y, const Mat<float>& x, const QuantMatrix& W, const Vec<float>& b) {
    const std::int64_t K = W.cols, N = W.rows;
    const std::int64_t n_tiles = (N + kExactTileRows - 1) / kExactTileRows;
#if defined(_OPENMP)
#pragma omp parallel
#endif
    {
        Mat<float> tile;  // (rows of the tile, K)
#if defined(_OPENMP)
#pragma omp for schedule(dynamic, 1)
#endif
        for (std::int64_t ti = 0; ti < n_tiles; ++ti) {
            const std::int64_t r0 = ti * kExactTileRows, nr = std::min(kExactTileRows, N - r0);
            tile.resize(nr, K);
            io::dequantize<float>(W.type, W.row(r0), nr * K, tile.data());
            y.middleCols(r0, nr).noalias() = x * tile.transpose();
        }
    }
    if (b.size()) y.rowwise() += b.transpose();
}

// ---- bf16 path: rows of W dequantized straight to bf16 -----------------------------------------------
// Each group's values are w_j = fma(g, u_j, c) from the int8 unpackers' (u, g, c), one rounding of the
// exact g u_j + c. That real number is ggml's value before its own single rounding (g = d·sc and c are
// exact products of an fp16 and a small integer, and ggml's d·q or d₁·q − m₁ has an exact product), so the
// float is io::dequantize's bit for bit and its bf16 rounding is to_bf16_bits(io::dequantize(...))
// (tests/model/test_quantized_linear.cpp checks every type).
inline void affine_to_bf16(const std::uint8_t* u, float g, float c, int n, std::uint16_t* out) noexcept {
    int j = 0;
#if defined(__AVX512BF16__) && defined(__AVX512F__)
    const __m512 gv = _mm512_set1_ps(g), cv = _mm512_set1_ps(c);
    for (; j + 16 <= n; j += 16) {
        const __m512 v = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(u + j))));
        const __m256bh h = _mm512_cvtneps_pbh(_mm512_fmadd_ps(gv, v, cv));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), reinterpret_cast<const __m256i&>(h));
    }
#endif
    for (; j < n; ++j) out[j] = to_bf16_bits(std::fma(g, static_cast<float>(u[j]), c));
}

template <class Unpack>
inline void dequantize_row_bf16(const std::uint8_t* src, std::int64_t K, std::int64_t be, std::int64_t bb, int group,
                                std::uint16_t* out, Unpack unpack) {
    alignas(64) std::uint8_t u[256];
    float g[16], c[16];
    for (std::int64_t i = 0; i < K / be; ++i) {
        unpack(src + i * bb, u, g, c);
        for (std::int64_t k = 0; k < be / group; ++k)
            affine_to_bf16(u + k * group, g[k], c[k], group, out + i * be + k * group);
    }
}

/// Rows [r0, r0 + n) of a block-typed W as bf16 bits, row-major (n × K): the round-to-nearest-even of
/// io::dequantize's floats.
inline void dequantize_rows_bf16(const QuantMatrix& W, std::int64_t r0, std::int64_t n, std::uint16_t* out) {
    const std::int64_t K = W.cols, be = io::block_elements(W.type), bb = io::block_bytes(W.type);
    const int group = int8_format(W.type).group;
#define SINKSCOPE_QLINEAR_BF16_ROWS(T, fn)                                                                       \
    case io::GgmlType::T:                                                                                        \
        for (std::int64_t r = 0; r < n; ++r)                                                                     \
            dequantize_row_bf16(W.row(r0 + r), K, be, bb, group, out + r * K,                                    \
                                [](const std::uint8_t* b, std::uint8_t* u, float* g, float* c) { fn(b, u, g, c); }); \
        break;
    switch (W.type) {
        SINKSCOPE_QLINEAR_BF16_ROWS(Q8_0, unpack_q8_0)
        SINKSCOPE_QLINEAR_BF16_ROWS(Q4_0, unpack_q4_0)
        SINKSCOPE_QLINEAR_BF16_ROWS(Q4_1, unpack_q4_1)
        SINKSCOPE_QLINEAR_BF16_ROWS(Q5_0, unpack_q5_0)
        SINKSCOPE_QLINEAR_BF16_ROWS(Q5_1, unpack_q5_1)
        SINKSCOPE_QLINEAR_BF16_ROWS(Q4_K, unpack_q4_k)
        SINKSCOPE_QLINEAR_BF16_ROWS(Q5_K, unpack_q5_k)
        SINKSCOPE_QLINEAR_BF16_ROWS(Q6_K, unpack_q6_k)
        default: throw Error("bf16 linear: no block dequantizer for ggml type " + io::type_name(W.type));
    }
#undef SINKSCOPE_QLINEAR_BF16_ROWS
}

/// The bf16 path for a block type: x rounded to bf16 once; per thread, tiles of kBf16TileRows rows of W
/// dequantized to bf16 (dequantize_rows_bf16) and multiplied by oneDNN into y's columns.
inline void linear_forward_bf16_blocks(Mat<float>& y, const Mat<float>& x, const QuantMatrix& W, const Vec<float>& b) {
    const std::int64_t T = x.rows(), K = W.cols, N = W.rows;
    Bf16Bits x_bits(static_cast<std::size_t>(T * K));
    convert_bf16(x_bits.data(), x.data(), T * K);
    const MatrixRef a{x.data(), T, K, K, 1, x_bits.data()};
    const std::int64_t n_tiles = (N + kBf16TileRows - 1) / kBf16TileRows;
#if defined(_OPENMP)
#pragma omp parallel
#endif
    {
        Bf16Bits tile;
#if defined(_OPENMP)
#pragma omp for schedule(dynamic, 1)
#endif
        for (std::int64_t ti = 0; ti < n_tiles; ++ti) {
            const std::int64_t r0 = ti * kBf16TileRows, nr = std::min(kBf16TileRows, N - r0);
            tile.resize(static_cast<std::size_t>(nr * K));
            dequantize_rows_bf16(W, r0, nr, tile.data());
            // The tile's rows are Wᵀ's columns: y[:, r0 : r0 + nr] = x̃ · tileᵀ.
            bf16_matmul_weight_bits(y.data() + r0, y.cols(), a, tile.data(), nr, false);
        }
    }
    if (b.size()) y.rowwise() += b.transpose();
}

}  // namespace detail

// y = x Wᵀ (+ b).   x (T × in), W (out × in) in its GGUF type, b (out) or empty, y (T × out).
// `compute` picks the path (file comment); int8 on a type without an int8 kernel runs exact.
inline void linear_forward(Mat<float>& y, const Mat<float>& x, const QuantMatrix& W, const Vec<float>& b,
                           QuantCompute compute = QuantCompute::exact) {
    require(x.cols() == W.cols, "linear_forward: x has " + std::to_string(x.cols()) + " columns, the " +
                                    io::type_name(W.type) + " weight " + std::to_string(W.cols));
    require(b.size() == 0 || b.size() == W.rows, "linear_forward: bias of " + std::to_string(b.size()) +
                                                     " for " + std::to_string(W.rows) + " outputs");
    y.resize(x.rows(), W.rows);
    if (x.rows() == 0 || W.rows == 0) return;
    if (W.cols == 0) {
        y.setZero();
        if (b.size()) y.rowwise() += b.transpose();
        return;
    }
    if (compute == QuantCompute::int8 && int8_kernel_available(W.type)) {
        detail::linear_forward_int8(y, x, W, b);
    } else if (compute == QuantCompute::bf16 && W.type == io::GgmlType::BF16) {
        // The file's bf16 bits are Wᵀ column-major for the product; only x is rounded (bf16_matmul.hpp).
        bf16_matmul_weight_bits(y.data(), y.cols(), matrix_ref(x), reinterpret_cast<const std::uint16_t*>(W.data), W.rows, false);
        if (b.size()) y.rowwise() += b.transpose();
    } else if (compute == QuantCompute::bf16 && bf16_compute_applies(W.type)) {
        detail::linear_forward_bf16_blocks(y, x, W, b);
    } else {
        detail::linear_forward_exact(y, x, W, b);
    }
}

}  // namespace sinkscope::model
