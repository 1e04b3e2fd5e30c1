// ChoiceMemo (collectives/choice_memo.h): a communicator's remembered algorithm choices must be
// exactly what the tables choose, for every table, size, kind of buffers, Open MPI permission
// and inbox, however the calls interleave (the memo's slots are shared between tables and sizes).
#include <gtest/gtest.h>

#include <vector>

#include "collectives/choice_memo.h"

namespace rankflow::coll {
namespace {

std::vector<size_t> memo_sizes() {
  std::vector<size_t> all = {0};
  for (size_t bytes = 1; bytes <= (size_t{64} << 20); bytes *= 2) {
    all.push_back(bytes - 1);
    all.push_back(bytes);
    all.push_back(bytes + 1);
  }
  return all;
}

// Asks `memo` about one message twice, and checks both answers against the table itself and
// that the second did not choose again.
template <typename Args>
void expect_table_choice(ChoiceMemo& memo, const AlgorithmTable<Args>& table, size_t bytes,
                         int members, Buffers buffers, bool open_mpi, bool has_inbox) {
  const typename AlgorithmTable<Args>::Rules no_rules;
  const Algorithm<Args>& expected =
      table.choose(bytes, members, has_inbox, no_rules, buffers, open_mpi);
  int chosen = 0;
  auto choose = [&]() -> const Algorithm<Args>& {
    ++chosen;
    return table.choose(bytes, members, has_inbox, no_rules, buffers, open_mpi);
  };
  EXPECT_EQ(&memo.find_or_choose(table, bytes, buffers, open_mpi, has_inbox, choose), &expected)
      << table.collective() << " " << bytes << " B";
  EXPECT_EQ(&memo.find_or_choose(table, bytes, buffers, open_mpi, has_inbox, choose), &expected)
      << table.collective() << " " << bytes << " B, remembered";
  EXPECT_LE(chosen, 1) << table.collective() << " " << bytes << " B chosen again";
}

// One message's three yes-or-no parts of the key: plain buffers, Open MPI allowed, an inbox.
struct Kind {
  bool plain;
  bool open_mpi;
  bool has_inbox;
};

void expect_every_table(ChoiceMemo& memo, size_t bytes, Kind k) {
  const Buffers buffers = k.plain ? Buffers::kPlain : Buffers::kSymmetric;
  expect_table_choice(memo, allreduce_table(), bytes, 2, buffers, k.open_mpi, k.has_inbox);
  expect_table_choice(memo, allgather_table(), bytes, 2, buffers, k.open_mpi, k.has_inbox);
  expect_table_choice(memo, all_to_all_table(), bytes, 2, buffers, k.open_mpi, k.has_inbox);
  expect_table_choice(memo, broadcast_table(), bytes, 2, buffers, k.open_mpi, k.has_inbox);
  expect_table_choice(memo, reduce_scatter_table(), bytes, 2, buffers, k.open_mpi, k.has_inbox);
}

TEST(ChoiceMemo, RemembersWhatEveryTableChoosesWhateverTheOrder) {
  ChoiceMemo memo;
  // For each part of the key, the same message with that part false and then true, one right
  // after the other: the second lands in the slot the first filled, so a key that left that part
  // out would answer with the first one's choice (plain and symmetric, Open MPI allowed or not,
  // differ at many sizes).
  for (size_t bytes : memo_sizes()) {
    for (int part = 0; part < 3; ++part) {
      for (int others = 0; others < 4; ++others) {
        const bool a = (others & 1) != 0;
        const bool b = (others & 2) != 0;
        for (bool flipped : {false, true}) {
          const Kind k = part == 0   ? Kind{flipped, a, b}
                         : part == 1 ? Kind{a, flipped, b}
                                     : Kind{a, b, flipped};
          expect_every_table(memo, bytes, k);
        }
      }
    }
  }
}

TEST(ChoiceMemo, TellsSizesOfOneSlotApart) {
  // 2^k and 2^k + 1 bytes share a slot and the tables' ranges end at 2^k (4 KiB pushed, 4 KiB + 1
  // not): asked one after the other with the same kind, each must get its own choice.
  for (Kind k : {Kind{true, true, true}, Kind{true, false, true}, Kind{false, false, true}}) {
    ChoiceMemo memo;
    for (size_t bytes : memo_sizes())
      expect_every_table(memo, bytes, k);
  }
}

TEST(ChoiceMemo, KeepsChoicesOfSeveralSizesAtOnce) {
  // A program that alternates two sizes gets both from the memo (different powers of two take
  // different slots), and each is still the table's.
  ChoiceMemo memo;
  for (int round = 0; round < 3; ++round) {
    for (size_t bytes : {size_t{4}, size_t{65536}, size_t{1} << 20}) {
      expect_table_choice(memo, allreduce_table(), bytes, 2, Buffers::kPlain, true, true);
    }
  }
  int chosen = 0;
  auto count = [&]() -> const AllreduceAlgorithm& {
    ++chosen;
    return allreduce_table().algorithms().front();
  };
  memo.find_or_choose(allreduce_table(), 4, Buffers::kPlain, true, true, count);
  memo.find_or_choose(allreduce_table(), 65536, Buffers::kPlain, true, true, count);
  EXPECT_EQ(chosen, 0) << "both sizes should still be remembered";
}

}  // namespace
}  // namespace rankflow::coll
