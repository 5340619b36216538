// QuantMatrix: a non-owning view of a GGUF weight in its file type (its blocks, row by row), and
// QuantCompute, the arithmetic a product with one uses. The kernels are layers/quantized_linear.hpp's; this
// header is apart so that model/weights.hpp can hold views without the kernels (issue 11).
#pragma once

#include <cstdint>
#include <string>

#include "sinkscope/core/error.hpp"
#include "sinkscope/io/ggml_types.hpp"

namespace sinkscope::model {

/// Which arithmetic a quantized product uses (layers/quantized_linear.hpp's file comment).
enum class QuantCompute {
    exact,  // dequantized tiles × Eigen float32 GEMM: the dense result up to summation order
    int8,   // 8-bit activations, integer dot products (types without an int8 kernel use exact)
    bf16,   // bf16 activations and weights (BF16 read in place, block types dequantized to bf16 tiles), float32 sums
            // (oneDNN); F32 and F16 weights use exact
};

inline const char* to_string(QuantCompute c) {
    return c == QuantCompute::int8 ? "int8" : c == QuantCompute::bf16 ? "bf16" : "exact";
}

/// A non-owning view of a row-major GGUF weight: `rows` (out features) rows of `cols` (in features)
/// values, each row cols / block_elements(type) consecutive blocks, starting at `data`.
struct QuantMatrix {
    io::GgmlType type = io::GgmlType::F32;
    std::int64_t rows = 0;  // out features
    std::int64_t cols = 0;  // in features
    const std::uint8_t* data = nullptr;

    QuantMatrix() = default;
    /// Error if the type is unknown or not dequantizable, a size is negative, cols is not a multiple of
    /// the block, or data is null for a non-empty matrix.
    QuantMatrix(io::GgmlType type_, std::int64_t rows_, std::int64_t cols_, const std::uint8_t* data_)
        : type(type_), rows(rows_), cols(cols_), data(data_) {
        require(io::is_supported(type), "QuantMatrix: ggml type " + io::type_name(type) + " is not supported");
        require(rows >= 0 && cols >= 0, "QuantMatrix: negative shape " + std::to_string(rows) + " x " +
                                            std::to_string(cols));
        const std::int64_t be = io::block_elements(type);
        require(cols % be == 0, "QuantMatrix: " + std::to_string(cols) + " columns are not a whole number of " +
                                    io::type_name(type) + " blocks of " + std::to_string(be));
        require(data != nullptr || rows * cols == 0, "QuantMatrix: null data");
    }

    std::int64_t row_bytes() const { return cols / io::block_elements(type) * io::block_bytes(type); }
    std::uint64_t bytes() const { return static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(row_bytes()); }
    const std::uint8_t* row(std::int64_t r) const { return data + r * row_bytes(); }
    /// Rows [first, first + n) as a view of their own: a fused q|k|v or gate|up, or one expert of a stacked
    /// tensor, is whole rows of blocks, so each part is a view into the same bytes.
    QuantMatrix middle_rows(std::int64_t first, std::int64_t n) const {
        require(first >= 0 && n >= 0 && first + n <= rows,
                "QuantMatrix: rows [" + std::to_string(first) + ", " + std::to_string(first + n) + ") outside " +
                    std::to_string(rows) + " rows");
        return QuantMatrix(type, n, cols, row(first));
    }
    /// True for the default (no view): model weights then hold the matrix as a dense Mat.
    bool empty() const noexcept { return data == nullptr; }
};

}  // namespace sinkscope::model
