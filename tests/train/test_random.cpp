// train/random.hpp: the generator and its hand-written distributions.
// Peers: the C++ standard's check value for std::mt19937_64 (its 10000th output from the default seed),
// the SplitMix64 reference outputs from seed 0 (Vigna's splitmix64.c), and the laws' own CDFs (the standard
// normal by erfc, the gamma by Boost.Math's regularized incomplete gamma) in Kolmogorov–Smirnov tests.
// A KS statistic D of n draws exceeds 1.95/√n with probability 0.001 under the law (asymptotic
// Kolmogorov distribution), so each bound fails a correct sampler once in a thousand seeds; the seeds are fixed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <boost/math/special_functions/gamma.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <set>
#include <vector>
#include <sinkscope/train/random.hpp>

using namespace sinkscope;
using namespace sinkscope::train;

namespace {
// D = sup_x |F_n(x) − F(x)| of the draws against the CDF F.
double ks_statistic(std::vector<double> x, const std::function<double(double)>& cdf) {
    std::sort(x.begin(), x.end());
    const double n = double(x.size());
    double d = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double f = cdf(x[i]);
        d = std::max({d, f - double(i) / n, double(i + 1) / n - f});
    }
    return d;
}
constexpr double kKs999 = 1.95;  // P(√n D > 1.95) ≈ 0.001
}  // namespace

TEST_CASE("Rng draws the standard's mt19937_64 sequence", "[train][random]") {
    Rng r(5489);  // std::mt19937_64's default seed; [rand.predef]: the 10000th output is 9981545732273789042
    std::uint64_t x = 0;
    for (int i = 0; i < 10000; ++i) x = r.next();
    CHECK(x == 9981545732273789042ULL);
}

TEST_CASE("splitmix64 gives the reference outputs; stream seeds differ by index", "[train][random]") {
    // splitmix64.c from state 0: each output advances the state by the golden-ratio constant.
    CHECK(splitmix64(0) == 0xe220a8397b1dcdafULL);
    CHECK(splitmix64(0x9e3779b97f4a7c15ULL) == 0x6e789e6aa1b965f4ULL);
    std::set<std::uint64_t> seeds;
    for (std::uint64_t seed : {0ULL, 1ULL, 42ULL})
        for (std::uint64_t i = 0; i < 1000; ++i) seeds.insert(stream_seed(seed, i));
    CHECK(seeds.size() == 3000);
    CHECK(stream_seed(7, 3) == stream_seed(7, 3));
}

TEST_CASE("Rng: uniform, normal and gamma follow their laws (Kolmogorov-Smirnov)", "[train][random]") {
    const int n = 20000;
    const double bound = kKs999 / std::sqrt(double(n));
    Rng r(11);
    std::vector<double> u(n), z(n);
    for (auto& x : u) x = r.uniform();
    CHECK(*std::min_element(u.begin(), u.end()) >= 0.0);
    CHECK(*std::max_element(u.begin(), u.end()) < 1.0);
    CHECK(ks_statistic(u, [](double x) { return x; }) < bound);
    for (auto& x : z) x = r.normal();
    CHECK(ks_statistic(z, [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }) < bound);
    for (double alpha : {0.3, 1.0, 4.0}) {
        INFO("alpha " << alpha);
        std::vector<double> g(n);
        for (auto& x : g) x = r.gamma(alpha);
        CHECK(ks_statistic(g, [&](double x) { return boost::math::gamma_p(alpha, x); }) < bound);
    }
    CHECK_THROWS_WITH(r.gamma(0.0), Catch::Contains("alpha must be > 0"));
}

TEST_CASE("Rng: below and categorical hit every outcome at its rate", "[train][random]") {
    // Pearson's χ² against the exact probabilities; the bounds are the χ² 0.999 quantiles (df 9: 27.88, df 3: 16.27).
    Rng r(5);
    const int n = 50000;
    std::vector<double> count(10, 0);
    for (int i = 0; i < n; ++i) {
        const auto k = r.below(10);
        REQUIRE(k < 10);
        count[k] += 1;
    }
    double chi2 = 0;
    for (double c : count) chi2 += (c - n / 10.0) * (c - n / 10.0) / (n / 10.0);
    CHECK(chi2 < 27.88);

    const std::vector<double> w = {1, 0, 3, 6};  // a zero weight is never drawn
    const auto cdf = cumulative(w);
    CHECK(cdf == std::vector<double>{1, 1, 4, 10});
    std::vector<double> hits(4, 0);
    for (int i = 0; i < n; ++i) hits[r.categorical(cdf)] += 1;
    CHECK(hits[1] == 0);
    chi2 = 0;
    for (std::size_t k : {0u, 2u, 3u}) {
        const double e = n * w[k] / 10.0;
        chi2 += (hits[k] - e) * (hits[k] - e) / e;
    }
    CHECK(chi2 < 16.27);
}

TEST_CASE("Rng: the state round trip continues the same sequence, Box-Muller spare included", "[train][random]") {
    Rng a(42);
    a.normal();  // leaves a spare in the state
    Rng b;
    b.set_state(a.state());
    for (int i = 0; i < 10; ++i) CHECK(a.normal() == b.normal());
    for (int i = 0; i < 10; ++i) CHECK(a.next() == b.next());
    CHECK_THROWS_WITH(b.set_state("not a state"), Catch::Contains("malformed generator state"));
}

TEST_CASE("Rng: Dirichlet draws lie on the simplex with mean 1/n", "[train][random]") {
    Rng r(3);
    const int draws = 4000;
    std::vector<double> mean(5, 0);
    for (int i = 0; i < draws; ++i) {
        const auto p = r.dirichlet(5, 0.5);
        double s = 0;
        for (std::size_t k = 0; k < p.size(); ++k) {
            REQUIRE(p[k] >= 0);
            s += p[k];
            mean[k] += p[k] / draws;
        }
        REQUIRE(s == Approx(1.0).epsilon(1e-12));
    }
    // Var p_k = (1/n)(1 − 1/n) / (n α + 1) = 0.16 / 3.5 for n = 5, α = 0.5; five standard errors.
    for (double m : mean) CHECK(std::abs(m - 0.2) < 5 * std::sqrt(0.16 / 3.5 / draws));
}
