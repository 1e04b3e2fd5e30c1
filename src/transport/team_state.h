// TeamState: what a Team handle shares: the window, the layout of its named buffers and
// counters, the barrier epoch and the wait limit. create_team() builds one over an MPI
// communicator. Threads: as Context.
#pragma once

#include <mpi.h>

#include <chrono>
#include <memory>
#include <vector>

#include "rankflow/team.h"
#include "transport/context.h"
#include "transport/team_layout.h"
#include "transport/window.h"

namespace rankflow::transport {

class TeamState {
 public:
  TeamState(std::shared_ptr<Window> team_window, TeamLayout team_layout)
      : window(std::move(team_window)),
        layout(std::move(team_layout)),
        timeout(window->context().timeout()) {}

  static const std::shared_ptr<TeamState>& of(const Team& team) { return team.state_; }

  // The scope under which the window's UCX waits for this team (flushes, atomics on peers it
  // does not map) take the team's set_timeout; none of its own where that is the transport's.
  Context::CallScope ucx_limit() const {
    const bool own = timeout != window->context().timeout();
    return Context::CallScope("", own ? timeout : std::chrono::nanoseconds{0}, "set_timeout");
  }

  std::shared_ptr<Window> window;
  TeamLayout layout;
  std::chrono::nanoseconds timeout;
  uint64_t barrier_epoch = 0;
};

// Collective over `comm`: a team whose window holds the control area and `buffers`. With
// `last_buffer_here` false this member's window stops where the last buffer starts (a buffer
// only some members hold, such as the host's tensor arena); peers' accesses to it are then
// out of bounds.
Team create_team(std::shared_ptr<Context> context, MPI_Comm comm, std::vector<BufferSpec> buffers,
                 std::string name, uint32_t signal_slots = Team::kDefaultSignalSlots,
                 bool last_buffer_here = true);

}  // namespace rankflow::transport
