// Communicator::register_buffer and deregister (issue 13): collectives on registered plain
// arrays give what they give on any plain array, with the program's own MPI calls between them;
// on one host registered memory is shared with the peers (its pages, neighbours included, keep
// their contents) and collectives run on it in place; memory that cannot be shared is staged on
// every member alike; bad registrations fail on every member alike, naming the members and why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "api/communicator_internal.h"
#include "rankflow/communicator.h"
#include "rankflow/error.h"

namespace rankflow {
namespace {

using ::testing::HasSubstr;

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// The message of the InvalidArgument `call` throws (fails the test if it throws none).
template <typename Call>
std::string invalid_argument(Call&& call) {
  try {
    call();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InvalidArgument";
  return {};
}

TEST(Registration, CollectivesOnRegisteredArraysAreRightBetweenTheProgramsOwnMpiCalls) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  const int p = comm.size(), r = comm.rank();
  const size_t n = (size_t{3} << 20) / sizeof(float) + 7;  // 3 MiB: above the first staging
  std::vector<float> send(n * static_cast<size_t>(p)), recv(n * static_cast<size_t>(p));
  RegisteredBuffer rs = comm.register_buffer(send.data(), send.size() * sizeof(float));
  RegisteredBuffer rr = comm.register_buffer(recv.data(), recv.size() * sizeof(float));
  EXPECT_EQ(rs.data(), send.data());
  EXPECT_EQ(rr.bytes(), recv.size() * sizeof(float));
  for (size_t i = 0; i < send.size(); ++i)
    send[i] = static_cast<float>((r + 1) * static_cast<int>(i % 5));
  const float ranks = static_cast<float>(p * (p + 1) / 2);

  comm.allreduce(send.data(), recv.data(), n, DType::kF32, ReduceOp::kSum);
  MPI_Barrier(MPI_COMM_WORLD);
  for (size_t i = 0; i < n; i += 997)
    ASSERT_EQ(recv[i], ranks * static_cast<float>(i % 5)) << "allreduce, element " << i;

  comm.allgather(send.data(), recv.data(), n, DType::kF32);
  MPI_Barrier(MPI_COMM_WORLD);
  for (int m = 0; m < p; ++m) {
    for (size_t i = 0; i < n; i += 997) {
      ASSERT_EQ(recv[static_cast<size_t>(m) * n + i], static_cast<float>((m + 1) * (i % 5)))
          << "allgather, block " << m << " element " << i;
    }
  }

  comm.all_to_all(send.data(), recv.data(), n, DType::kF32);
  float total = 0;
  MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  for (int m = 0; m < p; ++m) {
    const size_t at = static_cast<size_t>(r) * n;  // member m's block for this member
    for (size_t i = 0; i < n; i += 997) {
      ASSERT_EQ(recv[static_cast<size_t>(m) * n + i],
                static_cast<float>((m + 1) * static_cast<int>((at + i) % 5)))
          << "all_to_all, from member " << m << " element " << i;
    }
  }

  if (r == 0) std::fill(send.begin(), send.begin() + static_cast<ptrdiff_t>(n), 3.5f);
  comm.broadcast(send.data(), n, DType::kF32, 0);
  MPI_Barrier(MPI_COMM_WORLD);
  for (size_t i = 0; i < n; i += 997)
    ASSERT_EQ(send[i], 3.5f) << "broadcast, element " << i;

  comm.deregister(rs);
  comm.deregister(rr);
  EXPECT_FALSE(rs);
}

// The mapping of `address` in /proc/self/maps: its permissions and path, e.g. "rw-p" or
// "rw-s /memfd:rankflow-shared-pages (deleted)".
std::string mapping_of(const void* address) {
  std::ifstream maps("/proc/self/maps");
  const auto at = reinterpret_cast<uintptr_t>(address);
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream fields(line);
    std::string range, perms, offset, device, inode, path;
    fields >> range >> perms >> offset >> device >> inode;
    std::getline(fields >> std::ws, path);
    const uintptr_t from = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
    const uintptr_t to = std::stoull(range.substr(range.find('-') + 1), nullptr, 16);
    if (at >= from && at < to) return path.empty() ? perms : perms + " " + path;
  }
  return "unmapped";
}

bool shared(const void* address) {
  return mapping_of(address).find("rankflow-shared-pages") != std::string::npos;
}

// On one host a registered buffer is shared with the peers and collectives run on it in place:
// nothing is staged and the staging window never grows. Members register different sizes.
TEST(Registration, CollectivesOnRegisteredMemoryRunInPlace) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  const size_t bytes = (size_t{5} << 20) + static_cast<size_t>(world_rank()) * 4096;
  std::vector<float> a(bytes / sizeof(float), 1.0f), b(a.size());
  ASSERT_LT(api::staging_bytes(comm), bytes) << "the test needs a registration larger than it";
  RegisteredBuffer ra = comm.register_buffer(a.data(), bytes);
  RegisteredBuffer rb = comm.register_buffer(b.data(), bytes);
  const size_t staging = api::staging_bytes(comm);  // grown at registration where staged
  EXPECT_EQ(shared(a.data()), api::maps_peers(comm)) << mapping_of(a.data());
  EXPECT_EQ(shared(b.data() + b.size() - 1), api::maps_peers(comm));
  const size_t staged = api::staged_collectives(comm);
  const size_t count = (size_t{5} << 20) / sizeof(float);
  // Over TCP (no shared memory) registered buffers stay staged: that measured faster.
  EXPECT_EQ(api::runs_in_place(comm, a.data(), count * 4, b.data(), count * 4),
            api::maps_peers(comm));
  const float p = static_cast<float>(comm.size());
  for (int round = 0; round < 3; ++round) {
    // The caller's own stores between calls reach the peers: each round's input is new.
    const float value = static_cast<float>(round + 1) * (1.0f + static_cast<float>(comm.rank()));
    a[0] = value;
    a[count - 1] = value;
    comm.allreduce(a.data(), b.data(), count, DType::kF32, ReduceOp::kSum);
    const float expected = static_cast<float>(round + 1) * p * (p + 1) / 2;
    ASSERT_EQ(b[0], expected) << "round " << round;
    ASSERT_EQ(b[count - 1], expected) << "round " << round;
    ASSERT_EQ(b[count / 2], p) << "round " << round;
    MPI_Barrier(MPI_COMM_WORLD);  // the program's own MPI call between rankflow's
  }
  if (api::maps_peers(comm)) {
    EXPECT_EQ(api::staged_collectives(comm), staged) << "a collective on shared memory staged";
  }
  EXPECT_EQ(api::staging_bytes(comm), staging) << "a collective on registered memory grew it";
  comm.deregister(ra);
  comm.deregister(rb);
  EXPECT_FALSE(shared(a.data())) << mapping_of(a.data());
  EXPECT_FALSE(api::runs_in_place(comm, a.data(), count * 4, b.data(), count * 4));
  EXPECT_EQ(a[1], 1.0f);
  EXPECT_EQ(b[count - 1], 3 * p * (p + 1) / 2);
}

// Registration moves whole pages: the data around the buffer on its first and last page keeps
// its value through register and deregister, two buffers that share a page are both shared, and
// the page stays shared until the last of them is deregistered.
TEST(Registration, PagesSharedByTwoBuffersAndTheirNeighboursKeepTheirContents) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  const int p = comm.size(), r = comm.rank();
  const size_t n = 20000;  // floats: neither end on a page boundary
  std::vector<float> memory(3 * n + 64);
  for (size_t i = 0; i < memory.size(); ++i)
    memory[i] = static_cast<float>(i % 1000) + static_cast<float>(r);
  float* first = memory.data() + 7;  // [7, 7 + n) and [7 + n, 7 + 2n): one page holds both ends
  float* second = first + n;
  RegisteredBuffer one = comm.register_buffer(first, n * sizeof(float));
  RegisteredBuffer two = comm.register_buffer(second, n * sizeof(float));
  for (size_t i = 0; i < memory.size(); ++i) {
    ASSERT_EQ(memory[i], static_cast<float>(i % 1000) + static_cast<float>(r))
        << "element " << i << " changed at registration";
  }
  EXPECT_EQ(api::runs_in_place(comm, first, n * 4, second, n * 4), api::maps_peers(comm));
  comm.allreduce(first, second, n, DType::kF32, ReduceOp::kSum);
  const float ranks = static_cast<float>(p * (p - 1) / 2);
  for (size_t i = 0; i < n; ++i) {
    const float expected = static_cast<float>(p) * static_cast<float>((7 + i) % 1000) + ranks;
    ASSERT_EQ(second[i], expected) << "allreduce, element " << i;
  }
  memory[0] = -1.0f;  // neighbours on shared pages stay the program's own memory
  memory[7 + 2 * n] = -2.0f;
  comm.deregister(one);
  EXPECT_EQ(shared(second), api::maps_peers(comm)) << "the page still serves `two`";
  comm.allgather(second + n - 1, first, 1, DType::kF32);  // `two` still works; `one` is plain
  for (int m = 0; m < p; ++m)
    ASSERT_EQ(first[m], static_cast<float>(p) * static_cast<float>((7 + n - 1) % 1000) + ranks);
  comm.deregister(two);
  EXPECT_FALSE(shared(second)) << mapping_of(second);
  EXPECT_EQ(memory[0], -1.0f);
  EXPECT_EQ(memory[7 + 2 * n], -2.0f);
  EXPECT_EQ(memory[7 + 2 * n + 1],
            static_cast<float>((7 + 2 * n + 1) % 1000) + static_cast<float>(r));
}

// A buffer registered with two communicators: each deregisters its own, and the pages stay
// shared until both have; a communicator that closes with a live registration gives its pages
// back too.
TEST(Registration, OneBufferOnTwoCommunicatorsAndACommunicatorClosedWithALiveRegistration) {
  std::vector<double> v(100000, 2.0), out(v.size());
  Communicator first = Communicator::from_mpi(MPI_COMM_WORLD);
  RegisteredBuffer in_first = first.register_buffer(v.data(), v.size() * sizeof(double));
  {
    Communicator second = Communicator::from_mpi(MPI_COMM_WORLD);
    RegisteredBuffer in_second = second.register_buffer(v.data(), v.size() * sizeof(double));
    RegisteredBuffer out_second = second.register_buffer(out.data(), out.size() * sizeof(double));
    second.allreduce(v.data(), out.data(), v.size(), DType::kF64, ReduceOp::kSum);
    EXPECT_EQ(out.back(), 2.0 * second.size());
    first.deregister(in_first);
    EXPECT_EQ(shared(v.data()), api::maps_peers(second)) << "`second` still uses the pages";
    second.close();  // registrations still live
    EXPECT_FALSE(shared(v.data())) << mapping_of(v.data());
    EXPECT_FALSE(shared(out.data())) << mapping_of(out.data());
  }
  EXPECT_EQ(v.front(), 2.0);
  EXPECT_EQ(out.back(), 2.0 * first.size());
}

// Memory that cannot be shared (here member 0's stack; the others register heap arrays) stays
// staged on every member alike: the collectives give the same results.
TEST(Registration, MemoryThatCannotBeSharedOnOneMemberIsStagedOnEveryMember) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  float on_stack[4096];
  std::vector<float> on_heap(4096), out(4096);
  float* in = comm.rank() == 0 ? on_stack : on_heap.data();
  std::fill(in, in + 4096, 1.5f);
  RegisteredBuffer rs = comm.register_buffer(in, sizeof on_stack);
  RegisteredBuffer ro = comm.register_buffer(out.data(), out.size() * sizeof(float));
  comm.allreduce(in, out.data(), 4096, DType::kF32, ReduceOp::kSum);
  EXPECT_EQ(out[4095], 1.5f * static_cast<float>(comm.size()));
  EXPECT_FALSE(shared(in));
  EXPECT_FALSE(api::runs_in_place(comm, in, sizeof on_stack, out.data(), sizeof on_stack));
}

TEST(Registration, BadRegistrationsFailOnEveryMemberAlike) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  std::vector<char> memory(1 << 16);
  EXPECT_THAT(invalid_argument([&] { comm.register_buffer(nullptr, 64); }),
              HasSubstr("this member's buffer is a null pointer"));
  EXPECT_THAT(invalid_argument([&] { comm.register_buffer(memory.data(), 0); }),
              HasSubstr("this member's buffer is empty (0 bytes)"));

  RegisteredBuffer whole = comm.register_buffer(memory.data(), 4096);
  // Overlapping a live registration, on every member.
  const std::string overlap =
      invalid_argument([&] { comm.register_buffer(memory.data() + 4000, 200); });
  EXPECT_THAT(overlap, HasSubstr("which overlaps the registered buffer of 4096 bytes"));
  EXPECT_THAT(overlap, HasSubstr("made on none"));
  // On member 0 only: the others' buffers are good, and they fail too, naming member 0.
  char* mine = world_rank() == 0 ? memory.data() + 100 : memory.data() + 8192;
  const std::string one = invalid_argument([&] { comm.register_buffer(mine, 64); });
  EXPECT_THAT(one, HasSubstr("the registration failed on member(s) 0 of"));
  if (world_rank() != 0) {
    EXPECT_THAT(one, HasSubstr("this member's buffer is good"));
  }
  // Made on none: the members whose buffer was good kept nothing, so the same range registers
  // now on every member (a kept one would overlap it and fail).
  RegisteredBuffer good = comm.register_buffer(memory.data() + 8192, 64);
  EXPECT_TRUE(good);
  comm.deregister(good);
  // More than a staging window can hold (no memory is touched: the check comes first).
  EXPECT_THAT(invalid_argument([&] { comm.register_buffer(memory.data(), size_t{1} << 50); }),
              HasSubstr("more than a staging window can hold"));
  // Adjacent is not overlapping.
  RegisteredBuffer next = comm.register_buffer(memory.data() + 4096, 4096);

  comm.deregister(whole);
  EXPECT_THAT(invalid_argument([&] { comm.deregister(whole); }),
              HasSubstr("is already deregistered"));
  EXPECT_THAT(invalid_argument([&] { (void)whole.data(); }), HasSubstr("after deregister"));
  EXPECT_THAT(invalid_argument([&] { (void)whole.bytes(); }), HasSubstr("after deregister"));
  RegisteredBuffer empty;
  EXPECT_THAT(invalid_argument([&] { comm.deregister(empty); }), HasSubstr("empty"));
  // The range is free again once deregistered; the communicator is still in step.
  RegisteredBuffer again = comm.register_buffer(memory.data(), 4096);
  EXPECT_TRUE(again);
  comm.barrier();
}

}  // namespace
}  // namespace rankflow
