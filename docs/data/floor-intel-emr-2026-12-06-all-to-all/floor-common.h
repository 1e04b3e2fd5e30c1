// Helpers shared by the floor programs of this directory (allreduce-cold.cpp,
// all-to-all-cold.cpp): two processes pinned to cores 0 and 1, flags in shared memory,
// non-temporal copies and the kernel's cross-process copies.
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
