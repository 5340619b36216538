// A4 — training trace: where the position-0 circuit sits during training (Paper A).
// Claim (30B-A3B MoE): the circuit appears early in middle layers, spreads over the first few positions
// (it can sit on position 1 for a while) and finally concentrates in layers 0–1; its location is
// proposed as a convergence signal.
// Here: a small sinkscope transformer trained from scratch on Guo et al.'s Bigram-Backcopy task
// (BOS at position 0; sinks form within minutes on a CPU). At every checkpoint, on fixed validation
// sequences: per layer and key position k ∈ {0 … K−1} the mean attention received α_k (Gu et al.,
// model::AttentionStats, averaged over heads) and the ℓ2 norm of the residual stream (resid_post) at
// position k relative to the mean over positions ≥ K (model::ResidualStats); plus the library's
// training trace (validation loss, sink rate).
// Command: build/experiments/a4_training_trace [--steps 3000] [--every 150] [--task bigram-backcopy|zipf] [--out out/a4_training_trace]
// Writes: alpha.npy, norm_ratio.npy [checkpoints × L × K], checkpoints.csv, meta.json.
#include "training.hpp"

#include <sinkscope/model/reducers.hpp>

using namespace sinkscope;
using namespace sinkscope::experiments;

struct Config {
    TrainSize size{3, 64, 4, 64, 64, 3, 3000, 8, 8, 3e-3, 0.1};  // 3 layers, d 64, 4 heads, T 64, 3000 steps
    std::int64_t every = 150;     // steps between checkpoints
    std::int64_t positions = 4;   // K: key positions tracked
    double eps = 0.3;
};

int main(int argc, char** argv) {
    CLI::App app{"A4: where the sink and the position-0 norm sit during training"};
    CommonOptions opt;
    Config cfg;
    add_common(app, opt);
    app.add_option("--task", cfg.size.task, "bigram-backcopy | zipf")->capture_default_str();
    app.add_option("--lr", cfg.size.lr, "peak learning rate")->capture_default_str();
    app.add_option("--steps", cfg.size.steps, "optimizer steps")->capture_default_str();
    app.add_option("--every", cfg.every, "steps between checkpoints")->capture_default_str();
    app.add_option("--layers", cfg.size.layers, "transformer blocks")->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    if (opt.smoke) { cfg.size = TrainSize{2, 16, 2, 16, 8, 2, 6, 2, 2, 3e-3, 0.1}; cfg.every = 3; }
    try {
        Run run("a4_training_trace", "A4: the sink / P0-norm location over training checkpoints", opt, argc, argv);
        const auto tc = train_config(cfg.size, opt.seed + 1);
        run.config() = {{"train", tc.to_json()}, {"every", cfg.every}, {"positions", cfg.positions}, {"eps", cfg.eps}};
        run.meta()["model"] = "trained from scratch (see config.train)";
        run.meta()["corpus"] = "bigram-backcopy (synthetic)";
        train::Trainer<float> trainer(tc, train::make_data(tc.task));
        const auto& c = trainer.config().model;
        const std::int64_t L = c.n_layers, K = std::min(cfg.positions, cfg.size.seq_len - 1);
        std::vector<Tokens> eval;
        for (std::int64_t i = 0; i < cfg.size.eval_sequences; ++i) {
            auto s = trainer.data().sequence(std::uint64_t(i), true);
            s.pop_back();  // T + 1 tokens: the model reads the first T
            eval.push_back(s);
        }
        std::vector<float> alpha, ratio;
        Csv csv(run.path("checkpoints.csv"), {"step", "val_loss", "sink_rate", "best_layer", "best_position", "best_alpha",
                                              "norm_layer", "norm_position", "norm_ratio"});
        json cj = json::array();
        auto measure = [&](std::int64_t step) {
            model::HookSet<float> hooks;
            model::AttentionStats<float> as(L, c.n_heads);
            model::ResidualStats<float> rs(L, 1);
            as.attach(hooks);
            rs.attach(hooks);
            for (std::size_t i = 0; i < eval.size(); ++i) {
                if (i) rs.begin_sample();
                as.begin_sample();
                model::forward(c, trainer.weights(), eval[i], &hooks, no_logits());
            }
            double best_a = -1, best_r = -1;
            std::int64_t bl = -1, bk = -1, nl = -1, nk = -1;
            for (std::int64_t l = 0; l < L; ++l) {
                double rest = 0;
                const auto& R = rs.layers()[l];
                for (std::int64_t t = K; t < cfg.size.seq_len; ++t) rest += R.mean_norm(t) / double(cfg.size.seq_len - K);
                for (std::int64_t k = 0; k < K; ++k) {
                    double a = 0;
                    for (std::int64_t h = 0; h < c.n_heads; ++h) a += as.received(l, h)[k] / double(c.n_heads);
                    const double r = rest > 0 ? R.mean_norm(k) / rest : 0.0;
                    alpha.push_back(float(a));
                    ratio.push_back(float(r));
                    if (a > best_a) { best_a = a; bl = l; bk = k; }
                    if (r > best_r) { best_r = r; nl = l; nk = k; }
                }
            }
            const auto tr = trainer.trace();
            csv.row(step, tr.val_loss, tr.sink_rate, bl, bk, best_a, nl, nk, best_r);
            cj.push_back({{"step", step}, {"val_loss", tr.val_loss}, {"sink_rate", tr.sink_rate}, {"sink_layer", bl},
                          {"sink_position", bk}, {"sink_alpha", best_a}, {"norm_layer", nl}, {"norm_position", nk},
                          {"norm_ratio", best_r}});
        };
        run.phase("training");
        measure(0);
        std::int64_t checkpoints = 1;
        while (trainer.current_step() < tc.steps) {
            trainer.step();
            const std::int64_t s = trainer.current_step();
            if (s % cfg.every == 0 || s == tc.steps) { measure(s); ++checkpoints; }
            run.progress(s, tc.steps, "steps");
        }
        run.npy("alpha.npy", alpha, {std::size_t(checkpoints), std::size_t(L), std::size_t(K)});
        run.npy("norm_ratio.npy", ratio, {std::size_t(checkpoints), std::size_t(L), std::size_t(K)});
        run.results()["checkpoints"] = cj;
        run.finish();
    } catch (const std::exception& e) {
        std::cerr << e.what() << "\n";
        return 2;
    }
    return 0;
}
