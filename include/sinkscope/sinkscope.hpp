// Everything in sinkscope. Include module headers (<sinkscope/io.hpp>, …) for less.
#pragma once
#include "sinkscope/version.hpp"
#include "sinkscope/core/error.hpp"
