// PushInbox: the low-latency push protocol. Every member has, per sequence parity and per sender,
// one slot (an 8-byte flag and up to payload_bytes(members): 32 KiB on up to 4 members, else
// 4 KiB) in a region of the team's window. A collective takes the next sequence number on every
// member alike; each member pushes its data and the flag `sequence` into its slot of the peers'
// inboxes (data and flag in one message: one round), and a receiver waits for the flag and reads
// the payload in place.
//
// Slot reuse: a slot is rewritten two sequences later, so a push (push() or push_broadcast())
// first needs evidence that the peer has finished the collective two sequences back: its own
// push for a later sequence (recorded by await_push), or, for a member that did not wait for the
// peer (the root of a pushed broadcast), the peer's acknowledgement (acknowledge_broadcast,
// awaited only when it must). Where the peers' windows are mapped, small payloads are handed
// between the cores' caches with CLDEMOTE, and a member takes the lines of its next push with
// PREFETCHW as soon as the peer has read them (the hand-off hints below, cache_hints.h). It owns
// the inbox's sequence and that bookkeeping; the slots live in the window of the Team it was given.
// Threads: the thread that drives the collectives (one at a time).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "collectives/cache_hints.h"
#include "collectives/coll_task.h"
#include "collectives/signal_kind.h"
#include "collectives/slot_writer.h"
#include "rankflow/team.h"

namespace rankflow::coll {

// A pushed broadcast's acknowledgement ("inbox.broadcast_ack"), the default acknowledgement kind.
extern const SignalKind kBroadcastAck;

class PushInbox {
 public:
  // A slot holds up to 4 KiB on any team, and up to 32 KiB on teams of up to kLargeSlotMembers:
  // there one push round beats reading in place or Open MPI's eager copy up to 16-32 KiB
  // (docs/performance.md), and the region stays small (2 x 4 x 32 KiB on four members).
  static constexpr size_t kPayloadBytes = 4096;
  static constexpr size_t kLargePayloadBytes = 32768;
  static constexpr int kLargeSlotMembers = 4;
  static constexpr size_t payload_bytes(int members) {
    return members <= kLargeSlotMembers ? kLargePayloadBytes : kPayloadBytes;
  }
  // The flag's line, then the payload (slot_writer.h).
  static constexpr size_t stride(int members) { return 64 + payload_bytes(members); }
  // The bytes of window a PushInbox of `members` needs at its region.
  static constexpr size_t region_bytes(int members) {
    return 2 * stride(members) * static_cast<size_t>(members);
  }
  // The largest push on this inbox's team.
  size_t payload_bytes() const { return payload_bytes_; }

  // Slots at window offset `region` (region_bytes(team.size()) bytes, the same on every member);
  // SIZE_MAX makes an absent inbox (present() false: nothing may be pushed). Acknowledgements
  // count in `ack`'s signal slots.
  PushInbox(Team team, size_t region, const SignalKind& ack = kBroadcastAck);

  bool present() const { return region_ != SIZE_MAX; }
  // The operation named in diagnostics (a string that outlives the inbox's use of it).
  void set_operation(const char* operation) { operation_ = operation; }

  // The sequence of the next pushed collective (every member calls it once per such collective).
  uint64_t next_sequence() { return ++sequence_; }
  // Writes `bytes` (<= payload_bytes()) of `payload` and then the flag `sequence` into this
  // member's slot of `peer`'s inbox (SlotWriter: stores where mapped, else puts from a private
  // copy of the same parity, free again once the peer has consumed the slot; no flush needed).
  // Waits, with the team's timeout, only for an acknowledgement it needs (see above). For the
  // collectives where every member pushes and then waits for the peers' pushes; the payload's
  // lines are demoted where that measured faster (hand-off hints below).
  void push(int peer, uint64_t sequence, const void* payload, size_t bytes) {
    const std::byte* stored = store(peer, sequence, payload, bytes);
    if (stored != nullptr && demotes_pushed(bytes)) demote_lines(stored, bytes);
  }
  // The pushed broadcast's root: the same write (its lines stay in this core: demoting them
  // measured slower there), and the root will not wait for the peer (see above).
  void push_broadcast(int peer, uint64_t sequence, const void* payload, size_t bytes) {
    store(peer, sequence, payload, bytes);
    unacked_[static_cast<size_t>(peer)].push_back(sequence);
  }
  // The flag of `peer`'s push of `bytes` for `sequence` in this member's inbox: once it is there
  // the peer has finished every earlier collective. (Recorded when the wait is made: the
  // coroutine completes before this member pushes again.) A payload in lines of its own is
  // fetched with each check of the flag where fetches_ahead(bytes).
  SignalAwait await_push(int peer, uint64_t sequence, size_t bytes) {
    finished_[static_cast<size_t>(peer)] =
        std::max(finished_[static_cast<size_t>(peer)], sequence - 1);
    const auto* flag = reinterpret_cast<const uint64_t*>(local_ + offset(sequence, peer));
    if (!fetches_ahead(bytes)) return SignalAwait{flag, sequence, peer};
    return SignalAwait{flag, sequence, peer, payload(peer, sequence, bytes),
                       static_cast<uint32_t>((bytes + 63) / 64)};
  }
  // Whether every peer's push of `bytes` for `sequence` is here already (so a collective can
  // finish in the call, with no task to suspend). Each check is a wait made, as await_push's:
  // the caller awaits every push before it pushes again: here, in the call (a blocking one,
  // CollContext::wait_in_call) or in its task.
  bool every_push_arrived(uint64_t sequence, size_t bytes) {
    for (int p = 0; p < size_; ++p) {
      if (p != rank_ && !await_push(p, sequence, bytes).satisfied()) return false;
    }
    return true;
  }
  // The `bytes` of payload `peer` pushed for `sequence` (valid once await_push is satisfied,
  // until this member's next collective).
  const std::byte* payload(int peer, uint64_t sequence, size_t bytes) const {
    return local_ + offset(sequence, peer) + payload_offset(bytes);
  }

  // Tells the inbox this member has read `peer`'s payload for `sequence`: small payloads are
  // demoted, so that the peer's next write into the slot finds the lines in the shared cache.
  void consumed(int peer, uint64_t sequence, size_t bytes) const {
    if (demotes_consumed(bytes) && writer_.mapped(peer))
      demote_lines(payload(peer, sequence, bytes), bytes);
    claim_next_slot(peer, sequence, bytes);
  }
  // The peer's push for `sequence` shows it has finished sequence - 1, so it has read this
  // member's slot of the next sequence's parity in its inbox: take those lines now (claim_lines),
  // so that the next push of the same size stores into owned lines.
  void claim_next_slot(int peer, uint64_t sequence, size_t bytes) const {
    if (bytes > kClaimBytes) return;
    if (std::byte* slot = writer_.mapped_slot(peer, region_ + offset(sequence + 1, rank_)))
      claim_lines(slot, payload_offset(bytes) + bytes);
  }
  // Measured on the 2-core Zen 5 (docs/performance.md, "Claiming the next slot"): pushes of
  // 4-512 B ran 0.02-0.04 us faster (about 10 % of a 4 B allreduce), 1-2 KiB pushes 0.03-0.05 us
  // faster in allgather and all_to_all and level in allreduce; claiming 4 KiB slowed the 4 KiB
  // allreduce.
  static constexpr size_t kClaimBytes = 2048;

  // Hand-off hints (cache_hints.h), measured with two members on one host
  // (docs/performance-plain-history.md, "2026-12-03 night"): payloads with lines of their own
  // (above the flag's line), pushed for an exchange, are demoted by the writer up to 1 KiB and
  // from 2 KiB to 4 KiB (at 1-2 KiB and above 4 KiB it lost), and by the reader once read up to
  // 512 B (from 1 KiB it lost).
  static constexpr bool demotes_pushed(size_t bytes) {
    return (bytes > kFlagLinePayload && bytes <= 1024) || (bytes > 2048 && bytes <= 4096);
  }
  static constexpr bool demotes_consumed(size_t bytes) {
    return bytes > kFlagLinePayload && bytes <= 512;
  }
  // A waiting reader prefetches the payload's lines with every poll of the flag up to 512 B (8
  // lines), measured on the 2-core Zen 5 (docs/performance.md, "Fetching a push's payload while
  // waiting"): read after the flag, each further line cost about 0.1 us in the slow mode (a
  // second cross-core transfer after the flag's), fetched with it the 64-512 B pushes ran
  // 0.03-0.09 us faster; at 1 KiB the polls pulled the lines back from the writer while it
  // filled them (slower). The flag's own line carries payloads up to kFlagLinePayload.
  static constexpr size_t kFetchAheadBytes = 512;
  static constexpr bool fetches_ahead(size_t bytes) {
    return bytes > kFlagLinePayload && bytes <= kFetchAheadBytes;
  }

  // A pushed broadcast's receiver acknowledges once it has copied the payload out.
  void acknowledge_broadcast(int root) {
    team_.signal(root, ack_base_ + static_cast<uint32_t>(rank_));
  }

 private:
  // push() and push_broadcast(): where the payload landed in the peer's mapped window, or null.
  const std::byte* store(int peer, uint64_t sequence, const void* payload, size_t bytes) {
    if (bytes > payload_bytes_) [[unlikely]]
      too_big(bytes);
    const size_t p = static_cast<size_t>(peer);
    if (!unacked_[p].empty() || (sequence > 2 && finished_[p] < sequence - 2))
      await_slot_free(peer, sequence);
    // The private copy is of the same parity, so it is free again once the peer has consumed
    // it.
    return writer_.write(peer, region_ + offset(sequence, rank_), sequence, payload, bytes,
                         offset(sequence, peer));
  }
  // Offset of `sender`'s slot for `sequence` within the region.
  size_t offset(uint64_t sequence, int sender) const {
    return ((sequence & 1) * static_cast<size_t>(size_) + static_cast<size_t>(sender)) * stride_;
  }
  // Waits until `peer` has finished sequence `sequence - 2` (its slot is free again), settling
  // the acknowledgements of broadcasts this member rooted.
  void await_slot_free(int peer, uint64_t sequence);
  [[noreturn, gnu::cold]] void too_big(size_t bytes) const;

  Team team_;
  int rank_;
  int size_;
  size_t region_;
  uint32_t ack_base_;  // the first of the acknowledgement kind's signal slots (one per sender)
  size_t payload_bytes_;
  size_t stride_;
  SlotWriter writer_;
  std::byte* local_ = nullptr;  // this member's region
  uint64_t sequence_ = 0;
  std::vector<std::deque<uint64_t>> unacked_;  // per peer: broadcast sequences not yet acked
  std::vector<uint64_t> acks_seen_;            // per peer: acknowledgements accounted for
  std::vector<uint64_t> finished_;             // per peer: sequence it is known to have finished
  const char* operation_ = "collective";
};

}  // namespace rankflow::coll
