// A downstream program: includes the umbrella header and uses one function from it.
#include <sinkscope/sinkscope.hpp>
#include <iostream>

int main() {
    try {
        sinkscope::require(false, "consumer check", {"some.gguf", "blk.0.attn_q.weight", 42});
    } catch (const sinkscope::Error& e) {
        if (e.offset() != 42u) return 1;
        std::cout << "sinkscope " << sinkscope::version() << " found; " << e.what() << "\n";
        return 0;
    }
    return 1;
}
