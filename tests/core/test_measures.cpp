// core/measures.hpp: each definition against a reference written out plainly here (a full sort for the
// medians, hand-computed patterns and the harmonic number for α_k) and at the boundaries of each rule.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <sinkscope/core/measures.hpp>

#include "seeded_property.hpp"

using namespace sinkscope;

namespace {

// A sample with many ties: quarters in [-12.5, 12.5], 1 … 60 values.
std::vector<double> tied_sample() {
    const auto q = *rc::gen::resize(60, rc::gen::nonEmpty(rc::gen::container<std::vector<int>>(rc::gen::inRange(-50, 51))));
    std::vector<double> x;
    for (int v : q) x.push_back(v / 4.0);
    return x;
}

std::vector<double> sorted(std::vector<double> x) {
    std::sort(x.begin(), x.end());
    return x;
}

// H_n = 1 + 1/2 + … + 1/n, summed from the small terms up.
double harmonic(std::int64_t n) {
    double h = 0;
    for (std::int64_t i = n; i >= 1; --i) h += 1.0 / double(i);
    return h;
}

}  // namespace

TEST_CASE("median_of is the middle value, or the mean of the two middle values", "[measures]") {
    CHECK(measures::median_of({5}) == 5);
    CHECK(measures::median_of({3, 1, 2}) == 2);
    CHECK(measures::median_of({4, 1, 3, 2}) == 2.5);
    CHECK(measures::median_of({-1, 7}) == 3);
    CHECK_THROWS_AS(measures::median_of({}), Error);
}

TEST_CASE("upper_median_of takes the upper middle value of an even count", "[measures]") {
    CHECK(measures::upper_median_of({5}) == 5);
    CHECK(measures::upper_median_of({3, 1, 2}) == 2);
    CHECK(measures::upper_median_of({4, 1, 3, 2}) == 3);   // median_of gives 2.5
    CHECK(measures::upper_median_of({-1, 7}) == 7);
    CHECK(measures::upper_median_of({2, 2, 9, 2}) == 2);
    CHECK_THROWS_AS(measures::upper_median_of({}), Error);
}

TEST_CASE("the two medians agree with a full sort", "[measures][property]") {
    test::check_property("median_of(x) = (s[n/2-1] + s[n/2]) / 2 or s[n/2] for s = sort(x)", [] {
        const auto x = tied_sample();
        const auto s = sorted(x);
        const std::size_t n = s.size();
        const double expected = n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
        RC_ASSERT(measures::median_of(x) == expected);
    }, 500, 36);
    test::check_property("upper_median_of(x) = sort(x)[n/2], with < n/2 values below it and > n/2 not above", [] {
        const auto x = tied_sample();
        const double m = measures::upper_median_of(x);
        RC_ASSERT(m == sorted(x)[x.size() / 2]);
        const auto below = std::count_if(x.begin(), x.end(), [m](double v) { return v < m; });
        const auto not_above = std::count_if(x.begin(), x.end(), [m](double v) { return v <= m; });
        RC_ASSERT(std::size_t(below) <= x.size() / 2);
        RC_ASSERT(std::size_t(not_above) > x.size() / 2);
    }, 500, 37);
    test::check_property("median_abs(x) = upper_median_of(|x|) = sort(|x|)[n/2]", [] {
        const auto x = tied_sample();
        std::vector<float> f(x.begin(), x.end());
        std::vector<double> a;
        for (double v : x) a.push_back(std::abs(v));
        RC_ASSERT(measures::median_abs(f.data(), std::int64_t(f.size())) == sorted(a)[a.size() / 2]);
    }, 500, 38);
}

TEST_CASE("median_abs is the upper median of |x|", "[measures]") {
    const float odd[5] = {-3, 1, 2, -5, 4};    // |x| sorted: 1 2 3 4 5
    CHECK(measures::median_abs(odd, 5) == 3);
    const float even[4] = {-1, 2, -3, 4};      // |x| sorted: 1 2 3 4 -> entry 2
    CHECK(measures::median_abs(even, 4) == 3);
    CHECK_THROWS_AS(measures::median_abs(odd, 0), Error);
}

TEST_CASE("is_massive: |x| > 100 strictly and |x| >= 1000 x median inclusively", "[measures]") {
    CHECK(measures::kMassiveAbs == 100);
    CHECK(measures::kMassiveRatio == 1000);
    CHECK_FALSE(measures::is_massive(100, 0));                                 // exactly 100 is not > 100
    CHECK(measures::is_massive(std::nextafter(100.0, 200.0), 0));
    CHECK(measures::is_massive(250, 0.25));                                    // exactly 1000 x median (exact in binary)
    CHECK_FALSE(measures::is_massive(std::nextafter(250.0, 0.0), 0.25));       // one ulp short of 1000 x
    CHECK_FALSE(measures::is_massive(250, std::nextafter(0.25, 1.0)));
    CHECK_FALSE(measures::is_massive(500, 1));                                 // > 100 but only 500 x
    CHECK_FALSE(measures::is_massive(100, 0.1));                               // 1000 x but not > 100
}

TEST_CASE("received_attention on a hand-computed 3 x 3 pattern", "[measures]") {
    // Row-major, query rows t, key columns k:
    //   1    0    0
    //   0.5  0.5  0
    //   0.2  0.3  0.5
    const double A[9] = {1, 0, 0, 0.5, 0.5, 0, 0.2, 0.3, 0.5};
    CHECK(measures::received_attention(A, 3, 0) == Approx(1.7 / 3).margin(1e-15));   // (1 + 0.5 + 0.2) / 3
    CHECK(measures::received_attention(A, 3, 1) == Approx(0.4).margin(1e-15));       // (0.5 + 0.3) / 2
    CHECK(measures::received_attention(A, 3, 2) == 0.5);                              // 0.5 / 1
    // Queries before k cannot see it: the 0.5 above the diagonal at (0, 1) is not counted ((0.5 + 1) / 2
    // = 0.75 if it were).
    const double B[4] = {0.5, 0.5, 0, 1};
    CHECK(measures::received_attention(B, 2, 1) == 1.0);                              // 1 / 1
    CHECK_THROWS_AS(measures::received_attention(A, 3, 3), Error);
    CHECK_THROWS_AS(measures::received_attention(A, 3, -1), Error);
}

TEST_CASE("uniform causal attention gives alpha_k = (H_T - H_k) / (T - k)", "[measures]") {
    for (std::int64_t T : {1, 2, 3, 9, 10, 12, 64}) {
        std::vector<double> A(std::size_t(T * T), 0.0);
        for (std::int64_t t = 0; t < T; ++t)
            for (std::int64_t j = 0; j <= t; ++j) A[std::size_t(t * T + j)] = 1.0 / double(t + 1);
        INFO("T = " << T);
        const double a0 = measures::received_attention(A.data(), T, 0);
        CHECK(a0 == Approx(harmonic(T) / double(T)).margin(1e-14));
        for (std::int64_t k = 1; k < T; ++k)
            CHECK(measures::received_attention(A.data(), T, k) ==
                  Approx((harmonic(T) - harmonic(k)) / double(T - k)).margin(1e-14));
        // H_T / T > 0.3 up to T = 9 (H_9 / 9 = 0.3143, H_10 / 10 = 0.2929): uniform heads are "sinks" there.
        CHECK(measures::is_sink(a0) == (T <= 9));
    }
}

TEST_CASE("received_attention_from reads any layout and gives the same bits", "[measures][property]") {
    test::check_property("alpha_k from a row-major pointer == from a column-major accessor", [] {
        const auto T = *rc::gen::inRange<std::int64_t>(1, 40);
        const auto k = *rc::gen::inRange<std::int64_t>(0, T);
        std::vector<double> row(std::size_t(T * T)), col(std::size_t(T * T));
        for (std::int64_t t = 0; t < T; ++t) {
            double rest = 1;
            for (std::int64_t j = 0; j <= t; ++j) {
                const double w = j == t ? rest : rest * *rc::gen::inRange(0, 1001) / 1000.0;
                rest -= w;
                row[std::size_t(t * T + j)] = col[std::size_t(j * T + t)] = w;
            }
        }
        const double a = measures::received_attention(row.data(), T, k);
        const double b = measures::received_attention_from([&](std::int64_t t) { return col[std::size_t(k * T + t)]; }, T, k);
        RC_ASSERT(a == b);
        RC_ASSERT(a >= 0.0);
        RC_ASSERT(a <= 1.0 + 1e-12);
    }, 300, 39);
}

TEST_CASE("is_sink is strict at eps", "[measures]") {
    CHECK(measures::kSinkEps == 0.3);
    CHECK_FALSE(measures::is_sink(0.3));
    CHECK(measures::is_sink(std::nextafter(0.3, 1.0)));
    CHECK_FALSE(measures::is_sink(0.5, 0.5));
    CHECK(measures::is_sink(0.5, 0.49));
    CHECK_FALSE(measures::is_sink(std::numeric_limits<double>::quiet_NaN()));
}

TEST_CASE("spearman: published values, with and without ties", "[measures]") {
    // Without ties: IQ against hours of television per week (Wikipedia's worked example of Spearman's
    // rank correlation): Σd² = 194, ρ = 1 − 6·194 / (10·99) = −29/165.
    const std::vector<double> iq{106, 100, 86, 101, 99, 103, 97, 113, 112, 110};
    const std::vector<double> tv{7, 27, 2, 50, 28, 29, 20, 12, 6, 17};
    CHECK(measures::spearman(iq, tv) == Approx(-29.0 / 165.0).epsilon(1e-14));
    // With a tie: scipy.stats.spearmanr([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) = 0.8207826816681233 (its
    // documentation's example; the two 7s share rank 3.5, ρ = 8/√95).
    CHECK(measures::spearman({1, 2, 3, 4, 5}, {5, 6, 7, 8, 7}) == Approx(0.8207826816681233).epsilon(1e-14));
    CHECK(measures::fractional_ranks({5, 6, 7, 8, 7}) == std::vector<double>{1, 2, 3.5, 5, 3.5});
    CHECK(std::isnan(measures::spearman({1, 2, 3}, {4, 4, 4})));
    CHECK_THROWS_WITH(measures::spearman({1, 2}, {1}), Catch::Matchers::Contains("same size"));
    CHECK_THROWS_WITH(measures::spearman({1, std::nan("")}, {1, 2}), Catch::Matchers::Contains("value 1 is not finite"));
}

TEST_CASE("spearman: ±1 under monotone maps, symmetric, and bounded", "[measures][property]") {
    test::check_property("rho(x, f(x)) = 1 for increasing f, -1 for decreasing; rho(x, y) = rho(y, x) in [-1, 1]", [] {
        const auto n = *rc::gen::inRange<std::size_t>(2, 40);
        std::vector<double> x(n), y(n);
        for (std::size_t i = 0; i < n; ++i) {
            x[i] = double(*rc::gen::inRange(-1000, 1000)) + 0.001 * double(i);  // distinct
            y[i] = double(*rc::gen::inRange(-5, 5));                            // ties
        }
        std::vector<double> up(n), down(n);
        for (std::size_t i = 0; i < n; ++i) { up[i] = std::exp(x[i] / 1000); down[i] = -x[i] * x[i] * x[i]; }
        RC_ASSERT(std::abs(measures::spearman(x, up) - 1) < 1e-12);
        RC_ASSERT(std::abs(measures::spearman(x, down) + 1) < 1e-12);
        const double r = measures::spearman(x, y), s = measures::spearman(y, x);
        if (!std::isnan(r)) {
            RC_ASSERT(std::abs(r - s) < 1e-12);
            RC_ASSERT(std::abs(r) <= 1 + 1e-12);
        }
    }, 200, 41);
}
