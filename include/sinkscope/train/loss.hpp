// Next-token cross-entropy with loss masks.
//
// A training sequence holds T + 1 tokens: the model reads tokens[0..T) and row t of its logits
// predicts tokens[t + 1]. A LossMask chooses which rows t count:
//   window [begin, end)   only rows begin ≤ t < end  (Paper B: "loss only on positions 1024–4096");
//                         end = −1 means T
//   skip_first            no loss at row 0, the prediction made at position 0 (Paper A v2's TNLM: no
//                         loss term at the [BOS] position)
// The batch loss is the mean over every counted row of every sequence:
//   L = (1/N) Σ_b Σ_{t counted} −log softmax(logits_b[t])[target_b[t]],   N = number of counted rows
// so ∂L/∂logits_b[t] = (softmax(logits_b[t]) − onehot(target)) / N on counted rows, 0 elsewhere.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "sinkscope/core/error.hpp"
#include "sinkscope/model/weights.hpp"

namespace sinkscope::train {

struct LossMask {
    std::int64_t begin = 0;
    std::int64_t end = -1;
    bool skip_first = false;

    bool counts(std::int64_t t, std::int64_t T) const {
        const std::int64_t e = end < 0 ? T : std::min(end, T);
        return t >= begin && t < e && !(skip_first && t == 0);
    }
    std::int64_t count(std::int64_t T) const {
        std::int64_t n = 0;
        for (std::int64_t t = 0; t < T; ++t) n += counts(t, T);
        return n;
    }
    void validate(std::int64_t T) const {
        require(begin >= 0, "loss mask: window begin must be >= 0, got " + std::to_string(begin));
        require(end < 0 || end > begin, "loss mask: window [" + std::to_string(begin) + ", " + std::to_string(end) + ") is empty");
        require(count(T) > 0, "loss mask: no position of a " + std::to_string(T) + "-token sequence is counted (window [" +
                                  std::to_string(begin) + ", " + std::to_string(end) + ")" + (skip_first ? ", skip_first" : "") + ")");
    }
};

struct LossSum {
    double sum = 0;          // Σ of the counted rows' losses
    std::int64_t count = 0;  // number of counted rows
    double mean() const { return count ? sum / double(count) : 0.0; }
};

// Cross-entropy of one sequence. logits (T × V); targets[t] is the token row t predicts.
// Writes dlogits (T × V) = (softmax − onehot) · grad_scale on counted rows, 0 elsewhere
// (grad_scale = 1/N for the batch mean). Returns the sum of the counted rows' losses (in double).
template <class T>
LossSum cross_entropy(model::Mat<T>* dlogits, const model::Mat<T>& logits, const std::vector<std::int32_t>& targets,
                      const LossMask& mask, T grad_scale) {
    const std::int64_t n = logits.rows(), V = logits.cols();
    require(std::int64_t(targets.size()) == n, "cross_entropy: " + std::to_string(targets.size()) + " targets for " +
                                                   std::to_string(n) + " rows of logits");
    LossSum out;
    if (dlogits) dlogits->setZero(n, V);
    for (std::int64_t t = 0; t < n; ++t) {
        if (!mask.counts(t, n)) continue;
        const std::int32_t y = targets[t];
        require(y >= 0 && y < V, "cross_entropy: target " + std::to_string(y) + " at row " + std::to_string(t) +
                                     " is outside the vocabulary");
        const T m = logits.row(t).maxCoeff();
        const double z = double((logits.row(t).array() - m).exp().sum());
        const double lse = double(m) + std::log(z);
        out.sum += lse - double(logits(t, y));
        out.count += 1;
        if (dlogits) {
            dlogits->row(t) = ((logits.row(t).array() - m).exp() / T(z)).matrix() * grad_scale;
            (*dlogits)(t, y) -= grad_scale;
        }
    }
    return out;
}

}  // namespace sinkscope::train
