// From sparse hidden states to attention sinks (paper B, claim B5) and the Gu et al. sink rate.
//
// Statements and derivations: theory/sink_geometry.md. In short:
//   (G1) sink mass from logits z (n keys, sink s): p_s = e^{z_s} / sum_j e^{z_j} exactly, and with
//        Delta = z_s - mean_{j != s} z_j, Delta_max = z_s - max_{j != s} z_j:
//        sigma(Delta_max - log(n-1)) <= p_s <= sigma(Delta - log(n-1)) = e^Delta / (e^Delta + n - 1)
//        (upper: Jensen; both equalities iff all other logits are equal)
//   (G2) the sink-key subspace: PCA of sink keys (uncentred, or centred: the affine spread), dimension =
//        the smallest r whose top-r components explain >= `threshold` (default 90%) of the energy;
//        key_dimension gives r alone (eigenvalues only, for bootstraps)
//   (G3) query alignment of a head: mean over queries of ||P_S q|| / ||q|| in [0, 1]
//   (G4) predicted sink head: alignment to S exceeds alignment to the same-dimension principal
//        subspace of ordinary keys (+ margin) and the mean logit gap (G6) > 0
//   (G5) Gu sink rate: alpha_k = (1/(T-k)) sum_{t >= k} A[t,k] (0-based: T - k terms),
//        Sink^eps_k = fraction of (layer, head) with alpha_k > eps; Sink^eps_k[l:] over layers >= l.
//   (G6) the logit gap (the one definition): gap(q) = q.(k_sink - k_ordinary)/sqrt(d_h); causal row t
//        of a sequence: k_ordinary = mean_{1 <= j <= t} k_j. Mean-field alpha_0 of a head with gaps
//        gap_t: alpha0_hat = (1/T) [1 + sum_{t=1}^{T-1} e^{gap_t} / (e^{gap_t} + t)], an upper bound on
//        Gu's alpha_0 when gap_t is row t's gap to the mean ordinary logit (G1), exact for equal ones.
//   (G7) energy share of keys in a subspace S = span(basis): share = sum_t ||P_S k_t||^2 / sum_t ||k_t||^2
//        (the quantity of claim B5, with S = span{W_K^T e_i : i a spike channel}). In the noisy planted
//        model k_t = B c_t + g_t (B orthonormal (d_h, r), noise g_t with iid entries of variance sigma^2):
//        E sum ||P_S k||^2 / E sum ||k||^2 = (e + r sigma^2) / (e + d_h sigma^2), e the mean signal energy
//        ||c_t||^2 per key; isotropic keys (e = 0) give r / d_h, noiseless planted keys 1.
#pragma once

#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <Eigen/SVD>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/core/measures.hpp"
#include "sinkscope/theory/common.hpp"

namespace sinkscope::theory {

// ---- G1: sink mass from logits --------------------------------------------------------------

struct SinkMass {
    double exact = 0;         // p_s = softmax(z)_s
    double jensen_upper = 0;  // e^Delta / (e^Delta + n - 1) >= p_s
    double max_lower = 0;     // e^Delta_max / (e^Delta_max + n - 1) <= p_s
    double delta = 0;         // z_s - mean_{j != s} z_j
    double delta_max = 0;     // z_s - max_{j != s} z_j
    Index n = 0;              // number of keys
};

namespace detail {
inline double logistic(double x) {  // sigma(x) without overflow
    if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
    const double e = std::exp(x);
    return e / (1.0 + e);
}
}  // namespace detail

// Needs n >= 2 finite logits (with one key there is no "other" to average over; p_s = 1).
template <class D>
SinkMass sink_mass_from_logits(const Eigen::MatrixBase<D>& z, Index sink = 0) {
    detail::check_scalar<typename D::Scalar>();
    if (z.cols() != 1 && z.rows() != 1) throw Error("sink_mass_from_logits: z must be a vector");
    const Index n = z.size();
    detail::require_dim_at_least(n, 2, "sink_mass_from_logits: logits", "the approximation averages the other keys");
    detail::require_finite(z, "sink_mass_from_logits: logits");
    if (sink < 0 || sink >= n) throw Error("sink_mass_from_logits: sink index " + std::to_string(sink) + " is outside the logits");
    const double zs = static_cast<double>(z(sink));
    double zmax = -std::numeric_limits<double>::infinity(), omax = zmax, osum = 0.0;
    for (Index j = 0; j < n; ++j) {
        const double v = static_cast<double>(z(j));
        zmax = std::max(zmax, v);
        if (j != sink) {
            omax = std::max(omax, v);
            osum += v;
        }
    }
    double se = 0.0;  // sum_j e^{z_j - zmax}
    for (Index j = 0; j < n; ++j) se += std::exp(static_cast<double>(z(j)) - zmax);
    SinkMass m;
    m.n = n;
    m.exact = std::exp(zs - zmax) / se;
    m.delta = zs - osum / static_cast<double>(n - 1);
    m.delta_max = zs - omax;
    const double log_others = std::log(static_cast<double>(n - 1));
    m.jensen_upper = detail::logistic(m.delta - log_others);
    m.max_lower = detail::logistic(m.delta_max - log_others);
    return m;
}

struct SinkMassRows {
    Index first_row = 0;            // row t of the scores that entry 0 refers to
    Eigen::VectorXd exact, jensen_upper, max_lower, delta;  // one entry per row t >= first_row
};

// G1 for every query row t >= max(sink, 1) of a causal score matrix (T, T) (pre-softmax logits,
// already scaled): row t uses keys 0..t. Entries above the diagonal are ignored (they may be -inf).
template <class D>
SinkMassRows sink_mass_by_row(const Eigen::MatrixBase<D>& scores, Index sink = 0) {
    detail::check_scalar<typename D::Scalar>();
    detail::require_nonempty(scores, "sink_mass_by_row: scores");
    if (scores.rows() != scores.cols())
        throw Error("sink_mass_by_row: scores must be square (T, T), got " + detail::shape_str(scores.rows(), scores.cols()));
    const Index T = scores.rows();
    if (sink < 0 || sink >= T) throw Error("sink_mass_by_row: sink index outside [0, T)");
    SinkMassRows out;
    out.first_row = std::max<Index>(sink, 1);
    const Index rows = std::max<Index>(0, T - out.first_row);
    out.exact.resize(rows);
    out.jensen_upper.resize(rows);
    out.max_lower.resize(rows);
    out.delta.resize(rows);
    for (Index r = 0; r < rows; ++r) {
        const Index t = out.first_row + r;
        const auto z = scores.row(t).head(t + 1).transpose();
        const SinkMass m = sink_mass_from_logits(z, sink);
        out.exact[r] = m.exact;
        out.jensen_upper[r] = m.jensen_upper;
        out.max_lower[r] = m.max_lower;
        out.delta[r] = m.delta;
    }
    return out;
}

// ---- G2: the sink-key subspace --------------------------------------------------------------

template <class T>
struct KeySubspace {
    Index dimension = 0;          // r
    ColMatrix<T> basis;           // (d_h, r), orthonormal columns, by decreasing variance
    Vector<T> explained;          // (d_h) fraction of the energy per principal direction, decreasing
    Vector<T> mean;               // subtracted mean (zero when not centred)
    bool centered = false;
    double threshold = 0.9;
};

namespace detail {
// Smallest r with sum_{i<=r} e_i >= threshold * sum e_i (e descending, >= 0, positive sum).
inline Index energy_rank(const Eigen::VectorXd& e, double threshold) {
    const double total = e.sum();
    double cum = 0.0;
    Index r = 0;
    while (r < e.size()) {
        cum += e[r];
        ++r;
        if (cum >= threshold * total * (1.0 - 1e-12)) break;
    }
    return r;
}
// The (d_h, d_h) second-moment matrix of the rows of `keys` (centred when asked), scaled by the largest
// |entry| so that huge keys do not overflow; throws when there is no energy.
template <class D>
Eigen::MatrixXd key_gram(const Eigen::MatrixBase<D>& keys, double threshold, bool centered, Eigen::VectorXd& mean,
                         const char* what, bool smaller_side = false) {
    require_nonempty(keys, what);
    require_finite(keys, what);
    if (!(threshold > 0.0 && threshold <= 1.0)) throw Error(std::string(what) + ": threshold must lie in (0, 1]");
    if (centered && keys.rows() < 2) throw Error(std::string(what) + ": a centred PCA needs at least 2 keys");
    Eigen::MatrixXd K = keys.template cast<double>();
    mean = Eigen::VectorXd::Zero(K.cols());
    if (centered) {
        mean = K.colwise().mean().transpose();
        K.rowwise() -= mean.transpose();
    }
    const double scale = K.cwiseAbs().maxCoeff();
    if (!(scale > 0.0))
        throw Error(centered ? std::string(what) + ": all keys are equal, so the centred energy is 0"
                             : std::string(what) + ": all keys are zero");
    K /= scale;
    // Only the eigenvalues matter to a caller that asks for the smaller side: K K^T (N, N) and K^T K
    // (d_h, d_h) have the same non-zero eigenvalues.
    if (smaller_side && K.rows() < K.cols()) return K * K.transpose();
    return K.transpose() * K;
}
}  // namespace detail

// Principal subspace of the rows of `keys` (N, d_h). Uncentred by default: the subspace through the
// origin that contains the keys (what q.k sees); centred = classical PCA of the deviations.
template <class D>
KeySubspace<typename D::Scalar> sink_key_subspace(const Eigen::MatrixBase<D>& keys, double threshold = 0.9,
                                                  bool centered = false) {
    using T = typename D::Scalar;
    detail::check_scalar<T>();
    Eigen::VectorXd mean;
    const Eigen::MatrixXd gram = detail::key_gram(keys, threshold, centered, mean, "sink_key_subspace: keys");
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(gram);  // ascending
    const Eigen::VectorXd ev = eig.eigenvalues().reverse().cwiseMax(0.0);
    const Eigen::MatrixXd vecs = eig.eigenvectors().rowwise().reverse();
    KeySubspace<T> out;
    out.centered = centered;
    out.threshold = threshold;
    out.mean = mean.cast<T>();
    out.explained = (ev / ev.sum()).cast<T>();
    const Index r = detail::energy_rank(ev, threshold);
    out.dimension = r;
    out.basis = vecs.leftCols(r).cast<T>();
    return out;
}

// The dimension r of sink_key_subspace(keys, threshold, centered) without the basis (eigenvalues
// only: cheap enough to bootstrap).
template <class D>
Index key_dimension(const Eigen::MatrixBase<D>& keys, double threshold = 0.9, bool centered = false) {
    detail::check_scalar<typename D::Scalar>();
    Eigen::VectorXd mean;
    const Eigen::MatrixXd gram = detail::key_gram(keys, threshold, centered, mean, "key_dimension: keys", true);
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(gram, Eigen::EigenvaluesOnly);
    return detail::energy_rank(eig.eigenvalues().reverse().cwiseMax(0.0), threshold);
}

// ---- G3: query-to-subspace alignment --------------------------------------------------------

// mean_t ||B^T q_t|| / ||q_t|| over the rows q_t of Q (n, d_h); B (d_h, r) orthonormal columns. A zero
// query has no direction (its head attends uniformly, which any trained or pruned model may do): it is
// left out of the mean, and a head whose every query is zero has no alignment (NaN: undefined, for the
// caller to count, never an error).
template <class DQ, class DB>
double query_alignment(const Eigen::MatrixBase<DQ>& Q, const Eigen::MatrixBase<DB>& basis) {
    detail::check_scalar<typename DQ::Scalar>();
    detail::require_nonempty(Q, "query_alignment: queries");
    detail::require_nonempty(basis, "query_alignment: basis");
    detail::require_same(Q.cols(), basis.rows(), "query_alignment: queries (n, d_h) and basis (d_h, r) disagree on d_h");
    detail::require_finite(Q, "query_alignment: queries");
    detail::require_finite(basis, "query_alignment: basis");
    const Eigen::MatrixXd B = basis.template cast<double>();
    const double ortho = (B.transpose() * B - Eigen::MatrixXd::Identity(B.cols(), B.cols())).cwiseAbs().maxCoeff();
    if (ortho > 1e-5) throw Error("query_alignment: the basis columns are not orthonormal");
    double sum = 0.0;
    Index defined = 0;
    for (Index t = 0; t < Q.rows(); ++t) {
        const Eigen::VectorXd q = Q.row(t).transpose().template cast<double>();
        const double m = q.cwiseAbs().maxCoeff();
        if (!(m > 0.0)) continue;  // the zero vector: no direction
        const Eigen::VectorXd qs = q / m;
        sum += std::min(1.0, (B.transpose() * qs).norm() / qs.norm());
        ++defined;
    }
    return defined ? sum / static_cast<double>(defined) : std::numeric_limits<double>::quiet_NaN();
}

// ---- G7: energy share of keys in a subspace -------------------------------------------------

// An orthonormal basis (d_h, rank) of the span of the columns of `basis` (d_h, m), which need not be
// orthonormal nor independent (e.g. the key directions W_K^T e_i of a set of spike channels): the left
// singular vectors whose singular value exceeds max(d_h, m) * eps * sigma_max (the numerical rank).
// Throws when every column is zero.
template <class D>
Eigen::MatrixXd orthonormal_span(const Eigen::MatrixBase<D>& basis) {
    detail::check_scalar<typename D::Scalar>();
    detail::require_nonempty(basis, "orthonormal_span: basis");
    detail::require_finite(basis, "orthonormal_span: basis");
    Eigen::MatrixXd B = basis.template cast<double>();
    const double scale = B.cwiseAbs().maxCoeff();
    if (!(scale > 0.0)) throw Error("orthonormal_span: every basis column is zero, so the span is {0}");
    B /= scale;
    const Eigen::JacobiSVD<Eigen::MatrixXd> svd(B, Eigen::ComputeThinU);
    const Eigen::VectorXd& sv = svd.singularValues();  // descending
    const double cut = static_cast<double>(std::max(B.rows(), B.cols())) * std::numeric_limits<double>::epsilon() * sv[0];
    Index rank = 0;
    while (rank < sv.size() && sv[rank] > cut) ++rank;
    return svd.matrixU().leftCols(rank);
}

// The share of the keys' energy inside S = span(columns of basis):
//     share = sum_t ||P_S k_t||^2 / sum_t ||k_t||^2,   P_S = U U^T, U = orthonormal_span(basis),
// so ||P_S k||^2 = ||U^T k||^2. keys (N, d_h) one key per row, basis (d_h, m). share is in [0, 1]: 1 when
// every key lies in S, 0 when every key is orthogonal to it, and dim(S) / d_h in expectation for
// isotropic keys (G7). The keys are scaled by their largest |entry| first (the ratio does not change), so
// huge keys do not overflow. Throws when every key is zero (no energy to share).
template <class DK, class DB>
double subspace_energy_share(const Eigen::MatrixBase<DK>& keys, const Eigen::MatrixBase<DB>& basis) {
    detail::check_scalar<typename DK::Scalar>();
    detail::require_nonempty(keys, "subspace_energy_share: keys");
    detail::require_finite(keys, "subspace_energy_share: keys");
    detail::require_same(keys.cols(), basis.rows(), "subspace_energy_share: keys (N, d_h) and basis (d_h, m) disagree on d_h");
    const Eigen::MatrixXd U = orthonormal_span(basis);
    Eigen::MatrixXd K = keys.template cast<double>();
    const double scale = K.cwiseAbs().maxCoeff();
    if (!(scale > 0.0)) throw Error("subspace_energy_share: all keys are zero, so there is no energy to share");
    K /= scale;
    const double total = K.squaredNorm();
    const double inside = (K * U).squaredNorm();  // row t of K U is (U^T k_t)^T
    return std::min(1.0, inside / total);
}

// The closed form of G7 for the planted model k = B c + g (B orthonormal (d_h, r), noise entries iid of
// variance noise_variance): E sum ||P_S k||^2 / E sum ||k||^2 = (e + r s^2) / (e + d_h s^2), e = mean
// ||c||^2 per key (signal_energy), s^2 = noise_variance. A ratio of expectations, which the observed
// share approaches as the number of keys grows (the law of large numbers on numerator and denominator).
inline double planted_energy_share(double signal_energy, double noise_variance, Index r, Index d_h) {
    if (!(signal_energy >= 0.0) || !(noise_variance >= 0.0) || !std::isfinite(signal_energy) || !std::isfinite(noise_variance))
        throw Error("planted_energy_share: the signal energy and the noise variance must be finite and >= 0");
    if (r < 0 || d_h < 1 || r > d_h) throw Error("planted_energy_share: need 0 <= r <= d_h and d_h >= 1");
    const double den = signal_energy + static_cast<double>(d_h) * noise_variance;
    if (!(den > 0.0)) throw Error("planted_energy_share: no signal and no noise, so there is no energy to share");
    return (signal_energy + static_cast<double>(r) * noise_variance) / den;
}

// ---- G6: the logit gap and the mean-field alpha_0 ------------------------------------------
// (used by G4; statement and derivation in theory/sink_geometry.md)

// gap(q) = q . (k_sink - k_ordinary) / sqrt(d_h): how far the sink logit sits above the ordinary one.
template <class DQ, class DS, class DO>
double logit_gap(const Eigen::MatrixBase<DQ>& q, const Eigen::MatrixBase<DS>& k_sink, const Eigen::MatrixBase<DO>& k_ordinary) {
    detail::require_same(q.size(), k_sink.size(), "logit_gap: query and sink key disagree on d_h");
    detail::require_same(q.size(), k_ordinary.size(), "logit_gap: query and ordinary key disagree on d_h");
    detail::require_nonempty(q, "logit_gap: query");
    double dot = 0.0;
    for (Index i = 0; i < q.size(); ++i)
        dot += static_cast<double>(q(i)) * (static_cast<double>(k_sink(i)) - static_cast<double>(k_ordinary(i)));
    const double g = dot / std::sqrt(static_cast<double>(q.size()));
    detail::ensure_finite_result(g, "logit_gap");
    return g;
}

// Causal gaps of one sequence: for every query row t = 1 .. T-1 of Q (T, d_h),
// gap_t = logit_gap(q_t, k_sink, mean_{1 <= j <= t} k_j) with K (T, d_h) the keys (row 0, the sink
// position, is not an ordinary key). Entry t-1 of the result is gap_t.
template <class DQ, class DK, class DS>
Eigen::VectorXd causal_logit_gaps(const Eigen::MatrixBase<DQ>& Q, const Eigen::MatrixBase<DK>& K,
                                  const Eigen::MatrixBase<DS>& k_sink) {
    detail::require_same(Q.rows(), K.rows(), "causal_logit_gaps: queries and keys have different lengths T");
    detail::require_dim_at_least(Q.rows(), 2, "causal_logit_gaps: sequence", "row 0 has no ordinary key");
    detail::require_same(Q.cols(), K.cols(), "causal_logit_gaps: queries and keys disagree on d_h");
    detail::require_finite(Q, "causal_logit_gaps: queries");
    detail::require_finite(K, "causal_logit_gaps: keys");
    Eigen::VectorXd running = Eigen::VectorXd::Zero(K.cols()), gaps(Q.rows() - 1);
    for (Index t = 1; t < Q.rows(); ++t) {
        running += K.row(t).transpose().template cast<double>();
        gaps[t - 1] = logit_gap(Q.row(t).transpose(), k_sink, running / static_cast<double>(t));
    }
    return gaps;
}

// alpha0_hat = (1/T) [1 + sum_{t=1}^{T-1} e^{gap_t} / (e^{gap_t} + t)], T = gaps.size() + 1 (row 0 sees
// only the sink: term 1). e^g / (e^g + t) = 1 / (1 + t e^{-g}), stable for large |g|.
template <class D>
double mean_field_alpha0(const Eigen::MatrixBase<D>& gaps) {
    detail::check_scalar<typename D::Scalar>();
    detail::require_finite(gaps, "mean_field_alpha0: gaps");
    double s = 1.0;
    for (Index t = 1; t <= gaps.size(); ++t) s += 1.0 / (1.0 + static_cast<double>(t) * std::exp(-static_cast<double>(gaps[t - 1])));
    return s / static_cast<double>(gaps.size() + 1);
}
// The same with one gap for every row: alpha0_hat(gap, T) = (1/T) sum_{t=0}^{T-1} e^gap / (e^gap + t).
inline double mean_field_alpha0(double gap, Index T) {
    if (T < 1) throw Error("mean_field_alpha0: T must be >= 1");
    if (!std::isfinite(gap)) throw Error("mean_field_alpha0: gap must be finite");
    return mean_field_alpha0(Eigen::VectorXd::Constant(T - 1, gap));
}

// ---- G4: predicted sink head ----------------------------------------------------------------

struct SinkHeadScore {
    Index dimension = 0;             // r, dimension of the sink-key subspace
    double sink_alignment = 0;       // G3 with S = span of the sink keys
    double ordinary_alignment = 0;   // G3 with the top-r principal subspace of the ordinary keys
    double mean_logit_gap = 0;       // mean_t logit_gap(q_t, mean sink key, mean ordinary key)  (G6)
    bool predicted = false;          // sink_alignment > ordinary_alignment + margin && mean_logit_gap > 0
};

// Queries Q (n, d_h), sink keys (m_s, d_h) and ordinary keys (m_o, d_h) of one head.
template <class DQ, class DS, class DO>
SinkHeadScore predict_sink_head(const Eigen::MatrixBase<DQ>& Q, const Eigen::MatrixBase<DS>& sink_keys,
                                const Eigen::MatrixBase<DO>& ordinary_keys, double threshold = 0.9,
                                double margin = 0.0) {
    detail::check_scalar<typename DQ::Scalar>();
    detail::require_nonempty(sink_keys, "predict_sink_head: sink keys");
    detail::require_nonempty(ordinary_keys, "predict_sink_head: ordinary keys");
    detail::require_same(sink_keys.cols(), Q.cols(), "predict_sink_head: sink keys and queries disagree on d_h");
    detail::require_same(ordinary_keys.cols(), Q.cols(), "predict_sink_head: ordinary keys and queries disagree on d_h");
    if (!std::isfinite(margin)) throw Error("predict_sink_head: margin must be finite");
    const auto S = sink_key_subspace(sink_keys, threshold);
    const auto O = sink_key_subspace(ordinary_keys, 1.0);
    SinkHeadScore s;
    s.dimension = S.dimension;
    s.sink_alignment = query_alignment(Q, S.basis);
    s.ordinary_alignment = query_alignment(Q, O.basis.leftCols(std::min(S.dimension, O.basis.cols())));
    // logit_gap is linear in q: the mean over queries is the gap of the mean query.
    s.mean_logit_gap = logit_gap(Q.template cast<double>().colwise().mean().transpose(),
                                 sink_keys.template cast<double>().colwise().mean().transpose(),
                                 ordinary_keys.template cast<double>().colwise().mean().transpose());
    s.predicted = s.sink_alignment > s.ordinary_alignment + margin && s.mean_logit_gap > 0.0;
    return s;
}

// ---- G5: the Gu et al. sink rate ------------------------------------------------------------

// alpha_k = (1/(T-k)) sum_{t=k}^{T-1} A[t,k] for one causal pattern (T, T) (0-based; the paper's
// 1-based 1/(T-k+1) is the same count of rows): measures::received_attention on a checked pattern.
template <class D>
double sink_importance(const Eigen::MatrixBase<D>& pattern, Index k = 0) {
    detail::require_causal_pattern(pattern, "sink_importance: pattern");
    const Index T = pattern.rows();
    if (k < 0 || k >= T) throw Error("sink_importance: key position " + std::to_string(k) + " is outside [0, T)");
    return measures::received_attention_from([&pattern, k](Index t) { return pattern(t, k); }, T, k);
}

// alpha_k for every (layer, head): (L, H). patterns[l][h] is the (T, T) pattern of head h of layer
// l for one input; every layer must have the same number of heads.
template <class M>
RowMatrix<double> importance_table(const std::vector<std::vector<M>>& patterns, Index k = 0) {
    if (patterns.empty()) throw Error("importance_table: no layers");
    const Index H = static_cast<Index>(patterns.front().size());
    if (H == 0) throw Error("importance_table: layer 0 has no heads");
    RowMatrix<double> table(static_cast<Index>(patterns.size()), H);
    for (std::size_t l = 0; l < patterns.size(); ++l) {
        if (static_cast<Index>(patterns[l].size()) != H)
            throw Error("importance_table: layer " + std::to_string(l) + " has " + std::to_string(patterns[l].size()) +
                        " heads, layer 0 has " + std::to_string(H));
        for (Index h = 0; h < H; ++h) {
            try {
                table(static_cast<Index>(l), h) = sink_importance(patterns[l][static_cast<std::size_t>(h)], k);
            } catch (const Error& e) {
                throw Error("layer " + std::to_string(l) + ", head " + std::to_string(h) + ": " + e.message());
            }
        }
    }
    return table;
}

// Sink^eps_k[first_layer:] = fraction of (layer >= first_layer, head) pairs with alpha_k > eps
// (measures::is_sink). Defaults follow Gu et al.: eps = measures::kSinkEps = 0.3, k = 0. Average it over
// inputs for their reported rate.
template <class M>
double sink_rate(const std::vector<std::vector<M>>& patterns, double eps = measures::kSinkEps, Index k = 0,
                 Index first_layer = 0) {
    if (!std::isfinite(eps)) throw Error("sink_rate: eps must be finite");
    const RowMatrix<double> table = importance_table(patterns, k);
    if (first_layer < 0 || first_layer >= table.rows())
        throw Error("sink_rate: first_layer " + std::to_string(first_layer) + " is outside [0, " +
                    std::to_string(table.rows()) + ")");
    const auto block = table.bottomRows(table.rows() - first_layer);
    Index sinks = 0;
    for (Index l = 0; l < block.rows(); ++l)
        for (Index h = 0; h < block.cols(); ++h) sinks += measures::is_sink(block(l, h), eps);
    return static_cast<double>(sinks) / static_cast<double>(block.size());
}

}  // namespace sinkscope::theory
