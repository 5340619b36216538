// train/planted_export.hpp: what `sinkscope planted` and `sinkscope.planted(...)` write. The file, read back
// by the checkpoint reader, holds the construction's own Config and weights bit for bit and the plan in its
// note; measured on it, the massive construction has a massive activation (Sun et al.'s criterion,
// analysis/spikes.hpp) and its twin has none. Bad requests are refused with the word that is wrong.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include <sinkscope/analysis/spike_trace.hpp>
#include <sinkscope/model/config_io.hpp>
#include <sinkscope/train/checkpoint.hpp>
#include <sinkscope/train/model_backward.hpp>
#include <sinkscope/train/planted_export.hpp>
#include <sinkscope/train/random.hpp>

using namespace sinkscope;

namespace {
std::size_t massive_count(const model::Config& c, const model::Weights<float>& w) {
    train::Rng rng(5);
    std::vector<std::int32_t> s(32);
    for (auto& t : s) t = std::int32_t(rng.below(std::uint64_t(c.vocab_size)));
    std::size_t n = 0;
    for (const auto& st : analysis::residual_states(c, w, s))
        n += analysis::massive_entries(st.data(), std::int64_t(s.size()), c.d_model).size();
    return n;
}
}  // namespace

TEST_CASE("planted_export: the written model is the construction's, and the twin has no massive activation", "[planted_export][planted]") {
    const auto dir = std::filesystem::temp_directory_path() / "sinkscope_planted_export";
    std::filesystem::create_directories(dir);
    const model::Config c = train::planted_config("massive", "llama");
    for (const bool twin : {false, true}) {
        CAPTURE(twin);
        train::PlantedRequest r;
        r.construction = "massive";
        r.twin = twin;
        const std::string out = (dir / (twin ? "twin.safetensors" : "on.safetensors")).string();
        const nlohmann::json note = train::write_planted(out, c, r);
        const auto ck = train::load_checkpoint<float>(out);
        CHECK(model::config_to_json(ck.config) == model::config_to_json(c));
        CHECK(ck.run.at("planted") == note);
        CHECK(note.at("twin") == twin);
        train::PlantedOptions o = r.massive;
        o.mechanism_on = !twin;
        const auto built = train::planted_massive_plan(c, o);
        auto a = train::tensor_refs(const_cast<model::Weights<float>&>(ck.weights));
        auto b = train::tensor_refs(const_cast<model::Weights<float>&>(built.weights));
        REQUIRE(a.size() == b.size());
        for (std::size_t i = 0; i < a.size(); ++i) {
            CAPTURE(a[i].name);
            REQUIRE(a[i].size == b[i].size);
            CHECK(std::equal(a[i].data, a[i].data + a[i].size, b[i].data));
        }
        if (twin) CHECK(massive_count(ck.config, ck.weights) == 0);
        else CHECK(massive_count(ck.config, ck.weights) > 0);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("planted_export: unknown constructions, layouts and outputs are refused by name", "[planted_export][planted]") {
    CHECK_THROWS_WITH(train::planted_config("spikes", "llama"), Catch::Contains("'spikes'"));
    CHECK_THROWS_WITH(train::planted_config("sink-keys", "gpt"), Catch::Contains("layout 'gpt'"));
    CHECK_THROWS_WITH(train::planted_config("massive", "layernorm-gelu"), Catch::Contains("--like"));
    train::PlantedRequest r;
    r.construction = "massive";
    CHECK_THROWS_WITH(train::write_planted("model.gguf", train::planted_config("massive", "llama"), r),
                      Catch::Contains(".safetensors") && Catch::Contains("model.gguf"));
}
