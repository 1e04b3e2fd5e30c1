// Open MPI's own collectives for the `mpi` table entries (see mpi_collectives.h).
#include "api/mpi_collectives.h"

#include <climits>
#include <cstdint>
#include <cstring>

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

// `send`, or a copy of it in `scratch` when it shares a byte with recv (in place included):
// MPI_IN_PLACE must be passed on every member or on none, and whether a member's buffers
// overlap is its own business, so Open MPI's call never gets it.
const void* apart_from(const void* send, size_t send_bytes, const void* recv, size_t recv_bytes,
                       std::vector<std::byte>& scratch) {
  if (disjoint(send, send_bytes, recv, recv_bytes)) return send;
  scratch.resize(send_bytes);
  std::memcpy(scratch.data(), send, send_bytes);
  return scratch.data();
}

}  // namespace

bool mpi_takes_allreduce(size_t count, DType dtype) {
  return fits_int(count) && reduction_type(dtype) != MPI_DATATYPE_NULL;
}

bool mpi_takes_exchange(size_t block_bytes) {
  return fits_int(block_bytes);
}

bool mpi_takes_reduce_scatter(size_t count, DType dtype) {
  return fits_int(count) && reduction_type(dtype) != MPI_DATATYPE_NULL;
}

void run_allreduce(MPI_Comm comm, const void* send, void* recv, size_t count, DType dtype,
                   ReduceOp op, std::vector<std::byte>& scratch) {
  const size_t bytes = count * dtype_size(dtype);
  transport::check_mpi(
      MPI_Allreduce(apart_from(send, bytes, recv, bytes, scratch), recv, static_cast<int>(count),
                    reduction_type(dtype), mpi_op(op), comm),
      "MPI_Allreduce");
}

void run_allgather(MPI_Comm comm, int size, const void* send, void* recv, size_t block_bytes,
                   std::vector<std::byte>& scratch) {
  const int bytes = static_cast<int>(block_bytes);
  const size_t total = block_bytes * static_cast<size_t>(size);
  transport::check_mpi(MPI_Allgather(apart_from(send, block_bytes, recv, total, scratch), bytes,
                                     MPI_BYTE, recv, bytes, MPI_BYTE, comm),
                       "MPI_Allgather");
}

void run_reduce_scatter(MPI_Comm comm, int size, const void* send, void* recv, size_t count,
                        DType dtype, ReduceOp op, std::vector<std::byte>& scratch) {
  const size_t block = count * dtype_size(dtype);
  const size_t total = block * static_cast<size_t>(size);
  transport::check_mpi(
      MPI_Reduce_scatter_block(apart_from(send, total, recv, block, scratch), recv,
                               static_cast<int>(count), reduction_type(dtype), mpi_op(op), comm),
      "MPI_Reduce_scatter_block");
}

void run_broadcast(MPI_Comm comm, void* buffer, size_t bytes, int root) {
  transport::check_mpi(MPI_Bcast(buffer, static_cast<int>(bytes), MPI_BYTE, root, comm),
                       "MPI_Bcast");
}

void run_all_to_all(MPI_Comm comm, int size, const void* send, void* recv, size_t block_bytes,
                    std::vector<std::byte>& scratch) {
  const int bytes = static_cast<int>(block_bytes);
  const size_t total = block_bytes * static_cast<size_t>(size);
  transport::check_mpi(MPI_Alltoall(apart_from(send, total, recv, total, scratch), bytes, MPI_BYTE,
                                    recv, bytes, MPI_BYTE, comm),
                       "MPI_Alltoall");
}

}  // namespace rankflow::api
