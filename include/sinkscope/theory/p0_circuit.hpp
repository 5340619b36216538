// Identification and stability of the position-0 circuit (paper A, claim A2).
//
// Statements and derivations: theory/p0_circuit.md. In short:
//   (P1) causal-mask asymmetry: row 0 of every causal softmax pattern is e_0 (p_0 = 1, sum p^2 = 1),
//        whatever the scores; every other row t has sum p^2 >= 1/(t+1).
//   (P2) with Norm(x) = sqrt(d) x / ||x|| (RMSNorm without gain and eps) and eps = ||delta|| / ||x|| < 1:
//        Norm(x + delta) - Norm(x) = sqrt(d) delta_perp / ||x|| + R,  delta_perp = delta - (x^.delta) x^,
//        ||R|| <= sqrt(d) c(eps) eps^2, c(eps) = sharp constant (computed exactly by a 1-D maximisation),
//        c increasing, c(0+) = 1/sqrt(3), c(1/2) = 0.72467521036958735...; so for ||delta|| <= ||x||/2:
//        ||R|| <= 0.7246753 sqrt(d) (||delta|| / ||x||)^2, and the constant cannot be lowered.
//   papers.md writes the linear term delta_perp / r(x) with r(x) = RMS(x) = ||x|| / sqrt(d): the same.
#pragma once

#include <Eigen/Core>

#include <cmath>
#include <optional>
#include <string>

#include "sinkscope/core/error.hpp"
#include "sinkscope/theory/common.hpp"

namespace sinkscope::theory {

// ---- P1 ----------------------------------------------------------------------------------------

// Row-wise causal softmax of scores (T, T): row t is the softmax of scores[t, 0..t], zeros above the
// diagonal (entries there are ignored; they may be -inf). Computed with the max subtracted.
template <class D>
RowMatrix<typename D::Scalar> causal_softmax(const Eigen::MatrixBase<D>& scores) {
    using T = typename D::Scalar;
    detail::check_scalar<T>();
    detail::require_nonempty(scores, "causal_softmax: scores");
    if (scores.rows() != scores.cols())
        throw Error("causal_softmax: scores must be square (T, T), got " + detail::shape_str(scores.rows(), scores.cols()));
    const Index n = scores.rows();
    RowMatrix<T> A = RowMatrix<T>::Zero(n, n);
    for (Index t = 0; t < n; ++t) {
        const auto z = scores.row(t).head(t + 1);
        detail::require_finite(z, "causal_softmax: scores row " + std::to_string(t) + " (on or below the diagonal)");
        const T m = z.maxCoeff();
        T sum = 0;
        for (Index j = 0; j <= t; ++j) sum += (A(t, j) = std::exp(z(j) - m));
        A.row(t).head(t + 1) /= sum;
    }
    return A;
}

// max_j |A[0, j] - delta_{0j}|: how far row 0 of a captured pattern is from e_0 (0 for any exact
// causal softmax; rounding otherwise). The pattern is checked to be a causal pattern.
template <class D>
double row0_deviation(const Eigen::MatrixBase<D>& pattern) {
    detail::require_causal_pattern(pattern, "row0_deviation: pattern");
    double dev = std::abs(static_cast<double>(pattern(0, 0)) - 1.0);
    for (Index j = 1; j < pattern.cols(); ++j) dev = std::max(dev, std::abs(static_cast<double>(pattern(0, j))));
    return dev;
}

// ---- P2 ----------------------------------------------------------------------------------------

// c(1/2): sup over ||delta|| <= ||x||/2 of ||R|| / (sqrt(d) (||delta||/||x||)^2). Computed with
// mpmath at 30 digits (theory/p0_circuit.md) and checked against norm_remainder_constant(0.5).
inline constexpr double kNormRemainderConstantHalf = 0.72467521036958734530;

namespace detail {

// ||R'|| for ||x|| = 1, delta = a x^ + b e (e unit, e ⟂ x, b >= 0), written without cancellation:
//   R' = x^ ((1+a)/nu - 1) + b e (1/nu - 1),  nu = ||x^ + delta|| = sqrt((1+a)^2 + b^2)
//   (1+a)/nu - 1 = -b^2 / (nu (1 + a + nu)),  1/nu - 1 = -(2a + eps^2) / (nu (1 + nu)).
inline double norm_remainder_unit(double a, double b) {
    const double eps2 = a * a + b * b;
    const double nu = std::sqrt((1.0 + a) * (1.0 + a) + b * b);
    const double along = -b * b / (nu * (1.0 + a + nu));
    const double across = -b * (2.0 * a + eps2) / (nu * (1.0 + nu));
    return std::hypot(along, across);
}

}  // namespace detail

// The sharp constant c(eps) = max over the angle theta between delta and x of ||R'|| / eps^2, for
// 0 <= eps < 1 (c(0) = 1/sqrt(3), the limit). Cancellation-free at small eps. Deterministic: a 4096-point grid over [0, pi] and a
// golden-section refinement around the best point.
inline double norm_remainder_constant(double eps) {
    if (!(eps >= 0.0 && eps < 1.0))
        throw Error("norm_remainder_constant: eps = ||delta||/||x|| must lie in [0, 1) (x + delta can vanish at 1)");
    // c(eps) = 1/sqrt(3) + O(eps): below 1e-100 the limit is exact in double (and eps^2 underflows).
    if (eps < 1e-100) return 1.0 / std::sqrt(3.0);
    const double pi = 3.14159265358979323846;
    auto f = [eps](double th) { return detail::norm_remainder_unit(eps * std::cos(th), eps * std::sin(th)); };
    const int grid = 4096;
    int best = 0;
    double best_val = -1.0;
    for (int i = 0; i <= grid; ++i) {
        const double v = f(pi * i / grid);
        if (v > best_val) {
            best_val = v;
            best = i;
        }
    }
    double lo = pi * std::max(0, best - 1) / grid, hi = pi * std::min(grid, best + 1) / grid;
    const double phi = 0.5 * (std::sqrt(5.0) - 1.0);
    double x1 = hi - phi * (hi - lo), x2 = lo + phi * (hi - lo), f1 = f(x1), f2 = f(x2);
    for (int it = 0; it < 200 && hi - lo > 1e-15; ++it) {
        if (f1 < f2) {
            lo = x1;
            x1 = x2;
            f1 = f2;
            x2 = lo + phi * (hi - lo);
            f2 = f(x2);
        } else {
            hi = x2;
            x2 = x1;
            f2 = f1;
            x1 = hi - phi * (hi - lo);
            f1 = f(x1);
        }
    }
    return std::max({best_val, f1, f2}) / (eps * eps);
}

// Norm(x) = sqrt(d) x / ||x|| (no gain, no eps). Needs d >= 2 and x != 0.
template <class D>
Vector<typename D::Scalar> unit_rms_normalize(const Eigen::MatrixBase<D>& x) {
    using T = typename D::Scalar;
    detail::check_scalar<T>();
    if (x.cols() != 1) throw Error("unit_rms_normalize: x must be a column vector");
    detail::require_nonempty(x, "unit_rms_normalize: x");
    detail::require_dim_at_least(x.rows(), 2, "unit_rms_normalize: x", "the perturbation statement needs a direction orthogonal to x");
    detail::require_finite(x, "unit_rms_normalize: x");
    const double norm = detail::stable_norm(x);
    if (!(norm > 0.0)) throw Error("unit_rms_normalize: x is the zero vector; Norm(x) is undefined");
    const double s = std::sqrt(static_cast<double>(x.rows())) / norm;
    return (x.template cast<double>() * s).template cast<T>();
}

struct NormPerturbation {
    double ratio = 0;                     // eps = ||delta|| / ||x||
    double remainder_norm = 0;            // ||R|| (actual)
    double linear_norm = 0;               // ||sqrt(d) delta_perp / ||x|| ||
    double bound = 0;                     // sqrt(d) c(eps) eps^2 (sharp, any eps < 1)
    std::optional<double> bound_half;     // sqrt(d) c(1/2) eps^2, only when eps <= 1/2
    Eigen::VectorXd remainder;            // R itself (d)
};

// Computes R = Norm(x + delta) - Norm(x) - sqrt(d) delta_perp / ||x|| and its bounds, in double.
// Needs x != 0, d >= 2, finite inputs of equal length, and ||delta|| < ||x||.
template <class DX, class DD>
NormPerturbation norm_perturbation(const Eigen::MatrixBase<DX>& x, const Eigen::MatrixBase<DD>& delta) {
    detail::check_scalar<typename DX::Scalar>();
    if (delta.cols() != 1) throw Error("norm_perturbation: delta must be a column vector");
    detail::require_same(x.rows(), delta.rows(), "norm_perturbation: x and delta have different lengths");
    detail::require_finite(delta, "norm_perturbation: delta");
    const Eigen::VectorXd n0 = unit_rms_normalize(x).template cast<double>();
    const Eigen::VectorXd xd = x.template cast<double>(), dd = delta.template cast<double>();
    const double xn = xd.stableNorm();
    NormPerturbation p;
    p.ratio = dd.stableNorm() / xn;
    if (!(p.ratio < 1.0))
        throw Error("norm_perturbation: ||delta|| >= ||x||; the expansion needs ||delta|| < ||x|| (x + delta can vanish)");
    const double d = static_cast<double>(x.rows());
    const Eigen::VectorXd xh = xd / xn;
    const Eigen::VectorXd perp = dd - xh.dot(dd) * xh;
    const Eigen::VectorXd n1 = unit_rms_normalize(Eigen::VectorXd(xd + dd));
    const Eigen::VectorXd lin = std::sqrt(d) * perp / xn;
    p.remainder = n1 - n0 - lin;
    p.remainder_norm = p.remainder.norm();
    p.linear_norm = lin.norm();
    p.bound = std::sqrt(d) * norm_remainder_constant(p.ratio) * p.ratio * p.ratio;
    if (p.ratio <= 0.5) p.bound_half = std::sqrt(d) * kNormRemainderConstantHalf * p.ratio * p.ratio;
    return p;
}

}  // namespace sinkscope::theory
