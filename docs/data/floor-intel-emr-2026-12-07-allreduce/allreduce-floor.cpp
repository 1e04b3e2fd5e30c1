// The floor of a two-process allreduce (f32 sum) of plain (private) buffers, without rankflow or
// MPI, timed as rankflow-bench times it: batches of back-to-back calls, the slower rank's time
// per call. Each rank owns half the message (rank 0 the first). Variants:
//   staged : rankflow's twophase on plain buffers, per segment of SEG bytes: stage the peer's
//            half of the segment into shared memory, flag; reduce my half (my send + the peer's
//            staging) into my recv; write it into the peer's recv with process_vm_writev; flag
//   read2  : as read, the peer's chunk read into a scratch buffer of SEG bytes, then
//            recv = my send + scratch (what an in-place call needs)
//   read   : per chunk of SEG bytes of my half: process_vm_readv the peer's send into my recv,
//            add my send into it, process_vm_writev it into the peer's recv; one closing flag
//   readnt : as read2, the sum made in the scratch chunk, written to the peer from there and
//            copied into my recv with non-temporal stores (added 2026-12-06 13:00 UTC,
//            docs/data/ab-intel-emr-2026-12-06-kept/)
//   full   : (added 2026-12-07) every member reads the peer's whole input, chunk by chunk,
//            into its recv and adds its own there: one kernel copy a member, no hand-back
//   fullw  : as full, each member writing its input into the peer's recv instead
// FRESH=1: every call starts from freshly written input (one store a line, untimed).
// HUGE=1: (added 2026-12-07) send and recv on 2 MiB pages (madvise MADV_HUGEPAGE).
// SYNC=1: (added 2026-12-07) both ranks start each call together after a flag barrier, which is
//         not timed, as rankflow-bench times its calls from 64 KiB.
// g++ -O3 -std=c++20 -mavx2 allreduce-floor.cpp -o af
// ./af BYTES staged|read|read2|readnt|full|fullw SEG
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
struct Shared {
  Flag staged[2], reduced[2], done[2], start[2], call[2];
  float* send[2];
  float* recv[2];
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
static void add2(float* out, const float* a, const float* b, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
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
int main(int argc, char** argv) {
  const size_t B = strtoull(argv[1], 0, 0);
  const std::string v = argv[2];
  const size_t seg = strtoull(argv[3], 0, 0);
  const bool fresh = getenv("FRESH") && atoi(getenv("FRESH"));
  const bool sync = getenv("SYNC") && atoi(getenv("SYNC"));
  long calls = 0;
  const int batches = 9;
  const int iters = std::max<int>(4, (int)((256u << 20) / B));
  auto* sh = (Shared*)mmap(0, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                           -1, 0);
  char* window = (char*)mmap(0, 2 * B, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  memset(window, 0, 2 * B);
  const int me = fork() == 0 ? 1 : 0, peer = 1 - me;
  pin(me);
  const size_t n = B / 4;
  std::vector<float> sendv, recvv, scratch(seg / 4 + 16);
  float* sendp;
  float* recvp;
  if (getenv("HUGE") && atoi(getenv("HUGE"))) {  // on 2 MiB pages (transparent huge pages, madvise before first touch)
    const size_t bytes = ((n + 16) * 4 + (2 << 20) - 1) / (2 << 20) * (2 << 20);
    sendp = (float*)aligned_alloc(2 << 20, bytes);
    recvp = (float*)aligned_alloc(2 << 20, bytes);
    madvise(sendp, bytes, MADV_HUGEPAGE);
    madvise(recvp, bytes, MADV_HUGEPAGE);
    memset(sendp, 0, bytes);
    memset(recvp, 0, bytes);
  } else {
    sendv.resize(n + 16);
    recvv.resize(n + 16);
    sendp = sendv.data();
    recvp = recvv.data();
  }
  struct Array {
    float* p;
    float* data() { return p; }
    float& operator[](size_t i) { return p[i]; }
  } send{sendp}, recv{recvp};
  for (size_t i = 0; i < n; ++i) send[i] = (float)(me + 1);
  sh->send[me] = send.data();
  sh->recv[me] = recv.data();
  sh->pid[me] = getpid();
  while (!sh->pid[peer]) _mm_pause();
  float* my_window = (float*)(window + me * B);
  float* peer_window = (float*)(window + peer * B);
  long seq = 0;
  std::vector<double> per;
  const size_t half = n / 2, segn = seg / 4;
  const size_t mine_at = me * half, theirs_at = peer * half;
  for (int b = 0; b < batches; ++b) {
    sh->start[me].v.store(3 * b + 1);
    waitfor(sh->start[peer].v, 3 * b + 1);
    double fresh_us = 0;
    auto t0 = clk::now();
    for (int i = 0; i < iters; ++i) {
      ++seq;
      if (fresh) {
        auto f0 = clk::now();
        for (size_t k = 0; k < n; k += 16) send[k] = (float)(me + 1);
        fresh_us += std::chrono::duration<double, std::micro>(clk::now() - f0).count();
      }
      if (sync) {  // both start the call together, the wait not timed (as rankflow-bench)
        auto f0 = clk::now();
        ++calls;
        sh->call[me].v.store(calls, std::memory_order_release);
        waitfor(sh->call[peer].v, calls);
        fresh_us += std::chrono::duration<double, std::micro>(clk::now() - f0).count();
      }
      if (v == "staged") {
        const size_t segments = half / segn;  // per half: segment s covers [s*segn) of each half
        for (size_t s = 0; s < segments; ++s) {
          const long step = (seq - 1) * (long)segments + (long)s + 1;
          // the peer's half of this segment of my send, into my window (same offsets)
          memcpy(my_window + theirs_at + s * segn, send.data() + theirs_at + s * segn, seg);
          sh->staged[me].v.store(step, std::memory_order_release);
          waitfor(sh->staged[peer].v, step);
          float* out = recv.data() + mine_at + s * segn;
          add2(out, send.data() + mine_at + s * segn, peer_window + mine_at + s * segn, segn);
          writev(sh->pid[peer], sh->recv[peer] + mine_at + s * segn, out, seg);
          sh->reduced[me].v.store(step, std::memory_order_release);
          waitfor(sh->reduced[peer].v, step);
        }
      } else if (v == "full" || v == "fullw") {  // every member reduces the whole message
        for (size_t first = 0; first < n; first += segn) {
          const size_t count = std::min(segn, n - first);
          float* out = recv.data() + first;
          if (v == "full") {
            readv(sh->pid[peer], out, sh->send[peer] + first, count * 4);
          } else {  // the peer's part arrives in my recv by its own writev
            writev(sh->pid[peer], sh->recv[peer] + first, send.data() + first, count * 4);
          }
          if (v == "full") add2(out, out, send.data() + first, count);
        }
        if (v == "fullw") {
          sh->staged[me].v.store(seq, std::memory_order_release);
          waitfor(sh->staged[peer].v, seq);
          add2(recv.data(), recv.data(), send.data(), n);
        }
        sh->done[me].v.store(seq, std::memory_order_release);
        waitfor(sh->done[peer].v, seq);
      } else {  // read
        for (size_t first = 0; first < half; first += segn) {
          const size_t count = std::min(segn, half - first);
          float* out = recv.data() + mine_at + first;
          if (v == "readnt") {  // sum in an L2 scratch, written to the peer, streamed to mine
            readv(sh->pid[peer], scratch.data(), sh->send[peer] + mine_at + first, count * 4);
            add2(scratch.data(), scratch.data(), send.data() + mine_at + first, count);
            writev(sh->pid[peer], sh->recv[peer] + mine_at + first, scratch.data(), count * 4);
            ntcopy((char*)out, (const char*)scratch.data(), count * 4);
            continue;
          }
          if (v == "read2") {
            readv(sh->pid[peer], scratch.data(), sh->send[peer] + mine_at + first, count * 4);
            add2(out, send.data() + mine_at + first, scratch.data(), count);
          } else {
            readv(sh->pid[peer], out, sh->send[peer] + mine_at + first, count * 4);
            add2(out, out, send.data() + mine_at + first, count);
          }
          writev(sh->pid[peer], sh->recv[peer] + mine_at + first, out, count * 4);
        }
        sh->done[me].v.store(seq, std::memory_order_release);
        waitfor(sh->done[peer].v, seq);
      }
    }
    const double us =
        std::chrono::duration<double, std::micro>(clk::now() - t0).count() - fresh_us;
    sh->us[me] = us / iters;
    sh->start[me].v.store(3 * b + 2);
    waitfor(sh->start[peer].v, 3 * b + 2);
    per.push_back(std::max(sh->us[0], sh->us[1]));
    sh->start[me].v.store(3 * b + 3);
    waitfor(sh->start[peer].v, 3 * b + 3);
  }
  for (size_t i = 0; i < n; i += 4099)
    if (recv[i] != 3.0f) {
      fprintf(stderr, "rank %d: recv[%zu] = %f\n", me, i, recv[i]);
      return 1;
    }
  if (me == 1) return 0;
  wait(nullptr);
  std::sort(per.begin(), per.end());
  printf("%zu %s seg %zu fresh %d: median %.1f us (min %.1f max %.1f)\n", B, v.c_str(), seg,
         (int)fresh, per[per.size() / 2], per.front(), per.back());
}
