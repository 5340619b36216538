// Reader of the PyTorch training fixtures (scripts/make_train_fixtures.py, tests/fixtures/train/*.safetensors):
// the model config, loss mask and AdamW settings from the metadata, every F64 tensor by name, and the
// token batches. Used by the CPU reference test and the CUDA tests.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <sinkscope/io/safetensors.hpp>
#include <sinkscope/model/config_io.hpp>
#include <sinkscope/train/loss.hpp>
#include <sinkscope/train/optimizer.hpp>

#include "test_paths.hpp"

namespace sinkscope::test {

struct TrainFixture {
    model::Config config;
    train::LossMask mask;
    train::AdamWConfig opt;
    std::map<std::string, std::vector<double>> tensors;  // F64 tensors by name
    std::vector<std::int32_t> tokens;                     // (steps, batch, T + 1)
    std::vector<std::int64_t> tokens_shape;
};

inline TrainFixture load_train_fixture(const std::string& name) {
    io::SafetensorsFile f(fixture("train/" + name + ".safetensors"));
    const auto& meta = f.metadata();
    REQUIRE(meta.value("magic", "") == "sinkscope-train-fixture");
    REQUIRE(meta.value("version", "") == "1");
    TrainFixture fx;
    fx.config = model::config_from_json(nlohmann::json::parse(meta["config"].get<std::string>()));
    const auto m = nlohmann::json::parse(meta["loss_mask"].get<std::string>());
    fx.mask = {m["begin"].get<std::int64_t>(), m["end"].get<std::int64_t>(), m["skip_first"].get<bool>()};
    const auto o = nlohmann::json::parse(meta["optimizer"].get<std::string>());
    fx.opt.lr = o["lr"]; fx.opt.beta1 = o["beta1"]; fx.opt.beta2 = o["beta2"]; fx.opt.eps = o["eps"];
    fx.opt.weight_decay = o["weight_decay"]; fx.opt.grad_clip = o["grad_clip"];
    fx.opt.warmup_steps = o["warmup_steps"]; fx.opt.total_steps = o["total_steps"]; fx.opt.min_lr_ratio = o["min_lr_ratio"];
    for (const auto& t : f.tensors()) {
        const std::uint8_t* raw = f.raw(t);
        if (t.dtype == "F64") {
            std::vector<double> v(t.n_elements());
            std::memcpy(v.data(), raw, t.nbytes);
            fx.tensors[t.name] = std::move(v);
        } else if (t.dtype == "I32") {
            fx.tokens.resize(t.n_elements());
            std::memcpy(fx.tokens.data(), raw, t.nbytes);
            fx.tokens_shape = t.shape;
        }
    }
    return fx;
}

}  // namespace sinkscope::test
