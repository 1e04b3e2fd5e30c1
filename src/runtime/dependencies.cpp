// DependencyTracker (see dependencies.h).
#include "runtime/dependencies.h"

#include <algorithm>
#include <string>

#include "rankflow/error.h"

namespace rankflow::runtime {
namespace {

bool ranges_overlap(size_t a_begin, size_t a_end, size_t b_begin, size_t b_end) {
  return a_begin < b_end && b_begin < a_end;
}

}  // namespace

bool overlaps(const ByteUse& a, const ByteUse& b) {
  if (a.buffer != b.buffer || !ranges_overlap(a.begin, a.end, b.begin, b.end)) return false;
  if (a.layout.ndim == 0 || b.layout.ndim == 0 || !same_layout(a.layout, b.layout)) return true;
  size_t a_first[kMaxDims], b_first[kMaxDims], a_phase = 0, b_phase = 0;
  if (!box_of(a, a_first, a_phase) || !box_of(b, b_first, b_phase) || a_phase != b_phase) {
    return true;
  }
  for (uint32_t d = 0; d < a.layout.ndim; ++d) {
    if (!ranges_overlap(a_first[d], a_first[d] + a.layout.shape[d], b_first[d],
                        b_first[d] + b.layout.shape[d])) {
      return false;
    }
  }
  return true;
}

template <typename Contiguous, typename Strided>
void DependencyTracker::BufferRecords::for_each_candidate(const ByteUse& use,
                                                          Contiguous&& contiguous,
                                                          Strided&& strided) const {
  if (!contiguous_.empty()) {
    // A record overlaps [begin, end) only if it starts before `end` and ends after `begin`; no
    // record is longer than the longest, so none starting at or before begin - longest can.
    const size_t longest = lengths_.rbegin()->first;
    const size_t from = use.begin >= longest ? use.begin - longest + 1 : 0;
    for (auto it = contiguous_.lower_bound(from); it != contiguous_.end() && it->first < use.end;
         ++it) {
      // A contiguous record shares a byte with `use`'s bounding range: exact for a contiguous
      // use, and what overlaps() answers for a strided one against a contiguous record.
      if (it->second.end > use.begin) contiguous(it->second.task, it->second.writes);
    }
  }
  strided_.for_each_candidate(use, strided);
}

void DependencyTracker::BufferRecords::erase_covered_by(const ByteUse& write) {
  for (auto it = contiguous_.lower_bound(write.begin);
       it != contiguous_.end() && it->first <= write.end;) {
    if (it->second.end <= write.end) {  // write.begin <= it->first: covered
      const auto length = lengths_.find(it->second.end - it->first);
      if (--length->second == 0) lengths_.erase(length);
      it = contiguous_.erase(it);
    } else {
      ++it;
    }
  }
  strided_.erase_covered_by(write);
}

void DependencyTracker::BufferRecords::add(uint64_t task, const ByteUse& use) {
  if (use.layout.ndim != 0) {
    strided_.add(task, use);
    return;
  }
  // Hinted at the end: views that come in order are inserted without a walk down the tree.
  contiguous_.emplace_hint(contiguous_.end(), use.begin, Span{use.end, task, use.writes});
  ++lengths_[use.end - use.begin];
}

// `before` (cleared first) gets the earlier tasks, sorted, without duplicates.
void DependencyTracker::find(uint64_t task, const std::vector<ByteUse>& uses,
                             std::vector<uint64_t>& before) const {
  before.clear();
  for (const ByteUse& use : uses) {
    auto found = by_buffer_.find(use.buffer);
    if (found == by_buffer_.end()) continue;
    auto depend = [&](uint64_t earlier, bool earlier_writes) {
      if (earlier != task && (earlier_writes || use.writes))
        before.push_back(earlier);  // RAW, WAW, WAR
    };
    found->second.for_each_candidate(use, depend, [&](const Record& r) {
      if (overlaps(r.use, use)) depend(r.task, r.use.writes);
    });
  }
  std::sort(before.begin(), before.end());
  before.erase(std::unique(before.begin(), before.end()), before.end());
}

void DependencyTracker::record(uint64_t task, const std::vector<ByteUse>& uses) {
  for (const ByteUse& use : uses) {
    BufferRecords& records = by_buffer_.try_emplace(use.buffer, &pool_).first->second;
    // A write that covers a record depends on that record's task, so every later task that
    // would depend on it through these bytes depends on the write instead: the record can go.
    if (use.writes && use.layout.ndim == 0) records.erase_covered_by(use);
    records.add(task, use);
  }
}

std::optional<UseConflict> find_conflict(std::span<const ByteUse> uses) {
  for (size_t i = 0; i < uses.size(); ++i) {
    for (size_t j = i + 1; j < uses.size(); ++j) {
      const ByteUse& a = uses[i];
      const ByteUse& b = uses[j];
      if ((!a.writes && !b.writes) || !overlaps(a, b)) continue;
      if (a.writes && b.writes) return UseConflict{i, j, true};
      return a.writes ? UseConflict{j, i, false} : UseConflict{i, j, false};
    }
  }
  return std::nullopt;
}

void check_task_uses(std::span<const ByteUse> uses, std::string_view kernel) {
  const auto conflict = find_conflict(uses);
  if (!conflict) return;
  const std::string task = "task '" + std::string(kernel) + "': ";
  if (conflict->both_write) {
    throw InvalidArgument(task + "arguments " + std::to_string(conflict->reader) + " and " +
                          std::to_string(conflict->writer) + " are both written and overlap");
  }
  throw InvalidArgument(task + "argument " + std::to_string(conflict->reader) +
                        " reads bytes that argument " + std::to_string(conflict->writer) +
                        " writes; pass the range once as inout");
}

}  // namespace rankflow::runtime
