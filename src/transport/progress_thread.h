// ProgressThread: the opt-in background progress of RANKFLOW_PROGRESS=thread. While any
// non-blocking operation is registered it keeps calling into UCX and advancing those
// operations, so that they complete while the program computes or sits inside its own MPI
// calls; with nothing registered it only wakes every millisecond to progress UCX once.
//
// Owns: one thread and the driver lock. Whoever advances a registered operation holds the
// lock: this thread, and every Communicator call (through Guard), so an operation is never
// advanced by two threads at once. UCX itself runs in UCS_THREAD_MODE_MULTI when the thread
// exists (Context chooses it), so other threads' raw UCX calls stay safe.
// Threads: its own; add() and Guard from any thread.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rankflow::transport {

class ProgressThread {
 public:
  // `progress` advances the transport once (Context::progress).
  explicit ProgressThread(std::function<void()> progress);
  ~ProgressThread();
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;

  // Registers an operation: `step()` advances it once without blocking and returns true when it
  // is complete (it is then dropped). Called with the driver lock held, by this thread.
  void add(std::function<bool()> step);

  // Holds the driver lock for the scope (no-op for a null thread: progress by the caller).
  class Guard {
   public:
    explicit Guard(ProgressThread* thread) : thread_(thread) {
      if (thread_ != nullptr) thread_->mutex_.lock();
    }
    ~Guard() {
      if (thread_ != nullptr) thread_->mutex_.unlock();
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    ProgressThread* thread_;
  };

 private:
  void loop();
  bool step_all();  // with the lock held: true when every operation completed

  std::function<void()> progress_;
  // The driver lock; also guards steps_ and stop_. Recursive: a step may drop the last handle
  // of a communicator, whose close() takes the lock again on this thread.
  std::recursive_mutex mutex_;
  std::condition_variable_any wake_;
  std::vector<std::function<bool()>> steps_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace rankflow::transport
