// Plumbing shared by the experiment executables: common CLI flags, inputs (model, corpus samples),
// outputs (.npy / .csv / meta.json with configuration, seed, git revision and timings), progress on
// stderr, verdicts (analysis/verdict.hpp) into meta.json, and null controls (--random-init: the same
// layout with random weights; --tokens-file: fixed token sequences). No analysis math lives here:
// numbers come from sinkscope::model, sinkscope::analysis and sinkscope::theory.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <sinkscope/analysis/bos.hpp>
#include <sinkscope/analysis/rule_table.hpp>
#include <sinkscope/analysis/spike_trace.hpp>
#include <sinkscope/analysis/spikes.hpp>
#include <sinkscope/analysis/text.hpp>
#include <sinkscope/analysis/rule_table.hpp>
#include <sinkscope/analysis/verdict.hpp>
#include <sinkscope/core/measures.hpp>
#include <sinkscope/io/dequantize.hpp>
#include <sinkscope/io/npy.hpp>
#include <sinkscope/model/batch.hpp>
#include <sinkscope/model/forward.hpp>
#include <sinkscope/model/hooks.hpp>
#include <sinkscope/model/load.hpp>
#include <sinkscope/model/views.hpp>
#include <sinkscope/theory/quadratic_ffn.hpp>
#include <sinkscope/train/random_model.hpp>
#include <sinkscope/version.hpp>

#ifndef SINKSCOPE_SOURCE_DIR
#define SINKSCOPE_SOURCE_DIR "."
#endif

namespace sinkscope::experiments {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using Tokens = std::vector<std::int32_t>;

inline std::string source_path(const std::string& rel) { return std::string(SINKSCOPE_SOURCE_DIR) + "/" + rel; }

// Flags every experiment has.
struct CommonOptions {
    std::string model = source_path("models/SmolLM2-135M-Instruct.Q4_1.gguf");  // a .gguf or HF directory
    std::string corpus = source_path("data/corpus/python_docs.txt");           // natural text (scripts/fetch_corpus.sh)
    std::string out;                  // output directory (default out/<experiment>)
    bool smoke = false;               // tiny sizes for the test suite
    bool random_tokens = false;       // uniform random token ids instead of text (models without a tokenizer)
    unsigned seed = 0;                // seeds every random choice
    std::int64_t random_init = -1;    // ≥ 0: null control — the model's layout with random weights (this seed)
    std::string tokens_file;          // fixed token sequences, one per line (instead of text / random ids)
    std::string weights = "auto";     // "auto" (float32 when it fits in memory, else "file"), "float32", "file" (linear
                                      // maps kept in their file types) or "bf16" (model/load.hpp)
    std::string compute = "exact";    // "exact", "int8" or "bf16" (model::load_options_from)
    std::int64_t forward_batch = 8;   // samples per forward pass where batching is bit-exact (model::forward_each)
    std::string bos = "auto";         // BOS first in --model's samples: "auto" (the checkpoint's add_bos_token; absent
                                      // means no), "on" or "off" (analysis/bos.hpp); meta.json "bos" says why
};

// The null control every verdict names: the rule must not say "reproduced" on it.
inline const char* kRandomInitNull =
    "the same layout with random weights (--random-init SEED): must give 'not reproduced' or 'not applicable'";

inline void add_common(CLI::App& app, CommonOptions& o) {
    app.add_option("--model", o.model, "checkpoint: .gguf file or Hugging Face directory")->capture_default_str();
    app.add_option("--corpus", o.corpus, "plain-text corpus to cut samples from")->capture_default_str();
    app.add_option("--out", o.out, "output directory (default out/<experiment>)");
    app.add_flag("--smoke", o.smoke, "tiny sizes (seconds), for the test suite");
    app.add_flag("--random-tokens", o.random_tokens, "sample uniform random token ids instead of text");
    app.add_option("--seed", o.seed, "random seed")->capture_default_str();
    app.add_option("--random-init", o.random_init,
                   "null control: keep the model's layout and tokenizer, replace its weights by random ones (this seed)");
    app.add_option("--tokens-file", o.tokens_file,
                   "token ids, one sequence per line (spaces or commas); samples are cut from these sequences");
    app.add_option("--weights", o.weights,
                   "auto: float32 when it fits in memory, else file (said on stderr and in meta.json); "
                   "float32: convert every tensor at load; file: keep the linear maps of a GGUF or Hugging Face "
                   "directory in their file types, memory-mapped (a 7B model in its 4.7 or 15 GB instead of 30; "
                   "B2 and B3 dequantize the one layer whose weights they read); bf16: convert at load, then round "
                   "the linear maps to BF16 once (with --compute bf16: the same products, half the memory, faster)")
        ->check(CLI::IsMember({"auto", "float32", "file", "bf16"}))->capture_default_str();
    app.add_option("--compute", o.compute,
                   "exact, int8 (8-bit activations against block-typed maps, ~1e-2 relative) or bf16 (bf16 inputs, "
                   "float32 sums; needs oneDNN): check a result against exact before trusting it")
        ->check(CLI::IsMember({"exact", "int8", "bf16"}))->capture_default_str();
    app.add_option("--forward-batch", o.forward_batch,
                   "samples per forward pass in the read-only measurements, where a batch gives bit for bit what one "
                   "sample at a time gives (dense FFN, float32 or int8 products, equal lengths, a multiple of 4); "
                   "interventions run one sample at a time")
        ->check(CLI::Range(std::int64_t(1), std::int64_t(4096)))->capture_default_str();
}

// --bos for the samples of --model, unless the experiment has its own --bos (a4_training_trace, a4_scale_sweep:
// whether the models they train see BOS). Added after the experiment's flags, so that its own wins.
inline void add_bos_flag(CLI::App& app, CommonOptions& o) {
    if (app.get_option_no_throw("--bos") != nullptr) return;
    app.add_option("--bos", o.bos,
                   "BOS first in the samples of --model: auto (the checkpoint's add_bos_token: GGUF "
                   "tokenizer.ggml.add_bos_token, or tokenizer_config.json; an absent key means no BOS), on (an "
                   "error when the checkpoint has no BOS id) or off; meta.json records the value used and where it "
                   "came from")
        ->check(CLI::IsMember({"auto", "on", "off"}))->capture_default_str();
}

inline std::string shell_output(const std::string& cmd) {
    std::string out;
    std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
    if (!p) return out;
    char buf[256];
    while (fgets(buf, sizeof buf, p.get())) out += buf;
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
}

inline std::string git_revision() {
    const std::string dir = SINKSCOPE_SOURCE_DIR;
    std::string rev = shell_output("git -C '" + dir + "' rev-parse HEAD 2>/dev/null");
    if (rev.empty()) return "unknown";
    if (!shell_output("git -C '" + dir + "' status --porcelain --untracked-files=no 2>/dev/null").empty()) rev += "+dirty";
    return rev;
}

// The current time as ISO 8601 UTC, e.g. 2026-12-05T07:30:00Z.
inline std::string utc_now() {
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&now, &tm);
    std::ostringstream os;
    os << std::put_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
    return os.str();
}

// One run of an experiment: output directory, meta.json, phase timings, progress.
class Run {
public:
    Run(std::string name, std::string claim, const CommonOptions& o, int argc, char** argv)
        : name_(std::move(name)), t0_(Clock::now()), phase_t0_(t0_) {
        out_ = o.out.empty() ? "out/" + name_ : o.out;
        fs::create_directories(out_);
        std::string cmd;
        for (int i = 0; i < argc; ++i) cmd += (i ? " " : "") + std::string(argv[i]);
        meta_ = {{"experiment", name_}, {"claim", claim}, {"command", cmd}, {"git_revision", git_revision()},
                 {"sinkscope_version", version()}, {"seed", o.seed}, {"smoke", o.smoke}, {"model", o.model},
                 {"weights", {{"storage", o.weights}, {"compute", o.compute}}}, {"forward_batch", o.forward_batch},
                 {"corpus", !o.tokens_file.empty() ? "token file " + o.tokens_file
                            : o.random_tokens ? "random token ids" : o.corpus}};
        if (o.random_init >= 0) meta_["null_model"] = {{"random_init_seed", o.random_init}};
        // The pre-registered rule set every verdict of this run is decided by (analysis/rule_table.hpp).
        meta_["rule_set"] = {{"version", analysis::kRuleSetVersion},
                             {"hash", analysis::rule_set_hash(analysis::rule_table(), analysis::kRuleSetVersion)}};
        std::cerr << "[" << name_ << "] " << claim << "\n";
    }
    const std::string& out() const { return out_; }
    std::string path(const std::string& file) const { return out_ + "/" + file; }
    json& config() { return meta_["config"]; }
    json& results() { return meta_["results"]; }
    json& meta() { return meta_; }

    void phase(const std::string& name) {
        close_phase();
        phase_name_ = name;
        phase_t0_ = Clock::now();
        std::cerr << "[" << name_ << "] " << name << "\n";
    }
    void progress(std::int64_t i, std::int64_t n, const std::string& what = "") const {
        const double s = std::chrono::duration<double>(Clock::now() - phase_t0_).count();
        std::cerr << "\r[" << name_ << "]   " << (what.empty() ? phase_name_ : what) << " " << i << "/" << n << " ("
                  << std::fixed << std::setprecision(1) << s << " s)" << std::flush;
        if (i == n) std::cerr << "\n";
    }
    void npy(const std::string& file, const std::vector<float>& data, const std::vector<std::size_t>& shape) const {
        io::write_npy(path(file), data, shape);
    }
    // Records a verdict (several verdicts make a list) and prints it.
    void verdict(const analysis::Verdict& v) {
        const json j = v.to_json();
        if (!meta_.contains("verdict")) meta_["verdict"] = j;
        else {
            if (!meta_["verdict"].is_array()) meta_["verdict"] = json::array({meta_["verdict"]});
            meta_["verdict"].push_back(j);
        }
        std::cerr << "[" << name_ << "] " << v.claim() << ": " << j["outcome"].get<std::string>() << " ("
                  << j["decided_by"].get<std::string>() << ")\n";
    }
    void finish() {
        close_phase();
        meta_["timings"]["total_seconds"] = std::chrono::duration<double>(Clock::now() - t0_).count();
        meta_["timings"]["finished_utc"] = utc_now();  // the run's date (docs/theory.md's table names it)
        std::ofstream(path("meta.json")) << meta_.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
        std::cerr << "[" << name_ << "] done in " << std::fixed << std::setprecision(1)
                  << meta_["timings"]["total_seconds"].get<double>() << " s; wrote " << out_ << "/\n";
    }

private:
    void close_phase() {
        if (phase_name_.empty()) return;
        meta_["timings"]["phases"][phase_name_] = std::chrono::duration<double>(Clock::now() - phase_t0_).count();
        phase_name_.clear();
    }
    std::string name_, out_, phase_name_;
    Clock::time_point t0_, phase_t0_;
    json meta_;
};

// What names an experiment: its name (out/<name>/, the stderr prefix, meta.json's "experiment"), the title
// --help prints first, and the claim it announces on stderr and records in meta.json.
struct Experiment {
    std::string name, title, claim;
};

// The main() of every experiment, around the part that is its own:
//   flags    add_flags(app, cfg): the experiment's flags, after the common ones (CommonOptions)
//   smoke    smoke_sizes(cfg): the test sizes, applied after parsing when --smoke is given
//   body     body(run, opt): the method, the measurements and the rule, with the Run (out/<name>/, meta.json)
//            already open; or body(opt, start) for an experiment that checks its flags before it opens the
//            Run (`Run run = start();`), so that a refused command line writes nothing.
// Exit status: CLI11's for --help and bad flags; 2 with the message on stderr when the body throws a
// `Caught` (sinkscope::Error, or std::exception where an experiment also reports the standard library's
// exceptions), and 2 with a clear message for any other std::exception, std::bad_alloc included; 0 when the
// body returns.
template <class Caught = Error, class Config, class AddFlags, class Smoke, class Body>
int run_experiment(int argc, char** argv, const Experiment& experiment, Config& cfg, AddFlags add_flags, Smoke smoke_sizes,
                   Body body) {
    CLI::App app{experiment.title};
    CommonOptions opt;
    add_common(app, opt);
    add_flags(app, cfg);
    add_bos_flag(app, opt);
    CLI11_PARSE(app, argc, argv);
    if (opt.smoke) smoke_sizes(cfg);
    try {
        try {
            if constexpr (std::is_invocable_v<Body&, Run&, const CommonOptions&>) {
                Run run(experiment.name, experiment.claim, opt, argc, argv);
                body(run, static_cast<const CommonOptions&>(opt));
            } else {
                body(static_cast<const CommonOptions&>(opt), [&] { return Run(experiment.name, experiment.claim, opt, argc, argv); });
            }
        } catch (const Caught& e) {
            std::cerr << e.what() << "\n";
            return 2;
        }
    } catch (const std::bad_alloc&) {
        // Where no check of the sizes came first (load_inputs checks the weights): a message, not an abort.
        std::cerr << "[" << experiment.name << "] out of memory (std::bad_alloc): try smaller sizes, --weights file, or "
                  << "--forward-batch 1\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "[" << experiment.name << "] error: " << e.what() << "\n";
        return 2;
    }
    return 0;
}

// A CSV writer: header once, then rows of values.
class Csv {
public:
    Csv(const std::string& path, const std::vector<std::string>& header) : f_(path) {
        require(bool(f_), "cannot write " + path);
        for (std::size_t i = 0; i < header.size(); ++i) f_ << (i ? "," : "") << header[i];
        f_ << "\n";
    }
    template <class... A>
    void row(const A&... v) {
        std::size_t i = 0;
        ((f_ << (i++ ? "," : "") << v), ...);
        f_ << "\n";
    }
    // A row whose length is known only at run time.
    void row_of(const std::vector<double>& v) {
        for (std::size_t i = 0; i < v.size(); ++i) f_ << (i ? "," : "") << v[i];
        f_ << "\n";
    }

private:
    std::ofstream f_;
};

// A comma-separated table read back from a file (--from-table: a table an experiment wrote, or a synthetic one):
// the header's column names and the cells of every non-empty row (a CRLF line end is dropped). An Error names
// the file, and the line and column of anything it cannot read; the `needed` columns must be present.
class CsvTable {
public:
    CsvTable(const std::string& path, const std::vector<std::string>& needed, const std::string& what = "--from-table")
        : path_(path), what_(what) {
        std::ifstream f(path);
        require(bool(f), what + ": cannot read " + path, {path, "", {}});
        std::string line;
        require(bool(std::getline(f, line)), what + ": " + path + " is empty", {path, "", {}});
        header_ = split(line);
        std::string list;
        for (const auto& n : needed) list += (list.empty() ? "" : ", ") + n;
        for (const auto& n : needed)
            require(column(n) >= 0, what + ": " + path + " has no column '" + n + "' (needs " + list + ")", {path, "", {}});
        for (std::int64_t n = 2; std::getline(f, line); ++n) {
            if (line.empty() || line == "\r") continue;
            rows_.push_back(split(line));
            lines_.push_back(n);
        }
        require(!rows_.empty(), what + ": " + path + " has no rows", {path, "", {}});
    }
    // The index of column `name`, or -1 when the header has none.
    std::int64_t column(const std::string& name) const {
        for (std::size_t i = 0; i < header_.size(); ++i)
            if (header_[i] == name) return std::int64_t(i);
        return -1;
    }
    std::size_t size() const { return rows_.size(); }
    const std::string& text(std::size_t row, std::int64_t c) const {
        require(c >= 0 && c < std::int64_t(rows_[row].size()), what_ + ": " + where(row, c) + " is missing", {path_, "", {}});
        return rows_[row][std::size_t(c)];
    }
    // The cell as a number; NaN for an absent column (c = -1).
    double number(std::size_t row, std::int64_t c) const {
        if (c < 0) return std::nan("");
        const std::string& cell = text(row, c);
        try {
            std::size_t used = 0;
            const double x = std::stod(cell, &used);
            require(used == cell.size(), what_ + ": " + where(row, c) + " is not a number", {path_, "", {}});
            return x;
        } catch (const std::logic_error&) {
            throw Error(what_ + ": " + where(row, c) + " is not a number: '" + cell + "'", {path_, "", {}});
        }
    }
    double number(std::size_t row, const std::string& name) const { return number(row, column(name)); }

private:
    static std::vector<std::string> split(std::string s) {
        if (!s.empty() && s.back() == '\r') s.pop_back();  // CRLF files (Python's csv module writes them)
        std::vector<std::string> out;
        std::stringstream ss(s);
        std::string x;
        while (std::getline(ss, x, ',')) out.push_back(x);
        return out;
    }
    std::string where(std::size_t row, std::int64_t c) const {
        return path_ + ":" + std::to_string(lines_[row]) + " column '" + (c >= 0 && c < std::int64_t(header_.size()) ? header_[std::size_t(c)] : "?") + "'";
    }
    std::string path_, what_;
    std::vector<std::string> header_;
    std::vector<std::vector<std::string>> rows_;
    std::vector<std::int64_t> lines_;
};

// The model, loaded once, its tokenizer when it has a usable one, and --bos resolved against the checkpoint.
struct Inputs {
    model::LoadedModel<float> m;
    std::unique_ptr<tokenizer::Tokenizer> tok;
    analysis::BosChoice bos;  // whether --model's samples start with BOS, the id, and where both came from
};

inline Inputs load_inputs(const CommonOptions& o, Run& run) {
    run.phase("load model");
    // After a check that the weights fit in memory (an Error naming what is needed, not a bad_alloc).
    const model::LoadOptions options = model::load_options_from(o.weights, o.compute);
    train::WeightMemory counted;
    Inputs in{train::load_within_memory(o.model, options, &counted), nullptr, {}};
    // The storage the load used ("auto" chooses float32 when it fits); what was asked stays beside it.
    run.meta()["weights"]["storage"] = counted.storage;
    if (counted.storage != o.weights) run.meta()["weights"]["asked"] = o.weights;
    if (!counted.reason.empty()) run.meta()["weights"]["reason"] = counted.reason;
    if (o.random_init >= 0) {
        in.m = train::random_like(in.m, std::uint64_t(o.random_init));  // dense float32, whatever the storage
        in.m.weights.set_precision(options.precision);                  // the same arithmetic for the products
        std::cerr << "  null control: random weights (seed " << o.random_init << ") in the model's layout\n";
    }
    if (!o.random_tokens && in.m.format != "sinkscope-checkpoint") {
        try { in.tok = std::make_unique<tokenizer::Tokenizer>(analysis::tokenizer_for(in.m)); }
        catch (const Error& e) { std::cerr << "  no usable tokenizer (" << e.message() << "): using random token ids\n"; }
    }
    // --bos against the checkpoint's own convention (the metadata survives --random-init).
    in.bos = analysis::resolve_bos(in.m, analysis::parse_bos_mode(o.bos));
    run.meta()["bos"] = in.bos.to_json();
    std::cerr << "  BOS: " << (in.bos.use ? "first in every sample" : "none") << " (--bos " << o.bos << ": " << in.bos.source
              << ")\n";
    run.meta()["model_config"] = in.m.config.describe();
    std::cerr << "  " << in.m.config.describe() << "\n";
    return in;
}

// The dense (out × in) matrix of a linear map: the Mat itself, or its file-type view (--weights file)
// dequantized into `buffer`, exactly as the forward's exact path reads it (io::dequantize).
inline const model::Mat<float>& dense_map(const model::Mat<float>& W, const model::QuantMatrix& view, model::Mat<float>& buffer) {
    if (view.empty()) return W;
    buffer.resize(view.rows, view.cols);
    io::dequantize<float>(view.type, view.data, view.rows * view.cols, buffer.data());
    return buffer;
}
// Layer l's SwiGLU weights for the quadratic-form theory (theory/quadratic_ffn.hpp), dense whatever the
// storage: file-type maps are dequantized and held here (a 7B layer: 3 × 18944 × 3584 floats, 0.8 GB).
struct LayerSwiGlu {
    // The layer, after checking that it has a gate: an ungated FFN (GELU, ReLU) has no quadratic form
    // h̃ᵀU_kh̃ of this kind, and the experiments that read one say so instead of naming an empty matrix.
    static const model::LayerWeights<float>& gated(const model::Weights<float>& w, std::int64_t l) {
        require(l >= 0 && l < std::int64_t(w.layers.size()), "layer " + std::to_string(l) + " is outside the model's " +
                                                                 std::to_string(w.layers.size()) + " layers");
        const auto& L = w.layers[std::size_t(l)];
        require(L.experts.empty(), "layer " + std::to_string(l) + "'s FFN is a mixture of experts: this measurement reads "
                                   "one dense gated FFN (theory/quadratic_ffn.hpp)");
        require(L.w_gate.size() > 0 || !L.w_gate_file.empty(),
                "layer " + std::to_string(l) + "'s FFN has no gate (W_gate): this measurement needs a gated FFN (SwiGLU or "
                "GeGLU, theory/quadratic_ffn.hpp), and this model's is ungated (e.g. GELU)");
        return L;
    }
    model::Mat<float> gate_buffer, up_buffer, down_buffer;  // empty for dense weights
    theory::SwiGluWeights<float> ffn;                       // references the weights or the buffers above
    LayerSwiGlu(const model::Weights<float>& w, std::int64_t l)
        : ffn(dense_map(gated(w, l).w_gate, w.layers[std::size_t(l)].w_gate_file, gate_buffer),
              dense_map(w.layers[std::size_t(l)].w_up, w.layers[std::size_t(l)].w_up_file, up_buffer),
              dense_map(w.layers[std::size_t(l)].w_down, w.layers[std::size_t(l)].w_down_file, down_buffer)) {}
};

// Runs `samples` through the model for read-only `hooks` written for one sample, o.forward_batch samples to a
// forward pass where that is bit-exact (model::forward_each), with progress: each.before(s), then sample
// s's activations, then each.after(s, logits), in sample order, exactly as one forward() per sample.
// meta.json's "forward_passes" counts the passes of every such measurement (batching made visible).
inline void measure_samples(Run& run, const CommonOptions& o, const model::Config& c, const model::Weights<float>& w,
                            const std::vector<Tokens>& samples, const model::HookSet<float>& hooks,
                            model::EachSequence<float> each, model::ForwardOptions options, const std::string& what = "samples") {
    const auto n = std::int64_t(samples.size());
    auto after = std::move(each.after);
    each.after = [&](std::int64_t s, const model::Mat<float>& logits) {
        if (after) after(s, logits);
        run.progress(s + 1, n, what);
    };
    const std::int64_t passes = model::forward_each<float>(c, w, samples, hooks, o.forward_batch, each, options);
    json& total = run.meta()["forward_passes"];
    total = (total.is_number() ? total.get<std::int64_t>() : 0) + passes;
}

// `n` samples of `length` tokens: consecutive pieces of the corpus, or uniform random ids when there is no
// tokenizer, with the checkpoint's BOS id first when `bos` (experiments pass in.bos.use, the resolved --bos;
// an Error when the checkpoint has no BOS id). Only a prefix of the corpus is tokenized, grown until it gives
// enough samples.
inline std::vector<Tokens> samples(const Inputs& in, const CommonOptions& o, std::int64_t length, std::int64_t n,
                                   bool bos, std::uint64_t stream = 0) {
    require(!bos || in.bos.id.has_value(), "BOS asked for but the checkpoint has no BOS token id (" + in.bos.id_source + ")",
            {in.m.path, "", {}});
    if (!o.tokens_file.empty()) {
        // Fixed sequences: the first `length` ids of each line (BOS first when `bos`).
        const auto seqs = analysis::read_token_file(o.tokens_file, in.m.config.vocab_size);
        std::vector<Tokens> out;
        for (const auto& q : seqs) {
            if (std::int64_t(out.size()) == n) break;
            Tokens s;
            if (bos) s.push_back(*in.bos.id);
            for (std::size_t i = 0; i < q.size() && std::int64_t(s.size()) < length; ++i) s.push_back(q[i]);
            if (std::int64_t(s.size()) == length) out.push_back(std::move(s));
        }
        require(!out.empty(), "no line of the token file has " + std::to_string(length) + " tokens", {o.tokens_file, "", {}});
        if (std::int64_t(out.size()) < n) std::cerr << "  token file gives only " << out.size() << " of " << n << " samples\n";
        return out;
    }
    if (!in.tok) {
        std::mt19937_64 rng(o.seed * 1000003ull + stream);
        std::uniform_int_distribution<std::int32_t> pick(0, std::int32_t(in.m.config.vocab_size - 1));
        std::vector<Tokens> out(n);
        for (auto& s : out) {
            if (bos) s.push_back(*in.bos.id);
            while (std::int64_t(s.size()) < length) s.push_back(pick(rng));
        }
        return out;
    }
    std::string path = o.corpus;
    if (!fs::exists(path)) {
        std::cerr << "  corpus " << path << " not found (run scripts/fetch_corpus.sh); using data/sample.txt\n";
        path = source_path("data/sample.txt");
    }
    // The tokenizer reads its BOS from the same keys; a checkpoint where they differ is refused, not guessed.
    require(!bos || in.tok->bos_id() == in.bos.id,
            "the tokenizer's BOS id differs from the checkpoint's (" + in.bos.id_source + ")", {in.m.path, "", {}});
    const std::string text = analysis::read_text_file(path);
    std::size_t bytes = std::size_t(std::max<std::int64_t>(4096, length * n * 8));
    for (;;) {
        const std::size_t take = std::min(bytes, text.size());
        auto s = analysis::token_samples(*in.tok, text.substr(0, take), length, n, bos);
        if (std::int64_t(s.size()) >= n || take == text.size()) {
            require(!s.empty(), "the corpus gives no sample of " + std::to_string(length) + " tokens");
            if (std::int64_t(s.size()) < n)
                std::cerr << "  corpus gives only " << s.size() << " of " << n << " samples\n";
            return s;
        }
        bytes *= 2;
    }
}

inline std::string decode_token(const Inputs& in, std::int32_t id) {
    if (!in.tok) return "#" + std::to_string(id);
    try { return in.tok->decode({id}); } catch (const Error&) { return "#" + std::to_string(id); }
}

// Forward options: no logits (they are not needed and cost a vocab-sized GEMM), optionally stopping early.
inline model::ForwardOptions no_logits(std::int64_t last_layer = -1) { return model::ForwardOptions{false, last_layer}; }

// The spike's trace (analysis/spike_trace.hpp), o.forward_batch samples to a forward pass where that is bit-exact.
using analysis::SpikeTrace;
inline SpikeTrace trace_spike(const Inputs& in, const CommonOptions& o, const std::vector<Tokens>& smp, double tau = 0.2) {
    return analysis::trace_spike(in.m.config, in.m.weights, smp, tau, o.forward_batch);
}
inline json trace_json(const SpikeTrace& s) { return analysis::to_json(s); }

inline std::vector<float> to_float(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

}  // namespace sinkscope::experiments
