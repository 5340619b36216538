// AdamW, the schedule, clipping and the loss, against their defining formulas (exact math).
#include <catch2/catch.hpp>

#include <cmath>
#include <sinkscope/train/loss.hpp>
#include <sinkscope/train/optimizer.hpp>

#include "train/train_test_util.hpp"

using namespace sinkscope;
using namespace sinkscope::train;
using model::Mat;

TEST_CASE("schedule: linear warmup, then cosine down to min_lr_ratio", "[train][optimizer]") {
    AdamWConfig o;
    o.lr = 1e-3; o.warmup_steps = 10; o.total_steps = 110; o.min_lr_ratio = 0.1;
    CHECK(learning_rate(o, 0) == Approx(1e-4));
    CHECK(learning_rate(o, 9) == Approx(1e-3));
    CHECK(learning_rate(o, 10) == Approx(1e-3));
    CHECK(learning_rate(o, 60) == Approx(1e-4 + 0.5 * 9e-4));  // half-way: cos(π/2) = 0
    CHECK(learning_rate(o, 110) == Approx(1e-4));
    CHECK(learning_rate(o, 500) == Approx(1e-4));
    for (std::int64_t s = 11; s < 110; ++s) CHECK(learning_rate(o, s) < learning_rate(o, s - 1));
}

TEST_CASE("AdamW: one step equals the formula; matrices decay, vectors do not", "[train][optimizer]") {
    model::Config c = test::tiny_llama_config();
    c.n_layers = 1;
    auto w = init_weights<double>(c, 1);
    auto g = zeros_like(w);
    const double p_mat = w.layers[0].wq(0, 0), p_vec = w.layers[0].attn_norm.weight(0);
    g.layers[0].wq(0, 0) = 0.5;
    g.layers[0].attn_norm.weight(0) = -0.25;
    AdamWConfig o;
    o.lr = 0.1; o.beta1 = 0.9; o.beta2 = 0.99; o.eps = 1e-8; o.weight_decay = 0.2;
    AdamW<double> opt(o, w);
    opt.update(w, g, 0.1);
    // m̂ = g, v̂ = g² after one step: the update is lr·g/(|g| + ε) after decay p ← p(1 − lr·λ)
    CHECK(w.layers[0].wq(0, 0) == Approx(p_mat * (1 - 0.1 * 0.2) - 0.1 * 0.5 / (0.5 + 1e-8)).epsilon(1e-14));
    CHECK(w.layers[0].attn_norm.weight(0) == Approx(p_vec + 0.1 * 0.25 / (0.25 + 1e-8)).epsilon(1e-14));
    // an untouched matrix entry only decays
    const double before = init_weights<double>(c, 1).layers[0].wk(1, 1);
    CHECK(w.layers[0].wk(1, 1) == Approx(before * (1 - 0.02)).epsilon(1e-14));
    CHECK(opt.step() == 1);
    CHECK(decays("tok_embed", true));
    CHECK(decays("unembed", true));
    CHECK(decays("blocks.0.mlp.W_in", true));
    CHECK_FALSE(decays("blocks.0.attn.sink_kv", true));
    CHECK_FALSE(decays("blocks.0.ln1.weight", false));
    CHECK_FALSE(decays("sink_embed", false));
}

TEST_CASE("clipping scales the global norm down to the limit and leaves small gradients alone", "[train][optimizer]") {
    model::Config c = test::tiny_llama_config();
    auto g = test::random_test_weights<double>(c, 3);
    const double norm = gradient_norm(g);
    double direct = 0;
    for (auto& r : tensor_refs(g)) for (std::int64_t i = 0; i < r.size; ++i) direct += r.data[i] * r.data[i];
    CHECK(norm == Approx(std::sqrt(direct)).epsilon(1e-12));
    CHECK(clip_gradients(g, norm / 4) == Approx(norm).epsilon(1e-12));
    CHECK(gradient_norm(g) == Approx(norm / 4).epsilon(1e-6));
    const double n2 = gradient_norm(g);
    clip_gradients(g, 10 * n2);
    CHECK(gradient_norm(g) == Approx(n2).epsilon(1e-15));
}

TEST_CASE("the step's fused passes: gradient sum with its norm, clipping folded into AdamW, any thread count", "[train][optimizer]") {
    model::Config c = test::tiny_llama_config();
    c.vocab_size = 300;  // tok_embed 300 × d spans several chunks of a small chunk size below
    const auto w0 = test::random_test_weights<float>(c, 4);
    const auto a = test::random_test_weights<float>(c, 5), b = test::random_test_weights<float>(c, 6);
    // sum_gradients: acc + b, entry by entry as add_gradients adds, and the norm of the sum (double, exact math)
    auto fused = a, bb = b, plain = a, bb2 = b;
    const double norm = sum_gradients(fused, {&bb}, 2);
    add_gradients(plain, bb2);
    double direct = 0;
    const auto fr = tensor_refs(fused), pr = tensor_refs(plain);
    for (std::size_t i = 0; i < fr.size(); ++i)
        for (std::int64_t j = 0; j < fr[i].size; ++j) {
            REQUIRE(fr[i].data[j] == pr[i].data[j]);
            direct += double(pr[i].data[j]) * double(pr[i].data[j]);
        }
    CHECK(norm == Approx(std::sqrt(direct)).epsilon(1e-12));
    {  // zero_others: the same sum, and the others are left zero
        auto acc = a, other = b;
        CHECK(sum_gradients(acc, {&other}, 2, /*zero_others=*/true) == norm);
        CHECK(gradient_norm(other) == 0.0);
        CHECK(gradient_norm(acc) == Approx(norm).epsilon(1e-12));
    }
    // The norm is the same double for 1 and 2 threads, and for chunks of any size the sum is exact to rounding.
    CHECK(gradient_norm(plain, 1) == gradient_norm(plain, 2));
    {
        const auto refs = tensor_refs(plain);
        CHECK(tensor_chunks(refs, 7).size() > tensor_chunks(refs).size());
        std::int64_t covered = 0;
        for (const auto& ch : tensor_chunks(refs, 7)) covered += ch.end - ch.begin;
        std::int64_t total = 0;
        for (const auto& r : refs) total += r.size;
        CHECK(covered == total);
    }
    // AdamW with grad_scale = clipping's coefficient equals clip_gradients then AdamW, entry by entry.
    AdamWConfig o;
    o.lr = 1e-2; o.weight_decay = 0.1;
    const double coef = clip_coefficient(norm, norm / 3);
    CHECK(coef == Approx(1.0 / 3).epsilon(1e-5));
    CHECK(clip_coefficient(norm, 0.0) == 1.0);
    CHECK(clip_coefficient(norm, 2 * norm) == 1.0);
    auto w1 = w0, w2 = w0;
    AdamW<float> o1(o, w1), o2(o, w2);
    auto g1 = plain, g2 = plain;
    for (int step = 0; step < 2; ++step) {
        o1.update(w1, g1, 1e-2, coef, 2);
        auto clipped = g2;
        clip_gradients(clipped, norm / 3, 1);
        o2.update(w2, clipped, 1e-2, 1.0, 1);
    }
    const auto r1 = tensor_refs(w1), r2 = tensor_refs(w2);
    double worst = 0;
    for (std::size_t i = 0; i < r1.size(); ++i)
        for (std::int64_t j = 0; j < r1[i].size; ++j) worst = std::max(worst, double(std::abs(r1[i].data[j] - r2[i].data[j])));
    CHECK(worst <= 1e-7);  // the same float operations; at most a contraction into an FMA differs
    {  // zero_gradients: the same update, and g is left zero
        auto w3 = w0, w4 = w0, g3 = plain, g4 = plain;
        AdamW<float> o3(o, w3), o4(o, w4);
        o3.update(w3, g3, 1e-2, coef, 2, /*zero_gradients=*/true);
        o4.update(w4, g4, 1e-2, coef, 2);
        CHECK(gradient_norm(g3) == 0.0);
        CHECK(gradient_norm(g4) == gradient_norm(plain));
        const auto r3 = tensor_refs(w3), r4 = tensor_refs(w4);
        for (std::size_t i = 0; i < r3.size(); ++i)
            for (std::int64_t j = 0; j < r3[i].size; ++j) REQUIRE(r3[i].data[j] == r4[i].data[j]);
    }
    CHECK(tensor_refs(o1.m())[0].data[0] != 0.0f);
}

TEST_CASE("cross-entropy: log V for uniform logits, masks, gradient rows", "[train][loss]") {
    const std::int64_t T = 6, V = 5;
    Mat<double> logits = Mat<double>::Constant(T, V, 0.7);
    const std::vector<std::int32_t> y{0, 1, 2, 3, 4, 0};
    Mat<double> d;
    const LossMask all{};
    auto l = cross_entropy<double>(&d, logits, y, all, 1.0 / 6);
    CHECK(l.count == 6);
    CHECK(l.mean() == Approx(std::log(5.0)).epsilon(1e-14));
    CHECK(d(2, 2) == Approx((0.2 - 1) / 6).epsilon(1e-14));
    CHECK(d(2, 3) == Approx(0.2 / 6).epsilon(1e-14));
    const LossMask tnlm{0, -1, true}, window{2, 5, false}, both{1, 4, true};
    CHECK(tnlm.count(T) == 5);
    CHECK(window.count(T) == 3);
    CHECK(both.count(T) == 3);
    cross_entropy<double>(&d, logits, y, window, 1.0);
    CHECK(d.row(0).cwiseAbs().sum() == 0.0);
    CHECK(d.row(5).cwiseAbs().sum() == 0.0);
    CHECK(d.row(3).cwiseAbs().sum() > 0.0);
    // a non-uniform row against a long-double log-sum-exp
    logits.row(1) << 3.0, -1.0, 0.5, 2.0, -4.0;
    long double z = 0;
    for (int j = 0; j < 5; ++j) z += std::exp((long double)logits(1, j));
    const LossMask row1{1, 2, false};
    CHECK(cross_entropy<double>(nullptr, logits, y, row1, 1.0).sum == Approx(double(std::log(z) - logits(1, 1))).epsilon(1e-14));
    CHECK_THROWS_WITH(LossMask({3, 3, false}).validate(T), Catch::Contains("empty"));
    CHECK_THROWS_WITH(LossMask({6, -1, false}).validate(T), Catch::Contains("no position"));
}
