// Tests for include/sinkscope/io/mapped_file.hpp: mapping, bounds-checked access, errors, moves.
#include <catch2/catch.hpp>

#include <limits>
#include <numeric>

#include <sinkscope/io/mapped_file.hpp>

#include "io/io_test_util.hpp"

using sinkscope::Error;
using sinkscope::io::MappedFile;
namespace tio = sinkscope::test::io;

namespace {
std::vector<std::uint8_t> iota_bytes(std::size_t n) {
    std::vector<std::uint8_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(i * 7 + 3);
    return v;
}
}  // namespace

TEST_CASE("MappedFile maps a whole file read-only", "[io]") {
    tio::ScratchDir dir("mapped");
    const auto bytes = iota_bytes(5000);
    tio::write_bytes(dir.file("a.bin"), bytes);
    MappedFile f(dir.file("a.bin"));
    CHECK(f.path() == dir.file("a.bin"));
    REQUIRE(f.size() == bytes.size());
    CHECK(std::equal(bytes.begin(), bytes.end(), f.data()));
    CHECK(f.bytes(10, 5, "x") == f.data() + 10);
    CHECK(f.bytes(0, 5000, "whole") == f.data());
    CHECK(f.bytes(5000, 0, "empty range at the end") == f.data() + 5000);
    CHECK(f.contains(4999, 1));
    CHECK_FALSE(f.contains(4999, 2));
}

TEST_CASE("MappedFile::bytes throws an Error naming file, offset and what", "[io]") {
    const auto f = MappedFile::from_bytes("mem.bin", iota_bytes(100));
    try {
        f.bytes(90, 11, "tensor data", "blk.0.w");
        FAIL("no throw");
    } catch (const Error& e) {
        CHECK(e.file() == "mem.bin");
        CHECK(e.tensor() == "blk.0.w");
        CHECK(e.offset() == 90u);
        CHECK(std::string(e.what()).find("tensor data") != std::string::npos);
    }
    CHECK_THROWS_AS(f.bytes(101, 0, "past the end"), Error);
    // Overflow-safe: offset + n wraps around 2^64 but must still be refused.
    constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
    CHECK_THROWS_AS(f.bytes(kMax - 1, 10, "wrap"), Error);
    CHECK_THROWS_AS(f.bytes(50, kMax, "huge"), Error);
    CHECK_THROWS_AS(f.bytes(kMax, kMax, "huge"), Error);
    CHECK_FALSE(f.contains(kMax - 1, 10));
}

TEST_CASE("MappedFile refuses missing, empty and non-regular files, naming them", "[io]") {
    tio::ScratchDir dir("mapped_bad");
    auto throws_naming = [](const std::string& path) {
        try {
            MappedFile f(path);
            FAIL("no throw for " << path);
        } catch (const Error& e) {
            CHECK(e.file() == path);
        }
    };
    throws_naming(dir.file("missing.bin"));
    tio::write_bytes(dir.file("empty.bin"), {});
    throws_naming(dir.file("empty.bin"));
    throws_naming(dir.str());  // a directory
    CHECK_THROWS_AS(MappedFile::from_bytes("empty", {}), Error);
}

TEST_CASE("MappedFile moves (mapped and in-memory), never copies", "[io]") {
    static_assert(!std::is_copy_constructible_v<MappedFile>);
    static_assert(!std::is_copy_assignable_v<MappedFile>);
    static_assert(std::is_nothrow_move_constructible_v<MappedFile>);
    tio::ScratchDir dir("mapped_move");
    const auto bytes = iota_bytes(300);
    tio::write_bytes(dir.file("a.bin"), bytes);

    MappedFile a(dir.file("a.bin"));
    const std::uint8_t* p = a.data();
    MappedFile b(std::move(a));
    CHECK(b.data() == p);  // the mapping moved, not copied
    CHECK(b.size() == 300);
    CHECK(a.size() == 0);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
    CHECK_THROWS_AS(a.bytes(0, 1, "moved-from"), Error);

    MappedFile c = MappedFile::from_bytes("mem", iota_bytes(10));
    const std::uint8_t* q = c.data();
    c = std::move(b);  // releases the in-memory bytes, takes the mapping
    CHECK(c.data() == p);
    CHECK(std::equal(bytes.begin(), bytes.end(), c.data()));
    MappedFile d = MappedFile::from_bytes("mem2", iota_bytes(10));
    q = d.data();
    MappedFile e(std::move(d));
    CHECK(e.data() == q);  // the owned buffer moved with it
    CHECK(e.path() == "mem2");
    CHECK(e.data()[9] == static_cast<std::uint8_t>(9 * 7 + 3));
}
