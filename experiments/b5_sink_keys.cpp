// B5 — from sparse to sink (Paper B).
// Claim: sink keys k^s ≈ Σ_{i∈C} h̃ᵢ W_Kᵀ eᵢ lie in a 1–2-dimensional subspace; a head becomes a sink
// head when its queries lie closer to that subspace than to ordinary keys (a consistent logit gap).
// Measured on natural text without BOS (T = 64), per layer and query head h (kv head g), with keys and
// queries after RoPE (attn.hook_rot_k / hook_rot_q: the vectors whose dot products are the logits; the
// position-0 key is not rotated): sink keys = position-0 keys of all samples; ordinary keys = keys at
// positions ≥ 1. analysis::sink_key_geometry gives the sink-key dimension (90% of the uncentered
// energy), the ordinary-key dimension and the queries' energy share in the sink subspace against an
// ordinary-key subspace of the same dimension. Prediction (analysis/sink_keys.hpp): the mean logit gap
// of the head's queries between the mean sink key and the running mean of ordinary keys, turned into
// α̂₀ by the mean-field formula; predicted sink head: α̂₀ > ε. Measured: Gu's α₀ (model::AttentionStats),
// sink head: α₀ > ε (mean over samples), ε = 0.3. The theory module's own rule (theory/sink_geometry.hpp,
// G4: query alignment to the sink subspace above that to the ordinary-key subspace, and a positive mean
// logit gap) is applied to the same vectors and scored the same way.
// Command: build/experiments/b5_sink_keys [--samples 16] [--out out/b5_sink_keys]
// Writes: heads.csv (layer, head, dims, shares, gap, predicted and measured α₀), meta.json.
#include "common.hpp"

#include <sinkscope/analysis/geometry.hpp>
#include <sinkscope/analysis/sink_keys.hpp>
#include <sinkscope/model/reducers.hpp>
#include <sinkscope/theory/sink_geometry.hpp>

using namespace sinkscope;
using namespace sinkscope::experiments;

struct Config {
    std::int64_t samples = 16;
    std::int64_t seq_len = 64;
    double eps = 0.3;
    double energy = 0.9;         // energy fraction that defines a subspace's dimension
    std::int64_t stride = 4;     // every stride-th position ≥ 1 as ordinary keys / queries
};

int main(int argc, char** argv) {
    CLI::App app{"B5: sink-key subspace and query alignment predict sink heads"};
    CommonOptions opt;
    Config cfg;
    add_common(app, opt);
    app.add_option("--samples", cfg.samples, "natural-text samples")->capture_default_str();
    app.add_option("--eps", cfg.eps, "sink threshold")->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    if (opt.smoke) { cfg.samples = 3; cfg.seq_len = 12; cfg.stride = 2; }
    try {
        Run run("b5_sink_keys", "B5: sink keys span 1-2 dims; queries' logit gap toward them predicts sink heads", opt, argc, argv);
        run.config() = {{"samples", cfg.samples}, {"seq_len", cfg.seq_len}, {"eps", cfg.eps}, {"energy", cfg.energy},
                        {"stride", cfg.stride}, {"keys", "after RoPE (hook_rot_k / hook_rot_q)"}};
        Inputs in = load_inputs(opt, run);
        const auto& c = in.m.config;
        require(c.positions == model::PositionKind::rope, "B5 reads hook_rot_q / hook_rot_k: needs a RoPE model");
        const std::int64_t L = c.n_layers, H = c.n_heads, G = c.n_kv_heads, dh = c.head_dim, group = H / G;
        const auto smp = samples(in, opt, cfg.seq_len, cfg.samples, false);
        const std::int64_t N = std::int64_t(smp.size()), T = std::int64_t(smp[0].size());

        run.phase("locate step-up");
        const SpikeTrace tr = trace_spike(in, std::vector<Tokens>(smp.begin(), smp.begin() + std::min<std::int64_t>(N, 4)));
        run.results()["trace"] = trace_json(tr);
        run.results()["step_up_layer"] = tr.step_up_layer;

        run.phase("samples");
        model::AttentionStats<float> stats(L, H);
        std::vector<std::vector<std::vector<float>>> q(L), k(L);  // [layer][sample] (T, H|G, dh)
        for (std::int64_t s = 0; s < N; ++s) {
            model::HookSet<float> hooks;
            stats.attach(hooks);
            model::ActivationCache<float> cache;
            cache.attach(hooks, [](const std::string& n) {
                return n.find("attn.hook_rot_q") != std::string::npos || n.find("attn.hook_rot_k") != std::string::npos;
            });
            stats.begin_sample();
            model::forward(c, in.m.weights, smp[s], &hooks, no_logits());
            for (std::int64_t l = 0; l < L; ++l) {
                q[l].push_back(cache[model::hook_name("rot_q", l)].data);
                k[l].push_back(cache[model::hook_name("rot_k", l)].data);
            }
            run.progress(s + 1, N, "samples");
        }

        run.phase("geometry per head");
        Csv hc(run.path("heads.csv"), {"layer", "head", "sink_dim", "ordinary_dim", "sink_top_share", "query_sink_share",
                                       "query_ordinary_share", "gap", "alpha0_predicted", "alpha0_measured", "predicted_sink",
                                       "measured_sink", "theory_predicted_sink", "theory_sink_alignment", "theory_ordinary_alignment"});
        std::int64_t agree = 0, tp = 0, fp = 0, fn = 0, total = 0, theory_agree = 0, theory_pos = 0;
        std::vector<double> pa, ma, sink_dims;
        for (std::int64_t l = 0; l < L; ++l) {
            for (std::int64_t g = 0; g < G; ++g) {
                analysis::RowMatrixXd sink(N, dh), ord((N * ((T - 2) / cfg.stride + 1)), dh);
                std::int64_t no = 0;
                for (std::int64_t s = 0; s < N; ++s) {
                    for (std::int64_t j = 0; j < dh; ++j) sink(s, j) = k[l][s][(0 * G + g) * dh + j];
                    for (std::int64_t t = 1; t < T; t += cfg.stride, ++no)
                        for (std::int64_t j = 0; j < dh; ++j) ord(no, j) = k[l][s][(t * G + g) * dh + j];
                }
                ord.conservativeResize(no, dh);
                const Eigen::VectorXd mean_sink = sink.colwise().mean().transpose();
                for (std::int64_t h = g * group; h < (g + 1) * group; ++h) {
                    analysis::RowMatrixXd qs(N * ((T - 2) / cfg.stride + 1), dh);
                    std::int64_t nq = 0;
                    double gap = 0;
                    for (std::int64_t s = 0; s < N; ++s) {
                        analysis::RowMatrixXd Q(T, dh), K(T, dh);
                        for (std::int64_t t = 0; t < T; ++t)
                            for (std::int64_t j = 0; j < dh; ++j) {
                                Q(t, j) = q[l][s][(t * H + h) * dh + j];
                                K(t, j) = k[l][s][(t * G + g) * dh + j];
                            }
                        gap += analysis::sink_logit_gap(Q, K, mean_sink) / double(N);
                        for (std::int64_t t = 1; t < T; t += cfg.stride) qs.row(nq++) = Q.row(t);
                    }
                    qs.conservativeResize(nq, dh);
                    const auto geo = analysis::sink_key_geometry(sink, ord, qs, cfg.energy);
                    const double a_hat = analysis::mean_field_sink_attention(gap, T);
                    const double a = stats.received(l, h)[0];
                    const bool ps = a_hat > cfg.eps, ms = a > cfg.eps;
                    const auto th = theory::predict_sink_head(qs, sink, ord, cfg.energy);
                    theory_agree += th.predicted == ms;
                    theory_pos += th.predicted;
                    hc.row(l, h, geo.sink_dim, geo.ordinary_dim, geo.sink_top_share, geo.query_sink_share, geo.query_ordinary_share,
                           gap, a_hat, a, int(ps), int(ms), int(th.predicted), th.sink_alignment, th.ordinary_alignment);
                    agree += ps == ms; tp += ps && ms; fp += ps && !ms; fn += !ps && ms; ++total;
                    pa.push_back(a_hat); ma.push_back(a);
                    if (ms) sink_dims.push_back(double(geo.sink_dim));
                }
            }
            run.progress(l + 1, L, "layers");
        }
        std::sort(sink_dims.begin(), sink_dims.end());
        run.results()["heads"] = total;
        run.results()["measured_sink_heads"] = tp + fn;
        run.results()["predicted_sink_heads"] = tp + fp;
        run.results()["accuracy"] = double(agree) / double(total);
        run.results()["precision"] = tp + fp ? double(tp) / double(tp + fp) : 0.0;
        run.results()["recall"] = tp + fn ? double(tp) / double(tp + fn) : 0.0;
        run.results()["theory_rule_accuracy"] = double(theory_agree) / double(total);
        run.results()["theory_rule_predicted_sink_heads"] = theory_pos;
        run.results()["pearson_alpha0"] = analysis::pearson(pa, ma);
        run.results()["median_sink_dim_of_sink_heads"] = sink_dims.empty() ? -1.0 : sink_dims[sink_dims.size() / 2];
        run.finish();
    } catch (const Error& e) {
        std::cerr << e.what() << "\n";
        return 2;
    }
    return 0;
}
