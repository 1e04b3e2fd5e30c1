// SlotWriter: writes flagged slots into one region of every peer's window, the one step the push
// inbox (collectives/inbox.h) and the acked stream (collectives/stream.h) share. A slot is an
// 8-byte flag word and its payload (at payload_offset(bytes): in the flag's line up to 56 bytes,
// else from the next line on); the reader waits for the flag and then reads the
// payload, so the payload must land first:
// - where the peer's window is mapped: plain stores of the payload, then a release store of the
//   flag (complete on return);
// - otherwise: the payload and the flag are copied into a private outbox, then UCX put of the
//   payload, fence, put of the flag. The caller chooses the outbox position and must not reuse
//   it before the peer has read the slot (by then the puts have completed).
// It owns the region's mapped addresses (resolved once) and the outbox. Threads: the thread that
// drives the protocol using it (one at a time, as for Team).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "rankflow/team.h"

namespace rankflow::coll {

// Where a slot's payload starts: right after the flag when both fit one cache line (one line
// carries the whole message), else at the next cache line, so that a larger payload is
// 64-byte aligned and every 64-byte store or load touches one line, not two.
constexpr size_t kFlagLinePayload = 56;
constexpr size_t payload_offset(size_t bytes) {
  return bytes <= kFlagLinePayload ? 8 : 64;
}

class SlotWriter {
 public:
  // Slots at window offsets from `region` on (SIZE_MAX: no region, nothing may be written); the
  // outbox holds `outbox_bytes` (allocated on the first write through UCX).
  SlotWriter(Team team, size_t region, size_t outbox_bytes);

  // Whether `peer`'s region is mapped here (written with stores, not through UCX).
  bool mapped(int peer) const { return mapped_[static_cast<size_t>(peer)] != nullptr; }
  // The slot at window offset `slot` of `peer`, where mapped, else null.
  std::byte* mapped_slot(int peer, size_t slot) const {
    std::byte* region = mapped_[static_cast<size_t>(peer)];
    return region != nullptr ? region + (slot - region_) : nullptr;
  }

  // Writes `bytes` of `payload`, then `flag`, into the slot at window offset `slot` (inside the
  // region) of `peer`. Through UCX the private copy sits at `outbox_offset` of the outbox.
  // Returns where the payload landed in the peer's mapped window, or null when written through
  // UCX.

  std::byte* write(int peer, size_t slot, uint64_t flag, const void* payload, size_t bytes,
                   size_t outbox_offset) {
    if (std::byte* mapped = mapped_slot(peer, slot)) {
      if (bytes > 0) std::memcpy(mapped + payload_offset(bytes), payload, bytes);  // may be null
      std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(mapped))
          .store(flag, std::memory_order_release);
      return mapped + payload_offset(bytes);
    }
    write_through_ucx(peer, slot, flag, payload, bytes, outbox_offset);
    return nullptr;
  }

 private:
  void write_through_ucx(int peer, size_t slot, uint64_t flag, const void* payload, size_t bytes,
                         size_t outbox_offset);

  Team team_;
  size_t region_;
  size_t outbox_bytes_;
  std::vector<std::byte*> mapped_;  // each peer's region where mapped, else null
  std::vector<std::byte> outbox_;   // private copies of slots written through UCX
};

}  // namespace rankflow::coll
