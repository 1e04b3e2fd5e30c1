// Two-process all_to_all (2 blocks of B/2 per rank) of plain buffers, no library. It replaces
// ../ab-intel-emr-2026-12-06-streamed/all-to-all-cold.cpp (variants kw and ring, whose
// all-to-all-cold.txt there it reproduces with CHUNK 524288) and adds the others. Each call:
// settle (read SETTLE MiB, default 600; SETTLE=0 for the warm sizes the bench does not settle) and rewrite
// the input, untimed; then the call, timed alone (slower rank).
//   kw      : own block streamed into recv; the peer's block written into its recv with
//             process_vm_writev, chunk by chunk (rankflow's cross-memory exchange on the Xeon)
//   kr      : the same, the peer's block read from its send with process_vm_readv, chunks of
//             both blocks alternating
//   rb      : as kr, each chunk read into a hot bounce buffer, then streamed into recv
//   ring    : own block streamed; the peer's block copied chunk by chunk into my slot of a shared
//             ring, flagged; the peer streams it out into its recv and flags it consumed
//             (WNT=1: the slot written with non-temporal stores; RMC=1: read out with memcpy)
//   local   : no exchange: each process streams all of send into recv (the floor of one copy
//             a byte on both cores at once); localmc: the same with memcpy
// THP=1 asks for huge pages on send and recv (madvise). SPLIT=1 (kw) prints member 0's kernel
// and own-block times. The result is checked for every variant but local*.
// g++ -O2 -mavx2 -pthread all-to-all-variants.cpp -o a2a; ./a2a BYTES VARIANT CHUNK [DEPTH]
#include "../ab-intel-emr-2026-12-06-streamed/floor-common.h"
struct Shared { Flag ready[2], consumed[2], done[2], start[2]; char* send[2]; char* recv[2]; pid_t pid[2]; double us[2]; };
int main(int argc, char** argv) {
  const FloorArgs args = floor_args(argc, argv);
  const size_t B = args.bytes, chunk = args.chunk, settle_mib = args.settle_mib;
  const std::string& v = args.variant;
  const int depth = args.depth, calls = args.calls;
  auto* sh = (Shared*)shared_zeroed(sizeof(Shared));
  char* ring = (char*)shared_zeroed(2 * depth * chunk);
  const int me = fork_pinned(), peer = 1 - me;
  const size_t half = B / 2;
  std::vector<char> sendv(B + 4096), recvv(B + 4096);
  char* send = sendv.data() + (64 - (uintptr_t)sendv.data() % 64);
  char* recv = recvv.data() + (64 - (uintptr_t)recvv.data() % 64) + 33 * 64;
  if (getenv("THP")) { for (char* p : {sendv.data(), recvv.data()}) { uintptr_t a = ((uintptr_t)p + (2<<20) - 1) & ~uintptr_t((2<<20) - 1); madvise((void*)a, B - (2<<20), MADV_HUGEPAGE); } }
  std::vector<char> settle(settle_mib << 20, 1);
  sh->send[me] = send; sh->recv[me] = recv; sh->pid[me] = getpid();
  while (!sh->pid[peer]) _mm_pause();
  char* my_ring = ring + me * depth * chunk;
  char* peer_ring = ring + peer * depth * chunk;
  long seq = 0, k = 0;
  std::vector<char> bounce(chunk + 4096, 1);
  std::vector<double> per;
  for (int call = 0; call < calls; ++call) {
    ++seq;
    long sum = 0; for (size_t i = 0; i < settle.size(); i += 64) sum += settle[i];
    asm volatile("" ::"r"(sum));
    for (size_t i = 0; i < B; i += 64) send[i] = (char)(me * 2 + i / half + call);
    sh->start[me].v.store(3 * seq); waitfor(sh->start[peer].v, 3 * seq);
    auto t0 = clk::now();
    // my block for the peer: send[peer * half ...] -> peer's recv[me * half ...]
    if (v == "kw") {
      for (size_t first = 0; first < half; first += chunk)
        writev(sh->pid[peer], sh->recv[peer] + me * half + first, send + peer * half + first, std::min(chunk, half - first));
      auto t1 = clk::now();
      ntcopy(recv + me * half, send + me * half, half);
      auto t2 = clk::now();
      if (me == 0 && getenv("SPLIT")) fprintf(stderr, "kernel %.0f nt %.0f\n", std::chrono::duration<double, std::micro>(t1 - t0).count(), std::chrono::duration<double, std::micro>(t2 - t1).count());
    } else if (v == "local") {  // no exchange at all: the floor of one copy per byte
      ntcopy(recv, send, B);
    } else if (v == "localmc") {
      memcpy(recv, send, B);
    } else if (v == "kr" || v == "rb") {
      // the peer's block for me: peer's send[me * half ...] -> my recv[peer * half ...]
      for (size_t first = 0; first < half; first += chunk) {
        const size_t c = std::min(chunk, half - first);
        if (v == "kr") readv(sh->pid[peer], recv + peer * half + first, sh->send[peer] + me * half + first, c);
        else { readv(sh->pid[peer], bounce.data(), sh->send[peer] + me * half + first, c); ntcopy(recv + peer * half + first, bounce.data(), c); }
        ntcopy(recv + me * half + first, send + me * half + first, c);
      }
    } else {  // ring
      for (size_t first = 0; first < half; first += chunk, ++k) {
        const size_t c = std::min(chunk, half - first);
        char* slot = my_ring + (k % depth) * chunk;
        waitfor(sh->consumed[peer].v, k + 1 - depth);
        if (getenv("WNT")) ntcopy(slot, send + peer * half + first, c); else memcpy(slot, send + peer * half + first, c);
        sh->ready[me].v.store(k + 1, std::memory_order_release);
        // own block a chunk at a time between (keeps both cores busy)
        ntcopy(recv + me * half + first, send + me * half + first, c);
        waitfor(sh->ready[peer].v, k + 1);
        if (getenv("RMC")) memcpy(recv + peer * half + first, peer_ring + (k % depth) * chunk, c); else ntcopy(recv + peer * half + first, peer_ring + (k % depth) * chunk, c);
        sh->consumed[me].v.store(k + 1, std::memory_order_release);
      }
    }
    sh->done[me].v.store(seq, std::memory_order_release);
    waitfor(sh->done[peer].v, seq);
    sh->us[me] = std::chrono::duration<double, std::micro>(clk::now() - t0).count();
    sh->start[me].v.store(3 * seq + 1); waitfor(sh->start[peer].v, 3 * seq + 1);
    if (call > 0) per.push_back(std::max(sh->us[0], sh->us[1]));
    sh->start[me].v.store(3 * seq + 2); waitfor(sh->start[peer].v, 3 * seq + 2);
  }
  for (size_t i = 0; v.rfind("local", 0) != 0 && i < B; i += 4096 * 7) {
    const char want = (char)((i / half) * 2 + me + calls - 1);
    if (recv[i - i % 64] != want) { fprintf(stderr, "rank %d: recv[%zu] = %d want %d\n", me, i, recv[i - i % 64], want); return 1; }
  }
  if (me == 1) return 0;
  wait(nullptr);
  std::sort(per.begin(), per.end());
  printf("%zu %s chunk %zu depth %d: median %.0f us (min %.0f max %.0f)\n", B, v.c_str(), chunk, depth,
         per[per.size() / 2], per.front(), per.back());
}
