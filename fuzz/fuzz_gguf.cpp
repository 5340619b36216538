// libFuzzer target: GgufFile on arbitrary bytes (in memory, via MappedFile::from_bytes, whose buffer is
// exactly the input so ASan sees any read past its end).
//
// Contract checked: parsing either succeeds or throws sinkscope::Error — any other exception, crash,
// sanitizer report or leak is a finding. A file that parsed must be fully usable: every tensor of a
// supported type loads without error, and the metadata serialises. (A load Error after a successful parse
// means validation missed something, so it aborts too.) A tensor of a known type that dequantize() does not
// handle must be refused with an Error naming the file, the tensor and its offset; the memory estimate
// (io/memory.hpp) must count every value of the table without overflowing.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include <sinkscope/io/gguf.hpp>
#include <sinkscope/io/memory.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace sinkscope::io;
    std::vector<std::uint8_t> bytes(data, data + size);
    try {
        if (bytes.empty()) (void)MappedFile::from_bytes("fuzz.gguf", bytes);  // must throw Error
        const GgufFile f(MappedFile::from_bytes("fuzz.gguf", std::move(bytes)));
        (void)f.metadata().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        volatile float sink = 0;
        std::uint64_t values = 0;
        for (const GgufTensor& t : f.tensors()) {
            if (f.find(t.name) != &t) std::abort();
            // Each tensor lies inside the input (at most 128 values in 18 bytes): the sum cannot overflow.
            values += static_cast<std::uint64_t>(t.n_elements());
            if (!is_supported(t.type)) {
                try {
                    (void)f.load<float>(t);
                    std::abort();  // an unsupported type must not load
                } catch (const sinkscope::Error& e) {
                    if (e.file() != "fuzz.gguf" || e.tensor() != t.name || e.offset() != t.offset) std::abort();
                }
                continue;
            }
            try {
                const auto v = f.load<float>(t);
                if (v.size() != static_cast<std::size_t>(t.n_elements())) std::abort();
                if (!v.empty()) sink = sink + v.front() + v.back();
            } catch (const sinkscope::Error&) {
                std::abort();  // opened, but a tensor does not load: the validation is incomplete
            }
        }
        if (value_count(f) != values) std::abort();
    } catch (const sinkscope::Error&) {
        // bad input, correctly refused
    }
    return 0;
}
