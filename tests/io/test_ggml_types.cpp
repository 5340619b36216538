// Tests for include/sinkscope/io/ggml_types.hpp against gguf-py's GGMLQuantizationType and GGML_QUANT_SIZES
// (tests/fixtures/io/ggml_types.json, written by scripts/make_io_fixtures.py).
#include <catch2/catch.hpp>

#include <limits>
#include <set>

#include <sinkscope/io/ggml_types.hpp>

#include "io/io_test_util.hpp"

using namespace sinkscope::io;
using sinkscope::Error;

TEST_CASE("GgmlType ids, names and block sizes agree with gguf-py", "[io][reference]") {
    const auto rows = sinkscope::test::io::read_json(sinkscope::test::fixture("io/ggml_types.json"));
    REQUIRE(rows.size() >= 30);
    std::set<std::uint32_t> ids;
    for (const auto& r : rows) {
        const auto id = r["id"].get<std::uint32_t>();
        INFO(r.dump());
        ids.insert(id);
        const auto t = ggml_type_from_id(id);
        REQUIRE(t.has_value());
        CHECK(static_cast<std::uint32_t>(*t) == id);
        CHECK(is_known(*t));
        CHECK(type_name(*t) == r["name"].get<std::string>());
        CHECK(block_elements(*t) == r["block_elements"].get<std::int64_t>());
        CHECK(block_bytes(*t) == r["block_bytes"].get<std::int64_t>());
    }
    // Every id gguf-py does not know is unknown here too.
    for (std::uint32_t id = 0; id < 256; ++id) {
        if (ids.count(id)) continue;
        INFO("id " << id);
        CHECK_FALSE(ggml_type_from_id(id).has_value());
        const auto t = static_cast<GgmlType>(id);
        CHECK_FALSE(is_known(t));
        CHECK_FALSE(is_supported(t));
        CHECK(type_name(t) == "unknown(" + std::to_string(id) + ")");
        CHECK_THROWS_AS(block_elements(t), Error);
        CHECK_THROWS_AS(block_bytes(t), Error);
        CHECK_THROWS_AS(tensor_bytes(t, 32), Error);
    }
    // The enum's spelled-out values (the brief's list).
    CHECK(static_cast<int>(GgmlType::Q5_0) == 6);
    CHECK(static_cast<int>(GgmlType::Q8_K) == 15);
    CHECK(static_cast<int>(GgmlType::BF16) == 30);
}

TEST_CASE("is_supported names exactly the dequantizable types", "[io]") {
    const std::set<GgmlType> supported = {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0,
                                          GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                                          GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};
    for (std::uint32_t id = 0; id < 64; ++id) {
        const auto t = static_cast<GgmlType>(id);
        CHECK(is_supported(t) == (supported.count(t) == 1));
    }
}

TEST_CASE("tensor_bytes: whole blocks, overflow and sign checks", "[io]") {
    CHECK(tensor_bytes(GgmlType::F32, 10) == 40);
    CHECK(tensor_bytes(GgmlType::BF16, 0) == 0);
    CHECK(tensor_bytes(GgmlType::Q4_0, 64) == 36);      // 2 blocks of 18 bytes
    CHECK(tensor_bytes(GgmlType::Q4_K, 512) == 288);    // 2 blocks of 144 bytes
    CHECK(tensor_bytes(GgmlType::Q6_K, 256) == 210);
    CHECK_THROWS_AS(tensor_bytes(GgmlType::Q4_K, 255), Error);
    CHECK_THROWS_AS(tensor_bytes(GgmlType::Q8_0, 33), Error);
    CHECK_THROWS_AS(tensor_bytes(GgmlType::F32, -1), Error);
    // 2^62 F64 values need 2^65 bytes.
    CHECK_THROWS_AS(tensor_bytes(GgmlType::F64, std::int64_t(1) << 62), Error);
    CHECK(tensor_bytes(GgmlType::F32, std::int64_t(1) << 61) == (std::uint64_t(1) << 63));
}
