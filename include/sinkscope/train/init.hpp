// Initial weights for training from scratch, deterministic by seed (GPT-2 / nanoGPT scheme).
//
//   every weight matrix, embeddings and output head   N(0, σ²), σ = init_std (0.02)
//   the projections that write into the residual       N(0, (σ/√(2L))²)   (W_O, W_down, linear FFN)
//   norm gains 1, norm biases 0, DynamicTanh α = α₀    (α₀ of the attention block for ln1 / ln1_post,
//                                                       dyt_alpha0_other for ln2 / ln2_post / ln_final)
//   QK-norm gains 1; linear biases 0; gate biases 0 (σ(0) = ½); gate matrices N(0, σ²)
//   KV-bias key/value and the sink-token embedding      N(0, σ²)
//   mixture of experts: router and each expert's W_gate, W_up N(0, σ²), each expert's W_down N(0, (σ/√(2L))²)
// Every parameter the Config uses is created, the others are left empty — exactly the set forward()
// reads and visit_parameters() walks.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "sinkscope/model/config.hpp"
#include "sinkscope/model/parameter_table.hpp"
#include "sinkscope/train/random.hpp"

namespace sinkscope::train {

struct InitOptions {
    double init_std = 0.02;
    bool scale_residual = true;  // σ/√(2L) for W_O and W_down
};

// Every row of the parameter table (model/parameter_table.hpp) that the Config uses gets its shape and its
// ParamInit, in the table's order; the random draws follow that order.
template <class T>
model::Weights<T> init_weights(const model::Config& c, std::uint64_t seed, InitOptions o = {}) {
    using model::ParamInit;
    c.validate();
    Rng rng(stream_seed(seed, 0x1417));
    const double sd = o.init_std;
    const double sd_out = o.scale_residual ? sd / std::sqrt(2.0 * double(c.n_layers)) : sd;

    model::Weights<T> w;
    w.layers.resize(std::size_t(c.n_layers));
    if (c.ffn == model::FfnKind::moe)
        for (auto& L : w.layers) L.experts.resize(std::size_t(c.n_experts));
    model::for_each_parameter_row<T>(w, [&](const auto& row, const std::string&, auto& owner) {
        if (!row.used(c)) return;
        row.with_tensor(owner, [&](auto& t) {
            t.resize(row.rows(c), row.cols(c));
            switch (row.init) {
                case ParamInit::normal:
                case ParamInit::normal_residual: {
                    const double s = row.init == ParamInit::normal ? sd : sd_out;
                    for (std::int64_t i = 0; i < t.size(); ++i) t.data()[i] = T(s * rng.normal());
                    break;
                }
                case ParamInit::ones: t.setOnes(); break;
                case ParamInit::zeros: t.setZero(); break;
                case ParamInit::dyt_alpha_attention: t.setConstant(T(c.dyt_alpha0_attn)); break;
                case ParamInit::dyt_alpha_other: t.setConstant(T(c.dyt_alpha0_other)); break;
            }
        });
    });
    return w;
}

}  // namespace sinkscope::train
