// Tests for include/sinkscope/io/npy.hpp against files written by numpy (scripts/make_io_fixtures.py; the
// values are the formulas documented there) and against xtensor's independent .npy reader.
#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

#include <sinkscope/io/npy.hpp>

#include "io/io_test_util.hpp"

using namespace sinkscope::io;
using sinkscope::Error;
namespace tio = sinkscope::test::io;

namespace {
std::string npy(const std::string& name) { return sinkscope::test::fixture("io/npy/" + name); }
}  // namespace

TEST_CASE("read_npy reads what numpy wrote (f4, f8, i4, i8, v2.0, scalars)", "[io][reference]") {
    const auto a = read_npy<float>(npy("f32_2x3x4.npy"));
    CHECK(a.shape == std::vector<std::size_t>{2, 3, 4});
    REQUIRE(a.data.size() == 24);
    for (std::size_t i = 0; i < 24; ++i) CHECK(a.data[i] == static_cast<float>(i) * 0.25f - 3.f);

    const auto b = read_npy<double>(npy("f64_5.npy"));
    CHECK(b.shape == std::vector<std::size_t>{5});
    CHECK(b.data == std::vector<double>{0.1, -2.5, 1e300, -0.0, 3.0});
    CHECK(std::signbit(b.data[3]));

    const auto c = read_npy<std::int64_t>(npy("i32_3x2.npy"));
    CHECK(c.shape == std::vector<std::size_t>{3, 2});
    CHECK(c.data == std::vector<std::int64_t>{-2, -1, 0, 1, 2, 3});
    const auto cf = read_npy<float>(npy("i32_3x2.npy"));  // converted
    CHECK(cf.data == std::vector<float>{-2, -1, 0, 1, 2, 3});

    const auto d = read_npy<int>(npy("i64_scalar.npy"));
    CHECK(d.shape.empty());
    CHECK(d.data == std::vector<int>{-7});

    const auto v2 = read_npy<float>(npy("f32_v2.npy"));
    CHECK(v2.shape == std::vector<std::size_t>{3});
    CHECK(v2.data == std::vector<float>{1, 2, 3});
}

TEST_CASE("read_npy refuses Fortran order, big-endian and other dtypes, naming the file", "[io]") {
    for (const char* name : {"f32_fortran.npy", "f32_bigendian.npy", "u16_3.npy"}) {
        try {
            read_npy<float>(npy(name));
            FAIL(name << " was accepted");
        } catch (const Error& e) {
            CHECK(e.file() == npy(name));
        }
    }
    CHECK_THROWS_WITH(read_npy<float>(npy("u16_3.npy")), Catch::Contains("<u2"));
    // Conversions an integer T cannot represent are Errors, not undefined casts.
    CHECK_THROWS_AS(read_npy<int>(npy("f64_5.npy")), Error);             // 1e300
    CHECK_THROWS_AS(read_npy<std::uint8_t>(npy("i32_3x2.npy")), Error);  // -2
    CHECK(read_npy<std::int8_t>(npy("i32_3x2.npy")).data == std::vector<std::int8_t>{-2, -1, 0, 1, 2, 3});
    CHECK(read_npy<long>(npy("f32_2x3x4.npy")).data[1] == -2);  // -2.75 truncates, like static_cast
    CHECK_THROWS_WITH(read_npy<float>(npy("f32_fortran.npy")), Catch::Contains("Fortran"));
}

TEST_CASE("write_npy writes exactly the bytes np.save writes", "[io][reference]") {
    tio::ScratchDir dir("npy");
    std::vector<float> v(24);
    for (std::size_t i = 0; i < 24; ++i) v[i] = static_cast<float>(i) * 0.25f - 3.f;
    write_npy(dir.file("a.npy"), v, {2, 3, 4});
    CHECK(tio::read_bytes(dir.file("a.npy")) == tio::read_bytes(npy("f32_2x3x4.npy")));
}

TEST_CASE("write_npy / read_npy round trip, read back by xtensor too", "[io][property]") {
    tio::ScratchDir dir("npy_rt");
    const std::string path = dir.file("rt.npy");
    rc::prop("round trip", [&]() {
        const auto rank = *rc::gen::inRange(0, 5);
        std::vector<std::size_t> shape;
        std::size_t n = 1;
        for (int i = 0; i < rank; ++i) {
            shape.push_back(*rc::gen::inRange<std::size_t>(0, 6));
            n *= shape.back();
        }
        const auto data = *rc::gen::container<std::vector<float>>(n, rc::gen::arbitrary<float>());
        write_npy(path, data, shape);
        const auto back = read_npy<float>(path);
        RC_ASSERT(back.shape == shape);
        RC_ASSERT(back.data.size() == n);
        for (std::size_t i = 0; i < n; ++i) RC_ASSERT(tio::same_bits(back.data[i], data[i]));
        // Header padded so that the data starts at a multiple of 64 (numpy >= 1.x alignment rule).
        const auto bytes = tio::read_bytes(path);
        RC_ASSERT((bytes.size() - 4 * n) % 64 == 0);
        if (n > 0) {
            const auto x = xt::load_npy<float>(path);
            RC_ASSERT(x.size() == n);
            for (std::size_t i = 0; i < n; ++i) RC_ASSERT(tio::same_bits(x.data()[i], data[i]));
        }
    });
}

TEST_CASE("write_npy and read_npy errors name the file", "[io]") {
    tio::ScratchDir dir("npy_bad");
    CHECK_THROWS_AS(write_npy(dir.file("x.npy"), std::vector<float>(5), {2, 3}), Error);
    CHECK_THROWS_AS(write_npy(dir.file("no/such/dir/x.npy"), std::vector<float>(6), {2, 3}), Error);
    CHECK_THROWS_AS(read_npy<float>(dir.file("missing.npy")), Error);

    // Truncations of a numpy file and broken headers.
    const auto good = tio::read_bytes(npy("f32_2x3x4.npy"));
    for (std::size_t cut = 1; cut < good.size(); cut += 3) {
        const std::string p = dir.file("cut.npy");
        tio::write_bytes(p, std::vector<std::uint8_t>(good.begin(), good.begin() + cut));
        try {
            read_npy<float>(p);
            FAIL("cut at " << cut << " accepted");
        } catch (const Error& e) {
            CHECK(e.file() == p);
        }
    }
    auto with_header = [&](std::string dict) {
        while ((10 + dict.size() + 1) % 64) dict += ' ';
        dict += '\n';
        std::vector<std::uint8_t> b = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                                       static_cast<std::uint8_t>(dict.size() & 0xff), static_cast<std::uint8_t>(dict.size() >> 8)};
        b.insert(b.end(), dict.begin(), dict.end());
        b.resize(b.size() + 8, 0);
        const std::string p = dir.file("h.npy");
        tio::write_bytes(p, b);
        return p;
    };
    CHECK(read_npy<float>(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }")).data.size() == 2);
    CHECK(read_npy<float>(with_header("{'shape': (1,), 'descr': '<f8', 'fortran_order': False}")).data.size() == 1);
    for (const char* bad : {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",       // size mismatch
                            "{'descr': '<f4', 'fortran_order': False}",                          // no shape
                            "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }",
                            "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }",
                            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}",
                            "{'descr: '<f4'", "", "[]"}) {
        INFO(bad);
        CHECK_THROWS_AS(read_npy<float>(with_header(bad)), Error);
    }
}
