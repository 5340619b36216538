// The sweep's trainers behind one interface: train::Trainer<float> on the CPU and cuda::HostedTrainer
// on a GPU (experiments/device_training.cu, compiled only when CMake finds nvcc: SINKSCOPE_CUDA, which
// defines SINKSCOPE_EXPERIMENTS_CUDA). Both have train::Trainer's run interface, so train::run_training
// drives either; this header only erases the type, so that the C++ units need no CUDA compiler.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include <sinkscope/core/error.hpp>
#include <sinkscope/train/trainer.hpp>

namespace sinkscope::experiments {

class RunTrainer {
public:
    virtual ~RunTrainer() = default;
    virtual train::StepResult step() = 0;
    virtual train::TraceRecord trace(double train_loss = 0) const = 0;
    virtual void save(const std::string& path) = 0;
    virtual std::int64_t current_step() const = 0;
    virtual const train::TrainConfig& config() const = 0;
    virtual model::Weights<float> weights() const = 0;  // a copy (the device's are downloaded)
    virtual const train::DataSource& data() const = 0;
};

template <class Tr>
class RunTrainerOf final : public RunTrainer {
public:
    template <class... Args>
    explicit RunTrainerOf(Args&&... args) : t_(std::forward<Args>(args)...) {}
    train::StepResult step() override { return t_.step(); }
    train::TraceRecord trace(double train_loss = 0) const override { return t_.trace(train_loss); }
    void save(const std::string& path) override { t_.save(path); }
    std::int64_t current_step() const override { return t_.current_step(); }
    const train::TrainConfig& config() const override { return t_.config(); }
    model::Weights<float> weights() const override { return t_.weights(); }
    const train::DataSource& data() const override { return t_.data(); }
    Tr& trainer() { return t_; }

private:
    Tr t_;
};

// A CPU trainer for `cfg` (fresh) or continuing `resume`.
inline std::unique_ptr<RunTrainer> make_cpu_trainer(const train::TrainConfig& cfg, const train::Checkpoint<float>* resume,
                                                    std::shared_ptr<const train::DataSource> data) {
    if (resume) return std::make_unique<RunTrainerOf<train::Trainer<float>>>(*resume, std::move(data));
    return std::make_unique<RunTrainerOf<train::Trainer<float>>>(cfg, std::move(data));
}

#ifdef SINKSCOPE_EXPERIMENTS_CUDA
constexpr bool kCudaTrainingBuilt = true;
// The same on CUDA device 0 (cuda::HostedTrainer); throws sinkscope::Error when there is no device or the
// device backward does not cover the config (cuda::training_unsupported).
std::unique_ptr<RunTrainer> make_device_trainer(const train::TrainConfig& cfg, const train::Checkpoint<float>* resume,
                                                std::shared_ptr<const train::DataSource> data);
#else
constexpr bool kCudaTrainingBuilt = false;
inline std::unique_ptr<RunTrainer> make_device_trainer(const train::TrainConfig&, const train::Checkpoint<float>*,
                                                       std::shared_ptr<const train::DataSource>) {
    throw Error("this build has no CUDA trainer: CMake found no CUDA compiler (nvcc) or SINKSCOPE_CUDA is OFF; "
                "rebuild on a machine with the CUDA toolkit, or train on the CPU (--device cpu)");
}
#endif

}  // namespace sinkscope::experiments
