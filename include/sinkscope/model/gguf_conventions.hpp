// llama.cpp's conventions for a GGUF file: the tensor names of each layout (blk.{l}.attn_q.weight, …) and
// the hyperparameters a family's GGUF leaves out, which llama.cpp derives from the architecture (layer
// windows, the Gemmas' attention scale and caps). The family table (model/families.hpp) composes these.
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "sinkscope/model/config.hpp"
#include "sinkscope/model/config_keys.hpp"
#include "sinkscope/model/parameter_table.hpp"

namespace sinkscope::model::detail {

// GGUF Llama-like: RMSNorm, SwiGLU, RoPE; llama.cpp stores llama/mistral Q and K rows permuted for
// interleaved rotation and qwen2/qwen3 in Hugging Face's half-split order. Biases and QK-norm are
// detected from the tensors by load.hpp.
inline void gguf_llama_like(Config& c, const GgufKeys& k, RopeLayout layout) {
    c.norm = NormKind::rmsnorm;
    c.norm_eps = k.get<double>("attention.layer_norm_rms_epsilon");
    c.ffn = FfnKind::swiglu;
    c.activation = Activation::silu;
    c.positions = PositionKind::rope;
    c.rope_base = k.get_or<double>("rope.freq_base", 10000.0);
    c.rope_layout = layout;
    const std::string scaling = k.get_or<std::string>("rope.scaling.type", "none");
    if (scaling != "none") k.fail("RoPE scaling '" + scaling + "' is not supported");
    c.sliding_window = k.get_or<std::int64_t>("attention.sliding_window", 0);
}

// The GGUF (llama.cpp) names of the Llama layout: blk.{l}.attn_q.weight, …
inline TensorNames gguf_llama_names() {
    const std::string L = "blk.{l}.";
    TensorNames n;
    n.tok_embed = "token_embd.weight"; n.final_norm = "output_norm.weight"; n.lm_head = "output.weight";
    n.attn_norm = L + "attn_norm.weight"; n.ffn_norm = L + "ffn_norm.weight";
    n.wq = L + "attn_q.weight"; n.wk = L + "attn_k.weight"; n.wv = L + "attn_v.weight"; n.wo = L + "attn_output.weight";
    n.bq = L + "attn_q.bias"; n.bk = L + "attn_k.bias"; n.bv = L + "attn_v.bias"; n.bo = L + "attn_output.bias";
    n.q_norm = L + "attn_q_norm.weight"; n.k_norm = L + "attn_k_norm.weight";
    n.w_gate = L + "ffn_gate.weight"; n.w_up = L + "ffn_up.weight"; n.w_down = L + "ffn_down.weight";
    // Mixtral and OLMoE: the router and each projection of all experts stacked, (E, d_ff, d) and (E, d, d_ff).
    n.router = L + "ffn_gate_inp.weight";
    n.experts_gate = L + "ffn_gate_exps.weight"; n.experts_up = L + "ffn_up_exps.weight"; n.experts_down = L + "ffn_down_exps.weight";
    return n;
}

// The GGUF names of the sandwich and output norms (Gemma 2/3, OLMo-2).
inline TensorNames gguf_post_norm_names(TensorNames n) {
    n.attn_post_norm = "blk.{l}.post_attention_norm.weight";
    n.ffn_post_norm = "blk.{l}.post_ffw_norm.weight";
    return n;
}

// The llama.cpp reading of a GGUF: a family's GGUF stores only some hyperparameters; what it leaves out
// (the 27B Gemmas' attention scale, sliding patterns, soft-cap defaults) llama.cpp derives from the
// architecture, and a file means what llama.cpp computes with it. The rules below are llama.cpp's
// (src/models/<family>.cpp, load_arch_hparams), stated here as facts.

// Sliding and global layers: attention.sliding_window_pattern is a per-layer list (true: sliding) or a
// period n (layer l slides unless l % n == n − 1), else the family's period.
inline void gguf_layer_windows(Config& c, const GgufKeys& k, std::int64_t window, std::int64_t period) {
    c.layer_windows.assign(std::size_t(c.n_layers), 0);
    const std::string key = "attention.sliding_window_pattern";
    if (k.has(key) && k.at(key).is_array()) {
        const nlohmann::json& layers = k.at(key);
        if (std::int64_t(layers.size()) != c.n_layers) k.fail(k.full_name(key) + " does not list every layer");
        for (std::int64_t l = 0; l < c.n_layers; ++l)
            if (layers[std::size_t(l)].get<bool>()) c.layer_windows[std::size_t(l)] = window;
    } else {
        if (k.has(key)) period = k.get<std::int64_t>(key);
        for (std::int64_t l = 0; l < c.n_layers; ++l)
            if (period == 0 || l % period < period - 1) c.layer_windows[std::size_t(l)] = window;
    }
    for (auto& w : c.layer_windows) if (w >= c.context_length) w = 0;
}

// Gemma 2 and 3 in GGUF: the converter stores the (1 + g) gains already shifted (g + 1), so they are read
// as they are; the attention scale is 1/√(d/H) for the 27B models (46 and 62 layers), else 1/√d_h
// (query_pre_attn_scalar is not stored); √d embedding scale in float as llama.cpp's sqrtf.
inline void gguf_gemma(Config& c, const GgufKeys& k, bool is_27b) {
    c.norm = NormKind::rmsnorm;
    c.norm_eps = k.get<double>("attention.layer_norm_rms_epsilon");
    c.norm_placement = NormPlacement::sandwich;
    c.ffn = FfnKind::swiglu;
    c.activation = Activation::gelu_tanh;
    c.positions = PositionKind::rope;
    c.rope_layout = RopeLayout::half_split;
    c.rope_base = k.get_or<double>("rope.freq_base", 10000.0);
    c.embed_scale = double(float(std::sqrt(double(c.d_model))));
    c.attn_scale = 1.0 / std::sqrt(double(is_27b ? c.d_model / c.n_heads : c.head_dim));
}

// The rotated dimensions of each head (rope.dimension_count; all of them when absent).
inline void gguf_rotary_dim(Config& c, const GgufKeys& k) {
    const std::int64_t n_rot = k.get_or<std::int64_t>("rope.dimension_count", c.head_dim);
    if (n_rot != c.head_dim) c.rotary_dim = n_rot;
}

}  // namespace sinkscope::model::detail
