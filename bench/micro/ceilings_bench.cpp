// Hardware ceilings on one machine, the figures rankflow's transfers are judged against:
//   - memcpy on one core, by size (the best a one-sided copy between two ranks can do);
//   - y += x over float32, by size (the reduction kernel rate collectives need);
//   - a cache-line ping-pong between two threads on two cores (the floor of any flag hand-off),
//     and a symmetric exchange of one line each way (the floor of a small allreduce);
//   - a staging hand-off: one core copies a buffer into a region the other core then reads, as
//     a plain-buffer collective stages its input for a peer, with memcpy and with non-temporal
//     stores, into one region or two alternating ones (issue 13: why staging copies run at a
//     fraction of memcpy's speed);
//   - rankflow's own reduction kernels, to set beside memcpy.
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "collectives/reduce.h"

namespace {

void pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % static_cast<int>(std::thread::hardware_concurrency()), &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

void BM_Memcpy(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_Memcpy)->RangeMultiplier(4)->Range(4096, 64 << 20);

void BM_ReduceSumF32(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const size_t count = bytes / sizeof(float);
  std::vector<float> x(count, 1.0f), y(count, 0.0f);
  for (auto _ : state) {
    float* __restrict out = y.data();
    const float* __restrict in = x.data();
    for (size_t i = 0; i < count; ++i)
      out[i] += in[i];
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_ReduceSumF32)->RangeMultiplier(4)->Range(4096, 64 << 20);

// One iteration = one round trip = two one-way cache-line transfers between cores 0 and 1.
void BM_CacheLinePingPong(benchmark::State& state) {
  alignas(128) static std::atomic<uint64_t> line{0};
  alignas(128) static std::atomic<bool> stop{false};
  line.store(0);
  stop.store(false);
  pin_to_cpu(0);
  std::thread partner([] {
    pin_to_cpu(1);
    for (uint64_t expect = 1; !stop.load(std::memory_order_relaxed);) {
      if (line.load(std::memory_order_acquire) == expect) {
        line.store(expect + 1, std::memory_order_release);
        expect += 2;
      }
    }
  });
  uint64_t next = 1;
  for (auto _ : state) {
    line.store(next, std::memory_order_release);
    while (line.load(std::memory_order_acquire) != next + 1) {
    }
    next += 2;
  }
  stop.store(true);
  partner.join();
  state.SetLabel("time is one round trip; one-way is half");
}
BENCHMARK(BM_CacheLinePingPong)->UseRealTime();

// One iteration = one symmetric exchange, as a pushed small allreduce on two members does: each
// core stores the call's sequence number into a line of the other's and waits for the other's
// in its own (two lines each, by parity, as the push inbox). The floor under a 4 B allreduce:
// everything rankflow spends above it is the call, the choice, the task and the reduction.
void BM_CacheLineExchange(benchmark::State& state) {
  struct alignas(64) Line {
    std::atomic<uint64_t> sequence{0};
  };
  static Line inbox[2][2];  // [receiving core][parity]
  alignas(128) static std::atomic<bool> stop{false};
  for (auto& lines : inbox) {
    for (Line& line : lines)
      line.sequence.store(0);
  }
  stop.store(false);
  auto exchange = [](int me, uint64_t k) {
    inbox[1 - me][k & 1].sequence.store(k, std::memory_order_release);
    while (inbox[me][k & 1].sequence.load(std::memory_order_acquire) < k) {
      if (stop.load(std::memory_order_relaxed)) return false;
    }
    return true;
  };
  pin_to_cpu(0);
  std::thread partner([&] {
    pin_to_cpu(1);
    for (uint64_t k = 1; exchange(1, k); ++k) {
    }
  });
  uint64_t k = 0;
  for (auto _ : state)
    exchange(0, ++k);
  stop.store(true);
  partner.join();
  state.SetLabel("time is one exchange: each core's line reaches the other");
}
BENCHMARK(BM_CacheLineExchange)->UseRealTime();

// Copies with 16-byte non-temporal stores (`dst` 16-byte aligned, `bytes` a multiple of 64):
// the lines are written without being fetched from the cache that holds them.
void stream_copy(char* dst, const char* src, size_t bytes) {
#if defined(__x86_64__)
  for (size_t i = 0; i < bytes; i += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
  }
  _mm_sfence();
#else
  std::memcpy(dst, src, bytes);
#endif
}

// One iteration: core 0 writes fresh input (one store a line, untimed work of the caller in a
// collective too), copies it into the staging region (memcpy, or non-temporal stores), and core
// 1 copies the region out, as a peer fetching staged data does. Time is the whole hand-off;
// the label gives the staging copy's own rate. Args: bytes, non-temporal (0/1), regions (1/2,
// alternating between calls).
void BM_StagingHandoff(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const bool non_temporal = state.range(1) != 0;
  const size_t regions = static_cast<size_t>(state.range(2));
  std::vector<char> src(bytes, 1), out(bytes, 0);
  auto* staging = static_cast<char*>(std::aligned_alloc(4096, bytes * regions));
  std::memset(staging, 0, bytes * regions);
  alignas(128) static std::atomic<uint64_t> turn{0};
  alignas(128) static std::atomic<bool> stop{false};
  turn.store(0);
  stop.store(false);
  pin_to_cpu(0);
  std::thread reader([&] {
    pin_to_cpu(1);
    for (uint64_t call = 0; !stop.load(std::memory_order_relaxed);) {
      if (turn.load(std::memory_order_acquire) != 2 * call + 1) continue;
      std::memcpy(out.data(), staging + (call % regions) * bytes, bytes);
      turn.store(2 * call + 2, std::memory_order_release);
      ++call;
    }
  });
  double copy_seconds = 0;
  uint64_t call = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < bytes; i += 64)
      src[i] = static_cast<char>(call);
    const auto start = std::chrono::steady_clock::now();
    char* region = staging + (call % regions) * bytes;
    if (non_temporal) {
      stream_copy(region, src.data(), bytes);
    } else {
      std::memcpy(region, src.data(), bytes);
    }
    copy_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    turn.store(2 * call + 1, std::memory_order_release);
    while (turn.load(std::memory_order_acquire) != 2 * call + 2) {
    }
    ++call;
  }
  stop.store(true);
  reader.join();
  std::free(staging);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.SetLabel("staging copy " +
                 std::to_string(static_cast<int>(bytes * call / copy_seconds / 1e9)) + " GB/s");
}
BENCHMARK(BM_StagingHandoff)
    ->ArgsProduct({{16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20}, {0, 1}, {1, 2}})
    ->UseRealTime();

// Both cores at once, as in a two-member allreduce on plain buffers (twophase): each stages the
// half of its fresh input that the other reduces, reduces its own half with the other's staged
// half into a region of its own, and copies the other's reduced half out; a barrier between the
// steps. Time is one whole exchange. Args: message bytes, regions (1, or 2 alternating between
// calls, as BufferPlacement does for messages that fit half the staging buffers). On the Intel
// Xeon of 2026-12-03, 64-88 KiB took 1.6-1.7 x as long on one region as on two; 16-32 KiB and
// from 96 KiB they tied.
void BM_PairedStagingHandoff(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0)) & ~size_t{127};
  const size_t regions = static_cast<size_t>(state.range(1));
  const size_t half = bytes / 2;
  struct Side {
    std::vector<float> src, dst;
    float* stage;  // `regions` regions of half, then as many for the reduced halves
  };
  Side sides[2];
  for (Side& side : sides) {
    side.src.assign(bytes / 4, 1.0f);
    side.dst.assign(bytes / 4, 0.0f);
    side.stage = static_cast<float*>(std::aligned_alloc(4096, 2 * regions * half));
    std::memset(side.stage, 0, 2 * regions * half);
  }
  struct alignas(128) Counter {  // one cache line (pair) each: the two cores' arrivals
    std::atomic<uint64_t> steps{0};
  };
  static Counter arrived[2];
  alignas(128) static std::atomic<bool> stop{false};
  arrived[0].steps.store(0);
  arrived[1].steps.store(0);
  stop.store(false);
  auto exchange = [&](int me, uint64_t call, uint64_t& steps) {
    Side& mine = sides[me];
    const Side& peer = sides[1 - me];
    const size_t region = (call % regions) * half / 4, out = regions * half / 4 + region;
    auto barrier = [&] {
      arrived[me].steps.store(++steps, std::memory_order_release);
      while (arrived[1 - me].steps.load(std::memory_order_acquire) < steps && !stop.load()) {
      }
    };
    const size_t own = static_cast<size_t>(me) * half / 4, other = half / 4 - own;
    for (size_t i = 0; i < bytes / 4; i += 16)
      mine.src[i] = static_cast<float>(call);
    std::memcpy(mine.stage + region, mine.src.data() + other, half);
    barrier();
    for (size_t i = 0; i < half / 4; ++i)
      mine.stage[out + i] = mine.src[own + i] + peer.stage[region + i];
    std::memcpy(mine.dst.data() + own, mine.stage + out, half);
    barrier();
    std::memcpy(mine.dst.data() + other, peer.stage + out, half);
    barrier();
  };
  pin_to_cpu(0);
  std::thread partner([&] {
    pin_to_cpu(1);
    uint64_t steps = 0;
    for (uint64_t call = 0; !stop.load(std::memory_order_relaxed); ++call)
      exchange(1, call, steps);
  });
  uint64_t call = 0, steps = 0;
  for (auto _ : state)
    exchange(0, call++, steps);
  stop.store(true);
  partner.join();
  for (Side& side : sides)
    std::free(side.stage);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_PairedStagingHandoff)
    ->ArgsProduct({{32 << 10, 64 << 10, 88 << 10, 96 << 10, 256 << 10}, {1, 2}})
    ->UseRealTime();

// rankflow's reduction kernels (collectives/reduce.h), bytes of output per second, to compare
// with BM_Memcpy at the same size: fused two-input (out = a op b) and in-place combine.
void BM_RankflowReduce2(benchmark::State& state, rankflow::DType dtype) {
  const auto& r = rankflow::coll::reducer(dtype, rankflow::ReduceOp::kSum);
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<std::byte> a(bytes), b(bytes), out(bytes);
  for (auto _ : state) {
    r.reduce2(out.data(), a.data(), b.data(), bytes / r.elem_size);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK_CAPTURE(BM_RankflowReduce2, f32, rankflow::DType::kF32)
    ->RangeMultiplier(16)
    ->Range(4096, 64 << 20);
BENCHMARK_CAPTURE(BM_RankflowReduce2, bf16, rankflow::DType::kBF16)
    ->RangeMultiplier(16)
    ->Range(4096, 64 << 20);
BENCHMARK_CAPTURE(BM_RankflowReduce2, f16, rankflow::DType::kF16)
    ->RangeMultiplier(16)
    ->Range(4096, 64 << 20);

void BM_RankflowCombine(benchmark::State& state, rankflow::DType dtype) {
  const auto& r = rankflow::coll::reducer(dtype, rankflow::ReduceOp::kSum);
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<std::byte> in(bytes), inout(bytes);
  for (auto _ : state) {
    r.combine(inout.data(), in.data(), bytes / r.elem_size);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK_CAPTURE(BM_RankflowCombine, f32, rankflow::DType::kF32)
    ->RangeMultiplier(16)
    ->Range(4096, 64 << 20);
BENCHMARK_CAPTURE(BM_RankflowCombine, f64, rankflow::DType::kF64)
    ->RangeMultiplier(16)
    ->Range(4096, 64 << 20);

}  // namespace
