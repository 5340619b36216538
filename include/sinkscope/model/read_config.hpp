// A checkpoint's hyperparameters as a Config, for every family of model/families.hpp: a GGUF file's
// metadata (and the tensors that switch mechanisms on: Llama 3.1's rope_freqs, Qwen's q/k/v biases and
// QK-norm, llama.cpp's Mixtral written as arch "llama") and a Hugging Face config.json. model/load.hpp
// reads the weights for the Config these return.
#pragma once

#include <cmath>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/io/gguf.hpp"
#include "sinkscope/model/config.hpp"
#include "sinkscope/model/config_keys.hpp"
#include "sinkscope/model/families.hpp"
#include "sinkscope/model/parameter_table.hpp"

namespace sinkscope::model::detail {

// The Config of a GGUF file: the hyperparameters every architecture names alike, then its family's own
// (Family::gguf_config), then the switches its tensors reveal; validated.
inline Config gguf_config(const io::GgufFile& f) {
    const auto& md = f.metadata();
    auto it = md.find("general.architecture");
    if (it == md.end()) throw Error("metadata key 'general.architecture' is missing", {f.path(), "", {}});
    const std::string arch = typed<std::string>(*it, "general.architecture", f.path());
    const Family* fam = family_of_gguf_arch(arch);
    if (!fam) {
        const bool hf_only = family_of_hf_type(arch) != nullptr;
        throw Error("unknown architecture '" + arch + "' (GGUF: " + supported_names(true) + ")" +
                        (hf_only ? "; its Hugging Face directory can be loaded" : ""),
                    {f.path(), "", {}});
    }
    const GgufKeys k(md, arch, f.path());
    // Phi-3's LongRoPE frequency factors (two sets, switched by the sequence length) change every rotation.
    for (const char* factors : {"rope_factors_long.weight", "rope_factors_short.weight"})
        if (f.find(factors) != nullptr)
            throw Error("LongRoPE frequency factors are not supported", {f.path(), factors, f.find(factors)->offset});
    Config c;
    c.architecture = fam->name;
    c.n_layers = k.get<std::int64_t>("block_count");
    c.d_model = k.get<std::int64_t>("embedding_length");
    c.n_heads = k.get<std::int64_t>("attention.head_count");
    c.n_kv_heads = k.get_or<std::int64_t>("attention.head_count_kv", c.n_heads);
    c.head_dim = k.get_or<std::int64_t>("attention.key_length", c.n_heads ? c.d_model / c.n_heads : 0);
    c.d_ff = k.get<std::int64_t>("feed_forward_length");
    c.context_length = k.get<std::int64_t>("context_length");
    const io::GgufTensor& embed = f.tensor(fam->gguf.tok_embed);
    c.vocab_size = k.get_or<std::int64_t>("vocab_size", embed.shape.size() == 2 ? embed.shape[1] : 0);
    c.tied_embeddings = f.find(fam->gguf.lm_head) == nullptr;
    fam->gguf_config(c, k);
    // Llama 3.1's RoPE frequency divisors: llama.cpp's converter writes them as the F32 tensor
    // rope_freqs.weight [r/2] and llama.cpp rotates frequency i by pos · base^(−2i/r) / rope_freqs[i].
    if (const io::GgufTensor* freqs = f.find("rope_freqs.weight")) {
        const std::int64_t half = c.rope_dims() / 2;
        if (freqs->type != io::GgmlType::F32 || freqs->shape.size() != 1 || freqs->shape[0] != half)
            throw Error("RoPE frequency factors must be F32 [" + std::to_string(half) + "] (rope_dims()/2), got " +
                            io::type_name(freqs->type) + " with " + std::to_string(freqs->n_elements()) + " entries",
                        {f.path(), freqs->name, freqs->offset});
        const std::vector<float> v = f.load<float>(*freqs);
        for (std::size_t i = 0; i < v.size(); ++i)
            if (!(v[i] > 0) || !std::isfinite(v[i]))
                throw Error("RoPE frequency factor " + std::to_string(i) + " is " + std::to_string(v[i]) + ", not a finite value > 0",
                            {f.path(), freqs->name, freqs->offset});
        c.rope_freq_divisors.assign(v.begin(), v.end());
    }
    // A mixture of experts in place of the FFN: llama.cpp writes Mixtral as arch "llama" with expert_count.
    if (k.get_or<std::int64_t>("expert_count", 0) > 0) {
        c.ffn = FfnKind::moe;
        c.n_experts = k.get<std::int64_t>("expert_count");
        c.n_experts_used = k.get<std::int64_t>("expert_used_count");
        if (k.get_or<std::int64_t>("expert_gating_func", 1) != 1)  // gguf-py's ExpertGatingFuncType: 1 = softmax
            k.fail("expert gating other than softmax is not supported");
    }
    // Optional tensors tell which switches are on: biases of q, k, v (Qwen2) and QK-norm (Qwen3).
    if (!fam->gguf.bq.empty()) c.qkv_bias = c.qkv_bias || f.find(layer_name(fam->gguf.bq, 0)) != nullptr;
    if (!fam->gguf.q_norm.empty()) c.qk_norm = c.qk_norm || f.find(layer_name(fam->gguf.q_norm, 0)) != nullptr;
    if (c.sliding_window >= c.context_length) c.sliding_window = 0;
    c.validate();
    return c;
}

inline nlohmann::json read_json_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw Error("cannot open", {path, "", {}});
    try { return nlohmann::json::parse(in); }
    catch (const nlohmann::json::exception& e) { throw Error(std::string("invalid JSON: ") + e.what(), {path, "", {}}); }
}

inline const Family& hf_family(const nlohmann::json& j, const std::string& path) {
    if (!j.contains("model_type") || !j["model_type"].is_string()) throw Error("config key 'model_type' is missing", {path, "", {}});
    const std::string type = j["model_type"].get<std::string>();
    const Family* fam = family_of_hf_type(type);
    if (!fam) throw Error("unknown model_type '" + type + "' (supported: " + supported_names(false) + ")", {path, "", {}});
    return *fam;
}

// The Config of a Hugging Face config.json, by its model_type's family; validated.
inline Config hf_config(const nlohmann::json& j, const std::string& path) {
    const Family& fam = hf_family(j, path);
    const HfKeys k(j, path);
    Config c;
    c.architecture = fam.name;
    hf_common(c, k);
    fam.hf_config(c, k);
    if (c.sliding_window >= c.context_length) c.sliding_window = 0;
    c.validate();
    return c;
}

}  // namespace sinkscope::model::detail
