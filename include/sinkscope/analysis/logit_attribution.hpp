// Direct logit attribution (DLA): a logit, or a logit difference, at one position split into what each
// component wrote into the residual stream, with every norm on the way to the logits frozen at the scale
// it had in this forward (as TransformerLens's decompose_resid / stack_head_results with apply_ln).
//
// The residual stream at the position is a sum of what the components wrote:
//   x_L = e + p + Σ_l (Σ_h z_{l,h} W_O,hᵀ + b_O,l) + Σ_l (FFN_l + b_down,l)
// and the logit difference is ℓ = N_final(x_L)·u with u = W_U[target] − W_U[contrast]. Freezing a norm
// makes it affine: RMSNorm N(x) = r g ⊙ x with r = 1/√(mean(x²)+ε) computed from the full x and held
// fixed; LayerNorm N(x) = r g ⊙ (x − mean(x)) + β, whose mean removal is linear. Each component's part is
// then its vector dotted with the direction the frozen maps after it send to u:
//   d_final = Nᵀ_final u,   part(v written to the residual) = v·d,   β·u (and every other bias) → `bias`
// Sandwich and output post-norms (Gemma 2/3, OLMo-2: x += Nᵖ(F(x))) are frozen at the scale of the
// sub-layer's full output, so a head's part is (z_h W_O,hᵀ)·Nᵖᵀd. Post-norm placement (x = N(x + F(x)))
// freezes each block's norms, so the direction changes from block to block. The parts then sum to ℓ
// (before any logit soft cap) up to float rounding: embed + pos_embed + Σ heads + Σ mlp + bias = ℓ.
//
// A head's part split by source position s (the key it read):
//   by_source[l, h, s] = p_{l,h}[t, s] · (gate ⊙ v_{l,g(h)}[s]) · (W_O,hᵀ d)_h      Σ_s by_source = heads[l, h]
// With AttentionKind::sink_token, s = 0 is the sink token; with kv_bias the learnable sink slot is one
// more source after the last position (its weight is 1 − Σ_s p[t, s]). by_source[l, h, 0] is "what the
// first (sink) position contributes to this logit through head h".
//
// Mixture-of-experts FFNs are split further by expert: experts[l, e] = w_e · FFN_e(x)·d (0 for the
// experts not chosen), Σ_e experts[l, e] = mlp[l]. DynamicTanh norms cannot be frozen into an affine map
// (tanh acts on each entry) and are refused, naming the switch.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/model/forward.hpp"
#include "sinkscope/model/hooks.hpp"

namespace sinkscope::analysis {

struct LogitAttributionRequest {
    std::int32_t target = -1;      // the token whose logit is split
    std::int32_t contrast = -1;    // −1: none; else the logit difference target − contrast
    std::int64_t position = -1;    // the query position among the T tokens (−1: the last)
};

struct LogitAttribution {
    std::int64_t position = 0;      // t among the T tokens
    std::int64_t sources = 0;       // S: the residual stream's positions (T, or T + 1 with a sink token), + 1 with kv_bias
    double embed = 0;               // the token embedding's part (times embed_scale)
    double pos_embed = 0;           // the learned position embedding's part (0 without one)
    Eigen::MatrixXd heads;          // (L, H)
    Eigen::VectorXd mlp;            // (L): the FFN's part without its output bias (0 where there is no FFN)
    Eigen::MatrixXd experts;        // (L, E) with a mixture-of-experts FFN, else empty; rows sum to mlp
    Eigen::VectorXd attn_bias;      // (L): b_O (and the attention's post-norm β) — part of `bias`
    Eigen::VectorXd mlp_bias;       // (L): b_down (and the FFN's post-norm β) — part of `bias`
    double final_bias = 0;          // the final norm's β (the model has no unembedding bias)
    Eigen::MatrixXd by_source;      // (L·H, S): row l·H + h is heads(l, h) split by source position
    double logit = 0;               // ℓ before any soft cap: N_final(x_L)·u, in double from the forward's final norm
    double model_logit = 0;         // the forward's own logit (difference), soft-capped where the model caps

    double bias() const { return attn_bias.sum() + mlp_bias.sum() + final_bias; }
    // embed + pos_embed + Σ heads + Σ mlp + bias: ℓ up to float rounding.
    double total() const { return embed + pos_embed + heads.sum() + mlp.sum() + bias(); }
    double source(std::int64_t layer, std::int64_t head, std::int64_t s) const {
        return by_source(layer * heads.cols() + head, s);
    }
};

namespace detail {

using Dvec = Eigen::VectorXd;

template <class T>
Dvec to_double(const T* p, std::int64_t n) {
    return Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>(p, n).template cast<double>();
}

// The transpose of a norm frozen at input a: the direction before it that gives u·N(x) after it.
//   RMSNorm:   N(x) = r g ⊙ x              Nᵀu = r g ⊙ u
//   LayerNorm: N(x) = r g ⊙ (x − mean x)   Nᵀu = r g ⊙ u − mean(r g ⊙ u)   (the centring is symmetric)
// r = 1/√(mean(a²) + ε), or 1/√(var(a) + ε) for LayerNorm, computed from the full input a and held fixed.
template <class T>
Dvec frozen_norm_transpose(const Dvec& u, const Dvec& a, const model::NormWeights<T>& w, const model::Config& c,
                           const std::string& where) {
    const double d = double(a.size());
    const Dvec g = w.weight.template cast<double>();
    switch (c.norm) {
        case model::NormKind::rmsnorm: {
            const double r = 1 / std::sqrt(a.squaredNorm() / d + c.norm_eps);
            return r * g.cwiseProduct(u);
        }
        case model::NormKind::layernorm: {
            const double mean = a.mean();
            const double var = (a.array() - mean).square().mean();
            const double r = 1 / std::sqrt(var + c.norm_eps);
            Dvec v = r * g.cwiseProduct(u);
            v.array() -= v.mean();
            return v;
        }
        case model::NormKind::dynamic_tanh: break;
    }
    throw Error("logit_attribution: norm = dynamic_tanh (at " + where + ") has no frozen affine form: tanh acts on "
                "each entry, so a logit does not split into the components' parts");
}

template <class T>
double norm_bias_dot(const model::NormWeights<T>& w, const Dvec& u) {
    return w.bias.size() ? w.bias.template cast<double>().dot(u) : 0.0;
}

// Row r of every captured activation of one forward (and all of V, which by_source needs at every key).
struct RowCapture {
    std::int64_t row = 0;
    std::map<std::string, std::vector<float>> rows;   // name → the row (for the pattern: each head's row r, H·n)
    std::map<std::string, std::vector<float>> whole;  // name → the whole activation (values)
    const std::vector<float>& operator[](const std::string& name) const {
        auto it = rows.find(name);
        if (it != rows.end()) return it->second;
        auto jt = whole.find(name);
        require(jt != whole.end(), "logit_attribution: activation '" + name + "' was not captured", {"", name, {}});
        return jt->second;
    }
};

}  // namespace detail

// DLA of `tokens` at request.position (one forward with row-reading observer hooks).
inline LogitAttribution logit_attribution(const model::Config& c, const model::Weights<float>& w,
                                          const std::vector<std::int32_t>& tokens, const LogitAttributionRequest& q) {
    using model::HookId;
    using detail::Dvec;
    model::require_dense(w, "logit_attribution");
    require(c.norm != model::NormKind::dynamic_tanh,
            "logit_attribution: norm = dynamic_tanh has no frozen affine form (tanh acts on each entry), so a logit "
            "does not split into the components' parts");
    require(q.target >= 0 && q.target < c.vocab_size,
            "logit_attribution: target token " + std::to_string(q.target) + " is outside the vocabulary [0, " +
                std::to_string(c.vocab_size) + ")");
    require(q.contrast >= -1 && q.contrast < c.vocab_size,
            "logit_attribution: contrast token " + std::to_string(q.contrast) + " is outside the vocabulary");
    const std::int64_t T = std::int64_t(tokens.size());
    const std::int64_t t = q.position < 0 ? T - 1 : q.position;
    require(t >= 0 && t < T, "logit_attribution: position " + std::to_string(q.position) + " is outside [0, " +
                                 std::to_string(T) + ")");
    const std::int64_t sink = c.attention == model::AttentionKind::sink_token ? 1 : 0;
    const std::int64_t n = T + sink, row = t + sink, d = c.d_model, L = c.n_layers, H = c.n_heads, dh = c.head_dim;
    const bool kv_bias = c.attention == model::AttentionKind::kv_bias;
    const bool moe = c.ffn == model::FfnKind::moe;
    const bool post = c.norm_placement == model::NormPlacement::post;
    const bool post_norm = c.has_post_norm();  // sandwich / output: x += Nᵖ(F(·))
    // The FFN's input: its norm's output, or the residual stream itself where there is no norm before it.
    const HookId ffn_in = (c.parallel_residual || c.norm_placement == model::NormPlacement::pre ||
                           c.norm_placement == model::NormPlacement::sandwich) ? HookId::ln2 : HookId::resid_mid;

    // ---- one forward, reading row `row` of what the decomposition needs ----
    detail::RowCapture cap;
    cap.row = row;
    model::HookSet<float> hooks;
    const auto names = model::hook_names(c);
    auto has = [&](const std::string& name) { return std::find(names.begin(), names.end(), name) != names.end(); };
    auto grab_row = [&](const std::string& name) {
        if (!has(name)) return;
        hooks.add_observer(name, [&cap](const std::string& nm, model::ActivationRef<float>& x) {
            const std::int64_t width = x.size() / x.shape.front();
            cap.rows[nm].assign(x.data + cap.row * width, x.data + (cap.row + 1) * width);
        });
    };
    grab_row(model::hook_spec(HookId::embed).name);
    grab_row(model::hook_spec(HookId::pos_embed).name);
    if (model::has_final_norm(c)) grab_row(model::hook_spec(HookId::ln_final).name);
    for (std::int64_t l = 0; l < L; ++l) {
        const model::BlockNames b(l);
        for (HookId id : {HookId::z, HookId::gate, HookId::mlp_post, HookId::resid_pre, HookId::resid_mid, HookId::attn_out,
                          HookId::mlp_out, HookId::expert_weights, HookId::chosen_experts, HookId::resid_post})
            grab_row(b[id]);
        if (ffn_in == HookId::ln2) grab_row(b[HookId::ln2]);
        hooks.add_observer(b[HookId::v], [&cap](const std::string& nm, model::ActivationRef<float>& x) {
            cap.whole[nm].assign(x.data, x.data + x.size());
        });
        hooks.add_observer(b[HookId::pattern], [&cap, n](const std::string& nm, model::ActivationRef<float>& x) {
            const std::int64_t heads = x.shape[0], m = x.shape[2];  // (H, n, n)
            require(x.shape.size() == 3 && m == n, "logit_attribution: pattern " + nm + " is not (H, n, n)");
            auto& r = cap.rows[nm];
            r.resize(std::size_t(heads * m));
            for (std::int64_t h = 0; h < heads; ++h)
                std::copy(x.data + (h * m + cap.row) * m, x.data + (h * m + cap.row + 1) * m, r.begin() + h * m);
        });
    }
    const model::Mat<float> logits = model::forward(c, w, tokens, &hooks);

    // ---- the direction u and the logit ----
    const model::Mat<float>& W_U = w.output_head();  // (vocab, d)
    Dvec u = W_U.row(q.target).transpose().cast<double>();
    if (q.contrast >= 0) u -= W_U.row(q.contrast).transpose().cast<double>();
    LogitAttribution out;
    out.position = t;
    out.sources = n + (kv_bias ? 1 : 0);
    out.model_logit = double(logits(t, q.target)) - (q.contrast >= 0 ? double(logits(t, q.contrast)) : 0.0);
    const std::string last_post = model::BlockNames(L - 1)[HookId::resid_post];
    Dvec dir;  // the direction of a vector added to the residual stream at the current point
    if (model::has_final_norm(c)) {
        const Dvec xn = detail::to_double(cap[model::hook_spec(HookId::ln_final).name].data(), d);
        out.logit = xn.dot(u);
        out.final_bias = detail::norm_bias_dot(w.final_norm, u);
        dir = detail::frozen_norm_transpose(u, detail::to_double(cap[last_post].data(), d), w.final_norm, c, "ln_final");
    } else {
        out.logit = detail::to_double(cap[last_post].data(), d).dot(u);
        dir = u;
    }

    out.heads.setZero(L, H);
    out.mlp.setZero(L);
    out.attn_bias.setZero(L);
    out.mlp_bias.setZero(L);
    out.by_source.setZero(L * H, out.sources);
    if (moe) out.experts.setZero(L, c.n_experts);
    const std::int64_t G = c.n_kv_heads, group = H / G;

    // ---- the blocks, last to first, carrying the direction back through each frozen norm ----
    for (std::int64_t l = L - 1; l >= 0; --l) {
        const model::BlockNames b(l);
        const auto& lw = w.layers[std::size_t(l)];
        const std::string where = "layer " + std::to_string(l);

        // The FFN sub-layer: its part with the direction seen by what it writes.
        if (c.ffn != model::FfnKind::none) {
            Dvec d_ffn = dir;
            Dvec raw = Dvec::Zero(d);  // the FFN's own output at the row (recomputed), for a post-norm's scale
            // The FFN's output without its bias, as Σ_e weight_e · expert_e(x) or W_down h: computed per
            // piece so that each piece's part is known; `pieces` pairs an expert (or −1) with its vector.
            std::vector<std::pair<std::int64_t, Dvec>> pieces;
            switch (c.ffn) {
                case model::FfnKind::swiglu:
                case model::FfnKind::gelu:
                    pieces.push_back({-1, lw.w_down.cast<double>() * detail::to_double(cap[b[HookId::mlp_post]].data(), c.d_ff)});
                    break;
                case model::FfnKind::linear:
                    pieces.push_back({-1, lw.w_down.cast<double>() * detail::to_double(cap[b[ffn_in]].data(), d)});
                    break;
                case model::FfnKind::moe: {
                    const auto& ew = cap[b[HookId::expert_weights]];
                    const auto& ce = cap[b[HookId::chosen_experts]];
                    const model::Mat<float> x = Eigen::Map<const model::Mat<float>>(cap[b[ffn_in]].data(), 1, d);
                    for (std::int64_t i = 0; i < c.n_experts_used; ++i) {
                        const auto e = std::int64_t(std::llround(double(ce[std::size_t(i)])));
                        const auto& ex = lw.experts[std::size_t(e)];
                        model::Mat<float> gate = x * ex.w_gate.transpose(), up = x * ex.w_up.transpose(), hidden;
                        model::activation_forward(hidden, gate, c.activation);
                        hidden.array() *= up.array();  // w2(silu(w1 x) * w3 x)
                        pieces.push_back({e, double(ew[std::size_t(i)]) *
                                                 (ex.w_down.cast<double>() * hidden.transpose().cast<double>())});
                    }
                    break;
                }
                case model::FfnKind::none: break;
            }
            for (const auto& p : pieces) raw += p.second;
            if (lw.b_down.size()) raw += lw.b_down.cast<double>();
            if (post_norm) {
                out.mlp_bias(l) += detail::norm_bias_dot(lw.ffn_post_norm, dir);
                d_ffn = detail::frozen_norm_transpose(dir, raw, lw.ffn_post_norm, c, where + " ffn post-norm");
            } else if (post && !c.parallel_residual) {  // x' = N₂(x_mid + FFN(x_mid))
                const Dvec in = detail::to_double(cap[b[HookId::resid_mid]].data(), d) +
                                detail::to_double(cap[b[HookId::mlp_out]].data(), d);
                out.mlp_bias(l) += detail::norm_bias_dot(lw.ffn_norm, dir);
                d_ffn = detail::frozen_norm_transpose(dir, in, lw.ffn_norm, c, where + " ln2");
                dir = d_ffn;  // the residual stream before the norm passes through it too
            }
            for (const auto& [e, v] : pieces) {
                const double part = v.dot(d_ffn);
                out.mlp(l) += part;
                if (e >= 0) out.experts(l, e) += part;
            }
            if (lw.b_down.size()) out.mlp_bias(l) += lw.b_down.cast<double>().dot(d_ffn);
        }

        // The attention sub-layer (parallel blocks: the same direction as the FFN's).
        {
            Dvec d_attn = dir;
            const Dvec z = detail::to_double(cap[b[HookId::z]].data(), H * dh);
            const Eigen::MatrixXd W_O = lw.wo.cast<double>();  // (d, H·d_h)
            if (post_norm) {
                Dvec raw = W_O * z;
                if (lw.bo.size()) raw += lw.bo.cast<double>();
                out.attn_bias(l) += detail::norm_bias_dot(lw.attn_post_norm, dir);
                d_attn = detail::frozen_norm_transpose(dir, raw, lw.attn_post_norm, c, where + " attention post-norm");
            } else if (post && !c.parallel_residual) {  // x_mid = N₁(x + Attn(x))
                const Dvec in = detail::to_double(cap[b[HookId::resid_pre]].data(), d) +
                                detail::to_double(cap[b[HookId::attn_out]].data(), d);
                out.attn_bias(l) += detail::norm_bias_dot(lw.attn_norm, dir);
                d_attn = detail::frozen_norm_transpose(dir, in, lw.attn_norm, c, where + " ln1");
                dir = d_attn;
            }
            const Dvec wz = W_O.transpose() * d_attn;  // (H·d_h): the direction each channel of z writes along
            for (std::int64_t h = 0; h < H; ++h) out.heads(l, h) = z.segment(h * dh, dh).dot(wz.segment(h * dh, dh));
            if (lw.bo.size()) out.attn_bias(l) += lw.bo.cast<double>().dot(d_attn);

            // by_source: z_h[t] = gate ⊙ (Σ_s p[t, s] v_s + p_slot v_slot), each term's part along wz.
            const auto& pattern = cap[b[HookId::pattern]];  // (H, n): row t of each head
            const auto& values = cap[b[HookId::v]];        // (n, G·d_h)
            const std::vector<float>* gate = c.gate != model::GateKind::none ? &cap[b[HookId::gate]] : nullptr;
            const bool per_head_gate = c.gate == model::GateKind::per_head || c.gate == model::GateKind::static_per_head;
            for (std::int64_t h = 0; h < H; ++h) {
                const std::int64_t g = h / group;
                Dvec wh = wz.segment(h * dh, dh);  // gate folded in: (gate ⊙ v)·w = v·(gate ⊙ w)
                if (gate) {
                    if (per_head_gate) wh *= double((*gate)[std::size_t(h)]);
                    else wh.array() *= detail::to_double(gate->data() + h * dh, dh).array();
                }
                double taken = 0;
                for (std::int64_t s = 0; s < n; ++s) {
                    const double p = double(pattern[std::size_t(h * n + s)]);
                    taken += p;
                    if (p != 0) out.by_source(l * H + h, s) = p * detail::to_double(values.data() + s * G * dh + g * dh, dh).dot(wh);
                }
                if (kv_bias)
                    out.by_source(l * H + h, n) = (1 - taken) * lw.sink_kv.row(1).segment(g * dh, dh).cast<double>().dot(wh);
            }
        }
    }

    // ---- the embeddings, with the direction at the first block's input ----
    out.embed = detail::to_double(cap[model::hook_spec(HookId::embed).name].data(), d).dot(dir);
    if (c.positions == model::PositionKind::learned)
        out.pos_embed = detail::to_double(cap[model::hook_spec(HookId::pos_embed).name].data(), d).dot(dir);
    return out;
}

}  // namespace sinkscope::analysis
