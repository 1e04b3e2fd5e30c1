// The cross-memory exchanges of allgather and all_to_all on plain buffers under mpirun
// (collectives/exchange_cross_memory.cpp, exchange_choice.cpp): how many kernel reads and writes
// each member makes (each block moved once, by one side of each pair; the allgather's kept block
// a chunk at a time), that both members of a pair move their blocks alike whatever each
// measures, the own block streamed where the profile says, and member 0's verdict on staging
// followed by every member; every element checked. Built into the algorithm_override program;
// the ctest entries run them with --gtest_filter=CrossMemory.* under mixes of
// RANKFLOW_CROSS_MEMORY_DIRECTION and RANKFLOW_CROSS_MEMORY, and with RANKFLOW_MACHINE=amd-zen4
// (tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "api/communicator_internal.h"
#include "collectives/exchange_cross_memory.h"
#include "collectives/link_probe.h"
#include "collectives/machine_profile.h"
#include "collectives/process_memory.h"
#include "collectives/registry.h"
#include "common/env.h"
#include "forced_algorithm.h"
#include "rankflow/communicator.h"

namespace rankflow::test {
namespace {

// The kernel copies one member makes in a cross-memory exchange of 16 KiB blocks that every
// member takes (exchange_cross_memory.cpp): a pair in which both members offer to read reads,
// each its own blocks; any other pair writes, each its own blocks into the other, except into a
// member running an in-place all_to_all (the writers put into its window). A member offers where
// RANKFLOW_CROSS_MEMORY_DIRECTION=read, every member uses the kernel's copies and the peers'
// windows are mapped (one host); `auto` offers from CrossMemoryReads::min_block only, far above
// these blocks. Each member's settings are exchanged first, since the mixed_* tests give the
// ranks different ones.
struct KernelCopies {
  uint64_t reads = 0;
  uint64_t writes = 0;
};

KernelCopies expected_kernel_copies(const Communicator& comm, bool crosses,
                                    bool in_place_all_to_all) {
  const int p = comm.size(), me = comm.rank();
  const int mine[2] = {coll::process_memory_usable() ? 1 : 0,
                       env::cross_memory_direction() == env::CrossMemoryDirection::kRead ? 1 : 0};
  std::vector<int> all(2 * static_cast<size_t>(p));
  MPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, MPI_COMM_WORLD);
  EXPECT_GT(coll::local_cross_memory_reads().min_block, size_t{16} << 10);
  auto usable = [&](int q) { return all[2 * static_cast<size_t>(q)] != 0; };
  bool every_usable = true;
  for (int q = 0; q < p; ++q)
    every_usable = every_usable && usable(q);
  auto reads = [&](int q) { return every_usable && all[2 * static_cast<size_t>(q) + 1] != 0; };
  KernelCopies copies;
  if (!crosses || in_place_all_to_all || p < 2 || !usable(me) || !api::maps_peers(comm))
    return copies;
  for (int q = 0; q < p; ++q) {
    if (q == me || !usable(q)) continue;
    if (reads(me) && reads(q)) {
      ++copies.reads;
    } else {
      ++copies.writes;
    }
  }
  return copies;
}

// Whether the tables, with the communicator's agreed machine profile, choose `cross_memory` for
// plain blocks of `block_bytes` of the collective `variable` names (on the AMD Zen 5 profile
// 16 KiB blocks are pushed instead).
// True where the communicator runs the generic tables (no machine profile).
bool machine_rules_default(Communicator& comm) {
  return api::machine_rules(comm).profile == nullptr;
}

bool tables_choose_cross_memory(Communicator& comm, const char* variable, size_t block_bytes) {
  auto chooses = [&](const auto& table) {
    const auto& chosen = table.select(block_bytes, comm.size(), true, {}, coll::Buffers::kPlain,
                                      true, coll::rules_for(api::machine_rules(comm), table));
    return chosen.name == "cross_memory";
  };
  return std::string(variable) == "RANKFLOW_ALL_TO_ALL" ? chooses(coll::all_to_all_table())
                                                        : chooses(coll::allgather_table());
}

// `cross_memory` copies each block straight from the sender's send into the receiver's recv, one
// kernel copy per block, made by one side (expected_kernel_copies); `pipelined` stages and makes
// none. Plain 16 KiB blocks, forced through `variable`, and as the tables choose there
// (cross_memory on two members and on four or more, collectives.md, unless the machine's profile
// chooses otherwise), out of place and in place:
// a `cross_memory` that fell back to the staging, a table that chose another path, or a block
// copied by both sides or by neither would show in the counts. The second call is counted (the
// first reaches the peers' processes: a member reads only from processes its copies reached).
// `call(comm, a, b, count)` runs the collective and checks its result.
template <typename Call>
void expect_kernel_copies(const char* variable, bool in_place, Call&& call) {
  const size_t count = 4096;  // 16 KiB of int32 a block
  for (const char* name : {"cross_memory", "pipelined", ""}) {
    SCOPED_TRACE(std::string(variable) + "=" + (*name ? name : "(the tables' choice)") +
                 (in_place ? ", in place" : ""));
    Communicator comm = *name ? forced(variable, name) : Communicator::from_mpi(MPI_COMM_WORLD);
    const int p = comm.size();
    const bool crosses = *name ? std::string(name) == "cross_memory"
                               : tables_choose_cross_memory(comm, variable, count * 4);
    if (!*name && machine_rules_default(comm)) {
      EXPECT_EQ(crosses, p == 2 || p >= 4);  // the generic tables' choice (collectives.md)
    }
    const KernelCopies expected = expected_kernel_copies(
        comm, crosses, in_place && std::string(variable) == "RANKFLOW_ALL_TO_ALL");
    std::vector<int32_t> a(count * static_cast<size_t>(p)), b(a.size());
    for (int round = 0; round < 2; ++round) {
      for (size_t i = 0; i < a.size(); ++i)
        a[i] = value(comm.rank(), i);
      std::fill(b.begin(), b.end(), -1);  // a block neither side copied shows in the check
      const uint64_t reads = coll::process_memory_reads();
      const uint64_t writes = coll::process_memory_writes();
      call(comm, a.data(), in_place ? a.data() : b.data(), count);
      if (round == 0) continue;
      EXPECT_EQ(coll::process_memory_reads() - reads, expected.reads) << "rank " << comm.rank();
      EXPECT_EQ(coll::process_memory_writes() - writes, expected.writes) << "rank " << comm.rank();
    }
  }
}

TEST(CrossMemory, AllgatherCopiesEachBlockOnceBetweenTheProcesses) {
  for (const bool in_place : {false, true}) {
    expect_kernel_copies("RANKFLOW_ALLGATHER", in_place,
                         [&](Communicator& comm, int32_t* a, int32_t* b, size_t count) {
                           // In place: the input is this member's block of recv.
                           const size_t me = static_cast<size_t>(comm.rank());
                           if (in_place) std::copy(a, a + count, b + me * count);
                           comm.allgather(in_place ? b + me * count : a, b, count, DType::kI32);
                           for (int r = 0; r < comm.size(); ++r) {
                             for (size_t i = 0; i < count; ++i)
                               ASSERT_EQ(b[static_cast<size_t>(r) * count + i], value(r, i))
                                   << r << " " << i;
                           }
                         });
  }
}

// An allgather member that writes a block larger than coll::kKeptBlockChunk into a peer's recv
// writes it a chunk at a time and copies each chunk into its own block straight after
// (exchange_cross_memory.cpp): one kernel write a chunk for the first peer it writes, one a
// block for the others, no write where the pair reads. A block of two chunks and 12 bytes, recv
// one int32 off the 16-byte alignment, every element checked, and the element before recv
// untouched; in place (the own block is already there) one write a block. The second call is
// counted (the first reaches the peers' processes).
TEST(CrossMemory, AllgatherWritesItsKeptBlockChunkByChunk) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  Communicator cross = forced("RANKFLOW_ALLGATHER", "cross_memory");
  const size_t p = static_cast<size_t>(comm.size());
  const size_t me = static_cast<size_t>(comm.rank());
  const size_t count = (2 * coll::kKeptBlockChunk + 12) / 4;
  const size_t chunks = coll::kernel_writes_of_block(count * 4, true);
  EXPECT_EQ(chunks, 3u);
  const KernelCopies copies = expected_kernel_copies(comm, true, false);
  for (const bool in_place : {false, true}) {
    SCOPED_TRACE(in_place ? "in place" : "out of place");
    const uint64_t expected_writes =
        copies.writes == 0 || in_place ? copies.writes : chunks + copies.writes - 1;
    std::vector<int32_t> a(count), b(count * p + 1);
    for (size_t i = 0; i < count; ++i)
      a[i] = value(comm.rank(), i);
    int32_t* recv = b.data() + 1;
    for (int call = 0; call < 2; ++call) {
      std::fill(b.begin(), b.end(), -1);
      if (in_place) std::copy(a.begin(), a.end(), recv + me * count);
      const uint64_t reads = coll::process_memory_reads();
      const uint64_t writes = coll::process_memory_writes();
      cross.allgather(in_place ? recv + me * count : a.data(), recv, count, DType::kI32);
      if (call == 1) {
        EXPECT_EQ(coll::process_memory_reads() - reads, copies.reads) << "rank " << me;
        EXPECT_EQ(coll::process_memory_writes() - writes, expected_writes) << "rank " << me;
      }
      ASSERT_EQ(b[0], -1) << "wrote before recv";
      for (size_t r = 0; r < p; ++r) {
        for (size_t i = 0; i < count; ++i)
          ASSERT_EQ(recv[r * count + i], value(static_cast<int>(r), i)) << r << " " << i;
      }
    }
  }
}

// RANKFLOW_CROSS_MEMORY_DIRECTION=auto where the profile reads (collectives.np2 runs it with
// RANKFLOW_MACHINE=amd-zen4): 4 MiB blocks, 70 calls, so the probe runs at the first call and
// again at the 65th, and the machine may change its mode in between. Whatever each member
// measures, the two members of the pair must move each call's blocks the same way: both read
// one block each, or both write one each (the kept block, a chunk at a time).
TEST(CrossMemory, AutoDirectionKeepsBothMembersOfThePairAlike) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  const size_t block = coll::local_cross_memory_reads().min_block;
  if (comm.size() != 2 || block > (size_t{4} << 20) || !coll::process_memory_usable() ||
      !api::maps_peers(comm) || env::cross_memory_direction() != env::CrossMemoryDirection::kAuto)
    GTEST_SKIP() << "two members on one host, a profile that reads from 4 MiB, direction auto";
  const size_t count = block / 4;
  std::vector<int32_t> a(count), b(2 * count);
  for (size_t i = 0; i < count; ++i)
    a[i] = value(comm.rank(), i);
  for (int call = 0; call < 70; ++call) {
    std::fill(b.begin(), b.end(), -1);
    const uint64_t reads = coll::process_memory_reads();
    const uint64_t writes = coll::process_memory_writes();
    comm.allgather(a.data(), b.data(), count, DType::kI32);
    const uint64_t mine[2] = {coll::process_memory_reads() - reads,
                              coll::process_memory_writes() - writes};
    uint64_t both[4];
    MPI_Allgather(mine, 2, MPI_UINT64_T, both, 2, MPI_UINT64_T, MPI_COMM_WORLD);
    // One read a member, or the kept block written a chunk at a time by each.
    const uint64_t written = coll::kernel_writes_of_block(block, true);
    ASSERT_TRUE((mine[0] == 1 && mine[1] == 0) || (mine[0] == 0 && mine[1] == written))
        << "call " << call << ": " << mine[0] << " reads, " << mine[1] << " writes";
    ASSERT_EQ(both[0], both[2]) << "call " << call << ": one member read, the other wrote";
    for (int r = 0; r < 2; ++r) {
      for (size_t i = 0; i < count; i += 997)
        ASSERT_EQ(b[static_cast<size_t>(r) * count + i], value(r, i)) << call << " " << r;
    }
  }
}

// Where the profile streams the own block (algorithm_override.np2.amd_profile_exchanges runs it
// with RANKFLOW_MACHINE=amd-zen4: recv of 16 MiB and more; .intel_emr_own_blocks with intel-emr:
// the allgather from 16 MiB, the all_to_all from 2 MiB, so a threshold taken for the wrong
// collective streams where it should not), the cross-memory allgather and all_to_all copy it with
// non-temporal stores, once a call, and exactly: recv one int32 off the 16-byte alignment (a head
// and a tail beside the streamed lines), an odd count, every element checked. A call whose recv
// is below the threshold, or in place, copies as before.
// This process's profile's threshold for the collective, read from the profile itself (the
// environment's choice, as the library's), not through the library's accessor.
size_t own_block_threshold(bool all_to_all) {
  const coll::MachineProfile* profile = coll::profile_from_environment();
  if (profile == nullptr) return SIZE_MAX;
  const coll::OwnBlockStreaming& from = profile->stream_own_block;
  const size_t threshold = all_to_all ? from.all_to_all_from_recv : from.allgather_from_recv;
  EXPECT_EQ(coll::local_stream_own_block_from_recv(all_to_all), threshold);
  return threshold;
}

TEST(CrossMemory, LargeOwnBlockIsStreamedExactly) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  int mapped = api::maps_peers(comm) ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &mapped, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (comm.size() < 2 || mapped == 0) GTEST_SKIP() << "members on one host";
  const size_t p = static_cast<size_t>(comm.size());
  int tested = 0;
  for (const char* variable : {"RANKFLOW_ALLGATHER", "RANKFLOW_ALL_TO_ALL"}) {
    const bool all_to_all = std::string(variable) == "RANKFLOW_ALL_TO_ALL";
    // Every member decides alike (each may have its own profile, and its own copies off): the
    // smallest threshold of the members sets the sizes, each member's own says what it streams.
    const size_t from = own_block_threshold(all_to_all);
    unsigned long long smallest = from;
    MPI_Allreduce(MPI_IN_PLACE, &smallest, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    if (smallest > (size_t{32} << 20)) continue;
    ++tested;
    const size_t streamed_count = smallest / p / 4 + 3;  // P x block just over the threshold
    const size_t small_count = smallest / p / 8;         // half of it
    Communicator forced_comm = forced(variable, "cross_memory");
    for (const size_t count : {streamed_count, small_count}) {
      SCOPED_TRACE(std::string(variable) + ", " + std::to_string(count) + " elements a block");
      std::vector<int32_t> a(count * p), b(count * p + 1);
      for (size_t i = 0; i < a.size(); ++i)
        a[i] = value(comm.rank(), i);
      std::fill(b.begin(), b.end(), -1);
      int32_t* recv = b.data() + 1;
      const uint64_t before = coll::own_blocks_streamed();
      if (all_to_all) {
        forced_comm.all_to_all(a.data(), recv, count, DType::kI32);
      } else {
        forced_comm.allgather(a.data(), recv, count, DType::kI32);
      }
      EXPECT_EQ(coll::own_blocks_streamed() - before, p * count * 4 >= from ? 1u : 0u);
      EXPECT_EQ(b[0], -1) << "wrote before recv";
      for (size_t r = 0; r < p; ++r) {
        const size_t first = all_to_all ? static_cast<size_t>(comm.rank()) * count : 0;
        for (size_t i = 0; i < count; ++i)
          ASSERT_EQ(recv[r * count + i], value(static_cast<int>(r), first + i)) << r << " " << i;
      }
    }
  }
  if (tested == 0) GTEST_SKIP() << "a profile that streams own blocks";
}

// Where the profile stages mid-sized blocks in the fast mode (the amd_profile_exchanges ctest:
// RANKFLOW_MACHINE=amd-zen4), member 0's probe decides for both members: with member 0's round
// trip forced fast and member 1's slow every call of 512 KiB blocks (the profile's `probed`)
// stages (no kernel copy on either member), with the two swapped every call copies between the
// processes (one read each, or the block written by each: the allgather's in two chunks). A member
// that followed its own probe would run the other protocol than its peer: the call would hang (the
// test's timeout) or the counts would differ. `cross_memory` forced never stages, whatever the
// probe says.
TEST(CrossMemory, MemberZeroDecidesWhetherEveryMemberStages) {
  const size_t block = size_t{512} << 10;
  {  // the same answer on every member: the agreed profile and transport, copies usable on all
    Communicator probe = Communicator::from_mpi(MPI_COMM_WORLD);
    const coll::MachineProfile* profile = api::machine_rules(probe).profile;
    int usable = coll::process_memory_usable() ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &usable, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (probe.size() != 2 || profile == nullptr || profile->fast_round_trip_ns == 0 ||
        !api::maps_peers(probe) || usable == 0)
      GTEST_SKIP() << "two members, peers mapped, a profile that stages, kernel copies usable";
  }
  struct Unforce {  // whatever way the test ends, later probes measure again
    ~Unforce() { coll::LinkProbe::force_round_trip(std::chrono::nanoseconds(0)); }
  } unforce;
  const size_t count = block / 4;
  for (const bool zero_fast : {true, false}) {
    const int rank = [] {
      int r = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &r);
      return r;
    }();
    const bool fast_here = (rank == 0) == zero_fast;
    coll::LinkProbe::force_round_trip(std::chrono::nanoseconds(fast_here ? 100 : 1000));
    Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);  // its first call probes
    std::vector<int32_t> a(2 * count), b(2 * count);
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = value(comm.rank(), i);
    Communicator cross = forced("RANKFLOW_ALLGATHER", "cross_memory");
    for (int call = 0; call < 5; ++call) {
      const bool all_to_all = call % 2 == 1;
      const bool forced_cross = call == 4;
      SCOPED_TRACE(std::string(all_to_all ? "all_to_all" : "allgather") +
                   (forced_cross ? " (cross_memory forced)" : "") + ", call " +
                   std::to_string(call) + (zero_fast ? ", member 0 fast" : ", member 0 slow"));
      std::fill(b.begin(), b.end(), -1);
      const uint64_t reads = coll::process_memory_reads();
      const uint64_t writes = coll::process_memory_writes();
      if (all_to_all) {
        comm.all_to_all(a.data(), b.data(), count, DType::kI32);
      } else {
        (forced_cross ? cross : comm).allgather(a.data(), b.data(), count, DType::kI32);
      }
      const uint64_t mine[2] = {coll::process_memory_reads() - reads,
                                coll::process_memory_writes() - writes};
      uint64_t both[4];
      MPI_Allgather(mine, 2, MPI_UINT64_T, both, 2, MPI_UINT64_T, MPI_COMM_WORLD);
      // Staged: no kernel copy. Otherwise one read a member, or the block written by each (the
      // allgather's kept block a chunk at a time).
      const uint64_t written = coll::kernel_writes_of_block(block, !all_to_all);
      for (int m = 0; m < 2; ++m) {
        const uint64_t r = both[2 * m], w = both[2 * m + 1];
        if (zero_fast && !forced_cross) {
          EXPECT_EQ(r + w, 0u) << "member " << m;
        } else {
          EXPECT_TRUE((r == 1 && w == 0) || (r == 0 && w == written))
              << "member " << m << ": " << r << " reads, " << w << " writes";
        }
      }
      for (size_t r = 0; r < 2; ++r) {
        const size_t first = all_to_all ? static_cast<size_t>(comm.rank()) * count : 0;
        for (size_t i = 0; i < count; ++i)
          ASSERT_EQ(b[r * count + i], value(static_cast<int>(r), first + i)) << r << " " << i;
      }
    }
  }
}

TEST(CrossMemory, AllToAllCopiesEachBlockOnceBetweenTheProcesses) {
  for (const bool in_place : {false, true}) {
    expect_kernel_copies("RANKFLOW_ALL_TO_ALL", in_place,
                         [](Communicator& comm, const int32_t* a, int32_t* b, size_t count) {
                           comm.all_to_all(a, b, count, DType::kI32);
                           for (int r = 0; r < comm.size(); ++r) {
                             for (size_t i = 0; i < count; ++i) {
                               ASSERT_EQ(b[static_cast<size_t>(r) * count + i],
                                         value(r, static_cast<size_t>(comm.rank()) * count + i))
                                   << r << " " << i;
                             }
                           }
                         });
  }
}

// A kernel write refused part of the way through the allgather's kept block (member 0 refused
// after its first chunk, as the kernel refuses a write into a process that exited or lost the
// permission): the whole block goes through the peer's window instead, every element arrives,
// and from then on member 0 makes no kernel copy (its peers put into its window) and the results
// stay right. Poisons the process's kernel copies, so it runs only in its own ctest entry
// (algorithm_override.np2.kept_block_refused: RANKFLOW_TEST_REFUSE_WRITES=1).
TEST(CrossMemoryRefusal, KeptBlockRefusedPartWayGoesThroughTheWindow) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  int usable = coll::process_memory_usable() ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &usable, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (std::getenv("RANKFLOW_TEST_REFUSE_WRITES") == nullptr || comm.size() != 2 ||
      !api::maps_peers(comm) || usable == 0 ||
      env::cross_memory_direction() != env::CrossMemoryDirection::kWrite)
    GTEST_SKIP() << "its own entry: two members on one host, copies usable, direction write";
  Communicator cross = forced("RANKFLOW_ALLGATHER", "cross_memory");
  const size_t count = (2 * coll::kKeptBlockChunk + 12) / 4;
  std::vector<int32_t> a(count), b(2 * count);
  for (size_t i = 0; i < count; ++i)
    a[i] = value(comm.rank(), i);
  for (int call = 0; call < 3; ++call) {  // the first reaches the peer; the second is refused
    SCOPED_TRACE("call " + std::to_string(call));
    if (call == 1 && comm.rank() == 0) coll::refuse_writes_after_for_tests(1);
    std::fill(b.begin(), b.end(), -1);
    const uint64_t writes = coll::process_memory_writes();
    cross.allgather(a.data(), b.data(), count, DType::kI32);
    const uint64_t made = coll::process_memory_writes() - writes;
    if (comm.rank() == 0) {
      EXPECT_EQ(made, call == 0 ? 3u : call == 1 ? 1u : 0u);
      EXPECT_EQ(coll::process_memory_usable(), call == 0);
    } else {
      EXPECT_EQ(made, call == 2 ? 0u : 3u) << "member 0 publishes no process once refused";
    }
    for (size_t r = 0; r < 2; ++r) {
      for (size_t i = 0; i < count; ++i)
        ASSERT_EQ(b[r * count + i], value(static_cast<int>(r), i)) << r << " " << i;
    }
  }
}

}  // namespace
}  // namespace rankflow::test
