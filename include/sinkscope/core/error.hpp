// sinkscope::Error — the one exception type of the library.
//
// Every failure on bad input (a truncated file, a wrong magic, a shape that disagrees with the
// config, a token id out of range) throws an Error that names *where*: the file, the tensor and the
// byte offset when they are known. Callers can read the parts back (file(), tensor(), offset()) or
// just print what().
#pragma once

#include <cstdint>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace sinkscope {

class Error : public std::runtime_error {
public:
    struct Where {
        std::string file;                      // path of the file being read, "" if none
        std::string tensor;                    // tensor or hook name, "" if none
        std::optional<std::uint64_t> offset;   // byte offset in the file, if known
    };

    explicit Error(const std::string& message) : Error(message, Where{}) {}
    Error(const std::string& message, Where where)
        : std::runtime_error(format(message, where)), message_(message), where_(std::move(where)) {}

    const std::string& message() const noexcept { return message_; }
    const std::string& file() const noexcept { return where_.file; }
    const std::string& tensor() const noexcept { return where_.tensor; }
    const std::optional<std::uint64_t>& offset() const noexcept { return where_.offset; }

private:
    static std::string format(const std::string& message, const Where& w) {
        std::ostringstream os;
        os << "sinkscope: " << message;
        if (!w.file.empty()) os << " [file " << w.file << "]";
        if (!w.tensor.empty()) os << " [tensor " << w.tensor << "]";
        if (w.offset) os << " [offset " << *w.offset << "]";
        return os.str();
    }
    std::string message_;
    Where where_;
};

// Throws Error(message, where) unless `condition` holds. Keeps checks on one line.
inline void require(bool condition, const std::string& message, Error::Where where = {}) {
    if (!condition) throw Error(message, std::move(where));
}

}  // namespace sinkscope
