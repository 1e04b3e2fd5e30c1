// Backoff (see progress.h). Runs on the waiting thread.
#include "transport/progress.h"

#include <sched.h>

#include <cstdio>
#include <thread>

namespace rankflow::transport {
namespace {
thread_local uint32_t t_spin_polls = Backoff::kSpinPolls;
}  // namespace

uint32_t Backoff::hinted_spin_polls() {
  return t_spin_polls;
}

SpinHint::SpinHint(uint32_t spin_polls) : previous_(t_spin_polls) {
  t_spin_polls = spin_polls;
}

SpinHint::~SpinHint() {
  t_spin_polls = previous_;
}

void Backoff::sleep_for(std::chrono::microseconds duration) {
  std::this_thread::sleep_for(duration);
}

void Backoff::yield() {
  sched_yield();
}

void Backoff::start_yielding() {
  idle_since_ = std::chrono::steady_clock::now();
  sleep_ = kMinSleep;
  sleeping_ = false;
}

// Checks the clock only now and then: sched_yield is cheap when nobody else wants the core.
bool Backoff::idle_long_enough() const {
  return (polls_ & 255) == 0 && std::chrono::steady_clock::now() - idle_since_ >= kYieldFor;
}

std::string format_seconds(std::chrono::nanoseconds duration) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g s", std::chrono::duration<double>(duration).count());
  return text;
}

}  // namespace rankflow::transport
