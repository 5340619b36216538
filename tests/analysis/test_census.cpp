// analysis/census.hpp: where the spike forms (first layer meeting Sun et al.'s criterion, its distinct
// top channels), record names (distinct for one file name in two folders, safe characters), the checks
// that records belong to one census (an Error naming the file and what differs), the merged table
// (sorted, one row per checkpoint, failures only where no record exists) and the checkpoint hash
// (FIPS 180-4's "abc" for a file; the sha256sum lines of its files for a directory).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include <sinkscope/analysis/census.hpp>

#include "test_paths.hpp"

using namespace sinkscope;
using namespace sinkscope::analysis;

namespace {

LayerSummary layer(std::int64_t l, std::vector<std::pair<double, std::int64_t>> top, double median) {
    LayerSummary s;
    s.layer = l;
    for (const auto& [abs, channel] : top) s.top.push_back({abs, abs, channel, 0, 0});
    s.median_abs = median;
    s.massive = measures::is_massive(top[0].first, median);
    return s;
}

// A record with the keys check_census_record and census_row read, and two layers.
nlohmann::json record(const std::string& checkpoint, std::int64_t seq_len = 16) {
    nlohmann::json stats{{"samples", 3}, {"sink_rate", 0.25},
                         {"layers", {{{"sink_rate", 0.5}, {"median_abs", 1.0}, {"massive", false}, {"top", {{{"abs", 2.0}}}}},
                                     {{"sink_rate", 0.0}, {"median_abs", 0.1}, {"massive", true}, {"top", {{{"abs", 500.0}}}}}}}};
    return {{"format", kCensusRecordFormat}, {"format_version", kCensusFormatVersion}, {"sinkscope_version", version()},
            {"rule_set", rule_set_identity()}, {"settings", {{"seq_len", seq_len}, {"eps", 0.3}}}, {"checkpoint", checkpoint},
            {"model", {{"sha256", "00"}, {"family", "llama"}, {"name", ""}, {"parameters", 10},
                       {"precision", {{"dominant", "F32"}, {"weights", "float32"}}}}},
            {"spike", {{"layer", 1}, {"channels", {4}}}}, {"rules", kCensusRulesNotRun}, {"stats", stats}};
}

std::string error_of(const std::function<void()>& f) {
    try { f(); } catch (const Error& e) { return e.what(); }
    return "";
}

}  // namespace

TEST_CASE("spike_site: the first massive layer and its distinct top channels", "[analysis][census]") {
    ModelSummary s;
    s.layers = {layer(0, {{5, 1}, {4, 2}, {3, 3}}, 1.0),            // not massive
                layer(1, {{2000, 7}, {1900, 7}, {300, 3}}, 0.5),    // massive: 2000 > 100 and >= 1000 x 0.5
                layer(2, {{9000, 1}, {10, 2}, {9, 2}}, 0.5)};       // massive too, and the peak
    const auto j = spike_site(s);
    CHECK(j["layer"] == 1);
    CHECK(j["channels"] == nlohmann::json({7, 3}));
    CHECK(j["abs"] == 2000.0);
    CHECK(j["peak_layer"] == 2);
    CHECK(j["peak_abs"] == 9000.0);
    s.layers = {layer(0, {{150, 1}}, 1.0)};  // > 100 but only 150 x the median
    CHECK(spike_site(s)["layer"].is_null());
    CHECK(spike_site(s)["channels"].empty());
    CHECK(spike_site(s)["peak_layer"] == 0);
}

TEST_CASE("census_record_name: the file name, safe characters, distinct per path", "[analysis][census]") {
    const auto a = census_record_name("/a/m/model.gguf"), b = census_record_name("/b/m/model.gguf");
    CHECK(a.rfind("model.gguf-", 0) == 0);
    CHECK(a != b);
    CHECK(a.size() == std::string("model.gguf-").size() + 12 + 5);
    CHECK(a == "model.gguf-" + sha256_hex("/a/m/model.gguf").substr(0, 12) + ".json");
    CHECK(census_record_name("runs/my model (1).gguf").rfind("my_model__1_.gguf-", 0) == 0);
    CHECK(census_record_name("hf/SmolLM2/").rfind("SmolLM2-", 0) == 0);
}

TEST_CASE("check_same_census and check_census_record: errors name the file and what differs", "[analysis][census]") {
    const auto a = record("x.gguf");
    CHECK(error_of([&] { check_same_census(a, "a.json", record("y.gguf"), "b.json"); }).empty());
    const auto other_settings = error_of([&] { check_same_census(a, "a.json", record("y.gguf", 8), "b.json"); });
    CHECK(other_settings.find("setting 'seq_len' is 8 here and 16 there") != std::string::npos);
    CHECK(other_settings.find("b.json") != std::string::npos);
    auto other_rules = record("y.gguf");
    other_rules["rule_set"]["hash"] = "0";
    CHECK(error_of([&] { check_same_census(a, "a.json", other_rules, "b.json"); }).find("rule set") != std::string::npos);
    auto old = record("y.gguf");
    old["format_version"] = kCensusFormatVersion + 1;
    const auto version_error = error_of([&] { check_census_record(old, "old.json"); });
    CHECK(version_error.find("format version " + std::to_string(kCensusFormatVersion + 1)) != std::string::npos);
    CHECK(version_error.find("old.json") != std::string::npos);
    CHECK(error_of([&] { check_census_record(nlohmann::json{{"format", "x"}}, "x.json"); }).find("not a sinkscope census record") !=
          std::string::npos);
}

TEST_CASE("census_table: rows sorted by checkpoint, duplicates refused, failures without a record kept", "[analysis][census]") {
    const std::vector<std::pair<std::string, nlohmann::json>> records{{"r/b.json", record("b.gguf")}, {"r/a.json", record("a.gguf")}};
    const auto t = census_table(records, {{"a.gguf", "old failure"}, {"c.gguf", "cannot open"}});
    REQUIRE(t["models"].size() == 2);
    CHECK(t["models"][0]["checkpoint"] == "a.gguf");
    CHECK(t["models"][1]["checkpoint"] == "b.gguf");
    CHECK(t["models"][0]["sink_rate_by_layer"] == nlohmann::json({0.5, 0.0}));
    CHECK(t["models"][0]["top_abs_by_layer"] == nlohmann::json({2.0, 500.0}));
    CHECK(t["models"][0]["massive_by_layer"] == nlohmann::json({false, true}));
    CHECK(t["models"][0]["rules"] == kCensusRulesNotRun);
    CHECK(t["failed"] == nlohmann::json({{{"checkpoint", "c.gguf"}, {"error", "cannot open"}}}));
    const std::vector<std::pair<std::string, nlohmann::json>> twice{{"r/a.json", record("a.gguf")}, {"r/a2.json", record("a.gguf")}};
    CHECK(error_of([&] { census_table(twice, {}); }).find("has two records") != std::string::npos);
    std::ostringstream os;
    print_census_table(os, t);
    CHECK(os.str().find("FAILED c.gguf: cannot open") != std::string::npos);
}

TEST_CASE("checkpoint_sha256: a file's SHA-256, a directory's over its files' sha256sum lines", "[analysis][census]") {
    namespace fs = std::filesystem;
    const auto dir = fs::temp_directory_path() / ("sinkscope_census_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const auto file = (dir / "abc.bin").string();
    std::ofstream(file) << "abc";
    // FIPS 180-4, example "abc".
    CHECK(checkpoint_sha256(file) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    fs::remove_all(dir);
    const std::string hf = test::fixture("model/random_gemma2");
    const auto files = checkpoint_files(hf);
    REQUIRE(files == std::vector<std::string>{hf + "/config.json", hf + "/model.safetensors"});
    std::string lines;
    for (const auto& f : files) {
        std::ifstream in(f, std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        lines += sha256_hex(bytes) + "  " + fs::path(f).filename().string() + "\n";
    }
    CHECK(checkpoint_sha256(hf) == sha256_hex(lines));
    CHECK(error_of([] { checkpoint_sha256("no/such/model.gguf"); }).find("no/such/model.gguf") != std::string::npos);
}

TEST_CASE("census experiments: every experiment of the rule table is either run on a census checkpoint or trains its own models",
          "[analysis][census]") {
    std::set<std::string> table_experiments;
    for (const auto& r : rule_table()) table_experiments.insert(r.experiment);
    const auto& census = census_experiments();
    const auto& training = training_experiments();
    for (const auto& e : table_experiments) {
        const bool in_census = std::count(census.begin(), census.end(), e) == 1;
        const bool in_training = std::count(training.begin(), training.end(), e) == 1;
        INFO(e);
        CHECK(in_census != in_training);
    }
    for (const auto& e : census) CHECK(table_experiments.count(e) == 1);  // no name the table does not know
    for (const auto& e : training) CHECK(table_experiments.count(e) == 1);
    // c1_spike_to_sink decides three claims, in the table's order.
    CHECK(claim_rule_ids("c1_spike_to_sink") == std::vector<std::string>{"C1", "C2", "C3"});
    // A control is no claim: a1_bos_ablation's A1-control is left out.
    CHECK(claim_rule_ids("a1_bos_ablation") == std::vector<std::string>{"A1", "A1-window"});
}

TEST_CASE("census_rules: an outcome per claim rule from the verdicts, 'error' for a failed experiment, none said",
          "[analysis][census]") {
    CHECK(census_rules("none", {}) == kCensusRulesNotRun);
    CensusExperimentRun c1{"c1_spike_to_sink", 0, 0, "rules/m/c1_spike_to_sink", "", {}};
    c1.meta = {{"rule_set", rule_set_identity()},
               {"verdict", {{{"rule_id", "C1"}, {"outcome", "reproduced"}}, {{"rule_id", "C3"}, {"outcome", "inconclusive"}}}}};
    CensusExperimentRun b2{"b2_quadratic_ffn", 0, 0, "rules/m/b2_quadratic_ffn", "", {}};
    b2.meta = {{"rule_set", rule_set_identity()}, {"verdict", {{"rule_id", "B2"}, {"outcome", "not applicable"}}}};  // one verdict, no list
    CensusExperimentRun p2{"p2_streaming_window", 2, 0, "rules/m/p2_streaming_window", "sinkscope: too short [file ids.txt]", nullptr};
    const auto j = census_rules("smoke", {c1, b2, p2});
    CHECK(j["size"] == "smoke");
    CHECK(j["outcomes"] == nlohmann::json({{"C1", "reproduced"}, {"C2", "no verdict written"}, {"C3", "inconclusive"},
                                           {"B2", "not applicable"}, {"P2", "error"}}));
    REQUIRE(j["experiments"].size() == 3);
    CHECK(j["experiments"][1]["verdicts"].size() == 1);
    CHECK(j["experiments"][2]["error"] == "sinkscope: too short [file ids.txt]");
    CHECK(!j["experiments"][0].contains("error"));
    // The record's table row is the outcome map.
    auto r = record("m.gguf");
    r["rules"] = j;
    CHECK(census_row(r)["rules"] == j["outcomes"]);
    // Verdicts decided by another rule set (experiments of another build) are refused, naming the output.
    b2.meta["rule_set"]["hash"] = std::string(64, '0');
    CHECK(error_of([&] { census_rules("full", {b2}); }).find("rules/m/b2_quadratic_ffn") != std::string::npos);
}
