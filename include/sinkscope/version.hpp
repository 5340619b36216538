#pragma once
namespace sinkscope {
inline constexpr const char* version() { return "0.1.0"; }
}  // namespace sinkscope
