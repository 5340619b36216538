// C1–C3 — the causal chain spike → RMSNorm → sink key → sink head, tested by interventions (issue 10, item 6).
// Both papers propose that the massive activation ("spike") of position 0 is what makes position 0 a
// sink: the spike dominates RMSNorm(x₀), so k₀ is a fixed "sink key" that every sink head matches.
// All earlier evidence is correlational; here the spike is removed or transplanted and the sinks are
// counted again. Natural text, no BOS, T = 64; sink = Gu et al.'s α₀ > ε = 0.3 per (layer, head).
//
// Spike layers and channels, from every sample (analysis/spike_trace.hpp, analysis/spikes.hpp):
//   S = step-up layer of trace_spike (the first step-up sub-block, τ = 0.2 of the peak), c* its channel;
//   spike channels at S = every channel with a massive entry (Sun et al.: |x| > 100 and ≥ 1000 × median
//       |x| of the state) at hook_resid_post S in some sample; the ablated positions of a sample are its
//       massive positions there;
//   E = the early spike: the first layer l < S where the spike coordinate (position 0, c*) has a mean
//       |x| > 100 over the samples (Sun's absolute threshold; on SmolLM2 channel 507 reaches |x| ≈ 800 at
//       layers 1–2, which is not yet ≥ 1000 × median). Its channels / positions: entries with |x| > 100
//       at hook_resid_post E.
// Interventions (model/interventions.hpp), each paired with a control of the same size and place:
//   C1 (a) mean-ablate the spike channels of layer S at hook_resid_post S and after every later block
//          (value ← that layer's channel mean over the positions without a large entry, all samples), so
//          that no later block can rebuild the spike, and count sinks in layers S+1 … L−1.
//          Control: the same number of random channels that are never massive, same positions, same
//          ablation (drawn per sample, seeded).
//   C3 (c) the sinks before the step-up (layers E+1 … S): the same ablation of the early spike's channels
//          after blocks E … S−1, sinks counted in layers E+1 … S, with the same random-channel control.
//   C2 (b) at layer P (= E, where position 0 first becomes large; S if there is no early spike), copy
//          position 0's attention output (hook_attn_out) onto every position t ≥ 1 and ask whether layer
//          P's MLP gives those positions the spike: after block P, s·x_t[c*] ≥ ½ |x_0[c*]| of the clean run
//          (s = sign of x_0[c*]; half the spike, convention). The MLP acts per position, so patching all
//          t ≥ 1 at once equals patching each alone at that block. Control: the attention output of a
//          random other position q ≥ 1 copied the same way (measured over t ∉ {0, q}).
// Verdicts (thresholds fixed before looking; experiments/README.md):
//   C1 / C3 reproduced iff (1) the paired per-sample extra drop of the sink rate, spike ablation minus
//     random-channel ablation, has a bootstrap interval above one (layer, head) per sample,
//     1 / (H · #layers) (the resolution of the sink rate: "more than the control", strictly), and
//     (2) the ablated / clean sink-rate ratio has a bootstrap interval ≤ 0.5 (convention: the spike is the
//     cause of most of those sinks, i.e. removing it removes at least half of them).
//     Preconditions (else not applicable): the spike exists at the ablated layer in most samples (C1: a
//     massive entry; C3: |x_0[c*]| > 100; Clopper–Pearson lower bound ≥ 0.5) and the counted layers have
//     sinks (clean sink rate, bootstrap lower bound ≥ 0.1: at least one head in ten, convention).
//   C2 reproduced iff (1) the share of patched positions that get the spike has a bootstrap interval
//     ≥ 0.5 (convention: most positions) and (2) it exceeds the control's share by more than one
//     position, 1 / (T − 1) (paired per sample). Precondition: |x_0[c*]| > 100 at layer P in most
//     samples (CP lower bound ≥ 0.5).
// Command: build/experiments/c1_spike_to_sink [--samples 64] [--seq-len 64] [--out out/c1_spike_to_sink]
// Writes: sink_rates.csv (layer; mean sink rate clean / spike@S / random@S / spike@E / random@E; mean
//         x_0[c*] of the clean run),
//         per_sample.csv (per sample: the rates each verdict reads), patch.csv (per sample: shares,
//         norm ratio, cosine with position 0's MLP output), meta.json.
#include "common.hpp"

#include <algorithm>
#include <set>

#include <sinkscope/analysis/geometry.hpp>
#include <sinkscope/analysis/intervals.hpp>
#include <sinkscope/model/interventions.hpp>
#include <sinkscope/model/reducers.hpp>

using namespace sinkscope;
using namespace sinkscope::experiments;
using analysis::Side;

struct Config {
    std::int64_t samples = 64;
    std::int64_t seq_len = 64;
    double eps = measures::kSinkEps;  // Gu et al.'s sink threshold, 0.3
    double kept_max = 0.5;            // C1/C3: ablated / clean sink rate must be ≤ this (convention)
    double sinks_present_min = 0.1;   // precondition: clean sink rate of the counted layers (convention)
    double massive_share_min = 0.5;   // precondition / E: most samples carry the spike (convention)
    double patch_share_min = 0.5;     // C2: most patched positions turn massive (convention)
};

namespace {

// Entries of one state (n × d) with |x| > kMassiveAbs = 100: Sun et al.'s absolute threshold alone,
// without the 1000 × median part (the early spike of SmolLM2 is large but not yet "massive").
std::vector<analysis::SpikeEntry> large_entries(const float* x, std::int64_t n, std::int64_t d) {
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
    std::vector<std::vector<std::vector<analysis::SpikeEntry>>>& entries(bool use_massive) { return use_massive ? massive : large; }
};

std::vector<std::int64_t> channels_at_layer(const std::vector<std::vector<std::vector<analysis::SpikeEntry>>>& entries, std::int64_t l) {
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

// A C1/C3 verdict: spike-channel ablation against random-channel ablation, paired per sample.
analysis::Verdict ablation_verdict(const std::string& claim, const std::string& what, const std::string& spike_present,
                                   std::int64_t k_massive, std::int64_t n,
                                   const std::vector<double>& clean, const std::vector<double>& spike,
                                   const std::vector<double>& random, double resolution, const Config& cfg) {
    const std::string rule =
        "mean-ablate the spike channels " + what + ", at the positions that carry them; " + claim +
        " reproduced iff (1) the paired per-sample extra drop of the sink rate (Gu alpha0 > 0.3 per (layer, head)), "
        "spike ablation minus random-channel ablation (same count, same positions, same ablation), has a bootstrap 95% "
        "interval above one (layer, head) per sample and (2) the ablated/clean sink-rate ratio has an interval <= 0.5 "
        "(convention: removing the spike removes at least half of those sinks); preconditions (else not applicable): "
        "the spike (" + spike_present + ") in most samples (CP lower bound >= 0.5) and clean sinks "
        "in the counted layers (mean sink rate, lower bound >= 0.1, convention)";
    analysis::Verdict v(claim, rule, kRandomInitNull);
    v.precondition(analysis::rate_condition("samples with " + spike_present, k_massive, n,
                                            cfg.massive_share_min));
    const double clean_mean = clean.empty() ? 0.0 : analysis::mean_of(clean);
    v.precondition(analysis::bootstrap_condition("clean sink rate of the counted layers", clean_mean,
                                                 clean.empty() ? analysis::Interval{0, 0} : analysis::bootstrap_mean(clean),
                                                 std::int64_t(clean.size()), cfg.sinks_present_min));
    if (clean.empty()) {
        v.condition(analysis::exact_condition("extra drop of the sink rate, spike minus random ablation", 0, 0, resolution));
        return v;
    }
    std::vector<double> extra(clean.size());
    for (std::size_t s = 0; s < clean.size(); ++s) extra[s] = (clean[s] - spike[s]) - (clean[s] - random[s]);
    v.condition(analysis::bootstrap_condition("extra drop of the sink rate, spike minus random ablation (paired)",
                                              analysis::mean_of(extra), analysis::bootstrap_mean(extra),
                                              std::int64_t(extra.size()), resolution));
    const double kept = clean_mean > 0 ? analysis::mean_of(spike) / clean_mean : 0.0;
    v.condition(analysis::bootstrap_condition("sink rate kept after spike ablation (ablated / clean)", kept,
                                              clean_mean > 0 ? analysis::bootstrap_ratio(spike, clean) : analysis::Interval{0, 0},
                                              std::int64_t(clean.size()), cfg.kept_max, Side::at_most));
    v.details() = {{"clean", clean_mean}, {"spike_ablated", analysis::mean_of(spike)}, {"random_ablated", analysis::mean_of(random)},
                   {"drop_spike", clean_mean - analysis::mean_of(spike)}, {"drop_random", clean_mean - analysis::mean_of(random)}};
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"C1-C3: the causal chain spike -> sink, by interventions"};
    CommonOptions opt;
    Config cfg;
    add_common(app, opt);
    app.add_option("--samples", cfg.samples, "text samples (the bootstrap units)")->capture_default_str();
    app.add_option("--seq-len", cfg.seq_len, "tokens per sample")->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    if (opt.smoke) { cfg.samples = 6; cfg.seq_len = 16; }  // 6: the smallest n whose CP bound can pass 0.5; T = 16: uniform attention gives α₀ = H_16/16 ≈ 0.21 < ε
    try {
        Run run("c1_spike_to_sink", "C1-C3: the spike causes the position-0 sink (ablation and patching, with controls)", opt, argc, argv);
        run.config() = {{"samples", cfg.samples}, {"seq_len", cfg.seq_len}, {"eps", cfg.eps}, {"bos", false},
                        {"kept_max", cfg.kept_max}, {"sinks_present_min", cfg.sinks_present_min},
                        {"massive_share_min", cfg.massive_share_min}, {"patch_share_min", cfg.patch_share_min},
                        {"ablation", "mean over non-massive positions, at the sample's massive positions, hook_resid_post"},
                        {"control", "same number of never-massive channels, drawn per sample (seed), same positions"}};
        Inputs in = load_inputs(opt, run);
        const auto& c = in.m.config;
        const std::int64_t d = c.d_model, L = c.n_layers, H = c.n_heads;
        const auto smp = samples(in, opt, cfg.seq_len, cfg.samples, false);
        const std::int64_t N = std::int64_t(smp.size()), T = std::int64_t(smp[0].size());

        run.phase("trace spike (all samples)");
        const SpikeTrace tr = trace_spike(in, opt, smp);
        const std::int64_t S = tr.step_up_layer;
        run.results()["trace"] = trace_json(tr);
        run.results()["step_up_layer"] = S;

        run.phase("clean runs");
        const std::int64_t cstar = std::max<std::int64_t>(tr.channel, 0);
        CleanPass cp;
        cp.massive.assign(N, std::vector<std::vector<analysis::SpikeEntry>>(L));
        cp.large = cp.massive;
        cp.x0c.assign(N, std::vector<double>(L, 0.0));
        std::vector<std::vector<double>> ch_sum(L, std::vector<double>(d, 0.0));
        std::vector<std::int64_t> ch_count(L, 0);
        model::AttentionStats<float> clean_att(L, H);
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

        // Per layer: samples with a massive entry anywhere; samples whose spike coordinate |x_0[c*]| > 100;
        // the mean x_0[c*]. E = the first layer before S whose mean |x_0[c*]| exceeds 100.
        std::vector<std::int64_t> massive_any(L, 0), large0(L, 0);
        std::vector<double> x0c_mean(L, 0.0);
        for (std::int64_t l = 0; l < L; ++l)
            for (std::int64_t s = 0; s < N; ++s) {
                massive_any[l] += !cp.massive[s][l].empty();
                large0[l] += std::abs(cp.x0c[s][l]) > measures::kMassiveAbs;
                x0c_mean[l] += cp.x0c[s][l] / double(N);
            }
        std::int64_t E = -1;
        for (std::int64_t l = 0; l < S && E < 0; ++l)
            if (std::abs(x0c_mean[l]) > measures::kMassiveAbs) E = l;
        const std::int64_t P = E >= 0 ? E : S;  // the layer whose MLP C2 asks to amplify position 0's attention output
        // Channels that are large at some layer of some sample: the random control never draws them.
        std::set<std::int64_t> ever_large;
        for (std::int64_t l = 0; l < L; ++l) for (auto ch : channels_at_layer(cp.large, l)) ever_large.insert(ch);
        std::vector<std::int64_t> never_large;
        for (std::int64_t j = 0; j < d; ++j) if (!ever_large.count(j)) never_large.push_back(j);
        run.results()["spike_channel"] = cstar;
        run.results()["early_layer"] = E;
        run.results()["patch_layer"] = P;
        run.results()["massive_any_samples"] = massive_any;
        run.results()["large_pos0_samples"] = large0;
        run.results()["x0_spike_channel_by_layer"] = x0c_mean;
        std::cerr << "  spike channel " << cstar << ", step-up layer S = " << S << ", early spike layer E = " << E << "\n";

        // One ablation run per sample: the spike channels of `layer` (or as many random never-large ones)
        // set to their mean at the sample's spike positions of that layer, after every block layer … until.
        // Returns per-layer sink rates.
        auto ablation_runs = [&](std::int64_t layer, std::int64_t until, bool use_massive, bool random, const std::string& label) {
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
            for (std::int64_t l = 0; l < L; ++l) out.by_layer[l] = att.sink_rate_per_sample(cfg.eps, l, l);
            return out;
        };
        SinkRun clean;
        clean.by_layer.assign(L, {});
        for (std::int64_t l = 0; l < L; ++l) clean.by_layer[l] = clean_att.sink_rate_per_sample(cfg.eps, l, l);

        run.phase("C1: ablate the spike after the step-up block");
        SinkRun spike_S, random_S;
        const bool c1_possible = S >= 0 && S + 1 < L;
        if (c1_possible) { spike_S = ablation_runs(S, L - 2, true, false, "spike@S"); random_S = ablation_runs(S, L - 2, true, true, "random@S"); }
        run.phase("C3: ablate the early spike");
        SinkRun spike_E, random_E;
        const bool c3_possible = E >= 0 && S >= 0 && E < S;
        if (c3_possible) { spike_E = ablation_runs(E, S - 1, false, false, "spike@E"); random_E = ablation_runs(E, S - 1, false, true, "random@E"); }

        run.phase("C2: patch position 0's attention output");
        // share[s] = fraction of patched positions t whose state after block P carries the spike:
        // sign(x_0[c*]) · x_t[c*] ≥ ½ |x_0[c*]| (x_0 from the clean run).
        std::vector<double> share_p0, share_ctrl, value_p0, value_ctrl;
        std::vector<std::int64_t> ctrl_source;
        const bool c2_possible = P >= 0 && T >= 3;
        if (c2_possible) {
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
                        hits += v >= 0.5 * std::abs(x0);
                        value += std::abs(x0) > 0 ? v / std::abs(x0) : 0.0;
                        ++count;
                    }
                    (variant == 0 ? share_p0 : share_ctrl).push_back(hits / count);
                    (variant == 0 ? value_p0 : value_ctrl).push_back(value / count);
                }
                run.progress(s + 1, N, "patched samples");
            }
        }

        run.phase("verdicts");
        // C1: later layers S+1 … L−1.
        {
            const std::int64_t n_layers = c1_possible ? L - 1 - S : 1;
            std::vector<double> cl, sp, ra;
            if (c1_possible) { cl = clean.range(S + 1, L - 1); sp = spike_S.range(S + 1, L - 1); ra = random_S.range(S + 1, L - 1); }
            const std::int64_t k = S >= 0 ? massive_any[S] : 0;  // samples with a massive entry after block S
            auto v = ablation_verdict("C1", "of the step-up layer S (massive entries at hook_resid_post S) after block S and every later "
                                            "block; sinks counted in layers S+1..L-1",
                                      "a massive entry (Sun et al.) after block S",
                                      k, N, cl, sp, ra, 1.0 / double(H * n_layers), cfg);
            v.details()["layer"] = S;
            v.details()["counted_layers"] = {S + 1, L - 1};
            v.details()["channels"] = S >= 0 ? channels_at_layer(cp.massive, S) : std::vector<std::int64_t>{};
            run.verdict(v);
            run.results()["c1"] = v.details();
        }
        // C3: the sinks between the early spike and the step-up, layers E+1 … S.
        {
            const std::int64_t n_layers = c3_possible ? S - E : 1;
            std::vector<double> cl, sp, ra;
            if (c3_possible) { cl = clean.range(E + 1, S); sp = spike_E.range(E + 1, S); ra = random_E.range(E + 1, S); }
            const std::int64_t k = E >= 0 ? large0[E] : 0;  // samples with |x_0[c*]| > 100 after block E
            auto v = ablation_verdict("C3", "of the early spike (entries |x| > 100 at hook_resid_post E, E = the first layer before the "
                                            "step-up layer S where the spike coordinate exceeds 100) after blocks E..S-1; sinks counted in layers E+1..S "
                                            "(the sink layers before the step-up block)",
                                      "|x_0[c*]| > 100 after block E",
                                      k, N, cl, sp, ra, 1.0 / double(H * n_layers), cfg);
            v.details()["layer"] = E;
            v.details()["counted_layers"] = {E + 1, S};
            v.details()["channels"] = E >= 0 ? channels_at_layer(cp.large, E) : std::vector<std::int64_t>{};
            v.details()["clean_sink_rate_layers_0_to_E"] = E >= 0 ? analysis::mean_of(clean.range(0, E)) : 0.0;
            run.verdict(v);
            run.results()["c3"] = v.details();
        }
        // C2: does the MLP of layer P amplify position 0's attention output wherever it is placed?
        {
            analysis::Verdict v("C2",
                                "copy position 0's attention output at layer P (the early-spike layer E, else the step-up layer S) onto "
                                "every position t >= 1; C2 reproduced iff (1) the share of those positions that carry the spike after block "
                                "P (sign-matched x_t[c*] >= half of the clean |x_0[c*]|, convention) has a bootstrap 95% interval >= 0.5 "
                                "(convention: most positions) and (2) it exceeds, paired per sample, the share when a random other "
                                "position's attention output is copied instead by more than one position, 1/(T-1); precondition (else "
                                "not applicable): |x_0[c*]| > 100 after block P in most samples (CP lower bound >= 0.5)",
                                kRandomInitNull);
            v.precondition(analysis::rate_condition("samples whose spike coordinate |x_0[c*]| > 100 after block P", P >= 0 ? large0[P] : 0, N,
                                                    cfg.massive_share_min));
            if (c2_possible) {
                std::vector<double> diff(share_p0.size());
                for (std::size_t s = 0; s < diff.size(); ++s) diff[s] = share_p0[s] - share_ctrl[s];
                v.condition(analysis::bootstrap_condition("share of positions given the spike by position 0's attention output",
                                                          analysis::mean_of(share_p0), analysis::bootstrap_mean(share_p0), N,
                                                          cfg.patch_share_min));
                v.condition(analysis::bootstrap_condition("share minus the random-position control's share (paired)",
                                                          analysis::mean_of(diff), analysis::bootstrap_mean(diff), N, 1.0 / double(T - 1)));
                v.details() = {{"layer", P}, {"share_p0", analysis::mean_of(share_p0)}, {"share_control", analysis::mean_of(share_ctrl)},
                               {"spike_fraction_p0", analysis::mean_of(value_p0)}, {"spike_fraction_control", analysis::mean_of(value_ctrl)}};
                Csv pc(run.path("patch.csv"), {"sample", "control_source", "x0_spike", "share_p0", "share_control", "spike_fraction_p0",
                                               "spike_fraction_control"});
                for (std::int64_t s = 0; s < N; ++s)
                    pc.row(s, ctrl_source[s], cp.x0c[s][P], share_p0[s], share_ctrl[s], value_p0[s], value_ctrl[s]);
            } else {
                v.condition(analysis::exact_condition("share of positions given the spike by position 0's attention output", 0, 0, cfg.patch_share_min));
                v.details() = {{"layer", P}};
            }
            run.verdict(v);
            run.results()["c2"] = v.details();
        }

        // Figure data: the mean sink rate of every layer under each intervention (NaN-free: 0 when not run).
        Csv sr(run.path("sink_rates.csv"), {"layer", "clean", "spike_at_S", "random_at_S", "spike_at_E", "random_at_E", "x0_spike"});
        json lj = json::array();
        for (std::int64_t l = 0; l < L; ++l) {
            const double a = clean.layer_mean(l), b = c1_possible ? spike_S.layer_mean(l) : 0.0,
                         r = c1_possible ? random_S.layer_mean(l) : 0.0, e = c3_possible ? spike_E.layer_mean(l) : 0.0,
                         f = c3_possible ? random_E.layer_mean(l) : 0.0;
            sr.row(l, a, b, r, e, f, x0c_mean[l]);
            lj.push_back({{"layer", l}, {"clean", a}, {"spike_at_S", b}, {"random_at_S", r}, {"spike_at_E", e}, {"random_at_E", f},
                          {"x0_spike", x0c_mean[l]}});
        }
        run.results()["sink_rate_by_layer"] = lj;
        Csv ps(run.path("per_sample.csv"), {"sample", "c1_clean", "c1_spike", "c1_random", "c3_clean", "c3_spike", "c3_random"});
        for (std::int64_t s = 0; s < N; ++s) {
            auto at = [s](const SinkRun& r, std::int64_t a, std::int64_t b, bool ok) { return ok ? r.range(a, b)[s] : 0.0; };
            ps.row(s, at(clean, S + 1, L - 1, c1_possible), at(spike_S, S + 1, L - 1, c1_possible), at(random_S, S + 1, L - 1, c1_possible),
                   at(clean, E + 1, S, c3_possible), at(spike_E, E + 1, S, c3_possible), at(random_E, E + 1, S, c3_possible));
        }
        run.finish();
    } catch (const Error& e) {
        std::cerr << e.what() << "\n";
        return 2;
    }
    return 0;
}
