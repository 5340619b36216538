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
#include "training.hpp"

#include <algorithm>

#include <sinkscope/analysis/checkpoint_trend.hpp>
#include <sinkscope/analysis/intervals.hpp>
#include <sinkscope/analysis/scaling.hpp>
#include <sinkscope/core/measures.hpp>
#include <sinkscope/train/checkpoint.hpp>
#include <sinkscope/train/run_trainer.hpp>

using namespace sinkscope;
using namespace sinkscope::experiments;

namespace {

constexpr double kSinkForms = 0.1;            // a4_training_trace's threshold
constexpr double kMigration = 0.1;
constexpr std::int64_t kMinCheckpoints = 3;
constexpr std::int64_t kMinSeeds = 3;
constexpr std::int64_t kRecords = 8;          // trace records after step 0

struct Point {
    std::string task;   // bigram-backcopy | zipf | text
    std::int64_t layers, d_model, heads, seq_len, steps, batch;
    double lr;
};

struct Preset {
    std::string name, purpose;
    std::vector<Point> points;
    bool cuda = false;  // sized for the device trainer
};

// The grids, fixed before any run was measured. Guo et al.'s recipe (training.hpp) throughout: the only
// one that formed a sink within our CPU budgets (A1, A4). No BOS: position 0 is an ordinary token.
Preset make_preset(const std::string& name) {
    Preset p;
    p.name = name;
    if (name == "smoke") {
        p.purpose = "test size: seconds";
        p.points = {{"bigram-backcopy", 2, 16, 2, 16, 8, 2, 3e-3}, {"bigram-backcopy", 2, 32, 2, 16, 8, 2, 3e-3}};
    } else if (name == "cpu") {
        p.purpose = "the main job's budget: minutes on 2 cores";
        // A first version also trained Bigram-Backcopy at L 4, d 128 (3 × ~140 s): 18 min in all on 2 cores,
        // over the main job's budget; that size is in `workstation`. A4's model is a4_training_trace's (L 4, d 64).
        p.points = {{"bigram-backcopy", 2, 32, 2, 64, 1200, 16, 3e-3},
                    {"bigram-backcopy", 2, 64, 2, 64, 1200, 16, 3e-3},
                    {"bigram-backcopy", 4, 64, 2, 64, 1200, 16, 3e-3},
                    {"zipf", 2, 32, 2, 64, 600, 16, 3e-3},
                    {"zipf", 4, 64, 2, 64, 600, 16, 3e-3},
                    {"zipf", 4, 128, 4, 64, 600, 16, 3e-3}};
    } else if (name == "text") {
        p.purpose = "English text on the CPU: tens of minutes on 2 cores; needs --text-tokens";
        p.points = {{"text", 2, 64, 2, 128, 1500, 16, 3e-3},
                    {"text", 4, 64, 2, 128, 1500, 16, 3e-3},
                    {"text", 4, 128, 4, 128, 1500, 16, 2e-3}};
    } else if (name == "workstation") {
        p.purpose = "hours on a many-core workstation, days on 2 cores (--plan measures the estimate); text needs --text-tokens";
        for (const std::string task : {"bigram-backcopy", "zipf", "text"}) {
            p.points.push_back({task, 2, 64, 2, 128, 4000, 16, 3e-3});
            p.points.push_back({task, 4, 128, 4, 128, 4000, 16, 2e-3});
            p.points.push_back({task, 8, 256, 4, 256, 4000, 16, 1e-3});
            p.points.push_back({task, 12, 512, 8, 512, 4000, 16, 6e-4});
        }
    } else if (name == "gpu") {
        p.purpose = "one H200 with the CUDA trainer: a ~60M model past 1B tokens (Gu et al.'s sink scale) and a "
                    "GPT-2-small-sized model (Paper B's spikes); needs --text-tokens";
        p.cuda = true;
        p.points = {{"text", 8, 640, 10, 512, 32000, 64, 6e-4},     // ~39M non-embedding, 1.05B tokens
                    {"text", 12, 768, 12, 1024, 40000, 32, 6e-4}};  // ~85M non-embedding, 1.31B tokens
    } else {
        throw Error("unknown preset '" + name + "' (smoke, cpu, text, workstation, gpu)");
    }
    return p;
}

// The model the A4 rule judges: the largest Bigram-Backcopy point (size L·d²·steps), the task on which
// Guo et al. form sinks fastest; in a preset without one (gpu, text) the largest point of any task.
Point rule_point(const Preset& p) {
    auto size = [](const Point& q) { return double(q.layers) * double(q.d_model) * double(q.d_model) * double(q.steps); };
    const bool backcopy = std::any_of(p.points.begin(), p.points.end(), [](const Point& q) { return q.task == "bigram-backcopy"; });
    Point best{};
    for (const auto& q : p.points)
        if ((!backcopy || q.task == "bigram-backcopy") && size(q) >= size(best)) best = q;
    return best;
}

struct Job {
    Point point;
    std::int64_t seed;
    std::string name;
};

std::vector<Job> jobs_of(const Preset& p, std::int64_t seeds) {
    std::vector<Job> jobs;
    for (const auto& pt : p.points)
        for (std::int64_t s = 0; s < seeds; ++s) {
            std::ostringstream n;
            n << pt.task << "_L" << pt.layers << "_d" << pt.d_model << "_T" << pt.seq_len << "_n" << pt.steps << "_seed" << s;
            jobs.push_back({pt, s, n.str()});
        }
    return jobs;
}

struct TextData {
    std::string path, heldout;
    std::int64_t vocab = 512, bos = -1;
};

train::TrainConfig job_config(const Job& j, const TextData& text, std::int64_t eval, bool bos, model::MatmulPrecision precision) {
    const Point& p = j.point;
    TrainSize z{p.layers, p.d_model, p.heads, p.seq_len, 64, 3, p.steps, p.batch, eval, p.lr, 1e-4,
                p.task == "text" ? "zipf" : p.task, bos, 0, "guo"};
    auto t = train_config(z, 1000 + std::uint64_t(j.seed), [&](train::TrainConfig& c) {
        if (p.task != "text") return;
        // (no path: the GPU preset's --plan, which reads nothing)
        c.task = {{"kind", "text"}, {"path", text.path.empty() ? std::string() : fs::absolute(text.path).string()}, {"vocab", text.vocab},
                  {"seq_len", p.seq_len}, {"seed", 1001 + j.seed}, {"bos", text.bos}};
        if (!text.heldout.empty()) c.task["heldout"] = fs::absolute(text.heldout).string();
        c.model.vocab_size = text.vocab;
    });
    t.checkpoint_every = std::max<std::int64_t>(1, p.steps / kRecords);
    t.threads = 0;
    t.precision = precision;
    return t;
}

// Kaplan et al. (2020): training FLOP per token ≈ 6N + 6·L·n_ctx·d_attn (N: non-embedding parameters).
template <class T>
std::int64_t non_embedding_parameters(const model::Weights<T>& w) {
    return model::parameter_count(w) - std::int64_t(w.tok_embed.size()) - std::int64_t(w.pos_embed.size()) -
           std::int64_t(w.lm_head.size()) - std::int64_t(w.sink_embed.size());
}
double flop_per_token(const model::Config& c, std::int64_t n_nonemb, std::int64_t T) {
    return 6.0 * double(n_nonemb) + 6.0 * double(c.n_layers) * double(T) * double(c.n_heads * c.head_dim);
}

// Non-embedding parameters without allocating the model: they are affine in the depth,
// N(L) = N(1) + (L − 1)·(N(2) − N(1)), so two one- and two-block models with a 2-token vocabulary suffice.
std::int64_t count_non_embedding(const train::TrainConfig& t) {
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
json run_job(const Job& j, const train::TrainConfig& tc, const std::string& dir, std::int64_t random_init, const std::string& device) {
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

std::vector<Row> read_run(const std::string& dir, const json& done) {
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
        for (std::size_t l = 0; l < L.size(); ++l) {
            const double s = L[l].at("sink_rate");
            all += s;
            if (l <= 1) first += s;
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

json trend_json(const analysis::Trend& t, bool log_y) {
    return {{"intercept", t.intercept}, {"slope", t.slope}, {"slope_ci", {t.slope_ci.lo, t.slope_ci.hi}}, {"runs", t.points},
            {"sizes", t.strata}, {"log_y", log_y}, {"band_x", t.band_x}, {"band_lo", t.band_lo}, {"band_hi", t.band_hi}};
}
json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"A4 at scale: the sink and the residual peaks across model sizes, seeds and compute (no BOS)"};
    CommonOptions opt;
    add_common(app, opt);
    std::string preset_name = "cpu";
    std::int64_t seeds = 3, job = -1, eval = 16;
    bool plan = false, merge_only = false, bos = false;
    std::string device, precision = "float32";
    TextData text;
    app.add_option("--preset", preset_name, "cpu | text | workstation | gpu (the grids are in the source)")->capture_default_str();
    app.add_option("--seeds", seeds, "seeds per grid point (the rule needs >= 3)")->capture_default_str();
    app.add_option("--eval", eval, "validation sequences per trace record")->capture_default_str();
    app.add_flag("--plan", plan, "print the jobs (one command each) and their expected time, write plan.json, exit");
    app.add_option("--job", job, "run only job I (0-based; e.g. $SLURM_ARRAY_TASK_ID), then exit without merging");
    app.add_flag("--merge", merge_only, "train nothing: merge the finished jobs in --out and decide");
    app.add_option("--device", device, "cpu | cuda: where the jobs train (default: cuda for --preset gpu, else cpu)")
        ->check(CLI::IsMember({"cpu", "cuda"}));
    add_precision_option(app, precision);
    app.add_flag("--bos", bos, "synthetic tasks start with [BOS] (not Paper A's premise: a check that the rule responds where a sink forms)");
    app.add_option("--text-tokens", text.path, "uint16 token file for the text task (scripts/make_text_tokens.sh)");
    app.add_option("--text-vocab", text.vocab, "vocabulary of --text-tokens")->capture_default_str();
    app.add_option("--text-heldout", text.heldout, "held-out uint16 token file (validation); default: every 20th block of --text-tokens");
    CLI11_PARSE(app, argc, argv);
    if (opt.smoke) { preset_name = "smoke"; eval = 4; }
    try {
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
        Run run("a4_scale_sweep", "A4 at scale: sink and residual peaks against model size and compute, trained without BOS",
                opt, argc, argv);
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
            return 0;
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
            if (job >= 0) return 0;
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

        // Trends per task at each run's last checkpoint.
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
        run.results()["trends"] = trends;

        // ---- the verdict: A4 on the rule's model (rule_point), across seeds ----
        const Point a4 = rule_point(preset);
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
                if (r[c].sink_rate >= kSinkForms && std::isfinite(r[c].share01)) {
                    xs.push_back(double(c));
                    ss.push_back(r[c].share01);
                    steps.push_back(r[c].step);
                }
            const bool enough = std::int64_t(xs.size()) >= kMinCheckpoints;
            const double change = enough ? analysis::fitted_change(xs, ss) : std::nan("");
            if (enough && std::isfinite(change)) { changes.push_back(change); last_shares.push_back(ss.back()); }
            per_seed.push_back({{"seed", r.front().seed}, {"sink_checkpoint_steps", steps}, {"shares", ss},
                                {"change", finite_or_null(change)}, {"final_sink_rate", r.back().sink_rate},
                                {"final_sink_layer", r.back().sink_layer}, {"final_sink_position", r.back().sink_position}});
        }
        const double concentrated = (1.0 + 2.0 / double(std::max<std::int64_t>(1, a4.layers))) / 2.0;
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
        const auto absent = null_run ? analysis::Outcome::not_applicable : analysis::Outcome::not_shown;
        v.precondition(analysis::exact_condition("seeds of " + rule_model + " with >= 3 sink checkpoints",
                                                 double(changes.size()), seeds_done, double(kMinSeeds)),
                       absent);
        if (changes.size() >= 2) {
            const auto ci = analysis::t_interval_mean(changes), cs = analysis::t_interval_mean(last_shares);
            v.condition({"mean over seeds of the fitted change of the layers-0-1 share of the sink", analysis::mean_of(changes), ci,
                         std::int64_t(changes.size()), kMigration, analysis::Side::at_least, "student-t"});
            v.condition({"mean over seeds of the layers-0-1 share at the last checkpoint", analysis::mean_of(last_shares), cs,
                         std::int64_t(last_shares.size()), concentrated, analysis::Side::at_least, "student-t"});
        } else {
            v.condition(analysis::exact_condition("mean over seeds of the fitted change of the layers-0-1 share of the sink",
                                                  std::nan(""), std::int64_t(changes.size()), kMigration));
        }
        v.check("untrained (step 0) sink rate, largest over seeds, null: below 0.1", first_max, kSinkForms, first_max < kSinkForms);
        v.details()["model"] = {{"task", a4.task}, {"layers", a4.layers}, {"d_model", a4.d_model}, {"seq_len", a4.seq_len}, {"steps", a4.steps}};
        v.details()["seeds"] = per_seed;
        v.details()["concentration_threshold"] = concentrated;
        run.verdict(v);
        run.finish();
    } catch (const std::exception& e) {
        std::cerr << e.what() << "\n";
        return 2;
    }
    return 0;
}
