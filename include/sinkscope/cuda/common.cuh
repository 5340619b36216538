// sinkscope::cuda — error checking, device discovery, device buffers and the execution context.
//
// Every CUDA runtime and cuBLAS call of the backend goes through SINKSCOPE_CUDA_CHECK /
// SINKSCOPE_CUBLAS_CHECK, which throw sinkscope::Error naming the call, the error and file:line, e.g.
//   sinkscope: cudaMalloc(&p, bytes) failed: cudaErrorMemoryAllocation (out of memory) at forward.cuh:212
// Kernel launches are checked with SINKSCOPE_CUDA_CHECK_LAUNCH("kernel name") right after the launch
// (launch-configuration errors; faults inside a kernel surface at the next synchronising call).
//
// Context owns one stream and one cuBLAS handle on one device; every kernel of the backend runs on
// that stream, so work is ordered without explicit synchronisation. Host⇄device copies are
// stream-ordered and the download functions synchronise before returning.
#pragma once

#if !defined(__CUDACC__)
#error "sinkscope/cuda/*.cuh hold CUDA kernels: include them only from .cu sources compiled by nvcc (CMake: enable_language(CUDA), SINKSCOPE_CUDA=ON). CPU code uses <sinkscope/model.hpp>."
#endif

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "sinkscope/core/error.hpp"

namespace sinkscope::cuda {

namespace detail {

[[noreturn]] inline void fail(const std::string& what, const char* call, const char* file, int line) {
    std::string f = file;
    const auto slash = f.find_last_of('/');
    if (slash != std::string::npos) f = f.substr(slash + 1);
    throw Error(std::string(call) + " failed: " + what + " at " + f + ":" + std::to_string(line));
}

inline void check_cuda(cudaError_t e, const char* call, const char* file, int line) {
    if (e == cudaSuccess) return;
    (void)cudaGetLastError();  // clear a non-sticky error so that the next call does not report it again
    fail(std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")", call, file, line);
}

inline const char* cublas_status_name(cublasStatus_t s) {
    switch (s) {
        case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
        case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
        case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
        case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
        case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
        case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
        case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
        case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
        case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
        case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
        default: return "unknown cuBLAS status";
    }
}

inline void check_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
    if (s != CUBLAS_STATUS_SUCCESS) fail(std::string(cublas_status_name(s)) + " (" + std::to_string(int(s)) + ")", call, file, line);
}

}  // namespace detail

#define SINKSCOPE_CUDA_CHECK(call) ::sinkscope::cuda::detail::check_cuda((call), #call, __FILE__, __LINE__)
#define SINKSCOPE_CUBLAS_CHECK(call) ::sinkscope::cuda::detail::check_cublas((call), #call, __FILE__, __LINE__)
#define SINKSCOPE_CUDA_CHECK_LAUNCH(kernel) \
    ::sinkscope::cuda::detail::check_cuda(cudaGetLastError(), "launch of " kernel, __FILE__, __LINE__)

// ---- device discovery ----

struct DeviceStatus {
    int count = 0;       // number of usable CUDA devices (0 when none or when the runtime fails)
    std::string reason;  // why there is none: "cudaGetDeviceCount: cudaErrorNoDevice (...)"; "" when count > 0
};

// Never throws: a machine without a driver or a GPU is a normal answer here (count 0, with the reason).
inline DeviceStatus device_status() noexcept {
    DeviceStatus st;
    try {
        int n = 0;
        const cudaError_t e = cudaGetDeviceCount(&n);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            st.reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
            return st;
        }
        st.count = n;
        if (n == 0) st.reason = "cudaGetDeviceCount reported 0 devices";
    } catch (...) {
        st.count = 0;
    }
    return st;
}
inline bool device_available() noexcept { return device_status().count > 0; }

// ---- launch geometry (host logic, testable without a device) ----

namespace detail {
// Number of blocks of `threads` covering n items, capped for grid-stride loops (the kernels loop).
inline unsigned blocks_for(std::int64_t n, int threads, std::int64_t cap = 65535LL * 32) {
    require(n >= 0, "cuda: negative element count");
    require(threads > 0, "cuda: zero threads per block");
    std::int64_t b = (n + threads - 1) / threads;
    if (b < 1) b = 1;
    if (b > cap) b = cap;
    return static_cast<unsigned>(b);
}
// Round up to a multiple of 32 (a warp).
inline int round_up_warp(std::int64_t n) { return static_cast<int>(((n + 31) / 32) * 32); }
// Threads of a one-block-per-row kernel over rows of d values: d rounded up to a warp, in [32, 256].
inline int row_threads(std::int64_t d) {
    const std::int64_t t = ((d + 31) / 32) * 32;
    return int(t < 32 ? 32 : (t > 256 ? 256 : t));
}
// Rows are blocks of a one-dimensional grid.
inline void check_rows(std::int64_t rows) {
    require(rows >= 0 && rows <= 2147483647LL, "cuda: " + std::to_string(rows) + " rows exceed one grid dimension");
}
// A dimension that cuBLAS takes as int.
inline int as_int(std::int64_t v, const char* what) {
    require(v >= 0 && v <= std::numeric_limits<int>::max(),
            std::string("cuda: ") + what + " = " + std::to_string(v) + " does not fit the int that cuBLAS takes");
    return static_cast<int>(v);
}
}  // namespace detail

// ---- device memory ----

// An owning, move-only device array of T (cudaMalloc / cudaFree). resize() keeps the allocation when it
// is large enough (contents are then undefined); size() is the current logical size.
template <class T>
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::size_t n) { resize(n); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept { if (this != &o) { release(); swap(o); } return *this; }
    ~DeviceBuffer() { release(); }

    void resize(std::size_t n) {
        if (n > capacity_) {
            release();
            void* p = nullptr;
            SINKSCOPE_CUDA_CHECK(cudaMalloc(&p, n * sizeof(T)));
            ptr_ = static_cast<T*>(p);
            capacity_ = n;
        }
        size_ = n;
    }
    void release() noexcept {
        if (ptr_) (void)cudaFree(ptr_);
        ptr_ = nullptr;
        size_ = capacity_ = 0;
    }
    void swap(DeviceBuffer& o) noexcept {
        std::swap(ptr_, o.ptr_);
        std::swap(size_, o.size_);
        std::swap(capacity_, o.capacity_);
    }

    T* data() noexcept { return ptr_; }
    const T* data() const noexcept { return ptr_; }
    std::size_t size() const noexcept { return size_; }
    std::size_t bytes() const noexcept { return size_ * sizeof(T); }
    bool empty() const noexcept { return size_ == 0; }

    // Resizes to n and copies n values from the host (stream-ordered; the host array must outlive the
    // copy: this synchronises the stream before returning, so any host memory is fine).
    void upload(const T* host, std::size_t n, cudaStream_t s = nullptr) {
        resize(n);
        if (n == 0) return;
        SINKSCOPE_CUDA_CHECK(cudaMemcpyAsync(ptr_, host, n * sizeof(T), cudaMemcpyHostToDevice, s));
        SINKSCOPE_CUDA_CHECK(cudaStreamSynchronize(s));
    }
    void upload(const std::vector<T>& host, cudaStream_t s = nullptr) { upload(host.data(), host.size(), s); }
    // Copies the first n values to the host after the work queued on `s`.
    void download(T* host, std::size_t n, cudaStream_t s = nullptr) const {
        require(n <= size_, "DeviceBuffer::download: " + std::to_string(n) + " values asked of a buffer of " + std::to_string(size_));
        if (n == 0) return;
        SINKSCOPE_CUDA_CHECK(cudaMemcpyAsync(host, ptr_, n * sizeof(T), cudaMemcpyDeviceToHost, s));
        SINKSCOPE_CUDA_CHECK(cudaStreamSynchronize(s));
    }
    std::vector<T> to_host(cudaStream_t s = nullptr) const {
        std::vector<T> h(size_);
        download(h.data(), size_, s);
        return h;
    }
    void zero(cudaStream_t s = nullptr) {
        if (size_) SINKSCOPE_CUDA_CHECK(cudaMemsetAsync(ptr_, 0, size_ * sizeof(T), s));
    }

private:
    T* ptr_ = nullptr;
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;
};

// Copies n values device → host / host → device on a stream and waits.
template <class T>
void download(T* host, const T* device, std::size_t n, cudaStream_t s) {
    if (n == 0) return;
    SINKSCOPE_CUDA_CHECK(cudaMemcpyAsync(host, device, n * sizeof(T), cudaMemcpyDeviceToHost, s));
    SINKSCOPE_CUDA_CHECK(cudaStreamSynchronize(s));
}
template <class T>
void upload(T* device, const T* host, std::size_t n, cudaStream_t s) {
    if (n == 0) return;
    SINKSCOPE_CUDA_CHECK(cudaMemcpyAsync(device, host, n * sizeof(T), cudaMemcpyHostToDevice, s));
    SINKSCOPE_CUDA_CHECK(cudaStreamSynchronize(s));
}
template <class T>
void copy_device(T* dst, const T* src, std::size_t n, cudaStream_t s) {
    if (n == 0 || dst == src) return;
    SINKSCOPE_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(T), cudaMemcpyDeviceToDevice, s));
}

// ---- execution context ----

// One device, one stream, one cuBLAS handle. GEMMs run in full fp32 unless tf32 is allowed
// (set_tf32(true): TensorFloat-32 tensor cores, ~10 bits of mantissa in the products — faster, and
// no longer comparable with the CPU at fp32 tolerances; PyTorch's default for matmul is also off).
class Context {
public:
    explicit Context(int device = 0) : device_(device) {
        const DeviceStatus st = device_status();
        require(st.count > 0, "cuda::Context: no CUDA device (" + st.reason + ")");
        require(device >= 0 && device < st.count,
                "cuda::Context: device " + std::to_string(device) + " does not exist (" + std::to_string(st.count) + " found)");
        SINKSCOPE_CUDA_CHECK(cudaSetDevice(device));
        SINKSCOPE_CUDA_CHECK(cudaGetDeviceProperties(&props_, device));
        SINKSCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        try {
            SINKSCOPE_CUBLAS_CHECK(cublasCreate(&blas_));
            SINKSCOPE_CUBLAS_CHECK(cublasSetStream(blas_, stream_));
            SINKSCOPE_CUBLAS_CHECK(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH));
        } catch (...) {
            if (blas_) cublasDestroy(blas_);
            (void)cudaStreamDestroy(stream_);  // cleaning up after the failure being reported
            throw;
        }
    }
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;
    ~Context() {
        if (blas_) (void)cublasDestroy(blas_);
        if (stream_) (void)cudaStreamDestroy(stream_);
    }

    cudaStream_t stream() const noexcept { return stream_; }
    cublasHandle_t blas() const noexcept { return blas_; }
    int device() const noexcept { return device_; }
    const cudaDeviceProp& properties() const noexcept { return props_; }
    std::string device_name() const { return props_.name; }

    void synchronize() const { SINKSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_)); }
    // Makes this context's device current on the calling thread (call before using it from a new thread).
    void activate() const { SINKSCOPE_CUDA_CHECK(cudaSetDevice(device_)); }

    void set_tf32(bool on) {
        tf32_ = on;
        SINKSCOPE_CUBLAS_CHECK(cublasSetMathMode(blas_, on ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    }
    bool tf32() const noexcept { return tf32_; }

private:
    int device_ = 0;
    cudaDeviceProp props_{};
    cudaStream_t stream_ = nullptr;
    cublasHandle_t blas_ = nullptr;
    bool tf32_ = false;
};

// A per-thread default context on device 0, created on first use (throws Error when there is no device).
// Deliberately never destroyed: at process exit the CUDA runtime may already be unloaded when
// thread-local destructors run, and destroying a cuBLAS handle then is undefined.
inline Context& default_context() {
    thread_local Context* ctx = new Context(0);
    return *ctx;
}

// ---- device-side helpers shared by the kernels ----

// Every kernel of these headers is a template (with one unused parameter when it needs none): a
// non-template __global__ function defined in a header would be defined again by every .cu file that
// includes it, and nvcc ignores `inline` on __global__ functions. Templates have the vague linkage that
// header-only code needs.
#define SINKSCOPE_KERNEL template <int SinkscopeHeaderOnly = 0> __global__ void

// Row kernels run one block per row and loop over the row's columns: no 64-bit division per element
// (which costs tens of instructions on a GPU and would make a memory-bound kernel compute-bound).
#define SINKSCOPE_ROW_LOOP(c, d) for (std::int64_t c = threadIdx.x; c < (d); c += blockDim.x)

// A grid-stride loop over i in [0, n) (64-bit indices).
#define SINKSCOPE_GRID_STRIDE(i, n) \
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < (n); i += std::int64_t(gridDim.x) * blockDim.x)

namespace detail {

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ double warp_sum(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Sum over the whole block (blockDim.x a multiple of 32, ≤ 1024); every thread gets the result.
// `scratch` holds 32 values of shared memory; the function synchronises the block.
template <class V>
__device__ __forceinline__ V block_sum(V v, V* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = warp_sum(v);
    __syncthreads();  // scratch may still be read by a previous reduction
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    V r = lane < nw ? scratch[lane] : V(0);
    r = warp_sum(r);
    return r;
}
__device__ __forceinline__ float block_max(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float r = lane < nw ? scratch[lane] : -INFINITY;
    return warp_max(r);
}

}  // namespace detail

}  // namespace sinkscope::cuda
