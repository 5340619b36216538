// The training trace: what the sink and the residual peaks look like at a checkpoint.
//
// Measured on a fixed set of validation sequences, from the model's own hooks:
//   sink rate per layer (Gu et al.): α₀(l, h) = (1/T) Σ_t A_{l,h}[t, 0], the mean attention every query
//     pays to position 0 (with a sink token: the sink); a head is a sink head when α₀ > ε (ε = 0.3).
//     sink_rate(l) = fraction of layer l's heads that are sink heads, averaged over the sequences.
//   where the sink sits: α_k(l) = (1/H) Σ_h (1/(T−k)) Σ_{t≥k} A_{l,h}[t, k] for the first key positions
//     k < kTracedPositions, averaged over the sequences (a sink can sit on position 1 for a while, Paper A).
//   top-3 |x| per layer: the three largest |hook_resid_post| entries of the layer over all sequences,
//     with their channel and position (Sun et al.'s massive-activation report), and the median |x|
//     (mean over sequences of the per-sequence median), for scale.
//   Sun's criterion per hidden state, as Sun et al. and analysis/spikes.hpp apply it: one sequence's
//     resid_post H is massive when max |H| > 100 and max |H| ≥ 1000 · median |H|, both of that same H.
//     top1_over_median = the largest max |H| / median |H| over the sequences; massive_fraction = the
//     fraction of the sequences whose H meets the criterion. (top1 / median_abs above mixes the largest
//     peak of all sequences with the mean median; it is not the criterion.)
//   position-0 ℓ2 norm per layer: ‖resid_post[0]‖ averaged over the sequences, and for contrast the mean
//     ‖resid_post[t]‖ over t ≥ 1.
//   validation loss: mean cross-entropy of the sequences under the run's loss mask.
// Written as one JSON line per checkpoint (trace.jsonl) and one CSV row per (checkpoint, layer) (trace.csv).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sinkscope/core/measures.hpp"
#include "sinkscope/model/forward.hpp"
#include "sinkscope/model/hooks.hpp"
#include "sinkscope/train/loss.hpp"

namespace sinkscope::train {

struct Peak {
    double value = 0;          // |x|
    std::int64_t channel = -1;
    std::int64_t position = -1;
};

inline constexpr std::int64_t kTracedPositions = 4;  // key positions k of alpha_k

struct LayerTrace {
    double sink_rate = 0;              // fraction of heads with α₀ > ε (mean over sequences)
    std::vector<double> alpha0;        // per head, mean over sequences
    std::vector<double> alpha_k;       // α_k averaged over heads and sequences, k < min(kTracedPositions, T)
    std::array<Peak, 3> top{};         // top-3 |resid_post|
    double median_abs = 0;             // mean of per-sequence medians of |resid_post|
    double top1_over_median = 0;       // max over sequences of max |H| / median |H|, H one sequence's resid_post
    double massive_fraction = 0;       // fraction of sequences whose H meets Sun's criterion (measures::is_massive)
    double p0_norm = 0;                // mean ‖resid_post[0]‖
    double rest_norm = 0;              // mean ‖resid_post[t]‖, t ≥ 1
};

struct TraceRecord {
    std::int64_t step = 0;
    double train_loss = 0;
    double val_loss = 0;
    double sink_rate = 0;              // mean over layers
    std::vector<LayerTrace> layers;

    nlohmann::json to_json() const {
        nlohmann::json L = nlohmann::json::array();
        for (const auto& l : layers) {
            nlohmann::json top = nlohmann::json::array();
            for (const auto& p : l.top) top.push_back({{"abs", p.value}, {"channel", p.channel}, {"position", p.position}});
            L.push_back({{"sink_rate", l.sink_rate}, {"alpha0", l.alpha0}, {"alpha_k", l.alpha_k}, {"top3", top}, {"median_abs", l.median_abs},
                         {"top1_over_median", l.top1_over_median}, {"massive_fraction", l.massive_fraction},
                         {"p0_norm", l.p0_norm}, {"rest_norm", l.rest_norm}});
        }
        return {{"step", step}, {"train_loss", train_loss}, {"val_loss", val_loss}, {"sink_rate", sink_rate}, {"layers", L}};
    }
};

namespace detail {
inline void insert_peak(std::array<Peak, 3>& top, Peak p) {
    for (std::size_t i = 0; i < top.size(); ++i)
        if (p.value > top[i].value) {
            for (std::size_t j = top.size() - 1; j > i; --j) top[j] = top[j - 1];
            top[i] = p;
            return;
        }
}
}  // namespace detail

// Measures the trace of `w` on `sequences` (T + 1 tokens each). eps: the sink threshold ε.
template <class T>
TraceRecord measure_trace(const model::Config& c, const model::Weights<T>& w,
                          const std::vector<std::vector<std::int32_t>>& sequences, const LossMask& mask, double eps = measures::kSinkEps) {
    TraceRecord rec;
    rec.layers.resize(c.n_layers);
    const double S = double(sequences.size());
    const std::size_t K = sequences.empty() ? 0 : std::size_t(std::min<std::int64_t>(kTracedPositions, std::int64_t(sequences[0].size()) - 1));
    for (auto& l : rec.layers) {
        l.alpha0.assign(c.n_heads, 0.0);
        l.alpha_k.assign(K, 0.0);
    }
    LossSum loss;
    for (const auto& seq : sequences) {
        const std::vector<std::int32_t> in(seq.begin(), seq.end() - 1), target(seq.begin() + 1, seq.end());
        model::HookSet<T> hooks;
        for (std::int64_t l = 0; l < c.n_layers; ++l) {
            LayerTrace& L = rec.layers[l];
            hooks.add(model::hook_name("pattern", l), [&L, &c, S, eps](const std::string&, model::ActivationRef<T>& a) {
                const std::int64_t H = a.shape[0], n = a.shape[1];
                std::int64_t sinks = 0;
                for (std::int64_t h = 0; h < H; ++h) {
                    const double alpha0 = measures::received_attention(a.data + h * n * n, n, 0);
                    L.alpha0[h] += alpha0 / S;
                    sinks += measures::is_sink(alpha0, eps);
                    for (std::size_t k = 0; k < L.alpha_k.size() && std::int64_t(k) < n; ++k)
                        L.alpha_k[k] += measures::received_attention(a.data + h * n * n, n, std::int64_t(k)) / double(H) / S;
                }
                L.sink_rate += double(sinks) / double(H) / S;
                (void)c;
            });
            hooks.add(model::hook_name("resid_post", l), [&L, S](const std::string&, model::ActivationRef<T>& a) {
                const std::int64_t n = a.shape[0], d = a.shape[1];
                double state_max = 0;  // max |H| of this sequence's state
                for (std::int64_t t = 0; t < n; ++t) {
                    double sq = 0;
                    for (std::int64_t j = 0; j < d; ++j) {
                        const double v = double(a.data[t * d + j]);
                        sq += v * v;
                        state_max = std::max(state_max, std::abs(v));
                        if (std::abs(v) > L.top[2].value) detail::insert_peak(L.top, {std::abs(v), j, t});
                    }
                    if (t == 0) L.p0_norm += std::sqrt(sq) / S;
                    else L.rest_norm += std::sqrt(sq) / double(n - 1) / S;
                }
                const double med = measures::median_abs(a.data, n * d);
                L.median_abs += med / S;
                if (med > 0) L.top1_over_median = std::max(L.top1_over_median, state_max / med);
                L.massive_fraction += double(measures::is_massive(state_max, med)) / S;
            });
        }
        const model::Mat<T> logits = model::forward(c, w, in, &hooks);
        const auto l = cross_entropy<T>(nullptr, logits, target, mask, T(0));
        loss.sum += l.sum;
        loss.count += l.count;
    }
    rec.val_loss = loss.mean();
    for (const auto& l : rec.layers) rec.sink_rate += l.sink_rate / double(c.n_layers);
    return rec;
}

// Appends a record to <dir>/trace.jsonl and <dir>/trace.csv (the CSV header is written with the first row).
inline void append_trace(const std::string& dir, const TraceRecord& r) {
    {
        std::ofstream j(dir + "/trace.jsonl", std::ios::app);
        require(bool(j), "cannot write the trace", {dir + "/trace.jsonl", "", {}});
        j << r.to_json().dump() << "\n";
    }
    const std::string csv = dir + "/trace.csv";
    const bool fresh = !std::ifstream(csv).good();
    std::ofstream f(csv, std::ios::app);
    require(bool(f), "cannot write the trace", {csv, "", {}});
    if (fresh)
        f << "step,layer,train_loss,val_loss,sink_rate,mean_alpha0,top1,top1_channel,top1_position,top2,top2_channel,"
             "top2_position,top3,top3_channel,top3_position,median_abs,p0_norm,rest_norm,top1_over_median,massive_fraction\n";
    for (std::size_t l = 0; l < r.layers.size(); ++l) {
        const auto& L = r.layers[l];
        double ma = 0;
        for (double a : L.alpha0) ma += a / double(L.alpha0.size());
        f << r.step << ',' << l << ',' << r.train_loss << ',' << r.val_loss << ',' << L.sink_rate << ',' << ma;
        for (const auto& p : L.top) f << ',' << p.value << ',' << p.channel << ',' << p.position;
        f << ',' << L.median_abs << ',' << L.p0_norm << ',' << L.rest_norm << ',' << L.top1_over_median << ','
          << L.massive_fraction << '\n';
    }
}

}  // namespace sinkscope::train
