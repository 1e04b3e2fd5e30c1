// Helpers shared by the floor programs of this directory (allreduce-cold.cpp) and of
// ../floor-intel-emr-2026-12-06-all-to-all/: two processes pinned to cores 0 and 1, flags in
// shared memory, non-temporal copies and the kernel's cross-process copies.
#pragma once
#include <immintrin.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
using clk = std::chrono::steady_clock;
struct alignas(64) Flag { std::atomic<long> v; char pad[56]; };
static void pin(int c) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(c, &s); sched_setaffinity(0, sizeof s, &s); }
static void waitfor(std::atomic<long>& a, long v) { while (a.load(std::memory_order_acquire) < v) _mm_pause(); }
static void ntcopy(char* d, const char* s, size_t n) {
  size_t head = (32 - ((uintptr_t)d % 32)) % 32; if (head > n) head = n;
  memcpy(d, s, head); d += head; s += head; n -= head;
  size_t body = n / 128 * 128;
  for (size_t i = 0; i < body; i += 128) {
    __m256i a = _mm256_loadu_si256((const __m256i*)(s + i)), b = _mm256_loadu_si256((const __m256i*)(s + i + 32)),
            c = _mm256_loadu_si256((const __m256i*)(s + i + 64)), e = _mm256_loadu_si256((const __m256i*)(s + i + 96));
    _mm256_stream_si256((__m256i*)(d + i), a); _mm256_stream_si256((__m256i*)(d + i + 32), b);
    _mm256_stream_si256((__m256i*)(d + i + 64), c); _mm256_stream_si256((__m256i*)(d + i + 96), e);
  }
  _mm_sfence(); memcpy(d + body, s + body, n - body);
}
static void readv(pid_t pid, void* to, const void* from, size_t n) {
  iovec l{to, n}, r{const_cast<void*>(from), n};
  if (process_vm_readv(pid, &l, 1, &r, 1, 0) != (ssize_t)n) abort();
}
static void writev(pid_t pid, void* to, const void* from, size_t n) {
  iovec l{const_cast<void*>(from), n}, r{to, n};
  if (process_vm_writev(pid, &l, 1, &r, 1, 0) != (ssize_t)n) abort();
}
// The command line and environment of the two-process programs: BYTES VARIANT CHUNK [DEPTH],
// SETTLE (MiB read before each call, default 600) and CALLS (default 9).
struct FloorArgs {
  size_t bytes, chunk;
  std::string variant;
  int depth;
  size_t settle_mib;
  int calls;
};
static FloorArgs floor_args(int argc, char** argv) {
  return {strtoull(argv[1], 0, 0), strtoull(argv[3], 0, 0), argv[2], argc > 4 ? atoi(argv[4]) : 4,
          getenv("SETTLE") ? strtoull(getenv("SETTLE"), 0, 0) : 600,
          getenv("CALLS") ? atoi(getenv("CALLS")) : 9};
}
// Zeroed memory both processes share after the fork.
static void* shared_zeroed(size_t bytes) {
  void* p = mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  memset(p, 0, bytes);
  return p;
}
// Forks; returns 0 in the parent and 1 in the child, each pinned to that core.
static int fork_pinned() {
  const int me = fork() == 0 ? 1 : 0;
  pin(me);
  return me;
}
