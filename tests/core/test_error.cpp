#include <catch2/catch.hpp>
#include <sinkscope/core/error.hpp>

TEST_CASE("Error names file, tensor and offset", "[core]") {
    try {
        sinkscope::require(false, "bad shape", {"m.gguf", "blk.3.ffn_up.weight", 1234});
        FAIL("require(false) did not throw");
    } catch (const sinkscope::Error& e) {
        const std::string what = e.what();
        CHECK(what.find("m.gguf") != std::string::npos);
        CHECK(what.find("blk.3.ffn_up.weight") != std::string::npos);
        CHECK(what.find("1234") != std::string::npos);
        CHECK(e.offset() == 1234u);
        CHECK(e.message() == "bad shape");
    }
    CHECK_NOTHROW(sinkscope::require(true, "never"));
}
