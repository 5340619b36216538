// tokenizer/hf_special_tokens.hpp: BOS, EOS and the add-BOS default from a Hugging Face tokenizer.json's
// TemplateProcessing and a tokenizer_config.json beside it (small files written to a temporary directory),
// by the two rules the header states; the added_tokens reader; the JSON reader's errors (file and byte
// offset). Token ids come from a fixed table in the test.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>
#include <sinkscope/core/error.hpp>
#include <sinkscope/tokenizer/hf_special_tokens.hpp>

using namespace sinkscope;
using nlohmann::json;
using tokenizer::detail::HfSpecialTokens;
namespace fs = std::filesystem;

namespace {

// A fresh directory per test case, removed at the end.
struct TempDir {
    fs::path path;
    explicit TempDir(const std::string& name)
        : path(fs::temp_directory_path() / ("sinkscope_hf_special_" + name + "_" + std::to_string(::getpid()))) {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    std::string write(const std::string& file, const std::string& text) const {
        std::ofstream(path / file, std::ios::binary) << text;
        return (path / file).string();
    }
    std::string tokenizer_json() const { return (path / "tokenizer.json").string(); }
};

std::optional<std::int32_t> id_of(const std::string& text) {
    static const std::map<std::string, std::int32_t> ids{{"<pad>", 0}, {"<s>", 1}, {"</s>", 2}, {"<|begin_of_text|>", 7}, {"<|eot|>", 9}};
    const auto it = ids.find(text);
    return it == ids.end() ? std::nullopt : std::optional<std::int32_t>(it->second);
}

// A tokenizer.json whose post-processor is TemplateProcessing with this first piece of `single`.
json with_template(const json& first_piece) {
    return json{{"post_processor",
                 {{"type", "TemplateProcessing"}, {"single", json::array({first_piece, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})}}}};
}
json special_piece(const std::string& id) { return {{"SpecialToken", {{"id", id}, {"type_id", 0}}}}; }

HfSpecialTokens read_special(const json& tokenizer_json, const std::string& path, HfSpecialTokens start = {}) {
    tokenizer::detail::read_hf_special_tokens(tokenizer_json, path, id_of, start);
    return start;
}

}  // namespace

TEST_CASE("HF special tokens, rule 1: a template that starts with a SpecialToken names BOS and adds it", "[tokenizer][hf_special_tokens]") {
    const TempDir dir("rule1");  // no tokenizer_config.json in it
    const auto t = read_special(with_template(special_piece("<s>")), dir.tokenizer_json());
    CHECK(t.bos == std::optional<std::int32_t>(1));
    CHECK(t.add_bos_default);
    CHECK_FALSE(t.eos.has_value());
    // a template that starts with the sequence leaves what the caller had
    HfSpecialTokens had;
    had.bos = 7; had.eos = 9; had.add_bos_default = false;
    const auto s = read_special(with_template({{"Sequence", {{"id", "A"}, {"type_id", 0}}}}), dir.tokenizer_json(), had);
    CHECK(s.bos == std::optional<std::int32_t>(7));
    CHECK(s.eos == std::optional<std::int32_t>(9));
    CHECK_FALSE(s.add_bos_default);
    // so does another post-processor type, or none
    CHECK(read_special(json{{"post_processor", {{"type", "ByteLevel"}}}}, dir.tokenizer_json(), had).bos == std::optional<std::int32_t>(7));
    CHECK(read_special(json::object(), dir.tokenizer_json(), had).bos == std::optional<std::int32_t>(7));
    // a SpecialToken that is not a token: no BOS, and so nothing to add
    const auto u = read_special(with_template(special_piece("<bos>")), dir.tokenizer_json(), had);
    CHECK_FALSE(u.bos.has_value());
    CHECK_FALSE(u.add_bos_default);
}

TEST_CASE("HF special tokens, rule 2: tokenizer_config.json beside tokenizer.json overrides", "[tokenizer][hf_special_tokens]") {
    const TempDir dir("rule2");
    // bos_token as a string, eos_token as an object, add_bos_token false against the template's true
    dir.write("tokenizer_config.json",
              R"({"bos_token": "<|begin_of_text|>", "eos_token": {"content": "</s>", "lstrip": false}, "add_bos_token": false})");
    const auto t = read_special(with_template(special_piece("<s>")), dir.tokenizer_json());
    CHECK(t.bos == std::optional<std::int32_t>(7));
    CHECK(t.eos == std::optional<std::int32_t>(2));
    CHECK_FALSE(t.add_bos_default);

    // add_bos_token true without a template; bos_token null and no add_bos_token keep the template's
    dir.write("tokenizer_config.json", R"({"bos_token": "<s>", "add_bos_token": true, "eos_token": "<|eot|>"})");
    const auto a = read_special(json::object(), dir.tokenizer_json());
    CHECK(a.bos == std::optional<std::int32_t>(1));
    CHECK(a.eos == std::optional<std::int32_t>(9));
    CHECK(a.add_bos_default);
    dir.write("tokenizer_config.json", R"({"bos_token": null, "model_max_length": 2048})");
    const auto b = read_special(with_template(special_piece("</s>")), dir.tokenizer_json());
    CHECK(b.bos == std::optional<std::int32_t>(2));
    CHECK(b.add_bos_default);
    // a config without eos_token keeps the caller's EOS, as one without bos_token keeps its BOS
    HfSpecialTokens had;
    had.eos = 9;
    CHECK(read_special(json::object(), dir.tokenizer_json(), had).eos == std::optional<std::int32_t>(9));
    // a non-boolean add_bos_token is not a setting
    dir.write("tokenizer_config.json", R"({"add_bos_token": "false"})");
    CHECK(read_special(with_template(special_piece("<s>")), dir.tokenizer_json()).add_bos_default);
}

TEST_CASE("HF special tokens: a bos_token or eos_token that is not a token, or a broken config, is an Error naming the file",
          "[tokenizer][hf_special_tokens]") {
    const TempDir dir("errors");
    const std::string config = dir.write("tokenizer_config.json", R"({"bos_token": "<bos>"})");
    try {
        read_special(json::object(), dir.tokenizer_json());
        FAIL("no Error for a bos_token that is not a token");
    } catch (const Error& e) {
        CHECK(e.message() == "bos_token '<bos>' is not a token");
        CHECK(e.file() == config);
    }
    dir.write("tokenizer_config.json", R"({"eos_token": {"content": "<end>"}})");
    CHECK_THROWS_WITH(read_special(json::object(), dir.tokenizer_json()), Catch::Contains("eos_token '<end>' is not a token"));
    dir.write("tokenizer_config.json", R"({"bos_token": "<s>",})");
    try {
        read_special(json::object(), dir.tokenizer_json());
        FAIL("no Error for invalid JSON");
    } catch (const Error& e) {
        CHECK_THAT(e.message(), Catch::StartsWith("invalid JSON"));
        CHECK(e.file() == config);
        // the parser fails on byte 21, the "}" after the comma: {"bos_token": "<s>", is 20 bytes (1-based, as nlohmann counts)
        CHECK(e.offset() == std::optional<std::uint64_t>(21));
    }
}

TEST_CASE("read_tokenizer_json: the file's JSON, or an Error naming the file (and the byte of a parse error)", "[tokenizer][hf_special_tokens]") {
    const TempDir dir("read");
    const std::string good = dir.write("a.json", R"({"x": [1, 2]})");
    CHECK(tokenizer::detail::read_tokenizer_json(good) == json{{"x", {1, 2}}});
    const std::string missing = (dir.path / "missing.json").string();
    try {
        tokenizer::detail::read_tokenizer_json(missing);
        FAIL("no Error for a missing file");
    } catch (const Error& e) {
        CHECK(e.message() == "cannot open file");
        CHECK(e.file() == missing);
    }
    const std::string bad = dir.write("b.json", "{\"a\": tru}");
    try {
        tokenizer::detail::read_tokenizer_json(bad);
        FAIL("no Error for invalid JSON");
    } catch (const Error& e) {
        CHECK(e.file() == bad);
        CHECK(e.offset().has_value());
    }
}

TEST_CASE("json_field: the value, or null for a missing key or a non-object", "[tokenizer][hf_special_tokens]") {
    const json o{{"a", 3}, {"b", {{"c", "x"}}}};
    CHECK(tokenizer::detail::json_field(o, "a") == 3);
    CHECK(tokenizer::detail::json_field(tokenizer::detail::json_field(o, "b"), "c") == "x");
    CHECK(tokenizer::detail::json_field(o, "z").is_null());
    CHECK(tokenizer::detail::json_field(json::array({1}), "a").is_null());
    CHECK(tokenizer::detail::json_field(json("a"), "a").is_null());
}

TEST_CASE("read_hf_added_tokens: content, id and flags; what it refuses, naming the token", "[tokenizer][hf_special_tokens]") {
    const Error::Where where{"/some/tokenizer.json", "", std::nullopt};
    using tokenizer::detail::read_hf_added_tokens;
    CHECK(read_hf_added_tokens(json::object(), where).empty());
    const auto t = read_hf_added_tokens(json::parse(R"({"added_tokens": [
        {"id": 1, "content": "<s>", "special": true, "normalized": false, "lstrip": false},
        {"id": 50, "content": " hello", "normalized": true}]})"), where);
    REQUIRE(t.size() == 2);
    CHECK(t[0].content == "<s>");
    CHECK(t[0].id == 1);
    CHECK(t[0].special);
    CHECK_FALSE(t[0].normalized);
    CHECK(t[1].content == " hello");
    CHECK(t[1].id == 50);
    CHECK_FALSE(t[1].special);  // absent: false
    CHECK(t[1].normalized);
    CHECK_THROWS_WITH(read_hf_added_tokens(json{{"added_tokens", {{"id", 1}}}}, where), Catch::Contains("'added_tokens' is not an array"));
    CHECK_THROWS_WITH(read_hf_added_tokens(json::parse(R"({"added_tokens": [{"content": "<s>"}]})"), where),
                      Catch::Contains("lacks an integer 'id' or a string 'content'"));
    CHECK_THROWS_WITH(read_hf_added_tokens(json::parse(R"({"added_tokens": [{"id": "1", "content": "<s>"}]})"), where),
                      Catch::Contains("lacks an integer 'id'"));
    for (const char* flag : {"single_word", "lstrip", "rstrip"}) {
        const json j{{"added_tokens", json::array({{{"id", 3}, {"content", "<x>"}, {flag, true}}})}};
        try {
            read_hf_added_tokens(j, where);
            FAIL("no Error for " << flag << " = true");
        } catch (const Error& e) {
            CHECK(e.message() == std::string("added token '<x>': ") + flag + "=true is not supported");
            CHECK(e.file() == "/some/tokenizer.json");
        }
    }
}
