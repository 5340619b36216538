// The forward pass of the sinkscope transformer over one sequence, with hook points.
//
//   pre-norm:  h = x + Attn(N₁(x));        x' = h + FFN(N₂(h))          (Llama, GPT-2)
//   sandwich:  h = x + N₁ᵖ(Attn(N₁(x)));   x' = h + N₂ᵖ(FFN(N₂(h)))     (Paper B, Gemma 2/3)
//   post-norm: h = N₁(x + Attn(x));        x' = N₂(h + FFN(h))
//   output:    h = x + N₁ᵖ(Attn(x));       x' = h + N₂ᵖ(FFN(h))          (OLMo-2)
//   parallel:  x' = x + Attn(N₁(x)) + FFN(N₂(x))                         (GPT-NeoX)
//   Attn(x) = Σ_h gate_h ⊙ softmax(q_h k_gᵀ/√d_h + causal mask) v_g · W_Oᵀ,   g = kv head of h
//   SwiGLU:  FFN(x) = W_down (silu(W_gate x) ⊙ W_up x);   GELU FFN: W_down gelu(W_up x + b) + b
//   MoE:     FFN(x) = Σ_{i<k} w_i · SwiGLU_{e_i}(x),   (e_i, w_i) = top-k of softmax(W_router x)  (Mixtral, OLMoE)
// Every activation of the hook table (hook_table.hpp) is offered to the hooks, which may read or overwrite it.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/io/dequantize.hpp"
#include "sinkscope/layers/parallel_rows.hpp"
#include "sinkscope/layers/quantized_linear.hpp"
#include "sinkscope/model/block_wiring.hpp"
#include "sinkscope/model/config.hpp"
#include "sinkscope/model/hooks.hpp"
#include "sinkscope/model/layers.hpp"
#include "sinkscope/model/weights.hpp"

namespace sinkscope::model {

struct ForwardOptions {
    bool logits = true;            // compute the (T × vocab) logits; off saves the output GEMM
    std::int64_t last_layer = -1;  // stop after this block (−1: run all); the logits are then skipped
};

namespace detail {

// y = x Wᵀ + b for a linear map stored either dense (W) or as a view of its GGUF blocks (Wf, file-type
// storage: model/weights.hpp). Every product of the forward with a map that may be a view goes through here;
// the activations x and y are float either way, so hooks see what they see with dense weights.
template <class T>
void linear_weight(Mat<T>& y, const Mat<T>& x, const Mat<T>& W, const QuantMatrix& Wf, const Vec<T>& b,
                   QuantCompute compute) {
    if (!Wf.empty()) {
        if constexpr (std::is_same_v<T, float>) {
            linear_forward(y, x, Wf, b, compute);
            return;
        } else {
            throw Error("forward: weights kept in their GGUF types (WeightStorage::file_type) run in float only");
        }
    }
    linear_forward(y, x, W, b);
}

// Row `id` of the token embedding into `dst` (d entries): a dense row, or one row of the file's blocks dequantized.
template <class T, class Row>
void embed_row(Row&& dst, const Weights<T>& w, std::int32_t id) {
    if (w.tok_embed_file.empty()) { dst = w.tok_embed.row(id); return; }
    if constexpr (std::is_same_v<T, float>) {
        Vec<float> r(w.tok_embed_file.cols);
        io::dequantize<float>(w.tok_embed_file.type, w.tok_embed_file.row(id), w.tok_embed_file.cols, r.data());
        dst = r.transpose();
    } else {
        throw Error("forward: weights kept in their GGUF types (WeightStorage::file_type) run in float only");
    }
}

// logits = x headᵀ with the output head (lm_head, or the tied token embedding), dense or a view.
template <class T>
void head_forward(Mat<T>& logits, const Mat<T>& x, const Weights<T>& w) {
    static const Vec<T> no_bias;
    if (!w.file_type()) { linear_forward(logits, x, w.output_head(), no_bias); return; }
    if (w.lm_head.size() || !w.lm_head_file.empty()) linear_weight(logits, x, w.lm_head, w.lm_head_file, no_bias, w.compute);
    else linear_weight(logits, x, w.tok_embed, w.tok_embed_file, no_bias, w.compute);
}

// The rows of a right-padded batch (model/batch.hpp): every activation is (B·T × …), sequence b owns
// rows [b·T, b·T + lengths[b]); the rows after them are padding.
struct RowLayout {
    std::int64_t batch = 0;              // B
    std::int64_t positions = 0;          // T, the longest length
    std::vector<std::int64_t> lengths;   // (B)
};

template <class T>
struct HookCaller {
    const HookSet<T>* hooks;
    const RowLayout* batch = nullptr;  // null: one sequence, shapes without a batch dimension
    // Offers `data` (row-major, `shape`) to the hooks under `name`. `shape` starts with the rows of the
    // activation; in a batch its rows B·T are offered as two dimensions [B, T, …] (TransformerLens).
    void operator()(const std::string& name, T* data, std::vector<std::int64_t> shape) const {
        if (!wants(name)) return;
        if (batch) {
            shape.front() = batch->positions;
            shape.insert(shape.begin(), batch->batch);
        }
        hooks->run(name, ActivationRef<T>{data, std::move(shape)});
    }
    // Offers `data` with `shape` as given (the attention scores and pattern, whose rows are not positions).
    void exact(const std::string& name, T* data, std::vector<std::int64_t> shape) const {
        if (wants(name)) hooks->run(name, ActivationRef<T>{data, std::move(shape)});
    }
    // As exact(), for an activation held in `m` (row-major, `shape`) that the caller reads no more: an
    // observer may take m's memory (ActivationRef::donor), leaving m with other memory of any size.
    void donate(const std::string& name, Mat<T>& m, std::vector<std::int64_t> shape) const {
        if (wants(name)) hooks->run(name, ActivationRef<T>{m.data(), std::move(shape), &m});
    }
    bool wants(const std::string& name) const { return hooks && hooks->wants(name); }
    bool may_change(const std::string& name) const { return hooks && hooks->may_change(name); }
    // Sequences of the (rows × …) activations: their number, first row and length.
    std::int64_t sequences() const { return batch ? batch->batch : 1; }
    std::int64_t first_row(std::int64_t b) const { return batch ? b * batch->positions : 0; }
    std::int64_t length(std::int64_t b, std::int64_t rows) const { return batch ? batch->lengths[std::size_t(b)] : rows; }
};

inline void check_tokens(const Config& c, const std::vector<std::int32_t>& tokens) {
    require(!tokens.empty(), "forward: empty token sequence");
    require(std::int64_t(tokens.size()) <= c.context_length,
            "forward: " + std::to_string(tokens.size()) + " tokens exceed the context length " +
                std::to_string(c.context_length));
    for (std::size_t i = 0; i < tokens.size(); ++i)
        require(tokens[i] >= 0 && tokens[i] < c.vocab_size,
                "forward: token id " + std::to_string(tokens[i]) + " at position " + std::to_string(i) +
                    " is outside the vocabulary [0, " + std::to_string(c.vocab_size) + ")");
}

// Activations of one block, kept for the next block: same shapes every layer, so no layer after the
// first allocates (fresh pages of large buffers cost page faults at every layer otherwise).
template <class T>
struct BlockScratch {
    Mat<T> xn, out, masked, post_norm;            // (T, d)
    Mat<T> q, k, v, z, slot_scores;               // attention; slot_scores (H, T)
    Mat<T> scores, pattern;                       // (H·T, T), only when a hook asks for them
    Mat<T> gate, up, hidden;                      // FFN (T, d_ff)
    Mat<T> router_logits;                         // MoE (T, E)
    Mat<T> expert_weights, chosen_experts;        // MoE (T, k)
    Mat<T> expert_in, expert_out;                 // MoE (T_e, d): one expert's tokens, gathered
    Mat<T> qb, kb, vb, zb;                        // a batch's sequence b: its rows of q, k, v, z (T_b, ·)
    std::vector<std::int64_t> expert_rows;        // MoE: (token, slot) pairs grouped by expert, t·k + i
    std::vector<std::int64_t> expert_start;       // MoE (E + 1): expert e owns expert_rows[start[e], start[e + 1])
};

// A sparse mixture of SwiGLU experts (FfnKind::moe), Mixtral's and OLMoE's MoE block:
//   logits = xn W_routerᵀ                                        hook_router_logits  (T, E)
//   (e_i, w_i) = top-k of softmax(logits), renormalised or not   hook_expert_weights (T, k), hook_chosen_experts (T, k)
//   out_t = Σ_i w_i · W_down,e (act(W_gate,e xn_t) ⊙ W_up,e xn_t)
// The hooks run in that order and the forward continues with what they leave: rewritten logits change
// the routing (they run before the top-k), rewritten weights the mixing, rewritten expert indices
// (integers in [0, E)) the experts. Each expert runs one GEMM over the tokens routed to it; the
// experts' contributions are added in increasing expert order, as Hugging Face does.
template <class T>
void moe_block_forward(Mat<T>& out, const Mat<T>& xn, const LayerWeights<T>& w, const Config& c,
                       const BlockNames& names, const HookCaller<T>& hook, BlockScratch<T>& s) {
    const std::int64_t n = xn.rows(), d = c.d_model, E = c.n_experts, k = c.n_experts_used;
    static const Vec<T> no_bias;
    require(std::int64_t(w.experts.size()) == E && w.w_router.rows() == E,
            "forward: a moe FFN needs W_router and " + std::to_string(E) + " experts", {"", names.prefix + "mlp.W_router", {}});
    linear_forward(s.router_logits, xn, w.w_router, no_bias);  // (T, E)
    hook(names[HookId::router_logits], s.router_logits.data(), {n, E});
    moe_router_forward(s.expert_weights, s.chosen_experts, s.router_logits, k, c.moe_normalize_topk);  // (T, k) each
    hook(names[HookId::expert_weights], s.expert_weights.data(), {n, k});
    hook(names[HookId::chosen_experts], s.chosen_experts.data(), {n, k});

    // Group the (token, slot) pairs by expert: a counting sort over the chosen indices.
    auto expert_of = [&](std::int64_t t, std::int64_t i) {
        const T v = s.chosen_experts(t, i);
        const auto e = std::int64_t(std::llround(double(v)));
        require(double(e) == double(v) && e >= 0 && e < E,
                "forward: chosen expert " + std::to_string(double(v)) + " at position " + std::to_string(t) +
                    " is not an expert index in [0, " + std::to_string(E) + ")",
                {"", names[HookId::chosen_experts], {}});
        return e;
    };
    s.expert_start.assign(std::size_t(E + 1), 0);
    for (std::int64_t t = 0; t < n; ++t)
        for (std::int64_t i = 0; i < k; ++i) ++s.expert_start[std::size_t(expert_of(t, i) + 1)];
    for (std::int64_t e = 0; e < E; ++e) s.expert_start[std::size_t(e + 1)] += s.expert_start[std::size_t(e)];
    s.expert_rows.resize(std::size_t(n * k));
    {
        std::vector<std::int64_t> next(s.expert_start.begin(), s.expert_start.end() - 1);
        for (std::int64_t t = 0; t < n; ++t)
            for (std::int64_t i = 0; i < k; ++i) s.expert_rows[std::size_t(next[std::size_t(expert_of(t, i))]++)] = t * k + i;
    }

    out.setZero(n, d);
    for (std::int64_t e = 0; e < E; ++e) {
        const std::int64_t begin = s.expert_start[std::size_t(e)], m = s.expert_start[std::size_t(e + 1)] - begin;
        if (m == 0) continue;
        const ExpertWeights<T>& x = w.experts[std::size_t(e)];
        s.expert_in.resize(m, d);
        for (std::int64_t j = 0; j < m; ++j) s.expert_in.row(j) = xn.row(s.expert_rows[std::size_t(begin + j)] / k);
        linear_weight(s.gate, s.expert_in, x.w_gate, x.w_gate_file, no_bias, w.compute);  // (T_e, d_ff); dense or file-type
        linear_weight(s.up, s.expert_in, x.w_up, x.w_up_file, no_bias, w.compute);        // (T_e, d_ff)
        activation_forward(s.hidden, s.gate, c.activation);
        s.hidden.array() *= s.up.array();                                                  // w2(silu(w1 x) * w3 x)
        linear_weight(s.expert_out, s.hidden, x.w_down, x.w_down_file, no_bias, w.compute);  // (T_e, d)
        for (std::int64_t j = 0; j < m; ++j) {
            const std::int64_t r = s.expert_rows[std::size_t(begin + j)], t = r / k, i = r % k;
            out.row(t) += s.expert_out.row(j) * s.expert_weights(t, i);
        }
    }
}

// Multi-head causal attention of one block. `xn` (T × d) is the block input after its norm; writes
// the block's output (T × d) to `out`. When a hook asks for the scores or the pattern, they are
// materialised as (H·T × T) and the hooks may rewrite them; otherwise causal_attention_forward computes
// the same z without them, skipping the masked half.
// In a batch (hook.batch, model/batch.hpp) the projections run on all B·T rows at once, while RoPE and
// the attention run on each sequence's own rows [b·T, b·T + T_b) exactly as for that sequence alone
// (positions from 0, keys of other sequences and padding never seen); scores and pattern are then
// (B·H·T × T) with −∞ / 0 outside each sequence's T_b × T_b block, and z is 0 at padded rows.
template <class T>
void attention_block_forward(Mat<T>& out, const Mat<T>& xn, const LayerWeights<T>& w, const Config& c, std::int64_t layer,
                             const BlockNames& names, const HookCaller<T>& hook, BlockScratch<T>& s) {
    const std::int64_t n = xn.rows(), H = c.n_heads, G = c.n_kv_heads, dh = c.head_dim, group = H / G;
    const ScoreRule rule{c.window_at(layer), c.attn_scale, c.attn_softcap};
    Mat<T>& q = s.q;
    Mat<T>& k = s.k;
    Mat<T>& v = s.v;
    {
        const ScopedBf16Reuse reuse(xn);  // in bf16, xn is converted once for the three products
        linear_weight(q, xn, w.wq, w.wq_file, w.bq, w.compute);  // (T, H·d_h)
        linear_weight(k, xn, w.wk, w.wk_file, w.bk, w.compute);  // (T, G·d_h)
        linear_weight(v, xn, w.wv, w.wv_file, w.bv, w.compute);  // (T, G·d_h)
    }
    if (c.qk_norm && c.qk_norm_scope == QkNormScope::head) {
        head_rmsnorm_forward(q, w.q_norm, H, dh, c.norm_eps);
        head_rmsnorm_forward(k, w.k_norm, G, dh, c.norm_eps);
    } else if (c.qk_norm) {  // one RMSNorm over the whole projection (OLMo-2)
        head_rmsnorm_forward(q, w.q_norm, 1, H * dh, c.norm_eps);
        head_rmsnorm_forward(k, w.k_norm, 1, G * dh, c.norm_eps);
    }
    hook(names[HookId::q], q.data(), {n, H, dh});
    hook(names[HookId::k], k.data(), {n, G, dh});
    hook(names[HookId::v], v.data(), {n, G, dh});

    // The sequences: one (all n rows) or a batch's B, sequence b at rows [row0, row0 + len), positions 0…len − 1.
    const bool batched = hook.batch != nullptr;
    const std::int64_t B = hook.sequences(), P = batched ? hook.batch->positions : n;
    // Sequence b's rows of `m` as a matrix of its own: `m` itself for one sequence, else copied to `buffer`.
    auto rows_of = [&](const Mat<T>& m, std::int64_t b, Mat<T>& buffer) -> const Mat<T>& {
        if (!batched) return m;
        buffer = m.middleRows(hook.first_row(b), hook.length(b, n));
        return buffer;
    };
    if (c.positions == PositionKind::rope) {
        auto rope = [&](Mat<T>& m, std::int64_t heads) {
            for (std::int64_t b = 0; b < B; ++b) {
                if (!batched) { rope_forward(m, heads, dh, c.rope_base_at(layer), c.rope_layout, 0, c.rope_dims(), c.rope_freq_divisors); continue; }
                s.zb = m.middleRows(hook.first_row(b), hook.length(b, n));
                rope_forward(s.zb, heads, dh, c.rope_base_at(layer), c.rope_layout, 0, c.rope_dims(), c.rope_freq_divisors);
                m.middleRows(hook.first_row(b), hook.length(b, n)) = s.zb;
            }
        };
        rope(q, H);
        rope(k, G);
        hook(names[HookId::rot_q], q.data(), {n, H, dh});
        hook(names[HookId::rot_k], k.data(), {n, G, dh});
    }

    // Extra softmax slot: off-by-one adds e^0 to the denominator; KV-bias adds a learnable key/value.
    const bool has_slot = c.attention == AttentionKind::softmax_off_by_one || c.attention == AttentionKind::kv_bias;
    Mat<T>& slot_scores = s.slot_scores;  // (H, T) of the sequence at hand
    auto make_slot_scores = [&](const Mat<T>& qb) {
        if (!has_slot) return;
        slot_scores.setZero(H, qb.rows());
        if (c.attention == AttentionKind::kv_bias)
            for (std::int64_t h = 0; h < H; ++h)
                slot_scores.row(h) = (qb.middleCols(h * dh, dh) * w.sink_kv.row(0).segment((h / group) * dh, dh).transpose())
                                         .transpose() * rule.scale_for<T>(dh);
    };

    Mat<T>& z = s.z;  // (T, H·d_h)
    const bool kv_bias = c.attention == AttentionKind::kv_bias;
    if (batched) z.setZero(n, H * dh);
    if (hook.wants(names[HookId::attn_scores]) || hook.wants(names[HookId::pattern])) {
        Mat<T>& scores = s.scores;    // (H, T, T), or (B, H, T, T)
        Mat<T>& pattern = s.pattern;  // (H, T, T), or (B, H, T, T)
        if (batched || hook.wants(names[HookId::attn_scores])) scores.resize(B * H * P, P);
        pattern.resize(B * H * P, P);
        if (batched) { scores.setConstant(-std::numeric_limits<T>::infinity()); pattern.setZero(); }
        const bool bf16 = attention_in_bf16<T>();  // read here: the per-head workers do not have the setting
        // Head h of sequence b: its (T_b × T_b) block of the scores or pattern.
        auto head_block = [&](Mat<T>& m, std::int64_t b, std::int64_t h) {
            const std::int64_t len = hook.length(b, n);
            return m.block((b * H + h) * P, 0, len, len);
        };
        // Only the pattern is asked for: computed by query blocks over the keys each may see, without the
        // scores matrix or the masked half (the same numbers). When its hooks only read it (training's
        // tape), z is made with it, block by block; a hook that may change it (an intervention) gets it
        // before z is computed from it.
        const bool blockwise = !batched && !hook.wants(names[HookId::attn_scores]);
        const bool z_with_pattern = blockwise && !hook.may_change(names[HookId::pattern]);
        if (blockwise) {
            make_slot_scores(q);
            causal_pattern_forward(pattern, q, k, H, G, dh, rule, has_slot ? &slot_scores : nullptr, bf16,
                                   z_with_pattern ? &z : nullptr, &v, kv_bias ? w.sink_kv.row(1).data() : nullptr);
        } else {
            for (std::int64_t b = 0; b < B; ++b) {
                const Mat<T>& qb = rows_of(q, b, s.qb);
                const Mat<T>& kb = rows_of(k, b, s.kb);
#pragma omp parallel for schedule(static) if (H > 1)
                for (std::int64_t h = 0; h < H; ++h)
                    attention_scores_forward<T>(head_block(scores, b, h), qb.middleCols(h * dh, dh),
                                                kb.middleCols((h / group) * dh, dh), rule, bf16);
            }
            if (batched) hook.exact(names[HookId::attn_scores], scores.data(), {B, H, P, P});
            else hook.exact(names[HookId::attn_scores], scores.data(), {H, n, n});
            for (std::int64_t b = 0; b < B; ++b) {
                make_slot_scores(rows_of(q, b, s.qb));
#pragma omp parallel for schedule(static) if (H > 1)
                for (std::int64_t h = 0; h < H; ++h)
                    softmax_forward<T>(head_block(pattern, b, h), head_block(scores, b, h),
                                       has_slot ? slot_scores.row(h).data() : nullptr);
            }
        }
        if (batched) hook.exact(names[HookId::pattern], pattern.data(), {B, H, P, P});
        else if (z_with_pattern) hook.donate(names[HookId::pattern], pattern, {H, n, n});  // z is already made
        else hook.exact(names[HookId::pattern], pattern.data(), {H, n, n});

        for (std::int64_t b = 0; b < B && !z_with_pattern; ++b) {
            const Mat<T>& vb = rows_of(v, b, s.vb);
            Mat<T>& zb = batched ? s.zb : z;
            zb.resize(hook.length(b, n), H * dh);
#pragma omp parallel for schedule(static) if (H > 1)
            for (std::int64_t h = 0; h < H; ++h) {
                attention_product(zb.middleCols(h * dh, dh), head_block(pattern, b, h), vb.middleCols((h / group) * dh, dh),
                                  false, bf16);
                if (kv_bias) {
                    // The slot's weight is what the real keys did not take: 1 − Σ_j p[t, j].
                    const auto slot_p = (T(1) - head_block(pattern, b, h).rowwise().sum().array()).matrix();
                    zb.middleCols(h * dh, dh).noalias() += slot_p * w.sink_kv.row(1).segment((h / group) * dh, dh);
                }
            }
            if (batched) z.middleRows(hook.first_row(b), zb.rows()) = zb;
        }
    } else {
        for (std::int64_t b = 0; b < B; ++b) {
            const Mat<T>& qb = rows_of(q, b, s.qb);
            make_slot_scores(qb);
            Mat<T>& zb = batched ? s.zb : z;
            causal_attention_forward(zb, qb, rows_of(k, b, s.kb), rows_of(v, b, s.vb), H, G, dh, rule,
                                     has_slot ? &slot_scores : nullptr, kv_bias ? w.sink_kv.row(1).data() : nullptr);
            if (batched) z.middleRows(hook.first_row(b), zb.rows()) = zb;
        }
    }

    if (c.gate != GateKind::none) {
        const bool per_head = c.gate == GateKind::per_head || c.gate == GateKind::static_per_head;
        const bool conditional = c.gate == GateKind::per_head || c.gate == GateKind::per_channel;
        Mat<T> g;  // (T, H) or (T, H·d_h)
        if (conditional) linear_forward(g, xn, w.w_attn_gate, w.b_attn_gate);
        else g = w.b_attn_gate.transpose().replicate(n, 1);
        g = g.unaryExpr([](T s) { return T(1) / (T(1) + std::exp(-s)); });
        hook(names[HookId::gate], g.data(), {n, g.cols()});
        for (std::int64_t h = 0; h < H; ++h) {
            if (per_head) z.middleCols(h * dh, dh).array().colwise() *= g.col(h).array();
            else z.middleCols(h * dh, dh).array() *= g.middleCols(h * dh, dh).array();
        }
    }
    hook(names[HookId::z], z.data(), {n, H, dh});
    linear_weight(out, z, w.wo, w.wo_file, w.bo, w.compute);
}

// The FFN of one block: `xn` (T × d) is its input after its norm; writes its output to `out`.
template <class T>
void ffn_block_forward(Mat<T>& out, const Mat<T>& xn, const LayerWeights<T>& w, const Config& c,
                       const BlockNames& names, const HookCaller<T>& hook, BlockScratch<T>& s) {
    const std::int64_t n = xn.rows();
    static const Vec<T> no_bias;
    switch (c.ffn) {
        case FfnKind::swiglu: {
            Mat<T>& gate = s.gate;
            Mat<T>& up = s.up;
            Mat<T>& hidden = s.hidden;
            {
                const ScopedBf16Reuse reuse(xn);  // in bf16, xn is converted once for both products
                linear_weight(gate, xn, w.w_gate, w.w_gate_file, no_bias, w.compute);  // (T, d_ff)
                linear_weight(up, xn, w.w_up, w.w_up_file, w.b_up, w.compute);       // (T, d_ff)
            }
            hook(names[HookId::mlp_pre], gate.data(), {n, c.d_ff});
            hook(names[HookId::mlp_pre_linear], up.data(), {n, c.d_ff});
            activation_forward(hidden, gate, c.activation);
            parallel_rows(n, c.d_ff * std::int64_t(sizeof(T)), [&](std::int64_t b, std::int64_t e) {
                hidden.middleRows(b, e - b).array() *= up.middleRows(b, e - b).array();  // w2(silu(w1 x) * w3 x)
            });
            hook(names[HookId::mlp_post], hidden.data(), {n, c.d_ff});
            linear_weight(out, hidden, w.w_down, w.w_down_file, w.b_down, w.compute);
            return;
        }
        case FfnKind::gelu: {
            Mat<T>& pre = s.up;
            Mat<T>& hidden = s.hidden;
            linear_weight(pre, xn, w.w_up, w.w_up_file, w.b_up, w.compute);
            hook(names[HookId::mlp_pre], pre.data(), {n, c.d_ff});
            activation_forward(hidden, pre, c.activation);
            hook(names[HookId::mlp_post], hidden.data(), {n, c.d_ff});
            linear_weight(out, hidden, w.w_down, w.w_down_file, w.b_down, w.compute);
            return;
        }
        case FfnKind::linear: linear_weight(out, xn, w.w_down, w.w_down_file, w.b_down, w.compute); return;
        case FfnKind::none: out = Mat<T>::Zero(n, c.d_model); return;
        case FfnKind::moe: moe_block_forward(out, xn, w, c, names, hook, s); return;
    }
}

// Force-sink (Config::force_sink_channels = k, Paper A v2): the input of a pre-norm with channels
// [0, k) zeroed at every position t ≥ 1, written to `buffer`; x itself when k = 0. In a batch `positions`
// is T: position 0 of every sequence (rows b·T) keeps its channels.
template <class T>
const Mat<T>& force_sink_input(const Mat<T>& x, const Config& c, Mat<T>& buffer, std::int64_t positions = 0) {
    if (c.force_sink_channels <= 0 || x.rows() < 2) return x;
    buffer = x;
    if (positions <= 0 || positions >= x.rows()) buffer.bottomRows(x.rows() - 1).leftCols(c.force_sink_channels).setZero();
    else
        for (std::int64_t r = 0; r < x.rows(); ++r)
            if (r % positions != 0) buffer.row(r).head(c.force_sink_channels).setZero();
    return buffer;
}

// The arithmetic of the dense products of one forward with `w`, on this thread while it lives: bf16 when
// the weights ask for it (Weights::precision), else whatever the thread has set (a Trainer worker's
// ScopedMatmulPrecision), untouched. Epoch 0 (layers/bf16_matmul.hpp): every product converts its weight
// to bf16 again and keeps no copy. A kept copy of every weight would cost half the float32 weights' memory
// for the thread's lifetime, to save what measured 0.04 s of a 0.54 s SmolLM2 forward at 512 tokens
// (bench/run_forward_bench.sh, 2026-12-01), and would go stale if the caller edits a weight between
// forwards (an ablation). Where the weights will not change, WeightStorage::bf16 (model/bf16_weights.hpp)
// rounds them once instead and drops the float32 copy: the same products, bit for bit.
class ForwardPrecision {
public:
    template <class T>
    explicit ForwardPrecision(const Weights<T>& w) : saved_(matmul_setting_slot()), set_(w.precision == MatmulPrecision::bf16) {
        if (set_) matmul_setting_slot() = {MatmulPrecision::bf16, 0, false};
    }
    ~ForwardPrecision() {
        if (set_) matmul_setting_slot() = saved_;
    }
    ForwardPrecision(const ForwardPrecision&) = delete;
    ForwardPrecision& operator=(const ForwardPrecision&) = delete;

private:
    MatmulSetting saved_;
    bool set_;
};

// The CPU side of block_wiring.hpp: its buffers are the block's scratch matrices.
template <class T>
struct CpuBlockOps {
    Mat<T>& x;
    const LayerWeights<T>& w;
    const Config& c;
    std::int64_t layer;
    const BlockNames& names;
    const HookCaller<T>& hooks;
    BlockScratch<T>& s;

    Mat<T>& at(Buf b) {
        switch (b) {
            case Buf::x: return x;
            case Buf::xn_attn: case Buf::xn_ffn: return s.xn;  // one at a time on the CPU
            case Buf::out: return s.out;
            case Buf::side: return s.post_norm;
        }
        return x;
    }
    void norm(NormSlot slot, Sublayer sub, Buf dst, Buf src) {
        const bool attn = sub == Sublayer::attention;
        if (slot == NormSlot::first) norm_forward(at(dst), force_sink_input(at(src), c, s.masked, hooks.batch ? hooks.batch->positions : 0), attn ? w.attn_norm : w.ffn_norm, c.norm, c.norm_eps);
        else norm_forward(at(dst), at(src), attn ? w.attn_post_norm : w.ffn_post_norm, c.norm, c.norm_eps);
    }
    void run(Sublayer sub, Buf dst, Buf src) {
        if (sub == Sublayer::attention) attention_block_forward(at(dst), at(src), w, c, layer, names, hooks, s);
        else ffn_block_forward(at(dst), at(src), w, c, names, hooks, s);
    }
    void add(Buf dst, Buf src) { at(dst) += at(src); }
    void copy(Buf dst, Buf src) { at(dst) = at(src); }
    void swap(Buf a, Buf b) { at(a).swap(at(b)); }
    void hook(HookId, const std::string& name, Buf b) { hooks(name, at(b).data(), {at(b).rows(), at(b).cols()}); }
};

// One transformer block, in place on the residual stream x (T × d).
template <class T>
void block_forward(Mat<T>& x, const LayerWeights<T>& w, const Config& c, std::int64_t layer, const HookCaller<T>& hook,
                   BlockScratch<T>& s) {
    const BlockNames names(layer);
    CpuBlockOps<T> ops{x, w, c, layer, names, hook, s};
    wire_block(ops, c, names);
}

}  // namespace detail

// The end of the forward, usable on any residual (the logit lens, analysis/logit_lens.hpp; direct logit
// attribution, analysis/logit_attribution.hpp): the final norm, then the unembedding. The forward runs
// exactly these two on its last residual stream.

// Whether the model has a final norm (ln_final): every placement but post-norm, whose blocks end in their norm.
inline bool has_final_norm(const Config& c) { return c.norm_placement != NormPlacement::post; }

// xn = N_final(x) for residual rows x (n × d): RMSNorm, LayerNorm or DynamicTanh with w.final_norm;
// a copy of x when the model has no final norm (post-norm placement).
template <class T>
void final_norm_forward(Mat<T>& xn, const Mat<T>& x, const Config& c, const Weights<T>& w) {
    if (!has_final_norm(c)) { xn = x; return; }
    norm_forward(xn, x, w.final_norm, c.norm, c.norm_eps);
}

// logits = xn W_Uᵀ (n × vocab) with the output head (lm_head, or the tied token embedding; dense or a view;
// the model has no unembedding bias), then c·tanh(logits/c) when the model caps its logits (Gemma 2) and
// `cap` is true. `xn` is the final norm's output (final_norm_forward).
template <class T>
void unembed_forward(Mat<T>& logits, const Mat<T>& xn, const Config& c, const Weights<T>& w, bool cap = true) {
    detail::head_forward(logits, xn, w);
    if (cap) softcap(logits, c.logit_softcap);
}

// forward() writing its logits into `logits`, whose memory is reused when it already has the shape
// (T × vocab): a loop over many sequences of one length then allocates no new logits. The (T × vocab)
// float32 logits are large (100 MB for SmolLM2 at 512 tokens); a fresh matrix is fresh pages from the
// kernel, and faulting them in measured about 0.03 s of a 0.28 s forward (bench/bench_forward.cpp's
// fresh_* fields, 2026-12-01). Empty when the options skip the logits.
template <class T>
void forward_into(Mat<T>& logits, const Config& c, const Weights<T>& w, const std::vector<std::int32_t>& tokens,
                  const HookSet<T>* hooks = nullptr, ForwardOptions options = {}) {
    detail::check_tokens(c, tokens);
    const detail::ForwardPrecision precision(w);  // Weights::precision on this thread
    const std::int64_t sink = c.attention == AttentionKind::sink_token ? 1 : 0;
    if (sink) {
        require(std::int64_t(tokens.size()) + 1 <= c.context_length,
                "forward: " + std::to_string(tokens.size()) + " tokens plus the sink token exceed the context length " +
                    std::to_string(c.context_length));
        require(w.sink_embed.size() == c.d_model, "forward: sink_token attention needs a sink_embed of d_model entries",
                {"", "sink_embed", {}});
    }
    const detail::HookCaller<T> hook{hooks};
    const std::int64_t n = std::int64_t(tokens.size()) + sink, d = c.d_model;

    Mat<T> x(n, d);  // (T, d) residual stream (T + 1 rows with a sink token, the sink first)
    if (sink) x.row(0) = w.sink_embed.transpose();
    for (std::int64_t t = sink; t < n; ++t) detail::embed_row(x.row(t), w, tokens[t - sink]);
    if (c.embed_scale != 1) x.bottomRows(n - sink) *= T(c.embed_scale);  // Gemma: √d_model, rounded to T
    hook(hook_spec(HookId::embed).name, x.data(), {n, d});
    if (c.positions == PositionKind::learned) {
        Mat<T> pe = w.pos_embed.topRows(n);
        hook(hook_spec(HookId::pos_embed).name, pe.data(), {n, d});
        x += pe;
    }
    const std::int64_t last = options.last_layer < 0 ? c.n_layers - 1 : std::min(options.last_layer, c.n_layers - 1);
    detail::BlockScratch<T> scratch;
    for (std::int64_t l = 0; l <= last; ++l) detail::block_forward(x, w.layers[l], c, l, hook, scratch);
    if (last != c.n_layers - 1 || !options.logits) {
        logits.resize(0, 0);
        return;
    }

    if (has_final_norm(c)) {
        Mat<T> xn;
        final_norm_forward(xn, x, c, w);
        hook(hook_spec(HookId::ln_final).name, xn.data(), {n, d});
        x.swap(xn);
    }
    if (sink) { const Mat<T> real = x.bottomRows(n - 1); unembed_forward(logits, real, c, w); }
    else unembed_forward(logits, x, c, w);  // (T, vocab)
    hook(hook_spec(HookId::logits).name, logits.data(), {n - sink, c.vocab_size});
}

// Runs the model over `tokens` (BOS, if wanted, must already be there) and returns the logits
// (T × vocab), or an empty matrix when options say so. Hooks see every named activation.
// With AttentionKind::sink_token the learnable sink embedding is prepended as position 0: the residual
// stream and every hook have T + 1 positions (the sink first), the logits only the T real tokens.
template <class T>
Mat<T> forward(const Config& c, const Weights<T>& w, const std::vector<std::int32_t>& tokens,
               const HookSet<T>* hooks = nullptr, ForwardOptions options = {}) {
    Mat<T> logits;
    forward_into(logits, c, w, tokens, hooks, options);
    return logits;
}

}  // namespace sinkscope::model
