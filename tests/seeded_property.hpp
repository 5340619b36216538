// Seeded rapidcheck properties inside Catch2, for every test module that checks properties.
//
// check_property(description, testable, cases, seed) runs `cases` successful cases from a fixed seed
// (RC_PARAMS is ignored on purpose: every run checks the same cases) and reports a failure, with
// rapidcheck's shrunk counter-example, through Catch.
#pragma once

#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>

namespace sinkscope::test {

template <class Testable>
void check_property(const std::string& description, Testable&& testable, int cases, std::uint64_t seed) {
    rc::detail::TestParams params;
    params.seed = seed;
    params.maxSuccess = cases;
    params.maxSize = 100;
    params.maxDiscardRatio = 10;
    rc::detail::TestMetadata metadata;
    metadata.id = description;
    metadata.description = description;
    const auto result = rc::detail::checkProperty(rc::detail::toProperty(std::forward<Testable>(testable)),
                                                  metadata, params);
    std::ostringstream os;
    rc::detail::printResultMessage(result, os);
    INFO(description << ": " << os.str());
    CHECK(result.template is<rc::detail::SuccessResult>());
    if (result.template is<rc::detail::SuccessResult>()) {
        CHECK(result.template get<rc::detail::SuccessResult>().numSuccess == cases);
    }
}

}  // namespace sinkscope::test
