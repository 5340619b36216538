// core/switches.hpp: every switch's name list is complete as far as the enum's values show (its values are
// 0 … n−1 in order, so an enumerator inserted before the last one is caught; one appended after it is not),
// its names are distinct snake_case words, name → value → name round-trips, an unknown name gives nullopt,
// and model:: names the same types (the re-export the layers rely on).
#include <catch2/catch.hpp>

#include <regex>
#include <set>
#include <string>
#include <type_traits>
#include <sinkscope/core/switches.hpp>

using namespace sinkscope;

namespace {
template <class E>
void check_names(const char* what) {
    INFO(what);
    std::set<std::string> names;
    int i = 0;
    std::string joined;
    for (const auto& [value, name] : EnumNames<E>::values) {
        CHECK(static_cast<int>(value) == i++);
        CHECK(std::regex_match(name, std::regex("[a-z][a-z0-9]*(_[a-z0-9]+)*")));
        CHECK(names.insert(name).second);
        CHECK(std::string(enum_name(value)) == name);
        CHECK(std::string(to_string(value)) == name);
        const auto back = enum_from_string<E>(name);
        REQUIRE(back.has_value());
        CHECK(*back == value);
        joined += (joined.empty() ? "" : ", ") + std::string(name);
    }
    CHECK(enum_names<E>() == joined);
    CHECK_FALSE(enum_from_string<E>("no_such_switch").has_value());
    CHECK_FALSE(enum_from_string<E>("").has_value());
}
}  // namespace

TEST_CASE("every switch lists its values once, in order, with names that round-trip", "[core][switches]") {
    check_names<NormKind>("NormKind");
    check_names<NormPlacement>("NormPlacement");
    check_names<QkNormScope>("QkNormScope");
    check_names<FfnKind>("FfnKind");
    check_names<AttentionKind>("AttentionKind");
    check_names<GateKind>("GateKind");
    check_names<PositionKind>("PositionKind");
    check_names<RopeLayout>("RopeLayout");
    check_names<Activation>("Activation");
}

TEST_CASE("the names are the ones checkpoints and the CLI spell", "[core][switches]") {
    // Written out by hand: a renamed value would break every saved config.json and CLI script.
    CHECK(enum_names<NormKind>() == "rmsnorm, layernorm, dynamic_tanh");
    CHECK(enum_names<NormPlacement>() == "pre, post, sandwich, output");
    CHECK(enum_names<FfnKind>() == "swiglu, gelu, linear, none, moe");
    CHECK(enum_names<AttentionKind>() == "softmax, softmax_off_by_one, sink_token, kv_bias");
    CHECK(enum_names<GateKind>() == "none, per_head, per_channel, static_per_head, static_per_channel");
    CHECK(enum_names<RopeLayout>() == "interleaved, half_split");
    CHECK(enum_names<Activation>() == "silu, gelu_tanh, gelu_erf");
}

TEST_CASE("model:: re-exports the same switch types", "[core][switches]") {
    STATIC_REQUIRE(std::is_same_v<model::NormKind, NormKind>);
    STATIC_REQUIRE(std::is_same_v<model::GateKind, GateKind>);
    STATIC_REQUIRE(std::is_same_v<model::Activation, Activation>);
    CHECK(std::string(model::to_string(model::FfnKind::moe)) == "moe");
}
