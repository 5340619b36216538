// Tests of tests/theory/property.hpp's negative check: run_silently tells a property that holds from one
// that fails, and assertions_only turns an exception of the code under test into a discarded case, so
// that refute() counts only failed assertions.
#include <catch2/catch.hpp>

#include <sinkscope/core/error.hpp>

#include "theory/property.hpp"

namespace gen = sinkscope::test::gen;
using sinkscope::test::assertions_only;
using sinkscope::test::kTheorySeed;
using sinkscope::test::run_silently;

TEST_CASE("property helpers: run_silently reports success, failure and refused inputs apart", "[theory]") {
    const auto holds = run_silently("x >= 0 on [0, 9]", [] { RC_ASSERT(*gen::integer(0, 9) >= 0); }, 200, kTheorySeed);
    CHECK(holds.first.is<rc::detail::SuccessResult>());
    // x = 9 has probability 1/10 per case: 200 cases find it.
    const auto fails = run_silently("x < 9 on [0, 9]", [] { RC_ASSERT(*gen::integer(0, 9) < 9); }, 200, kTheorySeed);
    CHECK(fails.first.is<rc::detail::FailureResult>());
    const auto refused = run_silently("every case throws", assertions_only([] {
                                          if (*gen::integer(0, 9) >= 0) throw sinkscope::Error("refused input");
                                      }),
                                      200, kTheorySeed);
    CHECK(refused.first.is<rc::detail::GaveUpResult>());
    // The same property without assertions_only: the exception is a failure.
    const auto thrown = run_silently("every case throws", [] {
        if (*gen::integer(0, 9) >= 0) throw sinkscope::Error("refused input");
    }, 200, kTheorySeed);
    CHECK(thrown.first.is<rc::detail::FailureResult>());
}
