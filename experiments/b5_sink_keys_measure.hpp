// b5_sink_keys's measurements: the keys and queries of every head (model hooks hook_k, hook_rot_k,
// hook_rot_q) and the sink statistics, captured in one pass over the samples, and the confusion counts that
// score the sink-head prediction. Split from b5_sink_keys.cpp, which keeps the claim, the theory's use and
// the rule.
#pragma once

#include <sinkscope/analysis/geometry.hpp>
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
// of every sample and the pre-RoPE key of one random position >= 1 per sample (the null); over the fit
// half, the sums of the rotated queries and keys per position and the strided queries and keys of
// theory rule G4; the attention statistics of every sample.
struct KeyCapture {
    model::AttentionStats<float> stats;
    std::vector<analysis::RowMatrixXd> sink_keys, null_keys;  // [l * G + g]: N × d_h
    std::vector<analysis::RowMatrixXd> q_sum, k_sum;          // [l * H + h], [l * G + g]: T × d_h
    std::vector<std::vector<Eigen::VectorXd>> g4_q, g4_k;     // fit half, strided positions ≥ 1
    std::vector<std::int64_t> fit, score;                     // sample indices of the two halves
};
inline KeyCapture capture_keys(Run& run, const CommonOptions& opt, const Inputs& in, const std::vector<Tokens>& smp, std::int64_t stride) {
    using analysis::RowMatrixXd;
    const auto& c = in.m.config;
    const std::int64_t L = c.n_layers, H = c.n_heads, G = c.n_kv_heads, dh = c.head_dim;
    const std::int64_t N = std::int64_t(smp.size()), T = std::int64_t(smp[0].size());
    KeyCapture out{model::AttentionStats<float>(L, H), {}, {}, {}, {}, {}, {}, {}, {}};
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
               n.find("attn.hook_k") != std::string::npos;
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

}  // namespace sinkscope::experiments::sink_key_subspace
