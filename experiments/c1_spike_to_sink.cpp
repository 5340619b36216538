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
//   C1 (a) dose the spike channels of layer S at hook_resid_post S and after every later block l:
//          x_l ← μ_l + f (x_l^clean − μ_l) (μ_l = that layer's channel mean over the positions without a large
//          entry, all samples; x^clean the clean run's value), so that no later block can rebuild the spike and
//          the dose does not compound, at doses f = 0 (mean-ablation), 0.1, 0.3 (1 = clean), and count sinks in
//          layers S+1 … L−1. Control: the same number of random channels that are never large, same positions,
//          dose 0 (drawn per sample, seeded).
//   C3 (c) the sinks before the step-up (layers E+1 … S): the same doses of the early spike's channels after
//          blocks E … S−1, sinks counted in layers E+1 … S, with the same random-channel control.
//   C2 (b) in blocks 0 … P (P = E, where position 0 first becomes large; S if there is no early spike), force
//          every head of every query t ≥ 1 to attend only to itself (model/attention_surgery.hpp), so that its
//          attention output is unmixed as position 0's is, and ask whether layer P's MLP then gives those
//          positions the spike: after block P, s·x_t[c*] ≥ ½ |x_0[c*]| of the clean run (s = sign of x_0[c*];
//          half the spike, convention). Control: the same rows forced to uniform attention over keys 0 … t (a
//          forced pattern that mixes). Reported beside it: position 0's attention output at layer P copied onto
//          every t ≥ 1 (and a random other position's), the rule before 2026-12-07.
// Verdicts (registered rules, analysis/rule_table.hpp; experiments/README.md):
//   C1 / C3 reproduced iff (1) at dose 0 the paired per-sample extra drop of the sink rate, spike ablation
//     minus random-channel ablation, has a bootstrap interval above one (layer, head) per sample,
//     1 / (H · #layers), and (2) the sink rate follows the dose: from each dose to the next larger one the
//     paired change has an interval above −1 / (H · #layers) (no larger dose removes more sinks than a smaller
//     one). The kept share ablated / clean at each dose and every counted layer's own extra drop are reported.
//     Preconditions (else not applicable): the spike exists at the ablated layer in most samples (C1: a
//     massive entry; C3: |x_0[c*]| > 100; Clopper–Pearson lower bound ≥ 0.5) and the counted layers have
//     sinks (clean sink rate, bootstrap lower bound ≥ 0.1: at least one head in ten, convention).
//   C2 reproduced iff (1) the share of positions that get the spike under self-only attention has a bootstrap
//     interval ≥ 0.5 (convention: most positions) and (2) it exceeds the uniform-attention control's share by
//     more than one position, 1 / (T − 1) (paired per sample). Precondition: |x_0[c*]| > 100 at layer P in most
//     samples (CP lower bound ≥ 0.5).
// Command: build/experiments/c1_spike_to_sink [--samples 64] [--seq-len 64] [--out out/c1_spike_to_sink]
// Writes: sink_rates.csv (layer; mean sink rate clean / spike@S per dose / random@S / spike@E per dose /
//         random@E; mean x_0[c*] of the clean run), per_sample.csv (per sample: the rates each verdict reads),
//         patch.csv (per sample: C2's shares and spike fractions of the surgery and the copy runs), meta.json (each
//         C1 / C3 verdict's details: by_layer, the dose-response of every counted layer).
// The clean pass, the ablations and the patching: c1_spike_to_sink_interventions.hpp.
#include "c1_spike_to_sink_interventions.hpp"

#include <algorithm>
#include <sstream>

#include <sinkscope/analysis/geometry.hpp>
#include <sinkscope/analysis/intervals.hpp>
#include <sinkscope/model/interventions.hpp>
#include <sinkscope/model/reducers.hpp>

using namespace sinkscope;
using namespace sinkscope::experiments;
using namespace sinkscope::experiments::spike_to_sink;

struct Config {
    std::int64_t samples = 64;
    std::int64_t seq_len = 64;
    double eps = analysis::rule("C1").value("sink_eps");  // Gu et al.'s sink threshold, 0.3 (C1's and C3's)
    // The doses and thresholds are each verdict's registered rule's (analysis/rule_table.hpp).
};

namespace {

// A C1/C3 verdict: the spike ablation's dose–response against the random-channel ablation, paired per sample.
// Sinks counted in layers first..last; `runs` null when the ablation could not run (no rates: the clean-sink
// precondition fails). The doses are runs->doses (ascending, below 1; dose 1 is the clean run).
analysis::Verdict ablation_verdict(const std::string& claim, const std::string& what, const std::string& spike_present,
                                   std::int64_t k_massive, std::int64_t n, const SinkRun& clean_run, const DoseRuns* runs,
                                   std::int64_t first, std::int64_t last, std::int64_t H, const analysis::Rule& R) {
    std::vector<double> clean, random;
    std::vector<std::vector<double>> spike;  // per dose: the counted layers' sink rate per sample
    const std::vector<double> doses = runs ? runs->doses : std::vector<double>{};
    if (runs) {
        clean = clean_run.range(first, last), random = runs->random.range(first, last);
        for (const auto& r : runs->spike) spike.push_back(r.range(first, last));
    }
    const std::int64_t resolution_units = H * (runs ? last - first + 1 : 1);
    // One (layer, head) per sample: extra_drop_min_heads / (H x counted layers); the dose steps' bound likewise.
    const double resolution = R.value("extra_drop_min_heads") / double(resolution_units);
    const double rise_min = R.value("dose_rise_min_heads") / double(resolution_units);
    const std::string rule =
        "dose the spike channels " + what + ", x <- mu + f (x_clean - mu) (mu: the channel's mean over ordinary positions), at "
        "the positions that carry them, at doses "
        "f = 0, " + dose_text(R.value("dose_low")) + ", " + dose_text(R.value("dose_mid")) + " (f = 1 is the clean run); " + claim +
        " reproduced iff (1) at dose 0 the paired per-sample extra drop of the sink rate (Gu alpha0 > 0.3 per (layer, head)), "
        "spike ablation minus random-channel ablation (same count, same positions, same ablation), has a bootstrap 95% "
        "interval above one (layer, head) per sample and (2) the sink rate follows the dose: from each dose to the next larger "
        "one the paired change of the sink rate has an interval above minus one (layer, head) per sample (no larger dose "
        "removes more sinks than a smaller one); the kept share and every counted layer's own result are reported, not "
        "deciding; preconditions (else not applicable): the spike (" + spike_present + ") in most samples (CP lower bound "
        ">= 0.5) and clean sinks in the counted layers (mean sink rate, lower bound >= 0.1, convention)";
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
    auto paired = [](const std::vector<double>& a, const std::vector<double>& b) {  // a − b per sample
        std::vector<double> d(a.size());
        for (std::size_t s = 0; s < a.size(); ++s) d[s] = a[s] - b[s];
        return d;
    };
    const std::vector<double> extra = paired(random, spike[0]);  // (clean − spike) − (clean − random)
    v.condition(analysis::bootstrap_condition("extra drop of the sink rate, spike minus random ablation (paired)",
                                              analysis::mean_of(extra), analysis::bootstrap_mean(extra),
                                              std::int64_t(extra.size()), resolution));
    json kept = json::array();
    for (std::size_t k = 0; k < doses.size(); ++k) {
        const bool last = k + 1 == doses.size();
        const std::vector<double> rise = paired(last ? clean : spike[k + 1], spike[k]);
        v.condition(analysis::bootstrap_condition("sink-rate change from dose " + dose_text(doses[k]) + " to " +
                                                      (last ? std::string("1") : dose_text(doses[k + 1])) + " (paired)",
                                                  analysis::mean_of(rise), analysis::bootstrap_mean(rise),
                                                  std::int64_t(rise.size()), rise_min));
        kept.push_back({{"dose", doses[k]}, {"kept_share", clean_mean > 0 ? analysis::mean_of(spike[k]) / clean_mean : 0.0}});
    }
    v.details() = {{"clean", clean_mean}, {"spike_ablated", analysis::mean_of(spike[0])}, {"random_ablated", analysis::mean_of(random)},
                   {"drop_spike", clean_mean - analysis::mean_of(spike[0])}, {"drop_random", clean_mean - analysis::mean_of(random)},
                   {"kept_share_by_dose", kept}};
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
        run.config() = {{"samples", cfg.samples}, {"seq_len", cfg.seq_len}, {"eps", cfg.eps},  // thresholds: the rules' (meta.json rule_set)
                        {"ablation", "x <- mu + dose (x_clean - mu), mu = the mean over non-massive positions, at the sample's "
                                     "massive positions, hook_resid_post"},
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
        const std::vector<std::int64_t> never_large = never_large_channels(cp, d);  // the random control draws only these
        for (auto [key, value] : {std::pair<const char*, json>{"spike_channel", cstar}, {"early_layer", E}, {"patch_layer", P},
                                  {"massive_any_samples", massive_any}, {"large_pos0_samples", large0}, {"x0_spike_channel_by_layer", x0c_mean}})
            run.results()[key] = value;
        std::cerr << "  spike channel " << cstar << ", step-up layer S = " << S << ", early spike layer E = " << E << "\n";

        // The C1 / C3 ablations with this run's samples, channel means and controls (per-layer sink rates), at the
        // registered doses below 1 (C1's and C3's are the same numbers).
        const std::vector<double> doses{0.0, analysis::rule("C1").value("dose_low"), analysis::rule("C1").value("dose_mid")};
        run.config()["doses"] = doses;
        auto dose_runs = [&](std::int64_t layer, std::int64_t until, bool use_massive, const std::string& where) {
            return spike_to_sink::dose_runs(setup, cp, never_large, cfg.eps, layer, until, use_massive, doses, where);
        };
        SinkRun clean;
        clean.by_layer.assign(L, {});
        for (std::int64_t l = 0; l < L; ++l) clean.by_layer[l] = clean_att.sink_rate_per_sample(cfg.eps, l, l);

        run.phase("C1: ablate the spike after the step-up block");
        DoseRuns c1r, c3r;
        const bool c1_possible = S >= 0 && S + 1 < L;
        if (c1_possible) c1r = dose_runs(S, L - 2, true, "S");
        run.phase("C3: ablate the early spike");
        const bool c3_possible = E >= 0 && S >= 0 && E < S;
        if (c3_possible) c3r = dose_runs(E, S - 1, false, "E");

        run.phase("C2: self-only attention surgery in blocks 0..P (and the copy of position 0's attention output)");
        const bool c2_possible = P >= 0 && T >= 3;
        const Patch patch = c2_possible ? patch_runs(setup, cp, P, cstar, analysis::rule("C2").value("spike_fraction_of_clean")) : Patch{};

        run.phase("verdicts");
        // C1: later layers S+1 … L−1.
        {
            const std::int64_t k = S >= 0 ? massive_any[S] : 0;  // samples with a massive entry after block S
            auto v = ablation_verdict("C1", "of the step-up layer S (massive entries at hook_resid_post S) after block S and every later "
                                            "block; sinks counted in layers S+1..L-1",
                                      "a massive entry (Sun et al.) after block S",
                                      k, N, clean, c1_possible ? &c1r : nullptr, S + 1, L - 1, H, analysis::rule("C1"));
            v.details()["layer"] = S;
            v.details()["counted_layers"] = {S + 1, L - 1};
            v.details()["channels"] = S >= 0 ? channels_at_layer(cp.massive, S) : std::vector<std::int64_t>{};
            v.details()["by_layer"] = c1_possible ? per_layer_dose_response(clean, c1r, S + 1, L - 1, H) : json::array();
            run.verdict(v);
            run.results()["c1"] = v.details();
        }
        // C3: the sinks between the early spike and the step-up, layers E+1 … S.
        {
            const std::int64_t k = E >= 0 ? large0[E] : 0;  // samples with |x_0[c*]| > 100 after block E
            auto v = ablation_verdict("C3", "of the early spike (entries |x| > 100 at hook_resid_post E, E = the first layer before the "
                                            "step-up layer S where the spike coordinate exceeds 100) after blocks E..S-1; sinks counted in layers E+1..S "
                                            "(the sink layers before the step-up block)",
                                      "|x_0[c*]| > 100 after block E",
                                      k, N, clean, c3_possible ? &c3r : nullptr, E + 1, S, H, analysis::rule("C3"));
            v.details()["layer"] = E;
            v.details()["counted_layers"] = {E + 1, S};
            v.details()["channels"] = E >= 0 ? channels_at_layer(cp.large, E) : std::vector<std::int64_t>{};
            v.details()["by_layer"] = c3_possible ? per_layer_dose_response(clean, c3r, E + 1, S, H) : json::array();
            v.details()["clean_sink_rate_layers_0_to_E"] = E >= 0 ? analysis::mean_of(clean.range(0, E)) : 0.0;
            run.verdict(v);
            run.results()["c3"] = v.details();
        }
        // C2: does every position get the spike when its attention is unmixed, as position 0's is, up to block P?
        {
            analysis::Verdict v("C2",
                                "force every head of every query t >= 1 to attend only to itself (z_t = v_t, position 0's attention "
                                "under the causal mask) in blocks 0..P (P = the early-spike layer E, else the step-up layer S); C2 "
                                "reproduced iff (1) the share of those positions that carry the spike after block P (sign-matched "
                                "x_t[c*] >= half of the clean |x_0[c*]|, convention) has a bootstrap 95% interval >= 0.5 (convention: "
                                "most positions) and (2) it exceeds, paired per sample, the share under the same surgery with uniform "
                                "attention over keys 0..t (a forced pattern that mixes) by more than one position, 1/(T-1); "
                                "precondition (else not applicable): |x_0[c*]| > 100 after block P in most samples (CP lower bound >= "
                                "0.5). Reported, not deciding: the same shares when position 0's attention output at layer P is "
                                "copied onto every t >= 1, and a random other position's",
                                kRandomInitNull);
            const analysis::Rule& R = analysis::rule("C2");
            v.registered(R);
            v.precondition(analysis::rate_condition("samples whose spike coordinate |x_0[c*]| > 100 after block P", P >= 0 ? large0[P] : 0, N,
                                                    R.value("spike_present_share_min")));
            if (c2_possible) {
                std::vector<double> diff(N);
                for (std::int64_t s = 0; s < N; ++s) diff[s] = patch.share_self[s] - patch.share_uniform[s];
                v.condition(analysis::bootstrap_condition("share of positions given the spike by self-only attention in blocks 0..P",
                                                          analysis::mean_of(patch.share_self), analysis::bootstrap_mean(patch.share_self),
                                                          N, R.value("patched_share_min")));
                v.condition(analysis::bootstrap_condition("share minus the uniform-attention surgery's share (paired)",
                                                          analysis::mean_of(diff), analysis::bootstrap_mean(diff), N,
                                                          R.value("control_excess_min_positions") / double(T - 1)));
                json d{{"layer", P}};
                for (auto [key, x] : {std::pair<const char*, const std::vector<double>*>{"share_self_surgery", &patch.share_self},
                                      {"share_uniform_surgery", &patch.share_uniform}, {"spike_fraction_self_surgery", &patch.value_self},
                                      {"spike_fraction_uniform_surgery", &patch.value_uniform}, {"share_copy_p0", &patch.share_p0},
                                      {"share_copy_control", &patch.share_ctrl}, {"spike_fraction_copy_p0", &patch.value_p0},
                                      {"spike_fraction_copy_control", &patch.value_ctrl}})
                    d[key] = analysis::mean_of(*x);
                v.details() = d;
                write_patch_csv(run, patch, cp, P);
            } else {
                v.condition(analysis::exact_condition("share of positions given the spike by self-only attention in blocks 0..P", 0, 0,
                                                      R.value("patched_share_min")));
                v.details() = {{"layer", P}};
            }
            run.verdict(v);
            run.results()["c2"] = v.details();
        }

        // Figure data: sink_rates.csv, per_sample.csv and results' sink_rate_by_layer (0 where a run was not possible).
        write_sink_rates(run, clean, doses, c1_possible ? &c1r : nullptr, c3_possible ? &c3r : nullptr, S, E, x0c_mean);
        run.finish();
    });
}
