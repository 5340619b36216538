// train/checkpoint.hpp against the safetensors format as its specification states it, read here by hand
// (not with io/safetensors.hpp): an 8-byte little-endian header length N, N bytes of JSON, then the data.
// Every tensor must be where its data_offsets say, with its dtype and shape, holding the bytes of the
// weight or AdamW moment it names; the metadata must hold what the header comment of checkpoint.hpp lists;
// the data section must start 8-byte aligned.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sinkscope/train/checkpoint.hpp>
#include <sinkscope/train/init.hpp>

#include "train/train_test_util.hpp"

using namespace sinkscope;

namespace {

template <class T>
void check_file_by_hand() {
    const model::Config c = test::tiny_llama_config();
    auto w = test::random_test_weights<T>(c, 41);
    train::AdamW<T> opt(train::AdamWConfig{}, w);
    auto g = train::zeros_like(w);
    for (auto& r : train::tensor_refs(g))
        for (std::int64_t i = 0; i < r.size; ++i) r.data[i] = T(0.01) * T(i % 7 - 3);
    opt.update(w, g, 1e-3);  // moments that are not zero
    const std::string dir = (std::filesystem::temp_directory_path() / "sinkscope_test_checkpoint").string();
    std::filesystem::create_directories(dir);
    const std::string path = dir + "/c.safetensors";
    train::save_checkpoint(path, c, w, opt, 7, nlohmann::json{{"lr", 1e-3}}, "rng-state-text");
    CHECK_FALSE(std::filesystem::exists(path + ".tmp"));

    std::ifstream f(path, std::ios::binary);
    const std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    REQUIRE(bytes.size() >= 8);
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[std::size_t(i)];  // little-endian u64
    REQUIRE(8 + n <= bytes.size());
    CHECK((8 + n) % 8 == 0);
    const auto header = nlohmann::json::parse(std::string(bytes.begin() + 8, bytes.begin() + std::ptrdiff_t(8 + n)));
    const std::size_t data = std::size_t(8 + n);

    const auto& meta = header.at("__metadata__");
    CHECK(meta.at("magic") == "sinkscope-checkpoint");
    CHECK(meta.at("version") == "1");
    CHECK(meta.at("step") == "7");
    CHECK(meta.at("optimizer_step") == "1");
    CHECK(meta.at("rng") == "rng-state-text");
    CHECK(meta.at("dtype") == (std::is_same_v<T, float> ? "F32" : "F64"));
    CHECK(nlohmann::json::parse(meta.at("run").get<std::string>()).at("lr") == 1e-3);
    CHECK(nlohmann::json::parse(meta.at("config").get<std::string>()).at("d_model") == c.d_model);

    std::size_t tensors = 0, end_max = 0;
    auto check_group = [&](const std::string& prefix, model::Weights<T>& ws) {
        for (auto& r : train::tensor_refs(ws)) {
            INFO(prefix + r.name);
            REQUIRE(header.contains(prefix + r.name));
            const auto& e = header.at(prefix + r.name);
            CHECK(e.at("dtype") == (std::is_same_v<T, float> ? "F32" : "F64"));
            CHECK(e.at("shape").template get<std::vector<std::int64_t>>() == r.shape);
            const auto off = e.at("data_offsets").template get<std::vector<std::size_t>>();
            REQUIRE(off.size() == 2);
            REQUIRE(off[1] - off[0] == std::size_t(r.size) * sizeof(T));
            REQUIRE(data + off[1] <= bytes.size());
            CHECK(std::memcmp(bytes.data() + data + off[0], r.data, off[1] - off[0]) == 0);
            end_max = std::max(end_max, off[1]);
            ++tensors;
        }
    };
    check_group("param.", w);
    check_group("adam_m.", opt.m());
    check_group("adam_v.", opt.v());
    CHECK(header.size() == tensors + 1);           // the tensors and __metadata__, nothing else
    CHECK(data + end_max == bytes.size());         // no bytes after the last tensor
    std::filesystem::remove_all(dir);
}

}  // namespace

TEST_CASE("checkpoint: the file is safetensors as its specification reads, float and double", "[train][checkpoint]") {
    SECTION("float") { check_file_by_hand<float>(); }
    SECTION("double") { check_file_by_hand<double>(); }
}
