// StridedIndex: the strided records of one buffer, for the dependency tracker. Records of one
// layout (the same strides, element size and phase: say every column block of a matrix) form a
// group whose boxes are indexed per dimension, so a strided view finds the earlier views of its
// layout that it may touch without comparing against all of them: a query walks the dimension
// in which its box is narrowest relative to the group's span. Views of other layouts, and
// contiguous queries, compare against every record of a group whose bounding bytes meet theirs
// (exactness comes from overlaps()). Owned by the DependencyTracker, under the graph's lock.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory_resource>
#include <utility>
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

struct UseRecord {
  uint64_t task;
  ByteUse use;
};

// A strided view's box in the coordinates of its layout (see dependencies.cpp): false when it
// has none (a dimension wraps into the next).
bool box_of(const ByteUse& u, size_t first[kMaxDims], size_t& phase);
bool same_layout(const Layout& a, const Layout& b);
// Whether contiguous `write` touches every byte of `earlier`.
bool covers(const ByteUse& write, const ByteUse& earlier);

class StridedIndex {
 public:
  // The index trees' nodes come from `pool` (the tracker's): a run of n strided uses frees no
  // node one by one into malloc, and the next run reuses them.
  explicit StridedIndex(std::pmr::memory_resource* pool) : pool_(pool) {}
  // Calls visit(record) for a superset of the records that may overlap `use`.
  template <typename Visit>
  void for_each_candidate(const ByteUse& use, Visit&& visit) const;
  void add(uint64_t task, const ByteUse& use);
  // Removes every record the contiguous write `write` covers.
  void erase_covered_by(const ByteUse& write);
  bool empty() const { return groups_.empty() && loose_.empty(); }

 private:
  using FirstIndex = std::pmr::multimap<size_t, size_t>;  // first index -> entry
  struct Entry {
    UseRecord record;
    size_t first[kMaxDims];
    FirstIndex::iterator in_index[kMaxDims];  // where in_tree has the dimension's bit
    uint8_t in_tree;                          // dimensions indexed in the tree, not in order
    bool live;
  };
  // One dimension of a group: its entries by first index, how many have each extent, and the
  // largest first + extent seen. Views usually come in order (block after block), so entries
  // whose first index is no smaller than the last one's are appended to a sorted vector (no
  // node, no walk, and nothing to free one by one); only the others go into the tree. A dead
  // entry's place in `ordered` stays until the group is rebuilt (queries skip it).
  struct Dimension {
    explicit Dimension(std::pmr::memory_resource* pool) : by_first(pool), lengths(pool) {}
    std::vector<std::pair<size_t, size_t>> ordered;  // (first index, entry), sorted
    FirstIndex by_first;
    std::pmr::map<size_t, size_t> lengths;  // extent -> how many entries
    size_t span = 0;
    size_t longest() const { return lengths.rbegin()->first; }
  };
  struct Group {
    Group(const Layout& layout, size_t phase, std::pmr::memory_resource* pool);
    Layout layout;  // strides and element size (shapes differ per entry)
    size_t phase;
    size_t lo = SIZE_MAX;  // bounding bytes of every entry
    size_t hi = 0;
    std::vector<Entry> entries;  // indexed by position (indices survive growth)
    std::vector<Dimension> dims;
    size_t live = 0;
  };
  Group* group_of(const ByteUse& use, size_t phase);
  const Group* group_of(const ByteUse& use, size_t phase) const;
  static size_t narrowest(const Group& g, const ByteUse& use);
  static void insert(Group& g, Entry entry);
  void rebuild(Group& g);

  std::pmr::memory_resource* pool_;
  std::deque<Group> groups_;
  std::vector<UseRecord> loose_;  // strided records without a box
};

template <typename Visit>
void StridedIndex::for_each_candidate(const ByteUse& use, Visit&& visit) const {
  size_t first[kMaxDims] = {};
  size_t phase = 0;
  const bool boxed = use.layout.ndim != 0 && box_of(use, first, phase);
  const Group* own = boxed ? group_of(use, phase) : nullptr;
  for (const Group& g : groups_) {
    if (g.live == 0 || g.hi <= use.begin || use.end <= g.lo) continue;
    if (&g != own) {
      for (const Entry& e : g.entries) {
        if (e.live) visit(e.record);
      }
      continue;
    }
    const size_t d = narrowest(g, use);
    const Dimension& dim = g.dims[d];
    const size_t longest = dim.longest();
    const size_t from = first[d] >= longest ? first[d] - longest + 1 : 0;
    const size_t to = first[d] + use.layout.shape[d];
    auto in_order = std::lower_bound(dim.ordered.begin(), dim.ordered.end(),
                                     std::pair<size_t, size_t>{from, 0});
    for (; in_order != dim.ordered.end() && in_order->first < to; ++in_order) {
      const Entry& e = g.entries[in_order->second];
      if (e.live) visit(e.record);
    }
    for (auto it = dim.by_first.lower_bound(from); it != dim.by_first.end() && it->first < to;
         ++it) {
      visit(g.entries[it->second].record);
    }
  }
  for (const UseRecord& r : loose_)
    visit(r);
}

}  // namespace rankflow::runtime
