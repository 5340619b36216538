// The step-up FFN as a directional quadratic amplifier (paper B, claim B2), matrix-free.
//
// Statements and derivations: theory/quadratic_ffn.md. With h the normalised input (h~ in the paper),
// g = W_gate h, u = W_up h (d_ff), the SwiGLU output is F(h)_k = sum_i W_down[k,i] silu(g_i) u_i.
// Replacing silu by the identity gives the quadratic form
//     Q_k(h) = sum_i W_down[k,i] g_i u_i = h^T U_k h,   U_k = sum_i W_down[k,i] W_gate[i,:]^T W_up[i,:]
// and S_k = (U_k + U_k^T)/2 has the same quadratic form. Nothing here forms a d x d matrix per
// channel except the explicit oracle channel_matrix_dense():
//   ||U_k||_F^2 = w_k^T (G_gate ∘ G_up) w_k,  w_k = W_down[k,:], G = W W^T (d_ff x d_ff), ∘ = Hadamard,
//   computed for all k at once, block by block, never holding a d_ff x d_ff matrix either;
//   S_k x = (W_gate^T diag(w_k) W_up x + W_up^T diag(w_k) W_gate x) / 2, fed to Spectra's Lanczos.
// Weights are in PyTorch layout: W_gate, W_up (d_ff, d), W_down (d, d_ff).
#pragma once

#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <Spectra/SymEigsSolver.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "sinkscope/core/measures.hpp"
#include "sinkscope/core/error.hpp"
#include "sinkscope/theory/common.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace sinkscope::theory {

// A read-only view of one SwiGLU FFN's weights, F(h) = W_down (silu(W_gate h) ⊙ W_up h).
// Row-major inputs (PyTorch layout, e.g. a Map over a loaded tensor) are referenced without a
// copy; other storage orders are copied once into the view. The view checks shapes and
// finiteness once, at construction. It is neither copyable nor movable (it may own that copy).
template <class T>
class SwiGluWeights {
public:
    using Ref = Eigen::Ref<const RowMatrix<T>>;

    template <class G, class U, class D>
    SwiGluWeights(const Eigen::MatrixBase<G>& gate, const Eigen::MatrixBase<U>& up, const Eigen::MatrixBase<D>& down)
        : gate_(gate.derived()), up_(up.derived()), down_(down.derived()) {
        detail::check_scalar<T>();
        detail::require_nonempty(gate_, "SwiGluWeights: W_gate");
        detail::require_nonempty(up_, "SwiGluWeights: W_up");
        detail::require_nonempty(down_, "SwiGluWeights: W_down");
        if (up_.rows() != gate_.rows() || up_.cols() != gate_.cols())
            throw Error("SwiGluWeights: W_up " + detail::shape_str(up_.rows(), up_.cols()) + " must have the shape of W_gate " +
                        detail::shape_str(gate_.rows(), gate_.cols()) + " (d_ff, d)");
        if (down_.rows() != gate_.cols() || down_.cols() != gate_.rows())
            throw Error("SwiGluWeights: W_down " + detail::shape_str(down_.rows(), down_.cols()) + " must be (d, d_ff) = " +
                        detail::shape_str(gate_.cols(), gate_.rows()));
        detail::require_finite(gate_, "SwiGluWeights: W_gate");
        detail::require_finite(up_, "SwiGluWeights: W_up");
        detail::require_finite(down_, "SwiGluWeights: W_down");
    }
    SwiGluWeights(const SwiGluWeights&) = delete;
    SwiGluWeights& operator=(const SwiGluWeights&) = delete;

    const Ref& gate() const { return gate_; }  // (d_ff, d)
    const Ref& up() const { return up_; }      // (d_ff, d)
    const Ref& down() const { return down_; }  // (d, d_ff)
    Index d() const { return gate_.cols(); }
    Index d_ff() const { return gate_.rows(); }

private:
    Ref gate_, up_, down_;
};

template <class G, class U, class D>
SwiGluWeights(const Eigen::MatrixBase<G>&, const Eigen::MatrixBase<U>&, const Eigen::MatrixBase<D>&)
    -> SwiGluWeights<typename G::Scalar>;

namespace detail {

template <class T>
void require_channel(const SwiGluWeights<T>& W, Index k, const std::string& what) {
    if (k < 0 || k >= W.d()) {
        std::ostringstream os;
        os << what << ": channel " << k << " is outside [0, " << W.d() << ")";
        throw Error(os.str());
    }
}

template <class T, class Derived>
void require_activations(const SwiGluWeights<T>& W, const Eigen::MatrixBase<Derived>& H, const std::string& what) {
    static_assert(std::is_same_v<T, typename Derived::Scalar>, "weights and activations must have the same scalar");
    require_nonempty(H, what);
    if (H.cols() != W.d())
        throw Error(what + " " + shape_str(H.rows(), H.cols()) + " must have d = " + std::to_string(W.d()) +
                    " columns (one row per position)");
    require_finite(H, what);
}

// sigma(x) = 1 / (1 + e^-x), without overflow for either sign.
template <class T>
T sigmoid(T x) {
    if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
    const T e = std::exp(x);
    return e / (T(1) + e);
}

}  // namespace detail

// ---- Frobenius norms of all U_k, matrix-free -------------------------------------------------

// ||U_k||_F for every output channel k (d values).
//   ||U_k||_F^2 = sum_{i,j} W_down[k,i] W_down[k,j] (G_gate)_ij (G_up)_ij,  G = W W^T,
// evaluated over blocks I <= J of the d_ff index: H_IJ = (W_gate[I] W_gate[J]^T) ∘ (W_up[I] W_up[J]^T)
// (b x b), then sum_k += c_IJ * rowsum((W_down[:,I] H_IJ) ∘ W_down[:,J]) with c = 1 on the diagonal
// and 2 off it (H is symmetric). Cost 3 d d_ff^2 (1 + b/d_ff) flops; memory O(b (d + b)) per thread.
// With OpenMP the block pairs are shared among threads (coarse-grained: robust on a loaded
// machine); each pair's contribution is kept and summed in pair order, in double, so the result
// does not depend on the number of threads.
template <class T>
Vector<T> channel_frobenius_norms(const SwiGluWeights<T>& W, Index block = 1024) {
    if (block < 1) throw Error("channel_frobenius_norms: block must be >= 1");
    const Index d = W.d(), dff = W.d_ff();
    std::vector<std::pair<Index, Index>> pairs;  // (i0, j0), j0 >= i0
    for (Index i0 = 0; i0 < dff; i0 += block)
        for (Index j0 = i0; j0 < dff; j0 += block) pairs.emplace_back(i0, j0);
    const Index npairs = static_cast<Index>(pairs.size());
    Eigen::MatrixXd contrib(d, npairs);  // column p: the contribution of pair p to every ||U_k||_F^2
#ifdef _OPENMP
#pragma omp parallel if (npairs > 1 && static_cast<double>(d) * static_cast<double>(dff) * static_cast<double>(dff) > 1e7)
#endif
    {
        RowMatrix<T> Gg, Gu;  // (bI, bJ)
        RowMatrix<T> P;       // (d, bJ)
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (Index p = 0; p < npairs; ++p) {
            const Index i0 = pairs[static_cast<std::size_t>(p)].first, j0 = pairs[static_cast<std::size_t>(p)].second;
            const Index bi = std::min(block, dff - i0), bj = std::min(block, dff - j0);
            Gg.noalias() = W.gate().middleRows(i0, bi) * W.gate().middleRows(j0, bj).transpose();
            Gu.noalias() = W.up().middleRows(i0, bi) * W.up().middleRows(j0, bj).transpose();
            Gg.array() *= Gu.array();                                              // H_IJ = G_gate ∘ G_up
            P.noalias() = W.down().middleCols(i0, bi) * Gg;                        // W_down[:, I] H_IJ
            const double c = (i0 == j0) ? 1.0 : 2.0;
            contrib.col(p) = c * P.cwiseProduct(W.down().middleCols(j0, bj)).rowwise().sum().template cast<double>();
        }
    }
    const Eigen::VectorXd sum_sq = contrib.rowwise().sum();
    // The quadratic form of the PSD matrix G_gate ∘ G_up (Schur product theorem) is >= 0; clamp
    // rounding below 0.
    Vector<T> out = sum_sq.cwiseMax(0.0).cwiseSqrt().template cast<T>();
    detail::ensure_finite_result(out, "channel_frobenius_norms");
    return out;
}

// The oracle: U_k = W_gate^T diag(W_down[k,:]) W_up formed densely (d x d). O(d^2 d_ff) per
// channel; for checks at small sizes and for the bench's dense peer.
template <class T>
ColMatrix<T> channel_matrix_dense(const SwiGluWeights<T>& W, Index k) {
    detail::require_channel(W, k, "channel_matrix_dense");
    const Vector<T> w = W.down().row(k).transpose();
    return W.gate().transpose() * (w.asDiagonal() * W.up());
}

// Spike channels: k with ||U_k||_F > factor * median_k ||U_k||_F, sorted by decreasing norm.
template <class Derived>
std::vector<Index> detect_spike_channels(const Eigen::MatrixBase<Derived>& frobenius_norms, double factor = 10.0) {
    detail::require_nonempty(frobenius_norms, "detect_spike_channels: norms");
    detail::require_finite(frobenius_norms, "detect_spike_channels: norms");
    if (!(factor > 0.0) || !std::isfinite(factor)) throw Error("detect_spike_channels: factor must be finite and > 0");
    std::vector<double> v(static_cast<std::size_t>(frobenius_norms.size()));
    for (Index k = 0; k < frobenius_norms.size(); ++k) {
        v[static_cast<std::size_t>(k)] = static_cast<double>(frobenius_norms(k));
        if (v[static_cast<std::size_t>(k)] < 0) throw Error("detect_spike_channels: a Frobenius norm is negative");
    }
    const std::size_t n = v.size();
    const double median = measures::median_of(v);
    if (!(median > 0.0))
        throw Error("detect_spike_channels: the median ||U_k||_F is 0, so the relative rule is undefined");
    std::vector<Index> out;
    for (std::size_t k = 0; k < n; ++k)
        if (v[k] > factor * median) out.push_back(static_cast<Index>(k));
    std::sort(out.begin(), out.end(), [&](Index a, Index b) {
        return v[static_cast<std::size_t>(a)] > v[static_cast<std::size_t>(b)];
    });
    return out;
}

// ---- top eigenpairs of S_k by Lanczos (Spectra) ---------------------------------------------

enum class SpectrumRule {
    largest_magnitude,   // |lambda| largest first (the dominant eigenvalue, with its sign)
    largest_algebraic,   // most positive first
    smallest_algebraic,  // most negative first
};

// Largest d for which channel_spectrum may form U_k densely when Lanczos fails its residual check.
inline constexpr Index kDenseFallbackMaxD = 1024;

struct SpectrumOptions {
    Index nev = 1;                 // eigenpairs wanted, 1 <= nev <= d - 1
    Index ncv = 0;                 // Krylov dimension; 0 = min(d, max(2 nev + 1, nev + 32))
    SpectrumRule rule = SpectrumRule::largest_magnitude;
    Index max_restarts = 1000;     // implicit restarts of the Lanczos iteration
    double tol = 0.0;              // relative Ritz residual; 0 = 1e-10 (double) or 1e-5 (float)
    bool dense = false;            // skip Lanczos: the dense eigendecomposition of S_k (d <= kDenseFallbackMaxD),
                                   // exact, and what a failed residual check falls back to
};

template <class T>
struct ChannelSpectrum {
    Index channel = -1;
    bool dense_fallback = false;   // the pairs come from the dense S_k: Lanczos failed its residual check, or
                                   // SpectrumOptions::dense asked for it
    SpectrumRule rule = SpectrumRule::largest_magnitude;
    Vector<T> eigenvalues;         // (nev), signed, ordered by `rule`
    ColMatrix<T> eigenvectors;     // (d, nev), unit columns; sign: largest-|entry| positive
    Vector<T> residuals;           // ||S_k v - lambda v|| per pair, recomputed with the operator
    Index matvecs = 0;             // operator applications by the solver
    Index restarts = 0;

    T lambda_star() const { return eigenvalues[0]; }
    Vector<T> s_star() const { return eigenvectors.col(0); }
};

namespace detail {

// x -> S_k x = (W_gate^T (w ⊙ W_up x) + W_up^T (w ⊙ W_gate x)) / 2, w = W_down[k,:]: O(d d_ff),
// no d x d matrix. Fused by blocks of hidden units i: g_I = W_gate[I] x, u_I = W_up[I] x, then
// y += W_gate[I]^T (w_I ⊙ u_I) + W_up[I]^T (w_I ⊙ g_I) while the rows of block I are still in
// cache, so each weight matrix is read from memory once per product (the product is
// memory-bound). With OpenMP the blocks are shared among threads, each with its own accumulator.
template <class T>
class ChannelOperator {
public:
    using Scalar = T;
    static constexpr Index kRowsPerBlock = 16;  // 2 x 16 rows of d floats stay in L2 for d <= 8192

    ChannelOperator(const SwiGluWeights<T>& W, Index k) : W_(W), w_(W.down().row(k).transpose()) {}
    Index rows() const { return W_.d(); }
    Index cols() const { return W_.d(); }

    void perform_op(const T* x_in, T* y_out) const {
        const Index d = W_.d(), dff = W_.d_ff();
        Eigen::Map<const Vector<T>> x(x_in, d);
        Eigen::Map<Vector<T>> y(y_out, d);
        const Index nblocks = (dff + kRowsPerBlock - 1) / kRowsPerBlock;
        int nthreads = 1;
#ifdef _OPENMP
        nthreads = std::max(1, omp_get_max_threads());
        if (static_cast<double>(d) * static_cast<double>(dff) < 2.5e5) nthreads = 1;  // too small to share
#endif
        if (static_cast<Index>(partial_.size()) != nthreads) partial_.assign(static_cast<std::size_t>(nthreads), Vector<T>());
#ifdef _OPENMP
#pragma omp parallel num_threads(nthreads) if (nthreads > 1)
#endif
        {
            int tid = 0;
#ifdef _OPENMP
            tid = omp_get_thread_num();
#endif
            Vector<T>& acc = partial_[static_cast<std::size_t>(tid)];
            acc.setZero(d);
            Vector<T> g(kRowsPerBlock), u(kRowsPerBlock);
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
            for (Index blk = 0; blk < nblocks; ++blk) {
                const Index i0 = blk * kRowsPerBlock;
                const Index b = std::min(kRowsPerBlock, dff - i0);
                const auto Gb = W_.gate().middleRows(i0, b);   // (b, d)
                const auto Ub = W_.up().middleRows(i0, b);     // (b, d)
                g.head(b).noalias() = Gb * x;                  // W_gate[I] x
                u.head(b).noalias() = Ub * x;                  // W_up[I] x
                g.head(b).array() *= w_.segment(i0, b).array();
                u.head(b).array() *= w_.segment(i0, b).array();
                acc.noalias() += Gb.transpose() * u.head(b);   // W_gate[I]^T (w ⊙ W_up x)
                acc.noalias() += Ub.transpose() * g.head(b);   // W_up[I]^T (w ⊙ W_gate x)
            }
        }
        y = partial_[0];
        for (std::size_t t = 1; t < partial_.size(); ++t) y += partial_[t];
        y *= T(0.5);
        ++count_;
    }
    Index count() const { return count_; }

private:
    const SwiGluWeights<T>& W_;
    Vector<T> w_;
    mutable std::vector<Vector<T>> partial_;
    mutable Index count_ = 0;
};

template <class T>
void normalise_sign(Eigen::Ref<Vector<T>> v) {
    Index i = 0;
    v.cwiseAbs().maxCoeff(&i);
    if (v[i] < T(0)) v = -v;
}

}  // namespace detail

// Top eigenpairs of S_k = (U_k + U_k^T)/2 by Spectra's implicitly restarted Lanczos on the
// matrix-free operator. Throws sinkscope::Error if the iteration does not converge.
template <class T>
ChannelSpectrum<T> channel_spectrum(const SwiGluWeights<T>& W, Index k, SpectrumOptions opt = {}) {
    detail::require_channel(W, k, "channel_spectrum");
    const Index d = W.d();
    if (d < 2) throw Error("channel_spectrum: d = 1 leaves no room for a Lanczos iteration (needs d >= 2)");
    if (opt.nev < 1 || opt.nev > d - 1) {
        std::ostringstream os;
        os << "channel_spectrum: nev = " << opt.nev << " must satisfy 1 <= nev <= d - 1 = " << d - 1;
        throw Error(os.str());
    }
    Index ncv = opt.ncv > 0 ? opt.ncv : std::min(d, std::max(2 * opt.nev + 1, opt.nev + 32));
    if (ncv <= opt.nev || ncv > d) {
        std::ostringstream os;
        os << "channel_spectrum: ncv = " << ncv << " must satisfy nev < ncv <= d (nev " << opt.nev << ", d " << d << ")";
        throw Error(os.str());
    }
    if (opt.max_restarts < 1) throw Error("channel_spectrum: max_restarts must be >= 1");
    const T tol = opt.tol > 0 ? static_cast<T>(opt.tol) : (std::is_same_v<T, float> ? T(1e-5) : T(1e-10));

    ChannelSpectrum<T> out;
    out.channel = k;
    out.rule = opt.rule;
    detail::ChannelOperator<T> op(W, k);
    if (W.down().row(k).cwiseAbs().maxCoeff() == T(0)) {
        // S_k = 0: every vector is an eigenvector with eigenvalue 0; return e_1..e_nev.
        out.eigenvalues = Vector<T>::Zero(opt.nev);
        out.eigenvectors = ColMatrix<T>::Identity(d, opt.nev);
        out.residuals = Vector<T>::Zero(opt.nev);
        return out;
    }
    Spectra::SortRule selection = Spectra::SortRule::LargestMagn;
    if (opt.rule == SpectrumRule::largest_algebraic) selection = Spectra::SortRule::LargestAlge;
    if (opt.rule == SpectrumRule::smallest_algebraic) selection = Spectra::SortRule::SmallestAlge;
    Vector<T> values;
    ColMatrix<T> vectors;
    if (opt.dense && d > kDenseFallbackMaxD) {
        std::ostringstream os;
        os << "channel_spectrum: dense asked for d = " << d << ", above kDenseFallbackMaxD = " << kDenseFallbackMaxD;
        throw Error(os.str());
    }
    if (opt.dense) {
        // NaN pairs fail the residual check below, which then decomposes the dense S_k.
        values = Vector<T>::Constant(opt.nev, std::numeric_limits<T>::quiet_NaN());
        vectors = ColMatrix<T>::Zero(d, opt.nev);
    } else try {
        Spectra::SymEigsSolver<detail::ChannelOperator<T>> eigs(op, opt.nev, ncv);
        eigs.init();  // Spectra's fixed-seed random start vector: results are reproducible
        const Index nconv = eigs.compute(selection, opt.max_restarts, tol, Spectra::SortRule::LargestAlge);
        if (eigs.info() != Spectra::CompInfo::Successful || nconv < opt.nev) {
            std::ostringstream os;
            os << "channel_spectrum: Lanczos did not converge for channel " << k << " (" << nconv << " of " << opt.nev
               << " eigenpairs after " << eigs.num_iterations() << " restarts; raise max_restarts or ncv, or loosen tol)";
            throw Error(os.str());
        }
        values = eigs.eigenvalues();
        vectors = eigs.eigenvectors();
        out.restarts = eigs.num_iterations();
        out.matvecs = eigs.num_operations();
    } catch (const Error&) {
        throw;
    } catch (const std::exception& e) {
        // A Lanczos breakdown can also surface as a failed tridiagonal solve (non-finite Ritz values).
        if (d > kDenseFallbackMaxD) throw Error(std::string("channel_spectrum: Spectra failed: ") + e.what());
        values = Vector<T>::Constant(opt.nev, std::numeric_limits<T>::quiet_NaN());
        vectors = ColMatrix<T>::Zero(d, opt.nev);
    }
    // The first nev pairs of (values, vectors) in the rule's order, unit-norm with a fixed sign, and the
    // residual ‖S v − λ v‖ of each, recomputed with the operator.
    out.eigenvalues.resize(opt.nev);
    out.eigenvectors.resize(d, opt.nev);
    out.residuals.resize(opt.nev);
    Vector<T> Sv(d);
    auto take_pairs = [&](const Vector<T>& vals, const ColMatrix<T>& vecs) {
        std::vector<Index> order(static_cast<std::size_t>(vals.size()));
        std::iota(order.begin(), order.end(), Index(0));
        std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) {
            switch (opt.rule) {
                case SpectrumRule::largest_magnitude: return std::abs(vals[a]) > std::abs(vals[b]);
                case SpectrumRule::largest_algebraic: return vals[a] > vals[b];
                default: return vals[a] < vals[b];
            }
        });
        for (Index j = 0; j < opt.nev; ++j) {
            out.eigenvalues[j] = vals[order[static_cast<std::size_t>(j)]];
            Vector<T> v = vecs.col(order[static_cast<std::size_t>(j)]);
            v.normalize();
            detail::normalise_sign<T>(v);
            out.eigenvectors.col(j) = v;
            op.perform_op(v.data(), Sv.data());
            out.residuals[j] = (Sv - out.eigenvalues[j] * v).norm();
        }
    };
    take_pairs(values, vectors);
    // Lanczos breaks down when the start vector's Krylov space is smaller than asked, which a repeated
    // dominant eigenvalue causes (S = diag(0, 2, 2) spans only 2 Krylov directions): Spectra then reports
    // convergence with Ritz pairs that are not eigenpairs. (Known limit, not fixed here: single-vector
    // Lanczos cannot see multiplicity, so for an exactly double |λ⋆| it may return λ⋆ once and the next
    // eigenvalue as λ₂ — a true eigenpair, so no residual check catches it; the property tests find
    // this with RC_PARAMS="seed=7", d = 44. A deflated second run would certify it.) Every pair is checked against S v = λ v;
    // a failed check falls back to the dense eigendecomposition of S_k = ½(U_k + U_kᵀ) when d is small
    // enough to form U_k (d ≤ kDenseFallbackMaxD), and throws otherwise.
    const T scale = out.eigenvalues.allFinite() ? std::max(out.eigenvalues.cwiseAbs().maxCoeff(), std::numeric_limits<T>::min())
                                                : std::numeric_limits<T>::infinity();
    const T accept = (std::is_same_v<T, float> ? T(1e-3) : T(1e-7)) * scale;
    if (!out.eigenvalues.allFinite() || !out.residuals.allFinite() || out.residuals.maxCoeff() > accept) {
        if (d > kDenseFallbackMaxD) {
            std::ostringstream os;
            os << "channel_spectrum: Lanczos returned an inaccurate eigenpair for channel " << k << " (residual "
               << out.residuals.maxCoeff() << " against |lambda| " << scale
               << "), as a repeated dominant eigenvalue causes; d = " << d << " is too large for the dense fallback";
            throw Error(os.str());
        }
        const ColMatrix<T> U = channel_matrix_dense(W, k);
        const ColMatrix<T> S = T(0.5) * (U + U.transpose());
        Eigen::SelfAdjointEigenSolver<ColMatrix<T>> es(S);
        if (es.info() != Eigen::Success) throw Error("channel_spectrum: the dense fallback eigensolver failed");
        take_pairs(es.eigenvalues(), es.eigenvectors());
        out.dense_fallback = true;
    }
    detail::ensure_finite_result(out.eigenvalues, "channel_spectrum: eigenvalues");
    return out;
}

// |cos(s*_a, s*_b)| for the dominant eigenvectors of several channels (m x m); the sign of an
// eigenvector is arbitrary, hence the absolute value.
template <class T>
RowMatrix<T> spike_alignment(const std::vector<ChannelSpectrum<T>>& spectra) {
    if (spectra.empty()) throw Error("spike_alignment: no spectra given");
    const Index d = spectra.front().eigenvectors.rows();
    ColMatrix<T> S(d, static_cast<Index>(spectra.size()));
    for (std::size_t a = 0; a < spectra.size(); ++a) {
        if (spectra[a].eigenvectors.rows() != d || spectra[a].eigenvectors.cols() < 1)
            throw Error("spike_alignment: spectra have different dimensions or no eigenvector");
        S.col(static_cast<Index>(a)) = spectra[a].eigenvectors.col(0).normalized();
    }
    return (S.transpose() * S).cwiseAbs();
}

// ---- predictions against the true SwiGLU ------------------------------------------------------

// True SwiGLU output F(h) = W_down (silu(W_gate h) ⊙ W_up h) for every row of H (n, d) -> (n, d).
template <class T, class Derived>
RowMatrix<T> swiglu_forward(const SwiGluWeights<T>& W, const Eigen::MatrixBase<Derived>& H) {
    detail::require_activations(W, H, "swiglu_forward: activations");
    RowMatrix<T> g = H * W.gate().transpose();                        // (n, d_ff)
    const RowMatrix<T> u = H * W.up().transpose();                    // (n, d_ff)
    g = g.unaryExpr([](T x) { return x * detail::sigmoid(x); });      // silu
    RowMatrix<T> out = g.cwiseProduct(u) * W.down().transpose();      // (n, d)
    detail::ensure_finite_result(out, "swiglu_forward");
    return out;
}

// The quadratic form Q_k(h) = h^T U_k h = sum_i W_down[k,i] g_i u_i for every row and channel (n, d).
template <class T, class Derived>
RowMatrix<T> quadratic_form_forward(const SwiGluWeights<T>& W, const Eigen::MatrixBase<Derived>& H) {
    detail::require_activations(W, H, "quadratic_form_forward: activations");
    const RowMatrix<T> g = H * W.gate().transpose();
    const RowMatrix<T> u = H * W.up().transpose();
    RowMatrix<T> out = g.cwiseProduct(u) * W.down().transpose();
    detail::ensure_finite_result(out, "quadratic_form_forward");
    return out;
}

// The departure of SiLU from the identity, |silu(g) - g| = |g| sigma(-g), elementwise.
template <class T>
T silu_departure(T g) {
    return std::abs(g) * detail::sigmoid(-g);
}

// max_{g >= 0} g sigma(-g) = W(1/e) (Lambert W), attained at g = 1 + W(1/e).
inline constexpr double kSiluDepartureMaxNonnegative = 0.27846454276107379511;

// Elementwise bound on |F_k(h) - Q_k(h)| (n, d):
//   B_k = sum_i |W_down[k,i]| |u_i| |g_i| sigma(-g_i)   (triangle inequality; equality when d_ff = 1)
template <class T, class Derived>
RowMatrix<T> silu_linearisation_bound(const SwiGluWeights<T>& W, const Eigen::MatrixBase<Derived>& H) {
    detail::require_activations(W, H, "silu_linearisation_bound: activations");
    RowMatrix<T> g = H * W.gate().transpose();
    const RowMatrix<T> u = H * W.up().transpose();
    g = g.unaryExpr([](T x) { return silu_departure(x); });
    RowMatrix<T> out = g.cwiseProduct(u.cwiseAbs()) * W.down().cwiseAbs().transpose();
    detail::ensure_finite_result(out, "silu_linearisation_bound");
    return out;
}

// The coarse bound in terms of the gate pre-activations only (n, d):
//   |F_k - Q_k| <= (sum_i |W_down[k,i]| |u_i|) * max_i |g_i| sigma(-g_i)
// with max_i |g_i| sigma(-g_i) <= gamma e^{-gamma} when every g_i >= gamma >= 1, and
// <= W(1/e) = 0.2785 when every g_i >= 0 (see theory/quadratic_ffn.md, statement Q4).
template <class T, class Derived>
RowMatrix<T> silu_linearisation_bound_coarse(const SwiGluWeights<T>& W, const Eigen::MatrixBase<Derived>& H) {
    detail::require_activations(W, H, "silu_linearisation_bound_coarse: activations");
    const RowMatrix<T> g = H * W.gate().transpose();
    const RowMatrix<T> u = H * W.up().transpose();
    RowMatrix<T> out = u.cwiseAbs() * W.down().cwiseAbs().transpose();  // (n, d)
    for (Index t = 0; t < g.rows(); ++t) {
        T worst = 0;
        for (Index i = 0; i < g.cols(); ++i) worst = std::max(worst, silu_departure(g(t, i)));
        out.row(t) *= worst;
    }
    detail::ensure_finite_result(out, "silu_linearisation_bound_coarse");
    return out;
}

// Rank-one prediction lambda* (s*^T h)^2 for the spectrum's channel, one value per row of H (n).
template <class T, class Derived>
Vector<T> rank_one_forward(const ChannelSpectrum<T>& spectrum, const Eigen::MatrixBase<Derived>& H) {
    static_assert(std::is_same_v<T, typename Derived::Scalar>, "spectrum and activations must have the same scalar");
    if (spectrum.eigenvalues.size() < 1) throw Error("rank_one_forward: the spectrum has no eigenpair");
    detail::require_nonempty(H, "rank_one_forward: activations");
    detail::require_same(H.cols(), spectrum.eigenvectors.rows(), "rank_one_forward: activations and s* disagree on d");
    detail::require_finite(H, "rank_one_forward: activations");
    const Vector<T> proj = H * spectrum.eigenvectors.col(0);
    return spectrum.lambda_star() * proj.array().square().matrix();
}

// |h^T S_k h - lambda* (s*^T h)^2| <= |lambda_2| (||h||^2 - (s*^T h)^2), lambda_2 the eigenvalue of
// second-largest magnitude (needs a largest_magnitude spectrum with nev >= 2). One value per row (n).
template <class T, class Derived>
Vector<T> rank_one_error_bound(const ChannelSpectrum<T>& spectrum, const Eigen::MatrixBase<Derived>& H) {
    static_assert(std::is_same_v<T, typename Derived::Scalar>, "spectrum and activations must have the same scalar");
    if (spectrum.rule != SpectrumRule::largest_magnitude || spectrum.eigenvalues.size() < 2)
        throw Error("rank_one_error_bound: needs a largest_magnitude spectrum with nev >= 2");
    detail::require_nonempty(H, "rank_one_error_bound: activations");
    detail::require_same(H.cols(), spectrum.eigenvectors.rows(), "rank_one_error_bound: activations and s* disagree on d");
    detail::require_finite(H, "rank_one_error_bound: activations");
    const Vector<T> proj = H * spectrum.eigenvectors.col(0);
    const Vector<T> rest = (H.rowwise().squaredNorm() - proj.array().square().matrix()).cwiseMax(T(0));
    return std::abs(spectrum.eigenvalues[1]) * rest;
}

}  // namespace sinkscope::theory
