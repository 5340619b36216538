// Streaming reducers: statistics over many sequences that never keep T×T×H×L tensors.
//
// ResidualStats   per layer (a residual-stream hook, resid_post by default):
//                 top-k |x| with channel, position and sample; median |x| of each sample's hidden state;
//                 ℓ2 norm of every position, averaged over samples.
//                 Massive activation (Sun et al. 2024): |x| > 100 and |x| ≥ 1000 × median |x|.
// AttentionStats  per layer and head: attention received by key position k (Gu et al.),
//                 α_k = 1/(T−k) · Σ_{t ≥ k} A[t, k]   (0-based positions; the mean over the queries that see k),
//                 averaged over samples, and the sink rate Sink^ε_k = fraction of (layer, head) with α_k > ε,
//                 averaged over samples (computed here from the per-sample α₀ of every head).
// Usage: attach to a HookSet, then call begin_sample() before each forward pass.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/core/measures.hpp"
#include "sinkscope/model/hooks.hpp"

namespace sinkscope::model {

struct TopActivation {
    double abs_value = 0;     // |x|
    double value = 0;         // x, with its sign
    std::int64_t channel = -1;
    std::int64_t position = -1;
    std::int64_t sample = -1;
};

template <class T>
class ResidualStats {
public:
    struct Layer {
        std::vector<TopActivation> top;     // the k largest |x| over all samples, largest first
        std::vector<double> medians;        // median |x| of this layer's hidden state, one per sample
        std::vector<double> norm_sum;       // Σ over samples of ‖x_t‖, by position t
        std::vector<std::int64_t> norm_count;
        double median() const {             // median over samples of the per-sample median
            if (medians.empty()) return 0;
            std::vector<double> m = medians;
            std::nth_element(m.begin(), m.begin() + m.size() / 2, m.end());
            return m[m.size() / 2];
        }
        double mean_norm(std::int64_t t) const {
            return t < std::int64_t(norm_sum.size()) && norm_count[t] ? norm_sum[t] / double(norm_count[t]) : 0.0;
        }
        // Mean ℓ2 norm over positions ≥ 1 (each position's mean over samples, then averaged).
        double mean_norm_rest() const {
            double s = 0; std::int64_t n = 0;
            for (std::size_t t = 1; t < norm_sum.size(); ++t) if (norm_count[t]) { s += norm_sum[t] / double(norm_count[t]); ++n; }
            return n ? s / double(n) : 0.0;
        }
        // Sun et al.'s criterion applied to the largest activation of this layer.
        bool massive() const { return !top.empty() && measures::is_massive(top[0].abs_value, median()); }
    };

    ResidualStats(std::int64_t n_layers, int k = 3, std::string short_name = "resid_post")
        : layers_(n_layers), k_(k), short_name_(std::move(short_name)) {}

    void attach(HookSet<T>& hooks) {
        for (std::int64_t l = 0; l < std::int64_t(layers_.size()); ++l)
            hooks.add(hook_name(short_name_, l), [this, l](const std::string&, ActivationRef<T>& x) { observe(l, x); });
    }
    void begin_sample() { ++sample_; }
    const std::vector<Layer>& layers() const { return layers_; }
    std::int64_t samples() const { return sample_ + 1; }

private:
    void observe(std::int64_t l, const ActivationRef<T>& x) {
        const std::int64_t n = x.shape[0], d = x.size() / n;
        Layer& L = layers_[l];
        for (std::int64_t i = 0; i < x.size(); ++i) {
            const double a = std::abs(double(x.data[i]));
            if (std::int64_t(L.top.size()) < k_ || a > L.top.back().abs_value) {
                TopActivation ta{a, double(x.data[i]), i % d, i / d, sample_};
                L.top.insert(std::upper_bound(L.top.begin(), L.top.end(), ta,
                                              [](const TopActivation& u, const TopActivation& v) { return u.abs_value > v.abs_value; }),
                             ta);
                if (std::int64_t(L.top.size()) > k_) L.top.pop_back();
            }
        }
        if (L.norm_sum.size() < std::size_t(n)) { L.norm_sum.resize(n, 0.0); L.norm_count.resize(n, 0); }
        for (std::int64_t t = 0; t < n; ++t) {
            double s = 0;
            for (std::int64_t c = 0; c < d; ++c) s += double(x.data[t * d + c]) * double(x.data[t * d + c]);
            L.norm_sum[t] += std::sqrt(s);
            L.norm_count[t] += 1;
        }
        L.medians.push_back(measures::median_abs(x.data, x.size()));
    }

    std::vector<Layer> layers_;
    int k_;
    std::string short_name_;
    std::int64_t sample_ = 0;
};

template <class T>
class AttentionStats {
public:
    AttentionStats(std::int64_t n_layers, std::int64_t n_heads) : L_(n_layers), H_(n_heads), received_(n_layers * n_heads) {}

    void attach(HookSet<T>& hooks) {
        for (std::int64_t l = 0; l < L_; ++l)
            hooks.add(hook_name("pattern", l), [this, l](const std::string&, ActivationRef<T>& p) { observe(l, p); });
    }
    void begin_sample() { alpha0_.emplace_back(L_ * H_, std::nan("")); }

    // α_k of (layer, head), averaged over samples, for every key position k seen.
    std::vector<double> received(std::int64_t layer, std::int64_t head) const {
        const auto& r = received_[layer * H_ + head];
        std::vector<double> out(r.sum.size());
        for (std::size_t k = 0; k < out.size(); ++k) out[k] = r.count[k] ? r.sum[k] / double(r.count[k]) : 0.0;
        return out;
    }
    // Sink^ε_0 of each sample restricted to layers [first, last]: the fraction of (layer, head) with
    // α₀ > ε in that sample. The samples are the independent units that intervals resample.
    std::vector<double> sink_rate_per_sample(double eps, std::int64_t first = 0, std::int64_t last = -1) const {
        if (last < 0) last = L_ - 1;
        require(first >= 0 && first <= last && last < L_, "sink_rate: bad layer range");
        require(!alpha0_.empty(), "sink_rate: no sample was observed (call begin_sample before each forward)");
        std::vector<double> out;
        for (const auto& a : alpha0_) {
            std::int64_t hits = 0;
            for (std::int64_t l = first; l <= last; ++l)
                for (std::int64_t h = 0; h < H_; ++h) hits += measures::is_sink(a[l * H_ + h], eps);
            out.push_back(double(hits) / double((last - first + 1) * H_));
        }
        return out;
    }
    // Sink^ε_0 restricted to layers [first, last]: the mean over samples of sink_rate_per_sample.
    double sink_rate(double eps, std::int64_t first = 0, std::int64_t last = -1) const {
        const auto r = sink_rate_per_sample(eps, first, last);
        double total = 0;
        for (double x : r) total += x;
        return total / double(r.size());
    }
    // α₀ of (layer, head) in sample s (NaN if that layer was not observed).
    double alpha0(std::int64_t sample, std::int64_t layer, std::int64_t head) const {
        require(sample >= 0 && sample < std::int64_t(alpha0_.size()), "alpha0: sample out of range");
        return alpha0_[sample][layer * H_ + head];
    }
    // Per-head sink indicator rate: fraction of samples in which α₀(layer, head) > ε.
    double head_sink_rate(std::int64_t layer, std::int64_t head, double eps) const {
        double hits = 0;
        for (const auto& a : alpha0_) hits += measures::is_sink(a[layer * H_ + head], eps);
        return alpha0_.empty() ? 0.0 : hits / double(alpha0_.size());
    }
    std::int64_t samples() const { return std::int64_t(alpha0_.size()); }

private:
    struct Received { std::vector<double> sum; std::vector<std::int64_t> count; };
    void observe(std::int64_t l, const ActivationRef<T>& p) {
        require(!alpha0_.empty(), "AttentionStats: call begin_sample() before each forward pass");
        const std::int64_t H = p.shape[0], n = p.shape[1];
        for (std::int64_t h = 0; h < H; ++h) {
            auto& r = received_[l * H_ + h];
            if (r.sum.size() < std::size_t(n)) { r.sum.resize(n, 0.0); r.count.resize(n, 0); }
            const T* A = p.data + h * n * n;
            for (std::int64_t k = 0; k < n; ++k) {
                const double alpha = measures::received_attention(A, n, k);
                r.sum[k] += alpha;
                r.count[k] += 1;
                if (k == 0) alpha0_.back()[l * H_ + h] = alpha;
            }
        }
    }
    std::int64_t L_, H_;
    std::vector<Received> received_;
    std::vector<std::vector<double>> alpha0_;  // [sample][layer·H + head]
};

}  // namespace sinkscope::model
