// The algorithm tables under mpirun: every algorithm of every collective forced through its
// RANKFLOW_<COLLECTIVE> variable, on plain and symmetric buffers, in and out of place, at sizes
// it serves and sizes it does not (where the built-in choice takes over), checked element by
// element. Whether the forced algorithm really ran is observed through the staging window:
// on plain memory a pushing algorithm and Open MPI's collective (mpi) stage nothing and the
// others stage once, on symmetric memory nothing is ever staged. Also: a bad value fails the
// communicator's creation on every member, and the tables' limits agree with the algorithms' own
// predicates on a real context.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "api/communicator_internal.h"
#include "collectives/machine_profile.h"
#include "collectives/registry.h"
#include "common/env.h"
#include "forced_algorithm.h"
#include "mpi_test_main.h"
#include "rankflow/communicator.h"
#include "rankflow/error.h"

namespace rankflow::test {
namespace {

class AlgorithmOverride : public ::testing::TestWithParam<bool> {  // symmetric buffers?
 protected:
  // send and recv of `elements` int32 each: plain memory, or one symmetric allocation, new on
  // every call (a released allocation's addresses come back in the next one, which must still
  // be recognised as symmetric on every member).
  std::pair<int32_t*, int32_t*> buffers(Communicator& comm, size_t elements) {
    if (!GetParam()) {
      plain_a_.assign(elements + 1, 0);
      plain_b_.assign(elements + 1, 0);
      return {plain_a_.data(), plain_b_.data()};
    }
    arena_ = comm.alloc(2 * (elements + 16) * sizeof(int32_t));
    auto* base = static_cast<int32_t*>(arena_.data());
    return {base, base + elements + 16};
  }
  void release() { arena_ = SymmetricBuffer(); }

  // The staging the chosen algorithm implies: none where it pushes, where Open MPI's own
  // collective runs (mpi), or on symmetric memory.
  template <typename Args>
  size_t expected_staged(const coll::Algorithm<Args>& chosen, size_t bytes, int p) const {
    return GetParam() || chosen.open_mpi || chosen.pushes.holds(bytes, p, true) ? 0 : 1;
  }

  // Runs `call` and checks how often it staged, and that a forced algorithm that serves the
  // message was the one chosen.
  template <typename Args, typename Call>
  void run(Communicator& comm, const coll::AlgorithmTable<Args>& table, std::string_view name,
           size_t bytes, Call&& call) {
    const int p = comm.size();
    const auto& chosen =  // (the calls are blocking: Open MPI's collective may run them)
        table.select(bytes, p, true, table.parse(name),
                     GetParam() ? coll::Buffers::kSymmetric : coll::Buffers::kPlain, true,
                     coll::rules_for(api::machine_rules(comm), table));
    if (table.find(name).serves.holds(bytes, p, true)) {
      EXPECT_EQ(chosen.name, name);
    }
    const size_t before = api::staged_collectives(comm);
    call();
    EXPECT_EQ(api::staged_collectives(comm) - before, expected_staged(chosen, bytes, p))
        << chosen.label << " on " << bytes << " bytes";
  }

  std::vector<int32_t> plain_a_, plain_b_;
  SymmetricBuffer arena_;
};

// Counts (elements of 4 bytes) around the pushed limits: 128 = 512 B, 1024 = 4 KiB.
const std::vector<size_t> kCounts = {0, 1, 100, 128, 129, 1024, 1025, 20000};

TEST_P(AlgorithmOverride, AllgatherEveryAlgorithm) {
  for (const auto& algorithm : coll::allgather_table().algorithms()) {
    Communicator comm = forced("RANKFLOW_ALLGATHER", algorithm.name);
    const int p = comm.size(), me = comm.rank();
    for (size_t count : kCounts) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(std::string(algorithm.name) + " count " + std::to_string(count) +
                     (in_place ? " in place" : ""));
        auto [a, b] = buffers(comm, count * static_cast<size_t>(p));
        int32_t* send = in_place ? b + count * static_cast<size_t>(me) : a;
        for (size_t i = 0; i < count; ++i)
          send[i] = value(me, i);
        run(comm, coll::allgather_table(), algorithm.name, count * 4,
            [&] { comm.allgather(send, b, count, DType::kI32); });
        for (int r = 0; r < p; ++r) {
          for (size_t i = 0; i < count; ++i)
            ASSERT_EQ(b[static_cast<size_t>(r) * count + i], value(r, i)) << r << " " << i;
        }
      }
    }
    release();
  }
}

TEST_P(AlgorithmOverride, ReduceScatterEveryAlgorithm) {
  for (const auto& algorithm : coll::reduce_scatter_table().algorithms()) {
    Communicator comm = forced("RANKFLOW_REDUCE_SCATTER", algorithm.name);
    const int p = comm.size(), me = comm.rank();
    for (size_t count : kCounts) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(std::string(algorithm.name) + " count " + std::to_string(count) +
                     (in_place ? " in place" : ""));
        auto [a, b] = buffers(comm, count * static_cast<size_t>(p));
        int32_t* recv = in_place ? a : b;
        for (size_t i = 0; i < count * static_cast<size_t>(p); ++i)
          a[i] = value(me, i);
        run(comm, coll::reduce_scatter_table(), algorithm.name, count * 4,
            [&] { comm.reduce_scatter(a, recv, count, DType::kI32, ReduceOp::kSum); });
        for (size_t i = 0; i < count; ++i) {
          int32_t want = 0;
          for (int r = 0; r < p; ++r)
            want += value(r, static_cast<size_t>(me) * count + i);
          ASSERT_EQ(recv[i], want) << i;
        }
      }
    }
    release();
  }
}

TEST_P(AlgorithmOverride, BroadcastEveryAlgorithmEveryRoot) {
  for (const auto& algorithm : coll::broadcast_table().algorithms()) {
    Communicator comm = forced("RANKFLOW_BROADCAST", algorithm.name);
    const int p = comm.size(), me = comm.rank();
    for (size_t count : kCounts) {
      auto [a, b] = buffers(comm, count);
      for (int root = 0; root < p; ++root) {
        SCOPED_TRACE(std::string(algorithm.name) + " count " + std::to_string(count) + " root " +
                     std::to_string(root));
        for (size_t i = 0; i < count; ++i)
          a[i] = value(me, i);
        run(comm, coll::broadcast_table(), algorithm.name, count * 4,
            [&] { comm.broadcast(a, count, DType::kI32, root); });
        for (size_t i = 0; i < count; ++i)
          ASSERT_EQ(a[i], value(root, i)) << i;
      }
      (void)b;
    }
    release();
  }
}

TEST_P(AlgorithmOverride, AllToAllEveryAlgorithm) {
  for (const auto& algorithm : coll::all_to_all_table().algorithms()) {
    Communicator comm = forced("RANKFLOW_ALL_TO_ALL", algorithm.name);
    const int p = comm.size(), me = comm.rank();
    for (size_t count : kCounts) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(std::string(algorithm.name) + " count " + std::to_string(count) +
                     (in_place ? " in place" : ""));
        const size_t total = count * static_cast<size_t>(p);
        auto [a, b] = buffers(comm, total);
        int32_t* recv = in_place ? a : b;
        for (size_t i = 0; i < total; ++i)
          a[i] = value(me, i);  // block q of a goes to member q
        run(comm, coll::all_to_all_table(), algorithm.name, count * 4,
            [&] { comm.all_to_all(a, recv, count, DType::kI32); });
        for (int r = 0; r < p; ++r) {
          for (size_t i = 0; i < count; ++i) {
            ASSERT_EQ(recv[static_cast<size_t>(r) * count + i],
                      value(r, static_cast<size_t>(me) * count + i))
                << r << " " << i;
          }
        }
      }
    }
    release();
  }
}

TEST_P(AlgorithmOverride, AllreduceEveryAlgorithmThroughTheEnvironment) {
  for (const auto& algorithm : coll::allreduce_table().algorithms()) {
    Communicator comm = forced("RANKFLOW_ALLREDUCE", algorithm.name);
    const int p = comm.size(), me = comm.rank();
    for (size_t count : kCounts) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(std::string(algorithm.name) + " count " + std::to_string(count) +
                     (in_place ? " in place" : ""));
        auto [a, b] = buffers(comm, count);
        int32_t* recv = in_place ? a : b;
        for (size_t i = 0; i < count; ++i)
          a[i] = value(me, i);
        run(comm, coll::allreduce_table(), algorithm.name, count * 4,
            [&] { comm.allreduce(a, recv, count, DType::kI32, ReduceOp::kSum); });
        for (size_t i = 0; i < count; ++i) {
          int32_t want = 0;
          for (int r = 0; r < p; ++r)
            want += value(r, i);
          ASSERT_EQ(recv[i], want) << i;
        }
      }
    }
    release();
  }
}

std::string buffer_kind(const ::testing::TestParamInfo<bool>& param) {
  return param.param ? "Symmetric" : "Plain";
}
INSTANTIATE_TEST_SUITE_P(Buffers, AlgorithmOverride, ::testing::Bool(), buffer_kind);

// A bad value is an InvalidArgument on every member, before anything collective is made (so the
// members stay in step and the next communicator works).
TEST(AlgorithmOverrideErrors, BadValueFailsCreation) {
  setenv("RANKFLOW_BROADCAST", "direct:0-64;tree:64-inf", 1);
  try {
    Communicator::from_mpi(MPI_COMM_WORLD);
    ADD_FAILURE() << "a bad RANKFLOW_BROADCAST must fail";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("RANKFLOW_BROADCAST: unknown algorithm 'tree'"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("streamed, pushed, direct"));
  }
  unsetenv("RANKFLOW_BROADCAST");
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  int32_t x = comm.rank();
  comm.allreduce(&x, &x, 1, DType::kI32, ReduceOp::kSum);
  EXPECT_EQ(x, comm.size() * (comm.size() - 1) / 2);
}

// The tables restate the algorithms' own predicates as limits (collectives/tables.cpp): on a
// real context with an inbox, and on one without, they agree for every size around the limits.
TEST(AlgorithmOverrideErrors, TableLimitsAgreeWithTheAlgorithms) {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  for (bool inbox : {true, false}) {
    std::vector<BufferSpec> buffers;
    if (inbox) buffers.push_back({"inbox", coll::CollContext::inbox_buffer_bytes(p), 64});
    coll::CollContext c(transport::create_team(shared_context(), MPI_COMM_WORLD, buffers, "limits",
                                               coll::CollContext::signal_slots_for(p)));
    ASSERT_EQ(c.has_inbox(), inbox);
    for (size_t bytes :
         {0, 1, 2, 8, 9, 511, 512, 513, 4095, 4096, 4097, 8192, 32768, 32769, 1 << 20}) {
      SCOPED_TRACE(std::to_string(bytes) + (inbox ? " bytes, inbox" : " bytes, no inbox"));
      const auto& ag = coll::allgather_table().find("pushed");
      EXPECT_EQ(ag.serves.holds(bytes, p, inbox), coll::pushes_blocks(c, bytes));
      EXPECT_EQ(coll::all_to_all_table().find("pushed").serves.holds(bytes, p, inbox),
                coll::pushes_blocks(c, bytes));
      EXPECT_EQ(coll::reduce_scatter_table().find("pushed").serves.holds(bytes, p, inbox),
                coll::pushes_blocks(c, bytes));
      EXPECT_EQ(coll::broadcast_table().find("streamed").serves.holds(bytes, p, inbox),
                coll::broadcast_streams(c, bytes));
      EXPECT_EQ(coll::broadcast_table().find("pushed").serves.holds(bytes, p, inbox),
                coll::broadcast_pushes(c, bytes));
      EXPECT_EQ(coll::allreduce_table().find("onephase").pushes.holds(bytes, p, inbox),
                coll::onephase_pushes(c, bytes));
    }
    c.team().close();
  }
}

}  // namespace
}  // namespace rankflow::test
