// ProgressThread (see progress_thread.h). Runs its own thread.
#include "transport/progress_thread.h"

#include <chrono>
#include <utility>

#include "common/log.h"
#include "transport/progress.h"

namespace rankflow::transport {

namespace {
// With nothing registered: how often UCX is still progressed (a peer's stray transfer lands).
constexpr std::chrono::milliseconds kIdleTick{1};
}  // namespace

ProgressThread::ProgressThread(std::function<void()> progress)
    : progress_(std::move(progress)), thread_([this] { loop(); }) {}

ProgressThread::~ProgressThread() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void ProgressThread::add(std::function<bool()> step) {
  steps_.push_back(std::move(step));  // the caller holds the driver lock (Guard)
  wake_.notify_one();
}

bool ProgressThread::step_all() {
  progress_();
  for (size_t i = 0; i < steps_.size();) {
    bool complete = true;
    try {
      complete = steps_[i]();
    } catch (const std::exception& e) {  // the step keeps its error for the caller's wait
      log::warn("progress thread: ", e.what());
    }
    if (complete) {
      steps_[i] = std::move(steps_.back());
      steps_.pop_back();
    } else {
      ++i;
    }
  }
  return steps_.empty();
}

// Busy while operations are registered: one pass under the lock, then the same back-off as
// every wait (spin briefly, then yield, then short sleeps), so a rank sharing its core with
// the peer it waits for lets that peer run. Idle: a tick every kIdleTick, or a wake from add().
void ProgressThread::loop() {
  std::unique_lock lock(mutex_);
  Backoff backoff;
  while (!stop_) {
    if (steps_.empty()) {
      progress_();
      wake_.wait_for(lock, kIdleTick);
      backoff = Backoff();
      continue;
    }
    if (step_all()) continue;
    lock.unlock();
    backoff.pause();
    lock.lock();
  }
}

}  // namespace rankflow::transport
