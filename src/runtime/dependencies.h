// DependencyTracker: infers a new task's predecessors from the bytes its arguments read and
// write. Read-after-write, write-after-write and write-after-read create edges; reads after reads
// do not; disjoint parts of one buffer never do. Contiguous views compare byte ranges; two
// strided views of one layout (say two column blocks of a matrix) compare their boxes dimension
// by dimension; anything else that shares bytes of the bounding ranges counts as overlapping.
// Pure bookkeeping, owned by the host's scheduler under its lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "runtime/protocol.h"

namespace rankflow::runtime {

// The elements of a strided view: a box of `shape` with byte `stride`s from the view's start.
struct Layout {
  uint32_t ndim = 0;  // 0: contiguous, every byte of [begin, end)
  size_t element_bytes = 0;
  size_t shape[kMaxDims] = {};
  size_t stride[kMaxDims] = {};
};

struct ByteUse {
  uint64_t buffer;
  size_t begin;  // the first element's first byte
  size_t end;    // one past the last element's last byte
  bool reads;
  bool writes;
  Layout layout;
};

// Whether two uses may touch a common byte (exact for contiguous ranges and for strided views
// of one layout; conservative otherwise).
bool overlaps(const ByteUse& a, const ByteUse& b);

class DependencyTracker {
 public:
  // Records `uses` of `task` and returns every earlier task it depends on (sorted, without
  // duplicates), finished ones included: the caller waits only for those still running, and
  // the graph dump shows them all. A record stays until a later write covers its bytes.
  std::vector<uint64_t> add(uint64_t task, const std::vector<ByteUse>& uses);
  void clear() { by_buffer_.clear(); }
  // Drops every record of a buffer whose memory was reclaimed (no live task uses it).
  void forget(uint64_t buffer) { by_buffer_.erase(buffer); }

 private:
  struct Record {
    uint64_t task;
    ByteUse use;
  };
  std::unordered_map<uint64_t, std::vector<Record>> by_buffer_;
};

// Throws InvalidArgument when two arguments of one task conflict: two written ranges overlap,
// or a range is both read by one argument and written by another (use kInOut instead).
void check_task_uses(const std::vector<ByteUse>& uses, const char* kernel);

}  // namespace rankflow::runtime
