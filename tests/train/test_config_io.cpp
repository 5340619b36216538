// model/config_io.hpp: model::Config → JSON → Config is the identity when every field is away from its
// default (so a field that the writer or the reader forgets fails the test), through the JSON text too;
// every enum name round-trips; and the errors config_io.hpp promises (unknown key, unknown enum name,
// wrong types, not an object) name the key.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <sinkscope/model/config.hpp>
#include <sinkscope/model/config_io.hpp>
#include <sinkscope/train/config_io.hpp>  // the deprecated names, checked below

using namespace sinkscope;
using model::Config;

namespace {

// Every data member of Config, by a structured binding: it stops compiling when Config gains or loses a
// field, so a new field cannot be left out of this test (nor, through it, out of config_io.hpp).
auto config_fields(const Config& c) {
    const auto& [architecture, n_layers, d_model, n_heads, n_kv_heads, head_dim, d_ff, vocab_size, context_length, norm,
                 norm_placement, norm_eps, qk_norm, qk_norm_scope, dyt_alpha0_attn, dyt_alpha0_other, ffn, activation,
                 n_experts, n_experts_used, moe_normalize_topk, attention, gate, sliding_window, layer_windows,
                 attn_scale, attn_softcap, parallel_residual, force_sink_channels, positions, rope_layout, rope_base,
                 rope_base_sliding, rotary_dim, rope_freq_divisors, embed_scale, logit_softcap, qkv_bias, out_bias,
                 mlp_bias, norm_bias, tied_embeddings] = c;
    return std::tie(architecture, n_layers, d_model, n_heads, n_kv_heads, head_dim, d_ff, vocab_size, context_length,
                    norm, norm_placement, norm_eps, qk_norm, qk_norm_scope, dyt_alpha0_attn, dyt_alpha0_other, ffn,
                    activation, n_experts, n_experts_used, moe_normalize_topk, attention, gate, sliding_window,
                    layer_windows, attn_scale, attn_softcap, parallel_residual, force_sink_channels, positions,
                    rope_layout, rope_base, rope_base_sliding, rotary_dim, rope_freq_divisors, embed_scale,
                    logit_softcap, qkv_bias, out_bias, mlp_bias, norm_bias, tied_embeddings);
}

// The same names in the same (declaration) order, for messages; also the JSON keys config_io.hpp
// promises ("field names as in config.hpp").
constexpr std::array<const char*, 42> field_names{
    "architecture", "n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff", "vocab_size", "context_length",
    "norm", "norm_placement", "norm_eps", "qk_norm", "qk_norm_scope", "dyt_alpha0_attn", "dyt_alpha0_other", "ffn",
    "activation", "n_experts", "n_experts_used", "moe_normalize_topk", "attention", "gate", "sliding_window",
    "layer_windows", "attn_scale", "attn_softcap", "parallel_residual", "force_sink_channels", "positions",
    "rope_layout", "rope_base", "rope_base_sliding", "rotary_dim", "rope_freq_divisors", "embed_scale",
    "logit_softcap", "qkv_bias", "out_bias", "mlp_bias", "norm_bias", "tied_embeddings"};
static_assert(std::tuple_size_v<decltype(config_fields(Config{}))> == field_names.size());

// The names of the fields in which a and b differ (exact comparison, doubles included).
template <std::size_t... I>
std::vector<std::string> differing_fields(const Config& a, const Config& b, std::index_sequence<I...>) {
    const auto fa = config_fields(a), fb = config_fields(b);
    std::vector<std::string> out;
    ((std::get<I>(fa) == std::get<I>(fb) ? void() : out.push_back(field_names[I])), ...);
    return out;
}
std::vector<std::string> differing_fields(const Config& a, const Config& b) {
    return differing_fields(a, b, std::make_index_sequence<field_names.size()>{});
}

// Every field away from its default, doubles that need all 17 digits, vectors of several entries. The
// combination need not be a valid model (config_io neither validates nor needs to).
Config all_fields_set() {
    using namespace model;
    Config c;
    c.architecture = "gpt2";
    c.n_layers = 3; c.d_model = 48; c.n_heads = 6; c.n_kv_heads = 3; c.head_dim = 8; c.d_ff = 100;
    c.vocab_size = 50257; c.context_length = 1024;
    c.norm = NormKind::dynamic_tanh;
    c.norm_placement = NormPlacement::sandwich;
    c.norm_eps = 1.2345678901234567e-6;
    c.qk_norm = true;
    c.qk_norm_scope = QkNormScope::projection;
    c.dyt_alpha0_attn = 0.1 + 0.2;  // 0.30000000000000004: shortest round-trip needs 17 digits
    c.dyt_alpha0_other = 2.0 / 3.0;
    c.ffn = FfnKind::moe;
    c.activation = Activation::gelu_erf;
    c.n_experts = 8; c.n_experts_used = 2;
    c.moe_normalize_topk = false;
    c.attention = AttentionKind::kv_bias;
    c.gate = GateKind::static_per_channel;
    c.sliding_window = 512;
    c.layer_windows = {0, 4096, 7};
    c.attn_scale = 0.0625; c.attn_softcap = 50.0; c.parallel_residual = true; c.force_sink_channels = 5;
    c.positions = PositionKind::learned;
    c.rope_layout = RopeLayout::interleaved;
    c.rope_base = 500000.0; c.rope_base_sliding = 12345.678; c.rotary_dim = 6;
    c.rope_freq_divisors = {1.0, 2.5, 1.0 / 3.0};
    c.embed_scale = 6.928203230275509; c.logit_softcap = 30.5;
    c.qkv_bias = true; c.out_bias = true; c.mlp_bias = true; c.norm_bias = true; c.tied_embeddings = false;
    return c;
}

}  // namespace

TEST_CASE("config_io: every field away from its default survives Config → JSON → Config, and the JSON text", "[train][config_io]") {
    const Config c = all_fields_set();
    // the precondition that makes the round trip a test of every field: none is at its default
    const auto same_as_default = [&] {
        std::vector<std::string> all(field_names.begin(), field_names.end()), out;
        const auto diff = differing_fields(c, Config{});
        for (const auto& n : all)
            if (std::find(diff.begin(), diff.end(), n) == diff.end()) out.push_back(n);
        return out;
    }();
    INFO("fields still at their default: " << ::Catch::Detail::stringify(same_as_default));
    REQUIRE(same_as_default.empty());

    const nlohmann::json j = model::config_to_json(c);
    // one key per field, named as the field
    REQUIRE(j.is_object());
    CHECK(j.size() == field_names.size());
    for (const char* name : field_names) {
        INFO("key " << name);
        CHECK(j.contains(name));
    }
    CHECK(j.at("norm") == "dynamic_tanh");  // enums by their to_string names
    CHECK(j.at("gate") == "static_per_channel");

    const Config back = model::config_from_json(j);
    INFO("fields that differ after the round trip: " << ::Catch::Detail::stringify(differing_fields(c, back)));
    CHECK(differing_fields(c, back).empty());
    // through the text, as checkpoints and run directories store it: doubles must print exactly
    const Config from_text = model::config_from_json(nlohmann::json::parse(j.dump()));
    INFO("fields that differ after the text round trip: " << ::Catch::Detail::stringify(differing_fields(c, from_text)));
    CHECK(differing_fields(c, from_text).empty());
    // and the defaults round-trip too (the reader must not turn a default into something else)
    CHECK(differing_fields(Config{}, model::config_from_json(model::config_to_json(Config{}))).empty());
}

TEST_CASE("config_io: every name of every enum round-trips", "[train][config_io]") {
    std::int64_t checked = 0;
    auto each = [&](auto Config::*field) {
        using E = std::decay_t<decltype(Config{}.*field)>;
        for (const auto& [value, name] : model::EnumNames<E>::values) {
            Config c;
            c.*field = value;
            const nlohmann::json j = model::config_to_json(c);
            const Config back = model::config_from_json(j);
            INFO("enum name " << name);
            CHECK(back.*field == value);
            CHECK(differing_fields(c, back).empty());
            ++checked;
        }
    };
    each(&Config::norm);
    each(&Config::norm_placement);
    each(&Config::qk_norm_scope);
    each(&Config::ffn);
    each(&Config::activation);
    each(&Config::attention);
    each(&Config::gate);
    each(&Config::positions);
    each(&Config::rope_layout);
    // 3 + 4 + 2 + 5 + 3 + 4 + 5 + 3 + 2 names, counted by hand from core/switches.hpp's EnumNames
    CHECK(checked == 31);
}

TEST_CASE("config_io: missing keys keep the Config default", "[train][config_io]") {
    CHECK(differing_fields(Config{}, model::config_from_json(nlohmann::json::object())).empty());
    const Config c = model::config_from_json(nlohmann::json{{"d_model", 7}, {"rope_layout", "interleaved"}});
    CHECK(differing_fields(Config{}, c) == std::vector<std::string>{"d_model", "rope_layout"});
    CHECK(c.d_model == 7);
    CHECK(c.rope_layout == model::RopeLayout::interleaved);
}

TEST_CASE("config_io: unknown keys, unknown enum names and wrong types are errors that name the key", "[train][config_io]") {
    using nlohmann::json;
    using model::config_from_json;
    CHECK_THROWS_WITH(config_from_json(json::array({1, 2})), "sinkscope: config: JSON is not an object");
    CHECK_THROWS_WITH(config_from_json(json{{"d_model", 8}, {"dmodel", 8}}), "sinkscope: config: unknown key 'dmodel'");
    CHECK_THROWS_WITH(config_from_json(json{{"norm", "batchnorm"}}),
                      "sinkscope: config: unknown norm 'batchnorm' (one of: rmsnorm, layernorm, dynamic_tanh)");
    CHECK_THROWS_WITH(config_from_json(json{{"gate", "per_token"}}),
                      "sinkscope: config: unknown gate 'per_token' (one of: none, per_head, per_channel, static_per_head, static_per_channel)");
    CHECK_THROWS_WITH(config_from_json(json{{"norm", 1}}), "sinkscope: config: 'norm' must be a string");
    CHECK_THROWS_WITH(config_from_json(json{{"architecture", false}}), "sinkscope: config: 'architecture' must be a string");
    CHECK_THROWS_WITH(config_from_json(json{{"n_layers", 2.5}}), "sinkscope: config: 'n_layers' must be an integer");
    CHECK_THROWS_WITH(config_from_json(json{{"n_layers", "2"}}), "sinkscope: config: 'n_layers' must be an integer");
    CHECK_THROWS_WITH(config_from_json(json{{"rope_base", "1e4"}}), "sinkscope: config: 'rope_base' must be a number");
    CHECK_THROWS_WITH(config_from_json(json{{"qk_norm", 1}}), "sinkscope: config: 'qk_norm' must be true or false");
    CHECK_THROWS_WITH(config_from_json(json{{"layer_windows", 4}}), "sinkscope: config: 'layer_windows' must be an array of integers");
    CHECK_THROWS_WITH(config_from_json(json{{"layer_windows", {1, 2.5}}}), "sinkscope: config: 'layer_windows' must be an array of integers");
    CHECK_THROWS_WITH(config_from_json(json{{"rope_freq_divisors", {1.0, "x"}}}),
                      "sinkscope: config: 'rope_freq_divisors' must be an array of numbers");
    // an integer where a number is expected is a number
    CHECK(config_from_json(json{{"rope_base", 20000}}).rope_base == 20000.0);
}

TEST_CASE("config_io: the names under train:: are model::'s (deprecated home)", "[train][config_io]") {
    CHECK(&train::config_to_json == &model::config_to_json);
    CHECK(&train::config_from_json == &model::config_from_json);
}
