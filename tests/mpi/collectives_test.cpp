// allgather, reduce_scatter, broadcast (every root), all_to_all and barrier against Open MPI on
// the same inputs, on user and symmetric buffers, in and out of place; split communicators;
// and a collective whose peer never arrives.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "api/communicator_internal.h"
#include "collectives/process_memory.h"
#include "collectives/reduce.h"
#include "mpi_test_main.h"
#include "rankflow/communicator.h"
#include "rankflow/error.h"

namespace rankflow::test {
namespace {

void mpi_run(MPI_Request request) {
  context().mpi_wait(request, "reference MPI collective");
}

std::vector<int32_t> inputs(int rank, size_t count, int salt) {
  std::vector<int32_t> v(count);
  for (size_t i = 0; i < count; ++i)
    v[i] = static_cast<int32_t>(i * 31 + rank * 1009 + salt);
  return v;
}

std::vector<size_t> counts(int p) {
  return {0, 1, static_cast<size_t>(p - 1), static_cast<size_t>(p), 1000003};
}

class Collectives : public ::testing::TestWithParam<bool> {  // symmetric buffers?
 protected:
  void SetUp() override { comm_ = Communicator::from_mpi(MPI_COMM_WORLD); }
  void TearDown() override {
    arena_ = SymmetricBuffer();
    comm_.close();
  }
  // Two buffers of `bytes` each: user memory, or one symmetric allocation.
  std::pair<int32_t*, int32_t*> buffers(size_t bytes) {
    if (!GetParam()) {
      user_a_.assign(bytes / 4 + 1, 0);
      user_b_.assign(bytes / 4 + 1, 0);
      return {user_a_.data(), user_b_.data()};
    }
    if (arena_.bytes() < 2 * bytes) arena_ = comm_.alloc(2 * bytes + 64);
    auto* base = static_cast<int32_t*>(arena_.data());
    return {base, base + bytes / 4 + 8};
  }
  Communicator comm_ = Communicator::from_mpi(MPI_COMM_SELF);
  SymmetricBuffer arena_;
  std::vector<int32_t> user_a_, user_b_;
};

TEST_P(Collectives, AllgatherMatchesMpi) {
  const int p = comm_.size(), me = comm_.rank();
  for (size_t count : counts(p)) {
    for (bool in_place : {false, true}) {
      auto [a, b] = buffers(count * p * 4);
      const auto mine = inputs(me, count, 1);
      std::vector<int32_t> expected(count * p);
      mpi_run([&] {
        MPI_Request r;
        MPI_Iallgather(mine.data(), static_cast<int>(count), MPI_INT32_T, expected.data(),
                       static_cast<int>(count), MPI_INT32_T, comm_.mpi_comm(), &r);
        return r;
      }());
      int32_t* send = in_place ? b + count * me : a;
      std::copy(mine.begin(), mine.end(), send);
      comm_.allgather(send, b, count, DType::kI32);
      ASSERT_TRUE(std::equal(expected.begin(), expected.end(), b))
          << "count " << count << (in_place ? " in place" : "");
    }
  }
}

TEST_P(Collectives, ReduceScatterMatchesMpi) {
  const int p = comm_.size(), me = comm_.rank();
  for (size_t count : counts(p)) {
    auto [a, b] = buffers(count * p * 4);
    const auto mine = inputs(me, count * p, 2);
    std::copy(mine.begin(), mine.end(), a);
    std::vector<int32_t> expected(count);
    mpi_run([&] {
      MPI_Request r;
      MPI_Ireduce_scatter_block(mine.data(), expected.data(), static_cast<int>(count), MPI_INT32_T,
                                MPI_SUM, comm_.mpi_comm(), &r);
      return r;
    }());
    comm_.reduce_scatter(a, b, count, DType::kI32, ReduceOp::kSum);
    ASSERT_TRUE(std::equal(expected.begin(), expected.end(), b)) << "count " << count;
    comm_.reduce_scatter(a, a, count, DType::kI32, ReduceOp::kSum);  // in place: result first
    ASSERT_TRUE(std::equal(expected.begin(), expected.end(), a)) << "in place, count " << count;
  }
}

// Every dtype and op, in and out of place, at block sizes that push (small) and that stage only
// the peers' blocks and reduce straight into recv (plain buffers, from 32 KiB blocks). Inputs
// are small integers, so every order of reduction gives the exact result in every type.
TEST_P(Collectives, ReduceScatterEveryTypeAndOp) {
  const int p = comm_.size(), me = comm_.rank();
  struct Type {
    DType dtype;
    size_t size;
    void (*put)(void* at, double value);
    double (*get)(const void* at);
  };
  const Type types[] = {
      {DType::kF32, 4, [](void* at, double v) { *static_cast<float*>(at) = static_cast<float>(v); },
       [](const void* at) { return static_cast<double>(*static_cast<const float*>(at)); }},
      {DType::kF64, 8, [](void* at, double v) { *static_cast<double*>(at) = v; },
       [](const void* at) { return *static_cast<const double*>(at); }},
      {DType::kF16, 2,
       [](void* at, double v) {
         *static_cast<uint16_t*>(at) = coll::float_to_half(static_cast<float>(v));
       },
       [](const void* at) {
         return static_cast<double>(coll::half_to_float(*static_cast<const uint16_t*>(at)));
       }},
      {DType::kBF16, 2,
       [](void* at, double v) {
         *static_cast<uint16_t*>(at) = coll::float_to_bf16(static_cast<float>(v));
       },
       [](const void* at) {
         return static_cast<double>(coll::bf16_to_float(*static_cast<const uint16_t*>(at)));
       }},
      {DType::kI32, 4,
       [](void* at, double v) { *static_cast<int32_t*>(at) = static_cast<int32_t>(v); },
       [](const void* at) { return static_cast<double>(*static_cast<const int32_t*>(at)); }},
      {DType::kI64, 8,
       [](void* at, double v) { *static_cast<int64_t*>(at) = static_cast<int64_t>(v); },
       [](const void* at) { return static_cast<double>(*static_cast<const int64_t*>(at)); }},
  };
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax};
  for (const Type& t : types) {
    for (ReduceOp op : ops) {
      auto value = [&](int rank, size_t i) {
        return op == ReduceOp::kProd ? static_cast<double>((i + static_cast<size_t>(rank)) % 3 + 1)
                                     : static_cast<double>((i * 7 + rank * 3) % 11) - 5;
      };
      for (size_t count : {size_t{1}, size_t{7}, size_t{20000}, size_t{70000}}) {
        const size_t total = count * static_cast<size_t>(p);
        auto [a, b] = buffers(total * t.size);
        auto* send = reinterpret_cast<std::byte*>(a);
        for (bool in_place : {false, true}) {
          for (size_t i = 0; i < total; ++i)
            t.put(send + i * t.size, value(me, i));
          std::byte* recv = in_place ? send : reinterpret_cast<std::byte*>(b);
          comm_.reduce_scatter(send, recv, count, t.dtype, op);
          size_t wrong = 0, first_wrong = SIZE_MAX;
          for (size_t i = 0; i < count; ++i) {
            const size_t at = static_cast<size_t>(me) * count + i;
            double want = value(0, at);
            for (int q = 1; q < p; ++q) {
              const double v = value(q, at);
              want = op == ReduceOp::kSum    ? want + v
                     : op == ReduceOp::kProd ? want * v
                     : op == ReduceOp::kMin  ? std::min(want, v)
                                             : std::max(want, v);
            }
            if (t.get(recv + i * t.size) != want && wrong++ == 0) first_wrong = i;
          }
          EXPECT_EQ(wrong, 0u) << to_string(t.dtype) << " op " << static_cast<int>(op) << ", "
                               << count << " elements" << (in_place ? " in place" : "")
                               << ": first wrong element " << first_wrong;
        }
      }
    }
  }
}

TEST_P(Collectives, BroadcastFromEveryRootMatchesMpi) {
  const int p = comm_.size(), me = comm_.rank();
  for (size_t count : counts(p)) {
    for (int root = 0; root < p; ++root) {
      auto [a, b] = buffers(count * 4);
      (void)b;
      auto expected = inputs(me, count, 3 + root);
      mpi_run([&] {
        MPI_Request r;
        MPI_Ibcast(expected.data(), static_cast<int>(count), MPI_INT32_T, root, comm_.mpi_comm(),
                   &r);
        return r;
      }());
      const auto mine = inputs(me, count, 3 + root);
      std::copy(mine.begin(), mine.end(), a);
      comm_.broadcast(a, count, DType::kI32, root);
      ASSERT_TRUE(std::equal(expected.begin(), expected.end(), a))
          << "count " << count << " root " << root;
    }
  }
  EXPECT_THROW(comm_.broadcast(nullptr, 0, DType::kI32, p), InvalidArgument);
}

TEST_P(Collectives, AllToAllMatchesMpi) {
  const int p = comm_.size(), me = comm_.rank();
  for (size_t count : counts(p)) {
    for (bool in_place : {false, true}) {
      auto [a, b] = buffers(count * p * 4);
      const auto mine = inputs(me, count * p, 4);
      std::vector<int32_t> expected(count * p);
      mpi_run([&] {
        MPI_Request r;
        MPI_Ialltoall(mine.data(), static_cast<int>(count), MPI_INT32_T, expected.data(),
                      static_cast<int>(count), MPI_INT32_T, comm_.mpi_comm(), &r);
        return r;
      }());
      std::copy(mine.begin(), mine.end(), a);
      int32_t* out = in_place ? a : b;
      comm_.all_to_all(a, out, count, DType::kI32);
      ASSERT_TRUE(std::equal(expected.begin(), expected.end(), out))
          << "count " << count << (in_place ? " in place" : "");
    }
  }
}

// Small collectives of different kinds back to back share the pushed inbox slots: a member
// that runs ahead into the next call must never overwrite a slot a peer has not read.
TEST_P(Collectives, PushedSmallCollectivesInterleave) {
  const int p = comm_.size(), me = comm_.rank();
  auto [a, b] = buffers(static_cast<size_t>(p) * 64 * 4);
  for (int i = 0; i < 300; ++i) {
    const size_t count = 1 + static_cast<size_t>(i % 64);
    for (size_t k = 0; k < count; ++k)
      a[k] = static_cast<int32_t>(1000 * me + i + static_cast<int>(k));
    comm_.allgather(a, b, count, DType::kI32);
    for (int r = 0; r < p; ++r)
      ASSERT_EQ(b[r * count + count - 1], 1000 * r + i + static_cast<int>(count) - 1) << i;
    for (int r = 0; r < p; ++r) {
      for (size_t k = 0; k < count; ++k)
        a[r * count + k] = static_cast<int32_t>(100000 * me + 100 * r + i);
    }
    comm_.all_to_all(a, b, count, DType::kI32);
    for (int r = 0; r < p; ++r)
      ASSERT_EQ(b[r * count], 100000 * r + 100 * me + i) << i;
    int32_t one = i, sum = 0;
    comm_.allreduce(&one, &sum, 1, DType::kI32, ReduceOp::kSum);
    ASSERT_EQ(sum, p * i) << i;
    for (size_t k = 0; k < count * static_cast<size_t>(p); ++k)
      a[k] = static_cast<int32_t>(k) + me;
    comm_.reduce_scatter(a, b, count, DType::kI32, ReduceOp::kSum);
    ASSERT_EQ(b[0], p * static_cast<int32_t>(count) * me + p * (p - 1) / 2) << i;
    // Broadcasts from one root, then another, back to back: the root does not wait for its
    // peers, so it runs ahead until a slot it reuses has been read.
    for (int root = 0; root < p; ++root) {
      for (int k = 0; k < 3; ++k) {
        a[0] = me == root ? 7 * i + 100 * root + k : -1;
        comm_.broadcast(a, count, DType::kI32, root);
        ASSERT_EQ(a[0], 7 * i + 100 * root + k) << i;
      }
    }
  }
}

// Broadcast number `i` of `count` int32 from `root` into `a` (the root fills it first, the others
// start from -1), blocking or not, then every element checked on every member. `sleeper` sleeps
// 20 ms before it when `sleep`, so a root running ahead fills its stream and waits for credit.
void streamed_broadcast_checked(Communicator& comm, int32_t* a, int i, size_t count, int root,
                                bool nonblocking, int sleeper, bool sleep) {
  const int me = comm.rank();
  for (size_t k = 0; k < count; ++k)
    a[k] = me == root ? static_cast<int32_t>(1000 * i + static_cast<int>(k)) : -1;
  if (me == sleeper && sleep) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (nonblocking) {
    Request request = comm.ibroadcast(a, count, DType::kI32, root);
    request.wait();
  } else {
    comm.broadcast(a, count, DType::kI32, root);
  }
  for (size_t k = 0; k < count; ++k)
    ASSERT_EQ(a[k], 1000 * i + static_cast<int>(k)) << "broadcast " << i << " element " << k;
}

// Small broadcasts stream: the root returns at once and runs up to 64 messages ahead. Rank 1
// sleeps now and then, so the root fills the stream and must wait for acknowledgements before
// reusing slots; every message must arrive intact and in order, from every root, also when
// non-blocking broadcasts and other collectives come in between.
TEST_P(Collectives, StreamedBroadcastsRunAheadWithoutLosingMessages) {
  const int p = comm_.size();
  auto [a, b] = buffers(128 * 4);
  (void)b;
  for (int i = 0; i < 600; ++i) {
    const size_t count = 1 + static_cast<size_t>(i * 7 % 128);  // 4 to 512 bytes
    ASSERT_NO_FATAL_FAILURE(streamed_broadcast_checked(comm_, a, i, count, (i / 150) % p,
                                                       i % 3 == 0, 1, i % 150 == 10));
    if (i % 150 == 149) {  // after each root's run: the root is far ahead until here
      int32_t one = 1, sum = 0;
      comm_.allreduce(&one, &sum, 1, DType::kI32, ReduceOp::kSum);
      ASSERT_EQ(sum, p);
    }
  }
}

// Broadcasts of up to 8 B take a stream of their own (four messages to a cache line, 256 deep)
// beside the 512 B one. Interleaved with larger broadcasts, from every root, with a receiver that
// sleeps now and then (so the root fills the small stream and waits for credit), every message
// must arrive intact and in call order, through more calls than either stream has slots.
TEST_P(Collectives, TinyBroadcastsInterleavedWithLargerOnesStayInOrder) {
  const int p = comm_.size();
  auto [a, b] = buffers(25 * 4);
  (void)b;
  constexpr size_t kCounts[] = {1, 2, 1, 25};  // 4 B, 8 B, 4 B (small stream), 100 B
  for (int i = 0; i < 1200; ++i) {
    const int root = (i / 400) % p;
    ASSERT_NO_FATAL_FAILURE(streamed_broadcast_checked(comm_, a, i, kCounts[i % 4], root,
                                                       i % 5 == 0, (root + 1) % p, i % 400 == 7));
  }
}

// Plain-buffer allreduce from 1 MiB runs in segments that all reuse the window's first segment
// (allreduce_twophase.cpp): a member stages segment k + 1 over what its peers read of segment k.
// Back-to-back calls of 4 segments (the most a call takes; the last one shorter, so the parts'
// boundaries move), one member late now and then, in place and out of place: every element
// must be exact (i32 sums), so a segment staged before its peers had read the previous one
// would show.
TEST_P(Collectives, SegmentedAllreduceReusesItsWindowWithoutMixingSegments) {
  const int p = comm_.size(), me = comm_.rank();
  // 4 segments of 1 MiB of i32, the last 8000 bytes short: its parts' boundaries sit just
  // below the previous segment's, where a peer still gathering that segment reads last.
  const size_t count = 4 * (size_t{1} << 18) - 2000;
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
      const int32_t want = static_cast<int32_t>((i * 7 + static_cast<size_t>(call)) % 1000) * ranks;
      if (result[i] != want && wrong++ == 0) first_wrong = i;
    }
    // Every member goes on to the next call either way, so a wrong result is reported, not
    // turned into a peer's timeout.
    EXPECT_EQ(wrong, 0u) << "call " << call << (in_place ? " (in place)" : "")
                         << ": first wrong element " << first_wrong << " of " << count;
  }
}

// Plain out-of-place allreduce whose segments are all the same length hands each reduced part
// straight to the peers' recv (allreduce_twophase.cpp, HandOff: one kernel copy on one host;
// left in the window and fetched where the peer is not mapped, as under UCX_TLS=tcp,self). Calls
// of one segment (256 KiB) and of four (4 MiB), into a different recv each call (every call
// tells its peers where), one member late now and then, an in-place call between: every element
// must be exact (i32 sums), so a part written to the wrong place or too late would show.
TEST_P(Collectives, AllreduceHandsPartsToThePeersRecv) {
  const int p = comm_.size(), me = comm_.rank();
  const int32_t ranks = p * (p + 1) / 2;
  auto want = [&](size_t i, int call) {
    return static_cast<int32_t>((i * 5 + static_cast<size_t>(call)) % 997) * ranks;
  };
  for (const size_t count : {size_t{1} << 16, size_t{1} << 20}) {
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
TEST_P(Collectives, AllreduceHandOffWritesToEveryPeerItCanReach) {
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
// the peer, made any) and none on more; every element right either way.
TEST_P(Collectives, PlainBroadcastCopiesBetweenProcessesOnTwoMembersOnly) {
  const int p = comm_.size(), me = comm_.rank();
  if (p < 2 || GetParam()) GTEST_SKIP() << "plain buffers, two members or more";
  const size_t count = (64 << 10) / 4;
  int32_t* a = buffers(count * 4).first;
  uint64_t writes[2] = {0, 0};
  for (uint64_t& w : writes) {
    for (size_t i = 0; i < count; ++i)
      a[i] = me == 0 ? static_cast<int32_t>(i * 7 % 1000) : -1;
    const uint64_t before = coll::process_memory_writes();
    comm_.broadcast(a, count, DType::kI32, 0);
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
TEST_P(Collectives, StagedCallsAlternateHalvesWithoutMixingCalls) {
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

TEST_P(Collectives, BarrierSynchronises) {
  auto [a, b] = buffers(64);
  (void)b;
  for (int i = 1; i <= 200; ++i) {
    comm_.barrier();
    comm_.allreduce(&i, a, 1, DType::kI32, ReduceOp::kMin);
    ASSERT_EQ(a[0], i);
  }
}

INSTANTIATE_TEST_SUITE_P(Buffers, Collectives, ::testing::Values(false, true),
                         [](const auto& param_info) {
                           return param_info.param ? "Symmetric" : "User";
                         });

TEST(CommunicatorTest, SplitGivesIndependentCommunicators) {
  Communicator world = Communicator::from_mpi(MPI_COMM_WORLD);
  const int me = world.rank();
  Communicator half = world.split(me % 2, me);
  EXPECT_EQ(half.size(), (world.size() + 1 - me % 2) / 2);
  EXPECT_EQ(half.rank(), me / 2);
  int64_t value = me, sum = 0;
  half.allreduce(&value, &sum, 1, DType::kI64, ReduceOp::kSum);
  int64_t expected = 0;
  for (int r = me % 2; r < world.size(); r += 2)
    expected += r;
  EXPECT_EQ(sum, expected);
  world.allreduce(&value, &sum, 1, DType::kI64, ReduceOp::kSum);
  EXPECT_EQ(sum, static_cast<int64_t>(world.size()) * (world.size() - 1) / 2);
  half.close();
  world.close();
}

TEST(CommunicatorTest, BadArgumentsAreErrors) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  float x = 0;
  EXPECT_THROW(comm.allreduce(&x, &x, 1, DType::kF32, ReduceOp::kSum, "tree"), InvalidArgument);
  try {
    comm.allreduce(&x, &x, 1, DType::kF32, ReduceOp::kSum, "tree");
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(),
                ::testing::HasSubstr("onephase, twophase, ring, bidirectional_ring, ibing"));
  }
  EXPECT_THROW(comm.allreduce(&x, &x, 1, static_cast<DType>(42), ReduceOp::kSum), InvalidArgument);
  EXPECT_THROW(comm.allreduce(&x, &x, SIZE_MAX / 2, DType::kF32, ReduceOp::kSum), InvalidArgument);
  EXPECT_THROW(Communicator::from_mpi(MPI_COMM_NULL), InvalidArgument);
  comm.close();
  EXPECT_THROW(comm.allreduce(&x, &x, 1, DType::kF32, ReduceOp::kSum), InvalidState);
}

TEST(CommunicatorTest, MissingPeerEndsInTimeoutNamingCollectiveRankAndPeer) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  if (comm.size() < 2) GTEST_SKIP() << "needs a peer";
  comm.set_timeout(std::chrono::milliseconds(300));
  if (comm.rank() == 0) {
    float x = 1, y = 0;
    try {
      comm.allreduce(&x, &y, 1, DType::kF32, ReduceOp::kSum, "onephase");
      ADD_FAILURE() << "allreduce returned without its peers";
    } catch (const Timeout& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("allreduce(onephase)"));
      EXPECT_THAT(e.what(), ::testing::HasSubstr("rank 0"));
      EXPECT_THAT(e.what(), ::testing::HasSubstr("peer"));
    }
  }
  // The other members never called it; everyone discards the communicator.
  comm.close();
}

}  // namespace
}  // namespace rankflow::test
