// Streaming reducers against brute force over fully captured activations.
#include <catch2/catch.hpp>

#include <sinkscope/model/forward.hpp>
#include <sinkscope/model/reducers.hpp>

#include "model/tiny_model.hpp"

using namespace sinkscope::model;
using sinkscope::test::random_weights;
using sinkscope::test::tiny_llama;

TEST_CASE("ResidualStats and AttentionStats agree with brute force over captured tensors", "[model][reducers]") {
    const Config c = tiny_llama();
    const auto w = random_weights<double>(c, 20);
    const std::vector<std::vector<std::int32_t>> samples{{1, 2, 3, 4, 5}, {9, 8, 7}, {4, 4, 4, 4, 4, 4, 4}};
    HookSet<double> hooks;
    ResidualStats<double> rs(c.n_layers, 3);
    AttentionStats<double> as(c.n_layers, c.n_heads);
    rs.attach(hooks);
    as.attach(hooks);
    ActivationCache<double> cache;
    std::vector<ActivationCache<double>> runs;
    for (std::size_t s = 0; s < samples.size(); ++s) {
        if (s) rs.begin_sample();
        as.begin_sample();
        HookSet<double> h2 = hooks;
        ActivationCache<double> cap;
        cap.attach(h2, [](const std::string& n) { return n.find("resid_post") != std::string::npos || n.find("pattern") != std::string::npos; });
        forward(c, w, samples[s], &h2);
        runs.push_back(cap);
    }
    for (std::int64_t l = 0; l < c.n_layers; ++l) {
        // Brute force: every |x| of every sample, sorted.
        std::vector<double> all;
        for (const auto& r : runs) for (double v : r[hook_name("resid_post", l)].data) all.push_back(std::abs(v));
        std::sort(all.rbegin(), all.rend());
        const auto& L = rs.layers()[l];
        REQUIRE(L.top.size() == 3);
        for (int i = 0; i < 3; ++i) CHECK(L.top[i].abs_value == all[i]);
        // Position-0 norm: mean over samples of ‖x_0‖.
        double n0 = 0;
        for (const auto& r : runs) { const auto& x = r[hook_name("resid_post", l)].data; double s = 0; for (int j = 0; j < 16; ++j) s += x[j] * x[j]; n0 += std::sqrt(s); }
        CHECK(L.mean_norm(0) == Approx(n0 / 3).epsilon(1e-12));
        CHECK(L.medians.size() == 3);
        // α_0 per head and the sink rate at ε = 0.3.
        for (std::int64_t h = 0; h < c.n_heads; ++h) {
            double mean_alpha0 = 0;
            for (const auto& r : runs) {
                const auto& p = r[hook_name("pattern", l)];
                const std::int64_t n = p.shape[1];
                double s = 0;
                for (std::int64_t t = 0; t < n; ++t) s += p.data[(h * n + t) * n + 0];
                mean_alpha0 += s / double(n) / 3.0;
            }
            CHECK(as.received(l, h)[0] == Approx(mean_alpha0).epsilon(1e-12));
        }
    }
    double rate = 0;
    for (const auto& r : runs) {
        int hits = 0;
        for (std::int64_t l = 0; l < c.n_layers; ++l) {
            const auto& p = r[hook_name("pattern", l)];
            const std::int64_t n = p.shape[1];
            for (std::int64_t h = 0; h < c.n_heads; ++h) {
                double s = 0;
                for (std::int64_t t = 0; t < n; ++t) s += p.data[(h * n + t) * n];
                hits += s / double(n) > 0.3;
            }
        }
        rate += hits / double(c.n_layers * c.n_heads) / 3.0;
    }
    CHECK(as.sink_rate(0.3) == Approx(rate).epsilon(1e-12));
    CHECK_THROWS_AS(as.sink_rate(0.3, 2), sinkscope::Error);
}
