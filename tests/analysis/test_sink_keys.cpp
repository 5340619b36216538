// analysis/sink_keys.hpp: the mean-field α₀ is exact when every ordinary logit sits `gap` below the
// sink logit (checked against a softmax computed here by definition); gaps and subspaces of constructed heads.
#include <catch2/catch.hpp>

#include <cmath>
#include <sinkscope/analysis/sink_keys.hpp>

using namespace sinkscope::analysis;

TEST_CASE("mean-field alpha_0 equals the exact softmax when ordinary logits are equal", "[analysis][sink_keys]") {
    // d_h = 4, q_t = e1 for all t; sink key = g·√d_h·e1; ordinary keys 0: logit gap exactly g.
    const int T = 16, dh = 4;
    for (double g : {-2.0, 0.0, 1.5, 6.0}) {
        RowMatrixXd q = RowMatrixXd::Zero(T, dh), k = RowMatrixXd::Zero(T, dh);
        q.col(0).setOnes();
        Eigen::VectorXd ks = Eigen::VectorXd::Zero(dh);
        ks[0] = g * std::sqrt(double(dh));
        k.row(0) = ks.transpose();
        CHECK(sink_logit_gap(q, k, ks) == Approx(g).margin(1e-12));
        // Exact α₀ = (1/T) Σ_t softmax over keys 0..t of (g, 0, …, 0) at key 0.
        double alpha = 0;
        for (int t = 0; t < T; ++t) alpha += std::exp(g) / (std::exp(g) + t);
        alpha /= T;
        CHECK(mean_field_sink_attention(g, T) == Approx(alpha).epsilon(1e-12));
    }
    CHECK(mean_field_sink_attention(50.0, 64) == Approx(1.0).epsilon(1e-12));
    CHECK(mean_field_sink_attention(-50.0, 64) == Approx(1.0 / 64).epsilon(1e-9));
}

TEST_CASE("sink_key_geometry finds a one-dimensional sink subspace and aligned queries", "[analysis][sink_keys]") {
    const int dh = 6;
    RowMatrixXd sink(5, dh), ordinary(6, dh), queries(3, dh);
    sink.setZero();
    for (int i = 0; i < 5; ++i) sink(i, 0) = 10 + i;          // all along e1
    ordinary.setZero();
    for (int i = 0; i < 6; ++i) ordinary(i, 1 + i % 5) = 1;   // spread over e2..e6
    queries.setZero();
    queries.col(0).setConstant(1.0);                          // q = e1 + e2: half its energy on the sink axis
    queries.col(1).setConstant(1.0);
    const auto g = sink_key_geometry(sink, ordinary, queries, 0.9);
    CHECK(g.sink_dim == 1);
    CHECK(g.ordinary_dim >= 4);
    CHECK(g.sink_top_share == Approx(1.0));
    CHECK(g.query_sink_share == Approx(0.5));
    CHECK_THROWS_AS(sink_logit_gap(queries, ordinary, Eigen::VectorXd::Zero(dh)), sinkscope::Error);  // T mismatch
}
