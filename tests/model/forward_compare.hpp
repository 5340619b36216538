// Two forwards of one model compared activation by activation: the helpers of the tests that pin how far
// another arithmetic (file-type weights with int8 products, bf16 products) moves the float32 forward.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <sinkscope/model/forward.hpp>
#include <sinkscope/model/hooks.hpp>
#include <sinkscope/model/load.hpp>

namespace sinkscope::test {

// The logits, every blocks.{l}.hook_resid_post, and the hooks named in `extra`, of one forward.
struct ForwardRun {
    model::Mat<float> logits;
    std::vector<model::Captured<float>> resid;
    std::map<std::string, model::Captured<float>> extra;
};

inline ForwardRun run_capturing(const model::LoadedModel<float>& m, const std::vector<std::int32_t>& tokens,
                                const std::vector<std::string>& extra = {}) {
    model::HookSet<float> hooks;
    model::ActivationCache<float> cache;
    std::vector<std::string> names;
    for (std::int64_t l = 0; l < m.config.n_layers; ++l) names.push_back("blocks." + std::to_string(l) + ".hook_resid_post");
    names.insert(names.end(), extra.begin(), extra.end());
    cache.attach(hooks, names);
    ForwardRun r;
    r.logits = model::forward(m.config, m.weights, tokens, &hooks);
    for (std::int64_t l = 0; l < m.config.n_layers; ++l) r.resid.push_back(cache[names[std::size_t(l)]]);
    for (const std::string& name : extra) r.extra[name] = cache[name];
    return r;
}

// ‖a − b‖ / ‖b‖ over n entries.
inline double relative_error(const float* a, const float* b, std::size_t n) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < n; ++i) num += double(a[i] - b[i]) * (a[i] - b[i]), den += double(b[i]) * b[i];
    return std::sqrt(num / std::max(den, 1e-300));
}

// Largest ‖Δ‖/‖ref‖ of the logits and of every resid_post; the shapes must agree.
inline std::pair<double, double> compare_runs(const ForwardRun& got, const ForwardRun& ref) {
    REQUIRE(got.logits.rows() == ref.logits.rows());
    REQUIRE(got.logits.cols() == ref.logits.cols());
    const double logits = relative_error(got.logits.data(), ref.logits.data(), std::size_t(ref.logits.size()));
    double resid = 0;
    REQUIRE(got.resid.size() == ref.resid.size());
    for (std::size_t l = 0; l < ref.resid.size(); ++l) {
        REQUIRE(got.resid[l].shape == ref.resid[l].shape);
        resid = std::max(resid, relative_error(got.resid[l].data.data(), ref.resid[l].data.data(), ref.resid[l].data.size()));
    }
    return {logits, resid};
}

// With SINKSCOPE_PRINT_ERRORS set, prints the two errors (how the pinned tolerances were measured).
inline void print_errors(const char* what, std::pair<double, double> e) {
    if (std::getenv("SINKSCOPE_PRINT_ERRORS")) std::printf("%s: logits %.3g, resid_post max %.3g\n", what, e.first, e.second);
}

// n deterministic token ids below `vocab`, the first 1.
inline std::vector<std::int32_t> some_tokens(std::int64_t vocab, int n) {
    std::vector<std::int32_t> t{1};
    for (int i = 1; i < n; ++i) t.push_back(std::int32_t((i * 7919 + 13) % vocab));
    return t;
}

}  // namespace sinkscope::test
