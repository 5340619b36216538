// The wiring of one transformer block, written once. The CPU forward (model/forward.hpp) and the CUDA
// forward (cuda/forward.cuh) both run `wire_block` with their own Ops, so the order of norms, sub-layers,
// sums and hooks is the same description on both backends:
//
//   pre-norm:  x += F(N(x))              sandwich: x += Nᵖ(F(N(x)))
//   post-norm: x  = N(x + F(x))          output:   x += Nᵖ(F(x))                    (OLMo-2)
//   parallel:  x += FFN(N₂(x)) + Attn(N₁(x))                                     (GPT-NeoX)
//
// Buffers are named by role; each backend maps them to its storage:
//   x        the residual stream, updated in place
//   xn_attn  the attention's pre-norm output (its input)     xn_ffn  the FFN's pre-norm output
//   out      a sub-layer's output, what is added to x
//   side     scratch: a post-norm's output, or the attention output of a parallel block
// Ops must provide:
//   norm(NormSlot, Sublayer, Buf dst, Buf src)   NormSlot::first = the sub-layer's own norm (ln1 / ln2, with
//                                                the force-sink mask on its input), ::second = its post-norm
//   run(Sublayer, Buf dst, Buf src)              the block's attention or FFN, src → dst
//   add(Buf dst, Buf src)                        dst += src
//   copy(Buf dst, Buf src), swap(Buf a, Buf b)
//   hook(HookId, const std::string& name, Buf)   offer the buffer to the hooks under `name`; the id says
//                                                which point it is (the CUDA trainer keeps some residual streams)
#pragma once

#include <cstdint>
#include <string>

#include "sinkscope/model/config.hpp"
#include "sinkscope/model/hook_table.hpp"

namespace sinkscope::model {

enum class Buf { x, xn_attn, xn_ffn, out, side };
enum class Sublayer { attention, ffn };
enum class NormSlot { first, second };

namespace detail {

// One residual sub-layer in the configured placement.
template <class Ops>
void wire_residual(Ops& ops, const Config& c, const BlockNames& names, Sublayer s, HookId norm_id, HookId out_id) {
    const std::string& norm_name = names[norm_id];
    const std::string& out_name = names[out_id];
    const Buf xn = s == Sublayer::attention ? Buf::xn_attn : Buf::xn_ffn;
    switch (c.norm_placement) {
        case NormPlacement::post:  // x = N(x + F(x)): the hook of N sees the new residual stream
            ops.run(s, Buf::out, Buf::x);
            ops.hook(out_id, out_name, Buf::out);
            ops.add(Buf::x, Buf::out);
            ops.norm(NormSlot::first, s, Buf::side, Buf::x);
            ops.copy(Buf::x, Buf::side);
            ops.hook(norm_id, norm_name, Buf::x);
            return;
        case NormPlacement::output:  // x += Nᵖ(F(x)): no norm before the sub-layer, so no norm hook
            ops.run(s, Buf::out, Buf::x);
            ops.norm(NormSlot::second, s, Buf::side, Buf::out);
            ops.swap(Buf::out, Buf::side);
            ops.hook(out_id, out_name, Buf::out);
            ops.add(Buf::x, Buf::out);
            return;
        case NormPlacement::pre:
        case NormPlacement::sandwich:
            ops.norm(NormSlot::first, s, xn, Buf::x);
            ops.hook(norm_id, norm_name, xn);
            ops.run(s, Buf::out, xn);
            if (c.norm_placement == NormPlacement::sandwich) {
                ops.norm(NormSlot::second, s, Buf::side, Buf::out);
                ops.swap(Buf::out, Buf::side);
            }
            ops.hook(out_id, out_name, Buf::out);
            ops.add(Buf::x, Buf::out);
            return;
    }
}

}  // namespace detail

// One transformer block, in place on Buf::x.
template <class Ops>
void wire_block(Ops& ops, const Config& c, const BlockNames& names) {
    ops.hook(HookId::resid_pre, names[HookId::resid_pre], Buf::x);
    if (c.parallel_residual) {  // both sub-layers read the block's input; no resid_mid
        ops.norm(NormSlot::first, Sublayer::attention, Buf::xn_attn, Buf::x);
        ops.hook(HookId::ln1, names[HookId::ln1], Buf::xn_attn);
        ops.run(Sublayer::attention, Buf::side, Buf::xn_attn);
        ops.hook(HookId::attn_out, names[HookId::attn_out], Buf::side);
        ops.norm(NormSlot::first, Sublayer::ffn, Buf::xn_ffn, Buf::x);
        ops.hook(HookId::ln2, names[HookId::ln2], Buf::xn_ffn);
        ops.run(Sublayer::ffn, Buf::out, Buf::xn_ffn);
        ops.hook(HookId::mlp_out, names[HookId::mlp_out], Buf::out);
        ops.add(Buf::out, Buf::side);  // (FFN + Attn) + x, Hugging Face's order of the sum
        ops.add(Buf::x, Buf::out);
    } else {
        detail::wire_residual(ops, c, names, Sublayer::attention, HookId::ln1, HookId::attn_out);
        ops.hook(HookId::resid_mid, names[HookId::resid_mid], Buf::x);
        if (c.ffn != FfnKind::none)
            detail::wire_residual(ops, c, names, Sublayer::ffn, HookId::ln2, HookId::mlp_out);
    }
    ops.hook(HookId::resid_post, names[HookId::resid_post], Buf::x);
}

}  // namespace sinkscope::model
