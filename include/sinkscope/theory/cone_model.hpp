// The cone model of value vectors (paper A, claim A3) and the exact Gram identity.
//
// Statements and derivations: theory/cone_model.md. In short:
//   exact, for any weights p and values v_i:        ||o||^2 = ||sum_i p_i v_i||^2 = p^T G p,  G = V V^T
//   cone model v_i = a u + sqrt(1 - a^2) s_i, s_i unit, s_i ⟂ u, E[s_i . s_j] = delta_ij,
//   p independent of s, sum_i p_i = 1:              E||o||^2 = a^2 + (1 - a^2) E[sum_i p_i^2]
// Position 0 of a causal pattern has p = e_0, sum p^2 = 1: the largest expected output norm.
//   value drain (unequal norms r_i = ||v_i||, (p, r) independent of s):
//                                                   E||o||^2 = a^2 (sum p_i r_i)^2 + (1 - a^2) sum p_i^2 r_i^2
// so position 0 has exactly ||v_0||^2, which is small when v_0 is drained.
//
// Functions take captured values of one head (n, d_h) and its pattern (T, T); never a model.
#pragma once

#include <Eigen/Core>
#include <Eigen/Eigenvalues>

#include <cmath>
#include <string>

#include "sinkscope/core/error.hpp"
#include "sinkscope/theory/common.hpp"

namespace sinkscope::theory {

// What fit_cone measures on a set of value vectors (rows of an (n, d_h) matrix).
template <class T>
struct ConeFit {
    // Mean cosine of the values to the mean direction u: a = mean_i cos(v_i, u). With u the
    // normalised mean of the unit vectors v_i/||v_i||, this equals ||mean_i v_i/||v_i|| ||.
    T alpha = 0;
    // Bias-corrected a: under the cone model E[alpha^2] = a^2 + (1 - a^2)/n, so
    // alpha_debiased^2 = max(0, (n alpha^2 - 1) / (n - 1)) is unbiased for a^2 before the clamp.
    T alpha_debiased = 0;
    Vector<T> axis;           // u, unit norm, (d_h)
    T mean_norm_sq = 0;       // mean_i ||v_i||^2; predictions are scaled by it (1 for unit values)
    // Isotropy of the orthogonal parts w_i = v^_i - (v^_i . u) u, v^_i = v_i/||v_i||. With
    // C = (1/n) sum_i w_i w_i^T (mean of w_i is exactly 0 by the choice of u) and m = d_h - 1:
    T orthogonal_energy = 0;  // tr C = mean_i (1 - cos^2(v_i, u))
    T isotropy_top_ratio = 0; // lambda_max(C) / (tr C / m): 1 = isotropic, m = one direction; 0 if tr C = 0
    T participation_ratio = 0;// (tr C)^2 / ||C||_F^2: m = isotropic, 1 = one direction; 0 if tr C = 0
    Index n = 0;              // number of values
    Index d = 0;              // head dimension d_h
};

// The cone-model formula itself: a^2 + (1 - a^2) * sum_sq, sum_sq = sum_i p_i^2.
template <class T>
T cone_expected_norm_sq(T alpha, T sum_sq) {
    detail::check_scalar<T>();
    if (!std::isfinite(static_cast<double>(alpha)) || !std::isfinite(static_cast<double>(sum_sq)))
        throw Error("cone_expected_norm_sq: alpha and sum_sq must be finite");
    if (alpha < T(-1) || alpha > T(1)) throw Error("cone_expected_norm_sq: alpha must lie in [-1, 1]");
    if (sum_sq < T(0) || sum_sq > T(1)) throw Error("cone_expected_norm_sq: sum_i p_i^2 must lie in [0, 1]");
    return alpha * alpha + (T(1) - alpha * alpha) * sum_sq;
}

// Fits the cone model to the rows of `values` (n, d_h). Needs n >= 2, d_h >= 2 (the orthogonal
// complement of u must exist), finite entries, no zero row, and a nonzero mean direction.
template <class Derived>
ConeFit<typename Derived::Scalar> fit_cone(const Eigen::MatrixBase<Derived>& values) {
    using T = typename Derived::Scalar;
    detail::check_scalar<T>();
    detail::require_nonempty(values, "fit_cone: values");
    detail::require_finite(values, "fit_cone: values");
    const Index n = values.rows();
    const Index d = values.cols();
    detail::require_dim_at_least(d, 2, "fit_cone: values (n, d_h)", "the cone axis needs an orthogonal complement");
    detail::require_dim_at_least(n, 2, "fit_cone: number of values", "a mean direction of one vector is not a fit");

    // Work in double: unit vectors v^_i, their mean m, a = ||m||, u = m / a.
    Eigen::MatrixXd unit(n, d);
    double norm_sq_sum = 0.0;
    for (Index i = 0; i < n; ++i) {
        const double norm = detail::stable_norm(values.row(i));
        if (!(norm > 0.0)) throw Error("fit_cone: value row " + std::to_string(i) + " is the zero vector");
        unit.row(i) = values.row(i).template cast<double>() / norm;
        norm_sq_sum += norm * norm;
    }
    const Eigen::VectorXd mean = unit.colwise().mean().transpose();
    const double alpha = mean.norm();
    if (!(alpha > 1e-300))
        throw Error("fit_cone: the mean direction of the values is zero; the cone axis is undefined");
    const Eigen::VectorXd u = mean / alpha;

    ConeFit<T> fit;
    fit.n = n;
    fit.d = d;
    fit.alpha = static_cast<T>(std::min(alpha, 1.0));
    const double nd = static_cast<double>(n);
    fit.alpha_debiased = static_cast<T>(std::sqrt(std::max(0.0, (nd * alpha * alpha - 1.0) / (nd - 1.0))));
    fit.axis = u.cast<T>();
    fit.mean_norm_sq = static_cast<T>(norm_sq_sum / nd);
    detail::ensure_finite_result(norm_sq_sum, "fit_cone: mean squared norm of the values");

    // Orthogonal parts w_i = v^_i - (v^_i . u) u and their second-moment matrix C (d, d).
    const Eigen::VectorXd cosines = unit * u;                    // (n)
    const Eigen::MatrixXd w = unit - cosines * u.transpose();    // (n, d)
    const Eigen::MatrixXd C = (w.transpose() * w) / nd;          // (d, d)
    const double trace = C.trace();
    fit.orthogonal_energy = static_cast<T>(trace);
    if (trace > 1e-14) {
        Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(C, Eigen::EigenvaluesOnly);
        const double top = eig.eigenvalues().maxCoeff();
        const double m = static_cast<double>(d - 1);
        fit.isotropy_top_ratio = static_cast<T>(top / (trace / m));
        fit.participation_ratio = static_cast<T>(trace * trace / eig.eigenvalues().squaredNorm());
    }
    return fit;
}

// sum_j A[t, j]^2 for each query t of a causal pattern (T, T): the E[sum p^2] of the cone model
// (1 at t = 0, 1/(t+1) for uniform attention).
template <class Derived>
Vector<typename Derived::Scalar> attention_sum_sq(const Eigen::MatrixBase<Derived>& pattern) {
    using T = typename Derived::Scalar;
    detail::check_scalar<T>();
    detail::require_causal_pattern(pattern, "attention_sum_sq: pattern");
    return pattern.rowwise().squaredNorm();
}

// Cone-model prediction of ||o_t||^2 per query t:
//   mean_norm_sq * (a^2 + (1 - a^2) * sum_j A[t, j]^2)
// with a = fit.alpha, or fit.alpha_debiased when `debiased`. The scale mean_norm_sq makes the
// prediction comparable to captured (non-unit) values; it is exact when all ||v_i|| are equal.
template <class T, class Derived>
Vector<T> predict_output_norm_sq(const ConeFit<T>& fit, const Eigen::MatrixBase<Derived>& pattern,
                                 bool debiased = false) {
    static_assert(std::is_same_v<T, typename Derived::Scalar>, "fit and pattern must have the same scalar");
    detail::check_scalar<T>();
    if (fit.n < 2 || fit.d < 2) throw Error("predict_output_norm_sq: the ConeFit was not produced by fit_cone");
    const Vector<T> sum_sq = attention_sum_sq(pattern);
    const T a = debiased ? fit.alpha_debiased : fit.alpha;
    Vector<T> out(sum_sq.size());
    for (Index t = 0; t < sum_sq.size(); ++t)
        out[t] = fit.mean_norm_sq * cone_expected_norm_sq(a, std::min(sum_sq[t], T(1)));
    return out;
}

// Value-drain extension (C6 of theory/cone_model.md): values with their own norms r_i,
//   v_i = r_i (a u + sqrt(1 - a^2) s_i),  s_i unit, s_i ⟂ u, E[s_i . s_j] = delta_ij,
//   (p, r) independent of s (p may depend on the norms, not on the directions):
//   E||o||^2 = a^2 (sum_i p_i r_i)^2 + (1 - a^2) sum_i p_i^2 r_i^2.
// With r_i = 1 this is cone_expected_norm_sq; at p = e_0 it is r_0^2 for every a (no expectation left).
template <class DerivedP, class DerivedR>
typename DerivedP::Scalar cone_expected_norm_sq_with_norms(typename DerivedP::Scalar alpha,
                                                           const Eigen::MatrixBase<DerivedP>& p,
                                                           const Eigen::MatrixBase<DerivedR>& norms) {
    using T = typename DerivedP::Scalar;
    static_assert(std::is_same_v<T, typename DerivedR::Scalar>, "p and norms must have the same scalar");
    detail::check_scalar<T>();
    if (!std::isfinite(static_cast<double>(alpha)) || alpha < T(-1) || alpha > T(1))
        throw Error("cone_expected_norm_sq_with_norms: alpha must be finite and lie in [-1, 1]");
    detail::require_nonempty(p, "cone_expected_norm_sq_with_norms: p");
    detail::require_same(p.size(), norms.size(), "cone_expected_norm_sq_with_norms: p and norms differ in length");
    detail::require_finite(p, "cone_expected_norm_sq_with_norms: p");
    detail::require_finite(norms, "cone_expected_norm_sq_with_norms: norms");
    if ((norms.array() < T(0)).any()) throw Error("cone_expected_norm_sq_with_norms: norms must be >= 0");
    double along = 0.0, spread = 0.0;  // sum p_i r_i and sum p_i^2 r_i^2, in double
    for (Index i = 0; i < p.size(); ++i) {
        const double q = static_cast<double>(p[i]) * static_cast<double>(norms[i]);
        along += q;
        spread += q * q;
    }
    const double a2 = static_cast<double>(alpha) * static_cast<double>(alpha);
    return static_cast<T>(a2 * along * along + (1.0 - a2) * spread);
}

// Value-drain prediction of ||o_t||^2 per query t of a causal pattern (T, T) over values (T, d_h):
//   a^2 (sum_j A[t, j] r_j)^2 + (1 - a^2) sum_j A[t, j]^2 r_j^2,   r_j = ||v_j||,
// with a = fit.alpha (or fit.alpha_debiased), the norm-free cone fit of the same values. Position 0
// (A[0, 0] = 1) gets exactly ||v_0||^2: a drained v_0 gives a small prediction, as measured.
template <class T, class DerivedA, class DerivedV>
Vector<T> predict_output_norm_sq_with_norms(const ConeFit<T>& fit, const Eigen::MatrixBase<DerivedA>& pattern,
                                            const Eigen::MatrixBase<DerivedV>& values, bool debiased = false) {
    static_assert(std::is_same_v<T, typename DerivedA::Scalar> && std::is_same_v<T, typename DerivedV::Scalar>,
                  "fit, pattern and values must have the same scalar");
    detail::check_scalar<T>();
    if (fit.n < 2 || fit.d < 2)
        throw Error("predict_output_norm_sq_with_norms: the ConeFit was not produced by fit_cone");
    detail::require_causal_pattern(pattern, "predict_output_norm_sq_with_norms: pattern");
    detail::require_nonempty(values, "predict_output_norm_sq_with_norms: values");
    detail::require_finite(values, "predict_output_norm_sq_with_norms: values");
    detail::require_same(values.rows(), pattern.cols(),
                         "predict_output_norm_sq_with_norms: pattern (T, T) and values (T, d_h) disagree on T");
    const Vector<T> norms = values.rowwise().norm();
    const T a = debiased ? fit.alpha_debiased : fit.alpha;
    Vector<T> out(pattern.rows());
    for (Index t = 0; t < pattern.rows(); ++t)
        out[t] = cone_expected_norm_sq_with_norms(a, pattern.row(t).transpose(), norms);
    return out;
}

// Exact ||o_t||^2 = p_t^T G p_t with G = V V^T (n, n), for every row p_t of `weights` (n_q, n) and
// values V (n, d_h). Holds for any weights (no normalisation, sign or causality needed); for an
// attention pattern pass the (T, T) pattern and the (T, d_h) values of the same sequence.
template <class DerivedV, class DerivedP>
Vector<typename DerivedV::Scalar> exact_output_norm_sq(const Eigen::MatrixBase<DerivedV>& values,
                                                       const Eigen::MatrixBase<DerivedP>& weights) {
    using T = typename DerivedV::Scalar;
    static_assert(std::is_same_v<T, typename DerivedP::Scalar>, "values and weights must have the same scalar");
    detail::check_scalar<T>();
    detail::require_nonempty(values, "exact_output_norm_sq: values");
    detail::require_nonempty(weights, "exact_output_norm_sq: weights");
    detail::require_same(weights.cols(), values.rows(),
                         "exact_output_norm_sq: weights (n_q, n) and values (n, d_h) disagree on n");
    detail::require_finite(values, "exact_output_norm_sq: values");
    detail::require_finite(weights, "exact_output_norm_sq: weights");
    const RowMatrix<T> G = values * values.transpose();                 // (n, n) Gram matrix
    const RowMatrix<T> PG = weights * G;                                 // (n_q, n)
    Vector<T> out = PG.cwiseProduct(weights).rowwise().sum();            // p_t^T G p_t
    detail::ensure_finite_result(out, "exact_output_norm_sq");
    return out;
}

}  // namespace sinkscope::theory
