// b5_sink_keys's measurements: the keys and queries of every head (model hooks hook_k, hook_rot_k,
// hook_rot_q), position 0's massive channels at every layer's input (hook_resid_pre) and the sink
// statistics, captured in one pass over the samples; the weight-predicted key subspace of a kv head and
// the energy shares of its keys in it; the confusion counts that score the sink-head prediction. Split
// from b5_sink_keys.cpp, which keeps the claim, the theory's use and the rule.
#pragma once

#include <sinkscope/analysis/geometry.hpp>
#include <sinkscope/analysis/spikes.hpp>
#include <sinkscope/analysis/weight_subspace.hpp>
#include <sinkscope/model/reducers.hpp>

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

}  // namespace sinkscope::experiments::sink_key_subspace
