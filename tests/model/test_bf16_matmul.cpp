// bf16 products (layers/bf16_matmul.hpp) against the same product in double.
//
// Bound, per entry, with S = Σₖ |Aᵢₖ||Bₖⱼ| (the header derives it): rounding each input to bf16 moves it by
// at most 2⁻⁸ of itself (8 significant bits), so
//   |C̃ − C| ≤ (2⁻⁷ + 2⁻¹⁶ + K·2⁻²⁴·(1 + 2⁻⁸)²) · S.
// Besides the bound, the tests check that the inputs really are rounded (a float32 product would pass the
// bound, so a second check requires the error of random inputs to exceed float32's own bound K·2⁻²⁴·S
// somewhere), that inputs already in bf16 give float32's result, and that the thread-local switch
// routes linear_forward / linear_backward through it and is restored.
#include <catch2/catch.hpp>

#include <sinkscope/layers/attention.hpp>
#include <sinkscope/layers/bf16_matmul.hpp>
#include <sinkscope/layers/linear.hpp>

#include <cmath>
#include <limits>
#include <cstring>
#include <random>
#include <thread>
#include <tuple>

#include "seeded_property.hpp"

using namespace sinkscope;
using namespace sinkscope::model;

namespace {

using MatF = Mat<float>;
using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

double bound_factor(std::int64_t K) {
    const double u = std::ldexp(1.0, -24);
    return std::ldexp(1.0, -7) + std::ldexp(1.0, -16) + double(K) * u * std::pow(1 + std::ldexp(1.0, -8), 2);
}

// The largest |C̃ − C| / S over the entries, and whether some entry's error exceeds float32's own bound.
struct Errors { double worst_ratio = 0; bool beyond_float32 = false; };
Errors errors(const MatF& got, const MatF& A, const MatF& B) {
    const MatD exact = A.cast<double>() * B.cast<double>();
    const MatD S = A.cast<double>().cwiseAbs() * B.cast<double>().cwiseAbs();
    Errors e;
    const double f32 = double(A.cols() + 2) * std::ldexp(1.0, -24);
    for (Eigen::Index i = 0; i < got.rows(); ++i)
        for (Eigen::Index j = 0; j < got.cols(); ++j) {
            const double d = std::abs(double(got(i, j)) - exact(i, j));
            if (S(i, j) > 0) e.worst_ratio = std::max(e.worst_ratio, d / S(i, j));
            else if (d > 0) e.worst_ratio = INFINITY;
            if (d > f32 * S(i, j)) e.beyond_float32 = true;
        }
    return e;
}

MatF random_matrix(std::mt19937_64& rng, std::int64_t r, std::int64_t c, double scale_spread) {
    std::normal_distribution<float> g;
    std::uniform_real_distribution<double> e(-scale_spread, scale_spread);
    MatF m(r, c);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = g(rng) * float(std::exp2(e(rng)));
    return m;
}

}  // namespace

TEST_CASE("bf16 rounding is round-to-nearest-even", "[model]") {
    CHECK(from_bf16_bits(to_bf16_bits(1.0f)) == 1.0f);
    // 1 + 2⁻⁸ is halfway between 1 and 1 + 2⁻⁷: ties go to the even significand, 1.
    CHECK(from_bf16_bits(to_bf16_bits(1.0f + std::ldexp(1.0f, -8))) == 1.0f);
    // 1 + 3·2⁻⁸ is halfway between 1 + 2⁻⁷ and 1 + 2⁻⁶: even is 1 + 2⁻⁶.
    CHECK(from_bf16_bits(to_bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8))) == 1.0f + std::ldexp(1.0f, -6));
    CHECK(from_bf16_bits(to_bf16_bits(1.0f + 3 * std::ldexp(1.0f, -9))) == 1.0f + std::ldexp(1.0f, -7));
    CHECK(std::isnan(from_bf16_bits(to_bf16_bits(NAN))));
    CHECK(std::isinf(from_bf16_bits(to_bf16_bits(INFINITY))));
    CHECK(from_bf16_bits(to_bf16_bits(-2.5f)) == -2.5f);
}

TEST_CASE("the vector conversion to bf16 equals the scalar rounding, bit for bit, outside the subnormals", "[model]") {
    std::mt19937_64 rng(5);
    std::vector<float> in;
    for (int i = 0; i < 100000; ++i) {
        std::uint32_t u = std::uint32_t(rng());
        if (i % 3 == 0) u = (u & 0xffff0000u) | 0x8000u;  // exact ties
        float f;
        std::memcpy(&f, &u, 4);
        if (std::fpclassify(f) == FP_SUBNORMAL) continue;  // vcvtneps2bf16 treats them as zero
        in.push_back(f);
    }
    std::vector<std::uint16_t> out(in.size());
    detail::convert_bf16(out.data(), in.data(), std::int64_t(in.size()));
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
        const std::uint16_t want = to_bf16_bits(in[i]);
        const bool both_nan = std::isnan(in[i]) && ((out[i] & 0x7f80u) == 0x7f80u) && (out[i] & 0x7fu);
        mismatches += out[i] != want && !both_nan;
    }
    CHECK(mismatches == 0);
}

TEST_CASE("bf16 products stay within the rounding bound and do round their inputs", "[model][property]") {
    if (!bf16_matmul_available()) { WARN("built without oneDNN: no bf16 products to test"); return; }
    test::check_property("bf16_matmul: |C̃ − C| ≤ (2⁻⁷ + 2⁻¹⁶ + K·2⁻²⁴(1+2⁻⁸)²) Σ|A||B|", [] {
        const auto M = *rc::gen::inRange<std::int64_t>(1, 40);
        const auto N = *rc::gen::inRange<std::int64_t>(1, 40);
        const auto K = *rc::gen::inRange<std::int64_t>(1, 300);
        const auto seed = *rc::gen::arbitrary<std::uint64_t>();
        const double spread = *rc::gen::element(0.0, 4.0, 20.0);  // magnitudes over 2^±spread
        const bool accumulate = *rc::gen::arbitrary<bool>();
        const bool transposed_b = *rc::gen::arbitrary<bool>();
        std::mt19937_64 rng(seed);
        const MatF A = random_matrix(rng, M, K, spread);
        const MatF B = random_matrix(rng, K, N, spread);
        const MatF Bt = B.transpose();
        const MatF C0 = random_matrix(rng, M, N, 0);
        MatF C = accumulate ? C0 : MatF::Constant(M, N, NAN);  // without accumulate, whatever C held is overwritten
        bf16_matmul(C.data(), N, matrix_ref(A), transposed_b ? matrix_ref(Bt).transposed() : matrix_ref(B), accumulate);
        // C₀ + C: one more float32 rounding of the sum, ≤ 2⁻²⁴ (|C₀| + S) (and the product's own bound).
        const MatD exact = A.cast<double>() * B.cast<double>() + (accumulate ? MatD(C0.cast<double>()) : MatD::Zero(M, N));
        const MatD S = A.cast<double>().cwiseAbs() * B.cast<double>().cwiseAbs();
        for (Eigen::Index i = 0; i < M; ++i)
            for (Eigen::Index j = 0; j < N; ++j) {
                const double allowed = bound_factor(K) * S(i, j) +
                                       (accumulate ? std::ldexp(1.0, -24) * (std::abs(double(C0(i, j))) + 2 * S(i, j)) : 0.0);
                RC_ASSERT(std::abs(double(C(i, j)) - exact(i, j)) <= allowed);
            }
    }, 200, 20261201);

    // Random inputs are not bf16 numbers: a product that skipped the rounding would stay within float32's
    // bound everywhere. Here it must not.
    std::mt19937_64 rng(7);
    const MatF A = random_matrix(rng, 16, 64, 0), B = random_matrix(rng, 64, 16, 0);
    MatF C(16, 16);
    bf16_matmul(C.data(), 16, matrix_ref(A), matrix_ref(B), false);
    const Errors e = errors(C, A, B);
    INFO("worst |C̃ − C| / Σ|A||B| = " << e.worst_ratio);
    CHECK(e.beyond_float32);
    CHECK(e.worst_ratio > std::ldexp(1.0, -12));
}

TEST_CASE("bf16 products of bf16 numbers are float32 products (adversarial cancellation)", "[model]") {
    if (!bf16_matmul_available()) { WARN("built without oneDNN: no bf16 products to test"); return; }
    // Integers below 256 are bf16 numbers; products and sums of these stay exact in float32 (< 2^24),
    // including the cancellations (big positive and negative terms) that rounding the inputs would expose.
    std::mt19937_64 rng(3);
    std::uniform_int_distribution<int> small(-255, 255);
    const std::int64_t M = 33, N = 17, K = 200;
    MatF A(M, K), B(K, N);
    for (Eigen::Index i = 0; i < A.size(); ++i) A.data()[i] = float(small(rng));
    for (Eigen::Index i = 0; i < B.size(); ++i) B.data()[i] = float(small(rng));
    A.col(0).setConstant(255.0f);
    B.row(0).setConstant(-255.0f);  // a large negative term in every entry
    MatF C(M, N);
    bf16_matmul(C.data(), N, matrix_ref(A), matrix_ref(B), false);
    const MatD exact = A.cast<double>() * B.cast<double>();
    CHECK((C.cast<double>() - exact).cwiseAbs().maxCoeff() == 0.0);
    // Zero columns: K = 0 gives zeros (or leaves an accumulated C alone).
    MatF Z = MatF::Constant(2, 3, 5.0f);
    const MatF empty_a(2, 0), empty_b(0, 3);
    bf16_matmul(Z.data(), 3, matrix_ref(empty_a), matrix_ref(empty_b), true);
    CHECK(Z.maxCoeff() == 5.0f);
    bf16_matmul(Z.data(), 3, matrix_ref(empty_a), matrix_ref(empty_b), false);
    CHECK(Z.cwiseAbs().maxCoeff() == 0.0f);
}

TEST_CASE("MatmulPrecision::bf16 routes the linear layer through bf16 products, on this thread only", "[model]") {
    if (!bf16_matmul_available()) { WARN("built without oneDNN: no bf16 products to test"); return; }
    std::mt19937_64 rng(11);
    const MatF x = random_matrix(rng, 9, 48, 0), W = random_matrix(rng, 20, 48, 0), dout = random_matrix(rng, 9, 20, 0);
    const Vec<float> b = random_matrix(rng, 20, 1, 0);
    MatF y32, y16;
    linear_forward(y32, x, W, b);
    {
        const ScopedMatmulPrecision bf16(MatmulPrecision::bf16);
        CHECK(matmul_precision() == MatmulPrecision::bf16);
        // Another thread keeps float32 (the setting is thread-local, like torch.autocast).
        MatmulPrecision other = MatmulPrecision::bf16;
        std::thread([&] { other = matmul_precision(); }).join();
        CHECK(other == MatmulPrecision::float32);
        linear_forward(y16, x, W, b);
        MatF direct(9, 20);
        bf16_matmul(direct.data(), 20, matrix_ref(x), matrix_ref(W).transposed(), false);
        direct.rowwise() += b.transpose();
        CHECK(y16 == direct);
        // Backward: dweight += doutᵀ x and dinp += dout W, both through bf16 products, accumulating.
        MatF dW = MatF::Constant(20, 48, 1.0f), dx = MatF::Constant(9, 48, -1.0f);
        Vec<float> db = Vec<float>::Zero(20);
        train::linear_backward(&dx, dW, &db, dout, x, W);
        MatF dW_ref = MatF::Constant(20, 48, 1.0f), dx_ref = MatF::Constant(9, 48, -1.0f);
        bf16_matmul(dW_ref.data(), 48, matrix_ref(dout).transposed(), matrix_ref(x), true);
        bf16_matmul(dx_ref.data(), 48, matrix_ref(dout), matrix_ref(W), true);
        CHECK(dW == dW_ref);
        CHECK(dx == dx_ref);
        CHECK((db - dout.colwise().sum().transpose()).cwiseAbs().maxCoeff() == 0.0f);
    }
    CHECK(matmul_precision() == MatmulPrecision::float32);
    CHECK(y16 != y32);  // the switch made a difference …
    CHECK((y16 - y32).cwiseAbs().maxCoeff() < 0.05f * (x.cwiseAbs() * W.transpose().cwiseAbs()).maxCoeff());  // … of bf16's size
    // double never changes: gradient checks stay exact under the switch.
    const ScopedMatmulPrecision bf16(MatmulPrecision::bf16);
    Mat<double> yd, yd_ref = x.cast<double>() * W.cast<double>().transpose();
    linear_forward(yd, Mat<double>(x.cast<double>()), Mat<double>(W.cast<double>()), Vec<double>());
    CHECK((yd - yd_ref).cwiseAbs().maxCoeff() < 1e-12);
}

TEST_CASE("bf16 weight copies are reused within an epoch, for W and Wᵀ alike, and renewed in the next", "[model]") {
    if (!bf16_matmul_available()) { WARN("built without oneDNN: no bf16 products to test"); return; }
    std::mt19937_64 rng(13);
    const MatF x = random_matrix(rng, 7, 24, 0), dout = random_matrix(rng, 7, 10, 0);
    MatF W = random_matrix(rng, 10, 24, 0);
    auto products = [&](bool weight) {  // y = x Wᵀ, then dinp = dout W: one copy serves both
        MatF y(7, 10), d(7, 24);
        bf16_matmul(y.data(), 10, matrix_ref(x), matrix_ref(W).transposed(), false, weight);
        bf16_matmul(d.data(), 24, matrix_ref(dout), matrix_ref(W), false, weight);
        return std::make_pair(y, d);
    };
    const ScopedMatmulPrecision outer(MatmulPrecision::bf16, new_matmul_epoch());
    const auto fresh = products(false), cached = products(true), again = products(true);
    CHECK(cached.first == fresh.first);
    CHECK(cached.second == fresh.second);
    CHECK(again.first == fresh.first);
    CHECK(again.second == fresh.second);
    W *= 2.0f;  // a weight update: the same epoch still sees the old copy (the documented contract) …
    CHECK(products(true).first == fresh.first);
    {
        const ScopedMatmulPrecision next(MatmulPrecision::bf16, new_matmul_epoch());  // … a new epoch converts again
        const auto renewed = products(true);
        CHECK(renewed.first == MatF(2.0f * fresh.first));  // doubling is exact in bf16 and float
        CHECK(renewed.second == MatF(2.0f * fresh.second));
    }
    {
        const ScopedMatmulPrecision plain(MatmulPrecision::bf16);  // epoch 0: no copies kept, so never stale
        W *= 0.5f;
        CHECK(products(true).first == fresh.first);
        W *= 2.0f;
        CHECK(products(true).first == MatF(2.0f * fresh.first));
    }
}

TEST_CASE("ScopedBf16Reuse: one conversion serves m and mᵀ, an operand of another shape at m's address converts afresh", "[model]") {
    if (!bf16_matmul_available()) { WARN("built without oneDNN: no bf16 products to test"); return; }
    std::mt19937_64 rng(17);
    MatF dout = random_matrix(rng, 9, 12, 0);
    const MatF x = random_matrix(rng, 9, 20, 0), W = random_matrix(rng, 12, 20, 0);
    auto products = [&] {  // a linear layer's backward: dW = doutᵀ x and dX = dout W, both reading dout
        MatF dw(12, 20), dx(9, 20);
        bf16_matmul(dw.data(), 20, matrix_ref(dout).transposed(), matrix_ref(x), false);
        bf16_matmul(dx.data(), 20, matrix_ref(dout), matrix_ref(W), false);
        return std::make_pair(dw, dx);
    };
    auto top_rows = [&] {  // dout's top 4 × 12 block starts at dout's address with another shape
        MatF part(4, 20);
        bf16_matmul(part.data(), 20, matrix_ref(dout.topRows(4)), matrix_ref(W), false);
        return part;
    };
    const auto plain = products();
    const MatF plain_part = top_rows();
    {
        const ScopedMatmulPrecision bf16_thread(MatmulPrecision::bf16);  // the scope acts on bf16 threads only
        const ScopedBf16Reuse reuse(dout);
        const auto kept = products(), again = products();
        CHECK(kept.first == plain.first);
        CHECK(kept.second == plain.second);
        CHECK(again.first == plain.first);
        CHECK(again.second == plain.second);
        dout *= 2.0f;  // changing m inside the scope breaks the contract: the kept bits are the old ones …
        CHECK(products().second == plain.second);
        CHECK(top_rows() == MatF(2.0f * plain_part));  // … but an operand of another shape is converted again
    }
    // Once the scope ends, dout is converted again for every product.
    const auto after = products();
    CHECK(after.first == MatF(2.0f * plain.first));  // doubling is exact in bf16 and float
    CHECK(after.second == MatF(2.0f * plain.second));
    {  // on a thread whose products are float32 the scope does nothing: a changed m is converted afresh
        const ScopedBf16Reuse inert(dout);
        CHECK(products().second == MatF(2.0f * plain.second));  // an active scope would keep these bits …
        dout *= 0.5f;
        CHECK(products().second == plain.second);  // … and give 2 × plain here
    }
}

TEST_CASE("offered bf16 bits serve the next bf16 operation on x only, and only that one", "[model]") {
    if (!bf16_matmul_available()) { WARN("built without oneDNN: no bf16 products to test"); return; }
    std::mt19937_64 rng(23);
    const MatF x = random_matrix(rng, 9, 20, 0), y = random_matrix(rng, 9, 20, 0), W = random_matrix(rng, 12, 20, 0);
    auto times_wt = [&](const MatF& a) {  // a Wᵀ, as a linear layer's forward
        MatF out(a.rows(), 12);
        bf16_matmul(out.data(), 12, matrix_ref(a), matrix_ref(W).transposed(), false);
        return out;
    };
    const MatF plain = times_wt(x), plain_y = times_wt(y);
    // Offer bits that are *not* x's rounding (those of 2x, doubling is exact), so that taking them shows.
    const MatF x2 = 2.0f * x;
    Bf16Matrix doubled;
    doubled.assign(x2.data(), x2.rows(), x2.cols());
    offer_bf16_bits(x.data(), doubled);
    CHECK(times_wt(x) == MatF(2.0f * plain));  // taken
    CHECK(times_wt(x) == plain);               // … by that product only
    offer_bf16_bits(x.data(), doubled);
    CHECK(times_wt(y) == plain_y);  // another matrix's product drops the offer …
    CHECK(times_wt(x) == plain);    // … so it is gone for x too
    offer_bf16_bits(x.data(), doubled);
    MatF part(4, 12);  // x's top rows: the same address, another shape
    bf16_matmul(part.data(), 12, matrix_ref(x.topRows(4)), matrix_ref(W).transposed(), false);
    CHECK(part == MatF(plain.topRows(4)));
    offer_bf16_bits(x.data(), doubled);
    withdraw_bf16_offer();
    CHECK(times_wt(x) == plain);
    {  // a ScopedBf16Reuse of x takes the offer and serves every product of its scope with it
        const ScopedMatmulPrecision bf16_thread(MatmulPrecision::bf16);
        offer_bf16_bits(x.data(), doubled);
        const ScopedBf16Reuse reuse(x);
        CHECK(times_wt(x) == MatF(2.0f * plain));
        CHECK(times_wt(x) == MatF(2.0f * plain));
        CHECK(times_wt(y) == plain_y);
    }
    CHECK(times_wt(x) == plain);
}

TEST_CASE("a Bf16Matrix's blocks are product operands: the same products as the float matrix they round", "[model]") {
    if (!bf16_matmul_available()) { WARN("built without oneDNN: no bf16 products to test"); return; }
    std::mt19937_64 rng(29);
    const MatF A = random_matrix(rng, 30, 24, 0), B = random_matrix(rng, 24, 40, 0);
    Bf16Matrix a, b;
    a.assign(A.data(), A.rows(), A.cols());
    b.assign(B.data(), B.rows(), B.cols());
    REQUIRE(a.rows == 30);
    REQUIRE(a.cols == 24);
    auto product = [](const MatrixRef& l, const MatrixRef& r) {
        MatF out(l.rows, r.cols);
        bf16_matmul(out.data(), r.cols, l, r, false);
        return out;
    };
    // whole matrices, interior blocks (strided: packed), transposes
    CHECK(product(a.ref(), b.ref()) == product(matrix_ref(A), matrix_ref(B)));
    CHECK(product(a.block(3, 5, 10, 8), b.block(2, 7, 8, 11)) ==
          product(matrix_ref(A.block(3, 5, 10, 8)), matrix_ref(B.block(2, 7, 8, 11))));
    CHECK(product(a.block(0, 4, 30, 6).transposed(), a.block(0, 10, 30, 9)) ==
          product(matrix_ref(A.middleCols(4, 6)).transposed(), matrix_ref(A.middleCols(10, 9))));
    CHECK(product(b.ref().transposed(), a.ref().transposed()) == product(matrix_ref(B).transposed(), matrix_ref(A).transposed()));
    // and they are rounded: not the float32 product
    const MatF exact = A * B;
    CHECK((product(a.ref(), b.ref()) - exact).cwiseAbs().maxCoeff() > 1e-4f);
}

TEST_CASE("the attention's products in bf16: blocks of larger matrices, transposes, scale and accumulation", "[model]") {
    if (!bf16_matmul_available()) { WARN("built without oneDNN: no bf16 products to test"); return; }
    // As attention_block_backward uses them: operands are column blocks of row-major (T × H·d_h) matrices
    // (row stride ≠ their width), some transposed, and C is a block of a bigger matrix. Each bf16 result must
    // stay within the bf16 bound of the exact product and really be rounded (beyond float32's bound).
    std::mt19937_64 rng(11);
    const std::int64_t T = 48, dh = 16, wide = 3 * dh;
    const MatF Q = random_matrix(rng, T, wide, 0), K = random_matrix(rng, T, wide, 0), G = random_matrix(rng, T, T, 0);
    const auto q = Q.middleCols(dh, dh), k = K.middleCols(2 * dh, dh);  // (T × d_h) blocks, row stride 3·d_h
    auto check = [](const MatF& got, const MatD& exact, const MatD& S, std::int64_t inner, double alpha) {
        bool beyond = false;
        for (Eigen::Index i = 0; i < got.rows(); ++i)
            for (Eigen::Index j = 0; j < got.cols(); ++j) {
                const double d = std::abs(double(got(i, j)) - exact(i, j));
                CHECK(d <= (bound_factor(inner) + std::ldexp(1.0, -23)) * alpha * S(i, j));
                beyond = beyond || d > double(inner + 2) * std::ldexp(1.0, -24) * alpha * S(i, j);
            }
        CHECK(beyond);
    };
    // scores = α q kᵀ into a block of a wider matrix
    MatF scores = MatF::Zero(T, T + 5);
    attention_product(scores.block(0, 2, T, T), q, k.transpose(), false, true, 0.25f);
    const MatD qd = MatF(q).cast<double>(), kd = MatF(k).cast<double>();
    check(scores.block(0, 2, T, T), 0.25 * qd * kd.transpose(), 0.25 * qd.cwiseAbs() * kd.cwiseAbs().transpose(), dh, 1.0);
    CHECK(scores.leftCols(2).isZero());  // nothing written outside the block
    // dk += Gᵀ q (an accumulation into a column block)
    MatF dk = random_matrix(rng, T, wide, 0);
    const MatF dk0 = dk;
    attention_product(dk.middleCols(dh, dh), G.transpose(), q, true, true);
    const MatD Gd = G.cast<double>();
    const MatD exact = dk0.middleCols(dh, dh).cast<double>() + Gd.transpose() * qd;
    const MatD S = Gd.cwiseAbs().transpose() * qd.cwiseAbs() + dk0.middleCols(dh, dh).cast<double>().cwiseAbs();
    check(dk.middleCols(dh, dh), exact, S, T, 1.0);
    CHECK(dk.leftCols(dh) == dk0.leftCols(dh));
    // In float32 (bf16 = false) it is Eigen's product.
    MatF f32(T, T);
    attention_product(f32, q, k.transpose(), false, false, 0.25f);
    CHECK(f32 == MatF((q * k.transpose()) * 0.25f));
}

TEST_CASE("softmax_forward: masked keys anywhere in a row get 0; a fully masked row with a slot gives zeros", "[model][attention]") {
    const float ninf = -std::numeric_limits<float>::infinity();
    MatF s(3, 5), p(3, 5);
    s << 1, ninf, 2, 0.5f, ninf,        // a masked key inside the live range, and one after it
        ninf, ninf, 3, ninf, ninf,      // one live key
        ninf, ninf, ninf, ninf, ninf;   // nothing live
    const float slot[3] = {0, 0, 0};
    softmax_forward<float>(p, s, slot);
    const double z0 = std::exp(1.0) + std::exp(2.0) + std::exp(0.5) + 1.0;  // + e^{slot = 0}
    CHECK(p(0, 1) == 0.0f);
    CHECK(p(0, 4) == 0.0f);
    CHECK(p(0, 0) == Approx(std::exp(1.0) / z0).epsilon(1e-6));
    CHECK(p(0, 2) == Approx(std::exp(2.0) / z0).epsilon(1e-6));
    CHECK(p(1, 2) == Approx(std::exp(3.0) / (std::exp(3.0) + 1.0)).epsilon(1e-6));
    CHECK(p.row(1).sum() == Approx(std::exp(3.0) / (std::exp(3.0) + 1.0)).epsilon(1e-6));
    CHECK(p.row(2).isZero());
    softmax_forward<float>(p, s, nullptr);  // plain softmax: rows sum to 1
    CHECK(p.row(0).sum() == Approx(1.0).epsilon(1e-6));
    CHECK(p(1, 2) == 1.0f);
}
