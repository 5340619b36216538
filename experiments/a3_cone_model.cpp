// A3 — the cone model of value vectors (Paper A).
// Claim: with values vᵢ = α u + √(1−α²) sᵢ (a cone around a fixed axis u, isotropic rest) and weights p
// independent of s, E‖o‖² = α² + (1 − α²) E[Σᵢ pᵢ²]; position 0 has Σp² = 1 and so the largest expected
// attention-output norm.
// Measured on natural text without BOS (T = 64), for every layer and query head h (kv head g): the cone
// fit of the sample's values V_g (theory::fit_cone: α, axis, mean ‖v‖²), the prediction
// theory::predict_output_norm_sq(fit, A_h) per query position, and the measured ‖o_t‖² = ‖z_t,h‖²
// (hook_z = pattern · V, before W_O). Reported per layer and position: both averaged over heads and
// samples; per layer: ratio of position 0 to the mean of positions ≥ 1 (measured and predicted), and the
// share of (head, sample) in which position 0 has the largest measured norm, and the layer's sink rate
// Sink^0.3_0 (in a sink layer position 0 is the key most queries attend to, so p is no longer
// independent of the values: the cone model's assumption fails there by construction).
// Command: build/experiments/a3_cone_model [--samples 16] [--out out/a3_cone_model]
// Writes: predicted.npy, measured.npy [L × T], layers.csv, meta.json.
#include "common.hpp"

#include <sinkscope/analysis/geometry.hpp>
#include <sinkscope/model/reducers.hpp>
#include <sinkscope/theory/cone_model.hpp>

using namespace sinkscope;
using namespace sinkscope::experiments;

struct Config {
    std::int64_t samples = 16;
    std::int64_t seq_len = 64;
};

int main(int argc, char** argv) {
    CLI::App app{"A3: cone model, predicted vs measured attention-output norms"};
    CommonOptions opt;
    Config cfg;
    add_common(app, opt);
    app.add_option("--samples", cfg.samples, "number of samples")->capture_default_str();
    app.add_option("--seq-len", cfg.seq_len, "tokens per sample")->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    if (opt.smoke) { cfg.samples = 2; cfg.seq_len = 12; }
    try {
        Run run("a3_cone_model", "A3: E||o||^2 = a^2 + (1 - a^2) E[sum p^2]; position 0 has the largest output norm", opt, argc, argv);
        run.config() = {{"samples", cfg.samples}, {"seq_len", cfg.seq_len}, {"bos", false},
                        {"values", "hook_v of the head's kv head (before W_O)"}, {"output", "hook_z of the query head"}};
        Inputs in = load_inputs(opt, run);
        const auto& c = in.m.config;
        const std::int64_t L = c.n_layers, H = c.n_heads, G = c.n_kv_heads, dh = c.head_dim, group = H / G;
        const auto smp = samples(in, opt, cfg.seq_len, cfg.samples, false);
        const std::int64_t N = std::int64_t(smp.size()), T = std::int64_t(smp[0].size());

        std::vector<double> pred(L * T, 0.0), meas(L * T, 0.0), alpha(L, 0.0), argmax0(L, 0.0);
        model::AttentionStats<float> sinks(L, H);  // per-layer sink rate: where the cone's assumptions can hold
        run.phase("samples");
        for (std::int64_t s = 0; s < N; ++s) {
            model::HookSet<float> hooks;
            sinks.attach(hooks);
            sinks.begin_sample();
            model::ActivationCache<float> cache;
            cache.attach(hooks, [](const std::string& n) {
                return n.find("attn.hook_v") != std::string::npos || n.find("attn.hook_z") != std::string::npos ||
                       n.find("attn.hook_pattern") != std::string::npos;
            });
            model::forward(c, in.m.weights, smp[s], &hooks, no_logits());
            for (std::int64_t l = 0; l < L; ++l) {
                const auto& v = cache[model::hook_name("v", l)].data;        // (T, G, dh)
                const auto& z = cache[model::hook_name("z", l)].data;        // (T, H, dh)
                const auto& p = cache[model::hook_name("pattern", l)].data;  // (H, T, T)
                for (std::int64_t g = 0; g < G; ++g) {
                    theory::RowMatrix<float> V(T, dh);
                    for (std::int64_t t = 0; t < T; ++t)
                        for (std::int64_t j = 0; j < dh; ++j) V(t, j) = v[(t * G + g) * dh + j];
                    const auto fit = theory::fit_cone(V);
                    alpha[l] += double(fit.alpha) / double(G * N);
                    for (std::int64_t h = g * group; h < (g + 1) * group; ++h) {
                        Eigen::Map<const theory::RowMatrix<float>> A(p.data() + h * T * T, T, T);
                        const auto pr = theory::predict_output_norm_sq(fit, A);
                        double best = -1; std::int64_t arg = -1;
                        for (std::int64_t t = 0; t < T; ++t) {
                            double m = 0;
                            for (std::int64_t j = 0; j < dh; ++j) { const double x = z[(t * H + h) * dh + j]; m += x * x; }
                            pred[l * T + t] += double(pr[t]) / double(H * N);
                            meas[l * T + t] += m / double(H * N);
                            if (m > best) { best = m; arg = t; }
                        }
                        argmax0[l] += (arg == 0) / double(H * N);
                    }
                }
            }
            run.progress(s + 1, N, "samples");
        }
        run.npy("predicted.npy", to_float(pred), {std::size_t(L), std::size_t(T)});
        run.npy("measured.npy", to_float(meas), {std::size_t(L), std::size_t(T)});
        Csv lay(run.path("layers.csv"), {"layer", "alpha", "pred_ratio0", "meas_ratio0", "pos0_is_max_share", "log_corr", "sink_rate"});
        json lj = json::array();
        double agree = 0;
        for (std::int64_t l = 0; l < L; ++l) {
            double pr = 0, mr = 0;
            for (std::int64_t t = 1; t < T; ++t) { pr += pred[l * T + t]; mr += meas[l * T + t]; }
            pr /= double(T - 1); mr /= double(T - 1);
            const double rp = pred[l * T] / pr, rm = meas[l * T] / mr;
            std::vector<double> lp, lm;  // log predicted and log measured over positions
            for (std::int64_t t = 0; t < T; ++t) { lp.push_back(std::log(pred[l * T + t])); lm.push_back(std::log(meas[l * T + t])); }
            const double corr = analysis::pearson(lp, lm);
            agree += (rp > 1) == (rm > 1);
            const double sr = sinks.sink_rate(0.3, l, l);
            lay.row(l, alpha[l], rp, rm, argmax0[l], corr, sr);
            lj.push_back({{"layer", l}, {"alpha", alpha[l]}, {"pred_ratio0", rp}, {"meas_ratio0", rm}, {"pos0_is_max_share", argmax0[l]},
                          {"log_corr", corr}, {"sink_rate", sr}});
        }
        run.results()["layers"] = lj;
        run.results()["layers_where_pos0_exceeds_rest_pred_and_meas_agree"] = agree / double(L);
        run.finish();
    } catch (const Error& e) {
        std::cerr << e.what() << "\n";
        return 2;
    }
    return 0;
}
