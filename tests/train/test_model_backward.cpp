// train/model_backward.hpp: the backward pass through every family sinkscope loads, on the families'
// Hugging Face fixtures (tests/fixtures/model/random_<kind>): loaded as a user loads them, cast to double,
// differentiated. Two peers: central differences of the loss in double (every parameter tensor, a few
// entries each), and PyTorch autograd on the same weights and tokens (scripts/make_gradient_fixtures.py
// writes random_<kind>/grad/): the gradient at every block's input, of the token embedding, and sampled
// entries of every parameter that has a tensor of its own in transformers (dparams.json).
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>
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

namespace {
// The Hugging Face name of a parameter row in block l (−1 outside blocks), expert e (−1 outside experts) among
// `grads` (transformers' in-memory names): "" where the family's checkpoints pack it into a fused tensor (no
// name of its own), "?" + the expected name where it has a name but autograd reported none under it.
template <class Row>
std::string hf_name_of(const Row& row, const model::Family& fam, std::int64_t l, std::int64_t e, const nlohmann::json& grads) {
    if (row.key == nullptr || (fam.hf.*row.key).empty()) return "";
    // Where transformers' in-memory name differs from the checkpoint's: GPT-2's modules under "transformer."
    // (the prefix the loader accepts too), GPT-NeoX's head, saved as embed_out and held as lm_head.
    auto in_memory = [](const std::string& saved) {
        std::vector<std::string> names = {saved, "transformer." + saved};
        if (saved == "embed_out.weight") names.push_back("lm_head.weight");
        return names;
    };
    std::string first;
    for (const std::string& alt : model::detail::alternatives(fam.hf.*row.key)) {
        const std::string saved = model::detail::layer_name(alt, std::max<std::int64_t>(l, 0), std::max<std::int64_t>(e, 0));
        for (const std::string& name : in_memory(saved))
            if (grads.contains(name)) return name;
        if (first.empty()) first = saved;
    }
    return "?" + first;
}
}  // namespace

TEST_CASE("every family's parameter gradients match PyTorch autograd (float64)", "[train][backward][grad][reference]") {
    for (const std::string& kind : kFamilies) {
        SECTION(kind) {
            const FamilyCase f = family_case(kind);
            const std::string dir = test::fixture("model/random_" + kind);
            std::ifstream in(dir + "/grad/dparams.json");
            REQUIRE(in.good());
            const nlohmann::json grads = nlohmann::json::parse(in).at("parameters");
            const auto config = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
            const model::Family* fam = model::family_of_hf_type(config.at("model_type").get<std::string>());
            REQUIRE(fam != nullptr);
            Gradients g = backward_of(f);
            std::size_t compared = 0, packed = 0, rows = 0;
            auto check_row = [&](const auto& row, auto& owner, std::int64_t l, std::int64_t e, const std::string& ours) {
                bool has = false;
                row.with_tensor(owner, [&](const auto& t) { has = t.size() > 0; });
                if (!has) return;
                ++rows;
                const std::string name = hf_name_of(row, *fam, l, e, grads);
                // Packed by the family's checkpoints (GPT-2's and GPT-NeoX's q|k|v, Phi-3's q|k|v and gate|up), or
                // an expert's map, which transformers ≥ 5 holds fused in memory (mlp.experts.gate_up_proj).
                if (name.empty() || (name[0] == '?' && e >= 0)) { ++packed; return; }
                INFO(kind << ": " << ours << " has no autograd gradient under " << name);
                REQUIRE(name[0] != '?');
                ++compared;
                const nlohmann::json& ref = grads[name];
                row.with_tensor(owner, [&](const auto& t) {
                    // GPT-2's Conv1D stores a linear map (in × out): HF flat index i·out + o is our (o, i).
                    const bool transposed = fam->hf_conv1d && row.read == model::ParamRead::linear;
                    const std::int64_t out = t.rows(), total = t.size();
                    CHECK(ref.at("shape").get<std::vector<std::int64_t>>().size() == (row.is_matrix() ? 2u : 1u));
                    double max_ours = 0;
                    for (std::int64_t k = 0; k < total; ++k) max_ours = std::max(max_ours, std::abs(t.data()[k]));
                    const double scale = ref.at("max_abs").get<double>();
                    INFO(kind << ": " << ours << " = " << name << ", max |grad| " << max_ours << " (autograd " << scale << ")");
                    CHECK(std::abs(max_ours - scale) <= 1e-5 * scale);
                    for (const auto& entry : ref.at("entries")) {
                        const std::int64_t k = entry[0].get<std::int64_t>();
                        REQUIRE(k < total);
                        const std::int64_t ours_k = transposed ? (k % out) * (total / out) + k / out : k;
                        const double got = t.data()[ours_k], want = entry[1].get<double>();
                        if (!(std::abs(got - want) <= 1e-5 * scale)) {
                            INFO("entry " << k << ": ours " << got << ", autograd " << want);
                            CHECK(std::abs(got - want) <= 1e-5 * scale);
                        }
                    }
                });
            };
            for (const auto& r : model::input_parameters<double>()) check_row(r, g.params, -1, -1, r.name);
            for (std::size_t l = 0; l < g.params.layers.size(); ++l) {
                auto& L = g.params.layers[l];
                for (const auto& r : model::block_parameters<double>())
                    check_row(r, L, std::int64_t(l), -1, model::block_parameter_name(l, r.name));
                for (std::size_t e = 0; e < L.experts.size(); ++e)
                    for (const auto& r : model::expert_parameters<double>())
                        check_row(r, L.experts[e], std::int64_t(l), std::int64_t(e), model::expert_parameter_name(l, e, r.name));
            }
            for (const auto& r : model::output_parameters<double>()) check_row(r, g.params, -1, -1, r.name);
            // Every parameter with a tensor of its own is compared; only the packed ones are not.
            INFO(kind << ": " << compared << " of " << rows << " parameter tensors compared with autograd, " << packed
                      << " packed");
            CHECK(compared + packed == rows);
            CHECK(compared > 0);
        }
    }
}
