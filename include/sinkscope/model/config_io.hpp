// model::Config ⇄ JSON, for checkpoints, fixtures, run directories and meta.json: one key per field, named as
// in config.hpp, read and written through Config::visit_fields (the one list of the fields); enums by their
// to_string names. Unknown keys and unknown enum names are errors that name the key; missing keys keep the
// Config default.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "sinkscope/core/error.hpp"
#include "sinkscope/model/config.hpp"

namespace sinkscope::model {

namespace detail {
template <class T> struct IsVector : std::false_type {};
template <class T> struct IsVector<std::vector<T>> : std::true_type {};

// One field from its JSON value, with the type checks (and messages) of every field of that type.
template <class Field>
void field_from_json(const std::string& k, const nlohmann::json& v, Field& field) {
    if constexpr (std::is_same_v<Field, std::string>) {
        require(v.is_string(), "config: '" + k + "' must be a string");
        field = v.get<std::string>();
    } else if constexpr (std::is_same_v<Field, bool>) {
        require(v.is_boolean(), "config: '" + k + "' must be true or false");
        field = v.get<bool>();
    } else if constexpr (std::is_same_v<Field, std::int64_t>) {
        require(v.is_number_integer(), "config: '" + k + "' must be an integer");
        field = v.get<std::int64_t>();
    } else if constexpr (std::is_same_v<Field, double>) {
        require(v.is_number(), "config: '" + k + "' must be a number");
        field = v.get<double>();
    } else if constexpr (std::is_enum_v<Field>) {
        require(v.is_string(), "config: '" + k + "' must be a string");
        const auto name = v.get<std::string>();
        const auto e = enum_from_string<Field>(name);
        if (!e) throw Error("config: unknown " + k + " '" + name + "' (one of: " + enum_names<Field>() + ")");
        field = *e;
    } else {
        static_assert(IsVector<Field>::value, "Config::visit_fields: a field type config_io.hpp cannot read");
        using Entry = typename Field::value_type;
        constexpr bool integers = std::is_same_v<Entry, std::int64_t>;
        const std::string want = integers ? "an array of integers" : "an array of numbers";
        require(v.is_array(), "config: '" + k + "' must be " + want);
        field.clear();
        for (const auto& e : v) {
            require(integers ? e.is_number_integer() : e.is_number(), "config: '" + k + "' must be " + want);
            field.push_back(e.get<Entry>());
        }
    }
}
}  // namespace detail

inline nlohmann::json config_to_json(const Config& c) {
    nlohmann::json j = nlohmann::json::object();
    Config::visit_fields(c, [&j](const char* name, const auto& field) {
        if constexpr (std::is_enum_v<std::decay_t<decltype(field)>>) j[name] = to_string(field);
        else j[name] = field;
    });
    return j;
}

inline Config config_from_json(const nlohmann::json& j) {
    require(j.is_object(), "config: JSON is not an object");
    Config c;
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string& k = it.key();
        bool known = false;
        Config::visit_fields(c, [&](const char* name, auto& field) {
            if (known || k != name) return;
            known = true;
            detail::field_from_json(k, it.value(), field);
        });
        if (!known) throw Error("config: unknown key '" + k + "'");
    }
    return c;
}

}  // namespace sinkscope::model
