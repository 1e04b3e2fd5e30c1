// Open MPI's own collectives, for the table entries that run them (coll::Algorithm::open_mpi):
// where the latest sweep found every staged path slower on plain buffers. On one host Open MPI
// copies a large message once, with the kernel's cross-memory attach from the peer's buffer;
// a staged path copies it into the window and the peers copy it out, so there Open MPI's
// collective is the faster one and the communicator runs it on its own duplicate of the
// program's MPI_Comm, blocking (Open MPI's non-blocking collectives run other, slower
// algorithms: × 0.3-0.6 of the blocking ones at 16 KiB-8 MiB here). Where mpi_takes_*() says
// MPI cannot take a call, the communicator chooses without Open MPI. On two members the
// exchanges and broadcast use Open MPI's point-to-point instead (api/mpi_pairwise.h). Runs on
// the thread that calls the communicator.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "rankflow/types.h"

namespace rankflow::api {

// Whether MPI can take the call: counts that fit an int and, for the reductions, an element
// type MPI has (not f16 or bf16). These depend only on what every member passes alike (counts
// and types, not pointers), so every member answers the same and the members' choices stay in
// step.
bool mpi_takes_allreduce(size_t count, DType dtype);
bool mpi_takes_reduce_scatter(size_t count, DType dtype);
bool mpi_takes_exchange(size_t block_bytes);  // allgather, all_to_all, broadcast

// Each runs the blocking collective on `comm`; an MPI error is a rankflow::Error. An input that
// shares bytes with the output (in place included) is copied into `scratch` first, since
// MPI_IN_PLACE must be passed on every member or on none.
void run_allreduce(MPI_Comm comm, const void* send, void* recv, size_t count, DType dtype,
                   ReduceOp op, std::vector<std::byte>& scratch);
void run_allgather(MPI_Comm comm, int size, const void* send, void* recv, size_t block_bytes,
                   std::vector<std::byte>& scratch);
void run_reduce_scatter(MPI_Comm comm, int size, const void* send, void* recv, size_t count,
                        DType dtype, ReduceOp op, std::vector<std::byte>& scratch);
void run_broadcast(MPI_Comm comm, void* buffer, size_t bytes, int root);
void run_all_to_all(MPI_Comm comm, int size, const void* send, void* recv, size_t block_bytes,
                    std::vector<std::byte>& scratch);

}  // namespace rankflow::api
