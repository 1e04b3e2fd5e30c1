// Open MPI's point-to-point in place of its collective, on two members: the `mpi` entries of
// allgather, all_to_all and broadcast (coll::Algorithm::open_mpi) exchange the blocks with
// MPI_Isend and MPI_Irecv, copy this member's own block while the transfer runs, and wait for
// both with MPI_Testall under the communicator's timeout. On one host Open MPI moves a large
// message with one copy through the kernel's cross-memory attach, as its collective does; the
// messages themselves say that both members have arrived, so no arrival barrier goes before
// them (that barrier cost Open MPI's collective 5-14 % at 4-32 KiB), and a member that never
// comes or chose another algorithm still ends the call in a Timeout naming the rank, the
// operation and the peer. Runs on the thread that calls the communicator.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rankflow::api {

// One call: the communicator's duplicate, this member's rank (0 or 1), the operation named in a
// Timeout ("allgather(mpi)"), the limit, and the call's number among the communicator's pair
// calls (its tag, which a Timeout names). After a Timeout the members are out of step, as after
// any: the communicator must be closed.
struct PairCall {
  MPI_Comm comm;
  int rank;
  const char* operation;
  std::chrono::nanoseconds timeout;
  uint32_t sequence;
};

// As MPI_Allgather, MPI_Alltoall and MPI_Bcast on two members, with blocks of `block_bytes`
// (`bytes` for broadcast). Inputs that share bytes with the output are copied into `scratch`
// first; in place (send at this member's block of recv, or all_to_all's send == recv) is fine.
void pair_allgather(const PairCall& call, const void* send, void* recv, size_t block_bytes,
                    std::vector<std::byte>& scratch);
void pair_all_to_all(const PairCall& call, const void* send, void* recv, size_t block_bytes,
                     std::vector<std::byte>& scratch);
void pair_broadcast(const PairCall& call, void* buffer, size_t bytes, int root);

}  // namespace rankflow::api
