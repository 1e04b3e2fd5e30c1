// Internal to rankflow (not installed): a Communicator over another team's window (a domain's),
// and what tests may observe of a Communicator. Threads: as Communicator.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

#include "collectives/machine_profile.h"
#include "rankflow/communicator.h"
#include "rankflow/team.h"

namespace rankflow::api {

// Collective over `comm`: a Communicator (with its own duplicate of `comm` and its own staging
// window for plain memory) whose collectives on memory in [begin, end) of `team`'s window run
// in place, zero-copy, as on alloc() memory. `team` spans the same members in the same order,
// its window holds collective_buffers(size) (api/buffer_placement.h), and it is closed only
// after the Communicator.
Communicator communicator_over(MPI_Comm comm, const Team& team, size_t begin, size_t end);

// How many collectives `communicator` has placed in its staging window so far (the pushed and
// streamed paths and symmetric memory never are).
size_t staged_collectives(const Communicator& communicator);
// The machine profile's rules `communicator`'s members agreed on (collectives/machine_profile.h),
// for tests that work out which algorithm a call takes.
const coll::MachineRules& machine_rules(const Communicator& communicator);
// The label of the algorithm `communicator` chose for its latest collective that chose one
// (the barrier has a single algorithm and chooses none): "broadcast(pushed)",
// "allreduce(twophase)"; "" before any. What rankflow-bench prints as `ran`.
const char* last_chosen_algorithm(const Communicator& communicator);
// The bytes each of the staging window's two buffers holds now.
size_t staging_bytes(const Communicator& communicator);
// Where in each staging buffer the next staged collective of `bytes` would start: 0, or half of
// staging_bytes() for every other call of messages that fit in half (BufferPlacement).
size_t next_staging_offset(const Communicator& communicator, size_t bytes);
// Whether every member maps every other member's memory (one host, shared memory transports):
// then registered buffers are shared with the peers.
bool maps_peers(const Communicator& communicator);
// Whether a member bound to this member's core is in `communicator` (then Request::test yields
// the core every kTestsBetweenYields unfinished tests).
bool shares_a_core(const Communicator& communicator);
// How many unfinished Request::test calls pass between two yields on a shared core.
inline constexpr uint32_t kTestsBetweenYields = 64;
// Whether a collective with send and recv there runs in place (symmetric or attached registered
// memory), not staged.
bool runs_in_place(const Communicator& communicator, const void* send, size_t send_bytes,
                   const void* recv, size_t recv_bytes);

}  // namespace rankflow::api
