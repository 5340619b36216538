// Typed access to a checkpoint's hyperparameters: a Hugging Face config.json (HfKeys) and a GGUF file's
// metadata (GgufKeys, "{arch}.key" by llama.cpp's convention). A missing key or a value of the wrong type
// is an Error naming the key and the file; defaults are the caller's (the family table, model/families.hpp).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "sinkscope/core/error.hpp"
#include "sinkscope/model/config.hpp"

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

}  // namespace sinkscope::model
