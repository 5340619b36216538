// sinkscope — command-line front end of the library.
//
//   sinkscope info MODEL [--weights auto|float32|file|bf16] [--compute exact|int8|bf16]   architecture, shapes, tensor types
//   sinkscope capture MODEL (--text T | --tokens 1,2,3) [--bos auto|on|off | --no-bos] --hooks NAME[,NAME…] --out DIR
//                   [--weights auto|float32|file|bf16] [--compute exact|int8|bf16]
//                                                each hook as DIR/<name>.npy (float32) + DIR/meta.json;
//                                                --weights file keeps the linear maps of a GGUF or HF
//                                                directory in their file types (memory-mapped), --compute
//                                                their products' arithmetic; --compute bf16: dense, BF16 and
//                                                block-typed products with bf16 inputs and weights, float32
//                                                accumulation (oneDNN);
//                                                --weights bf16 rounds the maps to BF16 once at load (half
//                                                the memory; with --compute bf16 the same products, faster);
//                                                hooks stay float32
//   sinkscope lens MODEL (--text T | --tokens 1,2,3) [--target TOKEN] [--top 5] --out DIR
//                                                the logit lens: every layer's residual stream through the
//                                                final norm and the unembedding; top-k tokens per layer and
//                                                position, the target's rank and probability (DIR/*.npy +
//                                                DIR/summary.json; a table of the last position on stdout)
//   sinkscope dla MODEL (--text T | --tokens 1,2,3) --target TOKEN [--contrast TOKEN] [--position -1] --out DIR
//                                                direct logit attribution of the target's logit (minus the
//                                                contrast's) at a position: the embeddings, each head, each
//                                                FFN (each expert), the biases, with the norms frozen; each
//                                                head split by source position (DIR/*.npy + DIR/summary.json)
//                                                TOKEN: a token id, or a text that is one token
//   sinkscope atp MODEL (--text T | --tokens 1,2,3) (--corrupted-text T | --corrupted-tokens 1,2,3)
//                   [--metric logit|logprob] --target TOKEN [--contrast TOKEN] [--position -1] | --metric loss
//                   [--sites resid_pre,attn_out,z,mlp_out]
//                   [--channels 1,2 | --spike-channels] [--exact K] [--seed 1] --out DIR
//                                                attribution patching: for every site (a block's input, its
//                                                attention or FFN output at a position, a head's z at a
//                                                position, a channel group of the block's input) the first-
//                                                order estimate of patching it from the corrupted run into the
//                                                clean one, on logit(target) [− logit(contrast)] (--metric logprob:
//                                                of log-probabilities; --metric loss: the next-token loss); --exact K
//                                                patches the K sites of largest |estimate| and K random
//                                                others for real and reports Spearman's ρ between the two
//                                                (DIR/estimate*.npy, exact*.npy, sites.csv + DIR/summary.json)
//   sinkscope view MODEL (--text T | --tokens 1,2,3) [--top-channels 4] --out DIR
//                                                one self-contained HTML page, DIR/index.html: α₀ per (layer,
//                                                head), each head's pattern with token hover, residual norms
//                                                and their largest channels, the logit lens; the numbers also
//                                                as DIR/*.npy + DIR/summary.json (analysis/head_view.hpp)
//   sinkscope stats MODEL (--text-file F | --text T | --tokens-file F) [--seq-len 64] [--samples 0] [--eps 0.3]
//                   [--bos auto|on|off] [--shard I/N] [--json F] [--batch 8] [--weights auto|float32|file|bf16] [--compute exact|int8|bf16]
//                                                per-layer massive-activation and sink summary; with
//                                                --shard only the I-th (0-based) of N equal contiguous
//                                                parts of the samples; --json also holds the reducers' state;
//                                                --batch samples per forward pass (where that is exact)
//   sinkscope merge F1 F2 … [--json OUT]         merges the shards' --json files of one stats run: the
//                                                table and the JSON of the whole run
//   sinkscope random-model MODEL --out F.safetensors [--seed 1]
//                                                a null control: MODEL's layout with random weights
//   sinkscope planted massive --out F.safetensors [--twin] [--dose 1] [--seed 1] [--like MODEL]
//                                                a planted massive activation (train/planted.hpp,
//                                                theory/planted_massive.md): a small Llama layout, or
//                                                MODEL's; --twin: the step-up unit switched off
//   sinkscope planted sink-keys --out F.safetensors [--twin] [--dose 1] [--seed 1] [--layout llama|layernorm-gelu]
//                                                sink heads whose keys read the planted spike channel
//                                                (train/planted_sink_keys.hpp, theory/planted_sink_keys.md);
//                                                --twin: those keys blind to the spike channel
//   sinkscope planted p0-circuit --out F.safetensors [--twin] [--dose 1] [--seed 1] [--layout llama|layernorm-gelu]
//                                                a position-0 circuit in blocks 0-1 whose heads each carry it
//                                                (train/planted_p0_circuit.hpp, theory/planted_p0_circuit.md);
//                                                --twin: head 0 alone carries it
//   sinkscope rules [--json]                     the pre-registered verdict rules: the set's hash and each
//                                                rule's (--json: every rule's canonical JSON too)
//   sinkscope census CKPT… --out DIR … | --merge DIR   many checkpoints' stats, one record each (census_cli.hpp)
// MODEL is a .gguf file, a Hugging Face directory (config.json + safetensors) or a sinkscope checkpoint
// (a training run's checkpoint.safetensors, or a random-model file; these carry no tokenizer: use
// --tokens-file, one sequence of ids per line).
// --bos: auto (the default) puts BOS first when the checkpoint's add_bos_token says so (an absent key: no BOS),
// on and off decide; a bare --bos means on, --no-bos off (analysis/bos.hpp). It applies to text; the JSON
// written records the value used and where it came from.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <sinkscope/analysis/bos.hpp>
#include <sinkscope/analysis/logit_attribution.hpp>
#include <sinkscope/analysis/logit_lens.hpp>
#include <sinkscope/analysis/head_view.hpp>
#include <sinkscope/analysis/head_view_html.hpp>
#include <sinkscope/analysis/rule_table.hpp>
#include <sinkscope/analysis/spikes.hpp>
#include <sinkscope/analysis/stats_run.hpp>
#include <sinkscope/analysis/summary.hpp>
#include <sinkscope/analysis/text.hpp>
#include <sinkscope/io/gguf.hpp>
#include <sinkscope/io/memory.hpp>
#include <sinkscope/io/npy.hpp>
#include <sinkscope/model/batch.hpp>
#include <sinkscope/model/forward.hpp>
#include <sinkscope/model/load.hpp>
#include <sinkscope/model/config_io.hpp>
#include <sinkscope/core/measures.hpp>
#include <sinkscope/train/attribution_patching.hpp>
#include <sinkscope/train/planted_export.hpp>
#include <sinkscope/train/random.hpp>
#include <sinkscope/train/random_model.hpp>
#include <sinkscope/version.hpp>

#include "census_cli.hpp"

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

// What the weights of the model being loaded or run take in memory (counted before the load starts), for
// main's out-of-memory message.
train::WeightMemory g_weights;

// The model at `path`, after checking that its weights fit in the memory available (train::load_within_memory).
model::LoadedModel<float> load_checked(const std::string& path, const model::LoadOptions& options = {}) {
    return train::load_within_memory(path, options, &g_weights);
}

// --weights file|float32 and --compute exact|int8|bf16 as LoadOptions (model::load_options_from: an Error,
// before anything is loaded, for bf16 without oneDNN).
model::LoadOptions load_options(const std::string& weights, const std::string& compute) {
    return model::load_options_from(weights, compute);
}

// meta.json's "compute": the arithmetic the forward used.
std::string compute_name(const model::Weights<float>& w) {
    if (w.file_type()) return model::to_string(w.compute);
    return w.precision == model::MatmulPrecision::bf16 ? "bf16" : "exact";
}

// info's "weights:" line: how the linear maps are held and multiplied.
std::string storage_description(const model::Weights<float>& w) {
    switch (w.storage) {
        case model::WeightStorage::bf16: return "linear maps rounded to BF16 at load, " + compute_name(w) + " products";
        case model::WeightStorage::file_type:
            return "linear maps in their file types, memory-mapped, " + compute_name(w) + " products";
        case model::WeightStorage::float32: break;
    }
    return w.precision == model::MatmulPrecision::bf16 ? "float32, products with bf16 inputs" : "float32";
}

// "sliding window 8 (layers 0, 2), global (layers 1, 3)": each layer's attention span, grouped.
std::string attention_spans(const model::Config& c) {
    std::map<std::pair<std::int64_t, double>, std::vector<std::int64_t>> groups;  // (window, RoPE base) → layers
    for (std::int64_t l = 0; l < c.n_layers; ++l) groups[{c.window_at(l), c.rope_base_at(l)}].push_back(l);
    std::set<double> bases;
    for (std::int64_t l = 0; l < c.n_layers; ++l) bases.insert(c.rope_base_at(l));
    std::ostringstream os;
    bool first = true;
    for (const auto& [key, layers] : groups) {
        os << (first ? "" : "; ") << (key.first ? "sliding window " + std::to_string(key.first) : std::string("global"));
        if (c.positions == model::PositionKind::rope && bases.size() > 1) os << ", RoPE base " << key.second;
        os << " (" << (layers.size() == std::size_t(c.n_layers) ? std::string("every layer") : "layers ");
        if (layers.size() != std::size_t(c.n_layers))
            for (std::size_t i = 0; i < layers.size(); ++i) os << (i ? ", " : "") << layers[i];
        os << ")";
        first = false;
    }
    return os.str();
}

// The parameter table's rows this model has (model/parameter_table.hpp), block 0 and expert 0 standing for
// all: the names checkpoints, visit_parameters and the Python module's parameter() use, with each shape and
// how it is held (dense float, or a view in its file type).
void print_parameter_rows(const model::LoadedModel<float>& m) {
    const auto& c = m.config;
    std::size_t shown = 0;
    model::for_each_parameter_row<float>(m.weights, [&](const auto& row, const std::string& name, const auto& owner) {
        if (name.rfind("blocks.", 0) == 0 && name.rfind("blocks.0.", 0) != 0) return;
        if (name.find(".experts.") != std::string::npos && name.find(".experts.0.") == std::string::npos) return;
        std::string held;
        row.with_tensor(owner, [&](const auto& t) { if (t.size()) held = "float32"; });
        if (held.empty() && row.view && !(owner.*row.view).empty()) held = io::type_name((owner.*row.view).type);
        if (held.empty()) return;  // not used by this config (or tied: the output head is the embedding)
        std::cout << (shown++ ? "" : "  the parameter table's rows (blocks.0 stands for every block):\n") << "    " << name
                  << " [" << row.rows(c) << (row.is_matrix() ? ", " + std::to_string(row.cols(c)) : std::string()) << "] "
                  << held << "\n";
    });
}

int cmd_info(const std::string& path, const model::LoadOptions& options) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto m = load_checked(path, options);
    std::cout << "model:      " << path << " (" << m.format << ", loaded in " << seconds_since(t0) << " s)\n"
              << "weights:    " << storage_description(m.weights)
              << " (" << io::format_gib(g_weights.bytes) << ")\n"
              << "config:     " << m.config.describe() << "\n"
              << "attention:  " << attention_spans(m.config) << "\n"
              << "parameters: " << model::parameter_count(m.weights) << "\n";
    print_parameter_rows(m);
    if (!m.config.cpu_only_switches().empty())
        std::cout << "backends:   CPU only (CUDA does not implement " << m.config.cpu_only_switches() << ")\n";
    if (!m.config.backward_missing_switches().empty())
        std::cout << "gradients:  none (the backward does not implement " << m.config.backward_missing_switches() << ")\n";
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
        std::cout << "tokenizer:  " << tok.describe() << ", " << tok.vocab_size() << " tokens, BOS "
                  << (tok.bos_id() ? std::to_string(*tok.bos_id()) : "none") << " (added by default: "
                  << (tok.add_bos_default() ? "yes" : "no") << ")\n";
    } catch (const Error& e) {
        std::cout << "tokenizer:  not usable (" << e.message() << "): pass token ids\n";
    }
    return 0;
}

// The token ids of --text (BOS first as --bos resolves) or --tokens (as given); `bos` records the decision.
std::vector<std::int32_t> input_tokens(const model::LoadedModel<float>& m, const std::string& text,
                                       const std::string& tokens, analysis::BosMode mode, analysis::BosChoice& bos) {
    if (!tokens.empty()) {
        require(mode != analysis::BosMode::on, "capture: --bos on applies to --text; put the BOS id into --tokens instead");
        bos = analysis::BosChoice{mode, false, std::nullopt, "--tokens: the ids as given", ""};
        std::vector<std::int32_t> ids;
        for (const auto& s : split(tokens, ',')) {
            try { ids.push_back(std::int32_t(std::stoll(s))); }
            catch (const std::exception&) { throw Error("--tokens: '" + s + "' is not an integer"); }
        }
        return ids;
    }
    const auto tok = analysis::tokenizer_for(m);
    bos = analysis::resolve_bos(m, mode);
    require(!bos.use || tok.bos_id() == bos.id, "the tokenizer's BOS id differs from the checkpoint's (" + bos.id_source + ")",
            {m.path, "", {}});
    return tok.encode(text, bos.use);
}

int cmd_capture(const std::string& path, const std::string& text, const std::string& tokens, analysis::BosMode bos_mode,
                const std::string& hooks_arg, const std::string& out, const model::LoadOptions& options) {
    // Checked before the model is loaded, so a bad --out costs nothing.
    if (fs::exists(out) && !fs::is_directory(out))
        throw Error("capture: --out must name a directory (new or existing), and this is an existing file", {out, "", {}});
    const auto m = load_checked(path, options);
    analysis::BosChoice bos;
    const auto ids = input_tokens(m, text, tokens, bos_mode, bos);
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
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec) throw Error("capture: cannot create the output directory: " + ec.message(), {out, "", {}});
    for (const auto& [name, a] : cache.all()) {
        std::vector<std::size_t> shape(a.shape.begin(), a.shape.end());
        io::write_npy(out + "/" + name + ".npy", a.data.data(), shape);
    }
    nlohmann::json meta{{"sinkscope_version", version()}, {"model", path}, {"format", m.format},
                        {"tokens", ids}, {"hooks", wanted}, {"config", model::config_to_json(m.config)},
                        {"forward_seconds", elapsed}, {"dtype", "float32"},
                        {"weights", model::to_string(m.weights.storage)},
                        {"compute", compute_name(m.weights)}, {"bos", bos.to_json()}};
    if (!g_weights.reason.empty()) meta["weights_reason"] = g_weights.reason;  // --weights auto chose file types
    std::ofstream meta_out(out + "/meta.json");
    meta_out << meta.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    if (!meta_out) throw Error("capture: cannot write", {out + "/meta.json", "", {}});
    std::cout << "captured " << cache.all().size() << " hooks over " << ids.size() << " tokens into " << out << "/\n";
    return 0;
}

void write_json(const std::string& path, const nlohmann::json& j);

// --target / --contrast: a token id, or a text the model's tokenizer encodes (without BOS) as one token.
std::int32_t token_arg(const model::LoadedModel<float>& m, const std::string& what, const std::string& arg) {
    try {
        std::size_t used = 0;
        const long long id = std::stoll(arg, &used);
        if (used == arg.size()) {
            require(id >= 0 && id < m.config.vocab_size, what + ": token id " + arg + " is outside the vocabulary [0, " +
                                                             std::to_string(m.config.vocab_size) + ")");
            return std::int32_t(id);
        }
    } catch (const std::logic_error&) {
    }
    const auto ids = analysis::tokenizer_for(m).encode(arg, false);
    require(ids.size() == 1, what + ": '" + arg + "' is " + std::to_string(ids.size()) +
                                 " tokens, not one (give a token id, or a text that is one token)");
    return ids[0];
}

// The decoded text of a token, or "" where the model has no usable tokenizer. Building a tokenizer reads
// the whole vocabulary (about 0.1 s for SmolLM2's 49,152 tokens), so the tokenizer of the last model asked
// about is kept, keyed by the model's address (each command loads one model and keeps it to the end):
// `view` decodes hundreds of tokens, and rebuilding it for each took 27 s for one page.
std::string token_text(const model::LoadedModel<float>& m, std::int32_t id) {
    static const model::LoadedModel<float>* cached_for = nullptr;
    static std::optional<tokenizer::Tokenizer> tok;
    if (cached_for != &m) {
        tok.reset();
        try { tok.emplace(analysis::tokenizer_for(m)); }
        catch (const Error&) {}
        cached_for = &m;
    }
    if (!tok) return "";
    try { return tok->decode({id}); }
    catch (const Error&) { return ""; }
}

void make_out_dir(const std::string& what, const std::string& out) {
    if (fs::exists(out) && !fs::is_directory(out))
        throw Error(what + ": --out must name a directory (new or existing), and this is an existing file", {out, "", {}});
}

void create_out_dir(const std::string& what, const std::string& out) {
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec) throw Error(what + ": cannot create the output directory: " + ec.message(), {out, "", {}});
}

nlohmann::json run_meta(const std::string& path, const model::LoadedModel<float>& m, const std::vector<std::int32_t>& ids) {
    nlohmann::json meta{{"sinkscope_version", version()}, {"model", path}, {"format", m.format}, {"tokens", ids},
                        {"config", model::config_to_json(m.config)}};
    return meta;
}

// The page's pattern bytes grow as L·H·P²/2: beyond this a browser struggles (30 × 9 heads at 512
// positions would be 35 MB); a longer text is an error that says so.
constexpr std::int64_t kViewMaxPatternBytes = 24LL << 20;

int cmd_view(const std::string& path, const std::string& text, const std::string& tokens, analysis::BosMode bos_mode,
             std::int64_t top_channels, const std::string& out) {
    make_out_dir("view", out);
    const auto m = load_checked(path);  // float32: the lens reads the output head densely
    analysis::BosChoice bos;
    const auto ids = input_tokens(m, text, tokens, bos_mode, bos);
    const std::int64_t P = std::int64_t(ids.size()) + (m.config.attention == model::AttentionKind::sink_token ? 1 : 0);
    const std::int64_t bytes = m.config.n_layers * m.config.n_heads * P * (P + 1) / 2;
    require(bytes <= kViewMaxPatternBytes,
            "view: " + std::to_string(ids.size()) + " tokens give " + std::to_string(bytes >> 20) + " MiB of attention "
            "patterns for " + std::to_string(m.config.n_layers) + " layers x " + std::to_string(m.config.n_heads) +
            " heads, more than the page's " + std::to_string(kViewMaxPatternBytes >> 20) + " MiB: give a shorter text");
    const auto t0 = std::chrono::steady_clock::now();
    const auto v = analysis::head_view(m.config, m.weights, ids, {top_channels, 3});
    create_out_dir("view", out);
    nlohmann::json meta = run_meta(path, m, ids);
    meta["bos"] = bos.to_json();
    meta["forward_seconds"] = seconds_since(t0);
    const std::string page = analysis::head_view_html(v, [&](std::int32_t id) { return token_text(m, id); }, ids,
                                                      {{"model", fs::path(path).filename().string()}, {"tokens", ids.size()}});
    {
        std::ofstream f(out + "/index.html", std::ios::binary);
        f << page;
        if (!f) throw Error("view: cannot write", {out + "/index.html", "", {}});
    }
    const std::size_t L = std::size_t(v.layers), H = std::size_t(v.heads), Pu = std::size_t(v.positions),
                      R = v.points.size(), K = std::size_t(v.top_channels);
    const std::vector<float> alpha0(v.alpha0.begin(), v.alpha0.end());  // float32 .npy; the doubles in summary.json
    io::write_npy(out + "/alpha0.npy", alpha0.data(), {L, H});
    io::write_npy(out + "/pattern.npy", v.pattern.data(), {L, H, Pu, Pu});
    io::write_npy(out + "/resid_norm.npy", v.resid_norm.data(), {R, Pu});
    io::write_npy(out + "/top_channel.npy", v.top_channel.data(), {R, Pu, K});
    io::write_npy(out + "/top_value.npy", v.top_value.data(), {R, Pu, K});
    meta["points"] = v.points;
    meta["sink_slots"] = v.sink_slots;
    meta["alpha0"] = v.alpha0;
    meta["files"] = {"index.html", "alpha0.npy", "pattern.npy", "resid_norm.npy", "top_channel.npy", "top_value.npy"};
    meta["page_bytes"] = page.size();
    write_json(out + "/summary.json", meta);
    std::int64_t sinks = 0;
    for (const double a : v.alpha0) sinks += measures::is_sink(a);
    std::cout << "view: " << out << "/index.html (" << page.size() / 1024 << " KiB; " << v.layers << " layers x " << v.heads
              << " heads, " << v.positions << " positions, " << sinks << " sink heads with alpha0 > " << measures::kSinkEps << ")\n";
    return 0;
}

int cmd_lens(const std::string& path, const std::string& text, const std::string& tokens, analysis::BosMode bos_mode, const std::string& target,
             std::int64_t top, const std::string& out) {
    make_out_dir("lens", out);
    const auto m = load_checked(path);  // float32: the lens reads the output head densely
    analysis::BosChoice bos;
    const auto ids = input_tokens(m, text, tokens, bos_mode, bos);
    const std::int32_t tid = target.empty() ? -1 : token_arg(m, "lens --target", target);
    const auto lens = analysis::logit_lens(m.config, m.weights, ids, {top, tid});
    create_out_dir("lens", out);
    const std::size_t R = lens.points.size(), T = std::size_t(lens.positions), K = std::size_t(lens.top_k);
    io::write_npy(out + "/top_tokens.npy", lens.top_tokens.data(), {R, T, K});
    io::write_npy(out + "/top_probs.npy", lens.top_probs.data(), {R, T, K});
    if (tid >= 0) {
        const std::vector<std::int32_t> rank(lens.target_rank.begin(), lens.target_rank.end());
        io::write_npy(out + "/target_rank.npy", rank.data(), {R, T});
        io::write_npy(out + "/target_prob.npy", lens.target_prob.data(), {R, T});
        io::write_npy(out + "/target_logit.npy", lens.target_logit.data(), {R, T});
    }
    nlohmann::json j = run_meta(path, m, ids);
    j["bos"] = bos.to_json();
    j["points"] = lens.points;
    j["top_k"] = lens.top_k;
    j["target"] = tid >= 0 ? nlohmann::json(tid) : nlohmann::json();
    nlohmann::json last = nlohmann::json::array();
    std::cout << "logit lens at the last position (" << T - 1 << ")" << (tid >= 0 ? ", target " + std::to_string(tid) + " '" + token_text(m, tid) + "'" : std::string()) << "\n";
    for (std::size_t r = 0; r < R; ++r) {
        const std::size_t at = std::size_t(lens.index(std::int64_t(r), std::int64_t(T - 1)));
        const std::int32_t best = lens.top_tokens[at * K];
        nlohmann::json row{{"point", lens.points[r]}, {"top_token", best}, {"top_text", token_text(m, best)},
                           {"top_prob", lens.top_probs[at * K]}};
        std::cout << "  " << lens.points[r] << std::string(lens.points[r].size() < 26 ? 26 - lens.points[r].size() : 1, ' ')
                  << best << " '" << token_text(m, best) << "' p=" << lens.top_probs[at * K];
        if (tid >= 0) {
            row["target_rank"] = lens.target_rank[at];
            row["target_prob"] = lens.target_prob[at];
            std::cout << "   target rank " << lens.target_rank[at] << " p=" << lens.target_prob[at];
        }
        std::cout << "\n";
        last.push_back(row);
    }
    j["last_position"] = last;
    j["files"] = tid >= 0 ? std::vector<std::string>{"top_tokens.npy", "top_probs.npy", "target_rank.npy", "target_prob.npy", "target_logit.npy"}
                          : std::vector<std::string>{"top_tokens.npy", "top_probs.npy"};
    write_json(out + "/summary.json", j);
    return 0;
}

int cmd_dla(const std::string& path, const std::string& text, const std::string& tokens, analysis::BosMode bos_mode, const std::string& target,
            const std::string& contrast, std::int64_t position, const std::string& out) {
    make_out_dir("dla", out);
    const auto m = load_checked(path);  // float32: the decomposition reads W_O, W_down and the output head
    analysis::BosChoice bos;
    const auto ids = input_tokens(m, text, tokens, bos_mode, bos);
    const std::int32_t tid = token_arg(m, "dla --target", target);
    const std::int32_t cid = contrast.empty() ? -1 : token_arg(m, "dla --contrast", contrast);
    const auto a = analysis::logit_attribution(m.config, m.weights, ids, {tid, cid, position});
    create_out_dir("dla", out);
    auto write = [&](const std::string& name, const Eigen::MatrixXd& x, std::vector<std::size_t> shape) {
        const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> f = x.cast<float>();
        io::write_npy(out + "/" + name + ".npy", f.data(), shape);
    };
    const auto L = std::size_t(m.config.n_layers), H = std::size_t(m.config.n_heads), S = std::size_t(a.sources);
    write("heads", a.heads, {L, H});
    write("mlp", a.mlp, {L});
    write("attn_bias", a.attn_bias, {L});
    write("mlp_bias", a.mlp_bias, {L});
    write("by_source", a.by_source, {L, H, S});
    if (a.experts.size()) write("experts", a.experts, {L, std::size_t(a.experts.cols())});
    nlohmann::json j = run_meta(path, m, ids);
    j["bos"] = bos.to_json();
    j["target"] = tid;
    j["target_text"] = token_text(m, tid);
    j["contrast"] = cid >= 0 ? nlohmann::json(cid) : nlohmann::json();
    j["position"] = a.position;
    j["logit"] = a.logit;
    j["model_logit"] = a.model_logit;
    j["parts_sum"] = a.total();
    j["embed"] = a.embed;
    j["pos_embed"] = a.pos_embed;
    j["bias"] = a.bias();
    j["final_bias"] = a.final_bias;
    j["heads_total"] = a.heads.sum();
    j["mlp_total"] = a.mlp.sum();
    j["sources"] = a.sources;
    Eigen::Index tl = 0, th = 0;
    a.heads.cwiseAbs().maxCoeff(&tl, &th);
    j["top_head"] = {{"layer", tl}, {"head", th}, {"part", a.heads(tl, th)}};
    write_json(out + "/summary.json", j);
    std::cout << "DLA of " << (cid >= 0 ? "logit(" + std::to_string(tid) + ") - logit(" + std::to_string(cid) + ")" : "logit(" + std::to_string(tid) + ")")
              << " at position " << a.position << ": " << a.logit << " (before any soft cap; parts sum " << a.total() << ")\n"
              << "  embed " << a.embed << ", pos_embed " << a.pos_embed << ", heads " << a.heads.sum() << ", mlp "
              << a.mlp.sum() << ", bias " << a.bias() << "\n"
              << "  largest head: L" << tl << "H" << th << " " << a.heads(tl, th) << "; position 0 through every head "
              << a.by_source.col(0).sum() << "\n";
    return 0;
}

// Attribution patching (train/attribution_patching.hpp), with --exact K: real patching of the K sites of
// largest |estimate| and of K others drawn at random, and Spearman's ρ between estimate and exact over each
// set (plain attribution patching is known to misjudge sites behind a saturated softmax, so the random set
// shows how it does away from the top).
struct AtpOptions {
    std::string metric = "logit";                 // logit, logprob, loss (train::MetricKind)
    std::vector<std::string> hooks{"resid_pre"};  // the sites: resid_pre, attn_out, z, mlp_out
    std::vector<std::int64_t> channels;           // a channel group of hook_resid_pre ("channels")
    bool spike_channels = false;                  // the massive channels of the clean run's residual stream ("spike")
};

// The channels that carry a massive activation (Sun et al.'s criterion, measures::is_massive) in any block's
// hook_resid_pre of the clean run, ascending.
std::vector<std::int64_t> spike_channels(const model::LoadedModel<float>& m, const std::vector<std::int32_t>& clean) {
    model::HookSet<float> hooks;
    model::ActivationCache<float> cache;
    cache.attach(hooks, [](const std::string& n) { return n.find("hook_resid_pre") != std::string::npos; });
    model::forward(m.config, m.weights, clean, &hooks);
    std::vector<std::int64_t> out;
    for (const auto& [name, x] : cache.all()) {
        const std::int64_t d = x.shape.back(), n = std::int64_t(x.data.size()) / d;
        for (const auto& e : analysis::massive_entries(x.data.data(), n, d)) out.push_back(e.channel);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

int cmd_atp(const std::string& path, const std::string& text, const std::string& tokens, const std::string& corrupted_text,
            const std::string& corrupted_tokens, analysis::BosMode bos_mode, const std::string& target, const std::string& contrast,
            std::int64_t position, const AtpOptions& options, std::int64_t exact_k, std::uint64_t seed, const std::string& out) {
    make_out_dir("atp", out);
    const auto m = load_checked(path);  // float32 dense: the backward needs the weights themselves
    analysis::BosChoice bos, corrupted_bos;
    const auto clean = input_tokens(m, text, tokens, bos_mode, bos);
    const auto corrupt = input_tokens(m, corrupted_text, corrupted_tokens, bos_mode, corrupted_bos);
    const train::MetricKind kind = train::metric_kind_from(options.metric);
    if (kind == train::MetricKind::loss && (!target.empty() || !contrast.empty() || position != -1))
        throw Error("atp: --metric loss is the clean sequence's next-token loss; it takes no --target, --contrast or --position");
    if (kind != train::MetricKind::loss && target.empty()) throw Error("atp: --target is required (unless --metric loss)");
    const train::Metric metric =
        kind == train::MetricKind::loss
            ? train::Metric::next_token_loss(clean)
            : train::Metric{position, token_arg(m, "atp --target", target),
                            contrast.empty() ? -1 : token_arg(m, "atp --contrast", contrast), kind};
    std::vector<train::ChannelGroup> groups;
    if (!options.channels.empty()) groups.push_back({"channels", options.channels});
    if (options.spike_channels) {
        auto spikes = spike_channels(m, clean);
        if (spikes.empty())
            std::cerr << "atp: --spike-channels: no massive activation (|x| > 100 and >= 1000x the median |x|) in the clean run's "
                         "residual stream, so no spike-channel group is scored\n";
        else groups.push_back({"spike", std::move(spikes)});
    }
    const train::AttributionSites which = train::attribution_sites(options.hooks, std::move(groups));
    auto run = train::attribution_patch_tokens(m.config, m.weights, clean, corrupt, metric, which);
    auto& r = run.result;
    const auto cmp = train::compare_with_exact(r, m.config, m.weights, clean, run.corrupted.activations, metric, std::size_t(exact_k), seed,
                                               [](std::size_t done, std::size_t total) {
                                                   std::cerr << "\ratp: exact patching " << done << "/" << total << std::flush;
                                                   if (done == total) std::cerr << "\n";
                                               });
    const std::size_t k = cmp.top.size();
    create_out_dir("atp", out);
    // One estimate / exact array per kind of site (train::site_arrays). The block inputs keep the names
    // estimate.npy and exact.npy.
    nlohmann::json files = nlohmann::json::array(), kinds = nlohmann::json::array();
    for (const auto& a : train::site_arrays(r, m.config)) {
        const std::vector<float> est(a.estimate.begin(), a.estimate.end()), ex(a.exact.begin(), a.exact.end());
        io::write_npy(out + "/estimate" + a.suffix + ".npy", est.data(), a.shape);
        io::write_npy(out + "/exact" + a.suffix + ".npy", ex.data(), a.shape);
        files.push_back("estimate" + a.suffix + ".npy");
        files.push_back("exact" + a.suffix + ".npy");
        kinds.push_back({{"site", a.site}, {"estimate", "estimate" + a.suffix + ".npy"}, {"exact", "exact" + a.suffix + ".npy"},
                         {"shape", a.shape}});
    }
    const std::int64_t sink = m.config.attention == model::AttentionKind::sink_token ? 1 : 0;
    auto site_label = [&](const train::AttributionSite& s) {
        return s.group >= 0 ? std::string("resid_pre[") + r.groups[std::size_t(s.group)].name + "]" : std::string(model::hook_spec(s.hook).short_name);
    };
    {
        std::ofstream csv(out + "/sites.csv");
        if (!csv) throw Error("cannot write", {out + "/sites.csv", "", {}});
        csv << "layer,site,position,head,estimate,exact\n" << std::setprecision(9);
        for (const auto& s : r.sites)
            csv << s.layer << "," << site_label(s) << "," << s.position << "," << s.head << "," << s.estimate << "," << s.exact << "\n";
        if (!csv) throw Error("write failed", {out + "/sites.csv", "", {}});
    }
    files.push_back("sites.csv");
    nlohmann::json j = run_meta(path, m, clean);
    j["corrupted_tokens"] = corrupt;
    j["bos"] = bos.to_json();
    j["metric"] = train::to_string(metric.kind);
    if (metric.kind == train::MetricKind::loss) {
        j["metric_definition"] = "mean next-token cross-entropy over the clean tokens";
    } else {
        j["target"] = metric.target;
        j["contrast"] = metric.contrast >= 0 ? nlohmann::json(metric.contrast) : nlohmann::json();
        j["position"] = metric.position < 0 ? std::int64_t(clean.size()) - 1 : metric.position;
    }
    if (which.resid_pre) j["site"] = "blocks.{layer}.hook_resid_pre[position]";
    j["sites"] = kinds;
    nlohmann::json channel_groups = nlohmann::json::object();
    for (const auto& g : r.groups) channel_groups[g.name] = g.channels;
    j["channel_groups"] = channel_groups;
    j["clean_metric"] = r.clean_metric;
    j["corrupted_metric"] = r.corrupted_metric;
    j["exact_k"] = k;
    j["seed"] = seed;
    auto rho = [](double x) { return std::isnan(x) ? nlohmann::json() : nlohmann::json(x); };
    j["spearman_top"] = rho(cmp.spearman_top);
    j["spearman_random"] = rho(cmp.spearman_random);
    j["files"] = files;
    write_json(out + "/summary.json", j);

    std::cout << "attribution patching of " << (metric.contrast >= 0 ? "logit(" + std::to_string(metric.target) + ") - logit(" +
                                                                          std::to_string(metric.contrast) + ")"
                                                                    : "logit(" + std::to_string(metric.target) + ")")
              << ": clean " << r.clean_metric << ", corrupted " << r.corrupted_metric << "\n";
    for (const auto& g : r.groups) {
        std::cout << "  channel group '" << g.name << "':";
        for (std::int64_t ch : g.channels) std::cout << " " << ch;
        std::cout << "\n";
    }
    std::cout << "  layer  site               pos  head  token             estimate      exact\n";
    const std::vector<std::size_t> order = train::by_magnitude(r);
    for (std::size_t i = 0; i < std::min<std::size_t>(10, order.size()); ++i) {
        const auto& s = r.sites[order[i]];
        const std::int64_t t = s.position - sink;
        std::string tok = t >= 0 ? token_text(m, clean[std::size_t(t)]) : std::string("<sink>");
        std::replace(tok.begin(), tok.end(), '\n', ' ');
        const std::string head = s.head >= 0 ? std::to_string(s.head) : std::string("-");
        std::printf("  %5lld  %-17.17s %4lld  %4s  %-16.16s %10.4g %10.4g\n", (long long)s.layer, site_label(s).c_str(),
                    (long long)s.position, head.c_str(), tok.c_str(), s.estimate, s.exact);
    }
    if (k >= 2)
        std::cout << "  Spearman rho(estimate, exact): top " << k << " sites " << cmp.spearman_top << ", " << cmp.random.size()
                  << " random sites " << cmp.spearman_random << "\n";
    return 0;
}

using analysis::parse_shard;
using analysis::stats_json;
using Shard = analysis::StatsShard;

void print_stats_header(const nlohmann::json& settings, std::int64_t samples, const std::string& shard_note) {
    std::cout << "model " << settings["model"].get<std::string>() << "; " << samples << " samples of "
              << settings["seq_len"].get<std::int64_t>() << " tokens, " << (settings["bos"].get<bool>() ? "with" : "without")
              << " BOS" << shard_note << "; residual stream after each block (hook_resid_post)\n";
}

void write_json(const std::string& path, const nlohmann::json& j) {
    std::ofstream out(path);
    if (!out) throw Error("cannot write", {path, "", {}});
    // Token texts are bytes (a byte-fallback piece such as <0xDD> is half a UTF-8 character): written with
    // U+FFFD in place of what is not UTF-8, as the GGUF reader advises, instead of failing the whole write.
    out << j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    if (!out) throw Error("write failed", {path, "", {}});
}

int cmd_stats(const std::string& path, const std::string& text_file, const std::string& text, const std::string& tokens_file,
              std::int64_t seq_len, std::int64_t max_samples, double eps, analysis::BosMode bos_mode, const std::string& shard_arg,
              const std::string& json_out, std::int64_t batch, const model::LoadOptions& options) {
    const Shard shard = shard_arg.empty() ? Shard{} : parse_shard(shard_arg);
    analysis::StatsRequest request;
    request.model = path;
    request.text_file = text_file;
    request.text = text;
    request.tokens_file = tokens_file;
    request.seq_len = seq_len;
    request.max_samples = max_samples;
    request.eps = eps;
    request.bos = bos_mode == analysis::BosMode::on;  // auto is resolved once the checkpoint is read
    request.shard = shard;
    request.batch = batch;
    analysis::check_request(request);  // before the load, so a bad request costs nothing
    const auto t0 = std::chrono::steady_clock::now();
    const auto m = load_checked(path, options);
    std::cerr << "loaded " << path << " in " << seconds_since(t0) << " s: " << m.config.describe() << "\n";
    // --bos against the checkpoint (text only: a token file's ids are used as given).
    const analysis::BosChoice bos = tokens_file.empty() ? analysis::resolve_bos(m, bos_mode)
                                                        : analysis::BosChoice{bos_mode, false, std::nullopt,
                                                                              "--tokens-file: the ids as given", ""};
    request.bos = bos.use;
    const auto t1 = std::chrono::steady_clock::now();
    auto run = analysis::run_stats(m, request, [&](std::int64_t done, std::int64_t of) {
        std::cerr << "\rsample " << done << "/" << of << " (" << seconds_since(t1) << " s)" << std::flush;
    });
    std::cerr << "\n";
    run.settings["bos_setting"] = bos.to_json();  // the value used ("bos") and where it came from; merge compares it
    const std::string note = shard.count == 1 ? "" : ", shard " + std::to_string(shard.index) + "/" +
                                                     std::to_string(shard.count) + " (samples " + std::to_string(run.first) +
                                                     "…" + std::to_string(run.end - 1) + " of " + std::to_string(run.total) + ")";
    print_stats_header(run.settings, run.end - run.first, note);
    analysis::print_summary(std::cout, analysis::summarize(run.residual, run.attention, eps));
    if (!json_out.empty()) write_json(json_out, run.json());
    return 0;
}

// One shard file of `merge`, checked against the run of the first file.
struct ShardFile {
    std::string path;
    nlohmann::json j;
    Shard shard;
};

ShardFile read_shard(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw Error("cannot open", {path, "", {}});
    ShardFile f{path, {}, {}};
    try { f.j = nlohmann::json::parse(in); }
    catch (const nlohmann::json::exception& e) { throw Error(std::string("invalid JSON: ") + e.what(), {path, "", {}}); }
    const auto& j = f.j;
    if (!j.is_object() || !j.contains("settings") || !j.contains("shard") || !j.contains("state"))
        throw Error("not a `sinkscope stats --json` file with mergeable state (no settings/shard/state)", {path, "", {}});
    try {
        f.shard.index = j["shard"].at("index").get<std::int64_t>();
        f.shard.count = j["shard"].at("count").get<std::int64_t>();
        const auto total = j["settings"].at("total_samples").get<std::int64_t>();
        require(f.shard.count >= 1 && f.shard.index >= 0 && f.shard.index < f.shard.count && f.shard.count <= total,
                "bad shard " + j["shard"].dump());
        require(j["shard"].at("first_sample") == f.shard.begin(total) && j["shard"].at("end_sample") == f.shard.end(total),
                "shard " + j["shard"].dump() + " does not hold the samples of part " + std::to_string(f.shard.index) + "/" +
                    std::to_string(f.shard.count) + " of " + std::to_string(total));
    } catch (const nlohmann::json::exception& e) {
        throw Error(std::string("bad shard or settings: ") + e.what(), {path, "", {}});
    } catch (const Error& e) {
        throw Error(e.message(), {path, "", {}});
    }
    return f;
}

int cmd_merge(const std::vector<std::string>& paths, const std::string& json_out) {
    require(!paths.empty(), "merge: give the shard files");
    std::vector<ShardFile> files;
    for (const auto& p : paths) files.push_back(read_shard(p));
    const auto& settings = files[0].j["settings"];
    const std::int64_t count = files[0].shard.count;
    std::vector<const ShardFile*> by_index(std::size_t(count), nullptr);
    for (const auto& f : files) {
        // Every setting of either file (one may have a key the other lacks, as `weights`), the fingerprint
        // last: a differing --seq-len is the clearer message.
        std::set<std::string> keys;
        for (const auto& kv : settings.items()) keys.insert(kv.key());
        for (const auto& kv : f.j["settings"].items()) keys.insert(kv.key());
        keys.erase("samples_fnv1a");
        std::vector<std::string> ordered(keys.begin(), keys.end());
        ordered.push_back("samples_fnv1a");
        for (const auto& key : ordered)
            if (const auto& value = settings.contains(key) ? settings[key] : nlohmann::json();
                !f.j["settings"].contains(key) || f.j["settings"][key] != value)
                throw Error("not the same run as " + files[0].path + ": setting '" + key + "' is " +
                                (f.j["settings"].contains(key) ? f.j["settings"][key].dump() : std::string("missing")) +
                                " here and " + (settings.contains(key) ? value.dump() : std::string("missing")) + " there",
                            {f.path, "", {}});
        require(f.shard.count == count, "shard " + std::to_string(f.shard.index) + "/" + std::to_string(f.shard.count) +
                                            " of a split into " + std::to_string(f.shard.count) + ", but " + files[0].path +
                                            " is of a split into " + std::to_string(count), {f.path, "", {}});
        auto& slot = by_index[std::size_t(f.shard.index)];
        require(slot == nullptr, "shard " + std::to_string(f.shard.index) + "/" + std::to_string(count) +
                                     " given twice (also " + (slot ? slot->path : std::string()) + ")", {f.path, "", {}});
        slot = &f;
    }
    std::string missing;
    for (std::int64_t i = 0; i < count; ++i)
        if (!by_index[std::size_t(i)]) missing += (missing.empty() ? "" : ", ") + std::to_string(i) + "/" + std::to_string(count);
    require(missing.empty(), "merge: shard(s) " + missing + " missing (shards count from 0)");
    std::optional<model::ResidualStats<float>> rs;
    std::optional<model::AttentionStats<float>> as;
    for (const ShardFile* f : by_index) {
        try {
            auto r = model::ResidualStats<float>::from_json(f->j["state"].at("residual"));
            auto a = model::AttentionStats<float>::from_json(f->j["state"].at("attention"));
            if (!rs) { rs = std::move(r); as = std::move(a); }
            else { rs->merge(r); as->merge(a); }
        } catch (const nlohmann::json::exception& e) {
            throw Error(std::string("bad state: ") + e.what(), {f->path, "", {}});
        } catch (const Error& e) {
            throw Error(e.message(), {f->path, "", {}});
        }
    }
    const double eps = settings["eps"].get<double>();
    print_stats_header(settings, as->samples(), "");
    analysis::print_summary(std::cout, analysis::summarize(*rs, *as, eps));
    if (!json_out.empty()) write_json(json_out, stats_json(settings, Shard{}, *rs, *as));
    return 0;
}

int cmd_random_model(const std::string& path, const std::string& out, std::uint64_t seed) {
    const auto m = load_checked(path);
    const auto r = train::random_like(m, seed);
    train::save_model(out, r.config, r.weights, {{"null_control", "random weights (train::init_weights, seed " +
                                                  std::to_string(seed) + ") in the layout of " + path}});
    std::cout << "wrote " << out << ": " << r.config.describe() << ", random weights (seed " << seed << ")\n";
    return 0;
}

// A planted-mechanism model (train/planted_export.hpp) written as a sinkscope checkpoint: the construction in
// its default layout, or in the layout of --like; the plan goes into the checkpoint's note and onto stdout.
int cmd_planted(const std::string& out, const std::string& layout, const std::string& like, const train::PlantedRequest& r) {
    const model::Config c = like.empty() ? train::planted_config(r.construction, layout) : load_checked(like).config;
    nlohmann::json note = train::write_planted(out, c, r);
    note["layout"] = like.empty() ? layout : "like " + like;
    std::cerr << "wrote " << out << ": " << c.describe() << ", planted " << r.construction << (r.twin ? " (twin)" : "")
              << ", dose " << r.massive.dose << "\n";
    std::cout << note.dump(1) << "\n";
    return 0;
}

// The pre-registered rule set (analysis/rule_table.hpp): one line per rule, or with --json the set hash
// and every rule's hash and canonical JSON (tests/experiments/check_rule_set.py reads it).
int cmd_rules(bool as_json) {
    const auto& rules = analysis::rule_table();
    const std::string set_hash = analysis::rule_set_hash(rules, analysis::kRuleSetVersion);
    if (as_json) {
        nlohmann::json j{{"version", analysis::kRuleSetVersion}, {"set_hash", set_hash}, {"rules", nlohmann::json::object()}};
        for (const auto& r : rules) j["rules"][r.id] = {{"hash", analysis::rule_hash(r)}, {"canonical", analysis::canonical_json(r)}};
        std::cout << j.dump(1) << "\n";
        return 0;
    }
    std::cout << "rule set version " << analysis::kRuleSetVersion << ", hash " << set_hash << "\n";
    for (const auto& r : rules)
        std::cout << "  " << r.id << std::string(r.id.size() < 14 ? 14 - r.id.size() : 1, ' ') << analysis::rule_hash(r).substr(0, 12)
                  << "  " << r.kind << ", " << r.values.size() << " values, " << r.experiment << "\n";
    return 0;
}

// --bos auto|on|off (auto: the checkpoint's add_bos_token, an absent key meaning no BOS; a bare --bos means on)
// and, where `no_bos` is given, --no-bos (the same as --bos off). One definition for every command.
CLI::Option* add_bos_option(CLI::App* command, std::string& bos, bool* no_bos, const std::string& what) {
    CLI::Option* opt = command->add_option("--bos", bos, what + ": auto (the checkpoint's add_bos_token; an absent key: "
                                           "no BOS, as Gu et al.), on or off; a bare --bos means on")
                           ->expected(0, 1)->default_str("on")->option_text("auto|on|off (default auto)")
                           ->check(CLI::IsMember({"auto", "on", "off"}));
    if (no_bos) command->add_flag("--no-bos", *no_bos, "never prepend BOS (--bos off)")->excludes(opt);
    return opt;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"sinkscope " + std::string(version()) + ": attention sinks and massive activations in transformer LMs"};
    app.require_subcommand(1);

    std::string model_path, text, tokens, hooks, out, text_file, json_out, tokens_file, shard;
    std::uint64_t seed = 1;
    std::string bos = "auto";
    bool no_bos = false, list_hooks = false, describe_hooks = false;
    std::int64_t seq_len = 64, samples = 0, batch = 8;
    double eps = measures::kSinkEps;

    auto* info = app.add_subcommand("info", "architecture, shapes and tensor types of a checkpoint");
    info->add_option("MODEL", model_path, "a .gguf file or a Hugging Face directory")->required();
    std::string weights = "auto", compute = "exact";
    const std::string weights_help = "auto: float32 when it fits in memory, else file; "
                                     "file: keep the linear maps of a GGUF or Hugging Face directory in their file types "
                                     "(blocks, F16, BF16), memory-mapped (forward only); float32: convert every tensor at load; bf16: "
                                     "convert at load, then round the linear maps to BF16 once (half the memory; forward only)";
    const std::vector<std::string> weight_words{"auto", "file", "float32", "bf16"}, compute_words{"exact", "int8", "bf16"};
    const std::string compute_help = "exact (float32 products; file-type maps as dequantized tiles), int8 (8-bit "
                                     "activations, integer dot products, for block-typed maps) or bf16 (bf16 inputs, "
                                     "float32 accumulation, for dense float32, BF16 and block-typed maps, the blocks dequantized to bf16 "
                                     "tiles; needs oneDNN)";
    info->add_option("--weights", weights, weights_help)->check(CLI::IsMember(weight_words))->capture_default_str();
    info->add_option("--compute", compute, compute_help)->check(CLI::IsMember(compute_words))->capture_default_str();

    auto* capture = app.add_subcommand("capture", "run a text and save hooked activations as .npy");
    capture->add_option("MODEL", model_path, "a .gguf file or a Hugging Face directory")->required();
    auto* text_opt = capture->add_option("--text", text, "input text (tokenized with the model's tokenizer)");
    capture->add_option("--tokens", tokens, "input token ids, comma-separated")->excludes(text_opt);
    add_bos_option(capture, bos, &no_bos, "BOS first");
    capture->add_option("--hooks", hooks, "hook names, comma-separated (TransformerLens names)");
    capture->add_option("--out", out, "output directory");
    capture->add_option("--weights", weights, weights_help)->check(CLI::IsMember(weight_words))->capture_default_str();
    capture->add_option("--compute", compute, compute_help)->check(CLI::IsMember(compute_words))->capture_default_str();
    capture->add_flag("--list-hooks", list_hooks, "print the hook names of this model and exit");
    capture->add_flag("--describe", describe_hooks, "with --list-hooks: one row per hook kind, with its shape and meaning");

    auto* stats = app.add_subcommand("stats", "per-layer massive-activation and attention-sink summary");
    stats->add_option("MODEL", model_path, "a .gguf file or a Hugging Face directory")->required();
    auto* file_opt = stats->add_option("--text-file", text_file, "text to cut into samples");
    auto* stats_text_opt = stats->add_option("--text", text, "text to cut into samples")->excludes(file_opt);
    stats->add_option("--tokens-file", tokens_file, "token ids, one sequence per line (spaces or commas); "
                      "each line's first --seq-len ids make a sample")->excludes(file_opt)->excludes(stats_text_opt);
    stats->add_option("--seq-len", seq_len, "tokens per sample (Gu et al.: 64)")->check(CLI::Range(2, 1 << 20));
    stats->add_option("--samples", samples, "at most this many samples (0: all the text gives)");
    stats->add_option("--eps", eps, "sink threshold ε on α₀ (Gu et al.: 0.3)")->check(CLI::Range(0.0, 1.0));
    add_bos_option(stats, bos, nullptr, "BOS first in every text sample");
    stats->add_option("--shard", shard, "I/N: only the I-th (from 0) of N equal contiguous parts of the samples");
    stats->add_option("--json", json_out, "also write the summary and the mergeable state as JSON here");
    stats->add_option("--weights", weights, weights_help)->check(CLI::IsMember(weight_words))->capture_default_str();
    stats->add_option("--compute", compute, compute_help)->check(CLI::IsMember(compute_words))->capture_default_str();
    stats->add_option("--batch", batch, "samples per forward pass where batching is bit-exact (dense FFN, lengths "
                      "multiples of 4); one at a time elsewhere")->check(CLI::Range(1, 4096));

    std::string target, contrast;
    std::int64_t top = 5, position = -1;
    auto* lens = app.add_subcommand("lens", "the logit lens: each layer's residual stream through the final norm and unembedding");
    lens->add_option("MODEL", model_path, "a .gguf file or a Hugging Face directory")->required();
    auto* lens_text = lens->add_option("--text", text, "input text (tokenized with the model's tokenizer)");
    lens->add_option("--tokens", tokens, "input token ids, comma-separated")->excludes(lens_text);
    add_bos_option(lens, bos, &no_bos, "BOS first");
    lens->add_option("--target", target, "a token (id, or a text that is one token) whose rank and probability to follow");
    lens->add_option("--top", top, "tokens kept per layer and position")->check(CLI::Range(1, 1000))->capture_default_str();
    lens->add_option("--out", out, "output directory")->required();

    auto* dla = app.add_subcommand("dla", "direct logit attribution: each head's, FFN's and embedding's part of a logit");
    dla->add_option("MODEL", model_path, "a .gguf file or a Hugging Face directory")->required();
    auto* dla_text = dla->add_option("--text", text, "input text (tokenized with the model's tokenizer)");
    dla->add_option("--tokens", tokens, "input token ids, comma-separated")->excludes(dla_text);
    add_bos_option(dla, bos, &no_bos, "BOS first");
    dla->add_option("--target", target, "the token (id, or a text that is one token) whose logit is split")->required();
    dla->add_option("--contrast", contrast, "split logit(target) - logit(contrast) instead");
    dla->add_option("--position", position, "the position among the tokens (-1: the last)")->capture_default_str();
    dla->add_option("--out", out, "output directory")->required();

    std::string corrupted_text, corrupted_tokens;
    std::int64_t exact_k = 0;
    auto* atp = app.add_subcommand("atp", "attribution patching: every site's estimated effect of a corrupted input on a metric (a logit, a log-probability or the loss; block inputs, attention and FFN outputs, z per head, channel groups)");
    atp->add_option("MODEL", model_path, "a .gguf file or a Hugging Face directory")->required();
    auto* atp_text = atp->add_option("--text", text, "the clean input text");
    atp->add_option("--tokens", tokens, "the clean input's token ids, comma-separated")->excludes(atp_text);
    auto* atp_corrupted = atp->add_option("--corrupted-text", corrupted_text, "the corrupted input text (as many tokens as the clean one)");
    atp->add_option("--corrupted-tokens", corrupted_tokens, "the corrupted input's token ids")->excludes(atp_corrupted);
    add_bos_option(atp, bos, &no_bos, "BOS first (both inputs)");
    atp->add_option("--target", target, "the token (id, or a text that is one token) whose logit (or log-probability) is the metric");
    atp->add_option("--contrast", contrast, "the metric is logit(target) - logit(contrast)");
    AtpOptions atp_options;
    atp->add_option("--metric", atp_options.metric,
                    "logit: the target's logit (minus the contrast's); logprob: its log-probability (minus the contrast's); "
                    "loss: the clean sequence's mean next-token cross-entropy (no --target)")
        ->check(CLI::IsMember({"logit", "logprob", "loss"}))->capture_default_str();
    atp->add_option("--position", position, "the position among the tokens (-1: the last)")->capture_default_str();
    atp->add_option("--sites", atp_options.hooks, "which hooks to score, comma-separated: resid_pre (each block's input), attn_out, "
                                                "mlp_out (per position), z (per position and head)")
        ->delimiter(',')->check(CLI::IsMember({"resid_pre", "attn_out", "z", "mlp_out"}))->capture_default_str();
    auto* atp_channels = atp->add_option("--channels", atp_options.channels,
                                         "also score these channels of each block's input together, per position (group 'channels')")
                             ->delimiter(',');
    atp->add_flag("--spike-channels", atp_options.spike_channels,
                  "also score, per position, the channels that carry a massive activation in the clean run's residual stream "
                  "(group 'spike')")->excludes(atp_channels);
    atp->add_option("--exact", exact_k, "patch the K sites of largest |estimate| and K random others for real")
        ->check(CLI::Range(0, 100000))->capture_default_str();
    atp->add_option("--seed", seed, "draws the random sites")->capture_default_str();
    atp->add_option("--out", out, "output directory")->required();

    std::int64_t top_channels = 4;
    auto* view = app.add_subcommand("view", "one self-contained HTML page of every head's attention, the residual norms and the logit lens");
    view->add_option("MODEL", model_path, "a .gguf file or a Hugging Face directory")->required();
    auto* view_text = view->add_option("--text", text, "input text (tokenized with the model's tokenizer)");
    view->add_option("--tokens", tokens, "input token ids, comma-separated")->excludes(view_text);
    add_bos_option(view, bos, &no_bos, "BOS first");
    view->add_option("--top-channels", top_channels, "largest channels shown per position")->check(CLI::Range(1, 64))->capture_default_str();
    view->add_option("--out", out, "output directory (index.html and the numbers as .npy)")->required();

    std::vector<std::string> shard_files;
    auto* merge = app.add_subcommand("merge", "merge the --json files of `stats --shard I/N` runs into the whole run's");
    merge->add_option("FILES", shard_files, "one --json file per shard, all N of them")->required();
    merge->add_option("--json", json_out, "write the whole run's JSON (as `stats --json` would) here");

    auto* random_model = app.add_subcommand("random-model", "null control: a model's layout with random weights, "
                                                            "written as a sinkscope checkpoint");
    random_model->add_option("MODEL", model_path, "a .gguf file or a Hugging Face directory")->required();
    random_model->add_option("--out", out, "output file (.safetensors)")->required();
    random_model->add_option("--seed", seed, "seed of the random weights")->capture_default_str();

    auto* planted = app.add_subcommand("planted", "models with a mechanism planted by construction (theory/planted_*.md)");
    auto* planted_massive = planted->add_subcommand("massive", "a massive activation: step-up at layer S, step-down at layer D, "
                                                               "and its twin");
    planted->require_subcommand(1);
    train::PlantedRequest planted_request;
    std::string like, layout = "llama";
    auto planted_common = [&](CLI::App* sub, const std::string& twin_help, const std::string& dose_help) {
        sub->add_option("--out", out, "output file (.safetensors)")->required();
        sub->add_flag("--twin", planted_request.twin, twin_help);
        sub->add_option("--dose", planted_request.massive.dose, dose_help)->check(CLI::Range(0.0, 1e6))->capture_default_str();
        sub->add_option("--seed", planted_request.massive.seed, "seed of the random background")->capture_default_str();
        sub->add_option("--like", like, "take the layout (Config) of this model instead of the default");
    };
    planted_common(planted_massive, "the twin: the step-up unit's W_down column zeroed, every other weight identical",
                   "magnitude in units of the smallest that meets Sun's criterion with margin 2 (0, 0.25, 0.5, 1)");
    planted_massive->add_option("--step-up-layer", planted_request.massive.step_up_layer, "S")->capture_default_str();
    planted_massive->add_option("--step-down-layer", planted_request.massive.step_down_layer, "D (-1: the last layer)")->capture_default_str();
    planted_massive->add_option("--channel", planted_request.massive.channel, "c* (-1: d_model / 3)")->capture_default_str();

    auto* planted_sink = planted->add_subcommand("sink-keys", "sink heads whose keys read the planted spike channel (Paper B's "
                                                              "B5), and the twin whose keys are blind to it");
    planted_common(planted_sink, "the twin: the sink kv heads' W_K column at the spike channel zeroed, every other weight identical",
                   "scales the spike (as planted massive's --dose) and the keys' read of it together");
    auto* planted_p0 = planted->add_subcommand("p0-circuit", "a position-0 circuit in blocks 0-1 whose heads each carry the "
                                                             "identification (Paper A's A2), and the twin with one head carrying it");
    planted_common(planted_p0, "the twin: only query head 0 writes the copies (same energy), every other weight identical",
                   "the spike's magnitude in units of the smallest that meets Sun's criterion with margin 2");
    for (auto* sub : {planted_sink, planted_p0})
        sub->add_option("--layout", layout, "llama (RMSNorm, SwiGLU) or layernorm-gelu (LayerNorm, GELU), both with RoPE")
            ->check(CLI::IsMember({"llama", "layernorm-gelu"}))->capture_default_str();

    bool rules_json = false;
    auto* rules = app.add_subcommand("rules", "the pre-registered verdict rules: each rule's hash and the set's hash");
    rules->add_flag("--json", rules_json, "every rule's canonical JSON and hash, and the set hash");

    cli::CensusOptions census_options;
    auto* census = cli::add_census_subcommand(app, census_options);

    CLI11_PARSE(app, argc, argv);
    try {
        if (*census) return cli::run_census(census_options);
        if (*rules) return cmd_rules(rules_json);
        for (auto [sub, name] : {std::pair{planted_massive, "massive"}, {planted_sink, "sink-keys"}, {planted_p0, "p0-circuit"}})
            if (*sub) {
                planted_request.construction = name;
                return cmd_planted(out, layout, like, planted_request);
            }
        if (*info) return cmd_info(model_path, load_options(weights, compute));
        if (*capture) {
            if (list_hooks) {
                const auto config = load_checked(model_path).config;
                if (!describe_hooks) {
                    for (const auto& n : model::hook_names(config)) std::cout << n << "\n";
                    return 0;
                }
                // The hook table's rows this model has: name (block rows as blocks.{l}.…), shape, meaning.
                for (const auto& s : model::hook_table())
                    if (s.present(config))
                        std::cout << (s.stage == model::HookStage::block ? "blocks.{l}." : "") << s.name << "\t" << s.shape
                                  << "\t" << s.meaning << "\n";
                return 0;
            }
            if (text.empty() && tokens.empty()) throw Error("capture: give --text or --tokens");
            if (hooks.empty()) throw Error("capture: give --hooks");
            if (out.empty()) throw Error("capture: give --out");
            return cmd_capture(model_path, text, tokens, no_bos ? analysis::BosMode::off : analysis::parse_bos_mode(bos), hooks,
                               out, load_options(weights, compute));
        }
        if (*stats) {
            if (text.empty() && text_file.empty() && tokens_file.empty())
                throw Error("stats: give --text-file, --text or --tokens-file");
            return cmd_stats(model_path, text_file, text, tokens_file, seq_len, samples, eps, analysis::parse_bos_mode(bos), shard,
                             json_out, batch,
                             load_options(weights, compute));
        }
        if (*lens || *dla || *view) {
            if (text.empty() && tokens.empty())
                throw Error(std::string(*lens ? "lens" : *view ? "view" : "dla") + ": give --text or --tokens");
            const analysis::BosMode bos_mode = no_bos ? analysis::BosMode::off : analysis::parse_bos_mode(bos);
            if (*lens) return cmd_lens(model_path, text, tokens, bos_mode, target, top, out);
            if (*view) return cmd_view(model_path, text, tokens, bos_mode, top_channels, out);
            return cmd_dla(model_path, text, tokens, bos_mode, target, contrast, position, out);
        }
        if (*atp) {
            if (text.empty() && tokens.empty()) throw Error("atp: give --text or --tokens");
            if (corrupted_text.empty() && corrupted_tokens.empty()) throw Error("atp: give --corrupted-text or --corrupted-tokens");
            const analysis::BosMode bos_mode = no_bos ? analysis::BosMode::off : analysis::parse_bos_mode(bos);
            return cmd_atp(model_path, text, tokens, corrupted_text, corrupted_tokens, bos_mode, target, contrast, position, atp_options, exact_k,
                           seed, out);
        }
        if (*merge) return cmd_merge(shard_files, json_out);
        if (*random_model) {
            if (fs::path(out).extension() != ".safetensors") throw Error("random-model: --out must end in .safetensors", {out, "", {}});
            return cmd_random_model(model_path, out, seed);
        }
    } catch (const Error& e) {
        std::cerr << e.what() << "\n";
        return 2;
    } catch (const std::bad_alloc&) {
        // load_checked() refuses a model whose weights cannot fit; this is what the estimate does not
        // count (activations, captures, a fragmented heap) or a check that could not be made.
        const auto avail = io::available_memory();
        std::cerr << "sinkscope: out of memory (std::bad_alloc)"
                  << (g_weights.bytes ? std::string("; the model's ") + g_weights.kind + " need " + io::format_gib(g_weights.bytes) : std::string())
                  << "; " << (avail ? io::format_gib(*avail) : std::string("an unknown amount")) << " available now\n";
        return 2;
    } catch (const fs::filesystem_error& e) {
        std::cerr << "sinkscope: " << e.what() << "\n";
        return 2;
    } catch (const nlohmann::json::exception& e) {
        // A metadata or config value of the wrong JSON type (a GGUF key holding a number where a string is
        // meant): bad input the readers do not yet turn into an Error of their own.
        std::cerr << "sinkscope: a metadata or config value has the wrong type (" << e.what() << ")"
                  << (model_path.empty() ? std::string() : " [file " + model_path + "]") << "\n";
        return 2;
    }
    return 0;
}
