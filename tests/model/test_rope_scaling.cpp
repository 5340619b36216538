// model/rope_scaling.hpp: Llama 3.1's divisors, computed in float32 steps as transformers does, against the
// exact formula in double (Meta's published rule):
//   λ = 2π/inv;  λ < orig/high: 1;  λ > orig/low: factor;
//   else s = (orig/λ − low)/(high − low), divisor = 1 / ((1 − s)/factor + s).
// The two agree up to float32 rounding of inv and λ; test_reference checks the float32 frequencies bit for bit
// against transformers' inv_freq.
#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <cmath>
#include <vector>

#include <sinkscope/model/rope_scaling.hpp>

#include "seeded_property.hpp"

using namespace sinkscope;

namespace {
double exact_divisor(double base, std::int64_t r, std::int64_t i, double factor, double low, double high, double orig) {
    const double inv = std::pow(base, -double(2 * i) / double(r));
    const double wavelen = 2 * M_PI / inv;
    if (wavelen < orig / high) return 1.0;
    if (wavelen > orig / low) return factor;
    const double s = (orig / wavelen - low) / (high - low);
    return 1.0 / ((1 - s) / factor + s);
}
}  // namespace

TEST_CASE("rope_scaling: Llama 3.1 8B's divisors match the exact rule", "[rope_scaling]") {
    // Llama 3.1 8B: base 5e5, d_h 128, factor 8, low 1, high 4, original context 8192.
    const auto f = model::llama3_rope_divisors(5e5, 128, 8.0, 1.0, 4.0, 8192.0);
    REQUIRE(f.size() == 64);
    int kept = 0, divided = 0, smoothed = 0;
    for (std::int64_t i = 0; i < 64; ++i) {
        const double want = exact_divisor(5e5, 128, i, 8.0, 1.0, 4.0, 8192.0);
        CAPTURE(i, want, f[std::size_t(i)]);
        CHECK(std::abs(f[std::size_t(i)] - want) <= 1e-6 * want);
        kept += want == 1.0;
        divided += want == 8.0;
        smoothed += want != 1.0 && want != 8.0;
    }
    CHECK(kept > 0);  // the model's own numbers cover all three regimes
    CHECK(divided > 0);
    CHECK(smoothed > 0);
}

TEST_CASE("rope_scaling: divisors lie in [1, factor], rise with i, and match the exact rule away from its edges", "[rope_scaling][property]") {
    test::check_property("llama3 divisors", [] {
        const double base = *rc::gen::element(1e4, 5e5, 1e6);
        const std::int64_t r = 2 * *rc::gen::inRange<std::int64_t>(4, 65);
        const double factor = *rc::gen::element(2.0, 8.0, 32.0);
        const double low = *rc::gen::element(1.0, 2.0);
        const double high = low * *rc::gen::element(2.0, 4.0);
        const double orig = *rc::gen::element(64.0, 2048.0, 8192.0);
        const auto f = model::llama3_rope_divisors(base, r, factor, low, high, orig);
        RC_ASSERT(f.size() == std::size_t(r / 2));
        for (std::int64_t i = 0; i < r / 2; ++i) {
            const double d = f[std::size_t(i)];
            RC_ASSERT(d >= 1.0 - 1e-6);
            RC_ASSERT(d <= factor * (1 + 1e-6));
            if (i > 0) RC_ASSERT(d >= f[std::size_t(i - 1)] * (1 - 1e-6));  // longer wavelengths are divided more
            // At a regime edge a float32-rounded λ may fall on the other side; elsewhere the rules agree.
            const double inv = std::pow(base, -double(2 * i) / double(r)), wl = 2 * M_PI / inv;
            const bool near_edge = std::abs(wl / (orig / high) - 1) < 1e-5 || std::abs(wl / (orig / low) - 1) < 1e-5;
            if (!near_edge) RC_ASSERT(std::abs(d - exact_divisor(base, r, i, factor, low, high, orig)) <= 1e-5 * d);
        }
    }, 300, 20261207);
}
