// analysis/sink_change.hpp: D_s[first, last] = mean over layers l ∈ [first, last] and heads h of
// |α₀ᵃ(s, l, h) − α₀ᵇ(s, l, h)|, against the same mean in long double over α₀ in closed form
// (attention_fixture.hpp: the patterns' column 0 is set by hand), a value derived by hand, its
// properties (D(a, a) = 0, symmetry), and the errors for mismatched inputs (a layer range past the last
// layer or a head count other than the runs' was read silently before sink_change.hpp checked them).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include <sinkscope/analysis/sink_change.hpp>

#include "attention_fixture.hpp"

using namespace sinkscope;
using test::analysis_fixture::attention_stats;
using test::analysis_fixture::closed_form_alpha0;
using test::analysis_fixture::Column0;

namespace {

// 3 samples × 3 layers × 2 heads, {a₁, a₂} per (s, l, h).
const Column0& with_bos() {
    static const Column0 c{
        {{{0.5, 0.5}, {0.0, 0.0}}, {{1.0, 1.0}, {0.5, 0.2}}, {{0.9, 0.7}, {0.3, 0.6}}},
        {{{0.2, 0.1}, {0.1, 0.0}}, {{0.8, 0.4}, {0.0, 0.25}}, {{0.6, 0.6}, {0.1, 0.9}}},
        {{{0.7, 0.3}, {0.4, 0.4}}, {{0.35, 0.95}, {0.15, 0.05}}, {{0.0, 1.0}, {0.5, 0.5}}}};
    return c;
}
const Column0& without_bos() {
    static const Column0 c{
        {{{0.1, 0.2}, {0.3, 0.0}}, {{0.4, 0.5}, {0.5, 0.2}}, {{0.05, 0.15}, {0.6, 0.3}}},
        {{{0.9, 0.8}, {0.0, 0.0}}, {{0.1, 0.2}, {0.7, 0.75}}, {{0.25, 0.35}, {0.45, 0.55}}},
        {{{0.0, 0.0}, {1.0, 1.0}}, {{0.6, 0.1}, {0.2, 0.3}}, {{0.5, 0.25}, {0.5, 0.5}}}};
    return c;
}

std::vector<long double> reference_change(const Column0& a, const Column0& b, std::size_t first, std::size_t last) {
    std::vector<long double> out;
    for (std::size_t s = 0; s < a.size(); ++s) {
        long double d = 0;
        std::size_t n = 0;
        for (std::size_t l = first; l <= last; ++l)
            for (std::size_t h = 0; h < a[s][l].size(); ++h, ++n)
                d += std::fabs(closed_form_alpha0(a[s][l][h]) - closed_form_alpha0(b[s][l][h]));
        out.push_back(d / (long double)n);
    }
    return out;
}

}  // namespace

TEST_CASE("alpha0_change_per_sample: the mean |Δα₀| over the layer range and all heads, per sample", "[analysis][sink_change][reference]") {
    const auto a = attention_stats(with_bos()), b = attention_stats(without_bos());
    for (const auto& [first, last] : std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 2}, {0, 0}, {1, 2}, {2, 2}, {0, 1}}) {
        const auto d = analysis::alpha0_change_per_sample(a, b, 2, first, last);
        const auto ref = reference_change(with_bos(), without_bos(), std::size_t(first), std::size_t(last));
        INFO("layers [" << first << ", " << last << "]");
        REQUIRE(d.size() == 3);
        // α₀ is a sum of 3 doubles divided by 3 (a few ulps each); the mean of ≤ 6 differences keeps that
        for (std::size_t s = 0; s < 3; ++s) CHECK(d[s] == Approx(double(ref[s])).epsilon(1e-14).margin(1e-15));
    }
    // by hand, sample 0 over layer 0 only: α₀ᵃ = (1 + 0.5 + 0.5)/3 = 2/3 and (1 + 0 + 0)/3 = 1/3,
    // α₀ᵇ = (1 + 0.1 + 0.2)/3 = 1.3/3 and (1 + 0.3 + 0)/3 = 1.3/3, so D = (|2 − 1.3| + |1 − 1.3|)/3 / 2 = 1/6
    CHECK(analysis::alpha0_change_per_sample(a, b, 2, 0, 0)[0] == Approx(1.0 / 6.0).epsilon(1e-14));
}

TEST_CASE("alpha0_change_per_sample: zero against itself, symmetric in its two runs", "[analysis][sink_change][property]") {
    const auto a = attention_stats(with_bos()), b = attention_stats(without_bos());
    for (double x : analysis::alpha0_change_per_sample(a, a, 2, 0, 2)) CHECK(x == 0.0);
    const auto ab = analysis::alpha0_change_per_sample(a, b, 2, 0, 2), ba = analysis::alpha0_change_per_sample(b, a, 2, 0, 2);
    CHECK(ab == ba);  // |x − y| = |y − x| exactly, same summation order
    for (double x : ab) CHECK(x > 0.0);
}

TEST_CASE("alpha0_change_per_sample: different or empty samples and bad ranges are errors", "[analysis][sink_change]") {
    const auto a = attention_stats(with_bos());
    const Column0 two(without_bos().begin(), without_bos().begin() + 2);
    const auto b2 = attention_stats(two);
    CHECK_THROWS_WITH(analysis::alpha0_change_per_sample(a, b2, 2, 0, 2), Catch::Contains("needs the same, non-empty samples"));
    const model::AttentionStats<double> empty_a(3, 2), empty_b(3, 2);
    CHECK_THROWS_WITH(analysis::alpha0_change_per_sample(empty_a, empty_b, 2, 0, 2), Catch::Contains("non-empty"));
    CHECK_THROWS_WITH(analysis::alpha0_change_per_sample(a, a, 2, 2, 1), Catch::Contains("bad layer range"));
    CHECK_THROWS_WITH(analysis::alpha0_change_per_sample(a, a, 2, -1, 1), Catch::Contains("bad layer range"));
    // a layer past the last, a head count other than the runs', runs of other shapes: α₀ is stored by
    // layer · H + head, so each of these would read other layers' values or past the end
    CHECK_THROWS_WITH(analysis::alpha0_change_per_sample(a, a, 2, 0, 3), Catch::Contains("bad layer range [0, 3] for 3 layers"));
    CHECK_THROWS_WITH(analysis::alpha0_change_per_sample(a, a, 3, 0, 0), Catch::Contains("n_heads (3) is not the runs' head count (2)"));
    CHECK_THROWS_WITH(analysis::alpha0_change_per_sample(a, a, 0, 0, 1), Catch::Contains("n_heads (0)"));
    Column0 four_layers = with_bos();
    for (auto& sample : four_layers) sample.push_back(sample.back());
    CHECK_THROWS_WITH(analysis::alpha0_change_per_sample(a, attention_stats(four_layers), 2, 0, 1),
                      Catch::Contains("different shapes (3 layers × 2 heads and 4 × 2)"));
}
