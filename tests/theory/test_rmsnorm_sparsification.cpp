// Tests of include/sinkscope/theory/rmsnorm_sparsification.hpp; statements in
// theory/rmsnorm_sparsification.md. Every property runs 1000 seeded cases (kTheorySeed) of one family
// of inputs: random, all channels equal, one huge channel, tiny (eps dominates), negative gains,
// zero gains; every input is drawn by rapidcheck (property.hpp's gen::), so a failure shrinks. The RMSNorm itself is checked against its definition written out in long double.
#include <catch2/catch.hpp>

#include <sinkscope/theory/rmsnorm_sparsification.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "theory/property.hpp"

using namespace sinkscope::theory;
using sinkscope::Error;
using sinkscope::test::engine;
using sinkscope::test::gaussian_vector;
using sinkscope::test::property;
namespace gen = sinkscope::test::gen;

namespace {

enum class Family { random, all_equal, one_huge, tiny, negative_gains, zero_gains };

struct Case {
    Eigen::VectorXd ha, hb, g;
    double eps = 0;
    std::vector<Index> C;
};

// One case of a family, every number drawn by rapidcheck: vectors shrink entry by entry towards 0,
// scales towards 1 (or the family's smallest), choices towards the first.
Case make_case(Family family, int d) {
    const double eps_choices[] = {0.0, 1e-6, 1e-5, 1.0};
    Case c;
    c.eps = eps_choices[*gen::integer(0, 3)];
    // Scales 10^[-3, 3] on a grid of 0.01 decades.
    const double sa = std::pow(10.0, *gen::integer(-300, 300) / 100.0);
    const double sb = std::pow(10.0, *gen::integer(-300, 300) / 100.0);
    c.ha = *gen::vector(d, sa);
    c.hb = *gen::vector(d, sb);
    c.g = (1.0 + 0.5 * (*gen::vector(d)).array()).matrix();
    const auto in_C = *rc::gen::container<std::vector<bool>>(std::size_t(d), gen::bernoulli(0.3));
    for (int i = 0; i < d; ++i)
        if (in_C[std::size_t(i)]) c.C.push_back(i);
    const auto sign = [] { return *gen::bernoulli(0.5) ? -1.0 : 1.0; };
    switch (family) {
        case Family::random: break;
        case Family::all_equal:
            c.ha.setConstant(sign() * sa);
            c.hb.setConstant(sign() * sb);
            break;
        case Family::one_huge: {
            const int j = *gen::integer(0, d - 1);
            const int k = *gen::bernoulli(0.5) ? *gen::integer(0, d - 1) : j;
            c.ha[j] += sign() * std::pow(10.0, *gen::integer(300, 3000) / 100.0);  // 1e3 .. 1e30
            c.hb[k] += sign() * std::pow(10.0, *gen::integer(300, 3000) / 100.0);
            if (std::find(c.C.begin(), c.C.end(), j) == c.C.end()) c.C.push_back(j);
            break;
        }
        case Family::tiny:
            c.eps = 1e-6;
            c.ha *= std::pow(10.0, -*gen::integer(500, 13500) / 100.0) / sa;  // 1e-5 .. 1e-135
            c.hb *= std::pow(10.0, -*gen::integer(500, 13500) / 100.0) / sb;
            break;
        case Family::negative_gains: {
            const auto negative = *rc::gen::container<std::vector<bool>>(std::size_t(d), gen::bernoulli(0.7));
            for (int i = 0; i < d; ++i) c.g[i] = (negative[std::size_t(i)] ? -1 : 1) * std::abs(c.g[i]);
            break;
        }
        case Family::zero_gains: {
            const double p = *gen::real_in(0.0, 1.0);  // fraction of zero gains, sometimes all of them
            const auto zero = *rc::gen::container<std::vector<bool>>(std::size_t(d), gen::bernoulli(p));
            for (int i = 0; i < d; ++i)
                if (zero[std::size_t(i)]) c.g[i] = 0.0;
            if (*gen::bernoulli(0.2))
                for (Index i : c.C) c.g[i] = 0.0;
            break;
        }
    }
    RC_PRE(c.ha.cwiseAbs().maxCoeff() > 0.0 && c.hb.cwiseAbs().maxCoeff() > 0.0);  // grid entries can all be 0
    return c;
}

// cos(x, y) on vectors rescaled by their max entry (no underflow); x, y nonzero.
double stable_cos(const Eigen::VectorXd& x, const Eigen::VectorXd& y) {
    const Eigen::VectorXd a = x / x.cwiseAbs().maxCoeff(), b = y / y.cwiseAbs().maxCoeff();
    return a.dot(b) / (a.norm() * b.norm());
}

void check_case(const Case& c) {
    const int d = static_cast<int>(c.ha.size());
    for (const Eigen::VectorXd* h : {&c.ha, &c.hb}) {
        const auto r = sparsification_bounds(*h, c.g, c.eps, c.C);
        RC_ASSERT(r.max_abs <= r.max_abs_bound * (1 + 1e-12));                          // R1 (eps kept)
        RC_ASSERT(r.max_abs_bound <= r.max_abs_bound_plain * (1 + 1e-15));              // R1 (plain)
        RC_ASSERT(r.residual <= r.residual_bound * (1 + 1e-12) + 1e-300);               // R2 (eps kept)
        RC_ASSERT(r.residual_bound <= r.residual_bound_plain * (1 + 1e-15) + 1e-300);   // R2 (plain)
        RC_ASSERT(r.kappa > 0.0 && r.kappa <= 1.0);
        RC_ASSERT(r.rho >= 0.0 && r.rho <= 1.0);
    }
    const Eigen::VectorXd xa = c.ha.cwiseProduct(c.g), xb = c.hb.cwiseProduct(c.g);
    const bool defined = xa.cwiseAbs().maxCoeff() > 0 && xb.cwiseAbs().maxCoeff() > 0;
    if (!defined) {
        // The cosine of a zero RMSNorm output is undefined: an Error, never a NaN.
        bool threw = false;
        try {
            (void)cosine_bound(c.ha, c.hb, c.g, c.eps, c.C);
        } catch (const Error&) {
            threw = true;
        }
        RC_ASSERT(threw);
        return;
    }
    const auto r = cosine_bound(c.ha, c.hb, c.g, c.eps, c.C);
    RC_ASSERT(r.actual >= r.bound - 1e-12);                                              // R3
    RC_ASSERT(r.actual >= r.bound_from_raw - 1e-12);                                     // R4
    if (r.cos_spike >= 0) RC_ASSERT(r.bound_from_raw <= r.bound + 1e-12);                // R4 is weaker
    // R3's first sentence: the cosine of the RMSNorm outputs (with eps) is that of g ⊙ h.
    const Eigen::VectorXd na = rmsnorm(c.ha, c.g, c.eps), nb = rmsnorm(c.hb, c.g, c.eps);
    RC_ASSERT(std::abs(stable_cos(na, nb) - r.actual) <= 64 * d * std::numeric_limits<double>::epsilon());
}

void family_property(const char* name, Family family) {
    property(name, [family] {
        const int d = *rc::gen::inRange(2, 97);
        check_case(make_case(family, d));
    });
}

}  // namespace

TEST_CASE("rmsnorm: bounds hold on random vectors", "[theory][property]") {
    family_property("R1-R4 on random vectors", Family::random);
}
TEST_CASE("rmsnorm: bounds hold when all channels are equal", "[theory][property]") {
    family_property("R1-R4 with all channels equal", Family::all_equal);
}
TEST_CASE("rmsnorm: bounds hold with one huge channel", "[theory][property]") {
    family_property("R1-R4 with one huge channel (1e3 .. 1e30)", Family::one_huge);
}
TEST_CASE("rmsnorm: bounds hold on tiny vectors where eps dominates", "[theory][property]") {
    family_property("R1-R4 with ||h|| down to 1e-135, eps 1e-6", Family::tiny);
}
TEST_CASE("rmsnorm: bounds hold with negative gains", "[theory][property]") {
    family_property("R1-R4 with negative gains", Family::negative_gains);
}
TEST_CASE("rmsnorm: bounds hold with zero gains (undefined cosines throw)", "[theory][property]") {
    family_property("R1-R4 with zero gains", Family::zero_gains);
}

TEST_CASE("rmsnorm: float inputs satisfy the bounds to float rounding", "[theory][property]") {
    property("R1-R3 in float", [] {
        const int d = *rc::gen::inRange(2, 65);
        const Case c = make_case(Family::random, d);
        const Eigen::VectorXf ha = c.ha.cast<float>(), hb = c.hb.cast<float>(), g = c.g.cast<float>();
        const auto r = sparsification_bounds(ha, g, c.eps, c.C);
        RC_ASSERT(r.max_abs <= r.max_abs_bound * (1 + 1e-6));
        RC_ASSERT(r.residual <= r.residual_bound * (1 + 1e-6) + 1e-30);
        const auto cb = cosine_bound(ha, hb, g, c.eps, c.C);
        RC_ASSERT(cb.actual >= cb.bound - 1e-6);
    });
}

TEST_CASE("rmsnorm: RMSNorm matches its definition in long double", "[theory]") {
    auto rng = engine(17);
    for (int rep = 0; rep < 200; ++rep) {
        const int d = 2 + rep % 40;
        const Eigen::VectorXd h = gaussian_vector<double>(rng, d, std::pow(10.0, rep % 7 - 3));
        const Eigen::VectorXd g = gaussian_vector<double>(rng, d);
        const double eps = (rep % 3) * 1e-5;
        long double ms = 0;
        for (int i = 0; i < d; ++i) ms += (long double)h[i] * h[i];
        ms /= d;
        const Eigen::VectorXd out = rmsnorm(h, g, eps);
        for (int i = 0; i < d; ++i) {
            const long double want = (long double)h[i] / std::sqrt(ms + (long double)eps) * g[i];
            CHECK(std::abs((long double)out[i] - want) <= 1e-14L * (1 + std::abs(want)));
        }
    }
    // No overflow in float: ||h||^2 would be 1e40 > FLT_MAX.
    Eigen::VectorXf big(3);
    big << 1e20f, -2e20f, 3e19f;
    const Eigen::VectorXf nb = rmsnorm(big, Eigen::VectorXf::Ones(3), 1e-6);
    CHECK(nb.allFinite());
    CHECK(nb.squaredNorm() == Approx(3.0f).epsilon(1e-5));
}

TEST_CASE("rmsnorm: R1, R2 and R3 are attained (sharp)", "[theory]") {
    const int d = 7;
    Eigen::VectorXd g = Eigen::VectorXd::Constant(d, 0.5);
    g[3] = -2.0;  // max |g| = 2
    // R1: h = e_3, eps = 0 gives |h~_3| = sqrt(d) |g_3|.
    Eigen::VectorXd h = Eigen::VectorXd::Zero(d);
    h[3] = 5.0;
    auto r = sparsification_bounds(h, g, 0.0, {});
    CHECK(r.max_abs == Approx(std::sqrt(7.0) * 2.0).epsilon(1e-15));
    CHECK(r.max_abs == Approx(r.max_abs_bound).epsilon(1e-15));
    // R2: all energy outside C on the channel of largest gain.
    h << 3, 0, 0, 1, 0, 0, 4;  // C = {0, 6}: rho = 25/26
    r = sparsification_bounds(h, g, 0.0, {0, 6});
    CHECK(r.rho == Approx(25.0 / 26.0).epsilon(1e-15));
    CHECK(r.residual == Approx(r.residual_bound).epsilon(1e-14));
    CHECK(r.residual == Approx(std::sqrt(7.0 / 26.0) * 2.0).epsilon(1e-14));
    // R2 with eps kept: kappa < 1 scales the bound and the value alike.
    r = sparsification_bounds(h, g, 0.5, {0, 6});
    CHECK(r.kappa == Approx(std::sqrt(26.0 / (26.0 + 3.5))).epsilon(1e-15));
    CHECK(r.residual == Approx(r.residual_bound).epsilon(1e-14));
    // R3: rest parts anti-parallel, unit gains.
    Eigen::VectorXd one = Eigen::VectorXd::Ones(d);
    Eigen::VectorXd a(d), b(d);
    a << 3, 1, 0, 0, 0, 0, 2;
    b << 1, 3, 0, 0, 0, 0, -2;  // C = {0, 1}
    const auto cb = cosine_bound(a, b, one, 1e-6, {0, 1});
    CHECK(cb.actual == Approx(cb.bound).epsilon(1e-14));
    CHECK(cb.cos_spike == Approx(6.0 / 10.0).epsilon(1e-15));
    CHECK(cb.rho_a == Approx(10.0 / 14.0).epsilon(1e-15));
}

TEST_CASE("rmsnorm: bad input throws sinkscope::Error", "[theory]") {
    const Eigen::VectorXd h = Eigen::VectorXd::LinSpaced(5, 1, 5), g = Eigen::VectorXd::Ones(5);
    CHECK_THROWS_WITH(rmsnorm(Eigen::VectorXd::Ones(1), Eigen::VectorXd::Ones(1), 1e-6), Catch::Contains("at least 2"));
    CHECK_THROWS_WITH(rmsnorm(h, Eigen::VectorXd::Ones(4), 1e-6), Catch::Contains("different lengths"));
    Eigen::VectorXd bad = h;
    bad[2] = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_WITH(rmsnorm(bad, g, 1e-6), Catch::Contains("non-finite"));
    Eigen::VectorXd badg = g;
    badg[0] = std::numeric_limits<double>::infinity();
    CHECK_THROWS_AS(sparsification_bounds(h, badg, 1e-6, {0}), Error);
    CHECK_THROWS_AS(rmsnorm(h, g, -1.0), Error);
    CHECK_THROWS_AS(rmsnorm(h, g, std::numeric_limits<double>::quiet_NaN()), Error);
    CHECK_THROWS_WITH(rmsnorm(Eigen::VectorXd::Zero(5), g, 0.0), Catch::Contains("0/0"));
    CHECK(rmsnorm(Eigen::VectorXd::Zero(5), g, 1e-6).isZero(0));  // eps > 0: defined, 0
    CHECK_THROWS_WITH(energy_fraction(Eigen::VectorXd::Zero(5), {0}), Catch::Contains("zero vector"));
    CHECK_THROWS_WITH(energy_fraction(h, {0, 5}), Catch::Contains("outside"));
    CHECK_THROWS_WITH(energy_fraction(h, {1, 1}), Catch::Contains("twice"));
    CHECK_THROWS_AS(sparsification_bounds(Eigen::VectorXd::Zero(5), g, 1e-6, {0}), Error);
    CHECK_THROWS_WITH(cosine_bound(h, h, Eigen::VectorXd::Zero(5), 1e-6, {0}), Catch::Contains("undefined"));
    CHECK_THROWS_AS(cosine_lower_bound(1.5, 0.5, 0.0), Error);
    CHECK_THROWS_AS(cosine_lower_bound(0.5, 0.5, -1.5), Error);
    CHECK_THROWS_AS(weighted_fraction_lower_bound(0.5, -1.0, 1.0), Error);
}
