// One `stats` run: fixed-length samples cut from a text or read from a token file, pushed through the
// forward pass into the streaming reducers (model/reducers.hpp), and the run's JSON. The CLI's `stats` and
// `merge` (tools/sinkscope.cpp) and the Python module's `Model.stats` (python/) both run this, so they
// write the same JSON for the same input.
//
//   StatsRequest r;  r.text = "...";  r.seq_len = 64;            // what `stats --text … --seq-len 64` reads
//   auto run = run_stats(model, r);                              // samples, settings, reducers' state
//   nlohmann::json j = stats_json(run.settings, run.shard, run.residual, run.attention);   // `--json`
//
// A shard (`--shard I/N`) is the I-th (0-based) of N equal contiguous parts of the S samples,
// [⌊I·S/N⌋, ⌊(I+1)·S/N⌋); its JSON holds the reducers' state, which `merge` adds up into the whole run's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sinkscope/analysis/summary.hpp"
#include "sinkscope/analysis/text.hpp"
#include "sinkscope/core/error.hpp"
#include "sinkscope/model/batch.hpp"
#include "sinkscope/model/forward.hpp"
#include "sinkscope/model/load.hpp"
#include "sinkscope/model/reducers.hpp"
#include "sinkscope/model/config_io.hpp"

namespace sinkscope::analysis {

// --shard I/N: the I-th (0-based) of N contiguous parts of S samples, [⌊I·S/N⌋, ⌊(I+1)·S/N⌋), whose
// sizes differ by at most one. The whole run is shard 0/1.
struct StatsShard {
    std::int64_t index = 0, count = 1;
    std::int64_t begin(std::int64_t total) const { return index * total / count; }
    std::int64_t end(std::int64_t total) const { return (index + 1) * total / count; }
};

inline StatsShard parse_shard(const std::string& arg) {
    const std::string bad = "--shard '" + arg + "': expected I/N with 0 <= I < N (I counts from 0)";
    const auto slash = arg.find('/');
    if (slash == std::string::npos) throw Error(bad);
    StatsShard s;
    try {
        std::size_t used_i = 0, used_n = 0;
        const std::string i = arg.substr(0, slash), n = arg.substr(slash + 1);
        s.index = std::stoll(i, &used_i);
        s.count = std::stoll(n, &used_n);
        if (used_i != i.size() || used_n != n.size()) throw Error(bad);
    } catch (const std::logic_error&) {  // stoll: not a number, or out of range
        throw Error(bad);
    }
    if (s.count < 1 || s.index < 0 || s.index >= s.count) throw Error(bad);
    return s;
}

// What one `stats` run reads and how it cuts it. Exactly one of text_file, text, tokens_file is used
// (in that order of precedence: text_file, then text, when tokens_file is empty).
struct StatsRequest {
    std::string model;        // the path, as written into the settings
    std::string text_file;    // text to cut into samples
    std::string text;         // text to cut into samples
    std::string tokens_file;  // one id sequence per line; each line's first seq_len ids make a sample
    std::int64_t seq_len = 64;      // tokens per sample (Gu et al.: 64)
    std::int64_t max_samples = 0;   // at most this many samples (0: all the input gives)
    double eps = measures::kSinkEps;  // sink threshold ε on α₀ (Gu et al.: 0.3)
    bool bos = false;               // prepend BOS to every text sample (Gu et al.: none)
    StatsShard shard;               // the part of the samples this run processes
    std::int64_t batch = 8;         // samples per forward pass where batching is bit-exact
};

// The request's values, checked before any model is loaded (the CLI and the Python module both call it).
inline void check_request(const StatsRequest& r) {
    require(r.seq_len >= 2 && r.seq_len <= (std::int64_t(1) << 20), "stats: the sample length must lie in [2, 2^20], not " +
                                                                       std::to_string(r.seq_len));
    require(r.eps >= 0.0 && r.eps <= 1.0, "stats: eps must lie in [0, 1], not " + std::to_string(r.eps));
    require(r.batch >= 1 && r.batch <= 4096, "stats: the batch must lie in [1, 4096], not " + std::to_string(r.batch));
    require(r.max_samples >= 0, "stats: the sample cap must be >= 0 (0: no cap)");
    require(!(r.bos && !r.tokens_file.empty()), "stats: BOS applies to text; put BOS into the token file instead");
}

// Samples for `stats`: fixed-length pieces of a text, or the first seq_len ids of each line of a token
// file (shorter lines are skipped).
inline std::vector<std::vector<std::int32_t>> stats_samples(const model::LoadedModel<float>& m, const StatsRequest& r) {
    if (r.tokens_file.empty()) {
        const auto tok = tokenizer_for(m);
        const std::string corpus = r.text_file.empty() ? r.text : read_text_file(r.text_file);
        return token_samples(tok, corpus, r.seq_len, r.max_samples, r.bos);
    }
    std::vector<std::vector<std::int32_t>> out;
    for (auto& s : read_token_file(r.tokens_file, m.config.vocab_size)) {
        if (r.max_samples > 0 && std::int64_t(out.size()) == r.max_samples) break;
        if (std::int64_t(s.size()) < r.seq_len) continue;
        s.resize(std::size_t(r.seq_len));
        out.push_back(std::move(s));
    }
    return out;
}

// FNV-1a (64 bit) of every sample's ids: shards of one run must have cut the same input into the same samples.
inline std::string samples_fingerprint(const std::vector<std::vector<std::int32_t>>& samples) {
    std::uint64_t h = 14695981039346656037ull;  // FNV-1a 64: offset basis 0xcbf29ce484222325, prime 2^40 + 2^8 + 0xb3
    auto mix = [&h](std::uint32_t v) {
        for (int b = 0; b < 4; ++b) { h ^= (v >> (8 * b)) & 0xffu; h *= 1099511628211ull; }
    };
    for (const auto& s : samples) {
        mix(std::uint32_t(s.size()));
        for (auto id : s) mix(std::uint32_t(id));
    }
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
    return buf;
}

// The --json of `stats` and `merge`: the summary (top level), the run's settings (what `merge` requires
// to agree), the shard and the reducers' state.
inline nlohmann::json stats_json(const nlohmann::json& settings, const StatsShard& shard, const model::ResidualStats<float>& rs,
                                 const model::AttentionStats<float>& as) {
    const double eps = settings["eps"].get<double>();
    auto j = to_json(summarize(rs, as, eps));
    j["model"] = settings["model"];
    j["seq_len"] = settings["seq_len"];
    j["bos"] = settings["bos"];
    j["settings"] = settings;
    j["shard"] = {{"index", shard.index}, {"count", shard.count}, {"first_sample", as.first_sample()},
                  {"end_sample", as.first_sample() + as.samples()}};
    j["state"] = {{"residual", rs.to_json()}, {"attention", as.to_json()}};
    return j;
}

// A finished run: its settings, which samples it processed, and the reducers that saw them.
struct StatsRun {
    nlohmann::json settings;
    StatsShard shard;
    std::int64_t first = 0, end = 0, total = 0;  // samples [first, end) of total
    model::ResidualStats<float> residual;
    model::AttentionStats<float> attention;
    nlohmann::json json() const { return stats_json(settings, shard, residual, attention); }
};

// Runs `stats` on a loaded model: cuts the samples, keeps the shard's part, and feeds every sample's
// resid_post and pattern to the reducers. `progress(done, of)` is called after each forward pass.
inline StatsRun run_stats(const model::LoadedModel<float>& m, const StatsRequest& r,
                          const std::function<void(std::int64_t, std::int64_t)>& progress = {}) {
    check_request(r);
    const auto samples = stats_samples(m, r);
    require(!samples.empty(), "the input gives no sample of " + std::to_string(r.seq_len) + " tokens");
    const auto total = std::int64_t(samples.size());
    require(r.shard.count <= total, "--shard " + std::to_string(r.shard.index) + "/" + std::to_string(r.shard.count) +
                                        ": the input gives " + std::to_string(total) + " samples, fewer than " +
                                        std::to_string(r.shard.count) + " shards");
    const std::int64_t first = r.shard.begin(total), end = r.shard.end(total);
    nlohmann::json settings{
        {"model", r.model}, {"config", model::config_to_json(m.config)}, {"seq_len", r.seq_len}, {"bos", r.bos}, {"eps", r.eps},
        {"max_samples", r.max_samples}, {"text_file", r.text_file}, {"text", r.text}, {"tokens_file", r.tokens_file},
        {"total_samples", total}, {"samples_fnv1a", samples_fingerprint(samples)}};
    // The arithmetic, so that `merge` refuses shards computed differently (float32 against int8 or bf16
    // products). Written only for file-type weights and bf16 products, so that a float32 run's JSON stays
    // what it was.
    if (m.weights.file_type())
        settings["weights"] = {{"storage", model::to_string(m.weights.storage)}, {"compute", model::to_string(m.weights.compute)}};
    else if (m.weights.precision == model::MatmulPrecision::bf16)
        settings["weights"] = {{"storage", "float32"}, {"compute", "bf16"}};
    StatsRun run{std::move(settings), r.shard, first, end, total,
                 model::ResidualStats<float>(m.config.n_layers), model::AttentionStats<float>(m.config.n_layers, m.config.n_heads)};
    auto& rs = run.residual;
    auto& as = run.attention;
    model::HookSet<float> hooks;
    rs.start_at(first);
    as.start_at(first);
    rs.attach(hooks);
    as.attach(hooks);
    const model::ForwardOptions no_logits{false, -1};
    // r.batch samples per forward pass where that is bit-exact with one sample at a time
    // (model::forward_each, model::batch_is_bit_exact), as shards must merge into exactly the whole run;
    // elsewhere one sample per forward pass. The reducers see sample after sample either way.
    model::EachSequence<float> each;
    each.before = [&](std::int64_t i) {
        if (i > first) rs.begin_sample();
        as.begin_sample();
    };
    each.after = [&](std::int64_t i, const model::Mat<float>&) {
        if (progress) progress(i + 1 - first, end - first);
    };
    model::forward_each<float>(m.config, m.weights, samples, hooks, r.batch, each, no_logits, first, end);
    return run;
}

}  // namespace sinkscope::analysis
