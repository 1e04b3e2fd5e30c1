// The floor of a two-process broadcast of plain (private) buffers, without rankflow or MPI, timed
// as rankflow-bench times it: batches of back-to-back calls, the slower rank's time per call.
// Two processes pinned to cores 0 and 1; the root (0) has a private send buffer of B bytes, the
// peer a private recv buffer; slots and flags live in shared memory. Variants:
//   push   : the root copies into slot[seq % depth] and raises its flag (having waited for the
//            peer's acknowledgement of seq - depth); the peer waits, copies out, acknowledges
//            (rankflow's pushed broadcast: depth 2)
//   chunks : as push, a flag per CHUNK bytes, so the peer copies chunk k while the root fills k+1
//   cma    : rendezvous: the root says ready, the peer reads the root's buffer with one
//            process_vm_readv and says done; the root returns on done (Open MPI's shape)
//   ntpush : as push, the root's copy in non-temporal stores
//   kk     : both say ready; the peer reads the first half with process_vm_readv while the root
//            writes the second half with process_vm_writev; both say done (rankflow's
//            cross-memory broadcast on two members)
//   split  : the root pushes the first half while the peer reads the second half with
//            process_vm_readv, then copies the pushed half out; the root returns on done
// FRESH=1 makes the root rewrite its buffer (one store a line, untimed) before each call.
// g++ -O2 -std=c++20 -mavx2 bcast-floor.cpp -o bf; ./bf BYTES VARIANT [DEPTH] [CHUNK]
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
struct alignas(64) Flag {
  std::atomic<long> v;
  char pad[56];
};
constexpr int kMaxDepth = 8, kMaxChunks = 64;
struct Shared {
  Flag ready[kMaxDepth][kMaxChunks];
  Flag ack, go[2], done;
  Flag start[2];
  void* send;
  void* recv;
  pid_t pid[2];
  double us[2];
};
static void pin(int c) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(c, &s);
  sched_setaffinity(0, sizeof s, &s);
}
static void waitfor(std::atomic<long>& a, long v) {
  while (a.load(std::memory_order_acquire) < v) _mm_pause();
}
static void ntcopy(char* d, const char* s, size_t n) {
  for (size_t i = 0; i < n; i += 64) {
    __m256i a = _mm256_loadu_si256((const __m256i*)(s + i)),
            b = _mm256_loadu_si256((const __m256i*)(s + i + 32));
    _mm256_stream_si256((__m256i*)(d + i), a);
    _mm256_stream_si256((__m256i*)(d + i + 32), b);
  }
  _mm_sfence();
}
static void movsb(char* d, const char* s, size_t n) {
  asm volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
}
static void avxcopy(char* d, const char* s, size_t n) {
  for (size_t i = 0; i < n; i += 64) {
    __m256i a = _mm256_loadu_si256((const __m256i*)(s + i)),
            b = _mm256_loadu_si256((const __m256i*)(s + i + 32));
    _mm256_storeu_si256((__m256i*)(d + i), a);
    _mm256_storeu_si256((__m256i*)(d + i + 32), b);
  }
}
// COPY_ROOT / COPY_PEER: memcpy (default), movsb (rep movsb), avx (32-byte loads and stores),
// clwb (memcpy, then each destination line written back, kept clean), pf (memcpy after a
// prefetch of every source line)
static void copy_as(const char* how, char* d, const char* s, size_t n) {
  if (how && how[0] == 'c') {
    memcpy(d, s, n);
    for (size_t i = 0; i < n; i += 64) _mm_clwb(d + i);
  } else if (how && how[0] == 'p') {
    for (size_t i = 0; i < n; i += 64) _mm_prefetch(s + i, _MM_HINT_T0);
    memcpy(d, s, n);
  } else if (how && how[0] == 'm' && how[1] == 'o') movsb(d, s, n);
  else if (how && how[0] == 'a') avxcopy(d, s, n);
  else memcpy(d, s, n);
}
int main(int argc, char** argv) {
  const size_t B = strtoull(argv[1], 0, 0);
  const std::string v = argv[2];
  const int depth = argc > 3 ? atoi(argv[3]) : 2;
  const size_t chunk = argc > 4 ? strtoull(argv[4], 0, 0) : B;
  const bool fresh = getenv("FRESH") && atoi(getenv("FRESH"));
  const int iters = 400, batches = 15;
  auto* sh = (Shared*)mmap(0, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                           -1, 0);
  char* slots = (char*)mmap(0, kMaxDepth * B, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                            -1, 0);
  memset(slots, 1, kMaxDepth * B);
  const int me = fork() == 0 ? 1 : 0;
  pin(me);
  std::vector<char> buf(B + 4096, 7);
  char* mine = buf.data() + 64;
  if (me == 0) sh->send = mine;
  else sh->recv = mine;
  sh->pid[me] = getpid();
  while (!sh->pid[1 - me]) _mm_pause();
  const int nchunks = static_cast<int>((B + chunk - 1) / chunk);
  long seq = 0;
  double copy_us = 0;
  std::vector<double> per;
  for (int b = 0; b < batches; ++b) {
    sh->start[me].v.store(3 * b + 1);
    waitfor(sh->start[1 - me].v, 3 * b + 1);
    double fresh_us = 0;
    auto t0 = clk::now();
    for (int i = 0; i < iters; ++i) {
      ++seq;
      if (fresh && me == 0) {
        auto f0 = clk::now();
        for (size_t k = 0; k < B; k += 64) mine[k] = (char)seq;
        fresh_us += std::chrono::duration<double, std::micro>(clk::now() - f0).count();
      }
      char* slot = slots + (seq % depth) * B;
      Flag* rdy = sh->ready[seq % depth];
      if (v == "push" || v == "chunks" || v == "ntpush") {
        if (me == 0) {
          waitfor(sh->ack.v, seq - depth);
          for (int c = 0; c < nchunks; ++c) {
            const size_t off = c * chunk, n = std::min(chunk, B - off);
            if (v == "ntpush") ntcopy(slot + off, mine + off, n);
            else {
              auto c0 = clk::now();
              copy_as(getenv("COPY_ROOT"), slot + off, mine + off, n);
              copy_us += std::chrono::duration<double, std::micro>(clk::now() - c0).count();
            }
            rdy[c].v.store(seq, std::memory_order_release);
          }
        } else {
          for (int c = 0; c < nchunks; ++c) {
            const size_t off = c * chunk, n = std::min(chunk, B - off);
            waitfor(rdy[c].v, seq);
            auto c0 = clk::now();
            copy_as(getenv("COPY_PEER"), mine + off, slot + off, n);
            copy_us += std::chrono::duration<double, std::micro>(clk::now() - c0).count();
          }
          sh->ack.v.store(seq, std::memory_order_release);
        }
      } else if (v == "cma") {
        if (me == 0) {
          sh->go[0].v.store(seq, std::memory_order_release);
          waitfor(sh->done.v, seq);
        } else {
          waitfor(sh->go[0].v, seq);
          iovec l{mine, B}, r{sh->send, B};
          process_vm_readv(sh->pid[0], &l, 1, &r, 1, 0);
          sh->done.v.store(seq, std::memory_order_release);
        }
      } else if (v == "cmaw" || v == "splitw") {
        // the peer says ready (its buffer's address is known); the root writes into it with
        // process_vm_writev (splitw: the first half pushed through the slot before that)
        const size_t half = v == "splitw" ? B / 2 : 0;
        if (me == 0) {
          if (half > 0) {
            copy_as(getenv("COPY_ROOT"), slot, mine, half);
            rdy[0].v.store(seq, std::memory_order_release);
          }
          waitfor(sh->go[0].v, seq);
          iovec l{mine + half, B - half}, r{(char*)sh->recv + half, B - half};
          process_vm_writev(sh->pid[1], &l, 1, &r, 1, 0);
          sh->done.v.store(seq, std::memory_order_release);
        } else {
          sh->go[0].v.store(seq, std::memory_order_release);
          if (half > 0) {
            waitfor(rdy[0].v, seq);
            copy_as(getenv("COPY_PEER"), mine, slot, half);
          }
          waitfor(sh->done.v, seq);
        }
      } else if (v == "kk") {
        // rankflow's cross-memory broadcast: both say ready; the peer reads the first half, the
        // root writes the second half into the peer's buffer; both say done
        const size_t half = B / 2;
        sh->go[me].v.store(seq, std::memory_order_release);
        waitfor(sh->go[1 - me].v, seq);
        if (me == 0) {
          iovec l{mine + half, B - half}, r{(char*)sh->recv + half, B - half};
          process_vm_writev(sh->pid[1], &l, 1, &r, 1, 0);
        } else {
          iovec l{mine, half}, r{sh->send, half};
          process_vm_readv(sh->pid[0], &l, 1, &r, 1, 0);
        }
        rdy[me].v.store(seq, std::memory_order_release);
        waitfor(rdy[1 - me].v, seq);
      } else if (v == "split") {
        const size_t half = B / 2;
        if (me == 0) {
          sh->go[0].v.store(seq, std::memory_order_release);
          memcpy(slot, mine, half);
          rdy[0].v.store(seq, std::memory_order_release);
          waitfor(sh->done.v, seq);
        } else {
          waitfor(sh->go[0].v, seq);
          iovec l{mine + half, B - half}, r{(char*)sh->send + half, B - half};
          process_vm_readv(sh->pid[0], &l, 1, &r, 1, 0);
          waitfor(rdy[0].v, seq);
          memcpy(mine, slot, half);
          sh->done.v.store(seq, std::memory_order_release);
        }
      }
    }
    // settle: the peer's last call is part of the batch
    if (me == 1) sh->go[1].v.store(seq);
    else waitfor(sh->go[1].v, seq);
    const double us =
        std::chrono::duration<double, std::micro>(clk::now() - t0).count() - fresh_us;
    sh->us[me] = us / iters;
    sh->start[me].v.store(3 * b + 2);
    waitfor(sh->start[1 - me].v, 3 * b + 2);
    per.push_back(std::max(sh->us[0], sh->us[1]));
    sh->start[me].v.store(3 * b + 3);
    waitfor(sh->start[1 - me].v, 3 * b + 3);
  }
  fprintf(stderr, "rank %d copies %.2f us a call\n", me, copy_us / (iters * batches));
  if (me == 1) return 0;
  wait(nullptr);
  std::sort(per.begin(), per.end());
  if (mine[0] == 0) puts("");
  printf("%zu %s depth %d chunk %zu fresh %d: median %.2f us (min %.2f max %.2f)\n", B, v.c_str(),
         depth, chunk, fresh, per[per.size() / 2], per.front(), per.back());
}
