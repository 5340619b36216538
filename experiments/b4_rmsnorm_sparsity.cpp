// B4 — RMSNorm turns spike tokens into bounded, sparse, near-constant vectors (Paper B).
// Claim: after RMSNorm a spike token is bounded (|h̃ᵢ| ≤ √d), sparse (h̃ ≈ Σ_{i∈C} h̃ᵢ eᵢ over the spike
// channels C) and near-constant: RMSNorm(hᵃ) ≈ RMSNorm(hᵇ) for any two spike tokens (cosine → 1 after
// the step-up block).
// Measured on natural text without BOS: spike tokens = positions whose state after the step-up block S
// has a massive entry (Sun et al.); C = the channels carrying those entries. Before = the step-up FFN's
// input blocks.S.ln2.hook_normalized; after = the next block's norm output blocks.(S+1).ln1.hook_normalized
// (gains included, what the model sees). Mean pairwise cosine among spike tokens (different inputs)
// before and after, against the same for non-spike tokens (one random position ≥ 1 per sample); for the
// pure normalisation x/rms(x) of the state after block S (analysis::rms_normalize): max |x̃ᵢ| / √d and the
// energy share Σ_{i∈C} x̃ᵢ² / d of the spike channels.
// Theory: R3 of theory/rmsnorm_sparsification.hpp bounds the cosine after the norm from below by the
// energy fractions of C (reported as the mean bound over consecutive pairs of spike tokens); R1 and R2
// bound each spike token's normalised state with the gain of the next norm (means and the worst
// actual/bound ratio over spike tokens, which the theory says is ≤ 1).
// Command: build/experiments/b4_rmsnorm_sparsity [--samples 32] [--out out/b4_rmsnorm_sparsity]
// Writes: tokens.csv (sample, position, spike?, energy share, max|x̃|/√d), cosines.csv, meta.json.
#include "common.hpp"

#include <sinkscope/analysis/geometry.hpp>
#include <sinkscope/theory/rmsnorm_sparsification.hpp>

using namespace sinkscope;
using namespace sinkscope::experiments;

struct Config {
    std::int64_t samples = 32;
    std::int64_t seq_len = 64;
};

int main(int argc, char** argv) {
    CLI::App app{"B4: RMSNorm makes spike tokens sparse and near-constant"};
    CommonOptions opt;
    Config cfg;
    add_common(app, opt);
    app.add_option("--samples", cfg.samples, "natural-text samples")->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    if (opt.smoke) { cfg.samples = 3; cfg.seq_len = 12; }
    try {
        Run run("b4_rmsnorm_sparsity", "B4: normalised spike tokens are bounded, sparse and near-constant", opt, argc, argv);
        run.config() = {{"samples", cfg.samples}, {"seq_len", cfg.seq_len}, {"bos", false}};
        Inputs in = load_inputs(opt, run);
        const auto& c = in.m.config;
        const std::int64_t L = c.n_layers, d = c.d_model;
        const auto smp = samples(in, opt, cfg.seq_len, cfg.samples, false);

        run.phase("locate step-up");
        const SpikeTrace tr = trace_spike(in, std::vector<Tokens>(smp.begin(), smp.begin() + std::min<std::size_t>(smp.size(), 4)));
        const std::int64_t S = tr.step_up_layer >= 0 ? tr.step_up_layer : 0;
        const std::int64_t A = std::min(S + 1, L - 1);
        run.results()["trace"] = trace_json(tr);
        run.results()["step_up_layer"] = S;
        const std::string before = model::hook_name("normalized2", S), after = model::hook_name("normalized1", A),
                          post = model::hook_name("resid_post", S);

        run.phase("samples");
        std::vector<Eigen::VectorXd> spk_before, spk_after, oth_before, oth_after, spk_post;
        std::vector<std::int64_t> channels;
        Csv tok(run.path("tokens.csv"), {"sample", "position", "spike", "energy_share", "max_over_sqrt_d"});
        std::vector<double> share_spike, share_other, bound;
        std::mt19937_64 rng(opt.seed + 7);
        for (std::size_t s = 0; s < smp.size(); ++s) {
            model::HookSet<float> hooks;
            model::ActivationCache<float> cache;
            cache.attach(hooks, std::vector<std::string>{before, after, post});
            model::forward(c, in.m.weights, smp[s], &hooks, no_logits(A));
            const std::int64_t n = std::int64_t(smp[s].size());
            const auto ent = analysis::massive_entries(cache[post].data.data(), n, d);
            for (auto ch : analysis::spike_channels(ent))
                if (std::find(channels.begin(), channels.end(), ch) == channels.end()) channels.push_back(ch);
            const auto pos = analysis::spike_positions(ent);
            auto row = [&](const std::string& name, std::int64_t t) {
                return Eigen::Map<const Eigen::VectorXf>(cache[name].data.data() + t * d, d).cast<double>().eval();
            };
            for (auto t : pos) { spk_before.push_back(row(before, t)); spk_after.push_back(row(after, t)); spk_post.push_back(row(post, t)); }
            std::int64_t other = -1;
            for (int tries = 0; tries < 100 && n > 1; ++tries) {
                const std::int64_t t = 1 + std::int64_t(rng() % std::uint64_t(n - 1));
                if (!std::binary_search(pos.begin(), pos.end(), t)) { other = t; break; }
            }
            if (other >= 0) { oth_before.push_back(row(before, other)); oth_after.push_back(row(after, other)); }
            // Pure normalisation of the state after S, for every spike token and the chosen other token.
            std::vector<std::int64_t> look(pos.begin(), pos.end());
            if (other >= 0) look.push_back(other);
            for (auto t : look) {
                const Eigen::VectorXd x = analysis::rms_normalize(row(post, t));
                const bool spike = std::binary_search(pos.begin(), pos.end(), t);
                const double share = channels.empty() ? 0.0 : analysis::energy_share(x, channels);
                const double mx = x.cwiseAbs().maxCoeff() / std::sqrt(double(d));
                tok.row(s, t, int(spike), share, mx);
                (spike ? share_spike : share_other).push_back(share);
                bound.push_back(mx);
            }
            run.progress(std::int64_t(s) + 1, std::int64_t(smp.size()), "samples");
        }
        auto mpc = [d](const std::vector<Eigen::VectorXd>& v) {
            if (v.size() < 2) return -2.0;  // undefined: fewer than two tokens
            analysis::RowMatrixXd X(v.size(), d);
            for (std::size_t i = 0; i < v.size(); ++i) X.row(i) = v[i].transpose();
            return analysis::mean_pairwise_cosine(X);
        };
        auto mean = [](const std::vector<double>& v) { double s = 0; for (double x : v) s += x; return v.empty() ? -1.0 : s / double(v.size()); };
        const double cb = mpc(spk_before), ca = mpc(spk_after), ob = mpc(oth_before), oa = mpc(oth_after);
        Csv cs(run.path("cosines.csv"), {"group", "before", "after", "tokens"});
        cs.row("spike", cb, ca, spk_before.size());
        cs.row("other", ob, oa, oth_before.size());
        // Theory (R3, theory/rmsnorm_sparsification.hpp): a lower bound on cos(RMSNorm(hᵃ), RMSNorm(hᵇ)) from
        // the energy fractions of C, for consecutive pairs of spike tokens, with the gain of the next norm.
        // R1 and R2 bound each spike token's normalised state h̃ = RMSNorm(h; g of block S+1):
        //   |h̃ᵢ| ≤ √d·max|g|·κ  and  ‖h̃ − h̃_C‖ ≤ √(d(1−ρ))·max_{i∉C}|gᵢ|·κ,  κ = ‖h‖/√(‖h‖² + d·eps).
        double bound_sum = 0, actual_sum = 0;
        std::int64_t pairs = 0;
        double rho_sum = 0, r1_sum = 0, r1_bound_sum = 0, r2_sum = 0, r2_bound_sum = 0, r1_worst = 0, r2_worst = 0;
        if (!channels.empty()) {
            const Eigen::VectorXd g = in.m.weights.layers[A].attn_norm.weight.cast<double>();
            std::vector<theory::Index> C(channels.begin(), channels.end());
            for (std::size_t i = 0; i + 1 < spk_post.size(); ++i) {
                const auto r = theory::cosine_bound(spk_post[i], spk_post[i + 1], g, c.norm_eps, C);
                bound_sum += r.bound; actual_sum += r.actual; ++pairs;
            }
            for (const auto& h : spk_post) {
                const auto r = theory::sparsification_bounds(h, g, c.norm_eps, C);
                rho_sum += r.rho;
                r1_sum += r.max_abs; r1_bound_sum += r.max_abs_bound; r1_worst = std::max(r1_worst, r.max_abs / r.max_abs_bound);
                r2_sum += r.residual; r2_bound_sum += r.residual_bound;
                r2_worst = std::max(r2_worst, r.residual / r.residual_bound);
            }
        }
        run.results()["theory_cosine"] = {{"pairs", pairs}, {"mean_bound", pairs ? bound_sum / pairs : -2.0},
                                          {"mean_actual", pairs ? actual_sum / pairs : -2.0}};
        const double nt = double(spk_post.size());
        run.results()["theory_bounds"] = {
            {"spike_tokens", spk_post.size()}, {"mean_rho", nt ? rho_sum / nt : -1.0},
            {"mean_max_abs", nt ? r1_sum / nt : -1.0}, {"mean_max_abs_bound", nt ? r1_bound_sum / nt : -1.0},
            {"worst_max_abs_over_bound", r1_worst}, {"mean_residual", nt ? r2_sum / nt : -1.0},
            {"mean_residual_bound", nt ? r2_bound_sum / nt : -1.0}, {"worst_residual_over_bound", r2_worst}};
        run.results()["spike_channels"] = channels;
        run.results()["cosine"] = {{"spike_before", cb}, {"spike_after", ca}, {"other_before", ob}, {"other_after", oa},
                                   {"spike_tokens", spk_before.size()}, {"other_tokens", oth_before.size()}};
        run.results()["sparsity"] = {{"energy_share_spike", mean(share_spike)}, {"energy_share_other", mean(share_other)},
                                     {"max_abs_over_sqrt_d", bound.empty() ? 0.0 : *std::max_element(bound.begin(), bound.end())}};
        run.finish();
    } catch (const Error& e) {
        std::cerr << e.what() << "\n";
        return 2;
    }
    return 0;
}
