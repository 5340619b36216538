// train/planted_sink_keys.hpp: the planted sink keys (theory/planted_sink_keys.md) checked against the forward:
// Gu's alpha_0 from the captured attention pattern, position 0's captured keys against the W_K column they should
// lie along (cos^2 computed here), the twin's one differing weight per sink layer, and the refused layout.
#include <catch2/catch.hpp>

#include <sinkscope/analysis/spikes.hpp>
#include <sinkscope/train/planted_sink_keys.hpp>

#include "train/train_test_util.hpp"

using namespace sinkscope;

namespace {

// T random token ids of c's vocabulary (train_test_util.hpp's random_tokens).
std::vector<std::int32_t> random_sequence(const model::Config& c, std::int64_t T, std::uint64_t seed) {
    return test::random_tokens(T, c.vocab_size, seed);
}

// alpha_0 of every (layer, head) (Gu et al.: mean over rows t of A[t, 0]) and position 0's pre-RoPE key of
// every (layer, kv head), from one forward.
struct Seen {
    std::vector<std::vector<double>> alpha0;               // [l][h]
    std::vector<std::vector<Eigen::VectorXd>> key0;        // [l][g]
};
Seen forward_seen(const model::Config& c, const model::Weights<float>& w, const std::vector<std::int32_t>& s) {
    model::HookSet<float> hooks;
    model::ActivationCache<float> cache;
    cache.attach(hooks, [](const std::string& n) {
        return n.find("hook_pattern") != std::string::npos || n.find("attn.hook_k") != std::string::npos;
    });
    model::forward(c, w, s, &hooks, model::ForwardOptions{false, -1});
    const std::int64_t T = std::int64_t(s.size()), H = c.n_heads, G = c.n_kv_heads, dh = c.head_dim;
    Seen out;
    for (std::int64_t l = 0; l < c.n_layers; ++l) {
        const auto& A = cache[model::hook_name("pattern", l)].data;  // [head, query_pos, key_pos]
        const auto& K = cache[model::hook_name("k", l)].data;        // [pos, kv_head, d_head]
        out.alpha0.emplace_back();
        for (std::int64_t h = 0; h < H; ++h) {
            double a = 0;
            for (std::int64_t t = 0; t < T; ++t) a += A[std::size_t((h * T + t) * T)];
            out.alpha0.back().push_back(a / double(T));
        }
        out.key0.emplace_back();
        for (std::int64_t g = 0; g < G; ++g)
            out.key0.back().push_back(Eigen::Map<const Eigen::VectorXf>(K.data() + g * dh, dh).cast<double>());
    }
    return out;
}

}  // namespace

TEST_CASE("planted sink keys: the planted heads are sink heads and position 0's key lies along W_K e_{c*}",
          "[train][planted][property]") {
    for (const model::Config& c : {train::planted_default_config(), train::planted_layernorm_gelu_config()}) {
        INFO(c.describe());
        train::PlantedSinkKeyOptions o;
        const auto pm = train::planted_sink_keys_plan(c, o);
        const auto& p = pm.plan;
        const std::int64_t S = p.massive.step_up_layer, D = p.massive.step_down_layer, dh = c.head_dim, g = p.kv_head;
        REQUIRE(p.sink_layers.size() == std::size_t(D - S));
        for (std::uint64_t seed : {3u, 4u, 5u}) {
            const auto seen = forward_seen(c, pm.weights, random_sequence(c, 64, seed));
            for (std::int64_t l = 0; l < c.n_layers; ++l)
                for (std::int64_t h = 0; h < c.n_heads; ++h) {
                    const bool planted = l > S && l <= D && h / (c.n_heads / c.n_kv_heads) == g;
                    INFO("layer " << l << " head " << h << " alpha0 " << seen.alpha0[l][h]);
                    if (planted) CHECK(seen.alpha0[l][h] > 0.9);   // gap ~8: mean-field 0.99
                    else CHECK(seen.alpha0[l][h] < 0.3);           // background: uniform-like (H_64 / 64 = 0.074)
                }
            for (std::int64_t l : p.sink_layers) {
                // cos^2 of position 0's key with the column W_K^g e_{c*}, computed from the weights here.
                const Eigen::VectorXd col = pm.weights.layers[std::size_t(l)].wk.col(p.massive.channel).segment(g * dh, dh).cast<double>();
                const Eigen::VectorXd& k0 = seen.key0[std::size_t(l)][std::size_t(g)];
                const double cos2 = std::pow(col.dot(k0), 2) / (col.squaredNorm() * k0.squaredNorm());
                INFO("layer " << l);
                CHECK(cos2 > 0.999);
                CHECK(col.norm() == Approx(0.5).epsilon(1e-6));     // dose 1 · kappa, and nothing else in the column
            }
        }
    }
}

TEST_CASE("planted sink keys: the twin differs in one weight per sink layer and keeps its sink heads",
          "[train][planted][property]") {
    const model::Config c = train::planted_default_config();
    train::PlantedSinkKeyOptions o;
    const auto on = train::planted_sink_keys_plan(c, o);
    o.keys_read_spike = false;
    const auto off = train::planted_sink_keys_plan(c, o);
    const auto differing = test::differing_parameter_entries(on.weights, off.weights);
    for (const auto& name : differing) CHECK(name.find("attn.W_K") != std::string::npos);
    CHECK(differing.size() == on.plan.sink_layers.size());
    const auto seen = forward_seen(c, off.weights, random_sequence(c, 64, 9));
    const std::int64_t dh = c.head_dim, g = off.plan.kv_head;
    for (std::int64_t l : off.plan.sink_layers) {
        INFO("layer " << l);
        CHECK(seen.alpha0[std::size_t(l)][std::size_t(g)] > 0.5);       // the marker route alone: gap ~4, mean-field 0.67
        CHECK(off.weights.layers[std::size_t(l)].wk.col(off.plan.massive.channel).segment(g * dh, dh).norm() == 0.0f);
        CHECK(seen.key0[std::size_t(l)][std::size_t(g)].norm() > 0);    // a defined direction, outside the (zero) span
    }
}

TEST_CASE("planted sink keys: refused layouts name the switch", "[train][planted]") {
    model::Config c = train::planted_default_config();
    c.positions = model::PositionKind::learned;
    CHECK_THROWS_WITH(train::planted_sink_keys_plan(c, {}), Catch::Contains("positions 'learned'"));
    c = train::planted_default_config();
    c.norm_placement = model::NormPlacement::post;
    CHECK_THROWS_WITH(train::planted_sink_keys_plan(c, {}), Catch::Contains("norm_placement"));
    train::PlantedSinkKeyOptions o;
    o.kv_head = 4;
    CHECK_THROWS_WITH(train::planted_sink_keys_plan(train::planted_default_config(), o), Catch::Contains("kv_head"));
}
