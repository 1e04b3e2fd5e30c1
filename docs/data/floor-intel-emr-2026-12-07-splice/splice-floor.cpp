// The floor of an all_to_all's exchange on plain (private) memory, by three kernel paths: two
// processes (fork), each pinned to its own core, each with a send of two blocks and a recv of
// two; each moves its block for the peer into the peer's recv and (own = 1) copies its own
// block with non-temporal stores, then both meet at a barrier in shared memory. Timed per
// iteration, 200 iterations, the first 20 dropped; the median and the 10th percentile printed.
//   writev  process_vm_writev of the block into the peer's recv (rankflow's path)
//   readv   process_vm_readv of the peer's block from its send
//   splice  vmsplice of the block's pages into a pipe (no copy, the pages referenced), which
//           the peer read()s into its recv (one copy, by the receiver): the kernel's other
//           single-copy path, which pins with get_user_pages_fast instead of the remote walk
// Usage: splice-floor MODE [block KiB = 2048] [piece KiB = 256] [own = 1]
//   piece: the bytes of one system call (the pipe holds at most /proc/sys/fs/pipe-max-size).
// No library: g++ -O2 -mavx2 -o splice-floor splice-floor.cpp
#define _GNU_SOURCE 1
#include <sched.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>
#include <atomic>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <string>
#include <immintrin.h>
struct Ctl { std::atomic<long> arrive[2]; std::atomic<long> gen; uintptr_t src[2], dst[2]; pid_t pid[2]; };
static Ctl* ctl;
static void barrier(int me, long& epoch) {
  ++epoch; ctl->arrive[me].store(epoch, std::memory_order_release);
  while (ctl->arrive[1-me].load(std::memory_order_acquire) < epoch) _mm_pause();
}
static void nt_copy(void* d, const void* s, size_t n) {
  auto* dd = (__m256i*)d; auto* ss = (const __m256i*)s;
  for (size_t i = 0; i < n/32; ++i) _mm256_stream_si256(dd+i, _mm256_loadu_si256(ss+i));
  _mm_sfence();
}
int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "writev";
  size_t block = (argc > 2 ? atol(argv[2]) : 2048) * 1024;
  size_t piece = (argc > 3 ? atol(argv[3]) : 256) * 1024;
  bool own = argc > 4 ? atoi(argv[4]) : 1;
  int iters = 200;
  ctl = (Ctl*)mmap(nullptr, 4096, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS, -1, 0);
  new (ctl) Ctl{};
  int p01[2], p10[2];
  pipe(p01); pipe(p10);
  fcntl(p01[0], F_SETPIPE_SZ, 1<<20); fcntl(p10[0], F_SETPIPE_SZ, 1<<20);
  pid_t child = fork();
  int me = child == 0 ? 1 : 0;
  cpu_set_t set; CPU_ZERO(&set); CPU_SET(me, &set); sched_setaffinity(0, sizeof set, &set);
  int out = me == 0 ? p01[1] : p10[1];
  int in = me == 0 ? p10[0] : p01[0];
  fcntl(out, F_SETFL, O_NONBLOCK); fcntl(in, F_SETFL, O_NONBLOCK);
  char* src = (char*)aligned_alloc(4096, 2*block); char* dst = (char*)aligned_alloc(4096, 2*block);
  memset(src, me + 1, 2*block); memset(dst, 0, 2*block);
  ctl->src[me] = (uintptr_t)src; ctl->dst[me] = (uintptr_t)dst; ctl->pid[me] = getpid();
  long epoch = 0; barrier(me, epoch);
  int peer = 1 - me; pid_t ppid = ctl->pid[peer];
  char* peer_dst = (char*)ctl->dst[peer]; char* peer_src = (char*)ctl->src[peer];
  std::vector<double> t;
  for (int it = 0; it < iters; ++it) {
    barrier(me, epoch);
    auto t0 = std::chrono::steady_clock::now();
    // own block: src[me] -> dst[me]; peer's block: my src[peer] -> peer's dst[me]
    char* mine_to_peer = src + peer * block;
    if (mode == "writev") {
      for (size_t off = 0; off < block; off += piece) {
        size_t n = std::min(piece, block - off);
        iovec l{mine_to_peer + off, n}, r{peer_dst + me * block + off, n};
        if (process_vm_writev(ppid, &l, 1, &r, 1, 0) != (ssize_t)n) { perror("writev"); return 1; }
      }
    } else if (mode == "readv") {
      for (size_t off = 0; off < block; off += piece) {
        size_t n = std::min(piece, block - off);
        iovec l{dst + peer * block + off, n}, r{peer_src + me * block + off, n};
        if (process_vm_readv(ppid, &l, 1, &r, 1, 0) != (ssize_t)n) { perror("readv"); return 1; }
      }
    } else if (mode == "splice") {
      size_t sent = 0, got = 0;
      char* into = dst + peer * block;
      while (sent < block || got < block) {
        if (sent < block) {
          iovec v{mine_to_peer + sent, std::min(piece, block - sent)};
          ssize_t k = vmsplice(out, &v, 1, SPLICE_F_NONBLOCK);
          if (k > 0) sent += k; else if (errno != EAGAIN) { perror("vmsplice"); return 1; }
        }
        if (got < block) {
          ssize_t k = read(in, into + got, block - got);
          if (k > 0) got += k; else if (k < 0 && errno != EAGAIN) { perror("read"); return 1; }
        }
      }
    }
    if (own) nt_copy(dst + me * block, src + me * block, block);
    barrier(me, epoch);
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  // check
  for (size_t i = 0; i < 2*block; i += 4096) if (dst[i] != (i < block ? 1 : 2)) { printf("rank %d wrong at %zu: %d\n", me, i, dst[i]); break; }
  std::sort(t.begin() + 20, t.end());
  if (me == 0) printf("%-7s block %5zu KiB piece %5zu KiB own %d: median %.1f us  p10 %.1f\n", mode.c_str(), block/1024, piece/1024, own, t[20 + (iters-20)/2], t[20 + (iters-20)/10]);
  if (child) waitpid(child, nullptr, 0);
}
