// Analyses built on the model: text → samples, the per-layer spike / sink summary, the logit lens and
// direct logit attribution.
#pragma once
#include "sinkscope/analysis/logit_attribution.hpp"
#include "sinkscope/analysis/logit_lens.hpp"
#include "sinkscope/analysis/summary.hpp"
#include "sinkscope/analysis/text.hpp"
#include "sinkscope/analysis/bos.hpp"
