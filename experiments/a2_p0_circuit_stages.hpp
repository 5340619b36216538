// a2_p0_circuit's two stages (rules A2 and A2-massive, analysis/rule_table.hpp): a reading layer's per-sample
// statistics (norms, pairwise cross-input cosines with their bootstrap) and the conditions of one stage's
// verdict, read from the knockout runs of a2_p0_circuit_knockouts.hpp.
#pragma once

#include <limits>
#include <set>
#include <string>
#include <vector>

#include <sinkscope/analysis/geometry.hpp>
#include <sinkscope/analysis/intervals.hpp>
#include <sinkscope/analysis/rule_set.hpp>
#include <sinkscope/analysis/verdict.hpp>

#include "a2_p0_circuit_knockouts.hpp"

namespace sinkscope::experiments::p0_circuit {

// A mean over pairs of distinct samples with its bootstrap interval.
struct Estimate { double value; analysis::Interval ci; };

// The mean of C[s][s'] over pairs of distinct samples is a U-statistic; its bootstrap resamples samples and
// averages the pairs of the resample that come from two different original samples. NaN below 2 samples.
inline Estimate pairwise_mean(const Eigen::MatrixXd& C) {
    const std::int64_t N = C.rows();
    const auto stat = [&C](const std::vector<double>& idx) {
        double sum = 0, n = 0;
        for (std::size_t a = 0; a < idx.size(); ++a)
            for (std::size_t b = a + 1; b < idx.size(); ++b)
                if (idx[a] != idx[b]) { sum += C(std::int64_t(idx[a]), std::int64_t(idx[b])); ++n; }
        return n ? sum / n : 0.0;
    };
    const double nan = std::numeric_limits<double>::quiet_NaN();
    if (N < 2) return {nan, {nan, nan}};
    std::vector<double> idx(static_cast<std::size_t>(N));
    for (std::int64_t s = 0; s < N; ++s) idx[std::size_t(s)] = double(s);
    return {stat(idx), analysis::bootstrap(idx, stat)};
}

// One reading layer's per-sample statistics for the verdicts: ‖x_0‖, the mean ‖x_t‖ over t ≥ 1, and the
// pairwise cross-input cosines C0[s][s'] = cos(x_0^s, x_0^s') and their excess over Crest[s][s'] = mean
// over t ≥ 1 of cos(x_t^s, x_t^s'). `states[s]` is sample s's (T × d) state at that layer.
struct StageStats { std::vector<double> norm0, norm_rest; Estimate cos0, cos_gap; };
inline StageStats stage_stats(const std::vector<std::vector<float>>& states, std::int64_t d) {
    const std::int64_t N = std::int64_t(states.size()), T = N ? std::int64_t(states[0].size()) / d : 0;
    auto row = [d](const std::vector<float>& x, std::int64_t t) {
        return Eigen::Map<const Eigen::VectorXf>(x.data() + t * d, d).cast<double>().eval();
    };
    StageStats st;
    Eigen::MatrixXd C0 = Eigen::MatrixXd::Zero(N, N), Crest = Eigen::MatrixXd::Zero(N, N);
    for (std::int64_t s = 0; s < N; ++s) {
        st.norm0.push_back(row(states[s], 0).norm());
        double nr = 0;
        for (std::int64_t t = 1; t < T; ++t) nr += row(states[s], t).norm() / double(T - 1);
        st.norm_rest.push_back(nr);
        for (std::int64_t u = s + 1; u < N; ++u) {
            C0(s, u) = C0(u, s) = analysis::cosine(row(states[s], 0), row(states[u], 0));
            double cr = 0;
            for (std::int64_t t = 1; t < T; ++t) cr += analysis::cosine(row(states[s], t), row(states[u], t)) / double(T - 1);
            Crest(s, u) = Crest(u, s) = cr;
        }
    }
    st.cos0 = pairwise_mean(C0);
    st.cos_gap = pairwise_mean(C0 - Crest);
    return st;
}

// The knockout runs a stage reads: the conditions, their effects (eff[0] the clean run) and each one's
// bootstrap interval of the position-0 norm kept after M (ratio_ci) and after E (early_ci).
struct KnockoutTable {
    const std::vector<Knockout>& conds;
    const std::vector<Effect>& eff;
    const std::vector<analysis::Interval>& ratio_ci;
    const std::vector<analysis::Interval>& early_ci;
    std::int64_t NA;
};

// A stage: its statistics at the reading layer, the candidate blocks and head layers, and the control block.
struct Stage {
    const StageStats& stats;
    std::int64_t read_layer;
    std::set<std::int64_t> blocks, head_layers;
    std::int64_t control_layer;
    bool early;  // read norm0_early (after E) instead of norm0 (after M)
};

// One stage's conditions, added to v: the state conditions at its reading layer (N samples), then its
// knockouts read there: the most effective whole block among `blocks`, the same-kind block of layer
// `control_layer`, and the most effective single head among `head_layers`.
inline void score_stage(analysis::Verdict& v, const analysis::Rule& rule, const Stage& st, const KnockoutTable& k,
                        const std::string& where, std::int64_t N) {
    const auto& conds = k.conds;
    const auto& eff = k.eff;
    const Effect& clean = eff[0];
    const double nan = std::numeric_limits<double>::quiet_NaN();
    auto kept = [&](std::size_t i) {
        return st.early ? analysis::mean_of(eff[i].norm0_early) / analysis::mean_of(clean.norm0_early)
                        : analysis::mean_of(eff[i].norm0) / analysis::mean_of(clean.norm0);
    };
    auto who = [&](std::size_t i) {
        return conds[i].kind + (conds[i].layer >= 0 ? " " + std::to_string(conds[i].layer) : "") +
               (conds[i].head >= 0 ? "." + std::to_string(conds[i].head) : "");
    };
    v.condition(analysis::bootstrap_condition("position-0 norm / mean norm of positions >= 1 " + where,
                                              analysis::mean_of(st.stats.norm0) / analysis::mean_of(st.stats.norm_rest),
                                              analysis::bootstrap_ratio(st.stats.norm0, st.stats.norm_rest), N,
                                              rule.value("p0_norm_ratio_min")));
    v.condition(analysis::bootstrap_condition("cross-input cosine of position-0 states " + where, st.stats.cos0.value,
                                              st.stats.cos0.ci, N, rule.value("p0_cross_input_cosine_min")));
    v.condition(analysis::bootstrap_condition("cosine of position 0 minus that of positions >= 1 " + where,
                                              st.stats.cos_gap.value, st.stats.cos_gap.ci, N, rule.value("p0_cosine_gap_min")));
    std::size_t best = 0, control = 0, worst_head = 0;
    for (std::size_t i = 1; i < conds.size(); ++i) {
        const auto& cd = conds[i];
        if ((cd.kind == "mlp" || cd.kind == "attn") && st.blocks.count(cd.layer) && (!best || kept(i) < kept(best))) best = i;
        if (cd.kind == "head" && st.head_layers.count(cd.layer) && (!worst_head || kept(i) < kept(worst_head))) worst_head = i;
    }
    for (std::size_t i = 1; i < conds.size() && best; ++i)
        if (conds[i].kind == conds[best].kind && conds[i].layer == st.control_layer) control = i;
    auto knock = [&](const std::string& name, std::size_t i, double t, analysis::Side side) {
        if (!i) return analysis::exact_condition(name + " (none run)", nan, 0, t, side);
        return analysis::bootstrap_condition(name + " (" + who(i) + ") " + where, kept(i), st.early ? k.early_ci[i] : k.ratio_ci[i],
                                             k.NA, t, side);
    };
    v.condition(knock("position-0 norm kept by the most effective block knockout", best, rule.value("best_block_knockout_kept_max"),
                      analysis::Side::at_most));
    v.condition(knock("position-0 norm kept by the same-kind block knockout outside the stage", control,
                      rule.value("control_block_knockout_kept_min"), analysis::Side::at_least));
    v.condition(knock("position-0 norm kept by the most effective single-head knockout", worst_head,
                      rule.value("single_head_knockout_kept_min"), analysis::Side::at_least));
    v.details() = {{"read_layer", st.read_layer}, {"ablation_samples", k.NA}, {"control_layer", st.control_layer}};
    if (best) {
        const auto& e = eff[best];
        v.details()["best_block"] = {{"kind", conds[best].kind}, {"layer", conds[best].layer},
                                     {"rest_ratio", analysis::mean_of(e.norm_rest) / analysis::mean_of(clean.norm_rest)},
                                     {"delta_loss", analysis::mean_of(e.loss) - analysis::mean_of(clean.loss)}};
    }
    if (control) v.details()["control"] = {{"kind", conds[control].kind}, {"layer", conds[control].layer}};
}

}  // namespace sinkscope::experiments::p0_circuit
