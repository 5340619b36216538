// layers/rope.hpp: rotary position embedding against its definition (RoFormer, eq. 34) evaluated in long
// double for both pair layouts, partial rotary and frequency divisors; and the property RoPE exists for:
// a rotated query·key product depends on the two positions only through their difference.
#include <catch2/catch.hpp>

#include <sinkscope/layers/rope.hpp>

#include "layers/layer_test_util.hpp"

using namespace sinkscope;
using namespace sinkscope::test::layers;

namespace {

// Pair i (i < r/2) of every head at position p = t + offset rotated by θ = p · base^(−2i/r) / f_i:
// (a, b) ← (a cos θ − b sin θ, a sin θ + b cos θ); head entries r … d_h − 1 unchanged.
LongMat rope_reference(const Mat<double>& x, std::int64_t H, std::int64_t dh, long double base, model::RopeLayout layout,
                       std::int64_t offset, std::int64_t r, const std::vector<double>& divisors) {
    LongMat y = x.cast<long double>();
    const std::int64_t half = r / 2;
    for (Eigen::Index t = 0; t < x.rows(); ++t)
        for (std::int64_t h = 0; h < H; ++h)
            for (std::int64_t i = 0; i < half; ++i) {
                const long double f = divisors.empty() ? 1.0L : divisors[std::size_t(i)];
                const long double theta = (long double)(t + offset) * std::pow(base, -2.0L * i / r) / f;
                const std::int64_t ia = h * dh + (layout == model::RopeLayout::half_split ? i : 2 * i);
                const std::int64_t ib = h * dh + (layout == model::RopeLayout::half_split ? i + half : 2 * i + 1);
                const long double a = x(t, ia), b = x(t, ib);
                y(t, ia) = a * std::cos(theta) - b * std::sin(theta);
                y(t, ib) = a * std::sin(theta) + b * std::cos(theta);
            }
    return y;
}

}  // namespace

TEST_CASE("rope_forward equals the rotation of its definition in both layouts, partial and scaled", "[layers][rope]") {
    const std::int64_t T = 9, H = 2, dh = 16;
    const Mat<double> x = gaussian<double>(T, H * dh, 11);
    std::vector<double> divisors(4);
    for (std::size_t i = 0; i < divisors.size(); ++i) divisors[i] = 1.0 + 0.5 * double(i);  // r = 8: 4 frequencies
    for (auto layout : {model::RopeLayout::half_split, model::RopeLayout::interleaved}) {
        for (std::int64_t offset : {0, 37}) {
            Mat<double> y = x;
            model::rope_forward(y, H, dh, 10000.0, layout, offset);
            CHECK(relative_error(y, rope_reference(x, H, dh, 10000.0L, layout, offset, dh, {})) < 1e-13);
            y = x;  // partial rotary (GPT-NeoX's rotary_pct): the first 8 of 16 entries rotate
            model::rope_forward(y, H, dh, 500.0, layout, offset, 8);
            CHECK(relative_error(y, rope_reference(x, H, dh, 500.0L, layout, offset, 8, {})) < 1e-13);
            y = x;  // Llama 3.1's divisors on the same partial layout
            model::rope_forward(y, H, dh, 500.0, layout, offset, 8, divisors);
            CHECK(relative_error(y, rope_reference(x, H, dh, 500.0L, layout, offset, 8, divisors)) < 1e-13);
        }
    }
}

TEST_CASE("RoPE: q·k after rotation depends on the positions only through their difference; norms kept",
          "[layers][rope]") {
    const std::int64_t dh = 16, n = 40;
    const Mat<double> q = gaussian<double>(1, dh, 12), k = gaussian<double>(1, dh, 13);
    for (auto layout : {model::RopeLayout::half_split, model::RopeLayout::interleaved}) {
        // Row t of Q (K) is q (k) at position t: rotated rows are q at t and k at t.
        Mat<double> Q = q.replicate(n, 1), K = k.replicate(n, 1);
        model::rope_forward(Q, 1, dh, 10000.0, layout);
        model::rope_forward(K, 1, dh, 10000.0, layout);
        for (std::int64_t t = 0; t < n; ++t) CHECK(Q.row(t).norm() == Approx(q.norm()).epsilon(1e-14));
        // ⟨R_t q, R_s k⟩ = ⟨q, R_{s−t} k⟩ for every (t, s) with the same s − t.
        for (std::int64_t delta : {0, 3, 17}) {
            const double first = Q.row(0).dot(K.row(delta));
            for (std::int64_t t = 1; t + delta < n; ++t) CHECK(Q.row(t).dot(K.row(t + delta)) == Approx(first).epsilon(1e-12));
        }
    }
}

TEST_CASE("rope_backward is the adjoint of rope_forward: <R x, y> = <x, R^T y>", "[layers][rope]") {
    const std::int64_t T = 7, H = 3, dh = 8;
    const Mat<double> x = gaussian<double>(T, H * dh, 14), y = gaussian<double>(T, H * dh, 15);
    const std::vector<double> divisors = {1.0, 2.5};  // rotary_dim 4: two frequencies
    for (auto layout : {model::RopeLayout::half_split, model::RopeLayout::interleaved}) {
        Mat<double> rx = x, rty = y;
        model::rope_forward(rx, H, dh, 10000.0, layout, 5);
        train::rope_backward(rty, H, dh, 10000.0, layout, 5);
        CHECK(rx.cwiseProduct(y).sum() == Approx(x.cwiseProduct(rty).sum()).epsilon(1e-13));
        rx = x;  // partial rotary with frequency divisors: the pass-through entries included
        rty = y;
        model::rope_forward(rx, H, dh, 10000.0, layout, 5, 4, divisors);
        train::rope_backward(rty, H, dh, 10000.0, layout, 5, 4, divisors);
        CHECK(rx.cwiseProduct(y).sum() == Approx(x.cwiseProduct(rty).sum()).epsilon(1e-13));
        // and the backward leaves the pass-through entries of the gradient as they were
        for (std::int64_t h = 0; h < H; ++h) CHECK(rty.middleCols(h * dh + 4, dh - 4) == y.middleCols(h * dh + 4, dh - 4));
    }
}
