// Symmetric exchange of one cache line each way between CPUs 0 and 1 (as a pushed 4 B allreduce
// on two members): each thread stores sequence k into the other's line and waits for k in its
// own; slots alternate by parity as the push inbox's do. Prints ns per exchange, and the
// ping-pong round trip in the same run.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <pthread.h>
#include <sched.h>
#include <thread>
static void pin(int cpu) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s); pthread_setaffinity_np(pthread_self(), sizeof s, &s); }
struct alignas(64) Line { std::atomic<uint64_t> v{0}; char pad[56]; };
Line inbox[2][2];  // inbox[receiver][parity]
Line pp;
int main() {
  const int iters = 1000000;
  for (int round = 0; round < 5; ++round) {
    for (auto& r : inbox) for (auto& l : r) l.v = 0;
    auto run = [&](int me) {
      pin(me);
      const int peer = 1 - me;
      for (uint64_t k = 1; k <= iters; ++k) {
        inbox[peer][k & 1].v.store(k, std::memory_order_release);
        while (inbox[me][k & 1].v.load(std::memory_order_acquire) < k) {}
      }
    };
    std::thread t(run, 1);
    auto t0 = std::chrono::steady_clock::now();
    run(0);
    auto t1 = std::chrono::steady_clock::now();
    t.join();
    pp.v = 0;
    std::thread partner([&] { pin(1); for (uint64_t e = 1; e < 2 * 200000; e += 2) { while (pp.v.load(std::memory_order_acquire) != e) {} pp.v.store(e + 1, std::memory_order_release); } });
    pin(0);
    auto t2 = std::chrono::steady_clock::now();
    for (uint64_t n = 1; n < 2 * 200000; n += 2) { pp.v.store(n, std::memory_order_release); while (pp.v.load(std::memory_order_acquire) != n + 1) {} }
    auto t3 = std::chrono::steady_clock::now();
    partner.join();
    printf("exchange %.0f ns, ping-pong round trip %.0f ns\n",
           std::chrono::duration<double, std::nano>(t1 - t0).count() / iters,
           std::chrono::duration<double, std::nano>(t3 - t2).count() / 200000);
  }
}
