// B1 — massive activations: life cycle, step-up / step-down sub-blocks, spike channels and tokens (Paper B).
// Claim: spikes appear only in intermediate layers, in a few channels with nearly fixed ratios, on few
// tokens (position 0 and delimiters); one or two early step-up sub-blocks inject them, late step-down
// sub-blocks cancel them; sub-blocks in between add 2–3 orders of magnitude less (rise–plateau–fall).
// Sub-blocks are Paper B's 2L (1-based; odd = attention = hook_attn_out, even = FFN = hook_mlp_out;
// H_i = resid_mid / resid_post after them, H_0 = resid_pre of block 0). Step rule: analysis/spikes.hpp.
// Command: build/experiments/b1_spike_lifecycle [--samples 32] [--out out/b1_spike_lifecycle]
// Writes: sub_blocks.csv (per H_i: top-3 |x| with channel/position, median |x|, massive?),
//         trajectory.npy [samples × (2L+1)] (x_i at position 0, spike channel), steps.csv (Table 1 row),
//         spike_tokens.csv (position, token, max |x|), spike_channels.csv (ratios to the top channel), meta.json.
#include "common.hpp"

#include <map>

using namespace sinkscope;
using namespace sinkscope::experiments;

struct Config {
    std::int64_t samples = 32;      // natural-text samples, no BOS
    std::int64_t seq_len = 64;      // T
    std::int64_t trace_samples = 8; // samples used to locate the spike and classify the steps
    double tau = 0.2;               // step rule threshold (fraction of the peak)
};

int main(int argc, char** argv) {
    CLI::App app{"B1: spike life cycle over Paper B's sub-blocks"};
    CommonOptions opt;
    Config cfg;
    add_common(app, opt);
    app.add_option("--samples", cfg.samples, "number of samples")->capture_default_str();
    app.add_option("--seq-len", cfg.seq_len, "tokens per sample")->capture_default_str();
    app.add_option("--tau", cfg.tau, "step threshold as a fraction of the peak")->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    if (opt.smoke) { cfg.samples = 2; cfg.seq_len = 16; cfg.trace_samples = 2; }
    try {
        Run run("b1_spike_lifecycle", "B1: rise-plateau-fall of massive activations; step-up/step-down sub-blocks", opt, argc, argv);
        run.config() = {{"samples", cfg.samples}, {"seq_len", cfg.seq_len}, {"trace_samples", cfg.trace_samples},
                        {"tau", cfg.tau}, {"bos", false},
                        {"sub_block_map", "i=2l+1: blocks.l.hook_attn_out (H_i=resid_mid); i=2l+2: blocks.l.hook_mlp_out (H_i=resid_post)"}};
        Inputs in = load_inputs(opt, run);
        const auto& c = in.m.config;
        const std::int64_t d = c.d_model, nsub = 2 * c.n_layers;
        const auto smp = samples(in, opt, cfg.seq_len, cfg.samples, false);

        run.phase("trace spike");
        const std::vector<Tokens> head(smp.begin(), smp.begin() + std::min<std::size_t>(smp.size(), cfg.trace_samples));
        const SpikeTrace tr = trace_spike(in, head, cfg.tau);
        run.results()["trace"] = trace_json(tr);
        std::cerr << "  spike channel " << tr.channel << " at position " << tr.position << ", peak " << tr.steps.peak
                  << " at sub-block " << tr.peak_sub_block << "\n";

        // Per state H_i: top-3 over all samples, per-sample medians; trajectory at (0, c*); spike tokens.
        struct Top { double abs = 0, value = 0; std::int64_t channel = -1, position = -1, sample = -1; };
        std::vector<std::vector<Top>> top(nsub + 1);
        std::vector<std::vector<double>> medians(nsub + 1);
        std::vector<std::int64_t> massive_samples(nsub + 1, 0);
        std::vector<float> traj;
        std::map<std::string, std::int64_t> token_count, token_pos0;
        std::int64_t spike_tok = 0, spike_tok_pos0 = 0, tokens_seen = 0;
        const std::int64_t plateau = tr.peak_sub_block;
        Csv toks(run.path("spike_tokens.csv"), {"sample", "position", "token_id", "token", "max_abs", "channel"});
        std::vector<std::vector<double>> channel_values;  // per spike token: values at the spike channels
        std::vector<std::int64_t> spike_ch;

        run.phase("sub-block statistics");
        for (std::size_t s = 0; s < smp.size(); ++s) {
            const auto st = residual_states(in, smp[s]);
            const std::int64_t n = std::int64_t(smp[s].size());
            for (std::int64_t i = 0; i <= nsub; ++i) {
                const auto& h = st[i];
                medians[i].push_back(analysis::median_abs(h.data(), std::int64_t(h.size())));
                if (!analysis::massive_entries(h.data(), n, d).empty()) massive_samples[i]++;
                for (std::int64_t j = 0; j < std::int64_t(h.size()); ++j) {
                    const double a = std::abs(h[j]);
                    auto& T3 = top[i];
                    if (T3.size() < 3 || a > T3.back().abs) {
                        Top t{a, h[j], j % d, j / d, std::int64_t(s)};
                        T3.insert(std::upper_bound(T3.begin(), T3.end(), t, [](const Top& x, const Top& y) { return x.abs > y.abs; }), t);
                        if (T3.size() > 3) T3.pop_back();
                    }
                }
                if (tr.channel >= 0) traj.push_back(h[tr.channel]);  // position 0
            }
            // Spike tokens at the plateau (the state holding the peak): positions with a massive entry.
            if (plateau >= 0) {
                const auto& h = st[plateau];
                const auto e = analysis::massive_entries(h.data(), n, d);
                if (spike_ch.empty()) spike_ch = analysis::spike_channels(e);
                tokens_seen += n;
                for (auto p : analysis::spike_positions(e)) {
                    double best = 0; std::int64_t ch = -1;
                    for (std::int64_t k = 0; k < d; ++k) if (std::abs(h[p * d + k]) > best) { best = std::abs(h[p * d + k]); ch = k; }
                    const std::string tok = decode_token(in, smp[s][p]);
                    toks.row(s, p, smp[s][p], json(tok).dump(), best, ch);
                    ++spike_tok;
                    if (p == 0) ++spike_tok_pos0; else token_count[tok]++;
                    std::vector<double> v;
                    for (auto k : spike_ch) v.push_back(h[p * d + k]);
                    channel_values.push_back(v);
                }
            }
            run.progress(std::int64_t(s) + 1, std::int64_t(smp.size()), "samples");
        }

        Csv sub(run.path("sub_blocks.csv"), {"index", "layer", "kind", "top1", "top1_channel", "top1_position", "top2", "top3",
                                              "median", "massive_share"});
        json per;
        for (std::int64_t i = 0; i <= nsub; ++i) {
            std::vector<double> m = medians[i];
            std::nth_element(m.begin(), m.begin() + m.size() / 2, m.end());
            const double med = m[m.size() / 2];
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
        if (!traj.empty()) run.npy("trajectory.npy", traj, {smp.size(), std::size_t(nsub + 1)});

        // Table 1 row.
        Csv steps(run.path("steps.csv"), {"model", "sub_blocks", "step_up", "step_down", "in_between_ratio"});
        auto join = [](const std::vector<std::int64_t>& v) { std::string s; for (auto x : v) s += (s.empty() ? "" : " ") + std::to_string(x); return s; };
        steps.row(fs::path(opt.model).filename().string(), nsub, join(tr.steps.step_up), join(tr.steps.step_down), tr.steps.in_between_ratio);

        // Spike channels and their ratios to the top channel across spike tokens.
        Csv chs(run.path("spike_channels.csv"), {"channel", "mean_ratio", "std_ratio", "tokens"});
        json chj = json::array();
        for (std::size_t k = 0; k < spike_ch.size(); ++k) {
            double s1 = 0, s2 = 0; std::int64_t n = 0;
            for (const auto& v : channel_values) {
                if (v.empty() || v[0] == 0) continue;
                const double r = v[k] / v[0];
                s1 += r; s2 += r * r; ++n;
            }
            const double mean = n ? s1 / n : 0, sd = n ? std::sqrt(std::max(0.0, s2 / n - mean * mean)) : 0;
            chs.row(spike_ch[k], mean, sd, n);
            chj.push_back({{"channel", spike_ch[k]}, {"mean_ratio", mean}, {"std_ratio", sd}});
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
        run.finish();
    } catch (const Error& e) {
        std::cerr << e.what() << "\n";
        return 2;
    }
    return 0;
}
