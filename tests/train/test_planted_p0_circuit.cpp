// train/planted_p0_circuit.hpp: the planted position-0 circuit (theory/planted_p0_circuit.md) checked against
// the forward with knockouts (model/interventions.hpp): the spike at position 0 only, removed by each block of
// the circuit, kept by every single head (redundant) but not by the twin's head 0, in both supported layouts;
// the twin's one differing map; the exact square of a SwiGLU pair; the refused layouts.
#include <catch2/catch.hpp>

#include <sinkscope/analysis/spikes.hpp>
#include <sinkscope/model/interventions.hpp>
#include <sinkscope/train/planted_p0_circuit.hpp>

#include "train/train_test_util.hpp"

using namespace sinkscope;

namespace {

// T random token ids of c's vocabulary (train_test_util.hpp's random_tokens).
std::vector<std::int32_t> random_sequence(const model::Config& c, std::int64_t T, std::uint64_t seed) {
    return test::random_tokens(T, c.vocab_size, seed);
}

// x after block 2 (the A2 rule's reading) at channel c*, every position, with an optional knockout.
std::vector<double> spike_channel(const model::Config& c, const model::Weights<float>& w, const std::vector<std::int32_t>& s,
                                  std::int64_t cs, const std::function<void(model::HookSet<float>&)>& knock = {}) {
    model::HookSet<float> hooks;
    if (knock) knock(hooks);
    std::vector<double> out;
    hooks.add(model::hook_name("resid_post", 2), [&](const std::string&, model::ActivationRef<float>& x) {
        for (std::int64_t t = 0; t < x.shape[0]; ++t) out.push_back(x.data[t * c.d_model + cs]);
    });
    model::forward(c, w, s, &hooks, model::ForwardOptions{false, 2});
    return out;
}

double max_abs_after(const std::vector<double>& x, std::size_t from) {
    double m = 0;
    for (std::size_t i = from; i < x.size(); ++i) m = std::max(m, std::abs(x[i]));
    return m;
}

void check_circuit(const model::Config& c) {
    train::PlantedP0Options o;
    const auto pm = train::planted_p0_circuit_plan(c, o);
    const auto& p = pm.plan;
    const std::int64_t cs = p.channel;
    const auto seq = random_sequence(c, 64, 7);
    const double M = p.magnitude;
    INFO(c.describe() << " M = " << M);

    // Clean: the spike at position 0 (within 10 % of the planned write), nothing comparable elsewhere.
    const auto clean = spike_channel(c, pm.weights, seq, cs);
    CHECK(clean[0] > 0.9 * M);
    CHECK(clean[0] < 1.1 * M);
    CHECK(max_abs_after(clean, 1) < 0.01 * M);
    {
        model::HookSet<float> hooks;
        model::ActivationCache<float> cache;
        cache.attach(hooks, {model::hook_name("resid_post", 2)});
        model::forward(c, pm.weights, seq, &hooks, model::ForwardOptions{false, 2});
        const auto& x = cache[model::hook_name("resid_post", 2)].data;
        const auto e = analysis::massive_entries(x.data(), std::int64_t(seq.size()), c.d_model);
        REQUIRE(!e.empty());
        for (const auto& s : e) { CHECK(s.position == 0); CHECK(s.channel == cs); }
    }

    // Each block of the circuit removes it; block 2 (outside it) does not.
    for (auto [name, knock] : std::vector<std::pair<std::string, std::function<void(model::HookSet<float>&)>>>{
             {"attn 0", [](model::HookSet<float>& h) { model::ablate_attention(h, 0); }},
             {"mlp 0", [](model::HookSet<float>& h) { model::ablate_mlp(h, 0); }},
             {"mlp 1", [](model::HookSet<float>& h) { model::ablate_mlp(h, 1); }}}) {
        INFO(name);
        CHECK(std::abs(spike_channel(c, pm.weights, seq, cs, knock)[0]) < 0.01 * M);
    }
    CHECK(spike_channel(c, pm.weights, seq, cs, [](model::HookSet<float>& h) { model::ablate_mlp(h, 2); })[0] > 0.9 * clean[0]);
    CHECK(spike_channel(c, pm.weights, seq, cs, [](model::HookSet<float>& h) { model::ablate_attention(h, 2); })[0] > 0.9 * clean[0]);

    // Every single head of block 0 keeps at least half of it (theory: ≈ 0.9).
    for (std::int64_t h = 0; h < c.n_heads; ++h) {
        INFO("head 0." << h);
        const double kept = spike_channel(c, pm.weights, seq, cs, [h](model::HookSet<float>& k) { model::ablate_heads<float>(k, 0, {h}); })[0];
        CHECK(kept > 0.5 * clean[0]);
    }

    // The twin: the same spike, removed by head 0's knockout alone; only block 0's W_O differs.
    o.redundant_heads = false;
    const auto twin = train::planted_p0_circuit_plan(c, o);
    CHECK(twin.plan.magnitude == p.magnitude);
    CHECK(twin.plan.theta == p.theta);
    const auto twin_clean = spike_channel(c, twin.weights, seq, cs);
    // Not equal to the planted spike: the background attention of blocks 1-2 reads the copies, which differ.
    CHECK(twin_clean[0] > 0.9 * M);
    CHECK(twin_clean[0] < 1.1 * M);
    CHECK(std::abs(spike_channel(c, twin.weights, seq, cs, [](model::HookSet<float>& k) { model::ablate_heads<float>(k, 0, {0}); })[0]) < 0.01 * M);
    CHECK(spike_channel(c, twin.weights, seq, cs, [](model::HookSet<float>& k) { model::ablate_heads<float>(k, 0, {1}); })[0] > 0.9 * twin_clean[0]);
    CHECK((twin.weights.layers[0].wo - pm.weights.layers[0].wo).cwiseAbs().maxCoeff() > 0);
    for (std::size_t l = 0; l < pm.weights.layers.size(); ++l) {
        const auto& a = pm.weights.layers[l];
        const auto& b = twin.weights.layers[l];
        CHECK(a.wq == b.wq); CHECK(a.wk == b.wk); CHECK(a.wv == b.wv);
        if (l > 0) CHECK(a.wo == b.wo);
        CHECK(a.w_up == b.w_up); CHECK(a.w_down == b.w_down);
        if (a.w_gate.size()) CHECK(a.w_gate == b.w_gate);
    }
    CHECK(twin.weights.tok_embed == pm.weights.tok_embed);
}

}  // namespace

TEST_CASE("planted_p0_circuit: a SwiGLU pair of units is an exact square", "[planted][p0]") {
    // silu(z) z + silu(-z)(-z) = z^2 because silu(z) - silu(-z) = z (theory/planted_p0_circuit.md, step 3).
    for (double z : {-7.5, -1.0, -0.1, 0.0, 0.3, 2.0, 11.0}) {
        const double pair = double(model::silu(float(z))) * z + double(model::silu(float(-z))) * (-z);
        CHECK(pair == Approx(z * z).epsilon(1e-6).margin(1e-12));
    }
}

TEST_CASE("planted_p0_circuit: Llama layout, circuit in blocks 0-1 with redundant heads, and its twin", "[planted][p0]") {
    check_circuit(train::planted_p0_default_config());
}

TEST_CASE("planted_p0_circuit: LayerNorm / GELU layout, the same guarantees", "[planted][p0]") {
    check_circuit(train::planted_p0_layernorm_gelu_config());
}

TEST_CASE("planted_p0_circuit: grouped-query heads (one kv head per two query heads) keep the circuit", "[planted][p0]") {
    auto c = train::planted_p0_default_config();
    c.n_kv_heads = 4;
    check_circuit(c);
}

TEST_CASE("planted_p0_circuit: layouts it cannot be built in are errors naming the switch", "[planted][p0]") {
    auto refused = [](model::Config c, const std::string& switch_name) {
        INFO(switch_name);
        try {
            train::planted_p0_circuit_plan(c, {});
            FAIL("no error");
        } catch (const Error& e) {
            CHECK_THAT(e.what(), Catch::Contains("planted_p0_circuit") && Catch::Contains(switch_name));
        }
    };
    auto c = train::planted_p0_default_config();
    { auto x = c; x.positions = model::PositionKind::learned; refused(x, "positions"); }
    { auto x = c; x.n_layers = 2; refused(x, "n_layers"); }
    { auto x = c; x.d_ff = 64; refused(x, "d_ff"); }
    { auto x = c; x.d_model = 32; refused(x, "d_model"); }
    { auto x = c; x.norm_placement = model::NormPlacement::post; refused(x, "norm_placement"); }
}
