// A1 — the sink is not BOS semantics (Paper A).
// Claim: removing [BOS] from the input changes only the first layers: the position-0 sink rate counted
// from layer 2 on, Sink^ε_0[2:], recovers to near its with-BOS level.
// Measured: Gu et al.'s sink rate (α₀ = mean attention received by position 0, a head is a sink when
// α₀ > ε), per layer and restricted to layers ≥ l, for ε = 0.3 and 0.8, over natural-text samples of
// T = 64 tokens: "without BOS" = 64 text tokens; "with BOS" = BOS + the first 63 of the same tokens.
// Command: build/experiments/a1_bos_ablation [--samples 100] [--out out/a1_bos_ablation]
// Writes: per_layer.csv (layer, eps, bos, rate), sink_rates.npy [2 bos × 2 eps × L], meta.json.
#include "common.hpp"

#include <sinkscope/model/reducers.hpp>

using namespace sinkscope;
using namespace sinkscope::experiments;

struct Config {
    std::int64_t samples = 100;        // natural-text samples (Paper A / Gu et al.: ≥ 100)
    std::int64_t seq_len = 64;         // T (Gu et al.: 64)
    std::vector<double> eps{0.3, 0.8}; // sink thresholds
    std::int64_t from_layer = 2;       // Paper A's Sink[2:]
};

int main(int argc, char** argv) {
    CLI::App app{"A1: sink rate with and without BOS"};
    CommonOptions opt;
    Config cfg;
    add_common(app, opt);
    app.add_option("--samples", cfg.samples, "number of samples")->capture_default_str();
    app.add_option("--seq-len", cfg.seq_len, "tokens per sample, BOS included")->capture_default_str();
    app.add_option("--from-layer", cfg.from_layer, "l of Sink[l:]")->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    if (opt.smoke) { cfg.samples = 2; cfg.seq_len = 16; }
    try {
        Run run("a1_bos_ablation", "A1: removing BOS changes only the first layers; Sink[2:] recovers", opt, argc, argv);
        run.config() = {{"samples", cfg.samples}, {"seq_len", cfg.seq_len}, {"eps", cfg.eps}, {"from_layer", cfg.from_layer},
                        {"bos_variant", "with BOS = BOS + first T-1 text tokens; without = T text tokens"}};
        Inputs in = load_inputs(opt, run);
        const auto& c = in.m.config;
        const auto text = samples(in, opt, cfg.seq_len, cfg.samples, false);
        const std::int32_t bos = in.tok && in.tok->bos_id() ? *in.tok->bos_id() : 1;
        run.results()["bos_token"] = {{"id", bos}, {"text", decode_token(in, bos)}};
        const std::int64_t from = std::min(cfg.from_layer, c.n_layers - 1);

        std::vector<float> rates;  // [bos][eps][layer]
        Csv csv(run.path("per_layer.csv"), {"layer", "eps", "bos", "rate"});
        for (int with_bos = 0; with_bos < 2; ++with_bos) {
            run.phase(with_bos ? "with BOS" : "without BOS");
            model::HookSet<float> hooks;
            model::AttentionStats<float> stats(c.n_layers, c.n_heads);
            stats.attach(hooks);
            for (std::size_t i = 0; i < text.size(); ++i) {
                Tokens t = text[i];
                if (with_bos) { t.insert(t.begin(), bos); t.pop_back(); }
                stats.begin_sample();
                model::forward(c, in.m.weights, t, &hooks, no_logits());
                run.progress(std::int64_t(i) + 1, std::int64_t(text.size()), "samples");
            }
            const std::string key = with_bos ? "with_bos" : "without_bos";
            for (double e : cfg.eps) {
                for (std::int64_t l = 0; l < c.n_layers; ++l) {
                    const double r = stats.sink_rate(e, l, l);
                    rates.push_back(float(r));
                    csv.row(l, e, with_bos, r);
                }
                char name[32];
                std::snprintf(name, sizeof name, "eps_%.1f", e);
                run.results()[key][name] = {{"all_layers", stats.sink_rate(e)},
                                            {"from_layer", stats.sink_rate(e, from)},
                                            {"first_layers", from > 0 ? stats.sink_rate(e, 0, from - 1) : 0.0}};
            }
        }
        run.results()["samples"] = text.size();
        run.results()["from_layer"] = from;
        run.npy("sink_rates.npy", rates, {2, cfg.eps.size(), std::size_t(c.n_layers)});
        const double w = run.results()["with_bos"]["eps_0.3"]["from_layer"], wo = run.results()["without_bos"]["eps_0.3"]["from_layer"];
        std::cerr << "  Sink^0.3[" << from << ":]  with BOS " << 100 * w << "%  without BOS " << 100 * wo << "%\n";
        run.finish();
    } catch (const Error& e) {
        std::cerr << e.what() << "\n";
        return 2;
    }
    return 0;
}
