// Writing a planted-mechanism model as a sinkscope checkpoint, one entry point for the CLI (`sinkscope
// planted …`) and the Python module (`sinkscope.planted(…)`), so that users can calibrate their own methods
// on the same models the rules are calibrated on.
//
//   planted_config(construction, layout)   the default layout of a construction: "llama" (RMSNorm, SwiGLU)
//                                          or "layernorm-gelu" (LayerNorm, GELU), both with RoPE
//   write_planted(out, request)            builds request.construction ("massive", "sink-keys",
//                                          "p0-circuit") in `config`, writes it to `out` (.safetensors) with
//                                          the plan in the checkpoint's note, and returns that note
//
// Constructions and their twins: train/planted.hpp (theory/planted_massive.md), train/planted_sink_keys.hpp
// (theory/planted_sink_keys.md), train/planted_p0_circuit.hpp (theory/planted_p0_circuit.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "sinkscope/core/error.hpp"
#include "sinkscope/train/planted.hpp"
#include "sinkscope/train/planted_p0_circuit.hpp"
#include "sinkscope/train/planted_sink_keys.hpp"
#include "sinkscope/train/random_model.hpp"

namespace sinkscope::train {

struct PlantedRequest {
    std::string construction;            // "massive", "sink-keys" or "p0-circuit"
    bool twin = false;                   // the construction's mechanism-off twin
    PlantedOptions massive;              // massive (and the spike under sink-keys): seed, dose, S, D, c*
    PlantedSinkKeyOptions sink_keys;     // sink-keys: its own fields (its .massive is taken from `massive`)
    PlantedP0Options p0;                 // p0-circuit (seed and dose taken from `massive`)
};

inline model::Config planted_config(const std::string& construction, const std::string& layout) {
    if (layout != "llama" && layout != "layernorm-gelu")
        throw Error("planted: layout '" + layout + "' is not one of llama, layernorm-gelu");
    const bool gelu = layout == "layernorm-gelu";
    if (construction == "massive") {
        if (gelu) throw Error("planted massive: layout 'layernorm-gelu' has no default here; pass a config (--like) in that layout");
        return planted_default_config();
    }
    if (construction == "sink-keys") return gelu ? planted_layernorm_gelu_config() : planted_default_config();
    if (construction == "p0-circuit") return gelu ? planted_p0_layernorm_gelu_config() : planted_p0_default_config();
    throw Error("planted: construction '" + construction + "' is not one of massive, sink-keys, p0-circuit");
}

inline nlohmann::json write_planted(const std::string& out, const model::Config& c, PlantedRequest r) {
    if (std::filesystem::path(out).extension() != ".safetensors")
        throw Error("planted " + r.construction + ": the output must end in .safetensors", {out, "", {}});
    nlohmann::json note;
    model::Weights<float> w;
    if (r.construction == "massive") {
        r.massive.mechanism_on = !r.twin;
        auto pm = planted_massive_plan(c, r.massive);
        note = pm.plan.to_json();
        note["mechanism_on"] = r.massive.mechanism_on;
        w = std::move(pm.weights);
    } else if (r.construction == "sink-keys") {
        r.sink_keys.massive = r.massive;
        r.sink_keys.keys_read_spike = !r.twin;
        auto pm = planted_sink_keys_plan(c, r.sink_keys);
        note = pm.plan.to_json();
        note["keys_read_spike"] = r.sink_keys.keys_read_spike;
        w = std::move(pm.weights);
    } else if (r.construction == "p0-circuit") {
        r.p0.seed = r.massive.seed;
        r.p0.dose = r.massive.dose;
        r.p0.redundant_heads = !r.twin;
        auto pm = planted_p0_circuit_plan(c, r.p0);
        note = pm.plan.to_json();
        w = std::move(pm.weights);
    } else {
        throw Error("planted: construction '" + r.construction + "' is not one of massive, sink-keys, p0-circuit");
    }
    note["twin"] = r.twin;
    note["dose"] = r.massive.dose;
    note["seed"] = r.massive.seed;
    save_model(out, c, std::move(w), {{"planted", note}});
    return note;
}

}  // namespace sinkscope::train
