// Interventions checked against independent routes to the same result (edited weights, a second run).
#include <catch2/catch.hpp>
#include <tuple>

#include <sinkscope/model/forward.hpp>
#include <sinkscope/model/attention_surgery.hpp>
#include <sinkscope/model/interventions.hpp>

#include "model/tiny_model.hpp"

using namespace sinkscope::model;
using sinkscope::test::random_weights;
using sinkscope::test::tiny_llama;

namespace {
const std::vector<std::int32_t> kTokens{7, 3, 11, 2, 30, 5};
double max_diff(const Mat<double>& a, const Mat<double>& b) { return (a - b).cwiseAbs().maxCoeff(); }
}  // namespace

TEST_CASE("ablate_heads equals zeroing the head's columns of W_O", "[model][interventions]") {
    const Config c = tiny_llama();
    const auto w = random_weights<double>(c, 10);
    HookSet<double> hooks;
    ablate_heads<double>(hooks, 1, {2});
    const Mat<double> ablated = forward(c, w, kTokens, &hooks);
    auto edited = w;
    edited.layers[1].wo.middleCols(2 * c.head_dim, c.head_dim).setZero();
    CHECK(max_diff(ablated, forward(c, edited, kTokens)) < 1e-12);
    CHECK(max_diff(ablated, forward(c, w, kTokens)) > 1e-6);
}

TEST_CASE("ablate_mlp and ablate_attention equal zeroing the block's output weights", "[model][interventions]") {
    const Config c = tiny_llama();
    const auto w = random_weights<double>(c, 11);
    HookSet<double> mlp_hooks, attn_hooks;
    ablate_mlp<double>(mlp_hooks, 0);
    ablate_attention<double>(attn_hooks, 1);
    auto no_mlp = w; no_mlp.layers[0].w_down.setZero();
    auto no_attn = w; no_attn.layers[1].wo.setZero();
    CHECK(max_diff(forward(c, w, kTokens, &mlp_hooks), forward(c, no_mlp, kTokens)) < 1e-12);
    CHECK(max_diff(forward(c, w, kTokens, &attn_hooks), forward(c, no_attn, kTokens)) < 1e-12);
}

TEST_CASE("zero- and mean-ablating channels set exactly those entries", "[model][interventions]") {
    const Config c = tiny_llama();
    const auto w = random_weights<double>(c, 12);
    HookSet<double> hooks;
    ActivationCache<double> cache;
    zero_ablate_channels<double>(hooks, "blocks.0.hook_resid_post", {3, 9}, {0});
    mean_ablate_channels<double>(hooks, "blocks.1.hook_resid_post", {5}, {2.5}, {1, 4});
    cache.attach(hooks, std::vector<std::string>{"blocks.0.hook_resid_post", "blocks.1.hook_resid_post"});
    forward(c, w, kTokens, &hooks);
    const auto& r0 = cache["blocks.0.hook_resid_post"].data;
    const auto& r1 = cache["blocks.1.hook_resid_post"].data;
    CHECK(r0[3] == 0.0); CHECK(r0[9] == 0.0); CHECK(r0[16 + 3] != 0.0);
    CHECK(r1[1 * 16 + 5] == 2.5); CHECK(r1[4 * 16 + 5] == 2.5); CHECK(r1[0 * 16 + 5] != 2.5);
    HookSet<double> bad;
    zero_ablate_channels<double>(bad, "blocks.0.hook_resid_post", {16});
    CHECK_THROWS_AS(forward(c, w, kTokens, &bad), sinkscope::Error);
}

TEST_CASE("patching an activation from another run reproduces that run downstream", "[model][interventions]") {
    const Config c = tiny_llama();
    const auto w = random_weights<double>(c, 13);
    const std::vector<std::int32_t> other{1, 1, 1, 1, 1, 1};
    HookSet<double> capture_hooks;
    ActivationCache<double> cache;
    cache.attach(capture_hooks, std::vector<std::string>{"blocks.1.hook_resid_pre"});
    const Mat<double> other_logits = forward(c, w, other, &capture_hooks);
    HookSet<double> hooks;
    patch<double>(hooks, "blocks.1.hook_resid_pre", cache["blocks.1.hook_resid_pre"].data);
    CHECK(max_diff(forward(c, w, kTokens, &hooks), other_logits) < 1e-12);
    HookSet<double> wrong;
    patch<double>(wrong, "blocks.1.hook_resid_pre", std::vector<double>(5, 0.0));
    CHECK_THROWS_AS(forward(c, w, kTokens, &wrong), sinkscope::Error);
}

TEST_CASE("copy_position places one row of an activation onto other rows of the same run", "[model][interventions]") {
    const Config c = tiny_llama();
    const auto w = random_weights<double>(c, 14);
    const std::string name = "blocks.0.hook_attn_out";
    HookSet<double> clean_hooks;
    ActivationCache<double> clean;
    clean.attach(clean_hooks, std::vector<std::string>{name});
    const Mat<double> clean_logits = forward(c, w, kTokens, &clean_hooks);
    const auto& a = clean[name].data;
    const std::int64_t d = c.d_model;

    // Copying row 0 onto rows 2 and 4 equals patching those rows with row 0's clean values.
    HookSet<double> copy_hooks, patch_hooks;
    copy_position<double>(copy_hooks, name, 0, {2, 4});
    std::vector<double> rows(a.begin(), a.begin() + d);
    rows.insert(rows.end(), a.begin(), a.begin() + d);
    patch<double>(patch_hooks, name, rows, {2, 4});
    const Mat<double> copied = forward(c, w, kTokens, &copy_hooks);
    CHECK(max_diff(copied, forward(c, w, kTokens, &patch_hooks)) < 1e-12);
    CHECK(max_diff(copied, clean_logits) > 1e-6);
    // Position 0 and 1 are upstream of the copies under the causal mask: their logits do not change.
    CHECK((copied.topRows(2) - clean_logits.topRows(2)).cwiseAbs().maxCoeff() < 1e-12);

    // Empty targets: every other row; the source row keeps its value.
    HookSet<double> all_hooks;
    ActivationCache<double> after;
    copy_position<double>(all_hooks, name, 3);
    after.attach(all_hooks, std::vector<std::string>{name});
    forward(c, w, kTokens, &all_hooks);
    for (std::int64_t t = 0; t < std::int64_t(kTokens.size()); ++t)
        for (std::int64_t j = 0; j < d; ++j) CHECK(after[name].data[t * d + j] == a[3 * d + j]);

    HookSet<double> bad;
    copy_position<double>(bad, name, 99);
    CHECK_THROWS_AS(forward(c, w, kTokens, &bad), sinkscope::Error);
}

TEST_CASE("scale_channels is a dose: 1 is the identity, 0 zero-ablation, and mlp_out is affine in it", "[model][interventions]") {
    const Config c = tiny_llama();
    const auto w = random_weights<double>(c, 15);
    const std::string post = "blocks.0.mlp.hook_post", out = "blocks.0.hook_mlp_out";
    auto dosed = [&](double f) {
        HookSet<double> hooks;
        ActivationCache<double> cache;
        scale_channels<double>(hooks, post, {3, 7, 20}, f, {1, 4});
        cache.attach(hooks, std::vector<std::string>{out});
        const Mat<double> logits = forward(c, w, kTokens, &hooks);
        return std::make_pair(logits, Eigen::Map<const Mat<double>>(cache[out].data.data(), cache[out].shape[0], cache[out].shape[1]).eval());
    };
    const Mat<double> clean = forward(c, w, kTokens);
    HookSet<double> zero;
    zero_ablate_channels<double>(zero, post, {3, 7, 20}, {1, 4});
    CHECK(max_diff(dosed(1).first, clean) == 0.0);
    CHECK(max_diff(dosed(0).first, forward(c, w, kTokens, &zero)) == 0.0);
    CHECK(max_diff(dosed(0).first, clean) > 1e-6);
    // mlp_out = W_down · post: out(f) = out(0) + f (out(1) − out(0)), for a dose inside [0, 1] and outside it.
    const Mat<double> out0 = dosed(0).second, out1 = dosed(1).second;
    for (double f : {0.5, -2.0, 3.0}) CHECK(max_diff(dosed(f).second, out0 + f * (out1 - out0)) < 1e-12);
    // Only the chosen positions change.
    CHECK((out0 - out1).row(0).cwiseAbs().maxCoeff() == 0.0);
    CHECK((out0 - out1).row(1).cwiseAbs().maxCoeff() > 1e-6);

    HookSet<double> bad, not_positions;
    scale_channels<double>(bad, post, {c.d_ff}, 0.5);
    scale_channels<double>(not_positions, "blocks.0.attn.hook_pattern", {0}, 0.5);  // [head, query, key]: force_pattern's
    CHECK_THROWS_AS(forward(c, w, kTokens, &bad), sinkscope::Error);
    CHECK_THROWS_AS(forward(c, w, kTokens, &not_positions), sinkscope::Error);
}

TEST_CASE("scale_channels with centres scales the distance from them: 0 is mean-ablation, 1 the identity", "[model][interventions]") {
    const Config c = tiny_llama();
    const auto w = random_weights<double>(c, 25);
    const std::string post = "blocks.0.mlp.hook_post", out = "blocks.0.hook_mlp_out";
    const std::vector<std::int64_t> channels{3, 7, 20}, positions{1, 4};
    const std::vector<double> centres{0.25, -1.5, 2.0};
    auto dosed = [&](double f) {
        HookSet<double> hooks;
        ActivationCache<double> cache;
        scale_channels<double>(hooks, post, channels, f, positions, centres);
        cache.attach(hooks, std::vector<std::string>{post, out});
        const Mat<double> logits = forward(c, w, kTokens, &hooks);
        return std::make_tuple(logits, cache[post].data, Eigen::Map<const Mat<double>>(cache[out].data.data(), cache[out].shape[0], cache[out].shape[1]).eval());
    };
    // The hook's output by hand: mu + f (x - mu) at the chosen entries, x elsewhere.
    HookSet<double> probe;
    ActivationCache<double> clean_cache;
    clean_cache.attach(probe, std::vector<std::string>{post});
    const Mat<double> clean = forward(c, w, kTokens, &probe);
    const std::vector<double> x = clean_cache[post].data;
    const std::int64_t width = c.d_ff;
    for (double f : {0.0, 0.3, 1.0, -2.0}) {
        const auto [logits, got, mlp_out] = dosed(f);
        std::vector<double> want = x;
        for (auto t : positions)
            for (std::size_t i = 0; i < channels.size(); ++i)
                want[t * width + channels[i]] = centres[i] + f * (x[t * width + channels[i]] - centres[i]);
        double err = 0;
        for (std::size_t i = 0; i < want.size(); ++i) err = std::max(err, std::abs(got[i] - want[i]));
        CHECK(err < 1e-12);
    }
    HookSet<double> mean;
    mean_ablate_channels<double>(mean, post, channels, centres, positions);
    CHECK(max_diff(std::get<0>(dosed(0)), forward(c, w, kTokens, &mean)) == 0.0);
    CHECK(max_diff(std::get<0>(dosed(1)), clean) < 1e-12);
    // Still affine in the dose downstream of a linear map: out(f) = out(0) + f (out(1) − out(0)).
    const Mat<double> out0 = std::get<2>(dosed(0)), out1 = std::get<2>(dosed(1));
    CHECK(max_diff(std::get<2>(dosed(0.5)), out0 + 0.5 * (out1 - out0)) < 1e-12);

    HookSet<double> wrong_count;
    CHECK_THROWS_AS(scale_channels<double>(wrong_count, post, channels, 0.5, positions, {1.0}), sinkscope::Error);
}

TEST_CASE("scale_heads is a dose on a head's share of hook_attn_out", "[model][interventions]") {
    const Config c = tiny_llama();
    const auto w = random_weights<double>(c, 16);
    const std::string out = "blocks.1.hook_attn_out";
    auto dosed = [&](double f) {
        HookSet<double> hooks;
        ActivationCache<double> cache;
        scale_heads<double>(hooks, 1, {0, 3}, f);
        cache.attach(hooks, std::vector<std::string>{out});
        const Mat<double> logits = forward(c, w, kTokens, &hooks);
        return std::make_pair(logits, Eigen::Map<const Mat<double>>(cache[out].data.data(), cache[out].shape[0], cache[out].shape[1]).eval());
    };
    HookSet<double> ablated;
    ablate_heads<double>(ablated, 1, {0, 3});
    CHECK(max_diff(dosed(1).first, forward(c, w, kTokens)) == 0.0);
    CHECK(max_diff(dosed(0).first, forward(c, w, kTokens, &ablated)) == 0.0);
    // attn_out = Σ_h W_O,h z_h: the scaled heads' term is f times theirs, by hand from the weights.
    const Mat<double> out0 = dosed(0).second, out1 = dosed(1).second;
    for (double f : {0.25, 2.0}) CHECK(max_diff(dosed(f).second, out0 + f * (out1 - out0)) < 1e-12);
    HookSet<double> bad;
    scale_heads<double>(bad, 1, {4}, 0.5);
    CHECK_THROWS_AS(forward(c, w, kTokens, &bad), sinkscope::Error);
}

TEST_CASE("patch_sites: several sites in one forward equal the single patches applied together", "[model][interventions]") {
    const Config c = tiny_llama();
    const auto w = random_weights<double>(c, 17);
    const std::vector<std::int32_t> source_tokens{1, 9, 9, 4, 20, 13};
    const PatchSite heads_site{"z", 0, {2, 4}, {1}, {}};
    const PatchSite channel_site{"blocks.1.hook_resid_mid", -1, {1, 5}, {}, {3, 5}};
    const std::vector<PatchSite> both{heads_site, channel_site};
    CHECK(patch_site_names(both) == std::vector<std::string>{"blocks.0.attn.hook_z", "blocks.1.hook_resid_mid"});
    HookSet<double> capture;
    ActivationCache<double> source;
    source.attach(capture, patch_site_names(both));
    forward(c, w, source_tokens, &capture);

    // The same patches written by hand: copy the chosen entries of the source's activations.
    const auto& sz = source["blocks.0.attn.hook_z"].data;
    const auto& sr = source["blocks.1.hook_resid_mid"].data;
    const std::int64_t H = c.n_heads, dh = c.head_dim, d = c.d_model;
    auto by_hand_z = [&](const std::string&, ActivationRef<double>& z) {
        for (std::int64_t t : {2, 4})
            for (std::int64_t i = 0; i < dh; ++i) z.data[(t * H + 1) * dh + i] = sz[std::size_t((t * H + 1) * dh + i)];
    };
    auto by_hand_resid = [&](const std::string&, ActivationRef<double>& x) {
        for (std::int64_t t : {1, 5})
            for (std::int64_t ch : {3, 5}) x.data[t * d + ch] = sr[std::size_t(t * d + ch)];
    };
    HookSet<double> together, one_by_one, by_hand, only_heads, only_channels;
    patch_sites(together, both, source);
    patch_sites(one_by_one, {heads_site}, source);
    patch_sites(one_by_one, {channel_site}, source);
    by_hand.add("blocks.0.attn.hook_z", by_hand_z);
    by_hand.add("blocks.1.hook_resid_mid", by_hand_resid);
    patch_sites(only_heads, {heads_site}, source);
    patch_sites(only_channels, {channel_site}, source);
    const Mat<double> patched = forward(c, w, kTokens, &together);
    CHECK(max_diff(patched, forward(c, w, kTokens, &by_hand)) == 0.0);
    CHECK(max_diff(patched, forward(c, w, kTokens, &one_by_one)) == 0.0);
    CHECK(max_diff(patched, forward(c, w, kTokens, &only_heads)) > 1e-6);
    CHECK(max_diff(patched, forward(c, w, kTokens, &only_channels)) > 1e-6);

    // A whole activation as one site reproduces the source run downstream.
    HookSet<double> capture_all, whole;
    ActivationCache<double> source_all;
    source_all.attach(capture_all, std::vector<std::string>{"blocks.1.hook_resid_pre"});
    const Mat<double> source_logits = forward(c, w, source_tokens, &capture_all);
    patch_sites(whole, {PatchSite{"resid_pre", 1, {}, {}, {}}}, source_all);
    CHECK(max_diff(forward(c, w, kTokens, &whole), source_logits) < 1e-12);

    // Refused: heads on a [pos, d] hook, a block hook without a layer, a source of another length, an
    // uncaptured name.
    HookSet<double> heads_on_resid, other_length;
    patch_sites(heads_on_resid, {PatchSite{"blocks.1.hook_resid_mid", -1, {}, {0}, {}}}, source);
    CHECK_THROWS_AS(forward(c, w, kTokens, &heads_on_resid), sinkscope::Error);
    HookSet<double> unused;
    CHECK_THROWS_AS(patch_sites(unused, {PatchSite{"resid_mid", -1, {}, {}, {}}}, source), sinkscope::Error);
    CHECK_THROWS_AS(patch_sites(unused, {PatchSite{"resid_post", 0, {}, {}, {}}}, source), sinkscope::Error);
    patch_sites(other_length, both, source);
    CHECK_THROWS_AS(forward(c, w, std::vector<std::int32_t>{7, 3, 11}, &other_length), sinkscope::Error);
}

TEST_CASE("patch_sites on the pattern equals forcing the source's rows", "[model][interventions]") {
    const Config c = tiny_llama();
    const auto w = random_weights<double>(c, 18);
    const std::vector<std::int32_t> source_tokens{1, 9, 9, 4, 20, 13};
    const PatchSite site{"pattern", 1, {3, 5}, {0, 2}, {}};
    HookSet<double> capture;
    ActivationCache<double> source;
    source.attach(capture, patch_site_names({site}));
    forward(c, w, source_tokens, &capture);
    HookSet<double> patched, forced;
    patch_sites(patched, {site}, source);
    force_pattern<double>(forced, 1, source["blocks.1.attn.hook_pattern"], {0, 2}, {3, 5});
    const Mat<double> a = forward(c, w, kTokens, &patched);
    CHECK(max_diff(a, forward(c, w, kTokens, &forced)) < 1e-12);
    CHECK(max_diff(a, forward(c, w, kTokens)) > 1e-6);
}
