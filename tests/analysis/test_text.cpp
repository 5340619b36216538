// analysis/text.hpp:
//   * read_token_file: one sequence per line, ids separated by spaces or commas; comments and blank lines
//     skipped; bad characters and out-of-vocabulary ids name the file, the line and the offset;
//   * tokenizer_for: a GGUF's own tokenizer (stories260K's SentencePiece vocabulary and BOS), and the error
//     for a directory without tokenizer.json;
//   * token_samples: consecutive, non-overlapping pieces of exactly `length` tokens of the whole text's
//     encoding, BOS first when asked, the short tail dropped, at most max_samples of them.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sinkscope/analysis/text.hpp>

#include "test_paths.hpp"

using namespace sinkscope;

namespace {
std::string write_temp(const std::string& name, const std::string& text) {
    const auto p = std::filesystem::temp_directory_path() / ("sinkscope_test_" + name);
    std::ofstream(p) << text;
    return p.string();
}
}  // namespace

TEST_CASE("token files parse spaces, commas, comments and blank lines", "[analysis][text]") {
    const auto path = write_temp("tokens_ok.txt", "# a comment\n1 2 3\n\n4,5, 6\r\n  7\n");
    const auto s = analysis::read_token_file(path, 10);
    REQUIRE(s.size() == 3);
    CHECK(s[0] == std::vector<std::int32_t>{1, 2, 3});
    CHECK(s[1] == std::vector<std::int32_t>{4, 5, 6});
    CHECK(s[2] == std::vector<std::int32_t>{7});
}

TEST_CASE("token files with bad content fail naming the file, line and offset", "[analysis][text]") {
    const auto bad = write_temp("tokens_bad.txt", "1 2\n3 x 4\n");
    try {
        analysis::read_token_file(bad);
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(e.file() == bad);
        CHECK(e.tensor() == "line 2");
        CHECK(e.offset() == std::optional<std::uint64_t>(6));
    }
    const auto oov = write_temp("tokens_oov.txt", "1 2 300\n");
    CHECK_THROWS_WITH(analysis::read_token_file(oov, 256), Catch::Contains("outside the vocabulary"));
    CHECK_THROWS_WITH(analysis::read_token_file(write_temp("tokens_neg.txt", "1 -2\n")), Catch::Contains("non-negative"));
    CHECK_THROWS_WITH(analysis::read_token_file(write_temp("tokens_empty.txt", "# nothing\n\n")), Catch::Contains("no sequence"));
    CHECK_THROWS_AS(analysis::read_token_file("/nonexistent/tokens.txt"), Error);
}

TEST_CASE("token_samples cut the text's encoding into consecutive pieces of exactly `length`", "[analysis][text]") {
    const auto m = model::load_model<float>(test::shared_model("stories260K.gguf"));
    const auto tok = analysis::tokenizer_for(m);
    REQUIRE(tok.bos_id().has_value());
    const std::string text = "Once upon a time there was a little girl named Lily. She liked to play outside in the sun "
                             "with her dog, and one day they found a big red ball under a tree near the river.";
    const auto ids = tok.encode(text, false);
    REQUIRE(ids.size() >= 20);
    for (const bool bos : {false, true}) {
        for (const std::int64_t length : {2, 5, 8}) {
            const std::int64_t body = bos ? length - 1 : length;
            const auto s = analysis::token_samples(tok, text, length, 0, bos);
            INFO("bos " << bos << ", length " << length);
            // Every whole piece, and no more: floor(n / body) of them.
            CHECK(std::int64_t(s.size()) == std::int64_t(ids.size()) / body);
            for (std::size_t k = 0; k < s.size(); ++k) {
                REQUIRE(std::int64_t(s[k].size()) == length);
                if (bos) CHECK(s[k][0] == *tok.bos_id());
                for (std::int64_t i = 0; i < body; ++i)
                    CHECK(s[k][std::size_t(i + (bos ? 1 : 0))] == ids[std::size_t(std::int64_t(k) * body + i)]);
            }
            const auto capped = analysis::token_samples(tok, text, length, 2, bos);
            CHECK(capped.size() == std::min<std::size_t>(2, s.size()));
        }
    }
    CHECK_THROWS_WITH(analysis::token_samples(tok, text, 1, 0, false), Catch::Contains("at least 2"));
    CHECK(analysis::token_samples(tok, "", 4, 0, false).empty());
}

TEST_CASE("tokenizer_for: a safetensors directory without tokenizer.json is an error naming it", "[analysis][text]") {
    model::LoadedModel<float> m;
    m.format = "safetensors";
    m.path = (std::filesystem::temp_directory_path() / "sinkscope_test_no_tokenizer").string();
    std::filesystem::create_directories(m.path);
    CHECK_THROWS_WITH(analysis::tokenizer_for(m), Catch::Contains("no tokenizer.json"));
}
