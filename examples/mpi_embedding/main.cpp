// mpi_embedding: an ordinary MPI program that uses rankflow's collectives as a library.
//
// It initialises and finalises MPI itself, builds a rankflow Communicator on MPI_COMM_WORLD and
// on a split communicator (even and odd ranks), and checks every result (on plain, symmetric
// and registered buffers) against MPI's own
// collectives on the same data; it also makes its own MPI call right after each of 50
// broadcasts. Exit status 0 means every check passed.
//
//   mpirun -n 4 ./mpi_embedding
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "rankflow/communicator.h"
#include "rankflow/error.h"

namespace {

int check(bool ok, int rank, const char* what) {
  if (!ok) std::fprintf(stderr, "rank %d: %s differs from MPI\n", rank, what);
  return ok ? 0 : 1;
}

// allreduce (plain buffers and symmetric memory) and allgather on `comm`, against MPI.
int exercise(const rankflow::Communicator& comm, const char* name) {
  const int n = 1 << 16;
  std::vector<float> in(n), out(n), expected(n);
  for (int i = 0; i < n; ++i)
    in[i] = static_cast<float>((i % 100) + comm.rank());
  comm.allreduce(in.data(), out.data(), n, rankflow::DType::kF32, rankflow::ReduceOp::kSum);
  MPI_Allreduce(in.data(), expected.data(), n, MPI_FLOAT, MPI_SUM, comm.mpi_comm());
  int failures = check(out == expected, comm.rank(), "allreduce on plain buffers");

  rankflow::SymmetricBuffer buffer = comm.alloc(n * sizeof(float));  // zero-copy
  std::copy(in.begin(), in.end(), buffer.as<float>().begin());
  comm.allreduce(buffer.data(), buffer.data(), n, rankflow::DType::kF32, rankflow::ReduceOp::kSum);
  failures += check(std::equal(expected.begin(), expected.end(), buffer.as<float>().begin()),
                    comm.rank(), "in-place allreduce on symmetric memory");

  // The same arrays registered, as a code that reuses them every iteration does: on one host
  // their pages are shared with the other ranks here, and the allreduce runs on them in place.
  rankflow::RegisteredBuffer rin = comm.register_buffer(in.data(), n * sizeof(float));
  rankflow::RegisteredBuffer rout = comm.register_buffer(out.data(), n * sizeof(float));
  std::fill(out.begin(), out.end(), 0.0f);
  comm.allreduce(in.data(), out.data(), n, rankflow::DType::kF32, rankflow::ReduceOp::kSum);
  failures += check(out == expected, comm.rank(), "allreduce on registered buffers");
  comm.deregister(rin);
  comm.deregister(rout);
  failures += check(out == expected, comm.rank(), "registered buffers keep their contents");

  std::vector<int> gathered(comm.size()), mpi_gathered(comm.size());
  const int mine = 100 + comm.rank();
  comm.allgather(&mine, gathered.data(), 1, rankflow::DType::kI32);
  MPI_Allgather(&mine, 1, MPI_INT, mpi_gathered.data(), 1, MPI_INT, comm.mpi_comm());
  failures += check(gathered == mpi_gathered, comm.rank(), "allgather");

  // A broadcast from every root in turn, each followed at once by the program's own MPI call.
  // rankflow's progress rule makes this safe on every transport, between hosts too.
  bool broadcasts_ok = true;
  for (int it = 0; it < 50; ++it) {
    const int root = it % comm.size();
    std::vector<double> b(5, comm.rank() == root ? double(it) : -1.0);
    comm.broadcast(b.data(), b.size(), rankflow::DType::kF64, root);
    double local = b[0], sum = 0;
    MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, comm.mpi_comm());
    broadcasts_ok = broadcasts_ok && sum == double(it) * comm.size();
  }
  failures += check(broadcasts_ok, comm.rank(), "broadcast followed by MPI_Allreduce");
  if (comm.rank() == 0) {
    std::printf(
        "%-6s %d ranks: allreduce of %d floats, symmetric and registered allreduce, allgather, "
        "50 broadcasts each followed by MPI_Allreduce: %s\n",
        name, comm.size(), n, failures ? "MISMATCH" : "match MPI");
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);  // the program owns MPI; rankflow neither initialises nor finalises it
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int failures = 0;
  try {
    rankflow::Communicator world = rankflow::Communicator::from_mpi(MPI_COMM_WORLD);
    failures += exercise(world, "world");
    rankflow::Communicator half = world.split(rank % 2, rank);
    failures += exercise(half, rank % 2 ? "odd" : "even");
  } catch (const rankflow::Error& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    failures += 1;
  }
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf(total == 0 ? "mpi_embedding: all checks passed\n" : "mpi_embedding: FAILED\n");
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
