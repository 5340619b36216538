// From sparse spike states to sinks (Paper B, claim B5): the geometry of sink keys and queries of one
// attention head, and a one-number prediction of whether the head is a sink head.
//
// Sink keys k^s (keys of spike tokens, e.g. position 0) are expected to lie in a 1–2-dimensional
// subspace S; a head is a sink head when its queries have a consistent logit gap in favour of the
// sink key over ordinary keys. With q_t, k_j the keys and queries that enter the logits (after RoPE),
// d_h the head dimension and k̄^s a fixed sink key (e.g. the mean position-0 key over many inputs):
//
//   gap_t = ( q_t · k̄^s − q_t · k̄^o_t ) / √d_h,    k̄^o_t = mean_{1 ≤ j ≤ t} k_j      (t ≥ 1)
//   gap   = mean_{t ≥ 1} gap_t                                                      (one number per head)
//
// Mean-field prediction of Gu's α₀ = (1/T) Σ_t A[t, 0]: one sink key against t ordinary keys that all
// get the same logit gap below it,
//   α̂₀(gap, T) = (1/T) Σ_{t=0}^{T−1} e^{gap} / (e^{gap} + t)       (query 0 sees only key 0: term 1)
// exact when every ordinary logit of every query sits exactly `gap` below the sink logit.
// Predicted sink head: α̂₀ > ε (the same ε as the measured sink rate).
#pragma once

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/analysis/geometry.hpp"

namespace sinkscope::analysis {

// Mean logit gap of one head in one sequence. q, k (T × d_h) after RoPE; k_sink (d_h).
inline double sink_logit_gap(const RowMatrixXd& q, const RowMatrixXd& k, const Eigen::VectorXd& k_sink) {
    require(q.rows() == k.rows() && q.rows() >= 2, "sink_logit_gap: needs T >= 2 queries and keys");
    require(q.cols() == k.cols() && k.cols() == k_sink.size(), "sink_logit_gap: head dimensions disagree");
    require(q.allFinite() && k.allFinite() && k_sink.allFinite(), "sink_logit_gap: non-finite input");
    const double scale = 1.0 / std::sqrt(double(q.cols()));
    Eigen::VectorXd running = Eigen::VectorXd::Zero(k.cols());
    double sum = 0;
    for (Eigen::Index t = 1; t < q.rows(); ++t) {
        running += k.row(t).transpose();
        const Eigen::VectorXd mean_o = running / double(t);
        sum += (q.row(t).dot(k_sink) - q.row(t).dot(mean_o)) * scale;
    }
    return sum / double(q.rows() - 1);
}

inline double mean_field_sink_attention(double gap, std::int64_t T) {
    require(T >= 1, "mean_field_sink_attention: T must be >= 1");
    require(std::isfinite(gap), "mean_field_sink_attention: gap must be finite");
    double s = 0;
    for (std::int64_t t = 0; t < T; ++t) {
        // e^g / (e^g + t) = 1 / (1 + t e^{−g}), stable for large |g|
        s += 1.0 / (1.0 + double(t) * std::exp(-gap));
    }
    return s / double(T);
}

// Subspace statistics of a head's sink keys against its ordinary keys.
struct SinkKeyGeometry {
    Eigen::Index sink_dim = 0;        // energy_dimension of the sink keys' uncentered spectrum
    Eigen::Index ordinary_dim = 0;    // the same for ordinary keys
    double sink_top_share = 0;        // λ₁ / Σλ of the sink keys
    double query_sink_share = 0;      // mean over queries of ‖P_S q̂‖² (S: top sink_dim directions)
    double query_ordinary_share = 0;  // mean over queries of ‖P_O q̂‖² (O: top sink_dim ordinary directions)
};

// sink_keys (m × d_h), ordinary_keys (n × d_h), queries (q × d_h); `fraction` of energy for the dimension.
inline SinkKeyGeometry sink_key_geometry(const RowMatrixXd& sink_keys, const RowMatrixXd& ordinary_keys,
                                         const RowMatrixXd& queries, double fraction = 0.9) {
    SinkKeyGeometry g;
    const Eigen::VectorXd ls = uncentered_spectrum(sink_keys);
    const Eigen::VectorXd lo = uncentered_spectrum(ordinary_keys);
    g.sink_dim = energy_dimension(ls, fraction);
    g.ordinary_dim = energy_dimension(lo, fraction);
    g.sink_top_share = ls[0] / ls.sum();
    const RowMatrixXd S = top_subspace(sink_keys, g.sink_dim);
    const RowMatrixXd O = top_subspace(ordinary_keys, g.sink_dim);
    require(queries.rows() > 0 && queries.cols() == sink_keys.cols(), "sink_key_geometry: queries have the wrong shape");
    double ss = 0, so = 0;
    Eigen::Index n = 0;
    for (Eigen::Index i = 0; i < queries.rows(); ++i) {
        const Eigen::VectorXd q = queries.row(i).transpose();
        if (!(q.norm() > 0)) continue;
        ss += projection_share(S, q);
        so += projection_share(O, q);
        ++n;
    }
    require(n > 0, "sink_key_geometry: every query is zero");
    g.query_sink_share = ss / double(n);
    g.query_ordinary_share = so / double(n);
    return g;
}

}  // namespace sinkscope::analysis
