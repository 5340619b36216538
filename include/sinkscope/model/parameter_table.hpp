// The parameter table: every parameter of Weights<T>, once (the twin of model/hook_table.hpp). A row holds
// its canonical name (the name checkpoints are saved under, TransformerLens-style), where it lives in
// Weights, its shape and presence as functions of the Config, how training initialises it, how a loader
// reads it and which TensorNames entry says where each checkpoint format keeps it. visit_parameters (so
// the optimiser, the checkpoint writer and the gradient check), parameter_count, cast_weights,
// train::init_weights, the loaders' read_weights (model/load.hpp) and the CUDA upload's shape check all
// iterate it.
//
// The order of the rows is the order of visit_parameters: the input rows, then for every block its rows
// and after them each expert's rows, then the output rows. Training's random draws follow it, so
// reordering rows changes every trained model.
//
// Packed tensors: some formats keep several parameters in one tensor as consecutive row ranges (a fused
// q|k|v, a fused gate|up, the experts stacked per projection). block_packings() and expert_packings() list
// them as data; read_weights slices them.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "sinkscope/model/config.hpp"
#include "sinkscope/model/weights.hpp"

namespace sinkscope::model {

// Where each parameter lives in one checkpoint format (model/families.hpp fills one per family and format).
// Names hold "{l}" where the layer index goes and "{e}" where an expert's goes; an empty name means the
// family has no such tensor; "a|b" lists names the family's checkpoints use for the same tensor.
struct TensorNames {
    std::string tok_embed, pos_embed, final_norm, final_norm_bias, lm_head;
    std::string attn_norm, attn_norm_bias, attn_post_norm, ffn_norm, ffn_norm_bias, ffn_post_norm;
    std::string attn_post_norm_bias, ffn_post_norm_bias;  // no loaded family has them: a Config that needs them is an Error
    std::string wq, wk, wv, wo, bq, bk, bv, bo, q_norm, k_norm;
    std::string qkv, qkv_bias;  // a fused q|k|v projection (read when wq is empty, or when the checkpoint has it)
    std::string w_gate, w_up, w_down, b_up, b_down;
    std::string gate_up;        // a fused gate|up projection (read when w_gate is empty, or when present)
    // Mixture of experts: the router (E × d) and each expert's SwiGLU projections ("{e}"), or the experts
    // fused into one tensor each, (E, 2·d_ff, d) gate|up and (E, d, d_ff) down, as transformers ≥ 5 holds
    // them in memory (read when the checkpoint lacks the per-expert tensors).
    std::string router, expert_gate, expert_up, expert_down;
    std::string experts_gate_up, experts_down;
    std::string experts_gate, experts_up;  // the experts stacked per projection, (E, d_ff, d) each (GGUF)
};

namespace detail {

// "{l}" → the layer index.
inline std::string layer_name(const std::string& pattern, std::int64_t l) {
    const auto at = pattern.find("{l}");
    return at == std::string::npos ? pattern : pattern.substr(0, at) + std::to_string(l) + pattern.substr(at + 3);
}
// "{l}" → the layer index, "{e}" → the expert index.
inline std::string layer_name(const std::string& pattern, std::int64_t l, std::int64_t e) {
    const std::string n = layer_name(pattern, l);
    const auto at = n.find("{e}");
    return at == std::string::npos ? n : n.substr(0, at) + std::to_string(e) + n.substr(at + 3);
}
// "a|b|c" → {a, b, c}: the names one tensor may have.
inline std::vector<std::string> alternatives(const std::string& pattern) {
    std::vector<std::string> r;
    for (std::size_t start = 0;;) {
        const auto bar = pattern.find('|', start);
        r.push_back(pattern.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
        if (bar == std::string::npos) return r;
        start = bar + 1;
    }
}

}  // namespace detail

/// How training initialises a parameter (train/init.hpp; σ = InitOptions::init_std, L = n_layers).
enum class ParamInit {
    normal,               // N(0, σ²)
    normal_residual,      // N(0, (σ/√(2L))²): the maps that write into the residual stream (W_O, W_out)
    ones,                 // norm and QK-norm gains
    zeros,                // biases (σ(0) = ½ for a gate's bias)
    dyt_alpha_attention,  // DynamicTanh α = Config::dyt_alpha0_attn (the attention block's norms)
    dyt_alpha_other,      // DynamicTanh α = Config::dyt_alpha0_other (the FFN's and the final norm)
};

/// How a loader reads a parameter from a checkpoint (model/load.hpp).
enum class ParamRead {
    none,               // no checkpoint format has it (a training-only mechanism): never read
    table,              // an embedding: rows are tokens or positions, never stored transposed, never prefixed
    head,               // the output head: a table that an untied model must have; never prefixed
    linear,             // a map (out × in), transposed where the format stores (in × out) (GPT-2's Conv1D)
    gain,               // a norm gain: some formats store g − offset (Gemma's (1 + g) RMSNorm)
    vector,             // a bias or another vector, as stored
    vector_if_present,  // a bias read when the Config needs it and also whenever the checkpoint has it
};

/// One parameter of an Owner (Weights<T>, LayerWeights<T> or ExpertWeights<T>). Exactly one of `mat`,
/// `vec` and (`norm`, `norm_part`) is set; `view` is the file-type storage slot of a linear map or table.
// A pointer to a member of type M of O (an alias: nvcc's host pass warns about the plain declarator).
template <class O, class M>
using MemberOf = M O::*;

template <class Owner, class T>
struct ParamRow {
    const char* name;  // full name at the input and output; in a block after "blocks.{l}.", in an expert after
                       // "blocks.{l}.mlp.experts.{e}."
    MemberOf<Owner, Mat<T>> mat = nullptr;
    MemberOf<Owner, Vec<T>> vec = nullptr;
    MemberOf<Owner, NormWeights<T>> norm = nullptr;
    MemberOf<NormWeights<T>, Vec<T>> norm_part = nullptr;
    MemberOf<Owner, QuantMatrix> view = nullptr;
    std::int64_t (*rows)(const Config&) = nullptr;
    std::int64_t (*cols)(const Config&) = nullptr;  // 1 for vectors
    bool (*used)(const Config&) = nullptr;
    ParamInit init = ParamInit::zeros;
    ParamRead read = ParamRead::none;
    MemberOf<TensorNames, std::string> key = nullptr;  // nullptr for ParamRead::none

    bool is_matrix() const { return mat != nullptr; }
    /// The tensor this row names in `o` (Mat<T>& or Vec<T>&, const where `o` is), passed to f.
    template <class O, class F>
    void with_tensor(O& o, F&& f) const {
        if (mat) f(o.*mat);
        else if (vec) f(o.*vec);
        else f((o.*norm).*norm_part);
    }
};

// A checkpoint tensor that holds several parameters as consecutive row ranges, in `parts`' order.
struct Packing {
    MemberOf<TensorNames, std::string> key;
    std::vector<std::string> parts;                 // row names
    MemberOf<TensorNames, std::string> bias_key = nullptr;   // their biases packed the same way (q|k|v), or nullptr
    std::vector<std::string> bias_parts;
    bool per_head_layout = false;  // Layout::fused applies: FusedQkv::per_head interleaves the parts head by head
};

namespace params {
// Sizes, as functions of the Config (function pointers for the rows).
inline std::int64_t one(const Config&) { return 1; }
inline std::int64_t two(const Config&) { return 2; }
inline std::int64_t d_model(const Config& c) { return c.d_model; }
inline std::int64_t vocab(const Config& c) { return c.vocab_size; }
inline std::int64_t context(const Config& c) { return c.context_length; }
inline std::int64_t q_dim(const Config& c) { return c.q_dim(); }
inline std::int64_t kv_dim(const Config& c) { return c.kv_dim(); }
inline std::int64_t d_ff(const Config& c) { return c.d_ff; }
inline std::int64_t experts(const Config& c) { return c.n_experts; }
inline std::int64_t q_norm_size(const Config& c) { return c.qk_norm_scope == QkNormScope::head ? c.head_dim : c.q_dim(); }
inline std::int64_t k_norm_size(const Config& c) { return c.qk_norm_scope == QkNormScope::head ? c.head_dim : c.kv_dim(); }
// The output gate: one value per head (per_head, static_per_head) or per channel (per_channel, static_per_channel).
inline std::int64_t gate_size(const Config& c) {
    return c.gate == GateKind::per_head || c.gate == GateKind::static_per_head ? c.n_heads : c.q_dim();
}
// The FFN's output map reads d_ff hidden units, or the residual itself for the linear FFN.
inline std::int64_t ffn_out_cols(const Config& c) { return c.ffn == FfnKind::linear ? c.d_model : c.d_ff; }

// Presence.
inline bool always(const Config&) { return true; }
inline bool learned_positions(const Config& c) { return c.positions == PositionKind::learned; }
inline bool sink_token(const Config& c) { return c.attention == AttentionKind::sink_token; }
inline bool kv_bias(const Config& c) { return c.attention == AttentionKind::kv_bias; }
inline bool pre_norm(const Config& c) { return c.norm_placement != NormPlacement::output; }
inline bool post_norm(const Config& c) { return c.has_post_norm(); }
inline bool ffn_pre_norm(const Config& c) { return c.ffn != FfnKind::none && pre_norm(c); }
inline bool ffn_post_norm(const Config& c) { return c.ffn != FfnKind::none && post_norm(c); }
inline bool final_norm(const Config& c) { return c.norm_placement != NormPlacement::post; }
inline bool qkv_bias(const Config& c) { return c.qkv_bias; }
inline bool out_bias(const Config& c) { return c.out_bias; }
inline bool qk_norm(const Config& c) { return c.qk_norm; }
inline bool conditional_gate(const Config& c) { return c.gate == GateKind::per_head || c.gate == GateKind::per_channel; }
inline bool gated(const Config& c) { return c.gate != GateKind::none; }
inline bool swiglu(const Config& c) { return c.ffn == FfnKind::swiglu; }
inline bool dense_hidden(const Config& c) { return c.ffn == FfnKind::swiglu || c.ffn == FfnKind::gelu; }
inline bool ffn_out(const Config& c) { return dense_hidden(c) || c.ffn == FfnKind::linear; }
inline bool hidden_bias(const Config& c) { return c.mlp_bias && dense_hidden(c); }
inline bool ffn_out_bias(const Config& c) { return c.mlp_bias && ffn_out(c); }
inline bool moe(const Config& c) { return c.ffn == FfnKind::moe; }
inline bool untied(const Config& c) { return !c.tied_embeddings; }
// A norm's bias (LayerNorm, DynamicTanh β) and α (DynamicTanh) where the norm itself is present.
template <bool (*Present)(const Config&)>
bool norm_bias(const Config& c) { return Present(c) && c.norm_bias; }
template <bool (*Present)(const Config&)>
bool norm_alpha(const Config& c) { return Present(c) && c.norm == NormKind::dynamic_tanh; }

using Size = std::int64_t (*)(const Config&);
using Present = bool (*)(const Config&);
using Key = MemberOf<TensorNames, std::string>;

template <class O, class T>
ParamRow<O, T> matrix_row(const char* name, MemberOf<O, Mat<T>> m, MemberOf<O, QuantMatrix> view, Size rows, Size cols, Present used,
                      ParamInit init, ParamRead read, Key key) {
    ParamRow<O, T> r{name};
    r.mat = m; r.view = view; r.rows = rows; r.cols = cols; r.used = used; r.init = init; r.read = read; r.key = key;
    return r;
}
template <class O, class T>
ParamRow<O, T> vector_row(const char* name, MemberOf<O, Vec<T>> v, Size rows, Present used, ParamInit init, ParamRead read, Key key) {
    ParamRow<O, T> r{name};
    r.vec = v; r.rows = rows; r.cols = one; r.used = used; r.init = init; r.read = read; r.key = key;
    return r;
}
// A norm's three rows: gain (d), bias (d) and DynamicTanh's α (1), named prefix + ".weight" / ".bias" / ".alpha".
template <bool (*Where)(const Config&), class O, class T>
void norm_rows(std::vector<ParamRow<O, T>>& rows, const char* weight, const char* bias, const char* alpha,
          MemberOf<O, NormWeights<T>> n, ParamInit alpha_init, Key weight_key, Key bias_key) {
    auto row = [&](const char* name, MemberOf<NormWeights<T>, Vec<T>> part, Size size, Present used, ParamInit init, ParamRead read,
                   Key key) {
        ParamRow<O, T> r{name};
        r.norm = n; r.norm_part = part; r.rows = size; r.cols = one; r.used = used; r.init = init; r.read = read; r.key = key;
        rows.push_back(r);
    };
    row(weight, &NormWeights<T>::weight, d_model, Where, ParamInit::ones, ParamRead::gain, weight_key);
    row(bias, &NormWeights<T>::bias, d_model, norm_bias<Where>, ParamInit::zeros, ParamRead::vector, bias_key);
    row(alpha, &NormWeights<T>::alpha, one, norm_alpha<Where>, alpha_init, ParamRead::none, nullptr);  // no loaded family has DyT
}
}  // namespace params

/// The rows before the blocks: embeddings.
template <class T>
const std::vector<ParamRow<Weights<T>, T>>& input_parameters() {
    using namespace params;
    using W = Weights<T>;
    using N = TensorNames;
    static const std::vector<ParamRow<W, T>> rows{
        matrix_row<W, T>("tok_embed", &W::tok_embed, &W::tok_embed_file, vocab, d_model, always, ParamInit::normal,
                         ParamRead::table, &N::tok_embed),
        matrix_row<W, T>("pos_embed", &W::pos_embed, nullptr, context, d_model, learned_positions, ParamInit::normal,
                         ParamRead::table, &N::pos_embed),
        vector_row<W, T>("sink_embed", &W::sink_embed, d_model, sink_token, ParamInit::normal, ParamRead::none, nullptr),
    };
    return rows;
}

/// The rows of one block (named after "blocks.{l}.").
template <class T>
const std::vector<ParamRow<LayerWeights<T>, T>>& block_parameters() {
    using namespace params;
    using L = LayerWeights<T>;
    using N = TensorNames;
    using I = ParamInit;
    using R = ParamRead;
    static const std::vector<ParamRow<L, T>> rows = [] {
        std::vector<ParamRow<L, T>> r;
        norm_rows<pre_norm>(r, "ln1.weight", "ln1.bias", "ln1.alpha", &L::attn_norm, I::dyt_alpha_attention, &N::attn_norm,
                            &N::attn_norm_bias);
        norm_rows<post_norm>(r, "ln1_post.weight", "ln1_post.bias", "ln1_post.alpha", &L::attn_post_norm,
                             I::dyt_alpha_attention, &N::attn_post_norm, &N::attn_post_norm_bias);
        r.push_back(matrix_row<L, T>("attn.W_Q", &L::wq, &L::wq_file, q_dim, d_model, always, I::normal, R::linear, &N::wq));
        r.push_back(matrix_row<L, T>("attn.W_K", &L::wk, &L::wk_file, kv_dim, d_model, always, I::normal, R::linear, &N::wk));
        r.push_back(matrix_row<L, T>("attn.W_V", &L::wv, &L::wv_file, kv_dim, d_model, always, I::normal, R::linear, &N::wv));
        r.push_back(matrix_row<L, T>("attn.W_O", &L::wo, &L::wo_file, d_model, q_dim, always, I::normal_residual, R::linear, &N::wo));
        r.push_back(vector_row<L, T>("attn.b_Q", &L::bq, q_dim, qkv_bias, I::zeros, R::vector, &N::bq));
        r.push_back(vector_row<L, T>("attn.b_K", &L::bk, kv_dim, qkv_bias, I::zeros, R::vector, &N::bk));
        r.push_back(vector_row<L, T>("attn.b_V", &L::bv, kv_dim, qkv_bias, I::zeros, R::vector, &N::bv));
        r.push_back(vector_row<L, T>("attn.b_O", &L::bo, d_model, out_bias, I::zeros, R::vector_if_present, &N::bo));
        r.push_back(vector_row<L, T>("attn.q_norm", &L::q_norm, q_norm_size, qk_norm, I::ones, R::gain, &N::q_norm));
        r.push_back(vector_row<L, T>("attn.k_norm", &L::k_norm, k_norm_size, qk_norm, I::ones, R::gain, &N::k_norm));
        // Learnable sink key (row 0) and value (row 1): AttentionKind::kv_bias.
        r.push_back(matrix_row<L, T>("attn.sink_kv", &L::sink_kv, nullptr, two, kv_dim, kv_bias, I::normal, R::none, nullptr));
        r.push_back(matrix_row<L, T>("attn.W_gate", &L::w_attn_gate, nullptr, gate_size, d_model, conditional_gate, I::normal,
                                     R::none, nullptr));
        r.push_back(vector_row<L, T>("attn.b_gate", &L::b_attn_gate, gate_size, gated, I::zeros, R::none, nullptr));
        norm_rows<ffn_pre_norm>(r, "ln2.weight", "ln2.bias", "ln2.alpha", &L::ffn_norm, I::dyt_alpha_other, &N::ffn_norm,
                                &N::ffn_norm_bias);
        norm_rows<ffn_post_norm>(r, "ln2_post.weight", "ln2_post.bias", "ln2_post.alpha", &L::ffn_post_norm, I::dyt_alpha_other,
                                 &N::ffn_post_norm, &N::ffn_post_norm_bias);
        r.push_back(matrix_row<L, T>("mlp.W_gate", &L::w_gate, &L::w_gate_file, d_ff, d_model, swiglu, I::normal, R::linear, &N::w_gate));
        r.push_back(matrix_row<L, T>("mlp.W_in", &L::w_up, &L::w_up_file, d_ff, d_model, dense_hidden, I::normal, R::linear, &N::w_up));
        r.push_back(matrix_row<L, T>("mlp.W_out", &L::w_down, &L::w_down_file, d_model, ffn_out_cols, ffn_out, I::normal_residual,
                                     R::linear, &N::w_down));
        r.push_back(vector_row<L, T>("mlp.b_in", &L::b_up, d_ff, hidden_bias, I::zeros, R::vector, &N::b_up));
        r.push_back(vector_row<L, T>("mlp.b_out", &L::b_down, d_model, ffn_out_bias, I::zeros, R::vector, &N::b_down));
        r.push_back(matrix_row<L, T>("mlp.W_router", &L::w_router, nullptr, experts, d_model, moe, I::normal, R::linear, &N::router));
        return r;
    }();
    return rows;
}

/// The rows of one expert of a mixture-of-experts FFN (named after "blocks.{l}.mlp.experts.{e}."); a block
/// has Config::n_experts of them where Config::ffn is moe.
template <class T>
const std::vector<ParamRow<ExpertWeights<T>, T>>& expert_parameters() {
    using namespace params;
    using X = ExpertWeights<T>;
    using N = TensorNames;
    static const std::vector<ParamRow<X, T>> rows{
        matrix_row<X, T>("W_gate", &X::w_gate, &X::w_gate_file, d_ff, d_model, moe, ParamInit::normal, ParamRead::linear,
                         &N::expert_gate),
        matrix_row<X, T>("W_in", &X::w_up, &X::w_up_file, d_ff, d_model, moe, ParamInit::normal, ParamRead::linear, &N::expert_up),
        matrix_row<X, T>("W_out", &X::w_down, &X::w_down_file, d_model, d_ff, moe, ParamInit::normal_residual, ParamRead::linear,
                         &N::expert_down),
    };
    return rows;
}

/// The rows after the blocks: the final norm and the output head.
template <class T>
const std::vector<ParamRow<Weights<T>, T>>& output_parameters() {
    using namespace params;
    using W = Weights<T>;
    using N = TensorNames;
    static const std::vector<ParamRow<W, T>> rows = [] {
        std::vector<ParamRow<W, T>> r;
        norm_rows<final_norm>(r, "ln_final.weight", "ln_final.bias", "ln_final.alpha", &W::final_norm, ParamInit::dyt_alpha_other,
                              &N::final_norm, &N::final_norm_bias);
        r.push_back(matrix_row<W, T>("unembed", &W::lm_head, &W::lm_head_file, vocab, d_model, untied, ParamInit::normal,
                                     ParamRead::head, &N::lm_head));
        return r;
    }();
    return rows;
}

/// The packed tensors of a block: a fused q|k|v (with its fused bias) and a fused gate|up. A packing is read
/// where the family names no separate tensor for its first part, or where the checkpoint has the packed one.
inline const std::vector<Packing>& block_packings() {
    static const std::vector<Packing> p{
        {&TensorNames::qkv, {"attn.W_Q", "attn.W_K", "attn.W_V"}, &TensorNames::qkv_bias, {"attn.b_Q", "attn.b_K", "attn.b_V"}, true},
        {&TensorNames::gate_up, {"mlp.W_gate", "mlp.W_in"}, nullptr, {}, false},
    };
    return p;
}

/// The experts' stacked tensors, (E, rows of the parts, cols): expert e's part at rows [e·per + offset, …).
/// An expert parameter comes from the first packing of this list that the family names and that holds it,
/// unless the checkpoint has per-expert tensors.
inline const std::vector<Packing>& expert_packings() {
    static const std::vector<Packing> p{
        {&TensorNames::experts_gate, {"W_gate"}, nullptr, {}, false},
        {&TensorNames::experts_up, {"W_in"}, nullptr, {}, false},
        {&TensorNames::experts_gate_up, {"W_gate", "W_in"}, nullptr, {}, false},
        {&TensorNames::experts_down, {"W_out"}, nullptr, {}, false},
    };
    return p;
}

/// The full name of a block row in layer l ("blocks.{l}." + name) and of an expert row.
inline std::string block_parameter_name(std::size_t l, const char* name) { return "blocks." + std::to_string(l) + "." + name; }
inline std::string expert_parameter_name(std::size_t l, std::size_t e, const char* name) {
    return "blocks." + std::to_string(l) + ".mlp.experts." + std::to_string(e) + "." + name;
}

/// Calls f(row, full_name, owner) for every row of the table in visit_parameters order, with owner the
/// Weights, the LayerWeights of the block or the ExpertWeights of the expert (const where `w` is). Blocks and
/// experts are those `w` holds.
template <class T, class W, class F>
void for_each_parameter_row(W& w, F&& f) {
    static_assert(std::is_same_v<std::remove_const_t<W>, Weights<T>>, "W is Weights<T> or const Weights<T>");
    for (const auto& r : input_parameters<T>()) f(r, std::string(r.name), w);
    for (std::size_t l = 0; l < w.layers.size(); ++l) {
        auto& L = w.layers[l];
        for (const auto& r : block_parameters<T>()) f(r, block_parameter_name(l, r.name), L);
        for (std::size_t e = 0; e < L.experts.size(); ++e)
            for (const auto& r : expert_parameters<T>()) f(r, expert_parameter_name(l, e, r.name), L.experts[e]);
    }
    for (const auto& r : output_parameters<T>()) f(r, std::string(r.name), w);
}

namespace detail {
// visit_parameters without the check: the dense parameters only (file-type views are skipped).
template <class T, class F>
void visit_dense_parameters(Weights<T>& w, F&& f) {
    for_each_parameter_row<T>(w, [&](const auto& row, const std::string& name, auto& owner) {
        row.with_tensor(owner, [&](auto& t) { if (t.size()) f(name, t); });
    });
}
}  // namespace detail

// Calls f(name, tensor) for every non-empty parameter, in the table's order. `tensor` is a Mat<T>& or Vec<T>&.
// Error for file-type weights (their views are not tensors f could read or write).
template <class T, class F>
void visit_parameters(Weights<T>& w, F&& f) {
    require_dense(w, "visit_parameters (training, checkpoints, CUDA upload, gradients)");
    detail::visit_dense_parameters(w, std::forward<F>(f));
}
template <class T, class F>
void visit_parameters(const Weights<T>& w, F&& f) {
    visit_parameters(const_cast<Weights<T>&>(w), [&](const std::string& n, const auto& t) { f(n, t); });
}

template <class T>
std::int64_t parameter_count(const Weights<T>& w) {
    std::int64_t n = 0;
    detail::visit_dense_parameters(const_cast<Weights<T>&>(w), [&](const std::string&, const auto& t) { n += t.size(); });
    w.for_each_view([&](const QuantMatrix& m) { n += m.rows * m.cols; });
    if (w.head_copies_embedding) n -= w.lm_head_file.rows * w.lm_head_file.cols;  // the tied embedding, counted once
    return n;
}

namespace detail {
// dst's tensor of row i = src's tensor of row i, converted (both tables have the same rows in the same order).
template <class U, class T, class DstRows, class SrcRows, class DstOwner, class SrcOwner>
void cast_rows(const DstRows& dst_rows, const SrcRows& src_rows, DstOwner& dst, const SrcOwner& src) {
    for (std::size_t i = 0; i < src_rows.size(); ++i)
        src_rows[i].with_tensor(src, [&](const auto& a) {
            dst_rows[i].with_tensor(dst, [&](auto& b) {
                if constexpr (int(std::decay_t<decltype(a)>::ColsAtCompileTime) == int(std::decay_t<decltype(b)>::ColsAtCompileTime))
                    b = a.template cast<U>();
            });
        });
}
}  // namespace detail

// Converts every parameter to another scalar type (e.g. float → double for gradient checks).
template <class U, class T>
Weights<U> cast_weights(const Weights<T>& w) {
    require_dense(w, "cast_weights");
    Weights<U> out;
    detail::cast_rows<U, T>(input_parameters<U>(), input_parameters<T>(), out, w);
    out.layers.resize(w.layers.size());
    for (std::size_t l = 0; l < w.layers.size(); ++l) {
        detail::cast_rows<U, T>(block_parameters<U>(), block_parameters<T>(), out.layers[l], w.layers[l]);
        out.layers[l].experts.resize(w.layers[l].experts.size());
        for (std::size_t e = 0; e < w.layers[l].experts.size(); ++e)
            detail::cast_rows<U, T>(expert_parameters<U>(), expert_parameters<T>(), out.layers[l].experts[e],
                                    w.layers[l].experts[e]);
    }
    detail::cast_rows<U, T>(output_parameters<U>(), output_parameters<T>(), out, w);
    return out;
}

}  // namespace sinkscope::model
