// Open MPI's own collective as a table choice (the `mpi` entries, api/mpi_collectives.h), under
// mpirun: where the table picks it for plain buffers, a blocking call runs it (nothing is
// staged) and a non-blocking one of the same size runs rankflow's own algorithm (staged);
// results are checked element by element either way. This is also where the buffer kind is seen
// to reach the tables: only the plain kind's measured ranges name `mpi`. A member that never
// arrives ends the call in a Timeout that names it, not in a hang inside MPI.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "api/communicator_internal.h"
#include "collectives/registry.h"
#include "mpi_test_main.h"
#include "rankflow/communicator.h"
#include "rankflow/error.h"

namespace rankflow::test {
namespace {

using namespace std::chrono_literals;

int32_t value(int rank, size_t i) {
  return static_cast<int32_t>(i * 5 + static_cast<size_t>(rank) * 1000 + 1);
}

// `table`'s built-in choice for `comm` (with the machine profile its members agreed on).
template <typename Args>
const coll::Algorithm<Args>& builtin(const Communicator& comm,
                                     const coll::AlgorithmTable<Args>& table, size_t bytes,
                                     coll::Buffers buffers, bool open_mpi) {
  return table.builtin(bytes, comm.size(), true, buffers, open_mpi,
                       coll::rules_for(api::machine_rules(comm), table));
}

// The smallest power-of-two size from 1 KiB to 64 MiB (the table's bytes: the whole message or
// one block) at which `table` runs Open MPI's collective for blocking calls on plain buffers,
// or 0 if it never does on `comm`.
template <typename Args>
size_t open_mpi_size(const Communicator& comm, const coll::AlgorithmTable<Args>& table) {
  for (size_t bytes = 1024; bytes <= (size_t{64} << 20); bytes *= 2) {
    if (builtin(comm, table, bytes, coll::Buffers::kPlain, true).open_mpi) return bytes;
  }
  return 0;
}

// What one call of `table`'s choice stages on plain buffers: nothing where it pushes or runs
// Open MPI's collective, else once.
template <typename Args>
size_t staged_by(const Communicator& comm, const coll::AlgorithmTable<Args>& table, size_t bytes,
                 bool blocking) {
  const auto& chosen = builtin(comm, table, bytes, coll::Buffers::kPlain, blocking);
  return chosen.open_mpi || chosen.pushes.holds(bytes, comm.size(), true) ? 0 : 1;
}

// Runs `call(blocking)` blocking and then non-blocking on `comm`, checking after each that it
// staged what `table` implies and that `check()` holds.
template <typename Args>
void blocking_then_not(Communicator& comm, const coll::AlgorithmTable<Args>& table, size_t bytes,
                       const std::function<void(bool)>& call, const std::function<void()>& check) {
  for (bool blocking : {true, false}) {
    SCOPED_TRACE(std::string(table.collective()) + " of " + std::to_string(bytes) + " bytes, " +
                 (blocking ? "blocking" : "non-blocking"));
    const size_t before = api::staged_collectives(comm);
    call(blocking);
    EXPECT_EQ(api::staged_collectives(comm) - before, staged_by(comm, table, bytes, blocking));
    check();
  }
}

// RANKFLOW_MACHINE=`profile` while it lives, as before after.
class MachineProfileForcing {
 public:
  explicit MachineProfileForcing(const char* profile) {
    if (const char* before = std::getenv("RANKFLOW_MACHINE")) saved_ = before;
    ::setenv("RANKFLOW_MACHINE", profile, 1);
  }
  ~MachineProfileForcing() {
    if (saved_.empty()) {
      ::unsetenv("RANKFLOW_MACHINE");
    } else {
      ::setenv("RANKFLOW_MACHINE", saved_.c_str(), 1);
    }
  }

 private:
  std::string saved_;
};

TEST(OpenMpiChoice, BlockingPlainCallsRunItWhereTheTableSays) {
  // The generic tables, which name Open MPI on two members (a machine profile may not: the
  // AMD EPYC's takes `direct` where they take Open MPI's broadcast).
  const MachineProfileForcing generic("generic");
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  const int p = comm.size(), me = comm.rank();
  const auto members = static_cast<size_t>(p);
  int tables_with_open_mpi = 0;

  if (size_t bytes = open_mpi_size(comm, coll::allgather_table())) {
    ++tables_with_open_mpi;
    const size_t count = bytes / 4;
    std::vector<int32_t> send(count), recv(count * members);
    for (size_t i = 0; i < count; ++i)
      send[i] = value(me, i);
    blocking_then_not(
        comm, coll::allgather_table(), bytes,
        [&](bool blocking) {
          std::fill(recv.begin(), recv.end(), -1);
          if (blocking) return comm.allgather(send.data(), recv.data(), count, DType::kI32);
          comm.iallgather(send.data(), recv.data(), count, DType::kI32).wait();
        },
        [&] {
          for (size_t i = 0; i < recv.size(); ++i)
            ASSERT_EQ(recv[i], value(static_cast<int>(i / count), i % count)) << i;
        });
  }
  if (size_t bytes = open_mpi_size(comm, coll::all_to_all_table())) {
    ++tables_with_open_mpi;
    const size_t count = bytes / 4;
    std::vector<int32_t> send(count * members), recv(count * members);
    for (size_t i = 0; i < send.size(); ++i)
      send[i] = value(me, i);  // block q goes to member q
    blocking_then_not(
        comm, coll::all_to_all_table(), bytes,
        [&](bool blocking) {
          std::fill(recv.begin(), recv.end(), -1);
          if (blocking) return comm.all_to_all(send.data(), recv.data(), count, DType::kI32);
          comm.iall_to_all(send.data(), recv.data(), count, DType::kI32).wait();
        },
        [&] {
          for (size_t i = 0; i < recv.size(); ++i) {
            const int from = static_cast<int>(i / count);
            ASSERT_EQ(recv[i], value(from, static_cast<size_t>(me) * count + i % count)) << i;
          }
        });
  }
  if (size_t bytes = open_mpi_size(comm, coll::broadcast_table())) {
    ++tables_with_open_mpi;
    const size_t count = bytes / 4;
    std::vector<int32_t> buffer(count);
    const int root = p - 1;
    blocking_then_not(
        comm, coll::broadcast_table(), bytes,
        [&](bool blocking) {
          for (size_t i = 0; i < count; ++i)
            buffer[i] = me == root ? value(root, i) : -1;
          if (blocking) return comm.broadcast(buffer.data(), count, DType::kI32, root);
          comm.ibroadcast(buffer.data(), count, DType::kI32, root).wait();
        },
        [&] {
          for (size_t i = 0; i < count; ++i)
            ASSERT_EQ(buffer[i], value(root, i)) << i;
        });
  }
  if (size_t bytes = open_mpi_size(comm, coll::allreduce_table())) {
    ++tables_with_open_mpi;
    const size_t count = bytes / 4;
    std::vector<int32_t> send(count), recv(count);
    for (size_t i = 0; i < count; ++i)
      send[i] = value(me, i);
    blocking_then_not(
        comm, coll::allreduce_table(), bytes,
        [&](bool blocking) {
          std::fill(recv.begin(), recv.end(), -1);
          if (blocking) {
            return comm.allreduce(send.data(), recv.data(), count, DType::kI32, ReduceOp::kSum);
          }
          comm.iallreduce(send.data(), recv.data(), count, DType::kI32, ReduceOp::kSum).wait();
        },
        [&] {
          for (size_t i = 0; i < count; ++i) {
            int32_t want = 0;
            for (int r = 0; r < p; ++r)
              want += value(r, i);
            ASSERT_EQ(recv[i], want) << i;
          }
        });
  }
  // The sweep measured two members: there the generic plain tables name Open MPI somewhere, and
  // on any other member count nowhere (the measured ranges are two members').
  if (p == 2) {
    EXPECT_GT(tables_with_open_mpi, 0);
  } else {
    EXPECT_EQ(tables_with_open_mpi, 0);
  }
  comm.close();
}

// Forced to Open MPI's collective (RANKFLOW_ALLREDUCE=mpi): a blocking f32 allreduce runs it
// (nothing staged); a non-blocking one, and an f16 one (MPI has no f16), run the table's own
// choice instead (staged), and all are right.
TEST(OpenMpiChoice, NonBlockingCallsAndTypesMpiLacksRunRankflowsOwn) {
  setenv("RANKFLOW_ALLREDUCE", "mpi", 1);
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  unsetenv("RANKFLOW_ALLREDUCE");
  const int p = comm.size();
  const size_t count = 16384;  // 64 KiB of f32, 32 KiB of f16: beyond the pushed sizes
  std::vector<float> a(count, 1.0f), b(count, 0.0f);
  size_t before = api::staged_collectives(comm);
  comm.allreduce(a.data(), b.data(), count, DType::kF32, ReduceOp::kSum);
  EXPECT_EQ(api::staged_collectives(comm) - before, 0u) << "Open MPI's collective stages nothing";
  for (size_t i = 0; i < count; ++i)
    ASSERT_EQ(b[i], static_cast<float>(p)) << i;

  std::fill(b.begin(), b.end(), 0.0f);
  before = api::staged_collectives(comm);
  comm.iallreduce(a.data(), b.data(), count, DType::kF32, ReduceOp::kSum).wait();
  EXPECT_EQ(api::staged_collectives(comm) - before,
            staged_by(comm, coll::allreduce_table(), count * 4, false));
  for (size_t i = 0; i < count; ++i)
    ASSERT_EQ(b[i], static_cast<float>(p)) << i;

  std::vector<uint16_t> send(count, 0x3c00), recv(count, 0);  // f16 1.0
  before = api::staged_collectives(comm);
  comm.allreduce(send.data(), recv.data(), count, DType::kF16, ReduceOp::kSum);
  EXPECT_EQ(api::staged_collectives(comm) - before,
            staged_by(comm, coll::allreduce_table(), count * 2, false));
  const uint16_t sums[] = {0x3c00, 0x4000, 0x4200, 0x4400, 0x4500};  // f16 1.0 to 5.0
  ASSERT_LE(p, 5);
  for (size_t i = 0; i < count; ++i)
    ASSERT_EQ(recv[i], sums[p - 1]) << i;
  comm.close();
}

// Members whose buffers differ (rank 0 in place, the others not, as rankflow allows) still
// all run Open MPI's collective, and the result is right: no member passes MPI_IN_PLACE, which
// MPI requires on every member or on none.
TEST(OpenMpiChoice, MembersInAndOutOfPlaceAgree) {
  setenv("RANKFLOW_ALLGATHER", "mpi", 1);
  setenv("RANKFLOW_ALL_TO_ALL", "mpi", 1);
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  unsetenv("RANKFLOW_ALLGATHER");
  unsetenv("RANKFLOW_ALL_TO_ALL");
  const int p = comm.size(), me = comm.rank();
  const auto members = static_cast<size_t>(p);
  const size_t count = 8192;
  std::vector<int32_t> send(count * members), recv(count * members);
  const size_t before = api::staged_collectives(comm);

  int32_t* own = me == 0 ? recv.data() + static_cast<size_t>(me) * count : send.data();
  for (size_t i = 0; i < count; ++i)
    own[i] = value(me, i);
  comm.allgather(own, recv.data(), count, DType::kI32);
  for (size_t i = 0; i < recv.size(); ++i)
    ASSERT_EQ(recv[i], value(static_cast<int>(i / count), i % count)) << i;

  int32_t* input = me == 0 ? recv.data() : send.data();  // rank 0 in place
  for (size_t i = 0; i < count * members; ++i)
    input[i] = value(me, i);
  comm.all_to_all(input, recv.data(), count, DType::kI32);
  for (size_t i = 0; i < recv.size(); ++i)
    ASSERT_EQ(recv[i],
              value(static_cast<int>(i / count), static_cast<size_t>(me) * count + i % count))
        << i;
  EXPECT_EQ(api::staged_collectives(comm) - before, 0u) << "both ran Open MPI's collective";
  comm.close();
}

// A member that never comes: the others' call ends in a Timeout naming the collective, the
// rank and the peer, after the communicator's timeout, instead of waiting inside MPI.
TEST(OpenMpiChoice, MemberThatNeverArrivesTimesOut) {
  setenv("RANKFLOW_ALLGATHER", "mpi", 1);
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  unsetenv("RANKFLOW_ALLGATHER");
  const int p = comm.size();
  comm.set_timeout(500ms);
  const size_t count = 4096;
  std::vector<int32_t> send(count, 1), recv(count * static_cast<size_t>(p));
  if (comm.rank() == 0) {
    try {
      comm.allgather(send.data(), recv.data(), count, DType::kI32);
      ADD_FAILURE() << "an allgather without the other members must time out";
    } catch (const Timeout& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("allgather(mpi): rank 0 of " + std::to_string(p)));
      EXPECT_THAT(e.what(), ::testing::HasSubstr("for peer"));
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);  // rank 0's allgather has timed out
  comm.close();
}

// Two members that choose different algorithms (here: the member on plain memory runs Open
// MPI's point-to-point, RANKFLOW_ALLGATHER=mpi on it alone; the other, on symmetric memory,
// rankflow's own): neither hangs. The member on plain memory ends in a Timeout that names its
// peer and says what went wrong. Each waits for a message the other never sends, whatever the
// transport's eager limit.
TEST(OpenMpiChoice, MembersWithDifferentKindsOfBufferTimeOut) {
  int world = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const bool plain = rank == 1;
  if (plain) setenv("RANKFLOW_ALLGATHER", "mpi", 1);
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  unsetenv("RANKFLOW_ALLGATHER");
  if (world != 2) {
    comm.close();
    GTEST_SKIP() << "Open MPI's point-to-point runs on two members";
  }
  comm.set_timeout(500ms);
  const size_t count = 4096;
  ASSERT_FALSE(
      builtin(comm, coll::allgather_table(), count * 4, coll::Buffers::kSymmetric, true).open_mpi);
  SymmetricBuffer arena = comm.alloc(3 * count * sizeof(int32_t));
  std::vector<int32_t> send(count, 1), recv(2 * count);
  auto* symmetric = static_cast<int32_t*>(arena.data());
  try {
    if (plain) {
      comm.allgather(send.data(), recv.data(), count, DType::kI32);
    } else {
      comm.allgather(symmetric, symmetric + count, count, DType::kI32);
    }
    ADD_FAILURE() << "members on different algorithms must time out";
  } catch (const Timeout& e) {
    if (plain) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("allgather(mpi): rank 1 of 2"));
      EXPECT_THAT(e.what(), ::testing::HasSubstr("for peer 0"));
      EXPECT_THAT(e.what(), ::testing::HasSubstr("chose another algorithm"));
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);  // both calls have timed out
  comm.close();                 // (releases the arena on both members alike)
}

}  // namespace
}  // namespace rankflow::test
