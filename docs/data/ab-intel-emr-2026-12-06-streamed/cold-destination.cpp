// Cold-destination copy: memcpy vs NT stores vs kernel copy (process_vm_writev to self).
#include <immintrin.h>
#include <sys/uio.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>
#include <algorithm>
using clk = std::chrono::steady_clock;
static void nt(char* d, const char* s, size_t n) {
  for (size_t i = 0; i < n; i += 64) {
    __m256i a = _mm256_load_si256((const __m256i*)(s + i)), b = _mm256_load_si256((const __m256i*)(s + i + 32));
    _mm256_stream_si256((__m256i*)(d + i), a); _mm256_stream_si256((__m256i*)(d + i + 32), b);
  }
  _mm_sfence();
}
int main() {
  const size_t H = 8 << 20, C = 512 << 10;
  std::vector<char> settle(600u << 20, 1), dst(H + 4096, 2), src(C + 4096, 3);
  char* d = dst.data() + (64 - (uintptr_t)dst.data() % 64);
  char* s = src.data() + (64 - (uintptr_t)src.data() % 64) + 33 * 64;
  static char hotbuf[(512<<10)+4096]; char* hot = hotbuf + 64 * 5;
  for (int round = 0; round < 5; ++round)
  for (int v = 0; v < 5; ++v) {
    volatile long sum = 0; for (size_t i = 0; i < settle.size(); i += 64) sum += settle[i];
    memset(s, round, C);
    auto t0 = clk::now();
    for (size_t off = 0; off < H; off += C) {
      if (v == 0) memcpy(d + off, s, C);
      else if (v == 1) nt(d + off, s, C);
      else if (v == 2) { iovec l{s, C}, r{d + off, C}; process_vm_writev(getpid(), &l, 1, &r, 1, 0); }
      else if (v == 3) { iovec l{s, C}, r{hot, C}; process_vm_writev(getpid(), &l, 1, &r, 1, 0); }
      else memcpy(hot, s, C);
    }
    double us = std::chrono::duration<double, std::micro>(clk::now() - t0).count();
    printf("%s %.0f us (%.1f GB/s)\n", v == 0 ? "memcpy" : v == 1 ? "nt    " : v == 2 ? "kernel" : v == 3 ? "k-hot " : "m-hot ", us, H / us / 1e3);
  }
}
