// analysis/intervals.hpp and analysis/verdict.hpp: Clopper–Pearson bounds satisfy their defining
// binomial tail equations (computed here by direct summation, independently of Boost's beta quantile)
// and the closed forms at k = 0 and k = n; the bootstrap is reproducible and close to the normal
// interval on a large sample; a verdict holds a condition only when its whole interval lies on the
// claim's side, a failed precondition decides the outcome, and checks never do.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <sinkscope/analysis/verdict.hpp>

using namespace sinkscope;
using namespace sinkscope::analysis;

namespace {
// P(X ≥ k) and P(X ≤ k) for X ~ Binomial(n, p), by summing the probability mass function.
double upper_tail(int k, int n, double p) {
    double s = 0;
    for (int i = k; i <= n; ++i) s += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) +
                                             i * std::log(p) + (n - i) * std::log1p(-p));
    return s;
}
double lower_tail(int k, int n, double p) {
    double s = 0;
    for (int i = 0; i <= k; ++i) s += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) +
                                             i * std::log(p) + (n - i) * std::log1p(-p));
    return s;
}
}  // namespace

TEST_CASE("Clopper-Pearson bounds solve the binomial tail equations", "[analysis][intervals]") {
    for (auto [k, n] : {std::pair{1, 20}, {5, 10}, {37, 64}, {63, 64}, {200, 270}}) {
        const Interval ci = clopper_pearson(k, n);
        INFO("k=" << k << " n=" << n << " ci=[" << ci.lo << ", " << ci.hi << "]");
        CHECK(upper_tail(k, n, ci.lo) == Approx(0.025).epsilon(1e-6));   // P(X ≥ k | lo) = α/2
        CHECK(lower_tail(k, n, ci.hi) == Approx(0.025).epsilon(1e-6));   // P(X ≤ k | hi) = α/2
        CHECK(ci.lo < double(k) / n);
        CHECK(ci.hi > double(k) / n);
    }
    // Closed forms: k = 0 → [0, 1 − (α/2)^{1/n}];  k = n → [(α/2)^{1/n}, 1].
    CHECK(clopper_pearson(0, 10).lo == 0.0);
    CHECK(clopper_pearson(0, 10).hi == Approx(1 - std::pow(0.025, 0.1)).epsilon(1e-10));
    CHECK(clopper_pearson(10, 10).lo == Approx(std::pow(0.025, 0.1)).epsilon(1e-10));
    CHECK(clopper_pearson(10, 10).hi == 1.0);
    CHECK_THROWS_AS(clopper_pearson(3, 2), Error);
    CHECK_THROWS_AS(clopper_pearson(0, 0), Error);
}

TEST_CASE("bootstrap intervals are reproducible and near the normal interval for a mean", "[analysis][intervals]") {
    std::mt19937_64 rng(7);
    std::normal_distribution<double> N(3.0, 2.0);
    std::vector<double> x(400);
    for (auto& v : x) v = N(rng);
    const Interval a = bootstrap_mean(x), b = bootstrap_mean(x);
    CHECK(a.lo == b.lo);
    CHECK(a.hi == b.hi);
    double m = mean_of(x), s2 = 0;
    for (double v : x) s2 += (v - m) * (v - m);
    const double se = std::sqrt(s2 / (x.size() - 1) / x.size());
    CHECK(a.lo == Approx(m - 1.96 * se).margin(0.25 * se));
    CHECK(a.hi == Approx(m + 1.96 * se).margin(0.25 * se));
    // A constant sample has a degenerate interval; a ratio of paired constants is exact.
    const std::vector<double> c(20, 2.5);
    CHECK(bootstrap_median(c).lo == 2.5);
    CHECK(bootstrap_median(c).hi == 2.5);
    CHECK(bootstrap_ratio(std::vector<double>(10, 3.0), std::vector<double>(10, 1.5)).lo == Approx(2.0));
    CHECK_THROWS_AS(bootstrap_mean({}), Error);
    CHECK_THROWS_AS(bootstrap_mean({1.0, std::nan("")}), Error);
    CHECK(median_of({4, 1, 3, 2}) == 2.5);
}

TEST_CASE("a condition holds only when its whole interval is on the claim's side", "[analysis][verdict]") {
    CHECK(bootstrap_condition("x", 0.9, {0.85, 0.95}, 10, 0.8).holds());
    CHECK_FALSE(bootstrap_condition("x", 0.9, {0.75, 0.95}, 10, 0.8).holds());   // straddles the threshold
    CHECK(bootstrap_condition("x", 0.1, {0.05, 0.15}, 10, 0.2, Side::at_most).holds());
    CHECK_FALSE(bootstrap_condition("x", 0.1, {0.05, 0.25}, 10, 0.2, Side::at_most).holds());
    CHECK_FALSE(bootstrap_condition("x", std::nan(""), {std::nan(""), std::nan("")}, 0, 0.0).holds());
    CHECK(rate_condition("r", 64, 64, 0.9).holds());       // CP lower bound 0.944
    CHECK_FALSE(rate_condition("r", 10, 10, 0.9).holds()); // CP lower bound 0.69: too few units
    CHECK(exact_condition("count", 2, 1, 1).holds());
}

TEST_CASE("a verdict's outcome follows its preconditions and conditions, never its checks", "[analysis][verdict]") {
    Verdict ok("X1", "rule", "null");
    ok.condition(rate_condition("share", 60, 64, 0.8)).check("a theorem", 0.5, 1.0, false);
    CHECK(ok.outcome() == Outcome::reproduced);

    Verdict fails("X2", "rule", "null");
    fails.condition(rate_condition("share", 60, 64, 0.8)).condition(rate_condition("other", 30, 64, 0.8));
    CHECK(fails.outcome() == Outcome::not_reproduced);
    CHECK(fails.decided_by() == "condition failed: other");

    Verdict absent("X3", "rule", "null");
    absent.precondition(rate_condition("has a sink", 0, 64, 0.3)).condition(rate_condition("share", 60, 64, 0.8));
    CHECK(absent.outcome() == Outcome::not_applicable);
    Verdict small("X4", "rule", "null");
    small.precondition(rate_condition("has a sink", 0, 64, 0.3), Outcome::not_shown).condition(rate_condition("share", 60, 64, 0.8));
    CHECK(small.outcome() == Outcome::not_shown);
    CHECK_THROWS_AS(Verdict("X5", "r", "n").precondition(rate_condition("p", 1, 2, 0.1), Outcome::reproduced), Error);

    const auto j = fails.to_json();
    for (const char* key : {"claim", "outcome", "rule", "statistic", "threshold", "ci", "n", "null", "conditions", "checks"})
        CHECK(j.contains(key));
    CHECK(j["outcome"] == "not reproduced");
    CHECK(j["statistic"].get<double>() == Approx(60.0 / 64));
    CHECK(j["ci"].size() == 2);
    CHECK(j["n"] == 64);
    CHECK_THROWS_AS(Verdict("X6", "r", "n").to_json(), Error);   // no condition: nothing decided
}

TEST_CASE("an interval that straddles its threshold is inconclusive, not a failure", "[analysis][verdict]") {
    // A condition fails only when its whole interval is on the wrong side.
    CHECK(bootstrap_condition("x", 0.7, {0.6, 0.75}, 10, 0.8).fails());
    CHECK_FALSE(bootstrap_condition("x", 0.79, {0.7, 0.85}, 10, 0.8).fails());
    CHECK(bootstrap_condition("x", 0.3, {0.25, 0.35}, 10, 0.2, Side::at_most).fails());
    CHECK_FALSE(bootstrap_condition("x", std::nan(""), {std::nan(""), std::nan("")}, 0, 0.0).fails());
    CHECK(exact_condition("count", 0, 1, 1).fails());  // an exact value is never undecided

    Verdict straddles("X7", "rule", "null");
    straddles.condition(rate_condition("share", 60, 64, 0.8)).condition(bootstrap_condition("balanced accuracy", 0.789, {0.70, 0.86}, 32, 0.8));
    CHECK(straddles.outcome() == Outcome::inconclusive);
    CHECK(straddles.decided_by() == "condition undecided: balanced accuracy (n = 32, its interval straddles the threshold)");
    CHECK(straddles.to_json()["outcome"] == "inconclusive");

    // A failed condition decides even when an earlier one is undecided.
    Verdict mixed("X8", "rule", "null");
    mixed.condition(bootstrap_condition("a", 0.79, {0.7, 0.85}, 10, 0.8)).condition(rate_condition("b", 1, 64, 0.8));
    CHECK(mixed.outcome() == Outcome::not_reproduced);
    CHECK(mixed.decided_by() == "condition failed: b");

    // No data: inconclusive, naming the missing interval.
    Verdict empty("X9", "rule", "null");
    empty.condition(exact_condition("ratio", std::nan(""), 0, 0.05, Side::at_most));
    CHECK(empty.outcome() == Outcome::inconclusive);
    CHECK(empty.decided_by() == "condition undecided: ratio (n = 0, no interval)");

    // Preconditions: absent (whole interval below) gives its outcome; undecided gives inconclusive; a power
    // precondition may give inconclusive when it fails.
    Verdict rare("X10", "rule", "null");
    rare.precondition(rate_condition("has a spike", 2, 6, 0.5)).condition(rate_condition("share", 60, 64, 0.8));
    CHECK(rare.outcome() == Outcome::inconclusive);
    Verdict few("X11", "rule", "null");
    few.precondition(exact_condition("spike tokens at positions >= 1", 6, 6, 10), Outcome::inconclusive)
        .condition(rate_condition("share", 60, 64, 0.8));
    CHECK(few.outcome() == Outcome::inconclusive);
    CHECK(few.decided_by() == "precondition failed: spike tokens at positions >= 1");
}
