// TeamLayout (see team_layout.h).
#include "transport/team_layout.h"

#include <algorithm>
#include <set>

#include "rankflow/error.h"

namespace rankflow::transport {

TeamLayout::TeamLayout(std::vector<BufferSpec> buffers, uint32_t signal_slots)
    : signal_slots_(signal_slots) {
  signals_offset_ = kBarrierRounds * kSlotStride;
  size_t cursor = signals_offset_ + size_t{signal_slots} * kSlotStride;
  std::set<std::string, std::less<>> seen;
  for (BufferSpec& spec : buffers) {
    if (spec.name.empty()) throw InvalidArgument("team buffer names must not be empty");
    if (!seen.insert(spec.name).second) {
      throw InvalidArgument("team buffer '" + spec.name + "' is declared twice");
    }
    const size_t align = spec.alignment;
    if (align == 0 || (align & (align - 1)) != 0 || align > 4096) {
      throw InvalidArgument("team buffer '" + spec.name + "': alignment " + std::to_string(align) +
                            " is not a power of two up to 4096");
    }
    cursor = (cursor + align - 1) & ~(align - 1);
    if (spec.bytes > kMaxBufferBytes) {
      throw InvalidArgument("team buffer '" + spec.name + "': " + std::to_string(spec.bytes) +
                            " bytes is larger than any window rankflow can allocate");
    }
    placed_.push_back({std::move(spec.name), cursor, spec.bytes});
    cursor += spec.bytes;
  }
  total_bytes_ = (cursor + kSlotStride - 1) & ~(kSlotStride - 1);
}

TeamLayout TeamLayout::sharing(std::vector<Placed> buffers, size_t control_offset,
                               uint32_t signal_slots) {
  if (control_offset % kSlotStride != 0) {
    throw InvalidArgument("team control area at offset " + std::to_string(control_offset) +
                          " is not aligned to " + std::to_string(kSlotStride) + " bytes");
  }
  TeamLayout layout;
  layout.control_offset_ = control_offset;
  layout.signals_offset_ = control_offset + kBarrierRounds * kSlotStride;
  layout.signal_slots_ = signal_slots;
  layout.total_bytes_ = control_offset + control_bytes(signal_slots);
  for (const Placed& placed : buffers)
    layout.total_bytes_ = std::max(layout.total_bytes_, placed.offset + placed.bytes);
  layout.placed_ = std::move(buffers);
  return layout;
}

const TeamLayout::Placed& TeamLayout::find(std::string_view name) const {
  for (const Placed& placed : placed_) {
    if (placed.name == name) return placed;
  }
  std::string known;
  for (const Placed& placed : placed_)
    known += (known.empty() ? "" : ", ") + placed.name;
  throw InvalidArgument("team has no buffer named '" + std::string(name) +
                        "'; buffers: " + (known.empty() ? std::string("(none)") : known));
}

}  // namespace rankflow::transport
