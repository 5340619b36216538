// model/forward.hpp against a plain reference: the pre-norm Llama forward written out here in loops over
// doubles, one equation per line (RMSNorm, RoPE in Hugging Face's half-split form, causal softmax attention
// with grouped-query heads and an optional sliding window, SwiGLU, tied head). The forward in double must give
// the same logits to rounding. Families and switches are checked against transformers in test_reference.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <sinkscope/model/forward.hpp>

#include "model/tiny_model.hpp"

using namespace sinkscope::model;
using sinkscope::test::random_weights;
using sinkscope::test::tiny_llama;

namespace {
using Rows = std::vector<std::vector<double>>;

// y_t = x_t / sqrt(mean_i x_ti² + ε) · g
Rows rms_norm(const Rows& x, const Vec<double>& g, double eps) {
    Rows y = x;
    for (auto& row : y) {
        double ms = 0;
        for (double v : row) ms += v * v;
        const double r = 1.0 / std::sqrt(ms / double(row.size()) + eps);
        for (std::size_t i = 0; i < row.size(); ++i) row[i] *= r * g(Eigen::Index(i));
    }
    return y;
}

// y_t = W x_t
Rows linear(const Rows& x, const Mat<double>& w) {
    Rows y(x.size(), std::vector<double>(std::size_t(w.rows()), 0.0));
    for (std::size_t t = 0; t < x.size(); ++t)
        for (Eigen::Index o = 0; o < w.rows(); ++o)
            for (Eigen::Index i = 0; i < w.cols(); ++i) y[t][std::size_t(o)] += w(o, i) * x[t][std::size_t(i)];
    return y;
}

// Half-split RoPE of each head: (a_i, a_{i+d/2}) rotated by θ = t · base^(−2i/d).
void rope(Rows& x, std::int64_t heads, std::int64_t dh, double base) {
    for (std::size_t t = 0; t < x.size(); ++t)
        for (std::int64_t h = 0; h < heads; ++h)
            for (std::int64_t i = 0; i < dh / 2; ++i) {
                const double th = double(t) * std::pow(base, -2.0 * double(i) / double(dh));
                double& a = x[t][std::size_t(h * dh + i)];
                double& b = x[t][std::size_t(h * dh + i + dh / 2)];
                const double a0 = a, b0 = b;
                a = a0 * std::cos(th) - b0 * std::sin(th);
                b = b0 * std::cos(th) + a0 * std::sin(th);
            }
}

std::vector<std::vector<double>> reference_logits(const Config& c, const Weights<double>& w, const std::vector<std::int32_t>& ids) {
    const std::int64_t T = std::int64_t(ids.size()), H = c.n_heads, dh = c.head_dim, group = c.n_heads / c.n_kv_heads;
    Rows x(ids.size());
    for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t i = 0; i < c.d_model; ++i) x[std::size_t(t)].push_back(w.tok_embed(ids[std::size_t(t)], i));
    for (const auto& L : w.layers) {
        const Rows n1 = rms_norm(x, L.attn_norm.weight, c.norm_eps);
        Rows q = linear(n1, L.wq), k = linear(n1, L.wk);
        const Rows v = linear(n1, L.wv);
        rope(q, H, dh, c.rope_base);
        rope(k, c.n_kv_heads, dh, c.rope_base);
        Rows z(std::size_t(T), std::vector<double>(std::size_t(H * dh), 0.0));
        for (std::int64_t h = 0; h < H; ++h) {
            const std::int64_t kvh = h / group;  // query head h reads key/value head h / (H / kvH)
            for (std::int64_t t = 0; t < T; ++t) {
                // a_tj = softmax_j (q_t · k_j / √d_h) over t − w < j ≤ t (all j ≤ t without a window)
                const std::int64_t first = c.sliding_window > 0 ? std::max<std::int64_t>(0, t - c.sliding_window + 1) : 0;
                std::vector<double> s;
                double top = -1e300;
                for (std::int64_t j = first; j <= t; ++j) {
                    double d = 0;
                    for (std::int64_t i = 0; i < dh; ++i) d += q[std::size_t(t)][std::size_t(h * dh + i)] * k[std::size_t(j)][std::size_t(kvh * dh + i)];
                    s.push_back(d / std::sqrt(double(dh)));
                    top = std::max(top, s.back());
                }
                double sum = 0;
                for (double& e : s) sum += (e = std::exp(e - top));
                for (std::int64_t j = first; j <= t; ++j)
                    for (std::int64_t i = 0; i < dh; ++i)
                        z[std::size_t(t)][std::size_t(h * dh + i)] += s[std::size_t(j - first)] / sum * v[std::size_t(j)][std::size_t(kvh * dh + i)];
            }
        }
        const Rows attn = linear(z, L.wo);
        for (std::int64_t t = 0; t < T; ++t)
            for (std::int64_t i = 0; i < c.d_model; ++i) x[std::size_t(t)][std::size_t(i)] += attn[std::size_t(t)][std::size_t(i)];
        const Rows n2 = rms_norm(x, L.ffn_norm.weight, c.norm_eps);
        Rows g = linear(n2, L.w_gate);
        const Rows u = linear(n2, L.w_up);
        for (std::size_t t = 0; t < g.size(); ++t)
            for (std::size_t i = 0; i < g[t].size(); ++i) g[t][i] = g[t][i] / (1 + std::exp(-g[t][i])) * u[t][i];  // silu(gate)·up
        const Rows mlp = linear(g, L.w_down);
        for (std::int64_t t = 0; t < T; ++t)
            for (std::int64_t i = 0; i < c.d_model; ++i) x[std::size_t(t)][std::size_t(i)] += mlp[std::size_t(t)][std::size_t(i)];
    }
    return linear(rms_norm(x, w.final_norm.weight, c.norm_eps), w.tok_embed);  // tied head
}
}  // namespace

TEST_CASE("forward: a pre-norm Llama equals the plain reference, with and without a sliding window", "[forward][reference]") {
    for (const std::int64_t window : {0, 3}) {
        CAPTURE(window);
        Config c = tiny_llama();
        c.sliding_window = window;
        c.validate();
        const auto w = random_weights<double>(c, 11);
        const std::vector<std::int32_t> ids = {5, 0, 31, 7, 7, 2, 19, 3};
        const Mat<double> logits = forward(c, w, ids);
        const auto ref = reference_logits(c, w, ids);
        double scale = 0, err = 0;
        for (std::size_t t = 0; t < ids.size(); ++t)
            for (std::int64_t i = 0; i < c.vocab_size; ++i) {
                scale = std::max(scale, std::abs(ref[t][std::size_t(i)]));
                err = std::max(err, std::abs(logits(Eigen::Index(t), i) - ref[t][std::size_t(i)]));
            }
        CAPTURE(err, scale);
        CHECK(err <= 1e-12 * scale);
        CHECK(scale > 0.1);  // the logits are not all near zero
    }
}
