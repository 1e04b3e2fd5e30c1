// RangeAllocator: first-fit allocation of 64-byte aligned ranges of one arena (the host's tensor
// arena, or one chip's child memory), merging neighbours on release. Plain bookkeeping; the
// owner (the host's scheduler) serialises calls under its lock.
#pragma once

#include <cstddef>
#include <iterator>
#include <map>
#include <optional>

namespace rankflow::runtime {

class RangeAllocator {
 public:
  static constexpr size_t kAlignment = 64;

  explicit RangeAllocator(size_t bytes = 0) : bytes_(bytes) { reset(); }

  static size_t rounded(size_t bytes) {
    return bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  }

  // The offset of `bytes` (rounded up) free bytes, or nothing when no free range is that large.
  std::optional<size_t> allocate(size_t bytes) {
    bytes = rounded(bytes);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < bytes) continue;
      const size_t offset = it->first;
      const size_t left = it->second - bytes;
      free_.erase(it);
      if (left > 0) free_[offset + bytes] = left;
      used_ += bytes;
      return offset;
    }
    return std::nullopt;
  }

  // Returns a range allocate() gave (with the same `bytes`).
  void release(size_t offset, size_t bytes) {
    bytes = rounded(bytes);
    used_ -= bytes;
    auto slot = free_.emplace(offset, bytes).first;
    if (auto next = std::next(slot); next != free_.end() && offset + bytes == next->first) {
      slot->second += next->second;
      free_.erase(next);
    }
    if (slot != free_.begin()) {
      auto prev = std::prev(slot);
      if (prev->first + prev->second == slot->first) {
        prev->second += slot->second;
        free_.erase(slot);
      }
    }
  }

  void reset() {
    if (used_ == 0 && free_.size() == (bytes_ > 0 ? 1u : 0u)) return;  // already all free
    free_.clear();
    if (bytes_ > 0) free_[0] = bytes_;
    used_ = 0;
  }

  size_t capacity() const { return bytes_; }
  size_t used() const { return used_; }

 private:
  size_t bytes_;
  size_t used_ = 0;
  std::map<size_t, size_t> free_;  // offset -> bytes
};

}  // namespace rankflow::runtime
