// Weights<T>: the parameters of the sinkscope transformer, in PyTorch layout.
//
// Every linear map is stored (out_features × in_features), row-major, so y = x Wᵀ with x (T × in):
// the layout of torch.nn.Linear and of GGUF (whose ne[0] is the contiguous in-dimension). Vectors are
// column vectors. A parameter that the Config does not use is left empty (size 0). Everything about each
// parameter (its canonical name, shape, presence, initialisation and checkpoint keys) is one row of
// model/parameter_table.hpp; `visit_parameters`, `parameter_count` and `cast_weights` walk that table.
//
// File-type storage (model/load.hpp, LoadOptions{WeightStorage::file_type}; float only, GGUF or F16/BF16
// safetensors): the linear maps (W_Q, W_K, W_V, W_O, W_gate, W_in, W_out, the experts' maps, the token
// embedding and the output head) may instead be QuantMatrix views of their blocks in the memory-mapped file
// (the `*_file` members, for_each_view; the Mat is then empty), which Weights::file keeps alive. The forward
// reads them through detail::linear_weight (model/forward.hpp); everything that needs dense parameters
// (visit_parameters, so training, checkpoints and the CUDA upload; cast_weights; output_head) refuses such
// weights with an Error (require_dense). BF16 storage (model/bf16_weights.hpp, WeightStorage::bf16) makes the
// same kind of views of BF16 copies held in memory.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/core/tensor.hpp"
#include "sinkscope/layers/bf16_matmul.hpp"
#include "sinkscope/layers/norms.hpp"
#include "sinkscope/layers/quant_matrix.hpp"
#include "sinkscope/model/config.hpp"

namespace sinkscope::model {

/// How a model's linear maps are held in memory (LoadOptions::storage, Weights::storage; model/load.hpp).
enum class WeightStorage {
    float32,    // every tensor converted to T at load (dense Mat; what training, CUDA and analysis need)
    file_type,  // plain linear maps kept in their file types (GGUF blocks, F16, BF16), memory-mapped (forward and hooks only)
    bf16,       // read as float32, then every dense linear map rounded once to BF16 and held so (model/bf16_weights.hpp;
                // forward and hooks only): half the memory, and bf16 products that convert no weight
};
/// The word of the CLI's --weights (and the Python module's weights=) for `s`.
inline const char* to_string(WeightStorage s) {
    return s == WeightStorage::file_type ? "file" : s == WeightStorage::bf16 ? "bf16" : "float32";
}

// NormWeights (a norm's gain, bias and α) is defined with the norms, in layers/norms.hpp.

// One expert of a mixture-of-experts FFN (FfnKind::moe): a SwiGLU FFN, W_down (act(W_gate x) ⊙ W_up x).
template <class T>
struct ExpertWeights {
    Mat<T> w_gate, w_up, w_down;     // (d_ff × d), (d_ff × d), (d × d_ff)
    QuantMatrix w_gate_file, w_up_file, w_down_file;  // file-type storage: views (each set only when its Mat is empty)
};

template <class T>
struct LayerWeights {
    NormWeights<T> attn_norm;        // pre-attention norm (input_layernorm / ln_1)
    NormWeights<T> attn_post_norm;   // sandwich / post placement: norm after the attention block
    Mat<T> wq, wk, wv, wo;           // (H·d_h × d), (kvH·d_h × d), (kvH·d_h × d), (d × H·d_h)
    Vec<T> bq, bk, bv, bo;           // optional biases
    Vec<T> q_norm, k_norm;           // (d_h) per-head QK RMSNorm gains (Qwen3)
    Mat<T> sink_kv;                  // (2 × kvH·d_h): learnable sink key (row 0) and value (row 1)
    Mat<T> w_attn_gate;              // (H × d) per-head or (H·d_h × d) per-channel conditional gate
    Vec<T> b_attn_gate;              // (H) or (H·d_h) gate bias (the whole gate when static)

    NormWeights<T> ffn_norm;         // pre-FFN norm (post_attention_layernorm / ln_2)
    NormWeights<T> ffn_post_norm;    // sandwich / post placement: norm after the FFN block
    Mat<T> w_gate, w_up, w_down;     // SwiGLU: (d_ff × d), (d_ff × d), (d × d_ff); GELU FFN: up/down; linear: down (d × d)
    Vec<T> b_up, b_down;             // optional FFN biases (GPT-2: c_fc, c_proj)
    Mat<T> w_router;                 // (E × d) mixture of experts: router logits = x W_routerᵀ
    std::vector<ExpertWeights<T>> experts;  // E experts (FfnKind::moe); empty otherwise

    // File-type storage: views of the same maps in their GGUF blocks (each set only when its Mat is empty).
    QuantMatrix wq_file, wk_file, wv_file, wo_file, w_gate_file, w_up_file, w_down_file;
    QuantCompute compute = QuantCompute::exact;  // arithmetic of the products with the views (experts' too)

    /// Calls f(dense, view) for every plain linear map of the layer, the maps' then each expert's: its Mat and
    /// its view slot (at most one of them set; both empty for a map the config does not use).
    template <class F>
    void for_each_map(F&& f) { each_map(*this, f); }
    template <class F>
    void for_each_map(F&& f) const { each_map(*this, f); }
    /// Calls f(view) for every view slot of the layer, empty ones included (for_each_map's order).
    template <class F>
    void for_each_view(F&& f) const {
        for_each_map([&](const Mat<T>&, const QuantMatrix& view) { f(view); });
    }

private:
    template <class Self, class F>
    static void each_map(Self& L, F& f) {
        f(L.wq, L.wq_file); f(L.wk, L.wk_file); f(L.wv, L.wv_file); f(L.wo, L.wo_file);
        f(L.w_gate, L.w_gate_file); f(L.w_up, L.w_up_file); f(L.w_down, L.w_down_file);
        for (auto& e : L.experts) { f(e.w_gate, e.w_gate_file); f(e.w_up, e.w_up_file); f(e.w_down, e.w_down_file); }
    }
};

template <class T>
struct Weights {
    Mat<T> tok_embed;                // (vocab × d)
    Mat<T> pos_embed;                // (context × d) learned positions; empty otherwise
    Vec<T> sink_embed;               // (d) learnable sink token (AttentionKind::sink_token); empty otherwise
    std::vector<LayerWeights<T>> layers;
    NormWeights<T> final_norm;
    Mat<T> lm_head;                  // (vocab × d); empty when tied to tok_embed

    // File-type storage (see the file comment): views, and the memory-mapped file they point into.
    QuantMatrix tok_embed_file, lm_head_file;   // (vocab × d) each; rows of tok_embed_file dequantized on lookup
    std::shared_ptr<const void> file;            // non-null iff some view is set (the mapped file, or BF16 copies)
    bool head_copies_embedding = false;          // lm_head_file is a BF16 copy of the tied tok_embed (model/bf16_weights.hpp)
    WeightStorage storage = WeightStorage::float32;  // file_type or bf16 when some map is a view (file_type() is true)
    QuantCompute compute = QuantCompute::exact;  // arithmetic of the output head's product (see set_compute)
    // Arithmetic of the dense float linear products (W_Q … W_down, the output head) in forward() and
    // forward_batch(): MatmulPrecision::bf16 runs them with bf16 inputs and float32 accumulation
    // (layers/bf16_matmul.hpp), the activations between them and what the hooks see stay float32. The
    // forward sets it on its thread while it runs (detail::ForwardPrecision); float32 leaves the thread's own
    // setting.
    MatmulPrecision precision = MatmulPrecision::float32;

    /// True when some linear maps are views: of the file's blocks (WeightStorage::file_type), or BF16 copies
    /// (WeightStorage::bf16, model/bf16_weights.hpp).
    bool file_type() const noexcept { return file != nullptr; }
    /// Calls f(view) for every view slot, empty ones included: the embedding's, the head's, each layer's.
    template <class F>
    void for_each_view(F&& f) const {
        f(tok_embed_file);
        f(lm_head_file);
        for (const auto& L : layers) L.for_each_view(f);
    }
    /// The arithmetic of every product with a view (the head's and each layer's).
    void set_compute(QuantCompute c) {
        compute = c;
        for (auto& L : layers) L.compute = c;
    }
    /// The arithmetic of the dense products (`precision`; with file-type weights, those of the maps kept
    /// dense, while the views follow `compute`). Error for bf16 without oneDNN in this build.
    void set_precision(MatmulPrecision p) {
        if (p == MatmulPrecision::bf16) {
            if (!bf16_matmul_available())
                throw Error("bf16 compute needs oneDNN: install Debian's libdnnl-dev (scripts/setup.sh does) and "
                            "rebuild; this build has only float32 products");
        }
        precision = p;
    }
    /// The dense output head; Error for file-type weights (their head is a view: detail::head_forward).
    const Mat<T>& output_head() const {
        if (file != nullptr)
            throw Error("output_head: the linear maps are views (WeightStorage::file_type or bf16), so there is "
                        "no dense output head; load the model with WeightStorage::float32");
        return lm_head.size() ? lm_head : tok_embed;
    }
};

/// Error naming `what` unless every parameter of `w` is a dense Mat/Vec (not WeightStorage::file_type).
template <class T>
void require_dense(const Weights<T>& w, const std::string& what) {
    if (w.file_type())
        throw Error(what + " needs dense weights, but this model keeps its linear maps as views, in their file types "
                           "or in BF16 (WeightStorage::file_type or bf16); load it with WeightStorage::float32 (the default)");
}

}  // namespace sinkscope::model

// The parameter table walks the structs above; included last so that visit_parameters, parameter_count
// and cast_weights stay reachable from this header.
#include "sinkscope/model/parameter_table.hpp"
