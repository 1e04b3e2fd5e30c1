// What a communicator says it chose (api::last_chosen_algorithm, the `ran` column of
// rankflow-bench): nothing before its first collective; the named allreduce where the caller
// names one; the override variable's algorithm where one is forced (RANKFLOW_BROADCAST); and
// otherwise an entry of the collective's own table.
#include <gtest/gtest.h>

#include <mpi.h>

#include <string>
#include <vector>

#include "api/communicator_internal.h"
#include "collectives/registry.h"
#include "forced_algorithm.h"
#include "rankflow/communicator.h"

namespace rankflow::test {
namespace {

bool is_entry_of(const std::string& label, const char* collective, auto names) {
  for (const auto& entry : names)
    if (label == std::string(collective) + "(" + std::string(entry.name) + ")") return true;
  return false;
}

TEST(ChosenAlgorithm, NamesTheAlgorithmTheLatestCallRan) {
  Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
  EXPECT_STREQ(api::last_chosen_algorithm(comm), "");
  std::vector<float> a(4096, 1.0f), b(4096);
  comm.allreduce(a.data(), b.data(), a.size(), DType::kF32, ReduceOp::kSum, "ring");
  EXPECT_STREQ(api::last_chosen_algorithm(comm), "allreduce(ring)");
  comm.allreduce(a.data(), b.data(), a.size(), DType::kF32, ReduceOp::kSum, "twophase");
  EXPECT_STREQ(api::last_chosen_algorithm(comm), "allreduce(twophase)");
  comm.allreduce(a.data(), b.data(), a.size(), DType::kF32, ReduceOp::kSum);
  const std::string chosen = api::last_chosen_algorithm(comm);
  EXPECT_TRUE(is_entry_of(chosen, "allreduce", coll::allreduce_table().algorithms())) << chosen;
  comm.broadcast(a.data(), a.size(), DType::kF32, 0);
  const std::string broadcast = api::last_chosen_algorithm(comm);
  EXPECT_TRUE(is_entry_of(broadcast, "broadcast", coll::broadcast_table().algorithms()))
      << broadcast;
  comm.close();
}

TEST(ChosenAlgorithm, NamesTheForcedAlgorithm) {
  int members = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &members);
  if (members < 2) GTEST_SKIP() << "two members or more";
  Communicator comm = forced("RANKFLOW_BROADCAST", "staged");
  std::vector<int32_t> data(1024, comm.rank() == 0 ? 7 : 0);
  comm.broadcast(data.data(), data.size(), DType::kI32, 0);
  EXPECT_STREQ(api::last_chosen_algorithm(comm), "broadcast(staged)");
  EXPECT_EQ(data[1023], 7);
  comm.close();
}

}  // namespace
}  // namespace rankflow::test
