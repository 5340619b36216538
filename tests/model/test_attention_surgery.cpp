// Attention-pattern surgery checked against hand-computed attention outputs: z[t, h] = Σ_j p[h, t, j] v_j[g]
// and hook_attn_out = W_O z, with v and the patterns captured from the same run.
#include <catch2/catch.hpp>

#include <random>

#include <sinkscope/model/attention_surgery.hpp>
#include <sinkscope/model/batch.hpp>
#include <sinkscope/model/forward.hpp>

#include "model/tiny_model.hpp"

using namespace sinkscope::model;
using sinkscope::test::random_weights;
using sinkscope::test::tiny_llama;

namespace {
const std::vector<std::int32_t> kTokens{7, 3, 11, 2, 30, 5};
const std::vector<std::int32_t> kOther{1, 9, 9, 4, 20, 13};
double max_diff(const Mat<double>& a, const Mat<double>& b) { return (a - b).cwiseAbs().maxCoeff(); }

// A run's captures at `names`, with `hooks` (interventions) registered before the capture.
struct Run {
    Mat<double> logits;
    ActivationCache<double> cache;
};
Run run(const Config& c, const Weights<double>& w, const std::vector<std::int32_t>& tokens, HookSet<double> hooks,
        std::vector<std::string> names) {
    Run r;
    r.cache.attach(hooks, std::move(names));
    r.logits = forward(c, w, tokens, &hooks);
    return r;
}
// v_j of kv head g from a captured [pos, kv_head, d_head] activation.
Vec<double> value(const Captured<double>& v, std::int64_t j, std::int64_t g) {
    const std::int64_t G = v.shape[1], dh = v.shape[2];
    Vec<double> out(dh);
    for (std::int64_t i = 0; i < dh; ++i) out(i) = v.data[std::size_t((j * G + g) * dh + i)];
    return out;
}
Vec<double> z_of(const Captured<double>& z, std::int64_t t, std::int64_t h) {
    const std::int64_t H = z.shape[1], dh = z.shape[2];
    Vec<double> out(dh);
    for (std::int64_t i = 0; i < dh; ++i) out(i) = z.data[std::size_t((t * H + h) * dh + i)];
    return out;
}
Vec<double> row_of(const Captured<double>& x, std::int64_t t) {
    const std::int64_t d = x.shape[1];
    return Eigen::Map<const Vec<double>>(x.data.data() + t * d, d);
}
}  // namespace

TEST_CASE("self_only_attention makes a query's attention output W_O v_t", "[model][interventions]") {
    const Config c = tiny_llama();  // H = 4, G = 2: heads 0, 1 read kv head 0, heads 2, 3 kv head 1
    const auto w = random_weights<double>(c, 21);
    const std::int64_t t = 3, dh = c.head_dim, group = c.n_heads / c.n_kv_heads;
    HookSet<double> hooks;
    self_only_attention<double>(hooks, 1, {}, {t});
    const Run forced = run(c, w, kTokens, hooks, {"blocks.1.attn.hook_v", "blocks.1.hook_attn_out", "blocks.1.attn.hook_pattern"});
    const Run clean = run(c, w, kTokens, {}, {"blocks.1.hook_attn_out"});

    // z_t = (v_t[0], v_t[0], v_t[1], v_t[1]) by hand, then W_O z_t (Llama: no bias).
    Vec<double> z(c.n_heads * dh);
    for (std::int64_t h = 0; h < c.n_heads; ++h) z.segment(h * dh, dh) = value(forced.cache["blocks.1.attn.hook_v"], t, h / group);
    const Vec<double> expected = w.layers[1].wo * z;
    const auto& out = forced.cache["blocks.1.hook_attn_out"];
    CHECK((row_of(out, t) - expected).cwiseAbs().maxCoeff() < 1e-12);
    CHECK((row_of(clean.cache["blocks.1.hook_attn_out"], t) - expected).cwiseAbs().maxCoeff() > 1e-6);
    // The other queries of that layer keep their attention output; the pattern row is e_t.
    for (std::int64_t s = 0; s < std::int64_t(kTokens.size()); ++s)
        if (s != t) CHECK((row_of(out, s) - row_of(clean.cache["blocks.1.hook_attn_out"], s)).cwiseAbs().maxCoeff() < 1e-12);
    const auto& p = forced.cache["blocks.1.attn.hook_pattern"];
    const std::int64_t n = std::int64_t(kTokens.size());
    for (std::int64_t h = 0; h < c.n_heads; ++h)
        for (std::int64_t j = 0; j < n; ++j) CHECK(p.data[std::size_t((h * n + t) * n + j)] == (j == t ? 1.0 : 0.0));

    // Position 0 attends only to itself under the causal mask already: forcing it changes nothing.
    HookSet<double> at0;
    self_only_attention<double>(at0, 0, {}, {0});
    self_only_attention<double>(at0, 1, {}, {0});
    CHECK(max_diff(forward(c, w, kTokens, &at0), clean.logits) < 1e-12);
}

TEST_CASE("force_pattern with the model's own pattern is the identity; another run's pattern is pattern·V", "[model][interventions]") {
    const Config c = tiny_llama();
    const auto w = random_weights<double>(c, 22);
    const Run clean = run(c, w, kTokens, {}, {"blocks.0.attn.hook_pattern", "blocks.1.attn.hook_pattern"});
    HookSet<double> own;
    force_pattern<double>(own, 0, clean.cache["blocks.0.attn.hook_pattern"]);
    force_pattern<double>(own, 1, clean.cache["blocks.1.attn.hook_pattern"]);
    CHECK(max_diff(forward(c, w, kTokens, &own), clean.logits) < 1e-12);

    // Layer 0 with the other sequence's pattern at heads 1 and 2: z_t[h] = Σ_j P_other[h, t, j] v_j[g] there.
    const Run other = run(c, w, kOther, {}, {"blocks.0.attn.hook_pattern"});
    HookSet<double> transplant;
    force_pattern<double>(transplant, 0, other.cache["blocks.0.attn.hook_pattern"], {1, 2});
    const Run t = run(c, w, kTokens, transplant, {"blocks.0.attn.hook_v", "blocks.0.attn.hook_z", "blocks.0.attn.hook_pattern"});
    const Run clean_z = run(c, w, kTokens, {}, {"blocks.0.attn.hook_z"});
    const auto& P = other.cache["blocks.0.attn.hook_pattern"].data;
    const std::int64_t n = std::int64_t(kTokens.size()), group = c.n_heads / c.n_kv_heads;
    double transplanted_change = 0;
    for (std::int64_t q = 0; q < n; ++q)
        for (std::int64_t h = 0; h < c.n_heads; ++h) {
            const Vec<double> got = z_of(t.cache["blocks.0.attn.hook_z"], q, h);
            if (h == 1 || h == 2) {
                Vec<double> expected = Vec<double>::Zero(c.head_dim);
                for (std::int64_t j = 0; j <= q; ++j)
                    expected += P[std::size_t((h * n + q) * n + j)] * value(t.cache["blocks.0.attn.hook_v"], j, h / group);
                CHECK((got - expected).cwiseAbs().maxCoeff() < 1e-12);
                transplanted_change = std::max(transplanted_change, (got - z_of(clean_z.cache["blocks.0.attn.hook_z"], q, h)).cwiseAbs().maxCoeff());
            } else {
                CHECK((got - z_of(clean_z.cache["blocks.0.attn.hook_z"], q, h)).cwiseAbs().maxCoeff() < 1e-12);
            }
        }
    CHECK(transplanted_change > 1e-6);
}

TEST_CASE("force_pattern_row renormalises over the keys the query can see", "[model][interventions]") {
    const Config c = tiny_llama();
    const auto w = random_weights<double>(c, 23);
    HookSet<double> hooks;
    // Query 2 of head 1 sees keys 0, 1, 2: weights (2, 0, 1) / 3; the weights on keys 3… are dropped.
    force_pattern_row<double>(hooks, 0, {2, 0, 1, 5, 5, 5}, {1}, {2});
    const Run r = run(c, w, kTokens, hooks, {"blocks.0.attn.hook_v", "blocks.0.attn.hook_z", "blocks.0.attn.hook_pattern"});
    const auto& v = r.cache["blocks.0.attn.hook_v"];
    const Vec<double> expected = (2 * value(v, 0, 0) + value(v, 2, 0)) / 3;  // head 1 reads kv head 0
    CHECK((z_of(r.cache["blocks.0.attn.hook_z"], 2, 1) - expected).cwiseAbs().maxCoeff() < 1e-12);
    const auto& p = r.cache["blocks.0.attn.hook_pattern"].data;
    const std::int64_t n = std::int64_t(kTokens.size());
    const std::vector<double> row(p.begin() + (1 * n + 2) * n, p.begin() + (1 * n + 3) * n);
    CHECK(row[0] == Approx(2.0 / 3).margin(1e-15));
    CHECK(row[1] == 0.0);
    CHECK(row[2] == Approx(1.0 / 3).margin(1e-15));
    CHECK(row[3] == 0.0); CHECK(row[4] == 0.0); CHECK(row[5] == 0.0);

    // Refused: a negative weight, a row with nothing on the visible keys, a head out of range.
    HookSet<double> negative, invisible, bad_head;
    force_pattern_row<double>(negative, 0, {1, -1, 1}, {0}, {2});
    force_pattern_row<double>(invisible, 0, {0, 0, 1}, {0}, {1});
    force_pattern_row<double>(bad_head, 0, {1}, {4}, {2});
    CHECK_THROWS_AS(forward(c, w, kTokens, &negative), sinkscope::Error);
    CHECK_THROWS_AS(forward(c, w, kTokens, &invisible), sinkscope::Error);
    CHECK_THROWS_AS(forward(c, w, kTokens, &bad_head), sinkscope::Error);
}

TEST_CASE("attend_only_to copies the key's value to every later query", "[model][interventions]") {
    const Config c = tiny_llama();
    const auto w = random_weights<double>(c, 24);
    const std::int64_t n = std::int64_t(kTokens.size()), group = c.n_heads / c.n_kv_heads;
    HookSet<double> to0;
    attend_only_to<double>(to0, 0, 0);
    const Run r = run(c, w, kTokens, to0, {"blocks.0.attn.hook_v", "blocks.0.attn.hook_z"});
    for (std::int64_t t = 0; t < n; ++t)
        for (std::int64_t h = 0; h < c.n_heads; ++h)
            CHECK((z_of(r.cache["blocks.0.attn.hook_z"], t, h) - value(r.cache["blocks.0.attn.hook_v"], 0, h / group)).cwiseAbs().maxCoeff() < 1e-12);

    // Key 2, heads 0 and 3: queries 0 and 1 cannot see it and keep their rows.
    HookSet<double> to2;
    attend_only_to<double>(to2, 1, 2, {0, 3});
    const Run r2 = run(c, w, kTokens, to2, {"blocks.1.attn.hook_v", "blocks.1.attn.hook_z"});
    const Run clean = run(c, w, kTokens, {}, {"blocks.1.attn.hook_z"});
    for (std::int64_t t = 0; t < n; ++t)
        for (std::int64_t h : {0, 3}) {
            const Vec<double> got = z_of(r2.cache["blocks.1.attn.hook_z"], t, h);
            const Vec<double> expected = t < 2 ? z_of(clean.cache["blocks.1.attn.hook_z"], t, h) : value(r2.cache["blocks.1.attn.hook_v"], 2, h / group);
            CHECK((got - expected).cwiseAbs().maxCoeff() < 1e-12);
        }
}

TEST_CASE("force_pattern's row mass with a KV-bias slot: the model's mass is the identity, mass 1 empties the slot", "[model][interventions]") {
    Config c = tiny_llama();
    c.attention = AttentionKind::kv_bias;
    auto w = random_weights<double>(c, 25);
    std::mt19937 rng(5);
    std::normal_distribution<double> nd(0.0, 1.0);
    for (auto& L : w.layers) {
        L.sink_kv.resize(2, c.kv_dim());
        for (auto& x : L.sink_kv.reshaped()) x = nd(rng);
    }
    const Run clean = run(c, w, kTokens, {}, {"blocks.0.attn.hook_pattern", "blocks.0.attn.hook_v", "blocks.0.attn.hook_z"});
    HookSet<double> keep, one;
    force_pattern<double>(keep, 0, clean.cache["blocks.0.attn.hook_pattern"], {}, {}, RowMass::model);
    force_pattern<double>(one, 0, clean.cache["blocks.0.attn.hook_pattern"], {}, {}, RowMass::one);
    CHECK(max_diff(forward(c, w, kTokens, &keep), clean.logits) < 1e-12);
    // Mass 1: z_t[h] = Σ_j p_j v_j / Σ_j p_j with the slot's value weighted 0.
    const Run r = run(c, w, kTokens, one, {"blocks.0.attn.hook_z"});
    const auto& P = clean.cache["blocks.0.attn.hook_pattern"].data;
    const std::int64_t n = std::int64_t(kTokens.size()), group = c.n_heads / c.n_kv_heads;
    double slot_share = 0;
    for (std::int64_t t = 0; t < n; ++t)
        for (std::int64_t h = 0; h < c.n_heads; ++h) {
            Vec<double> num = Vec<double>::Zero(c.head_dim);
            double mass = 0;
            for (std::int64_t j = 0; j <= t; ++j) {
                const double p = P[std::size_t((h * n + t) * n + j)];
                num += p * value(clean.cache["blocks.0.attn.hook_v"], j, h / group);
                mass += p;
            }
            slot_share = std::max(slot_share, 1 - mass);
            CHECK((z_of(r.cache["blocks.0.attn.hook_z"], t, h) - num / mass).cwiseAbs().maxCoeff() < 1e-12);
        }
    CHECK(slot_share > 1e-3);  // the slot took a real share, so mass 1 is a change
}

TEST_CASE("attention surgery in forward_batch equals the same surgery on each sequence", "[model][interventions]") {
    const Config c = tiny_llama();
    const auto w = random_weights<double>(c, 26);
    const std::vector<std::vector<std::int32_t>> seqs{kTokens, {4, 8, 15}};
    HookSet<double> hooks;
    self_only_attention<double>(hooks, 0, {1, 2}, {1, 2, 4});
    attend_only_to<double>(hooks, 1, 1, {0});
    const auto batch = forward_batch(c, w, seqs, &hooks);
    for (std::int64_t b = 0; b < 2; ++b) {
        const Mat<double> alone = forward(c, w, seqs[std::size_t(b)], &hooks);
        CHECK((batch.sequence(b) - alone).cwiseAbs().maxCoeff() < 1e-10);
        const Mat<double> clean = forward(c, w, seqs[std::size_t(b)]);
        CHECK(max_diff(alone, clean) > 1e-6);
    }
}
