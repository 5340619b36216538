// A2 — the P0 sink circuit (Paper A).
// Claim: (i) identification: under the causal mask position 0 attends only to itself (p₀ = 1), so its
// attention output is unmixed; (ii) amplification: the following MLP(s) turn that into a hidden state of
// very large ℓ2 norm with a fixed direction (cross-input cosine ≈ 1, separated from other positions in
// PCA); single-head ablations do not remove it (heads cooperate), ablating the right block does.
// Measured on natural text without BOS (T = 64): per layer (hook_resid_post) the mean ℓ2 norm of
// position 0 and of positions ≥ 1; the mean pairwise cosine across inputs of position-0 states against
// states at the same position t ≥ 1 (averaged over t); the same for the attention output
// (hook_attn_out); cos(x_l, x_{l+1}) at position 0 against the rest (direction stability); a PCA of
// pooled states at the layer after the step-up block. Causal knockouts (zero ablation at every
// position): the whole MLP or attention of each layer 0 … S (S = step-up layer of B1's rule) and every
// single head of layers {0, 1, S}; effect = position-0 norm after block S+1 relative to clean, and the
// sink rate Sink^0.3_0 over layers > S. Theory (theory/p0_circuit.hpp, P2): per layer, the change of the
// normalised position-0 direction ‖Norm(x_l) − Norm(x_{l−1})‖ against its linear prediction ‖√d δ⊥/‖x‖‖,
// the remainder and its sharp bound; and the same change averaged over positions ≥ 1.
// Command: build/experiments/a2_p0_circuit [--samples 16] [--ablation-samples 4] [--out out/a2_p0_circuit]
// Writes: layers.csv, pca.npy [points × 3] (pc1, pc2, is_position_0), ablations.csv, meta.json.
#include "common.hpp"

#include <set>

#include <sinkscope/analysis/geometry.hpp>
#include <sinkscope/model/interventions.hpp>
#include <sinkscope/model/reducers.hpp>
#include <sinkscope/theory/p0_circuit.hpp>

using namespace sinkscope;
using namespace sinkscope::experiments;

struct Config {
    std::int64_t samples = 16;          // samples for norms, cosines and PCA
    std::int64_t ablation_samples = 4;  // samples per knockout condition
    std::int64_t seq_len = 64;
    std::int64_t pca_samples = 8;       // samples pooled in the PCA
    double eps = 0.3;
};

int main(int argc, char** argv) {
    CLI::App app{"A2: the P0 sink circuit"};
    CommonOptions opt;
    Config cfg;
    add_common(app, opt);
    app.add_option("--samples", cfg.samples, "samples for norms and cosines")->capture_default_str();
    app.add_option("--ablation-samples", cfg.ablation_samples, "samples per knockout")->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    if (opt.smoke) { cfg.samples = 3; cfg.ablation_samples = 1; cfg.seq_len = 12; cfg.pca_samples = 2; }
    try {
        Run run("a2_p0_circuit", "A2: position 0 gets a huge, fixed-direction norm from attention (p0 = 1) + MLP", opt, argc, argv);
        run.config() = {{"samples", cfg.samples}, {"ablation_samples", cfg.ablation_samples}, {"seq_len", cfg.seq_len},
                        {"pca_samples", cfg.pca_samples}, {"eps", cfg.eps}, {"bos", false}, {"ablation", "zero, all positions"}};
        Inputs in = load_inputs(opt, run);
        const auto& c = in.m.config;
        const std::int64_t d = c.d_model, L = c.n_layers;
        const auto smp = samples(in, opt, cfg.seq_len, cfg.samples, false);
        const std::int64_t N = std::int64_t(smp.size()), T = std::int64_t(smp[0].size());

        run.phase("locate step-up");
        const std::vector<Tokens> head(smp.begin(), smp.begin() + std::min<std::int64_t>(N, 4));
        const SpikeTrace tr = trace_spike(in, head);
        const std::int64_t S = tr.step_up_layer >= 0 ? tr.step_up_layer : std::min<std::int64_t>(1, L - 1);
        const std::int64_t M = std::min(S + 1, L - 1);  // the layer after the step-up block
        run.results()["trace"] = trace_json(tr);
        run.results()["step_up_layer"] = S;
        run.results()["measure_layer"] = M;

        run.phase("clean runs");
        // resid[l][s] = (T × d) state after block l; attn[l][s] = attention output of block l.
        std::vector<std::vector<std::vector<float>>> resid(L), attn(L);
        for (std::int64_t s = 0; s < N; ++s) {
            model::HookSet<float> hooks;
            model::ActivationCache<float> cache;
            cache.attach(hooks, [](const std::string& n) {
                return n.find("hook_resid_post") != std::string::npos || n.find("hook_attn_out") != std::string::npos;
            });
            model::forward(c, in.m.weights, smp[s], &hooks, no_logits());
            for (std::int64_t l = 0; l < L; ++l) {
                resid[l].push_back(cache[model::hook_name("resid_post", l)].data);
                attn[l].push_back(cache[model::hook_name("attn_out", l)].data);
            }
            run.progress(s + 1, N, "samples");
        }
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
        struct Condition { std::string kind; std::int64_t layer, head; };
        std::vector<Condition> conds{{"clean", -1, -1}};
        for (std::int64_t l = 0; l <= S; ++l) conds.push_back({"mlp", l, -1});
        for (std::int64_t l = 0; l <= S; ++l) conds.push_back({"attn", l, -1});
        std::set<std::int64_t> head_layers{0, std::min<std::int64_t>(1, L - 1), S};
        for (auto l : head_layers)
            for (std::int64_t h = 0; h < c.n_heads; ++h) conds.push_back({"head", l, h});
        const std::int64_t NA = std::min(cfg.ablation_samples, N);
        Csv ab(run.path("ablations.csv"), {"kind", "layer", "head", "norm_pos0", "norm_ratio", "sink_rate_after"});
        double clean_norm = 0;
        json aj = json::array();
        for (std::size_t k = 0; k < conds.size(); ++k) {
            const auto& cd = conds[k];
            model::HookSet<float> hooks;
            if (cd.kind == "mlp") model::ablate_mlp(hooks, cd.layer);
            if (cd.kind == "attn") model::ablate_attention(hooks, cd.layer);
            if (cd.kind == "head") model::ablate_heads<float>(hooks, cd.layer, {cd.head});
            model::AttentionStats<float> as(L, c.n_heads);
            as.attach(hooks);
            double norm = 0;
            hooks.add(model::hook_name("resid_post", M), [&](const std::string&, model::ActivationRef<float>& x) {
                norm += Eigen::Map<const Eigen::VectorXf>(x.data, d).cast<double>().norm();
            });
            for (std::int64_t s = 0; s < NA; ++s) {
                as.begin_sample();
                model::forward(c, in.m.weights, smp[s], &hooks, no_logits());
            }
            norm /= double(NA);
            if (cd.kind == "clean") clean_norm = norm;
            const double ratio = clean_norm > 0 ? norm / clean_norm : 0.0;
            const double sink = S + 1 < L ? as.sink_rate(cfg.eps, S + 1) : as.sink_rate(cfg.eps);
            ab.row(cd.kind, cd.layer, cd.head, norm, ratio, sink);
            aj.push_back({{"kind", cd.kind}, {"layer", cd.layer}, {"head", cd.head}, {"norm_ratio", ratio}, {"sink_rate_after", sink}});
            run.progress(std::int64_t(k) + 1, std::int64_t(conds.size()), "conditions");
        }
        run.results()["ablations"] = aj;
        run.finish();
    } catch (const Error& e) {
        std::cerr << e.what() << "\n";
        return 2;
    }
    return 0;
}
