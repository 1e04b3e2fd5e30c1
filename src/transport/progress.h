// Waiting without starving other ranks: Backoff (spin, then yield, then sleep) and wait_until,
// the single loop every blocking wait in rankflow goes through. Runs on whichever thread waits.
//
// Policy, from measurements on this 2-core machine (see docs/transport.md):
//   - spin with a CPU pause for the first kSpinPolls polls (sub-microsecond hand-offs), or only
//     kSharedCoreSpinPolls when the thread waits for a rank bound to its own core (SpinHint);
//   - then sched_yield, so a rank sharing the core with the one it waits for lets it run;
//   - after kYieldFor of continuous idling, sleep with exponential back-off up to kMaxSleep
//     (ranks that wait for the host's next task should not burn a core).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

#include "rankflow/error.h"

namespace rankflow::transport {

class Backoff {
 public:
  static constexpr uint32_t kSpinPolls = 128;
  // For a wait on a rank bound to the same core: it cannot run while this one spins.
  static constexpr uint32_t kSharedCoreSpinPolls = 4;

  // Spins for the calling thread's current SpinHint (kSpinPolls without one).
  Backoff() : spin_polls_(hinted_spin_polls()) {}
  explicit Backoff(uint32_t spin_polls) : spin_polls_(spin_polls) {}
  static uint32_t hinted_spin_polls();
  static constexpr std::chrono::microseconds kYieldFor{2000};
  static constexpr std::chrono::microseconds kMinSleep{20};
  static constexpr std::chrono::microseconds kMaxSleep{1000};

  // Called once after each unsuccessful poll. `idle(duration)` is how this waiter sleeps once
  // it has idled for kYieldFor; it may return early (Context wakes on transport events).
  template <typename Idle>
  void pause(Idle&& idle) {
    ++polls_;
    if (polls_ < spin_polls_) {
      cpu_relax();
      return;
    }
    if (polls_ == spin_polls_) start_yielding();
    if (!sleeping_ && !idle_long_enough()) {
      yield();
      return;
    }
    sleeping_ = true;
    idle(sleep_);
    sleep_ = std::min(sleep_ * 2, kMaxSleep);
  }
  void pause() { pause(sleep_for); }

  uint64_t polls() const { return polls_; }
  bool sleeping() const { return sleeping_; }

  static void sleep_for(std::chrono::microseconds duration);

 private:
  static void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
  }
  static void yield();
  void start_yielding();
  bool idle_long_enough() const;

  uint32_t spin_polls_;
  uint64_t polls_ = 0;
  std::chrono::steady_clock::time_point idle_since_{};
  std::chrono::microseconds sleep_{kMinSleep};
  bool sleeping_ = false;
};

// How long the waits of this thread spin before they yield, while it lives: a thread about to
// wait for a rank that shares its core (Context::shares_core_with) spins only a few polls, so
// that rank gets the core at once.
class SpinHint {
 public:
  explicit SpinHint(uint32_t spin_polls);
  ~SpinHint();
  SpinHint(const SpinHint&) = delete;
  SpinHint& operator=(const SpinHint&) = delete;

 private:
  uint32_t previous_;
};

// Polls `done()` until it returns true. Between polls, calls `progress()` and backs off, using
// `idle` to sleep after a long wait. When `timeout` elapses, throws Timeout with the message
// `describe()` returns (built lazily, so the fast path never formats strings).
template <typename Done, typename Progress, typename Describe, typename Idle>
void wait_until(Done&& done, Progress&& progress, std::chrono::nanoseconds timeout,
                Describe&& describe, Idle&& idle) {
  if (done()) return;
  // The clock starts at the first check (64 polls in, well under a microsecond of spinning), so
  // a short wait never reads it.
  std::chrono::steady_clock::time_point start{};
  Backoff backoff;
  for (;;) {
    progress();
    if (done()) return;
    backoff.pause(idle);
    const bool check_clock = (backoff.polls() & 63) == 0 || backoff.sleeping();
    if (!check_clock) continue;
    const auto now = std::chrono::steady_clock::now();
    if (start == std::chrono::steady_clock::time_point{}) start = now;
    if (now - start > timeout) {
      progress();
      if (done()) return;
      throw Timeout(describe());
    }
  }
}

template <typename Done, typename Progress, typename Describe>
void wait_until(Done&& done, Progress&& progress, std::chrono::nanoseconds timeout,
                Describe&& describe) {
  wait_until(done, progress, timeout, describe, Backoff::sleep_for);
}

// "1.5 s", "120 s": how timeouts are written in diagnostics.
std::string format_seconds(std::chrono::nanoseconds duration);

}  // namespace rankflow::transport
