// Loading checkpoints into Config + Weights<T>: GGUF and Hugging Face safetensors directories
// (config.json + model.safetensors or a sharded index), for every family of families.hpp.
//
// Every hyperparameter is read from the file's own metadata. Every tensor's shape is checked against
// the config before it is read; a mismatch throws sinkscope::Error naming the file, the tensor and its
// byte offset. The families' switches, names and layouts come from families.hpp and the Config from
// read_config.hpp; this file has one reader of weights for all of them.
//
// Weight storage (LoadOptions, issue 11). WeightStorage::float32 (the default) converts every tensor to T
// as it is read. WeightStorage::file_type (T = float) keeps the plain linear maps in their file types:
// W_Q, W_K, W_V, W_O, W_gate, W_in, W_out, the MoE experts' three maps, the token embedding and the output
// head, each stored as a GGUF block type or F16/BF16 (GGUF or safetensors), become QuantMatrix views into the
// memory-mapped file (Weights::file keeps it mapped) and their Mat stays empty; the forward multiplies with
// them through layers/quantized_linear.hpp (LoadOptions::compute) and dequantizes embedding rows on lookup.
// A fused q|k|v or gate|up and stacked experts hold each map as a consecutive range of whole rows, so each
// map is a view into the same bytes (QuantMatrix::middle_rows). Everything else is float32 as before: F32
// tensors, norms, biases, the MoE router, and what must be reordered or transposed (GPT-NeoX's per-head QKV
// in Hugging Face, GPT-2's Conv1D), whose maps are not row ranges. A 7B Hugging Face checkpoint in BF16 thus
// needs about 15 GB instead of 30. LoadOptions::precision (T = float) sets Weights::precision:
// MatmulPrecision::bf16 runs the dense linear products with bf16 inputs and float32 accumulation
// (layers/bf16_matmul.hpp, oneDNN); QuantCompute::bf16 does the same with BF16 views, reading their bits in
// place, and with block-typed views through tiles dequantized to bf16 (layers/quantized_linear.hpp). WeightStorage::bf16 (T = float) reads as float32 and then rounds every dense linear map to BF16 once
// (model/bf16_weights.hpp): the same products as MatmulPrecision::bf16, bit for bit, without converting the
// weights on every call, in half the memory. load_options_problem holds the rules for combining them.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/io/gguf.hpp"
#include "sinkscope/io/safetensors.hpp"
#include "sinkscope/model/bf16_weights.hpp"
#include "sinkscope/model/config.hpp"
#include "sinkscope/model/families.hpp"
#include "sinkscope/model/read_config.hpp"
#include "sinkscope/model/weights.hpp"

namespace sinkscope::model {

struct LoadOptions {
    WeightStorage storage = WeightStorage::float32;
    QuantCompute compute = QuantCompute::exact;  // products with file-type maps (Weights::set_compute changes it)
    // Products with dense float maps: float32, or bf16 inputs with float32 accumulation (Weights::set_precision;
    // bf16 needs T = float and oneDNN).
    MatmulPrecision precision = MatmulPrecision::float32;
    // With float32 storage: when the float32 weights of a GGUF or Hugging Face checkpoint do not fit in
    // the memory available, keep the linear maps in their file types instead (train::load_within_memory
    // decides and says so). The word "auto" of the CLI and the Python module sets it. Last, so that
    // LoadOptions{storage, compute, precision} keeps its meaning.
    bool file_type_when_short = false;
};

/// Why `o` cannot load a model whose scalar is float (`float_model`) or double, or "" when it can. The one
/// place these rules live: load_model checks them before reading anything, and load_options_from (the words
/// of the CLI and the Python module) builds only options that pass them.
inline std::string load_options_problem(const LoadOptions& o, bool float_model) {
    const bool bf16 = o.precision == MatmulPrecision::bf16 || o.compute == QuantCompute::bf16;
    if (!float_model && (bf16 || o.storage != WeightStorage::float32))
        return std::string(bf16 ? "bf16 compute" : o.storage == WeightStorage::bf16 ? "BF16 storage" : "file-type storage") +
               " loads float models only (double is the exact reference)";
    if (bf16 && !bf16_matmul_available())
        return "bf16 compute needs oneDNN: install Debian's libdnnl-dev (scripts/setup.sh does) and rebuild; this build "
               "has only float32 products";
    return "";
}

/// LoadOptions from the words of the CLI (--weights, --compute) and the Python module (weights=, compute=):
/// weights "auto" (float32 when it fits in memory, else the linear maps in their file types), "float32" (every
/// tensor converted, or an Error when that does not fit), "file" (linear maps kept in their file types) or
/// "bf16" (linear maps rounded once to BF16 and held so: model/bf16_weights.hpp); compute
/// "exact", "int8" (8-bit activations against block-typed maps; dense maps compute exactly) or "bf16" (bf16
/// inputs, float32 sums: every dense float product, every BF16 map and every block-typed map, the blocks
/// dequantized to bf16 tiles; F16 maps exactly).
/// An Error saying why for other words or when load_options_problem objects.
inline LoadOptions load_options_from(const std::string& weights, const std::string& compute) {
    require(weights == "auto" || weights == "float32" || weights == "file" || weights == "bf16",
            "weights must be 'auto', 'float32', 'file' or 'bf16', not '" + weights + "'");
    require(compute == "exact" || compute == "int8" || compute == "bf16",
            "compute must be 'exact', 'int8' or 'bf16', not '" + compute + "'");
    LoadOptions o;
    o.storage = weights == "file" ? WeightStorage::file_type : weights == "bf16" ? WeightStorage::bf16 : WeightStorage::float32;
    o.file_type_when_short = weights == "auto";
    o.compute = compute == "int8" ? QuantCompute::int8 : compute == "bf16" ? QuantCompute::bf16 : QuantCompute::exact;
    o.precision = compute == "bf16" ? MatmulPrecision::bf16 : MatmulPrecision::float32;
    const std::string problem = load_options_problem(o, true);
    if (!problem.empty()) throw Error(problem);
    return o;
}

template <class T>
struct LoadedModel {
    Config config;
    Weights<T> weights;
    std::string path;        // file or directory it came from
    std::string format;      // "gguf" or "safetensors"
    nlohmann::json metadata; // GGUF key/values, or Hugging Face config.json
};

namespace detail {

// Reads tensors by name, checking them against an expected PyTorch-order shape, straight into
// caller-owned storage (dequantizing GGUF blocks on the way).
struct TensorSource {
    std::function<bool(const std::string&)> has;
    std::function<void(const std::string&, const std::vector<std::int64_t>&, float*)> fill_f32;
    std::function<void(const std::string&, const std::vector<std::int64_t>&, double*)> fill_f64;
    // File-type storage: a view of a tensor of the given (PyTorch-order) shape in its file type, as a matrix
    // of (product of all but the last dimension) rows and (the last dimension) columns, or an empty
    // QuantMatrix when it stays dense (F32, or a type without a view). Unset: every tensor is read dense.
    std::function<QuantMatrix(const std::string&, const std::vector<std::int64_t>&)> view;
};

template <class T>
void fill_tensor(const TensorSource& src, const std::string& name, const std::vector<std::int64_t>& shape, T* dst) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "weights are float or double");
    if constexpr (std::is_same_v<T, double>) src.fill_f64(name, shape, dst);
    else src.fill_f32(name, shape, dst);
}

template <class T>
Mat<T> read_matrix(const TensorSource& src, const std::string& name, std::int64_t rows, std::int64_t cols) {
    Mat<T> m(rows, cols);
    fill_tensor<T>(src, name, {rows, cols}, m.data());
    return m;
}
template <class T>
Vec<T> read_vector(const TensorSource& src, const std::string& name, std::int64_t n) {
    Vec<T> v(n);
    fill_tensor<T>(src, name, {n}, v.data());
    return v;
}
template <class T>
Vec<T> read_optional_vector(const TensorSource& src, const std::string& name, std::int64_t n) {
    return src.has(name) ? read_vector<T>(src, name, n) : Vec<T>();
}

inline std::vector<std::int64_t> reversed(std::vector<std::int64_t> s) { std::reverse(s.begin(), s.end()); return s; }
inline std::string shape_str(const std::vector<std::int64_t>& s) {
    std::string r = "[";
    for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
}

inline TensorSource gguf_source(const io::GgufFile& f) {
    auto checked = [&f](const std::string& name, const std::vector<std::int64_t>& want) -> const io::GgufTensor& {
        const io::GgufTensor& t = f.tensor(name);
        // GGUF lists dimensions fastest first; PyTorch order is the reverse.
        if (reversed(t.shape) != want)
            throw Error("tensor shape " + shape_str(reversed(t.shape)) + " does not match the config's " + shape_str(want),
                        {f.path(), name, t.offset});
        return t;
    };
    TensorSource s;
    s.has = [&f](const std::string& n) { return f.find(n) != nullptr; };
    s.fill_f32 = [&f, checked](const std::string& n, const std::vector<std::int64_t>& w, float* dst) { f.load_into(checked(n, w), dst); };
    s.fill_f64 = [&f, checked](const std::string& n, const std::vector<std::int64_t>& w, double* dst) { f.load_into(checked(n, w), dst); };
    return s;
}

// gguf_source, with views of the block-typed (and F16/BF16) tensors of `f` (WeightStorage::file_type): 2-D
// maps, and the fused or stacked tensors that the loader slices into row ranges.
inline TensorSource gguf_view_source(const io::GgufFile& f) {
    TensorSource s = gguf_source(f);
    s.view = [&f](const std::string& name, const std::vector<std::int64_t>& want) -> QuantMatrix {
        const io::GgufTensor& t = f.tensor(name);
        if (reversed(t.shape) != want)
            throw Error("tensor shape " + shape_str(reversed(t.shape)) + " does not match the config's " + shape_str(want),
                        {f.path(), name, t.offset});
        if (t.type == io::GgmlType::F32 || !io::is_supported(t.type)) return {};  // F32: dense; unsupported: load's Error
        require(io::tensor_bytes(t.type, t.n_elements()) == t.nbytes, "tensor byte size does not match its shape and type",
                {f.path(), name, t.offset});
        return QuantMatrix(t.type, t.n_elements() / want.back(), want.back(), f.raw(t));
    };
    return s;
}

inline TensorSource safetensors_source(const io::SafetensorsCheckpoint& ck, const std::string& dir) {
    auto check = [&ck, dir](const std::string& name, const std::vector<std::int64_t>& want) {
        if (!ck.has(name)) throw Error("tensor missing from checkpoint", {dir, name, {}});
        if (ck.shape(name) != want)
            throw Error("tensor shape " + shape_str(ck.shape(name)) + " does not match the config's " + shape_str(want), {dir, name, {}});
    };
    TensorSource s;
    s.has = [&ck](const std::string& n) { return ck.has(n); };
    s.fill_f32 = [&ck, check](const std::string& n, const std::vector<std::int64_t>& w, float* dst) {
        check(n, w); const auto v = ck.load<float>(n); std::copy(v.begin(), v.end(), dst); };
    s.fill_f64 = [&ck, check](const std::string& n, const std::vector<std::int64_t>& w, double* dst) {
        check(n, w); const auto v = ck.load<double>(n); std::copy(v.begin(), v.end(), dst); };
    return s;
}

// load_options_problem for a model of scalar T, as an Error naming `path` (every load entry point checks it).
template <class T>
void require_load_options(const LoadOptions& o, const std::string& path) {
    const std::string problem = load_options_problem(o, std::is_same_v<T, float>);
    if (!problem.empty()) throw Error(problem, {path, "", {}});
}

// safetensors_source, with views of the F16/BF16 2-D tensors of `ck` (WeightStorage::file_type); F32 ones
// stay dense. `ck` must outlive the views (load_hf keeps it in Weights::file).
inline TensorSource safetensors_view_source(const io::SafetensorsCheckpoint& ck, const std::string& dir) {
    TensorSource s = safetensors_source(ck, dir);
    s.view = [&ck, dir](const std::string& name, const std::vector<std::int64_t>& want) -> QuantMatrix {
        if (!ck.has(name)) throw Error("tensor missing from checkpoint", {dir, name, {}});
        const io::SafetensorsTensor& t = ck.tensor(name);
        if (t.shape != want)
            throw Error("tensor shape " + shape_str(t.shape) + " does not match the config's " + shape_str(want),
                        {ck.file_of(name), name, t.offset});
        if (t.dtype != "BF16" && t.dtype != "F16") return {};  // F32: dense; other dtypes: fill_f32's Error
        return QuantMatrix(t.dtype == "BF16" ? io::GgmlType::BF16 : io::GgmlType::F16, t.n_elements() / want.back(),
                           want.back(), ck.raw(name));
    };
    return s;
}

// How one format stores a family's tensors (beyond their names).
struct Layout {
    FusedQkv fused = FusedQkv::concatenated;
    bool conv1d = false;       // (in × out) storage: transpose on read
    double norm_offset = 0;    // stored gains are g − offset
    std::string prefix;        // prepended to every name but the output head ("transformer." in some GPT-2 exports)
};

// Reads every tensor the Config needs under the family's names: every row of the parameter table
// (model/parameter_table.hpp) that the Config uses and a format keeps, by its ParamRead; packed tensors
// (block_packings, expert_packings) are sliced into their parts. A tensor the Config needs must exist (a
// missing one is an Error naming it); a tensor the Config does not need is not read.
template <class T>
Weights<T> read_weights(const TensorSource& s, const Config& c, const TensorNames& names, const Layout& layout,
                        const std::string& where) {
    // The name of a tensor in the checkpoint: the first of its alternatives that exists (the first if none does).
    auto full = [&](const std::string& pattern, std::int64_t l, std::int64_t e = -1) {
        std::string first;
        for (const std::string& alt : alternatives(pattern)) {
            const std::string name = layout.prefix + layer_name(alt, l, e);
            if (first.empty()) first = name;
            if (s.has(name)) return name;
        }
        return first;
    };
    auto need = [&](const std::string& pattern, const std::string& what) {
        if (pattern.empty())
            throw Error("this family's checkpoints have no " + what + " tensor, which the config needs", {where, what, {}});
    };
    auto matrix = [&](const std::string& pattern, std::int64_t l, std::int64_t rows, std::int64_t cols, const std::string& what,
                      std::int64_t e = -1) {
        need(pattern, what);
        if (!layout.conv1d) return read_matrix<T>(s, full(pattern, l, e), rows, cols);
        return Mat<T>(read_matrix<T>(s, full(pattern, l, e), cols, rows).transpose());
    };
    // A view of the tensor (`shape` in PyTorch order; rows = the product of all but the last dimension) when
    // the source gives one, else empty.
    auto file_view = [&](const std::string& pattern, std::int64_t l, const std::vector<std::int64_t>& shape,
                         const std::string& what, std::int64_t e = -1) {
        need(pattern, what);
        return s.view && !layout.conv1d ? s.view(full(pattern, l, e), shape) : QuantMatrix();
    };
    auto vector = [&](const std::string& pattern, std::int64_t l, std::int64_t n, const std::string& what) {
        need(pattern, what);
        return read_vector<T>(s, full(pattern, l), n);
    };

    // One row into `owner`, by its ParamRead (l = −1 outside the blocks, e = −1 outside the experts).
    auto read_row = [&](const auto& row, auto& owner, const std::string& what, std::int64_t l, std::int64_t e) {
        if (row.read == ParamRead::none) return;
        const std::string& pattern = names.*row.key;
        const std::int64_t rows = row.rows(c), cols = row.cols(c);
        if (!row.used(c)) {
            if (row.read == ParamRead::vector_if_present && !pattern.empty())
                owner.*row.vec = read_optional_vector<T>(s, full(pattern, l), rows);
            return;
        }
        switch (row.read) {
            case ParamRead::none: return;
            case ParamRead::head: {  // never prefixed
                if (!s.has(pattern)) throw Error("untied model has no " + pattern, {where, pattern, {}});
                if (row.view && s.view) owner.*row.view = s.view(pattern, {rows, cols});
                if (!row.view || (owner.*row.view).empty()) owner.*row.mat = read_matrix<T>(s, pattern, rows, cols);
                return;
            }
            case ParamRead::table:  // never stored transposed, so a view whatever the layout
                need(pattern, what);
                if (row.view && s.view) owner.*row.view = s.view(full(pattern, l), {rows, cols});
                if (!row.view || (owner.*row.view).empty()) owner.*row.mat = read_matrix<T>(s, full(pattern, l), rows, cols);
                return;
            case ParamRead::linear:  // a view of the file's blocks when there is one, else dense
                if (row.view) owner.*row.view = file_view(pattern, l, {rows, cols}, what, e);
                if (!row.view || (owner.*row.view).empty()) owner.*row.mat = matrix(pattern, l, rows, cols, what, e);
                return;
            case ParamRead::gain:
            case ParamRead::vector:
            case ParamRead::vector_if_present: {
                Vec<T> v = vector(pattern, l, rows, what);
                // (1 + g) RMSNorm: T(1) + g, as Gemma computes it
                if (row.read == ParamRead::gain && layout.norm_offset != 0) v.array() += T(layout.norm_offset);
                row.with_tensor(owner, [&](auto& t) {
                    if constexpr (std::decay_t<decltype(t)>::ColsAtCompileTime == 1) t = std::move(v);
                });
                return;
            }
        }
    };
    auto find_row = [](const auto& table, const std::string& name) -> const auto& {
        for (const auto& r : table)
            if (name == r.name) return r;
        throw Error("parameter table has no row " + name);
    };

    // A packed tensor of `p` into the parts' rows of block L: views of its row ranges when the source gives
    // them, else a dense read sliced (GPT-NeoX's per-head layout interleaved head by head).
    auto read_block_packing = [&](const Packing& p, LayerWeights<T>& L, std::int64_t l) {
        const auto& table = block_parameters<T>();
        std::vector<const ParamRow<LayerWeights<T>, T>*> parts, biases;
        std::int64_t total = 0;
        for (const std::string& n : p.parts) { parts.push_back(&find_row(table, n)); total += parts.back()->rows(c); }
        const std::int64_t cols = parts.front()->cols(c);
        const std::string what = "blocks." + std::to_string(l) + " packed " + names.*p.key;
        Vec<T> b;
        if (p.bias_key && !p.bias_parts.empty() && find_row(table, p.bias_parts.front()).used(c)) {
            for (const std::string& n : p.bias_parts) biases.push_back(&find_row(table, n));
            b = vector(names.*p.bias_key, l, total, what + " bias");
        }
        const bool per_head = p.per_head_layout && layout.fused == FusedQkv::per_head;
        const QuantMatrix view = per_head ? QuantMatrix() : file_view(names.*p.key, l, {total, cols}, what);
        std::int64_t offset = 0;
        if (!per_head) {
            const Mat<T> dense = view.empty() ? matrix(names.*p.key, l, total, cols, what) : Mat<T>();
            for (std::size_t i = 0; i < parts.size(); ++i) {
                const std::int64_t r = parts[i]->rows(c);
                if (!view.empty()) L.*(parts[i]->view) = view.middle_rows(offset, r);
                else L.*(parts[i]->mat) = dense.middleRows(offset, r);
                if (b.size()) L.*(biases[i]->vec) = b.segment(offset, r);
                offset += r;
            }
            return;
        }
        // Per head: head h holds rows [P·h·d_h, P·(h+1)·d_h) = its d_h rows of each of the P parts in order.
        const std::int64_t dh = c.head_dim, P = std::int64_t(parts.size());
        for (const auto* part : parts)
            require(part->rows(c) == parts.front()->rows(c), "a per-head fused QKV needs as many kv heads as heads");
        const Mat<T> dense = matrix(names.*p.key, l, total, cols, what);
        for (std::int64_t i = 0; i < P; ++i) {
            Mat<T>& m = L.*(parts[std::size_t(i)]->mat);
            m.resize(parts[std::size_t(i)]->rows(c), cols);
            Vec<T>* bias = b.size() ? &(L.*(biases[std::size_t(i)]->vec)) : nullptr;
            if (bias) bias->resize(m.rows());
            for (std::int64_t h = 0; h < m.rows() / dh; ++h) {
                m.middleRows(h * dh, dh) = dense.middleRows((P * h + i) * dh, dh);
                if (bias) bias->segment(h * dh, dh) = b.segment((P * h + i) * dh, dh);
            }
        }
    };

    // The experts of block L: per-expert tensors when the checkpoint has them (or the family knows no other
    // layout), else each part from the first stacked tensor (E, per, cols) the family names that holds it;
    // expert e's part is rows [e·per + offset, e·per + offset + rows) of it.
    auto read_experts = [&](LayerWeights<T>& L, std::int64_t l) {
        const auto& table = expert_parameters<T>();
        const std::int64_t E = c.n_experts;
        L.experts.resize(std::size_t(E));
        auto stacked_for = [&](const std::string& part) -> const Packing* {
            for (const Packing& p : expert_packings())
                if (!(names.*p.key).empty() && std::find(p.parts.begin(), p.parts.end(), part) != p.parts.end()) return &p;
            return nullptr;
        };
        const auto& first = table.front();
        const bool per_expert = !(names.*first.key).empty() &&
                                (stacked_for(first.name) == nullptr || s.has(full(names.*first.key, l, 0)));
        if (per_expert) {
            for (std::int64_t e = 0; e < E; ++e)
                for (const auto& row : table)
                    read_row(row, L.experts[std::size_t(e)], expert_parameter_name(std::size_t(l), std::size_t(e), row.name), l, e);
            return;
        }
        std::vector<const Packing*> chosen;
        for (const auto& row : table) {
            const Packing* p = stacked_for(row.name);
            if (!p) need("", "blocks." + std::to_string(l) + ".mlp.experts." + row.name);
            if (std::find(chosen.begin(), chosen.end(), p) == chosen.end()) chosen.push_back(p);
        }
        for (const Packing* p : chosen) {
            std::int64_t per = 0;
            for (const std::string& n : p->parts) per += find_row(table, n).rows(c);
            const std::int64_t cols = find_row(table, p->parts.front()).cols(c);
            const std::string what = "blocks." + std::to_string(l) + " stacked experts " + names.*p->key;
            const QuantMatrix all = file_view(names.*p->key, l, {E, per, cols}, what);
            Mat<T> dense;
            if (all.empty()) {
                dense.resize(E * per, cols);
                fill_tensor<T>(s, full(names.*p->key, l), {E, per, cols}, dense.data());
            }
            std::int64_t offset = 0;
            for (const std::string& n : p->parts) {
                const auto& row = find_row(table, n);
                const std::int64_t r = row.rows(c);
                if (stacked_for(n) == p)
                    for (std::int64_t e = 0; e < E; ++e) {
                        ExpertWeights<T>& x = L.experts[std::size_t(e)];
                        if (!all.empty()) x.*row.view = all.middle_rows(e * per + offset, r);
                        else x.*row.mat = dense.middleRows(e * per + offset, r);
                    }
                offset += r;
            }
        }
    };

    Weights<T> w;
    for (const auto& row : input_parameters<T>()) read_row(row, w, row.name, -1, -1);
    w.layers.resize(std::size_t(c.n_layers));
    for (std::int64_t l = 0; l < c.n_layers; ++l) {
        LayerWeights<T>& L = w.layers[std::size_t(l)];
        // The packings this checkpoint uses for block l: where the family names no separate first part, or
        // where the checkpoint has the packed tensor (Phi-3 GGUF: either).
        std::vector<std::string> packed;
        for (const Packing& p : block_packings()) {
            const auto& first = find_row(block_parameters<T>(), p.parts.front());
            if (!first.used(c)) continue;
            const std::string& key = names.*p.key;
            if (!(names.*first.key).empty() && (key.empty() || !s.has(full(key, l)))) continue;
            read_block_packing(p, L, l);
            packed.insert(packed.end(), p.parts.begin(), p.parts.end());
            packed.insert(packed.end(), p.bias_parts.begin(), p.bias_parts.end());
        }
        for (const auto& row : block_parameters<T>())
            if (std::find(packed.begin(), packed.end(), row.name) == packed.end())
                read_row(row, L, block_parameter_name(std::size_t(l), row.name), l, -1);
        if (c.ffn == FfnKind::moe) read_experts(L, l);
    }
    for (const auto& row : output_parameters<T>()) read_row(row, w, row.name, -1, -1);
    return w;
}

// ---- GGUF ----
template <class T>
Weights<T> gguf_weights(const io::GgufFile& f, const Config& c) {
    const Family* fam = family_of_gguf_arch(f.metadata().at("general.architecture").get<std::string>());
    return read_weights<T>(gguf_source(f), c, fam->gguf, Layout{}, f.path());
}

// ---- Hugging Face ----
// True when some linear map of `w` is a view (file-type storage found a tensor to keep in place).
template <class T>
bool has_views(const Weights<T>& w) {
    bool any = false;
    w.for_each_view([&](const QuantMatrix& m) { any = any || !m.empty(); });
    return any;
}

// `views`: the F16/BF16 linear maps become views into `ck` (WeightStorage::file_type).
template <class T>
Weights<T> hf_weights(const io::SafetensorsCheckpoint& ck, const std::string& dir, const Config& c, const Family& fam,
                      bool views = false) {
    Layout layout;
    layout.fused = fam.hf_fused;
    layout.conv1d = fam.hf_conv1d;
    layout.norm_offset = fam.hf_norm_offset;
    // Some exports nest the model one level deeper (GPT-2's "transformer." prefix).
    if (!ck.has(fam.hf.tok_embed) && ck.has("transformer." + fam.hf.tok_embed)) layout.prefix = "transformer.";
    const TensorSource source = views ? safetensors_view_source(ck, dir) : safetensors_source(ck, dir);
    Weights<T> w = read_weights<T>(source, c, fam.hf, layout, dir);
    // A tied model that still ships its head (some exports do) is read as untied: the file decides.
    if (c.tied_embeddings && ck.has(fam.hf.lm_head)) {
        if (views) w.lm_head_file = source.view(fam.hf.lm_head, {c.vocab_size, c.d_model});
        if (w.lm_head_file.empty()) w.lm_head = read_matrix<T>(source, fam.hf.lm_head, c.vocab_size, c.d_model);
    }
    return w;
}

}  // namespace detail

template <class T>
LoadedModel<T> load_gguf(const std::string& path, const LoadOptions& options = {}) {
    const bool file_type = options.storage == WeightStorage::file_type;
    detail::require_load_options<T>(options, path);
    auto f = std::make_shared<const io::GgufFile>(path);
    LoadedModel<T> m;
    m.config = detail::gguf_config(*f);
    if (file_type) {
        const Family* fam = family_of_gguf_arch(f->metadata().at("general.architecture").get<std::string>());
        m.weights = detail::read_weights<T>(detail::gguf_view_source(*f), m.config, fam->gguf, detail::Layout{}, f->path());
        if (detail::has_views(m.weights)) {
            m.weights.file = f;  // keeps the mapping alive as long as any copy of the weights
            m.weights.storage = WeightStorage::file_type;
        }
        m.weights.set_compute(options.compute);
    } else {
        m.weights = detail::gguf_weights<T>(*f, m.config);
    }
    m.path = path;
    m.format = "gguf";
    m.metadata = f->metadata();
    return m;
}

template <class T>
LoadedModel<T> load_hf(const std::string& dir, const LoadOptions& options = {}) {
    const bool file_type = options.storage == WeightStorage::file_type;
    detail::require_load_options<T>(options, dir);
    const std::string config_path = dir + "/config.json";
    LoadedModel<T> m;
    m.metadata = detail::read_json_file(config_path);
    m.config = detail::hf_config(m.metadata, config_path);
    auto ck = std::make_shared<const io::SafetensorsCheckpoint>(dir);
    m.weights = detail::hf_weights<T>(*ck, dir, m.config, detail::hf_family(m.metadata, config_path), file_type);
    if (file_type) {
        if (detail::has_views(m.weights)) {
            m.weights.file = ck;  // keeps the mappings alive with any copy of the weights
            m.weights.storage = WeightStorage::file_type;
        }
        m.weights.set_compute(options.compute);
    }
    m.path = dir;
    m.format = "safetensors";
    return m;
}

// A .gguf file, or a Hugging Face directory (config.json + safetensors).
template <class T>
LoadedModel<T> load_model(const std::string& path) {
    return load_model<T>(path, LoadOptions{});
}

// As load_model(path), with the weights stored as `options` says (file comment): WeightStorage::file_type
// keeps the plain linear maps of a GGUF or a Hugging Face directory in their file types.
// options.precision sets Weights::precision; load_options_problem's rules are checked before any reading.
template <class T>
LoadedModel<T> load_model(const std::string& path, const LoadOptions& options) {
    namespace fs = std::filesystem;
    detail::require_load_options<T>(options, path);
    if (!fs::is_directory(path) && !fs::exists(path)) throw Error("no such file or directory", {path, "", {}});
    LoadedModel<T> m = fs::is_directory(path) ? load_hf<T>(path, options) : load_gguf<T>(path, options);
    m.weights.set_precision(options.precision);
    if constexpr (std::is_same_v<T, float>)
        if (options.storage == WeightStorage::bf16) store_linear_maps_bf16(m.weights, options.compute);
    return m;
}

}  // namespace sinkscope::model
