// B5 — from sparse to sink (Paper B).
// Claim: sink keys k^s ≈ Σ_{i∈C} h̃ᵢ W_Kᵀ eᵢ lie in a 1–2-dimensional subspace; a head becomes a sink
// head when its queries lie closer to that subspace than to ordinary keys (a consistent logit gap).
// Measured on natural text without BOS (T = 64), per layer, kv head g and query head h. Sink heads: Gu's
// α₀ > ε = 0.3 (model::AttentionStats, mean over all samples); a sink kv head: any of its query heads is one.
//
// Energy share (the decision; no fitting). Spike channels C_l of layer l: the channels of position 0's
// input to layer l (hook_resid_pre) that are massive (Sun et al., analysis::massive_entries) in at least
// half of the samples; scored layers: C_l non-empty. For a sink kv head g of a scored layer the weights
// predict the subspace S = span{W_K^g eᵢ : i ∈ C_l} (the key projection's columns at the spike channels:
// position 0 has RoPE angle 0, so k₀ = W_K h̃₀ (+ bias) and h̃₀ ≈ Σ_{i∈C} h̃ᵢ eᵢ puts k₀ in S). A key's
// energy share E(k) = ‖P_S k‖² / ‖k‖² (analysis/weight_subspace.hpp; P_S the orthogonal projector on S) is 1
// inside S, 0 orthogonal to it, and dim S / d_h on average for a key of random direction. Per head: the
// mean over samples of E(position-0 key) and of the mean E over positions ≥ 1 (ordinary keys, pre-RoPE
// like the position-0 key, so both are read in the coordinates S lives in).
//
// Diagnostics (reported, not deciding): (a) the centred 90%-variance dimension of the position-0 keys
// against a null of one random position's keys per sample (theory G2); (b) a sink-head predictor fit on
// the even samples from typical queries and mean keys (mean-field α̂₀ of the logit gap, theory G6), scored
// by balanced accuracy on the odd samples, and theory rule G4 beside it. A head whose queries are all zero
// (a uniformly attending head) has no G4 alignment: counted as undefined, never fatal; a kv head whose
// every position-0 key is zero has no energy share: counted, left out of the medians.
//
// Verdict (rule: kRule below): preconditions: a measured sink head exists, and a sink kv head exists in a
// scored layer (else not applicable); conditions: (1) the median over scored sink kv heads of the mean
// position-0 key share ≥ 0.5 ("most of the energy": the key is closer to S than to its orthogonal
// complement, cos² ≥ ½), (2) the median over the same heads of (position-0 share − ordinary share) ≥ 0
// (ordinary keys hold a smaller share; paired by sample). Intervals: percentile bootstrap over samples.
// Command: build/experiments/b5_sink_keys [--samples 64] [--out out/b5_sink_keys]
// Writes: heads.csv (per query head: its kv head's spike channels, subspace dimension and shares,
// dimensions, prediction, measured α₀), meta.json.
// The key capture, the per-head prediction, the key dimensions against the null, the subspace and the shares,
// the confusion counts: b5_sink_keys_measure.hpp.
#include "b5_sink_keys_measure.hpp"

#include <map>

#include <sinkscope/analysis/geometry.hpp>
#include <sinkscope/model/reducers.hpp>
#include <sinkscope/theory/sink_geometry.hpp>

using namespace sinkscope;
using namespace sinkscope::experiments;
using namespace sinkscope::experiments::sink_key_subspace;

struct Config {
    std::int64_t samples = 64;
    std::int64_t seq_len = 64;
    // Gu et al.'s sink threshold (0.3), the variance fraction that defines a subspace's dimension and the bootstrap
    // resamples: registered in rule B5 (analysis/rule_table.hpp)
    double eps = analysis::rule("B5").value("sink_eps");
    double energy = analysis::rule("B5").value("key_energy");
    // a channel of position 0's input is a spike channel when it is massive in at least this share of the samples
    double spike_share = analysis::rule("B5").value("spike_channel_sample_share");
    std::int64_t stride = 8;     // every stride-th position ≥ 1 as ordinary keys / queries of rule G4
    int resamples = int(analysis::rule("B5").value("bootstrap_resamples"));
};

namespace {

const char* kRule =
    "Preconditions: at least one measured sink head (Gu's alpha_0 > 0.3, mean over samples), and at least one sink kv head "
    "in a scored layer, one whose position-0 input carries spike channels C (channels massive by Sun et al.'s criterion in "
    "at least half of the samples); else not applicable. Per scored sink kv head, S = span{W_K e_i : i in C} (the key "
    "projection's columns at the spike channels, no fitting) and E(k) = ||P_S k||^2 / ||k||^2. Reproduced iff (1) the median "
    "over those heads of the mean share E of the position-0 keys is >= 0.5 (most of the key's energy in S; a key of random "
    "direction holds dim S / d_head on average) and (2) the median over the same heads of (position-0 share - mean share of "
    "the ordinary keys at positions >= 1, pre-RoPE) is >= 0 (ordinary keys hold a smaller share; paired by sample). Each "
    "condition holds when its whole 95% bootstrap interval (over samples) is on the claim's side. The centred sink-key "
    "dimension against a random-position null and the balanced accuracy of a held-out sink-head prediction are reported, "
    "not deciding.";

}  // namespace

// This experiment's flags (after the common ones, experiments/common.hpp) and its --smoke sizes.
void add_flags(CLI::App& app, Config& cfg) {
    app.add_option("--samples", cfg.samples, "natural-text samples (half fit, half score)")->capture_default_str();
    app.add_option("--eps", cfg.eps, "sink threshold")->capture_default_str();
}
void smoke_sizes(Config& cfg) { cfg.samples = 8; cfg.seq_len = 16; cfg.stride = 2; cfg.resamples = 200; }

int main(int argc, char** argv) {
    Config cfg;
    const Experiment experiment{"b5_sink_keys", "B5: sink-key subspace and query alignment predict sink heads",
                                "B5: sink keys span 1-2 dims; queries' logit gap toward them predicts sink heads"};
    return run_experiment(argc, argv, experiment, cfg, add_flags, smoke_sizes, [&](Run& run, const CommonOptions& opt) {
        run.config() = {{"samples", cfg.samples}, {"seq_len", cfg.seq_len}, {"eps", cfg.eps}, {"energy", cfg.energy},
                        {"stride", cfg.stride}, {"resamples", cfg.resamples}, {"split", "even samples fit, odd samples score"},
                        {"spike_share", cfg.spike_share},
                        {"keys", "energy share: pre-RoPE keys (position 0 and every position >= 1) in span{W_K e_i : i in C}; "
                                 "dimension: position-0 keys vs pre-RoPE keys of one random position per sample; "
                                 "prediction: after RoPE (hook_rot_k / hook_rot_q)"}};
        Inputs in = load_inputs(opt, run);
        const auto& c = in.m.config;
        require(c.positions == model::PositionKind::rope, "B5 reads hook_rot_q / hook_rot_k: needs a RoPE model");
        const std::int64_t L = c.n_layers, H = c.n_heads, G = c.n_kv_heads, dh = c.head_dim, group = H / G;
        run.config()["bos"] = in.bos.use;  // the resolved --bos (why: meta.json "bos")
        const auto smp = samples(in, opt, cfg.seq_len, cfg.samples, in.bos.use);
        const std::int64_t N = std::int64_t(smp.size());
        require(N >= 4, "B5 needs at least 4 samples (two per half)");

        run.phase("locate step-up");
        const SpikeTrace tr = trace_spike(in, opt, std::vector<Tokens>(smp.begin(), smp.begin() + std::min<std::int64_t>(N, 4)));
        run.results()["trace"] = trace_json(tr);
        run.results()["step_up_layer"] = tr.step_up_layer;

        run.phase("samples");
        using analysis::RowMatrixXd;
        KeyCapture kc = capture_keys(run, opt, in, smp, cfg.stride);
        const auto& q_sum = kc.q_sum;
        const auto& k_sum = kc.k_sum;
        const auto& fit = kc.fit;
        const auto& score = kc.score;

        run.phase("prediction per head");
        const double nf = double(fit.size());
        const HeadPredictions hp = predict_heads(kc, L, H, G, dh, N, cfg.eps, cfg.energy, cfg.resamples);

        run.phase("sink-key dimension against the null");
        const SinkKeyDimensions kd = sink_key_dimensions(kc, hp.measured_all, L, G, group, N, cfg.energy, cfg.resamples);
        const std::vector<double> every = indices(N);

        run.phase("energy share of the keys in the weight-predicted subspace");
        // Spike channels of every layer's input at position 0, and the scored sink kv heads.
        const std::int64_t T = std::int64_t(smp[0].size());
        std::vector<std::vector<std::int64_t>> spike_ch(L);
        json spike_json = json::object();
        for (std::int64_t l = 0; l < L; ++l) {
            spike_ch[l] = p0_spike_channels(kc, l, N, cfg.spike_share);
            if (!spike_ch[l].empty()) spike_json[std::to_string(l)] = spike_ch[l];
        }
        std::vector<std::int64_t> scored_kv, undefined_share_kv;
        std::vector<KeyShares> shares(L * G);
        std::vector<std::int64_t> subspace_dim(L * G, -1);
        std::vector<double> p0_share(L * G, NAN), ord_share(L * G, NAN);
        auto mean_defined = [](const std::vector<double>& v, const std::vector<double>& r) {
            double s = 0;
            std::int64_t n = 0;
            for (double x : r) if (!std::isnan(v[std::size_t(x)])) { s += v[std::size_t(x)]; ++n; }
            return n ? s / double(n) : NAN;
        };
        for (auto lg : kd.sink_kv) {
            const std::int64_t l = lg / G, g = lg % G;
            if (spike_ch[l].empty()) continue;
            const analysis::RowMatrixXd basis = key_subspace(c, in.m.weights.layers[std::size_t(l)], g, spike_ch[l]);
            subspace_dim[lg] = basis.rows();
            shares[lg] = key_shares(kc, lg, basis, N, T, dh);
            p0_share[lg] = mean_defined(shares[lg].position0, every);
            ord_share[lg] = mean_defined(shares[lg].ordinary, every);
            if (std::isnan(p0_share[lg])) undefined_share_kv.push_back(lg);  // every position-0 key is zero
            else scored_kv.push_back(lg);
        }
        // (1) median over scored heads of the mean position-0 share; (2) median of its paired excess over the
        // ordinary keys' share (a sample whose ordinary keys are all zero is left out of that head's mean).
        auto median_p0_share = [&](const std::vector<double>& r) {
            std::vector<double> m;
            for (auto lg : scored_kv) m.push_back(mean_defined(shares[lg].position0, r));
            m.erase(std::remove_if(m.begin(), m.end(), [](double x) { return std::isnan(x); }), m.end());
            return m.empty() ? NAN : analysis::median_of(m);
        };
        auto median_share_excess = [&](const std::vector<double>& r) {
            std::vector<double> m;
            for (auto lg : scored_kv) {
                std::vector<double> diff(std::size_t(N), NAN);
                for (std::int64_t s = 0; s < N; ++s) diff[s] = shares[lg].position0[s] - shares[lg].ordinary[s];
                const double x = mean_defined(diff, r);
                if (!std::isnan(x)) m.push_back(x);
            }
            return m.empty() ? NAN : analysis::median_of(m);
        };
        double med_p0 = NAN, med_excess = NAN, med_ord = NAN, med_chance = NAN;
        analysis::Interval p0_ci{NAN, NAN}, excess_ci{NAN, NAN};
        if (!scored_kv.empty()) {
            med_p0 = median_p0_share(every);
            med_excess = median_share_excess(every);
            std::vector<double> o, ch;
            for (auto lg : scored_kv) {
                if (!std::isnan(ord_share[lg])) o.push_back(ord_share[lg]);
                ch.push_back(double(subspace_dim[lg]) / double(dh));
            }
            if (!o.empty()) med_ord = analysis::median_of(o);
            med_chance = analysis::median_of(ch);
            // A resample that draws only samples with an undefined share (zero keys) gives NaN; it counts as 0,
            // the claim's wrong side for both conditions (conservative).
            auto finite_or = [](double x, double fallback) { return std::isnan(x) ? fallback : x; };
            p0_ci = analysis::bootstrap(every, [&](const std::vector<double>& r) { return finite_or(median_p0_share(r), 0.0); },
                                        analysis::kConfidence, cfg.resamples);
            excess_ci = analysis::bootstrap(every, [&](const std::vector<double>& r) { return finite_or(median_share_excess(r), 0.0); },
                                            analysis::kConfidence, cfg.resamples);
        }
        std::int64_t zero_query_heads = 0;
        for (const auto& x : hp.g4) zero_query_heads += std::isnan(x.sink_alignment);

        Csv hc(run.path("heads.csv"), {"layer", "head", "kv_head", "spike_channels", "key_subspace_dim", "p0_key_share",
                                       "ordinary_key_share", "sink_dim", "null_dim", "gap_mean", "alpha0_predicted",
                                       "alpha0_measured", "predicted_sink", "measured_sink", "measured_sink_all_samples",
                                       "theory_predicted_sink", "theory_sink_alignment", "theory_ordinary_alignment",
                                       "theory_mean_logit_gap"});
        for (std::int64_t l = 0; l < L; ++l)
            for (std::int64_t h = 0; h < H; ++h) {
                const std::int64_t g = h / group, i = l * H + h;
                const RowMatrixXd qbar = q_sum[i] / nf, kbar = k_sum[l * G + g] / nf;
                const double gap_mean = theory::causal_logit_gaps(qbar, kbar, Eigen::VectorXd(kbar.row(0).transpose())).mean();
                hc.row(l, h, g, std::int64_t(spike_ch[l].size()), subspace_dim[l * G + g], p0_share[l * G + g],
                       ord_share[l * G + g], kd.sink_dim[l * G + g], kd.null_dim[l * G + g], gap_mean, hp.a_hat[i],
                       hp.a_score[i], int(hp.predicted[i]), int(hp.measured_score[i]), int(hp.measured_all[i]),
                       int(hp.g4_predicted[i]), hp.g4[i].sink_alignment, hp.g4[i].ordinary_alignment, hp.g4[i].mean_logit_gap);
            }

        // ---- verdict ------------------------------------------------------------------------------
        std::int64_t n_sink_all = 0;
        for (bool b : hp.measured_all) n_sink_all += b;
        const analysis::Rule& R = analysis::rule("B5");
        analysis::Verdict v("B5", kRule, kRandomInitNull);
        v.registered(R);
        v.precondition(analysis::exact_condition("measured sink heads (alpha_0 > 0.3 over all samples)", double(n_sink_all),
                                                 L * H, R.value("sink_heads_min")));
        v.precondition(analysis::exact_condition("sink kv heads in layers whose position-0 input carries spike channels "
                                                 "(massive in at least half of the samples), with a defined key share",
                                                 double(scored_kv.size()), L * G, R.value("scored_sink_kv_heads_min")));
        v.condition(analysis::bootstrap_condition("median over scored sink kv heads of the mean energy share of position-0 keys "
                                                  "in span{W_K e_i : i in spike channels}",
                                                  med_p0, p0_ci, N, R.value("position0_key_share_min")));
        v.condition(analysis::bootstrap_condition("median over the same heads of (position-0 key share - ordinary key share), "
                                                  "paired by sample", med_excess, excess_ci, N,
                                                  R.value("share_excess_over_ordinary_min")));
        const std::int64_t pos_score = hp.mf.tp + hp.mf.fn, heads = L * H;
        const auto base_ci = analysis::clopper_pearson(std::max(pos_score, heads - pos_score), heads);
        v.details() = {{"sink_kv_heads", kd.sink_kv.size()}, {"scored_sink_kv_heads", scored_kv.size()},
                       {"sink_kv_heads_with_undefined_share", undefined_share_kv.size()},
                       {"spike_channels_by_layer", spike_json},
                       {"median_ordinary_key_share", med_ord},
                       {"median_random_direction_share", med_chance},
                       {"heads_with_zero_queries", zero_query_heads},
                       {"diagnostic_median_centred_sink_dimension", kd.med_sink},
                       {"diagnostic_median_centred_sink_dimension_ci", {kd.sink_ci.lo, kd.sink_ci.hi}},
                       {"diagnostic_median_null_dimension", kd.med_null},
                       {"diagnostic_median_null_minus_sink_dimension", kd.med_diff},
                       {"diagnostic_median_null_minus_sink_dimension_ci", {kd.diff_ci.lo, kd.diff_ci.hi}},
                       {"diagnostic_balanced_accuracy", hp.mf.balanced_accuracy()},
                       {"diagnostic_balanced_accuracy_ci", {hp.mf_ci.lo, hp.mf_ci.hi}},
                       {"constant_predictor_accuracy", double(std::max(pos_score, heads - pos_score)) / double(heads)},
                       {"constant_predictor_accuracy_ci_heads", {base_ci.lo, base_ci.hi}},
                       {"mean_field_accuracy", hp.mf.accuracy()},
                       {"g4_rule_balanced_accuracy", hp.rule_g4.balanced_accuracy()},
                       {"g4_rule_balanced_accuracy_ci", {hp.g4_ci.lo, hp.g4_ci.hi}},
                       {"fit_samples", fit.size()}, {"score_samples", score.size()}};
        run.verdict(v);

        std::vector<double> ah(hp.a_hat.begin(), hp.a_hat.end()), am(hp.a_score.begin(), hp.a_score.end());
        std::int64_t g4_pos = 0;
        for (bool b : hp.g4_predicted) g4_pos += b;
        run.results()["heads"] = heads;
        run.results()["measured_sink_heads"] = pos_score;
        run.results()["measured_sink_heads_all_samples"] = n_sink_all;
        run.results()["sink_kv_heads"] = kd.sink_kv.size();
        run.results()["spike_channels_by_layer"] = spike_json;
        run.results()["scored_sink_kv_heads"] = scored_kv.size();
        run.results()["median_position0_key_share"] = med_p0;
        run.results()["median_position0_key_share_ci"] = {p0_ci.lo, p0_ci.hi};
        run.results()["median_share_excess_over_ordinary"] = med_excess;
        run.results()["median_share_excess_over_ordinary_ci"] = {excess_ci.lo, excess_ci.hi};
        run.results()["median_ordinary_key_share"] = med_ord;
        run.results()["median_random_direction_share"] = med_chance;
        run.results()["heads_with_zero_queries"] = zero_query_heads;
        run.results()["median_sink_dim_of_sink_heads"] = kd.med_sink;
        run.results()["median_sink_dim_ci"] = {kd.sink_ci.lo, kd.sink_ci.hi};
        run.results()["median_null_dim_of_sink_heads"] = kd.med_null;
        run.results()["median_null_minus_sink_dim"] = kd.med_diff;
        run.results()["median_null_minus_sink_dim_ci"] = {kd.diff_ci.lo, kd.diff_ci.hi};
        run.results()["predicted_sink_heads"] = hp.mf.tp + hp.mf.fp;
        run.results()["accuracy"] = hp.mf.accuracy();
        run.results()["balanced_accuracy"] = hp.mf.balanced_accuracy();
        run.results()["balanced_accuracy_ci"] = {hp.mf_ci.lo, hp.mf_ci.hi};
        run.results()["constant_predictor_accuracy"] = double(std::max(pos_score, heads - pos_score)) / double(heads);
        run.results()["precision"] = hp.mf.tp + hp.mf.fp ? double(hp.mf.tp) / double(hp.mf.tp + hp.mf.fp) : 0.0;
        run.results()["recall"] = hp.mf.tp + hp.mf.fn ? double(hp.mf.tp) / double(hp.mf.tp + hp.mf.fn) : 0.0;
        run.results()["theory_rule_accuracy"] = hp.rule_g4.accuracy();
        run.results()["theory_rule_balanced_accuracy"] = hp.rule_g4.balanced_accuracy();
        run.results()["theory_rule_balanced_accuracy_ci"] = {hp.g4_ci.lo, hp.g4_ci.hi};
        run.results()["theory_rule_predicted_sink_heads"] = g4_pos;
        run.results()["pearson_alpha0"] = analysis::pearson(ah, am);
        run.finish();
    });
}
