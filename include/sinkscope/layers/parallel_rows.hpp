// parallel_rows: the forward's row-wise loops (activations, norms, RoPE, bf16 packing) split across the
// OpenMP threads, bit for bit what the serial loop computes.
//
// Between two matrix products these loops ran on one thread while the others waited at the next product
// (on 2 threads, SmolLM2 at 512 tokens: the second core idle for about 40 % of a bf16 forward). Each row of
// these loops is computed from its own inputs only, so splitting the rows cannot change a row. One subtlety
// keeps whole-matrix Eigen expressions exact too: Eigen computes a contiguous array in packets from its
// first aligned entry and the last few entries one by one, and its packet exp differs from the scalar one
// by an ulp. parallel_rows therefore starts every range at a 64-byte boundary of the rows
// (kParallelRowsAlign; Eigen's allocations are 64-byte aligned), so that every range but the last is whole
// packets and the split falls where the serial loop's packets fall.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#if defined(_OPENMP)
#include <omp.h>
#endif

namespace sinkscope::model {

// Below this many bytes touched a parallel region (waking the threads, a few µs) costs more than it saves.
inline constexpr std::int64_t kParallelRowsMinBytes = std::int64_t(1) << 17;
// Range starts fall on multiples of this many bytes from the first row (Eigen's largest packet, AVX-512).
inline constexpr std::int64_t kParallelRowsAlign = 64;

// Calls f(begin, end) on consecutive ranges of rows covering [0, rows): one range per OpenMP thread when the
// loop touches at least kParallelRowsMinBytes (rows · bytes_per_row) and no parallel region is running
// (inside one, e.g. a training batch, it runs here), else f(0, rows) on this thread. Every range but the
// first starts at a multiple of kParallelRowsAlign bytes. For loops whose rows are independent: f must
// write rows [begin, end) from their own inputs only, and must not throw.
template <class F>
void parallel_rows(std::int64_t rows, std::int64_t bytes_per_row, F&& f) {
#if defined(_OPENMP)
    if (rows > 1 && bytes_per_row > 0 && rows * bytes_per_row >= kParallelRowsMinBytes && !omp_in_parallel() &&
        omp_get_max_threads() > 1) {
        // Rows per granule: the fewest whose bytes are a whole number of alignment units.
        const std::int64_t granule = kParallelRowsAlign / std::gcd(bytes_per_row, kParallelRowsAlign);
        const std::int64_t granules = (rows + granule - 1) / granule;
#pragma omp parallel
        {
            const std::int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
            const std::int64_t begin = std::min(rows, granules * t / n * granule);
            const std::int64_t end = std::min(rows, granules * (t + 1) / n * granule);
            if (begin < end) f(begin, end);
        }
        return;
    }
#else
    (void)bytes_per_row;  // without OpenMP every loop runs here
#endif
    f(std::int64_t(0), rows);
}

}  // namespace sinkscope::model
