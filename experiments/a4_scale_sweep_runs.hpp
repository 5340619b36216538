// a4_scale_sweep's jobs at work: the compute of a model (Kaplan et al.), one job trained to its end in its
// own directory (resumable), its trace read back as one row per checkpoint, the checkpoint table and the
// trends across runs (analysis/scaling.hpp). Split from a4_scale_sweep.cpp, which keeps the method and
// the rule.
#pragma once

#include <algorithm>

#include <sinkscope/analysis/rule_table.hpp>
#include <sinkscope/analysis/scaling.hpp>
#include <sinkscope/train/checkpoint.hpp>
#include <sinkscope/train/run_trainer.hpp>

#include "a4_scale_sweep_grid.hpp"

namespace sinkscope::experiments::scale_sweep {

// Kaplan et al. (2020): training FLOP per token ≈ 6N + 6·L·n_ctx·d_attn (N: non-embedding parameters).
template <class T>
inline std::int64_t non_embedding_parameters(const model::Weights<T>& w) {
    return model::parameter_count(w) - std::int64_t(w.tok_embed.size()) - std::int64_t(w.pos_embed.size()) -
           std::int64_t(w.lm_head.size()) - std::int64_t(w.sink_embed.size());
}
inline double flop_per_token(const model::Config& c, std::int64_t n_nonemb, std::int64_t T) {
    return 6.0 * double(n_nonemb) + 6.0 * double(c.n_layers) * double(T) * double(c.n_heads * c.head_dim);
}

// Non-embedding parameters without allocating the model: they are affine in the depth,
// N(L) = N(1) + (L − 1)·(N(2) − N(1)), so two one- and two-block models with a 2-token vocabulary suffice.
inline std::int64_t count_non_embedding(const train::TrainConfig& t) {
    auto with_layers = [&](std::int64_t layers) {
        model::Config c = t.model;
        c.n_layers = layers;
        c.vocab_size = 2;
        return non_embedding_parameters(train::init_weights<float>(c, 1));
    };
    const std::int64_t one = with_layers(1), two = with_layers(2);
    return one + (t.model.n_layers - 1) * (two - one);
}

// Runs one job to its end (resuming a killed one) on `device` (cpu or cuda); null: records the untrained
// model only (on the CPU: nothing is trained).
inline json run_job(const Job& j, const train::TrainConfig& tc, const std::string& dir, std::int64_t random_init, const std::string& device) {
    const std::string done = dir + "/done.json";
    if (fs::exists(done)) return json::parse(std::ifstream(done));
    fs::create_directories(dir);
    const auto t0 = Clock::now();
    const std::string ck = dir + "/checkpoint.safetensors";
    std::unique_ptr<train::RunTrainer<float>> tr;
    std::int64_t first = 0;
    if (random_init >= 0) {
        fs::remove(dir + "/trace.jsonl");
        fs::remove(dir + "/trace.csv");
        auto untrained = std::make_unique<train::RunTrainerOf<float, train::Trainer<float>>>(tc, train::make_data(tc.task));
        untrained->trainer().weights() = train::init_weights<float>(tc.model, std::uint64_t(random_init) + std::uint64_t(j.seed));
        std::ofstream(dir + "/run.json") << tc.to_json().dump(2) << "\n";
        train::append_trace(dir, untrained->trace(0.0));
        tr = std::move(untrained);
    } else {
        const auto make = device == "cuda" ? train::make_device_trainer : train::make_cpu_trainer<float>;
        if (fs::exists(ck) && fs::exists(dir + "/trace.jsonl")) {
            std::cerr << "  resuming " << j.name << " from its checkpoint\n";
            const auto c = train::load_checkpoint<float>(ck);
            const auto saved = train::TrainConfig::from_json(c.run).precision;
            require(saved == tc.precision, "resuming " + ck + ": the job was trained with --precision " + model::to_string(saved) +
                                               ", this run asks for " + model::to_string(tc.precision) + "; give --precision " +
                                               model::to_string(saved) + " or remove " + dir + " to start it again");
            // Every other setting must match as well: a job resumed with another --eval, --bos, text files or
            // grid would continue a run the sweep no longer describes, and one trace would mix two recipes.
            const auto differences = train::settings_differences(c.run, tc.to_json(), {"precision"});
            std::string listed;
            for (const auto& d : differences) listed += (listed.empty() ? "" : "; ") + d;
            require(differences.empty(), "resuming " + ck + ": this run's settings differ from the checkpoint's (" + listed +
                                             "); give the flags the job was started with, or remove " + dir + " to start it again");
            tr = make(tc, &c, train::make_data(train::TrainConfig::from_json(c.run).task));
        } else {
            fs::remove(dir + "/trace.jsonl");
            fs::remove(dir + "/trace.csv");
            tr = make(tc, nullptr, train::make_data(tc.task));
        }
        first = tr->current_step();
        train::run_training(*tr, dir, [&](const train::StepResult& r) {
            if ((r.step + 1) % 50 == 0 || r.step + 1 == tc.steps) {
                const double s = std::chrono::duration<double>(Clock::now() - t0).count();
                std::cerr << "\r  " << j.name << ": step " << r.step + 1 << "/" << tc.steps << " loss " << std::fixed
                          << std::setprecision(3) << r.loss << " (" << std::setprecision(0) << s << " s)" << std::flush;
            }
        });
        std::cerr << "\n";
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    const model::Weights<float> trained = tr->weights();
    const auto n_ne = non_embedding_parameters(trained);
    json d{{"job", j.name}, {"seed", j.seed}, {"parameters", model::parameter_count(trained)}, {"device", random_init >= 0 ? "cpu" : device},
           {"non_embedding_parameters", n_ne}, {"flop_per_token", flop_per_token(tc.model, n_ne, tr->data().seq_len())},
           {"tokens_per_step", tr->config().batch * tr->data().seq_len()}, {"steps_trained", tr->current_step() - first},
           {"seconds", seconds}, {"null", random_init >= 0}};
    std::ofstream(done + ".tmp") << d.dump(1) << "\n";
    fs::rename(done + ".tmp", done);
    return d;
}

// One checkpoint of one run, reduced to the sweep's quantities.
struct Row {
    std::string job, task;
    std::int64_t layers, d_model, seq_len, seed, step;
    double params, flop, val_loss, sink_rate, share01, sink_alpha, p0_ratio, top1, top_ratio;
    std::int64_t sink_layer, sink_position;
    bool sun;
};

inline std::vector<Row> read_run(const std::string& dir, const json& done) {
    const auto run = json::parse(std::ifstream(dir + "/run.json"));
    const auto& m = run.at("model");
    std::vector<Row> rows;
    std::ifstream f(dir + "/trace.jsonl");
    std::string line;
    while (std::getline(f, line)) {
        if (line.empty()) continue;
        const auto r = json::parse(line);
        // A job killed between writing a trace record and its checkpoint repeats that record on resume.
        while (!rows.empty() && rows.back().step >= r.at("step").get<std::int64_t>()) rows.pop_back();
        Row w{};
        w.job = done.at("job");
        w.task = run.at("task").at("kind");
        w.layers = m.at("n_layers"); w.d_model = m.at("d_model"); w.seq_len = run.at("task").at("seq_len");
        w.seed = done.at("seed");
        w.step = r.at("step");
        w.params = done.at("non_embedding_parameters").get<double>();
        w.flop = done.at("flop_per_token").get<double>() * done.at("tokens_per_step").get<double>() * double(w.step);
        w.val_loss = r.at("val_loss");
        w.sink_rate = r.at("sink_rate");
        double first = 0, all = 0;
        w.sink_alpha = -1; w.p0_ratio = 0; w.top1 = 0; w.top_ratio = 0; w.sun = false;
        const auto& L = r.at("layers");
        // share01: the sink rates of layers 0..early_layers-1 (A4-scale's locator) over all layers.
        const double early = analysis::rule("A4-scale").value("early_layers");
        for (std::size_t l = 0; l < L.size(); ++l) {
            const double s = L[l].at("sink_rate");
            all += s;
            if (double(l) < early) first += s;
            if (L[l].contains("alpha_k"))
                for (std::size_t k = 0; k < L[l]["alpha_k"].size(); ++k)
                    if (L[l]["alpha_k"][k].get<double>() > w.sink_alpha) {
                        w.sink_alpha = L[l]["alpha_k"][k];
                        w.sink_layer = std::int64_t(l);
                        w.sink_position = std::int64_t(k);
                    }
            const double p0 = L[l].at("p0_norm"), rest = L[l].at("rest_norm"), top = L[l].at("top3")[0].at("abs");
            if (rest > 0) w.p0_ratio = std::max(w.p0_ratio, p0 / rest);
            w.top1 = std::max(w.top1, top);
            // Sun's criterion per hidden state (train/trace.hpp): each sequence's own max and median.
            if (!L[l].contains("top1_over_median") || !L[l].contains("massive_fraction"))
                throw Error("this trace was written before the per-state criterion (top1_over_median, massive_fraction): "
                            "delete the job's directory and run it again", {dir + "/trace.jsonl", "", {}});
            w.top_ratio = std::max(w.top_ratio, L[l].at("top1_over_median").get<double>());
            w.sun = w.sun || L[l].at("massive_fraction").get<double>() > 0;
        }
        w.share01 = all > 0 ? first / all : std::nan("");
        rows.push_back(w);
    }
    return rows;
}

inline json trend_json(const analysis::Trend& t, bool log_y) {
    return {{"intercept", t.intercept}, {"slope", t.slope}, {"slope_ci", {t.slope_ci.lo, t.slope_ci.hi}}, {"runs", t.points},
            {"sizes", t.strata}, {"log_y", log_y}, {"band_x", t.band_x}, {"band_lo", t.band_lo}, {"band_hi", t.band_hi}};
}
inline json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// checkpoints.csv and checkpoints.npy: one row per checkpoint of every finished run.
inline void write_checkpoints(Run& run, const std::vector<std::vector<Row>>& runs) {
    static const std::vector<std::string> cols{"layers", "d_model", "seq_len", "seed", "step", "non_embedding_parameters",
                                               "flop", "val_loss", "sink_rate", "share_layers_01", "sink_layer", "sink_position",
                                               "sink_alpha", "p0_norm_ratio", "top1_abs", "top1_over_median", "sun_massive"};
    Csv csv(run.path("checkpoints.csv"), [] { auto c = cols; c.insert(c.begin(), {"job", "task"}); return c; }());
    std::vector<float> table;
    for (const auto& r : runs)
        for (const auto& w : r) {
            csv.row(w.job, w.task, w.layers, w.d_model, w.seq_len, w.seed, w.step, w.params, w.flop, w.val_loss, w.sink_rate,
                    w.share01, w.sink_layer, w.sink_position, w.sink_alpha, w.p0_ratio, w.top1, w.top_ratio, int(w.sun));
            for (double v : {double(w.layers), double(w.d_model), double(w.seq_len), double(w.seed), double(w.step), w.params,
                             w.flop, w.val_loss, w.sink_rate, w.share01, double(w.sink_layer), double(w.sink_position),
                             w.sink_alpha, w.p0_ratio, w.top1, w.top_ratio, double(w.sun)})
                table.push_back(float(v));
        }
    if (!table.empty()) run.npy("checkpoints.npy", table, {table.size() / cols.size(), cols.size()});
    run.results()["checkpoint_columns"] = cols;
}

// Trends per task at each run's last checkpoint, against log10 compute and log10 parameters, with Sun's
// criterion's reach (analysis::fit_trend, analysis::reach).
inline json trends_of(const std::vector<std::vector<Row>>& runs) {
    json trends = json::object();
    for (const std::string task : {"bigram-backcopy", "zipf", "text"}) {
        std::vector<const Row*> last;
        for (const auto& r : runs)
            if (!r.empty() && r.back().task == task && r.back().step > 0) last.push_back(&r.back());
        if (last.size() < 2) continue;
        json tj;
        for (const std::string axis : {"flop", "parameters"}) {
            std::vector<double> x;
            double lo = INFINITY, hi = -INFINITY;
            for (const Row* w : last) {
                x.push_back(std::log10(axis == "flop" ? w->flop : w->params));
                lo = std::min(lo, x.back());
                hi = std::max(hi, x.back());
            }
            std::vector<double> band;
            for (int k = 0; k <= 20; ++k) band.push_back(lo + (hi - lo) * k / 20.0);
            auto fit = [&](auto get, bool log_y) {
                std::vector<double> y;
                for (const Row* w : last) y.push_back(log_y ? std::log10(std::max(get(*w), 1e-30)) : get(*w));
                return analysis::fit_trend(x, y, band);
            };
            const auto sink = fit([](const Row& w) { return w.sink_rate; }, false);
            const auto p0 = fit([](const Row& w) { return w.p0_ratio; }, true);
            const auto ratio = fit([](const Row& w) { return w.top_ratio; }, true);
            const auto top = fit([](const Row& w) { return w.top1; }, true);
            const auto loss = fit([](const Row& w) { return w.val_loss; }, true);
            json a{{"sink_rate", trend_json(sink, false)}, {"p0_norm_ratio", trend_json(p0, true)},
                   {"top1_over_median", trend_json(ratio, true)}, {"top1_abs", trend_json(top, true)},
                   {"val_loss", trend_json(loss, true)}, {"x_range", {lo, hi}}};
            // Sun's criterion: top/median ≥ 1000 and top > 100; the later of the two reaches.
            const auto r1 = analysis::reach(ratio, 3.0), r2 = analysis::reach(top, 2.0);
            a["reach_sun"] = {{"top1_over_median_1000", {{"log10_x", finite_or_null(r1.x)}, {"ci", {finite_or_null(r1.ci.lo), finite_or_null(r1.ci.hi)}},
                                                          {"growing_share", r1.growing_share}}},
                              {"top1_100", {{"log10_x", finite_or_null(r2.x)}, {"ci", {finite_or_null(r2.ci.lo), finite_or_null(r2.ci.hi)}},
                                            {"growing_share", r2.growing_share}}},
                              {"log10_x_both", finite_or_null(std::max(r1.x, r2.x))},
                              {"extrapolated", !(std::max(r1.x, r2.x) <= hi)}};
            tj[axis] = a;
        }
        tj["runs"] = last.size();
        tj["sun_criterion_met_by_runs"] = std::count_if(last.begin(), last.end(), [](const Row* w) { return w->sun; });
        trends[task] = tj;
    }
    return trends;
}

}  // namespace sinkscope::experiments::scale_sweep
