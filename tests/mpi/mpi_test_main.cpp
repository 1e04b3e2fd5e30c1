// main() for MPI tests: starts the transport once, runs every test on every rank, and exits
// non-zero if any rank failed.
#include "mpi_test_main.h"

#include "failure_printer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace rankflow::test {
namespace {
std::shared_ptr<transport::Context> g_context;
}  // namespace

transport::Context& context() {
  return *g_context;
}
std::shared_ptr<transport::Context> shared_context() {
  return g_context;
}

bool expect_direct_mapping() {
  const char* tls = std::getenv("UCX_TLS");
  return tls == nullptr || std::strstr(tls, "tcp") == nullptr;
}

void fill_pattern(void* data, size_t bytes, uint64_t seed) {
  auto* out = static_cast<uint8_t*>(data);
  for (size_t i = 0; i < bytes; ++i)
    out[i] = pattern_byte(seed, i);
}

long long first_mismatch(const void* data, size_t bytes, uint64_t seed) {
  const auto* in = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    if (in[i] != pattern_byte(seed, i)) return static_cast<long long>(i);
  }
  return -1;
}

}  // namespace rankflow::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto context = rankflow::transport::Context::acquire(&argc, &argv);
  rankflow::test::g_context = context;
  rankflow::test::print_only_failures_on(context->world_rank());
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = 0;
  MPI_Request request;
  MPI_Iallreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &request);
  context->mpi_wait(request, "final result reduction");
  if (failed) std::fprintf(stderr, "rank %d: tests FAILED\n", context->world_rank());
  const bool owned = context->mpi_owned_by_rankflow();
  rankflow::test::g_context.reset();
  context.reset();
  // rankflow initialised MPI here, so releasing the last Context must have finalised it.
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owned && !finalized) {
    std::fprintf(stderr, "MPI was not finalised when rankflow's Context was released\n");
    return 1;
  }
  return any_failed;
}
