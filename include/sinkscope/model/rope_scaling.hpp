// RoPE frequency scaling read from a checkpoint's config: Llama 3.1's divisors (rope_type "llama3"), computed
// as Hugging Face computes them. GGUF files store the same divisors as a tensor (rope_freqs.weight), which
// model/read_config.hpp reads; layers/rope.hpp applies them.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace sinkscope::model {

// Llama 3.1's RoPE frequency divisors (rope_type "llama3"), as Config::rope_freq_divisors, for r rotated
// dimensions. Hugging Face (modeling_rope_utils._compute_llama3_parameters) computes, in float32 torch ops,
//   inv_i = 1 / base^(2i/r),  λ_i = 2π / inv_i,  low = orig / low_freq_factor,  high = orig / high_freq_factor;
//   λ_i < high: inv_i;  λ_i > low: inv_i / factor;
//   else, s = (orig/λ_i − low_freq_factor) / (high_freq_factor − low_freq_factor): (1 − s)·inv_i/factor + s·inv_i.
// This repeats those float32 operations in their order (torch's a / t is t.reciprocal() * a, each rounding
// kept, no fused multiply-add) and returns f_i = inv_i / inv_llama3_i in double, so that rope_table<float>,
// which rounds inv_i / f_i to float, rotates by Hugging Face's float32 inv_freq bit for bit. f_i is the
// exact formula's divisor (1, factor, or 1/((1 − s)/factor + s)) up to float32 rounding (~1e-7 relative).
inline std::vector<double> llama3_rope_divisors(double base, std::int64_t r, double factor, double low_freq_factor,
                                                double high_freq_factor, double orig) {
    auto rd = [](float x) { volatile float v = x; return float(v); };  // one float32 rounding, never fused
    const float low_wl = float(orig / low_freq_factor), high_wl = float(orig / high_freq_factor);
    std::vector<double> f(std::size_t(r / 2));
    for (std::int64_t i = 0; i < r / 2; ++i) {
        const float inv = rd(1.0f / std::pow(float(base), float(2 * i) / float(r)));  // as rope_table<float>
        const float wavelen = rd(rd(1.0f / inv) * float(2 * 3.14159265358979323846));  // 2 * math.pi / inv
        float scaled = inv;
        if (wavelen > low_wl) scaled = rd(inv / float(factor));
        else if (!(wavelen < high_wl)) {
            const float s = rd(rd(rd(rd(1.0f / wavelen) * float(orig)) - float(low_freq_factor)) /
                               float(high_freq_factor - low_freq_factor));
            scaled = rd(rd(rd(rd(1.0f - s) * inv) / float(factor)) + rd(s * inv));
        }
        f[std::size_t(i)] = double(inv) / double(scaled);
    }
    return f;
}

}  // namespace sinkscope::model
