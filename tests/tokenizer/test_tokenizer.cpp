// tokenizer/tokenizer.hpp: the one front door picks the kind each file describes, names a kind it does not
// support, and, whichever kind it picked, gives the peer's ids: transformers' for SmolLM2's byte-level BPE,
// llama.cpp's for a GGUF SentencePiece vocabulary, `sentencepiece`'s for tokenizer.json (the fixtures of
// scripts/make_tokenizer_fixtures.py and scripts/make_sentencepiece_fixtures.py).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <sinkscope/io/gguf.hpp>
#include <sinkscope/tokenizer.hpp>

#include "tokenizer/tokenizer_fixtures.hpp"

using sinkscope::tokenizer::Tokenizer;
namespace tok = sinkscope::test::tok;

namespace {
// The number of texts whose ids differ from the reference's (the reference may cover fewer texts).
std::size_t mismatches(const Tokenizer& t, const std::vector<std::string>& texts, const nlohmann::json& ids) {
    REQUIRE(ids.is_array());
    REQUIRE(!ids.empty());
    std::size_t n = 0;
    for (std::size_t i = 0; i < ids.size() && i < texts.size(); ++i)
        if (t.encode(texts[i], false) != ids[i].get<std::vector<std::int32_t>>()) ++n;
    return n;
}
}  // namespace

TEST_CASE("Tokenizer picks the kind the file describes and names a kind it does not support", "[tokenizer]") {
    CHECK(Tokenizer::from_hf_json(tok::smollm2_json_path()).bpe() != nullptr);
    CHECK(Tokenizer::from_hf_json(sinkscope::test::fixture("tokenizer/sp_unigram/tokenizer.json")).describe() ==
          "SentencePiece Unigram");
    CHECK(Tokenizer::from_hf_json(sinkscope::test::fixture("tokenizer/sp_bpe/tokenizer.json")).describe() ==
          "SentencePiece BPE (byte fallback)");
    CHECK(Tokenizer::from_gguf_metadata(tok::smollm2_gguf_metadata(), "smollm2").describe() ==
          "byte-level BPE, pre-tokenizer 'smollm'");
    for (const std::string kind : {"bert", "t5", "rwkv"}) {
        nlohmann::json m = {{"tokenizer.ggml.model", kind}, {"tokenizer.ggml.tokens", {"a"}}};
        CHECK_THROWS_WITH(Tokenizer::from_gguf_metadata(m, "x.gguf"), Catch::Contains("tokenizer model '" + kind + "'") &&
                                                                          Catch::Contains("not supported"));
    }
    namespace fs = std::filesystem;
    const auto dir = fs::temp_directory_path() / "sinkscope_sp_kinds";
    fs::create_directories(dir);
    const auto path = (dir / "tokenizer.json").string();
    std::ofstream(path) << R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})";
    CHECK_THROWS_WITH(Tokenizer::from_hf_json(path), Catch::Contains("'WordPiece'") && Catch::Contains("not supported"));
    // A normalizer that would change the text is refused, not skipped.
    auto j = tok::read_json(sinkscope::test::fixture("tokenizer/sp_unigram/tokenizer.json"));
    j["normalizer"] = {{"type", "NFKC"}};
    std::ofstream(path) << j.dump();
    CHECK_THROWS_WITH(Tokenizer::from_hf_json(path), Catch::Contains("normalizer NFKC not supported"));
    j["normalizer"] = {{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}};
    std::ofstream(path) << j.dump();
    CHECK_THROWS_WITH(Tokenizer::from_hf_json(path), Catch::Contains("Regex"));
    fs::remove_all(dir);
}

TEST_CASE("Tokenizer gives the peer's ids for every kind it opens", "[tokenizer][reference]") {
    const auto bpe = Tokenizer::from_hf_json(tok::smollm2_json_path());
    CHECK(mismatches(bpe, tok::texts(), tok::reference()["variants"]["smollm"]["ids"]) == 0);

    const auto sp = tok::read_json(sinkscope::test::fixture("tokenizer/sp_reference.json"));
    const auto texts = sp.at("texts").get<std::vector<std::string>>();
    for (const std::string model : {"unigram", "bpe"}) {
        CAPTURE(model);
        const auto json = Tokenizer::from_hf_json(sinkscope::test::fixture("tokenizer/sp_" + model + "/tokenizer.json"));
        CHECK(mismatches(json, texts, sp["models"][model]["sentencepiece"]) == 0);
        const auto path = sinkscope::test::fixture("tokenizer/sp_" + model + ".gguf");
        const auto gguf = Tokenizer::from_gguf_metadata(sinkscope::io::GgufFile(path).metadata(), path);
        // llama.cpp's ids (a string there names the list they equal: the BPE vocabulary's are sentencepiece's).
        const auto& gguf_ids = sp["models"][model]["llama_cpp"].is_array() ? sp["models"][model]["llama_cpp"]
                                                                             : sp["models"][model]["sentencepiece"];
        CHECK(mismatches(gguf, texts, gguf_ids) == 0);
        // With BOS asked for, the same ids follow the model's BOS.
        REQUIRE(gguf.bos_id().has_value());
        const auto with_bos = gguf.encode(texts.at(0), true), plain = gguf.encode(texts.at(0), false);
        REQUIRE(with_bos.size() == plain.size() + 1);
        CHECK(with_bos.front() == *gguf.bos_id());
        CHECK(std::vector<std::int32_t>(with_bos.begin() + 1, with_bos.end()) == plain);
    }
}
