// DriverLock: the driver role of the Dispatcher, a spin lock whose release is a plain store.
// The driving thread's last act is usually a post: stores into lines the chip's core owns. A
// locked instruction right after them (std::mutex's unlock, an atomic increment) waits until
// those lines arrive; a release store does not, so a submit returns without that stall. Waiting
// for it spins briefly, then yields (the holder is another thread of this process, often on
// the same core). Any thread.
#pragma once

#include <atomic>

#include "transport/progress.h"

namespace rankflow::runtime {

class DriverLock {
 public:
  bool try_lock() {
    return !held_.load(std::memory_order_relaxed) &&
           !held_.exchange(true, std::memory_order_acquire);
  }
  void lock() {
    transport::Backoff backoff;
    while (!try_lock())
      backoff.pause();
  }
  void unlock() { held_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> held_{false};
};

// A count that only feeds a heuristic (how often body threads drove): a plain increment, no
// lock prefix; two threads bumping at once may lose one.
inline void bump(std::atomic<uint64_t>& counter) {
  counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

}  // namespace rankflow::runtime
