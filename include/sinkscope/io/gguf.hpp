// sinkscope::io::GgufFile — a GGUF (v2/v3, little-endian) file: metadata as JSON, tensor table, and
// dequantized tensors, memory-mapped and validated against hostile input.
//
// Layout (ggml/docs/gguf.md; all integers little-endian; string = u64 length + that many bytes, no NUL):
//
//   u32 magic "GGUF" | u32 version (2 or 3) | u64 n_tensors | u64 n_kv
//   n_kv × { string key | u32 value_type | value }
//          value_type: 0 u8, 1 i8, 2 u16, 3 i16, 4 u32, 5 i32, 6 f32, 7 bool (1 byte, 0/1), 8 string,
//                      9 array = { u32 elem_type | u64 count | count × value }, 10 u64, 11 i64, 12 f64
//   n_tensors × { string name | u32 n_dims | u64 ne[n_dims] | u32 ggml_type | u64 offset }
//   padding to `alignment` (metadata general.alignment, default 32), then the data section;
//   tensor i's bytes start at data_start + offset_i (offset_i a multiple of the alignment).
//
// Shapes are kept in ggml order: shape[0] = ne[0] is the contiguous (fastest-varying) dimension, so a
// PyTorch (rows, cols) weight appears as {cols, rows}; load() returns values in storage order, which is
// row-major with the shape reversed. (Version 1 used u32 counts and lengths; it is refused. v2 and v3
// have the same little-endian layout; v3 only added big-endian files, which are refused too.)
//
// Hostile input: every read is bounds-checked by MappedFile, all size arithmetic is overflow-checked, and
// each count is checked against the bytes left before anything is allocated, so a crafted file can only
// produce an Error naming the file, the tensor (when known) and the byte offset of the offending field —
// never a crash, a huge allocation or a read outside the file. Limits are in detail::GgufLimits.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sinkscope/core/error.hpp"
#include "sinkscope/io/dequantize.hpp"
#include "sinkscope/io/ggml_types.hpp"
#include "sinkscope/io/mapped_file.hpp"

namespace sinkscope::io {

/// One tensor of a GGUF file. `offset` is absolute (from the start of the file).
struct GgufTensor {
    std::string name;
    std::vector<std::int64_t> shape;  // ggml order: shape[0] = ne[0] is the contiguous (fastest) dimension
    GgmlType type = GgmlType::F32;
    std::uint64_t offset = 0;  // absolute byte offset of the first block
    std::uint64_t nbytes = 0;  // = tensor_bytes(type, n_elements())

    /// Product of the shape (1 for a 0-dimensional tensor).
    std::int64_t n_elements() const noexcept {
        std::int64_t n = 1;
        for (std::int64_t d : shape) n *= d;  // cannot overflow: checked when the file was opened
        return n;
    }
};

/// GGUF metadata value types (the u32 before every value).
enum class GgufValueType : std::uint32_t {
    UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
    STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};

namespace detail {

/// Hard limits against hostile files (beyond "everything must lie inside the file").
struct GgufLimits {
    static constexpr std::uint64_t max_key_length = 1u << 16;     // metadata key bytes
    static constexpr std::uint64_t max_name_length = 1u << 12;    // tensor name bytes (ggml itself: 63)
    static constexpr std::uint32_t max_dims = 4;                  // GGML_MAX_DIMS
    static constexpr int max_array_depth = 16;                    // arrays of arrays of ...
    static constexpr std::uint64_t max_alignment = 1u << 30;
    static constexpr std::uint64_t max_string_length = 1u << 26;  // a metadata string value (64 MiB)
    static constexpr std::uint64_t max_array_count = 1u << 24;    // elements of one metadata array
    static constexpr std::uint64_t max_tensors = 1u << 20;
    static constexpr std::uint64_t max_kv = 1u << 20;
};

/// Reads GGUF primitives at a moving position; every read goes through MappedFile::bytes().
class GgufCursor {
public:
    explicit GgufCursor(const MappedFile& f, std::uint64_t pos = 0) : f_(f), pos_(pos) {}
    std::uint64_t pos() const noexcept { return pos_; }
    std::uint64_t remaining() const noexcept { return pos_ <= f_.size() ? f_.size() - pos_ : 0; }

    template <class T>
    T read(const std::string& what, const std::string& tensor = "") {
        const std::uint8_t* p = f_.bytes(pos_, sizeof(T), what, tensor);
        pos_ += sizeof(T);
        return load_le<T>(p);
    }

    /// A GGUF string (u64 length + bytes) of at most max_len bytes.
    std::string read_string(const std::string& what, std::uint64_t max_len, const std::string& tensor = "") {
        const std::uint64_t at = pos_;
        const auto len = read<std::uint64_t>(what + " (length)", tensor);
        if (len > max_len)
            throw Error(what + ": string length " + std::to_string(len) + " exceeds the limit of " +
                            std::to_string(max_len),
                        {f_.path(), tensor, at});
        const std::uint8_t* p = f_.bytes(pos_, len, what, tensor);
        pos_ += len;
        return std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(len));
    }

    const MappedFile& file() const noexcept { return f_; }

private:
    const MappedFile& f_;
    std::uint64_t pos_;
};

/// Bytes one element of a metadata array of `type` takes at least (fixed size, or the length prefix).
inline std::uint64_t gguf_min_value_bytes(GgufValueType t) noexcept {
    switch (t) {
        case GgufValueType::UINT8: case GgufValueType::INT8: case GgufValueType::BOOL: return 1;
        case GgufValueType::UINT16: case GgufValueType::INT16: return 2;
        case GgufValueType::UINT32: case GgufValueType::INT32: case GgufValueType::FLOAT32: return 4;
        case GgufValueType::UINT64: case GgufValueType::INT64: case GgufValueType::FLOAT64: return 8;
        case GgufValueType::STRING: return 8;
        case GgufValueType::ARRAY: return 12;
    }
    return 0;
}

inline bool gguf_valid_value_type(std::uint32_t t) noexcept { return t <= 12; }

/// Reads one metadata value of `type` at the cursor into JSON. `what` ("metadata 'key'") is for messages.
inline nlohmann::json gguf_read_value(GgufCursor& c, GgufValueType type, const std::string& what, int depth) {
    switch (type) {
        case GgufValueType::UINT8: return c.read<std::uint8_t>(what);
        case GgufValueType::INT8: return c.read<std::int8_t>(what);
        case GgufValueType::UINT16: return c.read<std::uint16_t>(what);
        case GgufValueType::INT16: return c.read<std::int16_t>(what);
        case GgufValueType::UINT32: return c.read<std::uint32_t>(what);
        case GgufValueType::INT32: return c.read<std::int32_t>(what);
        case GgufValueType::UINT64: return c.read<std::uint64_t>(what);
        case GgufValueType::INT64: return c.read<std::int64_t>(what);
        case GgufValueType::FLOAT32: return static_cast<double>(c.read<float>(what));  // exact
        case GgufValueType::FLOAT64: return c.read<double>(what);
        case GgufValueType::BOOL: {
            const std::uint64_t at = c.pos();
            const auto b = c.read<std::uint8_t>(what);
            if (b > 1) throw Error(what + ": bool byte is " + std::to_string(b) + ", not 0 or 1", {c.file().path(), "", at});
            return b == 1;
        }
        case GgufValueType::STRING: return c.read_string(what, GgufLimits::max_string_length);
        case GgufValueType::ARRAY: {
            // (Messages are built only on failure: this runs once per array, also for arrays of arrays.)
            const std::uint64_t at = c.pos();
            if (depth >= GgufLimits::max_array_depth)
                throw Error(what + ": arrays nested deeper than " + std::to_string(GgufLimits::max_array_depth),
                            {c.file().path(), "", at});
            const auto elem_raw = c.read<std::uint32_t>(what);
            if (!gguf_valid_value_type(elem_raw))
                throw Error(what + ": unknown array element type " + std::to_string(elem_raw), {c.file().path(), "", at});
            const auto elem = static_cast<GgufValueType>(elem_raw);
            const std::uint64_t count_at = c.pos();
            const auto count = c.read<std::uint64_t>(what);
            if (count > GgufLimits::max_array_count)
                throw Error(what + ": array of " + std::to_string(count) + " elements exceeds the limit of " +
                                std::to_string(GgufLimits::max_array_count),
                            {c.file().path(), "", count_at});
            // Each element takes at least gguf_min_value_bytes: a count the rest of the file cannot hold is
            // refused before anything is allocated.
            if (count > c.remaining() / gguf_min_value_bytes(elem))
                throw Error(what + ": array of " + std::to_string(count) + " elements does not fit in the " +
                                std::to_string(c.remaining()) + " bytes left",
                            {c.file().path(), "", count_at});
            nlohmann::json arr = nlohmann::json::array();
            auto& v = arr.get_ref<nlohmann::json::array_t&>();
            v.reserve(static_cast<std::size_t>(count));
            for (std::uint64_t i = 0; i < count; ++i) v.push_back(gguf_read_value(c, elem, what, depth + 1));
            return arr;
        }
    }
    throw Error(what + ": unknown value type", {c.file().path(), "", c.pos()});  // unreachable (checked by callers)
}

}  // namespace detail

class GgufFile {
public:
    /// Opens and validates `path` (memory-mapped). Errors name the file, tensor and byte offset.
    explicit GgufFile(std::string path) : GgufFile(MappedFile(std::move(path))) {}

    /// Parses an already opened file (e.g. MappedFile::from_bytes for in-memory input).
    explicit GgufFile(MappedFile file) : file_(std::move(file)) { parse(); }

    GgufFile(GgufFile&&) noexcept = default;
    GgufFile& operator=(GgufFile&&) noexcept = default;
    GgufFile(const GgufFile&) = delete;
    GgufFile& operator=(const GgufFile&) = delete;

    const std::string& path() const noexcept { return file_.path(); }
    std::uint32_t version() const noexcept { return version_; }
    /// general.alignment, or 32 when absent.
    std::int64_t alignment() const noexcept { return static_cast<std::int64_t>(alignment_); }
    /// Absolute offset of the data section (tensor offsets in the file are relative to it).
    std::uint64_t data_offset() const noexcept { return data_offset_; }

    /// All key/value pairs: integers and floats as JSON numbers (f32 as the exact double), bools, strings
    /// (the raw bytes: GGUF says UTF-8 but nothing checks it, so dump() them with error_handler_t::replace
    /// if unsure), arrays (also of arrays) as JSON arrays.
    const nlohmann::json& metadata() const noexcept { return metadata_; }

    /// Tensors in file order.
    const std::vector<GgufTensor>& tensors() const noexcept { return tensors_; }

    /// The tensor called `name`, or nullptr.
    const GgufTensor* find(const std::string& name) const {
        auto it = index_.find(name);
        return it == index_.end() ? nullptr : &tensors_[it->second];
    }

    /// The tensor called `name`; Error naming file and tensor if there is none.
    const GgufTensor& tensor(const std::string& name) const {
        const GgufTensor* t = find(name);
        if (t == nullptr) throw Error("no such tensor", {path(), name, std::nullopt});
        return *t;
    }

    /// The raw bytes of a tensor (t.nbytes of them), bounds-checked.
    const std::uint8_t* raw(const GgufTensor& t) const { return file_.bytes(t.offset, t.nbytes, "tensor data", t.name); }

    /// All values of `t`, dequantized to T (float or double), in storage order: ne[0] fastest, i.e.
    /// row-major with the shape reversed. Error naming the tensor if its type is not is_supported().
    template <class T>
    std::vector<T> load(const GgufTensor& t) const {
        std::vector<T> out(static_cast<std::size_t>(t.n_elements()));
        load_into(t, out.data());
        return out;
    }

    /// As load(), into caller-owned storage of t.n_elements() values (no intermediate copy).
    template <class T>
    void load_into(const GgufTensor& t, T* dst) const {
        require(is_supported(t.type), "cannot dequantize ggml type " + type_name(t.type), {path(), t.name, t.offset});
        const std::int64_t n = t.n_elements();
        require(tensor_bytes(t.type, n) == t.nbytes, "tensor byte size does not match its shape and type",
                {path(), t.name, t.offset});
        dequantize<T>(t.type, raw(t), n, dst);
    }

    /// load(tensor(name)).
    template <class T>
    std::vector<T> load(const std::string& name) const { return load<T>(tensor(name)); }

private:
    Error::Where at(std::uint64_t offset, const std::string& tensor = "") const { return {path(), tensor, offset}; }

    void parse() {
        const std::uint8_t* magic = file_.bytes(0, 4, "GGUF magic");
        require(magic[0] == 'G' && magic[1] == 'G' && magic[2] == 'U' && magic[3] == 'F',
                "not a GGUF file (bad magic)", at(0));
        detail::GgufCursor c(file_, 4);
        version_ = c.read<std::uint32_t>("GGUF version");
        require(version_ != 1, "GGUF version 1 is not supported (only v2 and v3)", at(4));
        if (version_ != 2 && version_ != 3) {
            const std::uint32_t swapped = ((version_ & 0xffu) << 24) | ((version_ & 0xff00u) << 8) |
                                          ((version_ >> 8) & 0xff00u) | (version_ >> 24);
            if (swapped == 2 || swapped == 3) throw Error("big-endian GGUF files are not supported", at(4));
            throw Error("unsupported GGUF version " + std::to_string(version_), at(4));
        }
        const std::uint64_t n_tensors_at = c.pos();
        const auto n_tensors = c.read<std::uint64_t>("tensor count");
        const std::uint64_t n_kv_at = c.pos();
        const auto n_kv = c.read<std::uint64_t>("metadata count");
        // A key/value pair takes >= 8 + 4 + 1 bytes, a tensor info >= 8 + 4 + 4 + 8 bytes.
        require(n_kv <= detail::GgufLimits::max_kv && n_kv <= c.remaining() / 13,
                "metadata count " + std::to_string(n_kv) + " exceeds the limit or cannot fit in the file", at(n_kv_at));
        require(n_tensors <= detail::GgufLimits::max_tensors && n_tensors <= c.remaining() / 24,
                "tensor count " + std::to_string(n_tensors) + " exceeds the limit or cannot fit in the file",
                at(n_tensors_at));

        metadata_ = nlohmann::json::object();
        for (std::uint64_t i = 0; i < n_kv; ++i) {
            const std::uint64_t key_at = c.pos();
            std::string key = c.read_string("metadata key", detail::GgufLimits::max_key_length);
            require(!metadata_.contains(key), "duplicate metadata key '" + key + "'", at(key_at));
            const std::uint64_t type_at = c.pos();
            const auto type = c.read<std::uint32_t>("metadata '" + key + "' (value type)");
            require(detail::gguf_valid_value_type(type),
                    "metadata '" + key + "': unknown value type " + std::to_string(type), at(type_at));
            metadata_[key] = detail::gguf_read_value(c, static_cast<GgufValueType>(type), "metadata '" + key + "'", 0);
        }

        alignment_ = 32;
        if (auto it = metadata_.find("general.alignment"); it != metadata_.end()) {
            require(it->is_number_unsigned() || (it->is_number_integer() && it->get<std::int64_t>() > 0),
                    "general.alignment must be a positive integer", at(0));
            const auto a = it->get<std::uint64_t>();
            require(a != 0 && (a & (a - 1)) == 0 && a <= detail::GgufLimits::max_alignment,
                    "general.alignment " + std::to_string(a) + " is not a power of two <= 2^30", at(0));
            alignment_ = a;
        }

        require(n_tensors <= c.remaining() / 24,
                "tensor count " + std::to_string(n_tensors) + " cannot fit in the file", at(n_tensors_at));
        tensors_.reserve(static_cast<std::size_t>(n_tensors));
        std::vector<std::uint64_t> offset_fields;  // where each tensor's offset field is, for messages
        offset_fields.reserve(static_cast<std::size_t>(n_tensors));
        for (std::uint64_t i = 0; i < n_tensors; ++i) {
            GgufTensor t;
            const std::uint64_t name_at = c.pos();
            t.name = c.read_string("tensor name", detail::GgufLimits::max_name_length);
            require(index_.find(t.name) == index_.end(), "duplicate tensor name", at(name_at, t.name));
            const std::uint64_t dims_at = c.pos();
            const auto n_dims = c.read<std::uint32_t>("tensor n_dims", t.name);
            require(n_dims <= detail::GgufLimits::max_dims,
                    "tensor has " + std::to_string(n_dims) + " dimensions (at most 4)", at(dims_at, t.name));
            std::uint64_t numel = 1;
            for (std::uint32_t d = 0; d < n_dims; ++d) {
                const std::uint64_t ne_at = c.pos();
                const auto ne = c.read<std::uint64_t>("tensor dimension", t.name);
                require(ne <= static_cast<std::uint64_t>(INT64_MAX), "tensor dimension " + std::to_string(ne) +
                            " is negative as int64", at(ne_at, t.name));
                require(detail::mul_u64(numel, ne, numel) && numel <= static_cast<std::uint64_t>(INT64_MAX),
                        "tensor element count overflows int64", at(ne_at, t.name));
                t.shape.push_back(static_cast<std::int64_t>(ne));
            }
            const std::uint64_t type_at = c.pos();
            const auto type_id = c.read<std::uint32_t>("tensor type", t.name);
            const auto type = ggml_type_from_id(type_id);
            require(type.has_value(), "unknown ggml tensor type id " + std::to_string(type_id), at(type_at, t.name));
            t.type = *type;
            const std::int64_t be = block_elements(t.type);
            require(t.shape.empty() ? be == 1 : t.shape[0] % be == 0,
                    "ne[0] is not a multiple of the " + type_name(t.type) + " block size " + std::to_string(be),
                    at(dims_at, t.name));
            const std::uint64_t off_at = c.pos();
            t.offset = c.read<std::uint64_t>("tensor offset", t.name);  // relative for now
            require(t.offset % alignment_ == 0, "tensor data offset " + std::to_string(t.offset) +
                        " is not a multiple of the alignment " + std::to_string(alignment_), at(off_at, t.name));
            // nbytes = numel / block_elements * block_bytes, which may overflow even when numel fits.
            require(detail::mul_u64(numel / static_cast<std::uint64_t>(be), static_cast<std::uint64_t>(block_bytes(t.type)),
                                    t.nbytes),
                    "tensor byte size overflows 64 bits", at(dims_at, t.name));
            index_.emplace(t.name, tensors_.size());
            tensors_.push_back(std::move(t));
            offset_fields.push_back(off_at);
        }

        // The data section starts at the next multiple of the alignment after the tensor infos.
        const std::uint64_t end_of_infos = c.pos();
        const std::uint64_t pad = (alignment_ - end_of_infos % alignment_) % alignment_;
        data_offset_ = end_of_infos + pad;  // end_of_infos <= file size, so no overflow
        for (std::size_t i = 0; i < tensors_.size(); ++i) {
            GgufTensor& t = tensors_[i];
            std::uint64_t abs = 0;
            require(detail::add_u64(data_offset_, t.offset, abs) && file_.contains(abs, t.nbytes),
                    "tensor data [data start " + std::to_string(data_offset_) + " + " + std::to_string(t.offset) +
                        ", +" + std::to_string(t.nbytes) + " bytes) lies outside the file of " +
                        std::to_string(file_.size()) + " bytes",
                    at(offset_fields[i], t.name));
            t.offset = abs;
        }
    }

    MappedFile file_;
    std::uint32_t version_ = 0;
    std::uint64_t alignment_ = 32;
    std::uint64_t data_offset_ = 0;
    nlohmann::json metadata_;
    std::vector<GgufTensor> tensors_;
    std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace sinkscope::io
