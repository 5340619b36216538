// Verdicts that can fail: a claim, the rule that decides it, the numbers the rule read (each with its
// interval and n) and the null control on which the rule must not say "reproduced".
//
// A verdict is built from
//   preconditions  the phenomenon or population the claim is about must be present (a sink, a spike, a
//                  step-up block, enough units to decide). A precondition whose whole interval lies on
//                  the wrong side gives its own outcome: "not applicable" for a measured model (a
//                  random-initialised model has no sink, so a claim about its sink does not apply), "not
//                  shown at this scale" for a model trained here, "inconclusive" where the precondition
//                  is about power (too few units to decide, not an absent phenomenon).
//   conditions     each a statistic with a 95% interval compared with a threshold fixed before looking
//                  (analysis/rule_table.hpp registers each). A condition holds when its whole interval
//                  lies on the claim's side (lo ≥ t for "at least", hi ≤ t for "at most"), fails when its
//                  whole interval lies on the other side (hi < t, lo > t), and is undecided otherwise: an
//                  interval that straddles the threshold, or no interval at all (NaN, no data).
//   checks         theorems and sanity checks reported beside the verdict, never evidence (a bound that
//                  holds for every input cannot support a claim).
// outcome, in this order:
//   the first precondition that fails        its outcome (above)
//   a precondition that is undecided         "inconclusive"
//   every condition holds                    "reproduced"
//   a condition fails                        "not reproduced"   (the whole interval on the wrong side)
//   otherwise (some condition undecided)     "inconclusive"     (decided_by names it and its n)
// The first condition is the headline (statistic, threshold, ci, n).
//
// JSON (written to out/<experiment>/meta.json under "verdict"; a list when one run decides several
// claims): {"claim", "outcome", "rule", "measure", "statistic", "threshold", "ci": [lo, hi], "n",
// "null", "decided_by", "preconditions": [...], "conditions": [...], "checks": [...], "rule_id", "rule_hash",
// "rule_kind"} (the last three when the verdict names its registered rule, analysis/rule_set.hpp; a rule of
// kind "control" checks the method and is not counted among the claims). A control's verdict adds
// "expected_outcome" (registered with its rule) and "control_outcome": "as expected" when "outcome" equals
// it, "unexpected" otherwise.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sinkscope/analysis/intervals.hpp"
#include "sinkscope/analysis/rule_set.hpp"
#include "sinkscope/core/error.hpp"

namespace sinkscope::analysis {

enum class Outcome { reproduced, not_reproduced, not_shown, not_applicable, inconclusive };

inline const char* to_string(Outcome o) {
    switch (o) {
        case Outcome::reproduced: return "reproduced";
        case Outcome::not_reproduced: return "not reproduced";
        case Outcome::not_shown: return "not shown at this scale";
        case Outcome::not_applicable: return "not applicable";
        case Outcome::inconclusive: return "inconclusive";
    }
    return "?";
}

enum class Side { at_least, at_most };

// One number a rule reads: the statistic, its interval, the number of independent units behind the
// interval and the threshold it is compared with.
struct Condition {
    std::string name;               // what the statistic is, in words
    double value = std::numeric_limits<double>::quiet_NaN();
    Interval ci;                    // 95%; [value, value] for an exact count
    std::int64_t n = 0;             // independent units (samples, tokens, heads, seeds)
    double threshold = 0;
    Side side = Side::at_least;
    std::string interval_kind;      // "clopper-pearson", "bootstrap", "exact"

    // Holds when the whole interval lies on the claim's side of the threshold (NaN never holds).
    bool holds() const {
        if (std::isnan(ci.lo) || std::isnan(ci.hi)) return false;
        return side == Side::at_least ? ci.lo >= threshold : ci.hi <= threshold;
    }
    // Fails when the whole interval lies on the other side (NaN never fails: nothing was measured).
    bool fails() const {
        if (std::isnan(ci.lo) || std::isnan(ci.hi)) return false;
        return side == Side::at_least ? ci.hi < threshold : ci.lo > threshold;
    }
};

// Convenience constructors for the three kinds of interval.
inline Condition rate_condition(std::string name, std::int64_t k, std::int64_t n, double threshold, Side side = Side::at_least) {
    Condition c{std::move(name), n > 0 ? double(k) / double(n) : std::numeric_limits<double>::quiet_NaN(), {}, n, threshold, side,
                "clopper-pearson"};
    if (n > 0) c.ci = clopper_pearson(k, n);
    else c.ci = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
    return c;
}
inline Condition bootstrap_condition(std::string name, double value, Interval ci, std::int64_t n, double threshold,
                                     Side side = Side::at_least) {
    return Condition{std::move(name), value, ci, n, threshold, side, "bootstrap"};
}
inline Condition exact_condition(std::string name, double value, std::int64_t n, double threshold, Side side = Side::at_least) {
    return Condition{std::move(name), value, {value, value}, n, threshold, side, "exact"};
}

class Verdict {
public:
    // `null`: the control on which this rule must not say "reproduced" (e.g. "the same layout with
    // random weights (--random-init)"); `rule`: the whole rule in words, thresholds included.
    Verdict(std::string claim, std::string rule, std::string null)
        : claim_(std::move(claim)), rule_(std::move(rule)), null_(std::move(null)) {}

    // The phenomenon must be present; if `c` fails, the outcome is `if_absent` (if it is undecided:
    // "inconclusive"). A precondition about power (enough units to decide) passes Outcome::inconclusive.
    Verdict& precondition(Condition c, Outcome if_absent = Outcome::not_applicable) {
        require(if_absent == Outcome::not_applicable || if_absent == Outcome::not_shown || if_absent == Outcome::inconclusive,
                "Verdict::precondition: an absent phenomenon gives 'not applicable', 'not shown at this scale' or "
                "'inconclusive'");
        pre_.push_back({std::move(c), if_absent});
        return *this;
    }
    Verdict& condition(Condition c) { cond_.push_back(std::move(c)); return *this; }
    // The registered rule (analysis/rule_table.hpp) this verdict applies: its id and hash go into the JSON,
    // so every outcome names the exact rule-set row that decided it.
    Verdict& registered(const Rule& r) {
        rule_id_ = r.id;
        rule_hash_ = rule_hash(r);
        rule_kind_ = r.kind;
        expected_ = r.kind == "control" ? r.expected_outcome() : std::string();
        return *this;
    }
    // "as expected" / "unexpected" for a registered control; empty for a claim.
    std::string control_outcome() const {
        if (expected_.empty()) return {};
        return to_string(outcome()) == expected_ ? "as expected" : "unexpected";
    }
    const std::string& rule_id() const { return rule_id_; }
    // A theorem or sanity check, reported but never part of the decision.
    Verdict& check(std::string name, double value, double bound, bool holds) {
        checks_.push_back({{"name", std::move(name)}, {"value", value}, {"bound", bound}, {"holds", holds}});
        return *this;
    }
    // Extra numbers for the report (free-form).
    nlohmann::json& details() { return details_; }

    Outcome outcome() const { return decide().first; }
    std::string decided_by() const { return decide().second; }
    const std::string& claim() const { return claim_; }
    const std::vector<Condition>& conditions() const { return cond_; }

    nlohmann::json to_json() const {
        require(!cond_.empty() || !pre_.empty(), "Verdict " + claim_ + ": no condition was given");
        const auto [o, why] = decide();
        const Condition& head = cond_.empty() ? pre_.front().c : cond_.front();
        nlohmann::json j{{"claim", claim_}, {"outcome", to_string(o)}, {"rule", rule_}, {"measure", head.name},
                         {"statistic", num(head.value)}, {"threshold", num(head.threshold)},
                         {"side", head.side == Side::at_least ? ">=" : "<="}, {"ci", {num(head.ci.lo), num(head.ci.hi)}},
                         {"n", head.n}, {"null", null_}, {"decided_by", why}};
        j["preconditions"] = nlohmann::json::array();
        for (const auto& p : pre_) {
            auto pj = condition_json(p.c);
            pj["if_absent"] = to_string(p.if_absent);
            j["preconditions"].push_back(pj);
        }
        j["conditions"] = nlohmann::json::array();
        for (const auto& c : cond_) j["conditions"].push_back(condition_json(c));
        j["checks"] = checks_.empty() ? nlohmann::json::array() : checks_;
        if (!rule_id_.empty()) {
            j["rule_id"] = rule_id_;
            j["rule_hash"] = rule_hash_;
            j["rule_kind"] = rule_kind_;
            if (!expected_.empty()) {
                j["expected_outcome"] = expected_;
                j["control_outcome"] = to_string(o) == expected_ ? "as expected" : "unexpected";
            }
        }
        if (!details_.is_null()) j["details"] = details_;
        return j;
    }

private:
    struct Pre { Condition c; Outcome if_absent; };

    // JSON has no NaN or infinity: they are written as null / ±1e308.
    static nlohmann::json num(double x) {
        if (std::isnan(x)) return nullptr;
        if (std::isinf(x)) return x > 0 ? 1e308 : -1e308;
        return x;
    }
    static nlohmann::json condition_json(const Condition& c) {
        return {{"name", c.name}, {"value", num(c.value)}, {"ci", {num(c.ci.lo), num(c.ci.hi)}}, {"n", c.n},
                {"threshold", num(c.threshold)}, {"side", c.side == Side::at_least ? ">=" : "<="},
                {"interval", c.interval_kind}, {"holds", c.holds()}};
    }
    static std::string undecided(const Condition& c) {
        return c.name + " (n = " + std::to_string(c.n) +
               (std::isnan(c.ci.lo) || std::isnan(c.ci.hi) ? ", no interval)" : ", its interval straddles the threshold)");
    }
    std::pair<Outcome, std::string> decide() const {
        for (const auto& p : pre_)
            if (p.c.fails()) return {p.if_absent, "precondition failed: " + p.c.name};
        for (const auto& p : pre_)
            if (!p.c.holds()) return {Outcome::inconclusive, "precondition undecided: " + undecided(p.c)};
        for (const auto& c : cond_)
            if (c.fails()) return {Outcome::not_reproduced, "condition failed: " + c.name};
        for (const auto& c : cond_)
            if (!c.holds()) return {Outcome::inconclusive, "condition undecided: " + undecided(c)};
        return {Outcome::reproduced, "every condition holds"};
    }

    std::string claim_, rule_, null_, rule_id_, rule_hash_, rule_kind_, expected_;
    std::vector<Pre> pre_;
    std::vector<Condition> cond_;
    nlohmann::json checks_ = nlohmann::json::array();
    nlohmann::json details_;
};

}  // namespace sinkscope::analysis
