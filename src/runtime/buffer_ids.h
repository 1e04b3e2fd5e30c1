// BufferIds: the identities of allocations (host tensors, intermediates, child memory), unique
// for the worker's lifetime; the dependency tracker keys its records by them. Any thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace rankflow::runtime {

class BufferIds {
 public:
  uint64_t next() { return next_.fetch_add(1, std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> next_{1};
};

}  // namespace rankflow::runtime
