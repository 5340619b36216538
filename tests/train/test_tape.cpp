// train/tape.hpp against its peer, the hooked forward: the tape is recorded through the model's own hooks,
// so every activation it keeps must equal what an ActivationCache captures from a plain model::forward of the
// same tokens (double, float products: equal up to the forward's own rounding when the hooks differ), in every
// norm placement, with a sink token and in parallel blocks; and the finite-value check must name the first
// hook where a NaN appears, as each FiniteCheck mode promises.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <sinkscope/model/forward.hpp>
#include <sinkscope/model/load.hpp>
#include <sinkscope/train/tape.hpp>

#include "test_paths.hpp"
#include "train/train_test_util.hpp"

using namespace sinkscope;
using model::Config;

namespace {

using Cache = std::map<std::string, model::Captured<double>>;

Cache every_hook(const Config& c, const model::Weights<double>& w, const std::vector<std::int32_t>& tokens) {
    model::HookSet<double> hooks;
    model::ActivationCache<double> cache;
    cache.attach(hooks, [](const std::string&) { return true; });
    model::forward(c, w, tokens, &hooks);
    return cache.all();
}

// max |a − b| over max(1, max |b|): the tape's copy against the cache's
double relative_difference(const model::Mat<double>& a, const Cache& cache, const std::string& name) {
    const auto found = cache.find(name);
    REQUIRE(found != cache.end());
    const auto& b = found->second.data;
    REQUIRE(std::size_t(a.size()) == b.size());
    double diff = 0, scale = 1;
    for (std::size_t i = 0; i < b.size(); ++i) {
        diff = std::max(diff, std::abs(a.data()[i] - b[i]));
        scale = std::max(scale, std::abs(b[i]));
    }
    return diff / scale;
}

void check_tape_matches_forward(const Config& c, const model::Weights<double>& w, const std::vector<std::int32_t>& tokens) {
    train::TapeRecorder<double> recorder(c, train::FiniteCheck::all);
    recorder.keep_bf16_operands(false);
    const train::Tape<double>& tape = recorder.record(w, tokens);
    const Cache cache = every_hook(c, w, tokens);
    const std::int64_t sink = c.attention == model::AttentionKind::sink_token ? 1 : 0;
    CHECK(tape.sink == sink);
    CHECK(tape.n == std::int64_t(tokens.size()) + sink);
    CHECK(tape.tokens == tokens);
    CHECK(tape.nonfinite.empty());
    constexpr double tol = 1e-12;
    for (std::int64_t l = 0; l < c.n_layers; ++l) {
        const model::BlockNames names(l);
        const train::LayerTape<double>& t = tape.layers[std::size_t(l)];
        INFO("block " << l);
        CHECK(relative_difference(t.resid_pre, cache, names[model::HookId::resid_pre]) <= tol);
        CHECK(relative_difference(t.pattern, cache, names[model::HookId::pattern]) <= tol);
        CHECK(relative_difference(t.z.value, cache, names[model::HookId::z]) <= tol);
        if (!c.parallel_residual) CHECK(relative_difference(t.resid_mid, cache, names[model::HookId::resid_mid]) <= tol);
        if (c.norm_placement == model::NormPlacement::post) {
            CHECK(relative_difference(t.attn_out, cache, names[model::HookId::attn_out]) <= tol);
            CHECK(relative_difference(t.mlp_out, cache, names[model::HookId::mlp_out]) <= tol);
        }
    }
    CHECK(relative_difference(tape.final_in, cache, model::BlockNames(c.n_layers - 1)[model::HookId::resid_post]) <= tol);
    CHECK(relative_difference(tape.logits, cache, "logits") <= tol);
}

}  // namespace

TEST_CASE("tape: every kept activation equals the hooked forward's", "[train][tape]") {
    SECTION("pre-norm (tiny Llama)") {
        const Config c = test::tiny_llama_config();
        check_tape_matches_forward(c, test::random_test_weights<double>(c, 21), test::random_tokens(7, c.vocab_size, 22));
    }
    SECTION("post-norm") {
        Config c = test::tiny_llama_config();
        c.norm_placement = model::NormPlacement::post;
        check_tape_matches_forward(c, test::random_test_weights<double>(c, 23), test::random_tokens(7, c.vocab_size, 24));
    }
    SECTION("sink token") {
        Config c = test::tiny_llama_config();
        c.attention = model::AttentionKind::sink_token;
        check_tape_matches_forward(c, test::random_test_weights<double>(c, 25), test::random_tokens(6, c.vocab_size, 26));
    }
    for (const char* kind : {"gemma2", "olmo2", "gpt_neox", "mixtral"}) {
        SECTION(kind) {
            const auto m = model::load_model<float>(test::fixture(std::string("model/random_") + kind));
            check_tape_matches_forward(m.config, model::cast_weights<double>(m.weights), test::random_tokens(6, m.config.vocab_size, 27));
        }
    }
}

TEST_CASE("tape: the finite check names the first hook a NaN reaches, in each mode", "[train][tape]") {
    // A NaN in one entry of block 1's W_V: the values of block 1 are the first activation that holds it.
    const Config c = test::tiny_llama_config();
    auto w = test::random_test_weights<double>(c, 28);
    w.layers[1].wv(0, 0) = std::numeric_limits<double>::quiet_NaN();
    const auto tokens = test::random_tokens(5, c.vocab_size, 29);
    const model::BlockNames block1(1);
    auto first_nonfinite = [&](train::FiniteCheck mode) {
        train::TapeRecorder<double> recorder(c, mode);
        return recorder.record(w, tokens).nonfinite;
    };
    // ::all checks every saved activation: the values themselves
    CHECK(first_nonfinite(train::FiniteCheck::all) == block1[model::HookId::v]);
    // ::sentinels checks the residual stream around each sub-block: the first it reaches is block 1's resid_mid
    CHECK(first_nonfinite(train::FiniteCheck::sentinels) == block1[model::HookId::resid_mid]);
    CHECK(first_nonfinite(train::FiniteCheck::none).empty());
    // and a clean model passes every mode
    const auto clean = test::random_test_weights<double>(c, 28);
    train::TapeRecorder<double> recorder(c, train::FiniteCheck::all);
    CHECK(recorder.record(clean, tokens).nonfinite.empty());
}
