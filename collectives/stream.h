// AckedStream: a stream of small messages from a sender to each of its peers, with credit-based
// acknowledgements, in a region of a Team's window. One-to-many: a sender sends each message to
// the peers it chooses (a broadcast sends it to all); every member may be a sender and a
// receiver at once, with one stream per (sender, receiver) pair.
//
// Layout: every member has `slots` slots per sender (an 8-byte flag followed by up to
// `payload_bytes`: 16 or 32 bytes where that fits, else whole cache lines). A sender's k-th message
// to a peer goes into slot k mod slots with flag k; the receiver reads messages in order and
// acknowledges every `ack_every` messages (one signal of the stream's acknowledgement kind, adding
// ack_every), and the sender reuses a slot only once its previous message was acknowledged. So a
// sender runs up to `slots` messages ahead of a receiver and waits (with the team's timeout, then a
// Timeout naming the operation, this rank and the peer) only when it is that far ahead. Messages
// land without the receiver's progress where the window is mapped; through UCX a receiver that does
// not call in holds its messages back, as every one-sided transfer.
//
// It owns the per-peer message counts and (through SlotWriter) the private copies of messages
// sent through UCX. Users: the small broadcast (broadcast_streamed.cpp); a channel or a host/task
// queue would own one with its own region and acknowledgement kind. Threads: the thread that
// drives the stream (one at a time, as for Team).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/coll_task.h"
#include "collectives/signal_kind.h"
#include "collectives/slot_writer.h"
#include "rankflow/team.h"

namespace rankflow::coll {

// The broadcast stream's acknowledgement ("stream.ack").
extern const SignalKind kStreamAck;

struct StreamShape {
  size_t slots;          // per (sender, receiver): a power of two
  size_t payload_bytes;  // the largest message
  uint64_t ack_every;    // messages per acknowledgement: a power of two, at most `slots`

  // A slot is the 8-byte flag and the payload: 16 or 32 bytes when that fits (several slots to
  // a cache line, so a sender running ahead fills a line before the receiver takes it), one
  // line up to 56 bytes of payload, else the flag's line and the payload's whole lines
  // (payload_offset, slot_writer.h).
  constexpr size_t stride() const {
    const size_t slot = 8 + payload_bytes;
    if (slot <= 16) return 16;
    if (slot <= 32) return 32;
    if (payload_bytes <= kFlagLinePayload) return 64;
    return 64 + (payload_bytes + 63) / 64 * 64;
  }
  // The bytes of window a stream of this shape over `members` needs at its region.
  constexpr size_t region_bytes(int members) const {
    return slots * stride() * static_cast<size_t>(members);
  }
};

class AckedStream {
 public:
  // Slots at window offset `region` (shape.region_bytes(team.size()) bytes, the same on every
  // member); SIZE_MAX makes an absent stream (present() false: nothing may be sent). `ack` is
  // the stream's own signal kind: two streams on one team need two kinds. Throws
  // InvalidArgument for a shape that breaks the rules above or a region outside the window.
  AckedStream(Team team, size_t region, StreamShape shape, const SignalKind& ack = kStreamAck);

  bool present() const { return region_ != SIZE_MAX; }
  const StreamShape& shape() const { return shape_; }
  // The operation named in diagnostics (a string that outlives the stream's use of it).
  void set_operation(const char* operation) { operation_ = operation; }

  // Sender: copies `bytes` (<= payload_bytes) into the next slot of this member's stream to
  // `peer` and returns; waits only when the peer is `slots` messages behind.
  void send(int peer, const void* payload, size_t bytes) {
    if (bytes > shape_.payload_bytes) [[unlikely]]
      too_big(bytes);
    const size_t p = static_cast<size_t>(peer);
    const uint64_t message = ++sent_[p];
    // The peer's acknowledgements only grow: its counter is read again (a line the peer writes)
    // only once the credit last seen there is used up.
    if (message > credit_[p]) [[unlikely]]
      refresh_credit(peer, message);
    // The private copy stays untouched until the slot is reused, by which time the peer has
    // acknowledged reading it (so the puts completed).
    writer_.write(peer, region_ + offset(rank_, message), message, payload, bytes,
                  offset(peer, message));
  }

  // Receiver, for each message from `sender` in order: its number, a wait for its flag, its
  // payload (valid until consumed), and consumed() once the payload has been copied out. The
  // receiver must know each message's size (payload(): where the payload starts depends on it,
  // see payload_offset): a protocol with messages of varying size sends the size first, or
  // sends every message at one size.
  uint64_t next_message(int sender) { return ++received_[static_cast<size_t>(sender)]; }
  SignalAwait await_message(int sender, uint64_t message) const {
    return SignalAwait{reinterpret_cast<const uint64_t*>(local_ + offset(sender, message)), message,
                       sender};
  }
  const std::byte* payload(int sender, uint64_t message, size_t bytes) const {
    return local_ + offset(sender, message) + payload_offset(bytes);
  }
  void consumed(int sender, uint64_t message) {
    if ((message & (shape_.ack_every - 1)) == 0)
      team_.signal(sender, ack_slot(rank_), shape_.ack_every);
  }

 private:
  // Offset within the region of `sender`'s slot for `message` (in every member's region).
  size_t offset(int sender, uint64_t message) const {
    return (static_cast<size_t>(sender) * shape_.slots + (message & (shape_.slots - 1))) * stride_;
  }
  // This member's signal slot counting acknowledgements from `sender`.
  uint32_t ack_slot(int sender) const { return ack_base_ + static_cast<uint32_t>(sender); }
  // Reads `peer`'s acknowledgements into credit_, waiting (await_credit) until they cover
  // `message`.
  void refresh_credit(int peer, uint64_t message);
  // Waits until `peer` has acknowledged message `message - slots` (its slot is free again).
  void await_credit(int peer, uint64_t message);
  [[noreturn, gnu::cold]] void too_big(size_t bytes) const;

  Team team_;
  int rank_;
  int size_;
  size_t region_;
  StreamShape shape_;
  size_t stride_;
  uint32_t ack_base_;  // the first of the acknowledgement kind's signal slots (one per sender)
  SlotWriter writer_;
  std::byte* local_ = nullptr;      // this member's region
  std::vector<uint64_t> sent_;      // per peer: messages sent to it
  std::vector<uint64_t> credit_;    // per peer: the last message its acknowledgements seen allow
  std::vector<uint64_t> received_;  // per peer: messages taken from it
  const char* operation_ = "collective";
};

}  // namespace rankflow::coll
