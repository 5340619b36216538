// b5_sink_keys's measurements: the keys and queries of every head (model hooks hook_k, hook_rot_k,
// hook_rot_q), position 0's massive channels at every layer's input (hook_resid_pre) and the sink
// statistics, captured in one pass over the samples; the per-head sink prediction (mean field and rule G4)
// and the confusion counts that score it; the sink keys' dimension against the null; the weight-predicted
// key subspace of a kv head and the energy shares of its keys in it. Split
// from b5_sink_keys.cpp, which keeps the claim, the theory's use and the rule.
#pragma once

#include <map>

#include <sinkscope/analysis/geometry.hpp>
#include <sinkscope/analysis/spikes.hpp>
#include <sinkscope/analysis/weight_subspace.hpp>
#include <sinkscope/model/reducers.hpp>
#include <sinkscope/theory/sink_geometry.hpp>

#include "common.hpp"

namespace sinkscope::experiments::sink_key_subspace {

// Confusion counts of a binary predictor against measured labels.
struct Confusion {
    std::int64_t tp = 0, fp = 0, tn = 0, fn = 0;
    Confusion(const std::vector<bool>& predicted, const std::vector<bool>& measured) {
        for (std::size_t i = 0; i < predicted.size(); ++i)
            (predicted[i] ? (measured[i] ? tp : fp) : (measured[i] ? fn : tn)) += 1;
    }
    double accuracy() const { return double(tp + tn) / double(tp + tn + fp + fn); }
    // (TPR + TNR) / 2: 0.5 for any constant predictor. A class that is absent contributes 0.5 (no
    // information either way).
    double balanced_accuracy() const {
        const double tpr = tp + fn ? double(tp) / double(tp + fn) : 0.5;
        const double tnr = tn + fp ? double(tn) / double(tn + fp) : 0.5;
        return 0.5 * (tpr + tnr);
    }
};

inline std::vector<double> indices(std::int64_t n) {
    std::vector<double> v(n);
    for (std::int64_t i = 0; i < n; ++i) v[i] = double(i);
    return v;
}

// One pass over the samples: even samples fit, odd samples score. Per (layer, kv head) the position-0 key
// of every sample, the pre-RoPE key of one random position >= 1 per sample (the null) and the pre-RoPE
// keys of every position (the energy shares); per layer, the samples in which each channel of position 0's
// input (hook_resid_pre) is massive (Sun et al., analysis::massive_entries); over the fit half, the sums
// of the rotated queries and keys per position and the strided queries and keys of theory rule G4; the
// attention statistics of every sample.
struct KeyCapture {
    model::AttentionStats<float> stats;
    std::vector<analysis::RowMatrixXd> sink_keys, null_keys;  // [l * G + g]: N × d_h
    std::vector<std::vector<float>> keys;                     // [l * G + g]: (N, T, d_h) pre-RoPE keys
    std::vector<std::vector<std::int64_t>> p0_massive;        // [l]: (d_model) samples with x_0[c] massive at l's input
    std::vector<analysis::RowMatrixXd> q_sum, k_sum;          // [l * H + h], [l * G + g]: T × d_h
    std::vector<std::vector<Eigen::VectorXd>> g4_q, g4_k;     // fit half, strided positions ≥ 1
    std::vector<std::int64_t> fit, score;                     // sample indices of the two halves
};
inline KeyCapture capture_keys(Run& run, const CommonOptions& opt, const Inputs& in, const std::vector<Tokens>& smp, std::int64_t stride) {
    using analysis::RowMatrixXd;
    const auto& c = in.m.config;
    const std::int64_t L = c.n_layers, H = c.n_heads, G = c.n_kv_heads, dh = c.head_dim;
    const std::int64_t N = std::int64_t(smp.size()), T = std::int64_t(smp[0].size());
    KeyCapture out{model::AttentionStats<float>(L, H), {}, {}, {}, {}, {}, {}, {}, {}, {}, {}};
    out.keys.assign(L * G, std::vector<float>(std::size_t(N * T * dh)));
    out.p0_massive.assign(L, std::vector<std::int64_t>(c.d_model, 0));
    auto& stats = out.stats;
    auto& sink_keys = out.sink_keys;
    auto& null_keys = out.null_keys;
    auto& q_sum = out.q_sum;
    auto& k_sum = out.k_sum;
    auto& g4_q = out.g4_q;
    auto& g4_k = out.g4_k;
    auto& fit = out.fit;
    auto& score = out.score;
    sink_keys.assign(L * G, RowMatrixXd(N, dh));
    null_keys.assign(L * G, RowMatrixXd(N, dh));
    q_sum.assign(L * H, RowMatrixXd::Zero(T, dh));
    k_sum.assign(L * G, RowMatrixXd::Zero(T, dh));
    g4_q.assign(L * H, {});
    g4_k.assign(L * G, {});
    std::mt19937_64 rng(opt.seed + 5);
    model::HookSet<float> hooks;
    stats.attach(hooks);
    model::ActivationCache<float> cache;
    cache.attach(hooks, [](const std::string& n) {
        return n.find("attn.hook_rot_q") != std::string::npos || n.find("attn.hook_rot_k") != std::string::npos ||
               n.find("attn.hook_k") != std::string::npos || n.find("hook_resid_pre") != std::string::npos;
    });
    model::EachSequence<float> each;
    each.before = [&](std::int64_t) { stats.begin_sample(); };
    each.after = [&](std::int64_t s, const model::Mat<float>&) {
        const bool is_fit = s % 2 == 0;
        (is_fit ? fit : score).push_back(s);
        const std::int64_t null_pos = 1 + std::int64_t(rng() % std::uint64_t(T - 1));
        for (std::int64_t l = 0; l < L; ++l) {
            const auto& q = cache[model::hook_name("rot_q", l)].data;
            const auto& k = cache[model::hook_name("rot_k", l)].data;
            const auto& kraw = cache[model::hook_name("k", l)].data;
            const auto& x = cache[model::hook_name("resid_pre", l)].data;
            for (const auto& e : analysis::massive_entries(x.data(), T, c.d_model))
                if (e.position == 0) out.p0_massive[std::size_t(l)][std::size_t(e.channel)] += 1;
            for (std::int64_t t = 0; t < T; ++t)
                for (std::int64_t g = 0; g < G; ++g)
                    std::copy_n(kraw.data() + (t * G + g) * dh, dh, out.keys[std::size_t(l * G + g)].data() + (s * T + t) * dh);
            for (std::int64_t g = 0; g < G; ++g)
                for (std::int64_t j = 0; j < dh; ++j) {
                    sink_keys[l * G + g](s, j) = k[g * dh + j];  // position 0: RoPE is the identity
                    null_keys[l * G + g](s, j) = kraw[(null_pos * G + g) * dh + j];
                }
            if (!is_fit) continue;
            for (std::int64_t t = 0; t < T; ++t) {
                for (std::int64_t h = 0; h < H; ++h)
                    for (std::int64_t j = 0; j < dh; ++j) q_sum[l * H + h](t, j) += q[(t * H + h) * dh + j];
                for (std::int64_t g = 0; g < G; ++g)
                    for (std::int64_t j = 0; j < dh; ++j) k_sum[l * G + g](t, j) += k[(t * G + g) * dh + j];
            }
            for (std::int64_t t = 1; t < T; t += stride) {
                for (std::int64_t h = 0; h < H; ++h)
                    g4_q[l * H + h].push_back(Eigen::Map<const Eigen::VectorXf>(q.data() + (t * H + h) * dh, dh).cast<double>());
                for (std::int64_t g = 0; g < G; ++g)
                    g4_k[l * G + g].push_back(Eigen::Map<const Eigen::VectorXf>(k.data() + (t * G + g) * dh, dh).cast<double>());
            }
        }
    };
    measure_samples(run, opt, c, in.m.weights, smp, hooks, each, no_logits());
    return out;
}

// Spike channels C of layer l (the set Paper B's k^s ≈ Σ_{i∈C} h̃ᵢ W_K eᵢ sums over): the channels of
// position 0's input to layer l that are massive (Sun et al.) in at least `share` of the N samples,
// ascending. Empty where position 0 carries no massive activation at that layer.
inline std::vector<std::int64_t> p0_spike_channels(const KeyCapture& kc, std::int64_t l, std::int64_t N, double share) {
    std::vector<std::int64_t> out;
    const auto& count = kc.p0_massive[std::size_t(l)];
    for (std::size_t ch = 0; ch < count.size(); ++ch)
        if (double(count[ch]) >= share * double(N) && count[ch] > 0) out.push_back(std::int64_t(ch));
    return out;
}

// The weight-predicted subspace of kv head g of layer l: S = span{W_K^g eᵢ : i ∈ C} (columns of the key
// projection, read through the layer's own linear map, so file-backed and quantised weights give the
// columns the forward uses). The key is k = W_K h̃ + b_K; the bias, which no spike channel writes, is left
// out of S. With QK-norm, k = γ_k ⊙ W_K h̃ / rms(W_K h̃): the rms is one scalar per key, so S =
// span{γ_k ⊙ W_K eᵢ}. Returned as an orthonormal basis (rows, analysis::span_basis).
inline analysis::RowMatrixXd key_subspace(const model::Config& c, const model::LayerWeights<float>& w, std::int64_t g,
                                          const std::vector<std::int64_t>& channels) {
    const std::int64_t dh = c.head_dim, m = std::int64_t(channels.size());
    if (m == 0) return analysis::RowMatrixXd(0, dh);
    model::Mat<float> unit = model::Mat<float>::Zero(m, c.d_model), cols;
    for (std::int64_t r = 0; r < m; ++r) unit(r, channels[std::size_t(r)]) = 1.f;
    model::detail::linear_weight(cols, unit, w.wk, w.wk_file, model::Vec<float>(), w.compute);  // (m, G·d_h): row r = W_K e_{C_r}
    Eigen::MatrixXd V(dh, m);
    for (std::int64_t r = 0; r < m; ++r)
        for (std::int64_t j = 0; j < dh; ++j) {
            double v = cols(r, g * dh + j);
            if (c.qk_norm) v *= double(w.k_norm(c.qk_norm_scope == model::QkNormScope::head ? j : g * dh + j));
            V(j, r) = v;
        }
    return analysis::span_basis(V);
}

// Energy shares E(k) = ‖P_S k‖² / ‖k‖² of kv head (l, g)'s pre-RoPE keys in S (a basis, rows): per sample,
// the share of its position-0 key and the mean share over its positions ≥ 1 (NaN where a key is the zero
// vector: no direction; a sample whose every ordinary key is zero has NaN).
struct KeyShares {
    std::vector<double> position0, ordinary;   // (N)
};
inline KeyShares key_shares(const KeyCapture& kc, std::int64_t lg, const analysis::RowMatrixXd& basis, std::int64_t N,
                            std::int64_t T, std::int64_t dh) {
    KeyShares out{std::vector<double>(std::size_t(N)), std::vector<double>(std::size_t(N))};
    const auto& K = kc.keys[std::size_t(lg)];
    auto share = [&](std::int64_t s, std::int64_t t) {
        return analysis::subspace_share(basis, Eigen::Map<const Eigen::VectorXf>(K.data() + (s * T + t) * dh, dh).cast<double>());
    };
    for (std::int64_t s = 0; s < N; ++s) {
        out.position0[std::size_t(s)] = share(s, 0);
        double sum = 0;
        std::int64_t n = 0;
        for (std::int64_t t = 1; t < T; ++t) {
            const double e = share(s, t);
            if (!std::isnan(e)) { sum += e; ++n; }
        }
        out.ordinary[std::size_t(s)] = n ? sum / double(n) : std::numeric_limits<double>::quiet_NaN();
    }
    return out;
}


// Per query head (l, h), index l * H + h: the mean-field prediction from the fit half (alpha_0-hat of the
// typical query's logit gap toward the mean keys, theory G6) and theory rule G4, against the measured labels
// (mean alpha_0 over the score half, and over every sample); their confusion counts, and balanced-accuracy
// intervals with the labels re-measured on resampled score-half samples (predictions fixed).
struct HeadPredictions {
    std::vector<bool> predicted, measured_score, g4_predicted, measured_all;
    std::vector<double> a_hat, a_score;
    std::vector<theory::SinkHeadScore> g4;
    Confusion mf, rule_g4;  // mean field and G4 against measured_score
    analysis::Interval mf_ci, g4_ci;
};
inline HeadPredictions predict_heads(const KeyCapture& kc, std::int64_t L, std::int64_t H, std::int64_t G, std::int64_t dh,
                                     std::int64_t N, double eps, double energy, int resamples) {
    using analysis::RowMatrixXd;
    const std::int64_t group = H / G;
    const auto& stats = kc.stats;
    const auto& sink_keys = kc.sink_keys;
    const auto& q_sum = kc.q_sum;
    const auto& k_sum = kc.k_sum;
    const auto& g4_q = kc.g4_q;
    const auto& g4_k = kc.g4_k;
    const auto& fit = kc.fit;
    const auto& score = kc.score;
    const double nf = double(fit.size());
    auto rows = [dh](const std::vector<Eigen::VectorXd>& v) {
        RowMatrixXd X(std::int64_t(v.size()), dh);
        for (std::size_t i = 0; i < v.size(); ++i) X.row(std::int64_t(i)) = v[i].transpose();
        return X;
    };
    // Mean α₀ of head (l, h) over the given samples.
    auto mean_alpha0 = [&](std::int64_t l, std::int64_t h, const std::vector<std::int64_t>& which) {
        double a = 0;
        for (auto s : which) a += stats.alpha0(s, l, h);
        return a / double(which.size());
    };
    std::vector<std::int64_t> all(N);
    for (std::int64_t s = 0; s < N; ++s) all[s] = s;

    std::vector<bool> predicted(L * H), measured_score(L * H), g4_predicted(L * H), measured_all(L * H);
    std::vector<double> a_hat(L * H), a_score(L * H);
    std::vector<theory::SinkHeadScore> g4(L * H);
    for (std::int64_t l = 0; l < L; ++l)
        for (std::int64_t h = 0; h < H; ++h) {
            const std::int64_t g = h / group, i = l * H + h;
            const RowMatrixXd qbar = q_sum[i] / nf, kbar = k_sum[l * G + g] / nf;
            const Eigen::VectorXd k0 = kbar.row(0).transpose();
            a_hat[i] = theory::mean_field_alpha0(theory::causal_logit_gaps(qbar, kbar, k0));
            predicted[i] = measures::is_sink(a_hat[i], eps);
            RowMatrixXd fit_sink(std::int64_t(fit.size()), dh);
            for (std::size_t r = 0; r < fit.size(); ++r) fit_sink.row(std::int64_t(r)) = sink_keys[l * G + g].row(fit[r]);
            // A head whose queries are all zero (uniform attention) has no alignment (NaN): undefined, counted below.
            try {
                g4[i] = theory::predict_sink_head(rows(g4_q[i]), fit_sink, rows(g4_k[l * G + g]), energy);
            } catch (const Error&) {  // every key of the head zero or equal: no subspace to align with
                g4[i] = theory::SinkHeadScore{0, NAN, NAN, 0.0, false};
            }
            g4_predicted[i] = g4[i].predicted;
            a_score[i] = mean_alpha0(l, h, score);
            measured_score[i] = measures::is_sink(a_score[i], eps);
            measured_all[i] = measures::is_sink(mean_alpha0(l, h, all), eps);
        }
    // Balanced accuracy with the labels re-measured on resampled score-half samples (predictions fixed).
    auto ba_interval = [&](const std::vector<bool>& pred) {
        return analysis::bootstrap(indices(std::int64_t(score.size())), [&](const std::vector<double>& r) {
            std::vector<bool> lab(L * H);
            for (std::int64_t l = 0; l < L; ++l)
                for (std::int64_t h = 0; h < H; ++h) {
                    double a = 0;
                    for (double x : r) a += stats.alpha0(score[std::size_t(x)], l, h);
                    lab[l * H + h] = measures::is_sink(a / double(r.size()), eps);
                }
            return Confusion(pred, lab).balanced_accuracy();
        }, analysis::kConfidence, resamples);
    };
    const Confusion mf(predicted, measured_score), rule_g4(g4_predicted, measured_score);
    const analysis::Interval mf_ci = ba_interval(predicted), g4_ci = ba_interval(g4_predicted);
    return {predicted, measured_score, g4_predicted, measured_all, a_hat, a_score, g4, mf, rule_g4, mf_ci, g4_ci};
}

// Diagnostic (a), theory G2: the centred 90 %-variance dimension of the sink kv heads' position-0 keys
// against a null of one random position's keys per sample, with percentile bootstrap intervals over the
// samples. A sink kv head: any query head of its group is a sink head over all samples (`measured_all`,
// [l * H + h]).
struct SinkKeyDimensions {
    std::vector<std::int64_t> sink_kv;       // l * G + g of every sink kv head
    std::vector<double> sink_dim, null_dim;  // [l * G + g], over every sample
    double med_sink = -1, med_null = -1, med_diff = -1;  // medians over the sink kv heads (-1: none)
    analysis::Interval sink_ci{NAN, NAN}, diff_ci{NAN, NAN};
};
inline SinkKeyDimensions sink_key_dimensions(const KeyCapture& kc, const std::vector<bool>& measured_all, std::int64_t L,
                                             std::int64_t G, std::int64_t group, std::int64_t N, double energy, int resamples) {
    using analysis::RowMatrixXd;
    const std::int64_t H = G * group;
    const auto& sink_keys = kc.sink_keys;
    const auto& null_keys = kc.null_keys;
    SinkKeyDimensions out;
    auto& sink_kv = out.sink_kv;
    // Sink kv heads: any query head of the group is a sink head over all samples.
    for (std::int64_t l = 0; l < L; ++l)
        for (std::int64_t g = 0; g < G; ++g) {
            bool any = false;
            for (std::int64_t h = g * group; h < (g + 1) * group; ++h) any = any || measured_all[l * H + h];
            if (any) sink_kv.push_back(l * G + g);
        }
    // Centred dimension of the keys of the resampled samples `r` (indices into 0..N−1); a resample
    // whose keys are all equal has no variance: dimension 0.
    auto dim = [&](const RowMatrixXd& K, const std::vector<double>& r) -> double {
        RowMatrixXd X(std::int64_t(r.size()), K.cols());
        for (std::size_t i = 0; i < r.size(); ++i) X.row(std::int64_t(i)) = K.row(std::int64_t(r[i]));
        try { return double(theory::key_dimension(X, energy, true)); } catch (const Error&) { return 0.0; }
    };
    // Both bootstraps draw the same resamples (fixed seed): the sink dimensions of a resample are
    // computed once and looked up the second time.
    std::map<std::vector<double>, std::vector<double>> sink_dims_of;
    auto sink_dims = [&](const std::vector<double>& r) -> const std::vector<double>& {
        auto it = sink_dims_of.find(r);
        if (it != sink_dims_of.end()) return it->second;
        std::vector<double> d;
        for (auto i : sink_kv) d.push_back(dim(sink_keys[i], r));
        return sink_dims_of.emplace(r, std::move(d)).first->second;
    };
    auto median_sink_dim = [&](const std::vector<double>& r) { return analysis::median_of(sink_dims(r)); };
    auto median_null_minus_sink = [&](const std::vector<double>& r) {
        const auto& s = sink_dims(r);
        std::vector<double> d;
        for (std::size_t j = 0; j < sink_kv.size(); ++j) d.push_back(dim(null_keys[sink_kv[j]], r) - s[j]);
        return analysis::median_of(d);
    };
    const std::vector<double> every = indices(N);
    auto& sink_dim = out.sink_dim;
    auto& null_dim = out.null_dim;
    sink_dim.assign(std::size_t(L * G), 0.0);
    null_dim.assign(std::size_t(L * G), 0.0);
    for (std::int64_t i = 0; i < L * G; ++i) { sink_dim[i] = dim(sink_keys[i], every); null_dim[i] = dim(null_keys[i], every); }
    double& med_sink = out.med_sink;
    double& med_null = out.med_null;
    double& med_diff = out.med_diff;
    analysis::Interval& sink_ci = out.sink_ci;
    analysis::Interval& diff_ci = out.diff_ci;
    if (!sink_kv.empty()) {
        med_sink = median_sink_dim(every);
        med_diff = median_null_minus_sink(every);
        std::vector<double> nd;
        for (auto i : sink_kv) nd.push_back(null_dim[i]);
        med_null = analysis::median_of(nd);
        // A resample repeats keys, which lowers a dimension: the percentile interval is widened to
        // contain the full-sample value (conservative on both sides).
        auto widened = [](analysis::Interval ci, double value) {
            return analysis::Interval{std::min(ci.lo, value), std::max(ci.hi, value)};
        };
        sink_ci = widened(analysis::bootstrap(every, median_sink_dim, analysis::kConfidence, resamples), med_sink);
        diff_ci = widened(analysis::bootstrap(every, median_null_minus_sink, analysis::kConfidence, resamples), med_diff);
    }
    return out;
}

}  // namespace sinkscope::experiments::sink_key_subspace
