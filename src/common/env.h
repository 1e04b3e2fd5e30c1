// Environment parameters: every RANKFLOW_* variable is parsed here, once, with a clear Error for a
// value rankflow does not understand, except the algorithm tables' (RANKFLOW_ALLREDUCE and the
// others: collectives/registry.cpp) and RANKFLOW_MACHINE (collectives/machine_profile.cpp),
// which need the tables. Pure functions; any thread may call them.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace rankflow::env {

// `text` without its leading and trailing spaces (the variables' lists allow them).
inline std::string_view trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ')
    text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ')
    text.remove_suffix(1);
  return text;
}

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };
enum class BindPolicy { kCore, kNone };
enum class ProgressMode { kCaller, kThread };
enum class CrossMemoryDirection { kAuto, kWrite, kRead };

// Raw lookup: the variable's value, or nullopt when unset or empty.
std::optional<std::string> get(const char* name);

// RANKFLOW_TIMEOUT_S: seconds (fractional allowed, 1 ns to 1e6 s) a blocking wait may take.
// Default 120.
std::chrono::nanoseconds timeout();
// RANKFLOW_STARTUP_TIMEOUT_S: seconds the MPI waits of start-up may take (every rank's arrival at
// its first Worker or Communicator, the transport's wiring, and Worker::init: ranks arrive there
// as fast as each one loads, maps and zeroes its memory).
// Start-up waits allow the longer of this and RANKFLOW_TIMEOUT_S. Default 60.
std::chrono::nanoseconds startup_timeout();
// RANKFLOW_LOG: error|warn|info|debug. Default warn.
LogLevel log_level();
// RANKFLOW_BIND: core|none. Default core.
BindPolicy bind_policy();
// RANKFLOW_PROGRESS: caller|thread. Default caller (rankflow progresses only inside its calls);
// thread starts a background thread that advances non-blocking collectives.
ProgressMode progress_mode();
// RANKFLOW_CROSS_MEMORY: on|off. Default on: collectives on plain buffers move data between
// processes on the same host with one kernel copy where that wins (process_vm_writev/readv:
// the plain allreduce's reduced parts, broadcast, allgather and all_to_all); off sends it
// through the windows instead (for a site that forbids cross-memory attach, or to compare).
// Off on one rank only still lets its peers write into it.
bool cross_memory();
// RANKFLOW_CROSS_MEMORY_DIRECTION: auto|write|read. Which side makes the kernel copy of a
// cross-memory allgather or all_to_all block: a pair of members reads (each its blocks from the
// other's send) where both offer to, else writes (each its blocks into the other's recv). read
// offers, write does not, and auto (the default) offers where the machine profile measured
// reads faster and a probe of the members' round trip says the machine is in that state
// (collectives/exchange_cross_memory.cpp, collectives/link_probe.h).
CrossMemoryDirection cross_memory_direction();
// RANKFLOW_CHECK_ARGS: on|off. Default off; on: the members of a communicator compare each
// collective's arguments before it runs (api/argument_check.h), read when one is made.
bool check_args();

// Parsers, exposed for tests. Each throws InvalidArgument naming the variable and the value.
std::chrono::nanoseconds parse_timeout(const char* var, const std::string& value);
LogLevel parse_log_level(const char* var, const std::string& value);
BindPolicy parse_bind_policy(const char* var, const std::string& value);
ProgressMode parse_progress_mode(const char* var, const std::string& value);
bool parse_on_off(const char* var, const std::string& value);
CrossMemoryDirection parse_cross_memory_direction(const char* var, const std::string& value);

}  // namespace rankflow::env
