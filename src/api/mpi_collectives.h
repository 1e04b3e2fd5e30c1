// Open MPI's own collectives, for the table entries that run them (coll::Algorithm::open_mpi):
// where the latest sweep found every staged path slower on plain buffers. On one host Open MPI
// copies a large message once, with the kernel's cross-memory attach from the peer's buffer;
// a staged path copies it into the window and the peers copy it out, so there Open MPI's
// collective is the faster one and the communicator runs it on its own duplicate of the
// program's MPI_Comm, blocking (Open MPI's non-blocking collectives run other, slower
// algorithms: × 0.3-0.6 of the blocking ones at 16 KiB-8 MiB here). The mpi_takes_*() check
// that MPI can take the arguments as they are (counts that fit an int, element types MPI has,
// buffers either disjoint or in MPI_IN_PLACE's one form); where it cannot, the communicator
// chooses without Open MPI. Runs on the thread that calls the communicator.
#pragma once

#include <mpi.h>

#include <cstddef>

#include "rankflow/types.h"

namespace rankflow::api {

// Whether MPI can take each call as it is. The table's choice depends on it and is made
// before the call is launched. Bytes and counts are as the communicator checked them.
bool mpi_takes_allreduce(const void* send, const void* recv, size_t count, DType dtype);
bool mpi_takes_allgather(int rank, int size, const void* send, const void* recv,
                         size_t block_bytes);
bool mpi_takes_reduce_scatter(int size, const void* send, const void* recv, size_t count,
                              DType dtype);
bool mpi_takes_broadcast(size_t bytes);
bool mpi_takes_all_to_all(int size, const void* send, const void* recv, size_t block_bytes);

// Each runs the blocking collective on `comm` (one the matching mpi_takes_*() accepted); an
// MPI error is a rankflow::Error.
void run_allreduce(MPI_Comm comm, const void* send, void* recv, size_t count, DType dtype,
                   ReduceOp op);
void run_allgather(MPI_Comm comm, int rank, const void* send, void* recv, size_t block_bytes);
void run_reduce_scatter(MPI_Comm comm, const void* send, void* recv, size_t count, DType dtype,
                        ReduceOp op);
void run_broadcast(MPI_Comm comm, void* buffer, size_t bytes, int root);
void run_all_to_all(MPI_Comm comm, const void* send, void* recv, size_t block_bytes);

}  // namespace rankflow::api
