// Counters of the host <-> chip protocol: monotonic 64-bit words with exactly one writer (the
// host for a chip's posted count, each chip for its completion count), each on a cache line of
// its own in the reader's "counters" buffer. The writer keeps the total and publishes it: a
// plain release store where the reader's window is mapped (no read-modify-write, so the
// writer's core never stalls on the line), else a fence and a remote add of the difference,
// after every earlier put to that peer. The reader loads its local word with acquire. Used by
// whichever thread drives (host) or serves (chip); one thread at a time per counter.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "rankflow/team.h"

namespace rankflow::runtime {

constexpr size_t kCounterStride = 64;
// In a chip's counters buffer: descriptors posted to it. In the host's: line 1 + c, the
// completions chip c wrote, and the next word how many of them failed (the host reads a
// completion record only when that moves, or when tracing).
inline size_t posted_counter(const Team& team) {
  return team.offset("counters");
}
inline size_t done_counter(const Team& team, int chip) {
  return team.offset("counters") + static_cast<size_t>(1 + chip) * kCounterStride;
}
inline size_t failed_counter(const Team& team, int chip) {
  return done_counter(team, chip) + sizeof(uint64_t);
}

inline uint64_t read_counter(const Team& team, size_t offset) {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(team.local_ptr(offset)))
      .load(std::memory_order_acquire);
}

class CounterWriter {
 public:
  CounterWriter(Team& team, int peer, size_t offset)
      : team_(team),
        peer_(peer),
        offset_(offset),
        mapped_(static_cast<uint64_t*>(team.remote_ptr(peer, offset))) {}

  void advance(uint64_t by = 1) {
    total_ += by;
    if (mapped_ != nullptr) {
      std::atomic_ref<uint64_t>(*mapped_).store(total_, std::memory_order_release);
      return;
    }
    team_.fence();  // earlier puts to this peer land before the counter moves
    team_.atomic_add(peer_, offset_, by);
  }
  uint64_t total() const { return total_; }

 private:
  Team& team_;
  int peer_;
  size_t offset_;
  uint64_t* mapped_;
  uint64_t total_ = 0;
};

}  // namespace rankflow::runtime
