// Environment parameters (see env.h). Values are read on each call so tests can change them.
#include "common/env.h"

#include <cmath>
#include <cstdlib>

#include "rankflow/error.h"

namespace rankflow::env {

std::optional<std::string> get(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::chrono::nanoseconds parse_timeout(const char* var, const std::string& value) {
  char* end = nullptr;
  const double seconds = std::strtod(value.c_str(), &end);
  if (end == value.c_str() || *end != '\0' || !std::isfinite(seconds) || seconds <= 0 ||
      seconds > 1e6) {
    throw InvalidArgument(std::string(var) + "='" + value +
                          "' is not a positive number of seconds (for example 120 or 0.5)");
  }
  const auto nanoseconds = static_cast<long long>(seconds * 1e9);
  if (nanoseconds < 1) {  // a zero timeout would end every wait at once
    throw InvalidArgument(std::string(var) + "='" + value +
                          "' is shorter than a nanosecond, the finest timeout (for example 120 or "
                          "0.5 seconds)");
  }
  return std::chrono::nanoseconds(nanoseconds);
}

LogLevel parse_log_level(const char* var, const std::string& value) {
  if (value == "error") return LogLevel::kError;
  if (value == "warn") return LogLevel::kWarn;
  if (value == "info") return LogLevel::kInfo;
  if (value == "debug") return LogLevel::kDebug;
  throw InvalidArgument(std::string(var) + "='" + value +
                        "' is not a log level; valid levels are error, warn, info, debug");
}

BindPolicy parse_bind_policy(const char* var, const std::string& value) {
  if (value == "core") return BindPolicy::kCore;
  if (value == "none") return BindPolicy::kNone;
  throw InvalidArgument(std::string(var) + "='" + value +
                        "' is not a binding policy; valid policies are core, none");
}

ProgressMode parse_progress_mode(const char* var, const std::string& value) {
  if (value == "caller") return ProgressMode::kCaller;
  if (value == "thread") return ProgressMode::kThread;
  throw InvalidArgument(std::string(var) + "='" + value +
                        "' is not a progress mode; valid modes are caller, thread");
}

bool parse_on_off(const char* var, const std::string& value) {
  if (value == "on") return true;
  if (value == "off") return false;
  throw InvalidArgument(std::string(var) + "='" + value + "' is neither on nor off");
}

CrossMemoryDirection parse_cross_memory_direction(const char* var, const std::string& value) {
  if (value == "auto") return CrossMemoryDirection::kAuto;
  if (value == "write") return CrossMemoryDirection::kWrite;
  if (value == "read") return CrossMemoryDirection::kRead;
  throw InvalidArgument(
      std::string(var) + "='" + value +
      "' is not a cross-memory direction; valid directions are auto, write, read");
}

std::chrono::nanoseconds timeout() {
  const auto value = get("RANKFLOW_TIMEOUT_S");
  return value ? parse_timeout("RANKFLOW_TIMEOUT_S", *value) : std::chrono::seconds(120);
}

std::chrono::nanoseconds startup_timeout() {
  const auto value = get("RANKFLOW_STARTUP_TIMEOUT_S");
  return value ? parse_timeout("RANKFLOW_STARTUP_TIMEOUT_S", *value) : std::chrono::seconds(60);
}

LogLevel log_level() {
  const auto value = get("RANKFLOW_LOG");
  return value ? parse_log_level("RANKFLOW_LOG", *value) : LogLevel::kWarn;
}

BindPolicy bind_policy() {
  const auto value = get("RANKFLOW_BIND");
  return value ? parse_bind_policy("RANKFLOW_BIND", *value) : BindPolicy::kCore;
}

ProgressMode progress_mode() {
  const auto value = get("RANKFLOW_PROGRESS");
  return value ? parse_progress_mode("RANKFLOW_PROGRESS", *value) : ProgressMode::kCaller;
}

bool cross_memory() {
  const auto value = get("RANKFLOW_CROSS_MEMORY");
  return value ? parse_on_off("RANKFLOW_CROSS_MEMORY", *value) : true;
}

bool check_args() {
  const auto value = get("RANKFLOW_CHECK_ARGS");
  return value ? parse_on_off("RANKFLOW_CHECK_ARGS", *value) : false;
}

CrossMemoryDirection cross_memory_direction() {
  const auto value = get("RANKFLOW_CROSS_MEMORY_DIRECTION");
  return value ? parse_cross_memory_direction("RANKFLOW_CROSS_MEMORY_DIRECTION", *value)
               : CrossMemoryDirection::kAuto;
}

}  // namespace rankflow::env
