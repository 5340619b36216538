// Planted-mechanism models: weights set by construction, not trained, so that a claim holds exactly.
//
//   planted_massive(c, o)        a massive activation at position 0 in channel c*, injected by a step-up
//                                FFN unit in layer S and cancelled by a step-down FFN unit in layer D
//                                (Paper B's rise-plateau-fall), on a random background (train::init_weights);
//                                o.mechanism_on = false is its twin: the step-up unit's W_down column zeroed,
//                                every other number identical.
//   planted_massive_plan(c, o)   the numbers of that construction (channels, magnitudes, predictions), with
//                                the weights they were computed for.
//
// Statement and derivation: theory/planted_massive.md. In short (pre-norm, rope or no positions):
//   embedding   every token row: a random token part on the d−1 channels ≠ u, rescaled to rms σ (embed_rms),
//               and the constant a in the marker channel u (learned positions: u = 0 in every token row,
//               pos_embed[0][u] = A, pos_embed[t ≥ 1][u] = 0 instead, and no detector head);
//   detector    layer S's attention: W_Q = 0 (uniform causal attention), Σ_h W_O^h W_V^h = −(1−ε′)·s·P, P the
//               projector onto the channels ≠ u, s the rms (RMSNorm) or standard deviation (LayerNorm) of every
//               embedding row. Position 0 attends only to itself, so its token part is removed up to ε′:
//               x₀ = a·e_u + ε′·E[x₀]; at t ≥ 1 the token part E[x_t] − mean_{j≤t} E[x_j] stays, of rms ≈ σ.
//               After the FFN norm h̃₀[u] ≈ √d/√(1+ε′²(d−1)σ²/a²), h̃_t[u] ≈ a/σ ≪ 1.
//   step-up     layer S's FFN, hidden unit j: SwiGLU W_gate[j,:] = W_up[j,:] = β e_uᵀ, W_down[c*, j] = m, so
//               F(h̃)_{c*} = m·silu(β h̃_u)·β h̃_u (GELU FFN: two units ±β e_u, m·(gelu(βh̃_u) + gelu(−βh̃_u)));
//               U_{c*} = m β² e_u e_uᵀ + background, λ⋆ = m β², s⋆ = e_u.
//   step-down   layer D's FFN, hidden unit j: W_gate[j,:] = W_up[j,:] = β e_{c*}ᵀ, W_down[c*, j] = −m_D: reads the
//               spike itself and writes it back with the opposite sign.
//   magnitudes  M₁ = margin · max(100, 1000 · the largest median |x| of the mechanism-free states H₀ … H_2L on a
//               probe sequence); M = dose · M₁; m and m_D are solved from the forward of a probe token, at dose 1,
//               then scaled by the dose.
// Supported: norm rmsnorm or layernorm, norm_placement pre, ffn swiglu or gelu, softmax attention without
// output gate, no parallel residual, no force-sink mask; the detector (rope / no positions) needs
// n_kv_heads · head_dim ≥ d_model − 1. Anything else is an Error naming the switch.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/layers/activations.hpp"
#include "sinkscope/model/config.hpp"
#include "sinkscope/model/forward.hpp"
#include "sinkscope/model/hooks.hpp"
#include "sinkscope/model/weights.hpp"
#include "sinkscope/train/init.hpp"
#include "sinkscope/train/random.hpp"

namespace sinkscope::train {

struct PlantedOptions {
    std::uint64_t seed = 1;            // the random background (init_weights) and the embedding's token parts
    double dose = 1;                   // M = dose · M₁ (1: the smallest magnitude that meets Sun's criterion with `margin`)
    bool mechanism_on = true;          // false: the twin (the step-up unit's W_down column zeroed)
    std::int64_t step_up_layer = 0;    // S: the detector's attention and the step-up FFN
    std::int64_t step_down_layer = -1; // D (> S); −1: the last layer
    std::int64_t channel = -1;         // c*; −1: d_model / 3
    std::int64_t marker_channel = -1;  // u (≠ c*); −1: (c* + d_model / 2) mod d_model
    double init_std = 0.02;            // the background's σ (train::init_weights)
    double embed_rms = 2.0;            // σ: rms of every token row's token part (SmolLM2-135M's layer-0 residual: rms ≈ 2.1)
    double margin = 2.0;               // M₁ = margin · Sun's threshold
    double leak = -1;                  // ε′ of the detector; −1: chosen so that position 0's pre-FFN cosine across tokens ≈ 0.8
    double beta = 2.0;                 // β of both planted units (silu(β h̃) ≈ β h̃ within σ(−β h̃))
};

// The numbers of one construction (theory/planted_massive.md), as planted_massive computed them.
struct PlantedPlan {
    std::int64_t step_up_layer = 0, step_down_layer = 0, channel = 0, marker_channel = 0, unit = 0;
    std::string detector;              // "attention" (layer S's head) or "pos_embed" (learned positions)
    double marker = 0;                 // a (detector) or A (pos_embed)
    double leak = 0;                   // ε′
    double reference_median = 0;       // the largest median |x| over H₀ … H_2L of the probe, mechanism off
    double magnitude_dose1 = 0;        // M₁
    double magnitude = 0;              // M = dose · M₁ (the step-up's write at position 0)
    double h_marker_pos0 = 0;          // h̃₀[u] at layer S's FFN input (probe)
    double h_marker_other_max = 0;     // max over t ≥ 1 of |h̃_t[u]| there (probe)
    double up_scale = 0, down_scale = 0;  // m, m_D
    double lambda_star = 0;            // m β² (SwiGLU; GELU: none, 0)
    nlohmann::json to_json() const {
        return {{"construction", "planted_massive"}, {"step_up_layer", step_up_layer}, {"step_down_layer", step_down_layer},
                {"channel", channel}, {"marker_channel", marker_channel}, {"unit", unit}, {"detector", detector},
                {"marker", marker}, {"leak", leak}, {"reference_median", reference_median},
                {"magnitude_dose1", magnitude_dose1}, {"magnitude", magnitude}, {"h_marker_pos0", h_marker_pos0},
                {"h_marker_other_max", h_marker_other_max}, {"up_scale", up_scale}, {"down_scale", down_scale},
                {"lambda_star", lambda_star}};
    }
};

struct PlantedModel {
    model::Weights<float> weights;
    PlantedPlan plan;
};

namespace detail {

// Error unless a planted construction named `what` supports every switch of c (the message names the
// switch): the layout every construction shares (a norm with one per-token scale, pre placement, an FFN
// with hidden units, softmax attention, no gate or parallel residual).
inline void require_planted_switches(const model::Config& c, const std::string& what) {
    using namespace model;
    auto no = [&what](const std::string& m) { throw Error(what + ": " + m); };
    c.validate();
    if (c.norm != NormKind::rmsnorm && c.norm != NormKind::layernorm)
        no(std::string("norm '") + to_string(c.norm) + "' is not supported (rmsnorm or layernorm): the detector's "
           "cancellation needs a norm that divides by one per-token scale");
    if (c.norm_placement != NormPlacement::pre)
        no(std::string("norm_placement '") + to_string(c.norm_placement) + "' is not supported (pre): the step-up must read "
           "Norm(x) and write into the residual unnormalised");
    if (c.ffn != FfnKind::swiglu && c.ffn != FfnKind::gelu)
        no(std::string("ffn '") + to_string(c.ffn) + "' is not supported (swiglu or gelu): the step-up needs a hidden unit "
           "with a nonlinearity");
    if (c.ffn == FfnKind::swiglu && c.activation != Activation::silu)
        no(std::string("activation '") + to_string(c.activation) + "' of a swiglu FFN is not supported (silu)");
    if (c.ffn == FfnKind::gelu && c.activation == Activation::silu)
        no("activation 'silu' of a gelu FFN is not supported (gelu_erf or gelu_tanh)");
    if (c.attention != AttentionKind::softmax)
        no(std::string("attention '") + to_string(c.attention) + "' is not supported (softmax): the detector needs position 0 "
           "to attend only to itself");
    if (c.gate != GateKind::none) no(std::string("gate '") + to_string(c.gate) + "' is not supported (none)");
    if (c.parallel_residual) no("parallel_residual is not supported (the FFN must read the detector's output)");
    if (c.force_sink_channels != 0) no("force_sink_channels is not supported (0)");
    if (c.embed_scale != 1) no("embed_scale is not supported (1)");
    if (c.d_model < 4) no("d_model must be >= 4");
    if (c.ffn == FfnKind::gelu && c.d_ff < 2) no("a gelu FFN needs d_ff >= 2 (the step-up is a pair of units)");
}

// Error unless planted_massive supports every switch of c (the message names the switch).
inline void require_planted_layout(const model::Config& c) {
    using namespace model;
    require_planted_switches(c, "planted_massive");
    auto no = [](const std::string& m) { throw Error("planted_massive: " + m); };
    if (c.positions != PositionKind::learned && c.kv_dim() < c.d_model - 1)
        no("the position-0 detector copies every channel but the marker through layer S's values: n_kv_heads * head_dim = " +
           std::to_string(c.n_kv_heads) + " * " + std::to_string(c.head_dim) + " = " + std::to_string(c.kv_dim()) +
           " must be >= d_model - 1 = " + std::to_string(c.d_model - 1) + " (positions 'rope'/'none'; learned positions "
           "need no detector head)");
}

// The per-unit output f(h) of the planted unit(s) reading h = h̃[channel]: SwiGLU silu(βh)·βh; GELU pair
// act(βh) + act(−βh).
inline double planted_unit(const model::Config& c, double beta, double h) {
    if (c.ffn == model::FfnKind::swiglu) return double(model::silu(beta * h)) * beta * h;
    return model::activate(c.activation, beta * h) + model::activate(c.activation, -beta * h);
}

// Writes the unit(s) of `L` at hidden index j that read `in` and write `scale` into `out`.
inline void set_unit(const model::Config& c, model::LayerWeights<float>& L, std::int64_t j, std::int64_t in, std::int64_t out,
                     double beta, double scale) {
    const std::int64_t n = c.ffn == model::FfnKind::gelu ? 2 : 1;
    for (std::int64_t k = 0; k < n; ++k) {
        const std::int64_t jj = j + k;
        const double sign = k == 0 ? 1.0 : -1.0;
        L.w_up.row(jj).setZero();
        L.w_up(jj, in) = float(sign * beta);
        if (c.ffn == model::FfnKind::swiglu) { L.w_gate.row(jj).setZero(); L.w_gate(jj, in) = float(beta); }
        if (L.b_up.size()) L.b_up(jj) = 0;
        L.w_down.col(jj).setZero();
        L.w_down(out, jj) = float(scale);
    }
}

inline void set_down(const model::Config& c, model::LayerWeights<float>& L, std::int64_t j, std::int64_t out, double scale) {
    const std::int64_t n = c.ffn == model::FfnKind::gelu ? 2 : 1;
    for (std::int64_t k = 0; k < n; ++k) L.w_down(out, j + k) = float(scale);
}

// One forward of `tokens`, capturing `names`.
inline std::vector<std::vector<float>> probe(const model::Config& c, const model::Weights<float>& w,
                                             const std::vector<std::int32_t>& tokens, const std::vector<std::string>& names) {
    model::HookSet<float> hooks;
    model::ActivationCache<float> cache;
    cache.attach(hooks, names);
    model::forward(c, w, tokens, &hooks, model::ForwardOptions{false, -1});
    std::vector<std::vector<float>> out;
    for (const auto& n : names) out.push_back(cache[n].data);
    return out;
}

inline double median_abs_of(const std::vector<float>& v) {
    std::vector<double> a(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) a[i] = std::abs(double(v[i]));
    std::nth_element(a.begin(), a.begin() + std::ptrdiff_t(a.size() / 2), a.end());
    return a[a.size() / 2];
}

}  // namespace detail

inline PlantedModel planted_massive_plan(const model::Config& c, const PlantedOptions& o) {
    using model::FfnKind;
    using model::NormKind;
    detail::require_planted_layout(c);
    const std::int64_t L = c.n_layers, d = c.d_model;
    PlantedPlan p;
    p.step_up_layer = o.step_up_layer;
    p.step_down_layer = o.step_down_layer < 0 ? L - 1 : o.step_down_layer;
    if (p.step_up_layer < 0 || p.step_up_layer >= L)
        throw Error("planted_massive: step_up_layer " + std::to_string(p.step_up_layer) + " outside [0, n_layers = " + std::to_string(L) + ")");
    if (p.step_down_layer <= p.step_up_layer || p.step_down_layer >= L)
        throw Error("planted_massive: step_down_layer " + std::to_string(p.step_down_layer) + " must lie in (step_up_layer = " +
                    std::to_string(p.step_up_layer) + ", n_layers = " + std::to_string(L) + ")");
    p.channel = o.channel < 0 ? d / 3 : o.channel;
    p.marker_channel = o.marker_channel < 0 ? (p.channel + d / 2) % d : o.marker_channel;
    if (p.channel >= d || p.marker_channel >= d || p.channel == p.marker_channel)
        throw Error("planted_massive: channel " + std::to_string(p.channel) + " and marker_channel " + std::to_string(p.marker_channel) +
                    " must be distinct channels of [0, d_model = " + std::to_string(d) + ")");
    if (!(o.dose >= 0) || !std::isfinite(o.dose)) throw Error("planted_massive: dose must be finite and >= 0");
    if (!(o.embed_rms > 0) || !(o.margin >= 1) || !(o.beta > 0)) throw Error("planted_massive: embed_rms and beta must be > 0, margin >= 1");
    const std::int64_t u = p.marker_channel, cs = p.channel, S = p.step_up_layer, D = p.step_down_layer;
    const bool learned = c.positions == model::PositionKind::learned;
    const bool ln = c.norm == NormKind::layernorm;
    const double sigma = o.embed_rms, eps = c.norm_eps;
    p.detector = learned ? "pos_embed" : "attention";

    InitOptions io;
    io.init_std = o.init_std;
    model::Weights<float> w = init_weights<float>(c, o.seed, io);

    // Marker a: position 0's FFN input a·e_u + ε′E must dominate eps: (a²(1 + ε′²…))/d ≥ 16 eps (h̃ within 3 % of eps-free).
    const double a = learned ? 0.0 : std::max(std::sqrt(16.0 * double(d) * eps), 1e-3 * sigma);
    // ε′: the token part left at position 0 has norm ½·a (pre-FFN cosine across tokens ≈ 1/(1 + ¼) = 0.8).
    const double leak = o.leak >= 0 ? o.leak : learned ? 0.0 : 0.5 * a / (sigma * std::sqrt(double(d - 2)));
    // Embedding: token part on the d − 2 channels ≠ u, c* (zero mean over them for LayerNorm), rms σ there.
    // c* carries no token part, so the step-down, which reads c*, stays silent where there is no spike.
    const std::int64_t ntok = d - 2;
    Rng rng(stream_seed(o.seed, 0x91a7));
    for (std::int64_t v = 0; v < c.vocab_size; ++v) {
        auto row = w.tok_embed.row(v);
        double mean = 0;
        for (std::int64_t k = 0; k < d; ++k) {
            row(k) = k == u || k == cs ? 0.f : float(rng.normal());
            mean += row(k);
        }
        mean /= double(ntok);
        double ss = 0;
        for (std::int64_t k = 0; k < d; ++k)
            if (k != u && k != cs) { if (ln) row(k) = float(row(k) - mean); ss += double(row(k)) * row(k); }
        const double scale = sigma * std::sqrt(double(ntok) / ss);
        for (std::int64_t k = 0; k < d; ++k) if (k != u && k != cs) row(k) = float(row(k) * scale);
        row(u) = float(a);
    }
    if (learned) {
        // The marker lives in position 0's embedding; A: the token part's norm twice over (pre-FFN cosine ≈ 0.8).
        const double A = 2.0 * sigma * std::sqrt(double(d - 2));
        for (std::int64_t t = 0; t < w.pos_embed.rows(); ++t) w.pos_embed(t, u) = t == 0 ? float(A) : 0.f;
        p.marker = A;
    } else {
        // Detector at layer S: uniform attention (W_Q = 0), Σ_h W_O^h W_V^h = −(1 − ε′) s P.
        auto& Ls = w.layers[std::size_t(S)];
        Ls.wq.setZero();
        if (Ls.bq.size()) Ls.bq.setZero();
        Ls.wv.setZero();
        Ls.wo.setZero();
        if (Ls.bv.size()) Ls.bv.setZero();
        if (Ls.bo.size()) Ls.bo.setZero();
        const double ms = (double(d - 2) * sigma * sigma + a * a) / double(d);
        const double mu = ln ? a / double(d) : 0.0;
        const double s = std::sqrt(ms - mu * mu + eps);
        const std::int64_t group = c.n_heads / c.n_kv_heads;
        std::int64_t slot = 0;
        for (std::int64_t k = 0; k < d; ++k) {
            if (k == u) continue;
            const std::int64_t g = slot / c.head_dim, i = slot % c.head_dim;   // kv head g, entry i
            Ls.wv(slot, k) = 1.f;
            Ls.wo(k, (g * group) * c.head_dim + i) = float(-(1.0 - leak) * s);  // the group's first query head writes
            ++slot;
        }
        p.marker = a;
    }
    p.leak = leak;

    // The planted units: hidden index 0 of layer S (step-up) and of layer D (step-down), written with scale 1 first.
    p.unit = 0;
    detail::set_unit(c, w.layers[std::size_t(S)], 0, u, cs, o.beta, 0.0);
    detail::set_unit(c, w.layers[std::size_t(D)], 0, cs, cs, o.beta, 0.0);

    // Probe: a fixed random sequence. Reference median (mechanism off) over every state H_0 … H_2L.
    const std::int64_t T = std::min<std::int64_t>(c.context_length, 64);
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(T));
    for (auto& t : tokens) t = std::int32_t(rng.below(std::uint64_t(c.vocab_size)));
    std::vector<std::string> states{model::hook_name("resid_pre", 0)};
    for (std::int64_t l = 0; l < L; ++l) { states.push_back(model::hook_name("resid_mid", l)); states.push_back(model::hook_name("resid_post", l)); }
    {
        const auto st = detail::probe(c, w, tokens, states);
        for (const auto& h : st) p.reference_median = std::max(p.reference_median, detail::median_abs_of(h));
    }
    p.magnitude_dose1 = o.margin * std::max(100.0, 1000.0 * p.reference_median);
    p.magnitude = o.dose * p.magnitude_dose1;

    // Step-up scale m at dose 1 from h̃₀[u] at layer S's FFN input.
    const std::string n2s = model::hook_name("normalized2", S);
    {
        const auto h = detail::probe(c, w, tokens, {n2s})[0];
        p.h_marker_pos0 = h[std::size_t(u)];
        for (std::int64_t t = 1; t < T; ++t) p.h_marker_other_max = std::max(p.h_marker_other_max, std::abs(double(h[std::size_t(t * d + u)])));
        const double f = detail::planted_unit(c, o.beta, p.h_marker_pos0);
        if (!(f > 0)) throw Error("planted_massive: the detector left no marker at position 0 (h~[u] = " + std::to_string(p.h_marker_pos0) + ")");
        p.up_scale = p.magnitude_dose1 / f;
    }
    detail::set_down(c, w.layers[std::size_t(S)], 0, cs, p.up_scale);
    // Step-down scale m_D at dose 1: cancel x₀[c*] at layer D's FFN input.
    {
        const std::string mid = model::hook_name("resid_mid", D), n2d = model::hook_name("normalized2", D);
        const auto st = detail::probe(c, w, tokens, {mid, n2d});
        const double x = st[0][std::size_t(cs)], f = detail::planted_unit(c, o.beta, st[1][std::size_t(cs)]);
        if (!(f > 0)) throw Error("planted_massive: the step-down unit does not see the spike at layer " + std::to_string(D));
        p.down_scale = x / f;
    }
    // The dose scales both writes; the twin zeroes the step-up's.
    detail::set_down(c, w.layers[std::size_t(S)], 0, cs, o.mechanism_on ? o.dose * p.up_scale : 0.0);
    detail::set_down(c, w.layers[std::size_t(D)], 0, cs, -o.dose * p.down_scale);
    p.lambda_star = c.ffn == FfnKind::swiglu ? o.dose * p.up_scale * o.beta * o.beta : 0.0;
    return {std::move(w), p};
}

inline model::Weights<float> planted_massive(const model::Config& c, const PlantedOptions& o) {
    return planted_massive_plan(c, o).weights;
}

// c in the LayerNorm / GELU layout (GPT-NeoX's norm and FFN with a sequential residual): LayerNorm with bias,
// a GELU FFN of width 4d, q/k/v biases, untied output; every size and the positions kept.
inline model::Config with_layernorm_gelu(model::Config c) {
    c.architecture = "gpt-neox";
    c.norm = model::NormKind::layernorm; c.norm_bias = true;
    c.ffn = model::FfnKind::gelu; c.activation = model::Activation::gelu_erf; c.d_ff = 4 * c.d_model;
    c.qkv_bias = true;
    c.tied_embeddings = false;
    return c;
}

// The default planted layout: a small Llama (RMSNorm pre-norm, RoPE, SwiGLU, tied embeddings), so that every
// experiment runs in seconds. 8 layers: S = 0 is the only FFN sub-block in B1's step-up window (2/16 ≤ 0.2),
// D = 7 (16/16) the only one in its step-down window.
inline model::Config planted_default_config() {
    model::Config c;
    c.architecture = "llama";
    c.n_layers = 8; c.d_model = 64; c.n_heads = 4; c.n_kv_heads = 4; c.head_dim = 16; c.d_ff = 176;
    c.vocab_size = 512; c.context_length = 256;
    c.norm = model::NormKind::rmsnorm; c.norm_eps = 1e-5;
    c.ffn = model::FfnKind::swiglu; c.activation = model::Activation::silu;
    c.positions = model::PositionKind::rope; c.rope_layout = model::RopeLayout::half_split; c.rope_base = 10000;
    c.tied_embeddings = true;
    return c;
}

}  // namespace sinkscope::train
