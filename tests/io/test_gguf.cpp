// Tests for include/sinkscope/io/gguf.hpp.
//  [reference]: gguf_all.gguf (every metadata value type, every supported tensor type; written by gguf-py's
//               GGUFWriter) and the real stories260K / SmolLM2 files, against what gguf-py wrote and read
//               (tests/fixtures/io/*.expected.json from scripts/make_io_fixtures.py). Tensor values: bitwise.
//  unit:        crafted hostile files (built byte by byte below) and truncated copies: each must be an
//               Error naming the file, the tensor when known and the byte offset of the bad field.
//  [property]:  random byte corruption of gguf_all.gguf: Error or a file whose every tensor loads.
#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include <chrono>
#include <cmath>
#include <limits>

#include <sinkscope/io/gguf.hpp>

#include "io/io_test_util.hpp"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SINKSCOPE_TEST_HAS_ASAN 1
#endif
#endif
#ifndef SINKSCOPE_TEST_HAS_ASAN
#define SINKSCOPE_TEST_HAS_ASAN 0
#endif

using namespace sinkscope::io;
using sinkscope::Error;
using nlohmann::json;
namespace tio = sinkscope::test::io;

namespace {

// ------------------------------------------------------------------------------------- a GGUF byte builder
struct Bytes {
    std::vector<std::uint8_t> b;
    std::uint64_t pos() const { return b.size(); }
    template <class T>
    Bytes& put(T v) {
        const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
        b.insert(b.end(), p, p + sizeof(T));
        return *this;
    }
    Bytes& u8(std::uint8_t v) { return put(v); }
    Bytes& u32(std::uint32_t v) { return put(v); }
    Bytes& u64(std::uint64_t v) { return put(v); }
    Bytes& f32(float v) { return put(v); }
    Bytes& str(const std::string& s) {
        u64(s.size());
        b.insert(b.end(), s.begin(), s.end());
        return *this;
    }
    Bytes& header(std::uint32_t version, std::uint64_t n_tensors, std::uint64_t n_kv) {
        b.insert(b.end(), {'G', 'G', 'U', 'F'});
        return u32(version).u64(n_tensors).u64(n_kv);
    }
    Bytes& kv_str(const std::string& key, const std::string& value) { return str(key).u32(8).str(value); }
    Bytes& kv_u32(const std::string& key, std::uint32_t value) { return str(key).u32(4).u32(value); }
    Bytes& tensor(const std::string& name, const std::vector<std::uint64_t>& ne, std::uint32_t type, std::uint64_t offset) {
        str(name).u32(static_cast<std::uint32_t>(ne.size()));
        for (auto n : ne) u64(n);
        return u32(type).u64(offset);
    }
    Bytes& pad(std::size_t align) {
        while (b.size() % align) b.push_back(0);
        return *this;
    }
    Bytes& floats(std::initializer_list<float> v) {
        for (float f : v) f32(f);
        return *this;
    }
};

GgufFile parse(const std::vector<std::uint8_t>& bytes, const std::string& name = "crafted.gguf") {
    return GgufFile(MappedFile::from_bytes(name, bytes));
}

/// Parsing must throw an Error whose message contains `text`, naming crafted.gguf, `tensor` and `offset`.
void expect_error(const Bytes& bytes, const std::string& text, const std::string& tensor = "",
                  std::optional<std::uint64_t> offset = std::nullopt) {
    try {
        parse(bytes.b);
        FAIL("no Error; expected one containing '" << text << "'");
    } catch (const Error& e) {
        INFO(e.what());
        CHECK(e.message().find(text) != std::string::npos);
        CHECK(e.file() == "crafted.gguf");
        CHECK(e.tensor() == tensor);
        if (offset) CHECK(e.offset() == offset);
    }
}

/// A valid file: one string kv, tensors "a" (F32 {4, 2}) then "b" (F32 {3}), alignment 32.
Bytes valid_file() {
    Bytes f;
    f.header(3, 2, 1).kv_str("general.architecture", "llama");
    f.tensor("a", {4, 2}, 0, 0).tensor("b", {3}, 0, 32).pad(32);
    f.floats({0, 1, 2, 3, 4, 5, 6, 7}).floats({-1, -2, -3});
    return f;
}

// --------------------------------------------------------------------------------- comparisons with fixtures
void check_tensor_table(const GgufFile& f, const json& expected) {
    REQUIRE(f.tensors().size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const auto& e = expected[i];
        const GgufTensor& t = f.tensors()[i];
        INFO("tensor " << e["name"]);
        CHECK(t.name == e["name"].get<std::string>());
        CHECK(t.shape == e["shape"].get<std::vector<std::int64_t>>());
        CHECK(static_cast<std::uint32_t>(t.type) == e["type"].get<std::uint32_t>());
        CHECK(t.offset == e["offset"].get<std::uint64_t>());
        CHECK(t.nbytes == e["nbytes"].get<std::uint64_t>());
        CHECK(f.find(t.name) == &t);
    }
}

std::string fnv1a64(const json& strings) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    auto step = [&](std::uint8_t c) { h = (h ^ c) * 0x100000001b3ull; };
    for (const auto& s : strings) {
        for (char c : s.get_ref<const std::string&>()) step(static_cast<std::uint8_t>(c));
        step(0);
    }
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

/// Metadata against models.expected.json's summary: scalars exactly, arrays by length, head, tail and
/// FNV-1a (strings) or sum (numbers; integers sum exactly, float32 within n·2^-52·Σ|x| for the order).
void check_metadata_summary(const GgufFile& f, const json& expected) {
    CHECK(f.metadata().size() == expected.size());
    for (auto it = expected.begin(); it != expected.end(); ++it) {
        INFO("metadata " << it.key());
        REQUIRE(f.metadata().contains(it.key()));
        const json& got = f.metadata()[it.key()];
        const json& e = it.value();
        if (e["type"] != 9) {
            CHECK(got == e["value"]);
            continue;
        }
        REQUIRE(got.is_array());
        const std::size_t n = e["len"].get<std::size_t>();
        REQUIRE(got.size() == n);
        const std::size_t k = e["head"].size();
        CHECK(json(std::vector<json>(got.begin(), got.begin() + k)) == e["head"]);
        CHECK(json(std::vector<json>(got.end() - k, got.end())) == e["tail"]);
        if (e["sub_type"] == 8) {
            CHECK(fnv1a64(got) == e["fnv1a64"].get<std::string>());
        } else {
            double sum = 0, sum_abs = 0;
            for (const auto& v : got) {
                const double x = v.is_boolean() ? double(v.get<bool>()) : v.get<double>();
                sum += x;
                sum_abs += std::fabs(x);
            }
            CHECK(std::fabs(sum - e["sum"].get<double>()) <= double(n) * std::ldexp(sum_abs, -52));
        }
    }
}

/// The checked tensors: first/last 64 values bitwise, float64 sum and Σ|x| within n·2^-52·Σ|x| (the error
/// bound of two different summation orders in double).
void check_values(const GgufFile& f, const json& checks) {
    for (const auto& c : checks) {
        const std::string name = c["name"];
        INFO("tensor " << name);
        const auto v = f.load<float>(name);
        REQUIRE(v.size() == c["n"].get<std::size_t>());
        const auto first = c["first"].get<std::vector<float>>(), last = c["last"].get<std::vector<float>>();
        for (std::size_t i = 0; i < first.size(); ++i) CHECK(tio::same_bits(v[i], first[i]));
        for (std::size_t i = 0; i < last.size(); ++i) CHECK(tio::same_bits(v[v.size() - last.size() + i], last[i]));
        double sum = 0, sum_abs = 0;
        for (float x : v) {
            sum += x;
            sum_abs += std::fabs(x);
        }
        const double tol = double(v.size()) * std::ldexp(sum_abs, -52);
        CHECK(std::fabs(sum - c["sum"].get<double>()) <= tol);
        CHECK(std::fabs(sum_abs - c["sum_abs"].get<double>()) <= tol);
    }
}

void check_model(const std::string& path, const json& e) {
    const auto t0 = std::chrono::steady_clock::now();
    GgufFile f(path);
    const double open_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    WARN(path << ": opened in " << open_s * 1e3 << " ms");
    CHECK(f.version() == e["version"].get<std::uint32_t>());
    CHECK(f.alignment() == e["alignment"].get<std::int64_t>());
    CHECK(f.data_offset() == e["data_offset"].get<std::uint64_t>());
    check_tensor_table(f, e["tensors"]);
    check_metadata_summary(f, e["metadata"]);
    check_values(f, e["checks"]);
}

}  // namespace

// ============================================================================================== reference
TEST_CASE("gguf_all.gguf: metadata of every value type, as gguf-py wrote it", "[io][reference]") {
    const json e = tio::read_json(sinkscope::test::fixture("io/gguf_all.expected.json"));
    GgufFile f(sinkscope::test::fixture("io/gguf_all.gguf"));
    CHECK(f.path() == sinkscope::test::fixture("io/gguf_all.gguf"));
    CHECK(f.version() == 3);
    CHECK(f.alignment() == 64);
    CHECK(f.data_offset() == e["data_offset"].get<std::uint64_t>());
    const json& em = e["metadata"];
    CHECK(f.metadata().size() == em.size());
    for (auto it = em.begin(); it != em.end(); ++it) {
        INFO("metadata " << it.key() << " = " << it.value().dump());
        REQUIRE(f.metadata().contains(it.key()));
        CHECK(f.metadata()[it.key()] == it.value());
    }
    // Types of the JSON values, not only their values.
    CHECK(f.metadata()["test.bool_true"].is_boolean());
    CHECK(f.metadata()["test.f32"].is_number_float());
    CHECK(f.metadata()["test.u64"].get<std::uint64_t>() == 18000000000000000000ull);
    CHECK(f.metadata()["test.i64"].get<std::int64_t>() == -9000000000000000000ll);
    CHECK(f.metadata()["test.arr_arr"][2][1] == 5);
}

TEST_CASE("gguf_all.gguf: tensor table and every supported type dequantized bitwise", "[io][reference]") {
    const json e = tio::read_json(sinkscope::test::fixture("io/gguf_all.expected.json"));
    GgufFile f(sinkscope::test::fixture("io/gguf_all.gguf"));
    check_tensor_table(f, e["tensors"]);
    for (const auto& et : e["tensors"]) {
        const std::string name = et["name"];
        INFO("tensor " << name);
        const GgufTensor& t = f.tensor(name);
        if (!et.contains("values")) {  // t.q2_k: a known type sinkscope does not dequantize
            CHECK_FALSE(is_supported(t.type));
            try {
                f.load<float>(t);
                FAIL("loading " << name << " did not throw");
            } catch (const Error& err) {
                CHECK(err.tensor() == name);
                CHECK(err.file() == f.path());
                CHECK(err.offset() == t.offset);
                CHECK(err.message().find("Q2_K") != std::string::npos);
            }
            continue;
        }
        const auto expect = et["values"].get<std::vector<float>>();
        const auto got = f.load<float>(t);
        REQUIRE(got.size() == expect.size());
        REQUIRE(static_cast<std::size_t>(t.n_elements()) == expect.size());
        std::size_t bad = 0;
        for (std::size_t i = 0; i < got.size(); ++i) bad += !tio::same_bits(got[i], expect[i]);
        CHECK(bad == 0);
        const auto got_d = f.load<double>(name);
        for (std::size_t i = 0; i < got.size(); ++i) REQUIRE(got_d[i] == double(got[i]));
    }
}

TEST_CASE("stories260K.gguf matches gguf-py: metadata, tensor table, values", "[io][reference]") {
    const json e = tio::read_json(sinkscope::test::fixture("io/models.expected.json"));
    check_model(sinkscope::test::shared_model("stories260K.gguf"), e["stories260K"]);
}

TEST_CASE("SmolLM2-135M Q4_1 GGUF matches gguf-py and opens in < 0.3 s", "[io][reference]") {
    const std::string path = sinkscope::test::downloaded_model("SmolLM2-135M-Instruct.Q4_1.gguf");
    if (!std::filesystem::exists(path)) {
        WARN("skipped: " << path << " is absent (scripts/fetch_model.sh downloads it)");
        return;
    }
    const json e = tio::read_json(sinkscope::test::fixture("io/models.expected.json"));
    REQUIRE(e.contains("smollm2"));
    check_model(path, e["smollm2"]);
    double best = 1e9;  // best of 3, so that a busy machine does not fail the test by accident
    for (int rep = 0; rep < 3; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        GgufFile f(path);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        REQUIRE(f.metadata()["tokenizer.ggml.tokens"].size() == 49152);
    }
    WARN("SmolLM2 GGUF open (49152-token vocabulary + 48900 merges): best of 3 = " << best * 1e3 << " ms");
    // The 0.3 s budget is for optimised builds; Debug and sanitizer builds (~0.5 s) only report the time.
#if defined(__OPTIMIZE__) && !defined(__SANITIZE_ADDRESS__) && !SINKSCOPE_TEST_HAS_ASAN
    CHECK(best < 0.3);
#endif
}

// ================================================================================================= unit
TEST_CASE("GGUF v2 reads like v3; v1, other versions and big-endian files are refused", "[io]") {
    auto bytes = tio::read_bytes(sinkscope::test::fixture("io/gguf_all.gguf"));
    bytes[4] = 2;
    const GgufFile v2 = parse(bytes);
    CHECK(v2.version() == 2);
    CHECK(v2.tensors().size() == 13);
    CHECK(v2.load<float>("t.q4_k") == GgufFile(sinkscope::test::fixture("io/gguf_all.gguf")).load<float>("t.q4_k"));

    Bytes b1;
    b1.header(1, 0, 0);
    expect_error(b1, "version 1", "", 4);
    Bytes b4;
    b4.header(4, 0, 0);
    expect_error(b4, "unsupported GGUF version 4", "", 4);
    Bytes be;
    be.header(0x03000000u, 0, 0);
    expect_error(be, "big-endian", "", 4);
}

TEST_CASE("GGUF: a crafted valid file parses and loads", "[io]") {
    const GgufFile f = parse(valid_file().b);
    REQUIRE(f.tensors().size() == 2);
    CHECK(f.metadata() == json{{"general.architecture", "llama"}});
    CHECK(f.alignment() == 32);
    const std::vector<float> a = f.load<float>("a"), b = f.load<float>("b");
    CHECK(a == std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7});
    CHECK(b == std::vector<float>{-1, -2, -3});
    CHECK(f.tensor("a").shape == std::vector<std::int64_t>{4, 2});
    CHECK(f.find("zzz") == nullptr);
    try {
        f.tensor("zzz");
        FAIL("no throw");
    } catch (const Error& e) {
        CHECK(e.file() == "crafted.gguf");
        CHECK(e.tensor() == "zzz");
    }
}

TEST_CASE("GGUF: metadata edge cases (empty arrays, nesting, alignment)", "[io]") {
    Bytes f;
    f.header(3, 0, 5);
    f.str("empty").u32(9).u32(4).u64(0);                                          // [] of u32
    f.str("empty_string").u32(8).str("");
    f.str("nested").u32(9).u32(9).u64(2).u32(5).u64(1).u32(static_cast<std::uint32_t>(-7)).u32(8).u64(1).str("z");
    f.str("general.alignment").u32(4).u32(16);
    f.str("flag").u32(7).u8(1);
    const GgufFile g = parse(f.b);
    CHECK(g.metadata()["empty"] == json::array());
    CHECK(g.metadata()["nested"] == json::parse(R"([[-7], ["z"]])"));
    CHECK(g.alignment() == 16);
    CHECK(g.metadata()["flag"] == true);
    CHECK(g.metadata()["empty_string"] == "");
    CHECK(g.tensors().empty());

    // 0-dimensional and zero-sized tensors.
    Bytes z;
    z.header(3, 2, 0).tensor("scalar", {}, 0, 0).tensor("empty", {0, 4}, 0, 0).pad(32).floats({2.5f});
    const GgufFile gz = parse(z.b);
    CHECK(gz.load<float>("scalar") == std::vector<float>{2.5f});
    CHECK(gz.load<float>("empty").empty());
    CHECK(gz.tensor("empty").nbytes == 0);
}

TEST_CASE("GGUF: hostile headers are Errors naming the offending field", "[io]") {
    SECTION("bad magic") {
        Bytes f = valid_file();
        f.b[0] = 'X';
        expect_error(f, "bad magic", "", 0);
    }
    SECTION("counts that cannot fit") {
        Bytes f;
        f.header(3, 0, 1ull << 60);
        expect_error(f, "metadata count", "", 16);
        Bytes g;
        g.header(3, 1ull << 40, 0);
        expect_error(g, "tensor count", "", 8);
    }
    SECTION("unknown metadata value type") {
        Bytes f;
        f.header(3, 0, 1).str("weird");
        const auto at = f.pos();
        f.u32(13).u32(0);
        expect_error(f, "unknown value type 13", "", at);
    }
    SECTION("unknown array element type") {
        Bytes f;
        f.header(3, 0, 1).str("arr").u32(9);
        const auto at = f.pos();
        f.u32(77).u64(1).u32(0);
        expect_error(f, "unknown array element type 77", "", at);
    }
    SECTION("huge string lengths") {
        Bytes f;
        f.header(3, 0, 1).str("k").u32(8);
        const auto at = f.pos();
        f.u64(1ull << 62).str("short");
        expect_error(f, "exceeds the limit", "", at);
        Bytes g;
        g.header(3, 0, 1);
        g.u64(1ull << 40).u64(0).u64(0);  // key length, then enough bytes for the kv count to be plausible
        expect_error(g, "exceeds the limit", "", 24);
        Bytes h;
        h.header(3, 0, 1).str("k").u32(8).u64(1000).str("only a few bytes");
        expect_error(h, "needs 1000 bytes");
    }
    SECTION("huge array counts") {
        Bytes f;
        f.header(3, 0, 1).str("a").u32(9).u32(0);
        const auto at = f.pos();
        f.u64(1ull << 40).u8(1);
        expect_error(f, "exceeds the limit", "", at);
        Bytes g;
        g.header(3, 0, 1).str("a").u32(9).u32(8);
        const auto at2 = g.pos();
        g.u64(1000).str("x");  // 1000 strings need >= 8000 bytes
        expect_error(g, "does not fit", "", at2);
    }
    SECTION("arrays nested too deep") {
        Bytes f;
        f.header(3, 0, 1).str("deep").u32(9);
        for (int i = 0; i < 20; ++i) f.u32(9).u64(1);
        f.u32(4).u64(0);
        expect_error(f, "nested deeper");
    }
    SECTION("bool byte other than 0/1, duplicate keys") {
        Bytes f;
        f.header(3, 0, 1).str("b").u32(7);
        const auto at = f.pos();
        f.u8(2);
        expect_error(f, "bool byte", "", at);
        Bytes g;
        g.header(3, 0, 2).kv_u32("k", 1);
        const auto at2 = g.pos();
        g.kv_u32("k", 2);
        expect_error(g, "duplicate metadata key", "", at2);
    }
    SECTION("bad alignment") {
        for (std::uint32_t a : {0u, 3u, 48u}) {
            Bytes f;
            f.header(3, 0, 1).kv_u32("general.alignment", a);
            expect_error(f, "general.alignment");
        }
        Bytes s;
        s.header(3, 0, 1).kv_str("general.alignment", "32");
        expect_error(s, "general.alignment");
    }
}

TEST_CASE("GGUF: hostile tensor infos are Errors naming the tensor and offset", "[io]") {
    SECTION("too many dimensions") {
        Bytes f;
        f.header(3, 1, 0).str("t5");
        const auto at = f.pos();
        f.u32(5);
        for (int i = 0; i < 5; ++i) f.u64(1);
        f.u32(0).u64(0).pad(32).floats({1});
        expect_error(f, "5 dimensions", "t5", at);
    }
    SECTION("unknown tensor type") {
        Bytes f;
        f.header(3, 1, 0).str("bad").u32(1).u64(32);
        const auto at = f.pos();
        f.u32(4).u64(0).pad(32);
        for (int i = 0; i < 32; ++i) f.f32(0);
        expect_error(f, "unknown ggml tensor type id 4", "bad", at);
    }
    SECTION("dimension overflow") {
        Bytes f;
        f.header(3, 1, 0).tensor("neg", {1ull << 63}, 0, 0);
        expect_error(f, "negative", "neg");
        Bytes g;
        g.header(3, 1, 0).tensor("big", {1ull << 32, 1ull << 32}, 0, 0);
        expect_error(g, "overflows", "big");
        Bytes h;  // element count fits, byte count does not fit the file
        h.header(3, 1, 0).tensor("huge", {1ull << 30, 1ull << 31}, 0, 0).pad(32);
        expect_error(h, "outside the file", "huge");
        Bytes k;  // element count fits in int64, byte count does not fit in 64 bits
        k.header(3, 1, 0).tensor("wide", {1ull << 31, 1ull << 31}, 28 /* F64 */, 0).pad(32);
        expect_error(k, "byte size overflows", "wide");
    }
    SECTION("ne[0] not a whole number of blocks") {
        Bytes f;
        f.header(3, 1, 0).str("q");
        const auto at = f.pos();  // the n_dims field: the shape is what is wrong
        f.u32(2).u64(16).u64(2).u32(2 /* Q4_0 */).u64(0).pad(32);
        expect_error(f, "not a multiple of the Q4_0 block size 32", "q", at);
        Bytes k;  // a K-quant row of 128 values: half a Q4_K super-block, with enough bytes for a whole one
        k.header(3, 1, 0).str("k");
        const auto at_k = k.pos();
        k.u32(1).u64(128).u32(12 /* Q4_K */).u64(0).pad(32);
        for (int i = 0; i < 144; ++i) k.u8(0);
        expect_error(k, "not a multiple of the Q4_K block size 256", "k", at_k);
    }
    SECTION("a data section cut inside a quantized tensor") {
        Bytes f;  // two Q4_K super-blocks (288 bytes) announced, 200 present
        f.header(3, 1, 0).str("w").u32(2).u64(256).u64(2).u32(12 /* Q4_K */);
        const auto at = f.pos();
        f.u64(0).pad(32);
        for (int i = 0; i < 200; ++i) f.u8(0);
        expect_error(f, "+288 bytes) lies outside the file", "w", at);
    }
    SECTION("misaligned, out-of-range and overflowing offsets") {
        Bytes f;
        f.header(3, 1, 0).str("m").u32(1).u64(4).u32(0);
        const auto at = f.pos();
        f.u64(4).pad(32).floats({1, 2, 3, 4, 5, 6, 7, 8});
        expect_error(f, "not a multiple of the alignment", "m", at);
        Bytes g;
        g.header(3, 1, 0).str("o").u32(1).u64(8).u32(0);
        const auto at2 = g.pos();
        g.u64(32).pad(32).floats({1, 2, 3, 4, 5, 6, 7, 8});  // needs 32 + 32 bytes, has 32
        expect_error(g, "outside the file", "o", at2);
        Bytes h;
        h.header(3, 1, 0).tensor("w", {1}, 0, std::numeric_limits<std::uint64_t>::max() - 31).pad(32).floats({1});
        expect_error(h, "outside the file", "w");
    }
    SECTION("duplicate and over-long tensor names") {
        Bytes f;
        f.header(3, 2, 0).tensor("same", {1}, 0, 0);
        const auto at = f.pos();
        f.tensor("same", {1}, 0, 32).pad(32).floats({1}).pad(32).floats({2});
        expect_error(f, "duplicate tensor name", "same", at);
        Bytes g;
        g.header(3, 1, 0).tensor(std::string(5000, 'x'), {1}, 0, 0).pad(32).floats({1});
        expect_error(g, "exceeds the limit");
    }
    SECTION("loading a tensor that does not belong to the file") {
        const GgufFile f = parse(valid_file().b);
        GgufTensor fake = f.tensor("a");
        fake.offset = 1ull << 40;
        CHECK_THROWS_AS(f.load<float>(fake), Error);
        fake = f.tensor("a");
        fake.shape = {4, 4};  // says 16 values but nbytes is 32
        CHECK_THROWS_AS(f.load<float>(fake), Error);
    }
}

TEST_CASE("GGUF: every truncation of a file before its last tensor's end is an Error", "[io]") {
    const auto bytes = tio::read_bytes(sinkscope::test::fixture("io/gguf_all.gguf"));
    const json e = tio::read_json(sinkscope::test::fixture("io/gguf_all.expected.json"));
    std::uint64_t data_end = 0;
    for (const auto& t : e["tensors"])
        data_end = std::max(data_end, t["offset"].get<std::uint64_t>() + t["nbytes"].get<std::uint64_t>());
    REQUIRE(data_end <= bytes.size());
    std::size_t errors = 0, opened = 0;
    for (std::size_t cut = 1; cut < bytes.size(); ++cut) {
        const std::vector<std::uint8_t> head(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut));
        try {
            const GgufFile f = parse(head, "cut.gguf");
            ++opened;
            INFO("cut at " << cut << " opened");
            CHECK(cut >= data_end);  // only the trailing padding may go
            for (const auto& t : f.tensors())
                if (is_supported(t.type)) CHECK_NOTHROW(f.load<float>(t));
        } catch (const Error& err) {
            ++errors;
            if (err.file() != "cut.gguf") FAIL("Error does not name the file: " << err.what());
            if (!err.offset()) FAIL("Error without offset at cut " << cut << ": " << err.what());
        }
    }
    CHECK(errors == data_end - 1);
    CHECK(opened == bytes.size() - data_end);

    // The same through real files on disk (mmap path), at a spread of cut points, also in stories260K.
    tio::ScratchDir dir("gguf_cut");
    const auto stories = tio::read_bytes(sinkscope::test::shared_model("stories260K.gguf"));
    REQUIRE(stories.size() > 20000);
    for (std::size_t cut : {std::size_t{3}, std::size_t{8}, std::size_t{23}, std::size_t{100}, std::size_t{4000},
                            std::size_t{14000}, std::size_t{14880}, std::size_t{15000}, stories.size() - 1}) {
        const std::string path = dir.file("cut_" + std::to_string(cut) + ".gguf");
        tio::write_bytes(path, std::vector<std::uint8_t>(stories.begin(), stories.begin() + static_cast<std::ptrdiff_t>(cut)));
        try {
            GgufFile f(path);
            FAIL("truncated stories260K at " << cut << " opened");
        } catch (const Error& err) {
            CHECK(err.file() == path);
            CHECK(err.offset().has_value());
        }
    }
    for (std::size_t cut = 1; cut < 14880; cut += 97) {  // header region of stories260K, in memory
        const std::vector<std::uint8_t> head(stories.begin(), stories.begin() + static_cast<std::ptrdiff_t>(cut));
        CHECK_THROWS_AS(parse(head), Error);
    }
    CHECK_THROWS_AS(GgufFile(dir.file("missing.gguf")), Error);
}

TEST_CASE("GGUF: random corruption gives an Error or a fully loadable file", "[io][property]") {
    const auto original = tio::read_bytes(sinkscope::test::fixture("io/gguf_all.gguf"));
    const json e = tio::read_json(sinkscope::test::fixture("io/gguf_all.expected.json"));
    const auto header_end = e["data_offset"].get<std::size_t>();
    rc::prop("corrupt header bytes", [&]() {
        auto bytes = original;
        const auto n = *rc::gen::inRange(1, 9);
        for (int i = 0; i < n; ++i) {
            const auto pos = *rc::gen::inRange<std::size_t>(0, header_end);
            bytes[pos] = *rc::gen::arbitrary<std::uint8_t>();
        }
        try {
            const GgufFile f = parse(bytes, "corrupt.gguf");
            for (const auto& t : f.tensors())
                if (is_supported(t.type)) RC_ASSERT(f.load<float>(t).size() == static_cast<std::size_t>(t.n_elements()));
        } catch (const Error& err) {
            RC_ASSERT(err.file() == "corrupt.gguf");
        }
    });
}
