// Config: every hyperparameter and architectural switch of the one sinkscope transformer.
//
// One model, not two: the Llama family (RMSNorm, SwiGLU, RoPE, GQA, optional QKV bias (Qwen2) and
// per-head QK RMSNorm (Qwen3)), the GPT-2 family (LayerNorm, GELU, learned positions, biases) and the
// variants the papers ablate (norm placement, DynamicTanh, FFN kind, attention kind, output gates,
// sliding window, positional kind) are all switches of this struct. `validate()` rejects impossible
// combinations with a message that names the field.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>

#include "sinkscope/core/error.hpp"

namespace sinkscope::model {

enum class NormKind { rmsnorm, layernorm, dynamic_tanh };
// pre:      x + F(Norm(x))                 (Llama, GPT-2)
// post:     Norm(x + F(x))                 (original transformer)
// sandwich: x + Norm_post(F(Norm(x)))      (Paper B's "sandwich norm")
enum class NormPlacement { pre, post, sandwich };
enum class FfnKind { swiglu, gelu, linear, none };
// softmax:            p = softmax(s)
// softmax_off_by_one: p_j = e^{s_j} / (1 + Σ_k e^{s_k})      (= a zero-key, zero-value sink)
// sink_token:         a learnable embedding (Weights::sink_embed) prepended as an extra position 0 of
//                     the residual stream (StreamingLLM's pre-trained "sink token"); it runs through
//                     every layer, hooks show it as position 0, and the logits omit it
// kv_bias:            learnable key and value bias vectors per layer (LayerWeights::sink_kv), an extra
//                     softmax slot that never enters the residual stream
enum class AttentionKind { softmax, softmax_off_by_one, sink_token, kv_bias };
// Sigmoid gate on the attention output before o_proj (Qiu et al.): per head or per channel,
// conditional on the input (σ(x W_g)) or unconditional (σ(b)).
enum class GateKind { none, per_head, per_channel, static_per_head, static_per_channel };
enum class PositionKind { rope, learned, none };
// interleaved: rotate pairs (2i, 2i+1) — GGUF's layout for llama-arch checkpoints (GPT-J style).
// half_split:  rotate pairs (i, i + d_h/2) — Hugging Face's layout (GPT-NeoX style).
enum class RopeLayout { interleaved, half_split };
enum class Activation { silu, gelu_tanh, gelu_erf };

inline const char* to_string(NormKind k) {
    switch (k) { case NormKind::rmsnorm: return "rmsnorm"; case NormKind::layernorm: return "layernorm";
                 case NormKind::dynamic_tanh: return "dynamic_tanh"; }
    return "?";
}
inline const char* to_string(NormPlacement k) {
    switch (k) { case NormPlacement::pre: return "pre"; case NormPlacement::post: return "post";
                 case NormPlacement::sandwich: return "sandwich"; }
    return "?";
}
inline const char* to_string(FfnKind k) {
    switch (k) { case FfnKind::swiglu: return "swiglu"; case FfnKind::gelu: return "gelu";
                 case FfnKind::linear: return "linear"; case FfnKind::none: return "none"; }
    return "?";
}
inline const char* to_string(AttentionKind k) {
    switch (k) { case AttentionKind::softmax: return "softmax"; case AttentionKind::softmax_off_by_one: return "softmax_off_by_one";
                 case AttentionKind::sink_token: return "sink_token"; case AttentionKind::kv_bias: return "kv_bias"; }
    return "?";
}
inline const char* to_string(GateKind k) {
    switch (k) { case GateKind::none: return "none"; case GateKind::per_head: return "per_head";
                 case GateKind::per_channel: return "per_channel"; case GateKind::static_per_head: return "static_per_head";
                 case GateKind::static_per_channel: return "static_per_channel"; }
    return "?";
}
inline const char* to_string(PositionKind k) {
    switch (k) { case PositionKind::rope: return "rope"; case PositionKind::learned: return "learned";
                 case PositionKind::none: return "none"; }
    return "?";
}
inline const char* to_string(RopeLayout k) { return k == RopeLayout::interleaved ? "interleaved" : "half_split"; }
inline const char* to_string(Activation a) {
    switch (a) { case Activation::silu: return "silu"; case Activation::gelu_tanh: return "gelu_tanh";
                 case Activation::gelu_erf: return "gelu_erf"; }
    return "?";
}

struct Config {
    std::string architecture = "llama";   // llama | qwen2 | qwen3 | mistral | gpt2 | sinkscope
    std::int64_t n_layers = 0;
    std::int64_t d_model = 0;
    std::int64_t n_heads = 0;
    std::int64_t n_kv_heads = 0;          // grouped-query attention: n_heads % n_kv_heads == 0
    std::int64_t head_dim = 0;            // usually d_model / n_heads, but Qwen3 decouples it
    std::int64_t d_ff = 0;
    std::int64_t vocab_size = 0;
    std::int64_t context_length = 0;      // positions beyond this are rejected

    NormKind norm = NormKind::rmsnorm;
    NormPlacement norm_placement = NormPlacement::pre;
    double norm_eps = 1e-5;
    bool qk_norm = false;                 // per-head RMSNorm of q and k before RoPE (Qwen3)
    double dyt_alpha0_attn = 0.5;         // DynamicTanh initial α for attention-block norms
    double dyt_alpha0_other = 0.5;        // … for FFN-block and final norms

    FfnKind ffn = FfnKind::swiglu;
    Activation activation = Activation::silu;  // of the gate (SwiGLU) or of the hidden layer (GELU FFN)

    AttentionKind attention = AttentionKind::softmax;
    GateKind gate = GateKind::none;
    std::int64_t sliding_window = 0;      // 0: full causal; w > 0: query t sees keys (t-w, t]
    // Paper A v2 "force-sink" channel masking: channels [0, k) of the residual stream are reserved for
    // position 0. Before every block's pre-norm (ln1, ln2; not ln_final) the norm input of positions
    // t ≥ 1 has those channels set to zero, so only position 0 can write a direction there. 0: off.
    std::int64_t force_sink_channels = 0;

    PositionKind positions = PositionKind::rope;
    RopeLayout rope_layout = RopeLayout::half_split;
    double rope_base = 10000.0;

    bool qkv_bias = false;                // biases of q, k, v projections (Qwen2, GPT-2)
    bool out_bias = false;                // bias of the attention output projection (GPT-2)
    bool mlp_bias = false;                // biases of the FFN projections (GPT-2)
    bool norm_bias = false;               // LayerNorm has a bias (GPT-2); RMSNorm never
    bool tied_embeddings = true;          // output head = token embedding

    std::int64_t q_dim() const { return n_heads * head_dim; }
    std::int64_t kv_dim() const { return n_kv_heads * head_dim; }
    std::int64_t n_sub_blocks() const { return 2 * n_layers; }

    void validate() const {
        auto bad = [](const std::string& m) { throw Error("invalid config: " + m); };
        if (n_layers <= 0) bad("n_layers must be > 0");
        if (d_model <= 0) bad("d_model must be > 0");
        if (n_heads <= 0) bad("n_heads must be > 0");
        if (n_kv_heads <= 0 || n_heads % n_kv_heads != 0)
            bad("n_heads (" + std::to_string(n_heads) + ") must be a multiple of n_kv_heads (" + std::to_string(n_kv_heads) + ")");
        if (head_dim <= 0) bad("head_dim must be > 0");
        if (positions == PositionKind::rope && head_dim % 2 != 0) bad("RoPE needs an even head_dim, got " + std::to_string(head_dim));
        if (ffn != FfnKind::none && ffn != FfnKind::linear && d_ff <= 0) bad("d_ff must be > 0 for a " + std::string(to_string(ffn)) + " FFN");
        if (vocab_size <= 0) bad("vocab_size must be > 0");
        if (context_length <= 0) bad("context_length must be > 0");
        if (!(norm_eps >= 0)) bad("norm_eps must be >= 0");
        if (sliding_window < 0) bad("sliding_window must be >= 0");
        if (sliding_window > context_length)
            bad("sliding_window (" + std::to_string(sliding_window) + ") is larger than the context (" + std::to_string(context_length) + ")");
        if (norm_bias && norm != NormKind::layernorm && norm != NormKind::dynamic_tanh) bad("norm_bias needs LayerNorm or DynamicTanh");
        if (!(rope_base > 0)) bad("rope_base must be > 0");
        if (force_sink_channels < 0 || force_sink_channels > d_model)
            bad("force_sink_channels (" + std::to_string(force_sink_channels) + ") must lie in [0, d_model = " +
                std::to_string(d_model) + "]");
        if (force_sink_channels > 0 && norm_placement == NormPlacement::post)
            bad("force_sink_channels needs a pre-norm (pre or sandwich placement); post-norm has none");
        if (attention == AttentionKind::sink_token && context_length < 2)
            bad("a sink token takes one position of the context; context_length must be >= 2");
    }

    std::string describe() const {
        std::ostringstream os;
        os << architecture << ": L=" << n_layers << " d=" << d_model << " H=" << n_heads << " kvH=" << n_kv_heads
           << " d_h=" << head_dim << " d_ff=" << d_ff << " vocab=" << vocab_size << " ctx=" << context_length
           << " norm=" << to_string(norm) << "/" << to_string(norm_placement) << " eps=" << norm_eps
           << (qk_norm ? " qk_norm" : "") << " ffn=" << to_string(ffn) << "(" << to_string(activation) << ")"
           << " attn=" << to_string(attention) << " gate=" << to_string(gate)
           << " pos=" << to_string(positions);
        if (positions == PositionKind::rope) os << "(" << to_string(rope_layout) << ", base " << rope_base << ")";
        if (sliding_window) os << " window=" << sliding_window;
        if (force_sink_channels) os << " force_sink=" << force_sink_channels;
        os << (tied_embeddings ? " tied" : " untied");
        return os.str();
    }
};

}  // namespace sinkscope::model
