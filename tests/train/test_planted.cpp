// train/planted.hpp: the planted massive activation (theory/planted_massive.md) checked against independent
// computation: the forward's residual states (Sun et al.'s criterion from analysis/spikes.hpp, applied here),
// the quadratic form of the step-up FFN (theory/quadratic_ffn.hpp), the twin, the doses, and the layouts the
// construction refuses.
#include <catch2/catch.hpp>

#include <sinkscope/analysis/spike_trace.hpp>
#include <sinkscope/theory/quadratic_ffn.hpp>
#include <sinkscope/train/planted.hpp>

#include "train/train_test_util.hpp"

using namespace sinkscope;

namespace {

std::vector<std::vector<std::int32_t>> random_sequences(const model::Config& c, int n, std::int64_t T, std::uint64_t seed) {
    train::Rng rng(seed);
    std::vector<std::vector<std::int32_t>> out(std::size_t(n), std::vector<std::int32_t>(static_cast<std::size_t>(T)));
    for (auto& s : out) for (auto& t : s) t = std::int32_t(rng.below(std::uint64_t(c.vocab_size)));
    return out;
}

// Massive entries (Sun et al.) of every residual state H_0 … H_2L of one sequence, as (state, position, channel).
struct Massive { std::int64_t state, position, channel; };
std::vector<Massive> massive_in_states(const model::Config& c, const model::Weights<float>& w, const std::vector<std::int32_t>& s) {
    const auto st = analysis::residual_states(c, w, s);
    std::vector<Massive> out;
    for (std::size_t i = 0; i < st.size(); ++i)
        for (const auto& e : analysis::massive_entries(st[i].data(), std::int64_t(s.size()), c.d_model))
            out.push_back({std::int64_t(i), e.position, e.channel});
    return out;
}

model::Config guo_layout() {
    model::Config c = train::planted_default_config();
    c.norm = model::NormKind::layernorm; c.norm_bias = true;
    c.positions = model::PositionKind::learned;
    c.ffn = model::FfnKind::gelu; c.activation = model::Activation::gelu_erf; c.d_ff = 4 * c.d_model;
    c.tied_embeddings = false;
    return c;
}

}  // namespace

TEST_CASE("planted massive: |x[0, c*]| is massive from the step-up to the step-down, and nowhere else", "[train][planted][property]") {
    for (const model::Config& c : {train::planted_default_config(), guo_layout()}) {
        INFO(c.describe());
        train::PlantedOptions o;
        const auto pm = train::planted_massive_plan(c, o);
        const auto& p = pm.plan;
        const std::int64_t S = p.step_up_layer, D = p.step_down_layer;
        CHECK(D == c.n_layers - 1);
        for (const auto& s : random_sequences(c, 4, 32, 17)) {
            const auto m = massive_in_states(c, pm.weights, s);
            // H_i is massive at (0, c*) exactly for the states after sub-block 2S+2 and before 2D+2.
            for (std::int64_t i = 0; i <= 2 * c.n_layers; ++i) {
                const bool expected = i >= 2 * S + 2 && i < 2 * D + 2;
                const bool seen = std::any_of(m.begin(), m.end(), [&](const Massive& e) {
                    return e.state == i && e.position == 0 && e.channel == p.channel; });
                INFO("state H_" << i);
                CHECK(seen == expected);
            }
            // No other position or channel (a repeated prefix of one token would spike too: not in these sequences).
            for (const auto& e : m) { CHECK(e.position == 0); CHECK(e.channel == p.channel); }
            // Independent of the library's criterion: the numbers themselves after block S.
            const auto st = analysis::residual_states(c, pm.weights, s);
            const auto& h = st[std::size_t(2 * S + 2)];
            const double x = std::abs(h[std::size_t(p.channel)]);
            const double med = analysis::median_abs(h.data(), std::int64_t(h.size()));
            CHECK(x > 100);
            CHECK(x >= 1000 * med);
            CHECK(x == Approx(p.magnitude).epsilon(0.02));
            // The step-down cancels it: the last state's |x[0, c*]| is back at the background's scale.
            CHECK(std::abs(st.back()[std::size_t(p.channel)]) < 10 * analysis::median_abs(st.back().data(), std::int64_t(st.back().size())));
        }
    }
}

TEST_CASE("planted massive: the twin differs in one weight and has no massive activation", "[train][planted][property]") {
    for (const model::Config& c : {train::planted_default_config(), guo_layout()}) {
        INFO(c.describe());
        train::PlantedOptions o;
        const auto on = train::planted_massive_plan(c, o);
        o.mechanism_on = false;
        const auto off = train::planted_massive_plan(c, o);
        // One switch: the step-up unit's W_down column (one entry for SwiGLU, two for the GELU pair).
        const auto differing = test::differing_parameter_entries(on.weights, off.weights);
        for (const auto& name : differing) CHECK(name == "blocks." + std::to_string(on.plan.step_up_layer) + ".mlp.W_out");
        CHECK(differing.size() == (c.ffn == model::FfnKind::gelu ? 2u : 1u));
        for (const auto& s : random_sequences(c, 4, 32, 23)) CHECK(massive_in_states(c, off.weights, s).empty());
    }
}

TEST_CASE("planted massive: the dose scales the spike; dose 1 meets Sun's criterion with the margin", "[train][planted][property]") {
    const model::Config c = train::planted_default_config();
    const auto s = random_sequences(c, 1, 32, 5)[0];
    for (double dose : {0.0, 0.25, 0.5, 1.0}) {
        train::PlantedOptions o;
        o.dose = dose;
        const auto pm = train::planted_massive_plan(c, o);
        INFO("dose " << dose);
        CHECK(pm.plan.magnitude == Approx(dose * pm.plan.magnitude_dose1));
        const auto st = analysis::residual_states(c, pm.weights, s);
        const auto& h = st[2];
        const double x = h[std::size_t(pm.plan.channel)], med = analysis::median_abs(h.data(), std::int64_t(h.size()));
        CHECK(x == Approx(pm.plan.magnitude).margin(1.0));
        if (dose == 1.0) CHECK(x >= 1.5 * 1000 * med);                 // margin 2 over the probe's largest median
        if (dose <= 0.25) CHECK_FALSE(analysis::is_massive(std::abs(x), med));
    }
}

TEST_CASE("planted massive: the step-up's quadratic form has lambda* = m beta^2 along the marker", "[train][planted][property]") {
    // theory/quadratic_ffn.md: U_k = sum_i W_down[k,i] W_gate[i,:]^T W_up[i,:]; the planted unit adds m beta^2 e_u e_u^T to U_{c*}.
    const model::Config c = train::planted_default_config();
    const auto pm = train::planted_massive_plan(c, {});
    const auto& p = pm.plan;
    const auto& L = pm.weights.layers[std::size_t(p.step_up_layer)];
    const theory::SwiGluWeights<float> ffn(L.w_gate, L.w_up, L.w_down);
    theory::SpectrumOptions so;
    so.nev = 3;
    so.dense = true;
    const auto sp = theory::channel_spectrum(ffn, p.channel, so);
    CHECK(sp.lambda_star() == Approx(p.lambda_star).epsilon(1e-3));
    CHECK(std::abs(sp.s_star()(p.marker_channel)) > 0.9999);
    CHECK(std::abs(sp.eigenvalues[0] / sp.eigenvalues[1]) > 1e3);
    const auto n = theory::channel_frobenius_norms(ffn);
    const auto big = theory::detect_spike_channels(n, 10.0);
    CHECK(std::find(big.begin(), big.end(), p.channel) != big.end());
    // The rank-one prediction on position 0's FFN input: lambda* (s*^T h)^2 against the forward's mlp_out.
    model::HookSet<float> hooks;
    model::ActivationCache<float> cache;
    const std::string hn = model::hook_name("normalized2", p.step_up_layer), ho = model::hook_name("mlp_out", p.step_up_layer);
    cache.attach(hooks, std::vector<std::string>{hn, ho});
    model::forward(c, pm.weights, random_sequences(c, 1, 16, 9)[0], &hooks, model::ForwardOptions{false, p.step_up_layer});
    const double hu = cache[hn].data[std::size_t(p.marker_channel)];
    const double f = cache[ho].data[std::size_t(p.channel)];
    CHECK(double(sp.lambda_star()) * hu * hu == Approx(f).epsilon(1e-3));
}

TEST_CASE("planted massive: the locator finds the planted layers and channel", "[train][planted][property]") {
    const model::Config c = train::planted_default_config();
    const auto pm = train::planted_massive_plan(c, {});
    const auto tr = analysis::trace_spike(c, pm.weights, random_sequences(c, 4, 16, 3));
    CHECK(tr.found);
    CHECK(tr.channel == pm.plan.channel);
    CHECK(tr.position == 0);
    CHECK(tr.steps.step_up == std::vector<std::int64_t>{2 * pm.plan.step_up_layer + 2});
    CHECK(tr.steps.step_down == std::vector<std::int64_t>{2 * pm.plan.step_down_layer + 2});
    CHECK(tr.steps.in_between_ratio < 1e-3);
}

TEST_CASE("planted massive: an unsupported layout is an Error naming the switch", "[train][planted]") {
    auto message = [](const model::Config& c) {
        try { train::planted_massive(c, {}); } catch (const Error& e) { return std::string(e.what()); }
        return std::string("no error");
    };
    model::Config c = train::planted_default_config();
    c.ffn = model::FfnKind::linear;
    CHECK_THAT(message(c), Catch::Contains("ffn 'linear'"));
    c = train::planted_default_config();
    c.norm = model::NormKind::dynamic_tanh;
    CHECK_THAT(message(c), Catch::Contains("norm 'dynamic_tanh'"));
    c = train::planted_default_config();
    c.norm_placement = model::NormPlacement::sandwich;
    CHECK_THAT(message(c), Catch::Contains("norm_placement 'sandwich'"));
    c = train::planted_default_config();
    c.attention = model::AttentionKind::softmax_off_by_one;
    CHECK_THAT(message(c), Catch::Contains("attention 'softmax_off_by_one'"));
    c = train::planted_default_config();
    c.n_kv_heads = 1;   // SmolLM2-style grouped-query attention: kv_dim 16 < d - 1
    CHECK_THAT(message(c), Catch::Contains("n_kv_heads * head_dim"));
    c = train::planted_default_config();
    c.gate = model::GateKind::per_head;
    CHECK_THAT(message(c), Catch::Contains("gate 'per_head'"));
    c = train::planted_default_config();
    c.parallel_residual = true;
    CHECK_THAT(message(c), Catch::Contains("parallel_residual"));
}
