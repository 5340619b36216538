// Everything in sinkscope. Include a module header (<sinkscope/io.hpp>, <sinkscope/model.hpp>, …) for less.
#pragma once
#include "sinkscope/version.hpp"
#include "sinkscope/core/error.hpp"
#include "sinkscope/io.hpp"
#include "sinkscope/tokenizer.hpp"
#include "sinkscope/model.hpp"
#include "sinkscope/analysis.hpp"
#include "sinkscope/theory.hpp"
