// CollectiveBuffers: the fixture of the collective tests that run on both kinds of memory, the
// caller's own (plain std::vector) and symmetric (Communicator::alloc), as the test parameter
// says (true: symmetric), on a communicator over MPI_COMM_WORLD.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "mpi_test_main.h"
#include "rankflow/communicator.h"

namespace rankflow::test {

class CollectiveBuffers : public ::testing::TestWithParam<bool> {  // symmetric buffers?
 protected:
  void SetUp() override { comm_ = Communicator::from_mpi(MPI_COMM_WORLD); }
  void TearDown() override {
    arena_ = SymmetricBuffer();
    comm_.close();
  }
  // Two buffers of `bytes` each: user memory, or one symmetric allocation.
  std::pair<int32_t*, int32_t*> buffers(size_t bytes) {
    if (!GetParam()) {
      user_a_.assign(bytes / 4 + 1, 0);
      user_b_.assign(bytes / 4 + 1, 0);
      return {user_a_.data(), user_b_.data()};
    }
    if (arena_.bytes() < 2 * bytes) arena_ = comm_.alloc(2 * bytes + 64);
    auto* base = static_cast<int32_t*>(arena_.data());
    return {base, base + bytes / 4 + 8};
  }
  Communicator comm_ = Communicator::from_mpi(MPI_COMM_SELF);
  SymmetricBuffer arena_;
  std::vector<int32_t> user_a_, user_b_;
};

}  // namespace rankflow::test
