// The reading protocol of the plain two-phase allreduce (collectives/allreduce_twophase_read.h):
// each member reads its part of every peer's input with one kernel copy per chunk of 512 KiB,
// where every member offered to (RANKFLOW_CROSS_MEMORY_DIRECTION=read, or auto where the agreed
// profile's TwophaseSegments::reads_from says so on two members), and stages otherwise. Each
// member's kernel reads are counted against what the members' settings promise, and every
// element is checked (i32 sums, exact). The ctest entries run it with every member reading, with
// readers beside a writer or a member whose copies are off, and with the intel-emr profile forced
// (auto: reads from 2 MiB); under UCX_TLS=tcp,self nobody is mapped, so nobody reads.
#include <gtest/gtest.h>

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "api/communicator_internal.h"
#include "collectives/coll_context.h"
#include "collectives/machine_profile.h"
#include "collectives/process_memory.h"
#include "rankflow/communicator.h"

namespace rankflow::test {
namespace {

constexpr size_t kReadChunkBytes = 512 * 1024;  // allreduce_twophase_read.cpp

class TwophaseReads : public ::testing::Test {
 protected:
  void SetUp() override { comm_ = Communicator::from_mpi(MPI_COMM_WORLD); }
  void TearDown() override { comm_.close(); }
  Communicator comm_ = Communicator::from_mpi(MPI_COMM_SELF);
};

std::string direction() {
  const char* value = std::getenv("RANKFLOW_CROSS_MEMORY_DIRECTION");
  return value != nullptr ? value : "auto";
}

// Whether this member offers to read in an out-of-place i32 call of `bytes` on `members`, once
// its copies have reached every peer.
bool offers(size_t bytes, int members, bool mapped) {
  if (!mapped || !coll::process_memory_usable() || direction() == "write") return false;
  if (direction() == "read") return true;
  const size_t from = coll::twophase_segments(coll::profile_from_environment()).reads_from;
  return members == 2 && bytes >= from;
}

int32_t input(size_t i, int call, int rank) {
  return static_cast<int32_t>((i * 3 + static_cast<size_t>(call)) % 991) * (rank + 1);
}

// Sizes whose 1 MiB segments (the tables' split) come out equal, so the parts are handed off: one
// segment (640 KiB, a part of one chunk on two members), 1, 2 (the intel-emr profile's first
// reading size) and 3 MiB (parts of 1 or 1.5 MiB: two or three chunks). Calls into a
// different recv each time, and an in-place call (which never reads) between.
TEST_F(TwophaseReads, EachMemberReadsItsPartOfEveryInputWhereAllOffer) {
  const int p = comm_.size(), me = comm_.rank();
  if (p < 2) GTEST_SKIP() << "two members or more";
  const bool mapped = api::maps_peers(comm_);
  const int32_t ranks = p * (p + 1) / 2;
  // A first call hands parts off with kernel writes, so every member's copies have reached its
  // peers (a member offers only then).
  {
    std::vector<int32_t> a(size_t{1} << 17, 1), b(size_t{1} << 17);
    comm_.allreduce(a.data(), b.data(), a.size(), DType::kI32, ReduceOp::kSum, "twophase");
  }
  for (const size_t bytes :
       {size_t{640} << 10, size_t{1} << 20, size_t{2} << 20, size_t{3} << 20}) {
    const size_t count = bytes / 4;
    int mine = offers(bytes, p, mapped) ? 1 : 0, everyone = 0;
    MPI_Allreduce(&mine, &everyone, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    const size_t part =
        coll::partition(count, static_cast<size_t>(p), static_cast<size_t>(me)).count;
    const uint64_t chunks = (part * 4 + kReadChunkBytes - 1) / kReadChunkBytes;
    std::vector<int32_t> a(count), b(count), c(count);
    for (int call = 0; call < 3; ++call) {
      const bool in_place = call == 1;
      int32_t* recv = in_place ? a.data() : call == 0 ? b.data() : c.data();
      for (size_t i = 0; i < count; ++i)
        a[i] = input(i, call, me);
      if (!in_place) std::fill(recv, recv + count, -1);
      const uint64_t before = coll::process_memory_reads();
      comm_.allreduce(a.data(), recv, count, DType::kI32, ReduceOp::kSum, "twophase");
      const uint64_t reads = coll::process_memory_reads() - before;
      const uint64_t expected =
          everyone == 1 && !in_place ? chunks * static_cast<uint64_t>(p - 1) : 0;
      EXPECT_EQ(reads, expected) << "rank " << me << ", " << bytes << " bytes, call " << call
                                 << (in_place ? " (in place)" : "") << ", direction " << direction()
                                 << (everyone == 1 ? ", every member offers" : "");
      size_t wrong = 0, first_wrong = count;
      for (size_t i = 0; i < count; ++i) {
        if (recv[i] != static_cast<int32_t>((i * 3 + static_cast<size_t>(call)) % 991) * ranks &&
            wrong++ == 0)
          first_wrong = i;
      }
      EXPECT_EQ(wrong, 0u) << bytes << " bytes, call " << call << ": first wrong element "
                           << first_wrong;
    }
  }
}

// f16 accumulates in f32 (a wider accumulator), so it never reads; its results stay right.
TEST_F(TwophaseReads, WiderAccumulatorsStageInstead) {
  const int p = comm_.size();
  if (p < 2) GTEST_SKIP() << "two members or more";
  const size_t count = size_t{1} << 20;                 // 2 MiB of f16
  std::vector<uint16_t> a(count, 0x3c00), b(count, 0);  // 1.0
  const uint64_t before = coll::process_memory_reads();
  comm_.allreduce(a.data(), b.data(), count, DType::kF16, ReduceOp::kSum, "twophase");
  EXPECT_EQ(coll::process_memory_reads() - before, 0u);
  const uint16_t want = p == 2 ? 0x4000 : p == 3 ? 0x4200 : p == 4 ? 0x4400 : 0x4500;
  size_t wrong = 0;
  for (const uint16_t v : b)
    wrong += v != want ? 1 : 0;
  EXPECT_EQ(wrong, 0u);
}

}  // namespace
}  // namespace rankflow::test
