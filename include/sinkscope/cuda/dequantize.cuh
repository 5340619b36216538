// Dequantization of GGUF tensors on the device: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K,
// Q5_K, Q6_K (the types io::dequantize reads), eight output values a thread (one where the count or the
// destination's alignment does not allow eight).
//
// The decoders are __host__ __device__ functions of (block bytes, index in the block), written to do
// exactly the binary32 operations of io/dequantize.hpp in the same order (that file explains why those
// are bit-exact with ggml and gguf-py: every product is exact, so an FMA contraction on the device
// cannot change a result). Because they also compile for the host, the test checks them on the CPU,
// bit for bit, against io::dequantize and against the gguf-py fixtures, with no GPU; the device kernel
// is one line around them.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "sinkscope/cuda/common.cuh"
#include "sinkscope/io/ggml_types.hpp"

namespace sinkscope::cuda {

namespace dq {

__host__ __device__ inline float bits_to_float(std::uint32_t b) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(b);
#else
    float f;
    std::memcpy(&f, &b, 4);
    return f;
#endif
}
__host__ __device__ inline std::uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
#endif
}

// IEEE binary16 → binary32, exact (as io::half_to_float).
__host__ __device__ inline float half_bits(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exp = (h >> 10) & 0x1fu;
    const std::uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return bits_to_float(sign | 0x7f800000u | (mant << 13));
    if (exp != 0) return bits_to_float(sign | ((exp + (127 - 15)) << 23) | (mant << 13));
    const float f = static_cast<float>(mant) * 5.9604644775390625e-08f;  // mant · 2⁻²⁴, exact
    return bits_to_float(float_to_bits(f) | sign);
}
__host__ __device__ inline float bf16_bits(std::uint16_t b) { return bits_to_float(static_cast<std::uint32_t>(b) << 16); }

__host__ __device__ inline std::uint16_t u16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }
__host__ __device__ inline float f16(const std::uint8_t* p) { return half_bits(u16(p)); }
__host__ __device__ inline std::uint32_t u32(const std::uint8_t* p) {
    return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
           (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

// ggml's get_scale_min_k4 (see io/dequantize.hpp for the packing of the 12 bytes).
__host__ __device__ inline void scale_min_k4(int j, const std::uint8_t* q, int& sc, int& m) {
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
        m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

// Element e of one block (e < block_elements). Legacy 32-value blocks: element e < 16 is the low
// nibble of qs[e], element e ≥ 16 the high nibble of qs[e − 16]; its 5th bit is bit e of qh.
__host__ __device__ inline float q4_0(const std::uint8_t* b, int e) {
    const float d = f16(b);
    const std::uint8_t* qs = b + 2;
    const int q = e < 16 ? (qs[e] & 0x0F) : (qs[e - 16] >> 4);
    return static_cast<float>(q - 8) * d;
}
__host__ __device__ inline float q4_1(const std::uint8_t* b, int e) {
    const float d = f16(b), m = f16(b + 2);
    const std::uint8_t* qs = b + 4;
    const int q = e < 16 ? (qs[e] & 0x0F) : (qs[e - 16] >> 4);
    return d * static_cast<float>(q) + m;  // d·q exact: an FMA gives the same single rounding
}
__host__ __device__ inline float q5_0(const std::uint8_t* b, int e) {
    const float d = f16(b);
    const std::uint32_t qh = u32(b + 2);
    const std::uint8_t* qs = b + 6;
    const int lo = e < 16 ? (qs[e] & 0x0F) : (qs[e - 16] >> 4);
    const int q = lo | static_cast<int>(((qh >> e) & 1u) << 4);
    return d * static_cast<float>(q - 16);
}
__host__ __device__ inline float q5_1(const std::uint8_t* b, int e) {
    const float d = f16(b), m = f16(b + 2);
    const std::uint32_t qh = u32(b + 4);
    const std::uint8_t* qs = b + 8;
    const int lo = e < 16 ? (qs[e] & 0x0F) : (qs[e - 16] >> 4);
    const int q = lo | static_cast<int>(((qh >> e) & 1u) << 4);
    return d * static_cast<float>(q) + m;
}
__host__ __device__ inline float q8_0(const std::uint8_t* b, int e) {
    return static_cast<float>(static_cast<std::int8_t>(b[2 + e])) * f16(b);
}
// K-quants: 256 values; chunk k = e / 64 holds sub-blocks 2k (low nibbles of qs[32k..32k+31]) and
// 2k + 1 (high nibbles). x = (d·sc)·q − dmin·m.
__host__ __device__ inline float q4_k(const std::uint8_t* b, int e) {
    const float d = f16(b), dmin = f16(b + 2);
    const int k = e / 64, w = e % 64, l = w % 32, sub = 2 * k + (w >= 32);
    int sc, m;
    scale_min_k4(sub, b + 4, sc, m);
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
    const std::uint8_t byte = b[16 + 32 * k + l];
    const int q = w < 32 ? (byte & 0x0F) : (byte >> 4);
    return d1 * static_cast<float>(q) - m1;
}
__host__ __device__ inline float q5_k(const std::uint8_t* b, int e) {
    const float d = f16(b), dmin = f16(b + 2);
    const int k = e / 64, w = e % 64, l = w % 32, sub = 2 * k + (w >= 32);
    int sc, m;
    scale_min_k4(sub, b + 4, sc, m);
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
    const std::uint8_t byte = b[48 + 32 * k + l];
    const int lo = w < 32 ? (byte & 0x0F) : (byte >> 4);
    const int q = lo | (((b[16 + l] >> sub) & 1) << 4);  // bit `sub` of qh[l]
    return d1 * static_cast<float>(q) - m1;
}
// Q6_K: two halves of 128; within a half, quarter i = w / 32 and l = w % 32:
//   q = (nibble of ql[l + 32·(i odd)], low for i < 2) | (bits 2i..2i+1 of qh[l]) << 4,
//   x = (d · sc[l/16 + 2i]) · (q − 32)
__host__ __device__ inline float q6_k(const std::uint8_t* b, int e) {
    const int half = e / 128, w = e % 128, i = w / 32, l = w % 32;
    const std::uint8_t* ql = b + 64 * half;
    const std::uint8_t* qh = b + 128 + 32 * half;
    const std::uint8_t* sc = b + 192 + 8 * half;
    const float d = f16(b + 208);
    const std::uint8_t lbyte = ql[l + ((i & 1) ? 32 : 0)];
    const int lo = i < 2 ? (lbyte & 0x0F) : (lbyte >> 4);
    const int q = lo | (((qh[l] >> (2 * i)) & 3) << 4);
    const float ds = d * static_cast<float>(static_cast<std::int8_t>(sc[l / 16 + 2 * i]));
    return ds * static_cast<float>(q - 32);
}
__host__ __device__ inline float f32(const std::uint8_t* b, int) { return bits_to_float(u32(b)); }
__host__ __device__ inline float f16_value(const std::uint8_t* b, int) { return f16(b); }
__host__ __device__ inline float bf16_value(const std::uint8_t* b, int) { return bf16_bits(u16(b)); }

// Kernel-side type tags (the ggml ids).
enum Kind : int { kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kBF16 = 30 };

// Element e of the block starting at b, of ggml type `kind`.
__host__ __device__ inline float element(int kind, const std::uint8_t* b, int e) {
    switch (kind) {
        case kF32: return f32(b, e);
        case kF16: return f16_value(b, e);
        case kBF16: return bf16_value(b, e);
        case kQ4_0: return q4_0(b, e);
        case kQ4_1: return q4_1(b, e);
        case kQ5_0: return q5_0(b, e);
        case kQ5_1: return q5_1(b, e);
        case kQ8_0: return q8_0(b, e);
        case kQ4_K: return q4_k(b, e);
        case kQ5_K: return q5_k(b, e);
        case kQ6_K: return q6_k(b, e);
        default: return 0.f;
    }
}

// Eight consecutive values x[i0 .. i0+8) of a tensor of ggml type Kind (i0 a multiple of 8, so the eight
// share one block and, for the K-quants, one sub-block of 16 or 32 values): each value is computed by
// exactly the binary32 operations of element() above, but the block's scales are decoded once for the
// eight instead of once per value. The device kernel runs one call per thread and stores two float4s.
inline constexpr int kGroup = 8;

template <int Kind, int BlockElems, int BlockBytes>
__host__ __device__ inline void group8(const std::uint8_t* src, std::int64_t i0, float* v) {
    if constexpr (BlockElems == 1) {
        for (int j = 0; j < kGroup; ++j) v[j] = element(Kind, src + (i0 + j) * BlockBytes, 0);
    } else {
        const std::int64_t blk = i0 / BlockElems;
        const int e0 = int(i0 - blk * BlockElems);
        const std::uint8_t* b = src + blk * BlockBytes;
        if constexpr (Kind == kQ4_K) {
            const float d = f16(b), dmin = f16(b + 2);
            const int k = e0 / 64, w = e0 % 64, l0 = w % 32, sub = 2 * k + (w >= 32);
            int sc, m;
            scale_min_k4(sub, b + 4, sc, m);
            const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
            const std::uint8_t* qs = b + 16 + 32 * k + l0;
            for (int j = 0; j < kGroup; ++j) {
                const int q = w < 32 ? (qs[j] & 0x0F) : (qs[j] >> 4);
                v[j] = d1 * static_cast<float>(q) - m1;
            }
        } else if constexpr (Kind == kQ6_K) {
            const int half = e0 / 128, w = e0 % 128, i = w / 32, l0 = w % 32;
            const std::uint8_t* ql = b + 64 * half + l0 + ((i & 1) ? 32 : 0);
            const std::uint8_t* qh = b + 128 + 32 * half + l0;
            const std::uint8_t* sc = b + 192 + 8 * half;
            const float ds = f16(b + 208) * static_cast<float>(static_cast<std::int8_t>(sc[l0 / 16 + 2 * i]));
            for (int j = 0; j < kGroup; ++j) {
                const int lo = i < 2 ? (ql[j] & 0x0F) : (ql[j] >> 4);
                const int q = lo | (((qh[j] >> (2 * i)) & 3) << 4);
                v[j] = ds * static_cast<float>(q - 32);
            }
        } else if constexpr (Kind == kQ8_0) {
            const float d = f16(b);
            for (int j = 0; j < kGroup; ++j) v[j] = static_cast<float>(static_cast<std::int8_t>(b[2 + e0 + j])) * d;
        } else if constexpr (Kind == kQ4_1) {
            const float d = f16(b), m = f16(b + 2);
            const std::uint8_t* qs = b + 4 + (e0 & 15);
            for (int j = 0; j < kGroup; ++j) {
                const int q = e0 < 16 ? (qs[j] & 0x0F) : (qs[j] >> 4);
                v[j] = d * static_cast<float>(q) + m;
            }
        } else {
            for (int j = 0; j < kGroup; ++j) v[j] = element(Kind, b, e0 + j);
        }
    }
}

}  // namespace dq

namespace detail {

// One thread per 8 values (dq::group8), stored as two float4s: n a multiple of 8 and dst 16-byte aligned.
template <int Kind, int BlockElems, int BlockBytes>
__global__ void dequantize_group_kernel(const std::uint8_t* __restrict__ src, std::int64_t groups, float* __restrict__ dst) {
    for (std::int64_t g = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; g < groups; g += std::int64_t(gridDim.x) * blockDim.x) {
        float v[dq::kGroup];
        dq::group8<Kind, BlockElems, BlockBytes>(src, g * dq::kGroup, v);
        float4* out = reinterpret_cast<float4*>(dst + g * dq::kGroup);
        out[0] = make_float4(v[0], v[1], v[2], v[3]);
        out[1] = make_float4(v[4], v[5], v[6], v[7]);
    }
}

template <int Kind, int BlockElems, int BlockBytes>
__global__ void dequantize_kernel(const std::uint8_t* __restrict__ src, std::int64_t n, float* __restrict__ dst) {
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
        const std::int64_t blk = i / BlockElems;
        dst[i] = dq::element(Kind, src + blk * BlockBytes, int(i - blk * BlockElems));
    }
}

// Validates a dequantization request exactly as io::dequantize does; returns the number of blocks.
inline std::int64_t check_dequantize(io::GgmlType type, const void* src, std::int64_t n, const void* dst) {
    require(io::is_supported(type), "cuda::dequantize: ggml type " + io::type_name(type) + " is not supported");
    require(n >= 0, "cuda::dequantize: negative element count");
    const std::int64_t be = io::block_elements(type);
    require(n % be == 0, "cuda::dequantize: " + std::to_string(n) + " values are not a whole number of " +
                             io::type_name(type) + " blocks");
    require(n == 0 || (src != nullptr && dst != nullptr), "cuda::dequantize: null pointer");
    return n / be;
}

}  // namespace detail

// The host reference of the device path: the same decoders, run on the CPU (for the tests).
// Whole groups of 8 go through dq::group8, as the device kernel does when n is a multiple of 8 (every
// block type: 32 or 256 values a block); a remainder (F32/F16/BF16 only) value by value.
inline void dequantize_host(io::GgmlType type, const std::uint8_t* src, std::int64_t n, float* dst) {
    detail::check_dequantize(type, src, n, dst);
    const std::int64_t be = io::block_elements(type), bb = io::block_bytes(type);
    const std::int64_t grouped = n % dq::kGroup == 0 ? n : 0;
    for (std::int64_t i0 = 0; i0 < grouped; i0 += dq::kGroup) {
        using io::GgmlType;
        switch (type) {
#define SINKSCOPE_DQ_HOST_CASE(T, K, BE, BB) \
            case GgmlType::T: dq::group8<dq::K, BE, BB>(src, i0, dst + i0); break;
            SINKSCOPE_DQ_HOST_CASE(F32, kF32, 1, 4)
            SINKSCOPE_DQ_HOST_CASE(F16, kF16, 1, 2)
            SINKSCOPE_DQ_HOST_CASE(BF16, kBF16, 1, 2)
            SINKSCOPE_DQ_HOST_CASE(Q4_0, kQ4_0, 32, 18)
            SINKSCOPE_DQ_HOST_CASE(Q4_1, kQ4_1, 32, 20)
            SINKSCOPE_DQ_HOST_CASE(Q5_0, kQ5_0, 32, 22)
            SINKSCOPE_DQ_HOST_CASE(Q5_1, kQ5_1, 32, 24)
            SINKSCOPE_DQ_HOST_CASE(Q8_0, kQ8_0, 32, 34)
            SINKSCOPE_DQ_HOST_CASE(Q4_K, kQ4_K, 256, 144)
            SINKSCOPE_DQ_HOST_CASE(Q5_K, kQ5_K, 256, 176)
            SINKSCOPE_DQ_HOST_CASE(Q6_K, kQ6_K, 256, 210)
#undef SINKSCOPE_DQ_HOST_CASE
            default: throw Error("cuda::dequantize: ggml type " + io::type_name(type) + " is not supported");
        }
    }
    for (std::int64_t i = grouped; i < n; ++i)
        dst[i] = dq::element(int(type), src + (i / be) * bb, int(i % be));
}

// dst[0 .. n) = the n values of `src` (device memory: n / block_elements blocks of `type`), on ctx's stream.
inline void dequantize(const Context& ctx, io::GgmlType type, const std::uint8_t* src, std::int64_t n, float* dst) {
    detail::check_dequantize(type, src, n, dst);
    if (n == 0) return;
    // Groups of 8 values a thread where n allows it and dst is 16-byte aligned (always for cudaMalloc'd
    // buffers); otherwise one value a thread.
    const bool grouped = n % dq::kGroup == 0 && reinterpret_cast<std::uintptr_t>(dst) % 16 == 0;
    const unsigned grid = detail::blocks_for(grouped ? n / dq::kGroup : n, 256);
    cudaStream_t s = ctx.stream();
    using io::GgmlType;
    switch (type) {
#define SINKSCOPE_DQ_CASE(T, K, BE, BB)                                                                              \
        case GgmlType::T:                                                                                            \
            if (grouped) detail::dequantize_group_kernel<dq::K, BE, BB><<<grid, 256, 0, s>>>(src, n / dq::kGroup, dst); \
            else detail::dequantize_kernel<dq::K, BE, BB><<<grid, 256, 0, s>>>(src, n, dst);                          \
            break;
        SINKSCOPE_DQ_CASE(F32, kF32, 1, 4)
        SINKSCOPE_DQ_CASE(F16, kF16, 1, 2)
        SINKSCOPE_DQ_CASE(BF16, kBF16, 1, 2)
        SINKSCOPE_DQ_CASE(Q4_0, kQ4_0, 32, 18)
        SINKSCOPE_DQ_CASE(Q4_1, kQ4_1, 32, 20)
        SINKSCOPE_DQ_CASE(Q5_0, kQ5_0, 32, 22)
        SINKSCOPE_DQ_CASE(Q5_1, kQ5_1, 32, 24)
        SINKSCOPE_DQ_CASE(Q8_0, kQ8_0, 32, 34)
        SINKSCOPE_DQ_CASE(Q4_K, kQ4_K, 256, 144)
        SINKSCOPE_DQ_CASE(Q5_K, kQ5_K, 256, 176)
        SINKSCOPE_DQ_CASE(Q6_K, kQ6_K, 256, 210)
#undef SINKSCOPE_DQ_CASE
        default: throw Error("cuda::dequantize: ggml type " + io::type_name(type) + " is not supported");
    }
    SINKSCOPE_CUDA_CHECK_LAUNCH("dequantize_kernel");
}

// Uploads raw GGUF tensor bytes and dequantizes them on the device into a new float buffer.
inline DeviceBuffer<float> upload_dequantized(const Context& ctx, io::GgmlType type, const std::uint8_t* host_bytes,
                                              std::int64_t n) {
    detail::check_dequantize(type, host_bytes, n, host_bytes);
    DeviceBuffer<std::uint8_t> raw;
    raw.upload(host_bytes, std::size_t(io::tensor_bytes(type, n)), ctx.stream());
    DeviceBuffer<float> out{std::size_t(n)};
    dequantize(ctx, type, raw.data(), n, out.data());
    ctx.synchronize();  // `raw` is freed on return
    return out;
}

}  // namespace sinkscope::cuda
