// train/trace.hpp against every field recomputed here from its definition (the header's list), in double, from
// the activations an ActivationCache captures and the logits a plain forward returns: α₀ per head and the sink
// rate, α_k, the top-3 |resid_post|, the mean of per-sequence medians |x| (the upper median), Sun's criterion
// per sequence, the position-0 and mean other-position norms, and the validation loss (log-softmax by hand).
// The massive-activation fields are also checked on a planted spike, where they must fire.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <sinkscope/model/forward.hpp>
#include <sinkscope/train/planted.hpp>
#include <sinkscope/train/trace.hpp>

#include "train/train_test_util.hpp"

using namespace sinkscope;
using model::Config;

namespace {

// The median |x| of a state as core/measures.hpp defines it: the upper median, s[⌊n/2⌋] of the sorted values.
double median(std::vector<double> x) {
    std::sort(x.begin(), x.end());
    return x[x.size() / 2];
}

template <class T>
void check_trace_by_hand(const Config& c, const model::Weights<T>& w, const std::vector<std::vector<std::int32_t>>& seqs) {
    const train::LossMask mask{};
    const double eps = 0.3;
    const auto rec = train::measure_trace(c, w, seqs, mask, eps);
    REQUIRE(rec.layers.size() == std::size_t(c.n_layers));
    const double S = double(seqs.size());
    const std::int64_t H = c.n_heads, d = c.d_model;
    std::vector<std::vector<double>> alpha0(c.n_layers, std::vector<double>(H, 0.0)), alpha_k(c.n_layers, std::vector<double>(4, 0.0));
    std::vector<double> sink_rate(c.n_layers, 0.0), med(c.n_layers, 0.0), ratio(c.n_layers, 0.0), massive(c.n_layers, 0.0),
        p0(c.n_layers, 0.0), rest(c.n_layers, 0.0);
    std::vector<std::vector<double>> peaks(c.n_layers);  // every |x| of every sequence, for the top 3
    double loss_sum = 0, loss_count = 0;
    for (const auto& seq : seqs) {
        const std::vector<std::int32_t> in(seq.begin(), seq.end() - 1);
        const std::int64_t n = std::int64_t(in.size());
        model::HookSet<T> hooks;
        model::ActivationCache<T> cache;
        cache.attach(hooks, [](const std::string& name) {
            return name.find("hook_pattern") != std::string::npos || name.find("hook_resid_post") != std::string::npos;
        });
        const model::Mat<T> logits = model::forward(c, w, in, &hooks);
        for (std::int64_t t = 0; t < n; ++t) {  // −log softmax(logits[t])[next token], every position counted
            double mx = -INFINITY, sum = 0;
            for (std::int64_t v = 0; v < logits.cols(); ++v) mx = std::max(mx, double(logits(t, v)));
            for (std::int64_t v = 0; v < logits.cols(); ++v) sum += std::exp(double(logits(t, v)) - mx);
            loss_sum += mx + std::log(sum) - double(logits(t, seq[std::size_t(t) + 1]));
            loss_count += 1;
        }
        for (std::int64_t l = 0; l < c.n_layers; ++l) {
            const auto& p = cache[model::hook_name("pattern", l)].data;  // [H, n, n]
            double sinks = 0;
            for (std::int64_t h = 0; h < H; ++h) {
                for (std::int64_t k = 0; k < 4; ++k) {
                    double a = 0;  // the mean over queries t ≥ k of A[t, k]
                    for (std::int64_t t = k; t < n; ++t) a += double(p[std::size_t((h * n + t) * n + k)]);
                    a /= double(n - k);
                    if (k == 0) {
                        alpha0[l][h] += a / S;
                        sinks += a > eps;
                    }
                    alpha_k[l][k] += a / double(H) / S;
                }
            }
            sink_rate[l] += sinks / double(H) / S;
            const auto& x = cache[model::hook_name("resid_post", l)].data;  // [n, d]
            std::vector<double> ab;
            for (std::int64_t t = 0; t < n; ++t) {
                double sq = 0;
                for (std::int64_t j = 0; j < d; ++j) {
                    sq += double(x[std::size_t(t * d + j)]) * x[std::size_t(t * d + j)];
                    ab.push_back(std::abs(double(x[std::size_t(t * d + j)])));
                }
                (t == 0 ? p0[l] : rest[l]) += std::sqrt(sq) / (t == 0 ? 1.0 : double(n - 1)) / S;
            }
            const double m = median(ab), top = *std::max_element(ab.begin(), ab.end());
            med[l] += m / S;
            ratio[l] = std::max(ratio[l], top / m);
            massive[l] += (top > 100 && top >= 1000 * m) / S;
            peaks[l].insert(peaks[l].end(), ab.begin(), ab.end());
        }
    }
    CHECK(rec.val_loss == Approx(loss_sum / loss_count).epsilon(1e-6));
    double mean_rate = 0;
    for (std::int64_t l = 0; l < c.n_layers; ++l) {
        INFO("layer " << l);
        const auto& L = rec.layers[std::size_t(l)];
        for (std::int64_t h = 0; h < H; ++h) CHECK(L.alpha0[std::size_t(h)] == Approx(alpha0[l][h]).epsilon(1e-9));
        REQUIRE(L.alpha_k.size() == 4);
        for (std::size_t k = 0; k < 4; ++k) CHECK(L.alpha_k[k] == Approx(alpha_k[l][k]).epsilon(1e-9));
        CHECK(L.sink_rate == Approx(sink_rate[l]).margin(1e-12));
        CHECK(L.median_abs == Approx(med[l]).epsilon(1e-9));
        CHECK(L.top1_over_median == Approx(ratio[l]).epsilon(1e-9));
        CHECK(L.massive_fraction == Approx(massive[l]).margin(1e-12));
        CHECK(L.p0_norm == Approx(p0[l]).epsilon(1e-9));
        CHECK(L.rest_norm == Approx(rest[l]).epsilon(1e-9));
        std::sort(peaks[l].begin(), peaks[l].end(), std::greater<>());
        for (std::size_t i = 0; i < 3; ++i) CHECK(L.top[i].value == Approx(peaks[l][i]).epsilon(1e-12));
        mean_rate += sink_rate[l] / double(c.n_layers);
    }
    CHECK(rec.sink_rate == Approx(mean_rate).margin(1e-12));
}

}  // namespace

TEST_CASE("training trace: every field against its definition, recomputed by hand", "[train][trace]") {
    std::vector<std::vector<std::int32_t>> seqs;
    SECTION("random tiny Llama") {
        const Config c = test::tiny_llama_config();
        for (std::uint64_t s = 0; s < 3; ++s) seqs.push_back(test::random_tokens(9, c.vocab_size, 40 + s));
        check_trace_by_hand(c, test::random_test_weights<double>(c, 43), seqs);
    }
    SECTION("planted massive activation: Sun's criterion fires after the step-up layer") {
        const Config c = train::planted_default_config();
        const auto w = train::planted_massive(c, train::PlantedOptions{});
        for (std::uint64_t s = 0; s < 3; ++s) seqs.push_back(test::random_tokens(12, c.vocab_size, 44 + s));
        check_trace_by_hand(c, w, seqs);
        const auto rec = train::measure_trace(c, w, seqs, train::LossMask{});
        double most = 0;
        for (const auto& L : rec.layers) most = std::max(most, L.massive_fraction);
        CHECK(most == 1.0);  // every sequence carries the planted spike in some layer
    }
}
