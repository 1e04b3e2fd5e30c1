// ChildMemory: each chip's child (device) memory, kept across tasks and runs until freed. A
// freed allocation's memory is reused only after the run, when no task can use it any more.
// Called on the host's main thread (the body and the end of a run).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "rankflow/tensor.h"
#include "runtime/buffer_ids.h"
#include "runtime/range_allocator.h"

namespace rankflow::runtime {

class ChildMemory {
 public:
  ChildMemory(int chips, size_t bytes_per_chip, BufferIds& ids);

  Tensor alloc(int worker, std::vector<size_t> shape, DType dtype, size_t bytes);
  void free(const Tensor& base);
  // InvalidArgument (prefixed with `which`) unless `t` is live child memory of `worker` (-1:
  // a host sub-worker).
  void check_use(const Tensor& t, int worker, const std::string& which) const;
  // Run `run` is being built: frees from now on wait for its end.
  void begin_run(uint64_t run) { run_ = run; }
  // After run `run`: memory freed while it was built becomes reusable.
  void end_run(uint64_t run);
  // Bytes of `worker`'s child arena held by allocations (each rounded up to the arena's 64-byte
  // granule): live ones, and ones freed in this run (reusable only after it). InvalidArgument
  // for a worker out of range.
  size_t committed(int worker) const;

 private:
  struct Allocation {
    int worker;
    size_t offset;
    size_t bytes;
    bool live;
  };
  size_t bytes_per_chip_;
  BufferIds& ids_;
  std::vector<RangeAllocator> arenas_;                    // per chip
  std::unordered_map<uint64_t, Allocation> allocations_;  // by buffer id
  struct PendingFree {
    uint64_t run;  // the run being built when it was freed: reusable after it
    uint64_t buffer;
  };
  std::vector<PendingFree> pending_free_;
  uint64_t run_ = 0;
  std::vector<size_t> committed_;  // per chip
};

}  // namespace rankflow::runtime
