// HostMemory: the host's tensor arena. host_tensor memory lives until the run ends;
// Orchestrator::alloc intermediates carry a lease and return to the arena as soon as the last
// copy of their Tensor (and of its views) is gone, which, since tasks hold copies of their
// arguments until they finish, is also after their last user finished. Persistent buffers
// (Worker::create_buffer) live across runs until released, and remember the last run that
// named them. Called on the host's main thread (the body, and between runs); leases may be
// released from any thread, through their queue.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "rankflow/tensor.h"
#include "runtime/buffer_ids.h"
#include "runtime/range_allocator.h"

namespace rankflow::runtime {

// Where leases report that nothing names their memory any more; shared with every lease, so a
// tensor that outlives the worker still releases harmlessly.
struct LeaseQueue {
  struct Released {
    uint64_t run;
    uint64_t buffer;
    size_t offset;
    size_t bytes;
  };
  std::mutex mutex;
  std::condition_variable released_cv;
  std::vector<Released> released;
  std::atomic<size_t> pending{0};  // released.size(), read without the lock
};

class HostMemory {
 public:
  HostMemory(std::byte* arena, size_t bytes, BufferIds& ids);

  // Run `run` is being built: what follows belongs to it (earlier runs may still be in flight).
  void begin_run(uint64_t run) { run_ = run; }
  // A zero-filled tensor that lives until its run ends; InvalidArgument when it does not fit.
  Tensor host_tensor(std::vector<size_t> shape, DType dtype, size_t bytes);
  // A leased intermediate, or nothing while the arena is full.
  std::optional<Tensor> try_alloc(std::vector<size_t> shape, DType dtype, size_t bytes);
  // Whether leases came back since the last reclaim (alloc waits for that).
  bool has_released();
  // Returns the memory of released leases; calls forget(buffer) for each buffer it freed.
  template <typename Forget>
  void reclaim(Forget&& forget);
  // After run `run`: its host tensors and intermediates go (persistent buffers stay).
  void end_run(uint64_t run);
  // Whether `buffer` is a host allocation a task of the run being built may name; a persistent
  // buffer is marked as named by that run.
  bool use(uint64_t buffer);
  // An intermediate's scope ended: no later task may name it. False if it is gone already.
  bool end_scope(uint64_t buffer);
  // Frees an intermediate now (its scope ended and its users finished). False if gone already.
  bool release_now(uint64_t buffer);
  // A zero-filled buffer that lives across runs, as a 1-D u8 tensor over all of it;
  // InvalidArgument when it does not fit.
  Tensor create_persistent(size_t bytes);
  // The run that last named a persistent buffer (0: none); InvalidArgument if not live.
  uint64_t last_run_naming(uint64_t buffer) const;
  void release_persistent(uint64_t buffer);
  uint64_t run() const { return run_; }
  size_t used() const { return arena_.used(); }
  size_t capacity() const { return arena_.capacity(); }

 private:
  Tensor place(size_t offset, std::vector<size_t> shape, DType dtype, size_t bytes);
  std::vector<LeaseQueue::Released> take_released();

  std::byte* base_;
  RangeAllocator arena_;
  BufferIds& ids_;
  struct Range {
    size_t offset;
    size_t bytes;
    uint64_t named_in_run = 0;  // persistent buffers: the last run that named it; else its run
    bool scope_ended = false;   // an intermediate whose scope ended
  };
  std::unordered_map<uint64_t, Range> live_;        // host buffers of the runs in flight
  std::unordered_map<uint64_t, Range> persistent_;  // buffers that live across runs
  std::shared_ptr<LeaseQueue> leases_ = std::make_shared<LeaseQueue>();
  uint64_t run_ = 0;  // the run being built
};

template <typename Forget>
void HostMemory::reclaim(Forget&& forget) {
  for (const auto& r : take_released()) {
    if (!live_.erase(r.buffer)) continue;  // freed with its run, or at its scope's end
    arena_.release(r.offset, r.bytes);
    forget(r.buffer);
  }
}

}  // namespace rankflow::runtime
