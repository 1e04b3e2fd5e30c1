// Machine profiles under mpirun (collectives/machine_profile.h): every member of a communicator
// uses the same profile, the one they all detected or were given with RANKFLOW_MACHINE, or none
// where they differ; a bad name fails Communicator::from_mpi on every member; and every profile's
// choices give the right results on whatever machine runs the test (RANKFLOW_MACHINE forces a
// profile measured elsewhere). RANKFLOW_TEST_EXPECT_PROFILE, where set, is the profile the ctest
// line expects the members to agree on.
#include <gtest/gtest.h>

#include <mpi.h>

#include <algorithm>
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

// Where a collective's inputs and outputs live: `send` and `recv` hold members x count elements,
// `bcast` count.
struct Arrays {
  int32_t* send;
  int32_t* recv;
  int32_t* bcast;
};

// Blocking and non-blocking broadcast from each root, allgather, all_to_all, reduce_scatter and
// allreduce (out of place, then in place) of `count` i32 elements a block on `at`, checked
// element by element.
void check_collectives(const Communicator& comm, size_t count, const Arrays& at) {
  const int p = comm.size();
  const int me = comm.rank();
  const size_t total = count * static_cast<size_t>(p);
  for (int root = 0; root < p; ++root) {
    for (bool blocking : {true, false}) {
      for (size_t i = 0; i < count; ++i)
        at.bcast[i] = me == root ? value(root, i) : -1;
      if (blocking) {
        comm.broadcast(at.bcast, count, DType::kI32, root);
      } else {
        comm.ibroadcast(at.bcast, count, DType::kI32, root).wait();
      }
      size_t wrong = 0;
      for (size_t i = 0; i < count; ++i)
        wrong += at.bcast[i] != value(root, i);
      EXPECT_EQ(wrong, 0U) << "broadcast from " << root << (blocking ? "" : ", non-blocking");
    }
  }
  auto fill_send = [&] {
    for (size_t i = 0; i < total; ++i)
      at.send[i] = value(me, i);
  };
  fill_send();
  comm.allgather(at.send, at.recv, count, DType::kI32);
  size_t wrong = 0;
  for (int r = 0; r < p; ++r) {
    for (size_t i = 0; i < count; ++i)
      wrong += at.recv[static_cast<size_t>(r) * count + i] != value(r, i);
  }
  EXPECT_EQ(wrong, 0U) << "allgather";
  comm.all_to_all(at.send, at.recv, count, DType::kI32);
  wrong = 0;
  for (int r = 0; r < p; ++r) {
    for (size_t i = 0; i < count; ++i)
      wrong += at.recv[static_cast<size_t>(r) * count + i] !=
               value(r, static_cast<size_t>(me) * count + i);
  }
  EXPECT_EQ(wrong, 0U) << "all_to_all";
  // reduce_scatter of i32 sums: member me gets block me summed over every member.
  comm.reduce_scatter(at.send, at.recv, count, DType::kI32, ReduceOp::kSum);
  wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    int32_t want = 0;
    for (int r = 0; r < p; ++r)
      want += value(r, static_cast<size_t>(me) * count + i);
    wrong += at.recv[i] != want;
  }
  EXPECT_EQ(wrong, 0U) << "reduce_scatter";
  for (bool in_place : {false, true}) {
    int32_t* out = in_place ? at.send : at.recv;
    comm.allreduce(at.send, out, count, DType::kI32, ReduceOp::kSum);
    wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      int32_t want = 0;
      for (int r = 0; r < p; ++r)
        want += value(r, i);
      wrong += out[i] != want;
    }
    EXPECT_EQ(wrong, 0U) << "allreduce" << (in_place ? ", in place" : "");
    fill_send();
  }
}

// Every size the profiles' choices for `buffers` cover (each range's ends and one inside, whole
// i32 elements).
std::vector<size_t> choice_sizes(coll::Buffers buffers) {
  std::vector<size_t> sizes;
  for (const coll::MachineProfile& profile : coll::machine_profiles()) {
    for (const coll::MachineChoice& c : profile.choices) {
      if (c.buffers != buffers) continue;
      const coll::Limits& l = c.limits;
      for (size_t bytes : {l.min_bytes, (l.min_bytes + l.max_bytes) / 2, l.max_bytes})
        sizes.push_back((bytes + 3) / 4 * 4);  // inside the range: 4097 -> 4100
    }
  }
  return sizes;
}

// Every profile's choices on plain buffers, as the profile this communicator uses chooses them.
TEST(MachineProfileMpi, ProfileChoicesGiveTheRightResults) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  for (size_t bytes : choice_sizes(coll::Buffers::kPlain)) {
    SCOPED_TRACE(std::to_string(bytes) + " bytes, plain, profile " +
                 std::string(comm.machine_profile()));
    const size_t count = bytes / 4;
    std::vector<int32_t> send(count * static_cast<size_t>(comm.size())), recv(send.size()),
        bcast(count);
    check_collectives(comm, count, {send.data(), recv.data(), bcast.data()});
  }
  comm.close();
}

// Every profile's choices on symmetric buffers (the Zen 5's pushes at 2-8 KiB), on comm.alloc
// memory and on registered arrays, which run the same algorithms where the members map each
// other (else they are staged, and the plain rules choose).
TEST(MachineProfileMpi, SymmetricChoicesGiveTheRightResultsOnAllocatedAndRegisteredMemory) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  const std::vector<size_t> sizes = choice_sizes(coll::Buffers::kSymmetric);
  ASSERT_FALSE(sizes.empty()) << "no profile chooses for symmetric buffers";
  size_t largest = 0;
  for (size_t bytes : sizes)
    largest = std::max(largest, bytes);
  const size_t most = largest / 4 * static_cast<size_t>(comm.size());
  SymmetricBuffer send = comm.alloc(most * 4), recv = comm.alloc(most * 4),
                  bcast = comm.alloc(largest);
  std::vector<int32_t> own_send(most), own_recv(most), own_bcast(largest / 4);
  RegisteredBuffer rs = comm.register_buffer(own_send.data(), most * 4);
  RegisteredBuffer rr = comm.register_buffer(own_recv.data(), most * 4);
  RegisteredBuffer rb = comm.register_buffer(own_bcast.data(), largest);
  const Arrays allocated{send.as<int32_t>().data(), recv.as<int32_t>().data(),
                         bcast.as<int32_t>().data()};
  const Arrays registered{own_send.data(), own_recv.data(), own_bcast.data()};
  for (size_t bytes : sizes) {
    const std::string profile(comm.machine_profile());
    {
      SCOPED_TRACE(std::to_string(bytes) + " bytes, comm.alloc, profile " + profile);
      check_collectives(comm, bytes / 4, allocated);
    }
    SCOPED_TRACE(std::to_string(bytes) + " bytes, registered, profile " + profile);
    check_collectives(comm, bytes / 4, registered);
  }
  comm.deregister(rs);
  comm.deregister(rr);
  comm.deregister(rb);
  comm.close();
}

}  // namespace
}  // namespace rankflow::test
