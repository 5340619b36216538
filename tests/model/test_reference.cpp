// Agreement with the peer: Hugging Face transformers run on the same checkpoints
// (fixtures by scripts/make_model_fixtures.py). Float32 throughout, as the issue asks:
//   logits max |Δ| ≤ 1e-3;  hidden states relative error ‖Δ‖/‖ref‖ ≤ 1e-4 at every captured layer;
//   attention pattern max |Δ| ≤ 1e-5.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <unistd.h>
#include <sinkscope/io/npy.hpp>
#include <sinkscope/model/forward.hpp>
#include <sinkscope/model/load.hpp>
#include <sinkscope/model/config_io.hpp>
#include <sinkscope/train/init.hpp>
#include <sinkscope/train/tape.hpp>

#include "test_paths.hpp"

using namespace sinkscope;
using namespace sinkscope::model;
namespace fs = std::filesystem;

namespace {
std::vector<std::int32_t> read_tokens(const std::string& path) {
    auto a = io::read_npy<std::int64_t>(path);
    return std::vector<std::int32_t>(a.data.begin(), a.data.end());
}

double rel_error(const float* got, const std::vector<float>& ref) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) { const double e = double(got[i]) - ref[i]; num += e * e; den += double(ref[i]) * ref[i]; }
    return std::sqrt(num / den);
}
double max_abs_diff(const float* got, const std::vector<float>& ref) {
    double m = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) m = std::max(m, std::abs(double(got[i]) - ref[i]));
    return m;
}

// Runs the model on the fixture's tokens with every resid_post and pattern captured, and compares each
// fixture file present in `dir` with ours.
void check_against_fixture(const LoadedModel<float>& m, const std::string& dir) {
    const auto tokens = read_tokens(dir + "/tokens.npy");
    HookSet<float> hooks;
    ActivationCache<float> cache;
    cache.attach(hooks, [](const std::string& n) {
        return n.find("hook_resid_post") != std::string::npos || n.find("hook_pattern") != std::string::npos;
    });
    const Mat<float> logits = forward(m.config, m.weights, tokens, &hooks);
    const std::int64_t T = std::int64_t(tokens.size()), V = m.config.vocab_size;
    REQUIRE(logits.rows() == T);

    int compared = 0;
    for (std::int64_t l = 0; l < m.config.n_layers; ++l) {
        const std::string f = dir + "/resid_post_L" + std::to_string(l) + ".npy";
        if (fs::exists(f)) {
            const auto ref = io::read_npy<float>(f);
            const auto& got = cache[hook_name("resid_post", l)];
            REQUIRE(got.data.size() == ref.data.size());
            const double e = rel_error(got.data.data(), ref.data);
            INFO("resid_post layer " << l << " relative error " << e);
            CHECK(e <= 1e-4);
            ++compared;
        }
        const std::string p = dir + "/pattern_L" + std::to_string(l) + ".npy";
        if (fs::exists(p)) {
            const auto ref = io::read_npy<float>(p);
            const auto& got = cache[hook_name("pattern", l)];
            REQUIRE(got.data.size() == ref.data.size());
            const double e = max_abs_diff(got.data.data(), ref.data);
            INFO("pattern layer " << l << " max |diff| " << e);
            CHECK(e <= 1e-5);
            ++compared;
        }
    }
    if (fs::exists(dir + "/logits.npy")) {
        const auto ref = io::read_npy<float>(dir + "/logits.npy");
        REQUIRE(std::int64_t(ref.data.size()) == T * V);
        const double e = max_abs_diff(logits.data(), ref.data);
        INFO("logits max |diff| " << e);
        CHECK(e <= 1e-3);
        ++compared;
    }
    if (fs::exists(dir + "/logits_cols.npy")) {
        // Every position, a fixed set of vocabulary columns (each position's argmax included) ...
        const auto cols = io::read_npy<std::int64_t>(dir + "/logits_cols_ids.npy").data;
        const auto ref = io::read_npy<float>(dir + "/logits_cols.npy").data;
        double e = 0;
        for (std::int64_t t = 0; t < T; ++t)
            for (std::size_t j = 0; j < cols.size(); ++j)
                e = std::max(e, std::abs(double(logits(t, cols[j])) - ref[t * cols.size() + j]));
        INFO("logits (sampled columns) max |diff| " << e);
        CHECK(e <= 1e-3);
        // ... the whole vocabulary through log-sum-exp per position, and every column of the last position.
        const auto lse = io::read_npy<float>(dir + "/logsumexp.npy").data;
        for (std::int64_t t = 0; t < T; ++t) {
            const double mx = logits.row(t).maxCoeff();
            const double ours = mx + std::log((logits.row(t).array().template cast<double>() - mx).exp().sum());
            CHECK(std::abs(ours - lse[t]) <= 1e-3);
        }
        const auto last = io::read_npy<float>(dir + "/logits_last.npy").data;
        const double el = max_abs_diff(logits.row(T - 1).data(), last);
        INFO("last-position logits max |diff| " << el);
        CHECK(el <= 1e-3);
        compared += 3;
    }
    CHECK(compared >= 3);
}
}  // namespace

TEST_CASE("stories260K GGUF agrees with Hugging Face transformers", "[reference][model]") {
    const auto m = load_model<float>(test::shared_model("stories260K.gguf"));
    CHECK(m.config.rope_layout == RopeLayout::interleaved);
    CHECK(m.config.n_kv_heads == 4);
    check_against_fixture(m, test::fixture("model/stories260K"));
}

TEST_CASE("SmolLM2-135M GGUF (Q4_1) agrees with Hugging Face transformers", "[reference][model]") {
    const std::string path = test::downloaded_model("SmolLM2-135M-Instruct.Q4_1.gguf");
    if (!fs::exists(path)) { WARN("skipped: " << path << " absent (scripts/fetch_model.sh fetches it)"); return; }
    const auto m = load_model<float>(path);
    CHECK(m.config.n_layers == 30);
    CHECK(m.config.d_model == 576);
    CHECK(m.config.rope_base == 100000.0);
    check_against_fixture(m, test::fixture("model/smollm2"));
}

TEST_CASE("random-weight safetensors models agree with Hugging Face transformers", "[reference][model]") {
    for (const char* kind : {"llama", "mistral", "qwen2", "qwen3", "gpt2", "gemma2", "gemma3", "phi3", "olmo2", "gpt_neox",
                             "mixtral", "olmoe", "llama31"}) {
        SECTION(kind) {
            const std::string dir = test::fixture(std::string("model/random_") + kind);
            const auto m = load_model<float>(dir);
            CHECK(m.config.architecture == (std::string(kind) == "llama31" ? std::string("llama") : std::string(kind)));
            check_against_fixture(m, dir);
        }
    }
}

// The agreement above can fail: each family's own mechanism, switched off, breaks it. A fixture that did
// not exercise a mechanism (a window longer than the sequence, a soft cap tanh never bends) would pass
// both ways; here it must not. Every mutation must move some logit by more than 10× the tolerance.
TEST_CASE("the new families' fixtures exercise their mechanisms", "[reference][model]") {
    struct Mutation { const char* kind; const char* what; std::function<void(Config&)> apply; };
    const std::vector<Mutation> mutations = {
        {"gemma2", "no attention soft cap", [](Config& c) { c.attn_softcap = 0; }},
        {"gemma2", "no final logit soft cap", [](Config& c) { c.logit_softcap = 0; }},
        {"gemma2", "every layer global", [](Config& c) { c.layer_windows.clear(); }},
        {"gemma2", "1/sqrt(d_h) instead of query_pre_attn_scalar", [](Config& c) { c.attn_scale = 0; }},
        {"gemma2", "no embedding scale", [](Config& c) { c.embed_scale = 1; }},
        {"gemma2", "pre-norm instead of sandwich", [](Config& c) { c.norm_placement = NormPlacement::pre; }},
        {"gemma3", "one RoPE base for every layer", [](Config& c) { c.rope_base_sliding = 0; }},
        {"gemma3", "no QK-norm", [](Config& c) { c.qk_norm = false; }},
        {"phi3", "full rotary", [](Config& c) { c.rotary_dim = 0; }},
        {"olmo2", "no QK-norm", [](Config& c) { c.qk_norm = false; }},
        {"gpt_neox", "sequential residual", [](Config& c) { c.parallel_residual = false; }},
        {"gpt_neox", "full rotary", [](Config& c) { c.rotary_dim = 0; }},
        {"mixtral", "top-1 instead of top-2", [](Config& c) { c.n_experts_used = 1; }},
        {"mixtral", "no top-k renormalisation", [](Config& c) { c.moe_normalize_topk = false; }},
        {"olmoe", "top-1 instead of top-2", [](Config& c) { c.n_experts_used = 1; }},
        {"olmoe", "top-k renormalised (norm_topk_prob)", [](Config& c) { c.moe_normalize_topk = true; }},
        {"olmoe", "no QK-norm", [](Config& c) { c.qk_norm = false; }},
        {"llama31", "no RoPE frequency divisors", [](Config& c) { c.rope_freq_divisors.clear(); }},
    };
    for (const auto& m : mutations) {
        const std::string dir = test::fixture(std::string("model/random_") + m.kind);
        auto model = load_model<float>(dir);
        m.apply(model.config);
        const auto tokens = read_tokens(dir + "/tokens.npy");
        const Mat<float> logits = forward(model.config, model.weights, tokens);
        const auto ref = io::read_npy<float>(dir + "/logits.npy");
        const double e = max_abs_diff(logits.data(), ref.data);
        INFO(m.kind << ", " << m.what << ": logits max |diff| " << e);
        CHECK(e > 1e-2);
    }
}

TEST_CASE("family switches are named in the config and refused by the CUDA path", "[model]") {
    const auto gemma = load_model<float>(test::fixture("model/random_gemma2"));
    CHECK(gemma.config.layer_windows == std::vector<std::int64_t>{8, 0, 8, 0});
    CHECK(gemma.config.norm_placement == NormPlacement::sandwich);
    CHECK(gemma.config.cpu_only_switches().find("attn_softcap") != std::string::npos);
    const auto neox = load_model<float>(test::fixture("model/random_gpt_neox"));
    CHECK(neox.config.parallel_residual);
    CHECK(neox.config.rotary_dim == 4);
    // A parallel block has no resid_mid; an output-placement block (OLMo-2) has no pre-norm hook.
    const auto names = hook_names(neox.config);
    CHECK(std::find(names.begin(), names.end(), "blocks.0.hook_resid_mid") == names.end());
    const auto olmo = load_model<float>(test::fixture("model/random_olmo2"));
    const auto onames = hook_names(olmo.config);
    CHECK(std::find(onames.begin(), onames.end(), "blocks.0.ln1.hook_normalized") == onames.end());
    // Every name the forward offers is in the list, and nothing else (the list is the forward's contract).
    for (const auto* m : {&gemma, &neox, &olmo}) {
        HookSet<float> hooks;
        std::vector<std::string> seen;
        hooks.add([](const std::string&) { return true; }, [&](const std::string& n, ActivationRef<float>&) { seen.push_back(n); });
        forward(m->config, m->weights, std::vector<std::int32_t>{1, 2, 3, 4}, &hooks);
        CHECK(seen == hook_names(m->config));
    }
}

// ---- Mixture of experts (Mixtral, OLMoE) ----

namespace {
// Every MoE hook of every layer captured from one forward over the fixture's tokens.
ActivationCache<float> moe_capture(const LoadedModel<float>& m, const std::vector<std::int32_t>& tokens) {
    HookSet<float> hooks;
    ActivationCache<float> cache;
    cache.attach(hooks, [](const std::string& n) { return n.find("hook_router_logits") != std::string::npos ||
                                                          n.find("hook_expert_weights") != std::string::npos ||
                                                          n.find("hook_chosen_experts") != std::string::npos; });
    forward(m.config, m.weights, tokens, &hooks);
    return cache;
}
}  // namespace

TEST_CASE("mixture-of-experts fixtures route every token to Hugging Face's experts", "[reference][model]") {
    for (const char* kind : {"mixtral", "olmoe"}) {
        SECTION(kind) {
            const std::string dir = test::fixture(std::string("model/random_") + kind);
            const auto m = load_model<float>(dir);
            const Config& c = m.config;
            REQUIRE(c.ffn == FfnKind::moe);
            CHECK(c.n_experts == (std::string(kind) == "mixtral" ? 4 : 8));
            CHECK(c.n_experts_used == 2);
            CHECK(c.moe_normalize_topk == (std::string(kind) == "mixtral"));  // OLMoE: norm_topk_prob = false
            if (std::string(kind) == "olmoe") CHECK((c.qk_norm && c.qk_norm_scope == QkNormScope::projection));
            const auto tokens = read_tokens(dir + "/tokens.npy");
            const auto cache = moe_capture(m, tokens);
            const std::int64_t T = std::int64_t(tokens.size()), E = c.n_experts, k = c.n_experts_used;
            for (std::int64_t l = 0; l < c.n_layers; ++l) {
                const auto& logits = cache[hook_name("router_logits", l)];
                const auto& weights = cache[hook_name("expert_weights", l)];
                const auto& chosen = cache[hook_name("chosen_experts", l)];
                CHECK(logits.shape == std::vector<std::int64_t>{T, E});
                CHECK(weights.shape == std::vector<std::int64_t>{T, k});
                CHECK(chosen.shape == std::vector<std::int64_t>{T, k});
                // torch.topk's experts, most probable first, at every token.
                const auto ref = io::read_npy<std::int32_t>(dir + "/chosen_L" + std::to_string(l) + ".npy").data;
                REQUIRE(std::int64_t(ref.size()) == T * k);
                int mismatches = 0;
                std::set<std::vector<int>> sets;
                for (std::int64_t i = 0; i < T * k; ++i) mismatches += chosen.data[std::size_t(i)] != float(ref[std::size_t(i)]);
                INFO(kind << " layer " << l << ": " << mismatches << " chosen experts differ from Hugging Face's");
                CHECK(mismatches == 0);
                for (std::int64_t t = 0; t < T; ++t) {
                    // The weights are the chosen experts' softmax probabilities (renormalised or not).
                    const float* s = logits.data.data() + t * E;
                    const double mx = *std::max_element(s, s + E);
                    double z = 0, chosen_p = 0;
                    for (std::int64_t e = 0; e < E; ++e) z += std::exp(double(s[e]) - mx);
                    for (std::int64_t i = 0; i < k; ++i) chosen_p += std::exp(double(s[std::size_t(chosen.data[std::size_t(t * k + i)])]) - mx) / z;
                    double sum = 0;
                    std::vector<int> set;
                    for (std::int64_t i = 0; i < k; ++i) {
                        const auto e = std::size_t(chosen.data[std::size_t(t * k + i)]);
                        const double p = std::exp(double(s[e]) - mx) / z;
                        CHECK(weights.data[std::size_t(t * k + i)] == Approx(c.moe_normalize_topk ? p / chosen_p : p).epsilon(1e-5));
                        sum += weights.data[std::size_t(t * k + i)];
                        set.push_back(int(e));
                    }
                    if (c.moe_normalize_topk) CHECK(sum == Approx(1.0).epsilon(1e-6));
                    else CHECK(sum < 1.0);
                    std::sort(set.begin(), set.end());
                    sets.insert(set);
                }
                CHECK(sets.size() > 1);  // the fixture routes different tokens to different experts
            }
        }
    }
}

namespace {
// A minimal safetensors writer (F32 only), for rewriting a fixture into another tensor layout.
void write_f32_safetensors(const std::string& path, const std::map<std::string, std::pair<std::vector<std::int64_t>, std::vector<float>>>& tensors) {
    nlohmann::json header = nlohmann::json::object();
    std::uint64_t offset = 0;
    for (const auto& [name, t] : tensors) {
        const std::uint64_t bytes = t.second.size() * sizeof(float);
        header[name] = {{"dtype", "F32"}, {"shape", t.first}, {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    std::string h = header.dump();
    while (h.size() % 8) h += ' ';
    std::ofstream out(path, std::ios::binary);
    const std::uint64_t n = h.size();
    out.write(reinterpret_cast<const char*>(&n), 8);  // little-endian length (x86, aarch64)
    out.write(h.data(), std::streamsize(h.size()));
    for (const auto& [name, t] : tensors) out.write(reinterpret_cast<const char*>(t.second.data()), std::streamsize(t.second.size() * sizeof(float)));
}
}  // namespace

TEST_CASE("Mixtral with experts fused into one tensor (transformers 5 layout) loads as the per-expert checkpoint", "[model]") {
    // save_pretrained writes block_sparse_moe.experts.{e}.w1/w2/w3; transformers 5 holds the same weights as
    // mlp.gate.weight, mlp.experts.gate_up_proj (E, 2·d_ff, d) and mlp.experts.down_proj (E, d, d_ff).
    const std::string src = test::fixture("model/random_mixtral");
    const auto per_expert = load_model<float>(src);
    const Config& c = per_expert.config;
    const std::int64_t E = c.n_experts, f = c.d_ff, d = c.d_model;
    io::SafetensorsCheckpoint ck(src);
    std::map<std::string, std::pair<std::vector<std::int64_t>, std::vector<float>>> out;
    for (const std::string& name : ck.names())
        if (name.find("block_sparse_moe") == std::string::npos) out[name] = {ck.shape(name), ck.load<float>(name)};
    for (std::int64_t l = 0; l < c.n_layers; ++l) {
        const std::string L = "model.layers." + std::to_string(l) + ".";
        out[L + "mlp.gate.weight"] = {{E, d}, ck.load<float>(L + "block_sparse_moe.gate.weight")};
        std::vector<float> gate_up, down;
        for (std::int64_t e = 0; e < E; ++e) {
            const std::string x = L + "block_sparse_moe.experts." + std::to_string(e) + ".";
            for (const char* w : {"w1", "w3"}) { const auto v = ck.load<float>(x + w + ".weight"); gate_up.insert(gate_up.end(), v.begin(), v.end()); }
            const auto v = ck.load<float>(x + "w2.weight");
            down.insert(down.end(), v.begin(), v.end());
        }
        out[L + "mlp.experts.gate_up_proj"] = {{E, 2 * f, d}, gate_up};
        out[L + "mlp.experts.down_proj"] = {{E, d, f}, down};
    }
    const fs::path dir = fs::temp_directory_path() / ("sinkscope_fused_mixtral_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    fs::copy_file(src + "/config.json", dir / "config.json", fs::copy_options::overwrite_existing);
    write_f32_safetensors((dir / "model.safetensors").string(), out);
    const auto fused = load_model<float>(dir.string());
    fs::remove_all(dir);
    std::map<std::string, std::vector<float>> a, b;
    visit_parameters(per_expert.weights, [&](const std::string& n, const auto& t) { a[n].assign(t.data(), t.data() + t.size()); });
    visit_parameters(fused.weights, [&](const std::string& n, const auto& t) { b[n].assign(t.data(), t.data() + t.size()); });
    CHECK(a.count("blocks.2.mlp.experts.3.W_out") == 1);
    CHECK(a.size() == b.size());
    CHECK(a == b);
}

TEST_CASE("a mixture-of-experts forward offers exactly its hooks, and hooked router logits steer the routing", "[model]") {
    for (const char* kind : {"mixtral", "olmoe"}) {
        const auto m = load_model<float>(test::fixture(std::string("model/random_") + kind));
        HookSet<float> hooks;
        std::vector<std::string> seen;
        hooks.add([](const std::string&) { return true; }, [&](const std::string& n, ActivationRef<float>&) { seen.push_back(n); });
        forward(m.config, m.weights, std::vector<std::int32_t>{1, 2, 3, 4}, &hooks);
        CHECK(seen == hook_names(m.config));
        const auto names = hook_names(m.config);
        CHECK(std::find(names.begin(), names.end(), "blocks.1.mlp.hook_chosen_experts") != names.end());
        CHECK(std::find(names.begin(), names.end(), "blocks.1.mlp.hook_pre") == names.end());  // per-expert FFNs have none
    }
    CHECK(hook_name("router_logits", 2) == "blocks.2.mlp.hook_router_logits");
    CHECK(hook_name("expert_weights", 0) == "blocks.0.mlp.hook_expert_weights");
    CHECK(hook_name("chosen_experts", 1) == "blocks.1.mlp.hook_chosen_experts");

    // OLMoE fixture, 8 experts: the expert chosen most often in layer 1, banned with a −inf router logit at
    // every layer, is then chosen nowhere (the hook runs before the top-k).
    const std::string dir = test::fixture("model/random_olmoe");
    const auto m = load_model<float>(dir);
    const auto tokens = read_tokens(dir + "/tokens.npy");
    const std::int64_t E = m.config.n_experts;
    const auto clean = moe_capture(m, tokens);
    std::vector<int> count(std::size_t(E), 0);
    for (float e : clean[hook_name("chosen_experts", 1)].data) ++count[std::size_t(e)];
    const int banned = int(std::max_element(count.begin(), count.end()) - count.begin());
    REQUIRE(count[std::size_t(banned)] > 0);
    HookSet<float> hooks;
    hooks.add([](const std::string& n) { return n.find("hook_router_logits") != std::string::npos; },
              [&](const std::string&, ActivationRef<float>& x) {
                  for (std::int64_t t = 0; t < x.shape[0]; ++t) x.data[t * E + banned] = -std::numeric_limits<float>::infinity();
              });
    ActivationCache<float> cache;
    cache.attach(hooks, [](const std::string& n) { return n.find("hook_chosen_experts") != std::string::npos ||
                                                          n.find("hook_expert_weights") != std::string::npos; });
    const Mat<float> steered = forward(m.config, m.weights, tokens, &hooks);
    for (std::int64_t l = 0; l < m.config.n_layers; ++l) {
        const auto& chosen = cache[hook_name("chosen_experts", l)].data;
        INFO("layer " << l << ", banned expert " << banned);
        CHECK(std::count(chosen.begin(), chosen.end(), float(banned)) == 0);
        for (float w : cache[hook_name("expert_weights", l)].data) CHECK(std::isfinite(w));
    }
    const Mat<float> logits = forward(m.config, m.weights, tokens);
    CHECK((steered - logits).cwiseAbs().maxCoeff() > 1e-3);
    CHECK(steered.allFinite());

    // Rewritten mixing weights are used: all zero → the FFN adds nothing.
    HookSet<float> zero;
    zero.add("blocks.0.mlp.hook_expert_weights", [](const std::string&, ActivationRef<float>& x) { std::fill(x.data, x.data + x.size(), 0.f); });
    ActivationCache<float> out;
    out.attach(zero, std::vector<std::string>{"blocks.0.hook_mlp_out"});
    forward(m.config, m.weights, tokens, &zero);
    const auto& mlp_out = out["blocks.0.hook_mlp_out"].data;
    CHECK(*std::max_element(mlp_out.begin(), mlp_out.end()) == 0.f);
    CHECK(*std::min_element(mlp_out.begin(), mlp_out.end()) == 0.f);
    // Rewritten expert indices must name experts.
    HookSet<float> bad;
    bad.add("blocks.0.mlp.hook_chosen_experts", [E](const std::string&, ActivationRef<float>& x) { x.data[0] = float(E); });
    CHECK_THROWS_AS(forward(m.config, m.weights, tokens, &bad), Error);
}

TEST_CASE("mixture-of-experts configs: validation, ties, JSON and fresh weights", "[model]") {
    const auto m = load_model<float>(test::fixture("model/random_mixtral"));
    const Config& c = m.config;
    CHECK(c.cpu_only_switches().find("ffn = moe") != std::string::npos);
    CHECK(c.describe().find("experts=2/4") != std::string::npos);
    auto message = [](Config x) {
        try { x.validate(); } catch (const Error& e) { return std::string(e.what()); }
        return std::string();
    };
    Config too_many = c; too_many.n_experts_used = 5;
    CHECK(message(too_many).find("n_experts_used") != std::string::npos);
    Config none = c; none.n_experts = 0;
    CHECK(message(none).find("n_experts must be >= 1") != std::string::npos);
    Config zero_k = c; zero_k.n_experts_used = 0;
    CHECK(message(zero_k).find("n_experts_used") != std::string::npos);

    // Ties go to the lower expert index (torch.topk's choice is unspecified among equals).
    Mat<float> tied(2, 4), w, chosen;
    tied << 1, 1, 1, 1,
            0, 2, 0, 2;
    moe_router_forward(w, chosen, tied, 2, true);
    CHECK(chosen(0, 0) == 0.f); CHECK(chosen(0, 1) == 1.f);
    CHECK(chosen(1, 0) == 1.f); CHECK(chosen(1, 1) == 3.f);
    CHECK(w(0, 0) == Approx(0.5)); CHECK(w(1, 1) == Approx(0.5));
    moe_router_forward(w, chosen, tied, 2, false);
    CHECK(w(0, 0) == Approx(0.25));

    const Config back = model::config_from_json(model::config_to_json(c));
    CHECK(back.ffn == FfnKind::moe);
    CHECK(back.n_experts == 4);
    CHECK(back.n_experts_used == 2);
    CHECK(back.moe_normalize_topk);

    // Fresh weights (train::random_like's init) have the loaded model's parameters, name for name.
    const Weights<float> fresh = train::init_weights<float>(c, 7);
    std::vector<std::string> a, b;
    visit_parameters(m.weights, [&](const std::string& n, const auto&) { a.push_back(n); });
    visit_parameters(fresh, [&](const std::string& n, const auto&) { b.push_back(n); });
    CHECK(a == b);
    CHECK(parameter_count(fresh) == parameter_count(m.weights));
    const std::vector<std::int32_t> tokens{5, 17, 200, 3, 99, 42, 7, 1};
    CHECK(forward(c, fresh, tokens).allFinite());
    // The grouped forward (one GEMM per expert over its tokens) equals the naive per-token sum
    // out_t = Σ_i w_ti · W_down,e (silu(W_gate,e x_t) ⊙ W_up,e x_t), e = chosen_ti.
    {
        HookSet<float> hooks;
        ActivationCache<float> cache;
        cache.attach(hooks, std::vector<std::string>{"blocks.1.ln2.hook_normalized", "blocks.1.mlp.hook_expert_weights",
                                                     "blocks.1.mlp.hook_chosen_experts", "blocks.1.hook_mlp_out"});
        forward(c, m.weights, tokens, &hooks);
        const auto& xn = cache["blocks.1.ln2.hook_normalized"].data;
        const auto& wt = cache["blocks.1.mlp.hook_expert_weights"].data;
        const auto& ch = cache["blocks.1.mlp.hook_chosen_experts"].data;
        const auto& got = cache["blocks.1.hook_mlp_out"].data;
        const std::int64_t k = c.n_experts_used, dm = c.d_model;
        double worst = 0;
        for (std::size_t t = 0; t < tokens.size(); ++t) {
            const Eigen::Map<const Vec<float>> x(xn.data() + t * std::size_t(dm), dm);
            Vec<float> sum = Vec<float>::Zero(dm);
            for (std::int64_t i = 0; i < k; ++i) {
                const auto& e = m.weights.layers[1].experts[std::size_t(ch[t * std::size_t(k) + std::size_t(i)])];
                const Vec<float> g = e.w_gate * x, u = e.w_up * x;
                const Vec<float> h = g.unaryExpr([](float v) { return silu(v); }).cwiseProduct(u);
                sum += wt[t * std::size_t(k) + std::size_t(i)] * (e.w_down * h);
            }
            for (std::int64_t j = 0; j < dm; ++j) worst = std::max(worst, double(std::abs(sum(j) - got[t * std::size_t(dm) + std::size_t(j)])));
        }
        INFO("grouped vs per-token MoE max |diff| " << worst);
        CHECK(worst < 1e-5);
    }
    // Double precision agrees with float (cast_weights carries the experts).
    const Mat<double> d = forward(c, cast_weights<double>(m.weights), tokens);
    const Mat<float> f = forward(c, m.weights, tokens);
    CHECK((d.cast<float>() - f).cwiseAbs().maxCoeff() < 1e-4);
}

TEST_CASE("GGUF files written by llama.cpp's converter agree with Hugging Face transformers", "[reference][model]") {
    // gguf_{kind}/model.gguf is a random model converted by llama.cpp's own convert_hf_to_gguf.py (tensor
    // names, fused and stacked tensors, the Gemma norm shift and the metadata are the peer's, not ours); the
    // reference is transformers on the same weights, at the tolerances of the safetensors fixtures.
    struct Expect { const char* kind; const char* family; };
    for (const Expect x : {Expect{"gemma2", "gemma2"}, Expect{"gemma3", "gemma3"}, Expect{"phi3", "phi3"}, Expect{"olmo2", "olmo2"},
                           Expect{"gpt_neox", "gpt_neox"}, Expect{"mixtral", "llama"}, Expect{"olmoe", "olmoe"},
                           Expect{"llama31", "llama"}}) {
        SECTION(x.kind) {
            const std::string dir = test::fixture(std::string("model/gguf_") + x.kind);
            const auto m = load_model<float>(dir + "/model.gguf");
            const Config& c = m.config;
            CHECK(m.format == "gguf");
            CHECK(c.architecture == x.family);
            // Each file's mechanism was read from the peer's metadata, not defaulted.
            const std::string kind = x.kind;
            if (kind == "gemma2") {
                CHECK(c.attn_softcap == 5.0); CHECK(c.logit_softcap == 3.0);
                CHECK(c.layer_windows == std::vector<std::int64_t>{8, 0, 8, 0});
                CHECK(c.norm_placement == NormPlacement::sandwich);
            }
            if (kind == "gemma3") {
                CHECK(c.layer_windows == std::vector<std::int64_t>{8, 8, 8, 8, 8, 0});
                CHECK(c.rope_base == 1e6); CHECK(c.rope_base_sliding == 10000.0);
                CHECK((c.qk_norm && c.qk_norm_scope == QkNormScope::head));
            }
            if (kind == "phi3") CHECK(c.rotary_dim == 6);
            if (kind == "olmo2") CHECK((c.norm_placement == NormPlacement::output && c.qk_norm_scope == QkNormScope::projection));
            if (kind == "gpt_neox") CHECK((c.parallel_residual && c.rotary_dim == 4 && c.norm == NormKind::layernorm));
            if (kind == "llama31") CHECK((c.rope_freq_divisors.size() == 8 && c.rope_layout == RopeLayout::interleaved));
            if (kind == "mixtral" || kind == "olmoe") {
                CHECK(c.ffn == FfnKind::moe);
                CHECK(c.moe_normalize_topk == (kind == "mixtral"));
                const auto tokens = read_tokens(dir + "/tokens.npy");
                const auto cache = moe_capture(m, tokens);
                for (std::int64_t l = 0; l < c.n_layers; ++l) {
                    const auto ref = io::read_npy<std::int32_t>(dir + "/chosen_L" + std::to_string(l) + ".npy").data;
                    const auto& chosen = cache[hook_name("chosen_experts", l)].data;
                    REQUIRE(chosen.size() == ref.size());
                    int mismatches = 0;
                    for (std::size_t i = 0; i < ref.size(); ++i) mismatches += chosen[i] != float(ref[i]);
                    INFO(kind << " layer " << l << ": " << mismatches << " chosen experts differ from Hugging Face's");
                    CHECK(mismatches == 0);
                }
            }
            check_against_fixture(m, dir);
        }
    }
}

// ---- Llama 3.1's RoPE scaling (rope_type "llama3"; GGUF's rope_freqs.weight) ----

namespace {
// The llama3 divisor of frequency i, by the formula in double (Hugging Face's _compute_llama3_parameters,
// llama.cpp's converter): the fixtures' base 5e5, r = 16, factor 8, low 1, high 4, orig 64. `regime`:
// 0 kept (wavelength < orig/high), 2 divided (> orig/low), 1 smoothed in between.
double llama3_divisor(int i, int* regime) {
    const double base = 500000.0, r = 16, factor = 8, low = 1, high = 4, orig = 64;
    const double inv = std::pow(base, -2.0 * i / r), wavelen = 2 * 3.14159265358979323846 / inv;
    if (wavelen < orig / high) { *regime = 0; return 1.0; }
    if (wavelen > orig / low) { *regime = 2; return factor; }
    *regime = 1;
    const double s = (orig / wavelen - low) / (high - low);
    return 1.0 / ((1 - s) / factor + s);
}
}  // namespace

TEST_CASE("Llama 3.1's RoPE divisors follow the llama3 formula and rotate by Hugging Face's frequencies", "[reference][model]") {
    const std::string hf_dir = test::fixture("model/random_llama31"), gguf_dir = test::fixture("model/gguf_llama31");
    const auto hf = load_model<float>(hf_dir);
    const auto gg = load_model<float>(gguf_dir + "/model.gguf");
    REQUIRE(hf.config.rope_freq_divisors.size() == 8);
    REQUIRE(gg.config.rope_freq_divisors.size() == 8);
    CHECK(hf.config.rope_base == 500000.0);
    CHECK(gg.config.rope_base == 500000.0);
    int seen[3] = {0, 0, 0};
    for (int i = 0; i < 8; ++i) {
        int regime = -1;
        const double want = llama3_divisor(i, &regime);
        ++seen[regime];
        // Both store float32-rounded divisors: the HF loader's reproduce transformers' float32 inv_freq, the
        // converter writes F32. The kept and divided regimes are exact.
        INFO("frequency " << i << " regime " << regime << ": want " << want << ", HF " << hf.config.rope_freq_divisors[i]
                          << ", GGUF " << gg.config.rope_freq_divisors[i]);
        CHECK(std::abs(hf.config.rope_freq_divisors[i] / want - 1) <= 1e-6);
        CHECK(std::abs(gg.config.rope_freq_divisors[i] / want - 1) <= 1e-6);
        if (regime != 1) { CHECK(hf.config.rope_freq_divisors[i] == want); CHECK(gg.config.rope_freq_divisors[i] == want); }
    }
    // The fixture exercises every regime.
    CHECK(seen[0] >= 1); CHECK(seen[1] >= 1); CHECK(seen[2] >= 1);

    // rope_table<float> rotates by transformers' float32 inv_freq (inv_freq.npy) bit for bit: θ = float(t) · inv_i.
    const auto inv = io::read_npy<float>(hf_dir + "/inv_freq.npy").data;
    REQUIRE(inv.size() == 8);
    const RopeTable<float>& tab = rope_table<float>(40, 16, hf.config.rope_base, 0, hf.config.rope_freq_divisors);
    int differ = 0;
    for (int t = 0; t < 40; ++t)
        for (int i = 0; i < 8; ++i) {
            const double theta = double(float(t) * inv[std::size_t(i)]);
            differ += tab.cos[std::size_t(t * 8 + i)] != float(std::cos(theta)) || tab.sin[std::size_t(t * 8 + i)] != float(std::sin(theta));
        }
    CHECK(differ == 0);

    // The fixtures need the divisors: without them every path misses Hugging Face's logits by far more than
    // the 1e-3 tolerance.
    for (const auto* m : {&hf, &gg}) {
        Config c = m->config;
        c.rope_freq_divisors.clear();
        const std::string dir = m == &hf ? hf_dir : gguf_dir;
        const Mat<float> logits = forward(c, m->weights, read_tokens(dir + "/tokens.npy"));
        const double e = max_abs_diff(logits.data(), io::read_npy<float>(dir + "/logits.npy").data);
        INFO(dir << " without rope_freq_divisors: logits max |diff| " << e);
        CHECK(e > 1e-2);
    }

    // transformers < 5 wrote the same parameters as rope_scaling, with rope_theta at the top level.
    {
        const fs::path dir = fs::temp_directory_path() / ("sinkscope_llama31_v4_" + std::to_string(::getpid()));
        fs::remove_all(dir);
        fs::create_directories(dir);
        fs::copy_file(hf_dir + "/model.safetensors", dir / "model.safetensors");
        std::ifstream in(hf_dir + "/config.json");
        nlohmann::json j = nlohmann::json::parse(in);
        j["rope_scaling"] = j["rope_parameters"];
        j["rope_theta"] = j["rope_scaling"]["rope_theta"];
        j["rope_scaling"].erase("rope_theta");
        j.erase("rope_parameters");
        std::ofstream(dir / "config.json") << j.dump();
        const auto old = load_model<float>(dir.string());
        CHECK(old.config.rope_base == 500000.0);
        CHECK(old.config.rope_freq_divisors == hf.config.rope_freq_divisors);
        fs::remove_all(dir);
    }

    // The divisors are a CPU-only switch (CUDA refuses them), kept by config JSON, and validated.
    const Config& c = hf.config;
    CHECK(c.cpu_only_switches().find("rope_freq_divisors") != std::string::npos);
    CHECK(model::config_from_json(model::config_to_json(c)).rope_freq_divisors == c.rope_freq_divisors);
    auto message = [](Config x) {
        try { x.validate(); } catch (const Error& e) { return std::string(e.what()); }
        return std::string();
    };
    // The CPU backward differentiates them (tests/train/test_model_backward.cpp checks the gradients).
    CHECK(c.backward_missing_switches().empty());
    CHECK_NOTHROW(train::TapeRecorder<float>(c));
    Config short_list = c; short_list.rope_freq_divisors.pop_back();
    CHECK(message(short_list).find("rope_freq_divisors has 7 entries") != std::string::npos);
    Config zero = c; zero.rope_freq_divisors[3] = 0;
    CHECK(message(zero).find("rope_freq_divisors") != std::string::npos);
}

TEST_CASE("a GGUF with LongRoPE frequency factors is refused, naming the tensor", "[model]") {
    // Phi-3's LongRoPE conversions store two sets of frequency factors (long and short contexts, switched by
    // the sequence length); rotating without them would be silently wrong.
    const std::string path = test::fixture("model/phi3_longrope.gguf");
    try {
        load_model<float>(path);
        FAIL("a GGUF with rope_factors_long.weight loaded");
    } catch (const Error& e) {
        const std::string what = e.what();
        INFO(what);
        CHECK(what.find("rope_factors_long.weight") != std::string::npos);
        CHECK(what.find("phi3_longrope.gguf") != std::string::npos);
        CHECK(what.find("LongRoPE frequency factors") != std::string::npos);
    }
}

TEST_CASE("a rope_freqs.weight of the wrong length or type is an Error naming the file and the tensor", "[model]") {
    for (const char* name : {"llama_rope_freqs_len3.gguf", "llama_rope_freqs_f16.gguf"}) {
        SECTION(name) {
            const std::string path = test::fixture(std::string("model/") + name);
            try {
                load_model<float>(path);
                FAIL(name << " loaded");
            } catch (const Error& e) {
                const std::string what = e.what();
                INFO(what);
                CHECK(what.find("rope_freqs.weight") != std::string::npos);
                CHECK(what.find(name) != std::string::npos);
                CHECK(what.find("must be F32 [2]") != std::string::npos);
            }
        }
    }
}

TEST_CASE("a config value of the wrong type is an Error naming the key and the file", "[model]") {
    const fs::path dir = fs::temp_directory_path() / ("sinkscope_badtype_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string src = test::fixture("model/random_llama");
    fs::copy_file(src + "/model.safetensors", dir / "model.safetensors");
    std::ifstream in(src + "/config.json");
    nlohmann::json j = nlohmann::json::parse(in);
    j["hidden_size"] = "48";  // a string where a number belongs
    std::ofstream(dir / "config.json") << j.dump();
    try {
        load_model<float>(dir.string());
        FAIL("a config with a string hidden_size loaded");
    } catch (const Error& e) {
        const std::string what = e.what();
        INFO(what);
        CHECK(what.find("'hidden_size'") != std::string::npos);
        CHECK(what.find("string") != std::string::npos);
        CHECK(what.find("config.json") != std::string::npos);
    }
    fs::remove_all(dir);
}
