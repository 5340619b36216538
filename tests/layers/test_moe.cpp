// layers/moe.hpp: top-k routing against its definition (a softmax over all experts in long double, the k
// largest chosen by a full sort, ties to the lower index, weights renormalised over the chosen or not).
#include <catch2/catch.hpp>

#include <numeric>

#include <sinkscope/layers/moe.hpp>

#include "layers/layer_test_util.hpp"

using namespace sinkscope;
using namespace sinkscope::test::layers;

TEST_CASE("moe_router_forward chooses the k most probable experts and weights them by their softmax share",
          "[layers][moe]") {
    const std::int64_t T = 6, E = 8, k = 3;
    Mat<double> logits = gaussian<double>(T, E, 41, 2.0);
    logits(2, 1) += 10.0;         // row 2: experts 1 and 5 tie at the top; 1 must come first
    logits(2, 5) = logits(2, 1);
    for (bool normalize : {true, false}) {
        Mat<double> weight, chosen;
        model::moe_router_forward(weight, chosen, logits, k, normalize);
        REQUIRE(weight.rows() == T);
        REQUIRE(chosen.cols() == k);
        for (std::int64_t t = 0; t < T; ++t) {
            std::vector<long double> p(E);
            long double z = 0;
            for (std::int64_t e = 0; e < E; ++e) z += p[e] = std::exp((long double)logits(t, e));
            for (auto& v : p) v /= z;
            std::vector<std::int64_t> order(E);
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) { return p[a] > p[b]; });
            long double top = 0;
            for (std::int64_t i = 0; i < k; ++i) top += p[order[i]];
            for (std::int64_t i = 0; i < k; ++i) {
                CHECK(chosen(t, i) == double(order[i]));
                const long double expected = normalize ? p[order[i]] / top : p[order[i]];
                CHECK(weight(t, i) == Approx(double(expected)).epsilon(1e-14));
            }
            if (normalize) CHECK(weight.row(t).sum() == Approx(1.0).epsilon(1e-14));
        }
    }
    // The tie in row 2: both at the top, the lower index first.
    Mat<double> weight, chosen;
    model::moe_router_forward(weight, chosen, logits, k, true);
    CHECK(chosen(2, 0) == 1.0);
    CHECK(chosen(2, 1) == 5.0);
    CHECK(weight(2, 0) == weight(2, 1));
}
