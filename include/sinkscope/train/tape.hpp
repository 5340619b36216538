// Tape: what the forward pass must keep for the backward pass, recorded through the model's hooks.
//
// There is one forward pass, model::forward (model/forward.hpp). Training runs it with a HookSet that
// copies the activations the backward pass reads into a Tape, under their TransformerLens names:
//
//   resid_pre, ln1.hook_normalized, attn.hook_rot_q / rot_k (RoPE) or hook_q / hook_k, attn.hook_v,
//   attn.hook_pattern, attn.hook_gate, attn.hook_z, hook_attn_out (post-norm), hook_resid_mid, ln2.hook_normalized,
//   mlp.hook_pre / pre_linear / post, mlp.hook_router_logits / expert_weights / chosen_experts (mixture of
//   experts), hook_mlp_out (post-norm), the last hook_resid_post, ln_final.hook_normalized, logits.
//
// Why this design (rather than a second, training-only forward): the model the interpretability
// tools measure is then exactly the model that was trained, every variant (sink token, force-sink,
// gates, …) is implemented once, and a hook that intervenes during training (ablation, patching)
// is differentiated like any other activation. The cost is one copy of each saved activation
// (memory-bound, small next to the GEMMs; in bf16 training the activations that only feed products are
// kept as their bf16 rounding, see SavedOperand) and a few cheap recomputations in the backward pass:
// the norms' 1/rms from their inputs, q/k before QK-norm (one GEMM, QK-norm only), the ungated z
// (gated attention only), the raw sub-block output before a sandwich or output norm (one GEMM) and each
// expert's hidden layer (mixture of experts only).
//
// The recorder also checks activations for NaN/inf and remembers the first offending hook name, which
// names the layer and the operation. FiniteCheck::all checks every saved activation; ::sentinels only
// the residual stream around each sub-block (resid_pre, resid_mid, the last resid_post) and the logits —
// a NaN anywhere reaches the next of these, so sentinels catch every fault at a fraction of the cost, and
// the Trainer re-records a faulty sequence with ::all to name the exact operation.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "sinkscope/layers/attention.hpp"
#include "sinkscope/layers/linear.hpp"
#include "sinkscope/model/config.hpp"
#include "sinkscope/model/forward.hpp"
#include "sinkscope/model/hooks.hpp"
#include "sinkscope/model/weights.hpp"

namespace sinkscope::train {

enum class FiniteCheck { none, sentinels, all };

// A saved activation that the backward pass reads only as an operand of matrix products. When the
// products that read it run in bf16 (and the config has no other use for it, see TapeRecorder), the
// recorder keeps its bf16 rounding instead of its float values: half the memory traffic, and the
// backward's products use the bits as they are instead of rounding the float copy again — the same bits,
// so the same arithmetic. `in_bits` says which of the two is current; the other keeps its memory.
// q, k and v are kept head-major as bits (Bf16Matrix::assign_head_major): the attention backward reads
// row blocks of one head at a time.
template <class T>
struct SavedOperand {
    Mat<T> value;
    model::Bf16Matrix bits;
    bool in_bits = false;
    model::ProductInput<T> input() const { return in_bits ? model::ProductInput<T>(bits) : model::ProductInput<T>(value); }
};

// Saved activations of one block; n = positions (T, or T + 1 with a sink token).
template <class T>
struct LayerTape {
    Mat<T> resid_pre;          // (n, d)        block input
    SavedOperand<T> xn1;       // (n, d)        ln1.hook_normalized (post-norm: the block's resid_mid)
    SavedOperand<T> q, k, v;   // (n, H·d_h), (n, G·d_h), (n, G·d_h)  q and k as they enter the scores (after RoPE)
    Mat<T> pattern;            // (H·n, n)      attention weights
    Mat<T> gate;               // (n, H) or (n, H·d_h)  sigmoid gate (gated attention only)
    SavedOperand<T> z;         // (n, H·d_h)    gated pattern·V, the input of W_O
    Mat<T> attn_out;           // (n, d)        post-norm only (empty otherwise)
    Mat<T> resid_mid;          // (n, d)
    SavedOperand<T> xn2;       // (n, d)        ln2.hook_normalized (post-norm: the block's resid_post)
    Mat<T> pre, pre_linear;    // (n, d_ff)     FFN gate pre-activation / up projection
    SavedOperand<T> post;      // (n, d_ff)     FFN hidden, the input of W_down
    Mat<T> mlp_out;            // (n, d)        post-norm only (empty otherwise)
    Mat<T> router_logits;      // (n, E)        mixture of experts only: the router's logits,
    Mat<T> expert_weights;     // (n, k)        the chosen experts' mixing weights
    Mat<T> chosen_experts;     // (n, k)        and their indices (exact integers)
    // The backward may round gradients that only feed bf16 products to bf16 as it makes them (the SwiGLU
    // backward's dgate and dup): set with the bf16 operands (TapeRecorder::keep_bf16_operands).
    bool round_gradients = false;
};

template <class T>
struct Tape {
    std::vector<std::int32_t> tokens;  // the T real tokens
    std::int64_t n = 0;                // positions in the residual stream (T, or T + 1 with a sink token)
    std::int64_t sink = 0;             // 1 with a sink token at position 0, else 0
    std::vector<LayerTape<T>> layers;
    Mat<T> final_in;                   // (n, d)  the last block's resid_post
    Mat<T> xf;                         // (n, d)  ln_final.hook_normalized (not for post-norm)
    Mat<T> logits;                     // (T, vocab)
    std::string nonfinite;             // first hook whose activation held NaN/inf ("" if none)
};

// Records the tape of one sequence at a time. Holds the hook set, so build one per thread and reuse it.
template <class T>
class TapeRecorder {
public:
    explicit TapeRecorder(const model::Config& c, FiniteCheck mode = FiniteCheck::sentinels) : c_(c), check_(mode) {
        require(c.backward_missing_switches().empty(), "backward: the backward pass does not implement " +
                                                           c.backward_missing_switches() + " (architecture " + c.architecture + ")");
        tape_.layers.resize(c.n_layers);
        const bool rope = c.positions == model::PositionKind::rope;
        // Which saved operands may be kept as bf16 bits (when their products run in bf16): those the
        // backward reads only in products. QK-norm recomputes q and k from ln1's output, a sandwich or
        // output norm recomputes the sub-block outputs from z and the FFN's input, and a mixture of
        // experts recomputes each expert from the FFN's input (float products); the KV-bias slot
        // multiplies q in float (and q, k, v are kept alike).
        const bool recompute_out = c.norm_placement == model::NormPlacement::sandwich || c.norm_placement == model::NormPlacement::output;
        const bool moe = c.ffn == model::FfnKind::moe;
        const Operand linear_in{false, !c.qk_norm}, sub_in{false, !recompute_out}, ffn_in{false, !recompute_out && !moe};
        const bool qkv_bits = c.attention != model::AttentionKind::kv_bias;
        const Operand q_in{true, qkv_bits, c.n_heads}, kv_in{true, qkv_bits, c.n_kv_heads};
        for (std::int64_t l = 0; l < c.n_layers; ++l) {
            LayerTape<T>& L = tape_.layers[l];
            const model::BlockNames names(l);
            capture(names[model::HookId::resid_pre], L.resid_pre, false, true);
            capture(names[model::HookId::ln1], L.xn1, linear_in);
            capture(names[rope ? model::HookId::rot_q : model::HookId::q], L.q, q_in);
            capture(names[rope ? model::HookId::rot_k : model::HookId::k], L.k, kv_in);
            capture(names[model::HookId::v], L.v, kv_in);
            capture(names[model::HookId::pattern], L.pattern, /*cols_from_last=*/true);
            if (c.gate != model::GateKind::none) capture(names[model::HookId::gate], L.gate);
            capture(names[model::HookId::z], L.z, sub_in);
            // The sub-layer outputs only enter the post-norm backward (N(x + F(x)) needs x + F(x)).
            const bool post = c.norm_placement == model::NormPlacement::post;
            if (post) capture(names[model::HookId::attn_out], L.attn_out);
            else check_only(names[model::HookId::attn_out]);
            capture(names[model::HookId::resid_mid], L.resid_mid, false, true);
            if (c.ffn != model::FfnKind::none) {
                capture(names[model::HookId::ln2], L.xn2, ffn_in);
                if (c.ffn == model::FfnKind::swiglu || c.ffn == model::FfnKind::gelu) {
                    capture(names[model::HookId::mlp_pre], L.pre);
                    capture(names[model::HookId::mlp_post], L.post, sub_in);
                }
                if (c.ffn == model::FfnKind::swiglu) capture(names[model::HookId::mlp_pre_linear], L.pre_linear);
                if (moe) {
                    capture(names[model::HookId::router_logits], L.router_logits, /*cols_from_last=*/true);
                    capture(names[model::HookId::expert_weights], L.expert_weights, /*cols_from_last=*/true);
                    capture(names[model::HookId::chosen_experts], L.chosen_experts, /*cols_from_last=*/true);
                }
                if (post) capture(names[model::HookId::mlp_out], L.mlp_out);
                else check_only(names[model::HookId::mlp_out]);
            }
            if (l == c.n_layers - 1) capture(names[model::HookId::resid_post], tape_.final_in, false, true);
        }
        if (c.norm_placement != model::NormPlacement::post) capture(model::hook_spec(model::HookId::ln_final).name, tape_.xf);
        // The logits are returned by forward(); only the finiteness check needs the hook.
        if (check_ != FiniteCheck::none) hooks_.add_observer("logits", [this](const std::string& name, model::ActivationRef<T>& x) {
            check(name, x.data, x.size());
        });
    }

    TapeRecorder(const TapeRecorder&) = delete;             // the hooks point into tape_
    TapeRecorder& operator=(const TapeRecorder&) = delete;

    // Runs the forward pass over `tokens` and records its tape.
    const Tape<T>& record(const model::Weights<T>& w, const std::vector<std::int32_t>& tokens) {
        tape_.tokens = tokens;
        tape_.sink = c_.attention == model::AttentionKind::sink_token ? 1 : 0;
        tape_.n = std::int64_t(tokens.size()) + tape_.sink;
        tape_.nonfinite.clear();
        linear_bits_ = model::products_in_bf16<T>();
        attention_bits_ = model::attention_in_bf16<T>();
        struct Withdraw {  // no offer outlives the forward, even one that throws
            bool active;
            ~Withdraw() { if (active) model::withdraw_bf16_offer(); }
        } withdraw{linear_bits_ && allow_bits_};
        for (auto& L : tape_.layers) L.round_gradients = linear_bits_ && allow_bits_;
        tape_.logits = model::forward(c_, w, tokens, &hooks_);
        return tape_;
    }

    // Whether operands may be kept as bf16 bits (default true); false keeps every activation in float
    // (and the backward's gradients too, LayerTape::round_gradients): the reference the tests compare
    // the bits against.
    void keep_bf16_operands(bool on) { allow_bits_ = on; }

    Tape<T>& tape() { return tape_; }
    const model::Config& config() const { return c_; }

private:
    void check(const std::string& name, const T* data, std::int64_t size) {
        if (check_ == FiniteCheck::none || !tape_.nonfinite.empty()) return;
        // Σ 0·xᵢ is 0 iff every xᵢ is finite (see stream_copy); Eigen vectorises the sum, not allFinite().
        if ((Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(data, size) * T(0)).sum() != T(0)) tape_.nonfinite = name;
    }
    // dst[i] = src[i]; returns whether every entry is finite. The tape is read only by the backward pass,
    // long after the forward has moved on, so float copies go around the cache (non-temporal stores): they
    // neither evict the forward's working set nor make the CPU read the destination lines first. The check
    // rides on the copy: Σ 0·src[i] is 0 when all entries are finite and NaN otherwise (0·±∞ = NaN).
    static bool stream_copy(T* dst, const T* src, std::int64_t n) {
        std::int64_t i = 0;
        T zero_sum = 0;
#if defined(__AVX512F__)
        if constexpr (std::is_same_v<T, float>) {
            for (; i < n && (reinterpret_cast<std::uintptr_t>(dst + i) & 63) != 0; ++i) zero_sum += T(0) * (dst[i] = src[i]);
            __m512 acc = _mm512_setzero_ps();
            const __m512 zero = _mm512_setzero_ps();
            for (; i + 16 <= n; i += 16) {
                const __m512 x = _mm512_loadu_ps(src + i);
                _mm512_stream_ps(dst + i, x);
                acc = _mm512_add_ps(acc, _mm512_mul_ps(x, zero));
            }
            _mm_sfence();
            if (_mm512_cmp_ps_mask(acc, acc, _CMP_UNORD_Q) != 0) zero_sum = std::numeric_limits<T>::quiet_NaN();
        }
#endif
        for (; i < n; ++i) zero_sum += T(0) * (dst[i] = src[i]);
        return zero_sum == T(0);
    }

    // An activation the backward does not read: checked under FiniteCheck::all (to name the operation
    // that made a NaN), never copied.
    void check_only(const std::string& name) {
        if (check_ == FiniteCheck::all)
            hooks_.add_observer(name, [this](const std::string& nm, model::ActivationRef<T>& x) { check(nm, x.data, x.size()); });
    }
    void capture(const std::string& name, Mat<T>& dst, bool cols_from_last = false, bool sentinel = false) {
        const bool checked = check_ == FiniteCheck::all || (check_ == FiniteCheck::sentinels && sentinel);
        hooks_.add_observer(name, [this, &dst, cols_from_last, checked](const std::string& nm, model::ActivationRef<T>& x) {
            const std::int64_t size = x.size();
            const std::int64_t cols = cols_from_last ? x.shape.back() : size / x.shape.front();
            if (x.donor && x.donor->cols() == cols && x.donor->size() == size && !checked) {
                // The forward pass is done with this matrix (the pattern): take its memory, give ours back.
                dst.swap(*x.donor);
                x.donor = nullptr;
                return;
            }
            dst.resize(size / cols, cols);
            const bool finite = stream_copy(dst.data(), x.data, size);
            if (checked && !finite && tape_.nonfinite.empty()) tape_.nonfinite = nm;
        });
    }

    // A SavedOperand's readers: the attention's products (q·kᵀ, p·v) or the linear layers'; `bits_ok`:
    // the config reads it only in products (see the constructor).
    struct Operand {
        bool attention;
        bool bits_ok;
        std::int64_t heads = 1;  // attention operands: kept head-major, with this many heads
    };
    void capture(const std::string& name, SavedOperand<T>& dst, Operand use) {
        hooks_.add_observer(name, [this, &dst, use](const std::string& nm, model::ActivationRef<T>& x) {
            const std::int64_t size = x.size(), rows = x.shape.front();
            dst.in_bits = allow_bits_ && use.bits_ok && (use.attention ? attention_bits_ : linear_bits_);
            if constexpr (std::is_same_v<T, float>) {
                if (dst.in_bits) {
                    if (use.attention) dst.bits.assign_head_major(x.data, rows, use.heads, size / rows / use.heads);
                    else dst.bits.assign(x.data, rows, size / rows);
                    if (check_ == FiniteCheck::all) check(nm, x.data, size);
                    // The forward's next product reads this activation (W_Q/K/V, W_O, the FFN's inputs,
                    // W_down): it takes these bits instead of rounding it again. (The attention's operands
                    // are read in blocks, which an offer does not cover.)
                    if (!use.attention) model::offer_bf16_bits(x.data, dst.bits);
                    return;
                }
            }
            dst.value.resize(rows, size / rows);
            const bool finite = stream_copy(dst.value.data(), x.data, size);
            if (check_ == FiniteCheck::all && !finite && tape_.nonfinite.empty()) tape_.nonfinite = nm;
        });
    }

    model::Config c_;
    FiniteCheck check_;
    bool linear_bits_ = false, attention_bits_ = false;  // this record's products run in bf16
    bool allow_bits_ = true;
    Tape<T> tape_;
    model::HookSet<T> hooks_;
};

}  // namespace sinkscope::train
