// Small allreduce beside the two-process exchange floor, the same floor with the next slot claimed
// (PREFETCHW once the peer's push is here, as the push inbox does since 2026-12-06) and Open MPI,
// interleaved in one run. Counts up to 14 floats (one line: flag word + payload).
#include <mpi.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "rankflow/communicator.h"
using namespace rankflow;
using Clock = std::chrono::steady_clock;
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  {
    Communicator comm = Communicator::from_mpi(MPI_COMM_WORLD);
    const size_t count = argc > 1 ? std::atoi(argv[1]) : 1;
    const int iters = argc > 2 ? std::atoi(argv[2]) : 100000;
    const int reps = argc > 3 ? std::atoi(argv[3]) : 10;
    const int me = comm.rank(), peer = 1 - me;
    // Two slots (parity) per rank, one line each: flag word + payload, as the push inbox.
    MPI_Comm shm;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm);
    std::byte* base = nullptr;
    MPI_Win win;
    MPI_Win_allocate_shared(me == 0 ? 4 * 64 : 0, 64, MPI_INFO_NULL, shm, &base, &win);
    MPI_Aint sz; int du;
    MPI_Win_shared_query(win, 0, &sz, &du, &base);
    std::memset(base, 0, me == 0 ? 256 : 0);
    MPI_Barrier(MPI_COMM_WORLD);
    auto slot = [&](int owner, uint64_t k) { return reinterpret_cast<std::atomic<uint64_t>*>(base + (owner * 2 + (k & 1)) * 64); };
    std::vector<float> in(count, 1.0f), out(count);
    uint64_t k = 0;
    auto floor_call = [&] {
      ++k;
      std::memcpy(reinterpret_cast<std::byte*>(slot(peer, k)) + 8, in.data(), count * 4);
      slot(peer, k)->store(k, std::memory_order_release);
      while (slot(me, k)->load(std::memory_order_acquire) < k) __builtin_ia32_pause();
      const float* got = reinterpret_cast<const float*>(reinterpret_cast<std::byte*>(slot(me, k)) + 8);
      for (size_t i = 0; i < count; ++i) out[i] = in[i] + got[i];
    };
    auto claimed_floor_call = [&] {
      floor_call();
      asm volatile("prefetchw %0" ::"m"(*reinterpret_cast<const char*>(slot(peer, k + 1))));
    };
    for (int i = 0; i < 10000; ++i) comm.allreduce(in.data(), out.data(), count, DType::kF32, ReduceOp::kSum);
    for (int i = 0; i < 10000; ++i) floor_call();
    for (int i = 0; i < 10000; ++i) claimed_floor_call();
    std::vector<double> f, c, r, m;
    auto timed = [&](auto&& call) {
      MPI_Barrier(MPI_COMM_WORLD);
      auto t0 = Clock::now();
      for (int i = 0; i < iters; ++i) call();
      return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters;
    };
    for (int rep = 0; rep < reps; ++rep) {
      f.push_back(timed(floor_call));
      c.push_back(timed(claimed_floor_call));
      r.push_back(timed([&] { comm.allreduce(in.data(), out.data(), count, DType::kF32, ReduceOp::kSum); }));
      m.push_back(timed([&] { MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); }));
      if (me == 0) std::printf("floor %.3f claimed %.3f rankflow %.3f mpi %.3f  rankflow/claimed %.2f  mpi/rankflow %.2f\n", f.back(), c.back(), r.back(), m.back(), r.back() / c.back(), m.back() / r.back());
    }
    MPI_Win_free(&win);
    comm.close();
  }
  MPI_Finalize();
}
