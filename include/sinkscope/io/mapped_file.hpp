// sinkscope::io::MappedFile — a whole file, read-only, memory-mapped; every read bounds-checked.
//
// The readers of the io module (GGUF, safetensors, npy) never touch a byte of a file except through
// MappedFile::bytes(offset, n, what), which throws sinkscope::Error naming the file, the byte offset and
// what was being read whenever [offset, offset + n) is not inside the file. The check is written so that
// it cannot overflow (offset > size || n > size - offset), so a hostile 64-bit length is just an Error.
//
// On POSIX systems the file is mmap'ed (PROT_READ, MAP_PRIVATE): opening a 100 MB checkpoint costs
// nothing until its bytes are touched. Elsewhere, and for MappedFile::from_bytes (used by the fuzzers and
// by tests that parse crafted bytes), the bytes live in an owned std::vector instead; the interface is
// the same. Caveat of mmap: if another process truncates the file while it is mapped, touching the lost
// pages raises SIGBUS — no reader can defend against that.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "sinkscope/core/error.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define SINKSCOPE_IO_HAVE_MMAP 1
#else
#define SINKSCOPE_IO_HAVE_MMAP 0
#endif

namespace sinkscope::io {

class MappedFile {
public:
    /// Maps the whole file `path` read-only. Throws Error naming the file if it cannot be opened, is not a
    /// regular file, or is empty (an empty file cannot be mapped, and no format read here can be empty).
    explicit MappedFile(std::string path) : path_(std::move(path)) {
#if SINKSCOPE_IO_HAVE_MMAP
        const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
        require(fd >= 0, "cannot open file: " + std::string(std::strerror(errno)), {path_, "", std::nullopt});
        struct stat st {};
        if (::fstat(fd, &st) != 0) {
            const int err = errno;
            ::close(fd);
            throw Error("cannot stat file: " + std::string(std::strerror(err)), {path_, "", std::nullopt});
        }
        if (!S_ISREG(st.st_mode)) {
            ::close(fd);
            throw Error("not a regular file", {path_, "", std::nullopt});
        }
        if (st.st_size <= 0) {
            ::close(fd);
            throw Error("file is empty", {path_, "", std::nullopt});
        }
        void* p = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
        const int err = errno;
        ::close(fd);  // the mapping keeps its own reference to the file
        require(p != MAP_FAILED, "cannot mmap file: " + std::string(std::strerror(err)), {path_, "", std::nullopt});
        map_ = p;
        data_ = static_cast<const std::uint8_t*>(p);
        size_ = static_cast<std::uint64_t>(st.st_size);
#else
        std::ifstream in(path_, std::ios::binary);
        require(static_cast<bool>(in), "cannot open file", {path_, "", std::nullopt});
        owned_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        require(!owned_.empty(), "file is empty", {path_, "", std::nullopt});
        data_ = owned_.data();
        size_ = owned_.size();
#endif
    }

    /// A MappedFile over bytes already in memory (owned). `name` plays the role of the path in messages.
    /// Empty input is an Error, as for an empty file.
    static MappedFile from_bytes(std::string name, std::vector<std::uint8_t> bytes) {
        require(!bytes.empty(), "file is empty", {name, "", std::nullopt});
        MappedFile f;
        f.path_ = std::move(name);
        f.owned_ = std::move(bytes);
        f.data_ = f.owned_.data();
        f.size_ = f.owned_.size();
        return f;
    }

    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    MappedFile(MappedFile&& other) noexcept { steal(other); }
    MappedFile& operator=(MappedFile&& other) noexcept {
        if (this != &other) {
            release();
            steal(other);
        }
        return *this;
    }
    ~MappedFile() { release(); }

    const std::string& path() const noexcept { return path_; }
    const std::uint8_t* data() const noexcept { return data_; }
    std::uint64_t size() const noexcept { return size_; }

    /// Pointer to the n bytes at `offset`, after checking that [offset, offset + n) lies inside the file.
    /// Otherwise throws Error("<what>: needs bytes [offset, offset+n) but the file has <size> bytes")
    /// naming the file, `tensor` (if given) and `offset`. n == 0 at offset == size() is allowed.
    const std::uint8_t* bytes(std::uint64_t offset, std::uint64_t n, const std::string& what,
                              const std::string& tensor = "") const {
        if (offset > size_ || n > size_ - offset) {  // overflow-safe form of offset + n > size_
            throw Error(what + ": needs " + std::to_string(n) + " bytes at offset " + std::to_string(offset) +
                            " but the file has only " + std::to_string(size_) + " bytes",
                        {path_, tensor, offset});
        }
        return data_ + offset;
    }

    /// True if [offset, offset + n) lies inside the file (the same test bytes() makes, without throwing).
    bool contains(std::uint64_t offset, std::uint64_t n) const noexcept {
        return offset <= size_ && n <= size_ - offset;
    }

private:
    MappedFile() = default;

    void steal(MappedFile& o) noexcept {
        path_ = std::move(o.path_);
        owned_ = std::move(o.owned_);  // moving a vector keeps its buffer, so data_ stays valid
        map_ = o.map_;
        data_ = o.data_;
        size_ = o.size_;
        o.map_ = nullptr;
        o.data_ = nullptr;
        o.size_ = 0;
    }

    void release() noexcept {
#if SINKSCOPE_IO_HAVE_MMAP
        if (map_ != nullptr) ::munmap(map_, static_cast<std::size_t>(size_));
#endif
        map_ = nullptr;
        data_ = nullptr;
        size_ = 0;
        owned_.clear();
    }

    std::string path_;
    std::vector<std::uint8_t> owned_;  // from_bytes (and the non-POSIX fallback)
    void* map_ = nullptr;              // the mmap'ed region, if any
    const std::uint8_t* data_ = nullptr;
    std::uint64_t size_ = 0;
};

namespace detail {

/// Little-endian scalar at p (any alignment). All formats read here are little-endian; sinkscope
/// targets little-endian hosts (checked below), so this is a plain memcpy.
template <class T>
inline T load_le(const std::uint8_t* p) noexcept {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

/// a * b, or false if it does not fit in std::uint64_t.
inline bool mul_u64(std::uint64_t a, std::uint64_t b, std::uint64_t& out) noexcept {
    if (a != 0 && b > UINT64_MAX / a) return false;
    out = a * b;
    return true;
}

/// a + b, or false if it does not fit in std::uint64_t.
inline bool add_u64(std::uint64_t a, std::uint64_t b, std::uint64_t& out) noexcept {
    if (b > UINT64_MAX - a) return false;
    out = a + b;
    return true;
}

}  // namespace detail

#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__)
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "sinkscope::io reads little-endian files on little-endian hosts only");
#endif

}  // namespace sinkscope::io
