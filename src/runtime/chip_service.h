// ChipService: a chip worker's side of a run. It waits for the next descriptor in its ring
// (heartbeats of the host restart the wait's deadline), decodes it, gives the kernel its
// arguments (mapped straight into the host's arena, or staged through local copies fetched
// before and written back after), runs the kernel or built-in, and writes a completion record
// into the host's window. The chip's main thread, for the length of each run.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>

#include "rankflow/team.h"
#include "runtime/builtin_kernels.h"
#include "runtime/counter.h"
#include "runtime/domains.h"
#include "runtime/kernel_table.h"
#include "runtime/task_codec.h"
#include "transport/context.h"

namespace rankflow::runtime {

struct ArgSpaces;

class ChipService {
 public:
  ChipService(Team& team, const KernelTable& kernels, std::shared_ptr<transport::Context> context,
              int rank);
  ~ChipService();
  // Serves tasks until the host's end-of-run marker; then the run's domains close.
  void serve_run();
  // Waits (hearing the host's heartbeats) until the host closes the worker: a host that works
  // long before close() does not time its chips out in the collective close.
  void wait_for_close();
  // Waits until `ready()`; the deadline (RANKFLOW_TIMEOUT_S) restarts at every heartbeat of the
  // host, so only a host that is gone or stuck times the chip out. `what` names the wait.
  void wait_for_host(const std::function<bool()>& ready, const char* what);

 private:
  void wait_for_descriptor(uint64_t sequence);
  // The host closed the worker while this chip's run is open: ends the process (MPI_Abort).
  [[noreturn]] void host_closed_during_run() const;
  // Runs one task; fills `record` with its outcome.
  void run_task(const DecodedTask& task, Completion& record);
  void run_kernel(const DecodedTask& task);
  bool streamed_predecessors_ok(uint64_t sequence, uint32_t ring_deps) const;

  Team& team_;
  const KernelTable& kernels_;
  ChipDomains domains_;  // the domains of this run it belongs to
  ChipEnv env_;
  int rank_;
  int chip_;
  bool host_shares_core_;  // the host is bound to this chip's core
  std::unique_ptr<ArgSpaces> spaces_;
  uint64_t sequence_ = 0;  // descriptors consumed so far
  uint64_t runs_ = 0;      // runs served (the number of the one being served)
  size_t posted_;          // the host's count of descriptors posted here (local)
  CounterWriter done_;     // this chip's completions, in the host's window
  CounterWriter failed_;   // ... and how many of them failed
  DecodedTask decoded_;    // reused for every descriptor
  std::array<uint8_t, kRingSlots> succeeded_{};  // per ring slot: its last task succeeded
};

}  // namespace rankflow::runtime
