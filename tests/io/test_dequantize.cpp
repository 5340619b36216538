// Tests for include/sinkscope/io/dequantize.hpp.
//  [reference]: blocks and values written by gguf-py (scripts/make_io_fixtures.py -> tests/fixtures/io/dequant,
//               read here with xtensor's independent .npy reader). Tolerance: none — bitwise equality for every
//               type (dequantize.hpp explains why the binary32 results cannot differ: all products are exact,
//               so the single rounding per value is the same IEEE operation in ggml, numpy and here).
//  [property]:  random blocks against an element-by-element decoding evaluated exactly in double and rounded
//               once to float, which is what exact products + one final rounding means.
#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include <cmath>
#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

#include <sinkscope/io/dequantize.hpp>

#include "io/io_test_util.hpp"

using namespace sinkscope::io;
using sinkscope::Error;
namespace tio = sinkscope::test::io;

namespace {

struct Fixture {
    GgmlType type;
    std::vector<std::uint8_t> blocks;  // raw bytes, n_blocks * block_bytes
    std::vector<float> values;         // n_blocks * block_elements
};

Fixture load_fixture(const std::string& name) {
    const auto t = ggml_type_from_id([&] {
        for (std::uint32_t id = 0; id < 64; ++id)
            if (type_name(static_cast<GgmlType>(id)) == name) return id;
        return 999u;
    }());
    REQUIRE(t.has_value());
    auto blocks = xt::load_npy<std::uint8_t>(sinkscope::test::fixture("io/dequant/" + name + ".blocks.npy"));
    auto values = xt::load_npy<float>(sinkscope::test::fixture("io/dequant/" + name + ".values.npy"));
    REQUIRE(blocks.dimension() == 2);
    REQUIRE(values.dimension() == 2);
    REQUIRE(blocks.shape()[0] == values.shape()[0]);
    REQUIRE(static_cast<std::int64_t>(blocks.shape()[1]) == block_bytes(*t));
    REQUIRE(static_cast<std::int64_t>(values.shape()[1]) == block_elements(*t));
    return {*t, std::vector<std::uint8_t>(blocks.begin(), blocks.end()), std::vector<float>(values.begin(), values.end())};
}

const char* const kSupported[] = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K"};

}  // namespace

TEST_CASE("dequantize matches gguf-py bit for bit on every supported type", "[io][reference]") {
    for (const char* name : kSupported) {
        SECTION(name) {
            const Fixture fx = load_fixture(name);
            const auto n = static_cast<std::int64_t>(fx.values.size());
            std::vector<float> got(fx.values.size(), -12345.f);
            dequantize<float>(fx.type, fx.blocks.data(), n, got.data());
            std::size_t mismatches = 0;
            for (std::size_t i = 0; i < got.size(); ++i) {
                if (!tio::same_bits(got[i], fx.values[i])) {
                    if (++mismatches <= 5)
                        UNSCOPED_INFO(name << " value " << i << ": got " << got[i] << " (0x" << std::hex
                                           << tio::bits_of(got[i]) << "), gguf-py " << fx.values[i] << " (0x"
                                           << tio::bits_of(fx.values[i]) << std::dec << ")");
                }
            }
            CHECK(mismatches == 0);

            // dequantize<double> is the double of the binary32 result.
            std::vector<double> got_d(fx.values.size());
            dequantize<double>(fx.type, fx.blocks.data(), n, got_d.data());
            std::size_t mismatches_d = 0;
            for (std::size_t i = 0; i < got_d.size(); ++i)
                if (!tio::same_value(got_d[i], static_cast<double>(fx.values[i]))) ++mismatches_d;
            CHECK(mismatches_d == 0);
        }
    }
}

TEST_CASE("dequantize of a large buffer (parallel path) equals the per-block results", "[io][reference]") {
    for (const char* name : {"Q4_K", "Q8_0", "F16", "Q5_1"}) {
        const Fixture fx = load_fixture(name);
        const std::size_t per = fx.values.size();
        const std::size_t reps = (1u << 19) / per + 1;  // > 2^18 values: the OpenMP branch, if compiled in
        std::vector<std::uint8_t> big;
        for (std::size_t r = 0; r < reps; ++r) big.insert(big.end(), fx.blocks.begin(), fx.blocks.end());
        std::vector<float> out(per * reps);
        dequantize<float>(fx.type, big.data(), static_cast<std::int64_t>(out.size()), out.data());
        std::size_t bad = 0;
        for (std::size_t i = 0; i < out.size(); ++i)
            if (!tio::same_bits(out[i], fx.values[i % per])) ++bad;
        INFO(name);
        CHECK(bad == 0);
    }
}

TEST_CASE("dequantize refuses unsupported types and partial blocks", "[io]") {
    std::vector<std::uint8_t> src(1024, 0);
    std::vector<float> dst(1024);
    CHECK_THROWS_WITH(dequantize<float>(GgmlType::Q2_K, src.data(), 256, dst.data()), Catch::Contains("Q2_K"));
    CHECK_THROWS_AS(dequantize<float>(GgmlType::IQ2_XXS, src.data(), 256, dst.data()), Error);
    CHECK_THROWS_AS(dequantize<float>(static_cast<GgmlType>(5), src.data(), 32, dst.data()), Error);
    CHECK_THROWS_AS(dequantize<float>(GgmlType::Q4_0, src.data(), 33, dst.data()), Error);
    CHECK_THROWS_AS(dequantize<float>(GgmlType::F32, src.data(), -4, dst.data()), Error);
    CHECK_THROWS_AS(dequantize<float>(GgmlType::F32, nullptr, 4, dst.data()), Error);
    CHECK_NOTHROW(dequantize<float>(GgmlType::Q4_K, nullptr, 0, nullptr));
}

TEST_CASE("half_to_float is exact on all 65536 half values", "[io]") {
    for (std::uint32_t h = 0; h < 65536; ++h) {
        const float got = half_to_float(static_cast<std::uint16_t>(h));
        const int sign = (h >> 15) ? -1 : 1;
        const int e = (h >> 10) & 31;
        const int m = h & 1023;
        if (e == 31) {
            if (m == 0) {
                REQUIRE(std::isinf(got));
                REQUIRE(std::signbit(got) == (sign < 0));
            } else {
                REQUIRE(std::isnan(got));
                REQUIRE(((tio::bits_of(got) >> 13) & 1023u) == static_cast<std::uint32_t>(m));  // payload kept
            }
            continue;
        }
        // (-1)^s * 2^(e-15) * (1 + m/1024) for normals, (-1)^s * 2^-14 * (m/1024) for subnormals — exact in double.
        const double expect = e == 0 ? sign * std::ldexp(static_cast<double>(m), -24)
                                     : sign * std::ldexp(1024.0 + m, e - 25);
        REQUIRE(static_cast<double>(got) == expect);
        REQUIRE(std::signbit(got) == (sign < 0));
    }
}

namespace {

// Element-by-element reference decoders: value i of a block, evaluated exactly in double. The quantities
// are small integers times fp16 scales, so every sum/product below is exact in double; the test rounds once.
double h(const std::uint8_t* p) { return static_cast<double>(half_to_float(static_cast<std::uint16_t>(p[0] | (p[1] << 8)))); }
int nib(const std::uint8_t* qs, int i, int half_len) { return i < half_len ? qs[i] & 15 : qs[i - half_len] >> 4; }
int bit(const std::uint8_t* bytes, int i) { return (bytes[i / 8] >> (i % 8)) & 1; }

void k4_scale_min(const std::uint8_t* s, int j, int& sc, int& m) {
    if (j < 4) {
        sc = s[j] & 63;
        m = s[j + 4] & 63;
    } else {
        sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

double exact_value(GgmlType t, const std::uint8_t* b, int i) {
    switch (t) {
        case GgmlType::Q4_0: return h(b) * (nib(b + 2, i, 16) - 8);
        case GgmlType::Q4_1: return h(b) * nib(b + 4, i, 16) + h(b + 2);
        case GgmlType::Q5_0: return h(b) * ((nib(b + 6, i, 16) | (bit(b + 2, i) << 4)) - 16);
        case GgmlType::Q5_1: return h(b) * (nib(b + 8, i, 16) | (bit(b + 4, i) << 4)) + h(b + 2);
        case GgmlType::Q8_0: return h(b) * static_cast<std::int8_t>(b[2 + i]);
        case GgmlType::Q4_K:
        case GgmlType::Q5_K: {
            const int sub = i / 32, l = i % 32;
            int sc, m;
            k4_scale_min(b + 4, sub, sc, m);
            const std::uint8_t* qs = b + (t == GgmlType::Q4_K ? 16 : 48);
            const std::uint8_t byte = qs[(sub / 2) * 32 + l];
            int q = (sub % 2) ? byte >> 4 : byte & 15;
            if (t == GgmlType::Q5_K) q |= ((b[16 + l] >> sub) & 1) << 4;
            return h(b) * sc * q - h(b + 2) * m;
        }
        case GgmlType::Q6_K: {
            const int half = i / 128, r = i % 128, quarter = r / 32, l = r % 32;
            const std::uint8_t* ql = b + 64 * half;
            const std::uint8_t* qh = b + 128 + 32 * half;
            // quarters 0..3 take the low nibbles of ql[l], ql[l+32], then the high nibbles of ql[l], ql[l+32]
            const int lowq = quarter == 0 ? ql[l] & 15 : quarter == 1 ? ql[l + 32] & 15 : quarter == 2 ? ql[l] >> 4 : ql[l + 32] >> 4;
            const int q = (lowq | (((qh[l] >> (2 * quarter)) & 3) << 4)) - 32;
            const int scale = static_cast<std::int8_t>(b[192 + 8 * half + 2 * quarter + l / 16]);
            return h(b + 208) * scale * q;
        }
        default: return NAN;
    }
}

}  // namespace

TEST_CASE("dequantize = exact block formula rounded once to binary32 (random blocks)", "[io][property]") {
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
                       GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
        const std::string label = "block formula " + type_name(t);
        rc::prop(label, [t]() {
            const auto bb = static_cast<std::size_t>(block_bytes(t));
            const int be = static_cast<int>(block_elements(t));
            auto raw = *rc::gen::container<std::vector<std::uint8_t>>(bb, rc::gen::arbitrary<std::uint8_t>());
            // fp16 fields: any finite half (exponent field != 31), including subnormals and zero.
            auto finite_half = [&](std::size_t at) {
                const auto hbits = *rc::gen::suchThat(rc::gen::arbitrary<std::uint16_t>(),
                                                      [](std::uint16_t x) { return ((x >> 10) & 31) != 31; });
                raw[at] = static_cast<std::uint8_t>(hbits & 0xff);
                raw[at + 1] = static_cast<std::uint8_t>(hbits >> 8);
            };
            if (t == GgmlType::Q6_K) finite_half(208);
            else finite_half(0);
            if (t == GgmlType::Q4_1 || t == GgmlType::Q5_1 || t == GgmlType::Q4_K || t == GgmlType::Q5_K) finite_half(2);
            std::vector<float> got(be);
            dequantize<float>(t, raw.data(), be, got.data());
            for (int i = 0; i < be; ++i) {
                const float expect = static_cast<float>(exact_value(t, raw.data(), i));
                RC_ASSERT(tio::same_bits(got[i], expect));
            }
        });
    }
}
