// Initial weights for training from scratch, deterministic by seed (GPT-2 / nanoGPT scheme).
//
//   every weight matrix, embeddings and output head   N(0, σ²), σ = init_std (0.02)
//   the projections that write into the residual       N(0, (σ/√(2L))²)   (W_O, W_down, linear FFN)
//   norm gains 1, norm biases 0, DynamicTanh α = α₀    (α₀ of the attention block for ln1 / ln1_post,
//                                                       dyt_alpha0_other for ln2 / ln2_post / ln_final)
//   QK-norm gains 1; linear biases 0; gate biases 0 (σ(0) = ½); gate matrices N(0, σ²)
//   KV-bias key/value and the sink-token embedding      N(0, σ²)
//   mixture of experts: router and each expert's W_gate, W_up N(0, σ²), each expert's W_down N(0, (σ/√(2L))²)
// Every parameter the Config uses is created, the others are left empty — exactly the set forward()
// reads and visit_parameters() walks.
#pragma once

#include <cmath>
#include <cstdint>

#include "sinkscope/model/config.hpp"
#include "sinkscope/model/weights.hpp"
#include "sinkscope/train/random.hpp"

namespace sinkscope::train {

struct InitOptions {
    double init_std = 0.02;
    bool scale_residual = true;  // σ/√(2L) for W_O and W_down
};

template <class T>
model::Weights<T> init_weights(const model::Config& c, std::uint64_t seed, InitOptions o = {}) {
    using model::FfnKind;
    using model::GateKind;
    using model::Mat;
    using model::NormKind;
    using model::Vec;
    c.validate();
    Rng rng(stream_seed(seed, 0x1417));
    auto mat = [&](std::int64_t r, std::int64_t k, double sd) {
        Mat<T> m(r, k);
        for (std::int64_t i = 0; i < m.size(); ++i) m.data()[i] = T(sd * rng.normal());
        return m;
    };
    auto norm = [&](double alpha0) {
        model::NormWeights<T> n;
        n.weight = Vec<T>::Ones(c.d_model);
        if (c.norm_bias) n.bias = Vec<T>::Zero(c.d_model);
        if (c.norm == NormKind::dynamic_tanh) n.alpha = Vec<T>::Constant(1, T(alpha0));
        return n;
    };
    const double sd = o.init_std;
    const double sd_out = o.scale_residual ? sd / std::sqrt(2.0 * double(c.n_layers)) : sd;
    const bool pre_norm = c.norm_placement != model::NormPlacement::output;  // output placement has only post norms

    model::Weights<T> w;
    w.tok_embed = mat(c.vocab_size, c.d_model, sd);
    if (c.positions == model::PositionKind::learned) w.pos_embed = mat(c.context_length, c.d_model, sd);
    if (c.attention == model::AttentionKind::sink_token) {
        w.sink_embed.resize(c.d_model);
        for (std::int64_t i = 0; i < c.d_model; ++i) w.sink_embed(i) = T(sd * rng.normal());
    }
    w.layers.resize(c.n_layers);
    for (auto& L : w.layers) {
        if (pre_norm) L.attn_norm = norm(c.dyt_alpha0_attn);
        if (c.has_post_norm()) L.attn_post_norm = norm(c.dyt_alpha0_attn);
        L.wq = mat(c.q_dim(), c.d_model, sd);
        L.wk = mat(c.kv_dim(), c.d_model, sd);
        L.wv = mat(c.kv_dim(), c.d_model, sd);
        L.wo = mat(c.d_model, c.q_dim(), sd_out);
        if (c.qkv_bias) { L.bq = Vec<T>::Zero(c.q_dim()); L.bk = Vec<T>::Zero(c.kv_dim()); L.bv = Vec<T>::Zero(c.kv_dim()); }
        if (c.out_bias) L.bo = Vec<T>::Zero(c.d_model);
        if (c.qk_norm) {
            const bool head = c.qk_norm_scope == model::QkNormScope::head;
            L.q_norm = Vec<T>::Ones(head ? c.head_dim : c.q_dim());
            L.k_norm = Vec<T>::Ones(head ? c.head_dim : c.kv_dim());
        }
        if (c.attention == model::AttentionKind::kv_bias) L.sink_kv = mat(2, c.kv_dim(), sd);
        if (c.gate != GateKind::none) {
            const bool per_head = c.gate == GateKind::per_head || c.gate == GateKind::static_per_head;
            const std::int64_t gn = per_head ? c.n_heads : c.q_dim();
            if (c.gate == GateKind::per_head || c.gate == GateKind::per_channel) L.w_attn_gate = mat(gn, c.d_model, sd);
            L.b_attn_gate = Vec<T>::Zero(gn);
        }
        if (c.ffn != FfnKind::none) {
            if (pre_norm) L.ffn_norm = norm(c.dyt_alpha0_other);
            if (c.has_post_norm()) L.ffn_post_norm = norm(c.dyt_alpha0_other);
        }
        switch (c.ffn) {
            case FfnKind::swiglu:
                L.w_gate = mat(c.d_ff, c.d_model, sd);
                L.w_up = mat(c.d_ff, c.d_model, sd);
                L.w_down = mat(c.d_model, c.d_ff, sd_out);
                if (c.mlp_bias) { L.b_up = Vec<T>::Zero(c.d_ff); L.b_down = Vec<T>::Zero(c.d_model); }
                break;
            case FfnKind::gelu:
                L.w_up = mat(c.d_ff, c.d_model, sd);
                L.w_down = mat(c.d_model, c.d_ff, sd_out);
                if (c.mlp_bias) { L.b_up = Vec<T>::Zero(c.d_ff); L.b_down = Vec<T>::Zero(c.d_model); }
                break;
            case FfnKind::linear:
                L.w_down = mat(c.d_model, c.d_model, sd_out);
                if (c.mlp_bias) L.b_down = Vec<T>::Zero(c.d_model);
                break;
            case FfnKind::moe:
                L.w_router = mat(c.n_experts, c.d_model, sd);
                L.experts.resize(std::size_t(c.n_experts));
                for (auto& e : L.experts) {
                    e.w_gate = mat(c.d_ff, c.d_model, sd);
                    e.w_up = mat(c.d_ff, c.d_model, sd);
                    e.w_down = mat(c.d_model, c.d_ff, sd_out);
                }
                break;
            case FfnKind::none: break;
        }
    }
    if (c.norm_placement != model::NormPlacement::post) w.final_norm = norm(c.dyt_alpha0_other);
    if (!c.tied_embeddings) w.lm_head = mat(c.vocab_size, c.d_model, sd);
    return w;
}

}  // namespace sinkscope::train
