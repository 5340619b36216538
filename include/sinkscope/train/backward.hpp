// The backward kernels of the sinkscope transformer live beside their forward kernels, one file per
// layer (include/sinkscope/layers/), in llm.c's convention:
//
//   x_backward(dinp…, dweight…, dout, saved…, inp, weight…, dims)
//
// Gradients are named d<what>; every gradient is *accumulated* (+=), so the caller zeroes them once
// per step and several uses of one tensor simply add up. The oracle for all of them is the
// finite-difference check in tests/train/test_backward.cpp. This header includes every layer.
#pragma once

#include "sinkscope/model/layers.hpp"
