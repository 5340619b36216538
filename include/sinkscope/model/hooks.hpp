// Hook points: every internal activation of the forward pass, named as in TransformerLens.
//
// Shapes have no batch dimension (the forward pass runs one sequence):
//   hook_embed, hook_pos_embed                      [pos, d_model]
//   blocks.{l}.hook_resid_pre / _mid / _post        [pos, d_model]   residual stream before the block,
//                                                                    after attention (none in a parallel
//                                                                    block: GPT-NeoX), after the FFN
//   blocks.{l}.ln1.hook_normalized                  [pos, d_model]   output of the attention-block norm
//   blocks.{l}.ln2.hook_normalized                  [pos, d_model]   output of the FFN-block norm
//        (none with output placement, OLMo-2: its norms act on what the sub-layers add, hook_*_out)
//        (the same meaning for RMSNorm, LayerNorm and DynamicTanh: the norm's output, gain included)
//   blocks.{l}.attn.hook_q                          [pos, head, d_head]     after bias and QK-norm, before RoPE
//   blocks.{l}.attn.hook_k / hook_v                 [pos, kv_head, d_head]  (grouped-query: kv heads)
//   blocks.{l}.attn.hook_rot_q / hook_rot_k         [pos, (kv_)head, d_head] after RoPE (RoPE models only)
//   blocks.{l}.attn.hook_attn_scores                [head, query_pos, key_pos]  q·k/√d_h, -inf where masked
//   blocks.{l}.attn.hook_pattern                    [head, query_pos, key_pos]  attention weights over the real
//        tokens (for softmax-off-by-one and KV-bias attention a row sums to < 1: the rest went to the sink slot)
//   blocks.{l}.attn.hook_gate                       [pos, head] or [pos, head·d_head]  sigmoid output gate
//   blocks.{l}.attn.hook_z                          [pos, head, d_head]     pattern·V, gated, before W_O
//   blocks.{l}.hook_attn_out                        [pos, d_model]   what the attention block adds to the residual
//   blocks.{l}.mlp.hook_pre                         [pos, d_mlp]     gate pre-activation (SwiGLU) / hidden
//                                                                    pre-activation (GELU FFN)
//   blocks.{l}.mlp.hook_pre_linear                  [pos, d_mlp]     up projection (SwiGLU only)
//   blocks.{l}.mlp.hook_post                        [pos, d_mlp]     act(gate)·up (SwiGLU) / act(pre) (GELU)
//   mixture of experts (FfnKind::moe; Mixtral, OLMoE) instead of hook_pre / _pre_linear / _post:
//   blocks.{l}.mlp.hook_router_logits               [pos, n_experts]       router logits W_router·x, before the
//        softmax and the top-k: a hook that rewrites them changes the routing (−inf: never that expert)
//   blocks.{l}.mlp.hook_expert_weights              [pos, n_experts_used]  the final mixing weights of the chosen
//        experts (top-k softmax probabilities, renormalised to sum 1 when moe_normalize_topk), most probable first
//   blocks.{l}.mlp.hook_chosen_experts              [pos, n_experts_used]  the chosen experts' indices as float
//        values (0, 1, …, exact), in the order of hook_expert_weights; ties go to the lower index. Rewriting
//        them (to other integers in [0, n_experts)) changes which experts run
//   blocks.{l}.hook_mlp_out                         [pos, d_model]   what the FFN block adds to the residual
//   ln_final.hook_normalized                        [pos, d_model]
//   logits                                          [pos, vocab]
//
// A hook is a function that sees (and may change) the activation in place; the forward pass then
// continues with what the hook left there. Capture, interventions and streaming reducers are all hooks.
// The forward pass asks `wants(name)` first, so no copy is ever made for a name nobody asked for.
#pragma once

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

namespace sinkscope::model {

// A mutable view of one activation: contiguous, row-major, `shape` as in the table above.
template <class T>
struct ActivationRef {
    T* data = nullptr;
    std::vector<std::int64_t> shape;
    std::int64_t size() const {
        return std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
    }
};

// The hook names a model with this config exposes, in the order the forward pass reaches them.
inline std::vector<std::string> hook_names(const Config& c) {
    std::vector<std::string> n{"hook_embed"};
    if (c.positions == PositionKind::learned) n.push_back("hook_pos_embed");
    for (std::int64_t l = 0; l < c.n_layers; ++l) {
        const std::string b = "blocks." + std::to_string(l) + ".";
        n.push_back(b + "hook_resid_pre");
        if (c.norm_placement != NormPlacement::output) n.push_back(b + "ln1.hook_normalized");
        for (const char* s : {"hook_q", "hook_k", "hook_v"}) n.push_back(b + "attn." + s);
        if (c.positions == PositionKind::rope) { n.push_back(b + "attn.hook_rot_q"); n.push_back(b + "attn.hook_rot_k"); }
        n.push_back(b + "attn.hook_attn_scores");
        n.push_back(b + "attn.hook_pattern");
        if (c.gate != GateKind::none) n.push_back(b + "attn.hook_gate");
        n.push_back(b + "attn.hook_z");
        n.push_back(b + "hook_attn_out");
        if (!c.parallel_residual) n.push_back(b + "hook_resid_mid");
        if (c.ffn != FfnKind::none) {
            if (c.norm_placement != NormPlacement::output) n.push_back(b + "ln2.hook_normalized");
            if (c.ffn == FfnKind::swiglu || c.ffn == FfnKind::gelu) n.push_back(b + "mlp.hook_pre");
            if (c.ffn == FfnKind::swiglu) n.push_back(b + "mlp.hook_pre_linear");
            if (c.ffn == FfnKind::swiglu || c.ffn == FfnKind::gelu) n.push_back(b + "mlp.hook_post");
            if (c.ffn == FfnKind::moe)
                for (const char* s : {"hook_router_logits", "hook_expert_weights", "hook_chosen_experts"}) n.push_back(b + "mlp." + s);
            n.push_back(b + "hook_mlp_out");
        }
        n.push_back(b + "hook_resid_post");
    }
    if (c.norm_placement != NormPlacement::post) n.push_back("ln_final.hook_normalized");
    n.push_back("logits");
    return n;
}

// Expands TransformerLens-style short names: "resid_post" with layer 3 → "blocks.3.hook_resid_post",
// "pattern" → "blocks.3.attn.hook_pattern", "mlp_out" → "blocks.3.hook_mlp_out". Full names pass through.
inline std::string hook_name(const std::string& short_name, std::int64_t layer) {
    static const std::map<std::string, std::string> expand = {
        {"resid_pre", "hook_resid_pre"}, {"resid_mid", "hook_resid_mid"}, {"resid_post", "hook_resid_post"},
        {"attn_out", "hook_attn_out"}, {"mlp_out", "hook_mlp_out"},
        {"normalized1", "ln1.hook_normalized"}, {"normalized2", "ln2.hook_normalized"},
        {"q", "attn.hook_q"}, {"k", "attn.hook_k"}, {"v", "attn.hook_v"}, {"rot_q", "attn.hook_rot_q"},
        {"rot_k", "attn.hook_rot_k"}, {"z", "attn.hook_z"}, {"attn_scores", "attn.hook_attn_scores"},
        {"pattern", "attn.hook_pattern"}, {"gate", "attn.hook_gate"},
        {"pre", "mlp.hook_pre"}, {"pre_linear", "mlp.hook_pre_linear"}, {"post", "mlp.hook_post"},
        {"router_logits", "mlp.hook_router_logits"}, {"expert_weights", "mlp.hook_expert_weights"},
        {"chosen_experts", "mlp.hook_chosen_experts"}};
    auto it = expand.find(short_name);
    if (it == expand.end()) return short_name;
    return "blocks." + std::to_string(layer) + "." + it->second;
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
    void clear() { by_name_.clear(); filtered_.clear(); next_ = 0; }
    bool empty() const { return by_name_.empty() && filtered_.empty(); }

    bool wants(const std::string& name) const {
        if (by_name_.count(name)) return true;
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
    struct Ordered { std::size_t index; Fn fn; };
    Ordered order(Fn fn) { return Ordered{next_++, std::move(fn)}; }
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
    void clear() { store_.clear(); }

private:
    std::map<std::string, Captured<T>> store_;
};

}  // namespace sinkscope::model
