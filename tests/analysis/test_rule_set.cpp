// The pre-registered rule set's schema (analysis/rule_set.hpp): its hash sees every registered number and
// word and nothing else, and a verdict names its rule. tests/analysis/test_rule_table.cpp checks the table.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include <sinkscope/analysis/rule_table.hpp>
#include <sinkscope/analysis/verdict.hpp>

using namespace sinkscope;
using namespace sinkscope::analysis;

TEST_CASE("a control's verdict says whether its rule gave the expected outcome", "[rule_set][verdict]") {
    const Rule& control = rule("A1-control");
    auto verdict_with = [&](double recovery) {
        Verdict v("A1-control: test", "rule", "null");
        v.registered(control);
        v.condition(bootstrap_condition("recovery", recovery, {recovery - 0.01, recovery + 0.01}, 10, 0.8));
        return v;
    };
    Rule expects_pass = control, expects_failure = control;
    expects_pass.outcomes[kControlExpectation] = "reproduced";
    expects_failure.outcomes[kControlExpectation] = "not reproduced";
    Verdict pass = verdict_with(1.0), fail = verdict_with(0.5);
    CHECK(pass.registered(expects_pass).control_outcome() == "as expected");
    CHECK(fail.registered(expects_pass).control_outcome() == "unexpected");
    CHECK(fail.registered(expects_failure).control_outcome() == "as expected");
    const auto j = fail.registered(expects_pass).to_json();
    CHECK(j["outcome"] == "not reproduced");
    CHECK(j["expected_outcome"] == "reproduced");
    CHECK(j["control_outcome"] == "unexpected");
    // A claim has none: no key in its JSON, and asking its rule is an error naming it.
    Verdict claim("A1: test", "rule", "null");
    claim.registered(rule("A1")).condition(bootstrap_condition("recovery", 1.0, {0.9, 1.1}, 10, 0.8));
    CHECK(claim.control_outcome().empty());
    CHECK_FALSE(claim.to_json().contains("control_outcome"));
    CHECK_THROWS_WITH(rule("A1").expected_outcome(), Catch::Contains("rule A1 registers no expected outcome"));
    Rule unregistered = control;
    unregistered.outcomes.erase(kControlExpectation);
    Verdict missing("A1-control: test", "rule", "null");
    CHECK_THROWS_WITH(missing.registered(unregistered), Catch::Contains("rule A1-control registers no expected outcome"));
}

TEST_CASE("a missing rule or value is an error naming it", "[rule_set]") {
    CHECK_THROWS_WITH(rule("Z9"), Catch::Contains("no rule 'Z9'"));
    CHECK_THROWS_WITH(rule("P2").value("no_such_key"), Catch::Contains("rule P2") && Catch::Contains("'no_such_key'"));
    CHECK(rule("P2").value("restore_ppl_ratio_max") == 1.25);
}

TEST_CASE("the hash sees every registered number and word, not the order of the values", "[rule_set][property]") {
    const Rule base = rule("A2");
    const std::string h0 = rule_hash(base);
    for (std::size_t i = 0; i < base.values.size(); ++i) {
        Rule r = base;
        r.values[i].value = std::nextafter(r.values[i].value, 1e300);  // the smallest change a double can make
        CHECK(rule_hash(r) != h0);
        Rule s = base;
        s.values[i].role = s.values[i].role == ">=" ? "<=" : ">=";
        CHECK(rule_hash(s) != h0);
    }
    Rule scope = base;
    scope.scope += " ";
    CHECK(rule_hash(scope) != h0);
    Rule outcome = base;
    outcome.outcomes["a condition fails"] = "inconclusive";
    CHECK(rule_hash(outcome) != h0);
    Rule reordered = base;
    std::reverse(reordered.values.begin(), reordered.values.end());
    CHECK(rule_hash(reordered) == h0);  // values are keyed: their order in the table is not registered

    // The set hash follows any rule's hash, and the version.
    std::vector<Rule> set = rule_table();
    const std::string s0 = rule_set_hash(set, kRuleSetVersion);
    CHECK(rule_set_hash(set, kRuleSetVersion) == s0);
    CHECK(rule_set_hash(set, "another version") != s0);
    set.back().values.front().value += 1;
    CHECK(rule_set_hash(set, kRuleSetVersion) != s0);
    set.push_back(set.front());
    CHECK_THROWS_WITH(rule_set_hash(set, kRuleSetVersion), Catch::Contains("twice"));
}

TEST_CASE("a verdict names its registered rule and hash", "[rule_set]") {
    Verdict v("P2", "test rule", "null");
    v.condition(exact_condition("x", 3, 1, 2));
    CHECK_FALSE(v.to_json().contains("rule_id"));
    v.registered(rule("P2"));
    const auto j = v.to_json();
    CHECK(j["rule_id"] == "P2");
    CHECK(j["rule_hash"] == rule_hash(rule("P2")));
}
