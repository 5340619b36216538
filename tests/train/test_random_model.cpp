// train/random_model.hpp: the null-control model keeps the layout and metadata of the model it copies
// and replaces every weight; a model saved with save_model loads back through load_for_analysis with
// identical logits; load_for_analysis still loads GGUF files.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sinkscope/model/forward.hpp>
#include <sinkscope/train/random_model.hpp>

#include "train/train_test_util.hpp"

using namespace sinkscope;

TEST_CASE("random_like keeps the layout and replaces the weights", "[train][random_model]") {
    const std::string path = std::string(SINKSCOPE_SHARED_DIR) + "/models/stories260K.gguf";
    INFO("the shared tiny model: " << path);
    REQUIRE(std::filesystem::exists(path));
    const auto m = train::load_for_analysis<float>(path);
    const auto r = train::random_like(m, 1);
    CHECK(r.config.describe() == m.config.describe());
    CHECK(r.metadata == m.metadata);
    CHECK(r.format == "gguf");
    REQUIRE(r.weights.tok_embed.rows() == m.weights.tok_embed.rows());
    CHECK((r.weights.tok_embed - m.weights.tok_embed).norm() > 0.1 * m.weights.tok_embed.norm());
    // Deterministic by seed, different across seeds.
    CHECK(train::random_like(m, 1).weights.tok_embed == r.weights.tok_embed);
    CHECK(train::random_like(m, 2).weights.tok_embed != r.weights.tok_embed);
    const std::vector<std::int32_t> ids{1, 5, 9, 13, 17, 21};
    const auto logits = model::forward(r.config, r.weights, ids);
    CHECK(logits.allFinite());
}

TEST_CASE("save_model and load_for_analysis round-trip a model bit-exactly", "[train][random_model]") {
    const model::Config c = test::tiny_llama_config();
    const auto w = train::init_weights<float>(c, 11);
    const auto dir = std::filesystem::temp_directory_path() / "sinkscope_test_random_model";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "random.safetensors").string();
    train::save_model(path, c, w, {{"null_control", "random init seed 11"}});
    const auto back = train::load_for_analysis<float>(path);
    CHECK(back.format == "sinkscope-checkpoint");
    CHECK(back.config.describe() == c.describe());
    const std::vector<std::int32_t> ids{0, 3, 7, 2, 9};
    CHECK(model::forward(back.config, back.weights, ids) == model::forward(c, w, ids));
    // A run directory with checkpoint.safetensors loads too.
    std::filesystem::copy_file(path, dir / "checkpoint.safetensors", std::filesystem::copy_options::overwrite_existing);
    CHECK(train::load_for_analysis<float>(dir.string()).format == "sinkscope-checkpoint");
    CHECK_THROWS_AS(train::load_for_analysis<float>((dir / "missing.gguf").string()), Error);
}

TEST_CASE("weights auto: float32 when it fits, the file types when only they fit, and float32 asked for names the way out",
          "[train][memory]") {
    // The default model: Q4_1 maps, 98 MB in their file types against 0.5 GB as float32 (the family
    // fixtures are float32 GGUFs, the same size either way).
    const std::string path = std::string(SINKSCOPE_MODELS_DIR) + "/SmolLM2-135M-Instruct.Q4_1.gguf";
    if (!std::filesystem::exists(path)) {
        WARN("skipped: " << path << " is not here (scripts/fetch_model.sh)");
        return;
    }
    const std::uint64_t kept = io::checkpoint_file_type_bytes(path), full = 4 * io::checkpoint_value_count(path);
    REQUIRE(kept < full / 4);
    INFO(path << ": float32 " << full << " bytes, file types " << kept);
    const auto automatic = model::load_options_from("auto", "exact");

    train::WeightMemory counted;
    const auto roomy = train::load_within_memory(path, automatic, &counted, full);
    CHECK(roomy.weights.storage == model::WeightStorage::float32);
    CHECK(counted.storage == "float32");
    CHECK(counted.reason.empty());

    const std::uint64_t between = kept + (full - kept) / 2;
    const auto short_on_memory = train::load_within_memory(path, automatic, &counted, between);
    CHECK(short_on_memory.weights.storage == model::WeightStorage::file_type);
    CHECK(counted.storage == "file");
    CHECK(counted.bytes == kept);
    CHECK_THAT(counted.reason, Catch::Contains("float32 weights need") && Catch::Contains("file types"));
    // The same forward as an explicit --weights file load.
    const auto file = train::load_within_memory(path, model::load_options_from("file", "exact"), nullptr, between);
    const std::vector<std::int32_t> ids{1, 2, 3, 4};
    const auto a = model::forward(short_on_memory.config, short_on_memory.weights, ids);
    const auto b = model::forward(file.config, file.weights, ids);
    CHECK(a.isApprox(b, 0.0f));

    try {
        train::load_within_memory(path, model::load_options_from("float32", "exact"), nullptr, between);
        FAIL("float32 asked for and short of memory: no Error");
    } catch (const Error& e) {
        CHECK(e.file() == path);
        CHECK_THAT(e.message(), Catch::Contains("--weights file") && Catch::Contains("of memory for float32 weights"));
    }
    // Not even the file types fit: the float32 error, as before.
    CHECK_THROWS_WITH(train::load_within_memory(path, automatic, nullptr, kept - 1), Catch::Contains("of memory for float32 weights"));
}
