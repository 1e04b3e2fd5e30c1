// The plain-buffer paths that reuse the staging window between and within calls, and those that
// copy straight between the processes with the kernel (collectives/process_memory.h): segments
// of one allreduce staged over the last, halves of the staging buffers taken in turn, reduced
// parts handed into the peers' recv, the plain broadcast's kernel copy. Every element is checked
// (i32, exact), and the kernel writes are counted where the test names them.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include "api/communicator_internal.h"
#include "collective_buffers.h"
#include "collectives/process_memory.h"
#include "rankflow/communicator.h"

namespace rankflow::test {
namespace {

class StagingAndKernelCopies : public CollectiveBuffers {};

// Plain-buffer allreduce from 1 MiB runs in segments that all reuse the window's first segment
// (allreduce_twophase.cpp): a member stages segment k + 1 over what its peers read of segment k.
// Back-to-back calls of 4 segments (the most the tables' split takes; the last one shorter, so
// the parts' boundaries move), and of 9 equal ones (the Zen 5 profile's split of 9 MiB, which
// collectives.np2.zen5_twophase_segments forces; whole elsewhere), one member late now and then,
// in place and out of place: every element must be exact (i32 sums), so a segment staged before
// its peers had read the previous one would show.
TEST_P(StagingAndKernelCopies, SegmentedAllreduceReusesItsWindowWithoutMixingSegments) {
  const int p = comm_.size(), me = comm_.rank();
  // Segments of 1 MiB of i32, the last of four 8000 bytes short: its parts' boundaries sit just
  // below the previous segment's, where a peer still gathering that segment reads last.
  for (const size_t count : {4 * (size_t{1} << 18) - 2000, 9 * (size_t{1} << 18)}) {
    auto [a, b] = buffers(count * 4);
    for (int call = 0; call < 4; ++call) {
      const bool in_place = call % 2 == 1;
      for (size_t i = 0; i < count; ++i)
        a[i] = static_cast<int32_t>((i * 7 + static_cast<size_t>(call)) % 1000) * (me + 1);
      if (me == call % p) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      comm_.allreduce(a, in_place ? a : b, count, DType::kI32, ReduceOp::kSum, "twophase");
      const int32_t* result = in_place ? a : b;
      const int32_t ranks = p * (p + 1) / 2;
      size_t wrong = 0, first_wrong = count;
      for (size_t i = 0; i < count; ++i) {
        const int32_t want =
            static_cast<int32_t>((i * 7 + static_cast<size_t>(call)) % 1000) * ranks;
        if (result[i] != want && wrong++ == 0) first_wrong = i;
      }
      // Every member goes on to the next call either way, so a wrong result is reported, not
      // turned into a peer's timeout.
      EXPECT_EQ(wrong, 0u) << "call " << call << (in_place ? " (in place)" : "")
                           << ": first wrong element " << first_wrong << " of " << count;
    }
  }
}

// Plain out-of-place allreduce whose segments are all the same length hands each reduced part
// straight to the peers' recv (allreduce_twophase.cpp, HandOff: one kernel copy on one host;
// left in the window and fetched where the peer is not mapped, as under UCX_TLS=tcp,self). Calls
// of one segment (256 KiB), of four (4 MiB) and of 8 MiB, into a different recv each call (every
// call tells its peers where), one member late now and then, an in-place call between: every
// element must be exact (i32 sums), so a part written to the wrong place or too late would show.
TEST_P(StagingAndKernelCopies, AllreduceHandsPartsToThePeersRecv) {
  const int p = comm_.size(), me = comm_.rank();
  const int32_t ranks = p * (p + 1) / 2;
  auto want = [&](size_t i, int call) {
    return static_cast<int32_t>((i * 5 + static_cast<size_t>(call)) % 997) * ranks;
  };
  // 256 KiB: one segment; 4 MiB: four; 8 MiB: whole in the tables, 8 equal segments in the Zen 5
  // profile (collectives.np2.zen5_twophase_segments forces it).
  for (const size_t count : {size_t{1} << 16, size_t{1} << 20, size_t{1} << 21}) {
    auto [a, b] = buffers(count * 4);
    std::vector<int32_t> c(count), d(count);
    int32_t* const recvs[] = {b, c.data(), a, d.data()};  // call 2 in place
    for (int call = 0; call < 4; ++call) {
      int32_t* recv = recvs[call];
      for (size_t i = 0; i < count; ++i)
        a[i] = static_cast<int32_t>((i * 5 + static_cast<size_t>(call)) % 997) * (me + 1);
      if (recv != a) std::fill(recv, recv + count, -1);
      if (me == call % p) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      comm_.allreduce(a, recv, count, DType::kI32, ReduceOp::kSum, "twophase");
      size_t wrong = 0, first_wrong = count;
      for (size_t i = 0; i < count; ++i) {
        if (recv[i] != want(i, call) && wrong++ == 0) first_wrong = i;
      }
      EXPECT_EQ(wrong, 0u) << count << " elements, call " << call
                           << (call == 2 ? " (in place)" : "") << ": first wrong element "
                           << first_wrong;
    }
    // A later call's parts went to its own recv, not to an earlier call's.
    size_t changed = 0;
    for (size_t i = 0; i < count; ++i)
      changed += c[i] != want(i, 1) ? 1 : 0;
    EXPECT_EQ(changed, 0u) << count << " elements: call 1's recv changed by a later call";
  }
}

// The hand-off chooses per peer: a member that uses the kernel's copies writes its part into
// the recv of every peer that does too (where the peers' memory is mapped: one host), and puts
// it into the windows of the others, from 16 KiB on two members and 128 KiB on more. An 8, 16
// or 512 KiB call is one segment, so each member makes exactly one kernel write per such peer
// (collectives.np3.mixed_cross_memory switches the copies off on rank 1 alone; elsewhere every
// member has them, or, over TCP, none is mapped).
TEST_P(StagingAndKernelCopies, AllreduceHandOffWritesToEveryPeerItCanReach) {
  const int p = comm_.size(), me = comm_.rank();
  if (p < 2 || GetParam()) GTEST_SKIP() << "plain buffers, two members or more";
  const int usable = coll::process_memory_usable() ? 1 : 0;
  std::vector<int> usable_at(static_cast<size_t>(p));
  MPI_Allgather(&usable, 1, MPI_INT, usable_at.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int reachable = 0;
  for (int q = 0; q < p; ++q)
    reachable += q != me && usable_at[static_cast<size_t>(q)] ? 1 : 0;
  const uint64_t expected = usable && api::maps_peers(comm_) ? static_cast<uint64_t>(reachable) : 0;
  for (const size_t bytes : {size_t{8} << 10, size_t{16} << 10, size_t{512} << 10}) {
    // From 16 KiB on two members, 128 KiB on more (part_hand_off.cpp).
    const size_t from = p == 2 ? size_t{16} << 10 : size_t{128} << 10;
    const uint64_t writes = bytes >= from ? expected : 0;
    const size_t count = bytes / 4;
    auto [a, b] = buffers(count * 4);
    for (size_t i = 0; i < count; ++i)
      a[i] = static_cast<int32_t>(i % 1000) * (me + 1);
    const uint64_t before = coll::process_memory_writes();
    comm_.allreduce(a, b, count, DType::kI32, ReduceOp::kSum, "twophase");
    EXPECT_EQ(coll::process_memory_writes() - before, writes)
        << "rank " << me << ", " << bytes << " bytes (kernel copies " << (usable ? "on" : "off")
        << ", " << reachable << " peers with them on)";
    const int32_t ranks = p * (p + 1) / 2;
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i)
      wrong += b[i] != static_cast<int32_t>(i % 1000) * ranks ? 1 : 0;
    EXPECT_EQ(wrong, 0u);
  }
}

// The plain broadcast copies straight between the processes on two members only (on more,
// every peer's kernel copy at once lost, docs/performance.md "Scaling"): root 0, 64 KiB, the
// second of two calls makes one kernel write on two members (where the first, which also probes
// the peer, made any) and none on more; every element right either way. `direct` forced: the
// tables' choice there, which a machine profile may change (the AMD Zen 5's stages).
TEST_P(StagingAndKernelCopies, PlainBroadcastCopiesBetweenProcessesOnTwoMembersOnly) {
  const int p = comm_.size(), me = comm_.rank();
  if (p < 2 || GetParam()) GTEST_SKIP() << "plain buffers, two members or more";
  const size_t count = (64 << 10) / 4;
  int32_t* a = buffers(count * 4).first;
  setenv("RANKFLOW_BROADCAST", "direct", 1);
  Communicator direct = Communicator::from_mpi(MPI_COMM_WORLD);
  unsetenv("RANKFLOW_BROADCAST");
  uint64_t writes[2] = {0, 0};
  for (uint64_t& w : writes) {
    for (size_t i = 0; i < count; ++i)
      a[i] = me == 0 ? static_cast<int32_t>(i * 7 % 1000) : -1;
    const uint64_t before = coll::process_memory_writes();
    direct.broadcast(a, count, DType::kI32, 0);
    w = coll::process_memory_writes() - before;
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i)
      wrong += a[i] != static_cast<int32_t>(i * 7 % 1000) ? 1 : 0;
    EXPECT_EQ(wrong, 0u) << "rank " << me;
  }
  const bool crossed = me == 0 && p == 2 && writes[0] > 0;
  EXPECT_EQ(writes[1], crossed ? 1u : 0u) << "rank " << me << " of " << p;
  int usable = coll::process_memory_usable() ? 1 : 0;  // on every member?
  MPI_Allreduce(MPI_IN_PLACE, &usable, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (me == 0 && p == 2 && usable && api::maps_peers(comm_)) {
    EXPECT_GT(writes[0], 0u) << "two members with the copies on: the first call should cross";
  }
}

// Consecutive staged calls of up to 512 KiB that fit in half of the staging buffers take the
// halves in turn (api/buffer_placement.cpp); larger ones take the first half. Back-to-back calls of
// every staged collective, sizes on both sides of the half (64 KiB and 48 KiB messages and blocks,
// and 520 KiB ones), in and out of place, one member late now and then: every element must be
// exact, so a call that staged over what a peer still read of the call before would show. On
// plain buffers the offset the next call takes must alternate for the small ones, and be the
// same on every member.
TEST_P(StagingAndKernelCopies, StagedCallsAlternateHalvesWithoutMixingCalls) {
  const int p = comm_.size(), me = comm_.rank();
  const size_t large = (520 << 10) / 4;
  auto [a, b] = buffers(large * 4 * static_cast<size_t>(p));
  const int32_t ranks = p * (p + 1) / 2;
  size_t alternated = 0;
  for (int call = 0; call < 60; ++call) {
    const size_t count = call % 3 == 2 ? large : ((call % 3 == 0 ? 64 : 48) << 10) / 4;
    const bool in_place = call % 4 == 1;
    const int kind = (call / 3) % 5;
    const size_t total = kind == 0 || kind == 3 ? count : count * static_cast<size_t>(p);
    auto value = [&](int rank, size_t i) {
      return static_cast<int32_t>((i * 13 + static_cast<size_t>(call) * 7) % 1000) * (rank + 1);
    };
    const size_t before = api::next_staging_offset(comm_, total * 4);
    const size_t staged_before = api::staged_collectives(comm_);
    if (me == call % p && call % 7 == 3) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    int32_t* out = in_place ? a : b;
    size_t wrong = 0, first_wrong = SIZE_MAX;
    auto expect = [&](const int32_t* got, size_t n, auto&& want) {
      for (size_t i = 0; i < n; ++i) {
        if (got[i] != want(i) && wrong++ == 0) first_wrong = i;
      }
    };
    if (kind == 0) {  // allreduce
      for (size_t i = 0; i < count; ++i)
        a[i] = value(me, i);
      if (call % 2 == 0) {  // non-blocking now and then: placed at the call, in order
        comm_.iallreduce(a, out, count, DType::kI32, ReduceOp::kSum).wait();
      } else {
        comm_.allreduce(a, out, count, DType::kI32, ReduceOp::kSum);
      }
      expect(out, count, [&](size_t i) { return value(0, i) * ranks; });
    } else if (kind == 1) {  // allgather (in place: this member's block of b)
      int32_t* send = in_place ? b + count * me : a;
      for (size_t i = 0; i < count; ++i)
        send[i] = value(me, i);
      if (call % 2 == 0) {
        comm_.iallgather(send, b, count, DType::kI32).wait();
      } else {
        comm_.allgather(send, b, count, DType::kI32);
      }
      expect(b, total, [&](size_t i) { return value(static_cast<int>(i / count), i % count); });
    } else if (kind == 2) {  // reduce_scatter
      for (size_t i = 0; i < total; ++i)
        a[i] = value(me, i);
      comm_.reduce_scatter(a, out, count, DType::kI32, ReduceOp::kSum);
      expect(out, count, [&](size_t i) { return value(0, i + count * me) * ranks; });
    } else if (kind == 3) {  // broadcast from a root that moves
      const int root = call % p;
      for (size_t i = 0; i < count; ++i)
        a[i] = me == root ? value(root, i) : -1;
      comm_.broadcast(a, count, DType::kI32, root);
      expect(a, count, [&](size_t i) { return value(root, i); });
    } else {  // all_to_all: block q of member r holds value(r, q * count + i)
      for (size_t i = 0; i < total; ++i)
        a[i] = value(me, i);
      comm_.all_to_all(a, out, count, DType::kI32);
      expect(out, total,
             [&](size_t i) { return value(static_cast<int>(i / count), me * count + i % count); });
    }
    EXPECT_EQ(wrong, 0u) << "call " << call << " (kind " << kind << ", " << count << " elements"
                         << (in_place ? ", in place" : "") << "): first wrong element "
                         << first_wrong;
    if (GetParam() || api::staged_collectives(comm_) == staged_before) continue;
    const size_t after = api::next_staging_offset(comm_, total * 4);
    uint64_t offsets[2] = {after, ~uint64_t{after}}, agreed[2];  // every member: the same half
    MPI_Allreduce(offsets, agreed, 2, MPI_UINT64_T, MPI_MAX, comm_.mpi_comm());
    EXPECT_EQ(agreed[0], ~agreed[1]) << "call " << call << ": members disagree on the next half";
    if (total * 4 > std::min<size_t>(api::staging_bytes(comm_) / 2, 512 << 10)) {
      EXPECT_EQ(before, 0u) << "call " << call << ": a message that takes the first half";
      EXPECT_EQ(after, 0u) << "call " << call << ": a message that takes the first half";
    } else {
      EXPECT_NE(after, before) << "call " << call << ": the next small call takes the same half";
      ++alternated;
    }
  }
  if (!GetParam() && p == 2) {
    EXPECT_GT(alternated, 10u) << "too few calls were staged";
  }
}

INSTANTIATE_TEST_SUITE_P(Buffers, StagingAndKernelCopies, ::testing::Values(false, true),
                         [](const auto& param_info) {
                           return param_info.param ? "Symmetric" : "User";
                         });

}  // namespace
}  // namespace rankflow::test
