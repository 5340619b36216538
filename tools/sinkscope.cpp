// sinkscope — command-line front end of the library.
//
//   sinkscope info MODEL                         architecture, shapes, tensor types
//   sinkscope capture MODEL (--text T | --tokens 1,2,3) [--bos | --no-bos] --hooks NAME[,NAME…] --out DIR
//                                                each hook as DIR/<name>.npy (float32) + DIR/meta.json
//   sinkscope stats MODEL (--text-file F | --text T | --tokens-file F) [--seq-len 64] [--samples 0] [--eps 0.3]
//                   [--bos] [--json F]           per-layer massive-activation and sink summary
//   sinkscope random-model MODEL --out F.safetensors [--seed 1]
//                                                a null control: MODEL's layout with random weights
// MODEL is a .gguf file, a Hugging Face directory (config.json + safetensors) or a sinkscope checkpoint
// (a training run's checkpoint.safetensors, or a random-model file; these carry no tokenizer: use
// --tokens-file, one sequence of ids per line).
#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include <sinkscope/analysis/summary.hpp>
#include <sinkscope/analysis/text.hpp>
#include <sinkscope/io/gguf.hpp>
#include <sinkscope/io/npy.hpp>
#include <sinkscope/model/forward.hpp>
#include <sinkscope/model/load.hpp>
#include <sinkscope/train/random_model.hpp>
#include <sinkscope/version.hpp>

namespace fs = std::filesystem;
using namespace sinkscope;

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string part; std::getline(ss, part, sep);)
        if (!part.empty()) out.push_back(part);
    return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

nlohmann::json config_json(const model::Config& c) {
    return {{"architecture", c.architecture}, {"n_layers", c.n_layers}, {"d_model", c.d_model}, {"n_heads", c.n_heads},
            {"n_kv_heads", c.n_kv_heads}, {"head_dim", c.head_dim}, {"d_ff", c.d_ff}, {"vocab_size", c.vocab_size},
            {"context_length", c.context_length}, {"norm", model::to_string(c.norm)}, {"norm_eps", c.norm_eps},
            {"ffn", model::to_string(c.ffn)}, {"positions", model::to_string(c.positions)},
            {"rope_layout", model::to_string(c.rope_layout)}, {"rope_base", c.rope_base}, {"qk_norm", c.qk_norm},
            {"qkv_bias", c.qkv_bias}, {"tied_embeddings", c.tied_embeddings}, {"sliding_window", c.sliding_window}};
}

int cmd_info(const std::string& path) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto m = model::load_model<float>(path);
    std::cout << "model:      " << path << " (" << m.format << ", loaded in " << seconds_since(t0) << " s)\n"
              << "config:     " << m.config.describe() << "\n"
              << "parameters: " << model::parameter_count(m.weights) << "\n";
    if (m.format == "gguf") {
        io::GgufFile f(path);
        std::map<std::string, int> types;
        for (const auto& t : f.tensors()) types[io::type_name(t.type)]++;
        std::cout << "GGUF v" << f.version() << ", " << f.tensors().size() << " tensors:";
        for (const auto& [k, v] : types) std::cout << " " << v << "×" << k;
        std::cout << "\n";
        for (const auto& t : f.tensors()) {
            if (t.name.rfind("blk.", 0) == 0 && t.name.rfind("blk.0.", 0) != 0) continue;  // layer 0 stands for all
            std::cout << "  " << t.name << " [";
            for (std::size_t i = 0; i < t.shape.size(); ++i) std::cout << (i ? ", " : "") << t.shape[i];
            std::cout << "] " << io::type_name(t.type) << "\n";
        }
        std::cout << "  (blk.1 … blk." << m.config.n_layers - 1 << " as blk.0)\n";
    }
    try {
        const auto tok = analysis::tokenizer_for(m);
        std::cout << "tokenizer:  byte-level BPE, " << tok.vocab_size() << " tokens, pre-tokenizer '" << tok.pre_tokenizer()
                  << "', BOS " << (tok.bos_id() ? std::to_string(*tok.bos_id()) : "none") << " (added by default: "
                  << (tok.add_bos_default() ? "yes" : "no") << ")\n";
    } catch (const Error& e) {
        std::cout << "tokenizer:  not usable (" << e.message() << "): pass token ids\n";
    }
    return 0;
}

std::vector<std::int32_t> input_tokens(const model::LoadedModel<float>& m, const std::string& text,
                                       const std::string& tokens, int bos_flag) {
    if (!tokens.empty()) {
        std::vector<std::int32_t> ids;
        for (const auto& s : split(tokens, ',')) {
            try { ids.push_back(std::int32_t(std::stoll(s))); }
            catch (const std::exception&) { throw Error("--tokens: '" + s + "' is not an integer"); }
        }
        return ids;
    }
    const auto tok = analysis::tokenizer_for(m);
    const bool bos = bos_flag == 0 ? tok.add_bos_default() : bos_flag > 0;
    return tok.encode(text, bos);
}

int cmd_capture(const std::string& path, const std::string& text, const std::string& tokens, int bos_flag,
                const std::string& hooks_arg, const std::string& out) {
    const auto m = train::load_for_analysis<float>(path);
    const auto ids = input_tokens(m, text, tokens, bos_flag);
    const auto all = model::hook_names(m.config);
    std::vector<std::string> wanted;
    for (const auto& h : split(hooks_arg, ',')) {
        if (std::find(all.begin(), all.end(), h) == all.end())
            throw Error("unknown hook '" + h + "' for this model (`sinkscope capture --list-hooks MODEL` lists them)");
        wanted.push_back(h);
    }
    model::HookSet<float> hooks;
    model::ActivationCache<float> cache;
    cache.attach(hooks, wanted);
    const auto t0 = std::chrono::steady_clock::now();
    model::forward(m.config, m.weights, ids, &hooks);
    const double elapsed = seconds_since(t0);
    fs::create_directories(out);
    for (const auto& [name, a] : cache.all()) {
        std::vector<std::size_t> shape(a.shape.begin(), a.shape.end());
        io::write_npy(out + "/" + name + ".npy", a.data.data(), shape);
    }
    nlohmann::json meta{{"sinkscope_version", version()}, {"model", path}, {"format", m.format},
                        {"tokens", ids}, {"hooks", wanted}, {"config", config_json(m.config)},
                        {"forward_seconds", elapsed}, {"dtype", "float32"}};
    std::ofstream(out + "/meta.json") << meta.dump(1) << "\n";
    std::cout << "captured " << cache.all().size() << " hooks over " << ids.size() << " tokens into " << out << "/\n";
    return 0;
}

// Samples for `stats`: fixed-length pieces of a text, or the first seq_len ids of each line of a token
// file (shorter lines are skipped).
std::vector<std::vector<std::int32_t>> stats_samples(const model::LoadedModel<float>& m, const std::string& text_file,
                                                     const std::string& text, const std::string& tokens_file,
                                                     std::int64_t seq_len, std::int64_t max_samples, bool bos) {
    if (tokens_file.empty()) {
        const auto tok = analysis::tokenizer_for(m);
        const std::string corpus = text_file.empty() ? text : analysis::read_text_file(text_file);
        return analysis::token_samples(tok, corpus, seq_len, max_samples, bos);
    }
    std::vector<std::vector<std::int32_t>> out;
    for (auto& s : analysis::read_token_file(tokens_file, m.config.vocab_size)) {
        if (max_samples > 0 && std::int64_t(out.size()) == max_samples) break;
        if (std::int64_t(s.size()) < seq_len) continue;
        s.resize(std::size_t(seq_len));
        out.push_back(std::move(s));
    }
    return out;
}

int cmd_stats(const std::string& path, const std::string& text_file, const std::string& text, const std::string& tokens_file,
              std::int64_t seq_len, std::int64_t max_samples, double eps, int bos_flag, const std::string& json_out) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto m = train::load_for_analysis<float>(path);
    std::cerr << "loaded " << path << " in " << seconds_since(t0) << " s: " << m.config.describe() << "\n";
    const bool bos = bos_flag > 0;  // Gu et al.'s convention: no BOS unless asked
    const auto samples = stats_samples(m, text_file, text, tokens_file, seq_len, max_samples, bos);
    require(!samples.empty(), "the input gives no sample of " + std::to_string(seq_len) + " tokens");
    model::HookSet<float> hooks;
    model::ResidualStats<float> rs(m.config.n_layers);
    model::AttentionStats<float> as(m.config.n_layers, m.config.n_heads);
    rs.attach(hooks);
    as.attach(hooks);
    const model::ForwardOptions no_logits{false, -1};
    const auto t1 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < samples.size(); ++i) {
        if (i) rs.begin_sample();
        as.begin_sample();
        model::forward(m.config, m.weights, samples[i], &hooks, no_logits);
        std::cerr << "\rsample " << i + 1 << "/" << samples.size() << " (" << seconds_since(t1) << " s)" << std::flush;
    }
    std::cerr << "\n";
    const auto summary = analysis::summarize(rs, as, eps);
    std::cout << "model " << path << "; " << samples.size() << " samples of " << seq_len << " tokens, "
              << (bos ? "with" : "without") << " BOS; residual stream after each block (hook_resid_post)\n";
    analysis::print_summary(std::cout, summary);
    if (!json_out.empty()) {
        auto j = analysis::to_json(summary);
        j["model"] = path;
        j["seq_len"] = seq_len;
        j["bos"] = bos;
        std::ofstream(json_out) << j.dump(1) << "\n";
    }
    return 0;
}

int cmd_random_model(const std::string& path, const std::string& out, std::uint64_t seed) {
    const auto m = train::load_for_analysis<float>(path);
    const auto r = train::random_like(m, seed);
    train::save_model(out, r.config, r.weights, {{"null_control", "random weights (train::init_weights, seed " +
                                                  std::to_string(seed) + ") in the layout of " + path}});
    std::cout << "wrote " << out << ": " << r.config.describe() << ", random weights (seed " << seed << ")\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"sinkscope " + std::string(version()) + ": attention sinks and massive activations in transformer LMs"};
    app.require_subcommand(1);

    std::string model_path, text, tokens, hooks, out, text_file, json_out, tokens_file;
    std::uint64_t seed = 1;
    bool bos = false, no_bos = false, list_hooks = false;
    std::int64_t seq_len = 64, samples = 0;
    double eps = 0.3;

    auto* info = app.add_subcommand("info", "architecture, shapes and tensor types of a checkpoint");
    info->add_option("MODEL", model_path, "a .gguf file or a Hugging Face directory")->required();

    auto* capture = app.add_subcommand("capture", "run a text and save hooked activations as .npy");
    capture->add_option("MODEL", model_path, "a .gguf file or a Hugging Face directory")->required();
    auto* text_opt = capture->add_option("--text", text, "input text (tokenized with the model's tokenizer)");
    capture->add_option("--tokens", tokens, "input token ids, comma-separated")->excludes(text_opt);
    auto* bos_opt = capture->add_flag("--bos", bos, "prepend BOS (default: the tokenizer's own setting)");
    capture->add_flag("--no-bos", no_bos, "never prepend BOS")->excludes(bos_opt);
    capture->add_option("--hooks", hooks, "hook names, comma-separated (TransformerLens names)");
    capture->add_option("--out", out, "output directory");
    capture->add_flag("--list-hooks", list_hooks, "print the hook names of this model and exit");

    auto* stats = app.add_subcommand("stats", "per-layer massive-activation and attention-sink summary");
    stats->add_option("MODEL", model_path, "a .gguf file or a Hugging Face directory")->required();
    auto* file_opt = stats->add_option("--text-file", text_file, "text to cut into samples");
    auto* stats_text_opt = stats->add_option("--text", text, "text to cut into samples")->excludes(file_opt);
    stats->add_option("--tokens-file", tokens_file, "token ids, one sequence per line (spaces or commas); "
                      "each line's first --seq-len ids make a sample")->excludes(file_opt)->excludes(stats_text_opt);
    stats->add_option("--seq-len", seq_len, "tokens per sample (Gu et al.: 64)")->check(CLI::Range(2, 1 << 20));
    stats->add_option("--samples", samples, "at most this many samples (0: all the text gives)");
    stats->add_option("--eps", eps, "sink threshold ε on α₀ (Gu et al.: 0.3)")->check(CLI::Range(0.0, 1.0));
    stats->add_flag("--bos", bos, "prepend BOS to every sample (default: none, as Gu et al.)");
    stats->add_option("--json", json_out, "also write the summary as JSON here");

    auto* random_model = app.add_subcommand("random-model", "null control: a model's layout with random weights, "
                                                            "written as a sinkscope checkpoint");
    random_model->add_option("MODEL", model_path, "a .gguf file or a Hugging Face directory")->required();
    random_model->add_option("--out", out, "output file (.safetensors)")->required();
    random_model->add_option("--seed", seed, "seed of the random weights")->capture_default_str();

    CLI11_PARSE(app, argc, argv);
    try {
        if (*info) return cmd_info(model_path);
        if (*capture) {
            if (list_hooks) {
                for (const auto& n : model::hook_names(train::load_for_analysis<float>(model_path).config)) std::cout << n << "\n";
                return 0;
            }
            if (text.empty() && tokens.empty()) throw Error("capture: give --text or --tokens");
            if (hooks.empty()) throw Error("capture: give --hooks");
            if (out.empty()) throw Error("capture: give --out");
            return cmd_capture(model_path, text, tokens, bos ? 1 : (no_bos ? -1 : 0), hooks, out);
        }
        if (*stats) {
            if (text.empty() && text_file.empty() && tokens_file.empty())
                throw Error("stats: give --text-file, --text or --tokens-file");
            if (bos && !tokens_file.empty()) throw Error("stats: --bos applies to text; put BOS into the token file instead");
            return cmd_stats(model_path, text_file, text, tokens_file, seq_len, samples, eps, bos ? 1 : -1, json_out);
        }
        if (*random_model) {
            if (fs::path(out).extension() != ".safetensors") throw Error("random-model: --out must end in .safetensors", {out, "", {}});
            return cmd_random_model(model_path, out, seed);
        }
    } catch (const Error& e) {
        std::cerr << e.what() << "\n";
        return 2;
    }
    return 0;
}
