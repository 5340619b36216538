// HostedTrainer: train::Trainer's run interface around cuda::Trainer, so that train::run_training,
// sinkscope-train --device cuda and the scale sweep's jobs drive a device run as they drive a CPU one.
//
//   the host keeps    the settings (train::TrainConfig), the data source and the step count. Step s
//                     trains on sequences s·B … s·B + B − 1 of the task, the CPU trainer's batch, at
//                     the learning rate train::learning_rate(optim, s)
//   the device keeps  the weights, the gradients and AdamW's moments (float32; TF32 products only if
//                     the Context allows them)
//   trace(), save()   download the weights (and the moments) and use the CPU's validation_trace and
//                     checkpoint writer: a device checkpoint has the CPU's format, so a run started on a
//                     GPU resumes on the CPU and the other way round
//
// What the device covers is cuda::training_unsupported's list (pre-norm, no QK-norm, no gates, no KV
// bias); precision must be float32 (the CPU's bf16 mode is oneDNN's). Faults: a non-finite loss or
// gradient throws naming the step (and, for a gradient, the parameter); the device does not watch every
// activation as the CPU's tape does — resume the last checkpoint on the CPU to name the operation.
#pragma once

#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "sinkscope/cuda/train.cuh"
#include "sinkscope/train/run_trainer.hpp"
#include "sinkscope/train/trainer.hpp"

namespace sinkscope::cuda {

class HostedTrainer {
public:
    // A fresh run: weights drawn as train::Trainer draws them (initial_weights at cfg.seed).
    HostedTrainer(const Context& ctx, train::TrainConfig cfg, std::shared_ptr<const train::DataSource> data)
        : ctx_(ctx), cfg_(checked(std::move(cfg), data.get())), data_(std::move(data)),
          dev_(ctx, cfg_.model, train::initial_weights<float>(cfg_), cfg_.optim) {}

    // Continues the run saved in `ck` (its own settings; `data` must be the same task).
    HostedTrainer(const Context& ctx, const train::Checkpoint<float>& ck, std::shared_ptr<const train::DataSource> data)
        : ctx_(ctx), cfg_(checked(train::TrainConfig::from_json(ck.run), data.get())), data_(std::move(data)),
          dev_(ctx, cfg_.model, ck.weights, cfg_.optim), step_(ck.step) {
        upload_values(ctx_, ck.adam_m, dev_.optimizer().m());
        upload_values(ctx_, ck.adam_v, dev_.optimizer().v());
        dev_.optimizer().set_step(ck.optimizer_step);
    }

    // One optimizer step on batch current_step(): loss and gradients, global-norm clipping, AdamW.
    train::StepResult step() {
        const auto t0 = std::chrono::steady_clock::now();
        const std::int64_t B = cfg_.batch;
        std::vector<std::vector<std::int32_t>> batch;
        batch.reserve(std::size_t(B));
        for (std::int64_t b = 0; b < B; ++b) batch.push_back(data_->sequence(std::uint64_t(step_ * B + b)));
        train::StepResult r;
        r.step = step_;
        r.loss = dev_.loss_and_grad(batch, cfg_.loss);
        if (!std::isfinite(r.loss))
            throw Error("non-finite loss at step " + std::to_string(step_) + ": " + std::to_string(r.loss) +
                        " (device run; resume its last checkpoint on the CPU to name the operation)");
        r.grad_norm = dev_.clip(cfg_.optim.grad_clip);
        if (!std::isfinite(r.grad_norm)) {
            model::Weights<float> g = dev_.gradients();
            throw Error("non-finite gradient at step " + std::to_string(step_) + ": parameter " + train::first_nonfinite_parameter(g));
        }
        r.lr = train::learning_rate(cfg_.optim, step_);
        dev_.update(r.lr);
        ++step_;
        r.tokens = B * data_->seq_len();
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return r;
    }

    // The trace of the current weights, measured on the host as train::Trainer measures it.
    train::TraceRecord trace(double train_loss = 0) const {
        return train::validation_trace(cfg_, *data_, dev_.weights(), step_, train_loss);
    }

    // A checkpoint in train::save_checkpoint's format: weights, AdamW's moments and step, settings.
    void save(const std::string& path) {
        model::Weights<float> w = dev_.weights();
        train::AdamW<float> opt(cfg_.optim, w);
        download(ctx_, dev_.optimizer().m(), opt.m());
        download(ctx_, dev_.optimizer().v(), opt.v());
        opt.set_step(dev_.optimizer().step());
        train::save_checkpoint(path, cfg_.model, w, opt, step_, cfg_.to_json(), train::data_stream_state(cfg_, step_));
    }

    std::int64_t current_step() const { return step_; }
    const train::TrainConfig& config() const { return cfg_; }
    model::Weights<float> weights() const { return dev_.weights(); }  // a host copy
    const train::DataSource& data() const { return *data_; }
    std::string compute() const {
        return "CUDA device " + std::to_string(ctx_.device()) + " (" + ctx_.properties().name + ")" +
               (ctx_.tf32() ? ", TF32 products" : ", float32 products");
    }

private:
    static train::TrainConfig checked(train::TrainConfig cfg, const train::DataSource* data) {
        train::require_task_fits(cfg, data);
        require(cfg.precision == model::MatmulPrecision::float32,
                std::string("cuda::HostedTrainer: precision ") + model::to_string(cfg.precision) +
                    " is the CPU's mixed mode (oneDNN); the device trains in float32");
        return cfg;
    }

    const Context& ctx_;
    train::TrainConfig cfg_;
    std::shared_ptr<const train::DataSource> data_;
    Trainer dev_;
    std::int64_t step_ = 0;
};

// A HostedTrainer behind train::RunTrainer: what a program's CUDA unit returns as
// train::make_device_trainer (tools/device_trainer.cu).
inline std::unique_ptr<train::RunTrainer<float>> make_run_trainer(const Context& ctx, const train::TrainConfig& cfg,
                                                                  const train::Checkpoint<float>* resume,
                                                                  std::shared_ptr<const train::DataSource> data) {
    using Run = train::RunTrainerOf<float, HostedTrainer>;
    if (resume) return std::make_unique<Run>(ctx, *resume, std::move(data));
    return std::make_unique<Run>(ctx, cfg, std::move(data));
}

}  // namespace sinkscope::cuda
