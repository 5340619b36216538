// A2 — the P0 sink circuit (Paper A).
// Claim: (i) identification: under the causal mask position 0 attends only to itself (p₀ = 1), so its
// attention output is unmixed; (ii) amplification: the following MLP(s) turn that into a hidden state of
// very large ℓ2 norm with a fixed direction (cross-input cosine ≈ 1, separated from other positions in
// PCA); single-head ablations do not remove it (heads cooperate), ablating the right block does.
// Measured on natural text without BOS (T = 64), at two stages. The early stage is Paper A's two blocks, 0
// and 1, read after block E = 2; the massive stage is the step-up block S of B1's rule (traced over every
// sample), read after block M = S+1. Per layer (hook_resid_post): the mean ℓ2 norm of position 0 and of
// positions ≥ 1; the mean pairwise cosine across inputs of position-0 states against states at the same
// position t ≥ 1 (averaged over t); the same for the attention output (hook_attn_out); cos(x_l, x_{l+1})
// at position 0 against the rest (direction stability); a PCA of pooled states at M. Causal knockouts
// (zero ablation at every position, ≥ 16 samples, each paired with the clean run of the same sample): the
// whole MLP or attention of blocks 0, 1, E, 0 … S and M, and every single head of blocks 0, 1 and 0 … S;
// effects = position-0 norm after blocks E and M relative to clean, the other positions' norm after M, the
// next-token loss and the sink rate Sink^0.3_0 over layers > S (the last two not for single heads, which
// run up to block max(E, M) only). Verdicts: rules A2 (early stage) and A2-massive below (thresholds in
// analysis/rule_table.hpp); each stage's specificity control is the knockout of the same kind as its most
// effective block knockout, of the block it is read after. Theory (theory/p0_circuit.hpp, P2): per layer,
// the change of the normalised position-0 direction ‖Norm(x_l) − Norm(x_{l−1})‖ against its linear
// prediction ‖√d δ⊥/‖x‖‖, the remainder and its sharp bound; and the same change averaged over positions ≥ 1.
// Command: build/experiments/a2_p0_circuit [--samples 16] [--ablation-samples 16] [--out out/a2_p0_circuit]
// Writes: layers.csv, pca.npy [points × 3] (pc1, pc2, is_position_0), ablations.csv (norm ratio after M and
// after E with their bootstrap intervals, other positions' norm ratio, Δ loss with interval, later sink
// rate), meta.json.
// The knockout runs: a2_p0_circuit_knockouts.hpp; the stages' statistics and conditions: a2_p0_circuit_stages.hpp.
#include "a2_p0_circuit_stages.hpp"

#include <limits>
#include <map>
#include <set>

#include <sinkscope/analysis/geometry.hpp>
#include <sinkscope/analysis/intervals.hpp>
#include <sinkscope/analysis/perplexity.hpp>
#include <sinkscope/analysis/rule_table.hpp>
#include <sinkscope/model/interventions.hpp>
#include <sinkscope/model/reducers.hpp>
#include <sinkscope/theory/p0_circuit.hpp>

using namespace sinkscope;
using namespace sinkscope::experiments;
using namespace sinkscope::experiments::p0_circuit;

struct Config {
    std::int64_t samples = 16;          // samples for norms, cosines and PCA
    // samples per knockout condition (issue 10: >= 16), registered as A2's "knockout_samples_min"
    std::int64_t ablation_samples = std::int64_t(analysis::rule("A2").value("knockout_samples_min"));
    std::int64_t seq_len = 64;
    std::int64_t pca_samples = 8;       // samples pooled in the PCA
    double eps = measures::kSinkEps;
    bool every_layer = true;            // knockouts in every layer 0 … S (smoke: layers {0, 1, S} only)
};

// This experiment's flags (after the common ones, experiments/common.hpp) and its --smoke sizes.
void add_flags(CLI::App& app, Config& cfg) {
    app.add_option("--samples", cfg.samples, "samples for norms and cosines")->capture_default_str();
    app.add_option("--ablation-samples", cfg.ablation_samples, "samples per knockout")->capture_default_str();
}
void smoke_sizes(Config& cfg) { cfg.samples = 6; cfg.ablation_samples = 3; cfg.seq_len = 16; cfg.pca_samples = 2; cfg.every_layer = false; }

int main(int argc, char** argv) {
    Config cfg;
    const Experiment experiment{"a2_p0_circuit", "A2: the P0 sink circuit",
                                "A2: position 0 gets a huge, fixed-direction norm from attention (p0 = 1) + MLP"};
    return run_experiment(argc, argv, experiment, cfg, add_flags, smoke_sizes, [&](Run& run, const CommonOptions& opt) {
        run.config() = {{"samples", cfg.samples}, {"ablation_samples", cfg.ablation_samples}, {"seq_len", cfg.seq_len},
                        {"knockouts_in_every_layer", cfg.every_layer},
                        {"pca_samples", cfg.pca_samples}, {"eps", cfg.eps}, {"ablation", "zero, all positions"}};
        Inputs in = load_inputs(opt, run);
        const auto& c = in.m.config;
        const std::int64_t d = c.d_model, L = c.n_layers;
        run.config()["bos"] = in.bos.use;  // the resolved --bos (why: meta.json "bos")
        const auto smp = samples(in, opt, cfg.seq_len, cfg.samples, in.bos.use);
        const std::int64_t N = std::int64_t(smp.size()), T = std::int64_t(smp[0].size());

        const analysis::Rule& R = analysis::rule("A2-massive");  // the massive stage's locator and rule
        run.phase("locate step-up");
        const SpikeTrace tr = trace_spike(in, opt, smp, R.value("step_tau"));  // every sample
        const std::int64_t S = tr.step_up_layer >= 0 ? tr.step_up_layer
                                                     : std::min<std::int64_t>(std::int64_t(R.value("step_up_layer_fallback")), L - 1);
        const std::int64_t M = std::min(S + 1, L - 1);  // the layer after the step-up block
        // The early stage (Paper A's two blocks, 0 and 1) is read after block E = 2, the first block after it.
        const std::int64_t E = std::min<std::int64_t>(std::int64_t(analysis::rule("A2").value("stage_last_layer")) + 1, L - 1);
        run.results()["trace"] = trace_json(tr);
        run.results()["step_up_layer"] = S;
        run.results()["measure_layer"] = M;
        run.results()["early_read_layer"] = E;

        run.phase("clean runs");
        // resid[l][s] = (T × d) state after block l; attn[l][s] = attention output of block l.
        CleanStates clean_run = clean_states(run, opt, in, smp, M);
        const std::int64_t massive_p0 = clean_run.massive_p0;  // samples with a massive entry at position 0 after block M
        auto& resid = clean_run.resid;
        auto& attn = clean_run.attn;
        auto row = [d](const std::vector<float>& x, std::int64_t t) {
            return Eigen::Map<const Eigen::VectorXf>(x.data() + t * d, d).cast<double>().eval();
        };
        auto cross_cos = [&](const std::vector<std::vector<float>>& states, std::int64_t t) {
            analysis::RowMatrixXd X(states.size(), d);
            for (std::size_t s = 0; s < states.size(); ++s) X.row(s) = row(states[s], t).transpose();
            return analysis::mean_pairwise_cosine(X);
        };
        Csv lay(run.path("layers.csv"), {"layer", "norm_pos0", "norm_rest", "cos_pos0", "cos_rest", "attn_cos_pos0",
                                         "attn_cos_rest", "stability_pos0", "stability_rest", "dir_change_pos0",
                                         "dir_change_pred_pos0", "remainder_pos0", "bound_pos0", "dir_change_rest"});
        json lj = json::array();
        for (std::int64_t l = 0; l < L; ++l) {
            double n0 = 0, nr = 0, st0 = 0, str = 0;
            for (std::int64_t s = 0; s < N; ++s) {
                n0 += row(resid[l][s], 0).norm();
                for (std::int64_t t = 1; t < T; ++t) nr += row(resid[l][s], t).norm();
                if (l + 1 < L) {
                    st0 += analysis::cosine(row(resid[l][s], 0), row(resid[l + 1][s], 0));
                    for (std::int64_t t = 1; t < T; ++t) str += analysis::cosine(row(resid[l][s], t), row(resid[l + 1][s], t));
                }
            }
            n0 /= N; nr /= double(N * (T - 1)); st0 /= N; str /= double(N * (T - 1));
            double c0 = 0, cr = 0, a0 = 0, ar = 0;
            if (N >= 2) {
                c0 = cross_cos(resid[l], 0);
                a0 = cross_cos(attn[l], 0);
                for (std::int64_t t = 1; t < T; ++t) { cr += cross_cos(resid[l], t); ar += cross_cos(attn[l], t); }
                cr /= double(T - 1); ar /= double(T - 1);
            }
            // Theory P2 (theory/p0_circuit.hpp): the block's update δ = x_l − x_{l−1} moves the normalised
            // direction by Norm(x+δ) − Norm(x) ≈ √d δ⊥/‖x‖; position 0 (huge ‖x‖) barely moves.
            double ch0 = 0, pr0 = 0, re0 = 0, bd0 = 0, chr = 0;
            std::int64_t n_p = 0;
            if (l > 0) {
                for (std::int64_t s = 0; s < N; ++s) {
                    const Eigen::VectorXd x = row(resid[l - 1][s], 0), delta = row(resid[l][s], 0) - x;
                    ch0 += (analysis::rms_normalize(x + delta) - analysis::rms_normalize(x)).norm() / N;
                    for (std::int64_t t = 1; t < T; ++t) {
                        const Eigen::VectorXd xt = row(resid[l - 1][s], t), yt = row(resid[l][s], t);
                        chr += (analysis::rms_normalize(yt) - analysis::rms_normalize(xt)).norm() / double(N * (T - 1));
                    }
                    if (delta.norm() < x.norm()) {
                        const auto p = theory::norm_perturbation(x, delta);
                        pr0 += p.linear_norm; re0 += p.remainder_norm; bd0 += p.bound; ++n_p;
                    }
                }
                if (n_p) { pr0 /= double(n_p); re0 /= double(n_p); bd0 /= double(n_p); }
            }
            lay.row(l, n0, nr, c0, cr, a0, ar, st0, str, ch0, pr0, re0, bd0, chr);
            lj.push_back({{"layer", l}, {"norm_pos0", n0}, {"norm_rest", nr}, {"cos_pos0", c0}, {"cos_rest", cr},
                          {"attn_cos_pos0", a0}, {"attn_cos_rest", ar}, {"dir_change_pos0", ch0},
                          {"dir_change_pred_pos0", pr0}, {"remainder_pos0", re0}, {"bound_pos0", bd0},
                          {"dir_change_rest", chr}, {"theory_samples", n_p}});
        }
        run.results()["layers"] = lj;

        const StageStats massive_stage = stage_stats(resid[M], d), early_stage = stage_stats(resid[E], d);
        auto measure_json = [&](const StageStats& st) {
            return json{{"norm_ratio", analysis::mean_of(st.norm0) / analysis::mean_of(st.norm_rest)},
                        {"cos_pos0", st.cos0.value}, {"cos_gap", st.cos_gap.value}};
        };
        run.results()["measure"] = measure_json(massive_stage);
        run.results()["measure"]["massive_pos0_samples"] = massive_p0;
        run.results()["measure_early"] = measure_json(early_stage);

        run.phase("PCA");
        {
            const std::int64_t P = std::min(cfg.pca_samples, N);
            analysis::RowMatrixXd X(P * T, d);
            for (std::int64_t s = 0; s < P; ++s)
                for (std::int64_t t = 0; t < T; ++t) X.row(s * T + t) = row(resid[M][s], t).transpose();
            const auto p = analysis::pca(X, 2);
            const analysis::RowMatrixXd Z = p.project(X);
            std::vector<float> out;
            for (std::int64_t i = 0; i < Z.rows(); ++i) out.insert(out.end(), {float(Z(i, 0)), float(Z(i, 1)), float(i % T == 0)});
            run.npy("pca.npy", out, {std::size_t(Z.rows()), 3});
            run.results()["pca"] = {{"layer", M}, {"explained", {p.explained(0), p.explained(1)}}};
        }
        resid.clear();
        attn.clear();

        run.phase("knockouts");
        // Conditions: clean; the whole MLP / attention of the early stage's blocks 0, 1 and its control block E,
        // of the massive stage's candidates 0 … S and its control block M; every single head of blocks 0, 1
        // and 0 … S. Each condition runs on the same NA samples (paired with clean). Effects: position-0 norm
        // after blocks M and E, the mean norm of the other positions after M, the next-token loss (block
        // knockouts) and the sink rate of layers > S.
        const std::vector<Knockout> conds = knockout_conditions(S, M, E, c.n_heads, cfg.every_layer);
        const std::int64_t NA = std::min(cfg.ablation_samples, N);
        const std::vector<Effect> eff = knockout_effects(run, in, smp, conds, NA, S, M, E, cfg.eps);
        const Effect& clean = eff[0];
        Csv ab(run.path("ablations.csv"), {"kind", "layer", "head", "norm_pos0", "norm_ratio", "norm_ratio_lo", "norm_ratio_hi",
                                           "norm_ratio_early", "norm_ratio_early_lo", "norm_ratio_early_hi",
                                           "rest_ratio", "delta_loss", "delta_loss_lo", "delta_loss_hi", "sink_rate_after"});
        json aj = json::array();
        auto nan = std::numeric_limits<double>::quiet_NaN();
        auto jnum = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
        std::vector<analysis::Interval> ratio_ci(conds.size()), early_ci(conds.size());
        for (std::size_t k = 0; k < conds.size(); ++k) {
            const auto& cd = conds[k];
            const auto& e = eff[k];
            const double ratio = analysis::mean_of(e.norm0) / analysis::mean_of(clean.norm0);
            const double early = analysis::mean_of(e.norm0_early) / analysis::mean_of(clean.norm0_early);
            ratio_ci[k] = analysis::bootstrap_ratio(e.norm0, clean.norm0);
            early_ci[k] = analysis::bootstrap_ratio(e.norm0_early, clean.norm0_early);
            const double rest = cd.kind == "head" ? nan : analysis::mean_of(e.norm_rest) / analysis::mean_of(clean.norm_rest);
            double dl = nan, sink = nan;
            analysis::Interval dl_ci{nan, nan};
            if (!e.loss.empty()) {
                std::vector<double> diff(e.loss.size());
                for (std::size_t s = 0; s < diff.size(); ++s) diff[s] = e.loss[s] - clean.loss[s];
                dl = analysis::mean_of(diff);
                if (std::all_of(diff.begin(), diff.end(), [](double x) { return std::isfinite(x); })) dl_ci = analysis::bootstrap_mean(diff);
                sink = analysis::mean_of(e.sink_after);
            }
            ab.row(cd.kind, cd.layer, cd.head, analysis::mean_of(e.norm0), ratio, ratio_ci[k].lo, ratio_ci[k].hi, early,
                   early_ci[k].lo, early_ci[k].hi, rest, dl, dl_ci.lo, dl_ci.hi, sink);
            aj.push_back({{"kind", cd.kind}, {"layer", cd.layer}, {"head", cd.head}, {"norm_ratio", jnum(ratio)},
                          {"norm_ratio_ci", {jnum(ratio_ci[k].lo), jnum(ratio_ci[k].hi)}}, {"norm_ratio_early", jnum(early)},
                          {"norm_ratio_early_ci", {jnum(early_ci[k].lo), jnum(early_ci[k].hi)}}, {"rest_ratio", jnum(rest)},
                          {"delta_loss", jnum(dl)}, {"delta_loss_ci", {jnum(dl_ci.lo), jnum(dl_ci.hi)}},
                          {"sink_rate_after", jnum(sink)}});
        }
        run.results()["ablations"] = aj;
        run.results()["clean_loss"] = analysis::mean_of(clean.loss);
        run.results()["ablation_samples"] = NA;

        run.phase("verdict");
        const KnockoutTable table{conds, eff, ratio_ci, early_ci, NA};
        // The early stage: blocks 0 and 1 (Paper A's two blocks), read after block E = 2, control block E.
        const analysis::Rule& RE = analysis::rule("A2");
        analysis::Verdict ve("A2",
            "the early stage, blocks 0 and 1 (Paper A: 'the P0 Sink Circuit lives in two blocks'), read after block 2: (i) mean "
            "||x_0|| / mean ||x_t>=1|| has a bootstrap 95% interval >= 10; (ii) the mean cross-input cosine of position-0 states "
            "has an interval >= 0.95 and exceeds that of positions >= 1 by an interval >= 0.2; (iii) the most effective whole-block "
            "knockout of blocks 0-1 (MLP or attention, zero at every position) keeps a position-0 norm with interval <= 0.1, while "
            "the same-kind knockout of block 2 keeps >= 0.5; (iv) every single-head knockout of blocks 0-1 keeps >= 0.5. "
            "Precondition (else not applicable): n_layers >= 3. Thresholds: the project's conventions (experiments/README.md)",
            kRandomInitNull);
        ve.registered(RE);
        ve.precondition(analysis::exact_condition("layers: the stage's two blocks and one block after them (n_layers >= 3)",
                                                  double(L), 1, RE.value("stage_layers_min")));
        const std::int64_t last = std::int64_t(RE.value("stage_last_layer"));
        std::set<std::int64_t> early_blocks;
        for (std::int64_t l = 0; l <= std::min(last, L - 1); ++l) early_blocks.insert(l);
        score_stage(ve, RE, Stage{early_stage, E, early_blocks, early_blocks, E, true}, table, "after block " + std::to_string(E), N);

        // The massive stage: candidates 0 … S, read after block M = S+1, control block M.
        analysis::Verdict v("A2-massive",
            "the massive stage, at the layer M = S+1 after the step-up block S (B1's step rule): (i)-(ii) as A2 at M; (iii) the most "
            "effective whole-block knockout of layers <= S keeps a position-0 norm with interval <= 0.1 at M, while the same-kind "
            "knockout of block M keeps >= 0.5; (iv) every single-head knockout of layers <= S keeps >= 0.5. Preconditions (else not "
            "applicable): position 0 carries a massive activation (Sun et al.) after block M in most samples (CP lower bound >= "
            "0.5), and a block M = S+1 exists. Thresholds: the project's conventions (experiments/README.md)",
            kRandomInitNull);
        v.registered(R);
        v.precondition(analysis::rate_condition("samples with a massive activation at position 0 after block M", massive_p0, N,
                                                R.value("massive_p0_share_min")));
        v.precondition(analysis::exact_condition("layers: a block after the step-up layer S (S + 1 < n_layers)", double(L - 1 - S), 1,
                                                 R.value("blocks_after_step_up_min")));
        std::set<std::int64_t> massive_blocks, massive_heads;
        for (const auto& cd : conds)
            if (cd.layer >= 0 && cd.layer <= S) (cd.kind == "head" ? massive_heads : massive_blocks).insert(cd.layer);
        score_stage(v, R, Stage{massive_stage, M, massive_blocks, massive_heads, M, false}, table, "after block M", N);
        v.details()["step_up_layer"] = S;
        v.details()["measure_layer"] = M;
        // Sanity check of the first-token shortcut of the head knockouts (P1): ‖x_0‖ after block M from
        // token 0 alone equals the full run's (up to float rounding).
        {
            const double worst = first_token_norm_gap(in, smp, NA, M, clean.norm0);
            v.check("relative difference of ||x_0|| after block M, first token alone vs the full sequence", worst, 1e-3, worst <= 1e-3);
        }
        run.verdict(ve);
        run.verdict(v);
        run.finish();
    });
}
