// The backward pass through every family sinkscope loads, on the families' Hugging Face fixtures
// (tests/fixtures/model/random_<kind>): loaded as a user loads them, cast to double, differentiated.
// Two peers: central differences of the loss in double (every parameter tensor, a few entries each),
// and PyTorch autograd on the same weights and tokens (scripts/make_gradient_fixtures.py writes
// random_<kind>/grad/): the gradient at every block's input and of the token embedding.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>
#include <sinkscope/io/npy.hpp>
#include <sinkscope/model/forward.hpp>
#include <sinkscope/model/load.hpp>
#include <sinkscope/train/loss.hpp>
#include <sinkscope/train/model_backward.hpp>
#include <sinkscope/train/random.hpp>
#include <sinkscope/train/tape.hpp>

#include "test_paths.hpp"

using namespace sinkscope;
using model::Mat;

namespace {

const std::vector<std::string> kFamilies = {"llama", "mistral", "qwen2", "qwen3", "gpt2", "gemma2", "gemma3",
                                            "phi3", "olmo2", "gpt_neox", "mixtral", "olmoe", "llama31"};

struct FamilyCase {
    model::Config config;
    model::Weights<double> weights;
    std::vector<std::int32_t> input, target;
};

FamilyCase family_case(const std::string& kind) {
    const std::string dir = test::fixture("model/random_" + kind);
    const auto m = model::load_model<float>(dir);
    const auto t = io::read_npy<std::int64_t>(dir + "/grad/tokens.npy").data;  // T + 1 tokens
    FamilyCase f{m.config, model::cast_weights<double>(m.weights), {t.begin(), t.end() - 1}, {t.begin() + 1, t.end()}};
    return f;
}

// L = mean next-token cross-entropy (the loss make_gradient_fixtures.py differentiates).
double loss_of(const FamilyCase& f) {
    const Mat<double> logits = model::forward(f.config, f.weights, f.input);
    return train::cross_entropy<double>(nullptr, logits, f.target, {}, 1.0).mean();
}

struct Gradients {
    double loss = 0;
    model::Weights<double> params;
    std::vector<Mat<double>> dresid_pre;  // ∂L/∂(block l's input)
};

Gradients backward_of(const FamilyCase& f) {
    train::TapeRecorder<double> rec(f.config);
    const auto& tape = rec.record(f.weights, f.input);
    REQUIRE(tape.nonfinite.empty());
    Mat<double> dlogits;
    const auto loss = train::cross_entropy<double>(&dlogits, tape.logits, f.target, {}, 1.0 / double(f.input.size()));
    Gradients g{loss.mean(), train::zeros_like(f.weights), {}};
    train::backward(g.params, dlogits, tape, f.weights, f.config, &g.dresid_pre);
    return g;
}

double max_abs(const Mat<double>& m) { return m.cwiseAbs().maxCoeff(); }

}  // namespace

TEST_CASE("every family's backward matches central differences in double", "[train][backward][grad][reference]") {
    for (const std::string& kind : kFamilies) {
        SECTION(kind) {
            FamilyCase f = family_case(kind);
            REQUIRE(f.config.backward_missing_switches().empty());
            Gradients g = backward_of(f);
            CHECK(g.loss == Approx(loss_of(f)).epsilon(1e-13));
            auto wr = train::tensor_refs(f.weights);
            auto gr = train::tensor_refs(g.params);
            REQUIRE(wr.size() == gr.size());
            train::Rng pick(17);
            const double h = 1e-5;
            int moving = 0;
            for (std::size_t i = 0; i < wr.size(); ++i) {
                double biggest = 0;
                for (int s = 0; s < 3; ++s) {
                    const std::int64_t j = std::int64_t(pick.below(std::uint64_t(wr[i].size)));
                    double& p = wr[i].data[j];
                    const double saved = p;
                    p = saved + h;
                    const double lp = loss_of(f);
                    p = saved - h;
                    const double lm = loss_of(f);
                    p = saved;
                    const double numeric = (lp - lm) / (2 * h), analytic = gr[i].data[j];
                    biggest = std::max(biggest, std::abs(numeric));
                    const bool ok = std::abs(analytic - numeric) <= 1e-9 + 1e-6 * std::max(std::abs(analytic), std::abs(numeric));
                    if (!ok) {
                        INFO(kind << ": parameter " << wr[i].name << "[" << j << "]: analytic " << analytic << " numeric " << numeric);
                        CHECK(ok);
                    }
                }
                if (biggest > 1e-9) ++moving;
            }
            // Sampled entries of almost every tensor move the loss (an embedding row of a token the
            // sequence lacks, or an expert no token chose, may not): the check is not vacuous.
            INFO(kind << ": " << moving << " of " << wr.size() << " tensors had a nonzero sampled gradient");
            CHECK(moving >= int(wr.size() * 3 / 4));
        }
    }
}

TEST_CASE("every family's backward matches PyTorch autograd (float64)", "[train][backward][grad][reference]") {
    for (const std::string& kind : kFamilies) {
        SECTION(kind) {
            const FamilyCase f = family_case(kind);
            const std::string dir = test::fixture("model/random_" + kind + "/grad");
            const Gradients g = backward_of(f);
            // transformers runs its norms in float32 even in a float64 model (LlamaRMSNorm and its kin cast
            // to float32), so the reference carries float32 rounding: the losses agree to about 1e-8
            // relative, and the gradients to float32's rounding carried through the blocks (measured at
            // most 9e-7 of the largest entry over the 13 families). Double FD above checks ours exactly.
            CHECK(g.loss == Approx(io::read_npy<double>(dir + "/loss.npy").data.at(0)).epsilon(1e-6));
            REQUIRE(std::int64_t(g.dresid_pre.size()) == f.config.n_layers);
            for (std::int64_t l = 0; l < f.config.n_layers; ++l) {
                const auto ref = io::read_npy<double>(dir + "/dresid_pre_L" + std::to_string(l) + ".npy");
                const Mat<double>& got = g.dresid_pre[std::size_t(l)];
                REQUIRE(ref.shape == std::vector<std::size_t>{std::size_t(got.rows()), std::size_t(got.cols())});
                const Mat<double> want = Eigen::Map<const Mat<double>>(ref.data.data(), got.rows(), got.cols());
                INFO(kind << ": dL/d(resid_pre) of block " << l << ", max |ref| " << max_abs(want) << ", max error "
                          << max_abs(got - want));
                CHECK(max_abs(got - want) <= 1e-5 * max_abs(want));
            }
            const auto ref = io::read_npy<float>(dir + "/dembed.npy");
            const Mat<double>& got = g.params.tok_embed;
            REQUIRE(ref.shape == std::vector<std::size_t>{std::size_t(got.rows()), std::size_t(got.cols())});
            const Mat<double> want = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
                                         ref.data.data(), got.rows(), got.cols()).cast<double>();
            INFO(kind << ": dL/d(token embedding), max |ref| " << max_abs(want));
            // the reference is stored as float32: its rounding, 2^-24 of each entry, bounds the agreement
            CHECK(max_abs(got - want) <= 1e-6 * max_abs(want));
        }
    }
}
