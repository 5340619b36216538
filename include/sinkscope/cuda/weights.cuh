// DeviceWeights: the parameters of model::Weights<float> on the device, in the same layout.
//
// All parameters live in one device allocation (the arena), in model::visit_parameters order, each a
// row-major view with the CPU tensor's shape. Gradients and the AdamW moments are arenas of the same
// layout (like_layout), so optimiser kernels, clipping and the gradient norm run over flat memory and
// every view of one arena has its twin at the same offset in the others.
//
// check_weights() validates every tensor against the Config before anything is uploaded (the CPU
// forward trusts Eigen's shapes; a device kernel would read out of bounds instead), naming the tensor.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/cuda/common.cuh"
#include "sinkscope/cuda/norms.cuh"
#include "sinkscope/model/config.hpp"
#include "sinkscope/model/weights.hpp"

namespace sinkscope::cuda {

// A row-major (rows × cols) view into an arena; vectors have cols = 1. Empty: data == nullptr.
struct DeviceTensor {
    float* data = nullptr;
    std::int64_t rows = 0, cols = 0;
    std::int64_t size() const { return rows * cols; }
    bool empty() const { return data == nullptr || size() == 0; }
    explicit operator bool() const { return !empty(); }
    float* ptr() const { return empty() ? nullptr : data; }
};

struct DeviceNorm {
    DeviceTensor weight, bias, alpha;
    NormParams params() const { return {weight.ptr(), bias.ptr(), alpha.ptr()}; }
    NormGrads grads() const { return {weight.ptr(), bias.ptr(), alpha.ptr()}; }
};

struct DeviceLayer {
    DeviceNorm attn_norm, attn_post_norm;
    DeviceTensor wq, wk, wv, wo, bq, bk, bv, bo, q_norm, k_norm, sink_kv, w_attn_gate, b_attn_gate;
    DeviceNorm ffn_norm, ffn_post_norm;
    DeviceTensor w_gate, w_up, w_down, b_up, b_down;
};

// One used parameter: canonical name, position in the arena, shape, and whether it is a matrix.
struct ArenaEntry {
    std::string name;
    std::int64_t offset = 0, rows = 0, cols = 0;
    bool is_matrix = false;
    std::int64_t size() const { return rows * cols; }
};

class DeviceWeights {
public:
    DeviceTensor tok_embed, pos_embed, sink_embed;
    std::vector<DeviceLayer> layers;
    DeviceNorm final_norm;
    DeviceTensor lm_head;

    const DeviceTensor& output_head() const { return lm_head.empty() ? tok_embed : lm_head; }
    const std::vector<ArenaEntry>& entries() const { return entries_; }
    std::int64_t parameter_count() const { return std::int64_t(arena_.size()); }
    float* arena() { return arena_.data(); }
    const float* arena() const { return arena_.data(); }

    DeviceWeights() = default;
    DeviceWeights(DeviceWeights&&) = default;
    DeviceWeights& operator=(DeviceWeights&&) = default;
    DeviceWeights(const DeviceWeights&) = delete;
    DeviceWeights& operator=(const DeviceWeights&) = delete;

    // Internal (set by upload / like_layout): the storage and its table.
    DeviceBuffer<float> arena_;
    std::vector<ArenaEntry> entries_;
};

namespace detail {
template <class N, class F>
void zip_norm(const std::string& name, N& n, DeviceNorm& d, F& f) {
    f(name + ".weight", n.weight, d.weight);
    f(name + ".bias", n.bias, d.bias);
    f(name + ".alpha", n.alpha, d.alpha);
}
}  // namespace detail

// Calls f(name, cpu_tensor, device_view) for every parameter slot in model::visit_parameters order,
// including empty ones (f decides; upload skips them exactly as visit_parameters does).
// W is model::Weights<float> or const model::Weights<float>.
template <class W, class F>
void zip_parameters(W& w, DeviceWeights& d, F&& f) {
    f("tok_embed", w.tok_embed, d.tok_embed);
    f("pos_embed", w.pos_embed, d.pos_embed);
    f("sink_embed", w.sink_embed, d.sink_embed);
    d.layers.resize(w.layers.size());
    for (std::size_t l = 0; l < w.layers.size(); ++l) {
        auto& L = w.layers[l];
        auto& D = d.layers[l];
        const std::string p = "blocks." + std::to_string(l) + ".";
        detail::zip_norm(p + "ln1", L.attn_norm, D.attn_norm, f);
        detail::zip_norm(p + "ln1_post", L.attn_post_norm, D.attn_post_norm, f);
        f(p + "attn.W_Q", L.wq, D.wq); f(p + "attn.W_K", L.wk, D.wk); f(p + "attn.W_V", L.wv, D.wv); f(p + "attn.W_O", L.wo, D.wo);
        f(p + "attn.b_Q", L.bq, D.bq); f(p + "attn.b_K", L.bk, D.bk); f(p + "attn.b_V", L.bv, D.bv); f(p + "attn.b_O", L.bo, D.bo);
        f(p + "attn.q_norm", L.q_norm, D.q_norm); f(p + "attn.k_norm", L.k_norm, D.k_norm);
        f(p + "attn.sink_kv", L.sink_kv, D.sink_kv);
        f(p + "attn.W_gate", L.w_attn_gate, D.w_attn_gate); f(p + "attn.b_gate", L.b_attn_gate, D.b_attn_gate);
        detail::zip_norm(p + "ln2", L.ffn_norm, D.ffn_norm, f);
        detail::zip_norm(p + "ln2_post", L.ffn_post_norm, D.ffn_post_norm, f);
        f(p + "mlp.W_gate", L.w_gate, D.w_gate); f(p + "mlp.W_in", L.w_up, D.w_up); f(p + "mlp.W_out", L.w_down, D.w_down);
        f(p + "mlp.b_in", L.b_up, D.b_up); f(p + "mlp.b_out", L.b_down, D.b_down);
    }
    detail::zip_norm("ln_final", w.final_norm, d.final_norm, f);
    f("unembed", w.lm_head, d.lm_head);
}

namespace detail {
inline std::string shape_string(std::int64_t r, std::int64_t c) { return "[" + std::to_string(r) + ", " + std::to_string(c) + "]"; }

template <class X>
void expect(const X& t, std::int64_t rows, std::int64_t cols, const std::string& name, bool required) {
    if (t.size() == 0) {
        require(!required, "cuda: parameter " + name + " is missing (the config needs shape " + shape_string(rows, cols) + ")",
                {"", name, {}});
        return;
    }
    require(t.rows() == rows && t.cols() == cols,
            "cuda: parameter " + name + " has shape " + shape_string(t.rows(), t.cols()) + ", the config needs " +
                shape_string(rows, cols),
            {"", name, {}});
}
}  // namespace detail

// Throws Error naming the first tensor whose shape disagrees with the Config, or that the Config needs
// and is missing: every row of the parameter table (model/parameter_table.hpp), checked where the Config
// uses it and wherever it is present (an optional bias a checkpoint carries).
inline void check_weights(const model::Config& c, const model::Weights<float>& w) {
    using namespace model;
    require_dense(w, "the CUDA upload");
    c.validate();
    if (c.ffn == FfnKind::moe) throw Error("cuda: ffn = moe has no device weights (the CUDA backend does not implement it)");
    require(std::int64_t(w.layers.size()) == c.n_layers, "cuda: the weights have " + std::to_string(w.layers.size()) +
                                                             " layers, the config " + std::to_string(c.n_layers));
    for_each_parameter_row<float>(w, [&](const auto& row, const std::string& name, const auto& owner) {
        row.with_tensor(owner, [&](const auto& t) {
            if (row.used(c) || t.size()) detail::expect(t, row.rows(c), row.cols(c), name, row.used(c));
        });
    });
}

// The arena layout of `w`: one entry per non-empty tensor, in visit_parameters order (host logic).
inline std::vector<ArenaEntry> arena_layout(const model::Weights<float>& w) {
    std::vector<ArenaEntry> out;
    std::int64_t offset = 0;
    DeviceWeights scratch;
    zip_parameters(w, scratch, [&](const std::string& name, const auto& t, DeviceTensor&) {
        if (t.size() == 0) return;
        using X = std::decay_t<decltype(t)>;
        const bool matrix = X::ColsAtCompileTime != 1;
        out.push_back({name, offset, std::int64_t(t.rows()), std::int64_t(t.cols()), matrix});
        offset += std::int64_t(t.size());
    });
    return out;
}

// Checks `w` against `c` and copies it to the device.
inline DeviceWeights upload(const Context& ctx, const model::Config& c, const model::Weights<float>& w) {
    require(c.cpu_only_switches().empty(), "cuda::upload: the CUDA backend does not implement " + c.cpu_only_switches() +
                                                   " (architecture " + c.architecture + "); use the CPU forward");
    check_weights(c, w);
    DeviceWeights d;
    d.entries_ = arena_layout(w);
    const std::int64_t total = d.entries_.empty() ? 0 : d.entries_.back().offset + d.entries_.back().size();
    std::vector<float> staging(static_cast<std::size_t>(total));
    d.arena_.resize(std::size_t(total));
    std::size_t e = 0;
    zip_parameters(w, d, [&](const std::string&, const auto& t, DeviceTensor& view) {
        if (t.size() == 0) { view = DeviceTensor{}; return; }
        const ArenaEntry& en = d.entries_[e++];
        std::copy(t.data(), t.data() + t.size(), staging.begin() + en.offset);  // row-major, contiguous
        view = DeviceTensor{d.arena_.data() + en.offset, en.rows, en.cols};
    });
    d.arena_.upload(staging, ctx.stream());
    return d;
}

// A zeroed DeviceWeights with the layout of `src` (gradients, AdamW moments).
inline DeviceWeights like_layout(const Context& ctx, const DeviceWeights& src) {
    DeviceWeights d;
    d.entries_ = src.entries_;
    d.arena_.resize(src.arena_.size());
    d.arena_.zero(ctx.stream());
    float* const base = d.arena_.data();
    const float* const old = src.arena_.data();
    auto rebase = [&](const DeviceTensor& t) { return t.empty() ? DeviceTensor{} : DeviceTensor{base + (t.data - old), t.rows, t.cols}; };
    auto rebase_norm = [&](const DeviceNorm& n) { return DeviceNorm{rebase(n.weight), rebase(n.bias), rebase(n.alpha)}; };
    d.tok_embed = rebase(src.tok_embed);
    d.pos_embed = rebase(src.pos_embed);
    d.sink_embed = rebase(src.sink_embed);
    d.layers.resize(src.layers.size());
    for (std::size_t l = 0; l < src.layers.size(); ++l) {
        const auto& S = src.layers[l];
        auto& D = d.layers[l];
        D.attn_norm = rebase_norm(S.attn_norm); D.attn_post_norm = rebase_norm(S.attn_post_norm);
        D.wq = rebase(S.wq); D.wk = rebase(S.wk); D.wv = rebase(S.wv); D.wo = rebase(S.wo);
        D.bq = rebase(S.bq); D.bk = rebase(S.bk); D.bv = rebase(S.bv); D.bo = rebase(S.bo);
        D.q_norm = rebase(S.q_norm); D.k_norm = rebase(S.k_norm); D.sink_kv = rebase(S.sink_kv);
        D.w_attn_gate = rebase(S.w_attn_gate); D.b_attn_gate = rebase(S.b_attn_gate);
        D.ffn_norm = rebase_norm(S.ffn_norm); D.ffn_post_norm = rebase_norm(S.ffn_post_norm);
        D.w_gate = rebase(S.w_gate); D.w_up = rebase(S.w_up); D.w_down = rebase(S.w_down);
        D.b_up = rebase(S.b_up); D.b_down = rebase(S.b_down);
    }
    d.final_norm = rebase_norm(src.final_norm);
    d.lm_head = rebase(src.lm_head);
    return d;
}

namespace detail {
// The arena layout of host weights `w`, required to be the device arena's (`what` names the caller).
inline std::vector<ArenaEntry> same_layout(const model::Weights<float>& w, const DeviceWeights& d, const std::string& what) {
    std::vector<ArenaEntry> layout = arena_layout(w);
    require(layout.size() == d.entries().size(), what + ": the host weights have " + std::to_string(layout.size()) +
                                                    " tensors, the device arena " + std::to_string(d.entries().size()));
    for (std::size_t i = 0; i < layout.size(); ++i)
        require(layout[i].name == d.entries()[i].name && layout[i].rows == d.entries()[i].rows && layout[i].cols == d.entries()[i].cols,
                what + ": tensor " + layout[i].name + " differs in name or shape from the device arena", {"", layout[i].name, {}});
    return layout;
}
}  // namespace detail

// Copies the device values back into `w`, which must have the layout the arena was made from (e.g.
// the weights that were uploaded, or train::zeros_like of them).
inline void download(const Context& ctx, const DeviceWeights& d, model::Weights<float>& w) {
    const std::vector<ArenaEntry> layout = detail::same_layout(w, d, "cuda::download");
    std::vector<float> host(std::size_t(d.parameter_count()));
    cuda::download(host.data(), d.arena(), host.size(), ctx.stream());
    std::size_t e = 0;
    DeviceWeights scratch;
    zip_parameters(w, scratch, [&](const std::string&, auto& t, DeviceTensor&) {
        if (t.size() == 0) return;
        const ArenaEntry& en = layout[e++];
        std::copy(host.begin() + en.offset, host.begin() + en.offset + en.size(), t.data());
    });
}

// The inverse of download: overwrites the values of an existing arena `d` with those of `w` (same
// layout), keeping its views (e.g. AdamW's moments when a run resumes from a checkpoint).
inline void upload_values(const Context& ctx, const model::Weights<float>& w, DeviceWeights& d) {
    const std::vector<ArenaEntry> layout = detail::same_layout(w, d, "cuda::upload_values");
    std::vector<float> host(std::size_t(d.parameter_count()));
    std::size_t e = 0;
    DeviceWeights scratch;
    zip_parameters(w, scratch, [&](const std::string&, const auto& t, DeviceTensor&) {
        if (t.size() == 0) return;
        const ArenaEntry& en = layout[e++];
        std::copy(t.data(), t.data() + t.size(), host.begin() + en.offset);
    });
    cuda::upload(d.arena(), host.data(), host.size(), ctx.stream());
}

}  // namespace sinkscope::cuda
