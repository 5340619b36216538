// Shared types and input checks of the theory module.
//
// Conventions of every function in sinkscope::theory:
//   - activations are row-major, one row per position:            RowMatrix<T>  (T_positions, d)
//   - weights are in PyTorch layout, (out_features, in_features):  W_gate, W_up (d_ff, d), W_down (d, d_ff)
//   - the attention pattern of one head is (T, T), row = query, column = key, causal
//     (A[t, j] = 0 for j > t), each row a probability vector.
// Functions are templated on the scalar (float or double) and take any Eigen expression; they never
// take a model object. Every bad input (empty or mismatched shapes, d = 1 where the statement needs
// an orthogonal complement, NaN / inf, zero vectors whose direction is undefined) throws
// sinkscope::Error naming the argument; no function returns a silent NaN.
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "sinkscope/core/error.hpp"

namespace sinkscope::theory {

using Index = Eigen::Index;

template <class T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ColMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
template <class T>
using Vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;

namespace detail {

template <class T>
constexpr void check_scalar() {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                  "sinkscope::theory functions are defined for float and double");
}

inline std::string shape_str(Index rows, Index cols) {
    std::ostringstream os;
    os << "(" << rows << ", " << cols << ")";
    return os.str();
}

// Throws unless every entry of x is finite; names the first bad entry.
template <class Derived>
void require_finite(const Eigen::DenseBase<Derived>& x, const std::string& what) {
    if (x.derived().allFinite()) return;
    for (Index r = 0; r < x.rows(); ++r)
        for (Index c = 0; c < x.cols(); ++c)
            if (!std::isfinite(static_cast<double>(x(r, c)))) {
                std::ostringstream os;
                os << what << " has a non-finite entry (" << x(r, c) << ") at (" << r << ", " << c << ")";
                throw Error(os.str());
            }
}

template <class Derived>
void require_nonempty(const Eigen::DenseBase<Derived>& x, const std::string& what) {
    if (x.rows() == 0 || x.cols() == 0)
        throw Error(what + " is empty " + shape_str(x.rows(), x.cols()));
}

inline void require_dim_at_least(Index d, Index min_d, const std::string& what, const std::string& why) {
    if (d < min_d) {
        std::ostringstream os;
        os << what << " has dimension " << d << " but needs at least " << min_d << " (" << why << ")";
        throw Error(os.str());
    }
}

inline void require_same(Index a, Index b, const std::string& message) {
    if (a != b) {
        std::ostringstream os;
        os << message << " (" << a << " vs " << b << ")";
        throw Error(os.str());
    }
}

// Tolerance for "this row is a probability vector" checks on captured patterns: float softmax rows
// sum to 1 within a few ulps times the row length; we allow sqrt(eps) (3.5e-4 in float, 1.5e-8 in
// double) plus 8 ulps per entry so that long rows of float patterns are accepted.
template <class T>
T pattern_tolerance(Index n) {
    const T eps = std::numeric_limits<T>::epsilon();
    return std::sqrt(eps) + T(8) * eps * static_cast<T>(n);
}

// An attention pattern of one head: square, finite, entries >= 0, causal (A[t, j] = 0 for j > t,
// within tolerance) and rows that sum to 1 (within tolerance).
template <class Derived>
void require_causal_pattern(const Eigen::MatrixBase<Derived>& A, const std::string& what) {
    using T = typename Derived::Scalar;
    require_nonempty(A, what);
    if (A.rows() != A.cols())
        throw Error(what + " must be square (T, T), got " + shape_str(A.rows(), A.cols()));
    require_finite(A, what);
    const Index n = A.rows();
    const T tol = pattern_tolerance<T>(n);
    for (Index t = 0; t < n; ++t) {
        T sum = 0;
        for (Index j = 0; j < n; ++j) {
            const T a = A(t, j);
            if (a < -tol) {
                std::ostringstream os;
                os << what << " has a negative weight " << a << " at (" << t << ", " << j << ")";
                throw Error(os.str());
            }
            if (j > t && std::abs(a) > tol) {
                std::ostringstream os;
                os << what << " is not causal: weight " << a << " at (" << t << ", " << j
                   << ") above the diagonal";
                throw Error(os.str());
            }
            sum += a;
        }
        if (std::abs(sum - T(1)) > tol) {
            std::ostringstream os;
            os << what << " row " << t << " sums to " << sum << ", not 1 (tolerance " << tol << ")";
            throw Error(os.str());
        }
    }
}

// Euclidean norm without overflow / underflow (Eigen's stableNorm), in double for the checks.
template <class Derived>
double stable_norm(const Eigen::MatrixBase<Derived>& x) {
    return static_cast<double>(x.stableNorm());
}

// Throws if x is the zero vector (its direction is undefined).
template <class Derived>
void require_nonzero(const Eigen::MatrixBase<Derived>& x, const std::string& what) {
    if (!(stable_norm(x) > 0.0)) throw Error(what + " is the zero vector; its direction is undefined");
}

// Checks that the channel set C is a set of distinct indices in [0, d).
inline void require_channel_set(const std::vector<Index>& C, Index d, const std::string& what) {
    std::vector<Index> sorted = C;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < sorted.size(); ++i) {
        if (sorted[i] < 0 || sorted[i] >= d) {
            std::ostringstream os;
            os << what << " contains channel " << sorted[i] << " outside [0, " << d << ")";
            throw Error(os.str());
        }
        if (i > 0 && sorted[i] == sorted[i - 1]) {
            std::ostringstream os;
            os << what << " contains channel " << sorted[i] << " twice";
            throw Error(os.str());
        }
    }
}

// Throws if a computed result is not finite (guards against silent NaN from overflow).
template <class Derived>
void ensure_finite_result(const Eigen::DenseBase<Derived>& x, const std::string& what) {
    if (!x.derived().allFinite())
        throw Error(what + " overflowed to a non-finite value; rescale the input");
}
inline void ensure_finite_result(double x, const std::string& what) {
    if (!std::isfinite(x)) throw Error(what + " overflowed to a non-finite value; rescale the input");
}

}  // namespace detail
}  // namespace sinkscope::theory
