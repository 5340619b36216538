// theory/common.hpp: the input checks every theory function runs. A causal softmax pattern computed in
// float the way the model does (max-subtracted exp, then divided by the row sum) passes at lengths up to
// 4096, which is what pattern_tolerance's √ε + 8 ε n is for; a pattern off by more than the tolerance, a
// weight above the diagonal, a negative weight, a non-square or non-finite input is rejected with the
// entry named; stable_norm does not overflow where the plain norm does; channel sets must be distinct and
// in range.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <sinkscope/theory/common.hpp>

using namespace sinkscope;
using namespace sinkscope::theory;

namespace {
// Causal softmax rows of random scores, in T: p_tj = exp(s_tj − max_j s_tj) / Σ_j exp(…), j ≤ t.
template <class T>
RowMatrix<T> softmax_pattern(Index n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<T> score(0, 3);
    RowMatrix<T> A = RowMatrix<T>::Zero(n, n);
    for (Index t = 0; t < n; ++t) {
        T m = -INFINITY;
        for (Index j = 0; j <= t; ++j) { A(t, j) = score(rng); m = std::max(m, A(t, j)); }
        T s = 0;
        for (Index j = 0; j <= t; ++j) { A(t, j) = std::exp(A(t, j) - m); s += A(t, j); }
        for (Index j = 0; j <= t; ++j) A(t, j) /= s;
    }
    return A;
}
}  // namespace

TEST_CASE("a float softmax pattern passes the causal-pattern check at every length", "[theory][common]") {
    for (Index n : {1, 7, 128, 1024, 4096}) {
        INFO("T = " << n);
        CHECK_NOTHROW(detail::require_causal_pattern(softmax_pattern<float>(n, std::uint32_t(n)), "A"));
    }
    CHECK(detail::pattern_tolerance<float>(1) == Approx(std::sqrt(std::numeric_limits<float>::epsilon()) +
                                                        8 * std::numeric_limits<float>::epsilon()));
}

TEST_CASE("a pattern that is not one is rejected with the entry named", "[theory][common]") {
    const RowMatrix<double> A = softmax_pattern<double>(4, 1);
    const double tol = detail::pattern_tolerance<double>(4);
    RowMatrix<double> above = A;
    above(1, 3) = 10 * tol;
    (above(1, 0) > above(1, 1) ? above(1, 0) : above(1, 1)) -= 10 * tol;  // the row still sums to 1
    CHECK_THROWS_WITH(detail::require_causal_pattern(above, "A"), Catch::Contains("not causal") && Catch::Contains("(1, 3)"));
    RowMatrix<double> negative = RowMatrix<double>::Identity(4, 4);
    negative(2, 0) = -0.5;
    negative(2, 1) = 0.5;
    CHECK_THROWS_WITH(detail::require_causal_pattern(negative, "A"), Catch::Contains("negative weight") && Catch::Contains("(2, 0)"));
    RowMatrix<double> off = A;
    off(3, 3) += 10 * tol;
    CHECK_THROWS_WITH(detail::require_causal_pattern(off, "A"), Catch::Contains("row 3 sums to"));
    RowMatrix<double> within = A;
    within(3, 3) += tol / 4;
    CHECK_NOTHROW(detail::require_causal_pattern(within, "A"));
    CHECK_THROWS_WITH(detail::require_causal_pattern(RowMatrix<double>::Zero(2, 3), "A"), Catch::Contains("must be square (T, T), got (2, 3)"));
    RowMatrix<double> nan = A;
    nan(2, 1) = std::nan("");
    CHECK_THROWS_WITH(detail::require_causal_pattern(nan, "A"), Catch::Contains("non-finite entry") && Catch::Contains("(2, 1)"));
    CHECK_THROWS_WITH(detail::require_causal_pattern(RowMatrix<double>(0, 0), "A"), Catch::Contains("A is empty"));
}

TEST_CASE("stable_norm survives where the plain norm overflows or underflows", "[theory][common]") {
    Vector<float> big = Vector<float>::Constant(4, 1e30f);  // squares overflow float
    CHECK(std::isinf(big.norm()));
    CHECK(detail::stable_norm(big) == Approx(2e30).epsilon(1e-6));
    Vector<float> tiny = Vector<float>::Constant(4, 1e-30f);  // squares underflow to 0
    CHECK(tiny.norm() == 0.0f);
    CHECK(detail::stable_norm(tiny) == Approx(2e-30).epsilon(1e-6));
    CHECK_NOTHROW(detail::require_nonzero(tiny, "x"));
    CHECK_THROWS_WITH(detail::require_nonzero(Vector<double>::Zero(3), "x"), Catch::Contains("x is the zero vector"));
}

TEST_CASE("channel sets are distinct indices in range; results must be finite", "[theory][common]") {
    CHECK_NOTHROW(detail::require_channel_set({3, 0, 7}, 8, "C"));
    CHECK_THROWS_WITH(detail::require_channel_set({3, 8}, 8, "C"), Catch::Contains("channel 8 outside [0, 8)"));
    CHECK_THROWS_WITH(detail::require_channel_set({-1}, 8, "C"), Catch::Contains("channel -1 outside"));
    CHECK_THROWS_WITH(detail::require_channel_set({2, 5, 2}, 8, "C"), Catch::Contains("channel 2 twice"));
    CHECK_THROWS_WITH(detail::require_dim_at_least(1, 2, "x", "needs a complement"),
                      Catch::Contains("x has dimension 1 but needs at least 2 (needs a complement)"));
    CHECK_THROWS_WITH(detail::ensure_finite_result(INFINITY, "r"), Catch::Contains("r overflowed"));
    CHECK_THROWS_WITH(detail::ensure_finite_result(Vector<double>::Constant(2, std::nan("")), "v"), Catch::Contains("v overflowed"));
}
