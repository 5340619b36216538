// The switches of the sinkscope transformer as enums (norm kind and placement, FFN kind, attention kind,
// output gate, positions, RoPE layout, activation), each with its names listed once: to_string, parsing
// (model/config_io.hpp), the CLI's choices and error messages all read those lists. Config
// (model/config.hpp) holds one of each; the layers (layers/) take them directly, which is why they live on
// this floor, below both. model:: re-exports every name, so model::NormKind and sinkscope::NormKind are one type.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace sinkscope {

enum class NormKind { rmsnorm, layernorm, dynamic_tanh };
// pre:      x + F(Norm(x))                 (Llama, GPT-2)
// post:     Norm(x + F(x))                 (original transformer)
// sandwich: x + Norm_post(F(Norm(x)))      (Paper B's "sandwich norm"; Gemma 2 and 3)
// output:   x + Norm_post(F(x))            (OLMo-2: a norm after each sub-layer, none before)
enum class NormPlacement { pre, post, sandwich, output };
// QK-norm over each head's d_h entries (Qwen3, Gemma 3) or over the whole projection (OLMo-2).
enum class QkNormScope { head, projection };
// swiglu: W_down (act(W_gate x) ⊙ W_up x);  gelu: W_down act(W_up x + b) + b;  linear: W_down x;  none: 0
// moe:    a sparse mixture of n_experts SwiGLU FFNs (Mixtral, OLMoE): p = softmax(W_router x) over all
//         experts, the n_experts_used most probable experts E_k (ties: the lowest index first), weights
//         w_k = p_k (÷ Σ_k p_k when moe_normalize_topk), FFN(x) = Σ_k w_k · SwiGLU_{E_k}(x)
enum class FfnKind { swiglu, gelu, linear, none, moe };
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

// Each enum's values and names, listed once: to_string, parsing (config_io.hpp), the CLI's choices and
// error messages all read these lists.
template <class E> struct EnumNames;  // specialised below: static constexpr std::pair<E, const char*> values[]
template <> struct EnumNames<NormKind> {
    static constexpr std::pair<NormKind, const char*> values[] = {
        {NormKind::rmsnorm, "rmsnorm"}, {NormKind::layernorm, "layernorm"}, {NormKind::dynamic_tanh, "dynamic_tanh"}};
};
template <> struct EnumNames<NormPlacement> {
    static constexpr std::pair<NormPlacement, const char*> values[] = {
        {NormPlacement::pre, "pre"}, {NormPlacement::post, "post"}, {NormPlacement::sandwich, "sandwich"},
        {NormPlacement::output, "output"}};
};
template <> struct EnumNames<QkNormScope> {
    static constexpr std::pair<QkNormScope, const char*> values[] = {{QkNormScope::head, "head"}, {QkNormScope::projection, "projection"}};
};
template <> struct EnumNames<FfnKind> {
    static constexpr std::pair<FfnKind, const char*> values[] = {
        {FfnKind::swiglu, "swiglu"}, {FfnKind::gelu, "gelu"}, {FfnKind::linear, "linear"}, {FfnKind::none, "none"},
        {FfnKind::moe, "moe"}};
};
template <> struct EnumNames<AttentionKind> {
    static constexpr std::pair<AttentionKind, const char*> values[] = {
        {AttentionKind::softmax, "softmax"}, {AttentionKind::softmax_off_by_one, "softmax_off_by_one"},
        {AttentionKind::sink_token, "sink_token"}, {AttentionKind::kv_bias, "kv_bias"}};
};
template <> struct EnumNames<GateKind> {
    static constexpr std::pair<GateKind, const char*> values[] = {
        {GateKind::none, "none"}, {GateKind::per_head, "per_head"}, {GateKind::per_channel, "per_channel"},
        {GateKind::static_per_head, "static_per_head"}, {GateKind::static_per_channel, "static_per_channel"}};
};
template <> struct EnumNames<PositionKind> {
    static constexpr std::pair<PositionKind, const char*> values[] = {
        {PositionKind::rope, "rope"}, {PositionKind::learned, "learned"}, {PositionKind::none, "none"}};
};
template <> struct EnumNames<RopeLayout> {
    static constexpr std::pair<RopeLayout, const char*> values[] = {
        {RopeLayout::interleaved, "interleaved"}, {RopeLayout::half_split, "half_split"}};
};
template <> struct EnumNames<Activation> {
    static constexpr std::pair<Activation, const char*> values[] = {
        {Activation::silu, "silu"}, {Activation::gelu_tanh, "gelu_tanh"}, {Activation::gelu_erf, "gelu_erf"}};
};

template <class E>
const char* enum_name(E e) {
    for (const auto& [value, name] : EnumNames<E>::values)
        if (value == e) return name;
    return "?";
}
// One plain overload per enum (a template would compete with CLI11's own to_string for enums).
inline const char* to_string(NormKind e) { return enum_name(e); }
inline const char* to_string(NormPlacement e) { return enum_name(e); }
inline const char* to_string(QkNormScope e) { return enum_name(e); }
inline const char* to_string(FfnKind e) { return enum_name(e); }
inline const char* to_string(AttentionKind e) { return enum_name(e); }
inline const char* to_string(GateKind e) { return enum_name(e); }
inline const char* to_string(PositionKind e) { return enum_name(e); }
inline const char* to_string(RopeLayout e) { return enum_name(e); }
inline const char* to_string(Activation e) { return enum_name(e); }
// The enum value named `name`, or nullopt.
template <class E>
std::optional<E> enum_from_string(const std::string& name) {
    for (const auto& [value, n] : EnumNames<E>::values)
        if (name == n) return value;
    return std::nullopt;
}
// "a, b, c": every name of E, for messages and help texts.
template <class E>
std::string enum_names() {
    std::string r;
    for (const auto& [value, n] : EnumNames<E>::values) r += (r.empty() ? "" : ", ") + std::string(n);
    return r;
}

}  // namespace sinkscope

namespace sinkscope::model {
using sinkscope::NormKind;
using sinkscope::NormPlacement;
using sinkscope::QkNormScope;
using sinkscope::FfnKind;
using sinkscope::AttentionKind;
using sinkscope::GateKind;
using sinkscope::PositionKind;
using sinkscope::RopeLayout;
using sinkscope::Activation;
using sinkscope::EnumNames;
using sinkscope::enum_from_string;
using sinkscope::enum_name;
using sinkscope::enum_names;
using sinkscope::to_string;
}  // namespace sinkscope::model
