// rankflow's plain allreduce (or MPI_Allreduce) in a loop of its own, timed as rankflow-bench times
// calls from 64 KiB: each after a store to every line of its input and a barrier, the mean per
// call of 32 calls, the slower rank's, median of 9 batches. Variants (environment): BIG, the
// arrays where rankflow-bench keeps them (one 256 MiB vector, recv 128 MiB + 4 KiB after send);
// INTER, 16 MPI_Allreduce calls before each batch; RFB, rankflow's barrier instead of MPI's;
// IP, 8 in-place rankflow calls before each batch (rankflow-bench interleaves its in-place batch).
// Build: see loop.sh. Usage: mpirun -n 2 --bind-to core ./allreduce-loop BYTES rf|mpi
#include <mpi.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include "rankflow/communicator.h"
using clk = std::chrono::steady_clock;
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const size_t B = strtoull(argv[1], 0, 0);
  const std::string mode = argv[2];
  int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  {
    auto comm = rankflow::Communicator::from_mpi(MPI_COMM_WORLD);
    const size_t n = B / 4;
    const bool big = getenv("BIG") != nullptr;
    const size_t per_buffer = (size_t{64} << 20) * 2 + 4096;
    std::vector<std::byte> user(big ? 2 * per_buffer : 0);
    std::vector<float> sv(big ? 0 : n, rank + 1.0f), rv(big ? 0 : n);
    float* sendp = big ? reinterpret_cast<float*>(user.data()) : sv.data();
    float* recvp = big ? reinterpret_cast<float*>(user.data() + per_buffer) : rv.data();
    if (big) for (size_t k = 0; k < n; ++k) sendp[k] = rank + 1.0f;
    struct V { float* p; float* data() { return p; } float& operator[](size_t i) { return p[i]; } } send{sendp}, recv{recvp};
    const bool inter = getenv("INTER") != nullptr;
    const bool rfb = getenv("RFB") != nullptr;
    const bool ip = getenv("IP") != nullptr;
    std::vector<double> per;
    const int iters = 32;
    for (int b = 0; b < 10; ++b) {
      if (inter) for (int i = 0; i < 16; ++i) {
        for (size_t k = 0; k < n; k += 16) send[k] = rank + 1.0f;
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Allreduce(send.data(), recv.data(), (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      }
      if (ip) for (int i = 0; i < 8; ++i) {
        for (size_t k = 0; k < n; k += 16) send[k] = rank + 1.0f;
        comm.barrier();
        comm.allreduce(send.data(), send.data(), n, rankflow::DType::kF32, rankflow::ReduceOp::kSum);
        for (size_t k = 0; k < n; ++k) send[k] = rank + 1.0f;
      }
      double total = 0;
      for (int i = 0; i < iters; ++i) {
        for (size_t k = 0; k < n; k += 16) send[k] = rank + 1.0f;
        if (rfb) comm.barrier(); else MPI_Barrier(MPI_COMM_WORLD);
        auto t0 = clk::now();
        if (mode == "rf") comm.allreduce(send.data(), recv.data(), n, rankflow::DType::kF32, rankflow::ReduceOp::kSum);
        else MPI_Allreduce(send.data(), recv.data(), (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        total += std::chrono::duration<double, std::micro>(clk::now() - t0).count();
      }
      double us = total / iters, mx;
      MPI_Allreduce(&us, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (b > 0) per.push_back(mx);
    }
    if (recv[0] != 3.0f || recv[n - 1] != 3.0f) { printf("wrong\n"); return 1; }
    std::sort(per.begin(), per.end());
    if (rank == 0) printf("%s %zu: median %.1f us (min %.1f)\n", mode.c_str(), B, per[per.size() / 2], per[0]);
  }
  MPI_Finalize();
}
