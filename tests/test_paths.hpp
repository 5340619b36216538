// Paths the tests read: committed fixtures, the shared test checkpoints, downloaded models.
#pragma once
#include <string>

namespace sinkscope::test {
inline std::string fixture(const std::string& rel) { return std::string(SINKSCOPE_FIXTURES_DIR) + "/" + rel; }
inline std::string shared_model(const std::string& rel) { return std::string(SINKSCOPE_SHARED_DIR) + "/models/" + rel; }
inline std::string downloaded_model(const std::string& rel) { return std::string(SINKSCOPE_MODELS_DIR) + "/" + rel; }
}  // namespace sinkscope::test
