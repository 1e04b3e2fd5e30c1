// process_vm_readv of B bytes from a forked child's buffer vs memcpy, with/without THP.
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>
static char* region(size_t b, bool thp) {
  void* p = mmap(nullptr, b + (2 << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char* a = (char*)(((uintptr_t)p + (2 << 20) - 1) & ~uintptr_t((2 << 20) - 1));
  madvise(a, b, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  memset(a, 1, b);
  return a;
}
int main(int argc, char** argv) {
  size_t b = strtoull(argv[1], 0, 0); bool thp_src = atoi(argv[2]), thp_dst = atoi(argv[3]);
  char* src = region(b, thp_src); char* dst = region(b, thp_dst);
  int pfd[2]; pipe(pfd);
  pid_t c = fork();
  if (c == 0) { char x; read(pfd[0], &x, 1); _exit(0); }
  auto med = [&](auto f) { std::vector<double> t; for (int i = 0; i < 41; ++i) { auto t0 = std::chrono::steady_clock::now(); f(); t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count()); } std::sort(t.begin(), t.end()); return t[20]; };
  double cma = med([&] { iovec l{dst, b}, r{src, b}; if (process_vm_readv(c, &l, 1, &r, 1, 0) != (ssize_t)b) abort(); });
  double mc = med([&] { memcpy(dst, src, b); asm volatile("" ::: "memory"); });
  printf("B=%zu thp src %d dst %d: process_vm_readv %.1f us (%.1f GB/s), memcpy %.1f us (%.1f GB/s)\n", b, thp_src, thp_dst, cma, b / cma / 1e3, mc, b / mc / 1e3);
  write(pfd[1], "x", 1); wait(nullptr);
}
