// Tests of include/sinkscope/theory/quadratic_ffn.hpp; statements in theory/quadratic_ffn.md.
// Peers: U_k formed densely (channel_matrix_dense is a one-line product, checked itself against the
// definition as a sum of rank-one terms) and Eigen's SelfAdjointEigenSolver. Properties: seed
// kTheorySeed, 1000 cases each.
#include <catch2/catch.hpp>

#include <sinkscope/theory/quadratic_ffn.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "theory/property.hpp"

using namespace sinkscope::theory;
using sinkscope::Error;
using sinkscope::test::engine;
using sinkscope::test::gaussian_matrix;
using sinkscope::test::property;

namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();

struct RandomFfn {
    RowMatrix<double> gate, up, down;
};

RandomFfn random_ffn(std::mt19937_64& rng, Index d, Index dff, double scale = 1.0) {
    RandomFfn f;
    f.gate = gaussian_matrix<double>(rng, dff, d, scale / std::sqrt(double(d)));
    f.up = gaussian_matrix<double>(rng, dff, d, scale / std::sqrt(double(d)));
    f.down = gaussian_matrix<double>(rng, d, dff, 1.0 / std::sqrt(double(dff)));
    return f;
}

// U_k by its definition, a sum of d_ff rank-one matrices.
Eigen::MatrixXd U_by_definition(const RandomFfn& f, Index k) {
    const Index d = f.gate.cols();
    Eigen::MatrixXd U = Eigen::MatrixXd::Zero(d, d);
    for (Index i = 0; i < f.gate.rows(); ++i)
        U += f.down(k, i) * f.gate.row(i).transpose() * f.up.row(i);
    return U;
}

}  // namespace

TEST_CASE("quadratic FFN: matrix-free ||U_k||_F equals the Frobenius norm of the dense U_k", "[theory][property]") {
    // Statement Q1 (Hadamard-Gram identity), any block size, including blocks that do not divide d_ff.
    property("channel_frobenius_norms matches the definition", [] {
        const int d = *rc::gen::inRange(1, 13);
        const int dff = *rc::gen::inRange(1, 31);
        const int block = *rc::gen::inRange(1, 41);
        const auto seed = *rc::gen::arbitrary<std::uint64_t>();
        auto rng = engine(seed);
        const RandomFfn f = random_ffn(rng, d, dff);
        const SwiGluWeights<double> W(f.gate, f.up, f.down);
        const Eigen::VectorXd norms = channel_frobenius_norms(W, block);
        for (Index k = 0; k < d; ++k) {
            const Eigen::MatrixXd U = U_by_definition(f, k);
            // ||U_k||_F <= M_k = sum_i |w_i| ||a_i|| ||b_i||; both sides carry O((d + d_ff) eps M_k^2) rounding.
            double M = 0;
            for (Index i = 0; i < dff; ++i) M += std::abs(f.down(k, i)) * f.gate.row(i).norm() * f.up.row(i).norm();
            RC_ASSERT(std::abs(norms[k] * norms[k] - U.squaredNorm()) <= 4.0 * (d + dff + 4) * kEps * M * M);
            RC_ASSERT((channel_matrix_dense(W, k) - U).norm() <= 4.0 * (dff + 2) * kEps * M);
        }
    });
}

TEST_CASE("quadratic FFN: float matrix-free norms agree with double at d 64, d_ff 224", "[theory]") {
    auto rng = engine(7);
    const RandomFfn f = random_ffn(rng, 64, 224);
    const SwiGluWeights<double> Wd(f.gate, f.up, f.down);
    const RowMatrix<float> gf = f.gate.cast<float>(), uf = f.up.cast<float>(), df = f.down.cast<float>();
    const SwiGluWeights<float> Wf(gf, uf, df);
    const Eigen::VectorXd nd = channel_frobenius_norms(Wd, 50);
    const Eigen::VectorXf nf = channel_frobenius_norms(Wf, 64);
    // float: inputs rounded at 6e-8 relative, sums of ~d_ff^2 positive-dominated terms.
    CHECK((nf.cast<double>() - nd).cwiseAbs().maxCoeff() <= 1e-4 * nd.maxCoeff());
}

TEST_CASE("quadratic FFN: Lanczos eigenpairs of S_k match Eigen's SelfAdjointEigenSolver", "[theory]") {
    // Statement Q2: the operator x -> S_k x is S_k, and Spectra returns its extreme eigenpairs.
    for (int d : {8, 24, 40}) {
        for (int dff : {3, 64}) {
            auto rng = engine(100 + d + dff);
            const RandomFfn f = random_ffn(rng, d, dff);
            const SwiGluWeights<double> W(f.gate, f.up, f.down);
            for (Index k : {Index(0), Index(d - 1)}) {
                const Eigen::MatrixXd U = U_by_definition(f, k);
                const Eigen::MatrixXd S = 0.5 * (U + U.transpose());
                Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> dense(S);
                const Eigen::VectorXd ev = dense.eigenvalues();  // ascending
                const double scale = ev.cwiseAbs().maxCoeff();
                for (SpectrumRule rule : {SpectrumRule::largest_magnitude, SpectrumRule::largest_algebraic,
                                          SpectrumRule::smallest_algebraic}) {
                    const Index nev = std::min<Index>(5, d - 1);
                    SpectrumOptions opt;
                    opt.nev = nev;
                    opt.rule = rule;
                    const auto spec = channel_spectrum(W, k, opt);
                    // Reference order.
                    std::vector<Index> idx(static_cast<std::size_t>(d));
                    std::iota(idx.begin(), idx.end(), Index(0));
                    std::stable_sort(idx.begin(), idx.end(), [&](Index a, Index b) {
                        if (rule == SpectrumRule::largest_magnitude) return std::abs(ev[a]) > std::abs(ev[b]);
                        if (rule == SpectrumRule::largest_algebraic) return ev[a] > ev[b];
                        return ev[a] < ev[b];
                    });
                    CAPTURE(d, dff, k, int(rule));
                    for (Index j = 0; j < nev; ++j) {
                        const Index r = idx[static_cast<std::size_t>(j)];
                        CHECK(std::abs(spec.eigenvalues[j] - ev[r]) <= 1e-8 * scale);
                        CHECK(spec.residuals[j] <= 1e-7 * scale);
                        // Eigenvector comparison where the eigenvalue is separated from the others.
                        double gap = std::numeric_limits<double>::infinity();
                        for (Index i = 0; i < d; ++i)
                            if (i != r) gap = std::min(gap, std::abs(ev[i] - ev[r]));
                        if (gap > 1e-3 * scale)
                            CHECK(std::abs(spec.eigenvectors.col(j).dot(dense.eigenvectors().col(r))) >= 1 - 1e-8);
                    }
                    CHECK(spec.lambda_star() == spec.eigenvalues[0]);
                }
            }
        }
    }
}

TEST_CASE("quadratic FFN: Lanczos in float agrees with the dense double spectrum", "[theory]") {
    auto rng = engine(11);
    const RandomFfn f = random_ffn(rng, 48, 160);
    const RowMatrix<float> gf = f.gate.cast<float>(), uf = f.up.cast<float>(), df = f.down.cast<float>();
    const SwiGluWeights<float> W(gf, uf, df);
    const Eigen::MatrixXd U = U_by_definition(f, 3);
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> dense(0.5 * (U + U.transpose()));
    SpectrumOptions opt;
    opt.nev = 4;
    const auto spec = channel_spectrum(W, 3, opt);
    Eigen::VectorXd mags = dense.eigenvalues().cwiseAbs();
    std::sort(mags.data(), mags.data() + mags.size(), std::greater<double>());
    for (Index j = 0; j < 4; ++j) CHECK(std::abs(std::abs(double(spec.eigenvalues[j])) - mags[j]) <= 1e-4 * mags[0]);
}

TEST_CASE("quadratic FFN: Q_k(h) = h^T U_k h = h^T S_k h, and |F_k - Q_k| <= B_k <= coarse bound",
          "[theory][property]") {
    // Statements Q3 (the quadratic form) and Q4 (the SiLU bound), on random weights and activations,
    // half of the cases with the gate rows tilted towards h so that the gates run positive
    // (the near-identity regime of spike tokens).
    property("SiLU linearisation bound holds", [] {
        const int d = *rc::gen::inRange(1, 13);
        const int dff = *rc::gen::inRange(1, 33);
        const int n = *rc::gen::inRange(1, 5);
        const int log_scale = *rc::gen::inRange(-3, 3);
        const bool tilt = *rc::gen::arbitrary<bool>();
        const auto seed = *rc::gen::arbitrary<std::uint64_t>();
        auto rng = engine(seed);
        RandomFfn f = random_ffn(rng, d, dff);
        const RowMatrix<double> H = gaussian_matrix<double>(rng, n, d, std::pow(10.0, log_scale));
        if (tilt) {
            std::uniform_real_distribution<double> C(1.0, 12.0);
            const Eigen::RowVectorXd h = H.row(0);
            for (Index i = 0; i < dff; ++i) f.gate.row(i) += C(rng) * h / std::max(h.squaredNorm(), 1e-300);
        }
        const SwiGluWeights<double> W(f.gate, f.up, f.down);
        const RowMatrix<double> F = swiglu_forward(W, H);
        const RowMatrix<double> Q = quadratic_form_forward(W, H);
        const RowMatrix<double> B = silu_linearisation_bound(W, H);
        const RowMatrix<double> Bc = silu_linearisation_bound_coarse(W, H);
        const RowMatrix<double> G = H * f.gate.transpose();
        const RowMatrix<double> Uu = H * f.up.transpose();
        for (Index t = 0; t < n; ++t) {
            const Eigen::VectorXd h = H.row(t).transpose();
            double gmin = G.row(t).minCoeff();
            for (Index k = 0; k < d; ++k) {
                const Eigen::MatrixXd U = U_by_definition(f, k);
                const double M = (f.down.row(k).cwiseAbs().array() * G.row(t).cwiseAbs().array() *
                                  Uu.row(t).cwiseAbs().array()).sum();
                const double tol = 4.0 * (d + dff + 8) * kEps * (M + std::abs(h.dot(U * h)) + 1e-300);
                RC_ASSERT(std::abs(Q(t, k) - h.dot(U * h)) <= tol);                              // Q3
                RC_ASSERT(std::abs(Q(t, k) - h.dot(0.5 * (U + U.transpose()) * h)) <= tol);      // Q3
                RC_ASSERT(std::abs(F(t, k) - Q(t, k)) <= B(t, k) + tol);                         // Q4 (i)
                RC_ASSERT(B(t, k) <= Bc(t, k) * (1 + 1e-12) + 1e-300);                           // Q4 (ii)
                const double sum_abs = (f.down.row(k).cwiseAbs().array() * Uu.row(t).cwiseAbs().array()).sum();
                if (gmin >= 1.0)                                                                 // Q4 (iii)
                    RC_ASSERT(std::abs(F(t, k) - Q(t, k)) <= sum_abs * gmin * std::exp(-gmin) + tol);
                if (gmin >= 0.0)                                                                 // Q4 (iv)
                    RC_ASSERT(std::abs(F(t, k) - Q(t, k)) <= sum_abs * kSiluDepartureMaxNonnegative + tol);
            }
        }
    });
}

TEST_CASE("quadratic FFN: the SiLU bound is attained when d_ff = 1", "[theory]") {
    // Statement Q4 is sharp: with one hidden unit the triangle inequality is an equality.
    auto rng = engine(5);
    for (int rep = 0; rep < 50; ++rep) {
        const RandomFfn f = random_ffn(rng, 6, 1, 3.0);
        const SwiGluWeights<double> W(f.gate, f.up, f.down);
        const RowMatrix<double> H = gaussian_matrix<double>(rng, 3, 6);
        const RowMatrix<double> err = (swiglu_forward(W, H) - quadratic_form_forward(W, H)).cwiseAbs();
        const RowMatrix<double> B = silu_linearisation_bound(W, H);
        CHECK((err - B).cwiseAbs().maxCoeff() <= 1e-12 * (1 + B.maxCoeff()));
    }
}

TEST_CASE("quadratic FFN: W(1/e) is the largest departure of SiLU from the identity for g >= 0", "[theory]") {
    // Statement Q4 (iv): max_{g >= 0} g sigma(-g) = W(1/e), attained at g = 1 + W(1/e).
    const double w = kSiluDepartureMaxNonnegative;
    CHECK(silu_departure(1.0 + w) == Approx(w).epsilon(1e-14));
    double best = 0;
    for (int i = 0; i <= 200000; ++i) best = std::max(best, silu_departure(i * 50.0 / 200000));
    CHECK(best <= w * (1 + 1e-15));
    CHECK(best >= w * (1 - 1e-8));
    // w e^w = 1/e (Lambert W).
    CHECK(w * std::exp(w) == Approx(std::exp(-1.0)).epsilon(1e-15));
    // For g >= 1, g sigma(-g) <= g e^{-g}, decreasing.
    for (double g = 1.0; g < 40.0; g += 0.01) CHECK(silu_departure(g) <= g * std::exp(-g));
}

TEST_CASE("quadratic FFN: |Q_k - lambda* (s*^T h)^2| <= |lambda_2| (||h||^2 - (s*^T h)^2)", "[theory][property]") {
    // Statement Q5, with lambda*, lambda_2 from the Lanczos solver; chained with Q4 it bounds the
    // error of the paper's prediction F_k ~ lambda* (s*^T h)^2.
    property("rank-one prediction bound holds", [] {
        const int d = *rc::gen::inRange(3, 17);
        const int dff = *rc::gen::inRange(1, 40);
        const auto seed = *rc::gen::arbitrary<std::uint64_t>();
        auto rng = engine(seed);
        const RandomFfn f = random_ffn(rng, d, dff);
        const SwiGluWeights<double> W(f.gate, f.up, f.down);
        const Index k = static_cast<Index>(seed % static_cast<std::uint64_t>(d));
        SpectrumOptions opt;
        opt.nev = 2;
        const auto spec = channel_spectrum(W, k, opt);
        const RowMatrix<double> H = gaussian_matrix<double>(rng, 3, d);
        const Eigen::VectorXd pred = rank_one_forward(spec, H);
        const Eigen::VectorXd bound = rank_one_error_bound(spec, H);
        const RowMatrix<double> Q = quadratic_form_forward(W, H);
        const RowMatrix<double> F = swiglu_forward(W, H);
        const RowMatrix<double> B = silu_linearisation_bound(W, H);
        const double lam = std::abs(spec.lambda_star());
        for (Index t = 0; t < 3; ++t) {
            // Eigen-solver accuracy: residual r gives eigenvalue and quadratic-form errors O(r ||h||^2).
            const double tol = (1e-7 * lam + 4 * spec.residuals.maxCoeff()) * H.row(t).squaredNorm() + 1e-14;
            RC_ASSERT(std::abs(Q(t, k) - pred[t]) <= bound[t] + tol);
            RC_ASSERT(std::abs(F(t, k) - pred[t]) <= B(t, k) + bound[t] + tol + 1e-12 * std::abs(F(t, k)));
        }
    });
}

TEST_CASE("quadratic FFN: planted spike channels are detected, with lambda*, s* and alignment recovered", "[theory]") {
    // Statement Q6 on a planted structure: hidden units I write beta_k s s^T into channels K, so
    // U_k = beta_k |I| s s^T + (random part) for k in K; ||U_k||_F stands far above the median.
    auto rng = engine(42);
    const Index d = 32, dff = 96;
    RandomFfn f = random_ffn(rng, d, dff, 0.3);
    Eigen::VectorXd s = sinkscope::test::gaussian_vector<double>(rng, d);
    s.normalize();
    const std::vector<Index> K = {5, 17};
    const std::vector<double> beta = {3.0, -2.0};
    for (Index i = 0; i < 8; ++i) {
        f.gate.row(i) = s.transpose();
        f.up.row(i) = s.transpose();
        for (std::size_t a = 0; a < K.size(); ++a) f.down(K[a], i) = beta[a];
    }
    const SwiGluWeights<double> W(f.gate, f.up, f.down);
    const Eigen::VectorXd norms = channel_frobenius_norms(W);
    const std::vector<Index> spikes = detect_spike_channels(norms, 10.0);
    REQUIRE(spikes == std::vector<Index>{5, 17});  // sorted by decreasing norm (|3| > |-2|)
    std::vector<ChannelSpectrum<double>> spectra;
    SpectrumOptions opt;
    opt.nev = 2;
    for (std::size_t a = 0; a < K.size(); ++a) {
        spectra.push_back(channel_spectrum(W, K[a], opt));
        CHECK(spectra.back().lambda_star() == Approx(8 * beta[a]).epsilon(0.05));  // signed
        CHECK(std::abs(spectra.back().s_star().dot(s)) >= 0.99);
    }
    const RowMatrix<double> A = spike_alignment(spectra);
    CHECK(A(0, 0) == Approx(1.0));
    CHECK(A(0, 1) >= 0.98);
    CHECK(A(1, 0) == Approx(A(0, 1)));
}

TEST_CASE("quadratic FFN: spike-channel rule is > factor x median", "[theory]") {
    Eigen::VectorXd n(6);
    n << 1, 2, 3, 4, 40, 100;  // median 3.5
    CHECK(detect_spike_channels(n, 10.0) == std::vector<Index>{5, 4});
    CHECK(detect_spike_channels(n, 11.5) == std::vector<Index>{5});  // 40 is not > 40.25
    CHECK(detect_spike_channels(n, 1.0) == std::vector<Index>{5, 4, 3});
    Eigen::VectorXd odd(3);
    odd << 1, 2, 25;  // median 2
    CHECK(detect_spike_channels(odd, 12.0) == std::vector<Index>{2});
    CHECK(detect_spike_channels(odd, 12.5).empty());
    CHECK_THROWS_AS(detect_spike_channels(Eigen::VectorXd::Zero(4), 10.0), Error);
    CHECK_THROWS_AS(detect_spike_channels(n, 0.0), Error);
}

TEST_CASE("quadratic FFN: bad input throws sinkscope::Error", "[theory]") {
    auto rng = engine(3);
    RandomFfn f = random_ffn(rng, 6, 10);
    CHECK_THROWS_WITH(SwiGluWeights<double>(f.gate, f.up.leftCols(5), f.down), Catch::Contains("W_up"));
    CHECK_THROWS_WITH(SwiGluWeights<double>(f.gate, f.up, f.down.leftCols(9)), Catch::Contains("W_down"));
    CHECK_THROWS_AS(SwiGluWeights<double>(RowMatrix<double>(0, 6), RowMatrix<double>(0, 6), RowMatrix<double>(6, 0)),
                    Error);
    RandomFfn bad = f;
    bad.up(2, 3) = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_WITH(SwiGluWeights<double>(bad.gate, bad.up, bad.down), Catch::Contains("non-finite"));
    const SwiGluWeights<double> W(f.gate, f.up, f.down);
    CHECK_THROWS_AS(channel_matrix_dense(W, 6), Error);
    CHECK_THROWS_AS(channel_spectrum(W, -1), Error);
    SpectrumOptions opt;
    opt.nev = 6;  // > d - 1
    CHECK_THROWS_WITH(channel_spectrum(W, 0, opt), Catch::Contains("nev"));
    opt.nev = 2;
    opt.ncv = 2;
    CHECK_THROWS_WITH(channel_spectrum(W, 0, opt), Catch::Contains("ncv"));
    RowMatrix<double> H = gaussian_matrix<double>(rng, 2, 5);
    CHECK_THROWS_WITH(swiglu_forward(W, H), Catch::Contains("columns"));
    RowMatrix<double> Hn = gaussian_matrix<double>(rng, 2, 6);
    Hn(1, 1) = std::numeric_limits<double>::infinity();
    CHECK_THROWS_AS(quadratic_form_forward(W, Hn), Error);
    CHECK_THROWS_AS(silu_linearisation_bound(W, Hn), Error);
    const auto spec1 = channel_spectrum(W, 0);  // nev = 1
    CHECK_THROWS_WITH(rank_one_error_bound(spec1, gaussian_matrix<double>(rng, 2, 6)), Catch::Contains("nev >= 2"));
    CHECK_THROWS_AS(rank_one_forward(spec1, gaussian_matrix<double>(rng, 2, 5)), Error);
    // d = 1: no Lanczos iteration possible.
    RowMatrix<double> g1 = gaussian_matrix<double>(rng, 4, 1), u1 = gaussian_matrix<double>(rng, 4, 1),
                      d1 = gaussian_matrix<double>(rng, 1, 4);
    const SwiGluWeights<double> W1(g1, u1, d1);
    CHECK_THROWS_WITH(channel_spectrum(W1, 0), Catch::Contains("d = 1"));
    CHECK(channel_frobenius_norms(W1).size() == 1);  // the norms are still defined for d = 1
    // A zero channel has S_k = 0: eigenvalues 0, no NaN.
    RandomFfn z = f;
    z.down.row(4).setZero();
    const SwiGluWeights<double> Wz(z.gate, z.up, z.down);
    opt = SpectrumOptions{};
    opt.nev = 2;
    const auto zs = channel_spectrum(Wz, 4, opt);
    CHECK(zs.eigenvalues.cwiseAbs().maxCoeff() == 0.0);
    CHECK(zs.eigenvectors.allFinite());
    CHECK(channel_frobenius_norms(Wz)[4] == 0.0);
}

TEST_CASE("quadratic FFN: the multithreaded paths agree with the dense oracle at d 128, d_ff 2048", "[theory]") {
    // Sizes above the OpenMP thresholds of channel_frobenius_norms (d d_ff^2 > 1e7) and of the
    // Lanczos operator (d d_ff >= 2.5e5), so the shared-work code runs when OpenMP is on; the norms
    // must not depend on the block size either.
    auto rng = engine(9);
    const Index d = 128, dff = 2048;
    const RandomFfn f = random_ffn(rng, d, dff);
    const SwiGluWeights<double> W(f.gate, f.up, f.down);
    const Eigen::VectorXd norms = channel_frobenius_norms(W, 1024);
    const Eigen::VectorXd norms_b = channel_frobenius_norms(W, 700);
    CHECK((norms - norms_b).cwiseAbs().maxCoeff() <= 1e-12 * norms.maxCoeff());
    for (Index k : {Index(0), Index(71), Index(127)}) {
        const Eigen::MatrixXd U = channel_matrix_dense(W, k);
        CHECK(norms[k] == Approx(U.norm()).epsilon(1e-12));
    }
    const Eigen::MatrixXd U = channel_matrix_dense(W, 7);
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> dense(0.5 * (U + U.transpose()), Eigen::EigenvaluesOnly);
    Eigen::VectorXd mags = dense.eigenvalues().cwiseAbs();
    std::sort(mags.data(), mags.data() + mags.size(), std::greater<double>());
    SpectrumOptions opt;
    opt.nev = 3;
    const auto spec = channel_spectrum(W, 7, opt);
    for (Index j = 0; j < 3; ++j) CHECK(std::abs(spec.eigenvalues[j]) == Approx(mags[j]).epsilon(1e-8));
}
