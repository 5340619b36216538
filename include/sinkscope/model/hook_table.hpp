// The hook table: every hook point of the forward pass, once. Its name, its TransformerLens short name,
// its shape, the Config that has it and what it holds. The hook list (hooks.hpp), the CPU and CUDA
// forwards (which take their names from BlockNames, built once per layer and pass), the training tape,
// `sinkscope capture --list-hooks --describe` and the docs all read it.
//
// The table's order is the order in which the forward pass offers the hooks: the input rows, then the
// block rows for every layer, then the output rows (one exception: post-norm offers ln1 / ln2 after the
// sub-layer's output, since it normalises after the sum; hook_names() says so). Shapes have no batch
// dimension; forward_batch (model/batch.hpp) offers [batch, …] with these shapes after it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sinkscope/model/config.hpp"

namespace sinkscope::model {

// Every hook point; the block ones are named "blocks.{l}." + HookSpec::name.
enum class HookId {
    embed, pos_embed,
    resid_pre, ln1, q, k, v, rot_q, rot_k, attn_scores, pattern, gate, z, attn_out, resid_mid,
    ln2, mlp_pre, mlp_pre_linear, mlp_post, router_logits, expert_weights, chosen_experts, mlp_out, resid_post,
    ln_final, logits,
    count
};
enum class HookStage { input, block, output };

struct HookSpec {
    HookId id;
    HookStage stage;
    const char* name;        // full name at the input and output; in a block, the part after "blocks.{l}."
    const char* short_name;  // TransformerLens's utils.get_act_name key ("resid_post", "pattern", …)
    const char* shape;
    bool (*present)(const Config&);
    const char* meaning;
};

namespace detail {
inline bool always(const Config&) { return true; }
inline bool learned_positions(const Config& c) { return c.positions == PositionKind::learned; }
inline bool rope(const Config& c) { return c.positions == PositionKind::rope; }
inline bool pre_norm(const Config& c) { return c.norm_placement != NormPlacement::output; }
inline bool gated(const Config& c) { return c.gate != GateKind::none; }
inline bool sequential(const Config& c) { return !c.parallel_residual; }
inline bool has_ffn(const Config& c) { return c.ffn != FfnKind::none; }
inline bool ffn_norm(const Config& c) { return has_ffn(c) && pre_norm(c); }
inline bool dense_hidden(const Config& c) { return c.ffn == FfnKind::swiglu || c.ffn == FfnKind::gelu; }
inline bool swiglu(const Config& c) { return c.ffn == FfnKind::swiglu; }
inline bool moe(const Config& c) { return c.ffn == FfnKind::moe; }
inline bool final_norm(const Config& c) { return c.norm_placement != NormPlacement::post; }
}  // namespace detail

inline const std::array<HookSpec, std::size_t(HookId::count)>& hook_table() {
    using namespace detail;
    using S = HookStage;
    static const std::array<HookSpec, std::size_t(HookId::count)> table{{
        {HookId::embed, S::input, "hook_embed", "embed", "[pos, d_model]", always,
         "token embeddings (times embed_scale; a sink token's embedding first with sink_token attention)"},
        {HookId::pos_embed, S::input, "hook_pos_embed", "pos_embed", "[pos, d_model]", learned_positions,
         "learned position embeddings, added to hook_embed"},
        {HookId::resid_pre, S::block, "hook_resid_pre", "resid_pre", "[pos, d_model]", always, "residual stream entering the block"},
        {HookId::ln1, S::block, "ln1.hook_normalized", "normalized1", "[pos, d_model]", pre_norm,
         "output of the attention norm, gain included (post-norm: the normalised residual stream after attention)"},
        {HookId::q, S::block, "attn.hook_q", "q", "[pos, head, d_head]", always, "queries after bias and QK-norm, before RoPE"},
        {HookId::k, S::block, "attn.hook_k", "k", "[pos, kv_head, d_head]", always, "keys (grouped-query: kv heads)"},
        {HookId::v, S::block, "attn.hook_v", "v", "[pos, kv_head, d_head]", always, "values"},
        {HookId::rot_q, S::block, "attn.hook_rot_q", "rot_q", "[pos, head, d_head]", rope, "queries after RoPE"},
        {HookId::rot_k, S::block, "attn.hook_rot_k", "rot_k", "[pos, kv_head, d_head]", rope, "keys after RoPE"},
        {HookId::attn_scores, S::block, "attn.hook_attn_scores", "attn_scores", "[head, query_pos, key_pos]", always,
         "q·k scaled (and soft-capped), −inf where masked"},
        {HookId::pattern, S::block, "attn.hook_pattern", "pattern", "[head, query_pos, key_pos]", always,
         "attention weights over the real tokens (a row sums to < 1 where a sink slot took the rest)"},
        {HookId::gate, S::block, "attn.hook_gate", "gate", "[pos, head] or [pos, head·d_head]", gated, "sigmoid output gate"},
        {HookId::z, S::block, "attn.hook_z", "z", "[pos, head, d_head]", always, "pattern·V, gated, before W_O"},
        {HookId::attn_out, S::block, "hook_attn_out", "attn_out", "[pos, d_model]", always,
         "what the attention adds to the residual stream (after its post-norm where there is one)"},
        {HookId::resid_mid, S::block, "hook_resid_mid", "resid_mid", "[pos, d_model]", sequential,
         "residual stream between attention and FFN (none in a parallel block)"},
        {HookId::ln2, S::block, "ln2.hook_normalized", "normalized2", "[pos, d_model]", ffn_norm, "output of the FFN norm"},
        {HookId::mlp_pre, S::block, "mlp.hook_pre", "pre", "[pos, d_mlp]", dense_hidden,
         "gate pre-activation (SwiGLU) or hidden pre-activation (GELU FFN)"},
        {HookId::mlp_pre_linear, S::block, "mlp.hook_pre_linear", "pre_linear", "[pos, d_mlp]", swiglu, "up projection (SwiGLU)"},
        {HookId::mlp_post, S::block, "mlp.hook_post", "post", "[pos, d_mlp]", dense_hidden, "act(gate)·up (SwiGLU) or act(pre) (GELU)"},
        {HookId::router_logits, S::block, "mlp.hook_router_logits", "router_logits", "[pos, n_experts]", moe,
         "router logits W_router·x before softmax and top-k: rewriting them changes the routing (−inf: never that expert)"},
        {HookId::expert_weights, S::block, "mlp.hook_expert_weights", "expert_weights", "[pos, n_experts_used]", moe,
         "mixing weights of the chosen experts (top-k softmax probabilities, renormalised when moe_normalize_topk), most probable first"},
        {HookId::chosen_experts, S::block, "mlp.hook_chosen_experts", "chosen_experts", "[pos, n_experts_used]", moe,
         "indices of the chosen experts as exact float values, in the order of expert_weights; ties go to the lower index; rewriting them (integers in [0, n_experts)) changes which experts run"},
        {HookId::mlp_out, S::block, "hook_mlp_out", "mlp_out", "[pos, d_model]", has_ffn,
         "what the FFN adds to the residual stream (after its post-norm where there is one)"},
        {HookId::resid_post, S::block, "hook_resid_post", "resid_post", "[pos, d_model]", always, "residual stream leaving the block"},
        {HookId::ln_final, S::output, "ln_final.hook_normalized", "ln_final", "[pos, d_model]", final_norm, "output of the final norm"},
        {HookId::logits, S::output, "logits", "logits", "[pos, vocab]", always, "output logits (soft-capped where the model caps them)"},
    }};
    return table;
}

inline const HookSpec& hook_spec(HookId id) { return hook_table()[std::size_t(id)]; }

// Every hook name of one block, built once per layer and forward pass: names[HookId::q] and so on.
struct BlockNames {
    std::string prefix;  // "blocks.{l}."
    std::array<std::string, std::size_t(HookId::count)> names;
    explicit BlockNames(std::int64_t layer) : prefix("blocks." + std::to_string(layer) + ".") {
        for (const auto& s : hook_table()) names[std::size_t(s.id)] = s.stage == HookStage::block ? prefix + s.name : std::string(s.name);
    }
    const std::string& operator[](HookId id) const { return names[std::size_t(id)]; }
};

}  // namespace sinkscope::model
