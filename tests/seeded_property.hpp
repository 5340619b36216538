// Seeded rapidcheck properties inside Catch2, for every test module that checks properties.
//
// check_property(description, testable, cases, seed) runs `cases` successful cases and reports a
// failure, with rapidcheck's shrunk counter-example and the seed that found it, through Catch.
//
// Seed: by default the fixed `seed` of the caller, so CI checks the same cases on every run. The
// environment variable RC_PARAMS (rapidcheck's own) overrides it and the other search parameters:
//   RC_PARAMS="seed=12345" build/tests/sinkscope_tests "[property]"        another 1000 cases each
//   RC_PARAMS="seed=12345 max_success=20000" ...                          a longer search
//   RC_PARAMS="seed=12345 noshrink=1" ...                                 report the first failure as found
// Keys RC_PARAMS leaves out keep this file's defaults (the caller's seed and cases, max_size 100).
// A failure prints the seed it ran with, so RC_PARAMS="seed=N" replays it.
#pragma once

#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>

namespace sinkscope::test {

// The parameters of one property: the caller's defaults, overridden by the keys RC_PARAMS sets.
inline rc::detail::TestParams property_params(int cases, std::uint64_t seed) {
    rc::detail::Configuration defaults;
    defaults.testParams.seed = seed;
    defaults.testParams.maxSuccess = cases;
    defaults.testParams.maxSize = 100;
    defaults.testParams.maxDiscardRatio = 10;
    const char* env = std::getenv("RC_PARAMS");
    if (env == nullptr || *env == '\0') return defaults.testParams;
    return rc::detail::configFromString(env, defaults).testParams;  // throws on a malformed RC_PARAMS
}

template <class Testable>
void check_property(const std::string& description, Testable&& testable, int cases, std::uint64_t seed) {
    const rc::detail::TestParams params = property_params(cases, seed);
    rc::detail::TestMetadata metadata;
    metadata.id = description;
    metadata.description = description;
    const auto result = rc::detail::checkProperty(rc::detail::toProperty(std::forward<Testable>(testable)),
                                                  metadata, params);
    std::ostringstream os;
    rc::detail::printResultMessage(result, os);
    INFO(description << " (seed " << params.seed << ", " << params.maxSuccess
                     << " cases; RC_PARAMS=\"seed=" << params.seed << "\" replays it): " << os.str());
    CHECK(result.template is<rc::detail::SuccessResult>());
    if (result.template is<rc::detail::SuccessResult>()) {
        CHECK(result.template get<rc::detail::SuccessResult>().numSuccess == params.maxSuccess);
    }
}

}  // namespace sinkscope::test
