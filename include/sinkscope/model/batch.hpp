// The forward pass over a batch of sequences of different lengths, with hook points of TransformerLens's
// shapes [batch, pos, …].
//
// The sequences are right-padded to the longest length T: every activation is one (B·T × …) matrix,
// row-major, so that its data is the [B, T, …] tensor, and sequence b owns rows [b·T, b·T + T_b).
// Embeddings, norms, the Q/K/V/O projections, FFNs (MoE included) and the output head run on all B·T
// rows at once: one GEMM per weight matrix for the whole batch, the point of batching. RoPE and the
// attention run per sequence on its own T_b rows, positions from 0, with the same kernels as forward()
// (model/forward.hpp, attention_block_forward): a sequence never sees the keys of another one or of the
// padding, so its rows are computed as they are for it alone (tests/model/test_batch.cpp measures how
// exactly).
//
// Padding. A padded row starts as a zero embedding (plus its learned position embedding) and then goes
// through the layers like any row; its values in the hooks and in the logits mean nothing and are to be
// ignored (slice each sequence to its length). Where the forward itself defines them: attention scores are
// −∞ and the pattern 0 outside each sequence's T_b × T_b block (padded queries and keys alike), and z is 0
// at padded rows. A hook may edit any entry in place, as in forward(); an edit at a padded row never
// reaches a real one (causal attention within a sequence; every other layer works row by row).
//
// Hook shapes in a batch (one sequence's shape with a batch dimension in front):
//   resid_pre / resid_mid / resid_post / attn_out / mlp_out / ln1 / ln2 / embed / pos_embed   [B, T, d_model]
//   q, rot_q, z   [B, T, head, d_head]        k, v, rot_k   [B, T, kv_head, d_head]
//   attn_scores, pattern   [B, head, query_pos, key_pos]   (T × T per head)
//   mlp pre / pre_linear / post   [B, T, d_mlp]   router_logits [B, T, E]   expert weights / chosen [B, T, k]
//   gate   [B, T, head] or [B, T, head·d_head]      logits   [B, T, vocab]
//
// Refused (sinkscope::Error): an empty batch, an empty sequence, a sequence longer than the context, a
// token outside the vocabulary (naming the sequence), and AttentionKind::sink_token, whose prepended sink
// position makes every sequence one longer than its tokens; run forward() on each sequence there.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/model/forward.hpp"

namespace sinkscope::model {

// The logits of a batch: (B·T × vocab), sequence b's at rows [b·T, b·T + lengths[b]), padded rows after.
template <class T>
struct BatchLogits {
    std::int64_t batch = 0;             // B
    std::int64_t positions = 0;         // T, the longest sequence's length
    std::vector<std::int64_t> lengths;  // (B)
    Mat<T> logits;                      // (B·T, vocab); empty when the options skip the logits
    // Sequence b's logits (T_b × vocab), what forward() returns for it alone.
    auto sequence(std::int64_t b) const { return logits.middleRows(b * positions, lengths[std::size_t(b)]); }
};

// Runs the model over every sequence of `sequences` (BOS, if wanted, must already be in each) in one
// batch. Hooks see every named activation once per layer for the whole batch, shapes as above.
template <class T>
BatchLogits<T> forward_batch(const Config& c, const Weights<T>& w, const std::vector<std::vector<std::int32_t>>& sequences,
                             const HookSet<T>* hooks = nullptr, ForwardOptions options = {}) {
    require(!sequences.empty(), "forward_batch: empty batch (no sequences)");
    require(c.attention != AttentionKind::sink_token,
            "forward_batch: sink_token attention is not batched (its sink position makes each sequence one row "
            "longer than its tokens); run forward() on each sequence");
    detail::RowLayout layout;
    layout.batch = std::int64_t(sequences.size());
    for (std::size_t b = 0; b < sequences.size(); ++b) {
        try {
            detail::check_tokens(c, sequences[b]);
        } catch (const Error& e) {
            throw Error("forward_batch: sequence " + std::to_string(b) + ": " + e.message(), {e.file(), e.tensor(), e.offset()});
        }
        layout.lengths.push_back(std::int64_t(sequences[b].size()));
        layout.positions = std::max(layout.positions, layout.lengths.back());
    }
    const std::int64_t B = layout.batch, P = layout.positions, n = B * P, d = c.d_model;
    const detail::HookCaller<T> hook{hooks, &layout};
    const detail::ForwardPrecision precision(w);  // Weights::precision on this thread

    Mat<T> x = Mat<T>::Zero(n, d);  // (B·T, d) residual stream; padded rows start at zero
    for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t t = 0; t < layout.lengths[std::size_t(b)]; ++t) {
            detail::embed_row(x.row(b * P + t), w, sequences[std::size_t(b)][std::size_t(t)]);  // dense or file-type
            if (c.embed_scale != 1) x.row(b * P + t) *= T(c.embed_scale);  // Gemma: √d_model, rounded to T
        }
    hook(hook_spec(HookId::embed).name, x.data(), {n, d});
    if (c.positions == PositionKind::learned) {
        Mat<T> pe = w.pos_embed.topRows(P).replicate(B, 1);  // (B·T, d): positions from 0 in every sequence
        hook(hook_spec(HookId::pos_embed).name, pe.data(), {n, d});
        x += pe;
    }
    BatchLogits<T> result;
    result.batch = B;
    result.positions = P;
    result.lengths = layout.lengths;

    const std::int64_t last = options.last_layer < 0 ? c.n_layers - 1 : std::min(options.last_layer, c.n_layers - 1);
    detail::BlockScratch<T> scratch;
    for (std::int64_t l = 0; l <= last; ++l) detail::block_forward(x, w.layers[l], c, l, hook, scratch);
    if (last != c.n_layers - 1 || !options.logits) return result;

    if (c.norm_placement != NormPlacement::post) {
        Mat<T> xn;
        norm_forward(xn, x, w.final_norm, c.norm, c.norm_eps);
        hook(hook_spec(HookId::ln_final).name, xn.data(), {n, d});
        x.swap(xn);
    }
    detail::head_forward(result.logits, x, w);  // (B·T, vocab); dense or file-type
    softcap(result.logits, c.logit_softcap);                     // c·tanh(logits/c) (Gemma 2)
    hook(hook_spec(HookId::logits).name, result.logits.data(), {n, c.vocab_size});
    return result;
}

// Runs `sequences` as one batch, then offers each sequence's activations to `hooks` written for one
// sequence: sliced to its length, with forward()'s shapes (no batch dimension; scores and pattern
// [head, T_b, T_b]), sequence after sequence, each in the order forward() offers them, calling
// before_sequence(b) first and after_sequence(b, the batch's logits) last. The streaming reducers
// (model/reducers.hpp) thus observe a batch as they observe forward() on each sequence in turn.
// Read-only: the activations are offered after the batch has run, so what these hooks write changes
// nothing (interventions go through forward_batch's own hooks).
// Memory: a copy of every activation the hooks want, for the whole batch.
template <class T>
BatchLogits<T> forward_batch_replay(const Config& c, const Weights<T>& w, const std::vector<std::vector<std::int32_t>>& sequences,
                                    const HookSet<T>& hooks, const std::function<void(std::int64_t)>& before_sequence = {},
                                    ForwardOptions options = {},
                                    const std::function<void(std::int64_t, const BatchLogits<T>&)>& after_sequence = {}) {
    std::vector<std::pair<std::string, Captured<T>>> seen;  // in the order the batch offered them
    HookSet<T> capture;
    capture.add([&hooks](const std::string& name) { return hooks.wants(name); },
                [&seen](const std::string& name, ActivationRef<T>& x) {
                    seen.push_back({name, Captured<T>{x.shape, std::vector<T>(x.data, x.data + x.size())}});
                });
    BatchLogits<T> out = forward_batch(c, w, sequences, &capture, options);
    const std::int64_t P = out.positions;
    const std::string scores = hook_spec(HookId::attn_scores).name, pattern = hook_spec(HookId::pattern).name;
    auto ends_with = [](const std::string& s, const std::string& tail) {
        return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
    };
    std::vector<T> one;
    for (std::int64_t b = 0; b < out.batch; ++b) {
        if (before_sequence) before_sequence(b);
        const std::int64_t n = out.lengths[std::size_t(b)];
        for (const auto& [name, a] : seen) {
            std::vector<std::int64_t> shape;
            if (ends_with(name, scores) || ends_with(name, pattern)) {  // [B, H, T, T] → [H, T_b, T_b]
                const std::int64_t H = a.shape[1];
                one.resize(std::size_t(H * n * n));
                for (std::int64_t h = 0; h < H; ++h)
                    for (std::int64_t i = 0; i < n; ++i)
                        std::copy_n(a.data.begin() + ((b * H + h) * P + i) * P, n, one.begin() + (h * n + i) * n);
                shape = {H, n, n};
            } else {  // [B, T, …] → [T_b, …]
                const std::int64_t row = std::int64_t(a.data.size()) / (out.batch * P);
                one.assign(a.data.begin() + b * P * row, a.data.begin() + (b * P + n) * row);
                shape.assign(a.shape.begin() + 1, a.shape.end());
                shape.front() = n;
            }
            hooks.run(name, ActivationRef<T>{one.data(), shape});
        }
        if (after_sequence) after_sequence(b, out);
    }
    return out;
}

// Whether forward_batch gives each of `sequences`, bit for bit, what forward() gives it alone
// (tests/model/test_batch.cpp and test_quantized_forward.cpp pin it): a dense FFN (MoE gathers rows per
// expert), attention other than sink_token (not batched), float32 or int8 products (oneDNN's bf16 products
// may block a product differently for a different row count and promise no row's sum order), and every
// length the same multiple of 4. A multiple of 4, Eigen 3.4's GEMM panel width in positions (gebp's nr), puts
// no position of a sequence in a tail panel of the batched projections; equal lengths give each sequence's
// attention the shapes it has alone. Sequences padded to a longer one are not bit-exact on every CPU: the
// scores q·kᵀ of a T_b-key sequence are computed over the padded block's keys, and Eigen's kernels split the
// key rows into packet panels whose sum order depends on the key count (on an AVX2 host a 12-token sequence
// padded to 16 differs by about 1e-6 of the logits; on AVX-512 hosts it happened to agree).
// Sequences [first, end) of `sequences` (all of them by default).
template <class T>
bool batch_is_bit_exact(const Config& c, const Weights<T>& w, const std::vector<std::vector<std::int32_t>>& sequences,
                        std::int64_t first = 0, std::int64_t end = -1) {
    if (end < 0) end = std::int64_t(sequences.size());
    return c.ffn != FfnKind::moe && c.attention != AttentionKind::sink_token && w.precision != MatmulPrecision::bf16 &&
           !(w.file_type() && w.compute == QuantCompute::bf16) &&
           std::all_of(sequences.begin() + first, sequences.begin() + end, [&](const auto& s) {
               return s.size() % 4 == 0 && s.size() == sequences[std::size_t(first)].size();
           });
}

// What forward_each calls around each sequence.
template <class T>
struct EachSequence {
    std::function<void(std::int64_t)> before;                        // before sequence i's activations are offered
    std::function<void(std::int64_t, const Mat<T>& logits)> after;  // once they all have been; logits as forward()
                                                                     // returns them (empty when the options skip them)
};

// Runs sequences[first, end) through the model for read-only `hooks` written for one sequence (forward()'s
// shapes): `per_pass` sequences to a forward_batch_replay where batch_is_bit_exact holds for the whole range,
// else one forward() each. Either way each sequence's activations are offered in order, between
// on.before(i) and on.after(i, logits), so the caller sees bit for bit what one forward() per sequence gives
// it, only sooner (one GEMM per weight for a whole pass). Hooks that intervene need forward() or
// forward_batch: what these hooks write changes nothing in a batched pass. Returns the number of forward
// passes it ran.
template <class T>
std::int64_t forward_each(const Config& c, const Weights<T>& w, const std::vector<std::vector<std::int32_t>>& sequences,
                          const HookSet<T>& hooks, std::int64_t per_pass, const EachSequence<T>& on,
                          ForwardOptions options = {}, std::int64_t first = 0, std::int64_t end = -1) {
    if (end < 0) end = std::int64_t(sequences.size());
    require(per_pass >= 1, "forward_each: per_pass must be at least 1, not " + std::to_string(per_pass));
    require(0 <= first && first <= end && end <= std::int64_t(sequences.size()),
            "forward_each: range [" + std::to_string(first) + ", " + std::to_string(end) + ") lies outside the " +
                std::to_string(sequences.size()) + " sequences");
    if (per_pass > 1 && !batch_is_bit_exact(c, w, sequences, first, end)) per_pass = 1;
    const Mat<T> none;
    Mat<T> logits;  // one at a time: reused (forward_into), so equal lengths fault in no fresh logits pages
    std::int64_t passes = 0;
    for (std::int64_t i = first; i < end; i += per_pass, ++passes) {
        if (per_pass == 1) {
            if (on.before) on.before(i);
            forward_into(logits, c, w, sequences[std::size_t(i)], &hooks, options);
            if (on.after) on.after(i, logits);
            continue;
        }
        const std::vector<std::vector<std::int32_t>> pass(sequences.begin() + i,
                                                          sequences.begin() + std::min(end, i + per_pass));
        forward_batch_replay<T>(
            c, w, pass, hooks, [&](std::int64_t b) { if (on.before) on.before(i + b); }, options,
            [&](std::int64_t b, const BatchLogits<T>& out) {
                if (on.after) on.after(i + b, options.logits ? Mat<T>(out.sequence(b)) : none);
            });
    }
    return passes;
}

}  // namespace sinkscope::model
