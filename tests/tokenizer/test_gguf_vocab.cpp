// tokenizer/gguf_vocab.hpp: the GGUF tokenizer keys both readers check, and the errors each reader gives
// through it (every message names the file and the key).
#include <catch2/catch.hpp>

#include <sinkscope/tokenizer/bpe.hpp>
#include <sinkscope/tokenizer/gguf_vocab.hpp>
#include <sinkscope/tokenizer/sentencepiece.hpp>

using namespace sinkscope;
using nlohmann::json;

namespace {

// The message of the Error `f` throws ("" when it throws none).
template <class F>
std::string error_of(F f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

json vocabulary(const char* model) {
    return {{"tokenizer.ggml.model", model},
            {"tokenizer.ggml.tokens", {"a", "b", "ab"}},
            {"tokenizer.ggml.token_type", {1, 1, 1}},
            {"tokenizer.ggml.scores", {0.0, -1.0, -2.0}},
            {"tokenizer.ggml.merges", {"a b"}}};
}

}  // namespace

TEST_CASE("GgufVocabKeys: the model, the tokens and the per-token arrays, checked", "[tokenizer]") {
    const json m = vocabulary("llama");
    const tokenizer::detail::GgufVocabKeys keys(m, "v.gguf");
    CHECK(keys.model() == "llama");
    CHECK(keys.tokens(3).size() == 3);
    CHECK(keys.per_token("scores", 3) != nullptr);
    CHECK(keys.per_token("absent", 3) == nullptr);
    CHECK(keys.find("tokenizer.ggml.merges") != nullptr);
    CHECK_THAT(error_of([&] { keys.tokens(2); }), Catch::Contains("v.gguf") && Catch::Contains("3 entries, too many"));
    CHECK_THAT(error_of([&] { keys.per_token("scores", 4); }),
               Catch::Contains("tokenizer.ggml.scores is not an array as long as tokenizer.ggml.tokens"));
    json no_model = m;
    no_model.erase("tokenizer.ggml.model");
    CHECK_THAT(error_of([&] { tokenizer::detail::GgufVocabKeys(no_model, "v.gguf").model(); }),
               Catch::Contains("no string 'tokenizer.ggml.model'"));
    json empty = m;
    empty["tokenizer.ggml.tokens"] = json::array();
    CHECK_THAT(error_of([&] { tokenizer::detail::GgufVocabKeys(empty, "v.gguf").tokens(10); }),
               Catch::Contains("no array 'tokenizer.ggml.tokens'"));
    CHECK_THAT(error_of([] { tokenizer::detail::GgufVocabKeys(json::array(), "v.gguf"); }),
               Catch::Contains("GGUF metadata is not an object"));
}

TEST_CASE("each GGUF tokenizer reader names the model kind it does not read, and a bad per-token array", "[tokenizer]") {
    CHECK_THAT(error_of([] { tokenizer::BpeTokenizer::from_gguf_metadata(vocabulary("llama"), "v.gguf"); }),
               Catch::Contains("tokenizer model 'llama' is not byte-level BPE"));
    CHECK_THAT(error_of([] { tokenizer::SentencePieceTokenizer::from_gguf_metadata(vocabulary("gpt2"), "v.gguf"); }),
               Catch::Contains("tokenizer model 'gpt2' is not SentencePiece ('llama')"));
    json bad = vocabulary("llama");
    bad["tokenizer.ggml.token_type"] = {1, 1};
    CHECK_THAT(error_of([&] { tokenizer::SentencePieceTokenizer::from_gguf_metadata(bad, "v.gguf"); }),
               Catch::Contains("tokenizer.ggml.token_type is not an array as long as tokenizer.ggml.tokens"));
    bad = vocabulary("gpt2");
    bad["tokenizer.ggml.token_type"] = {1};
    CHECK_THAT(error_of([&] { tokenizer::BpeTokenizer::from_gguf_metadata(bad, "v.gguf"); }),
               Catch::Contains("tokenizer.ggml.token_type is not an array as long as tokenizer.ggml.tokens"));
    // A well-formed vocabulary reads in both (the tokens a, b, ab and the merge "a b").
    CHECK_NOTHROW(tokenizer::SentencePieceTokenizer::from_gguf_metadata(vocabulary("llama"), "v.gguf"));
    CHECK_NOTHROW(tokenizer::BpeTokenizer::from_gguf_metadata(vocabulary("gpt2"), "v.gguf"));
}
