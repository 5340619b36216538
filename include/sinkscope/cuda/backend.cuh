// Runtime choice of the backend, with the CPU as the reference.
//
//   cuda::Runner run(config, weights);            // Backend::automatic: the GPU when there is one
//   auto logits = run.forward(tokens, &hooks);    // same contract as model::forward
//   run.backend();                                 // what it chose; run.reason() says why not CUDA
//
// Backend::cpu always runs model::forward; Backend::cuda demands a device (Error if none);
// Backend::automatic takes device 0 when device_status() finds one and falls back to the CPU
// otherwise, recording why. The weights are uploaded once, when the Runner is made.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sinkscope/cuda/common.cuh"
#include "sinkscope/cuda/forward.cuh"
#include "sinkscope/cuda/weights.cuh"
#include "sinkscope/model/forward.hpp"

namespace sinkscope::cuda {

enum class Backend { cpu, cuda, automatic };

inline const char* to_string(Backend b) {
    switch (b) { case Backend::cpu: return "cpu"; case Backend::cuda: return "cuda"; case Backend::automatic: return "automatic"; }
    return "?";
}

// The backend `wanted` resolves to on this machine (host logic): automatic → cuda when a device is
// present, else cpu with `reason` set; cuda without a device is an Error.
// A config with switches the device forward lacks (model::Config::cpu_only_switches) resolves like
// "no device": automatic runs it on the CPU and says why, cuda is an Error.
inline Backend resolve_backend(Backend wanted, const DeviceStatus& st, std::string* reason = nullptr,
                               const std::string& unsupported = "") {
    if (wanted == Backend::cpu) return Backend::cpu;
    if (!unsupported.empty()) {
        if (wanted == Backend::cuda) throw Error("backend cuda requested but the CUDA forward does not implement " + unsupported);
        if (reason) *reason = "the CUDA forward does not implement " + unsupported + "; running on the CPU";
        return Backend::cpu;
    }
    if (st.count > 0) return Backend::cuda;
    if (wanted == Backend::cuda) throw Error("backend cuda requested but there is no CUDA device (" + st.reason + ")");
    if (reason) *reason = "no CUDA device (" + st.reason + "); running on the CPU";
    return Backend::cpu;
}

class Runner {
public:
    Runner(const model::Config& c, const model::Weights<float>& w, Backend wanted = Backend::automatic, int device = 0)
        : c_(c), host_(&w), backend_(resolve_backend(wanted, device_status(), &reason_, c.cpu_only_switches())) {
        c.validate();
        if (backend_ == Backend::cuda) {
            ctx_ = std::make_unique<Context>(device);
            dev_ = upload(*ctx_, c, w);
        }
    }

    model::Mat<float> forward(const std::vector<std::int32_t>& tokens, const model::HookSet<float>* hooks = nullptr,
                              model::ForwardOptions o = {}) {
        if (backend_ == Backend::cpu) return model::forward(c_, *host_, tokens, hooks, o);
        ForwardOptions d;
        d.logits = o.logits;
        d.last_layer = o.last_layer;
        return cuda::forward(*ctx_, ws_, c_, dev_, tokens, hooks, d);
    }

    Backend backend() const { return backend_; }
    const std::string& reason() const { return reason_; }
    Context* context() { return ctx_.get(); }
    const DeviceWeights* device_weights() const { return backend_ == Backend::cuda ? &dev_ : nullptr; }

private:
    model::Config c_;
    const model::Weights<float>* host_;  // the caller's weights (must outlive the Runner)
    std::string reason_;
    Backend backend_;
    std::unique_ptr<Context> ctx_;
    DeviceWeights dev_;
    Workspace ws_;
};

}  // namespace sinkscope::cuda
