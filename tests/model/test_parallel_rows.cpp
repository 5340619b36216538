// parallel_rows (layers/parallel_rows.hpp): the row-wise loops of the forward split across threads give
// bit for bit what one thread gives, and what the whole-matrix expressions gave before the split (Eigen's
// packet exp differs from its scalar exp by an ulp, so a range boundary inside a packet would show).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>
#include <vector>
#if defined(_OPENMP)
#include <omp.h>
#endif

#include <sinkscope/layers/activations.hpp>
#include <sinkscope/layers/bf16_matmul.hpp>
#include <sinkscope/layers/norms.hpp>
#include <sinkscope/layers/parallel_rows.hpp>
#include <sinkscope/layers/rope.hpp>

using namespace sinkscope;
using namespace sinkscope::model;

namespace parallel_rows_test {  // named: the test sources of a module share one unity unit

Mat<float> random_matrix(std::int64_t rows, std::int64_t cols, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    Mat<float> m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
    return m;
}

// Values x whose SiLU differs between Eigen's packet exp and its scalar exp (std::exp), so that an entry
// computed on the other path than the serial loop's changes its bits: a matrix of them makes a misplaced
// range boundary visible. Empty if this build's two paths agree everywhere tried.
std::vector<float> silu_sensitive_values() {
    const Mat<float> x = random_matrix(1, 1 << 16, 11);  // 2^16 entries: whole packets, no scalar tail
    const Eigen::ArrayXf packet = (x.array() / (1.0f + (-x.array()).exp())).transpose();
    std::vector<float> out;
    for (Eigen::Index i = 0; i < x.size(); ++i) {
        const float v = x(0, i), scalar = v / (1.0f + std::exp(-v));
        if (std::memcmp(&scalar, &packet(i), sizeof(float)) != 0) out.push_back(v);
    }
    return out;
}

bool same_bits(const Mat<float>& a, const Mat<float>& b) {
    return a.rows() == b.rows() && a.cols() == b.cols() &&
           std::memcmp(a.data(), b.data(), sizeof(float) * std::size_t(a.size())) == 0;
}

// Runs f() with `threads` OpenMP threads (no-op without OpenMP).
template <class F>
auto with_threads(int threads, F&& f) {
#if defined(_OPENMP)
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    auto r = f();
    omp_set_num_threads(before);
    return r;
#else
    (void)threads;
    return f();
#endif
}

}  // namespace parallel_rows_test

using namespace parallel_rows_test;

TEST_CASE("parallel_rows covers every row once, in ranges that start on 64-byte boundaries", "[model]") {
#if !defined(_OPENMP)
    WARN("built without OpenMP: parallel_rows runs serially");
    return;
#else
    for (const std::int64_t cols : {1, 3, 37, 48, 576, 1536}) {
        for (const std::int64_t rows : {2, 5, 64, 511, 4099}) {
            CAPTURE(rows, cols);
            const std::int64_t bytes = cols * 4;
            std::vector<std::pair<std::int64_t, std::int64_t>> ranges(8, {-1, -1});
            with_threads(3, [&] {
                parallel_rows(rows, bytes, [&](std::int64_t b, std::int64_t e) { ranges[std::size_t(omp_get_thread_num())] = {b, e}; });
                return 0;
            });
            std::vector<int> seen(std::size_t(rows), 0);
            int used = 0;
            for (const auto& [b, e] : ranges) {
                if (b < 0) continue;
                ++used;
                CHECK((b * bytes) % kParallelRowsAlign == 0);
                for (std::int64_t r = b; r < e; ++r) ++seen[std::size_t(r)];
            }
            for (int s : seen) REQUIRE(s == 1);
            if (rows * bytes >= kParallelRowsMinBytes && rows >= 3 * (kParallelRowsAlign / 4)) CHECK(used > 1);
            if (rows * bytes < kParallelRowsMinBytes) CHECK(used == 1);
        }
    }
#endif
}

TEST_CASE("row-wise layers give the same bits on 1 and 3 threads, and the whole-matrix expressions' bits", "[model]") {
    // Odd widths put Eigen's scalar tail in a different place in every row; 3 threads on these machines'
    // 2 cores still split the rows three ways.
    for (const std::int64_t cols : {37, 48, 576, 1536}) {
        const std::int64_t rows = 3001;  // every width here is over kParallelRowsMinBytes
        CAPTURE(cols);
        const Mat<float> x = random_matrix(rows, cols, unsigned(cols));
        auto both = [&](auto f) {
            const Mat<float> one = with_threads(1, f), three = with_threads(3, f);
            CHECK(same_bits(one, three));
            return one;
        };
        // SiLU, also against the whole-matrix expression it replaced, on values where the packet and the
        // scalar exp disagree (when this build has any)
        static const std::vector<float> sensitive = silu_sensitive_values();
        Mat<float> xs = x;
        if (!sensitive.empty())
            for (Eigen::Index i = 0; i < xs.size(); ++i) xs.data()[i] = sensitive[std::size_t(i) % sensitive.size()];
        else WARN("Eigen's packet and scalar exp agreed on 65536 values: the SiLU check is weaker");
        const Mat<float> y = both([&] { Mat<float> out; activation_forward(out, xs, Activation::silu); return out; });
        const Mat<float> whole = (xs.array() / (1.0f + (-xs.array()).exp())).matrix();
        CHECK(same_bits(y, whole));
        both([&] { Mat<float> out; activation_forward(out, x, Activation::gelu_tanh); return out; });
        const Vec<float> g = random_matrix(cols, 1, 7).col(0), b = random_matrix(cols, 1, 8).col(0);
        both([&] { Mat<float> out; rmsnorm_forward(out, x, g, 1e-6); return out; });
        both([&] { Mat<float> out; layernorm_forward(out, x, g, b, 1e-5); return out; });
        if (cols % 8 == 0) {
            both([&] { Mat<float> out = x; rope_forward(out, cols / 8, 8, 10000.0, RopeLayout::half_split); return out; });
            both([&] { Mat<float> out = x; rope_forward(out, cols / 8, 8, 10000.0, RopeLayout::interleaved); return out; });
        }
        for (const bool transposed : {false, true}) {  // bf16 packing, by rows and by columns
            both([&] {
                detail::Bf16Bits bits;
                bool t = false;
                const MatrixRef ref = transposed ? matrix_ref(x).transposed() : matrix_ref(x);
                detail::pack_bf16(bits, ref, t);
                Mat<float> as_float(1, Eigen::Index(bits.size()));
                for (std::size_t i = 0; i < bits.size(); ++i) as_float(0, Eigen::Index(i)) = float(bits[i]);
                return as_float;
            });
        }
    }
}
