// Tests of include/sinkscope/theory/sink_geometry.hpp; statements in theory/sink_geometry.md.
// Peers: softmax written out in long double, hand-computed harmonic sums, Eigen's JacobiSVD for the
// principal subspace. Properties: seed kTheorySeed, 1000 cases each.
#include <catch2/catch.hpp>

#include <sinkscope/theory/sink_geometry.hpp>

#include <Eigen/SVD>

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

constexpr double kEps = std::numeric_limits<double>::epsilon();

// sigma_1 / sigma_r <= kappa for the singular values of M (a premise: rank at least r, with room).
bool rank_with_room(const Eigen::MatrixXd& M, Index r, double kappa) {
    const Eigen::VectorXd sv = Eigen::JacobiSVD<Eigen::MatrixXd>(M).singularValues();
    return sv.size() >= r && sv[0] > 0.0 && sv[r - 1] * kappa >= sv[0];
}

// Every row has a non-zero entry (a query with a direction).
bool no_zero_row(const Eigen::MatrixXd& M) { return (M.cwiseAbs().rowwise().maxCoeff().array() > 0.0).all(); }

}  // namespace

TEST_CASE("sink geometry: max-gap lower <= exact sink mass <= Jensen upper", "[theory][property]") {
    // Statement G1, with the exact mass checked against a long-double softmax where exp does not
    // overflow long double.
    property("sink mass bracket", [] {
        const int n = *rc::gen::inRange(2, 200);
        const int log_scale = *gen::integer(-3, 3);
        const bool equal_others = *gen::bernoulli(0.1);
        Eigen::VectorXd z = *gen::vector(n, std::pow(10.0, log_scale));
        const Index sink = *gen::integer(0, n - 1);
        if (equal_others) {
            const double c = z[(sink + 1) % n];
            for (Index j = 0; j < n; ++j)
                if (j != sink) z[j] = c;
        }
        const SinkMass m = sink_mass_from_logits(z, sink);
        RC_ASSERT(m.max_lower <= m.exact * (1 + 1e-12) + 1e-300);
        RC_ASSERT(m.exact <= m.jensen_upper * (1 + 1e-12) + 1e-300);
        if (equal_others) {
            RC_ASSERT(std::abs(m.exact - m.jensen_upper) <= 1e-12 * m.exact + 1e-300);
            RC_ASSERT(std::abs(m.exact - m.max_lower) <= 1e-12 * m.exact + 1e-300);
        }
        if (z.cwiseAbs().maxCoeff() < 1000) {
            long double sum = 0;
            for (Index j = 0; j < n; ++j) sum += std::exp((long double)z[j]);
            const long double want = std::exp((long double)z[sink]) / sum;
            RC_ASSERT(std::abs((long double)m.exact - want) <= 1e-13L * want + 1e-300L);
        }
        // The approximation is e^Delta / (e^Delta + n - 1) with Delta = z_s - mean of the others.
        double mean_others = (z.sum() - z[sink]) / (n - 1);
        RC_ASSERT(std::abs(m.delta - (z[sink] - mean_others)) <= 1e-12 * (1 + z.cwiseAbs().maxCoeff()));
        if (std::abs(m.delta) < 50) {
            const double e = std::exp(m.delta);
            RC_ASSERT(std::abs(m.jensen_upper - e / (e + n - 1)) <= 1e-14);
        }
    });
    // Outside the equality premise (n >= 3 keys, the other logits drawn freely): the bracket is not tight.
    refute("both bounds equal the exact mass although the other logits differ", [] {
        const int n = *rc::gen::inRange(3, 200);
        const Eigen::VectorXd z = *gen::vector(n, std::pow(10.0, *gen::integer(-3, 3)));
        const SinkMass m = sink_mass_from_logits(z, *gen::integer(0, n - 1));
        RC_ASSERT(std::abs(m.exact - m.jensen_upper) <= 1e-12 * m.exact + 1e-300);
        RC_ASSERT(std::abs(m.exact - m.max_lower) <= 1e-12 * m.exact + 1e-300);
    });
}

TEST_CASE("sink geometry: sink mass by row of a causal score matrix", "[theory]") {
    const Index T = 6;
    RowMatrix<double> S = RowMatrix<double>::Constant(T, T, -std::numeric_limits<double>::infinity());
    auto rng = engine(4);
    for (Index t = 0; t < T; ++t) S.row(t).head(t + 1) = gaussian_vector<double>(rng, t + 1).transpose();
    const SinkMassRows rows = sink_mass_by_row(S);  // -inf above the diagonal is ignored
    REQUIRE(rows.first_row == 1);
    REQUIRE(rows.exact.size() == T - 1);
    for (Index t = 1; t < T; ++t) {
        const Eigen::VectorXd z = S.row(t).head(t + 1).transpose();
        CHECK(rows.exact[t - 1] == Approx(std::exp(z[0]) / z.array().exp().sum()).epsilon(1e-14));
        CHECK(rows.exact[t - 1] <= rows.jensen_upper[t - 1] + 1e-15);
        CHECK(rows.exact[t - 1] >= rows.max_lower[t - 1] - 1e-15);
    }
    const SinkMassRows rows2 = sink_mass_by_row(S, 3);
    CHECK(rows2.first_row == 3);
    CHECK(rows2.exact.size() == T - 3);
}

TEST_CASE("sink geometry: the PCA dimension is the rank for exactly low-rank keys and minimal in general",
          "[theory][property]") {
    // Statement G2: r = min{r : top-r energy >= threshold}; for keys in an exactly r-dimensional
    // subspace and a threshold of 1 - 1e-9, r is the rank. The basis spans the keys' principal
    // subspace, compared with Eigen's JacobiSVD.
    property("sink_key_subspace dimension and basis", [] {
        const int d = *rc::gen::inRange(2, 33);
        const int r = *rc::gen::inRange(1, d + 1);
        const int N = *rc::gen::inRange(r + 5, 85);  // N - r >= 5: well conditioned, rank r
        const int thr_milli = *rc::gen::inRange(1, 1001);
        const RowMatrix<double> B = Eigen::MatrixXd(*gen::orthogonal(d)).leftCols(r).transpose();  // r orthonormal rows
        RowMatrix<double> coeff = *gen::matrix(N, r);
        for (int j = 0; j < r; ++j) coeff.col(j) *= 1.0 + j;                       // distinct variances
        RC_PRE(rank_with_room(coeff, r, 1e3));                                    // the premise: rank r
        const RowMatrix<double> K = coeff * B;                                     // (N, d), rank r
        Eigen::JacobiSVD<Eigen::MatrixXd> svd(K, Eigen::ComputeThinV);
        const auto exact = sink_key_subspace(K, 1.0 - 1e-9);
        RC_ASSERT(exact.dimension == r);
        // Every key lies in the returned subspace.
        const Eigen::MatrixXd P = exact.basis * exact.basis.transpose();
        RC_ASSERT((K * P - K).cwiseAbs().maxCoeff() <= 1e-9 * K.cwiseAbs().maxCoeff());
        // Minimality for an arbitrary threshold, with energies from the SVD peer.
        const double thr = thr_milli / 1000.0;
        const auto sub = sink_key_subspace(K, thr);
        const Eigen::VectorXd e = svd.singularValues().array().square();
        const double total = e.sum();
        const double upto = e.head(sub.dimension).sum(), before = e.head(sub.dimension - 1).sum();
        RC_ASSERT(upto >= thr * total * (1 - 1e-9));
        RC_ASSERT(before < thr * total * (1 + 1e-9));
        RC_ASSERT(std::abs(sub.explained.sum() - 1.0) <= 1e-12);
        // Orthonormal basis, aligned with the SVD's leading right singular vectors where separated.
        RC_ASSERT((sub.basis.transpose() * sub.basis - Eigen::MatrixXd::Identity(sub.dimension, sub.dimension))
                      .cwiseAbs().maxCoeff() <= 1e-10);
        if (sub.dimension >= 1 && (e.size() < 2 || e[1] < 0.9 * e[0]))
            RC_ASSERT(std::abs(sub.basis.col(0).dot(svd.matrixV().col(0))) >= 1 - 1e-8);
    });
    // Outside the premise: the same keys plus full-rank noise of size 1e-3 are not exactly rank r < d.
    refute("the dimension at 1 - 1e-9 is r although noise fills the other directions", [] {
        const int d = *rc::gen::inRange(2, 33);
        const int r = *rc::gen::inRange(1, d);
        const int N = *rc::gen::inRange(r + 5, 85);
        const RowMatrix<double> B = Eigen::MatrixXd(*gen::orthogonal(d)).leftCols(r).transpose();
        const RowMatrix<double> K = *gen::matrix(N, r) * B + *gen::matrix(N, d, 1e-3);
        RC_ASSERT(sink_key_subspace(K, 1.0 - 1e-9).dimension == r);
    });
}

TEST_CASE("sink geometry: query alignment is 1 inside the subspace, 0 orthogonal to it, in [0,1] always",
          "[theory][property]") {
    // Statement G3.
    property("query_alignment range and extremes", [] {
        const int d = *rc::gen::inRange(2, 33);
        const int r = *rc::gen::inRange(1, d);
        const Eigen::MatrixXd Qfull = *gen::orthogonal(d);
        const Eigen::MatrixXd B = Qfull.leftCols(r), Bperp = Qfull.rightCols(d - r);
        const RowMatrix<double> inside = *gen::matrix(5, r) * B.transpose();
        const RowMatrix<double> outside = *gen::matrix(5, d - r) * Bperp.transpose();
        const RowMatrix<double> any = *gen::matrix(7, d, 1e3);
        RC_PRE(no_zero_row(inside) && no_zero_row(outside) && no_zero_row(any));  // queries with a direction
        RC_ASSERT(std::abs(query_alignment(inside, B) - 1.0) <= 1e-12);
        RC_ASSERT(query_alignment(outside, B) <= 1e-12);
        const double a = query_alignment(any, B);
        RC_ASSERT(a >= 0.0 && a <= 1.0);
        // For r = 1 it is the mean |cos(q, b)|.
        double mc = 0;
        for (Index t = 0; t < 7; ++t) mc += std::abs(any.row(t).dot(B.col(0).transpose())) / any.row(t).norm() / 7;
        RC_ASSERT(std::abs(query_alignment(any, B.leftCols(1)) - mc) <= 1e-12);
    });
    // Outside the premise: queries tilted by 1% of their size into the other side are not at 1 and 0.
    refute("alignment is 1 and 0 although the queries leave S and S-perp", [] {
        const int d = *rc::gen::inRange(2, 33);
        const int r = *rc::gen::inRange(1, d);
        const Eigen::MatrixXd Qfull = *gen::orthogonal(d);
        const Eigen::MatrixXd B = Qfull.leftCols(r), Bperp = Qfull.rightCols(d - r);
        const RowMatrix<double> inside = *gen::matrix(5, r) * B.transpose() + *gen::matrix(5, d - r, 1e-2) * Bperp.transpose();
        const RowMatrix<double> outside = *gen::matrix(5, d - r) * Bperp.transpose() + *gen::matrix(5, r, 1e-2) * B.transpose();
        RC_PRE(no_zero_row(inside) && no_zero_row(outside));
        RC_ASSERT(std::abs(query_alignment(inside, B) - 1.0) <= 1e-12);
        RC_ASSERT(query_alignment(outside, B) <= 1e-12);
    });
}

TEST_CASE("sink geometry: the sink-head rule separates a constructed sink head from a non-sink head", "[theory]") {
    // Statement G4 on a planted head: sink keys along k_s (+ small noise), ordinary keys spread over
    // the orthogonal complement; queries along +k_s make a sink head, queries in the ordinary span do not.
    auto rng = engine(21);
    const Index d = 16;
    Eigen::VectorXd ks = gaussian_vector<double>(rng, d);
    ks.normalize();
    RowMatrix<double> sink_keys(20, d), ordinary(200, d), q_sink(30, d), q_plain(30, d);
    for (Index i = 0; i < 20; ++i) sink_keys.row(i) = (8.0 * ks + 0.05 * gaussian_vector<double>(rng, d)).transpose();
    auto perp = [&](Eigen::VectorXd v) { return Eigen::VectorXd(v - v.dot(ks) * ks); };
    for (Index i = 0; i < 200; ++i) ordinary.row(i) = perp(gaussian_vector<double>(rng, d)).transpose();
    for (Index i = 0; i < 30; ++i) {
        q_sink.row(i) = (3.0 * ks + 0.3 * gaussian_vector<double>(rng, d)).transpose();
        q_plain.row(i) = perp(gaussian_vector<double>(rng, d)).transpose();
    }
    const SinkHeadScore s = predict_sink_head(q_sink, sink_keys, ordinary);
    CHECK(s.dimension == 1);
    CHECK(s.sink_alignment > 0.9);
    CHECK(s.mean_logit_gap > 0);
    CHECK(s.predicted);
    const SinkHeadScore n = predict_sink_head(q_plain, sink_keys, ordinary);
    CHECK_FALSE(n.predicted);
    // Anti-aligned queries are close to the subspace but give a negative gap: not a sink head.
    const SinkHeadScore a = predict_sink_head(RowMatrix<double>(-q_sink), sink_keys, ordinary);
    CHECK(a.sink_alignment > a.ordinary_alignment);
    CHECK(a.mean_logit_gap < 0);
    CHECK_FALSE(a.predicted);
}

TEST_CASE("sink geometry: centred dimension of keys in an affine subspace, and key_dimension agrees with sink_key_subspace",
          "[theory][property]") {
    // Statement G2 (centred): keys mu + sum_{i<=r} c_i u_i have centred dimension r at threshold 1 - 1e-9;
    // a large common mean makes the uncentred dimension 1 at 90% whatever r is.
    property("centred dimension is the affine rank", [] {
        const int d = *rc::gen::inRange(3, 24);
        const int r = *rc::gen::inRange(1, d);
        const int n = *rc::gen::inRange(r + 2, 80);
        const RowMatrix<double> U = *gen::matrix(r, d);
        const Eigen::VectorXd mu = *gen::vector(d);
        RowMatrix<double> K = *gen::matrix(n, r) * U;
        // The premises: the deviations span r dimensions (with room), and the common mean 1000 mu is large.
        RC_PRE(rank_with_room(RowMatrix<double>(K.rowwise() - K.colwise().mean()), r, 1e3));
        RC_PRE(mu.norm() >= 0.5);
        K.rowwise() += (1000.0 * mu).transpose();
        RC_ASSERT(key_dimension(K, 1.0 - 1e-9, true) == r);
        RC_ASSERT(key_dimension(K, 0.9, false) == 1);
        for (double th : {0.5, 0.9, 0.99}) {
            RC_ASSERT(key_dimension(K, th, true) == sink_key_subspace(K, th, true).dimension);
            RC_ASSERT(key_dimension(K, th, false) == sink_key_subspace(K, th, false).dimension);
        }
    });
    // Outside the premise: without the common mean, keys spread over r >= 2 directions are not
    // 1-dimensional uncentred.
    refute("the uncentred dimension at 90% is 1 without a common mean", [] {
        const int d = *rc::gen::inRange(3, 24);
        const int r = *rc::gen::inRange(2, d);
        const int n = *rc::gen::inRange(r + 2, 80);
        const RowMatrix<double> K = *gen::matrix(n, r) * *gen::matrix(r, d);
        RC_PRE(K.cwiseAbs().maxCoeff() > 0.0);
        RC_ASSERT(key_dimension(K, 0.9, false) == 1);
    });
}

TEST_CASE("sink geometry: mean-field alpha_0 is exact for equal ordinary logits, by hand", "[theory]") {
    // Statement G6 (moved from the former analysis/sink_keys test): q_t = e1, sink key g sqrt(d_h) e1,
    // ordinary keys 0, so every row has gap g and Gu's alpha_0 = (1/T) sum_t e^g / (e^g + t).
    const Index T = 16, dh = 4;
    for (double g : {-2.0, 0.0, 1.5, 6.0}) {
        RowMatrix<double> q = RowMatrix<double>::Zero(T, dh), k = RowMatrix<double>::Zero(T, dh);
        q.col(0).setOnes();
        k(0, 0) = g * std::sqrt(double(dh));
        const Eigen::VectorXd gaps = causal_logit_gaps(q, k, Eigen::VectorXd(k.row(0).transpose()));
        REQUIRE(gaps.size() == T - 1);
        for (Index t = 0; t < gaps.size(); ++t) CHECK(gaps[t] == Approx(g).margin(1e-12));
        double alpha = 0;
        for (Index t = 0; t < T; ++t) alpha += std::exp(g) / (std::exp(g) + double(t));
        alpha /= double(T);
        CHECK(mean_field_alpha0(g, T) == Approx(alpha).epsilon(1e-12));
        CHECK(mean_field_alpha0(gaps) == Approx(alpha).epsilon(1e-12));
    }
    CHECK(mean_field_alpha0(50.0, 64) == Approx(1.0).epsilon(1e-12));
    CHECK(mean_field_alpha0(-50.0, 64) == Approx(1.0 / 64).epsilon(1e-9));
    double harmonic = 0;
    for (int t = 1; t <= 64; ++t) harmonic += 1.0 / t;
    CHECK(mean_field_alpha0(0.0, 64) == Approx(harmonic / 64).epsilon(1e-14));  // uniform: H_T / T
    CHECK(mean_field_alpha0(0.0, 1) == 1.0);
    // One gap: the logit difference over sqrt(d_h).
    Eigen::Vector3d q3(1, 2, 3), ks(1, 0, 0), ko(0, 1, 0);
    CHECK(logit_gap(q3, ks, ko) == Approx((1.0 - 2.0) / std::sqrt(3.0)));
}

TEST_CASE("sink geometry: mean-field alpha_0 of the causal gaps bounds Gu's alpha_0 from above", "[theory][property]") {
    // Statement G6: with gap_t = z_0 - mean_{1<=j<=t} z_j of the sequence itself, A[t,0] <= e^gap_t / (e^gap_t + t)
    // (G1), so alpha_0 <= alpha0_hat; equal ordinary keys make every ordinary logit of a row equal: equality.
    // Returns (alpha_0 of the exact causal softmax pattern, alpha0_hat).
    const auto alpha_and_hat = [](const RowMatrix<double>& Q, const RowMatrix<double>& K) {
        const Index T = Q.rows();
        const double d = double(Q.cols());
        RowMatrix<double> A = RowMatrix<double>::Zero(T, T);  // exact causal softmax pattern, written out
        for (Index t = 0; t < T; ++t) {
            Eigen::VectorXd z = K.topRows(t + 1) * Q.row(t).transpose() / std::sqrt(d);
            z.array() -= z.maxCoeff();
            const Eigen::VectorXd e = z.array().exp();
            A.row(t).head(t + 1) = (e / e.sum()).transpose();
        }
        return std::pair<double, double>{sink_importance(A, 0),
                                         mean_field_alpha0(causal_logit_gaps(Q, K, Eigen::VectorXd(K.row(0).transpose())))};
    };
    property("mean-field bound on alpha_0", [&] {
        const int T = *rc::gen::inRange(2, 40);
        const int d = *rc::gen::inRange(1, 9);
        const int log_scale = *gen::integer(-2, 1);
        const bool equal_ordinary = *gen::bernoulli(0.2);
        const RowMatrix<double> Q = *gen::matrix(T, d, std::pow(10.0, log_scale));
        RowMatrix<double> K = *gen::matrix(T, d);
        if (equal_ordinary)
            for (Index j = 2; j < T; ++j) K.row(j) = K.row(1);
        const auto [alpha, hat] = alpha_and_hat(Q, K);
        RC_ASSERT(alpha <= hat + 1e-12);
        if (equal_ordinary) RC_ASSERT(std::abs(alpha - hat) <= 1e-12);
    });
    // Outside the equality premise (T >= 3, the ordinary keys drawn freely): alpha_0 < alpha0_hat somewhere.
    refute("alpha_0 equals alpha0_hat although the ordinary keys differ", [&] {
        const int T = *rc::gen::inRange(3, 40);
        const int d = *rc::gen::inRange(1, 9);
        const auto [alpha, hat] = alpha_and_hat(*gen::matrix(T, d, std::pow(10.0, *gen::integer(-2, 1))), *gen::matrix(T, d));
        RC_ASSERT(std::abs(alpha - hat) <= 1e-12);
    });
}

TEST_CASE("sink geometry: Gu importance on uniform and one-hot patterns, by hand", "[theory]") {
    // Statement G5: uniform causal attention gives alpha_k = (1/(T-k)) sum_{t=k}^{T-1} 1/(t+1).
    const Index T = 64;
    RowMatrix<double> U = RowMatrix<double>::Zero(T, T), Z = RowMatrix<double>::Zero(T, T);
    for (Index t = 0; t < T; ++t) {
        U.row(t).head(t + 1).setConstant(1.0 / (t + 1));
        Z(t, 0) = 1.0;
    }
    for (Index k : {Index(0), Index(1), Index(10), Index(63)}) {
        double want = 0;
        for (Index t = k; t < T; ++t) want += 1.0 / (t + 1);
        want /= (T - k);
        CHECK(sink_importance(U, k) == Approx(want).epsilon(1e-14));
    }
    CHECK(sink_importance(Z, 0) == 1.0);
    CHECK(sink_importance(Z, 1) == 0.0);
    // Layers: 0 = all one-hot (sinks), 1 = all uniform (alpha_0 = H_64 / 64 = 0.0741 < 0.3), 2 = mixed.
    std::vector<std::vector<RowMatrix<double>>> P = {{Z, Z, Z}, {U, U, U}, {Z, U, U}};
    CHECK(sink_rate(P) == Approx(4.0 / 9.0));
    CHECK(sink_rate(P, 0.3, 0, 1) == Approx(1.0 / 6.0));  // Sink_0[1:]
    CHECK(sink_rate(P, 0.3, 0, 2) == Approx(1.0 / 3.0));  // Sink_0[2:]
    CHECK(sink_rate(P, 0.05) == Approx(1.0));             // 0.0741 > 0.05
    CHECK(sink_rate(P, 1.0) == 0.0);                      // strict: alpha > eps
    const RowMatrix<double> tab = importance_table(P);
    CHECK(tab.rows() == 3);
    CHECK(tab(2, 0) == 1.0);
}

TEST_CASE("sink geometry: sum_k (T-k) alpha_k = T and the sink rate is monotone in eps", "[theory][property]") {
    // Statement G5: every row of a causal pattern sums to 1, so sum_k sum_{t>=k} A[t,k] = T; the
    // rate is a fraction in [0, 1], non-increasing in eps and in the starting layer's coverage.
    property("importance identity and rate monotonicity", [] {
        const int T = *rc::gen::inRange(1, 40);
        const int L = *rc::gen::inRange(1, 4);
        const int H = *rc::gen::inRange(1, 4);
        std::vector<std::vector<RowMatrix<double>>> P(static_cast<std::size_t>(L));
        for (auto& layer : P)
            for (int h = 0; h < H; ++h) layer.push_back(*gen::causal_pattern(T));
        double total = 0;
        for (Index k = 0; k < T; ++k) total += (T - k) * sink_importance(P[0][0], k);
        RC_ASSERT(std::abs(total - T) <= 1e-12 * T);
        double prev = 2.0;
        for (double eps : {0.0, 0.1, 0.3, 0.5, 0.9, 1.0}) {
            const double r = sink_rate(P, eps);
            RC_ASSERT(r >= 0.0 && r <= 1.0);
            RC_ASSERT(r <= prev);
            prev = r;
        }
        // The full rate is the head-weighted mean of the per-layer rates.
        double mean = 0;
        for (int l = 0; l < L; ++l) {
            std::vector<std::vector<RowMatrix<double>>> one = {P[static_cast<std::size_t>(l)]};
            mean += sink_rate(one) / L;
        }
        RC_ASSERT(std::abs(mean - sink_rate(P)) <= 1e-12);
    });
    // The count is 0-based: weighting alpha_k by the paper's 1-based T - k + 1 breaks the identity.
    refute("sum_k (T-k+1) alpha_k = T", [] {
        const int T = *rc::gen::inRange(1, 40);
        const RowMatrix<double> A = *gen::causal_pattern(T);
        double total = 0;
        for (Index k = 0; k < T; ++k) total += (T - k + 1) * sink_importance(A, k);
        RC_ASSERT(std::abs(total - T) <= 1e-12 * T);
    });
}

TEST_CASE("sink geometry: the energy share of noisy planted keys in S tends to 1 as the noise vanishes",
          "[theory][property]") {
    // Statement G7 (i): keys K = C B^T + sigma G, B (d_h, 2) orthonormal (the planted plane S), C (N, 2),
    // G (N, d_h). S is given by a spanning set that is neither orthonormal nor independent (B M and a
    // redundant column). Exactly 1 - share = sigma^2 ||G B_perp||_F^2 / ||K||_F^2 (peer: the complement
    // B_perp of the drawn orthogonal matrix), and by the triangle inequality (||C B^T||_F = ||C||_F)
    //     1 - share <= sigma^2 ||G||^2 / (||C|| - sigma ||G||)^2   when sigma ||G|| < ||C||,
    // so share -> 1 as O(sigma^2); share = 1 at sigma = 0.
    property("planted keys: 1 - share = sigma^2 ||G B_perp||^2 / ||K||^2 -> 0", [] {
        const int d = *rc::gen::inRange(3, 25);
        const int N = *rc::gen::inRange(2, 41);
        const Eigen::MatrixXd Qd = *gen::orthogonal(d);
        const Eigen::MatrixXd B = Qd.leftCols(2), Bperp = Qd.rightCols(d - 2);
        const RowMatrix<double> C = *gen::matrix(N, 2);
        const RowMatrix<double> G = *gen::matrix(N, d);
        const Eigen::Matrix2d M = Eigen::Matrix2d::Identity() + Eigen::Matrix2d(RowMatrix<double>(*gen::matrix(2, 2, 0.5)));
        RC_PRE(C.norm() > 0.0 && std::abs(M.determinant()) >= 0.1);  // planted signal; M invertible
        Eigen::MatrixXd spanning(d, 3);
        spanning << B * M, B * (M.col(0) - 2.0 * M.col(1));
        const double c = C.norm(), g = G.norm();
        for (int j = 0; j <= 40; j += 4) {
            const double sigma = j == 40 ? 0.0 : std::ldexp(1.0, 2 - j);  // 4, 1/4, 1/64, ..., 2^-34, then 0
            const RowMatrix<double> K = C * B.transpose() + sigma * G;
            const double share = subspace_energy_share(K, spanning);
            const double outside = sigma * sigma * (G * Bperp).squaredNorm() / K.squaredNorm();
            RC_ASSERT(share >= 0.0 && share <= 1.0);
            RC_ASSERT(std::abs((1.0 - share) - outside) <= 64.0 * d * kEps);
            if (sigma * g < c) RC_ASSERT(1.0 - share <= sigma * sigma * g * g / ((c - sigma * g) * (c - sigma * g)) + 64.0 * d * kEps);
            if (sigma == 0.0) RC_ASSERT(share >= 1.0 - 64.0 * d * kEps);
        }
    });
    // Outside the premise: keys planted in another plane S' (sharing one direction with S) keep a share
    // below 1 without noise.
    refute("share = 1 for noiseless keys planted in another plane", [] {
        const int d = *rc::gen::inRange(3, 25);
        const Eigen::MatrixXd Qd = *gen::orthogonal(d);
        Eigen::MatrixXd other(d, 2);
        other << Qd.col(0), Qd.col(2);
        const RowMatrix<double> K = *gen::matrix(*rc::gen::inRange(2, 41), 2) * other.transpose();
        RC_PRE(K.norm() > 0.0);
        RC_ASSERT(subspace_energy_share(K, Qd.leftCols(2)) >= 1.0 - 64.0 * d * kEps);
    });
}

TEST_CASE("sink geometry: the energy share of isotropic keys in S is dim(S)/d_h, within 6 sd", "[theory][property]") {
    // Statement G7 (ii): keys G (N, d_h) with iid entries of variance v (gen::real: a symmetric discrete
    // uniform, fourth moment 9/5 v^2 <= 3 v^2). With P the projector on S (dim r) and M = P - (r/d_h) I:
    //     share - r/d_h = Z / ||G||_F^2,  Z = sum_t g_t^T M g_t,  E Z = v tr M = 0,
    //     Var Z = N [(mu_4 - 3 v^2) sum_i M_ii^2 + 2 v^2 tr M^2] <= 2 N v^2 r (1 - r/d_h)
    // (tr M^2 = r (1 - r/d_h)^2 + (d_h - r)(r/d_h)^2). Z is a sum of N iid bounded terms: asserted
    // |Z| <= 6 sd. The closed form planted_energy_share(0, v, r, d_h) is r/d_h.
    property("isotropic keys: share = r / d_h", [] {
        const int d = *rc::gen::inRange(2, 33);
        const int r = *rc::gen::inRange(1, d + 1);
        const int N = *rc::gen::inRange(16, 121);
        const double sd = std::pow(10.0, *gen::integer(-3, 3));
        const Eigen::MatrixXd basis = Eigen::MatrixXd(*gen::orthogonal(d)).leftCols(r);
        const RowMatrix<double> G = *gen::matrix(N, d, sd);
        RC_PRE(G.cwiseAbs().maxCoeff() > 0.0);
        const double v = gen::real_variance(sd), ratio = double(r) / d;
        const double share = subspace_energy_share(G, basis);
        const double Z_bound = 6.0 * std::sqrt(2.0 * N * r * (1.0 - ratio)) * v;
        RC_ASSERT(std::abs(share - ratio) * G.squaredNorm() <= Z_bound + 64.0 * d * kEps * G.squaredNorm());
        RC_ASSERT(std::abs(planted_energy_share(0.0, v, r, d) - ratio) <= 1e-15);
    });
    // Outside the premise: noise 3 times larger inside S (variance 9 v there) is not isotropic, and its
    // share, 9r / (9r + d_h - r) in expectation, leaves the 6 sd band around r / d_h.
    refute("anisotropic keys: share = r / d_h", [] {
        const int d = *rc::gen::inRange(2, 33);
        const int r = *rc::gen::inRange(1, d);
        const int N = *rc::gen::inRange(16, 121);
        const Eigen::MatrixXd basis = Eigen::MatrixXd(*gen::orthogonal(d)).leftCols(r);
        RowMatrix<double> G = *gen::matrix(N, d);
        G += 2.0 * G * basis * basis.transpose();
        RC_PRE(G.cwiseAbs().maxCoeff() > 0.0);
        const double v = gen::real_variance(1.0), ratio = double(r) / d;
        const double share = subspace_energy_share(G, basis);
        RC_ASSERT(std::abs(share - ratio) * G.squaredNorm() <= 6.0 * std::sqrt(2.0 * N * r * (1.0 - ratio)) * v);
    });
}

TEST_CASE("sink geometry: planted sink keys have a larger energy share in S than ordinary keys, and the closed form",
          "[theory][property]") {
    // Statement G7 (iii): sink keys K = C B^T + G in the planted plane S (B (d_h, 2) orthonormal, C (N, 2)
    // given, G iid entries of variance v = sigma^2), ordinary keys O isotropic. Given C, with
    // E = planted_energy_share(||C||^2 / N, v, 2, d_h) = (||C||^2 + 2 N v) / (||C||^2 + d_h N v):
    //     (share - E) ||K||^2 = W = (1 - E) 2<C, G B> + sum_t g_t^T (P - E I) g_t + const, E W = 0,
    //     Var W <= 4 (1 - E)^2 v ||C||^2 + 2 N v^2 (2 (1 - E)^2 + (d_h - 2) E^2)
    // (the linear and quadratic terms are uncorrelated: the entries are symmetric). Asserted |W| <= 6 sd.
    // Premise of the comparison: the realised signal energy per key ||C||^2 / N >= 1 >= 4 d_h v (noise
    // at most a quarter of the signal), d_h >= 4, N >= 64 keys: then E >= 0.9 while the ordinary share is
    // 2/d_h <= 1/2 within 6 sd <= 0.27, so share(sink) > share(ordinary).
    property("planted sink keys: share(sink) > share(ordinary), and share(sink) = E within 6 sd", [] {
        const int d = *rc::gen::inRange(4, 33);
        const int N = *rc::gen::inRange(64, 129);
        const Eigen::MatrixXd B = Eigen::MatrixXd(*gen::orthogonal(d)).leftCols(2);
        const RowMatrix<double> C = *gen::matrix(N, 2);
        const double sigma = *gen::real_in(0.0, 0.5) / std::sqrt(double(d));
        const RowMatrix<double> G = *gen::matrix(N, d, sigma);
        const RowMatrix<double> O = *gen::matrix(N, d, std::pow(10.0, *gen::integer(-2, 2)));
        RC_PRE(C.squaredNorm() >= double(N));
        const RowMatrix<double> K = C * B.transpose() + G;
        const double v = gen::real_variance(sigma), e = C.squaredNorm() / N;
        const double E = (e + 2.0 * v) / (e + d * v);
        RC_ASSERT(std::abs(planted_energy_share(e, v, 2, d) - E) <= 1e-15);
        const double share_sink = subspace_energy_share(K, B), share_ordinary = subspace_energy_share(O, B);
        const double var_W = 4.0 * (1 - E) * (1 - E) * v * C.squaredNorm() +
                             2.0 * N * v * v * (2.0 * (1 - E) * (1 - E) + (d - 2) * E * E);
        RC_ASSERT(std::abs(share_sink - E) * K.squaredNorm() <= 6.0 * std::sqrt(var_W) + 64.0 * d * kEps * K.squaredNorm());
        RC_ASSERT(share_sink > share_ordinary);
    });
    // Outside the premise: sink keys without the planted signal (isotropic like the ordinary ones).
    refute("share(sink) > share(ordinary) without a planted signal", [] {
        const int d = *rc::gen::inRange(4, 33);
        const int N = *rc::gen::inRange(64, 129);
        const Eigen::MatrixXd B = Eigen::MatrixXd(*gen::orthogonal(d)).leftCols(2);
        const RowMatrix<double> K = *gen::matrix(N, d), O = *gen::matrix(N, d);
        RC_ASSERT(subspace_energy_share(K, B) > subspace_energy_share(O, B));
    });
}

TEST_CASE("sink geometry: bad input throws sinkscope::Error", "[theory]") {
    CHECK_THROWS_WITH(sink_mass_from_logits(Eigen::VectorXd::Ones(1)), Catch::Contains("at least 2"));
    Eigen::VectorXd z(3);
    z << 1, std::numeric_limits<double>::quiet_NaN(), 0;
    CHECK_THROWS_WITH(sink_mass_from_logits(z), Catch::Contains("non-finite"));
    CHECK_THROWS_AS(sink_mass_from_logits(Eigen::VectorXd::Ones(3), 3), Error);
    CHECK_THROWS_AS(sink_mass_by_row(RowMatrix<double>::Zero(3, 4)), Error);
    RowMatrix<double> S = RowMatrix<double>::Zero(3, 3);
    S(2, 1) = std::numeric_limits<double>::infinity();
    CHECK_THROWS_AS(sink_mass_by_row(S), Error);
    CHECK_THROWS_WITH(sink_key_subspace(RowMatrix<double>::Zero(4, 3)), Catch::Contains("zero"));
    CHECK_THROWS_AS(sink_key_subspace(RowMatrix<double>::Ones(4, 3), 0.0), Error);
    CHECK_THROWS_AS(sink_key_subspace(RowMatrix<double>::Ones(4, 3), 0.9, true), Error);  // all keys equal
    const Eigen::MatrixXd B = Eigen::MatrixXd::Identity(3, 1);
    // A head whose queries are all zero attends uniformly: its alignment is undefined (NaN), not an error,
    // and a zero query among others is left out of the mean.
    CHECK(std::isnan(query_alignment(RowMatrix<double>::Zero(2, 3), B)));
    RowMatrix<double> one_zero = RowMatrix<double>::Zero(2, 3);
    one_zero(1, 0) = 2.0;  // along B
    CHECK(query_alignment(one_zero, B) == 1.0);
    const SinkHeadScore uniform = predict_sink_head(RowMatrix<double>::Zero(4, 3), RowMatrix<double>::Identity(3, 3),
                                                    RowMatrix<double>::Identity(3, 3) * 2.0);
    CHECK(std::isnan(uniform.sink_alignment));
    CHECK_FALSE(uniform.predicted);
    CHECK_THROWS_AS(query_alignment(RowMatrix<double>::Ones(2, 4), B), Error);
    CHECK_THROWS_WITH(query_alignment(RowMatrix<double>::Ones(2, 3), Eigen::MatrixXd::Ones(3, 1)),
                      Catch::Contains("orthonormal"));
    RowMatrix<double> A = RowMatrix<double>::Identity(4, 4);
    CHECK_THROWS_AS(sink_importance(A, 4), Error);
    RowMatrix<double> bad = A;
    bad(1, 3) = 0.5;
    bad(1, 1) = 0.5;
    CHECK_THROWS_WITH(sink_importance(bad), Catch::Contains("not causal"));
    std::vector<std::vector<RowMatrix<double>>> ragged = {{A, A}, {A}};
    CHECK_THROWS_WITH(sink_rate(ragged), Catch::Contains("heads"));
    std::vector<std::vector<RowMatrix<double>>> P = {{A}, {bad}};
    CHECK_THROWS_WITH(sink_rate(P), Catch::Contains("layer 1, head 0"));
    std::vector<std::vector<RowMatrix<double>>> ok = {{A}};
    CHECK_THROWS_AS(sink_rate(ok, 0.3, 0, 1), Error);
    CHECK_THROWS_AS(sink_rate(ok, std::numeric_limits<double>::quiet_NaN()), Error);
    // G6
    CHECK_THROWS_AS(logit_gap(Eigen::Vector3d::Ones(), Eigen::Vector2d::Ones(), Eigen::Vector3d::Ones()), Error);
    CHECK_THROWS_WITH(causal_logit_gaps(RowMatrix<double>::Ones(1, 3), RowMatrix<double>::Ones(1, 3), Eigen::Vector3d::Ones()),
                      Catch::Contains("at least 2"));
    CHECK_THROWS_AS(causal_logit_gaps(RowMatrix<double>::Ones(3, 3), RowMatrix<double>::Ones(4, 3), Eigen::Vector3d::Ones()), Error);
    CHECK_THROWS_AS(mean_field_alpha0(0.0, 0), Error);
    CHECK_THROWS_AS(mean_field_alpha0(std::numeric_limits<double>::quiet_NaN(), 8), Error);
    CHECK_THROWS_AS(key_dimension(RowMatrix<double>::Ones(4, 3), 0.9, true), Error);  // all keys equal
    // G7
    CHECK_THROWS_WITH(subspace_energy_share(RowMatrix<double>::Zero(4, 3), B), Catch::Contains("all keys are zero"));
    CHECK_THROWS_WITH(subspace_energy_share(RowMatrix<double>::Ones(4, 3), Eigen::MatrixXd::Zero(3, 2)),
                      Catch::Contains("every basis column is zero"));
    CHECK_THROWS_AS(subspace_energy_share(RowMatrix<double>::Ones(4, 3), Eigen::MatrixXd::Ones(4, 1)), Error);
    RowMatrix<double> nan_keys = RowMatrix<double>::Ones(2, 3);
    nan_keys(1, 2) = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_WITH(subspace_energy_share(nan_keys, B), Catch::Contains("non-finite"));
    CHECK_THROWS_AS(planted_energy_share(-1.0, 1.0, 1, 3), Error);
    CHECK_THROWS_AS(planted_energy_share(1.0, 1.0, 4, 3), Error);
    CHECK_THROWS_AS(planted_energy_share(0.0, 0.0, 1, 3), Error);
}

TEST_CASE("sink geometry: energy share in a subspace, by hand", "[theory]") {
    // Statement G7 on keys whose projections are known: S = span{e_0, e_0 + e_1} = span{e_0, e_1} in R^3.
    RowMatrix<double> K(3, 3);
    K << 1, 0, 0,   // inside: energy 1 of 1
         0, 3, 4,   // inside 9 of 25
         0, 0, 2;   // inside 0 of 4
    Eigen::MatrixXd spanning(3, 2);
    spanning << 1, 1,  0, 1,  0, 0;
    CHECK(subspace_energy_share(K, spanning) == Approx(10.0 / 30.0).epsilon(1e-15));
    CHECK(orthonormal_span(spanning).cols() == 2);
    Eigen::MatrixXd redundant(3, 3);
    redundant << 1, 1, 2,  0, 1, 1,  0, 0, 0;  // third column = first + second: rank 2
    CHECK(orthonormal_span(redundant).cols() == 2);
    CHECK(subspace_energy_share(K, redundant) == Approx(10.0 / 30.0).epsilon(1e-15));
    CHECK(subspace_energy_share(RowMatrix<double>(1e200 * K), spanning) == Approx(10.0 / 30.0).epsilon(1e-15));  // no overflow
    CHECK(subspace_energy_share(K, Eigen::MatrixXd::Identity(3, 3)) == 1.0);
    CHECK(planted_energy_share(2.0, 0.5, 2, 6) == Approx((2.0 + 1.0) / (2.0 + 3.0)).epsilon(1e-15));
}

