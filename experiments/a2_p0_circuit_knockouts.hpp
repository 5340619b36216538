// a2_p0_circuit's measurements: the clean runs' states, the list of knockouts and the knockout runs
// (model/interventions.hpp) with their effects on position 0's norm, the other positions' norm, the loss
// and the later sink rate. Split from a2_p0_circuit.cpp, which keeps the claim and the per-layer table;
// the stages' statistics and conditions are in a2_p0_circuit_stages.hpp.
#pragma once

#include <limits>
#include <map>
#include <set>

#include <sinkscope/analysis/intervals.hpp>
#include <sinkscope/analysis/perplexity.hpp>
#include <sinkscope/model/interventions.hpp>
#include <sinkscope/model/reducers.hpp>

#include "common.hpp"

namespace sinkscope::experiments::p0_circuit {

// A knockout: "clean", "mlp" / "attn" of a layer, or "head" (layer, head); its effects, one entry per
// sample: position 0's norm after block M (the massive stage's reading) and after block E (the early
// stage's), the other positions' mean norm after M, the loss and the later sink rate.
struct Knockout { std::string kind; std::int64_t layer, head; };
struct Effect { std::vector<double> norm0, norm0_early, norm_rest, loss, sink_after; };

// The knockouts, in this order: clean; the MLP, then the attention, of the block layers; every head of the
// head layers. Block layers: the early stage's blocks 0 and 1 and its control block E, the massive stage's
// candidates 0 … S and its control block M (every_layer = false: 0 … S shrinks to {0, 1, S}). Head layers:
// 0, 1 and 0 … S (every_layer = false: {0, 1, S}).
inline std::vector<Knockout> knockout_conditions(std::int64_t S, std::int64_t M, std::int64_t E, std::int64_t n_heads,
                                                 bool every_layer) {
    std::vector<Knockout> conds{{"clean", -1, -1}};
    std::set<std::int64_t> block_layers{0, 1, E, M}, head_layers{0, 1};
    for (std::int64_t l = 0; l <= S; ++l)
        if (every_layer || l <= 1 || l == S) { block_layers.insert(l); head_layers.insert(l); }
    for (auto l : block_layers) if (l >= 0 && l <= std::max(M, E)) conds.push_back({"mlp", l, -1});
    for (auto l : block_layers) if (l >= 0 && l <= std::max(M, E)) conds.push_back({"attn", l, -1});
    for (auto l : head_layers)
        if (l <= std::max(M, E))
            for (std::int64_t h = 0; h < n_heads; ++h) conds.push_back({"head", l, h});
    return conds;
}

// Runs every knockout on the first NA samples (zero ablation at every position). Effects after blocks M
// and E; the loss and the sink rate of the layers after S (alpha0 > eps) for every knockout but single heads.
inline std::vector<Effect> knockout_effects(Run& run, const Inputs& in, const std::vector<Tokens>& smp,
                                            const std::vector<Knockout>& conds, std::int64_t NA, std::int64_t S,
                                            std::int64_t M, std::int64_t E, double eps) {
    const auto& c = in.m.config;
    const std::int64_t d = c.d_model, L = c.n_layers;
    std::vector<Effect> eff(conds.size());
    for (std::size_t k = 0; k < conds.size(); ++k) {
        const auto& cd = conds[k];
        // Head knockouts are many and only read ‖x_0‖ after blocks M and E. Under the causal mask position 0
        // attends only to itself (theory P1) and every other operation acts per position, so x_0 depends on
        // token 0 alone: they run on the first token only, up to block max(M, E) (no loss, no later sink rate).
        const bool full = cd.kind != "head";
        model::AttentionStats<float> as(L, c.n_heads);
        for (std::int64_t s = 0; s < NA; ++s) {
            model::HookSet<float> hooks;
            if (cd.kind == "mlp") model::ablate_mlp(hooks, cd.layer);
            if (cd.kind == "attn") model::ablate_attention(hooks, cd.layer);
            if (cd.kind == "head") model::ablate_heads<float>(hooks, cd.layer, {cd.head});
            if (full) as.attach(hooks);
            double n0 = 0, nr = 0, ne = 0;
            hooks.add(model::hook_name("resid_post", M), [&](const std::string&, model::ActivationRef<float>& x) {
                const std::int64_t n = x.shape[0];
                n0 = Eigen::Map<const Eigen::VectorXf>(x.data, d).cast<double>().norm();
                for (std::int64_t t = 1; t < n; ++t) nr += Eigen::Map<const Eigen::VectorXf>(x.data + t * d, d).cast<double>().norm() / double(n - 1);
            });
            hooks.add(model::hook_name("resid_post", E), [&](const std::string&, model::ActivationRef<float>& x) {
                ne = Eigen::Map<const Eigen::VectorXf>(x.data, d).cast<double>().norm();
            });
            if (full) {
                as.begin_sample();
                const auto logits = model::forward(c, in.m.weights, smp[s], &hooks);
                eff[k].loss.push_back(analysis::mean_of(analysis::token_nll(logits, smp[s])));
            } else {
                model::forward(c, in.m.weights, Tokens{smp[s][0]}, &hooks, no_logits(std::max(M, E)));
            }
            eff[k].norm0.push_back(n0);
            eff[k].norm0_early.push_back(ne);
            eff[k].norm_rest.push_back(nr);
        }
        if (full) eff[k].sink_after = S + 1 < L ? as.sink_rate_per_sample(eps, S + 1) : as.sink_rate_per_sample(eps);
        run.progress(std::int64_t(k) + 1, std::int64_t(conds.size()), "conditions");
    }
    return eff;
}

// The clean runs: every sample's state after each block (hook_resid_post) and attention output
// (hook_attn_out), resid[l][s] and attn[l][s] (T × d each), and the number of samples with a massive
// entry (Sun et al.) at position 0 after block M.
struct CleanStates {
    std::vector<std::vector<std::vector<float>>> resid, attn;
    std::int64_t massive_p0 = 0;
};
inline CleanStates clean_states(Run& run, const CommonOptions& opt, const Inputs& in, const std::vector<Tokens>& smp, std::int64_t M) {
    const auto& c = in.m.config;
    const std::int64_t d = c.d_model, L = c.n_layers, T = std::int64_t(smp[0].size());
    CleanStates out{std::vector<std::vector<std::vector<float>>>(L), std::vector<std::vector<std::vector<float>>>(L), 0};
    auto& resid = out.resid;
    auto& attn = out.attn;
    auto& massive_p0 = out.massive_p0;
    {
        model::HookSet<float> hooks;
        model::ActivationCache<float> cache;
        cache.attach(hooks, [](const std::string& n) {
            return n.find("hook_resid_post") != std::string::npos || n.find("hook_attn_out") != std::string::npos;
        });
        model::EachSequence<float> each;
        each.after = [&](std::int64_t, const model::Mat<float>&) {
            const auto& xm = cache[model::hook_name("resid_post", M)].data;
            const auto e = analysis::massive_entries(xm.data(), T, d);
            massive_p0 += std::any_of(e.begin(), e.end(), [](const analysis::SpikeEntry& x) { return x.position == 0; });
            for (std::int64_t l = 0; l < L; ++l) {
                resid[l].push_back(cache[model::hook_name("resid_post", l)].data);
                attn[l].push_back(cache[model::hook_name("attn_out", l)].data);
            }
        };
        measure_samples(run, opt, c, in.m.weights, smp, hooks, each, no_logits());
    }
    return out;
}

// The largest relative difference over the first NA samples between ||x_0|| after block M computed from
// token 0 alone and `clean_norm0` from the full sequence (the head knockouts' shortcut, theory P1).
inline double first_token_norm_gap(const Inputs& in, const std::vector<Tokens>& smp, std::int64_t NA, std::int64_t M,
                                   const std::vector<double>& clean_norm0) {
    const auto& c = in.m.config;
    const std::int64_t d = c.d_model;
    double worst = 0;
    for (std::int64_t s = 0; s < NA; ++s) {
        model::HookSet<float> hooks;
        double n0 = 0;
        hooks.add(model::hook_name("resid_post", M), [&](const std::string&, model::ActivationRef<float>& x) {
            n0 = Eigen::Map<const Eigen::VectorXf>(x.data, d).cast<double>().norm();
        });
        model::forward(c, in.m.weights, Tokens{smp[s][0]}, &hooks, no_logits(M));
        worst = std::max(worst, std::abs(n0 - clean_norm0[s]) / std::max(clean_norm0[s], 1e-30));
    }
    return worst;
}

}  // namespace sinkscope::experiments::p0_circuit
