// P1 — prior work (Sun, Chen, Kolter, Liu 2024): massive activations act as fixed biases.
// Claim: setting the massive activations to zero destroys the model (LLaMA2-7B perplexity → inf);
// setting them to their mean over many inputs leaves it unchanged (5.47 → 5.47).
// Measured on natural text without BOS (T = 64): the massive entries (Sun et al.'s criterion) of the
// state after the step-up block S (B1's rule) in a clean run give, per sample, the spike positions
// and the spike channels C. Interventions on blocks.S.hook_resid_post at those positions and channels
// (model::set_channels): zero; the mean of each channel over every spike entry of every sample; and a
// control that zeroes |C| random other channels at the same positions. Perplexity of the next-token
// predictions of every position (analysis::token_nll).
// Command: build/experiments/p1_massive_ablation [--samples 16] [--out out/p1_massive_ablation]
// Writes: conditions.csv (condition, mean NLL, perplexity), meta.json.
#include "common.hpp"

#include <set>

#include <sinkscope/analysis/perplexity.hpp>
#include <sinkscope/model/interventions.hpp>

using namespace sinkscope;
using namespace sinkscope::experiments;

struct Config {
    std::int64_t samples = 16;
    std::int64_t seq_len = 64;
};

int main(int argc, char** argv) {
    CLI::App app{"P1: zero vs mean ablation of massive activations"};
    CommonOptions opt;
    Config cfg;
    add_common(app, opt);
    app.add_option("--samples", cfg.samples, "natural-text samples")->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    if (opt.smoke) { cfg.samples = 2; cfg.seq_len = 12; }
    try {
        Run run("p1_massive_ablation", "Sun et al.: zeroing massive activations destroys perplexity, their mean keeps it", opt, argc, argv);
        run.config() = {{"samples", cfg.samples}, {"seq_len", cfg.seq_len}, {"bos", false}};
        Inputs in = load_inputs(opt, run);
        const auto& c = in.m.config;
        const std::int64_t d = c.d_model;
        const auto smp = samples(in, opt, cfg.seq_len, cfg.samples, false);
        const std::int64_t N = std::int64_t(smp.size());

        run.phase("locate spikes");
        const SpikeTrace tr = trace_spike(in, std::vector<Tokens>(smp.begin(), smp.begin() + std::min<std::int64_t>(N, 4)));
        const std::int64_t S = tr.step_up_layer >= 0 ? tr.step_up_layer : 0;
        const std::string post = model::hook_name("resid_post", S);
        run.results()["trace"] = trace_json(tr);
        run.results()["layer"] = S;
        std::vector<std::vector<std::int64_t>> positions(N);
        std::vector<std::int64_t> channels;
        std::vector<std::vector<analysis::SpikeEntry>> entries(N);
        for (std::int64_t s = 0; s < N; ++s) {
            model::HookSet<float> hooks;
            model::ActivationCache<float> cache;
            cache.attach(hooks, std::vector<std::string>{post});
            model::forward(c, in.m.weights, smp[s], &hooks, no_logits(S));
            entries[s] = analysis::massive_entries(cache[post].data.data(), std::int64_t(smp[s].size()), d);
            positions[s] = analysis::spike_positions(entries[s]);
            for (auto ch : analysis::spike_channels(entries[s]))
                if (std::find(channels.begin(), channels.end(), ch) == channels.end()) channels.push_back(ch);
        }
        // Mean of each spike channel over every spike position of every sample (the value there, massive or not).
        std::vector<float> means(channels.size(), 0.0f);
        {
            std::vector<double> sum(channels.size(), 0.0);
            std::int64_t count = 0;
            for (std::int64_t s = 0; s < N; ++s) {
                if (positions[s].empty()) continue;
                model::HookSet<float> hooks;
                model::ActivationCache<float> cache;
                cache.attach(hooks, std::vector<std::string>{post});
                model::forward(c, in.m.weights, smp[s], &hooks, no_logits(S));
                for (auto t : positions[s]) {
                    for (std::size_t k = 0; k < channels.size(); ++k) sum[k] += cache[post].data[t * d + channels[k]];
                    ++count;
                }
            }
            for (std::size_t k = 0; k < channels.size(); ++k) means[k] = float(count ? sum[k] / double(count) : 0.0);
        }
        std::vector<std::int64_t> random_channels;
        {
            std::mt19937_64 rng(opt.seed + 11);
            while (random_channels.size() < channels.size() && std::int64_t(channels.size()) < d) {
                const std::int64_t k = std::int64_t(rng() % std::uint64_t(d));
                if (std::find(channels.begin(), channels.end(), k) == channels.end() &&
                    std::find(random_channels.begin(), random_channels.end(), k) == random_channels.end())
                    random_channels.push_back(k);
            }
        }
        run.results()["spike_channels"] = channels;
        run.results()["channel_means"] = means;
        run.results()["random_channels"] = random_channels;

        run.phase("perplexity");
        Csv csv(run.path("conditions.csv"), {"condition", "mean_nll", "perplexity"});
        json cj;
        const std::vector<std::string> conds{"clean", "zero", "mean", "zero_random_channels"};
        for (std::size_t k = 0; k < conds.size(); ++k) {
            analysis::NllAccumulator acc;
            for (std::int64_t s = 0; s < N; ++s) {
                model::HookSet<float> hooks;
                if (!channels.empty() && !positions[s].empty()) {
                    if (conds[k] == "zero") model::zero_ablate_channels(hooks, post, channels, positions[s]);
                    if (conds[k] == "mean") model::mean_ablate_channels(hooks, post, channels, means, positions[s]);
                    if (conds[k] == "zero_random_channels") model::zero_ablate_channels(hooks, post, random_channels, positions[s]);
                }
                const auto logits = model::forward(c, in.m.weights, smp[s], &hooks);
                acc.add(analysis::token_nll(logits, smp[s]));
            }
            csv.row(conds[k], acc.mean(), acc.perplexity());
            cj[conds[k]] = {{"mean_nll", acc.mean()}, {"perplexity", acc.perplexity()}};
            run.progress(std::int64_t(k) + 1, std::int64_t(conds.size()), "conditions");
        }
        run.results()["conditions"] = cj;
        run.finish();
    } catch (const Error& e) {
        std::cerr << e.what() << "\n";
        return 2;
    }
    return 0;
}
