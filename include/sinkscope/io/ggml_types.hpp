// sinkscope::io::GgmlType — ggml's tensor element types, their ids and block geometry.
//
// ggml stores a tensor as a sequence of *blocks*; a block of type t holds block_elements(t) values in
// block_bytes(t) bytes (F32: 1 value in 4 bytes; Q4_K: 256 values in 144 bytes). A tensor of n values
// therefore needs n / block_elements(t) * block_bytes(t) bytes, and n must be a multiple of the block
// (in GGUF, ne[0] — the contiguous dimension — must be).
//
// The numbering and sizes are ggml's (ggml.h `enum ggml_type`, ggml.c `type_traits`), checked by
// tests/io/test_ggml_types.cpp against gguf-py's GGMLQuantizationType and GGML_QUANT_SIZES. Ids that ggml
// retired (4, 5: Q4_2/Q4_3; 31–33: Q4_0_4_4…) or has not assigned are *unknown*: they have no name or
// size here, and a GGUF tensor using one is rejected. Every known type has a size, so a GGUF file with,
// say, IQ2_XXS tensors still opens; only dequantize() is limited to the types is_supported() names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "sinkscope/core/error.hpp"

namespace sinkscope::io {

/// ggml tensor types, with ggml's ids (the `type` field of a GGUF tensor info).
enum class GgmlType : std::uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
    NVFP4 = 40,
    Q1_0 = 41,
};

namespace detail {

struct GgmlTypeTraits {
    GgmlType type;
    const char* name;
    std::uint32_t block_elements;
    std::uint32_t block_bytes;
    bool supported;  // sinkscope::io::dequantize handles it
};

// QK_K = 256 for the K-quants. Sizes: ggml-common.h block structs, e.g. block_q4_K =
// { half d; half dmin; uint8 scales[12]; uint8 qs[128]; } = 2 + 2 + 12 + 128 = 144 bytes.
inline constexpr GgmlTypeTraits kGgmlTypes[] = {
    {GgmlType::F32, "F32", 1, 4, true},
    {GgmlType::F16, "F16", 1, 2, true},
    {GgmlType::Q4_0, "Q4_0", 32, 2 + 16, true},
    {GgmlType::Q4_1, "Q4_1", 32, 2 + 2 + 16, true},
    {GgmlType::Q5_0, "Q5_0", 32, 2 + 4 + 16, true},
    {GgmlType::Q5_1, "Q5_1", 32, 2 + 2 + 4 + 16, true},
    {GgmlType::Q8_0, "Q8_0", 32, 2 + 32, true},
    {GgmlType::Q8_1, "Q8_1", 32, 4 + 4 + 32, false},
    {GgmlType::Q2_K, "Q2_K", 256, 2 + 2 + 256 / 16 + 256 / 4, false},
    {GgmlType::Q3_K, "Q3_K", 256, 2 + 256 / 4 + 256 / 8 + 12, false},
    {GgmlType::Q4_K, "Q4_K", 256, 2 + 2 + 256 / 2 + 12, true},
    {GgmlType::Q5_K, "Q5_K", 256, 2 + 2 + 256 / 2 + 256 / 8 + 12, true},
    {GgmlType::Q6_K, "Q6_K", 256, 2 + 256 / 2 + 256 / 4 + 256 / 16, true},
    {GgmlType::Q8_K, "Q8_K", 256, 4 + 256 + 256 / 8, false},
    {GgmlType::IQ2_XXS, "IQ2_XXS", 256, 2 + 256 / 4, false},
    {GgmlType::IQ2_XS, "IQ2_XS", 256, 2 + 256 / 4 + 256 / 32, false},
    {GgmlType::IQ3_XXS, "IQ3_XXS", 256, 2 + 256 / 4 + 256 / 8, false},
    {GgmlType::IQ1_S, "IQ1_S", 256, 2 + 256 / 8 + 256 / 16, false},
    {GgmlType::IQ4_NL, "IQ4_NL", 32, 2 + 16, false},
    {GgmlType::IQ3_S, "IQ3_S", 256, 2 + 256 / 4 + 256 / 8 + 256 / 32 + 4, false},
    {GgmlType::IQ2_S, "IQ2_S", 256, 2 + 256 / 4 + 256 / 16, false},
    {GgmlType::IQ4_XS, "IQ4_XS", 256, 2 + 2 + 256 / 2 + 256 / 64, false},
    {GgmlType::I8, "I8", 1, 1, false},
    {GgmlType::I16, "I16", 1, 2, false},
    {GgmlType::I32, "I32", 1, 4, false},
    {GgmlType::I64, "I64", 1, 8, false},
    {GgmlType::F64, "F64", 1, 8, false},
    {GgmlType::IQ1_M, "IQ1_M", 256, 256 / 8 + 256 / 16 + 256 / 32, false},
    {GgmlType::BF16, "BF16", 1, 2, true},
    {GgmlType::TQ1_0, "TQ1_0", 256, 2 + 4 * 13, false},
    {GgmlType::TQ2_0, "TQ2_0", 256, 2 + 64, false},
    {GgmlType::MXFP4, "MXFP4", 32, 1 + 16, false},
    {GgmlType::NVFP4, "NVFP4", 64, 4 + 32, false},
    {GgmlType::Q1_0, "Q1_0", 128, 2 + 16, false},
};

inline const GgmlTypeTraits* find_traits(std::uint32_t id) noexcept {
    for (const auto& t : kGgmlTypes)
        if (static_cast<std::uint32_t>(t.type) == id) return &t;
    return nullptr;
}

inline const GgmlTypeTraits& traits_or_throw(GgmlType t) {
    const GgmlTypeTraits* tr = find_traits(static_cast<std::uint32_t>(t));
    if (tr == nullptr) throw Error("unknown ggml type id " + std::to_string(static_cast<std::uint32_t>(t)));
    return *tr;
}

}  // namespace detail

/// The GgmlType with ggml id `id`, or nullopt if ggml has no (current) type with that id.
inline std::optional<GgmlType> ggml_type_from_id(std::uint32_t id) noexcept {
    const auto* tr = detail::find_traits(id);
    if (tr == nullptr) return std::nullopt;
    return tr->type;
}

/// True for the ids listed in GgmlType (a GgmlType can hold any 32-bit value after a cast).
inline bool is_known(GgmlType t) noexcept { return detail::find_traits(static_cast<std::uint32_t>(t)) != nullptr; }

/// ggml's name of the type ("Q4_K", "BF16"), or "unknown(<id>)".
inline std::string type_name(GgmlType t) {
    const auto* tr = detail::find_traits(static_cast<std::uint32_t>(t));
    if (tr == nullptr) return "unknown(" + std::to_string(static_cast<std::uint32_t>(t)) + ")";
    return tr->name;
}

/// Values per block (1 for F32/F16/BF16, 32 for the legacy quants, 256 for K-quants). Error if unknown.
inline std::int64_t block_elements(GgmlType t) { return detail::traits_or_throw(t).block_elements; }

/// Bytes per block. Error if unknown.
inline std::int64_t block_bytes(GgmlType t) { return detail::traits_or_throw(t).block_bytes; }

/// True if dequantize() handles t: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K.
inline bool is_supported(GgmlType t) noexcept {
    const auto* tr = detail::find_traits(static_cast<std::uint32_t>(t));
    return tr != nullptr && tr->supported;
}

/// Bytes of a tensor of `n_elements` values of type t: n / block_elements * block_bytes.
/// Error if t is unknown, n < 0, n is not a multiple of the block, or the size overflows 64 bits.
inline std::uint64_t tensor_bytes(GgmlType t, std::int64_t n_elements) {
    const auto& tr = detail::traits_or_throw(t);
    require(n_elements >= 0, "negative element count " + std::to_string(n_elements));
    require(n_elements % tr.block_elements == 0,
            std::to_string(n_elements) + " values are not a whole number of " + tr.name + " blocks of " +
                std::to_string(tr.block_elements));
    const std::uint64_t blocks = static_cast<std::uint64_t>(n_elements / tr.block_elements);
    require(blocks <= UINT64_MAX / tr.block_bytes, "tensor size overflows 64 bits");
    return blocks * tr.block_bytes;
}

}  // namespace sinkscope::io
