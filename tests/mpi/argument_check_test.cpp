// RANKFLOW_CHECK_ARGS=on (api/argument_check.h): members whose arguments to a collective differ
// all get the same InvalidArgument naming what differs, none runs the call, and the communicator
// stays usable. Run under mpirun on 2 and 3 ranks with the variable set on every rank; the
// agreement tests set it on member 0 only, or to a bad value.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "../common/expect_error.h"
#include "api/communicator_internal.h"
#include "rankflow/communicator.h"
#include "rankflow/error.h"

namespace rankflow::test {
namespace {

constexpr DType f32 = DType::kF32;
constexpr ReduceOp sum = ReduceOp::kSum;

// RANKFLOW_CHECK_ARGS as `value` (unset where null) for the guard's lifetime, then as before.
class CheckArgsVariable {
 public:
  explicit CheckArgsVariable(const char* value) {
    const char* before = std::getenv(kName);
    had_ = before != nullptr;
    if (had_) saved_ = before;
    if (value != nullptr)
      setenv(kName, value, 1);
    else
      unsetenv(kName);
  }
  ~CheckArgsVariable() {
    if (had_)
      setenv(kName, saved_.c_str(), 1);
    else
      unsetenv(kName);
  }

 private:
  static constexpr const char* kName = "RANKFLOW_CHECK_ARGS";
  std::string saved_;
  bool had_ = false;
};

// Whether every rank of MPI_COMM_WORLD holds the same `text`.
bool same_on_every_rank(const std::string& text) {
  const unsigned long long h = std::hash<std::string>{}(text);
  unsigned long long lowest = 0, highest = 0;
  MPI_Allreduce(&h, &lowest, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &highest, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  return lowest == highest;
}

// One allreduce every member agrees on, with the right sum: the communicator is in step.
void expect_in_step(const Communicator& c) {
  std::vector<float> in(64, static_cast<float>(c.rank() + 1)), out(64, -1.0f);
  c.allreduce(in.data(), out.data(), in.size(), f32, sum);
  const float expected = static_cast<float>(c.size() * (c.size() + 1) / 2);
  for (float v : out)
    ASSERT_EQ(v, expected);
}

// `call` on every member (of MPI_COMM_WORLD) must throw the same InvalidArgument, holding each
// of `parts`.
template <typename Call>
void expect_mismatch(const Communicator& c, const std::vector<std::string>& parts, Call&& call) {
  std::string message;
  try {
    call();
    ADD_FAILURE() << "member " << c.rank() << ": no error";
  } catch (const InvalidArgument& e) {
    message = e.what();
    for (const std::string& part : parts)
      EXPECT_NE(message.find(part), std::string::npos)
          << "member " << c.rank() << ": '" << part << "' not in: " << message;
  }
  EXPECT_TRUE(same_on_every_rank(message)) << "member " << c.rank() << ": " << message;
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
  expect_mismatch(comm,
                  {"collectives: the members' calls differ in the collective called",
                   "allreduce on member", "all_to_all on member 1"},
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
  expect_mismatch(comm, {"barrier: the members' calls differ in blocking or non-blocking"}, [&] {
    if (rank == 1)
      comm.ibarrier().wait();
    else
      comm.barrier();
  });
}

// A value the call would refuse on its own, on one member only, is compared first: every member
// gets the difference, where without the check that member alone would throw and the others
// would wait for it.
TEST_F(ArgumentCheckTest, ABadValueOnOneMemberIsADifferenceOnEvery) {
  expect_mismatch(comm, {"differ in dtype", "dtype i8 on member 1"}, [&] {
    comm.allreduce(in.data(), out.data(), 16, rank == 1 ? DType::kI8 : f32, sum);
  });
  expect_mismatch(comm, {"differ in reduction", "op 42 on member 1"}, [&] {
    comm.allreduce(in.data(), out.data(), 16, f32, rank == 1 ? static_cast<ReduceOp>(42) : sum);
  });
  expect_mismatch(comm, {"differ in count", "on member 1"}, [&] {
    comm.all_to_all(in.data(), out.data(), rank == 1 ? SIZE_MAX / 2 : 4, f32);
  });
}

// A request in flight on the communicator completes before the comparison: a staged 1 MiB
// iallreduce, which needs several rounds between the members and so is not done when its call
// returns (nothing polls it again before the next call, without a progress thread).
TEST_F(ArgumentCheckTest, ARequestInFlightCompletesFirst) {
  constexpr size_t kCount = size_t{1} << 18;
  std::vector<float> mine(kCount, static_cast<float>(rank + 1)), summed(kCount);
  Request request = comm.iallreduce(mine.data(), summed.data(), kCount, f32, sum);
  bool caught = false;
  try {
    comm.allreduce(in.data(), out.data(), rank == 1 ? 8 : 4, f32, sum);
  } catch (const InvalidArgument&) {
    caught = true;
  }
  EXPECT_TRUE(caught);
  EXPECT_TRUE(request.done()) << "member " << rank << ": the request was not completed first";
  request.wait();
  for (float v : summed)
    ASSERT_EQ(v, static_cast<float>(size * (size + 1) / 2));
  expect_in_step(comm);
}

// With RANKFLOW_PROGRESS=thread, the thread goes on advancing the program's requests on other
// communicators while a comparison waits: member 0 compares on `comm` while the others wait for
// its part of an iallreduce on a second communicator, which only the thread can advance then.
TEST_F(ArgumentCheckTest, TheProgressThreadRunsWhileAComparisonWaits) {
  const char* progress = std::getenv("RANKFLOW_PROGRESS");
  if (progress == nullptr || std::string(progress) != "thread")
    GTEST_SKIP() << "needs RANKFLOW_PROGRESS=thread";
  Communicator other = Communicator::from_mpi(MPI_COMM_WORLD);
  constexpr size_t kCount = size_t{1} << 18;
  std::vector<float> mine(kCount, static_cast<float>(rank + 1)), summed(kCount);
  Request request = other.iallreduce(mine.data(), summed.data(), kCount, f32, sum);
  if (rank == 0) {
    expect_in_step(comm);
    request.wait();
  } else {
    request.wait();
    expect_in_step(comm);
  }
  for (float v : summed)
    ASSERT_EQ(v, static_cast<float>(size * (size + 1) / 2));
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
  // No elements at all: the kind still chooses the algorithm, so it is still compared.
  expect_mismatch(comm, {"differ in the kind of buffers"}, [&] {
    float* buffer = rank == 0 ? on_window : in.data();
    comm.allreduce(buffer, buffer, 0, f32, sum);
  });
  std::vector<float> mine(1024, 1.0f);
  RegisteredBuffer registered = comm.register_buffer(mine.data(), mine.size() * sizeof(float));
  // Where the members do not map each other's memory (UCX_TLS=tcp,self), registration attaches
  // nothing: registered buffers are staged as plain ones, and count as plain.
  float* buffer = rank == 0 ? mine.data() : in.data();
  if (api::runs_in_place(comm, mine.data(), 64 * sizeof(float), mine.data(), 64 * sizeof(float))) {
    expect_mismatch(comm, {"registered buffers on member 0"},
                    [&] { comm.allreduce(buffer, buffer, 64, f32, sum); });
  } else {
    comm.allreduce(buffer, buffer, 64, f32, sum);
    expect_in_step(comm);
  }
}

// A member that does not make the call in time: member 0's comparison ends in a Timeout naming
// it, and every later collective on member 0's communicator is InvalidState (the members are out
// of step). The others, late, pair with member 0's comparison that did not complete (the
// arguments agree), so they run the allreduce alone and time out in it.
TEST_F(ArgumentCheckTest, AnAbsentMemberIsATimeoutThenTheCommunicatorRefuses) {
  comm.set_timeout(std::chrono::milliseconds(300));
  if (rank == 0) {
    expect_error(ErrorCode::kTimeout, "argument check (member 0 of",
                 [&] { comm.allreduce(in.data(), out.data(), 16, f32, sum); });
    expect_error(ErrorCode::kInvalidState,
                 "an earlier argument check on this communicator did not complete",
                 [&] { comm.broadcast(in.data(), 16, f32, 0); });
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank != 0) {
    expect_error(ErrorCode::kTimeout, "allreduce",
                 [&] { comm.allreduce(in.data(), out.data(), 16, f32, sum); });
  }
}

// Set on member 0 only: the members agree at creation to compare on every one.
TEST(ArgumentCheckAgreement, OneMemberWithTheVariableTurnsItOnForAll) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  Communicator comm = [&] {
    CheckArgsVariable variable(rank == 0 ? "on" : nullptr);
    return Communicator::from_mpi(MPI_COMM_WORLD);
  }();
  std::vector<float> in(64, 1.0f), out(64);
  expect_mismatch(comm, {"differ in count"},
                  [&] { comm.allreduce(in.data(), out.data(), rank == 1 ? 8 : 4, f32, sum); });
}

TEST(ArgumentCheckAgreement, ABadValueIsAnError) {
  CheckArgsVariable variable("yes please");
  expect_error(ErrorCode::kInvalidArgument, "RANKFLOW_CHECK_ARGS",
               [] { Communicator::from_mpi(MPI_COMM_WORLD); });
}

}  // namespace
}  // namespace rankflow::test
