// DependencyTracker: infers a new task's predecessors from the bytes its arguments read and
// write. Read-after-write, write-after-write and write-after-read create edges; reads after reads
// do not; disjoint parts of one buffer never do. Contiguous views compare byte ranges; two
// strided views of one layout (say two column blocks of a matrix) compare their boxes dimension
// by dimension; anything else that shares bytes of the bounding ranges counts as overlapping.
// Pure bookkeeping, owned by the host's scheduler under its lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory_resource>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/protocol.h"
#include "runtime/strided_index.h"

namespace rankflow::runtime {

// Whether two uses may touch a common byte (exact for contiguous ranges and for strided views
// of one layout; conservative otherwise).
bool overlaps(const ByteUse& a, const ByteUse& b);

class DependencyTracker {
 public:
  // Records `uses` of `task` and returns every earlier task it depends on (sorted, without
  // duplicates), finished ones included: the caller waits only for those still running, and
  // the graph dump shows them all. A record stays until a later write covers its bytes.
  void add(uint64_t task, const std::vector<ByteUse>& uses, std::vector<uint64_t>& before) {
    find(task, uses, before);
    record(task, uses);
  }
  // add() in two steps: the predecessors, then the records (so a caller may refuse the task
  // in between, leaving nothing behind).
  void find(uint64_t task, const std::vector<ByteUse>& uses, std::vector<uint64_t>& before) const;
  void record(uint64_t task, const std::vector<ByteUse>& uses);
  std::vector<uint64_t> add(uint64_t task, const std::vector<ByteUse>& uses) {
    std::vector<uint64_t> before;
    add(task, uses, before);
    return before;
  }
  void clear() { by_buffer_.clear(); }
  // Drops every record of a buffer whose memory was reclaimed (no live task uses it).
  void forget(uint64_t buffer) { by_buffer_.erase(buffer); }

 private:
  using Record = UseRecord;
  // The records of one buffer. Contiguous ones sit in an interval index by first byte, so a
  // use finds the records its range may touch in O(log n + k) instead of scanning every
  // earlier view of the allocation; strided ones sit in a StridedIndex (boxes per layout,
  // indexed per dimension).
  class BufferRecords {
   public:
    explicit BufferRecords(std::pmr::memory_resource* pool)
        : contiguous_(pool), lengths_(pool), strided_(pool) {}
    // Calls `contiguous(task, writes)` for every contiguous record whose bytes meet `use`'s
    // bounding range, and `strided(record)` for a superset of the strided records that may
    // overlap it (overlaps() decides).
    template <typename Contiguous, typename Strided>
    void for_each_candidate(const ByteUse& use, Contiguous&& contiguous, Strided&& strided) const;
    // Removes every record that the contiguous write `write` covers (see covers()).
    void erase_covered_by(const ByteUse& write);
    void add(uint64_t task, const ByteUse& use);

   private:
    struct Span {  // a contiguous record: bytes [key, end) of the buffer
      size_t end;
      uint64_t task;
      bool writes;
    };
    std::pmr::multimap<size_t, Span> contiguous_;  // by first byte
    std::pmr::map<size_t, size_t> lengths_;        // end - begin -> how many contiguous records
    StridedIndex strided_;
  };
  // The records' tree nodes come from a pool: a run of n tasks allocates no node per use once
  // an earlier run (or the run's own covered records) returned them.
  std::pmr::unsynchronized_pool_resource pool_;
  std::unordered_map<uint64_t, BufferRecords> by_buffer_;
};

// Two uses of one task that conflict: both write overlapping bytes, or `reader` reads bytes
// that `writer` writes (indices into the uses; `reader` is the first when both write).
struct UseConflict {
  size_t reader;
  size_t writer;
  bool both_write;
};
// The first conflict among `uses`, if any.
std::optional<UseConflict> find_conflict(std::span<const ByteUse> uses);

// Throws InvalidArgument when two arguments of one task conflict: two written ranges overlap,
// or a range is both read by one argument and written by another (use kInOut instead). The
// message numbers the arguments as `uses` holds them.
void check_task_uses(std::span<const ByteUse> uses, std::string_view kernel);
inline void check_task_uses(const std::vector<ByteUse>& uses, std::string_view kernel) {
  check_task_uses(std::span<const ByteUse>(uses), kernel);
}

}  // namespace rankflow::runtime
