// Verdicts that can fail: a claim, the rule that decides it, the numbers the rule read (each with its
// interval and n) and the null control on which the rule must say "not reproduced" / "not applicable".
//
// A verdict is built from
//   preconditions  the phenomenon the claim is about must be present (a sink, a spike, a step-up
//                  block). A failed precondition gives its own outcome: "not applicable" for a
//                  measured model (a random-initialised model has no sink, so a claim about its sink
//                  does not apply), "not shown at this scale" for a model trained here.
//   conditions     each a statistic with a 95% interval compared with a threshold fixed before looking
//                  (experiments/README.md says where each threshold comes from). A condition holds
//                  only when its whole interval lies on the claim's side: lo ≥ t for "at least",
//                  hi ≤ t for "at most". An interval that straddles the threshold does not hold.
//   checks         theorems and sanity checks reported beside the verdict, never evidence (a bound that
//                  holds for every input cannot support a claim).
// outcome = the first failed precondition's outcome, else "reproduced" when every condition holds,
// else "not reproduced". The first condition is the headline (statistic, threshold, ci, n).
//
// JSON (written to out/<experiment>/meta.json under "verdict"; a list when one run decides several
// claims): {"claim", "outcome", "rule", "measure", "statistic", "threshold", "ci": [lo, hi], "n",
// "null", "decided_by", "preconditions": [...], "conditions": [...], "checks": [...], "rule_id", "rule_hash"}
// (the last two when the verdict names its registered rule, analysis/rule_set.hpp).
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

enum class Outcome { reproduced, not_reproduced, not_shown, not_applicable };

inline const char* to_string(Outcome o) {
    switch (o) {
        case Outcome::reproduced: return "reproduced";
        case Outcome::not_reproduced: return "not reproduced";
        case Outcome::not_shown: return "not shown at this scale";
        case Outcome::not_applicable: return "not applicable";
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

    // The phenomenon must be present; if `c` does not hold, the outcome is `if_absent`.
    Verdict& precondition(Condition c, Outcome if_absent = Outcome::not_applicable) {
        require(if_absent == Outcome::not_applicable || if_absent == Outcome::not_shown,
                "Verdict::precondition: an absent phenomenon gives 'not applicable' or 'not shown at this scale'");
        pre_.push_back({std::move(c), if_absent});
        return *this;
    }
    Verdict& condition(Condition c) { cond_.push_back(std::move(c)); return *this; }
    // The registered rule (analysis/rule_table.hpp) this verdict applies: its id and hash go into the JSON,
    // so every outcome names the exact rule-set row that decided it.
    Verdict& registered(const Rule& r) { rule_id_ = r.id; rule_hash_ = rule_hash(r); return *this; }
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
    std::pair<Outcome, std::string> decide() const {
        for (const auto& p : pre_)
            if (!p.c.holds()) return {p.if_absent, "precondition failed: " + p.c.name};
        for (const auto& c : cond_)
            if (!c.holds()) return {Outcome::not_reproduced, "condition failed: " + c.name};
        return {Outcome::reproduced, "every condition holds"};
    }

    std::string claim_, rule_, null_, rule_id_, rule_hash_;
    std::vector<Pre> pre_;
    std::vector<Condition> cond_;
    nlohmann::json checks_ = nlohmann::json::array();
    nlohmann::json details_;
};

}  // namespace sinkscope::analysis
