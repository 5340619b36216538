// The PyTorch autograd fixture (scripts/make_train_fixtures.py): loss, every parameter gradient and a
// 10-step AdamW loss curve (warmup + cosine schedule, clipping, decay groups) of a tiny Llama-style
// model, tied and untied, with a TNLM + window loss mask. Peer: PyTorch in float64.
#include <catch2/catch.hpp>

#include <cstring>
#include <nlohmann/json.hpp>
#include <sinkscope/io/safetensors.hpp>
#include <sinkscope/model/config_io.hpp>
#include <sinkscope/train/loss.hpp>
#include <sinkscope/train/model_backward.hpp>
#include <sinkscope/train/optimizer.hpp>
#include <sinkscope/train/tape.hpp>

#include "test_paths.hpp"
#include "train/train_fixture.hpp"
#include "train/train_test_util.hpp"

using namespace sinkscope;
using model::Mat;

namespace {

using Fixture = test::TrainFixture;
using test::load_train_fixture;

template <class T>
model::Weights<T> weights_from(const Fixture& fx, const std::string& prefix) {
    auto w = train::init_weights<T>(fx.config, 1);  // shapes only; every value is overwritten
    for (auto& r : train::tensor_refs(w)) {
        const auto it = fx.tensors.find(prefix + r.name);
        REQUIRE(it != fx.tensors.end());
        REQUIRE(std::int64_t(it->second.size()) == r.size);
        for (std::int64_t i = 0; i < r.size; ++i) r.data[i] = T(it->second[i]);
    }
    return w;
}

// The batch of optimizer step s: B sequences of T + 1 tokens.
std::vector<std::vector<std::int32_t>> batch(const Fixture& fx, std::int64_t s) {
    const std::int64_t B = fx.tokens_shape[1], n = fx.tokens_shape[2];
    std::vector<std::vector<std::int32_t>> out(B);
    for (std::int64_t b = 0; b < B; ++b)
        out[b].assign(fx.tokens.begin() + (s * B + b) * n, fx.tokens.begin() + (s * B + b + 1) * n);
    return out;
}

// Mean loss of a batch and its gradients (accumulated over the sequences).
template <class T>
double loss_and_grad(const Fixture& fx, const model::Weights<T>& w, model::Weights<T>& g,
                     const std::vector<std::vector<std::int32_t>>& seqs) {
    train::TapeRecorder<T> rec(fx.config);
    const std::int64_t T_in = std::int64_t(seqs[0].size()) - 1;
    const double N = double(fx.mask.count(T_in) * std::int64_t(seqs.size()));
    double sum = 0;
    train::set_zero(g);
    for (const auto& s : seqs) {
        const std::vector<std::int32_t> in(s.begin(), s.end() - 1), tg(s.begin() + 1, s.end());
        const auto& tape = rec.record(w, in);
        Mat<T> dl;
        sum += train::cross_entropy<T>(&dl, tape.logits, tg, fx.mask, T(1.0 / N)).sum;
        train::backward(g, dl, tape, w, fx.config);
    }
    return sum / N;
}

template <class T>
void check_against_torch(const std::string& name, double loss_tol, double grad_tol, double curve_tol, double final_tol) {
    const Fixture fx = load_train_fixture(name);
    auto w = weights_from<T>(fx, "param.");
    auto g = train::zeros_like(w);
    const double loss = loss_and_grad(fx, w, g, batch(fx, 0));
    CHECK(loss == Approx(fx.tensors.at("loss")[0]).epsilon(loss_tol));

    int n_checked = 0;
    for (auto& r : train::tensor_refs(g)) {
        const auto& ref = fx.tensors.at("grad." + r.name);
        double scale = 0, err = 0;
        for (std::int64_t i = 0; i < r.size; ++i) {
            scale = std::max(scale, std::abs(ref[i]));
            err = std::max(err, std::abs(double(r.data[i]) - ref[i]));
        }
        INFO(name << ": gradient of " << r.name << " max |Δ| " << err << " (max |g| " << scale << ")");
        CHECK(scale > 0);
        CHECK(err <= grad_tol * scale);
        ++n_checked;
    }
    CHECK(n_checked == int(fx.config.tied_embeddings ? 1 + 2 * 9 + 1 : 1 + 2 * 9 + 2));  // embed, 9 per block, final norm, [head]

    // 10 optimizer steps
    train::AdamW<T> opt(fx.opt, w);
    const auto& curve = fx.tensors.at("loss_curve");
    for (std::int64_t s = 0; s < std::int64_t(curve.size()); ++s) {
        const double l = loss_and_grad(fx, w, g, batch(fx, s));
        INFO(name << ": step " << s);
        CHECK(l == Approx(curve[s]).epsilon(curve_tol));
        train::clip_gradients(g, fx.opt.grad_clip);
        opt.update(w, g, train::learning_rate(fx.opt, s));
    }
    for (auto& r : train::tensor_refs(w)) {
        const auto& ref = fx.tensors.at("final." + r.name);
        double err = 0;
        for (std::int64_t i = 0; i < r.size; ++i) err = std::max(err, std::abs(double(r.data[i]) - ref[i]));
        INFO(name << ": weights of " << r.name << " after 10 steps, max |Δ| " << err);
        CHECK(err <= final_tol);
    }
}

}  // namespace

TEST_CASE("PyTorch fixture: loss, gradients and a 10-step AdamW curve match (double)", "[train][reference]") {
    check_against_torch<double>("baseline_tied", 1e-12, 1e-9, 1e-10, 1e-9);
    check_against_torch<double>("baseline_untied", 1e-12, 1e-9, 1e-10, 1e-9);
}

TEST_CASE("PyTorch fixture: the float path agrees to single-precision accuracy", "[train][reference]") {
    check_against_torch<float>("baseline_tied", 1e-5, 1e-4, 1e-4, 1e-4);
    check_against_torch<float>("baseline_untied", 1e-5, 1e-4, 1e-4, 1e-4);
}
