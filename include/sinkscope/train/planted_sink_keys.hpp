// A planted sink-key model: Paper B's claim B5 by construction, on top of the planted massive activation.
//
//   planted_sink_keys(c, o)        planted_massive (a massive activation at position 0 in channel c*, layers
//                                  S … D) plus, in every layer l of (S, D], sink heads whose keys read the
//                                  spike channel: kv head g's W_K column c* is κ·e_{j*} (nothing else), and its
//                                  query heads read the marker u, which every ordinary token carries, into
//                                  e_{j*}: a positive logit gap toward position 0, whose key is ≈ √d·κ·e_{j*}.
//                                  o.keys_read_spike = false is its twin: that W_K column is zero (the heads'
//                                  keys are blind to the spike), every other number identical.
//   planted_sink_keys_plan(c, o)   the numbers of that construction, with the weights.
//
// Both models also carry a second, spike-free route to the same sink, so that the twin's heads stay sink
// heads: the key writes −ρ·e_{j2} from the marker u (every ordinary key is pushed along e_{j2}, position 0's,
// where u is negligible after the spike's normalisation, is not) and the query reads u into e_{j2} too: a
// logit gap ≈ β_r ρ / √d_h at every row. The spike-key route adds ≈ β_a κ h̃₀[c*] / √d_h (h̃₀[c*] ≈ √d).
// j*, j2: the lowest-frequency rotary pair (RoPE rotates them by t·θ_min ≤ 0.02 rad over 64 positions, so
// the gap is the same at every row), or the first two entries without positions.
//
// B5 then says (theory/planted_sink_keys.md): planted, the position-0 keys of the sink kv heads lie in
// S = span{W_K e_{c*}} = span{e_{j*}} (energy share ≈ 1) and the ordinary keys, along e_{j2}, do not (share
// ≈ 0): reproduced. Twin: S = {0}, every share 0: not reproduced, with the sink heads and the spike present
// (every precondition holds). The dose scales the spike (planted_massive's dose) and κ together.
// Supported: what planted_massive supports, with RoPE or no positions (learned positions put the marker in
// position 0's embedding only, so ordinary tokens carry no constant feature to push: an Error), and
// head_dim >= 2 (two planted directions). Anything else is an Error naming the switch.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "sinkscope/train/planted.hpp"

namespace sinkscope::train {

struct PlantedSinkKeyOptions {
    PlantedOptions massive;            // the spike (seed, dose, S, D, c*, u; its mechanism_on must stay true)
    bool keys_read_spike = true;       // false: the twin (the sink kv head's W_K column c* zeroed)
    std::int64_t kv_head = 0;          // g: the planted kv head of every sink layer (all its query heads)
    double key_read = 0.5;             // κ: W_K^g e_{c*} = dose · κ · e_{j*}
    double attract = 4.0;              // β_a: the query's component along e_{j*} at ordinary positions
    double repel = 4.0;                // ρ: ordinary keys' component −ρ along e_{j2}
    double repel_query = 4.0;          // β_r: the query's component along e_{j2}
};

struct PlantedSinkKeyPlan {
    PlantedPlan massive;
    std::vector<std::int64_t> sink_layers;   // (S, D]
    std::int64_t kv_head = 0, key_dim = 0, repel_dim = 0;  // g, j*, j2
    double key_read = 0;                     // dose · κ (0 in the twin)
    std::vector<double> marker_ordinary;     // per sink layer: mean over positions t ≥ 1 of h̃_t[u] (probe)
    double gap_spike_route = 0;              // β_a · key_read · √d / √d_h (predicted, h̃₀[c*] ≈ √d)
    double gap_marker_route = 0;             // β_r · ρ / √d_h
    nlohmann::json to_json() const {
        return {{"construction", "planted_sink_keys"}, {"massive", massive.to_json()}, {"sink_layers", sink_layers},
                {"kv_head", kv_head}, {"key_dim", key_dim}, {"repel_dim", repel_dim}, {"key_read", key_read},
                {"marker_ordinary", marker_ordinary}, {"gap_spike_route", gap_spike_route},
                {"gap_marker_route", gap_marker_route}};
    }
};

struct PlantedSinkKeyModel {
    model::Weights<float> weights;
    PlantedSinkKeyPlan plan;
};

inline PlantedSinkKeyModel planted_sink_keys_plan(const model::Config& c, const PlantedSinkKeyOptions& o) {
    auto no = [](const std::string& m) { throw Error("planted_sink_keys: " + m); };
    if (c.positions == model::PositionKind::learned)
        no("positions 'learned' is not supported (rope or none): the marker then lives in position 0's embedding only, "
           "and the twin's sink needs it in every ordinary token");
    if (c.head_dim < 2) no("head_dim must be >= 2 (two planted directions)");
    if (o.kv_head < 0 || o.kv_head >= c.n_kv_heads)
        no("kv_head " + std::to_string(o.kv_head) + " outside [0, n_kv_heads = " + std::to_string(c.n_kv_heads) + ")");
    if (!o.massive.mechanism_on) no("massive.mechanism_on must be true (the twin switch is keys_read_spike)");
    if (!(o.key_read > 0) || !(o.attract > 0) || !(o.repel > 0) || !(o.repel_query > 0))
        no("key_read, attract, repel and repel_query must be > 0");
    PlantedModel pm = planted_massive_plan(c, o.massive);  // validates the layout and the massive options
    model::Weights<float>& w = pm.weights;
    PlantedSinkKeyPlan p;
    p.massive = pm.plan;
    const std::int64_t dh = c.head_dim, d = c.d_model, g = o.kv_head, group = c.n_heads / c.n_kv_heads;
    const std::int64_t cs = p.massive.channel, u = p.massive.marker_channel;
    // The lowest-frequency rotary pair: half_split pairs (i, i + r/2), interleaved (2i, 2i + 1), i = r/2 − 1.
    if (c.positions == model::PositionKind::rope) {
        const std::int64_t r = c.rope_dims();
        if (c.rope_layout == model::RopeLayout::half_split) { p.key_dim = r / 2 - 1; p.repel_dim = r - 1; }
        else { p.key_dim = r - 2; p.repel_dim = r - 1; }
    } else {
        p.key_dim = 0; p.repel_dim = 1;
    }
    p.kv_head = g;
    p.key_read = o.keys_read_spike ? o.massive.dose * o.key_read : 0.0;
    for (std::int64_t l = p.massive.step_up_layer + 1; l <= p.massive.step_down_layer; ++l) p.sink_layers.push_back(l);

    // The marker at ordinary positions after each sink layer's attention norm, from one probe of the planted
    // massive model before any sink head is written (so the twin, whose κ differs, gets the same numbers;
    // the sink heads move later layers' inputs by ~1e-2).
    const std::int64_t T = std::min<std::int64_t>(c.context_length, 64);
    Rng rng(stream_seed(o.massive.seed, 0x5e7c));
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(T));
    for (auto& t : tokens) t = std::int32_t(rng.below(std::uint64_t(c.vocab_size)));
    std::vector<std::string> names;
    for (std::int64_t l : p.sink_layers) names.push_back(model::hook_name("normalized1", l));
    const auto probed = detail::probe(c, w, tokens, names);
    for (std::size_t i = 0; i < p.sink_layers.size(); ++i) {
        const std::int64_t l = p.sink_layers[i];
        double m = 0;
        for (std::int64_t t = 1; t < T; ++t) m += double(probed[i][std::size_t(t * d + u)]);
        m /= double(T - 1);
        if (!(m > 0)) no("the marker u reads " + std::to_string(m) + " at ordinary positions of layer " + std::to_string(l) + " (needs > 0)");
        p.marker_ordinary.push_back(m);
        auto& L = w.layers[std::size_t(l)];
        // Key: column c* of kv head g is key_read · e_{j*} and nothing else.
        for (std::int64_t j = 0; j < dh; ++j) L.wk(g * dh + j, cs) = 0.f;
        L.wk(g * dh + p.key_dim, cs) = float(p.key_read);
        // The marker pushes ordinary keys along −e_{j2}: −ρ/m at u. LayerNorm also writes −(1/d)·(its scale)
        // into every channel of position 0 (the spike's share of the mean), which −ρ/m at u alone would read
        // into position 0's key; there the row is made mean-free over the channels ≠ c* (+ρ/(m(d−2)) on the
        // others, 0 at c*), and reads nothing of that offset. The token parts are mean-free under LayerNorm
        // (P0 of planted_massive.md), so ordinary keys are unchanged; under RMSNorm they are not, and the
        // plain row is kept (no offset to cancel).
        for (std::int64_t k = 0; k < d; ++k) {
            const bool mean_free = c.norm == model::NormKind::layernorm;
            L.wk(g * dh + p.repel_dim, k) = k == u ? float(-o.repel / m)
                                            : mean_free && k != cs ? float(o.repel / (m * double(d - 2)))
                                            : mean_free ? 0.f : L.wk(g * dh + p.repel_dim, k);
        }
        // Queries of the group: the marker, read into e_{j*} (toward the spike key) and e_{j2} (away from ordinary keys).
        for (std::int64_t h = g * group; h < (g + 1) * group; ++h) {
            L.wq(h * dh + p.key_dim, u) = float(o.attract / m);
            L.wq(h * dh + p.repel_dim, u) = float(o.repel_query / m);
        }
    }
    p.gap_spike_route = o.attract * p.key_read * std::sqrt(double(d)) / std::sqrt(double(dh));
    p.gap_marker_route = o.repel_query * o.repel / std::sqrt(double(dh));
    return {std::move(w), std::move(p)};
}

inline model::Weights<float> planted_sink_keys(const model::Config& c, const PlantedSinkKeyOptions& o) {
    return planted_sink_keys_plan(c, o).weights;
}

// The LayerNorm / GELU layout of the same size as planted_default_config (SmolLM2's is the Llama one):
// LayerNorm with bias, a GELU FFN of width 4d, q/k/v biases, untied output, RoPE (GPT-NeoX's norm and FFN with
// a sequential residual; learned positions are refused above).
inline model::Config planted_layernorm_gelu_config() { return with_layernorm_gelu(planted_default_config()); }

}  // namespace sinkscope::train
