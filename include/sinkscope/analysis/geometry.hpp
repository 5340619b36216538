// Small vector geometry the experiments share: cosines, RMS normalisation, PCA, low-dimensional
// subspaces and energy shares. Row-major inputs, one row per vector (a sample, a position, a key).
//
//   cosine(a, b)                 a·b / (‖a‖ ‖b‖)
//   mean_pairwise_cosine(X)      (2 / (n(n−1))) Σ_{i<j} cos(x_i, x_j)
//   rms_normalize(x)             x / √(mean(x²))    (RMSNorm without gain or eps: ‖·‖ = √d, |x̃_i| ≤ √d)
//   pca(X, k)                    top-k eigenpairs of the covariance (1/n) Σ (x_i − μ)(x_i − μ)ᵀ
//   uncentered_spectrum(X)       eigenvalues of (1/n) XᵀX, descending (energy per direction)
//   energy_dimension(λ, f)       smallest r with Σ_{i<r} λ_i ≥ f Σ λ_i
//   top_subspace(X, r)           orthonormal basis (r × d) of the top-r eigenvectors of (1/n) XᵀX
//   projection_share(B, x)       ‖Bᵀ B x‖² / ‖x‖² = ‖B x‖² / ‖x‖² for an orthonormal basis B (rows)
//   energy_share(x, C)           Σ_{i∈C} x_i² / ‖x‖²
//   pearson(x, y)                cov(x, y) / (σ_x σ_y)   (0 when either is constant)
// Every function throws sinkscope::Error on empty or mismatched input and on zero vectors whose
// direction is needed; none returns a silent NaN.
#pragma once

#include <Eigen/Core>
#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"

namespace sinkscope::analysis {

using RowMatrixXd = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

namespace detail {
inline void require_rows(const RowMatrixXd& X, const std::string& what, Eigen::Index min_rows = 1) {
    require(X.rows() >= min_rows && X.cols() > 0,
            what + ": needs at least " + std::to_string(min_rows) + " non-empty rows, got (" + std::to_string(X.rows()) +
                ", " + std::to_string(X.cols()) + ")");
    require(X.allFinite(), what + ": input has a non-finite entry");
}
}  // namespace detail

inline double cosine(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
    require(a.size() == b.size() && a.size() > 0, "cosine: vectors of different or zero length");
    const double na = a.norm(), nb = b.norm();
    require(na > 0 && nb > 0, "cosine: a zero vector has no direction");
    require(std::isfinite(na) && std::isfinite(nb), "cosine: non-finite vector");
    return std::clamp(a.dot(b) / (na * nb), -1.0, 1.0);
}

// Mean cosine over all unordered pairs of distinct rows (needs n ≥ 2, no zero row).
inline double mean_pairwise_cosine(const RowMatrixXd& X) {
    detail::require_rows(X, "mean_pairwise_cosine", 2);
    RowMatrixXd U = X;
    for (Eigen::Index i = 0; i < U.rows(); ++i) {
        const double n = U.row(i).norm();
        require(n > 0, "mean_pairwise_cosine: row " + std::to_string(i) + " is the zero vector");
        U.row(i) /= n;
    }
    // Σ_{i<j} u_i·u_j = (‖Σ u_i‖² − n) / 2
    const double s = U.colwise().sum().squaredNorm();
    const double n = double(U.rows());
    return std::clamp((s - n) / (n * (n - 1)), -1.0, 1.0);
}

inline Eigen::VectorXd rms_normalize(const Eigen::VectorXd& x) {
    require(x.size() > 0, "rms_normalize: empty vector");
    const double rms = std::sqrt(x.squaredNorm() / double(x.size()));
    require(rms > 0 && std::isfinite(rms), "rms_normalize: zero or non-finite vector");
    return x / rms;
}

inline double energy_share(const Eigen::VectorXd& x, const std::vector<std::int64_t>& channels) {
    const double total = x.squaredNorm();
    require(total > 0 && std::isfinite(total), "energy_share: zero or non-finite vector");
    double s = 0;
    for (auto c : channels) {
        require(c >= 0 && c < x.size(), "energy_share: channel " + std::to_string(c) + " out of range");
        s += x[c] * x[c];
    }
    return s / total;
}

struct Pca {
    Eigen::VectorXd mean;              // (d) μ
    RowMatrixXd components;            // (k × d) unit eigenvectors of the covariance, by decreasing variance
    Eigen::VectorXd variance;          // (k) their eigenvalues
    double total_variance = 0;         // trace of the covariance

    // (n × k) coordinates (x − μ)·components_jᵀ.
    RowMatrixXd project(const RowMatrixXd& X) const {
        require(X.cols() == mean.size(), "Pca::project: dimension mismatch");
        return (X.rowwise() - mean.transpose()) * components.transpose();
    }
    double explained(Eigen::Index j) const { return total_variance > 0 ? variance[j] / total_variance : 0.0; }
};

namespace detail {
// Eigenpairs of a symmetric matrix, descending.
inline void sorted_eigen(const Eigen::MatrixXd& C, Eigen::VectorXd& values, Eigen::MatrixXd& vectors) {
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(C);
    require(eig.info() == Eigen::Success, "eigen-decomposition failed");
    values = eig.eigenvalues().reverse();
    vectors = eig.eigenvectors().rowwise().reverse();
    values = values.cwiseMax(0.0);  // a covariance is PSD; clamp rounding below 0
}
}  // namespace detail

inline Pca pca(const RowMatrixXd& X, Eigen::Index k) {
    detail::require_rows(X, "pca", 2);
    require(k >= 1 && k <= X.cols(), "pca: k must lie in [1, d]");
    Pca p;
    p.mean = X.colwise().mean().transpose();
    const RowMatrixXd Xc = X.rowwise() - p.mean.transpose();
    const Eigen::MatrixXd C = (Xc.transpose() * Xc) / double(X.rows());
    Eigen::VectorXd values;
    Eigen::MatrixXd vectors;
    detail::sorted_eigen(C, values, vectors);
    p.total_variance = values.sum();
    p.variance = values.head(k);
    p.components = vectors.leftCols(k).transpose();
    return p;
}

inline Eigen::VectorXd uncentered_spectrum(const RowMatrixXd& X) {
    detail::require_rows(X, "uncentered_spectrum");
    Eigen::VectorXd values;
    Eigen::MatrixXd vectors;
    detail::sorted_eigen((X.transpose() * X) / double(X.rows()), values, vectors);
    return values;
}

inline Eigen::Index energy_dimension(const Eigen::VectorXd& descending, double fraction) {
    require(descending.size() > 0, "energy_dimension: empty spectrum");
    require(fraction > 0 && fraction <= 1, "energy_dimension: fraction must lie in (0, 1]");
    const double total = descending.sum();
    require(total > 0, "energy_dimension: the spectrum has no energy");
    double s = 0;
    for (Eigen::Index r = 0; r < descending.size(); ++r) {
        s += descending[r];
        if (s >= fraction * total * (1 - 1e-12)) return r + 1;
    }
    return descending.size();
}

inline RowMatrixXd top_subspace(const RowMatrixXd& X, Eigen::Index r) {
    detail::require_rows(X, "top_subspace");
    require(r >= 1 && r <= X.cols(), "top_subspace: r must lie in [1, d]");
    Eigen::VectorXd values;
    Eigen::MatrixXd vectors;
    detail::sorted_eigen((X.transpose() * X) / double(X.rows()), values, vectors);
    return vectors.leftCols(r).transpose();
}

inline double projection_share(const RowMatrixXd& basis, const Eigen::VectorXd& x) {
    require(basis.cols() == x.size(), "projection_share: dimension mismatch");
    const double n = x.squaredNorm();
    require(n > 0 && std::isfinite(n), "projection_share: zero or non-finite vector");
    return std::clamp((basis * x).squaredNorm() / n, 0.0, 1.0);
}

inline double pearson(const std::vector<double>& x, const std::vector<double>& y) {
    require(x.size() == y.size() && x.size() >= 2, "pearson: needs two series of the same length >= 2");
    const double n = double(x.size());
    double mx = 0, my = 0;
    for (std::size_t i = 0; i < x.size(); ++i) { mx += x[i]; my += y[i]; }
    mx /= n; my /= n;
    double sxy = 0, sxx = 0, syy = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        sxy += (x[i] - mx) * (y[i] - my); sxx += (x[i] - mx) * (x[i] - mx); syy += (y[i] - my) * (y[i] - my);
    }
    require(std::isfinite(sxy) && std::isfinite(sxx) && std::isfinite(syy), "pearson: non-finite input");
    if (!(sxx > 0) || !(syy > 0)) return 0.0;
    return std::clamp(sxy / std::sqrt(sxx * syy), -1.0, 1.0);
}

}  // namespace sinkscope::analysis
