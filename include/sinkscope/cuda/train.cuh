// Training on the device: a batch of B sequences at once through the device forward pass, the
// cross-entropy, the backward pass and AdamW — train/model_backward.hpp's pass on device buffers.
//
//   forward:  x = E[tokens] (+ P) (sink first);  per block  h = x + Attn(N₁(m(x))),  x' = h + FFN(N₂(m(h)));
//             x_f = N_f(x);  logits = x_f W_headᵀ                       (m: force-sink mask or identity)
//   backward: dlogits = (softmax − onehot)/N on counted rows;  then each line above in reverse, every
//             parameter gradient accumulated (+=) into one gradient arena (zeroed once per batch)
//
// What the device backward covers: pre-norm placement; RMSNorm, LayerNorm, DynamicTanh (with biases);
// FFN SwiGLU / GELU / linear / none with any activation; softmax and softmax-off-by-one attention,
// sliding windows, grouped-query heads, the sink token and force-sink masking; RoPE (both layouts),
// learned or no positions; q/k/v/o and FFN biases; tied or untied head; every loss mask. Not (yet):
// post and sandwich placement, QK-norm, output gates and KV-bias attention — training_unsupported()
// names the switch and the Trainer refuses such a config (train them on the CPU: the CPU is the
// reference and trains every variant).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sinkscope/cuda/attention.cuh"
#include "sinkscope/cuda/common.cuh"
#include "sinkscope/cuda/elementwise.cuh"
#include "sinkscope/cuda/forward.cuh"
#include "sinkscope/cuda/gemm.cuh"
#include "sinkscope/cuda/loss.cuh"
#include "sinkscope/cuda/norms.cuh"
#include "sinkscope/cuda/optimizer.cuh"
#include "sinkscope/cuda/rope.cuh"
#include "sinkscope/cuda/weights.cuh"
#include "sinkscope/train/loss.hpp"
#include "sinkscope/train/optimizer.hpp"

namespace sinkscope::cuda {

// "" when the device trainer handles `c`, else the switch it does not handle (host logic).
inline std::string training_unsupported(const model::Config& c) {
    using namespace model;
    if (c.norm_placement != NormPlacement::pre)
        return std::string("norm_placement = ") + to_string(c.norm_placement) + " (the device backward covers pre-norm)";
    if (c.qk_norm) return "qk_norm";
    if (c.gate != GateKind::none) return std::string("gate = ") + to_string(c.gate);
    if (c.attention == AttentionKind::kv_bias) return "attention = kv_bias";
    return "";
}

// Splits B sequences of T + 1 tokens into inputs (B·T) and targets (B·T); checks them (host logic).
inline void split_batch(const model::Config& c, const std::vector<std::vector<std::int32_t>>& seqs,
                        std::vector<std::int32_t>& inputs, std::vector<std::int32_t>& targets) {
    require(!seqs.empty(), "cuda::Trainer: empty batch");
    const std::size_t len = seqs[0].size();
    require(len >= 2, "cuda::Trainer: a training sequence needs at least 2 tokens (input and target)");
    inputs.clear();
    targets.clear();
    for (std::size_t b = 0; b < seqs.size(); ++b) {
        require(seqs[b].size() == len, "cuda::Trainer: sequence " + std::to_string(b) + " has " + std::to_string(seqs[b].size()) +
                                           " tokens, sequence 0 has " + std::to_string(len) + " (a batch has one length)");
        for (std::size_t t = 0; t < len; ++t)
            require(seqs[b][t] >= 0 && seqs[b][t] < c.vocab_size, "cuda::Trainer: token id " + std::to_string(seqs[b][t]) +
                                                                      " at position " + std::to_string(t) + " of sequence " +
                                                                      std::to_string(b) + " is outside the vocabulary");
        inputs.insert(inputs.end(), seqs[b].begin(), seqs[b].end() - 1);
        targets.insert(targets.end(), seqs[b].begin() + 1, seqs[b].end());
    }
}

class Trainer {
public:
    Trainer(const Context& ctx, const model::Config& c, const model::Weights<float>& init, const train::AdamWConfig& o)
        : ctx_(ctx), c_(covered(c)), host_(init), w_(upload(ctx, c, init)), g_(like_layout(ctx, w_)), opt_(ctx, o, w_) {}

    // Mean loss of the batch (B sequences of T + 1 tokens) and its gradients, which replace the
    // previous ones: L = (1/N) Σ counted rows,  N = B · mask.count(T).
    double loss_and_grad(const std::vector<std::vector<std::int32_t>>& seqs, const train::LossMask& mask) {
        std::vector<std::int32_t> inputs, targets;
        split_batch(c_, seqs, inputs, targets);
        const std::int64_t B = std::int64_t(seqs.size()), T = std::int64_t(seqs[0].size()) - 1;
        mask.validate(T);
        const double N = double(B * mask.count(T));
        ForwardOptions fo;
        detail::run_forward(ctx_, ws_, c_, w_, inputs, B, nullptr, fo, true);
        ws_.targets.upload(targets, ctx_.stream());
        const train::LossSum ls = cross_entropy(ctx_, ws_.logits.data(), ws_.logits.data(), ws_.targets.data(), B, T, c_.vocab_size,
                                                mask, float(1.0 / N), ws_.dscratch);
        g_.arena_.zero(ctx_.stream());
        backward(B, T);
        return ls.sum / N;
    }

    // Global-norm clipping of the current gradients; returns the norm before clipping.
    double clip(double max_norm) { return grad_norm_ = clip_gradients(ctx_, g_, max_norm, ws_.dscratch); }
    void update(double lr) { opt_.update(ctx_, w_, g_, lr); }

    // loss_and_grad, clipping at the optimiser's grad_clip, and AdamW at train::learning_rate(step).
    double step(const std::vector<std::vector<std::int32_t>>& seqs, const train::LossMask& mask) {
        const double loss = loss_and_grad(seqs, mask);
        clip(opt_.config().grad_clip);
        update(train::learning_rate(opt_.config(), opt_.step()));
        return loss;
    }

    model::Weights<float> weights() const { model::Weights<float> w = host_; download(ctx_, w_, w); return w; }
    model::Weights<float> gradients() const { model::Weights<float> g = host_; download(ctx_, g_, g); return g; }
    const DeviceWeights& device_weights() const { return w_; }
    DeviceAdamW& optimizer() { return opt_; }
    double last_grad_norm() const { return grad_norm_; }
    const model::Config& config() const { return c_; }

private:
    static const model::Config& covered(const model::Config& c) {
        const std::string why = training_unsupported(c);
        require(why.empty(), "cuda::Trainer: the device backward does not cover " + why + "; train this config on the CPU");
        return c;
    }

    // dinp (R × d) += ∂L/∂inp of y = Norm(m(inp)), through the force-sink mask m.
    void norm_backward_masked(float* dinp, const DeviceNorm& gW, const DeviceNorm& W, const float* dout, const float* inp,
                              std::int64_t B, std::int64_t n) {
        const std::int64_t R = B * n, d = c_.d_model, k = c_.force_sink_channels;
        const bool masked = k > 0 && n >= 2;
        const float* x = inp;
        if (masked) {
            ws_.masked.resize(std::size_t(R * d));
            force_sink_mask(ctx_, ws_.masked.data(), inp, B, n, d, k);
            x = ws_.masked.data();
        }
        ws_.dout.resize(std::size_t(R * d));
        ws_.dout.zero(ctx_.stream());
        norm_backward(ctx_, ws_.dout.data(), gW.grads(), dout, x, W.params(), c_.norm, c_.norm_eps, R, d, ws_.stats);
        if (masked) force_sink_mask(ctx_, ws_.dout.data(), ws_.dout.data(), B, n, d, k);  // dinp += dout ⊙ mask
        add(ctx_, dinp, ws_.dout.data(), R * d);
    }

    // dinp (R × d) += ∂L/∂xn of the attention block given dout = ∂L/∂out.
    void attention_backward_block(float* dinp, const float* dout, const float* xn, const LayerActivations& A, DeviceLayer& G,
                                  const DeviceLayer& W, std::int64_t B, std::int64_t n) {
        const std::int64_t R = B * n, d = c_.d_model, H = c_.n_heads, Gk = c_.n_kv_heads, dh = c_.head_dim;
        ws_.dz.resize(std::size_t(R * H * dh));
        ws_.dq.resize(std::size_t(R * H * dh));
        ws_.dk.resize(std::size_t(R * Gk * dh));
        ws_.dv.resize(std::size_t(R * Gk * dh));
        ws_.dz.zero(ctx_.stream());
        ws_.dk.zero(ctx_.stream());
        ws_.dv.zero(ctx_.stream());
        // out = z W_Oᵀ + b_O
        linear_backward(ctx_, ws_.dz.data(), G.wo.data, G.bo.ptr(), dout, A.z.data(), W.wo.data, R, H * dh, d);
        // z_h = P_h v_g,  P = softmax(q_h k_gᵀ/√d_h + mask [+ slot])
        attention_backward(ctx_, ws_.dq.data(), ws_.dk.data(), ws_.dv.data(), ws_.dz.data(), A.q.data(), A.k.data(), A.v.data(),
                           A.pattern.data(), ws_.dp, B, n, H, Gk, dh, ws_.ptrs);
        if (c_.positions == model::PositionKind::rope) {
            rope_backward(ctx_, ws_.dq.data(), ws_.rope, R, n, H, dh, c_.rope_layout);
            rope_backward(ctx_, ws_.dk.data(), ws_.rope, R, n, Gk, dh, c_.rope_layout);
        }
        // q = xn W_Qᵀ + b_Q, k = …, v = …
        linear_backward(ctx_, dinp, G.wq.data, G.bq.ptr(), ws_.dq.data(), xn, W.wq.data, R, d, H * dh);
        linear_backward(ctx_, dinp, G.wk.data, G.bk.ptr(), ws_.dk.data(), xn, W.wk.data, R, d, Gk * dh);
        linear_backward(ctx_, dinp, G.wv.data, G.bv.ptr(), ws_.dv.data(), xn, W.wv.data, R, d, Gk * dh);
    }

    // dinp (R × d) += ∂L/∂xn of the FFN block given dout.
    void ffn_backward_block(float* dinp, const float* dout, const float* xn, const LayerActivations& A, DeviceLayer& G,
                            const DeviceLayer& W, std::int64_t R) {
        const std::int64_t d = c_.d_model, f = c_.d_ff;
        switch (c_.ffn) {
            case model::FfnKind::swiglu: {
                ws_.dpre.resize(std::size_t(R * f));
                ws_.dpre2.resize(std::size_t(R * f));
                ws_.dz.resize(std::size_t(R * f));
                ws_.dz.zero(ctx_.stream());  // dpost
                linear_backward(ctx_, ws_.dz.data(), G.w_down.data, G.b_down.ptr(), dout, A.post.data(), W.w_down.data, R, f, d);
                // hidden = act(gate) ⊙ up
                swiglu_backward(ctx_, ws_.dpre.data(), ws_.dpre2.data(), ws_.dz.data(), A.pre.data(), A.pre_linear.data(),
                                c_.activation, R * f);
                linear_backward(ctx_, dinp, G.w_gate.data, nullptr, ws_.dpre.data(), xn, W.w_gate.data, R, d, f);
                linear_backward(ctx_, dinp, G.w_up.data, G.b_up.ptr(), ws_.dpre2.data(), xn, W.w_up.data, R, d, f);
                return;
            }
            case model::FfnKind::gelu: {
                ws_.dpre.resize(std::size_t(R * f));
                ws_.dz.resize(std::size_t(R * f));
                ws_.dz.zero(ctx_.stream());
                linear_backward(ctx_, ws_.dz.data(), G.w_down.data, G.b_down.ptr(), dout, A.post.data(), W.w_down.data, R, f, d);
                activation_backward(ctx_, ws_.dpre.data(), ws_.dz.data(), A.pre.data(), c_.activation, R * f);
                linear_backward(ctx_, dinp, G.w_up.data, G.b_up.ptr(), ws_.dpre.data(), xn, W.w_up.data, R, d, f);
                return;
            }
            case model::FfnKind::linear:
                linear_backward(ctx_, dinp, G.w_down.data, G.b_down.ptr(), dout, xn, W.w_down.data, R, d, d);
                return;
            case model::FfnKind::none: return;
            case model::FfnKind::moe: throw Error("cuda training does not implement ffn = moe");  // refused at construction too
        }
    }

    void backward(std::int64_t B, std::int64_t T) {
        const std::int64_t sink = c_.attention == model::AttentionKind::sink_token ? 1 : 0;
        const std::int64_t n = T + sink, R = B * n, d = c_.d_model, V = c_.vocab_size;
        const float* dlogits = ws_.logits.data();
        const DeviceTensor& head = w_.output_head();
        const DeviceTensor& dhead = g_.output_head();
        ws_.dx.resize(std::size_t(R * d));
        ws_.dxn.resize(std::size_t(R * d));
        ws_.dxn.zero(ctx_.stream());
        // logits = x_f W_headᵀ   (the real positions only)
        if (sink) {
            ws_.dpre.resize(std::size_t(B * T * d));
            ws_.dpre.zero(ctx_.stream());
            linear_backward(ctx_, ws_.dpre.data(), dhead.data, nullptr, dlogits, ws_.real.data(), head.data, B * T, d, V);
            insert_after_first_rows(ctx_, ws_.dxn.data(), ws_.dpre.data(), B, n, d);
        } else {
            linear_backward(ctx_, ws_.dxn.data(), dhead.data, nullptr, dlogits, ws_.xf.data(), head.data, B * T, d, V);
        }
        // x_f = N_f(x)
        ws_.dx.zero(ctx_.stream());
        norm_backward(ctx_, ws_.dx.data(), g_.final_norm.grads(), ws_.dxn.data(), ws_.x.data(), w_.final_norm.params(), c_.norm,
                      c_.norm_eps, R, d, ws_.stats);
        for (std::int64_t l = c_.n_layers - 1; l >= 0; --l) {
            const LayerActivations& A = ws_.layers[std::size_t(l)];
            DeviceLayer& G = g_.layers[std::size_t(l)];
            const DeviceLayer& W = w_.layers[std::size_t(l)];
            if (c_.ffn != model::FfnKind::none) {
                // x' = h + FFN(N₂(m(h)))
                ws_.dxn.zero(ctx_.stream());
                ffn_backward_block(ws_.dxn.data(), ws_.dx.data(), A.xn2.data(), A, G, W, R);
                norm_backward_masked(ws_.dx.data(), G.ffn_norm, W.ffn_norm, ws_.dxn.data(), A.resid_mid.data(), B, n);
            }
            // h = x + Attn(N₁(m(x)))
            ws_.dxn.zero(ctx_.stream());
            attention_backward_block(ws_.dxn.data(), ws_.dx.data(), A.xn1.data(), A, G, W, B, n);
            norm_backward_masked(ws_.dx.data(), G.attn_norm, W.attn_norm, ws_.dxn.data(), A.resid_pre.data(), B, n);
        }
        // x = E[tokens] + P (sink embedding first)
        embedding_backward(ctx_, g_.tok_embed.data, sink ? g_.sink_embed.data : nullptr,
                           c_.positions == model::PositionKind::learned ? g_.pos_embed.data : nullptr, ws_.dx.data(),
                           ws_.tokens.data(), B, n, d);
    }

    const Context& ctx_;
    model::Config c_;
    model::Weights<float> host_;  // the host layout (and initial values) that weights() / gradients() fill
    DeviceWeights w_, g_;
    DeviceAdamW opt_;
    Workspace ws_;
    double grad_norm_ = 0;
};

}  // namespace sinkscope::cuda
