// Plumbing for the experiments that train models from scratch (A1, A4, B6): one small sinkscope
// transformer on Guo et al.'s Bigram-Backcopy task (train::BigramBackcopy; BOS at position 0 unless
// TrainSize::bos is false; full causal attention unless TrainSize::window > 0), the
// same derived defaults as tools/train.cpp (kv heads = heads, d_h = d / H, SwiGLU width 8d/3 rounded to
// 8, GELU width 4d, context = T), trained with train::Trainer. No analysis math lives here.
#pragma once

#include <functional>

#include <sinkscope/train/trainer.hpp>

#include "common.hpp"

namespace sinkscope::experiments {

struct TrainSize {
    std::int64_t layers = 2, d_model = 64, heads = 4, seq_len = 64, n_tokens = 64, triggers = 3;
    std::int64_t steps = 300, batch = 8, eval_sequences = 8;
    double lr = 3e-3, weight_decay = 0.1;
    std::string task = "bigram-backcopy";  // or "zipf" ([BOS] + Zipf unigram: context never helps)
    bool bos = true;                       // [BOS] at the start of every training sequence
    std::int64_t window = 0;               // sliding attention window (0: full causal)
    std::string recipe = "sinkscope";      // or "guo": guo_recipe below
};

// Guo et al.'s Bigram-Backcopy setting as in tools/train.cpp's sink demonstration (docs/training-from-scratch.md: a first-token
// sink within 500–750 steps): LayerNorm with bias, learned positions, GELU (erf) FFN of width 4d, untied
// output head, AdamW β₂ 0.99, weight decay 1e-4. The "sinkscope" recipe (RMSNorm, RoPE, SwiGLU, tied,
// β₂ 0.95, weight decay 0.1) formed no sink in 1600 steps at 4 layers, d 64 (measured for A1/A4).
inline void guo_recipe(train::TrainConfig& t) {
    auto& c = t.model;
    c.norm = model::NormKind::layernorm;
    c.norm_bias = true;
    c.positions = model::PositionKind::learned;
    c.ffn = model::FfnKind::gelu;
    c.activation = model::Activation::gelu_erf;
    c.tied_embeddings = false;
    t.optim.beta2 = 0.99;
    t.optim.weight_decay = 1e-4;
}

// A TrainConfig for `size`; `modify` may change the model or the optimiser before the defaults that
// depend on them (kv heads, head_dim, d_ff, context) are derived.
inline train::TrainConfig train_config(const TrainSize& z, std::uint64_t seed,
                                       const std::function<void(train::TrainConfig&)>& modify = {}) {
    train::TrainConfig t;
    auto& c = t.model;
    c.architecture = "sinkscope";
    c.n_layers = z.layers; c.d_model = z.d_model; c.n_heads = z.heads; c.n_kv_heads = 0; c.head_dim = 0; c.d_ff = 0;
    c.vocab_size = z.n_tokens + 1;
    c.sliding_window = z.window;
    t.steps = z.steps; t.batch = z.batch; t.eval_sequences = z.eval_sequences;
    t.optim.lr = z.lr; t.optim.warmup_steps = std::max<std::int64_t>(1, z.steps / 20); t.optim.weight_decay = z.weight_decay;
    t.optim.beta2 = 0.95; t.optim.total_steps = z.steps;
    t.seed = seed;
    t.threads = 1;
    t.task = {{"kind", z.task}, {"n_tokens", z.n_tokens}, {"seq_len", z.seq_len}, {"seed", seed + 1}, {"bos", z.bos}};
    if (z.task == "bigram-backcopy") { t.task["triggers"] = z.triggers; t.task["dirichlet"] = 0.2; }
    else t.task["exponent"] = 1.0;
    if (z.recipe == "guo") guo_recipe(t);
    else require(z.recipe == "sinkscope", "unknown training recipe '" + z.recipe + "' (sinkscope or guo)");
    if (modify) modify(t);
    if (c.n_kv_heads == 0) c.n_kv_heads = c.n_heads;
    if (c.head_dim == 0) c.head_dim = c.d_model / c.n_heads;
    if (c.d_ff == 0) c.d_ff = c.ffn == model::FfnKind::gelu ? 4 * c.d_model : ((8 * c.d_model / 3 + 7) / 8) * 8;
    if (c.context_length == 0) c.context_length = z.seq_len + (c.attention == model::AttentionKind::sink_token ? 1 : 0);
    t.optim.total_steps = t.steps;
    return t;
}

inline json train_config_json(const train::TrainConfig& t) { return t.to_json(); }

// --precision, for the experiments that train many models (the sweep, the ablation table): float32, the
// default and the main job's arithmetic, or bf16 products with float32 accumulation and master weights
// (TrainConfig::precision; oneDNN; docs/training-from-scratch.md, "Mixed precision": about 2.5x float32 here, 2x PyTorch autocast).
inline void add_precision_option(CLI::App& app, std::string& precision) {
    app.add_option("--precision", precision,
                   "float32 | bf16: the training products (bf16: oneDNN, float32 accumulation and master weights)")
        ->check(CLI::IsMember({"float32", "bf16"}))
        ->capture_default_str();
}

}  // namespace sinkscope::experiments
