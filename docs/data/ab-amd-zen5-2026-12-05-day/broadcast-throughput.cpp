// per-rank throughput of back-to-back 4-32 B broadcasts: rankflow and MPI_Bcast, alternating
#include <mpi.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>
#include "rankflow/communicator.h"
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  size_t bytes = argc > 1 ? atoi(argv[1]) : 4;
  int iters = 20000;
  {
  auto comm = rankflow::Communicator::from_mpi(MPI_COMM_WORLD);
  int rank = comm.rank();
  std::vector<char> buf(64, 1);
  auto now = [] { return std::chrono::steady_clock::now(); };
  std::vector<double> rf, mp;
  for (int round = 0; round < 15; ++round) {
    MPI_Barrier(MPI_COMM_WORLD);
    auto t0 = now();
    for (int i = 0; i < iters; ++i) comm.broadcast(buf.data(), bytes, rankflow::DType::kU8, 0);
    auto t1 = now();
    MPI_Barrier(MPI_COMM_WORLD);
    auto t2 = now();
    for (int i = 0; i < iters; ++i) MPI_Bcast(buf.data(), bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    auto t3 = now();
    rf.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / iters);
    mp.push_back(std::chrono::duration<double, std::nano>(t3 - t2).count() / iters);
  }
  std::sort(rf.begin(), rf.end()); std::sort(mp.begin(), mp.end());
  double all[4] = {rf[7], mp[7], 0, 0}, r[4];
  MPI_Gather(all, 2, MPI_DOUBLE, r, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("%zu B: root rf %.0f mpi %.0f | recv rf %.0f mpi %.0f ns/call\n", bytes, r[0], r[1], r[2], r[3]);
  }
  MPI_Finalize();
}
