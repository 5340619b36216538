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
// Running without BOS is not an intervention: the caller chooses the tokens (tokenizer's add_bos).
#pragma once

#include <algorithm>
#include <cstdint>
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

}  // namespace sinkscope::model
