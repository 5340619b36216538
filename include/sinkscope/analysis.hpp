// Analyses built on the model: text → samples, the per-layer spike / sink summary.
#pragma once
#include "sinkscope/analysis/summary.hpp"
#include "sinkscope/analysis/text.hpp"
#include "sinkscope/analysis/bos.hpp"
