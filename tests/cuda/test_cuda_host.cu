// Host-side checks of the CUDA backend, tagged [cuda][host]: everything that can be verified without a
// GPU. They run in CI (and on this project's GPU-less machines); the GPU comparisons are test_cuda.cu.
//
//   - the device dequantizer's __host__ __device__ decoders, run on the CPU, against io::dequantize
//     (bit for bit, every supported type, random blocks including NaN/inf/subnormal scales) and against
//     the gguf-py values of tests/fixtures/io/dequant (scripts/make_io_fixtures.py) — the peer;
//   - the cuBLAS transpose trick: the column-major call rowmajor_to_cublas() produces, executed by a
//     naive column-major GEMM with BLAS semantics, equals the row-major product computed directly;
//   - the activations shared with the kernels against model::activate / train::activation_derivative;
//   - RoPE: the table's θ recipe and the kernel's rotation, emulated on the host, against
//     model::rope_forward / train::rope_backward;
//   - host logic: loss-mask rows, weight shape checks naming the tensor, the arena layout against
//     model::visit_parameters, launch limits of the fused attention, training coverage, batch
//     splitting, backend resolution, and the behaviour of this machine without a device.
#include <catch2/catch.hpp>

#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <sinkscope/cuda.hpp>
#include <sinkscope/io/dequantize.hpp>
#include <sinkscope/model/layers.hpp>
#include <sinkscope/train/backward.hpp>
#include <sinkscope/train/init.hpp>

#include "cuda/cuda_test_util.hpp"
#include "test_paths.hpp"

using namespace sinkscope;

namespace {

const char* const kSupported[] = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K"};

io::GgmlType type_named(const std::string& name) {
    for (std::uint32_t id = 0; id < 64; ++id)
        if (io::type_name(static_cast<io::GgmlType>(id)) == name) return static_cast<io::GgmlType>(id);
    FAIL("no ggml type " << name);
    return io::GgmlType::F32;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

}  // namespace

TEST_CASE("device dequantizer decoders equal gguf-py bit for bit (on the host)", "[cuda][host][reference]") {
    for (const char* name : kSupported) {
        const io::GgmlType t = type_named(name);
        const auto blocks = xt::load_npy<std::uint8_t>(test::fixture(std::string("io/dequant/") + name + ".blocks.npy"));
        const auto values = xt::load_npy<float>(test::fixture(std::string("io/dequant/") + name + ".values.npy"));
        REQUIRE(blocks.dimension() == 2);
        REQUIRE(std::int64_t(blocks.shape()[1]) == io::block_bytes(t));
        const std::vector<std::uint8_t> src(blocks.begin(), blocks.end());
        const std::vector<float> want(values.begin(), values.end());
        std::vector<float> got(want.size());
        cuda::dequantize_host(t, src.data(), std::int64_t(got.size()), got.data());
        std::size_t bad = 0;
        for (std::size_t i = 0; i < got.size(); ++i) {
            const bool ok = same_bits(got[i], want[i]) || (std::isnan(got[i]) && std::isnan(want[i]));
            if (!ok && bad++ < 3) UNSCOPED_INFO(name << " value " << i << ": " << got[i] << " vs gguf-py " << want[i]);
        }
        INFO(name << ": " << got.size() << " values");
        CHECK(bad == 0);
    }
}

TEST_CASE("device dequantizer decoders equal io::dequantize on random blocks, odd scales included", "[cuda][host][property]") {
    std::mt19937 rng(20261130);
    std::uniform_int_distribution<int> byte(0, 255);
    // fp16 bit patterns that stress the conversion: subnormal, zero, -0, inf, NaN, max
    const std::uint16_t odd[] = {0x0001, 0x03ff, 0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e01, 0x7bff, 0x3c00};
    for (const char* name : kSupported) {
        const io::GgmlType t = type_named(name);
        const std::int64_t be = io::block_elements(t), bb = io::block_bytes(t), nb = 200;
        std::vector<std::uint8_t> src(std::size_t(nb * bb));
        for (auto& b : src) b = std::uint8_t(byte(rng));
        // put odd fp16 values where the scales are, in some blocks (offset 0 for every type but Q6_K: 208)
        const std::int64_t scale_at = t == io::GgmlType::Q6_K ? 208 : 0;
        if (bb >= 2 && t != io::GgmlType::F32)
            for (std::int64_t k = 0; k < nb; k += 7) {
                const std::uint16_t h = odd[std::size_t(k / 7) % (sizeof(odd) / sizeof(odd[0]))];
                src[std::size_t(k * bb + scale_at)] = std::uint8_t(h & 0xff);
                src[std::size_t(k * bb + scale_at + 1)] = std::uint8_t(h >> 8);
            }
        const std::int64_t n = nb * be;
        std::vector<float> want(static_cast<std::size_t>(n)), got(static_cast<std::size_t>(n));
        io::dequantize<float>(t, src.data(), n, want.data());
        cuda::dequantize_host(t, src.data(), n, got.data());
        std::int64_t bad = 0;
        for (std::int64_t i = 0; i < n; ++i)
            if (!(same_bits(got[i], want[i]) || (std::isnan(got[i]) && std::isnan(want[i])))) {
                if (bad++ < 3) UNSCOPED_INFO(name << " value " << i << ": " << got[i] << " vs " << want[i]);
            }
        INFO(name);
        CHECK(bad == 0);
    }
}

TEST_CASE("device dequantizer refuses what io::dequantize refuses", "[cuda][host]") {
    std::vector<std::uint8_t> src(1024);
    std::vector<float> dst(1024);
    CHECK_THROWS_WITH(cuda::dequantize_host(io::GgmlType::Q2_K, src.data(), 256, dst.data()), Catch::Contains("Q2_K"));
    CHECK_THROWS_AS(cuda::dequantize_host(io::GgmlType::Q4_0, src.data(), 33, dst.data()), Error);
    CHECK_THROWS_AS(cuda::dequantize_host(io::GgmlType::F32, src.data(), -4, dst.data()), Error);
    CHECK_THROWS_AS(cuda::dequantize_host(io::GgmlType::F32, nullptr, 4, dst.data()), Error);
    CHECK_NOTHROW(cuda::dequantize_host(io::GgmlType::Q4_K, nullptr, 0, nullptr));
}

namespace {
// BLAS semantics, column-major: C = alpha op(A) op(B) + beta C, A/B/C with leading dimensions.
void colmajor_gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* A, int lda, const float* B, int ldb,
                   float beta, float* C, int ldc) {
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
            double s = 0;
            for (int p = 0; p < k; ++p) {
                const double a = ta ? A[p + i * lda] : A[i + p * lda];
                const double b = tb ? B[j + p * ldb] : B[p + j * ldb];
                s += a * b;
            }
            C[i + j * ldc] = float(alpha * s + beta * C[i + j * ldc]);
        }
}
}  // namespace

TEST_CASE("the cuBLAS transpose trick computes the row-major product", "[cuda][host]") {
    std::mt19937 rng(7);
    std::normal_distribution<float> nd;
    for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb) {
            const std::int64_t M = 5, N = 7, K = 3, pad = 2;
            // row-major A is (ta ? K×M : M×K), B (tb ? N×K : K×N), with padded leading dimensions
            const std::int64_t a_rows = ta ? K : M, a_cols = ta ? M : K, b_rows = tb ? N : K, b_cols = tb ? K : N;
            const std::int64_t lda = a_cols + pad, ldb = b_cols + pad, ldc = N + pad;
            std::vector<float> A(std::size_t(a_rows * lda)), B(std::size_t(b_rows * ldb)), C(std::size_t(M * ldc));
            for (auto& x : A) x = nd(rng);
            for (auto& x : B) x = nd(rng);
            for (auto& x : C) x = nd(rng);
            std::vector<float> want = C;
            const float alpha = 0.5f, beta = 2.0f;
            for (std::int64_t i = 0; i < M; ++i)
                for (std::int64_t j = 0; j < N; ++j) {
                    double s = 0;
                    for (std::int64_t p = 0; p < K; ++p) {
                        const double a = ta ? A[std::size_t(p * lda + i)] : A[std::size_t(i * lda + p)];
                        const double b = tb ? B[std::size_t(j * ldb + p)] : B[std::size_t(p * ldb + j)];
                        s += a * b;
                    }
                    want[std::size_t(i * ldc + j)] = float(alpha * s + beta * C[std::size_t(i * ldc + j)]);
                }
            const auto g = cuda::detail::rowmajor_to_cublas(ta, tb, M, N, K, lda, ldb, ldc);
            colmajor_gemm(g.trans_first, g.trans_second, g.m, g.n, g.k, alpha, B.data(), g.ld_first, A.data(), g.ld_second, beta,
                          C.data(), g.ldc);
            INFO("ta=" << ta << " tb=" << tb);
            CHECK(test::rel_error(C, want) < 1e-6);
        }
}

TEST_CASE("row-major GEMM arguments are validated", "[cuda][host]") {
    using cuda::detail::rowmajor_to_cublas;
    CHECK_THROWS_WITH(rowmajor_to_cublas(false, false, 0, 2, 2, 2, 2, 2), Catch::Contains("empty"));
    CHECK_THROWS_WITH(rowmajor_to_cublas(false, false, 2, 3, 4, 3, 3, 3), Catch::Contains("lda"));
    CHECK_THROWS_WITH(rowmajor_to_cublas(false, true, 2, 3, 4, 4, 3, 3), Catch::Contains("ldb"));
    CHECK_THROWS_WITH(rowmajor_to_cublas(false, false, 2, 3, 4, 4, 3, 2), Catch::Contains("ldc"));
    CHECK_THROWS_WITH(rowmajor_to_cublas(false, false, 1, 1, std::int64_t(1) << 32, std::int64_t(1) << 32, 1, 1),
                      Catch::Contains("int"));
}

TEST_CASE("kernel activations equal the CPU's (host evaluation)", "[cuda][host]") {
    using model::Activation;
    for (Activation a : {Activation::silu, Activation::gelu_tanh, Activation::gelu_erf})
        for (float x = -12.f; x <= 12.f; x += 0.0625f) {
            INFO(model::to_string(a) << " at x = " << x);
            CHECK(cuda::act::apply(int(a), x) == Approx(model::activate<float>(a, x)).epsilon(1e-6).margin(1e-12));
            CHECK(cuda::act::grad(int(a), x) == Approx(train::activation_derivative<float>(a, x)).epsilon(1e-6).margin(1e-12));
        }
    CHECK(cuda::act::sigmoid(0.f) == 0.5f);
}

namespace {
// The device RoPE, emulated: θ = float(p)·inv_freq (float), cos/sin in double, the kernel's rotation.
void emulate_rope(model::Mat<float>& x, std::int64_t nh, std::int64_t dh, double base, model::RopeLayout layout, float sign) {
    const auto inv = cuda::rope_inv_freq(dh, base);
    const std::int64_t half = dh / 2;
    for (std::int64_t r = 0; r < x.rows(); ++r)
        for (std::int64_t h = 0; h < nh; ++h)
            for (std::int64_t i = 0; i < half; ++i) {
                const float theta = float(r) * inv[std::size_t(i)];
                const float c = float(std::cos(double(theta))), s = sign * float(std::sin(double(theta)));
                float* head = x.row(r).data() + h * dh;
                const bool il = layout == model::RopeLayout::interleaved;
                const std::int64_t ia = il ? 2 * i : i, ib = il ? 2 * i + 1 : i + half;
                const float a = head[ia], b = head[ib];
                head[ia] = a * c - b * s;
                head[ib] = a * s + b * c;
            }
}
}  // namespace

TEST_CASE("the device RoPE recipe reproduces model::rope_forward and train::rope_backward", "[cuda][host]") {
    std::mt19937 rng(3);
    std::normal_distribution<float> nd;
    for (auto layout : {model::RopeLayout::half_split, model::RopeLayout::interleaved})
        for (double base : {10000.0, 500000.0}) {
            const std::int64_t T = 300, nh = 3, dh = 64;
            model::Mat<float> x(T, nh * dh);
            for (std::int64_t i = 0; i < x.size(); ++i) x.data()[i] = nd(rng);
            model::Mat<float> cpu = x, dev = x, cpu_b = x, dev_b = x;
            model::rope_forward(cpu, nh, dh, base, layout);
            emulate_rope(dev, nh, dh, base, layout, 1.f);
            train::rope_backward(cpu_b, nh, dh, base, layout);
            emulate_rope(dev_b, nh, dh, base, layout, -1.f);
            INFO(model::to_string(layout) << " base " << base);
            CHECK(test::rel_error(dev.data(), cpu.data(), dev.size()) < 1e-6);
            CHECK(test::rel_error(dev_b.data(), cpu_b.data(), dev_b.size()) < 1e-6);
        }
    CHECK_THROWS_AS(cuda::rope_inv_freq(5, 10000.0), Error);
}

TEST_CASE("the cross-entropy kernel counts the rows train::LossMask counts", "[cuda][host]") {
    const std::int64_t T = 9;
    std::vector<train::LossMask> masks = {{}, {0, -1, true}, {3, 7, false}, {2, -1, true}, {0, 20, false}, {5, 6, true}};
    for (const auto& m : masks) {
        const cuda::detail::MaskArgs a{m.begin, m.end, T, m.skip_first ? 1 : 0};
        for (std::int64_t t = 0; t < T; ++t) {
            INFO("mask [" << m.begin << ", " << m.end << ") skip_first " << m.skip_first << ", t = " << t);
            CHECK(a.counts(t) == m.counts(t, T));
        }
    }
}

TEST_CASE("check_weights accepts every variant's weights and names a wrong tensor", "[cuda][host]") {
    for (const auto& v : test::all_variants()) {
        model::Config c = test::base_config();
        v.apply(c);
        const auto w = train::init_weights<float>(c, 1);
        INFO(v.name);
        CHECK_NOTHROW(cuda::check_weights(c, w));
    }
    const model::Config c = test::base_config();
    auto w = train::init_weights<float>(c, 1);
    w.layers[1].wk.resize(c.kv_dim() + 1, c.d_model);
    CHECK_THROWS_WITH(cuda::check_weights(c, w), Catch::Contains("blocks.1.attn.W_K") && Catch::Contains("[9, 16]"));
    w = train::init_weights<float>(c, 1);
    w.layers[0].w_up.resize(0, 0);
    CHECK_THROWS_WITH(cuda::check_weights(c, w), Catch::Contains("blocks.0.mlp.W_in") && Catch::Contains("missing"));
    w = train::init_weights<float>(c, 1);
    w.layers.pop_back();
    CHECK_THROWS_WITH(cuda::check_weights(c, w), Catch::Contains("layers"));
    w = train::init_weights<float>(c, 1);
    w.final_norm.weight.resize(3);
    CHECK_THROWS_WITH(cuda::check_weights(c, w), Catch::Contains("ln_final.weight"));
}

TEST_CASE("the device arena follows model::visit_parameters", "[cuda][host]") {
    for (const auto& v : test::all_variants()) {
        model::Config c = test::base_config();
        v.apply(c);
        const auto w = train::init_weights<float>(c, 2);
        std::vector<std::string> names;
        std::vector<std::int64_t> sizes;
        model::visit_parameters(w, [&](const std::string& n, const auto& t) { names.push_back(n); sizes.push_back(t.size()); });
        const auto layout = cuda::arena_layout(w);
        INFO(v.name);
        REQUIRE(layout.size() == names.size());
        std::int64_t offset = 0;
        for (std::size_t i = 0; i < names.size(); ++i) {
            CHECK(layout[i].name == names[i]);
            CHECK(layout[i].size() == sizes[i]);
            CHECK(layout[i].offset == offset);
            CHECK(layout[i].is_matrix == (names[i].find("W_") != std::string::npos || names[i] == "tok_embed" ||
                                          names[i] == "pos_embed" || names[i] == "unembed" ||
                                          names[i].find("sink_kv") != std::string::npos));
            offset += sizes[i];
        }
        CHECK(offset == model::parameter_count(w));
    }
}

TEST_CASE("fused attention limits are checked on the host", "[cuda][host]") {
    cuda::AttentionArgs a;
    float dummy = 0;
    a.q = a.k = a.v = &dummy;
    a.z = &dummy;
    a.B = 1; a.n = 100; a.H = 4; a.G = 2; a.dh = 64;
    CHECK_NOTHROW(cuda::check_attention(a, 48 * 1024));
    a.G = 3;
    CHECK_THROWS_WITH(cuda::check_attention(a, 48 * 1024), Catch::Contains("multiple"));
    a.G = 2;
    a.dh = 2048;
    CHECK_THROWS_WITH(cuda::check_attention(a, 1 << 30), Catch::Contains("head_dim"));
    a.dh = 64;
    a.n = 20000;  // 80 KB of scores per block
    CHECK_THROWS_WITH(cuda::check_attention(a, 48 * 1024), Catch::Contains("shared memory"));
    CHECK_NOTHROW(cuda::check_attention(a, 227 * 1024));
    a.n = 100;
    a.slot = cuda::Slot::kv_bias;
    CHECK_THROWS_WITH(cuda::check_attention(a, 48 * 1024), Catch::Contains("sink_k"));
    // shared memory: n scores + q + the z partial sums
    CHECK(cuda::attention_smem_bytes(512, 64) == (512 + 64 + 2 * 64) * sizeof(float));
    CHECK(cuda::detail::attention_threads(64) == 128);
    CHECK(cuda::detail::attention_threads(200) == 224);
    CHECK(cuda::detail::blocks_for(0, 256) == 1);
    CHECK(cuda::detail::blocks_for(257, 256) == 2);
}

TEST_CASE("kernel thread mappings cover every element exactly once (host emulation)", "[cuda][host]") {
    // RoPE: one block per row; thread k of the block handles frequency k mod (d_h/2) in heads
    // h0, h0 + slices, … with h0 = k div (d_h/2) — the loops of detail::rope_kernel.
    for (std::int64_t nh : {1, 3, 9, 32})
        for (std::int64_t dh : {2, 4, 6, 64, 128, 1024}) {
            const std::int64_t half = dh / 2, threads = cuda::detail::rope_threads(nh, dh);
            REQUIRE(threads % 32 == 0);
            REQUIRE(threads <= 256);
            const std::int64_t slices = threads >= half ? threads / half : 1;
            std::vector<int> seen(std::size_t(nh * half), 0);
            for (std::int64_t tid = 0; tid < threads; ++tid)
                for (std::int64_t k = tid; k < half * slices; k += threads)
                    for (std::int64_t h = k / half; h < nh; h += slices) ++seen[std::size_t(h * half + k % half)];
            INFO("n_heads " << nh << ", head_dim " << dh);
            CHECK(std::count(seen.begin(), seen.end(), 1) == std::int64_t(seen.size()));
        }
    // fused attention, z phase: thread (part, c) = (tid div d_h, tid mod d_h) sums keys j ≡ part (mod
    // parts); then threads cc < d_h add the parts. Every (key, channel) product is taken once.
    for (std::int64_t dh : {4, 16, 64, 96, 128, 256, 1024}) {
        const std::int64_t threads = cuda::detail::attention_threads(dh), parts = threads / dh, t = 37;
        REQUIRE(parts >= 1);
        std::vector<int> seen(std::size_t((t + 1) * dh), 0);
        for (std::int64_t tid = 0; tid < threads; ++tid) {
            const std::int64_t c = tid % dh, part = tid / dh;
            if (part < parts)
                for (std::int64_t j = part; j <= t; j += parts) ++seen[std::size_t(j * dh + c)];
        }
        INFO("head_dim " << dh);
        CHECK(std::count(seen.begin(), seen.end(), 1) == std::int64_t(seen.size()));
        CHECK(cuda::attention_smem_bytes(t + 1, dh) >= std::size_t(t + 1 + dh + parts * dh) * sizeof(float));
    }
    CHECK(cuda::detail::row_threads(16) == 32);
    CHECK(cuda::detail::row_threads(576) == 256);
    CHECK(cuda::detail::row_threads(100) == 128);
    CHECK_THROWS_AS(cuda::detail::check_rows(std::int64_t(1) << 31), Error);
}

TEST_CASE("the device trainer states which configs it covers", "[cuda][host]") {
    for (const auto& v : test::all_variants()) {
        model::Config c = test::base_config();
        v.apply(c);
        const std::string why = cuda::training_unsupported(c);
        const bool expect_unsupported = c.norm_placement != model::NormPlacement::pre || c.qk_norm ||
                                        c.gate != model::GateKind::none || c.attention == model::AttentionKind::kv_bias;
        INFO(v.name << ": '" << why << "'");
        CHECK(why.empty() == !expect_unsupported);
    }
    model::Config c = test::base_config();
    c.norm_placement = model::NormPlacement::sandwich;
    CHECK_THAT(cuda::training_unsupported(c), Catch::Contains("sandwich"));
}

TEST_CASE("training batches are split into inputs and targets and checked", "[cuda][host]") {
    const model::Config c = test::base_config();
    std::vector<std::int32_t> in, tg;
    cuda::split_batch(c, {{1, 2, 3, 4}, {5, 6, 7, 8}}, in, tg);
    CHECK(in == std::vector<std::int32_t>{1, 2, 3, 5, 6, 7});
    CHECK(tg == std::vector<std::int32_t>{2, 3, 4, 6, 7, 8});
    CHECK_THROWS_WITH(cuda::split_batch(c, {{1, 2, 3}, {1, 2}}, in, tg), Catch::Contains("one length"));
    CHECK_THROWS_WITH(cuda::split_batch(c, {{1, 32}}, in, tg), Catch::Contains("vocabulary"));
    CHECK_THROWS_WITH(cuda::split_batch(c, {{1}}, in, tg), Catch::Contains("at least 2"));
    CHECK_THROWS_AS(cuda::split_batch(c, {}, in, tg), Error);
}

TEST_CASE("failed CUDA and cuBLAS calls throw sinkscope::Error naming the call, the error and file:line", "[cuda][host]") {
    const auto call = [] { SINKSCOPE_CUDA_CHECK(cudaErrorInvalidValue); };
    CHECK_THROWS_AS(call(), Error);
    CHECK_THROWS_WITH(call(), Catch::Contains("cudaErrorInvalidValue") && Catch::Contains("failed") &&
                                  Catch::Contains("test_cuda_host.cu:"));
    CHECK_THROWS_WITH([] { SINKSCOPE_CUBLAS_CHECK(CUBLAS_STATUS_INVALID_VALUE); }(),
                      Catch::Contains("CUBLAS_STATUS_INVALID_VALUE") && Catch::Contains("test_cuda_host.cu:"));
    CHECK_NOTHROW(SINKSCOPE_CUDA_CHECK(cudaSuccess));
    CHECK_NOTHROW(SINKSCOPE_CUBLAS_CHECK(CUBLAS_STATUS_SUCCESS));
}

TEST_CASE("backend resolution: automatic falls back to the CPU with the reason", "[cuda][host]") {
    using cuda::Backend;
    const cuda::DeviceStatus none{0, "cudaGetDeviceCount: cudaErrorNoDevice"}, one{1, ""};
    std::string why;
    CHECK(cuda::resolve_backend(Backend::automatic, none, &why) == Backend::cpu);
    CHECK_THAT(why, Catch::Contains("cudaErrorNoDevice"));
    CHECK(cuda::resolve_backend(Backend::automatic, one) == Backend::cuda);
    CHECK(cuda::resolve_backend(Backend::cpu, one) == Backend::cpu);
    CHECK_THROWS_WITH(cuda::resolve_backend(Backend::cuda, none), Catch::Contains("no CUDA device"));
}

TEST_CASE("without a device: status explains, Context refuses, the Runner runs the CPU reference", "[cuda][host]") {
    const auto st = cuda::device_status();
    if (st.count > 0) {
        CHECK(st.reason.empty());
        return;
    }
    CHECK_FALSE(st.reason.empty());
    CHECK_THROWS_WITH(cuda::Context(0), Catch::Contains("no CUDA device"));
    const model::Config c = test::base_config();
    const auto w = train::init_weights<float>(c, 5);
    cuda::Runner run(c, w);
    CHECK(run.backend() == cuda::Backend::cpu);
    CHECK_THAT(run.reason(), Catch::Contains("no CUDA device"));
    const std::vector<std::int32_t> tokens{1, 2, 3, 4, 5};
    const auto a = run.forward(tokens);
    const auto b = model::forward(c, w, tokens);
    CHECK(a == b);
    CHECK_THROWS_AS(cuda::Runner(c, w, cuda::Backend::cuda), Error);
}
