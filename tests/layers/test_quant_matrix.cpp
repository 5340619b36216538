// layers/quant_matrix.hpp: a QuantMatrix laid over gguf-py's blocks (tests/fixtures/io/dequant, written by
// scripts/make_io_fixtures.py) as a matrix of 2 blocks a row. Each row, and each row of every middle_rows
// view, dequantizes to gguf-py's values for exactly those blocks; sizes are the file's bytes; malformed
// shapes are refused with the type and block size named.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

#include <sinkscope/io/dequantize.hpp>
#include <sinkscope/layers/quant_matrix.hpp>

#include "test_paths.hpp"

using namespace sinkscope;
using sinkscope::model::QuantMatrix;

TEST_CASE("quant_matrix: rows and middle_rows views read gguf-py's blocks and values", "[quant_matrix][reference]") {
    for (const std::string name : {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K"}) {
        CAPTURE(name);
        const auto blocks = xt::load_npy<std::uint8_t>(test::fixture("io/dequant/" + name + ".blocks.npy"));
        const auto values = xt::load_npy<float>(test::fixture("io/dequant/" + name + ".values.npy"));
        io::GgmlType type = io::GgmlType::F32;
        for (std::uint32_t id = 0; id < 64; ++id)
            if (io::type_name(static_cast<io::GgmlType>(id)) == name) type = static_cast<io::GgmlType>(id);
        const std::int64_t n_blocks = std::int64_t(blocks.shape()[0]), per_block = std::int64_t(values.shape()[1]);
        REQUIRE(n_blocks % 2 == 0);
        const std::vector<std::uint8_t> bytes(blocks.begin(), blocks.end());
        const std::vector<float> expected(values.begin(), values.end());
        const QuantMatrix m(type, n_blocks / 2, 2 * per_block, bytes.data());
        CHECK(m.bytes() == bytes.size());
        CHECK(m.row_bytes() == 2 * std::int64_t(blocks.shape()[1]));
        for (std::int64_t first = 0; first < m.rows; ++first)
            for (std::int64_t n = 0; first + n <= m.rows; ++n) {
                const QuantMatrix v = m.middle_rows(first, n);
                CHECK(v.rows == n);
                for (std::int64_t r = 0; r < n; ++r) {
                    std::vector<float> got(std::size_t(v.cols));
                    io::dequantize<float>(type, v.row(r), v.cols, got.data());
                    const float* want = expected.data() + (first + r) * m.cols;
                    CHECK(std::memcmp(got.data(), want, got.size() * sizeof(float)) == 0);
                }
            }
    }
}

TEST_CASE("quant_matrix: shapes that are not whole blocks, rows outside the view and null data are refused", "[quant_matrix]") {
    const std::vector<std::uint8_t> bytes(4 * 34, 0);  // four Q8_0 blocks of 32 values
    CHECK_THROWS_WITH(QuantMatrix(io::GgmlType::Q8_0, 2, 48, bytes.data()),
                      Catch::Contains("48 columns") && Catch::Contains("Q8_0") && Catch::Contains("32"));
    CHECK_THROWS_WITH(QuantMatrix(io::GgmlType::Q8_0, -1, 32, bytes.data()), Catch::Contains("negative shape"));
    CHECK_THROWS_WITH(QuantMatrix(io::GgmlType::Q8_0, 2, 64, nullptr), Catch::Contains("null data"));
    CHECK_NOTHROW(QuantMatrix(io::GgmlType::Q8_0, 0, 64, nullptr));
    const QuantMatrix m(io::GgmlType::Q8_0, 2, 64, bytes.data());
    CHECK_THROWS_WITH(m.middle_rows(1, 2), Catch::Contains("rows [1, 3) outside 2 rows"));
    CHECK(m.middle_rows(1, 1).row(0) == bytes.data() + 2 * 34);
    CHECK(QuantMatrix().empty());
    CHECK_FALSE(m.empty());
}
