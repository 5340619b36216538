// Attribution patching on the residual stream: the first-order estimate of what patching one block's
// input at one position from a corrupted run into the clean run does to a metric, for every (block,
// position) at once, from one forward and one backward of the clean run and one forward of the
// corrupted one (Nanda's attribution patching; Kramár et al.'s AtP):
//
//   M = ℓ[t*, target] − ℓ[t*, contrast]        a logit difference at one position (contrast < 0: the logit alone)
//   Δ̂(l, t) = (x_corr[l, t] − x_clean[l, t]) · ∂M/∂x[l, t] |clean        x[l] = blocks.{l}.hook_resid_pre
//   Δ(l, t)  = M(clean run with x[l, t] ← x_corr[l, t]) − M(clean)          exact patching (one forward per site)
//
// Δ̂ − Δ is second order in the patched difference, so the two agree as it shrinks (the test patches
// ε-sized differences). The logits are those the model returns (after any soft cap). The gradient comes
// from train::backward, so it needs dense weights (float32 or double) and a config the CPU backward
// implements (Config::backward_missing_switches). It lives beside the backward (train/ is the floor that
// has gradients; analysis/ sits on the same floor and does not include it).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/core/measures.hpp"
#include "sinkscope/model/forward.hpp"
#include "sinkscope/model/hooks.hpp"
#include "sinkscope/model/interventions.hpp"
#include "sinkscope/train/model_backward.hpp"
#include "sinkscope/train/random.hpp"
#include "sinkscope/train/tape.hpp"

namespace sinkscope::train {

// The metric: the logit of `target` at position `position`, minus that of `contrast` when contrast ≥ 0.
struct LogitDifference {
    std::int64_t position = -1;  // −1: the last position
    std::int32_t target = 0;
    std::int32_t contrast = -1;
    template <class T>
    double operator()(const model::Mat<T>& logits) const {
        const std::int64_t t = position < 0 ? logits.rows() - 1 : position;
        return double(logits(t, target)) - (contrast >= 0 ? double(logits(t, contrast)) : 0.0);
    }
};

struct ResidualAttribution {
    std::int64_t layer = 0, position = 0;  // blocks.{layer}.hook_resid_pre, row `position`
    double estimate = 0;                   // Δ̂
    double exact = std::numeric_limits<double>::quiet_NaN();  // Δ, where exact patching ran
};

struct AttributionPatching {
    double clean_metric = 0, corrupted_metric = 0;
    std::vector<ResidualAttribution> sites;  // every (layer, position), layer-major
};

namespace detail {
inline std::string resid_pre_name(std::int64_t layer) { return model::BlockNames(layer)[model::HookId::resid_pre]; }
}  // namespace detail

// The estimates Δ̂ for every (layer, position) of the residual stream at the blocks' inputs. `corrupted`
// holds blocks.{l}.hook_resid_pre for every l from a run over a sequence of the same length (a cache of
// a forward over the corrupted tokens, or any activations of that shape); `corrupted_metric` is M of
// that run when known (NaN otherwise).
template <class T>
AttributionPatching attribution_patch_residual(const model::Config& c, const model::Weights<T>& w,
                                               const std::vector<std::int32_t>& clean,
                                               const std::map<std::string, model::Captured<T>>& corrupted,
                                               const LogitDifference& metric,
                                               double corrupted_metric = std::numeric_limits<double>::quiet_NaN()) {
    model::require_dense(w, "attribution patching (its backward)");
    require(!clean.empty(), "attribution patching: the clean sequence is empty");
    require(metric.target >= 0 && metric.target < c.vocab_size && metric.contrast < c.vocab_size,
            "attribution patching: the metric's tokens lie outside the vocabulary of " + std::to_string(c.vocab_size));
    require(metric.position < std::int64_t(clean.size()),
            "attribution patching: the metric's position " + std::to_string(metric.position) + " lies past the sequence of " +
                std::to_string(clean.size()) + " tokens");
    TapeRecorder<T> recorder(c, FiniteCheck::none);
    recorder.keep_bf16_operands(false);
    const Tape<T>& tape = recorder.record(w, clean);
    AttributionPatching out;
    out.clean_metric = metric(tape.logits);
    out.corrupted_metric = corrupted_metric;
    // dM/dlogits: +1 at (t*, target), −1 at (t*, contrast)
    model::Mat<T> dlogits = model::Mat<T>::Zero(tape.logits.rows(), tape.logits.cols());
    const std::int64_t t_star = metric.position < 0 ? tape.logits.rows() - 1 : metric.position;
    dlogits(t_star, metric.target) += T(1);
    if (metric.contrast >= 0) dlogits(t_star, metric.contrast) -= T(1);
    model::Weights<T> grads = zeros_like(w);
    std::vector<model::Mat<T>> dresid;
    backward(grads, dlogits, tape, w, c, &dresid);

    for (std::int64_t l = 0; l < c.n_layers; ++l) {
        const std::string name = detail::resid_pre_name(l);
        const auto found = corrupted.find(name);
        require(found != corrupted.end(), "attribution patching: the corrupted run has no '" + name + "'", {"", name, {}});
        const model::Captured<T>& x = found->second;
        const model::Mat<T>& x_clean = tape.layers[std::size_t(l)].resid_pre;
        require(std::int64_t(x.data.size()) == x_clean.size(),
                "attribution patching: the corrupted '" + name + "' has " + std::to_string(x.data.size()) + " entries, the clean run " +
                    std::to_string(x_clean.size()) + " (clean and corrupted sequences must have the same length)",
                {"", name, {}});
        const model::Mat<T>& g = dresid[std::size_t(l)];
        for (std::int64_t t = 0; t < x_clean.rows(); ++t) {
            double e = 0;
            for (std::int64_t j = 0; j < x_clean.cols(); ++j)
                e += (double(x.data[std::size_t(t * x_clean.cols() + j)]) - double(x_clean(t, j))) * double(g(t, j));
            out.sites.push_back({l, t, e});
        }
    }
    return out;
}

// The corrupted run a patch draws from: every block's hook_resid_pre over `tokens`, and the metric there.
template <class T>
struct CorruptedRun {
    std::map<std::string, model::Captured<T>> resid_pre;
    double metric = 0;
};
template <class T>
CorruptedRun<T> corrupted_run(const model::Config& c, const model::Weights<T>& w, const std::vector<std::int32_t>& tokens,
                              const LogitDifference& metric) {
    model::HookSet<T> hooks;
    model::ActivationCache<T> cache;
    cache.attach(hooks, [](const std::string& n) { return n.find("hook_resid_pre") != std::string::npos; });
    const double m = metric(model::forward(c, w, tokens, &hooks));
    return {cache.all(), m};
}

// From token ids: the corrupted run over `corrupt`, which must be as long as `clean`, and the estimates.
template <class T>
struct TokenAttribution {
    CorruptedRun<T> corrupted;
    AttributionPatching result;
};
template <class T>
TokenAttribution<T> attribution_patch_tokens(const model::Config& c, const model::Weights<T>& w, const std::vector<std::int32_t>& clean,
                                             const std::vector<std::int32_t>& corrupt, const LogitDifference& metric) {
    require(clean.size() == corrupt.size(), "attribution patching: the clean input is " + std::to_string(clean.size()) +
                                                " tokens and the corrupted one " + std::to_string(corrupt.size()) +
                                                "; attribution patching needs the same length");
    TokenAttribution<T> out{corrupted_run(c, w, corrupt, metric), {}};
    out.result = attribution_patch_residual(c, w, clean, out.corrupted.resid_pre, metric, out.corrupted.metric);
    return out;
}

// Exact patching of one site: M with blocks.{layer}.hook_resid_pre[position] taken from `corrupted`,
// minus `clean_metric` (M of a plain forward of the clean tokens: the same arithmetic as the patched one).
template <class T>
double exact_patch_residual(const model::Config& c, const model::Weights<T>& w, const std::vector<std::int32_t>& clean,
                            const std::map<std::string, model::Captured<T>>& corrupted, const LogitDifference& metric,
                            std::int64_t layer, std::int64_t position, double clean_metric) {
    model::HookSet<T> hooks;
    model::patch_sites(hooks, {model::PatchSite{detail::resid_pre_name(layer), -1, {position}, {}, {}}}, corrupted);
    return metric(model::forward(c, w, clean, &hooks)) - clean_metric;
}

// Indices of r.sites by decreasing |estimate| (ties in site order).
inline std::vector<std::size_t> by_magnitude(const AttributionPatching& r) {
    std::vector<std::size_t> order(r.sites.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&r](std::size_t a, std::size_t b) { return std::abs(r.sites[a].estimate) > std::abs(r.sites[b].estimate); });
    return order;
}

// Exact patching of the `k` sites of largest |estimate| and of k others drawn at random (Rng(seed)),
// filling their `exact`, and Spearman's ρ between estimate and exact over each set (NaN for fewer than two
// sites, or a constant set). `progress(done, total)` is called after each patched forward when given.
struct ExactComparison {
    std::vector<std::size_t> top, random;  // indices into AttributionPatching::sites
    double spearman_top = std::numeric_limits<double>::quiet_NaN();
    double spearman_random = std::numeric_limits<double>::quiet_NaN();
};
template <class T>
ExactComparison compare_with_exact(AttributionPatching& r, const model::Config& c, const model::Weights<T>& w,
                                   const std::vector<std::int32_t>& clean, const std::map<std::string, model::Captured<T>>& corrupted,
                                   const LogitDifference& metric, std::size_t k, std::uint64_t seed,
                                   const std::function<void(std::size_t, std::size_t)>& progress = {}) {
    const std::vector<std::size_t> order = by_magnitude(r);
    k = std::min(k, order.size());
    ExactComparison out;
    out.top.assign(order.begin(), order.begin() + std::ptrdiff_t(k));
    std::vector<std::size_t> rest(order.begin() + std::ptrdiff_t(k), order.end());
    Rng rng(seed);  // a partial Fisher–Yates shuffle: the first min(k, rest) entries are a uniform draw
    for (std::size_t i = 0; i < rest.size() && i < k; ++i) std::swap(rest[i], rest[i + std::size_t(rng.below(rest.size() - i))]);
    rest.resize(std::min(k, rest.size()));
    out.random = rest;
    const double clean_metric = metric(model::forward(c, w, clean));  // the patched forwards' own arithmetic
    const std::size_t total = out.top.size() + out.random.size();
    std::size_t done = 0;
    auto run = [&](const std::vector<std::size_t>& sites) {
        std::vector<double> est, ex;
        for (std::size_t i : sites) {
            ResidualAttribution& s = r.sites[i];
            s.exact = exact_patch_residual(c, w, clean, corrupted, metric, s.layer, s.position, clean_metric);
            est.push_back(s.estimate);
            ex.push_back(s.exact);
            if (progress) progress(++done, total);
        }
        if (sites.size() < 2) return std::numeric_limits<double>::quiet_NaN();
        return measures::spearman(est, ex);
    };
    out.spearman_top = run(out.top);
    out.spearman_random = run(out.random);
    return out;
}

}  // namespace sinkscope::train
