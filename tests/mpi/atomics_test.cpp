// Atomics from every rank on one word: adds (32- and 64-bit, both paths) sum exactly, fetch_add
// hands out each ticket once, and exactly one compare_swap wins.
#include <gtest/gtest.h>

#include "mpi_test_main.h"

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

}  // namespace
}  // namespace rankflow::test
