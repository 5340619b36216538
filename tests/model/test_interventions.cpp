// Interventions checked against independent routes to the same result (edited weights, a second run).
#include <catch2/catch.hpp>

#include <sinkscope/model/forward.hpp>
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
