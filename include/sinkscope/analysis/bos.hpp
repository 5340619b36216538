// Whether to put BOS first, as the model says: `--bos auto|on|off` (the CLI, every experiment, the Python
// module) resolved against the checkpoint's own convention (tokenizer/bos.hpp).
//   auto  the model's add_bos_token (GGUF tokenizer.ggml.add_bos_token; Hugging Face tokenizer_config.json, or
//         a post-processor that puts BOS first); an absent key means no BOS (except llama.cpp's default for a GGUF
//         SentencePiece vocabulary, tokenizer/bos.hpp), and the source says it was absent
//   on    BOS first; an Error naming the file when the checkpoint has no BOS token id
//   off   never
// The result records the decision, the id and where each came from; meta.json writes it as
// {"bos": {"mode", "use", "id", "source", "id_source"}}. The same resolved setting is the population statement
// the calibrated rules read ("trained with BOS or not": A1-control applies to a model used without BOS).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sinkscope/core/error.hpp"
#include "sinkscope/model/load.hpp"
#include "sinkscope/tokenizer/bos.hpp"

namespace sinkscope::analysis {

enum class BosMode { automatic, on, off };

inline const char* to_string(BosMode m) {
    switch (m) {
        case BosMode::automatic: return "auto";
        case BosMode::on: return "on";
        case BosMode::off: return "off";
    }
    return "?";
}

inline BosMode parse_bos_mode(const std::string& s) {
    if (s == "auto") return BosMode::automatic;
    if (s == "on") return BosMode::on;
    if (s == "off") return BosMode::off;
    throw Error("--bos '" + s + "': expected auto, on or off");
}

/// The resolved setting: whether BOS goes first, its id (when the checkpoint has one, whatever `use`), and why.
struct BosChoice {
    BosMode mode = BosMode::automatic;
    bool use = false;
    std::optional<std::int32_t> id;
    std::string source;     // what decided `use`: "--bos on", "--bos off", or the key read for auto
    std::string id_source;  // where `id` was read, or "absent: ..."

    nlohmann::json to_json() const {
        return {{"mode", to_string(mode)}, {"use", use}, {"id", id ? nlohmann::json(*id) : nlohmann::json(nullptr)},
                {"source", source}, {"id_source", id_source}};
    }
};

/// The checkpoint's own BOS convention: GGUF metadata, the files of a Hugging Face directory, or nothing for a
/// sinkscope checkpoint (trained here; it carries no tokenizer).
template <class T>
tokenizer::BosConvention bos_convention(const model::LoadedModel<T>& m) {
    if (m.format == "gguf") return tokenizer::bos_from_gguf_metadata(m.metadata, m.path);
    if (m.format == "sinkscope-checkpoint") {
        tokenizer::BosConvention b;
        b.file = m.path;
        b.id_source = "absent: a sinkscope checkpoint has no tokenizer (" + m.path + ")";
        b.add_source = b.id_source;
        return b;
    }
    return tokenizer::bos_from_hf_dir(m.path);
}

inline BosChoice resolve_bos(const tokenizer::BosConvention& c, BosMode mode) {
    BosChoice r;
    r.mode = mode;
    r.id = c.id;
    r.id_source = c.id_source;
    switch (mode) {
        case BosMode::off:
            r.use = false;
            r.source = "--bos off";
            break;
        case BosMode::on:
            require(c.id.has_value(), "--bos on: the checkpoint has no BOS token id (" + c.id_source + ")", {c.file, "", std::nullopt});
            r.use = true;
            r.source = "--bos on";
            break;
        case BosMode::automatic:
            r.use = c.add_bos.value_or(false);
            r.source = c.add_source;
            require(!r.use || c.id.has_value(),
                    "--bos auto: the checkpoint asks for BOS (" + c.add_source + ") but names no BOS token id (" + c.id_source + ")",
                    {c.file, "", std::nullopt});
            break;
    }
    return r;
}

template <class T>
BosChoice resolve_bos(const model::LoadedModel<T>& m, BosMode mode) {
    return resolve_bos(bos_convention(m), mode);
}

}  // namespace sinkscope::analysis
