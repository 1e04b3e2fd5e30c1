// Open MPI's own collectives for the `mpi` table entries (see mpi_collectives.h).
#include "api/mpi_collectives.h"

#include <climits>
#include <cstdint>

#include "transport/mpi_session.h"

namespace rankflow::api {
namespace {

// MPI's type for a reduced element, or MPI_DATATYPE_NULL (f16 and bf16 have none in MPI).
MPI_Datatype reduction_type(DType dtype) {
  switch (dtype) {
    case DType::kF32: return MPI_FLOAT;
    case DType::kF64: return MPI_DOUBLE;
    case DType::kI32: return MPI_INT32_T;
    case DType::kI64: return MPI_INT64_T;
    default: return MPI_DATATYPE_NULL;
  }
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return MPI_SUM;
    case ReduceOp::kProd: return MPI_PROD;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
  }
  return MPI_OP_NULL;
}

bool fits_int(size_t n) {
  return n <= static_cast<size_t>(INT_MAX);
}

bool disjoint(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return a_bytes == 0 || b_bytes == 0 || x + a_bytes <= y || y + b_bytes <= x;
}

const void* in_place_or(const void* send, bool in_place) {
  return in_place ? MPI_IN_PLACE : send;
}

const std::byte* block_of(const void* base, int rank, size_t block_bytes) {
  return static_cast<const std::byte*>(base) + static_cast<size_t>(rank) * block_bytes;
}

}  // namespace

bool mpi_takes_allreduce(const void* send, const void* recv, size_t count, DType dtype) {
  const size_t bytes = count * dtype_size(dtype);
  return fits_int(count) && reduction_type(dtype) != MPI_DATATYPE_NULL &&
         (send == recv || disjoint(send, bytes, recv, bytes));
}

bool mpi_takes_allgather(int rank, int size, const void* send, const void* recv,
                         size_t block_bytes) {
  return fits_int(block_bytes) &&
         (send == block_of(recv, rank, block_bytes) ||
          disjoint(send, block_bytes, recv, block_bytes * static_cast<size_t>(size)));
}

bool mpi_takes_reduce_scatter(int size, const void* send, const void* recv, size_t count,
                              DType dtype) {
  const size_t block = count * dtype_size(dtype);
  return fits_int(count) && reduction_type(dtype) != MPI_DATATYPE_NULL &&
         (send == recv || disjoint(send, block * static_cast<size_t>(size), recv, block));
}

bool mpi_takes_broadcast(size_t bytes) {
  return fits_int(bytes);
}

bool mpi_takes_all_to_all(int size, const void* send, const void* recv, size_t block_bytes) {
  const size_t total = block_bytes * static_cast<size_t>(size);
  return fits_int(block_bytes) && (send == recv || disjoint(send, total, recv, total));
}

void run_allreduce(MPI_Comm comm, const void* send, void* recv, size_t count, DType dtype,
                   ReduceOp op) {
  transport::check_mpi(MPI_Allreduce(in_place_or(send, send == recv), recv, static_cast<int>(count),
                                     reduction_type(dtype), mpi_op(op), comm),
                       "MPI_Allreduce");
}

void run_allgather(MPI_Comm comm, int rank, const void* send, void* recv, size_t block_bytes) {
  const int bytes = static_cast<int>(block_bytes);
  transport::check_mpi(MPI_Allgather(in_place_or(send, send == block_of(recv, rank, block_bytes)),
                                     bytes, MPI_BYTE, recv, bytes, MPI_BYTE, comm),
                       "MPI_Allgather");
}

void run_reduce_scatter(MPI_Comm comm, const void* send, void* recv, size_t count, DType dtype,
                        ReduceOp op) {
  transport::check_mpi(
      MPI_Reduce_scatter_block(in_place_or(send, send == recv), recv, static_cast<int>(count),
                               reduction_type(dtype), mpi_op(op), comm),
      "MPI_Reduce_scatter_block");
}

void run_broadcast(MPI_Comm comm, void* buffer, size_t bytes, int root) {
  transport::check_mpi(MPI_Bcast(buffer, static_cast<int>(bytes), MPI_BYTE, root, comm),
                       "MPI_Bcast");
}

void run_all_to_all(MPI_Comm comm, const void* send, void* recv, size_t block_bytes) {
  const int bytes = static_cast<int>(block_bytes);
  transport::check_mpi(
      MPI_Alltoall(in_place_or(send, send == recv), bytes, MPI_BYTE, recv, bytes, MPI_BYTE, comm),
      "MPI_Alltoall");
}

}  // namespace rankflow::api
