// analysis/logit_attribution.hpp and analysis/logit_lens.hpp on every family the model tests load
// (tests/fixtures/model: weights from Hugging Face's own random initialisation), the bundled
// stories260K and, when downloaded, SmolLM2 (in the [reference] group):
//   * the parts sum to the logit (difference) before any soft cap, and the soft cap of that sum is the
//     forward's own logit (difference);
//   * each head's by_source row sums to the head's part; each MoE layer's experts sum to its FFN part;
//   * the lens at the last readout point is the forward's own logits.
// Switches the fixtures lack (post-norm placement, LayerNorm with biases, a sink token, a KV sink with
// gates) run on random configs; DynamicTanh is refused by name. One closed form: a one-layer attention-only
// model whose head parts are computed here by hand from the captured z and the frozen final RMSNorm.
#include <catch2/catch.hpp>

#include "small_llama_fixture.hpp"

#include <cmath>
#include <filesystem>
#include <random>
#include <sinkscope/analysis/logit_attribution.hpp>
#include <sinkscope/analysis/logit_lens.hpp>
#include <sinkscope/io/npy.hpp>
#include <sinkscope/model/load.hpp>
#include <sinkscope/train/init.hpp>

#include "test_paths.hpp"

using namespace sinkscope;
namespace small_llama = sinkscope::test::small_llama;
using small_llama::kTokens;
namespace fs = std::filesystem;

namespace {

std::vector<std::int32_t> fixture_tokens(const std::string& dir) {
    const auto a = io::read_npy<std::int64_t>(dir + "/tokens.npy");
    return std::vector<std::int32_t>(a.data.begin(), a.data.end());
}

// Σ |part|: the scale of the rounding in a sum of the parts (float data, summed in double).
double parts_scale(const analysis::LogitAttribution& a) {
    return std::abs(a.embed) + std::abs(a.pos_embed) + a.heads.cwiseAbs().sum() + a.mlp.cwiseAbs().sum() +
           a.attn_bias.cwiseAbs().sum() + a.mlp_bias.cwiseAbs().sum() + std::abs(a.final_bias);
}

double capped(double x, double cap) { return cap > 0 ? cap * std::tanh(x / cap) : x; }

// Every check of the file header for one model, tokens and position.
void check_attribution(const model::Config& c, const model::Weights<float>& w, const std::vector<std::int32_t>& tokens,
                       std::int64_t position) {
    const model::Mat<float> logits = model::forward(c, w, tokens);
    const std::int64_t t = position < 0 ? std::int64_t(tokens.size()) - 1 : position;
    Eigen::Index top = 0, bottom = 0;
    logits.row(t).maxCoeff(&top);
    logits.row(t).minCoeff(&bottom);
    for (const std::int32_t contrast : {-1, std::int32_t(bottom)}) {
        const auto a = analysis::logit_attribution(c, w, tokens, {std::int32_t(top), contrast, position});
        INFO("position " << t << ", target " << top << ", contrast " << contrast << ": logit " << a.logit << ", parts sum "
                         << a.total() << ", Σ|parts| " << parts_scale(a));
        REQUIRE(a.heads.rows() == c.n_layers);
        REQUIRE(a.heads.cols() == c.n_heads);
        CHECK(std::abs(a.total() - a.logit) <= 1e-5 * std::max(std::abs(a.logit), 1.0));
        // The forward's logit (difference), a float GEMM over all rows, against the soft cap of ℓ. The DLA's
        // forward asks for the pattern, so its attention takes the materialised path: the same numbers up to
        // rounding, not bit for bit.
        const double forward_logit = double(logits(t, top)) - (contrast >= 0 ? double(logits(t, contrast)) : 0.0);
        CHECK(std::abs(a.model_logit - forward_logit) <= 1e-5 * std::max(std::abs(forward_logit), 1.0));
        // The soft cap acts on each logit, not on a difference: ℓ = ℓ_target − ℓ_contrast, each capped alone.
        double uncapped_target = a.logit, uncapped_contrast = 0;
        if (contrast >= 0) {
            uncapped_target = analysis::logit_attribution(c, w, tokens, {std::int32_t(top), -1, position}).logit;
            uncapped_contrast = analysis::logit_attribution(c, w, tokens, {contrast, -1, position}).logit;
            CHECK(std::abs(uncapped_target - uncapped_contrast - a.logit) <= 1e-9 * std::max(std::abs(a.logit), 1.0));
        }
        const double recapped = capped(uncapped_target, c.logit_softcap) - (contrast >= 0 ? capped(uncapped_contrast, c.logit_softcap) : 0.0);
        CHECK(std::abs(recapped - forward_logit) <= 1e-5 * std::max(std::abs(forward_logit), 1.0));
        for (std::int64_t l = 0; l < c.n_layers; ++l) {
            for (std::int64_t h = 0; h < c.n_heads; ++h) {
                const double head = a.heads(l, h), rows = a.by_source.row(l * c.n_heads + h).sum();
                INFO("layer " << l << " head " << h << ": part " << head << ", by_source sum " << rows);
                CHECK(std::abs(rows - head) <= 1e-5 * std::max(a.by_source.row(l * c.n_heads + h).cwiseAbs().sum(), 1e-3));
            }
            if (c.ffn == model::FfnKind::moe) {
                INFO("layer " << l << " FFN part " << a.mlp(l) << ", experts' sum " << a.experts.row(l).sum());
                CHECK(std::abs(a.experts.row(l).sum() - a.mlp(l)) <= 1e-9 * std::max(a.experts.row(l).cwiseAbs().sum(), 1.0));
                CHECK((a.experts.row(l).array() != 0).count() <= c.n_experts_used);
            }
        }
    }
}

// The lens at the last readout point against the forward's logits; its top token and target statistics.
void check_lens(const model::Config& c, const model::Weights<float>& w, const std::vector<std::int32_t>& tokens) {
    const model::Mat<float> logits = model::forward(c, w, tokens);
    const std::int64_t T = logits.rows(), last = T - 1;
    Eigen::Index top = 0;
    logits.row(last).maxCoeff(&top);
    const auto lens = analysis::logit_lens(c, w, tokens, {3, std::int32_t(top)});
    REQUIRE(std::int64_t(lens.points.size()) == c.n_layers + 1);
    CHECK(lens.points.back() == model::hook_name("resid_post", c.n_layers - 1));
    CHECK(lens.logits == logits);
    // The lens logits of the final residual: the same final norm and unembedding as the forward.
    model::HookSet<float> hooks;
    model::ActivationCache<float> cache;
    cache.attach(hooks, {lens.points.back()});
    model::forward(c, w, tokens, &hooks);
    const auto& x = cache[lens.points.back()];
    const std::int64_t sink = c.attention == model::AttentionKind::sink_token ? 1 : 0;
    const model::Mat<float> resid = Eigen::Map<const model::Mat<float>>(x.data.data(), T + sink, c.d_model).bottomRows(T);
    const model::Mat<float> z = analysis::lens_logits(c, w, resid);
    const double diff = (z - logits).cwiseAbs().maxCoeff(), scale = logits.cwiseAbs().maxCoeff();
    INFO("lens at the last point vs the forward's logits: max |Δ| " << diff << " of max |logit| " << scale);
    CHECK(diff <= 1e-6 * scale);
    const std::int64_t R = c.n_layers;
    CHECK(lens.top_tokens[std::size_t(lens.index(R, last) * 3)] == std::int32_t(top));
    CHECK(lens.target_rank[std::size_t(lens.index(R, last))] == 0);
    CHECK(lens.target_logit[std::size_t(lens.index(R, last))] == Approx(logits(last, top)).epsilon(1e-6));
    // Probabilities: sorted, in (0, 1], the top one of the last point that of the forward's softmax.
    const double m = logits.row(last).maxCoeff();
    const double p_top = 1 / (logits.row(last).cast<double>().array() - m).exp().sum();
    CHECK(lens.top_probs[std::size_t(lens.index(R, last) * 3)] == Approx(p_top).epsilon(1e-5));
    for (std::int64_t r = 0; r <= R; ++r)
        for (std::int64_t t = 0; t < T; ++t) {
            const float* p = &lens.top_probs[std::size_t(lens.index(r, t) * 3)];
            CHECK((p[0] >= p[1] && p[1] >= p[2] && p[2] > 0 && p[0] <= 1));
            CHECK(lens.target_prob[std::size_t(lens.index(r, t))] <= p[0]);
        }
}

// A config's random weights (train::init_weights), then every parameter moved off its initial value, so
// norm gains and biases are not 1 and 0.
model::Weights<float> jittered_weights(const model::Config& c, std::uint64_t seed) {
    auto w = train::init_weights<float>(c, seed, {0.3, false});
    std::mt19937 rng(static_cast<std::uint32_t>(seed));
    std::normal_distribution<float> nd(0.f, 0.2f);
    model::visit_parameters(w, [&](const std::string& name, auto& t) {
        if (name.find("alpha") != std::string::npos) return;
        for (std::int64_t i = 0; i < t.size(); ++i) t.data()[i] += nd(rng);
    });
    return w;
}

}  // namespace

TEST_CASE("DLA parts sum to the logit and the lens ends at the logits on every family fixture", "[analysis][dla]") {
    for (const char* kind : {"llama", "mistral", "qwen2", "qwen3", "gpt2", "gemma2", "gemma3", "phi3", "olmo2", "gpt_neox",
                             "mixtral", "olmoe", "llama31"}) {
        SECTION(kind) {
            const std::string dir = test::fixture(std::string("model/random_") + kind);
            const auto m = model::load_model<float>(dir);
            const auto tokens = fixture_tokens(dir);
            check_attribution(m.config, m.weights, tokens, -1);
            check_attribution(m.config, m.weights, tokens, std::int64_t(tokens.size()) / 2);
            check_lens(m.config, m.weights, tokens);
        }
    }
}

TEST_CASE("DLA and the lens on stories260K", "[analysis][dla]") {
    const auto stories = model::load_model<float>(test::shared_model("stories260K.gguf"));
    const auto tokens = fixture_tokens(test::fixture("model/stories260K"));
    check_attribution(stories.config, stories.weights, tokens, -1);
    check_lens(stories.config, stories.weights, tokens);
}

// Tagged [reference] with the other SmolLM2 tests: loading it to float32 and 31 lens readouts over a
// 49,152-token vocabulary take seconds, not the unit group's milliseconds.
TEST_CASE("DLA and the lens on SmolLM2", "[analysis][dla][reference]") {
    const std::string path = test::downloaded_model("SmolLM2-135M-Instruct.Q4_1.gguf");
    if (!fs::exists(path)) { WARN("SmolLM2 skipped: " << path << " absent (scripts/fetch_model.sh fetches it)"); return; }
    const auto m = model::load_model<float>(path);
    auto smol = fixture_tokens(test::fixture("model/smollm2"));
    smol.resize(std::min<std::size_t>(smol.size(), 12));
    check_attribution(m.config, m.weights, smol, -1);
    check_lens(m.config, m.weights, smol);
    // The first position of SmolLM2 is its sink: what it writes through every head, as one number.
    const auto a = analysis::logit_attribution(m.config, m.weights, smol, {100, -1, -1});
    CHECK(a.sources == std::int64_t(smol.size()));
    CHECK(std::isfinite(a.by_source.col(0).sum()));
}

TEST_CASE("DLA with the switches the fixtures lack", "[analysis][dla]") {
    SECTION("post-norm LayerNorm with biases and learned positions") {
        auto c = small_llama::config();
        c.norm = model::NormKind::layernorm; c.norm_bias = true; c.norm_placement = model::NormPlacement::post;
        c.positions = model::PositionKind::learned; c.ffn = model::FfnKind::gelu; c.activation = model::Activation::gelu_tanh;
        c.qkv_bias = c.out_bias = c.mlp_bias = true;
        const auto w = jittered_weights(c, 1);
        check_attribution(c, w, kTokens, -1);
        check_attribution(c, w, kTokens, 2);
        check_lens(c, w, kTokens);
        const auto a = analysis::logit_attribution(c, w, kTokens, {1, -1, -1});
        CHECK(a.pos_embed != 0);
        CHECK(a.final_bias == 0);  // post-norm: no final norm
        CHECK(a.mlp_bias.cwiseAbs().sum() > 0);
    }
    SECTION("a sink token") {
        auto c = small_llama::config();
        c.attention = model::AttentionKind::sink_token;
        const auto w = jittered_weights(c, 2);
        check_attribution(c, w, kTokens, -1);
        check_lens(c, w, kTokens);
        const auto a = analysis::logit_attribution(c, w, kTokens, {1, -1, 3});
        CHECK(a.sources == std::int64_t(kTokens.size()) + 1);
        CHECK(a.by_source.col(0).cwiseAbs().sum() > 0);         // the sink token is a source
        CHECK(a.by_source.rightCols(4).cwiseAbs().sum() == 0);  // keys after position 3 (rows 5…8) are masked
    }
    SECTION("a KV sink, per-channel gates and sandwich norms") {
        auto c = small_llama::config();
        c.attention = model::AttentionKind::kv_bias; c.gate = model::GateKind::per_channel;
        c.norm_placement = model::NormPlacement::sandwich;
        const auto w = jittered_weights(c, 3);
        check_attribution(c, w, kTokens, -1);
        check_lens(c, w, kTokens);
        const auto a = analysis::logit_attribution(c, w, kTokens, {1, -1, -1});
        CHECK(a.sources == std::int64_t(kTokens.size()) + 1);
        CHECK(a.by_source.col(a.sources - 1).cwiseAbs().sum() > 0);  // the learnable slot's value
    }
    SECTION("per-head gates, output norms, a linear FFN") {
        auto c = small_llama::config();
        c.gate = model::GateKind::per_head; c.norm_placement = model::NormPlacement::output; c.ffn = model::FfnKind::linear;
        const auto w = jittered_weights(c, 4);
        check_attribution(c, w, kTokens, -1);
        check_lens(c, w, kTokens);
    }
    SECTION("DynamicTanh is refused by name") {
        auto c = small_llama::config();
        c.norm = model::NormKind::dynamic_tanh;
        const auto w = jittered_weights(c, 5);
        CHECK_THROWS_WITH(analysis::logit_attribution(c, w, kTokens, {1, -1, -1}), Catch::Contains("dynamic_tanh"));
        check_lens(c, w, kTokens);  // the lens needs no decomposition
    }
}

TEST_CASE("DLA of a one-layer attention-only model by hand", "[analysis][dla]") {
    // x = e + Σ_h z_h W_O,hᵀ; ℓ = RMSNorm(x)·W_U[v] = Σ_i x_i r g_i W_U[v, i], r = 1/√(mean(x²) + ε).
    auto c = small_llama::config();
    c.n_layers = 1; c.ffn = model::FfnKind::none;
    const auto w = jittered_weights(c, 6);
    model::HookSet<float> hooks;
    model::ActivationCache<float> cache;
    cache.attach(hooks, {"hook_embed", "blocks.0.attn.hook_z"});
    model::forward(c, w, kTokens, &hooks);
    const std::int64_t t = 5, d = c.d_model, dh = c.head_dim;
    const std::int32_t v = 7;
    Eigen::VectorXd e(d), x(d);
    for (std::int64_t i = 0; i < d; ++i) e(i) = cache["hook_embed"].data[std::size_t(t * d + i)];
    std::vector<Eigen::VectorXd> head(std::size_t(c.n_heads), Eigen::VectorXd::Zero(d));
    for (std::int64_t h = 0; h < c.n_heads; ++h)
        for (std::int64_t i = 0; i < d; ++i)
            for (std::int64_t j = 0; j < dh; ++j)
                head[std::size_t(h)](i) += double(cache["blocks.0.attn.hook_z"].data[std::size_t(t * c.n_heads * dh + h * dh + j)]) *
                                           double(w.layers[0].wo(i, h * dh + j));
    x = e;
    for (const auto& hv : head) x += hv;
    const double r = 1 / std::sqrt(x.squaredNorm() / double(d) + c.norm_eps);
    auto part = [&](const Eigen::VectorXd& y) {
        double s = 0;
        for (std::int64_t i = 0; i < d; ++i) s += y(i) * r * double(w.final_norm.weight(i)) * double(w.output_head()(v, i));
        return s;
    };
    // r here comes from x summed in double, the DLA's from the forward's float residual: 1e-6 is float rounding.
    const auto a = analysis::logit_attribution(c, w, kTokens, {v, -1, t});
    CHECK(a.embed == Approx(part(e)).epsilon(1e-6));
    for (std::int64_t h = 0; h < c.n_heads; ++h) CHECK(a.heads(0, h) == Approx(part(head[std::size_t(h)])).epsilon(1e-6));
    CHECK(a.total() == Approx(part(x)).epsilon(1e-6));
    CHECK(a.mlp(0) == 0);
    CHECK(a.bias() == 0);
}
