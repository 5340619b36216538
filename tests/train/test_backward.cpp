// Finite-difference gradient checks in double for every parameter of every architecture variant of
// the Config, and for each backward kernel on its own (the ggml test-backend-ops idea: each op
// against central differences). Peer: exact calculus, (L(w + h) − L(w − h)) / 2h.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <sinkscope/model/forward.hpp>
#include <sinkscope/train/backward.hpp>
#include <sinkscope/train/loss.hpp>
#include <sinkscope/train/model_backward.hpp>
#include <sinkscope/train/tape.hpp>

#include "train/train_test_util.hpp"

using namespace sinkscope;
using model::Config;
using model::Mat;
using model::Vec;

namespace {

struct Variant {
    std::string name;
    std::function<void(Config&)> edit;
    train::LossMask mask{};
    std::int64_t T = 7;  // > 64 exercises the blocked attention backward (several row blocks)
};

double sequence_loss(const Config& c, const model::Weights<double>& w, const std::vector<std::int32_t>& in,
                     const std::vector<std::int32_t>& target, const train::LossMask& mask) {
    const Mat<double> logits = model::forward(c, w, in);
    return train::cross_entropy<double>(nullptr, logits, target, mask, 1.0).mean();
}

// Compares the analytic gradient of every parameter with central differences at up to `per_tensor`
// entries per tensor. Returns the number of entries checked.
int check_model_gradients(const Config& c, const train::LossMask& mask, std::uint64_t seed, std::int64_t T = 7,
                          int per_tensor = 10) {
    auto w = test::random_test_weights<double>(c, seed);
    const auto seq = test::random_tokens(T + 1, c.vocab_size, seed + 11);
    const std::vector<std::int32_t> in(seq.begin(), seq.end() - 1), target(seq.begin() + 1, seq.end());

    train::TapeRecorder<double> rec(c);
    const auto& tape = rec.record(w, in);
    REQUIRE(tape.nonfinite.empty());
    Mat<double> dlogits;
    const auto loss = train::cross_entropy<double>(&dlogits, tape.logits, target, mask, 1.0 / double(mask.count(T)));
    CHECK(loss.mean() == Approx(sequence_loss(c, w, in, target, mask)).epsilon(1e-14));
    auto g = train::zeros_like(w);
    train::backward(g, dlogits, tape, w, c);

    auto wr = train::tensor_refs(w);
    auto gr = train::tensor_refs(g);
    REQUIRE(wr.size() == gr.size());
    train::Rng pick(seed + 5);
    int checked = 0;
    const double h = 1e-5;
    for (std::size_t i = 0; i < wr.size(); ++i) {
        REQUIRE(wr[i].name == gr[i].name);
        REQUIRE(wr[i].size == gr[i].size);
        std::vector<std::int64_t> idx;
        if (wr[i].size <= per_tensor) for (std::int64_t j = 0; j < wr[i].size; ++j) idx.push_back(j);
        else for (int j = 0; j < per_tensor; ++j) idx.push_back(std::int64_t(pick.below(std::uint64_t(wr[i].size))));
        double max_abs = 0;
        for (std::int64_t j : idx) {
            double& p = wr[i].data[j];
            const double saved = p;
            p = saved + h;
            const double lp = sequence_loss(c, w, in, target, mask);
            p = saved - h;
            const double lm = sequence_loss(c, w, in, target, mask);
            p = saved;
            const double numeric = (lp - lm) / (2 * h);
            const double analytic = gr[i].data[j];
            max_abs = std::max(max_abs, std::abs(numeric));
            const bool ok = std::abs(analytic - numeric) <= 1e-8 + 1e-6 * std::max(std::abs(analytic), std::abs(numeric));
            if (!ok) {  // (INFO formats its message eagerly: only on failure)
                INFO(c.describe() << "\n  parameter " << wr[i].name << "[" << j << "]: analytic " << analytic
                                  << " numeric " << numeric);
                CHECK(ok);
            }
            ++checked;
        }
        // A gradient that is identically zero would pass trivially: every used parameter must matter,
        // except a key bias without RoPE, which adds q·b_K to a whole row of scores (softmax ignores it).
        const bool invariant = wr[i].name.find("attn.b_K") != std::string::npos && c.positions != model::PositionKind::rope;
        INFO("parameter " << wr[i].name << " has an all-zero numeric gradient");
        CHECK((invariant ? max_abs < 1e-9 : max_abs > 1e-9));
    }
    return checked;
}

std::vector<Variant> all_variants() {
    using namespace model;
    std::vector<Variant> v;
    v.push_back({"baseline llama (rmsnorm pre, swiglu, rope half-split, GQA, tied)", [](Config&) {}});
    v.push_back({"untied head", [](Config& c) { c.tied_embeddings = false; }});
    v.push_back({"multi-head (no GQA), interleaved rope", [](Config& c) { c.n_kv_heads = 4; c.rope_layout = RopeLayout::interleaved; }});
    v.push_back({"loss window [2,6) + TNLM", [](Config&) {}, train::LossMask{2, 6, true}});
    v.push_back({"TNLM only", [](Config&) {}, train::LossMask{0, -1, true}});
    v.push_back({"layernorm with biases, gpt-2 style biases, learned positions, gelu(tanh)", [](Config& c) {
        c.norm = NormKind::layernorm; c.norm_bias = true; c.qkv_bias = true; c.out_bias = true; c.mlp_bias = true;
        c.positions = PositionKind::learned; c.ffn = FfnKind::gelu; c.activation = Activation::gelu_tanh; }});
    v.push_back({"gelu (erf)", [](Config& c) { c.ffn = FfnKind::gelu; c.activation = Activation::gelu_erf; }});
    v.push_back({"swiglu with mlp biases", [](Config& c) { c.mlp_bias = true; }});
    v.push_back({"sandwich norm", [](Config& c) { c.norm_placement = NormPlacement::sandwich; }});
    v.push_back({"sandwich norm + QK-norm", [](Config& c) { c.norm_placement = NormPlacement::sandwich; c.qk_norm = true; }});
    v.push_back({"post norm", [](Config& c) { c.norm_placement = NormPlacement::post; }});
    v.push_back({"post norm, layernorm, no ffn", [](Config& c) { c.norm_placement = NormPlacement::post; c.norm = NormKind::layernorm; c.ffn = FfnKind::none; }});
    v.push_back({"QK-norm with qkv bias", [](Config& c) { c.qk_norm = true; c.qkv_bias = true; }});
    v.push_back({"DynamicTanh (learnable alpha, alpha0 per block kind)", [](Config& c) {
        c.norm = NormKind::dynamic_tanh; c.dyt_alpha0_attn = 0.8; c.dyt_alpha0_other = 0.3; }});
    v.push_back({"DynamicTanh with beta, sandwich", [](Config& c) {
        c.norm = NormKind::dynamic_tanh; c.norm_bias = true; c.norm_placement = NormPlacement::sandwich; }});
    v.push_back({"FFN linear", [](Config& c) { c.ffn = FfnKind::linear; }});
    v.push_back({"FFN linear with bias", [](Config& c) { c.ffn = FfnKind::linear; c.mlp_bias = true; }});
    v.push_back({"attention only (no FFN)", [](Config& c) { c.ffn = FfnKind::none; }});
    v.push_back({"softmax off-by-one", [](Config& c) { c.attention = AttentionKind::softmax_off_by_one; }});
    v.push_back({"sink token", [](Config& c) { c.attention = AttentionKind::sink_token; }});
    v.push_back({"sink token, learned positions", [](Config& c) { c.attention = AttentionKind::sink_token; c.positions = PositionKind::learned; }});
    v.push_back({"KV bias", [](Config& c) { c.attention = AttentionKind::kv_bias; }});
    v.push_back({"KV bias + per-channel gate", [](Config& c) { c.attention = AttentionKind::kv_bias; c.gate = GateKind::per_channel; }});
    v.push_back({"gate per head (conditional)", [](Config& c) { c.gate = GateKind::per_head; }});
    v.push_back({"gate per channel (conditional)", [](Config& c) { c.gate = GateKind::per_channel; }});
    v.push_back({"gate per head (static)", [](Config& c) { c.gate = GateKind::static_per_head; }});
    v.push_back({"gate per channel (static)", [](Config& c) { c.gate = GateKind::static_per_channel; }});
    v.push_back({"sliding window 3", [](Config& c) { c.sliding_window = 3; }});
    v.push_back({"no positions", [](Config& c) { c.positions = PositionKind::none; }});
    v.push_back({"force-sink 4 channels", [](Config& c) { c.force_sink_channels = 4; }});
    v.push_back({"force-sink, sandwich, sink token", [](Config& c) {
        c.force_sink_channels = 3; c.norm_placement = NormPlacement::sandwich; c.attention = AttentionKind::sink_token; }});
    v.push_back({"head_dim 8 with 2 heads, 1 kv head", [](Config& c) { c.n_heads = 2; c.n_kv_heads = 1; c.head_dim = 8; }});
    v.push_back({"T = 150: three row blocks", [](Config& c) { c.context_length = 160; }, {}, 150});
    v.push_back({"T = 150, window 70, KV bias, TNLM", [](Config& c) {
        c.context_length = 160; c.sliding_window = 70; c.attention = AttentionKind::kv_bias; }, {0, -1, true}, 150});
    v.push_back({"T = 130 + sink token", [](Config& c) { c.context_length = 160; c.attention = AttentionKind::sink_token; }, {}, 130});
    // The switches of the families loaded for analysis (Config::cpu_only_switches), one at a time and as
    // their families combine them.
    v.push_back({"embedding scale", [](Config& c) { c.embed_scale = 2.5; }});
    v.push_back({"embedding scale, untied head", [](Config& c) { c.embed_scale = 0.6; c.tied_embeddings = false; }});
    v.push_back({"logit soft cap", [](Config& c) { c.logit_softcap = 1.5; }});
    v.push_back({"attention scale", [](Config& c) { c.attn_scale = 0.8; }});
    v.push_back({"attention soft cap", [](Config& c) { c.attn_softcap = 0.9; }});
    v.push_back({"attention soft cap + KV bias", [](Config& c) { c.attn_softcap = 1.1; c.attention = AttentionKind::kv_bias; }});
    v.push_back({"layer windows (3, full)", [](Config& c) { c.layer_windows = {3, 0}; }});
    v.push_back({"layer windows + sliding-layer rope base", [](Config& c) { c.layer_windows = {0, 2}; c.rope_base_sliding = 50; }});
    v.push_back({"partial rotary (half the head)", [](Config& c) { c.rotary_dim = 2; }});
    v.push_back({"rope frequency divisors", [](Config& c) { c.rope_freq_divisors = {1.0, 3.5}; }});
    v.push_back({"partial rotary, interleaved, with divisors", [](Config& c) {
        c.head_dim = 8; c.n_heads = 2; c.n_kv_heads = 2; c.rotary_dim = 4; c.rope_layout = RopeLayout::interleaved;
        c.rope_freq_divisors = {2.0, 1.0}; }});
    v.push_back({"parallel residual", [](Config& c) { c.parallel_residual = true; }});
    v.push_back({"parallel residual, force-sink, sink token", [](Config& c) {
        c.parallel_residual = true; c.force_sink_channels = 3; c.attention = AttentionKind::sink_token; }});
    v.push_back({"output norm placement", [](Config& c) { c.norm_placement = NormPlacement::output; }});
    v.push_back({"output norm placement, FFN linear", [](Config& c) { c.norm_placement = NormPlacement::output; c.ffn = FfnKind::linear; }});
    v.push_back({"QK-norm over the projection", [](Config& c) { c.qk_norm = true; c.qk_norm_scope = QkNormScope::projection; }});
    v.push_back({"mixture of experts, top 2 of 4, renormalised", [](Config& c) {
        c.ffn = FfnKind::moe; c.n_experts = 4; c.n_experts_used = 2; c.moe_normalize_topk = true; }});
    v.push_back({"mixture of experts, top 2 of 3, plain softmax, QK-norm over the projection", [](Config& c) {
        c.ffn = FfnKind::moe; c.n_experts = 3; c.n_experts_used = 2; c.moe_normalize_topk = false; c.qk_norm = true;
        c.qk_norm_scope = QkNormScope::projection; }});
    v.push_back({"Gemma 2 style: sandwich, gelu(tanh) GLU, embedding scale, both soft caps, layer windows", [](Config& c) {
        c.norm_placement = NormPlacement::sandwich; c.activation = Activation::gelu_tanh; c.embed_scale = 4.0;
        c.attn_softcap = 1.2; c.logit_softcap = 2.0; c.layer_windows = {3, 0}; c.attn_scale = 0.6; }});
    v.push_back({"Gemma 3 style: sandwich, head QK-norm, sliding-layer rope base", [](Config& c) {
        c.norm_placement = NormPlacement::sandwich; c.qk_norm = true; c.layer_windows = {2, 0}; c.rope_base_sliding = 30; }});
    v.push_back({"OLMo-2 style: output norms, projection QK-norm", [](Config& c) {
        c.norm_placement = NormPlacement::output; c.qk_norm = true; c.qk_norm_scope = QkNormScope::projection; }});
    v.push_back({"GPT-NeoX style: parallel residual, layernorm with biases, partial rotary, gelu", [](Config& c) {
        c.parallel_residual = true; c.norm = NormKind::layernorm; c.norm_bias = true; c.qkv_bias = true; c.out_bias = true;
        c.mlp_bias = true; c.ffn = FfnKind::gelu; c.activation = Activation::gelu_erf; c.rotary_dim = 2; }});
    v.push_back({"T = 150, window 70, attention soft cap", [](Config& c) {
        c.context_length = 160; c.sliding_window = 70; c.attn_softcap = 1.3; }, {}, 150});
    return v;
}

// The tiny test model with a variant's edits.
Config variant_config(const Variant& v) {
    Config c = test::tiny_llama_config();
    v.edit(c);
    c.validate();
    return c;
}

}  // namespace

TEST_CASE("gradients of every variant match central differences (double)", "[train][backward][grad]") {
    const auto variants = all_variants();
    const auto i = GENERATE_COPY(range<std::size_t>(0, all_variants().size()));
    const Config c = variant_config(variants[i]);
    INFO("variant: " << variants[i].name);
    // long sequences (several attention row blocks) cost ~20× more per loss evaluation: fewer samples
    const int per_tensor = variants[i].T > 64 ? 3 : 10;
    const int checked = check_model_gradients(c, variants[i].mask, 100 + i, variants[i].T, per_tensor);
    CHECK(checked > 8 * per_tensor);
}

TEST_CASE("the backward refuses, by name, the one combination it does not implement", "[train][backward]") {
    Config c = test::tiny_llama_config();
    c.ffn = model::FfnKind::moe; c.n_experts = 3; c.n_experts_used = 1;
    CHECK(c.backward_missing_switches().empty());
    CHECK_NOTHROW(train::TapeRecorder<double>(c));
    c.norm_placement = model::NormPlacement::sandwich;
    c.validate();  // the forward runs it
    CHECK(c.backward_missing_switches() == "ffn = moe with norm_placement = sandwich");
    CHECK_THROWS_WITH(train::TapeRecorder<double>(c), Catch::Matchers::Contains("does not implement ffn = moe with norm_placement = sandwich"));
}

TEST_CASE("bf16 training: the tape's bf16 operands give exactly the gradients of a float tape, in every variant",
          "[train][backward][bf16]") {
    if (!model::bf16_matmul_available()) {
        WARN("this build has no oneDNN: no bf16 products to compare");
        return;
    }
    // The recorder keeps activations that only feed bf16 products as their bf16 rounding, offers them
    // to the forward's products, and lets the SwiGLU backward round its gradients as it makes them; the
    // products then read those bits instead of rounding float copies. Same bits, same arithmetic: the
    // gradients must agree exactly, and variants whose backward needs the float values (QK-norm,
    // sandwich norms, a KV bias, b_up) must keep them float rather than fail.
    const auto variants = all_variants();
    const auto i = GENERATE_COPY(range<std::size_t>(0, all_variants().size()));
    const Config c = variant_config(variants[i]);
    INFO("variant: " << variants[i].name);
    const auto w = test::random_test_weights<float>(c, 300 + i);
    const auto seq = test::random_tokens(variants[i].T + 1, c.vocab_size, 311 + i);
    const std::vector<std::int32_t> in(seq.begin(), seq.end() - 1), target(seq.begin() + 1, seq.end());
    const model::ScopedMatmulPrecision bf16(model::MatmulPrecision::bf16, model::new_matmul_epoch(), /*attention=*/true);
    auto gradients = [&](bool bits) {
        train::TapeRecorder<float> rec(c);
        rec.keep_bf16_operands(bits);
        const auto& tape = rec.record(w, in);
        REQUIRE(tape.nonfinite.empty());
        bool any_bits = false;
        for (const auto& L : tape.layers) any_bits = any_bits || L.xn1.in_bits || L.q.in_bits || L.z.in_bits || L.post.in_bits;
        CHECK(any_bits == bits);  // every variant has some operand that may be kept as bits
        Mat<float> dlogits;
        train::cross_entropy<float>(&dlogits, tape.logits, target, variants[i].mask, 1.0f / float(variants[i].mask.count(variants[i].T)));
        auto g = train::zeros_like(w);
        train::backward(g, dlogits, tape, w, c);
        return g;
    };
    auto g_bits = gradients(true), g_float = gradients(false);
    const auto a = train::tensor_refs(g_bits), b = train::tensor_refs(g_float);
    REQUIRE(a.size() == b.size());
    float largest = 0;
    for (std::size_t t = 0; t < a.size(); ++t) {
        if (a[t].size == 0) continue;
        const auto x = Eigen::Map<const Eigen::ArrayXf>(a[t].data, a[t].size), y = Eigen::Map<const Eigen::ArrayXf>(b[t].data, b[t].size);
        INFO("parameter " << a[t].name);
        CHECK((x - y).abs().maxCoeff() == 0.0f);
        largest = std::max(largest, y.abs().maxCoeff());
    }
    CHECK(largest > 0.0f);  // (not two all-zero gradients)
}

// ---- each kernel alone: L = Σ dout ⊙ f(x), so ∂L/∂x is exactly what the backward kernel returns ----

namespace {
// Central-difference gradient of L(x) = Σ dout ⊙ f(x) with respect to every entry of `x`.
Mat<double> numeric_grad(Mat<double>& x, const std::function<double()>& L, double h = 1e-6) {
    Mat<double> g(x.rows(), x.cols());
    for (std::int64_t i = 0; i < x.size(); ++i) {
        const double s = x.data()[i];
        x.data()[i] = s + h; const double lp = L();
        x.data()[i] = s - h; const double lm = L();
        x.data()[i] = s;
        g.data()[i] = (lp - lm) / (2 * h);
    }
    return g;
}
Mat<double> rand_mat(std::int64_t r, std::int64_t c, std::uint64_t seed, double sd = 1.0, double mean = 0.0) {
    train::Rng rng(seed);
    Mat<double> m(r, c);
    for (std::int64_t i = 0; i < m.size(); ++i) m.data()[i] = mean + sd * rng.normal();
    return m;
}
double max_diff(const Mat<double>& a, const Mat<double>& b) { return (a - b).cwiseAbs().maxCoeff(); }
}  // namespace

TEST_CASE("norm kernels: backward equals central differences", "[train][backward][grad]") {
    const std::int64_t n = 5, d = 8;
    Mat<double> x = rand_mat(n, d, 1), dout = rand_mat(n, d, 2);
    Mat<double> gw = rand_mat(d, 1, 3, 0.3, 1.0), gb = rand_mat(d, 1, 4, 0.3), ga = rand_mat(1, 1, 5, 0.1, 0.7);
    Vec<double> g = gw.col(0), b = gb.col(0), a = ga.col(0);
    SECTION("rmsnorm") {
        auto L = [&] { Mat<double> y; model::rmsnorm_forward(y, x, g, 1e-5); return y.cwiseProduct(dout).sum(); };
        Mat<double> dx = Mat<double>::Zero(n, d); Vec<double> dg = Vec<double>::Zero(d);
        train::rmsnorm_backward(dx, dg, dout, x, g, 1e-5);
        CHECK(max_diff(dx, numeric_grad(x, L)) < 1e-8);
        Mat<double> gm = g; auto Lg = [&] { Vec<double> gg = gm.col(0); Mat<double> y; model::rmsnorm_forward(y, x, gg, 1e-5); return y.cwiseProduct(dout).sum(); };
        CHECK(max_diff(dg, numeric_grad(gm, Lg)) < 1e-8);
    }
    SECTION("layernorm") {
        auto L = [&] { Mat<double> y; model::layernorm_forward(y, x, g, b, 1e-5); return y.cwiseProduct(dout).sum(); };
        Mat<double> dx = Mat<double>::Zero(n, d); Vec<double> dg = Vec<double>::Zero(d), db = Vec<double>::Zero(d);
        train::layernorm_backward(dx, dg, &db, dout, x, g, 1e-5);
        CHECK(max_diff(dx, numeric_grad(x, L)) < 1e-8);
        CHECK(max_diff(db, dout.colwise().sum().transpose()) < 1e-12);
    }
    SECTION("dynamic tanh") {
        auto L = [&] { Mat<double> y; model::dyt_forward(y, x, a, g, b); return y.cwiseProduct(dout).sum(); };
        Mat<double> dx = Mat<double>::Zero(n, d); Vec<double> dg = Vec<double>::Zero(d), db = Vec<double>::Zero(d), da = Vec<double>::Zero(1);
        train::dyt_backward(dx, da, dg, &db, dout, x, a, g);
        CHECK(max_diff(dx, numeric_grad(x, L)) < 1e-8);
        Mat<double> am = a; auto La = [&] { Vec<double> aa = am.col(0); Mat<double> y; model::dyt_forward(y, x, aa, g, b); return y.cwiseProduct(dout).sum(); };
        CHECK(max_diff(da, numeric_grad(am, La)) < 1e-8);
    }
    SECTION("per-head rmsnorm (QK-norm)") {
        Mat<double> q = rand_mat(n, 8, 6);
        Vec<double> hg = rand_mat(4, 1, 7, 0.3, 1.0).col(0);
        auto L = [&] { Mat<double> y = q; model::head_rmsnorm_forward(y, hg, 2, 4, 1e-6); return y.cwiseProduct(dout).sum(); };
        Mat<double> dq = Mat<double>::Zero(n, 8); Vec<double> dhg = Vec<double>::Zero(4);
        train::head_rmsnorm_backward(dq, dhg, dout, q, hg, 2, 4, 1e-6);
        CHECK(max_diff(dq, numeric_grad(q, L)) < 1e-8);
    }
}

TEST_CASE("rope, activation and softmax kernels: backward equals central differences", "[train][backward][grad]") {
    const std::int64_t n = 6;
    SECTION("rope, both layouts") {
        for (auto layout : {model::RopeLayout::half_split, model::RopeLayout::interleaved}) {
            Mat<double> x = rand_mat(n, 8, 8), dout = rand_mat(n, 8, 9);
            auto L = [&] { Mat<double> y = x; model::rope_forward(y, 2, 4, 100.0, layout); return y.cwiseProduct(dout).sum(); };
            Mat<double> dx = dout;
            train::rope_backward(dx, 2, 4, 100.0, layout);
            CHECK(max_diff(dx, numeric_grad(x, L)) < 1e-8);
        }
    }
    SECTION("activations") {
        for (auto a : {model::Activation::silu, model::Activation::gelu_erf, model::Activation::gelu_tanh}) {
            Mat<double> x = rand_mat(n, 5, 10, 2.0), dout = rand_mat(n, 5, 11);
            auto L = [&] { Mat<double> y; model::activation_forward(y, x, a); return y.cwiseProduct(dout).sum(); };
            Mat<double> dx = Mat<double>::Zero(n, 5);
            train::activation_backward(dx, dout, x, a);
            CHECK(max_diff(dx, numeric_grad(x, L)) < 1e-8);
        }
    }
    SECTION("softmax with and without a slot, causal mask") {
        for (int slot = 0; slot < 2; ++slot) {
            Mat<double> s = rand_mat(n, n, 12), dout = rand_mat(n, n, 13);
            for (std::int64_t t = 0; t < n; ++t) for (std::int64_t j = t + 1; j < n; ++j) s(t, j) = -INFINITY;
            Mat<double> slot_s = rand_mat(n, 1, 14);
            auto L = [&] {
                Mat<double> p(n, n);
                model::softmax_forward<double>(p, s, slot ? slot_s.data() : nullptr);
                return p.cwiseProduct(dout).sum();
            };
            Mat<double> p(n, n);
            model::softmax_forward<double>(p, s, slot ? slot_s.data() : nullptr);
            Mat<double> ds = Mat<double>::Zero(n, n);
            Vec<double> dslot = Vec<double>::Zero(n);
            train::softmax_backward<double>(ds, slot ? dslot.data() : nullptr, dout, p, nullptr, slot == 1);
            // numeric gradient on the finite (unmasked) scores only
            Mat<double> num = Mat<double>::Zero(n, n);
            for (std::int64_t t = 0; t < n; ++t)
                for (std::int64_t j = 0; j <= t; ++j) {
                    const double v = s(t, j);
                    s(t, j) = v + 1e-6; const double lp = L();
                    s(t, j) = v - 1e-6; const double lm = L();
                    s(t, j) = v;
                    num(t, j) = (lp - lm) / 2e-6;
                }
            CHECK(max_diff(ds, num) < 1e-8);
            if (slot) CHECK(max_diff(dslot, numeric_grad(slot_s, L)) < 1e-8);
        }
    }
}
