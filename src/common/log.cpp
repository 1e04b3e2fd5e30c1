// Logging (see log.h). The level is read once per process, on first use.
#include "common/log.h"

#include <atomic>
#include <cstdio>

namespace rankflow::log {
namespace {

std::atomic<int> g_rank{-1};

env::LogLevel current_level() {
  static const env::LogLevel level = [] {
    try {
      return env::log_level();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s; logging at warn\n", e.what());
      return env::LogLevel::kWarn;
    }
  }();
  return level;
}

const char* level_name(env::LogLevel level) {
  switch (level) {
    case env::LogLevel::kError: return "error";
    case env::LogLevel::kWarn: return "warn";
    case env::LogLevel::kInfo: return "info";
    case env::LogLevel::kDebug: return "debug";
  }
  return "?";
}

}  // namespace

void set_rank(int rank) {
  g_rank.store(rank);
}

bool enabled(env::LogLevel level) {
  return level <= current_level();
}

void write(env::LogLevel level, const std::string& message) {
  const int rank = g_rank.load();
  std::string line = "[rankflow ";
  line += rank < 0 ? std::string("?") : std::to_string(rank);
  line += " ";
  line += level_name(level);
  line += "] ";
  line += message;
  line += "\n";
  std::fputs(line.c_str(), stderr);
}

}  // namespace rankflow::log
