// analysis/head_view_html.hpp: the page's encodings against their standards. base64 against RFC 4648's test
// vectors (§10) and, decoded by an independent table lookup, the page's pattern bytes against head_view's
// patterns; the embedded JSON never closes its <script> element early and parses back to the same value;
// round4 keeps four significant digits. tests/browser loads a whole page in headless Chromium.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <sinkscope/analysis/head_view.hpp>
#include <sinkscope/analysis/head_view_html.hpp>
#include <sinkscope/train/init.hpp>

#include "small_llama_fixture.hpp"

using namespace sinkscope;
using namespace sinkscope::analysis::detail;
namespace small_llama = sinkscope::test::small_llama;
using small_llama::kTokens;

namespace {
// RFC 4648's alphabet, decoded by table lookup (the inverse the page's atob computes).
std::vector<std::uint8_t> from_base64(const std::string& s) {
    const std::string digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::vector<std::uint8_t> out;
    std::uint32_t acc = 0;
    int bits = 0;
    for (const char ch : s) {
        if (ch == '=') break;
        acc = (acc << 6) | std::uint32_t(digits.find(ch));
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(std::uint8_t((acc >> bits) & 0xFF));
        }
    }
    return out;
}
}  // namespace

TEST_CASE("head_view_html: base64, a script-safe JSON and the pattern bytes", "[analysis][view]") {
    using analysis::detail::base64;
    auto bytes = [](const std::string& s) { return std::vector<std::uint8_t>(s.begin(), s.end()); };
    // RFC 4648, section 10.
    CHECK(base64(bytes("")) == "");
    CHECK(base64(bytes("f")) == "Zg==");
    CHECK(base64(bytes("fo")) == "Zm8=");
    CHECK(base64(bytes("foo")) == "Zm9v");
    CHECK(base64(bytes("foob")) == "Zm9vYg==");
    CHECK(base64(bytes("fooba")) == "Zm9vYmE=");
    CHECK(base64(bytes("foobar")) == "Zm9vYmFy");

    const auto c = small_llama::config();
    const auto w = train::init_weights<float>(c, 7, {0.3, false});
    const auto v = analysis::head_view(c, w, kTokens);
    // A token whose text would close the script element.
    const std::string page = analysis::head_view_html(
        v, [](std::int32_t id) { return id == 5 ? std::string("</script><b>") : "t" + std::to_string(id); }, kTokens,
        {{"model", "random"}});
    const std::string open = "<script type=\"application/json\" id=\"data\">";
    const std::size_t a = page.find(open), b = page.find("</script>", a);
    REQUIRE(a != std::string::npos);
    REQUIRE(b != std::string::npos);
    const auto d = nlohmann::json::parse(page.substr(a + open.size(), b - a - open.size()));
    CHECK(d["tokens"][2] == "</script><b>");
    CHECK(d["layers"] == c.n_layers);
    const std::int64_t P = v.positions;
    const auto q = from_base64(d["pattern_b64"].get<std::string>());
    REQUIRE(q.size() == std::size_t(c.n_layers * c.n_heads * P * (P + 1) / 2));
    std::size_t at = 0;
    for (std::int64_t l = 0; l < c.n_layers; ++l)
        for (std::int64_t h = 0; h < c.n_heads; ++h)
            for (std::int64_t t = 0; t < P; ++t)
                for (std::int64_t j = 0; j <= t; ++j) {
                    const double p = v.pattern[std::size_t(v.pattern_index(l, h, t, j))];
                    REQUIRE(std::abs(q[at++] / 255.0 - p) <= 0.5 / 255 + 1e-7);
                }
}

TEST_CASE("head_view_html: embedded JSON cannot end its script element and parses back unchanged", "[head_view_html]") {
    const nlohmann::json j = {{"token", "</script><script>alert(1)</script>"}, {"x", {1.5, -2}}, {"s", "a</b"}};
    const std::string safe = script_safe_json(j);
    CHECK(safe.find("</") == std::string::npos);
    CHECK(nlohmann::json::parse(safe) == j);  // "\/" is JSON's escape for "/"
}

TEST_CASE("head_view_html: round4 keeps four significant digits", "[head_view_html]") {
    CHECK(round4(0.123456) == Approx(0.1235).epsilon(1e-12));
    CHECK(round4(98765.4) == 98770.0);
    CHECK(round4(-1.00049) == Approx(-1.0).epsilon(1e-12));
    CHECK(round4(0.0) == 0.0);
}
