// B1 — massive activations: life cycle, step-up / step-down sub-blocks, spike channels and tokens (Paper B).
// Claim: spikes appear only in intermediate layers, in a few channels with nearly fixed ratios, on few
// tokens (position 0 and delimiters); one or two early step-up sub-blocks inject them, late step-down
// sub-blocks cancel them; sub-blocks in between add 2–3 orders of magnitude less (rise–plateau–fall).
// Sub-blocks are Paper B's 2L (1-based; odd = attention = hook_attn_out, even = FFN = hook_mlp_out;
// H_i = resid_mid / resid_post after them, H_0 = resid_pre of block 0). Step rule: analysis/spikes.hpp.
// Verdict (rule in the Verdict below): Paper B's windows (analysis/spikes.hpp: step-ups at i ≤ 0.20·2L,
// a step-down at i ≥ 0.92·2L) on the mean trajectory over all samples; the in-between ratio per sample
// (bootstrap); consensus spike channels over all samples and their ratio spread (bootstrap over samples).
// Command: build/experiments/b1_spike_lifecycle [--samples 64] [--out out/b1_spike_lifecycle]
// Writes: sub_blocks.csv (per H_i: top-3 |x| with channel/position, median |x|, massive?),
//         trajectory.npy [samples × (2L+1)] (x_i at (t*, c*)), steps.csv (Table 1 row),
//         spike_tokens.csv (position, token, max |x|), spike_channels.csv (consensus channels, ratios to c*), meta.json.
#include "common.hpp"

#include <map>

using namespace sinkscope;
using namespace sinkscope::experiments;

struct Config {
    std::int64_t samples = 64;      // natural-text samples, no BOS
    std::int64_t seq_len = 64;      // T
    // samples used to locate the spike and classify the steps; the step rule's threshold (fraction of the peak):
    // both registered in rule B1 (analysis/rule_table.hpp)
    std::int64_t trace_samples = std::int64_t(analysis::rule("B1").value("trace_samples"));
    double tau = analysis::rule("B1").value("step_tau");
};

// This experiment's flags (after the common ones, experiments/common.hpp) and its --smoke sizes.
void add_flags(CLI::App& app, Config& cfg) {
    app.add_option("--samples", cfg.samples, "number of samples")->capture_default_str();
    app.add_option("--seq-len", cfg.seq_len, "tokens per sample")->capture_default_str();
    app.add_option("--tau", cfg.tau, "step threshold as a fraction of the peak")->capture_default_str();
}
void smoke_sizes(Config& cfg) { cfg.samples = 6; cfg.seq_len = 16; cfg.trace_samples = 2; }  // 6: a 6/6 share clears 0.5 (Clopper–Pearson)

int main(int argc, char** argv) {
    Config cfg;
    const Experiment experiment{"b1_spike_lifecycle", "B1: spike life cycle over Paper B's sub-blocks",
                                "B1: rise-plateau-fall of massive activations; step-up/step-down sub-blocks"};
    return run_experiment(argc, argv, experiment, cfg, add_flags, smoke_sizes, [&](Run& run, const CommonOptions& opt) {
        run.config() = {{"samples", cfg.samples}, {"seq_len", cfg.seq_len}, {"trace_samples", cfg.trace_samples},
                        {"tau", cfg.tau},
                        {"sub_block_map", "i=2l+1: blocks.l.hook_attn_out (H_i=resid_mid); i=2l+2: blocks.l.hook_mlp_out (H_i=resid_post)"}};
        Inputs in = load_inputs(opt, run);
        const auto& c = in.m.config;
        const std::int64_t d = c.d_model, nsub = 2 * c.n_layers;
        run.config()["bos"] = in.bos.use;  // the resolved --bos (why: meta.json "bos")
        const auto smp = samples(in, opt, cfg.seq_len, cfg.samples, in.bos.use);

        run.phase("trace spike");
        const std::vector<Tokens> head(smp.begin(), smp.begin() + std::min<std::size_t>(smp.size(), cfg.trace_samples));
        const SpikeTrace tr = trace_spike(in, opt, head, cfg.tau);
        run.results()["trace"] = trace_json(tr);
        std::cerr << "  spike channel " << tr.channel << " at position " << tr.position << ", peak " << tr.steps.peak
                  << " at sub-block " << tr.peak_sub_block << "\n";

        // Per state H_i: top-3 over all samples, per-sample medians; per sample the trajectory at (t*, c*),
        // the channels and rows of the spike tokens at the plateau (the state holding the traced peak).
        struct Top { double abs = 0, value = 0; std::int64_t channel = -1, position = -1, sample = -1; };
        std::vector<std::vector<Top>> top(nsub + 1);
        std::vector<std::vector<double>> medians(nsub + 1);
        std::vector<std::int64_t> massive_samples(nsub + 1, 0);
        std::vector<float> traj;
        std::vector<std::vector<double>> trajectories;     // per sample reaching t*: x_0 … x_{2L}
        std::vector<int> sample_has_spike(smp.size(), 0);  // any massive entry in any state
        std::map<std::string, std::int64_t> token_count;
        std::int64_t spike_tok = 0, spike_tok_pos0 = 0, tokens_seen = 0;
        const std::int64_t plateau = tr.peak_sub_block;
        Csv toks(run.path("spike_tokens.csv"), {"sample", "position", "token_id", "token", "max_abs", "channel"});
        std::vector<std::vector<std::int64_t>> plateau_channels(smp.size());  // per sample: massive channels at the plateau
        struct SpikeRow { std::size_t sample; std::vector<float> row; };
        std::vector<SpikeRow> spike_rows;                                       // plateau rows of every spike token

        run.phase("sub-block statistics");
        const auto state_names = analysis::residual_state_hooks(c);
        model::HookSet<float> hooks;
        model::ActivationCache<float> cache;
        cache.attach(hooks, state_names);
        model::EachSequence<float> each;
        each.after = [&](std::int64_t si, const model::Mat<float>&) {
            const auto s = std::size_t(si);
            std::vector<std::vector<float>> st;  // H_0 … H_{2L} of this sample
            for (const auto& name : state_names) st.push_back(cache[name].data);
            const std::int64_t n = std::int64_t(smp[s].size());
            std::vector<double> x;
            for (std::int64_t i = 0; i <= nsub; ++i) {
                const auto& h = st[i];
                const auto hv = model::view(h, {n, d});  // [pos, d_model]
                medians[i].push_back(measures::median_abs(h.data(), std::int64_t(h.size())));
                if (!analysis::massive_entries(h.data(), n, d).empty()) { massive_samples[i]++; sample_has_spike[s] = 1; }
                for (std::int64_t j = 0; j < std::int64_t(h.size()); ++j) {
                    const double a = std::abs(h[j]);
                    auto& T3 = top[i];
                    if (T3.size() < 3 || a > T3.back().abs) {
                        Top t{a, h[j], j % d, j / d, std::int64_t(s)};
                        T3.insert(std::upper_bound(T3.begin(), T3.end(), t, [](const Top& x, const Top& y) { return x.abs > y.abs; }), t);
                        if (T3.size() > 3) T3.pop_back();
                    }
                }
                if (tr.channel >= 0 && tr.position < n) { traj.push_back(hv(tr.position, tr.channel)); x.push_back(hv(tr.position, tr.channel)); }
            }
            if (x.size() == std::size_t(nsub + 1)) trajectories.push_back(x);
            // Spike tokens at the plateau: positions with a massive entry there (Sun et al., this sample's median).
            if (plateau >= 0) {
                const auto& h = st[plateau];
                const auto hv = model::view(h, {n, d});
                const auto e = analysis::massive_entries(h.data(), n, d);
                plateau_channels[s] = analysis::spike_channels(e);
                tokens_seen += n;
                for (auto p : analysis::spike_positions(e)) {
                    double best = 0; std::int64_t ch = -1;
                    for (std::int64_t k = 0; k < d; ++k) if (std::abs(hv(p, k)) > best) { best = std::abs(hv(p, k)); ch = k; }
                    const std::string tok = decode_token(in, smp[s][p]);
                    toks.row(s, p, smp[s][p], json(tok).dump(), best, ch);
                    ++spike_tok;
                    if (p == 0) ++spike_tok_pos0; else token_count[tok]++;
                    spike_rows.push_back({s, std::vector<float>(h.begin() + p * d, h.begin() + (p + 1) * d)});
                }
            }
        };
        measure_samples(run, opt, c, in.m.weights, smp, hooks, each, no_logits());

        Csv sub(run.path("sub_blocks.csv"), {"index", "layer", "kind", "top1", "top1_channel", "top1_position", "top2", "top3",
                                              "median", "massive_share"});
        for (std::int64_t i = 0; i <= nsub; ++i) {
            const double med = measures::upper_median_of(medians[i]);
            const auto& T3 = top[i];
            const std::string kind = i == 0 ? "embed" : (analysis::sub_block(i, c.n_layers).attention ? "attn" : "ffn");
            const std::int64_t layer = i == 0 ? -1 : analysis::sub_block(i, c.n_layers).layer;
            sub.row(i, layer, kind, T3[0].abs, T3[0].channel, T3[0].position, T3.size() > 1 ? T3[1].abs : 0,
                    T3.size() > 2 ? T3[2].abs : 0, med, double(massive_samples[i]) / double(smp.size()));
        }
        const std::int64_t first_massive = std::find_if(massive_samples.begin(), massive_samples.end(), [](auto v) { return v > 0; }) - massive_samples.begin();
        std::int64_t last_massive = -1;
        for (std::int64_t i = 0; i <= nsub; ++i) if (massive_samples[i] > 0) last_massive = i;
        run.results()["massive_sub_blocks"] = {{"first", first_massive <= nsub ? first_massive : -1}, {"last", last_massive},
                                               {"of", nsub}};
        if (!traj.empty()) run.npy("trajectory.npy", traj, {trajectories.size(), std::size_t(nsub + 1)});

        // Steps of the mean trajectory over every sample; the in-between ratio per sample for those steps.
        std::vector<double> mean_traj(nsub + 1, 0.0);
        for (const auto& x : trajectories) for (std::int64_t i = 0; i <= nsub; ++i) mean_traj[i] += x[i] / double(trajectories.size());
        const auto steps_all = trajectories.empty() ? analysis::StepClassification{} : analysis::classify_steps(mean_traj, cfg.tau);
        std::vector<double> between;
        for (const auto& x : trajectories) between.push_back(analysis::in_between_ratio(x, steps_all.step_up, steps_all.step_down));
        run.results()["steps"] = {{"step_up", steps_all.step_up}, {"step_down", steps_all.step_down},
                                  {"peak", steps_all.peak}, {"peak_sub_block", steps_all.peak_index},
                                  {"in_between_ratio_mean_trajectory", steps_all.in_between_ratio},
                                  {"in_between_ratio_per_sample", between}, {"samples", trajectories.size()}, {"tau", cfg.tau},
                                  {"step_up_window", analysis::rule("B1").value("step_up_window_max")},
                                  {"step_down_window", analysis::rule("B1").value("step_down_window_min")}};

        // Table 1 row.
        Csv steps(run.path("steps.csv"), {"model", "sub_blocks", "step_up", "step_down", "in_between_ratio"});
        auto join = [](const std::vector<std::int64_t>& v) { std::string s; for (auto x : v) s += (s.empty() ? "" : " ") + std::to_string(x); return s; };
        steps.row(fs::path(opt.model).filename().string(), nsub, join(steps_all.step_up), join(steps_all.step_down), steps_all.in_between_ratio);

        // Spike channels from every sample: consensus channels (massive in ≥ half the samples that spike at
        // the plateau), the reference channel first (c* when it is one of them); ratios to it on every spike token.
        auto consensus = analysis::consensus_channels(plateau_channels, analysis::rule("B1").value("consensus_share"));
        std::int64_t spike_samples = 0, cstar_samples = 0;
        for (const auto& ch : plateau_channels) {
            spike_samples += !ch.empty();
            cstar_samples += std::find(ch.begin(), ch.end(), tr.channel) != ch.end();
        }
        std::stable_partition(consensus.begin(), consensus.end(), [&](const analysis::ChannelCount& x) { return x.channel == tr.channel; });
        auto channel_values = [&](const std::vector<std::size_t>& sample_ids) {
            std::vector<std::vector<double>> vals;
            for (auto s : sample_ids)
                for (const auto& r : spike_rows)
                    if (r.sample == s) {
                        std::vector<double> v;
                        for (const auto& k : consensus) v.push_back(r.row[k.channel]);
                        vals.push_back(v);
                    }
            return vals;
        };
        std::vector<std::size_t> all_ids;
        for (std::size_t s = 0; s < smp.size(); ++s) if (!plateau_channels[s].empty()) all_ids.push_back(s);
        const auto vals = channel_values(all_ids);
        Csv chs(run.path("spike_channels.csv"), {"channel", "samples", "share", "mean_ratio", "std_ratio", "spread", "tokens"});
        json chj = json::array();
        for (std::size_t k = 0; k < consensus.size(); ++k) {
            double s1 = 0, s2 = 0; std::int64_t n = 0;
            for (const auto& v : vals) { if (v[0] == 0) continue; const double r = v[k] / v[0]; s1 += r; s2 += r * r; ++n; }
            const double mean = n ? s1 / n : 0, sd = n ? std::sqrt(std::max(0.0, s2 / n - mean * mean)) : 0;
            const double spread = analysis::ratio_spread(vals, k);
            const double share = spike_samples ? double(consensus[k].samples) / double(spike_samples) : 0.0;
            chs.row(consensus[k].channel, consensus[k].samples, share, mean, sd, spread, n);
            chj.push_back({{"channel", consensus[k].channel}, {"samples", consensus[k].samples}, {"share", share},
                           {"mean_ratio", mean}, {"std_ratio", sd}, {"spread", std::isfinite(spread) ? json(spread) : json(nullptr)}});
        }
        run.results()["spike_channels"] = chj;
        json tokj = json::array();
        std::vector<std::pair<std::int64_t, std::string>> by_count;
        for (const auto& [t, n] : token_count) by_count.push_back({n, t});
        std::sort(by_count.rbegin(), by_count.rend());
        for (std::size_t k = 0; k < std::min<std::size_t>(by_count.size(), 12); ++k)
            tokj.push_back({{"token", by_count[k].second}, {"count", by_count[k].first}});
        run.results()["spike_tokens"] = {{"total", spike_tok}, {"at_position_0", spike_tok_pos0}, {"tokens_seen", tokens_seen},
                                         {"samples", smp.size()}, {"other_positions_top", tokj}};

        // Verdict.
        using namespace sinkscope::analysis;
        const std::int64_t N = std::int64_t(smp.size());
        std::int64_t with_spike = 0;
        for (int h : sample_has_spike) with_spike += h;
        const double nan = std::numeric_limits<double>::quiet_NaN();
        const double last_up = steps_all.step_up.empty() ? nan : double(steps_all.step_up.back()) / double(nsub);
        const double last_down = steps_all.step_down.empty() ? nan : double(steps_all.step_down.back()) / double(nsub);
        Verdict v("B1",
                  "Precondition: massive activations (Sun et al.: |x| > 100 and >= 1000 x the state's median |x|) in some residual "
                  "state of a majority of samples (Clopper-Pearson lower bound >= 0.5; else not applicable). On the mean trajectory "
                  "over all samples of the traced spike coordinate (t*, c*), steps by the tau = 0.2 rule (analysis/spikes.hpp): "
                  "every step-up at sub-block i <= 0.20 * 2L (Paper B's step-ups lie at 6.3-19.4% of 2L: 4/64, 4/64, 8,10/56, 14/72) "
                  "and at least one step-down at i >= 0.92 * 2L (paper: 96.4-100%: 62/64, 64/64, 54,55/56, 70,72/72; the last 8%); "
                  "1 or 2 step-up sub-blocks (paper: one or two); in-between ratio (max |step| between the last step-up and the "
                  "first step-down / max step-up), median over samples, bootstrap upper bound <= 0.05 (convention; paper: "
                  "1e-2 to 1e-3); spike channels from all samples: the traced channel c* is massive at the plateau in a "
                  "majority of spiking samples (Clopper-Pearson lower bound >= 0.5), at most 4 consensus channels (massive in >= "
                  "half of them; paper: 'a few'), and each consensus channel's ratio to c* varies by std/|mean| <= 0.05 across "
                  "spike tokens (largest over channels; bootstrap over samples, upper bound; convention for 'nearly fixed').",
                  kRandomInitNull);
        const Rule& R = rule("B1");
        v.registered(R);
        v.precondition(rate_condition("share of samples with a massive activation in some residual state", with_spike, N,
                                      R.value("spike_present_share_min")),
                       Outcome::not_applicable);
        v.condition(exact_condition("latest step-up sub-block / 2L (window <= 0.20)", last_up, std::int64_t(trajectories.size()),
                                    R.value("step_up_window_max"), Side::at_most));
        v.condition(exact_condition("latest step-down sub-block / 2L (window >= 0.92)", last_down, std::int64_t(trajectories.size()),
                                    R.value("step_down_window_min"), Side::at_least));
        const double n_up = double(steps_all.step_up.size());
        v.condition(exact_condition("number of step-up sub-blocks (>= 1)", n_up, 1, R.value("step_ups_min"), Side::at_least));
        v.condition(exact_condition("number of step-up sub-blocks (<= 2)", n_up, 1, R.value("step_ups_max"), Side::at_most));
        if (!between.empty())
            v.condition(bootstrap_condition("in-between ratio, median over samples", median_of(between), bootstrap_median(between),
                                            std::int64_t(between.size()), R.value("in_between_ratio_max"), Side::at_most));
        else
            v.condition(exact_condition("in-between ratio, median over samples (no trajectory)", nan, 0, R.value("in_between_ratio_max"),
                                        Side::at_most));
        v.condition(spike_samples > 0 ? rate_condition("share of spiking samples whose plateau state has c* massive", cstar_samples,
                                                       spike_samples, R.value("cstar_share_min"))
                                      : exact_condition("share of spiking samples whose plateau state has c* massive", nan, 0,
                                                        R.value("cstar_share_min")));
        v.condition(exact_condition("consensus spike channels (massive in >= half the spiking samples), at most 4",
                                    consensus.empty() ? nan : double(consensus.size()), spike_samples,
                                    R.value("consensus_channels_max"), Side::at_most));
        if (consensus.size() >= 2) {
            // The largest spread over the consensus channels, resampling whole samples (their spike tokens together).
            std::vector<double> ids(all_ids.begin(), all_ids.end());
            auto max_spread = [&](const std::vector<double>& pick) {
                std::vector<std::vector<double>> vv;
                for (double s : pick) { const auto part = channel_values({std::size_t(s)}); vv.insert(vv.end(), part.begin(), part.end()); }
                double worst = 0;
                for (std::size_t k = 1; k < consensus.size(); ++k) {
                    const double sp = ratio_spread(vv, k);
                    worst = std::max(worst, std::isfinite(sp) ? sp : 1e9);
                }
                return worst;
            };
            v.condition(bootstrap_condition("largest std/|mean| of a consensus channel's ratio to c* across spike tokens",
                                            max_spread(ids), bootstrap(ids, max_spread), std::int64_t(ids.size()),
                                            R.value("ratio_spread_max"), Side::at_most));
        } else {
            v.check("fewer than two consensus channels: the ratio condition has nothing to compare", double(consensus.size()), 2, false);
        }
        v.details() = {{"step_up", steps_all.step_up}, {"step_down", steps_all.step_down}, {"sub_blocks", nsub},
                       {"spike_channels", chj}, {"samples", N}, {"samples_with_spike", with_spike}};
        run.verdict(v);
        run.finish();
    });
}
