// Attribution patching: the first-order estimate of what patching one site (a block's hooked activation at
// one position, one head, or one group of channels) from a corrupted run into the clean run does to a metric,
// for every site at once, from one forward and one backward of the clean run and one forward of the corrupted
// one (Nanda's attribution patching; Kramár et al.'s AtP):
//
//   M = ℓ[t*, target] − ℓ[t*, contrast]        a logit difference at one position (contrast < 0: the logit alone);
//       or the same difference of log-probabilities, or the next-token loss (Metric, MetricKind)
//   Δ̂(site) = Σ_{j ∈ site} (a_corr[j] − a_clean[j]) · ∂M/∂a[j] |clean       a: the site's hooked activation
//   Δ(site)  = M(clean run with a[site] ← a_corr[site]) − M(clean)         exact patching (one forward per site)
//
// Sites (AttributionSites): blocks.{l}.hook_resid_pre, hook_attn_out and hook_mlp_out per position (all of
// d_model), attn.hook_z per (position, head) (that head's d_head entries, before W_O), and named channel groups of
// hook_resid_pre per position (e.g. the massive-activation channels). Δ̂ − Δ is second order in the patched
// difference, so the two agree as it shrinks (the tests patch ε-sized differences). The logits are those the
// model returns (after any soft cap). The gradients come from train::backward, so they need dense weights
// (float32 or double) and a config the CPU backward implements (Config::backward_missing_switches). It lives
// beside the backward (train/ is the floor that has gradients; analysis/ sits on the same floor and does not
// include it).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/core/measures.hpp"
#include "sinkscope/model/forward.hpp"
#include "sinkscope/model/hooks.hpp"
#include "sinkscope/model/interventions.hpp"
#include "sinkscope/train/loss.hpp"
#include "sinkscope/train/model_backward.hpp"
#include "sinkscope/train/random.hpp"
#include "sinkscope/train/tape.hpp"

namespace sinkscope::train {

// What the metric M reads from the logits z (T × V), with p_t = softmax(z_t):
//   logit     z[t*, target] − z[t*, contrast]                      (the contrast term only when contrast ≥ 0)
//   log_prob  log p_t*[target] − log p_t*[contrast]                 (with a contrast, equal to `logit`)
//   loss      (1/N) Σ_{t<N} −log p_t[next_tokens[t]]               (next-token cross-entropy, N = |next_tokens|)
enum class MetricKind { logit, log_prob, loss };

inline const char* to_string(MetricKind k) { return k == MetricKind::log_prob ? "logprob" : k == MetricKind::loss ? "loss" : "logit"; }

// The word of the CLI (--metric) and the Python module (metric=) for a kind; an Error for another word.
inline MetricKind metric_kind_from(const std::string& word) {
    if (word == "logit") return MetricKind::logit;
    if (word == "logprob") return MetricKind::log_prob;
    if (word == "loss") return MetricKind::loss;
    throw Error("metric must be 'logit', 'logprob' or 'loss', not '" + word + "'");
}

// The metric M of the logits whose change the sites' patches are scored by (MetricKind says which), and its
// gradient dM/dz, which the backward starts from. `position` −1 is the last position; `next_tokens` are the
// loss's targets (for the clean sequence s, its s[1:]: next_token_loss(s)). The log-probability and the loss
// are train::cross_entropy's (the trainer's loss and its gradient).
struct LogitDifference {
    LogitDifference() = default;
    LogitDifference(std::int64_t position_, std::int32_t target_, std::int32_t contrast_ = -1, MetricKind kind_ = MetricKind::logit,
                    std::vector<std::int32_t> next_tokens_ = {})
        : position(position_), target(target_), contrast(contrast_), kind(kind_), next_tokens(std::move(next_tokens_)) {}

    std::int64_t position = -1;  // −1: the last position
    std::int32_t target = 0;
    std::int32_t contrast = -1;
    MetricKind kind = MetricKind::logit;
    std::vector<std::int32_t> next_tokens;  // MetricKind::loss only

    // The mean next-token cross-entropy of the sequence `tokens` (its logits row t predicts tokens[t + 1]).
    static LogitDifference next_token_loss(const std::vector<std::int32_t>& tokens) {
        return {-1, 0, -1, MetricKind::loss, tokens.size() > 1 ? std::vector<std::int32_t>(tokens.begin() + 1, tokens.end())
                                                               : std::vector<std::int32_t>{}};
    }

    template <class T>
    double operator()(const model::Mat<T>& logits) const {
        if (kind == MetricKind::loss) {
            const LossSum l = cross_entropy<T>(nullptr, logits, targets_of(logits), loss_rows(logits), T(1));
            return l.sum / double(l.count);
        }
        const std::int64_t t = row(logits);
        if (kind == MetricKind::log_prob && contrast < 0)  // log p_t*[target] = −(cross-entropy of row t*)
            return -cross_entropy<T>(nullptr, logits, targets_of(logits), loss_rows(logits), T(1)).sum;
        return double(logits(t, target)) - (contrast >= 0 ? double(logits(t, contrast)) : 0.0);
    }

    // dM/dz: logit (and log_prob with a contrast): e_target − e_contrast at row t*; log_prob alone: e_target − p_t*;
    // loss: (p_t − e_{next_tokens[t]}) / N on each row t < N.
    template <class T>
    model::Mat<T> gradient(const model::Mat<T>& logits) const {
        model::Mat<T> d = model::Mat<T>::Zero(logits.rows(), logits.cols());
        if (kind == MetricKind::loss) {
            cross_entropy<T>(&d, logits, targets_of(logits), loss_rows(logits), T(1.0 / double(next_tokens.size())));
            return d;
        }
        if (kind == MetricKind::log_prob && contrast < 0) {
            cross_entropy<T>(&d, logits, targets_of(logits), loss_rows(logits), T(-1));
            return d;
        }
        const std::int64_t t = row(logits);
        d(t, target) += T(1);
        if (contrast >= 0) d(t, contrast) -= T(1);
        return d;
    }

    // Error naming what does not fit a model of `vocab` tokens and a sequence of `length` positions.
    void check(std::int64_t vocab, std::int64_t length) const {
        if (kind == MetricKind::loss) {
            require(!next_tokens.empty() && std::int64_t(next_tokens.size()) <= length,
                    "attribution patching: the loss needs between 1 and " + std::to_string(length) + " next tokens, not " +
                        std::to_string(next_tokens.size()));
            for (std::int32_t id : next_tokens)
                require(id >= 0 && id < vocab, "attribution patching: the loss's next token " + std::to_string(id) +
                                                   " lies outside the vocabulary of " + std::to_string(vocab));
            return;
        }
        require(target >= 0 && target < vocab && contrast < vocab,
                "attribution patching: the metric's tokens lie outside the vocabulary of " + std::to_string(vocab));
        require(position < length, "attribution patching: the metric's position " + std::to_string(position) +
                                       " lies past the sequence of " + std::to_string(length) + " tokens");
    }

private:
    template <class T>
    std::int64_t row(const model::Mat<T>& logits) const { return position < 0 ? logits.rows() - 1 : position; }
    // The rows cross_entropy counts: the loss's first N rows, or the log-probability's row t*.
    template <class T>
    LossMask loss_rows(const model::Mat<T>& logits) const {
        if (kind == MetricKind::loss) return {0, std::int64_t(next_tokens.size()), false};
        return {row(logits), row(logits) + 1, false};
    }
    // One target per row, as cross_entropy takes them; rows outside loss_rows(logits) are not read.
    template <class T>
    std::vector<std::int32_t> targets_of(const model::Mat<T>& logits) const {
        std::vector<std::int32_t> y(std::size_t(logits.rows()), 0);
        if (kind == MetricKind::loss) std::copy_n(next_tokens.begin(), std::min(next_tokens.size(), y.size()), y.begin());
        else y[std::size_t(row(logits))] = target;
        return y;
    }
};

// The same type under the name of what it now is: any of the metrics above.
using Metric = LogitDifference;

// A channel group of the residual stream, scored as one site per (block, position): its channels of
// blocks.{l}.hook_resid_pre patched together.
struct ChannelGroup {
    std::string name;
    std::vector<std::int64_t> channels;
};

// Which sites to score.
struct AttributionSites {
    bool resid_pre = true;   // blocks.{l}.hook_resid_pre, per position
    bool attn_out = false;   // blocks.{l}.hook_attn_out, per position
    bool z = false;          // blocks.{l}.attn.hook_z, per (position, head)
    bool mlp_out = false;    // blocks.{l}.hook_mlp_out, per position (blocks with an FFN)
    std::vector<ChannelGroup> groups;  // channel groups of blocks.{l}.hook_resid_pre, per position
};

// Sites from hook names ("resid_pre", "attn_out", "z", "mlp_out", as the CLI's --sites and Python's `sites`
// spell them) and channel groups; an unknown name is an Error naming it.
inline AttributionSites attribution_sites(const std::vector<std::string>& hooks, std::vector<ChannelGroup> groups = {}) {
    AttributionSites which;
    which.resid_pre = false;
    for (const std::string& h : hooks) {
        if (h == "resid_pre") which.resid_pre = true;
        else if (h == "attn_out") which.attn_out = true;
        else if (h == "z") which.z = true;
        else if (h == "mlp_out") which.mlp_out = true;
        else throw Error("attribution patching: unknown site '" + h + "' (resid_pre, attn_out, z, mlp_out)");
    }
    which.groups = std::move(groups);
    return which;
}

struct AttributionSite {
    std::int64_t layer = 0, position = 0;        // the block and the row of its hooked activation
    model::HookId hook = model::HookId::resid_pre;  // resid_pre, attn_out, z or mlp_out
    std::int64_t head = -1;                      // z: the head; −1 elsewhere
    std::int64_t group = -1;                     // resid_pre: the channel group (AttributionPatching::groups); −1: every channel
    double estimate = 0;                         // Δ̂
    double exact = std::numeric_limits<double>::quiet_NaN();  // Δ, where exact patching ran
    std::string hook_name() const { return model::BlockNames(layer)[hook]; }
};
using ResidualAttribution = AttributionSite;  // the name of a site when only the residual stream was scored

struct AttributionPatching {
    double clean_metric = 0, corrupted_metric = 0;
    // Per block, in this order: resid_pre per position; each group per position; attn_out per position; z per
    // (position, head), position-major; mlp_out per position.
    std::vector<AttributionSite> sites;
    std::vector<ChannelGroup> groups;
};

namespace detail {
inline std::string resid_pre_name(std::int64_t layer) { return model::BlockNames(layer)[model::HookId::resid_pre]; }

// The hook names `which` patches in block `layer` (an FFN-less block has no hook_mlp_out).
inline std::vector<std::string> attribution_hooks(const model::Config& c, const AttributionSites& which, std::int64_t layer) {
    const model::BlockNames names(layer);
    std::vector<std::string> out;
    if (which.resid_pre || !which.groups.empty()) out.push_back(names[model::HookId::resid_pre]);
    if (which.attn_out) out.push_back(names[model::HookId::attn_out]);
    if (which.z) out.push_back(names[model::HookId::z]);
    if (which.mlp_out && c.ffn != model::FfnKind::none) out.push_back(names[model::HookId::mlp_out]);
    return out;
}

// Every activation `which` patches, from one forward over `tokens`, and M there.
template <class T>
std::pair<std::map<std::string, model::Captured<T>>, double> capture_sites(const model::Config& c, const model::Weights<T>& w,
                                                                        const std::vector<std::int32_t>& tokens,
                                                                        const LogitDifference& metric, const AttributionSites& which) {
    std::vector<std::string> wanted;
    for (std::int64_t l = 0; l < c.n_layers; ++l)
        for (auto& n : attribution_hooks(c, which, l)) wanted.push_back(std::move(n));
    model::HookSet<T> hooks;
    model::ActivationCache<T> cache;
    cache.attach(hooks, [&wanted](const std::string& n) { return std::find(wanted.begin(), wanted.end(), n) != wanted.end(); });
    const double m = metric(model::forward(c, w, tokens, &hooks));
    return {cache.all(), m};
}

template <class T>
const model::Captured<T>& site_activation(const std::map<std::string, model::Captured<T>>& run, const std::string& name, const char* which) {
    const auto found = run.find(name);
    require(found != run.end(), std::string("attribution patching: the ") + which + " run has no '" + name + "'", {"", name, {}});
    return found->second;
}
}  // namespace detail

// The estimates Δ̂ for every site `which` names. `corrupted` holds each of those hooks' activations from a
// run over a sequence of the same length (a cache of a forward over the corrupted tokens, or any activations
// of that shape); `corrupted_metric` is M of that run when known (NaN otherwise).
template <class T>
AttributionPatching attribution_patch(const model::Config& c, const model::Weights<T>& w, const std::vector<std::int32_t>& clean,
                                      const std::map<std::string, model::Captured<T>>& corrupted, const LogitDifference& metric,
                                      const AttributionSites& which,
                                      double corrupted_metric = std::numeric_limits<double>::quiet_NaN()) {
    model::require_dense(w, "attribution patching (its backward)");
    require(!clean.empty(), "attribution patching: the clean sequence is empty");
    metric.check(c.vocab_size, std::int64_t(clean.size()));
    require(which.resid_pre || which.attn_out || which.z || which.mlp_out || !which.groups.empty(),
            "attribution patching: no site to score (no hook and no channel group)");
    for (const ChannelGroup& g : which.groups) {
        require(!g.channels.empty(), "attribution patching: the channel group '" + g.name + "' is empty");
        for (std::int64_t ch : g.channels)
            require(ch >= 0 && ch < c.d_model, "attribution patching: channel " + std::to_string(ch) + " of the group '" + g.name +
                                                   "' lies outside d_model = " + std::to_string(c.d_model));
    }
    TapeRecorder<T> recorder(c, FiniteCheck::none);
    recorder.keep_bf16_operands(false);
    const Tape<T>& tape = recorder.record(w, clean);
    AttributionPatching out;
    out.clean_metric = metric(tape.logits);
    out.corrupted_metric = corrupted_metric;
    out.groups = which.groups;
    const model::Mat<T> dlogits = metric.gradient(tape.logits);
    model::Weights<T> grads = zeros_like(w);
    std::vector<BlockActivationGradients<T>> act;
    backward(grads, dlogits, tape, w, c, act);
    // The clean activations from a plain forward: the same arithmetic as the corrupted run's.
    const auto clean_run = detail::capture_sites(c, w, clean, metric, which).first;

    // Σ over the row's entries [j0, j0 + width) (or `channels`) of (a_corr − a_clean)·g
    auto dot = [](const model::Captured<T>& corr, const model::Captured<T>& cl, const model::Mat<T>& g, std::int64_t t, std::int64_t j0,
                  std::int64_t width, const std::vector<std::int64_t>* channels) {
        const std::int64_t row = g.cols();
        double e = 0;
        auto term = [&](std::int64_t j) {
            const std::size_t k = std::size_t(t * row + j);
            e += (double(corr.data[k]) - double(cl.data[k])) * double(g(t, j));
        };
        if (channels) for (std::int64_t j : *channels) term(j);
        else for (std::int64_t j = j0; j < j0 + width; ++j) term(j);
        return e;
    };
    for (std::int64_t l = 0; l < c.n_layers; ++l) {
        const BlockActivationGradients<T>& a = act[std::size_t(l)];
        auto site_pair = [&](model::HookId id, const model::Mat<T>& g) {
            const std::string name = model::BlockNames(l)[id];
            const model::Captured<T>& x = detail::site_activation(corrupted, name, "corrupted");
            const model::Captured<T>& y = detail::site_activation(clean_run, name, "clean");
            require(std::int64_t(x.data.size()) == g.size() && y.data.size() == x.data.size(),
                    "attribution patching: the corrupted '" + name + "' has " + std::to_string(x.data.size()) + " entries, the clean run " +
                        std::to_string(g.size()) + " (clean and corrupted sequences must have the same length)",
                    {"", name, {}});
            return std::pair<const model::Captured<T>&, const model::Captured<T>&>(x, y);
        };
        auto per_position = [&](model::HookId id, const model::Mat<T>& g, std::int64_t group) {
            const auto [x, y] = site_pair(id, g);
            const std::vector<std::int64_t>* channels = group >= 0 ? &which.groups[std::size_t(group)].channels : nullptr;
            for (std::int64_t t = 0; t < g.rows(); ++t)
                out.sites.push_back({l, t, id, -1, group, dot(x, y, g, t, 0, g.cols(), channels)});
        };
        if (which.resid_pre) per_position(model::HookId::resid_pre, a.resid_pre, -1);
        for (std::size_t k = 0; k < which.groups.size(); ++k) per_position(model::HookId::resid_pre, a.resid_pre, std::int64_t(k));
        if (which.attn_out) per_position(model::HookId::attn_out, a.attn_out, -1);
        if (which.z) {
            const auto [x, y] = site_pair(model::HookId::z, a.z);
            const std::int64_t H = c.n_heads, dh = c.head_dim;
            for (std::int64_t t = 0; t < a.z.rows(); ++t)
                for (std::int64_t h = 0; h < H; ++h)
                    out.sites.push_back({l, t, model::HookId::z, h, -1, dot(x, y, a.z, t, h * dh, dh, nullptr)});
        }
        if (which.mlp_out && c.ffn != model::FfnKind::none) per_position(model::HookId::mlp_out, a.mlp_out, -1);
    }
    return out;
}

// The residual stream only: every (layer, position) of blocks.{l}.hook_resid_pre.
template <class T>
AttributionPatching attribution_patch_residual(const model::Config& c, const model::Weights<T>& w,
                                               const std::vector<std::int32_t>& clean,
                                               const std::map<std::string, model::Captured<T>>& corrupted,
                                               const LogitDifference& metric,
                                               double corrupted_metric = std::numeric_limits<double>::quiet_NaN()) {
    return attribution_patch(c, w, clean, corrupted, metric, AttributionSites{}, corrupted_metric);
}

// The corrupted run a patch draws from: every activation the sites read, over `tokens`, and the metric there.
template <class T>
struct CorruptedRun {
    std::map<std::string, model::Captured<T>> activations;
    double metric = 0;
};
template <class T>
CorruptedRun<T> corrupted_run(const model::Config& c, const model::Weights<T>& w, const std::vector<std::int32_t>& tokens,
                              const LogitDifference& metric, const AttributionSites& which = {}) {
    auto [acts, m] = detail::capture_sites(c, w, tokens, metric, which);
    return {std::move(acts), m};
}

// From token ids: the corrupted run over `corrupt`, which must be as long as `clean`, and the estimates.
template <class T>
struct TokenAttribution {
    CorruptedRun<T> corrupted;
    AttributionPatching result;
};
template <class T>
TokenAttribution<T> attribution_patch_tokens(const model::Config& c, const model::Weights<T>& w, const std::vector<std::int32_t>& clean,
                                             const std::vector<std::int32_t>& corrupt, const LogitDifference& metric,
                                             const AttributionSites& which = {}) {
    require(clean.size() == corrupt.size(), "attribution patching: the clean input is " + std::to_string(clean.size()) +
                                                " tokens and the corrupted one " + std::to_string(corrupt.size()) +
                                                "; attribution patching needs the same length");
    TokenAttribution<T> out{corrupted_run(c, w, corrupt, metric, which), {}};
    out.result = attribution_patch(c, w, clean, out.corrupted.activations, metric, which, out.corrupted.metric);
    return out;
}

// The patch of one site, as patch_sites takes it.
inline model::PatchSite patch_site(const AttributionPatching& r, const AttributionSite& s) {
    model::PatchSite p{s.hook_name(), -1, {s.position}, {}, {}};
    if (s.head >= 0) p.heads = {s.head};
    if (s.group >= 0) p.channels = r.groups[std::size_t(s.group)].channels;
    return p;
}

// Exact patching of one site: M with the site taken from `corrupted`, minus `clean_metric` (M of a plain
// forward of the clean tokens: the same arithmetic as the patched one).
template <class T>
double exact_patch(const model::Config& c, const model::Weights<T>& w, const std::vector<std::int32_t>& clean,
                   const std::map<std::string, model::Captured<T>>& corrupted, const LogitDifference& metric, const model::PatchSite& site,
                   double clean_metric) {
    model::HookSet<T> hooks;
    model::patch_sites(hooks, {site}, corrupted);
    return metric(model::forward(c, w, clean, &hooks)) - clean_metric;
}

// Exact patching of blocks.{layer}.hook_resid_pre[position].
template <class T>
double exact_patch_residual(const model::Config& c, const model::Weights<T>& w, const std::vector<std::int32_t>& clean,
                            const std::map<std::string, model::Captured<T>>& corrupted, const LogitDifference& metric,
                            std::int64_t layer, std::int64_t position, double clean_metric) {
    return exact_patch(c, w, clean, corrupted, metric, model::PatchSite{detail::resid_pre_name(layer), -1, {position}, {}, {}},
                       clean_metric);
}

// One kind of site's estimates and exact values as arrays, in the sites' order: [layer, position] ([layer,
// position, head] for z). `suffix` names it as the CLI's files and Python's keys do ("" for the block inputs,
// "_attn_out", "_z", "_mlp_out", "_group_NAME"); `site` says what was patched.
struct SiteArrays {
    std::string suffix, site;
    std::vector<std::size_t> shape;
    std::vector<double> estimate, exact;
};
inline std::vector<SiteArrays> site_arrays(const AttributionPatching& r, const model::Config& c) {
    std::vector<SiteArrays> out;
    auto kind = [&](model::HookId id, std::int64_t group, std::string suffix, std::string site) {
        SiteArrays a{std::move(suffix), std::move(site), {}, {}, {}};
        for (const auto& s : r.sites)
            if (s.hook == id && s.group == group) { a.estimate.push_back(s.estimate); a.exact.push_back(s.exact); }
        if (a.estimate.empty()) return;
        const std::size_t L = std::size_t(c.n_layers), per_layer = a.estimate.size() / L, H = std::size_t(c.n_heads);
        a.shape = id == model::HookId::z ? std::vector<std::size_t>{L, per_layer / H, H} : std::vector<std::size_t>{L, per_layer};
        out.push_back(std::move(a));
    };
    kind(model::HookId::resid_pre, -1, "", "blocks.{layer}.hook_resid_pre[position]");
    for (std::size_t g = 0; g < r.groups.size(); ++g)
        kind(model::HookId::resid_pre, std::int64_t(g), "_group_" + r.groups[g].name,
             "blocks.{layer}.hook_resid_pre[position, channels of '" + r.groups[g].name + "']");
    kind(model::HookId::attn_out, -1, "_attn_out", "blocks.{layer}.hook_attn_out[position]");
    kind(model::HookId::z, -1, "_z", "blocks.{layer}.attn.hook_z[position, head]");
    kind(model::HookId::mlp_out, -1, "_mlp_out", "blocks.{layer}.hook_mlp_out[position]");
    return out;
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
            AttributionSite& s = r.sites[i];
            s.exact = exact_patch(c, w, clean, corrupted, metric, patch_site(r, s), clean_metric);
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
