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
