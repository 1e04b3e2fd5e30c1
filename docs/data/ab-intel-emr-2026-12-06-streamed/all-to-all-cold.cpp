// Two-process all_to_all (2 blocks of B/2 per rank) of plain buffers, no library, from settled
// caches as rankflow-bench runs 16 MiB+: settle (read SETTLE MiB) and rewrite the input, untimed;
// each call timed alone (slower rank).
//   kw   : own block streamed into recv; the peer's block written into its recv with
//          process_vm_writev (rankflow's cross-memory exchange on the Xeon), chunk by chunk
//   ring : own block streamed; the peer's block copied chunk by chunk into my slot of a shared
//          ring, flagged; the peer streams it out into its recv and flags it consumed
// ./a2acold BYTES VARIANT CHUNK [DEPTH]
#include "floor-common.h"
struct Shared { Flag ready[2], consumed[2], done[2], start[2]; char* send[2]; char* recv[2]; pid_t pid[2]; double us[2]; };
int main(int argc, char** argv) {
  const size_t B = strtoull(argv[1], 0, 0);
  const std::string v = argv[2];
  const size_t chunk = strtoull(argv[3], 0, 0);
  const int depth = argc > 4 ? atoi(argv[4]) : 4;
  const size_t settle_mib = getenv("SETTLE") ? strtoull(getenv("SETTLE"), 0, 0) : 600;
  const int calls = getenv("CALLS") ? atoi(getenv("CALLS")) : 9;
  auto* sh = (Shared*)mmap(0, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  char* ring = (char*)mmap(0, 2 * depth * chunk, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  memset(ring, 0, 2 * depth * chunk);
  const int me = fork() == 0 ? 1 : 0, peer = 1 - me;
  pin(me);
  const size_t half = B / 2;
  std::vector<char> sendv(B + 4096), recvv(B + 4096, 0);
  char* send = sendv.data() + (64 - (uintptr_t)sendv.data() % 64);
  char* recv = recvv.data() + (64 - (uintptr_t)recvv.data() % 64) + 33 * 64;
  std::vector<char> settle(settle_mib << 20, 1);
  sh->send[me] = send; sh->recv[me] = recv; sh->pid[me] = getpid();
  while (!sh->pid[peer]) _mm_pause();
  char* my_ring = ring + me * depth * chunk;
  char* peer_ring = ring + peer * depth * chunk;
  long seq = 0, k = 0;
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
      ntcopy(recv + me * half, send + me * half, half);
    } else {  // ring
      for (size_t first = 0; first < half; first += chunk, ++k) {
        const size_t c = std::min(chunk, half - first);
        char* slot = my_ring + (k % depth) * chunk;
        waitfor(sh->consumed[peer].v, k + 1 - depth);
        memcpy(slot, send + peer * half + first, c);
        sh->ready[me].v.store(k + 1, std::memory_order_release);
        // own block a chunk at a time between (keeps both cores busy)
        ntcopy(recv + me * half + first, send + me * half + first, c);
        waitfor(sh->ready[peer].v, k + 1);
        ntcopy(recv + peer * half + first, peer_ring + (k % depth) * chunk, c);
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
  for (size_t i = 0; i < B; i += 4096 * 7) {
    const char want = (char)((i / half) * 2 + me + calls - 1);
    if (recv[i - i % 64] != want) { fprintf(stderr, "rank %d: recv[%zu] = %d want %d\n", me, i, recv[i - i % 64], want); return 1; }
  }
  if (me == 1) return 0;
  wait(nullptr);
  std::sort(per.begin(), per.end());
  printf("%zu %s chunk %zu depth %d: median %.0f us (min %.0f max %.0f)\n", B, v.c_str(), chunk, depth,
         per[per.size() / 2], per.front(), per.back());
}
