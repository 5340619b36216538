// Tests for include/sinkscope/io/safetensors.hpp.
//  [reference]: files written by the `safetensors` package (torch front end) — a single file and a 2-shard
//               checkpoint with a transformers-style index (scripts/make_io_fixtures.py); tensor table,
//               metadata and values (exact: F32/F16/BF16 values are floats) against safetensors.expected.json.
//  unit:        crafted headers and truncations: each an Error naming the file (and tensor when known).
//  [property]:  random corruption of the header: Error or a file whose float tensors all load.
#include <catch2/catch.hpp>
#include <rapidcheck/catch.h>

#include <sinkscope/io/safetensors.hpp>

#include "io/io_test_util.hpp"

using namespace sinkscope::io;
using sinkscope::Error;
using nlohmann::json;
namespace tio = sinkscope::test::io;

namespace {

json expected() { return tio::read_json(sinkscope::test::fixture("io/safetensors.expected.json")); }

void check_file_against(const SafetensorsFile& f, const json& e) {
    CHECK(f.metadata() == e["metadata"]);
    const json& et = e["tensors"];
    REQUIRE(f.tensors().size() == et.size());
    for (auto it = et.begin(); it != et.end(); ++it) {
        INFO("tensor " << it.key());
        const SafetensorsTensor* t = f.find(it.key());
        REQUIRE(t != nullptr);
        CHECK(t->name == it.key());
        CHECK(t->dtype == it.value()["dtype"].get<std::string>());
        CHECK(t->shape == it.value()["shape"].get<std::vector<std::int64_t>>());
        CHECK(t->offset == it.value()["offset"].get<std::uint64_t>());
        CHECK(t->nbytes == it.value()["nbytes"].get<std::uint64_t>());
        if (t->dtype == "F32" || t->dtype == "F16" || t->dtype == "BF16") {
            const auto want = it.value()["values"].get<std::vector<double>>();
            const auto got_d = f.load<double>(it.key());
            CHECK(got_d == want);  // exact: every F32/F16/BF16 value is a double
            const auto got_f = f.load<float>(it.key());
            REQUIRE(got_f.size() == want.size());
            for (std::size_t i = 0; i < want.size(); ++i) CHECK(double(got_f[i]) == want[i]);
        }
    }
    for (std::size_t i = 1; i < f.tensors().size(); ++i) CHECK(f.tensors()[i - 1].offset <= f.tensors()[i].offset);
}

/// u64 header length + header text + `data` bytes of zeros.
std::vector<std::uint8_t> st_bytes(const std::string& header, std::size_t data = 0) {
    std::vector<std::uint8_t> b(8 + header.size() + data, 0);
    const std::uint64_t n = header.size();
    std::memcpy(b.data(), &n, 8);
    std::memcpy(b.data() + 8, header.data(), header.size());
    return b;
}

void expect_error(const std::vector<std::uint8_t>& bytes, const std::string& text, const std::string& tensor = "") {
    try {
        SafetensorsFile f(MappedFile::from_bytes("crafted.safetensors", bytes));
        FAIL("no Error; expected one containing '" << text << "'");
    } catch (const Error& e) {
        INFO(e.what());
        CHECK(e.message().find(text) != std::string::npos);
        CHECK(e.file() == "crafted.safetensors");
        CHECK(e.tensor() == tensor);
    }
}

}  // namespace

TEST_CASE("safetensors single file matches what the safetensors package wrote", "[io][reference]") {
    const json e = expected();
    const SafetensorsFile f(sinkscope::test::fixture("io/st_single/model.safetensors"));
    check_file_against(f, e["single"]);
    CHECK(f.find("e.scalar")->shape.empty());
    CHECK(f.load<float>("e.scalar") == std::vector<float>{2.5f});
    CHECK(f.load<float>("f.empty").empty());
    try {
        f.load<float>("d.i32");
        FAIL("I32 loaded");
    } catch (const Error& err) {
        CHECK(err.tensor() == "d.i32");
        CHECK(err.file() == f.path());
        CHECK(err.message().find("I32") != std::string::npos);
    }
    CHECK(f.find("nope") == nullptr);
    CHECK_THROWS_AS(f.load<float>("nope"), Error);
}

TEST_CASE("SafetensorsCheckpoint: single-file and sharded directories", "[io][reference]") {
    const json e = expected();
    SECTION("single") {
        const SafetensorsCheckpoint ck(sinkscope::test::fixture("io/st_single"));
        CHECK(ck.names() == std::vector<std::string>{"a.f32", "b.f16", "c.bf16", "d.i32", "e.scalar", "f.empty"});
        CHECK(ck.shape("c.bf16") == std::vector<std::int64_t>{2, 2, 2});
        CHECK(ck.load<double>("a.f32") == e["single"]["tensors"]["a.f32"]["values"].get<std::vector<double>>());
        const SafetensorsCheckpoint by_file(sinkscope::test::fixture("io/st_single/model.safetensors"));
        CHECK(by_file.names() == ck.names());
    }
    SECTION("sharded") {
        const SafetensorsCheckpoint ck(sinkscope::test::fixture("io/st_sharded"));
        REQUIRE(ck.files().size() == 2);
        std::vector<std::string> all;
        for (const auto& [shard, content] : e["sharded"].items()) {
            const SafetensorsFile f(sinkscope::test::fixture("io/st_sharded/" + shard));
            check_file_against(f, content);
            for (const auto& [name, t] : content["tensors"].items()) {
                all.push_back(name);
                INFO(name);
                CHECK(ck.has(name));
                CHECK(ck.shape(name) == t["shape"].get<std::vector<std::int64_t>>());
                CHECK(ck.dtype(name) == t["dtype"].get<std::string>());
                CHECK(ck.load<double>(name) == t["values"].get<std::vector<double>>());
            }
        }
        std::sort(all.begin(), all.end());
        CHECK(ck.names() == all);
        CHECK_FALSE(ck.has("model.nope"));
        try {
            ck.load<float>("model.nope");
            FAIL("no throw");
        } catch (const Error& err) {
            CHECK(err.tensor() == "model.nope");
            CHECK(err.file() == sinkscope::test::fixture("io/st_sharded"));
        }
        CHECK_THROWS_AS(ck.shape("model.nope"), Error);
    }
}

TEST_CASE("SafetensorsCheckpoint: bad directories and indexes", "[io]") {
    tio::ScratchDir dir("st_ck");
    CHECK_THROWS_AS(SafetensorsCheckpoint(dir.str()), Error);  // empty directory
    const auto shard = tio::read_bytes(sinkscope::test::fixture("io/st_sharded/model-00001-of-00002.safetensors"));
    tio::write_bytes(dir.file("s.safetensors"), shard);
    auto index = [&](const std::string& text) {
        tio::write_bytes(dir.file("model.safetensors.index.json"), std::vector<std::uint8_t>(text.begin(), text.end()));
    };
    index(R"({"weight_map": {"model.embed.weight": "s.safetensors"}})");
    CHECK(SafetensorsCheckpoint(dir.str()).names() == std::vector<std::string>{"model.embed.weight"});
    auto refused = [&](const std::string& text, const std::string& msg) {
        index(text);
        try {
            SafetensorsCheckpoint ck(dir.str());
            FAIL("accepted index " << text);
        } catch (const Error& e) {
            INFO(e.what());
            CHECK(e.message().find(msg) != std::string::npos);
        }
    };
    refused(R"({"weight_map": {"missing.tensor": "s.safetensors"}})", "missing from shard");
    refused(R"({"weight_map": {"model.embed.weight": "../s.safetensors"}})", "plain relative path");
    refused(R"({"weight_map": {"model.embed.weight": "/etc/passwd"}})", "plain relative path");
    refused(R"({"weight_map": {"model.embed.weight": 3}})", "not a string");
    refused(R"({"weight_map": []})", "weight_map");
    refused(R"({"metadata": {}})", "weight_map");
    refused(R"(not json)", "not a JSON object");
    refused(R"({"weight_map": {"model.embed.weight": "absent.safetensors"}})", "cannot open");
}

TEST_CASE("safetensors: hostile headers are Errors naming the file and tensor", "[io]") {
    const std::string ok = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    CHECK_NOTHROW(SafetensorsFile(MappedFile::from_bytes("ok", st_bytes(ok, 8))));
    // Header length.
    std::vector<std::uint8_t> huge = st_bytes(ok, 8);
    const std::uint64_t big = 1ull << 63;
    std::memcpy(huge.data(), &big, 8);
    expect_error(huge, "exceeds 100 MB");
    std::vector<std::uint8_t> past = st_bytes(ok, 8);
    const std::uint64_t n = 1000;
    std::memcpy(past.data(), &n, 8);
    expect_error(past, "needs 1000 bytes");
    expect_error({1, 2, 3}, "needs 8 bytes");
    // JSON.
    expect_error(st_bytes("[1, 2]"), "not a JSON object");
    expect_error(st_bytes("{\"w\": "), "not valid JSON");
    expect_error(st_bytes("{\"w\": \"\xff\xfe\"}"), "not valid JSON");  // invalid UTF-8
    expect_error(st_bytes(R"({"__metadata__": 3})"), "__metadata__");
    // Entries.
    expect_error(st_bytes(R"({"w": 3})"), "not an object", "w");
    expect_error(st_bytes(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", 8), "dtype", "w");
    expect_error(st_bytes(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", 8), "shape", "w");
    expect_error(st_bytes(R"({"w":{"dtype":"F32","shape":[2]}})", 8), "data_offsets", "w");
    expect_error(st_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,-8]}})", 8), "data_offsets", "w");
    expect_error(st_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8), "data_offsets", "w");
    expect_error(st_bytes(R"({"w":{"dtype":"Q9","shape":[2],"data_offsets":[0,8]}})", 8), "unknown dtype", "w");
    expect_error(st_bytes(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8), "non-negative", "w");
    expect_error(st_bytes(R"({"w":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", 8), "non-negative", "w");
    expect_error(st_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8), "outside", "w");
    expect_error(st_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", 8), "outside", "w");
    expect_error(st_bytes(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "needs 12", "w");
    expect_error(st_bytes(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8),
                 "overflows", "w");
    expect_error(st_bytes(R"({"w":{"dtype":"F64","shape":[4294967296,2147483648],"data_offsets":[0,8]}})", 8),
                 "overflows", "w");  // 2^63 elements
    expect_error(st_bytes(R"({"w":{"dtype":"F64","shape":[4294967296,1073741824],"data_offsets":[0,8]}})", 8),
                 "more than 2^64", "w");  // 2^62 elements fit in int64, their 2^65 bytes do not fit in 64 bits
    CHECK_THROWS_AS(SafetensorsFile("/nonexistent/model.safetensors"), Error);
}

TEST_CASE("safetensors: every truncation is an Error", "[io]") {
    const auto bytes = tio::read_bytes(sinkscope::test::fixture("io/st_single/model.safetensors"));
    std::size_t opened = 0;
    for (std::size_t cut = 1; cut < bytes.size(); ++cut) {
        try {
            SafetensorsFile f(MappedFile::from_bytes("cut", std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + cut)));
            ++opened;
        } catch (const Error& e) {
            CHECK(e.file() == "cut");
        }
    }
    CHECK(opened == 0);  // the last tensor ends at the end of the file
}

TEST_CASE("safetensors: random header corruption gives an Error or a loadable file", "[io][property]") {
    const auto original = tio::read_bytes(sinkscope::test::fixture("io/st_single/model.safetensors"));
    const std::size_t header_end = 8 + expected()["single"]["header_len"].get<std::size_t>();
    rc::prop("corrupt header bytes", [&]() {
        auto bytes = original;
        const auto n = *rc::gen::inRange(1, 6);
        for (int i = 0; i < n; ++i) {
            const auto pos = *rc::gen::inRange<std::size_t>(0, header_end);
            // mostly printable characters that keep the JSON plausible (digits, quotes, brackets)
            bytes[pos] = *rc::gen::oneOf(rc::gen::element<std::uint8_t>('0', '9', '"', ',', '[', ']', '{', '}', ':', '-'),
                                         rc::gen::arbitrary<std::uint8_t>());
        }
        try {
            const SafetensorsFile f(MappedFile::from_bytes("corrupt", bytes));
            for (const auto& t : f.tensors())
                if (t.dtype == "F32" || t.dtype == "F16" || t.dtype == "BF16")
                    RC_ASSERT(f.load<float>(t.name).size() == static_cast<std::size_t>(t.n_elements()));
        } catch (const Error& e) {
            RC_ASSERT(e.file() == "corrupt");
        }
    });
}
