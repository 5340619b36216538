// tokenizer/bos.hpp: the BOS id and add_bos_token read from GGUF metadata and from a Hugging Face directory.
// The fixtures (scripts/make_bos_fixtures.py) are written with the values the checks expect; each source
// sentence must name the key and the file, or say that the key is absent.
#include <catch2/catch.hpp>

#include <sinkscope/io/gguf.hpp>
#include <sinkscope/tokenizer/bos.hpp>

#include "test_paths.hpp"

using namespace sinkscope;

namespace {
std::string bos_fixture(const std::string& name) { return test::fixture("tokenizer/bos/" + name); }
tokenizer::BosConvention from_gguf(const std::string& name) {
    const auto path = bos_fixture(name);
    return tokenizer::bos_from_gguf_metadata(io::GgufFile(path).metadata(), path);
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("GGUF: bos_token_id and add_bos_token are read with their source", "[tokenizer][bos]") {
    const auto t = from_gguf("gguf_add_true.gguf");
    REQUIRE(t.id == std::optional<std::int32_t>(2));
    REQUIRE(t.add_bos == std::optional<bool>(true));
    CHECK(contains(t.id_source, "tokenizer.ggml.bos_token_id in "));
    CHECK(contains(t.add_source, "tokenizer.ggml.add_bos_token = true in "));
    CHECK(contains(t.add_source, "gguf_add_true.gguf"));

    const auto f = from_gguf("gguf_add_false.gguf");
    CHECK(f.id == std::optional<std::int32_t>(1));
    CHECK(f.add_bos == std::optional<bool>(false));
    CHECK(contains(f.add_source, "add_bos_token = false"));
}

TEST_CASE("GGUF: absent keys are recorded as absent, not guessed", "[tokenizer][bos]") {
    const auto a = from_gguf("gguf_absent.gguf");
    CHECK(a.id == std::optional<std::int32_t>(1));
    CHECK_FALSE(a.add_bos.has_value());
    CHECK(contains(a.add_source, "absent: no tokenizer.ggml.add_bos_token key in "));
    const auto n = from_gguf("gguf_no_id.gguf");
    CHECK_FALSE(n.id.has_value());
    CHECK_FALSE(n.add_bos.has_value());
    CHECK(contains(n.id_source, "absent: no tokenizer.ggml.bos_token_id key"));
}

TEST_CASE("GGUF: a BOS id outside the vocabulary or a non-bool add_bos_token is an Error naming the file", "[tokenizer][bos]") {
    for (const char* name : {"gguf_bad_id.gguf", "gguf_bad_add.gguf"}) {
        try {
            from_gguf(name);
            FAIL("no Error for " << name);
        } catch (const Error& e) {
            CHECK(contains(e.file(), name));
        }
    }
}

TEST_CASE("Hugging Face: bos_token from tokenizer_config.json, its id from tokenizer.json", "[tokenizer][bos]") {
    const auto t = tokenizer::bos_from_hf_dir(bos_fixture("hf_add_true"));
    CHECK(t.id == std::optional<std::int32_t>(2));  // an added token
    CHECK(t.add_bos == std::optional<bool>(true));
    CHECK(contains(t.id_source, "bos_token '<bos>'"));
    CHECK(contains(t.add_source, "add_bos_token = true in "));

    const auto f = tokenizer::bos_from_hf_dir(bos_fixture("hf_add_false"));
    CHECK(f.id == std::optional<std::int32_t>(1));  // in model.vocab
    CHECK(f.add_bos == std::optional<bool>(false));
}

TEST_CASE("Hugging Face: a TemplateProcessing post-processor that opens with a special token means BOS", "[tokenizer][bos]") {
    const auto t = tokenizer::bos_from_hf_dir(bos_fixture("hf_template"));
    CHECK(t.id == std::optional<std::int32_t>(5));
    CHECK(t.add_bos == std::optional<bool>(true));
    CHECK(contains(t.add_source, "TemplateProcessing"));
}

TEST_CASE("Hugging Face: config.json's bos_token_id alone gives the id; no key gives absent", "[tokenizer][bos]") {
    const auto c = tokenizer::bos_from_hf_dir(bos_fixture("hf_config_only"));
    CHECK(c.id == std::optional<std::int32_t>(3));
    CHECK(contains(c.id_source, "bos_token_id in "));
    CHECK_FALSE(c.add_bos.has_value());
    CHECK(contains(c.add_source, "absent: no add_bos_token key"));
    const auto n = tokenizer::bos_from_hf_dir(bos_fixture("hf_none"));
    CHECK_FALSE(n.id.has_value());
    CHECK_FALSE(n.add_bos.has_value());
    CHECK(contains(n.id_source, "absent: "));
}

TEST_CASE("stories260K has BOS id 1 and no add_bos_token key: llama.cpp's SPM default, BOS first", "[tokenizer][bos]") {
    const auto path = test::shared_model("stories260K.gguf");
    const auto s = tokenizer::bos_from_gguf_metadata(io::GgufFile(path).metadata(), path);
    CHECK(s.id == std::optional<std::int32_t>(1));
    CHECK(s.add_bos == std::optional<bool>(true));
    CHECK(contains(s.add_source, "absent: no tokenizer.ggml.add_bos_token key in "));
    CHECK(contains(s.add_source, "llama.cpp's default for tokenizer model 'llama'"));
}
