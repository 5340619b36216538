// Saved reducer states as JSON that reads back bit for bit.
//
// A state is a JSON object {"format": "sinkscope.<Reducer>", "version": N, …}. Numbers:
//   integers (counts, indices) are JSON integers, exact up to 2^63;
//   a finite double is written by nlohmann::json as the shortest decimal that parses back to the same
//   double (its dtoa is Grisu2 with a round-trip guarantee; "-0.0" keeps its sign) and read with strtod,
//   which rounds correctly, so it comes back with the same bits (tests/model/test_reducers_merge.cpp
//   checks 0.1, 1/3, the smallest subnormal, DBL_MAX, −0);
//   NaN and ±∞, which JSON cannot hold (nlohmann would write null), travel as "nan", "inf", "-inf".
// Reading never lets a nlohmann exception out: a malformed state is a sinkscope::Error naming the format.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"

namespace sinkscope::state_json {

using json = nlohmann::json;

inline json from_double(double x) {
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    return x;
}

inline double to_double(const json& j) {
    if (j.is_number()) return j.get<double>();
    if (j.is_string()) {
        const auto& s = j.get_ref<const std::string&>();
        if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
        if (s == "inf") return std::numeric_limits<double>::infinity();
        if (s == "-inf") return -std::numeric_limits<double>::infinity();
    }
    throw Error("expected a number, \"nan\", \"inf\" or \"-inf\", got " + j.dump());
}

inline json from_doubles(const std::vector<double>& v) {
    json a = json::array();
    for (double x : v) a.push_back(from_double(x));
    return a;
}

inline std::vector<double> to_doubles(const json& j) {
    require(j.is_array(), "expected an array of numbers, got " + j.dump().substr(0, 80));
    std::vector<double> v;
    v.reserve(j.size());
    for (const auto& x : j) v.push_back(to_double(x));
    return v;
}

inline std::vector<std::int64_t> to_integers(const json& j) {
    require(j.is_array(), "expected an array of integers, got " + j.dump().substr(0, 80));
    std::vector<std::int64_t> v;
    v.reserve(j.size());
    for (const auto& x : j) {
        require(x.is_number_integer(), "expected an integer, got " + x.dump());
        v.push_back(x.get<std::int64_t>());
    }
    return v;
}

inline json header(const std::string& format, int version) { return {{"format", format}, {"version", version}}; }

// Runs read(j) after checking j's format and version; any failure becomes one Error that names the format.
template <class Read>
auto read_state(const json& j, const std::string& format, int version, Read read) -> decltype(read(j)) {
    const std::string where = format + " state (version " + std::to_string(version) + "): ";
    if (!j.is_object() || !j.contains("format") || j["format"] != format)
        throw Error(where + "not such a state (its \"format\" is " +
                    (j.is_object() && j.contains("format") ? j["format"].dump() : std::string("missing")) + ")");
    if (!j.contains("version") || j["version"] != version)
        throw Error(where + "unsupported version " + (j.contains("version") ? j["version"].dump() : std::string("(missing)")));
    try {
        return read(j);
    } catch (const Error& e) {
        throw Error(where + e.message());
    } catch (const json::exception& e) {
        throw Error(where + e.what());
    }
}

}  // namespace sinkscope::state_json
