// Causal attention of one head on AMX tiles, forward and backward, for bf16 training: the products of
// attention.hpp's query-blocked path (scores q·kᵀ, z = P·v and the four products of the backward) with the
// softmax and its backward fused between them, so that a head costs a handful of tile loops instead of a
// dozen oneDNN calls, each with its operand copies, and the float passes over the pattern between them.
//
// The arithmetic is that of the oneDNN path (attention.hpp with `bf16`): every product's operands rounded to
// bf16 (q, k, v, the pattern P, dz, dS) and summed in float32; the softmax and its backward in float32:
//   s[t, j] = (q_t · k_j)·scale for j ≤ t;   p = softmax(s) over j ≤ t;   z_t = Σ_j p[t, j] v_j
//   dP = dz vᵀ;   dS = scale · P ∘ (dP − ⟨p_t, dP_t⟩);   dq += dS k;   dk += dSᵀ q;   dv += Pᵀ dz
// Only the summation order differs (tests/train/test_amx_attention.cpp compares the two paths). Plain
// causal softmax only: a window, a soft cap or a sink slot take attention.hpp's path.
//
// AMX in brief: eight tile registers of up to 16 rows × 64 bytes; `tdpbf16ps C, A, B` adds to C (16 × 16
// float32) the product of A (16 × 32 bf16, row-major) and B (32 × 16 bf16) held in "VNNI" order: row kk of
// the B tile holds the pairs (B[2kk][c], B[2kk+1][c]) for c = 0..15. So each B operand is rearranged once
// per head (pack_*), and each A operand is a row-major bf16 block read in place. Linux grants a process the
// tiles' state on request (arch_prctl ARCH_REQ_XCOMP_PERM); amx_attention_available() asks once.
//
// Compiled where the compiler targets AMX (-march=native on a CPU with amx_bf16 and amx_tile); elsewhere
// amx_attention_available() is false and the callers keep attention.hpp's path.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/layers/bf16_matmul.hpp"

// (GCC spells the AMX macros __AMX_TILE__ / __AMX_BF16__, Clang __AMXTILE__ / __AMXBF16__.)
#if (defined(__AMX_TILE__) || defined(__AMXTILE__)) && (defined(__AMX_BF16__) || defined(__AMXBF16__)) && \
    defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512BF16__) && defined(__linux__) && \
    defined(EIGEN_VECTORIZE_AVX512)
#define SINKSCOPE_AMX_ATTENTION 1
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace sinkscope::model {

// Whether attention may run on AMX tiles in this process (settable: tests and benchmarks compare the two
// paths). Default on; effective only where amx_attention_available().
inline bool& amx_attention_enabled() {
    static bool on = true;
    return on;
}

// True when this build targets AMX and the kernel granted this process the tile state.
inline bool amx_attention_available() {
#ifdef SINKSCOPE_AMX_ATTENTION
    static const bool granted = [] {
        constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;  // <asm/prctl.h>, XFEATURE_XTILEDATA
        return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
    }();
    return granted;
#else
    return false;
#endif
}

// Whether a head of `head_dim` can take the AMX path now; `plain_causal`: a causal softmax without window,
// soft cap or sink slot (the caller knows its rule).
inline bool use_amx_attention(std::int64_t head_dim, bool plain_causal) {
    return plain_causal && head_dim % 32 == 0 && head_dim > 0 && amx_attention_enabled() && amx_attention_available();
}

#ifdef SINKSCOPE_AMX_ATTENTION
namespace amx {

using Bits = detail::Bf16Bits;
constexpr std::int64_t kTile = 16;  // rows of a tile, and float32 columns of a C tile
constexpr std::int64_t kStep = 32;  // bf16 columns of an A tile: the inner dimension of one tdpbf16ps

inline std::int64_t round_up(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }

// Eight tiles of 16 rows × 64 bytes. oneDNN configures its own between our calls, so every kernel loads
// this first and releases the tiles at the end.
struct alignas(64) TileConfig {
    std::uint8_t palette = 1, start_row = 0, reserved[14] = {};
    std::uint16_t colsb[16] = {};
    std::uint8_t rows[16] = {};
};
struct ScopedTiles {
    ScopedTiles() {
        TileConfig cfg;
        for (int i = 0; i < 8; ++i) {
            cfg.colsb[i] = 64;
            cfg.rows[i] = 16;
        }
        _tile_loadconfig(&cfg);
    }
    ~ScopedTiles() { _tile_release(); }
};

// Tiles 0–3 accumulate C, tile 4 holds A, tile 6 holds B. Tile numbers are immediates, hence the switch.
inline void zero_c(int n) {
    if (n > 0) _tile_zero(0);
    if (n > 1) _tile_zero(1);
    if (n > 2) _tile_zero(2);
    if (n > 3) _tile_zero(3);
}
inline void dp_into(int c) {
    switch (c) {
        case 0: _tile_dpbf16ps(0, 4, 6); break;
        case 1: _tile_dpbf16ps(1, 4, 6); break;
        case 2: _tile_dpbf16ps(2, 4, 6); break;
        default: _tile_dpbf16ps(3, 4, 6); break;
    }
}
inline void store_c(int c, float* dst, std::int64_t stride_bytes) {
    switch (c) {
        case 0: _tile_stored(0, dst, stride_bytes); break;
        case 1: _tile_stored(1, dst, stride_bytes); break;
        case 2: _tile_stored(2, dst, stride_bytes); break;
        default: _tile_stored(3, dst, stride_bytes); break;
    }
}

// out ← rows × cols floats (row stride ld) as the bf16 rows of a (rows_padded × cols) matrix, zero rows
// after `rows`; or the same from bf16 bits, copied.
template <class X>
void rows_to_bits(Bits& out, const X* x, std::int64_t ld, std::int64_t rows, std::int64_t rows_padded, std::int64_t cols) {
    out.resize(std::size_t(rows_padded * cols));
    for (std::int64_t t = 0; t < rows; ++t) {
        if constexpr (std::is_same_v<X, float>) detail::convert_bf16(out.data() + t * cols, x + t * ld, cols);
        else std::memcpy(out.data() + t * cols, x + t * ld, std::size_t(cols) * sizeof(std::uint16_t));
    }
    std::memset(out.data() + rows * cols, 0, std::size_t((rows_padded - rows) * cols) * sizeof(std::uint16_t));
}

// r[0..15] (16 rows of 16 32-bit lanes) ← its transpose: unpack 32- and 64-bit pairs within 128-bit lanes,
// then gather the lanes. After the unpacks c[4g + e] holds, in its 128-bit lane L, rows 4g..4g+3 of
// column 4L + e; the lane shuffles put the four lanes of column 4L + e side by side.
inline void transpose16(__m512i r[16]) {
    __m512i b[16], c[16];
    for (int i = 0; i < 16; i += 2) {
        b[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        b[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int g = 0; g < 16; g += 4) {
        c[g] = _mm512_unpacklo_epi64(b[g], b[g + 2]);
        c[g + 1] = _mm512_unpackhi_epi64(b[g], b[g + 2]);
        c[g + 2] = _mm512_unpacklo_epi64(b[g + 1], b[g + 3]);
        c[g + 3] = _mm512_unpackhi_epi64(b[g + 1], b[g + 3]);
    }
    for (int e = 0; e < 4; ++e) {
        const __m512i x0 = _mm512_shuffle_i32x4(c[e], c[4 + e], 0x44), x1 = _mm512_shuffle_i32x4(c[e], c[4 + e], 0xEE);
        const __m512i y0 = _mm512_shuffle_i32x4(c[8 + e], c[12 + e], 0x44), y1 = _mm512_shuffle_i32x4(c[8 + e], c[12 + e], 0xEE);
        r[e] = _mm512_shuffle_i32x4(x0, y0, 0x88);
        r[4 + e] = _mm512_shuffle_i32x4(x0, y0, 0xDD);
        r[8 + e] = _mm512_shuffle_i32x4(x1, y1, 0x88);
        r[12 + e] = _mm512_shuffle_i32x4(x1, y1, 0xDD);
    }
}

// 32 bf16 in VNNI pair order from two rows of 16: (a[0], b[0], a[1], b[1], …, a[15], b[15]).
inline __m512i interleave_pairs(__m256i a, __m256i b) {
    const __m512i idx = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38, 6, 37, 5, 36, 4,
                                         35, 3, 34, 2, 33, 1, 32, 0);
    return _mm512_permutex2var_epi16(_mm512_castsi256_si512(a), idx, _mm512_castsi256_si512(b));
}

// B operands of "x · mᵀ" products (the scores q kᵀ, the backward's dz vᵀ), from m (Tp × dh bf16, row-major):
// block (j, s) is the tile for keys [16j, 16j + 16) and dimensions [32s, 32s + 32): its row kk holds the
// pairs (m[16j + c][32s + 2kk], m[16j + c][32s + 2kk + 1]) for c = 0..15 — the 16 × 16 transpose of m's block
// read as 32-bit pairs. Blocks are 1 KB, (j, s) at ((j·(dh/32) + s)·16 + kk)·32 bf16.
inline void pack_transposed(Bits& out, const std::uint16_t* m, std::int64_t Tp, std::int64_t dh) {
    const std::int64_t steps = dh / kStep;
    out.resize(std::size_t(Tp * dh));
    __m512i r[16];
    for (std::int64_t j = 0; j < Tp / kTile; ++j)
        for (std::int64_t s = 0; s < steps; ++s) {
            for (int c = 0; c < 16; ++c) r[c] = _mm512_loadu_si512(m + (j * kTile + c) * dh + s * kStep);
            transpose16(r);
            std::uint16_t* blk = out.data() + (j * steps + s) * kTile * kStep;
            for (int kk = 0; kk < 16; ++kk) _mm512_storeu_si512(blk + kk * kStep, r[kk]);
        }
}

// B operands of "x · m" products with m (Tp × dh bf16, row-major) as it is (z = P v, the backward's dS k):
// block (s, n) is the tile for rows [32s, 32s + 32) and columns [16n, 16n + 16): its row kk holds
// (m[32s + 2kk][16n + c], m[32s + 2kk + 1][16n + c]) for c = 0..15. Blocks at ((s·(dh/16) + n)·16 + kk)·32.
inline void pack_pairs(Bits& out, const std::uint16_t* m, std::int64_t Tp, std::int64_t dh) {
    const std::int64_t tiles = dh / kTile;
    out.resize(std::size_t(Tp * dh));
    for (std::int64_t s = 0; s < Tp / kStep; ++s)
        for (std::int64_t n = 0; n < tiles; ++n) {
            std::uint16_t* blk = out.data() + (s * tiles + n) * kTile * kStep;
            for (std::int64_t kk = 0; kk < kTile; ++kk) {
                const std::uint16_t* r0 = m + (s * kStep + 2 * kk) * dh + n * kTile;
                const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0));
                const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0 + dh));
                _mm512_storeu_si512(blk + kk * kStep, interleave_pairs(a, b));
            }
        }
}

// The transpose of m (Tp × dh bf16) as a row-major (dh × Tp) bf16 matrix: A operands of "mᵀ · x" products.
// Rows paired into 32-bit (m[2i][d], m[2i + 1][d]) are a (Tp/2 × dh) matrix of pairs; its 32-bit transpose
// has in row d the pairs for i = 0, 1, …, i.e. m[0][d], m[1][d], m[2][d], …: row d of mᵀ.
inline void transpose_bits(Bits& out, const std::uint16_t* m, std::int64_t Tp, std::int64_t dh) {
    out.resize(std::size_t(Tp * dh));
    __m512i r[16];
    for (std::int64_t i0 = 0; i0 < Tp / 2; i0 += 16)      // 16 row pairs: rows [2·i0, 2·i0 + 32)
        for (std::int64_t d0 = 0; d0 < dh; d0 += 16) {    // 16 columns
            for (int i = 0; i < 16; ++i) {
                const std::uint16_t* r0 = m + (2 * (i0 + i)) * dh + d0;
                r[i] = interleave_pairs(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0)),
                                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0 + dh)));
            }
            transpose16(r);
            for (int d = 0; d < 16; ++d) _mm512_storeu_si512(out.data() + (d0 + d) * Tp + 2 * i0, r[d]);
        }
}

// Two rows of 16 floats a and b, rounded → 32 bf16 in VNNI pair order (a[0], b[0], a[1], b[1], …): 64
// bytes of a B operand whose inner dimension runs over the rows a and b belong to.
inline void store_pair_interleaved(std::uint16_t* dst, __m512 a, __m512 b) {
    _mm512_storeu_si512(dst, interleave_pairs(reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(a)),
                                              reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(b))));
}

// The first `left` of 16 lanes (none when left ≤ 0).
inline __mmask16 live_mask(std::int64_t left) {
    return left >= 16 ? __mmask16(0xFFFF) : left <= 0 ? __mmask16(0) : __mmask16((1u << left) - 1u);
}

// out (16 × 16·key_tiles floats, row stride ldo floats) = a · mᵀ: a is 16 rows of a row-major (· × dh)
// bf16 matrix, m's tiles come from pack_transposed. Four key tiles at a time share each load of a.
inline void product_with_transposed(float* out, std::int64_t ldo, const std::uint16_t* a, std::int64_t dh, const Bits& m_tiles,
                                    std::int64_t key_tiles) {
    const std::int64_t steps = dh / kStep;
    for (std::int64_t j0 = 0; j0 < key_tiles; j0 += 4) {
        const int n = int(std::min<std::int64_t>(4, key_tiles - j0));
        zero_c(n);
        for (std::int64_t s = 0; s < steps; ++s) {
            _tile_loadd(4, a + s * kStep, int(dh * 2));
            for (int c = 0; c < n; ++c) {
                _tile_loadd(6, m_tiles.data() + ((j0 + c) * steps + s) * kTile * kStep, 64);
                dp_into(c);
            }
        }
        for (int c = 0; c < n; ++c) store_c(c, out + (j0 + c) * kTile, ldo * 4);
    }
}

// out (16 × dh floats, row stride dh) = a · m over rows [0, keys) of m: a is 16 rows of bf16 (row stride
// lda), m's tiles come from pack_pairs; keys a multiple of 32. Four 16-column tiles of out at a time.
inline void product_with_pairs(float* out, const std::uint16_t* a, std::int64_t lda, const Bits& m_tiles, std::int64_t keys,
                               std::int64_t dh) {
    const std::int64_t tiles = dh / kTile;
    for (std::int64_t n0 = 0; n0 < tiles; n0 += 4) {
        const int n = int(std::min<std::int64_t>(4, tiles - n0));
        zero_c(n);
        for (std::int64_t s = 0; s < keys / kStep; ++s) {
            _tile_loadd(4, a + s * kStep, int(lda * 2));
            for (int c = 0; c < n; ++c) {
                _tile_loadd(6, m_tiles.data() + (s * tiles + n0 + c) * kTile * kStep, 64);
                dp_into(c);
            }
        }
        for (int c = 0; c < n; ++c) store_c(c, out + (n0 + c) * kTile, dh * 4);
    }
}

// Per-thread scratch of the kernels, kept between calls (the backward's dsv and pv are Tp × Tp bf16 each,
// a quarter of one head's float pattern).
struct Scratch {
    Bits qb, kb, vb, kt, vz, dzb, vt, kz, qt, dzt, pb, dsb, dsv, pv;
    std::vector<float> s, stage;
};
inline Scratch& scratch() {
    thread_local Scratch s;
    return s;
}

}  // namespace amx

// Forward of one head (query head h over kv head g) of the causal attention, on AMX tiles:
//   pattern rows [0, T) (T × T, row stride ldp): p[t, j] for j ≤ t, 0 after;
//   z (T × dh at `z`, row stride ldz) = P v.
// q, k, v: T rows of dh floats at the given pointers (row strides ldq, ldk, ldv). scale > 0.
inline void amx_attention_forward_head(float* pattern, std::int64_t ldp, float* z, std::int64_t ldz, const float* q,
                                       std::int64_t ldq, const float* k, std::int64_t ldk, const float* v, std::int64_t ldv,
                                       std::int64_t T, std::int64_t dh, float scale) {
    using namespace amx;
    Scratch& w = scratch();
    const std::int64_t Tp = round_up(T, kStep);
    rows_to_bits(w.qb, q, ldq, T, Tp, dh);
    rows_to_bits(w.kb, k, ldk, T, Tp, dh);
    rows_to_bits(w.vb, v, ldv, T, Tp, dh);
    pack_transposed(w.kt, w.kb.data(), Tp, dh);
    pack_pairs(w.vz, w.vb.data(), Tp, dh);
    w.s.resize(std::size_t(kTile * Tp));
    w.pb.resize(std::size_t(kTile * Tp));
    w.stage.resize(std::size_t(kTile * dh));
    const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity()), vscale = _mm512_set1_ps(scale);
    const ScopedTiles tiles;
    for (std::int64_t i0 = 0; i0 < T; i0 += kTile) {
        const std::int64_t rows = std::min(kTile, T - i0), key_tiles = i0 / kTile + 1, keys_pad = round_up(i0 + kTile, kStep);
        // s = q kᵀ for this tile's 16 queries and the keys [0, 16·key_tiles)
        product_with_transposed(w.s.data(), Tp, w.qb.data() + i0 * dh, dh, w.kt, key_tiles);
        // softmax of each row over its keys [0, t]: the float pattern row and the bf16 A operand of z
        for (std::int64_t r = 0; r < kTile; ++r) {
            std::uint16_t* pb = w.pb.data() + r * Tp;
            if (r >= rows) {
                std::memset(pb, 0, std::size_t(keys_pad) * sizeof(std::uint16_t));
                continue;
            }
            const std::int64_t t = i0 + r, n = t + 1;
            float* s = w.s.data() + r * Tp;
            __m512 vmax = ninf;
            for (std::int64_t j = 0; j < n; j += 16) vmax = _mm512_max_ps(vmax, _mm512_mask_loadu_ps(ninf, live_mask(n - j), s + j));
            const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(vmax));
            __m512 vsum = _mm512_setzero_ps();
            for (std::int64_t j = 0; j < n; j += 16) {
                const __mmask16 live = live_mask(n - j);
                const __m512 x = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(live, s + j), m), vscale);
                const __m512 e = _mm512_maskz_mov_ps(live, Eigen::internal::pexp<Eigen::internal::Packet16f>(x));
                _mm512_storeu_ps(s + j, e);
                vsum = _mm512_add_ps(vsum, e);
            }
            const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vsum));
            float* p = pattern + t * ldp;
            for (std::int64_t j = 0; j < n; j += 16) {
                const __mmask16 live = live_mask(n - j);
                const __m512 x = _mm512_mul_ps(_mm512_loadu_ps(s + j), inv);
                _mm512_mask_storeu_ps(p + j, live, x);
                _mm256_mask_storeu_epi16(pb + j, live, reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(x)));
            }
            std::memset(p + n, 0, std::size_t(T - n) * sizeof(float));
            std::memset(pb + n, 0, std::size_t(keys_pad - n) * sizeof(std::uint16_t));
        }
        // z = P v over the keys [0, keys_pad)
        product_with_pairs(w.stage.data(), w.pb.data(), Tp, w.vz, keys_pad, dh);
        for (std::int64_t r = 0; r < rows; ++r) std::memcpy(z + (i0 + r) * ldz, w.stage.data() + r * dh, std::size_t(dh) * sizeof(float));
    }
}

// Backward of one head, on AMX tiles: with P (T × T floats at `pattern`, row stride ldp, zero above the
// diagonal) and dz (T × dh floats, row stride ldz), and the bf16 bits of q, k, v (T × dh, row strides
// ldq, ldk, ldv), accumulates
//   dq += dS k,   dk += dSᵀ q,   dv += Pᵀ dz,   dS = scale · P ∘ (dz vᵀ − ⟨p_t, dP_t⟩)
// into dq, dk, dv (T × dh floats at the given pointers, row strides ldgq, ldgk, ldgv).
inline void amx_attention_backward_head(float* dq, std::int64_t ldgq, float* dk, std::int64_t ldgk, float* dv,
                                        std::int64_t ldgv, const float* pattern, std::int64_t ldp, const float* dz,
                                        std::int64_t ldz, const std::uint16_t* q, std::int64_t ldq, const std::uint16_t* k,
                                        std::int64_t ldk, const std::uint16_t* v, std::int64_t ldv, std::int64_t T,
                                        std::int64_t dh, float scale) {
    using namespace amx;
    Scratch& w = scratch();
    const std::int64_t Tp = round_up(T, kStep), dtiles = dh / kTile;
    rows_to_bits(w.qb, q, ldq, T, Tp, dh);
    rows_to_bits(w.kb, k, ldk, T, Tp, dh);
    rows_to_bits(w.vb, v, ldv, T, Tp, dh);
    rows_to_bits(w.dzb, dz, ldz, T, Tp, dh);
    pack_transposed(w.vt, w.vb.data(), Tp, dh);  // B of dP = dz vᵀ
    pack_pairs(w.kz, w.kb.data(), Tp, dh);       // B of dq = dS k
    transpose_bits(w.qt, w.qb.data(), Tp, dh);   // A of dkᵀ = qᵀ dS
    transpose_bits(w.dzt, w.dzb.data(), Tp, dh); // A of dvᵀ = dzᵀ P
    w.s.resize(std::size_t(kTile * Tp));
    w.dsb.resize(std::size_t(kTile * Tp));
    w.dsv.resize(std::size_t(Tp * Tp));  // (Tp/2 × 2Tp): row kk holds (x[2kk][j], x[2kk + 1][j]) for every key j
    w.pv.resize(std::size_t(Tp * Tp));
    w.stage.resize(std::size_t(kTile * dh));
    const __m512 vscale = _mm512_set1_ps(scale);
    const ScopedTiles tiles;
    for (std::int64_t i0 = 0; i0 < Tp; i0 += kTile) {
        const std::int64_t rows = std::max<std::int64_t>(0, std::min(kTile, T - i0));
        const std::int64_t key_tiles = i0 / kTile + 1, keys_pad = round_up(i0 + kTile, kStep);
        // dP = dz vᵀ for this tile's 16 queries and keys [0, 16·key_tiles)
        product_with_transposed(w.s.data(), Tp, w.dzb.data() + i0 * dh, dh, w.vt, key_tiles);
        // dS = scale · P ∘ (dP − ⟨p, dP⟩) row by row, in place of dP (rows past T and keys past t: 0)
        for (std::int64_t r = 0; r < kTile; ++r) {
            float* d = w.s.data() + r * Tp;
            const std::int64_t t = i0 + r, n = r < rows ? t + 1 : 0;
            const float* p = pattern + t * ldp;
            __m512 acc = _mm512_setzero_ps();
            for (std::int64_t j = 0; j < n; j += 16) {
                const __mmask16 live = live_mask(n - j);
                acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(live, p + j), _mm512_maskz_loadu_ps(live, d + j), acc);
            }
            const __m512 inner = _mm512_set1_ps(_mm512_reduce_add_ps(acc));
            std::uint16_t* db = w.dsb.data() + r * Tp;
            for (std::int64_t j = 0; j < keys_pad; j += 16) {
                const __mmask16 live = live_mask(n - j);
                const __m512 pj = _mm512_maskz_loadu_ps(live, p + j);
                const __m512 x = _mm512_mul_ps(vscale, _mm512_mul_ps(pj, _mm512_sub_ps(_mm512_loadu_ps(d + j), inner)));
                const __m512 ds = _mm512_maskz_mov_ps(live, x);
                _mm512_storeu_ps(d + j, ds);
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(db + j), reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(ds)));
            }
        }
        // dS and P in pair order over queries (B operands of dkᵀ and dvᵀ), keys [0, keys_pad)
        for (std::int64_t rr = 0; rr < kTile; rr += 2) {
            const std::int64_t t = i0 + rr;
            std::uint16_t* dsv = w.dsv.data() + (t / 2) * 2 * Tp;
            std::uint16_t* pv = w.pv.data() + (t / 2) * 2 * Tp;
            const float* d0 = w.s.data() + rr * Tp;
            const std::int64_t n0 = rr < rows ? t + 1 : 0, n1 = rr + 1 < rows ? t + 2 : 0;
            const float* p0 = pattern + t * ldp;
            const float* p1 = p0 + ldp;
            for (std::int64_t j = 0; j < keys_pad; j += 16) {
                store_pair_interleaved(dsv + 2 * j, _mm512_loadu_ps(d0 + j), _mm512_loadu_ps(d0 + Tp + j));
                const __m512 a = _mm512_maskz_loadu_ps(live_mask(n0 - j), p0 + j);
                const __m512 b = _mm512_maskz_loadu_ps(live_mask(n1 - j), p1 + j);
                store_pair_interleaved(pv + 2 * j, a, b);
            }
        }
        // dq += dS k over keys [0, keys_pad)
        if (rows == 0) continue;
        product_with_pairs(w.stage.data(), w.dsb.data(), Tp, w.kz, keys_pad, dh);
        for (std::int64_t r = 0; r < rows; ++r) {
            float* o = dq + (i0 + r) * ldgq;
            const float* st = w.stage.data() + r * dh;
            for (std::int64_t j = 0; j < dh; ++j) o[j] += st[j];
        }
    }
    // dkᵀ = qᵀ dS and dvᵀ = dzᵀ P, key tile by key tile: queries from the 32-row step holding the tile's
    // first key (earlier queries do not see it), added transposed into dk and dv
    auto transposed_product = [&](const Bits& a_t, const Bits& b_pairs, float* out, std::int64_t ldo) {
        for (std::int64_t j0 = 0; j0 * kTile < T; ++j0) {
            for (std::int64_t n0 = 0; n0 < dtiles; n0 += 4) {
                const int n = int(std::min<std::int64_t>(4, dtiles - n0));
                zero_c(n);
                for (std::int64_t s = j0 / 2; s < Tp / kStep; ++s) {
                    _tile_loadd(6, b_pairs.data() + s * kTile * 2 * Tp + j0 * kStep, int(2 * Tp * 2));
                    for (int c = 0; c < n; ++c) {
                        _tile_loadd(4, a_t.data() + (n0 + c) * kTile * Tp + s * kStep, int(Tp * 2));
                        dp_into(c);
                    }
                }
                for (int c = 0; c < n; ++c) store_c(c, w.stage.data() + c * kTile * kTile, kTile * 4);
                const std::int64_t keys = std::min(kTile, T - j0 * kTile);
                __m512i r[16];
                for (int c = 0; c < n; ++c) {
                    for (int dd = 0; dd < 16; ++dd) r[dd] = _mm512_loadu_si512(w.stage.data() + (c * kTile + dd) * kTile);
                    transpose16(r);  // r[key]: the 16 dimensions of one key
                    for (std::int64_t key = 0; key < keys; ++key) {
                        float* o = out + (j0 * kTile + key) * ldo + (n0 + c) * kTile;
                        _mm512_storeu_ps(o, _mm512_add_ps(_mm512_loadu_ps(o), _mm512_castsi512_ps(r[key])));
                    }
                }
            }
        }
    };
    transposed_product(w.qt, w.dsv, dk, ldgk);
    transposed_product(w.dzt, w.pv, dv, ldgv);
}

#else  // no AMX in this build: use_amx_attention() is false, so these are never called

inline void amx_attention_forward_head(float*, std::int64_t, float*, std::int64_t, const float*, std::int64_t, const float*,
                                       std::int64_t, const float*, std::int64_t, std::int64_t, std::int64_t, float) {
    throw Error("amx_attention_forward_head: this build has no AMX");
}
inline void amx_attention_backward_head(float*, std::int64_t, float*, std::int64_t, float*, std::int64_t, const float*,
                                        std::int64_t, const float*, std::int64_t, const std::uint16_t*, std::int64_t,
                                        const std::uint16_t*, std::int64_t, const std::uint16_t*, std::int64_t, std::int64_t,
                                        std::int64_t, float) {
    throw Error("amx_attention_backward_head: this build has no AMX");
}

#endif  // SINKSCOPE_AMX_ATTENTION

}  // namespace sinkscope::model
