// core/state_json.hpp: doubles (any bit pattern, NaN and ±∞ as strings) and int64 read back bit for bit
// through the JSON text; the errors it promises ("expected a number …", "expected an integer …"); and
// read_state's format and version checks, with every failure inside read (a sinkscope::Error or a
// nlohmann exception) turned into one sinkscope::Error that names the format.
// (tests/model/test_reducers_merge.cpp checks a list of special finite values and whole reducer states.)
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <sinkscope/core/error.hpp>
#include <sinkscope/core/state_json.hpp>

using namespace sinkscope;
using nlohmann::json;

namespace {

std::uint64_t bits_of(double x) {
    std::uint64_t b;
    std::memcpy(&b, &x, sizeof b);
    return b;
}
double from_bits(std::uint64_t b) {
    double x;
    std::memcpy(&x, &b, sizeof x);
    return x;
}

// What a state goes through: to text and back.
json through_text(const json& j) { return json::parse(j.dump()); }

}  // namespace

TEST_CASE("state_json: every finite double, drawn as random bit patterns, reads back with the same bits", "[core][state_json][property]") {
    // Uniform 64-bit patterns cover every exponent (subnormals, huge, tiny) and both signs; the ones with
    // the all-ones exponent (NaN, ±∞) go through the string path checked below.
    std::mt19937_64 gen(20261205);
    std::vector<double> xs;
    while (xs.size() < 4000) {
        const double x = from_bits(gen());
        if (std::isfinite(x)) xs.push_back(x);
    }
    // and the edges, by hand
    for (double x : {0.0, -0.0, std::numeric_limits<double>::denorm_min(), -std::numeric_limits<double>::denorm_min(),
                     std::numeric_limits<double>::min(), std::nextafter(std::numeric_limits<double>::min(), 0.0),
                     std::numeric_limits<double>::max(), -std::numeric_limits<double>::max(), std::nextafter(1.0, 2.0),
                     std::nextafter(1.0, 0.0), 9007199254740993.0 /* 2^53 + 1 rounds to 2^53 */, 5e-324, 1e23})
        xs.push_back(x);
    const json arr = through_text(state_json::from_doubles(xs));
    const std::vector<double> back = state_json::to_doubles(arr);
    REQUIRE(back.size() == xs.size());
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < xs.size(); ++i)
        if (bits_of(back[i]) != bits_of(xs[i])) {
            if (++mismatches <= 5) FAIL_CHECK("bits differ for " << xs[i] << " (" << i << "): " << back[i]);
        }
    CHECK(mismatches == 0);
    // finite values are JSON numbers, not strings (a reader in another language sees numbers)
    for (const auto& e : arr) REQUIRE(e.is_number());
}

TEST_CASE("state_json: NaN and ±inf travel as the strings \"nan\", \"inf\", \"-inf\" and come back", "[core][state_json]") {
    const double inf = std::numeric_limits<double>::infinity();
    CHECK(state_json::from_double(std::nan("")) == "nan");
    CHECK(state_json::from_double(-std::nan("")) == "nan");
    CHECK(state_json::from_double(inf) == "inf");
    CHECK(state_json::from_double(-inf) == "-inf");
    const auto back = state_json::to_doubles(through_text(state_json::from_doubles({inf, std::nan(""), -inf, 1.5})));
    REQUIRE(back.size() == 4);
    CHECK(back[0] == inf);
    CHECK(std::isnan(back[1]));
    CHECK(back[2] == -inf);
    CHECK(back[3] == 1.5);
    // an integer JSON number is a double too
    CHECK(state_json::to_double(json(7)) == 7.0);
    CHECK(state_json::to_double(json(-3)) == -3.0);
}

TEST_CASE("state_json: what is not a number, an array or an integer is the promised Error", "[core][state_json]") {
    CHECK_THROWS_WITH(state_json::to_double(json("NaN")), "sinkscope: expected a number, \"nan\", \"inf\" or \"-inf\", got \"NaN\"");
    CHECK_THROWS_WITH(state_json::to_double(json("Infinity")), Catch::Contains("got \"Infinity\""));
    CHECK_THROWS_WITH(state_json::to_double(json(nullptr)), Catch::Contains("got null"));
    CHECK_THROWS_WITH(state_json::to_double(json(true)), Catch::Contains("got true"));
    CHECK_THROWS_AS(state_json::to_double(json::array({1.0})), Error);
    CHECK_THROWS_WITH(state_json::to_doubles(json(1.0)), "sinkscope: expected an array of numbers, got 1.0");
    CHECK_THROWS_WITH(state_json::to_doubles(json::array({1.0, "x"})), Catch::Contains("got \"x\""));
    CHECK_THROWS_WITH(state_json::to_integers(json::object()), "sinkscope: expected an array of integers, got {}");
    CHECK_THROWS_WITH(state_json::to_integers(json::array({1, 2.5})), "sinkscope: expected an integer, got 2.5");
    CHECK_THROWS_WITH(state_json::to_integers(json::array({"3"})), "sinkscope: expected an integer, got \"3\"");
    CHECK(state_json::to_doubles(json::array()).empty());
    CHECK(state_json::to_integers(json::array()).empty());
}

TEST_CASE("state_json: int64 counts read back exactly, to the extremes", "[core][state_json]") {
    const std::vector<std::int64_t> v{0, -1, 1, (std::int64_t(1) << 53) + 1, std::numeric_limits<std::int64_t>::max(),
                                      std::numeric_limits<std::int64_t>::min()};
    CHECK(state_json::to_integers(through_text(json(v))) == v);
}

TEST_CASE("state_json: read_state checks format and version, and every failure inside names the format", "[core][state_json]") {
    json s = state_json::header("sinkscope.Test", 2);
    CHECK(s == json{{"format", "sinkscope.Test"}, {"version", 2}});
    s["count"] = 5;
    s["values"] = state_json::from_doubles({0.25, -std::numeric_limits<double>::infinity()});
    const json text = through_text(s);
    auto read_count = [](const json& j) { return j.at("count").get<std::int64_t>(); };
    CHECK(state_json::read_state(text, "sinkscope.Test", 2, read_count) == 5);

    const std::string where = "sinkscope: sinkscope.Test state (version 2): ";
    CHECK_THROWS_WITH(state_json::read_state(text, "sinkscope.Other", 2, read_count),
                      "sinkscope: sinkscope.Other state (version 2): not such a state (its \"format\" is \"sinkscope.Test\")");
    CHECK_THROWS_WITH(state_json::read_state(json{{"version", 2}}, "sinkscope.Test", 2, read_count),
                      where + "not such a state (its \"format\" is missing)");
    CHECK_THROWS_WITH(state_json::read_state(json::array({1}), "sinkscope.Test", 2, read_count),
                      where + "not such a state (its \"format\" is missing)");
    CHECK_THROWS_WITH(state_json::read_state(text, "sinkscope.Test", 3, read_count),
                      "sinkscope: sinkscope.Test state (version 3): unsupported version 2");
    CHECK_THROWS_WITH(state_json::read_state(json{{"format", "sinkscope.Test"}}, "sinkscope.Test", 2, read_count),
                      where + "unsupported version (missing)");
    // a sinkscope::Error inside read: its message with the format in front (not "sinkscope: " twice)
    auto bad_value = [](const json& j) { return state_json::to_integers(j.at("values")); };
    CHECK_THROWS_WITH(state_json::read_state(text, "sinkscope.Test", 2, bad_value), where + "expected an integer, got 0.25");
    // a nlohmann exception inside read (a missing key, a wrong type) comes out as a sinkscope::Error
    auto missing = [](const json& j) { return j.at("no_such_key").get<int>(); };
    CHECK_THROWS_AS(state_json::read_state(text, "sinkscope.Test", 2, missing), Error);
    CHECK_THROWS_WITH(state_json::read_state(text, "sinkscope.Test", 2, missing),
                      Catch::StartsWith(where) && Catch::Contains("no_such_key"));
    auto wrong_type = [](const json& j) { return j.at("format").get<int>(); };
    CHECK_THROWS_AS(state_json::read_state(text, "sinkscope.Test", 2, wrong_type), Error);
}
