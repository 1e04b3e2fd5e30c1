// Logging to stderr, one line per message, prefixed with the rank that wrote it. The level comes
// from RANKFLOW_LOG. Thread-safe: each message is written with a single fputs.
#pragma once

#include <sstream>
#include <string>

#include "common/env.h"

namespace rankflow::log {

// The rank printed in every line; set once the rank is known (-1 prints as "?").
void set_rank(int rank);
bool enabled(env::LogLevel level);
void write(env::LogLevel level, const std::string& message);

template <typename... Parts>
void message(env::LogLevel level, const Parts&... parts) {
  if (!enabled(level)) return;
  std::ostringstream out;
  (out << ... << parts);
  write(level, out.str());
}

template <typename... Parts>
void info(const Parts&... parts) {
  message(env::LogLevel::kInfo, parts...);
}
template <typename... Parts>
void debug(const Parts&... parts) {
  message(env::LogLevel::kDebug, parts...);
}
template <typename... Parts>
void warn(const Parts&... parts) {
  message(env::LogLevel::kWarn, parts...);
}
template <typename... Parts>
void error(const Parts&... parts) {
  message(env::LogLevel::kError, parts...);
}

}  // namespace rankflow::log
