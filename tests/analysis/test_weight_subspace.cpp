// analysis/weight_subspace.hpp against exact math: spans and energy shares of constructed vectors, and the
// random-direction expectation r / d_h (the chance level of B5's energy share) by Monte Carlo.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <sinkscope/analysis/weight_subspace.hpp>

using namespace sinkscope::analysis;

TEST_CASE("span_basis and subspace_share of hand-computed vectors", "[analysis][geometry]") {
    // Columns e1 and e1 + e2 of R^3 span {e1, e2}: k = (1, 2, 2) has ‖P k‖² = 1 + 4 = 5 of ‖k‖² = 9.
    Eigen::MatrixXd V(3, 2);
    V << 1, 1,
         0, 1,
         0, 0;
    const RowMatrixXd B = span_basis(V);
    REQUIRE(B.rows() == 2);
    CHECK((B * B.transpose() - Eigen::MatrixXd::Identity(2, 2)).cwiseAbs().maxCoeff() < 1e-12);
    Eigen::VectorXd k(3);
    k << 1, 2, 2;
    CHECK(subspace_share(B, k) == Approx(5.0 / 9.0).epsilon(1e-12));
    CHECK(subspace_share(B, Eigen::Vector3d(0, 0, -3)) == Approx(0.0).margin(1e-15));
    CHECK(subspace_share(B, Eigen::Vector3d(2, -7, 0)) == Approx(1.0).epsilon(1e-12));
    // Repeated and zero columns add nothing to the span.
    Eigen::MatrixXd W(3, 4);
    W << 2, 4, 0, 0,
         1, 2, 0, 0,
         0, 0, 0, 0;
    const RowMatrixXd B1 = span_basis(W);
    REQUIRE(B1.rows() == 1);
    // k = (1, 0, 0): cos² to (2, 1, 0)/√5 is 4/5.
    CHECK(subspace_share(B1, Eigen::Vector3d(1, 0, 0)) == Approx(0.8).epsilon(1e-12));
    // The zero map spans {0}: every share is 0; the zero key has no direction (NaN, not an error).
    const RowMatrixXd B0 = span_basis(Eigen::MatrixXd::Zero(3, 2));
    CHECK(B0.rows() == 0);
    CHECK(subspace_share(B0, k) == 0.0);
    CHECK(std::isnan(subspace_share(B, Eigen::Vector3d::Zero())));
    CHECK(span_basis(Eigen::MatrixXd(3, 0)).rows() == 0);
    CHECK_THROWS_AS(subspace_share(B, Eigen::VectorXd::Ones(4)), sinkscope::Error);
    Eigen::MatrixXd bad = V;
    bad(0, 0) = NAN;
    CHECK_THROWS_AS(span_basis(bad), sinkscope::Error);
}

TEST_CASE("subspace_share: keys built in the span hold all their energy; random keys hold r / d_h on average",
          "[analysis][geometry]") {
    std::mt19937 rng(11);
    std::normal_distribution<double> nd;
    for (int rep = 0; rep < 20; ++rep) {
        const int dh = 8 + rep, m = 1 + rep % 4;
        Eigen::MatrixXd V(dh, m);
        for (int i = 0; i < V.size(); ++i) V.data()[i] = nd(rng);
        const RowMatrixXd B = span_basis(V);
        REQUIRE(B.rows() == m);
        // In the span: k = V c.
        Eigen::VectorXd c(m);
        for (auto& x : c) x = nd(rng);
        CHECK(subspace_share(B, V * c) == Approx(1.0).epsilon(1e-10));
        // Orthogonal to it: the residual of a random vector after least squares on V.
        Eigen::VectorXd g(dh);
        for (auto& x : g) x = nd(rng);
        const Eigen::VectorXd resid = g - V * V.colPivHouseholderQr().solve(g);
        CHECK(subspace_share(B, resid) == Approx(0.0).margin(1e-10));
    }
    // A Gaussian key's direction is uniform: E[share] = r / d_h (here 3 / 16), each share a Beta(r/2, (d_h−r)/2)
    // variable of variance (r/d)(1 − r/d) / (d/2 + 1). Mean of n = 20000 within 5 standard errors.
    const int dh = 16, r = 3, n = 20000;
    Eigen::MatrixXd V(dh, r);
    for (int i = 0; i < V.size(); ++i) V.data()[i] = nd(rng);
    const RowMatrixXd B = span_basis(V);
    double sum = 0;
    for (int i = 0; i < n; ++i) {
        Eigen::VectorXd k(dh);
        for (auto& x : k) x = nd(rng);
        sum += subspace_share(B, k);
    }
    const double p = double(r) / dh, se = std::sqrt(p * (1 - p) / (dh / 2.0 + 1) / n);
    CHECK(std::abs(sum / n - p) < 5 * se);
}
