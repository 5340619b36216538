// train::make_device_trainer (train/run_trainer.hpp) for the programs that train: cuda::HostedTrainer on
// CUDA device 0 behind train::RunTrainer. The one CUDA unit of sinkscope-train and sinkscope-experiments,
// added by sinkscope_add_device_trainer (cmake/SinkscopeDeviceTrainer.cmake), which compiles it with the
// C++ units' host flags so that the inline host code both sides instantiate is one build.
#include <sinkscope/cuda/hosted_trainer.cuh>

namespace sinkscope::train {

std::unique_ptr<RunTrainer<float>> make_device_trainer(const TrainConfig& cfg, const Checkpoint<float>* resume,
                                                       std::shared_ptr<const DataSource> data) {
    return cuda::make_run_trainer(cuda::default_context(), cfg, resume, std::move(data));
}

}  // namespace sinkscope::train
