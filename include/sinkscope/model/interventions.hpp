// Interventions: hooks that change an activation in flight (TransformerLens's "hook functions").
//
//   zero_ablate_channels   x[t, c] ← 0            for chosen channels c at chosen positions t
//   mean_ablate_channels   x[t, c] ← μ_c          μ from a reference run (e.g. the mean over a corpus)
//   ablate_heads           z[t, h, :] ← 0         head h contributes nothing to the attention output
//   ablate_attention       hook_attn_out ← 0      the whole attention block of a layer
//   ablate_mlp             hook_mlp_out ← 0       the whole FFN block of a layer
//   patch                  x ← values             replace any hooked activation (or some positions of it)
//   copy_position          x[t] ← x[src]          within the same run: row `src` copied onto rows `to`
//                                                 (e.g. position 0's attention output placed at t ≥ 1)
//   patch_sites            x[site] ← x_src[site]  several sites (hook, layer, positions, heads, channels)
//                                                 patched from a source run's cache in one forward
//   scale_channels         x[t, c] ← f · x[t, c]  a dose: f = 0 is zero-ablation, f = 1 the identity;
//                          x[t, c] ← μ_c + f · (x[t, c] − μ_c) with centres μ: f = 0 is mean-ablation
//   scale_heads            z[t, h, :] ← f · z[t, h, :]   the same dose for a head's share of the attention
// Attention-pattern surgery (forced rows, self-only attention) is in model/attention_surgery.hpp.
// Running without BOS is not an intervention: the caller chooses the tokens (tokenizer's add_bos).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/model/hooks.hpp"

namespace sinkscope::model {

namespace detail {
// Positions of a [pos, features…] activation to touch: all when `positions` is empty.
inline std::vector<std::int64_t> positions_or_all(const std::vector<std::int64_t>& positions, std::int64_t n) {
    if (positions.empty()) { std::vector<std::int64_t> all(n); for (std::int64_t i = 0; i < n; ++i) all[i] = i; return all; }
    return positions;
}
// A [pos, …] activation as the forward offers it: `sequences` blocks of `positions` rows, each row
// `heads` × `width` entries (heads = 1 for a [pos, d] hook). forward_batch puts [batch, …] in front of
// the hook table's shape; an activation with one dimension more than its table shape is such a batch.
struct PositionRows {
    std::int64_t sequences = 1, positions = 0, heads = 1, width = 0;
    bool has_heads = false;  // a [pos, head, d_head] hook
};
// The hook table's row for a full hook name, or null.
inline const HookSpec* spec_of(const std::string& name) {
    const bool block = name.rfind("blocks.", 0) == 0;
    const std::string tail = block ? name.substr(name.find('.', 7) + 1) : name;
    for (const auto& s : hook_table())
        if (tail == s.name && (s.stage == HookStage::block) == block) return &s;
    return nullptr;
}
// Number of dimensions of the table's shape ("[pos, head, d_head]": 3; the first of two alternatives).
inline std::size_t table_rank(const HookSpec& s) {
    const std::string shape = s.shape;
    return std::size_t(std::count(shape.begin(), shape.begin() + shape.find(']'), ',')) + 1;
}
template <class T>
PositionRows position_rows(const std::string& name, const ActivationRef<T>& x) {
    const HookSpec* s = spec_of(name);
    require(!s || std::string(s->shape).rfind("[pos", 0) == 0, "intervention: " + name + " is not a [pos, …] activation",
            {"", name, {}});
    const std::size_t rank = s ? table_rank(*s) : x.shape.size();
    const bool batched = x.shape.size() == rank + 1;
    require(x.shape.size() == rank || batched, "intervention: " + name + " has an unexpected shape", {"", name, {}});
    PositionRows r;
    std::size_t d = 0;
    if (batched) r.sequences = x.shape[d++];
    r.positions = x.shape[d++];
    r.has_heads = x.shape.size() - d == 2;
    if (r.has_heads) r.heads = x.shape[d++];
    r.width = x.size() / (r.sequences * r.positions * r.heads);
    return r;
}
inline void check_indices(const std::string& what, const std::vector<std::int64_t>& chosen, std::int64_t n, const std::string& name) {
    for (auto i : chosen)
        require(i >= 0 && i < n, "intervention: " + what + " " + std::to_string(i) + " out of range [0, " + std::to_string(n) + ")",
                {"", name, {}});
}

template <class T>
void check_channels(const std::string& name, const ActivationRef<T>& x, const std::vector<std::int64_t>& channels) {
    const std::int64_t width = x.size() / x.shape[0];
    for (auto c : channels)
        require(c >= 0 && c < width, "intervention: channel " + std::to_string(c) + " out of range [0, " +
                                         std::to_string(width) + ")", {"", name, {}});
}
}  // namespace detail

// Sets channels `channels` of the [pos, d] activation `name` to `values[i]` (one per channel) at
// `positions` (all positions if empty). Positions past the sequence end are ignored.
template <class T>
void set_channels(HookSet<T>& hooks, const std::string& name, std::vector<std::int64_t> channels,
                  std::vector<T> values, std::vector<std::int64_t> positions = {}) {
    require(channels.size() == values.size(), "set_channels: one value per channel is needed", {"", name, {}});
    hooks.add(name, [channels, values, positions](const std::string& n, ActivationRef<T>& x) {
        detail::check_channels(n, x, channels);
        const std::int64_t width = x.size() / x.shape[0];
        for (std::int64_t t : detail::positions_or_all(positions, x.shape[0])) {
            if (t < 0 || t >= x.shape[0]) continue;
            for (std::size_t i = 0; i < channels.size(); ++i) x.data[t * width + channels[i]] = values[i];
        }
    });
}

template <class T>
void zero_ablate_channels(HookSet<T>& hooks, const std::string& name, std::vector<std::int64_t> channels,
                          std::vector<std::int64_t> positions = {}) {
    std::vector<T> zeros(channels.size(), T(0));
    set_channels(hooks, name, std::move(channels), std::move(zeros), std::move(positions));
}

template <class T>
void mean_ablate_channels(HookSet<T>& hooks, const std::string& name, std::vector<std::int64_t> channels,
                          std::vector<T> means, std::vector<std::int64_t> positions = {}) {
    set_channels(hooks, name, std::move(channels), std::move(means), std::move(positions));
}

// Zero-ablates heads of a layer: their slice of attn.hook_z is set to 0 (at `positions`, or all).
template <class T>
void ablate_heads(HookSet<T>& hooks, std::int64_t layer, std::vector<std::int64_t> heads, std::vector<std::int64_t> positions = {}) {
    hooks.add(hook_name("z", layer), [heads, positions](const std::string& n, ActivationRef<T>& z) {
        const std::int64_t H = z.shape[1], dh = z.shape[2];
        for (auto h : heads) require(h >= 0 && h < H, "ablate_heads: head " + std::to_string(h) + " out of range", {"", n, {}});
        for (std::int64_t t : detail::positions_or_all(positions, z.shape[0])) {
            if (t < 0 || t >= z.shape[0]) continue;
            for (auto h : heads) std::fill_n(z.data + (t * H + h) * dh, dh, T(0));
        }
    });
}

template <class T>
void ablate_attention(HookSet<T>& hooks, std::int64_t layer) {
    hooks.add(hook_name("attn_out", layer), [](const std::string&, ActivationRef<T>& x) { std::fill_n(x.data, x.size(), T(0)); });
}

template <class T>
void ablate_mlp(HookSet<T>& hooks, std::int64_t layer) {
    hooks.add(hook_name("mlp_out", layer), [](const std::string&, ActivationRef<T>& x) { std::fill_n(x.data, x.size(), T(0)); });
}

// Replaces the activation `name` by `values` (same shape), or only the rows `positions` of it
// (values then hold those rows, in order). Shapes are checked when the hook runs.
template <class T>
void patch(HookSet<T>& hooks, const std::string& name, std::vector<T> values, std::vector<std::int64_t> positions = {}) {
    auto v = std::make_shared<std::vector<T>>(std::move(values));
    hooks.add(name, [v, positions](const std::string& n, ActivationRef<T>& x) {
        const std::int64_t row = x.size() / x.shape[0];
        if (positions.empty()) {
            require(std::int64_t(v->size()) == x.size(), "patch: " + std::to_string(v->size()) + " values for an activation of " +
                                                              std::to_string(x.size()), {"", n, {}});
            std::copy(v->begin(), v->end(), x.data);
            return;
        }
        require(std::int64_t(v->size()) == row * std::int64_t(positions.size()), "patch: values do not match positions × row size", {"", n, {}});
        for (std::size_t i = 0; i < positions.size(); ++i) {
            require(positions[i] >= 0 && positions[i] < x.shape[0], "patch: position out of range", {"", n, {}});
            std::copy_n(v->data() + i * row, row, x.data + positions[i] * row);
        }
    });
}

// Copies row `source` of the [pos, features…] activation `name` onto the rows `targets` of the same
// activation, in the same run (all rows but `source` if `targets` is empty). The copy is taken before
// any row is overwritten. Rows past the sequence end are ignored; a source past the end is an error.
template <class T>
void copy_position(HookSet<T>& hooks, const std::string& name, std::int64_t source, std::vector<std::int64_t> targets = {}) {
    hooks.add(name, [source, targets](const std::string& n, ActivationRef<T>& x) {
        require(source >= 0 && source < x.shape[0], "copy_position: source row " + std::to_string(source) + " out of range", {"", n, {}});
        const std::int64_t row = x.size() / x.shape[0];
        const std::vector<T> src(x.data + source * row, x.data + (source + 1) * row);
        for (std::int64_t t : detail::positions_or_all(targets, x.shape[0])) {
            if (t < 0 || t >= x.shape[0] || (targets.empty() && t == source)) continue;
            std::copy(src.begin(), src.end(), x.data + t * row);
        }
    });
}

// Multiplies channels `channels` of the [pos, d] activation `name` by `factor` at `positions` (all if
// empty; past the sequence end ignored): x[t, c] ← f · x[t, c]. A dose: f = 0 is zero_ablate_channels,
// f = 1 leaves x as it is. Anything linear in x downstream of the hook and upstream of the next
// nonlinearity (hook_mlp_out from mlp.hook_post, hook_attn_out from attn.hook_z) is affine in f. In
// forward_batch the positions apply in every sequence.
// With `centres` (one per channel) the dose scales the distance from a centre instead:
//   x[t, c] ← μ_c + f · (x[t, c] − μ_c),
// so f = 0 is mean_ablate_channels with means μ and f = 1 the identity (the centre a reference value of the
// channel, e.g. its mean over ordinary positions: a dose of a spike then shrinks only its excess).
template <class T>
void scale_channels(HookSet<T>& hooks, const std::string& name, std::vector<std::int64_t> channels, T factor,
                    std::vector<std::int64_t> positions = {}, std::vector<T> centres = {}) {
    require(centres.empty() || centres.size() == channels.size(), "scale_channels: one centre per channel is needed",
            {"", name, {}});
    if (centres.empty()) centres.assign(channels.size(), T(0));
    hooks.add(name, [channels, factor, positions, centres](const std::string& n, ActivationRef<T>& x) {
        const detail::PositionRows r = detail::position_rows(n, x);
        const std::int64_t row = r.heads * r.width;
        detail::check_indices("channel", channels, row, n);
        for (std::int64_t s = 0; s < r.sequences; ++s)
            for (std::int64_t t : detail::positions_or_all(positions, r.positions)) {
                if (t < 0 || t >= r.positions) continue;
                T* x_t = x.data + (s * r.positions + t) * row;
                for (std::size_t i = 0; i < channels.size(); ++i)
                    x_t[channels[i]] = centres[i] + factor * (x_t[channels[i]] - centres[i]);
            }
    });
}

// Multiplies heads `heads` of layer `layer` by `factor`: z[t, h, :] ← f · z[t, h, :] on attn.hook_z at
// `positions` (all if empty). The head's term of hook_attn_out = Σ_h W_O,h z[t, h] + b_O is scaled by f,
// so hook_attn_out is affine in f; f = 0 is ablate_heads, f = 1 the identity.
template <class T>
void scale_heads(HookSet<T>& hooks, std::int64_t layer, std::vector<std::int64_t> heads, T factor,
                 std::vector<std::int64_t> positions = {}) {
    hooks.add(hook_name("z", layer), [heads, factor, positions](const std::string& n, ActivationRef<T>& z) {
        const detail::PositionRows r = detail::position_rows(n, z);
        detail::check_indices("head", heads, r.heads, n);
        for (std::int64_t s = 0; s < r.sequences; ++s)
            for (std::int64_t t : detail::positions_or_all(positions, r.positions)) {
                if (t < 0 || t >= r.positions) continue;
                for (auto h : heads) {
                    T* zh = z.data + ((s * r.positions + t) * r.heads + h) * r.width;
                    for (std::int64_t i = 0; i < r.width; ++i) zh[i] *= factor;
                }
            }
    });
}

// One site of an activation patch: the entries of hook `hook` (a full name, or a short name with
// `layer`) at `positions` × `heads` × `channels`, each empty for all of them.
//   [pos, d] hooks (resid, attn_out, mlp_out, mlp.hook_post, …):   positions × channels; no heads
//   [pos, head, d_head] hooks (q, k, v, rot_q, rot_k, z):           positions × heads × channels of d_head
//   the pattern and scores [head, query_pos, key_pos]:              query positions × heads, whole rows
struct PatchSite {
    std::string hook;
    std::int64_t layer = -1;
    std::vector<std::int64_t> positions;
    std::vector<std::int64_t> heads;
    std::vector<std::int64_t> channels;
    // The full hook name ("blocks.{layer}." + the table's name for a short block name).
    std::string name() const {
        const std::string full = hook_name(hook, layer);
        require(full.rfind("blocks.-", 0) != 0, "patch_sites: the block hook '" + hook + "' needs a layer");
        return full;
    }
};

// The hook names a source run must capture for `sites`.
inline std::vector<std::string> patch_site_names(const std::vector<PatchSite>& sites) {
    std::vector<std::string> names;
    for (const auto& s : sites)
        if (std::find(names.begin(), names.end(), s.name()) == names.end()) names.push_back(s.name());
    return names;
}

// Patches every site from `source` (a cache of a run over a sequence of the same length, or its
// all(), holding patch_site_names(sites)) in one forward: x[site] ← x_source[site], the other entries
// untouched. The source's activations are copied at registration. In forward_batch (shapes [batch, …])
// the positions apply in every sequence, from a source captured by a forward_batch of the same shape.
template <class T>
void patch_sites(HookSet<T>& hooks, const std::vector<PatchSite>& sites, const std::map<std::string, Captured<T>>& source) {
    for (const PatchSite& site : sites) {
        const std::string name = site.name();
        const auto found = source.find(name);
        require(found != source.end(), "patch_sites: the source has no '" + name + "' (capture patch_site_names(sites))", {"", name, {}});
        auto src = std::make_shared<Captured<T>>(found->second);
        const HookSpec* spec = detail::spec_of(name);
        const bool pattern = spec && (spec->id == HookId::pattern || spec->id == HookId::attn_scores);
        hooks.add(name, [site, src, pattern](const std::string& n, ActivationRef<T>& x) {
            require(src->shape == x.shape, "patch_sites: the source's " + n + " has another shape (a sequence of another length?)",
                    {"", n, {}});
            if (pattern) {  // [(batch,) head, query, key]: whole rows at (head, query)
                require(site.channels.empty(), "patch_sites: a pattern site takes heads and query positions, not channels", {"", n, {}});
                const std::size_t rank = x.shape.size();
                const std::int64_t keys = x.shape[rank - 1], Tq = x.shape[rank - 2], H = x.shape[rank - 3];
                detail::check_indices("head", site.heads, H, n);
                for (std::int64_t s = 0; s < x.size() / (H * Tq * keys); ++s)
                    for (std::int64_t h : detail::positions_or_all(site.heads, H))
                        for (std::int64_t t : detail::positions_or_all(site.positions, Tq)) {
                            if (t < 0 || t >= Tq) continue;
                            const std::int64_t at = ((s * H + h) * Tq + t) * keys;
                            std::copy_n(src->data.data() + at, keys, x.data + at);
                        }
                return;
            }
            const detail::PositionRows r = detail::position_rows(n, x);
            require(site.heads.empty() || r.has_heads, "patch_sites: " + n + " has no head dimension", {"", n, {}});
            detail::check_indices("head", site.heads, r.heads, n);
            detail::check_indices("channel", site.channels, r.width, n);
            const auto heads = detail::positions_or_all(site.heads, r.heads);
            const auto channels = detail::positions_or_all(site.channels, r.width);
            for (std::int64_t s = 0; s < r.sequences; ++s)
                for (std::int64_t t : detail::positions_or_all(site.positions, r.positions)) {
                    if (t < 0 || t >= r.positions) continue;
                    for (std::int64_t h : heads) {
                        const std::int64_t at = ((s * r.positions + t) * r.heads + h) * r.width;
                        for (std::int64_t c : channels) x.data[at + c] = src->data[std::size_t(at + c)];
                    }
                }
        });
    }
}

template <class T>
void patch_sites(HookSet<T>& hooks, const std::vector<PatchSite>& sites, const ActivationCache<T>& source) {
    patch_sites(hooks, sites, source.all());
}

}  // namespace sinkscope::model
