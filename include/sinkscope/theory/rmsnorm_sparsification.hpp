// RMSNorm sparsifies spike tokens (paper B, claim B4): bounded, sparse, near-constant outputs.
//
// Statements and derivations: theory/rmsnorm_sparsification.md. With
//   h~ = RMSNorm(h) = h / sqrt(mean(h^2) + eps) ⊙ g,   kappa = ||h|| / sqrt(||h||^2 + d eps) in (0, 1],
// C a set of channels and rho = sum_{i in C} h_i^2 / ||h||^2 (the energy fraction of C):
//   (R1) |h~_i| <= sqrt(d) max|g| kappa <= sqrt(d) max|g|
//   (R2) ||h~ - h~_C|| <= sqrt(d (1 - rho)) max_{i not in C}|g_i| kappa <= sqrt(d (1 - rho)) max|g|
//   (R3) cos(RMSNorm(h^a), RMSNorm(h^b)) = cos(g ⊙ h^a, g ⊙ h^b)   (eps and the scale drop out)
//        >= sqrt(rho~_a rho~_b) cos(theta~_C) - sqrt((1 - rho~_a)(1 - rho~_b))
// where rho~ and theta~_C are the energy fraction and spike-part angle of the g-weighted vectors.
// h~_C keeps the entries of h~ in C and zeroes the rest.
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/theory/common.hpp"

namespace sinkscope::theory {

namespace detail {

template <class DH, class DG>
void require_rmsnorm_inputs(const Eigen::MatrixBase<DH>& h, const Eigen::MatrixBase<DG>& g, double eps,
                            const std::string& fn) {
    static_assert(std::is_same_v<typename DH::Scalar, typename DG::Scalar>, "h and g must have the same scalar");
    check_scalar<typename DH::Scalar>();
    if (h.cols() != 1 || g.cols() != 1) throw Error(fn + ": h and g must be column vectors");
    require_nonempty(h, fn + ": h");
    require_same(h.rows(), g.rows(), fn + ": h and the gain g have different lengths");
    require_dim_at_least(h.rows(), 2, fn + ": h", "RMSNorm sparsification is about several channels");
    require_finite(h, fn + ": h");
    require_finite(g, fn + ": gain g");
    if (!std::isfinite(eps) || eps < 0.0) throw Error(fn + ": eps must be finite and >= 0");
}

// Membership mask of C in [0, d).
inline std::vector<char> channel_mask(const std::vector<Index>& C, Index d, const std::string& fn) {
    require_channel_set(C, d, fn + ": channel set C");
    std::vector<char> in(static_cast<std::size_t>(d), 0);
    for (Index i : C) in[static_cast<std::size_t>(i)] = 1;
    return in;
}

// sqrt(s^2 + e) without overflow or underflow, s, e >= 0.
inline double hypot_sqrt(double s, double e) {
    const double r = std::sqrt(e);
    return std::hypot(s, r);
}

}  // namespace detail

// RMSNorm(h) = h / sqrt(mean(h^2) + eps) ⊙ g, computed without overflow (||h|| by stableNorm).
// eps = 0 is allowed for nonzero h; h = 0 with eps = 0 throws (0/0).
template <class DH, class DG>
Vector<typename DH::Scalar> rmsnorm(const Eigen::MatrixBase<DH>& h, const Eigen::MatrixBase<DG>& g, double eps) {
    using T = typename DH::Scalar;
    detail::require_rmsnorm_inputs(h, g, eps, "rmsnorm");
    const double d = static_cast<double>(h.rows());
    const double rms = detail::stable_norm(h) / std::sqrt(d);  // sqrt(mean(h^2))
    const double r = detail::hypot_sqrt(rms, eps);             // sqrt(mean(h^2) + eps)
    if (!(r > 0.0)) throw Error("rmsnorm: h is the zero vector and eps = 0: RMSNorm is 0/0");
    Vector<T> out(h.rows());
    for (Index i = 0; i < h.rows(); ++i)
        out[i] = static_cast<T>(static_cast<double>(h(i)) / r * static_cast<double>(g(i)));
    detail::ensure_finite_result(out, "rmsnorm");
    return out;
}

namespace detail {
// (rho, 1 - rho) with the complement summed directly (1 - rho would round to 0 when C carries all
// but 1e-17 of the energy), on h / max|h| so that neither huge nor tiny h overflow.
template <class DH>
std::pair<double, double> energy_split(const Eigen::MatrixBase<DH>& h, const std::vector<Index>& C, const std::string& fn) {
    check_scalar<typename DH::Scalar>();
    if (h.cols() != 1) throw Error(fn + ": h must be a column vector");
    require_nonempty(h, fn + ": h");
    require_finite(h, fn + ": h");
    const auto in = channel_mask(C, h.rows(), fn);
    const double m = static_cast<double>(h.cwiseAbs().maxCoeff());
    if (!(m > 0.0)) throw Error(fn + ": h is the zero vector; its energy fraction is undefined");
    double inside = 0.0, outside = 0.0;
    for (Index i = 0; i < h.rows(); ++i) {
        const double x = static_cast<double>(h(i)) / m;
        (in[static_cast<std::size_t>(i)] ? inside : outside) += x * x;
    }
    const double total = inside + outside;
    return {inside / total, outside / total};
}
}  // namespace detail

// rho = sum_{i in C} h_i^2 / ||h||^2.
template <class DH>
double energy_fraction(const Eigen::MatrixBase<DH>& h, const std::vector<Index>& C) {
    return detail::energy_split(h, C, "energy_fraction").first;
}

// Bounds R1, R2 with the actual values they bound.
struct SparsificationReport {
    double rho = 0;                  // energy fraction of C in h
    double rho_complement = 0;       // 1 - rho, summed directly over the channels outside C
    double kappa = 0;                // ||h|| / sqrt(||h||^2 + d eps): the eps factor, 1 when eps = 0
    double max_abs = 0;              // max_i |h~_i|                   (actual)
    double max_abs_bound = 0;        // sqrt(d) max|g| kappa            (R1, eps kept)
    double max_abs_bound_plain = 0;  // sqrt(d) max|g|                  (R1 as in paper B, with gain)
    double residual = 0;             // ||h~ - h~_C||                   (actual)
    double residual_bound = 0;       // sqrt(d (1-rho)) max_{i not in C}|g_i| kappa   (R2, eps kept)
    double residual_bound_plain = 0; // sqrt(d (1-rho)) max|g|                         (R2 as stated)
};

template <class DH, class DG>
SparsificationReport sparsification_bounds(const Eigen::MatrixBase<DH>& h, const Eigen::MatrixBase<DG>& g,
                                           double eps, const std::vector<Index>& C) {
    detail::require_rmsnorm_inputs(h, g, eps, "sparsification_bounds");
    const auto in = detail::channel_mask(C, h.rows(), "sparsification_bounds");
    detail::require_nonzero(h, "sparsification_bounds: h");
    const Index n = h.rows();
    const double d = static_cast<double>(n);
    const auto ht = rmsnorm(h, g, eps);
    SparsificationReport r;
    std::tie(r.rho, r.rho_complement) = detail::energy_split(h, C, "sparsification_bounds");
    const double norm = detail::stable_norm(h);
    // kappa = 1 / sqrt(1 + d eps / ||h||^2), written to survive huge and tiny ||h||.
    r.kappa = norm / detail::hypot_sqrt(norm, d * eps);
    double gmax = 0.0, gmax_rest = 0.0;
    for (Index i = 0; i < n; ++i) {
        const double a = std::abs(static_cast<double>(g(i)));
        gmax = std::max(gmax, a);
        if (!in[static_cast<std::size_t>(i)]) gmax_rest = std::max(gmax_rest, a);
    }
    r.max_abs = static_cast<double>(ht.cwiseAbs().maxCoeff());
    r.max_abs_bound = std::sqrt(d) * gmax * r.kappa;
    r.max_abs_bound_plain = std::sqrt(d) * gmax;
    double rest_sq = 0.0, scale = 0.0;
    for (Index i = 0; i < n; ++i)
        if (!in[static_cast<std::size_t>(i)]) scale = std::max(scale, std::abs(static_cast<double>(ht[i])));
    if (scale > 0.0)
        for (Index i = 0; i < n; ++i)
            if (!in[static_cast<std::size_t>(i)]) rest_sq += std::pow(static_cast<double>(ht[i]) / scale, 2);
    r.residual = scale * std::sqrt(rest_sq);
    const double one_minus_rho = r.rho_complement;
    r.residual_bound = std::sqrt(d * one_minus_rho) * gmax_rest * r.kappa;
    r.residual_bound_plain = std::sqrt(d * one_minus_rho) * gmax;
    return r;
}

namespace detail {
// R3's right side with the complements 1 - rho passed separately (accurate when rho is near 1).
inline double cosine_lower_bound(double rho_a, double rho_b, double comp_a, double comp_b, double cos_theta) {
    for (double x : {rho_a, rho_b, comp_a, comp_b})
        if (!(x >= 0.0 && x <= 1.0)) throw Error("cosine_lower_bound: energy fractions must lie in [0, 1]");
    if (!(cos_theta >= -1.0 && cos_theta <= 1.0)) throw Error("cosine_lower_bound: cos_theta must lie in [-1, 1]");
    return std::sqrt(rho_a * rho_b) * cos_theta - std::sqrt(comp_a * comp_b);
}
}  // namespace detail

// R3's right side: sqrt(rho_a rho_b) cos_theta - sqrt((1 - rho_a)(1 - rho_b)), all in [-1, 1].
inline double cosine_lower_bound(double rho_a, double rho_b, double cos_theta) {
    return detail::cosine_lower_bound(rho_a, rho_b, 1.0 - rho_a, 1.0 - rho_b, cos_theta);
}

// Lower bound on the g-weighted energy fraction from the raw one:
//   rho~ >= rho m^2 / (rho m^2 + (1 - rho) M^2),  m = min_{i in C}|g_i|, M = max_{i not in C}|g_i|
// (0 when m = 0; 1 when M = 0 and rho m^2 > 0).
inline double weighted_fraction_lower_bound(double rho, double min_gain_in_C, double max_gain_outside_C) {
    if (!(rho >= 0.0 && rho <= 1.0)) throw Error("weighted_fraction_lower_bound: rho must lie in [0, 1]");
    if (!(min_gain_in_C >= 0.0) || !(max_gain_outside_C >= 0.0) || !std::isfinite(min_gain_in_C) ||
        !std::isfinite(max_gain_outside_C))
        throw Error("weighted_fraction_lower_bound: gain magnitudes must be finite and >= 0");
    const double a = rho * min_gain_in_C * min_gain_in_C;
    const double b = (1.0 - rho) * max_gain_outside_C * max_gain_outside_C;
    if (a <= 0.0) return 0.0;
    return a / (a + b);
}

namespace detail {
// 1 - weighted_fraction_lower_bound, computed directly: b / (a + b).
inline double weighted_complement_upper_bound(double rho, double comp, double m, double M) {
    const double a = rho * m * m, b = comp * M * M;
    if (a <= 0.0) return 1.0;
    return b / (a + b);
}
}  // namespace detail

struct CosineReport {
    double actual = 0;             // cos(RMSNorm(h^a), RMSNorm(h^b)) = cos(g ⊙ h^a, g ⊙ h^b)
    double bound = 0;              // R3 with the g-weighted rho~_a, rho~_b, cos theta~_C
    double rho_a = 0, rho_b = 0;   // g-weighted energy fractions of C
    double cos_spike = 0;          // cos theta~_C between the g-weighted spike parts (0 if one is 0)
    double rho_a_raw = 0, rho_b_raw = 0;  // energy fractions of C in h^a, h^b (no gain)
    double bound_from_raw = -1;    // R3 with rho~ replaced by weighted_fraction_lower_bound(rho_raw, ...)
                                   // when cos_spike >= 0 (R4); -1 (trivial) otherwise
};

// Everything of R3/R4 for two inputs. Throws if g ⊙ h^a or g ⊙ h^b is zero (the cosine is undefined).
template <class DA, class DB, class DG>
CosineReport cosine_bound(const Eigen::MatrixBase<DA>& ha, const Eigen::MatrixBase<DB>& hb,
                          const Eigen::MatrixBase<DG>& g, double eps, const std::vector<Index>& C) {
    detail::require_rmsnorm_inputs(ha, g, eps, "cosine_bound");
    detail::require_rmsnorm_inputs(hb, g, eps, "cosine_bound");
    const Index n = ha.rows();
    const auto in = detail::channel_mask(C, n, "cosine_bound");
    detail::require_nonzero(ha, "cosine_bound: h^a");
    detail::require_nonzero(hb, "cosine_bound: h^b");
    // The g-weighted vectors, rescaled by their max entry (cosines and fractions are scale-free).
    Eigen::VectorXd x = (ha.template cast<double>().array() * g.template cast<double>().array()).matrix();
    Eigen::VectorXd y = (hb.template cast<double>().array() * g.template cast<double>().array()).matrix();
    const double mx = x.cwiseAbs().maxCoeff(), my = y.cwiseAbs().maxCoeff();
    if (!(mx > 0.0)) throw Error("cosine_bound: g ⊙ h^a is zero, so RMSNorm(h^a) = 0 and the cosine is undefined");
    if (!(my > 0.0)) throw Error("cosine_bound: g ⊙ h^b is zero, so RMSNorm(h^b) = 0 and the cosine is undefined");
    x /= mx;
    y /= my;
    Eigen::VectorXd xc = Eigen::VectorXd::Zero(n), yc = Eigen::VectorXd::Zero(n);
    double gmin_C = std::numeric_limits<double>::infinity(), gmax_rest = 0.0;
    for (Index i = 0; i < n; ++i) {
        const double a = std::abs(static_cast<double>(g(i)));
        if (in[static_cast<std::size_t>(i)]) {
            xc[i] = x[i];
            yc[i] = y[i];
            gmin_C = std::min(gmin_C, a);
        } else {
            gmax_rest = std::max(gmax_rest, a);
        }
    }
    if (C.empty()) gmin_C = 0.0;
    CosineReport r;
    r.actual = std::clamp(x.dot(y) / (x.norm() * y.norm()), -1.0, 1.0);
    const double xx = x.squaredNorm(), yy = y.squaredNorm();
    r.rho_a = std::min(1.0, xc.squaredNorm() / xx);
    r.rho_b = std::min(1.0, yc.squaredNorm() / yy);
    const double comp_a = std::min(1.0, (x - xc).squaredNorm() / xx), comp_b = std::min(1.0, (y - yc).squaredNorm() / yy);
    const double nxc = xc.norm(), nyc = yc.norm();
    r.cos_spike = (nxc > 0.0 && nyc > 0.0) ? std::clamp(xc.dot(yc) / (nxc * nyc), -1.0, 1.0) : 0.0;
    r.bound = detail::cosine_lower_bound(r.rho_a, r.rho_b, comp_a, comp_b, r.cos_spike);
    double raw_comp_a = 0, raw_comp_b = 0;
    std::tie(r.rho_a_raw, raw_comp_a) = detail::energy_split(ha, C, "cosine_bound");
    std::tie(r.rho_b_raw, raw_comp_b) = detail::energy_split(hb, C, "cosine_bound");
    if (r.cos_spike >= 0.0)
        r.bound_from_raw = detail::cosine_lower_bound(
            weighted_fraction_lower_bound(r.rho_a_raw, gmin_C, gmax_rest),
            weighted_fraction_lower_bound(r.rho_b_raw, gmin_C, gmax_rest),
            detail::weighted_complement_upper_bound(r.rho_a_raw, raw_comp_a, gmin_C, gmax_rest),
            detail::weighted_complement_upper_bound(r.rho_b_raw, raw_comp_b, gmin_C, gmax_rest), r.cos_spike);
    return r;
}

}  // namespace sinkscope::theory
