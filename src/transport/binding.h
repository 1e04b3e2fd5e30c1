// Core binding with hwloc: each rank on a distinct core by node-local rank (round robin), unless
// the launcher already bound it to one core (mpirun --bind-to core) or RANKFLOW_BIND=none.
// Called once by Context on the main thread, before any memory is allocated.
#pragma once

#include <string>

#include "common/env.h"

namespace rankflow::transport {

struct BindingResult {
  bool bound_by_rankflow = false;  // true when this call changed the process binding
  std::string description;         // "core 1 (PUs 1)", "kept launcher binding: core 0", ...
};

// node_local_rank: this rank's index among the ranks on this host.
BindingResult bind_process(int node_local_rank, env::BindPolicy policy);

// The logical index of the one core this process is bound to, or -1 (unbound, or bound to
// several cores).
int bound_core();

}  // namespace rankflow::transport
