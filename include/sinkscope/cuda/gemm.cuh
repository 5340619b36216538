// Row-major GEMMs through cuBLAS, and the linear layer y = x Wᵀ + b built on them.
//
// The transpose trick. cuBLAS is column-major; sinkscope stores everything row-major. A row-major
// M×N matrix C with leading dimension ldc occupies memory exactly like the column-major N×M matrix Cᵀ
// with the same leading dimension. So instead of asking cuBLAS for
//     C = op(A) · op(B)                    (row-major, what we want)
// we ask it for the transposed product, which is the same numbers in the same memory:
//     Cᵀ = op(B)ᵀ · op(A)ᵀ                 (column-major, what cuBLAS computes)
// In column-major terms the memory of a row-major X is Xᵀ. Hence op(B)ᵀ is "the memory of B, not
// transposed" when op(B) = B, and "the memory of B, transposed" when op(B) = Bᵀ — the cuBLAS flag of
// each operand is the row-major flag itself, A and B swap places, and M and N swap places:
//     cublasGemmEx(opB, opA, N, M, K, B, ldb, A, lda, C, ldc)
// detail::rowmajor_to_cublas() is that mapping, checked on the CPU against a reference column-major
// GEMM (tests/cuda/test_cuda.cu). No data is ever transposed or copied.
//
// The linear layer (PyTorch layout W (out × in)):
//   forward   y (R × out)  = x (R × in) · Wᵀ                gemm(N, T)
//   backward  dx (R × in) += dy (R × out) · W               gemm(N, N)
//             dW (out × in) += dyᵀ · x                      gemm(T, N)
//             db (out) += Σ_r dy[r]                         column_sum kernel
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "sinkscope/cuda/common.cuh"

namespace sinkscope::cuda {

namespace detail {

// The column-major cuBLAS call that computes the row-major C (M×N) = alpha op(A) op(B) + beta C.
struct CublasGemmArgs {
    bool trans_first = false, trans_second = false;  // cuBLAS opA, opB
    int m = 0, n = 0, k = 0;
    bool first_is_b = true;                           // cuBLAS "A" operand is our B (always: the swap)
    int ld_first = 0, ld_second = 0, ldc = 0;
};

// Validates a row-major GEMM and maps it to cuBLAS arguments. Row-major leading dimensions: A is
// (ta ? K×M : M×K) with lda ≥ its column count, likewise B, and C is M×N with ldc ≥ N.
inline CublasGemmArgs rowmajor_to_cublas(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K,
                                         std::int64_t lda, std::int64_t ldb, std::int64_t ldc) {
    require(M > 0 && N > 0 && K > 0, "cuda::gemm: empty product (M=" + std::to_string(M) + ", N=" + std::to_string(N) +
                                         ", K=" + std::to_string(K) + ")");
    const std::int64_t a_cols = ta ? M : K, b_cols = tb ? K : N;
    require(lda >= a_cols, "cuda::gemm: lda " + std::to_string(lda) + " < " + std::to_string(a_cols) + " columns of A");
    require(ldb >= b_cols, "cuda::gemm: ldb " + std::to_string(ldb) + " < " + std::to_string(b_cols) + " columns of B");
    require(ldc >= N, "cuda::gemm: ldc " + std::to_string(ldc) + " < " + std::to_string(N) + " columns of C");
    CublasGemmArgs g;
    g.trans_first = tb;   // op(B)ᵀ on the memory of B
    g.trans_second = ta;  // op(A)ᵀ on the memory of A
    g.m = as_int(N, "N");
    g.n = as_int(M, "M");
    g.k = as_int(K, "K");
    g.ld_first = as_int(ldb, "ldb");
    g.ld_second = as_int(lda, "lda");
    g.ldc = as_int(ldc, "ldc");
    return g;
}

inline cublasComputeType_t compute_type(const Context& ctx) {
    return ctx.tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}
inline cublasOperation_t op(bool t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; }

}  // namespace detail

// Row-major C (M×N, ldc) = alpha · op(A) · op(B) + beta · C, fp32 (see the file comment).
inline void gemm(const Context& ctx, bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
                 const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
                 std::int64_t ldc) {
    const auto g = detail::rowmajor_to_cublas(ta, tb, M, N, K, lda, ldb, ldc);
    SINKSCOPE_CUBLAS_CHECK(cublasGemmEx(ctx.blas(), detail::op(g.trans_first), detail::op(g.trans_second), g.m, g.n,
                                        g.k, &alpha, B, CUDA_R_32F, g.ld_first, A, CUDA_R_32F, g.ld_second, &beta, C,
                                        CUDA_R_32F, g.ldc, detail::compute_type(ctx), CUBLAS_GEMM_DEFAULT));
}

// Batched row-major GEMMs with pointer arrays (device arrays of `batch` pointers each): C[i] = alpha
// op(A[i]) op(B[i]) + beta C[i]. Used for attention, where grouped-query heads share K and V so that
// the operands are not at a constant stride. No two C[i] of one call may overlap.
inline void gemm_batched(const Context& ctx, bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K,
                         float alpha, const float* const* A, std::int64_t lda, const float* const* B, std::int64_t ldb,
                         float beta, float* const* C, std::int64_t ldc, std::int64_t batch) {
    const auto g = detail::rowmajor_to_cublas(ta, tb, M, N, K, lda, ldb, ldc);
    if (batch == 0) return;
    const int nb = detail::as_int(batch, "batch");
    SINKSCOPE_CUBLAS_CHECK(cublasGemmBatchedEx(ctx.blas(), detail::op(g.trans_first), detail::op(g.trans_second), g.m,
                                               g.n, g.k, &alpha, reinterpret_cast<const void* const*>(B), CUDA_R_32F,
                                               g.ld_first, reinterpret_cast<const void* const*>(A), CUDA_R_32F,
                                               g.ld_second, &beta, reinterpret_cast<void* const*>(C), CUDA_R_32F,
                                               g.ldc, nb, detail::compute_type(ctx), CUBLAS_GEMM_DEFAULT));
}

// Host-built pointer arrays for gemm_batched (A, B, C back to back in one device array). The device
// copies are cached by content: the forward and backward passes reuse their buffers, so the same
// arrays recur every layer and every step, and after the first pass no upload (which synchronises the
// stream) happens at all. The cache is dropped when it grows past 1024 arrays.
class BatchPointers {
public:
    void clear() { a_.clear(); b_.clear(); c_.clear(); }
    void add(const float* a, const float* b, float* c) { a_.push_back(a); b_.push_back(b); c_.push_back(c); }
    std::int64_t size() const { return std::int64_t(a_.size()); }
    // Makes the device copy of the current arrays available (uploading it if it is not cached); the
    // returned pointers stay valid until the cache is dropped (only ever inside upload()).
    void upload(cudaStream_t s) {
        std::vector<float*> key;
        key.reserve(3 * a_.size());
        for (auto p : a_) key.push_back(const_cast<float*>(p));
        for (auto p : b_) key.push_back(const_cast<float*>(p));
        for (auto p : c_) key.push_back(p);
        auto it = cache_.find(key);
        if (it == cache_.end()) {
            if (cache_.size() >= 1024) {
                SINKSCOPE_CUDA_CHECK(cudaStreamSynchronize(s));  // no queued GEMM may still read a dropped array
                cache_.clear();
            }
            DeviceBuffer<float*> dev;
            dev.upload(key, s);
            it = cache_.emplace(std::move(key), std::move(dev)).first;
        }
        current_ = it->second.data();
    }
    const float* const* a() const { return const_cast<const float* const*>(current_); }
    const float* const* b() const { return const_cast<const float* const*>(current_ + a_.size()); }
    float* const* c() const { return current_ + 2 * a_.size(); }

private:
    std::vector<const float*> a_, b_;
    std::vector<float*> c_;
    std::map<std::vector<float*>, DeviceBuffer<float*>> cache_;
    float** current_ = nullptr;
};

namespace detail {

// y[r, c] += b[c]
SINKSCOPE_KERNEL add_bias_kernel(float* __restrict__ y, const float* __restrict__ b, std::int64_t rows, std::int64_t cols) {
    const std::int64_t n = rows * cols;
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x)
        y[i] += b[i % cols];
}

// out[c] (+)= Σ_r f(r, c), blocks of 32 columns × 8 row lanes, each block a slice of the rows; partial
// sums are added with atomicAdd (so `out` must be zeroed or hold the value to accumulate onto).
template <class F>
__global__ void column_reduce_kernel(float* __restrict__ out, std::int64_t rows, std::int64_t cols, F f) {
    __shared__ float part[8][33];
    const std::int64_t c = blockIdx.x * 32LL + threadIdx.x;
    float acc = 0.f;
    if (c < cols)
        for (std::int64_t r = blockIdx.y * 8LL + threadIdx.y; r < rows; r += 8LL * gridDim.y) acc += f(r, c);
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        float s = 0.f;
        for (int k = 0; k < 8; ++k) s += part[k][threadIdx.x];
        atomicAdd(out + c, s);
    }
}

struct ColumnOf {
    const float* a;
    std::int64_t cols;
    __device__ float operator()(std::int64_t r, std::int64_t c) const { return a[r * cols + c]; }
};

}  // namespace detail

// out[c] += Σ_r f(r, c) over a (rows × cols) domain.
template <class F>
void column_reduce(const Context& ctx, float* out, std::int64_t rows, std::int64_t cols, F f) {
    if (rows <= 0 || cols <= 0) return;
    const unsigned gx = unsigned((cols + 31) / 32);
    std::int64_t gy = (rows + 8 * 32 - 1) / (8 * 32);  // ≥ 32 rows per row lane
    if (gy > 1024) gy = 1024;
    detail::column_reduce_kernel<<<dim3(gx, unsigned(gy)), dim3(32, 8), 0, ctx.stream()>>>(out, rows, cols, f);
    SINKSCOPE_CUDA_CHECK_LAUNCH("column_reduce_kernel");
}

// db (cols) += Σ_r dy[r, :]   (the bias gradient)
inline void column_sum(const Context& ctx, float* db, const float* dy, std::int64_t rows, std::int64_t cols) {
    column_reduce(ctx, db, rows, cols, detail::ColumnOf{dy, cols});
}

inline void add_bias(const Context& ctx, float* y, const float* b, std::int64_t rows, std::int64_t cols) {
    if (!b || rows * cols == 0) return;
    detail::add_bias_kernel<<<detail::blocks_for(rows * cols, 256), 256, 0, ctx.stream()>>>(y, b, rows, cols);
    SINKSCOPE_CUDA_CHECK_LAUNCH("add_bias_kernel");
}

// y (R × out) = x (R × in) Wᵀ + b.   W (out × in) row-major; b (out) or null.
inline void linear_forward(const Context& ctx, float* y, const float* x, const float* W, const float* b, std::int64_t rows,
                           std::int64_t in, std::int64_t out) {
    if (rows == 0) return;
    gemm(ctx, false, true, rows, out, in, 1.f, x, in, W, in, 0.f, y, out);
    add_bias(ctx, y, b, rows, out);
}

// dx (R × in) += dy W;  dW (out × in) += dyᵀ x;  db (out) += Σ_r dy.   dx and db may be null.
inline void linear_backward(const Context& ctx, float* dx, float* dW, float* db, const float* dy, const float* x,
                            const float* W, std::int64_t rows, std::int64_t in, std::int64_t out) {
    if (rows == 0) return;
    gemm(ctx, true, false, out, in, rows, 1.f, dy, out, x, in, 1.f, dW, in);
    if (db) column_sum(ctx, db, dy, rows, out);
    if (dx) gemm(ctx, false, false, rows, in, out, 1.f, dy, out, W, in, 1.f, dx, in);
}

}  // namespace sinkscope::cuda
