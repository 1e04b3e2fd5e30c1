// ChoiceMemo: a communicator's recent algorithm choices. A table's choice (registry.h) depends
// only on the message's size, the kind of buffers, whether Open MPI's own collective may run,
// whether the context has an inbox, and on what a communicator fixes when it is made (its member
// count and the override rules), so a collective called again on the same size and kind of buffers
// takes the algorithm remembered for them instead of scanning the table's ranges again: that scan,
// with its branch misses, was about a tenth of a 4-byte plain allreduce on two members (perf,
// docs/performance.md). Direct-mapped, a slot per (table, power of two of the size): a miss only
// costs the scan. Threads: the thread that calls the communicator.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "collectives/registry.h"

namespace rankflow::coll {

class ChoiceMemo {
 public:
  // The algorithm remembered for `table`, `bytes`, `buffers`, `open_mpi` and `has_inbox`, else
  // `choose()`'s (a const Algorithm<Args>&), remembered in place of the slot's earlier choice.
  template <typename Args, typename Choose>
  const Algorithm<Args>& find_or_choose(const AlgorithmTable<Args>& table, size_t bytes,
                                        Buffers buffers, bool open_mpi, bool has_inbox,
                                        Choose&& choose) {
    const auto kind = static_cast<uint8_t>((static_cast<unsigned>(buffers) << 2) |
                                           (open_mpi ? 2U : 0U) | (has_inbox ? 1U : 0U));
    Entry& entry = entries_[slot(&table, bytes)];
    if (entry.table == &table && entry.bytes == bytes && entry.kind == kind)
      return *static_cast<const Algorithm<Args>*>(entry.chosen);
    const Algorithm<Args>& chosen = choose();
    entry = {&table, bytes, &chosen, kind};
    return chosen;
  }

 private:
  static constexpr size_t kSlots = 64;
  struct Entry {
    const void* table = nullptr;
    size_t bytes = 0;
    const void* chosen = nullptr;
    uint8_t kind = 0;
  };
  static size_t slot(const void* table, size_t bytes) {
    const auto table_bits = static_cast<size_t>(reinterpret_cast<uintptr_t>(table) >> 4);
    return (static_cast<size_t>(std::bit_width(bytes)) + table_bits * 7) % kSlots;
  }
  std::array<Entry, kSlots> entries_{};
};

}  // namespace rankflow::coll
