// The forward kernels of the sinkscope transformer, one file per layer with its backward beside it
// (include/sinkscope/layers/). This header includes them all; train/backward.hpp is the same set.
#pragma once

#include "sinkscope/layers/activations.hpp"
#include "sinkscope/layers/attention.hpp"
#include "sinkscope/layers/linear.hpp"
#include "sinkscope/layers/moe.hpp"
#include "sinkscope/layers/norms.hpp"
#include "sinkscope/layers/rope.hpp"
