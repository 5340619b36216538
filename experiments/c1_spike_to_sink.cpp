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
// The clean pass, the ablations and the patching: c1_spike_to_sink_interventions.hpp.
#include "c1_spike_to_sink_interventions.hpp"

#include <algorithm>
#include <set>

#include <sinkscope/analysis/geometry.hpp>
#include <sinkscope/analysis/intervals.hpp>
#include <sinkscope/model/interventions.hpp>
#include <sinkscope/model/reducers.hpp>

using namespace sinkscope;
using namespace sinkscope::experiments;
using namespace sinkscope::experiments::spike_to_sink;
using analysis::Side;

struct Config {
    std::int64_t samples = 64;
    std::int64_t seq_len = 64;
    double eps = analysis::rule("C1").value("sink_eps");  // Gu et al.'s sink threshold, 0.3 (C1's and C3's)
    // The thresholds (C1/C3: the kept share of the sink rate, the clean sinks, the spike present in most samples;
    // C2: most patched positions turn massive) are each verdict's registered rule's (analysis/rule_table.hpp).
};

namespace {

// A C1/C3 verdict: spike-channel ablation against random-channel ablation, paired per sample.
analysis::Verdict ablation_verdict(const std::string& claim, const std::string& what, const std::string& spike_present,
                                   std::int64_t k_massive, std::int64_t n,
                                   const std::vector<double>& clean, const std::vector<double>& spike,
                                   const std::vector<double>& random, std::int64_t resolution_units, const analysis::Rule& R) {
    // One (layer, head) per sample: extra_drop_min_heads / (H x counted layers).
    const double resolution = R.value("extra_drop_min_heads") / double(resolution_units);
    const std::string rule =
        "mean-ablate the spike channels " + what + ", at the positions that carry them; " + claim +
        " reproduced iff (1) the paired per-sample extra drop of the sink rate (Gu alpha0 > 0.3 per (layer, head)), "
        "spike ablation minus random-channel ablation (same count, same positions, same ablation), has a bootstrap 95% "
        "interval above one (layer, head) per sample and (2) the ablated/clean sink-rate ratio has an interval <= 0.5 "
        "(convention: removing the spike removes at least half of those sinks); preconditions (else not applicable): "
        "the spike (" + spike_present + ") in most samples (CP lower bound >= 0.5) and clean sinks "
        "in the counted layers (mean sink rate, lower bound >= 0.1, convention)";
    analysis::Verdict v(claim, rule, kRandomInitNull);
    v.registered(R);
    v.precondition(analysis::rate_condition("samples with " + spike_present, k_massive, n,
                                            R.value("spike_present_share_min")));
    const double clean_mean = clean.empty() ? 0.0 : analysis::mean_of(clean);
    v.precondition(analysis::bootstrap_condition("clean sink rate of the counted layers", clean_mean,
                                                 clean.empty() ? analysis::Interval{0, 0} : analysis::bootstrap_mean(clean),
                                                 std::int64_t(clean.size()), R.value("clean_sink_rate_min")));
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
                                              std::int64_t(clean.size()), R.value("kept_share_max"), Side::at_most));
    v.details() = {{"clean", clean_mean}, {"spike_ablated", analysis::mean_of(spike)}, {"random_ablated", analysis::mean_of(random)},
                   {"drop_spike", clean_mean - analysis::mean_of(spike)}, {"drop_random", clean_mean - analysis::mean_of(random)}};
    return v;
}

}  // namespace

// This experiment's flags (after the common ones, experiments/common.hpp) and its --smoke sizes.
void add_flags(CLI::App& app, Config& cfg) {
    app.add_option("--samples", cfg.samples, "text samples (the bootstrap units)")->capture_default_str();
    app.add_option("--seq-len", cfg.seq_len, "tokens per sample")->capture_default_str();
}
void smoke_sizes(Config& cfg) { cfg.samples = 6; cfg.seq_len = 16; }  // 6: the smallest n whose CP bound can pass 0.5; T = 16: uniform attention gives α₀ = H_16/16 ≈ 0.21 < ε

int main(int argc, char** argv) {
    Config cfg;
    const Experiment experiment{"c1_spike_to_sink", "C1-C3: the causal chain spike -> sink, by interventions",
                                "C1-C3: the spike causes the position-0 sink (ablation and patching, with controls)"};
    return run_experiment(argc, argv, experiment, cfg, add_flags, smoke_sizes, [&](Run& run, const CommonOptions& opt) {
        run.config() = {{"samples", cfg.samples}, {"seq_len", cfg.seq_len}, {"eps", cfg.eps},
                        {"kept_max", analysis::rule("C1").value("kept_share_max")},
                        {"sinks_present_min", analysis::rule("C1").value("clean_sink_rate_min")},
                        {"massive_share_min", analysis::rule("C1").value("spike_present_share_min")},
                        {"patch_share_min", analysis::rule("C2").value("patched_share_min")},
                        {"ablation", "mean over non-massive positions, at the sample's massive positions, hook_resid_post"},
                        {"control", "same number of never-massive channels, drawn per sample (seed), same positions"}};
        Inputs in = load_inputs(opt, run);
        const auto& c = in.m.config;
        const std::int64_t d = c.d_model, L = c.n_layers, H = c.n_heads;
        run.config()["bos"] = in.bos.use;  // the resolved --bos (why: meta.json "bos")
        const auto smp = samples(in, opt, cfg.seq_len, cfg.samples, in.bos.use);
        const std::int64_t N = std::int64_t(smp.size()), T = std::int64_t(smp[0].size());

        run.phase("trace spike (all samples)");
        const SpikeTrace tr = trace_spike(in, opt, smp, analysis::rule("C1").value("step_tau"));
        const std::int64_t S = tr.step_up_layer;
        run.results()["trace"] = trace_json(tr);
        run.results()["step_up_layer"] = S;

        run.phase("clean runs");
        const std::int64_t cstar = std::max<std::int64_t>(tr.channel, 0);
        model::AttentionStats<float> clean_att(L, H);
        const Setup setup{run, opt, in, smp};
        const CleanPass cp = clean_pass(setup, cstar, clean_att);

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

        // The C1 / C3 ablations with this run's samples, channel means and controls (per-layer sink rates).
        auto ablation_runs = [&](std::int64_t layer, std::int64_t until, bool use_massive, bool random, const std::string& label) {
            return spike_to_sink::ablation_runs(setup, cp, never_large, cfg.eps, layer, until, use_massive, random, label);
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
        const bool c2_possible = P >= 0 && T >= 3;
        const Patch patch = c2_possible ? patch_runs(setup, cp, P, cstar, analysis::rule("C2").value("spike_fraction_of_clean")) : Patch{};
        const auto& [share_p0, share_ctrl, value_p0, value_ctrl, ctrl_source] = patch;

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
                                      k, N, cl, sp, ra, H * n_layers, analysis::rule("C1"));
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
                                      k, N, cl, sp, ra, H * n_layers, analysis::rule("C3"));
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
            const analysis::Rule& R = analysis::rule("C2");
            v.registered(R);
            v.precondition(analysis::rate_condition("samples whose spike coordinate |x_0[c*]| > 100 after block P", P >= 0 ? large0[P] : 0, N,
                                                    R.value("spike_present_share_min")));
            if (c2_possible) {
                std::vector<double> diff(share_p0.size());
                for (std::size_t s = 0; s < diff.size(); ++s) diff[s] = share_p0[s] - share_ctrl[s];
                v.condition(analysis::bootstrap_condition("share of positions given the spike by position 0's attention output",
                                                          analysis::mean_of(share_p0), analysis::bootstrap_mean(share_p0), N,
                                                          R.value("patched_share_min")));
                v.condition(analysis::bootstrap_condition("share minus the random-position control's share (paired)",
                                                          analysis::mean_of(diff), analysis::bootstrap_mean(diff), N,
                                                          R.value("control_excess_min_positions") / double(T - 1)));
                v.details() = {{"layer", P}, {"share_p0", analysis::mean_of(share_p0)}, {"share_control", analysis::mean_of(share_ctrl)},
                               {"spike_fraction_p0", analysis::mean_of(value_p0)}, {"spike_fraction_control", analysis::mean_of(value_ctrl)}};
                Csv pc(run.path("patch.csv"), {"sample", "control_source", "x0_spike", "share_p0", "share_control", "spike_fraction_p0",
                                               "spike_fraction_control"});
                for (std::int64_t s = 0; s < N; ++s)
                    pc.row(s, ctrl_source[s], cp.x0c[s][P], share_p0[s], share_ctrl[s], value_p0[s], value_ctrl[s]);
            } else {
                v.condition(analysis::exact_condition("share of positions given the spike by position 0's attention output", 0, 0,
                                                      R.value("patched_share_min")));
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
    });
}
