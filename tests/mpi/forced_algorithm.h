// Helpers of the mpirun tests that force an algorithm through its RANKFLOW_<COLLECTIVE> variable
// (algorithm_override_test.cpp, cross_memory_exchange_test.cpp).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rankflow/communicator.h"

namespace rankflow::test {

// The element `i` of member `rank`'s input: different on every member and at every index.
inline int32_t value(int rank, size_t i) {
  return static_cast<int32_t>(i * 7 + static_cast<size_t>(rank) * 1000 + 3);
}

// A communicator made while `variable` is `name` (read at creation), then the variable unset.
inline Communicator forced(const char* variable, std::string_view name) {
  setenv(variable, std::string(name).c_str(), 1);
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  unsetenv(variable);
  return comm;
}

}  // namespace rankflow::test
