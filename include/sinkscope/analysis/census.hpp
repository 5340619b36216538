// A census: the per-layer statistics of many checkpoints (the `stats` run of analysis/stats_run.hpp on
// each), one JSON record per checkpoint, and the table that merges the records of one census.
//
//   record  = census_record(settings, model_identity(path, m), run_stats(m, request))   // one checkpoint
//   table   = census_table(records)                                                    // checks they agree
//
// A record holds the model's identity (SHA-256 of its files, family, parameter count, the storage types
// of its tensors), the census settings, the rule set's version and hash, the whole `stats --json`
// (summary, settings and the reducers' mergeable state), where the spike forms, and the claims' outcomes.
// Records carry no timing, host or shard, so the same checkpoint under the same settings gives the same
// bytes whichever task of a sharded census wrote it (on the same kind of CPU and thread count: see
// docs/cli-and-sharding.md). The claim rules (analysis/rule_table.hpp) whose experiments measure the
// checkpoint they are given run on each checkpoint (`census --rules smoke|full`, tools/census_cli.cpp runs
// the experiments); census_rules() turns their meta.json verdicts into the record's "rules".
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sinkscope/analysis/rule_table.hpp"
#include "sinkscope/analysis/stats_run.hpp"
#include "sinkscope/analysis/summary.hpp"
#include "sinkscope/core/error.hpp"
#include "sinkscope/core/sha256.hpp"
#include "sinkscope/io/gguf.hpp"
#include "sinkscope/io/mapped_file.hpp"
#include "sinkscope/io/memory.hpp"
#include "sinkscope/io/safetensors.hpp"
#include "sinkscope/model/load.hpp"
#include "sinkscope/model/weights.hpp"
#include "sinkscope/model/config_io.hpp"
#include "sinkscope/version.hpp"

namespace sinkscope::analysis {

// The layout of a record and of a table; a reader refuses any other (a census folder from another version).
// Version 2: "rules" is an object (the experiments run, their verdicts, an outcome per rule).
inline constexpr int kCensusFormatVersion = 2;
inline constexpr const char* kCensusRecordFormat = "sinkscope.census.checkpoint";
inline constexpr const char* kCensusTableFormat = "sinkscope.census.table";
inline constexpr const char* kCensusRulesNotRun = "not run (--rules none)";

// The rule set every verdict of this build is decided by.
inline nlohmann::json rule_set_identity() {
    return {{"version", kRuleSetVersion}, {"hash", rule_set_hash(rule_table(), kRuleSetVersion)}};
}

// The experiments that measure the checkpoint they are given (--model): a census runs them on each one.
inline const std::vector<std::string>& census_experiments() {
    static const std::vector<std::string> names{"a2_p0_circuit",      "a3_cone_model",       "b1_spike_lifecycle",
                                                "b2_quadratic_ffn",   "b3_vocab_position0",  "b4_rmsnorm_sparsity",
                                                "b5_sink_keys",       "c1_spike_to_sink",    "p1_massive_ablation",
                                                "p2_streaming_window"};
    return names;
}

// The experiments whose rules are about models they train themselves (Paper A's BOS models and A1-control
// beside them, the training trace and scale sweep, the ablation variants): a census checkpoint is not what
// they measure. Every experiment of the rule table is in exactly one of the two lists (tests/analysis).
inline const std::vector<std::string>& training_experiments() {
    static const std::vector<std::string> names{"a1_bos_ablation", "a4_training_trace", "a4_scale_sweep", "b6_ablations"};
    return names;
}

// The ids of the claim rules `experiment` decides, in the rule table's order.
inline std::vector<std::string> claim_rule_ids(const std::string& experiment) {
    std::vector<std::string> ids;
    for (const auto& r : rule_table())
        if (r.experiment == experiment && r.kind == "claim") ids.push_back(r.id);
    return ids;
}

// One experiment run on one census checkpoint: its exit status (or the signal that ended it), its output
// folder relative to the census folder, the last line it printed on stderr when it failed, and its meta.json
// (null when it wrote none).
struct CensusExperimentRun {
    std::string experiment;
    int exit_status = 0;
    int signal = 0;
    std::string output;
    std::string error;
    nlohmann::json meta;
};

// The record's "rules": each experiment's run with its verdicts as written (rule id, hash, conditions with
// their intervals), and one outcome per claim rule of the experiments: the verdict's outcome; "error" when
// the experiment failed; "no verdict written" when it ran and wrote none for that rule (a rule's own
// "no verdict written" case, as A1-window's with --window 0). A verdict decided by another rule set than
// this build's is an error of the census (the experiments must be of the same build).
inline nlohmann::json census_rules(const std::string& size, const std::vector<CensusExperimentRun>& runs) {
    if (size == "none") return kCensusRulesNotRun;
    nlohmann::json experiments = nlohmann::json::array(), outcomes = nlohmann::json::object();
    const nlohmann::json this_rule_set = rule_set_identity();  // hashes the whole table: once, not per experiment
    for (const auto& run : runs) {
        nlohmann::json verdicts = nlohmann::json::array();
        if (run.meta.is_object() && run.meta.contains("verdict"))
            verdicts = run.meta["verdict"].is_array() ? run.meta["verdict"] : nlohmann::json::array({run.meta["verdict"]});
        const bool ok = run.exit_status == 0 && run.signal == 0;
        if (ok && run.meta.is_object() && run.meta.contains("rule_set") && run.meta["rule_set"] != this_rule_set)
            throw Error("census: experiment " + run.experiment + " decided its verdicts by rule set " + run.meta["rule_set"].dump() +
                            ", this sinkscope by " + this_rule_set.dump() + ": use the experiments of the same build (--experiments)",
                        {run.output, "", {}});
        for (const auto& id : claim_rule_ids(run.experiment)) {
            std::string outcome = ok ? "no verdict written" : "error";
            if (ok)
                for (const auto& v : verdicts)
                    if (v.value("rule_id", "") == id) outcome = v.value("outcome", "no verdict written");
            outcomes[id] = outcome;
        }
        nlohmann::json entry{{"experiment", run.experiment}, {"output", run.output}, {"exit_status", run.exit_status}, {"verdicts", verdicts}};
        if (run.signal) entry["signal"] = run.signal;
        if (!ok) entry["error"] = run.error;
        experiments.push_back(entry);
    }
    return {{"size", size}, {"experiments", experiments}, {"outcomes", outcomes}};
}

// The files a checkpoint is read from, sorted: a file itself; a training run's directory, its
// checkpoint.safetensors; a Hugging Face directory, its config.json, its safetensors file(s) and the
// tokenizer files it has (they decide the samples of a text).
inline std::vector<std::string> checkpoint_files(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(path, ec)) throw Error("no such file or directory", {path, "", std::nullopt});
    if (!fs::is_directory(path, ec)) return {path};
    if (io::is_run_directory(path)) return {path + "/checkpoint.safetensors"};
    std::set<std::string> files;
    if (io::is_hf_directory(path)) files.insert(path + "/config.json");
    for (const char* extra : {"tokenizer.json", "tokenizer_config.json", "model.safetensors.index.json"})
        if (fs::exists(path + "/" + extra, ec)) files.insert(path + "/" + extra);
    const io::SafetensorsCheckpoint ck(path);
    for (const auto& f : ck.files()) files.insert(f->path());
    return {files.begin(), files.end()};
}

// SHA-256 of the checkpoint: of the file itself when it is one file; else of the lines
// "<sha256 of the file>  <its path relative to the directory>\n" of its files in sorted order (what
// `sha256sum` prints for them, run in the directory).
inline std::string checkpoint_sha256(const std::string& path) {
    const auto files = checkpoint_files(path);
    auto file_hash = [](const std::string& f) {
        const io::MappedFile m(f);
        return sha256_hex(std::string_view(reinterpret_cast<const char*>(m.data()), std::size_t(m.size())));
    };
    if (files.size() == 1 && files[0] == path) return file_hash(path);
    std::string manifest;
    for (const auto& f : files) manifest += file_hash(f) + "  " + std::filesystem::path(f).lexically_relative(path).string() + "\n";
    return sha256_hex(manifest);
}

// Bytes on disk of the checkpoint's files.
inline std::uint64_t checkpoint_disk_bytes(const std::string& path) {
    std::uint64_t n = 0;
    for (const auto& f : checkpoint_files(path)) n += std::uint64_t(std::filesystem::file_size(f));
    return n;
}

// The storage type of every tensor of the checkpoint, counted in values: {"F32": 1234, "Q4_1": 56789}.
inline std::map<std::string, std::uint64_t> tensor_types(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    std::map<std::string, std::uint64_t> out;
    std::string p = path;
    if (io::is_run_directory(p)) p += "/checkpoint.safetensors";
    if (fs::is_directory(p, ec) || fs::path(p).extension() == ".safetensors") {
        const io::SafetensorsCheckpoint ck(p);
        for (const auto& f : ck.files())
            for (const auto& t : f->tensors()) out[t.dtype] += std::uint64_t(t.n_elements());
        return out;
    }
    const io::GgufFile f(p);
    for (const auto& t : f.tensors()) out[io::type_name(t.type)] += std::uint64_t(t.n_elements());
    return out;
}

// The model's identity in a record: what it is, independent of where it was run.
inline nlohmann::json model_identity(const std::string& path, const model::LoadedModel<float>& m) {
    const auto types = tensor_types(path);
    std::string dominant;
    std::uint64_t most = 0;
    for (const auto& [type, values] : types)
        if (values > most) { most = values; dominant = type; }
    nlohmann::json files = nlohmann::json::array();
    for (const auto& f : checkpoint_files(path)) files.push_back(std::filesystem::path(f).filename().string());
    std::string name;
    if (m.format == "gguf" && m.metadata.is_object() && m.metadata.contains("general.name") && m.metadata["general.name"].is_string())
        name = m.metadata["general.name"].get<std::string>();
    return {{"sha256", checkpoint_sha256(path)},
            {"files", files},
            {"format", m.format},
            {"family", m.config.architecture},
            {"name", name},
            {"parameters", model::parameter_count(m.weights)},
            {"precision", {{"tensor_types", types}, {"dominant", dominant},
                           {"weights", model::to_string(m.weights.storage)}}},
            {"config", model::config_to_json(m.config)}};
}

// Where the massive activation forms: the first layer whose largest |x| meets Sun et al.'s criterion
// (|x| > 100 and >= 1000 x the layer's median |x|), with the distinct channels of that layer's top-k
// entries; null when no layer meets it. Also the layer with the largest |x| of all, massive or not.
inline nlohmann::json spike_site(const ModelSummary& s) {
    nlohmann::json out{{"layer", nullptr}, {"channels", nlohmann::json::array()}, {"abs", nullptr}};
    std::int64_t peak_layer = -1;
    double peak = -1;
    for (const auto& l : s.layers) {
        if (!l.top.empty() && l.top[0].abs_value > peak) { peak = l.top[0].abs_value; peak_layer = l.layer; }
        if (!out["layer"].is_null() || !l.massive) continue;
        out["layer"] = l.layer;
        out["abs"] = l.top[0].abs_value;
        std::vector<std::int64_t> channels;
        for (const auto& t : l.top)
            if (std::find(channels.begin(), channels.end(), t.channel) == channels.end()) channels.push_back(t.channel);
        out["channels"] = channels;
    }
    out["peak_layer"] = peak_layer < 0 ? nlohmann::json(nullptr) : nlohmann::json(peak_layer);
    out["peak_abs"] = peak < 0 ? nlohmann::json(nullptr) : nlohmann::json(peak);
    return out;
}

// The settings every record of one census shares (the per-checkpoint ones, as the sample count and
// fingerprint, are in the record's "stats"). `weights` and `compute` are the options asked for; the
// storage a checkpoint got is in its identity. `input_sha256` is that of the text or token file ("" for --text).
// `rules` is the size the claim rules ran at ("none", "smoke" or "full": each experiment's registered
// default sizes) and `seed` the seed they were given.
inline nlohmann::json census_settings(const StatsRequest& r, const std::string& weights, const std::string& compute,
                                      const std::string& input_sha256, const std::string& rules = "none", unsigned seed = 0) {
    return {{"text_file", r.text_file}, {"text", r.text}, {"tokens_file", r.tokens_file}, {"input_sha256", input_sha256},
            {"seq_len", r.seq_len}, {"max_samples", r.max_samples}, {"bos", r.bos}, {"eps", r.eps},
            {"weights", weights}, {"compute", compute}, {"rules", rules}, {"seed", seed}};
}

// One checkpoint's record; `rules` is census_rules(...) of its experiments.
inline nlohmann::json census_record(const std::string& checkpoint, const nlohmann::json& settings, const nlohmann::json& identity,
                                    const StatsRun& run, const nlohmann::json& rules = kCensusRulesNotRun) {
    return {{"format", kCensusRecordFormat},
            {"format_version", kCensusFormatVersion},
            {"sinkscope_version", version()},
            {"rule_set", rule_set_identity()},
            {"settings", settings},
            {"checkpoint", checkpoint},
            {"model", identity},
            {"spike", spike_site(summarize(run.residual, run.attention, run.settings["eps"].get<double>()))},
            {"rules", rules},
            {"stats", run.json()}};
}

// The record's file name in the census folder: the checkpoint's file name (letters, digits, '.', '-', '_'
// kept, anything else '_') and 12 hex digits of the SHA-256 of the path as given, so that two checkpoints
// of one name in different folders get different records and every task names a record alike.
inline std::string census_record_name(const std::string& checkpoint) {
    std::string base = std::filesystem::path(checkpoint).lexically_normal().filename().string();
    if (base.empty() || base == "." || base == "..")
        base = std::filesystem::path(checkpoint).lexically_normal().parent_path().filename().string();
    for (auto& ch : base)
        if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-' || ch == '_')) ch = '_';
    return base + "-" + sha256_hex(checkpoint).substr(0, 12) + ".json";
}

// Checks that `j` (read from `file`) is a record of this census format; an Error naming the file if not.
inline void check_census_record(const nlohmann::json& j, const std::string& file) {
    if (!j.is_object() || !j.contains("format") || j["format"] != kCensusRecordFormat)
        throw Error("not a sinkscope census record (no \"format\": \"" + std::string(kCensusRecordFormat) + "\")", {file, "", {}});
    if (!j.contains("format_version") || j["format_version"] != kCensusFormatVersion)
        throw Error("a census record of format version " + (j.contains("format_version") ? j["format_version"].dump() : "none") +
                        " (sinkscope " + (j.contains("sinkscope_version") ? j["sinkscope_version"].dump() : "?") +
                        "); this sinkscope (" + version() + ") reads version " + std::to_string(kCensusFormatVersion) +
                        ": rerun the census into a new folder",
                    {file, "", {}});
    for (const char* key : {"sinkscope_version", "rule_set", "settings", "checkpoint", "model", "spike", "rules", "stats"})
        if (!j.contains(key)) throw Error(std::string("census record without \"") + key + "\"", {file, "", {}});
}

// Checks that two records belong to one census: the same sinkscope version, rule set and settings. An
// Error naming `file` (the record `b` came from) and `reference` (where `a` came from) if not.
inline void check_same_census(const nlohmann::json& a, const std::string& reference, const nlohmann::json& b, const std::string& file) {
    auto differ = [&](const char* key, const std::string& what) {
        if (a.at(key) != b.at(key))
            throw Error("not the same census as " + reference + ": " + what + " " + b.at(key).dump() + " here, " + a.at(key).dump() +
                            " there",
                        {file, "", {}});
    };
    differ("sinkscope_version", "sinkscope version");
    differ("rule_set", "rule set");
    if (a.at("settings") != b.at("settings")) {
        std::set<std::string> keys;
        for (const auto& kv : a["settings"].items()) keys.insert(kv.key());
        for (const auto& kv : b["settings"].items()) keys.insert(kv.key());
        for (const auto& key : keys) {
            const auto va = a["settings"].contains(key) ? a["settings"][key] : nlohmann::json("missing");
            const auto vb = b["settings"].contains(key) ? b["settings"][key] : nlohmann::json("missing");
            if (va != vb)
                throw Error("not the same census as " + reference + ": setting '" + key + "' is " + vb.dump() + " here and " +
                                va.dump() + " there",
                            {file, "", {}});
        }
    }
}

// One row of the table: a record reduced to what compares across models.
inline nlohmann::json census_row(const nlohmann::json& record) {
    const auto& stats = record["stats"];
    nlohmann::json sink = nlohmann::json::array(), top = nlohmann::json::array(), median = nlohmann::json::array(),
                   massive = nlohmann::json::array();
    for (const auto& l : stats["layers"]) {
        sink.push_back(l["sink_rate"]);
        top.push_back(l.contains("top") && !l["top"].empty() ? l["top"][0]["abs"] : nlohmann::json(0.0));
        median.push_back(l["median_abs"]);
        massive.push_back(l["massive"]);
    }
    const auto& model = record["model"];
    return {{"checkpoint", record["checkpoint"]},
            {"sha256", model["sha256"]},
            {"family", model["family"]},
            {"name", model["name"]},
            {"parameters", model["parameters"]},
            {"precision", model["precision"]["dominant"]},
            {"weights", model["precision"]["weights"]},
            {"n_layers", stats["layers"].size()},
            {"samples", stats["samples"]},
            {"sink_rate", stats["sink_rate"]},
            {"sink_rate_by_layer", sink},
            {"top_abs_by_layer", top},
            {"median_abs_by_layer", median},
            {"massive_by_layer", massive},
            {"spike", record["spike"]},
            {"rules", record["rules"].is_object() ? record["rules"]["outcomes"] : record["rules"]}};
}

// The merged table of a census: rows sorted by checkpoint path; `failed` (checkpoint → error) lists the
// checkpoints that failed and have no record. Records must agree (check_same_census) and name distinct checkpoints.
inline nlohmann::json census_table(const std::vector<std::pair<std::string, nlohmann::json>>& records,
                                   const std::map<std::string, std::string>& failed) {
    require(!records.empty() || !failed.empty(), "census: no record and no failure to merge");
    std::map<std::string, std::pair<std::string, const nlohmann::json*>> by_checkpoint;
    for (const auto& [file, j] : records) {
        check_census_record(j, file);
        if (!by_checkpoint.empty()) {
            const auto& first = *by_checkpoint.begin()->second.second;
            check_same_census(first, by_checkpoint.begin()->second.first, j, file);
        }
        const auto checkpoint = j["checkpoint"].get<std::string>();
        if (by_checkpoint.count(checkpoint))
            throw Error("checkpoint " + checkpoint + " has two records (also " + by_checkpoint[checkpoint].first + ")", {file, "", {}});
        by_checkpoint[checkpoint] = {file, &j};
    }
    nlohmann::json table{{"format", kCensusTableFormat}, {"format_version", kCensusFormatVersion}};
    if (!by_checkpoint.empty()) {
        const auto& first = *by_checkpoint.begin()->second.second;
        table["sinkscope_version"] = first["sinkscope_version"];
        table["rule_set"] = first["rule_set"];
        table["settings"] = first["settings"];
    }
    table["models"] = nlohmann::json::array();
    for (const auto& [checkpoint, entry] : by_checkpoint) table["models"].push_back(census_row(*entry.second));
    table["failed"] = nlohmann::json::array();
    for (const auto& [checkpoint, error] : failed)
        if (!by_checkpoint.count(checkpoint)) table["failed"].push_back({{"checkpoint", checkpoint}, {"error", error}});
    return table;
}

// The table as text: one line per model, then its per-layer sink rates and top |x|.
inline void print_census_table(std::ostream& os, const nlohmann::json& table) {
    char line[1024];
    if (table.contains("rule_set"))
        os << "census of " << table["models"].size() << " checkpoint(s); sinkscope " << table["sinkscope_version"].get<std::string>()
           << ", rule set " << table["rule_set"]["version"].get<std::string>() << " ("
           << table["rule_set"]["hash"].get<std::string>().substr(0, 12) << ")\n";
    for (const auto& m : table["models"]) {
        const auto& spike = m["spike"];
        std::string where = spike["layer"].is_null() ? std::string("none") : "layer " + spike["layer"].dump() + ", channels ";
        if (!spike["layer"].is_null())
            for (std::size_t i = 0; i < spike["channels"].size(); ++i) where += (i ? "," : "") + spike["channels"][i].dump();
        std::string claims;
        if (m["rules"].is_object())
            for (const auto& [id, outcome] : m["rules"].items()) claims += (claims.empty() ? "" : ", ") + id + " " + outcome.get<std::string>();
        else
            claims = m["rules"].get<std::string>();
        std::snprintf(line, sizeof line, "%s\n  %s, %lld parameters, %s; %lld samples; Sink_0 %.2f%%; massive activation: %s\n",
                      m["checkpoint"].get<std::string>().c_str(), m["family"].get<std::string>().c_str(),
                      (long long)m["parameters"].get<std::int64_t>(), m["precision"].get<std::string>().c_str(),
                      (long long)m["samples"].get<std::int64_t>(), 100 * m["sink_rate"].get<double>(), where.c_str());
        os << line << "  claims: " << claims << "\n";
        os << "  layer ";
        for (std::size_t l = 0; l < m["sink_rate_by_layer"].size(); ++l) { std::snprintf(line, sizeof line, "%9zu", l); os << line; }
        os << "\n  sink  ";
        for (const auto& v : m["sink_rate_by_layer"]) { std::snprintf(line, sizeof line, "%8.1f%%", 100 * v.get<double>()); os << line; }
        os << "\n  top|x|";
        for (const auto& v : m["top_abs_by_layer"]) { std::snprintf(line, sizeof line, "%9.2f", v.get<double>()); os << line; }
        os << "\n";
    }
    for (const auto& f : table["failed"])
        os << "FAILED " << f["checkpoint"].get<std::string>() << ": " << f["error"].get<std::string>() << "\n";
}

}  // namespace sinkscope::analysis
