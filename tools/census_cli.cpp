// `sinkscope census` (tools/census_cli.hpp): the command-line side of analysis/census.hpp — which
// checkpoints this task runs, the census folder, resuming, failures, --plan and --merge.
#include "census_cli.hpp"

#include <spawn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <sinkscope/analysis/census.hpp>
#include <sinkscope/analysis/stats_run.hpp>
#include <sinkscope/core/error.hpp>
#include <sinkscope/io/memory.hpp>
#include <sinkscope/model/load.hpp>
#include <sinkscope/train/random_model.hpp>

extern char** environ;

namespace fs = std::filesystem;

namespace sinkscope::cli {

namespace {

constexpr const char* kFailedFormat = "sinkscope.census.failed";

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

nlohmann::json read_json(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw Error("cannot open", {path, "", {}});
    try {
        return nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw Error(std::string("invalid JSON: ") + e.what(), {path, "", {}});
    }
}

// Writes `j` to a temporary file beside `path`, then renames it over `path`: a reader (or a rerun after a
// kill) sees the whole file or none.
void write_json_atomically(const std::string& path, const nlohmann::json& j) {
    const fs::path target(path);
    const std::string tmp = (target.parent_path() / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()))).string();
    std::error_code ec;
    {
        std::ofstream out(tmp);
        if (!out) throw Error("cannot write", {tmp, "", {}});
        out << j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
        out.flush();
        if (!out) {
            fs::remove(tmp, ec);
            throw Error("write failed", {tmp, "", {}});
        }
    }
    fs::rename(tmp, path, ec);
    if (ec) {
        const std::string why = ec.message();
        fs::remove(tmp, ec);
        throw Error("cannot rename " + tmp + " to it: " + why, {path, "", {}});
    }
}

// The checkpoints named on the command line, then those of the list file, each once; every one must exist.
std::vector<std::string> gather_checkpoints(const CensusOptions& o) {
    std::vector<std::pair<std::string, std::string>> named;  // (path, where it was named)
    for (const auto& c : o.checkpoints) named.push_back({c, "the command line"});
    if (!o.list_file.empty()) {
        std::ifstream in(o.list_file);
        if (!in) throw Error("census: cannot open the checkpoint list", {o.list_file, "", {}});
        std::string line;
        for (int n = 1; std::getline(in, line); ++n) {
            if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
            const auto first = line.find_first_not_of(" \t\r"), last = line.find_last_not_of(" \t\r");
            if (first == std::string::npos) continue;
            named.push_back({line.substr(first, last - first + 1), o.list_file + " line " + std::to_string(n)});
        }
    }
    std::vector<std::string> out;
    std::map<std::string, std::string> seen;
    for (const auto& [path, where] : named) {
        std::error_code ec;
        if (!fs::exists(path, ec))
            throw Error("census: checkpoint " + path + " (named on " + where + ") does not exist",
                        {where == "the command line" ? path : o.list_file, "", {}});
        if (seen.count(path)) throw Error("census: checkpoint " + path + " named twice (" + seen[path] + " and " + where + ")", {path, "", {}});
        seen[path] = where;
        out.push_back(path);
    }
    require(!out.empty(), "census: give checkpoints (paths, or --list FILE with one path per line)");
    return out;
}

// The I-th task's checkpoints: the k-th (from 0) goes to task k mod N.
std::vector<std::string> shard_part(const std::vector<std::string>& all, const analysis::StatsShard& s) {
    std::vector<std::string> out;
    for (std::size_t k = 0; k < all.size(); ++k)
        if (std::int64_t(k) % s.count == s.index) out.push_back(all[k]);
    return out;
}

// DIR/name, without a doubled '/' when DIR ends in one.
std::string in_dir(const std::string& dir, const std::string& name) { return (fs::path(dir) / name).lexically_normal().string(); }

std::string failed_file(const std::string& dir, const analysis::StatsShard& s) {
    return in_dir(dir, s.count == 1 ? std::string("failed.json")
                                    : "failed." + std::to_string(s.index) + "-of-" + std::to_string(s.count) + ".json");
}

// "1040128 bytes (0.0 GiB)"
std::string bytes_text(std::uint64_t n) { return std::to_string(n) + " bytes (" + io::format_gib(n) + ")"; }

std::string file_sha256(const std::string& path) {
    const io::MappedFile m(path);
    return sha256_hex(std::string_view(reinterpret_cast<const char*>(m.data()), std::size_t(m.size())));
}

// --plan: what each checkpoint of this task takes, from the tensor tables (nothing is loaded).
int print_plan(const std::vector<std::string>& mine, const CensusOptions& o) {
    const auto available = io::available_memory();
    std::cout << "plan: " << mine.size() << " checkpoint(s) in this task; memory available now: "
              << (available ? io::format_gib(*available) : std::string("unknown")) << "\n";
    int failures = 0;
    for (const auto& path : mine) {
        const std::string record = o.out.empty() ? "" : in_dir(in_dir(o.out, "checkpoints"), analysis::census_record_name(path));
        std::error_code ec;
        const bool finished = !record.empty() && fs::exists(record, ec);
        try {
            const std::uint64_t disk = analysis::checkpoint_disk_bytes(path);
            const std::uint64_t f32 = io::detail::mul_saturating(io::checkpoint_value_count(path), 4);
            const std::uint64_t file_type = io::checkpoint_file_type_bytes(path);
            const bool keeps_file_type = o.weights == "file" || (o.weights == "auto" && available && f32 > *available);
            const std::uint64_t need = keeps_file_type ? file_type : f32;
            std::cout << path << (finished ? "  [finished: skipped]" : "") << "\n  on disk " << bytes_text(disk)
                      << "; weights: float32 " << bytes_text(f32) << ", in file types " << bytes_text(file_type)
                      << "; --weights " << o.weights << " loads " << (keeps_file_type ? "file types" : "float32") << " ("
                      << io::format_gib(need) << (available && need > *available ? ", does NOT fit" : "") << ")\n";
        } catch (const Error& e) {
            std::cout << path << "\n  cannot plan: " << e.what() << "\n";
            ++failures;
        }
    }
    return failures ? 1 : 0;
}

// The sinkscope-experiments executable the claim rules run in: --experiments, else the one beside this
// executable (an installed layout), else ../experiments/ from it (the build tree: build/tools/sinkscope and
// build/experiments/sinkscope-experiments). An Error before anything runs when there is none.
std::string find_experiments(const CensusOptions& o) {
    auto executable = [](const fs::path& p) {
        std::error_code ec;
        return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
    };
    if (!o.experiments.empty()) {
        if (!executable(o.experiments))
            throw Error("census --rules " + o.rules + ": --experiments is not an executable file", {o.experiments, "", {}});
        return fs::absolute(o.experiments).string();
    }
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    std::string tried;
    if (!ec)
        for (const fs::path& candidate : {self.parent_path() / "sinkscope-experiments",
                                          self.parent_path().parent_path() / "experiments" / "sinkscope-experiments"}) {
            if (executable(candidate)) return candidate.lexically_normal().string();
            tried += (tried.empty() ? "" : ", ") + candidate.lexically_normal().string();
        }
    throw Error("census --rules " + o.rules + ": no sinkscope-experiments executable (tried " + (tried.empty() ? "none" : tried) +
                "): build it (cmake --build build --target sinkscope_experiments), name it with --experiments PATH, or run "
                "the statistics alone with --rules none");
}

// Runs `argv` with stdout and stderr into `log`; its exit status, or the signal that ended it.
std::pair<int, int> run_logged(const std::vector<std::string>& argv, const std::string& log) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = 0;
    const int spawn_error = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawn_error != 0) throw Error(std::string("census: cannot start the experiment: ") + std::strerror(spawn_error), {argv[0], "", {}});
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) throw Error(std::string("census: waitpid failed: ") + std::strerror(errno), {argv[0], "", {}});
    if (WIFSIGNALED(status)) return {-1, WTERMSIG(status)};
    return {WEXITSTATUS(status), 0};
}

// The last line of a file that is not blank ("" when none): an experiment's error message.
std::string last_line(const std::string& path) {
    std::ifstream in(path);
    std::string line, last;
    while (std::getline(in, line))
        if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
    return last;
}

// The claim experiments on one checkpoint, each into DIR/rules/<name>/<experiment>/ (emptied first: a killed
// run's output is not kept), at the census's input, BOS, weights, compute and seed.
std::vector<analysis::CensusExperimentRun> run_rules(const CensusOptions& o, const std::string& experiments_exe,
                                                     const std::string& checkpoint, const std::string& tag) {
    std::vector<analysis::CensusExperimentRun> runs;
    if (o.rules == "none") return runs;
    std::string name = analysis::census_record_name(checkpoint);
    name.erase(name.size() - 5);  // ".json"
    const std::string relative_dir = (fs::path("rules") / name).string();
    const std::string dir = in_dir(o.out, relative_dir);
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(dir, ec);
    if (ec) throw Error("census: cannot create " + dir + ": " + ec.message(), {dir, "", {}});
    std::string corpus = o.text_file;
    if (!o.text.empty()) {  // --text: the experiments read a corpus file
        corpus = in_dir(dir, "text.txt");
        std::ofstream(corpus) << o.text << "\n";
    }
    const auto& experiments = analysis::census_experiments();
    for (std::size_t k = 0; k < experiments.size(); ++k) {
        const auto& experiment = experiments[k];
        const auto t0 = std::chrono::steady_clock::now();
        analysis::CensusExperimentRun run;
        run.experiment = experiment;
        run.output = (fs::path(relative_dir) / experiment).string();
        const std::string out = in_dir(o.out, run.output), log = out + ".log";
        std::vector<std::string> argv{experiments_exe, experiment,     "--model",   checkpoint,          "--out",
                                      out,             "--seed",       std::to_string(o.seed),  "--bos", o.bos ? "on" : "off",
                                      "--weights",     o.weights,      "--compute", o.compute};
        if (o.rules == "smoke") argv.push_back("--smoke");
        if (!o.tokens_file.empty()) {
            argv.push_back("--tokens-file");
            argv.push_back(o.tokens_file);
        } else {
            argv.push_back("--corpus");
            argv.push_back(corpus);
        }
        std::tie(run.exit_status, run.signal) = run_logged(argv, log);
        if (run.exit_status == 0 && run.signal == 0) {
            const std::string meta = in_dir(out, "meta.json");
            if (fs::exists(meta, ec)) run.meta = read_json(meta);
        } else {
            run.error = run.signal ? "killed by signal " + std::to_string(run.signal) : last_line(log);
        }
        std::cerr << tag << ": rules " << (k + 1) << "/" << experiments.size() << " " << experiment << " ("
                  << seconds_since(t0) << " s)"
                  << (run.exit_status || run.signal ? ": FAILED (" + run.error + "; " + log + ")" : std::string()) << "\n";
        runs.push_back(std::move(run));
    }
    return runs;
}

// The header every record of this census must share (analysis::check_same_census compares these keys).
nlohmann::json expected_header(const nlohmann::json& settings) {
    return {{"sinkscope_version", version()}, {"rule_set", analysis::rule_set_identity()}, {"settings", settings}};
}

int run(const CensusOptions& o) {
    const auto all = gather_checkpoints(o);
    const analysis::StatsShard shard = o.shard.empty() ? analysis::StatsShard{} : analysis::parse_shard(o.shard);
    const auto mine = shard_part(all, shard);
    if (o.plan) return print_plan(mine, o);
    require(!o.out.empty(), "census: give --out DIR (the census folder)");
    require(!(o.text.empty() && o.text_file.empty() && o.tokens_file.empty()), "census: give --tokens-file, --text-file or --text");
    analysis::StatsRequest request;
    request.text_file = o.text_file;
    request.text = o.text;
    request.tokens_file = o.tokens_file;
    request.seq_len = o.seq_len;
    request.max_samples = o.max_samples;
    request.eps = o.eps;
    request.bos = o.bos;
    request.batch = o.batch;
    analysis::check_request(request);
    const model::LoadOptions load_options = model::load_options_from(o.weights, o.compute);
    const std::string input = !o.tokens_file.empty() ? o.tokens_file : o.text_file;
    const nlohmann::json settings = analysis::census_settings(request, o.weights, o.compute,
                                                              input.empty() ? std::string() : file_sha256(input), o.rules, o.seed);
    const std::string experiments_exe = o.rules == "none" ? std::string() : find_experiments(o);
    const nlohmann::json header = expected_header(settings);

    const std::string records_dir = in_dir(o.out, "checkpoints");
    std::error_code ec;
    fs::create_directories(records_dir, ec);
    if (ec) throw Error("census: cannot create the census folder: " + ec.message(), {o.out, "", {}});
    // Records already there: from this census (skipped), or bad input (another version or settings), checked
    // before anything runs.
    std::set<std::string> finished;
    for (const auto& path : mine) {
        const std::string record = in_dir(records_dir, analysis::census_record_name(path));
        if (!fs::exists(record, ec)) continue;
        const auto j = read_json(record);
        analysis::check_census_record(j, record);
        analysis::check_same_census(header, "this run's settings", j, record);
        require(j["checkpoint"] == path, "a record of checkpoint " + j["checkpoint"].dump() + ", not of " + path, {record, "", {}});
        finished.insert(path);
    }
    std::cerr << "census: " << all.size() << " checkpoint(s), " << mine.size() << " in this task"
              << (shard.count > 1 ? " (shard " + o.shard + ")" : std::string()) << ", " << finished.size() << " finished before\n";

    std::map<std::string, std::string> failed;
    std::size_t done = 0;
    for (const auto& path : mine) {
        ++done;
        const std::string record = in_dir(records_dir, analysis::census_record_name(path));
        const std::string tag = "[" + std::to_string(done) + "/" + std::to_string(mine.size()) + "] " + path;
        if (finished.count(path)) {
            std::cerr << tag << ": finished, skipped\n";
            continue;
        }
        const auto t0 = std::chrono::steady_clock::now();
        try {
            const auto m = train::load_within_memory(path, load_options);
            analysis::StatsRequest r = request;
            r.model = path;
            const auto stats = analysis::run_stats(m, r);
            const auto rules = analysis::census_rules(o.rules, run_rules(o, experiments_exe, path, tag));
            const auto j = analysis::census_record(path, settings, analysis::model_identity(path, m), stats, rules);
            write_json_atomically(record, j);
            std::cerr << tag << ": " << stats.total << " samples, " << seconds_since(t0) << " s -> " << record << "\n";
        } catch (const Error& e) {
            failed[path] = e.what();
        } catch (const std::bad_alloc&) {
            failed[path] = "out of memory (std::bad_alloc)";
        } catch (const nlohmann::json::exception& e) {
            failed[path] = std::string("a metadata or config value has the wrong type (") + e.what() + ")";
        } catch (const fs::filesystem_error& e) {
            failed[path] = e.what();
        }
        if (failed.count(path)) std::cerr << tag << ": FAILED: " << failed[path] << "\n";
    }
    const std::string failed_path = failed_file(o.out, shard);
    if (failed.empty()) {
        fs::remove(failed_path, ec);  // a rerun that succeeded: the old failures are gone
        return 0;
    }
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [path, error] : failed) list.push_back({{"checkpoint", path}, {"error", error}});
    write_json_atomically(failed_path, {{"format", kFailedFormat}, {"format_version", analysis::kCensusFormatVersion},
                                        {"shard", o.shard.empty() ? "0/1" : o.shard}, {"failed", list}});
    std::cerr << "census: " << failed.size() << " checkpoint(s) failed; listed in " << failed_path << "\n";
    return 1;
}

int merge(const std::string& dir) {
    const std::string records_dir = in_dir(dir, "checkpoints");
    std::error_code ec;
    if (!fs::is_directory(records_dir, ec))
        throw Error("census --merge: not a census folder (no checkpoints/ in it)", {dir, "", {}});
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(records_dir)) {
        const auto name = e.path().filename().string();
        if (e.is_regular_file() && name[0] != '.' && e.path().extension() == ".json") files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    std::vector<std::pair<std::string, nlohmann::json>> records;
    for (const auto& f : files) records.push_back({f, read_json(f)});
    std::vector<std::string> failed_files;
    for (const auto& e : fs::directory_iterator(dir)) {
        const auto name = e.path().filename().string();
        if (e.is_regular_file() && name.rfind("failed", 0) == 0 && e.path().extension() == ".json") failed_files.push_back(e.path().string());
    }
    std::sort(failed_files.begin(), failed_files.end());
    std::map<std::string, std::string> failed;
    for (const auto& f : failed_files) {
        const auto j = read_json(f);
        if (!j.is_object() || j.value("format", "") != kFailedFormat)
            throw Error("not a census failure list (no \"format\": \"" + std::string(kFailedFormat) + "\")", {f, "", {}});
        if (j.value("format_version", 0) != analysis::kCensusFormatVersion)
            throw Error("a census failure list of format version " + j["format_version"].dump() + "; this sinkscope reads version " +
                            std::to_string(analysis::kCensusFormatVersion),
                        {f, "", {}});
        for (const auto& x : j.at("failed")) failed[x.at("checkpoint").get<std::string>()] = x.at("error").get<std::string>();
    }
    const auto table = analysis::census_table(records, failed);
    write_json_atomically(in_dir(dir, "table.json"), table);
    analysis::print_census_table(std::cout, table);
    std::cerr << "census --merge: " << table["models"].size() << " model(s), " << table["failed"].size() << " failed; wrote "
              << in_dir(dir, "table.json") << "\n";
    return table["failed"].empty() ? 0 : 1;
}

}  // namespace

CLI::App* add_census_subcommand(CLI::App& app, CensusOptions& o) {
    auto* c = app.add_subcommand("census", "per-layer statistics of many checkpoints, one record each in a census folder; "
                                           "--merge DIR: their table");
    c->add_option("CHECKPOINTS", o.checkpoints, "checkpoints (.gguf files, Hugging Face directories, sinkscope checkpoints)");
    c->add_option("--list", o.list_file, "a file naming checkpoints, one per line ('#' starts a comment)");
    c->add_option("--out", o.out, "the census folder: DIR/checkpoints/<name>.json per checkpoint, DIR/failed.json");
    c->add_option("--merge", o.merge_dir, "merge the census folder DIR into DIR/table.json and print the table");
    c->add_option("--shard", o.shard, "I/N: only the checkpoints k with k mod N = I (k and I count from 0)");
    c->add_flag("--plan", o.plan, "print each checkpoint's size on disk and the memory its weights take; run nothing");
    auto* file_opt = c->add_option("--text-file", o.text_file, "text to cut into samples (with each model's tokenizer)");
    auto* text_opt = c->add_option("--text", o.text, "text to cut into samples")->excludes(file_opt);
    c->add_option("--tokens-file", o.tokens_file, "token ids, one sequence per line (for models without a tokenizer)")
        ->excludes(file_opt)
        ->excludes(text_opt);
    c->add_option("--seq-len", o.seq_len, "tokens per sample (Gu et al.: 64)")->check(CLI::Range(2, 1 << 20))->capture_default_str();
    c->add_option("--samples", o.max_samples, "at most this many samples (0: all the input gives)")->capture_default_str();
    c->add_option("--eps", o.eps, "sink threshold on alpha_0 (Gu et al.: 0.3)")->check(CLI::Range(0.0, 1.0))->capture_default_str();
    c->add_flag("--bos", o.bos, "prepend BOS to every text sample (default: none, as Gu et al.)");
    c->add_option("--batch", o.batch, "samples per forward pass where batching is bit-exact")->check(CLI::Range(1, 4096))->capture_default_str();
    c->add_option("--weights", o.weights, "auto|float32|file|bf16, as for stats")
        ->check(CLI::IsMember({"auto", "file", "float32", "bf16"}))
        ->capture_default_str();
    c->add_option("--compute", o.compute, "exact|int8|bf16, as for stats")->check(CLI::IsMember({"exact", "int8", "bf16"}))->capture_default_str();
    c->add_option("--rules", o.rules,
                  "the claim rules on each checkpoint (the experiments that measure a given model, run by "
                  "sinkscope-experiments into DIR/rules/): full (their registered default sizes), smoke (test sizes: a "
                  "check of the code, not of the claims) or none (the statistics alone)")
        ->check(CLI::IsMember({"none", "smoke", "full"}))
        ->capture_default_str();
    c->add_option("--experiments", o.experiments,
                  "the sinkscope-experiments executable (default: beside this one, or build/experiments/)");
    c->add_option("--seed", o.seed, "the experiments' --seed")->capture_default_str();
    return c;
}

int run_census(const CensusOptions& o) {
    if (!o.merge_dir.empty()) {
        require(o.checkpoints.empty() && o.list_file.empty(), "census --merge DIR takes no checkpoints");
        return merge(o.merge_dir);
    }
    return run(o);
}

}  // namespace sinkscope::cli
