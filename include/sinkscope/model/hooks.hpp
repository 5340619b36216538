// Hook points: every internal activation of the forward pass, named as in TransformerLens. The names,
// shapes, the configs that have them and their meanings are one table, model/hook_table.hpp
// (`sinkscope capture MODEL --list-hooks --describe` prints it for a model). Shapes have no batch
// dimension: forward() runs one sequence; forward_batch() (model/batch.hpp) puts [batch, …] in front.
//
// A hook is a function that sees (and may change) the activation in place; the forward pass then
// continues with what the hook left there. Capture, interventions and streaming reducers are all hooks.
// The forward pass asks `wants(name)` first, so no copy is ever made for a name nobody asked for.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <memory>
#include <functional>
#include <map>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/model/config.hpp"
#include "sinkscope/model/hook_table.hpp"

namespace sinkscope::model {

// A mutable view of one activation: contiguous, row-major, `shape` as in the table above.
template <class T>
struct ActivationRef {
    T* data = nullptr;
    std::vector<std::int64_t> shape;
    // The matrix that holds the activation, where the forward pass reads it no more after its hooks (the
    // attention pattern of training's forward): an observer may take its memory instead of copying it, by
    // swapping the matrix with one of its own of any size, and then sets `donor` to null (the hooks after
    // it see no donor; `data` stays valid, in the taker's matrix). Null otherwise.
    Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>* donor = nullptr;
    std::int64_t size() const {
        return std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
    }
};

// The hook names a model with this config exposes, in the order the forward pass reaches them: the
// hook table's rows that the config has, the block rows once per layer.
inline std::vector<std::string> hook_names(const Config& c) {
    std::vector<std::string> n;
    for (const auto& s : hook_table())
        if (s.stage == HookStage::input && s.present(c)) n.push_back(s.name);
    // Post-norm normalises after the sum: its ln1 / ln2 rows come right after hook_attn_out / hook_mlp_out.
    const bool post = c.norm_placement == NormPlacement::post;
    for (std::int64_t l = 0; l < c.n_layers; ++l) {
        const BlockNames names(l);
        for (const auto& s : hook_table()) {
            if (s.stage != HookStage::block || !s.present(c)) continue;
            if (post && (s.id == HookId::ln1 || s.id == HookId::ln2)) continue;
            n.push_back(names[s.id]);
            if (post && s.id == HookId::attn_out) n.push_back(names[HookId::ln1]);
            if (post && s.id == HookId::mlp_out && hook_spec(HookId::ln2).present(c)) n.push_back(names[HookId::ln2]);
        }
    }
    for (const auto& s : hook_table())
        if (s.stage == HookStage::output && s.present(c)) n.push_back(s.name);
    return n;
}

// Expands TransformerLens-style short names: "resid_post" with layer 3 → "blocks.3.hook_resid_post",
// "pattern" → "blocks.3.attn.hook_pattern", "mlp_out" → "blocks.3.hook_mlp_out" (the table's short
// names). Full names, and the short names of input and output hooks, pass through as the full name.
inline std::string hook_name(const std::string& short_name, std::int64_t layer) {
    for (const auto& s : hook_table())
        if (short_name == s.short_name)
            return s.stage == HookStage::block ? "blocks." + std::to_string(layer) + "." + s.name : std::string(s.name);
    return short_name;
}

// Layer index of a "blocks.{l}.…" name, or -1.
inline std::int64_t hook_layer(const std::string& name) {
    if (name.rfind("blocks.", 0) != 0) return -1;
    std::size_t end = name.find('.', 7);
    return std::stoll(name.substr(7, end - 7));
}

// A set of hook functions. Each is registered for one exact name or for every name a filter accepts;
// they run in the order they were added.
template <class T>
class HookSet {
public:
    using Fn = std::function<void(const std::string& name, ActivationRef<T>& x)>;
    using Filter = std::function<bool(const std::string& name)>;

    void add(const std::string& name, Fn fn) { by_name_[name].push_back(order(std::move(fn))); }
    void add(Filter filter, Fn fn) { filtered_.push_back({std::move(filter), order(std::move(fn))}); }
    // A hook that only reads the activation (a capture, a check): the forward pass may then compute what
    // follows from the activation before running it (the attention output with its pattern, block by
    // block while in cache). Changing x in an observer leaves the forward pass inconsistent.
    void add_observer(const std::string& name, Fn fn) { by_name_[name].push_back(order(std::move(fn), true)); }
    void clear() { by_name_.clear(); filtered_.clear(); next_ = 0; }
    bool empty() const { return by_name_.empty() && filtered_.empty(); }

    bool wants(const std::string& name) const {
        if (by_name_.count(name)) return true;
        for (const auto& f : filtered_) if (f.first(name)) return true;
        return false;
    }
    // Whether a hook registered for `name` may change it (any hook not added as an observer).
    bool may_change(const std::string& name) const {
        if (auto it = by_name_.find(name); it != by_name_.end())
            for (const auto& o : it->second) if (!o.observer) return true;
        for (const auto& f : filtered_) if (f.first(name)) return true;
        return false;
    }

    // Runs every hook registered for `name` on x (in registration order).
    void run(const std::string& name, ActivationRef<T> x) const {
        std::vector<const Ordered*> fns;
        if (auto it = by_name_.find(name); it != by_name_.end())
            for (const auto& o : it->second) fns.push_back(&o);
        for (const auto& f : filtered_) if (f.first(name)) fns.push_back(&f.second);
        std::sort(fns.begin(), fns.end(), [](const Ordered* a, const Ordered* b) { return a->index < b->index; });
        for (const Ordered* o : fns) o->fn(name, x);
    }

private:
    struct Ordered { std::size_t index; Fn fn; bool observer = false; };
    Ordered order(Fn fn, bool observer = false) { return Ordered{next_++, std::move(fn), observer}; }
    std::map<std::string, std::vector<Ordered>> by_name_;
    std::vector<std::pair<Filter, Ordered>> filtered_;
    std::size_t next_ = 0;
};

// A copy of a captured activation.
template <class T>
struct Captured {
    std::vector<std::int64_t> shape;
    std::vector<T> data;
};

// ActivationCache: captures the activations whose names pass `filter`, copying only those.
template <class T>
class ActivationCache {
public:
    // Registers a capturing hook on `hooks` for every name the filter accepts.
    void attach(HookSet<T>& hooks, typename HookSet<T>::Filter filter) {
        hooks.add(std::move(filter), [this](const std::string& name, ActivationRef<T>& x) {
            auto& c = store_[name];
            c.shape = x.shape;
            c.data.assign(x.data, x.data + x.size());
        });
    }
    void attach(HookSet<T>& hooks, std::vector<std::string> names) {
        auto set = std::make_shared<std::vector<std::string>>(std::move(names));
        attach(hooks, [set](const std::string& n) { return std::find(set->begin(), set->end(), n) != set->end(); });
    }
    bool has(const std::string& name) const { return store_.count(name) > 0; }
    const Captured<T>& operator[](const std::string& name) const {
        auto it = store_.find(name);
        if (it == store_.end()) throw Error("activation '" + name + "' was not captured", {"", name, {}});
        return it->second;
    }
    const std::map<std::string, Captured<T>>& all() const { return store_; }
    // Hands the captured activations over (their buffers move, nothing is copied) and empties the cache.
    std::map<std::string, Captured<T>> take() { return std::exchange(store_, {}); }
    void clear() { store_.clear(); }

private:
    std::map<std::string, Captured<T>> store_;
};

}  // namespace sinkscope::model
