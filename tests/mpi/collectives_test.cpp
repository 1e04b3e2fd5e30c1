// allgather, reduce_scatter, broadcast (every root), all_to_all and barrier against Open MPI on
// the same inputs, on user and symmetric buffers, in and out of place; split communicators;
// and a collective whose peer never arrives. (The plain paths that reuse the staging window or
// copy with the kernel: staging_and_kernel_copies_test.cpp.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "collective_buffers.h"
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

class Collectives : public CollectiveBuffers {};

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
// that runs ahead into the next call must never overwrite a slot a peer has not read. A slot is
// reused every second call; the rounds cycle through 64 block sizes, each size at least twice
// (on 4 and more members, oversubscribed on two cores, 150 rounds: 4 + 3p calls each).
TEST_P(Collectives, PushedSmallCollectivesInterleave) {
  const int p = comm_.size(), me = comm_.rank();
  auto [a, b] = buffers(static_cast<size_t>(p) * 64 * 4);
  const int rounds = p <= 3 ? 300 : 150;
  for (int i = 0; i < rounds; ++i) {
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

// A pushed or streamed collective finishes in the call itself on a member that finds every
// peer's push already there, and in a task that waits on the others. Each member in turn comes
// last (it sleeps first), so every member takes both paths; every element is checked.
TEST_P(Collectives, PushedCollectivesAgreeWhicheverMemberComesLast) {
  const int p = comm_.size(), me = comm_.rank();
  constexpr size_t kCount = 16;  // 64 B blocks: pushed
  auto [a, b] = buffers(static_cast<size_t>(p) * 256 * 4);
  auto late = [&](int i) {
    if (me == i % p) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  };
  for (int i = 0; i < 2 * p; ++i) {
    for (size_t k = 0; k < kCount * static_cast<size_t>(p); ++k)
      a[k] = static_cast<int32_t>(1000 * me + i + static_cast<int>(k));
    late(i);
    comm_.allreduce(a, b, kCount, DType::kI32, ReduceOp::kSum);
    for (size_t k = 0; k < kCount; ++k)
      ASSERT_EQ(b[k], 1000 * p * (p - 1) / 2 + p * (i + static_cast<int>(k))) << i << " " << k;
    late(i);
    comm_.reduce_scatter(a, b, kCount, DType::kI32, ReduceOp::kSum);
    for (size_t k = 0; k < kCount; ++k) {
      const int at = me * static_cast<int>(kCount) + static_cast<int>(k);
      ASSERT_EQ(b[k], 1000 * p * (p - 1) / 2 + p * (i + at)) << i << " " << k;
    }
    late(i);
    comm_.allgather(a, b, kCount, DType::kI32);
    for (int r = 0; r < p; ++r) {
      for (size_t k = 0; k < kCount; ++k)
        ASSERT_EQ(b[r * kCount + k], 1000 * r + i + static_cast<int>(k)) << i << " " << r;
    }
    late(i);
    comm_.all_to_all(a, b, kCount, DType::kI32);
    for (int r = 0; r < p; ++r) {
      for (size_t k = 0; k < kCount; ++k) {
        const int at = me * static_cast<int>(kCount) + static_cast<int>(k);
        ASSERT_EQ(b[r * kCount + k], 1000 * r + i + at) << i << " " << r;
      }
    }
    for (const size_t count : {size_t{4}, size_t{256}}) {  // 16 B streamed, 1 KiB pushed
      const int root = i % 2 == 0 ? (i + 1) % p : i % p;   // a late peer, then a late root
      for (size_t k = 0; k < count; ++k)
        a[k] = me == root ? static_cast<int32_t>(7 * i + static_cast<int>(k)) : -1;
      late(i);
      comm_.broadcast(a, count, DType::kI32, root);
      for (size_t k = 0; k < count; ++k)
        ASSERT_EQ(a[k], 7 * i + static_cast<int>(k)) << i << " " << count << " " << k;
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

// Broadcasts take the stream whose slots fit them (CollContext::kBroadcastStreams): up to 8 B four
// to a cache line, up to 24 B two, larger ones the 512 B stream. Interleaved, from every root,
// with a receiver that sleeps now and then (so the root fills a stream and waits for credit),
// every message must arrive intact and in call order, through more calls than each stream has
// slots.
TEST_P(Collectives, TinyBroadcastsInterleavedWithLargerOnesStayInOrder) {
  const int p = comm_.size();
  auto [a, b] = buffers(25 * 4);
  (void)b;
  // 4 B, 16 B, 8 B, 24 B, 4 B, 100 B: per root 400 messages of up to 8 B, 267 of 16-24 B, 133
  // larger (the streams hold 256, 256 and 64).
  constexpr size_t kCounts[] = {1, 4, 2, 6, 1, 25};
  for (int i = 0; i < 2400; ++i) {
    const int root = (i / 800) % p;
    ASSERT_NO_FATAL_FAILURE(streamed_broadcast_checked(comm_, a, i, kCounts[i % 6], root,
                                                       i % 5 == 0, (root + 1) % p, i % 800 == 7));
  }
  // Only the two 256-deep streams, 350 messages each past a receiver asleep: the root fills both
  // and waits for each one's own credit (each stream has its own acknowledgement kind).
  for (int i = 0; i < 700; ++i) {
    ASSERT_NO_FATAL_FAILURE(streamed_broadcast_checked(comm_, a, 2400 + i, i % 2 == 0 ? 1 : 4, 0,
                                                       false, 1 % p, i == 3));
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

// A call that timed out leaves its task suspended inside the communicator; closing it must
// discard that task before the windows go. A plain twophase call of 4 MiB keeps a record in the
// staging window (its hand-off header, collectives/part_hand_off.h) that it clears when the task
// is destroyed: destroyed after close(), it wrote into unmapped memory.
TEST(CommunicatorTest, CloseAfterATimeoutInAPlainTwophaseCall) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  if (comm.size() < 2) GTEST_SKIP() << "needs a peer";
  std::vector<float> in(size_t{1} << 20, 1.0f), out(in.size());
  // Together first: the staging window grows to fit (that growth is collective too).
  comm.allreduce(in.data(), out.data(), in.size(), DType::kF32, ReduceOp::kSum, "twophase");
  EXPECT_EQ(out.back(), static_cast<float>(comm.size()));
  comm.set_timeout(std::chrono::milliseconds(300));
  if (comm.rank() == 0) {
    EXPECT_THROW(
        comm.allreduce(in.data(), out.data(), in.size(), DType::kF32, ReduceOp::kSum, "twophase"),
        Timeout);
  }
  comm.close();  // and the communicator's destruction at the end of the scope
}

}  // namespace
}  // namespace rankflow::test
