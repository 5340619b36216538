// Plumbing shared by the experiment executables: common CLI flags, inputs (model, corpus samples),
// outputs (.npy / .csv / meta.json with configuration, seed, git revision and timings), progress on
// stderr, and tracing a spike through Paper B's sub-blocks with library calls. No analysis math lives
// here: numbers come from sinkscope::model, sinkscope::analysis and sinkscope::theory.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <sinkscope/analysis/spikes.hpp>
#include <sinkscope/analysis/text.hpp>
#include <sinkscope/io/npy.hpp>
#include <sinkscope/model/forward.hpp>
#include <sinkscope/model/hooks.hpp>
#include <sinkscope/model/load.hpp>
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
};

inline void add_common(CLI::App& app, CommonOptions& o) {
    app.add_option("--model", o.model, "checkpoint: .gguf file or Hugging Face directory")->capture_default_str();
    app.add_option("--corpus", o.corpus, "plain-text corpus to cut samples from")->capture_default_str();
    app.add_option("--out", o.out, "output directory (default out/<experiment>)");
    app.add_flag("--smoke", o.smoke, "tiny sizes (seconds), for the test suite");
    app.add_flag("--random-tokens", o.random_tokens, "sample uniform random token ids instead of text");
    app.add_option("--seed", o.seed, "random seed")->capture_default_str();
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
                 {"corpus", o.random_tokens ? "random token ids" : o.corpus}};
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
    void finish() {
        close_phase();
        meta_["timings"]["total_seconds"] = std::chrono::duration<double>(Clock::now() - t0_).count();
        std::ofstream(path("meta.json")) << meta_.dump(1) << "\n";
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

private:
    std::ofstream f_;
};

// The model, loaded once, and its tokenizer when it has a usable one.
struct Inputs {
    model::LoadedModel<float> m;
    std::unique_ptr<tokenizer::BpeTokenizer> tok;
};

inline Inputs load_inputs(const CommonOptions& o, Run& run) {
    run.phase("load model");
    Inputs in{model::load_model<float>(o.model), nullptr};
    if (!o.random_tokens) {
        try { in.tok = std::make_unique<tokenizer::BpeTokenizer>(analysis::tokenizer_for(in.m)); }
        catch (const Error& e) { std::cerr << "  no usable tokenizer (" << e.message() << "): using random token ids\n"; }
    }
    run.meta()["model_config"] = in.m.config.describe();
    std::cerr << "  " << in.m.config.describe() << "\n";
    return in;
}

// `n` samples of `length` tokens: consecutive pieces of the corpus (BOS first when `bos`), or uniform
// random ids (BOS first when `bos` and the model has one) when there is no tokenizer. Only a prefix of
// the corpus is tokenized, grown until it gives enough samples.
inline std::vector<Tokens> samples(const Inputs& in, const CommonOptions& o, std::int64_t length, std::int64_t n,
                                   bool bos, std::uint64_t stream = 0) {
    if (!in.tok) {
        std::mt19937_64 rng(o.seed * 1000003ull + stream);
        std::uniform_int_distribution<std::int32_t> pick(0, std::int32_t(in.m.config.vocab_size - 1));
        std::vector<Tokens> out(n);
        for (auto& s : out) {
            if (bos) s.push_back(1 < in.m.config.vocab_size ? 1 : 0);
            while (std::int64_t(s.size()) < length) s.push_back(pick(rng));
        }
        return out;
    }
    std::string path = o.corpus;
    if (!fs::exists(path)) {
        std::cerr << "  corpus " << path << " not found (run scripts/fetch_corpus.sh); using data/sample.txt\n";
        path = source_path("data/sample.txt");
    }
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

// Every residual state H_0 … H_{2L} of one sequence (each T × d, row-major).
inline std::vector<std::vector<float>> residual_states(const Inputs& in, const Tokens& tokens, std::int64_t last_layer = -1) {
    const auto& c = in.m.config;
    const std::int64_t L = last_layer < 0 ? c.n_layers : last_layer + 1;
    std::vector<std::string> names{analysis::initial_state_hook()};
    for (std::int64_t i = 1; i <= 2 * L; ++i) names.push_back(analysis::sub_block(i, c.n_layers).state_hook);
    model::HookSet<float> hooks;
    model::ActivationCache<float> cache;
    cache.attach(hooks, names);
    model::forward(c, in.m.weights, tokens, &hooks, no_logits(L - 1));
    std::vector<std::vector<float>> out;
    for (const auto& n : names) out.push_back(cache[n].data);
    return out;
}

// The spike of a model on some samples: the largest |H_i| over every sub-block, position and sample,
// the trajectory of its coordinate through the sub-blocks and Paper B's step classification.
struct SpikeTrace {
    bool found = false;                   // did any state carry a massive activation (Sun et al.)?
    std::int64_t channel = -1, position = -1, sample = -1, peak_sub_block = -1;
    std::vector<double> trajectory;       // x_0 … x_{2L} at (position, channel), mean over samples
    analysis::StepClassification steps;
    std::int64_t step_up_layer = -1;      // layer of the first step-up sub-block (−1: none)
};

inline SpikeTrace trace_spike(const Inputs& in, const std::vector<Tokens>& smp, double tau = 0.2) {
    const auto& c = in.m.config;
    const std::int64_t d = c.d_model;
    SpikeTrace s;
    double best = -1;
    std::vector<std::vector<std::vector<float>>> states;
    for (std::size_t k = 0; k < smp.size(); ++k) {
        states.push_back(residual_states(in, smp[k]));
        const auto& st = states.back();
        for (std::size_t i = 0; i < st.size(); ++i) {
            const std::int64_t n = std::int64_t(st[i].size()) / d;
            const auto e = analysis::massive_entries(st[i].data(), n, d);
            if (!e.empty()) s.found = true;
            for (std::int64_t j = 0; j < std::int64_t(st[i].size()); ++j)
                if (std::abs(st[i][j]) > best) {
                    best = std::abs(st[i][j]);
                    s.channel = j % d; s.position = j / d; s.sample = std::int64_t(k); s.peak_sub_block = std::int64_t(i);
                }
        }
    }
    // Mean trajectory over the samples at (position, channel) (position 0 is in every sample).
    s.trajectory.assign(states[0].size(), 0.0);
    std::int64_t used = 0;
    for (const auto& st : states) {
        if (std::int64_t(st[0].size()) / d <= s.position) continue;
        for (std::size_t i = 0; i < st.size(); ++i) s.trajectory[i] += st[i][s.position * d + s.channel];
        ++used;
    }
    for (auto& x : s.trajectory) x /= double(std::max<std::int64_t>(used, 1));
    s.steps = analysis::classify_steps(s.trajectory, tau);
    if (!s.steps.step_up.empty()) s.step_up_layer = analysis::sub_block(s.steps.step_up.front(), c.n_layers).layer;
    return s;
}

inline json trace_json(const SpikeTrace& s) {
    return {{"found_massive", s.found}, {"channel", s.channel}, {"position", s.position},
            {"peak_sub_block", s.peak_sub_block}, {"peak", s.steps.peak}, {"step_up", s.steps.step_up},
            {"step_down", s.steps.step_down}, {"in_between_ratio", s.steps.in_between_ratio},
            {"tau", s.steps.tau}, {"step_up_layer", s.step_up_layer}};
}

inline std::vector<float> to_float(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

}  // namespace sinkscope::experiments
