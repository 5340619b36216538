// BF16 weight storage (WeightStorage::bf16, CLI `--weights bf16`): every dense linear map of a float model
// rounded once to bfloat16 and kept in process memory as a BF16 QuantMatrix view, its float32 Mat freed.
//
// Why: a forward with bf16 products (MatmulPrecision::bf16, layers/bf16_matmul.hpp) rounds each weight to
// bf16 again on every call — 0.031 s of a 0.28 s SmolLM2 forward at 512 tokens (bench_forward's
// bf16_weight_convert_s) — and holds the float32 weights besides. Rounded once here, the products read the
// bits in place (QuantCompute::bf16 → bf16_matmul_weight_bits) and the maps take half the memory.
//
// Same arithmetic: a weight w becomes bf16(w) (round to nearest even, detail::convert_bf16: the rounding
// bf16_matmul's own conversion does), and the product with a BF16 view runs the same oneDNN primitive on
// the same bits as bf16_matmul does with the float32 weight (bf16_matmul_weight_bits' comment). So the
// forward with these weights and QuantCompute::bf16 gives bit for bit what the float32 weights give with
// MatmulPrecision::bf16 (tests/model/test_bf16_weights.cpp checks it on every fixture family).
//
// What is converted: W_Q, W_K, W_V, W_O, W_gate, W_in, W_out, the experts' three maps, and the output head.
// What stays float32: the token embedding (a table looked up row by row, where bf16 rounding would change
// the residual stream itself), so a tied head gets a BF16 copy of its own; norms, biases, the router and
// attention gates (small, and not products with bf16 inputs in the reference path either); maps that are
// already views (file-type storage) stay as they are.
//
// Afterwards the weights are views (Weights::file_type() is true, Weights::file keeps the BF16 bytes and
// any file they came with alive): training, checkpoints, CUDA upload and weight edits need the float32
// weights (require_dense), as with file-type storage.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sinkscope/io/ggml_types.hpp"
#include "sinkscope/layers/bf16_matmul.hpp"
#include "sinkscope/model/weights.hpp"

namespace sinkscope::model {

namespace detail {

// The BF16 copies of one model's maps, and whatever the weights kept alive before (a mapped file).
struct Bf16Store {
    std::shared_ptr<const void> previous;
    std::vector<std::unique_ptr<std::uint16_t[]>> maps;

    // A BF16 view of `m` (rows × cols, row-major), rounded as bf16_matmul rounds a weight.
    QuantMatrix add(const Mat<float>& m) {
        const std::int64_t n = m.size();
        auto bits = std::make_unique<std::uint16_t[]>(std::size_t(n));
        convert_bf16(bits.get(), m.data(), n);
        const auto* data = reinterpret_cast<const std::uint8_t*>(bits.get());
        maps.push_back(std::move(bits));
        return QuantMatrix(io::GgmlType::BF16, m.rows(), m.cols(), data);
    }
};

}  // namespace detail

/// Converts the dense linear maps of `w` to BF16 views (file comment) and sets the arithmetic of the
/// products with views to `compute`: bf16 (bf16 inputs, float32 sums; the point of this storage) or exact
/// (float32 products of the rounded weights). Error for bf16 without oneDNN, which those products need.
inline void store_linear_maps_bf16(Weights<float>& w, QuantCompute compute = QuantCompute::bf16) {
    require(compute != QuantCompute::bf16 || bf16_matmul_available(),
            "bf16 products need oneDNN: install Debian's libdnnl-dev (scripts/setup.sh does) and rebuild");
    auto store = std::make_shared<detail::Bf16Store>();
    store->previous = w.file;
    auto convert = [&](Mat<float>& dense, QuantMatrix& view) {
        if (dense.size() == 0 || !view.empty()) return;
        view = store->add(dense);
        Mat<float>().swap(dense);  // free it: the view is the map now
    };
    for (auto& L : w.layers) L.for_each_map(convert);
    if (w.lm_head.size()) convert(w.lm_head, w.lm_head_file);
    else if (w.lm_head_file.empty() && w.tok_embed_file.empty() && w.tok_embed.size()) {
        w.lm_head_file = store->add(w.tok_embed);  // tied: the head's own copy; lookups keep the float32 table
        w.head_copies_embedding = true;
    }
    if (!store->maps.empty()) {
        w.file = store;
        if (w.storage == WeightStorage::float32) w.storage = WeightStorage::bf16;  // else file views stay beside
    }
    w.set_compute(compute);
}

}  // namespace sinkscope::model
