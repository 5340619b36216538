// analysis/geometry.hpp against exact math: constructed vectors whose cosines, spectra and subspaces are known.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <sinkscope/analysis/geometry.hpp>

using namespace sinkscope::analysis;

TEST_CASE("cosine and mean pairwise cosine of constructed vectors", "[analysis][geometry]") {
    Eigen::VectorXd a(3), b(3);
    a << 1, 0, 0;
    b << 1, 1, 0;
    CHECK(cosine(a, b) == Approx(1 / std::sqrt(2.0)).epsilon(1e-14));
    CHECK(cosine(a, -a) == Approx(-1));
    // Three unit vectors at 120° in a plane: every pair has cosine −1/2.
    RowMatrixXd X(3, 2);
    for (int i = 0; i < 3; ++i) { X(i, 0) = 5 * std::cos(2 * M_PI * i / 3); X(i, 1) = 5 * std::sin(2 * M_PI * i / 3); }
    CHECK(mean_pairwise_cosine(X) == Approx(-0.5).epsilon(1e-12));
    // Identical directions with different norms: 1.
    RowMatrixXd Y(4, 3);
    for (int i = 0; i < 4; ++i) Y.row(i) = (i + 1.0) * a.transpose();
    CHECK(mean_pairwise_cosine(Y) == Approx(1.0).epsilon(1e-14));
    CHECK_THROWS_AS(cosine(a, Eigen::VectorXd::Zero(3)), sinkscope::Error);
    CHECK_THROWS_AS(mean_pairwise_cosine(RowMatrixXd::Ones(1, 3)), sinkscope::Error);
}

TEST_CASE("rms_normalize has norm sqrt(d) and bounded entries; energy_share of channels", "[analysis][geometry]") {
    std::mt19937 rng(3);
    std::normal_distribution<double> nd;
    for (int rep = 0; rep < 50; ++rep) {
        const int d = 2 + rep;
        Eigen::VectorXd x(d);
        for (auto& v : x) v = nd(rng);
        if (rep % 5 == 0) x[rep % d] = 1e4;  // a spike
        const Eigen::VectorXd y = rms_normalize(x);
        CHECK(y.norm() == Approx(std::sqrt(double(d))).epsilon(1e-12));
        CHECK(y.cwiseAbs().maxCoeff() <= std::sqrt(double(d)) * (1 + 1e-12));
    }
    Eigen::VectorXd x(4);
    x << 3, 4, 0, 0;
    CHECK(energy_share(x, {0}) == Approx(9.0 / 25));
    CHECK(energy_share(x, {0, 1}) == Approx(1.0));
    CHECK_THROWS_AS(energy_share(x, {7}), sinkscope::Error);
    CHECK_THROWS_AS(rms_normalize(Eigen::VectorXd::Zero(3)), sinkscope::Error);
}

TEST_CASE("pca recovers a planted direction; spectra and energy dimension", "[analysis][geometry]") {
    // Points μ + a_i e1·10 + b_i e2 with a, b ±1 balanced: covariance diag(100, 1, 0, …).
    const int n = 8, d = 5;
    RowMatrixXd X(n, d);
    for (int i = 0; i < n; ++i) {
        X.row(i).setConstant(2.0);
        X(i, 0) += 10.0 * ((i % 2) ? 1 : -1);
        X(i, 1) += ((i / 2) % 2) ? 1 : -1;
    }
    const Pca p = pca(X, 2);
    CHECK(p.variance[0] == Approx(100.0).epsilon(1e-12));
    CHECK(p.variance[1] == Approx(1.0).epsilon(1e-12));
    CHECK(p.total_variance == Approx(101.0).epsilon(1e-12));
    CHECK(std::abs(p.components(0, 0)) == Approx(1.0).epsilon(1e-12));
    CHECK(std::abs(p.components(1, 1)) == Approx(1.0).epsilon(1e-12));
    const RowMatrixXd Z = p.project(X);
    CHECK(std::abs(Z(0, 0)) == Approx(10.0).epsilon(1e-12));

    // Uncentered spectrum of rows ±e1·3 and ±e2: (1/n) XᵀX = diag(9/2, 1/2, 0).
    RowMatrixXd K = RowMatrixXd::Zero(4, 3);
    K(0, 0) = 3; K(1, 0) = -3; K(2, 1) = 1; K(3, 1) = -1;
    const Eigen::VectorXd l = uncentered_spectrum(K);
    CHECK(l[0] == Approx(4.5));
    CHECK(l[1] == Approx(0.5));
    CHECK(std::abs(l[2]) < 1e-12);
    CHECK(energy_dimension(l, 0.9) == 1);
    CHECK(energy_dimension(l, 0.95) == 2);
    CHECK(energy_dimension(l, 1.0) == 2);
    const RowMatrixXd B = top_subspace(K, 1);
    Eigen::VectorXd q(3);
    q << 1, 1, std::sqrt(2.0);
    CHECK(projection_share(B, q) == Approx(0.25));
    CHECK(projection_share(top_subspace(K, 2), q) == Approx(0.5));
}

TEST_CASE("pearson of exact linear relations and of a hand-worked case", "[analysis][geometry]") {
    const std::vector<double> x{1, 2, 3, 4};
    CHECK(pearson(x, {3, 5, 7, 9}) == Approx(1.0));
    CHECK(pearson(x, {4, 3, 2, 1}) == Approx(-1.0));
    // x = (1,2,3), y = (1,3,2): cov = 0.5/… → r = 0.5
    CHECK(pearson({1, 2, 3}, {1, 3, 2}) == Approx(0.5));
    CHECK(pearson(x, {2, 2, 2, 2}) == 0.0);
    CHECK_THROWS_AS(pearson({1.0}, {1.0}), sinkscope::Error);
}
