// sinkscope::io::SafetensorsFile / SafetensorsCheckpoint — Hugging Face safetensors checkpoints.
//
// Format (huggingface/safetensors, docs "Format"):
//
//   u64 N (little-endian) | N bytes of UTF-8 JSON header (may be padded with spaces) | data section
//   header = { "<tensor name>": { "dtype": "F32", "shape": [d0, d1, ...], "data_offsets": [begin, end] },
//              ..., "__metadata__": { "<str>": "<str>", ... } (optional) }
//
// data_offsets are relative to the data section (byte 8 + N); shapes are row-major, PyTorch order
// (the last dimension is contiguous). Checks made on open, each an Error naming file (and tensor):
// N <= file size - 8 and <= 100 MB (the reference implementation's limit); the header parses as a JSON
// object; every entry has a known dtype, a shape of non-negative integers whose product does not overflow,
// and begin <= end <= data size with end - begin == elements × dtype size. Tensors may be listed in any
// order; overlap and holes between them are not checked (nothing here relies on either).
//
// load<T>() converts F32, F16 and BF16 (exactly: every such value is a float) to T = float or double; other
// dtypes are listed but loading them is an Error naming the tensor.
//
// A *checkpoint* is a directory holding either model.safetensors or a sharded set described by
// model.safetensors.index.json ({"weight_map": {"<tensor>": "<shard file>", ...}}), as written by
// transformers' save_pretrained.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sinkscope/core/error.hpp"
#include "sinkscope/io/dequantize.hpp"
#include "sinkscope/io/mapped_file.hpp"

namespace sinkscope::io {

/// One tensor of a safetensors file. `offset` is absolute (from the start of the file).
struct SafetensorsTensor {
    std::string name;
    std::string dtype;                 // "F32", "F16", "BF16", "I32", ...
    std::vector<std::int64_t> shape;   // row-major, PyTorch order
    std::uint64_t offset = 0;          // absolute byte offset
    std::uint64_t nbytes = 0;

    std::int64_t n_elements() const noexcept {
        std::int64_t n = 1;
        for (std::int64_t d : shape) n *= d;  // cannot overflow: checked when the file was opened
        return n;
    }
};

namespace detail {

/// Bytes per element of a safetensors dtype, 0 if unknown (sub-byte F4/F6 types are not supported).
inline std::uint64_t safetensors_dtype_size(const std::string& dtype) noexcept {
    static const std::pair<const char*, std::uint64_t> kSizes[] = {
        {"BOOL", 1}, {"U8", 1}, {"I8", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1},
        {"I16", 2}, {"U16", 2}, {"F16", 2}, {"BF16", 2},
        {"I32", 4}, {"U32", 4}, {"F32", 4}, {"I64", 8}, {"U64", 8}, {"F64", 8}, {"C64", 8},
    };
    for (const auto& [name, size] : kSizes)
        if (dtype == name) return size;
    return 0;
}

inline constexpr std::uint64_t kSafetensorsMaxHeader = 100'000'000;

}  // namespace detail

class SafetensorsFile {
public:
    /// Opens and validates `path` (memory-mapped).
    explicit SafetensorsFile(std::string path) : SafetensorsFile(MappedFile(std::move(path))) {}

    /// Parses an already opened file (e.g. MappedFile::from_bytes).
    explicit SafetensorsFile(MappedFile file) : file_(std::move(file)) { parse(); }

    SafetensorsFile(SafetensorsFile&&) noexcept = default;
    SafetensorsFile& operator=(SafetensorsFile&&) noexcept = default;
    SafetensorsFile(const SafetensorsFile&) = delete;
    SafetensorsFile& operator=(const SafetensorsFile&) = delete;

    const std::string& path() const noexcept { return file_.path(); }

    /// Tensors in data order (by offset, then name).
    const std::vector<SafetensorsTensor>& tensors() const noexcept { return tensors_; }

    /// The "__metadata__" object of the header ({} when absent).
    const nlohmann::json& metadata() const noexcept { return metadata_; }

    /// The tensor called `name`, or nullptr.
    const SafetensorsTensor* find(const std::string& name) const {
        auto it = index_.find(name);
        return it == index_.end() ? nullptr : &tensors_[it->second];
    }

    /// The tensor called `name`; Error naming file and tensor if there is none.
    const SafetensorsTensor& tensor(const std::string& name) const {
        const SafetensorsTensor* t = find(name);
        if (t == nullptr) throw Error("no such tensor", {path(), name, std::nullopt});
        return *t;
    }

    /// The raw bytes of a tensor (t.nbytes of them), bounds-checked.
    const std::uint8_t* raw(const SafetensorsTensor& t) const {
        return file_.bytes(t.offset, t.nbytes, "tensor data", t.name);
    }

    /// All values of the tensor, row-major, converted to T (float or double). F32, F16, BF16 only.
    template <class T>
    std::vector<T> load(const std::string& name) const {
        static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "load<T>: T must be float or double");
        const SafetensorsTensor& t = tensor(name);
        GgmlType g;
        if (t.dtype == "F32") g = GgmlType::F32;
        else if (t.dtype == "F16") g = GgmlType::F16;
        else if (t.dtype == "BF16") g = GgmlType::BF16;
        else throw Error("cannot load dtype " + t.dtype + " (only F32, F16, BF16)", {path(), t.name, t.offset});
        const std::uint8_t* p = raw(t);
        std::vector<T> out(static_cast<std::size_t>(t.n_elements()));
        dequantize<T>(g, p, t.n_elements(), out.data());  // these are exact per-element conversions
        return out;
    }

private:
    void parse() {
        const std::string& file = file_.path();
        const auto header_len = detail::load_le<std::uint64_t>(file_.bytes(0, 8, "safetensors header length"));
        require(header_len <= detail::kSafetensorsMaxHeader,
                "safetensors header length " + std::to_string(header_len) + " exceeds 100 MB", {file, "", 0});
        const std::uint8_t* h = file_.bytes(8, header_len, "safetensors header");
        require(header_len >= 2 && h[0] == '{', "safetensors header is not a JSON object", {file, "", 8});
        nlohmann::json header = nlohmann::json::parse(h, h + header_len, nullptr, /*allow_exceptions=*/false);
        require(!header.is_discarded() && header.is_object(), "safetensors header is not valid JSON", {file, "", 8});
        const std::uint64_t data_start = 8 + header_len;  // <= file size, checked by bytes() above
        const std::uint64_t data_size = file_.size() - data_start;

        metadata_ = nlohmann::json::object();
        for (auto it = header.begin(); it != header.end(); ++it) {
            const std::string& name = it.key();
            const nlohmann::json& e = it.value();
            if (name == "__metadata__") {
                require(e.is_object(), "__metadata__ is not an object", {file, "", 8});
                metadata_ = e;
                continue;
            }
            const Error::Where where{file, name, 8};
            require(e.is_object(), "header entry is not an object", where);
            auto dt = e.find("dtype"), sh = e.find("shape"), off = e.find("data_offsets");
            require(dt != e.end() && dt->is_string(), "missing or non-string \"dtype\"", where);
            require(sh != e.end() && sh->is_array(), "missing or non-array \"shape\"", where);
            require(off != e.end() && off->is_array() && off->size() == 2 && (*off)[0].is_number_unsigned() &&
                        (*off)[1].is_number_unsigned(),
                    "\"data_offsets\" is not a pair of non-negative integers", where);
            SafetensorsTensor t;
            t.name = name;
            t.dtype = dt->get<std::string>();
            const std::uint64_t esize = detail::safetensors_dtype_size(t.dtype);
            require(esize != 0, "unknown dtype \"" + t.dtype + "\"", where);
            std::uint64_t numel = 1;
            for (const auto& d : *sh) {
                require(d.is_number_unsigned(), "shape entries must be non-negative integers", where);
                const auto v = d.get<std::uint64_t>();
                require(v <= static_cast<std::uint64_t>(INT64_MAX) && detail::mul_u64(numel, v, numel) &&
                            numel <= static_cast<std::uint64_t>(INT64_MAX),
                        "element count overflows int64", where);
                t.shape.push_back(static_cast<std::int64_t>(v));
            }
            const auto begin = (*off)[0].get<std::uint64_t>(), end = (*off)[1].get<std::uint64_t>();
            require(begin <= end && end <= data_size,
                    "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                        ") lie outside the data section of " + std::to_string(data_size) + " bytes",
                    where);
            std::uint64_t nbytes = 0;
            const bool fits = detail::mul_u64(numel, esize, nbytes);  // before the message below reads nbytes
            require(fits && nbytes == end - begin,
                    "data_offsets span " + std::to_string(end - begin) + " bytes but " + t.dtype + " × shape needs " +
                        (fits ? std::to_string(nbytes) : std::string("more than 2^64")),
                    where);
            t.offset = data_start + begin;
            t.nbytes = nbytes;
            tensors_.push_back(std::move(t));
        }
        std::sort(tensors_.begin(), tensors_.end(), [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
            return a.offset != b.offset ? a.offset < b.offset : a.name < b.name;
        });
        for (std::size_t i = 0; i < tensors_.size(); ++i) index_.emplace(tensors_[i].name, i);
    }

    MappedFile file_;
    nlohmann::json metadata_;
    std::vector<SafetensorsTensor> tensors_;
    std::unordered_map<std::string, std::size_t> index_;
};

/// A checkpoint directory: model.safetensors, or shards listed in model.safetensors.index.json.
/// (A path to a single .safetensors file is accepted too.)
class SafetensorsCheckpoint {
public:
    explicit SafetensorsCheckpoint(std::string dir) : dir_(std::move(dir)) {
        const std::string index_path = dir_ + "/model.safetensors.index.json";
        const std::string single_path = dir_ + "/model.safetensors";
        if (is_regular_file(dir_)) {
            add_whole_file(dir_);
        } else if (is_regular_file(index_path)) {
            load_index(index_path);
        } else if (is_regular_file(single_path)) {
            add_whole_file(single_path);
        } else {
            throw Error("no model.safetensors or model.safetensors.index.json in the directory", {dir_, "", std::nullopt});
        }
    }

    bool has(const std::string& name) const { return where_.count(name) != 0; }

    /// Row-major shape of the tensor; Error naming the checkpoint and tensor if absent.
    std::vector<std::int64_t> shape(const std::string& name) const { return entry(name).shape; }

    /// The tensor's dtype string ("F32", "BF16", ...).
    std::string dtype(const std::string& name) const { return entry(name).dtype; }

    /// All values of the tensor, row-major, as T (float or double); F32/F16/BF16 only.
    template <class T>
    std::vector<T> load(const std::string& name) const {
        auto it = where_.find(name);
        if (it == where_.end()) throw Error("no such tensor in the checkpoint", {dir_, name, std::nullopt});
        return files_[it->second]->template load<T>(name);
    }

    /// The tensor's entry (dtype, shape, absolute offset in its file) and the file it is in; Error if absent.
    const SafetensorsTensor& tensor(const std::string& name) const { return entry(name); }
    const std::string& file_of(const std::string& name) const {
        (void)entry(name);  // the Error naming the checkpoint when absent
        return files_[where_.at(name)]->path();
    }

    /// The tensor's raw bytes in place (memory-mapped; valid while the checkpoint lives), bounds-checked.
    const std::uint8_t* raw(const std::string& name) const {
        const SafetensorsTensor& t = entry(name);
        return files_[where_.at(name)]->raw(t);
    }

    /// All tensor names, sorted.
    std::vector<std::string> names() const {
        std::vector<std::string> out;
        out.reserve(where_.size());
        for (const auto& kv : where_) out.push_back(kv.first);
        return out;
    }

    /// The files it reads (one, or the shards in index order).
    const std::vector<std::unique_ptr<SafetensorsFile>>& files() const noexcept { return files_; }

private:
    static bool is_regular_file(const std::string& p) {
        std::error_code ec;
        return std::filesystem::is_regular_file(p, ec);
    }

    const SafetensorsTensor& entry(const std::string& name) const {
        auto it = where_.find(name);
        if (it == where_.end()) throw Error("no such tensor in the checkpoint", {dir_, name, std::nullopt});
        return files_[it->second]->tensor(name);
    }

    void add_whole_file(const std::string& path) {
        files_.push_back(std::make_unique<SafetensorsFile>(path));
        for (const auto& t : files_.back()->tensors()) where_.emplace(t.name, 0);
    }

    void load_index(const std::string& index_path) {
        std::ifstream in(index_path, std::ios::binary);
        require(static_cast<bool>(in), "cannot open the index", {index_path, "", std::nullopt});
        std::stringstream ss;
        ss << in.rdbuf();
        nlohmann::json index = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
        require(!index.is_discarded() && index.is_object(), "index is not a JSON object", {index_path, "", std::nullopt});
        auto wm = index.find("weight_map");
        require(wm != index.end() && wm->is_object(), "index has no \"weight_map\" object", {index_path, "", std::nullopt});
        std::map<std::string, std::size_t> shard_of_file;
        for (auto it = wm->begin(); it != wm->end(); ++it) {
            require(it.value().is_string(), "weight_map value is not a string", {index_path, it.key(), std::nullopt});
            const std::string shard = it.value().get<std::string>();
            require(safe_relative(shard), "shard file name \"" + shard + "\" is not a plain relative path",
                    {index_path, it.key(), std::nullopt});
            auto found = shard_of_file.find(shard);
            std::size_t k;
            if (found == shard_of_file.end()) {
                k = files_.size();
                files_.push_back(std::make_unique<SafetensorsFile>(dir_ + "/" + shard));
                shard_of_file.emplace(shard, k);
            } else {
                k = found->second;
            }
            require(files_[k]->find(it.key()) != nullptr, "tensor listed in the index is missing from shard " + shard,
                    {index_path, it.key(), std::nullopt});
            where_.emplace(it.key(), k);
        }
    }

    /// A shard name must stay inside the checkpoint directory: not empty, not absolute, no ".." component.
    static bool safe_relative(const std::string& p) {
        if (p.empty() || p[0] == '/') return false;
        std::size_t start = 0;
        while (start <= p.size()) {
            std::size_t slash = p.find('/', start);
            if (slash == std::string::npos) slash = p.size();
            if (p.compare(start, slash - start, "..") == 0 && slash - start == 2) return false;
            start = slash + 1;
        }
        return true;
    }

    std::string dir_;
    std::vector<std::unique_ptr<SafetensorsFile>> files_;
    std::map<std::string, std::size_t> where_;  // tensor name -> index in files_
};

}  // namespace sinkscope::io
