// model::Config ⇄ JSON (field names as in config.hpp, enums by their to_string names), for
// checkpoints, fixtures and run directories. Unknown keys and unknown enum names are errors that name
// the key; missing keys keep the Config default.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sinkscope/core/error.hpp"
#include "sinkscope/model/config.hpp"

namespace sinkscope::train {

namespace detail {
template <class E>
E parse_enum(const std::string& key, const std::string& value, std::initializer_list<E> all) {
    std::string names;
    for (E e : all) {
        if (value == model::to_string(e)) return e;
        names += std::string(names.empty() ? "" : ", ") + model::to_string(e);
    }
    throw Error("config: unknown " + key + " '" + value + "' (one of: " + names + ")");
}
}  // namespace detail

inline nlohmann::json config_to_json(const model::Config& c) {
    return nlohmann::json{
        {"architecture", c.architecture}, {"n_layers", c.n_layers}, {"d_model", c.d_model}, {"n_heads", c.n_heads},
        {"n_kv_heads", c.n_kv_heads}, {"head_dim", c.head_dim}, {"d_ff", c.d_ff}, {"vocab_size", c.vocab_size},
        {"context_length", c.context_length}, {"norm", model::to_string(c.norm)},
        {"norm_placement", model::to_string(c.norm_placement)}, {"norm_eps", c.norm_eps}, {"qk_norm", c.qk_norm},
        {"dyt_alpha0_attn", c.dyt_alpha0_attn}, {"dyt_alpha0_other", c.dyt_alpha0_other},
        {"ffn", model::to_string(c.ffn)}, {"activation", model::to_string(c.activation)},
        {"attention", model::to_string(c.attention)}, {"gate", model::to_string(c.gate)},
        {"sliding_window", c.sliding_window}, {"force_sink_channels", c.force_sink_channels},
        {"positions", model::to_string(c.positions)}, {"rope_layout", model::to_string(c.rope_layout)},
        {"rope_base", c.rope_base}, {"qkv_bias", c.qkv_bias}, {"out_bias", c.out_bias}, {"mlp_bias", c.mlp_bias},
        {"norm_bias", c.norm_bias}, {"tied_embeddings", c.tied_embeddings}};
}

inline model::Config config_from_json(const nlohmann::json& j) {
    using namespace model;
    require(j.is_object(), "config: JSON is not an object");
    Config c;
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string& k = it.key();
        const auto& v = it.value();
        auto str = [&] {
            require(v.is_string(), "config: '" + k + "' must be a string");
            return v.get<std::string>();
        };
        auto num = [&] {
            require(v.is_number(), "config: '" + k + "' must be a number");
            return v.get<double>();
        };
        auto integer = [&] {
            require(v.is_number_integer(), "config: '" + k + "' must be an integer");
            return v.get<std::int64_t>();
        };
        auto boolean = [&] {
            require(v.is_boolean(), "config: '" + k + "' must be true or false");
            return v.get<bool>();
        };
        if (k == "architecture") c.architecture = str();
        else if (k == "n_layers") c.n_layers = integer();
        else if (k == "d_model") c.d_model = integer();
        else if (k == "n_heads") c.n_heads = integer();
        else if (k == "n_kv_heads") c.n_kv_heads = integer();
        else if (k == "head_dim") c.head_dim = integer();
        else if (k == "d_ff") c.d_ff = integer();
        else if (k == "vocab_size") c.vocab_size = integer();
        else if (k == "context_length") c.context_length = integer();
        else if (k == "norm") c.norm = detail::parse_enum(k, str(), {NormKind::rmsnorm, NormKind::layernorm, NormKind::dynamic_tanh});
        else if (k == "norm_placement")
            c.norm_placement = detail::parse_enum(k, str(), {NormPlacement::pre, NormPlacement::post, NormPlacement::sandwich});
        else if (k == "norm_eps") c.norm_eps = num();
        else if (k == "qk_norm") c.qk_norm = boolean();
        else if (k == "dyt_alpha0_attn") c.dyt_alpha0_attn = num();
        else if (k == "dyt_alpha0_other") c.dyt_alpha0_other = num();
        else if (k == "ffn") c.ffn = detail::parse_enum(k, str(), {FfnKind::swiglu, FfnKind::gelu, FfnKind::linear, FfnKind::none});
        else if (k == "activation")
            c.activation = detail::parse_enum(k, str(), {Activation::silu, Activation::gelu_tanh, Activation::gelu_erf});
        else if (k == "attention")
            c.attention = detail::parse_enum(k, str(), {AttentionKind::softmax, AttentionKind::softmax_off_by_one,
                                                        AttentionKind::sink_token, AttentionKind::kv_bias});
        else if (k == "gate")
            c.gate = detail::parse_enum(k, str(), {GateKind::none, GateKind::per_head, GateKind::per_channel,
                                                   GateKind::static_per_head, GateKind::static_per_channel});
        else if (k == "sliding_window") c.sliding_window = integer();
        else if (k == "force_sink_channels") c.force_sink_channels = integer();
        else if (k == "positions") c.positions = detail::parse_enum(k, str(), {PositionKind::rope, PositionKind::learned, PositionKind::none});
        else if (k == "rope_layout") c.rope_layout = detail::parse_enum(k, str(), {RopeLayout::interleaved, RopeLayout::half_split});
        else if (k == "rope_base") c.rope_base = num();
        else if (k == "qkv_bias") c.qkv_bias = boolean();
        else if (k == "out_bias") c.out_bias = boolean();
        else if (k == "mlp_bias") c.mlp_bias = boolean();
        else if (k == "norm_bias") c.norm_bias = boolean();
        else if (k == "tied_embeddings") c.tied_embeddings = boolean();
        else throw Error("config: unknown key '" + k + "'");
    }
    return c;
}

}  // namespace sinkscope::train
