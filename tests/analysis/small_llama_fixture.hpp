// Shared by the analysis tests of head_view and logit_attribution: a 3-layer Llama-layout config small
// enough to check by hand-written references (d 16, 4 query heads over 2 kv heads of size 4, SwiGLU 24,
// vocabulary 40), and one 8-token input with a repeated token (5, 5) and token 0.
#pragma once

#include <cstdint>
#include <vector>

#include <sinkscope/model/config.hpp>

namespace sinkscope::test::small_llama {

inline model::Config config() {
    model::Config c;
    c.architecture = "llama";
    c.n_layers = 3; c.d_model = 16; c.n_heads = 4; c.n_kv_heads = 2; c.head_dim = 4; c.d_ff = 24;
    c.vocab_size = 40; c.context_length = 16;
    return c;
}

inline const std::vector<std::int32_t> kTokens{3, 17, 5, 5, 29, 11, 0, 38};

}  // namespace sinkscope::test::small_llama
