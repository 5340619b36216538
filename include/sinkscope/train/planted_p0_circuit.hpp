// A planted position-0 circuit: Paper A's claim A2 by construction, in the first two blocks, with heads
// that each carry the identification on their own.
//
//   planted_p0_circuit(c, o)        block 0's attention attends uniformly (W_Q = 0); every query head h copies
//                                   its kv head's slice T_g of the token part into its own reserved channels
//                                   R_h. Position 0 attends only to itself, so its copies carry the whole
//                                   token slice; at t ≥ 1 they carry a mean over t + 1 tokens, of about
//                                   1/(t+1) the energy. Block 0's FFN writes the copies' energy into channel
//                                   z (pairs of units, exact squares for SwiGLU); block 1's FFN turns z above
//                                   a threshold into a massive activation in channel c*.
//                                   o.redundant_heads = false is its twin: only query head 0 writes the
//                                   copies (with the same total energy), so one head's knockout removes the
//                                   circuit; every other number identical.
//   planted_p0_circuit_plan(c, o)   the numbers of that construction (channels, scales, the probe's values).
//
// Statement and derivation: theory/planted_p0_circuit.md. In short (E = ‖embedding row‖², the same for
// every token; A = Σ_h ‖x[R_h]‖², the copies' energy; A₀ = ρE at position 0):
//   block 0 FFN  reads h̃ = x √d / ‖x‖ (RMSNorm; LayerNorm the same up to the row mean), so with squares
//                z = m₀ β₀² d A / (E + A) ≥ 0, rising with A; z₀ = z_gain · √E at position 0.
//   block 1 FFN  one unit with gate β₁ (h̃_z − θ h̃_u) = β₁ (z − θ a) √d / ‖x‖ writes into c*: SwiGLU
//                silu(gate) · h̃_u, GELU gelu(gate), ≈ linear above z = θ a and ≈ 0 below. θ a = z_τ, the z
//                of copies with τ A₀ (measured), τ = ((H−1)/H + 1/2) / 2: midway between one head's
//                knockout at position 0 (A = (H−1)/H · A₀) and position 1's mean copy (A ≈ A₀ / 2).
//                The write is M = dose · M₁, M₁ = margin · max(100, 1000 · the largest median |x| of the
//                probe's states with the step-up silent), as planted_massive.
// Supported: what planted_massive supports, with RoPE or no positions (learned positions would let position
// 0's embedding identify it without a circuit: an Error), n_layers >= 3 (blocks 0 and 1, then a block to
// read after them), and d_model and d_ff large enough for the channels and units (k >= 2 channels per
// head, 2 n_heads k units in block 0's FFN). Anything else is an Error naming the switch.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sinkscope/train/planted.hpp"

namespace sinkscope::train {

struct PlantedP0Options {
    std::uint64_t seed = 1;         // the random background (init_weights) and the embedding's token parts
    double dose = 1;                // M = dose · M₁
    bool redundant_heads = true;    // false: the twin (only query head 0 writes its copy, with all H copies' energy)
    double init_std = 0.02;         // the background's σ (train::init_weights)
    double embed_rms = 2.0;         // σ: rms of the token part (and the marker a = σ)
    double margin = 2.0;            // M₁ = margin · Sun's threshold
    double copy_share = 1.0;        // ρ = A₀ / E: the copies' energy at position 0 against the embedding's
    double threshold = -1;          // τ; −1: ((H−1)/H + 1/2) / 2
    double square_beta = -1;        // β₀ of block 0's pairs; −1: 1 (SwiGLU: exact squares) or 0.2 (GELU: near-quadratic)
    double z_gain = 1.0;            // z₀ = z_gain · √E
    double gate_pos0 = 8.0;         // the step-up's gate β₁ (h̃_z − θ h̃_u) at position 0 (silu and gelu ≈ linear there)
};

struct PlantedP0Plan {
    std::int64_t channels_per_head = 0;             // k
    std::vector<std::int64_t> token_channels;       // T_g, kv head g: [g k, (g+1) k)
    std::vector<std::int64_t> copy_channels;        // R_h, query head h: [(G + h) k, (G + h + 1) k)
    std::int64_t marker_channel = 0, z_channel = 0, channel = 0;  // u, z, c*
    bool redundant_heads = true;
    double marker = 0;              // a
    double embed_energy = 0;        // E
    double copy_gain = 0;           // W_O's entry per copied slot
    double copy_energy_pos0 = 0;    // A₀ (probe, position 0)
    double threshold = 0;           // τ
    double square_beta = 0;         // β₀
    double z_scale = 0;             // m₀: z = m₀ Σ_R g(β₀ h̃_i)
    double z_pos0 = 0;              // z at position 0 (probe)
    double z_threshold = 0;         // z_τ: z at position 0 with copies of energy τ A₀ (probe)
    double z_other_max = 0;         // max over t ≥ 1 of z (probe; below z_τ when no later position crosses τ)
    double theta = 0;               // θ = z_τ / a
    double h_z_pos0 = 0, h_u_pos0 = 0;  // h̃_z, h̃_u at block 1's FFN input, position 0 (probe)
    double read_beta = 0;           // β₁
    double reference_median = 0, magnitude_dose1 = 0, magnitude = 0, up_scale = 0;  // as PlantedPlan
    nlohmann::json to_json() const {
        return {{"construction", "planted_p0_circuit"}, {"channels_per_head", channels_per_head},
                {"token_channels_first", token_channels.empty() ? -1 : token_channels.front()},
                {"copy_channels_first", copy_channels.empty() ? -1 : copy_channels.front()},
                {"marker_channel", marker_channel}, {"z_channel", z_channel}, {"channel", channel},
                {"redundant_heads", redundant_heads}, {"marker", marker}, {"embed_energy", embed_energy},
                {"copy_gain", copy_gain}, {"copy_energy_pos0", copy_energy_pos0}, {"threshold", threshold},
                {"square_beta", square_beta}, {"z_scale", z_scale}, {"z_pos0", z_pos0}, {"z_threshold", z_threshold},
                {"z_other_max", z_other_max}, {"theta", theta}, {"h_z_pos0", h_z_pos0}, {"h_u_pos0", h_u_pos0},
                {"read_beta", read_beta}, {"reference_median", reference_median},
                {"magnitude_dose1", magnitude_dose1}, {"magnitude", magnitude}, {"up_scale", up_scale},
                {"step_up_layer", 1}};
    }
};

struct PlantedP0Model {
    model::Weights<float> weights;
    PlantedP0Plan plan;
};

namespace detail {

// Units j, j+1 of L read β·h̃[in] with opposite signs and both write `scale` into `out`; their sum is
// even in h̃[in]: SwiGLU silu(z)z + silu(−z)(−z) = z² exactly (silu(z) − silu(−z) = z); GELU
// gelu(z) + gelu(−z) = z erf(z/√2) ≈ √(2/π) z² for |z| ≲ 1/2.
inline void set_square_pair(const model::Config& c, model::LayerWeights<float>& L, std::int64_t j, std::int64_t in,
                            std::int64_t out, double beta, double scale) {
    for (std::int64_t k = 0; k < 2; ++k) {
        const std::int64_t jj = j + k;
        const double w = k == 0 ? beta : -beta;
        L.w_up.row(jj).setZero();
        L.w_up(jj, in) = float(w);
        if (c.ffn == model::FfnKind::swiglu) { L.w_gate.row(jj).setZero(); L.w_gate(jj, in) = float(w); }
        if (L.b_up.size()) L.b_up(jj) = 0;
        L.w_down.col(jj).setZero();
        L.w_down(out, jj) = float(scale);
    }
}

}  // namespace detail

inline PlantedP0Model planted_p0_circuit_plan(const model::Config& c, const PlantedP0Options& o) {
    using model::FfnKind;
    auto no = [](const std::string& m) { throw Error("planted_p0_circuit: " + m); };
    detail::require_planted_switches(c, "planted_p0_circuit");
    if (c.positions == model::PositionKind::learned)
        no("positions 'learned' is not supported (rope or none): position 0's own embedding would identify it "
           "without a circuit");
    if (c.n_layers < 3) no("n_layers must be >= 3 (the circuit's blocks 0 and 1, and a block to read after them)");
    if (!(o.dose >= 0) || !std::isfinite(o.dose)) no("dose must be finite and >= 0");
    if (!(o.embed_rms > 0) || !(o.margin >= 1) || !(o.copy_share > 0) || !(o.z_gain > 0) || !(o.gate_pos0 > 0))
        no("embed_rms, copy_share, z_gain and gate_pos0 must be > 0, margin >= 1");
    const std::int64_t d = c.d_model, H = c.n_heads, G = c.n_kv_heads, dh = c.head_dim;
    // Channels: T_g (G k), R_h (H k), then the spare token channels, and u, z, c* last.
    const std::int64_t k = std::min<std::int64_t>(dh, (d - 3) / (G + H));
    if (k < 2)
        no("d_model = " + std::to_string(d) + " leaves k = " + std::to_string(k) + " channels per head (need >= 2): d_model "
           "must be >= 2 (n_kv_heads + n_heads) + 3 = " + std::to_string(2 * (G + H) + 3));
    const std::int64_t units0 = 2 * H * k;
    if (c.d_ff < units0)
        no("d_ff = " + std::to_string(c.d_ff) + " is smaller than the " + std::to_string(units0) + " units of block 0's "
           "energy feature (2 n_heads k, k = " + std::to_string(k) + ")");
    const double tau = o.threshold >= 0 ? o.threshold : 0.5 * ((double(H) - 1.0) / double(H) + 0.5);
    if (!(tau > 0 && tau < 1)) no("threshold must lie in (0, 1)");
    const double beta0 = o.square_beta > 0 ? o.square_beta : c.ffn == FfnKind::swiglu ? 1.0 : 0.2;
    const bool ln = c.norm == model::NormKind::layernorm;

    PlantedP0Plan p;
    p.channels_per_head = k;
    p.redundant_heads = o.redundant_heads;
    p.threshold = tau;
    p.square_beta = beta0;
    p.marker_channel = d - 1; p.z_channel = d - 2; p.channel = d - 3;
    for (std::int64_t i = 0; i < G * k; ++i) p.token_channels.push_back(i);
    for (std::int64_t i = 0; i < H * k; ++i) p.copy_channels.push_back(G * k + i);
    const std::int64_t u = p.marker_channel, zc = p.z_channel, cs = p.channel;
    std::vector<char> is_token(std::size_t(d), 0);   // every channel but R, u, z, c*
    for (std::int64_t i = 0; i < d; ++i) is_token[std::size_t(i)] = i < G * k || (i >= (G + H) * k && i < d - 3);
    const double sigma = o.embed_rms, a = sigma;
    p.marker = a;

    InitOptions io;
    io.init_std = o.init_std;
    model::Weights<float> w = init_weights<float>(c, o.seed, io);

    // Embedding: each kv slice T_g, and the spare channels, carry a random part of norm exactly σ√(size)
    // (zero-mean within the slice for LayerNorm), so every copy at position 0 has the same energy for every
    // token; u carries the constant a; R, z, c* are zero.
    Rng rng(stream_seed(o.seed, 0x5a0c));
    auto fill_slice = [&](Eigen::Ref<Eigen::RowVectorXf> row, std::int64_t from, std::int64_t n) {
        if (n <= 0) return;
        double mean = 0, ss = 0;
        for (std::int64_t i = from; i < from + n; ++i) { row(i) = float(rng.normal()); mean += row(i); }
        mean /= double(n);
        for (std::int64_t i = from; i < from + n; ++i) { if (ln && n > 1) row(i) = float(row(i) - mean); ss += double(row(i)) * row(i); }
        const double scale = sigma * std::sqrt(double(n) / ss);
        for (std::int64_t i = from; i < from + n; ++i) row(i) = float(row(i) * scale);
    };
    for (std::int64_t v = 0; v < c.vocab_size; ++v) {
        Eigen::RowVectorXf row = Eigen::RowVectorXf::Zero(d);
        for (std::int64_t g = 0; g < G; ++g) fill_slice(row, g * k, k);
        fill_slice(row, (G + H) * k, d - 3 - (G + H) * k);
        row(u) = float(a);
        w.tok_embed.row(v) = row;
    }
    std::int64_t n_token = 0;
    for (auto t : is_token) n_token += t;
    p.embed_energy = double(n_token) * sigma * sigma + a * a;

    // Block 0's attention: W_Q = 0 (uniform causal attention); kv head g's value slot i reads T_g[i]; query
    // head h writes slot i into R_h[i] (the twin: head 0 only). Gain 1 first, set from the probe below.
    auto& L0 = w.layers[0];
    L0.wq.setZero();
    if (L0.bq.size()) L0.bq.setZero();
    L0.wv.setZero(); L0.wo.setZero();
    if (L0.bv.size()) L0.bv.setZero();
    if (L0.bo.size()) L0.bo.setZero();
    for (std::int64_t g = 0; g < G; ++g)
        for (std::int64_t i = 0; i < k; ++i) L0.wv(g * dh + i, g * k + i) = 1.f;
    // Redundant: query head h writes its slice into R_h. Twin: query head 0 writes its slice into every R_h,
    // so the copies' energy is the same and one head carries all of it (set last, after every probe).
    auto set_copies = [&](double gain, bool redundant) {
        L0.wo.setZero();
        for (std::int64_t h = 0; h < H; ++h) {
            const std::int64_t writer = redundant ? h : 0;
            for (std::int64_t i = 0; i < k; ++i) L0.wo((G + h) * k + i, writer * dh + i) = float(gain);
        }
    };
    // Probe: a fixed random sequence.
    const std::int64_t T = std::min<std::int64_t>(c.context_length, 64);
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(T));
    for (auto& t : tokens) t = std::int32_t(rng.below(std::uint64_t(c.vocab_size)));
    auto copy_energy = [&](const std::vector<float>& x, std::int64_t t) {
        double s = 0;
        for (auto i : p.copy_channels) s += double(x[std::size_t(t * d + i)]) * x[std::size_t(t * d + i)];
        return s;
    };
    set_copies(1.0, true);
    {
        const double A1 = copy_energy(detail::probe(c, w, tokens, {model::hook_name("resid_mid", 0)})[0], 0);
        if (!(A1 > 0)) no("the copies carry no energy at position 0");
        p.copy_gain = std::sqrt(o.copy_share * p.embed_energy / A1);
    }
    set_copies(p.copy_gain, true);
    p.copy_energy_pos0 = copy_energy(detail::probe(c, w, tokens, {model::hook_name("resid_mid", 0)})[0], 0);

    // Block 0's FFN: pairs on every R channel, into z: z = m₀ Σ_{i∈R} g(β₀ h̃_i) ≥ 0 (g(z) = z² for SwiGLU).
    // m₀ puts z₀ = z_gain · √E at position 0 (measured with scale 1 first).
    auto& F0 = L0;
    std::int64_t j = 0;
    for (auto i : p.copy_channels) { detail::set_square_pair(c, F0, j, i, zc, beta0, 1.0); j += 2; }
    const std::string post0 = model::hook_name("resid_post", 0);
    auto z_at0 = [&]() { return double(detail::probe(c, w, tokens, {post0})[0][std::size_t(zc)]); };
    {
        const double z1 = z_at0();
        if (!(z1 > 0)) no("block 0's pairs read no copy energy at position 0 (z = " + std::to_string(z1) + ")");
        p.z_scale = o.z_gain * std::sqrt(p.embed_energy) / z1;
        for (std::int64_t q = 0; q < j; ++q) F0.w_down(zc, q) = float(p.z_scale);
    }
    p.z_pos0 = z_at0();
    // z_τ: z at position 0 when the copies carry τ A₀ (the copy gain scaled by √τ), measured; θ = z_τ / a puts
    // block 1's gate at zero there, since h̃_z − θ h̃_u = (z − θ a) √d / ‖x‖.
    set_copies(p.copy_gain * std::sqrt(tau), true);
    p.z_threshold = z_at0();
    set_copies(p.copy_gain, true);
    p.theta = p.z_threshold / a;

    // Block 1's FFN, unit 0 (the step-up): gate β₁ (h̃_z − θ h̃_u), SwiGLU f = silu(gate) · h̃_u, GELU
    // f = gelu(gate); ≈ linear in the gate above θ a, ≈ 0 below. β₁ puts the gate at gate_pos0 at position 0.
    auto& L1 = w.layers[1];
    auto set_step_up = [&](double beta1, double scale) {
        L1.w_up.row(0).setZero();
        if (L1.b_up.size()) L1.b_up(0) = 0;
        L1.w_down.col(0).setZero();
        if (c.ffn == FfnKind::swiglu) {
            L1.w_gate.row(0).setZero();
            L1.w_gate(0, zc) = float(beta1); L1.w_gate(0, u) = float(-beta1 * p.theta);
            L1.w_up(0, u) = 1.f;
        } else {
            L1.w_up(0, zc) = float(beta1); L1.w_up(0, u) = float(-beta1 * p.theta);
        }
        L1.w_down(cs, 0) = float(scale);
    };
    set_step_up(1.0, 0.0);
    const std::string n2 = model::hook_name("normalized2", 1);
    {
        const auto h = detail::probe(c, w, tokens, {n2})[0];
        p.h_z_pos0 = h[std::size_t(zc)];
        p.h_u_pos0 = h[std::size_t(u)];
        const double margin0 = p.h_z_pos0 - p.theta * p.h_u_pos0;
        if (!(margin0 > 0)) no("block 1's gate is not positive at position 0 (h~_z - theta h~_u = " + std::to_string(margin0) + ")");
        p.read_beta = o.gate_pos0 / margin0;
    }
    set_step_up(p.read_beta, 0.0);
    std::vector<std::string> states{model::hook_name("resid_pre", 0)};
    for (std::int64_t l = 0; l < c.n_layers; ++l) { states.push_back(model::hook_name("resid_mid", l)); states.push_back(model::hook_name("resid_post", l)); }
    {
        const auto st = detail::probe(c, w, tokens, states);
        for (const auto& h : st) p.reference_median = std::max(p.reference_median, detail::median_abs_of(h));
        const auto& x0 = st[2];   // resid_post 0
        p.z_other_max = 0;
        for (std::int64_t t = 1; t < T; ++t) p.z_other_max = std::max(p.z_other_max, double(x0[std::size_t(t * d + zc)]));
    }
    p.magnitude_dose1 = o.margin * std::max(100.0, 1000.0 * p.reference_median);
    p.magnitude = o.dose * p.magnitude_dose1;
    const double gate0 = o.gate_pos0;
    const double f = c.ffn == FfnKind::swiglu ? double(model::silu(float(gate0))) * p.h_u_pos0 : model::activate(c.activation, gate0);
    if (!(f > 0)) no("the step-up unit is silent at position 0");
    p.up_scale = p.magnitude_dose1 / f;
    set_step_up(p.read_beta, o.dose * p.up_scale);
    // Every number above is computed with the redundant copies, so the twin differs in block 0's W_O alone.
    if (!o.redundant_heads) set_copies(p.copy_gain, false);
    return {std::move(w), p};
}

inline model::Weights<float> planted_p0_circuit(const model::Config& c, const PlantedP0Options& o) {
    return planted_p0_circuit_plan(c, o).weights;
}

// The default layout of the planted position-0 circuit: a small Llama (RMSNorm pre-norm, RoPE, SwiGLU) with
// 8 heads, so that G k = 56 slots average out the overlap of two random tokens (position 1 crosses τ only
// when the cosine of its two tokens' slices exceeds 2τ − 1 = 0.375, 2.8 standard deviations).
inline model::Config planted_p0_default_config() {
    model::Config c = planted_default_config();
    c.n_layers = 6; c.d_model = 128; c.n_heads = 8; c.n_kv_heads = 8; c.head_dim = 16; c.d_ff = 344;
    return c;
}

// The same in the LayerNorm / GELU layout (GPT-NeoX-like, as planted_layernorm_gelu_config).
inline model::Config planted_p0_layernorm_gelu_config() { return with_layernorm_gelu(planted_p0_default_config()); }

}  // namespace sinkscope::train
