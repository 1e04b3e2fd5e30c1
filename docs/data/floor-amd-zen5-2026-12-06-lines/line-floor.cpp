// Multi-line push floor: count floats pushed as flag line + payload lines (as the push inbox),
// variants: plain (flag then read), fetch-ahead (prefetch payload with every poll), fa+claim,
// tail-flag (flag word in the last payload line, no separate flag line) + claim; beside
// rankflow's allreduce and MPI_Allreduce of the same count.
#include <mpi.h>
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
    const size_t count = argc > 1 ? std::atoi(argv[1]) : 64;
    const int iters = argc > 2 ? std::atoi(argv[2]) : 100000;
    const int reps = argc > 3 ? std::atoi(argv[3]) : 5;
    const int me = comm.rank(), peer = 1 - me;
    const size_t bytes = count * 4, lines = (bytes + 63) / 64;
    const size_t stride = (lines + 2) * 64;  // flag line + payload lines + spare for tail flag
    MPI_Comm shm;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm);
    std::byte* base = nullptr;
    MPI_Win win;
    MPI_Win_allocate_shared(me == 0 ? 12 * stride : 0, 64, MPI_INFO_NULL, shm, &base, &win);
    MPI_Aint sz; int du;
    MPI_Win_shared_query(win, 0, &sz, &du, &base);
    if (me == 0) std::memset(base, 0, 12 * stride);
    MPI_Barrier(MPI_COMM_WORLD);
    auto slot = [&](int owner, uint64_t k) { return base + (owner * 2 + (k & 1)) * stride; };
    auto tslot = [&](int owner, uint64_t k) { return base + (4 + owner * 2 + (k & 1)) * stride; };
    auto flag = [&](int owner, uint64_t k) { return reinterpret_cast<std::atomic<uint64_t>*>(slot(owner, k)); };
    std::vector<float> in(count, 1.0f), out(count);
    uint64_t k = 0;
    auto prefetch_payload = [&](const std::byte* p) {
      for (size_t l = 0; l < lines; ++l) __builtin_prefetch(p + l * 64);
    };
    auto claim = [&](std::byte* p, size_t n) {
      for (size_t l = 0; l < n; ++l) asm volatile("prefetchw %0" ::"m"(*reinterpret_cast<const char*>(p + l * 64)));
    };
    auto reduce = [&](const std::byte* g) {
      const float* got = reinterpret_cast<const float*>(g);
      for (size_t i = 0; i < count; ++i) out[i] = in[i] + got[i];
    };
    auto flagged = [&](bool fetch_ahead, bool claimed) {
      ++k;
      std::memcpy(slot(peer, k) + 64, in.data(), bytes);
      flag(peer, k)->store(k, std::memory_order_release);
      const std::byte* mine = slot(me, k) + 64;
      while (true) {
        if (fetch_ahead) prefetch_payload(mine);
        if (flag(me, k)->load(std::memory_order_acquire) >= k) break;
        __builtin_ia32_pause();
      }
      reduce(mine);
      if (claimed) claim(slot(peer, k + 1), lines + 1);
    };
    // Tail flag: payload from the slot's start, flag word right after it (lines + 8 B).
    const size_t tail_lines = (bytes + 8 + 63) / 64;
    auto tail = [&](bool fetch_ahead, bool claimed) {
      ++k;
      std::memcpy(tslot(peer, k), in.data(), bytes);
      auto* f = reinterpret_cast<std::atomic<uint64_t>*>(tslot(peer, k) + bytes);
      f->store(k, std::memory_order_release);
      auto* mf = reinterpret_cast<std::atomic<uint64_t>*>(tslot(me, k) + bytes);
      while (true) {
        if (fetch_ahead) for (size_t l = 0; l + 1 < tail_lines; ++l) __builtin_prefetch(tslot(me, k) + l * 64);
        if (mf->load(std::memory_order_acquire) >= k) break;
        __builtin_ia32_pause();
      }
      reduce(tslot(me, k));
      if (out[0] != 2.0f) std::abort();
      if (claimed) claim(tslot(peer, k + 1), tail_lines);
    };
    // The inbox's own layout for <= 56 B: flag word at 0, payload at +8; slots spaced (stride)
    // or adjacent lines (as small-floor.cpp).
    const size_t lb = std::getenv("LB") ? std::atoi(std::getenv("LB")) : 8;
    auto lslot = [&](int owner, uint64_t k, size_t sp) { return base + lb * stride + (owner * 2 + (k & 1)) * sp; };
    const size_t fo = std::getenv("FO") ? std::atoi(std::getenv("FO")) : 0;
    const size_t po = std::getenv("PO") ? std::atoi(std::getenv("PO")) : 8;
    auto line = [&](size_t sp) {
      ++k;
      std::memcpy(lslot(peer, k, sp) + po, in.data(), bytes);
      reinterpret_cast<std::atomic<uint64_t>*>(lslot(peer, k, sp) + fo)->store(k, std::memory_order_release);
      auto* mf = reinterpret_cast<std::atomic<uint64_t>*>(lslot(me, k, sp) + fo);
      while (mf->load(std::memory_order_acquire) < k) __builtin_ia32_pause();
      reduce(lslot(me, k, sp) + po);
      if (out[0] != 2.0f) std::abort();
      claim(lslot(peer, k + 1, sp), 1);
    };
    auto spaced = [&] { line(stride); };
    auto adjacent = [&] { line(64); };
    auto plain = [&] { flagged(false, false); };
    auto fa = [&] { flagged(true, false); };
    auto fac = [&] { flagged(true, true); };
    auto tlc = [&] { tail(true, true); };
    auto rf = [&] { comm.allreduce(in.data(), out.data(), count, DType::kF32, ReduceOp::kSum); };
    auto mpi = [&] { MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); };
    for (int i = 0; i < 10000; ++i) { rf(); plain(); fa(); fac(); tlc(); mpi(); if (bytes <= 56) { spaced(); adjacent(); } }
    auto timed = [&](auto&& call) {
      MPI_Barrier(MPI_COMM_WORLD);
      auto t0 = Clock::now();
      for (int i = 0; i < iters; ++i) call();
      return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters;
    };
    for (int rep = 0; rep < reps; ++rep) {
      double a = timed(plain), b = timed(fa), c = timed(fac), d = timed(tlc), r = timed(rf), m = timed(mpi);
      if (bytes <= 56) { double sp = timed(spaced), ad = timed(adjacent); if (me == 0) std::printf("%zu B: line spaced %.3f adjacent %.3f  ", bytes, sp, ad); }
      if (me == 0) std::printf("%zu B: plain %.3f fetch-ahead %.3f fa+claim %.3f tail+fa+claim %.3f rankflow %.3f mpi %.3f  mpi/rankflow %.2f mpi/best-floor %.2f\n", bytes, a, b, c, d, r, m, m / r, m / std::min(std::min(a, b), std::min(c, d)));
    }
    MPI_Win_free(&win);
    comm.close();
  }
  MPI_Finalize();
}
