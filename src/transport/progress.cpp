// Backoff (see progress.h). Runs on the waiting thread.
#include "transport/progress.h"

#include <sched.h>

#include <cstdio>
#include <thread>

namespace rankflow::transport {

namespace {
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}
}  // namespace

void Backoff::pause() {
  ++polls_;
  if (polls_ < kSpinPolls) {
    cpu_relax();
    return;
  }
  if (polls_ == kSpinPolls) {
    idle_since_ = std::chrono::steady_clock::now();
    sleep_ = kMinSleep;
    sleeping_ = false;
  }
  if (!sleeping_) {
    // Check the clock only now and then: sched_yield is cheap when nobody else wants the core.
    const bool idle_long = (polls_ & 255) == 0 &&
                           std::chrono::steady_clock::now() - idle_since_ >= kYieldFor;
    if (!idle_long) {
      sched_yield();
      return;
    }
    sleeping_ = true;
  }
  std::this_thread::sleep_for(sleep_);
  sleep_ = std::min(sleep_ * 2, kMaxSleep);
}

std::string format_seconds(std::chrono::nanoseconds duration) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g s", std::chrono::duration<double>(duration).count());
  return text;
}

}  // namespace rankflow::transport
