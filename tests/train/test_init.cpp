// train/init.hpp: the initial weights follow the rule its header documents (GPT-2 / nanoGPT), tensor by
// tensor, on three configurations that between them use every parameter kind; the same seed gives the
// same weights and another seed other ones; exactly the parameters the Config uses are created.
//
// The rule, as the header states it (σ = init_std, L = n_layers):
//   matrices, embeddings, output head, gate matrices, router, sink_kv, sink_embed   N(0, σ²)
//   W_O, W_out (every FFN kind's, each expert's)                                     N(0, (σ/√(2L))²)
//   norm gains, QK-norm gains 1; every bias 0; DynamicTanh α = dyt_alpha0_attn (ln1, ln1_post) or
//   dyt_alpha0_other (ln2, ln2_post, ln_final)
// Statistical tolerance: for n i.i.d. N(0, s²) entries the sample mean has standard error s/√n and the
// sample standard deviation s/√(2(n − 1)) (its large-n normal approximation); each check allows 5 standard
// errors, which a correct initialiser exceeds with probability ~6e-7 per check (the seeds are fixed, so the
// test is deterministic), while σ/√L for σ/√(2L) (a factor 1.41) is > 10 standard errors even for the
// smallest scaled tensor here (64 × 64).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <sinkscope/model/config.hpp>
#include <sinkscope/model/weights.hpp>
#include <sinkscope/train/init.hpp>

using namespace sinkscope;
using model::Config;

namespace {

// GPT-2 style: LayerNorm with biases, every linear bias, GELU FFN, learned positions, untied head, plus a
// KV-bias sink and a conditional per-head gate.
Config gpt2_like() {
    Config c;
    c.architecture = "gpt2";
    c.n_layers = 3; c.d_model = 64; c.n_heads = 4; c.n_kv_heads = 2; c.head_dim = 16; c.d_ff = 96;
    c.vocab_size = 128; c.context_length = 32;
    c.norm = model::NormKind::layernorm; c.norm_bias = true;
    c.qkv_bias = true; c.out_bias = true; c.mlp_bias = true;
    c.ffn = model::FfnKind::gelu; c.activation = model::Activation::gelu_tanh;
    c.positions = model::PositionKind::learned;
    c.tied_embeddings = false;
    c.attention = model::AttentionKind::kv_bias;
    c.gate = model::GateKind::per_head;
    return c;
}

// DynamicTanh (with β) in sandwich placement, per-head QK-norm, a sink token, a mixture of 3 experts, a
// static per-channel gate, tied head.
Config dyt_moe() {
    Config c;
    c.architecture = "sinkscope";
    c.n_layers = 2; c.d_model = 64; c.n_heads = 4; c.n_kv_heads = 2; c.head_dim = 16; c.d_ff = 96;
    c.vocab_size = 128; c.context_length = 32;
    c.norm = model::NormKind::dynamic_tanh; c.norm_bias = true;
    c.dyt_alpha0_attn = 0.7; c.dyt_alpha0_other = 1.3;
    c.norm_placement = model::NormPlacement::sandwich;
    c.qk_norm = true;
    c.attention = model::AttentionKind::sink_token;
    c.ffn = model::FfnKind::moe; c.n_experts = 3; c.n_experts_used = 2;
    c.gate = model::GateKind::static_per_channel;
    return c;
}

// RMSNorm after each sub-layer only (OLMo-2's output placement), a linear FFN, off-by-one softmax.
Config output_linear() {
    Config c;
    c.n_layers = 2; c.d_model = 64; c.n_heads = 4; c.n_kv_heads = 4; c.head_dim = 16; c.d_ff = 0;
    c.vocab_size = 128; c.context_length = 32;
    c.norm_placement = model::NormPlacement::output;
    c.ffn = model::FfnKind::linear;
    c.attention = model::AttentionKind::softmax_off_by_one;
    return c;
}

// The parameter names each configuration must have (visit_parameters' names), written out by hand from
// the Config's switches; {L} stands for each layer index.
std::vector<std::string> expand(const std::vector<std::string>& top, const std::vector<std::string>& layer,
                                const std::vector<std::string>& end, std::int64_t n_layers) {
    std::vector<std::string> out = top;
    for (std::int64_t l = 0; l < n_layers; ++l)
        for (const auto& n : layer) out.push_back("blocks." + std::to_string(l) + "." + n);
    out.insert(out.end(), end.begin(), end.end());
    return out;
}
std::vector<std::string> gpt2_like_names() {
    return expand({"tok_embed", "pos_embed"},
                  {"ln1.weight", "ln1.bias", "attn.W_Q", "attn.W_K", "attn.W_V", "attn.W_O", "attn.b_Q", "attn.b_K",
                   "attn.b_V", "attn.b_O", "attn.sink_kv", "attn.W_gate", "attn.b_gate", "ln2.weight", "ln2.bias",
                   "mlp.W_in", "mlp.W_out", "mlp.b_in", "mlp.b_out"},
                  {"ln_final.weight", "ln_final.bias", "unembed"}, 3);
}
std::vector<std::string> dyt_moe_names() {
    std::vector<std::string> layer{"ln1.weight", "ln1.bias", "ln1.alpha", "ln1_post.weight", "ln1_post.bias",
                                   "ln1_post.alpha", "attn.W_Q", "attn.W_K", "attn.W_V", "attn.W_O", "attn.q_norm",
                                   "attn.k_norm", "attn.b_gate", "ln2.weight", "ln2.bias", "ln2.alpha",
                                   "ln2_post.weight", "ln2_post.bias", "ln2_post.alpha", "mlp.W_router"};
    for (int e = 0; e < 3; ++e)
        for (const char* m : {"W_gate", "W_in", "W_out"}) layer.push_back("mlp.experts." + std::to_string(e) + "." + m);
    return expand({"tok_embed", "sink_embed"}, layer, {"ln_final.weight", "ln_final.bias", "ln_final.alpha"}, 2);
}
std::vector<std::string> output_linear_names() {
    return expand({"tok_embed"}, {"ln1_post.weight", "attn.W_Q", "attn.W_K", "attn.W_V", "attn.W_O", "ln2_post.weight", "mlp.W_out"},
                  {"ln_final.weight"}, 2);
}

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// What the header's rule says about one tensor, from its name: a Gaussian of standard deviation sd, or the
// constant value.
struct Rule {
    bool gaussian = false;
    double sd = 0;
    double value = 0;
};
Rule documented_rule(const std::string& name, const Config& c, double sigma, bool scale_residual) {
    const double sigma_out = scale_residual ? sigma / std::sqrt(2.0 * double(c.n_layers)) : sigma;
    if (ends_with(name, ".alpha")) {
        const bool attn_block = contains(name, ".ln1.") || contains(name, ".ln1_post.");
        return {false, 0, attn_block ? c.dyt_alpha0_attn : c.dyt_alpha0_other};
    }
    if (ends_with(name, ".bias") || contains(name, ".b_")) return {false, 0, 0.0};
    if (ends_with(name, ".weight") || ends_with(name, "q_norm") || ends_with(name, "k_norm")) return {false, 0, 1.0};
    if (ends_with(name, "attn.W_O") || ends_with(name, "W_out")) return {true, sigma_out, 0};
    return {true, sigma, 0};  // W_Q, W_K, W_V, W_gate, W_in, W_router, sink_kv, embeddings, unembed
}

template <class T>
std::map<std::string, std::vector<double>> tensors_of(const model::Weights<T>& w) {
    std::map<std::string, std::vector<double>> out;
    model::visit_parameters(w, [&](const std::string& name, const auto& t) {
        std::vector<double> v(std::size_t(t.size()));
        for (Eigen::Index i = 0; i < t.size(); ++i) v[std::size_t(i)] = double(t.data()[i]);
        out[name] = v;
    });
    return out;
}
template <class T>
std::vector<std::string> names_of(const model::Weights<T>& w) {
    std::vector<std::string> out;
    model::visit_parameters(w, [&](const std::string& name, const auto&) { out.push_back(name); });
    return out;
}

// Every tensor against documented_rule: constants exactly, Gaussians to 5 standard errors (see the top).
template <class T>
void check_documented_rule(const Config& c, std::uint64_t seed, train::InitOptions o) {
    const auto w = train::init_weights<T>(c, seed, o);
    for (const auto& [name, v] : tensors_of(w)) {
        const Rule r = documented_rule(name, c, o.init_std, o.scale_residual);
        INFO(c.architecture << " seed " << seed << " σ " << o.init_std << " scale_residual " << o.scale_residual << ": " << name
                            << " (" << v.size() << " entries)");
        if (!r.gaussian) {
            for (double x : v) REQUIRE(x == double(T(r.value)));
            continue;
        }
        const double n = double(v.size());
        REQUIRE(n >= 64);  // every Gaussian tensor here has at least d_model = 64 entries
        long double sum = 0, sq = 0;
        for (double x : v) sum += x;
        const long double mean = sum / n;
        for (double x : v) sq += (x - mean) * (x - mean);
        const double sd = double(std::sqrt(sq / (n - 1)));
        CHECK(std::abs(double(mean)) <= 5 * r.sd / std::sqrt(n));
        CHECK(std::abs(sd - r.sd) <= 5 * r.sd / std::sqrt(2 * (n - 1)));
    }
}

}  // namespace

TEST_CASE("init: exactly the parameters the Config uses, with their shapes", "[train][init]") {
    CHECK(names_of(train::init_weights<float>(gpt2_like(), 1)) == gpt2_like_names());
    CHECK(names_of(train::init_weights<float>(dyt_moe(), 1)) == dyt_moe_names());
    CHECK(names_of(train::init_weights<float>(output_linear(), 1)) == output_linear_names());
    // shapes the header's switch-by-switch rules fix (PyTorch layout, out × in)
    const auto w = train::init_weights<float>(gpt2_like(), 1);
    CHECK((w.pos_embed.rows() == 32 && w.pos_embed.cols() == 64));
    CHECK((w.lm_head.rows() == 128 && w.lm_head.cols() == 64));
    CHECK((w.layers[0].wk.rows() == 32 && w.layers[0].wk.cols() == 64));     // kvH·d_h × d
    CHECK((w.layers[0].wo.rows() == 64 && w.layers[0].wo.cols() == 64));     // d × H·d_h
    CHECK((w.layers[0].sink_kv.rows() == 2 && w.layers[0].sink_kv.cols() == 32));
    CHECK((w.layers[0].w_attn_gate.rows() == 4 && w.layers[0].w_attn_gate.cols() == 64));  // per head: H × d
    CHECK((w.layers[0].w_down.rows() == 64 && w.layers[0].w_down.cols() == 96));
    const auto m = train::init_weights<float>(dyt_moe(), 1);
    CHECK(m.layers[1].b_attn_gate.size() == 64);  // static per channel: H·d_h
    CHECK(m.layers[1].q_norm.size() == 16);       // per head: d_h
    CHECK((m.layers[1].experts[2].w_down.rows() == 64 && m.layers[1].experts[2].w_down.cols() == 96));
    CHECK(m.final_norm.alpha.size() == 1);
    const auto o = train::init_weights<float>(output_linear(), 1);
    CHECK((o.layers[1].w_down.rows() == 64 && o.layers[1].w_down.cols() == 64));  // linear FFN: d × d
}

TEST_CASE("init: each tensor's mean and standard deviation follow the documented rule; constants exact",
          "[train][init][property]") {
    check_documented_rule<float>(gpt2_like(), 7, {});
    check_documented_rule<double>(dyt_moe(), 8, {});
    check_documented_rule<float>(output_linear(), 9, {});
    train::InitOptions wide;
    wide.init_std = 0.05;
    wide.scale_residual = false;  // then W_O and W_out are N(0, σ²) too
    check_documented_rule<double>(gpt2_like(), 10, wide);
    check_documented_rule<float>(dyt_moe(), 11, wide);
}

TEST_CASE("init: the same seed gives identical weights, another seed other weights", "[train][init]") {
    for (const Config& c : {gpt2_like(), dyt_moe(), output_linear()}) {
        const auto a = tensors_of(train::init_weights<float>(c, 42));
        const auto b = tensors_of(train::init_weights<float>(c, 42));
        const auto d = tensors_of(train::init_weights<float>(c, 43));
        REQUIRE(a.size() == b.size());
        REQUIRE(a.size() == d.size());
        for (const auto& [name, v] : a) {
            INFO(c.architecture << ": " << name);
            CHECK(b.at(name) == v);  // bit for bit
            const Rule r = documented_rule(name, c, 0.02, true);
            std::size_t equal = 0;
            for (std::size_t i = 0; i < v.size(); ++i) equal += d.at(name)[i] == v[i];
            // Gaussian entries of another seed coincide with probability ~0 (continuous draws rounded to
            // float: at most a handful by chance); constants are the same for every seed
            if (r.gaussian) CHECK(equal <= 2);
            else CHECK(equal == v.size());
        }
    }
}
