// DependencyTracker (see dependencies.h).
#include "runtime/dependencies.h"

#include <algorithm>
#include <string>

#include "rankflow/error.h"

namespace rankflow::runtime {
namespace {
bool overlap(size_t a_begin, size_t a_end, size_t b_begin, size_t b_end) {
  return a_begin < b_end && b_begin < a_end;
}
}  // namespace

std::vector<uint64_t> DependencyTracker::add(uint64_t task, const std::vector<ByteUse>& uses) {
  std::vector<uint64_t> before;
  for (const ByteUse& use : uses) {
    for (const Record& r : by_buffer_[use.buffer]) {
      if (r.task == task || !overlap(r.begin, r.end, use.begin, use.end)) continue;
      if (r.writes || use.writes) before.push_back(r.task);  // RAW, WAW, WAR
    }
  }
  for (const ByteUse& use : uses) {
    auto& records = by_buffer_[use.buffer];
    if (use.writes) {  // finished records this write covers can add no edge the new one lacks
      records.erase(std::remove_if(records.begin(), records.end(),
                                   [&](const Record& r) {
                                     return r.finished && use.begin <= r.begin && r.end <= use.end;
                                   }),
                    records.end());
    }
    records.push_back({task, use.begin, use.end, use.writes, false});
  }
  std::sort(before.begin(), before.end());
  before.erase(std::unique(before.begin(), before.end()), before.end());
  return before;
}

void DependencyTracker::finished(uint64_t task) {
  for (auto& [buffer, records] : by_buffer_) {
    for (Record& r : records)
      r.finished = r.finished || r.task == task;
  }
}

void check_task_uses(const std::vector<ByteUse>& uses, const char* kernel) {
  for (size_t i = 0; i < uses.size(); ++i) {
    for (size_t j = i + 1; j < uses.size(); ++j) {
      const ByteUse& a = uses[i];
      const ByteUse& b = uses[j];
      if (a.buffer != b.buffer || !overlap(a.begin, a.end, b.begin, b.end)) continue;
      if (a.writes && b.writes) {
        throw InvalidArgument(std::string("task '") + kernel + "': arguments " + std::to_string(i) +
                              " and " + std::to_string(j) + " are both written and overlap");
      }
      if (a.writes != b.writes) {
        throw InvalidArgument(std::string("task '") + kernel + "': argument " +
                              std::to_string(a.writes ? j : i) + " reads bytes that argument " +
                              std::to_string(a.writes ? i : j) +
                              " writes; pass the range once as inout");
      }
    }
  }
}

}  // namespace rankflow::runtime
