// c1_spike_to_sink's interventions: the clean pass over every sample (massive and large entries, the spike
// coordinate, channel means), the channel ablations of C1 / C3 and their random-channel controls, and
// C2's patching of position 0's attention output. Split from c1_spike_to_sink.cpp, which keeps the claim,
// the method's choices (layers, channels, controls) and the rules; numbers come from the library's hooks,
// interventions and reducers.
#pragma once

#include <algorithm>
#include <set>
#include <sstream>
#include <tuple>

#include <sinkscope/model/attention_surgery.hpp>
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

// Channels that are large (|x| > 100) at no layer of any sample: the random control draws only these.
inline std::vector<std::int64_t> never_large_channels(const CleanPass& cp, std::int64_t d) {
    std::set<std::int64_t> ever_large;
    const std::int64_t L = cp.large.empty() ? 0 : std::int64_t(cp.large[0].size());
    for (std::int64_t l = 0; l < L; ++l)
        for (auto ch : channels_at_layer(cp.large, l)) ever_large.insert(ch);
    std::vector<std::int64_t> out;
    for (std::int64_t j = 0; j < d; ++j)
        if (!ever_large.count(j)) out.push_back(j);
    return out;
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

// The clean run's values of the dosed entries after every block layer … until: per sample s, per layer
// l − layer, the spike channels of `layer` (ascending) at the sample's spike positions of `layer` (ascending),
// position-major. One clean forward per sample.
using CleanValues = std::vector<std::vector<std::vector<float>>>;  // [s][l − layer][i_pos · n_channels + i_channel]
inline CleanValues clean_values(const Setup& setup, const CleanPass& cp, std::int64_t layer, std::int64_t until, bool use_massive) {
    const auto& entries = cp.entries(use_massive);
    const auto ch = channels_at_layer(entries, layer);
    const auto& c = setup.in.m.config;
    const std::int64_t N = std::int64_t(setup.smp.size()), d = c.d_model;
    CleanValues out(N, std::vector<std::vector<float>>(until - layer + 1));
    for (std::int64_t s = 0; s < N; ++s) {
        const auto pos = analysis::spike_positions(entries[s][layer]);
        model::HookSet<float> hooks;
        for (std::int64_t l = layer; l <= until; ++l)
            hooks.add(model::hook_name("resid_post", l), [&, l](const std::string&, model::ActivationRef<float>& x) {
                for (auto t : pos)
                    for (auto j : ch) out[s][l - layer].push_back(x.data[t * d + j]);
            });
        model::forward(c, setup.in.m.weights, setup.smp[s], &hooks, no_logits(until));
        setup.run.progress(s + 1, N, "clean values of the dosed entries");
    }
    return out;
}

// One ablation run per sample: after every block l = layer … until, the spike channels of `layer` (or as many
// random never-large ones) at the sample's spike positions of `layer` are set to
//   x_l ← μ_l + dose · (x_l^clean − μ_l)
// (μ_l = the channel's mean over ordinary positions, x_l^clean the clean run's value, `clean`): dose 0 is the
// mean-ablation, 1 the clean run, and a dose in between pins the spike's excess to that fraction of its clean
// value at every layer, so that neither a later block rebuilds it nor the dose compounds from layer to layer.
// The random control is run at dose 0 only (`clean` unused). Returns per-layer sink rates (alpha0 > eps).
inline SinkRun ablation_runs(const Setup& setup, const CleanPass& cp, const std::vector<std::int64_t>& never_large, double eps,
                             std::int64_t layer, std::int64_t until, bool use_massive, bool random, double dose,
                             const CleanValues* clean, const std::string& label) {
    require(dose == 0.0 || (!random && clean), "ablation_runs: a dose above 0 needs the spike channels' clean values");
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
            if (dose == 0.0) {
                model::mean_ablate_channels<float>(hooks, model::hook_name("resid_post", l), ch, means, pos);
                continue;
            }
            const auto& x = (*clean)[s][l - layer];
            for (std::size_t p = 0; p < pos.size(); ++p) {
                std::vector<float> v(ch.size());
                for (std::size_t i = 0; i < ch.size(); ++i) v[i] = means[i] + float(dose) * (x[p * ch.size() + i] - means[i]);
                model::set_channels<float>(hooks, model::hook_name("resid_post", l), ch, v, {pos[p]});
            }
        }
        att.attach(hooks);
        att.begin_sample();
        model::forward(c, in.m.weights, smp[s], &hooks, no_logits());
        run.progress(s + 1, N, label);
    }
    for (std::int64_t l = 0; l < L; ++l) out.by_layer[l] = att.sink_rate_per_sample(eps, l, l);
    return out;
}

// The dose–response of one ablation: the spike channels at every dose below 1 (ascending; dose 1 is the clean
// run) and the random never-large channels at dose 0, the control.
struct DoseRuns {
    std::vector<double> doses;
    std::vector<SinkRun> spike;  // one per dose
    SinkRun random;              // dose 0
};
inline DoseRuns dose_runs(const Setup& setup, const CleanPass& cp, const std::vector<std::int64_t>& never_large, double eps,
                          std::int64_t layer, std::int64_t until, bool use_massive, const std::vector<double>& doses,
                          const std::string& where) {
    DoseRuns r;
    r.doses = doses;
    const CleanValues clean = clean_values(setup, cp, layer, until, use_massive);
    for (double f : doses) {
        std::ostringstream label;
        label << "spike@" << where << " x" << f;
        r.spike.push_back(ablation_runs(setup, cp, never_large, eps, layer, until, use_massive, false, f, &clean, label.str()));
    }
    r.random = ablation_runs(setup, cp, never_large, eps, layer, until, use_massive, true, 0.0, nullptr, "random@" + where);
    return r;
}

// Per counted layer l in [first, last]: the mean sink rate clean, under the spike ablation at every dose and under
// the control, and the paired per-sample extra drop at dose 0 (spike minus control) with its bootstrap interval;
// `specific` = that interval's lower bound reaches one head of the layer, 1 / H.
inline json per_layer_dose_response(const SinkRun& clean, const DoseRuns& r, std::int64_t first, std::int64_t last, std::int64_t H) {
    json layers = json::array();
    for (std::int64_t l = first; l <= last; ++l) {
        const auto& c = clean.by_layer[l];
        std::vector<double> extra(c.size());
        for (std::size_t s = 0; s < c.size(); ++s) extra[s] = r.random.by_layer[l][s] - r.spike[0].by_layer[l][s];
        const analysis::Interval ci = analysis::bootstrap_mean(extra);
        json spike = json::array();
        for (std::size_t k = 0; k < r.doses.size(); ++k) spike.push_back({{"dose", r.doses[k]}, {"sink_rate", r.spike[k].layer_mean(l)}});
        layers.push_back({{"layer", l}, {"clean", clean.layer_mean(l)}, {"spike_ablated", spike}, {"random_ablated", r.random.layer_mean(l)},
                          {"extra_drop", analysis::mean_of(extra)}, {"extra_drop_ci", {ci.lo, ci.hi}},
                          {"specific", ci.lo >= 1.0 / double(H)}});
    }
    return layers;
}

inline std::string dose_text(double f) {
    std::ostringstream o;
    o << f;
    return o.str();
}

// The figure data: sink_rates.csv (per layer: the mean sink rate clean, under the spike ablation of layer S (C1,
// `c1`) and E (C3, `c3`) at each dose and under their controls; the clean mean x_0[c*]), results'
// sink_rate_by_layer (the same), and per_sample.csv (per sample: the counted layers' rates each verdict reads).
// A null `c1` / `c3` (the ablation could not run) writes 0 in its columns.
inline void write_sink_rates(Run& run, const SinkRun& clean, const std::vector<double>& doses, const DoseRuns* c1, const DoseRuns* c3,
                             std::int64_t S, std::int64_t E, const std::vector<double>& x0c_mean) {
    const std::int64_t L = std::int64_t(clean.by_layer.size()), N = std::int64_t(clean.by_layer[0].size());
    std::vector<std::string> header{"layer", "clean"};
    std::vector<std::string> sample_header{"sample"};
    for (const auto& [name, r] : {std::pair{std::string("S"), c1}, std::pair{std::string("E"), c3}}) {
        const std::string claim = name == "S" ? "c1" : "c3";
        sample_header.push_back(claim + "_clean");
        for (std::size_t k = 0; k < doses.size(); ++k) {
            const std::string suffix = k == 0 ? "" : "_x" + dose_text(doses[k]);
            header.push_back("spike_at_" + name + suffix);
            sample_header.push_back(claim + "_spike" + suffix);
        }
        header.push_back("random_at_" + name);
        sample_header.push_back(claim + "_random");
    }
    header.push_back("x0_spike");
    // A row's values, in the header's order: per ablation the spike at each dose, then its control.
    auto values = [&doses](const DoseRuns* r, auto&& mean) {
        std::vector<double> v;
        if (!r) return std::vector<double>(doses.size() + 1, 0.0);
        for (const auto& s : r->spike) v.push_back(mean(s));
        v.push_back(mean(r->random));
        return v;
    };
    Csv sr(run.path("sink_rates.csv"), header), ps(run.path("per_sample.csv"), sample_header);
    json lj = json::array();
    for (std::int64_t l = 0; l < L; ++l) {
        auto layer_mean = [l](const SinkRun& s) { return s.layer_mean(l); };
        const auto a = values(c1, layer_mean), b = values(c3, layer_mean);
        std::vector<double> row{double(l), clean.layer_mean(l)};
        row.insert(row.end(), a.begin(), a.end());
        row.insert(row.end(), b.begin(), b.end());
        row.push_back(x0c_mean[l]);
        sr.row_of(row);
        json j{{"layer", l}, {"clean", clean.layer_mean(l)}, {"x0_spike", x0c_mean[l]}};
        for (std::size_t i = 2; i + 1 < row.size(); ++i) j[header[i]] = row[i];
        lj.push_back(j);
    }
    run.results()["sink_rate_by_layer"] = lj;
    // Per sample: the counted layers' rates (SinkRun::range, computed once per run and ablation).
    std::vector<std::vector<double>> columns;
    const std::vector<double> zeros(std::size_t(N), 0.0);
    for (const auto& [r, first, last] : {std::tuple{c1, S + 1, L - 1}, std::tuple{c3, E + 1, S}}) {
        if (!r) {
            columns.insert(columns.end(), doses.size() + 2, zeros);  // clean, each dose, the control
            continue;
        }
        columns.push_back(clean.range(first, last));
        for (const auto& x : r->spike) columns.push_back(x.range(first, last));
        columns.push_back(r->random.range(first, last));
    }
    for (std::int64_t s = 0; s < N; ++s) {
        std::vector<double> row{double(s)};
        for (const auto& col : columns) row.push_back(col[std::size_t(s)]);
        ps.row_of(row);
    }
}

// C2, per sample, four runs up to block P, each scored by the share of positions t >= 1 whose state after block P
// carries the spike, sign(x_0[c*]) * x_t[c*] >= spike_fraction * |x_0[c*]| (x_0 from the clean run; C2's
// "spike_fraction_of_clean", analysis/rule_table.hpp), and by value = the mean of sign(x_0[c*]) x_t[c*] / |x_0[c*]|:
//   surgery (deciding): every head's row of every query t >= 1 in blocks 0..P forced to self-only attention
//            (model/attention_surgery.hpp: z_t = v_t, what position 0 does by itself under the causal mask), so
//            that every position's attention output is unmixed; control: the same rows forced to uniform
//            attention over keys 0..t, a forced pattern that mixes;
//   copy (reported): position 0's attention output at layer P copied onto every t >= 1 (hook_attn_out P), and a
//            random other position q >= 1's copied the same way (measured over t not in {0, q}).
struct Patch {
    std::vector<double> share_p0, share_ctrl, value_p0, value_ctrl;             // copy
    std::vector<double> share_self, share_uniform, value_self, value_uniform;  // surgery
    std::vector<std::int64_t> ctrl_source;                                      // q per sample
};
inline Patch patch_runs(const Setup& setup, const CleanPass& cp, std::int64_t P, std::int64_t cstar, double spike_fraction) {
    Run& run = setup.run;
    const CommonOptions& opt = setup.opt;
    const Inputs& in = setup.in;
    const auto& smp = setup.smp;
    const auto& c = in.m.config;
    const std::int64_t N = std::int64_t(smp.size()), T = std::int64_t(smp[0].size());
    Patch out;
    std::mt19937_64 rng(opt.seed * 6151ull + 3);
    std::uniform_int_distribution<std::int64_t> pick(1, T - 1);
    std::vector<std::int64_t> later(T - 1);
    for (std::int64_t t = 1; t < T; ++t) later[t - 1] = t;
    for (std::int64_t s = 0; s < N; ++s) {
        const std::int64_t q = pick(rng);
        out.ctrl_source.push_back(q);
        const double x0 = cp.x0c[s][P], sign = x0 >= 0 ? 1.0 : -1.0;
        for (int variant = 0; variant < 4; ++variant) {
            const std::int64_t skip = variant == 1 ? q : 0;  // the copied row itself is not scored
            model::HookSet<float> hooks;
            if (variant < 2) model::copy_position<float>(hooks, model::hook_name("attn_out", P), variant == 0 ? 0 : q);
            for (std::int64_t l = 0; variant >= 2 && l <= P; ++l) {
                if (variant == 2) model::self_only_attention<float>(hooks, l, {}, later);
                else model::force_pattern_row<float>(hooks, l, std::vector<float>(T, 1.0f), {}, later);
            }
            model::ActivationCache<float> cache;
            cache.attach(hooks, std::vector<std::string>{model::hook_name("resid_post", P)});
            model::forward(c, in.m.weights, smp[s], &hooks, no_logits(P));
            const auto x = model::view(cache[model::hook_name("resid_post", P)]);  // [pos, d_model]
            double hits = 0, value = 0, count = 0;
            for (std::int64_t t = 1; t < T; ++t) {
                if (t == skip) continue;
                const double v = sign * double(x(t, cstar));
                hits += v >= spike_fraction * std::abs(x0);
                value += std::abs(x0) > 0 ? v / std::abs(x0) : 0.0;
                ++count;
            }
            auto& share = variant == 0 ? out.share_p0 : variant == 1 ? out.share_ctrl : variant == 2 ? out.share_self : out.share_uniform;
            auto& mean = variant == 0 ? out.value_p0 : variant == 1 ? out.value_ctrl : variant == 2 ? out.value_self : out.value_uniform;
            share.push_back(hits / count);
            mean.push_back(value / count);
        }
        run.progress(s + 1, N, "patched samples");
    }
    return out;
}

// patch.csv: per sample the C2 shares and spike fractions of the four runs (patch_runs) and the clean x_0[c*].
inline void write_patch_csv(Run& run, const Patch& p, const CleanPass& cp, std::int64_t P) {
    Csv pc(run.path("patch.csv"), {"sample", "control_source", "x0_spike", "share_self_surgery", "share_uniform_surgery",
                                   "spike_fraction_self_surgery", "spike_fraction_uniform_surgery", "share_copy_p0",
                                   "share_copy_control", "spike_fraction_copy_p0", "spike_fraction_copy_control"});
    for (std::size_t s = 0; s < p.share_p0.size(); ++s)
        pc.row(s, p.ctrl_source[s], cp.x0c[s][P], p.share_self[s], p.share_uniform[s], p.value_self[s], p.value_uniform[s],
               p.share_p0[s], p.share_ctrl[s], p.value_p0[s], p.value_ctrl[s]);
}

}  // namespace sinkscope::experiments::spike_to_sink
