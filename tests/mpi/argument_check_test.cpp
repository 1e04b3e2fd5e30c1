// RANKFLOW_CHECK_ARGS=on (api/argument_check.h): members whose arguments to a collective differ
// all get the same InvalidArgument naming what differs, none runs the call, and the communicator
// stays usable. Run under mpirun on 2 and 3 ranks with the variable set on every rank, except the
// last test, which sets it on member 0 only.
#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "../common/expect_error.h"
#include "rankflow/communicator.h"
#include "rankflow/error.h"

namespace rankflow::test {
namespace {

constexpr DType f32 = DType::kF32;
constexpr ReduceOp sum = ReduceOp::kSum;

// One allreduce every member agrees on, with the right sum: the communicator is in step.
void expect_in_step(const Communicator& c) {
  std::vector<float> in(64, static_cast<float>(c.rank() + 1)), out(64, -1.0f);
  c.allreduce(in.data(), out.data(), in.size(), f32, sum);
  const float expected = static_cast<float>(c.size() * (c.size() + 1) / 2);
  for (float v : out)
    ASSERT_EQ(v, expected);
}

// `call` on every member must throw InvalidArgument holding each of `parts`.
template <typename Call>
void expect_mismatch(const Communicator& c, const std::vector<std::string>& parts, Call&& call) {
  try {
    call();
    ADD_FAILURE() << "member " << c.rank() << ": no error";
  } catch (const InvalidArgument& e) {
    for (const std::string& part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "member " << c.rank() << ": '" << part << "' not in: " << e.what();
  }
  expect_in_step(c);
}

class ArgumentCheckTest : public ::testing::Test {
 protected:
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  int rank = comm.rank();
  int size = comm.size();
  std::vector<float> in = std::vector<float>(256, 1.0f);
  std::vector<float> out = std::vector<float>(256 * 4, 0.0f);
};

TEST_F(ArgumentCheckTest, AgreeingCallsRunAndAreRight) {
  std::vector<float> x(8);
  std::iota(x.begin(), x.end(), static_cast<float>(rank * 8));
  std::vector<float> all(8 * static_cast<size_t>(size));
  comm.allgather(x.data(), all.data(), 8, f32);
  for (size_t i = 0; i < all.size(); ++i)
    ASSERT_EQ(all[i], static_cast<float>(i));
  std::vector<float> b(16, rank == 1 ? 7.0f : 0.0f);
  comm.broadcast(b.data(), b.size(), f32, 1);
  for (float v : b)
    ASSERT_EQ(v, 7.0f);
  comm.iallreduce(in.data(), out.data(), 16, f32, sum).wait();
  EXPECT_EQ(out[0], static_cast<float>(size));
  comm.all_to_all(in.data(), out.data(), 8, f32);
  comm.reduce_scatter(in.data(), out.data(), 8, f32, sum);
  EXPECT_EQ(out[0], static_cast<float>(size));
  comm.barrier();
  comm.ibarrier().wait();
  expect_in_step(comm);
}

TEST_F(ArgumentCheckTest, CountsThatDifferAreNamed) {
  const size_t count = rank == 1 ? 8 : 4;
  const std::string others = size == 3 ? "count 4 on members 0 and 2" : "count 4 on member 0";
  expect_mismatch(comm,
                  {"allreduce: the members' calls differ in count", others, "count 8 on member 1",
                   "none of them ran it", "RANKFLOW_CHECK_ARGS"},
                  [&] { comm.allreduce(in.data(), out.data(), count, f32, sum); });
}

TEST_F(ArgumentCheckTest, RootsThatDifferAreNamed) {
  // Each member names itself the root: without the check every member returns at once, with
  // nothing moved.
  expect_mismatch(
      comm,
      {"broadcast: the members' calls differ in root", "root 0 on member 0", "root 1 on member 1"},
      [&] { comm.broadcast(in.data(), 16, f32, rank); });
}

TEST_F(ArgumentCheckTest, AnInvalidRootOnOneMemberIsAMismatchOnEvery) {
  expect_mismatch(comm, {"differ in root", "root 99 on member 1"},
                  [&] { comm.broadcast(in.data(), 16, f32, rank == 1 ? 99 : 0); });
}

TEST_F(ArgumentCheckTest, DTypesOpsAndAlgorithmsThatDifferAreNamed) {
  expect_mismatch(comm, {"differ in dtype", "dtype f32 on member", "dtype i32 on member 1"}, [&] {
    comm.allreduce(in.data(), out.data(), 16, rank == 1 ? DType::kI32 : f32, sum);
  });
  expect_mismatch(comm, {"differ in reduction", "op sum on member", "op max on member 1"}, [&] {
    comm.reduce_scatter(in.data(), out.data(), 4, f32, rank == 1 ? ReduceOp::kMax : sum);
  });
  expect_mismatch(
      comm,
      {"differ in the algorithm asked for", "algorithm 'auto' on member",
       "algorithm 'ring' on member 1"},
      [&] { comm.allreduce(in.data(), out.data(), 16, f32, sum, rank == 1 ? "ring" : "auto"); });
}

TEST_F(ArgumentCheckTest, DifferentCollectivesAreNamed) {
  expect_mismatch(
      comm, {"differ in the collective called", "allreduce on member", "all_to_all on member 1"},
      [&] {
        if (rank == 1)
          comm.all_to_all(in.data(), out.data(), 4, f32);
        else
          comm.allreduce(in.data(), out.data(), 4, f32, sum);
      });
  expect_mismatch(comm, {"differ in the collective called", "barrier on member 1"}, [&] {
    if (rank == 1)
      comm.barrier();
    else
      comm.allgather(in.data(), out.data(), 4, f32);
  });
}

TEST_F(ArgumentCheckTest, InPlaceOnSomeMembersOnlyIsNamed) {
  expect_mismatch(
      comm,
      {"differ in whether they run in place", "in place on member 0", "out of place on member"},
      [&] {
        const float* send = rank == 0 ? out.data() : in.data();
        comm.allreduce(send, out.data(), 64, f32, sum);
      });
  // allgather in place: send at this member's block of recv.
  expect_mismatch(
      comm,
      {"allgather: the members' calls differ in whether they run in place", "in place on member 1"},
      [&] {
        const float* send = rank == 1 ? out.data() + 4 : in.data();
        comm.allgather(send, out.data(), 4, f32);
      });
}

TEST_F(ArgumentCheckTest, BlockingAndNonBlockingMixedAreNamed) {
  expect_mismatch(comm,
                  {"differ in blocking or non-blocking", "a blocking call on member",
                   "a non-blocking call on member 1"},
                  [&] {
                    if (rank == 1)
                      comm.iallgather(in.data(), out.data(), 4, f32).wait();
                    else
                      comm.allgather(in.data(), out.data(), 4, f32);
                  });
}

TEST_F(ArgumentCheckTest, KindsOfBuffersThatDifferAreNamed) {
  SymmetricBuffer symmetric = comm.alloc(4096);
  float* on_window = symmetric.as<float>().data();
  expect_mismatch(
      comm,
      {"differ in the kind of buffers", "symmetric buffers (Communicator::alloc) on member 0",
       "plain buffers on member"},
      [&] {
        float* buffer = rank == 0 ? on_window : in.data();
        comm.allreduce(buffer, buffer, 64, f32, sum);
      });
  std::vector<float> mine(1024, 1.0f);
  RegisteredBuffer registered = comm.register_buffer(mine.data(), mine.size() * sizeof(float));
  // Where registration maps nothing (UCX_TLS=tcp,self), registered buffers are staged as plain
  // ones, so they count as plain.
  float* buffer = rank == 0 ? mine.data() : in.data();
  try {
    comm.allreduce(buffer, buffer, 64, f32, sum);
    const char* tls = std::getenv("UCX_TLS");
    EXPECT_TRUE(tls != nullptr && std::string(tls).find("tcp") != std::string::npos)
        << "registered on member 0 and plain on the others ran on shared memory";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("registered buffers on member 0"), std::string::npos)
        << e.what();
  }
  expect_in_step(comm);
}

// Set on member 0 only: the members agree at creation to compare on every one.
TEST(ArgumentCheckAgreement, OneMemberWithTheVariableTurnsItOnForAll) {
  const char* saved = std::getenv("RANKFLOW_CHECK_ARGS");
  const std::string value = saved != nullptr ? saved : "";
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) unsetenv("RANKFLOW_CHECK_ARGS");
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  if (saved != nullptr) setenv("RANKFLOW_CHECK_ARGS", value.c_str(), 1);
  std::vector<float> in(64, 1.0f), out(64);
  expect_mismatch(comm, {"differ in count"},
                  [&] { comm.allreduce(in.data(), out.data(), rank == 1 ? 8 : 4, f32, sum); });
}

TEST(ArgumentCheckAgreement, ABadValueIsAnError) {
  const char* saved = std::getenv("RANKFLOW_CHECK_ARGS");
  const std::string value = saved != nullptr ? saved : "";
  setenv("RANKFLOW_CHECK_ARGS", "yes please", 1);
  expect_error(ErrorCode::kInvalidArgument, "RANKFLOW_CHECK_ARGS",
               [] { Communicator::from_mpi(MPI_COMM_WORLD); });
  if (saved != nullptr) setenv("RANKFLOW_CHECK_ARGS", value.c_str(), 1);
}

}  // namespace
}  // namespace rankflow::test
