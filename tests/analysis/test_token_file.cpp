// analysis::read_token_file: one sequence per line, ids separated by spaces or commas; comments and
// blank lines skipped; bad characters and out-of-vocabulary ids name the file, the line and the offset.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sinkscope/analysis/text.hpp>

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
