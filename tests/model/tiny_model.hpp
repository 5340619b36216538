// A tiny Llama-style config and random weights for model tests (not a fixture: any seed will do).
#pragma once

#include <cmath>
#include <random>
#include <sinkscope/model/weights.hpp>

namespace sinkscope::test {
using namespace sinkscope::model;
inline Config tiny_llama() {
    Config c;
    c.architecture = "llama";
    c.n_layers = 2; c.d_model = 16; c.n_heads = 4; c.n_kv_heads = 2; c.head_dim = 4; c.d_ff = 24;
    c.vocab_size = 32; c.context_length = 16;
    return c;
}

template <class T>
Weights<T> random_weights(const Config& c, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> nd(0.0, 1.0);
    auto mat = [&](std::int64_t r, std::int64_t k, double s) { Mat<T> m(r, k); for (auto& v : m.reshaped()) v = T(s * nd(rng)); return m; };
    auto vec = [&](std::int64_t n, double mean, double s) { Vec<T> v(n); for (auto& x : v) x = T(mean + s * nd(rng)); return v; };
    Weights<T> w;
    const double sd = 1.0 / std::sqrt(double(c.d_model));
    w.tok_embed = mat(c.vocab_size, c.d_model, 1.0);
    if (c.positions == PositionKind::learned) w.pos_embed = mat(c.context_length, c.d_model, 0.5);
    w.layers.resize(c.n_layers);
    for (auto& L : w.layers) {
        L.attn_norm.weight = vec(c.d_model, 1.0, 0.1);
        L.ffn_norm.weight = vec(c.d_model, 1.0, 0.1);
        L.wq = mat(c.q_dim(), c.d_model, sd); L.wk = mat(c.kv_dim(), c.d_model, sd);
        L.wv = mat(c.kv_dim(), c.d_model, sd); L.wo = mat(c.d_model, c.q_dim(), sd);
        L.w_gate = mat(c.d_ff, c.d_model, sd); L.w_up = mat(c.d_ff, c.d_model, sd);
        L.w_down = mat(c.d_model, c.d_ff, 1.0 / std::sqrt(double(c.d_ff)));
    }
    w.final_norm.weight = vec(c.d_model, 1.0, 0.1);
    return w;
}
}  // namespace sinkscope::test
