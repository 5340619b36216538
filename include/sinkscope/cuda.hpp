// sinkscope/cuda.hpp — the CUDA backend: the same transformer, hooks, loss and AdamW on an NVIDIA GPU.
//
// Header-only like the rest of sinkscope, but these headers hold CUDA kernels, so they compile only in
// a .cu source built by nvcc. Including this file from a plain C++ translation unit is a compile-time
// error with an explanation (below), never a silent CPU fallback: CPU code uses <sinkscope/model.hpp>,
// and sinkscope.hpp does not include this file. The CPU path is the reference; tests/cuda/ compares
// every kernel and the whole model with it.
//
// Using it: a .cu source, C++17, linked with CUDA::cudart and CUDA::cublas besides sinkscope::sinkscope;
// define EIGEN_NO_CUDA for that target (Eigen is host code here: without it Eigen annotates itself for
// the device and nvcc warns at every constexpr call). tests/cuda/CMakeLists.txt is the example.
//
//   cuda/common.cuh       errors (SINKSCOPE_CUDA_CHECK…), device_status(), DeviceBuffer, Context
//   cuda/gemm.cuh         row-major GEMMs through cuBLAS (the transpose trick), linear layer
//   cuda/dequantize.cuh   GGUF F16/BF16/Q8_0/Q4_0/Q4_1/Q5_0/Q5_1/Q4_K/Q5_K/Q6_K on the device
//   cuda/elementwise.cuh  embedding, residual add, activations, SwiGLU, gate, force-sink mask
//   cuda/norms.cuh        RMSNorm, LayerNorm, DynamicTanh, QK-norm (forward, backward)
//   cuda/rope.cuh         RoPE, interleaved and half-split (forward, backward)
//   cuda/attention.cuh    fused causal attention (pattern, scores, attention received), backward
//   cuda/loss.cuh         cross-entropy with loss masks
//   cuda/weights.cuh      DeviceWeights (one arena, model::Weights layout), shape checks
//   cuda/optimizer.cuh    AdamW, gradient norm and clipping
//   cuda/forward.cuh      cuda::forward with the CPU's hook points, AttentionReceived
//   cuda/train.cuh        cuda::Trainer: batched forward + backward + AdamW
//   cuda/hosted_trainer.cuh  cuda::HostedTrainer: train::Trainer's run interface (data, trace,
//                         checkpoints on the host) around cuda::Trainer, for train::run_training
//   cuda/backend.cuh      Backend / Runner: runtime choice between the GPU and the CPU reference
#pragma once

#if !defined(__CUDACC__)
#error "sinkscope/cuda.hpp is the CUDA backend: include it only from a .cu file compiled by nvcc (CMake: enable_language(CUDA), option SINKSCOPE_CUDA). CPU code: include <sinkscope/model.hpp> instead."
#endif

#include "sinkscope/cuda/common.cuh"
#include "sinkscope/cuda/gemm.cuh"
#include "sinkscope/cuda/dequantize.cuh"
#include "sinkscope/cuda/elementwise.cuh"
#include "sinkscope/cuda/norms.cuh"
#include "sinkscope/cuda/rope.cuh"
#include "sinkscope/cuda/attention.cuh"
#include "sinkscope/cuda/loss.cuh"
#include "sinkscope/cuda/weights.cuh"
#include "sinkscope/cuda/optimizer.cuh"
#include "sinkscope/cuda/forward.cuh"
#include "sinkscope/cuda/train.cuh"
#include "sinkscope/cuda/hosted_trainer.cuh"
#include "sinkscope/cuda/backend.cuh"
