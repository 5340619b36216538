// analysis/head_view_html.hpp: the page's encodings against their standards. base64 against RFC 4648's test
// vectors (§10); the embedded JSON never closes its <script> element early and parses back to the same
// value; round4 keeps four significant digits. tests/browser loads a whole page in headless Chromium.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <sinkscope/analysis/head_view_html.hpp>

using namespace sinkscope::analysis::detail;

namespace {
std::vector<std::uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }
}  // namespace

TEST_CASE("head_view_html: base64 gives RFC 4648's test vectors", "[head_view_html][reference]") {
    CHECK(base64(bytes("")) == "");
    CHECK(base64(bytes("f")) == "Zg==");
    CHECK(base64(bytes("fo")) == "Zm8=");
    CHECK(base64(bytes("foo")) == "Zm9v");
    CHECK(base64(bytes("foob")) == "Zm9vYg==");
    CHECK(base64(bytes("fooba")) == "Zm9vYmE=");
    CHECK(base64(bytes("foobar")) == "Zm9vYmFy");
    CHECK(base64({0xfb, 0xff, 0xbf}) == "+/+/");  // the two last digits of the alphabet
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
