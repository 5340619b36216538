// Tests of include/sinkscope/theory/p0_circuit.hpp; statements in theory/p0_circuit.md.
// Peer for the sharp constant: mpmath at 30 digits (the values are quoted in p0_circuit.md).
// Properties: seed kTheorySeed, 1000 cases each; every input is drawn by rapidcheck (property.hpp's
// gen::), so a failure shrinks to a small counter-example.
#include <catch2/catch.hpp>

#include <sinkscope/theory/p0_circuit.hpp>

#include <cmath>
#include <limits>

#include "theory/property.hpp"

using namespace sinkscope::theory;
using sinkscope::Error;
using sinkscope::test::property;
namespace gen = sinkscope::test::gen;

TEST_CASE("p0: row 0 of every causal softmax is e_0, other rows are distributions over keys <= t",
          "[theory][property]") {
    // Statement P1, for scores of any scale (up to 1e4, where exp overflows without the max shift).
    property("causal softmax row 0 = e_0", [] {
        const int T = *rc::gen::inRange(1, 48);
        const int log_scale = *gen::integer(-2, 4);
        RowMatrix<double> S = *gen::matrix(T, T, std::pow(10.0, log_scale));
        for (Index t = 0; t < T; ++t)
            for (Index j = t + 1; j < T; ++j) S(t, j) = -std::numeric_limits<double>::infinity();
        const RowMatrix<double> A = causal_softmax(S);
        RC_ASSERT(A(0, 0) == 1.0);                       // p_0 = 1 exactly: e^0 / e^0
        RC_ASSERT(A.row(0).squaredNorm() == 1.0);        // sum p^2 = 1
        RC_ASSERT(row0_deviation(A) == 0.0);
        for (Index t = 0; t < T; ++t) {
            RC_ASSERT(std::abs(A.row(t).sum() - 1.0) <= 1e-14 * (t + 1));
            RC_ASSERT(A.row(t).minCoeff() >= 0.0);
            RC_ASSERT(A.row(t).tail(T - t - 1).cwiseAbs().sum() == 0.0);
            RC_ASSERT(A.row(t).squaredNorm() >= 1.0 / (t + 1) - 1e-14);  // Cauchy-Schwarz
        }
    });
}

TEST_CASE("p0: the sharp remainder constant matches mpmath, increases with eps, and is attained", "[theory]") {
    // Statement P2: c(1/2) = 0.724675210369587345..., attained at theta = 2.4917816009737789748 rad;
    // c(1/4) = 0.640094321828175728...; c(0+) = 1/sqrt(3). (mpmath, 30 digits: theory/p0_circuit.md.)
    CHECK(norm_remainder_constant(0.5) == Approx(0.724675210369587345).epsilon(1e-13));
    CHECK(kNormRemainderConstantHalf == Approx(0.724675210369587345).epsilon(1e-16));
    CHECK(norm_remainder_constant(0.25) == Approx(0.640094321828175728).epsilon(1e-13));
    CHECK(norm_remainder_constant(0.0) == Approx(1.0 / std::sqrt(3.0)).epsilon(1e-15));
    CHECK(norm_remainder_constant(1e-6) == Approx(1.0 / std::sqrt(3.0)).epsilon(1e-5));
    double prev = 0.0;
    for (int i = 1; i < 1000; ++i) {  // increasing on (0, 1): the sup over eps <= 1/2 is c(1/2)
        const double c = norm_remainder_constant(i / 1000.0);
        CHECK(c >= prev);
        prev = c;
    }
    // The extremal perturbation at ||delta|| = ||x||/2 reaches the constant (so it cannot be lowered).
    for (int d : {2, 5, 64}) {
        Eigen::VectorXd x = Eigen::VectorXd::Zero(d), delta = Eigen::VectorXd::Zero(d);
        x[0] = 3.0;
        const double th = 2.4917816009737789748;
        delta[0] = 1.5 * std::cos(th);
        delta[1] = 1.5 * std::sin(th);
        const NormPerturbation p = norm_perturbation(x, delta);
        CHECK(p.ratio == Approx(0.5).epsilon(1e-15));
        CHECK(p.remainder_norm == Approx(std::sqrt(double(d)) * 0.724675210369587345 * 0.25).epsilon(1e-12));
        REQUIRE(p.bound_half.has_value());
        CHECK(p.remainder_norm <= *p.bound_half * (1 + 1e-12));
    }
}

TEST_CASE("p0: ||R|| <= sqrt(d) c(eps) eps^2, and <= sqrt(d) c(1/2) eps^2 for ||delta|| <= ||x||/2",
          "[theory][property]") {
    // Statement P2 on random x (scales 1e-3 .. 1e3), random directions of delta and eps in (0, 0.99).
    // Rounding: R is a difference of O(sqrt(d)) vectors, so allow 64 d u sqrt(d) absolutely.
    property("Norm perturbation remainder bound", [] {
        const int d = *rc::gen::inRange(2, 65);
        const int eps_milli = *gen::integer(1, 989, 500);
        const int log_scale = *gen::integer(-3, 3);
        const Eigen::VectorXd x = *gen::vector(d, std::pow(10.0, log_scale));
        Eigen::VectorXd delta = *gen::vector(d);
        const bool lean = *gen::bernoulli(0.25);
        RC_PRE(x.norm() > 0.0 && delta.norm() > 0.0);  // grid entries can all be 0 (while shrinking)
        if (lean) delta = -delta.dot(x) / x.squaredNorm() * x + 0.3 * delta;  // lean against x
        delta *= (eps_milli / 1000.0) * x.norm() / delta.norm();
        const NormPerturbation p = norm_perturbation(x, delta);
        const double tol = 64.0 * d * std::numeric_limits<double>::epsilon() * std::sqrt(double(d));
        RC_ASSERT(p.remainder_norm <= p.bound * (1 + 1e-9) + tol);
        if (p.ratio <= 0.5) {
            RC_ASSERT(p.bound_half.has_value());
            RC_ASSERT(p.remainder_norm <= *p.bound_half * (1 + 1e-12) + tol);
        } else {
            RC_ASSERT(!p.bound_half.has_value());
        }
        // The linear term: sqrt(d) delta_perp / ||x|| = delta_perp / RMS(x) (papers.md's form).
        const Eigen::VectorXd xh = x / x.norm();
        const Eigen::VectorXd perp = delta - xh.dot(delta) * xh;
        const double rms = x.norm() / std::sqrt(double(d));
        RC_ASSERT(std::abs(p.linear_norm - (perp / rms).norm()) <= 1e-12 * (1 + p.linear_norm));
        // Second order: ||R|| is below the linear term by the factor c eps (<= 0.73 eps at eps <= 1/2).
        RC_ASSERT(p.remainder_norm <= norm_remainder_constant(p.ratio) * p.ratio * std::sqrt(double(d)) * p.ratio + tol);
    });
}

TEST_CASE("p0: bad input throws sinkscope::Error", "[theory]") {
    CHECK_THROWS_AS(causal_softmax(RowMatrix<double>::Zero(2, 3)), Error);
    RowMatrix<double> S = RowMatrix<double>::Zero(3, 3);
    S(2, 0) = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_WITH(causal_softmax(S), Catch::Contains("non-finite"));
    RowMatrix<double> A = RowMatrix<double>::Identity(3, 3);
    A(0, 0) = 0.5;
    A(0, 1) = 0.5;  // row 0 attends to the future: not causal
    CHECK_THROWS_AS(row0_deviation(A), Error);
    CHECK_THROWS_AS(norm_remainder_constant(1.0), Error);
    CHECK_THROWS_AS(norm_remainder_constant(-0.1), Error);
    CHECK_THROWS_AS(norm_remainder_constant(std::numeric_limits<double>::quiet_NaN()), Error);
    CHECK_THROWS_WITH(unit_rms_normalize(Eigen::VectorXd::Zero(4)), Catch::Contains("zero vector"));
    CHECK_THROWS_WITH(unit_rms_normalize(Eigen::VectorXd::Ones(1)), Catch::Contains("at least 2"));
    Eigen::VectorXd x = Eigen::VectorXd::Ones(4);
    CHECK_THROWS_WITH(norm_perturbation(x, Eigen::VectorXd::Ones(3)), Catch::Contains("different lengths"));
    CHECK_THROWS_WITH(norm_perturbation(x, Eigen::VectorXd(-x)), Catch::Contains("||delta|| >= ||x||"));
    Eigen::VectorXd dn = Eigen::VectorXd::Zero(4);
    dn[1] = std::numeric_limits<double>::infinity();
    CHECK_THROWS_AS(norm_perturbation(x, dn), Error);
}
