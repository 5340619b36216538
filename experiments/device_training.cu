// make_device_trainer (device_training.hpp): cuda::HostedTrainer on the process's CUDA device 0. The only
// CUDA translation unit of sinkscope-experiments; compiled with the C++ units' host flags (-march,
// OpenMP: experiments/CMakeLists.txt) so that the inline host code both sides instantiate is the same.
#include "device_training.hpp"

#include <sinkscope/cuda/hosted_trainer.cuh>

namespace sinkscope::experiments {

std::unique_ptr<RunTrainer> make_device_trainer(const train::TrainConfig& cfg, const train::Checkpoint<float>* resume,
                                                std::shared_ptr<const train::DataSource> data) {
    const cuda::Context& ctx = cuda::default_context();
    if (resume) return std::make_unique<RunTrainerOf<cuda::HostedTrainer>>(ctx, *resume, std::move(data));
    return std::make_unique<RunTrainerOf<cuda::HostedTrainer>>(ctx, cfg, std::move(data));
}

}  // namespace sinkscope::experiments
