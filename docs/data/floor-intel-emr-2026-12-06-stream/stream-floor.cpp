// A stream of small messages between two processes on cores 0 and 1: the shape of rankflow's
// streamed broadcast (AckedStream). STRIDE bytes a slot (16: four to a line; 64: one), 256 slots,
// an acknowledgement every 64. Each side spends WORK ns-ish of its own between messages (the call).
// PAUSES: pauses between two reads of a flag not yet set.
// Prints each side's work alone (ns a message, before the stream starts) and the peer's time a
// message over two million messages.
#include "../ab-intel-emr-2026-12-06-streamed/floor-common.h"
static inline void work(int w) { for (volatile int i = 0; i < w; ++i) {} }
int main(int argc, char** argv) {
  const size_t stride = strtoull(argv[1], 0, 0);
  const int w_root = atoi(argv[2]), w_peer = atoi(argv[3]), pauses = atoi(argv[4]);
  const long n = 2000000, slots = 256, ack_every = 64;
  char* region = (char*)shared_zeroed(slots * stride + 4096);
  auto* ack = (std::atomic<long>*)(region + slots * stride + 2048);
  auto* go = (std::atomic<long>*)(region + slots * stride + 1024);
  const int me = fork_pinned();
  { auto a = clk::now(); for (long k = 0; k < 200000; ++k) work(me ? w_peer : w_root); printf("%s work alone %.1f ns\n", me ? "peer" : "root", std::chrono::duration<double, std::nano>(clk::now() - a).count() / 200000); }
  go->fetch_add(1); waitfor(*go, 2);
  auto t0 = clk::now();
  int payload = 7, out = 0;
  if (me == 0) {
    long credit = slots;
    for (long k = 1; k <= n; ++k) {
      work(w_root);
      if (k > credit) { while (ack->load(std::memory_order_acquire) + slots < k) _mm_pause(); credit = ack->load() + slots; }
      char* s = region + ((k - 1) & (slots - 1)) * stride;
      memcpy(s + 8, &payload, 4);
      ((std::atomic<long>*)s)->store(k, std::memory_order_release);
    }
  } else {
    for (long k = 1; k <= n; ++k) {
      work(w_peer);
      auto* f = (std::atomic<long>*)(region + ((k - 1) & (slots - 1)) * stride);
      while (f->load(std::memory_order_acquire) != k) for (int p = 0; p < pauses; ++p) _mm_pause();
      memcpy(&out, (char*)f + 8, 4);
      if ((k & (ack_every - 1)) == 0) ack->store(k, std::memory_order_release);
    }
  }
  double ns = std::chrono::duration<double, std::nano>(clk::now() - t0).count() / n;
  if (me) printf("%s stride %zu work %d/%d pauses %d: %.1f ns a message\n", me ? "peer" : "root", stride, w_root, w_peer, pauses, ns);
  if (me) return 0;
  wait(nullptr);
}
