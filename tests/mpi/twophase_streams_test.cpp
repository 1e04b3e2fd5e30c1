// The plain two-phase allreduce's streamed parts (TwophaseSegments::streams_from,
// allreduce_twophase.cpp): from that size, on two members that map each other's windows, a call
// out of place neither reads nor hands off. Each owner reduces its part into its window and
// streams it into its recv, each member streams its peer's part out of the peer's window: the
// call makes no kernel copy at all, and counts as streamed (coll::twophase_streamed_calls). In
// place (every member offers the hand-off instead), every member hands its part off, with kernel
// writes where its copies reach the peer. Every element is checked (i32 sums, exact), with member
// 1 late into some calls and each out-of-place call into another recv. The ctest entries force
// the intel-emr profile (streams from 16 MiB); with three members, or under UCX_TLS=tcp,self
// (nobody maps), nobody streams.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "api/communicator_internal.h"
#include "collectives/collective.h"
#include "collectives/machine_profile.h"
#include "collectives/process_memory.h"
#include "rankflow/communicator.h"
#include "rankflow/error.h"

namespace rankflow::test {
namespace {

class TwophaseStreams : public ::testing::Test {
 protected:
  void SetUp() override { comm_ = Communicator::from_mpi(MPI_COMM_WORLD); }
  void TearDown() override { comm_.close(); }
  Communicator comm_ = Communicator::from_mpi(MPI_COMM_SELF);
};

int32_t streamed_input(size_t i, int call, int rank) {
  return static_cast<int32_t>((i * 5 + static_cast<size_t>(call)) % 997) * (rank + 1);
}

size_t wrong_sums(const std::vector<int32_t>& recv, int call, int members) {
  const int32_t ranks = members * (members + 1) / 2;
  size_t wrong = 0;
  for (size_t i = 0; i < recv.size(); ++i)
    wrong += recv[i] != static_cast<int32_t>((i * 5 + static_cast<size_t>(call)) % 997) * ranks;
  return wrong;
}

// What one call of this member did: its kernel copies, and whether it streamed.
struct CallCounts {
  uint64_t reads;
  uint64_t writes;
  uint64_t streamed;
};

CallCounts count_during(const std::function<void()>& call) {
  const uint64_t reads = coll::process_memory_reads(), writes = coll::process_memory_writes(),
                 streamed = coll::twophase_streamed_calls();
  call();
  return {coll::process_memory_reads() - reads, coll::process_memory_writes() - writes,
          coll::twophase_streamed_calls() - streamed};
}

// Calls of the agreed profile's first streaming size: out of place (streamed, no kernel copy;
// into a recv of -1s, two recvs in turn) and in place (handed off: kernel writes, where this
// member's copies reach its peer), member 1 late into every other call.
TEST_F(TwophaseStreams, OutOfPlaceCallsStreamWhereEveryMemberOffers) {
  const int p = comm_.size(), me = comm_.rank();
  if (p < 2) GTEST_SKIP() << "two members or more";
  const coll::MachineProfile* agreed = api::machine_rules(comm_).profile;
  const size_t from = coll::twophase_segments(agreed).streams_from;
  const char* forced = std::getenv("RANKFLOW_MACHINE");
  if (from == SIZE_MAX) {
    ASSERT_TRUE(forced == nullptr || std::string(forced) != "intel-emr")
        << "RANKFLOW_MACHINE=intel-emr, but the agreed profile never streams";
    GTEST_SKIP() << "the agreed profile never streams (RANKFLOW_MACHINE=intel-emr does)";
  }
  const bool streams = p == 2 && api::maps_peers(comm_);
  const bool writes = api::maps_peers(comm_) && coll::process_memory_usable();
  // A first call, so that an in-place call's hand-off writes where it can (a member writes into
  // a peer's recv once its first kernel copy to that peer has gone through).
  {
    std::vector<int32_t> a(size_t{1} << 17, 1), b(size_t{1} << 17);
    comm_.allreduce(a.data(), b.data(), a.size(), DType::kI32, ReduceOp::kSum, "twophase");
  }
  const size_t count = from / sizeof(int32_t);
  std::vector<int32_t> a(count),
      recvs[2] = {std::vector<int32_t>(count), std::vector<int32_t>(count)};
  for (int call = 0; call < 6; ++call) {
    const bool in_place = call % 3 == 2;
    for (size_t i = 0; i < count; ++i)
      a[i] = streamed_input(i, call, me);
    std::vector<int32_t>& recv = in_place ? a : recvs[call % 2];
    if (!in_place) std::fill(recv.begin(), recv.end(), -1);
    if (me == 1 && call % 2 == 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const CallCounts made = count_during([&] {
      comm_.allreduce(a.data(), recv.data(), count, DType::kI32, ReduceOp::kSum, "twophase");
    });
    const std::string what = "rank " + std::to_string(me) + ", call " + std::to_string(call) +
                             (in_place ? " (in place)" : " (out of place)");
    EXPECT_EQ(made.reads, 0u) << what;
    if (!in_place && streams) {
      EXPECT_EQ(made.streamed, 1u) << what;
      EXPECT_EQ(made.writes, 0u) << what << ": the parts should have been streamed";
    } else {
      EXPECT_EQ(made.streamed, 0u) << what;
      if (writes)
        EXPECT_GT(made.writes, 0u) << what << ": the parts should have been handed off";
      else
        EXPECT_EQ(made.writes, 0u) << what;
    }
    EXPECT_EQ(wrong_sums(recv, call, p), 0u) << what;
  }
}

// A plain twophase call in equal segments (4 MiB: four of 1 MiB, handed off) in place on member
// 0 only: every member throws InvalidArgument naming in place (PartHandOff::check_in_place_alike),
// and the next call, in place on every member, is right.
TEST_F(TwophaseStreams, InPlaceOnSomeMembersOnlyIsInvalidArgument) {
  const int p = comm_.size(), me = comm_.rank();
  if (p < 2) GTEST_SKIP() << "two members or more";
  const size_t count = (size_t{4} << 20) / sizeof(int32_t);
  std::vector<int32_t> a(count), b(count);
  for (size_t i = 0; i < count; ++i)
    a[i] = streamed_input(i, 0, me);
  int32_t* recv = me == 0 ? a.data() : b.data();
  try {
    comm_.allreduce(a.data(), recv, count, DType::kI32, ReduceOp::kSum, "twophase");
    ADD_FAILURE() << "rank " << me << ": no error for a call in place on member 0 only";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("in place on every member or on none")) << e.what();
  }
  for (size_t i = 0; i < count; ++i)
    a[i] = streamed_input(i, 1, me);
  comm_.allreduce(a.data(), a.data(), count, DType::kI32, ReduceOp::kSum, "twophase");
  EXPECT_EQ(wrong_sums(a, 1, p), 0u) << "rank " << me << ": the next call, in place on all";
}

}  // namespace
}  // namespace rankflow::test
