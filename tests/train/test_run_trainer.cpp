// train/run_trainer.hpp: the interface a program drives, over the CPU Trainer. Through it, a run takes the
// Trainer's own steps (same losses, same weights, bit for bit, one thread), a run resumed through a
// checkpoint continues as the uninterrupted one, and a build without the CUDA trainer says how to get one.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sinkscope/train/run_trainer.hpp>

#include "train/tiny_run.hpp"

using namespace sinkscope;
using namespace sinkscope::train;

using sinkscope::test::identical;
using sinkscope::test::tiny_run;

TEST_CASE("run_trainer: the CPU RunTrainer takes the Trainer's steps, and resumes through a checkpoint", "[run_trainer][train]") {
    const TrainConfig cfg = tiny_run(4);
    Trainer<float> direct(cfg, make_data(cfg.task));
    std::vector<double> losses;
    for (int i = 0; i < 4; ++i) losses.push_back(direct.step().loss);

    const auto run = make_cpu_trainer<float>(cfg, nullptr, make_data(cfg.task));
    for (int i = 0; i < 2; ++i) CHECK(run->step().loss == losses[std::size_t(i)]);
    CHECK(run->current_step() == 2);
    CHECK(run->compute() == direct.compute());
    const auto dir = std::filesystem::temp_directory_path() / "sinkscope_test_run_trainer";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "checkpoint.safetensors").string();
    run->save(path);

    const Checkpoint<float> ck = load_checkpoint<float>(path);
    const auto resumed = make_cpu_trainer<float>(cfg, &ck, make_data(TrainConfig::from_json(ck.run).task));
    CHECK(resumed->current_step() == 2);
    for (int i = 2; i < 4; ++i) CHECK(resumed->step().loss == losses[std::size_t(i)]);
    model::Weights<float> resumed_weights = resumed->weights();
    CHECK(identical(resumed_weights, direct.weights()));
    std::filesystem::remove_all(dir);
}

TEST_CASE("run_trainer: without the CUDA trainer, asking for it says how to get it", "[run_trainer][train]") {
    if (kDeviceTrainerBuilt) return;  // this test program has the real one
    const TrainConfig cfg = tiny_run(1);
    CHECK_THROWS_WITH(make_device_trainer(cfg, nullptr, make_data(cfg.task)),
                      Catch::Contains("without the CUDA trainer") && Catch::Contains("--device cpu"));
}
