// Tests for include/sinkscope/io/memory.hpp: the float32 size of a checkpoint's weights from its tensor
// tables, the memory available (from a fake /proc and /sys tree), and the Error that refuses a model too
// large for it, naming the file and both sizes.
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <numeric>

#include <sinkscope/io/memory.hpp>

#include "io/io_test_util.hpp"

using namespace sinkscope::io;
using sinkscope::Error;
namespace tio = sinkscope::test::io;

namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

/// A fake root with /proc/meminfo and, when given, cgroup v2 or v1 limit and usage files.
struct FakeRoot {
    tio::ScratchDir dir{"memory_root"};
    void file(const std::string& rel, const std::string& text) {
        const auto p = std::filesystem::path(dir.str()) / rel;
        std::filesystem::create_directories(p.parent_path());
        const std::string s = text;
        tio::write_bytes(p.string(), std::vector<std::uint8_t>(s.begin(), s.end()));
    }
    void meminfo(std::uint64_t available_kb) {
        file("proc/meminfo", "MemTotal:       24684092 kB\nMemFree:        20516116 kB\nMemAvailable:   " +
                                 std::to_string(available_kb) + " kB\nBuffers:           12345 kB\n");
    }
};

std::uint64_t sum_of_elements(const GgufFile& f) {
    std::uint64_t n = 0;
    for (const auto& t : f.tensors()) n += static_cast<std::uint64_t>(t.n_elements());
    return n;
}

}  // namespace

TEST_CASE("memory: MemAvailable and cgroup limits are read from /proc and /sys", "[io]") {
    CHECK(detail::meminfo_available("MemTotal: 10 kB\nMemAvailable:    2048 kB\n") == 2048u * 1024u);
    CHECK_FALSE(detail::meminfo_available("MemTotal: 10 kB\nMemFree: 5 kB\n").has_value());

    FakeRoot r;
    CHECK_FALSE(available_memory(r.dir.str()).has_value());  // nothing to read: unknown, so no check
    r.meminfo(8 * 1024 * 1024);                               // 8 GiB
    CHECK(available_memory(r.dir.str()) == 8 * kGiB);
    SECTION("cgroup v2: the headroom under memory.max when it is smaller") {
        r.file("sys/fs/cgroup/memory.max", "4294967296\n");         // 4 GiB limit
        r.file("sys/fs/cgroup/memory.current", "1073741824\n");     // 1 GiB used
        CHECK(available_memory(r.dir.str()) == 3 * kGiB);
        r.file("sys/fs/cgroup/memory.max", "max\n");                // no limit
        CHECK(available_memory(r.dir.str()) == 8 * kGiB);
        r.file("sys/fs/cgroup/memory.max", "68719476736\n");        // a limit above MemAvailable
        CHECK(available_memory(r.dir.str()) == 8 * kGiB);
    }
    SECTION("cgroup v1: limit_in_bytes − usage_in_bytes; the 'unlimited' value is no limit") {
        r.file("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
        r.file("sys/fs/cgroup/memory/memory.usage_in_bytes", "4134760448\n");
        CHECK(available_memory(r.dir.str()) == 8 * kGiB);
        r.file("sys/fs/cgroup/memory/memory.limit_in_bytes", "2147483648\n");
        r.file("sys/fs/cgroup/memory/memory.usage_in_bytes", "3000000000\n");  // over the limit already
        CHECK(available_memory(r.dir.str()) == 0u);
    }
    // The real machine: Linux has a MemAvailable.
    const auto real = available_memory();
    REQUIRE(real.has_value());
    CHECK(*real > 0u);
}

TEST_CASE("memory: value counts come from the tensor tables", "[io]") {
    const GgufFile all(sinkscope::test::fixture("io/gguf_all.gguf"));
    CHECK(value_count(all) == sum_of_elements(all));
    CHECK(value_count(all) == 24u + 96 + 64 + 128 + 64 + 64 + 64 + 32 + 512 + 256 + 512 + 256 + 24);  // expected.json shapes
    CHECK(checkpoint_value_count(sinkscope::test::fixture("io/gguf_all.gguf")) == value_count(all));

    const std::string stories = sinkscope::test::shared_model("stories260K.gguf");
    CHECK(checkpoint_value_count(stories) == sum_of_elements(GgufFile(stories)));

    // Safetensors: a single file, its directory, and a sharded directory (the shards' tensors together).
    const SafetensorsFile single(sinkscope::test::fixture("io/st_single/model.safetensors"));
    std::uint64_t n_single = 0;
    for (const auto& t : single.tensors()) n_single += static_cast<std::uint64_t>(t.n_elements());
    CHECK(n_single > 0u);
    CHECK(value_count(single) == n_single);
    CHECK(checkpoint_value_count(sinkscope::test::fixture("io/st_single")) == n_single);
    CHECK(checkpoint_value_count(sinkscope::test::fixture("io/st_single/model.safetensors")) == n_single);
    const SafetensorsCheckpoint sharded(sinkscope::test::fixture("io/st_sharded"));
    std::uint64_t n_sharded = 0;
    for (const auto& name : sharded.names()) {
        const auto s = sharded.shape(name);
        n_sharded += static_cast<std::uint64_t>(std::accumulate(s.begin(), s.end(), std::int64_t{1}, std::multiplies<>()));
    }
    CHECK(checkpoint_value_count(sinkscope::test::fixture("io/st_sharded")) == n_sharded);

    try {
        checkpoint_value_count("/nonexistent/model.gguf");
        FAIL("no Error for a missing path");
    } catch (const Error& e) {
        CHECK(e.file() == "/nonexistent/model.gguf");
    }
}

TEST_CASE("memory: a model too large is an Error naming the file, what it needs and what there is", "[io]") {
    // 2^29 float32 values = 2 GiB against 1 GiB available.
    try {
        require_fits(1ull << 29, 4, kGiB, "big.gguf");
        FAIL("no Error");
    } catch (const Error& e) {
        INFO(e.what());
        CHECK(e.file() == "big.gguf");
        CHECK(e.message() == "needs 2.0 GiB of memory for float32 weights (536870912 values), 1.0 GiB available");
    }
    CHECK_THROWS_WITH(require_fits(1ull << 29, 8, 3 * kGiB, "big.gguf"), Catch::Contains("needs 4.0 GiB of memory for float64 weights"));
    CHECK(require_fits(1ull << 29, 4, 2 * kGiB, "fits.gguf") == 2 * kGiB);  // exactly enough
    CHECK(require_fits(1ull << 40, 4, std::nullopt, "unknown.gguf") == 4ull << 40);  // unknown: no check
    // A count whose byte size overflows 64 bits saturates instead of wrapping round to a small number.
    CHECK_THROWS_AS(require_fits(UINT64_MAX / 2, 4, 64 * kGiB, "huge.gguf"), Error);

    // The whole path, on a real file, with a fake and with the real amount available.
    const std::string stories = sinkscope::test::shared_model("stories260K.gguf");
    const std::uint64_t need = 4 * checkpoint_value_count(stories);
    CHECK(require_weights_fit(stories, sizeof(float)) == need);  // a 260K-parameter model fits anywhere
    try {
        require_weights_fit(stories, sizeof(float), need - 1);
        FAIL("no Error with one byte too few");
    } catch (const Error& e) {
        CHECK(e.file() == stories);
        CHECK(e.message().find("of memory for float32 weights") != std::string::npos);
    }
}
