// The quantized linear layer (layers/quantized_linear.hpp) against x·Wᵀ in double, W being the float32
// matrix io::dequantize makes of the same blocks (bit for bit ggml's; tests/io checks that).
//
// Weights are what a random-weight GGUF holds: random bytes with the fp16 scale fields overwritten by
// finite positive fp16 values (exponent 2^-10 … 2^-3), so every quant, sub-scale and min pattern occurs.
//
// Tolerances, per output i, with S_i = Σ_j |x_j||W_ij| (+ |b_i|) and u = 2^-24:
//   exact  |Δ| ≤ (K + 2) u S_i — Higham's bound γ_K for a float dot product of K terms plus the bias add;
//          the dequantized values are exact, so float summation is the only error.
//   int8   |Δ| ≤ Q_i + 8 (K + 2) u S_i, Q_i = Σ_j |W_ij| s_{b(j)} / 2: rounding x_j to a_j s_b moves it by
//          at most s_b / 2 = max_b|x| / 254 — about 2^-8 of the block's largest activation, which is why
//          this path cannot reach 1e-4. The second term is the float work of the path, whose terms
//          g u a s and c A s cancel (u = q + offset) by up to ~8× Σ|x||w| for Q8_0.
//          Measured (seed below, K = 512, N = 150, worst output of each case; SINKSCOPE_PRINT_ERRORS=1
//          prints them): max |Δ| / Q_i = 0.09–0.23 for Gaussian x, 0.15–0.42 with one channel at 100
//          (the coarse blocks around a massive activation); max |Δ| / S_i = 1.0e-3–2.8e-3 for Gaussian x
//          (≈ 2^-9…2^-8.5), up to 7.7e-2 with the outlier, whose block shares its scale with 31 normal
//          values. The test pins |Δ| ≤ 0.6 Q_i and, for Gaussian x, |Δ| ≤ 4e-3 S_i: a kernel that loses a
//          rounding or a group's scale fails these even where it stays inside the worst-case bound.
#include <catch2/catch.hpp>

#include <sinkscope/io/dequantize.hpp>
#include <sinkscope/layers/quantized_linear.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <random>
#include <vector>

using namespace sinkscope;
using namespace sinkscope::model;
using io::GgmlType;

namespace {

// Byte offsets of the fp16 scale fields of each block type (io/dequantize.hpp's layout table).
std::vector<int> fp16_fields(GgmlType t) {
    switch (t) {
        case GgmlType::Q8_0: case GgmlType::Q4_0: case GgmlType::Q5_0: return {0};
        case GgmlType::Q4_1: case GgmlType::Q5_1: case GgmlType::Q4_K: case GgmlType::Q5_K: return {0, 2};
        case GgmlType::Q6_K: return {208};
        default: return {};
    }
}

std::vector<std::uint8_t> random_blocks(GgmlType t, std::int64_t rows, std::int64_t cols, std::mt19937& rng) {
    std::vector<std::uint8_t> data(io::tensor_bytes(t, rows * cols));
    std::uniform_int_distribution<int> byte(0, 255), expo(5, 12), mant(0, 1023);
    for (auto& v : data) v = static_cast<std::uint8_t>(byte(rng));
    const std::int64_t bb = io::block_bytes(t), nb = static_cast<std::int64_t>(data.size()) / bb;
    if (t == GgmlType::F32) {  // finite floats in [-1, 1]
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        for (std::int64_t i = 0; i < nb; ++i) {
            const float f = u(rng);
            std::memcpy(data.data() + 4 * i, &f, 4);
        }
    } else if (t == GgmlType::F16) {
        for (std::int64_t i = 0; i < nb; ++i) {
            const auto h = static_cast<std::uint16_t>((byte(rng) & 0x80) << 8 | expo(rng) << 10 | mant(rng));
            data[2 * i] = static_cast<std::uint8_t>(h & 0xff), data[2 * i + 1] = static_cast<std::uint8_t>(h >> 8);
        }
    }
    for (std::int64_t i = 0; i < nb; ++i)
        for (int off : fp16_fields(t)) {
            const auto h = static_cast<std::uint16_t>(expo(rng) << 10 | mant(rng));
            data[i * bb + off] = static_cast<std::uint8_t>(h & 0xff);
            data[i * bb + off + 1] = static_cast<std::uint8_t>(h >> 8);
        }
    return data;
}

struct Errors {
    double max_over_bound = 0;  // max_i |Δ_i| / tol_i
    double max_over_q = 0;      // max_i |Δ_i| / Q_i
    double max_over_s = 0;      // max_i |Δ_i| / S_i
};

using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// x·Wᵀ in double, with S = |x|·|W|ᵀ and Q = (s/2)·|W|ᵀ (file comment), computed once per case.
struct Reference {
    MatD ref, S, Q;
    std::int64_t K;
};

Reference reference(const Mat<float>& x, const Mat<float>& W) {
    const std::int64_t T = x.rows(), K = x.cols();
    const MatD xd = x.cast<double>(), Wd = W.cast<double>();
    MatD s_half(T, K);  // s_{b(j)} / 2, the largest rounding error of x_j in the int8 path
    for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t blk = 0; blk < K / 32; ++blk)
            s_half.row(t).segment(blk * 32, 32).setConstant(xd.row(t).segment(blk * 32, 32).cwiseAbs().maxCoeff() / 254.0);
    return {xd * Wd.transpose(), xd.cwiseAbs() * Wd.cwiseAbs().transpose(), s_half * Wd.cwiseAbs().transpose(), K};
}

// Compares y with x·Wᵀ + b (every output against its own tolerance); returns the worst ratios.
Errors compare(const Mat<float>& y, const Reference& R, const Vec<float>& b, bool int8) {
    const std::int64_t T = R.ref.rows(), N = R.ref.cols(), K = R.K;
    const double u = std::ldexp(1.0, -24);
    REQUIRE(y.rows() == T);
    REQUIRE(y.cols() == N);
    MatD ref = R.ref, S = R.S;
    const MatD& Q = R.Q;
    if (b.size()) {
        ref.rowwise() += b.cast<double>().transpose();
        S.rowwise() += b.cast<double>().cwiseAbs().transpose();
    }
    Errors e;
    std::int64_t bad = 0, worst_t = 0, worst_i = 0;
    for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t i = 0; i < N; ++i) {
            const double err = std::fabs(double(y(t, i)) - ref(t, i));
            const double tol = int8 ? Q(t, i) + 8.0 * double(K + 2) * u * S(t, i) : double(K + 2) * u * S(t, i);
            if (!(err <= tol)) ++bad;  // NaN counts as bad
            if (!(err / tol <= e.max_over_bound)) e.max_over_bound = err / tol, worst_t = t, worst_i = i;
            if (Q(t, i) > 0) e.max_over_q = std::max(e.max_over_q, err / Q(t, i));
            if (S(t, i) > 0) e.max_over_s = std::max(e.max_over_s, err / S(t, i));
        }
    INFO("worst output: t " << worst_t << " row " << worst_i << " y " << y(worst_t, worst_i) << " ref "
                            << ref(worst_t, worst_i) << ", |error| / tolerance " << e.max_over_bound);
    CHECK(bad == 0);
    return e;
}

Mat<float> random_x(std::int64_t T, std::int64_t K, std::mt19937& rng, bool outlier) {
    std::normal_distribution<float> n(0.0f, 1.0f);
    Mat<float> x(T, K);
    for (std::int64_t i = 0; i < x.size(); ++i) x.data()[i] = n(rng);
    if (outlier)  // a massive activation: one channel 100× the others (the sink models' residual stream)
        for (std::int64_t t = 0; t < T; ++t) x(t, 7) = 100.0f;
    return x;
}

}  // namespace

TEST_CASE("quantized linear_forward: exact and int8 paths against x W^T in double, every kernel type", "[model]") {
    const GgmlType types[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                              GgmlType::Q5_1, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};
    std::mt19937 rng(20261201);
    const std::int64_t K = 512, N = 150;  // 150 rows: two exact tiles (128 + 22), 10 panels (9 × 16 + 6)
    for (GgmlType type : types) {
        const auto blocks = random_blocks(type, N, K, rng);
        const QuantMatrix Wq(type, N, K, blocks.data());
        Mat<float> W(N, K);
        io::dequantize<float>(type, blocks.data(), N * K, W.data());
        Vec<float> b = Vec<float>::Random(N);
        for (std::int64_t T : {1, 7, 64}) {
            for (bool outlier : {false, true}) {
                DYNAMIC_SECTION(io::type_name(type) << " T " << T << (outlier ? " with an outlier channel" : "")) {
                    const Mat<float> x = random_x(T, K, rng, outlier);
                    const Reference R = reference(x, W);
                    Mat<float> y;
                    linear_forward(y, x, Wq, b, QuantCompute::exact);
                    compare(y, R, b, false);
                    linear_forward(y, x, Wq, Vec<float>(), QuantCompute::exact);  // no bias
                    compare(y, R, Vec<float>(), false);

                    linear_forward(y, x, Wq, b, QuantCompute::int8);
                    const Errors e = compare(y, R, b, true);
                    if (std::getenv("SINKSCOPE_PRINT_ERRORS"))
                        std::printf("%s T %lld outlier %d: max|d|/Q %.3f max|d|/S %.2e\n", io::type_name(type).c_str(),
                                    static_cast<long long>(T), int(outlier), e.max_over_q, e.max_over_s);
                    CHECK(e.max_over_q <= 0.6);                // measured ≤ 0.42 (file comment)
                    if (!outlier) CHECK(e.max_over_s <= 4e-3);  // measured ≤ 2.8e-3

                    // the SIMD kernel against the scalar oracle: same integer dots, float order alone differs
                    Mat<float> y_scalar(T, N);
                    detail::linear_forward_int8(y_scalar, x, Wq, b, /*simd=*/false);
                    const float scale = (x.cwiseAbs() * W.cwiseAbs().transpose()).maxCoeff();
                    CHECK((y - y_scalar).cwiseAbs().maxCoeff() <= 1e-5f * scale);
                }
            }
        }
    }
}

TEST_CASE("quantized linear_forward: small odd shapes (fewer rows than a panel, one block per row)", "[model]") {
    std::mt19937 rng(11);
    const GgmlType types[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                              GgmlType::Q5_1, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};
    for (GgmlType type : types) {
        const std::int64_t K = io::block_elements(type) == 32 ? 96 : 256, N = 5;  // 3 blocks of 32 / 1 of 256
        const auto blocks = random_blocks(type, N, K, rng);
        const QuantMatrix Wq(type, N, K, blocks.data());
        Mat<float> W(N, K);
        io::dequantize<float>(type, blocks.data(), N * K, W.data());
        const Vec<float> b = Vec<float>::Random(N);
        for (std::int64_t T : {1, 9}) {
            INFO(io::type_name(type) << " T " << T);
            const Mat<float> x = random_x(T, K, rng, false);
            const Reference R = reference(x, W);
            Mat<float> y;
            linear_forward(y, x, Wq, b, QuantCompute::exact);
            compare(y, R, b, false);
            linear_forward(y, x, Wq, b, QuantCompute::int8);
            CHECK(compare(y, R, b, true).max_over_q <= 0.6);
        }
    }
}

// The bf16 path's dequantizer against io::dequantize (ggml's values, tests/io): every weight the bf16 rounding
// of the same float. Compared as numbers: fma(g, u, c) gives +0 where ggml's d·0 gives −0 for a negative d.
TEST_CASE("quantized linear_forward: bf16 tiles are the bf16 rounding of io::dequantize, every block type", "[model]") {
    std::mt19937 rng(5);
    for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                          GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
        const std::int64_t N = 9, K = 512;
        auto blocks = random_blocks(type, N, K, rng);
        if (type == GgmlType::Q8_0)  // negative scales too (random_blocks writes positive ones)
            for (std::size_t i = 0; i < blocks.size(); i += 34 * 3) blocks[i + 1] |= 0x80;
        const QuantMatrix Wq(type, N, K, blocks.data());
        std::vector<float> W(static_cast<std::size_t>(N * K));
        io::dequantize<float>(type, blocks.data(), N * K, W.data());
        std::vector<std::uint16_t> tile(static_cast<std::size_t>((N - 2) * K));
        detail::dequantize_rows_bf16(Wq, 2, N - 2, tile.data());  // rows 2..8: the row offset is applied
        std::int64_t differ = 0;
        for (std::int64_t i = 0; i < (N - 2) * K; ++i)
            if (from_bf16_bits(tile[std::size_t(i)]) != from_bf16_bits(to_bf16_bits(W[std::size_t(2 * K + i)]))) ++differ;
        INFO(io::type_name(type));
        CHECK(differ == 0);
    }
}

// bf16 compute on block types: the product must be x̃·W̃ᵀ with x̃ = bf16(x) and W̃ = bf16(dequantize(W)), up to
// float32 summation ((K + 2) u Σ|x̃||W̃|: exactly the rounding the file comment names, nothing coarser), and
// therefore within bf16_matmul.hpp's bound of the exact x·Wᵀ. N = 300: two tiles (256 + 44).
TEST_CASE("quantized linear_forward: bf16 path on block types is bf16(x) times bf16(dequantized W)", "[model]") {
    const GgmlType types[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                              GgmlType::Q5_1, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};
    std::mt19937 rng(20261206);
    const std::int64_t K = 512, N = 300;
    const double u = std::ldexp(1.0, -24);
    for (GgmlType type : types) {
        REQUIRE(bf16_compute_applies(type));
        const auto blocks = random_blocks(type, N, K, rng);
        const QuantMatrix Wq(type, N, K, blocks.data());
        Mat<float> W(N, K);
        io::dequantize<float>(type, blocks.data(), N * K, W.data());
        const Vec<float> b = Vec<float>::Random(N);
        for (std::int64_t T : {1, 64}) {
            for (bool outlier : {false, true}) {
                DYNAMIC_SECTION(io::type_name(type) << " T " << T << (outlier ? " with an outlier channel" : "")) {
                    const Mat<float> x = random_x(T, K, rng, outlier);
                    Mat<float> y;
                    if (!bf16_matmul_available()) {
                        CHECK_THROWS_WITH(linear_forward(y, x, Wq, b, QuantCompute::bf16), Catch::Contains("oneDNN"));
                        continue;
                    }
                    linear_forward(y, x, Wq, b, QuantCompute::bf16);
                    const auto round = [](const Mat<float>& m) {
                        MatD r(m.rows(), m.cols());
                        for (std::int64_t i = 0; i < m.size(); ++i) r.data()[i] = from_bf16_bits(to_bf16_bits(m.data()[i]));
                        return r;
                    };
                    const MatD xr = round(x), Wr = round(W);
                    MatD ref = xr * Wr.transpose();
                    ref.rowwise() += b.cast<double>().transpose();
                    MatD S = xr.cwiseAbs() * Wr.cwiseAbs().transpose();
                    S.rowwise() += b.cast<double>().cwiseAbs().transpose();
                    const MatD exact_S = x.cast<double>().cwiseAbs() * W.cast<double>().cwiseAbs().transpose();
                    MatD exact = x.cast<double>() * W.cast<double>().transpose();
                    exact.rowwise() += b.cast<double>().transpose();
                    const double bf16_bound = std::ldexp(1.0, -7) + std::ldexp(1.0, -16) + double(K) * u * 1.01;
                    std::int64_t bad = 0, bad_exact = 0;
                    double worst_over_s = 0;
                    for (std::int64_t t = 0; t < T; ++t)
                        for (std::int64_t i = 0; i < N; ++i) {
                            const double d = std::fabs(double(y(t, i)) - ref(t, i));
                            if (!(d <= double(K + 2) * u * S(t, i))) ++bad;
                            const double de = std::fabs(double(y(t, i)) - exact(t, i));
                            if (!(de <= bf16_bound * exact_S(t, i) + 2 * u * std::fabs(double(b(i))))) ++bad_exact;
                            worst_over_s = std::max(worst_over_s, de / exact_S(t, i));
                        }
                    CHECK(bad == 0);
                    CHECK(bad_exact == 0);
                    if (std::getenv("SINKSCOPE_PRINT_ERRORS"))
                        std::printf("bf16 %s T %lld outlier %d: max|d|/S %.2e\n", io::type_name(type).c_str(),
                                    static_cast<long long>(T), int(outlier), worst_over_s);
                    // The rounding is per value: a massive channel does not coarsen the others (int8 reaches
                    // 7.7e-2 of S next to the outlier; bf16 stays near 2^-9).
                    CHECK(worst_over_s <= 4e-3);
                }
            }
        }
    }
}

TEST_CASE("quantized linear_forward: types without an int8 kernel take the exact path", "[model]") {
    std::mt19937 rng(7);
    for (GgmlType type : {GgmlType::F32, GgmlType::F16}) {
        const auto blocks = random_blocks(type, 20, 64, rng);
        const QuantMatrix Wq(type, 20, 64, blocks.data());
        Mat<float> W(20, 64);
        io::dequantize<float>(type, blocks.data(), 20 * 64, W.data());
        const Mat<float> x = random_x(7, 64, rng, false);
        Mat<float> y;
        linear_forward(y, x, Wq, Vec<float>(), QuantCompute::int8);
        CHECK_FALSE(int8_kernel_available(type));
        compare(y, reference(x, W), Vec<float>(), false);
    }
}

TEST_CASE("QuantMatrix and linear_forward reject bad shapes and types", "[model]") {
    const std::vector<std::uint8_t> bytes(1 << 12);
    CHECK_THROWS_AS(QuantMatrix(GgmlType::Q4_K, 4, 100, bytes.data()), Error);  // 100 is not a block of 256
    CHECK_THROWS_WITH(QuantMatrix(GgmlType::Q8_0, 2, 48, bytes.data()), Catch::Contains("not a whole number"));
    CHECK_THROWS_AS(QuantMatrix(GgmlType::IQ2_XXS, 1, 256, bytes.data()), Error);  // not dequantizable
    CHECK_THROWS_AS(QuantMatrix(GgmlType::Q8_0, -1, 32, bytes.data()), Error);
    CHECK_THROWS_AS(QuantMatrix(GgmlType::Q8_0, 1, 32, nullptr), Error);
    CHECK_NOTHROW(QuantMatrix(GgmlType::Q8_0, 0, 32, nullptr));

    const QuantMatrix W(GgmlType::Q8_0, 4, 64, bytes.data());
    Mat<float> y, x = Mat<float>::Zero(3, 32);
    CHECK_THROWS_AS(linear_forward(y, x, W, Vec<float>()), Error);  // x has 32 columns, W 64
    x = Mat<float>::Zero(3, 64);
    CHECK_THROWS_AS(linear_forward(y, x, W, Vec<float>::Zero(5)), Error);  // bias of 5 for 4 outputs
}
