// TeamLayout: where the control area (barrier and signal counters) and each named buffer sit in
// a team's symmetric window. Pure arithmetic, computed identically on every member.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rankflow/team.h"

namespace rankflow::transport {

class TeamLayout {
 public:
  static constexpr size_t kSlotStride = 64;       // one counter per cache line
  static constexpr uint32_t kBarrierRounds = 32;  // ceil(log2(size)) rounds for any int size
  static constexpr size_t kMaxBufferBytes = size_t{1} << 48;  // larger than any window can be

  // Throws InvalidArgument for empty or duplicate names or a bad alignment.
  TeamLayout(std::vector<BufferSpec> buffers, uint32_t signal_slots);

  struct Placed {
    std::string name;
    size_t offset;
    size_t bytes;
  };
  // The bytes of a control area: the barrier rounds and `signal_slots` counters.
  static size_t control_bytes(uint32_t signal_slots) {
    return (size_t{kBarrierRounds} + signal_slots) * kSlotStride;
  }
  // A layout for a second team over a window another layout made: `buffers` are already placed
  // in it, and this team's own control area is the control_bytes(signal_slots) bytes at
  // `control_offset` (a buffer of that window, 64-byte aligned), so its barrier and signals
  // never touch the first team's. Throws InvalidArgument for a misaligned control area.
  static TeamLayout sharing(std::vector<Placed> buffers, size_t control_offset,
                            uint32_t signal_slots);

  size_t barrier_slot(uint32_t round) const { return control_offset_ + round * kSlotStride; }
  size_t signal_slot(uint32_t slot) const { return signals_offset_ + slot * kSlotStride; }
  uint32_t signal_slots() const { return signal_slots_; }
  size_t total_bytes() const { return total_bytes_; }

  const Placed& find(std::string_view name) const;  // throws InvalidArgument listing the names
  const std::vector<Placed>& buffers() const { return placed_; }

 private:
  TeamLayout() = default;
  size_t control_offset_ = 0;
  size_t signals_offset_ = 0;
  uint32_t signal_slots_ = 0;
  size_t total_bytes_ = 0;
  std::vector<Placed> placed_;
};

}  // namespace rankflow::transport
