// argument_check: finding a collective whose members disagree, with RANKFLOW_CHECK_ARGS=on.
//
// An MPI program with a classic bug: the last rank computes its element count differently from
// the others (here, on purpose). Without a check, rankflow (like MPI) trusts every member's
// arguments, and such a call may hang until a Timeout or return wrong data without an error.
// With RANKFLOW_CHECK_ARGS=on every member compares its arguments with the others' before the
// call, and every member gets the same rankflow::InvalidArgument naming what differs. Nobody
// ran the call, so the communicator stays usable: the program fixes the count and goes on.
// Exit status 0 means the error came on every rank and the corrected call was right.
//
//   mpirun -n 3 -x RANKFLOW_CHECK_ARGS=on ./argument_check
// (the program sets the variable itself where the launch did not).
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "rankflow/communicator.h"
#include "rankflow/error.h"

namespace {

// The bug: the last rank rounds its share of the work up to a multiple of 16.
size_t elements_on(int rank, int size) {
  const size_t count = 1000;
  return rank == size - 1 ? (count + 15) / 16 * 16 : count;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  // As if launched with `mpirun -x RANKFLOW_CHECK_ARGS=on`: read when the communicator is made.
  setenv("RANKFLOW_CHECK_ARGS", "on", 0);
  int failures = 0;
  {
    const rankflow::Communicator comm = rankflow::Communicator::from_mpi(MPI_COMM_WORLD);
    const int rank = comm.rank(), size = comm.size();
    std::vector<float> in(1024, static_cast<float>(rank + 1)), out(1024, 0.0f);

    bool caught = false;
    try {
      comm.allreduce(in.data(), out.data(), elements_on(rank, size), rankflow::DType::kF32,
                     rankflow::ReduceOp::kSum);
    } catch (const rankflow::InvalidArgument& e) {
      caught = true;
      if (rank == 0) std::printf("every rank got: %s\n", e.what());
    }
    if (!caught) {
      std::fprintf(stderr, "rank %d: the mismatched allreduce was not caught\n", rank);
      ++failures;
    }

    // The same call with the count every rank agrees on.
    comm.allreduce(in.data(), out.data(), 1000, rankflow::DType::kF32, rankflow::ReduceOp::kSum);
    const float expected = static_cast<float>(size * (size + 1) / 2);
    for (size_t i = 0; i < 1000; ++i) {
      if (out[i] != expected) {
        std::fprintf(stderr, "rank %d: element %zu is %g, not %g\n", rank, i, out[i], expected);
        ++failures;
        break;
      }
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0 && failures == 0)
    std::printf(
        "argument_check: the mismatch was caught on every rank, the fixed call was right\n");
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
