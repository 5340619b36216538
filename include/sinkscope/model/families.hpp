// Model families as data: for each family, the switches of its mechanism, how its Hugging Face
// config.json and its GGUF metadata name the hyperparameters, and how its checkpoints name the tensors.
// Typed key access is model/config_keys.hpp, llama.cpp's GGUF conventions model/gguf_conventions.hpp,
// RoPE frequency scaling model/rope_scaling.hpp; model/read_config.hpp turns a file into a Config.
//
// Adding a family is one entry of `families()` (plus the mechanism in forward.hpp if it needs a new one).
// Tensor names hold "{l}" where the layer index goes (and "{e}" where an expert's goes); an empty name
// means the family has no such tensor; "a|b" lists names the family's checkpoints use for the same tensor
// (the first one the checkpoint has is read).
// The loader (load.hpp) reads every family through the same code: a tensor is read when the Config
// needs it (qkv_bias → the q/k/v biases, sandwich placement → the post norms, …) and must then exist.
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/model/config.hpp"
#include "sinkscope/model/config_keys.hpp"
#include "sinkscope/model/gguf_conventions.hpp"
#include "sinkscope/model/parameter_table.hpp"
#include "sinkscope/model/rope_scaling.hpp"

namespace sinkscope::model {

// How a fused QKV projection orders its rows.
//   concatenated: [q (H·d_h) | k (kvH·d_h) | v (kvH·d_h)]          (GPT-2, Phi-3, GGUF)
//   per_head:     [head 0: q k v | head 1: q k v | …], d_h rows each (GPT-NeoX in Hugging Face)
enum class FusedQkv { concatenated, per_head };

struct Family {
    std::string name;                         // Config::architecture
    std::vector<std::string> hf_types;        // config.json model_type values
    std::vector<std::string> gguf_archs;      // general.architecture values (empty: no GGUF reader yet)
    void (*hf_config)(Config&, const HfKeys&);  // the family's switches and its own config keys
    TensorNames hf, gguf;
    void (*gguf_config)(Config&, const GgufKeys&) = nullptr;  // likewise for GGUF metadata (with gguf_archs)
    FusedQkv hf_fused = FusedQkv::concatenated;
    bool hf_conv1d = false;                   // weights stored (in × out), GPT-2's Conv1D
    double hf_norm_offset = 0;                // gains stored as g − 1: RMSNorm multiplies by (1 + g) (Gemma)
};

namespace detail {

// The hyperparameters every decoder names alike (GPT-2's own spellings second).
inline void hf_common(Config& c, const HfKeys& k) {
    c.n_layers = k.get<std::int64_t>({"num_hidden_layers", "n_layer"});
    c.d_model = k.get<std::int64_t>({"hidden_size", "n_embd"});
    c.n_heads = k.get<std::int64_t>({"num_attention_heads", "n_head"});
    c.n_kv_heads = k.get_or<std::int64_t>({"num_key_value_heads"}, c.n_heads);
    c.head_dim = k.get_or<std::int64_t>({"head_dim"}, c.n_heads ? c.d_model / c.n_heads : 0);
    c.d_ff = k.get_or<std::int64_t>({"intermediate_size", "n_inner"}, 4 * c.d_model);
    c.context_length = k.get<std::int64_t>({"max_position_embeddings", "n_positions"});
    c.vocab_size = k.get<std::int64_t>({"vocab_size"});
    c.norm_eps = k.get<double>({"rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon"});
}

inline void hf_rope(Config& c, const HfKeys& k) {
    const nlohmann::json r = k.rope();
    const std::string type = r.value("rope_type", r.value("type", std::string("default")));
    if (type != "llama3") k.require_default_rope();
    c.positions = PositionKind::rope;
    c.rope_layout = RopeLayout::half_split;
    c.rope_base = k.rope_theta();
    const double f = k.partial_rotary();
    if (f != 1.0) c.rotary_dim = std::int64_t(double(c.head_dim) * f);  // as Hugging Face: int(d_h · factor)
    if (type == "llama3") {
        auto number = [&](const char* key) {
            if (!r.contains(key)) k.fail("RoPE scaling 'llama3' needs '" + std::string(key) + "'");
            return typed<double>(r[key], key, k.path());
        };
        const double orig = r.contains("original_max_position_embeddings") ? number("original_max_position_embeddings")
                                                                            : double(c.context_length);
        const double factor = number("factor"), low = number("low_freq_factor"), high = number("high_freq_factor");
        if (!(factor > 0) || !(low > 0) || !(high > low) || !(orig > 0))
            k.fail("RoPE scaling 'llama3' needs factor > 0, 0 < low_freq_factor < high_freq_factor and "
                   "original_max_position_embeddings > 0");
        c.rope_freq_divisors = llama3_rope_divisors(c.rope_base, c.rope_dims(), factor, low, high, orig);
    }
}

// Llama-like: RMSNorm, SwiGLU, RoPE, optional QKV bias; a window where the config turns one on.
inline void hf_llama_like(Config& c, const HfKeys& k) {
    c.norm = NormKind::rmsnorm;
    c.ffn = FfnKind::swiglu;
    c.activation = k.activation({"hidden_act"}, "silu");
    if (c.activation != Activation::silu) k.fail("unsupported hidden_act for a SwiGLU family");
    hf_rope(c, k);
    c.qkv_bias = k.get_or<bool>({"attention_bias"}, false);
    c.tied_embeddings = k.get_or<bool>({"tie_word_embeddings"}, false);
    if (k.get_or<bool>({"use_sliding_window"}, false)) c.sliding_window = k.get_or<std::int64_t>({"sliding_window"}, 0);
}

// A mixture of SwiGLU experts: E experts (num_local_experts, Mixtral; num_experts, OLMoE), top-k
// (num_experts_per_tok), the top-k weights renormalised when `normalize`.
inline void hf_moe(Config& c, const HfKeys& k, bool normalize) {
    c.ffn = FfnKind::moe;
    c.n_experts = k.get<std::int64_t>({"num_local_experts", "num_experts"});
    c.n_experts_used = k.get<std::int64_t>({"num_experts_per_tok"});
    c.moe_normalize_topk = normalize;
}

// Gemma 2 and 3: (1 + g) RMSNorm, GeGLU, sandwich norms, √d embedding scale, query_pre_attn_scalar,
// sliding and global layers from layer_types (Gemma 2 without it: every other layer, the first sliding).
inline void hf_gemma(Config& c, const HfKeys& k) {
    c.norm = NormKind::rmsnorm;
    c.norm_placement = NormPlacement::sandwich;
    c.ffn = FfnKind::swiglu;
    c.activation = k.activation({"hidden_activation", "hidden_act"}, "gelu_pytorch_tanh");
    c.positions = PositionKind::rope;
    c.rope_layout = RopeLayout::half_split;
    c.tied_embeddings = k.get_or<bool>({"tie_word_embeddings"}, true);
    c.qkv_bias = c.out_bias = k.get_or<bool>({"attention_bias"}, false);
    // Hugging Face multiplies by torch.tensor(√d) in the weights' type: float32 rounds √d once.
    c.embed_scale = double(float(std::sqrt(double(c.d_model))));
    c.attn_scale = 1.0 / std::sqrt(k.get_or<double>({"query_pre_attn_scalar"}, double(c.head_dim)));
    c.attn_softcap = k.get_or<double>({"attn_logit_softcapping"}, 0.0);
    c.logit_softcap = k.get_or<double>({"final_logit_softcapping"}, 0.0);
    const std::int64_t window = k.get_or<std::int64_t>({"sliding_window"}, 0);
    c.layer_windows.assign(std::size_t(c.n_layers), 0);
    if (k.has("layer_types")) {
        const auto& types = k.json()["layer_types"];
        if (std::int64_t(types.size()) != c.n_layers) k.fail("layer_types does not list every layer");
        for (std::int64_t l = 0; l < c.n_layers; ++l) {
            const std::string t = types[std::size_t(l)].get<std::string>();
            if (t == "sliding_attention") c.layer_windows[std::size_t(l)] = window;
            else if (t != "full_attention") k.fail("unknown layer type '" + t + "'");
        }
    } else {
        const std::int64_t pattern = k.get_or<std::int64_t>({"sliding_window_pattern"}, 2);
        for (std::int64_t l = 0; l < c.n_layers; ++l)
            if ((l + 1) % pattern != 0) c.layer_windows[std::size_t(l)] = window;
    }
    for (auto& w : c.layer_windows) if (w >= c.context_length) w = 0;
}

inline std::string hf_layer(const std::string& prefix, const std::string& rest) { return prefix + "{l}." + rest; }

// The tensor names of the Llama layout in Hugging Face (model.layers.{l}.self_attn.q_proj, …).
inline TensorNames hf_llama_names() {
    const std::string L = "model.layers.{l}.";
    TensorNames n;
    n.tok_embed = "model.embed_tokens.weight"; n.final_norm = "model.norm.weight"; n.lm_head = "lm_head.weight";
    n.attn_norm = L + "input_layernorm.weight"; n.ffn_norm = L + "post_attention_layernorm.weight";
    n.wq = L + "self_attn.q_proj.weight"; n.wk = L + "self_attn.k_proj.weight"; n.wv = L + "self_attn.v_proj.weight";
    n.wo = L + "self_attn.o_proj.weight";
    n.bq = L + "self_attn.q_proj.bias"; n.bk = L + "self_attn.k_proj.bias"; n.bv = L + "self_attn.v_proj.bias";
    n.bo = L + "self_attn.o_proj.bias";
    n.q_norm = L + "self_attn.q_norm.weight"; n.k_norm = L + "self_attn.k_norm.weight";
    n.w_gate = L + "mlp.gate_proj.weight"; n.w_up = L + "mlp.up_proj.weight"; n.w_down = L + "mlp.down_proj.weight";
    return n;
}

// The Llama layout with a mixture of experts in place of the FFN: the router, each expert's gate, up and
// down projections under `expert` + name + ".weight", and transformers 5's fused expert tensors.
inline TensorNames hf_moe_names(const std::string& router, const std::string& expert, const char* gate, const char* up,
                                const char* down) {
    TensorNames n = hf_llama_names();
    n.w_gate = n.w_up = n.w_down = "";
    n.router = router;
    n.expert_gate = expert + gate + ".weight";
    n.expert_up = expert + up + ".weight";
    n.expert_down = expert + down + ".weight";
    n.experts_gate_up = "model.layers.{l}.mlp.experts.gate_up_proj";
    n.experts_down = "model.layers.{l}.mlp.experts.down_proj";
    return n;
}

inline std::vector<Family> make_families() {
    std::vector<Family> f;
    auto llama = [](Config& c, const HfKeys& k) { hf_llama_like(c, k); };
    // llama.cpp's Llama graph renormalises the top-k expert weights (Mixtral is written as arch "llama").
    auto interleaved = [](Config& c, const GgufKeys& k) { gguf_llama_like(c, k, RopeLayout::interleaved); c.moe_normalize_topk = true; };
    auto half_split = [](Config& c, const GgufKeys& k) { gguf_llama_like(c, k, RopeLayout::half_split); };
    f.push_back({"llama", {"llama"}, {"llama"}, llama, hf_llama_names(), gguf_llama_names(), interleaved});
    f.push_back({"mistral", {"mistral"}, {"mistral"},
                 [](Config& c, const HfKeys& k) {
                     hf_llama_like(c, k);
                     c.sliding_window = k.get_or<std::int64_t>({"sliding_window"}, 0);
                 },
                 hf_llama_names(), gguf_llama_names(), interleaved});
    f.push_back({"qwen2", {"qwen2"}, {"qwen2"},
                 [](Config& c, const HfKeys& k) { hf_llama_like(c, k); c.qkv_bias = true; },
                 hf_llama_names(), gguf_llama_names(), half_split});
    f.push_back({"qwen3", {"qwen3"}, {"qwen3"},
                 [](Config& c, const HfKeys& k) { hf_llama_like(c, k); c.qk_norm = true; },
                 hf_llama_names(), gguf_llama_names(), half_split});
    {
        TensorNames hf;  // transformer.h.{l}.… (the "transformer." prefix is optional: see load.hpp)
        const std::string L = "h.{l}.";
        hf.tok_embed = "wte.weight"; hf.pos_embed = "wpe.weight"; hf.final_norm = "ln_f.weight"; hf.final_norm_bias = "ln_f.bias";
        hf.lm_head = "lm_head.weight";
        hf.attn_norm = L + "ln_1.weight"; hf.attn_norm_bias = L + "ln_1.bias";
        hf.ffn_norm = L + "ln_2.weight"; hf.ffn_norm_bias = L + "ln_2.bias";
        hf.qkv = L + "attn.c_attn.weight"; hf.qkv_bias = L + "attn.c_attn.bias";
        hf.wo = L + "attn.c_proj.weight"; hf.bo = L + "attn.c_proj.bias";
        hf.w_up = L + "mlp.c_fc.weight"; hf.b_up = L + "mlp.c_fc.bias";
        hf.w_down = L + "mlp.c_proj.weight"; hf.b_down = L + "mlp.c_proj.bias";
        TensorNames gg = gguf_llama_names();
        gg.pos_embed = "position_embd.weight"; gg.final_norm_bias = "output_norm.bias";
        gg.attn_norm_bias = "blk.{l}.attn_norm.bias"; gg.ffn_norm_bias = "blk.{l}.ffn_norm.bias";
        gg.wq = gg.wk = gg.wv = gg.bq = gg.bk = gg.bv = gg.w_gate = "";
        gg.qkv = "blk.{l}.attn_qkv.weight"; gg.qkv_bias = "blk.{l}.attn_qkv.bias";
        gg.b_up = "blk.{l}.ffn_up.bias"; gg.b_down = "blk.{l}.ffn_down.bias";
        Family g{"gpt2", {"gpt2"}, {"gpt2"},
                 [](Config& c, const HfKeys& k) {
                     c.norm = NormKind::layernorm; c.norm_bias = true;
                     c.ffn = FfnKind::gelu;
                     c.activation = k.activation({"activation_function"}, "gelu_new");
                     c.positions = PositionKind::learned;
                     c.qkv_bias = c.out_bias = c.mlp_bias = true;
                     c.tied_embeddings = k.get_or<bool>({"tie_word_embeddings"}, true);
                 },
                 hf, gg,
                 [](Config& c, const GgufKeys& k) {
                     c.norm = NormKind::layernorm; c.norm_bias = true;
                     c.norm_eps = k.get<double>("attention.layer_norm_epsilon");
                     c.ffn = FfnKind::gelu;
                     c.activation = Activation::gelu_tanh;
                     c.positions = PositionKind::learned;
                     c.qkv_bias = c.out_bias = c.mlp_bias = true;
                 }};
        g.hf_conv1d = true;
        f.push_back(g);
    }
    {
        TensorNames hf = hf_llama_names();  // Gemma 2: four norms a layer, named differently from Llama's
        hf.ffn_norm = "model.layers.{l}.pre_feedforward_layernorm.weight";
        hf.attn_post_norm = "model.layers.{l}.post_attention_layernorm.weight";
        hf.ffn_post_norm = "model.layers.{l}.post_feedforward_layernorm.weight";
        const TensorNames gg = gguf_post_norm_names(gguf_llama_names());
        Family g{"gemma2", {"gemma2"}, {"gemma2"}, [](Config& c, const HfKeys& k) { hf_gemma(c, k); k.require_default_rope(); c.rope_base = k.rope_theta(); },
                 hf, gg,
                 [](Config& c, const GgufKeys& k) {
                     gguf_gemma(c, k, c.n_layers == 46);
                     // llama.cpp's defaults when a key is absent: caps 50 and 30, a 4096 window every other layer.
                     c.attn_softcap = k.get_or<double>("attn_logit_softcapping", 50.0);
                     c.logit_softcap = k.get_or<double>("final_logit_softcapping", 30.0);
                     gguf_layer_windows(c, k, k.get_or<std::int64_t>("attention.sliding_window", 4096), 2);
                     const double swa_base = k.get_or<double>("rope.freq_base_swa", c.rope_base);
                     if (swa_base != c.rope_base) c.rope_base_sliding = swa_base;
                 }};
        g.hf_norm_offset = 1;
        f.push_back(g);
        Family g3{"gemma3", {"gemma3_text"}, {"gemma3"},
                  [](Config& c, const HfKeys& k) {
                      hf_gemma(c, k);
                      c.qk_norm = true;
                      // Global layers: rope_parameters.full_attention (or rope_theta); sliding layers:
                      // rope_parameters.sliding_attention (or rope_local_base_freq).
                      const bool per_type = k.rope().contains("full_attention");
                      k.require_default_rope(per_type ? "full_attention" : nullptr);
                      c.rope_base = k.rope_theta(per_type ? "full_attention" : nullptr, 1e6);
                      if (per_type) { k.require_default_rope("sliding_attention"); c.rope_base_sliding = k.rope_theta("sliding_attention"); }
                      else c.rope_base_sliding = k.get_or<double>({"rope_local_base_freq"}, 10000.0);
                      if (c.rope_base_sliding == c.rope_base) c.rope_base_sliding = 0;
                  },
                  hf, gg,
                  [](Config& c, const GgufKeys& k) {
                      gguf_gemma(c, k, c.n_layers == 62);
                      c.logit_softcap = k.get_or<double>("final_logit_softcapping", 0.0);
                      // Sliding layers only with a window: five in six slide (llama.cpp's period), RoPE base
                      // rope.freq_base_swa (10000 when absent).
                      const std::int64_t window = k.get_or<std::int64_t>("attention.sliding_window", 0);
                      if (window > 0) {
                          gguf_layer_windows(c, k, window, 6);
                          const double swa_base = k.get_or<double>("rope.freq_base_swa", 10000.0);
                          if (swa_base != c.rope_base) c.rope_base_sliding = swa_base;
                      }
                  }};
        g3.hf_norm_offset = 1;
        f.push_back(g3);
    }
    {
        TensorNames hf = hf_llama_names();  // Phi-3: fused q|k|v and gate|up
        hf.wq = hf.wk = hf.wv = hf.w_gate = hf.w_up = "";
        hf.qkv = "model.layers.{l}.self_attn.qkv_proj.weight";
        hf.gate_up = "model.layers.{l}.mlp.gate_up_proj.weight";
        // In GGUF: attn_qkv (or attn_q/k/v, as the converter chose) and ffn_up holding gate|up.
        TensorNames gg = gguf_llama_names();
        gg.qkv = "blk.{l}.attn_qkv.weight";
        gg.w_gate = gg.w_up = "";
        gg.gate_up = "blk.{l}.ffn_up.weight";
        f.push_back({"phi3", {"phi3"}, {"phi3"},
                     [](Config& c, const HfKeys& k) {
                         hf_llama_like(c, k);
                         if (k.has("sliding_window")) c.sliding_window = k.get<std::int64_t>({"sliding_window"});
                         if (c.sliding_window >= c.context_length) c.sliding_window = 0;
                     },
                     hf, gg,
                     [](Config& c, const GgufKeys& k) {
                         // LongRoPE (the 128k models) stores rope_factors tensors and a scaling type: refused
                         // by gguf_llama_like. The window is applied as Hugging Face applies it (llama.cpp
                         // turns Phi-3's off with a warning).
                         gguf_llama_like(c, k, RopeLayout::half_split);
                         gguf_rotary_dim(c, k);
                     }});
    }
    {
        TensorNames hf = hf_llama_names();  // OLMo-2: norms after attention and MLP, none before
        hf.attn_norm = hf.ffn_norm = "";
        hf.attn_post_norm = "model.layers.{l}.post_attention_layernorm.weight";
        hf.ffn_post_norm = "model.layers.{l}.post_feedforward_layernorm.weight";
        TensorNames gg = gguf_post_norm_names(gguf_llama_names());
        gg.attn_norm = gg.ffn_norm = "";
        f.push_back({"olmo2", {"olmo2"}, {"olmo2"},
                     [](Config& c, const HfKeys& k) {
                         hf_llama_like(c, k);
                         c.norm_placement = NormPlacement::output;
                         c.qk_norm = true;
                         c.qk_norm_scope = QkNormScope::projection;
                     },
                     hf, gg,
                     [](Config& c, const GgufKeys& k) {
                         gguf_llama_like(c, k, RopeLayout::half_split);
                         c.sliding_window = 0;  // OLMo-3's sliding layers (a per-layer pattern) are not read yet
                         if (k.get_or<std::int64_t>("attention.sliding_window", 0) > 0) k.fail("OLMo-3 sliding-window layers are not supported");
                         c.norm_placement = NormPlacement::output;
                         c.qk_norm = true;
                         c.qk_norm_scope = QkNormScope::projection;
                     }});
    }
    {
        TensorNames hf;  // GPT-NeoX / Pythia
        const std::string L = "gpt_neox.layers.{l}.";
        hf.tok_embed = "gpt_neox.embed_in.weight"; hf.lm_head = "embed_out.weight";
        hf.final_norm = "gpt_neox.final_layer_norm.weight"; hf.final_norm_bias = "gpt_neox.final_layer_norm.bias";
        hf.attn_norm = L + "input_layernorm.weight"; hf.attn_norm_bias = L + "input_layernorm.bias";
        hf.ffn_norm = L + "post_attention_layernorm.weight"; hf.ffn_norm_bias = L + "post_attention_layernorm.bias";
        hf.qkv = L + "attention.query_key_value.weight"; hf.qkv_bias = L + "attention.query_key_value.bias";
        hf.wo = L + "attention.dense.weight"; hf.bo = L + "attention.dense.bias";
        hf.w_up = L + "mlp.dense_h_to_4h.weight"; hf.b_up = L + "mlp.dense_h_to_4h.bias";
        hf.w_down = L + "mlp.dense_4h_to_h.weight"; hf.b_down = L + "mlp.dense_4h_to_h.bias";
        // In GGUF (arch "gptneox") the converter reorders the per-head q|k|v rows into [q | k | v].
        TensorNames gg = gguf_llama_names();
        gg.final_norm_bias = "output_norm.bias";
        gg.attn_norm_bias = "blk.{l}.attn_norm.bias"; gg.ffn_norm_bias = "blk.{l}.ffn_norm.bias";
        gg.wq = gg.wk = gg.wv = gg.bq = gg.bk = gg.bv = gg.w_gate = "";
        gg.qkv = "blk.{l}.attn_qkv.weight"; gg.qkv_bias = "blk.{l}.attn_qkv.bias";
        gg.b_up = "blk.{l}.ffn_up.bias"; gg.b_down = "blk.{l}.ffn_down.bias";
        Family g{"gpt_neox", {"gpt_neox"}, {"gptneox"},
                 [](Config& c, const HfKeys& k) {
                     c.norm = NormKind::layernorm; c.norm_bias = true;
                     c.ffn = FfnKind::gelu;
                     c.activation = k.activation({"hidden_act"}, "gelu");
                     hf_rope(c, k);
                     if (!k.rope().contains("partial_rotary_factor") && !k.has("rotary_pct")) c.rotary_dim = c.head_dim / 4;
                     c.parallel_residual = k.get_or<bool>({"use_parallel_residual"}, true);
                     c.qkv_bias = c.out_bias = k.get_or<bool>({"attention_bias"}, true);
                     c.mlp_bias = true;
                     c.tied_embeddings = k.get_or<bool>({"tie_word_embeddings"}, false);
                 },
                 hf, gg,
                 [](Config& c, const GgufKeys& k) {
                     c.norm = NormKind::layernorm; c.norm_bias = true;
                     c.norm_eps = k.get<double>("attention.layer_norm_epsilon");
                     c.ffn = FfnKind::gelu;
                     // Pythia's hidden_act is the exact (erf) GELU; the GGUF does not say, and llama.cpp
                     // computes the tanh approximation. The model's own function is used here.
                     c.activation = Activation::gelu_erf;
                     c.positions = PositionKind::rope;
                     c.rope_layout = RopeLayout::half_split;
                     c.rope_base = k.get_or<double>("rope.freq_base", 10000.0);
                     gguf_rotary_dim(c, k);
                     c.parallel_residual = k.get_or<bool>("use_parallel_residual", true);
                     c.qkv_bias = c.out_bias = c.mlp_bias = true;
                 }};
        g.hf_fused = FusedQkv::per_head;
        f.push_back(g);
    }
    {
        // Mixtral: Mistral with a sparse mixture of SwiGLU experts, top-k weights always renormalised
        // (MixtralTopKRouter). save_pretrained writes block_sparse_moe.experts.{e}.w1/w2/w3 (gate, down,
        // up); transformers 5 holds them fused as mlp.experts.gate_up_proj / down_proj.
        const std::string L = "model.layers.{l}.";
        const TensorNames hf = hf_moe_names(L + "block_sparse_moe.gate.weight|" + L + "mlp.gate.weight",
                                            L + "block_sparse_moe.experts.{e}.", "w1", "w3", "w2");
        f.push_back({"mixtral", {"mixtral"}, {},
                     [](Config& c, const HfKeys& k) {
                         hf_llama_like(c, k);
                         c.sliding_window = k.get_or<std::int64_t>({"sliding_window"}, 0);
                         hf_moe(c, k, true);
                     },
                     hf, {}});
        // OLMoE: Llama with QK-norm over the whole q and k projections (as OLMo-2, but pre-norm) and a
        // mixture of experts whose top-k weights are renormalised only with norm_topk_prob.
        const TensorNames ol = hf_moe_names(L + "mlp.gate.weight", L + "mlp.experts.{e}.", "gate_proj", "up_proj", "down_proj");
        f.push_back({"olmoe", {"olmoe"}, {"olmoe"},
                     [](Config& c, const HfKeys& k) {
                         hf_llama_like(c, k);
                         c.out_bias = c.qkv_bias;  // OlmoeAttention: o_proj has a bias with attention_bias
                         c.qk_norm = true;
                         c.qk_norm_scope = QkNormScope::projection;
                         if (k.has("clip_qkv")) k.fail("clip_qkv (clamping q, k and v) is not supported");
                         hf_moe(c, k, k.get_or<bool>({"norm_topk_prob"}, false));
                     },
                     ol, gguf_llama_names(),
                     [](Config& c, const GgufKeys& k) {
                         // llama.cpp's OLMoE graph: QK-norm over the whole projections, top-k weights not
                         // renormalised (as OLMoE-1B-7B's norm_topk_prob = false).
                         gguf_llama_like(c, k, RopeLayout::half_split);
                         c.qk_norm = true;
                         c.qk_norm_scope = QkNormScope::projection;
                         c.moe_normalize_topk = false;
                     }});
    }
    return f;
}

}  // namespace detail

// Every family sinkscope reads, in a fixed order.
inline const std::vector<Family>& families() {
    static const std::vector<Family> all = detail::make_families();
    return all;
}

// The family of a Hugging Face model_type or a GGUF general.architecture; nullptr when unknown.
inline const Family* family_of_hf_type(const std::string& type) {
    for (const auto& f : families())
        for (const auto& t : f.hf_types) if (t == type) return &f;
    return nullptr;
}
inline const Family* family_of_gguf_arch(const std::string& arch) {
    for (const auto& f : families())
        for (const auto& a : f.gguf_archs) if (a == arch) return &f;
    return nullptr;
}
// "llama, mistral, …" of one format, for error messages.
inline std::string supported_names(bool gguf) {
    std::string r;
    for (const auto& f : families())
        for (const auto& t : gguf ? f.gguf_archs : f.hf_types) r += (r.empty() ? "" : ", ") + t;
    return r;
}

}  // namespace sinkscope::model
