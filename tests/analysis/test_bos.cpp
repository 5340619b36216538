// analysis/bos.hpp: --bos auto|on|off against a checkpoint's convention. auto follows add_bos_token and reads an
// absent key as no BOS; on needs a BOS id (else an Error naming the file); off never puts BOS first. The
// expected values are the fixtures' keys (scripts/make_bos_fixtures.py) and the models' GGUF metadata.
#include <catch2/catch.hpp>

#include <filesystem>

#include <sinkscope/analysis/bos.hpp>
#include <sinkscope/io/gguf.hpp>

#include "test_paths.hpp"

using namespace sinkscope;

namespace {
tokenizer::BosConvention gguf_convention(const std::string& path) {
    return tokenizer::bos_from_gguf_metadata(io::GgufFile(path).metadata(), path);
}
tokenizer::BosConvention fixture_convention(const std::string& name) {
    return gguf_convention(test::fixture("tokenizer/bos/" + name));
}
}  // namespace

TEST_CASE("--bos parses auto, on and off and nothing else", "[analysis][bos]") {
    CHECK(analysis::parse_bos_mode("auto") == analysis::BosMode::automatic);
    CHECK(analysis::parse_bos_mode("on") == analysis::BosMode::on);
    CHECK(analysis::parse_bos_mode("off") == analysis::BosMode::off);
    CHECK_THROWS_AS(analysis::parse_bos_mode("yes"), Error);
    CHECK(std::string(analysis::to_string(analysis::BosMode::automatic)) == "auto");
}

TEST_CASE("auto follows add_bos_token; on and off override it", "[analysis][bos]") {
    using analysis::BosMode;
    const auto yes = fixture_convention("gguf_add_true.gguf"), no = fixture_convention("gguf_add_false.gguf");
    const auto a_yes = analysis::resolve_bos(yes, BosMode::automatic);
    CHECK(a_yes.use);
    CHECK(a_yes.id == std::optional<std::int32_t>(2));
    CHECK(a_yes.source.find("add_bos_token = true") != std::string::npos);
    const auto a_no = analysis::resolve_bos(no, BosMode::automatic);
    CHECK_FALSE(a_no.use);
    CHECK(a_no.id == std::optional<std::int32_t>(1));  // recorded even when unused
    CHECK(analysis::resolve_bos(no, BosMode::on).use);
    CHECK(analysis::resolve_bos(no, BosMode::on).source == "--bos on");
    CHECK_FALSE(analysis::resolve_bos(yes, BosMode::off).use);
    CHECK(analysis::resolve_bos(yes, BosMode::off).source == "--bos off");
}

TEST_CASE("auto without an add_bos_token key is no BOS, and says the key was absent", "[analysis][bos]") {
    const auto r = analysis::resolve_bos(fixture_convention("gguf_absent.gguf"), analysis::BosMode::automatic);
    CHECK_FALSE(r.use);
    CHECK(r.source.rfind("absent: ", 0) == 0);
    const auto j = r.to_json();
    CHECK(j["mode"] == "auto");
    CHECK(j["use"] == false);
    CHECK(j["id"] == 1);
    CHECK(j["source"].get<std::string>().rfind("absent: no tokenizer.ggml.add_bos_token key", 0) == 0);
}

TEST_CASE("--bos on for a checkpoint without a BOS id is an Error naming the file", "[analysis][bos]") {
    const auto none = fixture_convention("gguf_no_id.gguf");
    try {
        analysis::resolve_bos(none, analysis::BosMode::on);
        FAIL("no Error");
    } catch (const Error& e) {
        CHECK(e.file().find("gguf_no_id.gguf") != std::string::npos);
        CHECK(e.message().find("no BOS token id") != std::string::npos);
    }
    // auto and off need no id.
    CHECK_FALSE(analysis::resolve_bos(none, analysis::BosMode::automatic).use);
    CHECK(analysis::resolve_bos(none, analysis::BosMode::off).to_json()["id"].is_null());
}

TEST_CASE("the bundled models: auto gives no BOS on SmolLM2 (add_bos_token false), BOS on stories260K (SPM, no key)",
          "[analysis][bos]") {
    const auto stories = analysis::resolve_bos(gguf_convention(test::shared_model("stories260K.gguf")), analysis::BosMode::automatic);
    CHECK(stories.use);
    CHECK(stories.id == std::optional<std::int32_t>(1));
    const auto smol_path = test::downloaded_model("SmolLM2-135M-Instruct.Q4_1.gguf");
    if (!std::filesystem::exists(smol_path)) return;  // scripts/fetch_model.sh not run
    const auto smol = analysis::resolve_bos(gguf_convention(smol_path), analysis::BosMode::automatic);
    CHECK_FALSE(smol.use);
    CHECK(smol.id == std::optional<std::int32_t>(1));
    CHECK(smol.source.find("add_bos_token = false") != std::string::npos);
}
