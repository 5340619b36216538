// analysis/checkpoint_trend.hpp: the pooled share per checkpoint is Σ num / Σ den, the fitted change is
// the least-squares slope times the span (exact on a straight line, sign follows the trend), checkpoints
// without a denominator are left out of the fit, and the bootstrap interval covers zero when the units
// carry no trend but excludes it when every unit moves. The two-stage interval (checkpoints, then units)
// also covers zero when the shares wander between checkpoints in every unit alike, where resampling the
// units alone gives a point; on random series it excludes zero about as rarely as a 95% interval should.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <sinkscope/analysis/intervals.hpp>
#include <sinkscope/analysis/checkpoint_trend.hpp>

using namespace sinkscope::analysis;

namespace {
// C checkpoints × n units; unit i at checkpoint c has den 4 and num = round(4 · share(c)) ± noise.
struct Grid {
    std::vector<std::vector<double>> num, den;
    std::vector<double> x;
};
Grid grid(std::size_t C, std::size_t n, const std::function<double(std::size_t, std::size_t)>& num_of) {
    Grid g;
    for (std::size_t c = 0; c < C; ++c) {
        g.num.emplace_back();
        g.den.emplace_back(n, 4.0);
        for (std::size_t i = 0; i < n; ++i) g.num.back().push_back(num_of(c, i));
        g.x.push_back(double(c));
    }
    return g;
}
}  // namespace

TEST_CASE("share_trend: pooled shares and the exact change on a straight line", "[analysis][trend]") {
    const auto g = grid(4, 10, [](std::size_t c, std::size_t) { return double(c); });  // share c/4
    const auto t = share_trend(g.num, g.den, g.x);
    REQUIRE(t.shares.size() == 4);
    for (std::size_t c = 0; c < 4; ++c) CHECK(t.shares[c] == Approx(double(c) / 4));
    CHECK(t.change == Approx(0.75));
    CHECK(t.ci.lo == Approx(0.75));  // every unit is identical: every resample gives the same line
    CHECK(t.ci.hi == Approx(0.75));
    CHECK(t.units == 10);
}

TEST_CASE("share_trend: a falling share gives a negative change", "[analysis][trend]") {
    const auto g = grid(3, 8, [](std::size_t c, std::size_t) { return double(4 - 2 * c); });  // 1, 0.5, 0
    const auto t = share_trend(g.num, g.den, g.x);
    CHECK(t.change == Approx(-1.0));
    CHECK(t.ci.hi < 0);
}

TEST_CASE("share_trend: a checkpoint without sink heads is left out of the fit", "[analysis][trend]") {
    auto g = grid(4, 6, [](std::size_t c, std::size_t) { return double(c); });
    for (auto& d : g.den[3]) d = 0;
    for (auto& v : g.num[3]) v = 0;
    const auto t = share_trend(g.num, g.den, g.x);
    CHECK(std::isnan(t.shares[3]));
    CHECK(t.change == Approx(0.5));  // shares 0, 1/4, 1/2 over x = 0 … 2
}

TEST_CASE("share_trend: units without a trend give an interval around zero", "[analysis][trend]") {
    std::mt19937_64 rng(7);
    std::bernoulli_distribution coin(0.5);
    std::vector<std::vector<int>> draws(5, std::vector<int>(200));
    for (auto& row : draws) for (auto& d : row) d = coin(rng) ? 3 : 1;
    const auto flat = grid(5, 200, [&](std::size_t c, std::size_t i) { return double(draws[c][i]); });
    const auto t = share_trend(flat.num, flat.den, flat.x);
    CHECK(t.ci.lo < 0);
    CHECK(t.ci.hi > 0);
    // The same noise plus a rise of 0.1 per checkpoint in every unit: the interval leaves zero.
    const auto rising = grid(5, 200, [&](std::size_t c, std::size_t i) { return double(draws[c][i]) * 0.5 + 0.4 * double(c); });
    const auto r = share_trend(rising.num, rising.den, rising.x);
    CHECK(r.ci.lo > 0);
    CHECK(r.change == Approx(0.4).margin(0.1));
}

TEST_CASE("share_trend: shares that wander between checkpoints are no trend", "[analysis][trend]") {
    // Every unit alike, so resampling the units cannot see the scatter; the least-squares change is
    // 0.354 (hand computation: slope of 0.5, 0.1, 0.9, 0.2, 0.95, 0.3, 0.9 on 0 … 6 is 0.0589, times 6).
    const std::vector<double> share = {0.5, 0.1, 0.9, 0.2, 0.95, 0.3, 0.9};
    const auto g = grid(7, 16, [&](std::size_t c, std::size_t) { return 4 * share[c]; });
    const auto units_only = share_trend(g.num, g.den, g.x, TrendResampling::units);
    CHECK(units_only.change == Approx(0.3535714286));
    CHECK(units_only.ci.lo == Approx(units_only.change));
    CHECK(units_only.ci.hi == Approx(units_only.change));
    const auto t = share_trend(g.num, g.den, g.x);
    CHECK(t.change == Approx(0.3535714286));
    CHECK(t.ci.lo < 0);
    CHECK(t.ci.hi > 0.7);
}

TEST_CASE("share_trend: a straight line keeps a point interval when checkpoints are resampled", "[analysis][trend]") {
    // A resample that misses the first or last checkpoint still reports the change over the full span.
    const auto g = grid(7, 12, [](std::size_t c, std::size_t) { return 0.5 * double(c); });  // share c/8
    const auto t = share_trend(g.num, g.den, g.x);
    CHECK(t.change == Approx(0.75));
    CHECK(t.ci.lo == Approx(0.75));
    CHECK(t.ci.hi == Approx(0.75));
}

TEST_CASE("share_trend: on random series the two-stage interval excludes zero about 5% of the time", "[analysis][trend]") {
    // 7 checkpoints whose shares are drawn uniformly (no trend), 64 units each with 4 heads that fall in the
    // early layers with that share. Counted: series whose interval lies wholly above zero. A valid 95%
    // interval gives that for about 2.5%; resampling the units alone does for most series whose points
    // happen to rise. The two-stage rate must not be demonstrably above 5% (Clopper-Pearson lower bound).
    std::mt19937_64 rng(2026);
    std::uniform_real_distribution<double> uniform(0, 1);
    int above_two_stage = 0, above_units = 0;
    const int series = 60;
    for (int k = 0; k < series; ++k) {
        std::vector<double> share(7);
        for (auto& s : share) s = uniform(rng);
        const auto g = grid(7, 64, [&](std::size_t c, std::size_t) {
            double early = 0;
            for (int h = 0; h < 4; ++h) early += uniform(rng) < share[c] ? 1 : 0;
            return early;
        });
        above_two_stage += share_trend(g.num, g.den, g.x, TrendResampling::checkpoints_then_units, kConfidence, 400).ci.lo > 0;
        above_units += share_trend(g.num, g.den, g.x, TrendResampling::units, kConfidence, 400).ci.lo > 0;
    }
    INFO("two-stage " << above_two_stage << " / " << series << ", units only " << above_units << " / " << series);
    CHECK(clopper_pearson(above_two_stage, series).lo <= 0.05);
    CHECK(above_units > 3 * above_two_stage);  // the weakness the two stages remove
}

TEST_CASE("share_trend: rejects ragged input", "[analysis][trend]") {
    auto g = grid(3, 4, [](std::size_t, std::size_t) { return 1.0; });
    g.num[1].pop_back();
    CHECK_THROWS(share_trend(g.num, g.den, g.x));
    CHECK_THROWS(share_trend({g.num[0]}, {g.den[0]}, {0.0}));
}

TEST_CASE("A4's concentration threshold is (1 + 2/L)/2 for two early layers and excess 1/2", "[analysis][checkpoint_trend]") {
    // The rule text's formula, written as the first version of the experiments wrote it: the same double.
    for (std::int64_t L = 1; L <= 64; ++L) {
        INFO("L = " << L);
        CHECK(concentration_threshold(2, L, 0.5) == (1.0 + 2.0 / double(L)) / 2.0);
    }
    CHECK(concentration_threshold(2, 0, 0.5) == 1.5);  // L = 0 counts as one layer
    CHECK(concentration_threshold(1, 4, 0.5) == 0.625);
}
