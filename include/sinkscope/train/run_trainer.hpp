// RunTrainer: one interface over the trainers a program drives with train::run_training —
// train::Trainer<T> on the CPU and cuda::HostedTrainer on a GPU — so that a program chooses the device
// at run time while only one of its units is compiled by nvcc.
//
//   make_cpu_trainer<T>(cfg, resume, data)   train::Trainer<T>: fresh (resume == nullptr) or continuing
//                                            the checkpoint *resume (its own settings)
//   make_device_trainer(cfg, resume, data)   cuda::HostedTrainer on CUDA device 0, float only. Declared
//                                            when the program is built with SINKSCOPE_DEVICE_TRAINER
//                                            defined in every unit, and then defined by its one CUDA
//                                            unit (tools/device_trainer.cu; CMake:
//                                            sinkscope_add_device_trainer). Without it, a stub that
//                                            throws an Error saying how to get a CUDA build.
//   kDeviceTrainerBuilt                      whether this program has the real one
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "sinkscope/core/error.hpp"
#include "sinkscope/train/trainer.hpp"

namespace sinkscope::train {

template <class T>
class RunTrainer {
public:
    virtual ~RunTrainer() = default;
    virtual StepResult step() = 0;
    virtual TraceRecord trace(double train_loss = 0) const = 0;
    virtual void save(const std::string& path) = 0;
    virtual std::int64_t current_step() const = 0;
    virtual const TrainConfig& config() const = 0;
    virtual model::Weights<T> weights() const = 0;  // a copy (a device's weights are downloaded)
    virtual const DataSource& data() const = 0;
    virtual std::string compute() const = 0;        // where the products run, for a progress header
};

template <class T, class Tr>
class RunTrainerOf final : public RunTrainer<T> {
public:
    template <class... Args>
    explicit RunTrainerOf(Args&&... args) : t_(std::forward<Args>(args)...) {}
    StepResult step() override { return t_.step(); }
    TraceRecord trace(double train_loss = 0) const override { return t_.trace(train_loss); }
    void save(const std::string& path) override { t_.save(path); }
    std::int64_t current_step() const override { return t_.current_step(); }
    const TrainConfig& config() const override { return t_.config(); }
    model::Weights<T> weights() const override { return t_.weights(); }
    const DataSource& data() const override { return t_.data(); }
    std::string compute() const override { return t_.compute(); }
    Tr& trainer() { return t_; }

private:
    Tr t_;
};

template <class T>
std::unique_ptr<RunTrainer<T>> make_cpu_trainer(const TrainConfig& cfg, const Checkpoint<T>* resume,
                                                std::shared_ptr<const DataSource> data) {
    if (resume) return std::make_unique<RunTrainerOf<T, Trainer<T>>>(*resume, std::move(data));
    return std::make_unique<RunTrainerOf<T, Trainer<T>>>(cfg, std::move(data));
}

#ifdef SINKSCOPE_DEVICE_TRAINER
constexpr bool kDeviceTrainerBuilt = true;
std::unique_ptr<RunTrainer<float>> make_device_trainer(const TrainConfig& cfg, const Checkpoint<float>* resume,
                                                       std::shared_ptr<const DataSource> data);
#else
constexpr bool kDeviceTrainerBuilt = false;
inline std::unique_ptr<RunTrainer<float>> make_device_trainer(const TrainConfig&, const Checkpoint<float>*,
                                                              std::shared_ptr<const DataSource>) {
    throw Error("this program was built without the CUDA trainer (CMake found no CUDA compiler, nvcc, or "
                "SINKSCOPE_CUDA is OFF): rebuild on a machine with the CUDA toolkit, or train on the CPU (--device cpu)");
}
#endif

}  // namespace sinkscope::train
