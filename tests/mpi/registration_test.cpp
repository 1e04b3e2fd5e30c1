// Communicator::register_buffer and deregister (issue 13): collectives on registered plain
// arrays give what they give on any plain array, with the program's own MPI calls between them;
// registration makes the staging window large enough once, so no collective on registered memory
// grows it; bad registrations fail on every member alike, naming the members and why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <mpi.h>

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

TEST(Registration, PreparesTheStagingWindowSoNoCollectiveOnItGrowsIt) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  // Members register different sizes: the window is made for the largest.
  const size_t bytes = (size_t{5} << 20) + static_cast<size_t>(world_rank()) * 4096;
  const size_t largest = (size_t{5} << 20) + static_cast<size_t>(comm.size() - 1) * 4096;
  std::vector<float> a(bytes / sizeof(float), 1.0f), b(a.size());
  const size_t before = api::staging_bytes(comm);
  ASSERT_LT(before, largest) << "the test needs a registration larger than the first window";
  RegisteredBuffer ra = comm.register_buffer(a.data(), bytes);
  RegisteredBuffer rb = comm.register_buffer(b.data(), bytes);
  const size_t prepared = api::staging_bytes(comm);
  EXPECT_GE(prepared, largest);
  const size_t count = (size_t{5} << 20) / sizeof(float);
  comm.allreduce(a.data(), b.data(), count, DType::kF32, ReduceOp::kSum);
  EXPECT_EQ(b[count - 1], static_cast<float>(comm.size()));
  EXPECT_EQ(api::staging_bytes(comm), prepared) << "a collective on registered memory grew it";
  comm.deregister(ra);
  comm.deregister(rb);
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
