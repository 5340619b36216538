// A4 at scale — the scale sweep: how the sink and the residual peaks grow with size and compute when
// models are trained from scratch WITHOUT [BOS] (issue 13; Paper A §A4 and Paper B's premise that spikes
// and sinks emerge in training).
// Method: a grid of models (a preset: depth, width, context, steps, task) × seeds, each trained by
// train::Trainer (--device cuda: cuda::HostedTrainer, the same batches, traces and checkpoints) as its own
// job in its own directory (runs/<job>/: run.json, checkpoint.safetensors, trace.jsonl, done.json), 9 trace
// records per run (train/trace.hpp: Gu's sink rate per layer, α_k of the first key positions per layer,
// top-3 |x| and median |x| of every resid_post, Sun's criterion and max |H| / median |H| per hidden state
// (one sequence's resid_post), ‖x₀‖ against the rest, validation loss). Jobs are independent: `--job I`
// runs one (a Slurm array index or a GNU parallel argument), a killed job resumes from its checkpoint
// (on either device), and `--merge` reads whatever jobs finished.
// Compute: Kaplan et al. (2020), C ≈ (6N + 6·L·T·d_attn) FLOP per training token, N the non-embedding
// parameters, d_attn = H·d_h; a run's compute at a checkpoint is that times the tokens seen.
// Trends (analysis/scaling.hpp): at each run's last checkpoint, against log10 C and log10 N, with a
// stratified bootstrap over seeds; for top |x| / median |x| (per state, the largest over sequences and
// layers) and top |x|, the compute at which the trend would meet Sun et al.'s criterion (|x| > 100 and
// ≥ 1000 × median), an extrapolation when outside the grid.
// Rule (A4 at scale; thresholds those of a4_training_trace, fixed before measuring; experiments/README.md):
// on the preset's largest Bigram-Backcopy model (a preset without one, gpu or text: its largest model),
// per seed s: share_{s,c} = Σ_{l ≤ 1} sink_rate_l / Σ_l sink_rate_l at every checkpoint c whose sink rate
// (all layers) is ≥ 0.1;
//   precondition  ≥ 3 seeds have ≥ 3 such checkpoints (a trend needs three points, an interval three seeds)
//   condition     migration: the mean over those seeds of the least-squares change of share_{s,c} over the
//                 checkpoints (Student-t interval over seeds) has lower bound ≥ 0.1
//   condition     concentration: the mean last-checkpoint share has lower bound ≥ (1 + 2/L)/2
// Null: --random-init SEED trains nothing; every job's only checkpoint is its untrained model → "not applicable".
// Command: build/experiments/a4_scale_sweep [--preset cpu|text|workstation|gpu] [--device cpu|cuda] [--plan]
//          [--precision float32|bf16]
//          [--job I] [--merge] [--seeds 3] [--out out/a4_scale_sweep]   (--preset gpu trains on cuda)
// Writes: runs/<job>/…, plan.json, checkpoints.csv and checkpoints.npy [rows × columns, names in meta.json],
//         meta.json (trends with bands, reaches, the verdict).
// The grids and their jobs: a4_scale_sweep_grid.hpp; training, reading and trends: a4_scale_sweep_runs.hpp.
#include "a4_scale_sweep_runs.hpp"

#include <algorithm>

#include <sinkscope/analysis/checkpoint_trend.hpp>
#include <sinkscope/analysis/intervals.hpp>
#include <sinkscope/core/measures.hpp>

using namespace sinkscope;
using namespace sinkscope::experiments;
using namespace sinkscope::experiments::scale_sweep;

struct Config {
    std::string preset = "cpu";         // the grid (make_preset, a4_scale_sweep_grid.hpp): cpu, text, workstation, gpu; smoke for the tests
    std::int64_t seeds = 3;             // seeds per grid point (the rule needs >= 3)
    std::int64_t job = -1;              // >= 0: run only this job, then exit without merging
    std::int64_t eval = 16;             // validation sequences per trace record
    bool plan = false;                  // print the jobs and their expected time, write plan.json, exit
    bool merge = false;                 // train nothing: merge the finished jobs and decide
    bool bos = false;                   // synthetic tasks start with [BOS] (a check of the rule, not Paper A's premise)
    std::string device;                 // cpu | cuda (default: cuda for --preset gpu, else cpu)
    std::string precision = "float32";  // training products: float32 | bf16 (training.hpp)
    TextData text;                      // the text task's tokens
};

// The rule's numbers (a4_training_trace's thresholds: a sink checkpoint, the migration, the checkpoints and seeds
// a trend needs, the early layers and the concentration threshold) are read from the registered rule A4-scale
// (analysis/rule_table.hpp), the only place they are written.

// This experiment's flags (after the common ones, experiments/common.hpp) and its --smoke sizes.
void add_flags(CLI::App& app, Config& cfg) {
    app.add_option("--preset", cfg.preset, "cpu | text | workstation | gpu (the grids are in the source)")->capture_default_str();
    app.add_option("--seeds", cfg.seeds, "seeds per grid point (the rule needs >= 3)")->capture_default_str();
    app.add_option("--eval", cfg.eval, "validation sequences per trace record")->capture_default_str();
    app.add_flag("--plan", cfg.plan, "print the jobs (one command each) and their expected time, write plan.json, exit");
    app.add_option("--job", cfg.job, "run only job I (0-based; e.g. $SLURM_ARRAY_TASK_ID), then exit without merging");
    app.add_flag("--merge", cfg.merge, "train nothing: merge the finished jobs in --out and decide");
    app.add_option("--device", cfg.device, "cpu | cuda: where the jobs train (default: cuda for --preset gpu, else cpu)")
        ->check(CLI::IsMember({"cpu", "cuda"}));
    add_precision_option(app, cfg.precision);
    app.add_flag("--bos", cfg.bos, "synthetic tasks start with [BOS] (not Paper A's premise: a check that the rule responds where a sink forms)");
    app.add_option("--text-tokens", cfg.text.path, "uint16 token file for the text task (scripts/make_text_tokens.sh)");
    app.add_option("--text-vocab", cfg.text.vocab, "vocabulary of --text-tokens")->capture_default_str();
    app.add_option("--text-heldout", cfg.text.heldout, "held-out uint16 token file (validation); default: every 20th block of --text-tokens");
}
void smoke_sizes(Config& cfg) { cfg.preset = "smoke"; cfg.eval = 4; }

int main(int argc, char** argv) {
    Config cfg;
    const Experiment experiment{"a4_scale_sweep",
                                "A4 at scale: the sink and the residual peaks across model sizes, seeds and compute (no BOS)",
                                "A4 at scale: sink and residual peaks against model size and compute, trained without BOS"};
    // The flags are checked before the Run opens (start()): a refused command line writes nothing.
    return run_experiment<std::exception>(argc, argv, experiment, cfg, add_flags, smoke_sizes, [&](const CommonOptions& opt, auto start) {
        auto& [preset_name, seeds, job, eval, plan, merge_only, bos, device, precision, text] = cfg;  // the flags, by name
        const Preset preset = make_preset(preset_name);
        require(seeds >= 1, "--seeds must be >= 1");
        if (device.empty()) device = preset.cuda ? "cuda" : "cpu";
        const bool on_gpu = device == "cuda";
        const model::MatmulPrecision products = model::matmul_precision_from_string(precision, "--precision");
        if (on_gpu && products != model::MatmulPrecision::float32)
            throw Error("--precision " + precision + " --device cuda: the CUDA trainer computes in float32 (give --precision float32)");
        if (on_gpu && !train::kDeviceTrainerBuilt && !plan && !merge_only)
            throw Error("--device cuda: this program was built without the CUDA trainer (CMake found no nvcc, or "
                        "SINKSCOPE_CUDA is OFF); rebuild with the CUDA toolkit, or --plan to see the grid");
        const auto jobs = jobs_of(preset, seeds);
        const bool has_text = std::any_of(preset.points.begin(), preset.points.end(), [](const Point& p) { return p.task == "text"; });
        // The GPU plan needs no file (nothing is measured here); everything else reads the tokens.
        if (has_text && text.path.empty() && !(plan && preset.cuda))
            throw Error("--preset " + preset.name + " trains on text: give --text-tokens FILE --text-heldout FILE --text-vocab N "
                        "(scripts/make_english_corpus.sh makes data/corpus/english/train.u16 and heldout.u16, vocabulary 4096)");
        const bool null_run = opt.random_init >= 0;
        Run run = start();
        run.config() = {{"preset", preset.name}, {"purpose", preset.purpose}, {"seeds", seeds}, {"eval_sequences", eval},
                        {"recipe", std::string("guo (training.hpp), ") + (bos ? "with BOS (--bos: not Paper A's premise)" : "no BOS")},
                        {"bos", bos}, {"device", device}, {"precision", precision}, {"jobs", json::array()}};
        run.meta()["model"] = null_run ? "random weights in each job's layout, never trained (null control; --model ignored)"
                                       : "trained from scratch per job (see config.jobs; --model ignored)";

        // ---- plan: the jobs, their size and expected time ----
        // Every flag that changes a job, so that `--plan | parallel` (or a Slurm array) runs the same jobs.
        std::string job_command = std::string(argv[0]) + " --preset " + preset.name + " --seeds " + std::to_string(seeds) +
                                  " --eval " + std::to_string(eval) + " --out " + run.out() + " --device " + device + (bos ? " --bos" : "") +
                                  (precision != "float32" ? " --precision " + precision : "");
        if (opt.random_init >= 0) job_command += " --random-init " + std::to_string(opt.random_init);
        if (has_text) job_command += " --text-tokens " + (text.path.empty() ? std::string("FILE") : text.path) + " --text-vocab " +
                                     std::to_string(text.vocab) + (text.heldout.empty() ? "" : " --text-heldout " + text.heldout);
        json plan_j = json::array();
        double total_flop = 0;
        for (std::size_t i = 0; i < jobs.size(); ++i) {
            const auto tc = job_config(jobs[i], text, eval, bos, products);
            const double n_ne = double(count_non_embedding(tc));
            const double flop = flop_per_token(tc.model, std::int64_t(n_ne), jobs[i].point.seq_len) *
                                double(tc.batch * jobs[i].point.seq_len * tc.steps);
            total_flop += flop;
            plan_j.push_back({{"index", i}, {"job", jobs[i].name}, {"non_embedding_parameters", n_ne},
                              {"tokens", double(tc.batch * jobs[i].point.seq_len * tc.steps)}, {"flop", flop},
                              {"command", job_command + " --job " + std::to_string(i)}});
        }
        // Expected time: the grid's compute at a rate measured here (2 steps of the smallest and largest
        // job), or, on --device cuda, at the H200 training rate in bench/RESULTS.md (11.2 TFLOP/s).
        // A single --job or --merge skips it (and leaves plan.json to the whole sweep or --plan).
        double rate = 11.2e12;
        const bool whole = job < 0 && !merge_only;
        if (!on_gpu && !null_run && (plan || whole)) {
            double flop = 0, secs = 0;
            for (std::size_t i : {std::size_t(0), jobs.size() - 1}) {
                auto tc = job_config(jobs[i], text, eval, bos, products);
                train::Trainer<float> tr(tc, train::make_data(tc.task));
                tr.step();
                const auto t0 = Clock::now();
                for (int k = 0; k < 2; ++k) tr.step();
                secs += std::chrono::duration<double>(Clock::now() - t0).count();
                flop += 2 * plan_j[i]["flop"].get<double>() / double(tc.steps);
            }
            rate = flop / secs;
        }
        if (on_gpu || ((plan || whole) && !null_run)) {
            run.results()["expected_seconds"] = total_flop / rate;
            run.results()["rate_flop_per_s"] = rate;
        }
        run.results()["grid_flop"] = total_flop;
        run.config()["jobs"] = plan_j;
        if (plan || whole) std::ofstream(run.path("plan.json")) << plan_j.dump(1) << "\n";
        if (plan || whole) std::cerr << "[a4_scale_sweep] preset " << preset.name << " (" << preset.purpose << "): " << jobs.size() << " jobs, "
                  << std::scientific << std::setprecision(2) << total_flop << " FLOP; expected " << std::fixed
                  << std::setprecision(0) << total_flop / rate << " s at " << std::scientific << rate << " FLOP/s"
                  << (on_gpu ? " (the H200 rate of bench/RESULTS.md)" : " (measured here)") << "\n"
                  << std::defaultfloat;
        if (plan) {
            for (const auto& p : plan_j) std::cout << p["command"].get<std::string>() << "\n";
            return;
        }

        // ---- train: every job, or one ----
        if (!merge_only) {
            run.phase(null_run ? "null control: untrained jobs" : "training");
            for (std::size_t i = 0; i < jobs.size(); ++i) {
                if (job >= 0 && std::int64_t(i) != job) continue;
                run_job(jobs[i], job_config(jobs[i], text, eval, bos, products), run.path("runs/" + jobs[i].name), opt.random_init, device);
                run.progress(std::int64_t(i) + 1, std::int64_t(jobs.size()), "jobs");
            }
            require(job < std::int64_t(jobs.size()), "--job " + std::to_string(job) + ": the preset has " + std::to_string(jobs.size()) + " jobs");
            if (job >= 0) return;
        }

        // ---- merge: the finished jobs ----
        run.phase("merge");
        std::vector<std::vector<Row>> runs;
        json missing = json::array();
        for (const auto& j : jobs) {
            const std::string dir = run.path("runs/" + j.name);
            if (!fs::exists(dir + "/done.json")) { missing.push_back(j.name); continue; }
            runs.push_back(read_run(dir, json::parse(std::ifstream(dir + "/done.json"))));
        }
        run.results()["missing_jobs"] = missing;
        if (!missing.empty())
            std::cerr << "[a4_scale_sweep] " << missing.size() << " of " << jobs.size() << " jobs have not finished (results.missing_jobs); "
                      << "merging the " << runs.size() << " that have\n";
        write_checkpoints(run, runs);

        // Trends per task at each run's last checkpoint.
        run.results()["trends"] = trends_of(runs);

        // ---- the verdict: A4 on the rule's model (rule_point), across seeds ----
        const Point a4 = rule_point(preset);
        const analysis::Rule& R = analysis::rule("A4-scale");
        const std::string rule_model =
            "the preset's largest " + (a4.task == "bigram-backcopy" ? std::string("Bigram-Backcopy") : a4.task) + " model";
        std::vector<double> changes, last_shares;
        std::int64_t seeds_done = 0;
        double first_max = 0;
        json per_seed = json::array();
        for (const auto& r : runs) {
            if (r.empty() || r.front().task != a4.task || r.front().layers != a4.layers || r.front().d_model != a4.d_model ||
                r.front().seq_len != a4.seq_len)
                continue;
            ++seeds_done;
            first_max = std::max(first_max, r.front().sink_rate);
            std::vector<double> xs, ss;
            json steps = json::array();
            for (std::size_t c = 0; c < r.size(); ++c)
                if (r[c].sink_rate >= R.value("sink_checkpoint_rate_min") && std::isfinite(r[c].share01)) {
                    xs.push_back(double(c));
                    ss.push_back(r[c].share01);
                    steps.push_back(r[c].step);
                }
            const bool enough = double(xs.size()) >= R.value("sink_checkpoints_min");
            const double change = enough ? analysis::fitted_change(xs, ss) : std::nan("");
            if (enough && std::isfinite(change)) { changes.push_back(change); last_shares.push_back(ss.back()); }
            per_seed.push_back({{"seed", r.front().seed}, {"sink_checkpoint_steps", steps}, {"shares", ss},
                                {"change", finite_or_null(change)}, {"final_sink_rate", r.back().sink_rate},
                                {"final_sink_layer", r.back().sink_layer}, {"final_sink_position", r.back().sink_position}});
        }
        const double concentrated = analysis::concentration_threshold(R.value("early_layers"), a4.layers,
                                                                      R.value("concentration_excess_over_uniform"));
        analysis::Verdict v(
            std::string("A4-scale: trained ") + (bos ? "WITH BOS (--bos, a check of the rule, not Paper A's premise)" : "without BOS") +
                ", the sink moves toward layers 0-1 over training and concentrates there, across seeds",
            "On " + rule_model + " (Guo recipe, " + (bos ? "with" : "no") +
                " BOS), per seed: share_c = sum of the sink rates "
            "(alpha0 > 0.3) of layers 0-1 / sum over all layers, at every checkpoint whose sink rate (all layers) is >= 0.1. "
            "Precondition (else 'not shown at this scale'): >= 3 seeds have >= 3 such checkpoints. Reproduced when (1) the mean "
            "over those seeds of the least-squares change of share_c (Student-t interval over seeds) has lower bound >= 0.1 and "
            "(2) the mean last-checkpoint share has lower bound >= (1 + 2/L)/2; otherwise not reproduced. Thresholds: "
            "a4_training_trace's, fixed before this sweep was run",
            "--random-init SEED: every job's only checkpoint is its untrained model, no trend: must give 'not applicable'");
        v.registered(R);
        const auto absent = null_run ? analysis::Outcome::not_applicable : analysis::Outcome::not_shown;
        v.precondition(analysis::exact_condition("seeds of " + rule_model + " with >= 3 sink checkpoints",
                                                 double(changes.size()), seeds_done, R.value("seeds_min")),
                       absent);
        if (changes.size() >= 2) {
            const auto ci = analysis::t_interval_mean(changes), cs = analysis::t_interval_mean(last_shares);
            v.condition({"mean over seeds of the fitted change of the layers-0-1 share of the sink", analysis::mean_of(changes), ci,
                         std::int64_t(changes.size()), R.value("migration_change_min"), analysis::Side::at_least, "student-t"});
            v.condition({"mean over seeds of the layers-0-1 share at the last checkpoint", analysis::mean_of(last_shares), cs,
                         std::int64_t(last_shares.size()), concentrated, analysis::Side::at_least, "student-t"});
        } else {
            v.condition(analysis::exact_condition("mean over seeds of the fitted change of the layers-0-1 share of the sink",
                                                  std::nan(""), std::int64_t(changes.size()),
                                                  R.value("migration_change_min")));
        }
        v.check("untrained (step 0) sink rate, largest over seeds, null: below 0.1", first_max, R.value("sink_checkpoint_rate_min"),
                first_max < R.value("sink_checkpoint_rate_min"));
        v.details()["model"] = {{"task", a4.task}, {"layers", a4.layers}, {"d_model", a4.d_model}, {"seq_len", a4.seq_len}, {"steps", a4.steps}};
        v.details()["seeds"] = per_seed;
        v.details()["concentration_threshold"] = concentrated;
        run.verdict(v);
        run.finish();
    });
}
