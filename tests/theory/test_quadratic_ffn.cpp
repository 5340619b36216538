// Tests of include/sinkscope/theory/quadratic_ffn.hpp; statements in theory/quadratic_ffn.md.
// Peers: U_k formed densely (channel_matrix_dense is a one-line product, checked itself against the
// definition as a sum of rank-one terms) and Eigen's SelfAdjointEigenSolver. Properties: seed
// kTheorySeed, 1000 cases each (200 for the planted spectra); weights and activations are drawn by
// rapidcheck (property.hpp's gen::), so a failure shrinks to a small counter-example.
#include <catch2/catch.hpp>

#include <sinkscope/theory/quadratic_ffn.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <vector>

#include "theory/property.hpp"

using namespace sinkscope::theory;
using sinkscope::Error;
using sinkscope::test::engine;
using sinkscope::test::gaussian_matrix;
using sinkscope::test::property;
namespace gen = sinkscope::test::gen;

namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();

struct RandomFfn {
    RowMatrix<double> gate, up, down;
};

// Fixed examples (a seeded engine, see property.hpp's legacy path).
RandomFfn random_ffn(std::mt19937_64& rng, Index d, Index dff, double scale = 1.0) {
    RandomFfn f;
    f.gate = gaussian_matrix<double>(rng, dff, d, scale / std::sqrt(double(d)));
    f.up = gaussian_matrix<double>(rng, dff, d, scale / std::sqrt(double(d)));
    f.down = gaussian_matrix<double>(rng, d, dff, 1.0 / std::sqrt(double(dff)));
    return f;
}

// The same inside a property: every weight drawn by rapidcheck (entries shrink towards 0).
RandomFfn drawn_ffn(Index d, Index dff) {
    RandomFfn f;
    f.gate = *gen::matrix(dff, d, 1.0 / std::sqrt(double(d)));
    f.up = *gen::matrix(dff, d, 1.0 / std::sqrt(double(d)));
    f.down = *gen::matrix(d, dff, 1.0 / std::sqrt(double(dff)));
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
        const RandomFfn f = drawn_ffn(d, dff);
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
        const int log_scale = *gen::integer(-3, 2);
        const bool tilt = *gen::bernoulli(0.5);
        RandomFfn f = drawn_ffn(d, dff);
        const RowMatrix<double> H = *gen::matrix(n, d, std::pow(10.0, log_scale));
        if (tilt) {
            const auto C = *rc::gen::container<std::vector<double>>(std::size_t(dff), gen::real_in(1.0, 12.0));
            const Eigen::RowVectorXd h = H.row(0);
            for (Index i = 0; i < dff; ++i) f.gate.row(i) += C[std::size_t(i)] * h / std::max(h.squaredNorm(), 1e-300);
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
                // Rounding scale: sum_i |w_i| (|a_i|^T |h|) (|b_i|^T |h|), not |w_i| |g_i| |u_i|: the dot
                // products g_i = a_i^T h, u_i = b_i^T h may cancel (rapidcheck's shrinking found a case
                // where u_i = -0.00910 + 0.00906 left the old scale 400 times too small).
                const Eigen::VectorXd habs = h.cwiseAbs();
                const double M = (f.down.row(k).cwiseAbs().transpose().array() *
                                  (f.gate.cwiseAbs() * habs).array() * (f.up.cwiseAbs() * habs).array()).sum();
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
        const RandomFfn f = drawn_ffn(d, dff);
        const SwiGluWeights<double> W(f.gate, f.up, f.down);
        const Index k = *gen::integer(0, d - 1);
        SpectrumOptions opt;
        opt.nev = 2;
        const auto spec = channel_spectrum(W, k, opt);
        const RowMatrix<double> H = *gen::matrix(3, d);
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

namespace {

// How the two eigenvalues of largest magnitude of a planted S_k relate (L = |lambda_1|, sign s):
enum class Tie {
    plus_minus,        // lambda_2 = -lambda_1: the top pair by |lambda| is exactly ambiguous
    plus_minus_near,   // lambda_2 = -lambda_1 (1 - delta)
    same_sign_near,    // lambda_2 = lambda_1 (1 - delta): a near-degenerate eigenvalue
    same_sign_exact,   // lambda_2 = lambda_1: a double eigenvalue (any unit vector of its plane is s*)
};

struct PlantedChannel {
    RandomFfn f;
    Index k = 0;
    Eigen::MatrixXd Q;        // (d, d) orthogonal: S_k = Q diag(lambda) Q^T
    Eigen::VectorXd lambda;   // lambda_1, lambda_2 the planted top pair, |lambda_j| <= 0.8 L for j >= 3
};

// SwiGLU weights whose channel k has a planted spectrum: hidden unit j has gate row c_j q_j^T,
// up row q_j^T / c_j and W_down[k, j] = lambda_j, so it adds lambda_j q_j q_j^T to U_k; m pairs of
// units (a, b, w) and (b, a, -w) add w (a b^T - b a^T) to U_k, which cancels in S_k = (U_k + U_k^T)/2.
// The other rows of W_down are random. Everything is drawn by rapidcheck.
PlantedChannel planted_channel(Index d, Tie tie) {
    PlantedChannel p;
    p.Q = *gen::orthogonal(d);
    const double L = std::ldexp(1.0, *gen::integer(-6, 6));
    const double sign = *gen::bernoulli(0.5) ? -1.0 : 1.0;
    const double delta = std::pow(10.0, -*gen::integer(1, 12, 1));
    p.lambda.resize(d);
    p.lambda[0] = sign * L;
    switch (tie) {
        case Tie::plus_minus: p.lambda[1] = -sign * L; break;
        case Tie::plus_minus_near: p.lambda[1] = -sign * L * (1 - delta); break;
        case Tie::same_sign_near: p.lambda[1] = sign * L * (1 - delta); break;
        case Tie::same_sign_exact: p.lambda[1] = sign * L; break;
    }
    const double rho = *gen::real_in(0.0, 0.8);  // the rest: |lambda_j| <= 0.8 L, gap >= 0.1 L
    for (Index j = 2; j < d; ++j) p.lambda[j] = rho * L * *gen::real_in(-1.0, 1.0);
    const Index m = *gen::integer(0, 3);
    const Index dff = d + 2 * m;
    p.k = *gen::integer(0, d - 1);
    p.f.gate.resize(dff, d);
    p.f.up.resize(dff, d);
    p.f.down = *gen::matrix(d, dff, 1.0 / std::sqrt(double(dff)));
    for (Index j = 0; j < d; ++j) {
        const double c = std::ldexp(1.0, *gen::integer(-2, 2));
        p.f.gate.row(j) = c * p.Q.col(j).transpose();
        p.f.up.row(j) = p.Q.col(j).transpose() / c;
        p.f.down(p.k, j) = p.lambda[j];
    }
    for (Index pair = 0; pair < m; ++pair) {
        const Eigen::VectorXd a = *gen::vector(d), b = *gen::vector(d);
        const double w = *gen::real();
        const Index i = d + 2 * pair;
        p.f.gate.row(i) = a.transpose();
        p.f.up.row(i) = b.transpose();
        p.f.down(p.k, i) = w;
        p.f.gate.row(i + 1) = b.transpose();
        p.f.up.row(i + 1) = a.transpose();
        p.f.down(p.k, i + 1) = -w;
    }
    return p;
}

// What channel_spectrum promises (largest_magnitude, nev = 2) when the top eigenpair by |lambda|
// is ambiguous or nearly so: it returns BOTH members of the top pair, ordered by |lambda|, each
// with its own sign and an eigenvector that satisfies S_k s = lambda s; so the dominance ratio
// |lambda_1 / lambda_2| read off the spectrum is the true one (about 1), not hidden by a missed
// partner; and Q5's bound still holds (it is then as loose as |lambda_2| ||h||^2).
void check_planted_spectrum(Tie tie) {
    const int d = *rc::gen::inRange(3, 49);  // d > 34 leaves the Krylov space smaller than d
    const PlantedChannel p = planted_channel(d, tie);
    const SwiGluWeights<double> W(p.f.gate, p.f.up, p.f.down);
    SpectrumOptions opt;
    opt.nev = 2;
    const auto spec = channel_spectrum(W, p.k, opt);

    const Eigen::MatrixXd U = U_by_definition(p.f, p.k);
    const Eigen::MatrixXd S = 0.5 * (U + U.transpose());
    const double L = std::abs(p.lambda[0]);
    const double tol = 1e-8 * L;  // Ritz residual 1e-10 relative, plus O(d eps L) rounding of S
    RC_ASSERT((S - p.Q * p.lambda.asDiagonal() * p.Q.transpose()).norm() <= 1e-12 * L * d);  // the plant
    // Ordered by |lambda|, both members of the top pair found, signs included.
    RC_ASSERT(std::abs(spec.eigenvalues[0]) >= std::abs(spec.eigenvalues[1]));
    RC_ASSERT(std::abs(std::abs(spec.eigenvalues[0]) - L) <= tol);
    RC_ASSERT(std::abs(std::abs(spec.eigenvalues[1]) - std::abs(p.lambda[1])) <= tol);
    RC_ASSERT(std::abs((spec.eigenvalues[0] + spec.eigenvalues[1]) - (p.lambda[0] + p.lambda[1])) <= 2 * tol);
    // The dominance ratio is reported as it is: 1 / (1 - delta) or exactly 1.
    const double ratio = std::abs(spec.eigenvalues[0] / spec.eigenvalues[1]);
    const double true_ratio = L / std::abs(p.lambda[1]);
    RC_ASSERT(std::abs(ratio - true_ratio) <= 1e-7);
    // Each returned pair is an eigenpair of the dense S_k, and lies in the planted top plane
    // span(q_1, q_2) (the rest is at least 0.1 L away, so the angle is <= residual / 0.1 L).
    const Eigen::MatrixXd top = p.Q.leftCols(2);
    for (Index j = 0; j < 2; ++j) {
        const Eigen::VectorXd s = spec.eigenvectors.col(j);
        RC_ASSERT(std::abs(s.norm() - 1.0) <= 1e-12);
        const double residual = (S * s - spec.eigenvalues[j] * s).norm();
        RC_ASSERT(residual <= tol);
        RC_ASSERT(std::abs(residual - spec.residuals[j]) <= tol);
        RC_ASSERT((s - top * (top.transpose() * s)).norm() <= 1e-6);
    }
    // Distinct eigenvalues: the two eigenvectors are orthogonal. A double eigenvalue: NOT promised;
    // RC_PARAMS="seed=5" shrinks to S_0 = diag(2, 2, 0), where the two returned vectors of the
    // plane have |cos| = 0.97 (a Lanczos ghost of the first copy; the eigenvalues are right).
    if (tie != Tie::same_sign_exact)
        RC_ASSERT(std::abs(spec.eigenvectors.col(0).dot(spec.eigenvectors.col(1))) <= 1e-6);
    // Q5 with the ambiguous pair: |Q_k - lambda* (s*^T h)^2| <= |lambda_2| (||h||^2 - (s*^T h)^2).
    const RowMatrix<double> H = *gen::matrix(2, d);
    const Eigen::VectorXd pred = rank_one_forward(spec, H);
    const Eigen::VectorXd bound = rank_one_error_bound(spec, H);
    const RowMatrix<double> Qf = quadratic_form_forward(W, H);
    for (Index t = 0; t < 2; ++t)
        RC_ASSERT(std::abs(Qf(t, p.k) - pred[t]) <= bound[t] + 1e-8 * L * (1 + H.row(t).squaredNorm()));
}

}  // namespace

TEST_CASE("quadratic FFN: an exact +-lambda pair is reported as a tie, both signed eigenpairs returned",
          "[theory][property]") {
    property("planted lambda_2 = -lambda_1", [] { check_planted_spectrum(Tie::plus_minus); }, 200);
}
TEST_CASE("quadratic FFN: a near +-lambda pair is reported with its true dominance ratio", "[theory][property]") {
    property("planted lambda_2 = -lambda_1 (1 - delta), delta 1e-12 .. 0.1",
             [] { check_planted_spectrum(Tie::plus_minus_near); }, 200);
}
TEST_CASE("quadratic FFN: a near-tie |lambda*| ~ |lambda_2| of one sign is reported, both eigenpairs returned",
          "[theory][property]") {
    property("planted lambda_2 = lambda_1 (1 - delta), delta 1e-12 .. 0.1",
             [] { check_planted_spectrum(Tie::same_sign_near); }, 200);
}
// A double dominant eigenvalue breaks Lanczos down (the Krylov space of S = diag(0, 2, 2) has 2 directions):
// found by this family (RC_PARAMS="seed=5" shrank to d = 3, where lambda* came back as 58 with residual 56).
// channel_spectrum now checks every pair against S v = lambda v and falls back to the dense S_k.
// Still open (CI's seed passes): RC_PARAMS="seed=7" / "seed=11" find cases at d = 44 where Lanczos returns a
// double lambda* once and the next eigenvalue as lambda_2 (a true eigenpair: no residual shows it), and
// "seed=11" a near-tie (delta ~ 1e-12) whose two Ritz vectors are not orthogonal.
TEST_CASE("quadratic FFN: a double dominant eigenvalue is reported twice, dominance ratio 1",
          "[theory][property]") {
    property("planted lambda_2 = lambda_1", [] { check_planted_spectrum(Tie::same_sign_exact); }, 200);
}

TEST_CASE("quadratic FFN: S_k = diag(0, 2, 2) gives lambda* = 2 twice (the shrunk double eigenvalue)",
          "[theory]") {
    const Index d = 3;
    RowMatrix<double> gate = RowMatrix<double>::Zero(d, d), down = RowMatrix<double>::Zero(d, d);
    gate(0, 2) = gate(1, 1) = gate(2, 0) = 1.0;  // hidden unit j: q_j = e_2, e_1, e_0
    down(0, 0) = down(0, 1) = 2.0;
    const SwiGluWeights<double> W(gate, gate, down);
    SpectrumOptions opt;
    opt.nev = 2;
    const auto spec = channel_spectrum(W, 0, opt);
    CAPTURE(spec.eigenvalues.transpose(), spec.residuals.transpose(), spec.dense_fallback);
    // Whether Lanczos breaks down here (and the dense fallback answers) depends on the rounding of the
    // build (-march=native): it did on the AMX Xeon and returned the two true pairs itself on an AMD EPYC,
    // so the test checks the answer, not the path. The dense path, asked for (also what a failed residual
    // check falls back to), must give the same. Both: lambda* = 2 twice, with two orthonormal vectors
    // spanning the eigenspace span(e_1, e_2), not one vector twice.
    opt.dense = true;
    const auto dense = channel_spectrum(W, 0, opt);
    CHECK(dense.dense_fallback);
    for (const auto* sp : {&spec, &dense}) {
        const auto& V = sp->eigenvectors;
        CHECK(std::abs(sp->eigenvalues[0] - 2.0) <= 1e-8);
        CHECK(std::abs(sp->eigenvalues[1] - 2.0) <= 1e-8);
        CHECK(sp->residuals.maxCoeff() <= 1e-8);
        CHECK(std::abs(V.col(0).dot(V.col(1))) <= 1e-8);
        CHECK(std::abs(V(0, 0)) <= 1e-8);
        CHECK(std::abs(V(0, 1)) <= 1e-8);
    }
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
