// The backward pass of the whole sinkscope transformer, block by block, from a recorded Tape.
//
// Gradients live in a model::Weights<T> of the same shapes as the parameters (`zeros_like`), so
// `visit_parameters` walks parameters and gradients in the same order and under the same names.
// Every function accumulates (+=) into the gradients; the caller zeroes them once per step.
//
//   pre-norm:  h = x + Attn(N₁(m(x)));         x' = h + FFN(N₂(m(h)))     m: force-sink mask (or identity)
//   sandwich:  h = x + N₁ᵖ(Attn(N₁(m(x))));    x' = h + N₂ᵖ(FFN(N₂(m(h))))
//   post-norm: h = N₁(x + Attn(x));            x' = N₂(h + FFN(h))
//   output:    h = x + N₁ᵖ(Attn(x));           x' = h + N₂ᵖ(FFN(h))                          (OLMo-2)
//   parallel:  x' = x + Attn(N₁(m(x))) + FFN(N₂(m(x)))                                      (GPT-NeoX)
// and around the blocks x = s_e·E[tokens] (+ P) (Gemma's embedding scale s_e), logits = c·tanh(x_f W_headᵀ / c)
// (Gemma 2's logit soft cap c). Every switch of the CPU forward is differentiated (Config::backward_missing_switches
// names the combinations that are not); a mixture of experts holds its chosen experts fixed.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/model/config.hpp"
#include "sinkscope/model/layers.hpp"
#include "sinkscope/model/weights.hpp"
#include "sinkscope/train/backward.hpp"
#include "sinkscope/train/tape.hpp"

namespace sinkscope::train {

// ∂L/∂(a hooked activation) of one block, for the hooks whose gradient the backward passes through on its
// way (rows as in the tape: the sink token's row first where there is one).
template <class T>
struct BlockActivationGradients {
    Mat<T> resid_pre;  // (n, d)      blocks.{l}.hook_resid_pre
    Mat<T> attn_out;   // (n, d)      blocks.{l}.hook_attn_out: what the attention adds to the residual stream
    Mat<T> z;          // (n, H·d_h)  blocks.{l}.attn.hook_z: the gated pattern·V, before W_O
    Mat<T> mlp_out;    // (n, d)      blocks.{l}.hook_mlp_out (empty without an FFN)
};

// Gradients shaped like `w`, all zero (empty where w is empty).
template <class T>
model::Weights<T> zeros_like(const model::Weights<T>& w) {
    model::Weights<T> g = w;
    model::visit_parameters(g, [](const std::string&, auto& t) { t.setZero(); });
    return g;
}
template <class T>
void set_zero(model::Weights<T>& g) {
    model::visit_parameters(g, [](const std::string&, auto& t) { t.setZero(); });
}

// Pointers to every used tensor of `w` in visit_parameters order (zip several Weights with these).
template <class T>
struct TensorRef {
    std::string name;
    T* data = nullptr;
    std::int64_t size = 0;
    std::vector<std::int64_t> shape;  // (rows, cols) for matrices, (n) for vectors
    bool is_matrix = false;
};
template <class T>
std::vector<TensorRef<T>> tensor_refs(model::Weights<T>& w) {
    std::vector<TensorRef<T>> out;
    model::visit_parameters(w, [&](const std::string& name, auto& t) {
        using X = std::decay_t<decltype(t)>;
        constexpr bool is_matrix = X::ColsAtCompileTime != 1;
        // The shape is built in the aggregate (not assigned from a braced list afterwards): GCC 12 warns
        // -Wnonnull inside vector<long>::assign(initializer_list) on an empty vector, a false positive.
        TensorRef<T> r{name, t.data(), std::int64_t(t.size()),
                       is_matrix ? std::vector<std::int64_t>{std::int64_t(t.rows()), std::int64_t(t.cols())}
                                 : std::vector<std::int64_t>{std::int64_t(t.size())},
                       is_matrix};
        out.push_back(std::move(r));
    });
    return out;
}

// acc += g, tensor by tensor (same structure).
template <class T>
void add_gradients(model::Weights<T>& acc, model::Weights<T>& g) {
    auto a = tensor_refs(acc), b = tensor_refs(g);
    require(a.size() == b.size(), "add_gradients: the two gradient sets differ in structure");
    for (std::size_t i = 0; i < a.size(); ++i) {
        require(a[i].size == b[i].size, "add_gradients: tensor " + a[i].name + " differs in size");
        Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(a[i].data, a[i].size) +=
            Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(b[i].data, b[i].size);
    }
}

namespace detail {

// Rows [r0, r0 + nr) of head h of a saved q, k or v (n rows, d_h columns per head) as a product operand:
// an Eigen block of the float (n × heads·d_h) matrix, or a MatrixRef of the head-major bf16 bits (dense).
template <class T>
auto head_block(const Mat<T>& m, std::int64_t, std::int64_t h, std::int64_t r0, std::int64_t nr, std::int64_t dh) {
    return m.block(r0, h * dh, nr, dh);
}
inline model::MatrixRef head_block(const model::Bf16Matrix& m, std::int64_t n, std::int64_t h, std::int64_t r0, std::int64_t nr,
                                   std::int64_t dh) {
    return m.block(h * n + r0, 0, nr, dh);
}

// Head h's rows of a saved q, k or v as bf16 bits and their row stride: the head-major bits in place, or
// float columns rounded into `scratch`.
inline std::pair<const std::uint16_t*, std::int64_t> head_bits(const model::Bf16Matrix& m, std::int64_t n, std::int64_t h,
                                                               std::int64_t dh, model::detail::Bf16Bits&) {
    return {m.bits.data() + h * n * dh, dh};
}
template <class T>
std::pair<const std::uint16_t*, std::int64_t> head_bits(const Mat<T>& m, std::int64_t n, std::int64_t h, std::int64_t dh,
                                                        model::detail::Bf16Bits& scratch) {
    scratch.resize(std::size_t(n * dh));
    if constexpr (std::is_same_v<T, float>)
        for (std::int64_t t = 0; t < n; ++t) model::detail::convert_bf16(scratch.data() + t * dh, m.data() + t * m.cols() + h * dh, dh);
    else throw Error("head_bits: bf16 attention needs float");
    return {scratch.data(), dh};
}

// Calls fn(q, k, v) with the saved q, k, v as float matrices or as their bf16 bits (the recorder keeps
// all three alike); head_block() takes blocks of either.
template <class T, class Fn>
void with_saved_qkv(const LayerTape<T>& tp, Fn&& fn) {
    require(tp.q.in_bits == tp.k.in_bits && tp.k.in_bits == tp.v.in_bits, "attention backward: q, k and v saved differently");
    if (tp.q.in_bits) fn(tp.q.bits, tp.k.bits, tp.v.bits);
    else fn(tp.q.value, tp.k.value, tp.v.value);
}

// forward (model::detail::attention_block_forward):
//   q = inp W_Qᵀ + b_Q, k = …, v = …;  [QK-norm];  [RoPE];  P_h = softmax(cap(α q_h k_gᵀ) + mask [+ slot]);
//   α = 1/√d_h or Config::attn_scale;  cap(s) = c·tanh(s/c) with Config::attn_softcap c > 0, else s;
//   z_h = P_h v_g [+ p_slot v_bias];  [z ⊙= σ(gate)];  out = z W_Oᵀ + b_O
// dinp (n × d) += ∂L/∂inp; dw accumulates the block's attention parameters.
template <class T>
void attention_block_backward(Mat<T>& dinp, model::LayerWeights<T>& dw, const Mat<T>& dout, const LayerTape<T>& tp,
                              const model::Nondeduced<model::ProductInput<T>>& inp, const model::LayerWeights<T>& w,
                              const model::Config& c, std::int64_t layer, Mat<T>* dz_hook = nullptr) {
    using model::AttentionKind;
    using model::GateKind;
    const std::int64_t n = inp.rows(), H = c.n_heads, G = c.n_kv_heads, dh = c.head_dim, group = H / G;
    const bool kv_bias = c.attention == AttentionKind::kv_bias;
    const bool has_slot = kv_bias || c.attention == AttentionKind::softmax_off_by_one;
    const model::ScoreRule rule{c.window_at(layer), c.attn_scale, c.attn_softcap};  // the forward's (attention_block_forward)
    const std::int64_t window = rule.window;
    const T scale = rule.scale_for<T>(dh);
    const T cap = T(rule.softcap);
    const bool bf16 = model::attention_in_bf16<T>();  // read here: the per-head workers do not have the setting

    // out = z W_Oᵀ + b_O
    Mat<T> dz;  // (n, H·d_h)
    linear_backward(&dz, dw.wo, &dw.bo, dout, tp.z.input(), w.wo, /*dinp_first=*/true);
    if (dz_hook) *dz_hook = dz;  // ∂L/∂(hook_z): z is hooked gated, as W_O reads it

    if (c.gate != GateKind::none) {
        // z ⊙= σ(s):  s = inp W_gᵀ + b_g (conditional) or b_g (static); per head or per channel.
        const bool per_head = c.gate == GateKind::per_head || c.gate == GateKind::static_per_head;
        const bool conditional = c.gate == GateKind::per_head || c.gate == GateKind::per_channel;
        Mat<T> zu(n, H * dh);  // the ungated z, recomputed: P_h v_g (+ p_slot v_bias)
        for (std::int64_t h = 0; h < H; ++h) {
            const std::int64_t g = h / group;
            with_saved_qkv(tp, [&](const auto&, const auto&, const auto& V) {
                model::attention_product(zu.middleCols(h * dh, dh), tp.pattern.middleRows(h * n, n), head_block(V, n, g, 0, n, dh),
                                         false, bf16);
            });
            if (kv_bias) {
                const auto ps = (T(1) - tp.pattern.middleRows(h * n, n).rowwise().sum().array()).matrix();
                zu.middleCols(h * dh, dh).noalias() += ps * w.sink_kv.row(1).segment(g * dh, dh);
            }
        }
        const Mat<T>& gt = tp.gate;  // (n, H) or (n, H·d_h)
        Mat<T> dgate(n, gt.cols());
        if (per_head) {
            for (std::int64_t h = 0; h < H; ++h) {
                dgate.col(h) = dz.middleCols(h * dh, dh).cwiseProduct(zu.middleCols(h * dh, dh)).rowwise().sum();
                dz.middleCols(h * dh, dh).array().colwise() *= gt.col(h).array();
            }
        } else {
            dgate = dz.cwiseProduct(zu);
            dz.array() *= gt.array();
        }
        const Mat<T> dpre = (dgate.array() * gt.array() * (T(1) - gt.array())).matrix();  // σ' = σ(1 − σ)
        if (conditional) linear_backward(&dinp, dw.w_attn_gate, &dw.b_attn_gate, dpre, inp, w.w_attn_gate);
        else dw.b_attn_gate += dpre.colwise().sum().transpose();
    }

    // Per head, in blocks of kBlock query rows: row block [r0, r1) only has keys [k0, r1) (causal, and
    // k0 = r0 − w + 1 with a window w), so the T × T products skip the masked upper triangle. Smaller
    // blocks skip more of it but make more products; each bf16 product (oneDNN) has a fixed cost of its
    // own and repacks its operands, and 128 rows measured 3 % faster than 64 per training step in bf16
    // (bench_train, T 256, 2026-12-02), while Eigen's float products were as fast with 64 as with 128.
    const std::int64_t kBlock = bf16 ? 128 : 64;
    Mat<T> dq = Mat<T>::Zero(n, H * dh), dk = Mat<T>::Zero(n, G * dh), dv = Mat<T>::Zero(n, G * dh);
    // bf16 products, plain causal softmax: each head's backward on AMX tiles where the CPU has them.
    const bool amx = bf16 && !has_slot && window == 0 && cap == 0 && model::use_amx_attention(dh, true);
    if constexpr (std::is_same_v<T, float>) {
        if (amx) {
            with_saved_qkv(tp, [&](const auto& Q, const auto& K, const auto& V) {
#pragma omp parallel for schedule(static) if (G > 1)
                for (std::int64_t g = 0; g < G; ++g) {
                    model::detail::Bf16Bits qs, ks, vs;
                    const auto [kp, kld] = head_bits(K, n, g, dh, ks);
                    const auto [vp, vld] = head_bits(V, n, g, dh, vs);
                    for (std::int64_t h = g * group; h < (g + 1) * group; ++h) {
                        const auto [qp, qld] = head_bits(Q, n, h, dh, qs);
                        model::amx_attention_backward_head(dq.data() + h * dh, dq.cols(), dk.data() + g * dh, dk.cols(),
                                                           dv.data() + g * dh, dv.cols(), tp.pattern.data() + h * n * n, n,
                                                           dz.data() + h * dh, dz.cols(), qp, qld, kp, kld, vp, vld, n, dh, scale);
                    }
                }
            });
        }
    }
    if (!amx) with_saved_qkv(tp, [&](const auto& Q, const auto& K, const auto& V) {
#pragma omp parallel for schedule(static) if (G > 1)
        for (std::int64_t g = 0; g < G; ++g) {
            Mat<T> dP(std::min(kBlock, n), n), dS(std::min(kBlock, n), n), capped;
            Vec<T> slot_dp, dslot;
            for (std::int64_t h = g * group; h < (g + 1) * group; ++h) {
                for (std::int64_t r0 = 0; r0 < n; r0 += kBlock) {
                    const std::int64_t r1 = std::min(n, r0 + kBlock), rows = r1 - r0;
                    const std::int64_t k0 = window > 0 ? std::max<std::int64_t>(0, r0 - window + 1) : 0;
                    const std::int64_t kw = r1 - k0;
                    const auto P = tp.pattern.block(h * n + r0, k0, rows, kw);          // (rows, kw)
                    const auto dzh = dz.block(r0, h * dh, rows, dh);                      // (rows, d_h)
                    auto dPb = dP.topLeftCorner(rows, kw);
                    auto dSb = dS.topLeftCorner(rows, kw);
                    // z_h = P_h v_g:   dP = dz_h v_gᵀ,   dv_g += P_hᵀ dz_h
                    const model::ScopedBf16Reuse reuse_dz(dzh, bf16);  // a worker thread: bf16 passed in
                    model::attention_product(dPb, dzh, model::transpose_of(head_block(V, n, g, k0, kw, dh)), false, bf16);
                    model::attention_product(dv.block(k0, g * dh, kw, dh), P.transpose(), dzh, true, bf16);
                    if (kv_bias) {
                        // z_h += p_slot v_bias:   dp_slot = dz_h · v_bias,   dv_bias += Σ_t p_slot[t] dz_h[t]
                        const Vec<T> ps = (T(1) - P.rowwise().sum().array()).matrix();
                        slot_dp = dzh * w.sink_kv.row(1).segment(g * dh, dh).transpose();
                        dw.sink_kv.row(1).segment(g * dh, dh).noalias() += ps.transpose() * dzh;
                        dslot = Vec<T>::Zero(rows);
                    }
                    // s = α q_h k_gᵀ:   dq_h += α dS k_g,   dk_g += α dSᵀ q_h
                    // (dSb is the softmax's dS already times α)
                    softmax_backward<T>(dSb, kv_bias ? dslot.data() : nullptr, dPb, P, kv_bias ? slot_dp.data() : nullptr,
                                        has_slot, /*accumulate=*/false, scale);
                    if (cap != 0) {
                        // s = c·tanh(u/c), u = α q_h k_gᵀ:  ds/du = 1 − tanh²(u/c), with u recomputed (one product)
                        capped.resize(rows, kw);
                        model::attention_product(capped, head_block(Q, n, h, r0, rows, dh),
                                                 model::transpose_of(head_block(K, n, g, k0, kw, dh)), false, bf16, scale);
                        dSb.array() *= T(1) - (capped.array() / cap).tanh().square();
                    }
                    const model::ScopedBf16Reuse reuse_ds(dSb, bf16);
                    model::attention_product(dq.block(r0, h * dh, rows, dh), dSb, head_block(K, n, g, k0, kw, dh), true, bf16);
                    model::attention_product(dk.block(k0, g * dh, kw, dh), dSb.transpose(), head_block(Q, n, h, r0, rows, dh),
                                             true, bf16);
                    if (kv_bias) {
                        // s_slot = q_h · k_bias / √d_h   (q is float here: the recorder keeps it so with a KV bias)
                        dslot *= scale;
                        dq.block(r0, h * dh, rows, dh).noalias() += dslot * w.sink_kv.row(0).segment(g * dh, dh);
                        dw.sink_kv.row(0).segment(g * dh, dh).noalias() += dslot.transpose() * tp.q.value.block(r0, h * dh, rows, dh);
                    }
                }
            }
        }
    });

    if (c.positions == model::PositionKind::rope) {  // the forward's θ: base per layer, partial rotary, divisors
        rope_backward(dq, H, dh, c.rope_base_at(layer), c.rope_layout, 0, c.rope_dims(), c.rope_freq_divisors);
        rope_backward(dk, G, dh, c.rope_base_at(layer), c.rope_layout, 0, c.rope_dims(), c.rope_freq_divisors);
    }
    if (c.qk_norm) {
        // q ← head_rmsnorm(inp W_Qᵀ + b_Q): recompute the pre-norm q and k (one GEMM each).
        Mat<T> q_raw, k_raw;
        const Mat<T>& x = inp.values("QK-norm backward");  // the recorder keeps it float with QK-norm
        model::linear_forward(q_raw, x, w.wq, w.bq);
        model::linear_forward(k_raw, x, w.wk, w.bk);
        Mat<T> dq_raw = Mat<T>::Zero(n, H * dh), dk_raw = Mat<T>::Zero(n, G * dh);
        // per head (d_h entries each), or one RMSNorm over the whole projection (OLMo-2)
        const bool per_head = c.qk_norm_scope == model::QkNormScope::head;
        head_rmsnorm_backward(dq_raw, dw.q_norm, dq, q_raw, w.q_norm, per_head ? H : 1, per_head ? dh : H * dh, c.norm_eps);
        head_rmsnorm_backward(dk_raw, dw.k_norm, dk, k_raw, w.k_norm, per_head ? G : 1, per_head ? dh : G * dh, c.norm_eps);
        dq.swap(dq_raw);
        dk.swap(dk_raw);
    }
    const model::ScopedInputReuse<T> reuse(inp);  // in bf16, a float inp is converted once for the three dW products
    linear_backward(&dinp, dw.wq, &dw.bq, dq, inp, w.wq);
    linear_backward(&dinp, dw.wk, &dw.bk, dk, inp, w.wk);
    linear_backward(&dinp, dw.wv, &dw.bv, dv, inp, w.wv);
}

// forward (model::detail::moe_block_forward), the chosen experts c_{t,i} held fixed:
//   out_t = Σ_i w_{t,i} E_{c_{t,i}}(x_t),   E_e(x) = W_down,e (act(W_gate,e x) ⊙ W_up,e x),   w = route(x W_routerᵀ)
//   dw_{t,i} = dout_t · E_{c_{t,i}}(x_t);   expert e's rows get dout_t w_{t,i};   route: moe_router_backward
// Each expert's hidden layer is recomputed from x (two GEMMs per expert over its tokens).
template <class T>
void moe_block_backward(Mat<T>& dinp, model::LayerWeights<T>& dw, const Mat<T>& dout, const LayerTape<T>& tp,
                        const Mat<T>& x, const model::LayerWeights<T>& w, const model::Config& c) {
    const std::int64_t n = x.rows(), E = c.n_experts, k = c.n_experts_used;
    require(tp.chosen_experts.rows() == n && tp.chosen_experts.cols() == k && tp.router_logits.cols() == E,
            "mixture-of-experts backward: the tape has no routing of this block");
    Mat<T> dweight = Mat<T>::Zero(n, k);
    std::vector<std::int64_t> rows;  // expert e's (token, slot) pairs, t·k + i
    Mat<T> xe, gate, up, act, hidden, out, dout_e, dhidden, dgate, dup, dxe;
    for (std::int64_t e = 0; e < E; ++e) {
        rows.clear();
        for (std::int64_t t = 0; t < n; ++t)
            for (std::int64_t i = 0; i < k; ++i)
                if (std::llround(double(tp.chosen_experts(t, i))) == e) rows.push_back(t * k + i);
        if (rows.empty()) continue;
        const std::int64_t m = std::int64_t(rows.size());
        const model::ExpertWeights<T>& we = w.experts[std::size_t(e)];
        model::ExpertWeights<T>& ge = dw.experts[std::size_t(e)];
        xe.resize(m, c.d_model);
        for (std::int64_t j = 0; j < m; ++j) xe.row(j) = x.row(rows[std::size_t(j)] / k);
        gate.noalias() = xe * we.w_gate.transpose();
        up.noalias() = xe * we.w_up.transpose();
        model::activation_forward(act, gate, c.activation);
        hidden = act.cwiseProduct(up);
        out.noalias() = hidden * we.w_down.transpose();
        dout_e.resize(m, c.d_model);
        for (std::int64_t j = 0; j < m; ++j) {
            const std::int64_t t = rows[std::size_t(j)] / k, i = rows[std::size_t(j)] % k;
            dweight(t, i) = dout.row(t).dot(out.row(j));
            dout_e.row(j) = dout.row(t) * tp.expert_weights(t, i);
        }
        // out = hidden W_downᵀ;  hidden = act(gate) ⊙ up;  gate = x W_gateᵀ, up = x W_upᵀ
        linear_backward<T>(&dhidden, ge.w_down, nullptr, dout_e, hidden, we.w_down, /*dinp_first=*/true);
        dgate = Mat<T>::Zero(m, c.d_ff);
        activation_backward(dgate, Mat<T>(dhidden.cwiseProduct(up)), gate, c.activation);
        dup = dhidden.cwiseProduct(act);
        dxe = Mat<T>::Zero(m, c.d_model);
        linear_backward<T>(&dxe, ge.w_gate, nullptr, dgate, xe, we.w_gate);
        linear_backward<T>(&dxe, ge.w_up, nullptr, dup, xe, we.w_up);
        for (std::int64_t j = 0; j < m; ++j) dinp.row(rows[std::size_t(j)] / k) += dxe.row(j);
    }
    // w = route(s), s = x W_routerᵀ
    Mat<T> dlogits = Mat<T>::Zero(n, E);
    moe_router_backward(dlogits, dweight, tp.expert_weights, tp.chosen_experts, tp.router_logits, c.moe_normalize_topk);
    linear_backward<T>(&dinp, dw.w_router, nullptr, dlogits, x, w.w_router);
}

// forward (model::detail::ffn_block_forward):
//   SwiGLU: out = W_down (act(W_gate x) ⊙ (W_up x + b_up)) + b_down;  GELU: out = W_down act(W_up x + b_up) + b_down;
//   linear: out = W_down x + b_down
template <class T>
void ffn_block_backward(Mat<T>& dinp, model::LayerWeights<T>& dw, const Mat<T>& dout, const LayerTape<T>& tp,
                        const model::Nondeduced<model::ProductInput<T>>& inp, const model::LayerWeights<T>& w,
                        const model::Config& c) {
    const std::int64_t n = inp.rows();
    switch (c.ffn) {
        case model::FfnKind::swiglu: {
            Mat<T> dpost;
            linear_backward(&dpost, dw.w_down, &dw.b_down, dout, tp.post.input(), w.w_down, /*dinp_first=*/true);
            // hidden = act(gate) ⊙ up:   dgate = dhidden ⊙ up ⊙ act'(gate),   dup = dhidden ⊙ act(gate)
            // Under bf16 products (silu) each row of dgate and dup is rounded to bf16 as it is made, for
            // the products that are its only readers (dup only without b_up, whose sum needs the floats).
            const bool silu = c.activation == model::Activation::silu;
            const bool gate_bits = silu && model::products_in_bf16<T>() && tp.round_gradients;
            const bool up_bits = gate_bits && dw.b_up.size() == 0;
            Mat<T> dgate, dup;
            model::Bf16Matrix dgate_b, dup_b;
            if (silu) {
                // σ once per entry, with Eigen's vectorised exp: silu = x σ,  silu' = σ (1 + x (1 − σ)).
                // Row by row, so that σ stays in cache between its two uses (no (n × d_ff) buffer).
                if (gate_bits) dgate_b.resize(n, c.d_ff);
                else dgate.resize(n, c.d_ff);
                if (up_bits) dup_b.resize(n, c.d_ff);
                else dup.resize(n, c.d_ff);
                Eigen::Array<T, 1, Eigen::Dynamic> sg(c.d_ff), row(c.d_ff);
                auto store = [&](Mat<T>& f, model::Bf16Matrix& b, bool bits, std::int64_t t) {
                    if constexpr (std::is_same_v<T, float>)
                        if (bits) return model::detail::convert_bf16(b.row(t), row.data(), c.d_ff);
                    f.row(t) = row.matrix();
                };
                for (std::int64_t t = 0; t < n; ++t) {
                    const auto x = tp.pre.row(t).array();
                    const auto dh = dpost.row(t).array();
                    sg = (T(1) + (-x).exp()).inverse();
                    row = dh * x * sg;
                    store(dup, dup_b, up_bits, t);
                    row = dh * tp.pre_linear.row(t).array() * sg * (T(1) + x * (T(1) - sg));
                    store(dgate, dgate_b, gate_bits, t);
                }
            } else {
                Mat<T> act;
                model::activation_forward(act, tp.pre, c.activation);
                dgate = Mat<T>::Zero(n, c.d_ff);
                activation_backward(dgate, Mat<T>(dpost.cwiseProduct(tp.pre_linear)), tp.pre, c.activation);
                dup = dpost.cwiseProduct(act);
            }
            const model::ScopedInputReuse<T> reuse(inp);  // in bf16, a float inp is converted once for both dW products
            // dinp += dgate W_gate + dup W_up, from the float gradients or their bits
            auto backward_of = [&](const Mat<T>& f, const model::Bf16Matrix& b, bool bits, Mat<T>& dweight, Vec<T>* dbias,
                                   const Mat<T>& weight) {
                if constexpr (std::is_same_v<T, float>)
                    if (bits) return linear_backward_bf16_dout(&dinp, dweight, b, inp, weight);
                linear_backward<T>(&dinp, dweight, dbias, f, inp, weight);
            };
            backward_of(dgate, dgate_b, gate_bits, dw.w_gate, nullptr, w.w_gate);
            backward_of(dup, dup_b, up_bits, dw.w_up, &dw.b_up, w.w_up);
            return;
        }
        case model::FfnKind::gelu: {
            Mat<T> dpost;
            linear_backward(&dpost, dw.w_down, &dw.b_down, dout, tp.post.input(), w.w_down, /*dinp_first=*/true);
            Mat<T> dpre = Mat<T>::Zero(n, c.d_ff);
            activation_backward(dpre, dpost, tp.pre, c.activation);
            linear_backward(&dinp, dw.w_up, &dw.b_up, dpre, inp, w.w_up);
            return;
        }
        case model::FfnKind::linear: linear_backward(&dinp, dw.w_down, &dw.b_down, dout, inp, w.w_down); return;
        case model::FfnKind::none: return;
        case model::FfnKind::moe: moe_block_backward(dinp, dw, dout, tp, inp.values("mixture-of-experts backward"), w, c); return;
    }
}

// The raw output of a sub-block before its sandwich post-norm, recomputed (one GEMM).
template <class T>
Mat<T> attention_raw_output(const LayerTape<T>& tp, const model::LayerWeights<T>& w) {
    Mat<T> out;
    model::linear_forward(out, tp.z.input().values("sandwich-norm backward"), w.wo, w.bo);  // float with a sandwich norm
    return out;
}
template <class T>
Mat<T> ffn_raw_output(const LayerTape<T>& tp, const model::LayerWeights<T>& w, const model::Config& c) {
    Mat<T> out;
    const bool output = c.norm_placement == model::NormPlacement::output;  // no pre-norm: the FFN reads resid_mid
    // float with a sandwich or output norm (TapeRecorder)
    const Mat<T>& in = c.ffn != model::FfnKind::linear ? tp.post.input().values("sandwich-norm backward")
                       : output                    ? tp.resid_mid
                                                   : tp.xn2.input().values("sandwich-norm backward");
    model::linear_forward(out, in, w.w_down, w.b_down);
    return out;
}

// forward: xn = N(m(x)), m the force-sink mask (model::detail::force_sink_input):  dx += ∂xn/∂x · dxn.
// Without the mask (k = 0) the norm's backward accumulates straight into dx, with no (n × d) buffer.
template <class T>
void masked_norm_backward(Mat<T>& dx, model::NormWeights<T>& dw, const Mat<T>& dxn, const Mat<T>& x,
                          const model::NormWeights<T>& w, const model::Config& c, Mat<T>& masked) {
    if (c.force_sink_channels <= 0) return norm_backward(dx, dw, dxn, x, w, c.norm, c.norm_eps);
    Mat<T> dm = Mat<T>::Zero(dx.rows(), dx.cols());
    norm_backward(dm, dw, dxn, model::detail::force_sink_input(x, c, masked), w, c.norm, c.norm_eps);
    force_sink_backward(dx, dm, c.force_sink_channels);
}

// One block backward. dx holds ∂L/∂resid_post on entry and ∂L/∂resid_pre on exit. With `act`, also the
// gradients at hook_attn_out, hook_z and hook_mlp_out (its resid_pre is the caller's to fill).
template <class T>
void block_backward(Mat<T>& dx, model::LayerWeights<T>& dw, const LayerTape<T>& tp, const model::LayerWeights<T>& w,
                    const model::Config& c, std::int64_t layer, BlockActivationGradients<T>* act = nullptr) {
    const std::int64_t n = dx.rows(), d = dx.cols();
    const bool ffn = c.ffn != model::FfnKind::none;
    Mat<T>* dz = act ? &act->z : nullptr;
    // what a sub-layer adds to the residual stream (its hook) gets `g`
    auto keep = [act](Mat<T> BlockActivationGradients<T>::*hook, const Mat<T>& g) {
        if (act) act->*hook = g;
    };
    Mat<T> masked;
    if (c.parallel_residual) {
        // x' = x + Attn(N₁(m(x))) + FFN(N₂(m(x))): both sub-layers read the block's input
        const Mat<T> dout = dx;
        keep(&BlockActivationGradients<T>::attn_out, dout);
        if (ffn) keep(&BlockActivationGradients<T>::mlp_out, dout);
        Mat<T> dxn = Mat<T>::Zero(n, d);
        ffn_block_backward(dxn, dw, dout, tp, tp.xn2.input(), w, c);
        masked_norm_backward(dx, dw.ffn_norm, dxn, tp.resid_pre, w.ffn_norm, c, masked);
        dxn.setZero();
        attention_block_backward(dxn, dw, dout, tp, tp.xn1.input(), w, c, layer, dz);
        masked_norm_backward(dx, dw.attn_norm, dxn, tp.resid_pre, w.attn_norm, c, masked);
        return;
    }
    if (c.norm_placement == model::NormPlacement::post) {
        if (ffn) {
            // x' = N₂(u),  u = h + FFN(h)
            const Mat<T> u = tp.resid_mid + tp.mlp_out;
            Mat<T> du = Mat<T>::Zero(n, d);
            norm_backward(du, dw.ffn_norm, dx, u, w.ffn_norm, c.norm, c.norm_eps);
            keep(&BlockActivationGradients<T>::mlp_out, du);  // u = h + mlp_out
            dx = du;
            ffn_block_backward(dx, dw, du, tp, tp.resid_mid, w, c);
        }
        // h = N₁(u),  u = x + Attn(x)
        const Mat<T> u = tp.resid_pre + tp.attn_out;
        Mat<T> du = Mat<T>::Zero(n, d);
        norm_backward(du, dw.attn_norm, dx, u, w.attn_norm, c.norm, c.norm_eps);
        keep(&BlockActivationGradients<T>::attn_out, du);
        dx = du;
        attention_block_backward(dx, dw, du, tp, tp.resid_pre, w, c, layer, dz);
        return;
    }
    if (c.norm_placement == model::NormPlacement::output) {
        // x' = h + N₂ᵖ(FFN(h)),  h = x + N₁ᵖ(Attn(x)): no norm before a sub-layer
        Mat<T> dsub = Mat<T>::Zero(n, d);
        if (ffn) {
            keep(&BlockActivationGradients<T>::mlp_out, dx);  // x' = h + mlp_out
            norm_backward(dsub, dw.ffn_post_norm, dx, ffn_raw_output(tp, w, c), w.ffn_post_norm, c.norm, c.norm_eps);
            ffn_block_backward(dx, dw, dsub, tp, tp.resid_mid, w, c);
            dsub.setZero();
        }
        keep(&BlockActivationGradients<T>::attn_out, dx);  // h = x + attn_out
        norm_backward(dsub, dw.attn_post_norm, dx, attention_raw_output(tp, w), w.attn_post_norm, c.norm, c.norm_eps);
        attention_block_backward(dx, dw, dsub, tp, tp.resid_pre, w, c, layer, dz);
        return;
    }
    const bool sandwich = c.norm_placement == model::NormPlacement::sandwich;
    if (ffn) {
        // x' = h + [N₂ᵖ](FFN(N₂(m(h))))
        keep(&BlockActivationGradients<T>::mlp_out, dx);
        Mat<T> dsub;
        if (sandwich) {
            dsub = Mat<T>::Zero(n, d);
            norm_backward(dsub, dw.ffn_post_norm, dx, ffn_raw_output(tp, w, c), w.ffn_post_norm, c.norm, c.norm_eps);
        }
        Mat<T> dxn = Mat<T>::Zero(n, d);
        ffn_block_backward(dxn, dw, sandwich ? dsub : dx, tp, tp.xn2.input(), w, c);
        masked_norm_backward(dx, dw.ffn_norm, dxn, tp.resid_mid, w.ffn_norm, c, masked);
    }
    // h = x + [N₁ᵖ](Attn(N₁(m(x))))
    keep(&BlockActivationGradients<T>::attn_out, dx);
    Mat<T> dsub;
    if (sandwich) {
        dsub = Mat<T>::Zero(n, d);
        norm_backward(dsub, dw.attn_post_norm, dx, attention_raw_output(tp, w), w.attn_post_norm, c.norm, c.norm_eps);
    }
    Mat<T> dxn = Mat<T>::Zero(n, d);
    attention_block_backward(dxn, dw, sandwich ? dsub : dx, tp, tp.xn1.input(), w, c, layer, dz);
    masked_norm_backward(dx, dw.attn_norm, dxn, tp.resid_pre, w.attn_norm, c, masked);
}

// The backward of the whole model; `dresid_pre` and `act` (each optional) receive activation gradients.
template <class T>
void model_backward(model::Weights<T>& grads, const Mat<T>& dlogits_capped, const Tape<T>& tape, const model::Weights<T>& w,
                    const model::Config& c, std::vector<Mat<T>>* dresid_pre, std::vector<BlockActivationGradients<T>>* act) {
    model::require_dense(w, "training (backward)");
    require(c.backward_missing_switches().empty(), "backward: the backward pass does not implement " + c.backward_missing_switches());
    const std::int64_t n = tape.n, sink = tape.sink, nt = n - sink, d = c.d_model;
    require(dlogits_capped.rows() == nt && dlogits_capped.cols() == c.vocab_size, "backward: dlogits has the wrong shape");
    // logits = c·tanh(u/c) (Gemma 2's soft cap):  du = dlogits (1 − (logits/c)²)
    Mat<T> uncapped;
    if (c.logit_softcap != 0) {
        const T cap = T(c.logit_softcap);
        uncapped = (dlogits_capped.array() * (T(1) - (tape.logits.array() / cap).square())).matrix();
    }
    const Mat<T>& dlogits = c.logit_softcap != 0 ? uncapped : dlogits_capped;
    const bool post = c.norm_placement == model::NormPlacement::post;
    const Mat<T>& head = w.output_head();
    Mat<T>& dhead = w.lm_head.size() ? grads.lm_head : grads.tok_embed;
    const Mat<T>& last = post ? tape.final_in : tape.xf;  // (n, d) the input of the output head

    // logits = x_f W_headᵀ  (the real positions only)
    Mat<T> dx = Mat<T>::Zero(n, d);
    if (sink) {
        const Mat<T> real = last.bottomRows(nt);
        Mat<T> dreal = Mat<T>::Zero(nt, d);
        linear_backward<T>(&dreal, dhead, nullptr, dlogits, real, head);
        dx.bottomRows(nt) = dreal;
    } else {
        linear_backward<T>(&dx, dhead, nullptr, dlogits, last, head);
    }
    if (!post) {
        // x_f = N_f(x)
        Mat<T> dn = Mat<T>::Zero(n, d);
        norm_backward(dn, grads.final_norm, dx, tape.final_in, w.final_norm, c.norm, c.norm_eps);
        dx.swap(dn);
    }
    if (dresid_pre) dresid_pre->assign(std::size_t(c.n_layers), Mat<T>());
    if (act) act->assign(std::size_t(c.n_layers), BlockActivationGradients<T>());
    for (std::int64_t l = c.n_layers - 1; l >= 0; --l) {
        BlockActivationGradients<T>* a = act ? &(*act)[std::size_t(l)] : nullptr;
        block_backward(dx, grads.layers[l], tape.layers[l], w.layers[l], c, l, a);
        if (dresid_pre) (*dresid_pre)[std::size_t(l)] = dx;
        if (a) a->resid_pre = dx;
    }
    // x = s_e·E[tokens] + P  (s_e rounded to T, as the forward multiplies)
    if (c.positions == model::PositionKind::learned) grads.pos_embed.topRows(n) += dx;
    if (sink) grads.sink_embed += dx.row(0).transpose();
    const T embed_scale = T(c.embed_scale);  // 1 leaves every bit as it is
    for (std::int64_t t = 0; t < nt; ++t) grads.tok_embed.row(tape.tokens[t]) += dx.row(t + sink) * embed_scale;
}

}  // namespace detail

// The whole backward pass of one sequence: from ∂L/∂logits (T × vocab) and its tape, accumulates
// every parameter gradient into `grads` (shaped by zeros_like(w)). With `dresid_pre`, also returns
// ∂L/∂resid_pre of every block l (n × d each, the sink token's row first where there is one): the
// gradient at the residual stream, block 0's being that of the embeddings (plus positions).
//   forward: x = s_e·E[tokens] (+ P) (sink embedding first);  blocks;  x_f = N_f(x);  logits = cap(x_f W_headᵀ)
template <class T>
void backward(model::Weights<T>& grads, const Mat<T>& dlogits_capped, const Tape<T>& tape, const model::Weights<T>& w,
              const model::Config& c, std::vector<Mat<T>>* dresid_pre = nullptr) {
    detail::model_backward<T>(grads, dlogits_capped, tape, w, c, dresid_pre, nullptr);
}

// As above, and `act` receives, for every block, the gradients at hook_resid_pre, hook_attn_out, attn.hook_z
// and hook_mlp_out (BlockActivationGradients).
template <class T>
void backward(model::Weights<T>& grads, const Mat<T>& dlogits_capped, const Tape<T>& tape, const model::Weights<T>& w,
              const model::Config& c, std::vector<BlockActivationGradients<T>>& act) {
    detail::model_backward<T>(grads, dlogits_capped, tape, w, c, nullptr, &act);
}

}  // namespace sinkscope::train
