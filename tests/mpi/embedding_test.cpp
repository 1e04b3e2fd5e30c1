// An MPI program that initialises MPI itself and embeds rankflow's transport: rankflow must not
// initialise or finalise MPI, must leave it usable after its own teardown, and must start again
// while MPI is still up. Exits non-zero on any violation.
#include <mpi.h>

#include <cstdio>

#include "transport/context.h"
#include "transport/team_state.h"

namespace {

int failures = 0;

void expect(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "embedding test: %s\n", what);
    ++failures;
  }
}

void use_rankflow(int round) {
  auto context = rankflow::transport::Context::acquire();
  expect(!context->mpi_owned_by_rankflow(), "rankflow claimed an MPI the program initialised");
  rankflow::Team team =
      rankflow::transport::create_team(context, MPI_COMM_WORLD, {{"x", 8}}, "embed");
  const uint64_t value = 100 + static_cast<uint64_t>(round);
  team.put((team.rank() + 1) % team.size(), team.offset("x"), &value, sizeof(value));
  team.barrier();
  expect(team.local_as<uint64_t>("x")[0] == value, "put through the embedded team was lost");
  team.close();
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  use_rankflow(1);
  int finalized = 1;
  MPI_Finalized(&finalized);
  expect(finalized == 0, "rankflow finalised MPI that the program owns");
  int one = 1, sum = 0, size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  expect(sum == size, "MPI is unusable after rankflow's teardown");
  use_rankflow(2);  // a second start while MPI is still up
  int any_failed = 0;
  MPI_Allreduce(&failures, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0 && any_failed == 0) std::printf("embedding test passed\n");
  MPI_Finalize();
  return any_failed;
}
