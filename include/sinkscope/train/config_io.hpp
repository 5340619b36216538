// Deprecated home of model::Config ⇄ JSON: it lives next to Config now (model/config_io.hpp). These names
// keep code written against sinkscope::train::config_to_json / config_from_json compiling.
#pragma once

#include "sinkscope/model/config_io.hpp"

namespace sinkscope::train {

using model::config_from_json;
using model::config_to_json;

}  // namespace sinkscope::train
