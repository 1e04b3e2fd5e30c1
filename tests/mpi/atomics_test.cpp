// Atomics from every rank on one word: adds (32- and 64-bit, both paths) sum exactly, fetch_add
// hands out each ticket once, and exactly one compare_swap wins; float adds (f32, and bf16
// widened into f32) from every rank sum exactly; 32-bit signal words and waits with each of
// the six comparisons, their Timeout diagnostic and their bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "mpi_test_main.h"
#include "rankflow/error.h"

namespace rankflow::test {
namespace {

constexpr int kAddsPerRank = 1000;

struct Words {
  size_t team64, team32, ucx64, ucx32, tickets, ticket_sum, cas, cas_wins;
};

Words layout(const Team& t) {
  const size_t base = t.offset("words");
  return {base, base + 64, base + 128, base + 192, base + 256, base + 320, base + 384, base + 448};
}

uint64_t rank_sum(int n) {
  return static_cast<uint64_t>(n) * (n + 1) / 2;
}

TEST(AtomicsTest, ConcurrentAddsFromAllRanksSumExactly) {
  Team t = transport::create_team(shared_context(), MPI_COMM_WORLD, {{"words", 512}}, "adds");
  transport::Window& window = *transport::TeamState::of(t)->window;
  const Words w = layout(t);
  const uint64_t mine = static_cast<uint64_t>(t.rank()) + 1;
  for (int i = 0; i < kAddsPerRank; ++i) {
    t.atomic_add(0, w.team64, mine);
    t.atomic_add32(0, w.team32, static_cast<uint32_t>(mine));
    window.atomic_add<uint64_t>(0, w.ucx64, mine << 32);  // exercises the upper half too
    window.atomic_add<uint32_t>(0, w.ucx32, static_cast<uint32_t>(mine));
  }
  t.barrier();
  if (t.rank() == 0) {
    const uint64_t expected = kAddsPerRank * rank_sum(t.size());
    EXPECT_EQ(*reinterpret_cast<uint64_t*>(t.local_ptr(w.team64)), expected);
    EXPECT_EQ(*reinterpret_cast<uint32_t*>(t.local_ptr(w.team32)), expected);
    EXPECT_EQ(*reinterpret_cast<uint64_t*>(t.local_ptr(w.ucx64)), expected << 32);
    EXPECT_EQ(*reinterpret_cast<uint32_t*>(t.local_ptr(w.ucx32)), expected);
  }
  t.barrier();
  t.close();
}

TEST(AtomicsTest, FetchAddHandsOutEveryTicketOnce) {
  Team t = transport::create_team(shared_context(), MPI_COMM_WORLD, {{"words", 512}}, "tickets");
  transport::Window& window = *transport::TeamState::of(t)->window;
  const Words w = layout(t);
  constexpr int kTickets = 300;
  uint64_t sum = 0;
  uint64_t previous = 0;
  for (int i = 0; i < kTickets; ++i) {
    // Alternate the two paths on the same word: they must agree on one counter.
    const uint64_t ticket =
        (i % 2 == 0) ? t.fetch_add(0, w.tickets, 1) : window.fetch_add<uint64_t>(0, w.tickets, 1);
    if (i > 0) {
      ASSERT_GT(ticket, previous) << "tickets from one rank must increase";
    }
    previous = ticket;
    sum += ticket;
  }
  t.atomic_add(0, w.ticket_sum, sum);
  t.barrier();
  if (t.rank() == 0) {
    const uint64_t total = static_cast<uint64_t>(kTickets) * t.size();
    EXPECT_EQ(*reinterpret_cast<uint64_t*>(t.local_ptr(w.tickets)), total);
    EXPECT_EQ(*reinterpret_cast<uint64_t*>(t.local_ptr(w.ticket_sum)), total * (total - 1) / 2)
        << "some ticket was handed out twice or skipped";
  }
  t.barrier();
  t.close();
}

TEST(AtomicsTest, ExactlyOneCompareSwapWins) {
  Team t = transport::create_team(shared_context(), MPI_COMM_WORLD, {{"words", 512}}, "cas");
  transport::Window& window = *transport::TeamState::of(t)->window;
  const Words w = layout(t);
  const uint64_t claim = static_cast<uint64_t>(t.rank()) + 1;
  const uint64_t before = (t.rank() % 2 == 0) ? t.compare_swap(0, w.cas, 0, claim)
                                              : window.compare_swap<uint64_t>(0, w.cas, 0, claim);
  if (before == 0) t.atomic_add(0, w.cas_wins, 1);
  const uint32_t before32 = t.compare_swap32(0, w.team32, 0, static_cast<uint32_t>(claim));
  if (before32 == 0) t.atomic_add(0, w.cas_wins, 1u << 16);
  t.barrier();
  if (t.rank() == 0) {
    const uint64_t value = *reinterpret_cast<uint64_t*>(t.local_ptr(w.cas));
    EXPECT_GE(value, 1u);
    EXPECT_LE(value, static_cast<uint64_t>(t.size()));
    EXPECT_EQ(*reinterpret_cast<uint64_t*>(t.local_ptr(w.cas_wins)), 1u + (1u << 16));
  }
  // A compare_swap with the wrong expected value reports the current value and changes nothing.
  const uint64_t current = t.compare_swap(0, w.cas, 999999, 5);
  EXPECT_GE(current, 1u);
  t.barrier();
  if (t.rank() == 0) {
    EXPECT_EQ(*reinterpret_cast<uint64_t*>(t.local_ptr(w.cas)), current);
  }
  t.barrier();
  t.close();
}

TEST(AtomicsTest, FloatAddsFromAllRanksSumExactly) {
  Team t = transport::create_team(shared_context(), MPI_COMM_WORLD, {{"words", 512, 8}}, "floats");
  const size_t f32 = t.offset("words"), bf16_sum = f32 + 64;
  constexpr int kAdds = 200;
  const float mine = 0.5f * static_cast<float>(t.rank() + 1);  // exact in f32, sums too
  for (int i = 0; i < kAdds; ++i) {
    t.atomic_add_f32(0, f32, mine);
    t.atomic_add_bf16_to_f32(0, bf16_sum, 0x3FC0);  // bf16 1.5
  }
  t.barrier();
  if (t.rank() == 0) {
    const float expected = kAdds * 0.5f * static_cast<float>(rank_sum(t.size()));
    EXPECT_EQ(*reinterpret_cast<float*>(t.local_ptr(f32)), expected);
    EXPECT_EQ(*reinterpret_cast<float*>(t.local_ptr(bf16_sum)), 1.5f * kAdds * t.size());
  }
  t.barrier();
  t.close();
}

TEST(AtomicsTest, SignalWordsAndEveryComparison) {
  Team t = transport::create_team(shared_context(), MPI_COMM_WORLD, {{"words", 512, 8}}, "waits");
  const size_t word32 = t.offset("words"), word64 = word32 + 64, data = word32 + 128;
  const int n = t.size();
  // Every other rank puts its rank into rank 0's data, then bumps rank 0's 32-bit signal word:
  // once the word reads n - 1, every put has landed.
  if (t.rank() != 0) {
    const uint64_t payload = static_cast<uint64_t>(t.rank());
    t.put(0, data + 8 * t.rank(), &payload, sizeof(payload));
    t.signal32(0, word32);
  } else {
    EXPECT_EQ(t.wait32(word32, Compare::kEqual, static_cast<uint32_t>(n - 1)),
              static_cast<uint32_t>(n - 1));
    for (int r = 1; r < n; ++r)
      EXPECT_EQ(*reinterpret_cast<uint64_t*>(t.local_ptr(data + 8 * r)), static_cast<uint64_t>(r));
  }
  // Each comparison, on a local word that reads 5.
  *reinterpret_cast<uint64_t*>(t.local_ptr(word64)) = 5;
  EXPECT_EQ(t.wait(word64, Compare::kEqual, 5), 5u);
  EXPECT_EQ(t.wait(word64, Compare::kNotEqual, 4), 5u);
  EXPECT_EQ(t.wait(word64, Compare::kLess, 6), 5u);
  EXPECT_EQ(t.wait(word64, Compare::kLessEqual, 5), 5u);
  EXPECT_EQ(t.wait(word64, Compare::kGreater, 4), 5u);
  EXPECT_EQ(t.wait(word64, Compare::kGreaterEqual, 5), 5u);
  // One that never holds times out, naming the rank, the peer, the word and both values.
  t.set_timeout(std::chrono::milliseconds(50));
  try {
    t.wait32(word32, Compare::kLess, 0, /*from_peer=*/1);
    ADD_FAILURE() << "a wait for < 0 returned";
  } catch (const Timeout& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("wait32: rank " + std::to_string(t.rank())));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("for peer 1: 32-bit word at offset " +
                                               std::to_string(word32) + " expected < 0"));
  }
  // Bad input.
  EXPECT_THROW(t.wait(word64, static_cast<Compare>(42), 0), InvalidArgument);
  EXPECT_THROW(t.wait32(word32 + 2, Compare::kEqual, 0), Error);  // misaligned
  EXPECT_THROW(t.atomic_add_f32(0, word32 + 1, 1.0f), Error);     // misaligned
  EXPECT_THROW(t.signal32(n, word32), InvalidArgument);           // no such peer
  t.set_timeout(std::chrono::seconds(30));
  t.barrier();
  t.close();
}

}  // namespace
}  // namespace rankflow::test
