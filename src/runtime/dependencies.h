// DependencyTracker: infers a new task's predecessors from the byte ranges its arguments read
// and write. Read-after-write, write-after-write and write-after-read create edges; reads after
// reads do not; disjoint ranges of one buffer never do. Pure bookkeeping, owned by the host's
// scheduler under its lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace rankflow::runtime {

struct ByteUse {
  uint64_t buffer;
  size_t begin;
  size_t end;  // exclusive
  bool reads;
  bool writes;
};

class DependencyTracker {
 public:
  // Records `uses` of `task` and returns every earlier task it depends on (sorted, without
  // duplicates), finished ones included: the caller waits only for those still running, and
  // the graph dump shows them all.
  std::vector<uint64_t> add(uint64_t task, const std::vector<ByteUse>& uses);
  // Marks `task` finished. Its records stay until a later write covers them, so the graph
  // keeps its edges while the bookkeeping stays proportional to the live ranges.
  void finished(uint64_t task);
  void clear() { by_buffer_.clear(); }

 private:
  struct Record {
    uint64_t task;
    size_t begin;
    size_t end;
    bool writes;
    bool finished;
  };
  std::unordered_map<uint64_t, std::vector<Record>> by_buffer_;
};

// Throws InvalidArgument when two arguments of one task conflict: two written ranges overlap,
// or a range is both read by one argument and written by another (use kInOut instead).
void check_task_uses(const std::vector<ByteUse>& uses, const char* kernel);

}  // namespace rankflow::runtime
