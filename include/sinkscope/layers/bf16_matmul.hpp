// Mixed-precision matrix products: bf16 inputs, float32 accumulation and output (oneDNN).
//
//   C  = op(A) · op(B)          (accumulate = false)
//   C += op(A) · op(B)          (accumulate = true)
// with every entry of A and B rounded to bfloat16 (round to nearest even: 8 significant bits, unit
// roundoff 2⁻⁸) and the products summed in float32. This is PyTorch's CPU autocast for a linear layer,
// except that the output stays float32 here (autocast rounds it to bf16 as well).
//
// Error bound (tests/model/test_bf16_matmul.cpp checks it on random and adversarial inputs): with
// ã = a(1 + δ), |δ| ≤ 2⁻⁸, each product ã b̃ differs from a b by at most (2·2⁻⁸ + 2⁻¹⁶)|a||b|, and a float32
// sum of K terms adds at most K·2⁻²⁴ Σ|ã b̃|, so
//   |C̃ᵢⱼ − Cᵢⱼ| ≤ (2⁻⁷ + 2⁻¹⁶ + K·2⁻²⁴(1 + 2⁻⁸)²) · Σₖ |Aᵢₖ||Bₖⱼ|.
//
// Why oneDNN (Debian's libdnnl-dev) and not Eigen: Eigen's bfloat16 products convert each entry back to
// float and run at float speed; oneDNN dispatches at run time to the CPU's bf16 instructions — AMX tiles
// (Sapphire Rapids; oneDNN asks the kernel for the AMX permission itself) or AVX512-BF16 dot products
// (Zen 4) — and falls back to float arithmetic elsewhere. Measured on this project's 2-core Xeon (AMX),
// one thread, 512–4096 rows: oneDNN bf16 570–1000 GFLOP/s against Eigen float32 125–145 GFLOP/s
// (bench/run_train_bench.sh measures it again beside the training benchmark).
//
// oneDNN is optional: without it (SINKSCOPE_HAVE_ONEDNN undefined) bf16_matmul_available() is false and
// a bf16 product throws an Error saying how to get it. The CMake target defines the macro and links
// libdnnl when it finds oneDNN's header and library (SINKSCOPE_ONEDNN_INCLUDE, SINKSCOPE_ONEDNN_LIBRARY);
// a project that includes the headers does the same. Debian bookworm's oneDNN is 2.6; the 3.x API (one
// difference here: the matmul's primitive descriptor) builds too, e.g. against PyPI's onednn-cpu-gomp 3.2
// (bench/RESULTS.md, 2026-12-03).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/layers/parallel_rows.hpp"

#if defined(__AVX512BF16__) && defined(__AVX512F__)
#include <immintrin.h>
#endif
#ifdef SINKSCOPE_HAVE_ONEDNN
#include <tuple>
#include <unordered_map>
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace sinkscope::model {

// The arithmetic of the float32 products of the linear layers on the calling thread (layers/linear.hpp):
// float32, or bf16 inputs with float32 accumulation. Thread-local, like PyTorch's autocast: set it with
// a ScopedMatmulPrecision in each thread that should compute in bf16 (the Trainer does so in its
// workers); products in double are never affected (gradient checks stay exact).
//
// Weight epochs: a product whose right operand is a weight matrix (linear_forward's Wᵀ, the backward's W)
// reuses that matrix's bf16 copy made earlier on this thread in the same epoch, instead of converting it
// again for every sequence (with AMX the conversion costs about as much as the product itself at a few
// hundred rows). Reuse is opt-in: a ScopedMatmulPrecision given an epoch (new_matmul_epoch()) keeps a bf16
// copy of each weight it multiplies, in thread-local memory (half the float32 weights), until the thread
// enters another epoch; the weights must not change while one epoch lasts. The Trainer names one epoch
// per step (weights change only between steps). Epoch 0, the default, keeps no copies.
//
// Attention: the attention's own products (q·kᵀ, p·v and their gradients, layers/attention.hpp) follow
// the setting only when `attention` is set too, as PyTorch's autocast does for training (the Trainer
// sets it). Inference with bf16 weights (ForwardPrecision) leaves them in float32: a bf16 score
// s̃ = q̃·k̃ is off by up to about 2⁻⁷·Σ|q_i k_i|, which moves a softmax weight by a factor e^{±δs};
// with the O(10–100) logits of a sink head that would change the attention pattern being measured.
enum class MatmulPrecision { float32, bf16 };

struct MatmulSetting {
    MatmulPrecision precision = MatmulPrecision::float32;
    std::uint64_t epoch = 0;  // 0: no reuse of bf16 weight copies
    bool attention = false;   // the attention's q·kᵀ and p·v (and gradients) in `precision` too
};
inline MatmulSetting& matmul_setting_slot() {
    thread_local MatmulSetting s;
    return s;
}
inline MatmulPrecision matmul_precision() { return matmul_setting_slot().precision; }
// A number no epoch has had in this process.
inline std::uint64_t new_matmul_epoch() {
    static std::atomic<std::uint64_t> next{1};
    return next.fetch_add(1);
}

class ScopedMatmulPrecision {
public:
    explicit ScopedMatmulPrecision(MatmulPrecision p, std::uint64_t epoch = 0, bool attention = false)
        : saved_(matmul_setting_slot()) {
        matmul_setting_slot() = {p, epoch, attention};
    }
    ~ScopedMatmulPrecision() { matmul_setting_slot() = saved_; }
    ScopedMatmulPrecision(const ScopedMatmulPrecision&) = delete;
    ScopedMatmulPrecision& operator=(const ScopedMatmulPrecision&) = delete;

private:
    MatmulSetting saved_;
};

inline const char* to_string(MatmulPrecision p) { return p == MatmulPrecision::bf16 ? "bf16" : "float32"; }
// The inverse of to_string; `what` names the setting in the error for any other word.
inline MatmulPrecision matmul_precision_from_string(const std::string& s, const std::string& what = "precision") {
    if (s == "bf16") return MatmulPrecision::bf16;
    if (s == "float32") return MatmulPrecision::float32;
    throw Error(what + " must be float32 or bf16, got '" + s + "'");
}

// float → bfloat16 bits, round to nearest even (NaN stays a quiet NaN).
inline std::uint16_t to_bf16_bits(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return std::uint16_t(u >> 16);
}
inline float from_bf16_bits(std::uint16_t b) {
    const std::uint32_t u = std::uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

inline bool bf16_matmul_available() {
#ifdef SINKSCOPE_HAVE_ONEDNN
    return true;
#else
    return false;
#endif
}

// A strided float matrix: entry (i, j) at data[i·row_stride + j·col_stride]. A transpose swaps the strides.
// With `bits` set instead, the entries are bfloat16 bits at the same offsets in bits[] (an operand already
// rounded to bf16, such as a Bf16Matrix); bf16 products read them as they are, without converting.
struct MatrixRef {
    const float* data;
    std::int64_t rows, cols, row_stride, col_stride;
    const std::uint16_t* bits = nullptr;
    MatrixRef transposed() const { return {data, cols, rows, col_stride, row_stride, bits}; }
};
template <class M>
MatrixRef matrix_ref(const M& m) {
    return {m.data(), std::int64_t(m.rows()), std::int64_t(m.cols()), std::int64_t(m.rowStride()), std::int64_t(m.colStride())};
}

namespace detail {

// std::allocator whose resize leaves new elements uninitialised: a conversion buffer is overwritten right
// after it grows, and value-initialising it (a memset of memory about to be written) took about 1 % of a
// bf16 training step.
template <class T>
struct DefaultInitAllocator : std::allocator<T> {
    template <class U> struct rebind { using other = DefaultInitAllocator<U>; };
    using std::allocator<T>::allocator;
    template <class U> void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) { ::new (static_cast<void*>(p)) U; }
    template <class U, class... A> void construct(U* p, A&&... a) { ::new (static_cast<void*>(p)) U(std::forward<A>(a)...); }
};
// bf16 bits of a converted operand.
using Bf16Bits = std::vector<std::uint16_t, DefaultInitAllocator<std::uint16_t>>;

// n floats → bf16 bits (round to nearest even). With AVX512-BF16, 16 at a time: vcvtneps2bf16 rounds to
// nearest even too and keeps NaNs NaN, but reads subnormal inputs (|x| < 2⁻¹²⁶) as zero; elsewhere it
// gives to_bf16_bits' bits (tests/model/test_bf16_matmul.cpp).
inline void convert_bf16(std::uint16_t* out, const float* in, std::int64_t n) {
    std::int64_t i = 0;
#if defined(__AVX512BF16__) && defined(__AVX512F__)
    for (; i + 16 <= n; i += 16) {
        const __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(in + i));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), reinterpret_cast<const __m256i&>(h));
    }
#endif
    for (; i < n; ++i) out[i] = to_bf16_bits(in[i]);
}

// Packs a strided matrix of bf16 bits densely, in the order its rows or its columns are stored
// (`transposed` as pack_bf16's); a dense one is used where it is, without a copy.
inline const std::uint16_t* dense_bits(Bf16Bits& out, const MatrixRef& m, bool& transposed) {
    transposed = m.col_stride != 1 && m.row_stride == 1;
    const std::int64_t outer = transposed ? m.cols : m.rows, inner = transposed ? m.rows : m.cols;
    const std::int64_t outer_stride = transposed ? m.col_stride : m.row_stride, inner_stride = transposed ? 1 : m.col_stride;
    if (inner_stride == 1 && (outer_stride == inner || outer <= 1)) return m.bits;
    out.resize(std::size_t(m.rows * m.cols));
    for (std::int64_t i = 0; i < outer; ++i) {
        const std::uint16_t* r = m.bits + i * outer_stride;
        std::uint16_t* o = out.data() + i * inner;
        if (inner_stride == 1) std::copy(r, r + inner, o);
        else for (std::int64_t j = 0; j < inner; ++j) o[j] = r[j * inner_stride];
    }
    return out.data();
}

// Packs a strided float matrix into bf16 in the order its rows or its columns are stored, so that the
// conversion reads memory in sequence; `transposed` says which: false → row-major (rows × cols),
// true → column-major (the transpose of a row-major matrix, e.g. Wᵀ or doutᵀ).
inline void pack_bf16(Bf16Bits& out, const MatrixRef& m, bool& transposed) {
    out.resize(std::size_t(m.rows * m.cols));
    transposed = m.col_stride != 1 && m.row_stride == 1;
    const std::int64_t outer = transposed ? m.cols : m.rows, inner = transposed ? m.rows : m.cols;
    const std::int64_t outer_stride = transposed ? m.col_stride : m.row_stride, inner_stride = transposed ? 1 : m.col_stride;
    parallel_rows(outer, inner * std::int64_t(sizeof(float)), [&](std::int64_t first, std::int64_t end) {
        for (std::int64_t i = first; i < end; ++i) {
            const float* r = m.data + i * outer_stride;
            std::uint16_t* o = out.data() + i * inner;
            if (inner_stride == 1) convert_bf16(o, r, inner);
            else for (std::int64_t j = 0; j < inner; ++j) o[j] = to_bf16_bits(r[j * inner_stride]);
        }
    });
}

// A bf16 copy of a float matrix kept for several products, in the matrix's storage order: it serves the
// matrix and its transpose (the forward's Wᵀ and the backward's W; dout in dout·W and doutᵀ·x).
// `external`: bits owned elsewhere (an offer taken, offer_bf16_bits), of the dense row-major `source`.
struct KeptBf16 {
    MatrixRef source{};
    bool transposed = false;
    Bf16Bits bits;
    const std::uint16_t* external = nullptr;
};
inline bool same_layout(const MatrixRef& x, const MatrixRef& y) {
    return x.rows == y.rows && x.cols == y.cols && x.row_stride == y.row_stride && x.col_stride == y.col_stride;
}
// The bits of `m` from `copy`, converting m into it unless it already holds m or mᵀ; `transposed` as pack_bf16's.
inline const std::uint16_t* kept_bits(KeptBf16& copy, const MatrixRef& m, bool& transposed) {
    if (copy.external) {
        if (same_layout(copy.source, m) || same_layout(copy.source.transposed(), m)) {
            transposed = !same_layout(copy.source, m);
            return copy.external;
        }
        copy.external = nullptr;  // another shape at the same address: convert it
    }
    if (copy.bits.empty() || !(same_layout(copy.source, m) || same_layout(copy.source.transposed(), m))) {
        copy.source = m;
        pack_bf16(copy.bits, m, copy.transposed);
    }
    transposed = same_layout(copy.source, m) ? copy.transposed : !copy.transposed;
    return copy.bits.data();
}

struct OneDnn {
#ifdef SINKSCOPE_HAVE_ONEDNN
    dnnl::engine engine{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{engine};
    // Primitives by (M, N, K, ldc, accumulate, A transposed, B transposed): creating one costs tens of µs,
    // as much as a small product. Each keeps its three memory objects, which a product points at its
    // operands (set_data_handle) instead of creating them again (a few µs per product otherwise).
    struct Product {
        dnnl::matmul matmul;
        dnnl::memory a, b, c;
        std::unordered_map<int, dnnl::memory> args;  // handles of a, b and c (the same objects), built once
    };
    std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool, bool, bool>, Product> cache;
    // oneDNN has no bf16 matmul for CPUs without bf16 or AVX-512 instructions (oneDNN 2.6 on an AVX2-only
    // host: "could not create a primitive descriptor"); from the first such refusal on, products run
    // through portable_bf16_matmul (the same arithmetic at float32 speed).
    bool portable = false;
#endif
    Bf16Bits a, b;
    // bf16 copies of weight operands in the current epoch, by address (cleared when the epoch changes).
    std::uint64_t epoch = 0;
    std::map<const float*, KeptBf16> weights;
    // Activations that ScopedBf16Reuse declared unchanging for a while, by address; their copies are made
    // on first use.
    std::vector<std::pair<const float*, KeptBf16>> reused;
    std::vector<Bf16Bits> spare;  // buffers of ended reuse scopes, kept for the next ones
    std::vector<float> dense_c;    // the output of a product whose C is strided (run_bf16_matmul)
    // Bits offered to the next bf16 operation (offer_bf16_bits): the rounding of the dense row-major
    // float matrix `offer` (data null: none).
    MatrixRef offer{nullptr, 0, 0, 0, 0};
    const std::uint16_t* offer_bits = nullptr;
};
inline OneDnn& onednn() {
    thread_local OneDnn o;
    return o;
}

// The offered bits if they are m's (m is the offered matrix or its transpose), else null.
inline const std::uint16_t* offered_bits(const OneDnn& o, const MatrixRef& m, bool& transposed) {
    if (!o.offer.data || m.data != o.offer.data || m.bits) return nullptr;
    if (!same_layout(o.offer, m) && !same_layout(o.offer.transposed(), m)) return nullptr;
    transposed = !same_layout(o.offer, m);
    return o.offer_bits;
}
inline void drop_offer(OneDnn& o) { o.offer.data = nullptr; o.offer_bits = nullptr; }

// The bits of operand `m` (bits it already holds, packed densely when strided; bits offered for it; a
// kept copy when m is declared reused; or m packed into `scratch`), and whether they are stored transposed.
inline const std::uint16_t* operand_bits(OneDnn& o, Bf16Bits& scratch, const MatrixRef& m, bool& transposed) {
    if (m.bits) return dense_bits(scratch, m, transposed);
    if (const std::uint16_t* b = offered_bits(o, m, transposed)) return b;
    for (auto it = o.reused.rbegin(); it != o.reused.rend(); ++it)
        if (it->first == m.data) return kept_bits(it->second, m, transposed);
    pack_bf16(scratch, m, transposed);
    return scratch.data();
}

#ifdef SINKSCOPE_HAVE_ONEDNN
// The same product without bf16 instructions: every bf16 operand widened to float32 exactly (a bf16 value
// is a float32 with its low 16 bits zero) and multiplied in float32, so the result obeys the error bound at
// the top of this file. Used where oneDNN offers no bf16 matmul for the CPU.
inline void portable_bf16_matmul(float* C, std::int64_t ldc, const std::uint16_t* a_bits, bool at,
                                 const std::uint16_t* b_bits, bool bt, std::int64_t M, std::int64_t N, std::int64_t K,
                                 bool accumulate) {
    using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    // Operand storage as packed: row-major, or column-major (entry (i, k) at i + k·rows) when transposed.
    auto widen = [](const std::uint16_t* bits, bool transposed, std::int64_t rows, std::int64_t cols) {
        RowMajor out(rows, cols);
        for (std::int64_t i = 0; i < rows; ++i)
            for (std::int64_t j = 0; j < cols; ++j)
                out(i, j) = from_bf16_bits(transposed ? bits[i + j * rows] : bits[i * cols + j]);
        return out;
    };
    const RowMajor a = widen(a_bits, at, M, K), b = widen(b_bits, bt, K, N);
    Eigen::Map<RowMajor, 0, Eigen::OuterStride<>> c(C, M, N, Eigen::OuterStride<>(ldc));
    if (accumulate) c.noalias() += a * b;
    else c.noalias() = a * b;
}

// C (M × N, rows of stride ldc) = / += A · B with both operands already bf16 bits: A (M × K) row-major, or
// column-major when `at`; B (K × N) likewise with `bt`.
inline void run_bf16_matmul(OneDnn& o, float* C, std::int64_t ldc, const std::uint16_t* a_bits, bool at,
                            const std::uint16_t* b_bits, bool bt, std::int64_t M, std::int64_t N, std::int64_t K,
                            bool accumulate) {
    using dnnl::memory;
    if (o.portable) return portable_bf16_matmul(C, ldc, a_bits, at, b_bits, bt, M, N, K, accumulate);
    if (ldc != N) {
        // oneDNN's AMX kernels (brgemm) take only a dense C: a strided one (a block of a wider matrix, such
        // as one head's columns of z or a row block of the pattern) sends the product to the generic
        // gemm:jit, measured 2.5–3× slower at the attention's shapes (128 × 64 × 256, one thread,
        // 2026-12-02). Such a product runs into a dense buffer, which is then added or copied into C.
        o.dense_c.resize(std::size_t(M * N));
        run_bf16_matmul(o, o.dense_c.data(), N, a_bits, at, b_bits, bt, M, N, K, false);
        for (std::int64_t i = 0; i < M; ++i) {
            float* c = C + i * ldc;
            const float* d = o.dense_c.data() + i * N;
            if (accumulate) for (std::int64_t j = 0; j < N; ++j) c[j] += d[j];
            else std::copy(d, d + N, c);
        }
        return;
    }
    // A packed transposed is column-major: entry (i, k) at i + k·M; likewise B.
    const memory::desc ad({M, K}, memory::data_type::bf16, at ? memory::dims{1, M} : memory::dims{K, 1});
    const memory::desc bd({K, N}, memory::data_type::bf16, bt ? memory::dims{1, K} : memory::dims{N, 1});
    const memory::desc cd({M, N}, memory::data_type::f32, memory::dims{ldc, 1});
    const auto key = std::make_tuple(M, N, K, ldc, accumulate, at, bt);
    auto it = o.cache.find(key);
    if (it == o.cache.end()) {
        dnnl::primitive_attr attr;
        if (accumulate) {
            dnnl::post_ops ops;
            ops.append_sum(1.0f);
            attr.set_post_ops(ops);
        }
        dnnl::matmul::primitive_desc pd;
        try {
#if DNNL_VERSION_MAJOR >= 3
            pd = dnnl::matmul::primitive_desc(o.engine, ad, bd, cd, attr);
#else
            // oneDNN 2.x: operation descriptor, then primitive descriptor (the 3.x API folds them together).
            pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad, bd, cd), attr, o.engine);
#endif
        } catch (const dnnl::error& e) {
            if (e.status != dnnl_unimplemented) throw;
            o.portable = true;  // no bf16 matmul for this CPU: the portable product from now on
            return portable_bf16_matmul(C, ldc, a_bits, at, b_bits, bt, M, N, K, accumulate);
        }
        OneDnn::Product p{dnnl::matmul(pd), memory(ad, o.engine, DNNL_MEMORY_NONE), memory(bd, o.engine, DNNL_MEMORY_NONE),
                          memory(cd, o.engine, DNNL_MEMORY_NONE), {}};
        p.args = {{DNNL_ARG_SRC, p.a}, {DNNL_ARG_WEIGHTS, p.b}, {DNNL_ARG_DST, p.c}};
        it = o.cache.emplace(key, std::move(p)).first;
    }
    OneDnn::Product& p = it->second;
    p.a.set_data_handle(const_cast<std::uint16_t*>(a_bits));
    p.b.set_data_handle(const_cast<std::uint16_t*>(b_bits));
    p.c.set_data_handle(C);
    p.matmul.execute(o.stream, p.args);
    o.stream.wait();
}
#endif

[[noreturn]] inline void no_onednn() {
    throw Error("bf16 products need oneDNN: install Debian's libdnnl-dev (scripts/setup.sh does) and rebuild; "
                "this build has only float32 products");
}

// C = 0 (or unchanged when accumulating) for an empty inner dimension.
inline void empty_product(float* C, std::int64_t ldc, std::int64_t M, std::int64_t N, bool accumulate) {
    if (!accumulate)
        for (std::int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, 0.0f);
}

}  // namespace detail

// Declares, on this thread and while it lives, that the float matrix `m` (alive for the whole scope)
// will not change: bf16 products then convert it once and reuse the bits for every product whose operand
// is m or mᵀ, e.g. the normalised input that W_Q, W_K and W_V multiply, or the output gradient that both
// of a linear layer's backward products read. An operand that starts at m's address with another shape
// is converted again (into the kept copy, replacing it), so it still gets its own values. Eigen's float32
// products ignore it. Scopes nest; the innermost declaration of an address wins. Changing m while the
// scope lives gives wrong products. `active` (default: this thread's products run in bf16) false makes the
// scope do nothing, so a float32 forward never touches the thread's oneDNN state (creating it makes a
// oneDNN engine); pass it explicitly on threads that lack the setting (OpenMP workers).
class ScopedBf16Reuse {
public:
    template <class M>
    explicit ScopedBf16Reuse(const M& m, bool active = matmul_precision() == MatmulPrecision::bf16) {
        if constexpr (std::is_same_v<typename M::Scalar, float>) {  // only float products run in bf16
            if (!active) return;
            data_ = m.data();
            detail::OneDnn& o = detail::onednn();
            detail::KeptBf16 copy;
            if (!o.spare.empty()) {  // reuse an ended scope's memory (empty bits: nothing converted yet)
                copy.bits = std::move(o.spare.back());
                copy.bits.clear();
                o.spare.pop_back();
            }
            bool transposed = false;
            if (const std::uint16_t* offered = detail::offered_bits(o, matrix_ref(m), transposed); offered && !transposed) {
                copy.source = matrix_ref(m);
                copy.external = offered;
            }
            detail::drop_offer(o);
            o.reused.push_back({data_, std::move(copy)});
        }
    }
    ~ScopedBf16Reuse() {
        if (!data_) return;
        detail::OneDnn& o = detail::onednn();
        for (auto it = o.reused.rbegin(); it != o.reused.rend(); ++it)
            if (it->first == data_) {
                o.spare.push_back(std::move(it->second.bits));
                o.reused.erase(std::next(it).base());
                break;
            }
    }
    ScopedBf16Reuse(const ScopedBf16Reuse&) = delete;
    ScopedBf16Reuse& operator=(const ScopedBf16Reuse&) = delete;

private:
    const float* data_ = nullptr;
};

// A row-major matrix kept as bf16 bits: the rounded copy of a float matrix that is only ever an operand
// of bf16 products (the training tape keeps such activations this way: half the memory of float, and
// the backward's products read the bits without converting again). Growing it does not free memory.
struct Bf16Matrix {
    detail::Bf16Bits bits;
    std::int64_t rows = 0, cols = 0;
    // The bf16 rounding of x (rows × cols, row-major, contiguous); the same bits a bf16 product makes.
    void assign(const float* x, std::int64_t r, std::int64_t c) {
        rows = r;
        cols = c;
        bits.resize(std::size_t(r * c));
        detail::convert_bf16(bits.data(), x, r * c);
    }
    // The bf16 rounding of x (r × heads·c, row-major, contiguous) stored head-major: head h's (r × c)
    // columns become rows [h·r, h·r + r) of this (heads·r × c) matrix, so that any row block of one head
    // is dense (a product operand without a copy).
    void assign_head_major(const float* x, std::int64_t r, std::int64_t heads, std::int64_t c) {
        rows = heads * r;
        cols = c;
        bits.resize(std::size_t(rows * c));
        for (std::int64_t t = 0; t < r; ++t)
            for (std::int64_t h = 0; h < heads; ++h) detail::convert_bf16(bits.data() + (h * r + t) * c, x + (t * heads + h) * c, c);
    }
    // Sized for rows × cols, entries unset (fill them with row()).
    void resize(std::int64_t r, std::int64_t c) {
        rows = r;
        cols = c;
        bits.resize(std::size_t(r * c));
    }
    std::uint16_t* row(std::int64_t t) { return bits.data() + t * cols; }
    MatrixRef ref() const { return block(0, 0, rows, cols); }
    MatrixRef block(std::int64_t r0, std::int64_t c0, std::int64_t nr, std::int64_t nc) const {
        return {nullptr, nr, nc, cols, 1, bits.data() + r0 * cols + c0};
    }
};

// Offers `b`, the bf16 rounding of the dense row-major float matrix x (b.rows × b.cols at x), to the next
// bf16 operation on this thread (a bf16 product or a ScopedBf16Reuse): if that reads x (or xᵀ), it uses
// these bits instead of rounding x again. That next operation takes or drops the offer, so it lasts
// exactly until then; x and b must not change before it. The training tape offers the bits it has just
// made of an activation to the product that reads the activation next (train/tape.hpp).
inline void offer_bf16_bits(const float* x, const Bf16Matrix& b) {
    detail::OneDnn& o = detail::onednn();
    o.offer = {x, b.rows, b.cols, b.cols, 1};
    o.offer_bits = b.bits.data();
}
// Withdraws an offer that no operation took (a no-op when there is none).
inline void withdraw_bf16_offer() { detail::drop_offer(detail::onednn()); }

// C (M × N, row-major float, contiguous rows of stride ldc ≥ N) = / += A (M × K) · B (K × N), A and B
// rounded to bf16 (see the top of this file). b_is_weight: B is a weight matrix that does not change in
// the thread's current epoch (ScopedMatmulPrecision), so its bf16 copy may be kept and reused.
inline void bf16_matmul(float* C, std::int64_t ldc, const MatrixRef& A, const MatrixRef& B, bool accumulate,
                        bool b_is_weight = false) {
    require(A.cols == B.rows, "bf16_matmul: inner dimensions differ (" + std::to_string(A.cols) + " and " +
                                  std::to_string(B.rows) + ")");
    const std::int64_t M = A.rows, N = B.cols, K = A.cols;
    if (M == 0 || N == 0) return;
#ifdef SINKSCOPE_HAVE_ONEDNN
    detail::OneDnn& o = detail::onednn();
    if (K == 0) return detail::empty_product(C, ldc, M, N, accumulate);
    bool at = false, bt = false;
    const std::uint16_t* a_bits = detail::operand_bits(o, o.a, A, at);
    const std::uint16_t* b_bits = nullptr;
    const std::uint64_t epoch = matmul_setting_slot().epoch;
    if (b_is_weight && epoch != 0 && !B.bits) {
        if (o.epoch != epoch) { o.weights.clear(); o.epoch = epoch; }
        b_bits = detail::kept_bits(o.weights[B.data], B, bt);
    } else {
        b_bits = detail::operand_bits(o, o.b, B, bt);
    }
    detail::run_bf16_matmul(o, C, ldc, a_bits, at, b_bits, bt, M, N, K, accumulate);
    detail::drop_offer(o);
#else
    (void)C; (void)ldc; (void)accumulate; (void)K; (void)b_is_weight;
    detail::no_onednn();
#endif
}

// C (M × N, rows of stride ldc) = / += A (M × K) · Wᵀ for a weight W (N × K) stored row-major as bf16 bits
// (a BF16 tensor read in place, e.g. memory-mapped from a checkpoint): only A is converted. The same
// arithmetic, bit for bit, as bf16_matmul(C, ldc, A, matrix_ref(W_float).transposed(), …) on W's values.
inline void bf16_matmul_weight_bits(float* C, std::int64_t ldc, const MatrixRef& A, const std::uint16_t* w_bits,
                                    std::int64_t N, bool accumulate) {
    const std::int64_t M = A.rows, K = A.cols;
    if (M == 0 || N == 0) return;
#ifdef SINKSCOPE_HAVE_ONEDNN
    detail::OneDnn& o = detail::onednn();
    if (K == 0) return detail::empty_product(C, ldc, M, N, accumulate);
    bool at = false;
    const std::uint16_t* a_bits = detail::operand_bits(o, o.a, A, at);
    // Wᵀ (K × N) is W's row-major storage read column-major: entry (k, n) at n·K + k.
    detail::run_bf16_matmul(o, C, ldc, a_bits, at, w_bits, /*bt=*/true, M, N, K, accumulate);
    detail::drop_offer(o);
#else
    (void)C; (void)ldc; (void)w_bits; (void)accumulate; (void)K;
    detail::no_onednn();
#endif
}

}  // namespace sinkscope::model
