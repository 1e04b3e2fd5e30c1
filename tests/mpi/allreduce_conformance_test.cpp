// Allreduce conformance: every algorithm x dtype x op x {in place, out of place} x counts
// {0, 1, P-1, P, 1000003, 2^20}, on plain user buffers and on symmetric buffers, against Open
// MPI's MPI_Allreduce on the same inputs (f16/bf16: MPI over the inputs widened to f32, then
// rounded). Floats compare within a tolerance scaled to P; integers and f16/bf16 (whose inputs
// are small integers, so every partial sum is exact) compare exactly.
// RANKFLOW_TEST_SWEEP=standard (collectives.np2.shm) keeps the odd large count 1000003 for every
// dtype and op and 2^20 for f32 sum only; reduced (the TCP runs and the runs at 1 and 3-5 ranks)
// keeps the two large counts for f32 sum only; unset, the full sweep (label full_sweep).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/reduce.h"
#include "collectives/registry.h"
#include "mpi_test_main.h"
#include "rankflow/communicator.h"

namespace rankflow::test {
namespace {

struct Case {
  DType dtype;
  ReduceOp op;
  size_t count;
  bool in_place;
};

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::kF64: return MPI_DOUBLE;
    case DType::kI32: return MPI_INT32_T;
    case DType::kI64: return MPI_INT64_T;
    default: return MPI_FLOAT;  // f32, and f16/bf16 widened
  }
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return MPI_SUM;
    case ReduceOp::kProd: return MPI_PROD;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
  }
  return MPI_SUM;
}

// Input element i of `rank` as a double. Products use values whose product stays exact.
double input(int rank, size_t i, const Case& c) {
  const bool integral = c.dtype != DType::kF32 && c.dtype != DType::kF64;
  if (c.op == ReduceOp::kProd)
    return ((i + rank) % 3 == 0) ? -1.0 : ((i + rank) % 3 == 1 ? 2.0 : 1.0);
  if (integral) return static_cast<double>(static_cast<int>((i * 7 + rank * 13) % 17) - 8);
  return ((i * 7 + rank * 13) % 101) * 0.37 - 17.0 + rank * 0.011;
}

void store(void* data, size_t i, DType dtype, double v) {
  switch (dtype) {
    case DType::kF32: static_cast<float*>(data)[i] = static_cast<float>(v); break;
    case DType::kF64: static_cast<double*>(data)[i] = v; break;
    case DType::kF16:
      static_cast<uint16_t*>(data)[i] = coll::float_to_half(static_cast<float>(v));
      break;
    case DType::kBF16:
      static_cast<uint16_t*>(data)[i] = coll::float_to_bf16(static_cast<float>(v));
      break;
    case DType::kI32: static_cast<int32_t*>(data)[i] = static_cast<int32_t>(v); break;
    case DType::kI64: static_cast<int64_t*>(data)[i] = static_cast<int64_t>(v); break;
    default: break;
  }
}

double load(const void* data, size_t i, DType dtype) {
  switch (dtype) {
    case DType::kF32: return static_cast<const float*>(data)[i];
    case DType::kF64: return static_cast<const double*>(data)[i];
    case DType::kF16: return coll::half_to_float(static_cast<const uint16_t*>(data)[i]);
    case DType::kBF16: return coll::bf16_to_float(static_cast<const uint16_t*>(data)[i]);
    case DType::kI32: return static_cast<const int32_t*>(data)[i];
    case DType::kI64: return static_cast<double>(static_cast<const int64_t*>(data)[i]);
    default: break;
  }
  return 0;
}

// Buffers reused from case to case. Fresh multi-megabyte vectors per case cost more than the
// collectives themselves (page faults and zero-filling), so each buffer only grows.
struct Scratch {
  std::vector<std::byte> user_in, user_out, mpi_in, mpi_out;
  std::vector<double> expected;
};

std::byte* at_least(std::vector<std::byte>& buffer, size_t bytes) {
  if (buffer.size() < bytes + 1) buffer.resize(bytes + 1);
  return buffer.data();
}

// Open MPI's answer for the same inputs, as doubles, in scratch.expected.
void mpi_reference(const Case& c, MPI_Comm comm, int rank, Scratch& scratch) {
  const size_t wide = c.dtype == DType::kF16 || c.dtype == DType::kBF16 ? 4 : dtype_size(c.dtype);
  const DType wide_type = wide == 4 && c.dtype != DType::kI32 ? DType::kF32 : c.dtype;
  std::byte* in = at_least(scratch.mpi_in, c.count * wide);
  std::byte* out = at_least(scratch.mpi_out, c.count * wide);
  for (size_t i = 0; i < c.count; ++i)
    store(in, i, wide_type, input(rank, i, c));
  MPI_Request request;
  MPI_Iallreduce(in, out, static_cast<int>(c.count), mpi_type(c.dtype), mpi_op(c.op), comm,
                 &request);
  context().mpi_wait(request, "reference MPI_Iallreduce");
  scratch.expected.resize(c.count);
  for (size_t i = 0; i < c.count; ++i)
    scratch.expected[i] = load(out, i, wide_type);
}

std::string describe(std::string_view algorithm, const Case& c, bool symmetric) {
  return std::string(algorithm) + " " + std::string(to_string(c.dtype)) + " " +
         std::string(to_string(c.op)) + " count " + std::to_string(c.count) +
         (c.in_place ? " in place" : " out of place") + (symmetric ? " symmetric" : " user");
}

// Runs one case; returns an empty string or the first mismatch. An out-of-place result buffer
// is first filled with 0xff bytes (NaN for floats, -1 for integers), so a result left over from
// the case before cannot pass for this one's.
std::string run_case(const Communicator& comm, std::string_view algorithm, const Case& c,
                     SymmetricBuffer* symmetric, Scratch& scratch) {
  const size_t es = dtype_size(c.dtype);
  const size_t bytes = c.count * es;
  std::byte* in =
      symmetric ? static_cast<std::byte*>(symmetric->data()) : at_least(scratch.user_in, bytes);
  std::byte* out = c.in_place ? in : (symmetric ? in + bytes : at_least(scratch.user_out, bytes));
  const int rank = comm.rank();
  for (size_t i = 0; i < c.count; ++i)
    store(in, i, c.dtype, input(rank, i, c));
  if (!c.in_place) std::memset(out, 0xff, bytes);
  comm.allreduce(in, out, c.count, c.dtype, c.op, algorithm);
  mpi_reference(c, comm.mpi_comm(), rank, scratch);
  const std::vector<double>& expected = scratch.expected;
  const bool exact = c.dtype != DType::kF32 && c.dtype != DType::kF64;
  const double eps = c.dtype == DType::kF32 ? 1.2e-7 : 2.3e-16;
  for (size_t i = 0; i < c.count; ++i) {
    double want = expected[i];
    if (c.dtype == DType::kF16)
      want = coll::half_to_float(coll::float_to_half(static_cast<float>(want)));
    if (c.dtype == DType::kBF16)
      want = coll::bf16_to_float(coll::float_to_bf16(static_cast<float>(want)));
    const double got = load(out, i, c.dtype);
    const double tolerance = exact ? 0.0 : 4.0 * comm.size() * eps * (std::fabs(want) + 40.0);
    if (!(std::fabs(got - want) <= tolerance)) {
      return describe(algorithm, c, symmetric != nullptr) + ": element " + std::to_string(i) +
             " is " + std::to_string(got) + ", Open MPI says " + std::to_string(want);
    }
  }
  return {};
}

// The sweeps from largest to smallest; RANKFLOW_TEST_SWEEP_MAX (the sanitizer jobs: reduced)
// caps what a run's RANKFLOW_TEST_SWEEP asks for.
int sweep_rank(const std::string& name) {
  if (name == "smoke") return 0;
  if (name == "reduced") return 1;
  if (name == "standard") return 2;
  return 3;  // full
}
std::string sweep() {
  const char* value = std::getenv("RANKFLOW_TEST_SWEEP");
  const char* most = std::getenv("RANKFLOW_TEST_SWEEP_MAX");
  const std::string asked = value ? value : "full";
  return most && sweep_rank(most) < sweep_rank(asked) ? most : asked;
}

std::vector<Case> cases(int members) {
  const size_t p = static_cast<size_t>(members);
  const std::string mode = sweep();
  const bool reduced_sweep = mode == "reduced", standard_sweep = mode == "standard";
  // "smoke" (many ranks on two cores): small counts, f32/f16/i32, sum and max only.
  const bool smoke_sweep = mode == "smoke";
  std::vector<Case> out;
  for (DType dtype :
       {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI32, DType::kI64}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax}) {
      for (size_t count : {size_t{0}, size_t{1}, p - 1, p, size_t{1000003}, size_t{1} << 20}) {
        const bool large = count > 1000;
        const bool f32_sum = dtype == DType::kF32 && op == ReduceOp::kSum;
        if (large && reduced_sweep && !f32_sum) continue;
        if (count == (size_t{1} << 20) && standard_sweep && !f32_sum) continue;
        if (smoke_sweep &&
            (large || (dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kI32) ||
             op == ReduceOp::kProd || op == ReduceOp::kMin)) {
          continue;
        }
        for (bool in_place : {false, true})
          out.push_back({dtype, op, count, in_place});
      }
    }
  }
  return out;
}

class AllreduceConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(AllreduceConformance, MatchesOpenMpiOnUserBuffers) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  Scratch scratch;
  int mismatches = 0;
  for (const Case& c : cases(comm.size())) {
    const std::string error = run_case(comm, GetParam(), c, nullptr, scratch);
    if (!error.empty() && ++mismatches <= 5) ADD_FAILURE() << error;
  }
  EXPECT_EQ(mismatches, 0);
  comm.close();
}

TEST_P(AllreduceConformance, MatchesOpenMpiOnSymmetricBuffers) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  SymmetricBuffer buffer = comm.alloc(2 * (size_t{1} << 20) * 8);
  Scratch scratch;
  int mismatches = 0;
  for (const Case& c : cases(comm.size())) {
    const std::string error = run_case(comm, GetParam(), c, &buffer, scratch);
    if (!error.empty() && ++mismatches <= 5) ADD_FAILURE() << error;
  }
  EXPECT_EQ(mismatches, 0);
  buffer = SymmetricBuffer();
  comm.close();
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names{"auto"};
  for (const auto& a : coll::allreduce_algorithms())
    names.emplace_back(a.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Algorithms, AllreduceConformance, ::testing::ValuesIn(algorithm_names()),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace rankflow::test
