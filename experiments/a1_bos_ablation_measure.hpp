// a1_bos_ablation's measurements: one model's attention statistics on the same sequences with and without
// BOS (model::AttentionStats), their per-layer sink rates into the outputs, the trained task's BOS pairs,
// and the trained (or, for the null control, random) weights. Split from a1_bos_ablation.cpp, which keeps
// the claim, the models, the thresholds and the rules.
#pragma once

#include <cstdio>

#include <sinkscope/model/reducers.hpp>

#include "training.hpp"

namespace sinkscope::experiments::bos_ablation {

// One model measured on the same samples with and without BOS.
struct BosMeasurement {
    model::AttentionStats<float> with, without;
    std::int64_t L, H;
    BosMeasurement(std::int64_t layers, std::int64_t heads) : with(layers, heads), without(layers, heads), L(layers), H(heads) {}
};

inline void measure_bos_pair(BosMeasurement& m, const model::Config& c, const model::Weights<float>& w, const std::vector<Tokens>& with_bos,
             const std::vector<Tokens>& without_bos, Run& run, const CommonOptions& o, const std::string& what) {
    for (int b = 0; b < 2; ++b) {
        auto& stats = b ? m.with : m.without;
        model::HookSet<float> hooks;
        stats.attach(hooks);
        model::EachSequence<float> each;
        each.before = [&stats](std::int64_t) { stats.begin_sample(); };
        measure_samples(run, o, c, w, b ? with_bos : without_bos, hooks, each, no_logits(),
                        what + (b ? " with BOS" : " without BOS"));
    }
}

// Sink rates per layer and per layer range into `res`, per-layer rows into the CSV and the .npy.
inline void summarise(const BosMeasurement& m, const std::vector<double>& eps_list, std::int64_t from, const std::string& name,
                      Run& run, Csv& csv, const std::string& npy) {
    json& res = run.results()[name];
    std::vector<float> rates;  // [bos][eps][layer]
    for (int b = 0; b < 2; ++b) {
        const auto& stats = b ? m.with : m.without;
        const std::string key = b ? "with_bos" : "without_bos";
        for (double e : eps_list) {
            char eps[32];
            std::snprintf(eps, sizeof eps, "eps_%.1f", e);
            json per_layer = json::array();
            for (std::int64_t l = 0; l < m.L; ++l) {
                const double r = stats.sink_rate(e, l, l);
                rates.push_back(float(r));
                per_layer.push_back(r);
                csv.row(name, l, e, b, r);
            }
            res[key][eps] = {{"all_layers", stats.sink_rate(e)}, {"from_layer", stats.sink_rate(e, from)},
                             {"first_layers", stats.sink_rate(e, 0, from - 1)}, {"per_layer", per_layer}};
        }
    }
    res["samples"] = m.with.samples();
    res["from_layer"] = from;
    run.npy(npy, rates, {2, eps_list.size(), std::size_t(m.L)});
}

// Sequences of the trained task's validation stream: with = [BOS] x₁ … x_{T−1}, without = x₁ … x_T.
inline void bos_pairs(const train::DataSource& data, std::int64_t n, std::int64_t T, std::vector<Tokens>& with_bos,
               std::vector<Tokens>& without_bos) {
    with_bos.clear();
    without_bos.clear();
    for (std::int64_t i = 0; i < n; ++i) {
        const auto s = data.sequence(std::uint64_t(i), true);
        with_bos.emplace_back(s.begin(), s.begin() + T);
        without_bos.emplace_back(s.begin() + 1, s.begin() + T + 1);
    }
}

// Trains `tc` (or, for the null control, draws random weights in its layout) and returns the weights.
inline model::Weights<float> trained_weights(const train::TrainConfig& tc, const CommonOptions& opt, Run& run, const std::string& what,
                                      json& log) {
    train::Trainer<float> trainer(tc, train::make_data(tc.task));
    if (opt.random_init >= 0) {
        log = {{"null_control", "random weights (seed " + std::to_string(opt.random_init) + "), not trained"}};
        return train::init_weights<float>(tc.model, std::uint64_t(opt.random_init));
    }
    const auto before = trainer.trace();
    while (trainer.current_step() < tc.steps) {
        trainer.step();
        run.progress(trainer.current_step(), tc.steps, what + " steps");
    }
    const auto after = trainer.trace();
    log = {{"val_loss_init", before.val_loss}, {"val_loss", after.val_loss}, {"trace_sink_rate", after.sink_rate},
           {"steps", tc.steps}};
    return trainer.weights();
}

}  // namespace sinkscope::experiments::bos_ablation
