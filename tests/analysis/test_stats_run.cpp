// analysis/stats_run.hpp: the pieces of a `stats` run that shards and merges rely on. Shards partition the
// samples into contiguous parts whose sizes differ by at most one; --shard words are checked; the samples'
// fingerprint is FNV-1a 64 over the little-endian bytes of (length, ids…) per sample, checked against an
// independent implementation of the published algorithm (Python, below; it reproduces FNV-1a's published
// vectors: "" → cbf29ce484222325, "a" → af63dc4c8601ec8c).
#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <sinkscope/analysis/stats_run.hpp>

#include "seeded_property.hpp"

using namespace sinkscope;
using namespace sinkscope::analysis;

TEST_CASE("stats_run: shards I/N partition S samples into contiguous parts within one of each other", "[stats_run][property]") {
    test::check_property("shards partition the samples", [] {
        const std::int64_t total = *rc::gen::inRange<std::int64_t>(0, 500);
        const std::int64_t count = *rc::gen::inRange<std::int64_t>(1, 40);
        std::int64_t next = 0, smallest = total, largest = 0;
        for (std::int64_t i = 0; i < count; ++i) {
            const StatsShard s = parse_shard(std::to_string(i) + "/" + std::to_string(count));
            RC_ASSERT(s.begin(total) == next);
            RC_ASSERT(s.end(total) >= s.begin(total));
            smallest = std::min(smallest, s.end(total) - s.begin(total));
            largest = std::max(largest, s.end(total) - s.begin(total));
            next = s.end(total);
        }
        RC_ASSERT(next == total);
        RC_ASSERT(largest - smallest <= 1);
    }, 300, 20261207);
}

TEST_CASE("stats_run: --shard words other than I/N with 0 <= I < N are refused with the word", "[stats_run]") {
    for (const std::string bad : {"3", "1/1", "-1/2", "2/2", "a/2", "1/b", "1/2x", "0/0", "1//2", "/2"})
        CHECK_THROWS_WITH(parse_shard(bad), Catch::Contains("--shard '" + bad + "'"));
    CHECK(parse_shard("0/1").count == 1);
    CHECK(parse_shard("3/4").index == 3);
}

TEST_CASE("stats_run: the samples' fingerprint is FNV-1a 64 of their bytes", "[stats_run][reference]") {
    // Python: h = 0xcbf29ce484222325; for b in data: h ^= b; h = h * 0x100000001b3 % 2**64
    CHECK(samples_fingerprint({}) == "cbf29ce484222325");  // no bytes: the offset basis
    CHECK(samples_fingerprint({{}}) == "4d25767f9dce13f5");  // struct.pack('<I', 0)
    CHECK(samples_fingerprint({{5, -1}}) == "3ea217fb5c1cccae");  // pack('<I', 2) + pack('<i', 5) + pack('<i', -1)
    CHECK(samples_fingerprint({{5}, {1}}) != samples_fingerprint({{1}, {5}}));  // order matters
}

TEST_CASE("stats_run: a request's values are checked before a model is loaded", "[stats_run]") {
    StatsRequest r;
    CHECK_NOTHROW(check_request(r));
    r.seq_len = 1;
    CHECK_THROWS_WITH(check_request(r), Catch::Contains("sample length"));
    r = {};
    r.eps = 1.5;
    CHECK_THROWS_WITH(check_request(r), Catch::Contains("eps"));
    r = {};
    r.bos = true;
    r.tokens_file = "ids.txt";
    CHECK_THROWS_WITH(check_request(r), Catch::Contains("BOS applies to text"));
}
