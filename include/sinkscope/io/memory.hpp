// sinkscope::io memory checks — the memory a checkpoint's weights take once converted to float32 (or
// float64), the memory this process can still have, and an Error naming the file when one exceeds the other.
//
// The loaders convert every tensor to T as they read it (dequantize.hpp), so a checkpoint needs about
//   (values in all its tensors) × sizeof(T) bytes
// however small the file is: a 7B Q4_K_M GGUF of 4.7 GB needs about 30 GB as float32. Allocating that on a
// machine without it ends in std::bad_alloc halfway through the load, or in the kernel's OOM killer
// (SIGKILL: nothing to catch). require_weights_fit() refuses before the first allocation, with a message
// saying how much is needed and how much is available. The count is read from the tensor tables only (the
// GGUF tensor infos, the safetensors headers), so it costs an open of the file, not a load. It counts every
// tensor in the file, also those a model does not read (a training checkpoint's AdamW moments are read too).
//
// Available memory: MemAvailable of /proc/meminfo (the kernel's estimate of what can be allocated without
// swapping), lowered to the headroom of a cgroup memory limit (v2 memory.max − memory.current, or v1
// memory.limit_in_bytes − memory.usage_in_bytes) when there is one, since inside a container MemAvailable
// is the host's. Unknown (no /proc, not Linux) means no check.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "sinkscope/core/error.hpp"
#include "sinkscope/io/gguf.hpp"
#include "sinkscope/io/safetensors.hpp"

namespace sinkscope::io {

namespace detail {

inline std::uint64_t add_saturating(std::uint64_t a, std::uint64_t b) noexcept { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
inline std::uint64_t mul_saturating(std::uint64_t a, std::uint64_t b) noexcept {
    return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

inline std::optional<std::string> read_small_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::ostringstream os;
    os << in.rdbuf();
    return os.str();
}

/// MemAvailable of a /proc/meminfo text ("MemAvailable:   23935384 kB"), in bytes; nullopt if absent.
inline std::optional<std::uint64_t> meminfo_available(const std::string& text) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("MemAvailable:", 0) != 0) continue;
        unsigned long long kb = 0;
        if (std::sscanf(line.c_str() + 13, "%llu", &kb) != 1) return std::nullopt;
        return mul_saturating(kb, 1024);
    }
    return std::nullopt;
}

/// limit − usage of a cgroup, from the texts of its limit and usage files; nullopt for no limit ("max", or
/// v1's "unlimited" 2^63 rounded down to a page) or unreadable text.
inline std::optional<std::uint64_t> cgroup_headroom(const std::optional<std::string>& limit, const std::optional<std::string>& usage) {
    if (!limit || !usage) return std::nullopt;
    unsigned long long lim = 0, used = 0;
    if (std::sscanf(limit->c_str(), "%llu", &lim) != 1 || std::sscanf(usage->c_str(), "%llu", &used) != 1) return std::nullopt;
    if (lim >= (1ull << 62)) return std::nullopt;
    return lim > used ? lim - used : 0;
}

}  // namespace detail

/// Bytes this process can still allocate: min(MemAvailable, cgroup limit − usage), read under `root`
/// ("" for the real /proc and /sys; a directory with the same layout in tests). nullopt when unknown.
inline std::optional<std::uint64_t> available_memory(const std::string& root = "") {
    std::optional<std::uint64_t> avail;
    if (auto m = detail::read_small_file(root + "/proc/meminfo")) avail = detail::meminfo_available(*m);
    const std::string cg = root + "/sys/fs/cgroup";
    for (const auto& [limit, usage] : {std::pair<const char*, const char*>{"/memory.max", "/memory.current"},
                                       {"/memory/memory.limit_in_bytes", "/memory/memory.usage_in_bytes"}})
        if (auto h = detail::cgroup_headroom(detail::read_small_file(cg + limit), detail::read_small_file(cg + usage)))
            avail = avail ? std::min(*avail, *h) : *h;
    return avail;
}

/// "29.7 GiB".
inline std::string format_gib(std::uint64_t bytes) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
    return buf;
}

/// Values in all tensors of a file (saturating at 2^64 − 1).
inline std::uint64_t value_count(const GgufFile& f) {
    std::uint64_t n = 0;
    for (const auto& t : f.tensors()) n = detail::add_saturating(n, static_cast<std::uint64_t>(t.n_elements()));
    return n;
}
inline std::uint64_t value_count(const SafetensorsFile& f) {
    std::uint64_t n = 0;
    for (const auto& t : f.tensors()) n = detail::add_saturating(n, static_cast<std::uint64_t>(t.n_elements()));
    return n;
}

/// A Hugging Face model directory: a directory holding config.json (model/load.hpp's load_hf).
inline bool is_hf_directory(const std::string& path) {
    std::error_code ec;
    return std::filesystem::is_directory(path, ec) && std::filesystem::exists(path + "/config.json", ec);
}
/// A training run's directory: no config.json, but the checkpoint.safetensors a run writes (train/checkpoint.hpp).
inline bool is_run_directory(const std::string& path) {
    std::error_code ec;
    return std::filesystem::is_directory(path, ec) && !std::filesystem::exists(path + "/config.json", ec) &&
           std::filesystem::exists(path + "/checkpoint.safetensors", ec);
}

/// Values in all tensors of the checkpoint at `path`, as the loaders find it: a Hugging Face directory (its
/// model.safetensors or the shards of its index), a training run's directory (its checkpoint.safetensors), a
/// .safetensors file, or else a GGUF file. Errors are the parsers' (naming the file, tensor and offset).
inline std::uint64_t checkpoint_value_count(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    auto is_dir = [&ec](const std::string& q) { return fs::is_directory(q, ec); };
    auto exists = [&ec](const std::string& q) { return fs::exists(q, ec); };
    if (!exists(path)) throw Error("no such file or directory", {path, "", std::nullopt});
    std::string p = path;
    if (is_run_directory(p)) p += "/checkpoint.safetensors";
    if (is_dir(p) || fs::path(p).extension() == ".safetensors") {
        const SafetensorsCheckpoint ck(p);
        std::uint64_t n = 0;
        for (const auto& f : ck.files()) n = detail::add_saturating(n, value_count(*f));
        return n;
    }
    return value_count(GgufFile(p));
}

/// Throws an Error naming `path` unless `values` values of `value_bytes` bytes each fit in `available`
/// bytes ("needs 28.4 GiB of memory for float32 weights, 21.9 GiB available"). No check when `available`
/// is unknown. Returns the bytes needed.
inline std::uint64_t require_fits(std::uint64_t values, std::size_t value_bytes, std::optional<std::uint64_t> available,
                                  const std::string& path) {
    const std::uint64_t needed = detail::mul_saturating(values, value_bytes);
    if (available && needed > *available)
        throw Error("needs " + format_gib(needed) + " of memory for " + (value_bytes == 8 ? "float64" : "float32") +
                        " weights (" + std::to_string(values) + " values), " + format_gib(*available) + " available",
                    {path, "", std::nullopt});
    return needed;
}

/// require_fits() for every tensor of the checkpoint at `path` against available_memory(): call it before
/// model::load_model<T> / train::load_for_analysis<T> with value_bytes = sizeof(T). Returns the bytes needed.
inline std::uint64_t require_weights_fit(const std::string& path, std::size_t value_bytes,
                                         std::optional<std::uint64_t> available = available_memory()) {
    return require_fits(checkpoint_value_count(path), value_bytes, available, path);
}

namespace detail {
// Tensors the loader reorders or transposes, so that file-type storage holds them as float32: GPT-NeoX's
// per-head q|k|v in Hugging Face ("query_key_value") and GPT-2's transposed Conv1D maps (c_attn, c_fc,
// c_proj). Fused q|k|v and gate|up and stacked experts (3-D) are row ranges, views in place.
inline bool loaded_dense(const std::string& name) {
    for (const char* part : {"query_key_value", "c_attn", "c_fc", "c_proj"})
        if (name.find(part) != std::string::npos) return true;
    return false;
}
inline std::uint64_t file_type_bytes(const std::string& name, std::size_t rank, bool kept_type, std::uint64_t nbytes,
                                     std::int64_t n_elements) {
    const bool in_place = (rank == 2 || rank == 3) && kept_type && !loaded_dense(name);
    return in_place ? nbytes : mul_saturating(static_cast<std::uint64_t>(n_elements), 4);
}
}  // namespace detail

/// Bytes the checkpoint at `path` takes with file-type storage (model/load.hpp, WeightStorage::file_type):
/// 2-D tensors of a GGUF block type or F16/BF16 (GGUF or safetensors) at their size in the file
/// (memory-mapped, read in place; 3-D ones are stacked experts), every other tensor as float32 values.
/// Tensors the loader reorders or transposes stay float32 there too, so they count as float32 here
/// (detail::loaded_dense, by name). A training run's checkpoint loads float32 whatever the storage, so it
/// counts 4 bytes a value. Position embeddings and MoE routers (2-D, dense) are counted at their file size:
/// an undercount of at most a few MB.
inline std::uint64_t checkpoint_file_type_bytes(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (is_hf_directory(path)) {
        const SafetensorsCheckpoint ck(path);
        std::uint64_t n = 0;
        for (const auto& f : ck.files())
            for (const auto& t : f->tensors())
                n = detail::add_saturating(n, detail::file_type_bytes(t.name, t.shape.size(), t.dtype == "BF16" || t.dtype == "F16",
                                                                      t.nbytes, t.n_elements()));
        return n;
    }
    if (fs::is_directory(path, ec) || fs::path(path).extension() == ".safetensors")
        return detail::mul_saturating(checkpoint_value_count(path), 4);
    const GgufFile f(path);
    std::uint64_t n = 0;
    for (const auto& t : f.tensors())
        n = detail::add_saturating(n, detail::file_type_bytes(t.name, t.shape.size(), t.type != GgmlType::F32 && is_supported(t.type),
                                                              t.nbytes, t.n_elements()));
    return n;
}

/// require_weights_fit() for file-type storage: checkpoint_file_type_bytes(path) against `available`
/// ("needs 4.4 GiB of memory for weights in their file types, 3.0 GiB available"). Returns the bytes needed.
inline std::uint64_t require_weights_fit_file_type(const std::string& path,
                                                   std::optional<std::uint64_t> available = available_memory()) {
    const std::uint64_t needed = checkpoint_file_type_bytes(path);
    if (available && needed > *available)
        throw Error("needs " + format_gib(needed) + " of memory for weights in their file types, " + format_gib(*available) +
                        " available",
                    {path, "", std::nullopt});
    return needed;
}

}  // namespace sinkscope::io
