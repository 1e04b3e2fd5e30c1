// Soak of library-mode collectives (issue 12): 100,000 small allreduces (4 B to 4 KiB, on the
// program's own arrays and on symmetric memory from comm.alloc, every result checked) in an MPI
// program that owns MPI. After a warm-up, every rank measures its resident memory, open
// descriptors and mapped shared-memory segments; growth of 5% or more, or anything left open,
// fails the job (exit code 1 on that rank).
//
//   mpirun -n 3 build/tests/soak_collectives [allreduces]
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "rankflow/communicator.h"
#include "rankflow/error.h"
#include "soak_figures.h"

namespace {

constexpr size_t kCounts[] = {1, 16, 256, 1024};  // floats: 4 B .. 4 KiB

// Allreduce number i: every member contributes rank + i at each element (exact in float).
bool one_allreduce(rankflow::Communicator& comm, float* in, float* out, size_t count, int i) {
  const int rank = comm.rank(), size = comm.size();
  for (size_t e = 0; e < count; ++e)
    in[e] = static_cast<float>(rank + i % 1000);
  comm.allreduce(in, out, count, rankflow::DType::kF32, rankflow::ReduceOp::kSum);
  const float expected = static_cast<float>(size * (i % 1000) + size * (size - 1) / 2);
  return out[0] == expected && out[count - 1] == expected;
}

struct Buffers {
  std::vector<float> user_in = std::vector<float>(1024), user_out = std::vector<float>(1024);
  rankflow::SymmetricBuffer symmetric;  // in at 0, out at 1024 floats
};

bool allreduces(rankflow::Communicator& comm, Buffers& b, int n, int first) {
  std::vector<float>& user_in = b.user_in;
  std::vector<float>& user_out = b.user_out;
  auto* sym_in = static_cast<float*>(b.symmetric.data());
  for (int i = first; i < first + n; ++i) {
    const size_t count = kCounts[i % 4];
    const bool user = (i / 4) % 2 == 0;
    float* in = user ? user_in.data() : sym_in;
    float* out = user ? user_out.data() : sym_in + 1024;
    if (!one_allreduce(comm, in, out, count, i)) {
      std::fprintf(stderr, "[rank %d] allreduce %d (%zu floats, %s) gave %g\n", comm.rank(), i,
                   count, user ? "user buffers" : "symmetric memory", out[0]);
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int n = argc > 1 ? std::atoi(argv[1]) : 100000;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  bool ok = true;
  try {
    auto comm = rankflow::Communicator::from_mpi(MPI_COMM_WORLD);
    Buffers buffers{.symmetric = comm.alloc(2 * 1024 * sizeof(float))};
    ok &=
        allreduces(comm, buffers, 2000, 0);  // warm-up: staging windows and caches reach their size
    const auto before = rankflow::soak::measure();
    const auto start = std::chrono::steady_clock::now();
    ok &= allreduces(comm, buffers, n, 2000);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto after = rankflow::soak::measure();
    ok &= rankflow::soak::report(rank, (std::to_string(n) + " small allreduces").c_str(), seconds,
                                 before, after);
  } catch (const rankflow::Error& e) {
    std::fprintf(stderr, "[rank %d] soak_collectives: %s\n", rank, e.what());
    ok = false;
  }
  int all_ok = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (rank == 0) std::printf("soak_collectives: %s\n", all_ok ? "passed" : "FAILED");
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
