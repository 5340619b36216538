// sinkscope::io::write_npy / read_npy — NumPy .npy files, the exchange format with the Python peers.
//
// Format (numpy/lib/format.py, "NEP 1"):
//   "\x93NUMPY" | u8 major | u8 minor | header length (u16 LE for v1.0, u32 LE for v2.0/v3.0)
//   | header: an ASCII Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
//     padded with spaces and ended by '\n' so that the data starts at a multiple of 64 bytes
//   | the data, C order (row-major), numel × itemsize bytes.
//
// write_npy writes float32 ('<f4'), C order, version 1.0 (2.0 if the header would not fit in 64 KiB), exactly
// as np.save lays it out. read_npy reads '<f4', '<f8', '<i4', '<i8' in C order and converts to T; Fortran
// order, big-endian or other dtypes, malformed headers and a data size that disagrees with the shape are
// Errors naming the file.
#pragma once

#include <cctype>
#include <cmath>
#include <limits>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <type_traits>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/io/mapped_file.hpp"

namespace sinkscope::io {

/// An array read from a .npy file: shape (C order) and the values, row-major.
template <class T>
struct NpyArray {
    std::vector<std::size_t> shape;
    std::vector<T> data;
};

namespace detail {

/// Parsed .npy header dict.
struct NpyHeader {
    std::string descr;
    bool fortran_order = false;
    std::vector<std::size_t> shape;
};

/// A tiny parser for the Python dict literal numpy writes: string keys, values that are strings, True/False
/// or tuples of non-negative integers. Throws Error(file, offset of the header) on anything else.
class NpyHeaderParser {
public:
    NpyHeaderParser(const std::string& text, const std::string& file, std::uint64_t at)
        : s_(text), file_(file), at_(at) {}

    NpyHeader parse() {
        NpyHeader h;
        bool have_descr = false, have_fortran = false, have_shape = false;
        skip_ws();
        expect('{');
        for (;;) {
            skip_ws();
            if (peek() == '}') { ++i_; break; }
            const std::string key = quoted();
            skip_ws();
            expect(':');
            skip_ws();
            if (key == "descr") { h.descr = quoted(); have_descr = true; }
            else if (key == "fortran_order") { h.fortran_order = boolean(); have_fortran = true; }
            else if (key == "shape") { h.shape = tuple(); have_shape = true; }
            else fail("unexpected key '" + key + "' in the .npy header");
            skip_ws();
            if (peek() == ',') { ++i_; continue; }
            skip_ws();
            expect('}');
            break;
        }
        if (!have_descr || !have_fortran || !have_shape) fail(".npy header lacks descr, fortran_order or shape");
        return h;
    }

private:
    [[noreturn]] void fail(const std::string& msg) const { throw Error(msg, {file_, "", at_}); }
    char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
    void skip_ws() { while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_; }
    void expect(char c) {
        if (peek() != c) fail(std::string("malformed .npy header: expected '") + c + "'");
        ++i_;
    }
    std::string quoted() {
        const char q = peek();
        if (q != '\'' && q != '"') fail("malformed .npy header: expected a quoted string");
        ++i_;
        const std::size_t start = i_;
        while (i_ < s_.size() && s_[i_] != q) ++i_;
        if (i_ >= s_.size()) fail("malformed .npy header: unterminated string");
        return s_.substr(start, i_++ - start);
    }
    bool boolean() {
        if (s_.compare(i_, 4, "True") == 0) { i_ += 4; return true; }
        if (s_.compare(i_, 5, "False") == 0) { i_ += 5; return false; }
        fail("malformed .npy header: fortran_order is not True or False");
    }
    std::vector<std::size_t> tuple() {
        std::vector<std::size_t> out;
        expect('(');
        for (;;) {
            skip_ws();
            if (peek() == ')') { ++i_; break; }
            if (!std::isdigit(static_cast<unsigned char>(peek()))) fail("malformed .npy header: bad shape");
            std::uint64_t v = 0;
            while (std::isdigit(static_cast<unsigned char>(peek()))) {
                const std::uint64_t digit = static_cast<std::uint64_t>(s_[i_++] - '0');
                if (v > (UINT64_MAX - digit) / 10) fail(".npy shape entry overflows");
                v = v * 10 + digit;
            }
            if (v > static_cast<std::uint64_t>(SIZE_MAX)) fail(".npy shape entry overflows");
            out.push_back(static_cast<std::size_t>(v));
            skip_ws();
            if (peek() == 'L') ++i_;  // Python 2 longs ("3L")
            skip_ws();
            if (peek() == ',') { ++i_; continue; }
            expect(')');
            break;
        }
        return out;
    }

    const std::string& s_;
    const std::string& file_;
    std::uint64_t at_;
    std::size_t i_ = 0;
};

/// static_cast<T>(v), except that a value T cannot represent (NaN or out of range when T is an integer type,
/// where the cast would be undefined or implementation-defined) is an Error naming the file and offset.
template <class T, class S>
T npy_convert(S v, const std::string& file, std::uint64_t at) {
    if constexpr (std::is_integral_v<T> && std::is_floating_point_v<S>) {
        // [lo, hi) with hi = 2^digits exactly representable in S; NaN fails both comparisons.
        const S lo = static_cast<S>(std::numeric_limits<T>::min());
        const S hi = std::ldexp(S(1), std::numeric_limits<T>::digits);
        if (!(v >= lo && v < hi)) throw Error("value " + std::to_string(v) + " does not fit the requested integer type", {file, "", at});
    } else if constexpr (std::is_integral_v<T> && std::is_integral_v<S>) {
        bool fits;
        if constexpr (std::is_signed_v<S> == std::is_signed_v<T>)
            fits = v >= std::numeric_limits<T>::min() && v <= std::numeric_limits<T>::max();
        else if constexpr (std::is_signed_v<S>)  // signed -> unsigned
            fits = v >= 0 && static_cast<std::make_unsigned_t<S>>(v) <= std::numeric_limits<T>::max();
        else  // unsigned -> signed
            fits = v <= static_cast<std::make_unsigned_t<T>>(std::numeric_limits<T>::max());
        if (!fits) throw Error("value " + std::to_string(v) + " does not fit the requested integer type", {file, "", at});
    }
    // floating -> floating: IEEE conversion (a double beyond float's range becomes ±inf, as numpy's astype).
    return static_cast<T>(v);
}

inline std::string npy_shape_literal(const std::vector<std::size_t>& shape) {
    std::string s = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    if (shape.size() == 1) s += ",";
    return s + ")";
}

}  // namespace detail

/// Writes `data` (numel(shape) float32 values, row-major) to `path` as a C-order '<f4' .npy that
/// np.load reads back. A 0-dimensional shape ({}) writes a scalar. Error naming the file if it cannot be
/// written.
inline void write_npy(const std::string& path, const float* data, const std::vector<std::size_t>& shape);
/// As write_npy, for int32 values ('<i4'): token ids.
inline void write_npy(const std::string& path, const std::int32_t* data, const std::vector<std::size_t>& shape);

namespace detail {
// The writer of both: 4-byte values of type `descr`.
inline void write_npy4(const std::string& path, const void* data, const char* descr, const std::vector<std::size_t>& shape) {
    std::uint64_t numel = 1;
    for (std::size_t d : shape) require(detail::mul_u64(numel, d, numel) && numel <= UINT64_MAX / 4,
                                        "write_npy: shape is too large", {path, "", std::nullopt});
    require(numel == 0 || data != nullptr, "write_npy: null data", {path, "", std::nullopt});
    std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + detail::npy_shape_literal(shape) + ", }";
    // Pad with spaces so that magic + version + length field + header (ending in '\n') is a multiple of 64.
    bool v2 = false;
    std::size_t prefix = 10;
    std::size_t total = ((prefix + dict.size() + 1 + 63) / 64) * 64;
    if (total - prefix > 65535) {
        v2 = true;
        prefix = 12;
        total = ((prefix + dict.size() + 1 + 63) / 64) * 64;
    }
    dict.append(total - prefix - dict.size() - 1, ' ');
    dict.push_back('\n');

    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    require(static_cast<bool>(out), "write_npy: cannot open the file for writing", {path, "", std::nullopt});
    out.write("\x93NUMPY", 6);
    const char version[2] = {static_cast<char>(v2 ? 2 : 1), 0};
    out.write(version, 2);
    const std::uint32_t hlen = static_cast<std::uint32_t>(dict.size());
    const unsigned char len_le[4] = {static_cast<unsigned char>(hlen & 0xff), static_cast<unsigned char>((hlen >> 8) & 0xff),
                                     static_cast<unsigned char>((hlen >> 16) & 0xff), static_cast<unsigned char>(hlen >> 24)};
    out.write(reinterpret_cast<const char*>(len_le), v2 ? 4 : 2);
    out.write(dict.data(), static_cast<std::streamsize>(dict.size()));
    if (numel > 0) out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(numel * 4));  // host is LE
    out.close();
    require(!out.fail(), "write_npy: write failed", {path, "", std::nullopt});
}
}  // namespace detail

inline void write_npy(const std::string& path, const float* data, const std::vector<std::size_t>& shape) {
    detail::write_npy4(path, data, "<f4", shape);
}
inline void write_npy(const std::string& path, const std::int32_t* data, const std::vector<std::size_t>& shape) {
    detail::write_npy4(path, data, "<i4", shape);
}

/// write_npy for a std::vector (size must equal the product of the shape).
inline void write_npy(const std::string& path, const std::vector<float>& data, const std::vector<std::size_t>& shape) {
    std::uint64_t numel = 1;
    for (std::size_t d : shape) require(detail::mul_u64(numel, d, numel), "write_npy: shape is too large", {path, "", std::nullopt});
    require(numel == data.size(), "write_npy: data size " + std::to_string(data.size()) +
                                      " does not match the shape (" + std::to_string(numel) + " values)",
            {path, "", std::nullopt});
    write_npy(path, data.data(), shape);
}

/// Reads a C-order little-endian float32/float64/int32/int64 .npy file, converting each value to T
/// (any arithmetic type, by static_cast; a value an integer T cannot hold — NaN, out of range — is an Error
/// naming the file and the value's byte offset, since that cast would be undefined). Errors name the file.
template <class T>
NpyArray<T> read_npy(const std::string& path) {
    static_assert(std::is_arithmetic_v<T>, "read_npy<T>: T must be arithmetic");
    MappedFile f(path);
    const std::uint8_t* magic = f.bytes(0, 8, ".npy magic");
    require(std::memcmp(magic, "\x93NUMPY", 6) == 0, "not a .npy file (bad magic)", {path, "", 0});
    const unsigned major = magic[6];
    require(major >= 1 && major <= 3, "unsupported .npy version " + std::to_string(major), {path, "", 6});
    std::uint64_t hlen, hstart;
    if (major == 1) {
        hlen = detail::load_le<std::uint16_t>(f.bytes(8, 2, ".npy header length"));
        hstart = 10;
    } else {
        hlen = detail::load_le<std::uint32_t>(f.bytes(8, 4, ".npy header length"));
        hstart = 12;
    }
    const std::uint8_t* hp = f.bytes(hstart, hlen, ".npy header");
    const std::string text(reinterpret_cast<const char*>(hp), static_cast<std::size_t>(hlen));
    const detail::NpyHeader h = detail::NpyHeaderParser(text, path, hstart).parse();
    require(!h.fortran_order, "Fortran-order .npy files are not supported", {path, "", hstart});

    enum class Kind { F32, F64, I32, I64 } kind;
    std::uint64_t item;
    if (h.descr == "<f4") { kind = Kind::F32; item = 4; }
    else if (h.descr == "<f8") { kind = Kind::F64; item = 8; }
    else if (h.descr == "<i4") { kind = Kind::I32; item = 4; }
    else if (h.descr == "<i8") { kind = Kind::I64; item = 8; }
    else throw Error("unsupported .npy dtype '" + h.descr + "' (only <f4, <f8, <i4, <i8)", {path, "", hstart});

    std::uint64_t numel = 1, nbytes = 0;
    for (std::size_t d : h.shape)
        require(detail::mul_u64(numel, d, numel), ".npy shape overflows", {path, "", hstart});
    require(detail::mul_u64(numel, item, nbytes), ".npy data size overflows", {path, "", hstart});
    const std::uint64_t data_at = hstart + hlen;
    require(f.size() - data_at == nbytes,
            ".npy data is " + std::to_string(f.size() - data_at) + " bytes but the shape needs " + std::to_string(nbytes),
            {path, "", data_at});
    const std::uint8_t* p = f.bytes(data_at, nbytes, ".npy data");

    NpyArray<T> out;
    out.shape = h.shape;
    out.data.resize(static_cast<std::size_t>(numel));
    for (std::size_t i = 0; i < out.data.size(); ++i) {
        const std::uint8_t* q = p + i * item;
        const std::uint64_t at = data_at + i * item;
        switch (kind) {
            case Kind::F32: out.data[i] = detail::npy_convert<T>(detail::load_le<float>(q), path, at); break;
            case Kind::F64: out.data[i] = detail::npy_convert<T>(detail::load_le<double>(q), path, at); break;
            case Kind::I32: out.data[i] = detail::npy_convert<T>(detail::load_le<std::int32_t>(q), path, at); break;
            case Kind::I64: out.data[i] = detail::npy_convert<T>(detail::load_le<std::int64_t>(q), path, at); break;
        }
    }
    return out;
}

}  // namespace sinkscope::io
