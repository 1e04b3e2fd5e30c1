// Teams: a window over a subset of ranks, named buffers at identical offsets, and barriers that
// really synchronise (10,000 in a row), and a close that lands every put before any member lets
// go of its window.
#include <gtest/gtest.h>

#include <unistd.h>

#include <span>
#include <vector>

#include "mpi_test_main.h"
#include "rankflow/error.h"

namespace rankflow::test {
namespace {

TEST(TeamTest, WindowOverASubsetOfRanks) {
  const int world = context().world_rank();
  MPI_Comm evens = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, world % 2 == 0 ? 0 : MPI_UNDEFINED, world, &evens);
  if (evens != MPI_COMM_NULL) {
    Team team = transport::create_team(shared_context(), evens, {{"inbox", 64}}, "evens");
    const int n = team.size();
    EXPECT_EQ(n, (context().world_size() + 1) / 2);
    EXPECT_EQ(team.rank(), world / 2);
    const int right = (team.rank() + 1) % n, left = (team.rank() + n - 1) % n;
    EXPECT_THROW(team.put(n, team.offset("inbox"), &world, sizeof(world)), InvalidArgument);
    team.put(right, team.offset("inbox"), &world, sizeof(world));
    team.barrier();
    EXPECT_EQ(team.local_as<int>("inbox")[0], 2 * left) << "world rank of the left even member";
    EXPECT_EQ(transport::TeamState::of(team)->window->world_rank_of(left), 2 * left);
    team.barrier();
    team.close();
    MPI_Comm_free(&evens);
  }
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  context().mpi_wait(request, "end of subset test");
}

TEST(TeamTest, NamedBuffersSitAtTheSameOffsetOnEveryMember) {
  Team team = transport::create_team(shared_context(), MPI_COMM_WORLD,
                                     {{"a", 3}, {"b", 100, 256}, {"c", 8, 8}}, "named");
  EXPECT_EQ(team.offset("b") % 256, 0u);
  EXPECT_GE(team.offset("b"), team.offset("a") + 3);
  EXPECT_EQ(team.bytes("b"), 100u);
  // Every member writes its offsets into the right neighbour's "c"; they must match.
  const uint64_t mine = team.offset("a") ^ (team.offset("b") << 20) ^ (team.offset("c") << 40);
  const int right = (team.rank() + 1) % team.size();
  team.put(right, team.offset("c"), &mine, sizeof(mine));
  team.barrier();
  EXPECT_EQ(team.local_as<uint64_t>("c")[0], mine);
  team.barrier();
  team.close();
}

// Team::process_of names a peer's process where its window is mapped here (what the
// collectives' cross-memory copies rely on: they write only into that process), and 0 where it
// is not (UCX_TLS=tcp,self, as between hosts). Checked against the pids the members gather.
TEST(TeamTest, ProcessOfIsThePeersPidWhereMapped) {
  Team team = transport::create_team(shared_context(), MPI_COMM_WORLD, {{"a", 64}}, "pids");
  const int64_t mine = static_cast<int64_t>(getpid());
  std::vector<int64_t> pids(static_cast<size_t>(team.size()));
  MPI_Allgather(&mine, 1, MPI_INT64_T, pids.data(), 1, MPI_INT64_T, MPI_COMM_WORLD);
  for (int p = 0; p < team.size(); ++p) {
    if (p == team.rank()) continue;
    const bool mapped = team.remote_ptr(p, team.offset("a")) != nullptr;
    EXPECT_EQ(team.process_of(p), mapped ? pids[static_cast<size_t>(p)] : 0) << "peer " << p;
  }
  EXPECT_EQ(team.process_of(team.size()), 0);
  team.barrier();
  team.close();
}

// Close is the last call into UCX a window gets: every put issued to it must have landed when
// close returns on the target, even when the target sat in the program's own MPI calls (no UCX
// progress) while the puts were sent. Over UCX_TLS=tcp,self a put lands only while its target
// progresses, so a close that skipped its flush would leave these bytes in flight, to land
// later in unmapped memory.
TEST(TeamTest, CloseLandsEveryPutBeforeAnyMemberLetsGo) {
  constexpr size_t kWords = 4096;
  Team team =
      transport::create_team(shared_context(), MPI_COMM_WORLD, {{"in", kWords * 8}}, "close");
  const int me = team.rank(), n = team.size();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  std::vector<uint64_t> words(kWords);
  for (size_t i = 0; i < kWords; ++i)
    words[i] = (uint64_t(me) << 32) | i;
  for (size_t i = 0; i < kWords; i += 64)
    team.put(right, team.offset("in") + i * 8, &words[i], 64 * 8);
  MPI_Barrier(MPI_COMM_WORLD);  // the program's own MPI call: no UCX progress here
  const std::span<uint64_t> in = team.local_as<uint64_t>("in");
  team.close();
  for (size_t i = 0; i < kWords; ++i)
    ASSERT_EQ(in[i], (uint64_t(left) << 32) | i) << "word " << i << " from member " << left;
}

TEST(TeamTest, TenThousandBarriersSynchronise) {
  Team team = transport::create_team(shared_context(), MPI_COMM_WORLD, {{"seen", 8 * 64}}, "bar");
  const int me = team.rank(), n = team.size();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  const size_t from_left = team.offset("seen");
  for (uint64_t i = 1; i <= 10000; ++i) {
    // Store i into the right neighbour, barrier, and the left neighbour's i must be here.
    team.put(right, from_left, &i, sizeof(i));
    team.barrier();
    ASSERT_EQ(team.local_as<uint64_t>("seen")[0], i)
        << "barrier " << i << " let rank " << me << " through before rank " << left << " arrived";
    team.barrier();  // nobody overwrites before everyone has checked
  }
  team.close();
}

}  // namespace
}  // namespace rankflow::test
