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
// Usage: attach to a HookSet. The two count samples differently (both callers, stats_run.hpp and
// a4_training_trace.cpp, write `if (i) rs.begin_sample(); as.begin_sample();` before forward pass i):
//   AttentionStats  begin_sample() opens a sample: call it before every forward pass, the first included.
//   ResidualStats   its first sample is open from construction (samples() is 1 before any pass);
//                   begin_sample() moves to the next: call it before every forward pass but the first.
//
// Sharding: a reducer covers the samples [first_sample(), first_sample() + samples()) of the whole run
// (start_at(s) before the first forward pass of a shard that begins at sample s). a.merge(b) for two
// reducers of adjacent ranges gives the reducer of the union, and to_json() / from_json() save and
// restore a state exactly (core/state_json.hpp). Merging is exact for the top-k (ties broken by sample,
// position, channel, the order a single run meets them), the per-sample medians and α₀ and every count.
// The sums behind mean_norm and received are float sums in another order: for n samples of
// non-negative terms both orders lie within γ_{n−1} = (n−1)u/(1−(n−1)u) of the exact sum (Higham,
// Accuracy and Stability, §4.2; u = 2⁻⁵³), so merged and single-run sums differ by at most 2γ_{n−1}
// relatively, and the means (one more rounding each) by about 2(n+1)u.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/core/measures.hpp"
#include "sinkscope/core/state_json.hpp"
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
        double median() const {             // upper median over samples of the per-sample median; 0 if none
            return medians.empty() ? 0.0 : measures::upper_median_of(medians);
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
    // Numbers this reducer's first sample s (top[i].sample counts from it); before any forward pass.
    void start_at(std::int64_t s) {
        require(s >= 0, "ResidualStats::start_at: negative sample index");
        require(sample_ == first_ && std::all_of(layers_.begin(), layers_.end(), [](const Layer& L) { return L.medians.empty(); }),
                "ResidualStats::start_at: call it before the first forward pass");
        first_ = sample_ = s;
    }
    const std::vector<Layer>& layers() const { return layers_; }
    std::int64_t samples() const { return sample_ - first_ + 1; }
    std::int64_t first_sample() const { return first_; }
    int k() const { return k_; }
    const std::string& hook() const { return short_name_; }

    // Adds the samples of `other`, whose range must adjoin this one's (before or after it).
    void merge(const ResidualStats& other) {
        const std::string what = "ResidualStats::merge: ";
        require(layers_.size() == other.layers_.size(), what + "different layer counts (" + std::to_string(layers_.size()) +
                                                            " and " + std::to_string(other.layers_.size()) + ")");
        require(k_ == other.k_, what + "different k (top-" + std::to_string(k_) + " and top-" + std::to_string(other.k_) + ")");
        require(short_name_ == other.short_name_, what + "different hooks ('" + short_name_ + "' and '" + other.short_name_ + "')");
        const bool after = other.first_ == first_ + samples(), before = other.first_ + other.samples() == first_;
        require(after || before, what + "sample ranges " + range_text() + " and " + other.range_text() +
                                     (overlaps(other) ? " overlap" : " leave a gap") + "; merge adjacent ranges only");
        const ResidualStats& lo = after ? *this : other;
        const ResidualStats& hi = after ? other : *this;
        std::vector<Layer> out(layers_.size());
        for (std::size_t l = 0; l < out.size(); ++l) {
            const Layer &a = lo.layers_[l], &b = hi.layers_[l];
            Layer& L = out[l];
            // The top-k of the union lies in the union of the two top-k lists (in one total order).
            L.top = a.top;
            L.top.insert(L.top.end(), b.top.begin(), b.top.end());
            std::stable_sort(L.top.begin(), L.top.end(), first_met);
            if (std::int64_t(L.top.size()) > k_) L.top.resize(std::size_t(k_));
            L.medians = a.medians;
            L.medians.insert(L.medians.end(), b.medians.begin(), b.medians.end());
            const std::size_t n = std::max(a.norm_sum.size(), b.norm_sum.size());
            L.norm_sum.assign(n, 0.0);
            L.norm_count.assign(n, 0);
            for (std::size_t t = 0; t < n; ++t) {
                if (t < a.norm_sum.size()) { L.norm_sum[t] = a.norm_sum[t]; L.norm_count[t] = a.norm_count[t]; }
                if (t < b.norm_sum.size()) { L.norm_sum[t] += b.norm_sum[t]; L.norm_count[t] += b.norm_count[t]; }
            }
        }
        first_ = lo.first_;
        sample_ = hi.sample_;
        layers_ = std::move(out);
    }

    nlohmann::json to_json() const {
        auto j = state_json::header(format, 1);
        j["hook"] = short_name_;
        j["k"] = k_;
        j["first_sample"] = first_;
        j["samples"] = samples();
        j["layers"] = nlohmann::json::array();
        for (const auto& L : layers_) {
            nlohmann::json top = nlohmann::json::array();
            for (const auto& t : L.top)
                top.push_back({{"abs", state_json::from_double(t.abs_value)}, {"value", state_json::from_double(t.value)},
                               {"channel", t.channel}, {"position", t.position}, {"sample", t.sample}});
            j["layers"].push_back({{"top", top}, {"medians", state_json::from_doubles(L.medians)},
                                   {"norm_sum", state_json::from_doubles(L.norm_sum)}, {"norm_count", L.norm_count}});
        }
        return j;
    }
    static ResidualStats from_json(const nlohmann::json& j) {
        return state_json::read_state(j, format, 1, [](const nlohmann::json& s) {
            const auto& layers = s.at("layers");
            require(layers.is_array(), "\"layers\" is not an array");
            ResidualStats r(std::int64_t(layers.size()), s.at("k").get<int>(), s.at("hook").get<std::string>());
            require(r.k_ >= 1, "k must be at least 1");
            const auto n = s.at("samples").get<std::int64_t>();
            r.first_ = s.at("first_sample").get<std::int64_t>();
            require(r.first_ >= 0 && n >= 1, "bad sample range");
            r.sample_ = r.first_ + n - 1;
            for (std::size_t l = 0; l < layers.size(); ++l) {
                Layer& L = r.layers_[l];
                for (const auto& t : layers[l].at("top"))
                    L.top.push_back({state_json::to_double(t.at("abs")), state_json::to_double(t.at("value")),
                                     t.at("channel").get<std::int64_t>(), t.at("position").get<std::int64_t>(),
                                     t.at("sample").get<std::int64_t>()});
                L.medians = state_json::to_doubles(layers[l].at("medians"));
                L.norm_sum = state_json::to_doubles(layers[l].at("norm_sum"));
                L.norm_count = state_json::to_integers(layers[l].at("norm_count"));
                require(std::int64_t(L.top.size()) <= r.k_ && L.norm_sum.size() == L.norm_count.size(),
                        "layer " + std::to_string(l) + ": more than k top entries or norm_sum and norm_count of different lengths");
            }
            return r;
        });
    }
    static constexpr const char* format = "sinkscope.ResidualStats";

private:
    // The order in which a single run keeps entries: larger |x| first; among equal |x| the one met first
    // (earlier sample, then earlier position, then lower channel).
    static bool first_met(const TopActivation& u, const TopActivation& v) {
        if (u.abs_value != v.abs_value) return u.abs_value > v.abs_value;
        if (u.sample != v.sample) return u.sample < v.sample;
        return u.position != v.position ? u.position < v.position : u.channel < v.channel;
    }
    std::string range_text() const {
        return "[" + std::to_string(first_) + ", " + std::to_string(first_ + samples()) + ")";
    }
    bool overlaps(const ResidualStats& o) const { return first_ < o.first_ + o.samples() && o.first_ < first_ + samples(); }

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
    std::int64_t first_ = 0;   // index of the first sample in the whole run
    std::int64_t sample_ = 0;  // index of the current sample in the whole run
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
    // Numbers this reducer's first sample s in the whole run (alpha0(sample, …) still counts from 0 here).
    void start_at(std::int64_t s) {
        require(s >= 0, "AttentionStats::start_at: negative sample index");
        require(alpha0_.empty(), "AttentionStats::start_at: call it before the first begin_sample");
        first_ = s;
    }
    std::int64_t first_sample() const { return first_; }
    std::int64_t n_layers() const { return L_; }
    std::int64_t n_heads() const { return H_; }

    // Adds the samples of `other`, whose range must adjoin this one's (before or after it).
    void merge(const AttentionStats& other) {
        const std::string what = "AttentionStats::merge: ";
        require(L_ == other.L_ && H_ == other.H_, what + "different shapes (" + std::to_string(L_) + " layers × " +
                                                      std::to_string(H_) + " heads and " + std::to_string(other.L_) +
                                                      " × " + std::to_string(other.H_) + ")");
        const bool after = other.first_ == first_ + samples(), before = other.first_ + other.samples() == first_;
        require(after || before, what + "sample ranges " + range_text() + " and " + other.range_text() +
                                     (overlaps(other) ? " overlap" : " leave a gap") + "; merge adjacent ranges only");
        const AttentionStats& lo = after ? *this : other;
        const AttentionStats& hi = after ? other : *this;
        std::vector<Received> rec(received_.size());
        for (std::size_t i = 0; i < rec.size(); ++i) {
            const Received &a = lo.received_[i], &b = hi.received_[i];
            const std::size_t n = std::max(a.sum.size(), b.sum.size());
            rec[i].sum.assign(n, 0.0);
            rec[i].count.assign(n, 0);
            for (std::size_t k = 0; k < n; ++k) {
                if (k < a.sum.size()) { rec[i].sum[k] = a.sum[k]; rec[i].count[k] = a.count[k]; }
                if (k < b.sum.size()) { rec[i].sum[k] += b.sum[k]; rec[i].count[k] += b.count[k]; }
            }
        }
        std::vector<std::vector<double>> alpha0 = lo.alpha0_;
        alpha0.insert(alpha0.end(), hi.alpha0_.begin(), hi.alpha0_.end());
        first_ = lo.first_;
        received_ = std::move(rec);
        alpha0_ = std::move(alpha0);
    }

    nlohmann::json to_json() const {
        auto j = state_json::header(format, 1);
        j["n_layers"] = L_;
        j["n_heads"] = H_;
        j["first_sample"] = first_;
        j["samples"] = samples();
        j["received"] = nlohmann::json::array();   // [layer·H + head] → {sum, count} by key position
        for (const auto& r : received_) j["received"].push_back({{"sum", state_json::from_doubles(r.sum)}, {"count", r.count}});
        j["alpha0"] = nlohmann::json::array();     // [sample][layer·H + head]
        for (const auto& a : alpha0_) j["alpha0"].push_back(state_json::from_doubles(a));
        return j;
    }
    static AttentionStats from_json(const nlohmann::json& j) {
        return state_json::read_state(j, format, 1, [](const nlohmann::json& s) {
            AttentionStats a(s.at("n_layers").get<std::int64_t>(), s.at("n_heads").get<std::int64_t>());
            require(a.L_ >= 1 && a.H_ >= 1, "bad shape");
            a.first_ = s.at("first_sample").get<std::int64_t>();
            require(a.first_ >= 0, "bad first_sample");
            const auto& rec = s.at("received");
            require(rec.is_array() && std::int64_t(rec.size()) == a.L_ * a.H_, "\"received\" needs n_layers × n_heads entries");
            for (std::size_t i = 0; i < rec.size(); ++i) {
                a.received_[i].sum = state_json::to_doubles(rec[i].at("sum"));
                a.received_[i].count = state_json::to_integers(rec[i].at("count"));
                require(a.received_[i].sum.size() == a.received_[i].count.size(), "sum and count of different lengths");
            }
            for (const auto& row : s.at("alpha0")) {
                a.alpha0_.push_back(state_json::to_doubles(row));
                require(std::int64_t(a.alpha0_.back().size()) == a.L_ * a.H_, "an alpha0 row needs n_layers × n_heads values");
            }
            require(s.at("samples").get<std::int64_t>() == a.samples(), "\"samples\" disagrees with the alpha0 rows");
            return a;
        });
    }
    static constexpr const char* format = "sinkscope.AttentionStats";

private:
    struct Received { std::vector<double> sum; std::vector<std::int64_t> count; };
    std::string range_text() const {
        return "[" + std::to_string(first_) + ", " + std::to_string(first_ + samples()) + ")";
    }
    bool overlaps(const AttentionStats& o) const { return first_ < o.first_ + o.samples() && o.first_ < first_ + samples(); }
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
    std::int64_t first_ = 0;  // index of the first sample in the whole run
    std::vector<Received> received_;
    std::vector<std::vector<double>> alpha0_;  // [sample][layer·H + head]
};

}  // namespace sinkscope::model
