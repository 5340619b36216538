// Attention-pattern surgery: hooks on blocks.{l}.attn.hook_pattern that replace chosen rows of the
// pattern before the forward multiplies it with the values. For a chosen head h and query t:
//
//   p[h, t, j] ← m · w_j / Σ_{k ≤ t} w_k    for j ≤ t,      p[h, t, j] ← 0   for j > t
//
// w ≥ 0 is the wanted row (any scale: it is renormalised over the keys the causal mask lets t see) and m
// its mass: 1 (RowMass::one; with softmax-off-by-one or a KV bias the slot then gets 1 − m = 0), or what
// the model's own row summed to (RowMass::model; the slot keeps its share). The forward then continues
// with z[t, h] = Σ_j p[h, t, j] v_j[g] (+ (1 − Σ_j p) v_slot with a KV bias), g = h's kv head, as for a
// pattern it made itself: a hook that may change the pattern is run before z is computed from it
// (model/forward.hpp; the CUDA forward recomputes z from a changed pattern). Sliding windows are not
// applied to a forced row: a surgery may reach keys a windowed layer would not see.
//
//   force_pattern          rows given by a function of (sequence, head, query), or taken from a
//                          [head, query, key] pattern (e.g. one captured from another run)
//   force_pattern_row      the same row for every chosen (head, query)
//   self_only_attention    w = e_t: the query attends only to itself, so z[t, h] = v_t[g]
//                          (what position 0 does by itself under the causal mask)
//   attend_only_to(key)    w = e_key: z[t, h] = v_key[g]; queries before `key` cannot see it and keep theirs
//
// Heads and queries: empty vectors choose all of them; queries past the sequence end are ignored. In
// forward_batch the pattern is [batch, head, query, key] and the choice applies to every sequence.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/model/hooks.hpp"

namespace sinkscope::model {

// The mass a forced row gets: 1, or the model's own row sum (less than 1 where a sink slot took a share).
enum class RowMass { one, model };

// Where a forced row goes: sequence (0 outside forward_batch), head, query position, number of keys.
struct PatternRowSite {
    std::int64_t sequence = 0, head = 0, query = 0, keys = 0;
};

// Writes the wanted weights w (keys entries, zeroed before the call) of one row and returns true, or
// returns false to leave the model's row as it is.
template <class T>
using PatternRow = std::function<bool(const PatternRowSite& site, T* w)>;

namespace detail {
inline std::vector<std::int64_t> all_or(const std::vector<std::int64_t>& chosen, std::int64_t n) {
    if (!chosen.empty()) return chosen;
    std::vector<std::int64_t> all(static_cast<std::size_t>(n), 0);
    for (std::int64_t i = 0; i < n; ++i) all[std::size_t(i)] = i;
    return all;
}

// Row `row` (keys entries) ← the renormalised w over keys [0, query], zero after it (see the file's top).
template <class T>
void place_row(T* row, const T* w, std::int64_t query, std::int64_t keys, RowMass mass, const std::string& name) {
    T sum = 0;
    for (std::int64_t j = 0; j <= query && j < keys; ++j) {
        require(std::isfinite(double(w[j])) && w[j] >= T(0),
                "force_pattern: weight " + std::to_string(double(w[j])) + " for key " + std::to_string(j) +
                    " is not a finite non-negative number", {"", name, {}});
        sum += w[j];
    }
    require(sum > T(0), "force_pattern: the row for query " + std::to_string(query) +
                            " puts no weight on the keys it can see (0 … " + std::to_string(query) + ")", {"", name, {}});
    T target = T(1);
    if (mass == RowMass::model) {
        target = T(0);
        for (std::int64_t j = 0; j < keys; ++j) target += row[j];
    }
    for (std::int64_t j = 0; j < keys; ++j) row[j] = j <= query ? w[j] / sum * target : T(0);
}
}  // namespace detail

// Replaces the rows (head ∈ heads, query ∈ queries) of layer `layer`'s pattern by the rows `rule` writes,
// renormalised over the visible keys to `mass`.
template <class T>
void force_pattern(HookSet<T>& hooks, std::int64_t layer, PatternRow<T> rule, std::vector<std::int64_t> heads = {},
                   std::vector<std::int64_t> queries = {}, RowMass mass = RowMass::one) {
    auto fn = std::make_shared<PatternRow<T>>(std::move(rule));
    hooks.add(hook_name("pattern", layer), [fn, heads, queries, mass](const std::string& n, ActivationRef<T>& p) {
        const std::size_t rank = p.shape.size();
        require(rank >= 3, "force_pattern: " + n + " is not a [head, query, key] pattern", {"", n, {}});
        const std::int64_t keys = p.shape[rank - 1], Tq = p.shape[rank - 2], H = p.shape[rank - 3];
        const std::int64_t sequences = p.size() / (H * Tq * keys);
        for (auto h : heads)
            require(h >= 0 && h < H, "force_pattern: head " + std::to_string(h) + " out of range [0, " + std::to_string(H) + ")",
                    {"", n, {}});
        std::vector<T> w(static_cast<std::size_t>(keys));
        for (std::int64_t s = 0; s < sequences; ++s)
            for (std::int64_t h : detail::all_or(heads, H))
                for (std::int64_t t : detail::all_or(queries, Tq)) {
                    if (t < 0 || t >= Tq) continue;
                    std::fill(w.begin(), w.end(), T(0));
                    if (!(*fn)(PatternRowSite{s, h, t, keys}, w.data())) continue;
                    detail::place_row(p.data + ((s * H + h) * Tq + t) * keys, w.data(), t, keys, mass, n);
                }
    });
}

// Rows taken from `pattern`, a [head, query, key] array ([batch, head, query, key] in forward_batch) of the
// shape the layer's pattern has: the model's own pattern gives the model back; another run's transplants it.
// A row that is all zero in the source (a batch's padded query) leaves the layer's row as it is.
template <class T>
void force_pattern(HookSet<T>& hooks, std::int64_t layer, const Captured<T>& pattern, std::vector<std::int64_t> heads = {},
                   std::vector<std::int64_t> queries = {}, RowMass mass = RowMass::one) {
    auto src = std::make_shared<Captured<T>>(pattern);
    require(src->shape.size() >= 3, "force_pattern: the source pattern is not [head, query, key]");
    // The shapes are compared at the first row; a hook sees one shape per forward.
    force_pattern<T>(hooks, layer, [src](const PatternRowSite& at, T* w) {
        const std::size_t r = src->shape.size();
        const std::int64_t keys = src->shape[r - 1], Tq = src->shape[r - 2], H = src->shape[r - 3];
        require(keys == at.keys && at.query < Tq && at.head < H && std::int64_t(src->data.size()) >= (at.sequence + 1) * H * Tq * keys,
                "force_pattern: the source pattern's shape does not match the layer's");
        const T* row = src->data.data() + ((at.sequence * H + at.head) * Tq + at.query) * keys;
        std::copy_n(row, keys, w);
        return std::any_of(row, row + keys, [](T x) { return x != T(0); });
    }, std::move(heads), std::move(queries), mass);
}

// The same wanted row for every chosen (head, query): w_j = row[j] (keys past the row's end get 0).
template <class T>
void force_pattern_row(HookSet<T>& hooks, std::int64_t layer, std::vector<T> row, std::vector<std::int64_t> heads = {},
                       std::vector<std::int64_t> queries = {}, RowMass mass = RowMass::one) {
    force_pattern<T>(hooks, layer, [row = std::move(row)](const PatternRowSite& at, T* w) {
        std::copy_n(row.begin(), std::min<std::int64_t>(at.keys, std::int64_t(row.size())), w);
        return true;
    }, std::move(heads), std::move(queries), mass);
}

// Each chosen query attends only to itself: p[h, t, :] = e_t, so z[t, h] = v_t[g].
template <class T>
void self_only_attention(HookSet<T>& hooks, std::int64_t layer, std::vector<std::int64_t> heads = {},
                         std::vector<std::int64_t> queries = {}) {
    force_pattern<T>(hooks, layer, [](const PatternRowSite& at, T* w) { w[at.query] = T(1); return true; }, std::move(heads),
                     std::move(queries));
}

// Each chosen query t ≥ key attends only to `key`: p[h, t, :] = e_key, so z[t, h] = v_key[g]. Queries
// before `key` keep their rows (the causal mask hides the key from them).
template <class T>
void attend_only_to(HookSet<T>& hooks, std::int64_t layer, std::int64_t key, std::vector<std::int64_t> heads = {},
                    std::vector<std::int64_t> queries = {}) {
    require(key >= 0, "attend_only_to: key position " + std::to_string(key) + " is negative");
    force_pattern<T>(hooks, layer, [key](const PatternRowSite& at, T* w) {
        if (at.query < key) return false;
        w[key] = T(1);
        return true;
    }, std::move(heads), std::move(queries));
}

}  // namespace sinkscope::model
