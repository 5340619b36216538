// Null-control models and checkpoints as models to analyse.
//
//   random_like(m, seed)          the layout of a loaded model (its Config, so every shape, head count,
//                                 norm and position kind) and its metadata (so the tokenizer still
//                                 works) with fresh random weights from train::init_weights. Every
//                                 claim that needs trained structure (a sink, a spike, a step-up block,
//                                 sink heads) must come out "not reproduced" or "not applicable" on it.
//   save_model(path, c, w)        writes a model as a sinkscope checkpoint (safetensors, zero optimiser
//                                 state), so `sinkscope random-model` can hand a null control to any tool.
//   load_for_analysis(path)       a .gguf file, a Hugging Face directory, a sinkscope checkpoint
//                                 (`*.safetensors` with magic "sinkscope-checkpoint") or a training run
//                                 directory holding checkpoint.safetensors.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include "sinkscope/io/memory.hpp"
#include "sinkscope/model/load.hpp"
#include "sinkscope/train/checkpoint.hpp"
#include "sinkscope/train/init.hpp"
#include "sinkscope/train/optimizer.hpp"

namespace sinkscope::train {

template <class T>
model::LoadedModel<T> random_like(const model::LoadedModel<T>& m, std::uint64_t seed, InitOptions o = {}) {
    model::LoadedModel<T> r;
    r.config = m.config;
    r.weights = init_weights<T>(m.config, seed, o);
    r.path = m.path;
    r.format = m.format;       // the tokenizer is read from the original file's metadata
    r.metadata = m.metadata;
    return r;
}

template <class T>
void save_model(const std::string& path, const model::Config& c, model::Weights<T> w, const nlohmann::json& note = {}) {
    AdamW<T> opt(AdamWConfig{}, w);
    save_checkpoint(path, c, w, opt, 0, note.is_null() ? nlohmann::json::object() : note, "");
}

namespace detail {
inline bool is_sinkscope_checkpoint(const std::string& path) {
    namespace fs = std::filesystem;
    if (!fs::is_regular_file(path) || fs::path(path).extension() != ".safetensors") return false;
    io::SafetensorsFile f(path);
    const auto& meta = f.metadata();
    return meta.contains("magic") && meta["magic"] == "sinkscope-checkpoint";
}
}  // namespace detail

template <class T>
model::LoadedModel<T> load_for_analysis(const std::string& path) {
    std::string ck = path;
    if (io::is_run_directory(path)) ck = path + "/checkpoint.safetensors";
    if (detail::is_sinkscope_checkpoint(ck)) {
        auto c = load_checkpoint<T>(ck);
        model::LoadedModel<T> m;
        m.config = c.config;
        m.weights = std::move(c.weights);
        m.path = ck;
        m.format = "sinkscope-checkpoint";
        m.metadata = {{"step", c.step}, {"run", c.run}};
        return m;
    }
    return model::load_model<T>(path);
}

// What a model's weights take in memory, as load_within_memory counted it before loading, and the storage
// it chose.
struct WeightMemory {
    std::uint64_t bytes = 0;
    const char* kind = "float32 weights";  // what `bytes` counts, for messages
    std::string storage = "float32";        // "float32", "file" or "bf16": the storage the load used
    std::string reason;                     // why the storage differs from the one asked for ("" when it does not)
};

// The model at `path` with `options` (the linear maps of a GGUF or a Hugging Face directory kept in their
// file types, memory-mapped, with WeightStorage::file_type; a training run's checkpoint loads as float32
// through load_for_analysis, its products in options.precision; WeightStorage::bf16 rounds the maps of either
// after the float32 load), after checking
// that its weights fit in the memory available (io/memory.hpp): a model too large is an Error naming the
// file, what it needs and what there is, instead of a std::bad_alloc or the OOM killer halfway through.
// `counted` (optional) receives what was counted, before the load starts.
//
// With options.file_type_when_short (the word "auto"), a GGUF or Hugging Face checkpoint whose float32
// weights do not fit keeps its linear maps in their file types instead, and stderr says so (a 7B Q4_K_M:
// 28 GiB as float32, 4.2 GB so); with float32 asked for explicitly, the Error names `--weights file` as the
// way out. `available` is the memory to check against (tests pass a figure; unknown means no check).
inline model::LoadedModel<float> load_within_memory(const std::string& path, const model::LoadOptions& options = {},
                                                    WeightMemory* counted = nullptr,
                                                    std::optional<std::uint64_t> available = io::available_memory()) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const bool gguf = !fs::is_directory(path, ec) && fs::path(path).extension() != ".safetensors";
    const bool hf = io::is_hf_directory(path);
    WeightMemory m;
    bool file_type = options.storage == model::WeightStorage::file_type && (gguf || hf);
    if (file_type) {
        m.bytes = io::require_weights_fit_file_type(path, available);
        m.kind = "weights (linear maps in their file types)";
        m.storage = "file";
    } else {
        const std::uint64_t float32_bytes = 4 * io::checkpoint_value_count(path);
        const bool fits = !available || float32_bytes <= *available;
        if (!fits && (gguf || hf) && options.storage == model::WeightStorage::float32) {
            const std::uint64_t kept = io::checkpoint_file_type_bytes(path);
            if (options.file_type_when_short && kept <= *available) {
                file_type = true;
                m.bytes = kept;
                m.kind = "weights (linear maps in their file types)";
                m.storage = "file";
                m.reason = "float32 weights need " + io::format_gib(float32_bytes) + ", " + io::format_gib(*available) +
                           " available: the linear maps stay in their file types (" + io::format_gib(kept) + ")";
                std::cerr << "sinkscope: " << path << ": " << m.reason << "; --weights float32 forces float32\n";
            } else if (!options.file_type_when_short && kept <= *available) {
                throw Error("needs " + io::format_gib(float32_bytes) + " of memory for float32 weights, " + io::format_gib(*available) +
                                " available; --weights file keeps the linear maps in their file types, memory-mapped (" +
                                io::format_gib(kept) + "), and --weights auto chooses that by itself",
                            {path, "", std::nullopt});
            }
        }
        if (!file_type) {
            m.bytes = io::require_weights_fit(path, sizeof(float), available);
            if (options.storage == model::WeightStorage::bf16) m.storage = "bf16";
        }
    }
    if (counted) *counted = m;
    if (file_type) {
        model::LoadOptions kept = options;
        kept.storage = model::WeightStorage::file_type;
        return model::load_model<float>(path, kept);
    }
    model::LoadedModel<float> loaded = load_for_analysis<float>(path);
    loaded.weights.set_precision(options.precision);  // the dense products' arithmetic (bf16: needs oneDNN)
    // BF16 storage: counted above as float32, what the load holds before the maps are rounded and freed.
    if (options.storage == model::WeightStorage::bf16) model::store_linear_maps_bf16(loaded.weights, options.compute);
    return loaded;
}

}  // namespace sinkscope::train
