// The forward pass of the sinkscope transformer on the device, with the CPU's hook points.
//
// It is model::forward (model/forward.hpp) step for step — every Config variant, the same hook names
// at the same moments with the same shapes — on device buffers:
//   pre-norm:  h = x + Attn(N₁(x));        x' = h + FFN(N₂(h))
//   sandwich:  h = x + N₁ᵖ(Attn(N₁(x)));   x' = h + N₂ᵖ(FFN(N₂(h)))
//   post-norm: h = N₁(x + Attn(x));        x' = N₂(h + FFN(h))
// Hooks. Before each activation is offered, HookSet::wants(name) is asked; only a wanted activation is
// copied to the host. The hooks run on that host copy; if they changed it (compared bytewise with the
// copy taken before they ran), it is copied back and the forward pass continues with it — capture,
// interventions and patching work as on the CPU. A changed hook_attn_scores re-runs the softmax on
// the changed scores, and a changed hook_pattern recomputes z from the changed pattern (the unfused
// path of attention.cuh), exactly as the CPU continues from what its hooks leave.
// Attention received per key position (AttentionReceived) is accumulated on the device, so a sink-rate
// study never copies the (H, T, T) patterns to the host.
//
// Rows: B sequences of n positions stacked (row b·n + t); the public forward runs B = 1, the trainer
// (train.cuh) B sequences at once, recording what its backward pass needs in the Workspace.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/cuda/attention.cuh"
#include "sinkscope/cuda/common.cuh"
#include "sinkscope/cuda/elementwise.cuh"
#include "sinkscope/cuda/gemm.cuh"
#include "sinkscope/cuda/norms.cuh"
#include "sinkscope/cuda/rope.cuh"
#include "sinkscope/cuda/weights.cuh"
#include "sinkscope/model/config.hpp"
#include "sinkscope/model/block_wiring.hpp"
#include "sinkscope/model/forward.hpp"
#include "sinkscope/model/hooks.hpp"

namespace sinkscope::cuda {

// Sum over samples of α_k = 1/(T − k) Σ_{t ≥ k} A[t, k] for every (layer, head, key position k), kept
// on the device; mean() divides by the number of samples that had position k.
class AttentionReceived {
public:
    AttentionReceived(const Context& ctx, std::int64_t n_layers, std::int64_t n_heads, std::int64_t max_positions)
        : L_(n_layers), H_(n_heads), P_(max_positions), counts_(std::size_t(max_positions), 0) {
        require(n_layers > 0 && n_heads > 0 && max_positions > 0, "cuda::AttentionReceived: empty dimensions");
        sum_.resize(std::size_t(L_ * H_ * P_));
        sum_.zero(ctx.stream());
    }
    float* layer(std::int64_t l) { return sum_.data() + l * H_ * P_; }
    std::int64_t stride() const { return P_; }
    std::int64_t max_positions() const { return P_; }
    void add_samples(std::int64_t n, std::int64_t samples = 1) {
        for (std::int64_t k = 0; k < n && k < P_; ++k) counts_[std::size_t(k)] += samples;
    }
    // (L, H, P) row-major: mean α over the samples that reached each position (0 where none did).
    std::vector<double> mean(const Context& ctx) const {
        const std::vector<float> s = sum_.to_host(ctx.stream());
        std::vector<double> out(s.size(), 0.0);
        for (std::size_t i = 0; i < s.size(); ++i) {
            const auto k = std::size_t(std::int64_t(i) % P_);
            if (counts_[k]) out[i] = double(s[i]) / double(counts_[k]);
        }
        return out;
    }
    void clear(const Context& ctx) {
        sum_.zero(ctx.stream());
        std::fill(counts_.begin(), counts_.end(), 0);
    }
    std::int64_t n_layers() const { return L_; }
    std::int64_t n_heads() const { return H_; }

private:
    std::int64_t L_, H_, P_;
    DeviceBuffer<float> sum_;
    std::vector<std::int64_t> counts_;
};

struct ForwardOptions {
    bool logits = true;                    // compute the logits (and return them from forward())
    std::int64_t last_layer = -1;          // stop after this block (−1: all); the logits are then skipped
    AttentionReceived* received = nullptr; // accumulate α per (layer, head, key) on the device
};

// Activations of one block. Inference reuses one set for every layer; training keeps one per layer.
struct LayerActivations {
    DeviceBuffer<float> resid_pre, xn1, q, k, v, pattern, slot, z, gate, resid_mid, xn2, pre, pre_linear, post;
};

// Buffers of the device forward (and backward) pass, grown on demand and reused between calls.
struct Workspace {
    DeviceBuffer<float> x, xn, out, tmp, masked, xf, real, logits, scores;
    DeviceBuffer<std::int32_t> tokens;
    std::vector<LayerActivations> layers;
    RopeTable rope;
    BatchPointers ptrs;
    std::vector<float> host, host_before;  // staging of hooked activations
    // backward scratch
    DeviceBuffer<float> dx, dxn, dout, dz, dq, dk, dv, dp, dpre, dpre2, stats;
    DeviceBuffer<std::int32_t> targets;
    DeviceBuffer<double> dscratch;
};

namespace detail {

// Offers device activations to the hooks (see the file comment). Returns true when a hook changed one.
struct DeviceHooks {
    const model::HookSet<float>* hooks;
    const Context* ctx;
    Workspace* ws;

    bool wants(const std::string& name) const { return hooks && hooks->wants(name); }
    bool operator()(const std::string& name, float* dev, std::vector<std::int64_t> shape) const {
        if (!wants(name)) return false;
        std::int64_t size = 1;
        for (auto s : shape) size *= s;
        auto& h = ws->host;
        auto& before = ws->host_before;
        h.resize(std::size_t(size));
        download(h.data(), dev, h.size(), ctx->stream());
        before = h;
        hooks->run(name, model::ActivationRef<float>{h.data(), std::move(shape)});
        if (std::memcmp(h.data(), before.data(), h.size() * sizeof(float)) == 0) return false;
        upload(dev, h.data(), h.size(), ctx->stream());
        return true;
    }
};

struct Pass {
    const Context& ctx;
    Workspace& ws;
    const model::Config& c;
    const DeviceWeights& w;
    DeviceHooks hook;
    std::int64_t B, n;  // sequences, positions per sequence
    bool training;
    AttentionReceived* received;

    std::int64_t rows() const { return B * n; }

    void attention(float* out, const float* xn, const DeviceLayer& W, std::int64_t l, const model::BlockNames& names, LayerActivations& A) {
        const std::int64_t R = rows(), d = c.d_model, H = c.n_heads, G = c.n_kv_heads, dh = c.head_dim;
        A.q.resize(std::size_t(R * H * dh));
        A.k.resize(std::size_t(R * G * dh));
        A.v.resize(std::size_t(R * G * dh));
        linear_forward(ctx, A.q.data(), xn, W.wq.data, W.bq.ptr(), R, d, H * dh);  // (T, H·d_h)
        linear_forward(ctx, A.k.data(), xn, W.wk.data, W.bk.ptr(), R, d, G * dh);  // (T, G·d_h)
        linear_forward(ctx, A.v.data(), xn, W.wv.data, W.bv.ptr(), R, d, G * dh);  // (T, G·d_h)
        if (c.qk_norm) {
            head_rmsnorm_forward(ctx, A.q.data(), W.q_norm.data, R, H, dh, c.norm_eps);
            head_rmsnorm_forward(ctx, A.k.data(), W.k_norm.data, R, G, dh, c.norm_eps);
        }
        hook(names[model::HookId::q], A.q.data(), {n, H, dh});
        hook(names[model::HookId::k], A.k.data(), {n, G, dh});
        hook(names[model::HookId::v], A.v.data(), {n, G, dh});
        if (c.positions == model::PositionKind::rope) {
            ws.rope.ensure(ctx, n, dh, c.rope_base);
            rope_forward(ctx, A.q.data(), ws.rope, R, n, H, dh, c.rope_layout);
            rope_forward(ctx, A.k.data(), ws.rope, R, n, G, dh, c.rope_layout);
            hook(names[model::HookId::rot_q], A.q.data(), {n, H, dh});
            hook(names[model::HookId::rot_k], A.k.data(), {n, G, dh});
        }

        const bool want_scores = hook.wants(names[model::HookId::attn_scores]);
        const bool want_pattern = hook.wants(names[model::HookId::pattern]);
        const bool materialise = want_scores || want_pattern || training;
        AttentionArgs a;
        a.q = A.q.data(); a.k = A.k.data(); a.v = A.v.data();
        a.B = B; a.n = n; a.H = H; a.G = G; a.dh = dh; a.window = c.sliding_window;
        a.slot = slot_of(c.attention);
        if (a.slot == Slot::kv_bias) { a.sink_k = W.sink_kv.data; a.sink_v = W.sink_kv.data + G * dh; }
        A.z.resize(std::size_t(R * H * dh));
        a.z = A.z.data();
        if (want_scores) { ws.scores.resize(std::size_t(B * H * n * n)); a.scores = ws.scores.data(); }
        if (materialise) { A.pattern.resize(std::size_t(B * H * n * n)); a.pattern = A.pattern.data(); }
        if (a.slot != Slot::none) { A.slot.resize(std::size_t(B * H * n)); a.slot_scores = A.slot.data(); }
        float* recv = received ? received->layer(l) : nullptr;
        if (recv && !want_scores && !want_pattern) { a.received = recv; a.received_stride = received->stride(); }
        attention_forward(ctx, a);

        bool recompute = false;
        if (want_scores && hook(names[model::HookId::attn_scores], ws.scores.data(), {H, n, n})) {
            softmax_rows(ctx, A.pattern.data(), ws.scores.data(), a.slot != Slot::none ? A.slot.data() : nullptr, B * H * n, n);
            recompute = true;
        }
        if (want_pattern && hook(names[model::HookId::pattern], A.pattern.data(), {H, n, n})) recompute = true;
        if (recompute) attention_apply_pattern(ctx, a, ws.ptrs);
        if (recv && (want_scores || want_pattern)) attention_received(ctx, recv, received->stride(), A.pattern.data(), B, H, n);

        if (c.gate != model::GateKind::none) {
            const bool per_head = c.gate == model::GateKind::per_head || c.gate == model::GateKind::static_per_head;
            const bool conditional = c.gate == model::GateKind::per_head || c.gate == model::GateKind::per_channel;
            const std::int64_t gn = per_head ? H : H * dh;
            A.gate.resize(std::size_t(R * gn));
            if (conditional) linear_forward(ctx, A.gate.data(), xn, W.w_attn_gate.data, W.b_attn_gate.ptr(), R, d, gn);
            else broadcast_rows(ctx, A.gate.data(), W.b_attn_gate.data, R, gn);
            sigmoid_inplace(ctx, A.gate.data(), R * gn);
            hook(names[model::HookId::gate], A.gate.data(), {n, gn});
            apply_gate(ctx, A.z.data(), A.gate.data(), R, H, dh, per_head);
        }
        hook(names[model::HookId::z], A.z.data(), {n, H, dh});
        linear_forward(ctx, out, A.z.data(), W.wo.data, W.bo.ptr(), R, H * dh, d);
    }

    void ffn(float* out, const float* xn, const DeviceLayer& W, const model::BlockNames& names, LayerActivations& A) {
        const std::int64_t R = rows(), d = c.d_model, f = c.d_ff;
        switch (c.ffn) {
            case model::FfnKind::swiglu:
                A.pre.resize(std::size_t(R * f));
                A.pre_linear.resize(std::size_t(R * f));
                A.post.resize(std::size_t(R * f));
                linear_forward(ctx, A.pre.data(), xn, W.w_gate.data, nullptr, R, d, f);
                linear_forward(ctx, A.pre_linear.data(), xn, W.w_up.data, W.b_up.ptr(), R, d, f);
                hook(names[model::HookId::mlp_pre], A.pre.data(), {n, f});
                hook(names[model::HookId::mlp_pre_linear], A.pre_linear.data(), {n, f});
                swiglu_forward(ctx, A.post.data(), A.pre.data(), A.pre_linear.data(), c.activation, R * f);  // w2(silu(w1 x) * w3 x)
                hook(names[model::HookId::mlp_post], A.post.data(), {n, f});
                linear_forward(ctx, out, A.post.data(), W.w_down.data, W.b_down.ptr(), R, f, d);
                return;
            case model::FfnKind::gelu:
                A.pre.resize(std::size_t(R * f));
                A.post.resize(std::size_t(R * f));
                linear_forward(ctx, A.pre.data(), xn, W.w_up.data, W.b_up.ptr(), R, d, f);
                hook(names[model::HookId::mlp_pre], A.pre.data(), {n, f});
                activation_forward(ctx, A.post.data(), A.pre.data(), c.activation, R * f);
                hook(names[model::HookId::mlp_post], A.post.data(), {n, f});
                linear_forward(ctx, out, A.post.data(), W.w_down.data, W.b_down.ptr(), R, f, d);
                return;
            case model::FfnKind::linear: linear_forward(ctx, out, xn, W.w_down.data, W.b_down.ptr(), R, d, d); return;
            case model::FfnKind::none: SINKSCOPE_CUDA_CHECK(cudaMemsetAsync(out, 0, std::size_t(R * d) * sizeof(float), ctx.stream())); return;
            case model::FfnKind::moe: throw Error("cuda::forward does not implement ffn = moe");  // refused before the pass too
        }
    }

    // The input of a pre-norm: x, or x with the force-sink channels zeroed at t ≥ 1.
    const float* norm_input(const float* x) {
        if (c.force_sink_channels <= 0 || n < 2) return x;
        ws.masked.resize(std::size_t(rows() * c.d_model));
        force_sink_mask(ctx, ws.masked.data(), x, B, n, c.d_model, c.force_sink_channels);
        return ws.masked.data();
    }

    // The device side of model/block_wiring.hpp: its buffers are the workspace's device buffers, the
    // pre-norm outputs are the layer's (the trainer keeps them), and the trainer's residual copies are
    // taken at the resid_pre and resid_mid points.
    struct BlockOps {
        Pass& pass;
        const DeviceLayer& W;
        LayerActivations& A;
        std::int64_t l;
        const model::BlockNames& names;

        DeviceBuffer<float>& buffer(model::Buf b) {
            const std::size_t size = std::size_t(pass.rows() * pass.c.d_model);
            switch (b) {
                case model::Buf::x: return pass.ws.x;
                case model::Buf::xn_attn: A.xn1.resize(size); return A.xn1;
                case model::Buf::xn_ffn: A.xn2.resize(size); return A.xn2;
                case model::Buf::out: return pass.ws.out;
                case model::Buf::side: return pass.ws.tmp;
            }
            return pass.ws.x;
        }
        float* at(model::Buf b) { return buffer(b).data(); }
        std::int64_t size() const { return pass.rows() * pass.c.d_model; }
        void norm(model::NormSlot slot, model::Sublayer sub, model::Buf dst, model::Buf src) {
            const bool attn = sub == model::Sublayer::attention;
            const model::Config& c = pass.c;
            if (slot == model::NormSlot::first)
                norm_forward(pass.ctx, at(dst), pass.norm_input(at(src)), (attn ? W.attn_norm : W.ffn_norm).params(), c.norm,
                             c.norm_eps, pass.rows(), c.d_model);
            else
                norm_forward(pass.ctx, at(dst), at(src), (attn ? W.attn_post_norm : W.ffn_post_norm).params(), c.norm, c.norm_eps,
                             pass.rows(), c.d_model);
        }
        void run(model::Sublayer sub, model::Buf dst, model::Buf src) {
            if (sub == model::Sublayer::attention) pass.attention(at(dst), at(src), W, l, names, A);
            else pass.ffn(at(dst), at(src), W, names, A);
        }
        void add(model::Buf dst, model::Buf src) { cuda::add(pass.ctx, at(dst), at(src), size()); }
        void copy(model::Buf dst, model::Buf src) { copy_device(at(dst), at(src), std::size_t(size()), pass.ctx.stream()); }
        void swap(model::Buf a, model::Buf b) { buffer(a).swap(buffer(b)); }
        void hook(model::HookId point, const std::string& name, model::Buf b) {
            pass.hook(name, at(b), {pass.n, pass.c.d_model});
            if (!pass.training) return;
            if (point == model::HookId::resid_pre) { A.resid_pre.resize(std::size_t(size())); copy_device(A.resid_pre.data(), at(b), std::size_t(size()), pass.ctx.stream()); }
            if (point == model::HookId::resid_mid) { A.resid_mid.resize(std::size_t(size())); copy_device(A.resid_mid.data(), at(b), std::size_t(size()), pass.ctx.stream()); }
        }
    };

    void block(std::int64_t l) {
        const model::BlockNames names(l);
        BlockOps ops{*this, w.layers[std::size_t(l)], ws.layers[training ? std::size_t(l) : 0], l, names};
        model::wire_block(ops, c, names);
    }
};

inline void check_sequences(const model::Config& c, const DeviceWeights& w, const std::vector<std::int32_t>& tokens,
                            std::int64_t B) {
    require(c.cpu_only_switches().empty(),
            "cuda::forward does not implement " + c.cpu_only_switches() + " (architecture " + c.architecture +
                "): run it with model::forward or Backend::automatic");
    require(!tokens.empty(), "cuda::forward: empty token sequence");
    require(B > 0 && std::int64_t(tokens.size()) % B == 0,
            "cuda::forward: " + std::to_string(tokens.size()) + " tokens do not form " + std::to_string(B) + " sequences");
    const std::int64_t T = std::int64_t(tokens.size()) / B;
    for (std::int64_t b = 0; b < B; ++b)
        model::detail::check_tokens(c, std::vector<std::int32_t>(tokens.begin() + b * T, tokens.begin() + (b + 1) * T));
    if (c.attention == model::AttentionKind::sink_token) {
        require(T + 1 <= c.context_length, "forward: " + std::to_string(T) +
                                               " tokens plus the sink token exceed the context length " +
                                               std::to_string(c.context_length));
        require(w.sink_embed.size() == c.d_model, "forward: sink_token attention needs a sink_embed of d_model entries",
                {"", "sink_embed", {}});
    }
    require(std::int64_t(w.layers.size()) == c.n_layers, "cuda::forward: the device weights have " +
                                                             std::to_string(w.layers.size()) + " layers, the config " +
                                                             std::to_string(c.n_layers));
}

// The whole pass over B sequences of T tokens (flat, B·T ids). Leaves the logits (B·T × vocab) in
// ws.logits when they are computed; returns whether they were.
inline bool run_forward(const Context& ctx, Workspace& ws, const model::Config& c, const DeviceWeights& w,
                        const std::vector<std::int32_t>& tokens, std::int64_t B, const model::HookSet<float>* hooks,
                        const ForwardOptions& o, bool training) {
    check_sequences(c, w, tokens, B);
    require(B == 1 || hooks == nullptr, "cuda::forward: hooks see one sequence; run batches without hooks");
    const std::int64_t T = std::int64_t(tokens.size()) / B;
    const std::int64_t sink = c.attention == model::AttentionKind::sink_token ? 1 : 0;
    const std::int64_t n = T + sink, R = B * n, d = c.d_model;
    if (o.received) {
        require(o.received->n_layers() == c.n_layers && o.received->n_heads() == c.n_heads,
                "cuda::forward: the AttentionReceived accumulator was made for another model");
        require(o.received->max_positions() >= n, "cuda::forward: the AttentionReceived accumulator holds " +
                                                      std::to_string(o.received->max_positions()) + " positions, the sequence has " +
                                                      std::to_string(n));
    }
    ws.tokens.upload(tokens, ctx.stream());
    for (auto* b : {&ws.x, &ws.xn, &ws.out, &ws.tmp}) b->resize(std::size_t(R * d));
    ws.layers.resize(training ? std::size_t(c.n_layers) : std::size_t(1));
    Pass pass{ctx, ws, c, w, DeviceHooks{hooks, &ctx, &ws}, B, n, training, o.received};

    embedding_forward(ctx, ws.x.data(), w.tok_embed.data, ws.tokens.data(), sink ? w.sink_embed.data : nullptr, B, n, d);
    pass.hook(model::hook_spec(model::HookId::embed).name, ws.x.data(), {n, d});
    if (c.positions == model::PositionKind::learned) {
        if (pass.hook.wants(model::hook_spec(model::HookId::pos_embed).name)) {
            // the hook sees (and may change) a copy of the first n rows of the position table
            copy_device(ws.tmp.data(), w.pos_embed.data, std::size_t(n * d), ctx.stream());
            pass.hook(model::hook_spec(model::HookId::pos_embed).name, ws.tmp.data(), {n, d});
            add_positions(ctx, ws.x.data(), ws.tmp.data(), B, n, d);
        } else {
            add_positions(ctx, ws.x.data(), w.pos_embed.data, B, n, d);
        }
    }
    const std::int64_t last = o.last_layer < 0 ? c.n_layers - 1 : std::min(o.last_layer, c.n_layers - 1);
    for (std::int64_t l = 0; l <= last; ++l) pass.block(l);
    if (o.received) o.received->add_samples(n, B);
    if (last != c.n_layers - 1 || !o.logits) return false;

    const float* fin = ws.x.data();
    if (c.norm_placement != model::NormPlacement::post) {
        ws.xf.resize(std::size_t(R * d));
        norm_forward(ctx, ws.xf.data(), ws.x.data(), w.final_norm.params(), c.norm, c.norm_eps, R, d);
        pass.hook(model::hook_spec(model::HookId::ln_final).name, ws.xf.data(), {n, d});
        fin = ws.xf.data();
    }
    if (sink) {
        ws.real.resize(std::size_t(B * T * d));
        drop_first_rows(ctx, ws.real.data(), fin, B, n, d);
        fin = ws.real.data();
    }
    ws.logits.resize(std::size_t(B * T * c.vocab_size));
    linear_forward(ctx, ws.logits.data(), fin, w.output_head().data, nullptr, B * T, d, c.vocab_size);  // (T, vocab)
    pass.hook(model::hook_spec(model::HookId::logits).name, ws.logits.data(), {T, c.vocab_size});
    return true;
}

}  // namespace detail

// Runs the model over `tokens` on the device and returns the logits (T × vocab) on the host, or an
// empty matrix when options say so — model::forward's contract, hooks included.
inline model::Mat<float> forward(const Context& ctx, Workspace& ws, const model::Config& c, const DeviceWeights& w,
                                 const std::vector<std::int32_t>& tokens, const model::HookSet<float>* hooks = nullptr,
                                 ForwardOptions options = {}) {
    if (!detail::run_forward(ctx, ws, c, w, tokens, 1, hooks, options, false)) return {};
    model::Mat<float> logits(std::int64_t(tokens.size()), c.vocab_size);
    ws.logits.download(logits.data(), std::size_t(logits.size()), ctx.stream());
    return logits;
}

// The same on the calling thread's default context and workspace (device 0).
inline model::Mat<float> forward(const model::Config& c, const DeviceWeights& w, const std::vector<std::int32_t>& tokens,
                                 const model::HookSet<float>* hooks = nullptr, ForwardOptions options = {}) {
    thread_local Workspace* ws = new Workspace;  // never freed: CUDA may be unloaded before thread-exit destructors
    return forward(default_context(), *ws, c, w, tokens, hooks, options);
}

}  // namespace sinkscope::cuda
