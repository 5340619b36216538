// The cross-backend test: every CUDA kernel and the whole model, GPU against the CPU reference, each
// op with its own tolerance (ggml's test-backend-ops, Ginkgo's reference backend). Tag [cuda]; every
// case returns with "skipped: no CUDA device" where there is none.
//
// Peers and references. Ops: the CPU kernels of model/layers.hpp and train/backward.hpp (in double
// where the GPU's fp32 summation order is the only expected difference), io::dequantize and gguf-py's
// values (bit for bit). Whole model: model::forward in double, every hook of every Config variant.
// Training: train::backward in double, and the PyTorch autograd fixture of the training module
// (tests/fixtures/train, scripts/make_train_fixtures.py) with the tolerances the CPU float path meets.
//
// Tolerances (relative to the largest |value| of the reference tensor): fp32 element-wise and row ops
// 1e-5; GEMMs 1e-5; the fused attention 1e-5; a 2-layer model's hooks and logits 1e-4; 30-layer
// SmolLM2 2e-3; gradients 1e-4 (the CPU float path's tolerance against PyTorch); dequantization 0.
#include <catch2/catch.hpp>

#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <sinkscope/cuda.hpp>
#include <sinkscope/io/dequantize.hpp>
#include <sinkscope/io/safetensors.hpp>
#include <sinkscope/model/forward.hpp>
#include <sinkscope/model/load.hpp>
#include <sinkscope/train/backward.hpp>
#include <sinkscope/model/config_io.hpp>
#include <sinkscope/train/init.hpp>
#include <sinkscope/train/loss.hpp>
#include <sinkscope/train/model_backward.hpp>
#include <sinkscope/train/optimizer.hpp>
#include <sinkscope/train/tape.hpp>

#include "cuda/cuda_test_util.hpp"
#include "test_paths.hpp"
#include "train/train_fixture.hpp"
#include "train/train_test_util.hpp"

using namespace sinkscope;
using model::Mat;
using model::Vec;
using test::rel_error;

namespace {

cuda::Context& ctx() { return cuda::default_context(); }

std::vector<float> randn(std::size_t n, std::uint32_t seed, float scale = 1.f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = nd(rng);
    return v;
}
cuda::DeviceBuffer<float> dev(const std::vector<float>& h) {
    cuda::DeviceBuffer<float> d;
    d.upload(h, ctx().stream());
    return d;
}
std::vector<float> host(const cuda::DeviceBuffer<float>& d) { return d.to_host(ctx().stream()); }
Mat<float> mat(const std::vector<float>& v, std::int64_t r, std::int64_t c) { return Eigen::Map<const Mat<float>>(v.data(), r, c); }
template <class M>
std::vector<double> flat(const M& m) {
    std::vector<double> v(std::size_t(m.size()));
    for (std::int64_t i = 0; i < m.size(); ++i) v[std::size_t(i)] = double(m.data()[i]);
    return v;
}
template <class A, class B>
double err(const A& a, const B& b) {
    const auto x = flat(a);
    const auto y = flat(b);
    REQUIRE(x.size() == y.size());
    return rel_error(x.data(), y.data(), std::int64_t(x.size()));
}

const char* const kSupported[] = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K"};

}  // namespace

// ---------------------------------------------------------------------------------------------------
// Ops

TEST_CASE("cuda dequantize equals io::dequantize and gguf-py bit for bit", "[cuda][reference]") {
    SINKSCOPE_REQUIRE_GPU();
    std::mt19937 rng(11);
    std::uniform_int_distribution<int> byte(0, 255);
    for (const char* name : kSupported) {
        io::GgmlType t = io::GgmlType::F32;
        for (std::uint32_t id = 0; id < 64; ++id)
            if (io::type_name(static_cast<io::GgmlType>(id)) == name) t = static_cast<io::GgmlType>(id);
        const auto blocks = xt::load_npy<std::uint8_t>(test::fixture(std::string("io/dequant/") + name + ".blocks.npy"));
        const auto values = xt::load_npy<float>(test::fixture(std::string("io/dequant/") + name + ".values.npy"));
        std::vector<std::uint8_t> src(blocks.begin(), blocks.end());
        std::vector<float> want(values.begin(), values.end());
        // and 3000 random blocks behind the fixture's (NaN, inf and subnormal scales included)
        const std::int64_t extra = 3000;
        const std::size_t fixture_bytes = src.size();
        src.resize(fixture_bytes + std::size_t(extra * io::block_bytes(t)));
        for (std::size_t i = fixture_bytes; i < src.size(); ++i) src[i] = std::uint8_t(byte(rng));
        const std::int64_t n = std::int64_t(src.size() / std::size_t(io::block_bytes(t))) * io::block_elements(t);
        std::vector<float> cpu(static_cast<std::size_t>(n));
        io::dequantize<float>(t, src.data(), n, cpu.data());
        const auto d = cuda::upload_dequantized(ctx(), t, src.data(), n);
        const auto got = host(d);
        std::int64_t bad = 0, bad_peer = 0;
        for (std::int64_t i = 0; i < n; ++i) {
            const bool nan = std::isnan(got[i]) && std::isnan(cpu[i]);
            if (!nan && std::memcmp(&got[i], &cpu[i], 4) != 0) ++bad;
            if (std::size_t(i) < want.size() && std::memcmp(&got[i], &want[std::size_t(i)], 4) != 0 &&
                !(std::isnan(got[i]) && std::isnan(want[std::size_t(i)])))
                ++bad_peer;
        }
        INFO(name << ": " << n << " values");
        CHECK(bad == 0);
        CHECK(bad_peer == 0);
    }
}

TEST_CASE("cuda gemm: the four transpose cases with padded leading dimensions", "[cuda]") {
    SINKSCOPE_REQUIRE_GPU();
    for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb) {
            const std::int64_t M = 67, N = 45, K = 129, pad = 3;
            const std::int64_t ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
            const std::int64_t lda = ac + pad, ldb = bc + pad, ldc = N + pad;
            const auto A = randn(std::size_t(ar * lda), 1), B = randn(std::size_t(br * ldb), 2), C0 = randn(std::size_t(M * ldc), 3);
            std::vector<double> want(C0.begin(), C0.end());
            for (std::int64_t i = 0; i < M; ++i)
                for (std::int64_t j = 0; j < N; ++j) {
                    double s = 0;
                    for (std::int64_t p = 0; p < K; ++p)
                        s += double(ta ? A[std::size_t(p * lda + i)] : A[std::size_t(i * lda + p)]) *
                             double(tb ? B[std::size_t(j * ldb + p)] : B[std::size_t(p * ldb + j)]);
                    want[std::size_t(i * ldc + j)] = 1.5 * s - 0.5 * double(C0[std::size_t(i * ldc + j)]);
                }
            auto dA = dev(A), dB = dev(B), dC = dev(C0);
            cuda::gemm(ctx(), ta, tb, M, N, K, 1.5f, dA.data(), lda, dB.data(), ldb, -0.5f, dC.data(), ldc);
            const auto got = host(dC);
            INFO("ta=" << ta << " tb=" << tb);
            CHECK(rel_error(got.data(), want.data(), std::int64_t(got.size())) < 1e-5);
        }
}

TEST_CASE("cuda linear layer: forward and backward against layers.hpp / backward.hpp", "[cuda]") {
    SINKSCOPE_REQUIRE_GPU();
    const std::int64_t R = 37, in = 53, out = 29;
    const auto x = randn(std::size_t(R * in), 4), W = randn(std::size_t(out * in), 5), b = randn(std::size_t(out), 6),
               dy = randn(std::size_t(R * out), 7);
    Mat<double> X = mat(x, R, in).cast<double>(), Wm = mat(W, out, in).cast<double>(), DY = mat(dy, R, out).cast<double>();
    Vec<double> bv = Eigen::Map<const Vec<float>>(b.data(), out).cast<double>();
    Mat<double> Y, DX = Mat<double>::Zero(R, in), DW = Mat<double>::Zero(out, in);
    Vec<double> DB = Vec<double>::Zero(out);
    model::linear_forward(Y, X, Wm, bv);
    train::linear_backward(&DX, DW, &DB, DY, X, Wm);
    auto dx_ = dev(x), dW = dev(W), db = dev(b), ddy = dev(dy);
    cuda::DeviceBuffer<float> y(std::size_t(R * out)), gx(std::size_t(R * in)), gW(std::size_t(out * in)), gb(static_cast<std::size_t>(out));
    gx.zero(ctx().stream()); gW.zero(ctx().stream()); gb.zero(ctx().stream());
    cuda::linear_forward(ctx(), y.data(), dx_.data(), dW.data(), db.data(), R, in, out);
    cuda::linear_backward(ctx(), gx.data(), gW.data(), gb.data(), ddy.data(), dx_.data(), dW.data(), R, in, out);
    CHECK(err(mat(host(y), R, out), Y) < 1e-5);
    CHECK(err(mat(host(gx), R, in), DX) < 1e-5);
    CHECK(err(mat(host(gW), out, in), DW) < 1e-5);
    CHECK(err(mat(host(gb), out, 1), DB) < 1e-5);
}

TEST_CASE("cuda norms: RMSNorm, LayerNorm, DynamicTanh, QK-norm forward and backward", "[cuda]") {
    SINKSCOPE_REQUIRE_GPU();
    const std::int64_t R = 37, d = 300;  // d not a multiple of the block
    const auto x = randn(std::size_t(R * d), 8, 3.f), g = randn(std::size_t(d), 9), b = randn(std::size_t(d), 10),
               dout = randn(std::size_t(R * d), 11);
    const std::vector<float> alpha{0.7f};
    Mat<double> X = mat(x, R, d).cast<double>(), DO = mat(dout, R, d).cast<double>();
    model::NormWeights<double> nw;
    nw.weight = Eigen::Map<const Vec<float>>(g.data(), d).cast<double>();
    nw.bias = Eigen::Map<const Vec<float>>(b.data(), d).cast<double>();
    nw.alpha = Vec<double>::Constant(1, double(alpha[0]));
    auto dx = dev(x), dg = dev(g), dbias = dev(b), dal = dev(alpha), ddo = dev(dout);
    for (auto kind : {model::NormKind::rmsnorm, model::NormKind::layernorm, model::NormKind::dynamic_tanh}) {
        model::NormWeights<double> w = nw;
        if (kind == model::NormKind::rmsnorm) w.bias.resize(0);
        Mat<double> Y, DX = Mat<double>::Zero(R, d);
        model::norm_forward(Y, X, w, kind, 1e-5);
        model::NormWeights<double> gw;
        gw.weight = Vec<double>::Zero(d); gw.bias = Vec<double>::Zero(w.bias.size()); gw.alpha = Vec<double>::Zero(1);
        train::norm_backward(DX, gw, DO, X, w, kind, 1e-5);

        const cuda::NormParams p{dg.data(), kind == model::NormKind::rmsnorm ? nullptr : dbias.data(), dal.data()};
        cuda::DeviceBuffer<float> y(std::size_t(R * d)), gx(std::size_t(R * d)), gg(static_cast<std::size_t>(d)), gbias(static_cast<std::size_t>(d)),
            galpha(1), scratch;
        for (auto* buf : {&gx, &gg, &gbias, &galpha}) buf->zero(ctx().stream());
        cuda::norm_forward(ctx(), y.data(), dx.data(), p, kind, 1e-5, R, d);
        cuda::norm_backward(ctx(), gx.data(), {gg.data(), p.bias ? gbias.data() : nullptr, galpha.data()}, ddo.data(), dx.data(), p,
                            kind, 1e-5, R, d, scratch);
        INFO(model::to_string(kind));
        CHECK(err(mat(host(y), R, d), Y) < 1e-5);
        CHECK(err(mat(host(gx), R, d), DX) < 1e-5);
        CHECK(err(mat(host(gg), d, 1), gw.weight) < 1e-5);
        if (p.bias) CHECK(err(mat(host(gbias), d, 1), gw.bias) < 1e-5);
        if (kind == model::NormKind::dynamic_tanh) CHECK(err(mat(host(galpha), 1, 1), gw.alpha) < 1e-5);
    }
    // QK-norm: per-head RMSNorm over d_h = 20 of 3 heads
    const std::int64_t H = 3, dh = 20;
    const auto q = randn(std::size_t(R * H * dh), 12, 2.f), qg = randn(std::size_t(dh), 13);
    Mat<double> Q = mat(q, R, H * dh).cast<double>();
    model::head_rmsnorm_forward(Q, Vec<double>(Eigen::Map<const Vec<float>>(qg.data(), dh).cast<double>()), H, dh, 1e-6);
    auto dq = dev(q), dqg = dev(qg);
    cuda::head_rmsnorm_forward(ctx(), dq.data(), dqg.data(), R, H, dh, 1e-6);
    CHECK(err(mat(host(dq), R, H * dh), Q) < 1e-5);
}

TEST_CASE("cuda RoPE: both layouts, forward and backward, two stacked sequences", "[cuda]") {
    SINKSCOPE_REQUIRE_GPU();
    const std::int64_t B = 2, n = 150, H = 3, dh = 64, R = B * n;
    const auto x = randn(std::size_t(R * H * dh), 14);
    for (auto layout : {model::RopeLayout::half_split, model::RopeLayout::interleaved}) {
        Mat<float> cpu = mat(x, R, H * dh), cpu_b = cpu;
        for (std::int64_t b = 0; b < B; ++b) {  // each sequence starts at position 0
            Mat<float> s = cpu.middleRows(b * n, n), sb = s;
            model::rope_forward(s, H, dh, 10000.0, layout);
            train::rope_backward(sb, H, dh, 10000.0, layout);
            cpu.middleRows(b * n, n) = s;
            cpu_b.middleRows(b * n, n) = sb;
        }
        cuda::RopeTable table;
        table.ensure(ctx(), n, dh, 10000.0);
        auto f = dev(x), bw = dev(x);
        cuda::rope_forward(ctx(), f.data(), table, R, n, H, dh, layout);
        cuda::rope_backward(ctx(), bw.data(), table, R, n, H, dh, layout);
        INFO(model::to_string(layout));
        CHECK(err(mat(host(f), R, H * dh), cpu) < 1e-5);
        CHECK(err(mat(host(bw), R, H * dh), cpu_b) < 1e-5);
    }
}

TEST_CASE("cuda activations and SwiGLU, forward and backward", "[cuda]") {
    SINKSCOPE_REQUIRE_GPU();
    const std::int64_t n = 5000;
    const auto g = randn(std::size_t(n), 15, 4.f), u = randn(std::size_t(n), 16), dh = randn(std::size_t(n), 17);
    auto dg = dev(g), du = dev(u), ddh = dev(dh);
    for (auto a : {model::Activation::silu, model::Activation::gelu_tanh, model::Activation::gelu_erf}) {
        std::vector<double> h(static_cast<std::size_t>(n)), dgate(static_cast<std::size_t>(n)), dup(static_cast<std::size_t>(n)), act(static_cast<std::size_t>(n)), dact(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) {
            const double gi = g[std::size_t(i)];
            act[std::size_t(i)] = model::activate<double>(a, gi);
            h[std::size_t(i)] = act[std::size_t(i)] * u[std::size_t(i)];
            dgate[std::size_t(i)] = dh[std::size_t(i)] * u[std::size_t(i)] * train::activation_derivative<double>(a, gi);
            dup[std::size_t(i)] = dh[std::size_t(i)] * act[std::size_t(i)];
            dact[std::size_t(i)] = dh[std::size_t(i)] * train::activation_derivative<double>(a, gi);
        }
        cuda::DeviceBuffer<float> y(static_cast<std::size_t>(n)), s(static_cast<std::size_t>(n)), gg(static_cast<std::size_t>(n)), gu(static_cast<std::size_t>(n)), gx(static_cast<std::size_t>(n));
        cuda::activation_forward(ctx(), y.data(), dg.data(), a, n);
        cuda::swiglu_forward(ctx(), s.data(), dg.data(), du.data(), a, n);
        cuda::swiglu_backward(ctx(), gg.data(), gu.data(), ddh.data(), dg.data(), du.data(), a, n);
        cuda::activation_backward(ctx(), gx.data(), ddh.data(), dg.data(), a, n);
        INFO(model::to_string(a));
        CHECK(rel_error(host(y), act) < 1e-5);
        CHECK(rel_error(host(s), h) < 1e-5);
        CHECK(rel_error(host(gg), dgate) < 1e-5);
        CHECK(rel_error(host(gu), dup) < 1e-5);
        CHECK(rel_error(host(gx), dact) < 1e-5);
    }
}

namespace {
// The CPU reference of multi-head attention over B stacked sequences (model/layers.hpp in double).
struct AttnRef {
    Mat<double> z, scores, pattern;  // (B·n, H·d_h), (B·H·n, n), (B·H·n, n)
    Mat<double> slot;                // (B·H, n)
    std::vector<double> received;    // (H, n) summed over b
};
AttnRef attention_reference(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                            const std::vector<float>& sink_kv, std::int64_t B, std::int64_t n, std::int64_t H, std::int64_t G,
                            std::int64_t dh, std::int64_t window, cuda::Slot slot) {
    const std::int64_t group = H / G;
    const Mat<double> Q = mat(q, B * n, H * dh).cast<double>(), K = mat(k, B * n, G * dh).cast<double>(),
                      V = mat(v, B * n, G * dh).cast<double>();
    AttnRef r;
    r.z = Mat<double>::Zero(B * n, H * dh);
    r.scores.resize(B * H * n, n);
    r.pattern.resize(B * H * n, n);
    r.slot = Mat<double>::Zero(B * H, n);
    r.received.assign(std::size_t(H * n), 0.0);
    for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t h = 0; h < H; ++h) {
            const std::int64_t g = h / group, bh = b * H + h;
            const auto qh = Q.block(b * n, h * dh, n, dh);
            const auto kg = K.block(b * n, g * dh, n, dh);
            const auto vg = V.block(b * n, g * dh, n, dh);
            model::attention_scores_forward<double>(r.scores.middleRows(bh * n, n), qh, kg, model::ScoreRule{window});
            Vec<double> ss = Vec<double>::Zero(n);
            if (slot == cuda::Slot::kv_bias)
                for (std::int64_t t = 0; t < n; ++t) {
                    double s = 0;
                    for (std::int64_t i = 0; i < dh; ++i) s += qh(t, i) * double(sink_kv[std::size_t(g * dh + i)]);
                    ss(t) = s / std::sqrt(double(dh));
                }
            r.slot.row(bh) = ss.transpose();
            model::softmax_forward<double>(r.pattern.middleRows(bh * n, n), r.scores.middleRows(bh * n, n),
                                           slot == cuda::Slot::none ? nullptr : ss.data());
            const auto P = r.pattern.middleRows(bh * n, n);
            r.z.block(b * n, h * dh, n, dh) = P * vg;
            if (slot == cuda::Slot::kv_bias)
                for (std::int64_t t = 0; t < n; ++t)
                    for (std::int64_t i = 0; i < dh; ++i)
                        r.z(b * n + t, h * dh + i) += (1.0 - P.row(t).sum()) * double(sink_kv[std::size_t(G * dh + g * dh + i)]);
            for (std::int64_t j = 0; j < n; ++j) {
                double s = 0;
                for (std::int64_t t = j; t < n; ++t) s += P(t, j);
                r.received[std::size_t(h * n + j)] += s / double(n - j);
            }
        }
    return r;
}
}  // namespace

TEST_CASE("cuda fused attention: z, scores, pattern, slot scores and attention received", "[cuda]") {
    SINKSCOPE_REQUIRE_GPU();
    const std::int64_t B = 2, n = 37, H = 4, G = 2, dh = 16;
    const auto q = randn(std::size_t(B * n * H * dh), 20, 1.5f), k = randn(std::size_t(B * n * G * dh), 21, 1.5f),
               v = randn(std::size_t(B * n * G * dh), 22), sink_kv = randn(std::size_t(2 * G * dh), 23);
    auto dq = dev(q), dk = dev(k), dv = dev(v), dsink = dev(sink_kv);
    for (auto slot : {cuda::Slot::none, cuda::Slot::off_by_one, cuda::Slot::kv_bias})
        for (std::int64_t window : {std::int64_t(0), std::int64_t(5)}) {
            const AttnRef ref = attention_reference(q, k, v, sink_kv, B, n, H, G, dh, window, slot);
            cuda::DeviceBuffer<float> z(std::size_t(B * n * H * dh)), sc(std::size_t(B * H * n * n)), pat(std::size_t(B * H * n * n)),
                ss(std::size_t(B * H * n)), recv(std::size_t(H * 40));
            recv.zero(ctx().stream());
            cuda::AttentionArgs a;
            a.q = dq.data(); a.k = dk.data(); a.v = dv.data(); a.z = z.data();
            a.scores = sc.data(); a.pattern = pat.data(); a.slot_scores = ss.data();
            a.received = recv.data(); a.received_stride = 40;
            a.sink_k = dsink.data(); a.sink_v = dsink.data() + G * dh;
            a.B = B; a.n = n; a.H = H; a.G = G; a.dh = dh; a.window = window; a.slot = slot;
            cuda::attention_forward(ctx(), a);
            INFO("slot " << int(slot) << " window " << window);
            CHECK(err(mat(host(z), B * n, H * dh), ref.z) < 1e-5);
            CHECK(err(mat(host(sc), B * H * n, n), ref.scores) < 1e-5);  // −∞ must be at the same places
            CHECK(err(mat(host(pat), B * H * n, n), ref.pattern) < 1e-5);
            if (slot != cuda::Slot::none) CHECK(err(mat(host(ss), B * H, n), ref.slot) < 1e-5);
            const auto rc = host(recv);
            std::vector<double> got(std::size_t(H * n));
            for (std::int64_t h = 0; h < H; ++h)
                for (std::int64_t j = 0; j < n; ++j) got[std::size_t(h * n + j)] = rc[std::size_t(h * 40 + j)];
            CHECK(rel_error(got, ref.received) < 1e-5);

            // the unfused path (used after a hook changed scores or pattern) gives the same result
            cuda::DeviceBuffer<float> pat2(std::size_t(B * H * n * n)), z2(std::size_t(B * n * H * dh));
            cuda::softmax_rows(ctx(), pat2.data(), sc.data(), slot == cuda::Slot::none ? nullptr : ss.data(), B * H * n, n);
            cuda::AttentionArgs a2 = a;
            a2.pattern = pat2.data();
            a2.z = z2.data();
            cuda::BatchPointers ptrs;
            cuda::attention_apply_pattern(ctx(), a2, ptrs);
            CHECK(err(mat(host(pat2), B * H * n, n), ref.pattern) < 1e-5);
            CHECK(err(mat(host(z2), B * n, H * dh), ref.z) < 1e-5);
            cuda::DeviceBuffer<float> recv2(std::size_t(H * 40));
            recv2.zero(ctx().stream());
            cuda::attention_received(ctx(), recv2.data(), 40, pat2.data(), B, H, n);
            CHECK(rel_error(host(recv2), rc) < 1e-5);
        }
}

TEST_CASE("cuda attention backward against softmax_backward and the matrix products", "[cuda][grad]") {
    SINKSCOPE_REQUIRE_GPU();
    const std::int64_t B = 2, n = 23, H = 4, G = 2, dh = 8, group = H / G;
    const auto q = randn(std::size_t(B * n * H * dh), 30), k = randn(std::size_t(B * n * G * dh), 31), v = randn(std::size_t(B * n * G * dh), 32),
               dz = randn(std::size_t(B * n * H * dh), 33);
    for (auto slot : {cuda::Slot::none, cuda::Slot::off_by_one}) {
        const AttnRef ref = attention_reference(q, k, v, {}, B, n, H, G, dh, 0, slot);
        const Mat<double> Q = mat(q, B * n, H * dh).cast<double>(), K = mat(k, B * n, G * dh).cast<double>(),
                          V = mat(v, B * n, G * dh).cast<double>(), DZ = mat(dz, B * n, H * dh).cast<double>();
        Mat<double> DQ = Mat<double>::Zero(B * n, H * dh), DK = Mat<double>::Zero(B * n, G * dh), DV = Mat<double>::Zero(B * n, G * dh);
        const double scale = 1.0 / std::sqrt(double(dh));
        for (std::int64_t b = 0; b < B; ++b)
            for (std::int64_t h = 0; h < H; ++h) {
                const std::int64_t g = h / group, bh = b * H + h;
                const Mat<double> P = ref.pattern.middleRows(bh * n, n);
                const Mat<double> dzh = DZ.block(b * n, h * dh, n, dh);
                const Mat<double> dP = dzh * V.block(b * n, g * dh, n, dh).transpose();
                DV.block(b * n, g * dh, n, dh) += P.transpose() * dzh;
                Mat<double> dS = Mat<double>::Zero(n, n);
                train::softmax_backward<double>(dS, nullptr, dP, P, nullptr, slot != cuda::Slot::none);
                dS *= scale;
                DQ.block(b * n, h * dh, n, dh) += dS * K.block(b * n, g * dh, n, dh);
                DK.block(b * n, g * dh, n, dh) += dS.transpose() * Q.block(b * n, h * dh, n, dh);
            }
        // the device pass from the device's own pattern
        auto dq_ = dev(q), dk_ = dev(k), dv_ = dev(v), ddz = dev(dz);
        cuda::DeviceBuffer<float> z(std::size_t(B * n * H * dh)), pat(std::size_t(B * H * n * n)), ss(std::size_t(B * H * n));
        cuda::AttentionArgs a;
        a.q = dq_.data(); a.k = dk_.data(); a.v = dv_.data(); a.z = z.data(); a.pattern = pat.data(); a.slot_scores = ss.data();
        a.B = B; a.n = n; a.H = H; a.G = G; a.dh = dh; a.slot = slot;
        cuda::attention_forward(ctx(), a);
        cuda::DeviceBuffer<float> gq(std::size_t(B * n * H * dh)), gk(std::size_t(B * n * G * dh)), gv(std::size_t(B * n * G * dh)), dp;
        gk.zero(ctx().stream());
        gv.zero(ctx().stream());
        cuda::BatchPointers ptrs;
        cuda::attention_backward(ctx(), gq.data(), gk.data(), gv.data(), ddz.data(), dq_.data(), dk_.data(), dv_.data(), pat.data(), dp,
                                 B, n, H, G, dh, ptrs);
        INFO("slot " << int(slot));
        CHECK(err(mat(host(gq), B * n, H * dh), DQ) < 1e-5);
        CHECK(err(mat(host(gk), B * n, G * dh), DK) < 1e-5);
        CHECK(err(mat(host(gv), B * n, G * dh), DV) < 1e-5);
    }
}

TEST_CASE("cuda cross-entropy with loss masks against train::cross_entropy", "[cuda]") {
    SINKSCOPE_REQUIRE_GPU();
    const std::int64_t B = 3, T = 11, V = 1000;
    const auto logits = randn(std::size_t(B * T * V), 40, 3.f);
    std::vector<std::int32_t> targets(std::size_t(B * T));
    for (std::size_t i = 0; i < targets.size(); ++i) targets[i] = std::int32_t((i * 7919) % std::size_t(V));
    for (const train::LossMask& m : {train::LossMask{}, train::LossMask{0, -1, true}, train::LossMask{2, 7, false}}) {
        const double N = double(B * m.count(T));
        double sum = 0;
        Mat<double> dl_ref(B * T, V);
        for (std::int64_t b = 0; b < B; ++b) {
            const Mat<double> L = mat(logits, B * T, V).middleRows(b * T, T).cast<double>();
            Mat<double> dl;
            const std::vector<std::int32_t> tg(targets.begin() + b * T, targets.begin() + (b + 1) * T);
            sum += train::cross_entropy<double>(&dl, L, tg, m, 1.0 / N).sum;
            dl_ref.middleRows(b * T, T) = dl;
        }
        auto dlog = dev(logits);
        cuda::DeviceBuffer<std::int32_t> dt;
        dt.upload(targets, ctx().stream());
        cuda::DeviceBuffer<double> scratch;
        const auto ls = cuda::cross_entropy(ctx(), dlog.data(), dlog.data(), dt.data(), B, T, V, m, float(1.0 / N), scratch);
        INFO("mask [" << m.begin << ", " << m.end << ") skip_first " << m.skip_first);
        CHECK(ls.count == std::int64_t(N));
        CHECK(ls.sum == Approx(sum).epsilon(1e-5));
        CHECK(err(mat(host(dlog), B * T, V), dl_ref) < 1e-5);
    }
}

TEST_CASE("cuda AdamW and gradient clipping against train::AdamW", "[cuda]") {
    SINKSCOPE_REQUIRE_GPU();
    model::Config c = test::base_config();
    c.attention = model::AttentionKind::kv_bias;  // includes the non-decayed sink_kv matrix
    c.norm_bias = true;
    c.norm = model::NormKind::layernorm;
    auto w = test::random_test_weights<float>(c, 3);
    auto g = test::random_test_weights<float>(c, 4);
    train::AdamWConfig o;
    o.lr = 1e-2;
    o.weight_decay = 0.1;
    train::AdamW<float> cpu(o, w);
    auto dw = cuda::upload(ctx(), c, w);
    auto dg = cuda::upload(ctx(), c, g);
    cuda::DeviceAdamW gpu(ctx(), o, dw);
    cuda::DeviceBuffer<double> scratch;
    for (int s = 0; s < 3; ++s) {
        auto gc = g;
        const double n_cpu = train::clip_gradients(gc, 0.5);
        auto dgc = cuda::upload(ctx(), c, g);
        const double n_gpu = cuda::clip_gradients(ctx(), dgc, 0.5, scratch);
        CHECK(n_gpu == Approx(n_cpu).epsilon(1e-6));
        auto gc_dev = g;
        cuda::download(ctx(), dgc, gc_dev);
        CHECK(err(Eigen::Map<const Vec<float>>(gc_dev.tok_embed.data(), gc_dev.tok_embed.size()),
                  Eigen::Map<const Vec<float>>(gc.tok_embed.data(), gc.tok_embed.size())) < 1e-6);
        cpu.update(w, gc, train::learning_rate(o, s));
        gpu.update(ctx(), dw, dgc, train::learning_rate(o, s));
    }
    auto back = w;
    cuda::download(ctx(), dw, back);
    auto P = train::tensor_refs(w), Q = train::tensor_refs(back);
    REQUIRE(P.size() == Q.size());
    for (std::size_t i = 0; i < P.size(); ++i) {
        INFO(P[i].name);
        CHECK(rel_error(Q[i].data, P[i].data, P[i].size) < 1e-5);
    }
}

// ---------------------------------------------------------------------------------------------------
// The whole model

namespace {

struct Capture {
    std::vector<std::string> order;
    std::map<std::string, model::Captured<float>> values;
};
void attach_capture(model::HookSet<float>& hooks, Capture& cap) {
    hooks.add([](const std::string&) { return true; }, [&cap](const std::string& name, model::ActivationRef<float>& x) {
        cap.order.push_back(name);
        auto& c = cap.values[name];
        c.shape = x.shape;
        c.data.assign(x.data, x.data + x.size());
    });
}
struct CaptureD {
    std::vector<std::string> order;
    std::map<std::string, std::vector<double>> values;
};
void attach_capture(model::HookSet<double>& hooks, CaptureD& cap) {
    hooks.add([](const std::string&) { return true; }, [&cap](const std::string& name, model::ActivationRef<double>& x) {
        cap.order.push_back(name);
        cap.values[name].assign(x.data, x.data + x.size());
    });
}

}  // namespace

TEST_CASE("cuda forward equals model::forward for every Config variant, hook by hook", "[cuda][reference]") {
    SINKSCOPE_REQUIRE_GPU();
    const std::vector<std::int32_t> tokens{1, 5, 9, 2, 31, 7, 7, 0, 12, 4, 30};
    for (const auto& v : test::all_variants()) {
        model::Config c = test::base_config();
        v.apply(c);
        const auto w = test::random_test_weights<float>(c, 17);
        const auto wd = model::cast_weights<double>(w);
        model::HookSet<double> hd;
        CaptureD ref;
        attach_capture(hd, ref);
        const Mat<double> logits_ref = model::forward(c, wd, tokens, &hd);
        model::HookSet<float> hf;
        Capture got;
        attach_capture(hf, got);
        const auto dw = cuda::upload(ctx(), c, w);
        cuda::Workspace ws;
        const Mat<float> logits = cuda::forward(ctx(), ws, c, dw, tokens, &hf);
        INFO(v.name);
        CHECK(got.order == ref.order);  // the same names, offered in the same order as on the CPU
        CHECK(got.order.size() == model::hook_names(c).size());
        REQUIRE(logits.rows() == logits_ref.rows());
        CHECK(err(logits, logits_ref) < 1e-4);
        for (const auto& name : got.order) {
            INFO(name);
            REQUIRE(ref.values.count(name));
            const auto& a = got.values[name].data;
            CHECK(rel_error(a.data(), ref.values[name].data(), std::int64_t(a.size())) < 1e-4);
        }
    }
}

TEST_CASE("cuda forward: hooks that intervene change the device run as they change the CPU run", "[cuda][reference]") {
    SINKSCOPE_REQUIRE_GPU();
    const std::vector<std::int32_t> tokens{3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
    for (auto attention : {model::AttentionKind::softmax, model::AttentionKind::kv_bias}) {
        model::Config c = test::base_config();
        c.attention = attention;
        const auto w = test::random_test_weights<float>(c, 23);
        const auto dw = cuda::upload(ctx(), c, w);
        struct Case { std::string name; std::function<void(model::HookSet<float>&)> add; };
        const std::vector<Case> cases = {
            {"zero channel 3 of resid_mid", [](model::HookSet<float>& h) {
                 h.add("blocks.0.hook_resid_mid", [](const std::string&, model::ActivationRef<float>& x) {
                     for (std::int64_t t = 0; t < x.shape[0]; ++t) x.data[t * x.shape[1] + 3] = 0.f; });
             }},
            {"head 1 attends only to position 0", [](model::HookSet<float>& h) {
                 h.add("blocks.1.attn.hook_pattern", [](const std::string&, model::ActivationRef<float>& x) {
                     const std::int64_t n = x.shape[1];
                     for (std::int64_t t = 0; t < n; ++t)
                         for (std::int64_t j = 0; j < n; ++j) x.data[(1 * n + t) * n + j] = j == 0 ? 1.f : 0.f; });
             }},
            {"scores of key 0 raised by 2", [](model::HookSet<float>& h) {
                 h.add("blocks.0.attn.hook_attn_scores", [](const std::string&, model::ActivationRef<float>& x) {
                     const std::int64_t n = x.shape[1];
                     for (std::int64_t r = 0; r < x.shape[0] * n; ++r) x.data[r * n] += 2.f; });
             }},
            {"a read-only hook on every name changes nothing", [](model::HookSet<float>& h) {
                 h.add([](const std::string&) { return true; }, [](const std::string&, model::ActivationRef<float>&) {});
             }},
        };
        for (const auto& cs : cases) {
            model::HookSet<float> hc, hg;
            cs.add(hc);
            cs.add(hg);
            const Mat<float> want = model::forward(c, w, tokens, &hc);
            cuda::Workspace ws;
            const Mat<float> got = cuda::forward(ctx(), ws, c, dw, tokens, &hg);
            const Mat<float> plain = model::forward(c, w, tokens);
            INFO(model::to_string(attention) << ": " << cs.name);
            CHECK(err(got, want) < 1e-4);
            if (cs.name.rfind("a read-only", 0) != 0) CHECK(err(want, plain) > 1e-3);  // the intervention mattered
        }
    }
}

TEST_CASE("cuda forward: attention received per key position, with and without a pattern hook", "[cuda][reference]") {
    SINKSCOPE_REQUIRE_GPU();
    model::Config c = test::base_config();
    c.sliding_window = 6;
    const auto w = test::random_test_weights<float>(c, 29);
    const auto dw = cuda::upload(ctx(), c, w);
    const std::vector<std::vector<std::int32_t>> samples{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {4, 4, 8, 15, 16, 23, 2}};
    // reference: α_k = 1/(T − k) Σ_{t ≥ k} A[t, k] from the CPU's captured patterns, averaged over the
    // samples that reach position k
    std::vector<double> sum(std::size_t(c.n_layers * c.n_heads * 16), 0.0), cnt(16, 0.0);
    for (const auto& s : samples) {
        model::HookSet<float> h;
        model::ActivationCache<float> cache;
        cache.attach(h, [](const std::string& n) { return n.find("hook_pattern") != std::string::npos; });
        model::forward(c, w, s, &h);
        const std::int64_t n = std::int64_t(s.size());
        for (std::int64_t k = 0; k < n; ++k) cnt[std::size_t(k)] += 1;
        for (std::int64_t l = 0; l < c.n_layers; ++l) {
            const auto& P = cache["blocks." + std::to_string(l) + ".attn.hook_pattern"].data;
            for (std::int64_t hh = 0; hh < c.n_heads; ++hh)
                for (std::int64_t k = 0; k < n; ++k) {
                    double a = 0;
                    for (std::int64_t t = k; t < n; ++t) a += P[std::size_t((hh * n + t) * n + k)];
                    sum[std::size_t((l * c.n_heads + hh) * 16 + k)] += a / double(n - k);
                }
        }
    }
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] = cnt[i % 16] ? sum[i] / cnt[i % 16] : 0.0;
    for (bool with_hook : {false, true}) {
        cuda::AttentionReceived recv(ctx(), c.n_layers, c.n_heads, 16);
        cuda::Workspace ws;
        cuda::ForwardOptions o;
        o.received = &recv;
        for (const auto& s : samples) {
            model::HookSet<float> h;
            if (with_hook) h.add("blocks.1.attn.hook_pattern", [](const std::string&, model::ActivationRef<float>&) {});
            cuda::forward(ctx(), ws, c, dw, s, &h, o);
        }
        INFO("with a pattern hook: " << with_hook);
        CHECK(rel_error(recv.mean(ctx()), sum) < 1e-5);
    }
}

TEST_CASE("cuda forward rejects what model::forward rejects, and wrong device weights", "[cuda]") {
    SINKSCOPE_REQUIRE_GPU();
    const model::Config c = test::base_config();
    const auto w = test::random_test_weights<float>(c, 2);
    const auto dw = cuda::upload(ctx(), c, w);
    cuda::Workspace ws;
    CHECK_THROWS_WITH(cuda::forward(ctx(), ws, c, dw, {1, 2, 32}), Catch::Contains("outside the vocabulary"));
    CHECK_THROWS_WITH(cuda::forward(ctx(), ws, c, dw, {}), Catch::Contains("empty"));
    CHECK_THROWS_WITH(cuda::forward(ctx(), ws, c, dw, std::vector<std::int32_t>(17, 1)), Catch::Contains("context"));
    auto bad = w;
    bad.layers[0].wq.resize(3, 3);
    CHECK_THROWS_WITH(cuda::upload(ctx(), c, bad), Catch::Contains("blocks.0.attn.W_Q"));
    model::Config other = c;
    other.n_layers = 3;
    CHECK_THROWS_AS(cuda::forward(ctx(), ws, other, dw, {1, 2}), Error);
    // the Runner picks the device and gives the same logits as cuda::forward
    cuda::Runner run(c, w);
    CHECK(run.backend() == cuda::Backend::cuda);
    CHECK(err(run.forward({1, 2, 3}), cuda::forward(ctx(), ws, c, dw, {1, 2, 3})) == 0.0);
}

TEST_CASE("cuda forward of the shared stories260K and of SmolLM2-135M against the CPU", "[cuda][reference]") {
    SINKSCOPE_REQUIRE_GPU();
    for (const std::string& path : {test::shared_model("stories260K.gguf"), test::downloaded_model("SmolLM2-135M-Instruct.Q4_1.gguf")}) {
        if (!std::ifstream(path).good()) {
            WARN("skipped: " << path << " is not here (scripts/fetch_model.sh)");
            continue;
        }
        const auto m = model::load_model<float>(path);
        std::vector<std::int32_t> tokens(200);
        for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = std::int32_t((i * 2654435761u) % std::uint64_t(m.config.vocab_size));
        tokens[0] = 1;
        const auto names = [](const std::string& n) { return n.find("hook_resid_post") != std::string::npos; };
        model::HookSet<float> hc, hg;
        model::ActivationCache<float> cc, cg;
        cc.attach(hc, names);
        cg.attach(hg, names);
        const Mat<float> want = model::forward(m.config, m.weights, tokens, &hc);
        const auto dw = cuda::upload(ctx(), m.config, m.weights);
        cuda::Workspace ws;
        const Mat<float> got = cuda::forward(ctx(), ws, m.config, dw, tokens, &hg);
        INFO(path);
        CHECK(err(got, want) < 2e-3);
        for (const auto& [name, cap] : cc.all()) {
            INFO(name);
            CHECK(rel_error(cg[name].data.data(), cap.data.data(), std::int64_t(cap.data.size())) < 2e-3);
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// Training

namespace {

template <class T>
double cpu_loss_and_grad(const model::Config& c, const model::Weights<T>& w, model::Weights<T>& g,
                         const std::vector<std::vector<std::int32_t>>& seqs, const train::LossMask& mask) {
    train::TapeRecorder<T> rec(c);
    const std::int64_t T_in = std::int64_t(seqs[0].size()) - 1;
    const double N = double(mask.count(T_in) * std::int64_t(seqs.size()));
    double sum = 0;
    train::set_zero(g);
    for (const auto& s : seqs) {
        const std::vector<std::int32_t> in(s.begin(), s.end() - 1), tg(s.begin() + 1, s.end());
        const auto& tape = rec.record(w, in);
        Mat<T> dl;
        sum += train::cross_entropy<T>(&dl, tape.logits, tg, mask, T(1.0 / N)).sum;
        train::backward(g, dl, tape, w, c);
    }
    return sum / N;
}

// Each gradient against the double reference, relative to its own largest entry; a gradient that
// vanishes in exact arithmetic is compared against the scale of all gradients instead. The key bias is
// one: q·(k_j + b) shifts every score of a softmax row by the same q·b, and the softmax backward gives
// Σ_j ∂L/∂s_tj = 0 per row, so ∂L/∂b_K = Σ_t (Σ_j ∂L/∂s_tj) q_t/√d_h = 0; the reference holds only
// double rounding there (~1e-17) and the GPU float rounding (~1e-9), whose ratio means nothing.
void check_gradients(model::Weights<float>& got, model::Weights<double>& want, double tol) {
    auto G = train::tensor_refs(got);
    auto W = train::tensor_refs(want);
    REQUIRE(G.size() == W.size());
    double global = 0;
    for (const auto& w : W)
        for (std::int64_t j = 0; j < w.size; ++j) global = std::max(global, std::abs(double(w.data[j])));
    REQUIRE(global > 0);
    for (std::size_t i = 0; i < G.size(); ++i) {
        INFO("gradient of " << W[i].name);
        double own = 0, diff = 0;
        for (std::int64_t j = 0; j < W[i].size; ++j) {
            own = std::max(own, std::abs(double(W[i].data[j])));
            diff = std::max(diff, std::abs(double(G[i].data[j]) - double(W[i].data[j])));
        }
        if (own > 1e-6 * global) CHECK(rel_error(G[i].data, W[i].data, W[i].size) < tol);
        else CHECK(diff < tol * global);  // zero in exact arithmetic (the key bias): absolute, on the global scale
    }
}

}  // namespace

TEST_CASE("cuda training: loss and every gradient against train::backward, for each covered variant", "[cuda][grad]") {
    SINKSCOPE_REQUIRE_GPU();
    const std::vector<std::vector<std::int32_t>> batch{
        {1, 5, 9, 2, 31, 7, 7, 0, 12, 4}, {0, 0, 3, 3, 8, 1, 30, 29, 2, 2}, {17, 16, 15, 14, 13, 12, 11, 10, 9, 8}};
    for (const auto& v : test::all_variants()) {
        model::Config c = test::base_config();
        v.apply(c);
        if (!cuda::training_unsupported(c).empty()) {
            train::AdamWConfig o;
            CHECK_THROWS_WITH(cuda::Trainer(ctx(), c, train::init_weights<float>(c, 1), o), Catch::Contains("CPU"));
            continue;
        }
        const auto w = test::random_test_weights<float>(c, 31);
        const auto wd = model::cast_weights<double>(w);
        for (const train::LossMask& mask : {train::LossMask{}, train::LossMask{0, 7, true}}) {
            auto gd = train::zeros_like(wd);
            const double loss_ref = cpu_loss_and_grad(c, wd, gd, batch, mask);
            cuda::Trainer tr(ctx(), c, w, train::AdamWConfig{});
            const double loss = tr.loss_and_grad(batch, mask);
            auto g = tr.gradients();
            INFO(v.name << ", mask [" << mask.begin << ", " << mask.end << ") skip_first " << mask.skip_first);
            CHECK(loss == Approx(loss_ref).epsilon(1e-5));
            check_gradients(g, gd, 1e-4);
        }
    }
}

TEST_CASE("cuda training matches the PyTorch fixture: loss, gradients, 10 AdamW steps", "[cuda][grad][reference]") {
    SINKSCOPE_REQUIRE_GPU();
    for (const std::string name : {"baseline_tied", "baseline_untied"}) {
        const test::TrainFixture fx = test::load_train_fixture(name);
        REQUIRE(fx.tokens_shape.size() == 3);
        const std::int64_t B = fx.tokens_shape[1], len = fx.tokens_shape[2];
        auto batch = [&](std::int64_t s) {
            std::vector<std::vector<std::int32_t>> out(static_cast<std::size_t>(B));
            for (std::int64_t b = 0; b < B; ++b)
                out[std::size_t(b)].assign(fx.tokens.begin() + (s * B + b) * len, fx.tokens.begin() + (s * B + b + 1) * len);
            return out;
        };
        model::Weights<float> w = train::init_weights<float>(fx.config, 0);
        for (auto& r : train::tensor_refs(w)) {
            const auto& src = fx.tensors.at("param." + r.name);
            REQUIRE(std::int64_t(src.size()) == r.size);
            for (std::int64_t i = 0; i < r.size; ++i) r.data[i] = float(src[std::size_t(i)]);
        }
        cuda::Trainer tr(ctx(), fx.config, w, fx.opt);
        const double loss = tr.loss_and_grad(batch(0), fx.mask);
        INFO(name);
        CHECK(loss == Approx(fx.tensors.at("loss")[0]).epsilon(1e-5));
        auto g = tr.gradients();
        for (auto& r : train::tensor_refs(g)) {
            const auto& ref = fx.tensors.at("grad." + r.name);
            INFO("gradient of " << r.name);
            CHECK(rel_error(r.data, ref.data(), r.size) < 1e-4);
        }
        cuda::Trainer run(ctx(), fx.config, w, fx.opt);
        const auto& curve = fx.tensors.at("loss_curve");
        for (std::int64_t s = 0; s < std::int64_t(curve.size()); ++s) {
            const double l = run.step(batch(s), fx.mask);
            INFO("step " << s);
            CHECK(l == Approx(curve[std::size_t(s)]).epsilon(1e-4));
        }
        auto final_w = run.weights();
        for (auto& r : train::tensor_refs(final_w)) {
            const auto& ref = fx.tensors.at("final." + r.name);
            double e = 0;
            for (std::int64_t i = 0; i < r.size; ++i) e = std::max(e, std::abs(double(r.data[i]) - ref[std::size_t(i)]));
            INFO("weights of " << r.name << " after 10 steps, max |Δ| " << e);
            CHECK(e <= 1e-4);
        }
    }
}

// cuda::HostedTrainer: the sweep's and run_training's device trainer. Its batches, learning rates,
// traces and checkpoints are the CPU trainer's, so a device run must follow train::Trainer's loss curve
// (float32 on both, the sums in another order: 1e-4), and a checkpoint must resume on either backend.
TEST_CASE("cuda::HostedTrainer follows train::Trainer; its checkpoints resume on the device and on the CPU",
          "[cuda][train]") {
    SINKSCOPE_REQUIRE_GPU();
    train::TrainConfig cfg;
    cfg.model = test::tiny_llama_config();
    cfg.task = {{"kind", "bigram-backcopy"}, {"n_tokens", 12}, {"seq_len", 12}, {"triggers", 2}, {"seed", 3}};
    cfg.batch = 4;
    cfg.steps = 6;
    cfg.optim.lr = 3e-3;
    cfg.optim.warmup_steps = 2;
    cfg.optim.total_steps = 6;
    cfg.threads = 1;
    cfg.eval_sequences = 2;
    cfg.checkpoint_every = 3;
    REQUIRE(cuda::training_unsupported(cfg.model).empty());
    const auto data = [&] { return train::make_data(cfg.task); };

    train::Trainer<float> cpu(cfg, data());
    cuda::HostedTrainer dev(ctx(), cfg, data());
    std::vector<double> losses;
    for (int i = 0; i < 6; ++i) {
        const train::StepResult a = cpu.step(), b = dev.step();
        INFO("step " << i);
        CHECK(b.step == a.step);
        CHECK(b.lr == a.lr);
        CHECK(b.tokens == a.tokens);
        CHECK(b.loss == Approx(a.loss).epsilon(1e-4));
        CHECK(b.grad_norm == Approx(a.grad_norm).epsilon(1e-3));
        losses.push_back(b.loss);
    }
    const train::TraceRecord tc = cpu.trace(), td = dev.trace();
    CHECK(td.step == 6);
    CHECK(td.val_loss == Approx(tc.val_loss).epsilon(1e-4));

    const auto dir = std::filesystem::temp_directory_path() / "sinkscope_test_cuda_hosted";
    std::filesystem::remove_all(dir);
    SECTION("3 + 3 steps through a device checkpoint follow the 6 straight ones") {
        cuda::HostedTrainer first(ctx(), cfg, data());
        for (int i = 0; i < 3; ++i) first.step();
        std::filesystem::create_directories(dir);
        first.save((dir / "checkpoint.safetensors").string());
        const auto ck = train::load_checkpoint<float>((dir / "checkpoint.safetensors").string());
        CHECK(ck.step == 3);
        CHECK(ck.optimizer_step == 3);
        cuda::HostedTrainer on_device(ctx(), ck, data());
        train::Trainer<float> on_cpu(ck, data());
        CHECK(on_device.current_step() == 3);
        for (int i = 3; i < 6; ++i) {
            INFO("step " << i);
            CHECK(on_device.step().loss == Approx(losses[std::size_t(i)]).epsilon(1e-6));
            CHECK(on_cpu.step().loss == Approx(losses[std::size_t(i)]).epsilon(1e-4));
        }
    }
    SECTION("run_training drives it: run.json, a trace row per checkpoint, the last checkpoint") {
        cuda::HostedTrainer tr(ctx(), cfg, data());
        std::int64_t seen = 0;
        train::run_training(tr, dir.string(), [&](const train::StepResult& r) { CHECK(r.step == seen++); });
        CHECK(seen == 6);
        std::ifstream jl(dir / "trace.jsonl");
        std::vector<std::int64_t> steps;
        for (std::string line; std::getline(jl, line);) steps.push_back(nlohmann::json::parse(line)["step"].get<std::int64_t>());
        CHECK(steps == std::vector<std::int64_t>{0, 3, 6});
        CHECK(train::load_checkpoint<float>((dir / "checkpoint.safetensors").string()).step == 6);
    }
    std::filesystem::remove_all(dir);

    train::TrainConfig bf16 = cfg;
    bf16.precision = model::MatmulPrecision::bf16;
    if (model::bf16_matmul_available())
        CHECK_THROWS_WITH(cuda::HostedTrainer(ctx(), bf16, data()), Catch::Contains("float32"));
}
