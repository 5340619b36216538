// The sinkscope transformer: config (and its JSON), weights, forward pass with hooks, interventions and attention surgery,
// reducers, loaders, and xtensor views of captured activations (model::view).
#pragma once
#include "sinkscope/model/attention_surgery.hpp"
#include "sinkscope/model/batch.hpp"
#include "sinkscope/model/config.hpp"
#include "sinkscope/model/config_io.hpp"
#include "sinkscope/model/forward.hpp"
#include "sinkscope/model/hooks.hpp"
#include "sinkscope/model/interventions.hpp"
#include "sinkscope/model/layers.hpp"
#include "sinkscope/model/load.hpp"
#include "sinkscope/model/reducers.hpp"
#include "sinkscope/model/views.hpp"
#include "sinkscope/model/weights.hpp"
