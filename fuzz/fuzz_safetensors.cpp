// libFuzzer target: SafetensorsFile on arbitrary bytes (in memory, via MappedFile::from_bytes).
//
// Contract checked: parsing either succeeds or throws sinkscope::Error (never a JSON library exception, a
// crash or a sanitizer report); a file that parsed loads every F32/F16/BF16 tensor without error, and
// refuses the other dtypes with an Error; the memory estimate (io/memory.hpp) counts every value.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include <sinkscope/io/memory.hpp>
#include <sinkscope/io/safetensors.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace sinkscope::io;
    std::vector<std::uint8_t> bytes(data, data + size);
    try {
        if (bytes.empty()) (void)MappedFile::from_bytes("fuzz.safetensors", bytes);  // must throw Error
        const SafetensorsFile f(MappedFile::from_bytes("fuzz.safetensors", std::move(bytes)));
        (void)f.metadata().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        volatile float sink = 0;
        std::uint64_t values = 0;
        for (const SafetensorsTensor& t : f.tensors()) {
            if (f.find(t.name) != &t) std::abort();
            values += static_cast<std::uint64_t>(t.n_elements());  // each tensor lies in the input: no overflow
            const bool loadable = t.dtype == "F32" || t.dtype == "F16" || t.dtype == "BF16";
            try {
                const auto v = f.load<float>(t.name);
                if (!loadable || v.size() != static_cast<std::size_t>(t.n_elements())) std::abort();
                if (!v.empty()) sink = sink + v.front() + v.back();
            } catch (const sinkscope::Error&) {
                if (loadable) std::abort();  // opened, but a float tensor does not load
            }
        }
        if (value_count(f) != values) std::abort();
    } catch (const sinkscope::Error&) {
        // bad input, correctly refused
    }
    return 0;
}
