// Machine profiles under mpirun (collectives/machine_profile.h): every member of a communicator
// uses the same profile, the one they all detected or were given with RANKFLOW_MACHINE, or none
// where they differ; a bad name fails Communicator::from_mpi on every member; and every profile's
// choices give the right results on whatever machine runs the test (RANKFLOW_MACHINE forces a
// profile measured elsewhere). RANKFLOW_TEST_EXPECT_PROFILE, where set, is the profile the ctest
// line expects the members to agree on.
#include <gtest/gtest.h>

#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "api/communicator_internal.h"
#include "collectives/machine_profile.h"
#include "mpi_test_main.h"
#include "rankflow/communicator.h"
#include "rankflow/error.h"

namespace rankflow::test {
namespace {

// What this member would choose alone (RANKFLOW_MACHINE, else its CPU).
std::string_view own_choice() {
  return coll::profile_name(coll::profile_from_environment());
}

TEST(MachineProfileMpi, EveryMemberUsesTheSameProfile) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  const std::string mine(comm.machine_profile());
  // Every member's name, to compare with rank 0's.
  char name[32] = {};
  ASSERT_LT(mine.size(), sizeof(name));
  mine.copy(name, mine.size());
  std::vector<char> all(sizeof(name) * static_cast<size_t>(comm.size()));
  MPI_Allgather(name, sizeof(name), MPI_CHAR, all.data(), sizeof(name), MPI_CHAR, MPI_COMM_WORLD);
  for (int r = 0; r < comm.size(); ++r)
    EXPECT_EQ(std::string(all.data() + r * sizeof(name)), mine) << "member " << r;
  EXPECT_EQ(coll::profile_name(api::machine_rules(comm).profile), mine);
  if (const char* expected = std::getenv("RANKFLOW_TEST_EXPECT_PROFILE")) {
    EXPECT_EQ(mine, expected) << "this member alone would take " << own_choice();
  } else {
    EXPECT_EQ(mine, own_choice());  // one host, one kind of CPU
  }
  comm.close();
}

TEST(MachineProfileMpi, UnknownNameFailsEveryMember) {
  const char* before = std::getenv("RANKFLOW_MACHINE");
  const std::string saved = before ? before : "";
  ::setenv("RANKFLOW_MACHINE", "pentium", 1);
  try {
    Communicator::from_mpi(MPI_COMM_WORLD);
    ADD_FAILURE() << "from_mpi accepted RANKFLOW_MACHINE=pentium";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("RANKFLOW_MACHINE='pentium'"), std::string::npos)
        << e.what();
  }
  if (before) {
    ::setenv("RANKFLOW_MACHINE", saved.c_str(), 1);
  } else {
    ::unsetenv("RANKFLOW_MACHINE");
  }
  // Every member failed before anything collective: the world still works.
  MPI_Barrier(MPI_COMM_WORLD);
}

int32_t value(int rank, size_t i) {
  return static_cast<int32_t>(i * 7 + static_cast<size_t>(rank) * 1000 + 3);
}

// Every size some profile's choice covers (its ends and one inside, whole elements), on plain
// buffers, checked element by element: blocking and non-blocking broadcast from each root,
// allgather, all_to_all, reduce_scatter and allreduce, as the profile this communicator uses
// chooses them.
TEST(MachineProfileMpi, ProfileChoicesGiveTheRightResults) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  const int p = comm.size();
  const int me = comm.rank();
  std::vector<size_t> sizes;
  for (const coll::MachineProfile& profile : coll::machine_profiles()) {
    for (const coll::MachineChoice& c : profile.choices) {
      const coll::Limits& l = c.limits;
      for (size_t bytes : {l.min_bytes, (l.min_bytes + l.max_bytes) / 2, l.max_bytes})
        sizes.push_back((bytes + 3) / 4 * 4);  // inside the range: 4097 -> 4100
    }
  }
  for (size_t bytes : sizes) {
    const size_t count = bytes / 4;
    SCOPED_TRACE(std::to_string(bytes) + " bytes, profile " + std::string(comm.machine_profile()));
    for (int root = 0; root < p; ++root) {
      for (bool blocking : {true, false}) {
        std::vector<int32_t> buffer(count);
        for (size_t i = 0; i < count; ++i)
          buffer[i] = me == root ? value(root, i) : -1;
        if (blocking) {
          comm.broadcast(buffer.data(), count, DType::kI32, root);
        } else {
          comm.ibroadcast(buffer.data(), count, DType::kI32, root).wait();
        }
        size_t wrong = 0;
        for (size_t i = 0; i < count; ++i)
          wrong += buffer[i] != value(root, i);
        EXPECT_EQ(wrong, 0U) << "broadcast from " << root << (blocking ? "" : ", non-blocking");
      }
    }
    std::vector<int32_t> send(count * static_cast<size_t>(p)), recv(send.size());
    for (size_t i = 0; i < send.size(); ++i)
      send[i] = value(me, i);
    comm.allgather(send.data(), recv.data(), count, DType::kI32);
    size_t wrong = 0;
    for (int r = 0; r < p; ++r) {
      for (size_t i = 0; i < count; ++i)
        wrong += recv[static_cast<size_t>(r) * count + i] != value(r, i);
    }
    EXPECT_EQ(wrong, 0U) << "allgather";
    comm.all_to_all(send.data(), recv.data(), count, DType::kI32);
    wrong = 0;
    for (int r = 0; r < p; ++r) {
      for (size_t i = 0; i < count; ++i)
        wrong += recv[static_cast<size_t>(r) * count + i] !=
                 value(r, static_cast<size_t>(me) * count + i);
    }
    EXPECT_EQ(wrong, 0U) << "all_to_all";
    // reduce_scatter of i32 sums: member me gets block me summed over every member.
    comm.reduce_scatter(send.data(), recv.data(), count, DType::kI32, ReduceOp::kSum);
    wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      int32_t want = 0;
      for (int r = 0; r < p; ++r)
        want += value(r, static_cast<size_t>(me) * count + i);
      wrong += recv[i] != want;
    }
    EXPECT_EQ(wrong, 0U) << "reduce_scatter";
    comm.allreduce(send.data(), recv.data(), count, DType::kI32, ReduceOp::kSum);
    wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      int32_t want = 0;
      for (int r = 0; r < p; ++r)
        want += value(r, i);
      wrong += recv[i] != want;
    }
    EXPECT_EQ(wrong, 0U) << "allreduce";
  }
  comm.close();
}

}  // namespace
}  // namespace rankflow::test
