// make_collective_context: a collective context (coll::CollContext) over a team of its own on
// `comm`, whose window holds `buffers`, the collectives' inbox and their control area. Collective.
// Used by BufferPlacement (symmetric allocations, the staging window) and RegisteredMemory.
// Threads: the thread that calls the communicator.
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "collectives/coll_context.h"
#include "rankflow/team.h"
#include "transport/context.h"

namespace rankflow::api {

std::unique_ptr<coll::CollContext> make_collective_context(
    const std::shared_ptr<transport::Context>& context, MPI_Comm comm,
    std::vector<BufferSpec> buffers, const char* name);

}  // namespace rankflow::api
