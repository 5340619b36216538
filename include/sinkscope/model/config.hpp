// Config: every hyperparameter and architectural switch of the one sinkscope transformer.
//
// One model, not two: the Llama family (RMSNorm, SwiGLU, RoPE, GQA, optional QKV bias (Qwen2) and
// per-head QK RMSNorm (Qwen3)) with its mixtures of experts (Mixtral, OLMoE), the GPT-2 family
// (LayerNorm, GELU, learned positions, biases) and the variants the papers ablate (norm placement,
// DynamicTanh, FFN kind, attention kind, output gates, sliding window, positional kind) are all switches
// of this struct. `validate()` rejects impossible combinations with a message that names the field.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>
#include <sstream>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/core/switches.hpp"

namespace sinkscope::model {

struct Config {
    std::string architecture = "llama";   // llama | qwen2 | qwen3 | mistral | gpt2 | sinkscope
    std::int64_t n_layers = 0;
    std::int64_t d_model = 0;
    std::int64_t n_heads = 0;
    std::int64_t n_kv_heads = 0;          // grouped-query attention: n_heads % n_kv_heads == 0
    std::int64_t head_dim = 0;            // usually d_model / n_heads, but Qwen3 decouples it
    std::int64_t d_ff = 0;
    std::int64_t vocab_size = 0;
    std::int64_t context_length = 0;      // positions beyond this are rejected

    NormKind norm = NormKind::rmsnorm;
    NormPlacement norm_placement = NormPlacement::pre;
    double norm_eps = 1e-5;
    bool qk_norm = false;                 // RMSNorm of q and k before RoPE (Qwen3, Gemma 3, OLMo-2)
    QkNormScope qk_norm_scope = QkNormScope::head;  // … per head (gains of d_h) or per projection (H·d_h, kvH·d_h)
    double dyt_alpha0_attn = 0.5;         // DynamicTanh initial α for attention-block norms
    double dyt_alpha0_other = 0.5;        // … for FFN-block and final norms

    FfnKind ffn = FfnKind::swiglu;
    Activation activation = Activation::silu;  // of the gate (SwiGLU, every MoE expert) or of the hidden layer (GELU FFN)
    // Mixture of experts (FfnKind::moe): n_experts SwiGLU experts of width d_ff, n_experts_used (top-k) of
    // them per token; moe_normalize_topk divides the k chosen softmax probabilities by their sum (Mixtral;
    // OLMoE's norm_topk_prob, false in OLMoE-1B-7B).
    std::int64_t n_experts = 0;
    std::int64_t n_experts_used = 0;
    bool moe_normalize_topk = true;

    AttentionKind attention = AttentionKind::softmax;
    GateKind gate = GateKind::none;
    std::int64_t sliding_window = 0;      // 0: full causal; w > 0: query t sees keys (t-w, t]
    // Per-layer windows (Gemma 2/3 alternate sliding and global layers): empty, or one entry per layer
    // that replaces sliding_window there (0: that layer is global).
    std::vector<std::int64_t> layer_windows;
    // Score of query t and key j: s = (q_t·k_j)·scale, then s ← c·tanh(s/c) when attn_softcap c > 0
    // (Gemma 2). scale 0 means 1/√d_h; Gemma's query_pre_attn_scalar q gives scale = q^(−1/2).
    double attn_scale = 0;
    double attn_softcap = 0;
    // Parallel residual (GPT-NeoX, GPT-J): x' = x + Attn(N₁(x)) + FFN(N₂(x)); no resid_mid.
    bool parallel_residual = false;
    // Paper A v2 "force-sink" channel masking: channels [0, k) of the residual stream are reserved for
    // position 0. Before every block's pre-norm (ln1, ln2; not ln_final) the norm input of positions
    // t ≥ 1 has those channels set to zero, so only position 0 can write a direction there. 0: off.
    std::int64_t force_sink_channels = 0;

    PositionKind positions = PositionKind::rope;
    RopeLayout rope_layout = RopeLayout::half_split;
    double rope_base = 10000.0;
    double rope_base_sliding = 0;         // RoPE base of the windowed layers (Gemma 3's local base); 0: rope_base
    std::int64_t rotary_dim = 0;          // RoPE rotates the first rotary_dim entries of a head (GPT-NeoX: 25 %); 0: all
    // Per-frequency RoPE divisors (Llama 3.1's "llama3" scaling; GGUF's rope_freqs.weight): empty, or one
    // entry f_i > 0 per frequency i < r/2 (r = rope_dims()), and frequency i rotates by
    //   θ_i = pos · base^(−2i/r) / f_i.
    // Llama 3.1: f_i = 1 for wavelengths 2π·base^(2i/r) below orig/high_freq_factor, = factor above
    // orig/low_freq_factor, and in between 1/((1 − s)/factor + s), s = (orig/wavelength − low)/(high − low).
    std::vector<double> rope_freq_divisors;
    double embed_scale = 1;               // x₀ = embedding · embed_scale (Gemma: √d_model, rounded to the weights' type)
    double logit_softcap = 0;             // logits ← c·tanh(logits/c) when c > 0 (Gemma 2)

    bool qkv_bias = false;                // biases of q, k, v projections (Qwen2, GPT-2)
    bool out_bias = false;                // bias of the attention output projection (GPT-2)
    bool mlp_bias = false;                // biases of the FFN projections (GPT-2)
    bool norm_bias = false;               // LayerNorm has a bias (GPT-2); RMSNorm never
    bool tied_embeddings = true;          // output head = token embedding

    // Every field, in declaration order, as f("name", field) with the field's own type: the one list of the
    // fields that model/config_io.hpp's to_json and from_json read (JSON keys = field names). Self is Config or
    // const Config. A new field goes here too; tests/train/test_config_io.cpp's structured binding fails to
    // compile until it does.
    template <class Self, class F>
    static void visit_fields(Self& c, F&& f) {
        f("architecture", c.architecture);
        f("n_layers", c.n_layers);
        f("d_model", c.d_model);
        f("n_heads", c.n_heads);
        f("n_kv_heads", c.n_kv_heads);
        f("head_dim", c.head_dim);
        f("d_ff", c.d_ff);
        f("vocab_size", c.vocab_size);
        f("context_length", c.context_length);
        f("norm", c.norm);
        f("norm_placement", c.norm_placement);
        f("norm_eps", c.norm_eps);
        f("qk_norm", c.qk_norm);
        f("qk_norm_scope", c.qk_norm_scope);
        f("dyt_alpha0_attn", c.dyt_alpha0_attn);
        f("dyt_alpha0_other", c.dyt_alpha0_other);
        f("ffn", c.ffn);
        f("activation", c.activation);
        f("n_experts", c.n_experts);
        f("n_experts_used", c.n_experts_used);
        f("moe_normalize_topk", c.moe_normalize_topk);
        f("attention", c.attention);
        f("gate", c.gate);
        f("sliding_window", c.sliding_window);
        f("layer_windows", c.layer_windows);
        f("attn_scale", c.attn_scale);
        f("attn_softcap", c.attn_softcap);
        f("parallel_residual", c.parallel_residual);
        f("force_sink_channels", c.force_sink_channels);
        f("positions", c.positions);
        f("rope_layout", c.rope_layout);
        f("rope_base", c.rope_base);
        f("rope_base_sliding", c.rope_base_sliding);
        f("rotary_dim", c.rotary_dim);
        f("rope_freq_divisors", c.rope_freq_divisors);
        f("embed_scale", c.embed_scale);
        f("logit_softcap", c.logit_softcap);
        f("qkv_bias", c.qkv_bias);
        f("out_bias", c.out_bias);
        f("mlp_bias", c.mlp_bias);
        f("norm_bias", c.norm_bias);
        f("tied_embeddings", c.tied_embeddings);
    }

    std::int64_t q_dim() const { return n_heads * head_dim; }
    std::int64_t kv_dim() const { return n_kv_heads * head_dim; }
    std::int64_t n_sub_blocks() const { return 2 * n_layers; }
    std::int64_t window_at(std::int64_t layer) const {
        return layer_windows.empty() ? sliding_window : layer_windows[std::size_t(layer)];
    }
    double rope_base_at(std::int64_t layer) const {
        return rope_base_sliding > 0 && window_at(layer) > 0 ? rope_base_sliding : rope_base;
    }
    std::int64_t rope_dims() const { return rotary_dim > 0 ? rotary_dim : head_dim; }
    bool has_post_norm() const { return norm_placement == NormPlacement::sandwich || norm_placement == NormPlacement::output; }
    // The switches that only the CPU implements (families loaded for analysis: Gemma, OLMo-2, GPT-NeoX,
    // Phi-3's partial rotary, Llama 3.1's frequency divisors, mixtures of experts); "" when there is none.
    // The CPU forward and backward (train/model_backward.hpp) run them; the CUDA forward and trainer refuse them.
    std::string cpu_only_switches() const {
        std::string r;
        auto add = [&r](bool on, const char* what) { if (on) r += (r.empty() ? "" : ", ") + std::string(what); };
        add(norm_placement == NormPlacement::output, "norm_placement = output");
        add(qk_norm && qk_norm_scope == QkNormScope::projection, "qk_norm_scope = projection");
        add(!layer_windows.empty(), "layer_windows");
        add(attn_scale != 0, "attn_scale");
        add(attn_softcap != 0, "attn_softcap");
        add(parallel_residual, "parallel_residual");
        add(rope_base_sliding != 0, "rope_base_sliding");
        add(rotary_dim != 0 && rotary_dim != head_dim, "rotary_dim");
        add(!rope_freq_divisors.empty(), "rope_freq_divisors");
        add(embed_scale != 1, "embed_scale");
        add(logit_softcap != 0, "logit_softcap");
        add(ffn == FfnKind::moe, "ffn = moe");
        return r;
    }
    [[deprecated("renamed cpu_only_switches: the CPU backward runs them too")]] std::string forward_only_switches() const {
        return cpu_only_switches();
    }
    // The combinations the CPU backward does not implement; "" when it implements this config. A mixture
    // of experts is differentiated with pre-norm placement only (Mixtral's and OLMoE's): the sandwich and
    // output norms would need the experts' raw output, which the tape does not keep.
    std::string backward_missing_switches() const {
        if (ffn == FfnKind::moe && norm_placement != NormPlacement::pre)
            return std::string("ffn = moe with norm_placement = ") + to_string(norm_placement);
        return "";
    }

    void validate() const {
        auto bad = [](const std::string& m) { throw Error("invalid config: " + m); };
        if (n_layers <= 0) bad("n_layers must be > 0");
        if (d_model <= 0) bad("d_model must be > 0");
        if (n_heads <= 0) bad("n_heads must be > 0");
        if (n_kv_heads <= 0 || n_heads % n_kv_heads != 0)
            bad("n_heads (" + std::to_string(n_heads) + ") must be a multiple of n_kv_heads (" + std::to_string(n_kv_heads) + ")");
        if (head_dim <= 0) bad("head_dim must be > 0");
        if (positions == PositionKind::rope && head_dim % 2 != 0) bad("RoPE needs an even head_dim, got " + std::to_string(head_dim));
        if (ffn != FfnKind::none && ffn != FfnKind::linear && d_ff <= 0) bad("d_ff must be > 0 for a " + std::string(to_string(ffn)) + " FFN");
        if (vocab_size <= 0) bad("vocab_size must be > 0");
        if (context_length <= 0) bad("context_length must be > 0");
        if (!(norm_eps >= 0)) bad("norm_eps must be >= 0");
        if (sliding_window < 0) bad("sliding_window must be >= 0");
        if (sliding_window > context_length)
            bad("sliding_window (" + std::to_string(sliding_window) + ") is larger than the context (" + std::to_string(context_length) + ")");
        if (norm_bias && norm != NormKind::layernorm && norm != NormKind::dynamic_tanh) bad("norm_bias needs LayerNorm or DynamicTanh");
        if (!(rope_base > 0)) bad("rope_base must be > 0");
        if (force_sink_channels < 0 || force_sink_channels > d_model)
            bad("force_sink_channels (" + std::to_string(force_sink_channels) + ") must lie in [0, d_model = " +
                std::to_string(d_model) + "]");
        if (force_sink_channels > 0 && norm_placement == NormPlacement::post)
            bad("force_sink_channels needs a pre-norm (pre or sandwich placement); post-norm has none");
        if (!layer_windows.empty() && std::int64_t(layer_windows.size()) != n_layers)
            bad("layer_windows has " + std::to_string(layer_windows.size()) + " entries for " + std::to_string(n_layers) + " layers");
        for (std::int64_t w : layer_windows)
            if (w < 0 || w > context_length) bad("every layer window must lie in [0, context_length]");
        if (rotary_dim < 0 || rotary_dim > head_dim || rotary_dim % 2 != 0)
            bad("rotary_dim (" + std::to_string(rotary_dim) + ") must be even and lie in [0, head_dim = " + std::to_string(head_dim) + "]");
        if (!rope_freq_divisors.empty()) {
            if (positions != PositionKind::rope) bad("rope_freq_divisors needs RoPE positions");
            if (std::int64_t(rope_freq_divisors.size()) != rope_dims() / 2)
                bad("rope_freq_divisors has " + std::to_string(rope_freq_divisors.size()) + " entries, RoPE has " +
                    std::to_string(rope_dims() / 2) + " frequencies (rope_dims()/2)");
            for (double f : rope_freq_divisors)
                if (!(f > 0) || !std::isfinite(f)) bad("every rope_freq_divisors entry must be finite and > 0");
        }
        if (!(attn_scale >= 0) || !(attn_softcap >= 0) || !(logit_softcap >= 0) || !(rope_base_sliding >= 0) || !(embed_scale > 0))
            bad("attn_scale, attn_softcap, logit_softcap and rope_base_sliding must be >= 0, embed_scale > 0");
        if (parallel_residual && norm_placement != NormPlacement::pre) bad("parallel_residual needs pre-norm placement");
        if (parallel_residual && ffn == FfnKind::none) bad("parallel_residual needs an FFN");
        if (force_sink_channels > 0 && norm_placement == NormPlacement::output)
            bad("force_sink_channels needs a pre-norm (pre or sandwich placement); output placement has none");
        if (ffn == FfnKind::moe) {
            if (n_experts < 1) bad("n_experts must be >= 1 for a moe FFN, got " + std::to_string(n_experts));
            if (n_experts_used < 1 || n_experts_used > n_experts)
                bad("n_experts_used (" + std::to_string(n_experts_used) + ") must lie in [1, n_experts = " +
                    std::to_string(n_experts) + "]");
            if (mlp_bias) bad("mlp_bias: the experts of a moe FFN have no biases");
        }
        if (attention == AttentionKind::sink_token && context_length < 2)
            bad("a sink token takes one position of the context; context_length must be >= 2");
    }

    std::string describe() const {
        std::ostringstream os;
        os << architecture << ": L=" << n_layers << " d=" << d_model << " H=" << n_heads << " kvH=" << n_kv_heads
           << " d_h=" << head_dim << " d_ff=" << d_ff << " vocab=" << vocab_size << " ctx=" << context_length
           << " norm=" << to_string(norm) << "/" << to_string(norm_placement) << " eps=" << norm_eps
           << (qk_norm ? " qk_norm" : "") << " ffn=" << to_string(ffn) << "(" << to_string(activation) << ")";
        if (ffn == FfnKind::moe)
            os << " experts=" << n_experts_used << "/" << n_experts << (moe_normalize_topk ? " (top-k renormalised)" : "");
        os << " attn=" << to_string(attention) << " gate=" << to_string(gate) << " pos=" << to_string(positions);
        if (positions == PositionKind::rope) os << "(" << to_string(rope_layout) << ", base " << rope_base << ")";
        if (rotary_dim && rotary_dim != head_dim) os << " rotary_dim=" << rotary_dim;
        if (rope_base_sliding) os << " rope_base_sliding=" << rope_base_sliding;
        if (!rope_freq_divisors.empty()) os << " rope_freq_divisors[" << rope_freq_divisors.size() << "]";
        if (sliding_window) os << " window=" << sliding_window;
        if (!layer_windows.empty()) {
            os << " windows=[";
            for (std::size_t l = 0; l < layer_windows.size(); ++l) os << (l ? "," : "") << layer_windows[l];
            os << "]";
        }
        if (qk_norm && qk_norm_scope == QkNormScope::projection) os << " qk_norm=projection";
        if (parallel_residual) os << " parallel";
        if (attn_scale) os << " attn_scale=" << attn_scale;
        if (attn_softcap) os << " attn_softcap=" << attn_softcap;
        if (logit_softcap) os << " logit_softcap=" << logit_softcap;
        if (embed_scale != 1) os << " embed_scale=" << embed_scale;
        if (force_sink_channels) os << " force_sink=" << force_sink_channels;
        os << (tied_embeddings ? " tied" : " untied");
        return os.str();
    }
};

}  // namespace sinkscope::model
