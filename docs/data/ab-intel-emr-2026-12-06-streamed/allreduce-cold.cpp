// Two-process f32-sum allreduce of plain buffers, no library, as rankflow-bench times it from
// 16 MiB: before each call both ranks settle their caches (read SETTLE MiB, untimed) and rewrite
// their input (one store a line, untimed); each call is timed alone (slower rank).
//   read  : rankflow's reading twophase: per chunk of my half, process_vm_readv the peer's send
//           into my recv, add my send there, process_vm_writev it into the peer's recv; done flag
//   win   : per chunk of my half, process_vm_readv the peer's send into my slot of a shared
//           ring (DEPTH slots), add my send there, stream it into my recv, flag; the peer
//           streams it from my slot into its recv and flags it consumed
//   whole : every member sums the whole message: per chunk, process_vm_readv the peer's send
//           into a private scratch, add my send there, stream it into my recv; done flag
// ./arcold BYTES VARIANT CHUNK [DEPTH]
#include "floor-common.h"
static double T[5];
static double us(clk::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }
struct Shared { Flag ready[2], consumed[2], done[2], start[2], staged[2]; float* send[2]; float* recv[2]; pid_t pid[2]; double us[2]; };
static void add2(float* out, const float* a, const float* b, size_t n) { for (size_t i = 0; i < n; ++i) out[i] = a[i] + b[i]; }
// slot = a + b, and the same streamed into nt (32-byte aligned nt)
static void add_dual(float* slot, float* nt, const float* a, const float* b, size_t n) {
  size_t i = 0;
  for (; i < n && ((uintptr_t)(nt + i) % 32); ++i) nt[i] = slot[i] = a[i] + b[i];
  for (; i + 8 <= n; i += 8) {
    __m256 x = _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
    _mm256_storeu_ps(slot + i, x);
    _mm256_stream_ps(nt + i, x);
  }
  for (; i < n; ++i) nt[i] = slot[i] = a[i] + b[i];
  _mm_sfence();
}
int main(int argc, char** argv) {
  const FloorArgs args = floor_args(argc, argv);
  const size_t B = args.bytes, chunk = args.chunk, settle_mib = args.settle_mib;
  const std::string& v = args.variant;
  const int depth = args.depth, calls = args.calls;
  auto* sh = (Shared*)shared_zeroed(sizeof(Shared));
  char* ring = (char*)shared_zeroed(4 * depth * chunk);
  const int me = fork_pinned(), peer = 1 - me;
  const size_t n = B / 4, cn = chunk / 4, half = n / 2;
  std::vector<float> send(n + 16), recv(n + 16, 0.f), scratch(cn + 16);
  std::vector<char> settle(settle_mib << 20, 1);
  sh->send[me] = send.data(); sh->recv[me] = recv.data(); sh->pid[me] = getpid();
  while (!sh->pid[peer]) _mm_pause();
  float* my_ring = (float*)(ring + me * 2 * depth * chunk);
  float* peer_ring = (float*)(ring + peer * 2 * depth * chunk);
  const size_t mine_at = me * half, theirs_at = peer * half;
  long seq = 0, k = 0;  // k: chunks so far (ring position), same on both
  std::vector<double> per;
  for (int call = 0; call < calls; ++call) {
    ++seq;
    long sum = 0; for (size_t i = 0; i < settle.size(); i += 64) sum += settle[i];
    asm volatile("" ::"r"(sum));
    for (size_t i = 0; i < n; i += 16) send[i] = (float)(me + 1);
    if (call == 0) for (size_t i = 0; i < n; ++i) send[i] = (float)(me + 1);
    sh->start[me].v.store(3 * seq); waitfor(sh->start[peer].v, 3 * seq);
    auto t0 = clk::now();
    if (v == "read") {
      for (size_t first = 0; first < half; first += cn) {
        const size_t c = std::min(cn, half - first);
        float* out = recv.data() + mine_at + first;
        readv(sh->pid[peer], out, sh->send[peer] + mine_at + first, c * 4);
        add2(out, out, send.data() + mine_at + first, c);
        writev(sh->pid[peer], sh->recv[peer] + mine_at + first, out, c * 4);
      }
    } else if (v == "win") {
      for (size_t first = 0; first < half; first += cn, ++k) {
        const size_t c = std::min(cn, half - first);
        float* slot = my_ring + (k % depth) * cn;
        waitfor(sh->consumed[peer].v, k + 1 - depth);
        auto a0 = clk::now();
        readv(sh->pid[peer], slot, sh->send[peer] + mine_at + first, c * 4);
        auto a1 = clk::now();
        add2(slot, slot, send.data() + mine_at + first, c);
        auto a2 = clk::now();
        ntcopy((char*)(recv.data() + mine_at + first), (const char*)slot, c * 4);
        auto a3 = clk::now();
        sh->ready[me].v.store(k + 1, std::memory_order_release);
        waitfor(sh->ready[peer].v, k + 1);
        auto a4 = clk::now();
        ntcopy((char*)(recv.data() + theirs_at + first), (const char*)(peer_ring + (k % depth) * cn), c * 4);
        auto a5 = clk::now();
        if (call > 0) { T[0] += us(a1 - a0); T[1] += us(a2 - a1); T[2] += us(a3 - a2); T[3] += us(a4 - a3); T[4] += us(a5 - a4); }
        sh->consumed[me].v.store(k + 1, std::memory_order_release);
      }
    } else if (v == "ring") {
      float* staged_ring = my_ring;                  // depth slots of cn
      float* reduced_ring = my_ring + depth * cn;    // the ring has 2 * depth slots per member
      float* peer_staged = peer_ring, *peer_reduced = peer_ring + depth * cn;
      for (size_t first = 0; first < half; first += cn, ++k) {
        const size_t c = std::min(cn, half - first), at = (k % depth) * cn;
        waitfor(sh->consumed[peer].v, k + 1 - depth);
        auto a0 = clk::now();
        memcpy(staged_ring + at, send.data() + theirs_at + first, c * 4);
        sh->staged[me].v.store(k + 1, std::memory_order_release);
        waitfor(sh->staged[peer].v, k + 1);
        auto a1 = clk::now();
        add_dual(reduced_ring + at, recv.data() + mine_at + first, send.data() + mine_at + first, peer_staged + at, c);
        sh->ready[me].v.store(k + 1, std::memory_order_release);
        auto a2 = clk::now();
        waitfor(sh->ready[peer].v, k + 1);
        auto a3 = clk::now();
        ntcopy((char*)(recv.data() + theirs_at + first), (const char*)(peer_reduced + at), c * 4);
        sh->consumed[me].v.store(k + 1, std::memory_order_release);
        auto a4 = clk::now();
        if (call > 0) { T[0] += us(a1 - a0); T[1] += us(a2 - a1); T[3] += us(a3 - a2); T[4] += us(a4 - a3); }
      }
    } else {  // whole
      for (size_t first = 0; first < n; first += cn) {
        const size_t c = std::min(cn, n - first);
        readv(sh->pid[peer], scratch.data(), sh->send[peer] + first, c * 4);
        add2(scratch.data(), scratch.data(), send.data() + first, c);
        ntcopy((char*)(recv.data() + first), (const char*)scratch.data(), c * 4);
      }
    }
    sh->done[me].v.store(seq, std::memory_order_release);
    waitfor(sh->done[peer].v, seq);
    sh->us[me] = std::chrono::duration<double, std::micro>(clk::now() - t0).count();
    sh->start[me].v.store(3 * seq + 1); waitfor(sh->start[peer].v, 3 * seq + 1);
    if (call > 0) per.push_back(std::max(sh->us[0], sh->us[1]));
    sh->start[me].v.store(3 * seq + 2); waitfor(sh->start[peer].v, 3 * seq + 2);
  }
  for (size_t i = 0; i < n; i += 4099)
    if (recv[i] != 3.0f) { fprintf(stderr, "rank %d: recv[%zu] = %f\n", me, i, recv[i]); return 1; }
  if (v != "read" && v != "whole") fprintf(stderr, "rank %d per call: readv %.0f add %.0f nt-mine %.0f wait %.0f nt-peer %.0f\n", me, T[0]/(calls-1), T[1]/(calls-1), T[2]/(calls-1), T[3]/(calls-1), T[4]/(calls-1));
  if (me == 1) return 0;
  wait(nullptr);
  std::sort(per.begin(), per.end());
  printf("%zu %s chunk %zu depth %d: median %.0f us (min %.0f max %.0f)\n", B, v.c_str(), chunk, depth,
         per[per.size() / 2], per.front(), per.back());
}
