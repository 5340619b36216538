// train/model_backward.hpp: the backward pass through every family sinkscope loads, on the families'
// Hugging Face fixtures (tests/fixtures/model/random_<kind>): loaded as a user loads them, cast to double,
// differentiated. Two peers: central differences of the loss in double (every parameter tensor, a few
// entries each), and PyTorch autograd on the same weights and tokens (scripts/make_gradient_fixtures.py
// writes random_<kind>/grad/): the gradient at every block's input, of the token embedding, and sampled
// entries of every parameter tensor transformers holds (dparams.json), fused ones sliced as the loader does.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <set>
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
// Where transformers' in-memory name differs from the checkpoint's: GPT-2's modules under "transformer." (the
// prefix the loader accepts too), GPT-NeoX's head, saved as embed_out and held as lm_head.
std::vector<std::string> in_memory_names(const std::string& saved) {
    std::vector<std::string> names = {saved, "transformer." + saved};
    if (saved == "embed_out.weight") names.push_back("lm_head.weight");
    return names;
}

// The name under which autograd reported the tensor a TensorNames entry names in block l, expert e, or "".
std::string autograd_name(const std::string& pattern, std::int64_t l, std::int64_t e, const nlohmann::json& grads) {
    if (pattern.empty()) return "";
    for (const std::string& alt : model::detail::alternatives(pattern))
        for (const std::string& name : in_memory_names(model::detail::layer_name(alt, std::max<std::int64_t>(l, 0), std::max<std::int64_t>(e, 0))))
            if (grads.contains(name)) return name;
    return "";
}

template <class Table>
const auto& row_named(const Table& table, const std::string& name) {
    for (const auto& r : table)
        if (name == r.name) return r;
    FAIL("no parameter row " << name);
    return table.front();
}

// One autograd tensor as ours: our gradient at its flat index k, the largest |entry| of ours it holds, and
// the names of our parameters it holds.
struct Resolved {
    std::function<double(std::int64_t)> at;
    double max_abs = 0;
    std::vector<std::string> ours;
};

double max_abs_of(const Mat<double>& m) { return m.size() ? m.cwiseAbs().maxCoeff() : 0.0; }
double max_abs_of(const model::Vec<double>& v) { return v.size() ? v.cwiseAbs().maxCoeff() : 0.0; }
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
            const model::TensorNames& names = fam->hf;
            const model::Config& c = f.config;
            Gradients g = backward_of(f);

            // Each autograd tensor resolved to ours: a parameter of its own, or one packing of several.
            std::map<std::string, Resolved> resolved;
            std::set<std::string> ours_all;
            auto own_tensor = [&](const auto& row, auto& owner, std::int64_t l, std::int64_t e, const std::string& ours) {
                row.with_tensor(owner, [&](const auto& t) {
                    if (t.size() == 0) return;
                    ours_all.insert(ours);
                    const std::string name = row.key ? autograd_name(names.*row.key, l, e, grads) : "";
                    if (name.empty()) return;
                    // GPT-2's Conv1D stores a linear map (in × out): HF flat index i·out + o is our (o, i).
                    const bool conv1d = fam->hf_conv1d && row.read == model::ParamRead::linear;
                    const std::int64_t out = t.rows(), cols = t.size() / out;
                    const double* data = t.data();
                    resolved[name] = {[=](std::int64_t k) { return data[conv1d ? (k % out) * cols + k / out : k]; },
                                      max_abs_of(t), {ours}};
                });
            };
            for (const auto& r : model::input_parameters<double>()) own_tensor(r, g.params, -1, -1, r.name);
            for (const auto& r : model::output_parameters<double>()) own_tensor(r, g.params, -1, -1, r.name);
            for (std::size_t l = 0; l < g.params.layers.size(); ++l) {
                auto& L = g.params.layers[l];
                const auto li = std::int64_t(l);
                for (const auto& r : model::block_parameters<double>()) own_tensor(r, L, li, -1, model::block_parameter_name(l, r.name));
                for (std::size_t e = 0; e < L.experts.size(); ++e)
                    for (const auto& r : model::expert_parameters<double>())
                        own_tensor(r, L.experts[e], li, std::int64_t(e), model::expert_parameter_name(l, e, r.name));
                // Packed q|k|v (and its bias) and gate|up: the parts' rows one after another, or head by head
                // (GPT-NeoX: head h holds its d_h rows of each part in turn); GPT-2's Conv1D transposed.
                for (const model::Packing& p : model::block_packings()) {
                    for (const bool bias : {false, true}) {
                        if (bias && p.bias_key == nullptr) continue;
                        const std::string name = autograd_name(names.*(bias ? p.bias_key : p.key), li, -1, grads);
                        if (name.empty()) continue;
                        std::vector<const double*> parts;
                        std::vector<std::int64_t> rows;
                        std::int64_t cols = 1, total = 0;
                        Resolved r;
                        for (const std::string& part : bias ? p.bias_parts : p.parts) {
                            row_named(model::block_parameters<double>(), part).with_tensor(L, [&](const auto& t) {
                                parts.push_back(t.data());
                                rows.push_back(t.rows());
                                cols = t.cols();
                                total += t.rows();
                                r.max_abs = std::max(r.max_abs, max_abs_of(t));
                            });
                            r.ours.push_back(model::block_parameter_name(l, part.c_str()));
                        }
                        const bool per_head = p.per_head_layout && fam->hf_fused == model::FusedQkv::per_head;
                        const bool conv1d = fam->hf_conv1d && !bias;
                        const std::int64_t dh = c.head_dim, P = std::int64_t(parts.size());
                        r.at = [=](std::int64_t k) {
                            std::int64_t row = conv1d ? k % total : k / cols;
                            const std::int64_t col = conv1d ? k / total : k % cols;
                            std::size_t i = 0;
                            if (per_head) {
                                i = std::size_t((row / dh) % P);
                                row = row / (P * dh) * dh + row % dh;
                            } else {
                                while (row >= rows[i]) row -= rows[i++];
                            }
                            return parts[i][row * cols + col];
                        };
                        resolved[name] = r;
                    }
                }
                // The experts stacked per projection, (E, rows of the parts, cols), as transformers ≥ 5 holds them.
                for (const model::Packing& p : model::expert_packings()) {
                    const std::string name = autograd_name(names.*p.key, li, -1, grads);
                    if (name.empty() || L.experts.empty()) continue;
                    std::vector<std::int64_t> rows;
                    std::int64_t cols = 0, per = 0;
                    Resolved r;
                    for (const std::string& part : p.parts) {
                        const auto& row = row_named(model::expert_parameters<double>(), part);
                        rows.push_back(row.rows(c));
                        cols = row.cols(c);
                        per += rows.back();
                        for (std::size_t e = 0; e < L.experts.size(); ++e) {
                            row.with_tensor(L.experts[e], [&](const auto& t) { r.max_abs = std::max(r.max_abs, max_abs_of(t)); });
                            r.ours.push_back(model::expert_parameter_name(l, e, part.c_str()));
                        }
                    }
                    const auto* experts = &L.experts;
                    const std::vector<std::string> part_names = p.parts;
                    r.at = [=](std::int64_t k) {
                        const std::int64_t e = k / (per * cols);
                        std::int64_t row = k % (per * cols) / cols;
                        const std::int64_t col = k % cols;
                        std::size_t i = 0;
                        while (row >= rows[i]) row -= rows[i++];
                        double v = 0;
                        row_named(model::expert_parameters<double>(), part_names[i]).with_tensor(
                            (*experts)[std::size_t(e)], [&](const auto& t) { v = t.data()[row * cols + col]; });
                        return v;
                    };
                    resolved[name] = r;
                }
            }

            // Every autograd tensor is one of ours, agrees at its sampled entries, and every parameter of ours
            // is in some autograd tensor.
            std::set<std::string> covered;
            double worst = 0;
            for (auto it = grads.begin(); it != grads.end(); ++it) {
                INFO(kind << ": autograd's " << it.key());
                REQUIRE(resolved.count(it.key()));
                const Resolved& r = resolved.at(it.key());
                covered.insert(r.ours.begin(), r.ours.end());
                const double scale = it.value().at("max_abs").get<double>();
                CHECK(std::abs(r.max_abs - scale) <= 1e-5 * scale);
                for (const auto& entry : it.value().at("entries")) {
                    const double got = r.at(entry[0].get<std::int64_t>()), want = entry[1].get<double>();
                    worst = std::max(worst, std::abs(got - want) / scale);
                    if (!(std::abs(got - want) <= 1e-5 * scale)) {
                        INFO("entry " << entry[0] << ": ours " << got << ", autograd " << want);
                        CHECK(std::abs(got - want) <= 1e-5 * scale);
                    }
                }
            }
            INFO(kind << ": " << grads.size() << " autograd tensors, worst entry error " << worst << " of the tensor's largest");
            CHECK(covered == ours_all);
        }
    }
}
