// SlotWriter (see slot_writer.h): the region's mapped addresses and the write through UCX.
#include "collectives/slot_writer.h"

#include <utility>

namespace rankflow::coll {

SlotWriter::SlotWriter(Team team, size_t region, size_t outbox_bytes)
    : team_(std::move(team)), region_(region), outbox_bytes_(outbox_bytes) {
  if (region_ == SIZE_MAX) return;
  for (int p = 0; p < team_.size(); ++p)
    mapped_.push_back(static_cast<std::byte*>(team_.remote_ptr(p, region_)));
}

void SlotWriter::write_through_ucx(int peer, size_t slot, uint64_t flag, const void* payload,
                                   size_t bytes, size_t outbox_offset) {
  if (outbox_.empty()) outbox_.resize(outbox_bytes_);
  std::byte* out = outbox_.data() + outbox_offset;
  const size_t at = payload_offset(bytes);
  std::memcpy(out, &flag, sizeof(flag));
  if (bytes > 0) std::memcpy(out + at, payload, bytes);  // payload may be null then
  team_.put(peer, slot + at, out + at, bytes);
  team_.fence();
  team_.put(peer, slot, out, sizeof(uint64_t));
}

}  // namespace rankflow::coll
