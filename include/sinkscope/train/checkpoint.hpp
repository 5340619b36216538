// Training checkpoints in safetensors: weights, AdamW state, step, RNG/data state and the run's
// configuration, written atomically.
//
// Tensors (dtype F32 for float runs, F64 for double), under the canonical parameter names of
// model::visit_parameters:
//   param.<name>    the weights
//   adam_m.<name>   AdamW first moment        adam_v.<name>   second moment
// __metadata__ (strings, as safetensors requires):
//   magic "sinkscope-checkpoint", version "1", step (updates done), optimizer_step, config (model
//   Config JSON, config_io.hpp), run (the trainer's settings JSON), rng (generator state text), dtype.
//
// Crash safety: the file is written to "<path>.tmp", flushed and fsync'ed, then renamed over <path>
// (rename is atomic on POSIX) and the directory is fsync'ed. A run killed mid-write leaves the previous
// checkpoint intact and at most a stale .tmp, which nothing reads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "sinkscope/core/error.hpp"
#include "sinkscope/io/safetensors.hpp"
#include "sinkscope/model/config.hpp"
#include "sinkscope/model/weights.hpp"
#include "sinkscope/model/config_io.hpp"
#include "sinkscope/train/init.hpp"
#include "sinkscope/train/model_backward.hpp"
#include "sinkscope/train/optimizer.hpp"

namespace sinkscope::train {

struct TensorToWrite {
    std::string name;
    std::string dtype;                 // "F32", "F64", "I32", ...
    std::vector<std::int64_t> shape;
    const void* data = nullptr;
    std::uint64_t nbytes = 0;
};

// Writes a safetensors file atomically (tmp + fsync + rename). Metadata values must be strings.
inline void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                              const nlohmann::json& metadata) {
    nlohmann::json header = nlohmann::json::object();
    std::uint64_t offset = 0;
    for (const auto& t : tensors) {
        header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.nbytes}}};
        offset += t.nbytes;
    }
    if (!metadata.empty()) {
        for (auto it = metadata.begin(); it != metadata.end(); ++it)
            require(it.value().is_string(), "write_safetensors: metadata '" + it.key() + "' must be a string", {path, "", {}});
        header["__metadata__"] = metadata;
    }
    std::string h = header.dump();
    while ((8 + h.size()) % 8 != 0) h.push_back(' ');  // 8-byte aligned data section
    const std::string tmp = path + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    require(f != nullptr, "cannot create the checkpoint file: " + std::string(std::strerror(errno)), {tmp, "", {}});
    auto fail = [&](const std::string& what) {
        std::fclose(f);
        std::remove(tmp.c_str());
        throw Error("writing the checkpoint failed (" + what + "): " + std::string(std::strerror(errno)), {tmp, "", {}});
    };
    std::uint64_t n = h.size();
    unsigned char le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(n >> (8 * i));
    if (std::fwrite(le, 1, 8, f) != 8 || std::fwrite(h.data(), 1, h.size(), f) != h.size()) fail("header");
    for (const auto& t : tensors)
        if (t.nbytes && std::fwrite(t.data, 1, t.nbytes, f) != t.nbytes) fail("tensor " + t.name);
    if (std::fflush(f) != 0 || ::fsync(::fileno(f)) != 0) fail("flush");
    if (std::fclose(f) != 0) { std::remove(tmp.c_str()); throw Error("closing the checkpoint failed", {tmp, "", {}}); }
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
        throw Error("renaming the checkpoint into place failed: " + std::string(std::strerror(errno)), {path, "", {}});
    const std::string dir = std::filesystem::path(path).parent_path().string();
    const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY);
    if (dfd >= 0) { ::fsync(dfd); ::close(dfd); }
}

template <class T>
constexpr const char* dtype_name() { return std::is_same_v<T, float> ? "F32" : "F64"; }

template <class T>
struct Checkpoint {
    model::Config config;
    model::Weights<T> weights;
    model::Weights<T> adam_m, adam_v;
    std::int64_t step = 0;            // optimizer updates done
    std::int64_t optimizer_step = 0;  // AdamW's t (equal to step for a plain run)
    nlohmann::json run;               // the trainer's settings
    std::string rng;                  // generator state (Rng::state())
    std::string dtype;                // the tensors' dtype as saved, "F32" or "F64" ("" if the metadata lacks it);
                                      // load_checkpoint<T> converts them to T either way
};

template <class T>
void save_checkpoint(const std::string& path, const model::Config& c, model::Weights<T>& w, AdamW<T>& opt,
                     std::int64_t step, const nlohmann::json& run, const std::string& rng_state) {
    std::vector<TensorToWrite> out;
    auto add = [&](const std::string& prefix, model::Weights<T>& ws) {
        for (auto& r : tensor_refs(ws))
            out.push_back({prefix + r.name, dtype_name<T>(), r.shape, r.data, std::uint64_t(r.size) * sizeof(T)});
    };
    add("param.", w);
    add("adam_m.", opt.m());
    add("adam_v.", opt.v());
    const nlohmann::json meta = {{"magic", "sinkscope-checkpoint"}, {"version", "1"}, {"step", std::to_string(step)},
                                 {"optimizer_step", std::to_string(opt.step())}, {"config", model::config_to_json(c).dump()},
                                 {"run", run.dump()}, {"rng", rng_state}, {"dtype", dtype_name<T>()}};
    write_safetensors(path, out, meta);
}

template <class T>
Checkpoint<T> load_checkpoint(const std::string& path) {
    io::SafetensorsFile f(path);
    const auto& meta = f.metadata();
    auto get = [&](const char* key) {
        require(meta.contains(key) && meta[key].is_string(), std::string("checkpoint metadata lacks '") + key + "'", {path, "", {}});
        return meta[key].get<std::string>();
    };
    require(get("magic") == "sinkscope-checkpoint", "not a sinkscope checkpoint (magic '" + get("magic") + "')", {path, "", {}});
    require(get("version") == "1", "unsupported checkpoint version " + get("version"), {path, "", {}});
    Checkpoint<T> ck;
    ck.config = model::config_from_json(nlohmann::json::parse(get("config")));
    ck.config.validate();
    ck.step = std::stoll(get("step"));
    ck.optimizer_step = std::stoll(get("optimizer_step"));
    ck.run = nlohmann::json::parse(get("run"));
    ck.rng = get("rng");
    ck.dtype = meta.value("dtype", std::string());
    ck.weights = init_weights<T>(ck.config, 0);  // the shapes; every value is read below
    ck.adam_m = zeros_like(ck.weights);
    ck.adam_v = zeros_like(ck.weights);
    auto read = [&](const std::string& prefix, model::Weights<T>& ws) {
        for (auto& r : tensor_refs(ws)) {
            const std::string name = prefix + r.name;
            const io::SafetensorsTensor* t = f.find(name);
            require(t != nullptr, "checkpoint lacks tensor", {path, name, {}});
            require(t->shape == r.shape, "tensor shape disagrees with the checkpoint's config", {path, name, t->offset});
            const std::uint8_t* raw = f.raw(*t);
            if (t->dtype == "F32") {
                for (std::int64_t i = 0; i < r.size; ++i) { float v; std::memcpy(&v, raw + 4 * i, 4); r.data[i] = T(v); }
            } else if (t->dtype == "F64") {
                for (std::int64_t i = 0; i < r.size; ++i) { double v; std::memcpy(&v, raw + 8 * i, 8); r.data[i] = T(v); }
            } else {
                throw Error("checkpoint tensor has dtype " + t->dtype + " (F32 or F64 expected)", {path, name, t->offset});
            }
        }
    };
    read("param.", ck.weights);
    read("adam_m.", ck.adam_m);
    read("adam_v.", ck.adam_v);
    return ck;
}

// Where the settings of a run about to resume (`asked`, TrainConfig::to_json) differ from those its
// checkpoint was trained with (`saved`, Checkpoint::run): one entry per difference, "path: saved -> asked",
// the path a JSON Pointer (e.g. /task/bos, /eval_sequences), "(none)" for a setting one side lacks.
// Top-level keys in `ignored` are left out. Empty: the same run. (nlohmann::json::diff finds the paths.)
inline std::vector<std::string> settings_differences(const nlohmann::json& saved, const nlohmann::json& asked,
                                                     const std::vector<std::string>& ignored = {}) {
    std::vector<std::string> out;
    for (const auto& op : nlohmann::json::diff(saved, asked)) {
        const nlohmann::json::json_pointer at(op.at("path").get<std::string>());
        const std::string path = at.to_string();
        const std::string top = path.empty() ? path : path.substr(1, path.find('/', 1) - 1);  // npos - 1: to the end
        if (std::find(ignored.begin(), ignored.end(), top) != ignored.end()) continue;
        auto value = [&](const nlohmann::json& j) { return j.contains(at) ? j.at(at).dump() : std::string("(none)"); };
        out.push_back(path + ": " + value(saved) + " -> " + value(asked));
    }
    return out;
}

}  // namespace sinkscope::train
