// The span of a few weight columns and the share of a vector's energy inside it (claim B5 of Paper B).
//
// Paper B: "sink keys k^s ≈ Σ_{i∈C} h̃ᵢ W_Kᵀ eᵢ lie in a 1–2-dimensional subspace". Written as the key
// projection k = W_K h̃ (W_K of one kv head: d_h × d_model), the subspace the weights predict is
//   S = span{ W_K eᵢ : i ∈ C }          (the columns of W_K at the spike channels C)
// and a key's energy share in S is
//   E(k) = ‖P_S k‖² / ‖k‖²,   P_S = B Bᵀ the orthogonal projector, B an orthonormal basis of S,
// so E(k) = ‖Bᵀk‖² / ‖k‖² ∈ [0, 1]: 1 for k ∈ S, 0 for k ⊥ S, cos² of the angle between k and S.
// A key whose direction is uniform on the sphere has E[E(k)] = r / d_h (r = dim S): each of the d_h
// orthonormal directions holds 1/d_h of its energy on average.
//
//   span_basis(V)          orthonormal basis (r × d_h, rows) of the span of V's columns (d_h × m), r its
//                          numerical rank (singular values above rel_tol · the largest; r = 0 when V = 0)
//   subspace_share(B, k)   E(k) = ‖B k‖² / ‖k‖² for a basis B (rows), NaN for the zero vector (no direction:
//                          undefined, for the caller to count), 0 for r = 0 (the projector onto {0} is 0)
#pragma once

#include <Eigen/Core>
#include <Eigen/SVD>

#include <algorithm>
#include <cmath>
#include <limits>

#include "sinkscope/analysis/geometry.hpp"
#include "sinkscope/core/error.hpp"

namespace sinkscope::analysis {

inline RowMatrixXd span_basis(const Eigen::MatrixXd& columns, double rel_tol = 1e-6) {
    require(columns.rows() > 0, "span_basis: vectors of dimension 0");
    require(columns.allFinite(), "span_basis: a non-finite entry");
    require(rel_tol > 0 && rel_tol < 1, "span_basis: rel_tol must lie in (0, 1)");
    if (columns.cols() == 0) return RowMatrixXd(0, columns.rows());
    const Eigen::JacobiSVD<Eigen::MatrixXd> svd(columns, Eigen::ComputeThinU);
    const Eigen::VectorXd& s = svd.singularValues();  // descending
    Eigen::Index r = 0;
    if (s.size() && s[0] > 0)
        while (r < s.size() && s[r] > rel_tol * s[0]) ++r;
    return svd.matrixU().leftCols(r).transpose();
}

inline double subspace_share(const RowMatrixXd& basis, const Eigen::VectorXd& k) {
    require(basis.cols() == k.size(), "subspace_share: the basis and the vector differ in dimension");
    require(k.allFinite(), "subspace_share: a non-finite entry");
    const double n = k.squaredNorm();
    if (!(n > 0)) return std::numeric_limits<double>::quiet_NaN();
    if (basis.rows() == 0) return 0.0;
    return std::clamp((basis * k).squaredNorm() / n, 0.0, 1.0);
}

}  // namespace sinkscope::analysis
