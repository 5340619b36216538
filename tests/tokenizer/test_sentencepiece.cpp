// SentencePieceTokenizer against its peers: ids from scripts/make_sentencepiece_fixtures.py (the
// `sentencepiece` package on vocabularies it trained, HF `tokenizers` on transformers' conversion of them,
// and llama.cpp's merge-by-score, which is SentencePiece's BPE encoding, on the GGUF form).
#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <sinkscope/io/gguf.hpp>
#include <sinkscope/tokenizer.hpp>

#include "tokenizer/tokenizer_fixtures.hpp"

using sinkscope::Error;
using sinkscope::tokenizer::PieceType;
using sinkscope::tokenizer::SentencePieceTokenizer;
using sinkscope::tokenizer::Tokenizer;
namespace tok = sinkscope::test::tok;

namespace {

const nlohmann::json& sp_reference() {
    static const nlohmann::json j = tok::read_json(sinkscope::test::fixture("tokenizer/sp_reference.json"));
    return j;
}

std::vector<std::string> sp_texts() { return sp_reference().at("texts").get<std::vector<std::string>>(); }

std::string printable(const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
        if (c == '\n') out += "\\n";
        else if (c < 0x20 || c == 0x7F) { char b[8]; std::snprintf(b, sizeof b, "\\x%02x", c); out += b; }
        else out += static_cast<char>(c);
    }
    return out;
}

SentencePieceTokenizer from_gguf(const std::string& rel) {
    const auto path = sinkscope::test::fixture(rel);
    return SentencePieceTokenizer::from_gguf_metadata(sinkscope::io::GgufFile(path).metadata(), path);
}

SentencePieceTokenizer from_json(const std::string& folder) {
    return SentencePieceTokenizer::from_hf_json(sinkscope::test::fixture("tokenizer/" + folder + "/tokenizer.json"));
}

// Every text encodes to the expected ids; `differs` ({"index": ids}) overrides single texts.
void check_ids(const SentencePieceTokenizer& t, const std::vector<std::string>& texts, const nlohmann::json& ids,
               const nlohmann::json& differs = nlohmann::json::object()) {
    REQUIRE(ids.is_array());
    REQUIRE(!ids.empty());
    REQUIRE(ids.size() <= texts.size());
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const auto key = std::to_string(i);
        const auto expected = (differs.contains(key) ? differs[key] : ids[i]).get<std::vector<std::int32_t>>();
        const auto got = t.encode(texts[i], false);
        if (got != expected) {
            ++mismatches;
            INFO("text #" << i << ": \"" << printable(texts[i]) << "\"");
            CHECK(got == expected);
        }
    }
    CHECK(mismatches == 0);
}

/// GGUF metadata of a hand-made vocabulary (type 1 unless given), with all 256 byte tokens after it.
nlohmann::json tiny_gguf(const std::vector<std::tuple<std::string, double, int>>& pieces) {
    nlohmann::json m;
    m["tokenizer.ggml.model"] = "llama";
    std::vector<std::string> tokens;
    std::vector<double> scores;
    std::vector<int> types;
    for (const auto& [piece, score, type] : pieces) {
        tokens.push_back(piece);
        scores.push_back(score);
        types.push_back(type);
    }
    for (int b = 0; b < 256; ++b) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "<0x%02X>", b);
        tokens.push_back(buf);
        scores.push_back(0.0);
        types.push_back(6);
    }
    m["tokenizer.ggml.tokens"] = tokens;
    m["tokenizer.ggml.scores"] = scores;
    m["tokenizer.ggml.token_type"] = types;
    m["tokenizer.ggml.unknown_token_id"] = 0;
    m["tokenizer.ggml.bos_token_id"] = 1;
    m["tokenizer.ggml.eos_token_id"] = 2;
    return m;
}

}  // namespace

TEST_CASE("tokenizer.json (Llama form) gives sentencepiece's ids on every text", "[tokenizer][reference]") {
    const auto texts = sp_texts();
    for (const std::string model : {"unigram", "bpe"}) {
        SECTION(model) {
            const auto t = from_json("sp_" + model);
            const auto& ref = sp_reference()["models"][model];
            CHECK(t.vocab_size() == ref["vocab_size"].get<std::size_t>());
            CHECK(t.algorithm() == (model == "unigram" ? SentencePieceTokenizer::Algorithm::unigram
                                                      : SentencePieceTokenizer::Algorithm::rank_merges));
            CHECK(t.dummy_prefix() == SentencePieceTokenizer::Prefix::every_stretch);
            check_ids(t, texts, ref["sentencepiece"]);
        }
    }
}

TEST_CASE("tokenizer.json with Metaspace(prepend_scheme=first) gives HF's ids", "[tokenizer][reference]") {
    const auto t = from_json("sp_unigram_metaspace");
    CHECK(t.dummy_prefix() == SentencePieceTokenizer::Prefix::first_stretch);
    const auto& ref = sp_reference()["models"]["unigram"];
    REQUIRE(ref["metaspace_differs"].size() >= 5);  // texts that start with a space: HF keeps no dummy prefix
    check_ids(t, sp_texts(), ref["sentencepiece"], ref["metaspace_differs"]);
}

TEST_CASE("Metaspace split=true and prepend_scheme=always, and the prefix after added tokens, give HF's ids",
          "[tokenizer][reference]") {
    namespace fs = std::filesystem;
    const auto& ref = sp_reference()["models"]["unigram"];
    const auto specials = sp_reference()["special_texts"].get<std::vector<std::string>>();
    check_ids(from_json("sp_unigram_metaspace"), specials, ref["metaspace_first_special"]);
    const auto dir = fs::temp_directory_path() / "sinkscope_sp_metaspace";
    fs::create_directories(dir);
    const auto path = (dir / "tokenizer.json").string();
    const auto with = [&](const char* key, const nlohmann::json& value) {
        auto j = tok::read_json(sinkscope::test::fixture("tokenizer/sp_unigram_metaspace/tokenizer.json"));
        auto& pre = j["pre_tokenizer"];
        if (pre["type"] == "Metaspace") pre[key] = value;
        else for (auto& step : pre["pretokenizers"]) if (step["type"] == "Metaspace") step[key] = value;
        std::ofstream(path) << j.dump();
        return SentencePieceTokenizer::from_hf_json(path);
    };
    SECTION("split") {
        REQUIRE(ref["metaspace_split_differs"].size() >= 5);
        check_ids(with("split", true), sp_texts(), ref["sentencepiece"], ref["metaspace_split_differs"]);
    }
    SECTION("always") {
        const auto t = with("prepend_scheme", "always");
        CHECK(t.dummy_prefix() == SentencePieceTokenizer::Prefix::every_stretch);
        check_ids(t, specials, ref["metaspace_always_special"]);
    }
    fs::remove_all(dir);
}

TEST_CASE("GGUF llama vocabularies give llama.cpp's ids (merges by score)", "[tokenizer][reference]") {
    const auto texts = sp_texts();
    SECTION("BPE-trained vocabulary: sentencepiece's own ids") {
        const auto t = from_gguf("tokenizer/sp_bpe.gguf");
        CHECK(t.algorithm() == SentencePieceTokenizer::Algorithm::score_merges);
        CHECK(t.vocab_size() == sp_reference()["models"]["bpe"]["vocab_size"].get<std::size_t>());
        CHECK(t.bos_id() == std::optional<std::int32_t>(1));
        CHECK(t.eos_id() == std::optional<std::int32_t>(2));
        CHECK(t.unk_id() == std::optional<std::int32_t>(0));
        CHECK(t.add_bos_default());  // no tokenizer.ggml.add_bos_token: llama.cpp adds BOS for SPM
        CHECK(t.token_type(3) == PieceType::byte);
        check_ids(t, texts, sp_reference()["models"]["bpe"]["sentencepiece"]);
    }
    SECTION("Unigram-trained vocabulary: merges by score, not Viterbi") {
        const auto t = from_gguf("tokenizer/sp_unigram.gguf");
        const auto& ref = sp_reference()["models"]["unigram"];
        check_ids(t, texts, ref["llama_cpp"]);
        // The two encodings really differ on this vocabulary (else the section above would test nothing new).
        std::size_t differ = 0;
        for (std::size_t i = 0; i < texts.size(); ++i) differ += ref["llama_cpp"][i] != ref["sentencepiece"][i];
        CHECK(differ > texts.size() / 2);
    }
}

TEST_CASE("added tokens are cut out and the dummy prefix restarts after them, as HF", "[tokenizer][reference]") {
    const auto specials = sp_reference()["special_texts"].get<std::vector<std::string>>();
    for (const std::string model : {"unigram", "bpe"}) {
        SECTION(model) {
            const auto& expected = sp_reference()["models"][model]["hf_special"];
            check_ids(from_json("sp_" + model), specials, expected);
            // llama.cpp with special-token parsing cuts the same tokens out. The last two texts spell byte
            // pieces, which HF's Unigram takes as those pieces; merges never make them.
            if (model == "bpe") check_ids(from_gguf("tokenizer/sp_bpe.gguf"), specials, expected);
            if (model == "unigram") CHECK(expected[4] == nlohmann::json::array({260, 68}));  // "▁", "<0x41>"
        }
    }
}

TEST_CASE("decode inverts encode and agrees with HF's decoder", "[tokenizer][reference]") {
    const auto texts = sp_texts();
    for (const std::string model : {"unigram", "bpe"}) {
        SECTION(model) {
            const auto& ref = sp_reference()["models"][model];
            const auto& hf = ref["hf_decode_differs"];  // texts with "▁", which decodes as a space
            REQUIRE(hf.size() >= 3);
            for (const auto& t : {from_json("sp_" + model), from_gguf("tokenizer/sp_" + model + ".gguf")}) {
                for (std::size_t i = 0; i < texts.size(); ++i) {
                    const auto key = std::to_string(i);
                    const auto expected = hf.contains(key) ? hf[key].get<std::string>() : texts[i];
                    INFO("text #" << i << ": \"" << printable(texts[i]) << "\"");
                    CHECK(t.decode(ref["sentencepiece"][i].get<std::vector<std::int32_t>>()) == expected);
                }
            }
        }
    }
    // Byte tokens of a partial UTF-8 character decode to those raw bytes.
    const auto t = from_gguf("tokenizer/sp_bpe.gguf");
    const auto ids = t.encode("😀", false);
    REQUIRE(ids.size() == 5);  // "▁" and four byte tokens
    CHECK(t.decode({ids[0], ids[1]}) == "\xF0");
}

TEST_CASE("stories260K's vocabulary gives sentencepiece's ids", "[tokenizer][reference]") {
    const auto path = sinkscope::test::shared_model("stories260K.gguf");
    if (!std::filesystem::exists(path) || !sp_reference().contains("stories260K")) {
        WARN("skipped: " << path << " absent");
        return;
    }
    const auto t = Tokenizer::from_gguf_metadata(sinkscope::io::GgufFile(path).metadata(), path);
    REQUIRE(t.sentencepiece() != nullptr);
    CHECK(t.vocab_size() == 512);
    CHECK(t.describe() == "SentencePiece llama (merges by score)");
    CHECK(t.add_bos_default());
    check_ids(*t.sentencepiece(), sp_texts(), sp_reference()["stories260K"]["sentencepiece"]);
    const auto& cli = sp_reference()["stories260K"];
    CHECK(t.encode(cli["cli_text"].get<std::string>(), true) == cli["cli_ids"].get<std::vector<std::int32_t>>());
    // The GGUF's pieces past the bytes are placeholders ("tok259"): "▁" too falls back to bytes, and decodes
    // as "▁", as in sentencepiece.
    auto ids = cli["cli_ids"].get<std::vector<std::int32_t>>();
    ids.erase(ids.begin());
    CHECK(t.decode(ids) == cli["cli_decoded"].get<std::string>());
}

TEST_CASE("merges by score, by hand", "[tokenizer]") {
    // "▁ab" from "▁", "a", "b": the pair scores are "▁a" -1, "ab" -2; so "▁a" first, then "▁ab" (-3) from
    // "▁a"+"b". With "ab" scored higher than "▁a", "ab" first, and "▁ab" from "▁"+"ab".
    const auto ids = [](double s_left, double s_right) {
        return SentencePieceTokenizer::from_gguf_metadata(
                   tiny_gguf({{"<unk>", 0, 2}, {"<s>", 0, 3}, {"</s>", 0, 3}, {"\xE2\x96\x81", -1, 1}, {"a", -1, 1},
                              {"b", -1, 1}, {"\xE2\x96\x81" "a", s_left, 1}, {"ab", s_right, 1}, {"\xE2\x96\x81" "ab", -3, 1},
                              {"<tab>", 0, 4}}),
                   "tiny")
            .encode("ab", false);
    };
    CHECK(ids(-1, -2) == std::vector<std::int32_t>{8});
    const auto t = SentencePieceTokenizer::from_gguf_metadata(
        tiny_gguf({{"<unk>", 0, 2}, {"<s>", 0, 3}, {"</s>", 0, 3}, {"\xE2\x96\x81", -1, 1}, {"a", -1, 1}, {"b", -1, 1},
                   {"\xE2\x96\x81" "a", -1, 1}, {"ab", -2, 1}, {"<tab>", 0, 4}}),
        "tiny");
    // "▁ab" is no token here: "▁a" wins over "ab", "b" stays.
    CHECK(t.encode("ab", false) == std::vector<std::int32_t>{6, 5});
    CHECK(t.encode("a a", false) == std::vector<std::int32_t>{6, 6});
    // Ties go to the leftmost pair: "▁bab" has "ba" and "ab" at the same score; "ba" is further left.
    const auto tie = SentencePieceTokenizer::from_gguf_metadata(
        tiny_gguf({{"<unk>", 0, 2}, {"<s>", 0, 3}, {"</s>", 0, 3}, {"\xE2\x96\x81", -1, 1}, {"a", -1, 1}, {"b", -1, 1},
                   {"ab", -2, 1}, {"ba", -2, 1}}),
        "tie");
    CHECK(tie.encode("bab", false) == std::vector<std::int32_t>{3, 7, 5});
    // A user-defined token is cut out whole; the text after it gets the dummy prefix again.
    CHECK(t.encode("a<tab>a", false) == std::vector<std::int32_t>{6, 8, 6});
    CHECK(t.decode({6, 8, 6}) == "a<tab>a");
    // A character that is no token: its UTF-8 bytes (byte tokens follow the 9 pieces: <0xNN> is 9 + NN).
    CHECK(t.encode("\n", false) == std::vector<std::int32_t>{3, 9 + 0x0A});
    CHECK(t.encode("é", false) == std::vector<std::int32_t>{3, 9 + 0xC3, 9 + 0xA9});
    CHECK(t.encode("", true) == std::vector<std::int32_t>{1});
    CHECK(t.decode({1, 3, 9 + 0x0A}) == "<s>\n");
    CHECK_THROWS_AS(t.decode({9 + 256}), Error);
    CHECK_THROWS_AS(t.encode("\xC3", false), Error);  // invalid UTF-8
}

TEST_CASE("Viterbi by hand (tokenizer.json Unigram)", "[tokenizer]") {
    namespace fs = std::filesystem;
    const auto dir = fs::temp_directory_path() / "sinkscope_sp_viterbi";
    fs::create_directories(dir);
    const auto path = (dir / "tokenizer.json").string();
    // "▁abc": best split by total score. "▁a"+"bc" = -1 + -1 = -2 beats "▁"+"abc" = -0.5 + -2 = -2.5 and
    // "▁ab"+"c" = -1.5 + -1 = -2.5; "d" is no piece: unknown, then its byte token.
    nlohmann::json vocab = nlohmann::json::array({{"<unk>", 0.0}, {"\xE2\x96\x81", -0.5}, {"\xE2\x96\x81" "a", -1.0},
                                                  {"bc", -1.0}, {"abc", -2.0}, {"\xE2\x96\x81" "ab", -1.5}, {"c", -1.0},
                                                  {"<0x64>", 0.0}});
    nlohmann::json j = {{"model", {{"type", "Unigram"}, {"unk_id", 0}, {"vocab", vocab}, {"byte_fallback", true}}},
                        {"normalizer", {{"type", "Sequence"}, {"normalizers", nlohmann::json::array({
                            {{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
                            {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}})}}},
                        {"pre_tokenizer", nullptr}};
    std::ofstream(path) << j.dump();
    const auto t = SentencePieceTokenizer::from_hf_json(path);
    CHECK(t.encode("abc", false) == std::vector<std::int32_t>{2, 3});
    CHECK(t.encode("abcd", false) == std::vector<std::int32_t>{2, 3, 7});
    CHECK(t.decode({2, 3, 7}) == "abcd");
    // Without byte fallback an unknown run is one unknown token (HF fuses them).
    j["model"]["byte_fallback"] = false;
    j["model"]["vocab"].erase(7);
    std::ofstream(path) << j.dump();
    CHECK(SentencePieceTokenizer::from_hf_json(path).encode("abcdd", false) == std::vector<std::int32_t>{2, 3, 0});
    fs::remove_all(dir);
}

TEST_CASE("ties by hand: HF's BPE merges the leftmost pair of a rank, HF's Viterbi keeps the first best path", "[tokenizer]") {
    namespace fs = std::filesystem;
    const auto dir = fs::temp_directory_path() / "sinkscope_sp_ties";
    fs::create_directories(dir);
    const auto path = (dir / "tokenizer.json").string();
    // BPE: "aaa" with the one merge "a a" -> "aa" + "a" (leftmost first), not "a" + "aa".
    std::ofstream(path) << R"({"model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>",
        "vocab": {"<unk>": 0, "a": 1, "aa": 2}, "merges": ["a a"]}})";
    CHECK(SentencePieceTokenizer::from_hf_json(path).encode("aaa", false) == std::vector<std::int32_t>{2, 1});
    // Unigram: "aa" as "a" + "a" (-1 - 1) or "aa" (-2), equal: the path found first ("aa", ending at 2
    // from the start) stays; a later one must score strictly higher.
    std::ofstream(path) << R"({"model": {"type": "Unigram", "unk_id": 0, "byte_fallback": false,
        "vocab": [["<unk>", 0.0], ["a", -1.0], ["aa", -2.0]]}})";
    CHECK(SentencePieceTokenizer::from_hf_json(path).encode("aa", false) == std::vector<std::int32_t>{2});
    fs::remove_all(dir);
}

TEST_CASE("decode(encode(x)) == x for SentencePiece tokenizers", "[tokenizer][property]") {
    // Everything but "▁" (which decodes as a space) and the spelling of a byte piece ("<0x41>", which HF's
    // Unigram reads as that byte, see above): spaces at the ends, runs of them, newlines, characters
    // only byte fallback covers, the special tokens themselves.
    const std::vector<std::string> alphabet = {" ", "  ", "\t", "\n", "\r\n", "a", "e", "t", "the", "ing", "def", "(", ")",
                                               ":", "0", "7", "é", "ß", "я", "中", "😀", "👍🏽", "\x01", "\x7f", "\u00a0",
                                               "\u3000", "<s>", "</s>", "<unk>", "<", ">"};
    const auto tokenizers = std::vector<SentencePieceTokenizer>{
        from_gguf("tokenizer/sp_unigram.gguf"), from_gguf("tokenizer/sp_bpe.gguf"), from_json("sp_unigram"), from_json("sp_bpe")};
    tok::property("sentencepiece roundtrip", [&] {
        const auto picks = *rc::gen::container<std::vector<std::size_t>>(rc::gen::inRange<std::size_t>(0, alphabet.size()));
        std::string text;
        for (auto k : picks) text += alphabet[k];
        for (const auto& t : tokenizers) RC_ASSERT(t.decode(t.encode(text, false)) == text);
    });
    tok::property("sentencepiece roundtrip, any code point but U+2581", [&] {
        const auto cps = *rc::gen::container<std::vector<char32_t>>(rc::gen::suchThat(
            rc::gen::oneOf(rc::gen::inRange<char32_t>(0x01, 0x7F), rc::gen::inRange<char32_t>(0x80, 0xD800),
                           rc::gen::inRange<char32_t>(0xE000, 0x110000)),
            [](char32_t c) { return c != 0x2581; }));
        std::string text;
        for (auto c : cps) sinkscope::tokenizer::detail::append_utf8(text, c);
        for (const auto& t : tokenizers) RC_ASSERT(t.decode(t.encode(text, false)) == text);
    }, 300);
}

TEST_CASE("every line of the corpus gives the peers' ids", "[tokenizer][reference][slow]") {
    // out/sp_corpus_reference.json: written by scripts/make_sentencepiece_fixtures.py (not committed, 16 MB).
    const auto path = sinkscope::test::fixture("../../out/sp_corpus_reference.json");
    if (!std::filesystem::exists(path)) {
        WARN("skipped: " << path << " absent (scripts/make_sentencepiece_fixtures.py writes it)");
        return;
    }
    const auto full = tok::read_json(path);
    const auto lines = full.at("texts").get<std::vector<std::string>>();
    REQUIRE(lines.size() > 100);
    SECTION("tokenizer.json Unigram") { check_ids(from_json("sp_unigram"), lines, full["models"]["unigram"]["sentencepiece"]); }
    SECTION("tokenizer.json BPE") { check_ids(from_json("sp_bpe"), lines, full["models"]["bpe"]["sentencepiece"]); }
    SECTION("GGUF Unigram vocabulary") { check_ids(from_gguf("tokenizer/sp_unigram.gguf"), lines, full["models"]["unigram"]["llama_cpp"]); }
    SECTION("GGUF BPE vocabulary") { check_ids(from_gguf("tokenizer/sp_bpe.gguf"), lines, full["models"]["bpe"]["sentencepiece"]); }
    SECTION("stories260K") {
        const auto model = sinkscope::test::shared_model("stories260K.gguf");
        if (!full.contains("stories260K") || !std::filesystem::exists(model)) return;
        const auto t = SentencePieceTokenizer::from_gguf_metadata(sinkscope::io::GgufFile(model).metadata(), model);
        check_ids(t, lines, full["stories260K"]["sentencepiece"]);
    }
}
