// A4 — training trace: where the position-0 sink sits during training (Paper A).
// Claim (30B-A3B MoE trained without [BOS]): the circuit appears early in middle layers, spreads over
// the first few positions (it can sit on position 1 for a while) and finally concentrates in layers
// 0–1; its location is proposed as a convergence signal.
// Here: a small transformer (4 layers, d 64, 2 heads; Guo et al.'s recipe, training.hpp) trained from scratch on
// Guo et al.'s Bigram-Backcopy task WITHOUT
// [BOS] (Paper A's premise: position 0 is an ordinary token), checkpoints every --every steps. At every
// checkpoint, on the same validation sequences (the independent units): per layer and key position
// k ∈ {0 … K−1} the mean attention received α_k (Gu et al., model::AttentionStats, averaged over heads),
// the ℓ2 norm of the residual stream (resid_post) at position k relative to the mean over positions ≥ K
// (model::ResidualStats), the training trace (validation loss, sink rate), and per sequence the number
// of sink heads (α₀ > ε) in layers 0–1 and in all layers.
// Rule (thresholds fixed before measuring; experiments/README.md):
//   share_c = Σ_i sink heads in layers 0–1 / Σ_i sink heads (pooled over sequences i) at checkpoint c
//   precondition  a sink forms: Sink^0.3_0 (all layers, mean over sequences, bootstrap) at the last
//                 checkpoint has lower bound ≥ 0.1 (convention: one head in ten)
//   precondition  ≥ 3 checkpoints have such a sink (a trend needs three points)
//   condition     migration: the least-squares change of share_c over the sink checkpoints
//                 (analysis::share_trend; two-stage bootstrap: checkpoints, then sequences) has lower
//                 bound ≥ 0.1 (convention: the sink moves by at least 10 points of its mass toward layers 0–1)
//   condition     concentration: share at the last checkpoint has lower bound ≥ (1 + 2/L)/2 (convention:
//                 more than halfway from the uniform share 2/L to all of it; 0.75 at L = 4)
// Null: checkpoint 0 (the untrained model) has no sink; with --random-init SEED nothing is trained and
// every checkpoint is that untrained model (seed SEED): no sink → "not applicable".
// Decision level (--from-table FILE): no training; the rule decides on FILE's sink heads (a sink_heads.csv, e.g. an
// earlier run's or a synthetic series, scripts/calibrate_decisions.py) of a --layers × --heads model.
// Command: build/experiments/a4_training_trace [--steps 2000] [--every 250] [--eval 64] [--recipe guo] [--out out/a4_training_trace]
// Writes: alpha.npy, norm_ratio.npy [checkpoints × L × K], checkpoints.csv, sink_heads.csv, meta.json.
#include "training.hpp"

#include <sinkscope/analysis/checkpoint_trend.hpp>
#include <sinkscope/analysis/intervals.hpp>
#include <sinkscope/analysis/rule_table.hpp>
#include <sinkscope/model/reducers.hpp>

using namespace sinkscope;
using namespace sinkscope::experiments;

struct Config {
    // 4 layers, d 64, 2 heads, T 64, 2000 steps, no BOS, Guo et al.'s recipe (training.hpp: the only one that
    // formed a sink within the budget in our measurements)
    TrainSize size{4, 64, 2, 64, 64, 3, 2000, 8, 8, 1e-2, 0.1, "bigram-backcopy", false, 0, "guo"};  // lr 1e-2: see A1
    std::int64_t every = 250;     // steps between checkpoints
    std::int64_t eval = 64;       // validation sequences per checkpoint
    std::int64_t positions = 4;   // K: key positions tracked
    double eps = analysis::rule("A4").value("sink_eps");  // Gu et al.'s 0.3
    std::string from_table;       // decision level: decide from this sink_heads.csv instead of training
};

// The rule's numbers are read from the registered rule A4 (analysis/rule_table.hpp), the only place they are written.

// What the rule reads, per checkpoint k (ascending steps) and validation sequence i: the number of sink heads
// (alpha0 > eps) in layers 0-1 and in all layers. Measured from a training run, or read back from a
// sink_heads.csv (--from-table, the decision level).
struct SinkHeads {
    std::vector<double> steps;
    std::vector<std::vector<double>> early, all;  // [k][i]
    std::vector<std::vector<double>> rate;        // Sink^eps_0 per sequence, [k][i] (all / (L x H), as measured)
};

// The A4 verdict from the sink heads of every checkpoint (the registered rule A4; the rule text below).
analysis::Verdict a4_verdict(const SinkHeads& sh, std::int64_t L, analysis::Outcome absent) {
    const analysis::Rule& R = analysis::rule("A4");
    const auto& sink_rates = sh.rate;
    const double concentrated =
        analysis::concentration_threshold(R.value("early_layers"), L, R.value("concentration_excess_over_uniform"));
    std::vector<std::vector<double>> fn, an;
    std::vector<double> xs;
    json sink_steps = json::array();
    for (std::size_t k = 0; k < sink_rates.size(); ++k)
        if (analysis::bootstrap_mean(sink_rates[k]).lo >= R.value("sink_checkpoint_rate_min")) {
            fn.push_back(sh.early[k]);
            an.push_back(sh.all[k]);
            xs.push_back(double(k));
            sink_steps.push_back(sh.steps[k]);
        }
    const auto& last = sink_rates.back();
    analysis::Verdict v(
        "A4: trained without BOS, the position-0 sink moves toward layers 0-1 over training and concentrates there",
        "share_c = sink heads (alpha0 > 0.3) in layers 0-1 / all sink heads, pooled over the validation sequences at "
        "checkpoint c. Preconditions (else 'not shown at this scale'): a sink forms (last checkpoint's Sink^0.3_0, "
        "bootstrap over sequences, lower bound >= 0.1; convention: one head in ten) at >= 3 checkpoints (a trend needs three "
        "points). Reproduced when (1) the least-squares change of share_c over those checkpoints (two-stage bootstrap: "
        "checkpoints, then sequences) "
        "has lower bound >= 0.1 (convention: the sink moves by >= 10 points of its mass toward layers 0-1) and (2) the last "
        "checkpoint's share has lower bound >= (1 + 2/L)/2 (convention: more than halfway from the uniform share 2/L to all; "
        "Paper A: 'finally concentrates in layers 0-1'); otherwise not reproduced",
        "checkpoint 0 (the untrained model) has no sink, hence no trend; with --random-init SEED nothing is trained and every "
        "checkpoint is the untrained model: must give 'not applicable'");
    v.registered(R);
    v.precondition(analysis::bootstrap_condition("Sink^0.3_0 (all layers) at the last checkpoint", analysis::mean_of(last),
                                                 analysis::bootstrap_mean(last), std::int64_t(last.size()),
                                                 R.value("last_checkpoint_sink_rate_min")),
                   absent);
    v.precondition(analysis::exact_condition("checkpoints with a sink", double(xs.size()), std::int64_t(sink_rates.size()),
                                             R.value("sink_checkpoints_min")),
                   absent);
    if (xs.size() >= 2) {
        const auto trend = analysis::share_trend(fn, an, xs, analysis::TrendResampling::checkpoints_then_units);
        v.condition(analysis::bootstrap_condition("fitted change of the layers-0-1 share of sink heads over the sink checkpoints",
                                                  trend.change, trend.ci, trend.units, R.value("migration_change_min")));
        std::vector<double> fl = fn.back(), al = an.back();
        double sf = 0, sa = 0;
        for (std::size_t i = 0; i < fl.size(); ++i) { sf += fl[i]; sa += al[i]; }
        v.condition(analysis::bootstrap_condition("layers-0-1 share of sink heads at the last checkpoint", sa > 0 ? sf / sa : std::nan(""),
                                                  analysis::bootstrap_ratio(fl, al), std::int64_t(fl.size()), concentrated));
        v.details()["shares"] = trend.shares;
    } else {
        v.condition(analysis::exact_condition("fitted change of the layers-0-1 share of sink heads over the sink checkpoints",
                                              std::nan(""), 0, R.value("migration_change_min")));
    }
    const auto first_ci = analysis::bootstrap_mean(sink_rates.front());
    v.check("checkpoint 0 (untrained) Sink^0.3_0 upper bound, null: below 0.1", first_ci.hi, R.value("sink_checkpoint_rate_min"),
            first_ci.hi < R.value("sink_checkpoint_rate_min"));
    v.details()["sink_checkpoint_steps"] = sink_steps;
    v.details()["concentration_threshold"] = concentrated;
    v.details()["layers"] = L;
    return v;
}

// sink_heads.csv: one row per (checkpoint, sequence); --from-table reads it back.
void write_sink_heads(const std::string& path, const SinkHeads& sh) {
    Csv f(path, {"step", "sequence", "sink_heads_layers_01", "sink_heads_all"});
    for (std::size_t k = 0; k < sh.steps.size(); ++k)
        for (std::size_t i = 0; i < sh.all[k].size(); ++i)
            f.row(std::int64_t(sh.steps[k]), i, std::lround(sh.early[k][i]), std::lround(sh.all[k][i]));
}
SinkHeads read_sink_heads(const std::string& path) {
    const CsvTable t(path, {"step", "sequence", "sink_heads_layers_01", "sink_heads_all"});
    SinkHeads sh;
    for (std::size_t n = 0; n < t.size(); ++n) {
        const double step = t.number(n, "step"), early = t.number(n, "sink_heads_layers_01"), all = t.number(n, "sink_heads_all");
        if (sh.steps.empty() || step != sh.steps.back()) {
            require(sh.steps.empty() || step > sh.steps.back(), "--from-table: " + path + ": the steps must ascend", {path, "", {}});
            sh.steps.push_back(step);
            sh.early.emplace_back();
            sh.all.emplace_back();
        }
        require(early >= 0 && early <= all, "--from-table: " + path + ": a row has more sink heads in layers 0-1 than in all layers",
                {path, "", {}});
        sh.early.back().push_back(early);
        sh.all.back().push_back(all);
    }
    for (const auto& a : sh.all)
        require(a.size() == sh.all[0].size(), "--from-table: " + path + ": every checkpoint needs the same sequences", {path, "", {}});
    return sh;
}

// This experiment's flags (after the common ones, experiments/common.hpp) and its --smoke sizes.
void add_flags(CLI::App& app, Config& cfg) {
    app.add_option("--task", cfg.size.task, "bigram-backcopy | zipf")->capture_default_str();
    app.add_option("--lr", cfg.size.lr, "peak learning rate")->capture_default_str();
    app.add_option("--steps", cfg.size.steps, "optimizer steps")->capture_default_str();
    app.add_option("--every", cfg.every, "steps between checkpoints")->capture_default_str();
    app.add_option("--layers", cfg.size.layers, "transformer blocks")->capture_default_str();
    app.add_option("--recipe", cfg.size.recipe, "sinkscope | guo (training.hpp)")->capture_default_str();
    app.add_option("--heads", cfg.size.heads, "attention heads per layer")->capture_default_str();
    app.add_option("--batch", cfg.size.batch, "sequences per step")->capture_default_str();
    app.add_option("--seq-len", cfg.size.seq_len, "T")->capture_default_str();
    app.add_option("--eval", cfg.eval, "validation sequences per checkpoint")->capture_default_str();
    app.add_option("--bos", cfg.size.bos, "train and measure with [BOS] at position 0 (Paper A's premise: no)")->capture_default_str();
    app.add_option("--from-table", cfg.from_table,
                   "decide from this table (a sink_heads.csv: step, sequence, sink_heads_layers_01, sink_heads_all, of a model "
                   "with --layers x --heads heads) instead of training: the decision level");
}
void smoke_sizes(Config& cfg) {
    cfg.size = TrainSize{4, 16, 2, 16, 8, 2, 6, 2, 2, 3e-3, 0.1, cfg.size.task, cfg.size.bos, 0, cfg.size.recipe};
    cfg.every = 2;
    cfg.eval = 4;
}

int main(int argc, char** argv) {
    Config cfg;
    const Experiment experiment{"a4_training_trace", "A4: where the sink and the position-0 norm sit during training (no BOS)",
                                "A4: the sink / P0-norm location over training checkpoints"};
    return run_experiment<std::exception>(argc, argv, experiment, cfg, add_flags, smoke_sizes, [&](Run& run, const CommonOptions& opt) {
        const bool null_run = opt.random_init >= 0;
        if (!cfg.from_table.empty()) {
            // Decision level: the rule on a table of sink heads (an earlier run's sink_heads.csv, or a synthetic one).
            require(!null_run, "--from-table and --random-init exclude each other");
            SinkHeads sh = read_sink_heads(cfg.from_table);
            const std::int64_t L = cfg.size.layers, H = cfg.size.heads;
            sh.rate = sh.all;
            for (auto& per_ckpt : sh.rate)
                for (double& x : per_ckpt) {
                    require(x <= double(L * H), "--from-table: " + cfg.from_table + " counts more sink heads than --layers x --heads = " +
                                                    std::to_string(L * H), {cfg.from_table, "", {}});
                    x /= double(L * H);
                }
            run.config() = {{"from_table", cfg.from_table}, {"layers", L}, {"heads", H}, {"checkpoints", sh.steps.size()}};
            run.meta()["model"] = "no model: the sink heads of " + cfg.from_table + " (--from-table, decision level)";
            run.verdict(a4_verdict(sh, L, analysis::Outcome::not_shown));
            run.finish();
            return;
        }
        const auto tc = train_config(cfg.size, opt.seed + 1);
        run.config() = {{"train", tc.to_json()}, {"every", cfg.every}, {"eval_sequences", cfg.eval},
                        {"positions", cfg.positions}, {"eps", cfg.eps}};
        run.meta()["model"] = null_run ? "random weights in the trained layout, never trained (null control; --model ignored)"
                                       : "trained from scratch (see config.train; --model ignored)";
        train::Trainer<float> trainer(tc, train::make_data(tc.task));
        if (null_run) trainer.weights() = train::init_weights<float>(tc.model, std::uint64_t(opt.random_init));
        run.meta()["corpus"] = trainer.data().describe() + " (synthetic)";
        const auto& c = trainer.config().model;
        const std::int64_t L = c.n_layers, H = c.n_heads, T = cfg.size.seq_len, K = std::min(cfg.positions, T - 1);
        const analysis::Rule& R = analysis::rule("A4");
        const std::int64_t early = std::int64_t(R.value("early_layers"));  // layers 0-1
        std::vector<Tokens> eval;
        for (std::int64_t i = 0; i < cfg.eval; ++i) {
            auto s = trainer.data().sequence(std::uint64_t(i), true);
            s.pop_back();  // T + 1 tokens: the model reads the first T
            eval.push_back(s);
        }
        std::vector<float> alpha, ratio;
        Csv csv(run.path("checkpoints.csv"), {"step", "val_loss", "sink_rate", "sink_rate_lo", "sink_rate_hi", "share_layers_01",
                                              "best_layer", "best_position", "best_alpha", "norm_layer", "norm_position", "norm_ratio"});
        json cj = json::array();
        // Per checkpoint: sink heads in layers 0–1 and in all layers, per sequence; Sink^ε_0 per sequence.
        std::vector<std::vector<double>> first_heads, all_heads, sink_rates;
        std::vector<double> steps;
        auto measure = [&](std::int64_t step) {
            model::HookSet<float> hooks;
            model::AttentionStats<float> as(L, H);
            model::ResidualStats<float> rs(L, 1);
            as.attach(hooks);
            rs.attach(hooks);
            model::EachSequence<float> each;
            each.before = [&](std::int64_t i) {
                if (i) rs.begin_sample();
                as.begin_sample();
            };
            model::forward_each<float>(c, trainer.weights(), eval, hooks, opt.forward_batch, each, no_logits());
            std::vector<double> f = as.sink_rate_per_sample(cfg.eps, 0, std::min<std::int64_t>(early - 1, L - 1));
            std::vector<double> a = as.sink_rate_per_sample(cfg.eps);
            sink_rates.push_back(a);
            for (auto& x : f) x *= double(std::min<std::int64_t>(early, L) * H);
            for (auto& x : a) x *= double(L * H);
            double fs = 0, as_ = 0;
            for (std::size_t i = 0; i < f.size(); ++i) { fs += f[i]; as_ += a[i]; }
            first_heads.push_back(f);
            all_heads.push_back(a);
            steps.push_back(double(step));
            const auto& rate = sink_rates.back();
            const auto rate_ci = analysis::bootstrap_mean(rate);
            const double share = as_ > 0 ? fs / as_ : std::nan("");

            double best_a = -1, best_r = -1;
            std::int64_t bl = -1, bk = -1, nl = -1, nk = -1;
            for (std::int64_t l = 0; l < L; ++l) {
                double rest = 0;
                const auto& R = rs.layers()[l];
                for (std::int64_t t = K; t < T; ++t) rest += R.mean_norm(t) / double(T - K);
                for (std::int64_t k = 0; k < K; ++k) {
                    double al = 0;
                    for (std::int64_t h = 0; h < H; ++h) al += as.received(l, h)[k] / double(H);
                    const double r = rest > 0 ? R.mean_norm(k) / rest : 0.0;
                    alpha.push_back(float(al));
                    ratio.push_back(float(r));
                    if (al > best_a) { best_a = al; bl = l; bk = k; }
                    if (r > best_r) { best_r = r; nl = l; nk = k; }
                }
            }
            const auto tr = trainer.trace();
            csv.row(step, tr.val_loss, analysis::mean_of(rate), rate_ci.lo, rate_ci.hi, share, bl, bk, best_a, nl, nk, best_r);
            cj.push_back({{"step", step}, {"val_loss", tr.val_loss}, {"sink_rate", analysis::mean_of(rate)},
                          {"sink_rate_ci", {rate_ci.lo, rate_ci.hi}}, {"share_layers_01", std::isnan(share) ? json(nullptr) : json(share)},
                          {"sink_layer", bl}, {"sink_position", bk}, {"sink_alpha", best_a}, {"norm_layer", nl},
                          {"norm_position", nk}, {"norm_ratio", best_r}});
        };
        run.phase(null_run ? "null control: untrained checkpoints" : "training");
        measure(0);
        std::int64_t checkpoints = 1;
        while (trainer.current_step() < tc.steps) {
            if (null_run) {
                // Nothing is trained: the "checkpoints" are the same untrained model.
                const std::int64_t s = std::min(tc.steps, std::int64_t(steps.back()) + cfg.every);
                measure(s);
                ++checkpoints;
                if (s == tc.steps) break;
                continue;
            }
            trainer.step();
            const std::int64_t s = trainer.current_step();
            if (s % cfg.every == 0 || s == tc.steps) { measure(s); ++checkpoints; }
            run.progress(s, tc.steps, "steps");
        }
        run.npy("alpha.npy", alpha, {std::size_t(checkpoints), std::size_t(L), std::size_t(K)});
        run.npy("norm_ratio.npy", ratio, {std::size_t(checkpoints), std::size_t(L), std::size_t(K)});
        run.results()["checkpoints"] = cj;

        // The verdict: trend of the layers-0–1 share over the checkpoints that have a sink (a4_verdict).
        const SinkHeads sh{steps, first_heads, all_heads, sink_rates};
        write_sink_heads(run.path("sink_heads.csv"), sh);
        const auto v = a4_verdict(sh, L, null_run ? analysis::Outcome::not_applicable : analysis::Outcome::not_shown);
        run.verdict(v);
        run.finish();
    });
}
