// Loading checkpoints into Config + Weights<T>: GGUF (llama, mistral, qwen2, qwen3, gpt2) and Hugging Face
// safetensors directories (config.json + model.safetensors or a sharded index).
//
// Every hyperparameter is read from the file's own metadata. Every tensor's shape is checked against
// the config before it is read; a mismatch throws sinkscope::Error naming the file, the tensor and its
// byte offset. RoPE layout is chosen here: llama.cpp stores llama/mistral Q and K rows permuted for
// interleaved rotation, qwen2/qwen3 in Hugging Face's half-split order; safetensors are half-split.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/io/gguf.hpp"
#include "sinkscope/io/safetensors.hpp"
#include "sinkscope/model/config.hpp"
#include "sinkscope/model/weights.hpp"

namespace sinkscope::model {

template <class T>
struct LoadedModel {
    Config config;
    Weights<T> weights;
    std::string path;        // file or directory it came from
    std::string format;      // "gguf" or "safetensors"
    nlohmann::json metadata; // GGUF key/values, or Hugging Face config.json
};

namespace detail {

// Reads tensors by name, checking them against an expected PyTorch-order shape, straight into
// caller-owned storage (dequantizing GGUF blocks on the way).
struct TensorSource {
    std::function<bool(const std::string&)> has;
    std::function<void(const std::string&, const std::vector<std::int64_t>&, float*)> fill_f32;
    std::function<void(const std::string&, const std::vector<std::int64_t>&, double*)> fill_f64;
};

template <class T>
void fill_tensor(const TensorSource& src, const std::string& name, const std::vector<std::int64_t>& shape, T* dst) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "weights are float or double");
    if constexpr (std::is_same_v<T, double>) src.fill_f64(name, shape, dst);
    else src.fill_f32(name, shape, dst);
}

template <class T>
Mat<T> read_matrix(const TensorSource& src, const std::string& name, std::int64_t rows, std::int64_t cols) {
    Mat<T> m(rows, cols);
    fill_tensor<T>(src, name, {rows, cols}, m.data());
    return m;
}
template <class T>
Vec<T> read_vector(const TensorSource& src, const std::string& name, std::int64_t n) {
    Vec<T> v(n);
    fill_tensor<T>(src, name, {n}, v.data());
    return v;
}
template <class T>
Vec<T> read_optional_vector(const TensorSource& src, const std::string& name, std::int64_t n) {
    return src.has(name) ? read_vector<T>(src, name, n) : Vec<T>();
}

inline std::vector<std::int64_t> reversed(std::vector<std::int64_t> s) { std::reverse(s.begin(), s.end()); return s; }
inline std::string shape_str(const std::vector<std::int64_t>& s) {
    std::string r = "[";
    for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
}

inline TensorSource gguf_source(const io::GgufFile& f) {
    auto checked = [&f](const std::string& name, const std::vector<std::int64_t>& want) -> const io::GgufTensor& {
        const io::GgufTensor& t = f.tensor(name);
        // GGUF lists dimensions fastest first; PyTorch order is the reverse.
        if (reversed(t.shape) != want)
            throw Error("tensor shape " + shape_str(reversed(t.shape)) + " does not match the config's " + shape_str(want),
                        {f.path(), name, t.offset});
        return t;
    };
    TensorSource s;
    s.has = [&f](const std::string& n) { return f.find(n) != nullptr; };
    s.fill_f32 = [&f, checked](const std::string& n, const std::vector<std::int64_t>& w, float* dst) { f.load_into(checked(n, w), dst); };
    s.fill_f64 = [&f, checked](const std::string& n, const std::vector<std::int64_t>& w, double* dst) { f.load_into(checked(n, w), dst); };
    return s;
}

inline TensorSource safetensors_source(const io::SafetensorsCheckpoint& ck, const std::string& dir) {
    auto check = [&ck, dir](const std::string& name, const std::vector<std::int64_t>& want) {
        if (!ck.has(name)) throw Error("tensor missing from checkpoint", {dir, name, {}});
        if (ck.shape(name) != want)
            throw Error("tensor shape " + shape_str(ck.shape(name)) + " does not match the config's " + shape_str(want), {dir, name, {}});
    };
    TensorSource s;
    s.has = [&ck](const std::string& n) { return ck.has(n); };
    s.fill_f32 = [&ck, check](const std::string& n, const std::vector<std::int64_t>& w, float* dst) {
        check(n, w); const auto v = ck.load<float>(n); std::copy(v.begin(), v.end(), dst); };
    s.fill_f64 = [&ck, check](const std::string& n, const std::vector<std::int64_t>& w, double* dst) {
        check(n, w); const auto v = ck.load<double>(n); std::copy(v.begin(), v.end(), dst); };
    return s;
}

// Splits a fused (3·d × d) QKV matrix / (3·d) bias into its three parts.
template <class T>
void split_qkv(LayerWeights<T>& L, const Mat<T>& qkv, const Vec<T>& b, std::int64_t d) {
    L.wq = qkv.topRows(d); L.wk = qkv.middleRows(d, d); L.wv = qkv.bottomRows(d);
    if (b.size()) { L.bq = b.head(d); L.bk = b.segment(d, d); L.bv = b.tail(d); }
}

// ---- GGUF ----
inline Config gguf_config(const io::GgufFile& f) {
    const auto& md = f.metadata();
    auto get = [&](const std::string& key) -> const nlohmann::json& {
        auto it = md.find(key);
        if (it == md.end()) throw Error("metadata key '" + key + "' is missing", {f.path(), "", {}});
        return *it;
    };
    auto get_or = [&](const std::string& key, const nlohmann::json& dflt) { auto it = md.find(key); return it == md.end() ? dflt : *it; };
    const std::string arch = get("general.architecture").get<std::string>();
    const std::string a = arch + ".";
    Config c;
    c.architecture = arch;
    c.n_layers = get(a + "block_count").get<std::int64_t>();
    c.d_model = get(a + "embedding_length").get<std::int64_t>();
    c.n_heads = get(a + "attention.head_count").get<std::int64_t>();
    c.n_kv_heads = get_or(a + "attention.head_count_kv", c.n_heads).get<std::int64_t>();
    c.head_dim = get_or(a + "attention.key_length", c.n_heads ? c.d_model / c.n_heads : 0).get<std::int64_t>();
    c.d_ff = get(a + "feed_forward_length").get<std::int64_t>();
    c.context_length = get(a + "context_length").get<std::int64_t>();
    const io::GgufTensor& embed = f.tensor("token_embd.weight");
    c.vocab_size = get_or(a + "vocab_size", embed.shape.size() == 2 ? embed.shape[1] : 0).get<std::int64_t>();
    c.tied_embeddings = f.find("output.weight") == nullptr;
    if (arch == "llama" || arch == "mistral" || arch == "qwen2" || arch == "qwen3") {
        c.norm = NormKind::rmsnorm;
        c.norm_eps = get(a + "attention.layer_norm_rms_epsilon").get<double>();
        c.ffn = FfnKind::swiglu;
        c.activation = Activation::silu;
        c.positions = PositionKind::rope;
        c.rope_base = get_or(a + "rope.freq_base", 10000.0).get<double>();
        c.rope_layout = (arch == "llama" || arch == "mistral") ? RopeLayout::interleaved : RopeLayout::half_split;
        if (md.contains(a + "rope.scaling.type") && md[a + "rope.scaling.type"] != "none")
            throw Error("RoPE scaling '" + md[a + "rope.scaling.type"].get<std::string>() + "' is not supported", {f.path(), "", {}});
        c.qkv_bias = f.find("blk.0.attn_q.bias") != nullptr;
        c.qk_norm = f.find("blk.0.attn_q_norm.weight") != nullptr;
        c.sliding_window = get_or(a + "attention.sliding_window", 0).get<std::int64_t>();
        if (c.sliding_window >= c.context_length) c.sliding_window = 0;
    } else if (arch == "gpt2") {
        c.norm = NormKind::layernorm;
        c.norm_bias = true;
        c.norm_eps = get(a + "attention.layer_norm_epsilon").get<double>();
        c.ffn = FfnKind::gelu;
        c.activation = Activation::gelu_tanh;
        c.positions = PositionKind::learned;
        c.qkv_bias = c.out_bias = c.mlp_bias = true;
    } else {
        throw Error("unknown architecture '" + arch + "' (supported: llama, mistral, qwen2, qwen3, gpt2)", {f.path(), "", {}});
    }
    c.validate();
    return c;
}

template <class T>
Weights<T> gguf_weights(const io::GgufFile& f, const Config& c) {
    const TensorSource s = gguf_source(f);
    const std::int64_t d = c.d_model, V = c.vocab_size;
    Weights<T> w;
    w.tok_embed = read_matrix<T>(s, "token_embd.weight", V, d);
    if (c.positions == PositionKind::learned) w.pos_embed = read_matrix<T>(s, "position_embd.weight", c.context_length, d);
    w.layers.resize(c.n_layers);
    for (std::int64_t l = 0; l < c.n_layers; ++l) {
        LayerWeights<T>& L = w.layers[l];
        const std::string b = "blk." + std::to_string(l) + ".";
        L.attn_norm.weight = read_vector<T>(s, b + "attn_norm.weight", d);
        L.ffn_norm.weight = read_vector<T>(s, b + "ffn_norm.weight", d);
        if (c.norm_bias) {
            L.attn_norm.bias = read_vector<T>(s, b + "attn_norm.bias", d);
            L.ffn_norm.bias = read_vector<T>(s, b + "ffn_norm.bias", d);
        }
        if (c.architecture == "gpt2") {
            split_qkv(L, read_matrix<T>(s, b + "attn_qkv.weight", 3 * d, d), read_vector<T>(s, b + "attn_qkv.bias", 3 * d), d);
            L.bo = read_vector<T>(s, b + "attn_output.bias", d);
            L.b_up = read_vector<T>(s, b + "ffn_up.bias", c.d_ff);
            L.b_down = read_vector<T>(s, b + "ffn_down.bias", d);
        } else {
            L.wq = read_matrix<T>(s, b + "attn_q.weight", c.q_dim(), d);
            L.wk = read_matrix<T>(s, b + "attn_k.weight", c.kv_dim(), d);
            L.wv = read_matrix<T>(s, b + "attn_v.weight", c.kv_dim(), d);
            if (c.qkv_bias) {
                L.bq = read_vector<T>(s, b + "attn_q.bias", c.q_dim());
                L.bk = read_vector<T>(s, b + "attn_k.bias", c.kv_dim());
                L.bv = read_vector<T>(s, b + "attn_v.bias", c.kv_dim());
            }
            if (c.qk_norm) {
                L.q_norm = read_vector<T>(s, b + "attn_q_norm.weight", c.head_dim);
                L.k_norm = read_vector<T>(s, b + "attn_k_norm.weight", c.head_dim);
            }
            L.w_gate = read_matrix<T>(s, b + "ffn_gate.weight", c.d_ff, d);
        }
        L.wo = read_matrix<T>(s, b + "attn_output.weight", d, c.q_dim());
        L.w_up = read_matrix<T>(s, b + "ffn_up.weight", c.d_ff, d);
        L.w_down = read_matrix<T>(s, b + "ffn_down.weight", d, c.d_ff);
    }
    w.final_norm.weight = read_vector<T>(s, "output_norm.weight", d);
    if (c.norm_bias) w.final_norm.bias = read_vector<T>(s, "output_norm.bias", d);
    if (!c.tied_embeddings) w.lm_head = read_matrix<T>(s, "output.weight", V, d);
    return w;
}

// ---- Hugging Face ----
inline nlohmann::json read_json_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw Error("cannot open", {path, "", {}});
    try { return nlohmann::json::parse(in); }
    catch (const nlohmann::json::exception& e) { throw Error(std::string("invalid JSON: ") + e.what(), {path, "", {}}); }
}

inline Config hf_config(const nlohmann::json& j, const std::string& path) {
    auto get = [&](const char* key) -> const nlohmann::json& {
        if (!j.contains(key) || j[key].is_null()) throw Error(std::string("config key '") + key + "' is missing", {path, "", {}});
        return j[key];
    };
    auto get_or = [&](const char* key, const nlohmann::json& dflt) { return j.contains(key) && !j[key].is_null() ? j[key] : dflt; };
    const std::string type = get("model_type").get<std::string>();
    Config c;
    c.architecture = type;
    if (type == "gpt2") {
        c.n_layers = get("n_layer").get<std::int64_t>();
        c.d_model = get("n_embd").get<std::int64_t>();
        c.n_heads = c.n_kv_heads = get("n_head").get<std::int64_t>();
        c.head_dim = c.d_model / c.n_heads;
        c.d_ff = get_or("n_inner", 4 * c.d_model).get<std::int64_t>();
        c.context_length = get("n_positions").get<std::int64_t>();
        c.vocab_size = get("vocab_size").get<std::int64_t>();
        c.norm = NormKind::layernorm; c.norm_bias = true;
        c.norm_eps = get_or("layer_norm_epsilon", 1e-5).get<double>();
        c.ffn = FfnKind::gelu;
        const std::string act = get_or("activation_function", "gelu_new").get<std::string>();
        if (act == "gelu_new" || act == "gelu_pytorch_tanh") c.activation = Activation::gelu_tanh;
        else if (act == "gelu") c.activation = Activation::gelu_erf;
        else throw Error("unsupported activation_function '" + act + "'", {path, "", {}});
        c.positions = PositionKind::learned;
        c.qkv_bias = c.out_bias = c.mlp_bias = true;
        c.tied_embeddings = get_or("tie_word_embeddings", true).get<bool>();
    } else if (type == "llama" || type == "mistral" || type == "qwen2" || type == "qwen3") {
        c.n_layers = get("num_hidden_layers").get<std::int64_t>();
        c.d_model = get("hidden_size").get<std::int64_t>();
        c.n_heads = get("num_attention_heads").get<std::int64_t>();
        c.n_kv_heads = get_or("num_key_value_heads", c.n_heads).get<std::int64_t>();
        c.head_dim = get_or("head_dim", c.d_model / c.n_heads).get<std::int64_t>();
        c.d_ff = get("intermediate_size").get<std::int64_t>();
        c.context_length = get("max_position_embeddings").get<std::int64_t>();
        c.vocab_size = get("vocab_size").get<std::int64_t>();
        c.norm_eps = get("rms_norm_eps").get<double>();
        const std::string act = get_or("hidden_act", "silu").get<std::string>();
        if (act != "silu") throw Error("unsupported hidden_act '" + act + "'", {path, "", {}});
        // transformers ≥ 5 nests rope_theta in rope_parameters; older configs have it at the top.
        nlohmann::json rope = get_or("rope_parameters", get_or("rope_scaling", nlohmann::json::object()));
        c.rope_base = get_or("rope_theta", rope.value("rope_theta", 10000.0)).get<double>();
        const std::string rope_type = rope.value("rope_type", rope.value("type", std::string("default")));
        if (rope_type != "default") throw Error("RoPE scaling '" + rope_type + "' is not supported", {path, "", {}});
        c.rope_layout = RopeLayout::half_split;
        c.qkv_bias = type == "qwen2" || get_or("attention_bias", false).get<bool>();
        c.qk_norm = type == "qwen3";
        c.tied_embeddings = get_or("tie_word_embeddings", false).get<bool>();
        const bool windowed = type == "mistral" || get_or("use_sliding_window", false).get<bool>();
        if (windowed) c.sliding_window = get_or("sliding_window", 0).get<std::int64_t>();
        if (c.sliding_window >= c.context_length) c.sliding_window = 0;
    } else {
        throw Error("unknown model_type '" + type + "' (supported: llama, mistral, qwen2, qwen3, gpt2)", {path, "", {}});
    }
    c.validate();
    return c;
}

template <class T>
Weights<T> hf_weights(const io::SafetensorsCheckpoint& ck, const std::string& dir, const Config& c) {
    const TensorSource s = safetensors_source(ck, dir);
    const std::int64_t d = c.d_model, V = c.vocab_size;
    Weights<T> w;
    w.layers.resize(c.n_layers);
    if (c.architecture == "gpt2") {
        const std::string p = ck.has("transformer.wte.weight") ? "transformer." : "";
        w.tok_embed = read_matrix<T>(s, p + "wte.weight", V, d);
        w.pos_embed = read_matrix<T>(s, p + "wpe.weight", c.context_length, d);
        for (std::int64_t l = 0; l < c.n_layers; ++l) {
            LayerWeights<T>& L = w.layers[l];
            const std::string b = p + "h." + std::to_string(l) + ".";
            L.attn_norm.weight = read_vector<T>(s, b + "ln_1.weight", d);
            L.attn_norm.bias = read_vector<T>(s, b + "ln_1.bias", d);
            L.ffn_norm.weight = read_vector<T>(s, b + "ln_2.weight", d);
            L.ffn_norm.bias = read_vector<T>(s, b + "ln_2.bias", d);
            // GPT-2's Conv1D stores (in × out): transpose to (out × in).
            split_qkv(L, Mat<T>(read_matrix<T>(s, b + "attn.c_attn.weight", d, 3 * d).transpose()),
                      read_vector<T>(s, b + "attn.c_attn.bias", 3 * d), d);
            L.wo = read_matrix<T>(s, b + "attn.c_proj.weight", d, d).transpose();
            L.bo = read_vector<T>(s, b + "attn.c_proj.bias", d);
            L.w_up = read_matrix<T>(s, b + "mlp.c_fc.weight", d, c.d_ff).transpose();
            L.b_up = read_vector<T>(s, b + "mlp.c_fc.bias", c.d_ff);
            L.w_down = read_matrix<T>(s, b + "mlp.c_proj.weight", c.d_ff, d).transpose();
            L.b_down = read_vector<T>(s, b + "mlp.c_proj.bias", d);
        }
        w.final_norm.weight = read_vector<T>(s, p + "ln_f.weight", d);
        w.final_norm.bias = read_vector<T>(s, p + "ln_f.bias", d);
    } else {
        w.tok_embed = read_matrix<T>(s, "model.embed_tokens.weight", V, d);
        for (std::int64_t l = 0; l < c.n_layers; ++l) {
            LayerWeights<T>& L = w.layers[l];
            const std::string b = "model.layers." + std::to_string(l) + ".";
            L.attn_norm.weight = read_vector<T>(s, b + "input_layernorm.weight", d);
            L.ffn_norm.weight = read_vector<T>(s, b + "post_attention_layernorm.weight", d);
            L.wq = read_matrix<T>(s, b + "self_attn.q_proj.weight", c.q_dim(), d);
            L.wk = read_matrix<T>(s, b + "self_attn.k_proj.weight", c.kv_dim(), d);
            L.wv = read_matrix<T>(s, b + "self_attn.v_proj.weight", c.kv_dim(), d);
            L.wo = read_matrix<T>(s, b + "self_attn.o_proj.weight", d, c.q_dim());
            if (c.qkv_bias) {
                L.bq = read_vector<T>(s, b + "self_attn.q_proj.bias", c.q_dim());
                L.bk = read_vector<T>(s, b + "self_attn.k_proj.bias", c.kv_dim());
                L.bv = read_vector<T>(s, b + "self_attn.v_proj.bias", c.kv_dim());
            }
            L.bo = read_optional_vector<T>(s, b + "self_attn.o_proj.bias", d);
            if (c.qk_norm) {
                L.q_norm = read_vector<T>(s, b + "self_attn.q_norm.weight", c.head_dim);
                L.k_norm = read_vector<T>(s, b + "self_attn.k_norm.weight", c.head_dim);
            }
            L.w_gate = read_matrix<T>(s, b + "mlp.gate_proj.weight", c.d_ff, d);
            L.w_up = read_matrix<T>(s, b + "mlp.up_proj.weight", c.d_ff, d);
            L.w_down = read_matrix<T>(s, b + "mlp.down_proj.weight", d, c.d_ff);
        }
        w.final_norm.weight = read_vector<T>(s, "model.norm.weight", d);
    }
    if (!c.tied_embeddings || ck.has("lm_head.weight")) {
        if (ck.has("lm_head.weight")) w.lm_head = read_matrix<T>(s, "lm_head.weight", V, d);
        else throw Error("untied model has no lm_head.weight", {dir, "lm_head.weight", {}});
    }
    return w;
}

}  // namespace detail

template <class T>
LoadedModel<T> load_gguf(const std::string& path) {
    io::GgufFile f(path);
    LoadedModel<T> m;
    m.config = detail::gguf_config(f);
    m.weights = detail::gguf_weights<T>(f, m.config);
    m.path = path;
    m.format = "gguf";
    m.metadata = f.metadata();
    return m;
}

template <class T>
LoadedModel<T> load_hf(const std::string& dir) {
    const std::string config_path = dir + "/config.json";
    LoadedModel<T> m;
    m.metadata = detail::read_json_file(config_path);
    m.config = detail::hf_config(m.metadata, config_path);
    io::SafetensorsCheckpoint ck(dir);
    m.weights = detail::hf_weights<T>(ck, dir, m.config);
    m.path = dir;
    m.format = "safetensors";
    return m;
}

// A .gguf file, or a Hugging Face directory (config.json + safetensors).
template <class T>
LoadedModel<T> load_model(const std::string& path) {
    namespace fs = std::filesystem;
    if (fs::is_directory(path)) return load_hf<T>(path);
    if (!fs::exists(path)) throw Error("no such file or directory", {path, "", {}});
    return load_gguf<T>(path);
}

}  // namespace sinkscope::model
