// The pre-registered rule set: every threshold, scope, locator parameter and precondition of every
// verdict rule, in one table (analysis/rule_table.hpp), with a hash that is written into every
// meta.json and shown in the report.
//
// A rule is data:
//   id            the claim it decides, as the report names it ("A2", "B6 (sinks)", "A1-control")
//   experiment    the executable that applies it
//   kind          "claim" (counted in the claims table) or "control" (a check of the method, reported
//                 apart with its own outcome)
//   scope         where the rule measures (which layers, positions, heads) and the procedure that finds
//                 them in a model, in words
//   values        every number the rule reads, each with a stable key: thresholds a condition or a
//                 precondition is compared with (role ">=" or "<="), locator and scope parameters
//                 ("locator"), minimum counts ("minimum"). The experiment takes each by its key
//                 (Rule::value), so the table is the only place a number is written.
//   preconditions what must be present for the claim to apply, and the outcome when it is not
//   outcomes      the outcome map: which outcome each way of deciding gives
//
// The hash. canonical_json(rule) is the JSON object of a rule with keys sorted and no whitespace
// (nlohmann::json's dump(), whose objects are ordered maps, and whose numbers are the shortest text
// that reads back to the same double). rule_hash = SHA-256 of that text, in hex; the set hash is the
// SHA-256 of the canonical JSON of the whole set {"rules": {id: rule_hash, …}, "version": …}.
// experiments/RULES_CHANGELOG.md holds a dated entry, keyed by the set hash, for every registered state of
// the set, with each rule's hash; `ctest -R rule_set_registered` fails when the set's hash has no entry
// and names the rules whose hash differs from the last entry's.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/core/sha256.hpp"

namespace sinkscope::analysis {

// One number a rule reads.
struct RuleValue {
    std::string key;     // stable identifier, e.g. "p0_norm_ratio_min"
    double value = 0;
    std::string role;    // ">=" / "<=" (a threshold: the statistic must lie on this side), "locator", "minimum"
    std::string source;  // where it comes from: "convention", "paper: <quote or figure>", "definition: <where>"
};

struct RulePrecondition {
    std::string what;       // the phenomenon or population property that must hold
    std::string if_absent;  // "not applicable" or "not shown at this scale"
};

// The outcome-map key under which a rule of kind "control" registers the outcome its rule should give on
// the control's model; the verdict then reads "as expected" when it does and "unexpected" otherwise.
inline constexpr const char* kControlExpectation = "the control's expected outcome";

struct Rule {
    std::string id;
    std::string experiment;
    std::string kind = "claim";  // "claim" or "control" (a control registers kControlExpectation in outcomes)
    std::string scope;
    std::vector<RuleValue> values;
    std::vector<RulePrecondition> preconditions;
    std::map<std::string, std::string> outcomes;

    // The number registered under `key`; an Error naming the rule and the key when there is none.
    double value(std::string_view key) const {
        for (const auto& v : values)
            if (v.key == key) return v.value;
        throw Error("rule " + id + " has no registered value '" + std::string(key) + "' (analysis/rule_table.hpp)");
    }
    // A control's registered expected outcome; an Error naming the rule when it is not a control or has none.
    const std::string& expected_outcome() const {
        const auto it = outcomes.find(kControlExpectation);
        require(kind == "control" && it != outcomes.end(),
                "rule " + id + " registers no expected outcome: only a rule of kind 'control' has one, under '" +
                    std::string(kControlExpectation) + "' (analysis/rule_table.hpp)");
        return it->second;
    }
};

inline nlohmann::json to_json(const Rule& r) {
    nlohmann::json values = nlohmann::json::object();
    for (const auto& v : r.values) {
        require(!values.contains(v.key), "rule " + r.id + ": value '" + v.key + "' is registered twice");
        values[v.key] = {{"value", v.value}, {"role", v.role}, {"source", v.source}};
    }
    nlohmann::json pre = nlohmann::json::array();
    for (const auto& p : r.preconditions) pre.push_back({{"what", p.what}, {"if_absent", p.if_absent}});
    return {{"id", r.id}, {"experiment", r.experiment}, {"kind", r.kind}, {"scope", r.scope},
            {"values", values}, {"preconditions", pre}, {"outcomes", r.outcomes}};
}

// Keys sorted, no whitespace: the text the hash is taken of.
inline std::string canonical_json(const Rule& r) { return to_json(r).dump(); }

inline std::string rule_hash(const Rule& r) { return sha256_hex(canonical_json(r)); }

// {"rules": {id: rule_hash, …}, "version": version}: what the set hash is taken of. An Error names a
// rule id registered twice.
inline nlohmann::json rule_set_index(const std::vector<Rule>& rules, const std::string& version) {
    nlohmann::json index = nlohmann::json::object();
    for (const auto& r : rules) {
        require(!index.contains(r.id), "the rule set registers rule '" + r.id + "' twice");
        index[r.id] = rule_hash(r);
    }
    return {{"rules", index}, {"version", version}};
}

inline std::string rule_set_hash(const std::vector<Rule>& rules, const std::string& version) {
    return sha256_hex(rule_set_index(rules, version).dump());
}

}  // namespace sinkscope::analysis
