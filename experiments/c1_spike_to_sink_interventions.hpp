// c1_spike_to_sink's interventions: the clean pass over every sample (massive and large entries, the spike
// coordinate, channel means), the channel ablations of C1 / C3 and their random-channel controls, and
// C2's patching of position 0's attention output. Split from c1_spike_to_sink.cpp, which keeps the claim,
// the method's choices (layers, channels, controls) and the rules; numbers come from the library's hooks,
// interventions and reducers.
#pragma once

#include <algorithm>
#include <set>

#include <sinkscope/model/interventions.hpp>
#include <sinkscope/model/reducers.hpp>

#include "common.hpp"

namespace sinkscope::experiments::spike_to_sink {

// What every intervention runs on: the run (progress), the options (seed, batching), the model, the samples.
struct Setup {
    Run& run;
    const CommonOptions& opt;
    const Inputs& in;
    const std::vector<Tokens>& smp;
};

// Entries of one state (n × d) with |x| > kMassiveAbs = 100: Sun et al.'s absolute threshold alone,
// without the 1000 × median part (the early spike of SmolLM2 is large but not yet "massive").
inline std::vector<analysis::SpikeEntry> large_entries(const float* x, std::int64_t n, std::int64_t d) {
    std::vector<analysis::SpikeEntry> out;
    for (std::int64_t i = 0; i < n * d; ++i)
        if (std::abs(double(x[i])) > measures::kMassiveAbs) out.push_back({i / d, i % d, double(x[i])});
    return out;
}

// Per sample s and layer l (hook_resid_post l): massive entries (Sun et al.), large entries (|x| > 100)
// and the spike coordinate x_0[c*]; per layer the channel means over positions without a large entry.
struct CleanPass {
    std::vector<std::vector<std::vector<analysis::SpikeEntry>>> massive, large;  // [s][l]
    std::vector<std::vector<double>> x0c;                                         // [s][l]
    std::vector<std::vector<double>> channel_mean;                                // [l][c]
    const std::vector<std::vector<std::vector<analysis::SpikeEntry>>>& entries(bool use_massive) const { return use_massive ? massive : large; }
};

inline std::vector<std::int64_t> channels_at_layer(const std::vector<std::vector<std::vector<analysis::SpikeEntry>>>& entries, std::int64_t l) {
    std::set<std::int64_t> s;
    for (const auto& per_sample : entries)
        for (const auto& e : per_sample[l]) s.insert(e.channel);
    return {s.begin(), s.end()};
}

// Sink rate per sample for every layer (index l), from one set of interventions per sample.
struct SinkRun {
    std::vector<std::vector<double>> by_layer;  // [l][s]
    std::vector<double> range(std::int64_t first, std::int64_t last) const {
        std::vector<double> out(by_layer[0].size(), 0.0);
        for (std::int64_t l = first; l <= last; ++l)
            for (std::size_t s = 0; s < out.size(); ++s) out[s] += by_layer[l][s] / double(last - first + 1);
        return out;
    }
    double layer_mean(std::int64_t l) const { return by_layer.empty() ? 0.0 : analysis::mean_of(by_layer[l]); }
};

// The clean runs of every sample: CleanPass (x_0[c*] with c* = `cstar`), the sink counts into `clean_att`.
inline CleanPass clean_pass(const Setup& setup, std::int64_t cstar, model::AttentionStats<float>& clean_att) {
    Run& run = setup.run;
    const CommonOptions& opt = setup.opt;
    const Inputs& in = setup.in;
    const auto& smp = setup.smp;
    const auto& c = in.m.config;
    const std::int64_t d = c.d_model, L = c.n_layers, N = std::int64_t(smp.size());
    CleanPass cp;
    cp.massive.assign(N, std::vector<std::vector<analysis::SpikeEntry>>(L));
    cp.large = cp.massive;
    cp.x0c.assign(N, std::vector<double>(L, 0.0));
    std::vector<std::vector<double>> ch_sum(L, std::vector<double>(d, 0.0));
    std::vector<std::int64_t> ch_count(L, 0);
    {
        model::HookSet<float> hooks;
        clean_att.attach(hooks);
        std::int64_t s = -1;  // the sample whose activations the hooks see
        for (std::int64_t l = 0; l < L; ++l) {
            hooks.add(model::hook_name("resid_post", l), [&, l](const std::string&, model::ActivationRef<float>& x) {
                const std::int64_t n = x.shape[0];
                cp.massive[s][l] = analysis::massive_entries(x.data, n, d);
                cp.large[s][l] = large_entries(x.data, n, d);
                const auto xv = model::view(x);  // [pos, d_model]
                cp.x0c[s][l] = double(xv(0, cstar));
                const auto pos = analysis::spike_positions(cp.large[s][l]);
                for (std::int64_t t = 0; t < n; ++t) {
                    if (std::binary_search(pos.begin(), pos.end(), t)) continue;
                    for (std::int64_t j = 0; j < d; ++j) ch_sum[l][j] += double(xv(t, j));
                    ++ch_count[l];
                }
            });
        }
        model::EachSequence<float> each;
        each.before = [&](std::int64_t i) {
            s = i;
            clean_att.begin_sample();
        };
        measure_samples(run, opt, c, in.m.weights, smp, hooks, each, no_logits());
    }
    cp.channel_mean.assign(L, {});
    for (std::int64_t l = 0; l < L; ++l) {
        cp.channel_mean[l].resize(d);
        for (std::int64_t j = 0; j < d; ++j) cp.channel_mean[l][j] = ch_count[l] ? ch_sum[l][j] / double(ch_count[l]) : 0.0;
    }
    return cp;
}

// One ablation run per sample: the spike channels of `layer` (or as many random never-large ones)
// set to their mean at the sample's spike positions of that layer, after every block layer … until.
// Returns per-layer sink rates (alpha0 > eps).
inline SinkRun ablation_runs(const Setup& setup, const CleanPass& cp, const std::vector<std::int64_t>& never_large, double eps,
                             std::int64_t layer, std::int64_t until, bool use_massive, bool random, const std::string& label) {
    Run& run = setup.run;
    const CommonOptions& opt = setup.opt;
    const Inputs& in = setup.in;
    const auto& smp = setup.smp;
    const auto& c = in.m.config;
    const std::int64_t L = c.n_layers, H = c.n_heads, N = std::int64_t(smp.size());
    SinkRun out;
    out.by_layer.assign(L, {});
    const auto& entries = cp.entries(use_massive);
    const auto spike_ch = channels_at_layer(entries, layer);
    std::mt19937_64 rng(opt.seed * 7919ull + std::uint64_t(layer) * 104729ull + 17);
    model::AttentionStats<float> att(L, H);
    for (std::int64_t s = 0; s < N; ++s) {
        const auto pos = analysis::spike_positions(entries[s][layer]);
        std::vector<std::int64_t> ch = spike_ch;
        if (random) {
            std::vector<std::int64_t> pool = never_large;
            std::shuffle(pool.begin(), pool.end(), rng);
            ch.assign(pool.begin(), pool.begin() + std::min(pool.size(), spike_ch.size()));
        }
        model::HookSet<float> hooks;
        for (std::int64_t l = layer; l <= until && !pos.empty() && !ch.empty(); ++l) {
            std::vector<float> means;
            for (auto j : ch) means.push_back(float(cp.channel_mean[l][j]));
            model::mean_ablate_channels<float>(hooks, model::hook_name("resid_post", l), ch, means, pos);
        }
        att.attach(hooks);
        att.begin_sample();
        model::forward(c, in.m.weights, smp[s], &hooks, no_logits());
        run.progress(s + 1, N, label);
    }
    for (std::int64_t l = 0; l < L; ++l) out.by_layer[l] = att.sink_rate_per_sample(eps, l, l);
    return out;
}

// C2: per sample, position 0's attention output at layer P copied onto every position t >= 1, and the
// control, a random other position q >= 1 copied the same way. share = fraction of the patched positions
// whose state after block P carries the spike, sign(x_0[c*]) * x_t[c*] >= |x_0[c*]| / 2 (x_0 from the
// clean run); value = the mean of sign(x_0[c*]) * x_t[c*] / |x_0[c*]| over them.
struct Patch {
    std::vector<double> share_p0, share_ctrl, value_p0, value_ctrl;
    std::vector<std::int64_t> ctrl_source;  // q per sample
};
// spike_fraction: a position gets the spike when sign(x_0[c*]) x_t[c*] >= spike_fraction x |x_0[c*]| (C2's
// "spike_fraction_of_clean", analysis/rule_table.hpp).
inline Patch patch_runs(const Setup& setup, const CleanPass& cp, std::int64_t P, std::int64_t cstar, double spike_fraction) {
    Run& run = setup.run;
    const CommonOptions& opt = setup.opt;
    const Inputs& in = setup.in;
    const auto& smp = setup.smp;
    const auto& c = in.m.config;
    const std::int64_t N = std::int64_t(smp.size()), T = std::int64_t(smp[0].size());
    Patch out;
    auto& [share_p0, share_ctrl, value_p0, value_ctrl, ctrl_source] = out;
    std::mt19937_64 rng(opt.seed * 6151ull + 3);
    std::uniform_int_distribution<std::int64_t> pick(1, T - 1);
    for (std::int64_t s = 0; s < N; ++s) {
        const std::int64_t q = pick(rng);
        ctrl_source.push_back(q);
        const double x0 = cp.x0c[s][P], sign = x0 >= 0 ? 1.0 : -1.0;
        for (int variant = 0; variant < 2; ++variant) {
            const std::int64_t src = variant == 0 ? 0 : q;
            model::HookSet<float> hooks;
            model::copy_position<float>(hooks, model::hook_name("attn_out", P), src);
            model::ActivationCache<float> cache;
            cache.attach(hooks, std::vector<std::string>{model::hook_name("resid_post", P)});
            model::forward(c, in.m.weights, smp[s], &hooks, no_logits(P));
            const auto x = model::view(cache[model::hook_name("resid_post", P)]);  // [pos, d_model]
            double hits = 0, value = 0, count = 0;
            for (std::int64_t t = 1; t < T; ++t) {
                if (t == src) continue;
                const double v = sign * double(x(t, cstar));
                hits += v >= spike_fraction * std::abs(x0);
                value += std::abs(x0) > 0 ? v / std::abs(x0) : 0.0;
                ++count;
            }
            (variant == 0 ? share_p0 : share_ctrl).push_back(hits / count);
            (variant == 0 ? value_p0 : value_ctrl).push_back(value / count);
        }
        run.progress(s + 1, N, "patched samples");
    }
    return out;
}

}  // namespace sinkscope::experiments::spike_to_sink
