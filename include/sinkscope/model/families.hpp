// Model families as data: for each family, the switches of its mechanism, how its Hugging Face
// config.json and its GGUF metadata name the hyperparameters, and how its checkpoints name the tensors.
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
#include "sinkscope/model/parameter_table.hpp"

namespace sinkscope::model {

// A config or metadata value as V; a value of another type (a string where a number belongs) is an Error
// naming the key and the file, not a JSON library exception.
template <class V>
V typed(const nlohmann::json& value, const std::string& key, const std::string& path) {
    try {
        return value.get<V>();
    } catch (const nlohmann::json::exception&) {
        throw Error("key '" + key + "' holds a " + value.type_name() + ", not the expected type", {path, "", {}});
    }
}

// TensorNames (where each parameter lives in one checkpoint format) is in model/parameter_table.hpp.

// How a fused QKV projection orders its rows.
//   concatenated: [q (H·d_h) | k (kvH·d_h) | v (kvH·d_h)]          (GPT-2, Phi-3, GGUF)
//   per_head:     [head 0: q k v | head 1: q k v | …], d_h rows each (GPT-NeoX in Hugging Face)
enum class FusedQkv { concatenated, per_head };

// The hyperparameters of a Hugging Face config.json, read with defaults and checks.
class HfKeys {
public:
    HfKeys(const nlohmann::json& j, std::string path) : j_(j), path_(std::move(path)) {}
    bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
    // The first of `keys` present; an Error naming the file if none is.
    const nlohmann::json& first(std::initializer_list<const char*> keys) const {
        for (const char* k : keys) if (has(k)) return j_[k];
        std::string names;
        for (const char* k : keys) names += (names.empty() ? "'" : " or '") + std::string(k) + "'";
        throw Error("config key " + names + " is missing", {path_, "", {}});
    }
    template <class V> V get(std::initializer_list<const char*> keys) const {
        for (const char* k : keys) if (has(k)) return typed<V>(j_[k], k, path_);
        return first(keys).get<V>();  // throws the missing-key Error
    }
    template <class V> V get_or(std::initializer_list<const char*> keys, V dflt) const {
        for (const char* k : keys) if (has(k)) return typed<V>(j_[k], k, path_);
        return dflt;
    }
    const nlohmann::json& json() const { return j_; }
    const std::string& path() const { return path_; }
    [[noreturn]] void fail(const std::string& what) const { throw Error(what, {path_, "", {}}); }

    // The RoPE parameters: transformers ≥ 5 nests them in rope_parameters (per layer type for Gemma 3),
    // older configs keep rope_theta and rope_scaling at the top level.
    nlohmann::json rope(const char* layer_type = nullptr) const {
        nlohmann::json r = has("rope_parameters") ? j_["rope_parameters"] : (has("rope_scaling") ? j_["rope_scaling"] : nlohmann::json::object());
        if (layer_type && r.contains(layer_type)) r = r[layer_type];
        return r;
    }
    double rope_theta(const char* layer_type = nullptr, double dflt = 10000.0) const {
        const nlohmann::json r = rope(layer_type);
        if (r.contains("rope_theta")) return r["rope_theta"].get<double>();
        return get_or<double>({"rope_theta", "rotary_emb_base"}, dflt);
    }
    void require_default_rope(const char* layer_type = nullptr) const {
        const nlohmann::json r = rope(layer_type);
        const std::string type = r.value("rope_type", r.value("type", std::string("default")));
        if (type != "default") fail("RoPE scaling '" + type + "' is not supported");
    }
    double partial_rotary(double dflt = 1.0) const {
        const nlohmann::json r = rope();
        if (r.contains("partial_rotary_factor")) return r["partial_rotary_factor"].get<double>();
        return get_or<double>({"partial_rotary_factor", "rotary_pct"}, dflt);
    }
    Activation activation(std::initializer_list<const char*> keys, const char* dflt) const {
        const std::string a = get_or<std::string>(keys, dflt);
        if (a == "silu" || a == "swish") return Activation::silu;
        if (a == "gelu_new" || a == "gelu_pytorch_tanh" || a == "gelu_fast") return Activation::gelu_tanh;
        if (a == "gelu") return Activation::gelu_erf;
        fail("unsupported activation '" + a + "'");
    }

private:
    const nlohmann::json& j_;
    std::string path_;
};

// The hyperparameters of a GGUF file's metadata, "{arch}.key" by llama.cpp's convention.
class GgufKeys {
public:
    GgufKeys(const nlohmann::json& md, std::string arch, std::string path) : md_(md), a_(std::move(arch) + "."), path_(std::move(path)) {}
    bool has(const std::string& key) const { return md_.contains(a_ + key); }
    template <class V> V get(const std::string& key) const {
        if (!has(key)) throw Error("metadata key '" + a_ + key + "' is missing", {path_, "", {}});
        return typed<V>(md_[a_ + key], a_ + key, path_);
    }
    template <class V> V get_or(const std::string& key, V dflt) const { return has(key) ? get<V>(key) : dflt; }
    const nlohmann::json& at(const std::string& key) const { return md_.at(a_ + key); }
    std::string full_name(const std::string& key) const { return a_ + key; }
    [[noreturn]] void fail(const std::string& what) const { throw Error(what, {path_, "", {}}); }

private:
    const nlohmann::json& md_;
    std::string a_, path_;
};

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

// Llama 3.1's RoPE frequency divisors (rope_type "llama3"), as Config::rope_freq_divisors, for r rotated
// dimensions. Hugging Face (modeling_rope_utils._compute_llama3_parameters) computes, in float32 torch ops,
//   inv_i = 1 / base^(2i/r),  λ_i = 2π / inv_i,  low = orig / low_freq_factor,  high = orig / high_freq_factor;
//   λ_i < high: inv_i;  λ_i > low: inv_i / factor;
//   else, s = (orig/λ_i − low_freq_factor) / (high_freq_factor − low_freq_factor): (1 − s)·inv_i/factor + s·inv_i.
// This repeats those float32 operations in their order (torch's a / t is t.reciprocal() * a, each rounding
// kept, no fused multiply-add) and returns f_i = inv_i / inv_llama3_i in double, so that rope_table<float>,
// which rounds inv_i / f_i to float, rotates by Hugging Face's float32 inv_freq bit for bit. f_i is the
// exact formula's divisor (1, factor, or 1/((1 − s)/factor + s)) up to float32 rounding (~1e-7 relative).
inline std::vector<double> llama3_rope_divisors(double base, std::int64_t r, double factor, double low_freq_factor,
                                                double high_freq_factor, double orig) {
    auto rd = [](float x) { volatile float v = x; return float(v); };  // one float32 rounding, never fused
    const float low_wl = float(orig / low_freq_factor), high_wl = float(orig / high_freq_factor);
    std::vector<double> f(std::size_t(r / 2));
    for (std::int64_t i = 0; i < r / 2; ++i) {
        const float inv = rd(1.0f / std::pow(float(base), float(2 * i) / float(r)));  // as rope_table<float>
        const float wavelen = rd(rd(1.0f / inv) * float(2 * 3.14159265358979323846));  // 2 * math.pi / inv
        float scaled = inv;
        if (wavelen > low_wl) scaled = rd(inv / float(factor));
        else if (!(wavelen < high_wl)) {
            const float s = rd(rd(rd(rd(1.0f / wavelen) * float(orig)) - float(low_freq_factor)) /
                               float(high_freq_factor - low_freq_factor));
            scaled = rd(rd(rd(rd(1.0f - s) * inv) / float(factor)) + rd(s * inv));
        }
        f[std::size_t(i)] = double(inv) / double(scaled);
    }
    return f;
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
