// analysis/rule_table.hpp: every registered rule is well formed, and the values the table takes from the
// definitions (core/measures.hpp: Sun et al.'s 100 and 1000, Gu et al.'s ε; analysis/spikes.hpp: B1's
// windows) equal those constants, so a rule cannot drift from the definition it cites.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include <sinkscope/analysis/rule_table.hpp>
#include <sinkscope/analysis/spikes.hpp>
#include <sinkscope/analysis/verdict.hpp>
#include <sinkscope/core/measures.hpp>

using namespace sinkscope;
using namespace sinkscope::analysis;

TEST_CASE("every registered rule is well formed", "[rule_set]") {
    const auto& rules = rule_table();
    REQUIRE(rules.size() >= 20);
    std::set<std::string> ids;
    const std::set<std::string> roles{">=", "<=", "locator", "minimum"};
    const std::set<std::string> absent{"not applicable", "not shown at this scale", "inconclusive"};
    for (const auto& r : rules) {
        INFO("rule " << r.id);
        CHECK(ids.insert(r.id).second);
        CHECK((r.kind == "claim" || r.kind == "control"));
        CHECK(!r.experiment.empty());
        CHECK(!r.scope.empty());
        CHECK(!r.values.empty());
        std::set<std::string> keys;
        for (const auto& v : r.values) {
            INFO("value " << v.key);
            CHECK(keys.insert(v.key).second);
            CHECK(roles.count(v.role) == 1);
            CHECK(std::isfinite(v.value));
            CHECK(!v.source.empty());
        }
        for (const auto& p : r.preconditions) CHECK(absent.count(p.if_absent) == 1);
        CHECK(r.outcomes.count("every condition holds") == 1);
        // A control says what its rule should give on its model, and only a control does.
        CHECK(r.outcomes.count(kControlExpectation) == (r.kind == "control" ? 1u : 0u));
        if (r.kind == "control") {
            const std::set<std::string> outcomes{"reproduced", "not reproduced", "inconclusive", "not applicable",
                                                 "not shown at this scale"};
            CHECK(outcomes.count(r.expected_outcome()) == 1);
        }
        const std::string h = rule_hash(r);
        CHECK(h.size() == 64);
        CHECK(std::all_of(h.begin(), h.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }));
    }
    CHECK(rule("A1-control").kind == "control");
}

// The experiments read every registered number from the table (Rule::value), except Sun et al.'s 100 / 1000
// and Gu et al.'s eps, which they use through core/measures.hpp (measures::is_massive, is_sink, the trainer's
// trace), and Paper B's step windows, which analysis/spikes.hpp's steps_in_windows uses: the table registers
// those as definitions, and this check keeps the table and the definitions from drifting apart.
TEST_CASE("values the table takes from core/measures.hpp and analysis/spikes.hpp equal the constants", "[rule_set]") {
    const std::map<std::string, double> measures_keys{{"sink_eps", measures::kSinkEps},
                                                      {"massive_abs_min", measures::kMassiveAbs},
                                                      {"large_abs_min", measures::kMassiveAbs},
                                                      {"x0_abs_min", measures::kMassiveAbs},
                                                      {"early_layer_mean_abs_min", measures::kMassiveAbs},
                                                      {"massive_median_ratio_min", measures::kMassiveRatio}};
    std::size_t seen = 0;
    for (const auto& r : rule_table())
        for (const auto& v : r.values) {
            INFO("rule " << r.id << ", value " << v.key);
            if (v.source.rfind("definition: core/measures.hpp", 0) == 0) {
                REQUIRE(measures_keys.count(v.key) == 1);
                CHECK(v.value == measures_keys.at(v.key));
                ++seen;
            } else if (measures_keys.count(v.key)) {
                FAIL("a core/measures.hpp key registered with another source: " << v.source);
            }
        }
    CHECK(seen >= 20);
    CHECK(rule("B1").value("step_up_window_max") == kStepUpWindow);
    CHECK(rule("B1").value("step_down_window_min") == kStepDownWindow);
}
