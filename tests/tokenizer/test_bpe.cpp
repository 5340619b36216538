// BpeTokenizer against Hugging Face: ids from scripts/make_tokenizer_fixtures.py (HF `tokenizers` on the
// SmolLM2-135M-Instruct tokenizer, under each pre-tokenizer type, and on small trained tokenizers).
#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include <sinkscope/tokenizer.hpp>

#include "tokenizer/tokenizer_fixtures.hpp"

#if __has_include(<sinkscope/io/gguf.hpp>)
#include <sinkscope/io/gguf.hpp>
#define SINKSCOPE_TEST_HAVE_GGUF 1
#endif

using sinkscope::Error;
using sinkscope::tokenizer::BpeTokenizer;
namespace tok = sinkscope::test::tok;

namespace {

std::string show(const std::string& s) {  // printable form of a text for failure messages
    std::string out;
    for (unsigned char c : s) {
        if (c == '\n') out += "\\n";
        else if (c < 0x20) { char b[8]; std::snprintf(b, sizeof b, "\\x%02x", c); out += b; }
        else out += static_cast<char>(c);
    }
    return out;
}

// Every reference text encodes to HF's ids for pre-tokenizer `kind`.
void check_all_texts(const BpeTokenizer& t, const nlohmann::json& ids, const std::vector<std::string>& texts) {
    REQUIRE(ids.size() == texts.size());
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < texts.size(); ++i) {
        const auto expected = ids[i].get<std::vector<std::int32_t>>();
        const auto got = t.encode(texts[i], false);
        if (got != expected) {
            ++mismatches;
            INFO("text #" << i << ": \"" << show(texts[i]) << "\"");
            CHECK(got == expected);
        }
    }
    CHECK(mismatches == 0);
}

struct TempDir {
    std::filesystem::path path;
    TempDir() {
        path = std::filesystem::temp_directory_path() /
               ("sinkscope_tok_" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
        std::filesystem::create_directories(path);
    }
    ~TempDir() { std::error_code ec; std::filesystem::remove_all(path, ec); }
    std::string write(const std::string& name, const std::string& content) const {
        std::ofstream(path / name, std::ios::binary) << content;
        return (path / name).string();
    }
};

}  // namespace

TEST_CASE("SmolLM2 tokenizer.json gives HF's ids for every reference text", "[tokenizer][reference]") {
    const auto& t = tok::smollm2();
    CHECK(t.pre_tokenizer() == "smollm");
    CHECK(t.vocab_size() == 49152);
    check_all_texts(t, tok::reference()["variants"]["smollm"]["ids"], tok::texts());
}

TEST_CASE("SmolLM2 from GGUF metadata gives HF's ids for every reference text", "[tokenizer][reference]") {
    const auto t = BpeTokenizer::from_gguf_metadata(tok::smollm2_gguf_metadata(), "SmolLM2-135M-Instruct.Q4_1.gguf");
    CHECK(t.pre_tokenizer() == "smollm");
    CHECK(t.vocab_size() == 49152);
    CHECK(t.bos_id() == std::optional<std::int32_t>(1));
    CHECK(t.eos_id() == std::optional<std::int32_t>(2));
    CHECK_FALSE(t.add_bos_default());
    CHECK(t.token_text(1) == "<|im_start|>");
    check_all_texts(t, tok::reference()["variants"]["smollm"]["ids"], tok::texts());
}

TEST_CASE("gpt2, llama-bpe and qwen2 pre-tokenizers give HF's ids (SmolLM2 merges)", "[tokenizer][reference]") {
    for (const std::string kind : {"gpt2", "llama-bpe", "qwen2"}) {
        SECTION(kind) {
            const auto t = BpeTokenizer::from_gguf_metadata(tok::smollm2_gguf_metadata(kind), "smollm2-as-" + kind);
            CHECK(t.pre_tokenizer() == kind);
            check_all_texts(t, tok::reference()["variants"][kind]["ids"], tok::texts());
        }
    }
}

TEST_CASE("tokenizer.json of every pre-tokenizer layout gives HF's ids (small trained BPEs)", "[tokenizer][reference]") {
    const auto& ref = tok::tiny_reference();
    const auto texts = ref["texts"].get<std::vector<std::string>>();
    for (const std::string kind : {"smollm", "gpt2", "llama-bpe", "qwen2"}) {
        SECTION(kind) {
            const auto t = BpeTokenizer::from_hf_json(sinkscope::test::fixture("tokenizer/tiny_" + kind + "/tokenizer.json"));
            CHECK(t.pre_tokenizer() == kind);
            CHECK(t.vocab_size() == ref["variants"][kind]["vocab_size"].get<std::size_t>());
            CHECK_FALSE(t.bos_id().has_value());  // no tokenizer_config.json, no template
            check_all_texts(t, ref["variants"][kind]["ids"], texts);
        }
    }
}

TEST_CASE("decode is HF's ByteLevel decode, and decode(encode(x)) == x", "[tokenizer][reference]") {
    const auto& t = tok::smollm2();
    const auto texts = tok::texts();
    const auto& ids = tok::reference()["variants"]["smollm"]["ids"];
    const auto& hf_decoded = tok::reference()["decode_smollm"];
    std::size_t roundtrips = 0;
    for (std::size_t i = 0; i < texts.size(); ++i) {
        INFO("text #" << i << ": \"" << show(texts[i]) << "\"");
        const std::string decoded = t.decode(ids[i].get<std::vector<std::int32_t>>());
        CHECK(decoded == hf_decoded[i].get<std::string>());  // all valid UTF-8 here: no lossy step
        if (hf_decoded[i].get<std::string>() == texts[i]) {
            CHECK(t.decode(t.encode(texts[i], false)) == texts[i]);
            ++roundtrips;
        }
    }
    // Only texts with bytes SmolLM2's vocabulary lacks (\x04, \x06, ...: HF drops them) do not round-trip.
    CHECK(roundtrips >= texts.size() * 8 / 10);
}

TEST_CASE("special tokens in the text are matched whole", "[tokenizer]") {
    const auto& t = tok::smollm2();
    CHECK(t.encode("<|im_start|>", false) == std::vector<std::int32_t>{1});
    CHECK(t.encode("<|im_end|><|im_start|>", false) == std::vector<std::int32_t>{2, 1});
    const auto a = t.encode("Hi there", false), b = t.encode("\nok", false);
    auto joined = a;
    joined.push_back(2);
    joined.insert(joined.end(), b.begin(), b.end());
    CHECK(t.encode("Hi there<|im_end|>\nok", false) == joined);
    CHECK(t.decode({1, 2}) == "<|im_start|><|im_end|>");
}

TEST_CASE("BOS is added only when asked", "[tokenizer]") {
    const auto& t = tok::smollm2();
    REQUIRE(t.bos_id() == std::optional<std::int32_t>(1));  // tokenizer_config.json: <|im_start|>
    CHECK(t.eos_id() == std::optional<std::int32_t>(2));
    for (const std::string text : {"", "Hello world", "<|im_start|>x"}) {
        auto with = t.encode(text, true);
        const auto without = t.encode(text, false);
        REQUIRE_FALSE(with.empty());
        CHECK(with.front() == 1);
        with.erase(with.begin());
        CHECK(with == without);
    }
    const auto tiny = BpeTokenizer::from_hf_json(sinkscope::test::fixture("tokenizer/tiny_gpt2/tokenizer.json"));
    CHECK_THROWS_AS(tiny.encode("x", true), Error);
    CHECK_NOTHROW(tiny.encode("x", false));
}

TEST_CASE("ids out of range throw Error", "[tokenizer]") {
    const auto& t = tok::smollm2();
    const auto n = static_cast<std::int32_t>(t.vocab_size());
    for (const std::int32_t bad : {-1, n, n + 1, std::numeric_limits<std::int32_t>::max(), std::numeric_limits<std::int32_t>::min()}) {
        CHECK_THROWS_AS(t.decode({0, bad}), Error);
        CHECK_THROWS_AS(t.token_text(bad), Error);
    }
    CHECK(t.token_text(n - 1).size() > 0);
    CHECK(t.token_text(0) == "<|endoftext|>");
    try {
        t.decode({n});
        FAIL("no throw");
    } catch (const Error& e) {
        CHECK(e.message().find(std::to_string(n)) != std::string::npos);
        CHECK(e.file() == tok::smollm2_json_path());
    }
}

TEST_CASE("invalid UTF-8 is refused with its byte offset", "[tokenizer]") {
    const auto& t = tok::smollm2();
    const std::vector<std::pair<std::string, std::uint64_t>> cases = {
        {"abc\xff", 3}, {"\x80", 0}, {"ok \xc0\x80", 3}, {"caf\xc3", 3}, {"x\xed\xa0\x80y", 1}, {"\xf4\x90\x80\x80", 0},
        {std::string("a\0b\xe2\x82", 5), 3},
    };
    for (const auto& [text, offset] : cases) {
        try {
            t.encode(text, false);
            FAIL("no throw for \"" << show(text) << "\"");
        } catch (const Error& e) {
            CHECK(e.offset() == offset);
        }
    }
    CHECK(t.encode(std::string("a\0b", 3), false).size() == 3);  // NUL is valid UTF-8
}

TEST_CASE("bad GGUF metadata throws Error naming the file", "[tokenizer]") {
    const auto good = tok::smollm2_gguf_metadata();
    const auto expect_error = [](nlohmann::json m, const std::string& what) {
        try {
            BpeTokenizer::from_gguf_metadata(m, "bad.gguf");
            FAIL("no throw: " << what);
        } catch (const Error& e) {
            INFO(what << ": " << e.what());
            CHECK(e.file() == "bad.gguf");
        }
    };
    auto m = good; m["tokenizer.ggml.model"] = "llama"; expect_error(m, "sentencepiece model");
    m = good; m.erase("tokenizer.ggml.tokens"); expect_error(m, "no tokens");
    m = good; m["tokenizer.ggml.tokens"] = nlohmann::json::array(); expect_error(m, "empty tokens");
    m = good; m["tokenizer.ggml.tokens"][5] = 7; expect_error(m, "token not a string");
    m = good; m["tokenizer.ggml.merges"][3] = "Ġ zzzzzzzz"; expect_error(m, "merge with unknown token");
    m = good; m["tokenizer.ggml.merges"][3] = "Ġt"; expect_error(m, "merge without a space");
    m = good; m["tokenizer.ggml.pre"] = "no-such-pre"; expect_error(m, "unknown pre");
    m = good; m["tokenizer.ggml.bos_token_id"] = 49152; expect_error(m, "bos out of range");
    m = good; m["tokenizer.ggml.eos_token_id"] = -1; expect_error(m, "eos negative");
    m = good; m["tokenizer.ggml.token_type"].erase(0); expect_error(m, "token_type length");
    m = good; m["tokenizer.ggml.add_bos_token"] = "yes"; expect_error(m, "add_bos not bool");
    expect_error(nlohmann::json::array(), "not an object");
}

TEST_CASE("bad tokenizer.json throws Error naming the file", "[tokenizer]") {
    TempDir dir;
    CHECK_THROWS_AS(BpeTokenizer::from_hf_json((dir.path / "missing.json").string()), Error);
    const auto broken = dir.write("broken.json", "{\"model\": ");
    try {
        BpeTokenizer::from_hf_json(broken);
        FAIL("no throw");
    } catch (const Error& e) {
        CHECK(e.file() == broken);
        CHECK(e.offset().has_value());
    }
    auto spec = tok::read_json(sinkscope::test::fixture("tokenizer/tiny_gpt2/tokenizer.json"));
    const auto expect_error = [&](nlohmann::json j, const std::string& what) {
        const auto path = dir.write("t.json", j.dump());
        try {
            BpeTokenizer::from_hf_json(path);
            FAIL("no throw: " << what);
        } catch (const Error& e) {
            INFO(what << ": " << e.what());
            CHECK(e.file() == path);
        }
    };
    CHECK_NOTHROW(BpeTokenizer::from_hf_json(dir.write("ok.json", spec.dump())));
    auto j = spec; j["model"]["byte_fallback"] = true; expect_error(j, "byte_fallback");
    j = spec; j["model"]["type"] = "WordPiece"; expect_error(j, "not BPE");
    j = spec; j["model"]["dropout"] = 0.1; expect_error(j, "dropout");
    j = spec; j["pre_tokenizer"] = nullptr; expect_error(j, "no pre-tokenizer");
    j = spec; j["pre_tokenizer"]["add_prefix_space"] = true; expect_error(j, "add_prefix_space");
    j = spec; j["pre_tokenizer"] = {{"type", "Whitespace"}}; expect_error(j, "Whitespace pre-tokenizer");
    j = spec; j["decoder"] = nullptr; expect_error(j, "no decoder");
    j = spec; j["normalizer"] = {{"type", "Lowercase"}}; expect_error(j, "normalizer");
    j = spec; j["added_tokens"][0]["lstrip"] = true; expect_error(j, "lstrip");
    j = spec; j["model"]["merges"][0] = "x"; expect_error(j, "merge without space");
    j = spec; j["model"]["merges"][0] = nlohmann::json::array({"zzzz", "q"}); expect_error(j, "merge unknown token");
    j = spec; j["model"]["vocab"]["huge"] = 1 << 30; expect_error(j, "id too large");
}

#ifdef SINKSCOPE_TEST_HAVE_GGUF
TEST_CASE("SmolLM2 tokenizer read from the real GGUF gives HF's ids", "[tokenizer][reference]") {
    const auto path = sinkscope::test::downloaded_model("SmolLM2-135M-Instruct.Q4_1.gguf");
    if (!std::filesystem::exists(path)) {
        WARN("skipped: " << path << " is absent (scripts/fetch_model.sh)");
        return;
    }
    const sinkscope::io::GgufFile file(path);
    const auto t = BpeTokenizer::from_gguf_metadata(file.metadata(), path);
    CHECK(t.pre_tokenizer() == "smollm");
    CHECK(t.vocab_size() == 49152);
    CHECK(t.bos_id() == std::optional<std::int32_t>(1));
    CHECK(t.eos_id() == std::optional<std::int32_t>(2));
    check_all_texts(t, tok::reference()["variants"]["smollm"]["ids"], tok::texts());
}
#endif

TEST_CASE("decode(encode(x)) == x for random text", "[tokenizer][property]") {
    const auto& t = tok::smollm2();
    // Characters whose UTF-8 uses no byte SmolLM2's vocabulary lacks (0x04 0x06 0x13 0x14 0x16 0x1D and
    // the lead bytes 0xF1 0xF2 of U+40000..U+BFFFF), since HF drops those bytes.
    const std::vector<std::string> alphabet = {
        " ", "  ", "\t", "\n", "\r\n", "a", "b", "e", "t", "h", "Z", "'", "'s", "0", "7", "42", "é", "ß", "ſ", "中", "😀",
        "👍🏽", "\u200d", "!", "...", "<", "|", ">", "<|im_start|>", "<|im_end|>", "\u00a0", "\u3000", "²", "١", "—"};
    tok::property("roundtrip", [&] {
        const auto picks = *rc::gen::container<std::vector<std::size_t>>(
            rc::gen::inRange<std::size_t>(0, alphabet.size()));
        std::string text;
        for (auto k : picks) text += alphabet[k];
        RC_ASSERT(t.decode(t.encode(text, false)) == text);
    });
    tok::property("any valid code point", [&] {
        const auto cps = *rc::gen::container<std::vector<char32_t>>(rc::gen::oneOf(
            rc::gen::inRange<char32_t>(0x20, 0x7F), rc::gen::inRange<char32_t>(0x80, 0xD800),
            rc::gen::inRange<char32_t>(0xE000, 0x40000), rc::gen::inRange<char32_t>(0xC0000, 0x110000)));
        std::string text;
        for (auto c : cps) sinkscope::tokenizer::detail::append_utf8(text, c);
        RC_ASSERT(t.decode(t.encode(text, false)) == text);
    });
}

TEST_CASE("encode speed on English text (>= 1 MB/s on one core)", "[tokenizer][slow]") {
    const auto& t = tok::smollm2();
    const auto texts = tok::texts();
    const std::size_t n_hand = tok::reference()["n_handpicked"].get<std::size_t>();
    const std::string paragraph = texts.at(n_hand - 1);  // the long English paragraph
    // Vary the text so no cache could help: insert the repetition index as a word.
    std::string text;
    for (int i = 0; text.size() < (4u << 20); ++i) text += paragraph + " (" + std::to_string(i) + ")\n";
    const auto t0 = std::chrono::steady_clock::now();
    const auto ids = t.encode(text, false);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double mb_per_s = static_cast<double>(text.size()) / 1e6 / s;
    WARN("encode: " << text.size() << " bytes -> " << ids.size() << " tokens in " << s << " s = " << mb_per_s
                    << " MB/s (regex JIT " << (t.regex_jit() ? "on" : "off") << ")");
    CHECK(mb_per_s >= 1.0);
    CHECK(t.decode(ids) == text);
}
