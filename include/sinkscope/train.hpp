// sinkscope::train — training the sinkscope transformer from scratch: backward pass, AdamW, data,
// checkpoints, the sink / residual-peak trace, and the Trainer that ties them together.
#pragma once
#include "sinkscope/train/backward.hpp"
#include "sinkscope/train/checkpoint.hpp"
#include "sinkscope/train/config_io.hpp"
#include "sinkscope/train/data.hpp"
#include "sinkscope/train/init.hpp"
#include "sinkscope/train/loss.hpp"
#include "sinkscope/train/model_backward.hpp"
#include "sinkscope/train/optimizer.hpp"
#include "sinkscope/train/planted.hpp"
#include "sinkscope/train/planted_p0_circuit.hpp"
#include "sinkscope/train/planted_sink_keys.hpp"
#include "sinkscope/train/random.hpp"
#include "sinkscope/train/run_trainer.hpp"
#include "sinkscope/train/tape.hpp"
#include "sinkscope/train/trace.hpp"
#include "sinkscope/train/trainer.hpp"
