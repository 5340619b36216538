// model::Config ⇄ JSON (field names as in config.hpp, enums by their to_string names), for
// checkpoints, fixtures and run directories. Unknown keys and unknown enum names are errors that name
// the key; missing keys keep the Config default.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>

#include "sinkscope/core/error.hpp"
#include "sinkscope/model/config.hpp"

namespace sinkscope::train {

namespace detail {
template <class E>
E parse_enum(const std::string& key, const std::string& value) {
    if (auto e = model::enum_from_string<E>(value)) return *e;
    throw Error("config: unknown " + key + " '" + value + "' (one of: " + model::enum_names<E>() + ")");
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
        {"norm_bias", c.norm_bias}, {"tied_embeddings", c.tied_embeddings}, {"qk_norm_scope", model::to_string(c.qk_norm_scope)},
        {"layer_windows", c.layer_windows}, {"attn_scale", c.attn_scale}, {"attn_softcap", c.attn_softcap},
        {"parallel_residual", c.parallel_residual}, {"rope_base_sliding", c.rope_base_sliding}, {"rotary_dim", c.rotary_dim},
        {"rope_freq_divisors", c.rope_freq_divisors},
        {"embed_scale", c.embed_scale}, {"logit_softcap", c.logit_softcap}, {"n_experts", c.n_experts},
        {"n_experts_used", c.n_experts_used}, {"moe_normalize_topk", c.moe_normalize_topk}};
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
        auto parse = [&](auto& field) { field = detail::parse_enum<std::decay_t<decltype(field)>>(k, str()); };
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
        else if (k == "norm") parse(c.norm);
        else if (k == "norm_placement")
            parse(c.norm_placement);
        else if (k == "norm_eps") c.norm_eps = num();
        else if (k == "qk_norm") c.qk_norm = boolean();
        else if (k == "dyt_alpha0_attn") c.dyt_alpha0_attn = num();
        else if (k == "dyt_alpha0_other") c.dyt_alpha0_other = num();
        else if (k == "ffn") parse(c.ffn);
        else if (k == "activation")
            parse(c.activation);
        else if (k == "attention")
            parse(c.attention);
        else if (k == "gate")
            parse(c.gate);
        else if (k == "sliding_window") c.sliding_window = integer();
        else if (k == "force_sink_channels") c.force_sink_channels = integer();
        else if (k == "positions") parse(c.positions);
        else if (k == "rope_layout") parse(c.rope_layout);
        else if (k == "rope_base") c.rope_base = num();
        else if (k == "qkv_bias") c.qkv_bias = boolean();
        else if (k == "out_bias") c.out_bias = boolean();
        else if (k == "mlp_bias") c.mlp_bias = boolean();
        else if (k == "norm_bias") c.norm_bias = boolean();
        else if (k == "tied_embeddings") c.tied_embeddings = boolean();
        else if (k == "qk_norm_scope") parse(c.qk_norm_scope);
        else if (k == "layer_windows") {
            require(v.is_array(), "config: 'layer_windows' must be an array of integers");
            c.layer_windows.clear();
            for (const auto& e : v) {
                require(e.is_number_integer(), "config: 'layer_windows' must be an array of integers");
                c.layer_windows.push_back(e.get<std::int64_t>());
            }
        }
        else if (k == "rope_freq_divisors") {
            require(v.is_array(), "config: 'rope_freq_divisors' must be an array of numbers");
            c.rope_freq_divisors.clear();
            for (const auto& e : v) {
                require(e.is_number(), "config: 'rope_freq_divisors' must be an array of numbers");
                c.rope_freq_divisors.push_back(e.get<double>());
            }
        }
        else if (k == "attn_scale") c.attn_scale = num();
        else if (k == "attn_softcap") c.attn_softcap = num();
        else if (k == "parallel_residual") c.parallel_residual = boolean();
        else if (k == "rope_base_sliding") c.rope_base_sliding = num();
        else if (k == "rotary_dim") c.rotary_dim = integer();
        else if (k == "embed_scale") c.embed_scale = num();
        else if (k == "logit_softcap") c.logit_softcap = num();
        else if (k == "n_experts") c.n_experts = integer();
        else if (k == "n_experts_used") c.n_experts_used = integer();
        else if (k == "moe_normalize_topk") c.moe_normalize_topk = boolean();
        else throw Error("config: unknown key '" + k + "'");
    }
    return c;
}

}  // namespace sinkscope::train
