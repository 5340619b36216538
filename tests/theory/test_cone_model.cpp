// Tests of include/sinkscope/theory/cone_model.hpp; statements in theory/cone_model.md.
// Properties: seed sinkscope::test::kTheorySeed, 1000 cases each. The inputs of each statement (axis u,
// weights p, the cone's a, values) are drawn by rapidcheck (property.hpp's gen::) and shrink; the Monte
// Carlo samples whose mean is compared with an expectation come from an engine seeded by rapidcheck.
// Each property has a negative check (refute) on inputs outside its premise, which must fail.
#include <catch2/catch.hpp>

#include <sinkscope/theory/cone_model.hpp>

#include <cmath>
#include <limits>

#include "theory/property.hpp"

using namespace sinkscope::theory;
using sinkscope::Error;
using sinkscope::test::engine;
using sinkscope::test::gaussian_vector;
using sinkscope::test::property;
using sinkscope::test::refute;
namespace gen = sinkscope::test::gen;

namespace {

// s uniform on the unit sphere of u-perp: a standard Gaussian projected on u-perp is an isotropic
// Gaussian there, so its direction is uniform. ||s|| = 1 and s . u = 0 (to rounding).
Eigen::VectorXd sample_perp_unit(std::mt19937_64& rng, const Eigen::VectorXd& u) {
    for (;;) {
        Eigen::VectorXd g = gaussian_vector<double>(rng, u.size());
        g -= u.dot(g) * u;
        const double n = g.norm();
        if (n > 1e-6) return g / n;
    }
}

// One cone vector v = a u + sqrt(1 - a^2) s (unit norm).
Eigen::VectorXd cone_vector(std::mt19937_64& rng, const Eigen::VectorXd& u, double a) {
    return a * u + std::sqrt(1.0 - a * a) * sample_perp_unit(rng, u);
}

// The cone's a on a grid of step 1/1000 in [lo, hi] / 1000, shrinking towards lo.
double draw_a(int lo_milli, int hi_milli) { return *gen::integer(lo_milli, hi_milli) / 1000.0; }

// Monte Carlo mean over N samples of ||sum_i p_i v_i||^2 with v_i = a u + sqrt(1-a^2) s_i. Premise of C2:
// the s_i independent and uniform on the sphere of u-perp. correlated = true breaks it: every s_i of a
// sample is the same direction.
double mean_output_norm_sq(std::mt19937_64& rng, const Eigen::VectorXd& u, const Eigen::VectorXd& p, double a, int N,
                           bool correlated) {
    double mean = 0.0;
    for (int s = 0; s < N; ++s) {
        const Eigen::VectorXd shared = sample_perp_unit(rng, u);
        Eigen::VectorXd o = Eigen::VectorXd::Zero(u.size());
        for (Index i = 0; i < p.size(); ++i)
            o += p[i] * (correlated ? Eigen::VectorXd(a * u + std::sqrt(1.0 - a * a) * shared) : cone_vector(rng, u, a));
        mean += o.squaredNorm() / N;
    }
    return mean;
}

}  // namespace

TEST_CASE("cone: E||o||^2 = a^2 + (1-a^2) sum p^2 for fixed p, Monte Carlo within 5 sigma",
          "[theory][property]") {
    // Statement C2 of theory/cone_model.md. For fixed p the per-sample variance is exactly
    // Var||o||^2 = (1-a^2)^2 * 2((sum p^2)^2 - sum p^4) / m, m = d - 1 (C3), so the mean of N samples
    // lies within 5 sigma / sqrt(N) of the formula (central limit theorem).
    const auto check = [](bool correlated) {
        const int d = *rc::gen::inRange(2, 41);
        const int n = *rc::gen::inRange(correlated ? 2 : 1, 25);
        const double a = draw_a(0, correlated ? 999 : 1000);
        const Eigen::VectorXd u = *gen::unit_vector(d);
        const Eigen::VectorXd p = *gen::simplex(n);
        auto rng = engine(*gen::engine_seed());
        const int N = 256;
        const double mean = mean_output_norm_sq(rng, u, p, a, N, correlated);
        const double sum_sq = p.squaredNorm();
        const double sum_4 = p.array().pow(4).sum();
        const double expected = cone_expected_norm_sq(a, sum_sq);
        const double var = std::pow(1 - a * a, 2) * 2.0 * std::max(0.0, sum_sq * sum_sq - sum_4) / (d - 1);
        const double tol = 5.0 * std::sqrt(var / N) + 1e-12;
        RC_ASSERT(std::abs(mean - expected) <= tol);
    };
    property("Monte Carlo mean of ||o||^2 matches the cone formula", [&] { check(false); });
    // Outside premise 3 (isotropic, independent s_i): the same s for every value of a sample gives
    // ||o||^2 = 1 > a^2 + (1-a^2) sum p^2 whenever a < 1 and p is not one-hot.
    refute("the cone formula holds for correlated directions", [&] { check(true); });
}

TEST_CASE("cone: E||o||^2 = a^2 + (1-a^2) E[sum p^2] for random p independent of s, within 5 sigma",
          "[theory][property]") {
    // p uniform over the first k keys, k uniform in {1..n}, drawn independently of s:
    // E[sum p^2] = E[1/k], and Var||o||^2 = (1-a^2)^2 (Var(1/k) + E[2(1/k^2 - 1/k^3)] / m) exactly.
    const auto check = [](bool correlated) {
        const int d = *rc::gen::inRange(2, 41);
        const int n = *rc::gen::inRange(correlated ? 2 : 1, 25);
        const double a = draw_a(0, correlated ? 999 : 1000);
        const Eigen::VectorXd u = *gen::unit_vector(d);
        auto rng = engine(*gen::engine_seed());
        std::uniform_int_distribution<int> K(1, n);
        const int N = 256;
        double mean = 0.0;
        for (int s = 0; s < N; ++s) {
            const int k = K(rng);
            mean += mean_output_norm_sq(rng, u, Eigen::VectorXd::Constant(k, 1.0 / k), a, 1, correlated) / N;
        }
        double e_inv = 0, e_inv2 = 0, e_inv3 = 0;
        for (int k = 1; k <= n; ++k) {
            e_inv += 1.0 / k / n;
            e_inv2 += 1.0 / (double(k) * k) / n;
            e_inv3 += 1.0 / (double(k) * k * k) / n;
        }
        const double expected = a * a + (1 - a * a) * e_inv;
        const double var = std::pow(1 - a * a, 2) * ((e_inv2 - e_inv * e_inv) + 2.0 * (e_inv2 - e_inv3) / (d - 1));
        RC_ASSERT(std::abs(mean - expected) <= 5.0 * std::sqrt(std::max(0.0, var) / N) + 1e-12);
    };
    property("Monte Carlo mean of ||o||^2 with random p matches the cone formula", [&] { check(false); });
    // Outside premise 3: the same s for every value of a sample gives ||o||^2 = 1 > a^2 + (1-a^2) E[1/k].
    refute("the cone formula with random p holds for correlated directions", [&] { check(true); });
}

TEST_CASE("cone: ||o||^2 = p^T G p to rounding for any weights and values", "[theory][property]") {
    // Statement C1. Rounding bound: both sides are within (n + d + 2) u (sum_i |p_i| ||v_i||)^2 of the
    // exact value (u the unit roundoff), so they differ by at most twice that.
    // perturb != 0 moves entry (0, 0) of the values the prediction sees by perturb times their scale.
    const auto check = [](double perturb) {
        const int n = *rc::gen::inRange(1, 40);
        const int d = *rc::gen::inRange(1, 40);
        const int nq = *rc::gen::inRange(1, 6);
        const double scale = std::pow(10.0, *gen::integer(-6, 6));
        const RowMatrix<double> V = *gen::matrix(n, d, scale);
        const RowMatrix<double> P = *gen::matrix(nq, n);
        RowMatrix<double> seen = V;
        seen(0, 0) += perturb * scale;
        const Eigen::VectorXd got = exact_output_norm_sq(seen, P);
        for (int t = 0; t < nq; ++t) {
            Eigen::VectorXd o = Eigen::VectorXd::Zero(d);
            double bound = 0;
            for (int i = 0; i < n; ++i) {
                o += P(t, i) * V.row(i).transpose();
                bound += std::abs(P(t, i)) * V.row(i).norm();
            }
            const double tol = 2.0 * (n + d + 2) * std::numeric_limits<double>::epsilon() * bound * bound;
            RC_ASSERT(std::abs(got[t] - o.squaredNorm()) <= tol);
        }
    };
    property("exact_output_norm_sq equals ||sum p_i v_i||^2", [&] { check(0.0); });
    // The tolerance is tight enough to see one value entry moved by 1e-6 of the values' scale.
    refute("exact_output_norm_sq equals ||sum p_i v_i||^2 after one value entry moved by 1e-6", [&] { check(1e-6); });
}

TEST_CASE("cone: E[alpha^2] = a^2 + (1-a^2)/n on exact cone samples, within 5 sigma", "[theory][property]") {
    // Statement C4: ||mean of n cone vectors||^2 = a^2 + (1-a^2)||s_bar||^2 exactly (s_i ⟂ u), with
    // E||s_bar||^2 = 1/n and Var||s_bar||^2 = 2(n-1)/(m n^3). One fit's alpha^2 is a degenerate
    // U-statistic (chi-square-like, not Gaussian in n), so the test averages R = 48 independent fits:
    // the mean is then within 5 sigma / sqrt(R) of a^2 + (1-a^2)/n.
    // correlated = true breaks the premise of independent s_i: half of the values share one direction.
    const auto check = [](bool correlated) {
        const int d = *rc::gen::inRange(2, 25);
        const int n = *rc::gen::inRange(2, 49);
        const double a = draw_a(1, 999);
        const Eigen::VectorXd u = *gen::unit_vector(d);
        auto rng = engine(*gen::engine_seed());
        const int R = 48;
        double mean_alpha_sq = 0.0;
        RowMatrix<double> V(n, d);
        for (int r = 0; r < R; ++r) {
            const Eigen::VectorXd shared = cone_vector(rng, u, a);
            for (int i = 0; i < n; ++i) V.row(i) = (correlated && 2 * i < n ? shared : cone_vector(rng, u, a)).transpose();
            const auto fit = fit_cone(V);
            mean_alpha_sq += fit.alpha * fit.alpha / R;
            // alpha is the mean cosine to the fitted axis; the values are unit (C5).
            RC_ASSERT(std::abs(fit.alpha - (V * fit.axis).mean()) <= 1e-12);
            RC_ASSERT(std::abs(fit.mean_norm_sq - 1.0) <= 1e-12);
            // top ratio >= 1 whenever there is an orthogonal part (0 by convention when there is none).
            RC_ASSERT(fit.orthogonal_energy < 1e-12 || fit.isotropy_top_ratio >= 1.0 - 1e-12);
        }
        const double nd = n;
        const double sigma = (1 - a * a) * std::sqrt(2.0 * (nd - 1) / ((d - 1) * nd * nd * nd * R));
        RC_ASSERT(std::abs(mean_alpha_sq - (a * a + (1 - a * a) / nd)) <= 5.0 * sigma + 1e-12);
    };
    property("mean of alpha^2 over replicates matches a^2 + (1-a^2)/n", [&] { check(false); });
    // Outside the premise: with h = ceil(n/2) values equal, E||s_bar||^2 = (h^2 + n - h)/n^2 (about 1/4), not 1/n.
    refute("mean of alpha^2 matches a^2 + (1-a^2)/n when half of the values share a direction", [&] { check(true); });
}

TEST_CASE("cone: isotropy measures are exact on a balanced k-dimensional construction", "[theory]") {
    // Statement C5: s_i = +-e_j over j in a k-dimensional subspace of u-perp, each sign and j equally
    // often: C = (1-a^2)/k * P_k, so top ratio = (d-1)/k and participation ratio = k, alpha = a, axis = u.
    for (int d : {2, 3, 8, 17}) {
        for (int k = 1; k < d; ++k) {
            const double a = 0.6;
            Eigen::VectorXd u = Eigen::VectorXd::Zero(d);
            u[0] = 1.0;
            RowMatrix<float> V(2 * k, d);
            for (int j = 0; j < k; ++j) {
                for (int sign : {-1, 1}) {
                    Eigen::VectorXd v = a * u;
                    v[1 + j] += sign * std::sqrt(1 - a * a);
                    V.row(2 * j + (sign > 0)) = v.cast<float>().transpose();
                }
            }
            const auto fit = fit_cone(V);
            CAPTURE(d, k);
            CHECK(fit.alpha == Approx(a).epsilon(1e-6));
            CHECK(fit.axis.cast<double>().dot(u) == Approx(1.0).epsilon(1e-6));
            CHECK(fit.orthogonal_energy == Approx(1 - a * a).epsilon(1e-5));
            CHECK(fit.isotropy_top_ratio == Approx(double(d - 1) / k).epsilon(1e-5));
            CHECK(fit.participation_ratio == Approx(double(k)).epsilon(1e-5));
            CHECK(fit.alpha_debiased ==
                  Approx(std::sqrt(std::max(0.0, (2.0 * k * a * a - 1) / (2.0 * k - 1)))).epsilon(1e-5));
        }
    }
}

TEST_CASE("cone: prediction on uniform causal attention is a^2 + (1-a^2)/(t+1), largest at t = 0",
          "[theory]") {
    // Statement C2 specialised: uniform attention over t+1 keys gives sum p^2 = 1/(t+1); position 0
    // (p = e_0) gets the strictly largest prediction when a < 1 (statement P1 of p0_circuit.md).
    const Index T = 9;
    RowMatrix<double> A = RowMatrix<double>::Zero(T, T);
    for (Index t = 0; t < T; ++t) A.row(t).head(t + 1).setConstant(1.0 / (t + 1));
    RowMatrix<double> V(4, 3);
    V << 2, 0, 0,  0, 2, 0,  2, 2, 0,  0, 0, 2;  // norms 2, 2, 2sqrt2, 2: mean ||v||^2 = 5
    const auto fit = fit_cone(V);
    const Eigen::VectorXd pred = predict_output_norm_sq(fit, A);
    const double a2 = double(fit.alpha) * fit.alpha;
    for (Index t = 0; t < T; ++t) CHECK(pred[t] == Approx(5.0 * (a2 + (1 - a2) / (t + 1))));
    for (Index t = 1; t < T; ++t) CHECK(pred[0] > pred[t]);
    CHECK(attention_sum_sq(A)[0] == 1.0);
}

TEST_CASE("cone: bad input throws sinkscope::Error", "[theory]") {
    RowMatrix<double> V = RowMatrix<double>::Random(5, 4);
    RowMatrix<double> A = RowMatrix<double>::Identity(5, 5);
    CHECK_THROWS_AS(fit_cone(RowMatrix<double>(0, 4)), Error);
    CHECK_THROWS_AS(fit_cone(RowMatrix<double>::Ones(5, 1)), Error);  // d = 1: no orthogonal complement
    CHECK_THROWS_AS(fit_cone(RowMatrix<double>::Ones(1, 4)), Error);  // one value
    RowMatrix<double> Z = V;
    Z.row(2).setZero();
    CHECK_THROWS_WITH(fit_cone(Z), Catch::Contains("zero vector"));
    RowMatrix<double> N = V;
    N(1, 1) = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_WITH(fit_cone(N), Catch::Contains("non-finite"));
    RowMatrix<double> opposite(2, 3);
    opposite << 1, 0, 0, -1, 0, 0;
    CHECK_THROWS_WITH(fit_cone(opposite), Catch::Contains("mean direction"));
    CHECK_THROWS_AS(exact_output_norm_sq(V, RowMatrix<double>::Identity(4, 4)), Error);  // n mismatch
    RowMatrix<double> Ainf = A;
    Ainf(0, 0) = std::numeric_limits<double>::infinity();
    CHECK_THROWS_AS(exact_output_norm_sq(V, Ainf), Error);
    const auto fit = fit_cone(V);
    RowMatrix<double> upper = A;
    upper(0, 1) = 0.5;
    upper(0, 0) = 0.5;
    CHECK_THROWS_WITH(predict_output_norm_sq(fit, upper), Catch::Contains("not causal"));
    RowMatrix<double> unnormalised = 2.0 * A;
    CHECK_THROWS_WITH(predict_output_norm_sq(fit, unnormalised), Catch::Contains("sums to"));
    CHECK_THROWS_AS(cone_expected_norm_sq(1.5, 0.5), Error);
    CHECK_THROWS_AS(predict_output_norm_sq(ConeFit<double>{}, A), Error);
}
