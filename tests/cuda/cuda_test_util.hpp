// Helpers of the CUDA tests: the skip rule, error measures, and the Config variants the cross-backend
// test runs (every switch of model::Config at least once).
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <sinkscope/cuda/common.cuh>
#include <sinkscope/model/config.hpp>

// GPU test cases start with this: without a device they WARN and return (Catch2 v2 has no SKIP).
#define SINKSCOPE_REQUIRE_GPU()                                                                     \
    do {                                                                                            \
        const auto sinkscope_st_ = ::sinkscope::cuda::device_status();                              \
        if (sinkscope_st_.count == 0) {                                                             \
            WARN("skipped: no CUDA device (" << sinkscope_st_.reason << ")");                      \
            return;                                                                                 \
        }                                                                                           \
    } while (0)

namespace sinkscope::test {

// max |a − b| / max(max |b|, floor) over finite entries; ±inf must match exactly (masked scores),
// and a NaN on either side counts as an infinite error.
template <class A, class B>
double rel_error(const A* a, const B* b, std::int64_t n, double floor = 1e-30) {
    double scale = floor, err = 0;
    for (std::int64_t i = 0; i < n; ++i)
        if (std::isfinite(double(b[i]))) scale = std::max(scale, std::abs(double(b[i])));
    for (std::int64_t i = 0; i < n; ++i) {
        const double x = double(a[i]), y = double(b[i]);
        if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<double>::infinity();
        if (std::isinf(x) || std::isinf(y)) {
            if (x != y) return std::numeric_limits<double>::infinity();
            continue;
        }
        err = std::max(err, std::abs(x - y));
    }
    return err / scale;
}
template <class A, class B>
double rel_error(const std::vector<A>& a, const std::vector<B>& b) {
    REQUIRE(a.size() == b.size());
    return rel_error(a.data(), b.data(), std::int64_t(a.size()));
}

// A named modification of the tiny Llama config.
struct Variant {
    std::string name;
    std::function<void(model::Config&)> apply;
};

// The tiny Llama-style base: 2 layers, d 16, 4 heads over 2 KV heads, d_h 4, SwiGLU 24, vocab 32.
inline model::Config base_config() {
    model::Config c;
    c.architecture = "sinkscope";
    c.n_layers = 2; c.d_model = 16; c.n_heads = 4; c.n_kv_heads = 2; c.head_dim = 4; c.d_ff = 24;
    c.vocab_size = 32; c.context_length = 16;
    return c;
}

inline std::vector<Variant> all_variants() {
    using namespace model;
    return {
        {"baseline (RMSNorm, SwiGLU, RoPE half-split, GQA, tied)", [](Config&) {}},
        {"RoPE interleaved", [](Config& c) { c.rope_layout = RopeLayout::interleaved; }},
        {"GPT-2 style (LayerNorm + bias, GELU tanh, learned positions, biases, untied)", [](Config& c) {
             c.norm = NormKind::layernorm; c.norm_bias = true; c.ffn = FfnKind::gelu; c.activation = Activation::gelu_tanh;
             c.positions = PositionKind::learned; c.qkv_bias = c.out_bias = c.mlp_bias = true; c.tied_embeddings = false;
             c.n_kv_heads = 4; }},
        {"DynamicTanh with bias", [](Config& c) { c.norm = NormKind::dynamic_tanh; c.norm_bias = true; c.dyt_alpha0_attn = 0.8; }},
        {"post-norm", [](Config& c) { c.norm_placement = NormPlacement::post; }},
        {"sandwich norm", [](Config& c) { c.norm_placement = NormPlacement::sandwich; }},
        {"QK-norm with QKV bias", [](Config& c) { c.qk_norm = true; c.qkv_bias = true; }},
        {"FFN linear", [](Config& c) { c.ffn = FfnKind::linear; }},
        {"FFN none (attention only)", [](Config& c) { c.ffn = FfnKind::none; }},
        {"SwiGLU with exact GELU", [](Config& c) { c.activation = Activation::gelu_erf; }},
        {"softmax off-by-one", [](Config& c) { c.attention = AttentionKind::softmax_off_by_one; }},
        {"KV-bias attention", [](Config& c) { c.attention = AttentionKind::kv_bias; }},
        {"sink token", [](Config& c) { c.attention = AttentionKind::sink_token; }},
        {"gate per head", [](Config& c) { c.gate = GateKind::per_head; }},
        {"gate per channel", [](Config& c) { c.gate = GateKind::per_channel; }},
        {"static gate per head", [](Config& c) { c.gate = GateKind::static_per_head; }},
        {"static gate per channel", [](Config& c) { c.gate = GateKind::static_per_channel; }},
        {"sliding window 3", [](Config& c) { c.sliding_window = 3; }},
        {"force-sink 4 channels", [](Config& c) { c.force_sink_channels = 4; }},
        {"no positions, untied", [](Config& c) { c.positions = PositionKind::none; c.tied_embeddings = false; }},
        {"head_dim 8, one KV head (MQA)", [](Config& c) { c.head_dim = 8; c.n_kv_heads = 1; }},
    };
}

}  // namespace sinkscope::test
